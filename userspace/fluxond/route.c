// SPDX-License-Identifier: GPL-2.0
/*
 * route.c - route table, in-flight puts and capacity accounting (route.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/tenant.h"
#include "hash.h"
#include "list.h"
#include "route.h"
#include "u64map.h"

#define FKV_ROUTES_MIN_BUCKETS	64
/*
 * A growing table moves its entries a few buckets at a time: this many per
 * new entry (the move ends before the next doubling is due: that takes as
 * many new entries as there are old buckets) and per sweep (a quiet table
 * finishes too).  A doubling of a 10^7-key table at once stalled the
 * master's loop for seconds.
 */
#define FKV_ROUTES_MOVE_PER_ADD		8
#define FKV_ROUTES_MOVE_PER_SWEEP	4096

/**
 * struct fkv_inflight - a put between PUT_START and PUT_DONE/PUT_ABORT.
 * @link: in fkv_routes.inflight_list, oldest (= earliest deadline) first.
 * @route: the key entry; holds a count in route->inflight.
 * @put_id, @len: as assigned and announced at PUT_START.
 * @persist: PUT_START asked for an SSD copy (decided once, there; a
 *	placement on another node decides again for that node).
 * @node: where the replica goes (its reservation counts there).
 * @origin: the node that started the put (and sends its PUT_DONE).
 * @reserved: bytes counted in fkv_routes.reserved.
 * @deadline_ms: the sweep forgets the put at this time.
 */
struct fkv_inflight {
	struct fkv_list link;
	struct fkv_route *route;
	uint64_t put_id;
	uint64_t len;
	bool persist;
	uint32_t node;
	uint32_t origin;
	uint64_t reserved;
	uint64_t deadline_ms;
};

/**
 * struct fkv_persisting - a persisting memory replica (route.h).
 * @link: in fkv_routes.persisting_list, oldest (= earliest deadline) first.
 * @handle: its memory handle; the key in fkv_routes.persisting.
 * @weight: its weight, counted in fkv_routes.persisting_bytes.
 * @deadline_ms: the sweep makes it evictable at this time.
 */
struct fkv_persisting {
	struct fkv_list link;
	uint64_t handle;
	uint64_t weight;
	uint64_t deadline_ms;
};

struct fkv_routes {
	const struct fkv_route_ops *ops;
	void *arg;
	uint64_t capacity;
	uint32_t node;
	uint64_t ttl_ms;
	uint64_t (*now_ms)(void *arg);
	void *clock_arg;
	uint8_t secret[FKV_SIPHASH_KEY_LEN];

	struct fkv_route **buckets;	/* key entries, chained */
	size_t nbuckets;		/* power of two */
	/*
	 * While the table grows: the buckets before the doubling, of which
	 * old[moved..nold) still hold their entries (an entry lives in
	 * old[i] iff i >= moved, i = hash & (nold - 1); chain_of()).
	 */
	struct fkv_route **old;
	size_t nold, moved;
	size_t nentries;		/* key entries, visible or not */
	size_t nvisible;		/* entries with replicas */
	struct fkv_u64map by_handle;	/* memory handle -> route */
	struct fkv_u64map inflight;	/* put_id -> struct fkv_inflight */
	struct fkv_list inflight_list;
	struct fkv_u64map persisting;	/* handle -> struct fkv_persisting */
	struct fkv_list persisting_list;
	uint64_t persisting_bytes;

	uint64_t last_put_id;
	/*
	 * Tombstones: what a key entry knew when it was freed.  A freed entry
	 * leaves its newest put_id (published or deleted) under its key hash
	 * in @tombs, so that a replica a node kept through a partition or its
	 * own restart, reported later, is adopted only if no newer version
	 * (or delete) of its key came meanwhile -- even after every newer
	 * replica went.  Bounded: @tomb_ring holds the last @tomb_max
	 * (hash, put_id) in the order they were laid; the oldest aged out
	 * raises @tomb_floor, which keys without a tombstone are held to
	 * (exact, conservative: an old version of an untouched key may be
	 * refused, no overwritten or deleted one adopted).  Entries freed
	 * because their only holder left (fkv_routes_forget_node: no
	 * version changed) lay none.  Hash collisions only refuse more.
	 */
	struct fkv_u64map tombs;	/* key hash -> put_id */
	struct fkv_tomb *tomb_ring;
	size_t tomb_max, tomb_head, tomb_count;
	uint64_t tomb_floor;
	bool forgetting;		/* in fkv_routes_forget_node() */
	/*
	 * Every replica (slot of a key entry) on its owner node's list:
	 * member-left and a node's restart walk that node's replicas only
	 * (a walk of every key stalled the master ~100 ms per member-left at
	 * 10^6 keys).  A slot that moves (compact()) takes its link along.
	 */
	struct fkv_list by_node[FKV_ROUTE_NODES];
	uint64_t used_by[FKV_ROUTE_NODES];	/* per owner node */
	uint64_t reserved_by[FKV_ROUTE_NODES];
	size_t nssd;			/* committed SSD replicas */
	uint64_t ssd_bytes;		/* sum of their lengths */
	/*
	 * The same per tenant (the key's, common/tenant.h), kept where the
	 * totals change: tenant + 1 -> struct fkv_route_tenant, freed when
	 * the tenant has no replica left.  @tenants_lost: an update found no
	 * memory (the totals are off; fkv_routes_check says so).
	 */
	struct fkv_u64map tenants;
	bool tenants_lost;
};

struct fkv_tomb {
	uint64_t hash;
	uint64_t put_id;
};

/* The key entry whose slot @rep is. */
static struct fkv_route *route_of(const struct fkv_replica *rep)
{
	return (struct fkv_route *)((char *)(rep - rep->slot) -
				    offsetof(struct fkv_route, replicas));
}

uint32_t fkv_route_tenant_of(const struct fkv_route *r)
{
	return fkv_key_tenant(r->key, r->key_len, NULL);
}

/*
 * @r's tenant gains (@sign 1) or loses (-1) a DRAM replica of @mem_len
 * bytes (@mem), an SSD copy of @ssd_len bytes (@ssd), or (@keys) a
 * visible route.  A tenant with none of them left is forgotten.
 */
static void tenant_change(struct fkv_routes *t, const struct fkv_route *r,
			  int sign, bool mem, uint64_t mem_len, bool ssd,
			  uint64_t ssd_len, bool keys)
{
	uint64_t key = (uint64_t)fkv_route_tenant_of(r) + 1;
	struct fkv_route_tenant *a = fkv_u64map_get(&t->tenants, key);

	if (!a) {
		a = calloc(1, sizeof(*a));
		if (!a || fkv_u64map_put(&t->tenants, key, a)) {
			free(a);
			t->tenants_lost = true;
			return;
		}
		a->tenant = (uint32_t)(key - 1);
	}
	if (mem) {
		a->dram_bytes += sign * fkv_weight(mem_len);
		a->dram_replicas += sign;
	}
	if (ssd) {
		a->ssd_bytes += sign * ssd_len;
		a->ssd_replicas += sign;
	}
	if (keys)
		a->keys += sign;
	if (!a->dram_replicas && !a->ssd_replicas && !a->keys) {
		fkv_u64map_del(&t->tenants, key);
		free(a);
	}
}

