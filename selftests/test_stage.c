// SPDX-License-Identifier: GPL-2.0
/*
 * test_stage - FLUXONKV_IOC_SSD_STAGE, the SSD owner's half of a remote SSD
 * push: a privileged session (O_RDWR + CAP_SYS_ADMIN, the node daemon)
 * asks for the chunk [offset, offset + len) of this node's committed SSD
 * copy of (key, put_id); the module reads it into a new staging range of
 * the segment and returns a holder on it (holder_id, seg_offset) plus the
 * value's length.  The daemon sends the chunk from its writable mapping
 * and releases the holder.
 *
 * The test plays the node daemon with its own privileged session beside a
 * real fluxond (the master, which decides that puts persist and answers
 * SSD_COMMIT and NEED_ROOM); values are patterns of (key, length, salt)
 * and every staged chunk is compared byte for byte, through the writable
 * mapping at seg_offset, with the value's bytes at its offset.  Scratch
 * disks as in test_ssd (make vm-test passes ssd0:1G ssd1:512M ssd2:256M):
 *
 *   ssd0  ext4, mounted under FKV_SCRATCH_DIR: shard files
 *   ssd1  a raw block device shard
 *   ssd2  under device-mapper: error (EIO) and delay targets
 *
 * A test whose disk, dmsetup or dm target is missing skips.
 */
#include <pthread.h>

#include <fluxonkv.h>

#define FKV_PERSIST_WAIT_S	20	/* wait_persists(): a loaded TCG host */

#include "fkv_env.h"
#include "fkv_kv.h"
#include "fkv_ssd.h"

#define DM_ERR_NAME	"fkv-stage-err"
#define DM_DLY_NAME	"fkv-stage-delay"

#define CHUNK		FLUXONKV_SSD_CHUNK		/* 4 MiB */
#define CHUNK_MAX	FLUXONKV_SSD_CHUNK_MAX		/* 16 MiB */
#define STAGE_VER0	FLUXONKV_SSD_STAGE_SIZE_VER0

/*
 * setup, teardown, delete_any, pattern: fkv_kv.h; SSD counters, scratch
 * disks, shard files, dm targets, debugfs `rings`: fkv_ssd.h.
 */

/* N persists ended, all of them published. */
static void wait_published(uint64_t n)
{
	wait_persists(n);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), n);
}

/* ---- the node daemon's session ---- */

/* A privileged session and its shared, writable mapping of the segment. */
struct stager {
	int fd;
	uint8_t *map;
	uint64_t size;
};

static void stager_open(struct stager *sg)
{
	sg->fd = fkv_dev_open();
	FKV_ASSERT(sg->fd >= 0, "open %s O_RDWR: %s", FKV_DEV_PATH,
		   strerror(errno));
	sg->map = fkv_dev_map_rw(sg->fd, &sg->size);
	FKV_ASSERT(sg->map != MAP_FAILED, "privileged writable mapping: %s",
		   strerror(errno));
	FKV_ASSERT_EQ(sg->size, fkv_sysfs("segment_capacity_bytes"));
}

static void stager_close(struct stager *sg)
{
	FKV_ASSERT_EQ(munmap(sg->map, sg->size), 0);
	FKV_ASSERT_EQ(close(sg->fd), 0);
	sg->fd = -1;
}

/* A valid argument for (KEY, PUT_ID, OFF, LEN) in *s. */
static void stage_arg(struct fluxonkv_ssd_stage *s, const char *key,
		      uint64_t put_id, uint64_t off, uint64_t len)
{
	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->key_len = (uint32_t)strlen(key);
	s->key_ptr = (uintptr_t)key;
	s->put_id = put_id;
	s->offset = off;
	s->len = len;
}

/* SSD_STAGE on FD; 0 or -errno, the result in *s. */
static int stage(int fd, const char *key, uint64_t put_id, uint64_t off,
		 uint64_t len, struct fluxonkv_ssd_stage *s)
{
	stage_arg(s, key, put_id, off, len);
	return ioctl(fd, FLUXONKV_IOC_SSD_STAGE, s) ? -errno : 0;
}

/* The stage must fail with exactly -ERR. */
#define STAGE_FAILS(fd, key, put_id, off, len, err)			\
	do {								\
		struct fluxonkv_ssd_stage fkv_s_;			\
		int fkv_r_ = stage(fd, key, put_id, off, len, &fkv_s_);	\
		if (fkv_r_ != -(err))					\
			FKV_FAIL_AT(1, "stage '%s' put_id %" PRIu64	\
				    " [%" PRIu64 ", +%" PRIu64 "): want %s, " \
				    "got %s", key, (uint64_t)(put_id),	\
				    (uint64_t)(off), (uint64_t)(len),	\
				    strerror(err), fkv_r_ ?		\
				    strerror(-fkv_r_) : "success");	\
	} while (0)

/*
 * S (a successful stage of [off, off + len) of a value of VLEN bytes WANT)
 * names a holder on exactly those bytes in the mapping.
 */
static void check_chunk(const struct stager *sg,
			const struct fluxonkv_ssd_stage *s, const char *key,
			const uint8_t *want, uint64_t vlen, uint64_t off,
			uint64_t len)
{
	const uint8_t *p;
	uint64_t i;

	FKV_ASSERT(s->holder_id != 0, "'%s' [%" PRIu64 ", +%" PRIu64
		   "): holder id 0", key, off, len);
	FKV_ASSERT_EQ(s->value_len, vlen);
	/* the input fields come back as they went in */
	FKV_ASSERT_EQ(s->size, sizeof(*s));
	FKV_ASSERT_EQ(s->key_len, strlen(key));
	FKV_ASSERT_EQ(s->offset, off);
	FKV_ASSERT_EQ(s->len, len);
	FKV_ASSERT_EQ(s->flags, 0);
	FKV_ASSERT(!s->reserved[0] && !s->reserved[1], "reserved written");
	FKV_ASSERT(s->seg_offset % FLUXONKV_SEGMENT_ALIGN == 0,
		   "seg_offset %#" PRIx64 " not 4 KiB aligned",
		   (uint64_t)s->seg_offset);
	FKV_ASSERT(s->seg_offset < sg->size && len <= sg->size - s->seg_offset,
		   "chunk [%#" PRIx64 ", +%" PRIu64 ") outside the %" PRIu64
		   "-byte segment", (uint64_t)s->seg_offset, len, sg->size);
	p = sg->map + s->seg_offset;
	if (!memcmp(p, want + off, len))
		return;
	for (i = 0; i < len && p[i] == want[off + i]; i++)
		;
	FKV_FAIL_AT(1, "'%s' chunk [%" PRIu64 ", +%" PRIu64 ") at seg_offset "
		    "%#" PRIx64 " differs at value byte %" PRIu64 ": %#x, want "
		    "%#x", key, off, len, (uint64_t)s->seg_offset, off + i, p[i],
		    want[off + i]);
}

/* Stage a chunk that must succeed, and check it. */
static void stage_check(const struct stager *sg, const char *key,
			uint64_t put_id, const uint8_t *want, uint64_t vlen,
			uint64_t off, uint64_t len,
			struct fluxonkv_ssd_stage *s)
{
	int ret = stage(sg->fd, key, put_id, off, len, s);

	FKV_ASSERT(ret == 0, "stage '%s' put_id %" PRIu64 " [%" PRIu64 ", +%"
		   PRIu64 "): %s", key, put_id, off, len, strerror(-ret));
	check_chunk(sg, s, key, want, vlen, off, len);
}

/* The same, then release the holder. */
static void stage_check_release(const struct stager *sg, const char *key,
				uint64_t put_id, const uint8_t *want,
				uint64_t vlen, uint64_t off, uint64_t len)
{
	struct fluxonkv_ssd_stage s;

	stage_check(sg, key, put_id, want, vlen, off, len, &s);
	FKV_ASSERT_EQ(fkv_dev_release(sg->fd, s.holder_id), 0);
}

/* ---- shards ---- */

/* Attach [0, CAP) of PATH through SG's session. */
static void attach_path(const struct stager *sg, const char *path,
			uint64_t cap)
{
	int fd = open_shard(path), ret;

	ret = fkv_dev_ssd_attach(sg->fd, fd, 0, cap, 0, NULL);
	close(fd);
	FKV_ASSERT(ret == 0, "attach %s (+%" PRIu64 "): %s", path, cap,
		   strerror(-ret));
}

enum shard_kind { SHARD_EXT4, SHARD_RAW };

/*
 * Attach one shard of CAP bytes through SG's session: a file on the ext4
 * of ssd0, or the start of the raw disk ssd1.
 */
static void attach_shard(const struct stager *sg, enum shard_kind kind,
			 uint64_t cap)
{
	char dir[256], path[300];

	if (kind == SHARD_EXT4) {
		ext4_dir("stage", dir, sizeof(dir));
		make_file(dir, "shard", cap, path, sizeof(path));
	} else {
		scratch_disk(DISK_RAW, "512M", path, sizeof(path));
	}
	attach_path(sg, path, cap);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), cap);
}

