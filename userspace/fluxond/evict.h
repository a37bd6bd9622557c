/* SPDX-License-Identifier: GPL-2.0 */
/*
 * evict.h - replacement policy of the master's DRAM replicas.
 *
 * A policy tracks resident objects by replica handle with a weight in bytes
 * and picks victims one at a time; the caller evicts "until X bytes are
 * freed" with fkv_evict_bytes().  insert() also takes a hash of the key so
 * that a policy with history (S3-FIFO's ghost queue) can recognise a key
 * that comes back under a new handle.
 *
 * An object may belong to a *group* (a tenant, issue 30; 0 = none): the
 * policy then also keeps it on its group's own queues, in the order its
 * global queues hold it, so that victim_of() picks the group's next victim
 * in the policy's order in O(1) amortized, other groups' objects untouched.
 *
 * Implementations: "s3fifo" (default; evict_s3fifo.c) and "lru"
 * (evict_lru.c).  Single threaded.
 */
#ifndef FLUXOND_EVICT_H
#define FLUXOND_EVICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "list.h"

struct fkv_evict;

struct fkv_evict_ops {
	const char *name;
	/*
	 * Track a new object of @group (0: none); -EEXIST if the handle is
	 * tracked, -ENOMEM.
	 */
	int (*insert)(struct fkv_evict *e, uint64_t handle, uint64_t weight,
		      uint64_t key_hash, uint32_t group);
	/* A hit; unknown handles are ignored. */
	void (*touch)(struct fkv_evict *e, uint64_t handle);
	/* Forget an object (overwrite, delete); 0 or -ENOENT. */
	int (*remove)(struct fkv_evict *e, uint64_t handle);
	/*
	 * Choose the next victim and forget it: 0 with *handle and *weight,
	 * or -ENOENT when nothing is tracked.
	 */
	int (*victim)(struct fkv_evict *e, uint64_t *handle, uint64_t *weight);
	/*
	 * The same among the objects of @group (> 0) only, in the order
	 * victim() would take them: -ENOENT when the group has none.
	 */
	int (*victim_of)(struct fkv_evict *e, uint32_t group, uint64_t *handle,
			 uint64_t *weight);
	void (*destroy)(struct fkv_evict *e);
};

/**
 * struct fkv_evict - what every policy keeps in common.
 * @ops: the implementation.
 * @capacity: bytes of the cache the policy sizes its queues for.
 * @bytes: sum of the weights of the tracked objects.
 * @count: tracked objects.
 */
struct fkv_evict {
	const struct fkv_evict_ops *ops;
	uint64_t capacity;
	uint64_t bytes;
	size_t count;
};

/* Create a policy by name ("s3fifo", "lru"); NULL with errno set. */
struct fkv_evict *fkv_evict_create(const char *name, uint64_t capacity);
struct fkv_evict *fkv_evict_s3fifo_create(uint64_t capacity);
struct fkv_evict *fkv_evict_lru_create(uint64_t capacity);
/* True if @name names a policy. */
int fkv_evict_valid_name(const char *name);

static inline void fkv_evict_destroy(struct fkv_evict *e)
{
	if (e)
		e->ops->destroy(e);
}

static inline int fkv_evict_insert(struct fkv_evict *e, uint64_t handle,
				   uint64_t weight, uint64_t key_hash)
{
	return e->ops->insert(e, handle, weight, key_hash, 0);
}

static inline int fkv_evict_insert_group(struct fkv_evict *e, uint64_t handle,
					 uint64_t weight, uint64_t key_hash,
					 uint32_t group)
{
	return e->ops->insert(e, handle, weight, key_hash, group);
}

static inline int fkv_evict_victim_of(struct fkv_evict *e, uint32_t group,
				      uint64_t *handle, uint64_t *weight)
{
	return e->ops->victim_of(e, group, handle, weight);
}

static inline void fkv_evict_touch(struct fkv_evict *e, uint64_t handle)
{
	e->ops->touch(e, handle);
}

static inline int fkv_evict_remove(struct fkv_evict *e, uint64_t handle)
{
	return e->ops->remove(e, handle);
}

static inline int fkv_evict_victim(struct fkv_evict *e, uint64_t *handle,
				   uint64_t *weight)
{
	return e->ops->victim(e, handle, weight);
}

/*
 * Pick victims until at least @want bytes are chosen or nothing is left;
 * @fn is called for each (after the policy forgot it).  Returns the bytes
 * chosen.
 */
uint64_t fkv_evict_bytes(struct fkv_evict *e, uint64_t want,
			 void (*fn)(void *arg, uint64_t handle,
				    uint64_t weight),
			 void *arg);

/*
 * For the policies: one group's queues (an LRU uses q[0]; S3-FIFO q[0]
 * small, q[1] main), newest first like the global ones, and how many
 * objects it has.  Kept in a struct fkv_u64map by group id; freed with
 * its last object.
 */
struct fkv_u64map;
struct fkv_evict_group {
	struct fkv_list q[2];
	uint64_t bytes[2];	/* the weights on q[0], q[1] */
	size_t count;
	uint32_t id;
};
/*
 * The group @id (> 0) of @map, added with no object if @create and
 * missing; NULL when missing (or out of memory).
 */
struct fkv_evict_group *fkv_evict_group(struct fkv_u64map *map, uint32_t id,
					bool create);
/* One object fewer in @g; the last one frees it. */
void fkv_evict_group_put(struct fkv_u64map *map, struct fkv_evict_group *g);

#endif /* FLUXOND_EVICT_H */
