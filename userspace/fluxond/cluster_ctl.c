// SPDX-License-Identifier: GPL-2.0
/*
 * cluster_ctl.c - the cluster control plane of fluxond (cluster_ctl.h).
 *
 * Who owns what on a master (cluster.md, *Scale (the master)*, "Threads
 * of the master's control port"):
 *
 *  - The acceptor thread (struct acceptor, acc_*) owns the listening
 *    socket and every connection before its JOIN's MAC verified: accept
 *    and the pre-auth limits, HELLO, reading the JOIN within the join
 *    deadline, the refusals that need nothing of the membership
 *    (malformed, no nonce, wrong secret: signed as ever), their counters
 *    and log lines.  Of struct fkv_cctl it reads only t->cc and t->cfg,
 *    which nobody writes after start in the master role.  Strangers and
 *    slow handshakes cost the routing thread nothing.
 *  - A connection whose JOIN verified moves whole (its struct fkv_wire
 *    with any bytes read past the JOIN, the nonces, the address and a
 *    copy of the JOIN) through the acceptor's queue to the routing
 *    thread, the daemon's loop (fkv_cctl_pollfds / _handle / _tick),
 *    which owns it from then on: name checks, the membership table,
 *    member_up, the JOIN answer, the seal and everything after.  The
 *    acceptor forgets it the moment it is queued.
 *  - The node role has no thread: its one connection is the loop's.
 *
 * With cfg.inline_preauth (the fuzzer) the acceptor's functions run in
 * the caller's loop instead of a thread: the same code, deterministic.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "auth.h"
#include "cluster_ctl.h"
#include "log.h"
#include "netaddr.h"
#include "../common/wire.h"

/*
 * Connections the routing thread holds at once: members, and room for
 * those closing (a replaced instance's, a refused join's last words).
 */
#define FKV_CCTL_CONNS		(FKV_MEMBERS_MAX + 16)
_Static_assert(FKV_CCTL_POLL_MAX >= FKV_CCTL_CONNS + 1,
	       "the poll array has room for every connection and the queue");
/*
 * A connection whose JOIN has not verified this long after accept is
 * closed (fkv_cctl_config.join_timeout_ms, when set, instead).
 */
#define FKV_JOIN_TIMEOUT_MS	5000
/*
 * Connections in the join (accepted, not yet taken by the routing thread)
 * at once, and from one address: whoever lacks the secret holds at most
 * these of the master's slots, each for the join deadline, and the rest
 * (FKV_MEMBERS_MAX) stay free for members.  The acceptor's connections and
 * its queue of verified joins count together.
 */
#define FKV_CCTL_PREAUTH_MAX	16
#define FKV_CCTL_PREAUTH_PER_ADDR	4
/* A node retries the master this often while it cannot reach it. */
#define FKV_RECONNECT_MS	1000

/*
 * C_CONNECTING: a node's non-blocking connect to the master, not done.
 * C_VERIFIED: master, a JOIN whose MAC verified, on its way from the
 * acceptor to the routing thread (which answers it).
 */
enum conn_state { C_FREE, C_CONNECTING, C_HELLO, C_JOINING, C_VERIFIED,
		  C_JOINED, C_CLOSING };

struct cconn {
	struct fkv_wire w;
	enum conn_state state;
	uint8_t nonce[FKV_NONCE_LEN];		/* ours */
	uint8_t peer_nonce[FKV_NONCE_LEN];	/* the other end's */
	bool peer_nonce_set;
	uint32_t id;			/* joined: member id */
	uint64_t incarnation;		/* joined: its incarnation */
	uint64_t since_ms;
	struct sockaddr_storage addr;	/* master: the peer's address */
	char peer[64];			/* address, for logs */
	/* sealed: the placement-ticket key of this master-node pair */
	uint8_t place_key[FKV_MAC_LEN];
	bool place_key_set;
};

/* A verified JOIN in the acceptor's queue. */
struct handoff {
	struct cconn c;			/* C_VERIFIED, its wire and all */
	struct nlmsghdr *join;		/* a copy of its JOIN (malloc) */
};

/*
 * The master's acceptor (see the top of this file).  Everything here but
 * the queue and the counters is the acceptor thread's alone (the routing
 * thread's with inline_preauth), until fkv_cctl_stop() joined it.
 */
struct acceptor {
	int lfd;			/* the listening socket */
	bool threaded;			/* false: inline_preauth */
	bool started;			/* the thread runs: join it */
	pthread_t thread;
	int stop_fd;			/* eventfd: fkv_cctl_stop() wakes it */
	struct cconn pa[FKV_CCTL_PREAUTH_MAX];	/* joins in progress */
	struct fkv_ratelimit log;	/* what strangers provoke */
	/*
	 * Counted by the acceptor, read by fkv_cctl_get_stats() on the
	 * routing thread (atomics: no lock for a counter).
	 */
	_Atomic uint64_t preauth_refused, join_timeouts, refused;
	/*
	 * lock protects q[], qhead and nq, the hand-over of verified joins:
	 * the acceptor pushes (and counts them against the pre-auth limits),
	 * the routing thread pops.  Held only to copy entries or count them;
	 * nothing that blocks or logs runs under it.
	 */
	pthread_mutex_t lock;
	struct handoff q[FKV_CCTL_PREAUTH_MAX];
	unsigned int qhead, nq;
	/*
	 * eventfd, written after each push: the routing thread polls it
	 * (fkv_cctl_pollfds) and reads it before it pops, so that no push
	 * goes unnoticed.  -1 inline (the caller pops after each step).
	 */
	int ready_fd;
};

struct fkv_cctl {
	struct fkv_cctl_config cfg;
	const struct fkv_cluster_config *cc;
	bool master;
	/* the routing thread's; the acceptor counts in acc (get_stats adds) */
	struct fkv_cctl_stats st;
	/* master */
	struct acceptor acc;
	struct fkv_members members;
	uint32_t self_id;
	/* the routing thread's: members and connections closing */
	struct cconn conns[FKV_CCTL_CONNS];
	/*
	 * The conns[] index of each pollfd the last fkv_cctl_pollfds() gave
	 * (or a PFD_* code), so that handling a ready descriptor costs no
	 * scan of every connection.
	 */
	int pfd_conn[FKV_CCTL_CONNS + FKV_CCTL_PREAUTH_MAX + 2];
	int npfd;
	/* node: conns[0] is the master connection */
	uint32_t node_id;
	uint64_t next_beat_ms, next_connect_ms;
	uint64_t lease_until;	/* CLOCK_MONOTONIC ns: the master's lease */
	int fatal;
	/* routing thread: what a member or a master can provoke, logged */
	struct fkv_ratelimit preauth_log;
};

/* pfd_conn codes besides conns[] indexes */
#define PFD_READY	(-1)	/* acc.ready_fd: verified joins queued */
#define PFD_LISTENER	(-2)	/* inline: the listening socket */
#define PFD_PREAUTH	(-3)	/* inline: acc.pa[PFD_PREAUTH - code] */

