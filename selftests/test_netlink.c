// SPDX-License-Identifier: GPL-2.0
/*
 * test_netlink - the "fluxonkv" generic netlink family under abuse: who may
 * register and command, one daemon at a time, malformed and stray answers
 * to upcalls, unknown replica handles.  Most tests play the daemon
 * themselves on a raw genl socket (that is the only way to send it bad
 * answers); the module must come out of all of it still serving fluxond.
 */
#include <grp.h>
#include <poll.h>

#include <fluxonkv.h>

#include "fkv_env.h"

#define SEG_MB		32
#define NOBODY		65534

/* ---- playing the daemon ---- */

/* An answer (or command) to send; has_* select what is included. */
/* A message of CMD carrying one raw attribute TYPE of LEN bytes. */
static int send_raw_attr(struct fkv_nl *nl, uint8_t cmd, int type,
			 const void *data, int len)
{
	struct nl_msg *msg = fkv_nl_msg(nl, cmd);

	FKV_ASSERT(msg);
	FKV_ASSERT_EQ(nla_put(msg, type, len, data), 0);
	return fkv_nl_transact(nl, msg);
}

static int send_cmd(struct fkv_nl *nl, uint8_t cmd)
{
	struct nl_msg *msg = fkv_nl_msg(nl, cmd);

	FKV_ASSERT(msg);
	return fkv_nl_transact(nl, msg);
}

static int drop_replica(struct fkv_nl *nl, uint64_t handle)
{
	struct answer a = { .cmd = FLUXONKV_CMD_DROP_REPLICA,
			    .handle = handle };

	return send_answer(nl, &a);
}

static void nl_open(struct fkv_nl *nl)
{
	int ret = fkv_nl_open(nl);

	FKV_ASSERT(ret == 0, "genl family %s: %s", FLUXONKV_GENL_NAME,
		   strerror(-ret));
}

/*
 * Register NL's socket as the daemon; the reply's attributes land in tb.
 * Returns 0 or the kernel's -errno.
 */
static int register_daemon(struct fkv_nl *nl, struct nlattr **tb)
{
	int ret = send_cmd(nl, FLUXONKV_CMD_DAEMON_REGISTER);

	if (ret)
		return ret;
	FKV_ASSERT_EQ(fkv_nl_next(nl, FLUXONKV_CMD_DAEMON_REGISTER, tb, 2000),
		      0);
	return 0;
}

/* Wait for an upcall CMD and return its REQ_ID (attributes in tb). */
static uint64_t expect_upcall(struct fkv_nl *nl, uint8_t cmd,
			      struct nlattr **tb)
{
	int ret = fkv_nl_next(nl, cmd, tb, 5000);

	FKV_ASSERT(ret == 0, "no upcall %u within 5 s", cmd);
	FKV_ASSERT(tb[FLUXONKV_A_REQ_ID], "upcall %u without REQ_ID", cmd);
	return fkv_nla_u64(tb[FLUXONKV_A_REQ_ID]);
}

/* ---- a client in a child process, blocked in the kernel meanwhile ---- */

enum client_op { CLIENT_PUT, CLIENT_GET, CLIENT_DELETE };

struct client {
	pid_t pid;
	int rfd;
};

struct client_result {
	int err;		/* 0 or errno */
	uint64_t put_id;
	uint64_t len;
	bool intact;		/* get: bytes are the pattern of (key, len) */
};

static struct client client_start(enum client_op op, const char *k,
				  size_t vlen)
{
	struct client c;
	int pfd[2];

	FKV_ASSERT_EQ(pipe(pfd), 0);
	fflush(stdout);
	c.pid = fork();
	FKV_ASSERT(c.pid >= 0);
	if (c.pid == 0) {
		struct client_result r = { 0 };
		struct fluxonkv_get g;
		int fd = fkv_dev_open();
		uint8_t *buf;

		close(pfd[0]);
		if (fd < 0) {
			r.err = errno;
		} else if (op == CLIENT_PUT) {
			buf = malloc(vlen);
			fkv_pattern_fill(buf, vlen, k, strlen(k), 0);
			r.err = -fkv_dev_put(fd, k, strlen(k), buf, vlen,
					     &r.put_id);
		} else if (op == CLIENT_DELETE) {
			r.err = -fkv_dev_delete(fd, k, strlen(k));
		} else {
			r.err = -fkv_dev_get(fd, k, strlen(k), &g);
			r.put_id = g.put_id;
			r.len = g.len;
			if (!r.err) {
				uint64_t size;
				const uint8_t *map = fkv_dev_map(fd, &size);

				r.intact = map != MAP_FAILED &&
					   g.offset + g.len <= size &&
					   fkv_pattern_check(map + g.offset,
							     g.len, k,
							     strlen(k), 0) < 0;
				fkv_dev_release(fd, g.holder_id);
			}
		}
		if (write(pfd[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	c.rfd = pfd[0];
	return c;
}

static bool client_finished(const struct client *c)
{
	struct pollfd p = { .fd = c->rfd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

static struct client_result client_wait(struct client *c)
{
	struct client_result r;
	int status;

	FKV_ASSERT_EQ(read(c->rfd, &r, sizeof(r)), sizeof(r));
	close(c->rfd);
	FKV_ASSERT_EQ(waitpid(c->pid, &status, 0), c->pid);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return r;
}

/* ---- the tests ---- */

/* Effective capabilities of this process, from /proc/self/status. */
static uint64_t cap_effective(void)
{
	char line[256];
	uint64_t caps = UINT64_MAX;
	FILE *f = fopen("/proc/self/status", "r");

	FKV_ASSERT(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %" SCNx64, &caps) == 1)
			break;
	fclose(f);
	return caps;
}

/* In a child: become nobody, which drops every capability. */
static void become_nobody(void)
{
	FKV_ASSERT_EQ(setgroups(0, NULL), 0);
	FKV_ASSERT_EQ(setgid(NOBODY), 0);
	FKV_ASSERT_EQ(setuid(NOBODY), 0);
	FKV_ASSERT_EQ(geteuid(), NOBODY);
	FKV_ASSERT_EQ(getegid(), NOBODY);
	FKV_ASSERT_EQ(cap_effective(), 0);
}

/* Unprivileged: read-only commands work, daemon commands are EPERM. */
static void unprivileged_checks(void)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_PUT_START, .has_req_id = true,
			    .req_id = 1, .has_status = true, .put_id = 1,
			    .has_flags = true };
	struct fkv_nl nl;

	become_nobody();
	nl_open(&nl);
	FKV_ASSERT_EQ(send_cmd(&nl, FLUXONKV_CMD_GET_VERSION), 0);
	FKV_ASSERT_EQ(fkv_nl_next(&nl, FLUXONKV_CMD_GET_VERSION, tb, 2000), 0);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_ABI]), FLUXONKV_ABI_VERSION);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_SEGMENT_SIZE]),
		      SEG_MB * FKV_MIB);

	FKV_ASSERT_EQ(send_cmd(&nl, FLUXONKV_CMD_DAEMON_REGISTER), -EPERM);
	FKV_ASSERT_EQ(drop_replica(&nl, 1), -EPERM);
	FKV_ASSERT_EQ(send_cmd(&nl, FLUXONKV_CMD_DAEMON_UNREGISTER), -EPERM);
	FKV_ASSERT_EQ(send_answer(&nl, &a), -EPERM);
	fkv_nl_close(&nl);
}

static void run_unprivileged_checks(void)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (pid == 0) {
		unprivileged_checks();
		_exit(0);
	}
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "unprivileged checks failed (status %#x)", status);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), 0);
}

FKV_TEST(unprivileged_user_gets_version_but_cannot_register_or_drop)
{
	FKV_LOAD("segment_mb=32");
	run_unprivileged_checks();
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), 0);
}

