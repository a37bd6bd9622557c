// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_format: fluxonctl's output in human, JSON and Prometheus text form.
 */
#include <math.h>
#include <string.h>

#include <linux/fluxonkv.h>

#include "ctl_format.h"
#include "ctl_json.h"

#define CTL_PROM_PREFIX		"fluxonkv_"

const char *ctl_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
	};
	const int last = sizeof(units) / sizeof(units[0]) - 1;
	uint64_t unit = 1024, tenths;
	int k = 1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (k < last && bytes / 1024 >= unit) {
		unit <<= 10;
		k++;
	}
	/* round to tenths without overflow: (bytes % unit) * 10 fits in 64 bits */
	tenths = bytes / unit * 10 + (bytes % unit * 10 + unit / 2) / unit;
	if (tenths >= 10240 && k < last) {
		/* 1023.96 KiB rounds to 1024.0 KiB: say 1.0 MiB instead */
		unit <<= 10;
		k++;
		tenths = bytes / unit * 10 + (bytes % unit * 10 + unit / 2) / unit;
	}
	snprintf(buf, len, "%llu.%llu %s", (unsigned long long)(tenths / 10),
		 (unsigned long long)(tenths % 10), units[k]);
	return buf;
}

double ctl_percent(uint64_t used, uint64_t capacity)
{
	if (!capacity)
		return NAN;
	return 100.0 * (double)used / (double)capacity;
}

const char *ctl_source_name(unsigned int source)
{
	switch (source) {
	case FLUXONKV_SOURCE_NONE:
		return "none";
	case FLUXONKV_SOURCE_MEMORY:
		return "memory";
	case FLUXONKV_SOURCE_SSD:
		return "ssd";
	case FLUXONKV_SOURCE_REMOTE:
		return "remote";
	case FLUXONKV_SOURCE_REMOTE_SSD:
		return "remote-ssd";
	default:
		return "unknown";
	}
}

/* --- stats ------------------------------------------------------------ */

/* The capacity a "used" gauge is a share of, or NULL. */
static const char *ctl_share_of(const char *name)
{
	static const char *const pairs[][2] = {
		{ "segment_used_bytes", "segment_capacity_bytes" },
		{ "kv_ssd_used_bytes", "kv_ssd_capacity_bytes" },
	};
	size_t i;

	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (!strcmp(name, pairs[i][0]))
			return pairs[i][1];
	return NULL;
}

void ctl_render_stats_human(FILE *f, const struct ctl_stats *st,
			    const struct ctl_latency *lat)
{
	const struct ctl_stat *cap;
	char size[CTL_SIZE_BUFLEN];
	const char *of;
	size_t i;

	for (i = 0; i < st->n; i++) {
		const struct ctl_stat *s = &st->v[i];

		fprintf(f, "%-24s ", s->name);
		if (s->err) {
			fprintf(f, "unreadable: %s\n", strerror(-s->err));
			continue;
		}
		if (s->def && s->def->is_string) {
			fprintf(f, "%s\n", s->str);
			continue;
		}
		fprintf(f, "%llu", (unsigned long long)s->value);
		if (s->def && s->def->is_bytes) {
			fprintf(f, " (%s",
				ctl_format_size(s->value, size, sizeof(size)));
			of = ctl_share_of(s->name);
			cap = of ? ctl_stats_get(st, of) : NULL;
			if (cap && cap->value)
				fprintf(f, ", %.1f%%",
					ctl_percent(s->value, cap->value));
			fputc(')', f);
		}
		fputc('\n', f);
	}
	if (lat) {
		fputc('\n', f);
		ctl_render_latency_human(f, lat);
	}
}

void ctl_render_stats_json(FILE *f, const struct ctl_stats *st,
			   const struct ctl_latency *lat)
{
	struct ctl_json j;
	size_t i;

	ctl_json_init(&j, f);
	ctl_json_open(&j, NULL);
	for (i = 0; i < st->n; i++) {
		const struct ctl_stat *s = &st->v[i];

		if (s->err)
			ctl_json_null(&j, s->name);
		else if (s->def && s->def->is_string)
			ctl_json_str(&j, s->name, s->str);
		else
			ctl_json_u64(&j, s->name, s->value);
	}
	if (lat)
		ctl_render_latency_json(&j, lat);
	ctl_json_close(&j);
}

