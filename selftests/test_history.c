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
 *
 * The second test (issue 33) keeps such a history while fluxond is
 * SIGKILLed and started again, FKV_KILL_ROUNDS times (default 3; make
 * stress: 100), under a load that evicts (a small segment) and persists
 * to a slow SSD (dm-delay): no put that returned may be lost or go back
 * to an older version, whatever the daemon was doing when it died.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "fkv_env.h"
#include "fkv_kv.h"
#include "fkv_ssd.h"

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
		   uint32_t writers, uint32_t *writer, uint32_t *seq)
{
	struct h_val v;

	if (len < sizeof(v))
		return -1;
	memcpy(&v, data, sizeof(v));
	if (v.key != key || v.len != len || v.writer >= writers)
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

				if (h_check(h.data, h.len, k, H_PROCS, &wr,
					    &sq))
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

/* ---- issue 33: fluxond SIGKILLed under load, a slow SSD ---- */

#define K_WRITERS	4
#define K_READERS	2
#define K_SWEEPER	(K_WRITERS + K_READERS)	/* the parent's gets */
#define K_PROCS		(K_SWEEPER + 1)
#define K_KEYS		32	/* key k is writer k % K_WRITERS's */
#define K_MAXOPS	30000
#define K_ROUNDS	3
#define K_VMAX		(2 * FKV_MIB + 4096)
#define K_DELAY_MS	60	/* each SSD write */
#define K_DM_NAME	"fkv-selftest-kill"

struct k_log {
	int stop;
	unsigned int n[K_PROCS];
	struct h_op ops[K_PROCS][K_MAXOPS];
};

static unsigned int k_rounds(void)
{
	const char *e = getenv("FKV_KILL_ROUNDS");
	unsigned long n = e ? strtoul(e, NULL, 10) : 0;

	return n && n <= 1000 ? (unsigned int)n : K_ROUNDS;
}

/* 64 B .. 2 MiB: small values, DRAM-sized ones and ones that evict. */
static size_t k_len(uint32_t seq, uint64_t *rnd)
{
	static const size_t lens[] = {
		64, 3000, 40000, 300000, FKV_MIB, 2 * FKV_MIB,
	};

	return lens[fkv_xorshift(rnd) % 6] + (seq % 97) * 8;
}

static void k_record(struct k_log *log, unsigned int w)
{
	__atomic_store_n(&log->n[w], log->n[w] + 1, __ATOMIC_RELEASE);
}

/* get key K and log it in slot W as h_worker does; its result. */
static int k_get(struct fkv *kv, struct k_log *log, unsigned int w,
		  unsigned int k)
{
	struct h_op *op = &log->ops[w][log->n[w]];
	struct fkv_holder h;
	char key[32];
	int ret;

	h_key(key, sizeof(key), k);
	op->kind = H_GET;
	op->key = (uint8_t)k;
	op->begin = now_ns();
	ret = fkv_get(kv, key, strlen(key), &h);
	op->end = now_ns();
	if (!ret) {
		uint32_t wr = 0, sq = 0;

		if (h_check(h.data, h.len, k, K_WRITERS, &wr, &sq))
			ret = -EBADMSG;
		op->writer = (uint8_t)wr;
		op->seq = sq;
		op->put_id = h.put_id;
		fkv_holder_release(kv, &h);
	}
	op->ret = (int8_t)(ret < -127 ? -127 : ret);
	k_record(log, w);
	return ret;
}

static void k_worker(struct k_log *log, unsigned int w)
{
	uint64_t rnd = 0x33a5 + w * 7919;
	uint8_t *buf = malloc(K_VMAX);
	struct fkv *kv = kv_open();
	uint32_t seq = 0;
	char key[32];

	FKV_ASSERT(buf);
	while (!__atomic_load_n(&log->stop, __ATOMIC_ACQUIRE) &&
	       log->n[w] < K_MAXOPS) {
		struct h_op *op = &log->ops[w][log->n[w]];
		unsigned int k;
		size_t len;
		int ret;

		if (w >= K_WRITERS) {
			ret = k_get(kv, log, w, (unsigned int)
				    (fkv_xorshift(&rnd) % K_KEYS));
			if (ret && ret != -ENOENT)	/* no daemon */
				fkv_msleep(20);
			continue;
		}
		/* each of its keys in turn: none waits long for a version */
		k = w + K_WRITERS * (seq % (K_KEYS / K_WRITERS));
		len = k_len(++seq, &rnd);
		h_key(key, sizeof(key), k);
		h_fill(buf, len, k, w, seq);
		op->kind = H_PUT;
		op->key = (uint8_t)k;
		op->seq = seq;
		op->put_id = 0;
		op->begin = now_ns();
		ret = fkv_put(kv, key, strlen(key), buf, len, &op->put_id);
		op->end = now_ns();
		op->ret = (int8_t)(ret < -127 ? -127 : ret);
		k_record(log, w);
		if (ret)	/* no daemon, no room: give it a moment */
			fkv_msleep(20);
	}
	fkv_close(kv);
	free(buf);
	_exit(0);
}

struct k_ack {
	int64_t end;
	uint64_t put_id;
};

static int k_ack_cmp(const void *a, const void *b)
{
	const struct k_ack *x = a, *y = b;

	return x->end < y->end ? -1 : x->end > y->end;
}

struct k_result {
	unsigned long puts, failed_puts, gets, hits, misses, errors;
	unsigned long lost, older, wrong;
	int bad_key;		/* of the first violation, or -1 */
};

/* What the module has of hist-K: its DRAM copy, its ring entries. */
static void k_tell(unsigned int k)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/rings", "r");
	char line[512], key[32], tail[40];
	struct fkv_lookup l;
	struct fkv *kv = kv_open();
	int ret;

	h_key(key, sizeof(key), k);
	ret = fkv_lookup(kv, key, strlen(key), &l);
	fkv_diag("%s: lookup %s (put_id %" PRIu64 ", source %u); SSD "
		 "persist errors %" PRIu64 ", queue waits %" PRIu64, key,
		 ret ? fkv_strerror(ret) : "ok", ret ? 0 : l.put_id,
		 ret ? 0 : l.source, fkv_sysfs("ssd_persist_errors"),
		 fkv_sysfs("ssd_queue_waits"));
	fkv_close(kv);
	snprintf(tail, sizeof(tail), "\t%s\n", key);
	while (f && fgets(line, sizeof(line), f))
		if (strlen(line) > strlen(tail) &&
		    !strcmp(line + strlen(line) - strlen(tail), tail))
			fkv_diag("ring:%s", strtok(line, "\n"));
	if (f)
		fclose(f);
}

