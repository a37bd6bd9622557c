// SPDX-License-Identifier: GPL-2.0
/*
 * auth.c - mutual authentication and the control seal (auth.h), with
 * OpenSSL's HMAC (EVP_MAC) and constant-time compare.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

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

/* HMAC, fetched once: EVP_MAC_fetch() is not cheap; the result is shared. */
static EVP_MAC *hmac;
static pthread_once_t hmac_once = PTHREAD_ONCE_INIT;

static void hmac_fetch(void)
{
	hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

struct part {
	const void *p;
	size_t len;
};

/* HMAC-SHA256(@key, the @n parts one after the other); 0 or -EIO. */
static int mac_parts(const void *key, size_t key_len, const struct part *parts,
		     unsigned int n, uint8_t out[FKV_MAC_LEN])
{
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						 (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC_CTX *ctx;
	size_t got = 0;
	unsigned int i;
	int ok;

	pthread_once(&hmac_once, hmac_fetch);
	if (!hmac || !key_len)
		return -EIO;
	ctx = EVP_MAC_CTX_new(hmac);
	if (!ctx)
		return -EIO;
	ok = EVP_MAC_init(ctx, key, key_len, params);
	for (i = 0; ok && i < n; i++)
		ok = EVP_MAC_update(ctx, parts[i].p, parts[i].len);
	ok = ok && EVP_MAC_final(ctx, out, &got, FKV_MAC_LEN) &&
	     got == FKV_MAC_LEN;
	EVP_MAC_CTX_free(ctx);
	return ok ? 0 : -EIO;
}

/* The label with its terminating NUL: no label is a prefix of another's input. */
static int mac_labeled(const void *secret, size_t secret_len,
		       const char *label, const uint8_t *a, const uint8_t *b,
		       const void *body, size_t body_len,
		       uint8_t out[FKV_MAC_LEN])
{
	struct part parts[] = {
		{ label, strlen(label) + 1 },
		{ a, FKV_NONCE_LEN },
		{ b, FKV_NONCE_LEN },
		{ body, body_len },
	};

	return mac_parts(secret, secret_len, parts, body ? 4 : 3, out);
}

int fkv_auth_msg_mac(const struct nlmsghdr *nlh, const void *secret,
		     size_t secret_len, const char *label,
		     const uint8_t a[FKV_NONCE_LEN],
		     const uint8_t b[FKV_NONCE_LEN], uint8_t mac[FKV_MAC_LEN])
{
	return mac_labeled(secret, secret_len, label, a, b, nlmsg_data(nlh),
			   nlh->nlmsg_len - NLMSG_HDRLEN, mac);
}

int fkv_auth_sign(struct nl_msg *msg, const void *secret, size_t secret_len,
		  const char *label, const uint8_t a[FKV_NONCE_LEN],
		  const uint8_t b[FKV_NONCE_LEN])
{
	uint8_t mac[FKV_MAC_LEN];
	int err;

	err = fkv_auth_msg_mac(nlmsg_hdr(msg), secret, secret_len, label, a, b,
			       mac);
	if (err)
		return err;
	err = nla_put(msg, FKV_CA_MAC, FKV_MAC_LEN, mac) ? -ENOBUFS : 0;
	OPENSSL_cleanse(mac, sizeof(mac));
	return err;
}

bool fkv_auth_verify(const struct nlmsghdr *nlh, const void *secret,
		     size_t secret_len, const char *label,
		     const uint8_t a[FKV_NONCE_LEN],
		     const uint8_t b[FKV_NONCE_LEN])
{
	const size_t tail = NLA_HDRLEN + FKV_MAC_LEN;
	const struct nlattr *mac;
	uint8_t want[FKV_MAC_LEN];
	bool ok;

	/* FKV_CA_MAC, whole, as the very last bytes of the message. */
	if (nlh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN + tail)
		return false;
	mac = (const struct nlattr *)((const uint8_t *)nlh + nlh->nlmsg_len -
				      tail);
	if (mac->nla_type != FKV_CA_MAC || mac->nla_len != tail)
		return false;
	if (mac_labeled(secret, secret_len, label, a, b, nlmsg_data(nlh),
			nlh->nlmsg_len - NLMSG_HDRLEN - tail, want))
		return false;
	ok = CRYPTO_memcmp(want, (const uint8_t *)mac + NLA_HDRLEN,
			   FKV_MAC_LEN) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}

int fkv_auth_session_key(const void *secret, size_t secret_len,
			 const char *label, const uint8_t a[FKV_NONCE_LEN],
			 const uint8_t b[FKV_NONCE_LEN],
			 uint8_t key[FKV_MAC_LEN])
{
	return mac_labeled(secret, secret_len, label, a, b, NULL, 0, key);
}

int fkv_auth_place_ticket(const uint8_t key[FKV_MAC_LEN], const void *k,
			  size_t key_len, uint64_t put_id, uint64_t len,
			  uint8_t ticket[FKV_MAC_LEN])
{
	uint64_t pid_le = htole64(put_id), len_le = htole64(len);
	uint32_t klen_le = htole32((uint32_t)key_len);
	struct part parts[] = {
		{ FKV_AUTH_PLACE_TICKET, sizeof(FKV_AUTH_PLACE_TICKET) },
		{ &pid_le, sizeof(pid_le) },
		{ &len_le, sizeof(len_le) },
		{ &klen_le, sizeof(klen_le) },
		{ k, key_len },
	};

	return mac_parts(key, FKV_MAC_LEN, parts, 5, ticket);
}

bool fkv_auth_place_check(const uint8_t key[FKV_MAC_LEN], const void *k,
			  size_t key_len, uint64_t put_id, uint64_t len,
			  const uint8_t ticket[FKV_MAC_LEN])
{
	uint8_t want[FKV_MAC_LEN];
	bool ok;

	ok = !fkv_auth_place_ticket(key, k, key_len, put_id, len, want) &&
	     !CRYPTO_memcmp(want, ticket, FKV_MAC_LEN);
	OPENSSL_cleanse(want, sizeof(want));
	return ok;
}

int fkv_auth_seal(const uint8_t key[FKV_MAC_LEN], uint64_t seq,
		  const void *buf, size_t len, uint8_t mac[FKV_MAC_LEN])
{
	uint64_t seq_le = htole64(seq);
	struct part parts[] = {
		{ &seq_le, sizeof(seq_le) },
		{ buf, len },
	};

	return mac_parts(key, FKV_MAC_LEN, parts, 2, mac);
}
