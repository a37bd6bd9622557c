// SPDX-License-Identifier: GPL-2.0
/*
 * test_master_quota.c - tenants' quotas in the master (issue 30): a tenant
 * past its DRAM quota loses its own replicas in the policy's order, one
 * past its SSD quota its oldest SSD copies; other tenants and tenant 0 are
 * never touched; the per-tenant totals the route table keeps equal a walk.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/log.h"
#include "../../userspace/fluxond/master.h"
#include "../../userspace/fluxond/route.h"
#include "../../userspace/common/tenant.h"
#include "fluxonkv_config.h"
#include "master_fx.h"

static const uint8_t secret[16] = "master-secret-16";

/* The SSD drops sent, with their raw keys (a tenant's starts with 0x00). */
#define MAXSSD	64
static struct {
	size_t n;
	uint32_t node[MAXSSD];
	uint64_t put_id[MAXSSD];
	size_t key_len[MAXSSD];
	uint8_t key[MAXSSD][64];
} D;

static void rec_ssd_drop_raw(void *arg, uint32_t node, const void *key,
			     size_t key_len, uint64_t put_id)
{
	if (D.n < MAXSSD && key_len <= sizeof(D.key[0])) {
		D.node[D.n] = node;
		D.put_id[D.n] = put_id;
		D.key_len[D.n] = key_len;
		memcpy(D.key[D.n], key, key_len);
	}
	D.n++;
}

static const struct fkv_master_ops quota_ops = {
	.send_drop = rec_drop,
	.send_ssd_drop = rec_ssd_drop_raw,
};

/* Tenant 1: quotas @dram1 / @ssd1; tenant 2: none; tenant 0 never. */
static struct fkv_tenant_config tenants[2];

static void mk(const char *policy, uint64_t dram1, uint64_t ssd1,
	       uint64_t ssd_capacity)
{
	struct fkv_master_config cfg = {
		.capacity = 100000 * U, .incarnation = INC, .now_ms = fx_clock,
		.clock_arg = &F, .hash_secret = secret, .policy = policy,
		.ssd_capacity = ssd_capacity,
		.tenants = tenants, .ntenants = 2,
	};

	fkv_log_setup(FKV_LOG_ERR, false);
	memset(&F, 0, sizeof(F));
	memset(&D, 0, sizeof(D));
	memset(tenants, 0, sizeof(tenants));
	tenants[0].name = "alpha";
	tenants[0].id = 1;
	tenants[0].dram_bytes = dram1;
	tenants[0].ssd_bytes = ssd1;
	tenants[1].name = "beta";
	tenants[1].id = 2;
	F.now = 5000;
	F.next_handle = 0x1000;
	F.m = fkv_master_create(&cfg, &quota_ops, &F);
	FKV_ASSERT(F.m != NULL);
}

/* Tenant @tenant's internal key for "@name<i>" into @k; its length. */
static size_t tkey(uint8_t *k, uint32_t tenant, const char *name, int i)
{
	size_t p = 0;

	if (tenant) {
		fkv_tenant_prefix(k, tenant);
		p = FLUXONKV_TENANT_PREFIX_LEN;
	}
	return p + (size_t)sprintf((char *)k + p, "%s%d", name, i);
}

