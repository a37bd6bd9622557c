// SPDX-License-Identifier: GPL-2.0
/*
 * test_tenant - tenants (uapi.md "Tenants"): FLUXONKV_IOC_TENANT binds a
 * description to a tenant of the table the daemon loads
 * (FLUXONKV_CMD_TENANTS; here the test loads it itself, as root).  A
 * tenant's keys are its own: the same key names different values in
 * different tenants, no tenant reaches another's keys, and unprivileged
 * callers cannot spell another tenant's prefix.  While a table is loaded
 * the segment is isolated: an unprivileged description's mapping shows
 * only values its tenant holds -- another tenant's pages fault SIGBUS,
 * also where the caller mapped a value of its own before that range went
 * to another tenant's value.
 *
 * The processes that must not see are children with an unprivileged
 * session (the device opened read-only), some with their uid and groups
 * dropped; their reads that must fault are the last thing they do.
 */
#include <grp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <fluxonkv.h>

#include "fkv_env.h"
#include "fkv_kv.h"

#define TENANT_PARAMS	"segment_mb=16"
#define VAL		FKV_MIB
#define NOBODY		65534
#define GROUP		12345

struct tenant_row {
	uint32_t id;
	uint32_t uids[2];
	unsigned int nuids;
	uint32_t gids[2];
	unsigned int ngids;
};

/* FLUXONKV_CMD_TENANTS with ROWS (n = 0: no table); the kernel's answer. */
static int load_tenants(const struct tenant_row *rows, unsigned int n)
{
	struct fkv_nl nl;
	struct nl_msg *msg;
	unsigned int i;
	int ret;

	FKV_ASSERT_EQ(fkv_nl_open(&nl), 0);
	msg = fkv_nl_msg(&nl, FLUXONKV_CMD_TENANTS);
	FKV_ASSERT(msg);
	for (i = 0; i < n; i++) {
		struct nlattr *e = nla_nest_start(msg, FLUXONKV_A_TENANT_ENTRY);

		FKV_ASSERT(e);
		FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_TENANT_ID, rows[i].id), 0);
		if (rows[i].nuids)
			FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_UIDS,
					      rows[i].nuids * 4, rows[i].uids), 0);
		if (rows[i].ngids)
			FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_GIDS,
					      rows[i].ngids * 4, rows[i].gids), 0);
		nla_nest_end(msg, e);
	}
	ret = fkv_nl_transact(&nl, msg);
	fkv_nl_close(&nl);
	return ret;
}

/* FLUXONKV_IOC_TENANT on FD: 0 or -errno; *key_max (if set) on 0. */
static int bind_fd(int fd, uint32_t tenant, uint32_t *key_max)
{
	struct fluxonkv_tenant t = { .size = sizeof(t), .tenant = tenant };

	if (ioctl(fd, FLUXONKV_IOC_TENANT, &t))
		return -errno;
	if (key_max)
		*key_max = t.key_max;
	return 0;
}

static int bind_kv(struct fkv *kv, uint32_t tenant)
{
	return bind_fd(fkv_fd(kv), tenant, NULL);
}

static struct fluxonkv_info info_of(struct fkv *kv)
{
	struct fluxonkv_info info;

	FKV_ASSERT_EQ(fkv_info(kv, &info), 0);
	return info;
}

/* KEY's value in KV is the pattern of (key, len, salt); the holder's offset. */
static uint64_t read_own(struct fkv *kv, const char *key, size_t len,
			 uint64_t salt)
{
	uint8_t *want = pattern(key, len, salt);
	struct fkv_holder h;
	uint64_t off;
	int ret;

	ret = fkv_get(kv, key, strlen(key), &h);
	FKV_ASSERT(ret == 0, "get '%s': %s", key, fkv_strerror(ret));
	FKV_ASSERT_EQ(h.len, len);
	FKV_ASSERT(!memcmp(h.data, want, len), "'%s' is not salt %llu's",
		   key, (unsigned long long)salt);
	off = (const uint8_t *)h.data - (const uint8_t *)fkv_segment_base(kv);
	release(kv, &h);
	free(want);
	return off;
}

/* INFO's flags through a fresh handle. */
static uint32_t info_flags(void)
{
	struct fkv *kv = kv_open();
	uint32_t flags = info_of(kv).flags;

	fkv_close(kv);
	return flags;
}

static int lookup_ret(struct fkv *kv, const char *key, size_t key_len)
{
	struct fkv_lookup lk;

	return fkv_lookup(kv, key, key_len, &lk);
}

