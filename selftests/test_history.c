// SPDX-License-Identifier: GPL-2.0
/*
 * test_history - a concurrent history checker.  Several processes put,
 * get and delete a few keys with self-describing values (each carries its
 * key, writer, sequence number and a checksum of itself) and record every
 * operation with CLOCK_MONOTONIC begin/end times in shared memory.  The
 * segment is large enough that nothing is evicted, so the history must be:
 *
 *   whole       every hit's bytes are a value some writer put for that key,
 *               intact, of the put_id that put returned
 *   in order    no get returns a version older than a put of the key that
 *               completed before the get began, nor one a completed delete
 *               removed; no get misses a key whose put completed before it
 *               began unless a delete may have come between
 *
 * FKV_HISTORY_OPS sets the operations per process (default 400).
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "fkv_env.h"
#include "fkv_kv.h"

#define H_PROCS		3
#define H_KEYS		4
#define H_OPS		400
#define H_MAXOPS	20000

enum h_kind { H_PUT, H_GET, H_DEL };

struct h_op {
	uint8_t kind;
	uint8_t key;
	int8_t ret;		/* 0, or -errno */
	uint8_t writer;		/* get: the hit value's writer */
	uint32_t seq;		/* put: its seq; get: the hit value's seq */
	uint64_t put_id;	/* put: assigned; get: the hit's */
	int64_t begin, end;	/* CLOCK_MONOTONIC ns */
};

struct h_log {
	unsigned int n[H_PROCS];
	struct h_op ops[H_PROCS][H_MAXOPS];
};

