// SPDX-License-Identifier: GPL-2.0
/*
 * test_place - remote placement, both halves, with the test playing the
 * node daemon on a raw genl socket and a privileged session (O_RDWR +
 * CAP_SYS_ADMIN) whose mapping of the segment is writable:
 *
 *   the putter's half: a daemon registered with
 *   FLUXONKV_REGISTER_F_PLACEMENT answers NEED_ROOM with ENOSPC -> the put
 *   sends PUT_PLACE {KEY, PUT_ID, LEN} at once -> the answer names another
 *   node's HANDLE and FD, a connected stream socket of the daemon's -> the
 *   module sends exactly LEN bytes from the putter's buffer on it, then
 *   PUT_DONE {HANDLE}; every failure ends in PUT_ABORT and a precise errno,
 *   with nothing left behind (no range, no replica, no socket reference).
 *
 *   the target's half: FLUXONKV_IOC_TARGET allocates a replica for another
 *   node's put (a holder, an offset, a handle of this node) that the
 *   daemon fills through its writable mapping; FLUXONKV_IOC_PUBLISH enters
 *   it in the index, so that gets here are local memory hits.
 *
 * Values are patterns of (key, length, salt), compared byte for byte.  The
 * segment is 4 MiB; a published value of all of it ("hog") leaves no room.
 */
#include <endian.h>
#include <xxhash.h>

#include "fkv_env.h"
#include "fkv_master.h"

#define PARAMS		"segment_mb=4 request_timeout_ms=5000"
#define NODE		1	/* the node id the test's daemon registers */
#define OTHER		2	/* another node of the cluster */
/*
 * PUT_PLACE follows NEED_ROOM's ENOSPC within this (a loaded TCG guest);
 * without placement the put would wait for room 5 s.
 */
#define PLACE_MS	2000
/* A replica handle of node N: version PUT_ID, slot SLOT. */
#define HANDLE_OF(n, put_id, slot)	FLUXONKV_HANDLE_MAKE(slot, n, put_id)

/*
 * Playing the daemon, clients in child processes (client_start ...),
 * master_put, master_put_filler, answer_miss, expect_latency_count:
 * fkv_master.h.
 */

/* ---- the segment ---- */

/* One published value ("hog", version 1) fills the segment; its handle. */
static uint64_t fill_segment(struct master *m)
{
	uint64_t cap = fkv_sysfs("segment_capacity_bytes");
	uint64_t h = master_put(m, "hog", cap, 1);

	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), cap);
	return h;
}

/* Loaded, registered as NODE with FLAGS, the segment full: the hog. */
static uint64_t begin_full(struct master *m, uint32_t flags)
{
	FKV_LOAD(PARAMS);
	master_start_as(m, flags, NODE);
	return fill_segment(m);
}

/* HOG dropped: nothing held, nothing left. */
static void end_full(struct master *m, uint64_t hog)
{
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(drop_replica(&m->nl, hog), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	master_stop(m);
}

/* ---- the putter's half ---- */

/*
 * A client's put of the pattern of (K, LEN, SALT) into the full segment:
 * PUT_START answered with PUT_ID; the NEED_ROOM {BYTES = LEN} that follows
 * is left to the caller (its REQ_ID in *room).
 */
static struct client put_needing_room(struct master *m, const char *k,
				      uint64_t len, uint64_t salt,
				      uint64_t put_id, uint64_t *room)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_PUT_START, .has_req_id = true,
			    .has_status = true, .put_id = put_id };
	struct client c = client_start(CLIENT_PUT, k, len, salt);

	a.req_id = expect_upcall(&m->nl, FLUXONKV_CMD_PUT_START, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "PUT_START of '%s'", k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), len);
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
	*room = expect_upcall(&m->nl, FLUXONKV_CMD_NEED_ROOM, tb);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_BYTES]), len);
	return c;
}

/* The PUT_PLACE of K at once: KEY, PUT_ID, LEN and no HANDLE; its REQ_ID. */
static uint64_t expect_place(struct master *m, const char *k,
			     uint64_t put_id, uint64_t len)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t req = expect_upcall_in(&m->nl, FLUXONKV_CMD_PUT_PLACE, tb,
					PLACE_MS);

	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "PUT_PLACE of '%s'", k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), len);
	FKV_ASSERT(!tb[FLUXONKV_A_HANDLE], "PUT_PLACE names a handle");
	return req;
}

/*
 * The put of K at PUT_ID out of room: NEED_ROOM answered ENOSPC by a
 * placement daemon, the PUT_PLACE that follows at once; its REQ_ID in *req.
 */
static struct client put_placing(struct master *m, const char *k,
				 uint64_t len, uint64_t salt, uint64_t put_id,
				 uint64_t *req)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client c = put_needing_room(m, k, len, salt, put_id, req);

	FKV_ASSERT_EQ(answer_status(&m->nl, FLUXONKV_CMD_NEED_ROOM, *req,
				    -ENOSPC), 0);
	*req = expect_place(m, k, put_id, len);
	FKV_ASSERT(fkv_nl_next(&m->nl, FLUXONKV_CMD_NEED_ROOM, tb, 0) != 0,
		   "NEED_ROOM asked again after ENOSPC");
	return c;
}

/*
 * Answer PUT_PLACE REQ with STATUS, HANDLE (0: left out) and FD (< 0: left
 * out); the kernel's 0 or -errno.
 */
static int answer_place(struct master *m, uint64_t req, int32_t status,
			uint64_t handle, int fd)
{
	struct answer a = { .cmd = FLUXONKV_CMD_PUT_PLACE, .has_req_id = true,
			    .req_id = req, .has_status = true,
			    .status = status, .handle = handle,
			    .has_fd = fd >= 0, .fd = (uint32_t)fd };

	return send_answer(&m->nl, &a);
}

/* The PUT_DONE of a placed put of K: it names the remote replica RH. */
static uint64_t expect_placed_done(struct master *m, const char *k,
				   uint64_t put_id, uint64_t len, uint64_t rh)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t req = expect_upcall(&m->nl, FLUXONKV_CMD_PUT_DONE, tb);

	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "PUT_DONE of '%s'", k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), len);
	FKV_ASSERT(fkv_nla_u64(tb[FLUXONKV_A_HANDLE]) == rh,
		   "PUT_DONE names %#" PRIx64 ", not the remote replica %#"
		   PRIx64, fkv_nla_u64(tb[FLUXONKV_A_HANDLE]), rh);
	return req;
}

/*
 * The PUT_ABORT a failed put of K at PUT_ID sends: HANDLE (0: none) and
 * ERRNO -ERR.  No PUT_DONE came before it.
 */
