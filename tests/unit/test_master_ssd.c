// SPDX-License-Identifier: GPL-2.0
/*
 * test_master_ssd.c - the master's SSD tier: the PERSIST decision at
 * PUT_START, SSD_COMMIT's publish conditions, eviction that keeps an
 * SSD-backed route, persisting replicas that no eviction takes before their
 * SSD_COMMIT, GET_START's source order, GET_DONE promotion, GET_REVOKE and
 * SSD_EVICTED cleanup, SSD_STATE, owner restart, and what the dispatcher
 * answers for each.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <linux/netlink.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/dispatch.h"
#include "../../userspace/fluxond/hash.h"
#include "../../userspace/fluxond/log.h"
#include "../../userspace/fluxond/master.h"
#include "master_fx.h"

#define SSD	(1000 * U)
#define A(x)	FKV_ATTR(FLUXONKV_A_##x)
#define K(s)	(s), strlen(s)

static const uint8_t secret[16] = "ssd-tier-secret!";

static struct fkv_master *mk(uint64_t capacity, uint64_t ssd_capacity,
			     const char *policy, unsigned int high,
			     unsigned int low)
{
	struct fkv_master_config cfg = {
		.capacity = capacity,
		.incarnation = INC,
		.ssd_capacity = ssd_capacity,
		.policy = policy,
		.high_pct = high,
		.low_pct = low,
		.now_ms = fx_clock,
		.clock_arg = &F,
		.hash_secret = secret,
	};

	fkv_log_setup(FKV_LOG_ERR, false);
	memset(&F, 0, sizeof(F));
	F.now = 5000;
	F.next_handle = 0x1000;
	F.m = fkv_master_create(&cfg, &rec_ops, &F);
	FKV_ASSERT(F.m != NULL);
	return F.m;
}

static struct fkv_master_stats stats(void)
{
	struct fkv_master_stats st;

	fkv_master_get_stats(F.m, &st);
	return st;
}

/* PUT_START (answered PERSIST) + PUT_DONE that publishes. */
static uint64_t put(const char *key, uint64_t len, uint64_t *handle)
{
	uint64_t id = 0, h = F.next_handle++;
	uint32_t flags = 99;

	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K(key), len, &id, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PERSIST);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K(key), id, h, len, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
	if (handle)
		*handle = h;
	return id;
}

/* SSD_COMMIT; returns its FLAGS (STATUS must be 0). */
static uint32_t commit(const char *key, uint64_t put_id, uint64_t len)
{
	uint32_t flags = 99;

	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, K(key), put_id, len, &flags),
		      0);
	return flags;
}

/* A published, committed version; returns its put_id. */
static uint64_t put_committed(const char *key, uint64_t len,
			      uint64_t *handle)
{
	uint64_t id = put(key, len, handle);

	FKV_ASSERT_EQ(commit(key, id, len), FLUXONKV_SSD_F_PUBLISHED);
	return id;
}

static const struct fkv_replica *local(const char *key)
{
	const struct fkv_routes *t = fkv_master_routes(F.m);
	const struct fkv_route *r = fkv_routes_lookup(t, K(key));

	return r ? fkv_routes_local(t, r) : NULL;
}

/* GET_DONE after an SSD refill; returns its FLAGS. */
static uint32_t get_done_ssd(const char *key, uint64_t put_id,
			     uint64_t handle, uint64_t len)
{
	uint32_t flags = 99;

	FKV_ASSERT_EQ(fkv_master_get_done(F.m, K(key), put_id, handle, len,
					  FLUXONKV_SOURCE_SSD, &flags), 0);
	return flags;
}

/* SSD_COMMIT with ERRNO; returns its FLAGS (STATUS must be 0). */
static uint32_t commit_failed(const char *key, uint64_t put_id, int error)
{
	uint32_t flags = 99;

	FKV_ASSERT_EQ(fkv_master_ssd_commit_failed(F.m, K(key), put_id, error,
						   &flags), 0);
	return flags;
}

/* A published version whose persist failed: evictable, memory only. */
static uint64_t put_failed(const char *key, uint64_t len, uint64_t *handle)
{
	uint64_t id = put(key, len, handle);

	FKV_ASSERT_EQ(commit_failed(key, id, -EIO), 0);
	return id;
}

/*
 * Policy, route table and SSD counters must agree: every memory replica is
 * either in the policy or persisting.
 */
static void check_consistent(void)
{
	struct fkv_master_stats st = stats();

	FKV_ASSERT_EQ(st.policy_bytes + st.persisting_bytes, st.used);
	FKV_ASSERT_EQ(st.policy_objects + st.persisting, st.mem_replicas);
	FKV_ASSERT_LE(st.mem_replicas, st.routes);
	FKV_ASSERT_LE(st.ssd_replicas, st.routes);
	/* A visible route has at least one medium. */
	FKV_ASSERT_LE(st.routes, st.mem_replicas + st.ssd_replicas);
}

/* Evict the memory replica @h through NEED_ROOM (LRU: oldest first). */
static void evict_oldest(uint64_t expect_handle)
{
	size_t n = F.ndrops;

	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 1, 0), 0);
	FKV_ASSERT_EQ(F.ndrops, n + 1);
	FKV_ASSERT_EQ(F.drops[n], expect_handle);
	FKV_ASSERT_EQ(F.drop_flags[n], FLUXONKV_DROP_F_EVICTED);
}

/* ---- PUT_START: the PERSIST decision ---- */

FKV_TEST(persist_is_asked_only_when_the_owner_has_ssd_room_for_the_value)
{
	uint64_t id;
	uint32_t flags = 99;

	mk(100 * U, 0, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("a"), U, &id, &flags), 0);
	FKV_ASSERT_EQ(flags, 0);		/* no SSD */
	fkv_master_set_ssd_capacity(F.m, 8 * U);
	FKV_ASSERT_EQ(stats().ssd_capacity, 8 * U);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("b"), 8 * U, &id, &flags),
		      0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PERSIST);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("c"), 8 * U + 1, &id,
					   &flags), 0);
	FKV_ASSERT_EQ(flags, 0);		/* larger than the ring */
	fkv_master_set_ssd_capacity(F.m, 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("d"), 1, &id, &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT_EQ(stats().persist_puts, 1);
	FKV_ASSERT_EQ(stats().puts, 4);
	/* A refused PUT_START carries no PERSIST either. */
	fkv_master_set_ssd_capacity(F.m, SSD);
	flags = 99;
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "", 0, 1, &id, &flags),
		      -EINVAL);
	FKV_ASSERT_EQ(flags, 0);
	fkv_master_destroy(F.m);
}

FKV_TEST(the_persist_decision_is_taken_once_at_put_start)
{
	uint64_t a, b;
	uint32_t flags;

	mk(100 * U, SSD, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("a"), U, &a, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PERSIST);
	fkv_master_set_ssd_capacity(F.m, 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("b"), U, &b, &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	fkv_master_set_ssd_capacity(F.m, SSD);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("a"), a, 0xa, U, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("b"), b, 0xb, U, &flags), 0);
	/* Recorded in flight, carried into the published replica. */
	FKV_ASSERT(local("a")->persist);
	FKV_ASSERT(!local("b")->persist);
	fkv_master_destroy(F.m);
}

/* ---- SSD_COMMIT ---- */

