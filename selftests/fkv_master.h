/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fkv_master.h - a selftest playing the node daemon (the master) itself on
 * a raw genl socket, with a privileged session (O_RDWR + CAP_SYS_ADMIN)
 * whose mapping of the segment is writable, and clients in child
 * processes that block in the kernel meanwhile (test_fetch, test_place).
 * Include after fkv_env.h.
 */
#ifndef FKV_MASTER_H
#define FKV_MASTER_H

#include <poll.h>

/* How long expect_no_upcall() listens. */
#ifndef FKV_NO_UPCALL_MS
#define FKV_NO_UPCALL_MS	300
#endif

/* ---- playing the daemon ---- */

/* STATUS-only answer to request REQ of command CMD. */
static inline int answer_status(struct fkv_nl *nl, uint8_t cmd, uint64_t req,
				int32_t status)
{
	struct answer a = { .cmd = cmd, .has_req_id = true, .req_id = req,
			    .has_status = true, .status = status };

	return send_answer(nl, &a);
}

static inline int drop_replica(struct fkv_nl *nl, uint64_t handle)
{
	struct answer a = { .cmd = FLUXONKV_CMD_DROP_REPLICA,
			    .handle = handle };

	return send_answer(nl, &a);
}

/* Wait up to TIMEOUT_MS for an upcall CMD; its REQ_ID (attributes in tb). */
static inline uint64_t expect_upcall_in(struct fkv_nl *nl, uint8_t cmd,
					struct nlattr **tb,
					unsigned int timeout_ms)
{
	int ret = fkv_nl_next(nl, cmd, tb, timeout_ms);

	FKV_ASSERT(ret == 0, "no upcall %u within %u ms", cmd, timeout_ms);
	FKV_ASSERT(tb[FLUXONKV_A_REQ_ID], "upcall %u without REQ_ID", cmd);
	return fkv_nla_u64(tb[FLUXONKV_A_REQ_ID]);
}

static inline uint64_t expect_upcall(struct fkv_nl *nl, uint8_t cmd,
				     struct nlattr **tb)
{
	return expect_upcall_in(nl, cmd, tb, 5000);
}

/* No message of CMD arrives within FKV_NO_UPCALL_MS. */
static inline void expect_no_upcall(struct fkv_nl *nl, uint8_t cmd,
				    const char *why)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];

	FKV_ASSERT(fkv_nl_next(nl, cmd, tb, FKV_NO_UPCALL_MS) != 0,
		   "unexpected upcall %u: %s", cmd, why);
}

static inline bool attr_is_key(struct nlattr *a, const char *k)
{
	return a && nla_len(a) == (int)strlen(k) &&
	       !memcmp(nla_data(a), k, strlen(k));
}

/* The test as the node daemon: its netlink socket and its mapping. */
struct master {
	struct fkv_nl nl;
	int fd;			/* privileged session: O_RDWR as root */
	uint8_t *map;		/* the whole segment, shared and writable */
	uint64_t size;
};

/* Open M's genl socket (not registered yet). */
static inline void master_open(struct master *m)
{
	int ret = fkv_nl_open(&m->nl);

	FKV_ASSERT(ret == 0, "genl family %s: %s", FLUXONKV_GENL_NAME,
		   strerror(-ret));
}

/*
 * Register M's open socket as the daemon with FLAGS and NODE_ID (each left
 * out when 0).  0 (the reply's attributes in tb, valid until the next
 * message is looked at) or the kernel's -errno.
 */
static inline int master_register_as(struct master *m, uint32_t flags,
				     uint32_t node_id, struct nlattr **tb)
{
	struct nl_msg *msg = fkv_nl_msg(&m->nl, FLUXONKV_CMD_DAEMON_REGISTER);
	int ret;

	FKV_ASSERT(msg);
	if (flags)
		FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_FLAGS, flags), 0);
	if (node_id)
		FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_NODE_ID, node_id), 0);
	ret = fkv_nl_transact(&m->nl, msg);
	if (ret)
		return ret;
	FKV_ASSERT_EQ(fkv_nl_next(&m->nl, FLUXONKV_CMD_DAEMON_REGISTER, tb,
				  2000), 0);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), getpid());
	return 0;
}

