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
#include "../../userspace/fluxond/ctlsock.h"
#include "../../userspace/common/tenant.h"
#include "fluxonkv_config.h"
#include "../../userspace/common/wire.h"
#include "../../userspace/fluxond/route.h"
#include "../../userspace/fluxonctl/ctl_cluster.h"
#include "prom_expo.h"
#include <netlink/msg.h>
#include <netlink/attr.h>
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
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, "^sess1/", &n), 0);
	FKV_ASSERT_EQ(n, 2);
	FKV_ASSERT_EQ(F.ndrops, 2);
	FKV_ASSERT(!present(S("sess1/a")) && !present(S("sess1/b")));
	FKV_ASSERT(present(S("sess2/a")));
	/* anywhere in the key, ERE syntax */
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, "tp_rank:[1-9]", &n), 0);
	FKV_ASSERT_EQ(n, 1);
	FKV_ASSERT(present(S(keys[0])) && !present(S(keys[1])));
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, "no such key", &n), 0);
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
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, "a", &n), 0);
	FKV_ASSERT_EQ(n, 0);
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, NULL, &n), 0);
	FKV_ASSERT_EQ(n, 5001);
	FKV_ASSERT_EQ(F.ndrops, 5001);
	fkv_master_get_stats(F.m, &st);
	FKV_ASSERT_EQ(st.routes, 0);
	FKV_ASSERT_EQ(st.used, 0);
	FKV_ASSERT_EQ(st.deletes, 5001);
	FKV_ASSERT(!present(nul_key, sizeof(nul_key)));
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, NULL, &n), 0);
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
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, "(", &n), -EINVAL);
	FKV_ASSERT_EQ(n, 0);
	FKV_ASSERT(present(S("x")));
	FKV_ASSERT_EQ(F.ndrops, 0);
	fkv_master_destroy(F.m);
}

/* @key in tenant @tenant's key space: the internal key (@buf). */
static size_t tkey(uint8_t *buf, uint32_t tenant, const char *key)
{
	size_t n = strlen(key);

	if (!tenant) {
		memcpy(buf, key, n);
		return n;
	}
	fkv_tenant_prefix(buf, tenant);
	memcpy(buf + FLUXONKV_TENANT_PREFIX_LEN, key, n);
	return FLUXONKV_TENANT_PREFIX_LEN + n;
}

static void tput(uint32_t tenant, const char *key)
{
	uint8_t b[FLUXONKV_KEY_MAX];

	put(b, tkey(b, tenant, key));
}

static bool tpresent(uint32_t tenant, const char *key)
{
	uint8_t b[FLUXONKV_KEY_MAX];

	return present(b, tkey(b, tenant, key));
}

FKV_TEST(a_tenants_clear_removes_only_its_keys_the_regex_seeing_them_unprefixed)
{
	static const char *keys[] = { "sess1/a", "sess1/b", "sess2/a" };
	static const uint32_t tenants[] = { 0, 1, 2, 0x010203 };
	uint8_t b[64];
	uint64_t n = 99;
	size_t i, j;

	mk();
	for (i = 0; i < 4; i++)
		for (j = 0; j < 3; j++)
			tput(tenants[i], keys[j]);
	/* the prefix parses back to the tenant */
	FKV_ASSERT_EQ(fkv_key_tenant(b, tkey(b, 0x010203, "k"), &j), 0x010203);
	FKV_ASSERT_EQ(j, FLUXONKV_TENANT_PREFIX_LEN);
	FKV_ASSERT_EQ(fkv_key_tenant("sess1/a", 7, &j), 0);
	FKV_ASSERT_EQ(j, 0);
	/* too short for a prefix and a byte: tenant 0's */
	FKV_ASSERT_EQ(fkv_key_tenant("\0T\0\0\0\1", 6, NULL), 0);

	/* "^sess1/" anchors at the tenant's own key, after the prefix */
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 1, "^sess1/", &n), 0);
	FKV_ASSERT_EQ(n, 2);
	FKV_ASSERT(!tpresent(1, "sess1/a") && !tpresent(1, "sess1/b"));
	FKV_ASSERT(tpresent(1, "sess2/a"));
	for (i = 0; i < 4; i++)
		if (tenants[i] != 1)
			FKV_ASSERT(tpresent(tenants[i], "sess1/a") &&
				   tpresent(tenants[i], "sess1/b"));
	/* everything of tenant 2, nothing of the others */
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 2, NULL, &n), 0);
	FKV_ASSERT_EQ(n, 3);
	FKV_ASSERT(!tpresent(2, "sess2/a"));
	FKV_ASSERT(tpresent(0, "sess2/a") && tpresent(1, "sess2/a") &&
		   tpresent(0x010203, "sess2/a"));
	/* tenant 0: only the keys without a prefix */
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, NULL, &n), 0);
	FKV_ASSERT_EQ(n, 3);
	FKV_ASSERT(!tpresent(0, "sess1/a") && !tpresent(0, "sess2/a"));
	FKV_ASSERT(tpresent(1, "sess2/a") && tpresent(0x010203, "sess1/a"));
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 0, NULL, &n), 0);
	FKV_ASSERT_EQ(n, 0);
	FKV_ASSERT_EQ(F.ndrops, 8);
	fkv_master_destroy(F.m);
}