FKV_TEST(commit_of_the_current_version_publishes_the_ssd_replica)
{
	const struct fkv_replica *rep;
	uint64_t id, h;

	mk(100 * U, SSD, NULL, 0, 0);
	id = put("k", 3 * U + 5, &h);
	FKV_ASSERT(!local("k")->ssd);
	FKV_ASSERT_EQ(commit("k", id, 3 * U + 5), FLUXONKV_SSD_F_PUBLISHED);
	rep = local("k");
	FKV_ASSERT(rep->ssd);
	FKV_ASSERT_EQ(rep->ssd_len, 3 * U + 5);
	FKV_ASSERT_EQ(rep->mem_handle, h);	/* memory untouched */
	FKV_ASSERT_EQ(rep->tomb_tag, INC);
	FKV_ASSERT_EQ(stats().ssd_commits_published, 1);
	FKV_ASSERT_EQ(stats().ssd_commits_ignored, 0);
	FKV_ASSERT_EQ(stats().ssd_replicas, 1);
	FKV_ASSERT_EQ(stats().ssd_bytes, 3 * U + 5);
	/* SSD bytes are not segment bytes. */
	FKV_ASSERT_EQ(stats().used, 4 * U);
	/* A repeated commit of the same version changes nothing. */
	FKV_ASSERT_EQ(commit("k", id, 3 * U + 5), FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT_EQ(stats().ssd_replicas, 1);
	FKV_ASSERT_EQ(stats().ssd_bytes, 3 * U + 5);
	FKV_ASSERT_EQ(F.ndrops, 0);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(late_commit_of_an_older_put_id_after_an_overwrite_is_ignored)
{
	uint64_t v1, v2, h1, h2;

	mk(100 * U, SSD, NULL, 0, 0);
	v1 = put("k", U, &h1);
	v2 = put("k", 2 * U, &h2);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], h1);
	FKV_ASSERT_EQ(commit("k", v1, U), 0);
	FKV_ASSERT(!local("k")->ssd);
	FKV_ASSERT_EQ(local("k")->mem_handle, h2);
	FKV_ASSERT_EQ(stats().ssd_commits_ignored, 1);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	/* The current one still publishes. */
	FKV_ASSERT_EQ(commit("k", v2, 2 * U), FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT_EQ(local("k")->ssd_len, 2 * U);
	/* A commit of a version never issued is ignored too. */
	FKV_ASSERT_EQ(commit("k", v2 + 100, 2 * U), 0);
	FKV_ASSERT_EQ(stats().ssd_commits_ignored, 2);
	fkv_master_destroy(F.m);
}

FKV_TEST(an_overwrite_forgets_the_previous_versions_ssd_replica)
{
	struct fkv_get_result g;
	uint64_t v2;

	mk(100 * U, SSD, NULL, 0, 0);
	put_committed("k", U, NULL);
	FKV_ASSERT_EQ(stats().ssd_replicas, 1);
	v2 = put("k", U, NULL);
	FKV_ASSERT(!local("k")->ssd);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	FKV_ASSERT_EQ(stats().ssd_bytes, 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.put_id, v2);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	fkv_master_destroy(F.m);
}

FKV_TEST(commit_after_the_memory_replica_was_evicted_is_ignored)
{
	struct fkv_get_result g;
	uint64_t id, h;

	mk(100 * U, SSD, "lru", 100, 100);
	/* Only a persist that outlived its TTL can lose its memory first. */
	id = put("k", U, &h);
	F.now += FKV_INFLIGHT_TTL_MS;
	fkv_master_tick(F.m);
	put_failed("other", U, NULL);
	evict_oldest(h);
	FKV_ASSERT(fkv_routes_lookup(fkv_master_routes(F.m), K("k")) == NULL);
	FKV_ASSERT_EQ(commit("k", id, U), 0);
	/* Not resurrected as an SSD-only route. */
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	FKV_ASSERT_EQ(stats().ssd_commits_ignored, 1);

	/*
	 * A repeated commit once only the SSD copy is left: the same
	 * version's copy, published (the owner's ring holds it in place of
	 * the first; issue 33); one of another length is ignored.
	 */
	id = put_committed("j", U, &h);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 2 * U, 0), 0);
	FKV_ASSERT_EQ(local("j")->mem_handle, 0);
	FKV_ASSERT_EQ(commit("j", id, U), FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT(local("j")->ssd);
	FKV_ASSERT_EQ(local("j")->ssd_len, U);
	FKV_ASSERT_EQ(stats().ssd_commits_ignored, 1);
	FKV_ASSERT_EQ(commit("j", id, 2 * U), 0);
	FKV_ASSERT_EQ(stats().ssd_commits_ignored, 2);
	FKV_ASSERT(local("j")->ssd);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(commit_after_delete_is_ignored)
{
	struct fkv_get_result g;
	uint64_t id, deleted, inflight;
	uint32_t flags;

	mk(100 * U, SSD, NULL, 0, 0);
	id = put("k", U, NULL);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("k"), &deleted), 0);
	FKV_ASSERT_EQ(deleted, id);
	FKV_ASSERT_EQ(commit("k", id, U), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);

	/* Same, while a newer put keeps the (invisible) key entry alive. */
	id = put("j", U, NULL);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("j"), U, &inflight, &flags),
		      0);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("j"), &deleted), 0);
	FKV_ASSERT_EQ(commit("j", id, U), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("j"), &g), -ENOENT);
	FKV_ASSERT_EQ(stats().ssd_commits_ignored, 2);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	fkv_master_destroy(F.m);
}

FKV_TEST(commit_with_a_length_other_than_the_replicas_is_ignored)
{
	uint64_t id;
	uint32_t flags = 99;

	mk(100 * U, SSD, NULL, 0, 0);
	id = put("k", U, NULL);
	FKV_ASSERT_EQ(commit("k", id, U + 1), 0);
	FKV_ASSERT(!local("k")->ssd);
	/* Malformed arguments are the only non-zero status. */
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, K("k"), id, 0, &flags),
		      -EINVAL);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, K("k"), 0, U, &flags),
		      -EINVAL);
	fkv_master_destroy(F.m);
}

/* ---- eviction and delete with an SSD replica ---- */

/*
 * A committed version whose memory copy is then given up, as an eviction
 * would (the route table drops it directly, so the policy's order does not
 * matter): an SSD-only route.  One DROP_REPLICA is recorded.
 */
static uint64_t ssd_only(const char *key, uint64_t len)
{
	struct fkv_routes *t = (struct fkv_routes *)fkv_master_routes(F.m);
	uint64_t id, h;

	id = put_committed(key, len, &h);
	FKV_ASSERT_EQ(fkv_routes_drop_handle(t, h), 0);
	FKV_ASSERT_EQ(local(key)->mem_handle, 0);
	return id;
}

FKV_TEST(delete_removes_an_ssd_backed_route_entirely)
{
	struct fkv_get_result g;
	uint64_t id, h, deleted = 0;

	mk(100 * U, SSD, "lru", 100, 100);
	put_committed("both", U, &h);
	id = ssd_only("ssdonly", 2 * U);
	F.ndrops = 0;
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("ssdonly"), &deleted), 0);
	FKV_ASSERT_EQ(deleted, id);
	FKV_ASSERT_EQ(F.ndrops, 0);	/* no memory handle to drop */
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("ssdonly"), &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("ssdonly"), &deleted), -ENOENT);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("both"), &deleted), 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], h);
	FKV_ASSERT_EQ(F.drop_flags[0], 0);
	FKV_ASSERT_EQ(stats().routes, 0);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	FKV_ASSERT_EQ(stats().ssd_bytes, 0);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(eviction_keeps_an_ssd_backed_route_and_drops_only_memory)
{
	struct fkv_get_result g;
	uint64_t id, h, h2;

	mk(100 * U, SSD, "lru", 100, 100);
	id = put_committed("k", 2 * U, &h);
	put_failed("plain", U, &h2);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 2 * U, 3 * U), 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], h);
	FKV_ASSERT_EQ(F.drop_flags[0], FLUXONKV_DROP_F_EVICTED);
	/* Route stays: memory cleared, SSD kept. */
	FKV_ASSERT(local("k") != NULL);
	FKV_ASSERT_EQ(local("k")->mem_handle, 0);
	FKV_ASSERT(local("k")->ssd);
	FKV_ASSERT(fkv_routes_by_handle(fkv_master_routes(F.m), h) == NULL);
	FKV_ASSERT_EQ(stats().routes, 2);
	FKV_ASSERT_EQ(stats().mem_replicas, 1);
	FKV_ASSERT_EQ(stats().used, U);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(g.put_id, id);
	/* The other replica goes with its route. */
	evict_oldest(h2);
	FKV_ASSERT(local("plain") == NULL);
	FKV_ASSERT_EQ(stats().routes, 1);
	/* Nothing in memory is left to evict. */
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 0), -ENOSPC);
	check_consistent();
	fkv_master_destroy(F.m);
}

