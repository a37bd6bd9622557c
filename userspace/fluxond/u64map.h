/* SPDX-License-Identifier: GPL-2.0 */
/*
 * u64map.h - hash map from a non-zero u64 (a replica handle, a put_id, a key
 * hash) to a pointer.  Open addressing, linear probing, backward-shift
 * deletion; grows at 70% load, a few slots at a time: a doubling allocates
 * the new slots and each later put or delete moves some of the old ones
 * (a map of millions of handles rehashed in one call stalled the master's
 * loop for a second).  Not thread safe: fluxond is single threaded.
 */
#ifndef FLUXOND_U64MAP_H
#define FLUXOND_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct fkv_u64map_slot {
	uint64_t key;		/* 0 = empty */
	void *val;
};

struct fkv_u64map {
	struct fkv_u64map_slot *slots;
	size_t mask;		/* slots - 1; a power of two minus one */
	size_t count;		/* entries, in both tables */
	/*
	 * While it grows: the slots before the doubling.  old[0, moved) are
	 * moved; an entry moved or deleted there stays as a tombstone (its
	 * key kept, so that the old probe runs stay whole) until the last
	 * slot moved and the old table is freed.
	 */
	struct fkv_u64map_slot *old;
	size_t old_mask, moved;
};

int fkv_u64map_init(struct fkv_u64map *m, size_t hint);
void fkv_u64map_fini(struct fkv_u64map *m);
/* The same after free() of every value (each a malloc()ed pointer). */
void fkv_u64map_fini_free(struct fkv_u64map *m);
void *fkv_u64map_get(const struct fkv_u64map *m, uint64_t key);
/* 0, -EINVAL (key 0), -EEXIST or -ENOMEM. */
int fkv_u64map_put(struct fkv_u64map *m, uint64_t key, void *val);
/* The removed value, or NULL if @key was absent. */
void *fkv_u64map_del(struct fkv_u64map *m, uint64_t key);

static inline size_t fkv_u64map_count(const struct fkv_u64map *m)
{
	return m->count;
}

/*
 * Iterate: start with *pos = 0; returns 0 with the next entry or -ENOENT at
 * the end.  The map must not change during the walk.
 */
int fkv_u64map_next(const struct fkv_u64map *m, size_t *pos, uint64_t *key,
		    void **val);

#endif /* FLUXOND_U64MAP_H */
