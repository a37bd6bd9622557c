/* SPDX-License-Identifier: GPL-2.0 */
/*
 * prom_expo.h - a checker of the Prometheus text exposition format for the
 * unit tests of fluxonctl's --prometheus output (include after fkv_test.h).
 *
 * Every family has HELP then TYPE (gauge, counter, untyped or histogram),
 * once; names are valid; counters and only counters end in _total; a
 * gauge/counter/untyped family has samples named as the family, one per
 * label set (one only without labels).  A
 * histogram family has, per label set, _bucket samples with le strictly
 * increasing and ending at "+Inf", cumulative counts that never decrease,
 * then _sum, then _count equal to the +Inf bucket.
 */
#ifndef FLUXONKV_TESTS_PROM_EXPO_H
#define FLUXONKV_TESTS_PROM_EXPO_H

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct prom_expo_result {
	int samples;
	int histogram_series;	/* label sets of histograms checked */
};

/* The name of a sample or HELP/TYPE line ("name{labels} value"). */
static void prom_expo_name(const char *line, char *name, size_t len)
{
	size_t n = strcspn(line, "{ ");

	FKV_ASSERT(n < len, "%s", line);
	memcpy(name, line, n);
	name[n] = '\0';
}

static bool prom_expo_ends(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* @line's labels without the le one into @series, its le into @le. */
static void prom_expo_split_le(const char *line, char *series, size_t slen,
			       char *le, size_t llen)
{
	const char *open = strchr(line, '{'), *close = strchr(line, '}');
	const char *l = open ? strstr(open, "le=\"") : NULL, *q;
	size_t n;

	FKV_ASSERT(open && close && l && l < close, "bucket without le: %s",
		   line);
	q = strchr(l + 4, '"');
	FKV_ASSERT(q && q < close, "%s", line);
	FKV_ASSERT((size_t)(q - l - 4) < llen);
	memcpy(le, l + 4, q - l - 4);
	le[q - l - 4] = '\0';
	/* the labels before le="..." (and its comma), then those after */
	n = snprintf(series, slen, "%.*s", (int)(l - open - 1), open + 1);
	FKV_ASSERT(n < slen);
	if (n && series[n - 1] == ',')
		series[--n] = '\0';
	snprintf(series + n, slen - n, "%.*s", (int)(close - q - 1), q + 1);
}

/* The labels of a _sum/_count sample, "" if none. */
static void prom_expo_labels(const char *line, char *series, size_t slen)
{
	const char *open = strchr(line, '{'), *close = strchr(line, '}');

	if (!open) {
		series[0] = '\0';
		return;
	}
	FKV_ASSERT(close && (size_t)(close - open - 1) < slen, "%s", line);
	snprintf(series, slen, "%.*s", (int)(close - open - 1), open + 1);
}

static struct prom_expo_result prom_expo_check(char *text)
{
	struct prom_expo_result r = { 0 };
	char family[128] = "", type[16] = "", name[128], seen[4096] = ",";
	char series[256] = "", cur[256] = "", le[64], key[260];
	char seen_series[4096] = "|";
	/* histogram state of the current label set */
	enum { H_NONE, H_BUCKETS, H_SUM, H_DONE } h = H_NONE;
	double last_le = -INFINITY;
	unsigned long long cum = 0, v;
	int family_samples = 0, n;
	char *line, *save, *end;
	const char *c;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "# HELP ", 7)) {
			FKV_ASSERT(h == H_NONE || h == H_DONE,
				   "histogram %s ends inside a series", family);
			prom_expo_name(line + 7, family, sizeof(family));
			FKV_ASSERT(strlen(line) > 8 + strlen(family), "%s", line);
			snprintf(key, sizeof(key), ",%s,", family);
			FKV_ASSERT(!strstr(seen, key), "family twice: %s", family);
			FKV_ASSERT(strlen(seen) + strlen(family) + 2 < sizeof(seen));
			strcat(strcat(seen, family), ",");
			type[0] = '\0';
			family_samples = 0;
			h = H_NONE;
			cur[0] = '\0';
			strcpy(seen_series, "|");
			continue;
		}
		if (!strncmp(line, "# TYPE ", 7)) {
			prom_expo_name(line + 7, name, sizeof(name));
			FKV_ASSERT(!strcmp(name, family), "TYPE without HELP: %s", line);
			n = sscanf(line + 8 + strlen(name), "%15s", type);
			FKV_ASSERT_EQ(n, 1);
			FKV_ASSERT(!strcmp(type, "gauge") || !strcmp(type, "counter") ||
				   !strcmp(type, "untyped") ||
				   !strcmp(type, "histogram"), "%s", line);
			continue;
		}
		FKV_ASSERT(line[0] != '#', "stray comment: %s", line);
		FKV_ASSERT(type[0], "sample before its TYPE: %s", line);
		prom_expo_name(line, name, sizeof(name));
		FKV_ASSERT(isalpha((unsigned char)name[0]) || name[0] == '_');
		for (c = name; *c; c++)
			FKV_ASSERT(isalnum((unsigned char)*c) || *c == '_', "%s", name);
		FKV_ASSERT(!strcmp(type, "counter") == prom_expo_ends(name, "_total"),
			   "counter naming: %s is a %s", name, type);
		c = strrchr(line, ' ');
		FKV_ASSERT(c && isdigit((unsigned char)c[1]), "%s", line);
		r.samples++;
		family_samples++;
		if (strcmp(type, "histogram")) {
			FKV_ASSERT(!strcmp(name, family),
				   "sample outside its family: %s", line);
			/* one sample per label set (unlabelled: just one) */
			prom_expo_labels(line, series, sizeof(series));
			snprintf(key, sizeof(key), "|%s|", series);
			FKV_ASSERT(family_samples == 1 ||
				   (series[0] && !strstr(seen_series, key)),
				   "sample twice: %s", line);
			FKV_ASSERT(strlen(seen_series) + strlen(key) <
				   sizeof(seen_series));
			strcat(seen_series, key + 1);
			continue;
		}

		/* a histogram: counts are integers, _sum may be a decimal */
		errno = 0;
		v = strtoull(c + 1, &end, 10);
		if (!strncmp(name, family, strlen(family)) &&
		    !strcmp(name + strlen(family), "_bucket")) {
			FKV_ASSERT(!*end && !errno, "%s", line);
			prom_expo_split_le(line, series, sizeof(series), le,
					   sizeof(le));
			if (h == H_NONE || h == H_DONE) {
				snprintf(key, sizeof(key), "|%s|", series);
				FKV_ASSERT(!strstr(seen_series, key),
					   "series {%s} twice", series);
				FKV_ASSERT(strlen(seen_series) + strlen(key) <
					   sizeof(seen_series));
				strcat(seen_series, key + 1);
				strcpy(cur, series);
				h = H_BUCKETS;
				last_le = -INFINITY;
				cum = 0;
			}
			FKV_ASSERT(h == H_BUCKETS && !strcmp(cur, series),
				   "bucket out of its series: %s", line);
			FKV_ASSERT(last_le != INFINITY, "bucket past +Inf: %s", line);
			{
				double x = strcmp(le, "+Inf") ? strtod(le, &end) :
					   INFINITY;

				FKV_ASSERT(x == INFINITY || !*end, "le: %s", line);
				FKV_ASSERT(x > last_le, "le not increasing: %s", line);
				last_le = x;
			}
			FKV_ASSERT(v >= cum, "buckets not cumulative: %s", line);
			cum = v;
		} else if (!strncmp(name, family, strlen(family)) &&
			   !strcmp(name + strlen(family), "_sum")) {
			prom_expo_labels(line, series, sizeof(series));
			FKV_ASSERT(h == H_BUCKETS && last_le == INFINITY &&
				   !strcmp(cur, series),
				   "_sum without its +Inf bucket: %s", line);
			strtod(c + 1, &end);
			FKV_ASSERT(!*end, "%s", line);
			h = H_SUM;
		} else if (!strncmp(name, family, strlen(family)) &&
			   !strcmp(name + strlen(family), "_count")) {
			prom_expo_labels(line, series, sizeof(series));
			FKV_ASSERT(h == H_SUM && !strcmp(cur, series),
				   "_count without its _sum: %s", line);
			FKV_ASSERT(!*end && !errno, "%s", line);
			FKV_ASSERT(v == cum, "_count %llu != +Inf bucket %llu",
				   v, cum);
			h = H_DONE;
			r.histogram_series++;
		} else {
			FKV_ASSERT(0, "sample outside its histogram: %s", line);
		}
	}
	FKV_ASSERT(h == H_NONE || h == H_DONE, "text ends inside a histogram");
	FKV_ASSERT_GT(r.samples, 0);
	return r;
}

#endif /* FLUXONKV_TESTS_PROM_EXPO_H */