static void expect_abort(struct master *m, const char *k, uint64_t put_id,
			 uint64_t handle, int err)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];

	FKV_ASSERT_EQ(fkv_nl_next(&m->nl, FLUXONKV_CMD_PUT_ABORT, tb, 5000),
		      0);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "PUT_ABORT of '%s'", k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	if (handle)
		FKV_ASSERT(fkv_nla_u64(tb[FLUXONKV_A_HANDLE]) == handle,
			   "PUT_ABORT names %#" PRIx64 ", want %#" PRIx64,
			   fkv_nla_u64(tb[FLUXONKV_A_HANDLE]), handle);
	else
		FKV_ASSERT(!tb[FLUXONKV_A_HANDLE], "PUT_ABORT names %#" PRIx64,
			   fkv_nla_u64(tb[FLUXONKV_A_HANDLE]));
	FKV_ASSERT(tb[FLUXONKV_A_ERRNO], "PUT_ABORT without ERRNO");
	FKV_ASSERT_EQ((int32_t)fkv_nla_u32(tb[FLUXONKV_A_ERRNO]), -err);
	FKV_ASSERT(fkv_nl_next(&m->nl, FLUXONKV_CMD_PUT_DONE, tb, 0) != 0,
		   "PUT_DONE of an aborted placement");
}

/* The put in C returned ERR (an errno); C reaped. */
static void expect_put_fails(struct client *c, int err, const char *what)
{
	struct client_result r = client_result(c);

	client_end(c);
	FKV_ASSERT(r.err == err, "%s: the put returned %s, want %s", what,
		   r.err ? strerror(r.err) : "success", strerror(err));
}

/* A failed placement left nothing: the segment as full as before. */
static void expect_nothing_left(uint64_t placed, uint64_t errors)
{
	FKV_ASSERT_EQ(fkv_sysfs("puts_placed"), placed);
	FKV_ASSERT_EQ(fkv_sysfs("place_errors"), errors);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      fkv_sysfs("segment_capacity_bytes"));
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);	/* the hog */
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	if (fkv_debugfs_pending(FLUXONKV_CMD_PUT_PLACE) >= 0)
		FKV_ASSERT_EQ(fkv_debugfs_pending(FLUXONKV_CMD_PUT_PLACE), 0);
}

/* ---- the sockets ---- */

static void stream_pair(int sv[2])
{
	FKV_ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
		      0);
}

/* Read exactly LEN bytes from FD into a new buffer (free it). */
static uint8_t *recv_exact(int fd, uint64_t len)
{
	uint8_t *buf = malloc(len);
	uint64_t got = 0;

	FKV_ASSERT(buf, "malloc %" PRIu64, len);
	while (got < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		FKV_ASSERT(poll(&p, 1, 5000) == 1, "%" PRIu64 " of %" PRIu64
			   " bytes came on the socket", got, len);
		n = recv(fd, buf + got, len - got, MSG_DONTWAIT);
		FKV_ASSERT(n > 0, "recv after %" PRIu64 " bytes: %s", got,
			   n < 0 ? strerror(errno) : "EOF");
		got += (uint64_t)n;
	}
	return buf;
}

/*
 * A placed value on FD: LEN bytes of the pattern of (K, SALT), then their
 * XXH64 (8 bytes, little endian), which the target checks its replica
 * against (issue 29: PLACE bytes are summed end to end).
 */
static void recv_placed_value(int fd, uint64_t len, const char *k,
			      uint64_t salt)
{
	uint8_t *buf = recv_exact(fd, len), *sum;
	uint64_t le;

	FKV_ASSERT_PATTERN(buf, len, k, strlen(k), salt);
	sum = recv_exact(fd, sizeof(le));
	memcpy(&le, sum, sizeof(le));
	FKV_ASSERT(le64toh(le) == XXH64(buf, len, 0),
		   "the sum after the value is not its XXH64");
	free(sum);
	free(buf);
}

/* Nothing (more) is queued on FD, and its peer is still open. */
static void expect_no_bytes(int fd, const char *what)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_DONTWAIT);

	FKV_ASSERT(n < 0 && errno == EAGAIN, "%s: recv gave %zd (%s)", what,
		   n, n < 0 ? strerror(errno) : "a byte or EOF");
}

static ino_t sock_ino(int fd)
{
	struct stat st;

	FKV_ASSERT_EQ(fstat(fd, &st), 0);
	return st.st_ino;
}

/* Is the unix socket of inode INO still alive (/proc/net/unix)? */
static bool unix_sock_alive(ino_t ino)
{
	FILE *f = fopen("/proc/net/unix", "r");
	char line[512];
	bool alive = false;

	FKV_ASSERT(f, "/proc/net/unix: %s", strerror(errno));
	while (!alive && fgets(line, sizeof(line), f)) {
		unsigned long inode;

		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu", &inode) == 1 &&
		    inode == (unsigned long)ino)
			alive = true;
	}
	fclose(f);
	return alive;
}

/*
 * Close FD, the test's last descriptor of a socket it handed the module:
 * the socket must go away, so the module kept no reference to it.
 */
static void close_released(int fd, const char *what)
{
	ino_t ino = sock_ino(fd);
	int64_t end = fkv_now_ms() + 2000;

	FKV_ASSERT(unix_sock_alive(ino), "socket %lu not in /proc/net/unix",
		   (unsigned long)ino);
	FKV_ASSERT_EQ(close(fd), 0);
	while (unix_sock_alive(ino) && fkv_now_ms() < end)
		fkv_msleep(10);
	FKV_ASSERT(!unix_sock_alive(ino), "%s: the socket outlives its last "
		   "descriptor (a reference leaked)", what);
}

/* ---- 1: registration ---- */

/*
 * The register answer echoes FLUXONKV_REGISTER_F_PLACEMENT (alone or with
 * local routes) and the node id; an unknown flag bit is refused by the
 * policy and registers nothing.  A PUT_PLACE answer nobody waits for is
 * unknown, whatever it carries.
 */
FKV_TEST(register_flag_placement_is_echoed_and_unknown_flags_refused)
{
	static const uint32_t good[] = {
		FLUXONKV_REGISTER_F_PLACEMENT,
		FLUXONKV_REGISTER_F_PLACEMENT | FLUXONKV_REGISTER_F_LOCAL_ROUTES,
		FLUXONKV_REGISTER_F_PLACEMENT | FLUXONKV_REGISTER_F_KEEP,
		0,
	};
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct master m;
	uint64_t errs;
	unsigned int i;
	int sv[2];

	FKV_LOAD(PARAMS);
	master_open(&m);
	/* ADOPT is the module's word in the answer, never asked for */
	FKV_ASSERT_EQ(master_register_as(&m, FLUXONKV_REGISTER_F_ADOPT, NODE,
					 tb), -EINVAL);
	FKV_ASSERT_EQ(master_register_as(&m, 1U << 8, NODE, tb), -EINVAL);
	/* a put placed elsewhere was never published here */
	FKV_ASSERT_EQ(master_register_as(&m, FLUXONKV_REGISTER_F_PLACEMENT |
					 FLUXONKV_REGISTER_F_LOCAL_PUTS, NODE,
					 tb), -EINVAL);
	FKV_ASSERT_EQ(master_register_as(&m, FLUXONKV_REGISTER_F_PLACEMENT |
					 1U << 31, NODE, tb), -EINVAL);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), 0);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		FKV_ASSERT_EQ(master_register_as(&m, good[i], NODE, tb), 0);
		FKV_ASSERT(tb[FLUXONKV_A_FLAGS], "register answer without FLAGS");
		FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_FLAGS]), good[i]);
		FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_NODE_ID]), NODE);
	}
	/* still registered (as the same daemon) after a refused flag */
	/* ADOPT is the module's word in the answer, never asked for */
	FKV_ASSERT_EQ(master_register_as(&m, FLUXONKV_REGISTER_F_ADOPT, NODE,
					 tb), -EINVAL);
	FKV_ASSERT_EQ(master_register_as(&m, 1U << 8, NODE, tb), -EINVAL);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), getpid());

	errs = fkv_sysfs("upcall_errors");
	stream_pair(sv);
	FKV_ASSERT_EQ(answer_place(&m, 12345, 0, HANDLE_OF(OTHER, 1, 1),
				   sv[0]), -ENOENT);
	FKV_ASSERT_EQ(answer_place(&m, 0, 0, HANDLE_OF(OTHER, 1, 1), sv[0]),
		      -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_errors"), errs + 2);
	close_released(sv[0], "a stray PUT_PLACE answer");
	close(sv[1]);
	FKV_ASSERT_EQ(fkv_sysfs("puts_placed"), 0);
	fkv_nl_close(&m.nl);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
}

