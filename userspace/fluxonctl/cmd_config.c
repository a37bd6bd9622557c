// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl config check FILE: parse a configuration and plan its SSD tier
 * (stat()s the paths, creates nothing), then show the plan and the cluster
 * section, or every error.  The work is in common/config.c; this file only
 * parses arguments and renders.  The cluster secret is never shown: only
 * its length and where it came from.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "fluxonkv.h"
#include "fluxonkv_config.h"
#include "ctl_json.h"
#include "ctl.h"
#include "ctl_sysfs.h"
#include "../common/ssd_attach.h"

const char ctl_usage_config[] =
	"Usage: fluxonctl config check [--json] FILE\n"
	"\n"
	"Validate the YAML configuration FILE (its fluxonkv_spec section) and\n"
	"show the SSD tier it describes: for each large_file_paths entry its\n"
	"kind (directory or raw block device), device, limit, shards and cache\n"
	"root <path>/<cluster_name>_cluster_kv_ssd_storage/<instance>.  Paths\n"
	"on a device an earlier path already uses are dropped (with a warning).\n"
	"Nothing is created.  Every error found is listed.\n"
	"\n"
	"The cluster section, if any, is shown too: role, node name, master,\n"
	"listen and advertise addresses (checked, not resolved), transport,\n"
	"heartbeat and dead-after times, and the secret's length and source\n"
	"(never the secret; secret_file is read, and refused when group or\n"
	"others may access it).\n"
	"\n"
	"large_limit_size entries: bytes, or a size such as \"1.5GB\" with unit\n"
	"B, KB, MB, GB, TB (or KiB .. TiB; case-insensitive).  Units are\n"
	"binary (1 MB = 2^20 bytes), fractions are floored, at least 512.\n"
	"\n"
	"  -j, --json           one JSON object on stdout (also when invalid)\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 valid, 1 invalid or unreadable, 2 usage.\n"
	"\n"
	"Usage: fluxonctl config attach [--if-needed] FILE\n"
	"\n"
	"Make the SSD tier of FILE real and hand it to the module: create the\n"
	"cache roots, create+truncate and preallocate every shard file (old\n"
	"contents are never recovered), open them O_DIRECT and attach them\n"
	"(needs CAP_SYS_ADMIN).  Block devices are used raw.\n"
	"\n"
	"      --if-needed      do what fluxond does at start: nothing (exit 0)\n"
	"                       when FILE declares no SSD tier or the module\n"
	"                       already has one (fluxond.service runs this\n"
	"                       outside its sandbox before fluxond)\n"
	"\n"
	"Exit status: 0 attached (or, with --if-needed, nothing to do), 1 error,\n"
	"2 usage, 4 module not loaded.\n";

static __attribute__((format(printf, 2, 3)))
int ctl_config_usage(FILE *err, const char *fmt, ...)
{
	va_list ap;

	fputs("fluxonctl config: ", err);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fputs("\nTry 'fluxonctl config --help'.\n", err);
	return -EINVAL;
}

/* argv: "config" "check" [OPTIONS] FILE; FILE goes to o->input. */
int ctl_parse_config(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "if-needed", no_argument, NULL, 'n' },
		{ 0 }
	};
	int c;

	memset(o, 0, sizeof(*o));
	if (argc < 2)
		return ctl_config_usage(err, "missing sub-command (check)");
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		o->help = true;
		return 0;
	}
	if (strcmp(argv[1], "check") && strcmp(argv[1], "attach"))
		return ctl_config_usage(err, "unknown sub-command '%s' (check, attach)",
					argv[1]);
	o->what = argv[1];
	argc--;
	argv++;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'h':
			o->help = true;
			return 0;
		case 'n':
			if (strcmp(o->what, "attach"))
				return ctl_config_usage(err, "--if-needed is an option of config attach");
			o->if_needed = true;
			break;
		default:
			return ctl_config_usage(err, "unknown option '%s'",
						argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return ctl_config_usage(err, "missing FILE");
	o->input = argv[optind++];
	if (optind < argc)
		return ctl_config_usage(err, "unexpected argument '%s'",
					argv[optind]);
	return 0;
}

/* Where the secret came from: "inline" or "file PATH". */
static const char *ctl_secret_source(const struct fkv_cluster_config *cl)
{
	return cl->secret_source == FKV_SECRET_FILE ? "file" : "inline";
}