static const struct nla_policy cctl_policy[FKV_CA_MAX + 1] = {
	[FLUXONKV_A_STATUS] = { .type = NLA_U32 },
	[FLUXONKV_A_INCARNATION] = { .type = NLA_U64 },
	[FLUXONKV_A_SEGMENT_SIZE] = { .type = NLA_U64 },
	[FLUXONKV_A_SEGMENT_USED] = { .type = NLA_U64 },
	[FLUXONKV_A_SSD_CAPACITY] = { .type = NLA_U64 },
	[FKV_CA_NONCE] = { .type = NLA_UNSPEC, .minlen = FKV_NONCE_LEN,
			   .maxlen = FKV_NONCE_LEN },
	[FKV_CA_MAC] = { .type = NLA_UNSPEC, .minlen = FKV_MAC_LEN,
			 .maxlen = FKV_MAC_LEN },
	[FKV_CA_NODE_NAME] = { .type = NLA_STRING,
			       .maxlen = FKV_NODE_NAME_MAX + 1 },
	[FKV_CA_NODE_ID] = { .type = NLA_U32 },
	[FKV_CA_DATA_ADDR] = { .type = NLA_STRING, .maxlen = FKV_ADDR_MAX },
	[FKV_CA_TRANSPORT] = { .type = NLA_STRING, .maxlen = 8 },
	[FKV_CA_MESSAGE] = { .type = NLA_STRING, .maxlen = 256 },
	[FKV_CA_HEARTBEAT_MS] = { .type = NLA_U32 },
	[FKV_CA_DEAD_AFTER_MS] = { .type = NLA_U32 },
	[FKV_CA_SYNC_ID] = { .type = NLA_U64 },
	[FKV_CA_LEASE_T] = { .type = NLA_U64 },
	[FKV_CA_LEASE_MS] = { .type = NLA_U32 },
	[FKV_CA_PROTO] = { .type = NLA_U32 },
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

/*
 * Master: the lease an answer grants, from the node's own send time
 * (LEASE_T, echoed).  0 or -EMSGSIZE.
 */
static int put_lease(struct fkv_cctl *t, struct nl_msg *msg,
		     struct nlattr **tb)
{
	if (!tb[FKV_CA_LEASE_T])
		return 0;	/* a node that asks for no lease */
	return nla_put_u64(msg, FKV_CA_LEASE_T,
			   nla_get_u64(tb[FKV_CA_LEASE_T])) ||
	       nla_put_u32(msg, FKV_CA_LEASE_MS, t->cc->lease_ms) ?
	       -EMSGSIZE : 0;
}

/*
 * Node: the master granted a lease from our LEASE_T (the time we sent
 * what it answers).  Less a guard against clock rates and the time the
 * module takes to apply it: we must stop serving before the master,
 * counting from when it answered (later than LEASE_T), stops waiting.
 */
static void take_lease(struct fkv_cctl *t, struct nlattr **tb)
{
	uint64_t sent, ms, until, guard;

	if (!tb[FKV_CA_LEASE_T] || !tb[FKV_CA_LEASE_MS])
		return;
	sent = nla_get_u64(tb[FKV_CA_LEASE_T]);
	ms = nla_get_u32(tb[FKV_CA_LEASE_MS]);
	if (sent > now_ns() || ms > FKV_DEAD_AFTER_MS_MAX)
		return;		/* not a time we sent */
	guard = FKV_LEASE_GUARD_MS + ms / 100;
	until = ms > guard ? sent + (ms - guard) * 1000000 : sent;
	if (until <= t->lease_until)
		return;		/* an older answer */
	t->lease_until = until;
	if (t->cfg.ops && t->cfg.ops->lease)
		t->cfg.ops->lease(t->cfg.arg, until);
}

/*
 * Unacknowledged data older than @ms fails the connection: a peer that
 * vanished (power off, partition) is noticed in that time, not after TCP's
 * retransmissions give up minutes later.  And every message goes out at
 * once (TCP_NODELAY): the connection carries requests and their answers
 * (a put's PUT, a get's GET_START), and Nagle would hold one back behind
 * an earlier message whose ACK the peer delays.
 */
static void tune_socket(int fd, unsigned int ms)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void conn_close(struct cconn *c)
{
	fkv_wire_close(&c->w);
	memset(c, 0, sizeof(*c));
	c->w.fd = -1;
	c->state = C_FREE;
}

/* Send @msg (consumed) on @c; a failure closes the connection later. */
static void conn_send(struct cconn *c, struct nl_msg *msg)
{
	if (!msg || fkv_wire_send(&c->w, msg)) {
		fkv_warn("cluster: cannot send to %s: closing", c->peer);
		c->state = C_CLOSING;
	}
	nlmsg_free(msg);
}

static void data_addr(const struct fkv_cluster_config *cc, char *buf,
		      size_t len)
{
	fkv_hostport_str(buf, len, &cc->advertise);
}

/* ---- master role ---- */

static void member_left(void *arg, const struct fkv_member *m,
			enum fkv_left_reason why)
{
	struct fkv_cctl *t = arg;

	t->st.member_left++;
	if (t->cfg.ops && t->cfg.ops->member_down && m->id != t->self_id)
		t->cfg.ops->member_down(t->cfg.arg, m);
	/*
	 * Every route to this incarnation is dead from here on (its tomb
	 * tag is no longer live); the master forgets its replicas and its
	 * in-flight gets with it.
	 */
	fkv_warn("cluster: member-left: node '%s' (id %u, incarnation %#llx): %s",
		 m->name, m->id, (unsigned long long)m->incarnation,
		 fkv_left_reason_name(why));
}

static bool member_busy(void *arg, uint32_t id)
{
	struct fkv_cctl *t = arg;

	return t->cfg.ops && t->cfg.ops->member_busy &&
	       t->cfg.ops->member_busy(t->cfg.arg, id);
}

static const struct fkv_members_ops members_ops = {
	.left = member_left,
	.busy = member_busy,
};

/*
 * Master: we close joined member @c's connection (a refusal, a malformed
 * message, a full queue).  It leaves at once (FKV_LEFT_EXPELLED), not when
 * the bytes queued before drained: meanwhile nothing more reaches it (a
 * DROP_REPLICA neither), while it serves on its lease -- the daemon must
 * know now, to wait that lease out before it answers a write.
 */
static void master_expel(struct fkv_cctl *t, struct cconn *c)
{
	c->state = C_CLOSING;
	if (t->master && c->id)
		fkv_members_leave(&t->members, c->id, c->incarnation,
				  FKV_LEFT_EXPELLED);
}

/* Close @c's siblings that speak for member @id (a replaced instance). */
static void close_member_conns(struct fkv_cctl *t, struct cconn *c,
			       uint32_t id)
{
	unsigned int i;

	for (i = 0; i < FKV_CCTL_CONNS; i++) {
		struct cconn *o = &t->conns[i];

		if (o != c && o->state == C_JOINED && o->id == id)
			o->state = C_CLOSING;
	}
}

/* The id the members table keeps for @name, or 0. */
static uint32_t member_id_of(const struct fkv_cctl *t, const char *name)
{
	unsigned int i;

	for (i = 0; i < FKV_MEMBERS_MAX; i++)
		if (t->members.m[i].id && !strcmp(t->members.m[i].name, name))
			return t->members.m[i].id;
	return 0;
}

/*
 * Sign a JOIN answer for the node's nonce (when the JOIN carried one):
 * the node believes only an answer signed with the secret.
 */
static int sign_answer(struct fkv_cctl *t, struct cconn *c, struct nl_msg *msg)
{
	if (!c->peer_nonce_set)
		return 0;
	return fkv_auth_sign(msg, t->cc->secret, t->cc->secret_len,
			     FKV_AUTH_CTL_JOINED, c->peer_nonce, c->nonce);
}

/* Seal @c with this end's and the other end's direction keys. */
static int seal_conn(struct fkv_cctl *t, struct cconn *c, const char *tx,
		     const char *rx, const uint8_t *m, const uint8_t *n)
{
	uint8_t tk[FKV_MAC_LEN], rk[FKV_MAC_LEN];
	int err;

	err = fkv_auth_session_key(t->cc->secret, t->cc->secret_len, tx, m, n,
				   tk);
	if (!err)
		err = fkv_auth_session_key(t->cc->secret, t->cc->secret_len,
					   rx, m, n, rk);
	/* @m is the master's nonce, @n the node's, at both ends */
	if (!err)
		err = fkv_auth_session_key(t->cc->secret, t->cc->secret_len,
					   FKV_AUTH_PLACE_KEY, m, n,
					   c->place_key);
	c->place_key_set = !err;
	if (!err)
		fkv_wire_seal(&c->w, fkv_auth_seal, tk, rk);
	memset(tk, 0, sizeof(tk));
	memset(rk, 0, sizeof(rk));
	return err;
}

static void master_refuse(struct fkv_cctl *t, struct cconn *c, int err,
			  const char *why)
{
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_JOIN);

	t->st.refused++;
	if (msg && (nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)err) ||
		    nla_put_string(msg, FKV_CA_MESSAGE, why) ||
		    sign_answer(t, c, msg))) {
		nlmsg_free(msg);
		msg = NULL;
	}
	conn_send(c, msg);
	c->state = C_CLOSING;
}

/*
 * Another incarnation of @name is a live member that still holds a lease
 * (a heartbeat within lease_ms) on a connection of its own: a JOIN under
 * its name is refused (EBUSY) rather than evicting it.  Anyone with the
 * cluster secret could otherwise throw any member out by joining as it;
 * a node that really restarted gets in once its old connection closed
 * or its lease ran out (it retries every second).
 */
static bool name_held(struct fkv_cctl *t, const char *name,
		      uint64_t incarnation)
{
	uint64_t now = now_ms();
	unsigned int i, k;

	for (i = 0; i < FKV_MEMBERS_MAX; i++) {
		const struct fkv_member *m = &t->members.m[i];

		if (!m->id || !m->live || m->incarnation == incarnation ||
		    strcmp(m->name, name) ||
		    now - m->last_seen_ms >= t->cc->lease_ms)
			continue;
		for (k = 0; k < FKV_CCTL_CONNS; k++)
			if (t->conns[k].state == C_JOINED &&
			    t->conns[k].id == m->id &&
			    t->conns[k].incarnation == m->incarnation)
				return true;
	}
	return false;
}

/* Node names as the configuration allows them: [A-Za-z0-9._-]{1,64}. */
static bool name_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (!n || n > FKV_NODE_NAME_MAX || s[0] == '.')
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	return true;
}