/*
 * The start of most tests: setup(PARAMS), SG's session with one shard of
 * KIND and CAP bytes, a libfluxonkv handle in *kv.  Returns setup()'s
 * baseline.
 */
static uint64_t stage_begin(const char *params, struct stager *sg,
			    enum shard_kind kind, uint64_t cap,
			    struct fkv **kv)
{
	uint64_t base0 = setup(params);

	stager_open(sg);
	attach_shard(sg, kind, cap);
	*kv = kv_open();
	return base0;
}

/* Put the pattern of (KEY, LEN, SALT), its bytes in *want (free them). */
static uint64_t put_want(struct fkv *kv, const char *key, size_t len,
			 uint64_t salt, uint8_t **want)
{
	*want = pattern(key, len, salt);
	return put_pattern(kv, key, len, salt);
}

/* Attach [0, CAP) of /dev/mapper/NAME through SG's session. */
static void attach_dm(const struct stager *sg, const char *name,
		      uint64_t cap)
{
	char path[128];

	snprintf(path, sizeof(path), "/dev/mapper/%s", name);
	attach_path(sg, path, cap);
}

/* ---- 1, 2. a 16 MiB + 5 value in 4 MiB chunks ---- */

#define BIG_KEY		"stage-big"
#define BIG_LEN		(16 * FKV_MIB + 5)
#define BIG_CHUNKS	5	/* 4 x 4 MiB + 5 bytes */
#define BIG_SHARD	(64 * FKV_MIB)

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b,
			   uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/*
 * The remote push of one 16 MiB + 5 value from a shard of KIND: five
 * chunks staged and held at once, each the value's bytes at its offset in
 * a range of its own (not the DRAM replica's, not another chunk's), read
 * from the device (ssd_reads / ssd_read_bytes), nothing after the last
 * chunk's 5 bytes but zeros; released, the segment is back at its
 * baseline and the master saw nothing (no promotion, no new replica).
 * Then the whole value as one FLUXONKV_SSD_CHUNK_MAX chunk plus the tail,
 * and a chunk through a larger struct.
 */
static void big_value_in_chunks(enum shard_kind kind)
{
	struct fluxonkv_ssd_stage s[BIG_CHUNKS], s2;
	uint64_t base0, base, id, reads0, rbytes0, replicas, prom0, repl_off;
	uint8_t big[STAGE_VER0 + 8];
	struct stager sg;
	struct fkv_holder h;
	struct fkv *kv;
	uint8_t *want;
	uint64_t i;
	int j, ret;

	base0 = stage_begin("segment_mb=64", &sg, kind, BIG_SHARD, &kv);
	id = put_want(kv, BIG_KEY, BIG_LEN, 16, &want);
	wait_published(1);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), SSD_ALEN(BIG_LEN));

	/* the DRAM replica stays put (a client holder) while chunks come */
	ret = fkv_get(kv, BIG_KEY, strlen(BIG_KEY), &h);
	FKV_ASSERT(ret == 0, "get: %s", fkv_strerror(ret));
	FKV_ASSERT_EQ(h.source, FLUXONKV_SOURCE_MEMORY);
	repl_off = (uint64_t)((const uint8_t *)h.data -
			      (const uint8_t *)fkv_segment_base(kv));
	base = fkv_sysfs("segment_used_bytes");
	FKV_ASSERT_EQ(base, base0 + FKV_ALIGN_UP(BIG_LEN));
	replicas = fkv_sysfs("replicas");
	prom0 = fkv_sysfs("promotions");
	reads0 = fkv_sysfs("ssd_reads");
	rbytes0 = fkv_sysfs("ssd_read_bytes");

	for (j = 0; j < BIG_CHUNKS; j++) {
		uint64_t off = (uint64_t)j * CHUNK;
		uint64_t len = j < BIG_CHUNKS - 1 ? CHUNK : BIG_LEN - off;

		stage_check(&sg, BIG_KEY, id, want, BIG_LEN, off, len, &s[j]);
	}
	FKV_ASSERT_EQ(s[BIG_CHUNKS - 1].len, 5);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), BIG_CHUNKS + 1);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      base + 4 * CHUNK + FLUXONKV_SEGMENT_ALIGN);
	/* read from the device: five reads, the value's aligned length */
	FKV_ASSERT_EQ(fkv_sysfs("ssd_reads") - reads0, BIG_CHUNKS);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_read_bytes") - rbytes0, SSD_ALEN(BIG_LEN));
	/* every chunk in a range of its own */
	for (j = 0; j < BIG_CHUNKS; j++) {
		int k;

		FKV_ASSERT(!ranges_overlap(s[j].seg_offset,
					   FKV_ALIGN_UP(s[j].len), repl_off,
					   FKV_ALIGN_UP(BIG_LEN)),
			   "chunk %d at %#" PRIx64 " overlaps the replica at %#"
			   PRIx64, j, (uint64_t)s[j].seg_offset, repl_off);
		for (k = 0; k < j; k++)
			FKV_ASSERT(!ranges_overlap(s[j].seg_offset,
						   FKV_ALIGN_UP(s[j].len),
						   s[k].seg_offset,
						   FKV_ALIGN_UP(s[k].len)),
				   "chunks %d and %d overlap", k, j);
		for (k = 0; k < j; k++)
			FKV_ASSERT_NE(s[j].holder_id, s[k].holder_id);
	}
	/* past the last chunk's 5 bytes: the entry's zero padding, zeros */
	for (i = 5; i < FLUXONKV_SEGMENT_ALIGN; i++)
		FKV_ASSERT(sg.map[s[BIG_CHUNKS - 1].seg_offset + i] == 0,
			   "byte %" PRIu64 " after the last chunk is %#x", i,
			   sg.map[s[BIG_CHUNKS - 1].seg_offset + i]);
	/* held chunks do not change; the client's view neither */
	for (j = 0; j < BIG_CHUNKS; j++)
		check_chunk(&sg, &s[j], BIG_KEY, want, BIG_LEN,
			    (uint64_t)j * CHUNK, s[j].len);
	FKV_ASSERT_PATTERN(h.data, BIG_LEN, BIG_KEY, strlen(BIG_KEY), 16);

	/* released: the holders go, and nothing else holds their ranges */
	for (j = 0; j < BIG_CHUNKS; j++)
		FKV_ASSERT_EQ(fkv_dev_release(sg.fd, s[j].holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_release(sg.fd, s[0].holder_id), -ENOENT);
	FKV_ASSERT_SYSFS_SETTLES("holders", 1);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), replicas);
	FKV_ASSERT_EQ(fkv_sysfs("promotions"), prom0);

	/* one FLUXONKV_SSD_CHUNK_MAX chunk, then the rest */
	stage_check(&sg, BIG_KEY, id, want, BIG_LEN, 0, CHUNK_MAX, &s2);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + CHUNK_MAX);
	FKV_ASSERT_EQ(fkv_dev_release(sg.fd, s2.holder_id), 0);
	stage_check_release(&sg, BIG_KEY, id, want, BIG_LEN, CHUNK_MAX, 5);
	/* a chunk of one checksummed MiB in the middle, at 7 MiB */
	stage_check_release(&sg, BIG_KEY, id, want, BIG_LEN,
			    2 * CHUNK - FKV_MIB, FKV_MIB);

	/* a caller's struct larger than VER0 (zero tail) works the same */
	memset(big, 0, sizeof(big));
	stage_arg((struct fluxonkv_ssd_stage *)big, BIG_KEY, id, CHUNK, CHUNK);
	((struct fluxonkv_ssd_stage *)big)->size = sizeof(big);
	FKV_ASSERT(ioctl(sg.fd, FLUXONKV_IOC_SSD_STAGE, big) == 0,
		   "stage with a %zu-byte struct: %s", sizeof(big),
		   strerror(errno));
	memcpy(&s2, big, sizeof(s2));
	s2.size = sizeof(s2);
	check_chunk(&sg, &s2, BIG_KEY, want, BIG_LEN, CHUNK, CHUNK);
	for (i = STAGE_VER0; i < sizeof(big); i++)
		FKV_ASSERT(big[i] == 0, "byte %" PRIu64 " past the struct "
			   "written", i);
	FKV_ASSERT_EQ(fkv_dev_release(sg.fd, s2.holder_id), 0);

	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), replicas);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	FKV_ASSERT_EQ(fkv_holder_release(kv, &h), 0);
	FKV_ASSERT_EQ(fkv_delete(kv, BIG_KEY, strlen(BIG_KEY)), 0);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	stager_close(&sg);
	free(want);
	teardown(base0);
}

