// SPDX-License-Identifier: GPL-2.0
/*
 * evict_s3fifo.c - S3-FIFO (Yang et al., SOSP '23) by bytes.
 *
 * Three FIFO queues: small S (~10% of the capacity) takes new objects, main M
 * holds objects that proved themselves, ghost G remembers the keys recently
 * evicted from S (no data).  Each resident object has a 2-bit frequency
 * counter bumped on hits.
 *   - insert: a key found in G goes straight to M, anything else to S.
 *   - evict from S (while S holds >= its share, or M is empty): the oldest
 *     object moves to M if it was hit while in S, else it is evicted and its
 *     key enters G.
 *   - evict from M: the oldest object with freq > 0 is reinserted with
 *     freq - 1 (CLOCK-like second chance), the first with freq 0 goes.
 * One-hit wonders leave quickly through S and a scan cannot flush M.
 * G is bounded by bytes to M's share of the capacity.
 *
 * Groups (evict.h): an object of a group is also on its group's S or M
 * queue, in the same order; victim_of() runs the same rules over the
 * group's queues as if they were a cache of the group's bytes (S first
 * while it holds S3_SMALL_PERCENT of them or the group has nothing in
 * M), so a group's victims leave in the order S3-FIFO would evict them
 * from a cache of its own, and other groups' objects are not looked at.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "evict.h"
#include "list.h"
#include "u64map.h"

#define S3_SMALL_PERCENT	10
#define S3_FREQ_MAX		3
/* Hits an object needs while in S to be moved to M rather than evicted. */
#define S3_PROMOTE_FREQ		1

struct s3_obj {
	struct fkv_list link;	/* in S or M, newest first */
	struct fkv_list glink;	/* in its group's q[0] (S) or q[1] (M) */
	struct fkv_evict_group *group;	/* NULL: none */
	uint64_t handle;
	uint64_t weight;
	uint64_t key_hash;
	uint8_t freq;		/* 0..S3_FREQ_MAX */
	bool in_main;
};

struct s3_ghost {
	struct fkv_list link;	/* in s3fifo.ghost, newest first */
	uint64_t key;		/* key hash, never 0 */
	uint64_t weight;
};

struct s3fifo {
	struct fkv_evict base;
	struct fkv_list small, main, ghost;
	uint64_t small_bytes, main_bytes, ghost_bytes;
	uint64_t small_target;	/* S's share of the capacity */
	uint64_t ghost_target;	/* G remembers at most this many bytes */
	struct fkv_u64map objs;		/* handle -> struct s3_obj */
	struct fkv_u64map ghosts;	/* key hash -> struct s3_ghost */
	struct fkv_u64map groups;	/* group id -> struct fkv_evict_group */
};

static struct s3fifo *to_s3(struct fkv_evict *e)
{
	return fkv_container_of(e, struct s3fifo, base);
}

static uint64_t ghost_key(uint64_t key_hash)
{
	return key_hash ? key_hash : 1;
}

static void ghost_forget(struct s3fifo *s, struct s3_ghost *g)
{
	fkv_u64map_del(&s->ghosts, g->key);
	fkv_list_del(&g->link);
	s->ghost_bytes -= g->weight;
	free(g);
}

/* Remember an evicted key; best effort (no memory = no memory of it). */
static void ghost_add(struct s3fifo *s, uint64_t key_hash, uint64_t weight)
{
	uint64_t key = ghost_key(key_hash);
	struct s3_ghost *g = fkv_u64map_get(&s->ghosts, key);
	struct fkv_list *last;

	if (g) {
		ghost_forget(s, g);
		g = NULL;
	}
	g = calloc(1, sizeof(*g));
	if (g && fkv_u64map_put(&s->ghosts, key, g)) {
		free(g);
		g = NULL;
	}
	if (g) {
		g->key = key;
		g->weight = weight;
		fkv_list_add(&g->link, &s->ghost);
		s->ghost_bytes += weight;
	}
	while (s->ghost_bytes > s->ghost_target &&
	       (last = fkv_list_last(&s->ghost)))
		ghost_forget(s, fkv_container_of(last, struct s3_ghost, link));
}