/*
 * An unprivileged session (the device read-only) in a child; its mapping
 * of the whole segment.  Child side only: failures _exit(2).
 */
struct viewer {
	int fd;
	const uint8_t *map;
	uint64_t size;
};

static struct viewer viewer_of(int fd, uint32_t tenant)
{
	struct fluxonkv_info info = { .size = sizeof(info) };
	struct viewer v = { .fd = fd };

	if (v.fd < 0 || ioctl(v.fd, FLUXONKV_IOC_INFO, &info))
		_exit(2);
	if (tenant && bind_fd(v.fd, tenant, NULL))
		_exit(2);
	v.size = info.segment_size;
	v.map = mmap(NULL, v.size, PROT_READ, MAP_SHARED, v.fd, 0);
	if (v.map == MAP_FAILED)
		_exit(2);
	return v;
}

static struct viewer viewer_open(uint32_t tenant)
{
	return viewer_of(open(FKV_DEV_PATH, O_RDONLY | O_CLOEXEC), tenant);
}

/* A holder on KEY whose bytes are the pattern of (key, VAL, salt): offset. */
static uint64_t viewer_read(struct viewer *v, const char *key, uint64_t salt,
			    bool release_it)
{
	struct fluxonkv_get g = { .size = sizeof(g), .key_len = strlen(key),
				  .key_ptr = (uintptr_t)key };
	struct fluxonkv_release r = { .size = sizeof(r) };
	uint8_t *want = pattern(key, VAL, salt);

	if (ioctl(v->fd, FLUXONKV_IOC_GET, &g) || g.len != VAL ||
	    memcmp(v->map + g.offset, want, VAL))
		_exit(3);
	free(want);
	r.holder_id = g.holder_id;
	if (release_it && ioctl(v->fd, FLUXONKV_IOC_RELEASE, &r))
		_exit(2);
	return g.offset;
}

/* Touch every page of [off, off + len): the caller expects SIGBUS. */
static void viewer_touch(const struct viewer *v, uint64_t off, uint64_t len)
{
	volatile uint8_t sum = 0;
	uint64_t i;

	for (i = 0; i < len; i += 4096)
		sum += v->map[off + i];
	(void)sum;
	_exit(4);	/* it read them */
}

