// SPDX-License-Identifier: GPL-2.0
/*
 * test_master_cluster.c - the master with several owner nodes: routes to
 * another node's DRAM (remote pull), promotion of the pulled copy, per
 * node eviction, revokes of a failed pull, and member-left / restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/master.h"
#include "../../userspace/fluxond/term.h"
#include "master_fx.h"

#define A	1u	/* the master's own node */
#define B	2u
#define INC_A	0xa1ULL
#define INC_B	0xb1ULL
#define SEG	(64 * U)

/* A handle of @node, as its module would stamp it (uapi). */
static uint64_t H(uint32_t node, uint32_t slot, uint64_t put_id)
{
	return FLUXONKV_HANDLE_MAKE(slot, node, put_id);
}

/* A master of config C (its clock the fixture's) with nodes A and B up. */
static void setup_with(struct fkv_master_config c)
{
	c.node = A;
	c.capacity = SEG;
	c.incarnation = INC_A;
	c.now_ms = fx_clock;
	c.clock_arg = &F;
	memset(&F, 0, sizeof(F));
	F.m = fkv_master_create(&c, &rec_ops, &F);
	FKV_ASSERT(F.m != NULL);
	/* The master's own node serves pulls at its data address too. */
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, A, INC_A, SEG, 0,
					 "10.77.0.1:7471"), 0);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B, SEG, 0,
					 "10.77.0.2:7471"), 0);
}

static void setup_policy(const char *policy)
{
	setup_with((struct fkv_master_config){ .policy = policy });
}

static void setup(void)
{
	setup_policy(NULL);
}

/* A put of @len bytes from @node, published; returns its handle. */
static uint64_t put_on(uint32_t node, const char *key, uint64_t len,
		       uint32_t slot, uint64_t *put_id)
{
	uint32_t flags;
	uint64_t h;

	fkv_master_set_caller(F.m, node);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, key, strlen(key), len, put_id,
					   &flags), 0);
	h = H(node, slot, *put_id);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, key, strlen(key), *put_id, h,
					  len, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_PUT_F_PUBLISHED);
	return h;
}

FKV_TEST(a_get_on_a_pulls_bs_copy_and_keeps_it_when_promoted)
{
	struct fkv_get_result g;
	struct fkv_master_node_info ni;
	uint64_t pid, hb, ha;
	uint32_t flags;

	setup();
	hb = put_on(B, "k", 3 * U + 5, 7, &pid);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	FKV_ASSERT_EQ(g.handle, hb);
	FKV_ASSERT_EQ(g.node, B);
	FKV_ASSERT_EQ(g.len, 3 * U + 5);
	FKV_ASSERT_EQ(g.put_id, pid);
	FKV_ASSERT(!strcmp(g.addr, "10.77.0.2:7471"));
	/* B asks for its own key: its own DRAM, no pull. */
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);

	/* A's pulled copy becomes A's replica: the next get is local. */
	ha = H(A, 3, pid);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, "k", 1, pid, ha, 3 * U + 5,
					  FLUXONKV_SOURCE_REMOTE, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_GET_F_PROMOTED);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(g.handle, ha);
	/* Each node accounts its own bytes. */
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, A, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 4 * U);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, B, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 4 * U);
	FKV_ASSERT_EQ(ni.remote_gets, 1);
	/* A second copy of the same version on A is refused (one per node). */
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, "k", 1, pid, H(A, 4, pid),
					  3 * U + 5, FLUXONKV_SOURCE_REMOTE,
					  &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	/* A copy of the wrong length or an old version is refused too. */
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, "k", 1, pid + 1, H(B, 9, pid),
					  3 * U + 5, FLUXONKV_SOURCE_REMOTE,
					  &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	/* delete drops both nodes' replicas. */
	F.ndrops = 0;
	FKV_ASSERT_EQ(fkv_master_delete(F.m, "k", 1, &pid), 0);
	FKV_ASSERT_EQ(F.ndrops, 2);
	FKV_ASSERT((F.drops[0] == ha && F.drops[1] == hb) ||
		   (F.drops[0] == hb && F.drops[1] == ha));
	fkv_master_destroy(F.m);
}

FKV_TEST(eviction_on_one_node_never_takes_another_nodes_replicas)
{
	uint64_t pid, hb[8];
	unsigned int i;
	size_t j;
	char key[8];

	setup();
	for (i = 0; i < 8; i++) {
		key[0] = 'b';
		key[1] = (char)('0' + i);
		key[2] = 0;
		hb[i] = put_on(B, key, 4 * U, 100 + i, &pid);
	}
	/* A fills its own segment well past the watermark. */
	for (i = 0; i < 40; i++) {
		key[0] = 'a';
		key[1] = (char)('A' + i);
		key[2] = 0;
		put_on(A, key, 4 * U, 200 + i, &pid);
	}
	FKV_ASSERT(F.ndrops > 0);
	for (j = 0; j < F.ndrops; j++) {
		FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(F.drops[j]), A);
		for (i = 0; i < 8; i++)
			FKV_ASSERT(F.drops[j] != hb[i]);
	}
	fkv_master_destroy(F.m);
}

FKV_TEST(a_failed_pull_forgets_the_source_only_when_it_said_so)
{
	struct fkv_get_result g;
	uint64_t pid, hb;

	setup();
	hb = put_on(B, "k", U, 1, &pid);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), 0);
	/* A network failure says nothing about B's replica. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "k", 1, pid,
					    FLUXONKV_SOURCE_REMOTE, hb,
					    -ECONNREFUSED), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	/* B said it has no such replica: forgotten, the key is gone. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "k", 1, pid,
					    FLUXONKV_SOURCE_REMOTE, hb,
					    -ENOENT), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), -ENOENT);
	fkv_master_destroy(F.m);
}

/*
 * What a member can revoke (issue 28): its own replicas, and the source a
 * GET_START of its own routed it to -- not another node's replica it
 * merely names (that dropped the route of any key for everyone before).
 */
FKV_TEST(a_member_cannot_revoke_a_replica_it_neither_has_nor_pulled)
{
	struct fkv_master_stats st;
	struct fkv_get_result g;
	uint64_t pid, hb;

	setup();
	hb = put_on(B, "k", U, 1, &pid);
	fkv_master_set_caller(F.m, A);
	/* "my memory route is stale": but the handle is B's */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "k", 1, pid,
					    FLUXONKV_SOURCE_MEMORY, hb,
					    -ENOENT), 0);
	/* "the pull failed": but no get of A's was routed there */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "k", 1, pid,
					    FLUXONKV_SOURCE_REMOTE, hb,
					    -ENOENT), 0);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.revokes_refused, 2);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(g.handle, hb);
	/* B's own stale route: honoured */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "k", 1, pid,
					    FLUXONKV_SOURCE_MEMORY, hb,
					    -ENOENT), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), -ENOENT);
	fkv_master_destroy(F.m);
}

FKV_TEST(member_left_and_restart_forget_that_nodes_replicas)
{
	struct fkv_master_stats st;
	struct fkv_get_result g;
	uint64_t pid, pid2, hb, ha;
	uint32_t flags;

	setup();
	hb = put_on(B, "only-b", U, 1, &pid);
	put_on(B, "both", U, 2, &pid2);
	ha = H(A, 5, pid2);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, "both", 4, pid2, ha, U,
					  FLUXONKV_SOURCE_REMOTE, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_GET_F_PROMOTED);
	/* A put placed on B and still in flight when B goes. */
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "late", 4, U, &pid, &flags), 0);

	F.ndrops = 0;
	fkv_master_node_down(F.m, B);
	FKV_ASSERT_EQ(F.ndrops, 0);	/* B dropped its references itself */
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "only-b", 6, &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "both", 4, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(g.handle, ha);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.nodes_left, 1);
	FKV_ASSERT_EQ(st.inflight, 0);
	/* Its late PUT_DONE under the old incarnation publishes nothing. */
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT(fkv_master_put_done(F.m, "late", 4, pid, H(B, 9, pid), U,
				       &flags) < 0 || !flags);
	/* B back under a new incarnation starts empty. */
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B + 1, SEG, 0,
					 "10.77.0.2:7471"), 0);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "only-b", 6, &g), -ENOENT);
	(void)hb;
	fkv_master_destroy(F.m);
}

