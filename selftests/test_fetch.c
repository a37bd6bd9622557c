// SPDX-License-Identifier: GPL-2.0
/*
 * test_fetch - the first primitives of the cluster data plane, with the
 * test playing the node daemon on a raw genl socket and a privileged
 * session (O_RDWR + CAP_SYS_ADMIN) whose mapping of the segment is
 * writable:
 *
 *   GET_START answered SOURCE=REMOTE / REMOTE_SSD + PUT_ID + LEN + HANDLE
 *   (the daemon's transfer token) -> the module allocates a target and
 *   sends FETCH {KEY, PUT_ID, LEN, SOURCE, HANDLE, OFFSET} -> the daemon
 *   writes LEN bytes at OFFSET and answers STATUS 0 -> the get returns a
 *   holder with that source and GET_DONE offers the target (promotion as
 *   for SSD refills).  A failed FETCH is revoked (GET_REVOKE) and the get
 *   re-selects; a target whose get gave up (timeout, SIGKILL) stays
 *   allocated until the daemon answers or goes away.
 */
#include <poll.h>
#include <pthread.h>

#include "fkv_env.h"
#include "fkv_master.h"

#define SEG_MB		32
#define TOKEN		0x70c0ffee0001ULL	/* the daemon's transfer token */
/* What most tests load the module with. */
#define PARAMS		"segment_mb=32 request_timeout_ms=8000"

/*
 * Playing the daemon, clients in child processes, master_put,
 * master_put_filler, answer_miss and expect_latency_count: fkv_master.h.
 */

/* answer_status(), sent without NLM_F_ACK (nothing waited for). */
static void answer_status_noack(struct fkv_nl *nl, uint8_t cmd, uint64_t req,
				int32_t status)
{
	struct answer a = { .cmd = cmd, .has_req_id = true, .req_id = req,
			    .has_status = true, .status = status,
			    .no_ack = true };

	send_answer(nl, &a);
}

/* A message of CMD carrying REQ_ID REQ plus one raw attribute. */
static int send_with_raw_attr(struct fkv_nl *nl, uint8_t cmd, bool with_req,
			      uint64_t req, int type, const void *data,
			      int len)
{
	struct nl_msg *msg = fkv_nl_msg(nl, cmd);

	FKV_ASSERT(msg);
	if (with_req)
		FKV_ASSERT_EQ(nla_put_u64(msg, FLUXONKV_A_REQ_ID, req), 0);
	FKV_ASSERT_EQ(nla_put(msg, type, len, data), 0);
	return fkv_nl_transact(nl, msg);
}

/* ---- steps of the fetch flows ---- */

/* Wait for the GET_START of K; answer it with a remote source. */
static void answer_remote(struct master *m, const char *k, uint32_t source,
			  uint64_t put_id, uint64_t len, uint64_t token)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct answer a = { .cmd = FLUXONKV_CMD_GET_START, .has_req_id = true,
			    .has_status = true, .put_id = put_id,
			    .handle = token, .len = len, .source = source };

	a.req_id = expect_upcall(&m->nl, FLUXONKV_CMD_GET_START, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "GET_START of '%s'", k);
	FKV_ASSERT_EQ(send_answer(&m->nl, &a), 0);
}

struct fetch {
	uint64_t req;
	uint64_t offset;
};

/* The FETCH for the remote get of K: every attribute checked. */
static struct fetch expect_fetch(struct master *m, const char *k,
				 uint32_t source, uint64_t put_id,
				 uint64_t len, uint64_t token)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fetch f;

	f.req = expect_upcall(&m->nl, FLUXONKV_CMD_FETCH, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "FETCH names '%s'", k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), len);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_SOURCE]), source);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_HANDLE]), token);
	FKV_ASSERT(tb[FLUXONKV_A_OFFSET], "FETCH without OFFSET");
	f.offset = fkv_nla_u64(tb[FLUXONKV_A_OFFSET]);
	FKV_ASSERT_EQ(f.offset % FLUXONKV_SEGMENT_ALIGN, 0);
	FKV_ASSERT_LE(f.offset + len, m->size);
	return f;
}

/* The daemon's part of a FETCH: the payload lands in the target. */
static void fill_target(struct master *m, const struct fetch *f,
			const char *k, uint64_t len, uint64_t salt)
{
	fkv_pattern_fill(m->map + f->offset, len, k, strlen(k), salt);
}

/* The GET_DONE offering a fetched target of K; its handle, *req its id. */
static uint64_t expect_get_done(struct master *m, const char *k,
				uint32_t source, uint64_t put_id, uint64_t len,
				uint64_t *req)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t handle;

	*req = expect_upcall(&m->nl, FLUXONKV_CMD_GET_DONE, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "GET_DONE names '%s'",
		   k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_LEN]), len);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_SOURCE]), source);
	handle = fkv_nla_u64(tb[FLUXONKV_A_HANDLE]);
	FKV_ASSERT(handle && handle != UINT64_MAX, "GET_DONE handle");
	FKV_ASSERT(handle != TOKEN, "GET_DONE echoes the transfer token");
	return handle;
}

static int answer_get_done(struct master *m, uint64_t req, bool promote)
{
	struct answer a = { .cmd = FLUXONKV_CMD_GET_DONE, .has_req_id = true,
			    .req_id = req, .has_status = true,
			    .has_flags = true,
			    .flags = promote ? FLUXONKV_GET_F_PROMOTED : 0 };

	return send_answer(&m->nl, &a);
}

/* The GET_REVOKE a failed FETCH of K sends; returns its REQ_ID. */
static uint64_t expect_revoke(struct master *m, const char *k,
			      uint32_t source, uint64_t put_id,
			      uint64_t token, int32_t err)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t req = expect_upcall(&m->nl, FLUXONKV_CMD_GET_REVOKE, tb);

	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "GET_REVOKE names '%s'",
		   k);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_PUT_ID]), put_id);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_SOURCE]), source);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_HANDLE]), token);
	FKV_ASSERT(tb[FLUXONKV_A_ERRNO], "GET_REVOKE without ERRNO");
	FKV_ASSERT_EQ((int32_t)fkv_nla_u32(tb[FLUXONKV_A_ERRNO]), err);
	return req;
}

/* ---- steps the tests share ---- */

/*
 * The start of most tests: the module loaded with PARAMS, the test as the
 * master, the filler put.  Returns segment_used_bytes then; the filler's
 * handle in *hf (may be NULL).
 */
static uint64_t master_begin(struct master *m, const char *params,
			     uint64_t *hf)
{
	uint64_t h;

	FKV_LOAD(params);
	master_start(m);
	h = master_put_filler(m);
	if (hf)
		*hf = h;
	return fkv_sysfs("segment_used_bytes");
}

