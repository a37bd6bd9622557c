// SPDX-License-Identifier: GPL-2.0
/*
 * The DRAM segment: the bytes every value lives in, and its range allocator.
 *
 * The segment is built from the largest physically contiguous chunks the
 * page allocator gives (up to 2 MiB, so huge-page sized runs are common and
 * a bio can carry many pages per bvec), split into order-0 pages so each can
 * be mapped individually.  The kernel sees it through one vmap; clients map
 * it read-only through a fault handler that maps 2 MiB windows.
 *
 * Ranges are allocated in FLUXONKV_SEGMENT_ALIGN granules, first fit by
 * address, from a tree of free extents (below); a range is freed only when
 * the last reference of its fluxonkv_alloc drops, and merges with the free
 * extents next to it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/pfn_t.h>
#include <linux/rbtree_augmented.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait_bit.h>

#include "compat.h"
#include "fluxonkv.h"

#define FLUXONKV_CHUNK_ORDER	min_t(unsigned int, 9, MAX_ORDER - 1)

struct fluxonkv_segment fluxonkv_seg;
static struct kmem_cache *fluxonkv_alloc_cache;
static struct kmem_cache *fluxonkv_extent_cache;

/*
 * A free run of the segment.  Free extents never touch (a freed range
 * merges with its neighbours); they sit in a tree by offset augmented with
 * the largest extent of each subtree, so the lowest run that fits is found
 * in O(log n) -- the free-area tree of mm/vmalloc.c, without alignment or
 * start constraints.  Segment lock.
 */
struct fluxonkv_extent {
	struct rb_node node;
	u64 start;
	u64 size;
	u64 subtree_max;	/* largest size in this subtree */
};

#define fluxonkv_extent_of(n)	rb_entry(n, struct fluxonkv_extent, node)

static u64 fluxonkv_extent_size(struct fluxonkv_extent *e)
{
	return e->size;
}

RB_DECLARE_CALLBACKS_MAX(static, fluxonkv_extent_cb, struct fluxonkv_extent,
			 node, u64, subtree_max, fluxonkv_extent_size);

static u64 fluxonkv_subtree_max(struct rb_node *n)
{
	return n ? fluxonkv_extent_of(n)->subtree_max : 0;
}

/* Enter @e (start and size set) in the free tree. */
static void fluxonkv_extent_insert(struct fluxonkv_extent *e)
{
	struct rb_node **link = &fluxonkv_seg.free.rb_node, *parent = NULL;

	while (*link) {
		parent = *link;
		if (e->start < fluxonkv_extent_of(parent)->start)
			link = &parent->rb_left;
		else
			link = &parent->rb_right;
	}
	e->subtree_max = e->size;
	rb_link_node(&e->node, parent, link);
	fluxonkv_extent_cb_propagate(parent, NULL);
	rb_insert_augmented(&e->node, &fluxonkv_seg.free, &fluxonkv_extent_cb);
	fluxonkv_seg.nfree++;
}

static void fluxonkv_extent_erase(struct fluxonkv_extent *e)
{
	rb_erase_augmented(&e->node, &fluxonkv_seg.free, &fluxonkv_extent_cb);
	fluxonkv_seg.nfree--;
}

/* The lowest free extent of at least @size bytes, or NULL. */
static struct fluxonkv_extent *fluxonkv_extent_fit(u64 size)
{
	struct rb_node *n = fluxonkv_seg.free.rb_node;
	struct fluxonkv_extent *e;

	if (fluxonkv_subtree_max(n) < size)
		return NULL;
	while (n) {
		e = fluxonkv_extent_of(n);
		if (fluxonkv_subtree_max(n->rb_left) >= size)
			n = n->rb_left;
		else if (e->size >= size)
			return e;
		else
			n = n->rb_right;	/* it must be there */
	}
	WARN_ON_ONCE(1);
	return NULL;
}

/* The free extents just before and just after @off (either may be NULL). */
static void fluxonkv_extent_around(u64 off, struct fluxonkv_extent **prev,
				   struct fluxonkv_extent **next)
{
	struct rb_node *n = fluxonkv_seg.free.rb_node;
	struct fluxonkv_extent *e;

	*prev = *next = NULL;
	while (n) {
		e = fluxonkv_extent_of(n);
		if (e->start < off) {
			*prev = e;
			n = n->rb_right;
		} else {
			*next = e;
			n = n->rb_left;
		}
	}
}

/*
 * Give [off, off + size) back, merging with the extents around it; @spare
 * becomes the new extent if it merges with neither.  Returns what is left
 * for the caller to free after dropping the lock (up to two extents).
 */
static void fluxonkv_extent_free(u64 off, u64 size,
				 struct fluxonkv_extent *spare,
				 struct fluxonkv_extent **unused)
{
	struct fluxonkv_extent *prev, *next;

	fluxonkv_extent_around(off, &prev, &next);
	unused[0] = spare;
	unused[1] = NULL;
	if (prev && prev->start + prev->size != off)
		prev = NULL;
	if (next && off + size != next->start)
		next = NULL;
	if (prev && next) {
		/* one extent from prev's start to next's end */
		fluxonkv_extent_erase(next);
		prev->size += size + next->size;
		fluxonkv_extent_cb_propagate(&prev->node, NULL);
		unused[1] = next;
	} else if (prev) {
		prev->size += size;
		fluxonkv_extent_cb_propagate(&prev->node, NULL);
	} else if (next) {
		/* moving next's start down keeps the order by offset */
		next->start = off;
		next->size += size;
		fluxonkv_extent_cb_propagate(&next->node, NULL);
	} else {
		spare->start = off;
		spare->size = size;
		fluxonkv_extent_insert(spare);
		unused[0] = NULL;
	}
}

