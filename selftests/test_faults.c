// SPDX-License-Identifier: GPL-2.0
/*
 * test_faults - the fault matrix under traffic.  Worker processes put and
 * get their own keys (one writer per key) with self-describing values
 * (key, writer, sequence number, length and a hash of the rest) while a
 * fault hits the node: fluxond killed with SIGKILL again and again,
 * clients killed with holders and puts in flight, the SSD under a flaky
 * and then a stalling device, the module reloaded.  Every value read back
 * must be whole and either the latest completed put of its key, a put
 * that failed (it may or may not have published), or a clean miss -- and
 * never older than a version already seen.  Holders are checked twice,
 * right after the get and again before the release: held bytes must not
 * change whatever happens meanwhile.
 *
 * FKV_FAULT_ROUNDS sets how many times each fault strikes (default 5;
 * make stress: 20).
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "fkv_env.h"
#include "fkv_kv.h"
#include "fkv_ssd.h"

#define F_WORKERS	2
#define F_KEYS		10		/* per worker */
#define F_LEN_MAX	(2 * FKV_MIB)
#define F_ROUNDS	5

/* What one key's reader may see: seqs lo..hi, or a miss. */
struct f_key {
	uint32_t lo;	/* oldest version still possible (0: none seen) */
	uint32_t hi;	/* newest put attempted */
};

struct f_stats {
	uint64_t puts, put_fails, hits, misses, errors, checks;
};

struct f_shared {
	volatile int stop;
	struct f_stats st[F_WORKERS];
	uint64_t violations;
	uint64_t odd_errors;	/* an errno no fault explains */
	char first[256];	/* the first violation */
	int odd_errno;
};

static struct f_shared *F;

static unsigned int f_rounds(void)
{
	const char *e = getenv("FKV_FAULT_ROUNDS");
	unsigned long n = e ? strtoul(e, NULL, 10) : 0;

	return n && n <= 1000 ? (unsigned int)n : F_ROUNDS;
}

/* The value header; the rest is a pattern of it, hashed into @sum. */
struct f_val {
	uint32_t key, writer, seq, len;
	uint64_t sum;
};

static size_t f_len(uint32_t key, uint32_t seq)
{
	return 16 * KIB + (fkv_hash(&key, sizeof(key), seq) % F_LEN_MAX);
}

static void f_fill(uint8_t *buf, size_t len, uint32_t key, uint32_t writer,
		   uint32_t seq)
{
	struct f_val v = { key, writer, seq, (uint32_t)len, 0 };

	fkv_pattern_fill(buf + sizeof(v), len - sizeof(v), &v, 16, seq);
	v.sum = fkv_hash(buf + sizeof(v), len - sizeof(v), seq);
	memcpy(buf, &v, sizeof(v));
}

/* The seq of DATA (LEN bytes) if it is a whole value of KEY, else 0. */
static uint32_t f_check(const uint8_t *data, size_t len, uint32_t key,
			uint32_t writer)
{
	struct f_val v;

	if (len < sizeof(v))
		return 0;
	memcpy(&v, data, sizeof(v));
	if (v.key != key || v.len != len || v.writer != writer || !v.seq)
		return 0;
	if (v.sum != fkv_hash(data + sizeof(v), len - sizeof(v), v.seq))
		return 0;
	return v.seq;
}

