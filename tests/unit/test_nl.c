// SPDX-License-Identifier: GPL-2.0
/*
 * test_nl.c - fluxond's netlink encoding: upcalls decoded with the policy of
 * their command, answers and DROP_REPLICA encoded as the module's policies
 * expect.  Messages are built with libnl as the kernel would send them
 * (u64 attributes preceded by PAD attributes).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "fluxonkv_config.h"
#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/dispatch.h"
#include "../../userspace/fluxond/log.h"
#include "../../userspace/fluxond/nl.h"

#define FAMILY	0x2a
#define A(x)	FKV_ATTR(FLUXONKV_A_##x)

static struct nl_msg *upcall(uint8_t cmd)
{
	struct nl_msg *msg = nlmsg_alloc();

	FKV_ASSERT(msg != NULL);
	FKV_ASSERT(genlmsg_put(msg, 0, 0, FAMILY, 0, 0, cmd,
			       FLUXONKV_GENL_VERSION) != NULL);
	return msg;
}

/* As the kernel's nla_put_u64_64bit() may: a PAD attribute first. */
static void put_u64(struct nl_msg *msg, int type, uint64_t v)
{
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_PAD, 0, NULL), 0);
	FKV_ASSERT_EQ(nla_put_u64(msg, type, v), 0);
}

static int decode(struct nl_msg *msg, struct fkv_upcall *u)
{
	return fkv_nl_decode(nlmsg_hdr(msg), u);
}

FKV_TEST(put_done_is_decoded_attribute_by_attribute)
{
	struct nl_msg *msg = upcall(FLUXONKV_CMD_PUT_DONE);
	struct fkv_upcall u;

	put_u64(msg, FLUXONKV_A_REQ_ID, 77);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 3, "k\0y"), 0);
	put_u64(msg, FLUXONKV_A_PUT_ID, 5);
	put_u64(msg, FLUXONKV_A_HANDLE, 0x1234567890ULL);
	put_u64(msg, FLUXONKV_A_LEN, 1 << 20);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.cmd, FLUXONKV_CMD_PUT_DONE);
	FKV_ASSERT_EQ(u.present, A(REQ_ID) | A(KEY) | A(PUT_ID) | A(HANDLE) |
				 A(LEN));
	FKV_ASSERT_EQ(u.req_id, 77);
	FKV_ASSERT_EQ(u.key_len, 3);
	FKV_ASSERT(!memcmp(u.key, "k\0y", 3));
	FKV_ASSERT_EQ(u.put_id, 5);
	FKV_ASSERT_EQ(u.handle, 0x1234567890ULL);
	FKV_ASSERT_EQ(u.len, 1 << 20);
	nlmsg_free(msg);
}

FKV_TEST(attributes_foreign_to_the_command_are_not_decoded)
{
	struct nl_msg *msg = upcall(FLUXONKV_CMD_GET_START);
	struct fkv_upcall u;

	put_u64(msg, FLUXONKV_A_REQ_ID, 1);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 1, "k"), 0);
	FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_HANDLE, 3), 0); /* bad size */
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.present, A(REQ_ID) | A(KEY));
	FKV_ASSERT_EQ(u.handle, 0);
	nlmsg_free(msg);
}

