// SPDX-License-Identifier: GPL-2.0
/*
 * u64map.c - open-addressing u64 -> pointer map (see u64map.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "hash.h"
#include "u64map.h"

#define FKV_U64MAP_MIN	16
/*
 * Old slots moved per put or delete while growing: the move ends long
 * before the next doubling is due (that takes 0.7 x the old size more
 * entries, the move old size / 8 puts).
 */
#define FKV_U64MAP_MOVE	8

/* An old slot whose entry was moved or deleted (its key stays). */
static char gone;
#define GONE	((void *)&gone)

static size_t slot_of(size_t mask, uint64_t key)
{
	return (size_t)fkv_mix64(key) & mask;
}

static int alloc_slots(struct fkv_u64map *m, size_t n)
{
	m->slots = calloc(n, sizeof(*m->slots));
	if (!m->slots)
		return -ENOMEM;
	m->mask = n - 1;
	m->count = 0;
	m->old = NULL;
	m->old_mask = m->moved = 0;
	return 0;
}

int fkv_u64map_init(struct fkv_u64map *m, size_t hint)
{
	size_t n = FKV_U64MAP_MIN;

	while (n < hint * 2 && n < ((size_t)1 << 40))
		n <<= 1;
	return alloc_slots(m, n);
}

void fkv_u64map_fini(struct fkv_u64map *m)
{
	free(m->slots);
	free(m->old);
	m->slots = m->old = NULL;
	m->old_mask = m->moved = 0;
	m->mask = 0;
	m->count = 0;
}

/* @key's slot in the current table, or NULL. */
static struct fkv_u64map_slot *find(const struct fkv_u64map *m, uint64_t key)
{
	size_t i;

	if (!key)
		return NULL;
	for (i = slot_of(m->mask, key);; i = (i + 1) & m->mask) {
		struct fkv_u64map_slot *s = &m->slots[i];

		if (s->key == key)
			return s;
		if (!s->key)
			return NULL;
	}
}

/* @key's live slot in the old table (growing), or NULL. */
static struct fkv_u64map_slot *find_old(const struct fkv_u64map *m,
					uint64_t key)
{
	size_t i;

	if (!key || !m->old)
		return NULL;
	for (i = slot_of(m->old_mask, key);; i = (i + 1) & m->old_mask) {
		struct fkv_u64map_slot *s = &m->old[i];

		if (s->key == key)
			return s->val == GONE ? NULL : s;
		if (!s->key)
			return NULL;
	}
}

void *fkv_u64map_get(const struct fkv_u64map *m, uint64_t key)
{
	struct fkv_u64map_slot *s = find(m, key);

	if (!s)
		s = find_old(m, key);
	return s ? s->val : NULL;
}

/* Into the current table; the caller counts it. */
static void insert_new(struct fkv_u64map *m, uint64_t key, void *val)
{
	size_t i;

	for (i = slot_of(m->mask, key); m->slots[i].key;
	     i = (i + 1) & m->mask)
		;
	m->slots[i].key = key;
	m->slots[i].val = val;
}

/* Move up to @n old slots into the current table; the last frees it. */
static void move_slots(struct fkv_u64map *m, size_t n)
{
	for (; m->old && n; n--) {
		struct fkv_u64map_slot *s = &m->old[m->moved];

		if (s->key && s->val != GONE)
			insert_new(m, s->key, s->val);
		s->val = GONE;
		if (m->moved++ == m->old_mask) {
			free(m->old);
			m->old = NULL;
			m->old_mask = m->moved = 0;
		}
	}
}

/* Double: the new slots now, the entries a few at a time (move_slots). */
static int grow(struct fkv_u64map *m)
{
	struct fkv_u64map_slot *n;
	size_t size = (m->mask + 1) * 2;

	/* a move still going (cannot happen at our pace): finish it */
	move_slots(m, SIZE_MAX);
	n = calloc(size, sizeof(*n));
	if (!n)
		return -ENOMEM;
	m->old = m->slots;
	m->old_mask = m->mask;
	m->moved = 0;
	m->slots = n;
	m->mask = size - 1;
	return 0;
}

int fkv_u64map_put(struct fkv_u64map *m, uint64_t key, void *val)
{
	int err;

	if (!key)
		return -EINVAL;
	if (find(m, key) || find_old(m, key))
		return -EEXIST;
	move_slots(m, FKV_U64MAP_MOVE);
	if ((m->count + 1) * 10 > (m->mask + 1) * 7) {
		err = grow(m);
		if (err)
			return err;
	}
	insert_new(m, key, val);
	m->count++;
	return 0;
}

void *fkv_u64map_del(struct fkv_u64map *m, uint64_t key)
{
	struct fkv_u64map_slot *s = find(m, key);
	size_t hole, i;
	void *val;

	if (!s) {
		/* Still in the old table: a tombstone keeps its run whole. */
		s = find_old(m, key);
		if (!s)
			return NULL;
		val = s->val;
		s->val = GONE;
		m->count--;
		move_slots(m, FKV_U64MAP_MOVE);
		return val;
	}
	val = s->val;
	hole = (size_t)(s - m->slots);
	/*
	 * Backward-shift: pull later entries of the probe run into the hole
	 * when their home slot does not lie (cyclically) after the hole.
	 */
	for (i = (hole + 1) & m->mask; m->slots[i].key; i = (i + 1) & m->mask) {
		size_t home = slot_of(m->mask, m->slots[i].key);

		if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	m->slots[hole].key = 0;
	m->slots[hole].val = NULL;
	m->count--;
	move_slots(m, FKV_U64MAP_MOVE);
	return val;
}

int fkv_u64map_next(const struct fkv_u64map *m, size_t *pos, uint64_t *key,
		    void **val)
{
	/* the old table's live entries first (growing), then the current */
	size_t nold = m->old ? m->old_mask + 1 : 0;

	for (; *pos < nold + m->mask + 1; (*pos)++) {
		const struct fkv_u64map_slot *s = *pos < nold ?
			&m->old[*pos] : &m->slots[*pos - nold];

		if (s->key && s->val != GONE) {
			if (key)
				*key = s->key;
			if (val)
				*val = s->val;
			(*pos)++;
			return 0;
		}
	}
	return -ENOENT;
}

void fkv_u64map_fini_free(struct fkv_u64map *m)
{
	size_t pos = 0;
	uint64_t key;
	void *val;

	while (!fkv_u64map_next(m, &pos, &key, &val))
		free(val);
	fkv_u64map_fini(m);
}
