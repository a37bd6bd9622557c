// SPDX-License-Identifier: GPL-2.0
/*
 * evict_lru.c - least recently used, by bytes: the baseline policy.
 */
#include <errno.h>
#include <stdlib.h>

#include "evict.h"
#include "list.h"
#include "u64map.h"

struct lru_obj {
	struct fkv_list link;	/* in lru.list, most recent first */
	struct fkv_list glink;	/* in its group's q[0], the same order */
	struct fkv_evict_group *group;	/* NULL: none */
	uint64_t handle;
	uint64_t weight;
};

struct lru {
	struct fkv_evict base;
	struct fkv_list list;
	struct fkv_u64map objs;	/* handle -> struct lru_obj */
	struct fkv_u64map groups;	/* group id -> struct fkv_evict_group */
};

static struct lru *to_lru(struct fkv_evict *e)
{
	return fkv_container_of(e, struct lru, base);
}

static int lru_insert(struct fkv_evict *e, uint64_t handle, uint64_t weight,
		      uint64_t key_hash, uint32_t group)
{
	struct lru *l = to_lru(e);
	struct fkv_evict_group *g = NULL;
	struct lru_obj *o;
	int err;

	(void)key_hash;
	if (group) {
		g = fkv_evict_group(&l->groups, group, true);
		if (!g)
			return -ENOMEM;
		g->count++;
	}
	o = calloc(1, sizeof(*o));
	err = o ? fkv_u64map_put(&l->objs, handle, o) : -ENOMEM;
	if (err) {
		free(o);
		if (g)
			fkv_evict_group_put(&l->groups, g);
		return err;
	}
	o->handle = handle;
	o->weight = weight;
	o->group = g;
	fkv_list_add(&o->link, &l->list);
	fkv_list_init(&o->glink);
	if (g)
		fkv_list_add(&o->glink, &g->q[0]);
	e->bytes += weight;
	e->count++;
	return 0;
}

static void lru_touch(struct fkv_evict *e, uint64_t handle)
{
	struct lru *l = to_lru(e);
	struct lru_obj *o = fkv_u64map_get(&l->objs, handle);

	if (!o)
		return;
	fkv_list_move(&o->link, &l->list);
	if (o->group)
		fkv_list_move(&o->glink, &o->group->q[0]);
}

static void forget(struct lru *l, struct lru_obj *o)
{
	fkv_u64map_del(&l->objs, o->handle);
	fkv_list_del(&o->link);
	fkv_list_del(&o->glink);
	if (o->group)
		fkv_evict_group_put(&l->groups, o->group);
	l->base.bytes -= o->weight;
	l->base.count--;
	free(o);
}

static int lru_remove(struct fkv_evict *e, uint64_t handle)
{
	struct lru *l = to_lru(e);
	struct lru_obj *o = fkv_u64map_get(&l->objs, handle);

	if (!o)
		return -ENOENT;
	forget(l, o);
	return 0;
}

static int take(struct lru *l, struct lru_obj *o, uint64_t *handle,
		uint64_t *weight)
{
	*handle = o->handle;
	*weight = o->weight;
	forget(l, o);
	return 0;
}

static int lru_victim(struct fkv_evict *e, uint64_t *handle, uint64_t *weight)
{
	struct lru *l = to_lru(e);
	struct fkv_list *last = fkv_list_last(&l->list);

	if (!last)
		return -ENOENT;
	return take(l, fkv_container_of(last, struct lru_obj, link), handle,
		    weight);
}

/* The group's least recently used: its own list keeps the global order. */
static int lru_victim_of(struct fkv_evict *e, uint32_t group,
			 uint64_t *handle, uint64_t *weight)
{
	struct lru *l = to_lru(e);
	struct fkv_evict_group *g = fkv_evict_group(&l->groups, group, false);
	struct fkv_list *last = g ? fkv_list_last(&g->q[0]) : NULL;

	if (!last)
		return -ENOENT;
	return take(l, fkv_container_of(last, struct lru_obj, glink), handle,
		    weight);
}

static void lru_destroy(struct fkv_evict *e)
{
	struct lru *l = to_lru(e);
	struct fkv_list *n;

	while ((n = fkv_list_first(&l->list))) {
		fkv_list_del(n);
		free(fkv_container_of(n, struct lru_obj, link));
	}
	fkv_u64map_fini(&l->objs);
	fkv_u64map_fini_free(&l->groups);
	free(l);
}

static const struct fkv_evict_ops lru_ops = {
	.name = "lru",
	.insert = lru_insert,
	.touch = lru_touch,
	.remove = lru_remove,
	.victim = lru_victim,
	.victim_of = lru_victim_of,
	.destroy = lru_destroy,
};

struct fkv_evict *fkv_evict_lru_create(uint64_t capacity)
{
	struct lru *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return NULL;
	err = fkv_u64map_init(&l->objs, 0);
	if (!err) {
		err = fkv_u64map_init(&l->groups, 0);
		if (err)
			fkv_u64map_fini(&l->objs);
	}
	if (err) {
		free(l);
		errno = -err;
		return NULL;
	}
	l->base.ops = &lru_ops;
	l->base.capacity = capacity;
	fkv_list_init(&l->list);
	return &l->base;
}
