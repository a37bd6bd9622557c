// SPDX-License-Identifier: GPL-2.0
/*
 * test_harden - the scenarios of the hardening issue, each one driven the
 * way a user (or a hostile local process) would drive it:
 *
 *   trust     a read-only file description gets but may not put or delete;
 *             registering as the daemon needs CAP_SYS_ADMIN; registrations
 *             racing the module's unload leave nothing behind
 *   memory    a segment larger than the memory available is refused with a
 *             message, and nobody is OOM-killed for it
 *   pins      one user's holders and puts in flight pin at most
 *             pin_max_pct of the segment (EDQUOT), a put stalled on a
 *             userfaultfd page included; killing it frees everything
 *   room      a fragmented segment moves values down into its holes
 *             (compaction, gets racing it read whole values; what a move
 *             does not write of a hole stays allocatable) and, when
 *             pinned values are in the way, gives up a window's values,
 *             chosen by address, not the whole cache
 *   puts      a putter that stops waiting for PUT_DONE's answer (timeout,
 *             kill) leaves the put's fate to that answer: the new version
 *             is published, or the old one stays readable, never neither
 *   SSD       the SSD gauge stays within capacity while rings wrap; a
 *             shard failing every IO goes offline and can be attached
 *             again, and gives back its entries' memory and its shard
 *             number; a
 *             value damaged on the device is a miss, never wrong bytes
 *             (an xxh64 per MiB); the entries' kernel memory stays within
 *             ssd_meta_max_kb
 */
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "fkv_env.h"
#include "fkv_kv.h"
#include "fkv_ssd.h"
#include "fkv_master.h"

/* ---- trust ---- */

FKV_TEST(read_only_session_gets_but_may_not_put_or_delete)
{
	uint64_t base = setup("segment_mb=16");
	struct fkv *kv = kv_open();
	struct fluxonkv_get g;
	int ro;

	put_pattern(kv, "ro-key", 5000, 7);
	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0, "open O_RDONLY: %s", strerror(errno));
	FKV_ASSERT_EQ(fkv_dev_get(ro, "ro-key", 6, &g), 0);
	FKV_ASSERT_EQ(g.len, 5000);
	FKV_ASSERT_EQ(fkv_dev_release(ro, g.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_put(ro, "ro-key", 6, "x", 1, NULL), -EBADF);
	FKV_ASSERT_EQ(fkv_dev_put(ro, "ro-new", 6, "x", 1, NULL), -EBADF);
	FKV_ASSERT_EQ(fkv_dev_delete(ro, "ro-key", 6), -EBADF);
	/* nothing changed: the old version is still there, nothing new */
	FKV_ASSERT_EQ(fkv_dev_get(ro, "ro-key", 6, &g), 0);
	FKV_ASSERT_EQ(g.len, 5000);
	FKV_ASSERT_EQ(fkv_dev_release(ro, g.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_get(ro, "ro-new", 6, &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("puts"), 1);
	close(ro);
	delete_key(kv, "ro-key");
	fkv_close(kv);
	teardown(base);
}

/* DAEMON_REGISTER on a fresh genl socket; 0 or the kernel's -errno. */
static int try_register(void)
{
	struct fkv_nl nl;
	struct nl_msg *msg;
	int ret;

	ret = fkv_nl_open(&nl);
	if (ret)
		return ret;
	msg = fkv_nl_msg(&nl, FLUXONKV_CMD_DAEMON_REGISTER);
	ret = msg ? fkv_nl_transact(&nl, msg) : -ENOMEM;
	fkv_nl_close(&nl);
	return ret;
}

static void register_without_cap_sys_admin(void *arg)
{
	(void)arg;
	FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
	/* CAP_NET_ADMIN is still there: the family lets it through */
	FKV_ASSERT(fkv_cap_effective() & (1ULL << CAP_NET_ADMIN));
	FKV_ASSERT_EQ(try_register(), -EPERM);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), 0);
}

FKV_TEST(registering_as_the_daemon_needs_cap_sys_admin)
{
	FKV_LOAD("segment_mb=4");
	fkv_in_child(register_without_cap_sys_admin, NULL,
		     "DAEMON_REGISTER without CAP_SYS_ADMIN");
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), 0);
	/* with it, the same request is taken (and the socket's close ends it) */
	FKV_ASSERT_EQ(try_register(), 0);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

/*
 * A child registers and closes as fast as it can while the module is
 * unloaded and loaded again: a registration that slipped in during the
 * unload would leave a daemon (and its socket's teardown work) to a module
 * that is gone.  Every answer is a success, EBUSY (the previous socket's
 * teardown), ESHUTDOWN (unloading), or the family being absent.
 */
#define UNLOAD_ROUNDS	12

FKV_TEST(registrations_racing_unload_leave_nothing_behind)
{
	int pipefd[2], round, status;
	char out[2048];
	pid_t pid;

	FKV_LOAD("segment_mb=4");
	FKV_ASSERT_EQ(pipe(pipefd), 0);
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (pid == 0) {
		unsigned long ok = 0, other = 0;

		close(pipefd[1]);
		fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
		for (;;) {
			char c;
			int ret = try_register();

			if (ret == 0)
				ok++;
			else if (ret != -EBUSY && ret != -ESHUTDOWN &&
				 ret != -ENOENT && ret != -ECONNREFUSED &&
				 ret != -EINVAL && ret != -EOPNOTSUPP)
				other++;
			if (read(pipefd[0], &c, 1) == 0)
				break;
		}
		printf("# registrations: %lu taken, %lu odd answers\n", ok,
		       other);
		_exit(other ? 1 : 0);
	}
	close(pipefd[0]);
	for (round = 0; round < UNLOAD_ROUNDS; round++) {
		fkv_msleep(20 + 13 * round);
		FKV_ASSERT_EQ(fkv_env_rmmod(out, sizeof(out)), 0);
		FKV_ASSERT_EQ(fkv_env_insmod("segment_mb=4", out, sizeof(out)),
			      0);
	}
	close(pipefd[1]);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "registering child: status %#x", status);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

/* ---- memory ---- */