/*
 * Check the history so far: every hit is an intact value some put of its
 * key wrote, of that put's put_id when it returned it, begun before the
 * get ended; no get returns a version older than, or misses, a put of the
 * key that returned before the get began.  Each violation is counted and
 * the first few told.
 */
static void k_check(const struct k_log *log, const unsigned int *n,
		    struct k_result *res)
{
	struct k_ack *acks[K_KEYS];
	unsigned int nacks[K_KEYS] = { 0 }, w, i, k, told = 0;
	uint64_t *maxid[K_KEYS];

	memset(res, 0, sizeof(*res));
	res->bad_key = -1;
	for (k = 0; k < K_KEYS; k++) {
		acks[k] = calloc(K_MAXOPS, sizeof(*acks[k]));
		maxid[k] = calloc(K_MAXOPS, sizeof(*maxid[k]));
		FKV_ASSERT(acks[k] && maxid[k]);
	}
	for (w = 0; w < K_WRITERS; w++)
		for (i = 0; i < n[w]; i++) {
			const struct h_op *p = &log->ops[w][i];

			if (p->kind != H_PUT)
				continue;
			if (p->ret) {
				res->failed_puts++;
				continue;
			}
			res->puts++;
			acks[p->key][nacks[p->key]++] =
				(struct k_ack){ p->end, p->put_id };
		}
	for (k = 0; k < K_KEYS; k++) {
		qsort(acks[k], nacks[k], sizeof(acks[k][0]), k_ack_cmp);
		for (i = 0; i < nacks[k]; i++)
			maxid[k][i] = i && maxid[k][i - 1] > acks[k][i].put_id ?
				      maxid[k][i - 1] : acks[k][i].put_id;
	}
	for (w = K_WRITERS; w < K_PROCS; w++)
		for (i = 0; i < n[w]; i++) {
			const struct h_op *g = &log->ops[w][i], *p = NULL;
			unsigned int lo = 0, hi, j;
			uint64_t floor = 0;

			k = g->key;
			/* the acknowledged puts that returned before g began */
			hi = nacks[k];
			while (lo < hi) {
				unsigned int mid = (lo + hi) / 2;

				if (acks[k][mid].end < g->begin)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo)
				floor = maxid[k][lo - 1];
			res->gets++;
			if (g->ret == -ENOENT) {
				res->misses++;
				if (floor) {
					res->lost++;
					if (res->bad_key < 0)
						res->bad_key = (int)k;
					if (told++ < 8)
						fkv_diag("LOST: hist-%u missed "
							 "(proc %u op %u) after "
							 "put_id %" PRIu64
							 " returned", k, w, i,
							 floor);
				}
				continue;
			}
			if (g->ret == -EBADMSG) {
				res->wrong++;
				if (res->bad_key < 0)
					res->bad_key = (int)k;
				if (told++ < 8)
					fkv_diag("WRONG: hist-%u bytes are no "
						 "value put (proc %u op %u)",
						 k, w, i);
				continue;
			}
			if (g->ret) {
				res->errors++;	/* no daemon, no room */
				continue;
			}
			res->hits++;
			for (j = 0; g->writer < K_WRITERS &&
			     j < n[g->writer]; j++) {
				const struct h_op *o =
					&log->ops[g->writer][j];

				if (o->kind == H_PUT && o->seq == g->seq) {
					p = o;
					break;
				}
			}
			if (!p || p->key != k || p->begin >= g->end ||
			    (!p->ret && p->put_id != g->put_id)) {
				res->wrong++;
				if (told++ < 8)
					fkv_diag("WRONG: hist-%u put_id %"
						 PRIu64 " writer %u seq %u: "
						 "%s", k, g->put_id, g->writer,
						 g->seq, !p ? "never put" :
						 "not that put's");
				continue;
			}
			if (g->put_id < floor) {
				res->older++;
				if (res->bad_key < 0)
					res->bad_key = (int)k;
				if (told++ < 8)
					fkv_diag("OLDER: hist-%u put_id %"
						 PRIu64 " after put_id %"
						 PRIu64 " returned", k,
						 g->put_id, floor);
			}
		}
	for (k = 0; k < K_KEYS; k++) {
		free(acks[k]);
		free(maxid[k]);
	}
}

