// SPDX-License-Identifier: GPL-2.0
/*
 * The room wait: a range for a put, a refill, a FETCH target or a staging
 * chunk, allocated in the segment; when none is free, compaction or the
 * master's eviction (NEED_ROOM, reference §4.1) makes one.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "kv.h"

/*
 * Clean drops (FLUXONKV_REGISTER_F_CLEAN_DROPS, replica.c) make room without
 * the daemon: an allocation short of free bytes drops clean replicas for
 * the difference before it compacts or asks the master, and a background
 * pass keeps clean_reserve_pct of the segment free, so refills at
 * io_uring's inline issue find room without waiting at all.
 */
unsigned int fluxonkv_clean_reserve_pct = 5;

static void fluxonkv_clean_reserve_run(struct work_struct *work);
static DECLARE_WORK(fluxonkv_clean_reserve_work, fluxonkv_clean_reserve_run);

static u64 fluxonkv_clean_reserve(void)
{
	return div_u64((u64)fluxonkv_seg.size *
		       READ_ONCE(fluxonkv_clean_reserve_pct), 100);
}

static u64 fluxonkv_free_bytes(void)
{
	return fluxonkv_seg.size - fluxonkv_segment_used();
}

static void fluxonkv_clean_reserve_run(struct work_struct *work)
{
	u64 reserve = fluxonkv_clean_reserve(), free_bytes;

	free_bytes = fluxonkv_free_bytes();
	if (free_bytes >= reserve)
		return;
	fluxonkv_stat_inc(clean_reserve_runs);
	fluxonkv_clean_drop(reserve - free_bytes);
}

/*
 * After an allocation (segment.c): below the reserve, a pass drops clean
 * replicas in the background.  Any context that may queue a work.
 */
void fluxonkv_clean_reserve_check(void)
{
	if (likely(fluxonkv_free_bytes() >= fluxonkv_clean_reserve()) ||
	    !fluxonkv_daemon_clean_drops())
		return;
	queue_work(system_unbound_wq, &fluxonkv_clean_reserve_work);
}

void fluxonkv_clean_reserve_stop(void)
{
	cancel_work_sync(&fluxonkv_clean_reserve_work);
}

/**
 * fluxonkv_clean_room() - clean drops for an allocation of @len that failed.
 * @len: the value's length.
 *
 * Only when the free bytes fall short of @len (with enough free bytes
 * that are not in one run, compaction moves values instead).  Sleeps
 * nowhere (io_uring's inline issue calls it).
 *
 * Return: true if anything was dropped: try the allocation again.
 */
bool fluxonkv_clean_room(u64 len)
{
	u64 need = round_up(len, FLUXONKV_SEGMENT_ALIGN), free_bytes;

	free_bytes = fluxonkv_free_bytes();
	return free_bytes < need && fluxonkv_clean_drop(need - free_bytes);
}

/*
 * NEED_ROOM for @len bytes that did not fit (and that no compaction could
 * make a run for).  If every window of @len bytes holds bytes no eviction
 * frees, nothing is asked: evicting would not help.  Short of free bytes,
 * and the first time anyway: the master evicts by its policy (BYTES),
 * coldest first.  Enough free bytes but no
 * run of @len (the segment is fragmented): the cheapest window's replicas
 * are named (HANDLES) -- one with pinned values only once per wait, since
 * their bytes come back only when they are unpinned, and naming another
 * window would give up more values for nothing.  0: evicted, retry;
 * -ENOSPC: nothing (more) to evict now; other -errno from the upcall.
 */
static int fluxonkv_ask_room(u64 len, struct fluxonkv_room_wait *w)
{
	struct fluxonkv_upcall_args args = { .bytes = len };
	struct fluxonkv_upcall up = {};
	bool pinned;
	int n;

	n = fluxonkv_segment_victims(len, w->victims, &pinned);
	if (n < 0) {
		fluxonkv_stat_inc(room_pinned);
		return -ENOSPC;
	}
	if (!w->by_policy ||
	    fluxonkv_seg.size - fluxonkv_segment_used() < len) {
		w->by_policy = true;
		n = 0;
	} else {
		if (!n)
			return 0;	/* a run is free now */
		if (pinned && w->pinned_window)
			return -ENOSPC;
		w->pinned_window |= pinned;
		fluxonkv_stat_inc(room_by_address);
	}
	return fluxonkv_upcall_handles(FLUXONKV_CMD_NEED_ROOM, &args, &up,
				       w->victims, n);
}

/*
 * Allocate room for @len bytes (reference §4.1): try; when the free bytes
 * are enough but not in one run, move values to make one (compaction,
 * tried again once more bytes are free than when it failed, or at the
 * next ask); else ask the master to evict (NEED_ROOM) and wait for a
 * free; every FLUXONKV_ROOM_ASK_MS ask again; give up after 5 s with
 * -ENOSPC.  Bytes pinned by holders come back only when their holders
 * go, which is why waiting can succeed.
 * @placeable: a put whose daemon can place it on another node: -ENOSPC as
 * soon as the master has nothing left to evict here.
 */