/* The end of most tests: the segment back at BASE, the filler HF dropped. */
static void master_end(struct master *m, uint64_t base, uint64_t hf)
{
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(drop_replica(&m->nl, hf), 0);
	master_stop(m);
}

/* Route the pending get of K to SOURCE; the FETCH that follows, checked. */
static struct fetch route_fetch(struct master *m, const char *k,
				uint32_t source, uint64_t put_id,
				uint64_t len, uint64_t token)
{
	answer_remote(m, k, source, put_id, len, token);
	return expect_fetch(m, k, source, put_id, len, token);
}

/* A client's get of K (SALT) in *c, routed to SOURCE: its FETCH. */
static struct fetch remote_fetch(struct master *m, struct client *c,
				 const char *k, uint64_t salt,
				 uint32_t source, uint64_t put_id,
				 uint64_t len, uint64_t token)
{
	*c = client_get(k, salt);
	return route_fetch(m, k, source, put_id, len, token);
}

/* The daemon serves F: LEN bytes of (K, SALT) in the target, STATUS 0. */
static void serve_fetch(struct master *m, const struct fetch *f,
			const char *k, uint64_t len, uint64_t salt)
{
	fill_target(m, f, k, len, salt);
	FKV_ASSERT_EQ(answer_status(&m->nl, FLUXONKV_CMD_FETCH, f->req, 0), 0);
}

/*
 * The daemon's late answer to F, whose get gave up: the target is freed
 * (the segment back at BASE) and never offered (WHY otherwise), and no
 * remote hit is counted.
 */
static void serve_abandoned(struct master *m, const struct fetch *f,
			    const char *k, uint64_t len, uint64_t salt,
			    uint64_t base, const char *why)
{
	serve_fetch(m, f, k, len, salt);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	expect_no_upcall(&m->nl, FLUXONKV_CMD_GET_DONE, why);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("hits_remote"), 0);
}

/* The daemon fails F with ERR: the GET_REVOKE that follows, answered. */
static void fail_fetch(struct master *m, const struct fetch *f,
		       const char *k, uint32_t source, uint64_t put_id,
		       uint64_t token, int32_t err)
{
	uint64_t req;

	FKV_ASSERT_EQ(answer_status(&m->nl, FLUXONKV_CMD_FETCH, f->req, err),
		      0);
	req = expect_revoke(m, k, source, put_id, token, err);
	FKV_ASSERT_EQ(answer_status(&m->nl, FLUXONKV_CMD_GET_REVOKE, req, 0),
		      0);
}

/* C's get returned the fetched bytes, intact (WHAT: which ones). */
static struct client_result expect_fetched(struct client *c,
					   const char *what)
{
	struct client_result r = client_result(c);

	FKV_ASSERT_EQ(r.err, 0);
	FKV_ASSERT(r.intact, "%s", what);
	return r;
}

/* The GET_DONE offering K's fetched target, refused (not promoted). */
static void refuse_offer(struct master *m, const char *k, uint32_t source,
			 uint64_t put_id, uint64_t len)
{
	uint64_t req;

	expect_get_done(m, k, source, put_id, len, &req);
	FKV_ASSERT_EQ(answer_get_done(m, req, false), 0);
}

/* ---- 1, 5: the happy path ---- */

/*
 * A get the master routes to another node: the target is allocated, the
 * daemon fills it through its writable mapping, the client reads the
 * bytes through its read-only one, and the target is offered to the
 * master: promoted, it is this node's replica and the next get is a local
 * hit; refused, the holder stays valid and nothing else keeps it.
 */
static void remote_get(const char *k, uint32_t source, uint64_t len,
		       bool promote)
{
	const uint64_t put_id = 7, salt = 0x5eed, span = FKV_ALIGN_UP(len);
	struct client_result r, r2;
	struct fluxonkv_hold hold;
	uint64_t base, handle, req, hf;
	struct master m;
	struct client c;
	struct fetch f;

	base = master_begin(&m, PARAMS, &hf);
	f = remote_fetch(&m, &c, k, salt, source, put_id, len, TOKEN);
	/* the target is allocated; the get waits for the daemon */
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	fkv_msleep(50);
	FKV_ASSERT(!client_finished(&c), "the get returned before FETCH was "
		   "answered");

	serve_fetch(&m, &f, k, len, salt);
	r = expect_fetched(&c, "the client does not read the fetched bytes");
	FKV_ASSERT_EQ(r.source, source);
	FKV_ASSERT_EQ(r.len, len);
	FKV_ASSERT_EQ(r.put_id, put_id);
	FKV_ASSERT_EQ(r.offset, f.offset);
	FKV_ASSERT(r.tail_zero, "bytes after the value in its last granule");
	FKV_ASSERT_EQ(fkv_sysfs("hits_remote"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("hits_memory"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_abandoned"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	expect_latency_count("get_remote", 1);
	expect_latency_count("fetch", 1);

	/* the offer: the target is a replica until the master answers */
	handle = expect_get_done(&m, k, source, put_id, len, &req);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 2);
	FKV_ASSERT_EQ(answer_get_done(&m, req, promote), 0);

	if (promote) {
		FKV_ASSERT_EQ(fkv_sysfs("promotions"), 1);
		FKV_ASSERT_EQ(fkv_sysfs("replicas"), 2);
		/* published: a local memory hit, no GET_START */
		r2 = client_get_once(k, salt);
		FKV_ASSERT_EQ(r2.err, 0);
		FKV_ASSERT_EQ(r2.source, FLUXONKV_SOURCE_MEMORY);
		FKV_ASSERT_EQ(r2.put_id, put_id);
		FKV_ASSERT_EQ(r2.offset, f.offset);
		FKV_ASSERT(r2.intact, "the promoted replica's bytes");
		expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_START,
				 "a promoted replica is not a local hit");
		FKV_ASSERT_EQ(fkv_sysfs("hits_memory"), 1);
		FKV_ASSERT_EQ(fkv_sysfs("fetches"), 1);
		/* and the node daemon can pin it by handle to serve a pull */
		FKV_ASSERT_EQ(fkv_dev_hold(m.fd, k, strlen(k), handle, put_id,
					   &hold), 0);
		FKV_ASSERT_EQ(hold.offset, f.offset);
		FKV_ASSERT_EQ(hold.len, len);
		FKV_ASSERT_EQ(fkv_dev_release(m.fd, hold.holder_id), 0);
	} else {
		FKV_ASSERT_EQ(fkv_sysfs("promotions_refused"), 1);
		FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
		FKV_ASSERT_EQ(fkv_dev_hold(m.fd, k, strlen(k), handle, put_id,
					   &hold), -ENOENT);
		/* the temporary holder still pins unchanged bytes */
		r2 = client_recheck(&c);
		FKV_ASSERT(r2.intact, "a temporary holder's bytes changed");
		FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
		/* nothing indexed: the next get asks the master */
		{
			struct client c2 = client_get(k, salt);

			answer_miss(&m, k);
			r2 = client_result(&c2);
			client_end(&c2);
			FKV_ASSERT_EQ(r2.err, ENOENT);
		}
	}
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 1);
	client_end(&c);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	if (promote) {
		FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base + span);
		FKV_ASSERT_EQ(drop_replica(&m.nl, handle), 0);
	}
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(drop_replica(&m.nl, hf), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&m);
}