/* The child PID died of SIGBUS (not: exited CODE, 3 its own value wrong). */
static void expect_sigbus(pid_t pid, const char *what)
{
	int st;

	FKV_ASSERT_EQ(waitpid(pid, &st, 0), pid);
	FKV_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS,
		   "%s: the child %s %d (4: it read the bytes)", what,
		   WIFSIGNALED(st) ? "died of signal" : "exited",
		   WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/*
 * The same key in tenant 0, 1 and 2 names three values; a tenant's keys
 * are out of every other tenant's reach (get, lookup, delete); the prefix
 * cannot be spelled; bound keys are 6 bytes shorter; binds are checked.
 */
FKV_TEST(tenants_are_key_spaces_of_their_own)
{
	static const struct tenant_row rows[] = {
		{ .id = 1, .uids = { 0 }, .nuids = 1 },
		{ .id = 2, .uids = { NOBODY }, .nuids = 1 },
	};
	const char raw2[] = "\0T\0\0\0\2only2";
	struct fkv *kv0, *kv1, *kv2;
	struct fluxonkv_info info;
	uint32_t key_max = 0;
	char longkey[FLUXONKV_KEY_MAX];
	uint64_t base;

	base = setup(TENANT_PARAMS);
	kv0 = kv_open();
	kv1 = kv_open();
	kv2 = kv_open();
	info = info_of(kv0);
	FKV_ASSERT(info.flags & FLUXONKV_INFO_TENANTS, "flags %#x", info.flags);
	FKV_ASSERT(!(info.flags & FLUXONKV_INFO_ISOLATED), "flags %#x",
		   info.flags);
	/* no table yet */
	FKV_ASSERT_EQ(bind_kv(kv1, 1), -ENOENT);

	/* bad tables change nothing */
	{
		static struct tenant_row bad[FLUXONKV_TENANTS_MAX + 1];
		unsigned int i;

		for (i = 0; i < FLUXONKV_TENANTS_MAX + 1; i++)
			bad[i].id = i + 1;
		FKV_ASSERT_EQ(load_tenants(bad, FLUXONKV_TENANTS_MAX + 1), -E2BIG);
		bad[1].id = 1;
		FKV_ASSERT_EQ(load_tenants(bad, 2), -EINVAL);	/* twice */
		/* out of the policy's range: netlink's ERANGE */
		bad[1].id = 0;
		FKV_ASSERT_EQ(load_tenants(bad, 2), -ERANGE);
		bad[1].id = FLUXONKV_TENANT_ID_MAX + 1;
		FKV_ASSERT_EQ(load_tenants(bad, 2), -ERANGE);
		bad[1].id = FLUXONKV_TENANT_ID_MAX;
		bad[1].uids[0] = (uint32_t)-1;	/* no such uid */
		bad[1].nuids = 1;
		FKV_ASSERT_EQ(load_tenants(bad, 2), -EINVAL);
		FKV_ASSERT_EQ(bind_kv(kv1, 1), -ENOENT);
		FKV_ASSERT(!(info_of(kv0).flags & FLUXONKV_INFO_ISOLATED),
			   "a refused table isolated the segment");
	}
	FKV_ASSERT_EQ(load_tenants(rows, 2), 0);
	FKV_ASSERT_EQ(bind_kv(kv1, 0), -EINVAL);
	FKV_ASSERT_EQ(bind_kv(kv1, FLUXONKV_TENANT_ID_MAX + 1), -EINVAL);
	FKV_ASSERT_EQ(bind_kv(kv1, 7), -ENOENT);
	FKV_ASSERT_EQ(bind_fd(fkv_fd(kv1), 1, &key_max), 0);
	FKV_ASSERT_EQ(key_max, FLUXONKV_KEY_MAX - FLUXONKV_TENANT_PREFIX_LEN);
	FKV_ASSERT_EQ(bind_kv(kv1, 1), -EBUSY);
	FKV_ASSERT_EQ(bind_kv(kv1, 2), -EBUSY);
	/* root may bind to a tenant that lists only nobody */
	FKV_ASSERT_EQ(bind_kv(kv2, 2), 0);
	info = info_of(kv1);
	FKV_ASSERT_EQ(info.key_max, 250);
	FKV_ASSERT(info.flags & FLUXONKV_INFO_ISOLATED, "flags %#x", info.flags);
	FKV_ASSERT_EQ(info_of(kv0).key_max, FLUXONKV_KEY_MAX);

	put_pattern(kv0, "same", VAL, 10);
	put_pattern(kv1, "same", VAL, 11);
	put_pattern(kv2, "same", VAL, 12);
	put_pattern(kv2, "only2", VAL, 2);
	read_own(kv0, "same", VAL, 10);
	read_own(kv1, "same", VAL, 11);
	read_own(kv2, "same", VAL, 12);

	/* out of reach of the others */
	FKV_ASSERT_EQ(lookup_ret(kv1, "only2", 5), -ENOENT);
	FKV_ASSERT_EQ(lookup_ret(kv0, "only2", 5), -ENOENT);
	FKV_ASSERT_EQ(fkv_delete(kv1, "only2", 5), -ENOENT);
	FKV_ASSERT_EQ(fkv_delete(kv0, "only2", 5), -ENOENT);
	read_own(kv2, "only2", VAL, 2);
	/* the prefix spelled out: refused (the privileged kv0 passes it) */
	{
		int fd = open(FKV_DEV_PATH, O_RDONLY | O_CLOEXEC);
		struct fluxonkv_lookup lk = { .size = sizeof(lk),
					      .key_len = sizeof(raw2) - 1,
					      .key_ptr = (uintptr_t)raw2 };

		FKV_ASSERT(fd >= 0, "open: %s", strerror(errno));
		FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_LOOKUP, &lk), -1);
		FKV_ASSERT_EQ(errno, EINVAL);
		close(fd);
	}

	/* 250 bytes fit a bound description, 251 do not */
	memset(longkey, 'k', sizeof(longkey));
	FKV_ASSERT_EQ(fkv_put(kv1, longkey, 251, "x", 1, NULL), -EINVAL);
	FKV_ASSERT_EQ(fkv_put(kv1, longkey, 250, "x", 1, NULL), 0);
	FKV_ASSERT_EQ(lookup_ret(kv1, longkey, 250), 0);
	FKV_ASSERT_EQ(fkv_put(kv0, longkey, 256, "x", 1, NULL), 0);
	delete_key(kv1, "same");
	/* tenant 2's and 0's "same" are still theirs */
	read_own(kv0, "same", VAL, 10);
	read_own(kv2, "same", VAL, 12);
	delete_key(kv0, "same");
	delete_key(kv2, "same");
	delete_key(kv2, "only2");
	FKV_ASSERT_EQ(fkv_delete(kv1, longkey, 250), 0);
	FKV_ASSERT_EQ(fkv_delete(kv0, longkey, 256), 0);

	/* the table gone, nobody bound: no isolation, no tenant to bind */
	fkv_close(kv1);
	fkv_close(kv2);
	FKV_ASSERT_EQ(load_tenants(NULL, 0), 0);
	FKV_ASSERT(!(info_of(kv0).flags & FLUXONKV_INFO_ISOLATED), "isolated");
	fkv_close(kv0);
	kv0 = kv_open();
	FKV_ASSERT_EQ(bind_kv(kv0, 1), -ENOENT);
	fkv_close(kv0);
	teardown(base);
}