/* A put of @len bytes; its handle.  *@persist: answered PERSIST. */
static uint64_t put(const uint8_t *k, size_t kl, uint64_t len,
		    uint64_t *put_id)
{
	uint64_t id = 0, h = F.next_handle++;
	uint32_t flags = 0;

	FKV_ASSERT_EQ(fkv_master_put_start(F.m, k, kl, len, &id, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, k, kl, id, h, len, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
	if (put_id)
		*put_id = id;
	return h;
}

static bool in_dram(const uint8_t *k, size_t kl)
{
	const struct fkv_route *r = fkv_routes_lookup(fkv_master_routes(F.m),
						      k, kl);

	return r && r->nreplicas && r->replicas[0].mem_handle;
}

static bool on_ssd(const uint8_t *k, size_t kl)
{
	const struct fkv_route *r = fkv_routes_lookup(fkv_master_routes(F.m),
						      k, kl);

	return r && r->nreplicas && r->replicas[0].ssd;
}

static struct fkv_tenant_stats tstat(uint32_t tenant)
{
	struct fkv_tenant_stats *v, s = { 0 };
	size_t n, i;

	FKV_ASSERT_EQ(fkv_master_tenant_stats(F.m, &v, &n), 0);
	for (i = 0; i < n; i++)
		if (v[i].tenant == tenant)
			s = v[i];
	free(v);
	return s;
}

static void dram_quota_case(const char *policy)
{
	uint8_t k[6][64], z[3][64], b[4][64];
	size_t kl[6], zl[3], bl[4];
	uint64_t h[6];
	struct fkv_get_result g;
	struct fkv_route_tenant a;
	int i;

	mk(policy, 4 * U, 0, 0);
	/* tenant 0 and beta first: the oldest of all, never victims here */
	for (i = 0; i < 3; i++) {
		zl[i] = tkey(z[i], 0, "zero", i);
		put(z[i], zl[i], U, NULL);
	}
	for (i = 0; i < 4; i++) {
		bl[i] = tkey(b[i], 2, "beta", i);
		put(b[i], bl[i], 2 * U, NULL);
	}
	/* alpha at its quota exactly: nothing goes */
	for (i = 0; i < 4; i++) {
		kl[i] = tkey(k[i], 1, "a", i);
		h[i] = put(k[i], kl[i], U, NULL);
	}
	FKV_ASSERT_EQ(F.ndrops, 0);
	/* a0 read: LRU makes it the newest, S3-FIFO moves it to M */
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, k[0], kl[0], &g), 0);
	/* one more: a1 (its oldest unread replica) goes, a0 stays */
	kl[4] = tkey(k[4], 1, "a", 4);
	h[4] = put(k[4], kl[4], U, NULL);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], h[1]);
	FKV_ASSERT_EQ(F.drop_flags[0], FLUXONKV_DROP_F_EVICTED);
	/* a value of 2U: a2 and a3 make room */
	kl[5] = tkey(k[5], 1, "a", 5);
	h[5] = put(k[5], kl[5], 2 * U, NULL);
	FKV_ASSERT_EQ(F.ndrops, 3);
	FKV_ASSERT_EQ(F.drops[1], h[2]);
	FKV_ASSERT_EQ(F.drops[2], h[3]);
	FKV_ASSERT(in_dram(k[0], kl[0]) && in_dram(k[4], kl[4]) &&
		   in_dram(k[5], kl[5]) && !in_dram(k[1], kl[1]));
	fkv_routes_tenant(fkv_master_routes(F.m), 1, &a);
	FKV_ASSERT_EQ(a.dram_bytes, 4 * U);
	/* nobody else lost anything */
	for (i = 0; i < 3; i++)
		FKV_ASSERT(in_dram(z[i], zl[i]));
	for (i = 0; i < 4; i++)
		FKV_ASSERT(in_dram(b[i], bl[i]));
	FKV_ASSERT_EQ(tstat(1).quota_evictions, 3);
	FKV_ASSERT_EQ(tstat(0).quota_evictions, 0);
	FKV_ASSERT_EQ(tstat(2).quota_evictions, 0);
	/* beta has no quota: 40 more of its puts evict nothing */
	for (i = 10; i < 50; i++) {
		uint8_t x[64];

		put(x, tkey(x, 2, "beta", i), 4 * U, NULL);
	}
	FKV_ASSERT_EQ(F.ndrops, 3);
	FKV_ASSERT_EQ(fkv_routes_check(fkv_master_routes(F.m)), 0);
	fkv_master_destroy(F.m);
}

FKV_TEST(a_tenant_past_its_dram_quota_loses_its_own_oldest_replicas_only)
{
	dram_quota_case("s3fifo");
	dram_quota_case("lru");
}

