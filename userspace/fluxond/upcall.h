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

struct nlmsghdr;

/* Bits of fkv_upcall.present / fkv_reply.present: 1 << FLUXONKV_A_*. */
#define FKV_ATTR(a)	(1U << (a))

/**
 * struct fkv_upcall - one decoded upcall.
 * @cmd: FLUXONKV_CMD_*.
 * @present: FKV_ATTR() of each attribute the message carried.
 * @key: points into the message; valid during the dispatch only.
 * @handles: FLUXONKV_A_HANDLES payload, @nhandles u64 values, possibly
 *	unaligned: read them with fkv_upcall_handle().
 * @attrs, @attrs_len: the message's whole attribute stream when it carries
 *	FLUXONKV_A_ENTRY (SSD_EVICTED); walk the entries with
 *	fkv_upcall_next_entry().
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
	uint64_t ssd_capacity;
	const void *handles;
	size_t nhandles;
	const void *attrs;
	size_t attrs_len;
	uint64_t offset;
	uint64_t deadline;	/* CLOCK_MONOTONIC ns the module waits until */
	/* The whole message, to forward it verbatim (cluster node role). */
	const struct nlmsghdr *nlh;
};

static inline uint64_t fkv_upcall_handle(const struct fkv_upcall *u, size_t i)
{
	uint64_t h;

	memcpy(&h, (const uint8_t *)u->handles + i * sizeof(h), sizeof(h));
	return h;
}

/*
 * One FLUXONKV_A_ENTRY of SSD_EVICTED {KEY, PUT_ID} or PUT_LOCAL {KEY,
 * PUT_ID, HANDLE, LEN, FLAGS}; @key points into the message, attributes
 * the entry lacks are 0.
 */
struct fkv_ssd_entry {
	const uint8_t *key;
	size_t key_len;
	uint64_t put_id;
	uint64_t handle;
	uint64_t len;
	uint32_t flags;
	uint64_t dropped;	/* PUT_LOCAL: the replaced, dropped replica */
};

/*
 * Next FLUXONKV_A_ENTRY of @u from byte *@pos of its attribute stream
 * (start with 0).  1: @e is a well-formed entry (KEY of 1..KEY_MAX bytes,
 * PUT_ID u64 > 0); -EINVAL: this entry is malformed and skipped, the walk
 * goes on; 0: no more entries (or the rest of the stream is truncated).
 * Needs no libnl: the attribute layout is the kernel's <linux/netlink.h>.
 */
int fkv_upcall_next_entry(const struct fkv_upcall *u, size_t *pos,
			  struct fkv_ssd_entry *e);

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
	uint32_t fd;		/* PUT_PLACE: a socket of ours (FLUXONKV_A_FD) */
};

#endif /* FLUXOND_UPCALL_H */
