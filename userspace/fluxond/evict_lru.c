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
	uint64_t handle;
	uint64_t weight;
};

struct lru {
	struct fkv_evict base;
	struct fkv_list list;
	struct fkv_u64map objs;	/* handle -> struct lru_obj */
};

static struct lru *to_lru(struct fkv_evict *e)
{
	return fkv_container_of(e, struct lru, base);
}

static int lru_insert(struct fkv_evict *e, uint64_t handle, uint64_t weight,
		      uint64_t key_hash)
{
	struct lru *l = to_lru(e);
	struct lru_obj *o;
	int err;

	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	err = fkv_u64map_put(&l->objs, handle, o);
	if (err) {
		free(o);
		return err;
	}
	o->handle = handle;
	o->weight = weight;
	fkv_list_add(&o->link, &l->list);
	e->bytes += weight;
	e->count++;
	return 0;
}

static void lru_touch(struct fkv_evict *e, uint64_t handle)
{
	struct lru *l = to_lru(e);
	struct lru_obj *o = fkv_u64map_get(&l->objs, handle);

	if (o)
		fkv_list_move(&o->link, &l->list);
}

static void forget(struct lru *l, struct lru_obj *o)
{
	fkv_u64map_del(&l->objs, o->handle);
	fkv_list_del(&o->link);
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

static int lru_victim(struct fkv_evict *e, uint64_t *handle, uint64_t *weight)
{
	struct lru *l = to_lru(e);
	struct fkv_list *last = fkv_list_last(&l->list);
	struct lru_obj *o;

	if (!last)
		return -ENOENT;
	o = fkv_container_of(last, struct lru_obj, link);
	*handle = o->handle;
	*weight = o->weight;
	forget(l, o);
	return 0;
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
	free(l);
}

static const struct fkv_evict_ops lru_ops = {
	.name = "lru",
	.insert = lru_insert,
	.touch = lru_touch,
	.remove = lru_remove,
	.victim = lru_victim,
	.destroy = lru_destroy,
};

struct fkv_evict *fkv_evict_lru_create(uint64_t capacity)
{
	struct lru *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return NULL;
	err = fkv_u64map_init(&l->objs, 0);
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