/* Open M's socket and register it, without flags, as node 0. */
static inline void master_register(struct master *m)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];

	master_open(m);
	FKV_ASSERT_EQ(master_register_as(m, 0, 0, tb), 0);
}

/* The privileged session and its writable mapping of the whole segment. */
static inline void master_map(struct master *m)
{
	m->fd = fkv_dev_open();
	FKV_ASSERT(m->fd >= 0, "open O_RDWR: %s", strerror(errno));
	m->map = fkv_dev_map_rw(m->fd, &m->size);
	FKV_ASSERT(m->map != MAP_FAILED, "privileged writable mapping: %s",
		   strerror(errno));
	FKV_ASSERT_EQ(m->size, fkv_sysfs("segment_capacity_bytes"));
}

/* Registered with FLAGS as NODE_ID, privileged session mapped. */
static inline void master_start_as(struct master *m, uint32_t flags,
				   uint32_t node_id)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];

	master_open(m);
	FKV_ASSERT_EQ(master_register_as(m, flags, node_id, tb), 0);
	master_map(m);
}

static inline void master_start(struct master *m)
{
	master_start_as(m, 0, 0);
}

static inline void master_stop(struct master *m)
{
	munmap(m->map, m->size);
	close(m->fd);
	fkv_nl_close(&m->nl);
}

/* ---- clients in child processes, blocked in the kernel meanwhile ---- */

enum client_op { CLIENT_PUT, CLIENT_GET };

struct client {
	pid_t pid;
	int rfd;		/* results */
	int wfd;		/* commands: 'c' check again; EOF: release, exit */
};

struct client_result {
	int err;		/* 0 or errno */
	uint64_t put_id;
	uint64_t len;
	uint64_t offset;
	uint64_t holder_id;
	uint32_t source;
	bool intact;		/* get: bytes are the pattern of (key, len, salt) */
	bool tail_zero;		/* get: the rest of the last granule is zero */
};

static inline void client_check(const uint8_t *map, uint64_t size,
				const char *k, uint64_t salt,
				struct client_result *r)
{
	uint64_t end = FKV_ALIGN_UP(r->offset + r->len), i;

	r->intact = map != MAP_FAILED && r->offset + r->len <= size &&
		    fkv_pattern_check(map + r->offset, r->len, k, strlen(k),
				      salt) < 0;
	r->tail_zero = r->intact && end <= size;
	for (i = r->offset + r->len; r->tail_zero && i < end; i++)
		if (map[i])
			r->tail_zero = false;
}

/*
 * A child must not keep the master's netlink socket (or its privileged
 * session) open: closing them in the parent would not end them.
 */
static inline void close_inherited_fds(int keep1, int keep2)
{
	int fd;

	for (fd = 3; fd < 1024; fd++)
		if (fd != keep1 && fd != keep2)
			close(fd);
}

/*
 * A client session doing one put (the device opened O_RDWR: puts need a
 * writable file description) or get (opened O_RDONLY, mapped read-only)
 * in a child.  A get's holder is kept until client_end().
 */
