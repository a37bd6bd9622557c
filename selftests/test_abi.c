// SPDX-License-Identifier: GPL-2.0
/*
 * test_abi - the ioctl and mmap ABI of /dev/fluxonkv abused with raw calls:
 * size-extensible structs, reserved fields, bad pointers and lengths,
 * holder ownership, and the read-only segment mapping.  Most cases need no
 * daemon (argument checks come before anything is asked of the master);
 * the holder cases start fluxond.
 */
#include "fkv_env.h"

#define SEG_MB		32
#define PAGE		4096

/* One ioctl of the ABI, described generically. */
struct abi_cmd {
	const char *name;
	unsigned long cmd;
	uint32_t ver0;
};

static const struct abi_cmd cmds[] = {
	{ "INFO", FLUXONKV_IOC_INFO, FLUXONKV_INFO_SIZE_VER0 },
	{ "PUT", FLUXONKV_IOC_PUT, FLUXONKV_PUT_SIZE_VER0 },
	{ "GET", FLUXONKV_IOC_GET, FLUXONKV_GET_SIZE_VER0 },
	{ "RELEASE", FLUXONKV_IOC_RELEASE, FLUXONKV_RELEASE_SIZE_VER0 },
	{ "DELETE", FLUXONKV_IOC_DELETE, FLUXONKV_DELETE_SIZE_VER0 },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char key[] = "abi-key";
static uint8_t value[PAGE];
/* Two pages: argument structs with room for a tail up to a page. */
static uint8_t argbuf[2 * PAGE] __attribute__((aligned(PAGE)));

/*
 * Fill argbuf with a valid argument for cmds[i] (key and value set for
 * PUT/GET/DELETE, unknown holder id for RELEASE) with size field SIZE.
 */
static void *valid_arg(unsigned int i, uint32_t size)
{
	memset(argbuf, 0, sizeof(argbuf));
	switch (cmds[i].cmd) {
	case FLUXONKV_IOC_PUT: {
		struct fluxonkv_put *p = (void *)argbuf;

		p->key_len = sizeof(key) - 1;
		p->key_ptr = (uintptr_t)key;
		p->value_ptr = (uintptr_t)value;
		p->value_len = sizeof(value);
		break;
	}
	case FLUXONKV_IOC_GET: {
		struct fluxonkv_get *g = (void *)argbuf;

		g->key_len = sizeof(key) - 1;
		g->key_ptr = (uintptr_t)key;
		break;
	}
	case FLUXONKV_IOC_RELEASE: {
		struct fluxonkv_release *r = (void *)argbuf;

		r->holder_id = 0x7fffffffffffULL;
		break;
	}
	case FLUXONKV_IOC_DELETE: {
		struct fluxonkv_delete *d = (void *)argbuf;

		d->key_len = sizeof(key) - 1;
		d->key_ptr = (uintptr_t)key;
		break;
	}
	}
	memcpy(argbuf, &size, sizeof(size));
	return argbuf;
}

/*
 * What a valid argument of cmds[i] gets without a daemon: INFO works,
 * RELEASE of an unknown id is ENOENT, the rest need the master.
 */
static int no_daemon_errno(unsigned int i)
{
	if (cmds[i].cmd == FLUXONKV_IOC_INFO)
		return 0;
	if (cmds[i].cmd == FLUXONKV_IOC_RELEASE)
		return ENOENT;
	return ENOTCONN;
}

/* ioctl(fd, cmds[i].cmd, arg): 0 or errno. */
static int raw_ioctl(int fd, unsigned int i, void *arg)
{
	return ioctl(fd, cmds[i].cmd, arg) ? errno : 0;
}

static int load_and_open(void)
{
	int fd;

	FKV_LOAD("segment_mb=32 request_timeout_ms=3000");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0, "open: %s", strerror(errno));
	return fd;
}