static uint64_t meminfo_kib(const char *field)
{
	char line[256];
	uint64_t v = 0;
	size_t n = strlen(field);
	FILE *f = fopen("/proc/meminfo", "r");

	FKV_ASSERT(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':') {
			v = strtoull(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	FKV_ASSERT(v, "no %s in /proc/meminfo", field);
	return v;
}

/* The kernel log's last 200 lines contain S. */
static bool klog_has(const char *s)
{
	char out[1 << 16];
	char *const argv[] = { "sh", "-c", "dmesg | tail -n 200", NULL };

	if (fkv_env_run(argv, out, sizeof(out)) != 0)
		return false;
	return strstr(out, s) != NULL;
}

#define BYSTANDER_MB	300

FKV_TEST(segment_larger_than_available_memory_is_refused_killing_nobody)
{
	uint64_t avail_mb;
	char param[64], out[2048];
	int pipefd[2], status;
	pid_t bystander;
	char c;

	FKV_ASSERT_EQ(fkv_env_reset(), 0);
	/* A process with 300 MiB of its own, touched. */
	FKV_ASSERT_EQ(pipe(pipefd), 0);
	fflush(stdout);
	bystander = fork();
	FKV_ASSERT(bystander >= 0);
	if (bystander == 0) {
		size_t len = (size_t)BYSTANDER_MB << 20;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			_exit(2);
		memset(p, 0x5a, len);
		close(pipefd[0]);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	FKV_ASSERT_EQ(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);

	avail_mb = meminfo_kib("MemAvailable") >> 10;
	snprintf(param, sizeof(param), "segment_mb=%" PRIu64,
		 avail_mb + 64 > 16384 ? 16384 : avail_mb + 64);
	FKV_EXPECT(fkv_env_insmod(param, out, sizeof(out)) != 0,
		   "insmod %s with %" PRIu64 " MiB available succeeded", param,
		   avail_mb);
	fkv_diag_text("insmod: ", out);
	FKV_EXPECT(!fkv_module_loaded(), "%s left the module loaded", param);
	FKV_EXPECT(klog_has("does not fit"),
		   "no 'does not fit' message in the kernel log");
	/* the bystander lives */
	FKV_ASSERT_EQ(waitpid(bystander, &status, WNOHANG), 0);
	FKV_ASSERT_EQ(kill(bystander, 0), 0);
	/* and a segment that fits still loads next to it */
	FKV_LOAD("segment_mb=64");
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
	FKV_ASSERT_EQ(waitpid(bystander, &status, WNOHANG), 0);
	kill(bystander, SIGKILL);
	FKV_ASSERT_EQ(waitpid(bystander, &status, 0), bystander);
	FKV_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		   "bystander ended with status %#x before we killed it",
		   status);
}

/* ---- SSD ---- */

/*
 * Load with PARAMS, start fluxond and attach a fresh ext4 file of CAP
 * bytes (under directory NAME) as the only shard; its path in path, the
 * open library handle in *kv.  Returns segment_used_bytes.
 */
static uint64_t file_tier(const char *name, uint64_t cap, const char *params,
			  char *path, size_t len, struct fkv **kv)
{
	char dir[256];
	uint64_t base;
	uint32_t shard;
	int fd, ret;

	ext4_dir(name, dir, sizeof(dir));
	make_file(dir, "shard", cap, path, len);
	base = setup(params);
	*kv = kv_open();
	fd = open_shard(path);
	ret = fkv_ssd_attach(*kv, fd, 0, cap, 0, &shard);
	close(fd);
	FKV_ASSERT(ret == 0, "attach %s: %s", path, fkv_strerror(ret));
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_capacity_bytes", cap);
	return base;
}

struct gauge_watch {
	volatile bool stop;
	uint64_t max, reads;
};

static void *watch_gauge(void *arg)
{
	struct gauge_watch *w = arg;

	while (!w->stop) {
		uint64_t v;

		if (!fkv_sysfs_u64("kv_ssd_used_bytes", &v)) {
			if (v > w->max)
				w->max = v;
			w->reads++;
		}
	}
	return NULL;
}

/*
 * A 1 MiB ring and 600 KiB values: every persist wraps the head to offset
 * 0 and evicts the one entry there, emptying the ring for a moment (when
 * the tail was seen past the head).  The gauge, read all the while, never
 * exceeds the capacity.
 */
#define WRAP_PUTS	30

FKV_TEST(ssd_used_gauge_stays_within_capacity_while_rings_wrap)
{
	const uint64_t cap = FKV_MIB;
	struct gauge_watch w = { 0 };
	char path[320], key[32];
	uint64_t base, persisted = 0;
	struct fkv *kv;
	pthread_t th;
	int i;

	base = file_tier("harden-gauge", cap, "segment_mb=16", path,
			 sizeof(path), &kv);
	FKV_ASSERT_EQ(pthread_create(&th, NULL, watch_gauge, &w), 0);
	for (i = 0; i < WRAP_PUTS; i++) {
		snprintf(key, sizeof(key), "wrap-%d", i % 5);
		put_pattern(kv, key, 600 * KIB, i);
		wait_persists(++persisted);
	}
	w.stop = true;
	pthread_join(th, NULL);
	printf("# %" PRIu64 " gauge reads, largest %" PRIu64 " of %" PRIu64
	       "\n", w.reads, w.max, cap);
	FKV_ASSERT(w.reads > 0);
	FKV_ASSERT(w.max <= cap, "kv_ssd_used_bytes read %" PRIu64
		   " with a %" PRIu64 "-byte ring", w.max, cap);
	for (i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "wrap-%d", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
}

/* ---- SSD: checksums ---- */

/*
 * Three values of 2 MiB + 100 bytes (three checksummed pieces, the last
 * one 100 bytes) persist, then leave DRAM for fillers.  Underneath, one
 * byte is flipped in the middle piece of "crc-mid" and in the short last
 * piece of "crc-tail"; "crc-good" is left alone.  The two damaged values
 * read back as misses (their SSD copies dropped, the master told), never
 * as wrong bytes; the good one refills byte for byte.
 */
#define CRC_LEN		(2 * FKV_MIB + 100)
#define CRC_FILLERS	7

/*
 * The three values @keys of @len bytes (salts 40.. + i, ids in @ids) put
 * and persisted, then pushed out of the 8 MiB segment by CRC_FILLERS
 * persisted fillers "<@fill>-<i>".
 */
static void crc_put_and_push_out(struct fkv *kv, const char *const *keys,
				 size_t len, uint64_t salt, const char *fill,
				 uint64_t *ids)
{
	uint64_t persisted = 0;
	char key[32];
	int i;

	for (i = 0; i < 3; i++) {
		ids[i] = put_pattern(kv, keys[i], len, salt + i);
		wait_persists(++persisted);
	}
	for (i = 0; i < CRC_FILLERS; i++) {
		snprintf(key, sizeof(key), "%s-%d", fill, i);
		put_pattern(kv, key, 1536 * KIB, i);
		wait_persists(++persisted);
	}
	/* evicted by the master, or dropped clean by the module (CLOCK:
	 * the oldest, the three first) */
	FKV_ASSERT_GT(fkv_sysfs("evictions") + fkv_sysfs("clean_drops"), 2);
}

/* Delete what crc_put_and_push_out() put; close @kv, unload. */
static void crc_end(struct fkv *kv, const char *const *keys, const char *fill,
		    uint64_t base)
{
	char key[32];
	int i;

	for (i = 0; i < 3; i++)
		delete_any(kv, keys[i]);
	for (i = 0; i < CRC_FILLERS; i++) {
		snprintf(key, sizeof(key), "%s-%d", fill, i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(ssd_checksum_mismatch_is_an_io_error_never_wrong_bytes)
{
	static const char *const keys[] = { "crc-mid", "crc-tail", "crc-good" };
	char path[320];
	uint64_t base, ids[3];
	long long off;
	struct fkv_holder h;
	struct fkv *kv;
	int i, ret;

	base = file_tier("harden-crc", 64 * FKV_MIB, "segment_mb=8", path,
			 sizeof(path), &kv);
	crc_put_and_push_out(kv, keys, CRC_LEN, 40, "crc-fill", ids);

	off = ring_offset("crc-mid");
	FKV_ASSERT(off >= 0, "crc-mid has no committed entry");
	corrupt_byte(path, (uint64_t)off + FKV_MIB + 4321);
	off = ring_offset("crc-tail");
	FKV_ASSERT(off >= 0, "crc-tail has no committed entry");
	corrupt_byte(path, (uint64_t)off + 2 * FKV_MIB + 99);

	for (i = 0; i < 2; i++) {
		ret = fkv_get(kv, keys[i], strlen(keys[i]), &h);
		FKV_ASSERT(ret == -ENOENT, "get %s over a damaged copy: want "
			   "a miss, got %s (source %u)", keys[i],
			   ret ? fkv_strerror(ret) : "a hit", h.source);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_csum_errors"), 2);
	FKV_ASSERT_EQ(ring_offset("crc-mid"), -1);
	FKV_ASSERT_EQ(ring_offset("crc-tail"), -1);
	/* a second get does not even try the device */
	FKV_ASSERT_EQ(fkv_get(kv, "crc-mid", 7, &h), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_csum_errors"), 2);

	ret = fkv_get(kv, "crc-good", 8, &h);
	FKV_ASSERT(ret == 0, "get crc-good: %s", fkv_strerror(ret));
	FKV_ASSERT_EQ(h.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(h.len, CRC_LEN);
	FKV_ASSERT_EQ(h.put_id, ids[2]);
	FKV_ASSERT_PATTERN(h.data, CRC_LEN, "crc-good", 8, 42);
	release(kv, &h);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_csum_errors"), 2);

	crc_end(kv, keys, "crc-fill", base);
}

/*
 * The same through io_uring, where a GET's refill is checked off the
 * submitter, a value of several MiBs in pieces at once (one per CPU):
 * values of 3 MiB + 100 bytes (four checksummed MiBs), a byte flipped in
 * the third MiB of "rcrc-mid" and in the short last one of "rcrc-tail".
 * Their ring GETs complete with EIO (an asynchronous refill is not
 * re-selected), the copies dropped; "rcrc-good" refills byte for byte.
 */
#define RCRC_LEN	(3 * FKV_MIB + 100)

FKV_TEST(ring_ssd_checksum_mismatch_is_an_io_error_never_wrong_bytes)
{
	static const char *const keys[] = { "rcrc-mid", "rcrc-tail",
					    "rcrc-good" };
	struct fkv_op op = { .opcode = FLUXONKV_OP_GET };
	uint64_t base, ids[3];
	struct fkv_completion c;
	struct fkv_ring *r;
	char path[320];
	long long off;
	struct fkv *kv;
	int i;

	base = file_tier("harden-rcrc", 64 * FKV_MIB, "segment_mb=8", path,
			 sizeof(path), &kv);
	crc_put_and_push_out(kv, keys, RCRC_LEN, 50, "rcrc-fill", ids);
	for (i = 0; i < 3; i++)
		FKV_ASSERT(lookup_check(kv, keys[i], RCRC_LEN, ids[i]) ==
			   FLUXONKV_SOURCE_SSD, "%s still in DRAM", keys[i]);

	off = ring_offset("rcrc-mid");
	FKV_ASSERT(off >= 0, "rcrc-mid has no committed entry");
	corrupt_byte(path, (uint64_t)off + 2 * FKV_MIB + 777);
	off = ring_offset("rcrc-tail");
	FKV_ASSERT(off >= 0, "rcrc-tail has no committed entry");
	corrupt_byte(path, (uint64_t)off + 3 * FKV_MIB + 99);

	FKV_ASSERT_EQ(fkv_ring_open(kv, 4, &r), 0);
	for (i = 0; i < 3; i++) {
		op.key = keys[i];
		op.key_len = strlen(keys[i]);
		FKV_ASSERT_EQ(fkv_ring_prep(r, &op, i), 0);
		FKV_ASSERT_EQ(fkv_ring_reap(r, &c, 1, 1), 1);
		if (i < 2) {
			FKV_ASSERT(c.op.result == -EIO, "ring get %s over a "
				   "damaged copy: want EIO, got %s", keys[i],
				   c.op.result ? fkv_strerror(c.op.result) :
				   "a hit");
			continue;
		}
		FKV_ASSERT(c.op.result == 0, "ring get %s: %s", keys[i],
			   fkv_strerror(c.op.result));
		FKV_ASSERT_EQ(c.op.holder.source, FLUXONKV_SOURCE_SSD);
		FKV_ASSERT_EQ(c.op.holder.len, RCRC_LEN);
		FKV_ASSERT_EQ(c.op.holder.put_id, ids[2]);
		FKV_ASSERT_PATTERN(c.op.holder.data, RCRC_LEN, keys[i],
				   strlen(keys[i]), 52);
		release(kv, &c.op.holder);
	}
	fkv_ring_close(r);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_csum_errors"), 2);
	FKV_ASSERT_EQ(ring_offset("rcrc-mid"), -1);
	FKV_ASSERT_EQ(ring_offset("rcrc-tail"), -1);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	crc_end(kv, keys, "rcrc-fill", base);
}

/* ---- SSD: the entries' memory ---- */

/*
 * With ssd_meta_max_kb=16, 150 persisted 1 KiB values under 200-byte keys
 * (each entry ~300 bytes of kernel memory; the ring itself has room for
 * all) keep the entries' memory within 16 KiB: the oldest are evicted
 * early, the newest stay readable from the SSD.
 */
#define META_PUTS	150

static void meta_key(char *buf, size_t n, int i)
{
	snprintf(buf, n, "meta-%03d-%0190d", i, 0);
}

FKV_TEST(ssd_entries_memory_stays_within_ssd_meta_max_kb)
{
	const uint64_t max = 16 * KIB;
	char path[320], key[256];
	uint64_t base, persisted = 0, meta;
	struct fkv *kv;
	int i, kept = 0;

	base = file_tier("harden-meta", 16 * FKV_MIB,
			 "segment_mb=16 ssd_meta_max_kb=16", path, sizeof(path),
			 &kv);
	for (i = 0; i < META_PUTS; i++) {
		meta_key(key, sizeof(key), i);
		put_pattern(kv, key, 1024, i);
		wait_persists(++persisted);
		meta = fkv_sysfs("kv_ssd_meta_bytes");
		FKV_ASSERT(meta <= max, "after %d persists the entries take "
			   "%" PRIu64 " bytes, more than %" PRIu64, i + 1, meta,
			   max);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), 0);
	FKV_ASSERT_GT(fkv_sysfs("ssd_meta_evictions"), META_PUTS / 2);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_meta_evictions"),
		      fkv_sysfs("ssd_evictions"));
	for (i = 0; i < META_PUTS; i++) {
		meta_key(key, sizeof(key), i);
		kept += ring_offset(key) >= 0;
	}
	fkv_diag("%d of %d entries kept in %" PRIu64 " bytes", kept,
		 META_PUTS, fkv_sysfs("kv_ssd_meta_bytes"));
	FKV_ASSERT_GT(kept, 10);
	FKV_ASSERT(kept < META_PUTS / 2);
	/* the newest is there, the oldest went */
	meta_key(key, sizeof(key), META_PUTS - 1);
	FKV_ASSERT(ring_offset(key) >= 0);
	meta_key(key, sizeof(key), 0);
	FKV_ASSERT_EQ(ring_offset(key), -1);
	for (i = 0; i < META_PUTS; i++) {
		meta_key(key, sizeof(key), i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
}

/* ---- puts the putter gave up on ---- */

#define PD_PARAMS	"segment_mb=8 request_timeout_ms=1000"

enum pd_end { PD_PUBLISHED, PD_SUPERSEDED, PD_DAEMON_GONE };
enum pd_leave { PD_TIMEOUT, PD_KILLED };

/*
 * Version 1 of "pd" is published (5000 bytes, salt 0).  A client puts
 * version 2 (7000 bytes, salt 2): PUT_START is answered, PUT_DONE is not
 * until the client has left (LEAVE).  Meanwhile version 1 is what a get
 * reads.  Then END: the late answer publishes 2 (and the master drops 1,
 * as on any overwrite), says 2 was superseded, or the daemon goes.
 */
static void put_done_abandoned(enum pd_leave leave, enum pd_end end)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .has_req_id = true, .has_status = true,
			    .has_flags = true };
	struct client_result r;
	struct master m;
	struct client c;
	uint64_t h1, h2, done_req;
	int status;

	FKV_LOAD(PD_PARAMS);
	master_start(&m);
	h1 = master_put(&m, "pd", 5000, 1);

	c = client_start(CLIENT_PUT, "pd", 7000, 2);
	a.cmd = FLUXONKV_CMD_PUT_START;
	a.req_id = expect_upcall(&m.nl, FLUXONKV_CMD_PUT_START, tb);
	a.put_id = 2;
	FKV_ASSERT_EQ(send_answer(&m.nl, &a), 0);
	done_req = expect_upcall(&m.nl, FLUXONKV_CMD_PUT_DONE, tb);
	h2 = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	FKV_ASSERT(h2 && h2 != h1);
	if (leave == PD_TIMEOUT) {
		r = client_result(&c);
		FKV_ASSERT_EQ(r.err, ETIMEDOUT);
		client_end(&c);
	} else {
		kill(c.pid, SIGKILL);
		FKV_ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
		close(c.rfd);
		close(c.wfd);
	}
	FKV_ASSERT_SYSFS_SETTLES("puts_abandoned", 1);
	/* undecided: the old version is what gets read */
	r = client_get_once("pd", 0);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 1);
	FKV_ASSERT(r.len == 5000 && r.intact);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 2);

	switch (end) {
	case PD_PUBLISHED:
		a.cmd = FLUXONKV_CMD_PUT_DONE;
		a.req_id = done_req;
		a.put_id = 0;
		a.flags = FLUXONKV_PUT_F_PUBLISHED;
		FKV_ASSERT_EQ(send_answer(&m.nl, &a), 0);
		FKV_ASSERT_EQ(drop_replica(&m.nl, h1), 0);
		r = client_get_once("pd", 2);
		FKV_ASSERT_EQ(r.err, 0);
		FKV_ASSERT_EQ(r.put_id, 2);
		FKV_ASSERT(r.len == 7000 && r.intact);
		FKV_ASSERT_SYSFS_SETTLES("replicas", 1);
		FKV_ASSERT_EQ(drop_replica(&m.nl, h2), 0);
		break;
	case PD_SUPERSEDED:
		a.cmd = FLUXONKV_CMD_PUT_DONE;
		a.req_id = done_req;
		a.put_id = 0;
		a.flags = 0;
		FKV_ASSERT_EQ(send_answer(&m.nl, &a), 0);
		/* version 2 goes, 1 stays */
		FKV_ASSERT_SYSFS_SETTLES("replicas", 1);
		r = client_get_once("pd", 0);
		FKV_ASSERT_EQ(r.err, 0);
		FKV_ASSERT_EQ(r.put_id, 1);
		FKV_ASSERT(r.len == 5000 && r.intact);
		FKV_ASSERT_EQ(drop_replica(&m.nl, h1), 0);
		break;
	case PD_DAEMON_GONE:
		break;
	}
	master_stop(&m);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

FKV_TEST(put_done_answered_after_its_timeout_still_publishes)
{
	put_done_abandoned(PD_TIMEOUT, PD_PUBLISHED);
}

FKV_TEST(put_done_of_a_killed_putter_superseded_keeps_the_old_version)
{
	put_done_abandoned(PD_KILLED, PD_SUPERSEDED);
}

FKV_TEST(put_done_abandoned_then_the_daemon_goes_leaves_nothing)
{
	put_done_abandoned(PD_TIMEOUT, PD_DAEMON_GONE);
}

/*
 * The daemon stalls (SIGSTOP) with 40 values of 1 MiB resident in a
 * 64 MiB segment; four 12 MiB puts time out meanwhile and two more
 * putters are killed while they wait.  When the daemon resumes, it finds
 * those PUT_STARTs past their deadline or cancelled: nothing is reserved
 * for them, nothing evicted, every resident value is still a memory hit.
 * With local puts (fluxond's default) a put asks the daemon only for room:
 * the segment holds 60 values then, and the big puts' NEED_ROOMs are what
 * goes unanswered (ENOSPC after the room wait) or is cancelled.
 */
/* Wait up to 5 s for N outstanding PUT_STARTs (debugfs `pending`). */
static void wait_pending_put_starts(int n)
{
	int64_t end = fkv_now_ms() + 5000;
	int got;

	while ((got = fkv_debugfs_pending(FLUXONKV_CMD_PUT_START)) != n) {
		FKV_ASSERT(got >= 0, "no debugfs pending");
		FKV_ASSERT(fkv_now_ms() < end, "%d PUT_STARTs outstanding, "
			   "want %d", got, n);
		fkv_msleep(10);
	}
}

#define STALL_BIG	(12 * FKV_MIB)

static void daemon_stall(bool local)
{
	const int resident = local ? 60 : 40, nbig = local ? 2 : 4;
	uint64_t base, ev0, abandoned0;
	struct fkv *kv;
	uint8_t *big = calloc(1, STALL_BIG);
	pid_t daemon, kids[2];
	struct fkv_holder h;
	char key[32];
	int i, ret, status;

	fkv_env_daemon_arg = local ? NULL : "--put-via-master";
	base = setup("segment_mb=64 request_timeout_ms=1000");
	fkv_env_daemon_arg = NULL;
	kv = kv_open();
	daemon = (pid_t)fkv_sysfs("daemon_pid");
	FKV_ASSERT(big && daemon > 0);
	for (i = 0; i < resident; i++) {
		snprintf(key, sizeof(key), "res-%02d", i);
		put_pattern(kv, key, FKV_MIB, i);
	}
	ev0 = fkv_sysfs("evictions");
	abandoned0 = fkv_sysfs("puts_abandoned");

	FKV_ASSERT_EQ(kill(daemon, SIGSTOP), 0);
	for (i = 0; i < nbig; i++) {
		snprintf(key, sizeof(key), "big-%d", i);
		ret = fkv_put(kv, key, strlen(key), big, STALL_BIG, NULL);
		FKV_ASSERT(ret == (local ? -ENOSPC : -ETIMEDOUT),
			   "put %s with the daemon stopped: %s", key,
			   fkv_strerror(ret));
	}
	if (!local)
		wait_pending_put_starts(0);	/* the timed out ones are swept */
	for (i = 0; i < 2; i++) {
		fflush(stdout);
		kids[i] = fork();
		FKV_ASSERT(kids[i] >= 0);
		if (kids[i] == 0) {
			struct fkv *ckv = NULL;

			snprintf(key, sizeof(key), "killed-%d", i);
			if (fkv_open(FKV_DEV_PATH, &ckv))
				_exit(2);
			fkv_put(ckv, key, strlen(key), big, STALL_BIG, NULL);
			_exit(3);
		}
	}
	if (local) {
		fkv_msleep(300);	/* both wait for room now */
	} else {
		FKV_ASSERT_EQ(fkv_sysfs("puts_abandoned"), abandoned0 + 4);
		wait_pending_put_starts(2);	/* both wait for PUT_START */
	}
	for (i = 0; i < 2; i++) {
		kill(kids[i], SIGKILL);
		FKV_ASSERT_EQ(waitpid(kids[i], &status, 0), kids[i]);
		FKV_ASSERT(WIFSIGNALED(status), "putter %d: status %#x", i,
			   status);
	}
	if (!local)
		FKV_ASSERT_SYSFS_SETTLES("puts_abandoned", abandoned0 + 6);
	FKV_ASSERT_EQ(kill(daemon, SIGCONT), 0);

	/* a put after the backlog: the daemon has seen everything before */
	put_pattern(kv, "after-stall", 4096, 99);
	delete_key(kv, "after-stall");
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), ev0);
	for (i = 0; i < resident; i++) {
		snprintf(key, sizeof(key), "res-%02d", i);
		ret = fkv_get(kv, key, strlen(key), &h);
		FKV_ASSERT(ret == 0, "%s after the stall: %s", key,
			   fkv_strerror(ret));
		FKV_ASSERT_EQ(h.source, FLUXONKV_SOURCE_MEMORY);
		FKV_ASSERT_PATTERN(h.data, FKV_MIB, key, strlen(key), i);
		release(kv, &h);
	}
	for (i = 0; i < nbig; i++) {
		snprintf(key, sizeof(key), "big-%d", i);
		FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h), -ENOENT);
	}
	for (i = 0; i < resident; i++) {
		snprintf(key, sizeof(key), "res-%02d", i);
		delete_key(kv, key);
	}
	free(big);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST_TIMEOUT(a_daemon_stall_with_abandoned_puts_costs_the_cache_nothing, 120)
{
	daemon_stall(false);
}

FKV_TEST_TIMEOUT(a_daemon_stall_with_local_puts_waiting_for_room_evicts_nothing,
		 120)
{
	daemon_stall(true);
}

/* ---- SSD: a failing shard goes offline ---- */

#define OFF_NAME	"fkv-selftest-harden"
#define OFF_PATH	"/dev/mapper/" OFF_NAME
#define OFF_CAP		(32 * FKV_MIB)
#define OFF_FILL	6	/* 3 MiB values: more than the segment */

/* Get KEY, check it is the pattern of (KEY, LEN, SALT); its source. */
static unsigned int get_check_source(struct fkv *kv, const char *key,
				     size_t len, uint64_t salt)
{
	struct fkv_holder h;
	unsigned int source;
	int ret = fkv_get(kv, key, strlen(key), &h);

	FKV_ASSERT(ret == 0, "get %s: %s", key, fkv_strerror(ret));
	FKV_ASSERT_EQ(h.len, len);
	FKV_ASSERT_PATTERN(h.data, len, key, strlen(key), salt);
	source = h.source;
	release(kv, &h);
	return source;
}

/* Attach [OFFSET, +CAP) of OFF_PATH; the shard number or -errno. */
static long long off_attach_at(struct fkv *kv, uint64_t offset, uint64_t cap)
{
	int fd = open_shard(OFF_PATH), ret;
	uint32_t shard = UINT32_MAX;

	ret = fkv_ssd_attach(kv, fd, offset, cap, 0, &shard);
	close(fd);
	return ret ? ret : (long long)shard;
}

static void off_attach(struct fkv *kv)
{
	long long ret = off_attach_at(kv, 0, OFF_CAP);

	FKV_ASSERT(ret >= 0, "attach %s: %s", OFF_PATH,
		   fkv_strerror((int)ret));
}

/* The dm device over ssd2, its tables, the module and the first shard. */
struct off_env {
	char linear[256], error[128];
	uint64_t base, sectors, persisted;
	struct fkv *kv;
};

/*
 * OFF_NAME linear over ssd2 (at least MIN bytes), the module with a
 * 16 MiB segment, OFF_CAP of it attached as shard 0, and BEFORE (8 KiB,
 * salt 1) put and persisted there.
 */
static void off_begin(struct off_env *o, uint64_t min, const char *before)
{
	char devno[32];

	o->sectors = dm_disk(NULL, devno, sizeof(devno));
	FKV_ASSERT_GE(o->sectors * 512, min);
	snprintf(o->linear, sizeof(o->linear), "0 %" PRIu64 " linear %s 0\n",
		 o->sectors, devno);
	snprintf(o->error, sizeof(o->error), "0 %" PRIu64 " error\n",
		 o->sectors);
	o->base = setup("segment_mb=16");
	dm_create(OFF_NAME, o->linear);
	o->kv = kv_open();
	FKV_ASSERT_EQ(off_attach_at(o->kv, 0, OFF_CAP), 0);
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_capacity_bytes", OFF_CAP);
	o->persisted = 0;
	put_pattern(o->kv, before, 8192, 1);
	wait_persists(++o->persisted);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 1);
}

/*
 * A raw shard under device-mapper fails every IO from some point on: after
 * 32 failed writes in a row the shard is taken out -- its capacity is
 * withdrawn (the master stops asking for persists: no more IO errors), the
 * status says so -- and once the device is healthy its range can be
 * attached again and serves refills.
 */
FKV_TEST_TIMEOUT(a_shard_failing_every_io_goes_offline_and_can_come_back, 240)
{
	uint64_t persisted, errs, id, pub0;
	struct off_env o;
	struct fkv_holder h;
	char out[8192], key[32];
	struct fkv *kv;
	int i, ret;

	FKV_REQUIRE_DAEMON();
	FKV_REQUIRE_FLUXONCTL();
	off_begin(&o, OFF_CAP, "off-before");
	kv = o.kv;

	dm_swap(OFF_NAME, o.error);
	i = put_until_offline(kv, "off", &o.persisted);
	fkv_diag("offline after %d failed persists, %" PRIu64 " IO errors", i,
		 fkv_sysfs("ssd_io_errors"));
	FKV_ASSERT_GE(fkv_sysfs("ssd_io_errors"), SSD_OFFLINE_ERRORS);
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_capacity_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), 0);
	/* the value that was on it is a memory hit still, its SSD copy gone */
	FKV_ASSERT_EQ(get_check_source(kv, "off-before", 8192, 1),
		      FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(fkv_ctl(out, sizeof(out), "status", NULL), 0);
	FKV_ASSERT(strstr(out, "1 shard(s) offline"), "status says:\n%s", out);
	/* no SSD tier now: puts do not touch the failing device */
	fkv_msleep(300);	/* the master hears SSD_STATE */
	errs = fkv_sysfs("ssd_io_errors");
	put_pattern(kv, "off-after", 4096, 7);
	fkv_msleep(300);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), errs);

	/* healthy again: the same range attaches as a new shard */
	dm_swap(OFF_NAME, o.linear);
	off_attach(kv);
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_capacity_bytes", OFF_CAP);
	fkv_msleep(300);	/* the master hears SSD_STATE */
	pub0 = fkv_sysfs("ssd_commits_published");
	persisted = persists_done();
	id = put_pattern(kv, "off-healthy", 3 * FKV_MIB, 9);
	wait_persists(persisted + 1);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), pub0 + 1);
	/*
	 * Push it out of the 16 MiB segment (the fillers, persisted too,
	 * fit the 32 MiB ring with it), then read it back from the new shard.
	 */
	for (i = 0; i < OFF_FILL; i++) {
		snprintf(key, sizeof(key), "off-fill-%d", i);
		put_pattern(kv, key, 3 * FKV_MIB, i);
	}
	ret = fkv_get(kv, "off-healthy", 11, &h);
	FKV_ASSERT(ret == 0, "get off-healthy: %s", fkv_strerror(ret));
	FKV_ASSERT_EQ(h.put_id, id);
	FKV_ASSERT_PATTERN(h.data, 3 * FKV_MIB, "off-healthy", 11, 9);
	FKV_ASSERT(h.source == FLUXONKV_SOURCE_SSD, "off-healthy from source "
		   "%u, not the new shard", h.source);
	release(kv, &h);

	delete_put_until_offline(kv, "off");
	for (i = 0; i < OFF_FILL; i++) {
		snprintf(key, sizeof(key), "off-fill-%d", i);
		delete_any(kv, key);
	}
	delete_any(kv, "off-before");
	delete_any(kv, "off-after");
	delete_any(kv, "off-healthy");
	fkv_close(kv);
	teardown(o.base);
	dm_remove(OFF_NAME);
}

