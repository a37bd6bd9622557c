// SPDX-License-Identifier: GPL-2.0
/*
 * SSD IO: up to FLUXONKV_SSD_DEPTH IOs in flight per device (slots), bios
 * built straight from segment pages for a raw block device (nvmet's
 * io-cmd-bdev pattern), direct IO through the file for a shard file
 * (call_read_iter/call_write_iter on a kiocb of our own with ki_complete
 * over the same bvecs: loop's lo_rw_aio()).  Both complete asynchronously:
 * a slot's work starts an IO and returns, the completion queues the work
 * again to finish the job (checksums, indexing, the SSD_COMMIT sent
 * without waiting for its answer) and start the next (an asynchronous
 * read's completion queues its check apart, see below).  No thread is
 * blocked per IO.  Slots pick FLUXONKV_SSD_READ_WEIGHT reads for each
 * write when both are queued, at submission: refills are favoured,
 * background writes never starve.  A refill that finds a slot idle and no
 * read queued submits its read from its own context and finishes it
 * there (no hand-off to a worker and back).  An asynchronous read (a ring
 * refill) gives its slot back in the completion itself and queues its
 * check (ring tail, XXH64) on the unbound workqueue, in pieces of whole
 * MiBs run at once, the last of which hands the job to its owner: the
 * slot goes on with the queue at once, and the checks of many reads (and
 * the MiBs of one large read) run on any idle CPUs rather than in their
 * submitter's one task.
 *
 * Segment ranges are 4 KiB aligned and rounded up, so a read of the aligned
 * length always lands directly in the final target: no scratch copy is ever
 * needed, and the padding past len never reaches a holder (it is outside
 * the holder's len and zero on the device).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/blkdev.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "ssd.h"

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

/* An SSD_COMMIT sent without waiting: its answer ends it. */
struct fluxonkv_ssd_commit_req {
	struct fluxonkv_upcall up;	/* up.ssd_entry: commit-pinned, or NULL */
};

/*
 * The answer (or the daemon's going, or the timeout): the answer handler
 * routed the entry if the master published it; count, forget an entry the
 * master never took, and drop the commit pin.
 */
static void fluxonkv_ssd_commit_end(struct fluxonkv_upcall *up)
{
	struct fluxonkv_ssd_commit_req *req =
		container_of(up, struct fluxonkv_ssd_commit_req, up);
	struct fluxonkv_ssd_entry *e = up->ssd_entry;

	if (e) {
		if (!up->status)
			atomic64_inc(up->flags & FLUXONKV_SSD_F_PUBLISHED ?
				     &fluxonkv_ssd_stats.commits_published :
				     &fluxonkv_ssd_stats.commits_ignored);
		else
			fluxonkv_ssd_forget(e);
		fluxonkv_ssd_unpin(e);
	}
	kfree(req);
}

/*
 * SSD_COMMIT of a persist that ended (@err: 0, or its failure), without
 * waiting for the answer: a stopped daemon holds no IO slot.  @e: the
 * committed entry, commit-pinned (the pin is the request's now), or NULL.
 * Without memory for the request it is asked synchronously.
 */
static void fluxonkv_ssd_commit_async(const u8 *key, u32 key_len, u64 put_id,
				      u64 len, int err,
				      struct fluxonkv_ssd_entry *e)
{
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .put_id = put_id, .len = len,
		.err = err,
	};
	struct fluxonkv_ssd_commit_req *req = kzalloc(sizeof(*req), GFP_NOIO);
	bool published;
	int ret;

	if (req) {
		req->up.ssd_entry = e;
		req->up.end = fluxonkv_ssd_commit_end;
		fluxonkv_upcall_async(FLUXONKV_CMD_SSD_COMMIT, &args, &req->up);
		return;
	}
	ret = fluxonkv_ssd_commit(key, key_len, put_id, len, err, e,
				  &published);
	if (!e)
		return;
	if (!ret)
		atomic64_inc(published ? &fluxonkv_ssd_stats.commits_published :
			     &fluxonkv_ssd_stats.commits_ignored);
	else
		fluxonkv_ssd_forget(e);
	fluxonkv_ssd_unpin(e);
}

/* A persist failed before or while writing: count it, tell the master. */
void fluxonkv_ssd_persist_failed(const u8 *key, u32 key_len,
				 u64 put_id, u64 len, int err)
{
	atomic64_inc(&fluxonkv_ssd_stats.persist_errors);
	fluxonkv_ssd_commit_async(key, key_len, put_id, len, err, NULL);
}

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

static int fluxonkv_ssd_io_result(struct fluxonkv_ssd_worker *w);
static void fluxonkv_ssd_slot_done(struct fluxonkv_ssd_dev *dev, int slot);

/*
 * An asynchronous read's submitter, or its completion, is done with slot
 * @w: the last of the two gives it back.  Any context.
 */
static void fluxonkv_ssd_slot_put(struct fluxonkv_ssd_worker *w)
{
	if (atomic_dec_and_test(&w->holds))
		fluxonkv_ssd_slot_done(w->dev, w->slot);
}

/*
 * The IO of slot @w ended: any context (a bio's or a kiocb's completion).
 * An asynchronous read's job leaves the slot here: the slot goes on with
 * the queue (or idles), the job's check is queued (its own work), and
 * the check hands it to its owner (@end).
 */