FKV_TEST(remote_get_of_1mib_plus_17_is_fetched_offered_and_promoted)
{
	remote_get("remote-big", FLUXONKV_SOURCE_REMOTE, FKV_MIB + 17, true);
}

FKV_TEST(remote_get_of_one_byte_not_promoted_stays_a_temporary_holder)
{
	remote_get("remote-1", FLUXONKV_SOURCE_REMOTE, 1, false);
}

FKV_TEST(remote_ssd_source_is_fetched_and_promoted_the_same_way)
{
	remote_get("remote-ssd", FLUXONKV_SOURCE_REMOTE_SSD,
		   2 * FKV_MIB + 4097, true);
}

FKV_TEST(remote_ssd_source_not_promoted_stays_a_temporary_holder)
{
	remote_get("remote-ssd-1", FLUXONKV_SOURCE_REMOTE_SSD, 5000, false);
}

/*
 * In an empty segment the first target sits at offset 0: the daemon must
 * still be told where to write (OFFSET present and 0, not left out).
 */
FKV_TEST(fetch_into_a_target_at_offset_zero_carries_offset_zero)
{
	const char *k = "at-zero";
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client_result r;
	struct master m;
	struct client c;
	struct fetch f = { 0 };
	bool has_offset;

	FKV_LOAD(PARAMS);
	master_start(&m);
	c = client_get(k, 1);
	answer_remote(&m, k, FLUXONKV_SOURCE_REMOTE, 3, 100, TOKEN);
	f.req = expect_upcall(&m.nl, FLUXONKV_CMD_FETCH, tb);
	has_offset = tb[FLUXONKV_A_OFFSET] != NULL;
	FKV_EXPECT(has_offset, "FETCH of a target at offset 0 has no OFFSET");
	if (has_offset)
		FKV_EXPECT_EQ(fkv_nla_u64(tb[FLUXONKV_A_OFFSET]), 0);
	serve_fetch(&m, &f, k, 100, 1);		/* f.offset 0 */
	r = expect_fetched(&c, "bytes of the target at offset 0");
	FKV_ASSERT_EQ(r.offset, 0);
	FKV_ASSERT_EQ(answer_get_done(&m, expect_upcall(&m.nl,
			FLUXONKV_CMD_GET_DONE, tb), false), 0);
	client_end(&c);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&m);
}

/*
 * A target is allocated like an SSD refill's: with the segment full, the
 * get asks the master for room (NEED_ROOM) and FETCH is sent only once
 * the target exists.
 */
FKV_TEST(remote_get_waits_for_room_before_fetching)
{
	const char *k = "remote-room";
	const uint64_t len = 2 * FKV_MIB, big = 31 * FKV_MIB;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client_result r;
	uint64_t hf, hbig, req;
	struct master m;
	struct client c;
	struct fetch f;

	master_begin(&m, PARAMS, &hf);
	hbig = master_put(&m, "room-hog", big, 2);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      FLUXONKV_SEGMENT_ALIGN + big);

	c = client_get(k, 11);
	answer_remote(&m, k, FLUXONKV_SOURCE_REMOTE, 5, len, TOKEN);
	req = expect_upcall(&m.nl, FLUXONKV_CMD_NEED_ROOM, tb);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_BYTES]), len);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_FETCH,
			 "FETCH sent before its target was allocated");
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 0);
	FKV_ASSERT_GE(fkv_sysfs("room_waits"), 1);
	/* the master evicts, then answers */
	FKV_ASSERT_EQ(drop_replica(&m.nl, hbig), 0);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_NEED_ROOM, req, 0), 0);

	f = expect_fetch(&m, k, FLUXONKV_SOURCE_REMOTE, 5, len, TOKEN);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      FLUXONKV_SEGMENT_ALIGN + FKV_ALIGN_UP(len));
	serve_fetch(&m, &f, k, len, 11);
	r = expect_fetched(&c, "bytes fetched after a room wait");
	FKV_ASSERT_EQ(r.offset, f.offset);
	refuse_offer(&m, k, FLUXONKV_SOURCE_REMOTE, 5, len);
	client_end(&c);
	master_end(&m, FLUXONKV_SEGMENT_ALIGN, hf);
}

/* ---- 2: a failed transfer ---- */

FKV_TEST(failed_fetch_revokes_the_source_and_the_get_asks_again)
{
	const char *k = "fetch-eio";
	const uint64_t len = 50000;
	struct client_result r;
	uint64_t base, hf, req;
	struct master m;
	struct client c;
	struct fetch f;

	base = master_begin(&m, PARAMS, &hf);
	f = remote_fetch(&m, &c, k, 0, FLUXONKV_SOURCE_REMOTE, 9, len, TOKEN);
	/* half a payload, then the transfer fails */
	fill_target(&m, &f, k, len / 2, 0);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_FETCH, f.req, -EIO), 0);
	req = expect_revoke(&m, k, FLUXONKV_SOURCE_REMOTE, 9, TOKEN, -EIO);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 1);
	FKV_ASSERT(!client_finished(&c), "the get returned before re-selecting");
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_GET_REVOKE, req, 0), 0);
	/* re-selection: the master has nothing else */
	answer_miss(&m, k);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ENOENT);
	FKV_ASSERT_EQ(r.holder_id, 0);
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_abandoned"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("hits_remote"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("misses"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_DONE,
			 "a failed fetch was offered");
	master_end(&m, base, hf);
}

