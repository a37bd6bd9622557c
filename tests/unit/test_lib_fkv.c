// SPDX-License-Identifier: GPL-2.0
/*
 * libfluxonkv against a fake kernel.
 *
 * This program defines ioctl(): the library's calls resolve to it at link
 * time, so every FLUXONKV_IOC_* lands in fake_ioctl() below, which checks
 * the argument the way the module will and answers from struct fake.  The
 * "device" is a temporary file of fake.seg_size bytes, so fkv_open()'s
 * mmap() maps real, known bytes.  Other ioctls go to the real syscall.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <fluxonkv.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/common/cluster_msg.h"

#define FAKE_SEG_SIZE	(1u << 20)

static struct {
	bool enabled;
	int eintr;			/* fail this many calls with EINTR */
	unsigned int calls[16];		/* by ioctl nr */
	uint32_t abi;
	uint64_t seg_size, seg_used;
	int put_err, get_err, rel_err, del_err, tenant_err;
	uint32_t tenant_key_max;	/* TENANT's answer */
	uint64_t put_id;
	uint64_t get_offset, get_len, get_put_id;
	unsigned int get_source;
	uint64_t next_holder;
	uint64_t released[16];		/* holder ids, in order */
	unsigned int nreleased;
	struct fluxonkv_info info;	/* last argument seen, per op */
	struct fluxonkv_put put;
	struct fluxonkv_get get;
	struct fluxonkv_release rel;
	struct fluxonkv_delete del;
	struct fluxonkv_tenant tenant;
} fake = {
	.enabled = true,
	.abi = FLUXONKV_ABI_VERSION,
	.seg_size = FAKE_SEG_SIZE,
	.put_id = 41,
	.next_holder = 100,
	.tenant_key_max = FLUXONKV_KEY_MAX - FLUXONKV_TENANT_PREFIX_LEN,
};

static int fake_fail(int e)
{
	errno = e;
	return -1;
}

/* What the module checks on every argument: size, flags, reserved. */
static bool fake_reserved_zero(const __u64 *r, int n)
{
	while (n--)
		if (r[n])
			return false;
	return true;
}

static int fake_ioctl(unsigned long req, void *arg)
{
	unsigned int nr = _IOC_NR(req);

	__atomic_add_fetch(&fake.calls[nr], 1, __ATOMIC_RELAXED);
	if (fake.eintr > 0) {
		fake.eintr--;
		return fake_fail(EINTR);
	}
	switch (req) {
	case FLUXONKV_IOC_INFO: {
		struct fluxonkv_info *i = arg;

		fake.info = *i;
		if (i->size != sizeof(*i) || !fake_reserved_zero(i->reserved, 2))
			return fake_fail(EINVAL);
		i->abi_version = fake.abi;
		i->segment_size = fake.seg_size;
		i->value_max = 8192;
		i->key_max = FLUXONKV_KEY_MAX;
		i->flags = FLUXONKV_INFO_DAEMON;
		i->segment_used = fake.seg_used;
		return 0;
	}
	case FLUXONKV_IOC_PUT: {
		struct fluxonkv_put *p = arg;

		fake.put = *p;
		if (p->size != sizeof(*p) ||
		    (p->flags & ~(__u64)FLUXONKV_PUT_F_IOV) || p->put_id ||
		    !(p->flags & FLUXONKV_PUT_F_IOV) != !p->iov_count ||
		    p->reserved1 || !fake_reserved_zero(p->reserved, 2))
			return fake_fail(EINVAL);
		if (fake.put_err)
			return fake_fail(fake.put_err);
		p->put_id = fake.put_id;
		return 0;
	}
	case FLUXONKV_IOC_GET: {
		struct fluxonkv_get *g = arg;

		fake.get = *g;
		if (g->size != sizeof(*g) || g->flags || g->holder_id ||
		    g->offset || g->len || g->reserved0 ||
		    !fake_reserved_zero(g->reserved, 2))
			return fake_fail(EINVAL);
		if (fake.get_err)
			return fake_fail(fake.get_err);
		g->holder_id = __atomic_fetch_add(&fake.next_holder, 1,
						  __ATOMIC_RELAXED);
		g->offset = fake.get_offset;
		g->len = fake.get_len;
		g->put_id = fake.get_put_id;
		g->source = fake.get_source;
		return 0;
	}
	case FLUXONKV_IOC_RELEASE: {
		struct fluxonkv_release *r = arg;
		unsigned int n;

		fake.rel = *r;
		if (r->size != sizeof(*r) || r->reserved0 ||
		    !fake_reserved_zero(r->reserved, 2))
			return fake_fail(EINVAL);
		if (fake.rel_err)
			return fake_fail(fake.rel_err);
		n = __atomic_fetch_add(&fake.nreleased, 1, __ATOMIC_RELAXED);
		if (n < 16)
			fake.released[n] = r->holder_id;
		return 0;
	}
	case FLUXONKV_IOC_DELETE: {
		struct fluxonkv_delete *d = arg;

		fake.del = *d;
		if (d->size != sizeof(*d) || d->flags ||
		    !fake_reserved_zero(d->reserved, 2))
			return fake_fail(EINVAL);
		return fake.del_err ? fake_fail(fake.del_err) : 0;
	}
	case FLUXONKV_IOC_TENANT: {
		struct fluxonkv_tenant *t = arg;

		fake.tenant = *t;
		if (t->size != sizeof(*t) || t->flags || t->key_max ||
		    !fake_reserved_zero(t->reserved, 2) || !t->tenant ||
		    t->tenant > FLUXONKV_TENANT_ID_MAX)
			return fake_fail(EINVAL);
		if (fake.tenant_err)
			return fake_fail(fake.tenant_err);
		t->key_max = fake.tenant_key_max;
		return 0;
	}
	}
	return fake_fail(ENOTTY);
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fake.enabled && _IOC_TYPE(req) == FLUXONKV_IOC_MAGIC)
		return fake_ioctl(req, arg);
	return syscall(SYS_ioctl, fd, req, arg);
}