static void ctl_cluster_human(FILE *f, const struct fkv_cluster_config *cl)
{
	char hp[FKV_HOSTPORT_BUF];

	if (!cl->present) {
		fprintf(f, "  cluster       off (single node)\n");
		return;
	}
	fprintf(f, "  cluster       role %s, node name %s%s\n",
		fkv_cluster_role_name(cl->role), cl->node_name,
		cl->node_name_default ? " (instance)" : "");
	fprintf(f, "      master    %s\n",
		fkv_hostport_str(hp, sizeof(hp), &cl->master));
	fprintf(f, "      listen    %s\n",
		fkv_hostport_str(hp, sizeof(hp), &cl->listen));
	fprintf(f, "      advertise %s%s\n",
		fkv_hostport_str(hp, sizeof(hp), &cl->advertise),
		cl->advertise_default ? " (listen)" : "");
	fprintf(f, "      transport %s\n", fkv_transport_name(cl->transport));
	fprintf(f, "      heartbeat %u ms, lease %u ms, dead after %u ms\n",
		cl->heartbeat_ms, cl->lease_ms, cl->dead_after_ms);
	fprintf(f, "      state     %s\n", cl->state_dir);
	fprintf(f, "      secret    %zu bytes from %s%s%s\n", cl->secret_len,
		ctl_secret_source(cl), cl->secret_file ? " " : "",
		cl->secret_file ? cl->secret_file : "");
}

static void ctl_ids_human(FILE *f, const char *what, const uint32_t *v,
			  size_t n)
{
	size_t i;

	fprintf(f, "%s ", what);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%u", i ? "," : "", v[i]);
	if (!n)
		fputs("-", f);
}

/* tenants: one line each, in file order. */
static void ctl_tenants_human(FILE *f, const struct fkv_config *c)
{
	char b[64];
	size_t i;

	if (!c->ntenants) {
		fprintf(f, "  tenants       none (every key in the default tenant)\n");
		return;
	}
	fprintf(f, "  tenants       %zu\n", c->ntenants);
	for (i = 0; i < c->ntenants; i++) {
		const struct fkv_tenant_config *t = &c->tenants[i];

		fprintf(f, "    %s (id %u): ", t->name, t->id);
		ctl_ids_human(f, "uids", t->uids, t->nuids);
		ctl_ids_human(f, "; gids", t->gids, t->ngids);
		fprintf(f, "; dram quota %s", t->dram_bytes ?
			fkv_bytes(b, sizeof(b), t->dram_bytes) : "none");
		fprintf(f, "; ssd quota %s\n", t->ssd_bytes ?
			fkv_bytes(b, sizeof(b), t->ssd_bytes) : "none");
	}
}

static void ctl_ids_json(FILE *f, const char *key, const uint32_t *v,
			 size_t n)
{
	size_t i;

	fprintf(f, ",\"%s\":[", key);
	for (i = 0; i < n; i++)
		fprintf(f, "%s%u", i ? "," : "", v[i]);
	fputc(']', f);
}

static void ctl_tenants_json(FILE *f, const struct fkv_config *c)
{
	size_t i;

	fputs(",\"tenants\":[", f);
	for (i = 0; i < c->ntenants; i++) {
		const struct fkv_tenant_config *t = &c->tenants[i];

		fprintf(f, "%s{\"name\":", i ? "," : "");
		ctl_json_quote(f, t->name);
		fprintf(f, ",\"id\":%u", t->id);
		ctl_ids_json(f, "uids", t->uids, t->nuids);
		ctl_ids_json(f, "gids", t->gids, t->ngids);
		if (t->dram_bytes)
			fprintf(f, ",\"dram_bytes\":%llu",
				(unsigned long long)t->dram_bytes);
		else
			fputs(",\"dram_bytes\":null", f);
		if (t->ssd_bytes)
			fprintf(f, ",\"ssd_bytes\":%llu}",
				(unsigned long long)t->ssd_bytes);
		else
			fputs(",\"ssd_bytes\":null}", f);
	}
	fputc(']', f);
}