FKV_TEST(a_restart_under_a_new_incarnation_forgets_the_old_replicas)
{
	struct fkv_get_result g;
	uint64_t pid;

	setup();
	put_on(B, "k", U, 1, &pid);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B + 7, SEG, 0,
					 "10.77.0.2:7471"), 0);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), -ENOENT);
	fkv_master_destroy(F.m);
}

FKV_TEST(a_value_only_on_bs_ssd_is_pushed_and_a_failed_push_drops_it)
{
	struct fkv_master_stats st;
	struct fkv_get_result g;
	uint64_t pid, hb, ha;
	uint32_t flags;

	setup();
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B, SEG, 1ULL << 30,
					 "10.77.0.2:7471"), 0);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "s", 1, 5 * U, &pid, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_PUT_F_PERSIST);
	hb = H(B, 1, pid);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, "s", 1, pid, hb, 5 * U, &flags), 0);
	/* Its SSD copy is B's: a commit reported by A does not count. */
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, "s", 1, pid, 5 * U, &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, "s", 1, pid, 5 * U, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_SSD_F_PUBLISHED);
	/* B loses its DRAM copy; the route keeps B's SSD copy. */
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "s", 1, pid,
					    FLUXONKV_SOURCE_MEMORY, hb,
					    -ENOENT), 0);
	/*
	 * "B's push failed" from A before any get of A's was pushed from B
	 * (issue 28): not A's to say, B's SSD copy stays.
	 */
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "s", 1, pid,
					    FLUXONKV_SOURCE_REMOTE_SSD, B,
					    -EIO), 0);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.revokes_refused, 1);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "s", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE_SSD);
	FKV_ASSERT_EQ(g.node, B);
	FKV_ASSERT_EQ(g.len, 5 * U);
	FKV_ASSERT_EQ(g.handle, 0);
	/* B itself refills from its own SSD. */
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "s", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_SSD);
	/* A network failure keeps it; an IO error on B drops it. */
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "s", 1, pid,
					    FLUXONKV_SOURCE_REMOTE_SSD, B,
					    -ETIMEDOUT), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "s", 1, &g), 0);
	/* A pushed copy is promoted on A ... */
	ha = H(A, 2, pid);
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, "s", 1, pid, ha, 5 * U,
					  FLUXONKV_SOURCE_REMOTE_SSD, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_GET_F_PROMOTED);
	/* ... and survives B's SSD copy going (B's own IO error). */
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "s", 1, pid,
					    FLUXONKV_SOURCE_SSD, 0, -EIO), 0);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "s", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "s", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);

	/* A push routed to A that fails on B's disk drops that copy. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "t", 1, 5 * U, &pid, &flags), 0);
	hb = H(B, 3, pid);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, "t", 1, pid, hb, 5 * U, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, "t", 1, pid, 5 * U, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_SSD_F_PUBLISHED);
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "t", 1, pid,
					    FLUXONKV_SOURCE_MEMORY, hb,
					    -ENOENT), 0);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "t", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE_SSD);
	fkv_master_get_stats(F.m, &st);
	F.nssd_drops = 0;
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "t", 1, pid,
					    FLUXONKV_SOURCE_REMOTE_SSD, B,
					    -EIO), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "t", 1, &g), -ENOENT);
	/*
	 * ... and B's module is told: routed there still, that copy would
	 * make a DRAM replica of the version clean (dropped for room).
	 */
	FKV_ASSERT_EQ(F.nssd_drops, 1);
	FKV_ASSERT_EQ(F.ssd_drop_node, B);
	FKV_ASSERT_EQ(F.ssd_drop_put_id, pid);
	FKV_ASSERT_EQ(strcmp(F.ssd_drop_key, "t"), 0);
	fkv_master_destroy(F.m);
}

/*
 * Another node's SSD copy of a version a put replaced or a delete removed
 * is retired on that node (send_ssd_drop): left routed in its module it
 * came back from that node's reports to a restarted master (issue 28).
 */
FKV_TEST(a_delete_or_overwrite_retires_other_nodes_ssd_copies)
{
	struct fkv_master_stats st;
	uint64_t pid, pid2, hb;
	uint32_t flags;

	setup();
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B, SEG, 1ULL << 30,
					 "10.77.0.2:7471"), 0);
	hb = put_on(B, "s", 5 * U, 1, &pid);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, "s", 1, pid, 5 * U, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_SSD_F_PUBLISHED);
	/* Deleted on A: B's DRAM replica is dropped, its SSD copy retired. */
	fkv_master_set_caller(F.m, A);
	F.ndrops = 0;
	FKV_ASSERT_EQ(fkv_master_delete(F.m, "s", 1, &pid2), 0);
	FKV_ASSERT_EQ(pid2, pid);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], hb);
	FKV_ASSERT_EQ(F.nssd_drops, 1);
	FKV_ASSERT_EQ(F.ssd_drop_node, B);
	FKV_ASSERT_EQ(F.ssd_drop_put_id, pid);
	FKV_ASSERT(!strcmp(F.ssd_drop_key, "s"));

	/* An overwrite on A retires B's copy of the older version. */
	put_on(B, "t", 5 * U, 2, &pid);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, "t", 1, pid, 5 * U, &flags), 0);
	put_on(A, "t", 2 * U, 3, &pid2);
	FKV_ASSERT_EQ(F.nssd_drops, 2);
	FKV_ASSERT_EQ(F.ssd_drop_node, B);
	FKV_ASSERT_EQ(F.ssd_drop_put_id, pid);
	/* A copy the owner lost itself (evicted from its ring) is not. */
	put_on(B, "u", 5 * U, 4, &pid);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, "u", 1, pid, 5 * U, &flags), 0);
	fkv_master_ssd_evicted(F.m, "u", 1, pid);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, "u", 1, &pid2), 0);
	FKV_ASSERT_EQ(F.nssd_drops, 2);
	/* B overwrites its own: its module retires its copy, no message */
	put_on(B, "v", 5 * U, 5, &pid);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, "v", 1, pid, 5 * U, &flags), 0);
	put_on(B, "v", 5 * U, 6, &pid2);
	FKV_ASSERT_EQ(F.nssd_drops, 2);
	/* ... but a clear, which no module asked for, tells B too */
	put_on(B, "w", 5 * U, 7, &pid);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_ssd_commit(F.m, "w", 1, pid, 5 * U, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_clear_key(F.m, "w", 1, &pid2), 0);
	FKV_ASSERT_EQ(F.nssd_drops, 3);
	FKV_ASSERT_EQ(F.ssd_drop_node, B);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.ssd_dropped, 3);
	fkv_master_destroy(F.m);
}

/*
 * Member-left of a node with more replicas than one slice: the call
 * forgets a slice, none of the rest is routed to, each turn of the loop
 * (fkv_master_work) forgets another; a rejoin before the end forgets the
 * rest at once and adopts the node's reports (issue 28: the master must
 * not stall; before, the one call walked all of them).
 */