FKV_TEST(need_room_and_notifications_decode)
{
	uint64_t hs[3] = { 11, 22, 33 };
	struct nl_msg *msg = upcall(FLUXONKV_CMD_NEED_ROOM);
	struct fkv_upcall u;

	put_u64(msg, FLUXONKV_A_REQ_ID, 2);
	put_u64(msg, FLUXONKV_A_BYTES, 4096);
	put_u64(msg, FLUXONKV_A_SEGMENT_USED, 8192);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.bytes, 4096);
	FKV_ASSERT_EQ(u.segment_used, 8192);
	nlmsg_free(msg);

	/* ACCESS: a notification, no REQ_ID. */
	msg = upcall(FLUXONKV_CMD_ACCESS);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_HANDLES, sizeof(hs), hs), 0);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.present, A(HANDLES));
	FKV_ASSERT_EQ(u.nhandles, 3);
	FKV_ASSERT_EQ(fkv_upcall_handle(&u, 0), 11);
	FKV_ASSERT_EQ(fkv_upcall_handle(&u, 2), 33);
	nlmsg_free(msg);

	/* DROPPED: HANDLES as ACCESS */
	msg = upcall(FLUXONKV_CMD_DROPPED);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_HANDLES, sizeof(hs), hs), 0);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.cmd, FLUXONKV_CMD_DROPPED);
	FKV_ASSERT_EQ(u.nhandles, 3);
	FKV_ASSERT_EQ(fkv_upcall_handle(&u, 1), 22);
	nlmsg_free(msg);

	msg = upcall(FLUXONKV_CMD_PUT_ABORT);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 2, "ab"), 0);
	put_u64(msg, FLUXONKV_A_PUT_ID, 9);
	FKV_ASSERT_EQ(nla_put_s32(msg, FLUXONKV_A_ERRNO, -EFAULT), 0);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.present, A(KEY) | A(PUT_ID) | A(ERRNO));
	FKV_ASSERT_EQ(u.error, -EFAULT);
	nlmsg_free(msg);
}

FKV_TEST(malformed_upcalls_are_einval_and_keep_an_answerable_req_id)
{
	uint8_t longkey[FLUXONKV_KEY_MAX + 1] = { 0 };
	struct nl_msg *msg;
	struct fkv_upcall u;

	msg = upcall(FLUXONKV_CMD_PUT_START);
	put_u64(msg, FLUXONKV_A_REQ_ID, 41);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, sizeof(longkey), longkey),
		      0);
	put_u64(msg, FLUXONKV_A_LEN, 1);
	FKV_ASSERT_EQ(decode(msg, &u), -EINVAL);
	FKV_ASSERT_EQ(u.present, A(REQ_ID));
	FKV_ASSERT_EQ(u.req_id, 41);
	FKV_ASSERT_EQ(u.cmd, FLUXONKV_CMD_PUT_START);
	nlmsg_free(msg);

	/* A u32 where a u64 belongs. */
	msg = upcall(FLUXONKV_CMD_PUT_START);
	put_u64(msg, FLUXONKV_A_REQ_ID, 42);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 1, "k"), 0);
	FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_LEN, 1), 0);
	FKV_ASSERT_EQ(decode(msg, &u), -EINVAL);
	FKV_ASSERT_EQ(u.req_id, 42);
	nlmsg_free(msg);

	/* Empty key. */
	msg = upcall(FLUXONKV_CMD_DELETE);
	put_u64(msg, FLUXONKV_A_REQ_ID, 43);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 0, NULL), 0);
	FKV_ASSERT_EQ(decode(msg, &u), -EINVAL);
	FKV_ASSERT_EQ(u.req_id, 43);
	nlmsg_free(msg);

	/* HANDLES not a whole number of u64. */
	msg = upcall(FLUXONKV_CMD_ACCESS);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_HANDLES, 12, longkey), 0);
	FKV_ASSERT_EQ(decode(msg, &u), -EINVAL);
	FKV_ASSERT_EQ(u.present, 0);
	nlmsg_free(msg);

	/* A REQ_ID of the wrong size cannot be answered. */
	msg = upcall(FLUXONKV_CMD_GET_START);
	FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_REQ_ID, 44), 0);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 1, "k"), 0);
	FKV_ASSERT_EQ(decode(msg, &u), -EINVAL);
	FKV_ASSERT_EQ(u.present, 0);
	nlmsg_free(msg);

	/* Not an upcall at all. */
	msg = upcall(FLUXONKV_CMD_DROP_REPLICA);
	FKV_ASSERT_EQ(decode(msg, &u), -EOPNOTSUPP);
	nlmsg_free(msg);
}