/* A label value: backslash, double quote and newline escaped. */
static void ctl_prom_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void ctl_prom_family(FILE *f, const char *prefix, const char *name,
			    const char *suffix, const char *type,
			    const char *help)
{
	fprintf(f, "# HELP %s%s%s %s\n", prefix, name, suffix, help);
	fprintf(f, "# TYPE %s%s%s %s\n", prefix, name, suffix, type);
}

/* fluxonkv_info{version="...",abi_version="1"} 1 from the label stats. */
static void ctl_prom_info(FILE *f, const struct ctl_stats *st)
{
	bool first = true;
	size_t i;

	for (i = 0; i < st->n; i++) {
		const struct ctl_stat *s = &st->v[i];

		if (s->err || ctl_stat_kind(s) != CTL_STAT_LABEL)
			continue;
		if (first)
			ctl_prom_family(f, CTL_PROM_PREFIX, "info", "", "gauge",
					"Identity of the loaded fluxonkv module (always 1).");
		fprintf(f, "%s%s=\"", first ? CTL_PROM_PREFIX "info{" : ",",
			s->name);
		ctl_prom_label(f, s->str);
		fputc('"', f);
		first = false;
	}
	if (!first)
		fputs("} 1\n", f);
}

void ctl_render_stats_prometheus(FILE *f, const struct ctl_stats *st,
				 const struct ctl_latency *lat)
{
	const struct ctl_stat *pid;
	size_t i;

	ctl_prom_info(f, st);
	for (i = 0; i < st->n; i++) {
		const struct ctl_stat *s = &st->v[i];
		const char *help = s->def ? s->def->help :
			"A fluxonkv sysfs value this fluxonctl does not know.";
		const char *type, *suffix = "";

		if (s->err)
			continue;
		switch (ctl_stat_kind(s)) {
		case CTL_STAT_LABEL:
			continue;
		case CTL_STAT_GAUGE:
			type = "gauge";
			break;
		case CTL_STAT_COUNTER:
			type = "counter";
			suffix = "_total";
			break;
		default:
			type = "untyped";
			break;
		}
		ctl_prom_family(f, CTL_PROM_PREFIX, s->name, suffix, type, help);
		fprintf(f, CTL_PROM_PREFIX "%s%s %llu\n", s->name, suffix,
			(unsigned long long)s->value);
		if (s->def && s->def->alias) {
			ctl_prom_family(f, "", s->def->alias, "", type, help);
			fprintf(f, "%s %llu\n", s->def->alias,
				(unsigned long long)s->value);
		}
	}
	pid = ctl_stats_get(st, "daemon_pid");
	if (pid) {
		ctl_prom_family(f, CTL_PROM_PREFIX, "daemon_up", "", "gauge",
				"Whether a fluxond daemon is registered (1) or not (0).");
		fprintf(f, CTL_PROM_PREFIX "daemon_up %d\n", pid->value != 0);
	}
	if (lat)
		ctl_render_latency_prometheus(f, lat);
}

/* --- status ----------------------------------------------------------- */

static void ctl_status_nl_human(FILE *f, const struct ctl_genl_version *nl)
{
	const char *sep = " (";

	fprintf(f, "%-10s ", "netlink:");
	if (nl->err) {
		fprintf(f, "error: %s\n", nl->error);
		return;
	}
	fprintf(f, "family \"%s\" reachable", FLUXONKV_GENL_NAME);
	if (nl->have & CTL_GV_VERSION) {
		fprintf(f, "%sversion %s", sep, nl->version);
		sep = ", ";
	}
	if (nl->have & CTL_GV_ABI) {
		fprintf(f, "%sABI %u", sep, nl->abi);
		sep = ", ";
	}
	if (nl->have & CTL_GV_DAEMON_PID) {
		fprintf(f, "%sdaemon pid %u", sep, nl->daemon_pid);
		sep = ", ";
	}
	fprintf(f, "%s\n", sep[0] == ',' ? ")" : "");
}

