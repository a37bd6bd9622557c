// SPDX-License-Identifier: GPL-2.0
/*
 * master.c - upcall semantics of the master role (master.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/tenant.h"
#include "list.h"
#include "log.h"
#include "master.h"
#include "term.h"
#include "u64map.h"

/*
 * One owner node: the segment it offers, its eviction policy (each node's
 * DRAM is evicted on its own) and its live incarnation (tomb tag).
 */
struct fkv_mnode {
	bool live;
	uint64_t incarnation;	/* the owner's live tomb tag */
	uint64_t capacity;	/* segment bytes */
	uint64_t ssd_capacity;	/* the owner's SSD ring, 0 = none */
	uint64_t high_bytes;	/* evict when used + reserved exceeds this */
	uint64_t low_bytes;	/* ... down to this */
	struct fkv_evict *policy;
	char addr[FKV_MASTER_ADDR_MAX];	/* its data plane address */
	uint64_t remote_gets;	/* gets it served to other nodes */
	uint64_t adopt_floor;	/* its fence from an earlier term (term.h) */
	/*
	 * It left, and replicas of its dead instance are still in the route
	 * table: forgotten a slice per fkv_master_work() (unroutable
	 * meanwhile: replica_live()), all at once before it rejoins.
	 */
	bool forgetting;
	bool evict_more;	/* a watermark pass goes on next turn */
	uint64_t room_debt;	/* NEED_ROOM bytes still to evict, in slices */
	uint64_t room_promised;	/* ... and what those asks wanted in all */
};

/*
 * What one turn of the event loop does at most of a watermark pass, so
 * that no node's requests wait behind it (issue 28: < 100 ms at 10^7
 * keys): ~2-3 us an eviction on a loaded host.  Forgetting: master.h.
 */
#define FKV_EVICT_SLICE		8192

/*
 * A replica another node is pulling (get_holding, reference §4.2): not
 * evicted until the puller's GET_DONE / GET_REVOKE for that version, or
 * FKV_HOLD_MS after the GET_START that chose it.
 */
struct fkv_hold {
	uint64_t handle;	/* the source replica; the SSD owner's node id */
	bool ssd;		/* a push from that node's SSD (REMOTE_SSD) */
	uint32_t puller;	/* the node pulling it */
	uint64_t put_id;
	uint64_t deadline_ms;
	/*
	 * Found three ways, none a scan of every hold (a completion used to
	 * walk them all): by put_id (the completion names it; holds of one
	 * version by several pullers are chained on @next), oldest first
	 * (every hold lives FKV_HOLD_MS, so the order they were taken is
	 * their deadlines' order: the expiry pops from the front), and per
	 * puller (member-left takes that node's).
	 */
	struct fkv_hold *next;	/* same put_id */
	struct fkv_list age;	/* fkv_master.holds_by_age */
	struct fkv_list mine;	/* fkv_master.holds_of[puller] */
};

#define FKV_HOLD_MS	15000
/* Held victims one eviction pass sets aside at most. */
#define FKV_HOLD_SKIP	64

/*
 * A tenant with a quota (issue 30).  Its DRAM replicas are a group of
 * every node's policy (evict.h), so that its own victims come in the
 * policy's order; its SSD copies are queued in the order of their
 * commits (@ssd_fifo, struct quota_ssd), the oldest unrouted first.
 * Entries of copies that went otherwise (overwritten, deleted, evicted
 * by the ring) stay queued until they are popped or the queue is pruned
 * (it is, when it holds twice the tenant's copies): O(1) amortized a
 * commit.
 */
struct quota {
	uint32_t tenant;
	uint64_t dram_bytes, ssd_bytes;	/* 0: no such quota */
	bool recheck;		/* a replica of it became evictable */
	struct fkv_list ssd_fifo;
	size_t nfifo;
};

struct quota_ssd {
	struct fkv_list link;	/* in quota.ssd_fifo, oldest first */
	uint64_t put_id;
	uint32_t node;
	uint16_t key_len;
	uint8_t key[];
};

/* Per-tenant statistics, unsorted, found by a scan (few tenants). */
struct tenant_vec {
	struct fkv_tenant_stats *v;
	size_t n, cap;
};

struct fkv_master {
	const struct fkv_master_ops *ops;
	void *arg;
	const char *policy_name;
	unsigned int high_pct, low_pct;
	uint32_t self;		/* this daemon's node (0 on a single node) */
	uint32_t caller;	/* the node whose upcall is being handled */
	bool evicting;		/* drops now are evictions */
	bool clearing;		/* a CLEAR deletes: no module retires a copy */
	uint64_t evict_hash;	/* ... of the key with this route hash */
	bool local_puts;	/* the module numbers puts: no PUT */
	/* PUT_LOCAL: the replaced replica the module dropped itself */
	uint64_t dropped_by_module;
	struct fkv_routes *routes;
	struct fkv_mnode nodes[FKV_ROUTE_NODES];
	/* In-flight pulls (bounded by the nodes' FETCH limits) ... */
	struct fkv_u64map holds;	/* put_id -> first struct fkv_hold */
	struct fkv_list holds_by_age;
	struct fkv_list holds_of[FKV_ROUTE_NODES];
	size_t nholds;
	/* ... and how many of them each held handle has, for eviction. */
	struct fkv_u64map held_count;
	struct fkv_master_stats st;	/* counters only; see get_stats */
	/* per tenant: counters only (fkv_master_tenant_stats) */
	struct tenant_vec tst;
	bool tst_full_logged;
	/* tenants with a quota, sorted by id */
	struct quota *quotas;
	size_t nquotas;
	bool quota_recheck;	/* some quota's recheck is set */
	bool quota_evicting;	/* evictions now are for a quota */
	uint64_t term;		/* a cluster master's term; 0 on a single node */
};

/*
 * The owner of a memory handle: its node bits (uapi FLUXONKV_HANDLE_NODE)
 * in a cluster; on a single node every handle is ours.
 */
static uint32_t node_of(const struct fkv_master *m, uint64_t handle)
{
	uint32_t n = FLUXONKV_HANDLE_NODE(handle);

	return m->nodes[n].policy ? n : m->self;
}

/*
 * In a cluster a handle the caller reports must be its own (the module
 * stamps its node id into it): accounting goes by the caller, drops by the
 * handle's owner, and the two must agree.
 */
static bool handle_is_callers(const struct fkv_master *m, uint64_t handle)
{
	return !m->self || FLUXONKV_HANDLE_NODE(handle) == m->caller;
}

static struct fkv_mnode *caller(struct fkv_master *m)
{
	return &m->nodes[m->caller];
}

static int quota_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct quota *)a)->tenant;
	uint32_t y = ((const struct quota *)b)->tenant;

	return x < y ? -1 : x > y;
}

/* The quota of @tenant, or NULL (tenant 0 never has one). */
static struct quota *quota_of(const struct fkv_master *m, uint32_t tenant)
{
	struct quota k = { .tenant = tenant };

	if (!tenant || !m->nquotas)
		return NULL;
	return bsearch(&k, m->quotas, m->nquotas, sizeof(k), quota_cmp);
}

/* The policy group of @r's replicas: its tenant if it has a DRAM quota. */
static uint32_t group_of(const struct fkv_master *m, const struct fkv_route *r)
{
	struct quota *q = quota_of(m, fkv_route_tenant_of(r));

	return q && q->dram_bytes ? q->tenant : 0;
}

/* @node's replica @handle of @r enters its policy (evictable from now). */
static int policy_insert(struct fkv_master *m, uint32_t node,
			 const struct fkv_route *r, uint64_t handle,
			 uint64_t len)
{
	return fkv_evict_insert_group(m->nodes[node].policy, handle,
				      fkv_weight(len), r->hash,
				      group_of(m, r));
}

/* route.c gave up a memory replica: forget it in the policy, tell the module. */
static void route_drop(void *arg, uint64_t handle, uint64_t weight)
{
	struct fkv_master *m = arg;

	fkv_evict_remove(m->nodes[node_of(m, handle)].policy, handle);
	m->st.drops++;
	fkv_dbg("drop replica %#llx (%llu bytes%s)",
		(unsigned long long)handle, (unsigned long long)weight,
		m->evicting ? ", evicted" : "");
	if (handle && handle == m->dropped_by_module)
		return;		/* gone already: a local put replaced it */
	if (m->evicting && m->ops->send_evicted) {
		m->ops->send_evicted(m->arg, handle, m->evict_hash);
		return;
	}
	m->ops->send_drop(m->arg, handle,
			  m->evicting ? FLUXONKV_DROP_F_EVICTED : 0);
}

/* The owner instance that held a replica is gone: only the policy cares. */
static void route_forget(void *arg, uint64_t handle, uint64_t weight)
{
	struct fkv_master *m = arg;

	fkv_evict_remove(m->nodes[node_of(m, handle)].policy, handle);
	m->st.forgotten++;
}

static void route_expired(void *arg, const struct fkv_route *r,
			  uint64_t put_id)
{
	struct fkv_master *m = arg;
	char kb[FKV_KEY_FMT_LEN];

	m->st.expired++;
	fkv_info("put %llu of key '%s' expired in flight",
		 (unsigned long long)put_id, fkv_key_fmt(kb, r->key, r->key_len));
}

/*
 * A persisting replica's persist is over (SSD_COMMIT, success or failure) or
 * timed out: from now on it competes for DRAM like any other replica.
 */
static void route_settled(void *arg, const struct fkv_route *r,
			  const struct fkv_replica *rep, bool expired)
{
	struct fkv_master *m = arg;
	char kb[FKV_KEY_FMT_LEN];
	int err;

	if (expired) {
		m->st.persist_expired++;
		fkv_warn("replica %#llx of key '%s' put %llu: no SSD_COMMIT "
			 "within the TTL, now evictable",
			 (unsigned long long)rep->mem_handle,
			 fkv_key_fmt(kb, r->key, r->key_len),
			 (unsigned long long)r->put_id);
	}
	err = policy_insert(m, rep->node, r, rep->mem_handle, rep->mem_len);
	if (err)
		fkv_err("replica %#llx persisted but not evictable: %s",
			(unsigned long long)rep->mem_handle, strerror(-err));
	/* Its tenant may be past its quota with nothing evictable till now. */
	if (group_of(m, r)) {
		quota_of(m, fkv_route_tenant_of(r))->recheck = true;
		m->quota_recheck = true;
	}
}