/* Parse a message we built, with a permissive policy. */
static struct genlmsghdr *parse(struct nl_msg *msg, struct nlattr **tb)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	FKV_ASSERT_EQ(nlh->nlmsg_type, FAMILY);
	FKV_ASSERT_EQ(genlmsg_parse(nlh, 0, tb, FLUXONKV_A_MAX, NULL), 0);
	return genlmsg_hdr(nlh);
}

FKV_TEST(answers_carry_cmd_req_id_status_and_only_the_present_attributes)
{
	struct fkv_reply r = {
		.status = 0, .present = A(SOURCE) | A(HANDLE) | A(PUT_ID) | A(LEN),
		.source = FLUXONKV_SOURCE_MEMORY, .handle = 0xab, .put_id = 3,
		.len = 999, .flags = 5,
	};
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct genlmsghdr *gh;
	struct nl_msg *msg;

	msg = fkv_nl_reply_msg(FAMILY, FLUXONKV_CMD_GET_START, 1ULL << 33, &r);
	FKV_ASSERT(msg != NULL);
	gh = parse(msg, tb);
	FKV_ASSERT_EQ(gh->cmd, FLUXONKV_CMD_GET_START);
	FKV_ASSERT_EQ(gh->version, FLUXONKV_GENL_VERSION);
	FKV_ASSERT(tb[FLUXONKV_A_REQ_ID] &&
		   nla_get_u64(tb[FLUXONKV_A_REQ_ID]) == 1ULL << 33);
	FKV_ASSERT(tb[FLUXONKV_A_STATUS]);
	FKV_ASSERT_EQ(nla_len(tb[FLUXONKV_A_STATUS]), 4);
	FKV_ASSERT_EQ(nla_get_s32(tb[FLUXONKV_A_STATUS]), 0);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_SOURCE]),
		      FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_HANDLE]), 0xab);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_PUT_ID]), 3);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_LEN]), 999);
	FKV_ASSERT(tb[FLUXONKV_A_FLAGS] == NULL);	/* not present */
	nlmsg_free(msg);

	/* A failure answers REQ_ID and STATUS only. */
	r.status = -ENOENT;
	msg = fkv_nl_reply_msg(FAMILY, FLUXONKV_CMD_GET_START, 8, &r);
	FKV_ASSERT(msg != NULL);
	parse(msg, tb);
	FKV_ASSERT_EQ(nla_get_s32(tb[FLUXONKV_A_STATUS]), -ENOENT);
	FKV_ASSERT(tb[FLUXONKV_A_SOURCE] == NULL);
	FKV_ASSERT(tb[FLUXONKV_A_HANDLE] == NULL);
	FKV_ASSERT(tb[FLUXONKV_A_PUT_ID] == NULL);
	nlmsg_free(msg);
}

FKV_TEST(drop_replica_carries_handle_and_flags)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct nl_msg *msg;

	msg = fkv_nl_drop_msg(FAMILY, 0x99, FLUXONKV_DROP_F_EVICTED);
	FKV_ASSERT(msg != NULL);
	FKV_ASSERT_EQ(parse(msg, tb)->cmd, FLUXONKV_CMD_DROP_REPLICA);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_HANDLE]), 0x99);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_FLAGS]),
		      FLUXONKV_DROP_F_EVICTED);
	FKV_ASSERT(tb[FLUXONKV_A_REQ_ID] == NULL);
	nlmsg_free(msg);
}

/* The TENANT_ENTRY nests of a TENANTS message, checked attribute by attribute. */
static size_t tenant_entries(struct nl_msg *msg, struct nlattr **ent,
			     size_t max)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gh = genlmsg_hdr(nlh);
	struct nlattr *a;
	size_t n = 0;
	int rem;

	FKV_ASSERT_EQ(nlh->nlmsg_type, FAMILY);
	FKV_ASSERT(nlh->nlmsg_flags & NLM_F_ACK);
	FKV_ASSERT_EQ(gh->cmd, FLUXONKV_CMD_TENANTS);
	nla_for_each_attr(a, genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0),
			  rem) {
		FKV_ASSERT_EQ(nla_type(a), FLUXONKV_A_TENANT_ENTRY);
		FKV_ASSERT(n < max);
		ent[n++] = a;
	}
	FKV_ASSERT_EQ(rem, 0);
	return n;
}

