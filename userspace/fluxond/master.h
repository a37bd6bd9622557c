/* SPDX-License-Identifier: GPL-2.0 */
/*
 * master.h - the master role of fluxond for one node: upcall semantics over
 * the route table (route.h) and the eviction policy (evict.h).
 *
 * Each fkv_master_* call implements one upcall of the "fluxonkv" generic
 * netlink family and returns its STATUS (0 or -errno) plus reply values.
 * Commands to the module (DROP_REPLICA) go out through ops *before* the call
 * returns, so they precede the reply.  No netlink here: the unit tests drive
 * this directly.
 */
#ifndef FLUXOND_MASTER_H
#define FLUXOND_MASTER_H

#include <stddef.h>
#include <stdint.h>

#include "evict.h"
#include "fluxonkv_config.h"
#include "route.h"

/* A node's data plane address, as text ("host:port"). */
#define FKV_MASTER_ADDR_MAX		300

#define FKV_HIGH_WATERMARK_DEFAULT	FKV_HIGH_WATERMARK_PCT
#define FKV_LOW_WATERMARK_DEFAULT	FKV_LOW_WATERMARK_PCT

struct fkv_master_ops {
	/*
	 * Send DROP_REPLICA {HANDLE, FLAGS}: the route reference is given
	 * up; @flags is FLUXONKV_DROP_F_EVICTED for an eviction, 0 for an
	 * overwrite or a delete.
	 */
	void (*send_drop)(void *arg, uint64_t handle, uint32_t flags);
	/*
	 * Optional: an eviction's DROP_REPLICA of @handle, a replica of the
	 * key whose route hash is @key_hash (fkv_routes_key_hash), instead
	 * of send_drop(EVICTED): a cluster batches them (clusterd.c) and
	 * must know which key a drop still on its way concerns.
	 */
	void (*send_evicted)(void *arg, uint64_t handle, uint64_t key_hash);
	/*
	 * Optional (a cluster): replica @handle of @put_id, placed on its
	 * node by another node's put, is published; that node enters it in
	 * its index and, with FLUXONKV_PUBLISH_F_PERSIST in @flags, writes
	 * it to its SSD.  Sent in order with later drops of the handle.
	 */
	void (*placed)(void *arg, uint64_t handle, uint64_t put_id,
		       uint32_t flags);
	/*
	 * Optional: send PERSIST {HANDLE, PUT_ID} to the caller's module --
	 * an adopted replica whose persist never committed (the previous
	 * master died first) is written to the SSD tier now.
	 */
	void (*persist)(void *arg, uint64_t handle, uint64_t put_id);
	/*
	 * Optional: send @node DROP_REPLICA {SOURCE = SSD, KEY, PUT_ID}: its
	 * SSD copies of the key up to @put_id are no longer routed (a newer
	 * version or a delete).  Its module unroutes them, so they are
	 * neither served nor reported to a later master.  In order with the
	 * answer to the put or delete that caused it, as send_drop is.
	 */
	void (*send_ssd_drop)(void *arg, uint32_t node, const void *key,
			      size_t key_len, uint64_t put_id);
};

/**
 * struct fkv_master_config - how to build a master.
 * @capacity: segment bytes (DAEMON_REGISTER's SEGMENT_SIZE).
 * @incarnation: the module's INCARNATION; tomb tag of the replicas.
 * @ssd_capacity: the owner's SSD ring bytes (DAEMON_REGISTER's SSD_CAPACITY;
 *	0 = no SSD tier).
 * @policy: eviction policy name; NULL = "s3fifo".
 * @high_pct, @low_pct: watermarks in % of @capacity; 0 = 90 / 80.  Need
 *	1 <= low <= high <= 100.
 * @ttl_ms, @now_ms, @clock_arg, @hash_secret, @first_put_id: see struct
 *	fkv_route_config.
 * @node: this daemon's own node id (0 on a single node; the cluster id
 *	the module stamps into its handles otherwise).
 */