#define RECLAIM_SLOTS	64	/* FLUXONKV_SSD_MAX_SHARDS */

/*
 * An offline shard gives back what it held: its entries (the failed
 * writes' dead ones, the forgotten committed one) and their kernel memory
 * (kv_ssd_meta_bytes back to 0), its place in debugfs, and its shard
 * number -- the healthy range attached again is shard 0 once more, and
 * all 64 numbers can be attached after it (the 65th is ENOSPC).  Before,
 * the offline shard kept its entries and its slot until the unload.
 */
FKV_TEST_TIMEOUT(an_offline_shard_gives_back_its_entries_and_its_slot, 240)
{
	uint64_t persisted;
	struct off_env o;
	long long got;
	struct fkv *kv;
	int i;

	FKV_REQUIRE_DAEMON();
	off_begin(&o, OFF_CAP + (RECLAIM_SLOTS + 1) * FKV_MIB, "rc-before");
	kv = o.kv;
	FKV_ASSERT_GT(fkv_sysfs("kv_ssd_meta_bytes"), 0);

	dm_swap(OFF_NAME, o.error);
	i = put_until_offline(kv, "rc", &o.persisted);
	fkv_diag("offline after %d failed persists; entries' memory %" PRIu64
		 " bytes", i, fkv_sysfs("kv_ssd_meta_bytes"));
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_capacity_bytes", 0);
	/* the forgotten entry and the failed writes' ones: all freed */
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_meta_bytes", 0);
	FKV_ASSERT_SYSFS_SETTLES("ssd_shards_reclaimed", 1);
	if (rings_shards() >= 0)
		FKV_ASSERT_EQ(rings_shards(), 0);
	/* its value is a memory hit still, never the dead SSD copy */
	FKV_ASSERT_EQ(get_check_source(kv, "rc-before", 8192, 1),
		      FLUXONKV_SOURCE_MEMORY);

	/* healthy again: the range attaches under the number it had */
	dm_swap(OFF_NAME, o.linear);
	FKV_ASSERT_EQ(off_attach_at(kv, 0, OFF_CAP), 0);
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_capacity_bytes", OFF_CAP);
	fkv_msleep(300);	/* the master hears SSD_STATE */
	persisted = persists_done();
	put_pattern(kv, "rc-healthy", 8192, 9);
	wait_persists(persisted + 1);
	FKV_ASSERT_GT(fkv_sysfs("kv_ssd_meta_bytes"), 0);
	/* and every other number: 63 more 1 MiB shards, then none */
	for (i = 1; i < RECLAIM_SLOTS; i++) {
		got = off_attach_at(kv, OFF_CAP + (uint64_t)i * FKV_MIB, FKV_MIB);
		FKV_ASSERT(got == i, "shard %d of %d: %lld", i + 1,
			   RECLAIM_SLOTS, got);
	}
	FKV_ASSERT_EQ(off_attach_at(kv, OFF_CAP + (uint64_t)RECLAIM_SLOTS *
				    FKV_MIB, FKV_MIB), -ENOSPC);
	if (rings_shards() >= 0)
		FKV_ASSERT_EQ(rings_shards(), RECLAIM_SLOTS);

	delete_put_until_offline(kv, "rc");
	delete_any(kv, "rc-before");
	delete_any(kv, "rc-healthy");
	fkv_close(kv);
	teardown(o.base);
	dm_remove(OFF_NAME);
}

/* ---- a DUMP across a shard number's reuse ---- */

#define DC_OLD		60	/* SSD entries of the first shard 0 */
#define DC_NEW		5	/* ... and of the new one under number 0 */
#define DC_SEQ		0x64756d70u

/* A DUMP read one datagram at a time; the SSD records' keys kept. */
struct dc_dump {
	int fd, family;
	uint32_t pid;
	bool done;
	char (*ssd)[FLUXONKV_KEY_MAX + 1];
	int nssd, nrec;
};

