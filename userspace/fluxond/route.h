/* SPDX-License-Identifier: GPL-2.0 */
/*
 * route.h - the master's route table and in-flight put table.
 *
 * A *key entry* (struct fkv_route) lives while its key has replicas or
 * in-flight puts.  Its put_id is the newest version ever published *or
 * deleted* under the key, so a late PUT_DONE of an older version can neither
 * overwrite a newer value nor resurrect a deleted one.  A key is visible
 * (GET/DELETE find it) only while it has at least one replica.
 *
 * Capacity accounting is for the local node's segment: used is the sum of the
 * weights of the memory replicas the table references, reserved the sum of
 * the in-flight puts' reservations; weight = round_up(len, SEGMENT_ALIGN).
 *
 * An owner's replica has two independent media: a DRAM copy (memory handle)
 * and an SSD copy committed to the owner's ring.  Evicting the memory copy
 * keeps the SSD one (and the route); the route goes when neither is left,
 * on delete, or when a newer version is published.
 *
 * A local memory replica published by a put that asked for PERSIST is
 * *persisting* until its SSD_COMMIT (success or failure) arrives, or until
 * the in-flight TTL passes after PUT_DONE (a module that never reports must
 * not pin DRAM forever): it counts in used, but the caller must not offer it
 * to the eviction policy yet (reference §3: the master keeps the target alive
 * while the persist runs).  ops->settled says when it becomes evictable.
 *
 * Pure logic: whenever the table gives up its reference on a memory replica
 * (overwrite, delete, eviction) it calls ops->drop; the caller turns that
 * into DROP_REPLICA.  Single threaded; nothing here locks.
 */
#ifndef FLUXOND_ROUTE_H
#define FLUXOND_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/fluxonkv.h>

#include "list.h"

/* Owner nodes a route can name; a single node uses one. */
#define FKV_ROUTE_MAX_REPLICAS	4
/* Node ids 0..FKV_ROUTE_NODES-1 (uapi FLUXONKV_NODE_MAX). */
#define FKV_ROUTE_NODES		(FLUXONKV_NODE_MAX + 1)
/* fkv_routes_clear_ssd_on(): every node's SSD copy. */
#define FKV_ROUTE_ANY_NODE	UINT32_MAX
/*
 * In-flight puts are forgotten this long after PUT_START; a persisting
 * replica becomes evictable this long after PUT_DONE without SSD_COMMIT.
 */
#define FKV_INFLIGHT_TTL_MS	60000ULL

static inline uint64_t fkv_weight(uint64_t len)
{
	return (len + FLUXONKV_SEGMENT_ALIGN - 1) &
	       ~(uint64_t)(FLUXONKV_SEGMENT_ALIGN - 1);
}

/**
 * struct fkv_replica - one owner node's copies of a route's version.
 * @node_link: on the table's list of @node's replicas (route.c), so that
 *	member-left and a node's restart cost that node's replicas, not a
 *	walk of every key.  Private to route.c.
 * @node: owner node id.
 * @tomb_tag: the owner's incarnation when the replica was published; a
 *	replica whose tag is not the node's live incarnation is dead.
 * @mem_handle: the owner module's handle of the DRAM replica, 0 = none.
 * @mem_len: value length of the DRAM replica.
 * @ssd: an SSD replica is committed (SSD_COMMIT was accepted).
 * @ssd_len: its length.
 * @persist: PUT_START asked the owner to persist this version to SSD, so an
 *	SSD_COMMIT may follow.
 * @persisting: the memory copy waits for that SSD_COMMIT and is not
 *	evictable yet (see the top of this file); only a local replica with a
 *	memory copy is ever persisting.
 * @slot: its index in the route's @replicas (route.c finds the route).
 */
struct fkv_replica {
	struct fkv_list node_link;
	uint64_t tomb_tag;
	uint64_t mem_handle;
	uint64_t mem_len;
	uint64_t ssd_len;
	uint32_t node;
	bool ssd;
	bool persist;
	bool persisting;
	uint8_t slot;
};

/**
 * struct fkv_route - a key entry.
 * @next: hash chain.
 * @hash: SipHash of the key under the table's secret.
 * @put_id: newest version published or deleted under this key.
 * @inflight: in-flight puts of this key.
 * @nreplicas: valid entries of @replicas; 0 = key not visible.
 * @key_len, @key: the key bytes.
 */