/* Every key read once by the parent (slot K_SWEEPER). */
static void k_sweep(struct fkv *kv, struct k_log *log)
{
	unsigned int k;

	for (k = 0; k < K_KEYS && log->n[K_SWEEPER] < K_MAXOPS; k++)
		k_get(kv, log, K_SWEEPER, k);
}

static void k_snapshot(const struct k_log *log, unsigned int *n)
{
	unsigned int w;

	for (w = 0; w < K_PROCS; w++)
		n[w] = __atomic_load_n(&log->n[w], __ATOMIC_ACQUIRE);
}

FKV_TEST_TIMEOUT(a_daemon_killed_under_load_loses_no_acknowledged_value, 3000)
{
	struct k_log *log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned int rounds = k_rounds(), r, w, n[K_PROCS];
	char devno[32], table[256];
	uint64_t base, sectors, rnd = 0x3333, t0;
	pid_t pids[K_SWEEPER];
	struct k_result res;
	uint32_t shard;
	struct fkv *kv;
	int fd, ret, status;

	FKV_ASSERT(log != MAP_FAILED);
	memset(log, 0, sizeof(*log));
	base = setup("segment_mb=16");
	sectors = dm_disk("dm-delay", devno, sizeof(devno));
	snprintf(table, sizeof(table), "0 %" PRIu64 " delay %s 0 0 %s 0 %u\n",
		 sectors, devno, devno, K_DELAY_MS);
	dm_create(K_DM_NAME, table);
	kv = kv_open();
	fd = open_shard("/dev/mapper/" K_DM_NAME);
	ret = fkv_ssd_attach(kv, fd, 0, (sectors * 512) & ~(FKV_MIB - 1), 0,
			     &shard);
	close(fd);
	FKV_ASSERT(ret == 0, "attach: %s", fkv_strerror(ret));

	fflush(stdout);
	for (w = 0; w < K_SWEEPER; w++) {
		pids[w] = fork();
		FKV_ASSERT(pids[w] >= 0);
		if (pids[w] == 0)
			k_worker(log, w);
	}
	t0 = (uint64_t)fkv_now_ms();
	for (r = 1; r <= rounds; r++) {
		unsigned int before = log->n[K_SWEEPER];

		/* somewhere in the load: puts, gets, evictions, persists */
		fkv_msleep(300 + (unsigned int)(fkv_xorshift(&rnd) % 1200));
		FKV_ASSERT_EQ(fkv_daemon_kill(), 0);
		/* the load goes on without it */
		fkv_msleep((unsigned int)(fkv_xorshift(&rnd) % 2000));
		FKV_START_DAEMON();
		/* every acknowledged put readable after the restart */
		k_sweep(kv, log);
		k_snapshot(log, n);
		k_check(log, n, &res);
		if (res.lost || res.older || res.wrong || r == rounds ||
		    r % 10 == 0)
			fkv_diag("round %u (%" PRIu64 " s): %lu puts (%lu "
				 "failed), %lu gets: %lu hits, %lu misses, "
				 "%lu errors; sweep %u gets; lost %lu, older "
				 "%lu, wrong %lu", r,
				 ((uint64_t)fkv_now_ms() - t0) / 1000,
				 res.puts, res.failed_puts, res.gets, res.hits,
				 res.misses, res.errors,
				 log->n[K_SWEEPER] - before, res.lost,
				 res.older, res.wrong);
		if (res.lost || res.older || res.wrong) {
			k_tell((unsigned int)res.bad_key);
			break;
		}
	}
	__atomic_store_n(&log->stop, 1, __ATOMIC_RELEASE);
	for (w = 0; w < K_SWEEPER; w++) {
		FKV_ASSERT_EQ(waitpid(pids[w], &status, 0), pids[w]);
		FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			   "worker %u: status %#x", w, status);
	}
	/* once more, quiet: every key at its newest acknowledged version */
	k_sweep(kv, log);
	k_snapshot(log, n);
	k_check(log, n, &res);
	fkv_diag("%u kills; %lu puts acknowledged (%lu failed), %lu gets: "
		 "%lu hits, %lu misses, %lu errors; evictions %" PRIu64
		 ", SSD writes %" PRIu64 ", commits published %" PRIu64
		 " ignored %" PRIu64 ", SSD persist errors %" PRIu64
		 ", SSD ring evictions %" PRIu64,
		 r > rounds ? rounds : r, res.puts, res.failed_puts, res.gets,
		 res.hits, res.misses, res.errors, fkv_sysfs("evictions"),
		 fkv_sysfs("ssd_writes"), fkv_sysfs("ssd_commits_published"),
		 fkv_sysfs("ssd_commits_ignored"),
		 fkv_sysfs("ssd_persist_errors"), fkv_sysfs("ssd_evictions"));
	FKV_ASSERT_EQ(res.lost, 0);
	FKV_ASSERT_EQ(res.older, 0);
	FKV_ASSERT_EQ(res.wrong, 0);
	FKV_ASSERT_GT(res.hits, 0);
	FKV_ASSERT_GT(fkv_sysfs("evictions"), 0);
	munmap(log, sizeof(*log));
	fkv_close(kv);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_STOP_DAEMON();
	(void)base;
	dm_remove(K_DM_NAME);
}