static void ctl_status_u64_human(FILE *f, const struct ctl_stats *st,
				 const char *label, const char *name)
{
	const struct ctl_stat *s = ctl_stats_get(st, name);

	if (s)
		fprintf(f, "%-10s %llu\n", label, (unsigned long long)s->value);
	else
		fprintf(f, "%-10s unknown\n", label);
}

/*
 * "LABEL  used of capacity used (share)", "none" for an empty capacity (a
 * tier the module knows but nobody attached), "unknown" if unreadable.
 */
static void ctl_status_tier_human(FILE *f, const struct ctl_stats *st,
				  const char *label, const char *cap_name,
				  const char *used_name, bool zero_is_none)
{
	const struct ctl_stat *cap = ctl_stats_get(st, cap_name);
	const struct ctl_stat *used = ctl_stats_get(st, used_name);
	char a[CTL_SIZE_BUFLEN], b[CTL_SIZE_BUFLEN];

	if (cap && used && cap->value)
		fprintf(f, "%-10s %s of %s used (%.1f%%)\n", label,
			ctl_format_size(used->value, a, sizeof(a)),
			ctl_format_size(cap->value, b, sizeof(b)),
			ctl_percent(used->value, cap->value));
	else if (cap && zero_is_none && !cap->value)
		fprintf(f, "%-10s none\n", label);
	else
		fprintf(f, "%-10s unknown\n", label);
}

void ctl_render_status_human(FILE *f, const struct ctl_status *s)
{
	const struct ctl_stat *ver, *abi, *pid;

	if (!s->stats) {
		fprintf(f, "%-10s not loaded (no %s)\n", "module:",
			s->sysfs_dir);
		return;
	}
	ver = ctl_stats_get(s->stats, "version");
	abi = ctl_stats_get(s->stats, "abi_version");
	fprintf(f, "%-10s loaded, version %s, ABI %s\n", "module:",
		ver ? ver->str : "unknown", abi ? abi->str : "unknown");

	pid = ctl_stats_get(s->stats, "daemon_pid");
	if (!pid)
		fprintf(f, "%-10s unknown\n", "daemon:");
	else if (pid->value)
		fprintf(f, "%-10s connected (pid %llu)\n", "daemon:",
			(unsigned long long)pid->value);
	else
		fprintf(f, "%-10s not connected\n", "daemon:");

	ctl_status_tier_human(f, s->stats, "segment:", "segment_capacity_bytes",
			      "segment_used_bytes", false);
	/* a module older than the SSD tier has neither file: no line */
	if (ctl_stats_get(s->stats, CTL_SSD_CAPACITY) ||
	    ctl_stats_get(s->stats, CTL_SSD_USED))
	{
		const struct ctl_stat *off =
			ctl_stats_get(s->stats, "ssd_shards_offline");

		ctl_status_tier_human(f, s->stats, "ssd:", CTL_SSD_CAPACITY,
				      CTL_SSD_USED, true);
		if (off && off->value)
			fprintf(f, "%-10s %llu shard(s) offline after IO errors "
				"(kernel log; attach again once healthy)\n", "",
				(unsigned long long)off->value);
	}

	ctl_status_u64_human(f, s->stats, "replicas:", "replicas");
	ctl_status_u64_human(f, s->stats, "holders:", "holders");
	if (s->nl_queried)
		ctl_status_nl_human(f, &s->nl);
}

static void ctl_json_stat_u64(struct ctl_json *j, const struct ctl_stats *st,
			      const char *key, const char *name)
{
	const struct ctl_stat *s = ctl_stats_get(st, name);

	if (s)
		ctl_json_u64(j, key, s->value);
	else
		ctl_json_null(j, key);
}

/* capacity, used (null if unreadable) and the share (null if no capacity). */
static void ctl_status_tier_json(struct ctl_json *j, const struct ctl_stats *st,
				 const char *cap_name, const char *used_name,
				 const char *percent_key)
{
	const struct ctl_stat *cap = ctl_stats_get(st, cap_name);
	const struct ctl_stat *used = ctl_stats_get(st, used_name);

	ctl_json_stat_u64(j, st, cap_name, cap_name);
	ctl_json_stat_u64(j, st, used_name, used_name);
	if (cap && used && cap->value)
		ctl_json_double(j, percent_key,
				ctl_percent(used->value, cap->value));
	else
		ctl_json_null(j, percent_key);
}