static void f_violation(const char *fmt, ...)
{
	va_list ap;

	if (__sync_fetch_and_add(&F->violations, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(F->first, sizeof(F->first), fmt, ap);
	va_end(ap);
}

/* Errors a fault explains: a miss, no daemon, a stall, an IO error, room. */
static bool f_expected(int ret)
{
	switch (-ret) {
	case ENOENT: case ENOTCONN: case ETIMEDOUT: case EIO: case ENOSPC:
	case EAGAIN: case EBUSY: case EINTR: case EDQUOT:
		return true;
	default:
		return false;
	}
}

static void f_error(struct f_stats *st, int ret)
{
	st->errors++;
	if (!f_expected(ret) && !__sync_fetch_and_add(&F->odd_errors, 1))
		F->odd_errno = -ret;
	if (ret == -ENOTCONN)
		usleep(2000);	/* no daemon: do not spin */
}

static void f_key_name(char *buf, size_t n, uint32_t key)
{
	snprintf(buf, n, "fault-%u", key);
}

/* A get of key @k: check it against what this writer knows. */
static void f_get(struct fkv *kv, struct f_key *ks, uint32_t k, uint32_t w,
		  struct f_stats *st)
{
	struct fkv_holder h;
	uint32_t seq, again;
	char key[32];
	int ret;

	f_key_name(key, sizeof(key), k);
	ret = fkv_get(kv, key, strlen(key), &h);
	if (ret == -ENOENT) {
		st->misses++;
		return;
	}
	if (ret) {
		f_error(st, ret);
		return;
	}
	st->hits++;
	seq = f_check(h.data, h.len, k, w);
	if (!seq)
		f_violation("key %u: torn or foreign value (%zu bytes from %u)",
			    k, h.len, h.source);
	else if (seq < ks->lo || seq > ks->hi)
		f_violation("key %u: version %u outside %u..%u (source %u)",
			    k, seq, ks->lo, ks->hi, h.source);
	else
		ks->lo = seq;	/* nothing older from now on */
	/* held bytes stay put, whatever happened meanwhile */
	if (st->hits % 4 == 0)
		usleep(2000);
	again = f_check(h.data, h.len, k, w);
	if (again != seq)
		f_violation("key %u: held bytes changed (%u -> %u)", k, seq,
			    again);
	st->checks++;
	ret = fkv_holder_release(kv, &h);
	if (ret)
		f_violation("key %u: release: %s", k, fkv_strerror(ret));
}

static void f_worker(uint32_t w)
{
	struct f_key ks[F_KEYS] = { 0 };
	struct f_stats *st = &F->st[w];
	uint64_t rnd = 0x5eed + w * 104729;
	uint8_t *buf = malloc(16 * KIB + F_LEN_MAX);
	struct fkv *kv = NULL;
	char key[32];
	int ret;

	if (!buf)
		_exit(2);
	while (!F->stop) {
		uint32_t i = (uint32_t)(fkv_xorshift(&rnd) % F_KEYS);
		uint32_t k = w * F_KEYS + i;

		if (!kv && fkv_open(FKV_DEV_PATH, &kv)) {
			kv = NULL;
			usleep(10000);
			continue;
		}
		if (fkv_xorshift(&rnd) % 3 == 0) {
			uint32_t seq = ++ks[i].hi;
			size_t len = f_len(k, seq);

			f_fill(buf, len, k, w, seq);
			f_key_name(key, sizeof(key), k);
			ret = fkv_put(kv, key, strlen(key), buf, len, NULL);
			st->puts++;
			if (!ret) {
				ks[i].lo = seq;	/* the latest completed put */
			} else {
				st->put_fails++;
				f_error(st, ret);	/* may publish later */
			}
		} else {
			f_get(kv, &ks[i], k, w, st);
		}
	}
	if (kv)
		fkv_close(kv);
	free(buf);
	_exit(0);
}

struct f_load {
	pid_t pids[F_WORKERS];
	struct f_stats before[F_WORKERS];
};

static void f_start(struct f_load *l)
{
	unsigned int w;

	F->stop = 0;
	fflush(stdout);
	for (w = 0; w < F_WORKERS; w++) {
		l->before[w] = F->st[w];
		l->pids[w] = fork();
		FKV_ASSERT(l->pids[w] >= 0, "fork: %s", strerror(errno));
		if (!l->pids[w])
			f_worker(w);
	}
}

/* Stop the workers; print and check what they saw. */
static void f_stop(struct f_load *l, const char *phase)
{
	struct f_stats sum = { 0 };
	unsigned int w;
	int status;

	F->stop = 1;
	for (w = 0; w < F_WORKERS; w++) {
		FKV_ASSERT_EQ(waitpid(l->pids[w], &status, 0), l->pids[w]);
		FKV_ASSERT(WIFEXITED(status) && !WEXITSTATUS(status),
			   "worker %u ended with %#x", w, status);
		sum.puts += F->st[w].puts - l->before[w].puts;
		sum.put_fails += F->st[w].put_fails - l->before[w].put_fails;
		sum.hits += F->st[w].hits - l->before[w].hits;
		sum.misses += F->st[w].misses - l->before[w].misses;
		sum.errors += F->st[w].errors - l->before[w].errors;
		sum.checks += F->st[w].checks - l->before[w].checks;
	}
	printf("# %s: %" PRIu64 " puts (%" PRIu64 " failed), %" PRIu64
	       " hits checked twice, %" PRIu64 " misses, %" PRIu64
	       " errors\n", phase, sum.puts, sum.put_fails, sum.checks,
	       sum.misses, sum.errors);
	FKV_ASSERT(!F->violations, "%" PRIu64 " violations, first: %s",
		   F->violations, F->first);
	FKV_ASSERT(!F->odd_errors, "%" PRIu64 " unexplained errors, first: %s",
		   F->odd_errors, strerror(F->odd_errno));
	FKV_ASSERT_GT(sum.puts, 0);
	FKV_ASSERT_GT(sum.hits, 0);
}

static void f_init(void)
{
	F = mmap(NULL, sizeof(*F), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(F != MAP_FAILED);
	memset(F, 0, sizeof(*F));
}

/* Nothing pinned and no request outstanding once the load is gone. */
static void f_quiet(void)
{
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	if (fkv_debugfs_pending(FLUXONKV_CMD_PUT_START) >= 0) {
		int64_t end = fkv_now_ms() + 5000;

		while (fkv_debugfs_pending(FLUXONKV_CMD_PUT_START) +
		       fkv_debugfs_pending(FLUXONKV_CMD_PUT_DONE) > 0 &&
		       fkv_now_ms() < end)
			fkv_msleep(50);
		FKV_ASSERT_EQ(fkv_debugfs_pending(FLUXONKV_CMD_PUT_START), 0);
		FKV_ASSERT_EQ(fkv_debugfs_pending(FLUXONKV_CMD_PUT_DONE), 0);
	}
}

/* Every key of the load gone; the segment back to @base. */
static void f_cleanup(struct fkv *kv, uint64_t base)
{
	char key[32];
	uint32_t k;

	for (k = 0; k < F_WORKERS * F_KEYS; k++) {
		f_key_name(key, sizeof(key), k);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
}

/* An ext4 file of CAP bytes as the SSD tier. */
static void f_file_tier(struct fkv *kv, const char *name, uint64_t cap)
{
	char dir[256], path[320];
	uint32_t shard;
	int fd, ret;

	ext4_dir(name, dir, sizeof(dir));
	make_file(dir, "shard", cap, path, sizeof(path));
	fd = open_shard(path);
	ret = fkv_ssd_attach(kv, fd, 0, cap, 0, &shard);
	close(fd);
	FKV_ASSERT(ret == 0, "attach %s: %s", path, fkv_strerror(ret));
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_capacity_bytes", cap);
}

/*
 * fluxond killed (SIGKILL) and started again, many times, under load: it
 * registers keeping the module's state (warm restart), so values survive;
 * gets during the gap fail cleanly.
 */
FKV_TEST_TIMEOUT(fluxond_killed_again_and_again_under_load, 300)
{
	unsigned int r, n = f_rounds() * 4;
	struct f_load l;
	uint64_t base;
	struct fkv *kv;

	f_init();
	base = setup("segment_mb=16 request_timeout_ms=2000");
	kv = kv_open();
	f_file_tier(kv, "faults-kill", 32 * FKV_MIB);
	f_start(&l);
	for (r = 0; r < n; r++) {
		fkv_msleep(150 + (r % 4) * 100);
		FKV_ASSERT_EQ(fkv_daemon_kill(), 0);
		fkv_msleep(50 + (r % 3) * 100);
		FKV_START_DAEMON();
	}
	fkv_msleep(500);
	f_stop(&l, "fluxond killed");
	printf("# fluxond killed %u times\n", n);
	f_quiet();
	f_cleanup(kv, base);
}

/* A client that pins, starts a big put, and is killed at some point. */
static void f_victim(unsigned int v)
{
	uint8_t *big = malloc(6 * FKV_MIB);
	struct fkv_holder h[8];
	struct fkv *kv;
	char key[32];
	uint32_t k;

	if (!big || fkv_open(FKV_DEV_PATH, &kv))
		_exit(1);
	for (k = 0; k < 8; k++) {
		f_key_name(key, sizeof(key), (v + k) % (F_WORKERS * F_KEYS));
		fkv_get(kv, key, strlen(key), &h[k]);	/* held till killed */
	}
	memset(big, (int)v, 6 * FKV_MIB);
	snprintf(key, sizeof(key), "victim-%u", v);
	for (;;)
		fkv_put(kv, key, strlen(key), big, 6 * FKV_MIB, NULL);
}

/*
 * Clients killed (SIGKILL) with holders and puts in flight: what they
 * pinned comes back, their puts leave nothing half-done, and the others'
 * values stay whole.
 */
FKV_TEST_TIMEOUT(clients_killed_with_holders_and_puts_in_flight, 300)
{
	unsigned int v, n = f_rounds() * 2;
	struct f_load l;
	uint64_t base;
	struct fkv *kv;
	char key[32];
	pid_t pid;

	f_init();
	base = setup("segment_mb=32 request_timeout_ms=2000");
	kv = kv_open();
	f_start(&l);
	for (v = 0; v < n; v++) {
		fflush(stdout);
		pid = fork();
		FKV_ASSERT(pid >= 0);
		if (!pid)
			f_victim(v);
		fkv_msleep(20 + (v % 5) * 60);	/* pinning, or mid-put */
		kill(pid, SIGKILL);
		FKV_ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	}
	f_stop(&l, "clients killed");
	printf("# %u clients killed\n", n);
	f_quiet();
	/* a killed put either published whole or left nothing */
	for (v = 0; v < n; v++) {
		struct fkv_holder h;
		const uint8_t *p;
		size_t i;

		snprintf(key, sizeof(key), "victim-%u", v);
		if (fkv_get(kv, key, strlen(key), &h))
			continue;
		p = h.data;
		FKV_ASSERT_EQ(h.len, 6 * FKV_MIB);
		for (i = 0; i < h.len; i += 4096)
			FKV_ASSERT(p[i] == (uint8_t)v, "victim %u: byte %zu",
				   v, i);
		release(kv, &h);
		delete_key(kv, key);
	}
	f_cleanup(kv, base);
}

#define F_DM_NAME	"fkv-faults"
#define F_DM_PATH	"/dev/mapper/" F_DM_NAME
#define F_DM_CAP	(192 * FKV_MIB)

/* The dm device as the SSD tier's only shard; 0 or -errno. */
static int f_dm_attach(struct fkv *kv)
{
	uint32_t shard;
	int fd, ret;

	fd = open_shard(F_DM_PATH);
	ret = fkv_ssd_attach(kv, fd, 0, F_DM_CAP, 0, &shard);
	close(fd);
	return ret;
}

/*
 * The SSD under a flaky device (dm-flakey: up, then failing every IO) and
 * then a stalling one (dm-delay), under load in a segment smaller than the
 * working set: refills and persists fail or wait, values stay whole.
 */
FKV_TEST_TIMEOUT(ssd_flaky_then_stalling_under_load, 300)
{
	char devno[32], linear[256], flakey[256], delay[256];
	unsigned int r, n = f_rounds(), reattached = 0;
	uint64_t sectors, base, errs, offline, ssd_hits;
	struct f_load l;
	struct fkv *kv;

	FKV_REQUIRE_DAEMON();
	f_init();
	sectors = dm_disk("dm-flakey", devno, sizeof(devno));
	if (fkv_modprobe("dm-delay"))
		FKV_SKIP("dm-delay is not available");
	snprintf(linear, sizeof(linear), "0 %" PRIu64 " linear %s 0\n",
		 sectors, devno);
	/* 1 s up, 1 s failing everything */
	snprintf(flakey, sizeof(flakey), "0 %" PRIu64 " flakey %s 0 1 1\n",
		 sectors, devno);
	snprintf(delay, sizeof(delay), "0 %" PRIu64 " delay %s 0 150\n",
		 sectors, devno);
	base = setup("segment_mb=12 request_timeout_ms=3000");
	dm_create(F_DM_NAME, linear);
	kv = kv_open();
	FKV_ASSERT_EQ(f_dm_attach(kv), 0);
	f_start(&l);
	fkv_msleep(1500);		/* values on the SSD first */
	errs = fkv_sysfs("ssd_io_errors");
	ssd_hits = fkv_sysfs("hits_ssd");
	for (r = 0; r < n; r++) {
		offline = fkv_sysfs("ssd_shards_offline");
		dm_swap(F_DM_NAME, flakey);
		fkv_msleep(2500);
		dm_swap(F_DM_NAME, delay);
		fkv_msleep(1500);
		dm_swap(F_DM_NAME, linear);
		/* a shard the errors took offline: its range again */
		if (fkv_sysfs("ssd_shards_offline") > offline) {
			int64_t end = fkv_now_ms() + 5000;
			int ret;

			while ((ret = f_dm_attach(kv)) == -EBUSY &&
			       fkv_now_ms() < end)
				fkv_msleep(100);
			FKV_ASSERT(ret == 0, "attach again: %s",
				   fkv_strerror(ret));
			reattached++;
		}
		fkv_msleep(500);
	}
	f_stop(&l, "SSD flaky, then stalling");
	printf("# %" PRIu64 " SSD IO errors, %" PRIu64 " shards offline, %u"
	       " attached again, %" PRIu64 " gets served from the SSD\n",
	       fkv_sysfs("ssd_io_errors") - errs,
	       fkv_sysfs("ssd_shards_offline"), reattached,
	       fkv_sysfs("hits_ssd") - ssd_hits);
	FKV_ASSERT_GT(fkv_sysfs("ssd_io_errors"), errs);
	FKV_ASSERT_GT(fkv_sysfs("hits_ssd"), ssd_hits);
	f_quiet();
	f_cleanup(kv, base);
	dm_remove(F_DM_NAME);
}

/*
 * The module reloaded with clients: it cannot go while they hold it open;
 * once they are gone it reloads clean and the next load sees misses, never
 * an old value.
 */
FKV_TEST_TIMEOUT(module_reload_with_clients, 300)
{
	unsigned int r, n = f_rounds();
	struct f_load l;
	uint64_t base;
	struct fkv *kv;

	f_init();
	for (r = 0; r < n; r++) {
		base = setup("segment_mb=16 request_timeout_ms=2000");
		f_start(&l);
		fkv_msleep(800);
		/* open files hold the module */
		{
			char out[512];

			FKV_ASSERT(fkv_env_rmmod(out, sizeof(out)) != 0 &&
				   fkv_module_loaded(),
				   "fluxonkv unloaded under its clients");
		}
		fkv_msleep(200);
		f_stop(&l, "before the reload");
		FKV_STOP_DAEMON();
		FKV_ASSERT_EQ(fkv_env_unload(), 0);
		(void)base;
	}
	/* a fresh module: every key of the previous loads misses */
	base = setup("segment_mb=16");
	kv = kv_open();
	{
		struct fkv_holder h;
		char key[32];
		uint32_t k;

		for (k = 0; k < F_WORKERS * F_KEYS; k++) {
			f_key_name(key, sizeof(key), k);
			FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h),
				      -ENOENT);
		}
	}
	f_start(&l);
	fkv_msleep(800);
	f_stop(&l, "after the reloads");
	printf("# module reloaded %u times\n", n);
	f_quiet();
	f_cleanup(kv, base);
}
