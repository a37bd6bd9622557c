// SPDX-License-Identifier: GPL-2.0
/*
 * test_storm - the module attacked while it serves: a fixed number of
 * random ioctls (every command, random sizes, fields, flags, holder ids;
 * pointers NULL, unmapped, misaligned, in the kernel half) from the file
 * descriptions a group member can have (O_RDONLY, and O_RDWR without
 * CAP_SYS_ADMIN), and random generic netlink messages to the family
 * (random commands, attributes, lengths, dump flags), while a loader puts,
 * gets and checks its own values byte for byte.  Afterwards the loader saw
 * only its latest versions or clean misses, and nothing is left: holders,
 * replicas, segment bytes and the module's allocation objects are back to
 * where they were; the runner checks the kernel log for splats.
 *
 * FKV_STORM_OPS sets the operation count per storm (default 20000; `make
 * stress` runs 1000000).
 */
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "fkv_env.h"
#include "fkv_kv.h"

#define STORM_OPS	20000
#define STORM_KEYS	32
#define LOAD_KEYS	8
#define LOAD_LEN(i)	((size_t)(4096 * (1 + (i) % 13) + 77 * (i)))

static unsigned long storm_ops(void)
{
	const char *e = getenv("FKV_STORM_OPS");
	unsigned long n = e ? strtoul(e, NULL, 10) : 0;

	return n ? n : STORM_OPS;
}

/* ---- the loader: its own keys, checked byte for byte ---- */

static void loader(int stop_fd)
{
	uint64_t last[LOAD_KEYS] = { 0 }, salt[LOAD_KEYS] = { 0 };
	unsigned long iter = 0, hits = 0, misses = 0;
	struct fkv *kv = kv_open();
	char key[32], c;
	int i;

	fcntl(stop_fd, F_SETFL, O_NONBLOCK);
	while (read(stop_fd, &c, 1) < 0) {
		struct fkv_holder h;
		uint8_t *buf;
		int ret;

		i = (int)(iter % LOAD_KEYS);
		snprintf(key, sizeof(key), "load-%d", i);
		if (iter % 3 == 0) {
			buf = pattern(key, LOAD_LEN(i), iter);
			ret = fkv_put(kv, key, strlen(key), buf, LOAD_LEN(i),
				      &last[i]);
			free(buf);
			if (ret) {
				printf("# loader: put %s: %s\n", key,
				       fkv_strerror(ret));
				_exit(11);
			}
			salt[i] = iter;
		} else if (last[i]) {
			ret = fkv_get(kv, key, strlen(key), &h);
			if (ret == -ENOENT) {
				misses++;	/* evicted: a clean miss */
			} else if (ret) {
				printf("# loader: get %s: %s\n", key,
				       fkv_strerror(ret));
				_exit(12);
			} else {
				if (h.put_id != last[i] ||
				    h.len != LOAD_LEN(i) ||
				    fkv_pattern_check(h.data, h.len, key,
						      strlen(key),
						      salt[i]) >= 0) {
					printf("# loader: %s: put_id %" PRIu64
					       " (want %" PRIu64 "), len %zu, "
					       "bytes not the last put's\n",
					       key, h.put_id, last[i], h.len);
					_exit(13);
				}
				hits++;
				if (fkv_holder_release(kv, &h))
					_exit(14);
			}
		}
		iter++;
	}
	/* one more round of every key, the helpers' way */
	for (i = 0; i < LOAD_KEYS; i++) {
		snprintf(key, sizeof(key), "load-%d", i);
		put_pattern(kv, key, LOAD_LEN(i), 1);
		delete_key(kv, key);
	}
	fkv_close(kv);
	printf("# loader: %lu operations, %lu checked hits, %lu misses\n",
	       iter, hits, misses);
	_exit(0);
}

/* ---- the ioctl storm ---- */

struct storm {
	uint64_t rnd;
	int fds[2];		/* O_RDONLY, O_RDWR without CAP_SYS_ADMIN */
	uint8_t *unmapped;	/* a page that is not mapped any more */
	uint8_t value[1 << 20];
	uint64_t holders[64];	/* real holder ids seen, to release */
	unsigned int nholders;
	unsigned long ok, failed;
};

static uint64_t rnd(struct storm *s)
{
	return fkv_xorshift(&s->rnd);
}