FKV_TEST(register_reply_carries_segment_and_incarnation)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fluxonkv_info info;
	uint64_t inc1, inc2;
	struct fkv_nl nl;
	int fd;

	FKV_LOAD("segment_mb=32");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_SEGMENT_SIZE]),
		      SEG_MB * FKV_MIB);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_SEGMENT_USED]), 0);
	inc1 = fkv_nla_u64(tb[FLUXONKV_A_INCARNATION]);
	FKV_ASSERT(inc1 != 0 && inc1 != UINT64_MAX, "INCARNATION %" PRIu64,
		   inc1);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), getpid());
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	FKV_ASSERT(info.flags & FLUXONKV_INFO_DAEMON);

	/* closing the socket is leaving */
	fkv_nl_close(&nl);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	FKV_ASSERT_EQ(info.flags & FLUXONKV_INFO_DAEMON, 0);
	close(fd);

	/* same module instance: same incarnation */
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_INCARNATION]), inc1);
	/* an explicit UNREGISTER leaves as well */
	FKV_ASSERT_EQ(send_cmd(&nl, FLUXONKV_CMD_DAEMON_UNREGISTER), 0);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
	fkv_nl_close(&nl);

	/* a new load is a new incarnation */
	FKV_LOAD("segment_mb=32");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	inc2 = fkv_nla_u64(tb[FLUXONKV_A_INCARNATION]);
	FKV_ASSERT(inc2 != inc1, "incarnation unchanged across reloads");
	fkv_nl_close(&nl);
}

FKV_TEST(daemon_events_are_multicast_on_register_and_leave)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_nl ev, d;
	int grp;

	FKV_LOAD("segment_mb=32");
	nl_open(&ev);
	grp = genl_ctrl_resolve_grp(ev.sk, FLUXONKV_GENL_NAME,
				    FLUXONKV_GENL_MCGRP_EVENTS);
	FKV_ASSERT(grp >= 0, "group %s: %d", FLUXONKV_GENL_MCGRP_EVENTS, grp);
	FKV_ASSERT_EQ(nl_socket_add_membership(ev.sk, grp), 0);

	nl_open(&d);
	FKV_ASSERT_EQ(register_daemon(&d, tb), 0);
	FKV_ASSERT_EQ(fkv_nl_next(&ev, FLUXONKV_CMD_DAEMON_EVENT, tb, 3000), 0);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_DAEMON_PID]), getpid());
	fkv_nl_close(&d);
	FKV_ASSERT_EQ(fkv_nl_next(&ev, FLUXONKV_CMD_DAEMON_EVENT, tb, 3000), 0);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_DAEMON_PID]), 0);
	fkv_nl_close(&ev);
}

FKV_TEST(second_registration_is_ebusy_until_the_first_daemon_leaves)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_nl a, b;

	FKV_LOAD("segment_mb=32");
	nl_open(&a);
	nl_open(&b);
	FKV_ASSERT_EQ(register_daemon(&a, tb), 0);
	FKV_ASSERT_EQ(register_daemon(&b, tb), -EBUSY);
	/* b is not the daemon: it can neither unregister nor command */
	FKV_ASSERT_NE(send_cmd(&b, FLUXONKV_CMD_DAEMON_UNREGISTER), 0);
	FKV_ASSERT_EQ(drop_replica(&b, 1), -EPERM);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), getpid());
	/* registering again from the same socket is harmless */
	FKV_ASSERT_EQ(register_daemon(&a, tb), 0);

	fkv_nl_close(&a);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
	FKV_ASSERT_EQ(register_daemon(&b, tb), 0);
	fkv_nl_close(&b);
}

FKV_TEST_TIMEOUT(second_registration_while_fluxond_runs_is_ebusy, 90)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_holder h;
	uint64_t dpid, put_id;
	struct fkv_nl nl;
	struct fkv *kv;
	char val[3000];

	FKV_LOAD("segment_mb=32");
	FKV_START_DAEMON();
	dpid = fkv_sysfs("daemon_pid");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), -EBUSY);
	FKV_ASSERT_NE(send_cmd(&nl, FLUXONKV_CMD_DAEMON_UNREGISTER), 0);
	FKV_ASSERT_EQ(drop_replica(&nl, 1), -EPERM);
	fkv_nl_close(&nl);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), dpid);

	/* fluxond is still the one answering */
	FKV_ASSERT_EQ(fkv_open(FKV_DEV_PATH, &kv), 0);
	fkv_pattern_fill(val, sizeof(val), "busy", 4, 1);
	FKV_ASSERT_EQ(fkv_put(kv, "busy", 4, val, sizeof(val), &put_id), 0);
	FKV_ASSERT_EQ(fkv_get(kv, "busy", 4, &h), 0);
	FKV_ASSERT_EQ(h.put_id, put_id);
	FKV_ASSERT_EQ(h.len, sizeof(val));
	FKV_ASSERT_PATTERN(h.data, h.len, "busy", 4, 1);
	FKV_ASSERT_EQ(fkv_holder_release(kv, &h), 0);
	FKV_ASSERT_EQ(fkv_delete(kv, "busy", 4), 0);
	fkv_close(kv);
	FKV_STOP_DAEMON();
}

/*
 * Answers missing REQ_ID or STATUS are EINVAL and do not complete the
 * upcall; the proper answer afterwards does, once.
 */
static void bad_answers_to_a_pending_put(struct fkv_nl *nl)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_PUT_START, .put_id = 5,
			    .has_flags = true };
	struct client c = client_start(CLIENT_PUT, "pending", 5000);
	struct client_result r;
	uint64_t req;

	req = expect_upcall(nl, FLUXONKV_CMD_PUT_START, tb);
	FKV_ASSERT(tb[FLUXONKV_A_KEY] && nla_len(tb[FLUXONKV_A_KEY]) == 7 &&
		   !memcmp(nla_data(tb[FLUXONKV_A_KEY]), "pending", 7),
		   "PUT_START carries the key");
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), 5000);

	a.has_status = true;			/* no REQ_ID */
	FKV_ASSERT_EQ(send_answer(nl, &a), -EINVAL);
	a.has_status = false;			/* no STATUS */
	a.has_req_id = true;
	a.req_id = req;
	FKV_ASSERT_EQ(send_answer(nl, &a), -EINVAL);
	a.has_req_id = false;			/* neither */
	FKV_ASSERT_EQ(send_answer(nl, &a), -EINVAL);
	/* a positive status is not an errno */
	a.has_req_id = a.has_status = true;
	a.status = 5;
	FKV_ASSERT_EQ(send_answer(nl, &a), -EINVAL);

	fkv_msleep(100);
	FKV_ASSERT(!client_finished(&c), "a bad answer completed the put");
	a.status = -ENOSPC;			/* the real answer */
	FKV_ASSERT_EQ(send_answer(nl, &a), 0);
	r = client_wait(&c);
	FKV_ASSERT_EQ(r.err, ENOSPC);
	/* answered once: now unknown */
	FKV_ASSERT_EQ(send_answer(nl, &a), -ENOENT);
}

FKV_TEST(answers_without_req_id_or_status_are_einval)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_nl nl;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	bad_answers_to_a_pending_put(&nl);
	FKV_ASSERT_EQ(fkv_sysfs("puts"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), 0);
	fkv_nl_close(&nl);
}

/* Unknown, zero, oversized and wrong-command request ids are ENOENT. */
static void stray_answers(struct fkv_nl *nl)
{
	static const uint64_t ids[] = { 0, 12345, 0xdead00000000ULL,
					UINT64_MAX };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_GET_START, .has_req_id = true,
			    .has_status = true, .status = -ENOENT };
	uint64_t errors = fkv_sysfs("upcall_errors");
	struct client_result r;
	struct client c;
	unsigned int i;
	uint64_t req;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		a.req_id = ids[i];
		FKV_EXPECT(send_answer(nl, &a) == -ENOENT, "REQ_ID %#" PRIx64,
			   ids[i]);
	}
	FKV_ASSERT_EQ(fkv_sysfs("upcall_errors"), errors + 4);

	/* a real id answered with another command's answer */
	c = client_start(CLIENT_GET, "stray", 0);
	req = expect_upcall(nl, FLUXONKV_CMD_GET_START, tb);
	a.req_id = req;
	a.cmd = FLUXONKV_CMD_DELETE;
	FKV_ASSERT_EQ(send_answer(nl, &a), -ENOENT);
	a.cmd = FLUXONKV_CMD_PUT_START;
	FKV_ASSERT_EQ(send_answer(nl, &a), -ENOENT);
	fkv_msleep(100);
	FKV_ASSERT(!client_finished(&c), "a wrong-command answer completed "
		   "the get");
	a.cmd = FLUXONKV_CMD_GET_START;
	FKV_ASSERT_EQ(send_answer(nl, &a), 0);
	r = client_wait(&c);
	FKV_ASSERT_EQ(r.err, ENOENT);
}

