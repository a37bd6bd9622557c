// SPDX-License-Identifier: GPL-2.0
/*
 * test_master.c - the master's upcall semantics, driven the way the module
 * drives fluxond: PUT_START/PUT_DONE/PUT_ABORT, GET_START/GET_DONE/
 * GET_REVOKE, DELETE, NEED_ROOM, ACCESS, watermarks and DROP_REPLICA, plus
 * the dispatcher that maps decoded upcalls to replies.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/dispatch.h"
#include "../../userspace/fluxond/hash.h"
#include "../../userspace/fluxond/log.h"
#include "../../userspace/fluxond/master.h"
#include "master_fx.h"


static const uint8_t secret[16] = "master-secret-16";

static struct fkv_master *mk(uint64_t capacity, const char *policy,
			     unsigned int high, unsigned int low)
{
	struct fkv_master_config cfg = {
		.capacity = capacity,
		.incarnation = INC,
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

#define K(s)	(s), strlen(s)

static struct fkv_master_stats stats(void)
{
	struct fkv_master_stats st;

	fkv_master_get_stats(F.m, &st);
	return st;
}

/* PUT_START + PUT_DONE that must publish; returns the handle used. */
static uint64_t put(const char *key, uint64_t len)
{
	uint64_t id = 0, h = F.next_handle++;
	uint32_t flags = 99;

	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K(key), len, &id, &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K(key), id, h, len, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
	return h;
}

static bool present(const char *key)
{
	struct fkv_get_result g;

	return fkv_master_get_start(F.m, K(key), &g) == 0;
}

/* The policy and the route table must name exactly the same bytes. */
static void check_consistent(void)
{
	struct fkv_master_stats st = stats();

	FKV_ASSERT_EQ(st.policy_bytes, st.used);
	FKV_ASSERT_EQ(st.policy_objects, st.mem_replicas);
	/* Without an SSD tier every route is one memory replica. */
	FKV_ASSERT_EQ(st.mem_replicas, st.routes);
}

FKV_TEST(create_refuses_bad_watermarks_and_zero_capacity)
{
	struct fkv_master_config cfg = { .capacity = 100 * U };

	FKV_ASSERT_EQ(fkv_master_check_watermarks(90, 80), 0);
	FKV_ASSERT_EQ(fkv_master_check_watermarks(80, 80), 0);
	FKV_ASSERT_EQ(fkv_master_check_watermarks(80, 90), -EINVAL);
	FKV_ASSERT_EQ(fkv_master_check_watermarks(101, 80), -EINVAL);
	FKV_ASSERT_EQ(fkv_master_check_watermarks(90, 0), -EINVAL);
	cfg.high_pct = 50;
	cfg.low_pct = 60;
	FKV_ASSERT(fkv_master_create(&cfg, &rec_ops, &F) == NULL);
	FKV_ASSERT_EQ(errno, EINVAL);
	cfg.high_pct = cfg.low_pct = 0;
	cfg.capacity = 0;
	FKV_ASSERT(fkv_master_create(&cfg, &rec_ops, &F) == NULL);
	cfg.capacity = 100 * U;
	cfg.policy = "nope";
	FKV_ASSERT(fkv_master_create(&cfg, &rec_ops, &F) == NULL);
}

FKV_TEST(default_watermarks_are_98_and_95_percent)
{
	mk(1000 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(stats().high_bytes, 980 * U);
	FKV_ASSERT_EQ(stats().low_bytes, 950 * U);
	FKV_ASSERT(!strcmp(fkv_master_policy(F.m)->ops->name, "s3fifo"));
	fkv_master_destroy(F.m);
}

FKV_TEST(put_start_answers_increasing_put_ids_and_no_flags)
{
	uint64_t a = 0, b = 0;
	uint32_t fa = 7, fb = 7;

	mk(100 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("x"), 10, &a, &fa), 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("y"), 10, &b, &fb), 0);
	FKV_ASSERT_EQ(a, 1);
	FKV_ASSERT_EQ(b, 2);
	FKV_ASSERT_EQ(fa, 0);
	FKV_ASSERT_EQ(fb, 0);
	FKV_ASSERT_EQ(stats().reserved, 2 * U);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "", 0, 10, &a, &fa), -EINVAL);
	fkv_master_destroy(F.m);
}