FKV_TEST_TIMEOUT(ext4_file_shard_stages_16mib_plus_5_in_4mib_chunks, 180)
{
	big_value_in_chunks(SHARD_EXT4);
}

FKV_TEST_TIMEOUT(raw_block_device_shard_stages_16mib_plus_5_in_4mib_chunks,
		 180)
{
	big_value_in_chunks(SHARD_RAW);
}

/* ---- 3. the argument struct (no daemon, no SSD needed) ---- */

static const char abi_key[] = "stage-abi";
static uint8_t argbuf[2 * 4096] __attribute__((aligned(4096)));

/* argbuf as a valid argument (an unknown version) with size field SIZE. */
static struct fluxonkv_ssd_stage *abi_arg(uint32_t size)
{
	struct fluxonkv_ssd_stage *s = (void *)argbuf;

	memset(argbuf, 0, sizeof(argbuf));
	stage_arg(s, abi_key, 1, 0, 4096);
	s->size = size;
	return s;
}

static int abi_ioctl(int fd, void *arg)
{
	return ioctl(fd, FLUXONKV_IOC_SSD_STAGE, arg) ? errno : 0;
}

/* The ioctl with ARG must give ERR (0: success); WHAT... says which case. */
static void abi_expect_at(int line, int fd, void *arg, int err,
			  const char *what, ...)
{
	char desc[128];
	va_list ap;
	int got = abi_ioctl(fd, arg);

	if (got == err)
		return;
	va_start(ap, what);
	vsnprintf(desc, sizeof(desc), what, ap);
	va_end(ap);
	printf("# %s:%d: %s: want %s, got %s\n", __FILE__, line, desc,
	       err ? strerror(err) : "success",
	       got ? strerror(got) : "success");
	fflush(stdout);
	fkv_failed_here = 1;
}
#define ABI_EXPECT(fd, arg, err, ...)					\
	abi_expect_at(__LINE__, fd, arg, err, __VA_ARGS__)

/*
 * Every field is checked before anything is allocated or looked up: the
 * valid argument, naming a version no shard has, is ENOENT; each bad field
 * alone is EINVAL (E2BIG, EFAULT where copy_struct_from_user says so).
 * Nothing is left allocated or held.
 */
FKV_TEST(stage_argument_sizes_flags_reserved_and_out_fields_are_checked)
{
	static const uint64_t bad_off[] = { 1, 512, 2048, 4095, 4096, 4097,
					    CHUNK + 512, FKV_MIB / 2,
					    CHUNK + 4096, UINT64_MAX };
	static const uint64_t bad_len[] = { 0, CHUNK_MAX + 1,
					    CHUNK_MAX + 4096, 1ULL << 63,
					    UINT64_MAX };
	static uint8_t bigkey[FLUXONKV_KEY_MAX + 1];
	struct fluxonkv_ssd_stage *s;
	uint8_t *pages;
	unsigned int i;
	int fd;

	FKV_LOAD("segment_mb=32");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0, "open: %s", strerror(errno));
	FKV_ASSERT_EQ(STAGE_VER0, 88);
	FKV_ASSERT_EQ(sizeof(*s), STAGE_VER0);

	/* the valid argument: no such version here */
	ABI_EXPECT(fd, abi_arg(sizeof(*s)), ENOENT, "valid argument");
	/* the largest chunk still passes validation */
	s = abi_arg(sizeof(*s));
	s->len = CHUNK_MAX;
	ABI_EXPECT(fd, s, ENOENT, "len CHUNK_MAX");
	s = abi_arg(sizeof(*s));
	s->offset = 1ULL << 40;
	ABI_EXPECT(fd, s, ENOENT, "offset 1 TiB (aligned; no entry to check)");

	/* sizes */
	ABI_EXPECT(fd, abi_arg(0), EINVAL, "size 0");
	ABI_EXPECT(fd, abi_arg(4), EINVAL, "size 4");
	ABI_EXPECT(fd, abi_arg(STAGE_VER0 - 8), EINVAL, "size ver0-8");
	ABI_EXPECT(fd, abi_arg(STAGE_VER0 - 1), EINVAL, "size ver0-1");
	ABI_EXPECT(fd, abi_arg(4096 + 8), EINVAL, "size page+8");
	ABI_EXPECT(fd, abi_arg(STAGE_VER0 + 8), ENOENT, "size ver0+8");
	ABI_EXPECT(fd, abi_arg(4096), ENOENT, "size page");
	s = abi_arg(STAGE_VER0 + 8);
	argbuf[STAGE_VER0 + 7] = 1;
	ABI_EXPECT(fd, s, E2BIG, "size ver0+8, nonzero tail");
	s = abi_arg(4096);
	argbuf[4095] = 0x80;
	ABI_EXPECT(fd, s, E2BIG, "size page, nonzero last byte");

	/* flags, out fields, reserved */
	for (i = 0; i < 9; i++) {
		s = abi_arg(sizeof(*s));
		switch (i) {
		case 0: s->flags = 1; break;
		case 1: s->flags = 1ULL << 63; break;
		case 2: s->holder_id = 1; break;
		case 3: s->seg_offset = FLUXONKV_SEGMENT_ALIGN; break;
		case 4: s->value_len = 4096; break;
		case 5: s->reserved[0] = 1; break;
		case 6: s->reserved[1] = 1ULL << 40; break;
		case 7: s->put_id = 0; break;
		case 8: s->value_len = UINT64_MAX; break;
		}
		ABI_EXPECT(fd, s, EINVAL, "field case %u", i);
	}
	/*
	 * offsets that are no multiple of a checksummed MiB, lengths out of
	 * range
	 */
	for (i = 0; i < sizeof(bad_off) / sizeof(bad_off[0]); i++) {
		s = abi_arg(sizeof(*s));
		s->offset = bad_off[i];
		ABI_EXPECT(fd, s, EINVAL, "offset %" PRIu64, bad_off[i]);
	}
	for (i = 0; i < sizeof(bad_len) / sizeof(bad_len[0]); i++) {
		s = abi_arg(sizeof(*s));
		s->len = bad_len[i];
		ABI_EXPECT(fd, s, EINVAL, "len %" PRIu64, bad_len[i]);
	}

	/* keys and pointers */
	memset(bigkey, 'k', sizeof(bigkey));
	s = abi_arg(sizeof(*s));
	s->key_len = 0;
	ABI_EXPECT(fd, s, EINVAL, "key_len 0");
	s = abi_arg(sizeof(*s));
	s->key_ptr = (uintptr_t)bigkey;
	s->key_len = FLUXONKV_KEY_MAX + 1;
	ABI_EXPECT(fd, s, EINVAL, "key_len KEY_MAX+1");
	s = abi_arg(sizeof(*s));
	s->key_ptr = (uintptr_t)bigkey;
	s->key_len = UINT32_MAX;
	ABI_EXPECT(fd, s, EINVAL, "key_len UINT32_MAX");
	s = abi_arg(sizeof(*s));
	s->key_ptr = (uintptr_t)bigkey;
	s->key_len = FLUXONKV_KEY_MAX;
	ABI_EXPECT(fd, s, ENOENT, "key_len KEY_MAX");
	s = abi_arg(sizeof(*s));
	s->key_ptr = 8;
	ABI_EXPECT(fd, s, EFAULT, "key_ptr 8");
	FKV_EXPECT_EQ(abi_ioctl(fd, (void *)8), EFAULT);
	/* a key running off its mapping into a hole */
	pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(pages != MAP_FAILED);
	memset(pages, 'k', 4096);
	FKV_ASSERT_EQ(munmap(pages + 4096, 4096), 0);
	s = abi_arg(sizeof(*s));
	s->key_ptr = (uintptr_t)(pages + 4096 - 8);
	s->key_len = 16;
	ABI_EXPECT(fd, s, EFAULT, "key across into a hole");
	s->key_len = 8;
	ABI_EXPECT(fd, s, ENOENT, "the 8 readable bytes of it");
	munmap(pages, 4096);

	/* nothing was left allocated or held by any of these */
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	close(fd);
}

/* ---- 3. ranges against the value's length ---- */

#define RG_SHARD	(64 * FKV_MIB)
#define RG_ODD		(8 * FKV_MIB + 100)	/* "stage-odd" */
#define RG_EVEN		(8 * FKV_MIB)		/* "stage-even" */

struct range_case {
	const char *key;
	uint64_t off, len;
	int err;		/* 0: must succeed */
};

/*
 * A chunk no longer than CHUNK_MAX but longer than the segment could never
 * find room: EINVAL from the argument check, before an allocation is
 * tried (issue 29: the allocator's WARN_ON_ONCE for a length past the
 * segment was reachable through SSD_STAGE).
 */