FKV_TEST(answer_to_unknown_req_id_is_enoent)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_nl nl;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	stray_answers(&nl);
	fkv_nl_close(&nl);
}

FKV_TEST(answer_after_the_request_timed_out_is_enoent)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_GET_START, .has_req_id = true,
			    .has_status = true, .status = -ENOENT };
	struct client_result r;
	struct client c;
	struct fkv_nl nl;
	int64_t t0;

	FKV_LOAD("segment_mb=32 request_timeout_ms=300");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	t0 = fkv_now_ms();
	c = client_start(CLIENT_GET, "late", 0);
	a.req_id = expect_upcall(&nl, FLUXONKV_CMD_GET_START, tb);
	r = client_wait(&c);
	FKV_ASSERT_EQ(r.err, ETIMEDOUT);
	FKV_ASSERT_GE(fkv_now_ms() - t0, 300);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_timeouts"), 1);
	FKV_ASSERT_EQ(send_answer(&nl, &a), -ENOENT);
	fkv_nl_close(&nl);
}

/* Attributes whose size does not match their type are refused. */
static void wrong_size_attributes(struct fkv_nl *nl)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint16_t two = 1;
	uint64_t eight = 0;
	uint64_t req;
	struct client c;
	struct client_result r;
	struct answer a = { .cmd = FLUXONKV_CMD_GET_START, .has_req_id = true,
			    .has_status = true, .status = -ENOENT };
	int ret;

	ret = send_raw_attr(nl, FLUXONKV_CMD_DROP_REPLICA, FLUXONKV_A_HANDLE,
			    &two, sizeof(two));
	FKV_EXPECT(ret == -EINVAL || ret == -ERANGE, "2-byte HANDLE: %s",
		   strerror(-ret));
	ret = send_raw_attr(nl, FLUXONKV_CMD_PUT_START, FLUXONKV_A_REQ_ID,
			    &two, sizeof(two));
	FKV_EXPECT(ret == -EINVAL || ret == -ERANGE, "2-byte REQ_ID: %s",
		   strerror(-ret));
	ret = send_raw_attr(nl, FLUXONKV_CMD_PUT_START, FLUXONKV_A_STATUS,
			    &eight, sizeof(eight));
	FKV_EXPECT(ret == -EINVAL || ret == -ERANGE, "8-byte STATUS: %s",
		   strerror(-ret));
	/* DROP_REPLICA without a HANDLE at all */
	ret = send_cmd(nl, FLUXONKV_CMD_DROP_REPLICA);
	FKV_EXPECT(ret == -EINVAL, "DROP_REPLICA without HANDLE: %s",
		   strerror(-ret));

	/* a pending upcall answered with a 4-byte REQ_ID stays pending */
	c = client_start(CLIENT_GET, "sizes", 0);
	req = expect_upcall(nl, FLUXONKV_CMD_GET_START, tb);
	{
		struct nl_msg *msg = fkv_nl_msg(nl, FLUXONKV_CMD_GET_START);
		uint32_t req32 = (uint32_t)req;

		FKV_ASSERT(msg);
		FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_REQ_ID, 4, &req32), 0);
		FKV_ASSERT_EQ(nla_put_s32(msg, FLUXONKV_A_STATUS, -ENOENT), 0);
		ret = fkv_nl_transact(nl, msg);
		FKV_EXPECT(ret == -EINVAL || ret == -ERANGE,
			   "4-byte REQ_ID answer: %s", strerror(-ret));
	}
	fkv_msleep(100);
	FKV_ASSERT(!client_finished(&c), "malformed answer completed the get");
	a.req_id = req;
	FKV_ASSERT_EQ(send_answer(nl, &a), 0);
	r = client_wait(&c);
	FKV_ASSERT_EQ(r.err, ENOENT);
}

FKV_TEST(attributes_of_the_wrong_size_are_refused)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_nl nl;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	wrong_size_attributes(&nl);
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), 0);
	fkv_nl_close(&nl);
}

static void unknown_handles(struct fkv_nl *nl)
{
	static const uint64_t handles[] = { 1, 0x123456789ULL,
					    0xffffffff00000001ULL,
					    UINT64_MAX };
	uint64_t ev = fkv_sysfs("evictions");
	unsigned int i;
	int ret;

	for (i = 0; i < sizeof(handles) / sizeof(handles[0]); i++)
		FKV_EXPECT(drop_replica(nl, handles[i]) == -ENOENT,
			   "DROP_REPLICA %#" PRIx64, handles[i]);
	/* handles are > 0: zero is refused whatever the reason given */
	ret = drop_replica(nl, 0);	/* left out by send_answer */
	FKV_EXPECT(ret == -EINVAL, "DROP_REPLICA without handle: %s",
		   strerror(-ret));
	ret = send_raw_attr(nl, FLUXONKV_CMD_DROP_REPLICA, FLUXONKV_A_HANDLE,
			    &(uint64_t){ 0 }, 8);
	FKV_EXPECT(ret == -EINVAL || ret == -ERANGE || ret == -ENOENT,
		   "DROP_REPLICA of handle 0: %s", strerror(-ret));
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), ev);
}

FKV_TEST(drop_replica_of_unknown_handle_is_enoent)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_nl nl;

	FKV_LOAD("segment_mb=32");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	unknown_handles(&nl);
	fkv_nl_close(&nl);
}

/*
 * Play a whole put of the pattern of (K, VLEN) as the master: PUT_START ->
 * PUT_ID, PUT_DONE -> published.  Returns the replica's handle.
 */
static uint64_t fake_master_put(struct fkv_nl *nl, const char *k,
				size_t vlen, uint64_t put_id)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .has_req_id = true, .has_status = true,
			    .has_flags = true };
	struct client c = client_start(CLIENT_PUT, k, vlen);
	struct client_result r;
	uint64_t handle;

	a.cmd = FLUXONKV_CMD_PUT_START;
	a.req_id = expect_upcall(nl, FLUXONKV_CMD_PUT_START, tb);
	a.put_id = put_id;
	FKV_ASSERT_EQ(send_answer(nl, &a), 0);

	a.cmd = FLUXONKV_CMD_PUT_DONE;
	a.req_id = expect_upcall(nl, FLUXONKV_CMD_PUT_DONE, tb);
	FKV_ASSERT(tb[FLUXONKV_A_KEY] &&
		   nla_len(tb[FLUXONKV_A_KEY]) == (int)strlen(k) &&
		   !memcmp(nla_data(tb[FLUXONKV_A_KEY]), k, strlen(k)),
		   "PUT_DONE carries the key");
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), vlen);
	handle = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	FKV_ASSERT(handle && handle != UINT64_MAX, "PUT_DONE handle");
	a.put_id = 0;
	a.flags = FLUXONKV_PUT_F_PUBLISHED;
	FKV_ASSERT_EQ(send_answer(nl, &a), 0);
	r = client_wait(&c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, put_id);
	return handle;
}

/*
 * After a put the master published, the value is served from the local
 * index; dropping its handle works once and then is ENOENT.
 */
FKV_TEST(drop_replica_twice_is_enoent_the_second_time)
{
	const char *k = "fake-master";
	const size_t vlen = 9000;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fluxonkv_get g;
	const uint8_t *map;
	uint64_t handle, size;
	struct answer a;
	struct fkv_nl nl;
	int fd, ret;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	handle = fake_master_put(&nl, k, vlen, 41);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);

	/* served by the module's local index: no upcall needed */
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	map = fkv_dev_map(fd, &size);
	FKV_ASSERT(map != MAP_FAILED);
	FKV_ASSERT_EQ(fkv_dev_get(fd, k, strlen(k), &g), 0);
	FKV_ASSERT_EQ(g.put_id, 41);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_PATTERN(map + g.offset, g.len, k, strlen(k), 0);

	/* a flag the ABI does not define is refused, nothing dropped */
	a = (struct answer){ .cmd = FLUXONKV_CMD_DROP_REPLICA,
			     .handle = handle, .has_flags = true,
			     .flags = 1U << 7 };
	ret = send_answer(&nl, &a);
	FKV_EXPECT(ret == -EINVAL || ret == -ERANGE,
		   "DROP_REPLICA with flag bit 7: %s", strerror(-ret));
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);

	/* a drop for overwrite/delete is not an eviction */
	FKV_ASSERT_EQ(drop_replica(&nl, handle), 0);
	FKV_ASSERT_EQ(drop_replica(&nl, handle), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replica_drops"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), 0);
	/* the holder still pins the bytes */
	FKV_ASSERT_PATTERN(map + g.offset, g.len, k, strlen(k), 0);
	FKV_ASSERT_GE(fkv_sysfs("segment_used_bytes"), FKV_ALIGN_UP(vlen));
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	munmap((void *)map, size);
	close(fd);
	fkv_nl_close(&nl);
}