/* A newer version or a delete retired @node's SSD copy: tell its module. */
static void route_drop_ssd(void *arg, uint32_t node, const struct fkv_route *r)
{
	struct fkv_master *m = arg;

	/*
	 * The caller's module retires its own copies when it learns the
	 * answer (a put published, a delete) or published the put itself:
	 * no message on the put path.  A clear has no module caller.
	 */
	if (node == m->caller && !m->clearing)
		return;
	m->st.ssd_dropped++;
	if (m->ops->send_ssd_drop)
		m->ops->send_ssd_drop(m->arg, node, r->key, r->key_len,
				      r->put_id);
}

static const struct fkv_route_ops master_route_ops = {
	.drop = route_drop,
	.forget = route_forget,
	.expired = route_expired,
	.settled = route_settled,
	.drop_ssd = route_drop_ssd,
};

/* The configured quotas, sorted by tenant; -1 with errno. */
static int quotas_init(struct fkv_master *m,
		       const struct fkv_tenant_config *t, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].id && (t[i].dram_bytes || t[i].ssd_bytes))
			m->nquotas++;
	if (!m->nquotas)
		return 0;
	m->quotas = calloc(m->nquotas, sizeof(*m->quotas));
	if (!m->quotas)
		return -1;
	m->nquotas = 0;
	for (i = 0; i < n; i++) {
		struct quota *q = &m->quotas[m->nquotas];

		if (!t[i].id || (!t[i].dram_bytes && !t[i].ssd_bytes))
			continue;
		q->tenant = t[i].id;
		q->dram_bytes = t[i].dram_bytes;
		q->ssd_bytes = t[i].ssd_bytes;
		m->nquotas++;
	}
	qsort(m->quotas, m->nquotas, sizeof(*m->quotas), quota_cmp);
	for (i = 0; i < m->nquotas; i++)
		fkv_list_init(&m->quotas[i].ssd_fifo);
	return 0;
}

static void quotas_free(struct fkv_master *m)
{
	struct fkv_list *l;
	size_t i;

	for (i = 0; i < m->nquotas; i++)
		while ((l = fkv_list_first(&m->quotas[i].ssd_fifo))) {
			fkv_list_del(l);
			free(fkv_container_of(l, struct quota_ssd, link));
		}
	free(m->quotas);
	m->quotas = NULL;
	m->nquotas = 0;
}

int fkv_master_check_watermarks(unsigned int high_pct, unsigned int low_pct)
{
	if (!low_pct || low_pct > high_pct || high_pct > 100)
		return -EINVAL;
	return 0;
}

static uint64_t pct_of(uint64_t capacity, unsigned int pct)
{
	return capacity / 100 * pct + capacity % 100 * pct / 100;
}

static bool enforce_watermarks(struct fkv_master *m, uint32_t node);
static uint64_t evict_at_most(struct fkv_master *m, uint32_t node,
			      uint32_t group, uint64_t want, size_t max,
			      bool *capped);

int fkv_master_set_watermarks(struct fkv_master *m, unsigned int high_pct,
			      unsigned int low_pct)
{
	uint32_t i;

	if (fkv_master_check_watermarks(high_pct, low_pct))
		return -EINVAL;
	m->high_pct = high_pct;
	m->low_pct = low_pct;
	for (i = 0; i < FKV_ROUTE_NODES; i++) {
		struct fkv_mnode *n = &m->nodes[i];

		if (!n->policy)
			continue;
		n->high_bytes = pct_of(n->capacity, high_pct);
		n->low_bytes = pct_of(n->capacity, low_pct);
		if (n->live)
			enforce_watermarks(m, i);
	}
	return 0;
}

struct fkv_master *fkv_master_create(const struct fkv_master_config *cfg,
				     const struct fkv_master_ops *ops,
				     void *arg)
{
	unsigned int high = cfg->high_pct ? cfg->high_pct
					  : FKV_HIGH_WATERMARK_DEFAULT;
	unsigned int low = cfg->low_pct ? cfg->low_pct
					: FKV_LOW_WATERMARK_DEFAULT;
	struct fkv_route_config rc = {
		.capacity = cfg->capacity,
		.node = cfg->node,
		.ttl_ms = cfg->ttl_ms,
		.now_ms = cfg->now_ms,
		.clock_arg = cfg->clock_arg,
		.hash_secret = cfg->hash_secret,
		.first_put_id = cfg->term ? FKV_PUT_ID(cfg->term, 0)
					  : cfg->first_put_id,
		.tombs = cfg->tombs,
	};
	struct fkv_master *m;
	unsigned int i;
	int err;

	if (!cfg->capacity || !ops || !ops->send_drop ||
	    cfg->node >= FKV_ROUTE_NODES || cfg->term > FKV_TERM_MAX ||
	    fkv_master_check_watermarks(high, low)) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->ops = ops;
	m->arg = arg;
	m->policy_name = cfg->policy ? cfg->policy : "s3fifo";
	m->high_pct = high;
	m->low_pct = low;
	m->self = m->caller = cfg->node;
	m->local_puts = cfg->local_puts;
	m->term = cfg->term;
	fkv_list_init(&m->holds_by_age);
	for (i = 0; i < FKV_ROUTE_NODES; i++)
		fkv_list_init(&m->holds_of[i]);
	if (quotas_init(m, cfg->tenants, cfg->ntenants))
		goto err_free;
	err = fkv_master_node_up(m, cfg->node, cfg->incarnation, cfg->capacity,
				 cfg->ssd_capacity, NULL);
	if (err) {
		errno = -err;
		goto err_free;
	}
	m->routes = fkv_routes_create(&rc, &master_route_ops, m);
	if (!m->routes)
		goto err_policy;
	err = fkv_u64map_init(&m->held_count, 0);
	if (!err) {
		err = fkv_u64map_init(&m->holds, 0);
		if (err)
			fkv_u64map_fini(&m->held_count);
	}
	if (err) {
		fkv_routes_destroy(m->routes);
		errno = -err;
		goto err_policy;
	}
	return m;

err_policy:
	err = errno;
	fkv_evict_destroy(m->nodes[cfg->node].policy);
	errno = err;
err_free:
	err = errno;
	quotas_free(m);
	free(m);
	errno = err;
	return NULL;
}

/* Count one more (@delta 1) or one less (-1) hold on @handle. */
static void held_count_add(struct fkv_master *m, uint64_t handle, int delta)
{
	uintptr_t n = (uintptr_t)fkv_u64map_del(&m->held_count, handle);

	n += (uintptr_t)(intptr_t)delta;
	if (n && fkv_u64map_put(&m->held_count, handle, (void *)n))
		fkv_err("hold count of %#llx lost: out of memory",
			(unsigned long long)handle);
}

/*
 * Hold @handle for @puller's get of @put_id; best effort (no memory: none).
 * With @ssd, @handle is the node whose SSD copy pushes it: nothing to
 * keep from eviction, only the pull's right to revoke that copy.
 */
static void hold_add(struct fkv_master *m, uint64_t handle, uint32_t puller,
		     uint64_t put_id, bool ssd)
{
	struct fkv_hold *h = calloc(1, sizeof(*h));

	if (!h)
		return;
	h->next = fkv_u64map_del(&m->holds, put_id);
	if (fkv_u64map_put(&m->holds, put_id, h)) {
		/* no memory: the chain goes back, this hold is not taken */
		if (h->next && fkv_u64map_put(&m->holds, put_id, h->next))
			fkv_err("holds of put %llu lost: out of memory",
				(unsigned long long)put_id);
		free(h);
		return;
	}
	if (!ssd)
		held_count_add(m, handle, 1);
	h->ssd = ssd;
	h->handle = handle;
	h->puller = puller;
	h->put_id = put_id;
	h->deadline_ms = fkv_routes_now_ms(m->routes) + FKV_HOLD_MS;
	fkv_list_add_tail(&h->age, &m->holds_by_age);
	fkv_list_add_tail(&h->mine, &m->holds_of[puller]);
	m->nholds++;
}