/* How fragmented the free bytes are: extent count and the largest one. */
void fluxonkv_segment_free_stats(unsigned long *extents, u64 *largest)
{
	spin_lock(&fluxonkv_seg.lock);
	*extents = fluxonkv_seg.nfree;
	*largest = fluxonkv_subtree_max(fluxonkv_seg.free.rb_node);
	spin_unlock(&fluxonkv_seg.lock);
}

static void fluxonkv_segment_free_pages(unsigned long n)
{
	while (n--)
		__free_page(fluxonkv_seg.pages[n]);
}

/*
 * Never at the expense of other processes: high orders give up at once
 * (__GFP_NORETRY), order 0 reclaims but fails rather than invoke the OOM
 * killer (__GFP_RETRY_MAYFAIL); a fatal signal to the loading process
 * (insmod) ends the loop.
 */
static int fluxonkv_segment_alloc_pages(void)
{
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	unsigned int order = FLUXONKV_CHUNK_ORDER;
	unsigned long n = 0, i;
	struct page *page;
	int ret = -ENOMEM;

	while (n < seg->npages) {
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err;
		}
		while ((1UL << order) > seg->npages - n)
			order--;
		page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN |
				   (order ? __GFP_NORETRY : __GFP_RETRY_MAYFAIL),
				   order);
		if (!page) {
			if (!order) {
				pr_err("segment: out of memory after %lu of %lu MiB\n",
				       n >> (20 - PAGE_SHIFT),
				       seg->npages >> (20 - PAGE_SHIFT));
				goto err;
			}
			order--;
			continue;
		}
		split_page(page, order);
		for (i = 0; i < (1UL << order); i++)
			seg->pages[n++] = page + i;
		seg->chunks++;
		cond_resched();
	}
	return 0;

err:
	fluxonkv_segment_free_pages(n);
	return ret;
}

/*
 * The segment is pinned kernel memory: refuse one that would not leave the
 * rest of the system FLUXONKV_SEGMENT_SPARE_PCT of what is available now.
 */
#define FLUXONKV_SEGMENT_SPARE_PCT	10

static int fluxonkv_segment_fits(unsigned long npages)
{
	unsigned long avail = si_mem_available();
	unsigned long usable = avail - avail / 100 * FLUXONKV_SEGMENT_SPARE_PCT;

	if (npages <= usable)
		return 0;
	pr_err("segment: %lu MiB does not fit: %lu MiB available, at most %lu MiB may be pinned (load with a smaller segment_mb)\n",
	       npages >> (20 - PAGE_SHIFT), avail >> (20 - PAGE_SHIFT),
	       usable >> (20 - PAGE_SHIFT));
	return -ENOMEM;
}

int fluxonkv_segment_init(size_t size)
{
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	struct fluxonkv_extent *all;
	int ret;

	BUILD_BUG_ON(FLUXONKV_SEGMENT_ALIGN < PAGE_SIZE);
	spin_lock_init(&seg->lock);
	seg->size = size;
	seg->npages = size >> PAGE_SHIFT;
	seg->free = RB_ROOT;
	seg->nfree = 0;
	seg->allocs = RB_ROOT;
	init_waitqueue_head(&seg->room_wq);
	atomic_set(&seg->frees, 0);
	ret = fluxonkv_segment_fits(seg->npages);
	if (ret)
		return ret;

	fluxonkv_alloc_cache = KMEM_CACHE(fluxonkv_alloc, 0);
	if (!fluxonkv_alloc_cache)
		return -ENOMEM;
	fluxonkv_extent_cache = KMEM_CACHE(fluxonkv_extent, 0);
	if (!fluxonkv_extent_cache) {
		ret = -ENOMEM;
		goto err_cache;
	}
	all = kmem_cache_alloc(fluxonkv_extent_cache, GFP_KERNEL);
	if (!all) {
		ret = -ENOMEM;
		goto err_extent_cache;
	}
	seg->pages = kvmalloc_array(seg->npages, sizeof(*seg->pages),
				    GFP_KERNEL | __GFP_RETRY_MAYFAIL);
	if (!seg->pages) {
		ret = -ENOMEM;
		goto err_all;
	}
	ret = fluxonkv_segment_alloc_pages();
	if (ret)
		goto err_pages;
	seg->vaddr = vmap(seg->pages, seg->npages, VM_MAP, PAGE_KERNEL);
	if (!seg->vaddr) {
		ret = -ENOMEM;
		goto err_free_pages;
	}
	/* the whole segment is one free extent */
	all->start = 0;
	all->size = size;
	spin_lock(&seg->lock);
	fluxonkv_extent_insert(all);
	spin_unlock(&seg->lock);
	pr_info("segment: %zu MiB in %u chunks\n", size >> 20, seg->chunks);
	return 0;

err_free_pages:
	fluxonkv_segment_free_pages(seg->npages);
err_pages:
	kvfree(seg->pages);
err_all:
	kmem_cache_free(fluxonkv_extent_cache, all);
err_extent_cache:
	kmem_cache_destroy(fluxonkv_extent_cache);
err_cache:
	kmem_cache_destroy(fluxonkv_alloc_cache);
	return ret;
}

void fluxonkv_segment_exit(void)
{
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	struct fluxonkv_extent *e;

	WARN_ON(seg->used);
	/* everything was freed: one extent over the whole segment */
	WARN_ON(seg->nfree != 1);
	while (seg->free.rb_node) {
		e = fluxonkv_extent_of(seg->free.rb_node);
		fluxonkv_extent_erase(e);
		kmem_cache_free(fluxonkv_extent_cache, e);
	}
	vunmap(seg->vaddr);
	fluxonkv_segment_free_pages(seg->npages);
	kvfree(seg->pages);
	kmem_cache_destroy(fluxonkv_extent_cache);
	kmem_cache_destroy(fluxonkv_alloc_cache);
}

