// SPDX-License-Identifier: GPL-2.0
/*
 * test_keep - warm restart: a daemon registered with
 * FLUXONKV_REGISTER_F_KEEP leaves its replica references and SSD routes in
 * the module when it goes; the next daemon registering with KEEP adopts
 * them (answer FLAGS ADOPT, handles renumbered to its NODE_ID, replicas
 * never published as their key's current copy dropped first), one
 * registering without KEEP gets an empty module.  FLUXONKV_CMD_DUMP (a
 * netlink dump, admin only, from any socket) lists the replicas
 * {HANDLE, KEY, PUT_ID, LEN, SOURCE=MEMORY, FLAGS} and the routed SSD
 * entries {KEY, PUT_ID, LEN, SOURCE=SSD}.
 *
 * The test plays the daemons on raw genl sockets (fkv_master.h) and reads
 * the dump on a raw AF_NETLINK socket of its own, counting the datagrams
 * it comes in.  A daemon "goes" by closing its socket, session and
 * mapping (as a crash would) or by DAEMON_UNREGISTER; the module's
 * teardown of it has run once the events group says DAEMON_PID 0.
 * Values are patterns of (key, length, salt 0), compared byte for byte.
 */
#include <grp.h>

#include "fkv_env.h"
#include "fkv_master.h"

#define PARAMS		"segment_mb=8 request_timeout_ms=5000"
#define KEEP		FLUXONKV_REGISTER_F_KEEP
#define ADOPT		FLUXONKV_REGISTER_F_ADOPT
#define LOCAL		FLUXONKV_REGISTER_F_LOCAL_ROUTES
#define INDEXED		FLUXONKV_DUMP_F_INDEXED
#define MEMORY		FLUXONKV_SOURCE_MEMORY
#define SSD		FLUXONKV_SOURCE_SSD
/* node ids past 8 bits: handles of ABI 2 carry 12 (1,024 members) */
#define NODE_A		700	/* the daemon that goes */
#define NODE_B		1023	/* the one that comes after it */
#define NOBODY		65534
#define GRAN(len)	FKV_ALIGN_UP((uint64_t)(len))

/* A's handle H as B's: only the node id bits change. */
static uint64_t renumbered(uint64_t h, uint32_t node)
{
	return (h & ~((uint64_t)FLUXONKV_NODE_MAX <<
		      FLUXONKV_HANDLE_NODE_SHIFT)) |
	       (uint64_t)node << FLUXONKV_HANDLE_NODE_SHIFT;
}

/* ---- the daemons ---- */

/* A socket in the events group: DAEMON_EVENT on every register and leave. */
static void events_open(struct fkv_nl *ev)
{
	int grp;

	FKV_ASSERT_EQ(fkv_nl_open(ev), 0);
	grp = genl_ctrl_resolve_grp(ev->sk, FLUXONKV_GENL_NAME,
				    FLUXONKV_GENL_MCGRP_EVENTS);
	FKV_ASSERT(grp >= 0, "group %s: %d", FLUXONKV_GENL_MCGRP_EVENTS, grp);
	FKV_ASSERT_EQ(nl_socket_add_membership(ev->sk, grp), 0);
}

/*
 * The next DAEMON_EVENT with DAEMON_PID PID (others are skipped).  PID 0
 * is sent at the end of the module's teardown of a daemon that went.
 */
static void wait_daemon_event(struct fkv_nl *ev, uint32_t pid)
{
	int64_t end = fkv_now_ms() + 5000;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];

	for (;;) {
		int64_t left = end - fkv_now_ms();

		FKV_ASSERT(left > 0, "no DAEMON_EVENT (DAEMON_PID %u) in 5 s",
			   pid);
		if (!fkv_nl_next(ev, FLUXONKV_CMD_DAEMON_EVENT, tb,
				 (unsigned int)left) &&
		    fkv_nla_u32(tb[FLUXONKV_A_DAEMON_PID]) == pid)
			return;
	}
}

/*
 * M registered with FLAGS as NODE on a new socket, its privileged session
 * mapped; returns the FLAGS of the register answer.
 */
static uint32_t daemon_up(struct master *m, uint32_t flags, uint32_t node)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint32_t got;

	master_open(m);
	FKV_ASSERT_EQ(master_register_as(m, flags, node, tb), 0);
	FKV_ASSERT(tb[FLUXONKV_A_FLAGS], "register answer without FLAGS");
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_NODE_ID]), node);
	got = fkv_nla_u32(tb[FLUXONKV_A_FLAGS]);
	master_map(m);
	return got;
}

/* M goes as a crash would; returns once the module's teardown of it ran. */
static void daemon_crash(struct master *m, struct fkv_nl *ev)
{
	master_stop(m);
	wait_daemon_event(ev, 0);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), 0);
}

/* ---- puts, played as the master ---- */

/*
 * A client's put of the pattern of (K, VLEN, salt 0): PUT_START answered
 * with PUT_ID and START_FLAGS; returns at its PUT_DONE, left unanswered
 * (its REQ_ID in *req), with the replica's handle (of node NODE) in *h.
 */
static struct client put_to_done(struct master *m, const char *k, size_t vlen,
				 uint64_t put_id, uint32_t start_flags,
				 uint32_t node, uint64_t *h, uint64_t *req)
{
	struct answer a = { .cmd = FLUXONKV_CMD_PUT_START, .has_req_id = true,
			    .has_status = true, .has_flags = true,
			    .flags = start_flags, .put_id = put_id };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client c = client_start(CLIENT_PUT, k, vlen, 0);

	a.req_id = expect_upcall(&m->nl, FLUXONKV_CMD_PUT_START, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "PUT_START of '%s'", k);
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
	*req = expect_upcall(&m->nl, FLUXONKV_CMD_PUT_DONE, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "PUT_DONE of '%s'", k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	*h = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(*h), node);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_TAG(*h), FLUXONKV_HANDLE_TAG_OF(put_id));
	FKV_ASSERT_NE(*h & FLUXONKV_HANDLE_SLOT_MASK, 0);
	return c;
}

/* PUT_DONE REQ answered with FLAGS: the put returns 0 at PUT_ID. */
static void put_done(struct master *m, struct client *c, uint64_t req,
		     uint32_t flags, uint64_t put_id)
{
	struct answer a = { .cmd = FLUXONKV_CMD_PUT_DONE, .has_req_id = true,
			    .req_id = req, .has_status = true,
			    .has_flags = true, .flags = flags };
	struct client_result r;

	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
	r = client_result(c);
	client_end(c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, put_id);
}

/* A whole put, published; the replica's handle (node NODE). */
static uint64_t put_published(struct master *m, const char *k, size_t vlen,
			      uint64_t put_id, uint32_t start_flags,
			      uint32_t node)
{
	uint64_t h, req;
	struct client c = put_to_done(m, k, vlen, put_id, start_flags, node,
				      &h, &req);

	put_done(m, &c, req, FLUXONKV_PUT_F_PUBLISHED, put_id);
	return h;
}

/* A published TARGET of (K, PUT_ID, LEN), holder released; its handle. */
static uint64_t target_filled(struct master *m, const char *k,
			      uint64_t put_id, uint64_t len, bool publish)
{
	struct fluxonkv_target t;
	int ret = fkv_dev_target(m->fd, k, strlen(k), put_id, len, &t);

	FKV_ASSERT(ret == 0, "TARGET '%s': %s", k, strerror(-ret));
	FKV_ASSERT_LE(t.offset + len, m->size);
	fkv_pattern_fill(m->map + t.offset, len, k, strlen(k), 0);
	FKV_ASSERT_EQ(fkv_dev_release(m->fd, t.holder_id), 0);
	if (publish)
		FKV_ASSERT_EQ(fkv_dev_publish(m->fd, t.handle, put_id, 0), 0);
	return t.handle;
}