static void dc_dump_start(struct dc_dump *d)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 10 };
	socklen_t salen = sizeof(sa);
	struct {
		struct nlmsghdr n;
		struct genlmsghdr g;
	} req;
	struct fkv_nl nl;

	memset(d, 0, sizeof(*d));
	FKV_ASSERT_EQ(fkv_nl_open(&nl), 0);
	d->family = nl.family;
	fkv_nl_close(&nl);
	d->ssd = calloc(DC_OLD + DC_NEW + 64, sizeof(*d->ssd));
	FKV_ASSERT(d->ssd);
	d->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	FKV_ASSERT(d->fd >= 0, "netlink socket: %s", strerror(errno));
	FKV_ASSERT_EQ(bind(d->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	FKV_ASSERT_EQ(getsockname(d->fd, (struct sockaddr *)&sa, &salen), 0);
	d->pid = sa.nl_pid;
	FKV_ASSERT_EQ(setsockopt(d->fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				 sizeof(tv)), 0);
	memset(&req, 0, sizeof(req));
	req.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	req.n.nlmsg_type = (uint16_t)d->family;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.n.nlmsg_seq = DC_SEQ;
	req.g.cmd = FLUXONKV_CMD_DUMP;
	req.g.version = FLUXONKV_GENL_VERSION;
	FKV_ASSERT_EQ(send(d->fd, &req, req.n.nlmsg_len, 0), req.n.nlmsg_len);
}

/*
 * Read one datagram of the dump with one recv() of 4 KiB: the kernel
 * sizes the dump's next datagram by the largest read so far (so each
 * holds about a dozen records) and builds it in that recv() (one
 * datagram ahead; a MSG_PEEK would build another).  Returns the SSD
 * records in it.
 */
static int dc_dump_read(struct dc_dump *d)
{
	static uint8_t buf[4096];
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct nlmsghdr *h;
	int n, ssd = 0;

	n = (int)recv(d->fd, buf, sizeof(buf), MSG_TRUNC);
	FKV_ASSERT(n > 0, "dump: recv: %s", strerror(errno));
	FKV_ASSERT_LE(n, sizeof(buf));
	for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
		FKV_ASSERT_EQ(h->nlmsg_seq, DC_SEQ);
		if (h->nlmsg_type == NLMSG_DONE) {
			FKV_ASSERT_EQ(*(int *)NLMSG_DATA(h), 0);
			d->done = true;
			break;
		}
		FKV_ASSERT(h->nlmsg_type != NLMSG_ERROR, "dump error %d",
			   ((struct nlmsgerr *)NLMSG_DATA(h))->error);
		FKV_ASSERT_EQ(genlmsg_parse(h, 0, tb, FLUXONKV_A_MAX, NULL), 0);
		FKV_ASSERT(tb[FLUXONKV_A_KEY] && tb[FLUXONKV_A_SOURCE]);
		d->nrec++;
		if (fkv_nla_u32(tb[FLUXONKV_A_SOURCE]) != FLUXONKV_SOURCE_SSD)
			continue;
		FKV_ASSERT_LT(d->nssd, DC_OLD + DC_NEW + 64);
		memcpy(d->ssd[d->nssd], nla_data(tb[FLUXONKV_A_KEY]),
		       (size_t)nla_len(tb[FLUXONKV_A_KEY]));
		d->nssd++;
		ssd++;
	}
	return ssd;
}

static bool dc_dump_has(const struct dc_dump *d, const char *k)
{
	int i;

	for (i = 0; i < d->nssd; i++)
		if (!strcmp(d->ssd[i], k))
			return true;
	return false;
}

/* Long keys: a dozen records fill one of the dump's datagrams. */
static void dc_key(char *buf, size_t n, const char *what, int i)
{
	snprintf(buf, n, "dc-%s-%03d-%0180d", what, i, 0);
}

/*
 * A DUMP paused inside shard 0's SSD entries while shard 0 goes offline,
 * is reclaimed and its number is taken by a new attach (issue 29): the
 * dump goes on with the new shard 0 from its first entry -- its ring
 * positions start again at 0, below where the cursor stopped in the old
 * one.  Before: the cursor kept the old ring's position and skipped the
 * new shard's first entries.
 */
FKV_TEST_TIMEOUT(a_dump_paused_while_its_shard_number_is_reused_lists_the_new_shard,
		 300)
{
	char key[FLUXONKV_KEY_MAX + 1];
	struct dc_dump d, d2;
	uint64_t persisted, pub;
	struct off_env o;
	int i, seen, chunks = 0, missing = 0;
	struct fkv *kv;

	FKV_REQUIRE_DAEMON();
	off_begin(&o, OFF_CAP, "dc-before");
	kv = o.kv;
	for (i = 0; i < DC_OLD; i++) {
		dc_key(key, sizeof(key), "old", i);
		put_pattern(kv, key, 4096, i);
		wait_persists(++o.persisted);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), DC_OLD + 1);

	/* the dump: DRAM replicas first, then read into shard 0's entries */
	dc_dump_start(&d);
	do {
		seen = dc_dump_read(&d);
		chunks++;
	} while (!seen && !d.done);
	fkv_diag("paused after %d datagrams, %d records, %d of them SSD",
		 chunks, d.nrec, d.nssd);
	FKV_ASSERT(!d.done && d.nssd < DC_OLD / 2, "the dump did not pause "
		   "inside shard 0 (%d SSD records read)", d.nssd);

	/* shard 0 fails, goes offline, is reclaimed; its number is reused */
	dm_swap(OFF_NAME, o.error);
	put_until_offline(kv, "dcx", &o.persisted);
	FKV_ASSERT_SYSFS_SETTLES("ssd_shards_reclaimed", 1);
	dm_swap(OFF_NAME, o.linear);
	FKV_ASSERT_EQ(off_attach_at(kv, 0, OFF_CAP), 0);
	fkv_msleep(300);	/* the master hears SSD_STATE */
	persisted = persists_done();
	pub = fkv_sysfs("ssd_commits_published");
	for (i = 0; i < DC_NEW; i++) {
		dc_key(key, sizeof(key), "new", i);
		put_pattern(kv, key, 4096, 100 + i);
		wait_persists(++persisted);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), pub + DC_NEW);
	/* a fresh dump lists them (the test's own check) */
	dc_dump_start(&d2);
	while (!d2.done)
		dc_dump_read(&d2);
	for (i = 0; i < DC_NEW; i++) {
		dc_key(key, sizeof(key), "new", i);
		FKV_ASSERT(dc_dump_has(&d2, key), "a fresh dump lacks "
			   "dc-new-%03d (%d SSD records)", i, d2.nssd);
	}
	close(d2.fd);
	free(d2.ssd);

	/* the rest of the dump: every entry of the new shard 0 */
	seen = d.nssd;
	while (!d.done)
		dc_dump_read(&d);
	fkv_diag("%d SSD records after the pause", d.nssd - seen);
	for (i = 0; i < DC_NEW; i++) {
		dc_key(key, sizeof(key), "new", i);
		if (!dc_dump_has(&d, key)) {
			fkv_diag("not in the dump: dc-new-%03d", i);
			missing++;
		}
	}
	close(d.fd);
	free(d.ssd);
	FKV_ASSERT(!missing, "the dump skipped %d of the new shard 0's %d "
		   "entries", missing, DC_NEW);

	delete_put_until_offline(kv, "dcx");
	for (i = 0; i < DC_OLD; i++) {
		dc_key(key, sizeof(key), "old", i);
		delete_any(kv, key);
	}
	for (i = 0; i < DC_NEW; i++) {
		dc_key(key, sizeof(key), "new", i);
		delete_any(kv, key);
	}
	delete_any(kv, "dc-before");
	fkv_close(kv);
	teardown(o.base);
	dm_remove(OFF_NAME);
}

/* ---- pins: a budget per user ---- */

#define PIN_PARAMS	"segment_mb=16 pin_max_pct=25"	/* 4 MiB per user */
#define PIN_LEN		(FKV_MIB - 100)			/* 1 MiB spans */

/* Pinned bytes of UID in debugfs `users`; -1 if it has no session. */
static long long user_pinned(unsigned int uid)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/users", "r");
	long long pinned, found = -1;
	unsigned int u, sessions;
	char line[256];

	FKV_ASSERT(f, "debugfs users: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%u\t%u\t%lld", &u, &sessions, &pinned) == 3 &&
		    u == uid)
			found = pinned;
	fclose(f);
	return found;
}

static int pin_get(int fd, int i, uint64_t *holder)
{
	struct fluxonkv_get g;
	char key[32];
	int ret;

	snprintf(key, sizeof(key), "pin-%d", i);
	ret = fkv_dev_get(fd, key, strlen(key), &g);
	if (!ret)
		*holder = g.holder_id;
	return ret;
}

/* In a child as uid 65534: its own 4 MiB, then EDQUOT. */
static void pin_as_nobody(void *arg)
{
	uint64_t h;
	int fd, i;

	(void)arg;
	FKV_ASSERT_EQ(setgid(65534), 0);
	FKV_ASSERT_EQ(setuid(65534), 0);
	fd = fkv_dev_open_ro();
	FKV_ASSERT(fd >= 0, "open as nobody: %s", strerror(errno));
	for (i = 0; i < 4; i++)
		FKV_ASSERT_EQ(pin_get(fd, i, &h), 0);
	/* (root's 4 MiB are all pinned meanwhile: this budget is its own) */
	FKV_ASSERT_EQ(pin_get(fd, 4, &h), -EDQUOT);
	close(fd);
}

FKV_TEST(one_users_holders_pin_at_most_pin_max_pct_of_the_segment)
{
	uint64_t base = setup(PIN_PARAMS), ha[3], hb[2], hx;
	struct fkv *kv = kv_open();	/* privileged: not charged */
	struct fkv_holder h;
	char key[32];
	int a, b, i;

	for (i = 0; i < 6; i++) {
		snprintf(key, sizeof(key), "pin-%d", i);
		put_pattern(kv, key, PIN_LEN, i);
	}
	/* two client sessions of root share root's 4 MiB */
	a = fkv_dev_open_ro();
	b = fkv_dev_open_ro();
	FKV_ASSERT(a >= 0 && b >= 0);
	FKV_ASSERT_EQ(pin_get(a, 0, &ha[0]), 0);
	FKV_ASSERT_EQ(pin_get(a, 1, &ha[1]), 0);
	FKV_ASSERT_EQ(pin_get(b, 2, &hb[0]), 0);
	FKV_ASSERT_EQ(pin_get(b, 3, &hb[1]), 0);
	FKV_ASSERT_EQ(user_pinned(0), 4 * FKV_MIB);
	FKV_ASSERT_EQ(pin_get(a, 4, &ha[2]), -EDQUOT);
	FKV_ASSERT_EQ(pin_get(b, 0, &hx), -EDQUOT);	/* the same value again */
	/* the node daemon's kind of session is not charged */
	FKV_ASSERT_EQ(fkv_get(kv, "pin-5", 5, &h), 0);
	release(kv, &h);
	/* one released: room for one more */
	FKV_ASSERT_EQ(fkv_dev_release(b, hb[1]), 0);
	FKV_ASSERT_EQ(user_pinned(0), 3 * FKV_MIB);
	FKV_ASSERT_EQ(pin_get(a, 4, &ha[2]), 0);
	/* another user has a budget of its own */
	FKV_ASSERT_EQ(chmod(FKV_DEV_PATH, 0666), 0);
	fkv_in_child(pin_as_nobody, NULL, "pins of uid 65534");
	FKV_ASSERT_EQ(chmod(FKV_DEV_PATH, 0660), 0);
	FKV_ASSERT_EQ(user_pinned(65534), -1);	/* its sessions closed */
	/* the budget follows the parameter at run time */
	FKV_ASSERT_EQ(fkv_write_file("/sys/module/fluxonkv/parameters/pin_max_pct",
				     "50\n"), 0);
	FKV_ASSERT_EQ(pin_get(b, 5, &hx), 0);
	FKV_ASSERT_EQ(user_pinned(0), 5 * FKV_MIB);
	close(a);
	close(b);
	FKV_ASSERT_EQ(user_pinned(0), -1);
	for (i = 0; i < 6; i++) {
		snprintf(key, sizeof(key), "pin-%d", i);
		delete_key(kv, key);
	}
	fkv_close(kv);
	teardown(base);
}

/*
 * A client whose value lies on a userfaultfd page nobody serves: its put
 * stops in copy_from_user holding a 3 MiB range.  That range counts in its
 * user's 4 MiB budget (another 2 MiB put of the same user: EDQUOT), and
 * when the putter is killed the range, the charge and the put go.
 */
static void put_on_a_uffd_page(void *arg)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	size_t len = 4 * FKV_MIB;
	int *ready = arg, uffd, fd, ret;
	char *p;

	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* never outlive the test */
	FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
	fd = fkv_dev_open();	/* O_RDWR without CAP_SYS_ADMIN: a client */
	FKV_ASSERT(fd >= 0);
	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		_exit(77);
	FKV_ASSERT_EQ(ioctl(uffd, UFFDIO_API, &api), 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(p != MAP_FAILED);
	reg.range.start = (uintptr_t)p;
	reg.range.len = len;
	FKV_ASSERT_EQ(ioctl(uffd, UFFDIO_REGISTER, &reg), 0);
	FKV_ASSERT_EQ(write(*ready, "r", 1), 1);
	ret = fkv_dev_put(fd, "uffd-put", 8, p, 3 * FKV_MIB, NULL);
	printf("# the stalled put returned %d\n", ret);
	_exit(1);	/* it must never return: the parent kills us */
}

static void put_of_the_same_user(void *arg)
{
	uint8_t *buf = malloc(2 * FKV_MIB);
	int fd;

	(void)arg;
	FKV_ASSERT(buf);
	FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	memset(buf, 7, 2 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_dev_put(fd, "second", 6, buf, 2 * FKV_MIB, NULL),
		      -EDQUOT);
	FKV_ASSERT_EQ(fkv_dev_put(fd, "small", 5, buf, 512 * 1024, NULL), 0);
	FKV_ASSERT_EQ(fkv_dev_delete(fd, "small", 5), 0);
	close(fd);
	free(buf);
}

FKV_TEST(a_put_stalled_in_copy_from_user_pins_only_its_users_budget)
{
	uint64_t base = setup(PIN_PARAMS);
	int ready[2], status;
	int64_t end;
	pid_t pid;
	char c;

	FKV_ASSERT_EQ(pipe(ready), 0);
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		put_on_a_uffd_page(&ready[1]);
	}
	close(ready[1]);
	FKV_ASSERT_EQ(read(ready[0], &c, 1), 1);
	close(ready[0]);
	end = fkv_now_ms() + 5000;
	/* charged first, then PUT_START, then the range: wait for both */
	while (user_pinned(0) != 3 * FKV_MIB ||
	       fkv_sysfs("segment_used_bytes") != base + 3 * FKV_MIB) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
				FKV_SKIP("no userfaultfd in this kernel");
			FKV_FAIL_AT(0, "the stalled putter ended: %#x", status);
		}
		FKV_ASSERT(fkv_now_ms() < end, "user 0 pins %lld, segment "
			   "used %" PRIu64 ", want 3 MiB each", user_pinned(0),
			   fkv_sysfs("segment_used_bytes") - base);
		fkv_msleep(10);
	}
	fkv_in_child(put_of_the_same_user, NULL, "a put of the same user");
	kill(pid, SIGKILL);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		   "the stalled putter ended with %#x", status);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(user_pinned(0), -1);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	teardown(base);
}