struct fkv_route {
	struct fkv_route *next;
	uint64_t hash;
	uint64_t put_id;
	uint32_t inflight;
	uint32_t nreplicas;
	struct fkv_replica replicas[FKV_ROUTE_MAX_REPLICAS];
	uint16_t key_len;
	uint8_t key[];
};

struct fkv_route_ops {
	/* The table dropped its reference on a memory replica. */
	void (*drop)(void *arg, uint64_t handle, uint64_t weight);
	/*
	 * Optional: the table forgot a memory replica of a dead owner
	 * instance (fkv_routes_forget_stale); no DROP_REPLICA is due, the
	 * handle died with that instance.
	 */
	void (*forget)(void *arg, uint64_t handle, uint64_t weight);
	/* Optional: an in-flight put passed its TTL and was forgotten. */
	void (*expired)(void *arg, const struct fkv_route *r, uint64_t put_id);
	/*
	 * Optional: the persisting replica @rep of @r stopped persisting
	 * and may now be evicted: its SSD_COMMIT came (success or failure)
	 * or, @expired, its persist TTL passed.  Not called for a
	 * persisting replica that is dropped or forgotten instead.
	 */
	void (*settled)(void *arg, const struct fkv_route *r,
			const struct fkv_replica *rep, bool expired);
	/*
	 * Optional: a newer version or a delete of @r retired @node's SSD
	 * copy of version @r->put_id (the caller's own module retires its
	 * copies itself when it learns of the put or delete, another node's
	 * module keeps them routed until told).
	 */
	void (*drop_ssd)(void *arg, uint32_t node, const struct fkv_route *r);
};

struct fkv_route_config {
	uint64_t capacity;		/* local segment bytes, > 0 */
	uint32_t node;			/* local node id */
	uint64_t ttl_ms;		/* 0 = FKV_INFLIGHT_TTL_MS */
	uint64_t (*now_ms)(void *arg);	/* NULL = CLOCK_MONOTONIC */
	void *clock_arg;
	const uint8_t *hash_secret;	/* 16 bytes; NULL = random */
	uint64_t first_put_id;		/* put_ids start above this */
	size_t tombs;			/* tombstones kept; 0 = FKV_ROUTE_TOMBS */
};

/* Tombstones of freed key entries kept by default (route.c). */
#define FKV_ROUTE_TOMBS		(1u << 18)

struct fkv_routes;
/* How many tombstones are kept; *@floor: the one aged-out ones left. */
size_t fkv_routes_tombs(const struct fkv_routes *t, uint64_t *floor);
/* Debug: recount the table against its counters; 0 or -rule (route.c). */
int fkv_routes_check(const struct fkv_routes *t);

struct fkv_routes;

/* NULL with errno set on failure. */
struct fkv_routes *fkv_routes_create(const struct fkv_route_config *cfg,
				     const struct fkv_route_ops *ops,
				     void *arg);
/* Frees everything; sends no drops. */
void fkv_routes_destroy(struct fkv_routes *t);

/* Valid key: 1..FLUXONKV_KEY_MAX bytes. */
static inline bool fkv_key_valid(const void *key, size_t key_len)
{
	return key && key_len >= 1 && key_len <= FLUXONKV_KEY_MAX;
}

uint64_t fkv_routes_key_hash(const struct fkv_routes *t, const void *key,
			     size_t key_len);

/*
 * Assign the next put_id (global, monotonic, from 1), record the in-flight
 * put with its SSD decision @persist and reserve weight(len).  -EINVAL (bad
 * key/len), -EFBIG (len larger than the segment), -ENOMEM.
 */
int fkv_routes_put_start(struct fkv_routes *t, const void *key,
			 size_t key_len, uint64_t len, bool persist,
			 uint64_t *put_id);

/*
 * The same with the replica placed on @node (the local node for
 * fkv_routes_put_start()): its reservation and, at PUT_DONE, its weight
 * count for @node.
 */
int fkv_routes_put_start_on(struct fkv_routes *t, uint32_t node,
			    const void *key, size_t key_len, uint64_t len,
			    bool persist, uint64_t *put_id);

/*
 * In-flight put @put_id of @key: the node it is placed on and the node
 * that started it.  0, -ENOENT (not in flight), -EINVAL (another key).
 */
int fkv_routes_inflight_of(const struct fkv_routes *t, const void *key,
			size_t key_len, uint64_t put_id, uint32_t *node,
			uint32_t *origin);
/*
 * Place in-flight put @put_id on @node instead (remote placement): its
 * reservation moves there, @persist is @node's SSD decision.  0, -ENOENT,
 * -EINVAL.
 */