/*
 * DROPPED: the module dropped a clean replica itself.  The master forgets
 * the DRAM replica (policy and bytes), keeps the SSD route, sends nothing
 * back; a handle it no longer routes to, or none, is only counted.
 */
FKV_TEST(a_clean_drop_forgets_the_memory_replica_and_keeps_the_ssd_route)
{
	struct fkv_get_result g;
	uint64_t id, h, h2;

	mk(100 * U, SSD, "lru", 100, 100);
	id = put_committed("k", 2 * U, &h);
	put_committed("j", U, &h2);
	fkv_master_dropped(F.m, h);
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT(local("k") != NULL);
	FKV_ASSERT_EQ(local("k")->mem_handle, 0);
	FKV_ASSERT(local("k")->ssd);
	FKV_ASSERT(fkv_routes_by_handle(fkv_master_routes(F.m), h) == NULL);
	FKV_ASSERT_EQ(stats().clean_dropped, 1);
	FKV_ASSERT_EQ(stats().mem_replicas, 1);
	FKV_ASSERT_EQ(stats().used, U);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(g.put_id, id);
	/* twice, or after the master evicted it itself: nothing more */
	fkv_master_dropped(F.m, h);
	evict_oldest(h2);
	fkv_master_dropped(F.m, h2);
	fkv_master_dropped(F.m, 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(stats().clean_dropped, 1);
	FKV_ASSERT_EQ(stats().clean_dropped_gone, 2);
	/* the policy no longer names it: nothing in memory to evict */
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 0), -ENOSPC);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(watermark_eviction_keeps_ssd_backed_routes)
{
	struct fkv_get_result g;
	uint64_t h[9], id;
	uint32_t flags;
	int i;

	mk(100 * U, SSD, "lru", 90, 80);
	for (i = 0; i < 9; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		put_committed(key, 10 * U, &h[i]);
	}
	/* 90 + 10 > 90: k0 and k1 lose their memory copy, not their route. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("new"), 10 * U, &id, &flags),
		      0);
	FKV_ASSERT_EQ(F.ndrops, 2);
	FKV_ASSERT_EQ(F.drops[0], h[0]);
	FKV_ASSERT_EQ(F.drops[1], h[1]);
	FKV_ASSERT_EQ(stats().routes, 9);
	FKV_ASSERT_EQ(stats().ssd_replicas, 9);
	FKV_ASSERT_EQ(stats().used, 70 * U);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k0"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k2"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	check_consistent();
	fkv_master_destroy(F.m);
}

/* ---- persisting replicas: evictable only once persisted (§3) ---- */

static const char *const policies[] = { "lru", "s3fifo" };

FKV_TEST(a_persisting_replica_is_never_chosen_by_need_room_or_watermarks)
{
	uint64_t hp, hq, he, id;
	uint32_t flags;
	size_t i;

	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		struct fkv_get_result g;

		mk(10 * U, SSD, policies[i], 50, 50);
		put("p", 4 * U, &hp);
		/* 4 used + 4 reserved > 5: the watermark finds nothing. */
		put("q", 4 * U, &hq);
		FKV_ASSERT_EQ(F.ndrops, 0);
		FKV_ASSERT_EQ(stats().persisting, 2);
		FKV_ASSERT_EQ(stats().persisting_bytes, 8 * U);
		FKV_ASSERT_EQ(stats().used, 8 * U);
		FKV_ASSERT_EQ(stats().policy_objects, 0);
		FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 10 * U), -ENOSPC);
		FKV_ASSERT_EQ(stats().need_room_enospc, 1);
		/* Hits do not make it a policy object either. */
		fkv_master_access(F.m, hp);
		FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("q"), &g), 0);
		FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
		FKV_ASSERT_EQ(g.handle, hq);
		FKV_ASSERT_EQ(stats().policy_objects, 0);

		/* With an evictable replica around, only that one goes. */
		put_failed("e", U, &he);
		FKV_ASSERT_EQ(F.ndrops, 0);
		FKV_ASSERT_EQ(fkv_master_need_room(F.m, 8 * U, 10 * U), 0);
		FKV_ASSERT_EQ(F.ndrops, 1);
		FKV_ASSERT_EQ(F.drops[0], he);
		FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 8 * U), -ENOSPC);
		put_failed("e2", U, &he);
		/* A put above the high watermark evicts e2, never p or q. */
		FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("w"), U, &id,
						   &flags), 0);
		FKV_ASSERT_EQ(F.ndrops, 2);
		FKV_ASSERT_EQ(F.drops[1], he);
		FKV_ASSERT_EQ(F.drop_flags[1], FLUXONKV_DROP_F_EVICTED);
		FKV_ASSERT_EQ(local("p")->mem_handle, hp);
		FKV_ASSERT_EQ(local("q")->mem_handle, hq);
		FKV_ASSERT(local("p")->persisting && local("q")->persisting);
		check_consistent();
		fkv_master_destroy(F.m);
	}
}