FKV_TEST(struct_size_below_ver0_is_einval)
{
	int fd = load_and_open();
	unsigned int i;

	for (i = 0; i < NCMDS; i++) {
		static const uint32_t sizes[] = { 0, 4, 8 };
		unsigned int s;

		for (s = 0; s < 3; s++)
			FKV_EXPECT(raw_ioctl(fd, i, valid_arg(i, sizes[s])) ==
				   EINVAL, "%s size %u", cmds[i].name,
				   sizes[s]);
		FKV_EXPECT(raw_ioctl(fd, i, valid_arg(i, cmds[i].ver0 - 1)) ==
			   EINVAL, "%s size ver0-1", cmds[i].name);
		FKV_EXPECT(raw_ioctl(fd, i, valid_arg(i, cmds[i].ver0 - 8)) ==
			   EINVAL, "%s size ver0-8", cmds[i].name);
	}
	close(fd);
}

FKV_TEST(larger_struct_with_nonzero_tail_is_e2big)
{
	int fd = load_and_open();
	unsigned int i;

	for (i = 0; i < NCMDS; i++) {
		uint8_t *a;
		int err;

		a = valid_arg(i, cmds[i].ver0 + 8);
		a[cmds[i].ver0 + 7] = 1;
		err = raw_ioctl(fd, i, a);
		FKV_EXPECT(err == E2BIG, "%s size ver0+8, last byte 1: %s",
			   cmds[i].name, strerror(err));

		a = valid_arg(i, PAGE);
		a[PAGE - 1] = 0x80;
		err = raw_ioctl(fd, i, a);
		FKV_EXPECT(err == E2BIG, "%s size %d, last byte set: %s",
			   cmds[i].name, PAGE, strerror(err));
	}
	close(fd);
}

FKV_TEST(larger_struct_with_zero_tail_is_accepted)
{
	int fd = load_and_open();
	struct fluxonkv_info *info;
	unsigned int i, j;
	uint8_t *a;
	int err;

	for (i = 0; i < NCMDS; i++) {
		err = raw_ioctl(fd, i, valid_arg(i, cmds[i].ver0 + 8));
		FKV_EXPECT(err == no_daemon_errno(i), "%s size ver0+8: %s",
			   cmds[i].name, strerror(err));
		err = raw_ioctl(fd, i, valid_arg(i, PAGE));
		FKV_EXPECT(err == no_daemon_errno(i), "%s size %d: %s",
			   cmds[i].name, PAGE, strerror(err));
		/* more than a page is never accepted */
		err = raw_ioctl(fd, i, valid_arg(i, PAGE + 8));
		FKV_EXPECT(err == EINVAL || err == E2BIG,
			   "%s size page+8: %s", cmds[i].name, strerror(err));
	}

	/* INFO fills what it knows and leaves the caller's tail alone. */
	a = valid_arg(0, FLUXONKV_INFO_SIZE_VER0 + 64);
	FKV_ASSERT_EQ(raw_ioctl(fd, 0, a), 0);
	info = (void *)a;
	FKV_ASSERT_EQ(info->abi_version, FLUXONKV_ABI_VERSION);
	FKV_ASSERT_EQ(info->segment_size, SEG_MB * FKV_MIB);
	FKV_ASSERT_EQ(info->key_max, FLUXONKV_KEY_MAX);
	for (j = FLUXONKV_INFO_SIZE_VER0; j < sizeof(argbuf); j++)
		FKV_ASSERT(a[j] == 0, "byte %u past the struct written", j);
	close(fd);
}

FKV_TEST(info_written_back_only_up_to_the_callers_size)
{
	int fd = load_and_open();
	uint8_t *a;
	unsigned int j;

	/* VER0 is the whole struct today; nothing past it may be touched. */
	a = valid_arg(0, FLUXONKV_INFO_SIZE_VER0);
	memset(a + FLUXONKV_INFO_SIZE_VER0, 0xa5, 64);
	FKV_ASSERT_EQ(raw_ioctl(fd, 0, a), 0);
	for (j = FLUXONKV_INFO_SIZE_VER0; j < FLUXONKV_INFO_SIZE_VER0 + 64; j++)
		FKV_ASSERT(a[j] == 0xa5, "byte %u past the caller's size "
			   "written", j);
	FKV_ASSERT_EQ(((struct fluxonkv_info *)a)->segment_size,
		      SEG_MB * FKV_MIB);
	close(fd);
}

