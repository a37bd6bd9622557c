// SPDX-License-Identifier: GPL-2.0
/*
 * The room wait: a range for a put, a refill, a FETCH target or a staging
 * chunk, allocated in the segment; when none is free, compaction or the
 * master's eviction (NEED_ROOM, reference §4.1) makes one.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/sched/signal.h>

#include "kv.h"

/* What one room wait has asked for so far (fluxonkv_ask_room()). */
struct fluxonkv_room_wait {
	bool by_policy;		/* a NEED_ROOM the master's policy answered */
	bool pinned_window;	/* a window with pinned values was named */
	u64 victims[FLUXONKV_VICTIMS_MAX];
};

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