FKV_TEST(ssd_commit_makes_a_persisting_replica_evictable_and_publishes_ssd)
{
	struct fkv_get_result g;
	uint64_t id, h;

	mk(100 * U, SSD, "lru", 100, 100);
	id = put("k", 2 * U + 1, &h);
	FKV_ASSERT(local("k")->persisting);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 0), -ENOSPC);
	FKV_ASSERT_EQ(commit("k", id, 2 * U + 1), FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT(!local("k")->persisting);
	FKV_ASSERT(local("k")->ssd);
	FKV_ASSERT_EQ(local("k")->ssd_len, 2 * U + 1);
	FKV_ASSERT_EQ(stats().persisting, 0);
	FKV_ASSERT_EQ(stats().persisting_bytes, 0);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	FKV_ASSERT_EQ(stats().policy_bytes, 3 * U);
	/* A repeated commit does not insert it twice. */
	FKV_ASSERT_EQ(commit("k", id, 2 * U + 1), FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	check_consistent();
	/* Now eviction may take its memory; the SSD copy keeps the key. */
	evict_oldest(h);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(g.put_id, id);
	FKV_ASSERT_EQ(stats().persist_failures, 0);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(ssd_commit_with_errno_makes_it_evictable_without_an_ssd_replica)
{
	struct fkv_get_result g;
	uint64_t id, h;
	uint32_t flags = 99;

	mk(100 * U, SSD, "lru", 100, 100);
	id = put("k", U, &h);
	/* Malformed arguments are the only non-zero status. */
	FKV_ASSERT_EQ(fkv_master_ssd_commit_failed(F.m, K("k"), 0, -EIO,
						   &flags), -EINVAL);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT(local("k")->persisting);
	FKV_ASSERT_EQ(commit_failed("k", id, -ENOSPC), 0);
	FKV_ASSERT(!local("k")->persisting);
	FKV_ASSERT(!local("k")->ssd);
	FKV_ASSERT_EQ(local("k")->mem_handle, h);
	FKV_ASSERT_EQ(stats().persist_failures, 1);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	FKV_ASSERT_EQ(stats().ssd_commits_published, 0);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	FKV_ASSERT_EQ(stats().persisting, 0);
	/* A repeated failure, or one for another version: counted, no-op. */
	FKV_ASSERT_EQ(commit_failed("k", id, -EIO), 0);
	FKV_ASSERT_EQ(commit_failed("k", id + 7, -EIO), 0);
	FKV_ASSERT_EQ(stats().persist_failures, 3);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	/* Memory only: evicting it ends the key. */
	evict_oldest(h);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(a_persisting_replica_without_commit_becomes_evictable_after_the_ttl)
{
	struct fkv_get_result g;
	uint64_t a, b, ha, hb;

	mk(100 * U, SSD, "lru", 100, 100);
	a = put("a", U, &ha);
	F.now += 20000;
	b = put("b", U, &hb);
	F.now += FKV_INFLIGHT_TTL_MS - 20000 - 1;
	fkv_master_tick(F.m);
	FKV_ASSERT_EQ(stats().persisting, 2);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 0), -ENOSPC);
	F.now += 1;
	fkv_master_tick(F.m);
	FKV_ASSERT_EQ(stats().persist_expired, 1);
	FKV_ASSERT_EQ(stats().persisting, 1);
	FKV_ASSERT(!local("a")->persisting);
	FKV_ASSERT(local("b")->persisting);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	check_consistent();
	/* The one past its TTL is evictable; the other is not yet. */
	evict_oldest(ha);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 0), -ENOSPC);
	/* Its commit, late, finds no memory replica: not resurrected. */
	FKV_ASSERT_EQ(commit("a", a, U), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("a"), &g), -ENOENT);
	F.now += 20000;
	fkv_master_tick(F.m);
	FKV_ASSERT_EQ(stats().persist_expired, 2);
	/* A commit after the TTL still publishes the SSD replica. */
	FKV_ASSERT_EQ(commit("b", b, U), FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	evict_oldest(hb);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("b"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(overwrite_or_delete_while_persisting_drops_it_late_commit_no_op)
{
	struct fkv_get_result g;
	uint64_t v1, v2, h1, h2, deleted;

	mk(100 * U, SSD, "lru", 100, 100);
	v1 = put("k", U, &h1);
	v2 = put("k", 2 * U, &h2);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], h1);
	FKV_ASSERT_EQ(F.drop_flags[0], 0);
	FKV_ASSERT_EQ(stats().persisting, 1);
	FKV_ASSERT_EQ(stats().persisting_bytes, 2 * U);
	/* v1's commit and failure change nothing: v2 still persists. */
	FKV_ASSERT_EQ(commit("k", v1, U), 0);
	FKV_ASSERT_EQ(commit_failed("k", v1, -EIO), 0);
	FKV_ASSERT(local("k")->persisting);
	FKV_ASSERT(!local("k")->ssd);
	FKV_ASSERT_EQ(local("k")->mem_handle, h2);
	FKV_ASSERT_EQ(stats().policy_objects, 0);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("k"), &deleted), 0);
	FKV_ASSERT_EQ(deleted, v2);
	FKV_ASSERT_EQ(F.ndrops, 2);
	FKV_ASSERT_EQ(F.drops[1], h2);
	FKV_ASSERT_EQ(F.drop_flags[1], 0);
	FKV_ASSERT_EQ(stats().persisting, 0);
	FKV_ASSERT_EQ(stats().persisting_bytes, 0);
	FKV_ASSERT_EQ(commit("k", v2, 2 * U), 0);
	FKV_ASSERT_EQ(commit_failed("k", v2, -EIO), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	FKV_ASSERT_EQ(stats().policy_objects, 0);
	/* Nor does the TTL find anything left of them. */
	F.now += 2 * FKV_INFLIGHT_TTL_MS;
	fkv_master_tick(F.m);
	FKV_ASSERT_EQ(stats().persist_expired, 0);
	FKV_ASSERT_EQ(F.ndrops, 2);
	FKV_ASSERT_EQ(stats().used, 0);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(owner_restart_forgets_persisting_replicas)
{
	uint64_t id;

	mk(100 * U, SSD, "lru", 100, 100);
	id = put("k", U, NULL);
	fkv_master_owner_restart(F.m, INC + 1, SSD);
	FKV_ASSERT_EQ(stats().persisting, 0);
	FKV_ASSERT_EQ(stats().persisting_bytes, 0);
	FKV_ASSERT_EQ(stats().used, 0);
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(commit("k", id, U), 0);
	FKV_ASSERT_EQ(stats().policy_objects, 0);
	check_consistent();
	fkv_master_destroy(F.m);
}

/* ---- GET_START ---- */

FKV_TEST(get_start_picks_memory_first_then_ssd_then_enoent)
{
	struct fkv_get_result g;
	uint64_t id, h;

	mk(100 * U, SSD, "lru", 100, 100);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	id = put_committed("k", 5000, &h);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(g.handle, h);
	FKV_ASSERT_EQ(g.put_id, id);
	FKV_ASSERT_EQ(g.len, 5000);

	evict_oldest(h);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(g.handle, 0);
	FKV_ASSERT_EQ(g.put_id, id);
	FKV_ASSERT_EQ(g.len, 5000);
	FKV_ASSERT_EQ(stats().ssd_gets, 1);

	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("k"), id,
					    FLUXONKV_SOURCE_SSD, 0, -ENOENT), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_NONE);
	FKV_ASSERT_EQ(stats().gets, 4);
	FKV_ASSERT_EQ(stats().get_misses, 2);
	fkv_master_destroy(F.m);
}

/* ---- GET_DONE promotion ---- */

