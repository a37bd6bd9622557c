// SPDX-License-Identifier: GPL-2.0
/*
 * test_ssd - the SSD tier end to end: fluxonkv.ko + fluxond + fluxonctl on
 * the scratch disks `tools/vm/run --disk` gives the guest (make vm-test
 * passes ssd0:1G ssd1:512M ssd2:256M; a test whose disk is missing skips).
 *
 *   ssd0  ext4, mounted once under FKV_SCRATCH_DIR: shard files
 *   ssd1  used raw as a block device shard
 *   ssd2  under device-mapper, so its IO can be made to fail or slow
 *
 * Values are patterns of (key, length, salt) checked byte for byte through
 * the read-only segment mapping: whichever tier serves a get, it returns
 * exactly the bytes of the version it names, or it misses.  SSD writes are
 * asynchronous (after PUT_DONE), so tests wait for the module's persist
 * counters before they depend on a copy being on the SSD.
 */
#include <linux/capability.h>
#include <pthread.h>
#include <sys/syscall.h>

#include <liburing.h>

#include <fluxonkv.h>

#include "fkv_env.h"
#include "fkv_kv.h"
#include "fkv_ssd.h"

#define CLUSTER		"selftest"
#define INSTANCE	"vm"
#define SHARD0		CLUSTER "_cluster_kv_ssd_storage/" INSTANCE "/shard-000.dat"

/* ---- values ---- */

/*
 * The rest of the last segment granule of H is zero: a refill never shows
 * bytes of another value (or the device's) past len.
 */
static void check_padding(const struct fkv_holder *h, const char *key)
{
	const uint8_t *p = (const uint8_t *)h->data + h->len;
	size_t pad = FKV_ALIGN_UP(h->len) - h->len, i;

	for (i = 0; i < pad; i++)
		FKV_ASSERT(p[i] == 0, "'%s' (%zu bytes, source %u): padding "
			   "byte %zu is %#x", key, h->len, h->source, i, p[i]);
}

/* A get of KEY must miss cleanly. */
static void get_miss(struct fkv *kv, const char *key)
{
	struct fkv_holder h;
	int ret = fkv_get(kv, key, strlen(key), &h);

	FKV_ASSERT(ret == -ENOENT, "get '%s': want ENOENT, got %s (put_id %"
		   PRIu64 ", source %u)", key, ret ? fkv_strerror(ret) : "a hit",
		   h.put_id, h.source);
}

/* ---- shards and configurations ---- */

/* A fluxonkv_spec naming one large_file_paths entry and its limit. */
static void write_config(const char *cfg, const char *path,
			 const char *limit)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "# written by selftests/test_ssd\n"
		 "fluxonkv_spec:\n"
		 "  cluster_name: " CLUSTER "\n"
		 "  instance: " INSTANCE "\n"
		 "  large_file_paths: [%s]\n"
		 "  large_limit_size: [\"%s\"]\n", path, limit);
	FKV_ASSERT_EQ(fkv_mkdirs(FKV_SCRATCH_DIR), 0);
	FKV_ASSERT_EQ(fkv_write_file(cfg, text), 0);
}

/* `fluxonctl config check --json CFG` says valid, with KIND, one shard. */
static void config_check(const char *cfg, const char *kind)
{
	char out[4096], want[64];
	int ret = fkv_ctl(out, sizeof(out), "config", "check", "--json", cfg,
			  NULL);

	snprintf(want, sizeof(want), "\"kind\":\"%s\"", kind);
	if (ret || !strstr(out, "\"valid\":true") || !strstr(out, want) ||
	    !strstr(out, "\"shards\":1,")) {
		fkv_diag("fluxonctl config check --json %s (status %d):", cfg,
			 ret);
		fkv_diag_text("  ", out);
		FKV_FAIL_AT(1, "want a valid plan with one %s shard", kind);
	}
}

/* `fluxonctl config attach CFG` must succeed. */
static void config_attach(const char *cfg)
{
	char out[4096];
	int ret = fkv_ctl(out, sizeof(out), "config", "attach", cfg, NULL);

	if (ret) {
		fkv_diag("fluxonctl config attach %s (status %d):", cfg, ret);
		fkv_diag_text("  ", out);
	}
	FKV_ASSERT_EQ(ret, 0);
}

/* ---- 1. attach validation ---- */

enum unpriv { UNPRIV_NO_CAP_SYS_ADMIN, UNPRIV_NOBODY };

/*
 * Attach SHARD_FD through DEV from a child that lacks CAP_SYS_ADMIN (root
 * without it in its effective set, or uid nobody); returns -errno or 0.
 */
static int attach_unprivileged(int dev, int shard_fd, enum unpriv how)
{
	int status, ret;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (pid == 0) {
		if (how == UNPRIV_NOBODY) {
			if (setgid(65534) || setuid(65534))
				_exit(200);
		} else {
			struct __user_cap_header_struct hdr = {
				.version = _LINUX_CAPABILITY_VERSION_3,
			};
			struct __user_cap_data_struct data[2];

			if (syscall(SYS_capget, &hdr, data))
				_exit(201);
			data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &=
				~CAP_TO_MASK(CAP_SYS_ADMIN);
			if (syscall(SYS_capset, &hdr, data))
				_exit(202);
		}
		ret = fkv_dev_ssd_attach(dev, shard_fd, 0, 4 * FKV_MIB, 0, NULL);
		_exit(ret < 0 ? -ret : 0);
	}
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) < 200,
		   "unprivileged child failed to set up (status %#x)", status);
	return -WEXITSTATUS(status);
}

/* The raw ioctl with a caller-built struct; 0 or -errno. */
static int attach_raw(int dev, struct fluxonkv_ssd_attach *a)
{
	return ioctl(dev, FLUXONKV_IOC_SSD_ATTACH, a) ? -errno : 0;
}

FKV_TEST(attach_validates_privilege_descriptor_range_and_overlap)
{
	struct fluxonkv_ssd_attach good = {
		.size = sizeof(good), .capacity = 4 * FKV_MIB,
	}, a;
	struct {
		struct fluxonkv_ssd_attach a;
		uint64_t tail;
	} big;
	char dir[256], pa[300], pb[300];
	uint32_t shard = UINT32_MAX;
	int dev, fa, fa2, fb, fd, closed;

	ext4_dir("attach", dir, sizeof(dir));
	FKV_LOAD("segment_mb=8");
	make_file(dir, "a", 8 * FKV_MIB, pa, sizeof(pa));
	make_file(dir, "b", 4 * FKV_MIB, pb, sizeof(pb));
	dev = fkv_dev_open();
	FKV_ASSERT(dev >= 0, "open %s: %s", FKV_DEV_PATH, strerror(errno));
	fa = open_shard(pa);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 0);

	/* privilege comes first: a valid request without CAP_SYS_ADMIN */
	FKV_ASSERT_EQ(attach_unprivileged(dev, fa, UNPRIV_NO_CAP_SYS_ADMIN),
		      -EPERM);
	FKV_ASSERT_EQ(attach_unprivileged(dev, fa, UNPRIV_NOBODY), -EPERM);

	/* descriptors */
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, -1, 0, 4 * FKV_MIB, 0, &shard),
		      -EBADF);
	closed = dup(fa);
	FKV_ASSERT(closed >= 0);
	close(closed);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, closed, 0, 4 * FKV_MIB, 0,
					 &shard), -EBADF);
	fd = open(pa, O_RDONLY | O_DIRECT | O_CLOEXEC);
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fd, 0, 4 * FKV_MIB, 0, &shard),
		      -EBADF);
	close(fd);
	fd = open(pa, O_WRONLY | O_DIRECT | O_CLOEXEC);
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fd, 0, 4 * FKV_MIB, 0, &shard),
		      -EBADF);
	close(fd);
	fd = open(pa, O_RDWR | O_CLOEXEC);		/* no O_DIRECT */
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fd, 0, 4 * FKV_MIB, 0, &shard),
		      -EINVAL);
	close(fd);
	fd = open("/dev/null", O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fd, 0, 4 * FKV_MIB, 0, &shard),
		      -EINVAL);
	close(fd);

	/* capacity and offset */
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 0, 0, 0, &shard), -EINVAL);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 0, 4 * FKV_MIB + 512, 0,
					 &shard), -EINVAL);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 0, FKV_MIB - 4096, 0,
					 &shard), -EINVAL);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 512, 4 * FKV_MIB, 0,
					 &shard), -EINVAL);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 0, 8 * FKV_MIB + 4096, 0,
					 &shard), -ENOSPC);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 4 * FKV_MIB,
					 4 * FKV_MIB + 4096, 0, &shard),
		      -ENOSPC);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 8 * FKV_MIB, FKV_MIB, 0,
					 &shard), -ENOSPC);
	/* offset + capacity wrapping around is never "inside the file" */
	FKV_ASSERT_LT(fkv_dev_ssd_attach(dev, fa, UINT64_MAX - 4095, FKV_MIB,
					 0, &shard), 0);

	/* the struct: flags, reserved fields, size */
	good.fd = fa;
	a = good;
	a.flags = 1;
	FKV_ASSERT_EQ(attach_raw(dev, &a), -EINVAL);
	a = good;
	a.reserved0 = 1;
	FKV_ASSERT_EQ(attach_raw(dev, &a), -EINVAL);
	a = good;
	a.reserved[0] = 1;
	FKV_ASSERT_EQ(attach_raw(dev, &a), -EINVAL);
	a = good;
	a.reserved[1] = 1;
	FKV_ASSERT_EQ(attach_raw(dev, &a), -EINVAL);
	a = good;
	a.size = FLUXONKV_SSD_ATTACH_SIZE_VER0 - 8;
	FKV_ASSERT_EQ(attach_raw(dev, &a), -EINVAL);
	memset(&big, 0, sizeof(big));
	big.a = good;
	big.a.size = sizeof(big);
	big.tail = 1;
	FKV_ASSERT_EQ(attach_raw(dev, &big.a), -E2BIG);
	/* nothing of that was attached */
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 0);

	/* successes number the shards 0, 1, ...; overlaps are refused */
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 0, 4 * FKV_MIB, 0, &shard),
		      0);
	FKV_ASSERT_EQ(shard, 0);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 4 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 0, 4 * FKV_MIB, 0, &shard),
		      -EEXIST);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa, 2 * FKV_MIB, 4 * FKV_MIB, 0,
					 &shard), -EEXIST);
	/* the same file through another open, overlapping by one page */
	fa2 = open_shard(pa);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa2, 4 * FKV_MIB - 4096,
					 4 * FKV_MIB, 0, &shard), -EEXIST);
	/* the adjacent range is free */
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fa2, 4 * FKV_MIB, 4 * FKV_MIB, 0,
					 &shard), 0);
	FKV_ASSERT_EQ(shard, 1);
	close(fa2);

	/* the minimum size, then the rest of the file up to its very end;
	 * the descriptor may be closed at once */
	fb = open_shard(pb);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fb, 0, FKV_MIB, 7, &shard), 0);
	FKV_ASSERT_EQ(shard, 2);
	close(fb);
	fb = open_shard(pb);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fb, FKV_MIB, 3 * FKV_MIB, 7,
					 &shard), 0);
	FKV_ASSERT_EQ(shard, 3);
	close(fb);

	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 12 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), 0);
	if (rings_shards() >= 0)
		FKV_ASSERT_EQ(rings_shards(), 4);
	close(fa);
	close(dev);
}

/* ---- 2. ext4 shard files from a configuration ---- */

#define WS_KEYS		32	/* ~32 MiB: twice the 16 MiB segment */
#define WS_CHURN	20

static size_t ws_len(int i)
{
	return FKV_MIB - 777 + (size_t)i * 1237;
}

static void ws_key(char *buf, size_t n, int i)
{
	snprintf(buf, n, "ws-%02d", i);
}

FKV_TEST_TIMEOUT(ext4_tier_persists_then_refills_every_key_and_promotes, 240)
{
	const size_t l1 = 3 * FKV_MIB + 5, la2 = FKV_MIB + 12345;
	uint64_t base, id1, ids[WS_KEYS], ida2, alens = 0, ssd0, reads0, prom0;
	char dir[256], cfg[300], shard[400], key[32];
	struct fkv_holder h, h2, ha, hb;
	int perm[WS_KEYS], i, j, a = -1, b = -1, nssd = 0;
	uint64_t rnd = 0x5eed;
	struct stat st;
	struct fkv *kv;

	FKV_REQUIRE_FLUXONCTL();
	ext4_dir("tier", dir, sizeof(dir));
	base = setup("segment_mb=16");

	/* the daemon is up: it learns the new capacity from SSD_STATE */
	snprintf(cfg, sizeof(cfg), FKV_SCRATCH_DIR "/tier.yaml");
	write_config(cfg, dir, "256MB");
	config_check(cfg, "dir");
	config_attach(cfg);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 256 * FKV_MIB);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), 0);
	snprintf(shard, sizeof(shard), "%s/" SHARD0, dir);
	FKV_ASSERT(stat(shard, &st) == 0, "%s: %s", shard, strerror(errno));
	FKV_ASSERT_EQ(st.st_size, 256 * FKV_MIB);

	/* one value: readable from DRAM at once, on the SSD right after */
	kv = kv_open();
	id1 = put_pattern(kv, "one", l1, 1);
	FKV_ASSERT_EQ(get_check(kv, "one", l1, 1, id1, &h),
		      FLUXONKV_SOURCE_MEMORY);
	release(kv, &h);
	wait_persists(1);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_writes"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_write_bytes"), SSD_ALEN(l1));
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), SSD_ALEN(l1));
	alens = SSD_ALEN(l1);

	/* a working set twice the segment, put one after the other */
	for (i = 0; i < WS_KEYS; i++) {
		ws_key(key, sizeof(key), i);
		ids[i] = put_pattern(kv, key, ws_len(i), 100 + i);
		alens += SSD_ALEN(ws_len(i));
	}
	wait_persists(1 + WS_KEYS);
	FKV_EXPECT_EQ(fkv_sysfs("ssd_commits_ignored"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 1 + WS_KEYS);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_writes"), 1 + WS_KEYS);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), alens);
	FKV_ASSERT_GT(fkv_sysfs("evictions"), 0);

	/* read back in random order: every get hits, with its own bytes */
	for (i = 0; i < WS_KEYS; i++)
		perm[i] = i;
	for (i = WS_KEYS - 1; i > 0; i--) {
		int k = (int)(fkv_xorshift(&rnd) % (uint64_t)(i + 1)), t;

		t = perm[i];
		perm[i] = perm[k];
		perm[k] = t;
	}
	ssd0 = fkv_sysfs("hits_ssd");
	reads0 = fkv_sysfs("ssd_reads");
	prom0 = fkv_sysfs("promotions");
	for (j = 0; j < WS_KEYS; j++) {
		i = perm[j];
		ws_key(key, sizeof(key), i);
		if (get_check(kv, key, ws_len(i), 100 + i, ids[i], &h) ==
		    FLUXONKV_SOURCE_SSD) {
			nssd++;
			check_padding(&h, key);
			/* GET_DONE is asynchronous: the promotion lands soon */
			FKV_ASSERT_SYSFS_SETTLES("promotions", prom0 + nssd);
			/* promoted: the refilled bytes are now its replica */
			FKV_ASSERT_EQ(get_check(kv, key, ws_len(i), 100 + i,
						ids[i], &h2),
				      FLUXONKV_SOURCE_MEMORY);
			FKV_ASSERT(h2.data == h.data, "'%s': the refill at %p "
				   "was not promoted (memory hit at %p)", key,
				   h.data, h2.data);
			release(kv, &h2);
		}
		release(kv, &h);
	}
	fkv_diag("%d of %d gets in random order refilled from SSD", nssd,
		 WS_KEYS);
	FKV_ASSERT_GT(nssd, 0);
	FKV_ASSERT_EQ(fkv_sysfs("hits_ssd") - ssd0, nssd);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_reads") - reads0, nssd);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes"), 0);

	/* holders of refilled bytes outlive overwrite, delete and churn */
	for (i = 0; i < WS_KEYS && b < 0; i++) {
		ws_key(key, sizeof(key), i);
		get_check(kv, key, ws_len(i), 100 + i, ids[i], &h);
		if (h.source != FLUXONKV_SOURCE_SSD) {
			release(kv, &h);
		} else if (a < 0) {
			a = i;
			ha = h;
		} else {
			b = i;
			hb = h;
		}
	}
	FKV_ASSERT(b >= 0, "fewer than two keys came back from SSD");
	ws_key(key, sizeof(key), a);
	ida2 = put_pattern(kv, key, la2, 999);
	FKV_ASSERT_GT(ida2, ids[a]);
	FKV_ASSERT_EQ(get_check(kv, key, la2, 999, ida2, &h),
		      FLUXONKV_SOURCE_MEMORY);
	release(kv, &h);
	check_holder(kv, &ha, key, ws_len(a), 100 + a, ids[a]);
	ws_key(key, sizeof(key), b);
	delete_key(kv, key);
	get_miss(kv, key);
	check_holder(kv, &hb, key, ws_len(b), 100 + b, ids[b]);
	for (i = 0; i < WS_CHURN; i++) {
		snprintf(key, sizeof(key), "churn-%02d", i);
		put_pattern(kv, key, FKV_MIB, 500 + i);
	}
	ws_key(key, sizeof(key), a);
	check_holder(kv, &ha, key, ws_len(a), 100 + a, ids[a]);
	ws_key(key, sizeof(key), b);
	check_holder(kv, &hb, key, ws_len(b), 100 + b, ids[b]);
	release(kv, &ha);
	release(kv, &hb);

	/* the ring holds both versions of key a: only the newer comes back */
	wait_persists(1 + WS_KEYS + 1 + WS_CHURN);
	ws_key(key, sizeof(key), a);
	get_check(kv, key, la2, 999, ida2, &h);
	release(kv, &h);

	/* delete everything: an SSD copy left in the ring never resurrects */
	delete_key(kv, "one");
	for (i = 0; i < WS_KEYS; i++) {
		if (i == b)
			continue;
		ws_key(key, sizeof(key), i);
		delete_key(kv, key);
	}
	for (i = 0; i < WS_CHURN; i++) {
		snprintf(key, sizeof(key), "churn-%02d", i);
		delete_any(kv, key);
	}
	get_miss(kv, "one");
	ws_key(key, sizeof(key), 0);
	get_miss(kv, key);
	ws_key(key, sizeof(key), a);
	get_miss(kv, key);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	fkv_close(kv);
	teardown(base);
}