static void tenant_add(struct fkv_routes *t, const struct fkv_route *r,
		       int sign, bool mem, uint64_t mem_len, bool ssd,
		       uint64_t ssd_len)
{
	tenant_change(t, r, sign, mem, mem_len, ssd, ssd_len, false);
}

/* @r became visible (@sign 1) or invisible (-1): its tenant's keys. */
static void visible_add(struct fkv_routes *t, const struct fkv_route *r,
			int sign)
{
	t->nvisible += sign;
	tenant_change(t, r, sign, false, 0, false, 0, true);
}

int fkv_routes_for_each_tenant(const struct fkv_routes *t,
			       int (*fn)(void *arg,
					 const struct fkv_route_tenant *a),
			       void *arg)
{
	size_t pos = 0;
	uint64_t key;
	void *val;
	int err;

	while (!fkv_u64map_next(&t->tenants, &pos, &key, &val)) {
		err = fn(arg, val);
		if (err)
			return err;
	}
	return 0;
}

void fkv_routes_tenant(const struct fkv_routes *t, uint32_t tenant,
		       struct fkv_route_tenant *out)
{
	const struct fkv_route_tenant *a;

	a = fkv_u64map_get(&t->tenants, (uint64_t)tenant + 1);
	if (a)
		*out = *a;
	else
		memset(out, 0, sizeof(*out));
	out->tenant = tenant;
}


/* Slot @i of @r (its node set) joins that node's list. */
static void replica_link(struct fkv_routes *t, struct fkv_route *r,
			 uint32_t i)
{
	struct fkv_replica *rep = &r->replicas[i];

	rep->slot = (uint8_t)i;
	fkv_list_add_tail(&rep->node_link, &t->by_node[rep->node]);
}

/* Lay (or raise) the tombstone of a freed entry of @hash at @put_id. */
static void tomb_lay(struct fkv_routes *t, uint64_t hash, uint64_t put_id)
{
	uint64_t cur = (uintptr_t)fkv_u64map_get(&t->tombs, hash);
	struct fkv_tomb *slot;

	if (!put_id || put_id <= cur || put_id <= t->tomb_floor)
		return;
	if (t->tomb_count == t->tomb_max) {
		/* the oldest goes; the floor keeps what it said */
		struct fkv_tomb *old = &t->tomb_ring[t->tomb_head];

		if ((uintptr_t)fkv_u64map_get(&t->tombs, old->hash) ==
		    old->put_id)
			fkv_u64map_del(&t->tombs, old->hash);
		if (old->put_id > t->tomb_floor)
			t->tomb_floor = old->put_id;
		t->tomb_head = (t->tomb_head + 1) % t->tomb_max;
		t->tomb_count--;
	}
	/* on ENOMEM the floor stands in for it: still exact */
	if (fkv_u64map_put(&t->tombs, hash, (void *)(uintptr_t)put_id)) {
		if (put_id > t->tomb_floor)
			t->tomb_floor = put_id;
		return;
	}
	slot = &t->tomb_ring[(t->tomb_head + t->tomb_count) % t->tomb_max];
	slot->hash = hash;
	slot->put_id = put_id;
	t->tomb_count++;
}

/* The newest version of @hash's key that was removed (or may have been). */
static uint64_t tomb_of(const struct fkv_routes *t, uint64_t hash)
{
	uint64_t v = (uintptr_t)fkv_u64map_get(&t->tombs, hash);

	return v ? v : t->tomb_floor;
}

size_t fkv_routes_tombs(const struct fkv_routes *t, uint64_t *floor)
{
	if (floor)
		*floor = t->tomb_floor;
	return t->tomb_count;
}

static uint64_t clock_monotonic_ms(void *arg)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t fkv_routes_now_ms(const struct fkv_routes *t)
{
	return t->now_ms(t->clock_arg);
}

struct fkv_routes *fkv_routes_create(const struct fkv_route_config *cfg,
				     const struct fkv_route_ops *ops,
				     void *arg)
{
	struct fkv_routes *t;
	size_t i;
	int err;

	if (!cfg->capacity || !ops || !ops->drop) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ops = ops;
	t->arg = arg;
	t->capacity = cfg->capacity;
	t->node = cfg->node;
	t->ttl_ms = cfg->ttl_ms ? cfg->ttl_ms : FKV_INFLIGHT_TTL_MS;
	/* A restarted daemon continues above every put_id clients saw. */
	t->last_put_id = cfg->first_put_id;
	t->now_ms = cfg->now_ms ? cfg->now_ms : clock_monotonic_ms;
	t->clock_arg = cfg->clock_arg;
	fkv_list_init(&t->inflight_list);
	fkv_list_init(&t->persisting_list);
	for (i = 0; i < FKV_ROUTE_NODES; i++)
		fkv_list_init(&t->by_node[i]);
	if (cfg->hash_secret) {
		memcpy(t->secret, cfg->hash_secret, sizeof(t->secret));
	} else {
		err = fkv_hash_secret(t->secret);
		if (err)
			goto err_free;
	}
	err = -ENOMEM;
	t->nbuckets = FKV_ROUTES_MIN_BUCKETS;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets)
		goto err_free;
	err = fkv_u64map_init(&t->by_handle, 0);
	if (err)
		goto err_buckets;
	err = fkv_u64map_init(&t->inflight, 0);
	if (err)
		goto err_by_handle;
	err = fkv_u64map_init(&t->persisting, 0);
	if (err)
		goto err_inflight;
	t->tomb_max = cfg->tombs ? cfg->tombs : FKV_ROUTE_TOMBS;
	err = fkv_u64map_init(&t->tombs, 0);
	if (err)
		goto err_persisting;
	err = fkv_u64map_init(&t->tenants, 0);
	if (err)
		goto err_tombs;
	err = -ENOMEM;
	t->tomb_ring = calloc(t->tomb_max, sizeof(*t->tomb_ring));
	if (!t->tomb_ring)
		goto err_tenants;
	return t;

err_tenants:
	fkv_u64map_fini(&t->tenants);
err_tombs:
	fkv_u64map_fini(&t->tombs);
err_persisting:
	fkv_u64map_fini(&t->persisting);
err_inflight:
	fkv_u64map_fini(&t->inflight);
err_by_handle:
	fkv_u64map_fini(&t->by_handle);
err_buckets:
	free(t->buckets);
err_free:
	free(t);
	errno = -err;
	return NULL;
}

/*
 * Every chain, for walks over all entries: the old buckets still holding
 * entries while the table grows, then the current ones.
 */
static size_t nchains(const struct fkv_routes *t)
{
	return (t->old ? t->nold - t->moved : 0) + t->nbuckets;
}

static struct fkv_route **chain_at(const struct fkv_routes *t, size_t i)
{
	size_t nold = t->old ? t->nold - t->moved : 0;

	return i < nold ? &t->old[t->moved + i] : &t->buckets[i - nold];
}