FKV_TEST(member_left_forgets_a_big_node_in_slices_and_routes_none_of_it)
{
	const uint32_t C = 3, nvals = 70000;
	const uint64_t cap = (uint64_t)nvals * 2 * U;
	struct fkv_master_node_info ni;
	struct fkv_get_result g;
	unsigned int turns = 0;
	uint64_t pid, first_pid = 0;
	char key[32];
	uint32_t i;

	setup();
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, C, 0xc1, cap, 0,
					 "10.77.0.3:7471"), 0);
	for (i = 0; i < nvals; i++) {
		snprintf(key, sizeof(key), "big-%u", i);
		put_on(C, key, U, i + 1, &pid);
		if (!i)
			first_pid = pid;
	}
	F.ndrops = 0;
	fkv_master_node_down(F.m, C);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, C, &ni), 0);
	FKV_ASSERT(ni.used > 0 && ni.used < (uint64_t)nvals * U,
		   "one slice: %llu of %llu bytes still counted",
		   (unsigned long long)ni.used,
		   (unsigned long long)nvals * U);
	/* What is left is unroutable. */
	fkv_master_set_caller(F.m, A);
	for (i = 0; i < nvals; i += 997) {
		snprintf(key, sizeof(key), "big-%u", i);
		FKV_ASSERT_EQ(fkv_master_get_start(F.m, key, strlen(key), &g),
			      -ENOENT);
	}
	while (fkv_master_work(F.m))
		turns++;
	FKV_ASSERT(turns >= 1, "forgotten in %u more turns", turns);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, C, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 0);
	FKV_ASSERT_EQ(F.ndrops, 0);	/* C dropped its references itself */

	/* Again, and C rejoins after one slice: the rest go at once. */
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, C, 0xc2, cap, 0,
					 "10.77.0.3:7471"), 0);
	for (i = 0; i < nvals; i++) {
		snprintf(key, sizeof(key), "big-%u", i);
		put_on(C, key, U, i + 1, &pid);
	}
	fkv_master_node_down(F.m, C);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, C, 0xc3, cap, 0,
					 "10.77.0.3:7471"), 0);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, C, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 0);
	/* Its report of the newest big-0 is adopted in the slot freed. */
	fkv_master_set_caller(F.m, C);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "big-0", 5, pid - nvals + 1,
				       H(C, 1, pid - nvals + 1), U, false), 1);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "big-0", 5, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	FKV_ASSERT_EQ(g.node, C);
	FKV_ASSERT(!fkv_master_work(F.m));
	(void)first_pid;
	fkv_master_destroy(F.m);
}

/*
 * A watermark pass that must evict more than one slice goes on from
 * fkv_master_work() down to the low watermark, a slice per turn.
 */
FKV_TEST(a_long_watermark_pass_evicts_in_slices_down_to_the_low_mark)
{
	const uint32_t C = 3, nvals = 60000;
	const uint64_t cap = (uint64_t)nvals * U;
	struct fkv_master_node_info ni;
	unsigned int turns = 0;
	size_t first;
	uint64_t pid;
	char key[32];
	uint32_t i;

	setup();
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, C, 0xc1, cap, 0,
					 "10.77.0.3:7471"), 0);
	/* Filled to 90 % (the default high watermark is above it). */
	for (i = 0; i < nvals * 9 / 10; i++) {
		snprintf(key, sizeof(key), "w-%u", i);
		put_on(C, key, U, i + 1, &pid);
	}
	F.ndrops = 0;
	/* Down to 20 %: 42,000 evictions, more than two slices. */
	FKV_ASSERT_EQ(fkv_master_set_watermarks(F.m, 30, 20), 0);
	first = F.ndrops;
	FKV_ASSERT(first > 0 && first < (size_t)nvals * 7 / 10,
		   "the first pass evicted %zu", first);
	while (fkv_master_work(F.m))
		turns++;
	FKV_ASSERT(turns >= 1, "%u more turns", turns);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, C, &ni), 0);
	FKV_ASSERT(ni.used <= cap * 20 / 100, "used %llu of %llu",
		   (unsigned long long)ni.used, (unsigned long long)cap);
	FKV_ASSERT(ni.used > cap * 20 / 100 - 2 * U, "used %llu (overshoot)",
		   (unsigned long long)ni.used);
	fkv_master_destroy(F.m);
}

/*
 * A NEED_ROOM that must evict more than one slice evicts one, answers,
 * and leaves the rest to fkv_master_work(); asked again meanwhile (the
 * module's usage has not seen the drops yet) it evicts nothing more:
 * in all, what the first ask wanted, not twice that.
 */
FKV_TEST(a_big_need_room_evicts_in_slices_and_not_twice)
{
	const uint32_t C = 3, nvals = 30000;
	const uint64_t cap = (uint64_t)nvals * U;
	uint64_t pid, used, want;
	unsigned int turns = 0;
	size_t first;
	char key[32];
	uint32_t i;

	setup();
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, C, 0xc1, cap, 0,
					 "10.77.0.3:7471"), 0);
	/* Below the high watermark (98 %): 80 % full. */
	for (i = 0; i < nvals * 8 / 10; i++) {
		snprintf(key, sizeof(key), "r-%u", i);
		put_on(C, key, U, i + 1, &pid);
	}
	/* Room for 20,000 values past the low watermark at once. */
	used = (uint64_t)nvals * 8 / 10 * U;
	want = used + 20000 * U - cap * FKV_LOW_WATERMARK_PCT / 100;
	F.ndrops = 0;
	fkv_master_set_caller(F.m, C);
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 20000 * U, used), 0);
	first = F.ndrops;
	FKV_ASSERT(first > 0 && first < want / U, "the first ask evicted %zu",
		   first);
	/* Asked again before its drops landed: nothing more. */
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, 20000 * U, used), 0);
	FKV_ASSERT_EQ(F.ndrops, first);
	while (fkv_master_work(F.m))
		turns++;
	FKV_ASSERT_EQ(F.ndrops, (size_t)(want / U));
	/* Done: the next ask evicts afresh. */
	FKV_ASSERT_EQ(fkv_master_need_room(F.m, U, used), 0);
	FKV_ASSERT(F.ndrops > want / U, "%zu drops", F.ndrops);
	(void)turns;
	fkv_master_destroy(F.m);
}

FKV_TEST(lookup_names_the_source_a_get_would_use_and_holds_nothing)
{
	struct fkv_master_node_info ni;
	struct fkv_master_stats st;
	struct fkv_get_result g;
	uint64_t pid, hb;

	setup();
	hb = put_on(B, "k", 3 * U + 5, 7, &pid);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_lookup(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	FKV_ASSERT_EQ(g.len, 3 * U + 5);
	FKV_ASSERT_EQ(g.put_id, pid);
	FKV_ASSERT_EQ(g.handle, hb);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 0);		/* no pull is coming */
	FKV_ASSERT_EQ(st.gets, 0);
	FKV_ASSERT_EQ(st.remote_gets, 0);
	FKV_ASSERT_EQ(st.lookups, 1);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, B, &ni), 0);
	FKV_ASSERT_EQ(ni.remote_gets, 0);
	/* B's own DRAM for B; a miss for both */
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_lookup(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(fkv_master_lookup(F.m, "nope", 4, &g), -ENOENT);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_NONE);
	FKV_ASSERT_EQ(fkv_master_lookup(F.m, "", 0, &g), -EINVAL);
	/* the same choice as GET_START, which does hold */
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 1);
	fkv_master_destroy(F.m);
}

