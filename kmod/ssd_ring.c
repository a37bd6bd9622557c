// SPDX-License-Identifier: GPL-2.0
/*
 * The ring of one SSD shard (reference design §2.3, §6): entries are
 * appended at the head at the shard's alignment, the head wraps to offset 0
 * when the space left at the end is too short, and the tail advances over
 * the oldest entries to make room -- never over a busy one (being written,
 * read-pinned, commit-pinned): the writer waits instead.
 *
 * Every entry keeps an xxh64 of each MiB of its value, computed from the
 * segment before the write; every read covers whole checksummed MiBs
 * (the last one ends at the value's end) and verifies them in the target
 * before anyone sees the bytes.
 *
 * Entries are kernel memory that unprivileged puts create (one per
 * persisted value, whatever its size), so their total is capped by
 * ssd_meta_max_kb: a persist that would exceed it evicts the oldest
 * entries of its ring first, and is refused (-ENOSPC, reported to the
 * master) if that is not enough.  Each entry is charged to the memory
 * cgroup of the process whose put created it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/xxhash.h>

#include "ssd.h"

/* Checksum each MiB of the value @e is about to hold, from @a. */
void fluxonkv_entry_csum_fill(struct fluxonkv_ssd_entry *e,
				     struct fluxonkv_alloc *a)
{
	const u8 *p = fluxonkv_alloc_vaddr(a);
	u64 *csum = fluxonkv_entry_csums(e);
	u64 off;

	for (off = 0; off < e->len; off += FLUXONKV_SSD_CSUM_CHUNK)
		*csum++ = xxh64(p + off,
				min_t(u64, FLUXONKV_SSD_CSUM_CHUNK,
				      e->len - off), 0);
}

/*
 * Verify the checksummed MiBs of [@off, @off + @alen) of @e, read into @a
 * (whose byte 0 is the value's byte @off).  Reads are whole MiBs or end
 * at the value's end (fluxonkv_ssd_read_len), so that is every byte of
 * the range.  0 or -EIO.
 */
int fluxonkv_entry_csum_check(struct fluxonkv_ssd_entry *e,
				     struct fluxonkv_alloc *a, u64 off,
				     u64 alen)
{
	return fluxonkv_entry_csum_check_at(e, fluxonkv_alloc_vaddr(a), off,
					    off, alen);
}

/*
 * fluxonkv_entry_csum_check() of the piece [@off, @off + @alen) of a read
 * whose bytes start at @p with the value's byte @p_off (@off a MiB
 * multiple at or after it): pieces of one read can be checked at once.
 */
int fluxonkv_entry_csum_check_at(struct fluxonkv_ssd_entry *e, const u8 *p,
				 u64 p_off, u64 off, u64 alen)
{
	u64 *csum = fluxonkv_entry_csums(e);
	u64 c = DIV_ROUND_UP(off, FLUXONKV_SSD_CSUM_CHUNK);
	u64 start, n;

	for (;; c++) {
		start = c * FLUXONKV_SSD_CSUM_CHUNK;
		if (start >= e->len)
			return 0;
		n = min_t(u64, FLUXONKV_SSD_CSUM_CHUNK, e->len - start);
		if (start + n > off + alen)
			return 0;
		if (xxh64(p + (start - p_off), n, 0) != csum[c])
			break;
	}
	atomic64_inc(&fluxonkv_ssd_stats.csum_errors);
	pr_warn_ratelimited("shard %u: checksum mismatch in bytes [%llu, +%llu) of an entry at %llu (%u-byte key, put_id %llu): dropped\n",
			    e->shard->index, start, n,
			    e->start % e->shard->capacity, e->key_len,
			    e->put_id);
	return -EIO;
}

void fluxonkv_entry_free(struct fluxonkv_ssd_entry *e)
{
	atomic64_sub(e->meta, &fluxonkv_ssd.meta_bytes);
	/* a lockless routed lookup may still be reading it */
	kfree_rcu(e, rcu);
}

u64 fluxonkv_ssd_meta_bytes(void)
{
	return atomic64_read(&fluxonkv_ssd.meta_bytes);
}

u64 fluxonkv_ssd_used(void)
{
	struct fluxonkv_ssd_dev *dev;
	struct fluxonkv_shard *sh;
	u64 used = 0;

	/*
	 * Under each shard's lock: a reservation moves the tail past the
	 * head for a moment when it wraps an empty ring.
	 */
	mutex_lock(&fluxonkv_ssd.attach_lock);
	list_for_each_entry(dev, &fluxonkv_ssd.devs, node)
		list_for_each_entry(sh, &dev->shards, node) {
			if (sh->offline)
				continue;	/* not capacity any more */
			mutex_lock(&sh->lock);
			used += sh->head - sh->tail;
			mutex_unlock(&sh->lock);
		}
	mutex_unlock(&fluxonkv_ssd.attach_lock);
	return used;
}

/*
 * Drop the oldest entry of @sh if it is not busy.  Called with the shard
 * lock held.  Returns false if it is busy.
 */
