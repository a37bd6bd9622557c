// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl's view of the module's latency histograms (debugfs "latency"):
 * parsing, percentiles, and the human, JSON and Prometheus forms, against
 * files written as kmod/main.c (fluxonkv_latency_show) writes them.
 */
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../../userspace/fluxonctl/ctl_dump.h"
#include "../../userspace/fluxonctl/ctl_json.h"
#include "../../userspace/fluxonctl/ctl_latency.h"
#include "../../selftests/fkv_test.h"
#include "prom_expo.h"

/* The module's buckets: le_1024 .. le_2^34, then le_inf. */
#define KBOUNDS		25
#define KBUCKETS	(KBOUNDS + 1)

struct kop {
	const char *name;
	uint64_t sum_ns;
	uint64_t bucket[KBUCKETS];
};

/*
 * The text fluxonkv_latency_show writes for @ops, malloc'ed; @skew is
 * added to each count column (the module raced with operations).
 */
static char *kernel_text_skew(const struct kop *ops, size_t n, int skew)
{
	char *buf = NULL;
	size_t len = 0, i, b;
	FILE *f = open_memstream(&buf, &len);

	FKV_ASSERT(f);
	fputs("op\tcount\tsum_ns", f);
	for (b = 0; b < KBOUNDS; b++)
		fprintf(f, "\tle_%llu", 1ULL << (b + 10));
	fputs("\tle_inf\n", f);
	for (i = 0; i < n; i++) {
		uint64_t total = 0;

		for (b = 0; b < KBUCKETS; b++)
			total += ops[i].bucket[b];
		fprintf(f, "%s\t%llu\t%llu", ops[i].name,
			(unsigned long long)(total + skew),
			(unsigned long long)ops[i].sum_ns);
		for (b = 0; b < KBUCKETS; b++)
			fprintf(f, "\t%llu", (unsigned long long)ops[i].bucket[b]);
		fputc('\n', f);
	}
	FKV_ASSERT_EQ(fclose(f), 0);
	return buf;
}

static char *kernel_text(const struct kop *ops, size_t n)
{
	return kernel_text_skew(ops, n, 0);
}

static void parse_ok(const char *text, struct ctl_latency *l)
{
	int err = ctl_latency_parse(text, strlen(text), l);

	FKV_ASSERT(err == 0, "parse: %s (line %zu)", strerror(-err),
		   l->bad_line);
}

/* A latency with one operation @name whose buckets are @b (KBUCKETS). */
static void one_op(struct ctl_latency *l, const uint64_t *b)
{
	struct kop op = { .name = "get_memory" };
	char *text;

	memcpy(op.bucket, b, sizeof(op.bucket));
	text = kernel_text(&op, 1);
	parse_ok(text, l);
	free(text);
}

static uint64_t q(const struct ctl_latency *l, double quantile)
{
	uint64_t ns = 0;

	FKV_ASSERT(ctl_latency_quantile(l, &l->op[0], quantile, &ns),
		   "no q%g", quantile);
	return ns;
}

#define CAPTURE(call)							\
	({								\
		char *buf_ = NULL;					\
		size_t len_ = 0;					\
		FILE *f = open_memstream(&buf_, &len_);			\
		FKV_ASSERT(f);						\
		call;							\
		fclose(f);						\
		buf_;							\
	})

static void assert_has(const char *hay, const char *needle)
{
	FKV_ASSERT(strstr(hay, needle) != NULL, "missing \"%s\" in:\n%s",
		   needle, hay);
}

static void assert_str(const char *got, const char *want)
{
	FKV_ASSERT(!strcmp(got, want), "got \"%s\", want \"%s\"", got, want);
}

/* --- parsing --------------------------------------------------------------- */