static void ctl_status_nl_json(struct ctl_json *j,
			       const struct ctl_genl_version *nl)
{
	ctl_json_open(j, "netlink");
	ctl_json_bool(j, "ok", !nl->err);
	if (nl->err) {
		ctl_json_str(j, "error", nl->error);
	} else {
		if (nl->have & CTL_GV_VERSION)
			ctl_json_str(j, "version", nl->version);
		if (nl->have & CTL_GV_ABI)
			ctl_json_u64(j, "abi_version", nl->abi);
		if (nl->have & CTL_GV_SEGMENT_SIZE)
			ctl_json_u64(j, "segment_size", nl->segment_size);
		if (nl->have & CTL_GV_SEGMENT_USED)
			ctl_json_u64(j, "segment_used", nl->segment_used);
		if (nl->have & CTL_GV_DAEMON_PID)
			ctl_json_u64(j, "daemon_pid", nl->daemon_pid);
	}
	ctl_json_close(j);
}

void ctl_render_status_json(FILE *f, const struct ctl_status *s)
{
	const struct ctl_stat *ver, *pid;
	struct ctl_json j;

	ctl_json_init(&j, f);
	ctl_json_open(&j, NULL);
	ctl_json_bool(&j, "module_loaded", s->stats != NULL);
	if (s->stats) {
		ver = ctl_stats_get(s->stats, "version");
		if (ver)
			ctl_json_str(&j, "version", ver->str);
		else
			ctl_json_null(&j, "version");
		ctl_json_stat_u64(&j, s->stats, "abi_version", "abi_version");

		pid = ctl_stats_get(s->stats, "daemon_pid");
		if (pid)
			ctl_json_bool(&j, "daemon_connected", pid->value != 0);
		else
			ctl_json_null(&j, "daemon_connected");
		ctl_json_stat_u64(&j, s->stats, "daemon_pid", "daemon_pid");

		ctl_status_tier_json(&j, s->stats, "segment_capacity_bytes",
				     "segment_used_bytes", "segment_used_percent");
		ctl_status_tier_json(&j, s->stats, CTL_SSD_CAPACITY,
				     CTL_SSD_USED, "kv_ssd_used_percent");
		ctl_json_stat_u64(&j, s->stats, "ssd_shards_offline",
				  "ssd_shards_offline");
		ctl_json_stat_u64(&j, s->stats, "replicas", "replicas");
		ctl_json_stat_u64(&j, s->stats, "holders", "holders");
	}
	if (s->nl_queried)
		ctl_status_nl_json(&j, &s->nl);
	ctl_json_close(&j);
}

/* --- holder metadata (get --info) -------------------------------------- */

void ctl_render_holder_human(FILE *f, const struct ctl_holder_info *h)
{
	char size[CTL_SIZE_BUFLEN];

	fprintf(f, "key:      %s\n", h->key);
	fprintf(f, "len:      %llu (%s)\n", (unsigned long long)h->len,
		ctl_format_size(h->len, size, sizeof(size)));
	fprintf(f, "put_id:   %llu\n", (unsigned long long)h->put_id);
	fprintf(f, "source:   %s\n", ctl_source_name(h->source));
	fprintf(f, "holder:   %llu\n", (unsigned long long)h->holder_id);
}

void ctl_render_holder_json(FILE *f, const struct ctl_holder_info *h)
{
	struct ctl_json j;

	ctl_json_init(&j, f);
	ctl_json_open(&j, NULL);
	ctl_json_str(&j, "key", h->key);
	ctl_json_u64(&j, "len", h->len);
	ctl_json_u64(&j, "put_id", h->put_id);
	ctl_json_str(&j, "source", ctl_source_name(h->source));
	ctl_json_u64(&j, "holder_id", h->holder_id);
	ctl_json_close(&j);
}