void fkv_routes_destroy(struct fkv_routes *t)
{
	struct fkv_list *l;
	size_t i;

	if (!t)
		return;
	while ((l = fkv_list_first(&t->inflight_list))) {
		fkv_list_del(l);
		free(fkv_container_of(l, struct fkv_inflight, link));
	}
	while ((l = fkv_list_first(&t->persisting_list))) {
		fkv_list_del(l);
		free(fkv_container_of(l, struct fkv_persisting, link));
	}
	for (i = 0; i < nchains(t); i++) {
		struct fkv_route *r = *chain_at(t, i), *next;

		for (; r; r = next) {
			next = r->next;
			free(r);
		}
	}
	free(t->old);
	free(t->buckets);
	free(t->tomb_ring);
	fkv_u64map_fini_free(&t->tenants);
	fkv_u64map_fini(&t->tombs);
	fkv_u64map_fini(&t->persisting);
	fkv_u64map_fini(&t->inflight);
	fkv_u64map_fini(&t->by_handle);
	free(t);
}

uint64_t fkv_routes_key_hash(const struct fkv_routes *t, const void *key,
			     size_t key_len)
{
	return fkv_siphash(t->secret, key, key_len);
}

static bool key_eq(const struct fkv_route *r, const void *key, size_t key_len)
{
	return r->key_len == key_len && !memcmp(r->key, key, key_len);
}

/* The one chain that holds (or gets) the entries of @hash. */
static struct fkv_route **chain_of(const struct fkv_routes *t, uint64_t hash)
{
	if (t->old && (hash & (t->nold - 1)) >= t->moved)
		return &t->old[hash & (t->nold - 1)];
	return &t->buckets[hash & (t->nbuckets - 1)];
}

static struct fkv_route *find_entry(const struct fkv_routes *t,
				    const void *key, size_t key_len)
{
	uint64_t hash = fkv_routes_key_hash(t, key, key_len);
	struct fkv_route *r;

	for (r = *chain_of(t, hash); r; r = r->next)
		if (r->hash == hash && key_eq(r, key, key_len))
			return r;
	return NULL;
}

/* Move up to @n old buckets into the new ones; the last frees the old. */
static void move_buckets(struct fkv_routes *t, size_t n)
{
	for (; t->old && n; n--) {
		struct fkv_route *r = t->old[t->moved], *next, **b;

		for (; r; r = next) {
			next = r->next;
			b = &t->buckets[r->hash & (t->nbuckets - 1)];
			r->next = *b;
			*b = r;
		}
		t->old[t->moved] = NULL;
		if (++t->moved == t->nold) {
			free(t->old);
			t->old = NULL;
			t->nold = t->moved = 0;
		}
	}
}

/*
 * Double the buckets once there are more entries than buckets: the new
 * array now, the entries a few at a time (move_buckets()).  On allocation
 * failure keep the longer chains.
 */
static void maybe_grow(struct fkv_routes *t)
{
	size_t n = t->nbuckets * 2;
	struct fkv_route **b;

	move_buckets(t, FKV_ROUTES_MOVE_PER_ADD);
	if (t->old || t->nentries <= t->nbuckets)
		return;
	b = calloc(n, sizeof(*b));
	if (!b)
		return;
	t->old = t->buckets;
	t->nold = t->nbuckets;
	t->moved = 0;
	t->buckets = b;
	t->nbuckets = n;
}

static struct fkv_route *get_entry(struct fkv_routes *t, const void *key,
				   size_t key_len)
{
	struct fkv_route *r = find_entry(t, key, key_len), **b;

	if (r)
		return r;
	r = calloc(1, sizeof(*r) + key_len);
	if (!r)
		return NULL;
	r->hash = fkv_routes_key_hash(t, key, key_len);
	r->key_len = (uint16_t)key_len;
	memcpy(r->key, key, key_len);
	b = chain_of(t, r->hash);
	r->next = *b;
	*b = r;
	t->nentries++;
	maybe_grow(t);
	return r;
}

/* Free a key entry nothing refers to any more. */
static void maybe_free_entry(struct fkv_routes *t, struct fkv_route *r)
{
	struct fkv_route **pp;

	if (r->nreplicas || r->inflight)
		return;
	for (pp = chain_of(t, r->hash); *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			if (!t->forgetting)
				tomb_lay(t, r->hash, r->put_id);
			*pp = r->next;
			t->nentries--;
			free(r);
			return;
		}
	}
}

int fkv_routes_put_start(struct fkv_routes *t, const void *key,
			 size_t key_len, uint64_t len, bool persist,
			 uint64_t *put_id)
{
	return fkv_routes_put_start_on(t, t->node, key, key_len, len, persist,
				       put_id);
}

int fkv_routes_put_start_on(struct fkv_routes *t, uint32_t node,
			    const void *key, size_t key_len, uint64_t len,
			    bool persist, uint64_t *put_id)
{
	struct fkv_inflight *p;
	struct fkv_route *r;
	uint64_t id = t->last_put_id + 1;
	int err;

	if (!fkv_key_valid(key, key_len) || !len || len > FLUXONKV_VALUE_MAX ||
	    node >= FKV_ROUTE_NODES)
		return -EINVAL;
	if (fkv_weight(len) > t->capacity)
		return -EFBIG;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	r = get_entry(t, key, key_len);
	if (!r) {
		free(p);
		return -ENOMEM;
	}
	err = fkv_u64map_put(&t->inflight, id, p);
	if (err) {
		free(p);
		maybe_free_entry(t, r);
		return err;
	}
	p->route = r;
	p->put_id = id;
	p->len = len;
	p->persist = persist;
	p->node = node;
	p->origin = node;
	p->reserved = fkv_weight(len);
	p->deadline_ms = fkv_routes_now_ms(t) + t->ttl_ms;
	fkv_list_add_tail(&p->link, &t->inflight_list);
	r->inflight++;
	t->reserved_by[node] += p->reserved;
	t->last_put_id = id;
	*put_id = id;
	return 0;
}

/* Release an in-flight put; the caller frees the entry if it wants to. */
static void finish_inflight(struct fkv_routes *t, struct fkv_inflight *p)
{
	fkv_u64map_del(&t->inflight, p->put_id);
	fkv_list_del(&p->link);
	t->reserved_by[p->node] -= p->reserved;
	p->route->inflight--;
	free(p);
}

static struct fkv_inflight *find_inflight(const struct fkv_routes *t,
					  uint64_t put_id)
{
	return put_id ? fkv_u64map_get(&t->inflight, put_id) : NULL;
}

int fkv_routes_inflight_of(const struct fkv_routes *t, const void *key,
			size_t key_len, uint64_t put_id, uint32_t *node,
			uint32_t *origin)
{
	struct fkv_inflight *p = find_inflight(t, put_id);

	if (!p)
		return -ENOENT;
	if (!key_eq(p->route, key, key_len))
		return -EINVAL;
	*node = p->node;
	*origin = p->origin;
	return 0;
}

