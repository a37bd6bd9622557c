// SPDX-License-Identifier: GPL-2.0
/*
 * The SSD key index: each key's newest committed entry, its pins (reads in
 * progress, the commit pin until the master answers SSD_COMMIT) and
 * whether the master routes gets to it; and the notices of committed
 * entries overwritten at a ring tail, sent to the master in batches
 * (SSD_EVICTED, reference §7.1).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/workqueue.h>

#include "ssd.h"

/* An entry of @sh may have stopped being busy: resume parked writes. */
void fluxonkv_shard_kick(struct fluxonkv_shard *sh)
{
	atomic_inc(&sh->unpin_seq);
	fluxonkv_ssd_poke(sh->dev);
}

void fluxonkv_ssd_notice_add(const struct fluxonkv_ssd_entry *e)
{
	struct fluxonkv_ssd_notice *n, *old = NULL;
	unsigned int count;

	n = kmalloc(struct_size(n, key, e->key_len), GFP_NOIO);
	if (!n) {
		atomic64_inc(&fluxonkv_ssd_stats.notices_dropped);
		return;
	}
	n->put_id = e->put_id;
	n->key_len = e->key_len;
	memcpy(n->key, e->key, e->key_len);

	spin_lock(&fluxonkv_ssd.notice_lock);
	/* A full queue never blocks a writer: the oldest notice goes. */
	if (fluxonkv_ssd.nnotices >= FLUXONKV_SSD_NOTICE_MAX) {
		old = list_first_entry(&fluxonkv_ssd.notices,
				       struct fluxonkv_ssd_notice, node);
		list_del(&old->node);
		fluxonkv_ssd.nnotices--;
	}
	list_add_tail(&n->node, &fluxonkv_ssd.notices);
	count = ++fluxonkv_ssd.nnotices;
	spin_unlock(&fluxonkv_ssd.notice_lock);

	if (old) {
		kfree(old);
		atomic64_inc(&fluxonkv_ssd_stats.notices_dropped);
	}
	if (count >= FLUXONKV_SSD_NOTICE_BATCH)
		mod_delayed_work(system_wq, &fluxonkv_ssd.notice_work, 0);
	else if (count == 1)
		schedule_delayed_work(&fluxonkv_ssd.notice_work,
				      msecs_to_jiffies(FLUXONKV_SSD_NOTICE_DELAY_MS));
}

void fluxonkv_ssd_notice_free_list(struct list_head *list)
{
	struct fluxonkv_ssd_notice *n, *tmp;

	list_for_each_entry_safe(n, tmp, list, node) {
		list_del(&n->node);
		kfree(n);
	}
}

void fluxonkv_ssd_notice_flush(struct work_struct *work)
{
	struct fluxonkv_ssd_notice *n;
	unsigned int count = 0;
	size_t bytes = 0;
	LIST_HEAD(batch);
	int ret;

	spin_lock(&fluxonkv_ssd.notice_lock);
	while (count < FLUXONKV_SSD_NOTICE_BATCH &&
	       !list_empty(&fluxonkv_ssd.notices)) {
		n = list_first_entry(&fluxonkv_ssd.notices,
				     struct fluxonkv_ssd_notice, node);
		/* Keep one message small enough to allocate and receive. */
		bytes += n->key_len + 32;
		if (count && bytes > FLUXONKV_SSD_NOTICE_BYTES)
			break;
		list_move_tail(&n->node, &batch);
		fluxonkv_ssd.nnotices--;
		count++;
	}
	spin_unlock(&fluxonkv_ssd.notice_lock);
	if (!count)
		return;

	ret = fluxonkv_notify_ssd_evicted(&batch);
	if (ret && fluxonkv_daemon_connected()) {
		/* Retry the same batch first (reference §7.1). */
		spin_lock(&fluxonkv_ssd.notice_lock);
		fluxonkv_ssd.nnotices += count;
		list_splice(&batch, &fluxonkv_ssd.notices);
		spin_unlock(&fluxonkv_ssd.notice_lock);
		schedule_delayed_work(&fluxonkv_ssd.notice_work,
				      msecs_to_jiffies(FLUXONKV_SSD_NOTICE_DELAY_MS));
		return;
	}
	/* Sent, or no master: its routes are gone with it. */
	fluxonkv_ssd_notice_free_list(&batch);
	if (READ_ONCE(fluxonkv_ssd.nnotices))
		mod_delayed_work(system_wq, &fluxonkv_ssd.notice_work, 0);
}

