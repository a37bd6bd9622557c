/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cluster_ctl.h - fluxond's cluster control plane: the master's member
 * listener, or a node's connection to the master (cluster.h messages over
 * wire.h).  Both sides are driven by the daemon's poll loop (the routing
 * thread); a master also runs one acceptor thread of its own.
 *
 * Master role: an acceptor thread accepts, challenges (HELLO) and checks
 * the JOIN's HMAC under the pre-auth limits, so that strangers and slow
 * handshakes cost the routing thread nothing; a JOIN that verified comes
 * to the routing thread (through a descriptor fkv_cctl_pollfds() lists),
 * which admits it into the membership table (member.h), takes heartbeats,
 * and declares member-left on LEAVE, a closed connection or dead_after_ms
 * of silence.  The master's own node is a member too, joined in process.
 * Every function below runs on the routing thread.
 *
 * Node role: connect, answer the challenge, heartbeat every heartbeat_ms,
 * take the lease each answer grants (ops->lease), reconnect after a loss.  A refusal of the secret is fatal
 * (fkv_cctl_handle() returns -EACCES): the operator must fix the config.
 */
#ifndef FLUXOND_CLUSTER_CTL_H
#define FLUXOND_CLUSTER_CTL_H

#include <poll.h>
#include <stdint.h>

#include "fluxonkv_config.h"
#include "member.h"

struct nlmsghdr;
struct nl_msg;

/* What the daemon does with membership and with the messages it routes. */
struct fkv_cctl_ops {
	/*
	 * master: member @m (not the master's own node) joined / left; its
	 * last_left says why: FKV_LEFT_EXPELLED (we closed its connection
	 * while it lived) leaves a node that may serve its local hits on the
	 * lease we granted it until that runs out (->lost's @peer_gone)
	 */
	void (*member_up)(void *arg, const struct fkv_member *m);
	void (*member_down)(void *arg, const struct fkv_member *m);
	/*
	 * master, optional: member id @id's departed instance is still
	 * being cleaned up; a JOIN that would take @id waits (EAGAIN)
	 */
	bool (*member_busy)(void *arg, uint32_t id);
	/* master: a forwarded upcall or notification from member @id */
	void (*member_msg)(void *arg, uint32_t id, struct nlmsghdr *nlh);
	/* master: member @id applied the DROP_REPLICA of @sync_id */
	void (*drop_ack)(void *arg, uint32_t id, uint64_t sync_id);
	/*
	 * node: joined the master as @id / lost it.  @peer_gone: the
	 * master's end closed (or reset) the connection -- the master died,
	 * or it let us go and waits out our lease itself -- so the module
	 * may serve our hits alone until the lease ends; otherwise we are
	 * the ones closing, and ->lost runs before our end closes: the
	 * master, seeing the close, must find our local hits over.
	 */
	void (*joined)(void *arg, uint32_t id);
	void (*lost)(void *arg, bool peer_gone);
	/* node: an answer or a command (DROP_REPLICA) from the master */
	void (*master_msg)(void *arg, struct nlmsghdr *nlh);
	/*
	 * node: the master's lease now runs until CLOCK_MONOTONIC
	 * @until_ns (a JOIN or HEARTBEAT answer); local hits only before.
	 */
	void (*lease)(void *arg, uint64_t until_ns);
};

/*
 * What a node takes off the master's lease (plus 1 %): the module applies
 * it a moment after the answer came, and the master counts from when it
 * answered, on a clock that may run a little faster.
 */
#define FKV_LEASE_GUARD_MS	20

struct fkv_cctl_config {
	const struct fkv_cluster_config *cc;	/* from the YAML; must outlive */
	const struct fkv_cctl_ops *ops;
	uint64_t incarnation;		/* this daemon's, fresh at start */
	uint64_t segment_size;
	uint64_t ssd_capacity;
	uint64_t (*segment_used)(void *arg);
	void *arg;
	/*
	 * Master role, optional: checked before every write to a node's
	 * connection; false (the leader's hold on its etcd lease ran out,
	 * failover.h) writes nothing more -- not the rest of a turn that
	 * began while it still led.  Called with @arg, on the routing
	 * thread only (the acceptor's HELLO and refusals are not gated:
	 * they carry nothing of the cluster's state).
	 */
	bool (*may_send)(void *arg);
	/*
	 * Master role: a connection that has not sent a JOIN whose MAC
	 * verified this long after accept is closed; 0 is
	 * FKV_JOIN_TIMEOUT_MS (5 s).  Tests shorten it.
	 */
	unsigned int join_timeout_ms;
	/*
	 * Master role, for the fuzzer only (tests/fuzz/fuzz_ctl.c): no
	 * acceptor thread; its work (accept, HELLO, the JOIN's check, the
	 * deadlines) runs in fkv_cctl_handle() / fkv_cctl_tick(), and
	 * fkv_cctl_pollfds() lists its descriptors (up to
	 * FKV_CCTL_PREAUTH_MAX + 1 more, first): the same code, driven
	 * deterministically.
	 */
	bool inline_preauth;
};

