// SPDX-License-Identifier: GPL-2.0
/*
 * hash.c - SipHash-2-4 (Aumasson & Bernstein), 64-bit output.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "hash.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND(v0, v1, v2, v3)					\
	do {								\
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0;			\
		v0 = ROTL(v0, 32);					\
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;			\
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;			\
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2;			\
		v2 = ROTL(v2, 32);					\
	} while (0)

static uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t fkv_siphash(const uint8_t secret[FKV_SIPHASH_KEY_LEN],
		     const void *data, size_t len)
{
	const uint8_t *in = data;
	uint64_t k0 = load_le64(secret), k1 = load_le64(secret + 8);
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0;
	uint64_t v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0;
	uint64_t v3 = 0x7465646279746573ULL ^ k1;
	uint64_t b = (uint64_t)len << 56, m;
	size_t left = len & 7, i;
	const uint8_t *end = in + (len - left);

	for (; in != end; in += 8) {
		m = load_le64(in);
		v3 ^= m;
		SIPROUND(v0, v1, v2, v3);
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (i = 0; i < left; i++)
		b |= (uint64_t)in[i] << (8 * i);
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

int fkv_hash_secret(uint8_t secret[FKV_SIPHASH_KEY_LEN])
{
	size_t got = 0;

	while (got < FKV_SIPHASH_KEY_LEN) {
		ssize_t n = getrandom(secret + got, FKV_SIPHASH_KEY_LEN - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	return 0;
}
