// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_latency: the module's latency histograms for fluxonctl stats
 * (ctl_latency.h).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_dump.h"
#include "ctl_json.h"
#include "ctl_latency.h"
#include "ctl_sysfs.h"

#define CTL_LAT_PROM_NAME	"fluxonkv_op_latency_seconds"
#define CTL_LAT_FILE_MAX	(1 << 20)	/* a sane file is a few KiB */

const double ctl_lat_quantiles[CTL_LAT_NQUANTILES] = { 0.50, 0.95, 0.99 };
const char *const ctl_lat_quantile_names[CTL_LAT_NQUANTILES] = {
	"p50", "p95", "p99"
};

/* --- parsing --------------------------------------------------------- */

/* Strictly one unsigned decimal number of @len bytes: no sign, no spaces. */
static int ctl_lat_u64(const char *s, size_t len, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (!len)
		return -EPROTO;
	for (i = 0; i < len; i++) {
		unsigned int d = (unsigned char)s[i] - '0';

		if (d > 9 || x > (UINT64_MAX - d) / 10)
			return -EPROTO;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static bool ctl_lat_field_is(const char *s, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(s, want, len);
}

/* An operation name: [a-z_][a-z0-9_]*, short enough for ctl_lat_op. */
static bool ctl_lat_is_name(const char *s, size_t len)
{
	size_t i;

	if (!len || len >= CTL_LAT_OP_MAX || isdigit((unsigned char)s[0]))
		return false;
	for (i = 0; i < len; i++)
		if (!(islower((unsigned char)s[i]) ||
		      isdigit((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* One line split at tabs: pointers into the text, with lengths. */
struct ctl_lat_fields {
	size_t n;
	const char *s[CTL_LAT_MAX_BUCKETS + 4];
	size_t len[CTL_LAT_MAX_BUCKETS + 4];
};

static int ctl_lat_split(const char *s, const char *end,
			 struct ctl_lat_fields *fl)
{
	const char *tab;

	fl->n = 0;
	for (;;) {
		tab = memchr(s, '\t', end - s);
		if (fl->n == sizeof(fl->s) / sizeof(fl->s[0]))
			return -E2BIG;
		fl->s[fl->n] = s;
		fl->len[fl->n++] = (tab ? tab : end) - s;
		if (!tab)
			return 0;
		s = tab + 1;
	}
}

/* op, count, sum_ns, le_<N>... strictly increasing, le_inf. */
static int ctl_lat_header(const struct ctl_lat_fields *fl,
			  struct ctl_latency *l)
{
	size_t i;

	if (fl->n < 4 || !ctl_lat_field_is(fl->s[0], fl->len[0], "op") ||
	    !ctl_lat_field_is(fl->s[1], fl->len[1], "count") ||
	    !ctl_lat_field_is(fl->s[2], fl->len[2], "sum_ns") ||
	    !ctl_lat_field_is(fl->s[fl->n - 1], fl->len[fl->n - 1], "le_inf"))
		return -EPROTO;
	l->nbounds = fl->n - 4;
	if (l->nbounds > CTL_LAT_MAX_BUCKETS - 1)
		return -E2BIG;
	for (i = 0; i < l->nbounds; i++) {
		const char *s = fl->s[3 + i];
		size_t len = fl->len[3 + i];

		if (len < 4 || memcmp(s, "le_", 3) ||
		    ctl_lat_u64(s + 3, len - 3, &l->bound_ns[i]) ||
		    !l->bound_ns[i] ||
		    (i && l->bound_ns[i] <= l->bound_ns[i - 1]))
			return -EPROTO;
	}
	return 0;
}

static int ctl_lat_row(const struct ctl_lat_fields *fl, struct ctl_latency *l)
{
	struct ctl_lat_op *op;
	uint64_t count;
	size_t i;

	if (fl->n != l->nbounds + 4 || !ctl_lat_is_name(fl->s[0], fl->len[0]))
		return -EPROTO;
	for (i = 0; i < l->nops; i++)
		if (ctl_lat_field_is(fl->s[0], fl->len[0], l->op[i].name))
			return -EPROTO;	/* the same operation twice */
	if (l->nops == CTL_LAT_MAX_OPS)
		return -E2BIG;
	op = &l->op[l->nops];
	memset(op, 0, sizeof(*op));
	memcpy(op->name, fl->s[0], fl->len[0]);
	/* the count column must be a number, but the buckets are the truth */
	if (ctl_lat_u64(fl->s[1], fl->len[1], &count) ||
	    ctl_lat_u64(fl->s[2], fl->len[2], &op->sum_ns))
		return -EPROTO;
	for (i = 0; i <= l->nbounds; i++) {
		if (ctl_lat_u64(fl->s[3 + i], fl->len[3 + i], &op->bucket[i]) ||
		    op->count + op->bucket[i] < op->count)
			return -EPROTO;
		op->count += op->bucket[i];
	}
	l->nops++;
	return 0;
}

int ctl_latency_parse(const char *text, size_t len, struct ctl_latency *l)
{
	const char *end = text + len, *nl;
	struct ctl_lat_fields fl;
	bool header = false;
	size_t lineno = 0;
	int err = 0;

	l->err = 0;
	l->bad_line = 0;
	l->nbounds = 0;
	l->nops = 0;
	while (text < end && !err) {
		nl = memchr(text, '\n', end - text);
		if (!nl)
			nl = end;
		lineno++;
		if (nl == text) {	/* the module writes no empty lines */
			err = -EPROTO;
			break;
		}
		err = ctl_lat_split(text, nl, &fl);
		if (!err)
			err = header ? ctl_lat_row(&fl, l) : ctl_lat_header(&fl, l);
		header = true;
		text = nl + 1;
	}
	if (!err && !header) {
		lineno = 1;
		err = -EPROTO;	/* empty: not even the header */
	}
	if (err) {
		l->nbounds = 0;
		l->nops = 0;
		if (err == -EPROTO)
			l->bad_line = lineno;
	}
	l->err = err;
	return err;
}

int ctl_latency_load(const char *dir, struct ctl_latency *l)
{
	char *text = NULL;
	size_t len = 0;
	int fd, err;

	l->nbounds = 0;
	l->nops = 0;
	l->bad_line = 0;
	if (!dir)
		dir = ctl_debugfs_dir();
	if (snprintf(l->path, sizeof(l->path), "%s/%s", dir,
		     CTL_LATENCY_FILE) >= (int)sizeof(l->path))
		return l->err = -ENAMETOOLONG;
	fd = open(l->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return l->err = -errno;
	err = ctl_read_fd(fd, CTL_LAT_FILE_MAX, &text, &len);
	close(fd);
	if (err)
		return l->err = err;
	err = ctl_latency_parse(text, len, l);
	free(text);
	return err;
}

const struct ctl_lat_op *ctl_latency_op(const struct ctl_latency *l,
					const char *name)
{
	size_t i;

	for (i = 0; i < l->nops; i++)
		if (!strcmp(l->op[i].name, name))
			return &l->op[i];
	return NULL;
}

/* --- percentiles ------------------------------------------------------- */

bool ctl_latency_quantile(const struct ctl_latency *l,
			  const struct ctl_lat_op *op, double q, uint64_t *ns)
{
	/* in parts per 10000: integer ranks, no 0.95 * 100 = 95.0000001 */
	uint64_t p = (uint64_t)(q * 10000 + 0.5), rank, cum = 0;
	size_t i;

	*ns = l->nbounds ? l->bound_ns[l->nbounds - 1] : 0;
	if (!op->count || !p || p > 10000)
		return false;
	/* ceil(count * p / 10000) without overflowing count * p */
	rank = op->count / 10000 * p + (op->count % 10000 * p + 9999) / 10000;
	for (i = 0; i < l->nbounds; i++) {
		cum += op->bucket[i];
		if (cum >= rank) {
			*ns = l->bound_ns[i];
			return true;
		}
	}
	return false;	/* in the +Inf bucket */
}

/* --- formatting -------------------------------------------------------- */

const char *ctl_format_ns(uint64_t ns, char *buf, size_t len)
{
	/* the unit is chosen after rounding: 999999 ns is "1.0 ms" */
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 999950)
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 999950000)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	return buf;
}

const char *ctl_format_seconds(uint64_t ns, char *buf, size_t len)
{
	char frac[16];
	int n;

	n = snprintf(frac, sizeof(frac), "%09llu",
		     (unsigned long long)(ns % 1000000000));
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	snprintf(buf, len, "%llu%s%s", (unsigned long long)(ns / 1000000000),
		 n ? "." : "", frac);
	return buf;
}

/* --- human ----------------------------------------------------------------- */

static const char *ctl_lat_why(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		return "; debugfs is readable by root only";
	case -ENOENT:
	case -ENOTDIR:
		return "; debugfs not mounted, or the module has no latency histograms";
	default:
		return "";
	}
}

#define CTL_LAT_COL	11

void ctl_render_latency_human(FILE *f, const struct ctl_latency *l)
{
	char buf[CTL_LAT_NQUANTILES + 1][32], tmp[24];
	size_t i, k;

	if (l->err == -EPROTO) {
		fprintf(f, "latency: unavailable (%s: line %zu is not the expected format)\n",
			l->path, l->bad_line);
		return;
	}
	if (l->err) {
		fprintf(f, "latency: unavailable (%s: %s%s)\n", l->path,
			strerror(-l->err), ctl_lat_why(l->err));
		return;
	}
	fprintf(f, "latency (pNN: upper bound of the log2 bucket it falls in)\n");
	fprintf(f, "%-12s %12s %*s", "op", "count", CTL_LAT_COL, "mean");
	for (k = 0; k < CTL_LAT_NQUANTILES; k++)
		fprintf(f, " %*s", CTL_LAT_COL, ctl_lat_quantile_names[k]);
	fputc('\n', f);
	for (i = 0; i < l->nops; i++) {
		const struct ctl_lat_op *op = &l->op[i];
		uint64_t ns;

		if (op->count)
			ctl_format_ns((op->sum_ns + op->count / 2) / op->count,
				      buf[0], sizeof(buf[0]));
		else
			strcpy(buf[0], "-");
		for (k = 0; k < CTL_LAT_NQUANTILES; k++) {
			char *b = buf[k + 1];

			if (ctl_latency_quantile(l, op, ctl_lat_quantiles[k], &ns))
				ctl_format_ns(ns, b, sizeof(buf[0]));
			else if (op->count)	/* past the last bound */
				snprintf(b, sizeof(buf[0]), ">%s",
					 ctl_format_ns(ns, tmp, sizeof(tmp)));
			else
				strcpy(b, "-");
		}
		fprintf(f, "%-12s %12llu", op->name,
			(unsigned long long)op->count);
		for (k = 0; k <= CTL_LAT_NQUANTILES; k++)
			fprintf(f, " %*s", CTL_LAT_COL, buf[k]);
		fputc('\n', f);
	}
}

/* --- Prometheus ------------------------------------------------------------ */

void ctl_render_latency_prometheus(FILE *f, const struct ctl_latency *l)
{
	char le[32];
	size_t i, b;

	if (l->err || !l->nops)
		return;
	fputs("# HELP " CTL_LAT_PROM_NAME " Time the module spent in a put, get"
	      " (by source: memory, ssd, miss) or delete ioctl; log2 buckets.\n"
	      "# TYPE " CTL_LAT_PROM_NAME " histogram\n", f);
	for (i = 0; i < l->nops; i++) {
		const struct ctl_lat_op *op = &l->op[i];
		uint64_t cum = 0;

		/*
		 * The module's bucket N counts durations < N ns: cumulated
		 * they are a subset of le (<=) N, exact but for ops of
		 * exactly N ns, which the next bucket holds.
		 */
		for (b = 0; b <= l->nbounds; b++) {
			cum += op->bucket[b];
			if (b < l->nbounds)
				ctl_format_seconds(l->bound_ns[b], le, sizeof(le));
			else
				strcpy(le, "+Inf");
			fprintf(f, CTL_LAT_PROM_NAME "_bucket{op=\"%s\",le=\"%s\"} %llu\n",
				op->name, le, (unsigned long long)cum);
		}
		fprintf(f, CTL_LAT_PROM_NAME "_sum{op=\"%s\"} %s\n", op->name,
			ctl_format_seconds(op->sum_ns, le, sizeof(le)));
		fprintf(f, CTL_LAT_PROM_NAME "_count{op=\"%s\"} %llu\n", op->name,
			(unsigned long long)op->count);
	}
}

/* --- JSON ------------------------------------------------------------------- */

void ctl_render_latency_json(struct ctl_json *j, const struct ctl_latency *l)
{
	char key[16];
	size_t i, k;

	if (l->err) {
		ctl_json_null(j, "latency");
		return;
	}
	ctl_json_open(j, "latency");
	for (i = 0; i < l->nops; i++) {
		const struct ctl_lat_op *op = &l->op[i];
		uint64_t ns;

		ctl_json_open(j, op->name);
		ctl_json_u64(j, "count", op->count);
		ctl_json_u64(j, "sum_ns", op->sum_ns);
		if (op->count)
			ctl_json_u64(j, "mean_ns",
				     (op->sum_ns + op->count / 2) / op->count);
		else
			ctl_json_null(j, "mean_ns");
		for (k = 0; k < CTL_LAT_NQUANTILES; k++) {
			snprintf(key, sizeof(key), "%s_ns",
				 ctl_lat_quantile_names[k]);
			if (ctl_latency_quantile(l, op, ctl_lat_quantiles[k], &ns))
				ctl_json_u64(j, key, ns);
			else
				ctl_json_null(j, key);
		}
		ctl_json_close(j);
	}
	ctl_json_close(j);
}
