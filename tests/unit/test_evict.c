// SPDX-License-Identifier: GPL-2.0
/*
 * test_evict.c - eviction policies: LRU order, S3-FIFO's small/main/ghost
 * queues, weight-driven eviction, and a Zipf trace where S3-FIFO must do at
 * least as well as LRU.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/evict.h"
#include "../../userspace/fluxond/hash.h"

#define U	4096ULL		/* one weight unit */

static struct fkv_evict *mk(const char *name, uint64_t capacity)
{
	struct fkv_evict *e = fkv_evict_create(name, capacity);

	FKV_ASSERT(e != NULL);
	FKV_ASSERT(!strcmp(e->ops->name, name));
	return e;
}

static uint64_t victim(struct fkv_evict *e)
{
	uint64_t h = 0, w = 0;

	FKV_ASSERT_EQ(fkv_evict_victim(e, &h, &w), 0);
	return h;
}

/* Key hash for test object @h: distinct per object, never 0. */
static uint64_t kh(uint64_t h)
{
	return fkv_mix64(h) | 1;
}

static void ins(struct fkv_evict *e, uint64_t h, uint64_t w)
{
	FKV_ASSERT_EQ(fkv_evict_insert(e, h, w, kh(h)), 0);
}

FKV_TEST(unknown_policy_names_are_refused)
{
	FKV_ASSERT(fkv_evict_create("lfu", 100 * U) == NULL);
	FKV_ASSERT_EQ(errno, EINVAL);
	FKV_ASSERT(fkv_evict_create("lru", 0) == NULL);
	FKV_ASSERT(fkv_evict_valid_name("s3fifo"));
	FKV_ASSERT(fkv_evict_valid_name("lru"));
	FKV_ASSERT(!fkv_evict_valid_name("S3FIFO"));
}

static void check_bookkeeping(const char *name)
{
	struct fkv_evict *e = mk(name, 100 * U);
	uint64_t h, w;

	FKV_ASSERT_EQ(fkv_evict_victim(e, &h, &w), -ENOENT);
	ins(e, 1, U);
	ins(e, 2, 3 * U);
	FKV_ASSERT_EQ(fkv_evict_insert(e, 2, U, kh(2)), -EEXIST);
	FKV_ASSERT_EQ(e->count, 2);
	FKV_ASSERT_EQ(e->bytes, 4 * U);
	FKV_ASSERT_EQ(fkv_evict_remove(e, 1), 0);
	FKV_ASSERT_EQ(fkv_evict_remove(e, 1), -ENOENT);
	fkv_evict_touch(e, 12345);	/* unknown: ignored */
	FKV_ASSERT_EQ(e->count, 1);
	FKV_ASSERT_EQ(e->bytes, 3 * U);
	FKV_ASSERT_EQ(fkv_evict_victim(e, &h, &w), 0);
	FKV_ASSERT_EQ(h, 2);
	FKV_ASSERT_EQ(w, 3 * U);
	FKV_ASSERT_EQ(e->count, 0);
	FKV_ASSERT_EQ(e->bytes, 0);
	FKV_ASSERT_EQ(fkv_evict_victim(e, &h, &w), -ENOENT);
	fkv_evict_destroy(e);
}

FKV_TEST(lru_keeps_count_and_bytes_of_tracked_objects)
{
	check_bookkeeping("lru");
}

FKV_TEST(s3fifo_keeps_count_and_bytes_of_tracked_objects)
{
	check_bookkeeping("s3fifo");
}

FKV_TEST(lru_evicts_the_least_recently_used_first)
{
	struct fkv_evict *e = mk("lru", 100 * U);

	ins(e, 1, U);
	ins(e, 2, U);
	ins(e, 3, U);
	fkv_evict_touch(e, 1);
	FKV_ASSERT_EQ(victim(e), 2);
	FKV_ASSERT_EQ(victim(e), 3);
	FKV_ASSERT_EQ(victim(e), 1);
	fkv_evict_destroy(e);
}

