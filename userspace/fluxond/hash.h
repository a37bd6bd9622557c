/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hash.h - hashing for fluxond's tables.
 *
 * Keys come from any process that may open /dev/fluxonkv, so the key table is
 * hashed with SipHash-2-4 under a per-table random secret (no hash flooding).
 * Handles are chosen by the module and are only mixed (fkv_mix64).
 */
#ifndef FLUXOND_HASH_H
#define FLUXOND_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FKV_SIPHASH_KEY_LEN	16

uint64_t fkv_siphash(const uint8_t secret[FKV_SIPHASH_KEY_LEN],
		     const void *data, size_t len);

/* Fill @secret from getrandom(); 0 or -errno. */
int fkv_hash_secret(uint8_t secret[FKV_SIPHASH_KEY_LEN]);

/* splitmix64's finalizer: a bijective 64-bit mixer. */
static inline uint64_t fkv_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#endif /* FLUXOND_HASH_H */