FKV_TEST(tenants_carries_one_entry_per_tenant_with_its_uids_and_gids)
{
	uint32_t uids0[] = { 1001, 0 }, gids0[] = { 4242 }, uids1[] = { 7 };
	struct fkv_tenant_config t[2] = {
		{ .name = (char *)"a", .id = 1, .uids = uids0, .nuids = 2,
		  .gids = gids0, .ngids = 1, .dram_bytes = 1 << 20 },
		{ .name = (char *)"b", .id = 65535, .uids = uids1, .nuids = 1 },
	};
	struct nlattr *ent[4], *tb[FLUXONKV_A_MAX + 1];
	struct nl_msg *msg = fkv_nl_tenants_msg(FAMILY, t, 2);

	FKV_ASSERT(msg != NULL);
	FKV_ASSERT_EQ(tenant_entries(msg, ent, 4), 2);
	FKV_ASSERT_EQ(nla_parse_nested(tb, FLUXONKV_A_MAX, ent[0], NULL), 0);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_TENANT_ID]), 1);
	FKV_ASSERT_EQ(nla_len(tb[FLUXONKV_A_UIDS]), 8);
	FKV_ASSERT(!memcmp(nla_data(tb[FLUXONKV_A_UIDS]), uids0, 8));
	FKV_ASSERT_EQ(nla_len(tb[FLUXONKV_A_GIDS]), 4);
	FKV_ASSERT(!memcmp(nla_data(tb[FLUXONKV_A_GIDS]), gids0, 4));
	FKV_ASSERT_EQ(nla_parse_nested(tb, FLUXONKV_A_MAX, ent[1], NULL), 0);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_TENANT_ID]), 65535);
	FKV_ASSERT_EQ(nla_len(tb[FLUXONKV_A_UIDS]), 4);
	FKV_ASSERT(tb[FLUXONKV_A_GIDS] == NULL);	/* empty: left out */
	nlmsg_free(msg);

	/* no tenants: an empty table (the module's is cleared) */
	msg = fkv_nl_tenants_msg(FAMILY, NULL, 0);
	FKV_ASSERT(msg != NULL);
	FKV_ASSERT_EQ(tenant_entries(msg, ent, 4), 0);
	nlmsg_free(msg);
}