/* A client's get of K (salt 0), answered for the master: a miss. */
static void get_misses(struct master *m, const char *k)
{
	struct client c = client_get(k, 0);
	struct client_result r;

	answer_miss(m, k);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ENOENT);
}

/* A client's whole get of K: a local DRAM hit of PUT_ID, LEN, no upcall. */
static void get_hits_dram(struct master *m, const char *k, uint64_t put_id,
			  uint64_t len)
{
	uint64_t hits = fkv_sysfs("hits_memory");
	struct client_result r = client_get_once(k, 0);

	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.source, MEMORY);
	FKV_ASSERT_EQ(r.put_id, put_id);
	FKV_ASSERT_EQ(r.len, len);
	FKV_ASSERT(r.intact, "'%s': the bytes of version %" PRIu64, k, put_id);
	expect_no_upcall(&m->nl, FLUXONKV_CMD_GET_START,
			 "an indexed key asked the master");
	FKV_ASSERT_EQ(fkv_sysfs("hits_memory"), hits + 1);
}

/*
 * A kept replica of K (HANDLE, PUT_ID, LEN) before ADOPT_DONE: a get is
 * no local hit but asks M (GET_START), which routes it to the replica by
 * handle; the client gets those bytes.
 */
static void get_asks_until_adopted(struct master *m, const char *k,
				   uint64_t handle, uint64_t put_id,
				   uint64_t len)
{
	struct answer a = { .cmd = FLUXONKV_CMD_GET_START, .has_req_id = true,
			    .has_status = true, .source = MEMORY,
			    .handle = handle, .put_id = put_id, .len = len };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client c = client_get(k, 0);
	struct client_result r;

	a.req_id = expect_upcall(&m->nl, FLUXONKV_CMD_GET_START, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k),
		   "GET_START of the kept '%s'", k);
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.source, MEMORY);
	FKV_ASSERT_EQ(r.put_id, put_id);
	FKV_ASSERT(r.intact, "'%s': the kept bytes of version %" PRIu64, k,
		   put_id);
}

/*
 * ADOPT_DONE from M: refused from any other socket (EPERM), then M's
 * makes the kept replicas local hits again.
 */
static void adopt_done(struct master *m)
{
	struct answer a = { .cmd = FLUXONKV_CMD_ADOPT_DONE };
	struct fkv_nl other;

	FKV_ASSERT_EQ(fkv_nl_open(&other), 0);
	FKV_ASSERT_EQ(send_answer(&other, &a), -EPERM);
	fkv_nl_close(&other);
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
}

/* DAEMON_UNREGISTER {FLAGS} from M's socket (no FLAGS when 0). */
static int unregister_flags(struct master *m, uint32_t flags)
{
	struct nl_msg *msg = fkv_nl_msg(&m->nl, FLUXONKV_CMD_DAEMON_UNREGISTER);

	FKV_ASSERT(msg);
	if (flags)
		FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_FLAGS, flags), 0);
	return fkv_nl_transact(&m->nl, msg);
}

/* DAEMON_UNREGISTER from M's socket. */
static void daemon_unregister(struct master *m)
{
	FKV_ASSERT_EQ(unregister_flags(m, 0), 0);
}

/* ---- FLUXONKV_CMD_DUMP on a raw netlink socket ---- */

struct rec {
	bool has_handle, has_flags;
	uint64_t handle, put_id, len;
	uint32_t source, flags;
	char key[FLUXONKV_KEY_MAX + 1];
};

struct dump {
	struct rec *r;
	int n;
	int datagrams;		/* how many recv()s brought records */
};

#define DUMP_SEQ	0x6b656570u

static int family_id(void)
{
	struct fkv_nl nl;
	int ret = fkv_nl_open(&nl), family;

	FKV_ASSERT(ret == 0, "genl family %s: %s", FLUXONKV_GENL_NAME,
		   strerror(-ret));
	family = nl.family;
	fkv_nl_close(&nl);
	return family;
}

/* One DUMP record, every attribute it must have checked. */
static void dump_add(struct dump *d, struct nlmsghdr *h)
{
	struct genlmsghdr *g = nlmsg_data(h);
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct rec *r;
	int klen;

	FKV_ASSERT_EQ(g->cmd, FLUXONKV_CMD_DUMP);
	FKV_ASSERT_EQ(genlmsg_parse(h, 0, tb, FLUXONKV_A_MAX, NULL), 0);
	d->r = realloc(d->r, (size_t)(d->n + 1) * sizeof(*d->r));
	FKV_ASSERT(d->r);
	r = &d->r[d->n++];
	memset(r, 0, sizeof(*r));
	FKV_ASSERT(tb[FLUXONKV_A_KEY], "DUMP record without KEY");
	klen = nla_len(tb[FLUXONKV_A_KEY]);
	FKV_ASSERT(klen >= 1 && klen <= FLUXONKV_KEY_MAX, "KEY of %d bytes",
		   klen);
	memcpy(r->key, nla_data(tb[FLUXONKV_A_KEY]), (size_t)klen);
	FKV_ASSERT(tb[FLUXONKV_A_PUT_ID] && tb[FLUXONKV_A_LEN] &&
		   tb[FLUXONKV_A_SOURCE], "'%s': DUMP record without "
		   "PUT_ID, LEN or SOURCE", r->key);
	r->put_id = fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]);
	r->len = fkv_nla_u64(tb[FLUXONKV_A_LEN]);
	r->source = fkv_nla_u32(tb[FLUXONKV_A_SOURCE]);
	r->has_handle = tb[FLUXONKV_A_HANDLE];
	r->handle = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	r->has_flags = tb[FLUXONKV_A_FLAGS];
	r->flags = fkv_nla_u32(tb[FLUXONKV_A_FLAGS]);
}

/*
 * FLUXONKV_CMD_DUMP from a fresh socket (not a daemon's): 0 with every
 * record in *d (free d->r), or the kernel's -errno.
 */