int fkv_routes_put_move(struct fkv_routes *t, const void *key, size_t key_len,
			uint64_t put_id, uint32_t node, bool persist);
/*
 * Warm restart: @node's module still holds version @put_id of @key, in
 * DRAM under @handle (0: none) and/or committed to its SSD (@ssd), from
 * before this table existed or before @node rejoined.  It becomes a
 * replica of the route under @tomb_tag when it is the newest version the
 * table knows (older copies are dropped), or another copy of the current
 * one; refused (0) when a newer version or a delete won, or, for a
 * version <= @floor or <= the tombstone of its key (the newest put_id
 * its freed entry knew, or the floor aged-out tombstones left), unless
 * the route holds exactly that version (it may have been deleted or
 * overwritten since, and every newer replica gone).  Returns 1
 * (*@routep set), 0 (refused: drop the handle), -EINVAL, -ENOMEM.
 */
int fkv_routes_adopt_on(struct fkv_routes *t, uint32_t node, const void *key,
			size_t key_len, uint64_t put_id, uint64_t handle,
			uint64_t len, bool ssd, uint64_t tomb_tag,
			uint64_t floor, const struct fkv_route **routep);
/* Forget an in-flight put.  -ENOENT if unknown, -EINVAL if the key differs. */
int fkv_routes_put_abort(struct fkv_routes *t, const void *key,
			 size_t key_len, uint64_t put_id);

/*
 * Complete an in-flight put: its reservation is released; if no newer
 * version exists the route becomes {put_id, {local: tomb_tag, handle, len,
 * persist as decided at PUT_START}}, the previous version's memory replicas
 * are dropped and its SSD replicas forgotten.  A replica with persist is
 * also persisting (deadline now + TTL), unless that bookkeeping could not be
 * allocated: then it is published evictable, persisting = false.
 * Returns 1 (published; *routep = the route), 0 (superseded: the handle is
 * not kept), -ETIMEDOUT (put_id not in flight: expired or already done),
 * -EINVAL (bad arguments, key mismatch, never issued put_id), -EEXIST (the
 * handle is already referenced).
 */
int fkv_routes_put_done(struct fkv_routes *t, const void *key, size_t key_len,
			uint64_t put_id, uint64_t handle, uint64_t len,
			uint64_t tomb_tag, const struct fkv_route **routep);

/*
 * A put the owner @node published itself (PUT_LOCAL, uapi
 * FLUXONKV_REGISTER_F_LOCAL_PUTS): as fkv_routes_put_done() without an
 * in-flight put, the owner having drawn @put_id (the table's last put_id
 * follows it).  Returns 1 (published), 0 (superseded by a newer version or
 * delete: the handle is not kept), -EALREADY (that very replica is the
 * route already: adopted before its note came), -EINVAL, -ENOMEM, -EEXIST.
 */
int fkv_routes_publish_local(struct fkv_routes *t, uint32_t node,
			     const void *key, size_t key_len, uint64_t put_id,
			     uint64_t handle, uint64_t len, bool persist,
			     uint64_t tomb_tag, const struct fkv_route **routep);

/* The visible route of a key, or NULL. */
const struct fkv_route *fkv_routes_lookup(const struct fkv_routes *t,
					  const void *key, size_t key_len);
/* The route that references a memory handle, or NULL. */
const struct fkv_route *fkv_routes_by_handle(const struct fkv_routes *t,
					     uint64_t handle);
/* The local node's replica of a route, or NULL. */
const struct fkv_replica *fkv_routes_local(const struct fkv_routes *t,
					   const struct fkv_route *r);

/* @node's replica of a route, or NULL. */
const struct fkv_replica *fkv_routes_replica_of(const struct fkv_route *r,
						uint32_t node);

/*
 * Remove a visible route: every memory replica is dropped, every SSD replica
 * forgotten.  *put_id = the version deleted.  -ENOENT if the key is not
 * visible.
 */
int fkv_routes_delete(struct fkv_routes *t, const void *key, size_t key_len,
		      uint64_t *put_id);

/*
 * Give up the memory replica @handle (eviction): ops->drop is called; the
 * replica's SSD copy, if any, stays, and a route left without any replica
 * disappears.  -ENOENT if unknown.
 */
int fkv_routes_drop_handle(struct fkv_routes *t, uint64_t handle);