FKV_TEST(get_start_returns_the_published_memory_replica)
{
	struct fkv_get_result g;
	uint64_t id = 0, h = 0xfeed;
	uint32_t flags;

	mk(100 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("k"), 12345, &id, &flags),
		      0);
	/* In flight only: not visible yet. */
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("k"), id, h, 12345, &flags),
		      0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(g.handle, h);
	FKV_ASSERT_EQ(g.put_id, id);
	FKV_ASSERT_EQ(g.len, 12345);
	FKV_ASSERT_EQ(stats().used, 4 * U);
	FKV_ASSERT_EQ(stats().reserved, 0);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(newer_put_id_wins_a_late_older_put_done_is_not_published)
{
	struct fkv_get_result g;
	uint64_t old_id, new_id;
	uint32_t flags;

	mk(100 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("k"), U, &old_id, &flags),
		      0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("k"), 2 * U, &new_id,
					   &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("k"), new_id, 0xb, 2 * U,
					  &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
	flags = 99;
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("k"), old_id, 0xa, U,
					  &flags), 0);
	FKV_ASSERT_EQ(flags, 0);	/* not published: module frees it */
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.put_id, new_id);
	FKV_ASSERT_EQ(g.handle, 0xb);
	/* The older handle is neither dropped nor tracked for eviction. */
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	FKV_ASSERT_EQ(stats().superseded, 1);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 100 * U, 0), 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], 0xb);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(overwrite_drops_the_old_handle_before_the_reply)
{
	struct fkv_get_result g;
	uint64_t h1, h2;

	mk(100 * U, NULL, 0, 0);
	h1 = put("k", 3 * U);
	FKV_ASSERT_EQ(F.ndrops, 0);
	h2 = put("k", U);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], h1);
	FKV_ASSERT_EQ(F.drop_flags[0], 0);	/* not an eviction */
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.handle, h2);
	FKV_ASSERT_EQ(stats().used, U);
	FKV_ASSERT_EQ(stats().policy_objects, 1);
	FKV_ASSERT_EQ(stats().policy_bytes, U);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(delete_drops_the_handle_and_returns_the_deleted_put_id)
{
	struct fkv_get_result g;
	uint64_t h, deleted = 0;

	mk(100 * U, NULL, 0, 0);
	put("a", U);
	h = put("b", 2 * U);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("b"), &g), 0);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("b"), &deleted), 0);
	FKV_ASSERT_EQ(deleted, g.put_id);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], h);
	FKV_ASSERT_EQ(F.drop_flags[0], 0);	/* not an eviction */
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("b"), &g), -ENOENT);
	FKV_ASSERT(present("a"));
	FKV_ASSERT_EQ(stats().used, U);
	FKV_ASSERT_EQ(stats().deletes, 1);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(delete_of_a_missing_key_is_enoent)
{
	uint64_t deleted = 42;

	mk(100 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("nope"), &deleted), -ENOENT);
	FKV_ASSERT_EQ(deleted, 0);
	put("k", U);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("k"), &deleted), 0);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, K("k"), &deleted), -ENOENT);
	FKV_ASSERT_EQ(F.ndrops, 1);
	fkv_master_destroy(F.m);
}