/*
 * Routing thread: the JOIN of @c, whose MAC the acceptor verified for the
 * nonces in @c (acc_join): admit the node, or refuse what the membership
 * forbids.  A JOIN on a joined connection is malformed.
 */
static void master_join(struct fkv_cctl *t, struct cconn *c,
			struct nlmsghdr *nlh, struct nlattr **tb)
{
	char host[FKV_HOST_BUF];
	struct fkv_join j = { 0 };
	uint64_t reclaimed;
	uint16_t port;
	struct fkv_member *m;
	struct nl_msg *msg;
	int err;

	if (c->state != C_VERIFIED || !tb[FKV_CA_NODE_NAME] ||
	    !tb[FLUXONKV_A_INCARNATION] || !tb[FKV_CA_DATA_ADDR]) {
		fkv_ratelimited_warn(&t->preauth_log,
				     "cluster: malformed JOIN from %s", c->peer);
		master_refuse(t, c, -EINVAL, "malformed JOIN");
		return;
	}
	j.name = nla_get_string(tb[FKV_CA_NODE_NAME]);
	j.incarnation = nla_get_u64(tb[FLUXONKV_A_INCARNATION]);
	j.data_addr = nla_get_string(tb[FKV_CA_DATA_ADDR]);
	j.transport = tb[FKV_CA_TRANSPORT] ?
		      nla_get_string(tb[FKV_CA_TRANSPORT]) : "tcp";
	if (tb[FLUXONKV_A_SEGMENT_SIZE])
		j.segment_size = nla_get_u64(tb[FLUXONKV_A_SEGMENT_SIZE]);
	if (tb[FLUXONKV_A_SEGMENT_USED])
		j.segment_used = nla_get_u64(tb[FLUXONKV_A_SEGMENT_USED]);
	if (tb[FLUXONKV_A_SSD_CAPACITY])
		j.ssd_capacity = nla_get_u64(tb[FLUXONKV_A_SSD_CAPACITY]);
	if (!name_ok(j.name) ||
	    fkv_parse_hostport(j.data_addr, host, sizeof(host), &port, NULL, 0)) {
		fkv_err("cluster: refused a node from %s: bad name or data address",
			c->peer);
		master_refuse(t, c, -EINVAL, "bad node name or data address");
		return;
	}
	if (!strcmp(j.name, t->cc->node_name)) {
		master_refuse(t, c, -EEXIST, "that node name is the master's own");
		return;
	}
	if (name_held(t, j.name, j.incarnation)) {
		fkv_ratelimited_warn(&t->preauth_log,
				     "cluster: refused node '%s' from %s: a live member holds that name",
				     j.name, c->peer);
		master_refuse(t, c, -EBUSY,
			      "a live member holds that node name");
		return;
	}
	reclaimed = t->members.ids_reclaimed;
	m = fkv_members_join(&t->members, &j, now_ms(), &err);
	if (!m && err == -EAGAIN) {
		/*
		 * Its previous instance left (now, if it was still live:
		 * REPLACED) and the master is forgetting its replicas a slice
		 * a turn; the node retries every second.  Admitting it now
		 * would forget the rest in one call and stall every node.
		 */
		close_member_conns(t, c, member_id_of(t, j.name));
		t->st.join_waits++;
		fkv_info("cluster: node '%s' waits: its previous instance's "
			 "replicas are still being forgotten", j.name);
		master_refuse(t, c, -EAGAIN,
			      "this node's previous instance is still being forgotten: retrying");
		return;
	}
	if (!m) {
		fkv_err("cluster: refused node '%.64s' from %s: %s", j.name,
			c->peer, err == -ESTALE ? "an incarnation that already left" :
			err == -ENOSPC ? "every member id is taken" :
			strerror(-err));
		master_refuse(t, c, err, err == -ESTALE ?
			      "this incarnation already left the cluster" :
			      err == -ENOSPC ? "every member id is taken" :
			      "cannot admit this node");
		return;
	}
	if (t->members.ids_reclaimed != reclaimed)
		fkv_info("cluster: id %u reclaimed for node '%s' (its last name "
			 "was gone for %u s)", m->id, m->name,
			 FKV_ID_REUSE_MS / 1000);
	/* A connection of the instance it replaced is closed. */
	close_member_conns(t, c, m->id);
	c->state = C_JOINED;
	c->id = m->id;
	c->incarnation = j.incarnation;
	t->st.joins++;
	if (t->cfg.ops && t->cfg.ops->member_up)
		t->cfg.ops->member_up(t->cfg.arg, m);
	fkv_info("cluster: node '%s' joined: id %u, incarnation %#llx, data %s (%s), "
		 "segment %llu MiB, SSD %llu MiB", m->name, m->id,
		 (unsigned long long)m->incarnation, m->data_addr, m->transport,
		 (unsigned long long)(m->segment_size >> 20),
		 (unsigned long long)(m->ssd_capacity >> 20));
	msg = fkv_wire_msg(FKV_CCMD_JOIN);
	if (msg && (nla_put_u32(msg, FLUXONKV_A_STATUS, 0) ||
		    nla_put_u32(msg, FKV_CA_NODE_ID, m->id) ||
		    nla_put_u32(msg, FKV_CA_HEARTBEAT_MS, t->cc->heartbeat_ms) ||
		    nla_put_u32(msg, FKV_CA_DEAD_AFTER_MS,
				t->cc->dead_after_ms))) {
		nlmsg_free(msg);
		msg = NULL;
	}
	if (msg && (put_lease(t, msg, tb) || sign_answer(t, c, msg))) {
		nlmsg_free(msg);
		msg = NULL;
	}
	conn_send(c, msg);
	/* Everything after the (unsealed) answer is sealed both ways. */
	if (c->state == C_JOINED &&
	    seal_conn(t, c, FKV_AUTH_CTL_M2N, FKV_AUTH_CTL_N2M, c->nonce,
		      c->peer_nonce)) {
		fkv_err("cluster: cannot key node '%s''s connection: closing",
			m->name);
		c->state = C_CLOSING;
	}
}

static void master_msg(struct fkv_cctl *t, struct cconn *c,
		       struct nlmsghdr *nlh)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	uint8_t cmd = fkv_wire_cmd(nlh);
	uint64_t inc;
	int err;

	if ((cmd < FKV_CCMD_HELLO || cmd == FKV_CCMD_REPORT ||
	     cmd == FKV_CCMD_REPORT_DONE || cmd == FKV_CCMD_REPORT_ACK ||
	     cmd == FKV_CCMD_DROPS) &&
	    c->state == C_JOINED) {
		/* A forwarded upcall (decoded with the kernel's policies),
		 * a kept replica's report (or their end), or the answer to a
		 * batch of drops. */
		if (t->cfg.ops && t->cfg.ops->member_msg)
			t->cfg.ops->member_msg(t->cfg.arg, c->id, nlh);
		return;
	}
	if (fkv_wire_parse(nlh, tb, cctl_policy)) {
		fkv_warn("cluster: malformed message %u from %s: closing",
			 cmd, c->peer);
		master_expel(t, c);
		return;
	}
	if (cmd == FKV_CCMD_JOIN) {
		master_join(t, c, nlh, tb);
		return;
	}
	if (c->state != C_JOINED) {
		fkv_warn("cluster: %s sent command %u before joining: closing",
			 c->peer, cmd);
		c->state = C_CLOSING;
		return;
	}
	inc = tb[FLUXONKV_A_INCARNATION] ?
	      nla_get_u64(tb[FLUXONKV_A_INCARNATION]) : 0;
	switch (cmd) {
	case FKV_CCMD_HEARTBEAT:
		err = fkv_members_heartbeat(&t->members, c->id, inc,
			tb[FLUXONKV_A_SEGMENT_USED] ?
			nla_get_u64(tb[FLUXONKV_A_SEGMENT_USED]) : 0, now_ms());
		t->st.heartbeats++;
		/*
		 * Answered, so that a node notices a master gone silent, with
		 * the lease on its local hits: after every DROP_REPLICA sent
		 * to it so far, in the connection's order.
		 */
		if (!err) {
			struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_HEARTBEAT);

			if (msg && put_lease(t, msg, tb)) {
				nlmsg_free(msg);
				msg = NULL;
			}
			conn_send(c, msg);
			if (c->state == C_CLOSING)
				master_expel(t, c);
		}
		break;
	case FKV_CCMD_DROP_ACK:
		if (tb[FKV_CA_SYNC_ID] && t->cfg.ops && t->cfg.ops->drop_ack)
			t->cfg.ops->drop_ack(t->cfg.arg, c->id,
					     nla_get_u64(tb[FKV_CA_SYNC_ID]));
		return;
	case FKV_CCMD_LEAVE:
		err = fkv_members_leave(&t->members, c->id, inc,
					FKV_LEFT_LEAVE);
		if (!err) {
			c->id = 0;
			c->state = C_CLOSING;
		}
		break;
	default:
		/* A forwarded upcall: the daemon's router answers it. */
		if (t->cfg.ops && t->cfg.ops->member_msg)
			t->cfg.ops->member_msg(t->cfg.arg, c->id, nlh);
		return;
	}
	if (err) {
		/* A late message of an old incarnation, or of a node that left. */
		t->st.stale++;
		fkv_warn("cluster: %s: stale message (incarnation %#llx): closing",
			 c->peer, (unsigned long long)inc);
		c->id = 0;
		c->state = C_CLOSING;
	}
}

