// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_config - libFuzzer (or AFL++ / replay) target for the configuration
 * parser in userspace/common/config.c.
 *
 * Each input is (1) a whole YAML document for fkv_config_parse_buffer() and
 * (2) its first line, as a string, for fkv_parse_size() and
 * fkv_parse_hostport().  Beyond the sanitizers it checks the library's
 * promises and abort()s when one breaks: a result is either valid (no
 * errors, every limit in [512, 2^63), names and paths as documented, a
 * cluster section with every field in range and defaults applied) or
 * -EINVAL with single-line messages; a parsed size equals an independent
 * 128-bit computation; fkv_ssd_split() gives 1..64 aligned shards that fit
 * the capacity; an accepted host:port is already in the one form
 * fkv_hostport_str() writes, and parses back to itself.
 *
 * The filesystem is touched only through cluster.secret_file, as the
 * parser always does: stat(), then for a regular file an O_RDONLY open and
 * a read of at most 1026 bytes (fkv_ssd_plan() stat()s paths: not fuzzed
 * here).
 *
 * Build and run: make fuzz FUZZ_TARGETS=config (tests/fuzz/run), or by hand:
 *
 *   mkdir -p build-fuzz/corpus
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *         -fno-sanitize-recover=undefined -D_GNU_SOURCE \
 *         -Iuapi -Iuserspace/include \
 *         tests/fuzz/fuzz_config.c userspace/common/config.c \
 *         userspace/common/ssd_plan.c -lyaml \
 *         -o build-fuzz/fuzz_config
 *   build-fuzz/fuzz_config -dict=tests/fuzz/config.dict \
 *         -max_total_time=60 build-fuzz/corpus tests/fuzz/corpus/config
 *
 * (New inputs go to the first directory, build-fuzz/corpus, not the tree.)
 * make unit replays the corpus without clang (build/unit/fuzz_config, as
 * TAP; with no argument it takes tests/fuzz/corpus/config), or by hand:
 *
 *   cc -g -fsanitize=address -DFKV_FUZZ_STANDALONE -D_GNU_SOURCE \
 *      -Iuapi -Iuserspace/include tests/fuzz/fuzz_config.c \
 *      userspace/common/config.c userspace/common/ssd_plan.c -lyaml \
 *      -o build-fuzz/replay_config
 *   build-fuzz/replay_config $(find tests/fuzz/corpus/config -type f)
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fluxonkv_config.h"
#include "fuzz_common.h"

static void check_line(const char *s)
{
	CHECK(s && *s && !strchr(s, '\n'));
}

static void check_name(const char *s)
{
	const char *p;

	CHECK(s && *s && strlen(s) <= FKV_NAME_MAX && *s != '.');
	for (p = s; *p; p++)
		CHECK(isalnum((unsigned char)*p) || strchr("._-", *p));
}

/*
 * The size grammar evaluated independently with 128-bit integers, for
 * fractions of at most 18 digits: -1 when it does not apply.
 */
static int oracle_size(const char *s, uint64_t *out)
{
	unsigned __int128 ip = 0, fp = 0, pow10 = 1, v;
	unsigned int shift;
	const char *p = s;
	int nfrac = 0;

	while (*p >= '0' && *p <= '9') {
		ip = ip * 10 + (*p++ - '0');
		if (ip >> 64)
			return -1;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, nfrac++) {
			if (nfrac == 18)
				return -1;
			fp = fp * 10 + (*p - '0');
			pow10 *= 10;
		}
	}
	while (*p == ' ')
		p++;
	if (!*p || !strcasecmp(p, "B"))
		shift = 0;
	else if (!strcasecmp(p, "KB") || !strcasecmp(p, "KiB"))
		shift = 10;
	else if (!strcasecmp(p, "MB") || !strcasecmp(p, "MiB"))
		shift = 20;
	else if (!strcasecmp(p, "GB") || !strcasecmp(p, "GiB"))
		shift = 30;
	else if (!strcasecmp(p, "TB") || !strcasecmp(p, "TiB"))
		shift = 40;
	else
		return -1;
	v = (ip << shift) + (fp << shift) / pow10;
	*out = (uint64_t)v;
	return v >> 63 ? -1 : 0;
}