FKV_TEST(get_reselects_after_a_failed_fetch_and_the_next_source_serves_it)
{
	const char *k = "fetch-again";
	const uint64_t len = 70000, token2 = TOKEN + 0x100;
	struct client_result r;
	uint64_t base, hf;
	struct master m;
	struct client c;
	struct fetch f;

	base = master_begin(&m, PARAMS, &hf);
	f = remote_fetch(&m, &c, k, 4, FLUXONKV_SOURCE_REMOTE, 12, len, TOKEN);
	fail_fetch(&m, &f, k, FLUXONKV_SOURCE_REMOTE, 12, TOKEN, -ECONNRESET);

	/* the second choice is another node's SSD */
	f = route_fetch(&m, k, FLUXONKV_SOURCE_REMOTE_SSD, 12, len, token2);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + FKV_ALIGN_UP(len));
	serve_fetch(&m, &f, k, len, 4);
	r = expect_fetched(&c, "bytes of the second source");
	FKV_ASSERT_EQ(r.source, FLUXONKV_SOURCE_REMOTE_SSD);
	FKV_ASSERT_EQ(r.put_id, 12);
	FKV_ASSERT_EQ(r.len, len);
	refuse_offer(&m, k, FLUXONKV_SOURCE_REMOTE_SSD, 12, len);
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 2);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("hits_remote"), 1);
	client_end(&c);
	master_end(&m, base, hf);
}

/* A get re-selects at most 3 times (4 sources tried), then misses. */
FKV_TEST(failed_fetches_give_up_after_three_retries)
{
	const char *k = "fetch-budget";
	struct client_result r;
	uint64_t base, hf;
	struct master m;
	struct client c;
	struct fetch f;
	int i;

	base = master_begin(&m, PARAMS, &hf);
	c = client_get(k, 0);
	for (i = 0; i < 4; i++) {
		f = route_fetch(&m, k, FLUXONKV_SOURCE_REMOTE, 20, 4096,
				TOKEN + i);
		fail_fetch(&m, &f, k, FLUXONKV_SOURCE_REMOTE, 20, TOKEN + i,
			   -EHOSTUNREACH);
	}
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ENOENT);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_START,
			 "a fifth source was asked for");
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 4);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 4);
	FKV_ASSERT_EQ(fkv_sysfs("misses"), 1);
	master_end(&m, base, hf);
}

/* ---- 3, 4: gets that give up, daemons that go ---- */

/*
 * The get stops waiting after request_timeout_ms, but the daemon may still
 * be writing the target: it stays allocated past the get's timeout until
 * the daemon answers (here well before the FETCH's expiry, 4 request
 * timeouts), and only then is freed.  A late failure revokes nothing: no
 * get is left to re-select.
 */
FKV_TEST(unanswered_fetch_times_out_but_keeps_its_target_until_answered)
{
	const char *k = "fetch-late";
	const uint64_t len = 3 * FLUXONKV_SEGMENT_ALIGN + 5;
	const uint64_t span = FKV_ALIGN_UP(len);
	struct client_result r;
	uint64_t base, hf;
	struct master m;
	struct client c;
	struct fetch f, f2;
	int64_t t0;
	int pending;

	base = master_begin(&m, "segment_mb=32 request_timeout_ms=1000", &hf);
	t0 = fkv_now_ms();
	f = remote_fetch(&m, &c, k, 0, FLUXONKV_SOURCE_REMOTE, 30, len, TOKEN);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ETIMEDOUT);
	FKV_ASSERT_GE(fkv_now_ms() - t0, 1000);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_abandoned"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("hits_remote"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);

	/* sweep periods later (its expiry is 4 s after the FETCH) */
	fkv_msleep(1500);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_expired"), 0);
	pending = fkv_debugfs_pending(FLUXONKV_CMD_FETCH);
	if (pending >= 0)
		FKV_ASSERT_EQ(pending, 1);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_REVOKE,
			 "an abandoned fetch was revoked");
	/*
	 * The daemon is still allowed to write it; the late answer is still
	 * expected and frees the target, and a second one is unknown.
	 */
	serve_abandoned(&m, &f, k, len, 0, base,
			"an abandoned target was offered");
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_FETCH, f.req, 0),
		      -ENOENT);

	/* abandoned again, then answered with an error: nothing revoked */
	f2 = remote_fetch(&m, &c, k, 0, FLUXONKV_SOURCE_REMOTE_SSD, 31, len,
			  TOKEN + 1);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ETIMEDOUT);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_abandoned"), 2);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_FETCH, f2.req, -EIO),
		      0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_REVOKE,
			 "a late failure of an abandoned fetch was revoked");
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 2);
	FKV_ASSERT_EQ(drop_replica(&m.nl, hf), 0);
	master_stop(&m);
}

/*
 * The daemon's socket closing ends every FETCH: an abandoned one's target
 * is freed, a waiting get fails at once with ENOTCONN; the next daemon
 * starts clean.
 */
FKV_TEST(daemon_leaving_with_fetches_out_releases_their_targets)
{
	const uint64_t len = 10000, span = FKV_ALIGN_UP(len);
	struct client_result r;
	struct client c1, c2;
	struct master m;
	struct fetch f;
	uint64_t base;

	base = master_begin(&m, "segment_mb=32 request_timeout_ms=1000", NULL);

	/* one abandoned ... */
	remote_fetch(&m, &c1, "gone-1", 0, FLUXONKV_SOURCE_REMOTE, 40, len,
		     TOKEN);
	r = client_result(&c1);
	client_end(&c1);
	FKV_ASSERT_EQ(r.err, ETIMEDOUT);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);

	/* ... one still waited for */
	remote_fetch(&m, &c2, "gone-2", 0, FLUXONKV_SOURCE_REMOTE_SSD, 41, len,
		     TOKEN + 1);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + 2 * span);

	fkv_nl_close(&m.nl);
	r = client_result(&c2);
	client_end(&c2);
	FKV_ASSERT_EQ(r.err, ENOTCONN);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
	/* the filler's replica went with the daemon, the targets with it */
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_abandoned"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 0);
	if (fkv_debugfs_pending(FLUXONKV_CMD_FETCH) >= 0)
		FKV_ASSERT_EQ(fkv_debugfs_pending(FLUXONKV_CMD_FETCH), 0);

	/* a new daemon is served as usual */
	master_register(&m);
	f = remote_fetch(&m, &c1, "gone-3", 2, FLUXONKV_SOURCE_REMOTE, 42, 1,
			 TOKEN + 2);
	serve_fetch(&m, &f, "gone-3", 1, 2);
	expect_fetched(&c1, "bytes fetched for the new daemon");
	refuse_offer(&m, "gone-3", FLUXONKV_SOURCE_REMOTE, 42, 1);
	client_end(&c1);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&m);
}