/* ---- 3. a raw block device ---- */

#define RAW_KEYS	24	/*
 * A raw block device is claimed exclusively while a shard uses it (issue
 * 29: it was attached with no claim, so the device of a mounted
 * filesystem could be written under it).  The device under the mounted
 * ext4 of ssd0, opened without O_EXCL, is refused with EBUSY; ssd1,
 * opened the same way, is attached and then nobody may open it O_EXCL
 * (mkfs, mount) until the module lets go of it.
 */
FKV_TEST(a_block_device_is_claimed_exclusively_and_a_mounted_one_refused)
{
	char dir[256], mounted[128], raw[128];
	uint32_t shard = UINT32_MAX;
	int dev, fd, excl;

	ext4_dir("claim", dir, sizeof(dir));
	scratch_disk(DISK_EXT4, "1G", mounted, sizeof(mounted));
	scratch_disk(DISK_RAW, "512M", raw, sizeof(raw));
	FKV_LOAD("segment_mb=8");
	dev = fkv_dev_open();
	FKV_ASSERT(dev >= 0, "open %s: %s", FKV_DEV_PATH, strerror(errno));

	fd = open_shard(mounted);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fd, 0, 4 * FKV_MIB, 0, &shard),
		      -EBUSY);
	close(fd);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 0);

	fd = open_shard(raw);
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fd, 0, 4 * FKV_MIB, 0, &shard),
		      0);
	/* a second shard of the same device: the module's claim again */
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fd, 4 * FKV_MIB, 4 * FKV_MIB, 0,
					 &shard), 0);
	close(fd);
	excl = open(raw, O_RDWR | O_EXCL | O_CLOEXEC);
	FKV_ASSERT(excl < 0 && errno == EBUSY, "O_EXCL open of an attached "
		   "device: %s", excl < 0 ? strerror(errno) : "taken");
	close(dev);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
	excl = open(raw, O_RDWR | O_EXCL | O_CLOEXEC);
	FKV_ASSERT(excl >= 0, "O_EXCL open after the unload: %s",
		   strerror(errno));
	close(excl);
}

/* ~12 MiB through an 8 MiB segment */

static size_t raw_len(int i)
{
	return 512 * KIB + (size_t)i * 1001;
}

FKV_TEST_TIMEOUT(raw_block_device_tier_round_trip, 180)
{
	uint64_t base, ids[RAW_KEYS], alens = 0;
	char disk[128], cfg[300], key[32];
	size_t span = (size_t)((SSD_ALEN(raw_len(0)) + 4095) & ~4095ULL);
	int i, fd, nssd = 0;
	struct fkv_holder h;
	struct fkv *kv;
	void *buf;

	FKV_REQUIRE_FLUXONCTL();
	FKV_REQUIRE_DAEMON();
	scratch_disk(DISK_RAW, "512M", disk, sizeof(disk));
	FKV_LOAD("segment_mb=8");

	/* attached before the daemon: it learns the capacity at register */
	snprintf(cfg, sizeof(cfg), FKV_SCRATCH_DIR "/raw.yaml");
	write_config(cfg, disk, "128MB");
	config_check(cfg, "blockdev");
	config_attach(cfg);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 128 * FKV_MIB);
	FKV_START_DAEMON();
	base = fkv_sysfs("segment_used_bytes");

	kv = kv_open();
	for (i = 0; i < RAW_KEYS; i++) {
		snprintf(key, sizeof(key), "raw-%02d", i);
		ids[i] = put_pattern(kv, key, raw_len(i), 300 + i);
		alens += SSD_ALEN(raw_len(i));
		if (!i)		/* the first one first: at offset 0 */
			wait_persists(1);
	}
	wait_persists(RAW_KEYS);
	FKV_EXPECT_EQ(fkv_sysfs("ssd_commits_ignored"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), RAW_KEYS);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), alens);

	/* the bytes are on the device itself: the first entry at offset 0 */
	fd = open(disk, O_RDONLY | O_DIRECT | O_CLOEXEC);
	FKV_ASSERT(fd >= 0, "open %s: %s", disk, strerror(errno));
	FKV_ASSERT_EQ(posix_memalign(&buf, 4096, span), 0);
	FKV_ASSERT_EQ(pread(fd, buf, span, 0), (ssize_t)span);
	FKV_ASSERT_PATTERN(buf, raw_len(0), "raw-00", 6, 300);
	free(buf);
	close(fd);

	for (i = 0; i < RAW_KEYS; i++) {
		snprintf(key, sizeof(key), "raw-%02d", i);
		if (get_check(kv, key, raw_len(i), 300 + i, ids[i], &h) ==
		    FLUXONKV_SOURCE_SSD)
			nssd++;
		release(kv, &h);
	}
	fkv_diag("%d of %d gets refilled from the block device", nssd,
		 RAW_KEYS);
	FKV_ASSERT_GT(nssd, 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	for (i = 0; i < RAW_KEYS; i++) {
		snprintf(key, sizeof(key), "raw-%02d", i);
		delete_key(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
}

/* ---- 4. ring wrap and tail eviction ---- */

#define RW_CAP		(4 * FKV_MIB)
#define RW_OPS		24

/* Op i puts key rw-NAME: ops 10 and 21 overwrite the keys of ops 2, 18. */
static int rw_name(int i)
{
	return i == 10 ? 2 : i == 21 ? 18 : i;
}

/* 900 KiB .. 1.2 MiB, never 512-aligned: 3 or 4 per ring, wraps leave gaps */
static size_t rw_len(int i)
{
	return 900 * KIB + (size_t)((i * 7919) % 300) * KIB +
	       (size_t)(i % 5) * 111 + 1;
}

/*
 * The ring as the uapi describes it: entries appended at the head, the head
 * wraps to offset 0 when the end is too short, the tail advances over the
 * oldest entries.  Fed the writes in order, it says which survive.
 */
struct ring_sim {
	uint64_t head, tail, evictions;
	int n, op[RW_OPS];
	uint64_t start[RW_OPS];
};

static void ring_sim_append(struct ring_sim *s, int op, uint64_t alen)
{
	uint64_t pos = s->head, phys = pos % RW_CAP;

	if (phys + alen > RW_CAP)
		pos += RW_CAP - phys;
	if (!s->n)
		s->tail = pos;
	while (s->n && pos + alen - s->tail > RW_CAP) {
		s->n--;
		memmove(s->op, s->op + 1, s->n * sizeof(s->op[0]));
		memmove(s->start, s->start + 1, s->n * sizeof(s->start[0]));
		s->tail = s->n ? s->start[0] : pos;
		s->evictions++;
	}
	s->op[s->n] = op;
	s->start[s->n++] = pos;
	s->head = pos + alen;
}

static bool ring_sim_has(const struct ring_sim *s, int op)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->op[i] == op)
			return true;
	return false;
}

FKV_TEST_TIMEOUT(ring_wraps_and_evicts_its_tail_and_stale_keys_miss, 180)
{
	uint64_t base, ids[RW_OPS], revokes0, misses0;
	struct ring_sim sim = { 0 };
	char dir[256], path[300], key[32];
	int i, cur[RW_OPS], hits = 0, gone = 0, ret;
	struct fkv_holder h;
	struct fkv *kv;

	ext4_dir("ring", dir, sizeof(dir));
	base = setup("segment_mb=4");
	make_file(dir, "shard", RW_CAP, path, sizeof(path));
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, path, 0, RW_CAP), 0);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), RW_CAP);

	/* one write at a time, so the ring sees them in put order */
	for (i = 0; i < RW_OPS; i++) {
		snprintf(key, sizeof(key), "rw-%02d", rw_name(i));
		ids[i] = put_pattern(kv, key, rw_len(i), i);
		wait_persists(i + 1);
		FKV_ASSERT(fkv_sysfs("ssd_commits_published") == (uint64_t)i + 1,
			   "op %d: the SSD copy of '%s' was not published", i,
			   key);
		ring_sim_append(&sim, i, SSD_ALEN(rw_len(i)));
		FKV_ASSERT_LE(fkv_sysfs("kv_ssd_used_bytes"), RW_CAP);
	}
	fkv_diag("ring: %" PRIu64 " evictions, %d entries left (ops %d..%d), "
		 "%" PRIu64 " bytes", sim.evictions, sim.n, sim.op[0],
		 sim.op[sim.n - 1], sim.head - sim.tail);
	FKV_ASSERT_GE(sim.head / RW_CAP, 3);	/* the test wraps >= 3 times */
	FKV_ASSERT(ring_sim_has(&sim, 21), "the test wants op 21 in the ring");
	FKV_ASSERT_EQ(fkv_sysfs("ssd_evictions"), sim.evictions);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), sim.head - sim.tail);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_busy_waits"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_notices_dropped"), 0);

	/* SSD_EVICTED notices go out in batches within ~10 ms */
	fkv_msleep(300);
	revokes0 = fkv_sysfs("ssd_revokes");
	misses0 = fkv_sysfs("misses");

	/* each key's current version, oldest first: in the ring -> hits;
	 * out of it -> still in DRAM (a dirty replica: clean drops take
	 * the ones with an SSD copy first, and 5 values of >= 900 KiB do
	 * not fit the 4 MiB segment), or gone from both tiers -> a miss;
	 * never an older version */
	for (i = 0; i < RW_OPS; i++)
		cur[rw_name(i)] = i;
	for (i = 0; i < RW_OPS; i++) {
		if (rw_name(i) != i)
			continue;
		snprintf(key, sizeof(key), "rw-%02d", i);
		if (ring_sim_has(&sim, cur[i])) {
			get_check(kv, key, rw_len(cur[i]), cur[i], ids[cur[i]],
				  &h);
			release(kv, &h);
			hits++;
			continue;
		}
		ret = fkv_get(kv, key, strlen(key), &h);
		FKV_ASSERT(ret == 0 || ret == -ENOENT, "get '%s': %s", key,
			   fkv_strerror(ret));
		gone += ret == -ENOENT;
		if (!ret) {
			check_holder(kv, &h, key, rw_len(cur[i]), cur[i],
				     ids[cur[i]]);
			FKV_ASSERT_EQ(h.source, FLUXONKV_SOURCE_MEMORY);
			release(kv, &h);
		}
	}
	fkv_diag("%d keys hit, %d missed as evicted from both tiers", hits,
		 gone);
	FKV_ASSERT_EQ(hits, sim.n);
	FKV_ASSERT_GT(gone, 0);
	FKV_ASSERT_GE(fkv_sysfs("misses") - misses0, gone);
	/* the master had dropped the overwritten entries (SSD_EVICTED):
	 * no stale SSD route had to be revoked */
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes"), revokes0);

	for (i = 0; i < RW_OPS; i++) {
		if (rw_name(i) != i)
			continue;
		snprintf(key, sizeof(key), "rw-%02d", i);
		ret = delete_any(kv, key);
		FKV_ASSERT(ret == 0 || !ring_sim_has(&sim, cur[i]),
			   "'%s' is in the ring but had no route", key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	fkv_close(kv);
	teardown(base);
}

/* ---- 5. IO errors (device-mapper) ---- */

#define DM_NAME		"fkv-selftest-ssd"
#define DM_PATH		"/dev/mapper/" DM_NAME
#define DM_CAP		(32 * FKV_MIB)
#define DM_KEYS		8	/* 8 MiB through a 4 MiB segment */
#define DM_AFTER	6

static size_t dm_len(int i)
{
	return FKV_MIB + 3000 + (size_t)i * 777;
}

FKV_TEST_TIMEOUT(io_errors_revoke_the_ssd_copy_and_never_return_bad_bytes, 180)
{
	char devno[32], linear[256], error[128], key[32];
	uint64_t base, ids[DM_KEYS], after[DM_AFTER], sectors, errs0;
	uint64_t revokes, id;
	int i, ret, nfail = 0;
	struct fkv_holder h;
	struct fkv *kv;

	FKV_REQUIRE_DAEMON();
	sectors = dm_disk(NULL, devno, sizeof(devno));
	snprintf(linear, sizeof(linear), "0 %" PRIu64 " linear %s 0\n",
		 sectors, devno);
	snprintf(error, sizeof(error), "0 %" PRIu64 " error\n", sectors);

	base = setup("segment_mb=4");	/* unloads a previous module */
	dm_create(DM_NAME, linear);

	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DM_PATH, 0, DM_CAP), 0);
	for (i = 0; i < DM_KEYS; i++) {
		snprintf(key, sizeof(key), "dm-%d", i);
		ids[i] = put_pattern(kv, key, dm_len(i), 700 + i);
		wait_persists(i + 1);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), DM_KEYS);
	errs0 = fkv_sysfs("ssd_io_errors");
	FKV_ASSERT_EQ(errs0, 0);

	/* the device fails every IO from now on */
	dm_swap(DM_NAME, error);
	for (i = 0; i < DM_KEYS; i++) {
		snprintf(key, sizeof(key), "dm-%d", i);
		ret = fkv_get(kv, key, strlen(key), &h);
		if (ret) {
			FKV_ASSERT(ret == -ENOENT || ret == -EIO,
				   "get '%s' from a failing SSD: %s", key,
				   fkv_strerror(ret));
			nfail++;
			continue;
		}
		/* only a DRAM replica can still serve it, with its bytes */
		FKV_ASSERT(h.source == FLUXONKV_SOURCE_MEMORY, "get '%s' was "
			   "served from a failing SSD", key);
		check_holder(kv, &h, key, dm_len(i), 700 + i, ids[i]);
		release(kv, &h);
		/* 4 values of > 1 MiB never fit the 4 MiB segment */
		FKV_ASSERT(i >= DM_KEYS - 3, "'%s' still in DRAM", key);
	}
	fkv_diag("%d of %d gets failed cleanly", nfail, DM_KEYS);
	FKV_ASSERT_GE(nfail, DM_KEYS - 3);
	FKV_ASSERT_GT(fkv_sysfs("ssd_io_errors"), errs0);
	revokes = fkv_sysfs("ssd_revokes");
	FKV_ASSERT_GT(revokes, 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	/* the revoked copy is forgotten: the next get misses at once */
	get_miss(kv, "dm-0");
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes"), revokes);

	/* a put still works from DRAM; its SSD copy fails in the background */
	errs0 = fkv_sysfs("ssd_io_errors");
	id = put_pattern(kv, "dm-during", dm_len(0), 777);
	wait_persists(DM_KEYS + 1);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), 1);
	FKV_ASSERT_GT(fkv_sysfs("ssd_io_errors"), errs0);
	FKV_ASSERT_EQ(get_check(kv, "dm-during", dm_len(0), 777, id, &h),
		      FLUXONKV_SOURCE_MEMORY);
	release(kv, &h);

	/* healthy again: new values persist and refill */
	dm_swap(DM_NAME, linear);
	for (i = 0; i < DM_AFTER; i++) {
		snprintf(key, sizeof(key), "dm-after-%d", i);
		after[i] = put_pattern(kv, key, dm_len(i), 800 + i);
		wait_persists(DM_KEYS + 2 + i);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), DM_KEYS + DM_AFTER);
	errs0 = fkv_sysfs("ssd_io_errors");
	FKV_ASSERT_EQ(get_check(kv, "dm-after-0", dm_len(0), 800, after[0],
				&h), FLUXONKV_SOURCE_SSD);
	release(kv, &h);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), errs0);

	for (i = 0; i < DM_KEYS; i++) {
		snprintf(key, sizeof(key), "dm-%d", i);
		delete_any(kv, key);
	}
	for (i = 0; i < DM_AFTER; i++) {
		snprintf(key, sizeof(key), "dm-after-%d", i);
		delete_key(kv, key);
	}
	delete_key(kv, "dm-during");
	fkv_close(kv);
	teardown(base);
	dm_remove(DM_NAME);
}