/* ---- master role: the acceptor (pre-auth) ---- */

static void acc_count(_Atomic uint64_t *v)
{
	atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

/* Send @msg (consumed) on pre-auth connection @c; a failure closes it. */
static void acc_send(struct acceptor *a, struct cconn *c, struct nl_msg *msg)
{
	int err = msg ? fkv_wire_send(&c->w, msg) : -ENOMEM;

	if (err && err != -EAGAIN) {
		/* a stranger can reset its connection at will: rate-limited */
		fkv_ratelimited_warn(&a->log,
				     "cluster: cannot send to %s: %s: closing",
				     c->peer, strerror(-err));
		c->state = C_CLOSING;
	}
	nlmsg_free(msg);
}

static void acc_refuse(struct fkv_cctl *t, struct cconn *c, int err,
		       const char *why)
{
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_JOIN);

	acc_count(&t->acc.refused);
	if (msg && (nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)err) ||
		    nla_put_string(msg, FKV_CA_MESSAGE, why) ||
		    sign_answer(t, c, msg))) {
		nlmsg_free(msg);
		msg = NULL;
	}
	acc_send(&t->acc, c, msg);
	/* nothing it sends from here on is parsed */
	c->state = C_CLOSING;
}

/*
 * Hand the verified JOIN @nlh of @c over to the routing thread, with the
 * connection: from here the acceptor forgets it (its fd and buffers too).
 */
static void acc_hand_over(struct fkv_cctl *t, struct cconn *c,
			  const struct nlmsghdr *nlh)
{
	struct acceptor *a = &t->acc;
	struct handoff h = { .join = malloc(nlh->nlmsg_len) };
	bool queued = false;

	if (h.join) {
		memcpy(h.join, nlh, nlh->nlmsg_len);
		c->state = C_VERIFIED;
		h.c = *c;
		pthread_mutex_lock(&a->lock);
		/* never full: pa[] and q[] together hold the pre-auth maximum */
		if (a->nq < FKV_CCTL_PREAUTH_MAX) {
			a->q[(a->qhead + a->nq) % FKV_CCTL_PREAUTH_MAX] = h;
			a->nq++;
			queued = true;
		}
		pthread_mutex_unlock(&a->lock);
	}
	if (!queued) {
		fkv_err("cluster: cannot hand the join of %s over: closing",
			c->peer);
		free(h.join);
		conn_close(c);
		return;
	}
	memset(c, 0, sizeof(*c));
	c->w.fd = -1;
	c->state = C_FREE;
	if (a->ready_fd >= 0 && eventfd_write(a->ready_fd, 1))
		fkv_err("cluster: cannot wake the routing thread: %s",
			strerror(errno));
}

/*
 * Acceptor: the JOIN of a stranger.  What needs only the secret is
 * checked here (the refusals signed as the routing thread signs them);
 * a JOIN whose MAC verified goes to the routing thread (master_join).
 */
static void acc_join(struct fkv_cctl *t, struct cconn *c,
		     const struct nlmsghdr *nlh, struct nlattr **tb)
{
	struct acceptor *a = &t->acc;

	if (!tb[FKV_CA_NODE_NAME] || !tb[FKV_CA_MAC] ||
	    !tb[FLUXONKV_A_INCARNATION] || !tb[FKV_CA_DATA_ADDR]) {
		fkv_ratelimited_warn(&a->log, "cluster: malformed JOIN from %s",
				     c->peer);
		acc_refuse(t, c, -EINVAL, "malformed JOIN");
		return;
	}
	if (!tb[FKV_CA_NONCE]) {
		fkv_ratelimited_warn(&a->log,
				     "cluster: a JOIN without a nonce from %s (a fluxond before mutual authentication?)",
				     c->peer);
		acc_refuse(t, c, -EPROTO,
			   "this node's fluxond is too old: its JOIN has no nonce (upgrade it)");
		return;
	}
	memcpy(c->peer_nonce, nla_data(tb[FKV_CA_NONCE]), FKV_NONCE_LEN);
	c->peer_nonce_set = true;
	if (!fkv_auth_verify(nlh, t->cc->secret, t->cc->secret_len,
			     FKV_AUTH_CTL_JOIN, c->nonce, c->peer_nonce)) {
		fkv_ratelimited_warn(&a->log,
				     "cluster: refused node '%.64s' from %s: wrong cluster secret",
				     nla_get_string(tb[FKV_CA_NODE_NAME]),
				     c->peer);
		acc_refuse(t, c, -EACCES, "wrong cluster secret");
		return;
	}
	acc_hand_over(t, c, nlh);
}

/* Acceptor: a message from a stranger (in C_HELLO): a JOIN or nothing. */
static void acc_msg(struct fkv_cctl *t, struct cconn *c, struct nlmsghdr *nlh)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	uint8_t cmd = fkv_wire_cmd(nlh);

	if (fkv_wire_parse(nlh, tb, cctl_policy)) {
		fkv_ratelimited_warn(&t->acc.log,
				     "cluster: malformed message %u from %s: closing",
				     cmd, c->peer);
		c->state = C_CLOSING;
		return;
	}
	if (cmd != FKV_CCMD_JOIN) {
		fkv_ratelimited_warn(&t->acc.log,
				     "cluster: %s sent command %u before joining: closing",
				     c->peer, cmd);
		c->state = C_CLOSING;
		return;
	}
	acc_join(t, c, nlh, tb);
}

/* Acceptor: pre-auth connection @c is ready (poll's @revents). */
static void acc_io(struct fkv_cctl *t, struct cconn *c, short revents)
{
	struct nlmsghdr *nlh;
	int err = 0, ferr = 0;

	if (revents & POLLOUT)
		err = fkv_wire_flush(&c->w);
	if (err && err != -EAGAIN) {
		conn_close(c);
		return;
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		err = fkv_wire_read(&c->w);
		/*
		 * Up to its JOIN, whatever arrived before an end of stream;
		 * nothing after a refusal (C_CLOSING), nothing after a JOIN
		 * that verified (handed over: C_FREE here, and what followed
		 * it went along, unread, to the routing thread).
		 */
		while (c->state == C_HELLO &&
		       (nlh = fkv_wire_next(&c->w, &ferr)))
			acc_msg(t, c, nlh);
		if (c->state == C_FREE)
			return;
		if (ferr == -EPROTO) {
			fkv_ratelimited_warn(&t->acc.log,
					     "cluster: %s speaks no fluxond protocol: closing",
					     c->peer);
			err = ferr;
		}
		if (err && err != -EAGAIN) {
			conn_close(c);
			return;
		}
	}
	if (c->state == C_CLOSING && !fkv_wire_pending(&c->w))
		conn_close(c);
}

