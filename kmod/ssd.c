// SPDX-License-Identifier: GPL-2.0
/*
 * The SSD tier: rings on shards, per-device IO queues, persist and refill
 * (reference design §2.3, §3, §5.1, §6, §7.1).
 *
 * Userspace opens shard files (or raw block devices) O_RDWR | O_DIRECT and
 * hands the descriptors over with FLUXONKV_IOC_SSD_ATTACH; the module never
 * parses a path.  Each shard carries a ring: entries are appended at the
 * head at FLUXONKV_SSD_ALIGN granularity (only the real length is ever
 * exposed), the head wraps to offset 0 when the space left at the end is
 * too short, and the tail advances over the oldest entries to make room.
 * An entry is WRITING until the full aligned length is on the device, then
 * COMMITTED.  Read pins (a refill in progress) and the commit pin (the
 * master has not answered SSD_COMMIT yet) make an entry busy: a writer that
 * would overrun a busy entry waits, it never overwrites it.  Overwritten
 * committed entries are reported to the master in batches (SSD_EVICTED).
 *
 * IO runs in up to FLUXONKV_SSD_DEPTH workers per device: bios built
 * straight from segment pages for a raw block device (nvmet's io-cmd-bdev
 * pattern), direct IO through the file for a shard file (vfs_iter_read/
 * write over the same bvecs: the loop driver's pattern).  Workers pick
 * FLUXONKV_SSD_READ_WEIGHT reads for each write when both are queued:
 * refills are favoured, background writes never starve.  A refill that
 * finds a worker slot idle and no read queued runs its read in that slot
 * from its own context (no hand-off to a worker and back).
 *
 * Segment ranges are 4 KiB aligned and rounded up, so a read of the aligned
 * length always lands directly in the final target: no scratch copy is ever
 * needed, and the padding past len never reaches a holder (it is outside
 * the holder's len and zero on the device).
 *
 * Every entry keeps a crc32c of each MiB of its value, computed from the
 * segment before the write; a read that covers a whole checksummed MiB
 * verifies it in the target before anyone sees the bytes.  A mismatch is an
 * IO error for that entry (-EIO, the caller revokes and re-selects) and the
 * entry is dropped: the device never hands a holder wrong bytes.
 *
 * Entries are kernel memory that unprivileged puts create (one per
 * persisted value, whatever its size), so their total is capped by
 * ssd_meta_max_kb: a persist that would exceed it evicts the oldest
 * entries of its ring first, and is refused (-ENOSPC, reported to the
 * master) if that is not enough.  Each entry is charged to the memory
 * cgroup of the process whose put created it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/capability.h>
#include <linux/crc32c.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/jhash.h>
#include <linux/memcontrol.h>
#include <linux/moduleparam.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <net/genetlink.h>

#include "fluxonkv.h"

#define FLUXONKV_SSD_DEPTH		4	/* IO workers per device */
#define FLUXONKV_SSD_WRITES_MAX		64	/* queued persists per device */
#define FLUXONKV_SSD_READ_WEIGHT	2	/* reads per write when both wait */
#define FLUXONKV_SSD_MAX_SHARDS		64
#define FLUXONKV_SSD_MIN_SHARD		(1ULL << 20)
#define FLUXONKV_SSD_NOTICE_BATCH	256	/* reference §7.1 */
#define FLUXONKV_SSD_NOTICE_DELAY_MS	10
#define FLUXONKV_SSD_NOTICE_MAX		4096	/* queue bound; oldest dropped */
#define FLUXONKV_SSD_NOTICE_BYTES	(32 << 10)	/* per SSD_EVICTED message */
#define FLUXONKV_SSD_INDEX_BITS		12
#define FLUXONKV_SSD_CSUM_CHUNK		(1ULL << 20)	/* a crc32c per MiB */

/*
 * Bytes all SSD entries may take (their structs, keys and checksums); 0
 * at load: 1/64 of RAM.
 */
static unsigned int fluxonkv_ssd_meta_max_kb;
module_param_named(ssd_meta_max_kb, fluxonkv_ssd_meta_max_kb, uint, 0444);
MODULE_PARM_DESC(ssd_meta_max_kb,
		 "Kernel memory all SSD entries may take, KiB (default 0: 1/64 of RAM)");

enum fluxonkv_ssd_state {
	FLUXONKV_SSD_WRITING,
	FLUXONKV_SSD_COMMITTED,
	FLUXONKV_SSD_DEAD,		/* write failed: space only */
};

static const char *const fluxonkv_ssd_state_names[] = {
	"writing", "committed", "dead",
};

struct fluxonkv_ssd_dev;

/**
 * struct fluxonkv_shard - one attached file or block device and its ring.
 * @file: opened O_DIRECT by userspace; our reference.
 * @bdev: the block device when @file is one: IO goes as bios; NULL for a
 *	regular file (direct IO through the file).
 * @align: IO alignment: FLUXONKV_SSD_ALIGN, or the device's logical block
 *	size if larger.
 * @offset: where the ring starts in @file.
 * @capacity: ring bytes (multiple of 4096).
 * @index: shard number, as returned by attach.
 * @dev: the device queue it belongs to.
 * @lock: protects @entries, @head and @tail; held while reserving space.
 * @entries: ring order, oldest first.
 * @head: logical position of the next entry (physical = head % capacity).
 * @tail: logical position of the oldest entry (head when empty).
 * @unpin_seq: bumped whenever an entry may have stopped being busy; a
 *	write parked on a busy tail compares it to resume without a lost
 *	wake-up.
 * @node: on the device's shard list.
 */
struct fluxonkv_shard {
	struct file *file;
	struct block_device *bdev;
	unsigned int align;
	u64 offset;
	u64 capacity;
	unsigned int index;
	struct fluxonkv_ssd_dev *dev;
	struct mutex lock;
	struct list_head entries;
	u64 head;
	u64 tail;
	atomic_t unpin_seq;
	struct list_head node;
};

/**
 * struct fluxonkv_ssd_entry - one value version in a ring.
 * @ring_node: in the shard's ring (shard lock).
 * @index_node: in the SSD key index while @indexed (index lock).
 * @shard: where it lives.
 * @start: logical ring position; physical offset = @start % capacity.
 * @alen: aligned length on the device.
 * @len: the value's length.
 * @put_id: its version.
 * @state: enum fluxonkv_ssd_state (index lock).
 * @pins: read pins + commit pin (index lock); busy while non-zero.
 * @indexed: current SSD entry of its key (index lock).
 * @routed: the master routes gets of this version to it (index lock): set
 *	by a PUBLISHED SSD_COMMIT answer, cleared when the master drops the
 *	SSD copy (overwrite, delete, revoke, daemon gone).  Only an indexed
 *	COMMITTED entry is ever routed.
 * @route_gen: fluxonkv_ssd.route_gen when it was indexed (index lock): an
 *	SSD_COMMIT answer from a daemon that has gone since cannot route it.
 * @meta: bytes this struct takes (counted in fluxonkv_ssd.meta_bytes).
 * @key_len: bytes of @key.
 * @key: the key, then (4-byte aligned) one crc32c per
 *	FLUXONKV_SSD_CSUM_CHUNK of the value, set before the write.
 */