FKV_TEST(nonzero_reserved_fields_and_flags_are_einval)
{
	int fd = load_and_open();
	struct fluxonkv_info *info;
	struct fluxonkv_put *put;
	struct fluxonkv_get *get;
	struct fluxonkv_release *rel;
	struct fluxonkv_delete *del;

	info = valid_arg(0, sizeof(*info));
	info->reserved[0] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 0, info), EINVAL);
	info = valid_arg(0, sizeof(*info));
	info->reserved[1] = 1ULL << 63;
	FKV_EXPECT_EQ(raw_ioctl(fd, 0, info), EINVAL);

	put = valid_arg(1, sizeof(*put));
	put->flags = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), EINVAL);
	put = valid_arg(1, sizeof(*put));
	put->flags = 1ULL << 63;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), EINVAL);
	put = valid_arg(1, sizeof(*put));
	put->reserved[0] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), EINVAL);
	put = valid_arg(1, sizeof(*put));
	put->reserved[1] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), EINVAL);

	get = valid_arg(2, sizeof(*get));
	get->flags = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 2, get), EINVAL);
	get = valid_arg(2, sizeof(*get));
	get->reserved[0] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 2, get), EINVAL);
	get = valid_arg(2, sizeof(*get));
	get->reserved[1] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 2, get), EINVAL);

	rel = valid_arg(3, sizeof(*rel));
	rel->reserved0 = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 3, rel), EINVAL);
	rel = valid_arg(3, sizeof(*rel));
	rel->reserved[0] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 3, rel), EINVAL);
	rel = valid_arg(3, sizeof(*rel));
	rel->reserved[1] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 3, rel), EINVAL);

	del = valid_arg(4, sizeof(*del));
	del->flags = 2;
	FKV_EXPECT_EQ(raw_ioctl(fd, 4, del), EINVAL);
	del = valid_arg(4, sizeof(*del));
	del->reserved[0] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 4, del), EINVAL);
	del = valid_arg(4, sizeof(*del));
	del->reserved[1] = 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 4, del), EINVAL);
	close(fd);
}

FKV_TEST(bad_argument_and_key_pointers_are_efault)
{
	int fd = load_and_open();
	struct fluxonkv_put *put;
	struct fluxonkv_get *get;
	struct fluxonkv_delete *del;
	unsigned int i;
	uint8_t *pages;
	const uint8_t *edge;

	for (i = 0; i < NCMDS; i++)
		FKV_EXPECT(raw_ioctl(fd, i, (void *)8) == EFAULT,
			   "%s with argument pointer 8", cmds[i].name);

	put = valid_arg(1, sizeof(*put));
	put->key_ptr = 8;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), EFAULT);
	get = valid_arg(2, sizeof(*get));
	get->key_ptr = 8;
	FKV_EXPECT_EQ(raw_ioctl(fd, 2, get), EFAULT);
	del = valid_arg(4, sizeof(*del));
	del->key_ptr = 8;
	FKV_EXPECT_EQ(raw_ioctl(fd, 4, del), EFAULT);

	/* A key that runs off the end of a mapping into a hole. */
	pages = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(pages != MAP_FAILED);
	memset(pages, 'k', PAGE);
	FKV_ASSERT_EQ(munmap(pages + PAGE, PAGE), 0);
	edge = pages + PAGE - 8;
	put = valid_arg(1, sizeof(*put));
	put->key_ptr = (uintptr_t)edge;
	put->key_len = 16;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), EFAULT);
	get = valid_arg(2, sizeof(*get));
	get->key_ptr = (uintptr_t)edge;
	get->key_len = 16;
	FKV_EXPECT_EQ(raw_ioctl(fd, 2, get), EFAULT);
	del = valid_arg(4, sizeof(*del));
	del->key_ptr = (uintptr_t)edge;
	del->key_len = 16;
	FKV_EXPECT_EQ(raw_ioctl(fd, 4, del), EFAULT);
	/* the same 8 readable bytes are a fine key */
	get = valid_arg(2, sizeof(*get));
	get->key_ptr = (uintptr_t)edge;
	get->key_len = 8;
	FKV_EXPECT_EQ(raw_ioctl(fd, 2, get), ENOTCONN);
	munmap(pages, PAGE);
	close(fd);
}