static void ctl_config_human(FILE *f, const char *file,
			     const struct fkv_config *c,
			     const struct fkv_ssd_plan *p)
{
	char b1[64], b2[64];
	size_t i;

	fprintf(f, "%s: valid\n", file);
	fprintf(f, "  cluster_name  %s\n", c->cluster_name);
	fprintf(f, "  instance      %s%s\n", c->instance,
		c->instance_default ? " (host name)" : "");
	if (c->segment_mb)
		fprintf(f, "  segment_mb    %u\n", c->segment_mb);
	else
		fprintf(f, "  segment_mb    module default\n");
	/* What fluxond applies where its command line is silent. */
	fprintf(f, "  policy        %s%s\n", c->policy ? c->policy : "s3fifo",
		c->policy ? "" : " (default)");
	fprintf(f, "  watermarks    %u%% / %u%%%s\n",
		c->high_pct ? c->high_pct : FKV_HIGH_WATERMARK_PCT,
		c->low_pct ? c->low_pct : FKV_LOW_WATERMARK_PCT,
		c->high_pct || c->low_pct ? "" : " (default)");
	fprintf(f, "  log_level     %s%s\n", c->log_level ? c->log_level : "info",
		c->log_level ? "" : " (default)");
	if (!c->ssd) {
		fprintf(f, "  ssd tier      off (large_limit_size not set)\n");
	} else {
		fprintf(f, "  ssd tier      %zu root%s, %u shard%s, %s\n",
			p->nroots, p->nroots == 1 ? "" : "s", p->nshards,
			p->nshards == 1 ? "" : "s",
			fkv_bytes(b1, sizeof(b1), p->capacity));
	}
	for (i = 0; i < p->nroots; i++) {
		const struct fkv_ssd_root *r = &p->roots[i];

		fprintf(f, "  [%u] %s\n", r->index, r->path);
		if (r->kind == FKV_SSD_BLOCKDEV) {
			fprintf(f, "      block device %u:%u of %s, used raw\n",
				major(r->dev), minor(r->dev),
				fkv_bytes(b1, sizeof(b1), r->avail));
		} else {
			fprintf(f, "      directory on device %u:%u, %s free\n",
				major(r->dev), minor(r->dev),
				fkv_bytes(b1, sizeof(b1), r->avail));
			fprintf(f, "      cache root %s/ (%s)\n", r->root,
				r->exists ? "exists" : "to be created");
		}
		fprintf(f, "      limit %s, capacity %s\n",
			fkv_bytes(b1, sizeof(b1), r->limit),
			fkv_bytes(b2, sizeof(b2), r->capacity));
		if (r->kind == FKV_SSD_BLOCKDEV) {
			fprintf(f, "      %u region%s x %s\n", r->nshards,
				r->nshards == 1 ? "" : "s",
				fkv_bytes(b1, sizeof(b1), r->shard_size));
			continue;
		}
		snprintf(b2, sizeof(b2), " .. " FKV_SSD_SHARD_FMT,
			 r->nshards - 1);
		fprintf(f, "      %u shard%s x %s: " FKV_SSD_SHARD_FMT "%s\n",
			r->nshards, r->nshards == 1 ? "" : "s",
			fkv_bytes(b1, sizeof(b1), r->shard_size), 0U,
			r->nshards > 1 ? b2 : "");
	}
	ctl_cluster_human(f, &c->cluster);
	ctl_tenants_human(f, c);
}

static void ctl_json_list(FILE *f, const char *key,
			  const struct fkv_msgs *a, const struct fkv_msgs *b)
{
	const struct fkv_msgs *m[2] = { a, b };
	bool first = true;
	size_t i, j;

	fprintf(f, ",\"%s\":[", key);
	for (j = 0; j < 2; j++) {
		for (i = 0; i < m[j]->n; i++) {
			if (!first)
				fputc(',', f);
			first = false;
			ctl_json_quote(f, m[j]->v[i]);
		}
	}
	fputc(']', f);
}