/* End hold @h (its chain of one put_id loses it). */
static void hold_free(struct fkv_master *m, struct fkv_hold *h)
{
	struct fkv_hold *first = fkv_u64map_get(&m->holds, h->put_id), **pp;

	if (first == h) {
		fkv_u64map_del(&m->holds, h->put_id);
		/* the map has the slot just freed: this put cannot fail */
		if (h->next)
			fkv_u64map_put(&m->holds, h->put_id, h->next);
	} else {
		for (pp = &first; *pp && *pp != h; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = h->next;
	}
	fkv_list_del(&h->age);
	fkv_list_del(&h->mine);
	if (!h->ssd)
		held_count_add(m, h->handle, -1);
	free(h);
	m->nholds--;
}

/*
 * Drop the holds @puller has on version @put_id (its GET_DONE or
 * GET_REVOKE came); returns how many went.
 */
static unsigned int holds_release(struct fkv_master *m, uint32_t puller,
				  uint64_t put_id)
{
	struct fkv_hold *h = put_id ? fkv_u64map_get(&m->holds, put_id) : NULL;
	struct fkv_hold *next;
	unsigned int n = 0;

	for (; h; h = next) {
		next = h->next;
		if (h->puller != puller)
			continue;
		hold_free(m, h);
		n++;
	}
	return n;
}

/* Drop the holds past their deadline at @now, oldest first. */
static unsigned int holds_expire(struct fkv_master *m, uint64_t now)
{
	struct fkv_list *l;
	unsigned int n = 0;

	while ((l = fkv_list_first(&m->holds_by_age))) {
		struct fkv_hold *h = fkv_container_of(l, struct fkv_hold, age);

		if (now < h->deadline_ms)
			break;
		hold_free(m, h);
		n++;
	}
	return n;
}

/* @puller holds @handle (@ssd: node) for its get of @put_id (GET_START). */
static bool hold_of(const struct fkv_master *m, uint32_t puller,
		    uint64_t put_id, uint64_t handle, bool ssd)
{
	const struct fkv_hold *h;

	for (h = put_id ? fkv_u64map_get(&m->holds, put_id) : NULL; h;
	     h = h->next)
		if (h->puller == puller && h->handle == handle &&
		    h->ssd == ssd)
			return true;
	return false;
}

static bool held(const struct fkv_master *m, uint64_t handle)
{
	return fkv_u64map_get(&m->held_count, handle) != NULL;
}

void fkv_master_destroy(struct fkv_master *m)
{
	unsigned int i;

	if (!m)
		return;
	holds_expire(m, UINT64_MAX);
	fkv_u64map_fini(&m->holds);
	fkv_u64map_fini(&m->held_count);
	fkv_routes_destroy(m->routes);
	for (i = 0; i < FKV_ROUTE_NODES; i++)
		fkv_evict_destroy(m->nodes[i].policy);
	free(m->tst.v);
	quotas_free(m);
	free(m);
}

/*
 * The entry of @tenant in @w, added (zeroed) if missing; NULL when @w has
 * @max entries already or memory runs out.
 */
static struct fkv_tenant_stats *tenant_vec_get(struct tenant_vec *w,
					       uint32_t tenant, size_t max)
{
	struct fkv_tenant_stats *n;
	size_t i;

	for (i = 0; i < w->n; i++)
		if (w->v[i].tenant == tenant)
			return &w->v[i];
	if (w->n == max)
		return NULL;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 8;

		n = realloc(w->v, cap * sizeof(*n));
		if (!n)
			return NULL;
		w->v = n;
		w->cap = cap;
	}
	n = &w->v[w->n++];
	memset(n, 0, sizeof(*n));
	n->tenant = tenant;
	return n;
}

/* The counters of @key's tenant, or a scratch entry when full. */
static struct fkv_tenant_stats *key_tenant(struct fkv_master *m,
					   const void *key, size_t key_len)
{
	static struct fkv_tenant_stats scratch;
	uint32_t tenant = fkv_key_tenant(key, key_len, NULL);
	struct fkv_tenant_stats *t;

	t = tenant_vec_get(&m->tst, tenant, FKV_MASTER_TENANTS);
	if (t)
		return t;
	if (!m->tst_full_logged)
		fkv_warn("tenant %u: %zu tenants counted already (or no memory): not counted",
			 tenant, m->tst.n);
	m->tst_full_logged = true;
	return &scratch;
}

static int tenant_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct fkv_tenant_stats *)a)->tenant;
	uint32_t y = ((const struct fkv_tenant_stats *)b)->tenant;

	return x < y ? -1 : x > y;
}

/*
 * A tenant's gauges from the route table's running totals (no walk of
 * the routes: a STATS costs O(tenants)).  At most FKV_MASTER_TENANTS
 * tenants are listed (ids in keys are anyone's with a privileged handle).
 */
static int tenant_gauges(void *arg, const struct fkv_route_tenant *a)
{
	struct tenant_vec *w = arg;
	struct fkv_tenant_stats *t;

	t = tenant_vec_get(w, a->tenant, FKV_MASTER_TENANTS);
	if (!t)
		return w->n == FKV_MASTER_TENANTS ? 0 : -ENOMEM;
	t->keys = a->keys;
	t->dram_bytes = a->dram_bytes;
	t->ssd_bytes = a->ssd_bytes;
	return 0;
}

int fkv_master_tenant_stats(const struct fkv_master *m,
			    struct fkv_tenant_stats **out, size_t *n)
{
	struct tenant_vec w = { 0 };
	size_t i;
	int err = -ENOMEM;

	*out = NULL;
	*n = 0;
	/* tenant 0 always, the counted ones, then those found in keys */
	if (!tenant_vec_get(&w, 0, SIZE_MAX))
		goto fail;
	for (i = 0; i < m->tst.n; i++) {
		struct fkv_tenant_stats *t;

		t = tenant_vec_get(&w, m->tst.v[i].tenant, SIZE_MAX);
		if (!t)
			goto fail;
		*t = m->tst.v[i];
	}
	err = fkv_routes_for_each_tenant(m->routes, tenant_gauges, &w);
	if (err)
		goto fail;
	qsort(w.v, w.n, sizeof(*w.v), tenant_cmp);
	*out = w.v;
	*n = w.n;
	return 0;
fail:
	free(w.v);
	return err;
}

int fkv_master_node_up(struct fkv_master *m, uint32_t node,
		       uint64_t incarnation, uint64_t capacity,
		       uint64_t ssd_capacity, const char *addr)
{
	struct fkv_mnode *n;
	size_t forgotten;

	if (node >= FKV_ROUTE_NODES || !capacity)
		return -EINVAL;
	n = &m->nodes[node];
	if (!n->policy) {
		n->policy = fkv_evict_create(m->policy_name, capacity);
		if (!n->policy)
			return -errno;
		n->capacity = capacity;
	}
	if (capacity != n->capacity)
		fkv_warn("node %u: segment %llu bytes, was %llu (kept for the "
			 "policy's queues)", node, (unsigned long long)capacity,
			 (unsigned long long)n->capacity);
	n->high_bytes = pct_of(capacity, m->high_pct);
	n->low_bytes = pct_of(capacity, m->low_pct);
	n->ssd_capacity = ssd_capacity;
	snprintf(n->addr, sizeof(n->addr), "%s", addr ? addr : "");
	if (n->forgetting) {
		/*
		 * Its old replicas go before new ones can take their slots.
		 * The control plane admits no new instance of a node still
		 * being forgotten (fkv_master_node_forgetting()): only a
		 * caller that does not ask pays this at once.
		 */
		forgotten = fkv_routes_forget_node(m->routes, node, 0);
		n->forgetting = false;
		fkv_info("node %u is back: the last %zu replicas of its previous "
			 "instance forgotten at once", node, forgotten);
	}
	if (n->live && n->incarnation != incarnation && m->routes) {
		forgotten = fkv_routes_forget_node(m->routes, node,
						   incarnation);
		fkv_info("node %u restarted (incarnation %#llx): %zu replicas "
			 "of the previous instance forgotten", node,
			 (unsigned long long)incarnation, forgotten);
		m->st.owner_restarts++;
	}
	n->live = true;
	n->incarnation = incarnation;
	return 0;
}

void fkv_master_node_down(struct fkv_master *m, uint32_t node)
{
	struct fkv_mnode *n;
	size_t forgotten;

	if (node >= FKV_ROUTE_NODES || node == m->self)
		return;
	n = &m->nodes[node];
	if (!n->live)
		return;
	n->live = false;
	/*
	 * Its replicas died with it: forgotten without DROP_REPLICA (the
	 * node dropped every reference when it lost the master), and so
	 * are the puts placed on it.  A route left without replicas goes.
	 * No longer live, none is routed to from now on; past the first
	 * slice the rest go in fkv_master_work().
	 */
	forgotten = fkv_routes_forget_node_some(m->routes, node, 0,
						 FKV_FORGET_SLICE,
						 &n->forgetting);
	/* Its pulls will never report back. */
	while (!fkv_list_empty(&m->holds_of[node]))
		hold_free(m, fkv_container_of(m->holds_of[node].next,
					      struct fkv_hold, mine));
	m->st.nodes_left++;
	fkv_info("node %u left: %zu of its replicas forgotten%s", node,
		 forgotten, n->forgetting ? ", the rest in slices" : "");
}

bool fkv_master_node_forgetting(const struct fkv_master *m, uint32_t node)
{
	return node < FKV_ROUTE_NODES && m->nodes[node].forgetting;
}

bool fkv_master_work(struct fkv_master *m)
{
	bool more = false, left;
	uint32_t i;

	for (i = 0; i < FKV_ROUTE_NODES; i++) {
		struct fkv_mnode *n = &m->nodes[i];

		if (n->forgetting) {
			fkv_routes_forget_node_some(m->routes, i, 0,
						    FKV_FORGET_SLICE, &left);
			n->forgetting = left;
			more |= left;
			if (!left)
				fkv_info("node %u: every replica of its "
					 "departed instance forgotten", i);
		}
		if (n->policy && n->evict_more)
			more |= enforce_watermarks(m, i);
		if (n->policy && n->room_debt) {
			bool capped;
			uint64_t got = evict_at_most(m, i, 0, n->room_debt,
						     FKV_EVICT_SLICE, &capped);

			n->room_debt = capped ? n->room_debt - got : 0;
			if (!n->room_debt)
				n->room_promised = 0;
			more |= capped;
		}
	}
	return more;
}

void fkv_master_set_caller(struct fkv_master *m, uint32_t node)
{
	m->caller = node < FKV_ROUTE_NODES && m->nodes[node].policy ?
		    node : m->self;
}

static void evict_one(void *arg, uint64_t handle, uint64_t weight)
{
	struct fkv_master *m = arg;
	const struct fkv_route *r = fkv_routes_by_handle(m->routes, handle);

	m->st.evictions++;
	m->st.evicted_bytes += weight;
	if (m->quota_evicting && r)
		key_tenant(m, r->key, r->key_len)->quota_evictions++;

	/* Drops the route's reference; route_drop sends DROP_REPLICA. */
	m->evict_hash = r ? r->hash : 0;
	m->evicting = true;
	if (fkv_routes_drop_handle(m->routes, handle))
		fkv_err("policy chose replica %#llx that no route names",
			(unsigned long long)handle);
	m->evicting = false;
}