/* ---- fragmentation: room by address ---- */

/* setup() with fluxond evicting only for room, never ahead of need. */
static uint64_t setup_no_watermark(const char *params)
{
	uint64_t base;

	fkv_env_daemon_arg = "--high-watermark=100";
	base = setup(params);
	fkv_env_daemon_arg = NULL;
	return base;
}

#define FRAG_VALUES	64	/* 1 MiB spans: the whole 64 MiB segment */
#define FRAG_LEN	(FKV_MIB - 100)

static void frag_key(char *buf, size_t n, int i)
{
	snprintf(buf, n, "frag-%02d", i);
}

/*
 * 64 values of 1 MiB fill a 64 MiB segment in address order; four at odd
 * MiB offsets (1, 3, 5, 7) are deleted -- 4 MiB free, in 1 MiB holes --
 * and every value at an even offset is held.  A 4 MiB put cannot fit
 * while those holders stay: it fails with ENOSPC after the room wait
 * having given up a few values (one policy round, one window named by
 * address) -- before, the master evicted every replica it had.  With the
 * holders gone the next 4 MiB put finds room.
 */
/* Offset of KEY's value in the segment (through a read-only session). */
static uint64_t value_offset(int ro, const char *key)
{
	struct fluxonkv_get g;

	FKV_ASSERT_EQ(fkv_dev_get(ro, key, strlen(key), &g), 0);
	FKV_ASSERT_EQ(fkv_dev_release(ro, g.holder_id), 0);
	return g.offset;
}

/* Nothing but BASE used: the free bytes are one extent of SIZE - BASE. */
static void segment_one_free_extent(uint64_t base, uint64_t size)
{
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_extents"), 1);
	FKV_ASSERT_EQ((uint64_t)fkv_debugfs_segment("free_largest"),
		      size - base);
}

/*
 * The range allocator keeps free extents: freed ranges merge with their
 * neighbours, a put takes the lowest hole that fits, and once everything
 * is gone the segment is one free extent again.
 */
FKV_TEST(freed_ranges_merge_and_a_put_takes_the_lowest_hole_that_fits)
{
	uint64_t base, off[8];
	struct fkv *kv;
	char key[16];
	int i, ro;

	base = setup("segment_mb=32");
	if (fkv_debugfs_segment("free_extents") < 0)
		FKV_SKIP("no debugfs");
	FKV_ASSERT_EQ(base, 0);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_extents"), 1);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_largest"), 32 * FKV_MIB);
	kv = kv_open();
	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "ext-%d", i);
		put_pattern(kv, key, FKV_MIB, i);
		off[i] = value_offset(ro, key);
		FKV_ASSERT_EQ(off[i], (uint64_t)i * FKV_MIB);
	}
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_extents"), 1);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_largest"), 24 * FKV_MIB);
	/* three holes of 1 MiB, then the first two merge across ext-2 */
	delete_key(kv, "ext-1");
	delete_key(kv, "ext-3");
	delete_key(kv, "ext-5");
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 5 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_extents"), 4);
	delete_key(kv, "ext-2");
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 4 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_extents"), 3);
	/* 3 MiB fits first where ext-1..3 were; 1 MiB where ext-5 was */
	put_pattern(kv, "ext-big", 3 * FKV_MIB, 9);
	FKV_ASSERT_EQ(value_offset(ro, "ext-big"), off[1]);
	put_pattern(kv, "ext-small", FKV_MIB - 4096, 10);
	FKV_ASSERT_EQ(value_offset(ro, "ext-small"), off[5]);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_extents"), 2);
	/* the 4 KiB left of ext-5's hole, and the tail */
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_largest"), 24 * FKV_MIB);
	for (i = 0; i < 8; i++) {
		if (i == 1 || i == 2 || i == 3 || i == 5)
			continue;
		snprintf(key, sizeof(key), "ext-%d", i);
		delete_key(kv, key);
	}
	delete_key(kv, "ext-big");
	delete_key(kv, "ext-small");
	segment_one_free_extent(0, 32 * FKV_MIB);
	close(ro);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST_TIMEOUT(a_fragmented_segment_does_not_empty_the_cache, 120)
{
	uint64_t base, holders[FRAG_VALUES] = { 0 }, off[FRAG_VALUES], ev;
	struct fluxonkv_get g;
	struct fkv_holder h;
	struct fkv *kv;
	char key[32];
	uint8_t *big;
	int i, ro, ret;

	base = setup_no_watermark("segment_mb=64");
	kv = kv_open();
	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	for (i = 0; i < FRAG_VALUES; i++) {
		frag_key(key, sizeof(key), i);
		put_pattern(kv, key, FRAG_LEN, i);
		FKV_ASSERT_EQ(fkv_dev_get(ro, key, strlen(key), &g), 0);
		off[i] = g.offset;
		FKV_ASSERT_EQ(fkv_dev_release(ro, g.holder_id), 0);
	}
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + 64 * FKV_MIB);
	for (i = 0; i < FRAG_VALUES; i++)
		if (off[i] == FKV_MIB || off[i] == 3 * FKV_MIB ||
		    off[i] == 5 * FKV_MIB || off[i] == 7 * FKV_MIB) {
			frag_key(key, sizeof(key), i);
			delete_key(kv, key);
			off[i] = UINT64_MAX;
		}
	for (i = 0; i < FRAG_VALUES; i++) {
		if (off[i] == UINT64_MAX || off[i] / FKV_MIB % 2)
			continue;
		frag_key(key, sizeof(key), i);
		FKV_ASSERT_EQ(fkv_dev_get(ro, key, strlen(key), &g), 0);
		holders[i] = g.holder_id;
	}
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), FRAG_VALUES - 4);

	big = pattern("frag-big", 4 * FKV_MIB, 1);
	ret = fkv_put(kv, "frag-big", 8, big, 4 * FKV_MIB, NULL);
	FKV_ASSERT(ret == -ENOSPC, "4 MiB put into a pinned checkerboard: %s",
		   fkv_strerror(ret));
	ev = fkv_sysfs("evictions");
	fkv_diag("ENOSPC after %" PRIu64 " evictions (%" PRIu64 " by address), "
		 "%" PRIu64 " of %d replicas left", ev,
		 fkv_sysfs("room_by_address"), fkv_sysfs("replicas"),
		 FRAG_VALUES - 4);
	FKV_ASSERT(ev <= 8, "%" PRIu64 " replicas evicted for a put that "
		   "could not fit", ev);
	FKV_ASSERT_GE(fkv_sysfs("replicas"), FRAG_VALUES - 4 - 8);

	/* the holders go: now there is room */
	for (i = 0; i < FRAG_VALUES; i++)
		if (holders[i])
			FKV_ASSERT_EQ(fkv_dev_release(ro, holders[i]), 0);
	ret = fkv_put(kv, "frag-big", 8, big, 4 * FKV_MIB, NULL);
	FKV_ASSERT(ret == 0, "4 MiB put with nothing pinned: %s",
		   fkv_strerror(ret));
	FKV_ASSERT_EQ(fkv_get(kv, "frag-big", 8, &h), 0);
	FKV_ASSERT_PATTERN(h.data, 4 * FKV_MIB, "frag-big", 8, 1);
	release(kv, &h);
	FKV_ASSERT_LE(fkv_sysfs("evictions"), ev + 4);
	free(big);
	close(ro);
	for (i = 0; i < FRAG_VALUES; i++) {
		frag_key(key, sizeof(key), i);
		delete_any(kv, key);
	}
	delete_key(kv, "frag-big");
	fkv_close(kv);
	teardown(base);
}

/*
 * The victim search lets go of the segment lock every 4096 allocs it
 * looks at (segment.c) and goes on from the offset it reached: with a
 * segment of 8192 one-granule values, all pinned but a run of 64 at 28
 * MiB (past the 7000th alloc), a 256 KiB put still finds that run -- the
 * only window with nothing pinned -- and takes exactly its place.
 */
#define WALK_RUN_OFF	(28 * FKV_MIB)
#define WALK_BIG	(256 * 1024)

FKV_TEST_TIMEOUT(a_window_past_thousands_of_pinned_values_is_found, 240)
{
	size_t nvals, i, pinned = 0;
	uint64_t base, *holders, *offs, by_addr0, off;
	struct fluxonkv_get g;
	struct fkv_holder h;
	struct fkv *kv;
	uint8_t small[100], *big;
	char key[32];
	int pin, ret;

	base = setup_no_watermark("segment_mb=32");
	nvals = (32 * FKV_MIB - base) / FLUXONKV_SEGMENT_ALIGN;
	kv = kv_open();
	/* privileged (root, O_RDWR): no pin budget */
	pin = fkv_dev_open();
	FKV_ASSERT(pin >= 0);
	holders = calloc(nvals, sizeof(*holders));
	offs = calloc(nvals, sizeof(*offs));
	FKV_ASSERT(holders && offs);
	memset(small, 0x5a, sizeof(small));
	for (i = 0; i < nvals; i++) {
		snprintf(key, sizeof(key), "w-%05zu", i);
		FKV_ASSERT_EQ(fkv_put(kv, key, strlen(key), small,
				      sizeof(small), NULL), 0);
		FKV_ASSERT_EQ(fkv_dev_get(pin, key, strlen(key), &g), 0);
		offs[i] = g.offset;
		if (g.offset >= WALK_RUN_OFF &&
		    g.offset < WALK_RUN_OFF + WALK_BIG) {
			FKV_ASSERT_EQ(fkv_dev_release(pin, g.holder_id), 0);
			continue;
		}
		holders[i] = g.holder_id;
		pinned++;
	}
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + 32 * FKV_MIB);
	FKV_ASSERT_EQ(pinned, nvals - WALK_BIG / FLUXONKV_SEGMENT_ALIGN);
	/*
	 * 64 one-granule holes between pinned values: the free bytes are
	 * there, only no run of them, so the second ask names a window.
	 */
	for (i = 0; i < nvals; i++) {
		if (!offs[i] || offs[i] % WALK_BIG || offs[i] > 64 * WALK_BIG)
			continue;
		FKV_ASSERT_EQ(fkv_dev_release(pin, holders[i]), 0);
		holders[i] = 0;
		snprintf(key, sizeof(key), "w-%05zu", i);
		delete_key(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes",
				 base + 32 * FKV_MIB - 64 * FLUXONKV_SEGMENT_ALIGN);

	by_addr0 = fkv_sysfs("room_by_address");
	big = pattern("w-big", WALK_BIG, 1);
	ret = fkv_put(kv, "w-big", 5, big, WALK_BIG, NULL);
	fkv_diag("put: %d; room_by_address +%" PRIu64 ", room_pinned %" PRIu64
		 ", evictions %" PRIu64 ", replicas %" PRIu64 ", used %" PRIu64
		 ", free extents %lld, largest %lld", ret,
		 fkv_sysfs("room_by_address") - by_addr0,
		 fkv_sysfs("room_pinned"), fkv_sysfs("evictions"),
		 fkv_sysfs("replicas"), fkv_sysfs("segment_used_bytes"),
		 fkv_debugfs_segment("free_extents"),
		 fkv_debugfs_segment("free_largest"));
	FKV_ASSERT(ret == 0, "256 KiB put into a segment pinned but one run: %s",
		   fkv_strerror(ret));
	FKV_ASSERT_GT(fkv_sysfs("room_by_address"), by_addr0);
	FKV_ASSERT_EQ(fkv_dev_get(pin, "w-big", 5, &g), 0);
	off = g.offset;
	FKV_ASSERT_EQ(fkv_dev_release(pin, g.holder_id), 0);
	fkv_diag("the put landed at %" PRIu64 " MiB after %" PRIu64
		 " evictions", (uint64_t)(off / FKV_MIB), fkv_sysfs("evictions"));
	FKV_ASSERT_EQ(off, WALK_RUN_OFF);
	FKV_ASSERT_EQ(fkv_get(kv, "w-big", 5, &h), 0);
	FKV_ASSERT_PATTERN(h.data, WALK_BIG, "w-big", 5, 1);
	release(kv, &h);

	for (i = 0; i < nvals; i++)
		if (holders[i])
			FKV_ASSERT_EQ(fkv_dev_release(pin, holders[i]), 0);
	free(holders);
	free(offs);
	free(big);
	close(pin);
	for (i = 0; i < nvals; i++) {
		snprintf(key, sizeof(key), "w-%05zu", i);
		delete_any(kv, key);
	}
	delete_key(kv, "w-big");
	fkv_close(kv);
	teardown(base);
}

/*
 * Compaction: 24 values of 1 MiB at the bottom of a 32 MiB segment, those
 * at odd MiB offsets deleted (12 holes of 1 MiB below an 8 MiB free
 * tail), the one at 10 MiB held.  A 12 MiB put fits in the free bytes but
 * in no hole: values above the held one slide down into the holes, and
 * nothing is evicted (before: the master evicted values by popularity,
 * then by address, until a run was free).  The held value has not moved,
 * every value reads back whole, some from a new offset.
 */
#define CMP_VALUES	24
#define CMP_BIG		(12 * FKV_MIB)

static void cmp_key(char *buf, size_t n, int i)
{
	snprintf(buf, n, "cmp-%02d", i);
}

/*
 * The layout of the compaction tests: CMP_VALUES values in address order,
 * those at odd MiB offsets deleted (off[i] = UINT64_MAX), the one at 10
 * MiB held through @ro; returns its index.
 */
static int cmp_fragment(struct fkv *kv, int ro, uint64_t *off,
			uint64_t *pin_holder, uint64_t base)
{
	struct fluxonkv_get g;
	char key[32];
	int i, pin = -1;

	for (i = 0; i < CMP_VALUES; i++) {
		cmp_key(key, sizeof(key), i);
		put_pattern(kv, key, FRAG_LEN, i);
		off[i] = value_offset(ro, key);
	}
	for (i = 0; i < CMP_VALUES; i++) {
		cmp_key(key, sizeof(key), i);
		if (off[i] / FKV_MIB % 2) {
			delete_key(kv, key);
			off[i] = UINT64_MAX;
		} else if (off[i] == 10 * FKV_MIB) {
			pin = i;
		}
	}
	FKV_ASSERT(pin >= 0, "no value at 10 MiB (base %" PRIu64 ")", base);
	cmp_key(key, sizeof(key), pin);
	FKV_ASSERT_EQ(fkv_dev_get(ro, key, strlen(key), &g), 0);
	*pin_holder = g.holder_id;
	FKV_ASSERT_EQ(g.offset, 10 * FKV_MIB);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base + 12 * FKV_MIB);
	return pin;
}