static void fuzz_size(const uint8_t *data, size_t size)
{
	char s[128], err[256];
	uint64_t v = 7, want;
	unsigned int n;
	uint64_t shard;
	size_t len = 0;
	int ret;

	while (len < size && len < sizeof(s) - 1 && data[len] != '\n')
		len++;
	memcpy(s, data, len);
	s[len] = '\0';

	err[0] = '\0';
	ret = fkv_parse_size(s, &v, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL || ret == -ERANGE);
		CHECK(v == 7);
		check_line(err);
		return;
	}
	CHECK(v >= FKV_SIZE_MIN && v <= FKV_SIZE_MAX);
	CHECK(isdigit((unsigned char)s[0]));
	if (!oracle_size(s, &want))
		CHECK(v == want);

	ret = fkv_ssd_split(v, NULL, &n, &shard);
	if (ret) {
		CHECK(ret == -ENOSPC && v < FKV_SSD_SHARD_ALIGN);
		return;
	}
	CHECK(n >= 1 && n <= FKV_SSD_MAX_SHARDS);
	CHECK(shard && shard % FKV_SSD_SHARD_ALIGN == 0);
	CHECK(shard <= v / n && (uint64_t)n * shard <= v);
	CHECK(shard <= FKV_SSD_SHARD_MAX || n == FKV_SSD_MAX_SHARDS);
}

/*
 * A host:port: refused with the outputs untouched, or accepted as exactly
 * the text fkv_hostport_str() writes for the result.
 */
static void fuzz_hostport(const char *s)
{
	char buf[FKV_HOSTPORT_BUF], err[256], small[FKV_HOST_BUF];
	struct fkv_hostport hp = { .host = "untouched", .port = 7 };
	struct fkv_hostport again;
	unsigned char a6[16];
	size_t i, len;
	uint16_t p;
	int ret;

	err[0] = '\0';
	ret = fkv_parse_hostport(s, hp.host, sizeof(hp.host), &hp.port, err,
				 sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL);
		CHECK(!strcmp(hp.host, "untouched") && hp.port == 7);
		check_line(err);
		return;
	}
	len = strlen(hp.host);
	CHECK(hp.port >= 1 && len >= 1 && len <= FKV_HOST_MAX);
	for (i = 0; i < len; i++)
		CHECK(isalnum((unsigned char)hp.host[i]) ||
		      strchr(".-_:", hp.host[i]));
	if (strchr(hp.host, ':'))
		CHECK(inet_pton(AF_INET6, hp.host, a6) == 1);
	/* the accepted text is canonical: it is what we would write */
	CHECK(!strcmp(fkv_hostport_str(buf, sizeof(buf), &hp), s));
	CHECK(!fkv_parse_hostport(buf, again.host, sizeof(again.host),
				  &again.port, NULL, 0));
	CHECK(!strcmp(again.host, hp.host) && again.port == hp.port);
	/* a host buffer one byte short is refused, not overrun */
	CHECK(fkv_parse_hostport(s, small, len, &p, NULL, 0) == -EINVAL);
}

/* The promises of a valid configuration's cluster section. */
static void check_cluster(const struct fkv_cluster_config *cl)
{
	static const struct fkv_cluster_config zero;
	const struct fkv_hostport *hp[3] = {
		&cl->master, &cl->listen, &cl->advertise,
	};
	char buf[FKV_HOSTPORT_BUF];
	struct fkv_hostport again;
	size_t i;

	if (!cl->present) {
		CHECK(!memcmp(cl, &zero, sizeof(zero)));
		return;
	}
	check_name(cl->node_name);
	CHECK(cl->role == FKV_ROLE_NODE || cl->role == FKV_ROLE_MASTER);
	CHECK(cl->transport == FKV_TRANSPORT_TCP ||
	      cl->transport == FKV_TRANSPORT_RDMA ||
	      cl->transport == FKV_TRANSPORT_AUTO);
	for (i = 0; i < 3; i++) {
		CHECK(hp[i]->host[0] && hp[i]->port >= 1);
		fkv_hostport_str(buf, sizeof(buf), hp[i]);
		CHECK(!fkv_parse_hostport(buf, again.host, sizeof(again.host),
					  &again.port, NULL, 0));
		CHECK(!strcmp(again.host, hp[i]->host) &&
		      again.port == hp[i]->port);
	}
	CHECK(!fkv_host_is_wildcard(cl->master.host));
	CHECK(!fkv_host_is_wildcard(cl->advertise.host));
	if (cl->advertise_default)
		CHECK(!memcmp(&cl->advertise, &cl->listen,
			      sizeof(cl->listen)));
	CHECK(cl->secret && cl->secret_len >= FKV_SECRET_MIN &&
	      cl->secret_len <= FKV_SECRET_MAX &&
	      cl->secret[cl->secret_len] == '\0');
	if (cl->secret_source == FKV_SECRET_FILE)
		CHECK(cl->secret_file && cl->secret_file[0] == '/');
	else
		CHECK(cl->secret_source == FKV_SECRET_INLINE &&
		      !cl->secret_file &&
		      strlen((const char *)cl->secret) == cl->secret_len);
	CHECK(cl->heartbeat_ms >= FKV_HEARTBEAT_MS_MIN &&
	      cl->heartbeat_ms <= FKV_HEARTBEAT_MS_MAX);
	CHECK(cl->dead_after_ms > 2 * cl->heartbeat_ms &&
	      cl->dead_after_ms <= FKV_DEAD_AFTER_MS_MAX);
}