int fkv_routes_put_move(struct fkv_routes *t, const void *key, size_t key_len,
			uint64_t put_id, uint32_t node, bool persist)
{
	struct fkv_inflight *p = find_inflight(t, put_id);

	if (!p)
		return -ENOENT;
	if (!key_eq(p->route, key, key_len) || node >= FKV_ROUTE_NODES)
		return -EINVAL;
	t->reserved_by[p->node] -= p->reserved;
	t->reserved_by[node] += p->reserved;
	p->node = node;
	p->persist = persist;
	return 0;
}

int fkv_routes_put_abort(struct fkv_routes *t, const void *key,
			 size_t key_len, uint64_t put_id)
{
	struct fkv_inflight *p = find_inflight(t, put_id);
	struct fkv_route *r;

	if (!p)
		return -ENOENT;
	r = p->route;
	if (!key_eq(r, key, key_len))
		return -EINVAL;
	finish_inflight(t, p);
	maybe_free_entry(t, r);
	return 0;
}

/*
 * Make the freshly published local replica @rep persisting, deadline now +
 * TTL.  On allocation failure it stays evictable (persisting = false).
 */
static void persisting_add(struct fkv_routes *t, struct fkv_replica *rep)
{
	struct fkv_persisting *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return;
	if (fkv_u64map_put(&t->persisting, rep->mem_handle, ps)) {
		free(ps);
		return;
	}
	ps->handle = rep->mem_handle;
	ps->weight = fkv_weight(rep->mem_len);
	ps->deadline_ms = fkv_routes_now_ms(t) + t->ttl_ms;
	fkv_list_add_tail(&ps->link, &t->persisting_list);
	t->persisting_bytes += ps->weight;
	rep->persisting = true;
}

/* Forget that @rep is persisting (its memory handle is still set). */
static void persisting_del(struct fkv_routes *t, struct fkv_replica *rep)
{
	struct fkv_persisting *ps;

	if (!rep->persisting)
		return;
	rep->persisting = false;
	ps = fkv_u64map_del(&t->persisting, rep->mem_handle);
	if (!ps)
		return;
	fkv_list_del(&ps->link);
	t->persisting_bytes -= ps->weight;
	free(ps);
}

/* The persist of @rep is over: it becomes evictable. */
static void persisting_end(struct fkv_routes *t, struct fkv_route *r,
			   struct fkv_replica *rep, bool expired)
{
	persisting_del(t, rep);
	if (t->ops->settled)
		t->ops->settled(t->arg, r, rep, expired);
}

/* Drop a replica's memory copy (the slot itself stays). */
static void drop_mem(struct fkv_routes *t, struct fkv_replica *rep)
{
	uint64_t handle = rep->mem_handle, w = fkv_weight(rep->mem_len);

	if (!handle)
		return;
	/* Dropped while persisting: there is nothing left to settle. */
	persisting_del(t, rep);
	fkv_u64map_del(&t->by_handle, handle);
	t->used_by[rep->node] -= w;
	tenant_add(t, route_of(rep), -1, true, rep->mem_len, false, 0);
	rep->mem_handle = 0;
	rep->mem_len = 0;
	t->ops->drop(t->arg, handle, w);
}

/* Forget a replica's SSD copy (the owner's ring entry is the owner's). */
static void drop_ssd(struct fkv_routes *t, struct fkv_replica *rep)
{
	if (!rep->ssd)
		return;
	t->nssd--;
	t->ssd_bytes -= rep->ssd_len;
	tenant_add(t, route_of(rep), -1, false, 0, true, rep->ssd_len);
	rep->ssd = false;
	rep->ssd_len = 0;
}

static void remove_replica_slot(struct fkv_route *r, uint32_t i)
{
	uint32_t j;

	fkv_list_del(&r->replicas[i].node_link);
	for (j = i + 1; j < r->nreplicas; j++) {
		struct fkv_replica *to = &r->replicas[j - 1];

		*to = r->replicas[j];
		to->slot = (uint8_t)(j - 1);
		/* its neighbours (other keys' replicas, the head) follow */
		to->node_link.next->prev = &to->node_link;
		to->node_link.prev->next = &to->node_link;
	}
	r->nreplicas--;
	memset(&r->replicas[r->nreplicas], 0, sizeof(r->replicas[0]));
}

/* Drop every replica of a visible route; it becomes invisible. */
static void drop_all(struct fkv_routes *t, struct fkv_route *r)
{
	uint32_t i;

	if (!r->nreplicas)
		return;
	for (i = 0; i < r->nreplicas; i++) {
		drop_mem(t, &r->replicas[i]);
		if (r->replicas[i].ssd && t->ops->drop_ssd)
			t->ops->drop_ssd(t->arg, r->replicas[i].node, r);
		drop_ssd(t, &r->replicas[i]);
		fkv_list_del(&r->replicas[i].node_link);
	}
	memset(r->replicas, 0, sizeof(r->replicas));
	r->nreplicas = 0;
	visible_add(t, r, -1);
}

/*
 * Make @r's route {put_id, {@node: tomb_tag, handle, len, persist}} unless
 * a newer version was published or deleted meanwhile (0).  1: published,
 * the previous version's replicas dropped; -errno (nothing changed).
 */
static int publish(struct fkv_routes *t, struct fkv_route *r, uint32_t node,
		   uint64_t put_id, uint64_t handle, uint64_t len,
		   bool persist, uint64_t tomb_tag,
		   const struct fkv_route **routep)
{
	struct fkv_replica *rep;
	int err;

	if (r->put_id > put_id) {
		maybe_free_entry(t, r);
		return 0;
	}
	err = fkv_u64map_put(&t->by_handle, handle, r);
	if (err) {
		maybe_free_entry(t, r);
		return err;
	}
	drop_all(t, r);
	r->put_id = put_id;
	r->nreplicas = 1;
	rep = &r->replicas[0];
	rep->node = node;
	rep->tomb_tag = tomb_tag;
	rep->mem_handle = handle;
	rep->mem_len = len;
	rep->persist = persist;
	replica_link(t, r, 0);
	t->used_by[node] += fkv_weight(len);
	tenant_add(t, r, 1, true, len, false, 0);
	visible_add(t, r, 1);
	if (persist)
		persisting_add(t, rep);
	if (routep)
		*routep = r;
	return 1;
}

int fkv_routes_put_done(struct fkv_routes *t, const void *key, size_t key_len,
			uint64_t put_id, uint64_t handle, uint64_t len,
			uint64_t tomb_tag, const struct fkv_route **routep)
{
	struct fkv_inflight *p;
	struct fkv_route *r;
	uint32_t node;
	bool persist;

	if (!fkv_key_valid(key, key_len) || !put_id || !handle || !len ||
	    len > FLUXONKV_VALUE_MAX)
		return -EINVAL;
	p = find_inflight(t, put_id);
	if (!p)
		return put_id > t->last_put_id ? -EINVAL : -ETIMEDOUT;
	r = p->route;
	if (!key_eq(r, key, key_len))
		return -EINVAL;

	persist = p->persist;
	node = p->node;
	finish_inflight(t, p);
	return publish(t, r, node, put_id, handle, len, persist, tomb_tag,
		       routep);
}