/* ,"cluster":null or ,"cluster":{...}: the section, secret by length. */
static void ctl_cluster_json(FILE *f, const struct fkv_cluster_config *cl)
{
	char hp[FKV_HOSTPORT_BUF];

	if (!cl->present) {
		fputs(",\"cluster\":null", f);
		return;
	}
	fputs(",\"cluster\":{\"node_name\":", f);
	ctl_json_quote(f, cl->node_name);
	fprintf(f, ",\"node_name_default\":%s,\"role\":\"%s\",\"master\":",
		cl->node_name_default ? "true" : "false",
		fkv_cluster_role_name(cl->role));
	ctl_json_quote(f, fkv_hostport_str(hp, sizeof(hp), &cl->master));
	fputs(",\"listen\":", f);
	ctl_json_quote(f, fkv_hostport_str(hp, sizeof(hp), &cl->listen));
	fputs(",\"advertise\":", f);
	ctl_json_quote(f, fkv_hostport_str(hp, sizeof(hp), &cl->advertise));
	fprintf(f, ",\"advertise_default\":%s,\"transport\":\"%s\","
		"\"heartbeat_ms\":%u,\"lease_ms\":%u,\"dead_after_ms\":%u,"
		"\"secret_bytes\":%zu,\"secret_source\":\"%s\","
		"\"secret_file\":",
		cl->advertise_default ? "true" : "false",
		fkv_transport_name(cl->transport), cl->heartbeat_ms,
		cl->lease_ms, cl->dead_after_ms, cl->secret_len,
		ctl_secret_source(cl));
	if (cl->secret_file)
		ctl_json_quote(f, cl->secret_file);
	else
		fputs("null", f);
	fputs(",\"state_dir\":", f);
	ctl_json_quote(f, cl->state_dir);
	fputc('}', f);
}

static void ctl_config_json(FILE *f, const char *file,
			    const struct fkv_config *c,
			    const struct fkv_ssd_plan *p, bool valid,
			    const struct fkv_msgs *errors)
{
	struct fkv_msgs none = { 0 };
	char dev[32];
	size_t i;

	fputs("{\"file\":", f);
	ctl_json_quote(f, file);
	fprintf(f, ",\"valid\":%s", valid ? "true" : "false");
	if (valid) {
		fputs(",\"cluster_name\":", f);
		ctl_json_quote(f, c->cluster_name);
		fputs(",\"instance\":", f);
		ctl_json_quote(f, c->instance);
		fprintf(f, ",\"instance_default\":%s",
			c->instance_default ? "true" : "false");
		if (c->segment_mb)
			fprintf(f, ",\"segment_mb\":%u", c->segment_mb);
		else
			fputs(",\"segment_mb\":null", f);
		fputs(",\"policy\":", f);
		ctl_json_quote(f, c->policy ? c->policy : "s3fifo");
		fprintf(f, ",\"high_watermark\":%u,\"low_watermark\":%u",
			c->high_pct ? c->high_pct : FKV_HIGH_WATERMARK_PCT,
			c->low_pct ? c->low_pct : FKV_LOW_WATERMARK_PCT);
		fputs(",\"log_level\":", f);
		ctl_json_quote(f, c->log_level ? c->log_level : "info");
		fprintf(f, ",\"ssd\":%s,\"capacity_bytes\":%llu,\"shards\":%u,\"roots\":[",
			c->ssd ? "true" : "false",
			(unsigned long long)p->capacity, p->nshards);
		for (i = 0; i < p->nroots; i++) {
			const struct fkv_ssd_root *r = &p->roots[i];

			snprintf(dev, sizeof(dev), "%u:%u", major(r->dev),
				 minor(r->dev));
			fprintf(f, "%s{\"index\":%u,\"path\":", i ? "," : "",
				r->index);
			ctl_json_quote(f, r->path);
			fprintf(f, ",\"kind\":\"%s\",\"device\":\"%s\",\"cache_root\":",
				r->kind == FKV_SSD_BLOCKDEV ? "blockdev" : "dir",
				dev);
			if (r->kind == FKV_SSD_BLOCKDEV)
				fputs("null", f);
			else
				ctl_json_quote(f, r->root);
			fprintf(f, ",\"exists\":%s,\"limit_bytes\":%llu,"
				"\"capacity_bytes\":%llu,\"available_bytes\":%llu,"
				"\"shards\":%u,\"shard_bytes\":%llu,\"first_shard\":%u}",
				r->exists ? "true" : "false",
				(unsigned long long)r->limit,
				(unsigned long long)r->capacity,
				(unsigned long long)r->avail, r->nshards,
				(unsigned long long)r->shard_size,
				r->first_shard);
		}
		fputc(']', f);
		ctl_cluster_json(f, &c->cluster);
		ctl_tenants_json(f, c);
	}
	ctl_json_list(f, "warnings", &c->warnings, &p->warnings);
	ctl_json_list(f, "errors", errors, &none);
	fputs("}\n", f);
}

static int attach_one(void *arg, int fd, uint64_t offset, uint64_t capacity,
		      uint32_t device)
{
	return fkv_ssd_attach(arg, fd, offset, capacity, device, NULL);
}

