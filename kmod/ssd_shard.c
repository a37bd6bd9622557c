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
 * Every entry keeps an xxh64 of each MiB of its value, computed from the
 * segment before the write; every read covers whole checksummed MiBs
 * (the last one ends at the value's end) and verifies them in the target
 * before anyone sees the bytes.  A mismatch is an
 * IO error for that entry (-EIO, the caller revokes and re-selects) and the
 * entry is dropped: the device never hands a holder wrong bytes.
 *
 * Entries are kernel memory that unprivileged puts create (one per
 * persisted value, whatever its size), so their total is capped by
 * ssd_meta_max_kb: a persist that would exceed it evicts the oldest
 * entries of its ring first, and is refused (-ENOSPC, reported to the
 * master) if that is not enough.  Each entry is charged to the memory
 * cgroup of the process whose put created it.
 *
 * This file: attaching shards, the debugfs view, init and exit.  The
 * ring, the key index and the IO are in ssd_ring.c, ssd_index.c and
 * ssd_io.c (ssd.h); netlink messages are built in genl.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/blkdev.h>
#include <linux/moduleparam.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "compat.h"
#include "ssd.h"

/*
 * Bytes all SSD entries may take (their structs, keys and checksums); 0
 * at load: 1/64 of RAM.
 */
static unsigned int fluxonkv_ssd_meta_max_kb;
module_param_named(ssd_meta_max_kb, fluxonkv_ssd_meta_max_kb, uint, 0444);
MODULE_PARM_DESC(ssd_meta_max_kb,
		 "Kernel memory all SSD entries may take, KiB (default 0: 1/64 of RAM)");

struct fluxonkv_ssd_tier fluxonkv_ssd;

static void fluxonkv_shard_free_work(struct work_struct *work);

static const char *const fluxonkv_ssd_state_names[] = {
	"writing", "committed", "dead",
};
struct fluxonkv_ssd_stats fluxonkv_ssd_stats;

u64 fluxonkv_ssd_capacity(void)
{
	return READ_ONCE(fluxonkv_ssd.capacity);
}

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
	init_waitqueue_head(&dev->write_room);
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
static int fluxonkv_ssd_attached(struct file *file, u64 offset, u64 capacity)
{
	struct inode *inode = file->f_mapping->host;
	struct fluxonkv_ssd_dev *dev;
	struct fluxonkv_shard *sh;

	lockdep_assert_held(&fluxonkv_ssd.attach_lock);

	/*
	 * An offline shard's range may be attached again (a new shard), once
	 * no IO of the old one is in flight (-EBUSY until then).
	 */
	list_for_each_entry(dev, &fluxonkv_ssd.devs, node)
		list_for_each_entry(sh, &dev->shards, node) {
			if (sh->file->f_mapping->host != inode ||
			    offset >= sh->offset + sh->capacity ||
			    sh->offset >= offset + capacity)
				continue;
			if (!sh->offline)
				return -EEXIST;
			if (atomic_read(&sh->inflight))
				return -EBUSY;
		}
	return 0;
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
 * Return: 0, -EPERM without CAP_SYS_ADMIN, -EBUSY for a block device
 * someone else holds (a mounted filesystem, an O_EXCL opener: the module
 * claims the device exclusively), -EBADF for a bad or read-only
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
	if (S_ISBLK(file_inode(file)->i_mode)) {
		sh->bdev = I_BDEV(file->f_mapping->host);
		/*
		 * The device is ours alone while the shard uses it: a file
		 * opened O_EXCL holds that claim already (for as long as we
		 * hold the file); otherwise claim it now, so that the device
		 * of a mounted filesystem is refused (-EBUSY) and nobody can
		 * mount or O_EXCL-open it under us.
		 */
		if (!(file->f_mode & FMODE_EXCL)) {
			sh->claim = fluxonkv_bdev_claim(sh->bdev->bd_dev,
							&fluxonkv_ssd);
			if (IS_ERR(sh->claim)) {
				ret = PTR_ERR(sh->claim);
				sh->claim = NULL;
				goto err_free;
			}
		}
	}
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
	atomic_set(&sh->err_run, 0);
	atomic_set(&sh->inflight, 0);
	INIT_WORK(&sh->offline_work, fluxonkv_shard_offline_work);
	INIT_WORK(&sh->reclaim_work, fluxonkv_shard_reclaim_work);
	INIT_WORK(&sh->free_work, fluxonkv_shard_free_work);
	kref_init(&sh->ref);		/* the tier's, from the list_add on */

	mutex_lock(&fluxonkv_ssd.attach_lock);
	/* every slot taken: reclaimed offline shards gave theirs back */
	if (fluxonkv_ssd.nshards >= FLUXONKV_SSD_MAX_SHARDS) {
		ret = -ENOSPC;
		goto err_unlock;
	}
	ret = fluxonkv_ssd_attached(file, offset, capacity);
	if (ret)
		goto err_unlock;
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
	sh->serial = ++fluxonkv_ssd.serial;
	sh->index = find_first_zero_bit(fluxonkv_ssd.slots,
					FLUXONKV_SSD_MAX_SHARDS);
	__set_bit(sh->index, fluxonkv_ssd.slots);
	fluxonkv_ssd.nshards++;
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
	if (sh->claim)
		fluxonkv_bdev_unclaim(sh->claim, &fluxonkv_ssd);
	kfree(sh);
err_fput:
	fput(file);
	return ret;
}

/*
 * @sh failed FLUXONKV_SSD_OFFLINE_ERRORS IOs in a row: take it out.  No
 * new entry goes there (fluxonkv_ssd_next_shard() skips it,
 * fluxonkv_ring_reserve() refuses it, a write in flight ends DEAD), every
 * committed entry is forgotten (the master hears SSD_EVICTED and drops
 * its routes), its capacity is withdrawn and the master told (SSD_STATE);
 * then its reclaim frees what it holds (fluxonkv_shard_reclaim_work()).
 * Its range may be attached again at once (once no IO of it is in
 * flight), its slot once it is reclaimed.
 */
void fluxonkv_shard_offline_work(struct work_struct *work)
{
	struct fluxonkv_shard *sh = container_of(work, struct fluxonkv_shard,
						 offline_work);
	struct fluxonkv_ssd_entry *e;
	unsigned int forgotten = 0;

	mutex_lock(&fluxonkv_ssd.attach_lock);
	if (sh->offline) {
		mutex_unlock(&fluxonkv_ssd.attach_lock);
		return;
	}
	WRITE_ONCE(sh->offline, true);
	WRITE_ONCE(fluxonkv_ssd.capacity, fluxonkv_ssd.capacity - sh->capacity);
	mutex_unlock(&fluxonkv_ssd.attach_lock);
	atomic64_inc(&fluxonkv_ssd_stats.shards_offline);

	mutex_lock(&sh->lock);
	list_for_each_entry(e, &sh->entries, ring_node) {
		bool committed;

		/*
		 * Under the index lock for every entry, WRITING ones too: a
		 * write that commits after this pass sees @offline there.
		 */
		spin_lock(&fluxonkv_ssd.index_lock);
		committed = e->state == FLUXONKV_SSD_COMMITTED;
		spin_unlock(&fluxonkv_ssd.index_lock);
		if (committed) {
			fluxonkv_ssd_forget(e);
			forgotten++;
		}
	}
	mutex_unlock(&sh->lock);
	pr_err("SSD shard %u: %u IO errors in a row: offline, %llu MiB withdrawn, %u entries dropped (attach its range again once the device is healthy)\n",
	       sh->index, FLUXONKV_SSD_OFFLINE_ERRORS, sh->capacity >> 20,
	       forgotten);
	fluxonkv_notify_ssd_state();
	/* every entry is dead now: free them, and the shard */
	queue_work(fluxonkv_ssd.wq, &sh->reclaim_work);
}

/*
 * An offline shard's reclaim (queued by its offline pass, and again by
 * every entry of it that stops being busy): free its entries that are
 * dead and not busy, from the tail on, and, once it has none, take it off
 * its device's list and give its number back (a later attach may take
 * it), then drop the tier's reference.  A busy entry (a read in flight, a
 * commit the master has not answered, a write in flight) stops the pass
 * until its kick queues it again.
 */
void fluxonkv_shard_reclaim_work(struct work_struct *work)
{
	struct fluxonkv_shard *sh = container_of(work, struct fluxonkv_shard,
						 reclaim_work);
	struct fluxonkv_ssd_dev *dev = sh->dev;
	struct fluxonkv_ssd_entry *e;
	bool free, empty;

	mutex_lock(&sh->lock);
	/*
	 * From the tail, as a ring gives entries up: the debugfs cursor
	 * trusts an entry at or past the tail to be alive.
	 */
	while ((e = list_first_entry_or_null(&sh->entries,
					     struct fluxonkv_ssd_entry,
					     ring_node))) {
		/*
		 * Dead: unindexed, never routed again (the offline pass
		 * forgot the committed ones; a write that ends now ends
		 * DEAD).  Not busy: nobody holds it, and its last unpin's
		 * kick is over (done under this lock).
		 */
		spin_lock(&fluxonkv_ssd.index_lock);
		free = e->state == FLUXONKV_SSD_DEAD && !fluxonkv_entry_busy(e);
		spin_unlock(&fluxonkv_ssd.index_lock);
		if (!free)
			break;
		list_del(&e->ring_node);
		sh->meta -= e->meta;
		WRITE_ONCE(sh->tail, list_empty(&sh->entries) ? sh->head :
			   list_first_entry(&sh->entries,
					    struct fluxonkv_ssd_entry,
					    ring_node)->start);
		fluxonkv_entry_free(e);
		cond_resched();		/* a ring may hold many */
	}
	empty = list_empty(&sh->entries);
	mutex_unlock(&sh->lock);
	if (!empty)
		return;

	mutex_lock(&fluxonkv_ssd.attach_lock);
	if (sh->detached) {
		/* queued again by a kick while the last pass ran */
		mutex_unlock(&fluxonkv_ssd.attach_lock);
		return;
	}
	/*
	 * Empty for good: no entry joins an offline shard (checked under
	 * the shard lock).  Nothing reaches @sh now but through the list,
	 * and a write that picked it holds its own reference.
	 */
	if (dev->next_shard == sh)
		dev->next_shard = list_is_last(&sh->node, &dev->shards) ?
			list_first_entry(&dev->shards, struct fluxonkv_shard,
					 node) :
			list_next_entry(sh, node);
	list_del(&sh->node);
	if (list_empty(&dev->shards))
		dev->next_shard = NULL;
	__clear_bit(sh->index, fluxonkv_ssd.slots);
	fluxonkv_ssd.nshards--;
	sh->detached = true;
	mutex_unlock(&fluxonkv_ssd.attach_lock);
	atomic64_inc(&fluxonkv_ssd_stats.shards_reclaimed);
	pr_info("SSD shard %u: offline shard reclaimed, its number is free\n",
		sh->index);
	fluxonkv_shard_put(sh);
}

/* The last reference went: close, unclaim and free (process context). */
static void fluxonkv_shard_free_work(struct work_struct *work)
{
	struct fluxonkv_shard *sh = container_of(work, struct fluxonkv_shard,
						 free_work);

	/*
	 * Neither can be queued again: both come from IO or entries of
	 * @sh, and it has neither (the offline pass queues the reclaim).
	 */
	cancel_work_sync(&sh->offline_work);
	cancel_work_sync(&sh->reclaim_work);
	if (sh->claim)
		fluxonkv_bdev_unclaim(sh->claim, &fluxonkv_ssd);
	fput(sh->file);
	kfree(sh);
}

static void fluxonkv_shard_release(struct kref *ref)
{
	struct fluxonkv_shard *sh = container_of(ref, struct fluxonkv_shard,
						 ref);

	/* the fput and the unclaim may sleep: the caller may not */
	queue_work(fluxonkv_ssd.wq, &sh->free_work);
}

void fluxonkv_shard_put(struct fluxonkv_shard *sh)
{
	kref_put(&sh->ref, fluxonkv_shard_release);
}

/*
 * debugfs `rings`: per device a line, per shard a line, then its entries in
 * ring order -- a seq_file whose cursor is a record (device, shard, or an
 * entry's ring position).  The attach mutex is held for one buffer fill
 * (devices are never freed before exit; a reclaimed offline shard is: the
 * next fill finds the cursor's shard on its list by its serial, else
 * counts again from the first record), a shard's lock only
 * while one record is printed, the index lock only while one entry's state
 * is read: persists and refills never wait for the whole table.  Entries
 * leave a ring only at its tail, so an entry whose position is still at
 * or past the tail is alive and the cursor resumes in O(1).
 */
enum { FLUXONKV_RINGS_DEV, FLUXONKV_RINGS_SHARD, FLUXONKV_RINGS_ENTRY };

struct fluxonkv_rings_iter {
	loff_t index;			/* the *pos the cursor stands for */
	int kind;			/* FLUXONKV_RINGS_* */
	struct fluxonkv_ssd_dev *dev;	/* NULL: past the end */
	struct fluxonkv_shard *sh;	/* SHARD, ENTRY */
	u64 serial;			/* @sh's, seen under the attach mutex */
	struct fluxonkv_ssd_entry *e;	/* ENTRY: alive while pos >= tail */
	u64 pos;			/* ENTRY: e->start */
};

static void fluxonkv_rings_first(struct fluxonkv_rings_iter *it)
{
	it->kind = FLUXONKV_RINGS_DEV;
	it->dev = list_first_entry_or_null(&fluxonkv_ssd.devs,
					   struct fluxonkv_ssd_dev, node);
}

/* From a shard to the next shard, or the next device. */
static void fluxonkv_rings_next_shard(struct fluxonkv_rings_iter *it)
{
	if (!list_is_last(&it->sh->node, &it->dev->shards)) {
		it->sh = list_next_entry(it->sh, node);
		it->serial = it->sh->serial;
		it->kind = FLUXONKV_RINGS_SHARD;
	} else if (!list_is_last(&it->dev->node, &fluxonkv_ssd.devs)) {
		it->dev = list_next_entry(it->dev, node);
		it->kind = FLUXONKV_RINGS_DEV;
	} else {
		it->dev = NULL;
	}
}

/* Point an ENTRY cursor at @e, or move on if the shard has no more. */
static void fluxonkv_rings_at(struct fluxonkv_rings_iter *it,
			      struct fluxonkv_ssd_entry *e)
{
	if (!e) {
		fluxonkv_rings_next_shard(it);
		return;
	}
	it->kind = FLUXONKV_RINGS_ENTRY;
	it->e = e;
	it->pos = e->start;
}

/* The entry the cursor names, or the next alive one.  Shard lock held. */
static struct fluxonkv_ssd_entry *
fluxonkv_rings_entry(struct fluxonkv_rings_iter *it)
{
	lockdep_assert_held(&it->sh->lock);

	if (it->pos >= it->sh->tail)
		return it->e;
	/* popped: everything before the tail went, the tail is next */
	return list_first_entry_or_null(&it->sh->entries,
					struct fluxonkv_ssd_entry, ring_node);
}

static void fluxonkv_rings_advance(struct fluxonkv_rings_iter *it)
{
	struct fluxonkv_ssd_entry *e;
	struct fluxonkv_shard *sh = it->sh;

	switch (it->kind) {
	case FLUXONKV_RINGS_DEV:
		if (list_empty(&it->dev->shards)) {
			it->sh = NULL;
			if (list_is_last(&it->dev->node, &fluxonkv_ssd.devs))
				it->dev = NULL;
			else
				it->dev = list_next_entry(it->dev, node);
			return;
		}
		it->sh = list_first_entry(&it->dev->shards,
					  struct fluxonkv_shard, node);
		it->serial = it->sh->serial;
		it->kind = FLUXONKV_RINGS_SHARD;
		return;
	case FLUXONKV_RINGS_SHARD:
		mutex_lock(&sh->lock);
		e = list_first_entry_or_null(&sh->entries,
					     struct fluxonkv_ssd_entry,
					     ring_node);
		break;
	default:
		mutex_lock(&sh->lock);
		e = fluxonkv_rings_entry(it);
		/* by position: a popped entry's memory may be reused */
		if (e && e->start == it->pos)
			e = list_is_last(&e->ring_node, &sh->entries) ? NULL :
				list_next_entry(e, ring_node);
		break;
	}
	fluxonkv_rings_at(it, e);
	mutex_unlock(&sh->lock);
}

/*
 * The cursor's shard is still attached (the attach mutex was let go since
 * the last fill): that pointer on its device's list, with its serial (a
 * new shard may have the memory of a reclaimed one).
 */
static bool fluxonkv_rings_valid(struct fluxonkv_rings_iter *it)
{
	struct fluxonkv_shard *sh;

	lockdep_assert_held(&fluxonkv_ssd.attach_lock);

	if (!it->dev || it->kind == FLUXONKV_RINGS_DEV)
		return true;
	list_for_each_entry(sh, &it->dev->shards, node)
		if (sh == it->sh && sh->serial == it->serial)
			return true;
	return false;
}

static void *fluxonkv_rings_start(struct seq_file *m, loff_t *pos)
{
	struct fluxonkv_rings_iter *it = m->private;
	loff_t i;

	mutex_lock(&fluxonkv_ssd.attach_lock);
	if (*pos != it->index || !*pos || !fluxonkv_rings_valid(it)) {
		/* the beginning, or a seek: count from the first record */
		fluxonkv_rings_first(it);
		for (i = 0; it->dev && i < *pos; i++)
			fluxonkv_rings_advance(it);
		it->index = *pos;
	}
	return it->dev ? it : NULL;
}

static void *fluxonkv_rings_next(struct seq_file *m, void *v, loff_t *pos)
{
	struct fluxonkv_rings_iter *it = m->private;

	fluxonkv_rings_advance(it);
	it->index = ++*pos;
	return it->dev ? it : NULL;
}

static void fluxonkv_rings_stop(struct seq_file *m, void *v)
{
	mutex_unlock(&fluxonkv_ssd.attach_lock);
}

static int fluxonkv_rings_show_one(struct seq_file *m, void *v)
{
	struct fluxonkv_rings_iter *it = v;
	struct fluxonkv_ssd_dev *dev = it->dev;
	struct fluxonkv_shard *sh = it->sh;
	struct fluxonkv_ssd_entry *e;
	struct fluxonkv_ssd_job *job;
	unsigned int reads = 0, busy, pins;
	bool routed;
	u8 state;

	switch (it->kind) {
	case FLUXONKV_RINGS_DEV:
		spin_lock_irq(&dev->lock);
		list_for_each_entry(job, &dev->reads, node)
			reads++;
		busy = FLUXONKV_SSD_DEPTH - hweight_long(dev->idle);
		seq_printf(m, "device %u queued_reads %u queued_writes %u workers_busy %u writes_parked %d\n",
			   dev->id, reads, dev->nwrites, busy, dev->writes_blocked);
		spin_unlock_irq(&dev->lock);
		return 0;
	case FLUXONKV_RINGS_SHARD:
		mutex_lock(&sh->lock);
		seq_printf(m, "shard %u device %u offset %llu capacity %llu head %llu tail %llu used %llu offline %d\n",
			   sh->index, dev->id, sh->offset, sh->capacity,
			   sh->head, sh->tail, sh->head - sh->tail, sh->offline);
		mutex_unlock(&sh->lock);
		seq_puts(m, "\toffset\tlen\talen\tstate\tpins\tput_id\trouted\tkey\n");
		return 0;
	}
	mutex_lock(&sh->lock);
	e = fluxonkv_rings_entry(it);
	if (!e || e->start < it->pos) {
		/* gone, with every later one: nothing here */
		mutex_unlock(&sh->lock);
		return SEQ_SKIP;
	}
	/* a popped cursor moves on to the entry it prints */
	it->e = e;
	it->pos = e->start;
	spin_lock(&fluxonkv_ssd.index_lock);
	state = e->state;
	pins = e->pins;
	routed = fluxonkv_entry_routed(e);
	spin_unlock(&fluxonkv_ssd.index_lock);
	seq_printf(m, "\t%llu\t%llu\t%llu\t%s\t%u\t%llu\t%d\t",
		   e->start % sh->capacity, e->len, e->alen,
		   fluxonkv_ssd_state_names[state], pins, e->put_id, routed);
	seq_escape_mem(m, e->key, min_t(u32, e->key_len, 64),
		       ESCAPE_HEX | ESCAPE_NP | ESCAPE_APPEND, "\\\t\n ");
	seq_putc(m, '\n');
	mutex_unlock(&sh->lock);
	return 0;
}

static const struct seq_operations fluxonkv_rings_seq_ops = {
	.start = fluxonkv_rings_start,
	.next = fluxonkv_rings_next,
	.stop = fluxonkv_rings_stop,
	.show = fluxonkv_rings_show_one,
};

int fluxonkv_rings_open(struct inode *inode, struct file *file)
{
	struct fluxonkv_rings_iter *it;

	it = __seq_open_private(file, &fluxonkv_rings_seq_ops, sizeof(*it));
	return it ? 0 : -ENOMEM;
}

int fluxonkv_ssd_init(void)
{
	int ret;

	fluxonkv_ssd.meta_max = fluxonkv_ssd_meta_max_kb ?
		(u64)fluxonkv_ssd_meta_max_kb << 10 :
		((u64)totalram_pages() << PAGE_SHIFT) / 64;
	atomic64_set(&fluxonkv_ssd.meta_bytes, 0);
	mutex_init(&fluxonkv_ssd.attach_lock);
	init_waitqueue_head(&fluxonkv_ssd.slots_idle);
	INIT_LIST_HEAD(&fluxonkv_ssd.devs);
	spin_lock_init(&fluxonkv_ssd.index_lock);
	spin_lock_init(&fluxonkv_ssd.notice_lock);
	INIT_LIST_HEAD(&fluxonkv_ssd.notices);
	INIT_DELAYED_WORK(&fluxonkv_ssd.notice_work, fluxonkv_ssd_notice_flush);
	ret = fluxonkv_ssd_index_init();
	if (ret)
		return ret;
	ret = bioset_init(&fluxonkv_ssd.bioset, BIO_POOL_SIZE, 0,
			  BIOSET_NEED_BVECS);
	if (ret)
		goto err_index;
	/* Not a reclaim path: workers may wait for the daemon's answers. */
	fluxonkv_ssd.wq = alloc_workqueue("fluxonkv_ssd", WQ_UNBOUND, 0);
	if (!fluxonkv_ssd.wq) {
		ret = -ENOMEM;
		goto err_bioset;
	}
	return 0;

err_bioset:
	bioset_exit(&fluxonkv_ssd.bioset);
err_index:
	fluxonkv_ssd_index_exit();
	return ret;
}

void fluxonkv_ssd_exit(void)
{
	struct fluxonkv_ssd_job *job, *jtmp;
	struct fluxonkv_ssd_dev *dev, *dtmp;
	struct fluxonkv_ssd_entry *e, *etmp;
	struct fluxonkv_shard *sh, *stmp;

	/*
	 * Slots finish queued IO (commits fail fast without a daemon); an IO
	 * in flight queues its slot's work (an asynchronous read: its check)
	 * when it ends: every slot idle first, then the workqueue may go.
	 * Its destruction runs what is queued on it and what that queues:
	 * reads' checks, offline passes (their IO errors
	 * scheduled them), the reclaims they queue and the frees those end
	 * with -- no shard leaves the lists after this.
	 */
	list_for_each_entry(dev, &fluxonkv_ssd.devs, node)
		wait_event(fluxonkv_ssd.slots_idle, fluxonkv_ssd_dev_idle(dev));
	destroy_workqueue(fluxonkv_ssd.wq);
	cancel_delayed_work_sync(&fluxonkv_ssd.notice_work);
	fluxonkv_ssd_notice_free_list(&fluxonkv_ssd.notices);

	list_for_each_entry_safe(dev, dtmp, &fluxonkv_ssd.devs, node) {
		list_for_each_entry_safe(sh, stmp, &dev->shards, node) {
			list_for_each_entry_safe(e, etmp, &sh->entries,
						 ring_node) {
				WARN_ON(e->pins);
				fluxonkv_ssd_unindex(e);
				fluxonkv_entry_free(e);
			}
			if (sh->claim)
				fluxonkv_bdev_unclaim(sh->claim,
						      &fluxonkv_ssd);
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
	fluxonkv_ssd.next_dev = NULL;
	bioset_exit(&fluxonkv_ssd.bioset);
	fluxonkv_ssd_index_exit();
}
