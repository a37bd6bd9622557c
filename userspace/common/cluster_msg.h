/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cluster_msg.h - the messages fluxond nodes and the master exchange over TCP
 * (Documentation/fluxonkv/cluster.md).
 *
 * One codec for netlink and TCP: every message is a generic netlink
 * message (struct nlmsghdr + struct genlmsghdr + attributes), framed on
 * the stream by its own nlmsg_len.  Upcalls a node forwards to the master
 * keep their FLUXONKV_CMD_* number and FLUXONKV_A_* attributes; the
 * commands and attributes below exist only on TCP and are numbered above
 * the kernel's, so the two sets never collide.
 */
#ifndef FKV_CLUSTER_MSG_H
#define FKV_CLUSTER_MSG_H

#include <linux/fluxonkv.h>

/* nlmsg_type of every message on a fluxond TCP connection. */
#define FKV_WIRE_TYPE		0x4658	/* "FX" */
/* Largest message accepted on a connection (a full ACCESS batch fits). */
#define FKV_WIRE_MAX		(64 << 10)
/*
 * The local control socket's STATS answer (fluxonctl cluster): every
 * member's statistics, ~320 bytes each, 1,024 members.
 */
#define FKV_WIRE_STATS_MAX	(1 << 20)

enum fkv_cluster_cmd {
	/*
	 * master -> node, first message on a control connection (and source
	 * -> requester on a data connection): NONCE (32 random bytes), PROTO
	 * (the handshake's version, 2).  The node answers JOIN.
	 */
	FKV_CCMD_HELLO = 100,
	/*
	 * node -> master: NODE_NAME, INCARNATION (the module's), DATA_ADDR
	 * (host:port peers dial), TRANSPORT, SEGMENT_SIZE, SEGMENT_USED,
	 * SSD_CAPACITY, LEASE_T, NONCE (the node's own), and last MAC =
	 * HMAC-SHA256(secret, "fluxonkv/2 control join" | master's NONCE |
	 * node's NONCE | the message's genl header and every attribute before
	 * MAC).  Answer JOIN with STATUS (0, -EACCES bad secret, -ESTALE
	 * older incarnation than the one known, -EBUSY a live member holds
	 * the name, -EINVAL malformed), NODE_ID, MESSAGE (why, on failure),
	 * HEARTBEAT_MS, DEAD_AFTER_MS, on 0 the lease (LEASE_T echoed,
	 * LEASE_MS), and last MAC, labelled "fluxonkv/2 control joined" over
	 * the node's NONCE then the master's: the node joins only a master
	 * that proves the secret.  From then on every message both ways is
	 * sealed (auth.h; wire.h).  On the data port the same exchange has
	 * NODE_NAME and NONCE only, labelled "fluxonkv/2 data join(ed)",
	 * and seals nothing after it.
	 */
	FKV_CCMD_JOIN,
	/*
	 * node -> master: NODE_ID, INCARNATION, SEGMENT_USED, LEASE_T (the
	 * node's CLOCK_MONOTONIC ns as it sends).  The master answers a live
	 * member's heartbeat with HEARTBEAT {LEASE_T echoed, LEASE_MS}: the
	 * node may serve local hits until LEASE_T + LEASE_MS (less a guard).
	 * Everything the master sent before that answer (DROP_REPLICAs) was
	 * applied by then: the connection and the node's loop keep order.
	 */
	FKV_CCMD_HEARTBEAT,
	/* node -> master: NODE_ID, INCARNATION: leaving cleanly; no answer. */
	FKV_CCMD_LEAVE,
	/*
	 * data plane, requester -> source node: REQ_ID, KEY, HANDLE, PUT_ID,
	 * LEN, INCARNATION (of the source, as the master named it).  Answer
	 * PULL with REQ_ID, STATUS and, on 0, LEN; exactly LEN raw payload
	 * bytes follow the answer on the stream.
	 */
	FKV_CCMD_PULL,
	/*
	 * fluxonctl -> fluxond on the local control socket (no join):
	 * answer STATS with ROLE, NODE_NAME, NODE_ID, INCARNATION, MASTER
	 * (host:port), TRANSPORT, STAT... (this daemon's counters) and, on
	 * the master, NODE... (one per member: NODE_ID, NODE_NAME, LIVE,
	 * INCARNATION, DATA_ADDR, TRANSPORT, SEGMENT_SIZE, SEGMENT_USED,
	 * SSD_CAPACITY, STAT...).
	 */
	FKV_CCMD_STATS,
	/*
	 * node -> master: SYNC_ID: the DROP_REPLICA that carried it reached
	 * the module (an overwrite or delete elsewhere waits for it).
	 */
	FKV_CCMD_DROP_ACK,
	/*
	 * data plane, requester -> target node (remote placement): KEY,
	 * PUT_ID, LEN, PLACE_TICKET (the master's for that put and that
	 * node: auth.h; -EACCES without it).  Answer PLACE with STATUS and,
	 * on 0, HANDLE (the
	 * target's replica for it); then exactly LEN raw payload bytes
	 * follow from the requester, and the target answers PLACE again with
	 * STATUS once they are all in (0) or not.  One placement per
	 * connection; the requester closes it after the second answer.
	 */
	FKV_CCMD_PLACE,
	/*
	 * master -> the node a put was placed on: HANDLE, PUT_ID, FLAGS
	 * (FLUXONKV_PUBLISH_F_PERSIST): the master published that replica;
	 * no answer.  In order with later DROP_REPLICAs of the handle.
	 */
	FKV_CCMD_PLACED,
	/*
	 * data plane, requester -> source, once per connection after the
	 * join: may the bytes of this connection's pulls move by RDMA READ?
	 * No attributes.  Answer RDMA with STATUS (0, -EOPNOTSUPP: no usable
	 * device here) and, on 0, TICKET (present it in the librdmacm
	 * connect: once).  From then on a PULL may carry RDMA: the answer
	 * (and each chunk header of a push) names a memory window over just
	 * those bytes (ADDR, RKEY; bound to this connection's QP, remote
	 * read only) instead of carrying them; the requester READs them and
	 * answers RELEASE for each, after which the source invalidates the
	 * window and unpins.  An answer or header without RKEY carries its
	 * bytes inline, as over TCP (the source could not bind a window).
	 */
	FKV_CCMD_RDMA,
	/*
	 * data plane, requester -> source: OFFSET (the value offset of the
	 * chunk, 0 for a DRAM pull), STATUS (0: read; -errno: the READ
	 * failed).  The source releases that pin; no answer.
	 */
	FKV_CCMD_RELEASE,
	/*
	 * node -> master, after the node registered with its module and
	 * found replicas kept from before (warm restart, the master
	 * restarted or the node rejoined): one per FLUXONKV_CMD_DUMP record,
	 * HANDLE (DRAM only), KEY, PUT_ID, LEN, SOURCE (MEMORY or SSD).  The
	 * master adopts it or answers DROP_REPLICA for the handle.
	 */
	FKV_CCMD_REPORT,
	/*
	 * node -> master, after its last REPORT (also when it had none): the
	 * master persists again the DRAM replicas it adopted from that node
	 * without an SSD copy (their persist never committed), as it does for
	 * its own module's after a warm restart.  No attributes.  The
	 * master answers with the same command, after the DROP_REPLICAs of
	 * every report it refused: the node's module may then serve the
	 * kept replicas left (FLUXONKV_CMD_ADOPT_DONE); until then they are
	 * no local hits.
	 */
	FKV_CCMD_REPORT_DONE,
	/*
	 * node -> master, after each batch of REPORTs: SYNC_ID (the batch's
	 * number, from 1).  The master answers with the same command and
	 * SYNC_ID once it handled every REPORT before it (and queued the
	 * DROP_REPLICAs of those it refused).  The node keeps a few batches
	 * unacknowledged at most: a large kept set never overflows either
	 * side's queue, and nothing kept is dropped for want of room.
	 */
	FKV_CCMD_REPORT_ACK,
	/*
	 * master -> node: HANDLES (an array of u64, up to 4096 of them),
	 * FLAGS (FLUXONKV_DROP_F_EVICTED), SYNC_ID (the batch's number, from
	 * 1 on each join).  Evictions in bulk: the node hands its module one
	 * DROP_REPLICA per handle and answers DROPS {SYNC_ID} once all of
	 * them are applied.  The master keeps a few batches unanswered at
	 * most and queues one only while less than half of that node's
	 * control queue is taken: an eviction burst of any size neither
	 * overflows the queue (which would cost a healthy node its
	 * connection) nor crowds out heartbeats and answers.
	 */
	FKV_CCMD_DROPS,
	/*
	 * a client -> fluxond on the local control socket (no join): remove
	 * every key, or with PATTERN every key that POSIX extended regular
	 * expression finds a match in (Mooncake's remove_all /
	 * remove_by_regex).  Answer CLEAR with STATUS (0, -EINVAL a bad
	 * pattern, -EOPNOTSUPP not the master's daemon) and, on 0, COUNT
	 * (keys removed); MESSAGE says why on failure.
	 */
	FKV_CCMD_CLEAR,
	/*
	 * a client -> fluxond on the local control socket: the id of the
	 * tenant TENANT_NAME (config `tenants:`).  Answer TENANT with STATUS
	 * (0, -ENOENT no such tenant) and, on 0, TENANT_ID.  CLEAR with
	 * TENANT_ID clears that tenant's keys only (without it: tenant 0's,
	 * the keys without a tenant prefix); the asker (SO_PEERCRED) must be
	 * root or one of the tenant's uids / gids (-EPERM otherwise).
	 */
	FKV_CCMD_TENANT,
	__FKV_CCMD_MAX,
};