/* ---- 6. the owner restarts ---- */

#define RS_KEYS		4
#define RS_CAP		(16 * FKV_MIB)

FKV_TEST_TIMEOUT(module_reload_starts_with_empty_rings_and_old_keys_miss, 180)
{
	uint64_t base, id, ids[RS_KEYS];
	char dir[256], path[300], key[32];
	struct fkv_holder h;
	struct fkv *kv;
	int i, status;

	ext4_dir("restart", dir, sizeof(dir));
	base = setup("segment_mb=4");
	make_file(dir, "shard", RS_CAP, path, sizeof(path));
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, path, 0, RS_CAP), 0);
	for (i = 0; i < RS_KEYS; i++) {
		snprintf(key, sizeof(key), "rs-%d", i);
		ids[i] = put_pattern(kv, key, FKV_MIB + 100 * i, 40 + i);
		wait_persists(i + 1);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), RS_KEYS);
	FKV_ASSERT_GT(fkv_sysfs("kv_ssd_used_bytes"), 0);
	/* rs-0 is only on the SSD now, and it is served from there */
	FKV_ASSERT_EQ(get_check(kv, "rs-0", FKV_MIB, 40, ids[0], &h),
		      FLUXONKV_SOURCE_SSD);
	release(kv, &h);
	fkv_close(kv);

	/* the module goes; its daemon follows on its own */
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
	status = fkv_daemon_reap(fkv_env_daemon, 10000);
	if (status == -1)
		fkv_daemon_dump_log("still running 10 s after rmmod");
	FKV_ASSERT(status != -1, "fluxond did not exit when the module went");
	fkv_diag("fluxond exited with %s %d after rmmod",
		 WIFSIGNALED(status) ? "signal" : "status",
		 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	fkv_env_daemon = 0;
	unlink(FKV_DAEMON_MARK);

	/* a new instance: no shard, nothing to serve */
	base = setup("segment_mb=4");
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), 0);
	kv = kv_open();
	for (i = 0; i < RS_KEYS; i++) {
		snprintf(key, sizeof(key), "rs-%d", i);
		get_miss(kv, key);
	}

	/* the same file, old bytes and all: its ring starts empty */
	FKV_ASSERT_EQ(attach_file(kv, path, 0, RS_CAP), 0);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), RS_CAP);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), 0);
	for (i = 0; i < RS_KEYS; i++) {
		snprintf(key, sizeof(key), "rs-%d", i);
		get_miss(kv, key);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_reads"), 0);

	/* a new version of rs-0 lands where the old one was; refilled, it
	 * is the new one */
	id = put_pattern(kv, "rs-0", FKV_MIB + 4096 + 7, 99);
	wait_persists(1);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"),
		      SSD_ALEN(FKV_MIB + 4096 + 7));
	for (i = 1; i <= RS_KEYS; i++) {
		snprintf(key, sizeof(key), "rs-new-%d", i);
		put_pattern(kv, key, FKV_MIB, 60 + i);
	}
	FKV_ASSERT_EQ(get_check(kv, "rs-0", FKV_MIB + 4096 + 7, 99, id, &h),
		      FLUXONKV_SOURCE_SSD);
	release(kv, &h);
	delete_key(kv, "rs-0");
	for (i = 1; i <= RS_KEYS; i++) {
		snprintf(key, sizeof(key), "rs-new-%d", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
}

/* ---- 7. refills racing ring overwrites ---- */

#define CR_KEYS		40	/* ~28 MiB: more than DRAM, less than the ring */
#define CR_WRITERS	2
#define CR_READERS	3
#define CR_MS		4000
#define CR_TABLE	(1 << 16)
#define CR_MAGIC	0x666b7673736472ULL	/* "fkvssdr" */
#define CR_MAXBODY	(1100 * KIB)
#define CR_SHARD	(12 * FKV_MIB)

/* A self-describing value: this header, then the pattern of (key, salt). */
struct cr_hdr {
	uint64_t magic;
	uint64_t salt;		/* writer << 32 | seq */
	uint64_t len;		/* the whole value */
	char key[16];
};

static struct {
	uint64_t owner[CR_TABLE];	/* put_id -> salt + 1, once put returned */
	int64_t end_ms;
	uint64_t puts, hits[3], misses;
} *cr;

static void cr_key(char *buf, size_t n, int k)
{
	snprintf(buf, n, "cr-%02d", k);
}

static void *cr_writer(void *arg)
{
	uint32_t writer = (uint32_t)(uintptr_t)arg;
	uint64_t rnd = 0x9e3779b97f4a7c15ULL * (writer + 1);
	uint8_t *buf = malloc(sizeof(struct cr_hdr) + CR_MAXBODY);
	struct fkv *kv = kv_open();
	uint32_t seq;

	FKV_ASSERT(buf);
	for (seq = 1; fkv_now_ms() < cr->end_ms; seq++) {
		uint64_t r = fkv_xorshift(&rnd), put_id = 0;
		size_t body = 256 * KIB + (size_t)(r >> 16) % (CR_MAXBODY - 256 * KIB);
		struct cr_hdr *hd = (struct cr_hdr *)buf;
		int ret;

		memset(hd, 0, sizeof(*hd));
		cr_key(hd->key, sizeof(hd->key), (int)(r % CR_KEYS));
		hd->magic = CR_MAGIC;
		hd->salt = (uint64_t)writer << 32 | seq;
		hd->len = sizeof(*hd) + body;
		fkv_pattern_fill(buf + sizeof(*hd), body, hd->key,
				 strlen(hd->key), hd->salt);
		ret = fkv_put(kv, hd->key, strlen(hd->key), buf, hd->len,
			      &put_id);
		FKV_ASSERT(ret == 0, "put '%s': %s", hd->key, fkv_strerror(ret));
		FKV_ASSERT(put_id > 0 && put_id < CR_TABLE);
		__atomic_store_n(&cr->owner[put_id], hd->salt + 1,
				 __ATOMIC_RELEASE);
		__atomic_fetch_add(&cr->puts, 1, __ATOMIC_RELAXED);
	}
	fkv_close(kv);
	free(buf);
	return NULL;
}

/* H holds a whole cr value of KEY, the one its put_id was put with. */
static void cr_check(const struct fkv_holder *h, const char *key)
{
	const struct cr_hdr *hd = h->data;
	uint64_t owner;
	long off;

	FKV_ASSERT(h->len > sizeof(*hd), "'%s': %zu bytes", key, h->len);
	FKV_ASSERT(hd->magic == CR_MAGIC, "'%s' (put_id %" PRIu64 ", source "
		   "%u): bad magic %#" PRIx64, key, h->put_id, h->source,
		   hd->magic);
	FKV_ASSERT(!strcmp(hd->key, key), "'%s': bytes of key '%.16s'", key,
		   hd->key);
	FKV_ASSERT(hd->len == h->len, "'%s': header says %" PRIu64 " bytes, "
		   "holder %zu", key, hd->len, h->len);
	off = fkv_pattern_check((const uint8_t *)h->data + sizeof(*hd),
				h->len - sizeof(*hd), key, strlen(key),
				hd->salt);
	FKV_ASSERT(off < 0, "'%s' (put_id %" PRIu64 ", source %u): torn at "
		   "body offset %ld", key, h->put_id, h->source, off);
	FKV_ASSERT(h->put_id > 0 && h->put_id < CR_TABLE);
	owner = __atomic_load_n(&cr->owner[h->put_id], __ATOMIC_ACQUIRE);
	FKV_ASSERT(!owner || owner == hd->salt + 1, "'%s': put_id %" PRIu64
		   " was put with salt %#" PRIx64 ", holder has %#" PRIx64
		   " (source %u)", key, h->put_id, owner - 1, hd->salt,
		   h->source);
	check_padding(h, key);
}

/* An unexpected get failure: show the state, then fail. */
static void cr_dump(const char *key, int ret)
{
	static const char *const names[] = {
		"segment_used_bytes", "holders", "replicas", "room_waits",
		"evictions", "ssd_writes", "ssd_reads", "ssd_busy_waits",
		"ssd_commits_published", "ssd_commits_ignored", "ssd_revokes",
		"kv_ssd_used_bytes", "upcall_timeouts",
	};
	char line[1024] = "";
	size_t i, n = 0;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		n += snprintf(line + n, sizeof(line) - n, " %s=%" PRIu64,
			      names[i], fkv_sysfs(names[i]));
	fkv_diag("state:%s", line);
	fkv_diag_file("segment: ", FKV_DEBUGFS_DIR "/segment");
	fkv_diag_file("holders: ", FKV_DEBUGFS_DIR "/holders");
	fkv_diag_file("replicas: ", FKV_DEBUGFS_DIR "/replicas");
	fkv_diag_file("rings: ", FKV_DEBUGFS_DIR "/rings");
	FKV_FAIL_AT(1, "get '%s': %s", key, fkv_strerror(ret));
}

static void *cr_reader(void *arg)
{
	uint64_t rnd = 0xabcdef12345ULL * ((uintptr_t)arg + 1);
	struct fkv_holder kept = { 0 };
	struct fkv *kv = kv_open();
	char key[16];

	while (fkv_now_ms() < cr->end_ms) {
		uint64_t r = fkv_xorshift(&rnd);
		struct fkv_holder h;
		int ret;

		cr_key(key, sizeof(key), (int)(r % CR_KEYS));
		ret = fkv_get(kv, key, strlen(key), &h);
		if (ret == -ENOENT) {
			__atomic_fetch_add(&cr->misses, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (ret)
			cr_dump(key, ret);
		cr_check(&h, key);
		__atomic_fetch_add(&cr->hits[h.source % 3], 1,
				   __ATOMIC_RELAXED);
		/* now and then keep one across later operations */
		if (r & 0x300) {
			release(kv, &h);
			continue;
		}
		if (kept.id) {
			cr_check(&kept, ((const struct cr_hdr *)kept.data)->key);
			release(kv, &kept);
		}
		kept = h;
	}
	if (kept.id)
		release(kv, &kept);
	fkv_close(kv);
	return NULL;
}

FKV_TEST_TIMEOUT(refills_racing_ring_overwrites_never_return_wrong_bytes, 120)
{
	pthread_t tid[CR_WRITERS + CR_READERS];
	char dir[256], path[300], key[16];
	uint64_t base;
	struct fkv *kv;
	int i;

	ext4_dir("race", dir, sizeof(dir));
	/*
	 * What may pin DRAM at once: a kept holder and a get per reader, a
	 * put per writer: 8 values of <= 1.1 MiB, about half of the segment.
	 * Everything else the master can evict.
	 */
	base = setup("segment_mb=16");
	cr = mmap(NULL, sizeof(*cr), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(cr != MAP_FAILED);
	/* two shards of one file, used round-robin, each wrapping often */
	make_file(dir, "shards", 2 * CR_SHARD, path, sizeof(path));
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, path, 0, CR_SHARD), 0);
	FKV_ASSERT_EQ(attach_file(kv, path, CR_SHARD, CR_SHARD), 1);

	cr->end_ms = fkv_now_ms() + CR_MS;
	for (i = 0; i < CR_WRITERS + CR_READERS; i++)
		FKV_ASSERT_EQ(pthread_create(&tid[i], NULL, i < CR_WRITERS ?
					     cr_writer : cr_reader,
					     (void *)(uintptr_t)i), 0);
	for (i = 0; i < CR_WRITERS + CR_READERS; i++)
		pthread_join(tid[i], NULL);
	fkv_diag("%" PRIu64 " puts; gets: %" PRIu64 " from memory, %" PRIu64
		 " from SSD, %" PRIu64 " misses; SSD: %" PRIu64 " evictions, %"
		 PRIu64 " revokes, %" PRIu64 " busy waits, %" PRIu64
		 " commits ignored", cr->puts, cr->hits[FLUXONKV_SOURCE_MEMORY],
		 cr->hits[FLUXONKV_SOURCE_SSD], cr->misses,
		 fkv_sysfs("ssd_evictions"), fkv_sysfs("ssd_revokes"),
		 fkv_sysfs("ssd_busy_waits"), fkv_sysfs("ssd_commits_ignored"));
	FKV_ASSERT_GT(cr->hits[FLUXONKV_SOURCE_SSD], 0);
	FKV_ASSERT_GT(fkv_sysfs("ssd_evictions"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_timeouts"), 0);

	for (i = 0; i < CR_KEYS; i++) {
		cr_key(key, sizeof(key), i);
		delete_any(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
}

/* ---- 8. a refill waiting for DRAM vs the ring write that frees it ---- */

#define PW_V		(1020 * KIB)	/* X, A1..A3: 4 of them fill the ring */
#define PW_B		(64 * KIB)	/* fits the ring's rest */
#define PW_C		(300 * KIB)	/* does not: its write must pop X */
#define PW_RING		(4 * FKV_MIB + 256 * KIB)

static const char *const pw_keys[] = {
	"pw-x", "pw-a1", "pw-a2", "pw-a3", "pw-b", "pw-c",
};

struct pw_get {
	int ret;
	int64_t done_ms;
	struct fkv_holder h;
};

static void *pw_get_x(void *arg)
{
	struct pw_get *g = arg;
	struct fkv *kv = kv_open();

	g->ret = fkv_get(kv, "pw-x", 4, &g->h);
	g->done_ms = fkv_now_ms();
	if (!g->ret) {
		check_holder(kv, &g->h, "pw-x", PW_V, 1, g->h.put_id);
		release(kv, &g->h);
	}
	fkv_close(kv);
	return NULL;
}

/*
 * The 4 MiB segment: A1..A3 and B held by holders leave less than X needs,
 * so a get of X (only in the ring, at its tail) waits for room.  Then C is
 * put: its SSD write has to advance the ring's tail over X.  Once the
 * master evicted C's replica and B's holder is gone, C's bytes are all
 * that stand between X's refill and its room: the ring write must be able
 * to finish while the get waits, so the get ends promptly, with X's bytes
 * or a miss (X may be overwritten in the ring by then), never -ENOSPC after
 * the full room wait.
 */
FKV_TEST_TIMEOUT(refill_waiting_for_room_does_not_stall_ring_writes, 90)
{
	struct fkv_holder ha[3], hb;
	struct pw_get g = { 0 };
	char dir[256], path[300], key[16];
	uint64_t base, rw0, n;
	int64_t t_free;
	pthread_t tid;
	struct fkv *kv;
	int i;

	ext4_dir("pinwait", dir, sizeof(dir));
	base = setup("segment_mb=4");
	make_file(dir, "shard", PW_RING, path, sizeof(path));
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, path, 0, PW_RING), 0);

	/* ring: X A1 A2 A3 B, 208 KiB left; DRAM: A1..A3 (X evicted) */
	put_pattern(kv, "pw-x", PW_V, 1);
	wait_persists(1);
	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "pw-a%d", i + 1);
		put_pattern(kv, key, PW_V, 10 + i);
		wait_persists(2 + i);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 4);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);	/* X left DRAM */
	for (i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "pw-a%d", i + 1);
		FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &ha[i]), 0);
		FKV_ASSERT_EQ(ha[i].source, FLUXONKV_SOURCE_MEMORY);
	}
	put_pattern(kv, "pw-b", PW_B, 20);
	wait_persists(5);
	FKV_ASSERT_EQ(fkv_get(kv, "pw-b", 4, &hb), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_evictions"), 0);	/* X still there */
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      base + 3 * PW_V + PW_B);

	/* the get of X waits for room */
	rw0 = fkv_sysfs("room_waits");
	FKV_ASSERT_EQ(pthread_create(&tid, NULL, pw_get_x, &g), 0);
	FKV_ASSERT_EQ(fkv_sysfs_wait("room_waits", rw0 + 1, 3000, &n), 0);

	/* C fits DRAM; its SSD write needs X's place in the ring */
	put_pattern(kv, "pw-c", PW_C, 30);
	/* the master evicts everything it can for the get (A1..A3, B, C) */
	if (fkv_sysfs_wait("replicas", 0, 3000, &n))
		FKV_FAIL_AT(1, "%" PRIu64 " replicas left after 3 s of "
			    "NEED_ROOM", n);
	release(kv, &hb);
	t_free = fkv_now_ms();

	pthread_join(tid, NULL);
	fkv_diag("get of X ended %" PRId64 " ms after B's holder went: %s "
		 "(ssd_busy_waits %" PRIu64 ", ssd_evictions %" PRIu64 ")",
		 g.done_ms - t_free, g.ret ? fkv_strerror(g.ret) : "hit",
		 fkv_sysfs("ssd_busy_waits"), fkv_sysfs("ssd_evictions"));
	FKV_ASSERT(g.ret == 0 || g.ret == -ENOENT, "get of X: %s",
		   fkv_strerror(g.ret));
	FKV_ASSERT_LT(g.done_ms - t_free, 2000);
	wait_persists(6);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), 0);

	for (i = 0; i < 3; i++)
		release(kv, &ha[i]);
	for (i = 0; i < 6; i++)
		delete_any(kv, pw_keys[i]);
	fkv_close(kv);
	teardown(base);
}

