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
#include "route.h"

#define FKV_HIGH_WATERMARK_DEFAULT	90
#define FKV_LOW_WATERMARK_DEFAULT	80

struct fkv_master_ops {
	/*
	 * Send DROP_REPLICA {HANDLE, FLAGS}: the route reference is given
	 * up; @flags is FLUXONKV_DROP_F_EVICTED for an eviction, 0 for an
	 * overwrite or a delete.
	 */
	void (*send_drop)(void *arg, uint64_t handle, uint32_t flags);
};

/**
 * struct fkv_master_config - how to build a master.
 * @capacity: segment bytes (DAEMON_REGISTER's SEGMENT_SIZE).
 * @incarnation: the module's INCARNATION; tomb tag of the replicas.
 * @policy: eviction policy name; NULL = "s3fifo".
 * @high_pct, @low_pct: watermarks in % of @capacity; 0 = 90 / 80.  Need
 *	1 <= low <= high <= 100.
 * @ttl_ms, @now_ms, @clock_arg, @hash_secret, @first_put_id: see struct
 *	fkv_route_config.
 */
struct fkv_master_config {
	uint64_t capacity;
	uint64_t incarnation;
	const char *policy;
	unsigned int high_pct;
	unsigned int low_pct;
	uint64_t ttl_ms;
	uint64_t (*now_ms)(void *arg);
	void *clock_arg;
	const uint8_t *hash_secret;
	uint64_t first_put_id;
};

struct fkv_master_stats {
	uint64_t capacity, used, reserved, high_bytes, low_bytes;
	size_t routes, inflight, policy_objects;
	uint64_t policy_bytes;
	uint64_t puts, published, superseded, aborted, expired;
	uint64_t gets, get_misses, deletes, accesses;
	uint64_t evictions, evicted_bytes, drops;
	uint64_t need_room, need_room_enospc;
};

/* What GET_START answers for a hit. */
struct fkv_get_result {
	uint32_t source;	/* enum fluxonkv_source */
	uint64_t handle;
	uint64_t put_id;
	uint64_t len;
};

struct fkv_master;

/* NULL with errno set (EINVAL for a bad configuration). */
struct fkv_master *fkv_master_create(const struct fkv_master_config *cfg,
				     const struct fkv_master_ops *ops,
				     void *arg);
void fkv_master_destroy(struct fkv_master *m);

/* Check watermark percentages as fkv_master_create() would; 0 or -EINVAL. */
int fkv_master_check_watermarks(unsigned int high_pct, unsigned int low_pct);

/* PUT_START {KEY, LEN} -> PUT_ID, FLAGS. */
int fkv_master_put_start(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t len, uint64_t *put_id,
			 uint32_t *flags);
/* PUT_DONE {KEY, PUT_ID, HANDLE, LEN} -> FLAGS (PUBLISHED or 0). */
int fkv_master_put_done(struct fkv_master *m, const void *key,
			size_t key_len, uint64_t put_id, uint64_t handle,
			uint64_t len, uint32_t *flags);
/* PUT_ABORT {KEY, PUT_ID, ERRNO}: notify. */
void fkv_master_put_abort(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, int error);
/* GET_START {KEY} -> SOURCE (+ HANDLE, PUT_ID, LEN) or -ENOENT. */
int fkv_master_get_start(struct fkv_master *m, const void *key,
			 size_t key_len, struct fkv_get_result *res);
/* GET_DONE {KEY, PUT_ID, HANDLE, LEN, SOURCE} -> FLAGS. */
int fkv_master_get_done(struct fkv_master *m, const void *key,
			size_t key_len, uint64_t put_id, uint32_t source,
			uint32_t *flags);
/* GET_REVOKE {KEY, PUT_ID, SOURCE, ERRNO} -> STATUS only. */
int fkv_master_get_revoke(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, uint32_t source,
			  int error);
/* DELETE {KEY} -> PUT_ID (the version deleted) or -ENOENT. */
int fkv_master_delete(struct fkv_master *m, const void *key, size_t key_len,
		      uint64_t *put_id);
/* NEED_ROOM {BYTES, SEGMENT_USED}: 0 if anything was evicted, -ENOSPC. */
int fkv_master_need_room(struct fkv_master *m, uint64_t bytes,
			 uint64_t segment_used);
/* ACCESS {HANDLES}: one handle hit through the kernel's fast path. */
void fkv_master_access(struct fkv_master *m, uint64_t handle);

/* Periodic work (in-flight TTL sweep); call about once a second. */
void fkv_master_tick(struct fkv_master *m);

void fkv_master_get_stats(const struct fkv_master *m,
			  struct fkv_master_stats *st);
/* For inspection and tests. */
const struct fkv_routes *fkv_master_routes(const struct fkv_master *m);
const struct fkv_evict *fkv_master_policy(const struct fkv_master *m);

#endif /* FLUXOND_MASTER_H */