FKV_TEST(drop_flagged_evicted_counts_an_eviction_and_unindexes)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_DROP_REPLICA,
			    .has_flags = true,
			    .flags = FLUXONKV_DROP_F_EVICTED };
	struct fluxonkv_get g;
	uint64_t h1, h2;
	struct fkv_nl nl;
	int fd;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	h1 = fake_master_put(&nl, "ev-a", 4096, 1);
	h2 = fake_master_put(&nl, "ev-b", 8192, 2);
	FKV_ASSERT_NE(h1, h2);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 2);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), 4096 + 8192);

	a.handle = h1;
	FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("replica_drops"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 8192);

	/* the other key is still served locally, without an upcall */
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(fkv_dev_get(fd, "ev-b", 4, &g), 0);
	FKV_ASSERT_EQ(g.put_id, 2);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	close(fd);

	a.handle = h2;
	FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
	FKV_ASSERT_EQ(fkv_sysfs("evictions"), 2);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	fkv_nl_close(&nl);
}

/* A published put older than the indexed version never replaces it. */
FKV_TEST(late_publication_of_an_older_version_does_not_win)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fluxonkv_get g;
	uint64_t h5, h3;
	struct fkv_nl nl;
	int fd;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	h5 = fake_master_put(&nl, "order", 5000, 5);
	h3 = fake_master_put(&nl, "order", 7000, 3);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 2);

	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(fkv_dev_get(fd, "order", 5, &g), 0);	/* local */
	FKV_ASSERT_EQ(g.put_id, 5);
	FKV_ASSERT_EQ(g.len, 5000);
	FKV_ASSERT_EQ(fkv_dev_release(fd, g.holder_id), 0);
	close(fd);

	FKV_ASSERT_EQ(drop_replica(&nl, h5), 0);
	FKV_ASSERT_EQ(drop_replica(&nl, h3), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	fkv_nl_close(&nl);
}

/*
 * Answer a pending GET_START for "routed" with the given replica.  If the
 * module refuses it (@stale), it must revoke exactly that handle as a
 * memory source and ask again; the second GET_START is answered -ENOENT.
 */
static struct client_result routed_get(struct fkv_nl *nl, uint64_t handle,
				       uint64_t put_id, uint64_t len,
				       bool stale)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_GET_START, .has_req_id = true,
			    .has_status = true, .put_id = put_id,
			    .handle = handle, .len = len,
			    .source = FLUXONKV_SOURCE_MEMORY };
	struct answer ok = { .has_req_id = true, .has_status = true };
	struct client c = client_start(CLIENT_GET, "routed", 0);

	a.req_id = expect_upcall(nl, FLUXONKV_CMD_GET_START, tb);
	FKV_ASSERT_EQ(send_answer(nl, &a), 0);
	if (stale) {
		ok.cmd = FLUXONKV_CMD_GET_REVOKE;
		ok.req_id = expect_upcall(nl, FLUXONKV_CMD_GET_REVOKE, tb);
		FKV_ASSERT(tb[FLUXONKV_A_SOURCE] &&
			   fkv_nla_u32(tb[FLUXONKV_A_SOURCE]) ==
			   FLUXONKV_SOURCE_MEMORY, "revoke of a memory source");
		FKV_ASSERT(tb[FLUXONKV_A_HANDLE] &&
			   fkv_nla_u64(tb[FLUXONKV_A_HANDLE]) == handle,
			   "revoke names the refused handle");
		FKV_ASSERT_EQ(send_answer(nl, &ok), 0);
		ok.cmd = FLUXONKV_CMD_GET_START;
		ok.status = -ENOENT;
		ok.req_id = expect_upcall(nl, FLUXONKV_CMD_GET_START, tb);
		FKV_ASSERT_EQ(send_answer(nl, &ok), 0);
	}
	return client_wait(&c);
}

/*
 * A get the master routes by handle is served only if that handle is a
 * live replica of that key and version: the master cannot make a client
 * read other bytes.
 */
FKV_TEST(get_routed_by_handle_is_checked_against_key_and_version)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client_result r;
	uint64_t h5, h3, hx;
	struct fkv_nl nl;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	h5 = fake_master_put(&nl, "routed", 5000, 5);
	h3 = fake_master_put(&nl, "routed", 7000, 3);	/* not indexed */
	hx = fake_master_put(&nl, "other", 6000, 6);
	/* without a local replica, gets go to the master */
	FKV_ASSERT_EQ(drop_replica(&nl, h5), 0);

	r = routed_get(&nl, h3, 3, 7000, false);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 3);
	FKV_ASSERT_EQ(r.len, 7000);
	FKV_ASSERT(r.intact, "routed get did not return the replica's bytes");

	r = routed_get(&nl, h3, 4, 7000, true);	/* wrong version */
	FKV_ASSERT_EQ(r.err, ENOENT);
	r = routed_get(&nl, hx, 6, 6000, true);	/* another key's replica */
	FKV_ASSERT_EQ(r.err, ENOENT);
	r = routed_get(&nl, h5, 5, 5000, true);	/* a dropped replica */
	FKV_ASSERT_EQ(r.err, ENOENT);
	r = routed_get(&nl, h3 + (1ULL << 32), 3, 7000, true);	/* no such handle */
	FKV_ASSERT_EQ(r.err, ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	FKV_ASSERT_EQ(drop_replica(&nl, h3), 0);
	FKV_ASSERT_EQ(drop_replica(&nl, hx), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	fkv_nl_close(&nl);
}

FKV_TEST_TIMEOUT(module_serves_put_get_after_protocol_abuse, 120)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_holder h;
	uint64_t put_id;
	struct fkv_nl nl;
	struct fkv *kv;
	static char val[200000];

	FKV_REQUIRE_DAEMON();
	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	run_unprivileged_checks();
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	bad_answers_to_a_pending_put(&nl);
	stray_answers(&nl);
	wrong_size_attributes(&nl);
	unknown_handles(&nl);
	fkv_nl_close(&nl);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);

	FKV_START_DAEMON();
	FKV_ASSERT_EQ(fkv_open(FKV_DEV_PATH, &kv), 0);
	fkv_pattern_fill(val, sizeof(val), "after", 5, 3);
	FKV_ASSERT_EQ(fkv_put(kv, "after", 5, val, sizeof(val), &put_id), 0);
	FKV_ASSERT_EQ(fkv_get(kv, "after", 5, &h), 0);
	FKV_ASSERT_EQ(h.put_id, put_id);
	FKV_ASSERT_EQ(h.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(h.len, sizeof(val));
	FKV_ASSERT_PATTERN(h.data, h.len, "after", 5, 3);
	FKV_ASSERT_EQ(fkv_holder_release(kv, &h), 0);
	FKV_ASSERT_EQ(fkv_delete(kv, "after", 5), 0);
	FKV_ASSERT_EQ(fkv_get(kv, "after", 5, &h), -ENOENT);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	fkv_close(kv);
	FKV_STOP_DAEMON();
}

/* Register with FLAGS; the reply's attributes land in tb. */
static int register_daemon_flags(struct fkv_nl *nl, uint32_t flags,
				 struct nlattr **tb)
{
	int ret = send_raw_attr(nl, FLUXONKV_CMD_DAEMON_REGISTER,
				FLUXONKV_A_FLAGS, &flags, sizeof(flags));