static int dump_raw(struct dump *d)
{
	static uint8_t buf[64 * 1024];
	struct {
		struct nlmsghdr n;
		struct genlmsghdr g;
	} req;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct timeval tv = { .tv_sec = 10 };
	socklen_t salen = sizeof(sa);
	int family = family_id(), fd, ret = 1;

	memset(d, 0, sizeof(*d));
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	FKV_ASSERT(fd >= 0, "netlink socket: %s", strerror(errno));
	FKV_ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	FKV_ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sa, &salen), 0);
	FKV_ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
				 sizeof(tv)), 0);
	memset(&req, 0, sizeof(req));
	req.n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	req.n.nlmsg_type = (uint16_t)family;
	req.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.n.nlmsg_seq = DUMP_SEQ;
	req.g.cmd = FLUXONKV_CMD_DUMP;
	req.g.version = FLUXONKV_GENL_VERSION;
	FKV_ASSERT_EQ(send(fd, &req, req.n.nlmsg_len, 0), req.n.nlmsg_len);
	while (ret > 0) {
		int n = (int)recv(fd, buf, sizeof(buf), MSG_TRUNC);
		struct nlmsghdr *h;
		bool any = false;

		FKV_ASSERT(n > 0, "dump: recv: %s", strerror(errno));
		FKV_ASSERT_LE(n, sizeof(buf));
		for (h = (struct nlmsghdr *)buf; ret > 0 && NLMSG_OK(h, n);
		     h = NLMSG_NEXT(h, n)) {
			FKV_ASSERT_EQ(h->nlmsg_seq, DUMP_SEQ);
			FKV_ASSERT_EQ(h->nlmsg_pid, sa.nl_pid);
			if (h->nlmsg_type == NLMSG_DONE) {
				FKV_ASSERT_GE(h->nlmsg_len, NLMSG_LENGTH(4));
				ret = *(int *)NLMSG_DATA(h);
				FKV_ASSERT(ret <= 0, "NLMSG_DONE %d", ret);
				if (!ret)
					ret = -1000;	/* done, no error */
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				ret = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
				FKV_ASSERT(ret < 0, "dump acked: %d", ret);
				break;
			}
			FKV_ASSERT_EQ(h->nlmsg_type, family);
			FKV_ASSERT(h->nlmsg_flags & NLM_F_MULTI,
				   "DUMP record without NLM_F_MULTI");
			dump_add(d, h);
			any = true;
		}
		d->datagrams += any;
	}
	close(fd);
	return ret == -1000 ? 0 : ret;
}

/* DUMP, which must succeed with N records. */
static void dump_n(struct dump *d, int n)
{
	FKV_ASSERT_EQ(dump_raw(d), 0);
	FKV_ASSERT_EQ(d->n, n);
}

/* How many records of K from SOURCE (at PUT_ID; 0: any) D has. */
static int dump_count(const struct dump *d, const char *k, uint32_t source,
		      uint64_t put_id)
{
	int i, n = 0;

	for (i = 0; i < d->n; i++)
		if (!strcmp(d->r[i].key, k) && d->r[i].source == source &&
		    (!put_id || d->r[i].put_id == put_id))
			n++;
	return n;
}

/* The one record of K (version PUT_ID) from SOURCE in D. */
static const struct rec *dump_one(const struct dump *d, const char *k,
				  uint32_t source, uint64_t put_id)
{
	int i;

	FKV_ASSERT(dump_count(d, k, source, put_id) == 1,
		   "'%s' (source %u, version %" PRIu64 ") is in the dump "
		   "%d times", k, source, put_id,
		   dump_count(d, k, source, put_id));
	for (i = 0; i < d->n; i++)
		if (!strcmp(d->r[i].key, k) && d->r[i].source == source &&
		    d->r[i].put_id == put_id)
			break;
	return &d->r[i];
}

/*
 * D lists K's DRAM replica of PUT_ID and LEN once, with handle HANDLE
 * (its node NODE) and INDEXED set or not.
 */
static void expect_mem(const struct dump *d, const char *k, uint64_t put_id,
		       uint64_t len, uint64_t handle, uint32_t node,
		       bool indexed)
{
	const struct rec *r = dump_one(d, k, MEMORY, put_id);

	FKV_ASSERT(r->has_handle, "'%s': a replica without HANDLE", k);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(r->handle), node);
	FKV_ASSERT_EQ(r->handle, handle);
	FKV_ASSERT_EQ(r->len, len);
	FKV_ASSERT(r->has_flags, "'%s': a replica without FLAGS", k);
	FKV_ASSERT_EQ(r->flags, indexed ? INDEXED : 0);
}

/* D lists K's routed SSD entry of PUT_ID and LEN once, nothing more. */
static void expect_ssd(const struct dump *d, const char *k, uint64_t put_id,
		       uint64_t len)
{
	const struct rec *r = dump_one(d, k, SSD, put_id);

	FKV_ASSERT_EQ(r->len, len);
	FKV_ASSERT(!r->has_handle, "'%s': an SSD entry with a HANDLE", k);
	FKV_ASSERT(!r->has_flags, "'%s': an SSD entry with FLAGS", k);
}

/* ---- 1. without KEEP ---- */

static const char *const plain_keys[] = { "plain-0", "plain-1", "plain-2" };

static uint64_t plain_len(int i)
{
	return 1000 + (uint64_t)i * 2345;
}

/*
 * A daemon registered without KEEP that goes takes its replicas with it,
 * as before: replicas 0 once its teardown ran, nothing in the dump; a
 * holder taken before stays readable; the next daemon (even one with
 * KEEP) adopts nothing and gets are asked of it again.
 */
FKV_TEST(without_keep_the_replicas_go_with_the_daemon)
{
	struct client_result r;
	struct master a, b;
	struct fkv_nl ev;
	struct client c;
	struct dump d;
	uint64_t h[3];
	int i;

	FKV_LOAD(PARAMS);
	events_open(&ev);
	FKV_ASSERT_EQ(daemon_up(&a, 0, NODE_A), 0);
	for (i = 0; i < 3; i++)
		h[i] = put_published(&a, plain_keys[i], plain_len(i), 10 + i,
				     0, NODE_A);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);
	dump_n(&d, 3);
	for (i = 0; i < 3; i++)
		expect_mem(&d, plain_keys[i], 10 + i, plain_len(i), h[i],
			   NODE_A, true);
	free(d.r);

	c = client_get(plain_keys[1], 0);
	r = client_result(&c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.put_id, 11);
	FKV_ASSERT(r.intact, "the held value's bytes");

	daemon_crash(&a, &ev);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	dump_n(&d, 0);
	free(d.r);
	r = client_recheck(&c);
	FKV_ASSERT(r.intact, "a holder from before the daemon went");
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", GRAN(plain_len(1)));
	r = client_get_once(plain_keys[0], 0);
	FKV_ASSERT_EQ(r.err, ENOTCONN);

	/* nothing was kept: KEEP alone, no ADOPT */
	FKV_ASSERT_EQ(daemon_up(&b, KEEP, NODE_B), KEEP);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	dump_n(&d, 0);
	free(d.r);
	get_misses(&b, plain_keys[0]);

	client_end(&c);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	master_stop(&b);
	fkv_nl_close(&ev);
}

/* ---- 2. KEEP, then a daemon with KEEP ---- */

static const char *const keep_keys[] = { "keep-0", "keep-1", "keep-2" };

static uint64_t keep_len(int i)
{
	return 3000 + (uint64_t)i * 1111;
}

/*
 * A (KEEP) goes: its replicas stay (replicas and segment use unchanged,
 * the dump from another socket lists them under A's node id), gets fail
 * with ENOTCONN while no daemon is registered, a holder stays readable.
 * B registers with KEEP as another node: ADOPT, the same replicas
 * renumbered to B's node (slot and version bits unchanged), gets hit them
 * in DRAM without asking and their ACCESS notes name the new handles,
 * HOLD and DROP_REPLICA take the new handles and refuse A's.
 */