struct fkv_master_config {
	uint32_t node;
	uint64_t capacity;
	uint64_t incarnation;
	uint64_t ssd_capacity;
	const char *policy;
	unsigned int high_pct;
	unsigned int low_pct;
	uint64_t ttl_ms;
	uint64_t (*now_ms)(void *arg);
	void *clock_arg;
	const uint8_t *hash_secret;
	uint64_t first_put_id;
	/*
	 * A cluster master's term (term.h), 0 on a single node: put_ids are
	 * FKV_PUT_ID(term, 1..), above every put_id of an earlier term
	 * (@first_put_id is then ignored), and a put_id a node reports above
	 * this numbering was never issued by this master or one before it:
	 * it moves nothing (REPORT refused and dropped, SSD_STATE ignored).
	 */
	uint64_t term;
	size_t tombs;		/* route tombstones kept; 0 = FKV_ROUTE_TOMBS */
	/*
	 * The module numbers puts itself (REGISTER_F_LOCAL_PUTS): a PUT, from
	 * a put that raced the registration of this daemon after one that
	 * took one-trip puts, is refused (-EPROTO): the module and this
	 * master would draw put_ids from two counters.
	 */
	bool local_puts;
	/*
	 * The tenants (issue 30); their quotas are enforced: @dram_bytes
	 * past which a tenant's own DRAM replicas are evicted, @ssd_bytes
	 * past which its oldest SSD copies are unrouted.  Copied.
	 */
	const struct fkv_tenant_config *tenants;
	size_t ntenants;
};

/*
 * Counters and gauges.  SSD: persist_puts = PUT_STARTs answered PERSIST;
 * ssd_commits_published / _ignored = SSD_COMMITs that did / did not set a
 * route's SSD replica; ssd_gets = GET_STARTs answered SOURCE=SSD;
 * promotions / promotions_refused = GET_DONEs after an SSD refill that did /
 * did not become the memory replica; ssd_revoked = SSD replicas cleared by
 * GET_REVOKE (revokes counts them all); ssd_evicted / ssd_evicted_stale =
 * SSD_EVICTED entries that cleared a replica / named another version;
 * ssd_dropped = SSD copies of other nodes (or of any node, by a clear) a
 * newer version or a delete retired (their owner told: send_ssd_drop).
 * persisting / persisting_bytes (gauges) = published replicas waiting for
 * their SSD_COMMIT, not evictable yet; persist_failures = SSD_COMMITs with
 * ERRNO; persist_expired = persisting replicas made evictable by the TTL.
 */
struct fkv_master_stats {
	uint64_t capacity, used, reserved, high_bytes, low_bytes;
	size_t routes, inflight, policy_objects, mem_replicas;
	uint64_t policy_bytes;
	uint64_t puts, published, superseded, aborted, expired;
	uint64_t puts_one_trip;		/* PUTs (in puts too) */
	uint64_t gets, get_misses, lookups, deletes, accesses;
	uint64_t evictions, evicted_bytes, drops;
	/* DROPPED: clean replicas modules dropped themselves; of those,
	 * handles no route named any more */
	uint64_t clean_dropped, clean_dropped_gone;
	uint64_t need_room, need_room_enospc, need_room_by_address;
	uint64_t need_room_pending;	/* asked again while it was evicting */
	uint64_t ssd_capacity, ssd_bytes;
	size_t ssd_replicas;
	uint64_t persist_puts, ssd_commits_published, ssd_commits_ignored;
	uint64_t ssd_gets, promotions, promotions_refused;
	uint64_t revokes, ssd_revoked, ssd_evicted, ssd_evicted_stale;
	uint64_t ssd_dropped;
	uint64_t lost_replicas;	/* the module reported a handle gone */
	size_t persisting;
	uint64_t persisting_bytes, persist_failures, persist_expired;
	uint64_t owner_restarts, forgotten;
	/* cluster: GET_STARTs answered with another node's DRAM copy,
	 * such copies revoked by a failed pull, nodes that left */
	uint64_t remote_gets, remote_ssd_gets, remote_revoked, nodes_left;
	/* get_holding: victims skipped because a node pulls them, holds
	 * that ended by their deadline */
	uint64_t held_skips, holds_expired;
	/* puts moved to another node (PUT_PLACE), refused for want of one */
	uint64_t placed, place_refused;
	/* warm restart: kept replicas adopted / refused (dropped) */
	uint64_t adopted, adopt_refused, repersisted;
	uint64_t adopt_fenced;	/* of those refused: below the node's fence */
	/* put_ids nodes reported above a cluster master's numbering */
	uint64_t put_ids_refused;
	/* GET_REVOKEs naming a replica the caller neither has nor pulled */
	uint64_t revokes_refused;
	/* route tombstones kept, and the floor aged-out ones left */
	uint64_t tombs, tomb_floor;
	size_t holds;
};