	if (ret)
		return ret;
	FKV_ASSERT_EQ(fkv_nl_next(nl, FLUXONKV_CMD_DAEMON_REGISTER, tb, 2000),
		      0);
	return 0;
}

/*
 * A local-routes master (REGISTER_F_LOCAL_ROUTES): a get of a key the
 * module has no route for is answered ENOENT with no GET_START.  But while
 * an overwrite is between the master's DROP_REPLICA of the old version and
 * its PUT_DONE answer publishing the new one, neither is indexed although
 * the master routes to the new one: that get must ask the master, not miss.
 */
FKV_TEST(local_routes_answer_misses_alone_but_ask_during_an_overwrite)
{
	struct answer a = { .has_req_id = true, .has_status = true,
			    .has_flags = true };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t h1, h2, misses0, unsure0;
	struct client put, get;
	struct client_result r;
	struct fkv_nl nl;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	/* an unknown flag is refused by the policy */
	FKV_ASSERT_EQ(register_daemon_flags(&nl, 1U << 8, tb), -EINVAL);
	FKV_ASSERT_EQ(register_daemon_flags(&nl,
					    FLUXONKV_REGISTER_F_LOCAL_ROUTES,
					    tb), 0);
	FKV_ASSERT(tb[FLUXONKV_A_FLAGS] && fkv_nla_u32(tb[FLUXONKV_A_FLAGS]) ==
		   FLUXONKV_REGISTER_F_LOCAL_ROUTES, "reply echoes the flags");
	h1 = fake_master_put(&nl, "ow", 5000, 1);

	/* a key nobody put: ENOENT from the module alone */
	misses0 = fkv_sysfs("local_misses");
	get = client_start(CLIENT_GET, "never-put", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("local_misses") - misses0, 1);
	FKV_ASSERT(fkv_nl_next(&nl, FLUXONKV_CMD_GET_START, tb, 300) != 0,
		   "a local miss still sent GET_START");

	/* overwrite: PUT_DONE pending, the old version already dropped */
	put = client_start(CLIENT_PUT, "ow", 6000);
	a.cmd = FLUXONKV_CMD_PUT_START;
	a.req_id = expect_upcall(&nl, FLUXONKV_CMD_PUT_START, tb);
	a.put_id = 2;
	a.flags = 0;
	FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
	a.req_id = expect_upcall(&nl, FLUXONKV_CMD_PUT_DONE, tb);
	h2 = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	FKV_ASSERT_EQ(drop_replica(&nl, h1), 0);

	unsure0 = fkv_sysfs("local_unsure");
	get = client_start(CLIENT_GET, "ow", 0);
	{
		struct answer g = { .cmd = FLUXONKV_CMD_GET_START,
				    .has_req_id = true, .has_status = true,
				    .put_id = 2, .handle = h2, .len = 6000,
				    .source = FLUXONKV_SOURCE_MEMORY };

		g.req_id = expect_upcall(&nl, FLUXONKV_CMD_GET_START, tb);
		FKV_ASSERT_EQ(send_answer(&nl, &g), 0);
	}
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 2);
	FKV_ASSERT(r.intact, "the mid-overwrite get's bytes");
	FKV_ASSERT_EQ(fkv_sysfs("local_unsure") - unsure0, 1);

	a.cmd = FLUXONKV_CMD_PUT_DONE;
	a.put_id = 0;
	a.flags = FLUXONKV_PUT_F_PUBLISHED;
	FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 2);

	/* published: served from the index again, no upcall */
	get = client_start(CLIENT_GET, "ow", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 2);
	FKV_ASSERT(fkv_nl_next(&nl, FLUXONKV_CMD_GET_START, tb, 300) != 0,
		   "an indexed key sent GET_START");

	FKV_ASSERT_EQ(drop_replica(&nl, h2), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	fkv_nl_close(&nl);
}

/*
 * The test as a master of a module (loaded with @params) whose SSD tier
 * is 16 MiB of the scratch disk ssd2 (a raw block device shard); skips
 * without it.  Registered with @flags; returns the device fd to close.
 */
static int ssd_master_setup(struct fkv_nl *nl, const char *params,
			    uint32_t flags, struct nlattr **tb)
{
	char disk[128];
	int dev, sfd;

	if (fkv_scratch_disk("ssd2", disk, sizeof(disk)))
		FKV_SKIP("no scratch disk ssd2: run the guest with "
			 "tools/vm/run --disk ssd2:256M");
	FKV_LOAD(params);
	nl_open(nl);
	FKV_ASSERT_EQ(register_daemon_flags(nl, flags, tb), 0);
	dev = fkv_dev_open();
	FKV_ASSERT(dev >= 0);
	sfd = open(disk, O_RDWR | O_DIRECT | O_CLOEXEC);
	FKV_ASSERT(sfd >= 0, "open %s: %s", disk, strerror(errno));
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, sfd, 0, 16 * FKV_MIB, 0, NULL),
		      0);
	close(sfd);
	return dev;
}

/*
 * A persist whose SSD_COMMIT the master never answers: the module cannot
 * know whether the master took the SSD route, so it forgets the entry
 * (space only) and reports it in SSD_EVICTED, which clears a route the
 * master may have taken.  Once the DRAM copy goes, nothing routes to the
 * SSD copy: a local-routes get misses without asking.  Needs the scratch
 * disk ssd2 (raw block device shard).
 */
FKV_TEST(ssd_commit_without_an_answer_is_forgotten_on_both_sides)
{
	struct answer a = { .has_req_id = true, .has_status = true,
			    .has_flags = true };
	struct nlattr *tb[FLUXONKV_A_MAX + 1], *etb[FLUXONKV_A_MAX + 1];
	uint64_t h, commit_id;
	struct client put, get;
	struct client_result r;
	struct fkv_nl nl;
	int dev;

	dev = ssd_master_setup(&nl, "segment_mb=32 request_timeout_ms=1000",
			       FLUXONKV_REGISTER_F_LOCAL_ROUTES, tb);

	put = client_start(CLIENT_PUT, "nc", 5000);
	a.cmd = FLUXONKV_CMD_PUT_START;
	a.req_id = expect_upcall(&nl, FLUXONKV_CMD_PUT_START, tb);
	a.put_id = 1;
	a.flags = FLUXONKV_PUT_F_PERSIST;
	FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
	a.cmd = FLUXONKV_CMD_PUT_DONE;
	a.req_id = expect_upcall(&nl, FLUXONKV_CMD_PUT_DONE, tb);
	h = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	a.put_id = 0;
	a.flags = FLUXONKV_PUT_F_PUBLISHED;
	FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, 0);

	/* the persist asks; nobody answers within request_timeout_ms */
	commit_id = expect_upcall(&nl, FLUXONKV_CMD_SSD_COMMIT, tb);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), 1);
	FKV_ASSERT_EQ(fkv_nl_next(&nl, FLUXONKV_CMD_SSD_EVICTED, tb, 5000), 0);
	FKV_ASSERT(tb[FLUXONKV_A_ENTRY], "SSD_EVICTED without ENTRY");
	FKV_ASSERT_EQ(nla_parse_nested(etb, FLUXONKV_A_MAX,
				       tb[FLUXONKV_A_ENTRY], NULL), 0);
	FKV_ASSERT(etb[FLUXONKV_A_KEY] && nla_len(etb[FLUXONKV_A_KEY]) == 2 &&
		   !memcmp(nla_data(etb[FLUXONKV_A_KEY]), "nc", 2),
		   "SSD_EVICTED names the key");
	FKV_ASSERT_EQ(fkv_nla_u64(etb[FLUXONKV_A_PUT_ID]), 1);
	FKV_ASSERT_GT(fkv_sysfs("upcall_timeouts"), 0);

	/* a late PUBLISHED answer finds nobody waiting */
	a.cmd = FLUXONKV_CMD_SSD_COMMIT;
	a.req_id = commit_id;
	a.flags = FLUXONKV_SSD_F_PUBLISHED;
	FKV_ASSERT_EQ(send_answer(&nl, &a), -ENOENT);

	/* without its DRAM copy the key is gone, and the module knows it */
	FKV_ASSERT_EQ(drop_replica(&nl, h), 0);
	get = client_start(CLIENT_GET, "nc", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, ENOENT);
	FKV_ASSERT(fkv_nl_next(&nl, FLUXONKV_CMD_GET_START, tb, 300) != 0,
		   "a forgotten SSD entry still made the module ask");
	FKV_ASSERT_EQ(fkv_sysfs("hits_ssd"), 0);

	close(dev);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	fkv_nl_close(&nl);
}