/* ---- 2: the happy path ---- */

/*
 * No room here: PUT_PLACE at once, the value streamed on the daemon's
 * socket from the putter's buffer, PUT_DONE names the remote replica and
 * the put returns its version; nothing of it stays on this node.
 */
static void placed_put(const char *k, uint64_t len, bool published)
{
	const uint64_t put_id = 7, salt = 0x91ace;
	const uint64_t rh = HANDLE_OF(OTHER, put_id, 5);
	struct answer a = { .cmd = FLUXONKV_CMD_PUT_DONE, .has_req_id = true,
			    .has_status = true, .has_flags = true,
			    .flags = published ? FLUXONKV_PUT_F_PUBLISHED : 0 };
	struct client_result r;
	uint64_t hog, cap, req;
	struct master m;
	struct client c;
	int64_t t0;
	int sv[2];
	char eof;

	hog = begin_full(&m, FLUXONKV_REGISTER_F_PLACEMENT);
	cap = fkv_sysfs("segment_capacity_bytes");
	c = put_needing_room(&m, k, len, salt, put_id, &req);
	t0 = fkv_now_ms();
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_NEED_ROOM, req,
				    -ENOSPC), 0);
	req = expect_place(&m, k, put_id, len);
	FKV_ASSERT_LT(fkv_now_ms() - t0, PLACE_MS);
	FKV_ASSERT_EQ(fkv_sysfs("room_waits"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("puts_placed"), 1);
	FKV_ASSERT(!client_finished(&c), "the put returned before PUT_PLACE "
		   "was answered");

	stream_pair(sv);
	FKV_ASSERT_EQ(answer_place(&m, req, 0, rh, sv[0]), 0);
	recv_placed_value(sv[1], len, k, salt);

	a.req_id = expect_placed_done(&m, k, put_id, len, rh);
	expect_no_bytes(sv[1], "more than LEN bytes sent");
	FKV_ASSERT(!client_finished(&c), "the put returned before PUT_DONE "
		   "was answered");
	FKV_ASSERT_EQ(send_answer(&m.nl, &a), 0);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, put_id);

	FKV_ASSERT_EQ(fkv_sysfs("puts_placed"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("place_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("puts"), 2);		/* the hog and this */
	expect_latency_count("place_send", 1);
	/* nothing of it here: no range, no replica, no holder */
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), cap);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_PUT_ABORT,
			 "a placed put was aborted");
	/* the module let go of the socket: closing it is an EOF there */
	close_released(sv[0], "a placed put");
	FKV_ASSERT_EQ(recv(sv[1], &eof, 1, MSG_DONTWAIT), 0);
	close(sv[1]);
	/* not indexed here: a get asks the master */
	c = client_get(k, salt);
	answer_miss(&m, k);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ENOENT);
	end_full(&m, hog);
}

FKV_TEST(put_without_room_is_placed_on_another_node_1mib_plus_17)
{
	placed_put("placed-big", FKV_MIB + 17, true);
}

FKV_TEST(put_without_room_is_placed_on_another_node_one_byte)
{
	placed_put("placed-1", 1, true);
}

/* A newer version won at the master: the put still returns its version. */
FKV_TEST(placed_put_superseded_at_the_master_still_returns_its_version)
{
	placed_put("placed-old", 5000, false);
}

/*
 * The master evicts HOG and answers NEED_ROOM REQ with 0: C's put of K
 * (LEN bytes, SALT) at PUT_ID is stored here after all (PUT_DONE names a
 * handle of this node; no PUT_PLACE); a get hits it.  Its handle, once the
 * segment holds only it.
 */