int fkv_routes_publish_local(struct fkv_routes *t, uint32_t node,
			     const void *key, size_t key_len, uint64_t put_id,
			     uint64_t handle, uint64_t len, bool persist,
			     uint64_t tomb_tag, const struct fkv_route **routep)
{
	const struct fkv_replica *rep;
	struct fkv_route *r;

	if (!fkv_key_valid(key, key_len) || !put_id || !handle || !len ||
	    len > FLUXONKV_VALUE_MAX || node >= FKV_ROUTE_NODES)
		return -EINVAL;
	fkv_routes_note_put_id(t, put_id);
	r = get_entry(t, key, key_len);
	if (!r)
		return -ENOMEM;
	if (r->put_id == put_id) {
		/* Adopted from the module's DUMP before its note came. */
		rep = fkv_routes_replica_of(r, node);
		if (rep && rep->mem_handle == handle)
			return -EALREADY;
	}
	return publish(t, r, node, put_id, handle, len, persist, tomb_tag,
		       routep);
}

const struct fkv_route *fkv_routes_lookup(const struct fkv_routes *t,
					  const void *key, size_t key_len)
{
	const struct fkv_route *r;

	if (!fkv_key_valid(key, key_len))
		return NULL;
	r = find_entry(t, key, key_len);
	return r && r->nreplicas ? r : NULL;
}

const struct fkv_route *fkv_routes_by_handle(const struct fkv_routes *t,
					     uint64_t handle)
{
	return handle ? fkv_u64map_get(&t->by_handle, handle) : NULL;
}

const struct fkv_replica *fkv_routes_local(const struct fkv_routes *t,
					   const struct fkv_route *r)
{
	return fkv_routes_replica_of(r, t->node);
}

const struct fkv_replica *fkv_routes_replica_of(const struct fkv_route *r,
						uint32_t node)
{
	uint32_t i;

	for (i = 0; i < r->nreplicas; i++)
		if (r->replicas[i].node == node)
			return &r->replicas[i];
	return NULL;
}

int fkv_routes_delete(struct fkv_routes *t, const void *key, size_t key_len,
		      uint64_t *put_id)
{
	struct fkv_route *r;

	if (!fkv_key_valid(key, key_len))
		return -EINVAL;
	r = find_entry(t, key, key_len);
	if (!r || !r->nreplicas)
		return -ENOENT;
	*put_id = r->put_id;
	drop_all(t, r);
	/* r->put_id stays: in-flight older puts must not resurrect the key. */
	maybe_free_entry(t, r);
	return 0;
}

/* Remove replica slots that hold nothing; free the entry if none is left. */
static void compact(struct fkv_routes *t, struct fkv_route *r)
{
	uint32_t i = 0;

	if (!r->nreplicas)
		return;
	while (i < r->nreplicas) {
		if (!r->replicas[i].mem_handle && !r->replicas[i].ssd)
			remove_replica_slot(r, i);
		else
			i++;
	}
	if (!r->nreplicas) {
		visible_add(t, r, -1);
		maybe_free_entry(t, r);
	}
}

int fkv_routes_drop_handle(struct fkv_routes *t, uint64_t handle)
{
	struct fkv_route *r = handle ? fkv_u64map_get(&t->by_handle, handle)
				     : NULL;
	uint32_t i;

	if (!r)
		return -ENOENT;
	for (i = 0; i < r->nreplicas; i++) {
		if (r->replicas[i].mem_handle == handle) {
			drop_mem(t, &r->replicas[i]);
			break;
		}
	}
	compact(t, r);
	return 0;
}

/* @node's replica of a visible route at version @put_id, or NULL. */
static struct fkv_replica *of_version(struct fkv_routes *t, uint32_t node,
				      const void *key, size_t key_len,
				      uint64_t put_id,
				      struct fkv_route **routep)
{
	struct fkv_route *r = find_entry(t, key, key_len);
	uint32_t i;

	if (!r || !r->nreplicas || r->put_id != put_id)
		return NULL;
	for (i = 0; i < r->nreplicas; i++) {
		if (r->replicas[i].node == node) {
			*routep = r;
			return &r->replicas[i];
		}
	}
	return NULL;
}

int fkv_routes_ssd_commit(struct fkv_routes *t, const void *key,
			  size_t key_len, uint64_t put_id, uint64_t len,
			  uint64_t live_tag)
{
	return fkv_routes_ssd_commit_on(t, t->node, key, key_len, put_id, len,
					live_tag);
}

int fkv_routes_ssd_commit_on(struct fkv_routes *t, uint32_t node,
			     const void *key, size_t key_len, uint64_t put_id,
			     uint64_t len, uint64_t live_tag)
{
	struct fkv_replica *rep;
	struct fkv_route *r;

	if (!fkv_key_valid(key, key_len) || !put_id || !len ||
	    len > FLUXONKV_VALUE_MAX)
		return -EINVAL;
	rep = of_version(t, node, key, key_len, put_id, &r);
	if (!rep)
		return 0;
	/*
	 * A second copy of a version the route has an SSD copy of already
	 * (a persist done again after a restart, racing the first one's
	 * late commit) took that copy's place in the owner's ring: it is
	 * the SSD copy now, even if the memory replica was evicted since.
	 */
	if (rep->tomb_tag != live_tag ||
	    !((rep->mem_handle && rep->mem_len == len) ||
	      (rep->ssd && rep->ssd_len == len))) {
		/* Not taken, but the persist of this version is over. */
		if (rep->persisting)
			persisting_end(t, r, rep, false);
		return 0;
	}
	if (!rep->ssd) {
		t->nssd++;
		rep->ssd = true;
	} else {
		t->ssd_bytes -= rep->ssd_len;	/* a repeated commit */
		tenant_add(t, r, -1, false, 0, true, rep->ssd_len);
	}
	rep->ssd_len = len;
	t->ssd_bytes += len;
	tenant_add(t, r, 1, false, 0, true, len);
	if (rep->persisting)
		persisting_end(t, r, rep, false);
	return 1;
}

int fkv_routes_persisting_begin(struct fkv_routes *t, uint32_t node,
				const void *key, size_t key_len,
				uint64_t put_id, uint64_t handle)
{
	struct fkv_replica *rep;
	struct fkv_route *r;

	if (!fkv_key_valid(key, key_len) || !put_id || !handle)
		return 0;
	rep = of_version(t, node, key, key_len, put_id, &r);
	if (!rep || rep->mem_handle != handle || rep->persisting)
		return 0;
	rep->persist = true;
	persisting_add(t, rep);
	return rep->persisting;
}

int fkv_routes_persist_failed(struct fkv_routes *t, const void *key,
			      size_t key_len, uint64_t put_id)
{
	return fkv_routes_persist_failed_on(t, t->node, key, key_len, put_id);
}

int fkv_routes_persist_failed_on(struct fkv_routes *t, uint32_t node,
				 const void *key, size_t key_len,
				 uint64_t put_id)
{
	struct fkv_replica *rep;
	struct fkv_route *r;

	if (!fkv_key_valid(key, key_len) || !put_id)
		return -EINVAL;
	rep = of_version(t, node, key, key_len, put_id, &r);
	if (!rep || !rep->persisting)
		return 0;
	persisting_end(t, r, rep, false);
	return 1;
}