/*
 * SSD_COMMIT got no answer (timeout, signal, daemon gone): the master may
 * or may not route to @e, so nobody may trust it.  It becomes space only,
 * and the master is told it is gone (SSD_EVICTED), which clears a route it
 * took.  @e is commit-pinned.
 */
void fluxonkv_ssd_forget(struct fluxonkv_ssd_entry *e)
{
	fluxonkv_removal_begin();
	spin_lock(&fluxonkv_ssd.index_lock);
	if (e->indexed) {
		hash_del(&e->index_node);
		e->indexed = false;
		e->routed = false;
	}
	e->state = FLUXONKV_SSD_DEAD;
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end();
	fluxonkv_ssd_notice_add(e);
}

/*
 * @e (read-pinned) failed its checksum: nobody reads it again; the master
 * hears it is gone, unless a concurrent reader already said so.
 */
void fluxonkv_ssd_corrupt(struct fluxonkv_ssd_entry *e)
{
	bool first;

	spin_lock(&fluxonkv_ssd.index_lock);
	first = e->state == FLUXONKV_SSD_COMMITTED;
	spin_unlock(&fluxonkv_ssd.index_lock);
	if (first)
		fluxonkv_ssd_forget(e);
}

/* Make @e the key's current SSD entry unless a newer one is there. */
void fluxonkv_ssd_index(struct fluxonkv_ssd_entry *e)
{
	u32 h = fluxonkv_ssd_hash(e->key, e->key_len);
	struct fluxonkv_ssd_entry *cur;

	hash_for_each_possible(fluxonkv_ssd.index, cur, index_node, h) {
		if (!fluxonkv_ssd_key_eq(cur, e->key, e->key_len))
			continue;
		if (cur->put_id > e->put_id)
			return;
		hash_del(&cur->index_node);
		cur->indexed = false;
		cur->routed = false;
		break;
	}
	hash_add(fluxonkv_ssd.index, &e->index_node, h);
	e->indexed = true;
	e->route_gen = fluxonkv_ssd.route_gen;
}

/**
 * fluxonkv_ssd_pin() - find and pin the committed SSD entry of a version.
 * @key: key bytes.
 * @key_len: key length.
 * @put_id: the version the master routed to.
 *
 * Return: the entry with a read pin (release with fluxonkv_ssd_unpin()), or
 * NULL if this owner has no such entry (a stale route).
 */
struct fluxonkv_ssd_entry *fluxonkv_ssd_pin(const u8 *key, u32 key_len,
					    u64 put_id)
{
	u32 h = fluxonkv_ssd_hash(key, key_len);
	struct fluxonkv_ssd_entry *e, *found = NULL;

	spin_lock(&fluxonkv_ssd.index_lock);
	hash_for_each_possible(fluxonkv_ssd.index, e, index_node, h) {
		if (fluxonkv_ssd_key_eq(e, key, key_len) &&
		    e->put_id == put_id &&
		    e->state == FLUXONKV_SSD_COMMITTED) {
			e->pins++;
			found = e;
			break;
		}
	}
	spin_unlock(&fluxonkv_ssd.index_lock);
	return found;
}

/* The key's indexed entry, or NULL.  Called with the index lock held. */
static struct fluxonkv_ssd_entry *fluxonkv_ssd_find(const u8 *key,
						    u32 key_len)
{
	u32 h = fluxonkv_ssd_hash(key, key_len);
	struct fluxonkv_ssd_entry *e;

	hash_for_each_possible(fluxonkv_ssd.index, e, index_node, h)
		if (fluxonkv_ssd_key_eq(e, key, key_len))
			return e;
	return NULL;
}