/* LEASE {DEADLINE = now + AHEAD_MS} (no DEADLINE: @with false) from NL. */
static int send_lease(struct fkv_nl *nl, int64_t ahead_ms, bool with)
{
	struct nl_msg *msg = fkv_nl_msg(nl, FLUXONKV_CMD_LEASE);
	struct timespec ts;
	uint64_t now;

	FKV_ASSERT(msg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (with)
		FKV_ASSERT_EQ(nla_put_u64(msg, FLUXONKV_A_DEADLINE,
					  now + ahead_ms * 1000000), 0);
	return fkv_nl_transact(nl, msg);
}

/*
 * A cluster node's local hits live on its master's lease (issue 28): with
 * FLUXONKV_REGISTER_F_LEASE, none before the first LEASE and none past
 * its deadline (the get asks the master, lease_refused counts it); only
 * the registered daemon may grant one, with a DEADLINE, at most an hour
 * ahead; a daemon registered without the flag has no lease to keep.
 */
FKV_TEST(a_leased_node_serves_local_hits_only_within_the_lease)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	const char *k = "lease-0";
	uint64_t h, refused;
	struct fkv_nl other;
	struct master a;

	FKV_LOAD(PARAMS);
	FKV_ASSERT_EQ(daemon_up(&a, FLUXONKV_REGISTER_F_LEASE, NODE_A),
		      FLUXONKV_REGISTER_F_LEASE);
	h = put_published(&a, k, 5000, 40, 0, NODE_A);
	/* no LEASE yet: the master is asked, and routes to the replica */
	refused = fkv_sysfs("lease_refused");
	get_asks_until_adopted(&a, k, h, 40, 5000);
	FKV_ASSERT(fkv_sysfs("lease_refused") > refused);

	FKV_ASSERT_EQ(fkv_nl_open(&other), 0);
	FKV_ASSERT_EQ(send_lease(&other, 10000, true), -EPERM);
	fkv_nl_close(&other);
	FKV_ASSERT_EQ(send_lease(&a.nl, 0, false), -EINVAL);
	FKV_ASSERT_EQ(send_lease(&a.nl, 2 * 3600 * 1000, true), -ERANGE);
	get_asks_until_adopted(&a, k, h, 40, 5000);	/* none took */

	FKV_ASSERT_EQ(send_lease(&a.nl, 10000, true), 0);
	get_hits_dram(&a, k, 40, 5000);
	get_hits_dram(&a, k, 40, 5000);
	/* the lease ran out (a LEASE in the past is one that did) */
	FKV_ASSERT_EQ(send_lease(&a.nl, -1, true), 0);
	refused = fkv_sysfs("lease_refused");
	get_asks_until_adopted(&a, k, h, 40, 5000);
	FKV_ASSERT(fkv_sysfs("lease_refused") > refused);
	/* a short one lapses by itself */
	FKV_ASSERT_EQ(send_lease(&a.nl, 300, true), 0);
	get_hits_dram(&a, k, 40, 5000);
	usleep(400 * 1000);
	get_asks_until_adopted(&a, k, h, 40, 5000);

	/* registered again without F_LEASE: no lease, local hits */
	FKV_ASSERT_EQ(master_register_as(&a, 0, NODE_A, tb), 0);
	get_hits_dram(&a, k, 40, 5000);
	FKV_ASSERT_EQ(send_lease(&a.nl, 10000, true), -EINVAL);
	master_stop(&a);
}

FKV_TEST(keep_then_keep_adopts_the_replicas_under_the_new_node_id)
{
	uint64_t h[3], used = 0, hits;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fluxonkv_hold hold;
	struct client_result r;
	struct master a, b;
	struct fkv_nl ev;
	struct client c;
	struct dump d;
	bool named;
	int i, n;

	FKV_LOAD(PARAMS);
	events_open(&ev);
	FKV_ASSERT_EQ(daemon_up(&a, KEEP, NODE_A), KEEP);
	for (i = 0; i < 3; i++) {
		h[i] = put_published(&a, keep_keys[i], keep_len(i), 20 + i, 0,
				     NODE_A);
		used += GRAN(keep_len(i));
	}
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), used);
	c = client_get(keep_keys[1], 0);
	r = client_result(&c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT(r.intact, "the held value's bytes");

	daemon_crash(&a, &ev);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), used);
	dump_n(&d, 3);
	for (i = 0; i < 3; i++)
		expect_mem(&d, keep_keys[i], 20 + i, keep_len(i), h[i], NODE_A,
			   true);
	free(d.r);
	r = client_recheck(&c);
	FKV_ASSERT(r.intact, "a holder from before the daemon went");
	r = client_get_once(keep_keys[0], 0);
	FKV_ASSERT_EQ(r.err, ENOTCONN);
	{
		struct client p = client_start(CLIENT_PUT, "nodaemon", 100, 0);

		r = client_result(&p);
		client_end(&p);
		FKV_ASSERT_EQ(r.err, ENOTCONN);
	}
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);

	FKV_ASSERT_EQ(daemon_up(&b, KEEP, NODE_B), KEEP | ADOPT);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), used);
	dump_n(&d, 3);
	for (i = 0; i < 3; i++)
		expect_mem(&d, keep_keys[i], 20 + i, keep_len(i),
			   renumbered(h[i], NODE_B), NODE_B, true);
	free(d.r);
	r = client_recheck(&c);
	FKV_ASSERT(r.intact, "a holder from before the daemon went");

	/*
	 * Not adopted yet (B's master may know a newer version): no local
	 * hit, the get asks B, which routes it to the kept replica by handle.
	 */
	get_asks_until_adopted(&b, keep_keys[0], renumbered(h[0], NODE_B), 20,
			       keep_len(0));
	/* ... and keep-1 was overwritten meanwhile: B refuses it, drops it */
	FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(h[1], NODE_B)), 0);
	adopt_done(&b);
	get_misses(&b, keep_keys[1]);

	/* a local DRAM hit; its ACCESS note names B's handle */
	get_hits_dram(&b, keep_keys[0], 20, keep_len(0));
	/* (batches of 10 ms: the note may come in the second one) */
	named = false;
	while (!named &&
	       fkv_nl_next(&b.nl, FLUXONKV_CMD_ACCESS, tb, 3000) == 0) {
		FKV_ASSERT(tb[FLUXONKV_A_HANDLES], "ACCESS without HANDLES");
		n = nla_len(tb[FLUXONKV_A_HANDLES]) / 8;
		for (i = 0; i < n; i++) {
			uint64_t x;

			memcpy(&x, (uint8_t *)nla_data(tb[FLUXONKV_A_HANDLES]) +
			       8 * i, 8);
			FKV_ASSERT(x != h[0], "ACCESS names A's handle %#" PRIx64,
				   x);
			named |= x == renumbered(h[0], NODE_B);
		}
	}
	FKV_ASSERT(named, "ACCESS does not name %#" PRIx64,
		   renumbered(h[0], NODE_B));
	hits = fkv_sysfs("hits_memory");
	get_hits_dram(&b, keep_keys[2], 22, keep_len(2));
	FKV_ASSERT_EQ(fkv_sysfs("hits_memory"), hits + 1);

	/* HOLD: B's handle, not A's */
	FKV_ASSERT_EQ(fkv_dev_hold(b.fd, keep_keys[2], strlen(keep_keys[2]),
				   h[2], 22, &hold), -ENOENT);
	FKV_ASSERT_EQ(fkv_dev_hold(b.fd, keep_keys[2], strlen(keep_keys[2]),
				   renumbered(h[2], NODE_B), 22, &hold), 0);
	FKV_ASSERT_EQ(hold.len, keep_len(2));
	FKV_ASSERT_PATTERN(b.map + hold.offset, hold.len, keep_keys[2],
			   strlen(keep_keys[2]), 0);
	FKV_ASSERT_EQ(fkv_dev_release(b.fd, hold.holder_id), 0);

	/* DROP_REPLICA: B's handles, not A's */
	for (i = 0; i < 3; i += 2) {
		FKV_ASSERT_EQ(drop_replica(&b.nl, h[i]), -ENOENT);
		FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(h[i], NODE_B)), 0);
	}
	FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(h[1], NODE_B)), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	r = client_recheck(&c);
	FKV_ASSERT(r.intact, "a holder of a dropped replica");
	client_end(&c);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	master_stop(&b);
	fkv_nl_close(&ev);
}