/*
 * Isolated mappings: a tenant's child reads its own value through a
 * holder, and faults on another tenant's (and tenant 0's child on both);
 * a child that mapped its own value keeps no view of that range once it
 * holds another tenant's value.
 */
FKV_TEST(an_isolated_mapping_shows_a_tenant_only_its_own_values)
{
	static const struct tenant_row rows[] = {
		{ .id = 1, .uids = { 0 }, .nuids = 1 },
		{ .id = 2, .uids = { 0 }, .nuids = 1 },
	};
	uint64_t base, off_a, off_b, off_c, refused;
	struct fkv *kv1, *kv2;
	int to_child[2], to_parent[2], st;
	struct viewer v;
	pid_t pid;
	char go;

	base = setup(TENANT_PARAMS);
	FKV_ASSERT_EQ(load_tenants(rows, 2), 0);
	kv1 = kv_open();
	kv2 = kv_open();
	FKV_ASSERT_EQ(bind_kv(kv1, 1), 0);
	FKV_ASSERT_EQ(bind_kv(kv2, 2), 0);
	put_pattern(kv1, "a", VAL, 1);
	put_pattern(kv2, "b", VAL, 2);
	off_a = read_own(kv1, "a", VAL, 1);
	off_b = read_own(kv2, "b", VAL, 2);
	refused = fkv_sysfs("faults_refused");

	/* tenant 2 reads "b", faults on "a" */
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		v = viewer_open(2);
		viewer_read(&v, "b", 2, false);
		viewer_touch(&v, off_a, VAL);
	}
	expect_sigbus(pid, "tenant 2 reading tenant 1's value");
	/* tenant 1 reads "a", faults on "b" */
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		v = viewer_open(1);
		viewer_read(&v, "a", 1, false);
		viewer_touch(&v, off_b, VAL);
	}
	expect_sigbus(pid, "tenant 1 reading tenant 2's value");
	/* tenant 0 sees neither */
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		v = viewer_open(0);
		viewer_touch(&v, off_a, VAL);
	}
	expect_sigbus(pid, "tenant 0 reading tenant 1's value");
	/*
	 * Its own value's pages cannot be pinned (vmsplice): a pin would
	 * outlive the unmap that ends the view when the range is reused.
	 */
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		struct iovec iov;
		int p[2];

		v = viewer_open(1);
		viewer_read(&v, "a", 1, false);
		iov.iov_base = (void *)(v.map + off_a);
		iov.iov_len = 4096;
		if (pipe(p) || vmsplice(p[1], &iov, 1, 0) >= 0)
			_exit(5);
		/* 6.1's get_user_pages: a PTE with no page to get */
		_exit(errno == EEXIST || errno == EFAULT ? 0 : 100 + errno);
	}
	FKV_ASSERT_EQ(waitpid(pid, &st, 0), pid);
	FKV_ASSERT(WIFEXITED(st) && !WEXITSTATUS(st),
		   "vmsplice of an isolated view: status %#x (5: it pinned the pages, 100 + errno: neither EEXIST nor EFAULT)",
		   st);
	FKV_ASSERT(fkv_sysfs("faults_refused") >= refused + 3,
		   "faults_refused %llu, was %llu",
		   (unsigned long long)fkv_sysfs("faults_refused"),
		   (unsigned long long)refused);

	/*
	 * A view left behind: tenant 1's child maps "a" (every page),
	 * releases it; "a" is deleted and tenant 2's "c" takes its range.
	 */
	FKV_ASSERT_EQ(pipe(to_child), 0);
	FKV_ASSERT_EQ(pipe(to_parent), 0);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		volatile uint8_t sum = 0;
		uint64_t i, off;

		v = viewer_open(1);
		off = viewer_read(&v, "a", 1, true);
		for (i = 0; i < VAL; i += 4096)
			sum += v.map[off + i];
		(void)sum;
		if (write(to_parent[1], "r", 1) != 1 ||
		    read(to_child[0], &go, 1) != 1)
			_exit(2);
		viewer_touch(&v, off, VAL);
	}
	FKV_ASSERT_EQ(read(to_parent[0], &go, 1), 1);
	delete_key(kv1, "a");
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	put_pattern(kv2, "c", VAL, 3);
	off_c = read_own(kv2, "c", VAL, 3);
	FKV_ASSERT(off_c == off_a, "'c' at %llu, not at 'a''s %llu: no reuse to check",
		   (unsigned long long)off_c, (unsigned long long)off_a);
	FKV_ASSERT_EQ(write(to_child[1], "g", 1), 1);
	expect_sigbus(pid, "tenant 1's old view of a range now tenant 2's");

	/*
	 * An emptied table leaves bound sessions bound: their faults stay
	 * checked until the last of them is gone.
	 */
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		v = viewer_open(1);
		if (write(to_parent[1], "r", 1) != 1 ||
		    read(to_child[0], &go, 1) != 1)
			_exit(2);
		viewer_touch(&v, off_b, VAL);
	}
	FKV_ASSERT_EQ(read(to_parent[0], &go, 1), 1);
	FKV_ASSERT_EQ(load_tenants(NULL, 0), 0);
	FKV_ASSERT(info_of(kv2).flags & FLUXONKV_INFO_ISOLATED,
		   "isolation off with sessions bound");
	FKV_ASSERT_EQ(write(to_child[1], "g", 1), 1);
	expect_sigbus(pid, "a bound session after the table was emptied");
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);

	delete_key(kv2, "b");
	delete_key(kv2, "c");
	fkv_close(kv1);
	fkv_close(kv2);
	/* nobody bound now: an empty table ends the isolation */
	FKV_ASSERT_EQ(load_tenants(NULL, 0), 0);
	FKV_ASSERT(!(info_flags() & FLUXONKV_INFO_ISOLATED),
		   "isolated with no table and nobody bound");
	teardown(base);
}