struct fluxonkv_ssd_entry {
	struct list_head ring_node;
	struct hlist_node index_node;
	struct fluxonkv_shard *shard;
	u64 start;
	u64 alen;
	u64 len;
	u64 put_id;
	u8 state;
	bool indexed;
	bool routed;
	u32 route_gen;
	unsigned int pins;
	u32 meta;
	u32 key_len;
	u8 key[];
};

struct fluxonkv_ssd_job {
	struct list_head node;		/* on a device queue (device lock) */
	bool read;
	struct fluxonkv_alloc *alloc;	/* target (read) or source (write) */
	struct fluxonkv_ssd_entry *entry;	/* read: pinned by the caller */
	u64 io_off;			/* read: from this byte of the entry */
	u64 io_alen;			/* read: this many (aligned) bytes */
	struct completion done;		/* read: the waiter */
	unsigned long parked_at;	/* write: first found the ring busy */
	int ret;
	struct kref ref;		/* read: waiter + worker */
	u64 put_id;			/* write */
	struct mem_cgroup *memcg;	/* write: the putter's, charged */
	u32 key_len;			/* write */
	u8 key[];			/* write */
};

struct fluxonkv_ssd_worker {
	struct work_struct work;
	struct fluxonkv_ssd_dev *dev;
	struct bio_vec *bvec;		/* room for the largest value */
	unsigned int slot;
};

/**
 * struct fluxonkv_ssd_dev - IO queue of one physical device.
 * @id: userspace's device group.
 * @lock: protects @reads, @writes, @read_streak, @idle, @writes_blocked.
 * @reads: queued refill reads.
 * @writes: queued persist writes.
 * @read_streak: reads picked since the last write.
 * @idle: bitmap of idle workers.
 * @nwrites: jobs on @writes.
 * @writes_blocked: the first queued write waits for a busy ring entry; no
 *	worker takes writes until an unpin kicks the device.
 * @shards: its shards (attach mutex).
 * @next_shard: round-robin cursor (attach mutex).
 * @workers: up to FLUXONKV_SSD_DEPTH jobs in flight.
 * @node: on fluxonkv_ssd.devs.
 */
struct fluxonkv_ssd_dev {
	u32 id;
	spinlock_t lock;
	struct list_head reads;
	struct list_head writes;
	unsigned int read_streak;
	unsigned long idle;
	unsigned int nwrites;
	bool writes_blocked;
	struct list_head shards;
	struct fluxonkv_shard *next_shard;
	struct fluxonkv_ssd_worker workers[FLUXONKV_SSD_DEPTH];
	struct list_head node;
};

struct fluxonkv_ssd_notice {
	struct list_head node;
	u64 put_id;
	u32 key_len;
	u8 key[];
};

static struct {
	/* Protects devs, nshards, next_dev and every dev's shard list. */
	struct mutex attach_lock;
	struct list_head devs;
	unsigned int nshards;
	struct fluxonkv_ssd_dev *next_dev;
	u64 capacity;			/* sum of shard capacities */
	atomic64_t meta_bytes;		/* every entry's @meta */
	u64 meta_max;			/* ssd_meta_max_kb, in bytes */
	struct workqueue_struct *wq;
	struct bio_set bioset;		/* bios for raw block device shards */

	/* Protects the key index, every entry's state, pins and indexed. */
	spinlock_t index_lock;
	DECLARE_HASHTABLE(index, FLUXONKV_SSD_INDEX_BITS);
	u32 route_gen;			/* bumped when every route goes (index lock) */

	/* Protects notices and nnotices. */
	spinlock_t notice_lock;
	struct list_head notices;
	unsigned int nnotices;
	struct delayed_work notice_work;
} fluxonkv_ssd;

struct fluxonkv_ssd_stats fluxonkv_ssd_stats;

static int fluxonkv_ssd_send_evicted(struct list_head *batch);

/* ---- helpers ---- */

static u64 fluxonkv_ssd_alen(const struct fluxonkv_shard *sh, u64 len)
{
	return round_up(len, sh->align);
}

static u32 fluxonkv_ssd_hash(const u8 *key, u32 key_len)
{
	return jhash(key, key_len, 0x55d);
}

static bool fluxonkv_ssd_key_eq(const struct fluxonkv_ssd_entry *e,
				const u8 *key, u32 key_len)
{
	return e->key_len == key_len && !memcmp(e->key, key, key_len);
}

static size_t fluxonkv_entry_size(u32 key_len, u64 len)
{
	return offsetof(struct fluxonkv_ssd_entry, key) +
	       ALIGN(key_len, sizeof(u32)) +
	       DIV_ROUND_UP(len, FLUXONKV_SSD_CSUM_CHUNK) * sizeof(u32);
}

static u32 *fluxonkv_entry_csums(struct fluxonkv_ssd_entry *e)
{
	return (u32 *)(e->key + ALIGN(e->key_len, sizeof(u32)));
}

/* Checksum each MiB of the value @e is about to hold, from @a. */
static void fluxonkv_entry_csum_fill(struct fluxonkv_ssd_entry *e,
				     struct fluxonkv_alloc *a)
{
	const u8 *p = fluxonkv_alloc_vaddr(a);
	u32 *csum = fluxonkv_entry_csums(e);
	u64 off;

	for (off = 0; off < e->len; off += FLUXONKV_SSD_CSUM_CHUNK)
		*csum++ = crc32c(~0, p + off,
				 min_t(u64, FLUXONKV_SSD_CSUM_CHUNK,
				       e->len - off));
}

/*
 * Verify the checksummed MiBs wholly inside [@off, @off + @alen) of @e,
 * read into @a (whose byte 0 is the value's byte @off).  0 or -EIO.
 */
static int fluxonkv_entry_csum_check(struct fluxonkv_ssd_entry *e,
				     struct fluxonkv_alloc *a, u64 off,
				     u64 alen)
{
	const u8 *p = fluxonkv_alloc_vaddr(a);
	u32 *csum = fluxonkv_entry_csums(e);
	u64 c = DIV_ROUND_UP(off, FLUXONKV_SSD_CSUM_CHUNK);
	u64 start, n;

	for (;; c++) {
		start = c * FLUXONKV_SSD_CSUM_CHUNK;
		if (start >= e->len)
			return 0;
		n = min_t(u64, FLUXONKV_SSD_CSUM_CHUNK, e->len - start);
		if (start + n > off + alen)
			return 0;
		if (crc32c(~0, p + (start - off), n) != csum[c])
			break;
	}
	atomic64_inc(&fluxonkv_ssd_stats.csum_errors);
	pr_warn_ratelimited("shard %u: checksum mismatch in bytes [%llu, +%llu) of an entry at %llu (%u-byte key, put_id %llu): dropped\n",
			    e->shard->index, start, n,
			    e->start % e->shard->capacity, e->key_len,
			    e->put_id);
	return -EIO;
}

