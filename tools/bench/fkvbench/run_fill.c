// SPDX-License-Identifier: GPL-2.0
/*
 * fill: how full the DRAM segment stays under a 1..--size MiB mix.  Puts
 * of uniformly random sizes (4 KiB granules between 1 MiB and --size) to
 * --keys keys chosen uniformly, for --seconds after a warmup that fills
 * the segment once; the segment's fill factor (segment_used_bytes /
 * segment_capacity_bytes, sysfs) is sampled after every put.  Reports the
 * mean and minimum fill, the module's room waits, evictions and
 * compactions per put, the bytes compaction moved per byte put, the put
 * bandwidth, and put errors (ENOSPC with room free is fragmentation).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define FILL_SYSFS	"/sys/kernel/fluxonkv/"

static int sysfs_u64(const char *name, uint64_t *v)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), FILL_SYSFS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%" SCNu64, v) == 1;
	fclose(f);
	return ok ? 0 : -EIO;
}

struct fill_counters {
	uint64_t room_waits, room_by_address, evictions, compactions;
	uint64_t compacted_bytes;
};

static int fill_counters(struct fill_counters *c)
{
	return sysfs_u64("room_waits", &c->room_waits) ?:
	       sysfs_u64("room_by_address", &c->room_by_address) ?:
	       sysfs_u64("evictions", &c->evictions) ?:
	       sysfs_u64("compactions", &c->compactions) ?:
	       sysfs_u64("compacted_bytes", &c->compacted_bytes);
}

int bench_run_fill(const struct bench_opts *o, const struct bench_backend *be)
{
	const size_t mib = 1 << 20, grain = 4096;
	uint64_t cap, used, rnd = o->seed * 0x9e3779b97f4a7c15ull | 1;
	uint64_t t0, puts = 0, errors = 0, enospc = 0, samples = 0, bytes = 0;
	struct fill_counters c0, c1;
	double fill_sum = 0, fill_min = 1, secs;
	char key[BENCH_KEY_MAX];
	size_t max = o->size < mib ? mib : o->size;
	bool warm = false;
	void *conn, *val;
	int err;

	err = sysfs_u64("segment_capacity_bytes", &cap);
	if (err || !cap)
		return err ? err : -EIO;
	val = malloc(max);
	if (!val)
		return -ENOMEM;
	err = be->open(o, &conn);
	if (err) {
		free(val);
		return err;
	}
	memset(&c0, 0, sizeof(c0));
	t0 = bench_now_ns();
	for (;;) {
		uint64_t k, r;
		size_t len, kl;

		rnd ^= rnd << 13;
		rnd ^= rnd >> 7;
		rnd ^= rnd << 17;
		k = rnd % o->keys;
		r = (rnd >> 20) % ((max - mib) / grain + 1);
		len = mib + r * grain;
		kl = bench_key_name(key, sizeof(key), o->prefix, k);
		bench_fill(val, len, k);
		err = be->put(conn, key, kl, val, len);
		if (err == -ENOSPC)
			enospc++;
		if (err)
			errors++;
		if (sysfs_u64("segment_used_bytes", &used))
			break;
		if (!warm) {
			/* the first time the segment is full, start counting */
			if (used + max < cap && bench_now_ns() - t0 <
			    (uint64_t)(o->warmup_s * 60e9))
				continue;
			warm = true;
			if (fill_counters(&c0))
				break;
			t0 = bench_now_ns();
			puts = errors = enospc = 0;
			continue;
		}
		puts++;
		bytes += len;
		samples++;
		fill_sum += (double)used / cap;
		if ((double)used / cap < fill_min)
			fill_min = (double)used / cap;
		if (bench_now_ns() - t0 >= (uint64_t)(o->seconds * 1e9))
			break;
	}
	be->close(conn);
	free(val);
	if (!samples || fill_counters(&c1))
		return -EIO;
	secs = (bench_now_ns() - t0) / 1e9;
	printf("{\"phase\":\"fill\",%s%s\"keys\":%lu,\"size_min\":%zu,"
	       "\"size_max\":%zu,\"capacity\":%" PRIu64 ",\"puts\":%" PRIu64
	       ",\"put_errors\":%" PRIu64 ",\"enospc\":%" PRIu64 ","
	       "\"fill_mean\":%.4f,\"fill_min\":%.4f,"
	       "\"room_waits_per_put\":%.3f,\"by_address_per_put\":%.3f,"
	       "\"evictions_per_put\":%.3f,\"compactions_per_put\":%.3f,"
	       "\"compacted_per_put_byte\":%.3f,\"put_mib_s\":%.1f,"
	       "\"secs\":%.2f}\n",
	       o->label ? o->label : "", o->label ? "," : "", o->keys, mib, max,
	       cap, puts, errors, enospc, fill_sum / samples, fill_min,
	       (double)(c1.room_waits - c0.room_waits) / puts,
	       (double)(c1.room_by_address - c0.room_by_address) / puts,
	       (double)(c1.evictions - c0.evictions) / puts,
	       (double)(c1.compactions - c0.compactions) / puts,
	       bytes ? (double)(c1.compacted_bytes - c0.compacted_bytes) / bytes
		     : 0.0,
	       secs > 0 ? bytes / secs / mib : 0.0, secs);
	return fflush(stdout) ? -EIO : 0;
}