/* A pointer for a field: good, NULL, unmapped, kernel, odd. */
static uint64_t storm_ptr(struct storm *s, const void *good)
{
	switch (rnd(s) % 7) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)s->unmapped + rnd(s) % 4096;
	case 2:
		return 0xffff888000000000ULL + (rnd(s) % (1ULL << 30));
	case 3:
		return (uintptr_t)good + 1;
	case 4:
		return (uint64_t)-4096 + rnd(s) % 4096;
	default:
		return (uintptr_t)good;
	}
}

/*
 * KEY's length, or now and then one the module must refuse (0, past
 * FLUXONKV_KEY_MAX): a valid other length would make keys out of the
 * stack bytes behind KEY, which nobody deletes afterwards.
 */
static uint32_t storm_key_len(struct storm *s, const char *key)
{
	if (rnd(s) % 8)
		return (uint32_t)strlen(key);
	return rnd(s) % 2 ? 0 : FLUXONKV_KEY_MAX + 1 + (uint32_t)(rnd(s) % 256);
}

static uint32_t storm_size(struct storm *s, uint32_t ver0)
{
	static const uint32_t odd[] = { 0, 1, 7, 8, 4095, 4096, 4097,
					65536, 0xffffffff };

	switch (rnd(s) % 5) {
	case 0:
		return odd[rnd(s) % (sizeof(odd) / sizeof(odd[0]))];
	case 1:
		return ver0 - 8 + (uint32_t)(rnd(s) % 24);
	default:
		return ver0;
	}
}

static const struct {
	unsigned long cmd;
	uint32_t ver0;
} storm_cmds[] = {
	{ FLUXONKV_IOC_INFO, FLUXONKV_INFO_SIZE_VER0 },
	{ FLUXONKV_IOC_PUT, FLUXONKV_PUT_SIZE_VER0 },
	{ FLUXONKV_IOC_GET, FLUXONKV_GET_SIZE_VER0 },
	{ FLUXONKV_IOC_RELEASE, FLUXONKV_RELEASE_SIZE_VER0 },
	{ FLUXONKV_IOC_DELETE, FLUXONKV_DELETE_SIZE_VER0 },
	{ FLUXONKV_IOC_SSD_ATTACH, FLUXONKV_SSD_ATTACH_SIZE_VER0 },
	{ FLUXONKV_IOC_HOLD, FLUXONKV_HOLD_SIZE_VER0 },
	{ FLUXONKV_IOC_SSD_STAGE, FLUXONKV_SSD_STAGE_SIZE_VER0 },
	{ FLUXONKV_IOC_TARGET, FLUXONKV_TARGET_SIZE_VER0 },
	{ FLUXONKV_IOC_PUBLISH, FLUXONKV_PUBLISH_SIZE_VER0 },
	{ FLUXONKV_IOC_LOOKUP, FLUXONKV_LOOKUP_SIZE_VER0 },
	{ FLUXONKV_IOC_GET_INTO, FLUXONKV_GET_INTO_SIZE_VER0 },
	{ FLUXONKV_IOC_BATCH, FLUXONKV_BATCH_SIZE_VER0 },
};
#define NCMDS	(sizeof(storm_cmds) / sizeof(storm_cmds[0]))