static void fluxonkv_entry_free(struct fluxonkv_ssd_entry *e)
{
	atomic64_sub(e->meta, &fluxonkv_ssd.meta_bytes);
	kfree(e);
}

u64 fluxonkv_ssd_meta_bytes(void)
{
	return atomic64_read(&fluxonkv_ssd.meta_bytes);
}

u64 fluxonkv_ssd_capacity(void)
{
	return READ_ONCE(fluxonkv_ssd.capacity);
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
			mutex_lock(&sh->lock);
			used += sh->head - sh->tail;
			mutex_unlock(&sh->lock);
		}
	mutex_unlock(&fluxonkv_ssd.attach_lock);
	return used;
}

static void fluxonkv_ssd_poke(struct fluxonkv_ssd_dev *dev);

/* An entry of @sh may have stopped being busy: resume parked writes. */
static void fluxonkv_shard_kick(struct fluxonkv_shard *sh)
{
	atomic_inc(&sh->unpin_seq);
	fluxonkv_ssd_poke(sh->dev);
}

/* ---- eviction notices to the master (reference §7.1) ---- */

static void fluxonkv_ssd_notice_add(const struct fluxonkv_ssd_entry *e)
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

static void fluxonkv_ssd_notice_free_list(struct list_head *list)
{
	struct fluxonkv_ssd_notice *n, *tmp;

	list_for_each_entry_safe(n, tmp, list, node) {
		list_del(&n->node);
		kfree(n);
	}
}

static void fluxonkv_ssd_notice_flush(struct work_struct *work)
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

	ret = fluxonkv_ssd_send_evicted(&batch);
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

/* ---- messages to the master ---- */