FKV_TEST(get_done_after_an_ssd_refill_promotes_the_new_replica)
{
	struct fkv_get_result g;
	uint64_t id;

	mk(100 * U, SSD, "lru", 100, 100);
	id = ssd_only("k", 2 * U + 1);
	F.ndrops = 0;
	FKV_ASSERT_EQ(stats().used, 0);
	FKV_ASSERT_EQ(get_done_ssd("k", id, 0xbeef, 2 * U + 1),
		      FLUXONKV_GET_F_PROMOTED);
	FKV_ASSERT_EQ(local("k")->mem_handle, 0xbeef);
	FKV_ASSERT_EQ(local("k")->mem_len, 2 * U + 1);
	FKV_ASSERT(local("k")->ssd);		/* both media now */
	FKV_ASSERT(fkv_routes_by_handle(fkv_master_routes(F.m), 0xbeef) ==
		   fkv_routes_lookup(fkv_master_routes(F.m), K("k")));
	FKV_ASSERT_EQ(stats().used, 3 * U);
	FKV_ASSERT_EQ(stats().policy_bytes, 3 * U);	/* round_up weight */
	FKV_ASSERT_EQ(stats().promotions, 1);
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(g.handle, 0xbeef);
	FKV_ASSERT_EQ(g.put_id, id);
	/* It is an ordinary evictable replica: eviction drops it again. */
	evict_oldest(0xbeef);
	FKV_ASSERT(local("k")->ssd);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(get_done_promotes_only_the_current_version_without_a_memory_replica)
{
	uint64_t v1, v2, h2, deleted;

	mk(100 * U, SSD, "lru", 100, 100);
	v1 = ssd_only("k", U);
	F.ndrops = 0;
	/* A memory source never promotes. */
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, K("k"), v1, 0x51, U,
					  FLUXONKV_SOURCE_MEMORY,
					  &(uint32_t){ 0 }), 0);
	FKV_ASSERT_EQ(local("k")->mem_handle, 0);
	/* Wrong version, wrong length, no handle: refused. */
	FKV_ASSERT_EQ(get_done_ssd("k", v1 + 1, 0x52, U), 0);
	FKV_ASSERT_EQ(get_done_ssd("k", v1, 0x53, U + 1), 0);
	FKV_ASSERT_EQ(get_done_ssd("k", v1, 0, U), 0);
	FKV_ASSERT_EQ(local("k")->mem_handle, 0);
	/* Two refills raced: the first is promoted, the second not kept. */
	FKV_ASSERT_EQ(get_done_ssd("k", v1, 0x54, U), FLUXONKV_GET_F_PROMOTED);
	FKV_ASSERT_EQ(get_done_ssd("k", v1, 0x55, U), 0);
	FKV_ASSERT_EQ(local("k")->mem_handle, 0x54);
	FKV_ASSERT(fkv_routes_by_handle(fkv_master_routes(F.m), 0x55) == NULL);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	/* A refill of v1 that completes after an overwrite by v2. */
	v2 = put_committed("k", U, &h2);
	FKV_ASSERT_EQ(get_done_ssd("k", v1, 0x56, U), 0);
	FKV_ASSERT_EQ(local("k")->mem_handle, h2);
	FKV_ASSERT_EQ(local("k")->tomb_tag, INC);
	/* ... or after a delete. */
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("k"), &deleted), 0);
	FKV_ASSERT_EQ(deleted, v2);
	FKV_ASSERT_EQ(get_done_ssd("k", v2, 0x57, U), 0);
	FKV_ASSERT(local("k") == NULL);
	/* Refused handles are never dropped: the module frees them itself. */
	FKV_ASSERT_EQ(F.ndrops, 2);	/* 0x54 (overwrite), h2 (delete) */
	FKV_ASSERT_EQ(F.drops[0], 0x54);
	FKV_ASSERT_EQ(F.drops[1], h2);
	FKV_ASSERT_EQ(stats().promotions, 1);
	FKV_ASSERT_EQ(stats().promotions_refused, 6);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(get_done_with_a_handle_another_route_holds_is_not_promoted)
{
	uint64_t id, h;

	mk(100 * U, SSD, "lru", 100, 100);
	put("a", U, &h);
	id = ssd_only("k", U);
	FKV_ASSERT_EQ(get_done_ssd("k", id, h, U), 0);
	FKV_ASSERT_EQ(local("k")->mem_handle, 0);
	FKV_ASSERT_EQ(local("a")->mem_handle, h);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(promotion_evicts_others_above_the_high_watermark_never_itself)
{
	uint64_t h[9], id;
	int i;

	mk(100 * U, SSD, "lru", 90, 80);
	id = ssd_only("s", 10 * U);
	for (i = 1; i < 10; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		put_committed(key, 10 * U, &h[i - 1]);
	}
	F.ndrops = 0;
	FKV_ASSERT_EQ(stats().used, 90 * U);
	/* 90 + 10 = 100 > 90: down to 80, by evicting the others. */
	FKV_ASSERT_EQ(get_done_ssd("s", id, 0x5, 10 * U),
		      FLUXONKV_GET_F_PROMOTED);
	FKV_ASSERT_EQ(F.ndrops, 2);
	FKV_ASSERT_EQ(F.drops[0], h[0]);
	FKV_ASSERT_EQ(F.drops[1], h[1]);
	FKV_ASSERT_EQ(F.drop_flags[0], FLUXONKV_DROP_F_EVICTED);
	FKV_ASSERT_EQ(local("s")->mem_handle, 0x5);
	FKV_ASSERT_EQ(stats().used, 80 * U);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(promotion_with_nothing_else_to_evict_keeps_the_promoted_replica)
{
	uint64_t id;

	/* Watermarks 50/50 of 10 units: a 10-unit replica exceeds them. */
	mk(10 * U, SSD, "lru", 50, 50);
	id = ssd_only("s", 10 * U);
	F.ndrops = 0;
	FKV_ASSERT_EQ(get_done_ssd("s", id, 0x5, 10 * U),
		      FLUXONKV_GET_F_PROMOTED);
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(local("s")->mem_handle, 0x5);
	/* The next eviction may take it like any other. */
	evict_oldest(0x5);
	check_consistent();
	fkv_master_destroy(F.m);
}

/* ---- GET_REVOKE and SSD_EVICTED ---- */

FKV_TEST(get_revoke_clears_only_the_ssd_replica_of_the_matching_version)
{
	struct fkv_get_result g;
	uint64_t v1, v2, h2;

	mk(100 * U, SSD, "lru", 100, 100);
	v1 = ssd_only("k", U);
	/* A memory source that failed clears nothing. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("k"), v1,
					    FLUXONKV_SOURCE_MEMORY, 0, -EIO), 0);
	/* Another version: nothing. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("k"), v1 + 1,
					    FLUXONKV_SOURCE_SSD, 0, -EIO), 0);
	FKV_ASSERT(local("k") != NULL && local("k")->ssd);
	/* The failed SSD source: the route had nothing else, it goes. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("k"), v1,
					    FLUXONKV_SOURCE_SSD, 0, -ENOENT), 0);
	FKV_ASSERT(local("k") == NULL);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	/* Again (the module retried): still STATUS 0. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("k"), v1,
					    FLUXONKV_SOURCE_SSD, 0, -ENOENT), 0);

	/* With a memory replica too, only the SSD one goes. */
	v2 = put_committed("k", U, &h2);
	F.ndrops = 0;
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("k"), v2,
					    FLUXONKV_SOURCE_SSD, 0, -EIO), 0);
	FKV_ASSERT(!local("k")->ssd);
	FKV_ASSERT_EQ(local("k")->mem_handle, h2);
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(stats().revokes, 5);
	FKV_ASSERT_EQ(stats().ssd_revoked, 2);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(ssd_evicted_clears_only_the_matching_version)
{
	uint64_t v1, v2, h;

	mk(100 * U, SSD, "lru", 100, 100);
	v1 = ssd_only("gone", U);
	v2 = put_committed("both", U, &h);
	/* An older version of "both" was overwritten in the ring. */
	fkv_master_ssd_evicted(F.m, K("both"), v2 - 1);
	FKV_ASSERT(local("both")->ssd);
	FKV_ASSERT_EQ(stats().ssd_evicted_stale, 1);
	fkv_master_ssd_evicted(F.m, K("both"), v2);
	FKV_ASSERT(!local("both")->ssd);
	FKV_ASSERT_EQ(local("both")->mem_handle, h);	/* route stays */
	fkv_master_ssd_evicted(F.m, K("gone"), v1);
	FKV_ASSERT(local("gone") == NULL);		/* nothing left */
	fkv_master_ssd_evicted(F.m, K("never"), 1);
	FKV_ASSERT_EQ(stats().ssd_evicted, 2);
	FKV_ASSERT_EQ(stats().ssd_evicted_stale, 2);
	FKV_ASSERT_EQ(stats().routes, 1);
	FKV_ASSERT_EQ(F.ndrops, 1);	/* only ssd_only()'s own drop */
	check_consistent();
	fkv_master_destroy(F.m);
}

/* ---- owner restart ---- */

FKV_TEST(owner_restart_forgets_every_replica_of_the_old_instance)
{
	struct fkv_get_result g;
	uint64_t inflight, next;
	uint32_t flags;

	mk(100 * U, SSD, "lru", 100, 100);
	put("mem", U, NULL);
	put_committed("both", U, NULL);
	ssd_only("ssd", U);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("mem"), U, &inflight,
					   &flags), 0);
	F.ndrops = 0;
	/* Same incarnation: nothing happens (a capacity update only). */
	fkv_master_owner_restart(F.m, INC, 2 * SSD);
	FKV_ASSERT_EQ(stats().routes, 3);
	FKV_ASSERT_EQ(stats().ssd_capacity, 2 * SSD);

	fkv_master_owner_restart(F.m, INC + 1, 0);
	/* Those handles died with the owner: no DROP_REPLICA. */
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(stats().routes, 0);
	FKV_ASSERT_EQ(stats().used, 0);
	FKV_ASSERT_EQ(stats().reserved, 0);
	FKV_ASSERT_EQ(stats().inflight, 0);
	FKV_ASSERT_EQ(stats().policy_objects, 0);
	FKV_ASSERT_EQ(stats().ssd_replicas, 0);
	FKV_ASSERT_EQ(stats().forgotten, 2);
	FKV_ASSERT_EQ(stats().owner_restarts, 1);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("ssd"), &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("mem"), inflight, 0x77, U,
					  &flags), -ETIMEDOUT);
	/* Versions keep increasing; the new instance has no SSD. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("mem"), U, &next, &flags),
		      0);
	FKV_ASSERT_GT(next, inflight);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("mem"), next, 0x78, U,
					  &flags), 0);
	FKV_ASSERT_EQ(local("mem")->tomb_tag, INC + 1);
	check_consistent();
	fkv_master_destroy(F.m);
}

/* ---- dispatcher ---- */