FKV_TEST(the_module_format_parses_with_its_bounds_taken_from_the_header)
{
	static const struct kop ops[] = {
		{ "put", 5000, { [3] = 2 } },
		{ "get_memory", 3000, { [0] = 1, [1] = 1 } },
		{ "get_ssd", 0, { 0 } },
		{ "get_miss", 900, { [0] = 1 } },
		{ "delete", 40000000000ULL, { [KBOUNDS] = 2 } },
	};
	struct ctl_latency l;
	char *text = kernel_text(ops, 5);

	parse_ok(text, &l);
	free(text);
	FKV_ASSERT_EQ(l.err, 0);
	FKV_ASSERT_EQ(l.nbounds, KBOUNDS);
	FKV_ASSERT_EQ(l.bound_ns[0], 1024);
	FKV_ASSERT_EQ(l.bound_ns[1], 2048);
	FKV_ASSERT_EQ(l.bound_ns[KBOUNDS - 1], 1ULL << 34);
	FKV_ASSERT_EQ(l.nops, 5);
	assert_str(l.op[0].name, "put");
	assert_str(l.op[4].name, "delete");
	FKV_ASSERT_EQ(l.op[0].count, 2);
	FKV_ASSERT_EQ(l.op[0].bucket[3], 2);
	FKV_ASSERT_EQ(l.op[0].sum_ns, 5000);
	FKV_ASSERT_EQ(l.op[4].bucket[KBOUNDS], 2);	/* the +Inf bucket */
	FKV_ASSERT_EQ(l.op[4].sum_ns, 40000000000ULL);
	FKV_ASSERT(ctl_latency_op(&l, "get_miss") == &l.op[3]);
	FKV_ASSERT(ctl_latency_op(&l, "get") == NULL);
}

FKV_TEST(the_count_is_the_sum_of_the_buckets_when_the_module_raced)
{
	/* the module read the buckets while gets went on: count says 9 */
	struct kop op = { "get_memory", 100, { [0] = 3, [2] = 4 } };
	struct ctl_latency l;
	char *text = kernel_text_skew(&op, 1, 2);

	FKV_ASSERT(strstr(text, "get_memory\t9\t100\t3\t0\t4\t") != NULL, "%s", text);
	parse_ok(text, &l);
	free(text);
	FKV_ASSERT_EQ(l.op[0].count, 7);
}

/* @text must be refused with -EPROTO at line @line. */
static void assert_refused(const char *text, size_t line)
{
	struct ctl_latency l;
	int err = ctl_latency_parse(text, strlen(text), &l);

	FKV_ASSERT(err == -EPROTO, "accepted (%d): %s", err, text);
	FKV_ASSERT_EQ(l.err, -EPROTO);
	FKV_ASSERT(l.bad_line == line, "line %zu, want %zu: %s", l.bad_line,
		   line, text);
	FKV_ASSERT_EQ(l.nops, 0);
}

FKV_TEST(files_that_are_not_the_module_format_are_refused_with_the_line)
{
	const char *h = "op\tcount\tsum_ns\tle_1024\tle_2048\tle_inf\n";
	char text[256];

	assert_refused("", 1);
	assert_refused("size\t4096\n", 1);
	/* header: wrong leading columns, no le_inf, bounds not increasing */
	assert_refused("name\tcount\tsum_ns\tle_1024\tle_inf\n", 1);
	assert_refused("op\tcount\tsum_ns\tle_1024\tle_2048\n", 1);
	assert_refused("op\tcount\tsum_ns\tle_2048\tle_1024\tle_inf\n", 1);
	assert_refused("op\tcount\tsum_ns\tle_1024\tle_1024\tle_inf\n", 1);
	assert_refused("op\tcount\tsum_ns\tle_0\tle_inf\n", 1);
	assert_refused("op\tcount\tsum_ns\tle_x\tle_inf\n", 1);
	/* rows: short, long, not numbers, a bad name, twice, a blank line */
	snprintf(text, sizeof(text), "%sput\t1\t5\t1\t0\n", h);
	assert_refused(text, 2);
	snprintf(text, sizeof(text), "%sput\t1\t5\t1\t0\t0\t0\n", h);
	assert_refused(text, 2);
	snprintf(text, sizeof(text), "%sput\t1\t5\t1\t-1\t0\n", h);
	assert_refused(text, 2);
	snprintf(text, sizeof(text), "%sput\t1\t5\t1\t 0\t0\n", h);
	assert_refused(text, 2);
	snprintf(text, sizeof(text), "%sput\t1\t5\t1\t0\t18446744073709551616\n", h);
	assert_refused(text, 2);
	snprintf(text, sizeof(text), "%sPut\t1\t5\t1\t0\t0\n", h);
	assert_refused(text, 2);
	snprintf(text, sizeof(text), "%sput\t1\t5\t1\t0\t0\nput\t0\t0\t0\t0\t0\n", h);
	assert_refused(text, 3);
	snprintf(text, sizeof(text), "%s\nput\t1\t5\t1\t0\t0\n", h);
	assert_refused(text, 2);
	/* bucket counts that overflow when added up */
	snprintf(text, sizeof(text), "%sput\t0\t5\t18446744073709551615\t1\t0\n", h);
	assert_refused(text, 2);
}