#define NR(ioc)	_IOC_NR(ioc)

/* A "device" file whose byte i is (i * 7) & 0xff. */
static char *fake_device(void)
{
	static char path[64];
	unsigned char *buf;
	size_t i;
	int fd;

	strcpy(path, "/tmp/fkv-fake-dev-XXXXXX");
	fd = mkstemp(path);
	FKV_ASSERT(fd >= 0);
	buf = malloc(FAKE_SEG_SIZE);
	FKV_ASSERT(buf);
	for (i = 0; i < FAKE_SEG_SIZE; i++)
		buf[i] = (i * 7) & 0xff;
	FKV_ASSERT_EQ(write(fd, buf, FAKE_SEG_SIZE), FAKE_SEG_SIZE);
	free(buf);
	close(fd);
	return path;
}

static struct fkv *open_fake(void)
{
	char *path = fake_device();
	struct fkv *kv;

	FKV_ASSERT_EQ(fkv_open(path, &kv), 0);
	unlink(path);
	return kv;
}

static int count_fds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

/* The permission string of the mapping starting at @addr, from maps. */
static bool mapping_perms(const void *addr, char perms[5])
{
	unsigned long start, end;
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	FKV_ASSERT(f);
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &start, &end, perms) == 3 &&
		    start == (unsigned long)addr)
			found = true;
	fclose(f);
	return found;
}

FKV_TEST(open_maps_the_segment_the_module_describes_read_only_and_shared)
{
	struct fkv *kv = open_fake();
	const unsigned char *base = fkv_segment_base(kv);
	char perms[5];

	FKV_ASSERT_EQ(fkv_segment_size(kv), FAKE_SEG_SIZE);
	FKV_ASSERT(base != NULL);
	FKV_ASSERT_EQ(base[1000], (1000 * 7) & 0xff);
	FKV_ASSERT(mapping_perms(base, perms));
	FKV_EXPECT(perms[0] == 'r' && perms[1] == '-' && perms[3] == 's',
		   "perms %s", perms);
	FKV_ASSERT_EQ(fake.info.size, sizeof(struct fluxonkv_info));
	fkv_close(kv);
}

FKV_TEST(open_rejects_a_module_of_another_abi_without_leaking_the_fd)
{
	char *path = fake_device();
	struct fkv *kv = (struct fkv *)1;
	int fds = count_fds();

	fake.abi = FLUXONKV_ABI_VERSION + 1;
	FKV_ASSERT_EQ(fkv_open(path, &kv), -EPROTO);
	FKV_ASSERT(kv == NULL);
	FKV_ASSERT_EQ(count_fds(), fds);
	unlink(path);
}

FKV_TEST(open_of_a_missing_device_node_says_no_device)
{
	struct fkv *kv;

	FKV_ASSERT_EQ(fkv_open("/nonexistent/fluxonkv", &kv), -ENODEV);
	FKV_ASSERT(strstr(fkv_strerror(-ENODEV), "module") != NULL);
}

FKV_TEST(open_of_a_device_that_is_not_fluxonkv_fails_enotty_without_leaks)
{
	struct fkv *kv;
	int fds = count_fds();

	fake.enabled = false;	/* the real /dev/null answers */
	FKV_ASSERT_EQ(fkv_open("/dev/null", &kv), -ENOTTY);
	FKV_ASSERT_EQ(count_fds(), fds);
}

FKV_TEST(open_rejects_a_zero_sized_segment)
{
	char *path = fake_device();
	struct fkv *kv;

	fake.seg_size = 0;
	FKV_ASSERT_EQ(fkv_open(path, &kv), -EIO);
	unlink(path);
}