/* ---- 3. what was never published is not adopted ---- */

/*
 * A (KEEP) has published pub-1, pub-2 and "over" at 33 then 34 (33 still
 * referenced, no longer indexed), a TARGET "tgt" never published, and a
 * put "inflight" whose PUT_DONE it never answers.  The dump says which
 * are indexed.  A goes: the put fails with ENOTCONN (and drops its own
 * replica), the rest is kept as it was.  B (KEEP) adopts the three
 * indexed replicas only: "over" 33 and "tgt" are gone.
 */
FKV_TEST(adoption_drops_the_replicas_never_published)
{
	uint64_t hp1, hp2, h33, h34, ht, hi, req;
	struct fluxonkv_hold hold;
	struct client_result r;
	struct master a, b;
	struct fkv_nl ev;
	struct client c;
	struct dump d;

	FKV_LOAD(PARAMS);
	events_open(&ev);
	FKV_ASSERT_EQ(daemon_up(&a, KEEP, NODE_A), KEEP);
	hp1 = put_published(&a, "pub-1", 2000, 31, 0, NODE_A);
	hp2 = put_published(&a, "pub-2", 2500, 32, 0, NODE_A);
	h33 = put_published(&a, "over", 3000, 33, 0, NODE_A);
	h34 = put_published(&a, "over", 3500, 34, 0, NODE_A);
	ht = target_filled(&a, "tgt", 35, 1500, false);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(ht), NODE_A);
	c = put_to_done(&a, "inflight", 1200, 36, 0, NODE_A, &hi, &req);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 6);

	dump_n(&d, 6);
	expect_mem(&d, "pub-1", 31, 2000, hp1, NODE_A, true);
	expect_mem(&d, "pub-2", 32, 2500, hp2, NODE_A, true);
	expect_mem(&d, "over", 33, 3000, h33, NODE_A, false);
	expect_mem(&d, "over", 34, 3500, h34, NODE_A, true);
	expect_mem(&d, "tgt", 35, 1500, ht, NODE_A, false);
	expect_mem(&d, "inflight", 36, 1200, hi, NODE_A, false);
	free(d.r);

	daemon_crash(&a, &ev);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ENOTCONN);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 5);
	dump_n(&d, 5);
	expect_mem(&d, "over", 33, 3000, h33, NODE_A, false);
	expect_mem(&d, "tgt", 35, 1500, ht, NODE_A, false);
	FKV_ASSERT_EQ(dump_count(&d, "inflight", MEMORY, 0), 0);
	free(d.r);

	FKV_ASSERT_EQ(daemon_up(&b, KEEP, NODE_B), KEEP | ADOPT);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes",
				 GRAN(2000) + GRAN(2500) + GRAN(3500));
	dump_n(&d, 3);
	expect_mem(&d, "pub-1", 31, 2000, renumbered(hp1, NODE_B), NODE_B,
		   true);
	expect_mem(&d, "pub-2", 32, 2500, renumbered(hp2, NODE_B), NODE_B,
		   true);
	expect_mem(&d, "over", 34, 3500, renumbered(h34, NODE_B), NODE_B,
		   true);
	FKV_ASSERT_EQ(dump_count(&d, "over", MEMORY, 33), 0);
	FKV_ASSERT_EQ(dump_count(&d, "tgt", MEMORY, 0), 0);
	free(d.r);

	adopt_done(&b);
	get_hits_dram(&b, "over", 34, 3500);
	FKV_ASSERT_EQ(fkv_dev_hold(b.fd, "tgt", 3, renumbered(ht, NODE_B), 35,
				   &hold), -ENOENT);
	FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(h33, NODE_B)), -ENOENT);
	FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(hp1, NODE_B)), 0);
	FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(hp2, NODE_B)), 0);
	FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(h34, NODE_B)), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&b);
	fkv_nl_close(&ev);
}

/* ---- 4. a daemon without KEEP after one with ---- */

/*
 * A (KEEP) unregisters (DAEMON_UNREGISTER, its socket stays open): its
 * replicas are kept.  B registers without KEEP: no ADOPT, the kept
 * replicas are dropped in its registration, A's and renumbered handles
 * are unknown, gets ask B.  A holder from before stays readable.  B goes;
 * C (KEEP) finds nothing kept: no ADOPT.
 */
FKV_TEST(without_keep_the_next_daemon_drops_what_was_kept)
{
	uint64_t h0, h1;
	struct client_result r;
	struct master a, b, c3;
	struct fkv_nl ev;
	struct client c;
	struct dump d;

	FKV_LOAD(PARAMS);
	events_open(&ev);
	FKV_ASSERT_EQ(daemon_up(&a, KEEP, NODE_A), KEEP);
	h0 = put_published(&a, "drop-0", 6000, 51, 0, NODE_A);
	h1 = put_published(&a, "drop-1", 700, 52, 0, NODE_A);
	c = client_get("drop-0", 0);
	r = client_result(&c);
	FKV_ASSERT_EQ(r.err, 0);

	daemon_unregister(&a);
	wait_daemon_event(&ev, 0);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 2);
	dump_n(&d, 2);
	free(d.r);

	FKV_ASSERT_EQ(daemon_up(&b, 0, NODE_B), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	dump_n(&d, 0);
	free(d.r);
	FKV_ASSERT_EQ(drop_replica(&b.nl, h1), -ENOENT);
	FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(h1, NODE_B)), -ENOENT);
	FKV_ASSERT_EQ(drop_replica(&b.nl, renumbered(h0, NODE_B)), -ENOENT);
	get_misses(&b, "drop-1");
	r = client_recheck(&c);
	FKV_ASSERT(r.intact, "a holder from before the daemon went");
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", GRAN(6000));

	daemon_crash(&b, &ev);
	FKV_ASSERT_EQ(daemon_up(&c3, KEEP, NODE_A), KEEP);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	client_end(&c);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&c3);
	master_stop(&a);
	fkv_nl_close(&ev);
}

/* ---- 5. a dump in several messages ---- */

#define MANY		300
#define MANY_KEY	100	/* bytes: ~176 per record, 52 KiB in all */

static void many_key(char *buf, int i)
{
	int n = snprintf(buf, MANY_KEY + 1, "many-%03d-", i);

	memset(buf + n, 'a' + i % 26, (size_t)(MANY_KEY - n));
	buf[MANY_KEY] = 0;
}

static uint64_t many_len(int i)
{
	return 64 + (uint64_t)i * 7;
}

/* Every one of the MANY replicas once, under NODE, with handle hs[i]. */
static void expect_many(const uint64_t *hs, uint32_t node)
{
	char k[MANY_KEY + 1];
	struct dump d;
	int i;

	dump_n(&d, MANY);
	fkv_diag("%d records in %d datagrams", d.n, d.datagrams);
	/* 52 KiB: more than the 32 KiB a dump message has at most */
	FKV_ASSERT_GE(d.datagrams, 2);
	for (i = 0; i < MANY; i++) {
		many_key(k, i);
		expect_mem(&d, k, 1000 + i, many_len(i), hs[i], node, true);
	}
	free(d.r);
}