/* One node as the master sees it (fkv_master_node_info). */
struct fkv_master_node_info {
	bool live;
	uint64_t incarnation;
	uint64_t capacity, used, reserved;
	uint64_t ssd_capacity;
	size_t replicas;	/* DRAM replicas its policy tracks */
	uint64_t remote_gets;	/* gets it served to other nodes */
	char addr[FKV_MASTER_ADDR_MAX];
};

/* What GET_START answers for a hit. */
struct fkv_get_result {
	uint32_t source;	/* enum fluxonkv_source */
	uint64_t handle;	/* MEMORY: ours; REMOTE: the source node's */
	uint64_t put_id;
	uint64_t len;
	uint32_t node;		/* REMOTE: the source node */
	const char *addr;	/* REMOTE: its data plane address */
};

struct fkv_master;

/* NULL with errno set (EINVAL for a bad configuration). */
struct fkv_master *fkv_master_create(const struct fkv_master_config *cfg,
				     const struct fkv_master_ops *ops,
				     void *arg);
void fkv_master_destroy(struct fkv_master *m);
/*
 * A departed node's replicas forgotten in one turn of the event loop at
 * most (~0.6-1 us each: no node's requests wait 100 ms behind it at 10^7
 * keys, issue 28); fkv_master_work() forgets the rest, a slice a turn.
 */
#define FKV_FORGET_SLICE	16384

/*
 * One slice of the long jobs (a departed node's replicas forgotten, a
 * watermark pass past FKV_EVICT_SLICE victims); true while work is left:
 * the event loop calls it again without sleeping.
 */
bool fkv_master_work(struct fkv_master *m);

/* Check watermark percentages as fkv_master_create() would; 0 or -EINVAL. */
int fkv_master_check_watermarks(unsigned int high_pct, unsigned int low_pct);
/*
 * New watermarks for every node (SIGHUP); nodes above the new high one are
 * evicted down to the new low one now.  -EINVAL (nothing changed) or 0.
 */
int fkv_master_set_watermarks(struct fkv_master *m, unsigned int high_pct,
			      unsigned int low_pct);

/*
 * Cluster membership.  fkv_master_node_up(): node @node is live under
 * @incarnation with a segment of @capacity bytes, @ssd_capacity of SSD and
 * its data plane at @addr (NULL or "" for the master's own node, which
 * never serves a pull to itself); a new incarnation of a known node
 * forgets the old one's replicas.  0 or -errno.  fkv_master_node_down():
 * the node left (LEAVE, connection closed, missed heartbeats): its
 * replicas and the puts placed on it are forgotten, it is never chosen
 * again under that incarnation.
 */
int fkv_master_node_up(struct fkv_master *m, uint32_t node,
		       uint64_t incarnation, uint64_t capacity,
		       uint64_t ssd_capacity, const char *addr);
void fkv_master_node_down(struct fkv_master *m, uint32_t node);
/*
 * The replicas of @node's departed instance are still being forgotten
 * (fkv_master_work()): a new instance admitted now would make
 * fkv_master_node_up() forget the rest in one call, so the control plane
 * makes it wait (its JOIN is refused with EAGAIN and retried).
 */
bool fkv_master_node_forgetting(const struct fkv_master *m, uint32_t node);
/*
 * The node whose upcall the next fkv_master_* calls answer (its replicas
 * are "local", its DRAM is the one evicted, its incarnation the tomb tag).
 * Unknown nodes fall back to the master's own.
 */
void fkv_master_set_caller(struct fkv_master *m, uint32_t node);
/* @node has state here (it joined at least once): its upcalls are served. */
bool fkv_master_node_known(const struct fkv_master *m, uint32_t node);
int fkv_master_node_info(const struct fkv_master *m, uint32_t node,
			 struct fkv_master_node_info *info);

/*
 * SSD_STATE {SSD_CAPACITY} (notify): the owner's SSD ring size changed.
 * Only later PUT_STARTs see it; committed SSD replicas stay.
 */
void fkv_master_set_ssd_capacity(struct fkv_master *m, uint64_t bytes);
/*
 * A node's module has seen put_ids up to @put_id (it registered after a
 * master restart): new put_ids continue above it.
 */
void fkv_master_note_put_id(struct fkv_master *m, uint64_t put_id);
/* The cluster master's term (term.h); 0 on a single node. */
uint64_t fkv_master_term(const struct fkv_master *m);

/*
 * The owner registered with a new INCARNATION (it restarted): every replica
 * of the old instance is dead.  They are forgotten without DROP_REPLICA, as
 * are in-flight puts; put_ids keep increasing.  The SSD capacity is set
 * either way; with the same incarnation nothing else happens.
 */