/* Enter @a in the address-ordered tree.  Segment lock held. */
static void fluxonkv_alloc_link(struct fluxonkv_alloc *a)
{
	struct rb_node **link = &fluxonkv_seg.allocs.rb_node, *parent = NULL;

	lockdep_assert_held(&fluxonkv_seg.lock);

	while (*link) {
		parent = *link;
		if (a->offset < rb_entry(parent, struct fluxonkv_alloc,
					 node)->offset)
			link = &parent->rb_left;
		else
			link = &parent->rb_right;
	}
	rb_link_node(&a->node, parent, link);
	rb_insert_color(&a->node, &fluxonkv_seg.allocs);
}

/*
 * Can go for room: a replica's bytes (an owner).  Bytes without one (a put
 * copying in, a refill, staging, a dropped replica a holder still keeps)
 * cannot be asked for.  Segment lock held.
 */
static bool fluxonkv_alloc_evictable(struct fluxonkv_alloc *a)
{
	return READ_ONCE(a->owner);
}

/*
 * What evicting @a costs: its bytes, sixteen times over when something
 * references it (a holder, a get in flight): its bytes only come back
 * when that goes, so a window of unpinned values is much preferred.
 */
#define FLUXONKV_PINNED_COST	16

/*
 * Referenced by more than its owner: a holder, a get in flight (a
 * compaction's own reference while it moves the bytes does not count).
 * Segment lock held.
 */
static bool fluxonkv_alloc_pinned(struct fluxonkv_alloc *a)
{
	lockdep_assert_held(&fluxonkv_seg.lock);

	return kref_read(&a->ref) > 1U + a->moving;
}

static u64 fluxonkv_alloc_cost(struct fluxonkv_alloc *a)
{
	return fluxonkv_alloc_pinned(a) ? a->span * FLUXONKV_PINNED_COST :
					  a->span;
}

/*
 * The first alloc whose range ends after @off (the one holding @off, or
 * the next one), or NULL.  Segment lock held.
 */
static struct rb_node *fluxonkv_alloc_from(u64 off)
{
	struct rb_node *n = fluxonkv_seg.allocs.rb_node, *found = NULL;

	lockdep_assert_held(&fluxonkv_seg.lock);

	while (n) {
		struct fluxonkv_alloc *a = rb_entry(n, struct fluxonkv_alloc,
						    node);

		if (a->offset + a->span > off) {
			found = n;
			n = n->rb_left;
		} else {
			n = n->rb_right;
		}
	}
	return found;
}

/*
 * Allocs the victim search steps over per hold of the segment lock: then
 * it lets go (puts and frees go on), reschedules, and goes on from the
 * offset it reached.  Bounds the lock's hold time, not the search.
 */
#define FLUXONKV_VICTIM_WALK	4096

/*
 * Count one more alloc walked; every FLUXONKV_VICTIM_WALK, let go of the
 * segment lock for a moment (returns true: the caller's tree positions
 * are stale).
 */
static bool fluxonkv_walk_yield(unsigned int *walked)
	__must_hold(&fluxonkv_seg.lock)
{
	if (++*walked < FLUXONKV_VICTIM_WALK)
		return false;
	spin_unlock(&fluxonkv_seg.lock);
	cond_resched();
	spin_lock(&fluxonkv_seg.lock);
	*walked = 0;
	return true;
}

/* The allocs a window of the victim search holds (struct fluxonkv_win). */
struct fluxonkv_win {
	u64 cost;		/* of the evictable ones */
	unsigned int n;		/* all of them */
	unsigned int bad;	/* not evictable: the window is no use */
};

static void fluxonkv_win_add(struct fluxonkv_win *w, struct fluxonkv_alloc *a)
{
	w->n++;
	if (fluxonkv_alloc_evictable(a))
		w->cost += fluxonkv_alloc_cost(a);
	else
		w->bad++;
}

/*
 * The reverse; a pin or an owner that changed since the add (read under
 * another lock) can only skew a window's cost, never wrap it.
 */
static void fluxonkv_win_del(struct fluxonkv_win *w, struct fluxonkv_alloc *a)
{
	u64 c = fluxonkv_alloc_cost(a);

	w->n -= !!w->n;
	if (fluxonkv_alloc_evictable(a))
		w->cost -= min(w->cost, c);
	else
		w->bad -= !!w->bad;
}

/**
 * fluxonkv_segment_victims() - what to give up for @len contiguous bytes.
 * @len: the allocation that failed.
 * @handles: out: at most FLUXONKV_VICTIMS_MAX replica handles.
 *
 * The range allocator needs one free run; eviction by popularity is blind
 * to addresses, so a segment with pinned values spread over it can be
 * emptied without ever making a run long enough.  This looks at the
 * segment itself: of the windows of @len bytes made only of free granules
 * and at most FLUXONKV_VICTIMS_MAX replicas, the one that gives up the
 * fewest bytes (pinned ones count FLUXONKV_PINNED_COST times: they come
 * back only when unpinned).  A cheapest window starts at 0 or where an
 * alloc ends (moving it left to there only drops allocs), so the search
 * slides one over the allocs in address order, adding what enters at its
 * end and taking out what it leaves: O(allocs).  It lets go of the
 * segment lock every FLUXONKV_VICTIM_WALK allocs; a window's cost is what
 * it was when the search passed it.  May sleep.
 *
 * @pinned: out: the window holds pinned values (their bytes come back only
 *	when unpinned).
 *
 * Return: the number of handles to evict (0: a free run exists now, retry
 * the allocation), or -ENOSPC: every window holds bytes no eviction can
 * free (puts and refills in flight, dropped replicas still held).
 */
