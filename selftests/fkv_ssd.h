/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fkv_ssd.h - the SSD tier's test environment, shared by the selftests
 * that attach shards (test_ssd, test_stage): the scratch disks
 * `tools/vm/run --disk` gives the guest (make vm-test passes ssd0:1G
 * ssd1:512M ssd2:256M; a test whose disk is missing skips), shard files,
 * device-mapper targets over ssd2, the module's persist counters and its
 * debugfs `rings` view.
 *
 *   ssd0  ext4, mounted once under FKV_SCRATCH_DIR: shard files
 *   ssd1  used raw as a block device shard
 *   ssd2  under device-mapper, so its IO can be made to fail or slow
 *
 * Include after fkv_env.h and fkv_kv.h.  A program that wants another
 * bound on wait_persists() defines FKV_PERSIST_WAIT_S (seconds) first.
 */
#ifndef FKV_SSD_H
#define FKV_SSD_H

#include <stdarg.h>

#define DISK_EXT4	"ssd0"
#define DISK_RAW	"ssd1"
#define DISK_DM		"ssd2"
#define EXT4_MNT	FKV_SCRATCH_DIR "/" DISK_EXT4
/* Where dm_create() and dm_swap() write the table they load. */
#define DM_TABLE_FILE	"/tmp/fkv-selftest-dm.table"

#define KIB		1024ULL
/* The bytes a value of LEN takes in the ring. */
#define SSD_ALEN(len)	(((uint64_t)(len) + FLUXONKV_SSD_ALIGN - 1) &	\
			 ~(uint64_t)(FLUXONKV_SSD_ALIGN - 1))

#ifndef FKV_PERSIST_WAIT_S
#define FKV_PERSIST_WAIT_S	10
#endif

/* ---- SSD counters --------------------------------------------------------- */

/* Persists that ended: committed (published or not) or failed. */
static inline uint64_t persists_done(void)
{
	return fkv_sysfs("ssd_commits_published") +
	       fkv_sysfs("ssd_commits_ignored") +
	       fkv_sysfs("ssd_persist_errors");
}

/* Wait up to FKV_PERSIST_WAIT_S for N persists in total to have ended. */
static inline void wait_persists(uint64_t n)
{
	int64_t end = fkv_now_ms() + FKV_PERSIST_WAIT_S * 1000;
	uint64_t done;

	while ((done = persists_done()) < n) {
		if (fkv_now_ms() > end)
			FKV_FAIL_AT(1, "%" PRIu64 " of %" PRIu64 " SSD persists "
				    "ended in %d s (ssd_writes %" PRIu64
				    ", busy waits %" PRIu64 ")", done, n,
				    FKV_PERSIST_WAIT_S,
				    fkv_sysfs("ssd_writes"),
				    fkv_sysfs("ssd_busy_waits"));
		fkv_msleep(5);
	}
}

/* ---- scratch storage ------------------------------------------------------ */

/* The scratch disk NAME as /dev/disk/by-id/virtio-NAME; skips if absent. */
static inline void scratch_disk(const char *name, const char *size,
				char *path, size_t len)
{
	if (fkv_scratch_disk(name, path, len))
		FKV_SKIP("no scratch disk %s: run the guest with "
			 "tools/vm/run --disk %s:%s", name, name, size);
}

/* A fresh directory NAME on the ext4 of ssd0 (made and mounted once). */
static inline void ext4_dir(const char *name, char *dir, size_t len)
{
	char disk[128];

	scratch_disk(DISK_EXT4, "1G", disk, sizeof(disk));
	FKV_ASSERT_EQ(fkv_scratch_ext4(disk, EXT4_MNT), 0);
	snprintf(dir, len, EXT4_MNT "/%s", name);
	FKV_ASSERT_EQ(fkv_rm_rf(dir), 0);
	FKV_ASSERT_EQ(fkv_mkdirs(dir), 0);
}

/* Create DIR/NAME of SIZE bytes (sparse, zeros); its path in path. */
static inline void make_file(const char *dir, const char *name, uint64_t size,
			     char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FKV_ASSERT(fd >= 0, "create %s: %s", path, strerror(errno));
	FKV_ASSERT(ftruncate(fd, (off_t)size) == 0, "truncate %s: %s", path,
		   strerror(errno));
	close(fd);
}