static void storm_one(struct storm *s)
{
	static const char *const names = "storm-";
	union {
		struct fluxonkv_put put;
		struct fluxonkv_get get;
		struct fluxonkv_release rel;
		struct fluxonkv_delete del;
		struct fluxonkv_lookup lk;
		struct fluxonkv_get_into gi;
		struct fluxonkv_batch b;
		uint8_t raw[8192];
	} u;
	char key[32];
	unsigned int c = (unsigned int)(rnd(s) % (NCMDS + 1));
	unsigned long cmd;
	int fd = s->fds[rnd(s) % 2], ret;
	size_t i;
	void *arg = &u;

	snprintf(key, sizeof(key), "%s%d", names,
		 (int)(rnd(s) % STORM_KEYS));
	/* random bytes, then (mostly) a plausible struct on top */
	for (i = 0; i < 512; i += 8) {
		uint64_t v = rnd(s);

		memcpy(u.raw + i, &v, 8);
	}
	memset(u.raw + 512, 0, sizeof(u.raw) - 512);
	if (c == NCMDS) {
		/* not ours: unknown numbers, other magics, odd directions */
		cmd = (unsigned long)rnd(s);
		if (rnd(s) % 2)
			cmd = _IOC(rnd(s) % 4, FLUXONKV_IOC_MAGIC,
				   0x0d + rnd(s) % 0xf0, rnd(s) % 8192);
	} else {
		cmd = storm_cmds[c].cmd;
		if (rnd(s) % 4) {
			memset(&u, 0, 512);
			if (rnd(s) % 8 == 0)	/* a flag, a reserved byte */
				u.raw[8 + rnd(s) % 56] = (uint8_t)rnd(s);
		}
		u.put.size = storm_size(s, storm_cmds[c].ver0);
		switch (storm_cmds[c].cmd) {
		case FLUXONKV_IOC_PUT:
			u.put.key_ptr = storm_ptr(s, key);
			u.put.key_len = storm_key_len(s, key);
			u.put.value_ptr = storm_ptr(s, s->value);
			u.put.value_len = rnd(s) % 8 ?
				1 + rnd(s) % sizeof(s->value) : rnd(s);
			break;
		case FLUXONKV_IOC_GET:
			u.get.key_ptr = storm_ptr(s, key);
			u.get.key_len = storm_key_len(s, key);
			break;
		case FLUXONKV_IOC_RELEASE:
			u.rel.holder_id = s->nholders && rnd(s) % 2 ?
				s->holders[rnd(s) % s->nholders] : rnd(s) % 70000;
			break;
		case FLUXONKV_IOC_DELETE:
			u.del.key_ptr = storm_ptr(s, key);
			u.del.key_len = (uint32_t)strlen(key);
			break;
		case FLUXONKV_IOC_LOOKUP:
			u.lk.key_ptr = storm_ptr(s, key);
			u.lk.key_len = storm_key_len(s, key);
			break;
		case FLUXONKV_IOC_GET_INTO:
			u.gi.key_ptr = storm_ptr(s, key);
			u.gi.key_len = storm_key_len(s, key);
			u.gi.buf_ptr = storm_ptr(s, s->value);
			u.gi.buf_len = rnd(s) % 8 ? rnd(s) % sizeof(s->value) :
				rnd(s);
			break;
		case FLUXONKV_IOC_BATCH: {
			/* up to 8 entries after the header, mostly plausible */
			struct fluxonkv_op *op = (void *)(u.raw + 1024);
			unsigned int n = 1 + rnd(s) % 8, j;

			memset(op, 0, 8 * sizeof(*op));
			for (j = 0; j < n; j++) {
				op[j].opcode = rnd(s) % 8;
				op[j].key_ptr = storm_ptr(s, key);
				op[j].key_len = storm_key_len(s, key);
				if (op[j].opcode == FLUXONKV_OP_RELEASE) {
					op[j].key_ptr = op[j].key_len = 0;
					op[j].holder_id = rnd(s) % 70000;
				}
				if (op[j].opcode == FLUXONKV_OP_PUT ||
				    op[j].opcode == FLUXONKV_OP_GET_INTO) {
					op[j].buf_ptr = storm_ptr(s, s->value);
					op[j].buf_len = 1 + rnd(s) %
						sizeof(s->value);
				}
				if (rnd(s) % 16 == 0)	/* a stray field */
					((uint8_t *)&op[j])[rnd(s) % 80] =
						(uint8_t)rnd(s);
			}
			u.b.count = rnd(s) % 16 ? n : (uint32_t)rnd(s);
			u.b.ops_ptr = rnd(s) % 16 ? (uintptr_t)op :
				(uintptr_t)s->unmapped;
			u.b.op_size = rnd(s) % 16 ? sizeof(*op) :
				(uint32_t)(rnd(s) % 256);
			break;
		}
		default:
			break;
		}
		/* the ioctl number's own size field is ignored: vary it */
		if (rnd(s) % 4 == 0)
			cmd = _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd),
				   rnd(s) % 16384);
	}
	switch (rnd(s) % 16) {
	case 0:
		arg = NULL;
		break;
	case 1:
		arg = s->unmapped;
		break;
	case 2:
		arg = (void *)(uintptr_t)0xffff888000001000ULL;
		break;
	default:
		break;
	}
	ret = ioctl(fd, cmd, arg);
	if (ret == 0) {
		s->ok++;
		if (arg == &u && c < NCMDS &&
		    storm_cmds[c].cmd == FLUXONKV_IOC_GET &&
		    s->nholders < sizeof(s->holders) / sizeof(s->holders[0]))
			s->holders[s->nholders++] = u.get.holder_id;
	} else {
		s->failed++;
		/* never a crash, and never an errno outside the ABI's */
		FKV_ASSERT(errno == EINVAL || errno == EFAULT || errno == E2BIG ||
			   errno == ENOTTY || errno == ENOENT || errno == EPERM ||
			   errno == EBADF || errno == ENOSPC || errno == EMFILE ||
			   errno == ETIMEDOUT || errno == EBUSY ||
			   errno == EINTR || errno == ENOTCONN ||
			   errno == EDQUOT || errno == EMSGSIZE,
			   "ioctl %#lx: unexpected %s", cmd, strerror(errno));
	}
}

