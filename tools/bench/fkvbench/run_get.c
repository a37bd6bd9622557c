// SPDX-License-Identifier: GPL-2.0
/*
 * The measured phase: --workers threads (or processes with --procs) do gets
 * only, each walking its own deterministic key sequence (op 0, 1, 2, ...)
 * from a common start.  The first --warmup seconds are not counted; an op
 * is counted when it completes inside the --window that follows; workers
 * stop at the window's end and ops completing later are dropped.
 *
 * Output modes: holder (counted once the backend's reference is returned:
 * a fluxonkv holder, or the memcached value received in the connection
 * buffer; length and first/last word checked) and bytes (the whole payload
 * copied into a private buffer, then first/last word of the copy checked).
 *
 * The parent samples the backend's tier counters and /proc/diskstats at the
 * window's edges.  Prints one JSON line.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct get_shared {
	int go;
	int failed;
	uint64_t warm_end, win_end;
	struct bench_slot slot[BENCH_MAX_WORKERS];
};

struct get_ctx {
	const struct bench_opts *o;
	const struct bench_backend *be;
	const struct bench_keys *keys;
	struct get_shared *sh;
	unsigned int id;
};

static void sleep_until(uint64_t t)
{
	uint64_t now = bench_now_ns();
	struct timespec ts;

	while (now < t) {
		ts.tv_sec = (t - now) / 1000000000ull;
		ts.tv_nsec = (t - now) % 1000000000ull;
		nanosleep(&ts, NULL);
		now = bench_now_ns();
	}
}

/*
 * Count get @i of key @k, from @t0 to @t1 (its release included), whose
 * result was @err (*@ref on a hit); @copy: the bytes-mode buffer.
 * Returns false once the window is over (nothing counted).
 */
static bool account(struct get_ctx *c, uint64_t i, uint64_t k, uint64_t t0,
		    int err, struct bench_ref *ref, void *copy, void *conn,
		    unsigned int *reported)
{
	const struct bench_opts *o = c->o;
	struct bench_slot *s = &c->sh->slot[c->id];
	uint64_t t1, dt;
	bool ok = false;

	if (!err) {
		if (o->bytes_mode) {
			memcpy(copy, ref->data, ref->len <= o->size ?
			       ref->len : o->size);
			ok = bench_check_ends(copy, ref->len, o->size, k);
		} else {
			ok = bench_check_ends(ref->data, ref->len, o->size, k);
		}
		c->be->release(conn, ref);
	}
	t1 = bench_now_ns();	/* an op ends with its release */
	if (t1 > c->sh->win_end)
		return false;
	if (i + 1 > s->ops)
		s->ops = i + 1;
	if (t1 < c->sh->warm_end)
		return true;
	if (!s->counted)
		s->first = i;
	s->counted++;
	dt = t1 - t0;
	s->lat[bench_lat_bucket(dt)]++;
	s->lat_sum_ns += dt;
	if (err == -ENOENT) {
		s->misses++;
		s->lat_tier_ns[BENCH_TIERS] += dt;
	} else if (err) {
		s->errors++;
		if ((*reported)++ < 5)
			fprintf(stderr, "fkvbench: get of key %" PRIu64 ": %s\n",
				k, strerror(-err));
	} else {
		s->hits[ref->tier]++;
		s->hit_bytes[ref->tier] += ref->len;
		s->lat_tier_ns[ref->tier] += dt;
		if (!ok) {
			s->bad++;
			if ((*reported)++ < 5)
				fprintf(stderr, "fkvbench: CONTENT MISMATCH key %" PRIu64
					" len %zu\n", k, ref->len);
		}
	}
	return true;
}

