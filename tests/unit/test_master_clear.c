// SPDX-License-Identifier: GPL-2.0
/*
 * test_master_clear.c - fkv_master_remove_matching (master_clear.c), the
 * master side of Mooncake's remove_all / remove_by_regex: every key or the
 * keys a POSIX extended regular expression matches are deleted as a
 * client's DELETE is (their replicas dropped), others untouched.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/log.h"
#include "../../userspace/common/cluster_msg.h"
#include "../../userspace/fluxond/master.h"
#include "master_fx.h"
#include "py_const.h"

static const uint8_t secret[16] = "master-secret-16";

static void mk(void)
{
	struct fkv_master_config cfg = {
		.capacity = 100000 * U, .incarnation = INC, .now_ms = fx_clock,
		.clock_arg = &F, .hash_secret = secret,
	};

	fkv_log_setup(FKV_LOG_ERR, false);
	memset(&F, 0, sizeof(F));
	F.now = 5000;
	F.next_handle = 0x1000;
	F.m = fkv_master_create(&cfg, &rec_ops, &F);
	FKV_ASSERT(F.m != NULL);
}

static void put(const void *key, size_t key_len)
{
	uint64_t id = 0, h = F.next_handle++;
	uint32_t flags = 0;

	FKV_ASSERT_EQ(fkv_master_put_start(F.m, key, key_len, U, &id, &flags), 0);
	FKV_ASSERT_EQ(fkv_master_put_done(F.m, key, key_len, id, h, U, &flags), 0);
	FKV_ASSERT_EQ(flags, FLUXONKV_PUT_F_PUBLISHED);
}

static bool present(const void *key, size_t key_len)
{
	struct fkv_get_result g;

	return fkv_master_get_start(F.m, key, key_len, &g) == 0;
}

#define S(s)	(s), strlen(s)

FKV_TEST(remove_matching_deletes_only_the_keys_the_pattern_finds)
{
	static const char *keys[] = {
		"model@tp_rank:0@pcp0@dcp0@pp_rank:0@aa",
		"model@tp_rank:1@pcp0@dcp0@pp_rank:0@aa",
		"sglang_ds-v3_0001__k", "sess1/a", "sess1/b", "sess2/a",
	};
	uint64_t n = 99;
	size_t i;

	mk();
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		put(S(keys[i]));
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, "^sess1/", &n), 0);
	FKV_ASSERT_EQ(n, 2);
	FKV_ASSERT_EQ(F.ndrops, 2);
	FKV_ASSERT(!present(S("sess1/a")) && !present(S("sess1/b")));
	FKV_ASSERT(present(S("sess2/a")));
	/* anywhere in the key, ERE syntax */
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, "tp_rank:[1-9]", &n), 0);
	FKV_ASSERT_EQ(n, 1);
	FKV_ASSERT(present(S(keys[0])) && !present(S(keys[1])));
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, "no such key", &n), 0);
	FKV_ASSERT_EQ(n, 0);
	FKV_ASSERT_EQ(F.ndrops, 3);
	fkv_master_destroy(F.m);
}

FKV_TEST(remove_matching_without_a_pattern_clears_every_key)
{
	char key[64];
	const char nul_key[] = { 'a', '\0', 'b' };
	struct fkv_master_stats st;
	uint64_t n = 0;
	int i;

	mk();
	/* enough keys to grow the table (a walk across both bucket arrays) */
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "k/%d", i);
		put(S(key));
	}
	put(nul_key, sizeof(nul_key));
	/* a regex never matches a key with a NUL byte; the clear does */
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, "a", &n), 0);
	FKV_ASSERT_EQ(n, 0);
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, NULL, &n), 0);
	FKV_ASSERT_EQ(n, 5001);
	FKV_ASSERT_EQ(F.ndrops, 5001);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.routes, 0);
	FKV_ASSERT_EQ(st.used, 0);
	FKV_ASSERT_EQ(st.deletes, 5001);
	FKV_ASSERT(!present(nul_key, sizeof(nul_key)));
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, NULL, &n), 0);
	FKV_ASSERT_EQ(n, 0);
	/* keys put after a clear are kept by it no longer */
	put(S("again"));
	FKV_ASSERT(present(S("again")));
	fkv_master_destroy(F.m);
}

FKV_TEST(remove_matching_refuses_a_bad_pattern_and_removes_nothing)
{
	uint64_t n = 7;

	mk();
	put(S("x"));
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, "(", &n), -EINVAL);
	FKV_ASSERT_EQ(n, 0);
	FKV_ASSERT(present(S("x")));
	FKV_ASSERT_EQ(F.ndrops, 0);
	fkv_master_destroy(F.m);
}

/*
 * The Python client speaks CLEAR on the control socket with numbers of
 * its own (_control.py): they must be cluster_msg.h's, which grow as
 * commands and attributes are added.
 */
FKV_TEST(the_python_clear_client_uses_the_headers_numbers)
{
	const char *p = "userspace/python/fluxonkv/_control.py";

	FKV_ASSERT_EQ(py_const(p, "_WIRE_TYPE"), FKV_WIRE_TYPE);
	FKV_ASSERT_EQ(py_const(p, "_CCMD_CLEAR"), FKV_CCMD_CLEAR);
	FKV_ASSERT_EQ(py_const(p, "_CA_MESSAGE"), FKV_CA_MESSAGE);
	FKV_ASSERT_EQ(py_const(p, "_CA_PATTERN"), FKV_CA_PATTERN);
	FKV_ASSERT_EQ(py_const(p, "_CA_COUNT"), FKV_CA_COUNT);
	FKV_ASSERT_EQ(py_const(p, "_A_STATUS"), FLUXONKV_A_STATUS);
	FKV_ASSERT_EQ(py_const(p, "_GENL_VERSION"), FLUXONKV_GENL_VERSION);
}
