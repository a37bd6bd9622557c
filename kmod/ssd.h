/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SSD tier's internals, shared by its files:
 *
 *   ssd_ring.c   the ring of a shard: reserving space, evicting the tail,
 *                the entries' checksums and their memory budget
 *   ssd_index.c  the key index, pins, routes, eviction notices
 *   ssd_io.c     per-device IO queues and workers, persist and refill
 *   ssd_shard.c  attaching shards, debugfs, init / exit
 *
 * (the design: ssd_shard.c's header comment; netlink messages: genl.c).
 */
#ifndef _FLUXONKV_SSD_H
#define _FLUXONKV_SSD_H

#include <linux/bio.h>
#include <linux/bitmap.h>
#include <linux/jhash.h>
#include <linux/rhashtable.h>

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
/* IO errors in a row, with no success between, that take a shard out. */
#define FLUXONKV_SSD_OFFLINE_ERRORS	32
/* an xxh64 per MiB: uapi FLUXONKV_SSD_CSUM_CHUNK */


enum fluxonkv_ssd_state {
	FLUXONKV_SSD_WRITING,
	FLUXONKV_SSD_COMMITTED,
	FLUXONKV_SSD_DEAD,		/* write failed: space only */
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
 * @index: shard number, as returned by attach: its slot in
 *	fluxonkv_ssd.slots, given back when the shard is reclaimed.
 * @dev: the device queue it belongs to.
 * @lock: protects @entries, @head and @tail; held while reserving space.
 * @entries: ring order, oldest first.
 * @head: logical position of the next entry (physical = head % capacity).
 * @tail: logical position of the oldest entry (head when empty).
 * @unpin_seq: bumped whenever an entry may have stopped being busy; a
 *	write parked on a busy tail compares it to resume without a lost
 *	wake-up.
 * @node: on the device's shard list.
 * @err_run: IO errors since its last successful IO.
 * @inflight: IOs issued on it and not completed (an offline shard's range
 *	is attached again only once this is 0).
 * @offline: taken out after FLUXONKV_SSD_OFFLINE_ERRORS errors in a row
 *	(set under the attach mutex; read with READ_ONCE): no new entries
 *	(fluxonkv_ring_reserve() refuses them), none routed, its capacity
 *	withdrawn; its entries freed as they stop being busy and then the
 *	shard itself (@reclaim_work).
 * @offline_work: takes it out (the IO path cannot sleep on the locks).
 * @ref: the tier's (while on its device's list), and one for each user
 *	that found it under the attach mutex and goes on without that mutex
 *	(a write reserving its entry).  Entries hold none: the shard leaves
 *	the list only once it has no entry, and an entry's users touch the
 *	shard only while the entry is busy -- or, for the unpin that ends
 *	that, under the SSD index lock, which the reclaim's look at busy
 *	takes too.  The last put queues @free_work.
 * @reclaim_work: an offline shard's reclaim (fluxonkv_shard_reclaim_work):
 *	frees its idle dead entries; once none is left, takes it off its
 *	device's list, gives back its slot and drops the tier's @ref.
 *	Queued by the offline pass and by every entry of it that stops
 *	being busy (fluxonkv_shard_kick()).
 * @detached: off the list, slot given back (attach mutex).
 * @free_work: closes the file, drops the claim, frees the shard (it may
 *	sleep: the last put may come from any context).
 */
struct fluxonkv_shard {
	struct file *file;
	struct block_device *bdev;
	struct block_device *claim;	/* our exclusive claim on @bdev, or NULL */
	unsigned int align;
	u64 offset;
	u64 capacity;
	unsigned int index;
	u64 serial;		/* attaches so far, at its own: never reused */
	struct fluxonkv_ssd_dev *dev;
	struct mutex lock;
	struct list_head entries;
	u64 head;
	u64 tail;
	atomic_t unpin_seq;
	struct list_head node;
	atomic_t err_run;
	atomic_t inflight;	/* IOs issued and not completed */
	u64 meta;		/* its entries' memory (shard lock) */
	bool offline;
	struct work_struct offline_work;
	struct kref ref;
	struct work_struct reclaim_work;
	bool detached;
	struct work_struct free_work;
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
 *	SSD copy (overwrite, delete, revoke); handed on to a copy of the
 *	same version that replaces it in the index (and set on that copy by
 *	a PUBLISHED answer for the replaced one).  Only an indexed
 *	COMMITTED entry is ever routed.  Read it through
 *	fluxonkv_entry_routed().
 * @route_gen: fluxonkv_ssd.route_gen when it was indexed (index lock): an
 *	SSD_COMMIT answer from a daemon that has gone since cannot route it,
 *	and a daemon gone (the generation moved) took every route with it.
 * @meta: bytes this struct takes (counted in fluxonkv_ssd.meta_bytes).
 * @key_len: bytes of @key.
 * @key: the key, then (8-byte aligned) one xxh64 per
 *	FLUXONKV_SSD_CSUM_CHUNK of the value, set before the write.
 */
struct fluxonkv_ssd_entry {
	struct list_head ring_node;
	struct rhash_head index_node;
	struct rcu_head rcu;		/* freed after a grace period */
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

/* Most pieces one asynchronous read's check is cut into (one per MiB). */
#define FLUXONKV_SSD_CHECKS_MAX		8

struct fluxonkv_ssd_job;

/* A piece of an asynchronous read's check: [@off, @off + @len) of the value. */
struct fluxonkv_ssd_check {
	struct work_struct work;
	struct fluxonkv_ssd_job *job;
	u64 off;
	u64 len;
};

struct fluxonkv_ssd_job {
	struct list_head node;		/* on a device queue (device lock) */
	bool read;
	struct fluxonkv_alloc *alloc;	/* target (read) or source (write) */
	struct fluxonkv_ssd_entry *entry;	/* read: pinned by the caller */
	u64 io_off;			/* read: from this byte of the entry */
	u64 io_alen;			/* read: this many (aligned) bytes */
	struct completion done;		/* read: the waiter */
	/*
	 * read without a waiter: called at its end instead, after @check (a
	 * worker); the owner ends it with fluxonkv_ssd_read_async_end()
	 */
	void (*end)(void *priv, struct fluxonkv_ssd_job *job);
	/*
	 * read with @end: its check, in @nchecks pieces run at once on the
	 * unbound workqueue (a MiB or more each); the last piece to end
	 * (@checks_left) settles the read and calls @end.  @csum_bad: a
	 * piece's XXH64 did not match.
	 */
	struct fluxonkv_ssd_check *checks;
	unsigned int nchecks;
	atomic_t checks_left;
	bool csum_bad;
	void *priv;			/* read: @end's */
	unsigned long parked_at;	/* write: first found the ring busy */
	int ret;
	struct kref ref;		/* read: the slot's (+ a waiter's) */
	/*
	 * read: a killed waiter's user, charged @charged bytes for @alloc
	 * until the read ends (the job's release uncharges; one reference)
	 */
	struct fluxonkv_user *user;
	u64 charged;
	u64 put_id;			/* write */
	struct mem_cgroup *memcg;	/* write: the putter's, charged */
	u32 key_len;			/* write */
	u8 key[];			/* write */
};

/*
 * One of a device's FLUXONKV_SSD_DEPTH IO slots.  A slot's work picks a
 * job, starts its IO and returns; the IO's completion (bio or kiocb, any
 * context) queues the work again, which finishes the job in process
 * context and starts the next one -- but for an asynchronous read, whose
 * completion queues its check apart and gives the slot back itself (once
 * its submitter is done with it too, @holds).  No thread waits for an
 * IO, but a caller that runs a read in an idle slot itself (@waiter).  Everything
 * below @slot belongs to the slot's owner: its work, or that caller.
 */
struct fluxonkv_ssd_worker {
	struct work_struct work;
	struct fluxonkv_ssd_dev *dev;
	struct bio_vec *bvec;		/* room for the largest value */
	unsigned int slot;
	struct fluxonkv_ssd_job *job;	/* the IO in flight, or NULL */
	struct fluxonkv_ssd_entry *entry;	/* write: its reserved entry */
	struct fluxonkv_shard *sh;
	struct kiocb iocb;		/* a shard file's IO */
	u64 alen;
	loff_t pos;
	u64 t0;
	int io_ret;
	bool write;
	struct completion *waiter;	/* a caller's read: completed instead */
	/*
	 * An asynchronous read's: its submitter and its completion, each
	 * done with the slot (the submitter's file system may still look at
	 * @iocb after the IO ended); the last gives the slot back.
	 */
	atomic_t holds;
};

/**
 * struct fluxonkv_ssd_dev - IO queue of one physical device.
 * @id: userspace's device group.
 * @lock: protects @reads, @writes, @read_streak, @idle, @writes_blocked;
 *	taken with interrupts off (an asynchronous read's completion gives
 *	its slot back under it, in any context).
 * @reads: queued refill reads.
 * @writes: queued persist writes.
 * @read_streak: reads picked since the last write.
 * @idle: bitmap of idle IO slots (nothing in flight, nothing to finish).
 * @nwrites: jobs on @writes.
 * @writes_blocked: the first queued write waits for a busy ring entry; no
 *	worker takes writes until an unpin kicks the device.
 * @shards: its shards (attach mutex).
 * @next_shard: round-robin cursor (attach mutex).
 * @workers: its IO slots: up to FLUXONKV_SSD_DEPTH IOs in flight.
 * @write_room: local puts waiting for room in its persist queue, each
 *	exclusively: a write leaving the queue wakes one of them.
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
	wait_queue_head_t write_room;
	struct list_head node;
};

/* The tier's state, one instance (ssd_shard.c). */
struct fluxonkv_ssd_tier {
	/*
	 * Protects devs, nshards, slots, next_dev and every dev's shard list
	 * (and each shard's @offline, @detached).
	 */
	struct mutex attach_lock;
	struct list_head devs;
	unsigned int nshards;		/* on the lists, offline ones too */
	/* shard numbers in use: an attach takes the lowest free one */
	DECLARE_BITMAP(slots, FLUXONKV_SSD_MAX_SHARDS);
	u64 serial;			/* attaches so far */
	struct fluxonkv_ssd_dev *next_dev;
	u64 capacity;			/* sum of shard capacities */
	atomic64_t meta_bytes;		/* every entry's @meta */
	u64 meta_max;			/* ssd_meta_max_kb, in bytes */
	struct workqueue_struct *wq;
	struct bio_set bioset;		/* bios for raw block device shards */
	/* Woken when an IO slot goes idle (unload waits for every one). */
	wait_queue_head_t slots_idle;

	/* Protects the key index, every entry's state, pins and indexed. */
	spinlock_t index_lock;
	struct rhashtable index;	/* key -> its indexed entry */
	/* bumped when every route goes (index lock; read locklessly) */
	u32 route_gen;

	/* Protects notices and nnotices. */
	spinlock_t notice_lock;
	struct list_head notices;
	unsigned int nnotices;
	struct delayed_work notice_work;
};

extern struct fluxonkv_ssd_tier fluxonkv_ssd;

/*
 * The master routes gets to @e now.  Index lock held, or under RCU for a
 * look that fluxonkv_look_begin() / _stable() bracket (a route removal
 * racing it makes the look unsure).
 */
static inline bool fluxonkv_entry_routed(const struct fluxonkv_ssd_entry *e)
{
	return READ_ONCE(e->routed) &&
	       READ_ONCE(e->route_gen) == READ_ONCE(fluxonkv_ssd.route_gen);
}

/* ---- small helpers ---- */

static inline u64 fluxonkv_ssd_alen(const struct fluxonkv_shard *sh, u64 len)
{
	return round_up(len, sh->align);
}

/* Index helpers: ssd_index.c (the table, random seed, resizes itself). */
int fluxonkv_ssd_index_init(void);
void fluxonkv_ssd_index_exit(void);
void fluxonkv_ssd_unindex(struct fluxonkv_ssd_entry *e);
static inline size_t fluxonkv_entry_size(u32 key_len, u64 len)
{
	return ALIGN(offsetof(struct fluxonkv_ssd_entry, key) + key_len,
		     sizeof(u64)) +
	       DIV_ROUND_UP(len, FLUXONKV_SSD_CSUM_CHUNK) * sizeof(u64);
}

/* The checksums, after the key at the next 8-byte boundary (kmalloc'd). */
static inline u64 *fluxonkv_entry_csums(struct fluxonkv_ssd_entry *e)
{
	return PTR_ALIGN((u64 *)(e->key + e->key_len), sizeof(u64));
}

static inline bool fluxonkv_entry_busy(const struct fluxonkv_ssd_entry *e)
{
	return e->pins || e->state == FLUXONKV_SSD_WRITING;
}

/* ssd_ring.c */
void fluxonkv_entry_csum_fill(struct fluxonkv_ssd_entry *e,
			      struct fluxonkv_alloc *a);
int fluxonkv_entry_csum_check(struct fluxonkv_ssd_entry *e,
			      struct fluxonkv_alloc *a, u64 off, u64 alen);
int fluxonkv_entry_csum_check_at(struct fluxonkv_ssd_entry *e, const u8 *p,
				 u64 p_off, u64 off, u64 alen);
void fluxonkv_entry_free(struct fluxonkv_ssd_entry *e);
struct mem_cgroup;
struct fluxonkv_ssd_entry *
fluxonkv_ring_reserve(struct fluxonkv_shard *sh, const u8 *key, u32 key_len,
		      u64 put_id, u64 len, struct mem_cgroup *memcg, int *seen);

/* ssd_index.c */
void fluxonkv_shard_kick(struct fluxonkv_shard *sh);
void fluxonkv_ssd_notice_add(const struct fluxonkv_ssd_entry *e);
void fluxonkv_ssd_notice_free_list(struct list_head *list);
void fluxonkv_ssd_notice_flush(struct work_struct *work);
void fluxonkv_ssd_forget(struct fluxonkv_ssd_entry *e);
void fluxonkv_ssd_corrupt(struct fluxonkv_ssd_entry *e);
int fluxonkv_ssd_index(struct fluxonkv_ssd_entry *e);

/* ssd_shard.c */
void fluxonkv_shard_offline_work(struct work_struct *work);
void fluxonkv_shard_reclaim_work(struct work_struct *work);
void fluxonkv_shard_put(struct fluxonkv_shard *sh);

/* ssd_io.c */
void fluxonkv_ssd_poke(struct fluxonkv_ssd_dev *dev);
void fluxonkv_ssd_persist_failed(const u8 *key, u32 key_len, u64 put_id,
				 u64 len, int err);
void fluxonkv_ssd_job_release(struct kref *ref);
void fluxonkv_ssd_worker_fn(struct work_struct *work);
bool fluxonkv_ssd_dev_idle(struct fluxonkv_ssd_dev *dev);

#endif /* _FLUXONKV_SSD_H */