/* One get at a time. */
static void run_sync(struct get_ctx *c, void *conn, void *copy)
{
	const struct bench_opts *o = c->o;
	char key[BENCH_KEY_MAX];
	unsigned int reported = 0;
	uint64_t i;

	for (i = 0;; i++) {
		uint64_t k = bench_key_at(c->keys, c->id, i);
		size_t kl = bench_key_name(key, sizeof(key), o->prefix, k);
		struct bench_ref ref = { 0 };
		uint64_t t0 = bench_now_ns();

		if (t0 >= c->sh->win_end)
			break;
		if (!account(c, i, k, t0, c->be->get(conn, key, kl, &ref), &ref,
			     copy, conn, &reported))
			break;
	}
}

/*
 * --qd: o->qd gets in flight through the backend's ring, a new one
 * submitted as each completes; an op's latency runs from its submission
 * to its release.  Ops are counted in completion order.
 */
static int run_ring(struct get_ctx *c, void *conn, void *copy)
{
	const struct bench_opts *o = c->o;
	uint64_t *t0 = calloc(o->qd, sizeof(*t0)), *keyof;
	unsigned int reported = 0, inflight = 0, slot;
	char key[BENCH_KEY_MAX];
	uint64_t next = 0, done = 0, tag;
	bool over = false;
	void *ring = NULL;
	int err;

	keyof = calloc(o->qd, sizeof(*keyof));
	err = !t0 || !keyof ? -ENOMEM : c->be->ring_open(conn, o->qd, &ring);
	if (err)
		goto out;
	for (;;) {
		/* every free slot gets the worker's next key */
		for (slot = 0; !over && inflight < o->qd && slot < o->qd; slot++) {
			uint64_t now = bench_now_ns();
			size_t kl;

			if (t0[slot])
				continue;
			if (now >= c->sh->win_end) {
				over = true;
				break;
			}
			keyof[slot] = bench_key_at(c->keys, c->id, next++);
			kl = bench_key_name(key, sizeof(key), o->prefix,
					    keyof[slot]);
			t0[slot] = now;
			err = c->be->ring_get(ring, key, kl, slot);
			if (err)
				goto out;
			inflight++;
		}
		if (!inflight)
			break;
		{
			struct bench_ref ref = { 0 };
			int res;

			tag = UINT64_MAX;
			res = c->be->ring_reap(ring, &tag, &ref);

			if (res && (tag >= o->qd || !t0[tag])) {
				err = res;	/* the ring itself failed */
				goto out;
			}
			if (!account(c, done++, keyof[tag], t0[tag], res, &ref,
				     copy, conn, &reported))
				over = true;
			t0[tag] = 0;
			inflight--;
		}
	}
out:
	if (ring)
		c->be->ring_close(ring);	/* waits for what is in flight */
	free(t0);
	free(keyof);
	return err;
}

/*
 * --ring-batch: o->ring_batch gets as one command through the ring, the
 * next batch once it completed; each op's latency runs from its batch's
 * submission to its release.
 */
static int run_ring_batch(struct get_ctx *c, void *conn, void *copy)
{
	const struct bench_opts *o = c->o;
	unsigned int n = o->ring_batch, j, reported = 0;
	char names[BENCH_RING_BATCH_MAX][BENCH_KEY_MAX];
	const char *keys[BENCH_RING_BATCH_MAX];
	struct bench_ref refs[BENCH_RING_BATCH_MAX];
	uint64_t k[BENCH_RING_BATCH_MAX], next = 0, done = 0, t0;
	size_t kls[BENCH_RING_BATCH_MAX];
	int res[BENCH_RING_BATCH_MAX], err;
	bool over = false;
	void *ring = NULL;

	err = c->be->ring_open(conn, 1, &ring);
	if (err)
		return err;
	while (!over) {
		t0 = bench_now_ns();
		if (t0 >= c->sh->win_end)
			break;
		for (j = 0; j < n; j++) {
			k[j] = bench_key_at(c->keys, c->id, next++);
			kls[j] = bench_key_name(names[j], sizeof(names[j]),
						o->prefix, k[j]);
			keys[j] = names[j];
		}
		memset(refs, 0, sizeof(refs));
		err = c->be->ring_get_batch(ring, keys, kls, n, res, refs);
		if (err)
			break;
		/* every hit is released, in or past the window */
		for (j = 0; j < n; j++)
			if (!account(c, done++, k[j], t0, res[j], &refs[j], copy,
				     conn, &reported))
				over = true;
	}
	c->be->ring_close(ring);
	return err;
}