/* Every value left whole; then all deleted, the pin released. */
static int cmp_check_and_clean(struct fkv *kv, int ro, const uint64_t *off,
			       uint64_t pin_holder)
{
	struct fkv_holder h;
	int i, relocated = 0;
	char key[32];

	for (i = 0; i < CMP_VALUES; i++) {
		if (off[i] == UINT64_MAX)
			continue;
		cmp_key(key, sizeof(key), i);
		FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h), 0);
		FKV_ASSERT_PATTERN(h.data, FRAG_LEN, key, strlen(key), i);
		release(kv, &h);
		if (value_offset(ro, key) != off[i])
			relocated++;
	}
	FKV_ASSERT_EQ(fkv_get(kv, "cmp-big", 7, &h), 0);
	FKV_ASSERT_PATTERN(h.data, CMP_BIG, "cmp-big", 7, 7);
	release(kv, &h);
	FKV_ASSERT_EQ(fkv_dev_release(ro, pin_holder), 0);
	for (i = 0; i < CMP_VALUES; i++) {
		if (off[i] == UINT64_MAX)
			continue;
		cmp_key(key, sizeof(key), i);
		delete_key(kv, key);
	}
	delete_key(kv, "cmp-big");
	return relocated;
}

FKV_TEST_TIMEOUT(a_fragmented_segment_moves_values_instead_of_evicting, 120)
{
	uint64_t base, off[CMP_VALUES], ev, comp, moved, pin_holder;
	int ro, ret, pin, relocated;
	struct fkv *kv;
	char key[32];
	uint8_t *big;

	base = setup_no_watermark("segment_mb=32");
	kv = kv_open();
	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	pin = cmp_fragment(kv, ro, off, &pin_holder, base);

	ev = fkv_sysfs("evictions");
	comp = fkv_sysfs("compactions");
	moved = fkv_sysfs("compacted_bytes");
	big = pattern("cmp-big", CMP_BIG, 7);
	ret = fkv_put(kv, "cmp-big", 7, big, CMP_BIG, NULL);
	fkv_diag("put: %d; compactions +%" PRIu64 ", %" PRIu64 " KiB moved, "
		 "evictions +%" PRIu64 ", room_by_address %" PRIu64, ret,
		 fkv_sysfs("compactions") - comp,
		 (fkv_sysfs("compacted_bytes") - moved) >> 10,
		 fkv_sysfs("evictions") - ev, fkv_sysfs("room_by_address"));
	FKV_ASSERT(ret == 0, "12 MiB put with 20 MiB free in holes: %s",
		   fkv_strerror(ret));
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), ev);
	FKV_ASSERT_EQ(fkv_sysfs("compactions"), comp + 1);
	FKV_ASSERT_GT(fkv_sysfs("compacted_bytes"), moved);
	FKV_ASSERT_LE(fkv_sysfs("compacted_bytes") - moved, 8 * CMP_BIG);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), CMP_VALUES / 2 + 1);

	cmp_key(key, sizeof(key), pin);
	FKV_ASSERT_EQ(value_offset(ro, key), 10 * FKV_MIB);
	relocated = cmp_check_and_clean(kv, ro, off, pin_holder);
	fkv_diag("%d of %d values moved", relocated, CMP_VALUES / 2);
	FKV_ASSERT_GT(relocated, 0);
	free(big);
	close(ro);
	fkv_close(kv);
	teardown(base);
}

/*
 * A get that comes while its value moves waits for the new offset.  With
 * debugfs compact_stall_ms at 300, the 12 MiB put of the test above holds
 * each value it moves for 300 ms before it may be read again; once the
 * segment says a value is moving, a get of the first to move (the one at
 * 18 MiB: the cheapest slide is of the three values above 17 MiB) waits
 * for it (compact_waits), reads it whole at its new offset; so does a
 * get of the next through io_uring (its inline issue leaves the wait to
 * io-wq), and the put completes without an eviction.
 */
#define CMP_STALL	FKV_DEBUGFS_DIR "/compact_stall_ms"

struct cmp_put {
	struct fkv *kv;
	const uint8_t *big;
	int ret;
};

static void *cmp_put_big(void *arg)
{
	struct cmp_put *p = arg;

	p->ret = fkv_put(p->kv, "cmp-big", 7, p->big, CMP_BIG, NULL);
	return NULL;
}

static void cmp_stall(const char *ms)
{
	int fd = open(CMP_STALL, O_WRONLY);

	FKV_ASSERT(fd >= 0, "%s: %s", CMP_STALL, strerror(errno));
	FKV_ASSERT_EQ(write(fd, ms, strlen(ms)), (ssize_t)strlen(ms));
	close(fd);
}

FKV_TEST_TIMEOUT(a_get_of_a_moving_value_waits_for_its_new_offset, 120)
{
	uint64_t base, off[CMP_VALUES], ev, waits, pin_holder, t0;
	int ro, i, first = -1, second = -1, at_submit;
	struct cmp_put p = { 0 };
	struct fkv_completion c;
	struct fkv_op op = { 0 };
	struct fkv_ring *ring;
	struct fluxonkv_get g;
	struct fkv_holder h;
	struct fkv *kv;
	pthread_t th;
	char key[32];

	base = setup_no_watermark("segment_mb=32");
	if (access(CMP_STALL, W_OK))
		FKV_SKIP("no debugfs");
	kv = kv_open();
	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	cmp_fragment(kv, ro, off, &pin_holder, base);
	for (i = 0; i < CMP_VALUES; i++)
		if (off[i] == 18 * FKV_MIB)
			first = i;
	FKV_ASSERT(first >= 0);
	cmp_key(key, sizeof(key), first);

	ev = fkv_sysfs("evictions");
	waits = fkv_sysfs("compact_waits");
	cmp_stall("300");
	p.kv = kv_open();
	p.big = pattern("cmp-big", CMP_BIG, 7);
	FKV_ASSERT_EQ(pthread_create(&th, NULL, cmp_put_big, &p), 0);
	t0 = fkv_now_ms();
	while (fkv_debugfs_segment("moving") != 1) {
		FKV_ASSERT(fkv_now_ms() - t0 < 30000, "no value moving after 30 s");
		usleep(2000);
	}
	/* pins it during the stall: waits until it may be read again */
	FKV_ASSERT_EQ(fkv_dev_get(ro, key, strlen(key), &g), 0);
	FKV_ASSERT_EQ(g.offset, 17 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_dev_release(ro, g.holder_id), 0);
	FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h), 0);
	FKV_ASSERT_PATTERN(h.data, FRAG_LEN, key, strlen(key), first);
	release(kv, &h);

	/*
	 * The next one moving (20 -> 18 MiB): a get through io_uring leaves
	 * the inline issue (-EAGAIN) and waits in io-wq, whole bytes again.
	 */
	for (i = 0; i < CMP_VALUES; i++)
		if (off[i] == 20 * FKV_MIB)
			second = i;
	FKV_ASSERT(second >= 0);
	cmp_key(key, sizeof(key), second);
	while (fkv_debugfs_segment("moving") != 1) {
		FKV_ASSERT(fkv_now_ms() - t0 < 30000, "no value moving after 30 s");
		usleep(2000);
	}
	FKV_ASSERT_EQ(fkv_ring_open(kv, 4, &ring), 0);
	op.opcode = FLUXONKV_OP_GET;
	op.key = key;
	op.key_len = strlen(key);
	FKV_ASSERT_EQ(fkv_ring_prep(ring, &op, 1), 0);
	FKV_ASSERT_EQ(fkv_ring_submit(ring), 1);
	at_submit = fkv_ring_reap(ring, &c, 1, 0);
	if (!at_submit)
		FKV_ASSERT_EQ(fkv_ring_reap(ring, &c, 1, 1), 1);
	FKV_ASSERT_EQ(c.op.result, 0);
	FKV_ASSERT_PATTERN(c.op.holder.data, FRAG_LEN, key, strlen(key), second);
	release(kv, &c.op.holder);
	fkv_ring_close(ring);
	FKV_ASSERT_EQ(value_offset(ro, key), 18 * FKV_MIB);
	fkv_diag("the ring's get completed %s", at_submit ? "at the submit" :
		 "after the submit");
	FKV_ASSERT_EQ(pthread_join(th, NULL), 0);
	cmp_stall("0");
	fkv_diag("put: %d; compact_waits +%" PRIu64 ", evictions +%" PRIu64,
		 p.ret, fkv_sysfs("compact_waits") - waits,
		 fkv_sysfs("evictions") - ev);
	FKV_ASSERT(p.ret == 0, "12 MiB put: %s", fkv_strerror(p.ret));
	FKV_ASSERT_GT(fkv_sysfs("compact_waits"), waits);
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), ev);
	FKV_ASSERT_EQ(fkv_debugfs_segment("moving"), 0);
	cmp_check_and_clean(kv, ro, off, pin_holder);
	free((void *)p.big);
	fkv_close(p.kv);
	close(ro);
	fkv_close(kv);
	teardown(base);
}

/*
 * A slide takes out of the free tree only what a move writes.  In a
 * 16 MiB segment of 1 MiB values, holes at [1, 4) and [5, 6) MiB: a 4 MiB
 * put slides the value at 4 MiB down to 1 MiB (compact_stall_ms holds it
 * there for 3 s).  The move writes [1, 2); [2, 4) stays free, so a 2 MiB
 * put meanwhile lands at 2 MiB at once -- no eviction, no wait for the
 * slide.  Before, the whole 3 MiB hole was hidden for the whole move and
 * that put waited for the slide.  The 4 MiB put then finds the room taken
 * and evicts; every value left is whole, and once all are deleted the
 * segment is one free extent again (the value re-entered in the address
 * tree below the put that took the hole's rest).
 */
#define HOLE_VALUES	16

static void hole_key(char *buf, size_t n, int i)
{
	snprintf(buf, n, "hole-%02d", i);
}

static void *hole_put_big(void *arg)
{
	struct cmp_put *p = arg;

	p->ret = fkv_put(p->kv, "hole-big", 8, p->big, 4 * FKV_MIB, NULL);
	return NULL;
}