static uint64_t room_made(struct master *m, struct client *c, const char *k,
			  uint64_t len, uint64_t salt, uint64_t put_id,
			  uint64_t hog, uint64_t req)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_PUT_DONE, .has_req_id = true,
			    .has_status = true, .has_flags = true,
			    .flags = FLUXONKV_PUT_F_PUBLISHED };
	struct client_result r;
	uint64_t h;

	FKV_ASSERT_EQ(drop_replica(&m->nl, hog), 0);
	FKV_ASSERT_EQ(answer_status(&m->nl, FLUXONKV_CMD_NEED_ROOM, req, 0), 0);
	a.req_id = expect_upcall(&m->nl, FLUXONKV_CMD_PUT_DONE, tb);
	h = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(h), NODE);
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
	r = client_result(c);
	client_end(c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, put_id);
	FKV_ASSERT(fkv_nl_next(&m->nl, FLUXONKV_CMD_PUT_PLACE, tb, 0) != 0,
		   "PUT_PLACE although the put was stored here");
	FKV_ASSERT_EQ(fkv_sysfs("puts_placed"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("place_errors"), 0);
	expect_latency_count("place_send", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", FKV_ALIGN_UP(len));
	r = client_get_once(k, salt);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(r.put_id, put_id);
	FKV_ASSERT(r.intact, "the local put's bytes");
	return h;
}

/*
 * With placement, a master that frees room (NEED_ROOM 0) gets an ordinary
 * local put.
 */
FKV_TEST(placement_daemon_that_frees_room_gets_a_local_put)
{
	struct master m;
	struct client c;
	uint64_t hog, req;

	hog = begin_full(&m, FLUXONKV_REGISTER_F_PLACEMENT);
	c = put_needing_room(&m, "room-freed", 70000, 3, 9, &req);
	FKV_ASSERT_EQ(drop_replica(&m.nl, room_made(&m, &c, "room-freed",
						    70000, 3, 9, hog, req)),
		      0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&m);
}

/* ---- 3: bad answers ---- */

enum answer_fd {
	FD_NONE,		/* no FD attribute */
	FD_DEVNULL,		/* /dev/null */
	FD_PIPE,		/* a pipe's write end */
	FD_CLOSED,		/* a number the daemon has not open */
	FD_DGRAM,		/* a connected datagram socket */
	FD_UNCONNECTED,		/* a stream socket never connected */
	FD_STREAM,		/* a good one: a connected stream socket */
};

#define RH	HANDLE_OF(OTHER, 100, 9)
#define OWN	HANDLE_OF(NODE, 100, 9)

static const struct bad_place {
	const char *what;
	int32_t status;		/* the answer's STATUS */
	uint64_t handle;	/* its HANDLE; PUT_ABORT names it again */
	enum answer_fd fd;
	int ack;		/* the kernel's 0 or -errno to the answer */
	int err;		/* the put's errno */
} bad_places[] = {
	{ "FD of /dev/null", 0, RH, FD_DEVNULL, -ENOTSOCK, ENOTSOCK },
	{ "FD of a pipe", 0, RH, FD_PIPE, -ENOTSOCK, ENOTSOCK },
	{ "FD not open", 0, RH, FD_CLOSED, -EBADF, EBADF },
	{ "datagram socket", 0, RH, FD_DGRAM, -EINVAL, EINVAL },
	{ "unconnected stream socket", 0, RH, FD_UNCONNECTED, -EINVAL, EINVAL },
	{ "no FD", 0, RH, FD_NONE, -EINVAL, EINVAL },
	{ "no HANDLE", 0, 0, FD_STREAM, -EINVAL, EINVAL },
	{ "HANDLE of this node", 0, OWN, FD_STREAM, 0, EPROTO },
	{ "STATUS EHOSTUNREACH with HANDLE and FD", -EHOSTUNREACH, RH,
	  FD_STREAM, 0, EHOSTUNREACH },
};

/* The descriptor case B hands the module in *fd (-1: none); *peer too. */
static void bad_fd_make(const struct bad_place *b, int *fd, int *peer)
{
	int p[2];

	*fd = *peer = -1;
	switch (b->fd) {
	case FD_NONE:
		break;
	case FD_DEVNULL:
		*fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		FKV_ASSERT(*fd >= 0);
		break;
	case FD_PIPE:
		FKV_ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
		*fd = p[1];
		*peer = p[0];
		break;
	case FD_CLOSED:
		*fd = 900;
		FKV_ASSERT(fcntl(*fd, F_GETFD) < 0 && errno == EBADF,
			   "fd %d is open", *fd);
		break;
	case FD_DGRAM:
		FKV_ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0,
					 p), 0);
		*fd = p[0];
		*peer = p[1];
		break;
	case FD_UNCONNECTED:
		*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		FKV_ASSERT(*fd >= 0);
		break;
	case FD_STREAM:
		stream_pair(p);
		*fd = p[0];
		*peer = p[1];
		break;
	}
}

/*
 * Every malformed or failed PUT_PLACE answer fails the put with its own
 * errno and a PUT_ABORT naming what the answer named; nothing is sent on
 * the socket, no reference to it is kept, nothing stays allocated.
 */
FKV_TEST(bad_put_place_answers_fail_the_put_with_put_abort)
{
	const uint64_t len = 5000;
	struct master m;
	uint64_t hog;
	unsigned int i;

	hog = begin_full(&m, FLUXONKV_REGISTER_F_PLACEMENT);
	for (i = 0; i < sizeof(bad_places) / sizeof(bad_places[0]); i++) {
		const struct bad_place *b = &bad_places[i];
		const uint64_t put_id = 100 + i;
		struct client c;
		uint64_t req;
		int fd, peer, ack;
		char k[16];

		snprintf(k, sizeof(k), "bad-%u", i);
		c = put_placing(&m, k, len, i, put_id, &req);
		bad_fd_make(b, &fd, &peer);
		ack = answer_place(&m, req, b->status, b->handle, fd);
		FKV_ASSERT(ack == b->ack, "%s: the answer got %s, want %s",
			   b->what, ack ? strerror(-ack) : "0",
			   b->ack ? strerror(-b->ack) : "0");
		expect_put_fails(&c, b->err, b->what);
		expect_abort(&m, k, put_id, b->handle, b->err);
		expect_nothing_left(i + 1, i + 1);
		if (b->fd == FD_STREAM)
			expect_no_bytes(peer, b->what);
		if (b->fd == FD_STREAM || b->fd == FD_DGRAM ||
		    b->fd == FD_UNCONNECTED)
			close_released(fd, b->what);
		else if (fd >= 0 && b->fd != FD_CLOSED)
			close(fd);
		if (peer >= 0)
			close(peer);
	}
	expect_latency_count("place_send", 0);
	end_full(&m, hog);
}

/*
 * A placement of a value of K (LEN bytes, salt PUT_ID) that fails after a
 * good answer: a connected stream socket, sv[0] handed to the module,
 * sv[1] the receiving end (-1 once the test closed it).
 */
struct failing {
	struct master m;
	struct client c;
	const char *k;
	uint64_t len, put_id, rh, hog, req;
	int sv[2];
};

/* Up to the PUT_PLACE; the answer is the test's to send (place_answer). */
static void failing_begin(struct failing *f, const char *k, uint64_t len,
			  uint64_t put_id)
{
	f->k = k;
	f->len = len;
	f->put_id = put_id;
	f->rh = HANDLE_OF(OTHER, put_id, 4);
	f->hog = begin_full(&f->m, FLUXONKV_REGISTER_F_PLACEMENT);
	f->c = put_placing(&f->m, k, len, put_id, put_id, &f->req);
	stream_pair(f->sv);
}

static void failing_answer(struct failing *f)
{
	FKV_ASSERT_EQ(answer_place(&f->m, f->req, 0, f->rh, f->sv[0]), 0);
}

/* The put blocked in its send (the socket full, nobody reading). */
static void failing_blocked(struct failing *f)
{
	fkv_msleep(200);
	FKV_ASSERT(!client_finished(&f->c), "the put did not wait for the "
		   "peer");
}

/*
 * The put failed with ERR (WHAT: how; C already reaped if REAPED): its
 * PUT_ABORT names the remote replica, nothing is left, the socket is
 * released.
 */
static void failing_end(struct failing *f, int err, bool reaped,
			const char *what)
{
	if (!reaped)
		expect_put_fails(&f->c, err, what);
	expect_abort(&f->m, f->k, f->put_id, f->rh, err);
	expect_nothing_left(1, 1);
	close_released(f->sv[0], what);
	if (f->sv[1] >= 0)
		close(f->sv[1]);
	end_full(&f->m, f->hog);
}

/*
 * PUT_DONE failing after the whole value went out: the master may have
 * published the remote replica, so PUT_ABORT names it.
 */
FKV_TEST(put_done_failing_after_the_send_names_the_remote_replica)
{
	struct failing f;

	failing_begin(&f, "done-eio", 300000, 11);
	failing_answer(&f);
	recv_placed_value(f.sv[1], f.len, f.k, f.put_id);
	f.req = expect_placed_done(&f.m, f.k, f.put_id, f.len, f.rh);
	FKV_ASSERT_EQ(answer_status(&f.m.nl, FLUXONKV_CMD_PUT_DONE, f.req,
				    -EIO), 0);
	expect_latency_count("place_send", 1);
	failing_end(&f, EIO, false, "PUT_DONE answered EIO");
}