FKV_TEST(a_replica_being_pulled_is_not_evicted_until_the_puller_reports)
{
	struct fkv_master_stats st;
	struct fkv_get_result g;
	uint64_t pid, hb, x;
	uint32_t flags;
	unsigned int i;
	size_t j;
	char key[16];

	/* LRU: the held replica surely comes up as a victim. */
	setup_policy("lru");
	hb = put_on(B, "pulled", 4 * U, 1, &pid);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "pulled", 6, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	/* B fills up many times over: eviction passes over the held one. */
	for (i = 0; i < 400; i++) {
		snprintf(key, sizeof(key), "f%u", i);
		put_on(B, key, 4 * U, 100 + i, &x);
	}
	FKV_ASSERT(F.ndrops > 0);
	for (j = 0; j < F.ndrops; j++)
		FKV_ASSERT(F.drops[j] != hb);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT(st.held_skips > 0);
	FKV_ASSERT_EQ(st.holds, 1);
	/* A's GET_DONE ends the hold: the next pass may take it. */
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, "pulled", 6, pid, H(A, 9, pid),
					  4 * U, FLUXONKV_SOURCE_REMOTE, &flags), 0);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 0);
	/* A hold nobody ends runs out. */
	put_on(B, "other", U, 3, &x);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "other", 5, &g), 0);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 1);
	F.now += 16000;
	fkv_master_tick(F.m);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 0);
	FKV_ASSERT_EQ(st.holds_expired, 1);
	/* And a puller that leaves takes its holds with it. */
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, 3, 0xc1, SEG, 0,
					 "10.77.0.3:7471"), 0);
	fkv_master_set_caller(F.m, 3);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "other", 5, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 1);
	fkv_master_node_down(F.m, 3);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 0);
	fkv_master_destroy(F.m);
}

FKV_TEST(a_node_that_saw_higher_put_ids_moves_the_master_above_them)
{
	uint64_t pid;
	uint32_t flags;

	setup();
	fkv_master_set_caller(F.m, B);
	fkv_master_note_put_id(F.m, 1000);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "k", 1, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(pid, 1001);
	fkv_master_note_put_id(F.m, 10);	/* lower: changes nothing */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "k", 1, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(pid, 1002);
	fkv_master_destroy(F.m);
}

/*
 * The master's term file: every start takes a term above the stored one
 * and above the term of any put_id its module saw, and writes it before
 * the master numbers anything; a malformed file stops it.
 */
FKV_TEST(each_master_start_takes_a_new_term_and_writes_it_down)
{
	char dir[] = "/tmp/fkv-term-XXXXXX", path[PATH_MAX], why[512];
	char buf[64] = "";
	uint64_t term = 0;
	int fd;

	FKV_ASSERT(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/state", dir);
	/* no directory yet: created, term 1 */
	FKV_ASSERT_EQ(fkv_term_next(path, 0, &term, why, sizeof(why)), 0);
	FKV_ASSERT_EQ(term, 1);
	FKV_ASSERT_EQ(fkv_term_next(path, FKV_PUT_ID(1, 77), &term, why,
				    sizeof(why)), 0);
	FKV_ASSERT_EQ(term, 2);
	/* the module saw a later term (the file was restored from a backup) */
	FKV_ASSERT_EQ(fkv_term_next(path, FKV_PUT_ID(9, 3), &term, why,
				    sizeof(why)), 0);
	FKV_ASSERT_EQ(term, 10);
	snprintf(path, sizeof(path), "%s/state/" FKV_TERM_FILE, dir);
	fd = open(path, O_RDONLY);
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT(read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	FKV_ASSERT(!strcmp(buf, "10\n"), "file says '%s'", buf);
	/* a damaged file: refused, named, left as it is */
	fd = open(path, O_WRONLY | O_TRUNC);
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(write(fd, "1x\n", 3), 3);
	close(fd);
	snprintf(path, sizeof(path), "%s/state", dir);
	FKV_ASSERT_EQ(fkv_term_next(path, 0, &term, why, sizeof(why)), -EINVAL);
	FKV_ASSERT(strstr(why, FKV_TERM_FILE ": not a term") != NULL, "%s", why);
	FKV_ASSERT_EQ(term, 10);
	/* the last term: nothing above it */
	snprintf(path, sizeof(path), "%s/state/" FKV_TERM_FILE, dir);
	fd = open(path, O_WRONLY | O_TRUNC);
	FKV_ASSERT(fd >= 0);
	snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)FKV_TERM_MAX);
	FKV_ASSERT_EQ(write(fd, buf, strlen(buf)), (ssize_t)strlen(buf));
	close(fd);
	snprintf(path, sizeof(path), "%s/state", dir);
	FKV_ASSERT_EQ(fkv_term_next(path, 0, &term, why, sizeof(why)),
		      -EOVERFLOW);
	/* a relative directory, or one under a file */
	FKV_ASSERT_EQ(fkv_term_next("state", 0, &term, why, sizeof(why)),
		      -EINVAL);
	snprintf(path, sizeof(path), "%s/state/" FKV_TERM_FILE "/x", dir);
	FKV_ASSERT(fkv_term_next(path, 0, &term, why, sizeof(why)) < 0);
	snprintf(path, sizeof(path), "%s/state/" FKV_TERM_FILE, dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/state", dir);
	rmdir(path);
	rmdir(dir);
}

static void setup_term(uint64_t term)
{
	/* first_put_id is the module's: ignored under a term */
	setup_with((struct fkv_master_config){ .term = term,
					       .first_put_id = 5000 });
}

/*
 * Issue 28's first scenario: K@1000 lives on B; the master restarts with
 * only its own module's lower numbers; a put of K on A is acknowledged
 * before B rejoins; B's report of K@1000 must lose to it.  Without terms
 * the restarted master numbered from 500 and adopted B's older value over
 * the acknowledged one.
 */
FKV_TEST(a_put_after_a_master_restart_wins_over_a_late_report_of_an_older_term)
{
	struct fkv_master_stats st;
	struct fkv_get_result g;
	uint64_t pid, ha, hb = H(B, 3, 1000);
	uint32_t flags;

	setup_term(2);
	fkv_master_set_caller(F.m, A);
	ha = H(A, 1, 1);
	FKV_ASSERT_EQ(fkv_master_put(F.m, "K", 1, ha, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(pid, FKV_PUT_ID(2, 1));
	/* B rejoins: its module saw term 1's numbers only */
	fkv_master_set_caller(F.m, B);
	fkv_master_note_put_id(F.m, FKV_PUT_ID(1, 1000));
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "K", 1, FKV_PUT_ID(1, 1000), hb, U,
				       false), 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], hb);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "K", 1, &g), 0);
	FKV_ASSERT_EQ(g.handle, ha);
	FKV_ASSERT_EQ(g.put_id, FKV_PUT_ID(2, 1));
	/* an older-term version of a key nobody put since is adopted */
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "L", 1, FKV_PUT_ID(1, 999),
				       H(B, 4, 999), U, false), 1);

	/*
	 * A put_id above this master's numbering was never issued: a REPORT
	 * of one is refused and dropped, SSD_STATE's moves nothing (it used
	 * to wrap the numbering: every put then failed EINVAL).
	 */
	F.ndrops = 0;
	fkv_master_note_put_id(F.m, UINT64_MAX);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "M", 1, UINT64_MAX, H(B, 5, 1), U,
				       false), -EINVAL);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "M", 1, FKV_PUT_ID(3, 1),
				       H(B, 6, 1), U, false), -EINVAL);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_put(F.m, "N", 1, H(A, 2, 2), U, &pid, &flags),
		      0);
	FKV_ASSERT_EQ(pid, FKV_PUT_ID(2, 2));
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.put_ids_refused, 3);
	FKV_ASSERT_EQ(fkv_master_term(F.m), 2);
	fkv_master_destroy(F.m);
}