static void queue_add(struct s3fifo *s, struct s3_obj *o, bool main)
{
	o->in_main = main;
	if (o->group) {
		fkv_list_add(&o->glink, &o->group->q[main]);
		o->group->bytes[main] += o->weight;
	}
	if (main) {
		fkv_list_add(&o->link, &s->main);
		s->main_bytes += o->weight;
	} else {
		fkv_list_add(&o->link, &s->small);
		s->small_bytes += o->weight;
	}
}

static void queue_del(struct s3fifo *s, struct s3_obj *o)
{
	fkv_list_del(&o->link);
	fkv_list_del(&o->glink);
	if (o->group)
		o->group->bytes[o->in_main] -= o->weight;
	if (o->in_main)
		s->main_bytes -= o->weight;
	else
		s->small_bytes -= o->weight;
}

static int s3_insert(struct fkv_evict *e, uint64_t handle, uint64_t weight,
		     uint64_t key_hash, uint32_t group)
{
	struct s3fifo *s = to_s3(e);
	struct fkv_evict_group *grp = NULL;
	struct s3_ghost *g;
	struct s3_obj *o;
	int err;

	if (group) {
		grp = fkv_evict_group(&s->groups, group, true);
		if (!grp)
			return -ENOMEM;
		grp->count++;
	}
	o = calloc(1, sizeof(*o));
	err = o ? fkv_u64map_put(&s->objs, handle, o) : -ENOMEM;
	if (err) {
		free(o);
		if (grp)
			fkv_evict_group_put(&s->groups, grp);
		return err;
	}
	fkv_list_init(&o->glink);
	o->group = grp;
	o->handle = handle;
	o->weight = weight;
	o->key_hash = key_hash;
	g = fkv_u64map_get(&s->ghosts, ghost_key(key_hash));
	if (g)
		ghost_forget(s, g);
	queue_add(s, o, g != NULL);
	e->bytes += weight;
	e->count++;
	return 0;
}

static void s3_touch(struct fkv_evict *e, uint64_t handle)
{
	struct s3_obj *o = fkv_u64map_get(&to_s3(e)->objs, handle);

	if (o && o->freq < S3_FREQ_MAX)
		o->freq++;
}

static void forget(struct s3fifo *s, struct s3_obj *o)
{
	queue_del(s, o);
	if (o->group)
		fkv_evict_group_put(&s->groups, o->group);
	fkv_u64map_del(&s->objs, o->handle);
	s->base.bytes -= o->weight;
	s->base.count--;
	free(o);
}

static int s3_remove(struct fkv_evict *e, uint64_t handle)
{
	struct s3fifo *s = to_s3(e);
	struct s3_obj *o = fkv_u64map_get(&s->objs, handle);

	if (!o)
		return -ENOENT;
	forget(s, o);
	return 0;
}

static struct s3_obj *oldest(struct fkv_list *q)
{
	struct fkv_list *l = fkv_list_last(q);

	return l ? fkv_container_of(l, struct s3_obj, link) : NULL;
}

/* S holds its share: of the capacity, or of the group's bytes. */
static bool s3_small_full(const struct s3fifo *s,
			  const struct fkv_evict_group *g)
{
	uint64_t all;

	if (!g)
		return s->small_bytes >= s->small_target;
	all = g->bytes[0] + g->bytes[1];
	return g->bytes[0] >= all / 100 * S3_SMALL_PERCENT +
			      all % 100 * S3_SMALL_PERCENT / 100;
}

static struct s3_obj *oldest_of(struct fkv_list *q)
{
	struct fkv_list *l = fkv_list_last(q);

	return l ? fkv_container_of(l, struct s3_obj, glink) : NULL;
}