struct fluxonkv_alloc *fluxonkv_alloc_room_for(u64 len, bool placeable)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(FLUXONKV_ROOM_WAIT_MS);
	unsigned long next_ask = jiffies;
	struct fluxonkv_room_wait w = {};
	u64 need = round_up(len, FLUXONKV_SEGMENT_ALIGN), free_bytes;
	u64 compact_failed = 0;	/* free bytes when compaction last failed */
	struct fluxonkv_alloc *a;
	bool waited = false;
	int ret;

	for (;;) {
		unsigned int frees = fluxonkv_segment_frees();

		a = fluxonkv_alloc_new(len);
		if (PTR_ERR_OR_ZERO(a) != -ENOSPC)
			return a;	/* the range, or -ENOMEM / -EINVAL */
		if (time_after_eq(jiffies, deadline))
			break;
		if (fatal_signal_pending(current))
			return ERR_PTR(-EINTR);
		if (fluxonkv_clean_room(len))
			continue;
		/* again only once more bytes are free than when it failed */
		free_bytes = fluxonkv_seg.size - fluxonkv_segment_used();
		if (free_bytes >= need && free_bytes > compact_failed) {
			ret = fluxonkv_segment_compact(len);
			if (!ret)
				continue;
			if (ret == -EINTR)
				return ERR_PTR(ret);
			compact_failed = free_bytes;
		}
		if (!waited) {
			fluxonkv_stat_inc(room_waits);
			waited = true;
		}
		if (time_after_eq(jiffies, next_ask)) {
			next_ask = jiffies + msecs_to_jiffies(FLUXONKV_ROOM_ASK_MS);
			compact_failed = 0;	/* pins may have gone: try again */
			ret = fluxonkv_ask_room(len, &w);
			if (ret == -ENOTCONN || ret == -EINTR)
				return ERR_PTR(ret);
			if (ret == -ENOSPC && placeable)
				return ERR_PTR(ret);
			if (!ret)
				continue;	/* something was evicted: retry now */
		}
		/* until something is freed, or it is time to ask again */
		fluxonkv_segment_wait_free(frees, time_after(next_ask, jiffies) ?
					   next_ask - jiffies : 1);
	}
	pr_info_ratelimited("no room for %llu bytes after %u ms: segment total %zu, free %llu\n",
			    len, FLUXONKV_ROOM_WAIT_MS, fluxonkv_seg.size,
			    fluxonkv_seg.size - fluxonkv_segment_used());
	return ERR_PTR(-ENOSPC);
}

struct fluxonkv_alloc *fluxonkv_alloc_room(u64 len)
{
	return fluxonkv_alloc_room_for(len, false);
}

/*
 * The room wait of an asynchronous refill (io_uring's inline issue found
 * no room): the same steps as fluxonkv_alloc_room_for()'s loop -- try,
 * compact, ask the master (NEED_ROOM) every FLUXONKV_ROOM_ASK_MS, give up
 * after FLUXONKV_ROOM_WAIT_MS -- but nobody sleeps through it.  Between
 * tries the refill waits on the segment's room waitqueue with an entry of
 * its own (@rf->room.wait) whose wake function only queues @rf->room.work
 * (a wake may come from any context, with the waitqueue's lock held); a
 * delayed work also brings the next ask.  The work, in process context,
 * retries; with room it submits the read (fluxonkv_refill_submit()), whose
 * end completes the get as before.  No io-wq worker waits for room.
 *
 * Ownership: from fluxonkv_refill_room_wait() until @rf->done is called,
 * the refill belongs to the room wait.  Before calling @rf->done, the work
 * takes its entry off the waitqueue (under the waitqueue's lock, so no wake
 * queues the work after that) and cancels a queueing a wake made before:
 * nothing of the room wait touches @rf afterwards.  A submitter killed
 * meanwhile is not seen here (6.1 has no uring_cmd cancellation): the wait
 * ends with room or at its deadline, and the finish then drops the refill.
 */

static void fluxonkv_refill_room_unhook(struct fluxonkv_refill *rf)
{
	wait_queue_head_t *wq = &fluxonkv_seg.room_wq;

	spin_lock_irq(&wq->lock);
	list_del_init(&rf->room.wait.entry);
	spin_unlock_irq(&wq->lock);
	/* queued by a wake that came before the unhook: not run again */
	cancel_delayed_work(&rf->room.work);
}

/* The room wait ended without room: complete the get with @err. */
static void fluxonkv_refill_room_fail(struct fluxonkv_refill *rf, int err)
{
	fluxonkv_refill_room_unhook(rf);
	rf->alloc = NULL;
	rf->revoke = false;	/* says nothing of the SSD copy */
	rf->ret = err;
	rf->done(rf);
}

static int fluxonkv_refill_room_wake(struct wait_queue_entry *wait,
				     unsigned int mode, int sync, void *key)
{
	struct fluxonkv_refill *rf = container_of(wait, struct fluxonkv_refill,
						  room.wait);

	/* the waitqueue's lock is held: off it, as autoremove does */
	list_del_init(&wait->entry);
	mod_delayed_work(system_unbound_wq, &rf->room.work, 0);
	return 0;
}