FKV_TEST(ssd_commits_past_the_quota_unroute_the_tenants_oldest_copies)
{
	uint8_t k[4][64], z[64], b[64];
	size_t kl[4], zl, bl;
	uint64_t id[4], zid, bid;
	uint32_t flags;
	int i;

	mk("lru", 0, 2 * U, 1000 * U);
	zl = tkey(z, 0, "zero", 0);
	bl = tkey(b, 2, "beta", 0);
	for (i = 0; i < 3; i++)
		kl[i] = tkey(k[i], 1, "a", i);
	/* commits interleaved: a0, tenant 0, a1, beta, a2 */
	put(k[0], kl[0], U, &id[0]);
	put(z, zl, U, &zid);
	put(k[1], kl[1], U, &id[1]);
	put(b, bl, U, &bid);
	put(k[2], kl[2], U, &id[2]);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, k[0], kl[0], id[0], U, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, z, zl, zid, U, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, k[1], kl[1], id[1], U, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, b, bl, bid, U, &flags), 0);
	FKV_ASSERT_EQ(D.n, 0);
	/* the third copy takes alpha past 2U: a0's copy is unrouted */
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, k[2], kl[2], id[2], U, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT_EQ(D.n, 1);
	FKV_ASSERT_EQ(D.put_id[0], id[0]);
	FKV_ASSERT(D.key_len[0] == kl[0] && !memcmp(D.key[0], k[0], kl[0]));
	/* ... its DRAM replica stays (dirty now), the others' copies too */
	FKV_ASSERT(!on_ssd(k[0], kl[0]) && in_dram(k[0], kl[0]));
	FKV_ASSERT(on_ssd(k[1], kl[1]) && on_ssd(k[2], kl[2]));
	FKV_ASSERT(on_ssd(z, zl) && on_ssd(b, bl));
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(tstat(1).quota_ssd_drops, 1);
	FKV_ASSERT_EQ(tstat(1).ssd_bytes, 2 * U);
	/*
	 * A 3U value alone is past the quota: a1 and a2 are unrouted (told),
	 * its own commit is answered unpublished (not told: the module would
	 * take the answer for routed after the drop).
	 */
	kl[3] = tkey(k[3], 1, "a", 3);
	put(k[3], kl[3], 3 * U, &id[3]);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, k[3], kl[3], id[3], 3 * U,
					    &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT_EQ(D.n, 3);
	FKV_ASSERT_EQ(D.put_id[1], id[1]);
	FKV_ASSERT_EQ(D.put_id[2], id[2]);
	FKV_ASSERT(!on_ssd(k[3], kl[3]) && in_dram(k[3], kl[3]));
	FKV_ASSERT(on_ssd(z, zl) && on_ssd(b, bl));
	FKV_ASSERT_EQ(tstat(1).quota_ssd_drops, 4);
	FKV_ASSERT_EQ(tstat(1).ssd_bytes, 0);
	FKV_ASSERT_EQ(tstat(0).quota_ssd_drops, 0);
	FKV_ASSERT_EQ(tstat(2).quota_ssd_drops, 0);
	FKV_ASSERT_EQ(fkv_routes_check(fkv_master_routes(F.m)), 0);
	fkv_master_destroy(F.m);
}

