// SPDX-License-Identifier: GPL-2.0
/*
 * put / get / delete: the owner's side of the reference design's flows
 * (§3 write, §4 read, §7.3 delete) for the DRAM tier.  By flow:
 *
 *   kv_put.c   the three put protocols, and a put placed on another node
 *   kv_get.c   gets: the local index, the master's or the local SSD route,
 *              SSD refills (synchronous and io_uring's asynchronous one)
 *   kv_xfer.c  transfers between nodes: FETCH, HOLD, SSD staging, TARGET,
 *              PUBLISH and the persists they ask for
 *   kv_room.c  the room wait: compaction, then the master's NEED_ROOM
 *   kv.c       this: setup, delete, lookup
 *
 * put:    PUT_START (master assigns put_id) -> allocate a range (asking the
 *         master for room, §4.1) -> copy the value in -> PUT_DONE (master
 *         publishes; the answer handler indexes it) -> return.  With a
 *         master of several nodes that takes puts in one message
 *         (FLUXONKV_REGISTER_F_ONE_TRIP): allocate -> copy in -> PUT (the
 *         master numbers and publishes it) -> return; PUT_START only when
 *         this node has no room.  With a master that delegates puts
 *         (FLUXONKV_REGISTER_F_LOCAL_PUTS): allocate -> copy in -> index it
 *         under a put_id of our own -> start the SSD write -> return; the
 *         master learns of it from a batched PUT_LOCAL note, sent before
 *         anything else we send.
 * get:    local index hit -> holder, no upcall (an ACCESS note is batched
 *         for the master's eviction policy); miss -> GET_START, or with a
 *         local-routes master (uapi FLUXONKV_REGISTER_F_LOCAL_ROUTES) the
 *         SSD entry it routes to, else -ENOENT, without asking; an SSD
 *         refill ends with an asynchronous GET_DONE (promotion).
 * delete: DELETE; the master drops the route's replicas before answering.
 *
 * Numbering and publication, for every flow (the one place they are
 * described; replica.c implements them):
 *
 *   A version's number is its put_id; a newer version of a key has a
 *   larger one.  fluxonkv_put_id_max is the largest put_id this node has
 *   seen or drawn: every put_id the master assigns is noted in it
 *   (fluxonkv_put_id_note(): PUT_START's answer, a TARGET, a one-trip
 *   put's answer), and numbers drawn here are drawn above it.
 *
 *   - two trips: PUT_START's answer numbers the put before its range is
 *     allocated; the replica is made under that number, and PUT_DONE's
 *     answer handler publishes it (fluxonkv_replica_publish()).
 *   - one trip: the replica is made under a number drawn only for its
 *     handle, then unnumbered (put_id 0) until PUT's answer, whose handler
 *     numbers it (fluxonkv_replica_number()) and then publishes it.  Until
 *     then the master, which routes to it as soon as it publishes, finds
 *     it by handle and key.
 *   - local puts: the put_id is drawn under the index lock as the replica
 *     enters the index (fluxonkv_replica_publish_local()), so versions of
 *     a key enter it in put_id order and a put that finishes later is the
 *     newer version; the version replaced is dropped at once and named in
 *     the PUT_LOCAL note.
 *   - TARGET / PUBLISH (a put another node placed here): numbered by the
 *     master at TARGET, published at PUBLISH.
 *   - refills and FETCH targets: the version read, published as a replica
 *     at once and offered to the master (GET_DONE), which promotes it or
 *     leaves it a temporary holder.
 *
 *   Publication is the replica entering the index under the index lock
 *   (fluxonkv_index_lock), and only if it is still in the handle table (a
 *   drop that came first is never resurrected) and no newer version is
 *   indexed.  A published replica is what a local get finds; the master's
 *   route is its own, and a replica it routes to but that was dropped here
 *   is revoked (GET_REVOKE) and the source re-selected.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "kv.h"

int fluxonkv_kv_init(void)
{
	int ret = fluxonkv_notes_init();

	if (ret)
		return ret;
	fluxonkv_publish_persists_init();
	fluxonkv_put_late_init();
	fluxonkv_revokes_init();
	return 0;
}

/* No more gets (the device is gone): send or end the queued offers. */
void fluxonkv_kv_quiesce(void)
{
	fluxonkv_notes_quiesce();
	fluxonkv_publish_persists_flush();
	/* no ring get is left to queue one (the device is gone) */
	fluxonkv_revokes_flush();
}