FKV_TEST_TIMEOUT(a_slide_leaves_the_rest_of_a_longer_hole_allocatable, 120)
{
	uint64_t base, ev, comp, t0, took;
	struct cmp_put p = { 0 };
	struct fkv_holder h;
	long long moving;
	struct fkv *kv;
	int ro, i, ret;
	char key[32];
	pthread_t th;

	base = setup_no_watermark("segment_mb=16");
	if (access(CMP_STALL, W_OK))
		FKV_SKIP("no debugfs");
	FKV_ASSERT_EQ(base, 0);
	kv = kv_open();
	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	for (i = 0; i < HOLE_VALUES; i++) {
		hole_key(key, sizeof(key), i);
		put_pattern(kv, key, FRAG_LEN, i);
		FKV_ASSERT_EQ(value_offset(ro, key), (uint64_t)i * FKV_MIB);
	}
	for (i = 1; i <= 5; i++) {
		if (i == 4)
			continue;
		hole_key(key, sizeof(key), i);
		delete_key(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 12 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_extents"), 2);
	FKV_ASSERT_EQ(fkv_debugfs_segment("free_largest"), 3 * FKV_MIB);

	ev = fkv_sysfs("evictions");
	comp = fkv_sysfs("compactions");
	cmp_stall("3000");
	p.kv = kv_open();
	p.big = pattern("hole-big", 4 * FKV_MIB, 7);
	FKV_ASSERT_EQ(pthread_create(&th, NULL, hole_put_big, &p), 0);
	t0 = fkv_now_ms();
	while (fkv_debugfs_segment("moving") != 1) {
		FKV_ASSERT(fkv_now_ms() - t0 < 30000, "no value moving after 30 s");
		usleep(2000);
	}
	/* [2, 4) MiB is free while the value moves into [1, 2) */
	t0 = fkv_now_ms();
	put_pattern(kv, "hole-mid", 2 * FKV_MIB - 100, 11);
	took = fkv_now_ms() - t0;
	moving = fkv_debugfs_segment("moving");
	fkv_diag("the 2 MiB put took %" PRIu64 " ms, moving %lld after it, "
		 "evictions +%" PRIu64, took, moving,
		 fkv_sysfs("evictions") - ev);
	FKV_ASSERT(moving == 1, "the 2 MiB put waited for the slide (%" PRIu64
		   " ms): the hole's rest was hidden", took);
	FKV_ASSERT_EQ(value_offset(ro, "hole-mid"), 2 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), ev);
	hole_key(key, sizeof(key), 4);
	FKV_ASSERT_EQ(pthread_join(th, NULL), 0);
	cmp_stall("0");
	fkv_diag("4 MiB put: %d; compactions +%" PRIu64 ", evictions +%"
		 PRIu64, p.ret, fkv_sysfs("compactions") - comp,
		 fkv_sysfs("evictions") - ev);
	FKV_ASSERT(p.ret == 0, "4 MiB put: %s", fkv_strerror(p.ret));
	FKV_ASSERT_EQ(fkv_debugfs_segment("moving"), 0);

	/* every value still there is whole; the moved one at 1 MiB if kept */
	ret = fkv_get(kv, key, strlen(key), &h);
	if (!ret) {
		FKV_ASSERT_PATTERN(h.data, FRAG_LEN, key, strlen(key), 4);
		release(kv, &h);
		FKV_ASSERT_EQ(value_offset(ro, key), FKV_MIB);
	}
	FKV_ASSERT_EQ(fkv_get(kv, "hole-mid", 8, &h), 0);
	FKV_ASSERT_PATTERN(h.data, 2 * FKV_MIB - 100, "hole-mid", 8, 11);
	release(kv, &h);
	FKV_ASSERT_EQ(fkv_get(kv, "hole-big", 8, &h), 0);
	FKV_ASSERT_PATTERN(h.data, 4 * FKV_MIB, "hole-big", 8, 7);
	release(kv, &h);
	for (i = 0; i < HOLE_VALUES; i++) {
		hole_key(key, sizeof(key), i);
		ret = fkv_get(kv, key, strlen(key), &h);
		FKV_ASSERT(ret == 0 || ret == -ENOENT, "get %s: %s", key,
			   fkv_strerror(ret));
		if (ret)
			continue;
		FKV_ASSERT_PATTERN(h.data, FRAG_LEN, key, strlen(key), i);
		release(kv, &h);
	}
	for (i = 0; i < HOLE_VALUES; i++) {
		hole_key(key, sizeof(key), i);
		delete_any(kv, key);
	}
	delete_any(kv, "hole-mid");
	delete_any(kv, "hole-big");
	segment_one_free_extent(0, 16 * FKV_MIB);
	free((void *)p.big);
	fkv_close(p.kv);
	close(ro);
	fkv_close(kv);
	teardown(base);
}

/*
 * Gets race the moves: two threads get values (a holder: the bytes read
 * through the mapping) and copy them (GET_INTO), while the test makes the
 * segment fragmented and puts a 12 MiB value into it, round after round;
 * a slide skips a value a reader holds, and a reader that comes while its
 * value moves waits for it.  Every read is whole.
 */
#define RACE_ROUNDS	12	/* FKV_COMPACT_ROUNDS: make stress runs 200 */

static unsigned int race_rounds(void)
{
	const char *e = getenv("FKV_COMPACT_ROUNDS");
	unsigned long n = e ? strtoul(e, NULL, 10) : 0;

	return n && n <= 10000 ? (unsigned int)n : RACE_ROUNDS;
}

struct cmp_reader {
	volatile bool stop;
	unsigned int seed;
	uint64_t reads, misses, bad;
};

static void *cmp_read(void *arg)
{
	struct cmp_reader *r = arg;
	struct fkv *kv = kv_open();
	uint8_t *buf = malloc(FRAG_LEN);
	struct fkv_holder h;
	char key[32];
	int i, ret;

	while (buf && !r->stop) {
		i = 2 * (rand_r(&r->seed) % (CMP_VALUES / 2));
		cmp_key(key, sizeof(key), i);
		if (r->reads % 2) {
			ret = fkv_get(kv, key, strlen(key), &h);
			if (!ret) {
				if (fkv_pattern_check(h.data, FRAG_LEN, key,
						      strlen(key), i) >= 0)
					r->bad++;
				fkv_holder_release(kv, &h);
			}
		} else {
			ret = fkv_get_into(kv, key, strlen(key), buf,
					   FRAG_LEN, NULL);
			if (!ret && fkv_pattern_check(buf, FRAG_LEN, key,
						      strlen(key), i) >= 0)
				r->bad++;
		}
		if (ret == -ENOENT)
			r->misses++;
		else if (ret)
			r->bad++;
		r->reads++;
	}
	free(buf);
	fkv_close(kv);
	return NULL;
}

FKV_TEST_TIMEOUT(gets_racing_compaction_read_whole_values, 600)
{
	struct cmp_reader rd[2] = { { .seed = 1 }, { .seed = 2 } };
	uint64_t base, comp, waits;
	unsigned int round, rounds = race_rounds(), t;
	pthread_t th[2];
	struct fkv *kv;
	char key[32];
	uint8_t *big;
	int i, ret;

	base = setup_no_watermark("segment_mb=32");
	kv = kv_open();
	big = pattern("cmp-big", CMP_BIG, 7);
	comp = fkv_sysfs("compactions");
	waits = fkv_sysfs("compact_waits");
	for (t = 0; t < 2; t++)
		FKV_ASSERT_EQ(pthread_create(&th[t], NULL, cmp_read, &rd[t]), 0);
	for (round = 0; round < rounds; round++) {
		for (i = 0; i < CMP_VALUES; i++) {
			cmp_key(key, sizeof(key), i);
			put_pattern(kv, key, FRAG_LEN, i);
		}
		for (i = 1; i < CMP_VALUES; i += 2) {
			cmp_key(key, sizeof(key), i);
			delete_key(kv, key);
		}
		ret = fkv_put(kv, "cmp-big", 7, big, CMP_BIG, NULL);
		FKV_ASSERT(ret == 0, "round %u: 12 MiB put: %s", round,
			   fkv_strerror(ret));
		delete_key(kv, "cmp-big");
		for (i = 0; i < CMP_VALUES; i += 2) {
			cmp_key(key, sizeof(key), i);
			delete_any(kv, key);
		}
	}
	for (t = 0; t < 2; t++) {
		rd[t].stop = true;
		FKV_ASSERT_EQ(pthread_join(th[t], NULL), 0);
	}
	fkv_diag("%u rounds: compactions +%" PRIu64 ", compact_waits +%" PRIu64
		 ", reads %" PRIu64 " + %" PRIu64 " (misses %" PRIu64 " + %"
		 PRIu64 "), bad %" PRIu64 " + %" PRIu64, rounds,
		 fkv_sysfs("compactions") - comp,
		 fkv_sysfs("compact_waits") - waits, rd[0].reads, rd[1].reads,
		 rd[0].misses, rd[1].misses, rd[0].bad, rd[1].bad);
	FKV_ASSERT_EQ(rd[0].bad + rd[1].bad, 0);
	FKV_ASSERT_GT(rd[0].reads - rd[0].misses, 0);
	FKV_ASSERT_GT(rd[1].reads - rd[1].misses, 0);
	FKV_ASSERT_GT(fkv_sysfs("compactions") - comp, 0);
	free(big);
	fkv_close(kv);
	teardown(base);
}

/*
 * A value's last reference dropped while a slide looks at it (issue 29).
 * A slide checked, segment lock held, that only the owner references a
 * value, then took its own reference; the replica's final put drops the
 * count to zero without that lock and then waits for it to free the range.
 * A reference taken from zero (refcount_t "addition on 0") freed the
 * range and the alloc under the slide: a free extent overlapping another,
 * two values sharing bytes.  With compact_freeze_delay_ms the slide spins
 * between its look and its reference; the value it looks at first (18
 * MiB: the cheapest run is the three values above 17 MiB) is deleted
 * meanwhile.  The slide leaves it (compact_freeze_lost), the kernel log
 * has no warning, the 12 MiB put completes, every value left reads whole;
 * once all are deleted the segment is one free extent of exactly the free
 * bytes, and a put of every free MiB reads back whole.
 */
FKV_TEST_TIMEOUT(a_value_deleted_while_a_slide_freezes_it_is_left_alone, 180)
{
	uint64_t base, off[CMP_VALUES], pin_holder, t0, n, i;
	long long delays, lost;
	struct cmp_put p = { 0 };
	struct fkv_holder h;
	int ro, kmsg, ret, kept = 0, gone = -1;
	char key[32], splat[512];
	struct fkv *kv;
	pthread_t th;

	base = setup_no_watermark("segment_mb=32");
	if (fkv_debugfs_set("compact_freeze_delay_ms", 0))
		FKV_SKIP("no debugfs compact_freeze_delay_ms");
	kv = kv_open();
	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	cmp_fragment(kv, ro, off, &pin_holder, base);
	for (i = 0; i < CMP_VALUES; i++)
		if (off[i] == 18 * FKV_MIB)
			gone = i;
	FKV_ASSERT(gone >= 0);
	cmp_key(key, sizeof(key), gone);

	kmsg = fkv_kmsg_mark();
	delays = fkv_debugfs_u32("compact_freeze_delays");
	lost = fkv_debugfs_u32("compact_freeze_lost");
	FKV_ASSERT_EQ(fkv_debugfs_set("compact_freeze_delay_ms", 500), 0);
	p.kv = kv_open();
	p.big = pattern("cmp-big", CMP_BIG, 7);
	FKV_ASSERT_EQ(pthread_create(&th, NULL, cmp_put_big, &p), 0);
	t0 = fkv_now_ms();
	while (fkv_debugfs_u32("compact_freeze_delays") == delays) {
		FKV_ASSERT(fkv_now_ms() - t0 < 30000, "no slide after 30 s");
		usleep(500);
	}
	/* the slide spins on the 18 MiB value: drop its last reference */
	delete_key(kv, key);
	off[gone] = UINT64_MAX;
	FKV_ASSERT_EQ(pthread_join(th, NULL), 0);
	FKV_ASSERT_EQ(fkv_debugfs_set("compact_freeze_delay_ms", 0), 0);
	fkv_diag("put: %d; freeze delays +%lld, lost +%lld", p.ret,
		 fkv_debugfs_u32("compact_freeze_delays") - delays,
		 fkv_debugfs_u32("compact_freeze_lost") - lost);
	FKV_ASSERT(!fkv_kmsg_splat(kmsg, splat, sizeof(splat)),
		   "kernel log: %s", splat);
	FKV_ASSERT(p.ret == 0, "12 MiB put: %s", fkv_strerror(p.ret));
	/* the window was hit: the slide saw the reference gone */
	FKV_ASSERT_GT(fkv_debugfs_u32("compact_freeze_lost"), lost);
	FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h), -ENOENT);
	/*
	 * Every value left whole.  The slide may fall short of the run when
	 * the value it left was freed only after it went on (the release
	 * waits for the lock): then the put evicts for the rest, so a value
	 * may be gone -- a miss, never other bytes.
	 */
	for (i = 0; i < CMP_VALUES; i++) {
		if (off[i] == UINT64_MAX)
			continue;
		cmp_key(key, sizeof(key), i);
		ret = fkv_get(kv, key, strlen(key), &h);
		FKV_ASSERT(ret == 0 || ret == -ENOENT, "get '%s': %s", key,
			   fkv_strerror(ret));
		if (!ret) {
			FKV_ASSERT_PATTERN(h.data, FRAG_LEN, key, strlen(key),
					   i);
			release(kv, &h);
			kept++;
		}
	}
	fkv_diag("%d of %d values still cached", kept, CMP_VALUES / 2 - 1);
	FKV_ASSERT_EQ(fkv_get(kv, "cmp-big", 7, &h), 0);
	FKV_ASSERT_PATTERN(h.data, CMP_BIG, "cmp-big", 7, 7);
	release(kv, &h);
	FKV_ASSERT_EQ(fkv_dev_release(ro, pin_holder), 0);
	for (i = 0; i < CMP_VALUES; i++) {
		if (off[i] == UINT64_MAX)
			continue;
		cmp_key(key, sizeof(key), i);
		delete_any(kv, key);
	}
	delete_key(kv, "cmp-big");

	/* every byte freed once: one extent, and the free MiBs hold values */
	segment_one_free_extent(base, 32 * FKV_MIB);
	n = (32 * FKV_MIB - base) / FKV_MIB;
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "fill-%02" PRIu64, i);
		put_pattern(kv, key, FRAG_LEN, i);
	}
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "fill-%02" PRIu64, i);
		FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h), 0);
		FKV_ASSERT_PATTERN(h.data, FRAG_LEN, key, strlen(key), i);
		release(kv, &h);
	}
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "fill-%02" PRIu64, i);
		delete_any(kv, key);
	}
	free((void *)p.big);
	fkv_close(p.kv);
	close(ro);
	fkv_close(kv);
	teardown(base);
}

/* ---- SSD entries are the putter's memory ---- */

#define CG_ROOT		"/tmp/fkv-cgroup2"
#define CG_DIR		CG_ROOT "/fkv-harden"
#define CG_PUTS		800