/* A walk of the routes: tenant @w->tenant's totals. */
static int walk_tenant(void *arg, const struct fkv_route *r)
{
	struct fkv_route_tenant *w = arg;
	uint32_t i;

	if (fkv_key_tenant(r->key, r->key_len, NULL) != w->tenant)
		return 0;
	for (i = 0; i < r->nreplicas; i++) {
		if (r->replicas[i].mem_handle) {
			w->dram_bytes += fkv_weight(r->replicas[i].mem_len);
			w->dram_replicas++;
		}
		if (r->replicas[i].ssd) {
			w->ssd_bytes += r->replicas[i].ssd_len;
			w->ssd_replicas++;
		}
	}
	return 0;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(uint64_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state % n;
}

FKV_TEST(incremental_tenant_totals_equal_a_walk_after_random_operations)
{
	/* per key: the version in flight to SSD (0: none), its length */
	enum { NK = 48 };
	uint64_t pid[3][NK] = { { 0 } }, plen[3][NK] = { { 0 } };
	const struct fkv_routes *t;
	uint32_t tn, flags;
	int step, i;

	mk("s3fifo", 12 * U, 8 * U, 1000 * U);
	t = fkv_master_routes(F.m);
	for (step = 0; step < 6000; step++) {
		uint8_t k[64];
		size_t kl;
		uint64_t id, len;

		tn = (uint32_t)rnd(3);
		i = (int)rnd(NK);
		kl = tkey(k, tn, "k", i);
		switch (rnd(8)) {
		case 0: case 1:		/* put (PERSIST: an SSD tier) */
			len = (1 + rnd(3)) * U - rnd(2) * 100;
			put(k, kl, len, &id);
			pid[tn][i] = id;
			plen[tn][i] = len;
			break;
		case 2:			/* its SSD_COMMIT, or a failed one */
			if (!pid[tn][i])
				break;
			if (rnd(4))
				fkv_master_ssd_commit(F.m, k, kl, pid[tn][i],
						      plen[tn][i], &flags);
			else
				fkv_master_ssd_commit_failed(F.m, k, kl,
							     pid[tn][i], -EIO,
							     &flags);
			pid[tn][i] = 0;
			break;
		case 3:			/* delete */
			fkv_master_delete(F.m, k, kl, &id);
			break;
		case 4:			/* watermark-less eviction */
			fkv_master_need_room(F.m, (1 + rnd(4)) * U, 0);
			break;
		case 5: {		/* the ring overwrote the copy */
			const struct fkv_route *r = fkv_routes_lookup(t, k, kl);

			if (r)
				fkv_master_ssd_evicted(F.m, k, kl, r->put_id);
			break;
		}
		case 6: {		/* refill from SSD, or a clean drop */
			const struct fkv_route *r = fkv_routes_lookup(t, k, kl);

			if (!r)
				break;
			if (!r->replicas[0].mem_handle && r->replicas[0].ssd)
				fkv_master_get_done(F.m, k, kl, r->put_id,
						    F.next_handle++,
						    r->replicas[0].ssd_len,
						    FLUXONKV_SOURCE_SSD, &flags);
			else if (r->replicas[0].mem_handle &&
				 r->replicas[0].ssd)
				fkv_master_dropped(F.m,
						   r->replicas[0].mem_handle);
			break;
		}
		default: {		/* a get */
			struct fkv_get_result g;

			fkv_master_get_start(F.m, k, kl, &g);
			break;
		}
		}
		if (step % 97 == 0)
			FKV_ASSERT_EQ(fkv_routes_check(t), 0);
	}
	FKV_ASSERT_EQ(fkv_routes_check(t), 0);
	for (tn = 0; tn < 3; tn++) {
		struct fkv_route_tenant a, w = { .tenant = tn };
		struct fkv_tenant_stats s = tstat(tn);

		fkv_routes_tenant(t, tn, &a);
		fkv_routes_for_each_route(t, walk_tenant, &w);
		FKV_ASSERT_EQ(a.dram_bytes, w.dram_bytes);
		FKV_ASSERT_EQ(a.dram_replicas, w.dram_replicas);
		FKV_ASSERT_EQ(a.ssd_bytes, w.ssd_bytes);
		FKV_ASSERT_EQ(a.ssd_replicas, w.ssd_replicas);
		FKV_ASSERT_EQ(s.dram_bytes, w.dram_bytes);
		FKV_ASSERT_EQ(s.ssd_bytes, w.ssd_bytes);
		FKV_ASSERT(w.dram_replicas + w.ssd_replicas > 0,
			   "tenant %u has nothing left", tn);
	}
	/*
	 * Alpha is within its SSD quota, and within its DRAM one but for
	 * replicas still persisting (not evictable before their commit)
	 * and one just published (never its own victim).
	 */
	{
		struct fkv_route_tenant a;

		fkv_routes_tenant(t, 1, &a);
		FKV_ASSERT_LE(a.ssd_bytes, 8 * U);
		FKV_ASSERT(tstat(1).quota_evictions > 0);
		FKV_ASSERT(tstat(1).quota_ssd_drops > 0);
		FKV_ASSERT_EQ(tstat(2).quota_evictions, 0);
		FKV_ASSERT_EQ(tstat(0).quota_ssd_drops, 0);
	}
	fkv_master_destroy(F.m);
}
