// SPDX-License-Identifier: GPL-2.0
/*
 * cluster_ctl.c - the cluster control plane of fluxond (cluster_ctl.h).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Connections a master serves at once (members + joins in progress). */
#define FKV_CCTL_CONNS		(FKV_MEMBERS_MAX + 16)
_Static_assert(FKV_CCTL_POLL_MAX >= FKV_CCTL_CONNS + 1,
	       "the poll array has room for every connection");
/* A connection that has not joined by then is closed. */
#define FKV_JOIN_TIMEOUT_MS	5000
/*
 * Connections in the join (HELLO sent, no member yet) at once, and from one
 * address: whoever lacks the secret holds at most these of the master's
 * slots, each for FKV_JOIN_TIMEOUT_MS, and the rest (FKV_MEMBERS_MAX) stay
 * free for members.
 */
#define FKV_CCTL_PREAUTH_MAX	16
#define FKV_CCTL_PREAUTH_PER_ADDR	4
/* A node retries the master this often while it cannot reach it. */
#define FKV_RECONNECT_MS	1000

/* C_CONNECTING: a node's non-blocking connect to the master, not done. */
enum conn_state { C_FREE, C_CONNECTING, C_HELLO, C_JOINING, C_JOINED,
		  C_CLOSING };

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

struct fkv_cctl {
	struct fkv_cctl_config cfg;
	const struct fkv_cluster_config *cc;
	bool master;
	struct fkv_cctl_stats st;
	/* master */
	int lfd;
	struct fkv_members members;
	uint32_t self_id;
	struct cconn conns[FKV_CCTL_CONNS];
	/*
	 * The conns[] index of each pollfd the last fkv_cctl_pollfds() gave
	 * (-1: the listening socket), so that handling a ready descriptor
	 * costs no scan of every connection.
	 */
	int pfd_conn[FKV_CCTL_CONNS + 1];
	int npfd;
	/* node: conns[0] is the master connection */
	uint32_t node_id;
	uint64_t next_beat_ms, next_connect_ms;
	uint64_t lease_until;	/* CLOCK_MONOTONIC ns: the master's lease */
	int fatal;
	struct fkv_ratelimit preauth_log;	/* what strangers provoke */
};

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

	if (c->state != C_HELLO || !tb[FKV_CA_NODE_NAME] || !tb[FKV_CA_MAC] ||
	    !tb[FLUXONKV_A_INCARNATION] || !tb[FKV_CA_DATA_ADDR]) {
		fkv_ratelimited_warn(&t->preauth_log,
				     "cluster: malformed JOIN from %s", c->peer);
		master_refuse(t, c, -EINVAL, "malformed JOIN");
		return;
	}
	if (!tb[FKV_CA_NONCE]) {
		fkv_ratelimited_warn(&t->preauth_log,
				     "cluster: a JOIN without a nonce from %s (a fluxond before mutual authentication?)",
				     c->peer);
		master_refuse(t, c, -EPROTO,
			      "this node's fluxond is too old: its JOIN has no nonce (upgrade it)");
		return;
	}
	memcpy(c->peer_nonce, nla_data(tb[FKV_CA_NONCE]), FKV_NONCE_LEN);
	c->peer_nonce_set = true;
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
	if (!fkv_auth_verify(nlh, t->cc->secret, t->cc->secret_len,
			     FKV_AUTH_CTL_JOIN, c->nonce, c->peer_nonce)) {
		fkv_ratelimited_warn(&t->preauth_log,
				     "cluster: refused node '%.64s' from %s: wrong cluster secret",
				     j.name, c->peer);
		master_refuse(t, c, -EACCES, "wrong cluster secret");
		return;
	}
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
		c->state = C_CLOSING;
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