/* The value header; the rest is a pattern of it. */
struct h_val {
	uint32_t key, writer, seq, len;
	uint64_t sum;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned long h_ops(void)
{
	const char *e = getenv("FKV_HISTORY_OPS");
	unsigned long n = e ? strtoul(e, NULL, 10) : 0;

	return n && n <= H_MAXOPS ? n : H_OPS;
}

static void h_key(char *buf, size_t n, unsigned int k)
{
	snprintf(buf, n, "hist-%u", k);
}

static size_t h_len(uint32_t seq)
{
	return 4096 + (seq % 37) * 1000;
}

static void h_fill(uint8_t *buf, size_t len, uint32_t key, uint32_t writer,
		   uint32_t seq)
{
	struct h_val v = { key, writer, seq, (uint32_t)len, 0 };

	fkv_pattern_fill(buf + sizeof(v), len - sizeof(v), &v, 16, seq);
	v.sum = fkv_hash(buf + sizeof(v), len - sizeof(v), seq);
	memcpy(buf, &v, sizeof(v));
}

/* 0 if DATA (LEN bytes) is an intact value of KEY; its writer and seq. */
static int h_check(const uint8_t *data, size_t len, uint32_t key,
		   uint32_t *writer, uint32_t *seq)
{
	struct h_val v;

	if (len < sizeof(v))
		return -1;
	memcpy(&v, data, sizeof(v));
	if (v.key != key || v.len != len || v.writer >= H_PROCS)
		return -1;
	if (v.sum != fkv_hash(data + sizeof(v), len - sizeof(v), v.seq))
		return -1;
	*writer = v.writer;
	*seq = v.seq;
	return 0;
}

static void h_worker(struct h_log *log, unsigned int w)
{
	uint64_t rnd = 0x4157 + w * 7919;
	unsigned long n = h_ops(), i;
	uint8_t *buf = malloc(4096 + 37 * 1000);
	struct fkv *kv = kv_open();
	uint32_t seq = 0;
	char key[32];

	for (i = 0; i < n; i++) {
		struct h_op *op = &log->ops[w][i];
		unsigned int k = (unsigned int)(fkv_xorshift(&rnd) % H_KEYS);
		unsigned int r = (unsigned int)(fkv_xorshift(&rnd) % 10);
		struct fkv_holder h;
		int ret;

		h_key(key, sizeof(key), k);
		op->key = (uint8_t)k;
		if (r < 4) {
			size_t len = h_len(++seq);

			h_fill(buf, len, k, w, seq);
			op->kind = H_PUT;
			op->seq = seq;
			op->begin = now_ns();
			ret = fkv_put(kv, key, strlen(key), buf, len,
				      &op->put_id);
			op->end = now_ns();
		} else if (r < 9) {
			op->kind = H_GET;
			op->begin = now_ns();
			ret = fkv_get(kv, key, strlen(key), &h);
			op->end = now_ns();
			if (!ret) {
				uint32_t wr = 0, sq = 0;

				if (h_check(h.data, h.len, k, &wr, &sq))
					ret = -EBADMSG;
				op->writer = (uint8_t)wr;
				op->seq = sq;
				op->put_id = h.put_id;
				fkv_holder_release(kv, &h);
			}
		} else {
			op->kind = H_DEL;
			op->begin = now_ns();
			ret = fkv_delete(kv, key, strlen(key));
			op->end = now_ns();
		}
		op->ret = (int8_t)ret;
		log->n[w] = (unsigned int)(i + 1);
	}
	fkv_close(kv);
	free(buf);
	_exit(0);
}

/* The put that wrote (WRITER, SEQ), or NULL. */
static const struct h_op *h_put_of(const struct h_log *log, unsigned int writer,
				   uint32_t seq)
{
	unsigned int i;

	for (i = 0; i < log->n[writer]; i++)
		if (log->ops[writer][i].kind == H_PUT &&
		    log->ops[writer][i].seq == seq)
			return &log->ops[writer][i];
	return NULL;
}

FKV_TEST_TIMEOUT(concurrent_put_get_delete_history_is_whole_and_in_order, 600)
{
	uint64_t base = setup("segment_mb=64");
	struct h_log *log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned long gets = 0, hits = 0, puts = 0, dels = 0;
	pid_t pids[H_PROCS];
	unsigned int w, x, i, j;
	int status;

	FKV_ASSERT(log != MAP_FAILED);
	memset(log, 0, sizeof(*log));
	fflush(stdout);
	for (w = 0; w < H_PROCS; w++) {
		pids[w] = fork();
		FKV_ASSERT(pids[w] >= 0);
		if (pids[w] == 0)
			h_worker(log, w);
	}
	for (w = 0; w < H_PROCS; w++) {
		FKV_ASSERT_EQ(waitpid(pids[w], &status, 0), pids[w]);
		FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			   "worker %u: status %#x", w, status);
	}
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), 0);

	for (w = 0; w < H_PROCS; w++)
		for (i = 0; i < log->n[w]; i++) {
			const struct h_op *g = &log->ops[w][i];

			if (g->kind == H_PUT) {
				FKV_ASSERT(g->ret == 0, "put failed: %d", g->ret);
				puts++;
				continue;
			}
			if (g->kind == H_DEL) {
				FKV_ASSERT(g->ret == 0 || g->ret == -ENOENT,
					   "delete: %d", g->ret);
				dels++;
				continue;
			}
			gets++;
			FKV_ASSERT(g->ret == 0 || g->ret == -ENOENT,
				   "get of hist-%u: %s", g->key,
				   g->ret == -EBADMSG ? "bytes not a value "
				   "that was put" : strerror(-g->ret));
			if (g->ret == 0) {
				const struct h_op *p = h_put_of(log, g->writer,
								g->seq);

				hits++;
				FKV_ASSERT(p && p->key == g->key,
					   "hist-%u returned writer %u seq %u, "
					   "never put", g->key, g->writer,
					   g->seq);
				FKV_ASSERT_EQ(p->put_id, g->put_id);
				/* the value's put began before the get ended */
				FKV_ASSERT(p->begin < g->end,
					   "a get returned a put from its future");
			}
			/* every op of the key that completed before g began */
			for (x = 0; x < H_PROCS; x++)
				for (j = 0; j < log->n[x]; j++) {
					const struct h_op *o = &log->ops[x][j];

					if (o->key != g->key || o->end >= g->begin)
						continue;
					if (o->kind == H_PUT && g->ret == 0)
						FKV_ASSERT(o->put_id <= g->put_id,
							   "hist-%u: get returned put_id "
							   "%" PRIu64 " after put_id %" PRIu64
							   " completed", g->key, g->put_id,
							   o->put_id);
					if (o->kind == H_DEL && g->ret == 0) {
						const struct h_op *p = h_put_of(log,
							g->writer, g->seq);

						FKV_ASSERT(!(p && p->end < o->begin),
							   "hist-%u: get returned "
							   "put_id %" PRIu64 " a "
							   "completed delete removed",
							   g->key, g->put_id);
					}
					if (o->kind == H_PUT && g->ret == -ENOENT) {
						/* a delete may have come between */
						bool excused = false;
						unsigned int y, k;

						for (y = 0; y < H_PROCS && !excused; y++)
							for (k = 0; k < log->n[y]; k++) {
								const struct h_op *d =
									&log->ops[y][k];

								if (d->kind == H_DEL &&
								    d->key == g->key &&
								    d->end > o->begin &&
								    d->begin < g->end) {
									excused = true;
									break;
								}
							}
						FKV_ASSERT(excused, "hist-%u: a miss "
							   "after a completed put, "
							   "no delete between",
							   g->key);
					}
				}
		}
	fkv_diag("%lu puts, %lu deletes, %lu gets (%lu hits) checked", puts,
		 dels, gets, hits);
	FKV_ASSERT_GT(hits, 0);
	munmap(log, sizeof(*log));
	/* afterwards every key still takes a put and reads it back */
	for (i = 0; i < H_KEYS; i++) {
		struct fkv *kv = kv_open();
		struct fkv_holder h;
		char key[32];

		h_key(key, sizeof(key), i);
		put_pattern(kv, key, 5000, 77);
		FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h), 0);
		FKV_ASSERT_PATTERN(h.data, 5000, key, strlen(key), 77);
		release(kv, &h);
		delete_key(kv, key);
		fkv_close(kv);
	}
	teardown(base);
}