/* A client SIGKILLed in a get that waits on FETCH: nothing leaks. */
FKV_TEST(client_killed_while_waiting_on_fetch_leaks_nothing)
{
	const char *k = "fetch-kill";
	const uint64_t len = FKV_MIB, span = FKV_ALIGN_UP(len);
	uint64_t base, hf;
	struct master m;
	struct client c;
	struct fetch f;
	int64_t t0;
	int status;

	base = master_begin(&m, PARAMS, &hf);
	f = remote_fetch(&m, &c, k, 0, FLUXONKV_SOURCE_REMOTE, 50, len, TOKEN);
	fkv_msleep(50);
	FKV_ASSERT(!client_finished(&c), "the get did not wait for FETCH");
	t0 = fkv_now_ms();
	FKV_ASSERT_EQ(kill(c.pid, SIGKILL), 0);
	FKV_ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
	FKV_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		   "client status %#x", status);
	FKV_ASSERT_LT(fkv_now_ms() - t0, 2000);
	close(c.rfd);
	close(c.wfd);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_abandoned"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	/* the daemon may still be writing: the target stays */
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
	serve_abandoned(&m, &f, k, len, 0, base,
			"a killed get's target was offered");

	/* the module serves the key as usual afterwards */
	f = remote_fetch(&m, &c, k, 8, FLUXONKV_SOURCE_REMOTE, 51, len,
			 TOKEN + 1);
	serve_fetch(&m, &f, k, len, 8);
	expect_fetched(&c, "bytes after a killed get");
	refuse_offer(&m, k, FLUXONKV_SOURCE_REMOTE, 51, len);
	client_end(&c);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_ASSERT_EQ(drop_replica(&m.nl, hf), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	master_stop(&m);
}

/* A get of K routed remote past its user's budget: EDQUOT, no FETCH. */
static void get_past_budget(struct master *m, const char *k,
			    uint64_t put_id, uint64_t len, uint64_t token,
			    const char *why)
{
	struct client c = client_get(k, 0);
	struct client_result r;

	answer_remote(m, k, FLUXONKV_SOURCE_REMOTE, put_id, len, token);
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, EDQUOT);
	expect_no_upcall(&m->nl, FLUXONKV_CMD_FETCH, why);
}

/*
 * A FETCH target is its getter's pin (issue 29): it counts in the user's
 * pin budget (pin_max_pct) from before it is allocated until the daemon
 * answered, however long after the get gave up.  Beyond the budget a
 * remote get fails EDQUOT at once: nothing allocated, no FETCH sent, no
 * source revoked.  Before: targets were charged to nobody, so one user's
 * gets (or abandoned gets) could pin the whole segment.
 */
FKV_TEST(fetch_targets_count_in_their_users_pin_budget)
{
	/* 32 MiB segment, 25 %: 8 MiB per user; each target 5 MiB */
	const uint64_t len = 5 * FKV_MIB, span = FKV_ALIGN_UP(len);
	struct client_result r;
	struct client c1, c2;
	uint64_t base, hf;
	struct master m;
	struct fetch f;

	base = master_begin(&m, "segment_mb=32 pin_max_pct=25 "
			    "request_timeout_ms=1500", &hf);
	/* one get waits on its FETCH: its target is charged */
	f = remote_fetch(&m, &c1, "quota-1", 0, FLUXONKV_SOURCE_REMOTE, 60,
			 len, TOKEN);
	/* the same user's second get would pin 10 MiB: EDQUOT, nothing sent */
	get_past_budget(&m, "quota-2", 61, len, TOKEN + 1,
			"a FETCH past the user's pin budget");
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 1);

	/* the first get gives up: its target stays, and stays charged */
	r = client_result(&c1);
	client_end(&c1);
	FKV_ASSERT_EQ(r.err, ETIMEDOUT);
	get_past_budget(&m, "quota-3", 62, len, TOKEN + 2,
			"a FETCH past the budget an abandoned target holds");
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_REVOKE,
			 "a get refused by its budget revoked its source");

	/* the daemon's late answer frees the target and the budget */
	serve_abandoned(&m, &f, "quota-1", len, 0, base,
			"an abandoned target was offered");
	f = remote_fetch(&m, &c2, "quota-4", 4, FLUXONKV_SOURCE_REMOTE, 63,
			 len, TOKEN + 3);
	serve_fetch(&m, &f, "quota-4", len, 4);
	expect_fetched(&c2, "bytes fetched once the budget was free");
	refuse_offer(&m, "quota-4", FLUXONKV_SOURCE_REMOTE, 63, len);
	client_end(&c2);
	master_end(&m, base, hf);
}

/*
 * An abandoned FETCH target does not stay forever (issue 29): the FETCH
 * carries a DEADLINE 4 request timeouts + 1 s per MiB after its send; a
 * daemon that has not answered by then (stopped, or a fake one as here)
 * loses the target: the module frees it and its user's budget, counts
 * fetch_expired, and refuses the late answer with ENOENT (upcall_errors),
 * offering and revoking nothing.  Before: the target and its charge
 * stayed until the daemon answered or went, however long.
 */
/* A counter that may be missing (a module before it): 0 then. */
static uint64_t sysfs_or_0(const char *name)
{
	uint64_t v = 0;

	return fkv_sysfs_u64(name, &v) ? 0 : v;
}