FKV_TEST(tenants_at_the_uapi_limits_fit_and_past_them_are_refused)
{
	static struct fkv_tenant_config t[FLUXONKV_TENANTS_MAX + 1];
	static uint32_t ids[FLUXONKV_TENANT_IDS_MAX + 1];
	static struct nlattr *ent[FLUXONKV_TENANTS_MAX];
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct nl_msg *msg;
	size_t i;

	for (i = 0; i <= FLUXONKV_TENANT_IDS_MAX; i++)
		ids[i] = 1000 + i;
	for (i = 0; i <= FLUXONKV_TENANTS_MAX; i++)
		t[i] = (struct fkv_tenant_config){
			.id = i + 1, .uids = ids, .gids = ids,
			.nuids = FLUXONKV_TENANT_IDS_MAX,
			.ngids = FLUXONKV_TENANT_IDS_MAX,
		};
	msg = fkv_nl_tenants_msg(FAMILY, t, FLUXONKV_TENANTS_MAX);
	FKV_ASSERT(msg != NULL);
	FKV_ASSERT_EQ(tenant_entries(msg, ent, FLUXONKV_TENANTS_MAX),
		      FLUXONKV_TENANTS_MAX);
	FKV_ASSERT_EQ(nla_parse_nested(tb, FLUXONKV_A_MAX,
				       ent[FLUXONKV_TENANTS_MAX - 1], NULL), 0);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_TENANT_ID]),
		      FLUXONKV_TENANTS_MAX);
	FKV_ASSERT_EQ(nla_len(tb[FLUXONKV_A_GIDS]),
		      4 * FLUXONKV_TENANT_IDS_MAX);
	FKV_ASSERT(!memcmp(nla_data(tb[FLUXONKV_A_GIDS]), ids,
			   4 * FLUXONKV_TENANT_IDS_MAX));
	nlmsg_free(msg);

	errno = 0;
	FKV_ASSERT(fkv_nl_tenants_msg(FAMILY, t, FLUXONKV_TENANTS_MAX + 1) ==
		   NULL);
	FKV_ASSERT_EQ(errno, E2BIG);
	t[3].nuids = FLUXONKV_TENANT_IDS_MAX + 1;
	FKV_ASSERT(fkv_nl_tenants_msg(FAMILY, t, 4) == NULL);
	FKV_ASSERT_EQ(errno, EINVAL);
	t[3].nuids = 1;
	t[3].id = 0;
	FKV_ASSERT(fkv_nl_tenants_msg(FAMILY, t, 4) == NULL);
	FKV_ASSERT_EQ(errno, EINVAL);
	t[3].id = FLUXONKV_TENANT_ID_MAX + 1;
	FKV_ASSERT(fkv_nl_tenants_msg(FAMILY, t, 4) == NULL);
	FKV_ASSERT_EQ(errno, EINVAL);
	/* the configuration's limits are the uapi's */
	FKV_ASSERT_EQ(FKV_TENANTS_MAX, FLUXONKV_TENANTS_MAX);
	FKV_ASSERT_EQ(FKV_TENANT_IDS_MAX, FLUXONKV_TENANT_IDS_MAX);
	FKV_ASSERT_EQ(FKV_TENANT_ID_MAX, FLUXONKV_TENANT_ID_MAX);
}

static void no_drop(void *arg, uint64_t handle, uint32_t flags)
{
}

FKV_TEST(a_put_start_message_is_answered_with_put_id_and_flags)
{
	static const struct fkv_master_ops ops = { .send_drop = no_drop };
	struct fkv_master_config cfg = { .capacity = 1 << 20 };
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct nl_msg *msg = upcall(FLUXONKV_CMD_PUT_START), *ans;
	struct fkv_master *m;
	struct fkv_upcall u;
	struct fkv_reply r;

	fkv_log_setup(FKV_LOG_ERR, false);
	m = fkv_master_create(&cfg, &ops, NULL);
	FKV_ASSERT(m != NULL);
	put_u64(msg, FLUXONKV_A_REQ_ID, 5);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 3, "abc"), 0);
	put_u64(msg, FLUXONKV_A_LEN, 100);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT(fkv_dispatch(m, &u, &r));
	ans = fkv_nl_reply_msg(FAMILY, u.cmd, u.req_id, &r);
	FKV_ASSERT(ans != NULL);
	FKV_ASSERT_EQ(parse(ans, tb)->cmd, FLUXONKV_CMD_PUT_START);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_REQ_ID]), 5);
	FKV_ASSERT_EQ(nla_get_s32(tb[FLUXONKV_A_STATUS]), 0);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_PUT_ID]), 1);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_FLAGS]), 0);
	nlmsg_free(ans);
	nlmsg_free(msg);
	fkv_master_destroy(m);
}

/* ---- SSD tier messages ---- */

