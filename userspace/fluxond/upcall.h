/* SPDX-License-Identifier: GPL-2.0 */
/*
 * upcall.h - an upcall and its reply, decoded from / encoded to the
 * "fluxonkv" generic netlink family by nl.c, independent of libnl so the
 * dispatcher can be unit tested.
 */
#ifndef FLUXOND_UPCALL_H
#define FLUXOND_UPCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/fluxonkv.h>

/* Bits of fkv_upcall.present / fkv_reply.present: 1 << FLUXONKV_A_*. */
#define FKV_ATTR(a)	(1U << (a))

/**
 * struct fkv_upcall - one decoded upcall.
 * @cmd: FLUXONKV_CMD_*.
 * @present: FKV_ATTR() of each attribute the message carried.
 * @key: points into the message; valid during the dispatch only.
 * @handles: FLUXONKV_A_HANDLES payload, @nhandles u64 values, possibly
 *	unaligned: read them with fkv_upcall_handle().
 */
struct fkv_upcall {
	uint8_t cmd;
	uint32_t present;
	uint64_t req_id;
	const uint8_t *key;
	size_t key_len;
	uint64_t len;
	uint64_t put_id;
	uint64_t handle;
	uint32_t source;
	uint64_t bytes;
	uint64_t segment_used;
	int32_t error;
	const void *handles;
	size_t nhandles;
};

static inline uint64_t fkv_upcall_handle(const struct fkv_upcall *u, size_t i)
{
	uint64_t h;

	memcpy(&h, (const uint8_t *)u->handles + i * sizeof(h), sizeof(h));
	return h;
}

/**
 * struct fkv_reply - what to answer: REQ_ID and STATUS always, the other
 * attributes when their FKV_ATTR() bit is in @present (and STATUS is 0).
 */
struct fkv_reply {
	int32_t status;
	uint32_t present;
	uint64_t put_id;
	uint64_t handle;
	uint64_t len;
	uint32_t flags;
	uint32_t source;
};

#endif /* FLUXOND_UPCALL_H */