static void fluxonkv_ssd_io_end(struct fluxonkv_ssd_worker *w, int ret)
{
	struct fluxonkv_ssd_job *job = w->job;

	w->io_ret = ret;
	atomic_dec(&w->sh->inflight);
	/* the device's time alone: submission to completion */
	fluxonkv_lat_record(w->write ? FLUXONKV_LAT_SSD_WRITE_IO :
			    FLUXONKV_LAT_SSD_READ_IO, w->t0);
	if (w->waiter) {
		complete(w->waiter);	/* a caller finishes its own read */
	} else if (job && job->end) {
		unsigned int i, n;

		job->ret = fluxonkv_ssd_io_result(w);
		w->job = NULL;
		/* a failed read has nothing to check: one piece settles it */
		n = job->ret ? 1 : job->nchecks;
		atomic_set(&job->checks_left, n);
		for (i = 0; i < n; i++)
			queue_work(fluxonkv_ssd.wq, &job->checks[i].work);
		/* nothing of @w is touched after this: the slot may be free */
		fluxonkv_ssd_slot_put(w);
	} else {
		queue_work(fluxonkv_ssd.wq, &w->work);
	}
}

static void fluxonkv_ssd_bio_end(struct bio *bio)
{
	struct fluxonkv_ssd_worker *w = bio->bi_private;
	int ret = blk_status_to_errno(bio->bi_status);

	bio_put(bio);
	fluxonkv_ssd_io_end(w, ret);
}

/*
 * Raw block device: bios built straight from the segment pages (the
 * nvmet io-cmd-bdev pattern: fill a bio, chain it to the next when full;
 * the last one, which every other completes into, ends the IO).  Bypasses
 * the block device's page cache entirely.
 */
static void fluxonkv_ssd_bio(struct fluxonkv_ssd_worker *w,
			     struct block_device *bdev, bool write,
			     unsigned int nr, loff_t pos)
{
	blk_opf_t opf = write ? REQ_OP_WRITE : REQ_OP_READ;
	struct bio *bio;
	unsigned int i;

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
	bio->bi_end_io = fluxonkv_ssd_bio_end;
	bio->bi_private = w;
	submit_bio(bio);
}

static void fluxonkv_ssd_kiocb_end(struct kiocb *iocb, long ret)
{
	struct fluxonkv_ssd_worker *w =
		container_of(iocb, struct fluxonkv_ssd_worker, iocb);

	fluxonkv_ssd_io_end(w, ret == (long)w->alen ? 0 : ret < 0 ? ret : -EIO);
}

/*
 * Shard file: asynchronous direct IO with our own kiocb (loop's
 * lo_rw_aio()), so the flags of the struct file userspace shares with us
 * (O_APPEND, a cleared O_DIRECT after attach) never steer where the
 * module writes.  The bvecs are the slot's and stay until the end.
 */
static void fluxonkv_ssd_kiocb(struct fluxonkv_ssd_worker *w,
			       struct file *file, bool write, unsigned int nr,
			       u64 alen, loff_t pos)
{
	struct iov_iter iter;
	ssize_t ret;

	iov_iter_bvec(&iter, write ? ITER_SOURCE : ITER_DEST, w->bvec, nr,
		      alen);
	init_sync_kiocb(&w->iocb, file);
	w->iocb.ki_flags = IOCB_DIRECT;
	w->iocb.ki_pos = pos;
	w->iocb.ki_complete = fluxonkv_ssd_kiocb_end;
	if (write)
		ret = call_write_iter(file, &w->iocb, &iter);
	else
		ret = call_read_iter(file, &w->iocb, &iter);
	if (ret != -EIOCBQUEUED)
		fluxonkv_ssd_kiocb_end(&w->iocb, ret);	/* done already */
}

/*
 * Start slot @w's IO: the first @alen bytes of @a to or from @pos of @sh.
 * It ends in fluxonkv_ssd_io_end(), possibly before this returns: the
 * caller touches nothing of the slot after it.
 */
static void fluxonkv_ssd_submit(struct fluxonkv_ssd_worker *w,
				struct fluxonkv_shard *sh, bool write,
				struct fluxonkv_alloc *a, u64 alen, loff_t pos)
{
	unsigned int nr = fluxonkv_ssd_bvecs(w->bvec, a, alen);

	w->sh = sh;
	w->write = write;
	w->alen = alen;
	w->pos = pos + sh->offset;
	w->t0 = fluxonkv_clock();
	atomic_inc(&sh->inflight);
	if (sh->bdev)
		fluxonkv_ssd_bio(w, sh->bdev, write, nr, w->pos);
	else
		fluxonkv_ssd_kiocb(w, sh->file, write, nr, alen, w->pos);
}

/*
 * Slot @w's IO ended: its error (counted, logged); 0 or -errno.  Any
 * context (an asynchronous read's completion).
 */
