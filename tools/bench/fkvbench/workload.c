// SPDX-License-Identifier: GPL-2.0
/*
 * Value contents and the key sequence.  Both are pure functions of their
 * inputs, so every backend, thread layout and rerun sees the same bytes and
 * the same keys: op i of worker w picks the Zipf rank derived from
 * mix(seed ^ mix(w << 40 | i)); the rank maps to a key through a fixed
 * permutation (--rank-map shuffle, the default) so that popularity does not
 * follow the bootstrap's put order, or through the identity.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* splitmix64 (the same function fkvload uses). */
uint64_t bench_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t bench_word(uint64_t key, size_t w)
{
	return bench_mix((key << 32) ^ w);
}

void bench_fill(void *v, size_t size, uint64_t key)
{
	size_t w, n = size / 8;
	uint64_t last;

	for (w = 0; w < n; w++) {
		uint64_t x = bench_word(key, w);

		memcpy((char *)v + w * 8, &x, 8);
	}
	if (size % 8) {
		last = bench_word(key, n);
		memcpy((char *)v + n * 8, &last, size % 8);
	}
}

/* Length, first and last whole word: two cache lines, no full read. */
bool bench_check_ends(const void *data, size_t len, size_t want, uint64_t key)
{
	uint64_t a, b;
	size_t n = len / 8;

	if (len != want || n == 0)
		return false;
	memcpy(&a, data, 8);
	memcpy(&b, (const char *)data + (n - 1) * 8, 8);
	return a == bench_word(key, 0) && b == bench_word(key, n - 1);
}

int bench_keys_init(struct bench_keys *k, const struct bench_opts *o)
{
	double sum = 0;
	unsigned long i;

	memset(k, 0, sizeof(*k));
	k->n = o->keys;
	k->seed = o->seed;
	k->prefix = o->prefix;
	k->scan = o->scan;
	k->workers = o->workers ? o->workers : 1;
	k->cdf = malloc(k->n * sizeof(*k->cdf));
	k->perm = malloc(k->n * sizeof(*k->perm));
	if (!k->cdf || !k->perm) {
		bench_keys_free(k);
		return -ENOMEM;
	}
	for (i = 0; i < k->n; i++) {
		sum += 1.0 / pow((double)(i + 1), o->zipf);
		k->cdf[i] = sum;
	}
	for (i = 0; i < k->n; i++) {
		k->cdf[i] /= sum;
		k->perm[i] = (uint32_t)i;
	}
	if (o->shuffle) {
		/* Fisher-Yates driven by the same mixer, seeded apart. */
		for (i = k->n - 1; i > 0; i--) {
			uint64_t j = bench_mix(0x5eedull ^ (i << 8)) % (i + 1);
			uint32_t t = k->perm[i];

			k->perm[i] = k->perm[j];
			k->perm[j] = t;
		}
	}
	return 0;
}

void bench_keys_free(struct bench_keys *k)
{
	free(k->cdf);
	free(k->perm);
	k->cdf = NULL;
	k->perm = NULL;
}

uint64_t bench_key_at(const struct bench_keys *k, unsigned int worker,
		      uint64_t op)
{
	uint64_t r = bench_mix(k->seed ^ bench_mix(((uint64_t)worker << 40) | op));
	double u = (double)(r >> 11) / (double)(1ull << 53);
	unsigned long lo = 0, hi = k->n - 1;

	if (k->scan)
		return (op * k->workers + worker) % k->n;
	while (lo < hi) {
		unsigned long mid = lo + (hi - lo) / 2;

		if (k->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return k->perm[lo];
}

size_t bench_key_name(char *buf, size_t cap, const char *prefix, uint64_t key)
{
	return (size_t)snprintf(buf, cap, "%s%" PRIu64, prefix, key);
}