int fkv_routes_promote(struct fkv_routes *t, const void *key, size_t key_len,
		       uint64_t put_id, uint64_t handle, uint64_t len,
		       uint64_t live_tag, const struct fkv_route **routep)
{
	return fkv_routes_promote_on(t, t->node, key, key_len, put_id, handle,
				     len, live_tag, routep);
}

/* Some replica of @r other than @except holds @len bytes of its version. */
static bool has_copy_of_len(const struct fkv_route *r,
			    const struct fkv_replica *except, uint64_t len)
{
	uint32_t i;

	for (i = 0; i < r->nreplicas; i++) {
		const struct fkv_replica *o = &r->replicas[i];

		if (o != except && ((o->mem_handle && o->mem_len == len) ||
				    (o->ssd && o->ssd_len == len)))
			return true;
	}
	return false;
}

int fkv_routes_promote_on(struct fkv_routes *t, uint32_t node,
			  const void *key, size_t key_len, uint64_t put_id,
			  uint64_t handle, uint64_t len, uint64_t live_tag,
			  const struct fkv_route **routep)
{
	struct fkv_replica *rep;
	struct fkv_route *r = NULL;
	int err;

	if (!fkv_key_valid(key, key_len) || !put_id || !handle || !len ||
	    len > FLUXONKV_VALUE_MAX || node >= FKV_ROUTE_NODES)
		return -EINVAL;
	rep = of_version(t, node, key, key_len, put_id, &r);
	if (rep) {
		/* Its own SSD copy refilled, or another node's copy pulled. */
		if (rep->mem_handle || rep->tomb_tag != live_tag ||
		    !((rep->ssd && rep->ssd_len == len) ||
		      has_copy_of_len(r, rep, len)))
			return 0;
	} else {
		/* A new copy on @node of a version another node holds. */
		r = find_entry(t, key, key_len);
		if (!r || !r->nreplicas || r->put_id != put_id ||
		    r->nreplicas == FKV_ROUTE_MAX_REPLICAS ||
		    !has_copy_of_len(r, NULL, len))
			return 0;
	}
	err = fkv_u64map_put(&t->by_handle, handle, r);
	if (err)
		return err;
	if (!rep) {
		rep = &r->replicas[r->nreplicas++];
		memset(rep, 0, sizeof(*rep));
		rep->node = node;
		rep->tomb_tag = live_tag;
		replica_link(t, r, r->nreplicas - 1);
	}
	rep->mem_handle = handle;
	rep->mem_len = len;
	t->used_by[node] += fkv_weight(len);
	tenant_add(t, r, 1, true, len, false, 0);
	if (routep)
		*routep = r;
	return 1;
}

int fkv_routes_adopt_on(struct fkv_routes *t, uint32_t node, const void *key,
			size_t key_len, uint64_t put_id, uint64_t handle,
			uint64_t len, bool ssd, uint64_t tomb_tag,
			uint64_t floor, const struct fkv_route **routep)
{
	struct fkv_replica *rep = NULL;
	struct fkv_route *r;
	uint32_t i;
	int err;

	if (!fkv_key_valid(key, key_len) || !put_id || !len ||
	    len > FLUXONKV_VALUE_MAX || node >= FKV_ROUTE_NODES ||
	    (!handle && !ssd))
		return -EINVAL;
	if (put_id > t->last_put_id)
		return -EINVAL;		/* a version never issued */
	r = get_entry(t, key, key_len);
	if (!r)
		return -ENOMEM;
	/* ... or one the route forgot with its entry (tombstones) */
	if (tomb_of(t, r->hash) > floor)
		floor = tomb_of(t, r->hash);
	/* A newer version (or a delete) won; or one that might have. */
	if (r->put_id > put_id ||
	    (put_id <= floor && !(r->nreplicas && r->put_id == put_id))) {
		maybe_free_entry(t, r);
		return 0;
	}
	if (r->put_id < put_id) {
		drop_all(t, r);		/* older copies elsewhere */
		r->put_id = put_id;
	}
	for (i = 0; i < r->nreplicas; i++)
		if (r->replicas[i].node == node)
			rep = &r->replicas[i];
	if (rep && ((handle && rep->mem_handle) || rep->tomb_tag != tomb_tag))
		return 0;	/* a copy of it here already: keep that one */
	if (!rep && r->nreplicas == FKV_ROUTE_MAX_REPLICAS)
		return 0;
	if (handle) {
		err = fkv_u64map_put(&t->by_handle, handle, r);
		if (err) {
			maybe_free_entry(t, r);
			return err;
		}
	}
	if (!rep) {
		rep = &r->replicas[r->nreplicas++];
		memset(rep, 0, sizeof(*rep));
		rep->node = node;
		rep->tomb_tag = tomb_tag;
		replica_link(t, r, r->nreplicas - 1);
		if (r->nreplicas == 1)
			visible_add(t, r, 1);
	}
	if (handle) {
		rep->mem_handle = handle;
		rep->mem_len = len;
		t->used_by[node] += fkv_weight(len);
		tenant_add(t, r, 1, true, len, false, 0);
	}
	if (ssd && !rep->ssd) {
		rep->ssd = true;
		rep->ssd_len = len;
		t->nssd++;
		t->ssd_bytes += len;
		tenant_add(t, r, 1, false, 0, true, len);
	}
	if (routep)
		*routep = r;
	return 1;
}

int fkv_routes_clear_ssd(struct fkv_routes *t, const void *key,
			 size_t key_len, uint64_t put_id)
{
	return fkv_routes_clear_ssd_on(t, FKV_ROUTE_ANY_NODE, key, key_len,
				       put_id);
}

int fkv_routes_clear_ssd_on(struct fkv_routes *t, uint32_t node,
			    const void *key, size_t key_len, uint64_t put_id)
{
	struct fkv_route *r;
	bool found = false;
	uint32_t i;

	if (!fkv_key_valid(key, key_len))
		return -EINVAL;
	r = find_entry(t, key, key_len);
	if (!r || !r->nreplicas || r->put_id != put_id)
		return -ENOENT;
	for (i = 0; i < r->nreplicas; i++) {
		if (r->replicas[i].ssd &&
		    (node == FKV_ROUTE_ANY_NODE || r->replicas[i].node == node)) {
			drop_ssd(t, &r->replicas[i]);
			found = true;
		}
	}
	compact(t, r);
	return found ? 0 : -ENOENT;
}

/* Forget a dead instance's replica: no DROP_REPLICA, ops->forget instead. */
static void forget_replica(struct fkv_routes *t, struct fkv_replica *rep)
{
	uint64_t handle = rep->mem_handle, w = fkv_weight(rep->mem_len);

	drop_ssd(t, rep);
	if (!handle)
		return;
	persisting_del(t, rep);
	fkv_u64map_del(&t->by_handle, handle);
	t->used_by[rep->node] -= w;
	tenant_add(t, route_of(rep), -1, true, rep->mem_len, false, 0);
	rep->mem_handle = 0;
	rep->mem_len = 0;
	if (t->ops->forget)
		t->ops->forget(t->arg, handle, w);
}