FKV_TEST(ssd_commit_and_ssd_state_decode)
{
	struct nl_msg *msg = upcall(FLUXONKV_CMD_SSD_COMMIT);
	struct fkv_upcall u;

	put_u64(msg, FLUXONKV_A_REQ_ID, 12);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 2, "kk"), 0);
	put_u64(msg, FLUXONKV_A_PUT_ID, 3);
	put_u64(msg, FLUXONKV_A_LEN, 5000);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.cmd, FLUXONKV_CMD_SSD_COMMIT);
	FKV_ASSERT_EQ(u.present, A(REQ_ID) | A(KEY) | A(PUT_ID) | A(LEN));
	FKV_ASSERT_EQ(u.req_id, 12);
	FKV_ASSERT_EQ(u.put_id, 3);
	FKV_ASSERT_EQ(u.len, 5000);
	FKV_ASSERT(fkv_upcall_wants_reply(u.cmd));
	nlmsg_free(msg);

	/* SSD_STATE: a notification without REQ_ID. */
	msg = upcall(FLUXONKV_CMD_SSD_STATE);
	put_u64(msg, FLUXONKV_A_SSD_CAPACITY, 1ULL << 34);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.present, A(SSD_CAPACITY));
	FKV_ASSERT_EQ(u.ssd_capacity, 1ULL << 34);
	FKV_ASSERT(!fkv_upcall_wants_reply(u.cmd));
	nlmsg_free(msg);

	/* A capacity that is not a u64 makes the message malformed. */
	msg = upcall(FLUXONKV_CMD_SSD_STATE);
	FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_SSD_CAPACITY, 1), 0);
	FKV_ASSERT_EQ(decode(msg, &u), -EINVAL);
	nlmsg_free(msg);
}

FKV_TEST(a_failed_ssd_commit_decodes_its_errno_and_is_answered_without_flags)
{
	static const struct fkv_master_ops ops = { .send_drop = no_drop };
	struct fkv_master_config cfg = {
		.capacity = 1 << 20, .incarnation = 5, .ssd_capacity = 1 << 20,
	};
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	const struct fkv_replica *rep;
	struct fkv_master_stats st;
	struct nl_msg *msg, *ans;
	struct fkv_master *m;
	struct fkv_upcall u;
	struct fkv_reply r;
	uint64_t id;
	uint32_t flags;

	fkv_log_setup(FKV_LOG_ERR, false);
	m = fkv_master_create(&cfg, &ops, NULL);
	FKV_ASSERT(m != NULL);
	FKV_ASSERT_EQ(fkv_master_put_start(m, "kk", 2, 5000, &id, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PERSIST);
	FKV_ASSERT_EQ(fkv_master_put_done(m, "kk", 2, id, 0x77, 5000, &flags),
		      0);

	msg = upcall(FLUXONKV_CMD_SSD_COMMIT);
	put_u64(msg, FLUXONKV_A_REQ_ID, 13);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 2, "kk"), 0);
	put_u64(msg, FLUXONKV_A_PUT_ID, id);
	put_u64(msg, FLUXONKV_A_LEN, 5000);
	FKV_ASSERT_EQ(nla_put_s32(msg, FLUXONKV_A_ERRNO, -EIO), 0);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.present, A(REQ_ID) | A(KEY) | A(PUT_ID) | A(LEN) |
				 A(ERRNO));
	FKV_ASSERT_EQ(u.error, -EIO);
	FKV_ASSERT(fkv_dispatch(m, &u, &r));
	ans = fkv_nl_reply_msg(FAMILY, u.cmd, u.req_id, &r);
	FKV_ASSERT(ans != NULL);
	FKV_ASSERT_EQ(parse(ans, tb)->cmd, FLUXONKV_CMD_SSD_COMMIT);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_REQ_ID]), 13);
	FKV_ASSERT_EQ(nla_get_s32(tb[FLUXONKV_A_STATUS]), 0);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_FLAGS]), 0);
	nlmsg_free(ans);
	nlmsg_free(msg);
	/* The replica is evictable now, with no SSD copy. */
	rep = fkv_routes_local(fkv_master_routes(m),
			       fkv_routes_lookup(fkv_master_routes(m),
						 "kk", 2));
	FKV_ASSERT(!rep->persisting);
	FKV_ASSERT(!rep->ssd);
	fkv_master_get_stats(m, &st);
	FKV_ASSERT_EQ(st.persist_failures, 1);
	FKV_ASSERT_EQ(st.policy_objects, 1);

	/* An ERRNO that is not an s32 makes the message malformed. */
	msg = upcall(FLUXONKV_CMD_SSD_COMMIT);
	put_u64(msg, FLUXONKV_A_REQ_ID, 14);
	FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, 2, "kk"), 0);
	put_u64(msg, FLUXONKV_A_PUT_ID, id);
	put_u64(msg, FLUXONKV_A_ERRNO, 5);
	FKV_ASSERT_EQ(decode(msg, &u), -EINVAL);
	FKV_ASSERT_EQ(u.present, A(REQ_ID));
	FKV_ASSERT_EQ(u.req_id, 14);
	nlmsg_free(msg);
	fkv_master_destroy(m);
}

