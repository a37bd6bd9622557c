// SPDX-License-Identifier: GPL-2.0
/*
 * Bootstrap: put keys 0..N-1 in order, one PUT at a time, optionally
 * rate-limited (--put-rate MiB/s) so that a tier writing to SSD in the
 * background keeps up.  Prints one JSON line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

static void sleep_until(uint64_t t)
{
	uint64_t now = bench_now_ns();
	struct timespec ts;

	if (now >= t)
		return;
	ts.tv_sec = (t - now) / 1000000000ull;
	ts.tv_nsec = (t - now) % 1000000000ull;
	nanosleep(&ts, NULL);
}

int bench_run_put(const struct bench_opts *o, const struct bench_backend *be)
{
	uint64_t t0, k, busy_ns = 0, errors = 0;
	double secs, per_put_ns = 0;
	char key[BENCH_KEY_MAX];
	void *conn, *val;
	int err;

	val = malloc(o->size + 8);
	if (!val)
		return -ENOMEM;
	err = be->open(o, &conn);
	if (err) {
		free(val);
		return err;
	}
	if (o->put_rate_mib > 0)
		per_put_ns = o->size / (o->put_rate_mib * 1048576.0) * 1e9;
	t0 = bench_now_ns();
	for (k = 0; k < o->keys; k++) {
		size_t kl = bench_key_name(key, sizeof(key), o->prefix, k);
		uint64_t a;

		bench_fill(val, o->size, k);
		a = bench_now_ns();
		err = be->put(conn, key, kl, val, o->size);
		busy_ns += bench_now_ns() - a;
		if (err) {
			fprintf(stderr, "fkvbench: put %s: %s\n", key, strerror(-err));
			errors++;
			if (errors > 8)
				break;
		}
		if (per_put_ns > 0)
			sleep_until(t0 + (uint64_t)((k + 1) * per_put_ns));
	}
	secs = (bench_now_ns() - t0) / 1e9;
	be->close(conn);
	free(val);
	printf("{\"phase\":\"bootstrap\",\"backend\":\"%s\",%s%s\"keys\":%lu,"
	       "\"size\":%zu,\"puts\":%" PRIu64 ",\"put_errors\":%" PRIu64 ","
	       "\"put_rate_limit_mib_s\":%.1f,\"secs\":%.3f,\"puts_per_s\":%.2f,"
	       "\"put_mib_per_s\":%.2f,\"put_busy_mean_us\":%.1f}\n",
	       be->name, o->label ? o->label : "", o->label ? "," : "",
	       o->keys, o->size, k - errors, errors, o->put_rate_mib, secs,
	       (k - errors) / secs, (k - errors) * (double)o->size / 1048576.0 / secs,
	       k ? busy_ns / 1e3 / k : 0);
	fflush(stdout);
	return errors ? -EIO : 0;
}