/* On the room waitqueue (again), unless already there. */
static void fluxonkv_refill_room_hook(struct fluxonkv_refill *rf)
{
	wait_queue_head_t *wq = &fluxonkv_seg.room_wq;

	spin_lock_irq(&wq->lock);
	if (list_empty(&rf->room.wait.entry))
		__add_wait_queue(wq, &rf->room.wait);
	spin_unlock_irq(&wq->lock);
}

static void fluxonkv_refill_room_run(struct work_struct *work)
{
	struct fluxonkv_refill *rf = container_of(to_delayed_work(work),
						  struct fluxonkv_refill,
						  room.work);
	struct fluxonkv_refill_room *rw = &rf->room;
	u64 need = round_up(rw->len, FLUXONKV_SEGMENT_ALIGN), free_bytes;
	struct fluxonkv_alloc *a;
	unsigned int frees;
	int ret;

	for (;;) {
		frees = fluxonkv_segment_frees();
		a = fluxonkv_alloc_new(rw->len);
		if (!IS_ERR(a))
			break;
		if (PTR_ERR(a) != -ENOSPC) {
			fluxonkv_refill_room_fail(rf, PTR_ERR(a));
			return;
		}
		if (time_after_eq(jiffies, rw->deadline)) {
			pr_info_ratelimited("no room for a %llu byte refill after %u ms: segment total %zu, free %llu\n",
					    rw->len, FLUXONKV_ROOM_WAIT_MS,
					    fluxonkv_seg.size,
					    fluxonkv_seg.size -
					    fluxonkv_segment_used());
			fluxonkv_refill_room_fail(rf, -ENOSPC);
			return;
		}
		if (fluxonkv_clean_room(rw->len))
			continue;
		/* again only once more bytes are free than when it failed */
		free_bytes = fluxonkv_seg.size - fluxonkv_segment_used();
		if (free_bytes >= need && free_bytes > rw->compact_failed) {
			ret = fluxonkv_segment_compact(rw->len);
			if (!ret)
				continue;
			rw->compact_failed = free_bytes;
		}
		if (time_after_eq(jiffies, rw->next_ask)) {
			rw->next_ask = jiffies +
				       msecs_to_jiffies(FLUXONKV_ROOM_ASK_MS);
			rw->compact_failed = 0;	/* pins may have gone */
			ret = fluxonkv_ask_room(rw->len, &rw->asked);
			if (ret == -ENOTCONN) {
				fluxonkv_refill_room_fail(rf, ret);
				return;
			}
			if (!ret)
				continue;	/* something was evicted */
		}
		/* until something is freed, or it is time to ask again */
		fluxonkv_refill_room_hook(rf);
		/*
		 * The hook before the look at the count (a free increments it,
		 * then looks for waiters, wq_has_sleeper()'s barrier between):
		 * either the free sees the entry, or this sees the free.
		 */
		smp_mb();
		if (fluxonkv_segment_frees() != frees)
			continue;	/* freed before the hook */
		queue_delayed_work(system_unbound_wq, &rw->work,
				   time_after(rw->next_ask, jiffies) ?
				   rw->next_ask - jiffies : 1);
		return;
	}
	fluxonkv_refill_room_unhook(rf);
	fluxonkv_lat_record(FLUXONKV_LAT_REFILL_ALLOC, rw->t0);
	ret = fluxonkv_refill_submit(rf, a, rw->len);
	if (ret) {
		/* a stale route is revoked by the finish; the rest is not */
		rf->alloc = NULL;
		rf->revoke = ret == -ESTALE;
		rf->ret = ret;
		rf->done(rf);
	}
}

/**
 * fluxonkv_refill_room_wait() - wait for room for @rf without waiting.
 * @rf: an asynchronous refill whose allocation found no room: key,
 *	key_len, put_id and done set.
 * @len: the value's length.
 *
 * The wait starts at once (in a worker: the first ask may wait for the
 * daemon) and ends with the read submitted, or with @rf->done called with
 * the error; see above.  The caller returns -EIOCBQUEUED.
 */
void fluxonkv_refill_room_wait(struct fluxonkv_refill *rf, u64 len)
{
	struct fluxonkv_refill_room *rw = &rf->room;

	memset(rw, 0, sizeof(*rw));
	init_waitqueue_func_entry(&rw->wait, fluxonkv_refill_room_wake);
	INIT_LIST_HEAD(&rw->wait.entry);
	INIT_DELAYED_WORK(&rw->work, fluxonkv_refill_room_run);
	rw->len = len;
	rw->t0 = fluxonkv_clock();
	rw->deadline = jiffies + msecs_to_jiffies(FLUXONKV_ROOM_WAIT_MS);
	rw->next_ask = jiffies;
	fluxonkv_stat_inc(room_waits);
	fluxonkv_stat_inc(refills_room_async);
	queue_delayed_work(system_unbound_wq, &rw->work, 0);
}
