// SPDX-License-Identifier: GPL-2.0
/*
 * auth.c - cluster join challenge and response (auth.h), with OpenSSL's
 * HMAC and constant-time compare.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth.h"

static int fill_random(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t got = getrandom(p, n, 0);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int fkv_auth_random(void *buf, size_t len)
{
	return fill_random(buf, len);
}

int fkv_auth_nonce(uint8_t nonce[FKV_NONCE_LEN])
{
	return fill_random(nonce, FKV_NONCE_LEN);
}

int fkv_auth_incarnation(uint64_t *inc)
{
	int err;

	do {
		err = fill_random(inc, sizeof(*inc));
	} while (!err && !*inc);
	return err;
}

int fkv_auth_mac(const void *secret, size_t secret_len,
		 const uint8_t nonce[FKV_NONCE_LEN], const char *name,
		 uint64_t incarnation, uint8_t mac[FKV_MAC_LEN])
{
	size_t name_len = strnlen(name, FKV_NODE_NAME_MAX);
	uint8_t msg[FKV_NONCE_LEN + FKV_NODE_NAME_MAX + 1 + sizeof(uint64_t)];
	uint64_t inc_le = htole64(incarnation);
	unsigned int out = 0;
	size_t n = 0;

	memcpy(msg, nonce, FKV_NONCE_LEN);
	n += FKV_NONCE_LEN;
	memcpy(msg + n, name, name_len);
	n += name_len;
	msg[n++] = 0;	/* the name cannot run into the incarnation */
	memcpy(msg + n, &inc_le, sizeof(inc_le));
	n += sizeof(inc_le);
	if (!HMAC(EVP_sha256(), secret, (int)secret_len, msg, n, mac, &out) ||
	    out != FKV_MAC_LEN)
		return -EIO;
	return 0;
}

bool fkv_auth_check(const void *secret, size_t secret_len,
		    const uint8_t nonce[FKV_NONCE_LEN], const char *name,
		    uint64_t incarnation, const uint8_t *mac, size_t mac_len)
{
	uint8_t want[FKV_MAC_LEN];
	bool ok;

	if (mac_len != FKV_MAC_LEN || !secret_len ||
	    fkv_auth_mac(secret, secret_len, nonce, name, incarnation, want))
		return false;
	ok = CRYPTO_memcmp(want, mac, FKV_MAC_LEN) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}