static long long cg_stat(const char *field)
{
	FILE *f = fopen(CG_DIR "/memory.stat", "r");
	char line[256];
	size_t n = strlen(field);
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ' ')
			v = strtoll(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

/* In the cgroup: CG_PUTS small values under 200-byte keys, prefix *ARG. */
static void cg_putter(void *arg)
{
	const char *prefix = arg;
	struct fkv *kv = kv_open();
	char key[256];
	int i;

	for (i = 0; i < CG_PUTS; i++) {
		snprintf(key, sizeof(key), "%s-%04d-%0190d", prefix, i, 0);
		put_pattern(kv, key, 512, i);
	}
	fkv_close(kv);
}

/* The cgroup's slab growth over one cg_putter(PREFIX) run in it. */
static long long cg_run(const char *prefix, uint64_t persists)
{
	char pid[32];
	long long slab0 = cg_stat("slab_unreclaimable");

	FKV_ASSERT(slab0 >= 0, "no memory.stat in %s", CG_DIR);
	snprintf(pid, sizeof(pid), "%d\n", getpid());
	FKV_ASSERT_EQ(fkv_write_file(CG_DIR "/cgroup.procs", pid), 0);
	fkv_in_child(cg_putter, (void *)prefix, "puts in the cgroup");
	FKV_ASSERT_EQ(fkv_write_file(CG_ROOT "/cgroup.procs", pid), 0);
	if (persists)
		wait_persists(persists);
	return cg_stat("slab_unreclaimable") - slab0;
}

/*
 * A process in its own memory cgroup puts 800 small values twice: without
 * an SSD tier, then with one that persists them.  The second run's slab
 * exceeds the first by (at least 90 % of) the entries' kernel memory
 * (kv_ssd_meta_bytes): the IO worker allocates them charged to the
 * putter (set_active_memcg()), not to the root cgroup.
 */
FKV_TEST_TIMEOUT(ssd_entries_are_charged_to_the_putters_memory_cgroup, 240)
{
	char dir[256], path[320], key[256];
	long long control, with_ssd;
	uint64_t base, meta0, meta1;
	struct fkv *kv;
	uint32_t shard;
	int i, fd, ret;

	if (!fkv_path_exists(CG_ROOT "/cgroup.controllers")) {
		FKV_ASSERT_EQ(fkv_mkdirs(CG_ROOT), 0);
		if (system("mount -t cgroup2 none " CG_ROOT " 2>/dev/null"))
			FKV_SKIP("cannot mount cgroup2");
	}
	if (fkv_write_file(CG_ROOT "/cgroup.subtree_control", "+memory\n"))
		FKV_SKIP("no memory controller");
	rmdir(CG_DIR);
	FKV_ASSERT(mkdir(CG_DIR, 0755) == 0, "mkdir %s: %s", CG_DIR,
		   strerror(errno));
	ext4_dir("harden-cg", dir, sizeof(dir));
	make_file(dir, "shard", 16 * FKV_MIB, path, sizeof(path));
	base = setup("segment_mb=16");
	kv = kv_open();

	control = cg_run("cga", 0);
	fd = open_shard(path);
	ret = fkv_ssd_attach(kv, fd, 0, 16 * FKV_MIB, 0, &shard);
	close(fd);
	FKV_ASSERT(ret == 0, "attach: %s", fkv_strerror(ret));
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_capacity_bytes", 16 * FKV_MIB);
	fkv_msleep(300);	/* the master hears SSD_STATE */
	meta0 = fkv_sysfs("kv_ssd_meta_bytes");
	with_ssd = cg_run("cgb", persists_done() + CG_PUTS);
	meta1 = fkv_sysfs("kv_ssd_meta_bytes");
	fkv_diag("entries: %" PRIu64 " bytes; the cgroup's slab grew by %lld "
		 "without an SSD tier, %lld with one", meta1 - meta0, control,
		 with_ssd);
	FKV_ASSERT_GT(meta1 - meta0, 200 * 1024);
	FKV_ASSERT(with_ssd - control >= (long long)(meta1 - meta0) * 9 / 10,
		   "the cgroup was charged %lld bytes more for %" PRIu64
		   " bytes of SSD entries", with_ssd - control, meta1 - meta0);
	for (i = 0; i < CG_PUTS; i++) {
		snprintf(key, sizeof(key), "cga-%04d-%0190d", i, 0);
		delete_any(kv, key);
		snprintf(key, sizeof(key), "cgb-%04d-%0190d", i, 0);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);	/* frees the entries */
	rmdir(CG_DIR);
}

/* ---- debugfs on a big table ---- */

#define DUMP_KEYS	1200

/*
 * debugfs `replicas` walks the handle table with a cursor under RCU (no
 * table lock held while printing, a buffer refill resumes): over many
 * buffer-fulls it lists every replica once, and stays whole while puts
 * and deletes go on.
 */
FKV_TEST_TIMEOUT(debugfs_replicas_lists_a_big_table_once_each, 240)
{
	uint64_t base = setup("segment_mb=16"), *seen, handle;
	struct fkv *kv = kv_open();
	char key[32], line[512];
	size_t n = 0, i, j;
	uint8_t buf[64];
	FILE *f;

	for (i = 0; i < DUMP_KEYS; i++) {
		snprintf(key, sizeof(key), "dump-%04zu", i);
		memset(buf, (int)i, sizeof(buf));
		FKV_ASSERT_EQ(fkv_put(kv, key, strlen(key), buf, sizeof(buf),
				      NULL), 0);
	}
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), DUMP_KEYS);
	seen = calloc(DUMP_KEYS + 1, sizeof(*seen));
	FKV_ASSERT(seen);
	f = fopen(FKV_DEBUGFS_DIR "/replicas", "r");
	FKV_ASSERT(f, "debugfs replicas: %s", strerror(errno));
	FKV_ASSERT(fgets(line, sizeof(line), f));
	FKV_ASSERT(!strncmp(line, "handle\t", 7), "header: %s", line);
	while (fgets(line, sizeof(line), f)) {
		FKV_ASSERT_EQ(sscanf(line, "%" SCNx64, &handle), 1);
		for (j = 0; j < n; j++)
			FKV_ASSERT(seen[j] != handle, "handle %#" PRIx64
				   " listed twice", handle);
		FKV_ASSERT(n < DUMP_KEYS, "more lines than replicas");
		seen[n++] = handle;
	}
	fclose(f);
	FKV_ASSERT_EQ(n, DUMP_KEYS);
	free(seen);
	for (i = 0; i < DUMP_KEYS; i++) {
		snprintf(key, sizeof(key), "dump-%04zu", i);
		delete_key(kv, key);
	}
	fkv_close(kv);
	teardown(base);
}

/*
 * A line-by-line reader of a debugfs file through small read()s, so the
 * seq_file stops and resumes its cursor many times.
 */
struct dump_reader {
	int fd;
	char buf[8192];
	size_t have;
};

static void dump_open(struct dump_reader *r, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), FKV_DEBUGFS_DIR "/%s", name);
	r->fd = open(path, O_RDONLY);
	FKV_ASSERT(r->fd >= 0, "%s: %s", path, strerror(errno));
	r->have = 0;
}

/* The next line into @line (NUL-terminated, no newline); false at EOF. */
static bool dump_line(struct dump_reader *r, char *line, size_t len)
{
	char *nl;
	ssize_t n;

	while (!(nl = memchr(r->buf, '\n', r->have))) {
		FKV_ASSERT(r->have < sizeof(r->buf) - 200, "line too long");
		n = read(r->fd, r->buf + r->have, 200);	/* small on purpose */
		FKV_ASSERT(n >= 0, "read: %s", strerror(errno));
		if (!n)
			return false;
		r->have += (size_t)n;
	}
	*nl = '\0';
	FKV_ASSERT((size_t)(nl - r->buf) < len, "line too long");
	memcpy(line, r->buf, (size_t)(nl - r->buf) + 1);
	r->have -= (size_t)(nl + 1 - r->buf);
	memmove(r->buf, nl + 1, r->have);
	return true;
}

#define BIG_SESSIONS	3
#define BIG_HOLDS	400	/* per session */

/*
 * debugfs `holders` and `rings` are seq_files with cursors: read a little
 * at a time while sessions close and rings wrap underneath, every record
 * is listed at most once and what did not change is listed exactly once.
 */
FKV_TEST_TIMEOUT(debugfs_holders_and_rings_resume_their_cursors, 240)
{
	struct fkv_holder *h[BIG_SESSIONS];
	struct fkv *kvs[BIG_SESSIONS], *kv;
	struct dump_reader r;
	uint64_t *ids, base, persisted = 0, id;
	char key[32], line[512], path[320], k[300];
	size_t nids = 0, i, j, entries = 0, entries2;
	int s, pid;
	uint8_t buf[4096];

	base = file_tier("harden-dump", 4 * FKV_MIB, "segment_mb=32", path,
			 sizeof(path), &kv);
	if (fkv_debugfs_segment("size") < 0)
		FKV_SKIP("no debugfs");
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "hold-%zu", i);
		put_pattern(kv, key, 4096, i);
		wait_persists(++persisted);
	}
	for (s = 0; s < BIG_SESSIONS; s++) {
		kvs[s] = kv_open();
		h[s] = calloc(BIG_HOLDS, sizeof(*h[s]));
		FKV_ASSERT(h[s]);
		for (i = 0; i < BIG_HOLDS; i++) {
			snprintf(key, sizeof(key), "hold-%zu", i % 8);
			FKV_ASSERT_EQ(fkv_get(kvs[s], key, strlen(key),
					      &h[s][i]), 0);
		}
	}
	FKV_ASSERT_EQ(fkv_sysfs("holders"), BIG_SESSIONS * BIG_HOLDS);

	/* holders: the last session closes halfway through the listing */
	ids = calloc(BIG_SESSIONS * BIG_HOLDS, sizeof(*ids));
	FKV_ASSERT(ids);
	dump_open(&r, "holders");
	FKV_ASSERT(dump_line(&r, line, sizeof(line)));
	FKV_ASSERT(!strncmp(line, "pid\t", 4), "header: %s", line);
	while (dump_line(&r, line, sizeof(line))) {
		FKV_ASSERT_EQ(sscanf(line, "%d\t%" SCNu64, &pid, &id), 2);
		for (j = 0; j < nids; j++)
			FKV_ASSERT(ids[j] != id, "holder %" PRIu64
				   " listed twice", id);
		FKV_ASSERT(nids < BIG_SESSIONS * BIG_HOLDS, "too many lines");
		ids[nids++] = id;
		if (nids == BIG_HOLDS / 2) {
			fkv_close(kvs[BIG_SESSIONS - 1]);
			kvs[BIG_SESSIONS - 1] = NULL;
		}
	}
	close(r.fd);
	/* every holder of the sessions still open, once each */
	for (s = 0; s < BIG_SESSIONS - 1; s++)
		for (i = 0; i < BIG_HOLDS; i++) {
			for (j = 0; j < nids && ids[j] != h[s][i].id; j++)
				;
			FKV_ASSERT(j < nids, "holder %" PRIu64 " missing",
				   h[s][i].id);
		}
	printf("# holders: %zu listed, %d held to the end\n", nids,
	       (BIG_SESSIONS - 1) * BIG_HOLDS);

	/* rings: 4 KiB values in a 4 MiB ring, wrapping during the listing */
	memset(buf, 'r', sizeof(buf));
	for (i = 0; i < 600; i++) {
		snprintf(key, sizeof(key), "ring-%04zu", i);
		FKV_ASSERT_EQ(fkv_put(kv, key, strlen(key), buf, sizeof(buf),
				      NULL), 0);
		wait_persists(++persisted);
	}
	free(ids);
	ids = calloc(4096, sizeof(*ids));	/* put_ids seen */
	FKV_ASSERT(ids);
	nids = 0;
	dump_open(&r, "rings");
	while (dump_line(&r, line, sizeof(line))) {
		uint64_t off, len, alen, put_id;
		unsigned int pins;
		int routed;
		char state[32];

		if (line[0] != '\t' || line[1] == 'o')
			continue;	/* device / shard lines, headers */
		FKV_ASSERT_EQ(sscanf(line, "\t%" SCNu64 "\t%" SCNu64 "\t%"
				     SCNu64 "\t%31s\t%u\t%" SCNu64 "\t%d\t%299s",
				     &off, &len, &alen, state, &pins, &put_id,
				     &routed, k), 8);
		for (j = 0; j < nids; j++)
			FKV_ASSERT(ids[j] != put_id, "entry %s %" PRIu64
				   " listed twice", k, put_id);
		FKV_ASSERT(nids < 4096);
		ids[nids++] = put_id;
		if (nids == 100)	/* the tail moves past the cursor */
			for (i = 600; i < 1400; i++) {
				snprintf(key, sizeof(key), "ring-%04zu", i);
				FKV_ASSERT_EQ(fkv_put(kv, key, strlen(key),
						      buf, sizeof(buf), NULL),
					      0);
				wait_persists(++persisted);
			}
	}
	close(r.fd);
	entries = nids;
	/* quiet now: two listings agree, and each key appears once */
	for (s = 0; s < 2; s++) {
		entries2 = 0;
		dump_open(&r, "rings");
		while (dump_line(&r, line, sizeof(line)))
			if (line[0] == '\t' && line[1] != 'o')
				entries2++;
		close(r.fd);
		if (!s)
			entries = entries2;
		else
			FKV_ASSERT_EQ(entries2, entries);
	}
	printf("# rings: %zu entries listed across a wrap, %zu at rest\n",
	       nids, entries);
	FKV_ASSERT_GT(entries, 500);
	FKV_ASSERT(entries <= 1024, "%zu entries in a 4 MiB ring", entries);
	free(ids);

	for (s = 0; s < BIG_SESSIONS; s++) {
		if (kvs[s])
			fkv_close(kvs[s]);
		free(h[s]);
	}
	for (i = 0; i < 8; i++) {
		snprintf(key, sizeof(key), "hold-%zu", i);
		delete_any(kv, key);
	}
	for (i = 0; i < 1400; i++) {
		snprintf(key, sizeof(key), "ring-%04zu", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
}

struct churn {
	volatile bool stop;
	uint64_t rounds;
};

/* Put and delete a few keys as fast as possible: route removals. */
static void *churn_keys(void *arg)
{
	struct churn *c = arg;
	struct fkv *kv = kv_open();
	uint8_t v[64] = { 1 };
	char key[16];

	while (!c->stop) {
		snprintf(key, sizeof(key), "churn-%" PRIu64, c->rounds % 4);
		if (fkv_put(kv, key, strlen(key), v, sizeof(v), NULL) == 0)
			fkv_delete(kv, key, strlen(key));
		c->rounds++;
	}
	fkv_close(kv);
	return NULL;
}

#define UNSURE_PHASES	8
#define UNSURE_ROUNDS	25	/* churn rounds each phase overlaps */

/*
 * A local miss is trusted unless a route of a key in its own bucket (1 in
 * 1024, seeded) changed during the look: puts and deletes of other keys
 * running all the time do not send misses to the master.  (With one
 * bracket for all keys, every phase here had unsure misses.)
 */
FKV_TEST_TIMEOUT(route_changes_of_other_keys_leave_local_misses_sure, 180)
{
	uint64_t base, u0, m0, r0, gets;
	struct churn c = { 0 };
	struct fkv_holder h;
	unsigned int p, quiet = 0;
	struct fkv *kv;
	pthread_t th;
	char key[32];

	base = setup("segment_mb=32");
	kv = kv_open();
	FKV_ASSERT_EQ(pthread_create(&th, NULL, churn_keys, &c), 0);
	for (p = 0; p < UNSURE_PHASES; p++) {
		snprintf(key, sizeof(key), "never-put-%u", p);
		u0 = fkv_sysfs("local_unsure");
		m0 = fkv_sysfs("local_misses");
		r0 = c.rounds;
		/* misses for as long as the churn puts and deletes a while */
		for (gets = 0; c.rounds - r0 < UNSURE_ROUNDS; gets++) {
			FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h),
				      -ENOENT);
			FKV_ASSERT(gets < 2000000, "the churn stalled");
		}
		u0 = fkv_sysfs("local_unsure") - u0;
		m0 = fkv_sysfs("local_misses") - m0;
		printf("# phase %u: %" PRIu64 " gets over %" PRIu64
		       " churn rounds: %" PRIu64 " local misses, %" PRIu64
		       " unsure\n", p, gets, c.rounds - r0, m0, u0);
		FKV_ASSERT_EQ(m0 + u0, gets);
		if (!u0)
			quiet++;
	}
	c.stop = true;
	pthread_join(th, NULL);
	printf("# %" PRIu64 " churn rounds, %u of %u phases without an unsure miss\n",
	       c.rounds, quiet, UNSURE_PHASES);
	/* a phase key sharing a churn key's bucket is unlucky: 4 in 1024 */
	FKV_ASSERT(quiet >= UNSURE_PHASES - 2, "%u phases had unsure misses",
		   UNSURE_PHASES - quiet);
	fkv_close(kv);
	teardown(base);
}