FKV_TEST(info_asks_the_module_every_time)
{
	struct fkv *kv = open_fake();
	struct fluxonkv_info info;

	fake.seg_used = 4096;
	FKV_ASSERT_EQ(fkv_info(kv, &info), 0);
	FKV_ASSERT_EQ(info.segment_used, 4096);
	fake.seg_used = 8192;
	FKV_ASSERT_EQ(fkv_info(kv, &info), 0);
	FKV_ASSERT_EQ(info.segment_used, 8192);
	FKV_ASSERT_EQ(info.flags, FLUXONKV_INFO_DAEMON);
	fkv_close(kv);
}

FKV_TEST(put_hands_key_and_value_to_the_module_and_returns_its_put_id)
{
	struct fkv *kv = open_fake();
	static const char key[] = "block:7", value[] = "0123456789";
	uint64_t put_id = 0;

	FKV_ASSERT_EQ(fkv_put(kv, key, 7, value, 10, &put_id), 0);
	FKV_ASSERT_EQ(put_id, 41);
	FKV_ASSERT_EQ(fake.put.size, sizeof(struct fluxonkv_put));
	FKV_ASSERT_EQ(fake.put.key_len, 7);
	FKV_ASSERT_EQ(fake.put.key_ptr, (uintptr_t)key);
	FKV_ASSERT_EQ(fake.put.value_ptr, (uintptr_t)value);
	FKV_ASSERT_EQ(fake.put.value_len, 10);
	/* put_id may be NULL */
	FKV_ASSERT_EQ(fkv_put(kv, key, 7, value, 10, NULL), 0);
	fkv_close(kv);
}

FKV_TEST(put_iov_names_the_pieces_and_their_total_to_the_module)
{
	struct fkv *kv = open_fake();
	static const char key[] = "block:8";
	static char a[100], b[3], c[4000];
	struct iovec iov[4] = {
		{ a, sizeof(a) }, { b, 0 }, { b, sizeof(b) }, { c, sizeof(c) },
	};
	unsigned int puts = fake.calls[_IOC_NR(FLUXONKV_IOC_PUT)];
	struct iovec *many;
	uint64_t put_id = 0;

	FKV_ASSERT_EQ(fkv_put_iov(kv, key, 7, iov, 4, &put_id), 0);
	FKV_ASSERT_EQ(put_id, 41);
	FKV_ASSERT_EQ(fake.put.size, sizeof(struct fluxonkv_put));
	FKV_ASSERT_EQ(fake.put.flags, FLUXONKV_PUT_F_IOV);
	FKV_ASSERT_EQ(fake.put.iov_count, 4);
	FKV_ASSERT_EQ(fake.put.value_len, 100 + 3 + 4000);
	/* struct iovec is struct fluxonkv_iovec here: the array as it is */
	FKV_ASSERT_EQ(fake.put.value_ptr, (uintptr_t)iov);
	FKV_ASSERT_EQ(fake.calls[_IOC_NR(FLUXONKV_IOC_PUT)], puts + 1);

	/* refused before the kernel: no pieces, too many, 0 bytes, too big */
	FKV_ASSERT_EQ(fkv_put_iov(kv, key, 7, NULL, 4, NULL), -EINVAL);
	FKV_ASSERT_EQ(fkv_put_iov(kv, key, 7, iov, 0, NULL), -EINVAL);
	many = calloc(FLUXONKV_IOV_MAX + 1, sizeof(*many));
	FKV_ASSERT(many);
	FKV_ASSERT_EQ(fkv_put_iov(kv, key, 7, many, FLUXONKV_IOV_MAX + 1,
				  NULL), -EINVAL);
	FKV_ASSERT_EQ(fkv_put_iov(kv, key, 7, many, FLUXONKV_IOV_MAX, NULL),
		      -EINVAL);		/* all empty: 0 bytes */
	free(many);
	iov[3].iov_len = 8192;		/* value_max is 8192 here */
	FKV_ASSERT_EQ(fkv_put_iov(kv, key, 7, iov, 4, NULL), -E2BIG);
	iov[0].iov_len = SIZE_MAX;	/* the total overflows */
	FKV_ASSERT_EQ(fkv_put_iov(kv, key, 7, iov, 4, NULL), -EINVAL);
	FKV_ASSERT_EQ(fkv_put_iov(kv, key, 0, iov, 4, NULL), -EINVAL);
	FKV_ASSERT_EQ(fake.calls[_IOC_NR(FLUXONKV_IOC_PUT)], puts + 1);
	fkv_close(kv);
}

FKV_TEST(put_rejects_empty_and_oversized_arguments_before_the_kernel)
{
	struct fkv *kv = open_fake();
	char key[FLUXONKV_KEY_MAX + 1] = { 0 };
	static char value[8193];

	FKV_ASSERT_EQ(fkv_put(kv, key, 0, value, 1, NULL), -EINVAL);
	FKV_ASSERT_EQ(fkv_put(kv, NULL, 1, value, 1, NULL), -EINVAL);
	FKV_ASSERT_EQ(fkv_put(kv, key, 1, value, 0, NULL), -EINVAL);
	FKV_ASSERT_EQ(fkv_put(kv, key, 1, NULL, 1, NULL), -EINVAL);
	FKV_ASSERT_EQ(fkv_put(kv, key, sizeof(key), value, 1, NULL), -E2BIG);
	/* value_max comes from the module's INFO (8192 in the fake) */
	FKV_ASSERT_EQ(fkv_put(kv, key, 1, value, 8193, NULL), -E2BIG);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_PUT)], 0);
	FKV_ASSERT_EQ(fkv_put(kv, key, FLUXONKV_KEY_MAX, value, 8192, NULL), 0);
	fkv_close(kv);
}