FKV_TEST(a_stage_longer_than_the_segment_is_einval_without_a_splat)
{
	struct fluxonkv_ssd_stage *s;
	char splat[512];
	int fd, kmsg;

	FKV_LOAD("segment_mb=4");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0, "open: %s", strerror(errno));
	kmsg = fkv_kmsg_mark();
	s = abi_arg(sizeof(*s));
	s->len = 4 * FKV_MIB + 4096;
	ABI_EXPECT(fd, s, EINVAL, "len past the 4 MiB segment");
	s = abi_arg(sizeof(*s));
	s->len = CHUNK_MAX;
	ABI_EXPECT(fd, s, EINVAL, "len CHUNK_MAX past the segment");
	s = abi_arg(sizeof(*s));
	s->len = 4 * FKV_MIB;
	ABI_EXPECT(fd, s, ENOENT, "len the whole segment (no such entry)");
	if (kmsg >= 0)
		FKV_ASSERT(!fkv_kmsg_splat(kmsg, splat, sizeof(splat)),
			   "the kernel logged: %s", splat);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), 0);
	close(fd);
}

/*
 * With the entry found, [offset, offset + len) must lie within the value:
 * offset >= value length or offset + len past it is EINVAL, whatever the
 * size of the overshoot; exact ends work.  Its ends must be those of
 * checksummed MiBs or the value's end (every staged byte is verified):
 * a range ending inside a MiB is EINVAL.  A refused range reads nothing
 * and leaves no staging behind.
 */
FKV_TEST_TIMEOUT(stage_range_must_lie_within_the_value, 120)
{
	static const struct range_case cases[] = {
		{ "stage-odd", 8 * FKV_MIB, 100, 0 },
		{ "stage-odd", 0, RG_ODD, 0 },
		{ "stage-odd", 4 * FKV_MIB, 4 * FKV_MIB + 100, 0 },
		{ "stage-odd", FKV_MIB, 2 * FKV_MIB, 0 },
		/* ends that are no checksummed MiB's: not every byte verified */
		{ "stage-odd", 8 * FKV_MIB, 1, EINVAL },
		{ "stage-odd", 0, FKV_MIB + 4096, EINVAL },
		{ "stage-odd", 4 * FKV_MIB, 4 * FKV_MIB, 0 },
		{ "stage-odd", 8 * FKV_MIB, 101, EINVAL },
		{ "stage-odd", 8 * FKV_MIB, 4096, EINVAL },
		{ "stage-odd", 8 * FKV_MIB + 4096, 1, EINVAL },
		{ "stage-odd", 12 * FKV_MIB, 1, EINVAL },
		{ "stage-odd", 1ULL << 40, 1, EINVAL },
		{ "stage-odd", UINT64_MAX & ~4095ULL, 4096, EINVAL },
		{ "stage-odd", 0, RG_ODD + 1, EINVAL },
		{ "stage-odd", 4096, RG_ODD, EINVAL },
		{ "stage-odd", 4 * FKV_MIB, 4 * FKV_MIB + 101, EINVAL },
		{ "stage-odd", 0, CHUNK_MAX, EINVAL },
		{ "stage-even", 4 * FKV_MIB, 4 * FKV_MIB, 0 },
		{ "stage-even", 7 * FKV_MIB, FKV_MIB, 0 },
		{ "stage-even", 8 * FKV_MIB - 4096, 4096, EINVAL },
		{ "stage-even", 8 * FKV_MIB, 1, EINVAL },
		{ "stage-even", 8 * FKV_MIB, 4096, EINVAL },
		{ "stage-even", 8 * FKV_MIB - 4096, 4097, EINVAL },
		{ "stage-even", 4 * FKV_MIB, 4 * FKV_MIB + 1, EINVAL },
		/* checked before the entry is looked at */
		{ "stage-even", 4 * FKV_MIB + 512, 1, EINVAL },
		{ "stage-even", 4 * FKV_MIB + 4096, FKV_MIB - 4096, EINVAL },
		{ "stage-even", 0, 0, EINVAL },
		{ "stage-even", 0, CHUNK_MAX + 1, EINVAL },
	};
	uint64_t base0, base, id_odd, id_even, reads0, ok = 0;
	uint8_t *w_odd, *w_even;
	struct stager sg;
	struct fkv *kv;
	unsigned int i;

	base0 = stage_begin("segment_mb=64", &sg, SHARD_EXT4, RG_SHARD, &kv);
	id_odd = put_want(kv, "stage-odd", RG_ODD, 3, &w_odd);
	id_even = put_want(kv, "stage-even", RG_EVEN, 4, &w_even);
	wait_published(2);
	base = fkv_sysfs("segment_used_bytes");
	reads0 = fkv_sysfs("ssd_reads");

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct range_case *c = &cases[i];
		bool odd = !strcmp(c->key, "stage-odd");
		uint64_t id = odd ? id_odd : id_even;

		if (!c->err) {
			stage_check_release(&sg, c->key, id,
					    odd ? w_odd : w_even,
					    odd ? RG_ODD : RG_EVEN, c->off,
					    c->len);
			ok++;
		} else {
			STAGE_FAILS(sg.fd, c->key, id, c->off, c->len,
				    c->err);
		}
		FKV_ASSERT_SYSFS_SETTLES("holders", 0);
		FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	}
	/* only the good ranges read anything */
	FKV_ASSERT_EQ(fkv_sysfs("ssd_reads") - reads0, ok);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);

	FKV_ASSERT_EQ(fkv_delete(kv, "stage-odd", 9), 0);
	FKV_ASSERT_EQ(fkv_delete(kv, "stage-even", 10), 0);
	fkv_close(kv);
	stager_close(&sg);
	free(w_odd);
	free(w_even);
	teardown(base0);
}

/*
 * Every staged byte is checksummed (issue 29): three values of 3 MiB + 100
 * whose SSD copies get one byte flipped behind the module's back -- the
 * first byte, the last byte, and one in the second MiB.  Staging any
 * range with a damaged byte fails EIO (the copy dropped, ssd_csum_errors
 * counted), never hands out the bytes; a range that would leave a damaged
 * MiB unchecked (it ends inside it) is refused EINVAL.  Before, a staged
 * range that did not cover a whole checksummed MiB was read unchecked,
 * damaged byte and all.
 */
#define SC_CRC_LEN	(3 * FKV_MIB + 100)

FKV_TEST_TIMEOUT(every_staged_byte_is_checksummed, 180)
{
	static const struct {
		const char *key;
		uint64_t flip;		/* the damaged byte */
		uint64_t off, len;	/* a range over it */
	} c[] = {
		{ "sc-first", 0, 0, FKV_MIB },
		{ "sc-last", SC_CRC_LEN - 1, 3 * FKV_MIB, 100 },
		{ "sc-mid", FKV_MIB + 4321, FKV_MIB, FKV_MIB },
	};
	char dir[256], path[300];
	uint64_t base0, ids[3], errs0;
	uint8_t *want[3];
	struct stager sg;
	struct fkv *kv;
	unsigned int i;
	long long off;

	base0 = setup("segment_mb=64");
	stager_open(&sg);
	ext4_dir("stage", dir, sizeof(dir));
	make_file(dir, "shard", 64 * FKV_MIB, path, sizeof(path));
	attach_path(&sg, path, 64 * FKV_MIB);
	kv = kv_open();
	for (i = 0; i < 3; i++)
		ids[i] = put_want(kv, c[i].key, SC_CRC_LEN, 50 + i, &want[i]);
	wait_published(3);
	errs0 = fkv_sysfs("ssd_csum_errors");
	/* every MiB of an intact copy stages fine */
	stage_check_release(&sg, "sc-mid", ids[2], want[2], SC_CRC_LEN, 0,
			    SC_CRC_LEN);
	for (i = 0; i < 3; i++) {
		off = ring_offset(c[i].key);
		FKV_ASSERT(off >= 0, "%s has no committed entry", c[i].key);
		corrupt_byte(path, (uint64_t)off + c[i].flip);
	}
	/* a range ending inside the damaged MiB would skip its check */
	STAGE_FAILS(sg.fd, "sc-mid", ids[2], 0, FKV_MIB + 8192, EINVAL);
	STAGE_FAILS(sg.fd, "sc-mid", ids[2], 4096, FKV_MIB - 4096, EINVAL);
	STAGE_FAILS(sg.fd, "sc-last", ids[1], 3 * FKV_MIB, 99, EINVAL);
	for (i = 0; i < 3; i++) {
		STAGE_FAILS(sg.fd, c[i].key, ids[i], c[i].off, c[i].len, EIO);
		FKV_ASSERT_EQ(fkv_sysfs("ssd_csum_errors"), errs0 + i + 1);
		/* dropped: nothing of it is read again */
		FKV_ASSERT_EQ(ring_offset(c[i].key), -1);
		STAGE_FAILS(sg.fd, c[i].key, ids[i], 0, FKV_MIB, ENOENT);
		FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_csum_errors"), errs0 + 3);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	for (i = 0; i < 3; i++) {
		FKV_ASSERT_EQ(fkv_delete(kv, c[i].key, strlen(c[i].key)), 0);
		free(want[i]);
	}
	fkv_close(kv);
	stager_close(&sg);
	teardown(base0);
}