enum fkv_cluster_attr {
	FKV_CA_NONCE = 64,	/* binary, FKV_NONCE_LEN bytes */
	FKV_CA_MAC,		/* binary, FKV_MAC_LEN bytes */
	FKV_CA_NODE_NAME,	/* string, 1..FKV_NODE_NAME_MAX */
	FKV_CA_NODE_ID,		/* u32, > 0 */
	FKV_CA_DATA_ADDR,	/* string: host:port */
	FKV_CA_TRANSPORT,	/* string: tcp | rdma */
	FKV_CA_MESSAGE,		/* string: human reason of a refusal */
	FKV_CA_HEARTBEAT_MS,	/* u32 */
	FKV_CA_DEAD_AFTER_MS,	/* u32 */
	FKV_CA_ROLE,		/* string: single | master | node */
	FKV_CA_MASTER,		/* string: host:port */
	FKV_CA_LIVE,		/* u32: 0 / 1 */
	FKV_CA_NODE,		/* nested: one member (STATS) */
	FKV_CA_STAT,		/* nested: STAT_NAME + STAT_VALUE */
	FKV_CA_STAT_NAME,	/* string */
	FKV_CA_STAT_VALUE,	/* u64 */
	FKV_CA_LEFT_REASON,	/* string: why the member last left */
	FKV_CA_SYNC_ID,		/* u64: a DROP_REPLICA to acknowledge */
	FKV_CA_RDMA,		/* u32 flag: move this pull's bytes by RDMA */
	FKV_CA_TICKET,		/* binary, FKV_TICKET_LEN bytes */
	FKV_CA_ADDR,		/* u64: a memory window's address */
	FKV_CA_RKEY,		/* u32: its remote key */
	FKV_CA_LEASE_T,		/* u64: a node's CLOCK_MONOTONIC ns, echoed */
	FKV_CA_LEASE_MS,	/* u32: the lease the master grants from it */
	FKV_CA_PROTO,		/* u32: the handshake's version (auth.h) */
	FKV_CA_PATTERN,		/* string: a regular expression (CLEAR) */
	FKV_CA_COUNT,		/* u64: how many (CLEAR: keys removed) */
	/* binary, FKV_MAC_LEN bytes: the master's leave for one placement */
	FKV_CA_PLACE_TICKET,
	FKV_CA_CSUM,		/* u64: XXH3-64 of the bytes that follow */
	FKV_CA_CANDIDATE,	/* nested: NODE_NAME, MASTER (etcd candidate) */
	FKV_CA_TENANT_NAME,	/* string: a tenant's name (TENANT, STATS) */
	FKV_CA_TENANT_ID,	/* u32: 1..FLUXONKV_TENANT_ID_MAX (0: default) */
	FKV_CA_TENANT,		/* nested: TENANT_NAME, TENANT_ID, STATs
				 * (STATS: one per tenant) */
	__FKV_CA_MAX,
	FKV_CA_MAX = __FKV_CA_MAX - 1
};

#define FKV_NONCE_LEN		32
#define FKV_MAC_LEN		32
#define FKV_TICKET_LEN		16
#define FKV_NODE_NAME_MAX	64
/*
 * Members one master tracks (fluxond member.h FKV_MEMBERS_MAX): their ids
 * 1..1024 fit the 12 node bits of a handle (uapi FLUXONKV_NODE_MAX).
 */
#define FKV_MEMBERS_MAX_CTL	1024
#define FKV_ADDR_MAX		300
/* fluxond's control socket (fluxonctl cluster), unless --control says. */
#define FKV_CONTROL_PATH	"/run/fluxonkv/fluxond.sock"

#endif /* FKV_CLUSTER_MSG_H */
