/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tenant.h - the tenant of an internal key (uapi "Tenants"): tenant T's
 * key K is 0x00 'T' <T, 4 bytes big-endian> K in the module's index, the
 * master's routes, the SSD ring and between nodes; tenant 0's keys have
 * no prefix.  The master learns a route's tenant from its key alone.
 */
#ifndef FLUXONKV_COMMON_TENANT_H
#define FLUXONKV_COMMON_TENANT_H

#include <stddef.h>
#include <stdint.h>

#include <linux/fluxonkv.h>

/*
 * The tenant of @key (@len bytes) and, in *@prefix (if not NULL), how
 * many of its bytes are the prefix.  A key that starts with 0x00 'T' but
 * is too short for a prefix and one more byte is tenant 0's (no module
 * makes one).
 */
static inline uint32_t fkv_key_tenant(const void *key, size_t len,
				      size_t *prefix)
{
	const uint8_t *k = key;

	if (len <= FLUXONKV_TENANT_PREFIX_LEN ||
	    k[0] != FLUXONKV_TENANT_TAG0 || k[1] != FLUXONKV_TENANT_TAG1) {
		if (prefix)
			*prefix = 0;
		return 0;
	}
	if (prefix)
		*prefix = FLUXONKV_TENANT_PREFIX_LEN;
	return (uint32_t)k[2] << 24 | (uint32_t)k[3] << 16 |
	       (uint32_t)k[4] << 8 | k[5];
}

/* Write tenant @tenant's prefix into @buf (FLUXONKV_TENANT_PREFIX_LEN). */
static inline void fkv_tenant_prefix(uint8_t *buf, uint32_t tenant)
{
	buf[0] = FLUXONKV_TENANT_TAG0;
	buf[1] = FLUXONKV_TENANT_TAG1;
	buf[2] = tenant >> 24;
	buf[3] = tenant >> 16;
	buf[4] = tenant >> 8;
	buf[5] = tenant;
}

#endif /* FLUXONKV_COMMON_TENANT_H */
