// SPDX-License-Identifier: GPL-2.0
/*
 * fkvload - a content-checking load generator for fluxonkv.
 *
 * Phase 1 puts --keys values of --size bytes, one at a time (the reference's
 * serial bootstrap).  Phase 2 forks --procs processes that each do --gets
 * gets with a Zipf(--zipf) key choice that is deterministic per process and
 * operation index, verify every hit (holder mode: first/last word and a word
 * per 4 KiB; bytes mode: the whole value copied out and compared) and
 * release it.  Hits are attributed to the tier the get reports.
 *
 * With --verify there is neither phase: one get of every key 0..keys-1
 * (as a previous run with the same --keys, --size and --prefix put them),
 * each value compared in full; a miss counts as a failure (a warm restart
 * test asks "is every value put before still served?").
 *
 * Prints progress to stderr and a summary (human, or one JSON object with
 * --json).  Exit status: 0, 1 if any content check failed or an unexpected
 * error happened, 2 on usage errors.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fluxonkv.h>

#define LAT_BUCKETS	512	/* log-linear: 8 sub-buckets per power of 2 */

/* Progress redraws in place on a terminal, else one line per quarter. */
static bool progress_tty;

struct opts {
	unsigned long keys;
	size_t size;
	unsigned int procs;
	unsigned long gets;
	double zipf;
	uint64_t seed;
	bool bytes_mode;
	bool verify;
	bool json;
	bool quiet;
	const char *prefix;
};

