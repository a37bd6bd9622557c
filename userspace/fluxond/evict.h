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
 * Implementations: "s3fifo" (default; evict_s3fifo.c) and "lru"
 * (evict_lru.c).  Single threaded.
 */
#ifndef FLUXOND_EVICT_H
#define FLUXOND_EVICT_H

#include <stddef.h>
#include <stdint.h>

struct fkv_evict;

struct fkv_evict_ops {
	const char *name;
	/* Track a new object; -EEXIST if the handle is tracked, -ENOMEM. */
	int (*insert)(struct fkv_evict *e, uint64_t handle, uint64_t weight,
		      uint64_t key_hash);
	/* A hit; unknown handles are ignored. */
	void (*touch)(struct fkv_evict *e, uint64_t handle);
	/* Forget an object (overwrite, delete); 0 or -ENOENT. */
	int (*remove)(struct fkv_evict *e, uint64_t handle);
	/*
	 * Choose the next victim and forget it: 0 with *handle and *weight,
	 * or -ENOENT when nothing is tracked.
	 */
	int (*victim)(struct fkv_evict *e, uint64_t *handle, uint64_t *weight);
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
	return e->ops->insert(e, handle, weight, key_hash);
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

#endif /* FLUXOND_EVICT_H */