/*
 * Evict by @node's policy until @want bytes of its DRAM are given up, or
 * @max replicas (*@capped: stopped there, short of @want); returns bytes
 * evicted.  @group > 0: that group's replicas only (a tenant's, for its
 * quota), in the policy's order.
 */
static uint64_t evict_at_most(struct fkv_master *m, uint32_t node,
			      uint32_t group, uint64_t want, size_t max,
			      bool *capped)
{
	struct fkv_evict *p = m->nodes[node].policy;
	uint64_t skipped[FKV_HOLD_SKIP][2];
	uint64_t freed = 0, handle, weight;
	unsigned int nskip = 0, i;
	size_t n = 0;

	while (freed < want && n < max &&
	       !(group ? fkv_evict_victim_of(p, group, &handle, &weight)
		       : fkv_evict_victim(p, &handle, &weight))) {
		/* Another node is pulling it: keep it, take the next one. */
		if (nskip < FKV_HOLD_SKIP && held(m, handle)) {
			skipped[nskip][0] = handle;
			skipped[nskip][1] = weight;
			nskip++;
			m->st.held_skips++;
			continue;
		}
		freed += weight;
		evict_one(m, handle, weight);
		n++;
	}
	*capped = n == max && freed < want;
	/* Back into the policy, as if just inserted. */
	for (i = 0; i < nskip; i++) {
		const struct fkv_route *r = fkv_routes_by_handle(m->routes,
								 skipped[i][0]);

		if (r && fkv_evict_insert_group(p, skipped[i][0],
						skipped[i][1], r->hash,
						group_of(m, r)))
			fkv_err("held replica %#llx lost its eviction slot",
				(unsigned long long)skipped[i][0]);
	}
	return freed;
}

/*
 * Evict ahead of need: above the high watermark, go down to the low one,
 * FKV_EVICT_SLICE replicas at a time: a longer pass goes on from
 * fkv_master_work() (true: more to do).  Only replicas the policy tracks
 * are candidates: a caller that must keep one (a just promoted replica)
 * inserts it afterwards.
 */
static bool enforce_watermarks(struct fkv_master *m, uint32_t node)
{
	struct fkv_mnode *n = &m->nodes[node];
	uint64_t used = fkv_routes_node_used(m->routes, node);
	uint64_t need = used + fkv_routes_node_reserved(m->routes, node);
	uint64_t want, got;
	bool capped;

	/* Going down to the low watermark: on until there. */
	if (need <= (n->evict_more ? n->low_bytes : n->high_bytes)) {
		n->evict_more = false;
		return false;
	}
	want = need - n->low_bytes;
	if (want > used)
		want = used;
	got = evict_at_most(m, node, 0, want, FKV_EVICT_SLICE, &capped);
	/* Short of it with victims left: the next turn goes on. */
	n->evict_more = capped;
	fkv_dbg("watermark of node %u: %llu bytes needed of %llu high, "
		"evicted %llu%s", node, (unsigned long long)need,
		(unsigned long long)n->high_bytes, (unsigned long long)got,
		n->evict_more ? ", more next turn" : "");
	return n->evict_more;
}

/*
 * Tenant @tenant past its DRAM quota: its own replicas go, in its group's
 * policy order, @node's first (the node that just took one), then the
 * other nodes', until it is back within the quota.  Persisting replicas
 * are not in a policy: they count, and are taken once they settle
 * (quota_recheck()).  Each eviction is one of the tenant's replicas:
 * O(evicted).
 */
static void enforce_dram_quota(struct fkv_master *m, uint32_t tenant,
			       uint32_t node)
{
	const struct quota *q = quota_of(m, tenant);
	struct fkv_route_tenant a;
	uint32_t i, n;
	bool capped;

	if (!q || !q->dram_bytes)
		return;
	for (i = 0; i <= FKV_ROUTE_NODES; i++) {
		n = i ? i - 1 : node;
		if ((i && n == node) || !m->nodes[n].policy)
			continue;
		fkv_routes_tenant(m->routes, tenant, &a);
		if (a.dram_bytes <= q->dram_bytes)
			return;
		m->quota_evicting = true;
		evict_at_most(m, n, tenant, a.dram_bytes - q->dram_bytes,
			      SIZE_MAX, &capped);
		m->quota_evicting = false;
	}
}

/* After a change to @r's tenant's DRAM replicas on @node. */
static void route_dram_quota(struct fkv_master *m, const struct fkv_route *r,
			     uint32_t node)
{
	if (group_of(m, r))
		enforce_dram_quota(m, fkv_route_tenant_of(r), node);
}

/* Replicas that settled (route_settled) may take their tenants past. */
static void quota_recheck(struct fkv_master *m)
{
	size_t i;

	if (!m->quota_recheck)
		return;
	m->quota_recheck = false;
	for (i = 0; i < m->nquotas; i++) {
		if (!m->quotas[i].recheck)
			continue;
		m->quotas[i].recheck = false;
		enforce_dram_quota(m, m->quotas[i].tenant, m->caller);
	}
}

/* The queued SSD copy @e is still routed (same version, that node). */
static bool quota_ssd_live(const struct fkv_master *m,
			   const struct quota_ssd *e)
{
	const struct fkv_route *r = fkv_routes_lookup(m->routes, e->key,
						      e->key_len);
	const struct fkv_replica *rep;

	if (!r || r->put_id != e->put_id)
		return false;
	rep = fkv_routes_replica_of(r, e->node);
	return rep && rep->ssd;
}

/* Queue @node's newly routed SSD copy of @r for its tenant's SSD quota. */
static void quota_ssd_add(struct fkv_master *m, const struct fkv_route *r,
			  uint32_t node)
{
	struct quota *q = quota_of(m, fkv_route_tenant_of(r));
	struct fkv_route_tenant a;
	struct fkv_list *l, *next;
	struct quota_ssd *e;

	if (!q || !q->ssd_bytes)
		return;
	e = malloc(sizeof(*e) + r->key_len);
	if (!e) {
		fkv_err("tenant %u: SSD copy not queued for its quota: out of "
			"memory", q->tenant);
		return;
	}
	e->put_id = r->put_id;
	e->node = node;
	e->key_len = r->key_len;
	memcpy(e->key, r->key, r->key_len);
	fkv_list_add_tail(&e->link, &q->ssd_fifo);
	q->nfifo++;
	/* Entries of copies gone otherwise: pruned when they are half. */
	fkv_routes_tenant(m->routes, q->tenant, &a);
	if (q->nfifo <= 2 * a.ssd_replicas + 64)
		return;
	for (l = q->ssd_fifo.next; l != &q->ssd_fifo; l = next) {
		next = l->next;
		e = fkv_container_of(l, struct quota_ssd, link);
		if (quota_ssd_live(m, e))
			continue;
		fkv_list_del(l);
		free(e);
		q->nfifo--;
	}
}

/*
 * Tenant @tenant past its SSD quota: its oldest routed SSD copies are
 * unrouted, their owners' modules told (DROP_REPLICA SOURCE=SSD, which
 * clears the SSD index's routed flag: a DRAM replica of that version is
 * dirty again for clean drops), until it is within the quota.  The copy
 * being committed (@key / @put_id on the caller) is not told: its
 * SSD_COMMIT is answered unpublished instead (*@published false), which
 * the module would otherwise take for routed after the drop.
 */
static void enforce_ssd_quota(struct fkv_master *m, uint32_t tenant,
			      const void *key, size_t key_len,
			      uint64_t put_id, bool *published)
{
	struct quota *q = quota_of(m, tenant);
	struct fkv_route_tenant a;
	struct fkv_list *l;

	if (!q || !q->ssd_bytes)
		return;
	for (;;) {
		struct quota_ssd *e;
		bool now;

		fkv_routes_tenant(m->routes, tenant, &a);
		if (a.ssd_bytes <= q->ssd_bytes)
			return;
		l = fkv_list_first(&q->ssd_fifo);
		if (!l)
			return;
		fkv_list_del(l);
		q->nfifo--;
		e = fkv_container_of(l, struct quota_ssd, link);
		if (quota_ssd_live(m, e) &&
		    !fkv_routes_clear_ssd_on(m->routes, e->node, e->key,
					     e->key_len, e->put_id)) {
			key_tenant(m, e->key, e->key_len)->quota_ssd_drops++;
			now = e->node == m->caller && e->put_id == put_id &&
			      e->key_len == key_len &&
			      !memcmp(e->key, key, key_len);
			if (now)
				*published = false;
			else if (m->ops->send_ssd_drop)
				m->ops->send_ssd_drop(m->arg, e->node, e->key,
						      e->key_len, e->put_id);
		}
		free(e);
	}
}

void fkv_master_set_ssd_capacity(struct fkv_master *m, uint64_t bytes)
{
	struct fkv_mnode *n = caller(m);

	if (bytes != n->ssd_capacity)
		fkv_info("node %u SSD capacity %llu -> %llu bytes", m->caller,
			 (unsigned long long)n->ssd_capacity,
			 (unsigned long long)bytes);
	n->ssd_capacity = bytes;
}

/*
 * A put_id the caller's module saw.  A single-node master numbers above it
 * (the module may have numbered puts itself); a cluster master's numbering
 * is its term's, above every earlier term, so a put_id above it was never
 * issued by this master or one before it (a forged or corrupt one: it
 * would wrap the numbering) and moves nothing.
 */
void fkv_master_note_put_id(struct fkv_master *m, uint64_t put_id)
{
	if (!m->term) {
		fkv_routes_note_put_id(m->routes, put_id);
		return;
	}
	if (put_id > fkv_routes_last_put_id(m->routes)) {
		m->st.put_ids_refused++;
		fkv_warn("node %u reports put_id %#llx (term %llu) above this "
			 "master's numbering (term %llu): ignored",
			 m->caller, (unsigned long long)put_id,
			 (unsigned long long)FKV_PUT_ID_TERM(put_id),
			 (unsigned long long)m->term);
	}
}