static int fluxonkv_ssd_io_result(struct fluxonkv_ssd_worker *w)
{
	struct fluxonkv_shard *sh = w->sh;
	int ret = w->io_ret;

	if (!ret) {
		if (atomic_read(&sh->err_run))
			atomic_set(&sh->err_run, 0);
		return 0;
	}
	atomic64_inc(&fluxonkv_ssd_stats.io_errors);
	pr_warn_ratelimited("SSD %s of %llu bytes at %lld on shard %u: %d\n",
			    w->write ? "write" : "read", w->alen, w->pos,
			    sh->index, ret);
	if (atomic_inc_return(&sh->err_run) == FLUXONKV_SSD_OFFLINE_ERRORS)
		queue_work(fluxonkv_ssd.wq, &sh->offline_work);
	return ret;
}

/*
 * Pick the next online shard of @dev, round-robin, with a reference (put
 * it with fluxonkv_shard_put()); NULL if none is (its shards may all have
 * been reclaimed since the persist chose @dev).
 */
static struct fluxonkv_shard *fluxonkv_ssd_next_shard(struct fluxonkv_ssd_dev *dev)
{
	struct fluxonkv_shard *sh, *first;

	mutex_lock(&fluxonkv_ssd.attach_lock);
	first = dev->next_shard;
	if (!first) {
		mutex_unlock(&fluxonkv_ssd.attach_lock);
		return NULL;
	}
	do {
		sh = dev->next_shard;
		dev->next_shard = list_is_last(&sh->node, &dev->shards) ?
			list_first_entry(&dev->shards, struct fluxonkv_shard,
					 node) :
			list_next_entry(sh, node);
	} while (sh->offline && dev->next_shard != first);
	if (sh->offline)
		sh = NULL;
	else
		kref_get(&sh->ref);	/* used after the mutex: the write's */
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
	spin_lock_irq(&dev->lock);
	list_add(&job->node, &dev->writes);
	WRITE_ONCE(dev->nwrites, dev->nwrites + 1);
	if (atomic_read(&sh->unpin_seq) == seen)
		dev->writes_blocked = true;
	spin_unlock_irq(&dev->lock);
}

/*
 * Start persisting one value: reserve its ring entry, fill the checksums,
 * submit the write.  Returns true once the write is in flight in @w;
 * false if the job is over without one (failed: released here) or was
 * parked (it stays queued).
 */
static bool fluxonkv_ssd_write_start(struct fluxonkv_ssd_worker *w,
				     struct fluxonkv_ssd_job *job)
{
	unsigned long patience = 2 * msecs_to_jiffies(fluxonkv_request_timeout_ms);
	struct fluxonkv_shard *sh = fluxonkv_ssd_next_shard(w->dev);
	struct fluxonkv_ssd_entry *e;
	int seen;

	if (!sh) {
		/* every shard of this device is offline */
		fluxonkv_ssd_persist_failed(job->key, job->key_len, job->put_id,
					    job->alloc->len, -ENODEV);
		goto release;
	}
	e = fluxonkv_ring_reserve(sh, job->key, job->key_len, job->put_id,
				  job->alloc->len, job->memcg, &seen);
	if (PTR_ERR_OR_ZERO(e) == -EAGAIN &&
	    (!job->parked_at || time_before(jiffies, job->parked_at + patience))) {
		fluxonkv_ssd_park(w->dev, job, sh, seen);
		fluxonkv_shard_put(sh);
		return false;
	}
	if (IS_ERR(e)) {
		fluxonkv_shard_put(sh);
		fluxonkv_ssd_persist_failed(job->key, job->key_len, job->put_id,
					    job->alloc->len, PTR_ERR(e));
		goto release;
	}
	/* WRITING: no reader looks at the checksums before COMMITTED. */
	fluxonkv_entry_csum_fill(e, job->alloc);
	w->job = job;
	w->entry = e;
	/* the WRITING entry keeps @sh on its list from here */
	fluxonkv_shard_put(sh);
	fluxonkv_ssd_submit(w, sh, true, job->alloc, e->alen,
			    e->start % sh->capacity);
	return true;

release:
	fluxonkv_ssd_job_release(&job->ref);
	return false;
}

/*
 * The write of @job into entry @e ended with @ret: commit it locally, tell
 * the master (SSD_COMMIT, not waited for: the commit pin is the request's
 * until the answer).  Releases @job.
 */
static void fluxonkv_ssd_write_done(struct fluxonkv_ssd_job *job,
				    struct fluxonkv_ssd_entry *e, int ret)
{
	struct fluxonkv_shard *sh = e->shard;

	/* Indexing may replace (and so unroute) an older entry of the key. */
	fluxonkv_removal_begin(e->key, e->key_len);
	spin_lock(&fluxonkv_ssd.index_lock);
	/* Taken out meanwhile (its forget pass skipped us while WRITING). */
	if (!ret && READ_ONCE(sh->offline))
		ret = -EIO;
	if (!ret) {
		/* Committed only once the full aligned length is written. */
		ret = fluxonkv_ssd_index(e);
		if (!ret) {
			e->state = FLUXONKV_SSD_COMMITTED;
			e->pins++;	/* commit pin: until the master answers */
		}
	}
	if (ret) {
		e->state = FLUXONKV_SSD_DEAD;
		/* not busy now: under the lock, as the reclaim looks (@sh) */
		fluxonkv_shard_kick(sh);
	}
	spin_unlock(&fluxonkv_ssd.index_lock);
	fluxonkv_removal_end(e->key, e->key_len);
	if (ret) {
		fluxonkv_ssd_persist_failed(job->key, job->key_len, job->put_id,
					    job->alloc->len, ret);
	} else {
		atomic64_inc(&fluxonkv_ssd_stats.writes);
		atomic64_add(e->alen, &fluxonkv_ssd_stats.write_bytes);
		fluxonkv_ssd_commit_async(job->key, job->key_len, job->put_id,
					  e->len, 0, e);
	}
	fluxonkv_ssd_job_release(&job->ref);
}