/*
 * Versions the master forgot (issue 28): a key entry dies with its last
 * replica, and with it what the master knew of the key.  B keeps K@p1
 * through a partition (member-left: the master forgets B's replicas); K
 * is put again on A and that replica goes too (evicted, revoked).  When B
 * rejoins and reports K@p1, the tombstone of K's freed entry refuses it.
 * A key nothing touched meanwhile is adopted, and a delete of another key
 * no longer refuses every older version of every key.
 */
FKV_TEST(a_rejoining_node_never_brings_back_a_version_the_master_forgot)
{
	uint64_t p1, p2, p3, pd, hk, ho, ha;
	struct fkv_master_stats st;
	struct fkv_get_result g;

	setup();
	hk = put_on(B, "K", U, 1, &p1);
	ho = put_on(B, "other", U, 2, &p3);
	/* B is cut off; the master forgets its replicas (no tombstones) */
	fkv_master_node_down(F.m, B);
	/* K put again on A, then that replica goes as well */
	ha = put_on(A, "K", U, 3, &p2);
	FKV_ASSERT(p2 > p1);
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "K", 1, p2,
					    FLUXONKV_SOURCE_MEMORY, ha,
					    -ENOENT), 0);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "K", 1, &g), -ENOENT);
	/* an unrelated delete, at a put_id above everything B holds */
	put_on(A, "gone", U, 4, &pd);
	FKV_ASSERT_EQ(fkv_master_delete(F.m, "gone", 4, &pd), 0);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT(st.tombs >= 2, "tombstones: %llu",
		   (unsigned long long)st.tombs);

	/* B rejoins and reports */
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B + 1, SEG, 0,
					 "10.77.0.2:7471"), 0);
	fkv_master_set_caller(F.m, B);
	F.ndrops = 0;
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "K", 1, p1, hk, U, false), 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], hk);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "other", 5, p3, ho, U, false), 1);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "gone", 4, pd, H(B, 6, pd), U,
				       false), 0);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "K", 1, &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "other", 5, &g), 0);
	FKV_ASSERT_EQ(g.handle, ho);
	fkv_master_destroy(F.m);
}

/*
 * Versions the master forgot across a master restart (issue 28): B keeps
 * K@p1 and leaves; the master of term 2 goes on without it -- K put again
 * on A and deleted (a tombstone, in memory only) -- and dies.  The master
 * of term 3 knows no tombstone: without B's fence it adopts B's K@p1, a
 * deleted version back (the first half shows it); with the fence term 2's
 * master wrote at B's member-left (clusterd, term.h), everything B kept
 * from before is refused and dropped.
 */
FKV_TEST(a_restarted_master_adopts_nothing_a_node_kept_from_before_its_fence)
{
	uint64_t p1, p2, p3, fence, hk, ho;
	struct fkv_master_stats st;
	struct fkv_get_result g;
	int fenced;

	for (fenced = 0; fenced < 2; fenced++) {
		setup_term(2);
		hk = put_on(B, "K", U, 1, &p1);
		ho = put_on(B, "other", U, 2, &p3);
		fkv_master_node_down(F.m, B);		/* B leaves */
		fence = fkv_master_last_put_id(F.m);
		FKV_ASSERT_EQ(fence, p3);
		put_on(A, "K", U, 3, &p2);
		FKV_ASSERT_EQ(fkv_master_delete(F.m, "K", 1, &p2), 0);
		fkv_master_destroy(F.m);		/* term 2 dies */

		setup_term(3);
		FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B + 1, SEG, 0,
						 "10.77.0.2:7471"), 0);
		if (fenced)
			fkv_master_node_fence(F.m, B, fence);
		fkv_master_set_caller(F.m, B);
		F.ndrops = 0;
		FKV_ASSERT_EQ(fkv_master_adopt(F.m, "K", 1, p1, hk, U, false),
			      !fenced);
		FKV_ASSERT_EQ(fkv_master_adopt(F.m, "other", 5, p3, ho, U,
					       false), !fenced);
		fkv_master_set_caller(F.m, A);
		if (!fenced) {
			/* the deleted K is back: what the fence prevents */
			FKV_ASSERT_EQ(fkv_master_get_start(F.m, "K", 1, &g), 0);
			FKV_ASSERT_EQ(g.put_id, p1);
		} else {
			FKV_ASSERT_EQ(fkv_master_get_start(F.m, "K", 1, &g),
				      -ENOENT);
			FKV_ASSERT_EQ(F.ndrops, 2);
			FKV_ASSERT_EQ(F.drops[0], hk);
			FKV_ASSERT_EQ(F.drops[1], ho);
			fkv_master_get_stats(F.m, &st);
			FKV_ASSERT_EQ(st.adopt_fenced, 2);
			/* what B puts from now on is B's as always */
			put_on(B, "new", U, 7, &p2);
			fkv_master_set_caller(F.m, A);
			FKV_ASSERT_EQ(fkv_master_get_start(F.m, "new", 3, &g),
				      0);
		}
		fkv_master_destroy(F.m);
	}
}