/*
 * MANY published replicas (TARGET + PUBLISH) with long keys: the dump
 * needs several datagrams and lists each exactly once, before and after
 * an adoption.
 */
FKV_TEST(a_dump_spans_several_messages_and_lists_each_replica_once)
{
	static uint64_t h[MANY], hb[MANY];
	char k[MANY_KEY + 1];
	struct master a, b;
	struct fkv_nl ev;
	int i;

	FKV_LOAD(PARAMS);
	events_open(&ev);
	FKV_ASSERT_EQ(daemon_up(&a, KEEP, NODE_A), KEEP);
	for (i = 0; i < MANY; i++) {
		many_key(k, i);
		h[i] = target_filled(&a, k, 1000 + i, many_len(i), true);
		FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(h[i]), NODE_A);
		hb[i] = renumbered(h[i], NODE_B);
	}
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), MANY);
	expect_many(h, NODE_A);

	daemon_crash(&a, &ev);
	FKV_ASSERT_EQ(daemon_up(&b, KEEP, NODE_B), KEEP | ADOPT);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), MANY);
	expect_many(hb, NODE_B);

	for (i = 0; i < MANY; i++)
		FKV_ASSERT_EQ(drop_replica(&b.nl, hb[i]), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&b);
	fkv_nl_close(&ev);
}

/*
 * Renumbering the kept replicas at a re-registration (and clearing their
 * adopting marks at ADOPT_DONE) walks the whole handle table, and held
 * its lock -- a spinlock: no preemption on that CPU -- for all of it: a
 * node that kept millions of replicas stalled a CPU for seconds at every
 * fluxond restart (issue 29).  The walk now lets go every
 * FLUXONKV_WALK_BATCH replicas.  debugfs walk_delay_ms stretches each
 * step (MANY x 10 ms = 3 s) and the soft-lockup watchdog is set to 2 s;
 * before: "BUG: soft lockup" in the kernel log.
 */
FKV_TEST(renumbering_many_kept_replicas_lets_go_of_the_cpu)
{
	static uint64_t hb[MANY];
	char k[MANY_KEY + 1], splat[512], thresh[16] = "10";
	struct master a, b;
	struct fkv_nl ev;
	int64_t t0, t1;
	int i, kmsg, fd;
	ssize_t n;

	FKV_LOAD(PARAMS);
	events_open(&ev);
	FKV_ASSERT_EQ(daemon_up(&a, KEEP, NODE_A), KEEP);
	for (i = 0; i < MANY; i++) {
		many_key(k, i);
		hb[i] = renumbered(target_filled(&a, k, 1000 + i, many_len(i),
						 true), NODE_B);
	}
	fd = open("/proc/sys/kernel/watchdog_thresh", O_RDWR);
	if (fd < 0)
		FKV_SKIP("no soft-lockup watchdog: %s", strerror(errno));
	n = read(fd, thresh, sizeof(thresh) - 1);
	thresh[n > 0 ? n : 0] = 0;
	FKV_ASSERT_EQ(pwrite(fd, "1\n", 2, 0), 2);	/* a lockup at 2 s */
	kmsg = fkv_kmsg_mark();
	FKV_ASSERT_EQ(fkv_debugfs_set("walk_delay_ms", 10), 0);

	daemon_crash(&a, &ev);
	t0 = fkv_now_ms();
	FKV_ASSERT_EQ(daemon_up(&b, KEEP, NODE_B), KEEP | ADOPT);
	t1 = fkv_now_ms();
	adopt_done(&b);
	fkv_diag("registration %lld ms, ADOPT_DONE %lld ms (soft lockup at 2 s)",
		 (long long)(t1 - t0), (long long)(fkv_now_ms() - t1));
	FKV_ASSERT_EQ(fkv_debugfs_set("walk_delay_ms", 0), 0);
	FKV_ASSERT_EQ(pwrite(fd, thresh, strlen(thresh), 0),
		      (ssize_t)strlen(thresh));
	close(fd);
	FKV_ASSERT(!fkv_kmsg_splat(kmsg, splat, sizeof(splat)),
		   "kernel log: %s", splat);
	/* every one renumbered, and a local hit again */
	expect_many(hb, NODE_B);
	many_key(k, 7);
	get_hits_dram(&b, k, 1000 + 7, many_len(7));

	for (i = 0; i < MANY; i++)
		FKV_ASSERT_EQ(drop_replica(&b.nl, hb[i]), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	master_stop(&b);
	fkv_nl_close(&ev);
}

/* ---- 6. routed SSD entries ---- */

#define LOOP_FILE	"/tmp/fkv-keep-shard.img"
#define SHARD_BYTES	(16 * FKV_MIB)

/*
 * A loop device over a file in /tmp as a shard, attached through a
 * privileged session of its own; skips without loop devices.  The loop
 * device is detached at once (it goes when the module lets go of it).
 */
static void attach_loop_shard(void)
{
	char *setup[] = { (char *)"losetup", (char *)"--find",
			  (char *)"--show", (char *)LOOP_FILE, NULL };
	char out[512];
	int fd, dev, ret;

	if (system("command -v losetup >/dev/null 2>&1"))
		FKV_SKIP("losetup is not installed");
	if (!fkv_path_exists("/dev/loop-control") && fkv_modprobe("loop"))
		FKV_SKIP("no loop devices (modprobe loop failed)");
	fd = open(LOOP_FILE, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FKV_ASSERT(fd >= 0, "create %s: %s", LOOP_FILE, strerror(errno));
	FKV_ASSERT_EQ(ftruncate(fd, (off_t)SHARD_BYTES), 0);
	close(fd);
	ret = fkv_env_run(setup, out, sizeof(out));
	if (ret) {
		fkv_diag_text("losetup: ", out);
		unlink(LOOP_FILE);
		FKV_SKIP("losetup --find --show failed (status %d)", ret);
	}
	out[strcspn(out, "\n")] = 0;
	fd = open(out, O_RDWR | O_DIRECT | O_CLOEXEC);
	FKV_ASSERT(fd >= 0, "open %s O_DIRECT: %s", out, strerror(errno));
	dev = fkv_dev_open();
	FKV_ASSERT(dev >= 0, "open %s: %s", FKV_DEV_PATH, strerror(errno));
	FKV_ASSERT_EQ(fkv_dev_ssd_attach(dev, fd, 0, SHARD_BYTES, 0, NULL), 0);
	close(dev);
	close(fd);
	{
		char *detach[] = { (char *)"losetup", (char *)"-d", out, NULL };

		if (fkv_env_run(detach, NULL, 0))
			fkv_diag("losetup -d %s failed (left behind)", out);
	}
	unlink(LOOP_FILE);
	FKV_ASSERT_EQ(fkv_sysfs("kv_ssd_capacity_bytes"), SHARD_BYTES);
}

/* The SSD_COMMIT of (K, PUT_ID, LEN), answered with FLAGS. */
static void ssd_commit(struct master *m, const char *k, uint64_t put_id,
		       uint64_t len, uint32_t flags)
{
	struct answer a = { .cmd = FLUXONKV_CMD_SSD_COMMIT, .has_req_id = true,
			    .has_status = true, .has_flags = true,
			    .flags = flags };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];

	a.req_id = expect_upcall(&m->nl, FLUXONKV_CMD_SSD_COMMIT, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "SSD_COMMIT of '%s'",
		   k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), len);
	FKV_ASSERT(!tb[FLUXONKV_A_ERRNO], "SSD_COMMIT of '%s' with ERRNO %d",
		   k, (int32_t)fkv_nla_u32(tb[FLUXONKV_A_ERRNO]));
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
}