uint64_t fkv_master_term(const struct fkv_master *m)
{
	return m->term;
}

void fkv_master_owner_restart(struct fkv_master *m, uint64_t incarnation,
			      uint64_t ssd_capacity)
{
	size_t n;

	fkv_master_set_ssd_capacity(m, ssd_capacity);
	if (incarnation == caller(m)->incarnation)
		return;
	m->st.owner_restarts++;
	caller(m)->incarnation = incarnation;
	n = fkv_routes_forget_node(m->routes, m->caller, incarnation);
	fkv_info("owner restarted (incarnation %#llx): %zu replicas of the "
		 "previous instance forgotten",
		 (unsigned long long)incarnation, n);
}

/* The caller's replica of version @put_id of @key has an SSD copy. */
static bool caller_has_ssd(const struct fkv_master *m, const void *key,
			   size_t key_len, uint64_t put_id)
{
	const struct fkv_route *r = fkv_routes_lookup(m->routes, key, key_len);
	const struct fkv_replica *rep;

	if (!r || r->put_id != put_id)
		return false;
	rep = fkv_routes_replica_of(r, m->caller);
	return rep && rep->ssd;
}

int fkv_master_put_start(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t len, uint64_t *put_id,
			 uint32_t *flags)
{
	/* Reference §2.4/§3: the SSD decision is taken here, once. */
	uint64_t ssd = caller(m)->ssd_capacity;
	bool persist = ssd && len <= ssd;
	int err;

	*flags = 0;
	/*
	 * Placed on the caller (local first, §2.4): the module has the bytes
	 * in hand.  Placing a put on another node needs the payload pushed
	 * there first (not built yet: Documentation/fluxonkv/status.md).
	 */
	err = fkv_routes_put_start_on(m->routes, m->caller, key, key_len, len,
				      persist, put_id);
	if (err)
		return err;
	m->st.puts++;
	key_tenant(m, key, key_len)->puts++;
	if (persist) {
		m->st.persist_puts++;
		*flags = FLUXONKV_PUT_F_PERSIST;
	}
	enforce_watermarks(m, m->caller);
	return 0;
}

/*
 * Where the caller's in-flight put @put_id goes: *@node is the node it
 * was placed on (the caller itself unless PUT_PLACE moved it; also when
 * it is not in flight, the route table then says why).  -EINVAL: another
 * node's put, which the caller may neither complete nor abort.
 */
static int placed_on(const struct fkv_master *m, const void *key,
		     size_t key_len, uint64_t put_id, uint32_t *node)
{
	uint32_t n, origin;

	*node = m->caller;
	if (fkv_routes_inflight_of(m->routes, key, key_len, put_id, &n,
				   &origin))
		return 0;
	if (origin != m->caller)
		return -EINVAL;
	*node = n;
	return 0;
}

/* @node's replica @handle of put @put_id is the route now. */
static void published(struct fkv_master *m, const struct fkv_route *r,
		      uint32_t node, uint64_t handle, uint64_t put_id,
		      uint64_t len)
{
	const struct fkv_replica *rep;
	int err;

	m->st.published++;
	/*
	 * Its tenant's DRAM quota, from the tenant's other replicas: this
	 * one is not in the policy yet, so never its own victim (as for
	 * the watermarks); a tenant it alone takes past its quota gives it
	 * up at its next put.
	 */
	route_dram_quota(m, r, node);
	rep = fkv_routes_replica_of(r, node);
	/*
	 * Reference §3: while its SSD write runs the replica must stay; it
	 * enters the policy at SSD_COMMIT (route_settled).
	 */
	if (rep && rep->persisting)
		return;
	if (rep && rep->persist)
		fkv_warn("replica %#llx of put %llu is evictable before its "
			 "persist: out of memory",
			 (unsigned long long)handle,
			 (unsigned long long)put_id);
	err = policy_insert(m, node, r, handle, len);
	if (err)
		fkv_err("replica %#llx is published but not evictable: %s",
			(unsigned long long)handle, strerror(-err));
}

int fkv_master_put_done(struct fkv_master *m, const void *key,
			size_t key_len, uint64_t put_id, uint64_t handle,
			uint64_t len, uint32_t *flags)
{
	const struct fkv_replica *rep;
	const struct fkv_route *r = NULL;
	char kb[FKV_KEY_FMT_LEN];
	struct fkv_mnode *n;
	uint32_t node;
	int ret;

	*flags = 0;
	if (placed_on(m, key, key_len, put_id, &node)) {
		fkv_warn("PUT_DONE from node %u for put %llu another node "
			 "started", m->caller, (unsigned long long)put_id);
		return -EINVAL;
	}
	n = &m->nodes[node];
	/* Our own, or that of the node the put was placed on. */
	if (m->self && FLUXONKV_HANDLE_NODE(handle) != node) {
		fkv_warn("PUT_DONE from node %u names handle %#llx of node %u",
			 m->caller, (unsigned long long)handle,
			 FLUXONKV_HANDLE_NODE(handle));
		return -EINVAL;
	}
	ret = fkv_routes_put_done(m->routes, key, key_len, put_id, handle, len,
				  n->incarnation, &r);
	if (ret < 0)
		fkv_info("PUT_DONE put %llu key '%s' handle %#llx: %s",
			 (unsigned long long)put_id,
			 fkv_key_fmt(kb, key, key_len),
			 (unsigned long long)handle, strerror(-ret));
	if (!ret && node != m->caller)
		/* Superseded: nobody references the target's replica. */
		m->ops->send_drop(m->arg, handle, 0);
	if (ret < 0)
		return ret;
	if (!ret) {
		m->st.superseded++;
		return 0;
	}
	*flags = FLUXONKV_PUT_F_PUBLISHED;
	rep = fkv_routes_replica_of(r, node);
	if (node != m->caller && m->ops->placed)
		m->ops->placed(m->arg, handle, put_id,
			       rep && rep->persist ? FLUXONKV_PUBLISH_F_PERSIST
						   : 0);
	published(m, r, node, handle, put_id, len);
	return 0;
}

int fkv_master_put(struct fkv_master *m, const void *key, size_t key_len,
		   uint64_t handle, uint64_t len, uint64_t *put_id,
		   uint32_t *flags)
{
	uint32_t start_flags;
	int ret;

	*put_id = 0;
	*flags = 0;
	if (m->local_puts) {
		fkv_warn("PUT from a put that started under another daemon: "
			 "refused (the module numbers puts)");
		return -EPROTO;
	}
	/* Only the caller's own replica: a put placed elsewhere has two. */
	if (!handle || (m->self && FLUXONKV_HANDLE_NODE(handle) != m->caller)) {
		fkv_warn("PUT from node %u names handle %#llx",
			 m->caller, (unsigned long long)handle);
		return -EINVAL;
	}
	ret = fkv_master_put_start(m, key, key_len, len, put_id,
				   &start_flags);
	if (ret)
		return ret;
	ret = fkv_master_put_done(m, key, key_len, *put_id, handle, len,
				  flags);
	if (ret) {
		fkv_routes_put_abort(m->routes, key, key_len, *put_id);
		m->st.aborted++;
		*put_id = 0;
		return ret;
	}
	*flags |= start_flags & FLUXONKV_PUT_F_PERSIST;
	m->st.puts_one_trip++;
	return 0;
}

/*
 * A PUT_LOCAL the route table could not take: the module's replica is
 * dropped (never routed, it would never be evicted either), and the
 * version it replaced, which the module dropped already, is forgotten
 * here too (no DROP_REPLICA: dropped_by_module is set).
 */
static void put_local_failed(struct fkv_master *m, const void *key,
			     size_t key_len, uint64_t put_id, uint64_t handle,
			     uint64_t dropped, int err)
{
	char kb[FKV_KEY_FMT_LEN];

	fkv_warn("PUT_LOCAL put %llu key '%s' handle %#llx: %s",
		 (unsigned long long)put_id, fkv_key_fmt(kb, key, key_len),
		 (unsigned long long)handle, strerror(-err));
	if (handle)
		m->ops->send_drop(m->arg, handle, 0);
	if (dropped)
		fkv_routes_drop_handle(m->routes, dropped);
}

int fkv_master_put_local(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t put_id, uint64_t handle,
			 uint64_t len, uint32_t flags, uint64_t dropped)
{
	bool persist = flags & FLUXONKV_PUT_F_PERSIST;
	const struct fkv_route *r = NULL;
	int ret;

	/* route_drop sends nothing for it: the module dropped it itself */
	m->dropped_by_module = dropped;
	if (m->self || FLUXONKV_HANDLE_NODE(handle) != m->caller) {
		fkv_warn("PUT_LOCAL from node %u names handle %#llx: local "
			 "puts are for a single node",
			 m->caller, (unsigned long long)handle);
		ret = -EINVAL;
	} else {
		ret = fkv_routes_publish_local(m->routes, m->caller, key,
					       key_len, put_id, handle, len,
					       persist, caller(m)->incarnation,
					       &r);
	}
	if (ret == 0) {
		/* superseded: nobody references it */
		m->st.puts++;
		key_tenant(m, key, key_len)->puts++;
		m->st.superseded++;
		m->ops->send_drop(m->arg, handle, 0);
	} else if (ret == 1) {
		m->st.puts++;
		key_tenant(m, key, key_len)->puts++;
		if (persist)
			m->st.persist_puts++;
		/*
		 * Room for the next puts, as PUT_START makes it; the new
		 * replica enters the policy only afterwards, so it is not its
		 * own victim.
		 */
		enforce_watermarks(m, m->caller);
		published(m, r, m->caller, handle, put_id, len);
	} else if (ret != -EALREADY) {
		put_local_failed(m, key, key_len, put_id, handle, dropped, ret);
	}
	m->dropped_by_module = 0;
	return ret < 0 && ret != -EALREADY ? ret : 0;
}