struct fkv_cctl_stats {
	uint64_t joins, refused, member_left, heartbeats, stale;
	uint64_t connects, connect_failures;
	/* master: connections refused before the join (limits), joins cut */
	uint64_t preauth_refused, join_timeouts;
	/* master: JOINs told to wait for their node's departed instance */
	uint64_t join_waits;
	/* sealed messages refused; node: JOIN answers not signed right */
	uint64_t bad_seals, master_unproven;
};

struct fkv_cctl;

int fkv_cctl_start(struct fkv_cctl **out, const struct fkv_cctl_config *c);
/* A node says LEAVE first; a master just closes. */
void fkv_cctl_stop(struct fkv_cctl *t);
/*
 * Fill up to @max pollfds; returns how many.  At most FKV_CCTL_POLL_MAX
 * are ever wanted (every member, connections closing, and the acceptor's
 * queue of verified joins).
 */
#define FKV_CCTL_POLL_MAX	(FKV_MEMBERS_MAX_CTL + 17)
int fkv_cctl_pollfds(struct fkv_cctl *t, struct pollfd *pfd, int max);
/*
 * After poll() of what the last fkv_cctl_pollfds() filled: 0, or a fatal
 * -errno (node refused by the master).
 */
int fkv_cctl_handle(struct fkv_cctl *t, const struct pollfd *pfd, int n);
/* Timers: heartbeats, member timeouts, reconnects; about every 100 ms. */
void fkv_cctl_tick(struct fkv_cctl *t);
/*
 * Queue @msg (not consumed) for member @id (master role) or for the
 * master (node role, @id ignored): 0, -ENOTCONN (not joined / no such
 * live member) or -ENOBUFS.
 */
int fkv_cctl_send(struct fkv_cctl *t, uint32_t id, struct nl_msg *msg);
/*
 * Node role: give up the connection to the master (it stopped answering
 * what we wait for); ops->lost runs, and we rejoin as a new incarnation.
 */
void fkv_cctl_reset(struct fkv_cctl *t);
/*
 * Node role: less than half of the queue to the master is taken, so bulk
 * traffic (reports) may add to it without crowding out heartbeats and
 * upcalls, whose refusal would cost the connection.
 */
bool fkv_cctl_roomy(const struct fkv_cctl *t);
/*
 * Master role: the same for the connection of live member @id (false
 * when it has none): bulk traffic to it (batches of drops) waits for room.
 */
bool fkv_cctl_member_roomy(const struct fkv_cctl *t, uint32_t id);
/*
 * The key for placement tickets (auth.h) shared with member @id's live
 * connection (master role) or with the master (node role, @id ignored),
 * derived from that connection's nonces: 0, or -ENOTCONN.  A new join
 * makes a new key.
 */
int fkv_cctl_place_key(const struct fkv_cctl *t, uint32_t id,
		       uint8_t key[FKV_MAC_LEN]);
/* The master's own member id (master role). */
uint32_t fkv_cctl_self_id(const struct fkv_cctl *t);
/* This daemon's current incarnation (a node picks a new one per join). */
uint64_t fkv_cctl_incarnation(const struct fkv_cctl *t);
/* The master's table (NULL in node role). */
const struct fkv_members *fkv_cctl_members(const struct fkv_cctl *t);
void fkv_cctl_get_stats(const struct fkv_cctl *t, struct fkv_cctl_stats *st);
/* Node role: joined the master right now; the id it gave us. */
uint32_t fkv_cctl_node_id(const struct fkv_cctl *t);

#endif /* FLUXOND_CLUSTER_CTL_H */