/* The fence file: fences only rise, are on disk before they count. */
FKV_TEST(fences_rise_durably_and_survive_a_reload)
{
	char dir[] = "/tmp/fkv-fence-XXXXXX", path[PATH_MAX], why[512];
	struct fkv_fences f, g;
	int fd;

	FKV_ASSERT(mkdtemp(dir));
	FKV_ASSERT_EQ(fkv_fences_load(&f, dir, why, sizeof(why)), 0);
	FKV_ASSERT_EQ(f.n, 0);
	FKV_ASSERT_EQ(fkv_fences_of(&f, "node2"), 0);
	FKV_ASSERT_EQ(fkv_fences_raise(&f, "node2", FKV_PUT_ID(2, 50), why,
				       sizeof(why)), 0);
	FKV_ASSERT_EQ(fkv_fences_raise(&f, "node2", FKV_PUT_ID(2, 40), why,
				       sizeof(why)), 0);
	FKV_ASSERT_EQ(fkv_fences_raise(&f, "node-3.x", 7, why, sizeof(why)), 0);
	FKV_ASSERT_EQ(fkv_fences_of(&f, "node2"), FKV_PUT_ID(2, 50));
	FKV_ASSERT_EQ(fkv_fences_load(&g, dir, why, sizeof(why)), 0);
	FKV_ASSERT_EQ(g.n, 2);
	FKV_ASSERT_EQ(fkv_fences_of(&g, "node2"), FKV_PUT_ID(2, 50));
	FKV_ASSERT_EQ(fkv_fences_of(&g, "node-3.x"), 7);
	fkv_fences_free(&g);
	/* a file it cannot write: not raised, the old one stays */
	snprintf(path, sizeof(path), "%s/" FKV_FENCE_FILE ".new", dir);
	FKV_ASSERT_EQ(mkdir(path, 0700), 0);
	FKV_ASSERT(fkv_fences_raise(&f, "node2", FKV_PUT_ID(2, 60), why,
				    sizeof(why)) < 0);
	FKV_ASSERT(strstr(why, FKV_FENCE_FILE ".new"), "why: %s", why);
	FKV_ASSERT_EQ(fkv_fences_of(&f, "node2"), FKV_PUT_ID(2, 50));
	FKV_ASSERT(fkv_fences_raise(&f, "node9", 1, why, sizeof(why)) < 0);
	FKV_ASSERT_EQ(fkv_fences_of(&f, "node9"), 0);
	rmdir(path);
	/*
	 * Lifted once the node rejoined and acknowledged the judgement of
	 * its copies -- only at the value that was judged: raised again
	 * meanwhile, it stays.  A lifted fence can rise again.
	 */
	FKV_ASSERT_EQ(fkv_fences_lift(&f, "node2", FKV_PUT_ID(2, 49), why,
				      sizeof(why)), 0);
	FKV_ASSERT_EQ(fkv_fences_of(&f, "node2"), FKV_PUT_ID(2, 50));
	FKV_ASSERT_EQ(fkv_fences_lift(&f, "node2", FKV_PUT_ID(2, 50), why,
				      sizeof(why)), 0);
	FKV_ASSERT_EQ(fkv_fences_of(&f, "node2"), 0);
	FKV_ASSERT_EQ(fkv_fences_load(&g, dir, why, sizeof(why)), 0);
	FKV_ASSERT_EQ(fkv_fences_of(&g, "node2"), 0);
	FKV_ASSERT_EQ(fkv_fences_of(&g, "node-3.x"), 7);
	fkv_fences_free(&g);
	FKV_ASSERT_EQ(fkv_fences_raise(&f, "node2", FKV_PUT_ID(3, 5), why,
				       sizeof(why)), 0);
	FKV_ASSERT_EQ(fkv_fences_of(&f, "node2"), FKV_PUT_ID(3, 5));
	FKV_ASSERT_EQ(fkv_fences_load(&g, dir, why, sizeof(why)), 0);
	FKV_ASSERT_EQ(fkv_fences_of(&g, "node2"), FKV_PUT_ID(3, 5));
	fkv_fences_free(&g);
	fkv_fences_free(&f);
	/* a malformed file is an error, not an empty table */
	snprintf(path, sizeof(path), "%s/" FKV_FENCE_FILE, dir);
	fd = open(path, O_WRONLY | O_TRUNC);
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(write(fd, "node2 zz\n", 9), 9);
	close(fd);
	FKV_ASSERT_EQ(fkv_fences_load(&g, dir, why, sizeof(why)), -EINVAL);
	FKV_ASSERT(strstr(why, "line 1"), "why: %s", why);
	fkv_fences_free(&g);
	unlink(path);
	rmdir(dir);
}

/*
 * Tombstones are bounded: the oldest aged out leaves its put_id as the
 * floor every key without a tombstone is held to (a version at or below
 * it is refused: the master cannot tell it was not overwritten).
 */
FKV_TEST(tombstones_age_out_into_a_floor)
{
	struct fkv_master_config c = {
		.node = A, .capacity = SEG, .incarnation = INC_A,
		.now_ms = fx_clock, .clock_arg = &F, .tombs = 2,
	};
	uint64_t pk, p[3], hk;
	struct fkv_master_stats st;
	char key[8];
	int i;

	memset(&F, 0, sizeof(F));
	F.m = fkv_master_create(&c, &rec_ops, &F);
	FKV_ASSERT(F.m != NULL);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B, SEG, 0,
					 "10.77.0.2:7471"), 0);
	hk = put_on(B, "keep", U, 1, &pk);
	fkv_master_node_down(F.m, B);
	for (i = 0; i < 3; i++) {	/* three deletes: one tombstone ages out */
		snprintf(key, sizeof(key), "d%d", i);
		put_on(A, key, U, 2 + i, &p[i]);
		FKV_ASSERT_EQ(fkv_master_delete(F.m, key, 2, &p[i]), 0);
	}
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.tombs, 2);
	FKV_ASSERT_EQ(st.tomb_floor, p[0]);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B + 1, SEG, 0,
					 "10.77.0.2:7471"), 0);
	fkv_master_set_caller(F.m, B);
	/* "keep" was never touched, but it is older than the floor */
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "keep", 4, pk, hk, U, false), 0);
	/* d0 aged out (the floor), d1 and d2 have their own */
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "d0", 2, p[0], H(B, 7, p[0]), U,
				       false), 0);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "d2", 2, p[2], H(B, 8, p[2]), U,
				       false), 0);
	fkv_master_destroy(F.m);
}

/* A put of A's placed on B: reservation, PUT_DONE with B's handle, PLACED. */
FKV_TEST(a_full_node_places_its_put_on_another_node)
{
	struct fkv_master_stats st;
	struct fkv_get_result g;
	const char *addr = NULL;
	uint32_t flags, node = 0;
	uint64_t pid, h;

	setup();
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "big", 3, 4 * U, &pid, &flags),
		      0);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "big", 3, pid, 4 * U, &node,
					   &addr, &flags), 0);
	FKV_ASSERT_EQ(node, B);
	FKV_ASSERT(addr && !strcmp(addr, "10.77.0.2:7471"));
	FKV_ASSERT_EQ(flags, 0);	/* B has no SSD */
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.placed, 1);
	/* Placed once: not again, and not for another key. */
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "big", 3, pid, 4 * U, &node,
					   &addr, &flags), -EINVAL);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "bog", 3, pid, 4 * U, &node,
					   &addr, &flags), -EINVAL);
	/* Only the origin may complete it, and only with B's handle. */
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, "big", 3, pid, H(A, 1, pid),
					  4 * U, &flags), -EINVAL);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, "big", 3, pid, H(B, 1, pid),
					  4 * U, &flags), -EINVAL);
	fkv_master_set_caller(F.m, A);
	h = H(B, 1, pid);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, "big", 3, pid, h, 4 * U,
					  &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
	FKV_ASSERT_EQ(F.nplaced, 1);
	FKV_ASSERT_EQ(F.placed_handle, h);
	FKV_ASSERT_EQ(F.placed_put_id, pid);
	FKV_ASSERT_EQ(F.ndrops, 0);
	/* A reads it from B's DRAM; B's own get is a local hit. */
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "big", 3, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	FKV_ASSERT_EQ(g.handle, h);
	FKV_ASSERT_EQ(g.node, B);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "big", 3, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
	fkv_master_node_info(F.m, B, &(struct fkv_master_node_info){ 0 });
	fkv_master_destroy(F.m);
}

FKV_TEST(placement_counts_on_the_target_and_prefers_ssd_and_room)
{
	struct fkv_master_node_info ni;
	const char *addr;
	uint32_t flags, node;
	uint64_t pid, x;

	setup();
	/* C: an SSD, less room than B; D: no SSD, empty. */
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, 3, 0xc1, SEG, 256 * U,
					 "10.77.0.3:7471"), 0);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, 4, 0xd1, SEG, 0,
					 "10.77.0.4:7471"), 0);
	put_on(3, "c-fill", 16 * U, 1, &x);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "k", 1, 2 * U, &pid, &flags),
		      0);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "k", 1, pid, 2 * U, &node,
					   &addr, &flags), 0);
	FKV_ASSERT_EQ(node, 3);		/* SSD-capable first (§2.4) */
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PERSIST);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, 3, &ni), 0);
	FKV_ASSERT_EQ(ni.reserved, 2 * U);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, A, &ni), 0);
	FKV_ASSERT_EQ(ni.reserved, 0);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, "k", 1, pid, H(3, 2, pid),
					  2 * U, &flags), 0);
	FKV_ASSERT_EQ(F.placed_flags, FLUXONKV_PUBLISH_F_PERSIST);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, 3, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 18 * U);
	FKV_ASSERT_EQ(ni.reserved, 0);
	/* Without SSD anywhere else: the most room (D over B). */
	fkv_master_node_down(F.m, 3);
	put_on(B, "b-fill", 8 * U, 1, &x);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "k2", 2, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "k2", 2, pid, U, &node,
					   &addr, &flags), 0);
	FKV_ASSERT_EQ(node, 4);
	FKV_ASSERT_EQ(flags, 0);
	fkv_master_destroy(F.m);
}