FKV_TEST(put_passes_the_module_errors_through)
{
	struct fkv *kv = open_fake();

	fake.put_err = ENOTCONN;
	FKV_ASSERT_EQ(fkv_put(kv, "k", 1, "v", 1, NULL), -ENOTCONN);
	fake.put_err = ENOSPC;
	FKV_ASSERT_EQ(fkv_put(kv, "k", 1, "v", 1, NULL), -ENOSPC);
	fkv_close(kv);
}

FKV_TEST(calls_interrupted_by_a_signal_are_restarted)
{
	struct fkv *kv = open_fake();
	uint64_t put_id;

	fake.eintr = 2;
	FKV_ASSERT_EQ(fkv_put(kv, "k", 1, "v", 1, &put_id), 0);
	FKV_ASSERT_EQ(put_id, 41);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_PUT)], 3);
	fake.eintr = 1;
	FKV_ASSERT_EQ(fkv_delete(kv, "k", 1), 0);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_DELETE)], 2);
	fkv_close(kv);
}

FKV_TEST(get_points_into_the_mapping_at_the_offset_the_kernel_names)
{
	struct fkv *kv = open_fake();
	const unsigned char *base = fkv_segment_base(kv);
	const unsigned char *data;
	struct fkv_holder h;
	size_t i;

	fake.get_offset = 8192;
	fake.get_len = 5000;
	fake.get_put_id = 9;
	fake.get_source = FLUXONKV_SOURCE_MEMORY;
	FKV_ASSERT_EQ(fkv_get(kv, "key", 3, &h), 0);
	FKV_ASSERT_EQ(fake.get.size, sizeof(struct fluxonkv_get));
	FKV_ASSERT_EQ(fake.get.key_len, 3);
	FKV_ASSERT(h.data == base + 8192);
	FKV_ASSERT_EQ(h.len, 5000);
	FKV_ASSERT_EQ(h.put_id, 9);
	FKV_ASSERT_EQ(h.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(h.id, 100);
	data = h.data;
	for (i = 0; i < h.len; i++)
		FKV_ASSERT_EQ(data[i], ((8192 + i) * 7) & 0xff);
	fkv_close(kv);
}

FKV_TEST(get_of_a_value_that_ends_exactly_at_the_segment_end_succeeds)
{
	struct fkv *kv = open_fake();
	struct fkv_holder h;

	fake.get_offset = FAKE_SEG_SIZE - 4096;
	fake.get_len = 4096;
	FKV_ASSERT_EQ(fkv_get(kv, "k", 1, &h), 0);
	FKV_ASSERT_EQ(h.len, 4096);
	fkv_close(kv);
}

FKV_TEST(get_of_bytes_outside_the_mapping_fails_eio_and_releases_the_holder)
{
	struct fkv *kv = open_fake();
	struct fkv_holder h;

	fake.get_offset = FAKE_SEG_SIZE - 10;
	fake.get_len = 20;
	FKV_ASSERT_EQ(fkv_get(kv, "k", 1, &h), -EIO);
	FKV_ASSERT(h.data == NULL);
	/* offset + len wraps around 2^64: still outside */
	fake.get_offset = UINT64_MAX - 5;
	fake.get_len = 10;
	FKV_ASSERT_EQ(fkv_get(kv, "k", 1, &h), -EIO);
	/* a zero-length value is not a value */
	fake.get_offset = 0;
	fake.get_len = 0;
	FKV_ASSERT_EQ(fkv_get(kv, "k", 1, &h), -EIO);
	FKV_ASSERT_EQ(fake.nreleased, 3);
	FKV_ASSERT_EQ(fake.released[0], 100);
	FKV_ASSERT_EQ(fake.released[1], 101);
	FKV_ASSERT_EQ(fake.released[2], 102);
	fkv_close(kv);
}

FKV_TEST(get_miss_returns_enoent_and_leaves_a_zeroed_holder)
{
	struct fkv *kv = open_fake();
	struct fkv_holder h;

	memset(&h, 0xa5, sizeof(h));
	fake.get_err = ENOENT;
	FKV_ASSERT_EQ(fkv_get(kv, "missing", 7, &h), -ENOENT);
	FKV_ASSERT(h.data == NULL);
	FKV_ASSERT_EQ(h.id, 0);
	FKV_ASSERT_EQ(h.len, 0);
	/* releasing what a failed get left is refused, not sent */
	FKV_ASSERT_EQ(fkv_holder_release(kv, &h), -EINVAL);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_RELEASE)], 0);
	fkv_close(kv);
}