/* ---- 4: the receiving end goes ---- */

/*
 * The daemon's peer end is closed before the send: the first sendmsg sees
 * the socket shut down for writing (EPIPE; MSG_NOSIGNAL, so no SIGPIPE).
 */
FKV_TEST(peer_closed_before_the_send_fails_the_put_with_epipe)
{
	struct failing f;

	failing_begin(&f, "peer-gone", 20000, 12);
	FKV_ASSERT_EQ(close(f.sv[1]), 0);
	f.sv[1] = -1;
	failing_answer(&f);
	failing_end(&f, EPIPE, false, "peer closed before the send");
	expect_latency_count("place_send", 0);
}

/*
 * The peer closes in the middle of a 1 MiB value, with bytes unread.  The
 * socket gets ECONNRESET as its error, but the sendmsg blocked at that
 * moment had sent bytes already and returns that count (taking the
 * error); the next one finds the socket shut down: EPIPE again.
 */
FKV_TEST(peer_closed_in_the_middle_of_the_value_fails_the_put_with_epipe)
{
	struct failing f;

	failing_begin(&f, "peer-mid", FKV_MIB + 17, 13);
	failing_answer(&f);
	free(recv_exact(f.sv[1], 65536));
	failing_blocked(&f);
	FKV_ASSERT_EQ(close(f.sv[1]), 0);
	f.sv[1] = -1;
	failing_end(&f, EPIPE, false, "peer closed in the middle");
}

/* The socket's SO_SNDTIMEO bounds each wait of the send: ETIMEDOUT. */
FKV_TEST(socket_send_timeout_bounds_the_send)
{
	struct timeval tv = { .tv_usec = 200000 };
	struct failing f;
	int64_t t0;

	failing_begin(&f, "send-slow", FKV_MIB + 17, 14);
	FKV_ASSERT_EQ(setsockopt(f.sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv,
				 sizeof(tv)), 0);
	t0 = fkv_now_ms();
	failing_answer(&f);
	expect_put_fails(&f.c, ETIMEDOUT, "nobody reads, SO_SNDTIMEO 200 ms");
	FKV_ASSERT_GE(fkv_now_ms() - t0, 200);
	failing_end(&f, ETIMEDOUT, true, "a placement that timed out");
}

/* A putter SIGKILLed while its value waits for the socket: EINTR. */
FKV_TEST(putter_killed_while_sending_leaves_nothing_behind)
{
	struct failing f;
	int status;

	failing_begin(&f, "send-kill", FKV_MIB + 17, 15);
	failing_answer(&f);
	failing_blocked(&f);
	FKV_ASSERT_EQ(kill(f.c.pid, SIGKILL), 0);
	FKV_ASSERT_EQ(waitpid(f.c.pid, &status, 0), f.c.pid);
	FKV_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		   "client status %#x", status);
	close(f.c.rfd);
	close(f.c.wfd);
	failing_end(&f, EINTR, true, "a killed putter's placement");
}

/* ---- 5: without placement ---- */

/*
 * A daemon without FLUXONKV_REGISTER_F_PLACEMENT: NEED_ROOM's ENOSPC does
 * not end the room wait; no PUT_PLACE, NEED_ROOM is asked again, and room
 * made later still serves the put here.
 */
FKV_TEST(without_the_placement_flag_enospc_keeps_the_put_waiting_for_room)
{
	const char *k = "no-place";
	const uint64_t len = 8000, put_id = 16;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t hog, req;
	struct master m;
	struct client c;

	hog = begin_full(&m, 0);
	c = put_needing_room(&m, k, len, 6, put_id, &req);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_NEED_ROOM, req,
				    -ENOSPC), 0);
	FKV_ASSERT(fkv_nl_next(&m.nl, FLUXONKV_CMD_PUT_PLACE, tb, 500) != 0,
		   "PUT_PLACE to a daemon without placement");
	FKV_ASSERT(!client_finished(&c), "the put gave up on ENOSPC at once");
	req = expect_upcall_in(&m.nl, FLUXONKV_CMD_NEED_ROOM, tb, 2000);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_BYTES]), len);
	FKV_ASSERT_EQ(fkv_sysfs("puts_placed"), 0);
	/* the master evicts after all */
	FKV_ASSERT_EQ(drop_replica(&m.nl, room_made(&m, &c, k, len, 6, put_id,
						    hog, req)), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&m);
}

/*
 * PUT_PLACE answered ENOSPC (no other node has room): nothing was sent and
 * the put is still this node's: it waits for room here (NEED_ROOM again,
 * no PUT_ABORT), and room made later serves it locally.
 */
FKV_TEST(no_other_node_with_room_keeps_the_put_waiting_here)
{
	const char *k = "nowhere";
	const uint64_t len = 8000, put_id = 17;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t hog, req;
	struct master m;
	struct client c;

	hog = begin_full(&m, FLUXONKV_REGISTER_F_PLACEMENT);
	c = put_placing(&m, k, len, 7, put_id, &req);
	FKV_ASSERT_EQ(answer_place(&m, req, -ENOSPC, 0, -1), 0);
	FKV_ASSERT(fkv_nl_next(&m.nl, FLUXONKV_CMD_PUT_ABORT, tb, 300) != 0,
		   "PUT_ABORT after PUT_PLACE's ENOSPC");
	FKV_ASSERT(!client_finished(&c), "the put gave up on ENOSPC at once");
	req = expect_upcall_in(&m.nl, FLUXONKV_CMD_NEED_ROOM, tb, 2000);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_BYTES]), len);
	FKV_ASSERT_EQ(fkv_sysfs("puts_placed"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("place_errors"), 0);
	FKV_ASSERT_EQ(drop_replica(&m.nl, room_made(&m, &c, k, len, 7, put_id,
						    hog, req)), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&m);
}

/* ---- 6: the target's half ---- */

/* A valid TARGET argument. */
static struct fluxonkv_target target_arg(const char *k, uint64_t put_id,
					 uint64_t len)
{
	struct fluxonkv_target t = {
		.size = sizeof(t), .key_len = (uint32_t)strlen(k),
		.key_ptr = (uintptr_t)k, .put_id = put_id, .len = len,
	};

	return t;
}

/* TARGET with argument T: 0 or errno. */
static int target_errno(int fd, struct fluxonkv_target t)
{
	return ioctl(fd, FLUXONKV_IOC_TARGET, &t) ? errno : 0;
}

/* A valid PUBLISH argument. */
static struct fluxonkv_publish publish_arg(uint64_t handle, uint64_t put_id)
{
	struct fluxonkv_publish p = { .size = sizeof(p), .handle = handle,
				      .put_id = put_id };

	return p;
}

static int publish_errno(int fd, struct fluxonkv_publish p)
{
	return ioctl(fd, FLUXONKV_IOC_PUBLISH, &p) ? errno : 0;
}