FKV_TEST(put_abort_forgets_the_inflight_put_and_its_reservation)
{
	uint64_t id;
	uint32_t flags;

	mk(100 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("k"), 5 * U, &id, &flags),
		      0);
	FKV_ASSERT_EQ(stats().reserved, 5 * U);
	fkv_master_put_abort(F.m, K("k"), id, 0, -EFAULT);
	FKV_ASSERT_EQ(stats().reserved, 0);
	FKV_ASSERT_EQ(stats().inflight, 0);
	FKV_ASSERT_EQ(stats().aborted, 1);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("k"), id, 1, 5 * U, &flags),
		      -ETIMEDOUT);
	FKV_ASSERT(!present("k"));
	fkv_master_destroy(F.m);
}

FKV_TEST(inflight_put_past_its_ttl_is_swept_and_releases_its_reservation)
{
	uint64_t id, id2;
	uint32_t flags;

	mk(100 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("k"), 7 * U, &id, &flags),
		      0);
	F.now += 59999;
	fkv_master_tick(F.m);
	FKV_ASSERT_EQ(stats().reserved, 7 * U);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("j"), U, &id2, &flags), 0);
	F.now += 1;
	fkv_master_tick(F.m);
	FKV_ASSERT_EQ(stats().reserved, U);
	FKV_ASSERT_EQ(stats().inflight, 1);
	FKV_ASSERT_EQ(stats().expired, 1);
	flags = 99;
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("k"), id, 9, 7 * U, &flags),
		      -ETIMEDOUT);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT(!present("k"));
	FKV_ASSERT_EQ(F.ndrops, 0);
	fkv_master_destroy(F.m);
}

/*
 * NEED_ROOM without the segment's usage: at least the bytes asked for.
 * With it: what the allocation takes past the low watermark -- the module
 * moves values to make its free bytes one run, so free bytes need no
 * eviction.
 */
FKV_TEST(need_room_evicts_what_the_allocation_lacks)
{
	uint64_t h[10];
	int i;

	/* Watermarks at 100%: no eviction ahead of need. */
	mk(100 * U, "lru", 100, 100);
	for (i = 0; i < 10; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		h[i] = put(key, 4 * U);
	}
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 10 * U, 0), 0);
	/* Three 4-unit replicas (12 >= 10), the least recently used. */
	FKV_ASSERT_EQ(F.ndrops, 3);
	FKV_ASSERT_EQ(F.drops[0], h[0]);
	FKV_ASSERT_EQ(F.drops[1], h[1]);
	FKV_ASSERT_EQ(F.drops[2], h[2]);
	for (i = 0; i < 3; i++)
		FKV_ASSERT_EQ(F.drop_flags[i], FLUXONKV_DROP_F_EVICTED);
	FKV_ASSERT(!present("k0") && !present("k1") && !present("k2"));
	FKV_ASSERT(present("k3"));
	FKV_ASSERT_EQ(stats().used, 28 * U);
	FKV_ASSERT_EQ(stats().evictions, 3);
	FKV_ASSERT_EQ(stats().evicted_bytes, 12 * U);
	/* the segment at 96 (68 the master does not know of): 96 + 10 - 100 */
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 10 * U, 96 * U), 0);
	FKV_ASSERT_EQ(F.ndrops, 5);	/* two replicas: 8 >= 6 */
	FKV_ASSERT_EQ(F.drops[3], h[4]);	/* present() used k3 */
	FKV_ASSERT_EQ(F.drops[4], h[5]);
	FKV_ASSERT_EQ(stats().evicted_bytes, 20 * U);
	/* 10 free of a 40-unit segment: one replica only */
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 10 * U, 40 * U), 0);
	FKV_ASSERT_EQ(F.ndrops, 6);
	check_consistent();
	fkv_master_destroy(F.m);
}

/*
 * NEED_ROOM says how full the segment really is; what this master does not
 * account for (refills not yet offered, temporary holders) is made room
 * for too, down to the low watermark: not one allocation's worth at a time.
 */