/*
 * Start @job's read (its entry read-pinned by the job's caller) in @w.  For
 * an asynchronous read the caller then lets go of the slot with
 * fluxonkv_ssd_slot_put(), touching neither @w nor @job after it.
 */
static void fluxonkv_ssd_read_start(struct fluxonkv_ssd_worker *w,
				    struct fluxonkv_ssd_job *job)
{
	struct fluxonkv_ssd_entry *e = job->entry;
	struct fluxonkv_shard *sh = e->shard;

	if (job->end)
		atomic_set(&w->holds, 2);	/* the caller's, the end's */
	w->job = job;
	fluxonkv_ssd_submit(w, sh, false, job->alloc, job->io_alen,
			    e->start % sh->capacity + job->io_off);
}

/* The range @job read is still ahead of its shard's ring tail. */
static bool fluxonkv_ssd_read_fresh(struct fluxonkv_ssd_job *job)
{
	struct fluxonkv_ssd_entry *e = job->entry;
	struct fluxonkv_shard *sh = e->shard;
	bool fresh;

	mutex_lock(&sh->lock);
	fresh = e->start >= sh->tail;
	mutex_unlock(&sh->lock);
	return fresh;
}

/*
 * @job's read ended with @ret and its checksums were found bad or not
 * (@csum_bad): a stale range is -ESTALE whatever its bytes, bad sums are
 * -EIO (the copy dropped).  Sets job->ret; drops the entry's pin (the job
 * owns it from the submission on, even if the waiter left).
 */
static void fluxonkv_ssd_read_settle(struct fluxonkv_ssd_job *job, int ret,
				     bool csum_bad)
{
	struct fluxonkv_ssd_entry *e = job->entry;

	if (!ret && !fluxonkv_ssd_read_fresh(job))
		ret = -ESTALE;
	if (!ret && csum_bad) {
		ret = -EIO;
		fluxonkv_ssd_corrupt(e);
	}
	if (!ret) {
		atomic64_inc(&fluxonkv_ssd_stats.reads);
		atomic64_add(job->io_alen, &fluxonkv_ssd_stats.read_bytes);
	}
	job->ret = ret;
	fluxonkv_ssd_unpin(e);
}

/*
 * @job's read ended with @ret: the range must still be ahead of the ring
 * tail and match its checksums.  Process context.
 */
static void fluxonkv_ssd_read_done(struct fluxonkv_ssd_job *job, int ret)
{
	bool bad = false;

	/* The captured range must still be ahead of the tail. */
	if (!ret && fluxonkv_ssd_read_fresh(job)) {
		u64 t0 = fluxonkv_clock();

		bad = fluxonkv_entry_csum_check(job->entry, job->alloc,
						job->io_off, job->io_alen);
		fluxonkv_lat_record(FLUXONKV_LAT_SSD_CSUM, t0);
	}
	fluxonkv_ssd_read_settle(job, ret, bad);
}

/*
 * A piece of an asynchronous read's check, on any CPU (a stale range is
 * not hashed: its bytes say nothing of the device); the last piece to
 * end settles the read (ring tail, the entry unpinned) and calls its
 * owner's @end, which ends the job with fluxonkv_ssd_read_async_end().
 */
static void fluxonkv_ssd_read_check(struct work_struct *work)
{
	struct fluxonkv_ssd_check *c =
		container_of(work, struct fluxonkv_ssd_check, work);
	struct fluxonkv_ssd_job *job = c->job;

	if (!job->ret && fluxonkv_ssd_read_fresh(job)) {
		u64 t0 = fluxonkv_clock();

		if (fluxonkv_entry_csum_check_at(job->entry,
						 fluxonkv_alloc_vaddr(job->alloc),
						 job->io_off, c->off, c->len))
			WRITE_ONCE(job->csum_bad, true);
		fluxonkv_lat_record(FLUXONKV_LAT_SSD_CSUM, t0);
	}
	/* ordered: every piece's csum_bad before the last one's look */
	if (!atomic_dec_and_test(&job->checks_left))
		return;
	fluxonkv_ssd_read_settle(job, job->ret, READ_ONCE(job->csum_bad));
	job->end(job->priv, job);
}

/*
 * Cut the check of @job's read into pieces of whole MiBs, at most one per
 * online CPU and FLUXONKV_SSD_CHECKS_MAX.  -ENOMEM.
 */