static void attach_report(void *arg, bool warning, const char *line)
{
	if (warning)
		fprintf(stderr, "warning: %s\n", line);
	else
		printf("%s\n", line);
}

/* Does the loaded module report an SSD tier?  Its capacity in @cap. */
static bool ctl_module_has_ssd(uint64_t *cap)
{
	struct ctl_sysfs s;

	*cap = 0;
	return !ctl_sysfs_init(&s) &&
	       !ctl_sysfs_read_u64(&s, CTL_SSD_CAPACITY, cap) && *cap;
}

/* config attach: plan, prepare (create/truncate/open), hand fds over. */
static int ctl_config_attach(const struct ctl_opts *o)
{
	struct fkv_ssd_attach_ops ops = { .attach = attach_one,
					  .report = attach_report };
	struct fkv_ssd_attached got;
	struct fkv_config cfg;
	struct fkv *kv = NULL;
	int ret, rc = CTL_EXIT_ERROR;
	char err[512];
	uint64_t have;

	ret = fkv_config_load(o->input, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "fluxonctl config attach: %s: %s\n", o->input,
			cfg.errors.n ? cfg.errors.v[0] : err);
		return CTL_EXIT_ERROR;
	}
	if (!cfg.ssd) {
		fprintf(o->if_needed ? stdout : stderr,
			"fluxonctl config attach: %s declares no SSD tier (large_limit_size)\n",
			o->input);
		if (o->if_needed)
			rc = CTL_EXIT_OK;
		goto out_cfg;
	}
	ret = fkv_open(o->device, &kv);
	if (ret) {
		fprintf(stderr, "fluxonctl config attach: %s\n", fkv_strerror(ret));
		rc = CTL_EXIT_ABSENT;
		goto out_cfg;
	}
	if (o->if_needed && ctl_module_has_ssd(&have)) {
		printf("fluxonctl config attach: the module already has an SSD tier (%llu MiB): %s not applied again\n",
		       (unsigned long long)(have >> 20), o->input);
		rc = CTL_EXIT_OK;
		goto out_kv;
	}
	ops.arg = kv;
	ret = fkv_ssd_attach_config(&cfg, &ops, &got, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "fluxonctl config attach: %s\n", err);
		goto out_kv;
	}
	printf("SSD tier: %u shards, %llu MiB\n", got.nshards,
	       (unsigned long long)(got.capacity >> 20));
	rc = CTL_EXIT_OK;
out_kv:
	fkv_close(kv);
out_cfg:
	fkv_config_free(&cfg);
	return rc;
}

int ctl_cmd_config(const struct ctl_opts *o)
{
	const char *file = o->input;
	struct fkv_ssd_plan plan = { 0 };
	struct fkv_config cfg;
	const struct fkv_msgs *errors;
	struct fkv_msgs one = { 0 };
	char err[512], *onev[1] = { err };
	bool valid;
	size_t i;
	int ret;

	if (o->what && !strcmp(o->what, "attach"))
		return ctl_config_attach(o);

	ret = fkv_config_load(file, &cfg, err, sizeof(err));
	if (!ret)
		ret = fkv_ssd_plan(&cfg, NULL, &plan, err, sizeof(err));
	valid = !ret;
	errors = cfg.errors.n ? &cfg.errors : &plan.errors;
	if (ret && !errors->n) {
		/* unreadable file, out of memory: one message in @err */
		one.v = onev;
		one.n = 1;
		errors = &one;
	}

	if (o->json) {
		ctl_config_json(stdout, file, &cfg, &plan, valid, errors);
	} else if (valid) {
		ctl_config_human(stdout, file, &cfg, &plan);
	} else {
		fprintf(stderr, "fluxonctl config check: %s: invalid (%zu error%s)\n",
			file, errors->n, errors->n == 1 ? "" : "s");
		for (i = 0; i < errors->n; i++)
			fprintf(stderr, "error: %s\n", errors->v[i]);
	}
	if (!o->json) {
		for (i = 0; i < cfg.warnings.n; i++)
			fprintf(stderr, "warning: %s\n", cfg.warnings.v[i]);
		for (i = 0; i < plan.warnings.n; i++)
			fprintf(stderr, "warning: %s\n", plan.warnings.v[i]);
	}

	fkv_ssd_plan_free(&plan);
	fkv_config_free(&cfg);
	if (fflush(stdout))
		return CTL_EXIT_ERROR;
	return valid ? CTL_EXIT_OK : CTL_EXIT_ERROR;
}