static int fluxonkv_ssd_put_notice(struct sk_buff *skb,
				   const struct fluxonkv_ssd_notice *n)
{
	struct nlattr *nest = nla_nest_start(skb, FLUXONKV_A_ENTRY);

	if (!nest)
		return -EMSGSIZE;
	if (nla_put(skb, FLUXONKV_A_KEY, n->key_len, n->key) ||
	    nla_put_u64_64bit(skb, FLUXONKV_A_PUT_ID, n->put_id,
			      FLUXONKV_A_PAD)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/* SSD_EVICTED: one nested ENTRY {KEY, PUT_ID} per overwritten version. */
static int fluxonkv_ssd_send_evicted(struct list_head *batch)
{
	const struct fluxonkv_ssd_notice *n;
	struct sk_buff *skb;
	size_t size = 0;
	void *hdr;

	list_for_each_entry(n, batch, node)
		size += nla_total_size(0) + nla_total_size(n->key_len) +
			nla_total_size_64bit(sizeof(u64));
	skb = fluxonkv_genl_new(FLUXONKV_CMD_SSD_EVICTED, size, &hdr);
	if (!skb)
		return -ENOMEM;
	list_for_each_entry(n, batch, node) {
		if (fluxonkv_ssd_put_notice(skb, n)) {
			nlmsg_free(skb);
			return -EMSGSIZE;
		}
	}
	return fluxonkv_genl_send(skb, hdr);
}

/*
 * SSD_COMMIT upcall: the master publishes the SSD replica if still valid.
 * With @err < 0 it reports a failed persist instead: either way the master
 * stops protecting the DRAM replica from eviction (reference §3: the
 * replica joins the eviction cache once its persist is over).
 */
static int fluxonkv_ssd_commit(const u8 *key, u32 key_len, u64 put_id,
			       u64 len, int err, struct fluxonkv_ssd_entry *e,
			       bool *published)
{
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .put_id = put_id, .len = len,
		.err = err,
	};
	/* @e (commit-pinned) is marked routed by the answer handler. */
	struct fluxonkv_upcall up = { .ssd_entry = e };
	int ret;

	ret = fluxonkv_upcall(FLUXONKV_CMD_SSD_COMMIT, &args, &up);
	*published = !ret && !err && (up.flags & FLUXONKV_SSD_F_PUBLISHED);
	return ret;
}

/* A persist failed before or while writing: count it, tell the master. */
static void fluxonkv_ssd_persist_failed(const u8 *key, u32 key_len,
					u64 put_id, u64 len, int err)
{
	bool published;

	atomic64_inc(&fluxonkv_ssd_stats.persist_errors);
	fluxonkv_ssd_commit(key, key_len, put_id, len, err, NULL, &published);
}

/*
 * SSD_COMMIT got no answer (timeout, signal, daemon gone): the master may
 * or may not route to @e, so nobody may trust it.  It becomes space only,
 * and the master is told it is gone (SSD_EVICTED), which clears a route it
 * took.  @e is commit-pinned.
 */
static void fluxonkv_ssd_forget(struct fluxonkv_ssd_entry *e)
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
static void fluxonkv_ssd_corrupt(struct fluxonkv_ssd_entry *e)
{
	bool first;

	spin_lock(&fluxonkv_ssd.index_lock);
	first = e->state == FLUXONKV_SSD_COMMITTED;
	spin_unlock(&fluxonkv_ssd.index_lock);
	if (first)
		fluxonkv_ssd_forget(e);
}

/* ---- the ring ---- */

static bool fluxonkv_entry_busy(const struct fluxonkv_ssd_entry *e)
{
	return e->pins || e->state == FLUXONKV_SSD_WRITING;
}

/*
 * Drop the oldest entry of @sh if it is not busy.  Called with the shard
 * lock held.  Returns false if it is busy.
 */
static bool fluxonkv_ring_pop(struct fluxonkv_shard *sh, u64 next_pos)
{
	struct fluxonkv_ssd_entry *e;
	bool committed;

	e = list_first_entry(&sh->entries, struct fluxonkv_ssd_entry,
			     ring_node);
	fluxonkv_removal_begin();
	spin_lock(&fluxonkv_ssd.index_lock);
	if (fluxonkv_entry_busy(e)) {
		spin_unlock(&fluxonkv_ssd.index_lock);
		fluxonkv_removal_end();
		return false;
	}
	if (e->indexed) {
		hash_del(&e->index_node);
		e->indexed = false;
		e->routed = false;
	}
	committed = e->state == FLUXONKV_SSD_COMMITTED;
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end();

	list_del(&e->ring_node);
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
 * is taken by other shards' entries.  The entry is charged to @memcg.
 */
static struct fluxonkv_ssd_entry *
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
	INIT_HLIST_NODE(&e->index_node);

	mutex_lock(&sh->lock);
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
	e->start = pos;
	WRITE_ONCE(sh->head, pos + alen);
	list_add_tail(&e->ring_node, &sh->entries);
	mutex_unlock(&sh->lock);
	return e;
}

/* Make @e the key's current SSD entry unless a newer one is there. */
static void fluxonkv_ssd_index(struct fluxonkv_ssd_entry *e)
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
		      const struct genl_family *family, long *bkt, long *pos)
{
	struct fluxonkv_ssd_entry *e;
	int ret = 1;

	spin_lock(&fluxonkv_ssd.index_lock);
	for (; *bkt < (long)HASH_SIZE(fluxonkv_ssd.index) && ret; (*bkt)++) {
		long i = 0;

		hlist_for_each_entry(e, &fluxonkv_ssd.index[*bkt], index_node) {
			void *hdr;

			if (i++ < *pos || !e->routed)
				continue;
			hdr = fluxonkv_dump_put(skb, cb, family);
			if (!hdr ||
			    nla_put(skb, FLUXONKV_A_KEY, e->key_len, e->key) ||
			    nla_put_u64_64bit(skb, FLUXONKV_A_PUT_ID, e->put_id,
					      FLUXONKV_A_PAD) ||
			    nla_put_u64_64bit(skb, FLUXONKV_A_LEN, e->len,
					      FLUXONKV_A_PAD) ||
			    nla_put_u32(skb, FLUXONKV_A_SOURCE,
					FLUXONKV_SOURCE_SSD)) {
				if (hdr)
					genlmsg_cancel(skb, hdr);
				*pos = i - 1;
				ret = 0;
				break;
			}
			genlmsg_end(skb, hdr);
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

/* ---- IO ---- */

/* Build bvecs for the first @alen bytes of @a, merging contiguous pages. */
static unsigned int fluxonkv_ssd_bvecs(struct bio_vec *bv,
				       struct fluxonkv_alloc *a, u64 alen)
{
	unsigned long pg = a->offset >> PAGE_SHIFT;
	unsigned int n = 0;
	u64 done = 0;

	while (done < alen) {
		struct page *page = fluxonkv_seg.pages[pg++];
		unsigned int len = min_t(u64, PAGE_SIZE, alen - done);

		if (n && bv[n - 1].bv_offset == 0 &&
		    page_to_pfn(page) == page_to_pfn(bv[n - 1].bv_page) +
					 (bv[n - 1].bv_len >> PAGE_SHIFT) &&
		    !(bv[n - 1].bv_len & ~PAGE_MASK)) {
			bv[n - 1].bv_len += len;
		} else {
			bv[n].bv_page = page;
			bv[n].bv_len = len;
			bv[n].bv_offset = 0;
			n++;
		}
		done += len;
	}
	return n;
}

/*
 * Raw block device: bios built straight from the segment pages (the
 * nvmet io-cmd-bdev pattern: fill a bio, chain it to the next when full,
 * wait on the last).  Bypasses the block device's page cache entirely.
 */
static int fluxonkv_ssd_bio(struct fluxonkv_ssd_worker *w,
			    struct block_device *bdev, bool write,
			    unsigned int nr, loff_t pos)
{
	blk_opf_t opf = write ? REQ_OP_WRITE : REQ_OP_READ;
	struct bio *bio;
	unsigned int i;
	int ret;

	bio = bio_alloc_bioset(bdev, min_t(unsigned int, nr, BIO_MAX_VECS),
			       opf, GFP_NOIO, &fluxonkv_ssd.bioset);
	bio->bi_iter.bi_sector = pos >> SECTOR_SHIFT;
	for (i = 0; i < nr; i++) {
		struct bio_vec *bv = &w->bvec[i];

		while (bio_add_page(bio, bv->bv_page, bv->bv_len,
				    bv->bv_offset) != bv->bv_len) {
			struct bio *prev = bio;

			bio = bio_alloc_bioset(bdev,
					       min_t(unsigned int, nr - i,
						     BIO_MAX_VECS),
					       opf, GFP_NOIO, &fluxonkv_ssd.bioset);
			bio->bi_iter.bi_sector = bio_end_sector(prev);
			bio_chain(prev, bio);
			submit_bio(prev);
		}
	}
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

/*
 * Shard file: direct IO with our own kiocb (loop's lo_rw_aio()), so the
 * flags of the struct file userspace shares with us (O_APPEND, a cleared
 * O_DIRECT after attach) never steer where the module writes.
 */
static int fluxonkv_ssd_kiocb(struct fluxonkv_ssd_worker *w, struct file *file,
			      bool write, unsigned int nr, u64 alen, loff_t pos)
{
	struct iov_iter iter;
	struct kiocb kiocb;
	ssize_t ret;

	iov_iter_bvec(&iter, write ? ITER_SOURCE : ITER_DEST, w->bvec, nr,
		      alen);
	init_sync_kiocb(&kiocb, file);
	kiocb.ki_flags = IOCB_DIRECT;
	kiocb.ki_pos = pos;
	if (write) {
		file_start_write(file);
		ret = call_write_iter(file, &kiocb, &iter);
		file_end_write(file);
	} else {
		ret = call_read_iter(file, &kiocb, &iter);
	}
	if (ret == alen)
		return 0;
	return ret < 0 ? ret : -EIO;
}

static int fluxonkv_ssd_io(struct fluxonkv_ssd_worker *w,
			   struct fluxonkv_shard *sh, bool write,
			   struct fluxonkv_alloc *a, u64 alen, loff_t pos)
{
	unsigned int nr = fluxonkv_ssd_bvecs(w->bvec, a, alen);
	int ret;

	pos += sh->offset;	/* unchanged below: logged on error */
	if (sh->bdev)
		ret = fluxonkv_ssd_bio(w, sh->bdev, write, nr, pos);
	else
		ret = fluxonkv_ssd_kiocb(w, sh->file, write, nr, alen, pos);
	if (!ret)
		return 0;
	atomic64_inc(&fluxonkv_ssd_stats.io_errors);
	pr_warn_ratelimited("SSD %s of %llu bytes at %lld on shard %u: %d\n",
			    write ? "write" : "read", alen, pos, sh->index, ret);
	return ret;
}

/* Pick the next shard of @dev, round-robin. */
static struct fluxonkv_shard *fluxonkv_ssd_next_shard(struct fluxonkv_ssd_dev *dev)
{
	struct fluxonkv_shard *sh;

	mutex_lock(&fluxonkv_ssd.attach_lock);
	sh = dev->next_shard;
	dev->next_shard = list_is_last(&sh->node, &dev->shards) ?
		list_first_entry(&dev->shards, struct fluxonkv_shard, node) :
		list_next_entry(sh, node);
	mutex_unlock(&fluxonkv_ssd.attach_lock);
	return sh;
}

/*
 * The write at the head of @dev's queue waits for a busy ring entry: put it
 * back first in line and stop taking writes until an unpin kicks the
 * device.  If the entry was unpinned meanwhile (@seen is stale), retry now.
 */
static void fluxonkv_ssd_park(struct fluxonkv_ssd_dev *dev,
			      struct fluxonkv_ssd_job *job,
			      struct fluxonkv_shard *sh, int seen)
{
	if (!job->parked_at) {
		atomic64_inc(&fluxonkv_ssd_stats.busy_waits);
		job->parked_at = jiffies ? jiffies : 1;
	}
	spin_lock(&dev->lock);
	list_add(&job->node, &dev->writes);
	dev->nwrites++;
	if (atomic_read(&sh->unpin_seq) == seen)
		dev->writes_blocked = true;
	spin_unlock(&dev->lock);
}

/*
 * Persist one value: reserve, write, commit locally, tell the master.
 * Returns true if the job was parked (it stays queued), false when done.
 */
static bool fluxonkv_ssd_do_write(struct fluxonkv_ssd_worker *w,
				  struct fluxonkv_ssd_job *job)
{
	unsigned long patience = 2 * msecs_to_jiffies(fluxonkv_request_timeout_ms);
	struct fluxonkv_shard *sh = fluxonkv_ssd_next_shard(w->dev);
	struct fluxonkv_ssd_entry *e;
	bool published;
	int ret, seen;
	u64 t0;

	e = fluxonkv_ring_reserve(sh, job->key, job->key_len, job->put_id,
				  job->alloc->len, job->memcg, &seen);
	if (PTR_ERR_OR_ZERO(e) == -EAGAIN &&
	    (!job->parked_at || time_before(jiffies, job->parked_at + patience))) {
		fluxonkv_ssd_park(w->dev, job, sh, seen);
		return true;
	}
	if (IS_ERR(e)) {
		fluxonkv_ssd_persist_failed(job->key, job->key_len, job->put_id,
					    job->alloc->len, PTR_ERR(e));
		return false;
	}
	/* WRITING: no reader looks at the checksums before COMMITTED. */
	fluxonkv_entry_csum_fill(e, job->alloc);
	t0 = ktime_get_ns();
	ret = fluxonkv_ssd_io(w, sh, true, job->alloc, e->alen,
			      e->start % sh->capacity);
	fluxonkv_lat_record(FLUXONKV_LAT_SSD_WRITE_IO, t0);

	/* Indexing may replace (and so unroute) an older entry of the key. */
	fluxonkv_removal_begin();
	spin_lock(&fluxonkv_ssd.index_lock);
	if (ret) {
		e->state = FLUXONKV_SSD_DEAD;
	} else {
		/* Committed only once the full aligned length is written. */
		e->state = FLUXONKV_SSD_COMMITTED;
		e->pins++;	/* commit pin: until the master answers */
		fluxonkv_ssd_index(e);
	}
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end();
	if (ret) {
		fluxonkv_shard_kick(sh);
		fluxonkv_ssd_persist_failed(job->key, job->key_len, job->put_id,
					    job->alloc->len, ret);
		return false;
	}
	atomic64_inc(&fluxonkv_ssd_stats.writes);
	atomic64_add(e->alen, &fluxonkv_ssd_stats.write_bytes);

	ret = fluxonkv_ssd_commit(job->key, job->key_len, job->put_id,
				  e->len, 0, e, &published);
	if (!ret)
		atomic64_inc(published ? &fluxonkv_ssd_stats.commits_published :
			     &fluxonkv_ssd_stats.commits_ignored);
	else
		fluxonkv_ssd_forget(e);
	fluxonkv_ssd_unpin(e);
	return false;
}

static void fluxonkv_ssd_do_read(struct fluxonkv_ssd_worker *w,
				 struct fluxonkv_ssd_job *job)
{
	struct fluxonkv_ssd_entry *e = job->entry;
	struct fluxonkv_shard *sh = e->shard;
	u64 t0 = ktime_get_ns();
	int ret;

	ret = fluxonkv_ssd_io(w, sh, false, job->alloc, job->io_alen,
			      e->start % sh->capacity + job->io_off);
	fluxonkv_lat_record(FLUXONKV_LAT_SSD_READ_IO, t0);
	if (!ret) {
		/* The captured range must still be ahead of the tail. */
		mutex_lock(&sh->lock);
		if (e->start < sh->tail)
			ret = -ESTALE;
		mutex_unlock(&sh->lock);
	}
	if (!ret) {
		ret = fluxonkv_entry_csum_check(e, job->alloc, job->io_off,
						job->io_alen);
		if (ret)
			fluxonkv_ssd_corrupt(e);
	}
	if (!ret) {
		atomic64_inc(&fluxonkv_ssd_stats.reads);
		atomic64_add(job->io_alen, &fluxonkv_ssd_stats.read_bytes);
	}
	job->ret = ret;
	/* The worker owns the pin from here on, even if the waiter left. */
	fluxonkv_ssd_unpin(e);
}

static void fluxonkv_ssd_job_release(struct kref *ref)
{
	struct fluxonkv_ssd_job *job = container_of(ref, struct fluxonkv_ssd_job,
						    ref);

	fluxonkv_alloc_put(job->alloc);
	mem_cgroup_put(job->memcg);
	kfree(job);
}

/* Reads first, FLUXONKV_SSD_READ_WEIGHT of them per write when both wait. */
static struct fluxonkv_ssd_job *fluxonkv_ssd_pick(struct fluxonkv_ssd_dev *dev)
{
	struct fluxonkv_ssd_job *job = NULL;
	bool read;

	if (list_empty(&dev->reads) && list_empty(&dev->writes))
		return NULL;
	if (dev->writes_blocked && list_empty(&dev->reads))
		return NULL;
	read = !list_empty(&dev->reads) &&
	       (list_empty(&dev->writes) || dev->writes_blocked ||
		dev->read_streak < FLUXONKV_SSD_READ_WEIGHT);
	if (read) {
		job = list_first_entry(&dev->reads, struct fluxonkv_ssd_job, node);
		dev->read_streak++;
	} else {
		job = list_first_entry(&dev->writes, struct fluxonkv_ssd_job, node);
		dev->read_streak = 0;
		dev->nwrites--;
	}
	list_del(&job->node);
	return job;
}

static void fluxonkv_ssd_worker_fn(struct work_struct *work)
{
	struct fluxonkv_ssd_worker *w =
		container_of(work, struct fluxonkv_ssd_worker, work);
	struct fluxonkv_ssd_dev *dev = w->dev;
	struct fluxonkv_ssd_job *job;
	unsigned int noio = memalloc_noio_save();

	for (;;) {
		spin_lock(&dev->lock);
		job = fluxonkv_ssd_pick(dev);
		if (!job) {
			__set_bit(w->slot, &dev->idle);
			spin_unlock(&dev->lock);
			break;
		}
		spin_unlock(&dev->lock);

		if (job->read) {
			fluxonkv_ssd_do_read(w, job);
			complete(&job->done);
			kref_put(&job->ref, fluxonkv_ssd_job_release);
		} else if (!fluxonkv_ssd_do_write(w, job)) {
			fluxonkv_ssd_job_release(&job->ref);
		}
	}
	memalloc_noio_restore(noio);
}

/* Clear the parked state and start an idle worker if work is queued. */
static void fluxonkv_ssd_poke(struct fluxonkv_ssd_dev *dev)
{
	int slot = -1;

	spin_lock(&dev->lock);
	if (dev->writes_blocked) {
		dev->writes_blocked = false;
		if (dev->idle && !list_empty(&dev->writes)) {
			slot = __ffs(dev->idle);
			__clear_bit(slot, &dev->idle);
		}
	}
	spin_unlock(&dev->lock);
	if (slot >= 0)
		queue_work(fluxonkv_ssd.wq, &dev->workers[slot].work);
}

/*
 * Queue @job on @dev and wake an idle worker.  Persists beyond
 * FLUXONKV_SSD_WRITES_MAX per device are refused (-EBUSY): each one holds
 * DRAM the master cannot reuse until it is done, so a slow device must not
 * collect them without bound.
 */
/*
 * The caller ran a job in @slot itself: hand the slot to its worker if work
 * is waiting (nobody else could start a worker for it meanwhile), else
 * mark it idle again.
 */
static void fluxonkv_ssd_slot_done(struct fluxonkv_ssd_dev *dev, int slot)
{
	bool more;

	spin_lock(&dev->lock);
	more = !list_empty(&dev->reads) ||
	       (!list_empty(&dev->writes) && !dev->writes_blocked);
	if (!more)
		__set_bit(slot, &dev->idle);
	spin_unlock(&dev->lock);
	if (more)
		queue_work(fluxonkv_ssd.wq, &dev->workers[slot].work);
}

static int fluxonkv_ssd_queue(struct fluxonkv_ssd_dev *dev,
			      struct fluxonkv_ssd_job *job)
{
	int slot = -1;

	spin_lock(&dev->lock);
	if (!job->read) {
		if (dev->nwrites >= FLUXONKV_SSD_WRITES_MAX) {
			spin_unlock(&dev->lock);
			return -EBUSY;
		}
		dev->nwrites++;
	}
	list_add_tail(&job->node, job->read ? &dev->reads : &dev->writes);
	if (dev->idle) {
		slot = __ffs(dev->idle);
		__clear_bit(slot, &dev->idle);
	}
	spin_unlock(&dev->lock);
	if (slot >= 0)
		queue_work(fluxonkv_ssd.wq, &dev->workers[slot].work);
	return 0;
}

/**
 * fluxonkv_ssd_persist() - write a published replica to the SSD tier.
 * @key: key bytes.
 * @key_len: key length.
 * @put_id: version.
 * @a: the replica's bytes; the job takes its own reference.
 *
 * Asynchronous: returns at once.  Return: 0, -ENODEV if no shard is
 * attached (the owner-side check of the reference's persist request),
 * -EBUSY if the device already has FLUXONKV_SSD_WRITES_MAX persists queued,
 * or -ENOMEM; on error the master has been told (SSD_COMMIT with ERRNO).
 */
int fluxonkv_ssd_persist(const u8 *key, u32 key_len, u64 put_id,
			 struct fluxonkv_alloc *a)
{
	struct fluxonkv_ssd_job *job;
	struct fluxonkv_ssd_dev *dev;
	int ret;

	mutex_lock(&fluxonkv_ssd.attach_lock);
	dev = fluxonkv_ssd.next_dev;
	if (dev)
		fluxonkv_ssd.next_dev =
			list_is_last(&dev->node, &fluxonkv_ssd.devs) ?
			list_first_entry(&fluxonkv_ssd.devs,
					 struct fluxonkv_ssd_dev, node) :
			list_next_entry(dev, node);
	mutex_unlock(&fluxonkv_ssd.attach_lock);
	if (!dev) {
		fluxonkv_ssd_persist_failed(key, key_len, put_id, a->len, -ENODEV);
		return -ENODEV;
	}

	job = kzalloc(struct_size(job, key, key_len), GFP_KERNEL);
	if (!job) {
		fluxonkv_ssd_persist_failed(key, key_len, put_id, a->len, -ENOMEM);
		return -ENOMEM;
	}
	job->read = false;
	job->put_id = put_id;
	/* The entry is the putter's kernel memory (NULL: no memcg). */
	job->memcg = get_mem_cgroup_from_mm(current->mm);
	job->key_len = key_len;
	memcpy(job->key, key, key_len);
	fluxonkv_alloc_get(a);
	job->alloc = a;
	ret = fluxonkv_ssd_queue(dev, job);
	if (ret) {
		fluxonkv_ssd_persist_failed(key, key_len, put_id, a->len, ret);
		fluxonkv_ssd_job_release(&job->ref);
	}
	return ret;
}

/**
 * fluxonkv_ssd_read() - refill @a from the pinned entry @e.
 * @e: pinned by fluxonkv_ssd_pin(); unpinned in every case (by the IO
 *	worker once the read is done).
 * @a: the target, at least the entry's aligned length long.
 *
 * Sleeps until the read is done: in the caller's context when a worker
 * slot is idle, else queued (killable: an abandoned queued read finishes in
 * the background and frees itself).  Return: 0 or -errno; a failed read
 * never leaves a half-filled target to a holder (the caller frees it).
 */
int fluxonkv_ssd_read(struct fluxonkv_ssd_entry *e, struct fluxonkv_alloc *a)
{
	return fluxonkv_ssd_read_range(e, a, 0, e->len);
}

/**
 * fluxonkv_ssd_read_range() - read part of a pinned entry into @a.
 * @e: the entry, read-pinned by the caller; unpinned here.
 * @a: the target; at least the aligned length of the range.
 * @off: first byte of the value, a multiple of FLUXONKV_SEGMENT_ALIGN.
 * @len: bytes of the value from @off (rounded up to the entry's
 *	alignment for the IO: the padding lands after @len in @a).
 *
 * The staging read of a remote SSD push (reference §5.3) reads 4 MiB
 * chunks of one entry this way.  Return: 0, -EINVAL, -ESTALE (overtaken
 * by the ring tail), -EINTR or an IO error.
 */
int fluxonkv_ssd_read_range(struct fluxonkv_ssd_entry *e,
			    struct fluxonkv_alloc *a, u64 off, u64 len)
{
	struct fluxonkv_ssd_dev *dev = e->shard->dev;
	struct fluxonkv_ssd_job *job;
	int ret, slot = -1;
	u64 alen;

	if (off % FLUXONKV_SEGMENT_ALIGN || off >= e->len || !len ||
	    len > e->len - off) {
		fluxonkv_ssd_unpin(e);
		return -EINVAL;
	}
	/*
	 * IO in the shard's alignment; @off is 4 KiB aligned, so at least
	 * the device's.  The entry's aligned length bounds the last chunk.
	 */
	alen = min_t(u64, e->alen - off, fluxonkv_ssd_alen(e->shard, len));
	if (a->span < alen) {
		fluxonkv_ssd_unpin(e);
		return -EINVAL;
	}
	/*
	 * An idle worker slot and no read queued ahead: the caller does the
	 * IO itself in that slot, saving two context switches; the depth and
	 * the read/write weighting stay those of the queue.
	 */
	spin_lock(&dev->lock);
	if (dev->idle && list_empty(&dev->reads)) {
		slot = __ffs(dev->idle);
		__clear_bit(slot, &dev->idle);
	}
	spin_unlock(&dev->lock);
	if (slot >= 0) {
		struct fluxonkv_ssd_job inline_job = {
			.read = true, .entry = e, .alloc = a,
			.io_off = off, .io_alen = alen,
		};
		unsigned int noio = memalloc_noio_save();

		fluxonkv_ssd_do_read(&dev->workers[slot], &inline_job);
		memalloc_noio_restore(noio);
		fluxonkv_ssd_slot_done(dev, slot);
		return inline_job.ret;
	}

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job) {
		fluxonkv_ssd_unpin(e);
		return -ENOMEM;
	}
	job->read = true;
	job->entry = e;
	job->io_off = off;
	job->io_alen = alen;
	fluxonkv_alloc_get(a);
	job->alloc = a;
	init_completion(&job->done);
	kref_init(&job->ref);
	kref_get(&job->ref);
	fluxonkv_ssd_queue(dev, job);	/* reads are never refused */

	ret = wait_for_completion_killable(&job->done);
	ret = ret ? -EINTR : job->ret;
	kref_put(&job->ref, fluxonkv_ssd_job_release);
	return ret;
}

/* ---- attach ---- */

static struct fluxonkv_ssd_dev *fluxonkv_ssd_dev_get(u32 id)
{
	struct fluxonkv_ssd_dev *dev;
	unsigned int i;

	list_for_each_entry(dev, &fluxonkv_ssd.devs, node)
		if (dev->id == id)
			return dev;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	dev->id = id;
	spin_lock_init(&dev->lock);
	INIT_LIST_HEAD(&dev->reads);
	INIT_LIST_HEAD(&dev->writes);
	INIT_LIST_HEAD(&dev->shards);
	for (i = 0; i < FLUXONKV_SSD_DEPTH; i++) {
		struct fluxonkv_ssd_worker *w = &dev->workers[i];

		w->bvec = kvmalloc_array(FLUXONKV_VALUE_MAX / PAGE_SIZE + 1,
					 sizeof(*w->bvec), GFP_KERNEL);
		if (!w->bvec)
			goto err_bvec;
		w->dev = dev;
		w->slot = i;
		INIT_WORK(&w->work, fluxonkv_ssd_worker_fn);
		__set_bit(i, &dev->idle);
	}
	list_add_tail(&dev->node, &fluxonkv_ssd.devs);
	if (!fluxonkv_ssd.next_dev)
		fluxonkv_ssd.next_dev = dev;
	return dev;

err_bvec:
	while (i--)
		kvfree(dev->workers[i].bvec);
	kfree(dev);
	return ERR_PTR(-ENOMEM);
}

static void fluxonkv_ssd_dev_free(struct fluxonkv_ssd_dev *dev)
{
	unsigned int i;

	for (i = 0; i < FLUXONKV_SSD_DEPTH; i++)
		kvfree(dev->workers[i].bvec);
	kfree(dev);
}

/*
 * Does [offset, offset + capacity) of @file overlap an attached shard?
 * Called with the attach lock held.
 */
static bool fluxonkv_ssd_attached(struct file *file, u64 offset, u64 capacity)
{
	struct inode *inode = file->f_mapping->host;
	struct fluxonkv_ssd_dev *dev;
	struct fluxonkv_shard *sh;

	list_for_each_entry(dev, &fluxonkv_ssd.devs, node)
		list_for_each_entry(sh, &dev->shards, node)
			if (sh->file->f_mapping->host == inode &&
			    offset < sh->offset + sh->capacity &&
			    sh->offset < offset + capacity)
				return true;
	return false;
}

/* Logical block size of the device under @file (a block device or fs). */
static unsigned int fluxonkv_ssd_lbs(struct file *file)
{
	struct inode *inode = file->f_mapping->host;

	if (S_ISBLK(inode->i_mode))
		return bdev_logical_block_size(I_BDEV(inode));
	if (inode->i_sb->s_bdev)
		return bdev_logical_block_size(inode->i_sb->s_bdev);
	return FLUXONKV_SSD_ALIGN;
}

static int fluxonkv_ssd_check_file(struct file *file, u64 offset,
				   u64 capacity)
{
	umode_t mode = file_inode(file)->i_mode;

	if ((file->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE))
		return -EBADF;		/* must be open O_RDWR */
	if (!S_ISREG(mode) && !S_ISBLK(mode))
		return -EINVAL;
	if (!(file->f_flags & O_DIRECT))
		return -EINVAL;		/* must be open O_DIRECT */
	if (capacity < FLUXONKV_SSD_MIN_SHARD || capacity % PAGE_SIZE ||
	    offset % PAGE_SIZE || offset + capacity < offset)
		return -EINVAL;
	if (offset + capacity > i_size_read(file->f_mapping->host))
		return -ENOSPC;		/* past the end of the file/device */
	return 0;
}

/**
 * fluxonkv_ssd_attach() - add a shard (FLUXONKV_IOC_SSD_ATTACH).
 * @fd: file or block device opened O_RDWR | O_DIRECT by the caller.
 * @offset: where the shard starts in it.
 * @capacity: bytes to use from @offset.
 * @device: device group.
 * @shard: out: its index.
 *
 * Return: 0, -EPERM without CAP_SYS_ADMIN, -EBADF for a bad or read-only
 * descriptor, -EINVAL for a file that is not a regular file or block
 * device, not O_DIRECT, or a bad capacity, -ENOSPC if the capacity exceeds
 * the file or there are already FLUXONKV_SSD_MAX_SHARDS, -EEXIST if that
 * range overlaps an attached shard.
 */
int fluxonkv_ssd_attach(int fd, u64 offset, u64 capacity, u32 device,
			u32 *shard)
{
	struct fluxonkv_ssd_dev *dev;
	struct fluxonkv_shard *sh;
	struct file *file;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	file = fget(fd);
	if (!file)
		return -EBADF;
	ret = fluxonkv_ssd_check_file(file, offset, capacity);
	if (ret)
		goto err_fput;
	sh = kzalloc(sizeof(*sh), GFP_KERNEL);
	if (!sh) {
		ret = -ENOMEM;
		goto err_fput;
	}
	sh->file = file;
	if (S_ISBLK(file_inode(file)->i_mode))
		sh->bdev = I_BDEV(file->f_mapping->host);
	sh->align = max_t(unsigned int, FLUXONKV_SSD_ALIGN,
			  fluxonkv_ssd_lbs(file));
	if (sh->align > PAGE_SIZE || offset % sh->align) {
		ret = -EINVAL;	/* sectors larger than a page: not supported */
		goto err_free;
	}
	sh->offset = offset;
	sh->capacity = capacity;
	mutex_init(&sh->lock);
	INIT_LIST_HEAD(&sh->entries);

	mutex_lock(&fluxonkv_ssd.attach_lock);
	if (fluxonkv_ssd.nshards >= FLUXONKV_SSD_MAX_SHARDS) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	if (fluxonkv_ssd_attached(file, offset, capacity)) {
		ret = -EEXIST;
		goto err_unlock;
	}
	if (fluxonkv_ssd.capacity + capacity < fluxonkv_ssd.capacity) {
		ret = -EOVERFLOW;
		goto err_unlock;
	}
	dev = fluxonkv_ssd_dev_get(device);
	if (IS_ERR(dev)) {
		ret = PTR_ERR(dev);
		goto err_unlock;
	}
	sh->dev = dev;
	sh->index = fluxonkv_ssd.nshards++;
	list_add_tail(&sh->node, &dev->shards);
	if (!dev->next_shard)
		dev->next_shard = sh;
	WRITE_ONCE(fluxonkv_ssd.capacity, fluxonkv_ssd.capacity + capacity);
	mutex_unlock(&fluxonkv_ssd.attach_lock);

	*shard = sh->index;
	pr_info("SSD shard %u attached: %llu MiB, device group %u\n",
		sh->index, capacity >> 20, device);
	fluxonkv_notify_ssd_state();
	return 0;

err_unlock:
	mutex_unlock(&fluxonkv_ssd.attach_lock);
err_free:
	kfree(sh);
err_fput:
	fput(file);
	return ret;
}

/* ---- debugfs ---- */

int fluxonkv_rings_show(struct seq_file *m, void *unused)
{
	struct fluxonkv_ssd_entry *e;
	struct fluxonkv_ssd_dev *dev;
	struct fluxonkv_shard *sh;

	mutex_lock(&fluxonkv_ssd.attach_lock);
	list_for_each_entry(dev, &fluxonkv_ssd.devs, node) {
		struct fluxonkv_ssd_job *job;
		unsigned int reads = 0, busy;

		spin_lock(&dev->lock);
		list_for_each_entry(job, &dev->reads, node)
			reads++;
		busy = FLUXONKV_SSD_DEPTH - hweight_long(dev->idle);
		seq_printf(m, "device %u queued_reads %u queued_writes %u workers_busy %u writes_parked %d\n",
			   dev->id, reads, dev->nwrites, busy, dev->writes_blocked);
		spin_unlock(&dev->lock);
		list_for_each_entry(sh, &dev->shards, node) {
			mutex_lock(&sh->lock);
			seq_printf(m, "shard %u device %u offset %llu capacity %llu head %llu tail %llu used %llu\n",
				   sh->index, dev->id, sh->offset, sh->capacity,
				   sh->head, sh->tail, sh->head - sh->tail);
			seq_puts(m, "\toffset\tlen\talen\tstate\tpins\tput_id\trouted\tkey\n");
			spin_lock(&fluxonkv_ssd.index_lock);
			list_for_each_entry(e, &sh->entries, ring_node) {
				seq_printf(m, "\t%llu\t%llu\t%llu\t%s\t%u\t%llu\t%d\t",
					   e->start % sh->capacity, e->len,
					   e->alen,
					   fluxonkv_ssd_state_names[e->state],
					   e->pins, e->put_id, e->routed);
				seq_escape_mem(m, e->key, min_t(u32, e->key_len, 64),
					       ESCAPE_HEX | ESCAPE_NP | ESCAPE_APPEND, "\\\t\n ");
				seq_putc(m, '\n');
			}
			spin_unlock(&fluxonkv_ssd.index_lock);
			mutex_unlock(&sh->lock);
		}
	}
	mutex_unlock(&fluxonkv_ssd.attach_lock);
	return 0;
}

/* ---- init / exit ---- */

int fluxonkv_ssd_init(void)
{
	int ret;

	fluxonkv_ssd.meta_max = fluxonkv_ssd_meta_max_kb ?
		(u64)fluxonkv_ssd_meta_max_kb << 10 :
		((u64)totalram_pages() << PAGE_SHIFT) / 64;
	atomic64_set(&fluxonkv_ssd.meta_bytes, 0);
	mutex_init(&fluxonkv_ssd.attach_lock);
	INIT_LIST_HEAD(&fluxonkv_ssd.devs);
	spin_lock_init(&fluxonkv_ssd.index_lock);
	hash_init(fluxonkv_ssd.index);
	spin_lock_init(&fluxonkv_ssd.notice_lock);
	INIT_LIST_HEAD(&fluxonkv_ssd.notices);
	INIT_DELAYED_WORK(&fluxonkv_ssd.notice_work, fluxonkv_ssd_notice_flush);
	ret = bioset_init(&fluxonkv_ssd.bioset, BIO_POOL_SIZE, 0,
			  BIOSET_NEED_BVECS);
	if (ret)
		return ret;
	/* Not a reclaim path: workers may wait for the daemon's answers. */
	fluxonkv_ssd.wq = alloc_workqueue("fluxonkv_ssd", WQ_UNBOUND, 0);
	if (!fluxonkv_ssd.wq) {
		bioset_exit(&fluxonkv_ssd.bioset);
		return -ENOMEM;
	}
	return 0;
}

void fluxonkv_ssd_exit(void)
{
	struct fluxonkv_ssd_job *job, *jtmp;
	struct fluxonkv_ssd_dev *dev, *dtmp;
	struct fluxonkv_ssd_entry *e, *etmp;
	struct fluxonkv_shard *sh, *stmp;

	/* Workers finish queued IO (commits fail fast without a daemon). */
	destroy_workqueue(fluxonkv_ssd.wq);
	cancel_delayed_work_sync(&fluxonkv_ssd.notice_work);
	fluxonkv_ssd_notice_free_list(&fluxonkv_ssd.notices);

	list_for_each_entry_safe(dev, dtmp, &fluxonkv_ssd.devs, node) {
		list_for_each_entry_safe(sh, stmp, &dev->shards, node) {
			list_for_each_entry_safe(e, etmp, &sh->entries,
						 ring_node) {
				WARN_ON(e->pins);
				if (e->indexed)
					hash_del(&e->index_node);
				fluxonkv_entry_free(e);
			}
			fput(sh->file);
			kfree(sh);
		}
		/* Writes still parked on a busy tail are given up. */
		list_for_each_entry_safe(job, jtmp, &dev->writes, node) {
			list_del(&job->node);
			fluxonkv_ssd_persist_failed(job->key, job->key_len,
						    job->put_id, job->alloc->len,
						    -ESHUTDOWN);
			fluxonkv_ssd_job_release(&job->ref);
		}
		WARN_ON(!list_empty(&dev->reads));
		fluxonkv_ssd_dev_free(dev);
	}
	bioset_exit(&fluxonkv_ssd.bioset);
}