/*
 * SSD_COMMIT: the local owner committed version @put_id (@len bytes) of a
 * key to its SSD ring.  The local replica gets ssd = {len} only if the key
 * is visible, its put_id is @put_id, its tomb tag is @live_tag and it has a
 * copy of @len bytes: the memory replica, or an SSD copy of that version
 * already (the same version written twice -- a persist the previous master
 * started and the one it had done again after adopting the replica: the
 * owner's ring holds the later copy in place of the earlier).  Either way the persist
 * of that version is over: if the local replica of the current version
 * @put_id is persisting, it stops (ops->settled, after the SSD replica is
 * set).  Returns 1 (published), 0 (ignored: late, stale or deleted),
 * -EINVAL (bad arguments).
 */
int fkv_routes_ssd_commit(struct fkv_routes *t, const void *key,
			  size_t key_len, uint64_t put_id, uint64_t len,
			  uint64_t live_tag);

/*
 * The adopted memory replica @handle of @node's version @put_id is being
 * persisted again (PERSIST): it is persisting until that SSD_COMMIT, as a
 * put's replica is (deadline now + TTL).  1: persisting now; 0: not (no
 * such replica, persisting already, or no memory for the bookkeeping).
 */
int fkv_routes_persisting_begin(struct fkv_routes *t, uint32_t node,
				const void *key, size_t key_len,
				uint64_t put_id, uint64_t handle);

/* fkv_routes_ssd_commit() for the replica of @node. */
int fkv_routes_ssd_commit_on(struct fkv_routes *t, uint32_t node,
			     const void *key, size_t key_len, uint64_t put_id,
			     uint64_t len, uint64_t live_tag);

/*
 * SSD_COMMIT with ERRNO: the persist of version @put_id failed.  If the local
 * replica of the current version @put_id is persisting it stops
 * (ops->settled); no SSD replica.  Returns 1 (it was persisting), 0 (nothing
 * to do: late, stale, deleted, already settled), -EINVAL (bad arguments).
 */
int fkv_routes_persist_failed(struct fkv_routes *t, const void *key,
			      size_t key_len, uint64_t put_id);

int fkv_routes_persist_failed_on(struct fkv_routes *t, uint32_t node,
				 const void *key, size_t key_len,
				 uint64_t put_id);

/*
 * GET_DONE after an SSD refill: make @handle (@len bytes) the local memory
 * replica of version @put_id.  Only if the key is visible, its put_id is
 * @put_id, the local replica exists without a memory copy (so it has an SSD
 * copy), its tomb tag is @live_tag and its SSD length is @len.  Returns 1
 * (promoted; *routep = the route), 0 (refused: the handle is not kept),
 * -EEXIST (the handle is already referenced), -EINVAL (bad arguments),
 * -ENOMEM.
 */
int fkv_routes_promote(struct fkv_routes *t, const void *key, size_t key_len,
		       uint64_t put_id, uint64_t handle, uint64_t len,
		       uint64_t live_tag, const struct fkv_route **routep);

/*
 * GET_DONE on @node (cluster): make @handle (@len bytes) @node's memory
 * copy of version @put_id.  As fkv_routes_promote() for @node's own SSD
 * copy; and after a pull of another node's copy: @node has no memory copy
 * yet, another replica of the route holds @len bytes of that version, and
 * a free replica slot is left (a new slot gets tomb tag @live_tag).
 */
int fkv_routes_promote_on(struct fkv_routes *t, uint32_t node,
			  const void *key, size_t key_len, uint64_t put_id,
			  uint64_t handle, uint64_t len, uint64_t live_tag,
			  const struct fkv_route **routep);

/*
 * Forget the SSD replica of version @put_id of a key (SSD ring eviction, a
 * failed SSD read); a route left without any replica disappears.  -ENOENT if
 * the key is not visible, its put_id differs or it has no SSD replica.
 */
int fkv_routes_clear_ssd(struct fkv_routes *t, const void *key,
			 size_t key_len, uint64_t put_id);

/* The same for @node's SSD copy only (or FKV_ROUTE_ANY_NODE). */
int fkv_routes_clear_ssd_on(struct fkv_routes *t, uint32_t node,
			    const void *key, size_t key_len, uint64_t put_id);

/*
 * The owner restarted (new incarnation @live_tag): forget every replica
 * whose tomb tag is not @live_tag without DROP_REPLICA (ops->forget is
 * called for memory copies), and every in-flight put (the owner that
 * started them is gone).  Routes left empty disappear; put_ids keep
 * increasing.  Returns the replicas forgotten.
 */
size_t fkv_routes_forget_stale(struct fkv_routes *t, uint64_t live_tag);