int fluxonkv_segment_victims(u64 len, u64 *handles, bool *pinned)
{
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	u64 need = round_up(len, FLUXONKV_SEGMENT_ALIGN);
	u64 best_cost = U64_MAX, best = 0, start = 0;
	struct fluxonkv_win w = {};
	unsigned int walked = 0;
	struct rb_node *lo, *hi, *m;
	struct fluxonkv_alloc *b;
	int count = 0;

	might_sleep();
	spin_lock(&seg->lock);
	/* @lo: the first alloc ending after @start; @hi: the first past it */
	lo = hi = fluxonkv_alloc_from(start);
	while (start + need <= seg->size) {
		for (; hi; hi = rb_next(hi), walked++) {
			b = rb_entry(hi, struct fluxonkv_alloc, node);
			if (b->offset >= start + need)
				break;
			fluxonkv_win_add(&w, b);
		}
		if (!w.bad && w.n <= FLUXONKV_VICTIMS_MAX && w.cost < best_cost) {
			best_cost = w.cost;
			best = start;
			if (!w.cost)
				break;
		}
		if (!lo || lo == hi)
			break;	/* nothing after @start: the window was free */
		/* the next window starts where the first alloc in this ends */
		b = rb_entry(lo, struct fluxonkv_alloc, node);
		start = b->offset + b->span;
		fluxonkv_win_del(&w, b);
		lo = rb_next(lo);
		if (!fluxonkv_walk_yield(&walked))
			continue;
		/* the window is rebuilt from @start */
		memset(&w, 0, sizeof(w));
		lo = hi = fluxonkv_alloc_from(start);
	}
	*pinned = false;
	if (best_cost == U64_MAX) {
		count = -ENOSPC;
	} else {
		for (m = fluxonkv_alloc_from(best); m; m = rb_next(m)) {
			b = rb_entry(m, struct fluxonkv_alloc, node);
			if (b->offset < best)
				continue;
			if (b->offset >= best + need)
				break;
			if (!READ_ONCE(b->owner))
				continue;	/* its replica just went */
			if (fluxonkv_alloc_pinned(b))
				*pinned = true;
			handles[count++] = READ_ONCE(b->owner);
			/* (more than the search saw: the tree moved) */
			if (count == FLUXONKV_VICTIMS_MAX)
				break;
		}
	}
	spin_unlock(&seg->lock);
	return count;
}

/*
 * Compaction.  Eviction frees whole values, and a free run needs values
 * next to each other gone; a segment can have the bytes free, in holes
 * between values, and still fail a large put.  Before anything is
 * evicted for a put that fits in the free bytes, a slide moves a run of
 * values down into the holes between them, so that the holes gather into
 * one free run above the last -- the run of values chosen to move the
 * fewest bytes (compaction in mm/compaction.c moves pages for the same
 * reason: free memory that is not contiguous).
 *
 * Only a replica's bytes that nothing but the replica references can
 * move (fluxonkv_compact_freeze()): a holder, a get or a persist in
 * flight pins them in place, and bytes without an owner (a put copying
 * in, a refill, a target the daemon writes) never move.  Readers find the
 * bytes through @offset, which only pinners read; a pinner that comes
 * while the bytes move waits in fluxonkv_alloc_settle() for the new
 * @offset.  The bytes move with the segment lock dropped: what the move
 * writes of the hole below (the value's length of it, from the hole's
 * start) is taken out of the free tree first, so nothing is allocated
 * into it; the rest of a longer hole stays allocatable meanwhile.
 */

/* One slide at a time: two would pick the same holes and values. */
static DEFINE_MUTEX(fluxonkv_compact_mutex);

/*
 * Fault injection for the tests (debugfs, root only): after copying a
 * value, a slide waits this long before the value may be read again, so
 * that a get is sure to find it moving.  At most 10 s.
 */
u32 fluxonkv_compact_stall_ms;

/*
 * Fault injection for the tests (debugfs, root only): a slide spins this
 * many ms (at most 1000) between its look at a value's references and its
 * own reference, the segment lock held, so that the value's last
 * reference can be dropped in between (fluxonkv_compact_freeze()).
 */
u32 fluxonkv_compact_freeze_delay_ms;
u32 fluxonkv_compact_freeze_delays;	/* spins so far */
u32 fluxonkv_compact_freeze_lost;	/* freezes that lost the race */

static void fluxonkv_compact_freeze_delay(void)
{
	u32 ms = min(READ_ONCE(fluxonkv_compact_freeze_delay_ms), 1000U);

	WRITE_ONCE(fluxonkv_compact_freeze_delays,
		   READ_ONCE(fluxonkv_compact_freeze_delays) + 1);
	mdelay(ms);
}

/* A slide moves at most this many times the bytes it makes room for. */
#define FLUXONKV_COMPACT_RATIO	8
/* Bytes moved between reschedules. */
#define FLUXONKV_COMPACT_CHUNK	(1UL << 20)

/* No reference but the owner's, and not moving.  Segment lock held. */
static bool fluxonkv_alloc_movable(struct fluxonkv_alloc *a)
{
	lockdep_assert_held(&fluxonkv_seg.lock);

	return READ_ONCE(a->owner) && kref_read(&a->ref) == 1 && !a->moving;
}

/*
 * Wait until @a's bytes stay where they are (the caller pinned @a), so
 * that @offset and the bytes can be read.  May sleep.
 */
void fluxonkv_alloc_settle(struct fluxonkv_alloc *a)
{
	might_sleep();
	/* acquire: pairs with the thaw's release, so @offset is the new one */
	if (likely(!smp_load_acquire(&a->moving)))
		return;
	fluxonkv_stat_inc(compact_waits);
	/* acquire, as above */
	wait_var_event(&a->moving, !smp_load_acquire(&a->moving));
}

/* Clear the mark and wake who settles on it.  Segment lock held. */
static void fluxonkv_compact_thaw(struct fluxonkv_alloc *a)
{
	lockdep_assert_held(&fluxonkv_seg.lock);

	/* release: the new @offset and bytes before the flag clears */
	smp_store_release(&a->moving, false);
	fluxonkv_seg.moving--;
	/* the clear before wake_up_var()'s look for waiters */
	smp_mb();
	wake_up_var(&a->moving);
}