FKV_TEST(s3fifo_without_hits_evicts_in_insertion_order)
{
	struct fkv_evict *e = mk("s3fifo", 100 * U);
	uint64_t h;

	for (h = 1; h <= 20; h++)
		ins(e, h, U);
	for (h = 1; h <= 20; h++)
		FKV_ASSERT_EQ(victim(e), h);
	fkv_evict_destroy(e);
}

FKV_TEST(s3fifo_moves_an_object_hit_in_small_to_main)
{
	/* Small is 10% = 1 unit: any object in small is over its share. */
	struct fkv_evict *e = mk("s3fifo", 10 * U);

	ins(e, 1, U);
	ins(e, 2, U);
	ins(e, 3, U);
	fkv_evict_touch(e, 1);
	/* 1 goes to main instead of out; small keeps evicting first. */
	FKV_ASSERT_EQ(victim(e), 2);
	FKV_ASSERT_EQ(victim(e), 3);
	FKV_ASSERT_EQ(victim(e), 1);
	fkv_evict_destroy(e);
}

FKV_TEST(s3fifo_main_gives_hit_objects_another_round)
{
	struct fkv_evict *e = mk("s3fifo", 10 * U);
	uint64_t h;

	/* Bring 1..3 into main: hit in small, then pushed out of small. */
	for (h = 1; h <= 3; h++) {
		ins(e, h, U);
		fkv_evict_touch(e, h);
	}
	ins(e, 100, U);
	FKV_ASSERT_EQ(victim(e), 100);	/* small first; 1..3 moved to main */
	/* Main only now: 2 was hit again, so 1 then 3 go before it. */
	fkv_evict_touch(e, 2);
	FKV_ASSERT_EQ(victim(e), 1);
	FKV_ASSERT_EQ(victim(e), 3);
	FKV_ASSERT_EQ(victim(e), 2);
	fkv_evict_destroy(e);
}

FKV_TEST(s3fifo_a_key_back_from_the_ghost_goes_to_main)
{
	struct fkv_evict *e = mk("s3fifo", 10 * U);

	/* Key K under handle 1, evicted unhit from small: K is a ghost. */
	FKV_ASSERT_EQ(fkv_evict_insert(e, 1, U, 777), 0);
	FKV_ASSERT_EQ(victim(e), 1);
	/* K comes back (new handle), then two new keys arrive. */
	FKV_ASSERT_EQ(fkv_evict_insert(e, 2, U, 777), 0);
	ins(e, 3, U);
	ins(e, 4, U);
	/* K sits in main: the newer small objects go first. */
	FKV_ASSERT_EQ(victim(e), 3);
	FKV_ASSERT_EQ(victim(e), 4);
	FKV_ASSERT_EQ(victim(e), 2);
	fkv_evict_destroy(e);
}

FKV_TEST(s3fifo_without_ghost_memory_a_returning_key_starts_in_small)
{
	struct fkv_evict *e = mk("s3fifo", 10 * U);
	uint64_t h;

	FKV_ASSERT_EQ(fkv_evict_insert(e, 1, U, 777), 0);
	FKV_ASSERT_EQ(victim(e), 1);
	/* Twenty later evictions push K out of the ghost (9 units). */
	for (h = 10; h < 30; h++) {
		ins(e, h, U);
		FKV_ASSERT_EQ(victim(e), h);
	}
	FKV_ASSERT_EQ(fkv_evict_insert(e, 2, U, 777), 0);
	ins(e, 3, U);
	ins(e, 4, U);
	FKV_ASSERT_EQ(victim(e), 2);
	FKV_ASSERT_EQ(victim(e), 3);
	FKV_ASSERT_EQ(victim(e), 4);
	fkv_evict_destroy(e);
}

FKV_TEST(removed_objects_do_not_enter_the_ghost)
{
	struct fkv_evict *e = mk("s3fifo", 10 * U);

	FKV_ASSERT_EQ(fkv_evict_insert(e, 1, U, 777), 0);
	FKV_ASSERT_EQ(fkv_evict_remove(e, 1), 0);	/* deleted, not evicted */
	FKV_ASSERT_EQ(fkv_evict_insert(e, 2, U, 777), 0);
	ins(e, 3, U);
	FKV_ASSERT_EQ(victim(e), 2);
	FKV_ASSERT_EQ(victim(e), 3);
	fkv_evict_destroy(e);
}