static inline struct client client_start(enum client_op op, const char *k,
					 size_t vlen, uint64_t salt)
{
	struct client c;
	int res[2], ctl[2];

	FKV_ASSERT_EQ(pipe(res), 0);
	FKV_ASSERT_EQ(pipe(ctl), 0);
	fflush(stdout);
	c.pid = fork();
	FKV_ASSERT(c.pid >= 0);
	if (c.pid == 0) {
		struct client_result r = { 0 };
		const uint8_t *map = MAP_FAILED;
		struct fluxonkv_get g;
		uint64_t size = 0;
		char cmd;
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close_inherited_fds(res[1], ctl[0]);
		fd = op == CLIENT_PUT ? fkv_dev_open() : fkv_dev_open_ro();
		if (fd < 0) {
			r.err = errno;
		} else if (op == CLIENT_PUT) {
			uint8_t *buf = malloc(vlen);

			fkv_pattern_fill(buf, vlen, k, strlen(k), salt);
			r.err = -fkv_dev_put(fd, k, strlen(k), buf, vlen,
					     &r.put_id);
			free(buf);
		} else {
			map = fkv_dev_map(fd, &size);
			r.err = -fkv_dev_get(fd, k, strlen(k), &g);
			r.put_id = g.put_id;
			r.len = g.len;
			r.offset = g.offset;
			r.holder_id = g.holder_id;
			r.source = g.source;
			if (!r.err)
				client_check(map, size, k, salt, &r);
		}
		if (write(res[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		while (read(ctl[0], &cmd, 1) == 1) {
			if (!r.err && r.holder_id)
				client_check(map, size, k, salt, &r);
			if (write(res[1], &r, sizeof(r)) != sizeof(r))
				_exit(2);
		}
		if (!r.err && r.holder_id && fkv_dev_release(fd, r.holder_id))
			_exit(3);
		_exit(0);
	}
	close(res[1]);
	close(ctl[0]);
	c.rfd = res[0];
	c.wfd = ctl[1];
	return c;
}

static inline struct client client_get(const char *k, uint64_t salt)
{
	return client_start(CLIENT_GET, k, 0, salt);
}

static inline bool client_finished(const struct client *c)
{
	struct pollfd p = { .fd = c->rfd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/* The client's first result (its put or get returned). */
static inline struct client_result client_result(struct client *c)
{
	struct client_result r;

	FKV_ASSERT_EQ(read(c->rfd, &r, sizeof(r)), sizeof(r));
	return r;
}

/* Look at the holder's bytes again. */
static inline struct client_result client_recheck(struct client *c)
{
	FKV_ASSERT_EQ(write(c->wfd, "c", 1), 1);
	return client_result(c);
}

/* Release the holder (if any) and reap the client. */
static inline void client_end(struct client *c)
{
	int status;

	close(c->wfd);
	FKV_ASSERT_EQ(waitpid(c->pid, &status, 0), c->pid);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "client ended with status %#x", status);
	close(c->rfd);
}

/* A client's whole get, done. */
static inline struct client_result client_get_once(const char *k,
						   uint64_t salt)
{
	struct client c = client_get(k, salt);
	struct client_result r = client_result(&c);

	client_end(&c);
	return r;
}

/* ---- the master's side of the flows ---- */

/*
 * Play a whole put of the pattern of (K, VLEN, salt 0) as the master:
 * PUT_START -> PUT_ID, PUT_DONE -> published.  Returns the replica's handle.
 */
static inline uint64_t master_put(struct master *m, const char *k,
				  size_t vlen, uint64_t put_id)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .has_req_id = true, .has_status = true,
			    .has_flags = true };
	struct client c = client_start(CLIENT_PUT, k, vlen, 0);
	struct client_result r;
	uint64_t handle;

	a.cmd = FLUXONKV_CMD_PUT_START;
	a.req_id = expect_upcall(&m->nl, FLUXONKV_CMD_PUT_START, tb);
	a.put_id = put_id;
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
	a.cmd = FLUXONKV_CMD_PUT_DONE;
	a.req_id = expect_upcall(&m->nl, FLUXONKV_CMD_PUT_DONE, tb);
	handle = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	FKV_ASSERT(handle && handle != UINT64_MAX, "PUT_DONE handle");
	a.put_id = 0;
	a.flags = FLUXONKV_PUT_F_PUBLISHED;
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, put_id);
	return handle;
}

/*
 * A published 1-byte value ("filler", version 1) at the start of a fresh
 * segment, so that the targets a test makes do not sit at offset 0 (see
 * test_fetch's fetch_into_a_target_at_offset_zero_carries_offset_zero).
 */
static inline uint64_t master_put_filler(struct master *m)
{
	uint64_t h = master_put(m, "filler", 1, 1);

	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), FLUXONKV_SEGMENT_ALIGN);
	return h;
}

/* Wait for the GET_START of K; answer it with a miss. */
static inline void answer_miss(struct master *m, const char *k)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t req = expect_upcall(&m->nl, FLUXONKV_CMD_GET_START, tb);

	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "GET_START of '%s'", k);
	FKV_ASSERT_EQ(answer_status(&m->nl, FLUXONKV_CMD_GET_START, req,
				    -ENOENT), 0);
}

/* How many times debugfs latency op OP was recorded must be N (if shown). */
static inline void expect_latency_count(const char *op, long long n)
{
	long long got = fkv_debugfs_latency_count(op);

	if (got >= 0 || fkv_path_exists(FKV_DEBUGFS_DIR "/latency"))
		FKV_ASSERT(got == n, "latency op %s recorded %lld times, "
			   "want %lld", op, got, n);
}

#endif /* FKV_MASTER_H */