FKV_TEST(need_room_evicts_down_to_the_low_watermark_of_the_real_usage)
{
	int i;

	mk(100 * U, "lru", 98, 95);
	for (i = 0; i < 45; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		put(key, 2 * U);
	}
	FKV_ASSERT_EQ(F.ndrops, 0);	/* 90 of 100: below the watermarks */
	/* the segment is at 99 (9 units the master does not know of) */
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 99 * U), 0);
	/* 99 + 1 - 95 = 5 units: three 2-unit replicas */
	FKV_ASSERT_EQ(F.ndrops, 3);
	FKV_ASSERT_EQ(stats().used, 84 * U);
	/* a segment with room to spare: one replica (the module asks
	 * only when its free bytes cannot be made one run) */
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 10 * U), 0);
	FKV_ASSERT_EQ(F.ndrops, 4);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(need_room_with_nothing_evictable_is_enospc)
{
	uint64_t id;
	uint32_t flags;

	mk(100 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 0), -ENOSPC);
	/* In-flight puts hold room but are not evictable. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("k"), 50 * U, &id, &flags),
		      0);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 50 * U), -ENOSPC);
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(stats().need_room_enospc, 2);
	/* Once something is published it can be evicted. */
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, K("k"), id, 0x77, 50 * U,
					  &flags), 0);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, 50 * U), 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], 0x77);
	fkv_master_destroy(F.m);
}

FKV_TEST(need_room_of_zero_bytes_still_evicts_one_replica)
{
	mk(100 * U, NULL, 0, 0);
	put("a", U);
	put("b", U);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 0, 0), 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	fkv_master_destroy(F.m);
}

FKV_TEST(below_the_high_watermark_nothing_is_evicted)
{
	uint64_t id;
	uint32_t flags;
	int i;

	mk(100 * U, "lru", 90, 80);
	for (i = 0; i < 8; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		put(key, 10 * U);
	}
	/* 80 used + 10 reserved = 90: at, not above, the high mark. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("k8"), 10 * U, &id, &flags),
		      0);
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(stats().used + stats().reserved, 90 * U);
	fkv_master_destroy(F.m);
}

FKV_TEST(put_start_above_the_high_watermark_evicts_down_to_the_low_one)
{
	uint64_t h[9], id;
	uint32_t flags;
	int i;

	mk(100 * U, "lru", 90, 80);
	for (i = 0; i < 9; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		h[i] = put(key, 10 * U);
	}
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(stats().used, 90 * U);
	/* 90 used + 10 reserved = 100 > 90: evict 20 down to 80. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("new"), 10 * U, &id, &flags),
		      0);
	FKV_ASSERT_EQ(F.ndrops, 2);
	FKV_ASSERT_EQ(F.drops[0], h[0]);
	FKV_ASSERT_EQ(F.drops[1], h[1]);
	FKV_ASSERT_EQ(F.drop_flags[0], FLUXONKV_DROP_F_EVICTED);
	FKV_ASSERT_EQ(F.drop_flags[1], FLUXONKV_DROP_F_EVICTED);
	FKV_ASSERT_EQ(stats().used, 70 * U);
	FKV_ASSERT_EQ(stats().reserved, 10 * U);
	FKV_ASSERT_LE(stats().used + stats().reserved, stats().low_bytes);
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(configured_watermarks_are_honoured)
{
	uint64_t id;
	uint32_t flags;
	int i;

	mk(100 * U, "lru", 50, 20);
	for (i = 0; i < 5; i++) {
		char key[8];

		snprintf(key, sizeof(key), "k%d", i);
		put(key, 10 * U);
	}
	FKV_ASSERT_EQ(F.ndrops, 0);	/* 40 used + 10 reserved = 50 */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("x"), 10 * U, &id, &flags),
		      0);
	/* 50 + 10 = 60 > 50: down to 20, i.e. 40 bytes of replicas go. */
	FKV_ASSERT_EQ(F.ndrops, 4);
	FKV_ASSERT_EQ(stats().used, 10 * U);
	fkv_master_destroy(F.m);
}