static void worker(struct get_ctx *c)
{
	const struct bench_opts *o = c->o;
	struct bench_slot *s = &c->sh->slot[c->id];
	void *conn, *copy = NULL;
	int err;

	err = c->be->open(o, &conn);
	if (!err && o->bytes_mode) {
		copy = malloc(o->size + 4096);
		if (copy)	/* fault the private buffer in before timing */
			memset(copy, 0, o->size + 4096);
		else
			err = -ENOMEM;
	}
	if (err) {
		__atomic_store_n(&c->sh->failed, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&c->sh->go, __ATOMIC_ACQUIRE))
		usleep(200);
	if (o->qd || o->ring_batch) {
		err = o->qd ? run_ring(c, conn, copy) :
			      run_ring_batch(c, conn, copy);
		if (err) {
			fprintf(stderr, "fkvbench: ring: %s\n", strerror(-err));
			__atomic_store_n(&c->sh->failed, 1, __ATOMIC_RELEASE);
		}
	} else {
		run_sync(c, conn, copy);
	}
	c->be->close(conn);
	free(copy);
}

static void *worker_thread(void *arg)
{
	worker(arg);
	return NULL;
}

static void sum_slots(const struct get_shared *sh, unsigned int n,
		      struct bench_slot *t)
{
	unsigned int w, b, i;

	memset(t, 0, sizeof(*t));
	for (w = 0; w < n; w++) {
		const struct bench_slot *s = &sh->slot[w];

		t->counted += s->counted;
		t->misses += s->misses;
		t->errors += s->errors;
		t->bad += s->bad;
		t->lat_sum_ns += s->lat_sum_ns;
		for (i = 0; i <= BENCH_TIERS; i++)
			t->lat_tier_ns[i] += s->lat_tier_ns[i];
		for (i = 0; i < BENCH_TIERS; i++) {
			t->hits[i] += s->hits[i];
			t->hit_bytes[i] += s->hit_bytes[i];
		}
		for (b = 0; b < BENCH_LAT_BUCKETS; b++)
			t->lat[b] += s->lat[b];
	}
}