FKV_TEST(key_len_zero_or_over_key_max_is_einval)
{
	static uint8_t bigkey[FLUXONKV_KEY_MAX + 64];
	static const uint32_t bad[] = { 0, FLUXONKV_KEY_MAX + 1,
					FLUXONKV_KEY_MAX + 64, UINT32_MAX };
	int fd = load_and_open();
	struct fluxonkv_put *put;
	struct fluxonkv_get *get;
	struct fluxonkv_delete *del;
	unsigned int b;

	memset(bigkey, 'K', sizeof(bigkey));
	for (b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
		put = valid_arg(1, sizeof(*put));
		put->key_ptr = (uintptr_t)bigkey;
		put->key_len = bad[b];
		FKV_EXPECT(raw_ioctl(fd, 1, put) == EINVAL, "PUT key_len %u",
			   bad[b]);
		get = valid_arg(2, sizeof(*get));
		get->key_ptr = (uintptr_t)bigkey;
		get->key_len = bad[b];
		FKV_EXPECT(raw_ioctl(fd, 2, get) == EINVAL, "GET key_len %u",
			   bad[b]);
		del = valid_arg(4, sizeof(*del));
		del->key_ptr = (uintptr_t)bigkey;
		del->key_len = bad[b];
		FKV_EXPECT(raw_ioctl(fd, 4, del) == EINVAL,
			   "DELETE key_len %u", bad[b]);
	}
	/* exactly FLUXONKV_KEY_MAX passes validation (then needs a daemon) */
	put = valid_arg(1, sizeof(*put));
	put->key_ptr = (uintptr_t)bigkey;
	put->key_len = FLUXONKV_KEY_MAX;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), ENOTCONN);
	get = valid_arg(2, sizeof(*get));
	get->key_ptr = (uintptr_t)bigkey;
	get->key_len = FLUXONKV_KEY_MAX;
	FKV_EXPECT_EQ(raw_ioctl(fd, 2, get), ENOTCONN);
	close(fd);
}

FKV_TEST(value_len_zero_is_einval_and_over_value_max_is_e2big)
{
	int fd = load_and_open();
	struct fluxonkv_info info;
	struct fluxonkv_put *put;

	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	FKV_ASSERT_GT(info.value_max, 0);

	put = valid_arg(1, sizeof(*put));
	put->value_len = 0;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), EINVAL);
	put = valid_arg(1, sizeof(*put));
	put->value_len = info.value_max + 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), E2BIG);
	put = valid_arg(1, sizeof(*put));
	put->value_len = FLUXONKV_VALUE_MAX + 1;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), E2BIG);
	put = valid_arg(1, sizeof(*put));
	put->value_len = UINT64_MAX;
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), E2BIG);
	/* value_max itself is a valid length (it is the master's turn next) */
	put = valid_arg(1, sizeof(*put));
	put->value_len = info.value_max;
	put->value_ptr = (uintptr_t)mmap(NULL, info.value_max, PROT_READ,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(put->value_ptr != (uintptr_t)MAP_FAILED);
	FKV_EXPECT_EQ(raw_ioctl(fd, 1, put), ENOTCONN);
	close(fd);
}

