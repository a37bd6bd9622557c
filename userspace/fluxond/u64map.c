// SPDX-License-Identifier: GPL-2.0
/*
 * u64map.c - open-addressing u64 -> pointer map (see u64map.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "hash.h"
#include "u64map.h"

#define FKV_U64MAP_MIN	16

static size_t slot_of(const struct fkv_u64map *m, uint64_t key)
{
	return (size_t)fkv_mix64(key) & m->mask;
}

static int alloc_slots(struct fkv_u64map *m, size_t n)
{
	m->slots = calloc(n, sizeof(*m->slots));
	if (!m->slots)
		return -ENOMEM;
	m->mask = n - 1;
	m->count = 0;
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
	m->slots = NULL;
	m->mask = 0;
	m->count = 0;
}

static struct fkv_u64map_slot *find(const struct fkv_u64map *m, uint64_t key)
{
	size_t i;

	if (!key)
		return NULL;
	for (i = slot_of(m, key);; i = (i + 1) & m->mask) {
		struct fkv_u64map_slot *s = &m->slots[i];

		if (s->key == key)
			return s;
		if (!s->key)
			return NULL;
	}
}

void *fkv_u64map_get(const struct fkv_u64map *m, uint64_t key)
{
	struct fkv_u64map_slot *s = find(m, key);

	return s ? s->val : NULL;
}

static void insert_new(struct fkv_u64map *m, uint64_t key, void *val)
{
	size_t i;

	for (i = slot_of(m, key); m->slots[i].key; i = (i + 1) & m->mask)
		;
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->count++;
}

static int grow(struct fkv_u64map *m)
{
	struct fkv_u64map old = *m;
	size_t i;
	int err;

	err = alloc_slots(m, (old.mask + 1) * 2);
	if (err) {
		*m = old;
		return err;
	}
	for (i = 0; i <= old.mask; i++)
		if (old.slots[i].key)
			insert_new(m, old.slots[i].key, old.slots[i].val);
	free(old.slots);
	return 0;
}

int fkv_u64map_put(struct fkv_u64map *m, uint64_t key, void *val)
{
	int err;

	if (!key)
		return -EINVAL;
	if (find(m, key))
		return -EEXIST;
	if ((m->count + 1) * 10 > (m->mask + 1) * 7) {
		err = grow(m);
		if (err)
			return err;
	}
	insert_new(m, key, val);
	return 0;
}

void *fkv_u64map_del(struct fkv_u64map *m, uint64_t key)
{
	struct fkv_u64map_slot *s = find(m, key);
	size_t hole, i;
	void *val;

	if (!s)
		return NULL;
	val = s->val;
	hole = (size_t)(s - m->slots);
	/*
	 * Backward-shift: pull later entries of the probe run into the hole
	 * when their home slot does not lie (cyclically) after the hole.
	 */
	for (i = (hole + 1) & m->mask; m->slots[i].key; i = (i + 1) & m->mask) {
		size_t home = slot_of(m, m->slots[i].key);

		if (((i - home) & m->mask) >= ((i - hole) & m->mask)) {
			m->slots[hole] = m->slots[i];
			hole = i;
		}
	}
	m->slots[hole].key = 0;
	m->slots[hole].val = NULL;
	m->count--;
	return val;
}

int fkv_u64map_next(const struct fkv_u64map *m, size_t *pos, uint64_t *key,
		    void **val)
{
	for (; *pos <= m->mask; (*pos)++) {
		const struct fkv_u64map_slot *s = &m->slots[*pos];

		if (s->key) {
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