FKV_TEST(a_header_with_other_bounds_and_no_trailing_newline_parses)
{
	static const char text[] =
		"op\tcount\tsum_ns\tle_500\tle_1000\tle_inf\n"
		"flush\t3\t1200\t1\t1\t1";
	struct ctl_latency l;

	parse_ok(text, &l);
	FKV_ASSERT_EQ(l.nbounds, 2);
	FKV_ASSERT_EQ(l.bound_ns[0], 500);
	FKV_ASSERT_EQ(l.bound_ns[1], 1000);
	FKV_ASSERT_EQ(l.nops, 1);
	FKV_ASSERT_EQ(l.op[0].count, 3);
	FKV_ASSERT_EQ(l.op[0].bucket[2], 1);
}

FKV_TEST(more_operations_than_fit_are_too_big_not_truncated)
{
	char *buf = NULL;
	size_t len = 0;
	struct ctl_latency l;
	FILE *f = open_memstream(&buf, &len);
	int i;

	FKV_ASSERT(f);
	fputs("op\tcount\tsum_ns\tle_1024\tle_inf\n", f);
	for (i = 0; i <= CTL_LAT_MAX_OPS; i++)
		fprintf(f, "op_%d\t0\t0\t0\t0\n", i);
	fclose(f);
	FKV_ASSERT_EQ(ctl_latency_parse(buf, len, &l), -E2BIG);
	FKV_ASSERT_EQ(l.nops, 0);
	free(buf);
}

/* --- percentiles ------------------------------------------------------------- */

FKV_TEST(percentiles_are_the_upper_bound_of_the_bucket_they_fall_in)
{
	/* 100 gets: 50 in [1024, 2048), 45 in [2048, 4096), 4 below 8192, 1 below 16384 */
	const uint64_t b[KBUCKETS] = { [1] = 50, [2] = 45, [3] = 4, [4] = 1 };
	struct ctl_latency l;

	one_op(&l, b);
	FKV_ASSERT_EQ(l.op[0].count, 100);
	FKV_ASSERT_EQ(q(&l, 0.50), 2048);
	FKV_ASSERT_EQ(q(&l, 0.95), 4096);
	FKV_ASSERT_EQ(q(&l, 0.99), 8192);
	FKV_ASSERT_EQ(q(&l, 1.0), 16384);
	FKV_ASSERT_EQ(q(&l, 0.51), 4096);
}

FKV_TEST(the_rank_is_exact_at_a_bucket_edge)
{
	/* 95 of 100 in the first bucket: p95 is still there, p96 is not */
	const uint64_t edge[KBUCKETS] = { [0] = 95, [5] = 5 };
	/* 94 of 100: the 95th operation is in the slow bucket */
	const uint64_t past[KBUCKETS] = { [0] = 94, [5] = 6 };
	struct ctl_latency l;

	one_op(&l, edge);
	FKV_ASSERT_EQ(q(&l, 0.95), 1024);
	FKV_ASSERT_EQ(q(&l, 0.96), 32768);
	one_op(&l, past);
	FKV_ASSERT_EQ(q(&l, 0.95), 32768);
	FKV_ASSERT_EQ(q(&l, 0.50), 1024);
}