/*
 * The daemon's teardown (genl exit) ended every abandoned put: finish them
 * while the SSD tier still exists (a published one may persist).
 */
void fluxonkv_kv_flush_late(void)
{
	fluxonkv_put_late_flush();
	/* a PERSIST handled before the family went may have queued one */
	fluxonkv_publish_persists_flush();
}

void fluxonkv_kv_exit(void)
{
	fluxonkv_clean_reserve_stop();
	fluxonkv_notes_exit();
	fluxonkv_kv_quiesce();
	fluxonkv_kv_flush_late();
}

/* Return: 0, -ENOENT if the key had no route, or -errno. */
int fluxonkv_delete(const u8 *key, u32 key_len)
{
	struct fluxonkv_upcall_args args = { .key = key, .key_len = key_len };
	struct fluxonkv_upcall up = { .key = key, .key_len = key_len };
	int ret;

	ret = fluxonkv_upcall(FLUXONKV_CMD_DELETE, &args, &up);
	if (!ret)
		fluxonkv_stat_inc(deletes);
	return ret;
}

/**
 * fluxonkv_lookup() - where a get of @key would read it, without getting it.
 * @key: key bytes.
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @res: out: len, put_id and source (holder_id and offset stay 0).
 *
 * The local index and SSD routes first, as a get; with local routes a
 * stable miss is answered here; otherwise the master reads its route
 * (LOOKUP: no hold, no eviction touch).  Nothing is pinned, refilled or
 * counted as an access.
 *
 * Return: 0, -ENOENT if the key has no value, or -errno (-ENOTCONN without
 * a daemon, as for get, unless the lease it left covers a local copy).
 */
int fluxonkv_lookup(const u8 *key, u32 key_len,
		    struct fluxonkv_get_result *res)
{
	struct fluxonkv_upcall_args args = { .key = key, .key_len = key_len };
	struct fluxonkv_upcall up = { };
	u32 flags = res->flags;
	bool local, unsure = false;
	unsigned int seq = 0;
	int ret;

	memset(res, 0, sizeof(*res));
	res->flags = flags;
	/* Without a daemon: what the lease it left still covers, as a get. */
	if (!fluxonkv_daemon_connected() && !fluxonkv_lease_serves_alone())
		return -ENOTCONN;
	local = fluxonkv_daemon_local_routes();
	if (local)
		seq = fluxonkv_look_begin(key, key_len, &unsure);
	if (fluxonkv_index_peek(key, key_len, &res->put_id, &res->len)) {
		res->source = FLUXONKV_SOURCE_MEMORY;
		return 0;
	}
	if ((local || !fluxonkv_daemon_connected()) &&
	    fluxonkv_ssd_lookup_routed(key, key_len, &res->put_id,
				       &res->len)) {
		res->source = FLUXONKV_SOURCE_SSD;
		return 0;
	}
	if (!fluxonkv_daemon_connected())
		return -ENOTCONN;	/* nobody to say it is a miss */
	if (local && !unsure && fluxonkv_look_stable(key, key_len, seq))
		return -ENOENT;
	if (flags & FLUXONKV_GR_NOWAIT)
		return -EAGAIN;

	ret = fluxonkv_upcall(FLUXONKV_CMD_LOOKUP, &args, &up);
	if (ret)
		return ret;
	if (!up.put_id || !up.len || up.source == FLUXONKV_SOURCE_NONE)
		return -ENOENT;		/* a route without a source */
	res->put_id = up.put_id;
	res->len = up.len;
	res->source = up.source;
	return 0;
}