/*
 * Mark @a moving if nothing but its owner references it, and take the
 * slide's own reference.  Segment lock held.
 *
 * The ordering of freeze, pin, put and free:
 *
 *  freeze (here, segment lock held): mark @moving; full barrier; read
 *	the count: 1 (the owner's) or leave @a; then take the slide's
 *	reference with kref_get_unless_zero().
 *  pin (fluxonkv_alloc_get(), no lock: the pinner already holds a
 *	reference, a replica's or an index lookup's): count + 1; full
 *	barrier; read @moving, settle while it is set.  A pin made before
 *	the mark is seen by the count check (@a stays); one made after
 *	sees the mark and waits for the thaw -- the two barriers pair.
 *  put (fluxonkv_alloc_put(), no lock): count - 1; the put that reaches
 *	zero calls fluxonkv_alloc_release(), which only then takes the
 *	segment lock to give the range back and unlink @a.
 *  free (fluxonkv_alloc_release(), segment lock): the range back to the
 *	free tree, @a out of the address tree; @a itself freed after the
 *	lock is dropped.
 *
 * So the count can reach zero between the check and the slide's
 * reference -- the last put does not take the segment lock -- but @a
 * cannot be unlinked or freed while the lock is held here.  A plain
 * kref_get() would take a reference from zero (refcount_t saturates) and
 * leave the slide moving a range that the release frees under it: two
 * free extents overlapping, two values sharing bytes.  With
 * kref_get_unless_zero() the slide sees the count gone, thaws and leaves
 * @a to its release; once the slide holds its reference, an eviction
 * meanwhile frees the range only when the move is over.
 */
static bool fluxonkv_compact_freeze(struct fluxonkv_alloc *a)
{
	lockdep_assert_held(&fluxonkv_seg.lock);
	if (!fluxonkv_alloc_movable(a))
		return false;
	WRITE_ONCE(a->moving, true);
	fluxonkv_seg.moving++;
	/* the mark before the look at pins: fluxonkv_alloc_get() pairs */
	smp_mb();
	if (kref_read(&a->ref) != 1) {
		fluxonkv_compact_thaw(a);	/* a pinner may wait already */
		return false;
	}
	if (unlikely(READ_ONCE(fluxonkv_compact_freeze_delay_ms)))
		fluxonkv_compact_freeze_delay();
	/* the last put may have come since the look (see above) */
	if (!kref_get_unless_zero(&a->ref)) {
		WRITE_ONCE(fluxonkv_compact_freeze_lost,
			   fluxonkv_compact_freeze_lost + 1);
		fluxonkv_compact_thaw(a);
		return false;
	}
	return true;
}

/*
 * The cheapest slide for @need bytes: consecutive movable allocs, from
 * the end of the alloc before them (@from) to the start of the one after
 * (@to), whose holes add up to @need; the fewest bytes moved, at most
 * FLUXONKV_COMPACT_RATIO * @need.  A window over the allocs in address
 * order that gives up its first alloc while the rest still frees enough:
 * O(allocs), the segment lock let go every FLUXONKV_VICTIM_WALK allocs (a
 * run then starts again there).  Returns whether one was found.
 */
static bool fluxonkv_compact_pick(u64 need, u64 *from, u64 *to)
{
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	u64 best = U64_MAX, limit = need * FLUXONKV_COMPACT_RATIO;
	u64 start = 0, moved = 0, end, last;
	struct rb_node *first = NULL, *n, *next;
	struct fluxonkv_alloc *a, *f;
	unsigned int walked = 0;

	spin_lock(&seg->lock);
	for (n = rb_first(&seg->allocs); n; n = next) {
		a = rb_entry(n, struct fluxonkv_alloc, node);
		next = rb_next(n);
		last = a->offset + a->span;
		if (!fluxonkv_alloc_movable(a)) {
			first = NULL;	/* a run cannot cross it */
			moved = 0;
			start = last;
			goto step;
		}
		if (!first)
			first = n;
		moved += a->span;
		end = next ? rb_entry(next, struct fluxonkv_alloc,
				      node)->offset : seg->size;
		/* give up the first alloc while the rest frees enough */
		while (first != n) {
			f = rb_entry(first, struct fluxonkv_alloc, node);
			if (end - (f->offset + f->span) - (moved - f->span) < need)
				break;
			start = f->offset + f->span;
			moved -= f->span;
			first = rb_next(first);
		}
		if (end - start - moved >= need && moved <= limit &&
		    moved < best) {
			best = moved;
			*from = start;
			*to = end;
		}
step:
		if (!fluxonkv_walk_yield(&walked))
			continue;
		first = NULL;
		moved = 0;
		start = last;
		next = fluxonkv_alloc_from(last);
		/* one allocated meanwhile across @last: a run starts after it */
		if (next && rb_entry(next, struct fluxonkv_alloc,
				     node)->offset < last) {
			a = rb_entry(next, struct fluxonkv_alloc, node);
			start = a->offset + a->span;
			next = rb_next(next);
		}
	}
	spin_unlock(&seg->lock);
	return best != U64_MAX;
}

/* memmove() of @len bytes from @src down to @dst, rescheduling. */
static void fluxonkv_compact_copy(u64 dst, u64 src, u64 len)
{
	u8 *base = fluxonkv_seg.vaddr;
	u64 done, n;

	/* front to back: a chunk's source lies above what was written */
	for (done = 0; done < len; done += n) {
		n = min_t(u64, len - done, FLUXONKV_COMPACT_CHUNK);
		memmove(base + dst + done, base + src + done, n);
		cond_resched();
	}
}