/* A good TARGET of (K, PUT_ID, LEN) on M's session, checked. */
static struct fluxonkv_target target(struct master *m, const char *k,
				     uint64_t put_id, uint64_t len)
{
	struct fluxonkv_target t;
	int ret = fkv_dev_target(m->fd, k, strlen(k), put_id, len, &t);

	FKV_ASSERT(ret == 0, "TARGET '%s' %" PRIu64 " bytes: %s", k, len,
		   strerror(-ret));
	FKV_ASSERT_NE(t.holder_id, 0);
	FKV_ASSERT_EQ(t.offset % FLUXONKV_SEGMENT_ALIGN, 0);
	FKV_ASSERT_LE(t.offset + len, m->size);
	FKV_ASSERT(FLUXONKV_HANDLE_NODE(t.handle) == NODE,
		   "handle %#" PRIx64 " is not node %u's", (uint64_t)t.handle,
		   NODE);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_TAG(t.handle), FLUXONKV_HANDLE_TAG_OF(put_id));
	FKV_ASSERT_NE(t.handle & FLUXONKV_HANDLE_SLOT_MASK, 0);
	/* the input comes back as it went in */
	FKV_ASSERT_EQ(t.size, sizeof(t));
	FKV_ASSERT_EQ(t.key_len, strlen(k));
	FKV_ASSERT_EQ(t.key_ptr, (uintptr_t)k);
	FKV_ASSERT_EQ(t.put_id, put_id);
	FKV_ASSERT_EQ(t.len, len);
	FKV_ASSERT_EQ(t.flags, 0);
	FKV_ASSERT(!t.reserved[0] && !t.reserved[1], "reserved written");
	return t;
}

/* T's holder released and its replica dropped: the segment empty again. */
static void target_gone(struct master *m, const struct fluxonkv_target *t)
{
	FKV_ASSERT_EQ(fkv_dev_release(m->fd, t->holder_id), 0);
	FKV_ASSERT_EQ(drop_replica(&m->nl, t->handle), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
}

struct eperm_arg {
	const char *k;
	uint64_t handle, put_id;
};

/* In a child: O_RDWR without CAP_SYS_ADMIN is a client session. */
static void target_without_cap_is_eperm(void *arg)
{
	const struct eperm_arg *e = arg;
	struct fluxonkv_target t;
	int fd;

	FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0, "open O_RDWR: %s", strerror(errno));
	FKV_EXPECT_EQ(fkv_dev_target(fd, e->k, strlen(e->k), e->put_id + 1,
				     100, &t), -EPERM);
	FKV_EXPECT_EQ(t.holder_id, 0);
	FKV_EXPECT_EQ(t.handle, 0);
	FKV_EXPECT_EQ(fkv_dev_publish(fd, e->handle, e->put_id, 0), -EPERM);
	FKV_EXPECT_EQ(fkv_dev_publish(fd, e->handle, e->put_id,
				      FLUXONKV_PUBLISH_F_PERSIST), -EPERM);
	close(fd);
}

/*
 * TARGET and PUBLISH are the node daemon's: an O_RDONLY session, or O_RDWR
 * without CAP_SYS_ADMIN, gets EPERM (after the size check, before the
 * fields), even for a live target's handle.
 */
FKV_TEST(target_and_publish_need_a_privileged_session)
{
	const char *k = "tgt-priv";
	struct fluxonkv_target good, t;
	struct fluxonkv_publish p;
	struct eperm_arg e;
	struct master m;
	uint64_t used;
	int ro;

	FKV_LOAD(PARAMS);
	master_start_as(&m, FLUXONKV_REGISTER_F_PLACEMENT, NODE);
	good = target(&m, k, 5, 100);
	used = fkv_sysfs("segment_used_bytes");
	e = (struct eperm_arg){ k, good.handle, good.put_id };

	ro = fkv_dev_open_ro();
	FKV_ASSERT(ro >= 0);
	FKV_ASSERT_EQ(fkv_dev_target(ro, k, strlen(k), 6, 100, &t), -EPERM);
	FKV_ASSERT_EQ(t.holder_id, 0);
	FKV_ASSERT_EQ(t.offset, 0);
	FKV_ASSERT_EQ(t.handle, 0);
	FKV_ASSERT_EQ(fkv_dev_publish(ro, good.handle, 5, 0), -EPERM);
	/* the size first ... */
	t = target_arg(k, 6, 100);
	t.size = 8;
	FKV_EXPECT_EQ(target_errno(ro, t), EINVAL);
	p = publish_arg(good.handle, 5);
	p.size = FLUXONKV_PUBLISH_SIZE_VER0 - 8;
	FKV_EXPECT_EQ(publish_errno(ro, p), EINVAL);
	/* ... then the privilege, before the fields */
	t = target_arg(k, 0, 0);
	FKV_EXPECT_EQ(target_errno(ro, t), EPERM);
	p = publish_arg(0, 0);
	p.flags = 0x80;
	FKV_EXPECT_EQ(publish_errno(ro, p), EPERM);
	close(ro);
	fkv_in_child(target_without_cap_is_eperm, &e,
		     "TARGET/PUBLISH without CAP_SYS_ADMIN");

	FKV_ASSERT_EQ(fkv_sysfs("puts_targeted"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), used);
	target_gone(&m, &good);
	master_stop(&m);
}