/* ---- shared by 9..11: the whole segment, dm-delay ---- */

/*
 * Put KEY as one value the size of the free segment and wait for its
 * persist (*persists counts the persists so far): the master has to evict
 * every other DRAM replica for it, so afterwards DRAM holds only this one
 * and every other key can only come back from the SSD.
 */
static uint64_t fill_segment(struct fkv *kv, uint64_t base, const char *key,
			     uint64_t salt, uint64_t *persists)
{
	uint64_t len = fkv_sysfs("segment_capacity_bytes") - base, id;

	id = put_pattern(kv, key, len, salt);
	wait_persists(++*persists);
	FKV_ASSERT(fkv_sysfs("replicas") == 1, "%" PRIu64 " DRAM replicas "
		   "left beside the %" PRIu64 "-byte '%s'",
		   fkv_sysfs("replicas") - 1, len, key);
	return id;
}

#define DLY_NAME	"fkv-selftest-delay"
#define DLY_PATH	"/dev/mapper/" DLY_NAME

/*
 * DLY_NAME over all of the scratch disk ssd2 as a dm `delay` target: reads
 * wait read_ms, writes write_ms.  Skips without the disk, dmsetup or the
 * target.  Call after setup(): a module a failed test left behind may hold
 * a previous DLY_NAME.
 */
static void dm_delay_create(unsigned int read_ms, unsigned int write_ms)
{
	char table[256], devno[32];
	uint64_t sectors = dm_disk("dm-delay", devno, sizeof(devno));

	snprintf(table, sizeof(table), "0 %" PRIu64 " delay %s 0 %u %s 0 %u\n",
		 sectors, devno, read_ms, devno, write_ms);
	dm_create(DLY_NAME, table);
}

/*
 * Read pins of KEY's newest entry in debugfs `rings` (read pins + commit
 * pin); -1 if KEY has no ring entry, -2 without debugfs.  *parked (may be
 * NULL) gets the first device's writes_parked.
 */
static int ring_pins(const char *key, int *parked)
{
	return ring_entry(key, 0, parked, NULL);
}

/* ---- 9. lengths that are no multiple of 512 ---- */

static const size_t ol_lens[] = {
	1, 511, 512, 513, 4095, 4097, FKV_MIB - 128, FKV_MIB + 1,
};
#define OL_N		(sizeof(ol_lens) / sizeof(ol_lens[0]))
#define OL_CAP		(16 * FKV_MIB)

/*
 * Every length comes back from the SSD byte for byte with nothing after
 * len in its last page but zeros; the ring uses round_up(len, 512) for it
 * and a refill reads exactly that.  The segment is dirtied first with a
 * pattern over all of it, so stale bytes would show in any padding.
 */
FKV_TEST(odd_lengths_round_trip_through_the_ssd_with_zero_padding)
{
	uint64_t base, ids[OL_N], persists = 0, used, wbytes, rbytes, prom0;
	char dir[256], path[300], key[32];
	struct fkv_holder h;
	struct fkv *kv;
	size_t i;

	ext4_dir("odd", dir, sizeof(dir));
	base = setup("segment_mb=4");
	make_file(dir, "shard", OL_CAP, path, sizeof(path));
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, path, 0, OL_CAP), 0);

	fill_segment(kv, base, "ol-dirt", 1, &persists);
	delete_key(kv, "ol-dirt");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);

	for (i = 0; i < OL_N; i++) {
		snprintf(key, sizeof(key), "ol-%zu", ol_lens[i]);
		used = fkv_sysfs("kv_ssd_used_bytes");
		wbytes = fkv_sysfs("ssd_write_bytes");
		ids[i] = put_pattern(kv, key, ol_lens[i], 100 + i);
		wait_persists(++persists);
		FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), persists);
		FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes") - used,
			      SSD_ALEN(ol_lens[i]));
		FKV_ASSERT_EQ(fkv_sysfs("ssd_write_bytes") - wbytes,
			      SSD_ALEN(ol_lens[i]));
	}

	fill_segment(kv, base, "ol-fill", 2, &persists);
	prom0 = fkv_sysfs("promotions");
	for (i = 0; i < OL_N; i++) {
		snprintf(key, sizeof(key), "ol-%zu", ol_lens[i]);
		rbytes = fkv_sysfs("ssd_read_bytes");
		FKV_ASSERT_EQ(get_check(kv, key, ol_lens[i], 100 + i, ids[i],
					&h), FLUXONKV_SOURCE_SSD);
		check_padding(&h, key);
		FKV_ASSERT_EQ(fkv_sysfs("ssd_read_bytes") - rbytes,
			      SSD_ALEN(ol_lens[i]));
		release(kv, &h);
		FKV_ASSERT_SYSFS_SETTLES("promotions", prom0 + i + 1);
		/* promoted: the same bytes from DRAM */
		FKV_ASSERT_EQ(get_check(kv, key, ol_lens[i], 100 + i, ids[i],
					&h), FLUXONKV_SOURCE_MEMORY);
		check_padding(&h, key);
		release(kv, &h);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes"), 0);

	for (i = 0; i < OL_N; i++) {
		snprintf(key, sizeof(key), "ol-%zu", ol_lens[i]);
		delete_key(kv, key);
	}
	delete_key(kv, "ol-fill");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
}

/* ---- 10. a slow device under the persists (dm-delay on writes) ---- */

#define SP_DELAY_MS	1000	/* wide margins for a loaded TCG host */
#define SP_CAP		(32 * FKV_MIB)
#define SP_LEN		(512 * KIB + 123)

/*
 * Writes take SP_DELAY_MS: the put returns long before its SSD copy is
 * written; a version overwritten, or a key deleted, while its persist is
 * still writing loses when its commit lands late (ignored), so only the
 * new version is ever served, from DRAM and after eviction from the SSD,
 * and the deleted key stays deleted.
 */
FKV_TEST(slow_persist_put_returns_early_and_late_commits_never_win)
{
	const size_t l1 = SP_LEN + 1000, l2 = SP_LEN + 2000;
	uint64_t base, idc, id1, id2, fill, persists = 0;
	int64_t t0, t_put, t_persist;
	struct fkv_holder h;
	struct fkv *kv;

	base = setup("segment_mb=4");
	dm_delay_create(0, SP_DELAY_MS);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, SP_CAP), 0);

	/* (c) the put does not wait for the SSD */
	t0 = fkv_now_ms();
	idc = put_pattern(kv, "sp-c", SP_LEN, 1);
	t_put = fkv_now_ms() - t0;
	FKV_ASSERT_EQ(persists_done(), 0);
	wait_persists(++persists);
	t_persist = fkv_now_ms() - t0;
	fkv_diag("put returned after %" PRId64 " ms, its persist ended after "
		 "%" PRId64 " ms (write delay %u ms)", t_put, t_persist,
		 SP_DELAY_MS);
	FKV_ASSERT_LT(t_put, SP_DELAY_MS / 2);
	FKV_ASSERT_GE(t_persist, SP_DELAY_MS * 3 / 4);	/* the disk is slow */
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 1);

	/* (a) overwritten while the old version is being written */
	id1 = put_pattern(kv, "sp-k", l1, 10);
	id2 = put_pattern(kv, "sp-k", l2, 11);
	FKV_ASSERT_GT(id2, id1);
	FKV_ASSERT_EQ(persists_done(), persists);	/* both still writing */
	FKV_ASSERT_EQ(get_check(kv, "sp-k", l2, 11, id2, &h),
		      FLUXONKV_SOURCE_MEMORY);
	release(kv, &h);
	persists += 2;
	wait_persists(persists);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_ignored"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 2);
	FKV_ASSERT_EQ(get_check(kv, "sp-k", l2, 11, id2, &h),
		      FLUXONKV_SOURCE_MEMORY);
	release(kv, &h);

	/* (b) deleted while its only version is being written */
	put_pattern(kv, "sp-d", SP_LEN, 20);
	delete_key(kv, "sp-d");
	get_miss(kv, "sp-d");
	FKV_ASSERT_EQ(persists_done(), persists);	/* still writing */
	wait_persists(++persists);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_ignored"), 2);
	get_miss(kv, "sp-d");

	/* out of DRAM: the SSD has both versions of sp-k and sp-d's bytes */
	fill_segment(kv, base, "sp-fill", 30, &persists);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 3);
	fill = fkv_sysfs("segment_capacity_bytes") - base;
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"),
		      SSD_ALEN(SP_LEN) + SSD_ALEN(l1) + SSD_ALEN(l2) +
		      SSD_ALEN(SP_LEN) + SSD_ALEN(fill));
	FKV_ASSERT_EQ(get_check(kv, "sp-k", l2, 11, id2, &h),
		      FLUXONKV_SOURCE_SSD);
	check_padding(&h, "sp-k");
	release(kv, &h);
	get_miss(kv, "sp-d");
	FKV_ASSERT_EQ(get_check(kv, "sp-c", SP_LEN, 1, idc, &h),
		      FLUXONKV_SOURCE_SSD);
	release(kv, &h);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_ignored"), 2);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes"), 0);

	delete_key(kv, "sp-c");
	delete_key(kv, "sp-k");
	delete_key(kv, "sp-fill");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/*
 * Local puts outrunning a slow device wait for room in its persist queue
 * (64 queued), each woken alone as a write leaves it; a waiter killed
 * meanwhile passes its turn on: the other putter's values are all
 * persisted, none refused (only the killed putter's persist may be).
 */
#define WQ_DELAY_MS	100
#define WQ_PUTS		120

static void wq_putter(const char *prefix, int n)
{
	struct fkv *kv = kv_open();
	uint8_t buf[4096];
	char key[32];
	int i;

	memset(buf, 0x77, sizeof(buf));
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%s-%03d", prefix, i);
		if (fkv_put(kv, key, strlen(key), buf, sizeof(buf), NULL))
			_exit(1);
	}
	fkv_close(kv);
	_exit(0);
}

FKV_TEST(puts_wait_for_the_persist_queue_and_a_killed_waiter_passes_on)
{
	uint64_t base, p0, errs0, qw0;
	char key[32];
	pid_t a, b;
	int status, i;
	struct fkv *kv;

	base = setup("segment_mb=8 request_timeout_ms=60000");
	dm_delay_create(0, WQ_DELAY_MS);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, SP_CAP), 0);
	p0 = persists_done();
	errs0 = fkv_sysfs("ssd_persist_errors");
	qw0 = fkv_sysfs("ssd_queue_waits");
	fflush(stdout);
	a = fork();
	FKV_ASSERT(a >= 0);
	if (!a)
		wq_putter("wq-a", 1000);
	b = fork();
	FKV_ASSERT(b >= 0);
	if (!b)
		wq_putter("wq-b", WQ_PUTS);
	/* both are waiting for the queue by now: 64 + 4 in 100 ms writes */
	usleep(1500 * 1000);
	FKV_ASSERT_EQ(kill(a, SIGKILL), 0);
	FKV_ASSERT_EQ(waitpid(a, &status, 0), a);
	FKV_ASSERT(WIFSIGNALED(status), "putter A was not killed");
	FKV_ASSERT_EQ(waitpid(b, &status, 0), b);
	FKV_ASSERT(WIFEXITED(status) && !WEXITSTATUS(status),
		   "putter B failed a put");
	/* every persist B started ends, none of them refused */
	wait_persists(p0 + WQ_PUTS);
	fkv_diag("%" PRIu64 " persists ended, %" PRIu64 " refused, %" PRIu64
		 " puts waited for the queue", persists_done() - p0,
		 fkv_sysfs("ssd_persist_errors") - errs0,
		 fkv_sysfs("ssd_queue_waits") - qw0);
	/* the queue was full: B's last puts waited for it */
	FKV_ASSERT_GT(fkv_sysfs("ssd_queue_waits"), qw0);
	FKV_ASSERT_LE(fkv_sysfs("ssd_persist_errors"), errs0 + 1);
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "wq-a-%03d", i);
		delete_any(kv, key);
		if (i >= WQ_PUTS)
			continue;
		snprintf(key, sizeof(key), "wq-b-%03d", i);
		delete_key(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/*
 * Threads under DIR (/proc or a task dir) whose "(comm" holds NAME, in
 * state D (blocked).
 */
static int blocked_threads(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	FKV_ASSERT(d);
	while ((de = readdir(d))) {
		char path[300], buf[512], *open, *close;
		FILE *f;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/%s/stat", dir, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
		open = strchr(buf, '(');
		close = strrchr(buf, ')');
		if (!open || !close || close[1] != ' ')
			continue;
		*close = 0;
		if (strstr(open, name) && close[2] == 'D')
			n++;
	}
	closedir(d);
	return n;
}

/*
 * Tasks blocked (state D) while running the module's SSD workqueue: a
 * kworker's comm carries "+fluxonkv_ssd" while it runs one of its works.
 */
static int blocked_ssd_workers(void)
{
	return blocked_threads("/proc", "+fluxonkv_ssd");
}

/*
 * SSD IO is asynchronous: four persists writing to a device that takes
 * SP_DELAY_MS per write are in flight at once, and not one thread of the
 * module's SSD workqueue waits for them (each used to block a worker in
 * submit_bio_wait() for the whole write).  They commit afterwards.
 */
FKV_TEST(slow_persists_in_flight_block_no_worker)
{
	uint64_t base, ids[4];
	struct fkv_holder h;
	struct fkv *kv;
	char key[16];
	int i, blocked = 0, looks = 0;
	int64_t end;

	base = setup("segment_mb=8");
	dm_delay_create(0, SP_DELAY_MS);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, SP_CAP), 0);
	for (i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "aw-%d", i);
		ids[i] = put_pattern(kv, key, SP_LEN, 40 + i);
	}
	/* while they write: look a few times, none may be blocked */
	end = fkv_now_ms() + SP_DELAY_MS / 2;
	while (fkv_now_ms() < end && persists_done() == 0) {
		blocked += blocked_ssd_workers();
		looks++;
		fkv_msleep(50);
	}
	FKV_ASSERT_GT(looks, 0);
	FKV_ASSERT_EQ(persists_done(), 0);	/* still writing, all four */
	FKV_ASSERT(blocked == 0, "%d looks found %d SSD workers blocked in "
		   "IO", looks, blocked);
	wait_persists(4);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 4);
	for (i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "aw-%d", i);
		FKV_ASSERT_EQ(get_check(kv, key, SP_LEN, 40 + i, ids[i], &h),
			      FLUXONKV_SOURCE_MEMORY);
		release(kv, &h);
		delete_key(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/* ---- 13. SSD refills through io_uring, completed from the read ---- */

#define RR_DELAY_MS	800	/* each read of the dm-delay device */
#define RR_CAP		(64 * FKV_MIB)
#define RR_KEYS		4
#define RR_LEN		(FKV_MIB - 96)

/* io-wq workers of this process in uninterruptible sleep ("D"). */
static int blocked_io_wq_workers(void)
{
	return blocked_threads("/proc/self/task", "(iou-wrk-");
}

/*
 * The RR_KEYS values only on the SSD: a value as large as the segment
 * evicts them from DRAM, then goes.
 */
static void rr_ssd_only(struct fkv *kv, uint64_t base, uint64_t *persists)
{
	fill_segment(kv, base, "rr-fill", *persists, persists);
	delete_key(kv, "rr-fill");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
}

/*
 * The start of the RR tests: the module loaded with @params and fluxond
 * started, a dm-delay shard whose reads take @read_ms, the RR_KEYS values
 * rr-<i> put (salt 70 + i, ids in @ids) and persisted.  Returns
 * segment_used_bytes before the puts.
 */
static uint64_t rr_begin(const char *params, unsigned int read_ms,
			 struct fkv **kv, uint64_t *ids, uint64_t *persists)
{
	uint64_t base = setup(params);
	char key[16];
	int i;

	dm_delay_create(read_ms, 0);
	*kv = kv_open();
	FKV_ASSERT_EQ(attach_file(*kv, DLY_PATH, 0, RR_CAP), 0);
	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		ids[i] = put_pattern(*kv, key, RR_LEN, 70 + i);
		wait_persists(++*persists);
	}
	return base;
}

/*
 * While the first SSD read of the refills just submitted is out (half a
 * dm-delay read), no io-wq worker of this process waits for any of them.
 */
static void rr_no_worker_waits(void)
{
	int64_t end = fkv_now_ms() + RR_DELAY_MS / 2;
	int blocked = 0, looks = 0;

	while (fkv_now_ms() < end && fkv_sysfs("ssd_reads") == 0) {
		blocked += blocked_io_wq_workers();
		looks++;
		fkv_msleep(40);
	}
	FKV_ASSERT_GT(looks, 0);
	FKV_ASSERT(blocked == 0, "%d looks found %d io-wq workers blocked "
		   "on refills", looks, blocked);
}