static int fluxonkv_ssd_checks_init(struct fluxonkv_ssd_job *job)
{
	/* the read's MiBs (@io_off is one's start; values fit a u32 of them) */
	u32 chunks = DIV_ROUND_UP(min(job->io_alen,
				      job->entry->len - job->io_off),
				  FLUXONKV_SSD_CSUM_CHUNK);
	unsigned int n = clamp_t(u32, min_t(u32, chunks, num_online_cpus()),
				 1, FLUXONKV_SSD_CHECKS_MAX);
	unsigned int i;

	job->checks = kcalloc(n, sizeof(*job->checks), GFP_KERNEL);
	if (!job->checks)
		return -ENOMEM;
	job->nchecks = n;
	for (i = 0; i < n; i++) {
		struct fluxonkv_ssd_check *c = &job->checks[i];
		u32 first = chunks * i / n, last = chunks * (i + 1) / n;

		INIT_WORK(&c->work, fluxonkv_ssd_read_check);
		c->job = job;
		c->off = job->io_off + (u64)first * FLUXONKV_SSD_CSUM_CHUNK;
		/* the last piece runs to the read's end */
		c->len = i + 1 < n ?
			 (u64)(last - first) * FLUXONKV_SSD_CSUM_CHUNK :
				     job->io_off + job->io_alen - c->off;
	}
	return 0;
}

/* Slot @w's IO ended: finish its job (process context). */
static void fluxonkv_ssd_finish(struct fluxonkv_ssd_worker *w)
{
	struct fluxonkv_ssd_job *job = w->job;
	int ret = fluxonkv_ssd_io_result(w);

	w->job = NULL;
	if (job->read) {
		/* a queued synchronous read (an asynchronous one left at its end) */
		fluxonkv_ssd_read_done(job, ret);
		complete(&job->done);
		kref_put(&job->ref, fluxonkv_ssd_job_release);
	} else {
		fluxonkv_ssd_write_done(job, w->entry, ret);
		w->entry = NULL;
	}
}

void fluxonkv_ssd_job_release(struct kref *ref)
{
	struct fluxonkv_ssd_job *job = container_of(ref, struct fluxonkv_ssd_job,
						    ref);

	fluxonkv_alloc_put(job->alloc);
	kfree(job->checks);
	/* a killed reader's target leaves its user's budget with the read */
	fluxonkv_user_uncharge(job->user, job->charged);
	fluxonkv_user_release(job->user);
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
		WRITE_ONCE(dev->nwrites, dev->nwrites - 1);
		/* one slot freed: one waiter (they re-check under the lock) */
		if (wq_has_sleeper(&dev->write_room))
			wake_up(&dev->write_room);
	}
	list_del(&job->node);
	return job;
}

/*
 * A slot's work: finish the IO that ended (if it was started from here),
 * then start the next job and return -- its completion brings us back.
 * Idle when nothing is queued.
 */
void fluxonkv_ssd_worker_fn(struct work_struct *work)
{
	struct fluxonkv_ssd_worker *w =
		container_of(work, struct fluxonkv_ssd_worker, work);
	struct fluxonkv_ssd_dev *dev = w->dev;
	struct fluxonkv_ssd_job *job;
	unsigned int noio = memalloc_noio_save();

	if (w->job)
		fluxonkv_ssd_finish(w);
	for (;;) {
		spin_lock_irq(&dev->lock);
		job = fluxonkv_ssd_pick(dev);
		if (!job) {
			__set_bit(w->slot, &dev->idle);
			spin_unlock_irq(&dev->lock);
			if (wq_has_sleeper(&fluxonkv_ssd.slots_idle))
				wake_up(&fluxonkv_ssd.slots_idle);
			break;
		}
		spin_unlock_irq(&dev->lock);

		if (job->read) {
			bool async = job->end;	/* @job may be gone after */

			fluxonkv_ssd_read_start(w, job);
			if (async)
				fluxonkv_ssd_slot_put(w);
			break;		/* the slot is the IO's until it ends */
		}
		if (fluxonkv_ssd_write_start(w, job))
			break;
	}
	memalloc_noio_restore(noio);
}

/* Every IO slot of @dev is idle: nothing in flight, nothing to finish. */
bool fluxonkv_ssd_dev_idle(struct fluxonkv_ssd_dev *dev)
{
	bool idle;

	spin_lock_irq(&dev->lock);
	idle = hweight_long(dev->idle) == FLUXONKV_SSD_DEPTH;
	spin_unlock_irq(&dev->lock);
	return idle;
}

/* Clear the parked state and start an idle worker if work is queued. */
void fluxonkv_ssd_poke(struct fluxonkv_ssd_dev *dev)
{
	unsigned long flags;
	int slot = -1;

	spin_lock_irqsave(&dev->lock, flags);
	if (dev->writes_blocked) {
		dev->writes_blocked = false;
		if (dev->idle && !list_empty(&dev->writes)) {
			slot = __ffs(dev->idle);
			__clear_bit(slot, &dev->idle);
		}
	}
	spin_unlock_irqrestore(&dev->lock, flags);
	if (slot >= 0)
		queue_work(fluxonkv_ssd.wq, &dev->workers[slot].work);
}

/*
 * The caller ran a job in @slot itself, or an asynchronous read left it:
 * hand the slot to its worker if work is waiting (nobody else could start
 * a worker for it meanwhile), else mark it idle again.  Any context.
 */