FKV_TEST(put_get_delete_without_daemon_are_enotconn)
{
	int fd = load_and_open();
	struct fluxonkv_info info;
	struct fluxonkv_get g;
	uint64_t put_id;
	int64_t t0 = fkv_now_ms();

	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), 0);
	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	FKV_ASSERT_EQ(info.flags & FLUXONKV_INFO_DAEMON, 0);
	FKV_ASSERT_EQ(fkv_dev_put(fd, key, sizeof(key) - 1, value,
				  sizeof(value), &put_id), -ENOTCONN);
	FKV_ASSERT_EQ(fkv_dev_get(fd, key, sizeof(key) - 1, &g), -ENOTCONN);
	FKV_ASSERT_EQ(g.holder_id, 0);
	FKV_ASSERT_EQ(fkv_dev_delete(fd, key, sizeof(key) - 1), -ENOTCONN);
	/* at once, not after the request timeout */
	FKV_ASSERT_LT(fkv_now_ms() - t0, 1000);
	FKV_ASSERT_EQ(fkv_sysfs("puts"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), 0);
	close(fd);
}

FKV_TEST(release_of_unknown_holder_is_enoent)
{
	static const uint64_t ids[] = { 0, 1, 2, 12345, 1ULL << 32,
					UINT64_MAX };
	int fd = load_and_open();
	unsigned int i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		FKV_EXPECT(fkv_dev_release(fd, ids[i]) == -ENOENT,
			   "release of holder %" PRIu64, ids[i]);
	close(fd);
}

/* ---- the segment mapping ---- */

FKV_TEST(segment_mapping_is_read_only)
{
	int fd = load_and_open();
	uint64_t size;
	void *p;
	int rofd;

	FKV_ASSERT_EQ(fkv_sysfs("segment_capacity_bytes"), SEG_MB * FKV_MIB);
	size = SEG_MB * FKV_MIB;

	errno = 0;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	FKV_EXPECT(p == MAP_FAILED && (errno == EPERM || errno == EACCES),
		   "shared writable mapping: %p, %s", p, strerror(errno));
	errno = 0;
	p = mmap(NULL, size, PROT_WRITE, MAP_SHARED, fd, 0);
	FKV_EXPECT(p == MAP_FAILED && (errno == EPERM || errno == EACCES),
		   "PROT_WRITE only mapping: %p, %s", p, strerror(errno));
	errno = 0;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	FKV_EXPECT(p == MAP_FAILED && (errno == EPERM || errno == EACCES),
		   "private writable mapping: %p, %s", p, strerror(errno));

	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	FKV_ASSERT(p != MAP_FAILED, "read-only mapping: %s", strerror(errno));
	errno = 0;
	FKV_EXPECT(mprotect(p, size, PROT_READ | PROT_WRITE) == -1 &&
		   (errno == EACCES || errno == EPERM),
		   "mprotect(PROT_WRITE): %s", strerror(errno));
	errno = 0;
	FKV_EXPECT(mprotect(p, PAGE, PROT_WRITE) == -1,
		   "mprotect(PROT_WRITE) of one page succeeded");
	/* still readable after the refused upgrade */
	FKV_EXPECT_EQ(((volatile uint8_t *)p)[size - 1], 0);
	munmap(p, size);

	/* A private read-only mapping cannot be made writable either. */
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	FKV_ASSERT(p != MAP_FAILED, "private read-only: %s", strerror(errno));
	FKV_EXPECT(mprotect(p, size, PROT_READ | PROT_WRITE) == -1,
		   "mprotect(PROT_WRITE) of a private mapping succeeded");
	munmap(p, size);

	/* An O_RDONLY descriptor maps read-only too. */
	rofd = open(FKV_DEV_PATH, O_RDONLY);
	FKV_ASSERT(rofd >= 0);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, rofd, 0);
	FKV_EXPECT(p != MAP_FAILED, "O_RDONLY mapping: %s", strerror(errno));
	if (p != MAP_FAILED)
		munmap(p, size);
	close(rofd);
	close(fd);
}