FKV_TEST(get_rejects_bad_keys_before_the_kernel)
{
	struct fkv *kv = open_fake();
	char key[FLUXONKV_KEY_MAX + 1] = { 0 };
	struct fkv_holder h;

	FKV_ASSERT_EQ(fkv_get(kv, key, 0, &h), -EINVAL);
	FKV_ASSERT_EQ(fkv_get(kv, key, sizeof(key), &h), -E2BIG);
	FKV_ASSERT_EQ(fkv_delete(kv, key, sizeof(key)), -E2BIG);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_GET)], 0);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_DELETE)], 0);
	fkv_close(kv);
}

FKV_TEST(release_names_the_holder_and_zeroes_it_so_a_second_release_fails)
{
	struct fkv *kv = open_fake();
	struct fkv_holder h;

	fake.get_len = 10;
	FKV_ASSERT_EQ(fkv_get(kv, "k", 1, &h), 0);
	FKV_ASSERT_EQ(fkv_holder_release(kv, &h), 0);
	FKV_ASSERT_EQ(fake.rel.size, sizeof(struct fluxonkv_release));
	FKV_ASSERT_EQ(fake.rel.holder_id, 100);
	FKV_ASSERT(h.data == NULL);
	FKV_ASSERT_EQ(h.id, 0);
	FKV_ASSERT_EQ(fkv_holder_release(kv, &h), -EINVAL);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_RELEASE)], 1);
	fkv_close(kv);
}

FKV_TEST(a_release_the_kernel_refuses_leaves_the_holder_intact)
{
	struct fkv *kv = open_fake();
	struct fkv_holder h;

	fake.get_len = 10;
	FKV_ASSERT_EQ(fkv_get(kv, "k", 1, &h), 0);
	fake.rel_err = ENOENT;
	FKV_ASSERT_EQ(fkv_holder_release(kv, &h), -ENOENT);
	FKV_ASSERT_EQ(h.id, 100);
	FKV_ASSERT(h.data != NULL);
	fkv_close(kv);
}

FKV_TEST(delete_sends_the_key_and_reports_a_miss_as_enoent)
{
	struct fkv *kv = open_fake();
	static const char key[] = "gone";

	FKV_ASSERT_EQ(fkv_delete(kv, key, 4), 0);
	FKV_ASSERT_EQ(fake.del.size, sizeof(struct fluxonkv_delete));
	FKV_ASSERT_EQ(fake.del.key_len, 4);
	FKV_ASSERT_EQ(fake.del.key_ptr, (uintptr_t)key);
	fake.del_err = ENOENT;
	FKV_ASSERT_EQ(fkv_delete(kv, key, 4), -ENOENT);
	fkv_close(kv);
}

struct getter {
	struct fkv *kv;
	int failures;
};

static void *getter_thread(void *arg)
{
	struct getter *g = arg;
	struct fkv_holder h;
	int i;

	for (i = 0; i < 2000; i++) {
		if (fkv_get(g->kv, "k", 1, &h) || h.len != 64 ||
		    fkv_holder_release(g->kv, &h))
			g->failures++;
	}
	return NULL;
}

FKV_TEST(one_handle_serves_concurrent_gets_from_many_threads)
{
	struct getter g[4];
	pthread_t t[4];
	int i;

	fake.get_len = 64;
	g[0].kv = open_fake();
	for (i = 0; i < 4; i++) {
		g[i].kv = g[0].kv;
		g[i].failures = 0;
		FKV_ASSERT_EQ(pthread_create(&t[i], NULL, getter_thread, &g[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		FKV_EXPECT_EQ(g[i].failures, 0);
	}
	FKV_ASSERT_EQ(fake.nreleased, 8000);
	fkv_close(g[0].kv);
}

FKV_TEST(strerror_explains_errors_in_fluxonkv_terms)
{
	FKV_ASSERT(strstr(fkv_strerror(-ENOTCONN), "no fluxond daemon") != NULL);
	FKV_ASSERT(strstr(fkv_strerror(-ENOSPC), "segment full") != NULL);
	FKV_ASSERT(strstr(fkv_strerror(-ETIMEDOUT), "did not answer") != NULL);
	FKV_ASSERT(strstr(fkv_strerror(-E2BIG), "too large") != NULL);
	FKV_ASSERT(strstr(fkv_strerror(-ENOENT), "not found") != NULL);
	FKV_ASSERT(strstr(fkv_strerror(-EPROTO), "ABI") != NULL);
	/* a positive errno means the same */
	FKV_ASSERT(!strcmp(fkv_strerror(ENOTCONN), fkv_strerror(-ENOTCONN)));
	/* others fall back to the C library's description */
	FKV_ASSERT(!strcmp(fkv_strerror(-EHOSTDOWN), "Host is down"));
	FKV_ASSERT(!strcmp(fkv_strerror(-100000), "unknown error"));
	FKV_ASSERT(!strcmp(fkv_strerror(0), "success"));
}

/* ---- tenants ----------------------------------------------------------- */

FKV_TEST(bind_tenant_sends_the_id_and_keys_follow_the_lower_key_max)
{
	struct fkv *kv = open_fake();
	char key[FLUXONKV_KEY_MAX] = { 'k' };
	unsigned int puts;

	FKV_ASSERT_EQ(fkv_key_max(kv), FLUXONKV_KEY_MAX);
	FKV_ASSERT_EQ(fkv_tenant(kv), 0);
	FKV_ASSERT_EQ(fkv_bind_tenant(kv, 7), 0);
	FKV_ASSERT_EQ(fake.tenant.size, sizeof(struct fluxonkv_tenant));
	FKV_ASSERT_EQ(fake.tenant.tenant, 7);
	FKV_ASSERT_EQ(fkv_tenant(kv), 7);
	FKV_ASSERT_EQ(fkv_key_max(kv), 250);
	/* 251..256 bytes: refused before the kernel now */
	puts = fake.calls[NR(FLUXONKV_IOC_PUT)];
	FKV_ASSERT_EQ(fkv_put(kv, key, 251, "v", 1, NULL), -E2BIG);
	FKV_ASSERT_EQ(fkv_delete(kv, key, 256), -E2BIG);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_PUT)], puts);
	FKV_ASSERT_EQ(fkv_put(kv, key, 250, "v", 1, NULL), 0);
	FKV_ASSERT_EQ(fake.put.key_len, 250);
	fkv_close(kv);
}