FKV_TEST(an_abandoned_fetch_target_expires_and_its_late_answer_is_refused)
{
	/* 32 MiB segment, 25 %: 8 MiB per user; the target 5 MiB */
	const uint64_t len = 5 * FKV_MIB, span = FKV_ALIGN_UP(len);
	const int64_t expire_ms = 4 * 500 + 5 * 1000;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	uint64_t base, hf, errors0, timeouts0, deadline = 0, now;
	struct client_result r;
	struct timespec ts;
	struct master m;
	struct client c;
	struct fetch f;
	int64_t t0, freed_ms;

	base = master_begin(&m, "segment_mb=32 pin_max_pct=25 "
			    "request_timeout_ms=500", &hf);
	c = client_get("exp-1", 0);
	answer_remote(&m, "exp-1", FLUXONKV_SOURCE_REMOTE, 70, len, TOKEN);
	f.req = expect_upcall(&m.nl, FLUXONKV_CMD_FETCH, tb);
	t0 = fkv_now_ms();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	if (tb[FLUXONKV_A_DEADLINE])
		deadline = fkv_nla_u64(tb[FLUXONKV_A_DEADLINE]);
	f.offset = fkv_nla_u64(tb[FLUXONKV_A_OFFSET]);

	/* the get gives up; the (fake) daemon never answers */
	r = client_result(&c);
	client_end(&c);
	FKV_ASSERT_EQ(r.err, ETIMEDOUT);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_abandoned"), 1);
	/* well before the expiry: still the daemon's to write, and charged */
	fkv_msleep(1000);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base + span);
	FKV_ASSERT_EQ(sysfs_or_0("fetch_expired"), 0);

	/* past it (the sweep looks every second): freed */
	errors0 = fkv_sysfs("upcall_errors");
	timeouts0 = fkv_sysfs("upcall_timeouts");
	while (fkv_sysfs("segment_used_bytes") != base &&
	       fkv_now_ms() - t0 < expire_ms + 4000)
		fkv_msleep(100);
	freed_ms = fkv_now_ms() - t0;
	FKV_ASSERT(fkv_sysfs("segment_used_bytes") == base,
		   "the abandoned target is still allocated %" PRId64 " ms "
		   "after its FETCH (expiry %" PRId64 " ms)", freed_ms,
		   expire_ms);
	FKV_ASSERT_GE(freed_ms, expire_ms - 1500);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_expired"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_timeouts"), timeouts0 + 1);
	if (fkv_debugfs_pending(FLUXONKV_CMD_FETCH) >= 0)
		FKV_ASSERT_EQ(fkv_debugfs_pending(FLUXONKV_CMD_FETCH), 0);
	/* the FETCH said when: its DEADLINE, monotonic ns, ~expire_ms ahead */
	FKV_ASSERT(deadline, "FETCH without DEADLINE");
	FKV_ASSERT_LE(deadline, now + expire_ms * 1000000ULL);
	FKV_ASSERT_GE(deadline, now + (expire_ms - 1500) * 1000000ULL);

	/* the late answer: refused, nothing offered or revoked */
	fill_target(&m, &f, "exp-1", len, 0);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_FETCH, f.req, 0),
		      -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_errors"), errors0 + 1);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_DONE,
			 "an expired target was offered");
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_REVOKE,
			 "an expired fetch was revoked");
	FKV_ASSERT_EQ(fkv_sysfs("hits_remote"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);

	/* its user's budget is free again: the next 5 MiB get is served */
	f = remote_fetch(&m, &c, "exp-2", 4, FLUXONKV_SOURCE_REMOTE, 71, len,
			 TOKEN + 1);
	serve_fetch(&m, &f, "exp-2", len, 4);
	expect_fetched(&c, "bytes fetched once the expired target went");
	refuse_offer(&m, "exp-2", FLUXONKV_SOURCE_REMOTE, 71, len);
	client_end(&c);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_expired"), 1);
	master_end(&m, base, hf);
}

/* ---- 7: malformed answers ---- */

FKV_TEST(malformed_fetch_answers_are_refused_and_the_real_one_completes)
{
	static const uint64_t ids[] = { 0, 12345, 0xdead00000000ULL,
					UINT64_MAX };
	const char *k = "fetch-bad";
	const uint64_t len = 6000;
	struct answer a = { .cmd = FLUXONKV_CMD_FETCH };
	uint64_t base, hf, errs;
	uint32_t req32;
	uint64_t eight = 0;
	struct master m;
	struct client c;
	struct fetch f;
	unsigned int i;
	int ret;

	base = master_begin(&m, PARAMS, &hf);
	f = remote_fetch(&m, &c, k, 3, FLUXONKV_SOURCE_REMOTE, 60, len, TOKEN);
	errs = fkv_sysfs("upcall_errors");

	a.has_status = true;			/* no REQ_ID */
	FKV_ASSERT_EQ(send_answer(&m.nl, &a), -EINVAL);
	a.has_status = false;			/* no STATUS */
	a.has_req_id = true;
	a.req_id = f.req;
	FKV_ASSERT_EQ(send_answer(&m.nl, &a), -EINVAL);
	a.has_req_id = false;			/* neither */
	FKV_ASSERT_EQ(send_answer(&m.nl, &a), -EINVAL);
	a.has_req_id = a.has_status = true;	/* not an errno */
	a.status = 5;
	FKV_ASSERT_EQ(send_answer(&m.nl, &a), -EINVAL);
	a.status = -4096;
	FKV_ASSERT_EQ(send_answer(&m.nl, &a), -EINVAL);
	/* attributes of the wrong size */
	req32 = (uint32_t)f.req;
	ret = send_with_raw_attr(&m.nl, FLUXONKV_CMD_FETCH, false, 0,
				 FLUXONKV_A_REQ_ID, &req32, sizeof(req32));
	FKV_EXPECT(ret == -EINVAL || ret == -ERANGE, "4-byte REQ_ID: %s",
		   strerror(-ret));
	ret = send_with_raw_attr(&m.nl, FLUXONKV_CMD_FETCH, true, f.req,
				 FLUXONKV_A_STATUS, &eight, sizeof(eight));
	FKV_EXPECT(ret == -EINVAL || ret == -ERANGE, "8-byte STATUS: %s",
		   strerror(-ret));
	FKV_ASSERT_EQ(fkv_sysfs("upcall_errors"), errs);

	/* unknown ids, and the FETCH's id under other commands */
	a.status = 0;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		a.req_id = ids[i];
		FKV_EXPECT(send_answer(&m.nl, &a) == -ENOENT,
			   "FETCH answer for REQ_ID %#" PRIx64, ids[i]);
	}
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_GET_START, f.req, 0),
		      -ENOENT);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_GET_DONE, f.req, 0),
		      -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_errors"), errs + 6);
	fkv_msleep(100);
	FKV_ASSERT(!client_finished(&c), "a malformed answer completed the "
		   "fetch");
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      base + FKV_ALIGN_UP(len));

	/* the real answer, once */
	serve_fetch(&m, &f, k, len, 3);
	FKV_ASSERT_EQ(answer_status(&m.nl, FLUXONKV_CMD_FETCH, f.req, 0),
		      -ENOENT);
	expect_fetched(&c, "bytes after the malformed answers");
	refuse_offer(&m, k, FLUXONKV_SOURCE_REMOTE, 60, len);
	client_end(&c);
	master_end(&m, base, hf);
}

/*
 * A remote route must name the version, the length and the daemon's token,
 * and the value must fit the segment: otherwise the get fails with EPROTO,
 * nothing is allocated and nothing is fetched.
 */
FKV_TEST(remote_route_without_put_id_len_or_token_is_eproto)
{
	static const struct {
		const char *what;
		uint64_t put_id, len, handle;
	} bad[] = {
		{ "no HANDLE", 70, 4096, 0 },
		{ "no PUT_ID", 0, 4096, TOKEN },
		{ "no LEN", 70, 0, TOKEN },
		{ "LEN over the segment", 70, SEG_MB * FKV_MIB + 1, TOKEN },
	};
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client_result r;
	struct master m;
	struct client c;
	uint64_t base;
	unsigned int i;

	FKV_LOAD(PARAMS);
	master_start(&m);
	base = fkv_sysfs("segment_used_bytes");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct answer a = { .cmd = FLUXONKV_CMD_GET_START,
				    .has_req_id = true, .has_status = true,
				    .put_id = bad[i].put_id,
				    .len = bad[i].len,
				    .handle = bad[i].handle,
				    .source = FLUXONKV_SOURCE_REMOTE };

		c = client_get("eproto", 0);
		a.req_id = expect_upcall(&m.nl, FLUXONKV_CMD_GET_START, tb);
		FKV_ASSERT_EQ(send_answer(&m.nl, &a), 0);
		r = client_result(&c);
		client_end(&c);
		FKV_EXPECT(r.err == EPROTO, "%s: %s", bad[i].what,
			   strerror(r.err));
		FKV_ASSERT(fkv_nl_next(&m.nl, FLUXONKV_CMD_FETCH, tb, 100) != 0,
			   "%s: FETCH sent", bad[i].what);
	}
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"), base);
	master_stop(&m);
}