/*
 * A kept copy the route does not take: the caller's module lets it go --
 * the DRAM replica dropped, an SSD copy unrouted (else it would be
 * reported again to the next master, which may not know why it was
 * refused: a lifted fence, tombstones of an earlier term).
 */
static void adopt_refused(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, uint64_t handle,
			  bool ssd)
{
	m->st.adopt_refused++;
	if (handle)
		m->ops->send_drop(m->arg, handle, 0);
	if (ssd && m->ops->send_ssd_drop)
		m->ops->send_ssd_drop(m->arg, m->caller, key, key_len, put_id);
}

int fkv_master_adopt(struct fkv_master *m, const void *key, size_t key_len,
		     uint64_t put_id, uint64_t handle, uint64_t len, bool ssd)
{
	const struct fkv_route *r = NULL;
	struct fkv_mnode *n = caller(m);
	bool had_ssd;
	int ret, err;

	if (handle && m->self && FLUXONKV_HANDLE_NODE(handle) != m->caller)
		return -EINVAL;
	fkv_master_note_put_id(m, put_id);
	if (put_id <= n->adopt_floor) {
		/* kept from before the node's fence: maybe replaced since */
		m->st.adopt_fenced++;
		adopt_refused(m, key, key_len, put_id, handle, ssd);
		return 0;
	}
	had_ssd = caller_has_ssd(m, key, key_len, put_id);
	ret = fkv_routes_adopt_on(m->routes, m->caller, key, key_len, put_id,
				  handle, len, ssd, n->incarnation,
				  0, &r);
	if (ret <= 0) {
		adopt_refused(m, key, key_len, put_id, handle, ssd);
		return ret;
	}
	m->st.adopted++;
	if (handle)
		route_dram_quota(m, r, m->caller);
	if (handle) {
		err = policy_insert(m, m->caller, r, handle, len);
		if (err)
			fkv_err("adopted replica %#llx is not evictable: %s",
				(unsigned long long)handle, strerror(-err));
	}
	if (ssd) {
		const struct fkv_replica *rep = fkv_routes_replica_of(r,
								m->caller);

		/* the copy this adoption routed, not one it had already */
		bool dummy;

		if (rep && rep->ssd && !had_ssd) {
			quota_ssd_add(m, r, m->caller);
			enforce_ssd_quota(m, fkv_route_tenant_of(r), NULL, 0,
					  0, &dummy);
		}
	}
	return 1;
}

void fkv_master_node_fence(struct fkv_master *m, uint32_t node,
			   uint64_t floor)
{
	if (node < FKV_ROUTE_NODES)
		m->nodes[node].adopt_floor = floor;
}

uint64_t fkv_master_last_put_id(const struct fkv_master *m)
{
	return fkv_routes_last_put_id(m->routes);
}

int fkv_master_repersist(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t put_id, uint64_t handle)
{
	const struct fkv_replica *rep;
	const struct fkv_route *r;
	uint32_t i;

	if (!m->ops->persist)
		return 0;
	r = fkv_routes_lookup(m->routes, key, key_len);
	if (!r || r->put_id != put_id)
		return 0;
	rep = fkv_routes_replica_of(r, m->caller);
	if (!rep || rep->mem_handle != handle || rep->ssd ||
	    rep->mem_len > caller(m)->ssd_capacity)
		return 0;
	/* Another node's SSD copy is this version's: no second one. */
	for (i = 0; i < r->nreplicas; i++)
		if (r->replicas[i].ssd)
			return 0;
	/*
	 * Like a put's replica, it stays in DRAM until that SSD_COMMIT (or
	 * a failure, or the TTL): evicted before, it would be lost (issue
	 * 33).  It re-enters the policy when it settles (route_settled).
	 */
	if (fkv_routes_persisting_begin(m->routes, m->caller, key, key_len,
					put_id, handle) > 0)
		fkv_evict_remove(caller(m)->policy, handle);
	m->ops->persist(m->arg, handle, put_id);
	m->st.repersisted++;
	return 1;
}

struct fkv_adopted {
	struct fkv_adopted *next;
	uint64_t handle, put_id;
	size_t key_len;
	uint8_t key[];
};

int fkv_adopted_add(struct fkv_adopted **list, const void *key,
		    size_t key_len, uint64_t put_id, uint64_t handle)
{
	struct fkv_adopted *a = malloc(sizeof(*a) + key_len);

	if (!a)
		return -ENOMEM;
	a->handle = handle;
	a->put_id = put_id;
	a->key_len = key_len;
	memcpy(a->key, key, key_len);
	a->next = *list;
	*list = a;
	return 0;
}

unsigned long fkv_master_repersist_adopted(struct fkv_master *m,
					   struct fkv_adopted **list)
{
	struct fkv_adopted *a;
	unsigned long n = 0;

	while ((a = *list)) {
		*list = a->next;
		n += fkv_master_repersist(m, a->key, a->key_len, a->put_id,
					  a->handle) > 0;
		free(a);
	}
	return n;
}

void fkv_adopted_free(struct fkv_adopted **list)
{
	struct fkv_adopted *a;

	while ((a = *list)) {
		*list = a->next;
		free(a);
	}
}

/* Room @n offers a new value: what is left below its high watermark. */
static uint64_t room_of(const struct fkv_master *m, uint32_t node)
{
	uint64_t need = fkv_routes_node_used(m->routes, node) +
			fkv_routes_node_reserved(m->routes, node);
	uint64_t high = m->nodes[node].high_bytes;

	return need < high ? high - need : 0;
}

int fkv_master_put_place(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t put_id, uint64_t len,
			 uint32_t *node, const char **addr, uint32_t *flags)
{
	uint32_t i, best = FKV_ROUTE_NODES, cur, origin;
	bool want_ssd = false, persist;
	char kb[FKV_KEY_FMT_LEN];
	int err;

	*flags = 0;
	err = fkv_routes_inflight_of(m->routes, key, key_len, put_id, &cur,
				  &origin);
	if (!err && (origin != m->caller || cur != m->caller))
		err = -EINVAL;
	if (err)
		return err;
	/* Reference §2.4: SSD-capable owners first when any has an SSD. */
	for (i = 0; i < FKV_ROUTE_NODES; i++)
		if (i != m->caller && m->nodes[i].live &&
		    m->nodes[i].addr[0] && m->nodes[i].ssd_capacity >= len)
			want_ssd = true;
	for (i = 0; i < FKV_ROUTE_NODES; i++) {
		const struct fkv_mnode *n = &m->nodes[i];
		bool fits, best_fits;

		if (i == m->caller || !n->live || !n->addr[0] ||
		    fkv_weight(len) > n->capacity ||
		    (want_ssd && n->ssd_capacity < len))
			continue;
		/* Room without evicting first (the target's answer is timed). */
		fits = room_of(m, i) >= fkv_weight(len);
		best_fits = best < FKV_ROUTE_NODES &&
			    room_of(m, best) >= fkv_weight(len);
		if (best == FKV_ROUTE_NODES || (fits && !best_fits) ||
		    (fits == best_fits && room_of(m, i) > room_of(m, best)))
			best = i;
	}
	if (best == FKV_ROUTE_NODES) {
		m->st.place_refused++;
		fkv_info("put %llu of key '%s' (%llu bytes): no other node to "
			 "place it on", (unsigned long long)put_id,
			 fkv_key_fmt(kb, key, key_len), (unsigned long long)len);
		return -ENOSPC;
	}
	persist = m->nodes[best].ssd_capacity >= len;
	err = fkv_routes_put_move(m->routes, key, key_len, put_id, best,
				  persist);
	if (err)
		return err;
	m->st.placed++;
	enforce_watermarks(m, best);
	fkv_dbg("put %llu of key '%s' placed on node %u", (unsigned long long)put_id,
		fkv_key_fmt(kb, key, key_len), best);
	*node = best;
	*addr = m->nodes[best].addr;
	if (persist)
		*flags = FLUXONKV_PUT_F_PERSIST;
	return 0;
}

/*
 * The module reports it no longer has replica @handle (a PUT_DONE it could
 * not complete, or a memory route it found stale): forget it, so gets stop
 * being routed to it.  The DROP_REPLICA this sends is answered -ENOENT.
 */
static bool master_lost_handle(struct fkv_master *m, uint64_t handle)
{
	if (!handle || fkv_routes_drop_handle(m->routes, handle))
		return false;
	m->st.lost_replicas++;
	return true;
}

void fkv_master_put_abort(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, uint64_t handle,
			  int error)
{
	char kb[FKV_KEY_FMT_LEN];
	int err;

	uint32_t node;

	if (placed_on(m, key, key_len, put_id, &node)) {
		fkv_warn("PUT_ABORT from node %u for put %llu another node "
			 "started: ignored", m->caller,
			 (unsigned long long)put_id);
		return;
	}
	/*
	 * Only the caller's handles, or the target's of a put it placed.  A
	 * placed put published before the caller gave up stays: the target
	 * still has the replica.
	 */
	if (m->self && FLUXONKV_HANDLE_NODE(handle) != node)
		handle = 0;
	/* A PUT_DONE the module gave up on: published here, gone there. */
	if (master_lost_handle(m, handle))
		fkv_info("put %llu of key '%s': replica %#llx lost by the module (%d)",
			 (unsigned long long)put_id,
			 fkv_key_fmt(kb, key, key_len),
			 (unsigned long long)handle, error);
	else if (handle && node != m->caller)
		/* A placed put's target that was never published. */
		m->ops->send_drop(m->arg, handle, 0);
	err = fkv_routes_put_abort(m->routes, key, key_len, put_id);
	if (!err)
		m->st.aborted++;
	fkv_dbg("put %llu of key '%s' aborted (%d): %s",
		(unsigned long long)put_id, fkv_key_fmt(kb, key, key_len),
		error, err ? strerror(-err) : "forgotten");
}

