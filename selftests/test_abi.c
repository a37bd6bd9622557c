// SPDX-License-Identifier: GPL-2.0
/*
 * test_abi - the ioctl and mmap ABI of /dev/fluxonkv abused with raw calls:
 * size-extensible structs, reserved fields, bad pointers and lengths,
 * holder ownership, the segment mapping (read-only for client sessions,
 * shared-writable for a privileged one) and HOLD, which pins a replica by
 * handle for a privileged session.  Most cases need no daemon (argument
 * checks come before anything is asked of the master); the holder cases
 * start fluxond.
 *
 * A privileged session is a file description opened O_RDWR with
 * CAP_SYS_ADMIN: fkv_dev_open() as root.  Client sessions here are the
 * device opened O_RDONLY, or O_RDWR by a child without CAP_SYS_ADMIN.
 */
#include "fkv_env.h"

#define SEG_MB		32
#define PAGE		4096

/* One ioctl of the ABI, described generically. */
struct abi_cmd {
	const char *name;
	unsigned long cmd;
	uint32_t ver0;
	uint32_t known;		/* the struct as this header has it */
};

static const struct abi_cmd cmds[] = {
	{ "INFO", FLUXONKV_IOC_INFO, FLUXONKV_INFO_SIZE_VER0,
	  sizeof(struct fluxonkv_info) },
	{ "PUT", FLUXONKV_IOC_PUT, FLUXONKV_PUT_SIZE_VER0,
	  sizeof(struct fluxonkv_put) },
	{ "GET", FLUXONKV_IOC_GET, FLUXONKV_GET_SIZE_VER0,
	  sizeof(struct fluxonkv_get) },
	{ "RELEASE", FLUXONKV_IOC_RELEASE, FLUXONKV_RELEASE_SIZE_VER0,
	  sizeof(struct fluxonkv_release) },
	{ "DELETE", FLUXONKV_IOC_DELETE, FLUXONKV_DELETE_SIZE_VER0,
	  sizeof(struct fluxonkv_delete) },
	{ "HOLD", FLUXONKV_IOC_HOLD, FLUXONKV_HOLD_SIZE_VER0,
	  sizeof(struct fluxonkv_hold) },
	{ "LOOKUP", FLUXONKV_IOC_LOOKUP, FLUXONKV_LOOKUP_SIZE_VER0,
	  sizeof(struct fluxonkv_lookup) },
};
#define HOLD_I	5	/* cmds[HOLD_I] is HOLD */
#define LOOKUP_I 6	/* cmds[LOOKUP_I] is LOOKUP */
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const char key[] = "abi-key";
static uint8_t value[PAGE];
/* Two pages: argument structs with room for a tail up to a page. */
static uint8_t argbuf[2 * PAGE] __attribute__((aligned(PAGE)));

/* A handle no replica has: slot 1 of a put_id nobody assigned. */
#define NO_HANDLE	((0x7fffULL << 32) | 1)

/*
 * Fill argbuf with a valid argument for cmds[i] (key and value set for
 * PUT/GET/DELETE/HOLD, unknown holder id for RELEASE, unknown handle for
 * HOLD) with size field SIZE.
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
	case FLUXONKV_IOC_HOLD: {
		struct fluxonkv_hold *h = (void *)argbuf;

		h->key_len = sizeof(key) - 1;
		h->key_ptr = (uintptr_t)key;
		h->handle = NO_HANDLE;
		h->put_id = 1;
		break;
	}
	case FLUXONKV_IOC_LOOKUP: {
		struct fluxonkv_lookup *l = (void *)argbuf;

		l->key_len = sizeof(key) - 1;
		l->key_ptr = (uintptr_t)key;
		break;
	}
	}
	memcpy(argbuf, &size, sizeof(size));
	return argbuf;
}

/*
 * What a valid argument of cmds[i] gets without a daemon: INFO works,
 * RELEASE of an unknown id and HOLD of an unknown handle are ENOENT, the
 * rest need the master.
 */