/**
 * fluxonkv_ssd_lookup_routed() - the version of @key the master routes to
 *	this owner's SSD, if any.
 * @key: key bytes.
 * @key_len: key length.
 * @put_id: out: its version.
 * @len: out: its length.
 *
 * Nothing is pinned: the caller allocates its target first, then pins the
 * version with fluxonkv_ssd_pin() (which fails if it went meanwhile).
 */
bool fluxonkv_ssd_lookup_routed(const u8 *key, u32 key_len, u64 *put_id,
				u64 *len)
{
	struct fluxonkv_ssd_entry *e;
	bool found = false;

	spin_lock(&fluxonkv_ssd.index_lock);
	e = fluxonkv_ssd_find(key, key_len);
	if (e && e->routed) {
		*put_id = e->put_id;
		*len = e->len;
		found = true;
	}
	spin_unlock(&fluxonkv_ssd.index_lock);
	return found;
}

/*
 * SSD_COMMIT answered PUBLISHED: from the answer handler, so it is ordered
 * with the master's later answers that drop the copy.  @e is commit-pinned.
 */
void fluxonkv_ssd_route(struct fluxonkv_ssd_entry *e)
{
	spin_lock(&fluxonkv_ssd.index_lock);
	if (e->indexed && e->state == FLUXONKV_SSD_COMMITTED &&
	    e->route_gen == fluxonkv_ssd.route_gen)
		e->routed = true;
	spin_unlock(&fluxonkv_ssd.index_lock);
}

/* The master no longer routes to @key's SSD versions up to @max_put_id. */
void fluxonkv_ssd_unroute(const u8 *key, u32 key_len, u64 max_put_id)
{
	struct fluxonkv_ssd_entry *e;

	fluxonkv_removal_begin();
	spin_lock(&fluxonkv_ssd.index_lock);
	e = fluxonkv_ssd_find(key, key_len);
	if (e && e->put_id <= max_put_id)
		e->routed = false;
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end();
}

/* The daemon went away: its routes went with it. */
void fluxonkv_ssd_unroute_all(void)
{
	struct fluxonkv_ssd_entry *e;
	unsigned int bkt;

	fluxonkv_removal_begin();
	spin_lock(&fluxonkv_ssd.index_lock);
	fluxonkv_ssd.route_gen++;
	hash_for_each(fluxonkv_ssd.index, bkt, e, index_node)
		e->routed = false;
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end();
}

/*
 * DUMP, the routed SSD entries from bucket *@bkt, position *@pos on.
 * Return: 1 when all are in, 0 when @skb is full (the cursors say where
 * to go on), or -errno.
 */
int fluxonkv_ssd_dump(struct sk_buff *skb, struct netlink_callback *cb,
		      long *bkt, long *pos)
{
	struct fluxonkv_ssd_entry *e;
	int ret = 1;

	spin_lock(&fluxonkv_ssd.index_lock);
	for (; *bkt < (long)HASH_SIZE(fluxonkv_ssd.index) && ret; (*bkt)++) {
		long i = 0;

		hlist_for_each_entry(e, &fluxonkv_ssd.index[*bkt], index_node) {
			struct fluxonkv_dump_rec rec = {
				.key = e->key, .key_len = e->key_len,
				.put_id = e->put_id, .len = e->len,
				.source = FLUXONKV_SOURCE_SSD,
			};

			if (i++ < *pos || !e->routed)
				continue;
			if (fluxonkv_dump_record(skb, cb, &rec)) {
				*pos = i - 1;
				ret = 0;
				break;
			}
		}
		if (ret)
			*pos = 0;
		else
			break;
	}
	spin_unlock(&fluxonkv_ssd.index_lock);
	return ret;
}

void fluxonkv_ssd_unpin(struct fluxonkv_ssd_entry *e)
{
	/* Once unpinned, a writer may free @e: shards live until exit. */
	struct fluxonkv_shard *sh = e->shard;

	spin_lock(&fluxonkv_ssd.index_lock);
	e->pins--;
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_shard_kick(sh);
}

u64 fluxonkv_ssd_entry_len(const struct fluxonkv_ssd_entry *e)
{
	return e->len;
}
