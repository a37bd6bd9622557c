// SPDX-License-Identifier: GPL-2.0
/* Latency histogram (log-linear, 8 sub-buckets per power of two) and
 * /proc/diskstats sampling. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

unsigned int bench_lat_bucket(uint64_t ns)
{
	uint64_t v = ns ? ns : 1;
	int msb = 63 - __builtin_clzll(v);
	unsigned int b;

	if (msb < 3)
		return (unsigned int)v;
	b = (unsigned int)((msb - 2) * 8 + ((v >> (msb - 3)) & 7));
	return b < BENCH_LAT_BUCKETS ? b : BENCH_LAT_BUCKETS - 1;
}

/* Upper edge of bucket @b in ns (a conservative percentile). */
static uint64_t bucket_top_ns(unsigned int b)
{
	unsigned int msb;

	if (b < 8)
		return b + 1;
	msb = b / 8 + 2;
	return ((uint64_t)(8 + b % 8 + 1)) << (msb - 3);
}

double bench_lat_pct_us(const uint64_t *lat, double pct)
{
	uint64_t total = 0, seen = 0, want;
	unsigned int b;

	for (b = 0; b < BENCH_LAT_BUCKETS; b++)
		total += lat[b];
	if (!total)
		return 0;
	want = (uint64_t)ceil(total * pct / 100.0);
	for (b = 0; b < BENCH_LAT_BUCKETS; b++) {
		seen += lat[b];
		if (seen >= want)
			return bucket_top_ns(b) / 1e3;
	}
	return bucket_top_ns(BENCH_LAT_BUCKETS - 1) / 1e3;
}

void bench_disk_sample(const char *name, struct bench_disk *d)
{
	unsigned long long rd, rdm, rsec, rms, wr, wrm, wsec;
	char line[512], dev[64];
	FILE *f;

	memset(d, 0, sizeof(*d));
	if (!name || !*name)
		return;
	f = fopen("/proc/diskstats", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*u %*u %63s %llu %llu %llu %llu %llu %llu %llu",
			   dev, &rd, &rdm, &rsec, &rms, &wr, &wrm, &wsec) != 8)
			continue;
		if (strcmp(dev, name))
			continue;
		d->valid = true;
		d->reads = rd;
		d->read_bytes = rsec * 512;
		d->writes = wr;
		d->write_bytes = wsec * 512;
		break;
	}
	fclose(f);
}