static int no_daemon_errno(unsigned int i)
{
	if (cmds[i].cmd == FLUXONKV_IOC_INFO)
		return 0;
	if (cmds[i].cmd == FLUXONKV_IOC_RELEASE ||
	    cmds[i].cmd == FLUXONKV_IOC_HOLD)
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

		/* past what the module knows (PUT grew: iov_count) */
		a = valid_arg(i, cmds[i].known + 8);
		a[cmds[i].known + 7] = 1;
		err = raw_ioctl(fd, i, a);
		FKV_EXPECT(err == E2BIG, "%s size known+8, last byte 1: %s",
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

	/* HOLD: flags, out fields, reserved, and handle / put_id 0 */
	{
		struct fluxonkv_hold *h;
		unsigned int c;

		for (c = 0; c < 9; c++) {
			h = valid_arg(HOLD_I, sizeof(*h));
			switch (c) {
			case 0: h->flags = 1; break;
			case 1: h->flags = 1ULL << 63; break;
			case 2: h->holder_id = 1; break;
			case 3: h->offset = FLUXONKV_SEGMENT_ALIGN; break;
			case 4: h->len = 1; break;
			case 5: h->reserved[0] = 1; break;
			case 6: h->reserved[1] = 1ULL << 40; break;
			case 7: h->handle = 0; break;
			case 8: h->put_id = 0; break;
			}
			FKV_EXPECT(raw_ioctl(fd, HOLD_I, h) == EINVAL,
				   "HOLD case %u", c);
		}
		/* and the unmodified argument passes (unknown handle) */
		h = valid_arg(HOLD_I, sizeof(*h));
		FKV_EXPECT_EQ(raw_ioctl(fd, HOLD_I, h), ENOENT);
	}

	/* LOOKUP: flags, out fields, reserved */
	{
		struct fluxonkv_lookup *l;
		unsigned int c;

		for (c = 0; c < 8; c++) {
			l = valid_arg(LOOKUP_I, sizeof(*l));
			switch (c) {
			case 0: l->flags = 1; break;
			case 1: l->flags = 1ULL << 63; break;
			case 2: l->len = 1; break;
			case 3: l->put_id = 1; break;
			case 4: l->source = 1; break;
			case 5: l->reserved0 = 1; break;
			case 6: l->reserved[0] = 1; break;
			case 7: l->reserved[1] = 1ULL << 40; break;
			}
			FKV_EXPECT(raw_ioctl(fd, LOOKUP_I, l) == EINVAL,
				   "LOOKUP case %u", c);
		}
		l = valid_arg(LOOKUP_I, sizeof(*l));
		FKV_EXPECT_EQ(raw_ioctl(fd, LOOKUP_I, l), ENOTCONN);
	}
	close(fd);
}

FKV_TEST(bad_argument_and_key_pointers_are_efault)
{
	int fd = load_and_open();
	struct fluxonkv_put *put;
	struct fluxonkv_get *get;
	struct fluxonkv_delete *del;
	struct fluxonkv_hold *hold;
	struct fluxonkv_lookup *lookup;
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
	hold = valid_arg(HOLD_I, sizeof(*hold));
	hold->key_ptr = 8;
	FKV_EXPECT_EQ(raw_ioctl(fd, HOLD_I, hold), EFAULT);
	lookup = valid_arg(LOOKUP_I, sizeof(*lookup));
	lookup->key_ptr = 8;
	FKV_EXPECT_EQ(raw_ioctl(fd, LOOKUP_I, lookup), EFAULT);

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
	hold = valid_arg(HOLD_I, sizeof(*hold));
	hold->key_ptr = (uintptr_t)edge;
	hold->key_len = 16;
	FKV_EXPECT_EQ(raw_ioctl(fd, HOLD_I, hold), EFAULT);
	lookup = valid_arg(LOOKUP_I, sizeof(*lookup));
	lookup->key_ptr = (uintptr_t)edge;
	lookup->key_len = 16;
	FKV_EXPECT_EQ(raw_ioctl(fd, LOOKUP_I, lookup), EFAULT);
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
	struct fluxonkv_hold *hold;
	struct fluxonkv_lookup *lookup;
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
		hold = valid_arg(HOLD_I, sizeof(*hold));
		hold->key_ptr = (uintptr_t)bigkey;
		hold->key_len = bad[b];
		FKV_EXPECT(raw_ioctl(fd, HOLD_I, hold) == EINVAL,
			   "HOLD key_len %u", bad[b]);
		lookup = valid_arg(LOOKUP_I, sizeof(*lookup));
		lookup->key_ptr = (uintptr_t)bigkey;
		lookup->key_len = bad[b];
		FKV_EXPECT(raw_ioctl(fd, LOOKUP_I, lookup) == EINVAL,
			   "LOOKUP key_len %u", bad[b]);
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
	hold = valid_arg(HOLD_I, sizeof(*hold));
	hold->key_ptr = (uintptr_t)bigkey;
	hold->key_len = FLUXONKV_KEY_MAX;
	FKV_EXPECT_EQ(raw_ioctl(fd, HOLD_I, hold), ENOENT);
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

/*
 * What a client session's mapping must refuse.  SHARED_WRITE_ERRNO: what a
 * shared writable mapping gets (EACCES from the VFS for an O_RDONLY
 * descriptor, EPERM from the module for an unprivileged O_RDWR one).
 */
static void client_mapping_checks(int fd, int shared_write_errno)
{
	uint64_t size = SEG_MB * FKV_MIB;
	void *p;

#define EXPECT_MAP_ERRNO(prot, flags, e)				\
	do {								\
		errno = 0;						\
		p = mmap(NULL, size, prot, flags, fd, 0);		\
		FKV_EXPECT(p == MAP_FAILED && errno == (e),		\
			   "mmap(%s, %s): %p, %s (want %s)", #prot,	\
			   #flags, p, strerror(errno), strerror(e));	\
		if (p != MAP_FAILED)					\
			munmap(p, size);				\
	} while (0)

	EXPECT_MAP_ERRNO(PROT_READ | PROT_WRITE, MAP_SHARED,
			 shared_write_errno);
	EXPECT_MAP_ERRNO(PROT_WRITE, MAP_SHARED, shared_write_errno);
	EXPECT_MAP_ERRNO(PROT_READ | PROT_WRITE, MAP_PRIVATE, EPERM);
	EXPECT_MAP_ERRNO(PROT_READ | PROT_EXEC, MAP_SHARED, EPERM);
	EXPECT_MAP_ERRNO(PROT_READ | PROT_EXEC, MAP_PRIVATE, EPERM);

	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	FKV_ASSERT(p != MAP_FAILED, "read-only mapping: %s", strerror(errno));
	errno = 0;
	FKV_EXPECT(mprotect(p, size, PROT_READ | PROT_WRITE) == -1 &&
		   (errno == EACCES || errno == EPERM),
		   "mprotect(PROT_WRITE): %s", strerror(errno));
	errno = 0;
	FKV_EXPECT(mprotect(p, PAGE, PROT_WRITE) == -1,
		   "mprotect(PROT_WRITE) of one page succeeded");
	FKV_EXPECT(mprotect(p, PAGE, PROT_READ | PROT_EXEC) == -1,
		   "mprotect(PROT_EXEC) succeeded");
	/* still readable after the refused upgrade */
	FKV_EXPECT_EQ(((volatile uint8_t *)p)[size - 1], 0);
	munmap(p, size);

	/* A private read-only mapping cannot be made writable either. */
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	FKV_ASSERT(p != MAP_FAILED, "private read-only: %s", strerror(errno));
	FKV_EXPECT(mprotect(p, size, PROT_READ | PROT_WRITE) == -1,
		   "mprotect(PROT_WRITE) of a private mapping succeeded");
	munmap(p, size);
#undef EXPECT_MAP_ERRNO
}

static void unprivileged_mapping_checks(void *unused)
{
	int fd;

	FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0, "O_RDWR without CAP_SYS_ADMIN: %s",
		   strerror(errno));
	client_mapping_checks(fd, EPERM);
	close(fd);
}

FKV_TEST(segment_mapping_is_read_only)
{
	int fd = load_and_open();
	int rofd;

	FKV_ASSERT_EQ(fkv_sysfs("segment_capacity_bytes"), SEG_MB * FKV_MIB);
	/* root, but the descriptor is read-only: a client session */
	rofd = fkv_dev_open_ro();
	FKV_ASSERT(rofd >= 0);
	client_mapping_checks(rofd, EACCES);
	close(rofd);
	/* read-write, but without CAP_SYS_ADMIN: a client session */
	fkv_in_child(unprivileged_mapping_checks, NULL,
		     "mapping checks without CAP_SYS_ADMIN");
	close(fd);
}

/*
 * The node daemon's session (O_RDWR + CAP_SYS_ADMIN) may map the segment
 * shared and writable, to land remote payloads in their targets; what it
 * writes is what every client's read-only mapping reads.  Private
 * writable and executable mappings stay refused.
 */
FKV_TEST(privileged_session_maps_the_segment_shared_and_writable)
{
	const uint64_t size = SEG_MB * FKV_MIB, off = 5 * PAGE;
	int fd = load_and_open(), rofd;
	uint8_t *rw, *win;
	const uint8_t *ro;
	void *p;

	rw = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	FKV_ASSERT(rw != MAP_FAILED, "privileged shared writable mapping: %s",
		   strerror(errno));
	rofd = fkv_dev_open_ro();
	FKV_ASSERT(rofd >= 0);
	ro = mmap(NULL, size, PROT_READ, MAP_SHARED, rofd, 0);
	FKV_ASSERT(ro != MAP_FAILED, "client mapping: %s", strerror(errno));

	/* writes are the segment's bytes, seen by every mapping */
	fkv_pattern_fill(rw + off, 3 * PAGE + 5, "rw", 2, 9);
	rw[size - 1] = 0xa5;
	FKV_ASSERT_PATTERN(ro + off, 3 * PAGE + 5, "rw", 2, 9);
	FKV_ASSERT_EQ(ro[size - 1], 0xa5);
	win = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	FKV_ASSERT(win != MAP_FAILED, "writable window: %s", strerror(errno));
	FKV_ASSERT_PATTERN(win, 3 * PAGE + 5, "rw", 2, 9);
	win[0] ^= 0xff;
	FKV_ASSERT_EQ(ro[off], rw[off]);
	win[0] ^= 0xff;
	FKV_ASSERT_PATTERN(ro + off, 3 * PAGE + 5, "rw", 2, 9);
	munmap(win, 4 * PAGE);

	/* it may drop and regain write access, never gain exec */
	FKV_EXPECT_EQ(mprotect(rw, size, PROT_READ), 0);
	FKV_EXPECT_EQ(mprotect(rw, size, PROT_READ | PROT_WRITE), 0);
	FKV_EXPECT(mprotect(rw, PAGE, PROT_READ | PROT_EXEC) == -1,
		   "mprotect(PROT_EXEC) of the privileged mapping succeeded");

	/* leave the segment as it was */
	memset(rw + off, 0, 3 * PAGE + 5);
	rw[size - 1] = 0;
	FKV_ASSERT_EQ(ro[size - 1], 0);
	munmap((void *)ro, size);
	munmap(rw, size);
	close(rofd);

#define EXPECT_PRIV_MAP_ERRNO(len, prot, flags, off_, e)		\
	do {								\
		errno = 0;						\
		p = mmap(NULL, len, prot, flags, fd, off_);		\
		FKV_EXPECT(p == MAP_FAILED && errno == (e),		\
			   "privileged mmap(%s, %s): %p, %s (want %s)",	\
			   #prot, #flags, p, strerror(errno),		\
			   strerror(e));				\
		if (p != MAP_FAILED)					\
			munmap(p, len);					\
	} while (0)

	/* a private copy of a target would land nowhere */
	EXPECT_PRIV_MAP_ERRNO(size, PROT_READ | PROT_WRITE, MAP_PRIVATE, 0,
			      EINVAL);
	EXPECT_PRIV_MAP_ERRNO(size, PROT_WRITE, MAP_PRIVATE, 0, EINVAL);
	/* values are data, never code */
	EXPECT_PRIV_MAP_ERRNO(size, PROT_READ | PROT_EXEC, MAP_SHARED, 0,
			      EPERM);
	EXPECT_PRIV_MAP_ERRNO(size, PROT_READ | PROT_WRITE | PROT_EXEC,
			      MAP_SHARED, 0, EPERM);
	EXPECT_PRIV_MAP_ERRNO(size, PROT_READ | PROT_EXEC, MAP_PRIVATE, 0,
			      EPERM);
	/* and the segment's bounds hold for writable mappings too */
	EXPECT_PRIV_MAP_ERRNO(size + PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
			      0, EINVAL);
	EXPECT_PRIV_MAP_ERRNO(2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED,
			      size - PAGE, EINVAL);
#undef EXPECT_PRIV_MAP_ERRNO
	close(fd);
}

/*
 * A privileged session's private mapping is refused writable at mmap;
 * mprotect must not make one writable afterwards either.
 */
FKV_TEST(privileged_private_mapping_cannot_be_made_writable)
{
	const uint64_t size = SEG_MB * FKV_MIB;
	int fd = load_and_open();
	void *p;

	const uint8_t *ro;
	int rofd;

	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	FKV_ASSERT(p != MAP_FAILED, "private read-only: %s", strerror(errno));
	errno = 0;
	if (mprotect(p, size, PROT_READ | PROT_WRITE) == 0) {
		FKV_FAIL_AT(0, "mprotect(PROT_WRITE) of a privileged private "
			    "mapping succeeded");
		/* then at least its writes must stay private copies */
		rofd = fkv_dev_open_ro();
		FKV_ASSERT(rofd >= 0);
		ro = mmap(NULL, size, PROT_READ, MAP_SHARED, rofd, 0);
		FKV_ASSERT(ro != MAP_FAILED);
		FKV_ASSERT_EQ(ro[3 * PAGE], 0);
		((volatile uint8_t *)p)[3 * PAGE] = 0x5a;
		FKV_ASSERT_EQ(((volatile uint8_t *)p)[3 * PAGE], 0x5a);
		FKV_ASSERT(ro[3 * PAGE] == 0, "a private write reached the "
			   "segment");
		munmap((void *)ro, size);
		close(rofd);
	}
	munmap(p, size);
	close(fd);
}

struct priv_fds {
	int priv;		/* opened O_RDWR with CAP_SYS_ADMIN */
};

/* In a child without CAP_SYS_ADMIN: an old session keeps its privilege. */
static void privilege_checks_without_cap(void *arg)
{
	const struct priv_fds *fds = arg;
	const uint64_t size = SEG_MB * FKV_MIB;
	struct fluxonkv_hold h;
	void *p;
	int fd;

	FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
	/* the session opened with the capability is still privileged ... */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds->priv, 0);
	FKV_EXPECT(p != MAP_FAILED, "privileged session after dropping the "
		   "capability: %s", strerror(errno));
	if (p != MAP_FAILED)
		munmap(p, size);
	FKV_EXPECT_EQ(fkv_dev_hold(fds->priv, key, sizeof(key) - 1, NO_HANDLE,
				   1, &h), -ENOENT);
	/* ... a new one is not */
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0, "open O_RDWR: %s", strerror(errno));
	errno = 0;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	FKV_EXPECT(p == MAP_FAILED && errno == EPERM, "writable mapping of a "
		   "session opened without CAP_SYS_ADMIN: %p %s", p,
		   strerror(errno));
	FKV_EXPECT_EQ(fkv_dev_hold(fd, key, sizeof(key) - 1, NO_HANDLE, 1, &h),
		      -EPERM);
	close(fd);
}