/* Hot key hit through ACCESS (or not), then a scan of one-time puts. */
static bool hot_survives_scan(const char *policy, int hits)
{
	uint64_t hot;
	bool alive;
	int i;

	mk(100 * U, policy, 0, 0);
	hot = put("hot", U);
	for (i = 0; i < hits; i++)
		fkv_master_access(F.m, hot);
	for (i = 0; i < 500; i++) {
		char key[16];

		snprintf(key, sizeof(key), "scan%d", i);
		put(key, U);
	}
	FKV_ASSERT_GT(F.ndrops, 400);	/* the scan did evict */
	check_consistent();
	alive = present("hot");
	fkv_master_destroy(F.m);
	return alive;
}

FKV_TEST(access_hits_keep_an_object_through_a_scan_with_s3fifo)
{
	FKV_ASSERT(hot_survives_scan("s3fifo", 3));
	/* Without the ACCESS hits it is a one-time object like the rest. */
	FKV_ASSERT(!hot_survives_scan("s3fifo", 0));
	/* LRU forgets hits that are older than the scan. */
	FKV_ASSERT(!hot_survives_scan("lru", 3));
}

FKV_TEST(access_with_unknown_handles_is_harmless)
{
	mk(100 * U, NULL, 0, 0);
	put("a", U);
	fkv_master_access(F.m, 0);
	fkv_master_access(F.m, 0xdeadbeef);
	FKV_ASSERT_EQ(stats().accesses, 2);
	FKV_ASSERT(present("a"));
	check_consistent();
	fkv_master_destroy(F.m);
}

FKV_TEST(without_ssd_get_done_promotes_nothing_and_get_revoke_keeps_memory)
{
	uint32_t flags = 99;
	uint64_t h;

	mk(100 * U, NULL, 0, 0);
	h = put("a", U);
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, K("a"), 1, h, U,
					  FLUXONKV_SOURCE_MEMORY, &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	/* An "SSD refill" of a key that has no SSD replica: not promoted. */
	flags = 99;
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, K("a"), 1, 0x999, U,
					  FLUXONKV_SOURCE_SSD, &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT(fkv_routes_by_handle(fkv_master_routes(F.m), 0x999) == NULL);
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("a"), 1,
					    FLUXONKV_SOURCE_SSD, 0, -EIO), 0);
	/* No SSD replica to clear: the memory one is untouched. */
	FKV_ASSERT(present("a"));
	FKV_ASSERT_EQ(F.ndrops, 0);
	fkv_master_destroy(F.m);
}

/*
 * The module lost a published replica (its PUT_DONE timed out, or a get
 * found the memory route stale): the master forgets that handle so gets
 * are no longer routed to it; other handles and versions are untouched.
 */
FKV_TEST(module_reported_lost_replicas_are_forgotten)
{
	struct fkv_get_result g;
	uint64_t ha, hb;

	mk(100 * U, NULL, 0, 0);
	ha = put("a", U);
	hb = put("b", U);
	/* A stale memory route reported with another handle: kept. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("a"), 1,
					    FLUXONKV_SOURCE_MEMORY, hb + 7,
					    -ENOENT), 0);
	FKV_ASSERT(present("a"));
	/* With its own handle: gone, gets miss instead of looping. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, K("a"), 1,
					    FLUXONKV_SOURCE_MEMORY, ha,
					    -ENOENT), 0);
	FKV_ASSERT(!present("a"));
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("a"), &g), -ENOENT);
	/* PUT_ABORT after a published PUT_DONE, naming the handle. */
	fkv_master_put_abort(F.m, K("b"), 2, hb, -ETIMEDOUT);
	FKV_ASSERT(!present("b"));
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("b"), &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_routes_used(fkv_master_routes(F.m)), 0);
	fkv_master_destroy(F.m);
}

/* ---- dispatcher: decoded upcall -> master -> reply ---- */

#define A(x)	FKV_ATTR(FLUXONKV_A_##x)

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