static void acc_accept(struct fkv_cctl *t)
{
	struct acceptor *a = &t->acc;
	unsigned int i, pending = 0, same = 0;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct nl_msg *msg;
	struct cconn *c = NULL;
	int fd;

	memset(&ss, 0, sizeof(ss));
	fd = accept4(a->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EMFILE && errno != ENFILE && errno != ENOBUFS &&
		    errno != ENOMEM)
			return;
		/*
		 * The connection stays queued and the listener readable: a
		 * pause, or the thread would spin until a descriptor is free.
		 */
		fkv_ratelimited_warn(&a->log, "cluster: accept: %s (retrying)",
				     strerror(errno));
		if (a->threaded)
			poll(NULL, 0, 100);
		return;
	}
	for (i = 0; i < FKV_CCTL_PREAUTH_MAX; i++) {
		struct cconn *o = &a->pa[i];

		if (o->state == C_FREE) {
			if (!c)
				c = o;
		} else {
			pending++;
			same += fkv_same_host(&o->addr, &ss);
		}
	}
	/* verified joins the routing thread has not taken yet count too */
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->nq; i++) {
		pending++;
		same += fkv_same_host(&a->q[(a->qhead + i) %
					   FKV_CCTL_PREAUTH_MAX].c.addr, &ss);
	}
	pthread_mutex_unlock(&a->lock);
	if (!c || pending >= FKV_CCTL_PREAUTH_MAX ||
	    same >= FKV_CCTL_PREAUTH_PER_ADDR) {
		/* nothing sent, nothing read */
		acc_count(&a->preauth_refused);
		fkv_ratelimited_warn(&a->log,
				     "cluster: %s: refusing a connection (%u joins in progress, %u from that address; at most %u and %u)",
				     c ? "too many joins" : "no free slot",
				     pending, same, FKV_CCTL_PREAUTH_MAX,
				     FKV_CCTL_PREAUTH_PER_ADDR);
		close(fd);
		return;
	}
	tune_socket(fd, t->cc->dead_after_ms);
	fkv_wire_init(&c->w, fd);
	/*
	 * No gate (cfg.may_send) here: HELLO and the refusals carry nothing
	 * of the cluster's state, and the first message that does, the
	 * JOIN answer, leaves from the routing thread, which sets the gate
	 * when it takes the connection.
	 */
	c->addr = ss;
	c->state = C_HELLO;
	c->since_ms = now_ms();
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		char ip[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(c->peer, sizeof(c->peer), "%s:%u", ip,
			 ntohs(sin->sin_port));
	} else {
		snprintf(c->peer, sizeof(c->peer), "a peer");
	}
	msg = fkv_wire_msg(FKV_CCMD_HELLO);
	if (fkv_auth_nonce(c->nonce) || !msg ||
	    nla_put(msg, FKV_CA_NONCE, FKV_NONCE_LEN, c->nonce) ||
	    nla_put_u32(msg, FKV_CA_PROTO, FKV_AUTH_PROTO)) {
		nlmsg_free(msg);
		conn_close(c);
		return;
	}
	acc_send(a, c, msg);
	if (c->state == C_CLOSING)
		conn_close(c);
}

/*
 * The acceptor's descriptors into @pfd (up to @max; FKV_CCTL_PREAUTH_MAX
 * + 1 wanted): its connections, then the listener, so that accepting
 * comes last in a round and reuses no slot polled before it.  @map gets
 * each one's pa[] index, -1 for the listener.
 */
static int acc_pollfds(struct acceptor *a, struct pollfd *pfd, int *map,
		       int max)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < FKV_CCTL_PREAUTH_MAX && n < max; i++) {
		struct cconn *c = &a->pa[i];

		if (c->state == C_FREE)
			continue;
		map[n] = (int)i;
		pfd[n++] = (struct pollfd){
			.fd = c->w.fd,
			.events = POLLIN |
				  (fkv_wire_pending(&c->w) ? POLLOUT : 0),
		};
	}
	if (n < max) {
		map[n] = -1;
		pfd[n++] = (struct pollfd){ .fd = a->lfd, .events = POLLIN };
	}
	return n;
}

/* Acceptor: descriptor @fd, pa[@idx] (-1: the listener), is ready. */
static void acc_ready(struct fkv_cctl *t, int idx, int fd, short revents)
{
	struct cconn *c;

	if (idx < 0) {
		acc_accept(t);
		return;
	}
	c = &t->acc.pa[idx];
	if (c->state != C_FREE && c->w.fd == fd)
		acc_io(t, c, revents);
}

/*
 * Acceptor: close whoever is past the join deadline (counted from
 * accept, whatever it sent; a refused connection that does not take its
 * refusal too).  Returns the ms until the next deadline, -1 for none.
 */
static int acc_tick(struct fkv_cctl *t)
{
	struct acceptor *a = &t->acc;
	uint64_t now = now_ms(), limit = t->cfg.join_timeout_ms;
	int64_t next = -1;
	unsigned int i;

	for (i = 0; i < FKV_CCTL_PREAUTH_MAX; i++) {
		struct cconn *c = &a->pa[i];

		if (c->state == C_FREE)
			continue;
		if (now - c->since_ms >= limit) {
			acc_count(&a->join_timeouts);
			fkv_ratelimited_warn(&a->log,
					     "cluster: %s did not join in time: closing",
					     c->peer);
			conn_close(c);
			continue;
		}
		if (next < 0 || (int64_t)(c->since_ms + limit - now) < next)
			next = (int64_t)(c->since_ms + limit - now);
	}
	return (int)next;
}

static void *acc_thread(void *arg)
{
	struct fkv_cctl *t = arg;
	struct acceptor *a = &t->acc;
	struct pollfd pfd[FKV_CCTL_PREAUTH_MAX + 2];
	int map[FKV_CCTL_PREAUTH_MAX + 2];

	for (;;) {
		int wait = acc_tick(t), k, n;

		n = acc_pollfds(a, pfd, map, FKV_CCTL_PREAUTH_MAX + 1);
		pfd[n] = (struct pollfd){ .fd = a->stop_fd, .events = POLLIN };
		if (poll(pfd, (nfds_t)n + 1, wait) < 0) {
			if (errno != EINTR)
				fkv_ratelimited_warn(&a->log,
						     "cluster: acceptor: poll: %s",
						     strerror(errno));
			continue;
		}
		if (pfd[n].revents)
			break;		/* fkv_cctl_stop() */
		for (k = 0; k < n; k++)
			if (pfd[k].revents)
				acc_ready(t, map[k], pfd[k].fd,
					  pfd[k].revents);
	}
	return NULL;
}

/* The acceptor's part of fkv_cctl_start(), once it listens on acc.lfd. */
static int acc_start(struct fkv_cctl *t)
{
	struct acceptor *a = &t->acc;
	int err;

	if (!a->threaded)
		return 0;
	a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	a->ready_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (a->stop_fd < 0 || a->ready_fd < 0)
		return -errno;
	err = pthread_create(&a->thread, NULL, acc_thread, t);
	if (err) {
		fkv_err("cluster: cannot start the acceptor thread: %s",
			strerror(err));
		return -err;
	}
	a->started = true;
	return 0;
}

/*
 * The acceptor's part of fkv_cctl_stop(): the thread stopped and joined,
 * then everything it owned closed, and the joins it queued that the
 * routing thread did not take.
 */
static void acc_stop(struct fkv_cctl *t)
{
	struct acceptor *a = &t->acc;
	unsigned int i;

	if (a->started) {
		/* an eventfd write fails only when the counter would wrap */
		(void)eventfd_write(a->stop_fd, 1);
		pthread_join(a->thread, NULL);
		a->started = false;
	}
	for (i = 0; i < FKV_CCTL_PREAUTH_MAX; i++)
		if (a->pa[i].state != C_FREE)
			conn_close(&a->pa[i]);
	for (; a->nq; a->nq--) {
		struct handoff *h = &a->q[a->qhead];

		conn_close(&h->c);
		free(h->join);
		a->qhead = (a->qhead + 1) % FKV_CCTL_PREAUTH_MAX;
	}
	if (a->lfd >= 0)
		close(a->lfd);
	if (a->stop_fd >= 0)
		close(a->stop_fd);
	if (a->ready_fd >= 0)
		close(a->ready_fd);
	a->lfd = a->stop_fd = a->ready_fd = -1;
}

static int master_start(struct fkv_cctl *t)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *res;
	struct fkv_join self = { 0 };
	char port[8], addr[FKV_ADDR_MAX];
	struct fkv_member *m;
	int one = 1, err;

	fkv_members_init(&t->members, t->cc->dead_after_ms, &members_ops, t);
	data_addr(t->cc, addr, sizeof(addr));
	self.name = t->cc->node_name;
	self.incarnation = t->cfg.incarnation;
	self.data_addr = addr;
	self.transport = fkv_transport_name(t->cc->transport);
	self.segment_size = t->cfg.segment_size;
	self.ssd_capacity = t->cfg.ssd_capacity;
	m = fkv_members_join(&t->members, &self, now_ms(), &err);
	if (!m)
		return err;
	t->self_id = m->id;

	snprintf(port, sizeof(port), "%u", t->cc->master.port);
	err = getaddrinfo(t->cc->master.host, port, &hints, &res);
	if (err) {
		fkv_err("cluster: cannot resolve the master address %s: %s",
			t->cc->master.host, gai_strerror(err));
		return -EADDRNOTAVAIL;
	}
	t->acc.lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC |
			    SOCK_NONBLOCK, 0);
	if (t->acc.lfd < 0 ||
	    setsockopt(t->acc.lfd, SOL_SOCKET, SO_REUSEADDR, &one,
		       sizeof(one)) ||
	    bind(t->acc.lfd, res->ai_addr, res->ai_addrlen) ||
	    listen(t->acc.lfd, 64)) {
		err = -errno;
		fkv_err("cluster: cannot listen on %s:%u: %s", t->cc->master.host,
			t->cc->master.port, strerror(-err));
		freeaddrinfo(res);
		return err;
	}
	freeaddrinfo(res);
	err = acc_start(t);
	if (err)
		return err;
	fkv_info("cluster: master role, listening on %s:%u; this node is '%s' "
		 "(id %u, incarnation %#llx)", t->cc->master.host,
		 t->cc->master.port, t->cc->node_name, t->self_id,
		 (unsigned long long)t->cfg.incarnation);
	return 0;
}

