/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fkvbench: the benchmark load generator (tools/bench/run drives it).
 *
 * One binary drives fluxonkv (libfluxonkv) and memcached (meta protocol over
 * TCP loopback) through the same backend vtable, the same deterministic Zipf
 * key sequence (a function of seed, worker id and operation index) and the
 * same measurement window.
 */
#ifndef FKVBENCH_H
#define FKVBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_LAT_BUCKETS	512	/* log-linear: 8 sub-buckets per power of 2 */
#define BENCH_MAX_WORKERS	64
#define BENCH_KEY_MAX		128
#define BENCH_RING_BATCH_MAX	64	/* get --ring-batch */

enum bench_tier {
	BENCH_TIER_DRAM = 0,
	BENCH_TIER_SSD = 1,
	BENCH_TIER_UNKNOWN = 2,	/* the backend cannot tell per get */
	BENCH_TIERS
};

struct bench_opts {
	const char *backend;		/* "fluxonkv" | "memcached" */
	const char *server;		/* memcached host:port */
	unsigned long keys;
	size_t size;
	double zipf;
	uint64_t seed;
	bool shuffle;			/* rank -> key through a fixed permutation */
	bool scan;			/* --pattern scan instead of Zipf */
	const char *prefix;
	/* put */
	double put_rate_mib;		/* 0: unlimited */
	/* get */
	unsigned int workers;
	bool procs;			/* workers are processes, not threads */
	unsigned int qd;		/* gets in flight per worker (0: 1, sync) */
	unsigned int ring_batch;	/* or: batches of this many gets */
	bool bytes_mode;
	double warmup_s, window_s;
	const char *disk;		/* /proc/diskstats name to sample, or NULL */
	/* batch */
	unsigned int batch;		/* keys a call */
	unsigned int pieces;		/* buffers a key */
	bool batch_put;			/* --op put */
	bool vm_copy;			/* --copy vm: process_vm_writev */
	bool serve;			/* --serve: turns read from stdin */
	unsigned long min_calls;	/* counted calls, whatever the window */
	/* trace */
	const char *ranges;		/* "first:count,..." per worker */
	/* memcpy */
	double seconds;
	const char *label;		/* raw JSON members copied into the output */
};

/* What a get returns: a view of the value and the tier it came from. */
struct bench_ref {
	const void *data;
	size_t len;
	enum bench_tier tier;
	uint64_t priv[6];		/* backend state (the fluxonkv holder) */
};

/* Backend counters sampled at the window's edges (all cumulative). */
struct bench_counters {
	bool valid;
	uint64_t ssd_hits;		/* gets served from the SSD tier */
	uint64_t ssd_read_bytes;	/* bytes the backend says it read from SSD */
};

struct bench_backend {
	const char *name;
	/* One connection per worker; fluxonkv threads share one handle. */
	int (*open)(const struct bench_opts *o, void **conn);
	void (*close)(void *conn);
	int (*put)(void *conn, const char *key, size_t kl, const void *val,
		   size_t len);
	/* 0: hit (*ref filled), -ENOENT: miss, other -errno: error */
	int (*get)(void *conn, const char *key, size_t kl, struct bench_ref *ref);
	void (*release)(void *conn, struct bench_ref *ref);
	/* Cumulative tier counters (NULL when get() reports the tier). */
	int (*counters)(const struct bench_opts *o, struct bench_counters *c);
	/* One JSON member list describing the server, or NULL. */
	void (*describe)(const struct bench_opts *o, char *buf, size_t cap);
	/*
	 * Gets kept in flight from one thread (get --qd), or NULL: a ring of
	 * @depth on @conn; submit a get tagged @tag; reap one completion
	 * (waits; its tag, and 0 / -ENOENT / -errno with *ref as get()'s).
	 */
	int (*ring_open)(void *conn, unsigned int depth, void **ring);
	int (*ring_get)(void *ring, const char *key, size_t kl, uint64_t tag);
	int (*ring_reap)(void *ring, uint64_t *tag, struct bench_ref *ref);
	/*
	 * get --ring-batch: gets of @n keys (@keys[i], @kls[i] bytes) as one
	 * command through the ring, waited for; each result in @res[i] (0 /
	 * -ENOENT / -errno), a hit's reference in @refs[i]; 0 or the ring's
	 * own -errno.
	 */
	int (*ring_get_batch)(void *ring, const char *const *keys,
			      const size_t *kls, unsigned int n, int *res,
			      struct bench_ref *refs);
	void (*ring_close)(void *ring);
};

extern const struct bench_backend bench_backend_fluxonkv;
extern const struct bench_backend bench_backend_memcached;

/* workload.c: value contents and the key sequence */
struct bench_keys {
	unsigned long n;
	double *cdf;			/* Zipf CDF over ranks */
	uint32_t *perm;			/* rank -> key */
	uint64_t seed;
	const char *prefix;
	bool scan;			/* cyclic scan, not Zipf */
	unsigned int workers;		/* scan: interleaving stride */
};

uint64_t bench_now_ns(void);
uint64_t bench_mix(uint64_t x);
uint64_t bench_word(uint64_t key, size_t w);
void bench_fill(void *v, size_t size, uint64_t key);
bool bench_check_ends(const void *data, size_t len, size_t want, uint64_t key);
int bench_keys_init(struct bench_keys *k, const struct bench_opts *o);
void bench_keys_free(struct bench_keys *k);
uint64_t bench_key_at(const struct bench_keys *k, unsigned int worker,
		      uint64_t op);
size_t bench_key_name(char *buf, size_t cap, const char *prefix, uint64_t key);

/* stats.c: per-worker counters and the latency histogram */
struct bench_slot {
	uint64_t ops;			/* completed before the window closed */
	uint64_t first;			/* index of the first counted op */
	uint64_t counted, hits[BENCH_TIERS], misses, errors, bad;
	uint64_t hit_bytes[BENCH_TIERS];
	uint64_t lat_sum_ns;
	uint64_t lat_tier_ns[BENCH_TIERS + 1];	/* per tier, [BENCH_TIERS] = misses */
	uint64_t lat[BENCH_LAT_BUCKETS];
	int ready;
	int pad[15];
};

unsigned int bench_lat_bucket(uint64_t ns);
double bench_lat_pct_us(const uint64_t *lat, double pct);

/* run_*.c: the subcommands; each prints one JSON line */
int bench_run_put(const struct bench_opts *o, const struct bench_backend *be);
int bench_run_get(const struct bench_opts *o, const struct bench_backend *be);
int bench_run_trace(const struct bench_opts *o);
int bench_run_fill(const struct bench_opts *o, const struct bench_backend *be);
int bench_run_memcpy(const struct bench_opts *o);
int bench_run_loopback(const struct bench_opts *o);
int bench_run_floor(const struct bench_opts *o);
int bench_run_batch(const struct bench_opts *o);

/* diskstats.c */
struct bench_disk {
	bool valid;
	uint64_t reads, read_bytes, writes, write_bytes;
};
void bench_disk_sample(const char *name, struct bench_disk *d);

#endif /* FKVBENCH_H */