void fkv_master_owner_restart(struct fkv_master *m, uint64_t incarnation,
			      uint64_t ssd_capacity);

/*
 * PUT_START {KEY, LEN} -> PUT_ID, FLAGS: FLUXONKV_PUT_F_PERSIST iff the
 * owner has an SSD ring of at least LEN bytes (decided here, once).
 */
int fkv_master_put_start(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t len, uint64_t *put_id,
			 uint32_t *flags);
/*
 * PUT_DONE {KEY, PUT_ID, HANDLE, LEN} -> FLAGS (PUBLISHED or 0).  A replica
 * published by a put answered PERSIST is *persisting*: it counts in used but
 * stays out of the eviction policy (neither watermarks nor NEED_ROOM take
 * it) until its SSD_COMMIT, success or failure, or until the in-flight TTL
 * passes after PUT_DONE (fkv_master_tick, with a warning).
 */
int fkv_master_put_done(struct fkv_master *m, const void *key,
			size_t key_len, uint64_t put_id, uint64_t handle,
			uint64_t len, uint32_t *flags);
/*
 * PUT: the caller's module has the value in its replica @handle already
 * (uapi FLUXONKV_REGISTER_F_ONE_TRIP): number the put (*@put_id), decide
 * its SSD copy and publish it, as PUT_START and PUT_DONE would in one go.
 * *@flags: FLUXONKV_PUT_F_PUBLISHED | FLUXONKV_PUT_F_PERSIST.  0 or -errno
 * (nothing is reserved or routed then).
 */
int fkv_master_put(struct fkv_master *m, const void *key, size_t key_len,
		   uint64_t handle, uint64_t len, uint64_t *put_id,
		   uint32_t *flags);
/*
 * PUT_LOCAL: the caller's module published put @put_id itself (uapi
 * FLUXONKV_REGISTER_F_LOCAL_PUTS; @flags FLUXONKV_PUT_F_PERSIST if its SSD
 * write started).  The route takes it unless a newer version won (then
 * the handle is dropped); a replica already adopted is left as it is.
 * @dropped: the replica it replaced, which the module dropped itself: no
 * DROP_REPLICA is sent for it (0: none).
 * Single node only (-EINVAL in a cluster).  0 or -errno.
 */
int fkv_master_put_local(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t put_id, uint64_t handle,
			 uint64_t len, uint32_t flags, uint64_t dropped);
/*
 * Warm restart: the caller's module kept a replica from a previous
 * daemon (FLUXONKV_CMD_DUMP record): @handle (0: none) in DRAM, @ssd a
 * routed SSD copy.  Adopted as its route's replica when nothing newer (nor
 * a delete) came since (fkv_routes_adopt_on); otherwise the handle is
 * dropped (DROP_REPLICA).  1 adopted, 0 refused, -errno.
 */
int fkv_master_adopt(struct fkv_master *m, const void *key, size_t key_len,
		     uint64_t put_id, uint64_t handle, uint64_t len, bool ssd);
/*
 * Node @node's kept replicas at or below @floor are refused (dropped)
 * from now on: its fence from an earlier master term (term.h); 0 lifts it.
 */
void fkv_master_node_fence(struct fkv_master *m, uint32_t node,
			   uint64_t floor);
/* The highest put_id this master numbered (or noted). */
uint64_t fkv_master_last_put_id(const struct fkv_master *m);
/*
 * After a warm restart's adoption: the caller's adopted DRAM replica
 * @handle of @key at @put_id has no SSD copy on any node although the
 * caller's tier could take it (its persist never committed, or it is a
 * pulled copy of a value that never had one): ask for it (ops->persist).
 * Returns 1 if asked, 0 if not needed.
 */
int fkv_master_repersist(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t put_id, uint64_t handle);

/*
 * The DRAM replicas of one node adopted so far, to check once every
 * record of that node is in (its SSD copy may come after its DRAM record):
 * fkv_adopted_add() after fkv_master_adopt() took one (-ENOMEM: it only
 * misses a second persist), fkv_master_repersist_adopted() at the end
 * (fkv_master_repersist() for each, for the caller's node; returns how
 * many were asked; empties the list), fkv_adopted_free() when the node
 * leaves first.
 */
struct fkv_adopted;
int fkv_adopted_add(struct fkv_adopted **list, const void *key,
		    size_t key_len, uint64_t put_id, uint64_t handle);