size_t fkv_routes_forget_stale(struct fkv_routes *t, uint64_t live_tag)
{
	return fkv_routes_forget_node(t, t->node, live_tag);
}

size_t fkv_routes_forget_node(struct fkv_routes *t, uint32_t node,
			      uint64_t live_tag)
{
	bool more;

	return fkv_routes_forget_node_some(t, node, live_tag, SIZE_MAX, &more);
}

size_t fkv_routes_forget_node_some(struct fkv_routes *t, uint32_t node,
				   uint64_t live_tag, size_t max, bool *more)
{
	struct fkv_list *l, *next, *head;
	size_t n = 0;

	*more = false;
	if (node >= FKV_ROUTE_NODES)
		return 0;
	t->forgetting = true;	/* no version changes: no tombstones */
	for (l = fkv_list_first(&t->inflight_list); l; l = next) {
		struct fkv_inflight *p =
			fkv_container_of(l, struct fkv_inflight, link);
		struct fkv_route *r = p->route;

		next = fkv_list_next(&t->inflight_list, l);
		/* Placed on it, or started by it (placed elsewhere). */
		if (p->node != node && p->origin != node)
			continue;
		finish_inflight(t, p);
		maybe_free_entry(t, r);
	}
	/*
	 * Its own list only.  compact() unlinks the emptied slot and moves
	 * the route's later slots -- other nodes' replicas, never @next
	 * (one replica per node and key) -- and may free the route.
	 */
	head = &t->by_node[node];
	for (l = head->next; l != head; l = next) {
		struct fkv_replica *rep =
			fkv_container_of(l, struct fkv_replica, node_link);

		next = l->next;
		if (live_tag && rep->tomb_tag == live_tag)
			continue;
		if (n == max) {
			*more = true;
			break;
		}
		forget_replica(t, rep);
		n++;
		compact(t, route_of(rep));
	}
	t->forgetting = false;
	return n;
}

unsigned int fkv_routes_sweep(struct fkv_routes *t)
{
	uint64_t now = fkv_routes_now_ms(t);
	unsigned int n = 0;
	struct fkv_list *l;

	move_buckets(t, FKV_ROUTES_MOVE_PER_SWEEP);
	while ((l = fkv_list_first(&t->inflight_list))) {
		struct fkv_inflight *p =
			fkv_container_of(l, struct fkv_inflight, link);
		struct fkv_route *r = p->route;

		if (p->deadline_ms > now)
			break;
		if (t->ops->expired)
			t->ops->expired(t->arg, r, p->put_id);
		finish_inflight(t, p);
		maybe_free_entry(t, r);
		n++;
	}
	return n;
}

unsigned int fkv_routes_sweep_persisting(struct fkv_routes *t)
{
	uint64_t now = fkv_routes_now_ms(t);
	unsigned int n = 0;
	struct fkv_list *l;

	while ((l = fkv_list_first(&t->persisting_list))) {
		struct fkv_persisting *ps =
			fkv_container_of(l, struct fkv_persisting, link);
		struct fkv_route *r = fkv_u64map_get(&t->by_handle,
						     ps->handle);
		struct fkv_replica *rep = NULL;
		uint32_t i;

		if (ps->deadline_ms > now)
			break;
		for (i = 0; r && i < r->nreplicas; i++)
			if (r->replicas[i].mem_handle == ps->handle)
				rep = &r->replicas[i];
		if (rep && rep->persisting) {
			persisting_end(t, r, rep, true);
		} else {
			/* Cannot happen: drops forget their entry. */
			fkv_u64map_del(&t->persisting, ps->handle);
			fkv_list_del(&ps->link);
			t->persisting_bytes -= ps->weight;
			free(ps);
		}
		n++;
	}
	return n;
}

int64_t fkv_routes_next_expiry_ms(const struct fkv_routes *t)
{
	struct fkv_list *l = fkv_list_first(&t->inflight_list);
	struct fkv_list *lp = fkv_list_first(&t->persisting_list);
	uint64_t now, deadline;

	if (!l && !lp)
		return -1;
	deadline = UINT64_MAX;
	if (l)
		deadline = fkv_container_of(l, struct fkv_inflight,
					    link)->deadline_ms;
	if (lp && fkv_container_of(lp, struct fkv_persisting,
				   link)->deadline_ms < deadline)
		deadline = fkv_container_of(lp, struct fkv_persisting,
					    link)->deadline_ms;
	now = fkv_routes_now_ms(t);
	return deadline > now ? (int64_t)(deadline - now) : 0;
}

uint64_t fkv_routes_capacity(const struct fkv_routes *t)
{
	return t->capacity;
}

uint64_t fkv_routes_used(const struct fkv_routes *t)
{
	return t->used_by[t->node];
}

uint64_t fkv_routes_reserved(const struct fkv_routes *t)
{
	return t->reserved_by[t->node];
}

uint64_t fkv_routes_node_used(const struct fkv_routes *t, uint32_t node)
{
	return node < FKV_ROUTE_NODES ? t->used_by[node] : 0;
}

uint64_t fkv_routes_node_reserved(const struct fkv_routes *t, uint32_t node)
{
	return node < FKV_ROUTE_NODES ? t->reserved_by[node] : 0;
}

size_t fkv_routes_count(const struct fkv_routes *t)
{
	return t->nvisible;
}

size_t fkv_routes_mem_count(const struct fkv_routes *t)
{
	return fkv_u64map_count(&t->by_handle);
}

size_t fkv_routes_ssd_count(const struct fkv_routes *t)
{
	return t->nssd;
}

uint64_t fkv_routes_ssd_bytes(const struct fkv_routes *t)
{
	return t->ssd_bytes;
}

size_t fkv_routes_inflight(const struct fkv_routes *t)
{
	return fkv_u64map_count(&t->inflight);
}

size_t fkv_routes_persisting_count(const struct fkv_routes *t)
{
	return fkv_u64map_count(&t->persisting);
}

uint64_t fkv_routes_persisting_bytes(const struct fkv_routes *t)
{
	return t->persisting_bytes;
}

void fkv_routes_note_put_id(struct fkv_routes *t, uint64_t put_id)
{
	if (put_id > t->last_put_id)
		t->last_put_id = put_id;
}

uint64_t fkv_routes_last_put_id(const struct fkv_routes *t)
{
	return t->last_put_id;
}

/*
 * Debug consistency check (the protocol fuzzer runs it after every
 * message): walks every key entry and recounts what the table keeps
 * incrementally.  0, or a negative code naming the first broken rule.
 * O(entries + in-flight puts): for tests, not the daemon's hot path.
 */
/* Each tenant's counted totals against a walk of its routes. */
static int tenant_walk(void *arg, const struct fkv_route *r)
{
	struct fkv_route_tenant *w = arg;
	uint32_t i;

	if (fkv_route_tenant_of(r) != w->tenant)
		return 0;
	if (r->nreplicas)
		w->keys++;
	for (i = 0; i < r->nreplicas; i++) {
		const struct fkv_replica *rep = &r->replicas[i];

		if (rep->mem_handle) {
			w->dram_bytes += fkv_weight(rep->mem_len);
			w->dram_replicas++;
		}
		if (rep->ssd) {
			w->ssd_bytes += rep->ssd_len;
			w->ssd_replicas++;
		}
	}
	return 0;
}