/*
 * The one ENTRY of the PUT_LOCAL message in tb: {KEY @k, PUT_ID, LEN, and
 * DROPPED @dropped if not 0}; its HANDLE.
 */
static uint64_t expect_put_local_entry_flags(struct nlattr **tb,
					     const char *k, uint64_t put_id,
					     uint64_t len, uint64_t dropped,
					     uint32_t flags)
{
	struct nlattr *etb[FLUXONKV_A_MAX + 1];

	FKV_ASSERT(tb[FLUXONKV_A_ENTRY], "PUT_LOCAL without ENTRY");
	FKV_ASSERT_EQ(nla_parse_nested(etb, FLUXONKV_A_MAX,
				       tb[FLUXONKV_A_ENTRY], NULL), 0);
	FKV_ASSERT(etb[FLUXONKV_A_KEY] &&
		   nla_len(etb[FLUXONKV_A_KEY]) == (int)strlen(k) &&
		   !memcmp(nla_data(etb[FLUXONKV_A_KEY]), k, strlen(k)),
		   "entry names %s", k);
	FKV_ASSERT_EQ(fkv_nla_u64(etb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u64(etb[FLUXONKV_A_LEN]), len);
	FKV_ASSERT_EQ(fkv_nla_u32(etb[FLUXONKV_A_FLAGS]), flags);
	if (dropped)
		FKV_ASSERT_EQ(fkv_nla_u64(etb[FLUXONKV_A_DROPPED]), dropped);
	else
		FKV_ASSERT(!etb[FLUXONKV_A_DROPPED], "nothing replaced");
	FKV_ASSERT(etb[FLUXONKV_A_HANDLE] &&
		   fkv_nla_u64(etb[FLUXONKV_A_HANDLE]) != 0, "entry has a handle");
	return fkv_nla_u64(etb[FLUXONKV_A_HANDLE]);
}

/* ... of a put with no SSD write (FLAGS 0). */
static uint64_t expect_put_local_entry(struct nlattr **tb, const char *k,
				       uint64_t put_id, uint64_t len,
				       uint64_t dropped)
{
	return expect_put_local_entry_flags(tb, k, put_id, len, dropped, 0);
}

/*
 * A master that delegates puts (REGISTER_F_LOCAL_PUTS): a put is neither
 * a PUT_START nor a PUT_DONE, it is readable when it returns, and the
 * master reads of it in a PUT_LOCAL note that reaches it before anything
 * the module sends afterwards -- here a DELETE started the moment the put
 * returned.  Placement and local puts exclude each other.
 */
FKV_TEST(local_puts_are_published_by_the_module_and_noted_before_what_follows)
{
	struct answer a = { .has_req_id = true, .has_status = true };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t h1, h2, put1, put2, local0;
	struct client put, get, del;
	struct client_result r;
	struct fkv_nl nl;

	FKV_LOAD("segment_mb=32 request_timeout_ms=8000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon_flags(&nl, FLUXONKV_REGISTER_F_LOCAL_PUTS |
					    FLUXONKV_REGISTER_F_PLACEMENT, tb),
		      -EINVAL);
	FKV_ASSERT_EQ(register_daemon_flags(&nl,
					    FLUXONKV_REGISTER_F_LOCAL_ROUTES |
					    FLUXONKV_REGISTER_F_LOCAL_PUTS, tb),
		      0);
	FKV_ASSERT(tb[FLUXONKV_A_FLAGS] && fkv_nla_u32(tb[FLUXONKV_A_FLAGS]) ==
		   (FLUXONKV_REGISTER_F_LOCAL_ROUTES |
		    FLUXONKV_REGISTER_F_LOCAL_PUTS), "reply echoes the flags");
	local0 = fkv_sysfs("puts_local");

	/* nobody answers anything, yet the put completes and reads back */
	put = client_start(CLIENT_PUT, "lp", 5000);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, 0);
	put1 = r.put_id;
	FKV_ASSERT(put1 > 0, "a put_id");
	FKV_ASSERT_EQ(fkv_sysfs("puts_local"), local0 + 1);
	get = client_start(CLIENT_GET, "lp", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, put1);
	FKV_ASSERT(r.intact, "the value reads back");
	FKV_ASSERT_EQ(fkv_nl_next(&nl, FLUXONKV_CMD_PUT_LOCAL, tb, 5000), 0);
	h1 = expect_put_local_entry(tb, "lp", put1, 5000, 0);
	FKV_ASSERT(fkv_nl_next(&nl, FLUXONKV_CMD_PUT_START, tb, 0) != 0,
		   "a local put asked PUT_START");

	/* an overwrite, and a delete the moment it returned */
	put = client_start(CLIENT_PUT, "lp", 6000);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, 0);
	put2 = r.put_id;
	FKV_ASSERT_GT(put2, put1);
	del = client_start(CLIENT_DELETE, "lp", 0);
	a.cmd = FLUXONKV_CMD_DELETE;
	a.req_id = expect_upcall(&nl, FLUXONKV_CMD_DELETE, tb);
	/* received before the DELETE: already in the test's queue */
	FKV_ASSERT_EQ(fkv_nl_next(&nl, FLUXONKV_CMD_PUT_LOCAL, tb, 0), 0);
	/* it replaced h1 and dropped it: the note says so */
	h2 = expect_put_local_entry(tb, "lp", put2, 6000, h1);
	FKV_ASSERT(h2 != h1, "a new replica");
	a.put_id = put2;
	FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
	r = client_wait(&del);
	FKV_ASSERT_EQ(r.err, 0);
	get = client_start(CLIENT_GET, "lp", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, ENOENT);
	/* h1 is gone already; h2 goes as a real master would drop it */
	FKV_ASSERT_EQ(drop_replica(&nl, h1), -ENOENT);
	FKV_ASSERT_EQ(drop_replica(&nl, h2), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	fkv_nl_close(&nl);
}

/*
 * A local put racing the delegating daemon's detach (issue 29).  The put
 * looked at the daemon's flags (local puts delegated), then at the daemon
 * generation; the detach moved the generation before it cleared the
 * flags, so a put that read the flags before the detach and the
 * generation after it published under the generation of a daemon that
 * was gone -- after the teardown had dropped that daemon's replicas: an
 * orphan no master ever heard of (its PUT_LOCAL note reached nobody),
 * served by the index and never evicted.  debugfs put_local_delay_ms
 * holds the put between the two looks while the master's socket closes.
 * The put fails (ENOTCONN), nothing stays, and the next master's module
 * has no value for the key.
 */
FKV_TEST(a_local_put_racing_the_daemons_detach_leaves_no_orphan)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client_result r;
	struct client put, get;
	long long delays;
	struct fkv_nl nl;
	uint64_t t0;

	FKV_LOAD("segment_mb=32");
	if (fkv_debugfs_set("put_local_delay_ms", 0))
		FKV_SKIP("no debugfs put_local_delay_ms");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon_flags(&nl,
					    FLUXONKV_REGISTER_F_LOCAL_ROUTES |
					    FLUXONKV_REGISTER_F_LOCAL_PUTS, tb),
		      0);
	delays = fkv_debugfs_u32("put_local_delays");
	FKV_ASSERT_EQ(fkv_debugfs_set("put_local_delay_ms", 1500), 0);
	put = client_start(CLIENT_PUT, "orphan", 5000);
	t0 = fkv_now_ms();
	while (fkv_debugfs_u32("put_local_delays") == delays) {
		FKV_ASSERT(fkv_now_ms() - t0 < 10000, "the put never came");
		fkv_msleep(5);
	}
	/* the put saw local puts delegated: now the master goes */
	FKV_ASSERT_EQ(send_cmd(&nl, FLUXONKV_CMD_DAEMON_UNREGISTER), 0);
	fkv_nl_close(&nl);
	FKV_ASSERT_EQ(fkv_debugfs_u32("put_local_delays"), delays + 1);
	r = client_wait(&put);
	FKV_ASSERT_EQ(fkv_debugfs_set("put_local_delay_ms", 0), 0);
	fkv_diag("put after the detach: %s, replicas %" PRIu64,
		 r.err ? strerror(r.err) : "published", fkv_sysfs("replicas"));
	FKV_ASSERT_EQ(r.err, ENOTCONN);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);

	/* a new master: the module answers the miss itself, no orphan */
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon_flags(&nl,
					    FLUXONKV_REGISTER_F_LOCAL_ROUTES |
					    FLUXONKV_REGISTER_F_LOCAL_PUTS, tb),
		      0);
	get = client_start(CLIENT_GET, "orphan", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, ENOENT);
	fkv_nl_close(&nl);
}