unsigned long fkv_master_repersist_adopted(struct fkv_master *m,
					   struct fkv_adopted **list);
void fkv_adopted_free(struct fkv_adopted **list);

/*
 * PUT_PLACE {KEY, PUT_ID, LEN}: the caller has no room for its in-flight
 * put (NEED_ROOM found nothing to evict there).  Move it to another live
 * node (SSD-capable first when any node has an SSD, then the most room):
 * its reservation counts there and its SSD decision is that node's.  0
 * with the node, its data address and FLAGS (PERSIST: that node writes
 * it to SSD once published); -ENOSPC: no other node; -ENOENT / -EINVAL:
 * not the caller's in-flight put.  The caller's PUT_DONE then names the
 * target's handle.
 */
int fkv_master_put_place(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t put_id, uint64_t len,
			 uint32_t *node, const char **addr, uint32_t *flags);
/*
 * PUT_ABORT {KEY, PUT_ID, HANDLE, ERRNO}: notify.  HANDLE: a replica the
 * module may have had published (forgotten); for a placed put, the
 * target's replica (dropped there).
 */
void fkv_master_put_abort(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, uint64_t handle,
			  int error);
/*
 * SSD_COMMIT {KEY, PUT_ID, LEN} -> FLAGS: FLUXONKV_SSD_F_PUBLISHED if the
 * route took the SSD replica (current version, memory replica present, tomb
 * tag live), 0 if the commit is late or stale.  STATUS is 0 either way
 * (-EINVAL only for malformed arguments).  A persisting replica of that
 * version becomes evictable.
 */
int fkv_master_ssd_commit(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, uint64_t len,
			  uint32_t *flags);
/*
 * SSD_COMMIT {KEY, PUT_ID, ERRNO} -> FLAGS 0: the persist of that version
 * failed (@error < 0: IO error, no ring room, no shard).  A persisting
 * replica of it becomes evictable, without an SSD replica.  STATUS 0
 * (-EINVAL only for malformed arguments).
 */
int fkv_master_ssd_commit_failed(struct fkv_master *m, const void *key,
				 size_t key_len, uint64_t put_id, int error,
				 uint32_t *flags);
/*
 * SSD_EVICTED, one ENTRY {KEY, PUT_ID} (notify): the owner's ring overwrote
 * that committed entry; the route's SSD replica goes if it is that version.
 */
void fkv_master_ssd_evicted(struct fkv_master *m, const void *key,
			    size_t key_len, uint64_t put_id);
/*
 * GET_START {KEY} -> SOURCE=MEMORY + HANDLE + PUT_ID + LEN, else
 * SOURCE=SSD + PUT_ID + LEN, else -ENOENT.
 */
int fkv_master_get_start(struct fkv_master *m, const void *key,
			 size_t key_len, struct fkv_get_result *res);
/*
 * LOOKUP {KEY} -> SOURCE + PUT_ID + LEN as GET_START would choose, or
 * -ENOENT; holds no source, touches no eviction order, counts no get.
 */
int fkv_master_lookup(struct fkv_master *m, const void *key, size_t key_len,
		      struct fkv_get_result *res);
/*
 * GET_DONE {KEY, PUT_ID, HANDLE, LEN, SOURCE} -> FLAGS: after an SSD refill,
 * FLUXONKV_GET_F_PROMOTED if HANDLE became the memory replica (current
 * version, no memory replica, tomb tag live), evicting others by watermark
 * but never it; 0 otherwise (the module drops it).
 */
int fkv_master_get_done(struct fkv_master *m, const void *key,
			size_t key_len, uint64_t put_id, uint64_t handle,
			uint64_t len, uint32_t source, uint32_t *flags);
/*
 * GET_REVOKE {KEY, PUT_ID, SOURCE, ERRNO} -> STATUS only (0): a failed SSD
 * source of the current version is forgotten.  In a cluster: SOURCE=REMOTE
 * with HANDLE the source node's replica, forgotten when the source said
 * it has none (ENOENT/ESTALE); SOURCE=REMOTE_SSD with HANDLE the owner
 * node's id, whose SSD copy is forgotten on ENOENT/ESTALE/EIO/ENODEV/
 * EINVAL.  Network errors forget nothing (membership handles dead nodes).
 */
int fkv_master_get_revoke(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, uint32_t source,
			  uint64_t handle, int error);