/*
 * The next victim, among every object (@g NULL) or @g's: S3-FIFO's rules
 * over the global queues or the group's, which hold its objects in the
 * same order.
 */
static int s3_take(struct s3fifo *s, struct fkv_evict_group *g,
		   uint64_t *handle, uint64_t *weight)
{
	struct fkv_list *small = g ? &g->q[0] : &s->small;
	struct fkv_list *main = g ? &g->q[1] : &s->main;
	struct s3_obj *o;

	/*
	 * Terminates: every pass either moves an object from S to M (at most
	 * count times) or lowers the freq of one in M (at most 3 * count).
	 */
	for (;;) {
		bool from_small = !fkv_list_empty(small) &&
				  (s3_small_full(s, g) || fkv_list_empty(main));
		struct fkv_list *q = from_small ? small : main;

		o = g ? oldest_of(q) : oldest(q);
		if (!o)
			return -ENOENT;
		if (from_small && o->freq >= S3_PROMOTE_FREQ) {
			queue_del(s, o);
			o->freq = 0;
			queue_add(s, o, true);
			continue;
		}
		if (!from_small && o->freq > 0) {
			o->freq--;
			queue_del(s, o);
			queue_add(s, o, true);
			continue;
		}
		break;
	}
	if (!o->in_main)
		ghost_add(s, o->key_hash, o->weight);
	*handle = o->handle;
	*weight = o->weight;
	forget(s, o);
	return 0;
}

static int s3_victim(struct fkv_evict *e, uint64_t *handle, uint64_t *weight)
{
	return s3_take(to_s3(e), NULL, handle, weight);
}

static int s3_victim_of(struct fkv_evict *e, uint32_t group, uint64_t *handle,
			uint64_t *weight)
{
	struct s3fifo *s = to_s3(e);
	struct fkv_evict_group *g = fkv_evict_group(&s->groups, group, false);

	return g ? s3_take(s, g, handle, weight) : -ENOENT;
}

static void free_queue(struct fkv_list *q, size_t off)
{
	struct fkv_list *l;

	while ((l = fkv_list_first(q))) {
		fkv_list_del(l);
		free((char *)l - off);
	}
}

static void s3_destroy(struct fkv_evict *e)
{
	struct s3fifo *s = to_s3(e);

	free_queue(&s->small, offsetof(struct s3_obj, link));
	free_queue(&s->main, offsetof(struct s3_obj, link));
	free_queue(&s->ghost, offsetof(struct s3_ghost, link));
	fkv_u64map_fini(&s->objs);
	fkv_u64map_fini(&s->ghosts);
	fkv_u64map_fini_free(&s->groups);
	free(s);
}

static const struct fkv_evict_ops s3fifo_ops = {
	.name = "s3fifo",
	.insert = s3_insert,
	.touch = s3_touch,
	.remove = s3_remove,
	.victim = s3_victim,
	.victim_of = s3_victim_of,
	.destroy = s3_destroy,
};

struct fkv_evict *fkv_evict_s3fifo_create(uint64_t capacity)
{
	struct s3fifo *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	err = fkv_u64map_init(&s->objs, 0);
	if (err)
		goto err_free;
	err = fkv_u64map_init(&s->ghosts, 0);
	if (err)
		goto err_objs;
	err = fkv_u64map_init(&s->groups, 0);
	if (err) {
		fkv_u64map_fini(&s->ghosts);
		goto err_objs;
	}
	s->base.ops = &s3fifo_ops;
	s->base.capacity = capacity;
	s->small_target = capacity / 100 * S3_SMALL_PERCENT +
			  capacity % 100 * S3_SMALL_PERCENT / 100;
	s->ghost_target = capacity - s->small_target;
	fkv_list_init(&s->small);
	fkv_list_init(&s->main);
	fkv_list_init(&s->ghost);
	return &s->base;

err_objs:
	fkv_u64map_fini(&s->objs);
err_free:
	free(s);
	errno = -err;
	return NULL;
}