/* Submit a GET of each rr-<i> through R. */
static void rr_submit(struct fkv_ring *r)
{
	static char keys[RR_KEYS][16];
	struct fkv_op op = { .opcode = FLUXONKV_OP_GET };
	int i;

	for (i = 0; i < RR_KEYS; i++) {
		snprintf(keys[i], sizeof(keys[i]), "rr-%d", i);
		op.key = keys[i];
		op.key_len = strlen(keys[i]);
		FKV_ASSERT_EQ(fkv_ring_prep(r, &op, i), 0);
	}
	FKV_ASSERT_EQ(fkv_ring_submit(r), RR_KEYS);
}

/*
 * A GET through the ring that refills from the local SSD submits its read
 * at the ring's inline issue and completes from the read's end in the
 * submitter's task: with RR_KEYS refills in flight on a slow device, no
 * io-wq worker of the process waits for them (each used to block one),
 * and the completions carry the right bytes.  A submitter killed with its
 * refills out leaks nothing (no holder, no replica, the segment's bytes
 * back); a read that fails is revoked and the get re-selected: a clean
 * miss, never bytes.
 */
FKV_TEST_TIMEOUT(ring_ssd_refills_complete_from_the_read_and_block_no_worker,
		 180)
{
	uint64_t base, ids[RR_KEYS], persists = 0, async0, revokes;
	struct fkv_completion c[RR_KEYS];
	char key[16], error[128], devno[32];
	int i, n, got = 0, sync_pipe[2];
	struct fkv_ring *r;
	struct fkv *kv;
	pid_t pid;

	base = rr_begin("segment_mb=8", RR_DELAY_MS, &kv, ids, &persists);

	/* 1. four refills in flight, no io-wq worker waiting for them */
	rr_ssd_only(kv, base, &persists);
	async0 = fkv_sysfs("refills_async");
	FKV_ASSERT_EQ(fkv_ring_open(kv, 8, &r), 0);
	rr_submit(r);
	rr_no_worker_waits();
	FKV_ASSERT_EQ(fkv_sysfs("refills_async") - async0, RR_KEYS);
	while (got < RR_KEYS) {
		n = fkv_ring_reap(r, c, RR_KEYS, 1);
		FKV_ASSERT_GT(n, 0);
		for (int j = 0; j < n; j++) {
			i = (int)c[j].user_data;
			snprintf(key, sizeof(key), "rr-%d", i);
			FKV_ASSERT(c[j].op.result == 0, "ring get '%s': %s",
				   key, fkv_strerror(c[j].op.result));
			FKV_ASSERT_EQ(c[j].op.source, FLUXONKV_SOURCE_SSD);
			FKV_ASSERT_EQ(c[j].op.holder.source,
				      FLUXONKV_SOURCE_SSD);
			check_holder(kv, &c[j].op.holder, key, RR_LEN, 70 + i,
				     ids[i]);
			check_padding(&c[j].op.holder, key);
			release(kv, &c[j].op.holder);
		}
		got += n;
	}
	fkv_ring_close(r);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	/* 2. the submitter killed with its refills out */
	rr_ssd_only(kv, base, &persists);
	async0 = fkv_sysfs("refills_async");
	FKV_ASSERT_EQ(pipe(sync_pipe), 0);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		struct fkv *ckv = NULL;
		struct fkv_ring *cring = NULL;
		char one = 1;

		if (fkv_open(FKV_DEV_PATH, &ckv) ||
		    fkv_ring_open(ckv, 8, &cring))
			_exit(2);
		rr_submit(cring);
		if (write(sync_pipe[1], &one, 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(sync_pipe[1]);
	{
		char one = 0;

		FKV_ASSERT_EQ(read(sync_pipe[0], &one, 1), 1);
	}
	close(sync_pipe[0]);
	FKV_ASSERT_EQ(fkv_sysfs("refills_async") - async0, RR_KEYS);
	kill(pid, SIGKILL);
	FKV_ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	FKV_ASSERT_SYSFS_SETTLES("ssd_reads", 2 * RR_KEYS);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);

	/* 3. the device fails: revoked, re-selected, a clean miss */
	snprintf(error, sizeof(error), "0 %" PRIu64 " error\n",
		 dm_disk("dm-delay", devno, sizeof(devno)));
	dm_swap(DLY_NAME, error);
	revokes = fkv_sysfs("ssd_revokes");
	FKV_ASSERT_EQ(fkv_ring_open(kv, 8, &r), 0);
	rr_submit(r);
	for (got = 0; got < RR_KEYS; got += n) {
		n = fkv_ring_reap(r, c, RR_KEYS, 1);
		FKV_ASSERT_GT(n, 0);
		for (int j = 0; j < n; j++)
			FKV_ASSERT(c[j].op.result == -ENOENT ||
				   c[j].op.result == -EIO, "ring get rr-%d "
				   "from a failing SSD: %s",
				   (int)c[j].user_data,
				   c[j].op.result ? fkv_strerror(c[j].op.result) :
				   "a hit");
	}
	fkv_ring_close(r);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes") - revokes, RR_KEYS);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);

	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/*
 * The batch of the RB tests: GET rr-0, GET rr-1, a RELEASE of a holder
 * nobody has (-ENOENT at once), GET rr-2, GET rr-3, then GET rr-1 and
 * GET rr-0 again -- entries 5 and 6 name keys whose reads entries 0 and 1
 * started.
 */
#define RB_BOGUS_HOLDER	0xdead
#define RB_ENTRIES	7
#define RB_STOP		5	/* the first entry after a read of its key */
static const char *const rb_keys[RB_ENTRIES] = {
	"rr-0", "rr-1", NULL, "rr-2", "rr-3", "rr-1", "rr-0",
};
static const int rb_rr[RB_ENTRIES] = { 0, 1, -1, 2, 3, 1, 0 };

static void rb_ops(struct fluxonkv_op *k)
{
	int i;

	memset(k, 0, RB_ENTRIES * sizeof(*k));
	for (i = 0; i < RB_ENTRIES; i++) {
		if (rb_rr[i] < 0) {
			k[i].opcode = FLUXONKV_OP_RELEASE;
			k[i].holder_id = RB_BOGUS_HOLDER;
			continue;
		}
		k[i].opcode = FLUXONKV_OP_GET;
		k[i].key_ptr = (uintptr_t)rb_keys[i];
		k[i].key_len = strlen(rb_keys[i]);
	}
}

/* Send batch @b through @ring, raw (no library); its cqe->res. */
static int rb_send(struct io_uring *ring, int fd, struct fluxonkv_batch *b)
{
	struct fluxonkv_uring_cmd cmd = { .arg = (uintptr_t)b };
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	FKV_ASSERT(sqe != NULL);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = FLUXONKV_IOC_BATCH;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	FKV_ASSERT_EQ(io_uring_submit(ring), 1);
	return 0;
}

static int rb_reap(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int res;

	FKV_ASSERT_EQ(io_uring_wait_cqe(ring, &cqe), 0);
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/* Entry @i of a raw batch hit @rr's value (the right bytes); released. */
static void rb_check_get(struct fkv *kv, const struct fluxonkv_op *k, int i,
			 const uint64_t *ids)
{
	const uint8_t *base = fkv_segment_base(kv);
	int rr = rb_rr[i];
	struct fluxonkv_op rel = { .opcode = FLUXONKV_OP_RELEASE };
	struct fluxonkv_batch b = {
		.size = sizeof(b), .count = 1, .ops_ptr = (uintptr_t)&rel,
		.op_size = sizeof(rel),
	};

	FKV_ASSERT(k->result == 0, "entry %d (get %s): %s", i, rb_keys[i],
		   fkv_strerror(k->result));
	FKV_ASSERT_EQ(k->len, RR_LEN);
	FKV_ASSERT_EQ(k->put_id, ids[rr]);
	FKV_ASSERT(k->offset + RR_LEN <= fkv_segment_size(kv));
	FKV_ASSERT_PATTERN(base + k->offset, RR_LEN, rb_keys[i],
			   strlen(rb_keys[i]), 70 + rr);
	rel.holder_id = k->holder_id;
	FKV_ASSERT_EQ(ioctl(fkv_fd(kv), FLUXONKV_IOC_BATCH, &b), 0);
	FKV_ASSERT_EQ(rel.result, 0);
}

/*
 * A child that sends the RB batch with FLUXONKV_BATCH_F_RESUME through a
 * ring of its own and waits; returns once it sent it.
 */
static pid_t rb_child(void)
{
	struct fluxonkv_op k[RB_ENTRIES];
	int sync_pipe[2];
	char one = 1;
	pid_t pid;

	FKV_ASSERT_EQ(pipe(sync_pipe), 0);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		struct fluxonkv_batch b = {
			.size = sizeof(b), .count = RB_ENTRIES,
			.ops_ptr = (uintptr_t)k, .op_size = sizeof(k[0]),
			.flags = FLUXONKV_BATCH_F_RESUME,
		};
		struct fkv *ckv = NULL;
		struct io_uring cring;

		if (fkv_open(FKV_DEV_PATH, &ckv) ||
		    io_uring_queue_init(8, &cring, 0))
			_exit(2);
		rb_ops(k);
		rb_send(&cring, fkv_fd(ckv), &b);
		if (write(sync_pipe[1], &one, 1) != 1)
			_exit(3);
		pause();
		_exit(0);
	}
	close(sync_pipe[1]);
	FKV_ASSERT_EQ(read(sync_pipe[0], &one, 1), 1);
	close(sync_pipe[0]);
	return pid;
}

/*
 * With FLUXONKV_BATCH_F_RESUME, every GET of a batch over io_uring that
 * reads the local SSD goes on without the submitter and the pass runs the
 * next entries meanwhile: four reads of one batch in flight at once, no
 * io-wq worker waiting for any.  An entry naming the key of a read in
 * flight waits for it: the command ends there (-EAGAIN, done at that
 * entry, every entry before it written) and the same header sent again
 * runs the rest.  Without the flag the batch runs whole as before; the
 * library resends by itself; a submitter killed with the reads out leaks
 * nothing, and one stopped with them out pins no ring entry once they
 * ended.
 */
FKV_TEST_TIMEOUT(ring_batch_reads_every_ssd_get_and_resumes_after_its_key, 240)
{
	uint64_t base, ids[RR_KEYS], persists = 0, async0, reads0;
	struct fluxonkv_op k[RB_ENTRIES];
	struct fluxonkv_batch b;
	struct fkv_op ops[RB_ENTRIES];
	struct fkv_completion c;
	int i, fd;
	struct io_uring ring;
	struct fkv_ring *r;
	struct fkv *kv;
	int64_t end;
	pid_t pid;

	base = rr_begin("segment_mb=8", RR_DELAY_MS, &kv, ids, &persists);
	fd = fkv_fd(kv);
	FKV_ASSERT_EQ(io_uring_queue_init(8, &ring, 0), 0);

	/* 1. the four reads at once; the pass stops at entry RB_STOP */
	rr_ssd_only(kv, base, &persists);
	async0 = fkv_sysfs("refills_async");
	rb_ops(k);
	b = (struct fluxonkv_batch){
		.size = sizeof(b), .count = RB_ENTRIES, .ops_ptr = (uintptr_t)k,
		.op_size = sizeof(k[0]), .flags = FLUXONKV_BATCH_F_RESUME,
	};
	rb_send(&ring, fd, &b);
	FKV_ASSERT_EQ(fkv_sysfs("refills_async") - async0, RR_KEYS);
	rr_no_worker_waits();
	FKV_ASSERT_EQ(rb_reap(&ring), -EAGAIN);
	FKV_ASSERT_EQ(b.done, RB_STOP);
	FKV_ASSERT_EQ(k[2].result, -ENOENT);	/* ran meanwhile */
	FKV_ASSERT_EQ(k[RB_STOP].result, 0);	/* not run: untouched */
	FKV_ASSERT_EQ(k[RB_STOP].holder_id, 0);
	for (i = 0; i < RB_STOP; i++)
		if (rb_rr[i] >= 0) {
			FKV_ASSERT_EQ(k[i].source, FLUXONKV_SOURCE_SSD);
			rb_check_get(kv, &k[i], i, ids);
		}
	/* the rest (from DRAM, or the SSD again if promoted and dropped) */
	rb_send(&ring, fd, &b);
	FKV_ASSERT_EQ(rb_reap(&ring), 0);
	FKV_ASSERT_EQ(b.done, RB_ENTRIES);
	for (i = RB_STOP; i < RB_ENTRIES; i++)
		rb_check_get(kv, &k[i], i, ids);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	/* 2. without the flag: the batch runs whole, in one command */
	rr_ssd_only(kv, base, &persists);
	rb_ops(k);
	b.flags = 0;
	b.done = 0;
	rb_send(&ring, fd, &b);
	FKV_ASSERT_EQ(rb_reap(&ring), 0);
	FKV_ASSERT_EQ(b.done, RB_ENTRIES);
	FKV_ASSERT_EQ(k[2].result, -ENOENT);
	for (i = 0; i < RB_ENTRIES; i++)
		if (rb_rr[i] >= 0)
			rb_check_get(kv, &k[i], i, ids);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	/* 3. the library sends the rest itself: one completion, all ran */
	rr_ssd_only(kv, base, &persists);
	async0 = fkv_sysfs("refills_async");
	memset(ops, 0, sizeof(ops));
	for (i = 0; i < RB_ENTRIES; i++) {
		if (rb_rr[i] < 0) {
			ops[i].opcode = FLUXONKV_OP_RELEASE;
			ops[i].holder.id = RB_BOGUS_HOLDER;
			ops[i].holder.data = fkv_segment_base(kv);
			continue;
		}
		ops[i].opcode = FLUXONKV_OP_GET;
		ops[i].key = rb_keys[i];
		ops[i].key_len = strlen(rb_keys[i]);
	}
	FKV_ASSERT_EQ(fkv_ring_open(kv, 4, &r), 0);
	FKV_ASSERT_EQ(fkv_ring_prep_batch(r, ops, RB_ENTRIES, 7), 0);
	FKV_ASSERT_EQ(fkv_ring_reap(r, &c, 1, 1), 1);
	FKV_ASSERT_EQ(c.user_data, 7);
	FKV_ASSERT(c.op.result == 0, "batch: %s", fkv_strerror(c.op.result));
	/* the four, and entries 5 and 6 if their replicas are not in yet */
	FKV_ASSERT_GE(fkv_sysfs("refills_async") - async0, RR_KEYS);
	for (i = 0; i < RB_ENTRIES; i++) {
		if (rb_rr[i] < 0) {
			FKV_ASSERT_EQ(ops[i].result, -ENOENT);
			continue;
		}
		FKV_ASSERT(ops[i].result == 0, "entry %d (%s): %s", i,
			   rb_keys[i], fkv_strerror(ops[i].result));
		check_holder(kv, &ops[i].holder, rb_keys[i], RR_LEN,
			     70 + rb_rr[i], ids[rb_rr[i]]);
		release(kv, &ops[i].holder);
	}
	fkv_ring_close(r);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	/* 4. the submitter killed with a batch's four reads out */
	rr_ssd_only(kv, base, &persists);
	async0 = fkv_sysfs("refills_async");
	reads0 = fkv_sysfs("ssd_reads");
	pid = rb_child();
	FKV_ASSERT_EQ(fkv_sysfs("refills_async") - async0, RR_KEYS);
	kill(pid, SIGKILL);
	FKV_ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	FKV_ASSERT_SYSFS_SETTLES("ssd_reads", reads0 + RR_KEYS);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);	/* none published */
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	/*
	 * 5. the submitter stopped with them out: each read is checked and
	 * its ring entry let go without it (a stopped task runs no task
	 * work; ring writers must not wait for it), then it is killed
	 */
	rr_ssd_only(kv, base, &persists);
	reads0 = fkv_sysfs("ssd_reads");
	pid = rb_child();
	kill(pid, SIGSTOP);
	FKV_ASSERT_SYSFS_SETTLES("ssd_reads", reads0 + RR_KEYS);
	for (end = fkv_now_ms() + 2000;; fkv_msleep(20)) {
		int pinned = 0;

		for (i = 0; i < RR_KEYS; i++) {
			char key[16];

			snprintf(key, sizeof(key), "rr-%d", i);
			pinned += ring_pins(key, NULL) != 0;
		}
		if (!pinned)
			break;
		FKV_ASSERT(fkv_now_ms() < end, "%d of %d entries still pinned "
			   "by the stopped submitter's reads", pinned, RR_KEYS);
	}
	kill(pid, SIGKILL);
	FKV_ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	io_uring_queue_exit(&ring);
	for (i = 0; i < RR_KEYS; i++) {
		char key[16];

		snprintf(key, sizeof(key), "rr-%d", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/*
 * Reap RR_KEYS ring completions: each the right bytes from the SSD
 * (released), or each @want_err -- or -ENOENT for a key in @gone (a bit
 * per key: deleted meanwhile); returns how many were hits.
 */
static int rr_reap_gone(struct fkv *kv, struct fkv_ring *r,
			const uint64_t *ids, int want_err, unsigned int gone)
{
	struct fkv_completion c[RR_KEYS];
	int got, n, i, hits = 0;
	char key[16];

	for (got = 0; got < RR_KEYS; got += n) {
		n = fkv_ring_reap(r, c, RR_KEYS, 1);
		FKV_ASSERT_GT(n, 0);
		for (int j = 0; j < n; j++) {
			i = (int)c[j].user_data;
			snprintf(key, sizeof(key), "rr-%d", i);
			if (((gone >> i) & 1) && c[j].op.result == -ENOENT)
				continue;
			FKV_ASSERT(c[j].op.result == want_err, "ring get "
				   "'%s': %s, want %s", key,
				   c[j].op.result ?
				   fkv_strerror(c[j].op.result) : "a hit",
				   want_err ? fkv_strerror(want_err) :
				   "a hit");
			if (c[j].op.result)
				continue;
			FKV_ASSERT_EQ(c[j].op.source, FLUXONKV_SOURCE_SSD);
			check_holder(kv, &c[j].op.holder, key, RR_LEN, 70 + i,
				     ids[i]);
			check_padding(&c[j].op.holder, key);
			release(kv, &c[j].op.holder);
			hits++;
		}
	}
	return hits;
}

static int rr_reap(struct fkv *kv, struct fkv_ring *r, const uint64_t *ids,
		   int want_err)
{
	return rr_reap_gone(kv, r, ids, want_err, 0);
}

/*
 * Issue 31: a GET through the ring whose SSD refill finds no room waits
 * for it without an io-wq worker (a waitqueue entry whose wake retries
 * the allocation and submits the read).  1. The segment is full of one
 * held value: RR_KEYS ring refills wait, no io-wq worker of the process
 * blocked, `refills_room_async` counts them; the holder goes, the next
 * room ask evicts the value, and every refill completes with the right
 * bytes.  2. The held value stays held past the room wait's 5 s: every
 * refill completes -ENOSPC, nothing left behind (no holder, no replica
 * but the held one, the segment's bytes back).  3. Two of the keys are
 * deleted while their refills wait: those complete with the deleted
 * version's exact bytes (ordered before the delete) or -ENOENT (the copy
 * went), the others with theirs; afterwards the deleted keys miss.  4. The
 * submitter is killed while its refills wait and the value stays held
 * past the wait's 5 s: its exit waits for them, and they leave nothing
 * behind (no holder, no replica, the segment's bytes back).  5. The room
 * asks go to a stopped fluxond (the segment full of an unpinned value),
 * which is then killed: every refill completes -ENOTCONN, nothing held.
 * Before: each refill went to io-wq, whose worker slept in the room wait.
 */
FKV_TEST_TIMEOUT(ring_ssd_refills_that_find_no_room_wait_without_io_wq, 180)
{
	uint64_t base, ids[RR_KEYS], persists = 0, room0, used;
	int i, blocked = 0, looks = 0;
	struct fkv_holder fill;
	struct fkv_ring *r;
	struct fkv *kv;
	char key[16];
	int64_t end;

	/*
	 * Room only through NEED_ROOM: the values here are all clean (an SSD
	 * copy), and the module would drop them itself (test_clean).
	 */
	fkv_env_daemon_arg = "--no-clean-drops";
	base = rr_begin("segment_mb=8", 20, &kv, ids, &persists);

	for (int round = 1; round <= 3; round++) {
		rr_ssd_only(kv, base, &persists);
		fill_segment(kv, base, "rr-fill", 900 + round, &persists);
		FKV_ASSERT_EQ(fkv_get(kv, "rr-fill", 7, &fill), 0);
		used = fkv_sysfs("segment_used_bytes");
		room0 = 0;	/* read leniently: the blocked check comes first */
		(void)fkv_sysfs_u64("refills_room_async", &room0);
		FKV_ASSERT_EQ(fkv_ring_open(kv, 8, &r), 0);
		rr_submit(r);
		end = fkv_now_ms() + 1000;
		while (fkv_now_ms() < end) {
			blocked += blocked_io_wq_workers();
			looks++;
			fkv_msleep(50);
		}
		FKV_ASSERT(blocked == 0, "%d looks found %d io-wq workers "
			   "blocked on refills waiting for room", looks,
			   blocked);
		FKV_ASSERT_EQ(fkv_sysfs("refills_room_async") - room0,
			      RR_KEYS);
		FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
		if (round == 1) {
			release(kv, &fill);
			FKV_ASSERT_EQ(rr_reap(kv, r, ids, 0), RR_KEYS);
		} else if (round == 3) {
			FKV_ASSERT_EQ(delete_any(kv, "rr-2"), 0);
			FKV_ASSERT_EQ(delete_any(kv, "rr-3"), 0);
			release(kv, &fill);
			FKV_ASSERT_GE(rr_reap_gone(kv, r, ids, 0, 0xc), 2);
			get_miss(kv, "rr-2");
			get_miss(kv, "rr-3");
		} else {
			FKV_ASSERT_EQ(rr_reap(kv, r, ids, -ENOSPC), 0);
			FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), used);
			release(kv, &fill);
		}
		fkv_ring_close(r);
		FKV_ASSERT_SYSFS_SETTLES("holders", 0);
		delete_any(kv, "rr-fill");
	}

	/* 4. the submitter killed while its refills wait for room */
	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		delete_any(kv, key);
		ids[i] = put_pattern(kv, key, RR_LEN, 70 + i);
		wait_persists(++persists);
	}
	rr_ssd_only(kv, base, &persists);
	fill_segment(kv, base, "rr-fill", 904, &persists);
	FKV_ASSERT_EQ(fkv_get(kv, "rr-fill", 7, &fill), 0);
	used = fkv_sysfs("segment_used_bytes");
	room0 = fkv_sysfs("refills_room_async");
	{
		int sync_pipe[2];
		char one = 0;
		pid_t pid;

		FKV_ASSERT_EQ(pipe(sync_pipe), 0);
		pid = fork();
		FKV_ASSERT(pid >= 0);
		if (!pid) {
			struct fkv *ckv = NULL;
			struct fkv_ring *cring = NULL;

			one = 1;
			if (fkv_open(FKV_DEV_PATH, &ckv) ||
			    fkv_ring_open(ckv, 8, &cring))
				_exit(2);
			rr_submit(cring);
			if (write(sync_pipe[1], &one, 1) != 1)
				_exit(3);
			pause();
			_exit(0);
		}
		close(sync_pipe[1]);
		FKV_ASSERT_EQ(read(sync_pipe[0], &one, 1), 1);
		close(sync_pipe[0]);
		FKV_ASSERT_EQ(fkv_sysfs_wait("refills_room_async",
					     room0 + RR_KEYS, 3000, NULL), 0);
		kill(pid, SIGKILL);
		FKV_ASSERT_EQ(waitpid(pid, NULL, 0), pid);
	}
	FKV_ASSERT_SYSFS_SETTLES("holders", 1);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), used);
	release(kv, &fill);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	delete_any(kv, "rr-fill");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);

	/* 5. the room asks go to a stopped fluxond, which is then killed */
	fill_segment(kv, base, "rr-fill", 905, &persists);
	room0 = fkv_sysfs("refills_room_async");
	FKV_ASSERT_EQ(fkv_ring_open(kv, 8, &r), 0);
	FKV_ASSERT_EQ(kill(fkv_env_daemon, SIGSTOP), 0);
	rr_submit(r);
	FKV_ASSERT_EQ(fkv_sysfs_wait("refills_room_async", room0 + RR_KEYS,
				     3000, NULL), 0);
	fkv_msleep(300);	/* the asks are out */
	FKV_ASSERT_EQ(fkv_daemon_kill(), 0);
	FKV_ASSERT_EQ(rr_reap(kv, r, ids, -ENOTCONN), 0);
	fkv_ring_close(r);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_START_DAEMON();
	delete_any(kv, "rr-fill");

	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
	fkv_env_daemon_arg = NULL;
}