/* Every field TARGET and PUBLISH check, one at a time; nothing is made. */
FKV_TEST(target_and_publish_refuse_bad_fields)
{
	static char longkey[FLUXONKV_KEY_MAX + 2];
	const char *k = "tgt-bad";
	struct {
		struct fluxonkv_target t;
		uint8_t tail[64];
	} big;
	struct fluxonkv_target t, whole;
	struct fluxonkv_publish p;
	struct master m;
	uint64_t cap;

	memset(longkey, 'k', FLUXONKV_KEY_MAX + 1);
	FKV_LOAD(PARAMS);
	master_start_as(&m, FLUXONKV_REGISTER_F_PLACEMENT, NODE);
	cap = m.size;

#define EXPECT_TARGET(field_set, err)					\
	do {								\
		t = target_arg(k, 5, 100);				\
		field_set;						\
		FKV_EXPECT(target_errno(m.fd, t) == (err),		\
			   "TARGET with %s: want %s", #field_set,	\
			   strerror(err));				\
	} while (0)

	EXPECT_TARGET(t.size = 8, EINVAL);
	EXPECT_TARGET(t.size = FLUXONKV_TARGET_SIZE_VER0 - 8, EINVAL);
	EXPECT_TARGET(t.put_id = 0, EINVAL);
	EXPECT_TARGET(t.len = 0, EINVAL);
	EXPECT_TARGET(t.len = cap + 1, E2BIG);
	EXPECT_TARGET(t.len = FLUXONKV_VALUE_MAX + 1, E2BIG);
	EXPECT_TARGET(t.flags = 1, EINVAL);
	EXPECT_TARGET(t.flags = 1ULL << 63, EINVAL);
	EXPECT_TARGET(t.holder_id = 1, EINVAL);
	EXPECT_TARGET(t.offset = FLUXONKV_SEGMENT_ALIGN, EINVAL);
	EXPECT_TARGET(t.handle = HANDLE_OF(NODE, 5, 1), EINVAL);
	EXPECT_TARGET(t.reserved[0] = 1, EINVAL);
	EXPECT_TARGET(t.reserved[1] = 1, EINVAL);
	EXPECT_TARGET(t.key_len = 0, EINVAL);
	EXPECT_TARGET((t.key_ptr = (uintptr_t)longkey,
		       t.key_len = FLUXONKV_KEY_MAX + 1), EINVAL);
	EXPECT_TARGET(t.key_ptr = 8, EFAULT);
	/* a larger struct: its tail must be zero */
	memset(&big, 0, sizeof(big));
	big.t = target_arg(k, 5, 100);
	big.t.size = sizeof(big);
	big.tail[63] = 1;
	FKV_EXPECT(ioctl(m.fd, FLUXONKV_IOC_TARGET, &big) < 0 &&
		   errno == E2BIG, "TARGET with a nonzero tail");
	FKV_ASSERT_EQ(fkv_sysfs("puts_targeted"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), 0);

	/* the longest key, the whole segment and a zero tail are fine */
	longkey[FLUXONKV_KEY_MAX] = 0;
	whole = target(&m, longkey, 5, cap);
	FKV_ASSERT_EQ(whole.offset, 0);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), cap);
	target_gone(&m, &whole);
	big.tail[63] = 0;
	FKV_ASSERT_EQ(ioctl(m.fd, FLUXONKV_IOC_TARGET, &big), 0);
	FKV_ASSERT_NE(big.t.holder_id, 0);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(big.t.handle), NODE);
	FKV_ASSERT_EQ(big.tail[63], 0);
	FKV_ASSERT_EQ(fkv_sysfs("puts_targeted"), 2);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);

#define EXPECT_PUBLISH(field_set, err)					\
	do {								\
		p = publish_arg(big.t.handle, 5);			\
		field_set;						\
		FKV_EXPECT(publish_errno(m.fd, p) == (err),		\
			   "PUBLISH with %s: want %s", #field_set,	\
			   strerror(err));				\
	} while (0)

	EXPECT_PUBLISH(p.size = 8, EINVAL);
	EXPECT_PUBLISH(p.size = FLUXONKV_PUBLISH_SIZE_VER0 - 8, EINVAL);
	EXPECT_PUBLISH(p.flags = 1U << 1, EINVAL);
	EXPECT_PUBLISH(p.flags = 1U << 31, EINVAL);
	EXPECT_PUBLISH(p.handle = 0, EINVAL);
	EXPECT_PUBLISH(p.put_id = 0, EINVAL);
	EXPECT_PUBLISH(p.reserved[0] = 1, EINVAL);
	EXPECT_PUBLISH(p.reserved[1] = 1, EINVAL);
	/* dropped, never made, another node's */
	EXPECT_PUBLISH(p.handle = whole.handle, ENOENT);
	EXPECT_PUBLISH(p.handle = HANDLE_OF(NODE, 5, 0xabc), ENOENT);
	EXPECT_PUBLISH(p.handle = HANDLE_OF(OTHER, 5, 1), ENOENT);
#undef EXPECT_PUBLISH
#undef EXPECT_TARGET
	/* none of them published it */
	{
		struct client c = client_get(k, 0);
		struct client_result r;

		answer_miss(&m, k);
		r = client_result(&c);
		client_end(&c);
		FKV_ASSERT_EQ(r.err, ENOENT);
	}
	target_gone(&m, &big.t);
	master_stop(&m);
}

/*
 * The whole target flow: TARGET, the daemon writes the value through its
 * writable mapping, gets ask the master until PUBLISH; PUBLISH of another
 * version or handle is ENOENT; published, a get is a local memory hit of
 * exactly those bytes with no GET_START, and HOLD by handle works; the
 * master's DROP_REPLICA takes it out of the index (PUBLISH ENOENT again)
 * while the daemon's holder keeps the bytes until released.
 */
FKV_TEST(published_target_is_a_local_memory_hit_without_asking_the_master)
{
	const char *k = "placed-here";
	const uint64_t put_id = 42, len = 100003, salt = 0x7a;
	const uint64_t base = FLUXONKV_SEGMENT_ALIGN, span = FKV_ALIGN_UP(len);
	struct fluxonkv_target t;
	struct fluxonkv_hold hold;
	struct client_result r;
	uint64_t hf, hits, h = 0;
	struct master m;
	struct client c;

	FKV_LOAD(PARAMS);
	master_start_as(&m, FLUXONKV_REGISTER_F_PLACEMENT, NODE);
	hf = master_put_filler(&m);
	t = target(&m, k, put_id, len);
	FKV_ASSERT_GE(t.offset, base);
	FKV_ASSERT_EQ(fkv_sysfs("puts_targeted"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 2);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
	if (fkv_debugfs_replica(k, put_id, &h) != -ENOENT)
		FKV_ASSERT(h == t.handle, "debugfs replicas: %#" PRIx64
			   ", TARGET said %#" PRIx64, h, (uint64_t)t.handle);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_NEED_ROOM,
			 "a target that fits asked for room");
	fkv_pattern_fill(m.map + t.offset, len, k, strlen(k), salt);

	/* not published yet: a get asks the master */
	c = client_get(k, salt);
	answer_miss(&m, k);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ENOENT);
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, t.handle, put_id + 1, 0), -ENOENT);
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, t.handle, put_id - 1, 0), -ENOENT);
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, t.handle + 1, put_id, 0), -ENOENT);

	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, t.handle, put_id, 0), 0);
	hits = fkv_sysfs("hits_memory");
	r = client_get_once(k, salt);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(r.put_id, put_id);
	FKV_ASSERT_EQ(r.len, len);
	FKV_ASSERT_EQ(r.offset, t.offset);
	FKV_ASSERT(r.intact, "the published target's bytes");
	FKV_ASSERT(r.tail_zero, "bytes after the value in its last granule");
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_START,
			 "a published target is not a local hit");
	FKV_ASSERT_EQ(fkv_sysfs("hits_memory"), hits + 1);
	FKV_ASSERT_EQ(fkv_dev_hold(m.fd, k, strlen(k), t.handle, put_id,
				   &hold), 0);
	FKV_ASSERT_EQ(hold.offset, t.offset);
	FKV_ASSERT_EQ(hold.len, len);
	FKV_ASSERT_EQ(fkv_dev_release(m.fd, hold.holder_id), 0);

	/* the master drops it; the daemon's holder still pins the bytes */
	FKV_ASSERT_EQ(drop_replica(&m.nl, t.handle), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, t.handle, put_id, 0), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
	FKV_ASSERT_PATTERN(m.map + t.offset, len, k, strlen(k), salt);
	c = client_get(k, salt);
	answer_miss(&m, k);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ENOENT);
	FKV_ASSERT_EQ(fkv_dev_release(m.fd, t.holder_id), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(drop_replica(&m.nl, hf), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	master_stop(&m);
}

/*
 * PUBLISH with FLUXONKV_PUBLISH_F_PERSIST and no SSD tier: the persist
 * fails as a put's would, telling the master (SSD_COMMIT with ERRNO
 * ENODEV, sent from a worker: the PUBLISH does not wait for it), and the
 * value stays memory-only: PUBLISH returns 0 and gets hit it.
 */
FKV_TEST(publish_with_persist_and_no_ssd_tier_stays_memory_only)
{
	const char *k = "persist-none";
	const uint64_t put_id = 43, len = 9000, salt = 0x5;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fluxonkv_target t;
	struct client_result r;
	struct master m;
	uint64_t req;

	FKV_LOAD(PARAMS);
	master_start_as(&m, FLUXONKV_REGISTER_F_PLACEMENT, NODE);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), 0);
	t = target(&m, k, put_id, len);
	fkv_pattern_fill(m.map + t.offset, len, k, strlen(k), salt);
	FKV_ASSERT_EQ(fkv_dev_release(m.fd, t.holder_id), 0);

	/*
	 * From the daemon's own session and thread, as fluxond does: the
	 * refused persist reports itself from a worker, so PUBLISH returns
	 * while that SSD_COMMIT still waits for us (were it sent from the
	 * ioctl, the answer below would find it timed out).
	 */
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, t.handle, put_id,
				      FLUXONKV_PUBLISH_F_PERSIST), 0);
	req = expect_upcall(&m.nl, FLUXONKV_CMD_SSD_COMMIT, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "SSD_COMMIT of '%s'",
		   k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), len);
	FKV_ASSERT(tb[FLUXONKV_A_ERRNO], "SSD_COMMIT without ERRNO");
	FKV_ASSERT_EQ((int32_t)fkv_nla_u32(tb[FLUXONKV_A_ERRNO]), -ENODEV);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_SSD_COMMIT, req, 0), 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_persist_errors"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_writes"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_used_bytes"), 0);

	r = client_get_once(k, salt);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(r.offset, t.offset);
	FKV_ASSERT(r.intact, "the memory-only value's bytes");
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_START,
			 "a published target is not a local hit");
	FKV_ASSERT_EQ(drop_replica(&m.nl, t.handle), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&m);
}