FKV_TEST(a_single_operation_is_every_percentile)
{
	const uint64_t b[KBUCKETS] = { [7] = 1 };
	struct ctl_latency l;

	one_op(&l, b);
	FKV_ASSERT_EQ(q(&l, 0.50), 131072);
	FKV_ASSERT_EQ(q(&l, 0.99), 131072);
}

FKV_TEST(a_percentile_past_the_last_bound_has_only_a_lower_bound)
{
	const uint64_t b[KBUCKETS] = { [0] = 98, [KBOUNDS] = 2 };
	struct ctl_latency l;
	uint64_t ns = 0;

	one_op(&l, b);
	FKV_ASSERT_EQ(q(&l, 0.95), 1024);
	FKV_ASSERT(!ctl_latency_quantile(&l, &l.op[0], 0.99, &ns));
	FKV_ASSERT_EQ(ns, 1ULL << 34);	/* what it exceeds */
}

FKV_TEST(no_operations_have_no_percentiles)
{
	const uint64_t b[KBUCKETS] = { 0 };
	struct ctl_latency l;
	uint64_t ns;

	one_op(&l, b);
	FKV_ASSERT_EQ(l.op[0].count, 0);
	FKV_ASSERT(!ctl_latency_quantile(&l, &l.op[0], 0.5, &ns));
}

FKV_TEST(huge_counts_do_not_overflow_the_rank)
{
	/* 2^62 + 2^62 - 1 operations: count * 0.99 overflows 64 bits * 10000 */
	const uint64_t b[KBUCKETS] = { [0] = 1ULL << 62, [3] = (1ULL << 62) - 1 };
	struct ctl_latency l;

	one_op(&l, b);
	FKV_ASSERT_EQ(q(&l, 0.50), 1024);
	FKV_ASSERT_EQ(q(&l, 0.51), 8192);
	FKV_ASSERT_EQ(q(&l, 0.99), 8192);
}

/* --- formatting ----------------------------------------------------------------- */

FKV_TEST(durations_for_humans_pick_ns_us_ms_or_s)
{
	char buf[32];

	assert_str(ctl_format_ns(0, buf, sizeof(buf)), "0 ns");
	assert_str(ctl_format_ns(999, buf, sizeof(buf)), "999 ns");
	assert_str(ctl_format_ns(1024, buf, sizeof(buf)), "1.0 us");
	assert_str(ctl_format_ns(524288, buf, sizeof(buf)), "524.3 us");
	assert_str(ctl_format_ns(999999, buf, sizeof(buf)), "1.0 ms");
	assert_str(ctl_format_ns(1048576, buf, sizeof(buf)), "1.0 ms");
	assert_str(ctl_format_ns(1ULL << 34, buf, sizeof(buf)), "17.18 s");
}

FKV_TEST(seconds_for_prometheus_are_exact_decimals)
{
	char buf[32];

	assert_str(ctl_format_seconds(0, buf, sizeof(buf)), "0");
	assert_str(ctl_format_seconds(1024, buf, sizeof(buf)), "0.000001024");
	assert_str(ctl_format_seconds(1000, buf, sizeof(buf)), "0.000001");
	assert_str(ctl_format_seconds(1500000000, buf, sizeof(buf)), "1.5");
	assert_str(ctl_format_seconds(1ULL << 34, buf, sizeof(buf)), "17.179869184");
	assert_str(ctl_format_seconds(UINT64_MAX, buf, sizeof(buf)),
		   "18446744073.709551615");
}

/* --- Prometheus -------------------------------------------------------------------- */