int fkv_master_ssd_commit(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, uint64_t len,
			  uint32_t *flags)
{
	char kb[FKV_KEY_FMT_LEN];
	bool had, published = true;
	int ret;

	*flags = 0;
	had = caller_has_ssd(m, key, key_len, put_id);
	ret = fkv_routes_ssd_commit_on(m->routes, m->caller, key, key_len,
				       put_id, len, caller(m)->incarnation);
	quota_recheck(m);
	if (ret < 0)
		return ret;
	if (!ret) {
		/* Overwritten, deleted or evicted meanwhile: not an error. */
		m->st.ssd_commits_ignored++;
		fkv_dbg("SSD_COMMIT put %llu of key '%s' ignored (stale)",
			(unsigned long long)put_id,
			fkv_key_fmt(kb, key, key_len));
		return 0;
	}
	m->st.ssd_commits_published++;
	if (!had) {
		const struct fkv_route *r = fkv_routes_lookup(m->routes, key,
							      key_len);

		quota_ssd_add(m, r, m->caller);
		enforce_ssd_quota(m, fkv_route_tenant_of(r), key, key_len,
				  put_id, &published);
	}
	if (published)
		*flags = FLUXONKV_SSD_F_PUBLISHED;
	return 0;
}



int fkv_master_ssd_commit_failed(struct fkv_master *m, const void *key,
				 size_t key_len, uint64_t put_id, int error,
				 uint32_t *flags)
{
	char kb[FKV_KEY_FMT_LEN];
	int ret;

	*flags = 0;
	ret = fkv_routes_persist_failed_on(m->routes, m->caller, key, key_len,
					   put_id);
	quota_recheck(m);
	if (ret < 0)
		return ret;
	m->st.persist_failures++;
	fkv_dbg("SSD_COMMIT put %llu of key '%s' failed (%d)%s",
		(unsigned long long)put_id, fkv_key_fmt(kb, key, key_len),
		error, ret ? ": replica now evictable" : "");
	return 0;
}

void fkv_master_ssd_evicted(struct fkv_master *m, const void *key,
			    size_t key_len, uint64_t put_id)
{
	if (!fkv_routes_clear_ssd_on(m->routes, m->caller, key, key_len,
				     put_id))
		m->st.ssd_evicted++;
	else
		m->st.ssd_evicted_stale++;
}

/* @rep is a replica of a live instance of its node. */
static bool replica_live(const struct fkv_master *m,
			 const struct fkv_replica *rep)
{
	const struct fkv_mnode *n = &m->nodes[rep->node];

	return n->live && rep->tomb_tag == n->incarnation;
}

/*
 * Where a get of route @r by the caller would read, into @res (reference
 * §4: memory first -- our own, then another node's -- then our SSD, then
 * another node's): SOURCE_NONE if no replica is live.  Changes nothing.
 */
static void pick_source(const struct fkv_master *m, const struct fkv_route *r,
			struct fkv_get_result *res)
{
	const struct fkv_replica *rep, *remote = NULL, *remote_ssd = NULL;
	uint32_t i;

	rep = fkv_routes_replica_of(r, m->caller);
	if (rep && !replica_live(m, rep))
		rep = NULL;
	/* Another live node's DRAM copy, for a pull. */
	for (i = 0; i < r->nreplicas; i++) {
		const struct fkv_replica *o = &r->replicas[i];

		if (o->node == m->caller || !replica_live(m, o) ||
		    !m->nodes[o->node].addr[0])
			continue;
		if (o->mem_handle && !remote)
			remote = o;
		if (o->ssd && !remote_ssd)
			remote_ssd = o;
	}
	res->put_id = r->put_id;
	if (rep && rep->mem_handle) {
		res->source = FLUXONKV_SOURCE_MEMORY;
		res->handle = rep->mem_handle;
		res->len = rep->mem_len;
	} else if (remote) {
		res->source = FLUXONKV_SOURCE_REMOTE;
		res->handle = remote->mem_handle;
		res->len = remote->mem_len;
		res->node = remote->node;
		res->addr = m->nodes[remote->node].addr;
	} else if (rep && rep->ssd) {
		res->source = FLUXONKV_SOURCE_SSD;
		res->len = rep->ssd_len;
	} else if (remote_ssd) {
		res->source = FLUXONKV_SOURCE_REMOTE_SSD;
		res->len = remote_ssd->ssd_len;
		res->node = remote_ssd->node;
		res->addr = m->nodes[remote_ssd->node].addr;
	}
}

int fkv_master_get_start(struct fkv_master *m, const void *key,
			 size_t key_len, struct fkv_get_result *res)
{
	struct fkv_tenant_stats *ts;
	const struct fkv_route *r;

	memset(res, 0, sizeof(*res));
	if (!fkv_key_valid(key, key_len))
		return -EINVAL;
	m->st.gets++;
	ts = key_tenant(m, key, key_len);
	ts->gets++;
	r = fkv_routes_lookup(m->routes, key, key_len);
	if (r)
		pick_source(m, r, res);
	switch (res->source) {
	case FLUXONKV_SOURCE_MEMORY:
		fkv_evict_touch(caller(m)->policy, res->handle);
		ts->mem_hits++;
		break;
	case FLUXONKV_SOURCE_REMOTE:
		fkv_evict_touch(m->nodes[res->node].policy, res->handle);
		hold_add(m, res->handle, m->caller, r->put_id, false);
		m->st.remote_gets++;
		m->nodes[res->node].remote_gets++;
		ts->remote_hits++;
		break;
	case FLUXONKV_SOURCE_SSD:
		m->st.ssd_gets++;
		ts->ssd_hits++;
		break;
	case FLUXONKV_SOURCE_REMOTE_SSD:
		/* The SSD owner pushes it in chunks (reference §5.3). */
		hold_add(m, res->node, m->caller, r->put_id, true);
		m->st.remote_ssd_gets++;
		m->nodes[res->node].remote_gets++;
		ts->remote_hits++;
		break;
	default:
		memset(res, 0, sizeof(*res));
		m->st.get_misses++;
		ts->misses++;
		return -ENOENT;
	}
	return 0;
}

int fkv_master_lookup(struct fkv_master *m, const void *key, size_t key_len,
		      struct fkv_get_result *res)
{
	const struct fkv_route *r;

	memset(res, 0, sizeof(*res));
	if (!fkv_key_valid(key, key_len))
		return -EINVAL;
	m->st.lookups++;
	r = fkv_routes_lookup(m->routes, key, key_len);
	if (r)
		pick_source(m, r, res);
	if (res->source == FLUXONKV_SOURCE_NONE) {
		memset(res, 0, sizeof(*res));
		return -ENOENT;
	}
	return 0;
}

int fkv_master_get_done(struct fkv_master *m, const void *key,
			size_t key_len, uint64_t put_id, uint64_t handle,
			uint64_t len, uint32_t source, uint32_t *flags)
{
	const struct fkv_route *r = NULL;
	char kb[FKV_KEY_FMT_LEN];
	int ret, err;

	*flags = 0;
	if (source == FLUXONKV_SOURCE_REMOTE ||
	    source == FLUXONKV_SOURCE_REMOTE_SSD)
		holds_release(m, m->caller, put_id);
	/* A memory source reused the replica the route names already. */
	if (source != FLUXONKV_SOURCE_SSD && source != FLUXONKV_SOURCE_REMOTE &&
	    source != FLUXONKV_SOURCE_REMOTE_SSD)
		return 0;
	if (!fkv_key_valid(key, key_len))
		return -EINVAL;
	if (!handle_is_callers(m, handle))
		return -EINVAL;
	/* The caller's copy, refilled from its SSD or pulled from a peer. */
	ret = fkv_routes_promote_on(m->routes, m->caller, key, key_len, put_id,
				    handle, len, caller(m)->incarnation, &r);
	if (ret <= 0) {
		m->st.promotions_refused++;
		if (ret < 0)
			fkv_warn("GET_DONE put %llu key '%s' handle %#llx "
				 "len %llu not promoted: %s",
				 (unsigned long long)put_id,
				 fkv_key_fmt(kb, key, key_len),
				 (unsigned long long)handle,
				 (unsigned long long)len, strerror(-ret));
		/* The module keeps it as a temporary holder and frees it. */
		return 0;
	}
	m->st.promotions++;
	/* Room for it is made from the others: it is not tracked yet. */
	enforce_watermarks(m, m->caller);
	route_dram_quota(m, r, m->caller);
	err = policy_insert(m, m->caller, r, handle, len);
	if (err)
		fkv_err("replica %#llx is promoted but not evictable: %s",
			(unsigned long long)handle, strerror(-err));
	*flags = FLUXONKV_GET_F_PROMOTED;
	return 0;
}