/*
 * Take out of the free tree what moving @a down onto @hole (the free
 * extent just below it) writes: [hole->start, hole->start + @a->span),
 * or the whole hole when the value is not shorter than it (the move then
 * writes it all, and @a's own first bytes).  The part of a longer hole
 * that the move does not write stays free to allocate while the bytes
 * move: @hole keeps it, and @spare (if it is not NULL) is kept for the
 * range the move gives back.  Without a @spare the whole hole goes, as
 * then the hole itself is the extent given back.  Returns the extent to
 * hand to fluxonkv_extent_free() at the end.  Segment lock held.
 */
static struct fluxonkv_extent *fluxonkv_compact_take(struct fluxonkv_extent *hole,
						    struct fluxonkv_alloc *a,
						    struct fluxonkv_extent **spare)
{
	struct fluxonkv_extent *give;

	lockdep_assert_held(&fluxonkv_seg.lock);

	if (hole->size <= a->span || !*spare) {
		fluxonkv_extent_erase(hole);
		return hole;
	}
	/* the rest stays where it was in the order by offset */
	hole->start += a->span;
	hole->size -= a->span;
	fluxonkv_extent_cb_propagate(&hole->node, NULL);
	give = *spare;
	*spare = NULL;
	return give;
}

/*
 * Slide every alloc in [@from, @to) down onto the free extent just below
 * it, lowest first; what cannot move (pinned since the pick, or new)
 * stays and the slide goes on above it.  Only the bytes a move writes are
 * out of the free tree while it copies (fluxonkv_compact_take()): a put
 * may take the rest of a longer hole meanwhile, and lies then between the
 * value's new and old offsets (the value is entered in the address tree
 * again at its new one).  Returns the bytes moved.
 */
static u64 fluxonkv_compact_slide(u64 from, u64 to)
{
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	struct fluxonkv_extent *hole, *above, *give, *unused[2];
	struct fluxonkv_extent *spare = NULL;
	struct fluxonkv_alloc *a;
	u64 cursor = from, moved = 0, old, dst, back;
	struct rb_node *n;

	for (;;) {
		/*
		 * The extent a move into part of a hole gives back; none
		 * (allocation failed): the move takes the whole hole.
		 */
		if (!spare)
			spare = kmem_cache_alloc(fluxonkv_extent_cache,
						 GFP_KERNEL);
		spin_lock(&seg->lock);
		n = fluxonkv_alloc_from(cursor);
		a = n ? rb_entry(n, struct fluxonkv_alloc, node) : NULL;
		if (!a || a->offset >= to) {
			spin_unlock(&seg->lock);
			break;
		}
		cursor = a->offset + a->span;
		fluxonkv_extent_around(a->offset, &hole, &above);
		/* nothing free just below it, or pinned since the pick */
		if (!hole || hole->start + hole->size != a->offset ||
		    !fluxonkv_compact_freeze(a)) {
			spin_unlock(&seg->lock);
			continue;
		}
		old = a->offset;
		dst = hole->start;
		/* what the move writes is no longer free to allocate */
		give = fluxonkv_compact_take(hole, a, &spare);
		/* given back: above what it writes, or the source alone */
		back = give == hole ? dst + a->span : old;
		spin_unlock(&seg->lock);

		/* isolated: no view of what @dst held stays on @a's bytes */
		fluxonkv_segment_zap(dst, a->span);
		fluxonkv_compact_copy(dst, old, a->span);
		if (READ_ONCE(fluxonkv_compact_stall_ms))
			msleep(min(READ_ONCE(fluxonkv_compact_stall_ms), 10000U));

		spin_lock(&seg->lock);
		/*
		 * What was allocated meanwhile in the hole's rest lies
		 * between @dst and @old: @a goes before it in the tree.
		 */
		rb_erase(&a->node, &seg->allocs);
		WRITE_ONCE(a->offset, dst);
		fluxonkv_alloc_link(a);
		fluxonkv_extent_free(back, old + a->span - back, give, unused);
		fluxonkv_compact_thaw(a);
		spin_unlock(&seg->lock);
		if (unused[0])
			kmem_cache_free(fluxonkv_extent_cache, unused[0]);
		if (unused[1])
			kmem_cache_free(fluxonkv_extent_cache, unused[1]);
		moved += a->span;
		cursor = dst + a->span;
		fluxonkv_alloc_put(a);	/* the slide's reference */
	}
	if (spare)
		kmem_cache_free(fluxonkv_extent_cache, spare);
	return moved;
}

/**
 * fluxonkv_segment_compact() - make a free run of @len bytes by moving
 *	values instead of evicting them.
 * @len: the allocation that failed.
 *
 * Return: 0 when a run of @len is free now (retry the allocation),
 * -ENOSPC when no slide could make one (pinned values in the way, or
 * one would move too much), -EINTR on a fatal signal.  May sleep.
 */
int fluxonkv_segment_compact(u64 len)
{
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	u64 need = round_up(len, FLUXONKV_SEGMENT_ALIGN), from, to, moved;
	bool made = false;
	int ret = -ENOSPC;

	might_sleep();
	if (mutex_lock_killable(&fluxonkv_compact_mutex))
		return -EINTR;
	/* the slide before ours may have made the run */
	spin_lock(&seg->lock);
	if (fluxonkv_subtree_max(seg->free.rb_node) >= need)
		ret = 0;
	spin_unlock(&seg->lock);
	if (ret && fluxonkv_compact_pick(need, &from, &to)) {
		moved = fluxonkv_compact_slide(from, to);
		spin_lock(&seg->lock);
		made = fluxonkv_subtree_max(seg->free.rb_node) >= need;
		spin_unlock(&seg->lock);
		if (made) {
			fluxonkv_stat_inc(compactions);
			ret = 0;
		}
		fluxonkv_stat_add(compacted_bytes, moved);
	}
	mutex_unlock(&fluxonkv_compact_mutex);
	if (made) {
		/* a larger run: waiters for room may fit now too */
		atomic_inc(&seg->frees);
		if (wq_has_sleeper(&seg->room_wq))
			wake_up_all(&seg->room_wq);
	}
	return ret;
}