static void fluxonkv_ssd_slot_done(struct fluxonkv_ssd_dev *dev, int slot)
{
	unsigned long flags;
	bool more;

	spin_lock_irqsave(&dev->lock, flags);
	more = !list_empty(&dev->reads) ||
	       (!list_empty(&dev->writes) && !dev->writes_blocked);
	if (!more)
		__set_bit(slot, &dev->idle);
	spin_unlock_irqrestore(&dev->lock, flags);
	if (more)
		queue_work(fluxonkv_ssd.wq, &dev->workers[slot].work);
	else if (wq_has_sleeper(&fluxonkv_ssd.slots_idle))
		wake_up(&fluxonkv_ssd.slots_idle);
}

/* A persist fits @dev's queue now (a racy look: the queue re-checks). */
static bool fluxonkv_ssd_write_room(struct fluxonkv_ssd_dev *dev)
{
	return READ_ONCE(dev->nwrites) < FLUXONKV_SSD_WRITES_MAX;
}

/*
 * Sleep (killable) until @dev's persist queue looks like it has room, or
 * @timeout jiffies pass: the time left, 0, or -EINTR.  Exclusive: a write
 * leaving the queue wakes one waiter, so one that leaves without taking
 * the room (killed, timed out) passes the wake-up on.
 */
static long fluxonkv_ssd_wait_write_room(struct fluxonkv_ssd_dev *dev,
					 long timeout)
{
	DEFINE_WAIT(wait);

	for (;;) {
		prepare_to_wait_exclusive(&dev->write_room, &wait,
					  TASK_KILLABLE);
		if (fluxonkv_ssd_write_room(dev))
			break;
		if (fatal_signal_pending(current)) {
			timeout = -EINTR;
			break;
		}
		if (!timeout)
			break;
		timeout = schedule_timeout(timeout);
	}
	finish_wait(&dev->write_room, &wait);
	if (timeout <= 0 && fluxonkv_ssd_write_room(dev))
		wake_up(&dev->write_room);
	return timeout;
}

/*
 * Queue @job on @dev and wake an idle worker.  Persists beyond
 * FLUXONKV_SSD_WRITES_MAX per device are refused (-EBUSY): each one holds
 * DRAM the master cannot reuse until it is done, so a slow device must not
 * collect them without bound.  With @wait (a local put, in its putter's
 * context) the persist waits up to request_timeout_ms for room instead:
 * puts then go no faster than the device takes them; -EINTR if the putter
 * is killed meanwhile.
 */
static int fluxonkv_ssd_queue(struct fluxonkv_ssd_dev *dev,
			      struct fluxonkv_ssd_job *job, bool wait)
{
	unsigned long until = jiffies +
			      msecs_to_jiffies(fluxonkv_request_timeout_ms);
	int slot = -1;
	long left;

	spin_lock_irq(&dev->lock);
	while (!job->read && dev->nwrites >= FLUXONKV_SSD_WRITES_MAX) {
		spin_unlock_irq(&dev->lock);
		left = (long)(until - jiffies);
		if (!wait || left <= 0)
			return -EBUSY;
		atomic64_inc(&fluxonkv_ssd_stats.queue_waits);
		left = fluxonkv_ssd_wait_write_room(dev, left);
		if (left < 0)
			return -EINTR;
		spin_lock_irq(&dev->lock);
	}
	if (!job->read)
		WRITE_ONCE(dev->nwrites, dev->nwrites + 1);
	list_add_tail(&job->node, job->read ? &dev->reads : &dev->writes);
	if (dev->idle) {
		slot = __ffs(dev->idle);
		__clear_bit(slot, &dev->idle);
	}
	spin_unlock_irq(&dev->lock);
	if (slot >= 0)
		queue_work(fluxonkv_ssd.wq, &dev->workers[slot].work);
	return 0;
}

/* Some shard of @dev is online.  Attach mutex held. */
static bool fluxonkv_ssd_dev_online(struct fluxonkv_ssd_dev *dev)
{
	struct fluxonkv_shard *sh;

	list_for_each_entry(sh, &dev->shards, node)
		if (!sh->offline)
			return true;
	return false;
}

/**
 * fluxonkv_ssd_persist() - write a published replica to the SSD tier.
 * @key: key bytes.
 * @key_len: key length.
 * @put_id: version.
 * @a: the replica's bytes; the job takes its own reference.
 * @memcg: whose memory the entry is (a worker persisting for a putter), or
 *	NULL for the caller's own.
 * @wait: the caller is the putter: wait for room in the device's queue.
 *
 * Asynchronous: returns once queued.  Return: 0, -ENODEV if no online
 * shard is attached (the owner-side check of the reference's persist
 * request), -EBUSY if the device has FLUXONKV_SSD_WRITES_MAX persists
 * queued (with @wait: still, request_timeout_ms later), -EINTR (killed
 * while waiting) or -ENOMEM; on error the master has been told
 * (SSD_COMMIT with ERRNO).
 */