/* Answer the PUT of K (VLEN bytes) with STATUS, PUT_ID and FLAGS. */
static uint64_t answer_put(struct fkv_nl *nl, const char *k, size_t vlen,
			   int32_t status, uint64_t put_id, uint32_t flags,
			   int want)
{
	struct answer a = { .cmd = FLUXONKV_CMD_PUT, .has_req_id = true,
			    .has_status = true, .status = status,
			    .put_id = put_id, .has_flags = true,
			    .flags = flags };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t handle;

	a.req_id = expect_upcall(nl, FLUXONKV_CMD_PUT, tb);
	FKV_ASSERT(tb[FLUXONKV_A_KEY] &&
		   nla_len(tb[FLUXONKV_A_KEY]) == (int)strlen(k) &&
		   !memcmp(nla_data(tb[FLUXONKV_A_KEY]), k, strlen(k)),
		   "PUT names its key");
	FKV_ASSERT(tb[FLUXONKV_A_LEN] &&
		   fkv_nla_u64(tb[FLUXONKV_A_LEN]) == vlen, "PUT LEN");
	FKV_ASSERT(!tb[FLUXONKV_A_PUT_ID], "the master numbers a PUT");
	FKV_ASSERT(tb[FLUXONKV_A_HANDLE], "PUT names its replica");
	handle = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	FKV_ASSERT(handle, "a handle");
	FKV_ASSERT_EQ(send_answer(nl, &a), want);
	return handle;
}

/*
 * A cluster's master takes a put in one message (REGISTER_F_ONE_TRIP): no
 * PUT_START, no PUT_DONE; one PUT after the value is in, and the answer's
 * PUT_ID is the version the put returns and a get reads.  A failed,
 * superseded or malformed answer leaves the previous version readable;
 * one that comes after the putter gave up still decides.  The put flags
 * stay as registered while the daemon is.
 */
FKV_TEST(one_trip_puts_ask_once_and_take_the_masters_put_id)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client put, get;
	struct client_result r;
	uint64_t h1, h, one0, used;
	struct fkv_nl nl;

	FKV_LOAD("segment_mb=32 request_timeout_ms=1500");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon_flags(&nl, FLUXONKV_REGISTER_F_LOCAL_PUTS |
					    FLUXONKV_REGISTER_F_ONE_TRIP, tb),
		      -EINVAL);
	FKV_ASSERT_EQ(register_daemon_flags(&nl, FLUXONKV_REGISTER_F_PLACEMENT |
					    FLUXONKV_REGISTER_F_ONE_TRIP, tb),
		      0);
	FKV_ASSERT(tb[FLUXONKV_A_FLAGS] && fkv_nla_u32(tb[FLUXONKV_A_FLAGS]) ==
		   (FLUXONKV_REGISTER_F_PLACEMENT |
		    FLUXONKV_REGISTER_F_ONE_TRIP), "reply echoes the flags");
	/* who numbers puts does not change under a registered daemon */
	FKV_ASSERT_EQ(register_daemon_flags(&nl, FLUXONKV_REGISTER_F_PLACEMENT,
					    tb), -EBUSY);
	FKV_ASSERT_EQ(register_daemon_flags(&nl, FLUXONKV_REGISTER_F_PLACEMENT |
					    FLUXONKV_REGISTER_F_ONE_TRIP, tb),
		      0);
	one0 = fkv_sysfs("puts_one_trip");

	put = client_start(CLIENT_PUT, "ot", 5000);
	h1 = answer_put(&nl, "ot", 5000, 0, 77, FLUXONKV_PUT_F_PUBLISHED, 0);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 77);
	FKV_ASSERT(fkv_nl_next(&nl, FLUXONKV_CMD_PUT_START, tb, 0) != 0,
		   "a one-trip put asked PUT_START");
	FKV_ASSERT(fkv_nl_next(&nl, FLUXONKV_CMD_PUT_DONE, tb, 0) != 0,
		   "a one-trip put asked PUT_DONE");
	FKV_ASSERT_EQ(fkv_sysfs("puts_one_trip"), one0 + 1);
	get = client_start(CLIENT_GET, "ot", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 77);
	FKV_ASSERT(r.intact, "the value reads back");
	used = fkv_sysfs("segment_used_bytes");

	/*
	 * The master publishes before it answers: a get routed to the new
	 * replica meanwhile (GET_START naming its handle and the put_id the
	 * answer will carry) reads it.
	 */
	{
		struct answer a = { .has_req_id = true, .has_status = true };

		put = client_start(CLIENT_PUT, "ot2", 3000);
		a.req_id = expect_upcall(&nl, FLUXONKV_CMD_PUT, tb);
		h = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
		get = client_start(CLIENT_GET, "ot2", 0);
		{
			struct answer g = { .cmd = FLUXONKV_CMD_GET_START,
					    .has_req_id = true,
					    .has_status = true, .put_id = 80,
					    .handle = h, .len = 3000,
					    .source = FLUXONKV_SOURCE_MEMORY };

			g.req_id = expect_upcall(&nl, FLUXONKV_CMD_GET_START,
						 tb);
			FKV_ASSERT_EQ(send_answer(&nl, &g), 0);
		}
		r = client_wait(&get);
		FKV_ASSERT_EQ(r.err, 0);
		FKV_ASSERT_EQ(r.put_id, 80);
		FKV_ASSERT(r.intact, "the unanswered put's value reads back");
		a.cmd = FLUXONKV_CMD_PUT;
		a.put_id = 80;
		a.has_flags = true;
		a.flags = FLUXONKV_PUT_F_PUBLISHED;
		FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
		r = client_wait(&put);
		FKV_ASSERT_EQ(r.err, 0);
		FKV_ASSERT_EQ(r.put_id, 80);
		FKV_ASSERT_EQ(drop_replica(&nl, h), 0);
		one0++;		/* counted below with the others */
	}
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", used);

	/* refused, superseded, published without a number: 77 stays */
	put = client_start(CLIENT_PUT, "ot", 6000);
	answer_put(&nl, "ot", 6000, -ENOSPC, 0, 0, 0);
	FKV_ASSERT_EQ(client_wait(&put).err, ENOSPC);
	put = client_start(CLIENT_PUT, "ot", 6000);
	answer_put(&nl, "ot", 6000, 0, 70, 0, 0);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 70);
	put = client_start(CLIENT_PUT, "ot", 6000);
	answer_put(&nl, "ot", 6000, 0, 0, FLUXONKV_PUT_F_PUBLISHED, -EPROTO);
	FKV_ASSERT_EQ(client_wait(&put).err, EPROTO);
	/* the superseded one succeeded: an older version, never readable */
	FKV_ASSERT_EQ(fkv_sysfs("puts_one_trip"), one0 + 2);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", used);
	get = client_start(CLIENT_GET, "ot", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 77);

	/* answered after the putter timed out: published all the same */
	put = client_start(CLIENT_PUT, "ot", 7000);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, ETIMEDOUT);
	FKV_ASSERT(fkv_nl_next(&nl, FLUXONKV_CMD_CANCEL, tb, 0) != 0,
		   "a PUT was cancelled: its answer decides");
	h = answer_put(&nl, "ot", 7000, 0, 90, FLUXONKV_PUT_F_PUBLISHED, 0);
	FKV_ASSERT(h != h1, "a new replica");
	get = client_start(CLIENT_GET, "ot", 0);
	r = client_wait(&get);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 90);
	FKV_ASSERT_EQ(r.len, 7000);
	/* the master drops the replaced version itself */
	FKV_ASSERT_EQ(drop_replica(&nl, h1), 0);
	FKV_ASSERT_EQ(drop_replica(&nl, h), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	fkv_nl_close(&nl);
}