FKV_TEST(mapping_beyond_the_segment_is_refused)
{
	int fd = load_and_open();
	uint64_t size = SEG_MB * FKV_MIB;
	void *p, *q;

#define EXPECT_MAP_REFUSED(len, off)					\
	do {								\
		errno = 0;						\
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);	\
		FKV_EXPECT(p == MAP_FAILED &&				\
			   (errno == EINVAL || errno == ENXIO),		\
			   "mmap len %llu off %llu: %p %s",		\
			   (unsigned long long)(len),			\
			   (unsigned long long)(off), p,		\
			   strerror(errno));				\
		if (p != MAP_FAILED)					\
			munmap(p, len);					\
	} while (0)

	EXPECT_MAP_REFUSED(size + PAGE, 0);
	EXPECT_MAP_REFUSED(2 * size, 0);
	EXPECT_MAP_REFUSED(PAGE, size);
	EXPECT_MAP_REFUSED(2 * PAGE, size - PAGE);
	EXPECT_MAP_REFUSED(PAGE, 1ULL << 40);

	/* a window inside the segment is fine */
	p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, size - PAGE);
	FKV_ASSERT(p != MAP_FAILED, "last page: %s", strerror(errno));
	FKV_EXPECT_EQ(((volatile uint8_t *)p)[PAGE - 1], 0);
	/* and cannot be grown past the end afterwards */
	q = mremap(p, PAGE, 2 * PAGE, MREMAP_MAYMOVE);
	FKV_EXPECT(q == MAP_FAILED, "mremap grew the segment mapping");
	munmap(q == MAP_FAILED ? p : q, q == MAP_FAILED ? PAGE : 2 * PAGE);
	close(fd);
}

/* ---- holders (need fluxond) ---- */

static void put_and_get(int fd, const char *k, size_t vlen,
		       struct fluxonkv_get *g)
{
	static uint8_t buf[64 * 1024];
	uint64_t put_id = 0;

	fkv_pattern_fill(buf, vlen, k, strlen(k), 0);
	FKV_ASSERT_EQ(fkv_dev_put(fd, k, strlen(k), buf, vlen, &put_id), 0);
	FKV_ASSERT_GT(put_id, 0);
	FKV_ASSERT_EQ(fkv_dev_get(fd, k, strlen(k), g), 0);
	FKV_ASSERT_EQ(g->put_id, put_id);
	FKV_ASSERT_EQ(g->len, vlen);
	FKV_ASSERT_NE(g->holder_id, 0);
}

FKV_TEST(holder_is_released_only_by_its_own_file_description)
{
	const char *k = "abi-holder";
	const size_t vlen = 10000;
	struct fluxonkv_get g;
	const uint8_t *map;
	uint64_t size, base;
	int fd, other, dupfd;

	FKV_LOAD("segment_mb=32");
	FKV_START_DAEMON();
	base = fkv_sysfs("segment_used_bytes");
	fd = fkv_dev_open();
	other = fkv_dev_open();
	FKV_ASSERT(fd >= 0 && other >= 0);
	map = fkv_dev_map(fd, &size);
	FKV_ASSERT(map != MAP_FAILED);
	put_and_get(fd, k, vlen, &g);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);

	/* another open of the device cannot release it ... */
	FKV_ASSERT_EQ(fkv_dev_release(other, g.holder_id), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	/* ... and the bytes stay pinned even once the key is gone */
	FKV_ASSERT_EQ(fkv_dev_delete(fd, k, strlen(k)), 0);
	FKV_ASSERT_GE(fkv_sysfs("segment_used_bytes"), base + FKV_ALIGN_UP(vlen));
	FKV_ASSERT_PATTERN(map + g.offset, vlen, k, strlen(k), 0);

	/* a dup shares the file description, so it may release it */
	dupfd = dup(fd);
	FKV_ASSERT(dupfd >= 0);
	FKV_ASSERT_EQ(fkv_dev_release(dupfd, g.holder_id), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	/* double release */
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), -ENOENT);
	FKV_ASSERT_EQ(fkv_dev_release(dupfd, g.holder_id), -ENOENT);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	munmap((void *)map, size);
	close(dupfd);
	close(other);
	close(fd);
	FKV_STOP_DAEMON();
}