FKV_TEST(dispatch_runs_a_put_and_fills_the_reply_attributes)
{
	struct fkv_upcall u = up(FLUXONKV_CMD_PUT_START, A(LEN), "k");
	struct fkv_reply r;

	mk(100 * U, NULL, 0, 0);
	u.len = 100;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(PUT_ID) | A(FLAGS));
	FKV_ASSERT_EQ(r.put_id, 1);
	FKV_ASSERT_EQ(r.flags, 0);

	u = up(FLUXONKV_CMD_PUT_DONE, A(PUT_ID) | A(HANDLE) | A(LEN), "k");
	u.put_id = 1;
	u.handle = 0x55;
	u.len = 100;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(FLAGS));
	FKV_ASSERT_EQ(r.flags, FLUXONKV_PUT_F_PUBLISHED);

	u = up(FLUXONKV_CMD_GET_START, 0, "k");
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(SOURCE) | A(HANDLE) | A(PUT_ID) | A(LEN));
	FKV_ASSERT_EQ(r.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(r.handle, 0x55);
	FKV_ASSERT_EQ(r.put_id, 1);
	FKV_ASSERT_EQ(r.len, 100);

	u = up(FLUXONKV_CMD_DELETE, 0, "k");
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(PUT_ID));
	FKV_ASSERT_EQ(r.put_id, 1);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], 0x55);

	/* Errors carry no reply attributes. */
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -ENOENT);
	FKV_ASSERT_EQ(r.present, 0);
	u = up(FLUXONKV_CMD_GET_START, 0, "k");
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -ENOENT);
	FKV_ASSERT_EQ(r.present, 0);
	u = up(FLUXONKV_CMD_NEED_ROOM, A(BYTES), NULL);
	u.bytes = U;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -ENOSPC);
	/* GET_DONE answers FLAGS; GET_REVOKE only STATUS (module policy). */
	u = up(FLUXONKV_CMD_GET_DONE,
	       A(PUT_ID) | A(SOURCE) | A(HANDLE) | A(LEN), "k");
	u.handle = 0x56;
	u.len = 100;
	u.put_id = 1;
	u.source = FLUXONKV_SOURCE_SSD;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, A(FLAGS));
	FKV_ASSERT_EQ(r.flags, 0);
	u.cmd = FLUXONKV_CMD_GET_REVOKE;
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.present, 0);
	fkv_master_destroy(F.m);
}

FKV_TEST(dispatch_answers_einval_when_required_attributes_are_missing)
{
	struct fkv_upcall u = up(FLUXONKV_CMD_PUT_DONE, A(PUT_ID) | A(LEN),
				 "k");
	struct fkv_reply r;

	mk(100 * U, NULL, 0, 0);
	/* No HANDLE. */
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -EINVAL);
	FKV_ASSERT_EQ(r.present, 0);
	/* No REQ_ID either: nothing to answer. */
	u.present &= ~A(REQ_ID);
	FKV_ASSERT(!fkv_dispatch(F.m, &u, &r));
	/* GET_START without KEY. */
	u = up(FLUXONKV_CMD_GET_START, 0, NULL);
	FKV_ASSERT(fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -EINVAL);
	FKV_ASSERT_EQ(stats().gets, 0);
	fkv_master_destroy(F.m);
}