int fluxonkv_ssd_persist(const u8 *key, u32 key_len, u64 put_id,
			 struct fluxonkv_alloc *a, struct mem_cgroup *memcg,
			 bool wait)
{
	struct fluxonkv_ssd_dev *dev, *first;
	struct fluxonkv_ssd_job *job;
	int ret;

	/* the next device round-robin, skipping those with every shard out */
	mutex_lock(&fluxonkv_ssd.attach_lock);
	first = fluxonkv_ssd.next_dev;
	do {
		dev = fluxonkv_ssd.next_dev;
		if (!dev)
			break;
		fluxonkv_ssd.next_dev =
			list_is_last(&dev->node, &fluxonkv_ssd.devs) ?
			list_first_entry(&fluxonkv_ssd.devs,
					 struct fluxonkv_ssd_dev, node) :
			list_next_entry(dev, node);
		if (fluxonkv_ssd_dev_online(dev))
			break;
		dev = NULL;
	} while (fluxonkv_ssd.next_dev != first);
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
	/*
	 * The entry is the putter's kernel memory: @memcg when a worker
	 * persists for it, else the caller's (NULL: no memcg).
	 */
	if (memcg) {
		css_get(&memcg->css);
		job->memcg = memcg;
	} else {
		job->memcg = get_mem_cgroup_from_mm(current->mm);
	}
	job->key_len = key_len;
	memcpy(job->key, key, key_len);
	fluxonkv_alloc_get(a);
	fluxonkv_alloc_settle(a);	/* the write reads the bytes */
	job->alloc = a;
	ret = fluxonkv_ssd_queue(dev, job, wait);
	if (ret) {
		fluxonkv_ssd_persist_failed(key, key_len, put_id, a->len, ret);
		fluxonkv_ssd_job_release(&job->ref);
	}
	return ret;
}

/*
 * The IO length of a read of @len bytes from @off of @e into @a: in the
 * shard's alignment (@off is a MiB multiple, so at least the device's),
 * bounded by the entry's aligned length.  -EINVAL (and @e unpinned) for a
 * range outside the entry, a target too short, or a range whose ends are
 * not those of checksummed MiBs (or the value's end): every byte read is
 * verified, none is handed out on trust.
 */
static int fluxonkv_ssd_read_len(struct fluxonkv_ssd_entry *e,
				 struct fluxonkv_alloc *a, u64 off, u64 len,
				 u64 *alen)
{
	if (off % FLUXONKV_SSD_CSUM_CHUNK || off >= e->len || !len ||
	    len > e->len - off ||
	    (len < e->len - off && (off + len) % FLUXONKV_SSD_CSUM_CHUNK))
		goto inval;
	*alen = min_t(u64, e->alen - off, fluxonkv_ssd_alen(e->shard, len));
	if (a->span < *alen)
		goto inval;
	return 0;

inval:
	fluxonkv_ssd_unpin(e);
	return -EINVAL;
}

/*
 * A queued read of @alen bytes from @off of the pinned @e into @a, holding
 * one reference (the slot's) and one on @a; NULL (and @e unpinned)
 * without memory.
 */
static struct fluxonkv_ssd_job *fluxonkv_ssd_read_job(struct fluxonkv_ssd_entry *e,
						      struct fluxonkv_alloc *a,
						      u64 off, u64 alen)
{
	struct fluxonkv_ssd_job *job = kzalloc(sizeof(*job), GFP_KERNEL);

	if (!job) {
		fluxonkv_ssd_unpin(e);
		return NULL;
	}
	job->read = true;
	job->entry = e;
	job->io_off = off;
	job->io_alen = alen;
	fluxonkv_alloc_get(a);
	job->alloc = a;
	kref_init(&job->ref);
	return job;
}