FKV_TEST(s3fifo_keeps_a_hit_object_through_a_scan_lru_does_not)
{
	struct fkv_evict *s3 = mk("s3fifo", 100 * U);
	struct fkv_evict *lru = mk("lru", 100 * U);
	struct fkv_evict *pol[2] = { s3, lru };
	uint64_t h, vh, vw;
	int i;

	for (i = 0; i < 2; i++) {
		ins(pol[i], 1, U);
		fkv_evict_touch(pol[i], 1);
		fkv_evict_touch(pol[i], 1);
		for (h = 2; h < 1000; h++) {
			while (pol[i]->bytes + U > 100 * U)
				FKV_ASSERT_EQ(fkv_evict_victim(pol[i], &vh,
							       &vw), 0);
			ins(pol[i], h, U);
		}
	}
	FKV_ASSERT_EQ(fkv_evict_remove(s3, 1), 0);	/* still there */
	FKV_ASSERT_EQ(fkv_evict_remove(lru, 1), -ENOENT); /* scanned out */
	fkv_evict_destroy(s3);
	fkv_evict_destroy(lru);
}

FKV_TEST(evict_bytes_stops_once_enough_weight_is_freed)
{
	static const uint64_t w[] = { 3, 1, 4, 1, 5, 9, 2, 6 };
	struct fkv_evict *e = mk("lru", 1000 * U);
	uint64_t h, got;

	for (h = 0; h < 8; h++)
		ins(e, h + 1, w[h] * U);
	/* Oldest first: 3 + 1 + 4 = 8 >= 7. */
	got = fkv_evict_bytes(e, 7 * U, NULL, NULL);
	FKV_ASSERT_EQ(got, 8 * U);
	FKV_ASSERT_EQ(e->count, 5);
	FKV_ASSERT_EQ(e->bytes, (1 + 5 + 9 + 2 + 6) * U);
	/* Asking for more than there is frees everything. */
	got = fkv_evict_bytes(e, 1000 * U, NULL, NULL);
	FKV_ASSERT_EQ(got, 23 * U);
	FKV_ASSERT_EQ(e->count, 0);
	FKV_ASSERT_EQ(fkv_evict_bytes(e, U, NULL, NULL), 0);
	fkv_evict_destroy(e);
}

/* ---- Zipf trace simulation ---- */

struct rng {
	uint64_t s;
};

/* splitmix64: deterministic, good enough for a trace. */
static uint64_t rng_next(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return fkv_mix64(r->s);
}

static double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) / (double)(1ULL << 53);
}

/*
 * x^-alpha without libm (the unit tests do not link it): exp(-alpha ln x)
 * with ln by atanh series on the mantissa and exp by range reduction.
 */
static double ln_(double x)
{
	double y, y2, term, sum = 0;
	int e = 0, k;

	while (x >= 2) {
		x /= 2;
		e++;
	}
	y = (x - 1) / (x + 1);
	y2 = y * y;
	term = y;
	for (k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= y2;
	}
	return 2 * sum + e * 0.69314718055994530942;
}

static double exp_(double t)
{
	double sum = 1, term = 1;
	int k, halvings = 0;

	while (t < -0.5 || t > 0.5) {
		t /= 2;
		halvings++;
	}
	for (k = 1; k < 20; k++) {
		term *= t / k;
		sum += term;
	}
	while (halvings--)
		sum *= sum;
	return sum;
}

struct zipf {
	size_t n;
	double *cdf;
};

static void zipf_init(struct zipf *z, size_t n, double alpha)
{
	double sum = 0;
	size_t i;

	z->n = n;
	z->cdf = malloc(n * sizeof(*z->cdf));
	FKV_ASSERT(z->cdf != NULL);
	for (i = 0; i < n; i++) {
		sum += exp_(-alpha * ln_((double)(i + 1)));
		z->cdf[i] = sum;
	}
	for (i = 0; i < n; i++)
		z->cdf[i] /= sum;
}