/*
 * A local put retires its key's older SSD routes when it publishes, not in
 * order with the master's answers: an SSD_COMMIT of version N answered
 * PUBLISHED after put N+1 was published must not route N's SSD copy, or
 * once N+1's DRAM replica is evicted a get would return N (and no delete
 * could remove it: the master has no route).
 */
FKV_TEST(ssd_commit_of_an_older_version_answered_late_routes_nothing)
{
	struct answer a = { .has_req_id = true, .has_status = true,
			    .has_flags = true };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t h1, h2, put1, put2, commit1;
	struct client put, get;
	struct client_result r;
	struct fkv_nl nl;
	int dev;

	dev = ssd_master_setup(&nl, "segment_mb=32 request_timeout_ms=8000",
			       FLUXONKV_REGISTER_F_LOCAL_ROUTES |
			       FLUXONKV_REGISTER_F_LOCAL_PUTS, tb);

	/* version 1, persisting: its SSD_COMMIT waits for our answer */
	put = client_start(CLIENT_PUT, "rt", 5000);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, 0);
	put1 = r.put_id;
	FKV_ASSERT_EQ(fkv_nl_next(&nl, FLUXONKV_CMD_PUT_LOCAL, tb, 5000), 0);
	h1 = expect_put_local_entry_flags(tb, "rt", put1, 5000, 0,
					  FLUXONKV_PUT_F_PERSIST);
	commit1 = expect_upcall(&nl, FLUXONKV_CMD_SSD_COMMIT, tb);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put1);

	/*
	 * Version 2 is published meanwhile (and replaces version 1); too
	 * big for the 16 MiB shard, it has no SSD copy of its own.
	 */
	put = client_start(CLIENT_PUT, "rt", 17 * FKV_MIB);
	r = client_wait(&put);
	FKV_ASSERT_EQ(r.err, 0);
	put2 = r.put_id;
	FKV_ASSERT_GT(put2, put1);
	FKV_ASSERT_EQ(fkv_nl_next(&nl, FLUXONKV_CMD_PUT_LOCAL, tb, 5000), 0);
	h2 = expect_put_local_entry_flags(tb, "rt", put2, 17 * FKV_MIB, h1, 0);

	/* the master answers version 1's commit late, as still current */
	a.cmd = FLUXONKV_CMD_SSD_COMMIT;
	a.req_id = commit1;
	a.flags = FLUXONKV_SSD_F_PUBLISHED;
	FKV_ASSERT_EQ(send_answer(&nl, &a), 0);

	/* version 2's DRAM copy evicted: nothing of the key is left */
	FKV_ASSERT_EQ(drop_replica(&nl, h2), 0);
	get = client_start(CLIENT_GET, "rt", 0);
	r = client_wait(&get);
	FKV_ASSERT(r.err == ENOENT, "get after the eviction: %s, put_id %"
		   PRIu64 " (version 1 is %" PRIu64 ")", strerror(r.err),
		   r.put_id, put1);
	FKV_ASSERT_EQ(fkv_sysfs("hits_ssd"), 0);

	close(dev);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	fkv_nl_close(&nl);
}

/* ---- senders facing a full daemon socket ---- */

/* Voluntary context switches of PID so far (its sleeps); -1 unreadable. */
static long sleeps_of(pid_t pid)
{
	char path[64], line[128];
	long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

#define FULL_CLIENTS	12
#define FULL_TIMEOUT_MS	5000

/*
 * FULL_CLIENTS gets against a daemon whose socket holds a few messages
 * (SO_RCVBUF at its minimum) and is not read: the ones whose GET_START
 * does not fit wait; the most any of them sleeps and wakes in 1.5 s;
 * their pids in @pids.  Returns that most.
 */
static long full_socket_gets(struct client *c, const char *prefix)
{
	long s0[FULL_CLIENTS], s1, most = 0;
	char k[32];
	int i;

	for (i = 0; i < FULL_CLIENTS; i++) {
		snprintf(k, sizeof(k), "%s-%d", prefix, i);
		c[i] = client_start(CLIENT_GET, k, 0);
	}
	fkv_msleep(500);
	for (i = 0; i < FULL_CLIENTS; i++)
		s0[i] = sleeps_of(c[i].pid);
	fkv_msleep(1500);
	for (i = 0; i < FULL_CLIENTS; i++) {
		s1 = sleeps_of(c[i].pid);
		if (s0[i] >= 0 && s1 >= s0[i] && s1 - s0[i] > most)
			most = s1 - s0[i];
	}
	return most;
}

/*
 * fluxonkv_send() facing a full daemon socket (issue 29): a sender waits
 * for the daemon's activity (any message from it) or a backoff doubling
 * to 32 ms, never polls every millisecond; it is counted (send_waits).
 * A daemon that stops reading and resumes: every get completes with the
 * daemon's answer (ENOENT) within the request timeout.  A daemon that
 * never reads again: every get fails within the request timeout, EAGAIN
 * (its GET_START never fit) or ETIMEDOUT (it did, unanswered).  Before:
 * usleep_range(1000, 2000) between tries, hundreds of wake-ups a second.
 */
FKV_TEST_TIMEOUT(a_sender_waits_for_a_full_daemon_socket_without_spinning, 90)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_GET_START, .has_req_id = true,
			    .has_status = true, .status = -ENOENT,
			    .no_ack = true };
	struct client c[FULL_CLIENTS];
	struct client_result r;
	int i, one = 1, eagain = 0, etimedout = 0;
	int64_t t0, ms;
	struct fkv_nl nl;
	uint64_t waits;
	long most;

	FKV_LOAD("segment_mb=32 request_timeout_ms=5000");
	nl_open(&nl);
	FKV_ASSERT_EQ(register_daemon(&nl, tb), 0);
	FKV_ASSERT_EQ(setsockopt(nl_socket_get_fd(nl.sk), SOL_SOCKET,
				 SO_RCVBUF, &one, sizeof(one)), 0);

	/* 1. the daemon stops reading, then resumes */
	t0 = fkv_now_ms();
	most = full_socket_gets(c, "full");
	fkv_diag("the most a waiting get slept and woke in 1.5 s: %ld", most);
	FKV_ASSERT(most < 100, "a get waiting to send to a full daemon socket "
		   "slept and woke %ld times in 1.5 s", most);
	waits = fkv_sysfs("send_waits");
	FKV_ASSERT(waits >= 1, "no send waited: the socket never filled");
	for (i = 0; i < FULL_CLIENTS; i++) {
		a.req_id = expect_upcall(&nl, FLUXONKV_CMD_GET_START, tb);
		FKV_ASSERT_EQ(send_answer(&nl, &a), 0);
	}
	for (i = 0; i < FULL_CLIENTS; i++) {
		r = client_wait(&c[i]);
		FKV_ASSERT(r.err == ENOENT, "get %d: %s", i, strerror(r.err));
	}
	ms = fkv_now_ms() - t0;
	FKV_ASSERT(ms < FULL_TIMEOUT_MS, "the gets took %" PRId64 " ms", ms);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_timeouts"), 0);

	/* 2. it never reads again: each fails within the request timeout */
	t0 = fkv_now_ms();
	most = full_socket_gets(c, "stuck");
	FKV_ASSERT(most < 100, "a get waiting to send to a full daemon socket "
		   "slept and woke %ld times in 1.5 s", most);
	FKV_ASSERT_GT(fkv_sysfs("send_waits"), waits);
	for (i = 0; i < FULL_CLIENTS; i++) {
		r = client_wait(&c[i]);
		if (r.err == EAGAIN)
			eagain++;
		else if (r.err == ETIMEDOUT)
			etimedout++;
		else
			FKV_ASSERT(0, "get %d: %s", i, strerror(r.err));
	}
	ms = fkv_now_ms() - t0;
	fkv_diag("stuck: %d EAGAIN, %d ETIMEDOUT in %" PRId64 " ms", eagain,
		 etimedout, ms);
	FKV_ASSERT_GE(eagain, 1);
	FKV_ASSERT_LT(ms, FULL_TIMEOUT_MS + 1500);
	fkv_nl_close(&nl);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
}