/* ---- 3. privilege ---- */

#define PV_KEY		"stage-priv"
#define PV_LEN		(FKV_MIB + 3)

struct pv_arg {
	uint64_t put_id;
};

/* In a child without CAP_SYS_ADMIN: O_RDWR is a client session. */
static void pv_without_cap(void *arg)
{
	const struct pv_arg *a = arg;
	struct fluxonkv_ssd_stage *s;
	int fd, ret;

	ret = fkv_drop_cap_sys_admin();
	FKV_ASSERT(ret == 0, "drop CAP_SYS_ADMIN: %s", strerror(-ret));
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0, "open O_RDWR without CAP_SYS_ADMIN: %s",
		   strerror(errno));
	STAGE_FAILS(fd, PV_KEY, a->put_id, 0, PV_LEN, EPERM);
	STAGE_FAILS(fd, PV_KEY, a->put_id, 0, 4096, EPERM);
	/* privilege is checked right after the size, before the fields */
	s = abi_arg(sizeof(*s));
	s->flags = 1;
	FKV_ASSERT_EQ(abi_ioctl(fd, s), EPERM);
	s = abi_arg(4);
	FKV_ASSERT_EQ(abi_ioctl(fd, s), EINVAL);
	close(fd);
}

/*
 * Only a privileged session stages: root's O_RDONLY session and an O_RDWR
 * one opened without CAP_SYS_ADMIN are EPERM for a chunk the privileged
 * session stages fine; nothing is read or allocated for them.
 */
FKV_TEST(stage_needs_a_privileged_session)
{
	struct fluxonkv_ssd_stage *s;
	struct pv_arg a;
	uint64_t base0, base, reads0, holders0;
	struct stager sg;
	struct fkv *kv;
	uint8_t *want;
	int ro;

	base0 = stage_begin("segment_mb=16", &sg, SHARD_EXT4, 16 * FKV_MIB,
			    &kv);
	a.put_id = put_want(kv, PV_KEY, PV_LEN, 5, &want);
	wait_published(1);
	base = fkv_sysfs("segment_used_bytes");
	stage_check_release(&sg, PV_KEY, a.put_id, want, PV_LEN, 0, PV_LEN);
	reads0 = fkv_sysfs("ssd_reads");
	holders0 = fkv_sysfs("holders");

	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0, "open O_RDONLY: %s", strerror(errno));
	STAGE_FAILS(ro, PV_KEY, a.put_id, 0, PV_LEN, EPERM);
	STAGE_FAILS(ro, PV_KEY, a.put_id, FKV_MIB, 3, EPERM);
	s = abi_arg(sizeof(*s));
	s->reserved[0] = 1;
	FKV_ASSERT_EQ(abi_ioctl(ro, s), EPERM);
	s = abi_arg(STAGE_VER0 - 1);
	FKV_ASSERT_EQ(abi_ioctl(ro, s), EINVAL);
	close(ro);

	fkv_in_child(pv_without_cap, &a, "SSD_STAGE without CAP_SYS_ADMIN");

	FKV_ASSERT_EQ(fkv_sysfs("ssd_reads"), reads0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), holders0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	/* and the privileged session still does */
	stage_check_release(&sg, PV_KEY, a.put_id, want, PV_LEN, FKV_MIB, 3);
	FKV_ASSERT_EQ(fkv_delete(kv, PV_KEY, strlen(PV_KEY)), 0);
	fkv_close(kv);
	stager_close(&sg);
	free(want);
	teardown(base0);
}

/* ---- 3. versions this node does not have ---- */

#define NE_SHARD	(8 * FKV_MIB)
#define NE_LEN		(FKV_MIB + 11)
#define NE_FILL		12

/*
 * ENOENT for every version this node has no committed SSD copy of:
 * before any shard is attached, an unknown key, a key that is another's
 * prefix or extension, the right key with another put_id, a version whose
 * SSD copy a newer put's replaced (a stale route), and one the ring has
 * overwritten since.  None of them leaves staging behind.
 */
FKV_TEST_TIMEOUT(stage_of_versions_not_on_this_ssd_is_enoent, 180)
{
	uint64_t base0, id_a, id_v1, id_v2, id_b, id_fill = 0, evict0;
	uint8_t *w_a, *w_v2, *w_b, *w_fill;
	char key[32];
	struct stager sg;
	struct fkv *kv;
	int i;

	base0 = setup("segment_mb=16");
	stager_open(&sg);
	kv = kv_open();
	w_a = pattern("ne-a", NE_LEN, 1);
	w_v2 = pattern("ne-v", NE_LEN + 1, 22);
	w_b = pattern("ne-b", NE_LEN, 3);

	/* no shard yet: the put lives in DRAM only */
	id_a = put_pattern(kv, "ne-a", NE_LEN, 1);
	STAGE_FAILS(sg.fd, "ne-a", id_a, 0, 4096, ENOENT);
	FKV_ASSERT_EQ(fkv_delete(kv, "ne-a", 4), 0);

	attach_shard(&sg, SHARD_EXT4, NE_SHARD);
	id_a = put_pattern(kv, "ne-a", NE_LEN, 1);
	id_v1 = put_pattern(kv, "ne-v", NE_LEN, 21);
	wait_published(2);
	stage_check_release(&sg, "ne-a", id_a, w_a, NE_LEN, 0, NE_LEN);

	STAGE_FAILS(sg.fd, "ne-nope", id_a, 0, 4096, ENOENT);
	STAGE_FAILS(sg.fd, "ne-", id_a, 0, 4096, ENOENT);
	STAGE_FAILS(sg.fd, "ne-a\x01", id_a, 0, 4096, ENOENT);
	STAGE_FAILS(sg.fd, "ne-A", id_a, 0, 4096, ENOENT);
	STAGE_FAILS(sg.fd, "ne-a", id_a + 1000, 0, 4096, ENOENT);
	STAGE_FAILS(sg.fd, "ne-a", UINT64_MAX, 0, 4096, ENOENT);
	/* the other key's put_id */
	STAGE_FAILS(sg.fd, "ne-a", id_v1, 0, 4096, ENOENT);
	STAGE_FAILS(sg.fd, "ne-v", id_a, 0, 4096, ENOENT);

	/* overwritten: once the newer version's copy is committed, the old
	 * one is no longer this node's copy of the key */
	id_v2 = put_pattern(kv, "ne-v", NE_LEN + 1, 22);
	FKV_ASSERT_GT(id_v2, id_v1);
	wait_published(3);
	STAGE_FAILS(sg.fd, "ne-v", id_v1, 0, 4096, ENOENT);
	STAGE_FAILS(sg.fd, "ne-v", id_v1, 0, NE_LEN, ENOENT);
	stage_check_release(&sg, "ne-v", id_v2, w_v2, NE_LEN + 1, 0,
			    NE_LEN + 1);
	stage_check_release(&sg, "ne-v", id_v2, w_v2, NE_LEN + 1, FKV_MIB, 12);

	/* the ring (8 MiB) wraps over ne-a, ne-v and b */
	id_b = put_pattern(kv, "ne-b", NE_LEN, 3);
	wait_published(4);
	stage_check_release(&sg, "ne-b", id_b, w_b, NE_LEN, 0, NE_LEN);
	evict0 = fkv_sysfs("ssd_evictions");
	for (i = 0; i < NE_FILL; i++) {
		snprintf(key, sizeof(key), "ne-fill-%02d", i);
		id_fill = put_pattern(kv, key, NE_LEN, 100 + i);
		wait_persists(5 + i);
	}
	w_fill = pattern(key, NE_LEN, 100 + NE_FILL - 1);
	FKV_ASSERT_GE(fkv_sysfs("ssd_evictions") - evict0, 3);
	STAGE_FAILS(sg.fd, "ne-a", id_a, 0, 4096, ENOENT);
	STAGE_FAILS(sg.fd, "ne-v", id_v2, 0, NE_LEN + 1, ENOENT);
	STAGE_FAILS(sg.fd, "ne-b", id_b, FKV_MIB, 11, ENOENT);
	/* the newest one is there */
	stage_check_release(&sg, key, id_fill, w_fill, NE_LEN, FKV_MIB, 11);
	/*
	 * Deleted: the master routes no one to it any more; the ring may
	 * still hold the copy.  Either way never bytes of something else.
	 */
	FKV_ASSERT_EQ(fkv_delete(kv, key, strlen(key)), 0);
	{
		struct fluxonkv_ssd_stage s;
		int ret = stage(sg.fd, key, id_fill, 0, NE_LEN, &s);

		fkv_diag("stage of a deleted key's version: %s",
			 ret ? strerror(-ret) : "staged (its copy is still "
			 "in the ring)");
		FKV_ASSERT(ret == 0 || ret == -ENOENT, "stage of a deleted "
			   "version: %s", strerror(-ret));
		if (!ret) {
			check_chunk(&sg, &s, key, w_fill, NE_LEN, 0, NE_LEN);
			FKV_ASSERT_EQ(fkv_dev_release(sg.fd, s.holder_id), 0);
		}
	}

	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	delete_any(kv, "ne-a");
	delete_any(kv, "ne-v");
	delete_any(kv, "ne-b");
	for (i = 0; i < NE_FILL; i++) {
		snprintf(key, sizeof(key), "ne-fill-%02d", i);
		delete_any(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	stager_close(&sg);
	free(w_a);
	free(w_v2);
	free(w_b);
	free(w_fill);
	teardown(base0);
}

/* ---- 3. holders go with the session ---- */

#define SC_KEY		"stage-close"
#define SC_LEN		(3 * FKV_MIB + 333)

struct sc_arg {
	uint64_t put_id;
	int wfd;	/* pipe: tells the parent the chunks are staged */
};

/* A daemon that dies holding staged chunks. */
static void sc_dies_holding(void *arg)
{
	const struct sc_arg *a = arg;
	struct fluxonkv_ssd_stage s;
	struct stager sg;
	uint8_t *want = pattern(SC_KEY, SC_LEN, 9);
	int j;

	stager_open(&sg);
	for (j = 0; j < 3; j++)
		stage_check(&sg, SC_KEY, a->put_id, want, SC_LEN,
			    (uint64_t)j * FKV_MIB, FKV_MIB, &s);
	FKV_ASSERT_EQ(write(a->wfd, "s", 1), 1);
	pause();	/* killed */
}

/*
 * Staged chunks never released go when their session does: after close
 * (and munmap) of the session, and when the process that holds them is
 * killed.  A holder is its session's: another session cannot release it.
 */
FKV_TEST(staged_chunks_not_released_go_with_their_session)
{
	struct fluxonkv_ssd_stage s[4];
	uint64_t base0, base;
	struct sc_arg a;
	struct stager sg, other;
	struct fkv *kv;
	uint8_t *want;
	int j, pfd[2], status;
	pid_t pid;
	char c;

	base0 = stage_begin("segment_mb=32", &sg, SHARD_EXT4, 16 * FKV_MIB,
			    &kv);
	a.put_id = put_want(kv, SC_KEY, SC_LEN, 9, &want);
	wait_published(1);
	base = fkv_sysfs("segment_used_bytes");

	/* another session cannot release them; their own can */
	stager_open(&other);
	for (j = 0; j < 4; j++)
		stage_check(&other, SC_KEY, a.put_id, want, SC_LEN,
			    (uint64_t)j * FKV_MIB,
			    j < 3 ? FKV_MIB : SC_LEN - 3 * FKV_MIB, &s[j]);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 4);
	FKV_ASSERT_EQ(fkv_dev_release(sg.fd, s[0].holder_id), -ENOENT);
	FKV_ASSERT_EQ(fkv_dev_release(other.fd, s[0].holder_id), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 3);
	/* closed (and unmapped) without releasing the other three */
	stager_close(&other);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	/* a daemon killed holding three chunks */
	FKV_ASSERT_EQ(pipe(pfd), 0);
	a.wfd = pfd[1];
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (pid == 0) {
		close(pfd[0]);
		sc_dies_holding(&a);
		_exit(1);
	}
	close(pfd[1]);
	FKV_ASSERT(read(pfd[0], &c, 1) == 1, "the child staged nothing");
	close(pfd[0]);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 3);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + 3 * FKV_MIB);
	kill(pid, SIGKILL);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFSIGNALED(status), "child status %#x", status);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	/* the session that stayed still works */
	stage_check_release(&sg, SC_KEY, a.put_id, want, SC_LEN, 0, SC_LEN);
	FKV_ASSERT_EQ(fkv_delete(kv, SC_KEY, strlen(SC_KEY)), 0);
	fkv_close(kv);
	stager_close(&sg);
	free(want);
	teardown(base0);
}