/* One SSD_EVICTED ENTRY nest, as the kernel builds it. */
static void put_entry(struct nl_msg *msg, const void *key, int key_len,
		      uint64_t put_id)
{
	struct nlattr *n = nla_nest_start(msg, FLUXONKV_A_ENTRY);

	FKV_ASSERT(n != NULL);
	if (key)
		FKV_ASSERT_EQ(nla_put(msg, FLUXONKV_A_KEY, key_len, key), 0);
	put_u64(msg, FLUXONKV_A_PUT_ID, put_id);
	FKV_ASSERT_EQ(nla_nest_end(msg, n), 0);
}

FKV_TEST(an_ssd_evicted_message_applies_every_well_formed_entry)
{
	static const struct fkv_master_ops ops = { .send_drop = no_drop };
	struct fkv_master_config cfg = {
		.capacity = 1 << 20, .incarnation = 5, .ssd_capacity = 1 << 20,
	};
	uint8_t longkey[FLUXONKV_KEY_MAX + 1];
	struct nl_msg *msg = upcall(FLUXONKV_CMD_SSD_EVICTED);
	const struct fkv_routes *t;
	uint64_t ids[3], id;
	struct fkv_master *m;
	struct fkv_upcall u;
	struct fkv_reply r;
	uint32_t flags;
	int i;

	fkv_log_setup(FKV_LOG_ERR, false);
	m = fkv_master_create(&cfg, &ops, NULL);
	FKV_ASSERT(m != NULL);
	t = fkv_master_routes(m);
	for (i = 0; i < 3; i++) {
		char key[2] = { (char)('a' + i), 0 };

		FKV_ASSERT_EQ(fkv_master_put_start(m, key, 1, 100, &id,
						   &flags), 0);
		FKV_ASSERT_EQ(fkv_master_put_done(m, key, 1, id, 0x10 + i, 100,
						  &flags), 0);
		FKV_ASSERT_EQ(fkv_master_ssd_commit(m, key, 1, id, 100,
						    &flags), 0);
		FKV_ASSERT_EQ(flags, FLUXONKV_SSD_F_PUBLISHED);
		ids[i] = id;
	}
	memset(longkey, 'b', sizeof(longkey));
	put_entry(msg, "a", 1, ids[0]);
	put_entry(msg, longkey, sizeof(longkey), ids[1]); /* key too long */
	put_entry(msg, NULL, 0, ids[1]);			/* no key */
	put_entry(msg, "c", 1, ids[2]);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.present, A(ENTRY));
	FKV_ASSERT(!fkv_dispatch(m, &u, &r));
	FKV_ASSERT(!fkv_routes_lookup(t, "a", 1)->replicas[0].ssd);
	FKV_ASSERT(fkv_routes_lookup(t, "b", 1)->replicas[0].ssd);
	FKV_ASSERT(!fkv_routes_lookup(t, "c", 1)->replicas[0].ssd);
	/* Their memory replicas are untouched. */
	FKV_ASSERT_EQ(fkv_routes_lookup(t, "a", 1)->replicas[0].mem_handle,
		      0x10);
	FKV_ASSERT_EQ(fkv_routes_ssd_count(t), 1);
	nlmsg_free(msg);

	/* No entry at all: nothing to do, nothing answered. */
	msg = upcall(FLUXONKV_CMD_SSD_EVICTED);
	FKV_ASSERT_EQ(decode(msg, &u), 0);
	FKV_ASSERT_EQ(u.present, 0);
	FKV_ASSERT(!fkv_dispatch(m, &u, &r));
	FKV_ASSERT_EQ(fkv_routes_ssd_count(t), 1);
	nlmsg_free(msg);
	fkv_master_destroy(m);
}

