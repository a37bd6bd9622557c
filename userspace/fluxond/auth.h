/* SPDX-License-Identifier: GPL-2.0 */
/*
 * auth.h - mutual authentication of cluster connections with the shared
 * secret, and the seal of every control message after it.
 *
 * Both ends send a random nonce; each end signs the message that answers
 * the other's nonce with HMAC-SHA256(secret, label | its nonces | the
 * message's genl header and every attribute before FKV_CA_MAC, which is
 * the last).  The label says which message of which port and in which
 * direction a MAC is for, so that no MAC passes for another; the nonces
 * make a recorded answer useless on another connection; the MAC over the
 * whole message covers every field of a JOIN and of its answer.  The
 * secret never crosses the network.
 *
 * After a control JOIN both ends derive one key per direction from the
 * secret and both nonces, and seal every further message on that
 * connection (wire.h: fkv_wire_seal) with HMAC-SHA256(key, sequence
 * number | message): a message injected, altered, replayed, reordered or
 * sent to the other direction fails its seal and closes the connection.
 * Nothing is encrypted; the data port authenticates both ends at connect
 * and does not seal payloads (cluster.md, trust model).
 */
#ifndef FLUXOND_AUTH_H
#define FLUXOND_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/cluster_msg.h"

struct nl_msg;
struct nlmsghdr;

/* The handshake's version (FKV_CA_PROTO in HELLO); 1 had one-way MACs. */
#define FKV_AUTH_PROTO		2

/* What each MAC is for. */
#define FKV_AUTH_CTL_JOIN	"fluxonkv/2 control join"
#define FKV_AUTH_CTL_JOINED	"fluxonkv/2 control joined"
#define FKV_AUTH_CTL_M2N	"fluxonkv/2 control master to node"
#define FKV_AUTH_CTL_N2M	"fluxonkv/2 control node to master"
#define FKV_AUTH_DATA_JOIN	"fluxonkv/2 data join"
#define FKV_AUTH_DATA_JOINED	"fluxonkv/2 data joined"
/* The key a master and one node share for placement tickets, ... */
#define FKV_AUTH_PLACE_KEY	"fluxonkv/2 place key"
/* ... and what a ticket's MAC is for. */
#define FKV_AUTH_PLACE_TICKET	"fluxonkv/2 place ticket"

/* @len random bytes (getrandom): 0 or -errno. */
int fkv_auth_random(void *buf, size_t len);
/* A fresh random nonce; 0 or -errno. */
int fkv_auth_nonce(uint8_t nonce[FKV_NONCE_LEN]);
/* A fresh random non-zero incarnation (a node's tomb tag); 0 or -errno. */
int fkv_auth_incarnation(uint64_t *inc);

/*
 * The MAC of @nlh as it stands (genl header and every attribute):
 * HMAC(secret, @label | @a | @b | those bytes); 0 or -EIO.
 */
int fkv_auth_msg_mac(const struct nlmsghdr *nlh, const void *secret,
		     size_t secret_len, const char *label,
		     const uint8_t a[FKV_NONCE_LEN],
		     const uint8_t b[FKV_NONCE_LEN], uint8_t mac[FKV_MAC_LEN]);
/*
 * Append FKV_CA_MAC to @msg (it must be the last attribute put):
 * HMAC(secret, @label | @a | @b | genl header and attributes).  0 or
 * -errno (-ENOBUFS: no room left in @msg).
 */
int fkv_auth_sign(struct nl_msg *msg, const void *secret, size_t secret_len,
		  const char *label, const uint8_t a[FKV_NONCE_LEN],
		  const uint8_t b[FKV_NONCE_LEN]);
/*
 * @nlh ends with an FKV_CA_MAC that fkv_auth_sign() with the same
 * arguments would have put (compared in constant time).
 */
bool fkv_auth_verify(const struct nlmsghdr *nlh, const void *secret,
		     size_t secret_len, const char *label,
		     const uint8_t a[FKV_NONCE_LEN],
		     const uint8_t b[FKV_NONCE_LEN]);
/* A direction's session key: HMAC(secret, @label | @a | @b); 0 or -EIO. */
int fkv_auth_session_key(const void *secret, size_t secret_len,
			 const char *label, const uint8_t a[FKV_NONCE_LEN],
			 const uint8_t b[FKV_NONCE_LEN],
			 uint8_t key[FKV_MAC_LEN]);
/*
 * A placement ticket (cluster.md, "Placement tickets"): the master
 * answers a PUT_PLACE with HMAC(@key, label | put_id | len | key_len |
 * key), @key the one it shares with the target node; the target makes a
 * replica only for a PLACE whose ticket matches (constant time).
 */
int fkv_auth_place_ticket(const uint8_t key[FKV_MAC_LEN], const void *k,
			  size_t key_len, uint64_t put_id, uint64_t len,
			  uint8_t ticket[FKV_MAC_LEN]);
bool fkv_auth_place_check(const uint8_t key[FKV_MAC_LEN], const void *k,
			  size_t key_len, uint64_t put_id, uint64_t len,
			  const uint8_t ticket[FKV_MAC_LEN]);
/* The seal of message @seq (wire.h's fkv_wire_mac_fn); 0 or -EIO. */
int fkv_auth_seal(const uint8_t key[FKV_MAC_LEN], uint64_t seq,
		  const void *buf, size_t len, uint8_t mac[FKV_MAC_LEN]);

#endif /* FLUXOND_AUTH_H */