FKV_TEST(dispatch_does_not_answer_notifications)
{
	uint8_t raw[3 * sizeof(uint64_t) + 1];
	uint64_t h1, h2;
	struct fkv_upcall u;
	struct fkv_reply r;

	mk(100 * U, NULL, 0, 0);
	h1 = put("a", U);
	h2 = put("b", U);
	/* ACCESS payload at an odd address, as netlink may align it. */
	memcpy(raw + 1, &h1, 8);
	memcpy(raw + 9, &h2, 8);
	memcpy(raw + 17, &h1, 8);
	u = up(FLUXONKV_CMD_ACCESS, A(HANDLES), NULL);
	u.handles = raw + 1;
	u.nhandles = 3;
	FKV_ASSERT(!fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(stats().accesses, 3);
	/* DROPPED, unanswered: b (its second mention gone already), a */
	memcpy(raw + 1, &h2, 8);
	u = up(FLUXONKV_CMD_DROPPED, A(HANDLES), NULL);
	u.handles = raw + 1;
	u.nhandles = 3;
	FKV_ASSERT(!fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(stats().clean_dropped, 2);
	FKV_ASSERT_EQ(stats().clean_dropped_gone, 1);
	FKV_ASSERT_EQ(stats().mem_replicas, 0);

	u = up(FLUXONKV_CMD_PUT_ABORT, A(PUT_ID), "k");
	u.put_id = 12;
	FKV_ASSERT(!fkv_dispatch(F.m, &u, &r));
	/* Commands that are not upcalls are refused, unanswered. */
	u = up(FLUXONKV_CMD_DROP_REPLICA, A(HANDLE), NULL);
	FKV_ASSERT(!fkv_dispatch(F.m, &u, &r));
	FKV_ASSERT_EQ(r.status, -EOPNOTSUPP);
	fkv_master_destroy(F.m);
}

/* ---- end to end: a Zipf workload through the master's upcalls ---- */

static uint64_t rng_next(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ULL;
	return fkv_mix64(*s);
}

/*
 * A get that misses puts the value (as an application filling a cache
 * would); a hit is reported like the kernel's fast path, through ACCESS.
 * Popularity is skewed by drawing the key as the minimum of a few uniform
 * draws, a cheap heavy-headed distribution.  Returns the hit count.
 */
static uint64_t workload(const char *policy, uint64_t *gets)
{
	uint64_t s = 1, hits = 0;
	int i;

	mk(1280 * U, policy, 0, 0);
	*gets = 0;
	for (i = 0; i < 60000; i++) {
		uint64_t k = rng_next(&s) % 2000, j;
		struct fkv_get_result g;
		char key[16];

		for (j = 0; j < 2; j++) {
			uint64_t k2 = rng_next(&s) % 2000;

			if (k2 < k)
				k = k2;
		}
		snprintf(key, sizeof(key), "obj%llu", (unsigned long long)k);
		(*gets)++;
		if (fkv_master_get_start(F.m, K(key), &g) == 0) {
			hits++;
			fkv_master_access(F.m, g.handle);
		} else {
			put(key, (1 + k % 4) * U);
		}
		FKV_ASSERT_LE(stats().used + stats().reserved, stats().capacity);
	}
	check_consistent();
	FKV_ASSERT_EQ(stats().drops, stats().evictions);
	fkv_master_destroy(F.m);
	return hits;
}

FKV_TEST(workload_through_upcalls_keeps_accounting_exact)
{
	uint64_t gets_s3, gets_lru, s3, lru;

	s3 = workload("s3fifo", &gets_s3);
	lru = workload("lru", &gets_lru);
	fkv_diag("master workload: s3fifo %.4f, lru %.4f hit rate",
		 (double)s3 / (double)gets_s3, (double)lru / (double)gets_lru);
	FKV_ASSERT_EQ(gets_s3, gets_lru);
	FKV_ASSERT_GT(lru, 0);
	FKV_ASSERT_GE(s3, lru);
}

/*
 * PUT_LOCAL (uapi FLUXONKV_REGISTER_F_LOCAL_PUTS): the module numbered
 * and published the put; the master publishes the route as PUT_DONE
 * would.  The version it replaced, which the module dropped itself
 * (DROPPED), gets no DROP_REPLICA; an older note than the route is
 * superseded (its handle dropped); a note for a replica already adopted
 * changes nothing; watermarks are enforced without the new replica
 * becoming its own victim.
 */
FKV_TEST(put_local_notes_publish_and_drop_only_what_the_module_kept)
{
	struct fkv_get_result g;

	mk(10 * U, NULL, 50, 20);
	FKV_ASSERT_EQ(fkv_master_put_local(F.m, K("k"), 7, 0x71, U, 0, 0), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.handle, 0x71);
	FKV_ASSERT_EQ(g.put_id, 7);
	FKV_ASSERT_EQ(stats().used, U);
	/* an overwrite the module dropped 0x71 for: nothing sent for it */
	FKV_ASSERT_EQ(fkv_master_put_local(F.m, K("k"), 9, 0x91, 2 * U, 0,
					   0x71), 0);
	FKV_ASSERT_EQ(F.ndrops, 0);
	FKV_ASSERT_EQ(stats().used, 2 * U);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.handle, 0x91);
	/* an older note than the route: superseded, its replica dropped */
	FKV_ASSERT_EQ(fkv_master_put_local(F.m, K("k"), 8, 0x81, U, 0, 0), 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], 0x81);
	FKV_ASSERT_EQ(stats().superseded, 1);
	/* the same replica again (adopted from DUMP first): no change */
	FKV_ASSERT_EQ(fkv_master_put_local(F.m, K("k"), 9, 0x91, 2 * U, 0, 0),
		      0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(stats().used, 2 * U);
	/* above the high watermark (5 U): the older keys go, not the new one */
	FKV_ASSERT_EQ(fkv_master_put_local(F.m, K("a"), 10, 0xa1, U, 0, 0), 0);
	FKV_ASSERT_EQ(fkv_master_put_local(F.m, K("b"), 11, 0xb1, U, 0, 0), 0);
	FKV_ASSERT_EQ(fkv_master_put_local(F.m, K("c"), 12, 0xc1, 2 * U, 0,
					   0), 0);
	FKV_ASSERT_GT(F.ndrops, 1);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("c"), &g), 0);
	FKV_ASSERT_EQ(g.handle, 0xc1);
	FKV_ASSERT(stats().used <= 5 * U, "used %llu after the watermark",
		   (unsigned long long)stats().used);
	/* a later PUT_START numbers above every local put */
	{
		uint64_t id = 0;
		uint32_t flags;

		FKV_ASSERT_EQ(fkv_master_put_start(F.m, K("d"), U, &id,
						   &flags), 0);
		FKV_ASSERT_GT(id, 12);
	}
	check_consistent();
	fkv_master_destroy(F.m);
}