static bool fluxonkv_ring_pop(struct fluxonkv_shard *sh, u64 next_pos)
{
	struct fluxonkv_ssd_entry *e;
	bool committed;

	lockdep_assert_held(&sh->lock);

	e = list_first_entry(&sh->entries, struct fluxonkv_ssd_entry,
			     ring_node);
	fluxonkv_removal_begin(e->key, e->key_len);
	spin_lock(&fluxonkv_ssd.index_lock);
	if (fluxonkv_entry_busy(e)) {
		spin_unlock(&fluxonkv_ssd.index_lock);
		fluxonkv_removal_end(e->key, e->key_len);
		return false;
	}
	fluxonkv_ssd_unindex(e);
	committed = e->state == FLUXONKV_SSD_COMMITTED;
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end(e->key, e->key_len);

	list_del(&e->ring_node);
	sh->meta -= e->meta;
	WRITE_ONCE(sh->tail, list_empty(&sh->entries) ? next_pos :
		   list_first_entry(&sh->entries, struct fluxonkv_ssd_entry,
				    ring_node)->start);
	if (committed) {
		atomic64_inc(&fluxonkv_ssd_stats.evictions);
		fluxonkv_ssd_notice_add(e);
	}
	fluxonkv_entry_free(e);
	return true;
}

/*
 * Would one more entry of @size bytes exceed ssd_meta_max_kb?  Checked and
 * added under one shard's lock: shards filling at once may overshoot by
 * an entry each.
 */
static bool fluxonkv_ssd_meta_over(size_t size)
{
	return atomic64_read(&fluxonkv_ssd.meta_bytes) + size >
	       fluxonkv_ssd.meta_max;
}

/*
 * Reserve alen bytes at the head of @sh for a new WRITING entry, advancing
 * the tail over the oldest entries (for space, or for the entries' memory
 * budget).  If the oldest entry is busy the write must wait
 * (BlockedByBusyIo): -EAGAIN, with @seen set to the shard's unpin_seq
 * observed under its lock, so the caller can park the job instead of
 * blocking an IO worker that the pin holder may need.  -ENOSPC: the budget
 * is taken by other shards' entries.  -ENODEV: @sh is offline.  The entry
 * is charged to @memcg.
 */
struct fluxonkv_ssd_entry *
fluxonkv_ring_reserve(struct fluxonkv_shard *sh, const u8 *key, u32 key_len,
		      u64 put_id, u64 len, struct mem_cgroup *memcg, int *seen)
{
	u64 alen = fluxonkv_ssd_alen(sh, len), pos, phys;
	size_t size = fluxonkv_entry_size(key_len, len);
	struct fluxonkv_ssd_entry *e;
	struct mem_cgroup *old;
	bool busy = false;

	if (alen > sh->capacity)
		return ERR_PTR(-EFBIG);
	old = set_active_memcg(memcg);
	e = kzalloc(size, GFP_NOIO | __GFP_ACCOUNT);
	set_active_memcg(old);
	if (!e)
		return ERR_PTR(-ENOMEM);
	e->meta = size;
	memcpy(e->key, key, key_len);
	e->key_len = key_len;
	e->len = len;
	e->alen = alen;
	e->put_id = put_id;
	e->shard = sh;
	e->state = FLUXONKV_SSD_WRITING;

	mutex_lock(&sh->lock);
	/*
	 * Taken out since the write picked it: no entry joins an offline
	 * shard (its reclaim frees what it has, then the shard).
	 */
	if (READ_ONCE(sh->offline)) {
		mutex_unlock(&sh->lock);
		kfree(e);
		return ERR_PTR(-ENODEV);
	}
	/*
	 * Sampled before looking at the tail: an unpin after this point
	 * bumps it, so a park decided on a stale view is retried at once.
	 */
	*seen = atomic_read(&sh->unpin_seq);
	pos = sh->head;
	phys = pos % sh->capacity;
	if (phys + alen > sh->capacity)
		pos += sh->capacity - phys;	/* wrap to offset 0 */
	if (list_empty(&sh->entries))
		WRITE_ONCE(sh->tail, pos);
	/*
	 * Over the memory budget even with this whole ring gone: other
	 * shards hold it, emptying ours would not help.
	 */
	if (atomic64_read(&fluxonkv_ssd.meta_bytes) - sh->meta + size >
	    fluxonkv_ssd.meta_max) {
		mutex_unlock(&sh->lock);
		kfree(e);
		atomic64_inc(&fluxonkv_ssd_stats.meta_refused);
		return ERR_PTR(-ENOSPC);
	}
	while (!list_empty(&sh->entries)) {
		bool room = pos + alen - sh->tail <= sh->capacity;

		if (room && !fluxonkv_ssd_meta_over(size))
			break;
		if (!fluxonkv_ring_pop(sh, pos)) {
			busy = true;
			break;
		}
		if (room)
			atomic64_inc(&fluxonkv_ssd_stats.meta_evictions);
	}
	if (busy) {
		/* The oldest entry is pinned or still being written. */
		mutex_unlock(&sh->lock);
		kfree(e);
		return ERR_PTR(-EAGAIN);
	}
	if (fluxonkv_ssd_meta_over(size)) {
		/* This ring is empty: other shards' entries hold the budget. */
		mutex_unlock(&sh->lock);
		kfree(e);
		atomic64_inc(&fluxonkv_ssd_stats.meta_refused);
		return ERR_PTR(-ENOSPC);
	}
	atomic64_add(size, &fluxonkv_ssd.meta_bytes);
	sh->meta += size;
	e->start = pos;
	WRITE_ONCE(sh->head, pos + alen);
	list_add_tail(&e->ring_node, &sh->entries);
	mutex_unlock(&sh->lock);
	return e;
}
