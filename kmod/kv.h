/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the put, get, room and cluster-transfer files of the kv flows
 * (kv.c, kv_put.c, kv_get.c, kv_room.c, kv_xfer.c) share with each other
 * and with nobody else.  kv.c's top comment describes the flows, and how a
 * version is numbered and published.
 */
#ifndef _FLUXONKV_KV_H
#define _FLUXONKV_KV_H

#include "fluxonkv.h"

/* kv_room.c: room in the segment, waiting for it (NEED_ROOM). */
struct fluxonkv_alloc *fluxonkv_alloc_room_for(u64 len, bool placeable);
struct fluxonkv_alloc *fluxonkv_alloc_room(u64 len);
void fluxonkv_refill_room_wait(struct fluxonkv_refill *rf, u64 len);
bool fluxonkv_clean_room(u64 len);

/* kv_put.c */
void fluxonkv_put_late_init(void);
void fluxonkv_put_late_flush(void);

/* kv_get.c */
void fluxonkv_revokes_init(void);
void fluxonkv_revokes_flush(void);
int fluxonkv_grant(struct fluxonkv_session *s, struct fluxonkv_alloc *a,
		   u64 put_id, u32 source, struct fluxonkv_get_result *res);
void fluxonkv_get_revoke(const u8 *key, u32 key_len, u64 put_id,
			 u32 source, u64 handle, int err);
int fluxonkv_refill_submit(struct fluxonkv_refill *rf,
			   struct fluxonkv_alloc *a, u64 len);

/* kv_xfer.c: transfers between nodes (FETCH, TARGET, PUBLISH, stage) */
void fluxonkv_publish_persists_init(void);
void fluxonkv_publish_persists_flush(void);
int fluxonkv_get_remote(struct fluxonkv_session *s, const u8 *key,
			u32 key_len, const struct fluxonkv_upcall *start,
			struct fluxonkv_get_result *res);

#endif /* _FLUXONKV_KV_H */