static void master_accept(struct fkv_cctl *t)
{
	unsigned int i, pending = 0, same = 0;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct nl_msg *msg;
	struct cconn *c = NULL;
	int fd;

	memset(&ss, 0, sizeof(ss));
	fd = accept4(t->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	for (i = 0; i < FKV_CCTL_CONNS; i++) {
		struct cconn *o = &t->conns[i];

		if (o->state == C_FREE) {
			if (!c)
				c = o;
		} else if (o->state == C_HELLO || o->state == C_JOINING) {
			pending++;
			same += fkv_same_host(&o->addr, &ss);
		}
	}
	if (!c || pending >= FKV_CCTL_PREAUTH_MAX ||
	    same >= FKV_CCTL_PREAUTH_PER_ADDR) {
		/* nothing sent, nothing read */
		t->st.preauth_refused++;
		fkv_ratelimited_warn(&t->preauth_log,
				     "cluster: %s: refusing a connection (%u joins in progress, %u from that address; at most %u and %u)",
				     c ? "too many joins" : "no free slot",
				     pending, same, FKV_CCTL_PREAUTH_MAX,
				     FKV_CCTL_PREAUTH_PER_ADDR);
		close(fd);
		return;
	}
	tune_socket(fd, t->cc->dead_after_ms);
	fkv_wire_init(&c->w, fd);
	c->w.gate = t->cfg.may_send;
	c->w.gate_arg = t->cfg.arg;
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
	conn_send(c, msg);
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
	t->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC |
			SOCK_NONBLOCK, 0);
	if (t->lfd < 0 ||
	    setsockopt(t->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(t->lfd, res->ai_addr, res->ai_addrlen) || listen(t->lfd, 64)) {
		err = -errno;
		fkv_err("cluster: cannot listen on %s:%u: %s", t->cc->master.host,
			t->cc->master.port, strerror(-err));
		freeaddrinfo(res);
		return err;
	}
	freeaddrinfo(res);
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
	t->lfd = -1;
	for (i = 0; i < FKV_CCTL_CONNS; i++)
		t->conns[i].w.fd = -1;
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
	for (i = 0; i < FKV_CCTL_CONNS; i++)
		if (t->conns[i].state != C_FREE)
			conn_close(&t->conns[i]);
	if (t->lfd >= 0)
		close(t->lfd);
	free(t);
}

int fkv_cctl_pollfds(struct fkv_cctl *t, struct pollfd *pfd, int max)
{
	unsigned int i;
	int n = 0;

	if (t->lfd >= 0 && n < max) {
		t->pfd_conn[n] = -1;
		pfd[n++] = (struct pollfd){ .fd = t->lfd, .events = POLLIN };
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

/* The connection @c is gone (or must go). */
static void conn_lost(struct fkv_cctl *t, struct cconn *c)
{
	if (t->master) {
		if (c->state == C_JOINED && c->id)
			fkv_members_leave(&t->members, c->id, c->incarnation,
					  FKV_LEFT_CLOSED);
	} else if (c->state == C_JOINED) {
		fkv_warn("cluster: lost the connection to the master; reconnecting");
		t->node_id = 0;
		/*
		 * The master declares us left: this incarnation is over.
		 * Rejoin as a new one (its replicas are gone with it).
		 */
		fkv_auth_incarnation(&t->cfg.incarnation);
		conn_close(c);
		if (t->cfg.ops && t->cfg.ops->lost)
			t->cfg.ops->lost(t->cfg.arg);
		return;
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
		conn_lost(t, c);
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
			conn_lost(t, c);
			return;
		}
	}
	if (c->state == C_CLOSING && !fkv_wire_pending(&c->w))
		conn_lost(t, c);
}

int fkv_cctl_handle(struct fkv_cctl *t, const struct pollfd *pfd, int n)
{
	struct cconn *c;
	int k;

	for (k = 0; k < n && k < t->npfd; k++) {
		if (!pfd[k].revents)
			continue;
		if (t->pfd_conn[k] < 0) {
			if (pfd[k].fd == t->lfd)
				master_accept(t);
			continue;
		}
		/*
		 * Still the connection that was polled: handling an earlier
		 * descriptor may have closed it (a member replaced).
		 */
		c = &t->conns[t->pfd_conn[k]];
		if (c->state != C_FREE && c->w.fd == pfd[k].fd)
			conn_io(t, c, pfd[k].revents);
	}
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
		for (i = 0; i < FKV_CCTL_CONNS; i++) {
			struct cconn *c = &t->conns[i];

			if ((c->state == C_HELLO || c->state == C_JOINING) &&
			    now - c->since_ms > FKV_JOIN_TIMEOUT_MS) {
				t->st.join_timeouts++;
				fkv_ratelimited_warn(&t->preauth_log,
						     "cluster: %s did not join in time: closing",
						     c->peer);
				conn_close(c);
			}
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
		conn_lost(t, &t->conns[0]);
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
		conn_lost(t, &t->conns[0]);
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
				c->state = C_CLOSING;
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
	*st = t->st;
}

uint32_t fkv_cctl_node_id(const struct fkv_cctl *t)
{
	return t->conns[0].state == C_JOINED ? t->node_id : 0;
}