/*
 * Fault injection for the tests (debugfs fail_alloc, root only): N > 0
 * makes the Nth fluxonkv_alloc_new() from now fail as its slab allocation
 * failing would; 0 is off (one READ_ONCE on the way).
 */
u32 fluxonkv_fail_alloc;

static bool fluxonkv_alloc_should_fail(void)
{
	u32 n = READ_ONCE(fluxonkv_fail_alloc), seen;

	if (likely(!n))
		return false;
	/* each caller counts once, even when several race */
	while (n) {
		seen = cmpxchg(&fluxonkv_fail_alloc, n, n - 1);
		if (seen == n)
			return n == 1;
		n = seen;
	}
	return false;
}

/**
 * fluxonkv_alloc_new() - allocate a range for a value of @len bytes.
 * @len: value length, 1..segment size.
 *
 * One convention for every caller: an ERR_PTR on failure, never NULL.
 * Return: the range with one reference; ERR_PTR(-ENOSPC) if no contiguous
 * room is free now (the caller may ask the master for room and retry),
 * ERR_PTR(-ENOMEM) if the slab allocations failed, ERR_PTR(-EINVAL) for a
 * length out of range.
 */
struct fluxonkv_alloc *fluxonkv_alloc_new(u64 len)
{
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	u64 span = round_up(len, FLUXONKV_SEGMENT_ALIGN);
	struct fluxonkv_extent *e, *used_up = NULL;
	struct fluxonkv_alloc *a;

	if (WARN_ON_ONCE(!len || len > seg->size))
		return ERR_PTR(-EINVAL);
	if (unlikely(fluxonkv_alloc_should_fail()))
		return ERR_PTR(-ENOMEM);
	a = kmem_cache_alloc(fluxonkv_alloc_cache, GFP_KERNEL);
	if (!a)
		return ERR_PTR(-ENOMEM);
	a->spare = kmem_cache_alloc(fluxonkv_extent_cache, GFP_KERNEL);
	if (!a->spare) {
		kmem_cache_free(fluxonkv_alloc_cache, a);
		return ERR_PTR(-ENOMEM);
	}

	spin_lock(&seg->lock);
	e = fluxonkv_extent_fit(span);
	if (!e) {
		spin_unlock(&seg->lock);
		kmem_cache_free(fluxonkv_extent_cache, a->spare);
		kmem_cache_free(fluxonkv_alloc_cache, a);
		return ERR_PTR(-ENOSPC);
	}
	a->offset = e->start;
	if (e->size == span) {
		fluxonkv_extent_erase(e);
		used_up = e;
	} else {
		/* the rest stays where it was in the order by offset */
		e->start += span;
		e->size -= span;
		fluxonkv_extent_cb_propagate(&e->node, NULL);
	}
	seg->used += span;
	kref_init(&a->ref);
	a->span = span;
	a->len = len;
	a->owner = 0;
	a->moving = false;
	a->tenant = FLUXONKV_TENANT_NONE;
	fluxonkv_alloc_link(a);
	spin_unlock(&seg->lock);
	if (used_up)
		kmem_cache_free(fluxonkv_extent_cache, used_up);

	/* Isolated: nobody keeps a view of what the range held before. */
	fluxonkv_segment_zap(a->offset, a->span);

	/* Padding after the value is visible through the mapping: clear it. */
	memset(fluxonkv_alloc_vaddr(a) + len, 0, a->span - len);
	fluxonkv_clean_reserve_check();
	return a;
}

static void fluxonkv_alloc_release(struct kref *ref)
{
	struct fluxonkv_alloc *a = container_of(ref, struct fluxonkv_alloc, ref);
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	struct fluxonkv_extent *unused[2];

	spin_lock(&seg->lock);
	fluxonkv_extent_free(a->offset, a->span, a->spare, unused);
	seg->used -= a->span;
	rb_erase(&a->node, &seg->allocs);
	spin_unlock(&seg->lock);
	atomic_inc(&seg->frees);
	if (wq_has_sleeper(&seg->room_wq))
		wake_up_all(&seg->room_wq);
	if (unused[0])
		kmem_cache_free(fluxonkv_extent_cache, unused[0]);
	if (unused[1])
		kmem_cache_free(fluxonkv_extent_cache, unused[1]);
	kmem_cache_free(fluxonkv_alloc_cache, a);
}

void fluxonkv_alloc_put(struct fluxonkv_alloc *a)
{
	kref_put(&a->ref, fluxonkv_alloc_release);
}

u64 fluxonkv_segment_used(void)
{
	return READ_ONCE(fluxonkv_seg.used);
}

/* Frees so far: sample before an allocation that may fail. */
unsigned int fluxonkv_segment_frees(void)
{
	return atomic_read(&fluxonkv_seg.frees);
}

/*
 * Sleep until a range is freed after @frees was sampled, at most @timeout
 * jiffies (killable): what a room wait does instead of polling.  Returns
 * as wait_event_killable_timeout().
 */
long fluxonkv_segment_wait_free(unsigned int frees, unsigned long timeout)
{
	return wait_event_killable_timeout(fluxonkv_seg.room_wq,
					   atomic_read(&fluxonkv_seg.frees) != frees,
					   timeout);
}

/*
 * A fault maps the whole 2 MiB-aligned window around it (one page table)
 * with vm_insert_pages(), the prefault TTM does for buffer objects: a
 * reader copying a 1 MiB value takes one fault instead of 256.  The
 * segment's pages never change while it is mapped, so mapping ahead is
 * always right.  Called with mmap_lock held for read: VM_MIXEDMAP is set at
 * mmap time, so the insert does not touch vm_flags.
 */
#define FLUXONKV_FAULT_AROUND	(2UL << 20)

/*
 * Insert the segment's pages [@first, @first + @num) at @addr; a page
 * already there (a racing fault) leaves only the faulting page to map.
 */