/* Privilege is the opener's, decided once at open (like a capability). */
FKV_TEST(privilege_is_decided_when_the_device_is_opened)
{
	struct priv_fds fds;

	fds.priv = load_and_open();
	fkv_in_child(privilege_checks_without_cap, &fds,
		     "privilege checks without CAP_SYS_ADMIN");
	close(fds.priv);
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

/*
 * The module (segment_mb=32) and fluxond, a session on it in *fd; returns
 * segment_used_bytes then.
 */
static uint64_t daemon_session(int *fd)
{
	uint64_t base;

	FKV_LOAD("segment_mb=32");
	FKV_START_DAEMON();
	base = fkv_sysfs("segment_used_bytes");
	*fd = fkv_dev_open();
	FKV_ASSERT(*fd >= 0);
	return base;
}

/* K deleted, the segment back at BASE, FD closed and fluxond stopped. */
static void daemon_session_end(int fd, const char *k, uint64_t base)
{
	FKV_ASSERT_EQ(fkv_dev_delete(fd, k, strlen(k)), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	close(fd);
	FKV_STOP_DAEMON();
}

FKV_TEST(holder_is_released_only_by_its_own_file_description)
{
	const char *k = "abi-holder";
	const size_t vlen = 10000;
	struct fluxonkv_get g;
	const uint8_t *map;
	uint64_t size, base;
	int fd, other, dupfd;

	base = daemon_session(&fd);
	other = fkv_dev_open();
	FKV_ASSERT(other >= 0);
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

	base = daemon_session(&fd);
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

	daemon_session_end(fd, k, base);
}

FKV_TEST(put_with_unreadable_value_is_efault_and_leaves_nothing)
{
	const char *k = "abi-efault";
	struct fluxonkv_get g;
	uint64_t base, put_id = 0;
	uint8_t *pages;
	int fd;

	base = daemon_session(&fd);

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
	munmap(pages, 2 * PAGE);
	daemon_session_end(fd, k, base);
}

FKV_TEST(get_whose_result_cannot_be_written_back_is_efault_and_pins_nothing)
{
	const char *k = "abi-rogget";
	struct fluxonkv_get g, *ro;
	uint64_t base;
	int fd;

	base = daemon_session(&fd);
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

	munmap(ro, PAGE);
	daemon_session_end(fd, k, base);
}

/* ---- HOLD: a privileged session pins a replica by handle (fluxond) ---- */

/* The handle of K's replica at PUT_ID (debugfs); skips without debugfs. */
static uint64_t replica_handle(const char *k, uint64_t put_id)
{
	uint64_t h = 0;
	int ret = fkv_debugfs_replica(k, put_id, &h);

	if (ret == -ENOENT)
		FKV_SKIP("no %s/replicas (debugfs) to learn a handle from",
			 FKV_DEBUGFS_DIR);
	FKV_ASSERT(ret == 0, "no replica of '%s' at put_id %" PRIu64, k,
		   put_id);
	FKV_ASSERT_NE(h, 0);
	return h;
}

struct hold_target {
	const char *k;
	uint64_t handle, put_id;
};

static void hold_without_cap_is_eperm(void *arg)
{
	const struct hold_target *t = arg;
	struct fluxonkv_hold h;
	int fd;

	FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0, "open O_RDWR: %s", strerror(errno));
	FKV_EXPECT_EQ(fkv_dev_hold(fd, t->k, strlen(t->k), t->handle,
				   t->put_id, &h), -EPERM);
	FKV_EXPECT_EQ(h.holder_id, 0);
	close(fd);
}

/*
 * HOLD is for the node daemon only: a client session gets EPERM (after the
 * size checks every ioctl makes, before any other), whatever it names.
 */
FKV_TEST(hold_needs_a_privileged_session)
{
	const char *k = "abi-hold-priv";
	struct fluxonkv_get g;
	struct fluxonkv_hold h, *a;
	struct hold_target t;
	uint64_t base;
	int fd, ro;

	base = daemon_session(&fd);
	put_and_get(fd, k, 3000, &g);
	t = (struct hold_target){ k, replica_handle(k, g.put_id), g.put_id };

	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	FKV_ASSERT_EQ(fkv_dev_hold(ro, k, strlen(k), t.handle, t.put_id, &h),
		      -EPERM);
	FKV_ASSERT_EQ(h.holder_id, 0);
	/* the size comes first ... */
	a = valid_arg(HOLD_I, 8);
	FKV_EXPECT_EQ(raw_ioctl(ro, HOLD_I, a), EINVAL);
	a = valid_arg(HOLD_I, FLUXONKV_HOLD_SIZE_VER0 - 8);
	FKV_EXPECT_EQ(raw_ioctl(ro, HOLD_I, a), EINVAL);
	a = valid_arg(HOLD_I, FLUXONKV_HOLD_SIZE_VER0 + 8);
	((uint8_t *)a)[FLUXONKV_HOLD_SIZE_VER0 + 7] = 1;
	FKV_EXPECT_EQ(raw_ioctl(ro, HOLD_I, a), E2BIG);
	FKV_EXPECT_EQ(raw_ioctl(ro, HOLD_I, (void *)8), EFAULT);
	/* ... then the privilege, before the fields */
	a = valid_arg(HOLD_I, sizeof(*a));
	a->flags = 1;
	FKV_EXPECT_EQ(raw_ioctl(ro, HOLD_I, a), EPERM);
	a = valid_arg(HOLD_I, sizeof(*a));
	a->handle = 0;
	FKV_EXPECT_EQ(raw_ioctl(ro, HOLD_I, a), EPERM);
	close(ro);
	fkv_in_child(hold_without_cap_is_eperm, &t,
		     "HOLD without CAP_SYS_ADMIN");
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);

	/* the privileged session gets a second pin of the same bytes */
	FKV_ASSERT_EQ(fkv_dev_hold(fd, k, strlen(k), t.handle, t.put_id, &h),
		      0);
	FKV_ASSERT_NE(h.holder_id, 0);
	FKV_ASSERT_NE(h.holder_id, g.holder_id);
	FKV_ASSERT_EQ(h.offset, g.offset);
	FKV_ASSERT_EQ(h.len, g.len);
	FKV_ASSERT_EQ(h.handle, t.handle);
	FKV_ASSERT_EQ(h.put_id, t.put_id);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 2);
	FKV_ASSERT_EQ(fkv_dev_release(fd, h.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	daemon_session_end(fd, k, base);
}

/* Only a live replica of that key at that version: anything else ENOENT. */
FKV_TEST(hold_of_the_wrong_key_version_or_handle_is_enoent)
{
	const char *k1 = "abi-hold-a", *k2 = "abi-hold-b";
	struct fluxonkv_get g1, g2;
	struct fluxonkv_hold h;
	uint64_t h1, h2, base;
	int fd;

	base = daemon_session(&fd);
	put_and_get(fd, k1, 3000, &g1);
	put_and_get(fd, k2, 5000, &g2);
	h1 = replica_handle(k1, g1.put_id);
	h2 = replica_handle(k2, g2.put_id);
	FKV_ASSERT_NE(h1, h2);

#define EXPECT_HOLD_ENOENT(k, handle, put_id)				\
	FKV_EXPECT(fkv_dev_hold(fd, k, strlen(k), handle, put_id, &h) ==	\
		   -ENOENT, "HOLD %s %#" PRIx64 " put_id %" PRIu64, k,	\
		   (uint64_t)(handle), (uint64_t)(put_id))

	EXPECT_HOLD_ENOENT(k1, h1, g1.put_id + 1);	/* another version */
	EXPECT_HOLD_ENOENT(k1, h1, g1.put_id + 1000);
	EXPECT_HOLD_ENOENT(k2, h1, g1.put_id);		/* another key */
	EXPECT_HOLD_ENOENT("abi-hold-a2", h1, g1.put_id);
	EXPECT_HOLD_ENOENT("abi-hold", h1, g1.put_id);
	EXPECT_HOLD_ENOENT(k1, h2, g2.put_id);		/* its handle, our key */
	EXPECT_HOLD_ENOENT(k1, h2, g1.put_id);
	EXPECT_HOLD_ENOENT(k1, h1 + (1ULL << 32), g1.put_id); /* old slot use */
	EXPECT_HOLD_ENOENT(k1, NO_HANDLE, g1.put_id);	/* no such slot */
	EXPECT_HOLD_ENOENT(k1, UINT64_MAX, g1.put_id);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 2);

	/* the right triple works; once deleted, it is gone */
	FKV_ASSERT_EQ(fkv_dev_hold(fd, k1, strlen(k1), h1, g1.put_id, &h), 0);
	FKV_ASSERT_EQ(fkv_dev_release(fd, h.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g1.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_delete(fd, k1, strlen(k1)), 0);
	EXPECT_HOLD_ENOENT(k1, h1, g1.put_id);
#undef EXPECT_HOLD_ENOENT
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g2.holder_id), 0);
	daemon_session_end(fd, k2, base);
}