/* ---- node role ---- */

/*
 * Fault injection for selftests/cluster/fence.sh: FLUXOND_TEST_CTL_TX_MAX
 * bytes (4096..4 MiB) bound the queue of our connection to the master and
 * its socket's send buffer, as a slow link or a master that reads slowly
 * would, so that a large kept set's REPORTs meet a full queue.
 */
static void test_squeeze(struct cconn *c)
{
	const char *s = getenv("FLUXOND_TEST_CTL_TX_MAX");
	unsigned long v = s ? strtoul(s, NULL, 10) : 0;
	int buf;

	if (v < 4096 || v > (4 << 20))
		return;
	c->w.tx_max = v;
	buf = (int)v;
	setsockopt(c->w.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
}

static void node_connect(struct fkv_cctl *t)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct cconn *c = &t->conns[0];
	bool done = false;
	char port[8];
	int fd = -1;

	t->next_connect_ms = now_ms() + FKV_RECONNECT_MS;
	snprintf(port, sizeof(port), "%u", t->cc->master.port);
	if (getaddrinfo(t->cc->master.host, port, &hints, &res))
		goto fail;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
			    SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		/* Non-blocking: the loop never waits for the master. */
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			done = true;
			break;
		}
		if (errno == EINPROGRESS)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		goto fail;
	tune_socket(fd, t->cc->dead_after_ms);
	fkv_wire_init(&c->w, fd);
	test_squeeze(c);
	c->state = done ? C_HELLO : C_CONNECTING;
	c->since_ms = now_ms();
	snprintf(c->peer, sizeof(c->peer), "the master");
	if (done)
		t->st.connects++;
	return;
fail:
	if (!t->st.connect_failures++ || !(t->st.connect_failures % 30))
		fkv_warn("cluster: cannot reach the master at %s:%u (retrying "
			 "every %u ms)", t->cc->master.host, t->cc->master.port,
			 FKV_RECONNECT_MS);
}

static void node_msg(struct fkv_cctl *t, struct cconn *c, struct nlmsghdr *nlh)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	uint8_t cmd = fkv_wire_cmd(nlh);
	char addr[FKV_ADDR_MAX];
	struct nl_msg *msg;
	int32_t status;
	bool proven;

	if (cmd < FKV_CCMD_HELLO || cmd == FKV_CCMD_PLACED ||
	    cmd == FKV_CCMD_REPORT_DONE || cmd == FKV_CCMD_REPORT_ACK ||
	    cmd == FKV_CCMD_DROPS) {
		/*
		 * An answer to a forwarded upcall, DROP_REPLICA, a batch of
		 * drops, PLACED, or the master's word on our reports.
		 */
		if (c->state == C_JOINED && t->cfg.ops && t->cfg.ops->master_msg)
			t->cfg.ops->master_msg(t->cfg.arg, nlh);
		return;
	}
	if (fkv_wire_parse(nlh, tb, cctl_policy)) {
		c->state = C_CLOSING;
		return;
	}
	c->since_ms = now_ms();		/* the master is alive */
	if (cmd == FKV_CCMD_HEARTBEAT && c->state == C_JOINED) {
		take_lease(t, tb);
		return;
	}
	if (cmd == FKV_CCMD_HELLO && c->state == C_HELLO && tb[FKV_CA_NONCE]) {
		if (!tb[FKV_CA_PROTO] ||
		    nla_get_u32(tb[FKV_CA_PROTO]) < FKV_AUTH_PROTO) {
			fkv_ratelimited_warn(&t->preauth_log,
					     "cluster: the master at %s:%u speaks an older protocol (no mutual authentication): upgrade it",
					     t->cc->master.host,
					     t->cc->master.port);
			c->state = C_CLOSING;
			return;
		}
		memcpy(c->peer_nonce, nla_data(tb[FKV_CA_NONCE]),
		       FKV_NONCE_LEN);
		c->peer_nonce_set = true;
		data_addr(t->cc, addr, sizeof(addr));
		msg = fkv_wire_msg(FKV_CCMD_JOIN);
		if (fkv_auth_nonce(c->nonce) || !msg ||
		    nla_put_string(msg, FKV_CA_NODE_NAME, t->cc->node_name) ||
		    nla_put_u64(msg, FLUXONKV_A_INCARNATION, t->cfg.incarnation) ||
		    nla_put_string(msg, FKV_CA_DATA_ADDR, addr) ||
		    nla_put_string(msg, FKV_CA_TRANSPORT,
				   fkv_transport_name(t->cc->transport)) ||
		    nla_put_u64(msg, FLUXONKV_A_SEGMENT_SIZE, t->cfg.segment_size) ||
		    nla_put_u64(msg, FLUXONKV_A_SEGMENT_USED,
				t->cfg.segment_used(t->cfg.arg)) ||
		    nla_put_u64(msg, FLUXONKV_A_SSD_CAPACITY, t->cfg.ssd_capacity) ||
		    nla_put_u64(msg, FKV_CA_LEASE_T, now_ns()) ||
		    nla_put(msg, FKV_CA_NONCE, FKV_NONCE_LEN, c->nonce) ||
		    fkv_auth_sign(msg, t->cc->secret, t->cc->secret_len,
				  FKV_AUTH_CTL_JOIN, c->peer_nonce, c->nonce)) {
			nlmsg_free(msg);
			c->state = C_CLOSING;
			return;
		}
		conn_send(c, msg);
		c->state = C_JOINING;
		return;
	}
	if (cmd != FKV_CCMD_JOIN || c->state != C_JOINING ||
	    !tb[FLUXONKV_A_STATUS]) {
		fkv_warn("cluster: unexpected command %u from the master", cmd);
		return;
	}
	status = (int32_t)nla_get_u32(tb[FLUXONKV_A_STATUS]);
	/* Only a master that knows the secret can sign for our nonce. */
	proven = fkv_auth_verify(nlh, t->cc->secret, t->cc->secret_len,
				 FKV_AUTH_CTL_JOINED, c->nonce, c->peer_nonce);
	if (!proven)
		t->st.master_unproven++;
	if (!proven && !status) {
		fkv_ratelimited_warn(&t->preauth_log,
				     "cluster: the master at %s:%u accepted this node but failed the secret check (its answer is not signed with our secret): not joining",
				     t->cc->master.host, t->cc->master.port);
		c->state = C_CLOSING;
		return;
	}
	if (status == -EAGAIN && proven) {
		/* Our previous instance is still being forgotten: retry. */
		fkv_info("cluster: the master at %s:%u has this node '%s' wait: %s",
			 t->cc->master.host, t->cc->master.port,
			 t->cc->node_name, tb[FKV_CA_MESSAGE] ?
			 nla_get_string(tb[FKV_CA_MESSAGE]) : strerror(EAGAIN));
		c->state = C_CLOSING;
		return;
	}
	if (status) {
		fkv_err("cluster: the master at %s:%u refused this node '%s': %s%s",
			t->cc->master.host, t->cc->master.port, t->cc->node_name,
			tb[FKV_CA_MESSAGE] ? nla_get_string(tb[FKV_CA_MESSAGE]) :
			strerror(-status), proven ? "" :
			" (an unsigned answer: the cluster secrets differ, or that is not our master)");
		/*
		 * A wrong secret is the operator's to fix: exit (signed or
		 * not, since with a wrong secret no answer verifies).  Any
		 * other unsigned refusal is not believed: retry.
		 */
		t->fatal = status == -EACCES || (proven && status == -EEXIST) ?
			   status : 0;
		if (status == -ESTALE) {
			/* The master saw this instance leave: start afresh. */
			fkv_auth_incarnation(&t->cfg.incarnation);
			fkv_warn("cluster: rejoining under a new incarnation %#llx",
				 (unsigned long long)t->cfg.incarnation);
		}
		c->state = C_CLOSING;
		return;
	}
	if (seal_conn(t, c, FKV_AUTH_CTL_N2M, FKV_AUTH_CTL_M2N, c->peer_nonce,
		      c->nonce)) {
		c->state = C_CLOSING;
		return;
	}
	c->state = C_JOINED;
	t->node_id = tb[FKV_CA_NODE_ID] ? nla_get_u32(tb[FKV_CA_NODE_ID]) : 0;
	t->next_beat_ms = now_ms();
	t->lease_until = 0;	/* a new incarnation: the old lease is over */
	take_lease(t, tb);
	fkv_info("cluster: joined the master at %s:%u as node '%s' (id %u, "
		 "incarnation %#llx)", t->cc->master.host, t->cc->master.port,
		 t->cc->node_name, t->node_id,
		 (unsigned long long)t->cfg.incarnation);
	if (t->cfg.ops && t->cfg.ops->joined)
		t->cfg.ops->joined(t->cfg.arg, t->node_id);
}