/* fkv_routes_for_each() over this master's routes. */
int fkv_master_for_each_key(const struct fkv_master *m, fkv_routes_key_fn fn,
			    void *arg);
/*
 * Per tenant (issue 30), the tenant parsed from each key's prefix
 * (common/tenant.h; tenant 0: keys without one).  Counters as the
 * master's totals count them (only what reaches the master: gets the
 * module answers from its own index are not seen): puts, gets and their
 * outcome by tier -- mem_hits (this node's DRAM), ssd_hits (this node's
 * SSD), remote_hits (another node's DRAM or SSD), misses.  Gauges from
 * the route table when asked: keys (visible routes), dram_bytes (the
 * weights of their DRAM replicas on every node, as eviction counts them),
 * ssd_bytes (the lengths of their SSD replicas).
 */
struct fkv_tenant_stats {
	uint32_t tenant;
	uint64_t puts, gets, mem_hits, ssd_hits, remote_hits, misses;
	uint64_t keys, dram_bytes, ssd_bytes;
	/*
	 * Quotas (counters): DRAM replicas evicted because the tenant was
	 * past its dram_bytes, SSD copies unrouted because it was past its
	 * ssd_bytes.
	 */
	uint64_t quota_evictions, quota_ssd_drops;
};
/* Distinct tenants counted at most (more: not counted, and logged). */
#define FKV_MASTER_TENANTS	1024
/*
 * Every tenant with a counter or a key, tenant 0 always, sorted by id,
 * into a malloc()ed *@out of *@n entries.  0 or -ENOMEM.
 */
int fkv_master_tenant_stats(const struct fkv_master *m,
			    struct fkv_tenant_stats **out, size_t *n);

/*
 * Delete every key of tenant @tenant (@pattern NULL) or every one of them
 * a POSIX extended regular expression @pattern finds a match in (regexec:
 * anywhere in the key without its tenant prefix, as Mooncake's
 * regex_search; keys with a NUL byte never match), as fkv_master_delete()
 * each: their replicas are dropped.  Tenant T's keys are those with T's
 * prefix (common/tenant.h); tenant 0's those without any.  *@removed: how
 * many.  0, -EINVAL for a pattern regcomp() refuses, -ENOMEM
 * (master_clear.c).
 */
int fkv_master_remove_matching(struct fkv_master *m, uint32_t tenant,
			       const char *pattern, uint64_t *removed);
/* DELETE {KEY} -> PUT_ID (the version deleted) or -ENOENT. */
int fkv_master_delete(struct fkv_master *m, const void *key, size_t key_len,
		      uint64_t *put_id);
/*
 * The same for a CLEAR, which no module asked for: the caller's own SSD
 * copies are retired by message too (send_ssd_drop), not only others'.
 */
int fkv_master_clear_key(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t *put_id);
/*
 * NEED_ROOM {BYTES, SEGMENT_USED}: evict what BYTES more would take the
 * segment past the low watermark (BYTES when SEGMENT_USED is 0; one
 * replica at least).  0 if anything was evicted, -ENOSPC.
 */
int fkv_master_need_room(struct fkv_master *m, uint64_t bytes,
			 uint64_t segment_used);
/*
 * NEED_ROOM {BYTES, HANDLES}: the caller's segment is fragmented and these
 * @n replicas (an array of u64, unaligned) fill the window it needs: evict
 * exactly them.  0 if all went, -ENOSPC if one could not (held by a pull,
 * persisting, unknown): the module looks again.
 */
int fkv_master_need_room_of(struct fkv_master *m, const void *handles,
			    size_t n);
/*
 * DROPPED {HANDLES}: one clean replica the caller's module dropped itself
 * (FLUXONKV_REGISTER_F_CLEAN_DROPS); its SSD copy stays routed.
 */
void fkv_master_dropped(struct fkv_master *m, uint64_t handle);

/* ACCESS {HANDLES}: one handle hit through the kernel's fast path. */
void fkv_master_access(struct fkv_master *m, uint64_t handle);

/*
 * Periodic work (in-flight put TTL sweep, persisting replica TTL); call
 * about once a second.
 */
void fkv_master_tick(struct fkv_master *m);

void fkv_master_get_stats(const struct fkv_master *m,
			  struct fkv_master_stats *st);
/* For inspection and tests. */
const struct fkv_routes *fkv_master_routes(const struct fkv_master *m);
const struct fkv_evict *fkv_master_policy(const struct fkv_master *m);

#endif /* FLUXOND_MASTER_H */