/* The value of the sample line that starts with @prefix. */
static unsigned long long sample(const char *text, const char *prefix)
{
	const char *hit = strstr(text, prefix);

	FKV_ASSERT(hit, "no sample %s", prefix);
	FKV_ASSERT(hit == text || hit[-1] == '\n', "%s", prefix);
	return strtoull(hit + strlen(prefix), NULL, 10);
}

FKV_TEST(prometheus_gets_a_cumulative_histogram_per_operation)
{
	static const struct kop ops[] = {
		{ "put", 93000, { [3] = 2, [5] = 3, [KBOUNDS] = 1 } },
		{ "get_memory", 7168, { [0] = 1, [1] = 2, [2] = 1 } },
	};
	char *text = kernel_text(ops, 2), *out, *copy;
	struct prom_expo_result r;
	struct ctl_latency l;
	unsigned long long prev = 0, v, raw = 0;
	char prefix[160];
	size_t b;

	parse_ok(text, &l);
	free(text);
	out = CAPTURE(ctl_render_latency_prometheus(f, &l));

	assert_has(out, "# TYPE fluxonkv_op_latency_seconds histogram\n");
	FKV_ASSERT(!strncmp(out, "# HELP fluxonkv_op_latency_seconds ", 35), "%s", out);
	/* the bounds in seconds, the counts cumulated */
	assert_has(out, "\nfluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"0.000004096\"} 0\n"
			"fluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"0.000008192\"} 2\n"
			"fluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"0.000016384\"} 2\n"
			"fluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"0.000032768\"} 5\n");
	assert_has(out, "fluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"17.179869184\"} 5\n"
			"fluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"+Inf\"} 6\n"
			"fluxonkv_op_latency_seconds_sum{op=\"put\"} 0.000093\n"
			"fluxonkv_op_latency_seconds_count{op=\"put\"} 6\n");
	assert_has(out, "fluxonkv_op_latency_seconds_sum{op=\"get_memory\"} 0.000007168\n"
			"fluxonkv_op_latency_seconds_count{op=\"get_memory\"} 4\n");

	/* every get_memory bucket: monotone, and the running sum of the file's */
	for (b = 0; b < KBUCKETS; b++) {
		char le[32];

		if (b < KBOUNDS)
			ctl_format_seconds(1ULL << (b + 10), le, sizeof(le));
		else
			strcpy(le, "+Inf");
		snprintf(prefix, sizeof(prefix),
			 "fluxonkv_op_latency_seconds_bucket{op=\"get_memory\",le=\"%s\"} ",
			 le);
		v = sample(out, prefix);
		raw += ops[1].bucket[b];
		FKV_ASSERT(v >= prev, "%s%llu after %llu", prefix, v, prev);
		FKV_ASSERT_EQ(v, raw);
		prev = v;
	}
	FKV_ASSERT_EQ(sample(out, "fluxonkv_op_latency_seconds_count{op=\"get_memory\"} "),
		      raw);

	copy = strdup(out);
	r = prom_expo_check(copy);
	free(copy);
	FKV_ASSERT_EQ(r.histogram_series, 2);
	FKV_ASSERT_EQ(r.samples, 2 * (KBUCKETS + 2));
	free(out);
}

FKV_TEST(prometheus_leaves_latency_out_when_it_is_unavailable)
{
	struct ctl_latency l = { .err = -EACCES };
	char *out = CAPTURE(ctl_render_latency_prometheus(f, &l));

	assert_str(out, "");
	free(out);
}

/* --- JSON and humans ------------------------------------------------------------------ */