static void node_send_simple(struct fkv_cctl *t, uint8_t cmd)
{
	struct cconn *c = &t->conns[0];
	struct nl_msg *msg = fkv_wire_msg(cmd);

	if (msg && (nla_put_u32(msg, FKV_CA_NODE_ID, t->node_id) ||
		    nla_put_u64(msg, FLUXONKV_A_INCARNATION, t->cfg.incarnation) ||
		    nla_put_u64(msg, FLUXONKV_A_SEGMENT_USED,
				t->cfg.segment_used(t->cfg.arg)) ||
		    nla_put_u64(msg, FKV_CA_LEASE_T, now_ns()))) {
		nlmsg_free(msg);
		msg = NULL;
	}
	conn_send(c, msg);
}

/* ---- both ---- */

int fkv_cctl_start(struct fkv_cctl **out, const struct fkv_cctl_config *c)
{
	struct fkv_cctl *t = calloc(1, sizeof(*t));
	unsigned int i;
	int err = 0;

	if (!t)
		return -ENOMEM;
	t->cfg = *c;
	t->cc = c->cc;
	if (!t->cfg.join_timeout_ms)
		t->cfg.join_timeout_ms = FKV_JOIN_TIMEOUT_MS;
	for (i = 0; i < FKV_CCTL_CONNS; i++)
		t->conns[i].w.fd = -1;
	t->acc.lfd = t->acc.stop_fd = t->acc.ready_fd = -1;
	t->acc.threaded = !c->inline_preauth;
	for (i = 0; i < FKV_CCTL_PREAUTH_MAX; i++)
		t->acc.pa[i].w.fd = -1;
	pthread_mutex_init(&t->acc.lock, NULL);
	t->master = t->cc->role == FKV_ROLE_MASTER;
	if (t->master) {
		err = master_start(t);
	} else {
		fkv_info("cluster: node role '%s' (incarnation %#llx), master at %s:%u",
			 t->cc->node_name, (unsigned long long)c->incarnation,
			 t->cc->master.host, t->cc->master.port);
		node_connect(t);
	}
	if (err) {
		fkv_cctl_stop(t);
		return err;
	}
	*out = t;
	return 0;
}

void fkv_cctl_stop(struct fkv_cctl *t)
{
	unsigned int i;

	if (!t)
		return;
	if (!t->master && t->conns[0].state == C_JOINED) {
		node_send_simple(t, FKV_CCMD_LEAVE);
		fkv_wire_flush(&t->conns[0].w);
	}
	/* first: the acceptor hands nothing over from here */
	acc_stop(t);
	for (i = 0; i < FKV_CCTL_CONNS; i++)
		if (t->conns[i].state != C_FREE)
			conn_close(&t->conns[i]);
	pthread_mutex_destroy(&t->acc.lock);
	free(t);
}

int fkv_cctl_pollfds(struct fkv_cctl *t, struct pollfd *pfd, int max)
{
	unsigned int i;
	int n = 0, k;

	if (t->master && !t->acc.threaded) {
		/* inline: the acceptor's descriptors first */
		n = acc_pollfds(&t->acc, pfd, t->pfd_conn, max);
		for (k = 0; k < n; k++)
			t->pfd_conn[k] = t->pfd_conn[k] < 0 ? PFD_LISTENER :
					 PFD_PREAUTH - t->pfd_conn[k];
	}
	if (t->acc.ready_fd >= 0 && n < max) {
		t->pfd_conn[n] = PFD_READY;
		pfd[n++] = (struct pollfd){ .fd = t->acc.ready_fd,
					    .events = POLLIN };
	}
	for (i = 0; i < FKV_CCTL_CONNS && n < max; i++) {
		struct cconn *c = &t->conns[i];

		if (c->state == C_FREE)
			continue;
		t->pfd_conn[n] = (int)i;
		pfd[n++] = (struct pollfd){
			.fd = c->w.fd,
			.events = POLLIN | (fkv_wire_pending(&c->w) ||
					    c->state == C_CONNECTING ? POLLOUT : 0),
		};
	}
	t->npfd = n;
	return n;
}

/*
 * An error of a control socket that says its peer closed it.  A node
 * takes the master's end closing or resetting for the master's doing
 * (a reset by anything in the path too: it may then serve alone, which
 * the master's side below makes safe).  The master takes only a clean end
 * of stream read (@read, -EPIPE: fkv_wire_read()'s "0 bytes") for the
 * node's: a reset or a failed send may be a middlebox's or its own, with
 * the node still alive and serving on its lease (EXPELLED).
 */
static bool peer_closed(const struct fkv_cctl *t, int err, bool read)
{
	if (t->master)
		return read && err == -EPIPE;
	return err == -EPIPE || err == -ECONNRESET;
}

/*
 * The connection @c is gone (or must go).  @peer_gone: the peer's end
 * closed or reset it (an end of stream, ECONNRESET); otherwise we close
 * it (a refusal, a protocol error, a full queue, silence, a reset).
 */
static void conn_lost(struct fkv_cctl *t, struct cconn *c, bool peer_gone)
{
	if (t->master) {
		/*
		 * A member's connection we closed (C_CLOSING: refused, full)
		 * leaves with it, as one its node closed: not live until it
		 * times out or rejoins, while it may serve on its lease.
		 */
		if ((c->state == C_JOINED || c->state == C_CLOSING) && c->id)
			fkv_members_leave(&t->members, c->id, c->incarnation,
					  peer_gone ? FKV_LEFT_CLOSED :
					  FKV_LEFT_EXPELLED);
	} else if (c->state == C_JOINED ||
		   (c->state == C_CLOSING && t->node_id)) {
		/* (C_CLOSING: we refused something of the master's) */
		fkv_warn("cluster: lost the connection to the master (%s); "
			 "reconnecting", peer_gone ? "its end closed" :
			 "closing ours");
		t->node_id = 0;
		/*
		 * The master declares us left: this incarnation is over.
		 * Rejoin as a new one (its replicas are gone with it).
		 */
		fkv_auth_incarnation(&t->cfg.incarnation);
		/*
		 * Before our end closes: once the master sees it, it goes on
		 * without us at once, so our module must have stopped
		 * serving on its lease (unless the master's end went first).
		 */
		if (t->cfg.ops && t->cfg.ops->lost)
			t->cfg.ops->lost(t->cfg.arg, peer_gone);
	}
	conn_close(c);
}

static void conn_io(struct fkv_cctl *t, struct cconn *c, short revents)
{
	struct nlmsghdr *nlh;
	int err = 0;

	if (c->state == C_CONNECTING) {
		socklen_t sl = sizeof(err);

		if (getsockopt(c->w.fd, SOL_SOCKET, SO_ERROR, &err, &sl) || err) {
			t->st.connect_failures++;
			conn_close(c);	/* the tick retries */
			return;
		}
		t->st.connects++;
		c->state = C_HELLO;
		return;
	}
	if (revents & POLLOUT)
		err = fkv_wire_flush(&c->w);
	if (err && err != -EAGAIN) {
		conn_lost(t, c, peer_closed(t, err, false));
		return;
	}
	if (revents & (POLLIN | POLLHUP | POLLERR)) {
		int ferr = 0;

		err = fkv_wire_read(&c->w);
		/* Whatever arrived before an end of stream is handled first. */
		/* Whatever comes after a refusal (C_CLOSING) is not parsed. */
		while (c->state != C_FREE && c->state != C_CLOSING &&
		       (nlh = fkv_wire_next(&c->w, &ferr)))
			(t->master ? master_msg : node_msg)(t, c, nlh);
		if (ferr == -EPROTO) {
			fkv_ratelimited_warn(&t->preauth_log,
					     "cluster: %s speaks no fluxond protocol: closing",
					     c->peer);
			err = ferr;
		} else if (ferr == -EBADMSG) {
			t->st.bad_seals++;
			fkv_ratelimited_warn(&t->preauth_log,
					     "cluster: a message from %s failed its seal (altered, replayed or injected): closing",
					     t->master ? c->peer : "the master");
			err = ferr;
		}
		if (err && err != -EAGAIN) {
			conn_lost(t, c, !ferr && peer_closed(t, err, true));
			return;
		}
	}
	if (c->state == C_CLOSING && !fkv_wire_pending(&c->w))
		conn_lost(t, c, false);
}

/*
 * Routing thread: take the connection of verified JOIN @h over from the
 * acceptor and answer it (master_join); then whatever its node sent
 * after the JOIN, which came along unread.
 */