FKV_TEST(who_may_clear_a_tenant_root_its_uids_and_its_gids)
{
	uint32_t uids[] = { 1001 }, gids[] = { 500, 600 };
	struct fkv_tenant_config t[] = {
		{ .name = (char *)"a", .id = 1, .uids = uids, .nuids = 1,
		  .gids = gids, .ngids = 2 },
		{ .name = (char *)"b", .id = 2 },
	};
	uint32_t groups[] = { 10, 600 };

	/* tenant 0: whoever reached the socket */
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 0, 4000, 4000, NULL, 0), 0);
	/* root: every tenant, even one no longer configured */
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 2, 0, 0, NULL, 0), 0);
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 77, 0, 0, NULL, 0), 0);
	/* a listed uid, a listed primary gid, a listed supplementary group */
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 1, 1001, 4000, NULL, 0), 0);
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 1, 4000, 500, NULL, 0), 0);
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 1, 4000, 4000, groups, 2), 0);
	/* anyone else, and the other tenant for them */
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 1, 4000, 4000, groups, 1),
		      -EPERM);
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 2, 1001, 500, groups, 2),
		      -EPERM);
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, 77, 1001, 500, NULL, 0),
		      -ENOENT);
	FKV_ASSERT_EQ(fkv_ctl_tenant_permitted(t, 2, FLUXONKV_TENANT_ID_MAX + 1,
					       0, 0, NULL, 0), -EINVAL);
}

static bool tget(uint32_t tenant, const char *key, struct fkv_get_result *g)
{
	uint8_t b[FLUXONKV_KEY_MAX];

	return fkv_master_get_start(F.m, b, tkey(b, tenant, key), g) == 0;
}