static int tenants_check(const struct fkv_routes *t, uint64_t ssd_bytes,
			 const uint64_t *used)
{
	uint64_t dram = 0, ssd = 0, key;
	size_t pos = 0;
	uint32_t n;
	void *val;

	if (t->tenants_lost)
		return -1;
	while (!fkv_u64map_next(&t->tenants, &pos, &key, &val)) {
		const struct fkv_route_tenant *a = val;
		struct fkv_route_tenant w = { .tenant = (uint32_t)(key - 1) };

		fkv_routes_for_each_route(t, tenant_walk, &w);
		if (w.dram_bytes != a->dram_bytes ||
		    w.dram_replicas != a->dram_replicas ||
		    w.ssd_bytes != a->ssd_bytes ||
		    w.ssd_replicas != a->ssd_replicas || w.keys != a->keys ||
		    a->tenant != w.tenant ||
		    (!a->dram_replicas && !a->ssd_replicas && !a->keys))
			return -1;
		dram += a->dram_bytes;
		ssd += a->ssd_bytes;
	}
	/* ... and no tenant with replicas is missing */
	for (n = 0; n < FKV_ROUTE_NODES; n++)
		dram -= used[n];
	return dram || ssd != ssd_bytes ? -1 : 0;
}

int fkv_routes_check(const struct fkv_routes *t)
{
	uint64_t used[FKV_ROUTE_NODES] = { 0 }, reserved[FKV_ROUTE_NODES] = { 0 };
	size_t entries = 0, visible = 0, mem = 0, nssd = 0, npersisting = 0;
	size_t ninflight = 0, nreplicas = 0, listed = 0;
	uint64_t ssd_bytes = 0, persisting_bytes = 0;
	const struct fkv_list *l;
	size_t b, pos = 0;
	uint32_t i, n;
	uint64_t key;
	void *val;

	if (t->old && t->moved >= t->nold)
		return -1;
	for (b = 0; b < nchains(t); b++) {
		const struct fkv_route *r;

		for (r = *chain_at(t, b); r; r = r->next) {
			entries++;
			if (chain_of(t, r->hash) != chain_at(t, b))
				return -1;	/* chained in the wrong bucket */
			if (!r->key_len || r->key_len > FLUXONKV_KEY_MAX)
				return -2;
			if (r->nreplicas > FKV_ROUTE_MAX_REPLICAS)
				return -3;
			if (r->nreplicas)
				visible++;
			nreplicas += r->nreplicas;
			for (i = 0; i < r->nreplicas; i++) {
				const struct fkv_replica *rep = &r->replicas[i];

				if (rep->node >= FKV_ROUTE_NODES)
					return -4;
				/* on a list, its slot number right */
				if (rep->slot != i ||
				    rep->node_link.next->prev != &rep->node_link ||
				    rep->node_link.prev->next != &rep->node_link)
					return -18;
				/* one replica per node and key */
				for (n = 0; n < i; n++)
					if (r->replicas[n].node == rep->node)
						return -5;
				if (rep->ssd) {
					nssd++;
					ssd_bytes += rep->ssd_len;
				}
				if (rep->persisting) {
					if (!rep->mem_handle ||
					    !fkv_u64map_get(&t->persisting,
							    rep->mem_handle))
						return -6;
					npersisting++;
				}
				if (!rep->mem_handle)
					continue;
				mem++;
				used[rep->node] += fkv_weight(rep->mem_len);
				if (fkv_u64map_get(&t->by_handle,
						   rep->mem_handle) != r)
					return -7;	/* handle index stale */
			}
		}
	}
	if (entries != t->nentries)
		return -8;
	/* each node's list holds exactly its replicas */
	for (n = 0; n < FKV_ROUTE_NODES; n++) {
		for (l = t->by_node[n].next; l != &t->by_node[n]; l = l->next) {
			const struct fkv_replica *rep = fkv_container_of(
				l, const struct fkv_replica, node_link);
			const struct fkv_route *r = route_of(rep);

			if (rep->node != n || rep->slot >= r->nreplicas ||
			    &r->replicas[rep->slot] != rep ||
			    l->next->prev != l || ++listed > nreplicas)
				return -19;
		}
	}
	if (listed != nreplicas)
		return -19;
	if (visible != t->nvisible)
		return -9;
	if (mem != fkv_u64map_count(&t->by_handle))
		return -10;
	if (nssd != t->nssd || ssd_bytes != t->ssd_bytes)
		return -11;
	if (tenants_check(t, ssd_bytes, used))
		return -20;
	for (n = 0; n < FKV_ROUTE_NODES; n++)
		if (used[n] != t->used_by[n])
			return -12;
	for (l = t->inflight_list.next; l != &t->inflight_list; l = l->next) {
		const struct fkv_inflight *p =
			fkv_container_of(l, struct fkv_inflight, link);

		if (p->node >= FKV_ROUTE_NODES ||
		    fkv_u64map_get(&t->inflight, p->put_id) != p)
			return -13;
		reserved[p->node] += p->reserved;
		ninflight++;
	}
	if (ninflight != fkv_u64map_count(&t->inflight))
		return -17;
	for (n = 0; n < FKV_ROUTE_NODES; n++)
		if (reserved[n] != t->reserved_by[n])
			return -14;
	if (npersisting != fkv_u64map_count(&t->persisting))
		return -15;
	while (!fkv_u64map_next(&t->persisting, &pos, &key, &val))
		persisting_bytes += ((const struct fkv_persisting *)val)->weight;
	if (persisting_bytes != t->persisting_bytes)
		return -16;
	return 0;
}

int fkv_routes_for_each(const struct fkv_routes *t, fkv_routes_key_fn fn,
			void *arg)
{
	size_t i;
	struct fkv_route *r;
	int err;

	/* While the table grows, old[moved..nold) still hold entries. */
	for (i = t->old ? t->moved : 0; t->old && i < t->nold; i++)
		for (r = t->old[i]; r; r = r->next)
			if (r->nreplicas && (err = fn(arg, r->key, r->key_len)))
				return err;
	for (i = 0; i < t->nbuckets; i++)
		for (r = t->buckets[i]; r; r = r->next)
			if (r->nreplicas && (err = fn(arg, r->key, r->key_len)))
				return err;
	return 0;
}

int fkv_routes_for_each_route(const struct fkv_routes *t,
			      fkv_routes_route_fn fn, void *arg)
{
	size_t i;
	struct fkv_route *r;
	int err;

	for (i = t->old ? t->moved : 0; t->old && i < t->nold; i++)
		for (r = t->old[i]; r; r = r->next)
			if (r->nreplicas && (err = fn(arg, r)))
				return err;
	for (i = 0; i < t->nbuckets; i++)
		for (r = t->buckets[i]; r; r = r->next)
			if (r->nreplicas && (err = fn(arg, r)))
				return err;
	return 0;
}