/* As uid 65534 (charged, unlike the privileged root session): RR_KEYS
 * ring GETs of rr-<i>; each one's result goes out on @out. */
static void rr_get_as_nobody(int out)
{
	struct fkv_completion c[RR_KEYS];
	int res[RR_KEYS], got, n, j;
	struct fkv_ring *r = NULL;
	struct fkv *kv = NULL;

	if (setgid(65534) || setuid(65534))
		_exit(2);
	n = fkv_open(FKV_DEV_PATH, &kv);
	if (n)
		_exit(10 + (-n & 0x3f));	/* 10 + errno */
	n = fkv_ring_open(kv, 8, &r);
	if (n)
		_exit(80 + (-n & 0x3f));
	rr_submit(r);
	for (got = 0; got < RR_KEYS; got += n) {
		n = fkv_ring_reap(r, c, RR_KEYS, 1);
		if (n <= 0)
			_exit(4);
		for (j = 0; j < n; j++) {
			res[c[j].user_data] = c[j].op.result;
			if (!c[j].op.result &&
			    fkv_holder_release(kv, &c[j].op.holder))
				_exit(5);
		}
	}
	if (write(out, res, sizeof(res)) != sizeof(res))
		_exit(6);
	_exit(0);
}

/*
 * An asynchronous refill's target is its getter's pin (issue 29): it
 * counts in the user's budget (pin_max_pct) from before it is allocated
 * (the room wait included) until the get completes.  A user with 2 MiB
 * of budget submits four 1 MiB ring GETs that must wait for room: two
 * wait, two complete EDQUOT at once; once the room comes, the two that
 * waited are hits.  Before: all four waited (uncharged), so one user's
 * refills could pin any share of the segment.
 */
FKV_TEST_TIMEOUT(ring_refill_targets_count_in_their_users_pin_budget, 120)
{
	uint64_t base, ids[RR_KEYS], persists = 0, room0;
	int i, fds[2], res[RR_KEYS], hits = 0, edquot = 0, status;
	struct fkv_holder fill;
	struct fkv *kv;
	char key[16];
	int64_t end;
	pid_t pid;

	base = rr_begin("segment_mb=8 pin_max_pct=25", 20, &kv, ids, &persists);	/* 2 MiB a user */
	rr_ssd_only(kv, base, &persists);
	/* root's session is privileged: its holder is charged to nobody */
	fill_segment(kv, base, "rr-fill", 990, &persists);
	FKV_ASSERT_EQ(fkv_get(kv, "rr-fill", 7, &fill), 0);
	room0 = fkv_sysfs("refills_room_async");

	FKV_ASSERT_EQ(pipe(fds), 0);
	FKV_ASSERT_EQ(chmod(FKV_DEV_PATH, 0666), 0);	/* for uid 65534 */
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		close(fds[0]);
		rr_get_as_nobody(fds[1]);
	}
	close(fds[1]);
	end = fkv_now_ms() + 5000;
	while (fkv_sysfs("refills_room_async") - room0 < 2 &&
	       fkv_now_ms() < end)
		fkv_msleep(20);
	fkv_msleep(500);	/* any other would be waiting by now */
	FKV_ASSERT(fkv_sysfs("refills_room_async") - room0 == 2,
		   "%" PRIu64 " refills wait for room in a 2 MiB budget",
		   fkv_sysfs("refills_room_async") - room0);
	release(kv, &fill);
	FKV_ASSERT_EQ(read(fds[0], res, sizeof(res)), sizeof(res));
	close(fds[0]);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT_EQ(chmod(FKV_DEV_PATH, 0660), 0);
	FKV_ASSERT(WIFEXITED(status) && !WEXITSTATUS(status),
		   "the getter's status %#x", status);
	for (i = 0; i < RR_KEYS; i++) {
		if (!res[i])
			hits++;
		else if (res[i] == -EDQUOT)
			edquot++;
		else
			FKV_ASSERT(0, "ring get rr-%d: %s", i,
				   fkv_strerror(res[i]));
	}
	FKV_ASSERT_EQ(hits, 2);
	FKV_ASSERT_EQ(edquot, 2);
	(void)ids;

	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	delete_any(kv, "rr-fill");
	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/*
 * The faults of an SSD refill through the ring (issue 29).  1. The
 * refill's target allocation fails at the inline issue (debugfs
 * fail_alloc: the slab allocation failing): the get goes to io-wq and
 * completes whole -- an ERR_PTR was taken for an allocation there.  2. The
 * reads fail (dm-error) with fluxond stopped: every GET completes within
 * a second with -EIO, no holder -- the completion used to make a
 * synchronous GET_REVOKE upcall and a whole new get in io_uring's task
 * work, waiting request_timeout_ms (5 s) per get for the stopped daemon,
 * the submitter (and its ring) stuck meanwhile.  The copies are unrouted
 * at once; the revokes reach fluxond once it runs again.
 */
FKV_TEST_TIMEOUT(ring_ssd_refill_faults_complete_promptly_with_an_error, 180)
{
	uint64_t base, ids[RR_KEYS], persists = 0, revokes, t0, ms;
	struct fkv_completion c[RR_KEYS];
	char key[16], error[128], devno[32];
	struct fkv_op op = { .opcode = FLUXONKV_OP_GET };
	int i, n, got;
	struct fkv_ring *r;
	struct fkv *kv;

	base = setup("segment_mb=8");
	if (fkv_debugfs_set("fail_alloc", 0))
		FKV_SKIP("no debugfs fail_alloc");
	dm_delay_create(RR_DELAY_MS, 0);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, RR_CAP), 0);
	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		ids[i] = put_pattern(kv, key, RR_LEN, 70 + i);
		wait_persists(++persists);
	}

	/* 1. the target's allocation fails at the inline issue */
	rr_ssd_only(kv, base, &persists);
	FKV_ASSERT_EQ(fkv_ring_open(kv, 8, &r), 0);
	FKV_ASSERT_EQ(fkv_debugfs_set("fail_alloc", 1), 0);
	op.key = "rr-0";
	op.key_len = 4;
	FKV_ASSERT_EQ(fkv_ring_prep(r, &op, 0), 0);
	FKV_ASSERT_EQ(fkv_ring_submit(r), 1);
	FKV_ASSERT_EQ(fkv_ring_reap(r, c, 1, 1), 1);
	FKV_ASSERT_EQ(fkv_debugfs_u32("fail_alloc"), 0);	/* it failed one */
	FKV_ASSERT(c[0].op.result == 0, "ring get with its target's "
		   "allocation failing once: %s",
		   fkv_strerror(c[0].op.result));
	check_holder(kv, &c[0].op.holder, "rr-0", RR_LEN, 70, ids[0]);
	release(kv, &c[0].op.holder);
	fkv_ring_close(r);

	/* 2. the reads fail, fluxond stopped: an error at once */
	rr_ssd_only(kv, base, &persists);
	snprintf(error, sizeof(error), "0 %" PRIu64 " error\n",
		 dm_disk("dm-delay", devno, sizeof(devno)));
	dm_swap(DLY_NAME, error);
	revokes = fkv_sysfs("ssd_revokes");
	FKV_ASSERT_EQ(fkv_ring_open(kv, 8, &r), 0);
	FKV_ASSERT_EQ(kill(fkv_env_daemon, SIGSTOP), 0);
	t0 = fkv_now_ms();
	rr_submit(r);
	for (got = 0; got < RR_KEYS; got += n) {
		n = fkv_ring_reap(r, c + got, RR_KEYS - got, 1);
		FKV_ASSERT_GT(n, 0);
	}
	ms = fkv_now_ms() - t0;
	fkv_diag("%d failed refills completed in %" PRIu64 " ms, fluxond "
		 "stopped", RR_KEYS, ms);
	FKV_ASSERT(ms < 2000, "failed refills took %" PRIu64 " ms with "
		   "fluxond stopped", ms);
	for (i = 0; i < RR_KEYS; i++)
		FKV_ASSERT(c[i].op.result == -EIO, "ring get rr-%d from a "
			   "failing SSD: %s", (int)c[i].user_data,
			   c[i].op.result ? fkv_strerror(c[i].op.result) :
			   "a hit");
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes") - revokes, RR_KEYS);
	FKV_ASSERT_EQ(kill(fkv_env_daemon, SIGCONT), 0);
	fkv_ring_close(r);
	/* unrouted: a get now is a miss, not another failed read */
	FKV_ASSERT_EQ(fkv_get_into(kv, "rr-1", 4, error, sizeof(error), NULL),
		      -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);

	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/*
 * fluxond killed while a put's persist is still writing: its SSD_COMMIT
 * finds no master and the entry is forgotten; the restarted fluxond adopts
 * the DRAM replica, sees no SSD copy and has it persisted again -- so the
 * value survives being evicted from DRAM later (it would be lost).
 */