/* ---- 4. IO errors (dm-error under the shard) ---- */

#define IO_SHARD	(64 * FKV_MIB)
#define IO_KEY		"stage-io"
#define IO_LEN		(16 * FKV_MIB + 5)
#define IO_GOOD		(8 * FKV_MIB)	/* the device works below this */

/* Stage every 4 MiB chunk of IO_KEY; count (and check) the good ones. */
static int io_stage_all(const struct stager *sg, uint64_t id,
			const uint8_t *want, uint64_t base, bool lower_ok,
			bool upper_ok)
{
	uint64_t errs0 = fkv_sysfs("ssd_io_errors"), nerr = 0;
	int j, ok = 0;

	for (j = 0; j < 5; j++) {
		uint64_t off = (uint64_t)j * CHUNK;
		uint64_t len = j < 4 ? CHUNK : IO_LEN - off;
		bool good = off + len <= IO_GOOD ? lower_ok : upper_ok;

		if (good) {
			stage_check_release(sg, IO_KEY, id, want, IO_LEN, off,
					    len);
			ok++;
		} else {
			STAGE_FAILS(sg->fd, IO_KEY, id, off, len, EIO);
			nerr++;
		}
		FKV_ASSERT_SYSFS_SETTLES("holders", 0);
		FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	}
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors") - errs0, nerr);
	return ok;
}

/*
 * A device error under the shard is EIO for the chunk it hits and only
 * that one, with no staging leaked; the entry stays this node's copy, so
 * once the device works again the same chunks stage fine.
 */
FKV_TEST_TIMEOUT(stage_io_errors_are_eio_and_leak_no_staging, 180)
{
	char devno[32], linear[256], half[512], error[128];
	uint64_t sectors, base0, base, id;
	struct stager sg;
	struct fkv *kv;
	uint8_t *want;

	sectors = dm_disk(NULL, devno, sizeof(devno));
	FKV_ASSERT_GE(sectors * 512, IO_SHARD);
	snprintf(linear, sizeof(linear), "0 %" PRIu64 " linear %s 0\n",
		 sectors, devno);
	snprintf(half, sizeof(half), "0 %" PRIu64 " linear %s 0\n%" PRIu64
		 " %" PRIu64 " error\n", (uint64_t)(IO_GOOD / 512), devno,
		 (uint64_t)(IO_GOOD / 512),
		 (uint64_t)(sectors - IO_GOOD / 512));
	snprintf(error, sizeof(error), "0 %" PRIu64 " error\n", sectors);

	base0 = setup("segment_mb=64");		/* unloads a previous module */
	dm_create(DM_ERR_NAME, linear);
	stager_open(&sg);
	attach_dm(&sg, DM_ERR_NAME, IO_SHARD);
	kv = kv_open();
	/* the only entry: at the start of the ring, of the device */
	id = put_want(kv, IO_KEY, IO_LEN, 44, &want);
	wait_published(1);
	base = fkv_sysfs("segment_used_bytes");
	FKV_ASSERT_EQ(io_stage_all(&sg, id, want, base, true, true), 5);

	/* the second half of the value sits on failing sectors */
	dm_swap(DM_ERR_NAME, half);
	FKV_ASSERT_EQ(io_stage_all(&sg, id, want, base, true, false), 2);
	/* a chunk straddling the boundary fails as a whole */
	STAGE_FAILS(sg.fd, IO_KEY, id, IO_GOOD - FKV_MIB, 2 * FKV_MIB, EIO);
	/* every IO fails */
	dm_swap(DM_ERR_NAME, error);
	FKV_ASSERT_EQ(io_stage_all(&sg, id, want, base, false, false), 0);
	STAGE_FAILS(sg.fd, IO_KEY, id, 0, CHUNK_MAX, EIO);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	/* and a client still reads the DRAM replica */
	{
		struct fkv_holder h;
		int ret = fkv_get(kv, IO_KEY, strlen(IO_KEY), &h);

		FKV_ASSERT(ret == 0, "get: %s", fkv_strerror(ret));
		FKV_ASSERT_EQ(h.source, FLUXONKV_SOURCE_MEMORY);
		FKV_ASSERT_EQ(h.len, IO_LEN);
		FKV_ASSERT(!memcmp(h.data, want, IO_LEN), "DRAM bytes differ");
		FKV_ASSERT_EQ(fkv_holder_release(kv, &h), 0);
	}

	/* healthy again: the same entry stages */
	dm_swap(DM_ERR_NAME, linear);
	FKV_ASSERT_EQ(io_stage_all(&sg, id, want, base, true, true), 5);
	stage_check_release(&sg, IO_KEY, id, want, IO_LEN, 0, CHUNK_MAX);

	FKV_ASSERT_EQ(fkv_delete(kv, IO_KEY, strlen(IO_KEY)), 0);
	fkv_close(kv);
	stager_close(&sg);
	free(want);
	teardown(base0);
	dm_remove(DM_ERR_NAME);
}