int fkv_master_get_revoke(struct fkv_master *m, const void *key,
			  size_t key_len, uint64_t put_id, uint32_t source,
			  uint64_t handle, int error)
{
	char kb[FKV_KEY_FMT_LEN];
	bool cleared = false, pulled = false;

	m->st.revokes++;
	/*
	 * What a member may revoke: its own replicas, and a source this
	 * master routed its get to (the hold GET_START took) -- never
	 * another node's replica it merely names.
	 */
	if (source == FLUXONKV_SOURCE_REMOTE ||
	    source == FLUXONKV_SOURCE_REMOTE_SSD) {
		pulled = hold_of(m, m->caller, put_id, handle,
				 source == FLUXONKV_SOURCE_REMOTE_SSD);
		holds_release(m, m->caller, put_id);
	}
	if ((source == FLUXONKV_SOURCE_MEMORY && !handle_is_callers(m, handle)) ||
	    (source == FLUXONKV_SOURCE_REMOTE && !pulled &&
	     (error == -ENOENT || error == -ESTALE)) ||
	    (source == FLUXONKV_SOURCE_REMOTE_SSD && !pulled)) {
		m->st.revokes_refused++;
		fkv_dbg("GET_REVOKE of %#llx from node %u: not its replica nor "
			"a source routed to it: ignored",
			(unsigned long long)handle, m->caller);
		return 0;
	}
	/* A memory route to a replica the module no longer has. */
	if (source == FLUXONKV_SOURCE_MEMORY && master_lost_handle(m, handle))
		cleared = true;
	/* Only a failed SSD source is forgotten, and only that version. */
	if (source == FLUXONKV_SOURCE_SSD &&
	    !fkv_routes_clear_ssd_on(m->routes, m->caller, key, key_len,
				     put_id)) {
		m->st.ssd_revoked++;
		cleared = true;
	}
	/*
	 * A pull the source refused because it no longer has that replica
	 * (ENOENT / ESTALE from its HOLD): forget it.  A network failure
	 * says nothing about the replica; membership handles dead nodes.
	 */
	if (source == FLUXONKV_SOURCE_REMOTE &&
	    (error == -ENOENT || error == -ESTALE) &&
	    master_lost_handle(m, handle)) {
		m->st.remote_revoked++;
		cleared = true;
	}
	/*
	 * A push that failed on the owner's side (no such entry, overtaken
	 * by its ring, an IO error): that node's SSD copy of this version
	 * goes (§7.2 drop_ssd_source).  @handle names the owner node here.
	 */
	if (source == FLUXONKV_SOURCE_REMOTE_SSD && handle < FKV_ROUTE_NODES &&
	    (error == -ENOENT || error == -ESTALE || error == -EIO ||
	     error == -ENODEV || error == -EINVAL) &&
	    !fkv_routes_clear_ssd_on(m->routes, (uint32_t)handle, key,
				     key_len, put_id)) {
		m->st.ssd_revoked++;
		cleared = true;
		/*
		 * ... and its module no longer counts it routed: a DRAM
		 * replica of that version there is not clean (it would drop
		 * it for room, the last copy the master knows of).
		 */
		if (m->ops->send_ssd_drop)
			m->ops->send_ssd_drop(m->arg, (uint32_t)handle, key,
					      key_len, put_id);
	}
	fkv_dbg("GET_REVOKE put %llu of key '%s' source %u (%d): %s",
		(unsigned long long)put_id, fkv_key_fmt(kb, key, key_len),
		source, error, cleared ? "replica cleared" : "kept");
	return 0;
}

int fkv_master_delete(struct fkv_master *m, const void *key, size_t key_len,
		      uint64_t *put_id)
{
	int err;

	*put_id = 0;
	err = fkv_routes_delete(m->routes, key, key_len, put_id);
	/* A kept copy of this version never comes back: the route's tombstone. */
	if (!err)
		m->st.deletes++;
	return err;
}

int fkv_master_clear_key(struct fkv_master *m, const void *key,
			 size_t key_len, uint64_t *put_id)
{
	int err;

	m->clearing = true;
	err = fkv_master_delete(m, key, key_len, put_id);
	m->clearing = false;
	return err;
}

int fkv_master_need_room(struct fkv_master *m, uint64_t bytes,
			 uint64_t segment_used)
{
	struct fkv_mnode *n = caller(m);
	uint64_t want = bytes ? bytes : 1, low = n->low_bytes, got;
	bool capped;

	m->st.need_room++;
	/*
	 * With the segment's usage (the module always sends it), what the
	 * allocation takes past the low watermark: the module makes free
	 * bytes contiguous itself (it moves values, segment.c), so free
	 * bytes need no eviction, and the segment holds more than this
	 * master accounts for (refills it has not been offered yet, temporary
	 * holders, puts in flight), so its real usage lands at the low
	 * watermark and the next allocation does not ask again at once.
	 * Without it, @bytes.  At least one replica either way.
	 */
	if (segment_used)
		want = segment_used + bytes > low ? segment_used + bytes - low : 1;
	/*
	 * More than one slice: the first now, the rest (the node's room
	 * debt) in fkv_master_work(); the answer goes now and the module
	 * asks again if the drops have not made room by then.  Its usage
	 * still counts what is being evicted: a new ask wants only what
	 * goes past the debt.
	 */
	if (n->room_debt) {
		if (n->room_promised >= want) {
			m->st.need_room_pending++;
			return 0;
		}
		want -= n->room_promised;
	}
	got = evict_at_most(m, m->caller, 0, want, FKV_EVICT_SLICE,
			    &capped);
	if (capped) {
		n->room_debt += want - got;
		n->room_promised += want;
	}
	fkv_dbg("NEED_ROOM %llu bytes (segment used %llu): evicted %llu%s",
		(unsigned long long)bytes, (unsigned long long)segment_used,
		(unsigned long long)got, n->room_debt ? ", more to come" : "");
	if (!got && !n->room_debt) {
		m->st.need_room_enospc++;
		return -ENOSPC;
	}
	return 0;
}

int fkv_master_need_room_of(struct fkv_master *m, const void *handles,
			    size_t n)
{
	struct fkv_evict *p = caller(m)->policy;
	size_t i, evicted = 0;

	m->st.need_room++;
	m->st.need_room_by_address++;
	for (i = 0; i < n; i++) {
		const struct fkv_route *r;
		uint64_t h, weight = 0;
		uint32_t k;

		memcpy(&h, (const uint8_t *)handles + i * sizeof(h), sizeof(h));
		/* only the caller's own replicas, and none another node pulls */
		if (node_of(m, h) != m->caller || held(m, h))
			continue;
		r = fkv_routes_by_handle(m->routes, h);
		if (!r)
			continue;
		for (k = 0; k < r->nreplicas; k++)
			if (r->replicas[k].mem_handle == h)
				weight = fkv_weight(r->replicas[k].mem_len);
		/* not in the policy: persisting, or just promoted */
		if (fkv_evict_remove(p, h))
			continue;
		evict_one(m, h, weight);
		evicted++;
	}
	fkv_dbg("NEED_ROOM by address: %zu of %zu named replicas evicted",
		evicted, n);
	if (evicted < n) {
		m->st.need_room_enospc++;
		return evicted ? 0 : -ENOSPC;
	}
	return 0;
}

void fkv_master_access(struct fkv_master *m, uint64_t handle)
{
	m->st.accesses++;
	fkv_evict_touch(m->nodes[node_of(m, handle)].policy, handle);
}

/*
 * DROPPED: the caller's module dropped a clean replica itself (its SSD
 * copy of the same version stays routed).  Forgotten like an eviction,
 * but no DROP_REPLICA goes back (route_drop: dropped_by_module).  A
 * handle no route names any more was dropped here meanwhile (an
 * overwrite, a delete, an eviction whose DROP_REPLICA the module found
 * gone): nothing to do.
 */
void fkv_master_dropped(struct fkv_master *m, uint64_t handle)
{
	if (!handle || !handle_is_callers(m, handle)) {
		fkv_warn("DROPPED from node %u names handle %#llx",
			 m->caller, (unsigned long long)handle);
		return;
	}
	m->dropped_by_module = handle;
	if (fkv_routes_drop_handle(m->routes, handle) == 0)
		m->st.clean_dropped++;
	else
		m->st.clean_dropped_gone++;
	m->dropped_by_module = 0;
}

void fkv_master_tick(struct fkv_master *m)
{
	m->st.holds_expired += holds_expire(m, fkv_routes_now_ms(m->routes));
	fkv_routes_sweep(m->routes);
	fkv_routes_sweep_persisting(m->routes);
	quota_recheck(m);
}

void fkv_master_get_stats(const struct fkv_master *m,
			  struct fkv_master_stats *st)
{
	const struct fkv_mnode *n = &m->nodes[m->self];
	const struct fkv_evict *p = n->policy;

	*st = m->st;
	st->capacity = fkv_routes_capacity(m->routes);
	st->used = fkv_routes_used(m->routes);
	st->reserved = fkv_routes_reserved(m->routes);
	st->high_bytes = n->high_bytes;
	st->low_bytes = n->low_bytes;
	st->routes = fkv_routes_count(m->routes);
	st->tombs = fkv_routes_tombs(m->routes, &st->tomb_floor);
	st->mem_replicas = fkv_routes_mem_count(m->routes);
	st->inflight = fkv_routes_inflight(m->routes);
	st->persisting = fkv_routes_persisting_count(m->routes);
	st->persisting_bytes = fkv_routes_persisting_bytes(m->routes);
	st->ssd_capacity = n->ssd_capacity;
	st->ssd_replicas = fkv_routes_ssd_count(m->routes);
	st->ssd_bytes = fkv_routes_ssd_bytes(m->routes);
	st->policy_objects = p->count;
	st->holds = m->nholds;
	st->policy_bytes = p->bytes;
}

const struct fkv_routes *fkv_master_routes(const struct fkv_master *m)
{
	return m->routes;
}

const struct fkv_evict *fkv_master_policy(const struct fkv_master *m)
{
	return m->nodes[m->self].policy;
}

bool fkv_master_node_known(const struct fkv_master *m, uint32_t node)
{
	return node < FKV_ROUTE_NODES && m->nodes[node].policy;
}

int fkv_master_node_info(const struct fkv_master *m, uint32_t node,
			 struct fkv_master_node_info *info)
{
	const struct fkv_mnode *n;

	if (node >= FKV_ROUTE_NODES || !m->nodes[node].policy)
		return -ENOENT;
	n = &m->nodes[node];
	memset(info, 0, sizeof(*info));
	info->live = n->live;
	info->incarnation = n->incarnation;
	info->capacity = n->capacity;
	info->used = fkv_routes_node_used(m->routes, node);
	info->reserved = fkv_routes_node_reserved(m->routes, node);
	info->ssd_capacity = n->ssd_capacity;
	info->replicas = n->policy->count;
	info->remote_gets = n->remote_gets;
	snprintf(info->addr, sizeof(info->addr), "%s", n->addr);
	return 0;
}

int fkv_master_for_each_key(const struct fkv_master *m, fkv_routes_key_fn fn,
			    void *arg)
{
	return fkv_routes_for_each(m->routes, fn, arg);
}