/* PATH opened O_RDWR | O_DIRECT, as shards must be. */
static inline int open_shard(const char *path)
{
	int fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);

	FKV_ASSERT(fd >= 0, "open %s O_DIRECT: %s", path, strerror(errno));
	return fd;
}

/* ---- the rings, behind the module's back -------------------------------- */

/*
 * KEY's newest committed entry's offset in its shard, or -1.  debugfs
 * shows at most the first 64 bytes of a key.
 */
#define RINGS_KEY_SHOWN	64
static inline long long ring_offset(const char *key)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/rings", "r");
	char line[1024], state[16], k[FLUXONKV_KEY_MAX + 1];
	unsigned long long off, len, alen, put_id;
	long long found = -1;
	unsigned int pins;
	int r;

	FKV_ASSERT(f, "debugfs rings: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "\t%llu\t%llu\t%llu\t%15s\t%u\t%llu\t%d\t%256s",
			   &off, &len, &alen, state, &pins, &put_id, &r,
			   k) == 8 &&
		    !strncmp(k, key, RINGS_KEY_SHOWN) &&
		    strlen(k) == (strlen(key) < RINGS_KEY_SHOWN ?
				  strlen(key) : RINGS_KEY_SHOWN) &&
		    !strcmp(state, "committed"))
			found = (long long)off;
	fclose(f);
	return found;
}

/* Flip one byte at OFF of the file PATH behind the module's back. */
static inline void corrupt_byte(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	uint8_t b;

	FKV_ASSERT(fd >= 0, "open %s: %s", path, strerror(errno));
	FKV_ASSERT_EQ(pread(fd, &b, 1, (off_t)off), 1);
	b ^= 0x40;
	FKV_ASSERT_EQ(pwrite(fd, &b, 1, (off_t)off), 1);
	FKV_ASSERT_EQ(fsync(fd), 0);
	close(fd);
}

/* ---- device-mapper over ssd2 ---------------------------------------------- */

/* dmsetup ARGS... (NULL-terminated); its exit status, output shown. */
static inline int dmsetup(bool quiet, ...)
{
	char *argv[16], out[2048];
	const char *arg;
	va_list ap;
	int argc = 0, ret;

	argv[argc++] = (char *)"dmsetup";
	argv[argc++] = (char *)"--noudevsync";
	va_start(ap, quiet);
	while ((arg = va_arg(ap, const char *)) && argc < 15)
		argv[argc++] = (char *)arg;
	va_end(ap);
	argv[argc] = NULL;
	ret = fkv_env_run(argv, out, sizeof(out));
	if (ret && !quiet) {
		fkv_diag("dmsetup %s failed (status %d):", argv[2], ret);
		fkv_diag_text("  ", out);
	}
	return ret;
}

/*
 * ssd2 for device-mapper: skips without the disk, dmsetup or dm-mod (and
 * TARGET's module, if not NULL).  Its "major:minor" in devno, its size in
 * 512-byte sectors returned.
 */