FKV_TEST(json_has_an_object_per_operation_with_percentiles_in_ns)
{
	static const struct kop ops[] = {
		{ "put", 93000, { [3] = 2, [5] = 3, [KBOUNDS] = 1 } },
		{ "get_ssd", 0, { 0 } },
	};
	char *text = kernel_text(ops, 2), *out;
	struct ctl_latency l;
	struct ctl_json j;

	parse_ok(text, &l);
	free(text);
	out = CAPTURE({
		ctl_json_init(&j, f);
		ctl_json_open(&j, NULL);
		ctl_render_latency_json(&j, &l);
		ctl_json_close(&j);
	});
	/* 6 puts: p50 is the 3rd (<= 32768), p95 and p99 the 6th, past 2^34 */
	assert_str(out, "{\"latency\":{"
		"\"put\":{\"count\":6,\"sum_ns\":93000,\"mean_ns\":15500,"
		"\"p50_ns\":32768,\"p95_ns\":null,\"p99_ns\":null},"
		"\"get_ssd\":{\"count\":0,\"sum_ns\":0,\"mean_ns\":null,"
		"\"p50_ns\":null,\"p95_ns\":null,\"p99_ns\":null}}}\n");
	free(out);

	l.err = -ENOENT;
	out = CAPTURE({
		ctl_json_init(&j, f);
		ctl_json_open(&j, NULL);
		ctl_render_latency_json(&j, &l);
		ctl_json_close(&j);
	});
	assert_str(out, "{\"latency\":null}\n");
	free(out);
}

FKV_TEST(humans_get_a_table_of_count_mean_and_percentiles)
{
	static const struct kop ops[] = {
		{ "put", 500000, { [3] = 90, [5] = 9, [KBOUNDS] = 1 } },
		{ "get_memory", 150000, { [1] = 50, [2] = 50 } },
		{ "get_ssd", 0, { 0 } },
	};
	char *text = kernel_text(ops, 3), *out;
	struct ctl_latency l;

	parse_ok(text, &l);
	free(text);
	out = CAPTURE(ctl_render_latency_human(f, &l));
	assert_str(out,
		"latency (pNN: upper bound of the log2 bucket it falls in)\n"
		"op                  count        mean         p50         p95         p99\n"
		"put                   100      5.0 us      8.2 us     32.8 us     32.8 us\n"
		"get_memory            100      1.5 us      2.0 us      4.1 us      4.1 us\n"
		"get_ssd                 0           -           -           -           -\n");
	free(out);

	l.err = -EPROTO;
	l.bad_line = 3;
	strcpy(l.path, "/dbg/latency");
	out = CAPTURE(ctl_render_latency_human(f, &l));
	assert_str(out, "latency: unavailable (/dbg/latency: line 3 is not the expected format)\n");
	free(out);
}

/* --- the file --------------------------------------------------------------------------- */

static char dbgdir[64];

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

FKV_TEST(the_file_is_read_from_the_debugfs_override_directory)
{
	static const struct kop ops[] = {
		{ "get_memory", 3072, { [0] = 1, [1] = 1 } },
	};
	char path[128], *text = kernel_text(ops, 1);
	struct ctl_latency l;
	FILE *f;

	strcpy(dbgdir, "/tmp/fkv-dbg-XXXXXX");
	FKV_ASSERT(mkdtemp(dbgdir));
	setenv(CTL_DEBUGFS_ENV, dbgdir, 1);
	snprintf(path, sizeof(path), "%s/latency", dbgdir);

	/* no file yet: -ENOENT, and the path for the message */
	FKV_ASSERT_EQ(ctl_latency_load(NULL, &l), -ENOENT);
	FKV_ASSERT_EQ(l.err, -ENOENT);
	assert_str(l.path, path);

	f = fopen(path, "w");
	FKV_ASSERT(f);
	fputs(text, f);
	FKV_ASSERT_EQ(fclose(f), 0);
	free(text);
	FKV_ASSERT_EQ(ctl_latency_load(NULL, &l), 0);
	FKV_ASSERT_EQ(l.nops, 1);
	FKV_ASSERT_EQ(l.op[0].count, 2);
	FKV_ASSERT_EQ(q(&l, 0.99), 2048);

	/* an empty override is no override */
	setenv(CTL_DEBUGFS_ENV, "", 1);
	assert_str(ctl_debugfs_dir(), "/sys/kernel/debug/fluxonkv");
	nftw(dbgdir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}