static vm_fault_t fluxonkv_vm_insert(struct vm_fault *vmf, unsigned long addr,
				     pgoff_t first, unsigned long num)
{
	int ret;

	ret = vm_insert_pages(vmf->vma, addr, &fluxonkv_seg.pages[first], &num);
	if (!ret)
		return VM_FAULT_NOPAGE;
	ret = vm_insert_page(vmf->vma, vmf->address & PAGE_MASK,
			     fluxonkv_seg.pages[vmf->pgoff]);
	if (ret && ret != -EBUSY)
		return vmf_error(ret);
	return VM_FAULT_NOPAGE;
}

/*
 * An isolated segment (tenant.c): map only the pages of the value at the
 * fault, and only if @tenant's description may see it (its tenant holds
 * or held it).  The value is pinned while its pages are inserted, so its
 * range cannot become another value's meanwhile (whose alloc would unmap
 * it again anyway); a value compaction is moving is nobody's to map.
 */
static vm_fault_t fluxonkv_vm_fault_isolated(struct vm_fault *vmf,
					     u32 tenant, unsigned long addr,
					     unsigned long end)
{
	struct vm_area_struct *vma = vmf->vma;
	struct fluxonkv_segment *seg = &fluxonkv_seg;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	struct fluxonkv_alloc *a = NULL;
	pgoff_t first, last;
	struct rb_node *n;
	vm_fault_t ret;

	spin_lock(&seg->lock);
	n = fluxonkv_alloc_from(off);
	if (n) {
		a = rb_entry(n, struct fluxonkv_alloc, node);
		if (a->offset > off || a->moving ||
		    READ_ONCE(a->tenant) != tenant || !kref_get_unless_zero(&a->ref))
			a = NULL;
	}
	spin_unlock(&seg->lock);
	if (!a) {
		fluxonkv_stat_inc(faults_refused);
		return VM_FAULT_SIGBUS;
	}
	/*
	 * The window's pages that are the value's, as special PTEs: no
	 * struct page behind them for get_user_pages(), so nothing (a pipe's
	 * vmsplice, an O_DIRECT write, a memory registration) can pin them
	 * past the unmap that ends this view when the range is reused.
	 */
	first = max_t(pgoff_t, vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT),
		      a->offset >> PAGE_SHIFT);
	last = min_t(pgoff_t, vma->vm_pgoff + ((end - vma->vm_start) >> PAGE_SHIFT),
		     (a->offset + a->span) >> PAGE_SHIFT);
	addr = vma->vm_start + ((first - vma->vm_pgoff) << PAGE_SHIFT);
	ret = VM_FAULT_NOPAGE;
	for (; first < last && ret == VM_FAULT_NOPAGE; first++, addr += PAGE_SIZE)
		ret = vmf_insert_mixed(vma, addr,
				       page_to_pfn_t(fluxonkv_seg.pages[first]));
	fluxonkv_alloc_put(a);
	return ret;
}

static vm_fault_t fluxonkv_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct fluxonkv_session *s = vma->vm_file->private_data;
	unsigned long addr = ALIGN_DOWN(vmf->address, FLUXONKV_FAULT_AROUND);
	unsigned long end = addr + FLUXONKV_FAULT_AROUND;
	vm_fault_t ret;
	pgoff_t first;
	int idx;

	if (vmf->pgoff >= fluxonkv_seg.npages)
		return VM_FAULT_SIGBUS;
	addr = max(addr, vma->vm_start);
	end = min(end, vma->vm_end);
	/* isolation switched on waits for this section (tenant.c) */
	idx = srcu_read_lock(&fluxonkv_fault_srcu);
	if (READ_ONCE(fluxonkv_isolated) && !s->privileged) {
		ret = fluxonkv_vm_fault_isolated(vmf, READ_ONCE(s->tenant),
						 addr, end);
	} else {
		/* mmap checked that the whole vma lies within the segment */
		first = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT);
		ret = fluxonkv_vm_insert(vmf, addr, first,
					 (end - addr) >> PAGE_SHIFT);
	}
	srcu_read_unlock(&fluxonkv_fault_srcu, idx);
	return ret;
}

static const struct vm_operations_struct fluxonkv_vm_ops = {
	.fault = fluxonkv_vm_fault,
};

/*
 * The mapping is read-only and not executable for clients: values change
 * only through put, under the module's control, and are data, never code.
 * Clearing VM_MAYWRITE / VM_MAYEXEC makes a later mprotect() fail too.
 * A privileged session (O_RDWR + CAP_SYS_ADMIN at open: the node daemon)
 * may map it writable, to land remote payloads in the targets the module
 * hands it by FETCH; it is trusted with the whole segment (the trust
 * model in Documentation/fluxonkv/cluster.md).
 */
int fluxonkv_segment_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct fluxonkv_session *s = file->private_data;
	unsigned long pages = vma_pages(vma);
	unsigned long clear = VM_MAYEXEC;
	unsigned long set = VM_DONTEXPAND | VM_DONTDUMP | VM_MIXEDMAP;

	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	if (!s->privileged) {
		if (vma->vm_flags & VM_WRITE)
			return -EPERM;
		clear |= VM_MAYWRITE;
	} else if (!(vma->vm_flags & VM_SHARED)) {
		/* A private copy would land nowhere: never writable. */
		if (vma->vm_flags & VM_WRITE)
			return -EINVAL;
		clear |= VM_MAYWRITE;
	} else {
		/* Only the daemon writes: a forked child gets no such mapping. */
		set |= VM_DONTCOPY;
	}
	if (vma->vm_pgoff >= fluxonkv_seg.npages ||
	    pages > fluxonkv_seg.npages - vma->vm_pgoff)
		return -EINVAL;
	fluxonkv_vm_flags_mod(vma, set, clear);
	vma->vm_ops = &fluxonkv_vm_ops;
	return 0;
}