/* D: ssd-b's DRAM replica (handle HB, node NODE) and ssd-a's SSD entry. */
static void expect_ssd_dump(uint64_t hb, uint32_t node)
{
	struct dump d;

	dump_n(&d, 2);
	expect_mem(&d, "ssd-b", 42, 4000, hb, node, true);
	expect_ssd(&d, "ssd-a", 41, 5000);
	FKV_ASSERT_EQ(dump_count(&d, "ssd-a", MEMORY, 0), 0);
	FKV_ASSERT_EQ(dump_count(&d, "ssd-b", SSD, 0), 0);
	free(d.r);
}

/*
 * A (KEEP, local routes) persists ssd-a (SSD_COMMIT answered PUBLISHED:
 * routed) and ssd-b (answered without: not routed), then drops ssd-a's
 * DRAM copy.  The dump lists ssd-b's replica and ssd-a's SSD entry
 * (SOURCE=SSD, no HANDLE); after A went and B adopted, the same, and a
 * local-routes get of ssd-a refills from the SSD without asking.  B goes;
 * C without KEEP: the route is gone too.
 */
FKV_TEST(routed_ssd_entries_are_kept_and_dumped)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t ha, hb, req;
	struct client_result r;
	struct master a, b, c3;
	struct fkv_nl ev;
	struct client c;
	struct dump d;

	FKV_LOAD(PARAMS);
	attach_loop_shard();
	events_open(&ev);
	FKV_ASSERT_EQ(daemon_up(&a, KEEP | LOCAL, NODE_A), KEEP | LOCAL);
	ha = put_published(&a, "ssd-a", 5000, 41, FLUXONKV_PUT_F_PERSIST,
			   NODE_A);
	ssd_commit(&a, "ssd-a", 41, 5000, FLUXONKV_SSD_F_PUBLISHED);
	hb = put_published(&a, "ssd-b", 4000, 42, FLUXONKV_PUT_F_PERSIST,
			   NODE_A);
	ssd_commit(&a, "ssd-b", 42, 4000, 0);
	FKV_ASSERT_EQ(fkv_sysfs("ssd_commits_published"), 1);
	FKV_ASSERT_EQ(drop_replica(&a.nl, ha), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
	expect_ssd_dump(hb, NODE_A);

	daemon_crash(&a, &ev);
	expect_ssd_dump(hb, NODE_A);

	FKV_ASSERT_EQ(daemon_up(&b, KEEP | LOCAL, NODE_B),
		      KEEP | LOCAL | ADOPT);
	expect_ssd_dump(renumbered(hb, NODE_B), NODE_B);

	/* the kept route serves: a refill without GET_START */
	c = client_get("ssd-a", 0);
	r = client_result(&c);
	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT_EQ(r.source, SSD);
	FKV_ASSERT_EQ(r.put_id, 41);
	FKV_ASSERT_EQ(r.len, 5000);
	FKV_ASSERT(r.intact, "ssd-a refilled from the kept route");
	FKV_ASSERT(r.tail_zero, "ssd-a's padding");
	req = expect_upcall(&b.nl, FLUXONKV_CMD_GET_DONE, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], "ssd-a"), "GET_DONE key");
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), 41);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_SOURCE]), SSD);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(fkv_nla_u64(tb[FLUXONKV_A_HANDLE])),
		      NODE_B);
	FKV_ASSERT_EQ(answer_status(&b.nl, FLUXONKV_CMD_GET_DONE, req, 0), 0);
	expect_no_upcall(&b.nl, FLUXONKV_CMD_GET_START,
			 "a routed SSD entry asked the master");
	FKV_ASSERT_EQ(fkv_sysfs("hits_ssd"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("local_refills"), 1);
	client_end(&c);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 1);

	/* B goes, C without KEEP: the SSD route is gone with the rest */
	daemon_crash(&b, &ev);
	FKV_ASSERT_EQ(daemon_up(&c3, 0, NODE_A), 0);
	dump_n(&d, 0);
	free(d.r);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	get_misses(&c3, "ssd-a");
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&c3);
	fkv_nl_close(&ev);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

/* A get of K that finds no daemon, and fails with ERR. */
static void get_fails(const char *k, int err)
{
	struct client_result r = client_get_once(k, 0);

	FKV_ASSERT(r.err == err, "get '%s': %s, want %s", k, strerror(r.err),
		   strerror(err));
}

/* A whole get of K (PUT_ID, LEN) from SOURCE while no daemon is there. */
static void get_hits_alone(const char *k, uint32_t source, uint64_t put_id,
			   uint64_t len)
{
	uint64_t alone = fkv_sysfs("hits_alone");
	struct client_result r = client_get_once(k, 0);

	FKV_ASSERT(r.err == 0, "get '%s' without a daemon: %s", k,
		   strerror(r.err));
	FKV_ASSERT_EQ(r.source, source);
	FKV_ASSERT_EQ(r.put_id, put_id);
	FKV_ASSERT_EQ(r.len, len);
	FKV_ASSERT(r.intact, "'%s': the bytes of version %" PRIu64, k, put_id);
	FKV_ASSERT(r.tail_zero, "'%s': its padding", k);
	FKV_ASSERT_EQ(fkv_sysfs("hits_alone"), alone + 1);
}

/* A registered again (LEASE + KEEP) on its socket, adopted, leased. */
static void lease_again(struct master *a, int64_t lease_ms)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];

	FKV_ASSERT_EQ(master_register_as(a, KEEP | FLUXONKV_REGISTER_F_LEASE,
					 NODE_A, tb), 0);
	adopt_done(a);
	FKV_ASSERT_EQ(send_lease(&a->nl, lease_ms, true), 0);
}

/*
 * Degraded service while a cluster has no master (issue 32): a node whose
 * master went unregisters with FLUXONKV_UNREGISTER_F_LEASED and its
 * module goes on serving the node's own hits -- a DRAM replica, a routed
 * SSD copy -- without a daemon until the master's lease runs out; puts,
 * keys not here and everything past the lease fail ENOTCONN.  Only with
 * LEASE and KEEP; a plain UNREGISTER, a daemon's socket closing and the
 * next registration end it at once.
 */