static struct fkv_upcall up(uint8_t cmd, uint32_t present_bits,
			    const char *key)
{
	struct fkv_upcall u = {
		.cmd = cmd, .present = present_bits | A(REQ_ID), .req_id = 9,
	};

	if (key) {
		u.key = (const uint8_t *)key;
		u.key_len = strlen(key);
		u.present |= A(KEY);
	}
	return u;
}

FKV_TEST(dispatch_answers_the_ssd_flow_with_the_right_attributes)
{
	struct fkv_upcall u;
	struct fkv_reply r;
	uint64_t id, h;

	mk(100 * U, 0, "lru", 100, 100);
	/* SSD_STATE: a notification, no answer; later puts persist. */
	u = up(FLUXONKV_CMD_SSD_STATE, A(SSD_CAPACITY), NULL);
	u.present &= ~A(REQ_ID);
	u.ssd_capacity = SSD;
	FKV_ASSERT(!fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(stats().ssd_capacity, SSD);

	u = up(FLUXONKV_CMD_PUT_START, A(LEN), "k");
	u.len = 3 * U;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(PUT_ID) | A(FLAGS));
	FKV_ASSERT_EQ(r.flags, FLUXONKV_PUT_F_PERSIST);
	id = r.put_id;
	u = up(FLUXONKV_CMD_PUT_DONE, A(PUT_ID) | A(HANDLE) | A(LEN), "k");
	u.put_id = id;
	u.handle = h = 0x31;
	u.len = 3 * U;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.flags, FLUXONKV_PUT_F_PUBLISHED);

	/* SSD_COMMIT: STATUS 0 + FLAGS, published or not. */
	u = up(FLUXONKV_CMD_SSD_COMMIT, A(PUT_ID) | A(LEN), "k");
	u.put_id = id;
	u.len = 3 * U;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(FLAGS));
	FKV_ASSERT_EQ(r.flags, FLUXONKV_SSD_F_PUBLISHED);
	u.put_id = id + 50;	/* never published */
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(FLAGS));
	FKV_ASSERT_EQ(r.flags, 0);
	/* Without LEN it is malformed. */
	u.present &= ~A(LEN);
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -EINVAL);
	FKV_ASSERT_EQ(r.present, 0);

	/* Memory evicted: GET_START answers SSD, PUT_ID, LEN, no HANDLE. */
	evict_oldest(h);
	u = up(FLUXONKV_CMD_GET_START, 0, "k");
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(SOURCE) | A(PUT_ID) | A(LEN));
	FKV_ASSERT_EQ(r.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(r.put_id, id);
	FKV_ASSERT_EQ(r.len, 3 * U);

	/* GET_DONE of the refill: FLAGS = PROMOTED. */
	u = up(FLUXONKV_CMD_GET_DONE,
	       A(PUT_ID) | A(HANDLE) | A(LEN) | A(SOURCE), "k");
	u.put_id = id;
	u.handle = 0x32;
	u.len = 3 * U;
	u.source = FLUXONKV_SOURCE_SSD;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(FLAGS));
	FKV_ASSERT_EQ(r.flags, FLUXONKV_GET_F_PROMOTED);
	u = up(FLUXONKV_CMD_GET_START, 0, "k");
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.present, A(SOURCE) | A(HANDLE) | A(PUT_ID) | A(LEN));
	FKV_ASSERT_EQ(r.handle, 0x32);

	/* GET_REVOKE: STATUS only, and the SSD replica is gone. */
	u = up(FLUXONKV_CMD_GET_REVOKE, A(PUT_ID) | A(SOURCE) | A(ERRNO), "k");
	u.put_id = id;
	u.source = FLUXONKV_SOURCE_SSD;
	u.error = -ENOENT;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, 0);
	FKV_ASSERT(!local("k")->ssd);

	/* SSD_STATE without its attribute is not applied, not answered. */
	u = up(FLUXONKV_CMD_SSD_STATE, 0, NULL);
	u.present = 0;
	FKV_ASSERT(!fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(stats().ssd_capacity, SSD);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(dispatch_answers_a_failed_ssd_commit_with_status_0_and_no_flags)
{
	struct fkv_upcall u;
	struct fkv_reply r;
	uint64_t id, h;

	mk(100 * U, SSD, "lru", 100, 100);
	id = put("k", 3 * U, &h);
	/* ERRNO: failed; LEN is not needed to say so. */
	u = up(FLUXONKV_CMD_SSD_COMMIT, A(PUT_ID) | A(ERRNO), "k");
	u.put_id = id;
	u.error = -EIO;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(FLAGS));
	FKV_ASSERT_EQ(r.flags, 0);
	FKV_ASSERT(!local("k")->persisting);
	FKV_ASSERT(!local("k")->ssd);
	FKV_ASSERT_EQ(stats().persist_failures, 1);
	FKV_ASSERT_EQ(stats().policy_objects, 1);

	/* ERRNO with LEN, as the module sends it: the same. */
	id = put("j", 3 * U, NULL);
	u = up(FLUXONKV_CMD_SSD_COMMIT, A(PUT_ID) | A(LEN) | A(ERRNO), "j");
	u.put_id = id;
	u.len = 3 * U;
	u.error = -ENOSPC;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.flags, 0);
	FKV_ASSERT(!local("j")->ssd);
	FKV_ASSERT_EQ(stats().persist_failures, 2);

	/* An ERRNO of 0 is a success. */
	id = put("s", 3 * U, NULL);
	u = up(FLUXONKV_CMD_SSD_COMMIT, A(PUT_ID) | A(LEN) | A(ERRNO), "s");
	u.put_id = id;
	u.len = 3 * U;
	u.error = 0;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.flags, FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT(local("s")->ssd);
	FKV_ASSERT_EQ(stats().persist_failures, 2);

	/* A success still needs LEN; a failure still needs PUT_ID. */
	u.present &= ~(A(LEN) | A(ERRNO));
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -EINVAL);
	FKV_ASSERT_EQ(r.present, 0);
	u = up(FLUXONKV_CMD_SSD_COMMIT, A(LEN) | A(ERRNO), "s");
	u.len = 3 * U;
	u.error = -EIO;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -EINVAL);
	FKV_ASSERT_EQ(stats().persist_failures, 2);
	check_consistent();
	fkv_master_destroy(F.m);
}

/* ---- SSD_EVICTED entries, built by hand as the kernel lays them out ---- */

struct abuf {
	uint8_t b[4096];
	size_t len;
};

/* Append an attribute; returns its offset (for nests). */
static size_t aput(struct abuf *a, uint16_t type, const void *data,
		   size_t len)
{
	struct nlattr h = { .nla_len = (uint16_t)(NLA_HDRLEN + len),
			    .nla_type = type };
	size_t off = a->len;

	FKV_ASSERT_LE(off + NLA_ALIGN(NLA_HDRLEN + len), sizeof(a->b));
	memset(a->b + off, 0, NLA_ALIGN(NLA_HDRLEN + len));
	memcpy(a->b + off, &h, sizeof(h));
	if (len)
		memcpy(a->b + off + NLA_HDRLEN, data, len);
	a->len += NLA_ALIGN(NLA_HDRLEN + len);
	return off;
}

static size_t nest_start(struct abuf *a)
{
	return aput(a, NLA_F_NESTED | FLUXONKV_A_ENTRY, NULL, 0);
}