/* ---- the bound on outstanding FETCHes ---- */

#define FLUXONKV_FETCH_MAX_TEST	1024	/* kmod/fluxonkv.h FLUXONKV_FETCH_MAX */
#define BUSY_GETS	(FLUXONKV_FETCH_MAX_TEST + 1)

struct busy_client {
	int fd;
	int out;		/* pipe: each finished get writes its errno */
	int idx;
};

static void *busy_get(void *arg)
{
	struct busy_client *b = arg;
	struct fluxonkv_get g;
	char k[32];
	int err;

	snprintf(k, sizeof(k), "busy-%d", b->idx);
	err = -fkv_dev_get(b->fd, k, strlen(k), &g);
	if (write(b->out, &err, sizeof(err)) != sizeof(err))
		_exit(2);
	return NULL;
}

/* In a child: BUSY_GETS threads, one get each, on one client session. */
static pid_t busy_clients_start(int *rfd)
{
	int out;
	pid_t pid = fkv_fork_piped(&out);

	if (pid == 0) {
		static struct busy_client b[BUSY_GETS];
		static pthread_t t[BUSY_GETS];
		pthread_attr_t attr;
		int fd, i;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close_inherited_fds(out, -1);
		fd = fkv_dev_open_ro();
		if (fd < 0)
			_exit(2);
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		for (i = 0; i < BUSY_GETS; i++) {
			b[i] = (struct busy_client){ fd, out, i };
			if (pthread_create(&t[i], &attr, busy_get, &b[i]))
				_exit(3);
		}
		for (i = 0; i < BUSY_GETS; i++)
			pthread_join(t[i], NULL);
		_exit(0);
	}
	*rfd = out;
	return pid;
}

/*
 * FLUXONKV_FETCH_MAX FETCHes may be outstanding; one more get fails with
 * EBUSY at once, without revoking its source or keeping its target.  The
 * daemon leaving ends all of them.
 */
FKV_TEST_TIMEOUT(fetches_beyond_the_outstanding_limit_are_ebusy, 300)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	int rcvbuf = 16 << 20, rfd, err, n, status, busy = 0, notconn = 0;
	struct master m;
	pid_t pid;

	FKV_LOAD("segment_mb=32 request_timeout_ms=120000");
	master_start(&m);
	/* room for every upcall at once: a full socket is another test */
	FKV_ASSERT_EQ(setsockopt(nl_socket_get_fd(m.nl.sk), SOL_SOCKET,
				 SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)), 0);
	pid = busy_clients_start(&rfd);
	for (n = 0; n < BUSY_GETS; n++) {
		/*
		 * Without waiting for ACKs: a transaction reads (and queues,
		 * at most FKV_NL_QUEUE) every message ahead of its ACK.
		 */
		struct answer a = { .cmd = FLUXONKV_CMD_GET_START,
				    .has_req_id = true, .has_status = true,
				    .put_id = 1, .len = 1,
				    .source = FLUXONKV_SOURCE_REMOTE,
				    .no_ack = true };

		a.req_id = expect_upcall_in(&m.nl, FLUXONKV_CMD_GET_START, tb,
					    30000);
		a.handle = TOKEN + n;
		FKV_ASSERT_EQ(send_answer(&m.nl, &a), 0);
	}
	/* exactly one get comes back, with EBUSY */
	FKV_ASSERT_EQ(read(rfd, &err, sizeof(err)), sizeof(err));
	FKV_ASSERT(err == EBUSY, "the get over the limit: %s", strerror(err));
	{
		struct pollfd p = { .fd = rfd, .events = POLLIN };

		FKV_ASSERT_EQ(poll(&p, 1, 500), 0);
	}
	FKV_ASSERT_EQ(fkv_sysfs("fetches"), FLUXONKV_FETCH_MAX_TEST);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_errors"), 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes",
				 FLUXONKV_FETCH_MAX_TEST *
				 (uint64_t)FLUXONKV_SEGMENT_ALIGN);
	expect_no_upcall(&m.nl, FLUXONKV_CMD_GET_REVOKE,
			 "the get over the limit revoked its source");
	if (fkv_debugfs_pending(FLUXONKV_CMD_FETCH) >= 0)
		FKV_ASSERT_EQ(fkv_debugfs_pending(FLUXONKV_CMD_FETCH),
			      FLUXONKV_FETCH_MAX_TEST);

	/* the daemon goes: every waiting get fails with ENOTCONN */
	fkv_nl_close(&m.nl);
	for (n = 0; n < FLUXONKV_FETCH_MAX_TEST; n++) {
		FKV_ASSERT_EQ(read(rfd, &err, sizeof(err)), sizeof(err));
		if (err == ENOTCONN)
			notconn++;
		else if (err == EBUSY)
			busy++;
	}
	FKV_ASSERT_EQ(notconn, FLUXONKV_FETCH_MAX_TEST);
	FKV_ASSERT_EQ(busy, 0);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "busy clients: status %#x", status);
	close(rfd);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", 0);
	FKV_ASSERT_EQ(fkv_sysfs("fetch_abandoned"), 0);
	munmap(m.map, m.size);
	close(m.fd);
}

/* ---- a FETCH the module could not deliver ---- */

/*
 * Messages the kernel could not queue to netlink port PORTID (Drops in
 * /proc/net/netlink), its queued bytes in *rmem; -1 if not found.
 */
static long netlink_drops(uint32_t portid, long *rmem)
{
	FILE *f = fopen("/proc/net/netlink", "r");
	char line[512];
	long drops = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned int eth, port, groups, d;
		long r, w;
		int dump, locks;

		if (sscanf(line, "%*s %u %u %x %ld %ld %d %d %u", &eth, &port,
			   &groups, &r, &w, &dump, &locks, &d) == 8 &&
		    port == portid) {
			drops = d;
			*rmem = r;
			break;
		}
	}
	fclose(f);
	return drops;
}