FKV_TEST(a_node_that_lost_its_master_serves_its_hits_until_the_lease_ends)
{
	const uint32_t lk = KEEP | FLUXONKV_REGISTER_F_LEASE;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t ha, hb, alone;
	struct master a, p;
	struct fkv_nl ev;

	FKV_LOAD(PARAMS);
	attach_loop_shard();
	events_open(&ev);
	/* LEASED needs a lease and kept replicas: refused, still there */
	FKV_ASSERT_EQ(daemon_up(&p, FLUXONKV_REGISTER_F_LEASE, NODE_A),
		      FLUXONKV_REGISTER_F_LEASE);
	FKV_ASSERT_EQ(unregister_flags(&p, FLUXONKV_UNREGISTER_F_LEASED),
		      -EINVAL);
	FKV_ASSERT_EQ(unregister_flags(&p, 1U << 7), -EINVAL);
	FKV_ASSERT(fkv_sysfs("daemon_pid") != 0, "refused, yet unregistered");
	daemon_unregister(&p);
	wait_daemon_event(&ev, 0);
	master_stop(&p);

	FKV_ASSERT_EQ(daemon_up(&a, lk, NODE_A), lk);
	ha = put_published(&a, "alone-a", 5000, 41, FLUXONKV_PUT_F_PERSIST,
			   NODE_A);
	ssd_commit(&a, "alone-a", 41, 5000, FLUXONKV_SSD_F_PUBLISHED);
	hb = put_published(&a, "alone-b", 4000, 42, 0, NODE_A);
	FKV_ASSERT_EQ(drop_replica(&a.nl, ha), 0);	/* alone-a: SSD only */
	FKV_ASSERT_EQ(send_lease(&a.nl, 20000, true), 0);
	get_hits_dram(&a, "alone-b", 42, 4000);

	/* the master went: hits go on without a daemon, the rest fails */
	FKV_ASSERT_EQ(unregister_flags(&a, FLUXONKV_UNREGISTER_F_LEASED), 0);
	wait_daemon_event(&ev, 0);
	FKV_ASSERT_EQ(fkv_sysfs("daemon_pid"), 0);
	get_hits_alone("alone-b", MEMORY, 42, 4000);
	get_hits_alone("alone-a", SSD, 41, 5000);
	get_hits_alone("alone-a", SSD, 41, 5000);	/* no replica made */
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
	get_fails("alone-none", ENOTCONN);
	{
		struct client c = client_start(CLIENT_PUT, "alone-put", 100, 0);
		struct client_result r = client_result(&c);

		client_end(&c);
		FKV_ASSERT_EQ(r.err, ENOTCONN);
	}

	/* the next registration ends them: no hit before its adoption */
	FKV_ASSERT_EQ(master_register_as(&a, lk, NODE_A, tb), 0);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_FLAGS]), lk | ADOPT);
	get_asks_until_adopted(&a, "alone-b", renumbered(hb, NODE_A), 42,
			       4000);
	adopt_done(&a);

	/* a short lease left behind lapses by itself */
	FKV_ASSERT_EQ(send_lease(&a.nl, 2000, true), 0);
	FKV_ASSERT_EQ(unregister_flags(&a, FLUXONKV_UNREGISTER_F_LEASED), 0);
	wait_daemon_event(&ev, 0);
	get_hits_alone("alone-b", MEMORY, 42, 4000);
	usleep(2100 * 1000);
	alone = fkv_sysfs("hits_alone");
	get_fails("alone-b", ENOTCONN);
	get_fails("alone-a", ENOTCONN);
	FKV_ASSERT_EQ(fkv_sysfs("hits_alone"), alone);

	/* a plain UNREGISTER ends them at once, whatever the lease */
	lease_again(&a, 20000);
	get_hits_dram(&a, "alone-b", 42, 4000);
	daemon_unregister(&a);
	wait_daemon_event(&ev, 0);
	get_fails("alone-b", ENOTCONN);
	get_fails("alone-a", ENOTCONN);

	/* ... and so does a daemon's socket closing (a crash, an exec) */
	lease_again(&a, 20000);
	daemon_crash(&a, &ev);
	get_fails("alone-b", ENOTCONN);

	/* nothing leaks: a daemon without KEEP drops it all */
	FKV_ASSERT_EQ(daemon_up(&p, 0, NODE_A), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&p);
	fkv_nl_close(&ev);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

/* ---- 7. admin only ---- */

/* Drop CAP_NET_ADMIN from every set of this (forked) process. */
static void drop_cap_net_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	unsigned int i = CAP_TO_INDEX(CAP_NET_ADMIN);
	uint32_t bit = CAP_TO_MASK(CAP_NET_ADMIN);

	memset(data, 0, sizeof(data));
	FKV_ASSERT_EQ(syscall(SYS_capget, &hdr, data), 0);
	data[i].effective &= ~bit;
	data[i].permitted &= ~bit;
	data[i].inheritable &= ~bit;
	FKV_ASSERT_EQ(syscall(SYS_capset, &hdr, data), 0);
	FKV_ASSERT(!(fkv_cap_effective() & (1ULL << CAP_NET_ADMIN)),
		   "CAP_NET_ADMIN still effective");
	FKV_ASSERT(fkv_cap_effective() & (1ULL << CAP_SYS_ADMIN),
		   "CAP_SYS_ADMIN went too");
}

static void dump_eperm(void *arg)
{
	struct dump d;

	if (arg == (void *)2) {
		/* what a daemon needs to register is what a dump needs */
		FKV_ASSERT_EQ(fkv_drop_cap_sys_admin(), 0);
		FKV_ASSERT(fkv_cap_effective() & (1ULL << CAP_NET_ADMIN),
			   "CAP_NET_ADMIN went too");
	} else if (arg) {
		FKV_ASSERT_EQ(setgroups(0, NULL), 0);
		FKV_ASSERT_EQ(setgid(NOBODY), 0);
		FKV_ASSERT_EQ(setuid(NOBODY), 0);
		FKV_ASSERT_EQ(fkv_cap_effective(), 0);
	} else {
		drop_cap_net_admin();
	}
	FKV_ASSERT_EQ(dump_raw(&d), -EPERM);
	FKV_ASSERT_EQ(d.n, 0);
	free(d.r);
}

/*
 * DUMP lists every key, so it needs what registering as the daemon needs
 * (issue 29: it needed only CAP_NET_ADMIN): CAP_SYS_ADMIN besides the
 * family's CAP_NET_ADMIN.  Root without either, and nobody, get EPERM and
 * no record, while the same dump from the test lists the replica.
 */
FKV_TEST(the_dump_is_admin_only)
{
	struct master a;
	struct dump d;
	uint64_t h;

	FKV_LOAD(PARAMS);
	FKV_ASSERT_EQ(daemon_up(&a, KEEP, NODE_A), KEEP);
	h = put_published(&a, "secret", 777, 61, 0, NODE_A);
	dump_n(&d, 1);
	expect_mem(&d, "secret", 61, 777, h, NODE_A, true);
	free(d.r);
	fkv_in_child(dump_eperm, NULL, "a dump without CAP_NET_ADMIN");
	fkv_in_child(dump_eperm, (void *)1, "a dump as nobody");
	fkv_in_child(dump_eperm, (void *)2,
		     "a dump with CAP_NET_ADMIN but not CAP_SYS_ADMIN");
	dump_n(&d, 1);
	free(d.r);
	FKV_ASSERT_EQ(drop_replica(&a.nl, h), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&a);
}

/* ---- 8. nobody adopts ---- */

/*
 * Kept replicas (published and not) nobody adopted go with the module:
 * it unloads cleanly (the runner checks the kernel log).
 */
FKV_TEST(the_module_unloads_with_replicas_kept)
{
	struct master a;
	struct fkv_nl ev;

	FKV_LOAD(PARAMS);
	events_open(&ev);
	FKV_ASSERT_EQ(daemon_up(&a, KEEP, NODE_A), KEEP);
	put_published(&a, "left-0", 3000, 71, 0, NODE_A);
	put_published(&a, "left-1", 9000, 72, 0, NODE_A);
	target_filled(&a, "left-t", 73, 100, false);
	daemon_crash(&a, &ev);
	fkv_nl_close(&ev);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 3);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
	FKV_ASSERT(!fkv_module_loaded(), "fluxonkv still loaded");
}