static void master_take(struct fkv_cctl *t, struct handoff *h)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	struct cconn *c = NULL;
	unsigned int i;

	for (i = 0; i < FKV_CCTL_CONNS && !c; i++)
		if (t->conns[i].state == C_FREE)
			c = &t->conns[i];
	if (!c) {
		/* every member slot and every closing one taken */
		t->st.preauth_refused++;
		fkv_ratelimited_warn(&t->preauth_log,
				     "cluster: no free slot for the join of %s: closing",
				     h->c.peer);
		conn_close(&h->c);
		free(h->join);
		return;
	}
	*c = h->c;
	c->w.gate = t->cfg.may_send;
	c->w.gate_arg = t->cfg.arg;
	/* the acceptor parsed these very bytes with the same policy */
	if (fkv_wire_parse(h->join, tb, cctl_policy))
		c->state = C_CLOSING;
	else
		master_join(t, c, h->join, tb);
	free(h->join);
	conn_io(t, c, POLLIN);
}

/* Routing thread: every verified JOIN the acceptor queued. */
static void master_adopt(struct fkv_cctl *t)
{
	struct acceptor *a = &t->acc;
	struct handoff h;
	eventfd_t v;

	if (!t->master)
		return;
	/* read before popping: a push after this read wakes the poll again */
	if (a->ready_fd >= 0)
		(void)eventfd_read(a->ready_fd, &v);
	for (;;) {
		bool got = false;

		pthread_mutex_lock(&a->lock);
		if (a->nq) {
			h = a->q[a->qhead];
			a->qhead = (a->qhead + 1) % FKV_CCTL_PREAUTH_MAX;
			a->nq--;
			got = true;
		}
		pthread_mutex_unlock(&a->lock);
		if (!got)
			break;
		master_take(t, &h);
	}
}

int fkv_cctl_handle(struct fkv_cctl *t, const struct pollfd *pfd, int n)
{
	bool adopt = false;
	struct cconn *c;
	int k, idx;

	for (k = 0; k < n && k < t->npfd; k++) {
		if (!pfd[k].revents)
			continue;
		idx = t->pfd_conn[k];
		if (idx == PFD_READY) {
			adopt = true;
			continue;
		}
		if (idx < 0) {
			/* inline: the acceptor's step, then its queue */
			acc_ready(t, idx == PFD_LISTENER ? -1 : PFD_PREAUTH - idx,
				  pfd[k].fd, pfd[k].revents);
			adopt = true;
			continue;
		}
		/*
		 * Still the connection that was polled: handling an earlier
		 * descriptor may have closed it (a member replaced).
		 */
		c = &t->conns[idx];
		if (c->state != C_FREE && c->w.fd == pfd[k].fd)
			conn_io(t, c, pfd[k].revents);
	}
	if (adopt)
		master_adopt(t);
	return t->fatal;
}

/*
 * Read what has arrived before judging anyone silent.  A loop that stalled
 * on a long event (an eviction burst, a member-left at scale) finds the
 * heartbeats of that time unread in its sockets; the tick used to run
 * first and declare those members left (and a node its master gone).
 * Only joined connections (the master's) and the node's own connection
 * to the master: the join's deadline counts from accept, whatever came.
 */
static void read_first(struct fkv_cctl *t)
{
	unsigned int i;

	for (i = 0; i < FKV_CCTL_CONNS; i++) {
		struct cconn *c = &t->conns[i];

		if (c->state == C_JOINED ||
		    (!t->master && (c->state == C_HELLO ||
				    c->state == C_JOINING)))
			conn_io(t, c, POLLIN);
	}
}

void fkv_cctl_tick(struct fkv_cctl *t)
{
	uint64_t now;
	unsigned int i;

	read_first(t);
	now = now_ms();
	if (t->master) {
		struct fkv_member *self = fkv_members_live(&t->members,
							   t->self_id);

		if (self) {
			self->last_seen_ms = now;
			self->segment_used = t->cfg.segment_used(t->cfg.arg);
		}
		fkv_members_tick(&t->members, now);
		if (!t->acc.threaded)
			acc_tick(t);	/* inline: the join deadlines */
		/* joins the poll did not show yet (a loop that did not poll) */
		master_adopt(t);
		for (i = 0; i < FKV_CCTL_CONNS; i++) {
			struct cconn *c = &t->conns[i];

			/* A member the table let go (timeout): its connection too. */
			if (c->state == C_JOINED &&
			    !fkv_members_is_live(&t->members, c->id,
						 c->incarnation)) {
				c->id = 0;
				conn_close(c);
			}
		}
		return;
	}
	/*
	 * A master that says nothing for dead_after_ms (no HELLO, no JOIN
	 * answer, no heartbeat answer) is as gone as a closed connection.
	 */
	if (t->conns[0].state != C_FREE &&
	    now - t->conns[0].since_ms > t->cc->dead_after_ms) {
		fkv_warn("cluster: the master said nothing for %u ms",
			 t->cc->dead_after_ms);
		conn_lost(t, &t->conns[0], false);
	}
	if (t->conns[0].state == C_FREE && now >= t->next_connect_ms)
		node_connect(t);
	if (t->conns[0].state == C_JOINED && now >= t->next_beat_ms) {
		node_send_simple(t, FKV_CCMD_HEARTBEAT);
		t->st.heartbeats++;
		t->next_beat_ms = now + t->cc->heartbeat_ms;
	}
}

bool fkv_cctl_roomy(const struct fkv_cctl *t)
{
	const struct fkv_wire *w = &t->conns[0].w;

	if (t->master || t->conns[0].state != C_JOINED)
		return false;
	return w->tx_len - w->tx_off < w->tx_max / 2;
}

bool fkv_cctl_member_roomy(const struct fkv_cctl *t, uint32_t id)
{
	unsigned int i;

	if (!t->master)
		return false;
	for (i = 0; i < FKV_CCTL_CONNS; i++) {
		const struct cconn *c = &t->conns[i];

		if (c->state == C_JOINED && c->id == id &&
		    fkv_members_is_live(&t->members, id, c->incarnation))
			return c->w.tx_len - c->w.tx_off < c->w.tx_max / 2;
	}
	return false;
}

void fkv_cctl_reset(struct fkv_cctl *t)
{
	if (!t->master && t->conns[0].state == C_JOINED)
		conn_lost(t, &t->conns[0], false);
}

int fkv_cctl_send(struct fkv_cctl *t, uint32_t id, struct nl_msg *msg)
{
	unsigned int i;

	if (!t->master) {
		if (t->conns[0].state != C_JOINED)
			return -ENOTCONN;
		return fkv_wire_send(&t->conns[0].w, msg) == -ENOBUFS ?
		       -ENOBUFS : 0;
	}
	for (i = 0; i < FKV_CCTL_CONNS; i++) {
		struct cconn *c = &t->conns[i];

		if (c->state == C_JOINED && c->id == id &&
		    fkv_members_is_live(&t->members, id, c->incarnation)) {
			if (fkv_wire_send(&c->w, msg) == -ENOBUFS) {
				fkv_warn("cluster: node %u does not read: "
					 "closing", id);
				master_expel(t, c);
				return -ENOBUFS;
			}
			return 0;
		}
	}
	return -ENOTCONN;
}

int fkv_cctl_place_key(const struct fkv_cctl *t, uint32_t id,
		       uint8_t key[FKV_MAC_LEN])
{
	const struct cconn *c;
	unsigned int i;

	if (!t->master) {
		c = &t->conns[0];
		if (c->state != C_JOINED || !c->place_key_set)
			return -ENOTCONN;
		memcpy(key, c->place_key, FKV_MAC_LEN);
		return 0;
	}
	for (i = 0; i < FKV_CCTL_CONNS; i++) {
		c = &t->conns[i];
		if (c->state == C_JOINED && c->id == id && c->place_key_set &&
		    fkv_members_is_live(&t->members, id, c->incarnation)) {
			memcpy(key, c->place_key, FKV_MAC_LEN);
			return 0;
		}
	}
	return -ENOTCONN;
}

uint32_t fkv_cctl_self_id(const struct fkv_cctl *t)
{
	return t->self_id;
}

uint64_t fkv_cctl_incarnation(const struct fkv_cctl *t)
{
	return t->cfg.incarnation;
}

const struct fkv_members *fkv_cctl_members(const struct fkv_cctl *t)
{
	return t->master ? &t->members : NULL;
}

void fkv_cctl_get_stats(const struct fkv_cctl *t, struct fkv_cctl_stats *st)
{
	const struct acceptor *a = &t->acc;

	*st = t->st;
	st->preauth_refused += atomic_load_explicit(&a->preauth_refused,
						    memory_order_relaxed);
	st->join_timeouts += atomic_load_explicit(&a->join_timeouts,
						  memory_order_relaxed);
	st->refused += atomic_load_explicit(&a->refused,
					    memory_order_relaxed);
}

uint32_t fkv_cctl_node_id(const struct fkv_cctl *t)
{
	return t->conns[0].state == C_JOINED ? t->node_id : 0;
}