/* Puts and gets of tenants 0, 1 and 9 (9: in keys, not configured). */
static void tenant_traffic(void)
{
	struct fkv_get_result g;

	tput(0, "a");
	tput(0, "b");
	tput(1, "a");
	tput(9, "z");
	tput(9, "z");	/* a second version: one key, two puts */
	FKV_ASSERT(tget(1, "a", &g) && g.source == FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT(!tget(1, "b", &g));
	FKV_ASSERT(!tget(1, "z", &g));	/* tenant 9's key, not 1's */
	FKV_ASSERT(tget(0, "a", &g));
}

FKV_TEST(the_master_counts_and_measures_per_tenant_and_they_add_up)
{
	struct fkv_tenant_stats *v;
	struct fkv_master_stats st;
	uint64_t dram = 0, keys = 0, puts = 0, gets = 0;
	size_t n, i;

	mk();
	tenant_traffic();
	FKV_ASSERT_EQ(fkv_master_tenant_stats(F.m, &v, &n), 0);
	FKV_ASSERT_EQ(n, 3);
	FKV_ASSERT_EQ(v[0].tenant, 0);
	FKV_ASSERT_EQ(v[1].tenant, 1);
	FKV_ASSERT_EQ(v[2].tenant, 9);
	FKV_ASSERT_EQ(v[0].puts, 2);
	FKV_ASSERT_EQ(v[0].keys, 2);
	FKV_ASSERT_EQ(v[0].gets, 1);
	FKV_ASSERT_EQ(v[0].mem_hits, 1);
	FKV_ASSERT_EQ(v[0].dram_bytes, 2 * fkv_weight(U));
	FKV_ASSERT_EQ(v[1].puts, 1);
	FKV_ASSERT_EQ(v[1].gets, 3);
	FKV_ASSERT_EQ(v[1].mem_hits, 1);
	FKV_ASSERT_EQ(v[1].misses, 2);
	FKV_ASSERT_EQ(v[1].ssd_hits + v[1].remote_hits, 0);
	FKV_ASSERT_EQ(v[1].keys, 1);
	FKV_ASSERT_EQ(v[2].puts, 2);
	FKV_ASSERT_EQ(v[2].keys, 1);
	FKV_ASSERT_EQ(v[2].dram_bytes, fkv_weight(U));
	fkv_master_get_stats(F.m, &st);
	for (i = 0; i < n; i++) {
		dram += v[i].dram_bytes;
		keys += v[i].keys;
		puts += v[i].puts;
		gets += v[i].gets;
		FKV_ASSERT_EQ(v[i].gets, v[i].mem_hits + v[i].ssd_hits +
			      v[i].remote_hits + v[i].misses);
	}
	/* the totals the master keeps anyway */
	FKV_ASSERT_EQ(dram, st.used);
	FKV_ASSERT_EQ(keys, st.routes);
	FKV_ASSERT_EQ(puts, st.puts);
	FKV_ASSERT_EQ(gets, st.gets);
	free(v);
	/* a cleared tenant keeps its counters, loses its keys and bytes */
	FKV_ASSERT_EQ(fkv_master_remove_matching(F.m, 9, NULL, &keys), 0);
	FKV_ASSERT_EQ(fkv_master_tenant_stats(F.m, &v, &n), 0);
	FKV_ASSERT_EQ(n, 3);
	FKV_ASSERT_EQ(v[2].puts, 2);
	FKV_ASSERT_EQ(v[2].keys + v[2].dram_bytes, 0);
	free(v);
	fkv_master_destroy(F.m);
}

FKV_TEST(stats_carry_a_nest_per_tenant_that_fluxonctl_renders)
{
	static struct ctl_cluster cl;
	struct fkv_tenant_config t = {
		.name = (char *)"sglang", .id = 1, .dram_bytes = 1 << 20,
	};
	const struct ctl_ctenant *ct;
	struct prom_expo_result r;
	char *out = NULL;
	size_t len = 0;
	struct nl_msg *msg;
	FILE *f;

	mk();
	tenant_traffic();
	msg = fkv_wire_msg_stats(FKV_CCMD_STATS);
	FKV_ASSERT(msg != NULL);
	FKV_ASSERT_EQ(nla_put_string(msg, FKV_CA_ROLE, "single"), 0);
	FKV_ASSERT_EQ(fkv_ctl_put_tenants(msg, F.m, &t, 1), 0);
	FKV_ASSERT_EQ(ctl_cluster_decode(nlmsg_hdr(msg), &cl), 0);
	nlmsg_free(msg);
	fkv_master_destroy(F.m);

	FKV_ASSERT_EQ(cl.ntenants, 3);
	FKV_ASSERT(!strcmp(cl.tenants[0].name, "default"));
	FKV_ASSERT(!strcmp(cl.tenants[1].name, "sglang"));
	FKV_ASSERT(!strcmp(cl.tenants[2].name, "tenant-9"));
	FKV_ASSERT_EQ(cl.tenants[2].id, 9);
	ct = ctl_cluster_tenant(&cl, "sglang");
	FKV_ASSERT(ct == &cl.tenants[1]);
	FKV_ASSERT_EQ(ctl_cluster_stat(ct->st, ct->nst, "misses")->value, 2);
	FKV_ASSERT_EQ(ctl_cluster_stat(ct->st, ct->nst,
				       "dram_quota_bytes")->value, 1 << 20);
	FKV_ASSERT(ctl_cluster_stat(cl.tenants[0].st, cl.tenants[0].nst,
				    "dram_quota_bytes") == NULL);
	FKV_ASSERT(ctl_cluster_tenant(&cl, "nope") == NULL);

	f = open_memstream(&out, &len);
	ctl_render_tenants_human(f, &cl, NULL);
	fclose(f);
	FKV_ASSERT(strstr(out, "TENANT ") == out, "%s", out);
	FKV_ASSERT(strstr(out, "\nsglang ") && strstr(out, "\ndefault ") &&
		   strstr(out, "\ntenant-9 "), "%s", out);
	FKV_ASSERT(strstr(out, "1.0 MiB"), "%s", out);	/* the quota */
	FKV_ASSERT(strstr(out, " Q_EVICTED Q_SSD_DROP\n"), "%s", out);
	free(out);

	out = NULL;
	f = open_memstream(&out, &len);
	ctl_render_tenants_json(f, &cl, "sglang");
	fclose(f);
	FKV_ASSERT(strstr(out, "\"name\":\"sglang\"") &&
		   strstr(out, "\"misses\":2") &&
		   strstr(out, "\"ssd_quota_bytes\":null") &&
		   strstr(out, "\"quota_evictions\":0") &&
		   strstr(out, "\"quota_ssd_drops\":0") &&
		   !strstr(out, "default"), "%s", out);
	free(out);

	out = NULL;
	f = open_memstream(&out, &len);
	ctl_render_tenants_prometheus(f, &cl, NULL);
	fclose(f);
	FKV_ASSERT(strstr(out, "fluxonkv_tenant_puts_total{tenant=\"tenant-9\",id=\"9\"} 2\n") &&
		   strstr(out, "fluxonkv_tenant_misses_total{tenant=\"sglang\",id=\"1\"} 2\n") &&
		   strstr(out, "fluxonkv_tenant_dram_quota_bytes{tenant=\"sglang\",id=\"1\"} 1048576\n") &&
		   strstr(out, "# TYPE fluxonkv_tenant_keys gauge\n"), "%s", out);
	FKV_ASSERT(strstr(out, "fluxonkv_tenant_quota_evictions_total{tenant=\"sglang\",id=\"1\"} 0\n") &&
		   strstr(out, "# TYPE fluxonkv_tenant_quota_ssd_drops_total counter\n"), "%s", out);
	r = prom_expo_check(out);
	FKV_ASSERT_EQ(r.samples, 3 * 11 + 1);
	free(out);
}

/*
 * The Python client speaks CLEAR and TENANT on the control socket with
 * numbers of its own (_control.py): they must be the headers', which grow
 * as commands and attributes are added.
 */
FKV_TEST(the_python_control_client_uses_the_headers_numbers)
{
	const char *p = "userspace/python/fluxonkv/_control.py";

	FKV_ASSERT_EQ(py_const(p, "_WIRE_TYPE"), FKV_WIRE_TYPE);
	FKV_ASSERT_EQ(py_const(p, "_CCMD_CLEAR"), FKV_CCMD_CLEAR);
	FKV_ASSERT_EQ(py_const(p, "_CA_MESSAGE"), FKV_CA_MESSAGE);
	FKV_ASSERT_EQ(py_const(p, "_CA_PATTERN"), FKV_CA_PATTERN);
	FKV_ASSERT_EQ(py_const(p, "_CA_COUNT"), FKV_CA_COUNT);
	FKV_ASSERT_EQ(py_const(p, "_A_STATUS"), FLUXONKV_A_STATUS);
	FKV_ASSERT_EQ(py_const(p, "_GENL_VERSION"), FLUXONKV_GENL_VERSION);
	FKV_ASSERT_EQ(py_const(p, "_CCMD_TENANT"), FKV_CCMD_TENANT);
	FKV_ASSERT_EQ(py_const(p, "_CA_TENANT_NAME"), FKV_CA_TENANT_NAME);
	FKV_ASSERT_EQ(py_const(p, "_CA_TENANT_ID"), FKV_CA_TENANT_ID);
	FKV_ASSERT_EQ(py_const(p, "TENANT_ID_MAX"), FLUXONKV_TENANT_ID_MAX);
	FKV_ASSERT_EQ(py_const(p, "_TENANT_NAME_MAX"), FKV_TENANT_NAME_MAX);
}