/* ---- 5. the ring wants the entry being staged ---- */

#define SL_V		FKV_MIB		/* X, W1..W3 fill the ring exactly */
#define SL_RING		(4 * SL_V)
#define SL_READ_MS	2000
#define SL_WRITERS	4		/* the 4th wraps onto X */

struct sl_stage {
	const struct stager *sg;
	uint64_t put_id;
	struct fluxonkv_ssd_stage s;
	int ret;
	int64_t ms;
	int done;
};

static void *sl_stage_x(void *arg)
{
	struct sl_stage *t = arg;
	int64_t t0 = fkv_now_ms();

	t->ret = stage(t->sg->fd, "sl-x", t->put_id, 0, SL_V, &t->s);
	t->ms = fkv_now_ms() - t0;
	__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A staging read pins its entry: while the read of X waits on a slow
 * device, the put that wraps onto X must wait (a busy wait) instead of
 * overwriting it, and the stage returns X's bytes (ESTALE would be allowed
 * too, wrong bytes never).  Once the read is done, the write goes on and X
 * is gone from the ring: ENOENT.
 */
FKV_TEST_TIMEOUT(stage_of_an_entry_the_ring_wants_waits_or_is_estale, 120)
{
	char devno[32], table[256], key[16];
	uint64_t sectors, base0, base, persists = 0, busy0, n;
	struct sl_stage t = { 0 };
	int status;
	pid_t pid;
	uint8_t *want, *w4;
	uint64_t ids[SL_WRITERS + 1];
	struct stager sg;
	struct fkv *kv;
	pthread_t tid;
	int i, pins, parked = -1;

	sectors = dm_disk("dm-delay", devno, sizeof(devno));
	snprintf(table, sizeof(table), "0 %" PRIu64 " delay %s 0 %u %s 0 0\n",
		 sectors, devno, SL_READ_MS, devno);
	base0 = setup("segment_mb=16");
	dm_create(DM_DLY_NAME, table);
	stager_open(&sg);
	attach_dm(&sg, DM_DLY_NAME, SL_RING);
	kv = kv_open();
	want = pattern("sl-x", SL_V, 1);
	w4 = pattern("sl-w4", SL_V, 10 + SL_WRITERS);
	t.sg = &sg;
	t.put_id = put_pattern(kv, "sl-x", SL_V, 1);
	wait_published(++persists);
	busy0 = fkv_sysfs("ssd_busy_waits");

	FKV_ASSERT_EQ(pthread_create(&tid, NULL, sl_stage_x, &t), 0);
	/* the staging read is on the device: X carries a read pin */
	wait_ring_pinned("sl-x", t.put_id, 100, "X");

	/* W1..W3 fit; W4 waits for X */
	n = put_writers_until_busy(kv, "sl", SL_WRITERS, SL_V, ids, persists,
				   busy0);
	pins = ring_entry("sl-x", t.put_id, &parked, NULL);
	fkv_diag("during the staging read: %" PRIu64 " persists ended, X pins "
		 "%d, writes parked %d, stage %s", n, pins, parked,
		 __atomic_load_n(&t.done, __ATOMIC_ACQUIRE) ? "done" :
		 "reading");
	if (pins != -2) {
		FKV_ASSERT(pins > 0, "X's read ended before the check (pins "
			   "%d): raise SL_READ_MS", pins);
		FKV_ASSERT_EQ(n, persists + SL_WRITERS - 1);
		FKV_ASSERT_EQ(parked, 1);
	}

	pthread_join(tid, NULL);
	fkv_diag("stage of X: %s after %" PRId64 " ms (read delay %u ms)",
		 t.ret ? strerror(-t.ret) : "staged", t.ms, SL_READ_MS);
	FKV_ASSERT(t.ret == 0 || t.ret == -ESTALE, "stage of X: %s",
		   strerror(-t.ret));
	FKV_ASSERT_GE(t.ms, SL_READ_MS * 3 / 4);	/* the read was slow */
	if (!t.ret) {
		check_chunk(&sg, &t.s, "sl-x", want, SL_V, 0, SL_V);
		FKV_ASSERT_EQ(fkv_dev_release(sg.fd, t.s.holder_id), 0);
	}

	/* X is unpinned: W4 overwrites it */
	persists += SL_WRITERS;
	wait_published(persists);
	FKV_ASSERT_GE(fkv_sysfs("ssd_evictions"), 1);
	STAGE_FAILS(sg.fd, "sl-x", t.put_id, 0, SL_V, ENOENT);
	stage_check_release(&sg, "sl-w4", ids[SL_WRITERS], w4, SL_V, 0, SL_V);

	/*
	 * A daemon killed during a slow staging read of W1 (the ring's tail
	 * now): no holder or staging is left, and the read pin goes with
	 * the read, so the put that wraps onto W1 completes.
	 */
	base = fkv_sysfs("segment_used_bytes");
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (pid == 0) {
		struct fluxonkv_ssd_stage cs;
		int cfd = fkv_dev_open();

		stage(cfd, "sl-w1", ids[1], 0, SL_V, &cs);
		pause();
		_exit(3);
	}
	pins = wait_ring_pinned("sl-w1", ids[1], 200, "W1");
	kill(pid, SIGKILL);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFSIGNALED(status), "child status %#x", status);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	if (pins != -2)
		FKV_ASSERT_EQ(ring_entry("sl-w1", ids[1], NULL, NULL), 0);
	snprintf(key, sizeof(key), "sl-w%d", SL_WRITERS + 1);
	put_pattern(kv, key, SL_V, 10 + SL_WRITERS + 1);
	wait_published(++persists);
	STAGE_FAILS(sg.fd, "sl-w1", ids[1], 0, SL_V, ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);

	delete_any(kv, "sl-x");
	for (i = 1; i <= SL_WRITERS + 1; i++) {
		snprintf(key, sizeof(key), "sl-w%d", i);
		delete_any(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	stager_close(&sg);
	free(want);
	free(w4);
	teardown(base0);
	dm_remove(DM_DLY_NAME);
}

/* ---- 5. staging racing ring overwrites ---- */

#define RC_KEYS		10
#define RC_SHARD	(6 * FKV_MIB)
#define RC_MS		4000
#define RC_STAGERS	2
#define RC_RECENT	16
#define RC_MINLEN	(500 * KIB)
#define RC_MAXLEN	(1100 * KIB)

struct rc_put {
	uint64_t put_id, len, salt;
	int key;
};

static struct {
	int64_t end_ms;
	pthread_mutex_t lock;
	struct rc_put recent[RC_RECENT];	/* the latest puts, a ring */
	uint64_t nput;
	uint64_t ok, enoent, estale;
} rc;

static void rc_key(char *buf, size_t n, int k)
{
	snprintf(buf, n, "rc-%02d", k);
}

static void *rc_writer(void *arg)
{
	uint64_t rnd = 0x5ca1ab1e;
	struct fkv *kv = kv_open();
	uint8_t *buf = malloc(RC_MAXLEN);
	uint64_t seq;
	char key[16];

	(void)arg;
	FKV_ASSERT(buf);
	for (seq = 1; fkv_now_ms() < rc.end_ms; seq++) {
		uint64_t r = fkv_xorshift(&rnd), put_id = 0;
		struct rc_put p;
		int ret;

		p.key = (int)(r % RC_KEYS);
		p.len = RC_MINLEN + (r >> 20) % (RC_MAXLEN - RC_MINLEN);
		p.salt = seq;
		rc_key(key, sizeof(key), p.key);
		fkv_pattern_fill(buf, p.len, key, strlen(key), p.salt);
		ret = fkv_put(kv, key, strlen(key), buf, p.len, &put_id);
		FKV_ASSERT(ret == 0, "put '%s': %s", key, fkv_strerror(ret));
		p.put_id = put_id;
		pthread_mutex_lock(&rc.lock);
		rc.recent[rc.nput++ % RC_RECENT] = p;
		pthread_mutex_unlock(&rc.lock);
	}
	free(buf);
	fkv_close(kv);
	return NULL;
}

static void *rc_stager(void *arg)
{
	uint64_t rnd = 0xfeed + (uintptr_t)arg;
	struct stager *sg = arg;
	uint8_t *want = malloc(RC_MAXLEN);
	char key[16];

	FKV_ASSERT(want);
	while (fkv_now_ms() < rc.end_ms) {
		uint64_t r = fkv_xorshift(&rnd), off, len;
		struct fluxonkv_ssd_stage s;
		struct rc_put p;
		int ret;

		pthread_mutex_lock(&rc.lock);
		if (!rc.nput) {
			pthread_mutex_unlock(&rc.lock);
			fkv_msleep(1);
			continue;
		}
		p = rc.recent[(rc.nput - 1 - r % (rc.nput < RC_RECENT ?
						   rc.nput : RC_RECENT)) %
			      RC_RECENT];
		pthread_mutex_unlock(&rc.lock);
		/*
		 * a whole value now and then, else whole checksummed MiBs of
		 * it (the last one may end at the value's end)
		 */
		off = (r & 3) ? ((r >> 8) % p.len) & ~(FKV_MIB - 1) : 0;
		len = (1 + (r >> 32) % ((p.len - off + FKV_MIB - 1) /
					FKV_MIB)) * FKV_MIB;
		if (!(r & 3) || len > p.len - off)
			len = p.len - off;
		rc_key(key, sizeof(key), p.key);
		ret = stage(sg->fd, key, p.put_id, off, len, &s);
		if (ret == -ENOENT) {
			__atomic_fetch_add(&rc.enoent, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (ret == -ESTALE) {
			__atomic_fetch_add(&rc.estale, 1, __ATOMIC_RELAXED);
			continue;
		}
		FKV_ASSERT(ret == 0, "stage '%s' put_id %" PRIu64 " [%" PRIu64
			   ", +%" PRIu64 "): %s", key, p.put_id, off, len,
			   strerror(-ret));
		fkv_pattern_fill(want, p.len, key, strlen(key), p.salt);
		check_chunk(sg, &s, key, want, p.len, off, len);
		FKV_ASSERT_EQ(fkv_dev_release(sg->fd, s.holder_id), 0);
		__atomic_fetch_add(&rc.ok, 1, __ATOMIC_RELAXED);
	}
	free(want);
	return NULL;
}

/*
 * Stagers pick among the latest puts while a writer keeps the 6 MiB ring
 * wrapping: each stage is the chunk's exact bytes, or ENOENT (not yet
 * committed, replaced or overwritten), or ESTALE; never other bytes.
 */
FKV_TEST_TIMEOUT(staging_racing_ring_overwrites_never_returns_wrong_bytes, 120)
{
	pthread_t tid[1 + RC_STAGERS];
	struct stager sg[RC_STAGERS];
	uint64_t base0;
	struct fkv *kv;
	char key[16];
	int i;

	base0 = setup("segment_mb=16");
	for (i = 0; i < RC_STAGERS; i++)
		stager_open(&sg[i]);
	attach_shard(&sg[0], SHARD_EXT4, RC_SHARD);
	pthread_mutex_init(&rc.lock, NULL);
	rc.end_ms = fkv_now_ms() + RC_MS;
	FKV_ASSERT_EQ(pthread_create(&tid[0], NULL, rc_writer, NULL), 0);
	for (i = 0; i < RC_STAGERS; i++)
		FKV_ASSERT_EQ(pthread_create(&tid[1 + i], NULL, rc_stager,
					     &sg[i]), 0);
	for (i = 0; i < 1 + RC_STAGERS; i++)
		pthread_join(tid[i], NULL);
	fkv_diag("%" PRIu64 " puts; stages: %" PRIu64 " staged, %" PRIu64
		 " ENOENT, %" PRIu64 " ESTALE; SSD: %" PRIu64 " evictions, %"
		 PRIu64 " busy waits", rc.nput, rc.ok, rc.enoent, rc.estale,
		 fkv_sysfs("ssd_evictions"), fkv_sysfs("ssd_busy_waits"));
	FKV_ASSERT_GT(rc.ok, 0);
	FKV_ASSERT_GT(rc.enoent, 0);
	FKV_ASSERT_GT(fkv_sysfs("ssd_evictions"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_io_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), 0);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);

	kv = kv_open();
	for (i = 0; i < RC_KEYS; i++) {
		rc_key(key, sizeof(key), i);
		delete_any(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	for (i = 0; i < RC_STAGERS; i++)
		stager_close(&sg[i]);
	teardown(base0);
}

/* ---- staging waits for room like a refill ---- */

#define RM_KEY		"stage-room"
#define RM_LEN		(8 * FKV_MIB + 9)
#define RM_FILL		7		/* 1 MiB each */

/*
 * A full segment: the staging allocation gets room (the module drops DRAM
 * replicas whose SSD copy exists, or NEED_ROOM and the master evicts them)
 * and then stages the right bytes.  When staged chunks themselves fill the segment, nothing
 * the master can evict frees room: ENOSPC after the room wait, nothing
 * leaked.
 */
FKV_TEST_TIMEOUT(staging_waits_for_room_then_is_enospc, 120)
{
	struct fluxonkv_ssd_stage s[8];
	uint64_t base0, id, waits0, drops0, seg, used;
	int64_t t0, ms = 0;
	int status;
	pid_t pid;
	struct stager sg;
	struct fkv *kv;
	uint8_t *want;
	char key[32];
	int i, n, ret = 0;

	base0 = stage_begin("segment_mb=16", &sg, SHARD_EXT4, 64 * FKV_MIB,
			    &kv);
	seg = fkv_sysfs("segment_capacity_bytes");
	id = put_want(kv, RM_KEY, RM_LEN, 7, &want);
	for (i = 0; i < RM_FILL; i++) {
		snprintf(key, sizeof(key), "room-%d", i);
		put_pattern(kv, key, FKV_MIB, 70 + i);
	}
	wait_published(1 + RM_FILL);
	fkv_diag("segment: %" PRIu64 " of %" PRIu64 " bytes used",
		 fkv_sysfs("segment_used_bytes"), seg);
	FKV_ASSERT(seg - fkv_sysfs("segment_used_bytes") < CHUNK,
		   "the segment has room for a chunk: the test needs a full "
		   "one");

	waits0 = fkv_sysfs("room_waits");
	drops0 = fkv_sysfs("clean_drops");
	stage_check(&sg, RM_KEY, id, want, RM_LEN, 0, CHUNK, &s[0]);
	/* the room came from clean drops (every value here has its SSD
	 * copy: no wait) or from the master's eviction (a wait) */
	FKV_ASSERT(fkv_sysfs("clean_drops") > drops0 ||
		   (fkv_sysfs("room_waits") > waits0 &&
		    fkv_sysfs("evictions") > 0),
		   "a chunk staged in a full segment without room made");

	/* chunks held until the segment is theirs: the master's evictions
	 * cannot make room any more */
	for (n = 1; n < 8; n++) {
		t0 = fkv_now_ms();
		ret = stage(sg.fd, RM_KEY, id, (uint64_t)(n % 2) * CHUNK,
			    CHUNK, &s[n]);
		ms = fkv_now_ms() - t0;
		if (ret)
			break;
		check_chunk(&sg, &s[n], RM_KEY, want, RM_LEN,
			    (uint64_t)(n % 2) * CHUNK, CHUNK);
	}
	fkv_diag("%d chunks of 4 MiB held; the next: %s after %" PRId64 " ms",
		 n, ret ? strerror(-ret) : "staged", ms);
	FKV_ASSERT(n < 8, "8 chunks of 4 MiB staged in a 16 MiB segment");
	FKV_ASSERT_GE(n, 3);
	FKV_ASSERT(ret == -ENOSPC, "stage into a segment of staged chunks: %s",
		   strerror(-ret));
	FKV_ASSERT_GE(ms, 4000);	/* it waited for room first */
	FKV_ASSERT_EQ(fkv_sysfs("holders"), n);

	/* a daemon killed while its stage waits for room leaves nothing */
	used = fkv_sysfs("segment_used_bytes");
	waits0 = fkv_sysfs("room_waits");
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (pid == 0) {
		struct fluxonkv_ssd_stage cs;
		int cfd = fkv_dev_open();

		stage(cfd, RM_KEY, id, 0, CHUNK, &cs);
		_exit(3);	/* not reached in time: killed */
	}
	if (fkv_sysfs_wait("room_waits", waits0 + 1, 3000, NULL))
		FKV_FAIL_AT(1, "the child's stage did not wait for room");
	fkv_msleep(200);
	kill(pid, SIGKILL);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		   "the child staging into a full segment ended with %#x",
		   status);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), n);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", used);

	for (i = 0; i < n; i++) {
		check_chunk(&sg, &s[i], RM_KEY, want, RM_LEN,
			    (uint64_t)(i % 2) * CHUNK, CHUNK);
		FKV_ASSERT_EQ(fkv_dev_release(sg.fd, s[i].holder_id), 0);
	}
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	/* room again: the rest of the value */
	stage_check_release(&sg, RM_KEY, id, want, RM_LEN, 2 * CHUNK, 9);

	delete_any(kv, RM_KEY);
	for (i = 0; i < RM_FILL; i++) {
		snprintf(key, sizeof(key), "room-%d", i);
		delete_any(kv, key);
	}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	stager_close(&sg);
	free(want);
	teardown(base0);
}