FKV_TEST(a_placed_put_that_fails_drops_the_target_replica)
{
	struct fkv_master_stats st;
	const char *addr;
	uint32_t flags, node;
	uint64_t pid, pid2, x;

	setup();
	/* Alone: nowhere to place. */
	fkv_master_node_down(F.m, B);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "k", 1, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "k", 1, pid, U, &node, &addr,
					   &flags), -ENOSPC);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.place_refused, 1);
	fkv_master_put_abort(F.m, "k", 1, pid, 0, -ENOSPC);

	/* Aborted after the target made its replica: dropped there. */
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B + 1, SEG, 0,
					 "10.77.0.2:7471"), 0);
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "k", 1, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "k", 1, pid, U, &node, &addr,
					   &flags), 0);
	fkv_master_put_abort(F.m, "k", 1, pid, H(B, 7, pid), -EPIPE);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], H(B, 7, pid));
	/* ... but never a handle of a node the put was not placed on. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "k", 1, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "k", 1, pid, U, &node, &addr,
					   &flags), 0);
	fkv_master_put_abort(F.m, "k", 1, pid, H(3, 7, pid), -EPIPE);
	FKV_ASSERT_EQ(F.ndrops, 1);

	/* Superseded by a newer version meanwhile: dropped too. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "s", 1, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "s", 1, pid, U, &node, &addr,
					   &flags), 0);
	put_on(A, "s", U, 9, &pid2);
	F.ndrops = 0;
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, "s", 1, pid, H(B, 8, pid), U,
					  &flags), 0);
	FKV_ASSERT_EQ(flags, 0);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], H(B, 8, pid));
	FKV_ASSERT_EQ(F.nplaced, 0);

	/* The target left: the placed put is forgotten with it. */
	FKV_ASSERT_EQ(fkv_master_put_start(F.m, "t", 1, U, &pid, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_place(F.m, "t", 1, pid, U, &node, &addr,
					   &flags), 0);
	fkv_master_node_down(F.m, B);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, "t", 1, pid, H(B, 9, pid), U,
					  &flags), -EINVAL);
	(void)x;
	fkv_master_destroy(F.m);
}

/*
 * A restarted master adopts what node B REPORTs; at B's REPORT_DONE the
 * DRAM replicas without an SSD copy (their persist never committed) are
 * persisted again on B -- not one whose SSD copy was reported after it,
 * one with an SSD copy on another node (a pulled copy), one too big for
 * B's tier, or one overwritten meanwhile.
 */
FKV_TEST(a_nodes_reported_replicas_without_an_ssd_copy_are_persisted_again)
{
	uint64_t hx = H(B, 3, 21), hy = H(B, 4, 22), hz = H(B, 5, 23);
	uint64_t hw = H(B, 6, 24), pid;
	struct fkv_adopted *list = NULL;

	memset(&F, 0, sizeof(F));
	{
		struct fkv_master_config c = {
			.node = A, .capacity = SEG, .incarnation = INC_A,
			.now_ms = fx_clock, .clock_arg = &F,
		};

		F.m = fkv_master_create(&c, &rec_ops, &F);
		FKV_ASSERT(F.m != NULL);
	}
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, A, INC_A, SEG, 16 * U, NULL), 0);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B, SEG, 16 * U,
					 "10.77.0.2:7471"), 0);
	/* v: A's SSD copy, B's DRAM copy (pulled before the restart) */
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "v", 1, 20, 0, U, true), 1);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "v", 1, 20, H(B, 2, 20), U,
				       false), 1);
	FKV_ASSERT_EQ(fkv_adopted_add(&list, "v", 1, 20, H(B, 2, 20)), 0);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "x", 1, 21, hx, 2 * U, false), 1);
	FKV_ASSERT_EQ(fkv_adopted_add(&list, "x", 1, 21, hx), 0);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "y", 1, 22, hy, 2 * U, false), 1);
	FKV_ASSERT_EQ(fkv_adopted_add(&list, "y", 1, 22, hy), 0);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "y", 1, 22, 0, 2 * U, true), 1);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "z", 1, 23, hz, 20 * U, false), 1);
	FKV_ASSERT_EQ(fkv_adopted_add(&list, "z", 1, 23, hz), 0);
	FKV_ASSERT_EQ(fkv_master_adopt(F.m, "w", 1, 24, hw, U, false), 1);
	FKV_ASSERT_EQ(fkv_adopted_add(&list, "w", 1, 24, hw), 0);
	/* w is overwritten (from A) before B's reports end */
	put_on(A, "w", U, 9, &pid);
	FKV_ASSERT(pid > 24);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_repersist_adopted(F.m, &list), 1);
	FKV_ASSERT(list == NULL);
	FKV_ASSERT_EQ(F.npersist, 1);
	FKV_ASSERT_EQ(F.persist_handle, hx);
	FKV_ASSERT_EQ(F.persist_put_id, 21);
	/* a node that leaves before its REPORT_DONE: the list is just freed */
	FKV_ASSERT_EQ(fkv_adopted_add(&list, "x", 1, 21, hx), 0);
	fkv_adopted_free(&list);
	FKV_ASSERT(list == NULL);
	FKV_ASSERT_EQ(F.npersist, 1);
	fkv_master_destroy(F.m);
}

/*
 * PUT (uapi FLUXONKV_REGISTER_F_ONE_TRIP): one message numbers, publishes
 * and decides the SSD copy of a value the caller's module holds already;
 * the older version on another node is dropped, nothing stays in flight,
 * and a handle that is not the caller's is refused before anything is
 * reserved or evicted.
 */
FKV_TEST(a_put_in_one_message_is_numbered_and_published_at_once)
{
	struct fkv_master_node_info ni;
	struct fkv_master_stats st;
	struct fkv_get_result g;
	uint64_t p1, p2, p3, hb, ha;
	uint32_t flags;

	setup();
	hb = put_on(B, "k", U, 7, &p1);
	F.ndrops = 0;
	fkv_master_set_caller(F.m, A);
	ha = H(A, 3, 99);
	FKV_ASSERT_EQ(fkv_master_put(F.m, "k", 1, ha, 2 * U, &p2, &flags), 0);
	FKV_ASSERT(p2 > p1);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
	FKV_ASSERT_EQ(F.ndrops, 1);
	FKV_ASSERT_EQ(F.drops[0], hb);
	fkv_master_set_caller(F.m, B);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "k", 1, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	FKV_ASSERT_EQ(g.handle, ha);
	FKV_ASSERT_EQ(g.put_id, p2);
	FKV_ASSERT_EQ(g.len, 2 * U);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, A, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 2 * U);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, B, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 0);

	/* another node's handle, or none: refused, nothing reserved */
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_put(F.m, "x", 1, H(B, 4, 5), U, &p3, &flags),
		      -EINVAL);
	FKV_ASSERT_EQ(fkv_master_put(F.m, "x", 1, 0, U, &p3, &flags), -EINVAL);
	FKV_ASSERT_EQ(p3, 0);
	FKV_ASSERT_EQ(fkv_master_put(F.m, "x", 1, H(A, 4, 5), 0, &p3, &flags),
		      -EINVAL);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "x", 1, &g), -ENOENT);

	/* with an SSD tier the value fits in, the answer says persist */
	fkv_master_set_ssd_capacity(F.m, 4 * U);
	FKV_ASSERT_EQ(fkv_master_put(F.m, "s", 1, H(A, 5, 100), U, &p3,
				     &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED | FLUXONKV_PUT_F_PERSIST);
	FKV_ASSERT_EQ(fkv_master_put(F.m, "t", 1, H(A, 6, 101), 5 * U, &p3,
				     &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.inflight, 0);
	FKV_ASSERT_EQ(st.puts_one_trip, 3);
	FKV_ASSERT_EQ(st.puts, 4);
	fkv_master_destroy(F.m);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The fastest of 5 rounds of 200 gets by A of B's keys, each revoked. */
static uint64_t pull_round_ns(const uint64_t *put_ids)
{
	uint64_t best = UINT64_MAX, t0, dt;
	struct fkv_get_result g;
	char key[24];
	int r, i;

	for (r = 0; r < 5; r++) {
		t0 = mono_ns();
		for (i = 0; i < 200; i++) {
			snprintf(key, sizeof(key), "held-%d", i);
			fkv_master_set_caller(F.m, A);
			FKV_ASSERT_EQ(fkv_master_get_start(F.m, key, strlen(key),
							   &g), 0);
			FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
			/* a network error: the hold ends, the copy stays */
			FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, key,
							    strlen(key),
							    put_ids[i],
							    FLUXONKV_SOURCE_REMOTE,
							    g.handle,
							    -ECONNRESET), 0);
		}
		dt = mono_ns() - t0;
		if (dt < best)
			best = dt;
	}
	return best;
}