static size_t zipf_draw(const struct zipf *z, struct rng *r)
{
	double u = rng_unit(r);
	size_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (z->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct sim_result {
	uint64_t reqs, hits, bytes, hit_bytes;
};

/*
 * Replay @nreq Zipf requests over @nobj objects (sizes 1..16 units, fixed
 * per object) against @policy with room for @cap bytes.  A miss inserts the
 * object under a fresh handle, evicting first; a hit touches it.  The first
 * @warm requests fill the cache and are not counted.
 */
static struct sim_result simulate(const char *policy, const struct zipf *z,
				  const uint64_t *size, uint64_t cap,
				  size_t nreq, size_t warm, uint64_t seed)
{
	struct fkv_evict *e = mk(policy, cap);
	uint64_t *handle_of = calloc(z->n, sizeof(*handle_of));
	uint64_t *obj_of = calloc(nreq + 1, sizeof(*obj_of));
	struct sim_result res = { 0 };
	struct rng r = { seed };
	uint64_t next_handle = 1;
	size_t i;

	FKV_ASSERT(handle_of && obj_of);
	for (i = 0; i < nreq; i++) {
		size_t k = zipf_draw(z, &r);
		bool hit = handle_of[k] != 0;

		if (hit) {
			fkv_evict_touch(e, handle_of[k]);
		} else {
			while (e->bytes + size[k] > cap) {
				uint64_t vh, vw;

				FKV_ASSERT_EQ(fkv_evict_victim(e, &vh, &vw), 0);
				handle_of[obj_of[vh]] = 0;
			}
			handle_of[k] = next_handle;
			obj_of[next_handle] = k;
			FKV_ASSERT_EQ(fkv_evict_insert(e, next_handle, size[k],
						       kh(k + 1)), 0);
			next_handle++;
		}
		if (i < warm)
			continue;
		res.reqs++;
		res.bytes += size[k];
		if (hit) {
			res.hits++;
			res.hit_bytes += size[k];
		}
	}
	FKV_ASSERT_LE(e->bytes, cap);
	fkv_evict_destroy(e);
	free(handle_of);
	free(obj_of);
	return res;
}

FKV_TEST_TIMEOUT(zipf_trace_s3fifo_hit_rate_is_at_least_lru, 120)
{
	const size_t nobj = 20000, nreq = 1000000, warm = 200000;
	struct rng r = { 42 };
	uint64_t *size = malloc(nobj * sizeof(*size)), total = 0;
	struct sim_result s3, lru;
	struct zipf z;
	size_t i;

	FKV_ASSERT(size != NULL);
	zipf_init(&z, nobj, 0.99);
	for (i = 0; i < nobj; i++) {
		size[i] = (1 + rng_next(&r) % 16) * U;
		total += size[i];
	}
	s3 = simulate("s3fifo", &z, size, total / 4, nreq, warm, 7);
	lru = simulate("lru", &z, size, total / 4, nreq, warm, 7);
	fkv_diag("zipf(0.99) %zu objects, cache 25%% of %llu bytes, %zu requests",
		 nobj, (unsigned long long)total, nreq - warm);
	fkv_diag("s3fifo: hit rate %.4f, byte hit rate %.4f",
		 (double)s3.hits / (double)s3.reqs,
		 (double)s3.hit_bytes / (double)s3.bytes);
	fkv_diag("lru:    hit rate %.4f, byte hit rate %.4f",
		 (double)lru.hits / (double)lru.reqs,
		 (double)lru.hit_bytes / (double)lru.bytes);
	FKV_ASSERT_EQ(s3.reqs, lru.reqs);	/* same trace */
	FKV_ASSERT_GE(s3.hits, lru.hits);
	FKV_ASSERT_GT(lru.hits, 0);
	free(z.cdf);
	free(size);
}