/*
 * @node is gone or restarted: forget its replicas whose tomb tag is not
 * @live_tag (all of them for 0) without DROP_REPLICA, and its in-flight
 * puts.  Returns the replicas forgotten.
 */
size_t fkv_routes_forget_node(struct fkv_routes *t, uint32_t node,
			      uint64_t live_tag);
/*
 * The same, at most @max replicas (the in-flight puts all at once);
 * *@more: some are left.  Sliced with @live_tag 0 only (those kept are
 * walked again by every call).
 */
size_t fkv_routes_forget_node_some(struct fkv_routes *t, uint32_t node,
				   uint64_t live_tag, size_t max, bool *more);

/* Drop in-flight puts past their deadline; returns how many. */
unsigned int fkv_routes_sweep(struct fkv_routes *t);

/*
 * Persisting replicas past their deadline stop persisting (ops->settled
 * with expired = true); returns how many.
 */
unsigned int fkv_routes_sweep_persisting(struct fkv_routes *t);

/*
 * Milliseconds until the next in-flight put or persisting replica expires;
 * -1 if none.
 */
int64_t fkv_routes_next_expiry_ms(const struct fkv_routes *t);

uint64_t fkv_routes_now_ms(const struct fkv_routes *t);
/*
 * Call @fn(@arg, key, key_len) for every visible key (one with a
 * replica), in no particular order; a non-zero return stops the walk and
 * is returned.  @fn must not change the table (collect, then delete).
 */
typedef int (*fkv_routes_key_fn)(void *arg, const void *key, size_t key_len);
int fkv_routes_for_each(const struct fkv_routes *t, fkv_routes_key_fn fn,
			void *arg);
/* The same with the whole route (visible ones only). */
typedef int (*fkv_routes_route_fn)(void *arg, const struct fkv_route *r);
int fkv_routes_for_each_route(const struct fkv_routes *t,
			      fkv_routes_route_fn fn, void *arg);
uint64_t fkv_routes_capacity(const struct fkv_routes *t);
uint64_t fkv_routes_used(const struct fkv_routes *t);
uint64_t fkv_routes_reserved(const struct fkv_routes *t);
/* The same for any node (fkv_routes_used() is the local node's). */
uint64_t fkv_routes_node_used(const struct fkv_routes *t, uint32_t node);
uint64_t fkv_routes_node_reserved(const struct fkv_routes *t, uint32_t node);
/*
 * One tenant's replicas (issue 30: the tenant of a key, common/tenant.h),
 * kept as the table's totals are: DRAM replicas on every node and their
 * weights, SSD copies and their lengths.  @tenant: whose.
 */
struct fkv_route_tenant {
	uint32_t tenant;
	uint64_t dram_bytes, ssd_bytes;
	size_t dram_replicas, ssd_replicas;
	size_t keys;			/* visible routes */
};
void fkv_routes_tenant(const struct fkv_routes *t, uint32_t tenant,
		       struct fkv_route_tenant *out);
/*
 * Each tenant with a visible route, its totals to @fn (in no order);
 * stops at @fn's first nonzero return, which it returns.
 */
int fkv_routes_for_each_tenant(const struct fkv_routes *t,
			       int (*fn)(void *arg,
					 const struct fkv_route_tenant *a),
			       void *arg);
/* The tenant of @r's key. */
uint32_t fkv_route_tenant_of(const struct fkv_route *r);
/* Visible routes. */
size_t fkv_routes_count(const struct fkv_routes *t);
/* Memory replicas referenced (= handles the table holds). */
size_t fkv_routes_mem_count(const struct fkv_routes *t);
/* Committed SSD replicas and the sum of their lengths. */
size_t fkv_routes_ssd_count(const struct fkv_routes *t);
uint64_t fkv_routes_ssd_bytes(const struct fkv_routes *t);
size_t fkv_routes_inflight(const struct fkv_routes *t);
/* Persisting replicas (see above) and the sum of their weights. */
size_t fkv_routes_persisting_count(const struct fkv_routes *t);
uint64_t fkv_routes_persisting_bytes(const struct fkv_routes *t);
/* put_ids handed out from now on are above @put_id (no-op if they are). */
void fkv_routes_note_put_id(struct fkv_routes *t, uint64_t put_id);
/* Newest put_id handed out (0 = none yet). */
uint64_t fkv_routes_last_put_id(const struct fkv_routes *t);

#endif /* FLUXOND_ROUTE_H */