/* An idle slot of @dev with no read queued ahead, taken; or -1. */
static int fluxonkv_ssd_take_slot(struct fluxonkv_ssd_dev *dev)
{
	int slot = -1;

	spin_lock_irq(&dev->lock);
	if (dev->idle && list_empty(&dev->reads)) {
		slot = __ffs(dev->idle);
		__clear_bit(slot, &dev->idle);
	}
	spin_unlock_irq(&dev->lock);
	return slot;
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

static int fluxonkv_ssd_read_user(struct fluxonkv_ssd_entry *e,
				  struct fluxonkv_alloc *a, u64 off, u64 len,
				  struct fluxonkv_user *user, u64 *charged);

/**
 * fluxonkv_ssd_read_charged() - fluxonkv_ssd_read() for a getter whose
 *	target counts in its user's pin budget.
 * @e: as fluxonkv_ssd_read()'s.
 * @a: as fluxonkv_ssd_read()'s.
 * @user: the getter's user (NULL: not charged), charged *@charged bytes
 *	for @a by the caller.
 * @charged: set to 0 when the read took the charge over: the getter was
 *	killed while its queued read goes on into @a, which stays allocated
 *	and charged to @user until the device ends the read.
 *
 * Return: as fluxonkv_ssd_read(); the caller uncharges what *@charged
 * still says.
 */
int fluxonkv_ssd_read_charged(struct fluxonkv_ssd_entry *e,
			      struct fluxonkv_alloc *a,
			      struct fluxonkv_user *user, u64 *charged)
{
	return fluxonkv_ssd_read_user(e, a, 0, e->len, user, charged);
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
	u64 charged = 0;

	return fluxonkv_ssd_read_user(e, a, off, len, NULL, &charged);
}

static int fluxonkv_ssd_read_user(struct fluxonkv_ssd_entry *e,
				  struct fluxonkv_alloc *a, u64 off, u64 len,
				  struct fluxonkv_user *user, u64 *charged)
{
	struct fluxonkv_ssd_dev *dev = e->shard->dev;
	struct fluxonkv_ssd_job *job;
	int ret, slot;
	u64 alen;

	ret = fluxonkv_ssd_read_len(e, a, off, len, &alen);
	if (ret)
		return ret;
	/*
	 * An idle worker slot and no read queued ahead: the caller does the
	 * IO itself in that slot, saving two context switches; the depth and
	 * the read/write weighting stay those of the queue.
	 */
	slot = fluxonkv_ssd_take_slot(dev);
	if (slot >= 0) {
		struct fluxonkv_ssd_job inline_job = {
			.read = true, .entry = e, .alloc = a,
			.io_off = off, .io_alen = alen,
		};
		struct fluxonkv_ssd_worker *w = &dev->workers[slot];
		DECLARE_COMPLETION_ONSTACK(io_done);
		unsigned int noio = memalloc_noio_save();

		/* The slot is ours: nobody queues its work while not idle. */
		w->waiter = &io_done;
		fluxonkv_ssd_read_start(w, &inline_job);
		/* uninterruptible: the IO lands in @a */
		wait_for_completion(&io_done);
		w->waiter = NULL;
		w->job = NULL;
		fluxonkv_ssd_read_done(&inline_job, fluxonkv_ssd_io_result(w));
		memalloc_noio_restore(noio);
		fluxonkv_ssd_slot_done(dev, slot);
		return inline_job.ret;
	}

	job = fluxonkv_ssd_read_job(e, a, off, alen);
	if (!job)
		return -ENOMEM;
	init_completion(&job->done);
	kref_get(&job->ref);		/* the waiter's */
	fluxonkv_ssd_queue(dev, job, false);	/* reads are never refused */

	ret = wait_for_completion_killable(&job->done);
	if (ret && user && *charged) {
		/*
		 * Killed, the read goes on into @a: its bytes stay the
		 * getter's user's until the read ends (the job's release,
		 * after our reference or the slot's, whichever is last).
		 */
		job->user = fluxonkv_user_hold(user);
		job->charged = *charged;
		*charged = 0;
	}
	ret = ret ? -EINTR : job->ret;
	kref_put(&job->ref, fluxonkv_ssd_job_release);
	return ret;
}

/**
 * fluxonkv_ssd_read_async() - refill @a from the pinned entry @e, not waiting.
 * @e: read-pinned by the caller; unpinned in every case (at the read's end).
 * @a: the target, at least the entry's aligned length long; the job takes
 *	its own reference.
 * @end: called once the read is over and checked, in a worker's process
 *	context, with @priv and the job; the job's owner then passes it to
 *	fluxonkv_ssd_read_async_end() for the result (any context).
 * @priv: for @end.
 *
 * The read is submitted from the caller's context when a slot is idle and
 * no read is queued ahead, else queued for the next free slot; either way
 * its completion gives the slot back (to the queue's next job) before the
 * check.  The caller must not sleep for long: it may be io_uring's
 * non-blocking issue.
 * Return: 0 once the read is on its way; -EINVAL or -ENOMEM, @end never
 * called.
 */
int fluxonkv_ssd_read_async(struct fluxonkv_ssd_entry *e,
			    struct fluxonkv_alloc *a,
			    void (*end)(void *priv, struct fluxonkv_ssd_job *job),
			    void *priv)
{
	struct fluxonkv_ssd_dev *dev = e->shard->dev;
	struct fluxonkv_ssd_job *job;
	unsigned int noio;
	int ret, slot;
	u64 alen;

	ret = fluxonkv_ssd_read_len(e, a, 0, e->len, &alen);
	if (ret)
		return ret;
	job = fluxonkv_ssd_read_job(e, a, 0, alen);
	if (!job)
		return -ENOMEM;
	job->end = end;
	job->priv = priv;
	if (fluxonkv_ssd_checks_init(job)) {
		fluxonkv_ssd_unpin(e);
		kref_put(&job->ref, fluxonkv_ssd_job_release);
		return -ENOMEM;
	}

	slot = fluxonkv_ssd_take_slot(dev);
	if (slot < 0) {
		fluxonkv_ssd_queue(dev, job, false);	/* never refused */
		return 0;
	}
	/* The slot is ours: start the IO in it as its worker would. */
	noio = memalloc_noio_save();
	fluxonkv_ssd_read_start(&dev->workers[slot], job);
	memalloc_noio_restore(noio);
	fluxonkv_ssd_slot_put(&dev->workers[slot]);
	return 0;
}

/**
 * fluxonkv_ssd_read_async_end() - the result of an asynchronous read.
 * @job: as fluxonkv_ssd_read_async()'s @end was given it; released here.
 *
 * Return: 0 or -errno, as fluxonkv_ssd_read()'s: the device's error, or
 * the check's (-ESTALE: the ring's tail overtook the range; -EIO: a
 * checksum mismatch).
 */
int fluxonkv_ssd_read_async_end(struct fluxonkv_ssd_job *job)
{
	int ret = job->ret;

	kref_put(&job->ref, fluxonkv_ssd_job_release);
	return ret;
}