static void nest_end(struct abuf *a, size_t off)
{
	uint16_t len = (uint16_t)(a->len - off);

	memcpy(a->b + off, &len, sizeof(len));
}

static void entry(struct abuf *a, const char *key, uint64_t put_id)
{
	size_t n = nest_start(a);

	aput(a, FLUXONKV_A_KEY, key, strlen(key));
	aput(a, FLUXONKV_A_PAD, NULL, 0);
	aput(a, FLUXONKV_A_PUT_ID, &put_id, sizeof(put_id));
	nest_end(a, n);
}

FKV_TEST(an_ssd_evicted_batch_with_a_malformed_entry_applies_the_others)
{
	static struct abuf a;
	struct fkv_upcall u;
	struct fkv_reply r;
	uint64_t ida, idb, idc, zero = 0;
	uint32_t bad32 = 1;
	size_t n;

	mk(100 * U, SSD, "lru", 100, 100);
	ida = ssd_only("a", U);
	idb = ssd_only("b", U);
	idc = ssd_only("c", U);
	memset(&a, 0, sizeof(a));
	entry(&a, "a", ida);
	n = nest_start(&a);		/* PUT_ID of the wrong size */
	aput(&a, FLUXONKV_A_KEY, "b", 1);
	aput(&a, FLUXONKV_A_PUT_ID, &bad32, sizeof(bad32));
	nest_end(&a, n);
	n = nest_start(&a);			/* no KEY */
	aput(&a, FLUXONKV_A_PUT_ID, &idb, sizeof(idb));
	nest_end(&a, n);
	n = nest_start(&a);			/* PUT_ID 0 */
	aput(&a, FLUXONKV_A_KEY, "b", 1);
	aput(&a, FLUXONKV_A_PUT_ID, &zero, sizeof(zero));
	nest_end(&a, n);
	entry(&a, "c", idc);
	entry(&a, "b", idb + 1000);		/* another version */

	u = up(FLUXONKV_CMD_SSD_EVICTED, A(ENTRY), NULL);
	u.present &= ~A(REQ_ID);
	u.attrs = a.b;
	u.attrs_len = a.len;
	FKV_ASSERT(!fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT(local("a") == NULL);
	FKV_ASSERT(local("b") != NULL && local("b")->ssd);
	FKV_ASSERT(local("c") == NULL);
	FKV_ASSERT_EQ(stats().ssd_evicted, 2);
	FKV_ASSERT_EQ(stats().ssd_evicted_stale, 1);
	FKV_ASSERT_EQ(stats().routes, 1);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(entry_walk_stops_at_a_truncated_stream_and_skips_other_attributes)
{
	static struct abuf a;
	struct fkv_ssd_entry e;
	struct fkv_upcall u = { 0 };
	size_t pos = 0;
	uint64_t id = 7;

	memset(&a, 0, sizeof(a));
	aput(&a, FLUXONKV_A_PAD, NULL, 0);
	entry(&a, "x", id);
	aput(&a, FLUXONKV_A_REQ_ID, &id, sizeof(id));
	entry(&a, "yy", id + 1);
	u.attrs = a.b;
	u.attrs_len = a.len - 4;	/* the last entry is cut short */
	FKV_ASSERT_EQ(fkv_upcall_next_entry(&u, &pos, &e), 1);
	FKV_ASSERT_EQ(e.key_len, 1);
	FKV_ASSERT(!memcmp(e.key, "x", 1));
	FKV_ASSERT_EQ(e.put_id, 7);
	FKV_ASSERT_EQ(fkv_upcall_next_entry(&u, &pos, &e), 0);
	/* Whole: both, then the end, and the end again. */
	pos = 0;
	u.attrs_len = a.len;
	FKV_ASSERT_EQ(fkv_upcall_next_entry(&u, &pos, &e), 1);
	FKV_ASSERT_EQ(fkv_upcall_next_entry(&u, &pos, &e), 1);
	FKV_ASSERT_EQ(e.key_len, 2);
	FKV_ASSERT_EQ(e.put_id, 8);
	FKV_ASSERT_EQ(fkv_upcall_next_entry(&u, &pos, &e), 0);
	FKV_ASSERT_EQ(fkv_upcall_next_entry(&u, &pos, &e), 0);
	/* No stream at all. */
	u.attrs = NULL;
	pos = 0;
	FKV_ASSERT_EQ(fkv_upcall_next_entry(&u, &pos, &e), 0);
}

/* ---- end to end: a workload through both tiers ---- */

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return fkv_mix64(*s);
}

/*
 * Every key is put once, persisted and committed; gets that find only the
 * SSD replica refill it (GET_DONE).  With a ring large enough for all keys
 * nothing is ever missed, and memory accounting stays exact.
 */
FKV_TEST(workload_over_memory_and_ssd_never_misses_a_committed_key)
{
	uint64_t s = 1, ssd_hits = 0, mem_hits = 0, handle = 0x100000;
	int i;

	mk(256 * U, SSD * 10, "s3fifo", 0, 0);
	for (i = 0; i < 30000; i++) {
		uint64_t k = rng_next(&s) % 1500, k2 = rng_next(&s) % 1500;
		struct fkv_get_result g;
		char key[16];

		if (k2 < k)
			k = k2;
		snprintf(key, sizeof(key), "obj%llu", (unsigned long long)k);
		if (fkv_master_get_start(F.m, K(key), &g) == -ENOENT) {
			/* First time only: it never leaves both tiers. */
			FKV_ASSERT_EQ(stats().puts,
				      stats().ssd_commits_published);
			put_committed(key, (1 + k % 4) * U, NULL);
			continue;
		}
		if (g.source == FLUXONKV_SOURCE_MEMORY) {
			mem_hits++;
			fkv_master_access(F.m, g.handle);
			continue;
		}
		FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
		ssd_hits++;
		FKV_ASSERT_EQ(get_done_ssd(key, g.put_id, handle++, g.len),
			      FLUXONKV_GET_F_PROMOTED);
		FKV_ASSERT_LE(stats().used, stats().capacity);
	}
	fkv_diag("ssd workload: %llu memory hits, %llu SSD refills, %llu "
		 "keys", (unsigned long long)mem_hits,
		 (unsigned long long)ssd_hits,
		 (unsigned long long)stats().puts);
	FKV_ASSERT_GT(ssd_hits, 0);
	FKV_ASSERT_GT(mem_hits, 0);
	FKV_ASSERT_EQ(stats().routes, stats().puts);
	FKV_ASSERT_EQ(stats().ssd_replicas, stats().puts);
	FKV_ASSERT_EQ(stats().promotions, ssd_hits);
	FKV_ASSERT_EQ(stats().drops, stats().evictions);
	check_consistent();
	fkv_master_destroy(F.m);
}

/*
 * A bootstrap into a small segment, as the module drives it: @slots one-unit
 * slots, 3 * @slots serial puts of distinct keys, all answered PERSIST, and
 * the SSD writer reporting each SSD_COMMIT @lag puts after its PUT_DONE.
 * The module allocates after PUT_START; a full segment sends NEED_ROOM, and
 * while that answers -ENOSPC the module waits (its 5 s retry) during which
 * the writer catches up: the oldest pending commit arrives.  No holders:
 * a DROP_REPLICA frees its slot at once.
 */
static void bootstrap(const char *policy, unsigned int slots,
		      unsigned int lag)
{
	unsigned int n = 3 * slots, i, head = 0, tail = 0, waits = 0;
	uint64_t ids[3 * 64], allocated = 0;
	uint32_t flags;
	char key[16];

	FKV_ASSERT_LE(n, sizeof(ids) / sizeof(ids[0]));
	mk(slots * U, SSD, policy, 0, 0);
	for (i = 0; i < n; i++) {
		uint64_t h = F.next_handle++;

		snprintf(key, sizeof(key), "boot%u", i);
		FKV_ASSERT_EQ(fkv_master_put_start(F.m, K(key), U, &ids[i],
						   &flags), 0);
		FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PERSIST);
		/* The module's segment: allocated minus dropped slots. */
		while (allocated - F.ndrops >= slots) {
			if (!fkv_master_need_room(F.m, U,
						  (allocated - F.ndrops) * U))
				continue;
			/* Only persisting replicas are left in memory... */
			FKV_ASSERT_EQ(stats().persisting,
				      stats().mem_replicas);
			/* ... and their commits are what the module awaits. */
			FKV_ASSERT_LT(head, tail);
			snprintf(key, sizeof(key), "boot%u", head);
			FKV_ASSERT_EQ(commit(key, ids[head], U),
				      FLUXONKV_SSD_F_PUBLISHED);
			head++;
			waits++;
		}
		allocated++;
		snprintf(key, sizeof(key), "boot%u", i);
		FKV_ASSERT_EQ(fkv_master_put_done(F.m, K(key), ids[i], h, U,
						  &flags), 0);
		FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
		tail++;
		while (tail - head > lag) {
			snprintf(key, sizeof(key), "boot%u", head);
			/* Every commit finds its memory replica. */
			FKV_ASSERT_EQ(commit(key, ids[head], U),
				      FLUXONKV_SSD_F_PUBLISHED);
			head++;
		}
		FKV_ASSERT_LE(stats().used, slots * U);
		check_consistent();
	}
	for (; head < tail; head++) {
		snprintf(key, sizeof(key), "boot%u", head);
		FKV_ASSERT_EQ(commit(key, ids[head], U),
			      FLUXONKV_SSD_F_PUBLISHED);
	}
	/* Every key has its value in memory or on SSD. */
	for (i = 0; i < n; i++) {
		const struct fkv_replica *rep;
		struct fkv_get_result g;

		snprintf(key, sizeof(key), "boot%u", i);
		rep = local(key);
		FKV_ASSERT(rep != NULL);
		FKV_ASSERT(rep->mem_handle || rep->ssd);
		FKV_ASSERT(rep->ssd);
		FKV_ASSERT_EQ(fkv_master_get_start(F.m, K(key), &g), 0);
		FKV_ASSERT_EQ(g.put_id, ids[i]);
	}
	FKV_ASSERT_EQ(stats().routes, n);
	FKV_ASSERT_EQ(stats().ssd_replicas, n);
	FKV_ASSERT_EQ(stats().ssd_commits_published, n);
	FKV_ASSERT_EQ(stats().ssd_commits_ignored, 0);
	FKV_ASSERT_EQ(stats().persisting, 0);
	FKV_ASSERT_GE(stats().evictions, n - slots);
	FKV_ASSERT_EQ(stats().drops, stats().evictions);
	/*
	 * The module waited exactly when the writer lagged a full segment:
	 * below that the watermark always found committed replicas to evict.
	 */
	if (lag < slots)
		FKV_ASSERT_EQ(waits, 0);
	else
		FKV_ASSERT_GT(waits, 0);
	fkv_diag("bootstrap %s, %u slots, lag %u: %u waits, %llu evictions",
		 policy, slots, lag, waits,
		 (unsigned long long)stats().evictions);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(a_bootstrap_into_a_small_segment_never_loses_a_value)
{
	static const unsigned int lags[] = { 0, 1, 3, 8, 12, 15, 16, 17, 32,
					     100 };
	size_t p, l;

	for (p = 0; p < sizeof(policies) / sizeof(policies[0]); p++)
		for (l = 0; l < sizeof(lags) / sizeof(lags[0]); l++)
			bootstrap(policies[p], 16, lags[l]);
	bootstrap("s3fifo", 64, 50);
	bootstrap("lru", 1, 0);
	bootstrap("lru", 1, 2);
}

/* ---- warm restart: an adopted replica whose persist never committed ---- */

FKV_TEST(an_adopted_replica_without_its_ssd_copy_is_persisted_again)
{
	uint64_t h1 = 0x7001, h2 = 0x7002, h3 = 0x7003;

	mk(100 * U, 50 * U, NULL, 0, 0);
	/* DRAM only (its commit never came), DRAM + SSD, too big for the SSD */
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, K("a"), 11, h1, 2 * U, false), 1);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, K("b"), 12, h2, 2 * U, false), 1);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, K("b"), 12, 0, 2 * U, true), 1);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, K("c"), 13, h3, 60 * U, false), 1);
	FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("a"), 11, h1), 1);
	FKV_ASSERT_EQ(F.npersist, 1);
	FKV_ASSERT_EQ(F.persist_handle, h1);
	FKV_ASSERT_EQ(F.persist_put_id, 11);
	FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("b"), 12, h2), 0);
	FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("c"), 13, h3), 0);
	/* a stale version or handle asks nothing */
	FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("a"), 10, h1), 0);
	FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("a"), 11, h2), 0);
	FKV_ASSERT_EQ(F.npersist, 1);
	FKV_ASSERT_EQ(stats().repersisted, 1);
	/* its SSD_COMMIT then gives the route its SSD copy */
	{
		uint32_t flags = 0;

		FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, K("a"), 11, 2 * U,
						    &flags), 0);
		FKV_ASSERT_EQ(flags, FLUXONKV_SSD_F_PUBLISHED);
		FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("a"), 11, h1), 0);
	}
	fkv_master_destroy(F.m);
}