static inline uint64_t dm_disk(const char *target, char *devno, size_t n)
{
	char disk[128], real[256], path[300];
	uint64_t sectors;
	struct stat st;
	FILE *f;

	scratch_disk(DISK_DM, "256M", disk, sizeof(disk));
	if (system("command -v dmsetup >/dev/null 2>&1"))
		FKV_SKIP("dmsetup is not installed (Debian package: dmsetup)");
	if (fkv_modprobe("dm-mod") || !fkv_path_exists("/dev/mapper/control"))
		FKV_SKIP("device-mapper (dm-mod) is not available");
	if (target && fkv_modprobe(target))
		FKV_SKIP("the device-mapper target %s is not available",
			 target);
	/* no udev in the guest: libdevmapper makes the /dev/mapper nodes */
	setenv("DM_DISABLE_UDEV", "1", 1);
	FKV_ASSERT(realpath(disk, real), "realpath %s: %s", disk,
		   strerror(errno));
	FKV_ASSERT_EQ(stat(real, &st), 0);
	snprintf(path, sizeof(path), "/sys/class/block/%s/size",
		 strrchr(real, '/') + 1);
	f = fopen(path, "r");
	FKV_ASSERT(f && fscanf(f, "%" SCNu64, &sectors) == 1, "%s", path);
	fclose(f);
	snprintf(devno, n, "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	return sectors;
}

/*
 * Create dm device NAME with TABLE (may have several lines), removing a
 * previous NAME first.  Call after setup(): a module a failed test left
 * behind may hold the previous one.
 */
static inline void dm_create(const char *name, const char *table)
{
	char path[128];

	dmsetup(true, "remove", name, NULL);
	FKV_ASSERT_EQ(fkv_write_file(DM_TABLE_FILE, table), 0);
	FKV_ASSERT_EQ(dmsetup(false, "create", name, DM_TABLE_FILE, NULL), 0);
	snprintf(path, sizeof(path), "/dev/mapper/%s", name);
	FKV_ASSERT(fkv_path_exists(path), "%s missing", path);
}

/* Swap NAME's table: suspend, load TABLE, resume. */
static inline void dm_swap(const char *name, const char *table)
{
	FKV_ASSERT_EQ(fkv_write_file(DM_TABLE_FILE, table), 0);
	FKV_ASSERT_EQ(dmsetup(false, "suspend", name, NULL), 0);
	FKV_ASSERT_EQ(dmsetup(false, "load", name, DM_TABLE_FILE, NULL), 0);
	FKV_ASSERT_EQ(dmsetup(false, "resume", name, NULL), 0);
}

/* Unload the module (it holds the dm device), then remove NAME. */
static inline void dm_remove(const char *name)
{
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
	FKV_ASSERT_EQ(dmsetup(false, "remove", name, NULL), 0);
}

/* ---- debugfs `rings` ------------------------------------------------------ */

/* Shards in debugfs `rings` (offline ones too); -1 without debugfs. */
static inline int rings_shards(void)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/rings", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "shard ", 6))
			n++;
	fclose(f);
	return n;
}

/*
 * Pins of KEY's ring entry in debugfs `rings` (read pins + commit pin):
 * of version WANT, or of the newest entry if WANT is 0; -1 if there is
 * none, -2 without debugfs.  *parked (may be NULL) gets the first
 * device's writes_parked, *routed (may be NULL) the entry's routed flag.
 */
static inline int ring_entry(const char *key, uint64_t want, int *parked,
			     int *routed)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/rings", "r");
	char line[512], state[16], k[128];
	unsigned long long off, len, alen, put_id;
	unsigned int pins;
	int ret = -1, p, r;
	char *s;

	if (!f)
		return -2;
	while (fgets(line, sizeof(line), f)) {
		if (parked && (s = strstr(line, "writes_parked ")) &&
		    sscanf(s, "writes_parked %d", &p) == 1) {
			*parked = p;
			parked = NULL;
		}
		if (sscanf(line, "\t%llu\t%llu\t%llu\t%15s\t%u\t%llu\t%d\t%127s",
			   &off, &len, &alen, state, &pins, &put_id, &r,
			   k) == 8 &&
		    !strcmp(k, key) && (!want || put_id == want)) {
			ret = (int)pins;
			if (routed)
				*routed = r;
		}
	}
	fclose(f);
	return ret;
}

/*
 * Wait up to 3 s for a pin on KEY's ring entry (version WANT, 0: the
 * newest): a read of it on the device.  Returns its pins, or -2 without
 * debugfs, after GRACE_MS then (time for the read to start).  WHO names
 * the entry in the failure.
 */
static inline int wait_ring_pinned(const char *key, uint64_t want,
				   unsigned int grace_ms, const char *who)
{
	int64_t end = fkv_now_ms() + 3000;
	int pins;

	while ((pins = ring_entry(key, want, NULL, NULL)) == 0 &&
	       fkv_now_ms() < end)
		fkv_msleep(2);
	if (pins == -2)
		fkv_msleep(grace_ms);	/* no debugfs: give the read time */
	else
		FKV_ASSERT(pins > 0, "%s's ring entry: pins %d", who, pins);
	return pins;
}

/*
 * With an entry X pinned and the ring's room for N - 1 more values of
 * VLEN: put PREFIX-w1..wN (salts 10 + i, put_ids in ids[1..N]); the first
 * N - 1 persist (PERSISTS persists ended before them), the Nth must wait
 * for X (ssd_busy_waits past BUSY0 within 3 s).  Returns persists_done().
 */