static void ioctl_storm(void *arg)
{
	unsigned long n = storm_ops(), i;
	struct storm *s = calloc(1, sizeof(*s));
	char key[32];
	int k, fd;

	(void)arg;
	FKV_ASSERT(s);
	FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
	s->rnd = 0x5707a1u;
	s->fds[0] = fkv_dev_open_ro();
	s->fds[1] = fkv_dev_open();
	FKV_ASSERT(s->fds[0] >= 0 && s->fds[1] >= 0);
	s->unmapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(s->unmapped != MAP_FAILED);
	munmap(s->unmapped, 4096);
	fkv_pattern_fill(s->value, sizeof(s->value), "storm", 5, 1);
	for (i = 0; i < n; i++)
		storm_one(s);
	printf("# ioctl storm: %lu calls, %lu succeeded, %lu refused\n", n,
	       s->ok, s->failed);
	/* what the storm put goes again */
	fd = s->fds[1];
	for (k = 0; k < STORM_KEYS; k++) {
		snprintf(key, sizeof(key), "storm-%d", k);
		fkv_dev_delete(fd, key, strlen(key));
		/* a key pointer one byte off: "torm-N\0" */
		fkv_dev_delete(fd, key + 1, strlen(key));
	}
	close(s->fds[0]);
	close(s->fds[1]);
	free(s);
}

/* ---- the netlink storm ---- */

static int genl_family_id(int sk)
{
	struct {
		struct nlmsghdr n;
		struct genlmsghdr g;
		char buf[256];
	} req = { 0 };
	char resp[4096];
	struct nlattr *na;
	ssize_t len;

	req.n.nlmsg_type = GENL_ID_CTRL;
	req.n.nlmsg_flags = NLM_F_REQUEST;
	req.g.cmd = CTRL_CMD_GETFAMILY;
	req.g.version = 1;
	na = (struct nlattr *)req.buf;
	na->nla_type = CTRL_ATTR_FAMILY_NAME;
	na->nla_len = (uint16_t)NLA_HDRLEN + sizeof(FLUXONKV_GENL_NAME);
	memcpy((char *)na + NLA_HDRLEN, FLUXONKV_GENL_NAME,
	       sizeof(FLUXONKV_GENL_NAME));
	req.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN) + NLA_ALIGN(na->nla_len);
	if (send(sk, &req, req.n.nlmsg_len, 0) < 0)
		return -errno;
	len = recv(sk, resp, sizeof(resp), 0);
	if (len < (ssize_t)NLMSG_LENGTH(GENL_HDRLEN))
		return -EIO;
	na = (struct nlattr *)(resp + NLMSG_LENGTH(GENL_HDRLEN));
	while ((char *)na < resp + len && na->nla_len >= NLA_HDRLEN) {
		if (na->nla_type == CTRL_ATTR_FAMILY_ID)
			return *(uint16_t *)((char *)na + NLA_HDRLEN);
		na = (struct nlattr *)((char *)na + NLA_ALIGN(na->nla_len));
	}
	return -ENOENT;
}