/*
 * Issue 33: fluxond killed with a put's persist queued, started again at
 * once.  The adopted DRAM replica is persisted again and stays out of the
 * policy until a commit; the old daemon's write then commits late (the
 * replica becomes evictable and is evicted), and the second write's
 * commit, which took the first copy's place in the ring, is published
 * too: the route keeps its SSD copy whatever the order.
 */
FKV_TEST(a_repersisted_adopted_replica_stays_until_a_commit_and_both_commits_publish)
{
	struct fkv_get_result g;
	uint64_t h1 = 0x7001;

	mk(4 * U, 50 * U, "lru", 100, 100);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, K("a"), 11, h1, 2 * U, false), 1);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("a"), 11, h1), 1);
	/* persisting: no eviction takes it before a commit */
	FKV_ASSERT(local("a")->persisting);
	FKV_ASSERT_EQ(stats().policy_objects, 0);
	check_consistent();
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 3 * U, 4 * U), -ENOSPC);
	FKV_ASSERT_EQ(F.ndrops, 0);
	/* the first write's late commit: SSD copy, evictable */
	FKV_ASSERT_EQ(commit("a", 11, 2 * U), FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT(!local("a")->persisting);
	check_consistent();
	evict_oldest(h1);
	FKV_ASSERT_EQ(local("a")->mem_handle, 0);
	/* the second write's commit: still the route's SSD copy */
	FKV_ASSERT_EQ(commit("a", 11, 2 * U), FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("a"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(g.put_id, 11);
	check_consistent();
	fkv_master_destroy(F.m);

	/* the first commit lost with the old daemon: the second settles it */
	mk(4 * U, 50 * U, "lru", 100, 100);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, K("b"), 12, h1, 2 * U, false), 1);
	FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("b"), 12, h1), 1);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 3 * U, 4 * U), -ENOSPC);
	FKV_ASSERT_EQ(commit("b", 12, 2 * U), FLUXONKV_SSD_F_PUBLISHED);
	evict_oldest(h1);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("b"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	check_consistent();
	fkv_master_destroy(F.m);

	/* a failed re-persist makes it evictable (memory only) */
	mk(4 * U, 50 * U, "lru", 100, 100);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, K("c"), 13, h1, 2 * U, false), 1);
	FKV_ASSERT_EQ(fkv_master_repersist(F.m, K("c"), 13, h1), 1);
	FKV_ASSERT_EQ(commit_failed("c", 13, -EIO), 0);
	FKV_ASSERT(!local("c")->persisting);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	check_consistent();
	fkv_master_destroy(F.m);
}