static inline uint64_t put_writers_until_busy(struct fkv *kv,
					      const char *prefix, int n,
					      size_t vlen, uint64_t *ids,
					      uint64_t persists,
					      uint64_t busy0)
{
	uint64_t busy;
	char key[32];
	int i;

	for (i = 1; i <= n; i++) {
		snprintf(key, sizeof(key), "%s-w%d", prefix, i);
		ids[i] = put_pattern(kv, key, vlen, 10 + i);
	}
	wait_persists(persists + n - 1);
	if (fkv_sysfs_wait("ssd_busy_waits", busy0 + 1, 3000, &busy))
		FKV_FAIL_AT(1, "ssd_busy_waits %" PRIu64 ": W%d did not wait "
			    "for the pinned X", busy, n);
	return persists_done();
}

/* ---- a shard taken offline by IO errors ---------------------------------- */

#define SSD_OFFLINE_ERRORS	32	/* FLUXONKV_SSD_OFFLINE_ERRORS */

/*
 * The shard under the persists fails every IO now: put 4 KiB values
 * PREFIX-0, -1, ... (salt i), each persist waited for (*PERSISTED counts
 * them), until a shard is offline; returns how many it took.
 */
static inline int put_until_offline(struct fkv *kv, const char *prefix,
				    uint64_t *persisted)
{
	char key[64];
	int i;

	for (i = 0; fkv_sysfs("ssd_shards_offline") == 0; i++) {
		FKV_ASSERT(i < SSD_OFFLINE_ERRORS + 8, "%d failed persists, "
			   "shard still online (%" PRIu64 " IO errors)", i,
			   fkv_sysfs("ssd_io_errors"));
		snprintf(key, sizeof(key), "%s-%d", prefix, i);
		put_pattern(kv, key, 4096, i);
		wait_persists(++*persisted);
	}
	return i;
}

/* Delete what put_until_offline(KV, PREFIX) may have put. */
static inline void delete_put_until_offline(struct fkv *kv, const char *prefix)
{
	char key[64];
	int i;

	for (i = 0; i < SSD_OFFLINE_ERRORS + 8; i++) {
		snprintf(key, sizeof(key), "%s-%d", prefix, i);
		delete_any(kv, key);
	}
}


/* ---- values through libfluxonkv (include after fkv_kv.h) ------------------- */

/* H holds version put_id of KEY: the pattern of (len, salt), in the map. */
static inline void check_holder(struct fkv *kv, const struct fkv_holder *h,
				const char *key, size_t len, uint64_t salt,
				uint64_t put_id)
{
	const uint8_t *base = fkv_segment_base(kv);
	const uint8_t *data = h->data;

	FKV_ASSERT(h->put_id == put_id, "'%s': put_id %" PRIu64 ", want %"
		   PRIu64, key, h->put_id, put_id);
	FKV_ASSERT(h->len == len, "'%s': %zu bytes, want %zu", key, h->len,
		   len);
	FKV_ASSERT(data >= base && data + len <= base + fkv_segment_size(kv),
		   "'%s': holder data %p outside the mapping", key, h->data);
	FKV_ASSERT(h->source == FLUXONKV_SOURCE_MEMORY ||
		   h->source == FLUXONKV_SOURCE_SSD, "'%s': source %u", key,
		   h->source);
	FKV_ASSERT_PATTERN(data, len, key, strlen(key), salt);
}

/* get KEY, which must hit version put_id; returns its source. */
static inline unsigned int get_check(struct fkv *kv, const char *key,
				     size_t len, uint64_t salt,
				     uint64_t put_id, struct fkv_holder *h)
{
	int ret = fkv_get(kv, key, strlen(key), h);

	FKV_ASSERT(ret == 0, "get '%s': %s", key, fkv_strerror(ret));
	check_holder(kv, h, key, len, salt, put_id);
	return h->source;
}

/* Attach [offset, offset + capacity) of PATH through libfluxonkv. */
static inline uint32_t attach_file(struct fkv *kv, const char *path,
				   uint64_t offset, uint64_t capacity)
{
	int fd = open_shard(path), ret;
	uint32_t shard = UINT32_MAX;

	ret = fkv_ssd_attach(kv, fd, offset, capacity, 0, &shard);
	close(fd);
	FKV_ASSERT(ret == 0, "attach %s [%" PRIu64 ", +%" PRIu64 "): %s",
		   path, offset, capacity, fkv_strerror(ret));
	return shard;
}

#endif /* FKV_SSD_H */