/*
 * A HOLD is a holder like a get's: the bytes stay even when the key goes,
 * only its own file description releases it (once), and closing the
 * description releases whatever it still holds.
 */
FKV_TEST(hold_pins_the_replica_until_released_or_closed)
{
	const char *k = "abi-hold-pin";
	const size_t vlen = 20000;
	struct fluxonkv_hold h, h2, h3;
	struct fluxonkv_get g;
	uint64_t handle, base, size;
	const uint8_t *map;
	int fd, ro, other;

	base = daemon_session(&fd);
	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	map = fkv_dev_map(ro, &size);
	FKV_ASSERT(map != MAP_FAILED);
	put_and_get(fd, k, vlen, &g);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	handle = replica_handle(k, g.put_id);

	FKV_ASSERT_EQ(fkv_dev_hold(fd, k, strlen(k), handle, g.put_id, &h), 0);
	FKV_ASSERT_EQ(h.offset, g.offset);
	FKV_ASSERT_EQ(h.len, vlen);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	/* the key goes; the pinned bytes do not */
	FKV_ASSERT_EQ(fkv_dev_delete(fd, k, strlen(k)), 0);
	FKV_ASSERT_EQ(fkv_dev_hold(fd, k, strlen(k), handle, g.put_id, &h2),
		      -ENOENT);
	FKV_ASSERT_GE(fkv_sysfs("segment_used_bytes"),
		      base + FKV_ALIGN_UP(vlen));
	FKV_ASSERT_PATTERN(map + h.offset, h.len, k, strlen(k), 0);
	/* only its own description releases it, once */
	other = fkv_dev_open();
	FKV_ASSERT(other >= 0);
	FKV_ASSERT_EQ(fkv_dev_release(other, h.holder_id), -ENOENT);
	FKV_ASSERT_EQ(fkv_dev_release(ro, h.holder_id), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	FKV_ASSERT_EQ(fkv_dev_release(fd, h.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_release(fd, h.holder_id), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	/* closing the description releases its HOLDs */
	put_and_get(fd, k, vlen, &g);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	handle = replica_handle(k, g.put_id);
	FKV_ASSERT_EQ(fkv_dev_hold(other, k, strlen(k), handle, g.put_id,
				   &h2), 0);
	FKV_ASSERT_EQ(fkv_dev_hold(other, k, strlen(k), handle, g.put_id,
				   &h3), 0);
	FKV_ASSERT_NE(h2.holder_id, h3.holder_id);
	FKV_ASSERT_EQ(h2.offset, h3.offset);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 2);
	FKV_ASSERT_EQ(fkv_dev_delete(fd, k, strlen(k)), 0);
	FKV_ASSERT_GE(fkv_sysfs("segment_used_bytes"),
		      base + FKV_ALIGN_UP(vlen));
	FKV_ASSERT_PATTERN(map + h2.offset, h2.len, k, strlen(k), 0);
	close(other);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	munmap((void *)map, size);
	close(ro);
	close(fd);
	FKV_STOP_DAEMON();
}

FKV_TEST(hold_whose_result_cannot_be_written_back_is_efault_and_pins_nothing)
{
	const char *k = "abi-hold-ro";
	struct fluxonkv_hold *rh;
	struct fluxonkv_get g;
	uint64_t base, handle;
	int fd;

	base = daemon_session(&fd);
	put_and_get(fd, k, 5000, &g);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	handle = replica_handle(k, g.put_id);

	rh = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(rh != MAP_FAILED);
	rh->size = sizeof(*rh);
	rh->key_len = strlen(k);
	rh->key_ptr = (uintptr_t)k;
	rh->handle = handle;
	rh->put_id = g.put_id;
	FKV_ASSERT_EQ(mprotect(rh, PAGE, PROT_READ), 0);
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_HOLD, rh), EFAULT);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	munmap(rh, PAGE);
	daemon_session_end(fd, k, base);
}