/*
 * A pull's completion (GET_DONE / GET_REVOKE) costs the same with 40,000
 * other pulls held as with none (issue 28: the holds were one list,
 * scanned per completion), and the holds still end as they should: by
 * their puller's completion, their deadline, or their puller leaving.
 */
FKV_TEST(a_pulls_completion_does_not_scan_every_other_hold)
{
	struct fkv_master_config c = {
		.node = A, .capacity = 1ULL << 34, .incarnation = INC_A,
		.now_ms = fx_clock, .clock_arg = &F,
	};
	static uint64_t put_ids[40000];
	struct fkv_master_stats st;
	struct fkv_get_result g;
	uint64_t small, big;
	char key[24];
	int i;

	memset(&F, 0, sizeof(F));
	F.now = 1000;
	F.m = fkv_master_create(&c, &rec_ops, &F);
	FKV_ASSERT(F.m != NULL);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, A, INC_A, 1ULL << 34, 0,
					 "10.77.0.1:7471"), 0);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, B, INC_B, 1ULL << 34, 0,
					 "10.77.0.2:7471"), 0);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, 3, 0xc1, 1ULL << 34, 0,
					 "10.77.0.3:7471"), 0);
	for (i = 0; i < 40000; i++) {
		snprintf(key, sizeof(key), "held-%d", i);
		put_on(B, key, U, (uint32_t)i + 1, &put_ids[i]);
	}
	small = pull_round_ns(put_ids);
	/* node 3 pulls every key and reports nothing yet */
	fkv_master_set_caller(F.m, 3);
	for (i = 0; i < 40000; i++) {
		snprintf(key, sizeof(key), "held-%d", i);
		FKV_ASSERT_EQ(fkv_master_get_start(F.m, key, strlen(key), &g),
			      0);
	}
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 40000);
	big = pull_round_ns(put_ids);
	FKV_ASSERT(big < 8 * small, "200 pulls: %llu ns alone, %llu ns "
		   "beside 40000 holds", (unsigned long long)small,
		   (unsigned long long)big);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 40000);
	/* node 3's GET_DONE of one ends its hold of that one only */
	fkv_master_set_caller(F.m, 3);
	FKV_ASSERT_EQ(fkv_master_get_revoke(F.m, "held-7", 6, put_ids[7],
					    FLUXONKV_SOURCE_REMOTE,
					    H(B, 8, put_ids[7]), -EIO), 0);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 39999);
	/* half of them run out (a later batch of holds does not yet) */
	F.now += 10000;
	fkv_master_set_caller(F.m, A);
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "held-%d", i);
		FKV_ASSERT_EQ(fkv_master_get_start(F.m, key, strlen(key), &g),
			      0);
	}
	F.now += 6000;
	fkv_master_tick(F.m);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 100);
	FKV_ASSERT_EQ(st.holds_expired, 39999);
	/* node 3 leaves: its holds go with it */
	fkv_master_node_down(F.m, 3);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 100);
	fkv_master_set_caller(F.m, B);
	fkv_master_node_down(F.m, A);	/* the master's own: ignored */
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.holds, 100);
	fkv_master_destroy(F.m);
}

/*
 * Members past the 8 bits of node id handles used to carry (issue 28, 1,024
 * members): a replica of node 1024 is routed, pulled by node 700 and
 * dropped by its own handle; a node id above what a handle holds is
 * refused.
 */
FKV_TEST(members_past_255_own_serve_and_drop_their_replicas)
{
	struct fkv_get_result g;
	struct fkv_master_node_info ni;
	uint64_t pid, hl, hp;
	uint32_t flags;
	unsigned int j;

	setup();
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, 700, 0x700, SEG, 0,
					 "10.77.2.188:7471"), 0);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, 1024, 0x1024, SEG, 0,
					 "10.77.4.0:7471"), 0);
	FKV_ASSERT_EQ(fkv_master_node_up(F.m, FLUXONKV_NODE_MAX + 1, 0x9, SEG,
					 0, "10.77.16.0:7471"), -EINVAL);
	hl = put_on(1024, "far", 2 * U, 5, &pid);
	FKV_ASSERT_EQ(FLUXONKV_HANDLE_NODE(hl), 1024);
	fkv_master_set_caller(F.m, 700);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "far", 3, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	FKV_ASSERT_EQ(g.handle, hl);
	FKV_ASSERT_EQ(g.node, 1024);
	FKV_ASSERT(!strcmp(g.addr, "10.77.4.0:7471"));
	hp = H(700, 9, pid);
	FKV_ASSERT_EQ(fkv_master_get_done(F.m, "far", 3, pid, hp, 2 * U,
					  FLUXONKV_SOURCE_REMOTE, &flags), 0);
	FKV_ASSERT(flags & FLUXONKV_GET_F_PROMOTED);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, 1024, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 2 * U);
	FKV_ASSERT_EQ(ni.remote_gets, 1);
	FKV_ASSERT_EQ(fkv_master_node_info(F.m, 700, &ni), 0);
	FKV_ASSERT_EQ(ni.used, 2 * U);
	/* the owner of each drop is read off its handle */
	F.ndrops = 0;
	FKV_ASSERT_EQ(fkv_master_delete(F.m, "far", 3, &pid), 0);
	FKV_ASSERT_EQ(F.ndrops, 2);
	for (j = 0; j < F.ndrops; j++)
		FKV_ASSERT(F.drops[j] == hl || F.drops[j] == hp,
			   "drop %#llx", (unsigned long long)F.drops[j]);
	/* member-left of 1024 forgets its replicas only */
	hl = put_on(1024, "far2", U, 6, &pid);
	put_on(700, "near", U, 10, &pid);
	fkv_master_node_down(F.m, 1024);
	while (fkv_master_work(F.m))
		;
	fkv_master_set_caller(F.m, A);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "far2", 4, &g), -ENOENT);
	FKV_ASSERT_EQ(fkv_master_get_start(F.m, "near", 4, &g), 0);
	FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_REMOTE);
	FKV_ASSERT_EQ(g.node, 700);
	fkv_master_destroy(F.m);
}