int bench_run_get(const struct bench_opts *o, const struct bench_backend *be)
{
	struct get_ctx ctx[BENCH_MAX_WORKERS];
	pthread_t tid[BENCH_MAX_WORKERS];
	pid_t pid[BENCH_MAX_WORKERS];
	struct bench_counters c0 = { 0 }, c1 = { 0 };
	struct bench_disk d0, d1;
	struct bench_keys keys;
	struct get_shared *sh;
	struct bench_slot t;
	uint64_t skew0, skew1, hits, ssd_win = 0, gib = 1ull << 30;
	const char *attribution = "per_get";
	char desc[1024] = "", ranges[BENCH_MAX_WORKERS * 48] = "";
	double win = o->window_s, lat_tier_us[BENCH_TIERS + 1];
	unsigned int w, failed = 0;
	int err, status;

	if (!o->workers || o->workers > BENCH_MAX_WORKERS ||
	    o->qd > 256 || (o->qd && !be->ring_open) ||
	    o->ring_batch > BENCH_RING_BATCH_MAX ||
	    (o->ring_batch && (o->qd || !be->ring_get_batch)))
		return -EINVAL;
	err = bench_keys_init(&keys, o);
	if (err)
		return err;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -ENOMEM;
	memset(sh, 0, sizeof(*sh));

	for (w = 0; w < o->workers; w++) {
		ctx[w] = (struct get_ctx){ o, be, &keys, sh, w };
		if (o->procs) {
			pid[w] = fork();
			if (pid[w] < 0)
				return -errno;
			if (pid[w] == 0) {
				worker(&ctx[w]);
				_exit(0);
			}
		} else if (pthread_create(&tid[w], NULL, worker_thread, &ctx[w])) {
			return -EAGAIN;
		}
	}
	for (w = 0; w < o->workers; w++)
		while (!__atomic_load_n(&sh->slot[w].ready, __ATOMIC_ACQUIRE))
			usleep(1000);
	if (__atomic_load_n(&sh->failed, __ATOMIC_ACQUIRE))
		failed = 1;
	sh->warm_end = bench_now_ns() + 20000000ull + (uint64_t)(o->warmup_s * 1e9);
	sh->win_end = sh->warm_end + (uint64_t)(o->window_s * 1e9);
	__atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);

	sleep_until(sh->warm_end);
	skew0 = bench_now_ns();
	be->counters(o, &c0);
	bench_disk_sample(o->disk, &d0);
	skew0 = bench_now_ns() - skew0;
	sleep_until(sh->win_end);
	skew1 = bench_now_ns();
	be->counters(o, &c1);
	bench_disk_sample(o->disk, &d1);
	skew1 = bench_now_ns() - skew1;

	for (w = 0; w < o->workers; w++) {
		if (o->procs) {
			if (waitpid(pid[w], &status, 0) < 0 || !WIFEXITED(status) ||
			    WEXITSTATUS(status))
				failed = 1;
		} else {
			pthread_join(tid[w], NULL);
		}
	}
	sum_slots(sh, o->workers, &t);
	for (w = 0; w < o->workers; w++)
		snprintf(ranges + strlen(ranges), sizeof(ranges) - strlen(ranges),
			 "%s%" PRIu64 ":%" PRIu64, w ? "," : "",
			 sh->slot[w].first, sh->slot[w].counted);

	for (w = 0; w < BENCH_TIERS; w++)
		lat_tier_us[w] = t.hits[w] ? t.lat_tier_ns[w] / 1e3 / t.hits[w] : 0;
	lat_tier_us[BENCH_TIERS] = t.misses ?
		t.lat_tier_ns[BENCH_TIERS] / 1e3 / t.misses : 0;
	if (c0.valid && c1.valid && c1.ssd_hits >= c0.ssd_hits)
		ssd_win = c1.ssd_hits - c0.ssd_hits;
	if (t.hits[BENCH_TIER_UNKNOWN]) {
		/* Window-counter attribution (memcached): all or nothing. */
		if (c0.valid && c1.valid && c1.ssd_hits >= c0.ssd_hits &&
		    ssd_win <= t.hits[BENCH_TIER_UNKNOWN]) {
			uint64_t u = t.hits[BENCH_TIER_UNKNOWN];
			uint64_t per = u ? t.hit_bytes[BENCH_TIER_UNKNOWN] / u : 0;

			t.hits[BENCH_TIER_SSD] += ssd_win;
			t.hits[BENCH_TIER_DRAM] += u - ssd_win;
			t.hit_bytes[BENCH_TIER_SSD] += ssd_win * per;
			t.hit_bytes[BENCH_TIER_DRAM] +=
				t.hit_bytes[BENCH_TIER_UNKNOWN] - ssd_win * per;
			t.hits[BENCH_TIER_UNKNOWN] = 0;
			t.hit_bytes[BENCH_TIER_UNKNOWN] = 0;
			attribution = "window_counters";
		} else {
			attribution = "incomplete";
		}
	}
	hits = t.hits[0] + t.hits[1] + t.hits[2];
	if (be->describe)
		be->describe(o, desc, sizeof(desc));

	printf("{\"phase\":\"get\",\"backend\":\"%s\",%s%s"
	       "\"keys\":%lu,\"size\":%zu,\"zipf\":%.3f,\"seed\":%" PRIu64 ","
	       "\"rank_map\":\"%s\",\"pattern\":\"%s\",\"workers\":%u,\"qd\":%u,\"layout\":\"%s\",\"mode\":\"%s\","
	       "\"warmup_s\":%.3f,\"window_s\":%.3f,"
	       "\"gets\":%" PRIu64 ",\"hits\":%" PRIu64 ",\"hits_dram\":%" PRIu64 ","
	       "\"hits_ssd\":%" PRIu64 ",\"hits_unknown\":%" PRIu64 ","
	       "\"misses\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"content_errors\":%" PRIu64 ","
	       "\"worker_failed\":%u,\"tier_attribution\":\"%s\","
	       "\"hit_rate\":%.5f,\"gets_per_s\":%.1f,"
	       "\"hit_gib_s\":%.4f,\"dram_gib_s\":%.4f,\"ssd_gib_s\":%.4f,"
	       "\"lat_mean_us\":%.1f,\"lat_p50_us\":%.1f,\"lat_p95_us\":%.1f,"
	       "\"lat_p99_us\":%.1f,\"lat_mean_dram_us\":%.1f,"
	       "\"lat_mean_ssd_us\":%.1f,\"lat_mean_miss_us\":%.1f,"
	       "\"backend_ssd_hits_window\":%" PRIu64 ","
	       "\"backend_ssd_read_bytes_window\":%" PRIu64 ","
	       "\"counter_sample_ms\":[%.2f,%.2f],"
	       "\"disk\":\"%s\",\"disk_valid\":%s,\"disk_reads\":%" PRIu64 ","
	       "\"disk_read_bytes\":%" PRIu64 ",\"disk_write_bytes\":%" PRIu64 ","
	       "\"trace_ranges\":\"%s\"%s%s}\n",
	       be->name, o->label ? o->label : "", o->label ? "," : "",
	       o->keys, o->size, o->zipf, o->seed,
	       o->shuffle ? "shuffle" : "identity", o->scan ? "scan" : "zipf",
	       o->workers, o->qd ? o->qd : o->ring_batch ? o->ring_batch : 1,
	       o->procs ? "procs" : o->qd ? "ring" :
	       o->ring_batch ? "ringbatch" : "threads",
	       o->bytes_mode ? "bytes" : "holder",
	       o->warmup_s, o->window_s,
	       t.counted, hits, t.hits[BENCH_TIER_DRAM], t.hits[BENCH_TIER_SSD],
	       t.hits[BENCH_TIER_UNKNOWN], t.misses, t.errors, t.bad, failed,
	       attribution, t.counted ? (double)hits / t.counted : 0,
	       t.counted / win,
	       (t.hit_bytes[0] + t.hit_bytes[1] + t.hit_bytes[2]) / win / gib,
	       t.hit_bytes[BENCH_TIER_DRAM] / win / gib,
	       t.hit_bytes[BENCH_TIER_SSD] / win / gib,
	       t.counted ? t.lat_sum_ns / 1e3 / t.counted : 0,
	       bench_lat_pct_us(t.lat, 50), bench_lat_pct_us(t.lat, 95),
	       bench_lat_pct_us(t.lat, 99),
	       lat_tier_us[BENCH_TIER_DRAM], lat_tier_us[BENCH_TIER_SSD],
	       lat_tier_us[BENCH_TIERS],
	       ssd_win,
	       c1.ssd_read_bytes >= c0.ssd_read_bytes ?
	       c1.ssd_read_bytes - c0.ssd_read_bytes : 0,
	       skew0 / 1e6, skew1 / 1e6,
	       o->disk ? o->disk : "", d0.valid && d1.valid ? "true" : "false",
	       d1.reads - d0.reads, d1.read_bytes - d0.read_bytes,
	       d1.write_bytes - d0.write_bytes, ranges,
	       desc[0] ? "," : "", desc);
	fflush(stdout);
	munmap(sh, sizeof(*sh));
	bench_keys_free(&keys);
	return (failed || t.errors || t.bad) ? -EIO : 0;
}