/* Shared between the get processes (MAP_SHARED anonymous). */
struct shared {
	uint64_t gets, hits_mem, hits_ssd, misses, errors, bad;
	uint64_t bytes;
	uint64_t lat[LAT_BUCKETS];
	uint64_t lat_sum_ns;
	uint64_t progress;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* splitmix64: value words and key choice both derive from it. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t word_of(uint64_t key, size_t w)
{
	return mix((key << 32) ^ w);
}

static void fill_value(uint64_t *v, size_t size, uint64_t key)
{
	size_t w, n = size / 8;

	for (w = 0; w < n; w++)
		v[w] = word_of(key, w);
	if (size % 8) {
		uint64_t last = word_of(key, n);

		memcpy((char *)v + n * 8, &last, size % 8);
	}
}

static bool check_word(const void *data, size_t w, uint64_t key)
{
	uint64_t got;

	memcpy(&got, (const char *)data + w * 8, 8);
	return got == word_of(key, w);
}

/* Holder mode: sample words (the value is not copied). */
static bool check_sampled(const void *data, size_t len, uint64_t key)
{
	size_t n = len / 8, w;

	if (n == 0)
		return true;
	for (w = 0; w < n; w += 512)
		if (!check_word(data, w, key))
			return false;
	return check_word(data, n - 1, key);
}

static size_t key_name(char *buf, size_t cap, const char *prefix, uint64_t k)
{
	return (size_t)snprintf(buf, cap, "%s%" PRIu64, prefix, k);
}

static unsigned int lat_bucket(uint64_t ns)
{
	unsigned int b = 0;
	uint64_t v = ns ? ns : 1;
	int msb = 63 - __builtin_clzll(v);

	if (msb < 3)
		return (unsigned int)v;
	b = (unsigned int)((msb - 2) * 8 + ((v >> (msb - 3)) & 7));
	return b < LAT_BUCKETS ? b : LAT_BUCKETS - 1;
}

static uint64_t lat_bucket_ns(unsigned int b)
{
	unsigned int msb;

	if (b < 8)
		return b;
	msb = b / 8 + 2;
	return ((uint64_t)(8 + b % 8)) << (msb - 3);
}

static uint64_t lat_pct(const struct shared *sh, double pct)
{
	uint64_t total = 0, seen = 0, want;
	unsigned int b;

	for (b = 0; b < LAT_BUCKETS; b++)
		total += sh->lat[b];
	if (!total)
		return 0;
	want = (uint64_t)ceil(total * pct / 100.0);
	for (b = 0; b < LAT_BUCKETS; b++) {
		seen += sh->lat[b];
		if (seen >= want)
			return lat_bucket_ns(b);
	}
	return lat_bucket_ns(LAT_BUCKETS - 1);
}

/* Zipf CDF over ranks 1..n; rank r maps to key (r - 1). */
static double *zipf_cdf(unsigned long n, double s)
{
	double *cdf = malloc(n * sizeof(*cdf)), sum = 0;
	unsigned long i;

	if (!cdf)
		return NULL;
	for (i = 0; i < n; i++) {
		sum += 1.0 / pow((double)(i + 1), s);
		cdf[i] = sum;
	}
	for (i = 0; i < n; i++)
		cdf[i] /= sum;
	return cdf;
}

static unsigned long zipf_pick(const double *cdf, unsigned long n, uint64_t r)
{
	double u = (double)(r >> 11) / (double)(1ull << 53);
	unsigned long lo = 0, hi = n - 1;

	while (lo < hi) {
		unsigned long mid = lo + (hi - lo) / 2;

		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int do_puts(struct fkv *kv, const struct opts *o, double *secs)
{
	uint64_t *val = malloc(o->size + 8);
	uint64_t t0 = now_ns(), k;
	char key[128];
	int ret = 0;

	if (!val)
		return -ENOMEM;
	for (k = 0; k < o->keys; k++) {
		size_t kl = key_name(key, sizeof(key), o->prefix, k);

		fill_value(val, o->size, k);
		ret = fkv_put(kv, key, kl, val, o->size, NULL);
		if (ret) {
			fprintf(stderr, "fkvload: put %s: %s\n", key,
				fkv_strerror(ret));
			break;
		}
		if (!o->quiet && progress_tty && (k + 1) % 16 == 0)
			fprintf(stderr, "\rput %" PRIu64 "/%lu", k + 1, o->keys);
		else if (!o->quiet && !progress_tty &&
			 (k + 1) % ((o->keys + 3) / 4) == 0 && k + 1 < o->keys)
			fprintf(stderr, "put %" PRIu64 "/%lu\n", k + 1, o->keys);
	}
	if (!o->quiet)
		fprintf(stderr, "%sput %" PRIu64 "/%lu\n", progress_tty ? "\r" : "",
			k, o->keys);
	*secs = (now_ns() - t0) / 1e9;
	free(val);
	return ret;
}

/* --verify: every key once, the whole value compared.  0 if all served. */
static int do_verify(struct fkv *kv, const struct opts *o)
{
	uint64_t *ref = malloc(o->size + 8), k, mem = 0, ssd = 0, miss = 0,
		 bad = 0, errs = 0;
	struct fkv_holder h;
	char key[128];
	int ret;

	if (!ref)
		return -ENOMEM;
	for (k = 0; k < o->keys; k++) {
		size_t kl = key_name(key, sizeof(key), o->prefix, k);

		ret = fkv_get(kv, key, kl, &h);
		if (ret == -ENOENT) {
			miss++;
			fprintf(stderr, "fkvload: verify %s: MISSING\n", key);
			continue;
		}
		if (ret) {
			errs++;
			fprintf(stderr, "fkvload: verify %s: %s\n", key,
				fkv_strerror(ret));
			continue;
		}
		fill_value(ref, o->size, k);
		if (h.len != o->size || memcmp(ref, h.data, h.len)) {
			bad++;
			fprintf(stderr, "fkvload: verify %s: CONTENT MISMATCH (len %zu, put_id %" PRIu64 ")\n",
				key, (size_t)h.len, h.put_id);
		} else if (h.source == FLUXONKV_SOURCE_SSD) {
			ssd++;
		} else {
			mem++;
		}
		fkv_holder_release(kv, &h);
	}
	free(ref);
	if (o->json)
		printf("{\"keys\":%lu,\"verified\":%" PRIu64 ",\"from_memory\":%" PRIu64 ","
		       "\"from_ssd\":%" PRIu64 ",\"missing\":%" PRIu64 ","
		       "\"errors\":%" PRIu64 ",\"content_errors\":%" PRIu64 "}\n",
		       o->keys, mem + ssd, mem, ssd, miss, errs, bad);
	else
		printf("fkvload verify: %" PRIu64 "/%lu values intact (DRAM %" PRIu64
		       ", SSD %" PRIu64 "), %" PRIu64 " missing, %" PRIu64
		       " errors, %" PRIu64 " content mismatches\n",
		       mem + ssd, o->keys, mem, ssd, miss, errs, bad);
	return (miss || errs || bad) ? 1 : 0;
}

static void get_worker(const struct opts *o, const double *cdf,
		       struct shared *sh, unsigned int id)
{
	void *copy = o->bytes_mode ? malloc(o->size + 8) : NULL;
	struct fkv_holder h;
	struct fkv *kv;
	unsigned long i;
	char key[128];
	int ret;

	ret = fkv_open(NULL, &kv);
	if (ret) {
		fprintf(stderr, "fkvload: open: %s\n", fkv_strerror(ret));
		__atomic_fetch_add(&sh->errors, 1, __ATOMIC_RELAXED);
		_exit(1);
	}
	for (i = 0; i < o->gets; i++) {
		uint64_t r = mix(o->seed ^ mix(((uint64_t)id << 40) | i));
		uint64_t k = zipf_pick(cdf, o->keys, r);
		size_t kl = key_name(key, sizeof(key), o->prefix, k);
		uint64_t t0 = now_ns(), dt;
		bool ok;

		ret = fkv_get(kv, key, kl, &h);
		if (ret == 0 && o->bytes_mode) {
			memcpy(copy, h.data, h.len);
			ok = h.len == o->size && check_word(copy, 0, k) &&
			     check_word(copy, h.len / 8 - 1, k);
			if (ok) {
				uint64_t *ref = malloc(h.len + 8);

				fill_value(ref, h.len, k);
				ok = !memcmp(ref, copy, h.len);
				free(ref);
			}
		} else if (ret == 0) {
			ok = h.len == o->size && check_sampled(h.data, h.len, k);
		}
		dt = now_ns() - t0;
		__atomic_fetch_add(&sh->gets, 1, __ATOMIC_RELAXED);
		if (ret == -ENOENT) {
			__atomic_fetch_add(&sh->misses, 1, __ATOMIC_RELAXED);
		} else if (ret) {
			__atomic_fetch_add(&sh->errors, 1, __ATOMIC_RELAXED);
			fprintf(stderr, "fkvload: get %s: %s\n", key,
				fkv_strerror(ret));
		} else {
			if (!ok) {
				__atomic_fetch_add(&sh->bad, 1, __ATOMIC_RELAXED);
				fprintf(stderr, "fkvload: CONTENT MISMATCH key %s put_id %" PRIu64 "\n",
					key, h.put_id);
			}
			__atomic_fetch_add(h.source == FLUXONKV_SOURCE_SSD ?
					   &sh->hits_ssd : &sh->hits_mem, 1,
					   __ATOMIC_RELAXED);
			__atomic_fetch_add(&sh->bytes, h.len, __ATOMIC_RELAXED);
			fkv_holder_release(kv, &h);
		}
		__atomic_fetch_add(&sh->lat[lat_bucket(dt)], 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->lat_sum_ns, dt, __ATOMIC_RELAXED);
		__atomic_fetch_add(&sh->progress, 1, __ATOMIC_RELAXED);
	}
	fkv_close(kv);
	free(copy);
	_exit(0);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: fkvload [options]\n"
"  --keys N       values to put (default 64)\n"
"  --size BYTES   value size (default 1 MiB - 128)\n"
"  --procs P      get processes (default 2)\n"
"  --gets G       gets per process (default 256)\n"
"  --zipf S       Zipf exponent of the key choice (default 0.99)\n"
"  --seed X       key-sequence seed (default 1)\n"
"  --mode M       holder (sampled check, zero copy) | bytes (copy + full check)\n"
"  --prefix P     key prefix (default \"fkvload-\")\n"
"  --verify       no puts, no load: get every key once and compare it in full\n"
"                 (all must be served)\n"
"  --json         one JSON object instead of the human summary\n"
"  --quiet        no progress on stderr\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "keys", 1, NULL, 'k' }, { "size", 1, NULL, 's' },
		{ "procs", 1, NULL, 'p' }, { "gets", 1, NULL, 'g' },
		{ "zipf", 1, NULL, 'z' }, { "seed", 1, NULL, 'S' },
		{ "mode", 1, NULL, 'm' }, { "prefix", 1, NULL, 'P' },
		{ "json", 0, NULL, 'j' }, { "quiet", 0, NULL, 'q' },
		{ "verify", 0, NULL, 'c' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.keys = 64, .size = (1 << 20) - 128, .procs = 2, .gets = 256,
		.zipf = 0.99, .seed = 1, .prefix = "fkvload-",
	};
	struct fluxonkv_info info;
	double put_secs = 0, get_secs, *cdf;
	struct shared *sh;
	uint64_t t0, hits;
	unsigned int i;
	struct fkv *kv;
	unsigned int alive;
	int c, ret, status, failed = 0;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'k': o.keys = strtoul(optarg, NULL, 0); break;
		case 's': o.size = strtoull(optarg, NULL, 0); break;
		case 'p': o.procs = strtoul(optarg, NULL, 0); break;
		case 'g': o.gets = strtoul(optarg, NULL, 0); break;
		case 'z': o.zipf = strtod(optarg, NULL); break;
		case 'S': o.seed = strtoull(optarg, NULL, 0); break;
		case 'P': o.prefix = optarg; break;
		case 'j': o.json = true; break;
		case 'q': o.quiet = true; break;
		case 'c': o.verify = true; break;
		case 'm':
			if (!strcmp(optarg, "bytes"))
				o.bytes_mode = true;
			else if (strcmp(optarg, "holder"))
				goto bad;
			break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (optind != argc || !o.keys || o.size < 16 || !o.procs || o.procs > 256)
		goto bad;

	progress_tty = isatty(STDERR_FILENO) &&
		       (!getenv("TERM") || strcmp(getenv("TERM"), "dumb"));
	ret = fkv_open(NULL, &kv);
	if (ret) {
		fprintf(stderr, "fkvload: cannot open %s: %s\n",
			FKV_DEFAULT_DEVICE, fkv_strerror(ret));
		return 1;
	}
	if (o.verify) {
		ret = do_verify(kv, &o);
		fkv_close(kv);
		if (ret < 0)
			fprintf(stderr, "fkvload: out of memory\n");
		return ret ? 1 : 0;
	}
	cdf = zipf_cdf(o.keys, o.zipf);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!cdf || sh == MAP_FAILED) {
		fprintf(stderr, "fkvload: out of memory\n");
		return 1;
	}
	memset(sh, 0, sizeof(*sh));

	ret = do_puts(kv, &o, &put_secs);
	if (ret)
		return 1;

	t0 = now_ns();
	for (i = 0; i < o.procs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fkvload: fork");
			return 1;
		}
		if (pid == 0)
			get_worker(&o, cdf, sh, i);
	}
	alive = o.procs;
	if (!o.quiet) {
		uint64_t total = (uint64_t)o.gets * o.procs, done, shown = 0;
		pid_t pid;

		while (alive) {
			while (alive && (pid = waitpid(-1, &status, WNOHANG)) > 0) {
				alive--;
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					failed = 1;
			}
			done = __atomic_load_n(&sh->progress, __ATOMIC_RELAXED);
			if (progress_tty)
				fprintf(stderr, "\rget %" PRIu64 "/%" PRIu64, done, total);
			else if (done >= shown + total / 4 && done) {
				fprintf(stderr, "get %" PRIu64 "/%" PRIu64 "\n", done, total);
				shown = done;
			}
			usleep(200000);
		}
		fprintf(stderr, "%sget %" PRIu64 "/%" PRIu64 "\n",
			progress_tty ? "\r" : "", sh->progress, total);
	}
	while (alive && wait(&status) > 0) {
		alive--;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	}
	get_secs = (now_ns() - t0) / 1e9;
	fkv_info(kv, &info);

	hits = sh->hits_mem + sh->hits_ssd;
	if (o.json) {
		printf("{\"keys\":%lu,\"size\":%zu,\"procs\":%u,\"mode\":\"%s\","
		       "\"puts\":%lu,\"put_per_s\":%.1f,\"gets\":%" PRIu64 ","
		       "\"hits\":%" PRIu64 ",\"hits_memory\":%" PRIu64 ","
		       "\"hits_ssd\":%" PRIu64 ",\"misses\":%" PRIu64 ","
		       "\"errors\":%" PRIu64 ",\"content_errors\":%" PRIu64 ","
		       "\"hit_rate\":%.4f,\"hit_gib_per_s\":%.4f,"
		       "\"lat_mean_us\":%.1f,\"lat_p50_us\":%.1f,\"lat_p95_us\":%.1f,"
		       "\"lat_p99_us\":%.1f,\"segment_capacity_bytes\":%llu,"
		       "\"segment_used_bytes\":%llu}\n",
		       o.keys, o.size, o.procs, o.bytes_mode ? "bytes" : "holder",
		       o.keys, o.keys / put_secs, sh->gets, hits, sh->hits_mem,
		       sh->hits_ssd, sh->misses, sh->errors, sh->bad,
		       sh->gets ? (double)hits / sh->gets : 0,
		       sh->bytes / get_secs / (1 << 30),
		       sh->gets ? sh->lat_sum_ns / 1e3 / sh->gets : 0,
		       lat_pct(sh, 50) / 1e3, lat_pct(sh, 95) / 1e3,
		       lat_pct(sh, 99) / 1e3,
		       (unsigned long long)info.segment_size,
		       (unsigned long long)info.segment_used);
	} else {
		printf("fkvload summary (%s mode)\n", o.bytes_mode ? "bytes" : "holder");
		printf("  puts        %lu x %zu bytes, %.1f puts/s\n", o.keys,
		       o.size, o.keys / put_secs);
		printf("  gets        %" PRIu64 " from %u processes, %.0f gets/s\n",
		       sh->gets, o.procs, sh->gets / get_secs);
		printf("  hits        %" PRIu64 " (%.1f%%): DRAM %" PRIu64 ", SSD %" PRIu64 "\n",
		       hits, sh->gets ? 100.0 * hits / sh->gets : 0,
		       sh->hits_mem, sh->hits_ssd);
		printf("  misses      %" PRIu64 "\n", sh->misses);
		printf("  errors      %" PRIu64 ", content mismatches %" PRIu64 "\n",
		       sh->errors, sh->bad);
		printf("  throughput  %.3f GiB/s of hit payload\n",
		       sh->bytes / get_secs / (1 << 30));
		printf("  latency     mean %.1f us, p50 %.1f us, p95 %.1f us, p99 %.1f us\n",
		       sh->gets ? sh->lat_sum_ns / 1e3 / sh->gets : 0,
		       lat_pct(sh, 50) / 1e3, lat_pct(sh, 95) / 1e3,
		       lat_pct(sh, 99) / 1e3);
		printf("  DRAM tier   %.1f / %.1f MiB used\n",
		       info.segment_used / 1048576.0,
		       info.segment_size / 1048576.0);
	}
	fkv_close(kv);
	return (failed || sh->bad || sh->errors) ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