FKV_TEST(bind_tenant_refuses_id_0_and_past_the_max_before_the_kernel)
{
	struct fkv *kv = open_fake();

	FKV_ASSERT_EQ(fkv_bind_tenant(kv, 0), -EINVAL);
	FKV_ASSERT_EQ(fkv_bind_tenant(kv, FLUXONKV_TENANT_ID_MAX + 1), -EINVAL);
	FKV_ASSERT_EQ(fkv_bind_tenant(NULL, 1), -EINVAL);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_TENANT)], 0);
	FKV_ASSERT_EQ(fkv_bind_tenant(kv, FLUXONKV_TENANT_ID_MAX), 0);
	FKV_ASSERT_EQ(fkv_tenant(kv), FLUXONKV_TENANT_ID_MAX);
	fkv_close(kv);
}

FKV_TEST(a_refused_bind_leaves_the_handle_in_tenant_0_with_the_full_key_max)
{
	static const int errs[] = { EPERM, EBUSY, ENOENT, EACCES };
	struct fkv *kv = open_fake();
	size_t i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		fake.tenant_err = errs[i];
		FKV_ASSERT_EQ(fkv_bind_tenant(kv, 1), -errs[i]);
		FKV_ASSERT_EQ(fkv_tenant(kv), 0);
		FKV_ASSERT_EQ(fkv_key_max(kv), FLUXONKV_KEY_MAX);
	}
	/* a module without the ioctl: not supported, not "not a device" */
	fake.tenant_err = ENOTTY;
	FKV_ASSERT_EQ(fkv_bind_tenant(kv, 1), -EOPNOTSUPP);
	FKV_ASSERT(strstr(fkv_strerror(-EOPNOTSUPP), "not supported") != NULL);
	FKV_ASSERT(strstr(fkv_strerror(-EPERM), "tenant") != NULL);
	FKV_ASSERT(strstr(fkv_strerror(-EBUSY), "bound") != NULL);
	fkv_close(kv);
}

FKV_TEST(bind_tenant_without_a_key_max_in_the_answer_asks_info)
{
	struct fkv *kv = open_fake();

	fake.tenant_key_max = 0;	/* the fake INFO says 256 */
	FKV_ASSERT_EQ(fkv_bind_tenant(kv, 3), 0);
	FKV_ASSERT_EQ(fkv_key_max(kv), FLUXONKV_KEY_MAX);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_INFO)], 2);
	fkv_close(kv);
}

/*
 * A fake fluxond control socket: answers one connection per request as
 * @mode says, and records what it was asked.
 */
enum ctl_mode {
	CTL_ANSWER,		/* STATUS = status, TENANT_ID = id on 0 */
	CTL_CLOSE,		/* no answer (a daemon that predates TENANT) */
	CTL_WRONG_CMD,		/* an answer to another command */
	CTL_NO_ID,		/* STATUS 0 without TENANT_ID */
};

static struct {
	char path[108];
	int lfd;
	enum ctl_mode mode;
	int32_t status;
	uint32_t id;
	int requests, done;	/* connections accepted, closed */
	uint8_t cmd;
	uint16_t type;
	char name[300];
} ctl;

static size_t put_attr(unsigned char *buf, size_t off, uint16_t type,
		       const void *p, size_t n)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN + n, .nla_type = type };

	memcpy(buf + off, &a, sizeof(a));
	memcpy(buf + off + NLA_HDRLEN, p, n);
	return off + NLA_ALIGN(a.nla_len);
}