/*
 * Who may bind: an unprivileged caller to the ids that list its uid or
 * one of its groups, nowhere else; once bound it reads its tenant's
 * values through its own mapping.
 */
FKV_TEST(unprivileged_binds_follow_the_table)
{
	static const struct tenant_row rows[] = {
		{ .id = 1, .uids = { 0 }, .nuids = 1 },
		{ .id = 2, .uids = { NOBODY }, .nuids = 1 },
		{ .id = 3, .gids = { GROUP }, .ngids = 1 },
	};
	uint64_t base, refused;
	struct fkv *kv2;
	pid_t pid;
	int st;

	base = setup(TENANT_PARAMS);
	FKV_ASSERT_EQ(load_tenants(rows, 3), 0);
	kv2 = kv_open();
	FKV_ASSERT_EQ(bind_kv(kv2, 2), 0);
	put_pattern(kv2, "k2", VAL, 22);
	refused = fkv_sysfs("tenant_binds_refused");

	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		gid_t g = GROUP;
		int fd1 = open(FKV_DEV_PATH, O_RDONLY | O_CLOEXEC);
		int fd3 = open(FKV_DEV_PATH, O_RDONLY | O_CLOEXEC);
		int fd2 = open(FKV_DEV_PATH, O_RDONLY | O_CLOEXEC);
		struct viewer v;

		if (fd1 < 0 || fd2 < 0 || fd3 < 0 || setgroups(1, &g) ||
		    setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		if (bind_fd(fd1, 1, NULL) != -EPERM)
			_exit(10);
		if (bind_fd(fd1, 9, NULL) != -ENOENT)
			_exit(11);
		if (bind_fd(fd3, 3, NULL) != 0)
			_exit(12);
		/* the device was opened before the uid changed */
		v = viewer_of(fd2, 2);
		viewer_read(&v, "k2", 22, true);
		_exit(0);
	}
	FKV_ASSERT_EQ(waitpid(pid, &st, 0), pid);
	FKV_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "child: status %#x (10: bind 1 not EPERM, 11: bind 9 not ENOENT, 12: bind 3 by group refused, 3: k2 unread)",
		   st);
	FKV_ASSERT_EQ(fkv_sysfs("tenant_binds_refused"), refused + 2);
	delete_key(kv2, "k2");
	fkv_close(kv2);
	FKV_ASSERT_EQ(load_tenants(NULL, 0), 0);
	teardown(base);
}
