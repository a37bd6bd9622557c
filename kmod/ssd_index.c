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

/*
 * An entry of @sh may have stopped being busy: resume parked writes; an
 * offline shard's reclaim may free it now.  Called with the SSD index
 * lock held, right where the entry stopped being busy: the reclaim looks
 * at busy under that lock, so it frees the entry -- and then maybe @sh --
 * only after this is done with @sh.  Takes dev->lock (a spinlock) and
 * queues works: nothing sleeps.
 */
void fluxonkv_shard_kick(struct fluxonkv_shard *sh)
{
	lockdep_assert_held(&fluxonkv_ssd.index_lock);

	atomic_inc(&sh->unpin_seq);
	fluxonkv_ssd_poke(sh->dev);
	if (READ_ONCE(sh->offline))
		queue_work(fluxonkv_ssd.wq, &sh->reclaim_work);
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
 * took -- once: whoever makes it DEAD sends the notice (a corrupt read, a
 * commit without an answer and an offline pass may meet on one entry).
 * @e is pinned (read or commit pin) or its shard lock held.
 */
void fluxonkv_ssd_forget(struct fluxonkv_ssd_entry *e)
{
	bool first;

	fluxonkv_removal_begin(e->key, e->key_len);
	spin_lock(&fluxonkv_ssd.index_lock);
	fluxonkv_ssd_unindex(e);
	first = e->state != FLUXONKV_SSD_DEAD;
	e->state = FLUXONKV_SSD_DEAD;
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end(e->key, e->key_len);
	if (first)
		fluxonkv_ssd_notice_add(e);
}

/* @e (read-pinned) failed its checksum: nobody reads it again. */
void fluxonkv_ssd_corrupt(struct fluxonkv_ssd_entry *e)
{
	fluxonkv_ssd_forget(e);
}

/* What index lookups are given: the key's bytes. */
struct fluxonkv_ssd_key {
	const u8 *key;
	u32 len;
};

static u32 fluxonkv_ssd_hashfn(const void *data, u32 len, u32 seed)
{
	const struct fluxonkv_ssd_key *k = data;

	return jhash(k->key, k->len, seed);
}

static u32 fluxonkv_ssd_obj_hashfn(const void *data, u32 len, u32 seed)
{
	const struct fluxonkv_ssd_entry *e = data;

	return jhash(e->key, e->key_len, seed);
}

static int fluxonkv_ssd_cmpfn(struct rhashtable_compare_arg *arg,
			      const void *obj)
{
	const struct fluxonkv_ssd_key *k = arg->key;
	const struct fluxonkv_ssd_entry *e = obj;

	return e->key_len != k->len || memcmp(e->key, k->key, k->len);
}

static const struct rhashtable_params fluxonkv_ssd_index_params = {
	.head_offset = offsetof(struct fluxonkv_ssd_entry, index_node),
	.hashfn = fluxonkv_ssd_hashfn,
	.obj_hashfn = fluxonkv_ssd_obj_hashfn,
	.obj_cmpfn = fluxonkv_ssd_cmpfn,
	.automatic_shrinking = true,
};

int fluxonkv_ssd_index_init(void)
{
	return rhashtable_init(&fluxonkv_ssd.index, &fluxonkv_ssd_index_params);
}

/* Every entry is freed already (ssd_shard.c's exit). */
void fluxonkv_ssd_index_exit(void)
{
	rhashtable_destroy(&fluxonkv_ssd.index);
}

/* The key's indexed entry, or NULL.  Called with the index lock held. */
static struct fluxonkv_ssd_entry *fluxonkv_ssd_find(const u8 *key,
						    u32 key_len)
{
	struct fluxonkv_ssd_key k = { key, key_len };

	lockdep_assert_held(&fluxonkv_ssd.index_lock);

	return rhashtable_lookup_fast(&fluxonkv_ssd.index, &k,
				      fluxonkv_ssd_index_params);
}

/* Take @e out of the index (not routed any more).  Index lock held. */
void fluxonkv_ssd_unindex(struct fluxonkv_ssd_entry *e)
{
	if (!e->indexed)
		return;
	rhashtable_remove_fast(&fluxonkv_ssd.index, &e->index_node,
			       fluxonkv_ssd_index_params);
	e->indexed = false;
	WRITE_ONCE(e->routed, false);
}

/*
 * Make @e the key's current SSD entry unless a newer one is there (then 0,
 * @e stays unindexed).  Index lock held.  -ENOMEM / -EBUSY: the table
 * could not take it; @e is not indexed (the persist fails).
 */
int fluxonkv_ssd_index(struct fluxonkv_ssd_entry *e)
{
	struct fluxonkv_ssd_entry *cur = fluxonkv_ssd_find(e->key, e->key_len);
	bool routed = false;
	int ret;

	lockdep_assert_held(&fluxonkv_ssd.index_lock);

	if (cur && cur->put_id > e->put_id)
		return 0;
	if (cur) {
		/* in one step: a lookup sees the old entry or the new one */
		ret = rhashtable_replace_fast(&fluxonkv_ssd.index,
					      &cur->index_node, &e->index_node,
					      fluxonkv_ssd_index_params);
		if (WARN_ON_ONCE(ret))
			return ret;
		cur->indexed = false;
		/*
		 * The same version written twice (a PERSIST racing a persist
		 * the previous daemon started): the older copy is only space
		 * now -- popping it must not tell the master that version
		 * left the SSD (SSD_EVICTED), the newer copy holds it.  The
		 * master's route to that version's SSD copy stays: it is
		 * this copy now (its DRAM replica may be gone already, and
		 * a get must not miss until our SSD_COMMIT is answered).
		 */
		if (cur->put_id == e->put_id) {
			routed = fluxonkv_entry_routed(cur);
			cur->state = FLUXONKV_SSD_DEAD;
		}
		WRITE_ONCE(cur->routed, false);
	} else {
		ret = rhashtable_insert_fast(&fluxonkv_ssd.index,
					     &e->index_node,
					     fluxonkv_ssd_index_params);
		if (ret)
			return ret;
	}
	e->indexed = true;
	WRITE_ONCE(e->route_gen, fluxonkv_ssd.route_gen);
	if (routed)
		WRITE_ONCE(e->routed, true);
	return 0;
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
	struct fluxonkv_ssd_entry *e;

	spin_lock(&fluxonkv_ssd.index_lock);
	e = fluxonkv_ssd_find(key, key_len);
	if (e && e->put_id == put_id && e->state == FLUXONKV_SSD_COMMITTED)
		e->pins++;
	else
		e = NULL;
	spin_unlock(&fluxonkv_ssd.index_lock);
	return e;
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
 * Called inside a fluxonkv_look_begin() .. fluxonkv_look_stable() look.
 */
bool fluxonkv_ssd_lookup_routed(const u8 *key, u32 key_len, u64 *put_id,
				u64 *len)
{
	struct fluxonkv_ssd_key k = { key, key_len };
	struct fluxonkv_ssd_entry *e;
	bool found = false;

	/*
	 * No lock: entries are freed after a grace period, their put_id and
	 * len never change, and a route removed meanwhile is a removal the
	 * caller's look bracket sees.
	 */
	rcu_read_lock();
	e = rhashtable_lookup(&fluxonkv_ssd.index, &k,
			      fluxonkv_ssd_index_params);
	if (e && fluxonkv_entry_routed(e)) {
		*put_id = e->put_id;
		*len = e->len;
		found = true;
	}
	rcu_read_unlock();
	return found;
}

/*
 * SSD_COMMIT answered PUBLISHED: from the answer handler, so it is ordered
 * with the master's later answers that drop the copy.  @e is commit-pinned.
 */
void fluxonkv_ssd_route(struct fluxonkv_ssd_entry *e)
{
	struct fluxonkv_ssd_entry *cur;

	spin_lock(&fluxonkv_ssd.index_lock);
	/*
	 * The same version written twice (a re-persist after a warm restart
	 * racing the first write): a copy indexed after @e took its place
	 * with the same bytes.  The master routes to the version, so the
	 * route goes to that copy -- else, with the DRAM replica evicted
	 * once this answer made it evictable, gets would miss until that
	 * copy's own SSD_COMMIT is answered.
	 */
	if (!e->indexed) {
		cur = fluxonkv_ssd_find(e->key, e->key_len);
		if (cur && cur->put_id == e->put_id)
			e = cur;
	}
	/*
	 * A local put of a newer version (FLUXONKV_REGISTER_F_LOCAL_PUTS)
	 * retires older SSD routes when it publishes, not in order with this
	 * answer: one that published before us unrouted nothing yet, so we
	 * must not route.  Under the SSD index lock, as its unroute is: if it
	 * publishes after this look, its unroute comes after us.
	 */
	if (e->indexed && e->state == FLUXONKV_SSD_COMMITTED &&
	    e->route_gen == fluxonkv_ssd.route_gen &&
	    !fluxonkv_index_newer(e->key, e->key_len, e->put_id))
		WRITE_ONCE(e->routed, true);
	spin_unlock(&fluxonkv_ssd.index_lock);
}

/* The master no longer routes to @key's SSD versions up to @max_put_id. */
void fluxonkv_ssd_unroute(const u8 *key, u32 key_len, u64 max_put_id)
{
	struct fluxonkv_ssd_entry *e;

	/*
	 * No entry at all (no SSD tier, or nothing on it): nothing is routed,
	 * and the removal bracket below would make other keys' local misses
	 * unsure for nothing -- every put passes here.  An entry being
	 * written now is not routed yet, and fluxonkv_ssd_route() refuses an
	 * older version than the index holds.
	 */
	if (!atomic64_read(&fluxonkv_ssd.meta_bytes))
		return;
	fluxonkv_removal_begin(key, key_len);
	spin_lock(&fluxonkv_ssd.index_lock);
	e = fluxonkv_ssd_find(key, key_len);
	if (e && e->put_id <= max_put_id)
		WRITE_ONCE(e->routed, false);
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end(key, key_len);
}

/*
 * The daemon went away: its routes went with it.  O(1): an entry is routed
 * only if it was indexed in the current route generation
 * (fluxonkv_entry_routed()), so moving the generation unroutes them all.
 */
void fluxonkv_ssd_unroute_all(void)
{
	fluxonkv_removal_all_begin();
	spin_lock(&fluxonkv_ssd.index_lock);
	WRITE_ONCE(fluxonkv_ssd.route_gen, fluxonkv_ssd.route_gen + 1);
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_all_end();
}

/* Shard number @index, or NULL.  Attach mutex held. */
static struct fluxonkv_shard *fluxonkv_ssd_shard(long index)
{
	struct fluxonkv_ssd_dev *dev;
	struct fluxonkv_shard *sh;

	list_for_each_entry(dev, &fluxonkv_ssd.devs, node)
		list_for_each_entry(sh, &dev->shards, node)
			if (sh->index == index)
				return sh;
	return NULL;
}

/*
 * DUMP, the routed SSD entries, shard by shard in ring order from shard
 * *@shard, ring position *@pos on (positions only grow: the cursor stays
 * right while rings move).  *@serial is the serial of the shard *@pos is
 * a position of: a number freed by an offline shard's reclaim and taken
 * by a new attach meanwhile names another ring, whose positions start
 * again at 0, so the walk starts it from its first entry.  Locks: attach,
 * then each shard's, then the index lock per entry, never a whole table
 * under one.
 * Return: 1 when all are in, 0 when @skb is full (the cursors say where
 * to go on), or -errno.
 */
int fluxonkv_ssd_dump(struct sk_buff *skb, struct netlink_callback *cb,
		      long *shard, long *pos, long *serial)
{
	struct fluxonkv_ssd_entry *e;
	struct fluxonkv_shard *sh;
	int ret = 1;

	mutex_lock(&fluxonkv_ssd.attach_lock);
	for (; *shard < FLUXONKV_SSD_MAX_SHARDS && ret;
	     (*shard)++, *pos = 0, *serial = 0) {
		sh = fluxonkv_ssd_shard(*shard);
		if (!sh)
			continue;
		/* another shard under the number than *@pos was taken in */
		if (*serial != (long)sh->serial) {
			*pos = 0;
			*serial = (long)sh->serial;
		}
		mutex_lock(&sh->lock);
		list_for_each_entry(e, &sh->entries, ring_node) {
			struct fluxonkv_dump_rec rec = {
				.key = e->key, .key_len = e->key_len,
				.put_id = e->put_id, .len = e->len,
				.source = FLUXONKV_SOURCE_SSD,
			};
			bool routed;

			if (e->start < (u64)*pos)
				continue;
			spin_lock(&fluxonkv_ssd.index_lock);
			routed = fluxonkv_entry_routed(e);
			spin_unlock(&fluxonkv_ssd.index_lock);
			if (!routed)
				continue;
			if (fluxonkv_dump_record(skb, cb, &rec)) {
				*pos = (long)e->start;
				ret = 0;
				break;
			}
		}
		mutex_unlock(&sh->lock);
		if (!ret)
			break;
	}
	mutex_unlock(&fluxonkv_ssd.attach_lock);
	return ret;
}

void fluxonkv_ssd_unpin(struct fluxonkv_ssd_entry *e)
{
	/*
	 * Once unpinned, a writer (or an offline shard's reclaim) may free
	 * @e, and the reclaim then @e's shard: the kick is done under the
	 * same hold of the index lock (fluxonkv_shard_kick()).
	 */
	spin_lock(&fluxonkv_ssd.index_lock);
	e->pins--;
	fluxonkv_shard_kick(e->shard);
	spin_unlock(&fluxonkv_ssd.index_lock);
}

u64 fluxonkv_ssd_entry_len(const struct fluxonkv_ssd_entry *e)
{
	return e->len;
}