/*
 * A target waits for room like a put, and never places: ENOSPC from the
 * master keeps it waiting (NEED_ROOM again, no PUT_PLACE) until room is
 * made.  The TARGET runs in a child sharing the privileged session, which
 * therefore owns the holder.
 */
FKV_TEST(target_waits_for_room_like_a_put)
{
	const char *k = "tgt-room";
	const uint64_t put_id = 44, len = 200000;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fluxonkv_target t;
	uint64_t hog, req;
	struct master m;
	int rfd, status;
	pid_t pid;

	hog = begin_full(&m, FLUXONKV_REGISTER_F_PLACEMENT);
	pid = fkv_fork_piped(&rfd);
	if (pid == 0) {
		struct fluxonkv_target ct;

		if (fkv_dev_target(m.fd, k, strlen(k), put_id, len, &ct))
			ct.holder_id = 0;
		_exit(write(rfd, &ct, sizeof(ct)) == sizeof(ct) ? 0 : 2);
	}
	req = expect_upcall(&m.nl, FLUXONKV_CMD_NEED_ROOM, tb);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_BYTES]), len);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_NEED_ROOM, req,
				    -ENOSPC), 0);
	req = expect_upcall_in(&m.nl, FLUXONKV_CMD_NEED_ROOM, tb, 2000);
	FKV_ASSERT(fkv_nl_next(&m.nl, FLUXONKV_CMD_PUT_PLACE, tb, 0) != 0,
		   "a target was placed");
	FKV_ASSERT_EQ(fkv_sysfs("puts_targeted"), 0);
	FKV_ASSERT_EQ(drop_replica(&m.nl, hog), 0);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_NEED_ROOM, req, 0), 0);
	FKV_ASSERT_EQ(read(rfd, &t, sizeof(t)), sizeof(t));
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "targeting child status %#x", status);
	close(rfd);
	FKV_ASSERT(t.holder_id != 0, "TARGET after a room wait failed");
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(t.handle), NODE);
	FKV_ASSERT_EQ(fkv_sysfs("puts_targeted"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), FKV_ALIGN_UP(len));
	target_gone(&m, &t);
	master_stop(&m);
}

/* ---- 7: the daemon goes ---- */

/*
 * The daemon's socket closing drops every target, published or not (they
 * are the master's replicas); a holder the daemon's session still has
 * keeps its range, bytes intact, until released.  The next daemon starts
 * without any.
 */
FKV_TEST(daemon_leaving_drops_its_targets_but_holders_keep_their_bytes)
{
	const uint64_t la = 70000, lb = 5000, lc = 3000, salt = 0x77;
	struct fluxonkv_target ta, tb_, tc;
	struct master m;

	FKV_LOAD(PARAMS);
	master_start_as(&m, FLUXONKV_REGISTER_F_PLACEMENT, NODE);
	ta = target(&m, "gone-a", 50, la);	/* unpublished, held */
	fkv_pattern_fill(m.map + ta.offset, la, "gone-a", 6, salt);
	tb_ = target(&m, "gone-b", 51, lb);	/* published */
	fkv_pattern_fill(m.map + tb_.offset, lb, "gone-b", 6, salt);
	FKV_ASSERT_EQ(fkv_dev_release(m.fd, tb_.holder_id), 0);
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, tb_.handle, 51, 0), 0);
	tc = target(&m, "gone-c", 52, lc);	/* unpublished, released */
	FKV_ASSERT_EQ(fkv_dev_release(m.fd, tc.holder_id), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("puts_targeted"), 3);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), FKV_ALIGN_UP(la) +
		      FKV_ALIGN_UP(lb) + FKV_ALIGN_UP(lc));

	fkv_nl_close(&m.nl);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", FKV_ALIGN_UP(la));
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	FKV_ASSERT_PATTERN(m.map + ta.offset, la, "gone-a", 6, salt);
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, ta.handle, 50, 0), -ENOENT);
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, tb_.handle, 51, 0), -ENOENT);
	FKV_ASSERT_EQ(fkv_dev_release(m.fd, ta.holder_id), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	/* No daemon: no target either (nobody would ever drop it). */
	{
		struct fluxonkv_target t;

		FKV_ASSERT_EQ(fkv_dev_target(m.fd, "gone-d", 6, 53, 4096, &t),
			      -ENOTCONN);
		FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
		FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	}

	/* a new daemon: nothing of the old one's targets */
	master_open(&m);
	{
		struct nlattr *tb[FLUXONKV_A_MAX + 1];

		FKV_ASSERT_EQ(master_register_as(&m,
						 FLUXONKV_REGISTER_F_PLACEMENT,
						 NODE, tb), 0);
	}
	FKV_ASSERT_EQ(fkv_dev_publish(m.fd, tc.handle, 52, 0), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("puts_targeted"), 3);
	master_stop(&m);
}