static void *ctl_thread(void *arg)
{
	unsigned char buf[4096];
	int fd;

	while ((fd = accept(ctl.lfd, NULL, NULL)) >= 0) {
		struct nlmsghdr nlh;
		struct genlmsghdr g;
		struct nlattr a;
		size_t off;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		__atomic_add_fetch(&ctl.requests, 1, __ATOMIC_RELEASE);
		if (n >= (ssize_t)(NLMSG_HDRLEN + GENL_HDRLEN + NLA_HDRLEN)) {
			memcpy(&nlh, buf, sizeof(nlh));
			memcpy(&g, buf + NLMSG_HDRLEN, sizeof(g));
			memcpy(&a, buf + NLMSG_HDRLEN + GENL_HDRLEN, sizeof(a));
			ctl.type = nlh.nlmsg_type;
			ctl.cmd = g.cmd;
			if (a.nla_type == FKV_CA_TENANT_NAME &&
			    (size_t)(a.nla_len - NLA_HDRLEN) < sizeof(ctl.name))
				memcpy(ctl.name, buf + NLMSG_HDRLEN + GENL_HDRLEN +
				       NLA_HDRLEN, a.nla_len - NLA_HDRLEN);
		}
		if (ctl.mode == CTL_CLOSE) {
			close(fd);
			__atomic_add_fetch(&ctl.done, 1, __ATOMIC_RELEASE);
			continue;
		}
		memset(buf, 0, sizeof(buf));
		off = NLMSG_HDRLEN + GENL_HDRLEN;
		off = put_attr(buf, off, FLUXONKV_A_STATUS, &ctl.status, 4);
		if (!ctl.status && ctl.mode != CTL_NO_ID)
			off = put_attr(buf, off, FKV_CA_TENANT_ID, &ctl.id, 4);
		memset(&nlh, 0, sizeof(nlh));
		nlh.nlmsg_len = off;
		nlh.nlmsg_type = FKV_WIRE_TYPE;
		memcpy(buf, &nlh, sizeof(nlh));
		memset(&g, 0, sizeof(g));
		g.cmd = ctl.mode == CTL_WRONG_CMD ? FKV_CCMD_CLEAR : FKV_CCMD_TENANT;
		g.version = FLUXONKV_GENL_VERSION;
		memcpy(buf + NLMSG_HDRLEN, &g, sizeof(g));
		/* in two pieces: the client must reassemble */
		FKV_ASSERT_EQ(send(fd, buf, 10, 0), 10);
		usleep(1000);
		FKV_ASSERT_EQ(send(fd, buf + 10, off - 10, 0), (ssize_t)off - 10);
		close(fd);
		__atomic_add_fetch(&ctl.done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void ctl_start(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	pthread_t t;

	snprintf(ctl.path, sizeof(ctl.path), "/tmp/fkv-fake-ctl-%d", getpid());
	unlink(ctl.path);
	strcpy(sun.sun_path, ctl.path);
	ctl.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	FKV_ASSERT(ctl.lfd >= 0);
	FKV_ASSERT_EQ(bind(ctl.lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	FKV_ASSERT_EQ(listen(ctl.lfd, 4), 0);
	FKV_ASSERT_EQ(pthread_create(&t, NULL, ctl_thread, NULL), 0);
	pthread_detach(t);
}

/* Wait until the server closed every connection it accepted. */
static void ctl_quiesce(void)
{
	while (__atomic_load_n(&ctl.done, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&ctl.requests, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static void ctl_stop(void)
{
	unlink(ctl.path);
}

FKV_TEST(tenant_id_asks_the_daemon_by_name_and_returns_its_id)
{
	uint32_t id = 0;

	ctl_start();
	ctl.id = 2;
	FKV_ASSERT_EQ(fkv_tenant_id(ctl.path, "beta", &id), 0);
	FKV_ASSERT_EQ(id, 2);
	FKV_ASSERT_EQ(ctl.type, FKV_WIRE_TYPE);
	FKV_ASSERT_EQ(ctl.cmd, FKV_CCMD_TENANT);
	FKV_ASSERT(!strcmp(ctl.name, "beta"));
	/* NULL: $FLUXOND_CONTROL */
	setenv("FLUXOND_CONTROL", ctl.path, 1);
	ctl.id = 1;
	FKV_ASSERT_EQ(fkv_tenant_id(NULL, "alpha", &id), 0);
	FKV_ASSERT_EQ(id, 1);
	FKV_ASSERT_EQ(ctl.requests, 2);
	/* "default" is tenant 0, without asking */
	FKV_ASSERT_EQ(fkv_tenant_id(NULL, "default", &id), 0);
	FKV_ASSERT_EQ(id, 0);
	FKV_ASSERT_EQ(ctl.requests, 2);
	ctl_stop();
}

FKV_TEST(tenant_id_reports_each_failure_with_its_own_errno)
{
	char longname[FKV_TENANT_NAME_MAX + 2];
	uint32_t id = 99;

	ctl_start();
	ctl.status = -ENOENT;
	FKV_ASSERT_EQ(fkv_tenant_id(ctl.path, "nobody", &id), -ENOENT);
	ctl.status = -EPERM;
	FKV_ASSERT_EQ(fkv_tenant_id(ctl.path, "alpha", &id), -EPERM);
	ctl.status = 0;
	ctl.mode = CTL_CLOSE;
	FKV_ASSERT_EQ(fkv_tenant_id(ctl.path, "alpha", &id), -EOPNOTSUPP);
	ctl.mode = CTL_WRONG_CMD;
	FKV_ASSERT_EQ(fkv_tenant_id(ctl.path, "alpha", &id), -EBADMSG);
	ctl.mode = CTL_NO_ID;
	FKV_ASSERT_EQ(fkv_tenant_id(ctl.path, "alpha", &id), -EBADMSG);
	ctl.mode = CTL_ANSWER;
	ctl.id = FLUXONKV_TENANT_ID_MAX + 1;	/* not an id */
	FKV_ASSERT_EQ(fkv_tenant_id(ctl.path, "alpha", &id), -EBADMSG);
	FKV_ASSERT_EQ(id, 99);			/* untouched on failure */
	FKV_ASSERT_EQ(ctl.requests, 6);
	ctl_stop();
	/* nothing listens: no daemon */
	FKV_ASSERT_EQ(fkv_tenant_id(ctl.path, "alpha", &id), -ENOTCONN);
	FKV_ASSERT_EQ(fkv_tenant_id("/nonexistent/fluxond.sock", "alpha", &id),
		      -ENOTCONN);
	/* refused before any connection */
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	FKV_ASSERT_EQ(fkv_tenant_id(NULL, longname, &id), -EINVAL);
	FKV_ASSERT_EQ(fkv_tenant_id(NULL, "", &id), -EINVAL);
	FKV_ASSERT_EQ(fkv_tenant_id(NULL, NULL, &id), -EINVAL);
	FKV_ASSERT_EQ(fkv_tenant_id(NULL, "a", NULL), -EINVAL);
	/* past sun_path */
	{
		char longpath[200];

		memset(longpath, '/', sizeof(longpath) - 1);
		longpath[sizeof(longpath) - 1] = 0;
		FKV_ASSERT_EQ(fkv_tenant_id(longpath, "a", &id), -ENAMETOOLONG);
	}
	FKV_ASSERT(strstr(fkv_strerror(-ENOENT), "no such tenant") != NULL);
	FKV_ASSERT(strstr(fkv_strerror(-EBADMSG), "fluxond") != NULL);
}

FKV_TEST(open_tenant_resolves_opens_and_binds)
{
	char *path = fake_device();
	struct fkv *kv;

	ctl_start();
	setenv("FLUXOND_CONTROL", ctl.path, 1);
	ctl.id = 2;
	FKV_ASSERT_EQ(fkv_open_tenant(path, "beta", &kv), 0);
	FKV_ASSERT_EQ(fake.tenant.tenant, 2);
	FKV_ASSERT_EQ(fkv_tenant(kv), 2);
	FKV_ASSERT_EQ(fkv_key_max(kv), 250);
	fkv_close(kv);
	/* "default" and NULL: a plain open, neither asked nor bound */
	FKV_ASSERT_EQ(fkv_open_tenant(path, "default", &kv), 0);
	FKV_ASSERT_EQ(fkv_tenant(kv), 0);
	fkv_close(kv);
	FKV_ASSERT_EQ(fkv_open_tenant(path, NULL, &kv), 0);
	fkv_close(kv);
	FKV_ASSERT_EQ(ctl.requests, 1);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_TENANT)], 1);
	ctl_stop();
	unlink(path);
}

FKV_TEST(open_tenant_leaves_nothing_open_when_a_step_fails)
{
	char *path = fake_device();
	struct fkv *kv = (struct fkv *)1;
	int fds;

	ctl_start();
	setenv("FLUXOND_CONTROL", ctl.path, 1);
	fds = count_fds();
	ctl.status = -ENOENT;
	FKV_ASSERT_EQ(fkv_open_tenant(path, "nobody", &kv), -ENOENT);
	FKV_ASSERT(kv == NULL);
	FKV_ASSERT_EQ(fake.calls[NR(FLUXONKV_IOC_INFO)], 0);	/* not opened */
	ctl.status = 0;
	ctl.id = 1;
	fake.tenant_err = EPERM;
	kv = (struct fkv *)1;
	FKV_ASSERT_EQ(fkv_open_tenant(path, "alpha", &kv), -EPERM);
	FKV_ASSERT(kv == NULL);
	ctl_quiesce();
	FKV_ASSERT_EQ(count_fds(), fds);
	ctl_stop();
	unlink(path);
}

