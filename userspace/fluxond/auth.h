/* SPDX-License-Identifier: GPL-2.0 */
/*
 * auth.h - the cluster join's challenge and response.  The master sends a
 * random nonce; the node proves it knows the shared secret with
 * HMAC-SHA256(secret, nonce | node name | incarnation), so the secret
 * never crosses the network and a recorded answer is useless for another
 * nonce.  It authenticates members; it does not encrypt the traffic.
 */
#ifndef FLUXOND_AUTH_H
#define FLUXOND_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/cluster_msg.h"

/* A fresh random nonce; 0 or -errno. */
/* @len random bytes (getrandom): 0 or -errno. */
int fkv_auth_random(void *buf, size_t len);
int fkv_auth_nonce(uint8_t nonce[FKV_NONCE_LEN]);
/* A fresh random non-zero incarnation (a node's tomb tag); 0 or -errno. */
int fkv_auth_incarnation(uint64_t *inc);
/* The node's answer; 0 or -EIO. */
int fkv_auth_mac(const void *secret, size_t secret_len,
		 const uint8_t nonce[FKV_NONCE_LEN], const char *name,
		 uint64_t incarnation, uint8_t mac[FKV_MAC_LEN]);
/* The master's check, in constant time. */
bool fkv_auth_check(const void *secret, size_t secret_len,
		    const uint8_t nonce[FKV_NONCE_LEN], const char *name,
		    uint64_t incarnation, const uint8_t *mac, size_t mac_len);

#endif /* FLUXOND_AUTH_H */