/*
 * A master whose module numbers puts (local_puts) refuses a PUT -- one
 * that started under a daemon taking one-trip puts and reached this one
 * -- and routes nothing for it; a master without it takes the PUT.
 */
FKV_TEST(a_put_reaching_a_local_puts_master_is_refused)
{
	struct fkv_master_config cfg = {
		.capacity = 10 * U, .incarnation = INC, .now_ms = fx_clock,
		.clock_arg = &F, .hash_secret = secret, .local_puts = true,
	};
	struct fkv_get_result g;
	uint64_t pid = 1;
	uint32_t flags = 1;

	fkv_log_setup(FKV_LOG_ERR, false);
	memset(&F, 0, sizeof(F));
	F.m = fkv_master_create(&cfg, &rec_ops, &F);
	FKV_ASSERT(F.m != NULL);
	FKV_ASSERT_EQ(fkv_master_put(F.m, K("k"), 0x71, U, &pid, &flags),
		      -EPROTO);
	FKV_ASSERT_EQ(pid, 0);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), -ENOENT);
	FKV_ASSERT_EQ(stats().inflight, 0);
	FKV_ASSERT_EQ(stats().puts, 0);
	fkv_master_destroy(F.m);

	mk(10 * U, NULL, 0, 0);
	FKV_ASSERT_EQ(fkv_master_put(F.m, K("k"), 0x71, U, &pid, &flags), 0);
	FKV_ASSERT(pid > 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, K("k"), &g), 0);
	FKV_ASSERT_EQ(g.handle, 0x71);
	fkv_master_destroy(F.m);
}