FKV_TEST(ssd_answers_carry_only_what_the_module_policies_accept)
{
	struct fkv_reply r = {
		.status = 0, .present = A(SOURCE) | A(PUT_ID) | A(LEN),
		.source = FLUXONKV_SOURCE_SSD, .put_id = 4, .len = 777,
	};
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct nl_msg *msg;
	int a;

	/* GET_START from SSD: no HANDLE. */
	msg = fkv_nl_reply_msg(FAMILY, FLUXONKV_CMD_GET_START, 3, &r);
	FKV_ASSERT(msg != NULL);
	parse(msg, tb);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_SOURCE]), FLUXONKV_SOURCE_SSD);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_PUT_ID]), 4);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_LEN]), 777);
	FKV_ASSERT(tb[FLUXONKV_A_HANDLE] == NULL);
	nlmsg_free(msg);

	/* SSD_COMMIT: STATUS 0 and FLAGS. */
	memset(&r, 0, sizeof(r));
	r.present = A(FLAGS);
	r.flags = FLUXONKV_SSD_F_PUBLISHED;
	msg = fkv_nl_reply_msg(FAMILY, FLUXONKV_CMD_SSD_COMMIT, 4, &r);
	FKV_ASSERT(msg != NULL);
	FKV_ASSERT_EQ(parse(msg, tb)->cmd, FLUXONKV_CMD_SSD_COMMIT);
	FKV_ASSERT_EQ(nla_get_u64(tb[FLUXONKV_A_REQ_ID]), 4);
	FKV_ASSERT_EQ(nla_get_s32(tb[FLUXONKV_A_STATUS]), 0);
	FKV_ASSERT_EQ(nla_get_u32(tb[FLUXONKV_A_FLAGS]),
		      FLUXONKV_SSD_F_PUBLISHED);
	nlmsg_free(msg);

	/* GET_REVOKE: REQ_ID and STATUS, nothing else. */
	memset(&r, 0, sizeof(r));
	msg = fkv_nl_reply_msg(FAMILY, FLUXONKV_CMD_GET_REVOKE, 5, &r);
	FKV_ASSERT(msg != NULL);
	parse(msg, tb);
	FKV_ASSERT(tb[FLUXONKV_A_REQ_ID] && tb[FLUXONKV_A_STATUS]);
	for (a = 0; a <= FLUXONKV_A_MAX; a++)
		if (a != FLUXONKV_A_REQ_ID && a != FLUXONKV_A_STATUS)
			FKV_ASSERT(tb[a] == NULL);
	nlmsg_free(msg);
}

FKV_TEST(libnl_errors_map_to_errno)
{
	FKV_ASSERT_EQ(fkv_nlerr_to_errno(-NLE_OBJ_NOTFOUND), ENOENT);
	FKV_ASSERT_EQ(fkv_nlerr_to_errno(NLE_BUSY), EBUSY);
	FKV_ASSERT_EQ(fkv_nlerr_to_errno(-NLE_PERM), EPERM);
	FKV_ASSERT_EQ(fkv_nlerr_to_errno(-NLE_NOMEM), ENOMEM);
	FKV_ASSERT_EQ(fkv_nlerr_to_errno(-NLE_FAILURE), EIO);
}