/* The next queued or received message, whatever its command; 0 or -ETIMEDOUT. */
static int nl_next_any(struct fkv_nl *nl, struct nlattr **tb, uint8_t *cmd,
		       unsigned int timeout_ms)
{
	static const uint8_t cmds[] = {
		FLUXONKV_CMD_GET_START, FLUXONKV_CMD_FETCH,
		FLUXONKV_CMD_GET_REVOKE, FLUXONKV_CMD_GET_DONE,
	};
	int64_t end = fkv_now_ms() + timeout_ms;
	unsigned int i;

	do {
		for (i = 0; i < sizeof(cmds); i++)
			if (!fkv_nl_next(nl, cmds[i], tb, 0)) {
				*cmd = cmds[i];
				return 0;
			}
	} while (fkv_now_ms() < end);
	return -ETIMEDOUT;
}

/*
 * The daemon's socket is full when the module sends FETCH (back-pressure,
 * as sync upcalls treat it): the daemon never saw the request, so the
 * remote source has not failed and must not be revoked.  Either the FETCH
 * arrives once the daemon drains its socket, or the get fails without a
 * GET_REVOKE.
 */
FKV_TEST(fetch_the_module_cannot_deliver_does_not_revoke_its_source)
{
	const char *k = "full-a";
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct client ca, cb[6];
	struct client_result r, ra = { 0 };
	int zero = 0, big = 1 << 20, revoke_errno = 0, i, left = 6;
	bool revoked = false, fetched = false, a_done = false;
	struct answer a;
	struct master m;
	uint32_t port;
	int64_t end;
	long rmem = -1, drops0;
	int rcvbuf = 0;
	socklen_t sl = sizeof(rcvbuf);
	uint8_t cmd;

	master_begin(&m, "segment_mb=32 request_timeout_ms=5000", NULL);
	port = nl_socket_get_local_port(m.nl.sk);
	drops0 = netlink_drops(port, &rmem);
	if (drops0 < 0)
		FKV_SKIP("no /proc/net/netlink entry for port %u", port);

	ca = client_get(k, 6);
	a = (struct answer){ .cmd = FLUXONKV_CMD_GET_START, .has_req_id = true,
			     .has_status = true, .put_id = 80, .len = 9000,
			     .handle = TOKEN,
			     .source = FLUXONKV_SOURCE_REMOTE, .no_ack = true };
	a.req_id = expect_upcall(&m.nl, FLUXONKV_CMD_GET_START, tb);
	FKV_ASSERT(attr_is_key(tb[FLUXONKV_A_KEY], k), "GET_START of %s", k);

	/* fill the socket with other gets' GET_STARTs, unread */
	FKV_ASSERT_EQ(setsockopt(nl_socket_get_fd(m.nl.sk), SOL_SOCKET,
				 SO_RCVBUF, &zero, sizeof(zero)), 0);
	FKV_ASSERT_EQ(getsockopt(nl_socket_get_fd(m.nl.sk), SOL_SOCKET,
				 SO_RCVBUF, &rcvbuf, &sl), 0);
	for (i = 0; i < 6; i++) {
		char kb[16];

		snprintf(kb, sizeof(kb), "full-b%d", i);
		cb[i] = client_get(kb, 0);
	}
	/* full: the kernel drops (and the gets retry) what does not fit */
	end = fkv_now_ms() + 3000;
	while (netlink_drops(port, &rmem) <= drops0 && fkv_now_ms() < end)
		fkv_msleep(10);
	FKV_ASSERT(netlink_drops(port, &rmem) > drops0,
		   "socket not full: rmem %ld, rcvbuf %d", rmem, rcvbuf);

	/* the answer that makes the module send FETCH into the full socket */
	FKV_ASSERT_EQ(send_answer(&m.nl, &a), 0);
	fkv_msleep(300);
	FKV_ASSERT_EQ(setsockopt(nl_socket_get_fd(m.nl.sk), SOL_SOCKET,
				 SO_RCVBUF, &big, sizeof(big)), 0);

	/* drain and serve whatever comes, until every get is back */
	end = fkv_now_ms() + 20000;
	while ((!a_done || left) && fkv_now_ms() < end) {
		uint64_t req;

		if (!a_done && client_finished(&ca)) {
			ra = client_result(&ca);
			a_done = true;
		}
		for (i = 0; i < 6; i++)
			if (cb[i].pid && client_finished(&cb[i])) {
				r = client_result(&cb[i]);
				FKV_EXPECT(r.err == ENOENT, "full-b%d: %s", i,
					   strerror(r.err));
				client_end(&cb[i]);
				cb[i].pid = 0;
				left--;
			}
		if (nl_next_any(&m.nl, tb, &cmd, 50))
			continue;
		/*
		 * Answers without ACKs: until the socket is empty once, the
		 * kernel drops what it would queue to it, ACKs included.
		 */
		req = fkv_nla_u64(tb[FLUXONKV_A_REQ_ID]);
		if (cmd == FLUXONKV_CMD_GET_START) {
			answer_status_noack(&m.nl, cmd, req, -ENOENT);
		} else if (cmd == FLUXONKV_CMD_FETCH) {
			struct fetch f = { .req = req };

			FKV_ASSERT(tb[FLUXONKV_A_OFFSET], "FETCH without OFFSET");
			f.offset = fkv_nla_u64(tb[FLUXONKV_A_OFFSET]);
			FKV_ASSERT_LE(f.offset + 9000, m.size);
			fetched = true;
			fill_target(&m, &f, k, 9000, 6);
			answer_status_noack(&m.nl, cmd, req, 0);
		} else if (cmd == FLUXONKV_CMD_GET_REVOKE) {
			revoked = true;
			revoke_errno = (int32_t)fkv_nla_u32(
						tb[FLUXONKV_A_ERRNO]);
			answer_status_noack(&m.nl, cmd, req, 0);
		} else if (cmd == FLUXONKV_CMD_GET_DONE) {
			struct answer gd = { .cmd = cmd, .has_req_id = true,
					     .req_id = req, .has_status = true,
					     .has_flags = true, .no_ack = true };

			send_answer(&m.nl, &gd);
		}
	}
	FKV_ASSERT(a_done && !left, "gets still blocked after 20 s (a: %d, "
		   "others: %d)", a_done, left);
	client_end(&ca);
	FKV_EXPECT(!revoked, "GET_REVOKE (ERRNO %d) of a source the daemon "
		   "was never asked to fetch from (FETCH seen: %d, get: %s)",
		   revoke_errno, fetched, strerror(ra.err));
	FKV_EXPECT_EQ(fkv_sysfs("fetch_errors"), 0);
	if (fetched) {
		FKV_EXPECT_EQ(ra.err, 0);
		FKV_EXPECT(ra.intact, "bytes of the delayed FETCH");
	}
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", FLUXONKV_SEGMENT_ALIGN);
	master_stop(&m);
}