FKV_TEST(a_persist_cut_short_by_a_daemon_kill_is_done_again_after_restart)
{
	uint64_t base, id, persists = 0;
	struct fkv_holder h;
	struct fkv *kv;

	base = setup("segment_mb=4");
	dm_delay_create(0, SP_DELAY_MS);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, SP_CAP), 0);
	id = put_pattern(kv, "rp-k", SP_LEN, 5);
	FKV_ASSERT_EQ(persists_done(), 0);	/* still writing */
	FKV_ASSERT_EQ(fkv_daemon_kill(), 0);
	/* the write ends, its SSD_COMMIT finds nobody: the entry is dropped */
	fkv_msleep(2 * SP_DELAY_MS + 500);
	FKV_ASSERT_EQ(persists_done(), 0);
	FKV_START_DAEMON();
	/* adopted from DRAM, written to the SSD again */
	wait_persists(++persists);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 1);
	FKV_ASSERT_EQ(get_check(kv, "rp-k", SP_LEN, 5, id, &h),
		      FLUXONKV_SOURCE_MEMORY);
	release(kv, &h);
	/* out of DRAM, back from the SSD */
	fill_segment(kv, base, "rp-fill", 6, &persists);
	FKV_ASSERT_EQ(get_check(kv, "rp-k", SP_LEN, 5, id, &h),
		      FLUXONKV_SOURCE_SSD);
	release(kv, &h);
	delete_key(kv, "rp-k");
	delete_key(kv, "rp-fill");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/*
 * Issue 33.  KEY's entries of version PUT_ID in debugfs `rings`: how many
 * are committed and routed, committed and not routed, dead; their pins.
 */
struct wr_count {
	int routed, unrouted, dead, writing, pins;
};

static void wr_count(const char *key, uint64_t put_id, struct wr_count *c)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/rings", "r");
	char line[512], state[16], k[128];
	unsigned long long off, len, alen, id;
	unsigned int pins;
	int r;

	memset(c, 0, sizeof(*c));
	FKV_ASSERT(f, "debugfs rings: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "\t%llu\t%llu\t%llu\t%15s\t%u\t%llu\t%d\t%127s",
			   &off, &len, &alen, state, &pins, &id, &r, k) != 8 ||
		    strcmp(k, key) || id != put_id)
			continue;
		c->pins += (int)pins;
		if (!strcmp(state, "dead"))
			c->dead++;
		else if (!strcmp(state, "writing"))
			c->writing++;
		else if (r)
			c->routed++;
		else
			c->unrouted++;
	}
	fclose(f);
}

#define WR_DELAY_MS	2500	/* each write of the dm-delay device */

/*
 * fluxond SIGKILLed while a put's persist is queued on a slow device,
 * started again at once (@late_commit: before that write ends, so its
 * SSD_COMMIT reaches the new master) or once the write ended with nobody
 * to commit to; right after the restart a put needs the whole segment, so
 * the adopted DRAM replica must go.  The adoption has the version written
 * again; whatever order the first write's commit, the second write and the
 * eviction come in, the value stays readable from exactly one committed,
 * routed SSD entry, and no committed entry of it is left unrouted.
 */
static void warm_restart_race(bool late_commit)
{
	uint64_t base, id, fill_len, t0, writes0;
	struct wr_count c;
	struct fkv_lookup l;
	struct fkv_holder h;
	struct fkv *kv;
	int src, ret, status;
	pid_t filler;

	base = setup("segment_mb=4");
	dm_delay_create(0, WR_DELAY_MS);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, SP_CAP), 0);
	writes0 = fkv_sysfs("ssd_writes");
	id = put_pattern(kv, "wr-k", SP_LEN, 11);
	FKV_ASSERT_EQ(persists_done(), 0);	/* still writing */
	t0 = (uint64_t)fkv_now_ms();
	FKV_ASSERT_EQ(fkv_daemon_kill(), 0);
	if (late_commit) {
		/* back well before the write ends, its second one well after */
		fkv_msleep(WR_DELAY_MS / 2);
	} else {
		/* the write ends, its SSD_COMMIT finds nobody */
		while (fkv_sysfs("ssd_writes") == writes0 &&
		       (uint64_t)fkv_now_ms() - t0 < 4 * WR_DELAY_MS)
			fkv_msleep(20);
		fkv_msleep(300);
	}
	FKV_START_DAEMON();
	fkv_diag("%s: fluxond back %" PRIu64 " ms after the kill, first write "
		 "%s", late_commit ? "late commit" : "commit lost",
		 (uint64_t)fkv_now_ms() - t0,
		 fkv_sysfs("ssd_writes") > writes0 ? "ended" : "still going");
	if (late_commit)
		FKV_ASSERT(fkv_sysfs("ssd_writes") == writes0,
			   "the first write ended before fluxond was back "
			   "(%" PRIu64 " ms): raise WR_DELAY_MS",
			   (uint64_t)fkv_now_ms() - t0);
	/* room pressure right after the restart: wr-k's DRAM copy must go */
	fill_len = fkv_sysfs("segment_capacity_bytes") - base;
	fflush(stdout);
	filler = fork();
	FKV_ASSERT(filler >= 0);
	if (filler == 0) {
		struct fkv *kv2 = kv_open();

		put_pattern(kv2, "wr-fill", fill_len, 12);
		fkv_close(kv2);
		_exit(0);
	}
	if (late_commit) {
		/*
		 * The first write commits (routed) and the master evicts the
		 * DRAM copy for the fill; its bytes stay until the second
		 * write (which reads them) ends.  Stop fluxond before that:
		 * the second write's commit stays unanswered.  The copy it
		 * replaced in the ring was routed, so the version must stay
		 * routed meanwhile (LOOKUP answers from the module's routes:
		 * no upcall).
		 */
		t0 = (uint64_t)fkv_now_ms();
		for (;;) {
			ret = fkv_lookup(kv, "wr-k", 4, &l);
			FKV_ASSERT(ret == 0, "lookup of wr-k: %s",
				   fkv_strerror(ret));
			if (l.source == FLUXONKV_SOURCE_SSD)
				break;
			FKV_ASSERT((uint64_t)fkv_now_ms() - t0 <
				   2 * WR_DELAY_MS, "wr-k still in DRAM");
			fkv_msleep(10);
		}
		FKV_ASSERT_EQ(kill(fkv_env_daemon, SIGSTOP), 0);
		wr_count("wr-k", id, &c);
		fkv_diag("DRAM copy evicted, fluxond stopped: %d routed, %d "
			 "writing", c.routed, c.writing);
		t0 = (uint64_t)fkv_now_ms();
		while (c.writing &&
		       (uint64_t)fkv_now_ms() - t0 < 3 * WR_DELAY_MS) {
			fkv_msleep(20);
			wr_count("wr-k", id, &c);
		}
		fkv_diag("second write over: %d routed, %d committed "
			 "unrouted, %d dead, %d writing, pins %d", c.routed,
			 c.unrouted, c.dead, c.writing, c.pins);
		ret = fkv_lookup(kv, "wr-k", 4, &l);
		FKV_ASSERT_EQ(kill(fkv_env_daemon, SIGCONT), 0);
		FKV_ASSERT(ret == 0, "lookup of wr-k with its second write's "
			   "commit unanswered: %s", fkv_strerror(ret));
		FKV_ASSERT_EQ(l.source, FLUXONKV_SOURCE_SSD);
		FKV_ASSERT_EQ(l.put_id, id);
		FKV_ASSERT_EQ(l.len, SP_LEN);
	}
	FKV_ASSERT_EQ(waitpid(filler, &status, 0), filler);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "the fill's put failed (status %#x)", status);
	/* both writes of wr-k and the fill's ended, every commit answered */
	t0 = (uint64_t)fkv_now_ms();
	for (;;) {
		wr_count("wr-k", id, &c);
		if (!c.writing && !c.pins &&
		    fkv_sysfs("ssd_writes") >= writes0 + 3)
			break;
		FKV_ASSERT((uint64_t)fkv_now_ms() - t0 < 6 * WR_DELAY_MS,
			   "writes of wr-k not over: %d writing, %d pins, "
			   "ssd_writes %" PRIu64, c.writing, c.pins,
			   fkv_sysfs("ssd_writes") - writes0);
		fkv_msleep(20);
	}
	fkv_msleep(200);	/* the last answers' ends */
	wr_count("wr-k", id, &c);
	fkv_diag("wr-k entries: %d routed, %d committed unrouted, %d dead; "
		 "replicas %" PRIu64 ", commits published %" PRIu64
		 " ignored %" PRIu64, c.routed, c.unrouted, c.dead,
		 fkv_sysfs("replicas"), fkv_sysfs("ssd_commits_published"),
		 fkv_sysfs("ssd_commits_ignored"));
	src = get_check(kv, "wr-k", SP_LEN, 11, id, &h);
	release(kv, &h);
	FKV_ASSERT_EQ(src, FLUXONKV_SOURCE_SSD);
	wr_count("wr-k", id, &c);
	FKV_ASSERT_EQ(c.routed, 1);
	FKV_ASSERT_EQ(c.unrouted, 0);
	delete_key(kv, "wr-k");
	delete_key(kv, "wr-fill");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

FKV_TEST_TIMEOUT(a_late_commit_and_the_repersist_after_a_kill_leave_one_routed_copy,
		 120)
{
	warm_restart_race(true);
}

FKV_TEST_TIMEOUT(an_adopted_replica_stays_until_its_repersist_commits, 120)
{
	warm_restart_race(false);
}

#define RQ_QUEUE	64	/* puts of rq-x: 4 writes in flight, 60 queued */
#define RQ_KEYS		4	/* then these: queued at the end */
#define RQ_DELAY_MS	400
#define RQ_LEN(i)	(8 * KIB + 100 + (i))

/*
 * fluxond SIGKILLed with a full persist queue and started again at once:
 * it has the adopted DRAM replicas written again while the previous
 * daemon's writes (64 versions of rq-x, then rq-0..3) still fill the
 * device's queue, and a put right after the restart needs the whole
 * segment.  No re-persist may be refused for a full queue (a refused one
 * is memory-only, evictable at once, and lost before the first write's
 * late commit could publish it); every value comes back from the SSD.
 */
FKV_TEST_TIMEOUT(adopted_replicas_are_persisted_again_behind_a_full_queue, 180)
{
	uint64_t base, ids[RQ_KEYS], errors0, writes0, fill_len, t0;
	struct wr_count c;
	struct fkv_holder h;
	unsigned int i, busy;
	struct fkv *kv;
	char key[32];
	int status;
	pid_t filler;

	base = setup("segment_mb=4");
	dm_delay_create(0, RQ_DELAY_MS);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, SP_CAP), 0);
	writes0 = fkv_sysfs("ssd_writes");
	for (i = 0; i < RQ_QUEUE; i++)
		put_pattern(kv, "rq-x", RQ_LEN(100), 30 + i);
	for (i = 0; i < RQ_KEYS; i++) {
		snprintf(key, sizeof(key), "rq-%u", i);
		ids[i] = put_pattern(kv, key, RQ_LEN(i), 40 + i);
	}
	fkv_diag("%" PRIu64 " of %u persists over before the kill",
		 persists_done(), RQ_QUEUE + RQ_KEYS);
	FKV_ASSERT_EQ(fkv_daemon_kill(), 0);
	errors0 = fkv_sysfs("ssd_persist_errors");
	FKV_START_DAEMON();
	fkv_diag("fluxond back; %" PRIu64 " of %u first writes over",
		 fkv_sysfs("ssd_writes") - writes0, RQ_QUEUE + RQ_KEYS);
	fill_len = fkv_sysfs("segment_capacity_bytes") - base;
	fflush(stdout);
	filler = fork();
	FKV_ASSERT(filler >= 0);
	if (filler == 0) {
		/* room comes as the values commit: try again after ENOSPC */
		struct fkv *kv2 = kv_open();
		uint8_t *buf = pattern("rq-fill", fill_len, 9);
		uint64_t id, end = (uint64_t)fkv_now_ms() + 60000;
		int ret;

		while ((ret = fkv_put(kv2, "rq-fill", 7, buf, fill_len,
				      &id)) && (uint64_t)fkv_now_ms() < end)
			fkv_diag("the fill's put: %s, again (replicas %" PRIu64
				 ", used %" PRIu64 ", ssd writes %" PRIu64
				 ", evictions %" PRIu64 ")",
				 fkv_strerror(ret), fkv_sysfs("replicas"),
				 fkv_sysfs("segment_used_bytes"),
				 fkv_sysfs("ssd_writes"),
				 fkv_sysfs("evictions"));
		_exit(ret ? 1 : 0);
	}
	FKV_ASSERT_EQ(waitpid(filler, &status, 0), filler);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "the fill's put failed (status %#x)", status);
	/* every write over, every commit answered */
	t0 = (uint64_t)fkv_now_ms();
	do {
		busy = 0;
		for (i = 0; i < RQ_KEYS; i++) {
			snprintf(key, sizeof(key), "rq-%u", i);
			wr_count(key, ids[i], &c);
			busy += c.writing + c.pins;
		}
		if (!busy)
			break;
		fkv_msleep(100);
	} while ((uint64_t)fkv_now_ms() - t0 < 60000);
	fkv_msleep(200);
	fkv_diag("re-persists refused: %" PRIu64 "; ssd writes %" PRIu64
		 ", commits published %" PRIu64 " ignored %" PRIu64,
		 fkv_sysfs("ssd_persist_errors") - errors0,
		 fkv_sysfs("ssd_writes") - writes0,
		 fkv_sysfs("ssd_commits_published"),
		 fkv_sysfs("ssd_commits_ignored"));
	for (i = 0; i < RQ_KEYS; i++) {
		snprintf(key, sizeof(key), "rq-%u", i);
		FKV_ASSERT_EQ(get_check(kv, key, RQ_LEN(i), 40 + i, ids[i], &h),
			      FLUXONKV_SOURCE_SSD);
		release(kv, &h);
		wr_count(key, ids[i], &c);
		FKV_ASSERT_EQ(c.routed, 1);
		FKV_ASSERT_EQ(c.unrouted, 0);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), errors0);
	for (i = 0; i < RQ_KEYS; i++) {
		snprintf(key, sizeof(key), "rq-%u", i);
		delete_key(kv, key);
	}
	delete_any(kv, "rq-x");
	delete_key(kv, "rq-fill");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/* ---- 11. a slow refill pins the ring tail while writes wrap ---- */

#define RP_V		FKV_MIB
#define RP_READ_MS	2000	/* wide: the puts below must fit in it on a loaded TCG host */
#define RP_WRITERS	4	/* the 4th wraps onto X */

struct rp_get {
	uint64_t put_id;
	int ret;
	unsigned int source;
	int64_t ms;
	int done;
};

