/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctl_latency - the module's per-operation latency histograms (debugfs
 * "latency") as data: parse the file, percentiles from the buckets, and
 * the human, JSON and Prometheus forms `fluxonctl stats` prints.
 *
 * The file (kmod/main.c, fluxonkv_latency_show) is one header line
 *	op<TAB>count<TAB>sum_ns<TAB>le_1024<TAB>...<TAB>le_17179869184<TAB>le_inf
 * then one line per operation (put, get_memory, get_ssd, get_miss, delete)
 * with its count, the sum of its durations in ns and, per column le_N, the
 * operations that took less than N ns but not less than the previous bound
 * (not cumulative); le_inf counts the rest.  The bounds are read from the
 * header, so a module with other buckets still parses.
 */
#ifndef FLUXONKV_CTL_LATENCY_H
#define FLUXONKV_CTL_LATENCY_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CTL_LATENCY_FILE	"latency"
#define CTL_LAT_MAX_BUCKETS	64	/* finite bounds + the +Inf bucket */
#define CTL_LAT_MAX_OPS		16
#define CTL_LAT_OP_MAX		32	/* an operation name, NUL included */

struct ctl_lat_op {
	char name[CTL_LAT_OP_MAX];
	/*
	 * The sum of the buckets, not the file's count column: the module
	 * reads its counters one by one while operations go on, and a
	 * histogram must add up (Prometheus: _count == the +Inf bucket).
	 */
	uint64_t count;
	uint64_t sum_ns;
	uint64_t bucket[CTL_LAT_MAX_BUCKETS];	/* [nbounds] is +Inf */
};

struct ctl_latency {
	int err;		/* 0: parsed; else why there is no histogram */
	size_t bad_line;	/* after -EPROTO: 1-based line of the file */
	char path[PATH_MAX];	/* the file read (for messages) */
	size_t nbounds;		/* finite upper bounds */
	uint64_t bound_ns[CTL_LAT_MAX_BUCKETS - 1];	/* strictly increasing */
	size_t nops;
	struct ctl_lat_op op[CTL_LAT_MAX_OPS];
};

/*
 * Parse @len bytes of @text into @l.  -EPROTO if it is not the format
 * above (l->bad_line says where), -E2BIG for more than CTL_LAT_MAX_OPS
 * operations or CTL_LAT_MAX_BUCKETS buckets.  Sets l->err too.
 */
int ctl_latency_parse(const char *text, size_t len, struct ctl_latency *l);

/*
 * Read and parse @dir/latency (@dir NULL: $FLUXONKV_DEBUGFS or
 * /sys/kernel/debug/fluxonkv).  Returns l->err: -errno of the open or
 * read (-EACCES when not root, -ENOENT without debugfs or an older
 * module), or ctl_latency_parse's.  l->path is set either way.
 */
int ctl_latency_load(const char *dir, struct ctl_latency *l);

/* The operation called @name, or NULL. */
const struct ctl_lat_op *ctl_latency_op(const struct ctl_latency *l,
					const char *name);

/*
 * The @q-quantile (0 < q <= 1) of @op as the upper bound in ns of the
 * bucket it falls in: the smallest bound with at least ceil(q * count)
 * operations below it.  false when there is nothing to say: no
 * operations, or the quantile is in the +Inf bucket (*@ns is then the
 * last finite bound, which it exceeds).
 */
bool ctl_latency_quantile(const struct ctl_latency *l,
			  const struct ctl_lat_op *op, double q, uint64_t *ns);

/* "512 ns", "2.0 us", "1.5 ms", "17.18 s". */
const char *ctl_format_ns(uint64_t ns, char *buf, size_t len);

/*
 * @ns as decimal seconds, exactly: "0.000001024", "17.179869184", "0".
 * No floating point, so Prometheus le labels are stable and exact.
 */
const char *ctl_format_seconds(uint64_t ns, char *buf, size_t len);

/* The percentiles every form shows. */
#define CTL_LAT_NQUANTILES	3
extern const double ctl_lat_quantiles[CTL_LAT_NQUANTILES];	/* .5 .95 .99 */
extern const char *const ctl_lat_quantile_names[CTL_LAT_NQUANTILES];

/*
 * A table of count, mean, p50, p95, p99 per operation, or one line saying
 * why latency is unavailable.
 */
void ctl_render_latency_human(FILE *f, const struct ctl_latency *l);

/*
 * fluxonkv_op_latency_seconds as a Prometheus histogram, one label set
 * per operation; nothing at all when latency is unavailable.
 */
void ctl_render_latency_prometheus(FILE *f, const struct ctl_latency *l);

struct ctl_json;
/*
 * Member "latency": an object per operation {count, sum_ns, mean_ns,
 * p50_ns, p95_ns, p99_ns}, or null when unavailable.  mean and the
 * percentiles are null without operations; a percentile past the last
 * bound is null too (it has no upper bound).
 */
void ctl_render_latency_json(struct ctl_json *j, const struct ctl_latency *l);

#endif /* FLUXONKV_CTL_LATENCY_H */