static void netlink_storm(void)
{
	unsigned long n = storm_ops() / 4, i, replies = 0;
	struct timeval tv = { .tv_usec = 1000 };
	uint64_t r = 0x9e71;
	uint8_t msg[2048], resp[16384];
	int sk, family;

	sk = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	FKV_ASSERT(sk >= 0);
	setsockopt(sk, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	tv.tv_usec = 0;
	tv.tv_sec = 2;
	setsockopt(sk, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	family = genl_family_id(sk);
	FKV_ASSERT(family > 0, "family id: %d", family);
	tv.tv_sec = 0;
	tv.tv_usec = 1000;
	setsockopt(sk, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (i = 0; i < n; i++) {
		struct nlmsghdr *nh = (struct nlmsghdr *)msg;
		struct genlmsghdr *gh = NLMSG_DATA(nh);
		size_t off = NLMSG_LENGTH(GENL_HDRLEN);
		unsigned int a, nattrs = (unsigned int)(fkv_xorshift(&r) % 6);

		memset(msg, 0, sizeof(msg));
		nh->nlmsg_type = (uint16_t)family;
		nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
		if (fkv_xorshift(&r) % 16 == 0)
			nh->nlmsg_flags |= NLM_F_DUMP;
		nh->nlmsg_seq = (uint32_t)i;
		gh->cmd = (uint8_t)(fkv_xorshift(&r) % 40);
		gh->version = (uint8_t)(fkv_xorshift(&r) % 3);
		for (a = 0; a < nattrs; a++) {
			struct nlattr *na = (struct nlattr *)(msg + off);
			size_t len = fkv_xorshift(&r) % 4 ?
				     (size_t)(4 << (fkv_xorshift(&r) % 2)) :
				     (size_t)(fkv_xorshift(&r) % 300);
			size_t k;

			if (off + NLA_HDRLEN + len + 4 > sizeof(msg))
				break;
			na->nla_type = (uint16_t)(fkv_xorshift(&r) % 32);
			if (fkv_xorshift(&r) % 8 == 0)
				na->nla_type |= NLA_F_NESTED;
			na->nla_len = (uint16_t)(NLA_HDRLEN + len);
			for (k = 0; k < len; k++)
				msg[off + NLA_HDRLEN + k] =
					(uint8_t)fkv_xorshift(&r);
			off += NLA_ALIGN(na->nla_len);
		}
		/* now and then a length that lies */
		nh->nlmsg_len = (uint32_t)off;
		if (fkv_xorshift(&r) % 32 == 0 && off > NLMSG_LENGTH(GENL_HDRLEN))
			((struct nlattr *)(msg + NLMSG_LENGTH(GENL_HDRLEN)))->nla_len =
				(uint16_t)fkv_xorshift(&r);
		FKV_ASSERT(send(sk, msg, off, 0) >= 0 || errno == ENOBUFS ||
			   errno == EAGAIN, "send: %s", strerror(errno));
		while (recv(sk, resp, sizeof(resp), MSG_DONTWAIT) > 0)
			replies++;
	}
	while (recv(sk, resp, sizeof(resp), 0) > 0)
		replies++;
	close(sk);
	printf("# netlink storm: %lu messages, %lu replies\n", n, replies);
}

/* Active objects of slab cache NAME (/proc/slabinfo), -1 if not listed. */
static long slab_active(const char *name)
{
	FILE *f = fopen("/proc/slabinfo", "r");
	char line[512], n[64];
	long active = -1, v;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", n, &v) == 2 && !strcmp(n, name))
			active = v;
	fclose(f);
	return active;
}

FKV_TEST_TIMEOUT(ioctl_and_netlink_storms_during_a_load_leave_nothing, 900)
{
	uint64_t base = setup("segment_mb=32");
	long allocs0 = slab_active("fluxonkv_alloc");
	int stop[2], status;
	pid_t load;

	FKV_ASSERT_EQ(pipe(stop), 0);
	fflush(stdout);
	load = fork();
	FKV_ASSERT(load >= 0);
	if (load == 0) {
		close(stop[1]);
		loader(stop[0]);
	}
	close(stop[0]);
	fkv_in_child(ioctl_storm, NULL, "ioctl storm");
	netlink_storm();
	close(stop[1]);
	FKV_ASSERT_EQ(waitpid(load, &status, 0), load);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "the loader saw something wrong (status %#x)", status);
	/* the daemon is still the daemon, and still answers */
	FKV_ASSERT_GT(fkv_sysfs("daemon_pid"), 0);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	if (fkv_sysfs_wait("replicas", 0, 3000, NULL))
		fkv_diag_file("replicas: ", FKV_DEBUGFS_DIR "/replicas");
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	if (allocs0 >= 0)
		FKV_EXPECT(slab_active("fluxonkv_alloc") <= allocs0,
			   "fluxonkv_alloc objects %ld, %ld before",
			   slab_active("fluxonkv_alloc"), allocs0);
	teardown(base);
}