/* The promises of a valid configuration's tenants section. */
static void check_tenants(const struct fkv_config *c)
{
	size_t i, j;

	CHECK(c->ntenants <= FKV_TENANTS_MAX);
	CHECK(!c->ntenants == !c->tenants);
	for (i = 0; i < c->ntenants; i++) {
		const struct fkv_tenant_config *t = &c->tenants[i];

		CHECK(t->name && !fkv_tenant_name_problem(t->name));
		CHECK(t->id >= 1 && t->id <= FKV_TENANT_ID_MAX);
		CHECK(t->nuids <= FKV_TENANT_IDS_MAX &&
		      t->ngids <= FKV_TENANT_IDS_MAX);
		CHECK(!t->dram_bytes || t->dram_bytes >= FKV_SIZE_MIN);
		CHECK(!t->ssd_bytes || t->ssd_bytes >= FKV_SIZE_MIN);
		CHECK(fkv_tenant_by_name(c->tenants, c->ntenants, t->name) == t);
		CHECK(fkv_tenant_by_id(c->tenants, c->ntenants, t->id) == t);
		for (j = 0; j < t->nuids; j++)
			CHECK(t->uids[j] != UINT32_MAX);
	}
}

static void fuzz_yaml(const uint8_t *data, size_t size)
{
	struct fkv_config c;
	char err[4096], tiny[16];
	size_t i;
	int ret;

	ret = fkv_config_parse_buffer((const char *)data, size, "fuzz", &c,
				      err, sizeof(err));
	CHECK(ret == 0 || ret == -EINVAL || ret == -ENOMEM);
	for (i = 0; i < c.errors.n; i++)
		check_line(c.errors.v[i]);
	for (i = 0; i < c.warnings.n; i++)
		check_line(c.warnings.v[i]);
	if (ret == -EINVAL) {
		CHECK(c.errors.n > 0);
		/* @err starts with the first message (then '\n' ...) */
		i = strlen(c.errors.v[0]);
		CHECK(!strncmp(err, c.errors.v[0], i < 64 ? i : 64));
	}
	if (!ret) {
		CHECK(c.errors.n == 0);
		check_name(c.cluster_name);
		check_name(c.instance);
		CHECK(c.segment_mb <= FKV_SEGMENT_MB_MAX);
		for (i = 0; i < c.npaths; i++)
			CHECK(c.paths[i] && c.paths[i][0] == '/' &&
			      strlen(c.paths[i]) < 4096);
		if (c.ssd) {
			CHECK(c.npaths > 0 && c.limits);
			for (i = 0; i < c.npaths; i++)
				CHECK(c.limits[i] >= FKV_SIZE_MIN &&
				      c.limits[i] <= FKV_SIZE_MAX);
		}
		check_cluster(&c.cluster);
		check_tenants(&c);
	}
	fkv_config_free(&c);

	/* a too-small message buffer is truncated, never overrun */
	ret = fkv_config_parse_buffer((const char *)data, size, "fuzz", &c,
				      tiny, sizeof(tiny));
	CHECK(strlen(tiny) < sizeof(tiny));
	fkv_config_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[512];
	size_t len = 0;

	/* the first line, longer than any host:port may be */
	while (len < size && len < sizeof(line) - 1 && data[len] != '\n')
		len++;
	memcpy(line, data, len);
	line[len] = '\0';

	fuzz_size(data, size);
	fuzz_hostport(line);
	fuzz_yaml(data, size);
	return 0;
}

#ifdef FKV_FUZZ_STANDALONE
#include "fuzz_common.h"

/*
 * Replay the files named on the command line, or every file of
 * tests/fuzz/corpus/config (make unit): one TAP line each.
 */
int main(int argc, char **argv)
{
	return fuzz_replay_main(argc, argv, "tests/fuzz/corpus/config",
				LLVMFuzzerTestOneInput);
}
#endif
