// SPDX-License-Identifier: GPL-2.0
/*
 * evict.c - policy selection and weight-driven eviction (evict.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evict.h"
#include "u64map.h"

static const struct {
	const char *name;
	struct fkv_evict *(*create)(uint64_t capacity);
} policies[] = {
	{ "s3fifo", fkv_evict_s3fifo_create },
	{ "lru", fkv_evict_lru_create },
};

int fkv_evict_valid_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (!strcmp(name, policies[i].name))
			return 1;
	return 0;
}

struct fkv_evict *fkv_evict_create(const char *name, uint64_t capacity)
{
	size_t i;

	if (!capacity) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (!strcmp(name, policies[i].name))
			return policies[i].create(capacity);
	errno = EINVAL;
	return NULL;
}

uint64_t fkv_evict_bytes(struct fkv_evict *e, uint64_t want,
			 void (*fn)(void *arg, uint64_t handle,
				    uint64_t weight),
			 void *arg)
{
	uint64_t freed = 0, handle, weight;

	while (freed < want && !fkv_evict_victim(e, &handle, &weight)) {
		freed += weight;
		if (fn)
			fn(arg, handle, weight);
	}
	return freed;
}

struct fkv_evict_group *fkv_evict_group(struct fkv_u64map *map, uint32_t id,
					bool create)
{
	struct fkv_evict_group *g = fkv_u64map_get(map, id);

	if (g || !create || !id)
		return g;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	if (fkv_u64map_put(map, id, g)) {
		free(g);
		return NULL;
	}
	g->id = id;
	fkv_list_init(&g->q[0]);
	fkv_list_init(&g->q[1]);
	return g;
}

void fkv_evict_group_put(struct fkv_u64map *map, struct fkv_evict_group *g)
{
	if (--g->count)
		return;
	fkv_u64map_del(map, g->id);
	free(g);
}