FKV_TEST(double_release_is_enoent)
{
	const char *k = "abi-double";
	struct fluxonkv_get g, g2;
	uint64_t base;
	int fd;

	FKV_LOAD("segment_mb=32");
	FKV_START_DAEMON();
	base = fkv_sysfs("segment_used_bytes");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	put_and_get(fd, k, 100, &g);
	FKV_ASSERT_EQ(fkv_dev_get(fd, k, strlen(k), &g2), 0);
	FKV_ASSERT_NE(g2.holder_id, g.holder_id);
	FKV_ASSERT_EQ(g2.offset, g.offset);	/* same replica, two pins */
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 2);

	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), -ENOENT);
	/* the other holder of the same bytes is untouched */
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g2.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g2.holder_id), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	FKV_ASSERT_EQ(fkv_dev_delete(fd, k, strlen(k)), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	close(fd);
	FKV_STOP_DAEMON();
}

FKV_TEST(put_with_unreadable_value_is_efault_and_leaves_nothing)
{
	const char *k = "abi-efault";
	struct fluxonkv_get g;
	uint64_t base, put_id = 0;
	uint8_t *pages;
	int fd;

	FKV_LOAD("segment_mb=32");
	FKV_START_DAEMON();
	base = fkv_sysfs("segment_used_bytes");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);

	FKV_ASSERT_EQ(fkv_dev_put(fd, k, strlen(k), (void *)8, PAGE, &put_id),
		      -EFAULT);
	/* a value whose second half is a hole */
	pages = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(pages != MAP_FAILED);
	memset(pages, 'v', 2 * PAGE);
	FKV_ASSERT_EQ(munmap(pages + 2 * PAGE, 2 * PAGE), 0);
	FKV_ASSERT_EQ(fkv_dev_put(fd, k, strlen(k), pages, 4 * PAGE, &put_id),
		      -EFAULT);

	/* nothing was published, nothing stays allocated */
	FKV_ASSERT_EQ(fkv_dev_get(fd, k, strlen(k), &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("puts"), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	/* and the key works normally afterwards */
	FKV_ASSERT_EQ(fkv_dev_put(fd, k, strlen(k), pages, 2 * PAGE, &put_id),
		      0);
	FKV_ASSERT_EQ(fkv_dev_get(fd, k, strlen(k), &g), 0);
	FKV_ASSERT_EQ(g.len, 2 * PAGE);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_delete(fd, k, strlen(k)), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	munmap(pages, 2 * PAGE);
	close(fd);
	FKV_STOP_DAEMON();
}

FKV_TEST(get_whose_result_cannot_be_written_back_is_efault_and_pins_nothing)
{
	const char *k = "abi-rogget";
	struct fluxonkv_get g, *ro;
	uint64_t base;
	int fd;

	FKV_LOAD("segment_mb=32");
	FKV_START_DAEMON();
	base = fkv_sysfs("segment_used_bytes");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	put_and_get(fd, k, 5000, &g);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);

	/* the argument is readable (valid) but not writable */
	ro = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(ro != MAP_FAILED);
	ro->size = sizeof(*ro);
	ro->key_len = strlen(k);
	ro->key_ptr = (uintptr_t)k;
	FKV_ASSERT_EQ(mprotect(ro, PAGE, PROT_READ), 0);
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_GET, ro), EFAULT);
	/* the caller never learnt a holder id, so none may remain */
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	FKV_ASSERT_EQ(fkv_dev_delete(fd, k, strlen(k)), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	munmap(ro, PAGE);
	close(fd);
	FKV_STOP_DAEMON();
}