/* get X (only on the SSD): its read waits RP_READ_MS on the device. */
static void *rp_get_x(void *arg)
{
	struct rp_get *g = arg;
	struct fkv *kv = kv_open();
	int64_t t0 = fkv_now_ms();
	struct fkv_holder h;

	g->ret = fkv_get(kv, "rp-x", 4, &h);
	g->ms = fkv_now_ms() - t0;
	if (!g->ret) {
		g->source = h.source;
		check_holder(kv, &h, "rp-x", RP_V, 1, g->put_id);
		check_padding(&h, "rp-x");
		release(kv, &h);
	}
	fkv_close(kv);
	__atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Ring: X, the filler F, W1..W3 fill it exactly; W4 wraps onto X.  While
 * a refill of X reads it from a device that delays reads, W4's write must
 * wait (busy wait) instead of overwriting X: the refill returns X's bytes;
 * then W4 and later writes complete.
 */
FKV_TEST(ring_writer_waits_for_a_slow_refill_pinning_the_tail)
{
	uint64_t base, seg, ring, persists = 0, busy0, n;
	uint64_t ids[RP_WRITERS + 3];
	struct rp_get g = { 0 };
	int i, pins, parked = -1;
	pthread_t tid;
	struct fkv_holder h;
	struct fkv *kv;
	char key[16];

	base = setup("segment_mb=4");
	seg = fkv_sysfs("segment_capacity_bytes") - base;
	ring = SSD_ALEN(RP_V) * 4 + SSD_ALEN(seg);
	ring = (ring + 4095) & ~4095ULL;
	dm_delay_create(RP_READ_MS, 0);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, ring), 0);

	g.put_id = put_pattern(kv, "rp-x", RP_V, 1);
	wait_persists(++persists);
	fill_segment(kv, base, "rp-fill", 2, &persists);
	busy0 = fkv_sysfs("ssd_busy_waits");
	FKV_ASSERT_EQ(busy0, 0);

	FKV_ASSERT_EQ(pthread_create(&tid, NULL, rp_get_x, &g), 0);
	/* the refill's read is on the device: X carries a read pin */
	wait_ring_pinned("rp-x", 0, 100, "X");

	/* W1..W3 fit; W4 waits for X */
	n = put_writers_until_busy(kv, "rp", RP_WRITERS, RP_V, ids, persists,
				   busy0);
	pins = ring_pins("rp-x", &parked);
	fkv_diag("during the refill: %" PRIu64 " persists ended, X pins %d, "
		 "writes parked %d, refill %s", n, pins, parked,
		 __atomic_load_n(&g.done, __ATOMIC_ACQUIRE) ? "done" :
		 "reading");
	if (pins != -2) {
		/* read after n: X was still pinned when n was read */
		FKV_ASSERT(pins > 0, "X's read ended before the check (pins "
			   "%d): raise RP_READ_MS", pins);
		FKV_ASSERT_EQ(n, persists + RP_WRITERS - 1);
		FKV_ASSERT_EQ(parked, 1);
		FKV_ASSERT_EQ(ring_pins("rp-w4", NULL), -1);
	}

	pthread_join(tid, NULL);
	fkv_diag("refill of X: %s after %" PRId64 " ms (read delay %u ms)",
		 g.ret ? fkv_strerror(g.ret) : "hit", g.ms, RP_READ_MS);
	FKV_ASSERT(g.ret == 0, "get of X: %s", fkv_strerror(g.ret));
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_GE(g.ms, RP_READ_MS * 3 / 4);	/* the read was slow */
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes"), 0);

	/* X is unpinned: W4 overwrites it, and writes go on */
	persists += RP_WRITERS;
	wait_persists(persists);
	FKV_ASSERT_GE(fkv_sysfs("ssd_evictions"), 1);
	for (i = RP_WRITERS + 1; i <= RP_WRITERS + 2; i++) {
		snprintf(key, sizeof(key), "rp-w%d", i);
		ids[i] = put_pattern(kv, key, RP_V, 10 + i);
		wait_persists(++persists);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), persists);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	FKV_ASSERT_LE(fkv_sysfs("kv_ssd_used_bytes"), ring);
	get_check(kv, "rp-w4", RP_V, 10 + RP_WRITERS, ids[RP_WRITERS], &h);
	release(kv, &h);

	/* X, F, W1.. may be gone from both tiers by now */
	delete_any(kv, "rp-x");
	delete_any(kv, "rp-fill");
	for (i = 1; i <= RP_WRITERS + 2; i++) {
		snprintf(key, sizeof(key), "rp-w%d", i);
		delete_any(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/* ---- 12. an offline shard's entry a refill still reads ---- */

#define OR_READ_MS	4000	/* X's read: the shard goes offline during it */
#define OR_RING		(32 * FKV_MIB)

/*
 * A raw shard over dm: X (1 MiB) is only on it.  Then the table becomes a
 * slow delay over X's MiB and errors past it: a refill of X reads for
 * 4 s, and meanwhile 32 failed writes take the shard offline.  X's entry
 * is forgotten (dead) but read-pinned: it and its kernel memory stay
 * until the read is over (the refill hands X's bytes whole, or misses);
 * then the shard is reclaimed -- entries' memory 0, out of debugfs, its
 * number 0 free for the healthy range attached again.  Before, the
 * offline shard kept its entries until the unload.
 */
FKV_TEST_TIMEOUT(an_offline_shard_frees_an_entry_a_refill_reads_once_it_is_done,
		 180)
{
	uint64_t base, sectors, persists = 0, n;
	char devno[32], table[512];
	struct rp_get g = { 0 };
	struct fkv *kv;
	pthread_t tid;
	int i, pins;

	base = setup("segment_mb=4");
	sectors = dm_disk("dm-delay", devno, sizeof(devno));
	FKV_ASSERT_GE(sectors * 512, OR_RING);
	snprintf(table, sizeof(table), "0 %" PRIu64 " linear %s 0\n", sectors,
		 devno);
	dm_create(DLY_NAME, table);
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, OR_RING), 0);
	g.put_id = put_pattern(kv, "rp-x", RP_V, 1);
	wait_persists(++persists);
	FKV_ASSERT_EQ(ring_offset("rp-x"), 0);	/* sectors [0, 2048) */
	fill_segment(kv, base, "rp-fill", 2, &persists);

	/* X's MiB (ring offset 0) slow to read, everything past it failing */
	snprintf(table, sizeof(table),
		 "0 2048 delay %s 0 %u %s 0 0\n2048 %" PRIu64 " error\n",
		 devno, OR_READ_MS, devno, sectors - 2048);
	dm_swap(DLY_NAME, table);
	FKV_ASSERT_EQ(pthread_create(&tid, NULL, rp_get_x, &g), 0);
	wait_ring_pinned("rp-x", 0, 100, "X");
	i = put_until_offline(kv, "or", &persists);
	pins = ring_pins("rp-x", NULL);
	n = fkv_sysfs("kv_ssd_meta_bytes");
	fkv_diag("offline after %d failed persists; X pins %d, entries' "
		 "memory %" PRIu64 " bytes, refill %s", i, pins, n,
		 __atomic_load_n(&g.done, __ATOMIC_ACQUIRE) ? "done" :
		 "reading");
	FKV_ASSERT(!__atomic_load_n(&g.done, __ATOMIC_ACQUIRE),
		   "X's read ended before the shard went offline: raise "
		   "OR_READ_MS");
	/* the pinned entry and the dead ones behind it are still there */
	if (pins != -2)
		FKV_ASSERT_GT(pins, 0);
	FKV_ASSERT_GT(n, 0);

	pthread_join(tid, NULL);
	fkv_diag("refill of X: %s after %" PRId64 " ms", g.ret ?
		 fkv_strerror(g.ret) : "hit", g.ms);
	/* a hit is X's bytes (checked in rp_get_x), else a clean miss */
	FKV_ASSERT(g.ret == 0 || g.ret == -ENOENT, "get of X: %s",
		   fkv_strerror(g.ret));
	if (!g.ret)
		FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	/* unpinned: the shard's entries, then the shard, are freed */
	FKV_ASSERT_SYSFS_SETTLES("kv_ssd_meta_bytes", 0);
	FKV_ASSERT_SYSFS_SETTLES("ssd_shards_reclaimed", 1);
	if (rings_shards() >= 0)
		FKV_ASSERT_EQ(rings_shards(), 0);
	snprintf(table, sizeof(table), "0 %" PRIu64 " linear %s 0\n", sectors,
		 devno);
	dm_swap(DLY_NAME, table);
	FKV_ASSERT_EQ(attach_file(kv, DLY_PATH, 0, OR_RING), 0);

	delete_any(kv, "rp-x");
	delete_any(kv, "rp-fill");
	delete_put_until_offline(kv, "or");
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}

/* ---- 13. gets answered from the module's index vs asking the master ---- */

#define LR_CAP		(16 * FKV_MIB)
#define LR_LEN		(FKV_MIB + 77)

/*
 * One mode: @arg NULL = fluxond's default (FLUXONKV_REGISTER_F_LOCAL_ROUTES:
 * the module refills from the SSD entry the master accepted and answers
 * misses itself), "--ask-on-miss" = every DRAM miss is a GET_START.  Both
 * must serve exactly the same versions: refills, misses, a delete and an
 * overwrite of an SSD-only key, and nothing after the daemon restarts.
 */
static void local_routes_mode(const char *arg)
{
	uint64_t base, ida, idc, idc2, persists = 0, refills0, lmiss0, miss0;
	bool local = arg == NULL;
	int routed = -1;
	char dir[256], path[300];
	struct fkv_holder h;
	struct fkv *kv;

	fkv_diag("fluxond %s", local ? "(local routes)" : arg);
	ext4_dir(local ? "lr-local" : "lr-ask", dir, sizeof(dir));
	fkv_env_daemon_arg = arg;
	base = setup("segment_mb=4");
	make_file(dir, "shard", LR_CAP, path, sizeof(path));
	kv = kv_open();
	FKV_ASSERT_EQ(attach_file(kv, path, 0, LR_CAP), 0);

	ida = put_pattern(kv, "lr-a", LR_LEN, 1);
	put_pattern(kv, "lr-b", LR_LEN, 2);
	idc = put_pattern(kv, "lr-c", LR_LEN, 3);
	persists += 3;
	wait_persists(persists);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 3);
	/* the master took every copy: the module's entries say routed */
	FKV_ASSERT_EQ(ring_entry("lr-a", ida, NULL, &routed), 0);
	FKV_ASSERT_EQ(routed, 1);
	fill_segment(kv, base, "lr-fill", 4, &persists);	/* SSD-only now */

	/*
	 * LOOKUP sees the SSD-only copy from the module's routes or the
	 * master's, and reads nothing: asked twice, it is still SSD-only.
	 */
	FKV_ASSERT_EQ(lookup_check(kv, "lr-a", LR_LEN, ida),
		      FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(lookup_check(kv, "lr-a", LR_LEN, ida),
		      FLUXONKV_SOURCE_SSD);
	lookup_miss(kv, "lr-never-put");

	refills0 = fkv_sysfs("local_refills");
	lmiss0 = fkv_sysfs("local_misses");
	miss0 = fkv_sysfs("misses");
	FKV_ASSERT_EQ(get_check(kv, "lr-a", LR_LEN, 1, ida, &h),
		      FLUXONKV_SOURCE_SSD);
	release(kv, &h);
	FKV_ASSERT_EQ(fkv_sysfs("local_refills") - refills0, local ? 1 : 0);
	get_miss(kv, "lr-never-put");
	FKV_ASSERT_EQ(fkv_sysfs("misses") - miss0, 1);
	FKV_ASSERT_EQ(fkv_sysfs("local_misses") - lmiss0, local ? 1 : 0);

	/* a deleted SSD-only key is gone from the module's routes too */
	delete_key(kv, "lr-b");
	get_miss(kv, "lr-b");
	lookup_miss(kv, "lr-b");
	FKV_ASSERT_EQ(ring_entry("lr-b", 0, NULL, &routed), 0);
	FKV_ASSERT_EQ(routed, 0);

	/* an overwrite drops the old SSD copy; the new one takes over */
	idc2 = put_pattern(kv, "lr-c", LR_LEN + 4096, 33);
	FKV_ASSERT_GT(idc2, idc);
	wait_persists(++persists);
	fill_segment(kv, base, "lr-fill", 5, &persists);
	FKV_ASSERT_EQ(get_check(kv, "lr-c", LR_LEN + 4096, 33, idc2, &h),
		      FLUXONKV_SOURCE_SSD);
	release(kv, &h);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_revokes"), 0);
	FKV_ASSERT_EQ(ring_entry("lr-c", idc, NULL, &routed), 0);
	FKV_ASSERT_EQ(routed, 0);	/* the overwritten version */
	FKV_ASSERT_EQ(ring_entry("lr-c", idc2, NULL, &routed), 0);
	FKV_ASSERT_EQ(routed, 1);

	/*
	 * Warm restart: fluxond registers with KEEP, so its SSD routes
	 * outlive it and the next fluxond adopts them: the same versions
	 * come back from the SSD, the deleted key stays deleted.
	 */
	FKV_STOP_DAEMON();
	fkv_msleep(300);			/* teardown is a work */
	FKV_ASSERT_EQ(ring_entry("lr-c", idc2, NULL, &routed), 0);
	FKV_ASSERT_EQ(routed, 1);
	FKV_START_DAEMON();
	{
		/* from the SSD, or from a DRAM copy kept as well */
		int src = get_check(kv, "lr-a", LR_LEN, 1, ida, &h);

		FKV_ASSERT(src == FLUXONKV_SOURCE_SSD ||
			   src == FLUXONKV_SOURCE_MEMORY, "lr-a from %d", src);
		release(kv, &h);
		src = get_check(kv, "lr-c", LR_LEN + 4096, 33, idc2, &h);
		FKV_ASSERT(src == FLUXONKV_SOURCE_SSD ||
			   src == FLUXONKV_SOURCE_MEMORY, "lr-c from %d", src);
		release(kv, &h);
	}
	get_miss(kv, "lr-b");
	fkv_close(kv);
	/* The adopted replicas stay in the segment: no "back to base". */
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_STOP_DAEMON();
	fkv_env_daemon_arg = NULL;
}

FKV_TEST_TIMEOUT(local_routes_and_ask_on_miss_serve_the_same_versions, 180)
{
	local_routes_mode(NULL);
	local_routes_mode("--ask-on-miss");
}

/* ---- a killed getter's read stays in its user's budget ---- */

#define KR_READ_MS	3000	/* each read of the dm-delay device */

struct kr_get {
	const char *key;
	int ret;
};

/* Root's get of g->key (privileged: charged to nobody), released. */
static void *kr_get_root(void *arg)
{
	struct kr_get *g = arg;
	struct fkv *kv = kv_open();
	struct fkv_holder h;

	g->ret = fkv_get(kv, g->key, strlen(g->key), &h);
	if (!g->ret)
		release(kv, &h);
	fkv_close(kv);
	return NULL;
}

/*
 * Bytes uid @uid pins in debugfs `users`; -1 without a row (its last
 * session and every hold of it gone), -2 without debugfs.
 */
static long long user_pinned(unsigned int uid)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/users", "r");
	unsigned int u, sessions;
	long long pinned, ret = -1;
	char line[128];

	if (!f)
		return -2;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%u\t%u\t%lld", &u, &sessions, &pinned) == 3 &&
		    u == uid)
			ret = pinned;
	fclose(f);
	return ret;
}

/*
 * A synchronous refill whose getter is killed while its read is queued
 * (issue 29, "pins outside the per-uid budget"): the read goes on into
 * the target until the device ends it, and the target stays charged to
 * the getter's user until then -- not only while the getter waited.  Four
 * root gets hold the device's four IO slots (reads delayed 3 s); uid
 * 65534's get of a fifth value queues behind them and is SIGKILLed.
 * Before: its user's pin was dropped at the kill while the target stayed
 * allocated for the read, outside any budget.
 */
FKV_TEST_TIMEOUT(a_killed_getters_queued_refill_stays_in_its_users_budget,
		 180)
{
	const uint64_t span = FKV_ALIGN_UP(RR_LEN);
	uint64_t base, ids[RR_KEYS], persists = 0;
	struct kr_get g[RR_KEYS];
	pthread_t tid[RR_KEYS];
	long long pinned;
	int64_t t_kill, t_free;
	char key[16];
	struct fkv *kv;
	int i, status;
	pid_t pid;

	base = rr_begin("segment_mb=16 pin_max_pct=25", KR_READ_MS, &kv, ids,
			&persists);
	if (user_pinned(0) == -2)
		FKV_SKIP("no debugfs users");
	put_pattern(kv, "kr-x", RR_LEN, 77);
	wait_persists(++persists);
	rr_ssd_only(kv, base, &persists);

	/* four slow refills fill the device's IO slots */
	for (i = 0; i < RR_KEYS; i++) {
		static char keys[RR_KEYS][16];

		snprintf(keys[i], sizeof(keys[i]), "rr-%d", i);
		g[i].key = keys[i];
		FKV_ASSERT_EQ(pthread_create(&tid[i], NULL, kr_get_root,
					     &g[i]), 0);
	}
	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		wait_ring_pinned(key, 0, 500, key);
	}

	/* uid 65534's refill of kr-x queues behind them */
	FKV_ASSERT_EQ(chmod(FKV_DEV_PATH, 0666), 0);
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		struct fkv *nkv = NULL;
		struct fkv_holder h;

		if (setgid(65534) || setuid(65534))
			_exit(2);
		if (fkv_open(FKV_DEV_PATH, &nkv))
			_exit(3);
		fkv_get(nkv, "kr-x", 4, &h);
		_exit(4);
	}
	for (i = 0; i < 100 && user_pinned(65534) != (long long)span; i++)
		fkv_msleep(20);
	FKV_ASSERT_EQ(user_pinned(65534), (long long)span);
	fkv_msleep(200);	/* its read is queued: no slot is free */
	FKV_ASSERT_EQ(kill(pid, SIGKILL), 0);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	t_kill = fkv_now_ms();
	FKV_ASSERT(WIFSIGNALED(status), "the getter's status %#x", status);
	FKV_ASSERT_EQ(chmod(FKV_DEV_PATH, 0660), 0);

	/* the read goes on: its target is still the user's */
	fkv_msleep(100);
	pinned = user_pinned(65534);
	FKV_ASSERT(pinned == (long long)span, "uid 65534 pins %lld bytes "
		   "after its getter was killed with its read queued, want "
		   "%" PRIu64 " until the read ends", pinned, span);
	/* until the device ends it: then nothing */
	while ((pinned = user_pinned(65534)) > 0 &&
	       fkv_now_ms() - t_kill < 4 * KR_READ_MS)
		fkv_msleep(50);
	t_free = fkv_now_ms() - t_kill;
	FKV_ASSERT(pinned <= 0, "uid 65534 still pins %lld bytes %" PRId64
		   " ms after the kill", pinned, t_free);
	FKV_ASSERT_GE(t_free, KR_READ_MS / 2);

	for (i = 0; i < RR_KEYS; i++) {
		pthread_join(tid[i], NULL);
		FKV_ASSERT(g[i].ret == 0, "get %s: %s", g[i].key,
			   fkv_strerror(g[i].ret));
	}
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	delete_any(kv, "kr-x");
	for (i = 0; i < RR_KEYS; i++) {
		snprintf(key, sizeof(key), "rr-%d", i);
		delete_any(kv, key);
	}
	fkv_close(kv);
	teardown(base);
	dm_remove(DLY_NAME);
}
