// SPDX-License-Identifier: GPL-2.0
/*
 * put / get / delete: the owner's side of the reference design's flows
 * (§3 write, §4 read, §7.3 delete) for the DRAM tier.
 *
 * put:    PUT_START (master assigns put_id) -> allocate a range (asking the
 *         master for room, §4.1) -> copy the value in -> PUT_DONE (master
 *         publishes; the answer handler indexes it) -> return.  With a
 *         master of several nodes that takes puts in one message
 *         (FLUXONKV_REGISTER_F_ONE_TRIP): allocate -> copy in -> PUT (the
 *         master numbers and publishes it) -> return; PUT_START only when
 *         this node has no room.  With a
 *         master that delegates puts (FLUXONKV_REGISTER_F_LOCAL_PUTS):
 *         allocate -> copy in -> index it under a put_id of our own ->
 *         start the SSD write -> return; the master learns of it from a
 *         batched PUT_LOCAL note, sent before anything else we send.
 * get:    local index hit -> holder, no upcall (an ACCESS note is batched
 *         for the master's eviction policy); miss -> GET_START, or with a
 *         local-routes master (uapi FLUXONKV_REGISTER_F_LOCAL_ROUTES) the
 *         SSD entry it routes to, else -ENOENT, without asking; an SSD
 *         refill ends with an asynchronous GET_DONE (promotion).
 * delete: DELETE; the master drops the route's replicas before answering.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/file.h>
#include <linux/jiffies.h>
#include <linux/memcontrol.h>
#include <linux/net.h>
#include <linux/refcount.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "fluxonkv.h"



/*
 * Persists asked by FLUXONKV_IOC_PUBLISH, run from a worker: a refused
 * persist reports itself with a synchronous SSD_COMMIT, which the daemon
 * in its own ioctl could never answer.
 */
struct fluxonkv_persist_req {
	struct list_head node;		/* on fluxonkv_publish_persists.list */
	struct fluxonkv_replica *r;	/* one reference */
};

static struct {
	spinlock_t lock;		/* protects list */
	struct list_head list;
	struct work_struct work;
} fluxonkv_publish_persists;

static void fluxonkv_publish_persist_run(struct work_struct *work);

/*
 * A put's PUT_START and PUT_DONE (or its one PUT) are asked asynchronously:
 * the putter
 * waits for the answer, but one who stops waiting (its request timeout, a
 * fatal signal) does not end the request -- the daemon's answer (or its
 * going, or for PUT_START the sweep) still does, and finishes for it from
 * fluxonkv_put_late's worker.  A PUT_START answered late gives its
 * reservation back (PUT_ABORT), so a failed or abandoned put costs the
 * master nothing; a PUT_DONE or PUT is never expired (no_expire): its answer
 * decides whether the version is published, so a put either publishes it
 * or leaves the previous one readable, whatever became of its caller.
 * @state says who finishes: the putter, or the late worker.
 */
enum { FLUXONKV_PW_WAITING, FLUXONKV_PW_ANSWERED, FLUXONKV_PW_ABANDONED };

struct fluxonkv_put_wait {
	/* PUT_DONE, PUT: up.replica, a reference */
	struct fluxonkv_upcall up;
	struct completion answered;	/* the waiting putter's */
	atomic_t state;			/* FLUXONKV_PW_* */
	bool persist;			/* PUT_DONE: PUT_START said so */
	/* PUT_DONE, PUT: the putter's memcg, for a persist the worker does */
	struct mem_cgroup *memcg;
	struct list_head node;		/* on fluxonkv_put_late.list */
	u32 key_len;			/* PUT_START: its key, for PUT_ABORT */
	u8 key[];
};

static struct {
	spinlock_t lock;		/* protects list */
	struct list_head list;
	struct work_struct work;
} fluxonkv_put_late;

static void fluxonkv_put_late_run(struct work_struct *work);

/*
 * GET_REVOKEs of failed asynchronous refills, sent from a worker: such a
 * refill ends in io_uring's task work (fluxonkv_get_refill_finish()),
 * which must never wait for the daemon -- 6.1 may run it holding the
 * ring's uring_lock, and every submitter on that ring would wait too.
 */
struct fluxonkv_revoke_req {
	struct list_head node;		/* on fluxonkv_revokes.list */
	u64 put_id;
	int err;
	u32 key_len;
	u8 key[];
};

static struct {
	spinlock_t lock;		/* protects list */
	struct list_head list;
	struct work_struct work;	/* on system_unbound_wq */
} fluxonkv_revokes;

static void fluxonkv_revokes_run(struct work_struct *work);

int fluxonkv_kv_init(void)
{
	int ret = fluxonkv_notes_init();

	if (ret)
		return ret;
	spin_lock_init(&fluxonkv_publish_persists.lock);
	INIT_LIST_HEAD(&fluxonkv_publish_persists.list);
	INIT_WORK(&fluxonkv_publish_persists.work, fluxonkv_publish_persist_run);
	spin_lock_init(&fluxonkv_put_late.lock);
	INIT_LIST_HEAD(&fluxonkv_put_late.list);
	INIT_WORK(&fluxonkv_put_late.work, fluxonkv_put_late_run);
	spin_lock_init(&fluxonkv_revokes.lock);
	INIT_LIST_HEAD(&fluxonkv_revokes.list);
	INIT_WORK(&fluxonkv_revokes.work, fluxonkv_revokes_run);
	return 0;
}

/* No more gets (the device is gone): send or end the queued offers. */
void fluxonkv_kv_quiesce(void)
{
	fluxonkv_notes_quiesce();
	flush_work(&fluxonkv_publish_persists.work);
	/* no ring get is left to queue one (the device is gone) */
	flush_work(&fluxonkv_revokes.work);
}

/*
 * The daemon's teardown (genl exit) ended every abandoned put: finish them
 * while the SSD tier still exists (a published one may persist).
 */
void fluxonkv_kv_flush_late(void)
{
	flush_work(&fluxonkv_put_late.work);
	/* a PERSIST handled before the family went may have queued one */
	flush_work(&fluxonkv_publish_persists.work);
}

void fluxonkv_kv_exit(void)
{
	fluxonkv_notes_exit();
	fluxonkv_kv_quiesce();
	fluxonkv_kv_flush_late();
}

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
static struct fluxonkv_alloc *fluxonkv_alloc_room_for(u64 len, bool placeable)
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

static struct fluxonkv_alloc *fluxonkv_alloc_room(u64 len)
{
	return fluxonkv_alloc_room_for(len, false);
}

/* @handle: a replica the master may have published but we dropped, or 0. */
static void fluxonkv_put_abort(const u8 *key, u32 key_len, u64 put_id,
			       u64 handle, int err)
{
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .put_id = put_id,
		.handle = handle, .err = err,
	};

	fluxonkv_notify(FLUXONKV_CMD_PUT_ABORT, &args, NULL, 0);
}

/*
 * Send @len bytes of the putter's buffer @buf on @sock, from the putter's
 * context (the pages are the caller's; nothing is staged in the segment).
 * The socket's own send timeout (SO_SNDTIMEO, which fluxond sets; the
 * file's O_NONBLOCK does not apply) bounds each wait: -ETIMEDOUT; a
 * signal ends it: -EINTR.
 */
static int fluxonkv_sock_send_user(struct socket *sock, const void __user *buf,
				   u64 len)
{
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	struct iovec iov;
	int ret;

	ret = import_single_range(WRITE, (void __user *)buf, len, &iov,
				  &msg.msg_iter);
	if (ret)
		return ret;
	while (msg_data_left(&msg)) {
		ret = sock_sendmsg(sock, &msg);
		if (ret == -ERESTARTSYS)
			return -EINTR;
		if (ret == -EAGAIN)
			return -ETIMEDOUT;	/* SO_SNDTIMEO ran out */
		if (ret < 0)
			return ret;
		if (!ret)
			return -EPIPE;
	}
	return 0;
}

/*
 * No room here for in-flight put @put_id (the master has nothing left to
 * evict on this node): PUT_PLACE has the daemon find another node, which
 * allocates a replica and waits on a socket the answer hands us; the value
 * goes from the putter's buffer straight into that socket, then PUT_DONE
 * names the remote replica and the master publishes it there.
 * Return: 0 (published, or superseded by a newer version), -ENOSPC (no
 * other node has room: nothing was sent, the put stays in flight here),
 * or -errno; failures are reported with PUT_ABORT {HANDLE} so that the
 * master drops the remote replica.
 */
static int fluxonkv_put_remote(const u8 *key, u32 key_len,
			       const void __user *value, u64 len, u64 put_id)
{
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .len = len, .put_id = put_id,
	};
	struct fluxonkv_upcall place = {}, done = {};
	u64 t0 = fluxonkv_clock();
	int ret;

	fluxonkv_stat_inc(puts_placed);
	ret = fluxonkv_upcall(FLUXONKV_CMD_PUT_PLACE, &args, &place);
	/* Nowhere else either: the put is still ours, to wait for room. */
	if (ret == -ENOSPC) {
		fluxonkv_stat_dec(puts_placed);
		return ret;
	}
	if (ret)
		goto err_abort;
	/* The answer handler took a reference on the socket. */
	if (FLUXONKV_HANDLE_NODE(place.handle) == fluxonkv_replica_node()) {
		ret = -EPROTO;	/* a remote replica must be another node's */
		goto err_sock;
	}
	ret = fluxonkv_sock_send_user(place.sock, value, len);
	if (ret)
		goto err_sock;
	sockfd_put(place.sock);
	fluxonkv_lat_record(FLUXONKV_LAT_PLACE_SEND, t0);

	args.handle = place.handle;
	ret = fluxonkv_upcall(FLUXONKV_CMD_PUT_DONE, &args, &done);
	if (ret) {
		/* The master may have published it: name it. */
		fluxonkv_put_abort(key, key_len, put_id, place.handle, ret);
		goto err;
	}
	if (done.flags & FLUXONKV_PUT_F_PUBLISHED)
		/* The master dropped the older versions' SSD copies. */
		fluxonkv_ssd_unroute(key, key_len, put_id - 1);
	return 0;

err_sock:
	sockfd_put(place.sock);
err_abort:
	fluxonkv_put_abort(key, key_len, put_id, place.handle, ret);
err:
	fluxonkv_stat_inc(place_errors);
	pr_info_ratelimited("placing a %llu byte put on another node failed: %d\n",
			    len, ret);
	return ret;
}

/* PUT_START or PUT_DONE ended: hand it to the putter or to the worker. */
static void fluxonkv_put_wait_end(struct fluxonkv_upcall *up)
{
	struct fluxonkv_put_wait *w = container_of(up, struct fluxonkv_put_wait,
						   up);

	if (atomic_xchg(&w->state, FLUXONKV_PW_ANSWERED) !=
	    FLUXONKV_PW_ABANDONED) {
		complete(&w->answered);
		return;
	}
	spin_lock(&fluxonkv_put_late.lock);
	list_add_tail(&w->node, &fluxonkv_put_late.list);
	spin_unlock(&fluxonkv_put_late.lock);
	schedule_work(&fluxonkv_put_late.work);
}

/*
 * Ask @cmd and wait for the answer: 0 (the answer is in @w->up, ours to
 * finish), or -ETIMEDOUT / -EINTR: the putter left, @w belongs to the
 * late worker now.
 */
static int fluxonkv_put_wait(u8 cmd, const struct fluxonkv_upcall_args *args,
			     struct fluxonkv_put_wait *w)
{
	unsigned long timeout = msecs_to_jiffies(fluxonkv_request_timeout_ms);
	u64 id;
	long left;

	w->up.end = fluxonkv_put_wait_end;
	w->up.send_retry = true;
	init_completion(&w->answered);
	atomic_set(&w->state, FLUXONKV_PW_WAITING);
	fluxonkv_upcall_async(cmd, args, &w->up);
	id = w->up.id;	/* @w may go once we let go of it */

	left = wait_for_completion_killable_timeout(&w->answered, timeout);
	if (left > 0)
		return 0;
	if (atomic_xchg(&w->state, FLUXONKV_PW_ABANDONED) ==
	    FLUXONKV_PW_WAITING) {
		fluxonkv_stat_inc(puts_abandoned);
		/* A PUT_START: the master should rather not act on it. */
		if (cmd == FLUXONKV_CMD_PUT_START)
			fluxonkv_upcall_cancel(id);
		/* (an expiring request's timeout the sweep counts) */
		if (!left && cmd != FLUXONKV_CMD_PUT_START) {
			fluxonkv_stat_inc(upcall_timeouts);
			pr_warn_ratelimited("daemon did not answer cmd %u in %u ms: its late answer will be honoured\n",
					    cmd, fluxonkv_request_timeout_ms);
		}
		return left ? -EINTR : -ETIMEDOUT;
	}
	/* Answered just now: the end is done with @w once it completes. */
	wait_for_completion(&w->answered);
	return 0;
}

/*
 * The put's end once PUT_DONE or PUT is answered (or failed): published ->
 * the answer handler indexed it, persist it if asked; not -> the handle
 * table's reference goes (-ENOENT: the master dropped it already).  Frees
 * @w.  Process context, never the daemon's own (a refused persist asks
 * the daemon synchronously).
 */
static void fluxonkv_put_done_finish(struct fluxonkv_put_wait *w)
{
	struct fluxonkv_replica *r = w->up.replica;
	int status = w->up.status;

	/* A one-trip put's answer decides its SSD copy (PUT_START's did). */
	if (w->up.cmd == FLUXONKV_CMD_PUT)
		w->persist = w->up.flags & FLUXONKV_PUT_F_PERSIST;
	if (status || !(w->up.flags & FLUXONKV_PUT_F_PUBLISHED)) {
		fluxonkv_replica_drop(r->handle);
		/*
		 * Never seen by the master: its PUT_START reservation goes
		 * (a one-trip put reserved nothing).
		 */
		if (w->up.send_failed && w->up.cmd == FLUXONKV_CMD_PUT_DONE)
			fluxonkv_put_abort(r->key, r->key_len, r->put_id,
					   r->handle, status);
	} else if (w->persist) {
		/*
		 * Background SSD copy (reference §3 stage 3).  -ENODEV: the
		 * master's view of our SSD is stale; the value simply stays
		 * memory-only, as the reference's persisted=false.
		 */
		fluxonkv_ssd_persist(r->key, r->key_len, r->put_id, r->alloc,
				     w->memcg, false);
	}
	/* The route changed (or did not): local misses may answer again. */
	fluxonkv_put_inflight_add(r->key, r->key_len, -1);
	fluxonkv_replica_put(r);
	mem_cgroup_put(w->memcg);
	kfree(w);
}

/* An abandoned PUT_START that got its put_id after all: give it back. */
static void fluxonkv_put_start_finish(struct fluxonkv_put_wait *w)
{
	if (!w->up.status && w->up.put_id)
		fluxonkv_put_abort(w->key, w->key_len, w->up.put_id, 0,
				   -ETIMEDOUT);
	kfree(w);
}

/* Abandoned puts whose answer (or the daemon's end) came. */
static void fluxonkv_put_late_run(struct work_struct *work)
{
	struct fluxonkv_put_wait *w, *tmp;
	LIST_HEAD(batch);

	spin_lock(&fluxonkv_put_late.lock);
	list_splice_init(&fluxonkv_put_late.list, &batch);
	spin_unlock(&fluxonkv_put_late.lock);
	list_for_each_entry_safe(w, tmp, &batch, node) {
		if (w->up.cmd == FLUXONKV_CMD_PUT_START)
			fluxonkv_put_start_finish(w);
		else
			fluxonkv_put_done_finish(w);
	}
}

/*
 * PUT_START for @key: 0 with *@start (put_id, flags) filled, or -errno;
 * see struct fluxonkv_put_wait for a putter that stops waiting.
 */
static int fluxonkv_put_start(const u8 *key, u32 key_len,
			      const struct fluxonkv_upcall_args *args,
			      struct fluxonkv_upcall *start)
{
	struct fluxonkv_put_wait *w;
	int ret;

	w = kzalloc(struct_size(w, key, key_len), GFP_KERNEL);
	if (!w)
		return -ENOMEM;
	memcpy(w->key, key, key_len);
	w->key_len = key_len;
	ret = fluxonkv_put_wait(FLUXONKV_CMD_PUT_START, args, w);
	if (ret)
		return ret;
	ret = w->up.status;
	start->put_id = w->up.put_id;
	start->flags = w->up.flags;
	kfree(w);
	return ret;
}

/*
 * PUT_DONE for @r (the caller's reference is taken over): 0 once the
 * master answered (published, or superseded by a newer version), or the
 * error; see struct fluxonkv_put_wait for a putter that stops waiting.
 */
static int fluxonkv_put_done(struct fluxonkv_replica *r,
			     const struct fluxonkv_upcall_args *args,
			     bool persist)
{
	struct fluxonkv_put_wait *w;
	int ret;

	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w) {
		fluxonkv_replica_drop(r->handle);
		/* its PUT_START reservation goes */
		fluxonkv_put_abort(r->key, r->key_len, r->put_id, r->handle,
				   -ENOMEM);
		fluxonkv_replica_put(r);
		return -ENOMEM;
	}
	w->up.replica = r;
	w->up.no_expire = true;
	w->persist = persist;
	if (persist)
		w->memcg = get_mem_cgroup_from_mm(current->mm);
	/* Local misses of this key ask the master meanwhile (replica.c). */
	fluxonkv_put_inflight_add(r->key, r->key_len, 1);
	ret = fluxonkv_put_wait(FLUXONKV_CMD_PUT_DONE, args, w);
	if (ret)
		return ret;	/* the answer finishes it */
	ret = w->up.status;
	fluxonkv_put_done_finish(w);
	return ret;
}

/*
 * Copy a put's value in, a chunk at a time: a putter killed meanwhile
 * stops at the next chunk (-EINTR), one whose pages fault for good gets
 * -EFAULT.
 */
#define FLUXONKV_COPY_CHUNK	(1ULL << 20)

static int fluxonkv_copy_value(void *dst, const void __user *src, u64 len)
{
	u64 off, n;

	for (off = 0; off < len; off += n) {
		n = min_t(u64, len - off, FLUXONKV_COPY_CHUNK);
		if (fatal_signal_pending(current))
			return -EINTR;
		if (copy_from_user(dst + off, src + off, n))
			return -EFAULT;
		cond_resched();
	}
	return 0;
}

/*
 * A put in one round trip (FLUXONKV_REGISTER_F_ONE_TRIP) into @a, the range
 * allocated for it (taken over): copy the value in, then PUT {KEY, HANDLE,
 * LEN} asks the master to number and publish it; the answer handler
 * indexes it under that put_id, and fluxonkv_put_done_finish() does what
 * the answer decided (the SSD copy, or dropping it), for a putter that
 * stopped waiting too.  The caller charged @span to @user.
 */
static int fluxonkv_put_one_trip(struct fluxonkv_user *user, const u8 *key,
				 u32 key_len, const void __user *value,
				 u64 len, u64 span, struct fluxonkv_alloc *a,
				 u64 *put_id)
{
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .len = len,
	};
	struct fluxonkv_put_wait *w;
	struct fluxonkv_replica *r;
	u64 ssd;
	int ret;

	ret = fluxonkv_copy_value(fluxonkv_alloc_vaddr(a), value, len);
	fluxonkv_user_uncharge(user, span);	/* the cache's bytes now */
	if (ret)
		goto err_alloc;
	w = kzalloc(sizeof(*w), GFP_KERNEL);
	if (!w) {
		ret = -ENOMEM;
		goto err_alloc;
	}
	/* Drawn for the handle only: the master numbers the put. */
	r = fluxonkv_replica_new(key, key_len,
				 atomic64_inc_return(&fluxonkv_put_id_max), a);
	if (IS_ERR(r)) {
		ret = PTR_ERR(r);
		goto err_free;
	}
	/*
	 * Unnumbered until the answer (fluxonkv_replica_number): the master
	 * routes gets to it from the moment it publishes, and a GET_START or
	 * HOLD naming it meanwhile finds it by handle and key.  Nobody knows
	 * the handle before PUT is sent.
	 */
	WRITE_ONCE(r->put_id, 0);
	w->up.replica = r;
	w->up.no_expire = true;
	ssd = fluxonkv_ssd_capacity();
	if (ssd && len <= ssd)
		w->memcg = get_mem_cgroup_from_mm(current->mm);
	args.handle = r->handle;
	/* Local misses of this key ask the master meanwhile (replica.c). */
	fluxonkv_put_inflight_add(key, key_len, 1);
	ret = fluxonkv_put_wait(FLUXONKV_CMD_PUT, &args, w);
	if (ret)
		return ret;	/* the answer finishes it */
	ret = w->up.status;
	/* published or superseded, the answer names the version */
	if (!ret && !w->up.put_id)
		ret = -EPROTO;
	*put_id = w->up.put_id;
	fluxonkv_put_done_finish(w);
	if (ret)
		return ret;
	fluxonkv_stat_inc(puts);
	fluxonkv_stat_inc(puts_one_trip);
	return 0;

err_free:
	kfree(w);
err_alloc:
	fluxonkv_alloc_put(a);
	return ret;
}

/*
 * Fault injection for the tests (debugfs put_local_delay_ms, root only):
 * a local put sleeps this long (at most 10 s) between its look at the
 * daemon's flags and its look at the daemon generation, where a detach
 * can come in between; put_local_delays counts the sleeps.
 */
u32 fluxonkv_put_local_delay_ms;
u32 fluxonkv_put_local_delays;

static void fluxonkv_put_local_delay(void)
{
	WRITE_ONCE(fluxonkv_put_local_delays,
		   READ_ONCE(fluxonkv_put_local_delays) + 1);
	msleep(min(READ_ONCE(fluxonkv_put_local_delay_ms), 10000U));
}

/*
 * A put the module publishes itself (FLUXONKV_REGISTER_F_LOCAL_PUTS): no
 * round trip unless the segment is full (NEED_ROOM).  The put_id is drawn
 * as the replica enters the index (fluxonkv_replica_publish_local), so a
 * put that finishes later is the newer version; the SSD write starts when
 * the value fits the SSD tier (the rule the master applies at PUT_START);
 * the PUT_LOCAL note goes first, so the master knows the replica before
 * the SSD_COMMIT that follows.  The caller charged @span to @user.
 */
static int fluxonkv_put_local(struct fluxonkv_user *user, const u8 *key,
			      u32 key_len, const void __user *value, u64 len,
			      u64 span, u64 gen, u64 *put_id)
{
	struct fluxonkv_replica *r;
	struct fluxonkv_alloc *a;
	u64 ssd, id, link;
	u32 flags = 0;
	int ret;

	a = fluxonkv_alloc_room(len);
	if (IS_ERR(a)) {
		ret = PTR_ERR(a);
		goto err_uncharge;
	}
	ret = fluxonkv_copy_value(fluxonkv_alloc_vaddr(a), value, len);
	if (ret)
		goto err_alloc;
	fluxonkv_user_uncharge(user, span);	/* the cache's bytes now */

	/* Drawn for the handle only: the put_id is drawn at publication. */
	r = fluxonkv_replica_new(key, key_len,
				 atomic64_inc_return(&fluxonkv_put_id_max), a);
	if (IS_ERR(r)) {
		fluxonkv_alloc_put(a);
		return PTR_ERR(r);
	}
	id = fluxonkv_replica_publish_local(r, gen, &link);
	if (!id) {
		/*
		 * The daemon that delegated the put went (or came back): the
		 * old version stays, ours goes; no master will ever hear of
		 * it otherwise.
		 */
		fluxonkv_replica_drop(r->handle);
		fluxonkv_replica_put(r);
		return -ENOTCONN;
	}
	/* Older versions' SSD copies are no route any more (as PUT_DONE). */
	fluxonkv_ssd_unroute(key, key_len, id - 1);
	ssd = fluxonkv_ssd_capacity();
	if (ssd && len <= ssd)
		flags |= FLUXONKV_PUT_F_PERSIST;
	fluxonkv_put_note(r, flags, link);
	/*
	 * Waits while the device's persist queue is full: local puts go no
	 * faster than the SSD takes them.  A refusal is reported with
	 * SSD_COMMIT {ERRNO}; the value stays memory-only.
	 */
	if (flags & FLUXONKV_PUT_F_PERSIST)
		fluxonkv_ssd_persist(key, key_len, id, a, NULL, true);
	fluxonkv_replica_put(r);
	*put_id = id;
	fluxonkv_stat_inc(puts);
	fluxonkv_stat_inc(puts_local);
	return 0;

err_alloc:
	fluxonkv_alloc_put(a);
err_uncharge:
	fluxonkv_user_uncharge(user, span);
	return ret;
}

/**
 * fluxonkv_put() - store @len bytes from @value under @key.
 * @user: whose budget the bytes count in while they are copied in (NULL:
 *	a privileged session, not charged); -EDQUOT when it is spent.
 * @key: kernel copy of the key (validated length).
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @value: user pointer.
 * @len: 1..min(FLUXONKV_VALUE_MAX, segment size).
 * @put_id: out: the version the master assigned.
 *
 * Return: 0 once a DRAM replica is readable, or -errno (nothing is left
 * behind on failure: the range is freed and the master told to forget).
 * -ETIMEDOUT / -EINTR while PUT_DONE is asked: the outcome is unknown,
 * the master's late answer publishes the version or not, and until then
 * the previous version stays readable.
 */
int fluxonkv_put(struct fluxonkv_user *user, const u8 *key, u32 key_len,
		 const void __user *value, u64 len, u64 *put_id)
{
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .len = len,
	};
	u64 span = round_up(len, FLUXONKV_SEGMENT_ALIGN);
	struct fluxonkv_alloc *a = ERR_PTR(-ENOSPC);
	struct fluxonkv_upcall start = {};
	struct fluxonkv_replica *r;
	bool full = false;
	int ret;

	/*
	 * The bytes count in the putter's budget until they are copied in:
	 * a put stalled in copy_from_user (a userfaultfd page) pins no more
	 * than its user may.  Charged before anything is asked or evicted.
	 */
	ret = fluxonkv_user_charge(user, span);
	if (ret)
		return ret;
	if (fluxonkv_daemon_local_puts()) {
		/* registration moves the generation before the flags */
		smp_rmb();
		if (unlikely(READ_ONCE(fluxonkv_put_local_delay_ms)))
			fluxonkv_put_local_delay();
		return fluxonkv_put_local(user, key, key_len, value, len, span,
					  fluxonkv_daemon_generation(), put_id);
	}
	if (fluxonkv_daemon_one_trip()) {
		a = fluxonkv_alloc_room_for(len, fluxonkv_daemon_placement());
		if (!IS_ERR(a))
			return fluxonkv_put_one_trip(user, key, key_len, value,
						     len, span, a, put_id);
		ret = PTR_ERR(a);
		if (ret != -ENOSPC || !fluxonkv_daemon_placement())
			goto err_uncharge;
		/* No room here: PUT_START, and the master places it. */
		full = true;
	}
	ret = fluxonkv_put_start(key, key_len, &args, &start);
	if (ret)
		goto err_uncharge;
	if (!start.put_id) {
		ret = -EPROTO;
		goto err_abort;
	}
	fluxonkv_put_id_note(start.put_id);

	if (!full)
		a = fluxonkv_alloc_room_for(len, fluxonkv_daemon_placement());
	if (IS_ERR(a) && PTR_ERR(a) == -ENOSPC &&
	    fluxonkv_daemon_placement()) {
		ret = fluxonkv_put_remote(key, key_len, value, len,
					  start.put_id);
		if (ret != -ENOSPC) {
			fluxonkv_user_uncharge(user, span);
			goto out;
		}
		/* No other node has room either: wait for room here. */
		a = fluxonkv_alloc_room(len);
	}
	if (IS_ERR(a)) {
		ret = PTR_ERR(a);
		goto err_abort;
	}
	ret = fluxonkv_copy_value(fluxonkv_alloc_vaddr(a), value, len);
	if (ret)
		goto err_alloc;
	fluxonkv_user_uncharge(user, span);	/* the cache's bytes now */

	r = fluxonkv_replica_new(key, key_len, start.put_id, a);
	if (IS_ERR(r)) {
		ret = PTR_ERR(r);
		fluxonkv_alloc_put(a);
		fluxonkv_put_abort(key, key_len, start.put_id, 0, ret);
		return ret;
	}

	args.put_id = start.put_id;
	args.handle = r->handle;
	ret = fluxonkv_put_done(r, &args, start.flags & FLUXONKV_PUT_F_PERSIST);
out:
	if (ret)
		return ret;
	*put_id = start.put_id;
	fluxonkv_stat_inc(puts);
	return 0;

err_alloc:
	fluxonkv_alloc_put(a);
err_abort:
	fluxonkv_put_abort(key, key_len, start.put_id, 0, ret);
err_uncharge:
	fluxonkv_user_uncharge(user, span);
	return ret;
}

static int fluxonkv_grant(struct fluxonkv_session *s, struct fluxonkv_alloc *a,
			  u64 put_id, u32 source, struct fluxonkv_get_result *res)
{
	bool moving;
	int ret;

	/*
	 * Pinned: a compaction that was moving it finishes first.  Inline
	 * (io_uring's issue) that wait is a memmove: leave it to io-wq.
	 * Acquire, as fluxonkv_alloc_settle()'s look at the mark:
	 */
	moving = smp_load_acquire(&a->moving);
	if ((res->flags & FLUXONKV_GR_NOWAIT) && unlikely(moving)) {
		fluxonkv_alloc_put(a);
		return -EAGAIN;
	}
	fluxonkv_alloc_settle(a);
	if (res->flags & FLUXONKV_GR_ALLOC) {
		res->alloc = a;		/* the caller's reference now */
	} else {
		ret = fluxonkv_holder_add(s, a, &res->holder_id);
		if (ret) {
			fluxonkv_alloc_put(a);
			return ret;
		}
	}
	res->offset = a->offset;
	res->len = a->len;
	res->put_id = put_id;
	res->source = source;
	return 0;
}

/*
 * GET_REVOKE: the source the master chose failed (reference §7.2); for a
 * memory source, @handle names the replica this owner no longer has.
 */
/* The SSD copy is revoked: counted, and the local route goes.  No sleep. */
static void fluxonkv_ssd_revoke_local(const u8 *key, u32 key_len, u64 put_id)
{
	atomic64_inc(&fluxonkv_ssd_stats.revokes);
	/* The master forgets it; so does the local route. */
	fluxonkv_ssd_unroute(key, key_len, put_id);
}

static void fluxonkv_get_revoke(const u8 *key, u32 key_len, u64 put_id,
				u32 source, u64 handle, int err)
{
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .put_id = put_id,
		.source = source, .handle = handle, .err = err,
	};
	struct fluxonkv_upcall up = {};

	if (source == FLUXONKV_SOURCE_SSD)
		fluxonkv_ssd_revoke_local(key, key_len, put_id);
	fluxonkv_upcall(FLUXONKV_CMD_GET_REVOKE, &args, &up);
}

static void fluxonkv_revokes_run(struct work_struct *work)
{
	struct fluxonkv_revoke_req *rq, *tmp;
	LIST_HEAD(list);

	spin_lock(&fluxonkv_revokes.lock);
	list_splice_init(&fluxonkv_revokes.list, &list);
	spin_unlock(&fluxonkv_revokes.lock);
	list_for_each_entry_safe(rq, tmp, &list, node) {
		struct fluxonkv_upcall_args args = {
			.key = rq->key, .key_len = rq->key_len,
			.put_id = rq->put_id, .source = FLUXONKV_SOURCE_SSD,
			.err = rq->err,
		};
		struct fluxonkv_upcall up = {};

		/* the local route went already (fluxonkv_refill_revoke()) */
		fluxonkv_upcall(FLUXONKV_CMD_GET_REVOKE, &args, &up);
		list_del(&rq->node);
		kfree(rq);
	}
}

/*
 * The SSD copy a refill read failed (@err): unroute it here at once, and
 * leave GET_REVOKE to a worker.  Never sleeps (io_uring's task work): a
 * revoke that cannot be queued (no memory) is left to the next get the
 * master routes to the copy, whose read fails and revokes it again.
 */
static void fluxonkv_refill_revoke(const struct fluxonkv_refill *rf, int err)
{
	struct fluxonkv_revoke_req *rq;

	fluxonkv_ssd_revoke_local(rf->key, rf->key_len, rf->put_id);
	rq = kmalloc(struct_size(rq, key, rf->key_len),
		     GFP_NOWAIT | __GFP_NOWARN);
	if (!rq)
		return;
	rq->put_id = rf->put_id;
	rq->err = err;
	rq->key_len = rf->key_len;
	memcpy(rq->key, rf->key, rf->key_len);
	spin_lock(&fluxonkv_revokes.lock);
	list_add_tail(&rq->node, &fluxonkv_revokes.list);
	spin_unlock(&fluxonkv_revokes.lock);
	queue_work(system_unbound_wq, &fluxonkv_revokes.work);
}


/*
 * A refill's bytes are in @a (one reference, the caller's): publish the
 * replica, offer it to the master (GET_DONE: promoted when the version is
 * still current and has no DRAM replica, else temporary) and give it out.
 */
static int fluxonkv_refill_publish(struct fluxonkv_session *s, const u8 *key,
				   u32 key_len, u64 put_id,
				   struct fluxonkv_alloc *a,
				   struct fluxonkv_get_result *res)
{
	struct fluxonkv_replica *r;
	u64 t0 = fluxonkv_clock();
	int ret;

	r = fluxonkv_replica_new(key, key_len, put_id, a);
	if (IS_ERR(r)) {
		fluxonkv_alloc_put(a);
		return PTR_ERR(r);
	}
	fluxonkv_alloc_get(a);		/* the holder's reference */
	fluxonkv_get_done_offer(r, FLUXONKV_SOURCE_SSD);
	fluxonkv_lat_record(FLUXONKV_LAT_REFILL_DONE, t0);
	/* The bytes are complete whatever the master will answer. */
	ret = fluxonkv_grant(s, a, put_id, FLUXONKV_SOURCE_SSD, res);
	if (!ret)
		fluxonkv_stat_inc(hits_ssd);
	return ret;
}

/* The asynchronous refill's read ended (a worker's process context). */
static void fluxonkv_refill_read_end(void *priv, int ret)
{
	struct fluxonkv_refill *rf = priv;

	rf->ret = ret;
	rf->done(rf);
}

/*
 * Refill from this owner's SSD into a new target (reference §5.1), then
 * GET_DONE: the master promotes it to the DRAM replica when the version is
 * still current and has none, otherwise the holder is temporary.
 * @start: the version and length to read (from GET_START, or from the
 * local SSD route).
 * Returns 0 with a holder, -ESTALE to make the caller re-select, or -errno.
 */
static int fluxonkv_get_from_ssd(struct fluxonkv_session *s, const u8 *key,
				 u32 key_len, const struct fluxonkv_upcall *start,
				 struct fluxonkv_get_result *res)
{
	struct fluxonkv_ssd_entry *e;
	struct fluxonkv_alloc *a;
	u64 t0;
	int ret;

	if (!start->len || start->len > min_t(u64, FLUXONKV_VALUE_MAX,
					      fluxonkv_seg.size))
		return -EPROTO;
	/* Room first: a pin held across a room wait blocks ring writers. */
	t0 = fluxonkv_clock();
	a = fluxonkv_alloc_room(start->len);
	fluxonkv_lat_record(FLUXONKV_LAT_REFILL_ALLOC, t0);
	if (IS_ERR(a))
		return PTR_ERR(a);
	e = fluxonkv_ssd_pin(key, key_len, start->put_id);
	if (!e || fluxonkv_ssd_entry_len(e) != start->len) {
		if (e)
			fluxonkv_ssd_unpin(e);
		fluxonkv_alloc_put(a);
		/* Stale route: overwritten in the ring, or an old incarnation. */
		fluxonkv_get_revoke(key, key_len, start->put_id,
				    FLUXONKV_SOURCE_SSD, 0, -ENOENT);
		return -ESTALE;
	}
	t0 = fluxonkv_clock();
	ret = fluxonkv_ssd_read(e, a);	/* unpins e */
	fluxonkv_lat_record(FLUXONKV_LAT_REFILL_READ, t0);
	/* An interrupted read says nothing about the SSD copy: no revoke. */
	if (ret && signal_pending(current))
		ret = -EINTR;
	if (ret == -EINTR)
		goto err_alloc;
	if (ret) {
		/* Never a half-filled holder: revoke and re-select. */
		fluxonkv_get_revoke(key, key_len, start->put_id,
				    FLUXONKV_SOURCE_SSD, 0, ret);
		fluxonkv_alloc_put(a);
		return -ESTALE;
	}

	return fluxonkv_refill_publish(s, key, key_len, start->put_id, a, res);

err_alloc:
	fluxonkv_alloc_put(a);
	return ret;
}

/*
 * The asynchronous refill of io_uring's non-blocking issue: room without
 * waiting, the entry pinned, the read submitted (fluxonkv_ssd_read_async);
 * the read's end calls @rf->done from a worker, and the submitter's task
 * then finishes the get with fluxonkv_get_refill_finish().  Wherever
 * fluxonkv_get_from_ssd() would wait or ask the master (no room, a stale
 * route to revoke, no memory) it returns -EAGAIN before any effect.
 * Return: -EIOCBQUEUED once the read is on its way, or -EAGAIN.
 */
static int fluxonkv_get_from_ssd_start(const u8 *key, u32 key_len,
				       const struct fluxonkv_upcall *start,
				       struct fluxonkv_refill *rf)
{
	struct fluxonkv_ssd_entry *e;
	struct fluxonkv_alloc *a;

	if (!start->len || start->len > min_t(u64, FLUXONKV_VALUE_MAX,
					      fluxonkv_seg.size))
		return -EAGAIN;		/* the synchronous path says -EPROTO */
	a = fluxonkv_alloc_new(start->len);
	if (IS_ERR(a))
		return -EAGAIN;		/* a room wait, or -ENOMEM: io-wq's */
	e = fluxonkv_ssd_pin(key, key_len, start->put_id);
	if (!e || fluxonkv_ssd_entry_len(e) != start->len) {
		if (e)
			fluxonkv_ssd_unpin(e);
		fluxonkv_alloc_put(a);
		return -EAGAIN;		/* stale: revoked by the retry */
	}
	memcpy(rf->key, key, key_len);
	rf->key_len = key_len;
	rf->put_id = start->put_id;
	rf->alloc = a;
	rf->t_read = fluxonkv_clock();
	if (fluxonkv_ssd_read_async(e, a, fluxonkv_refill_read_end, rf)) {
		rf->alloc = NULL;
		fluxonkv_alloc_put(a);
		return -EAGAIN;
	}
	fluxonkv_stat_inc(local_refills);
	fluxonkv_stat_inc(refills_async);
	return -EIOCBQUEUED;
}

/**
 * fluxonkv_get_refill_finish() - end a get whose refill ran asynchronously.
 * @s: the getter's session.
 * @rf: the refill, after its @done was called.
 * @res: out, as fluxonkv_get()'s (a holder: FLUXONKV_GR_ALLOC is not
 *	taken here).
 * @gone: the submitter is exiting (or this is io_uring's fallback worker):
 *	drop the refill, give nothing out.
 *
 * In the submitter's task: io_uring's task work, which 6.1 may run with
 * the ring's uring_lock held, so nothing here waits -- not for the daemon,
 * not for room, not for the SSD.  A failed read is not re-selected as
 * fluxonkv_get() would (GET_REVOKE, then GET_START and maybe a room wait
 * and another read): the copy is unrouted at once, GET_REVOKE is left to
 * a worker (fluxonkv_refill_revoke()) and the get completes with an error.
 * Return: as fluxonkv_get()'s, or for a failed read -ENOENT when the ring
 * overtook the entry meanwhile (the copy is gone: a miss), else the
 * read's error (-EIO for a device error or a checksum mismatch);
 * -ECANCELED with @gone.
 */
int fluxonkv_get_refill_finish(struct fluxonkv_session *s,
			       struct fluxonkv_refill *rf,
			       struct fluxonkv_get_result *res, bool gone)
{
	struct fluxonkv_alloc *a = rf->alloc;
	int ret;

	rf->alloc = NULL;
	fluxonkv_lat_record(FLUXONKV_LAT_REFILL_READ, rf->t_read);
	if (gone) {
		fluxonkv_alloc_put(a);
		return -ECANCELED;
	}
	res->flags = 0;
	if (rf->ret) {
		/* Never a half-filled holder; never a wait in task work. */
		fluxonkv_alloc_put(a);
		fluxonkv_refill_revoke(rf, rf->ret);
		ret = rf->ret == -ESTALE ? -ENOENT : rf->ret;
	} else {
		ret = fluxonkv_refill_publish(s, rf->key, rf->key_len,
					      rf->put_id, a, res);
	}
	return ret;
}

/*
 * A target the daemon fills from another node (FETCH).  Shared by the get
 * waiting for it and by the upcall.  The upcall ends only with the
 * daemon's answer or its disconnect, never with a timeout: until then the
 * daemon may still be writing the target through its mapping, so the
 * range stays allocated (@alloc) even when the get has given up.
 */
struct fluxonkv_fetch {
	struct fluxonkv_upcall up;	/* asynchronous, no_expire */
	struct completion done;		/* the upcall ended */
	refcount_t users;		/* the waiting get + the upcall */
	struct fluxonkv_alloc *alloc;	/* the target: one reference */
};

/* FETCHes not ended yet (FLUXONKV_FETCH_MAX at most). */
static atomic_t fluxonkv_fetches_out = ATOMIC_INIT(0);

static void fluxonkv_fetch_put(struct fluxonkv_fetch *f)
{
	if (!refcount_dec_and_test(&f->users))
		return;
	fluxonkv_alloc_put(f->alloc);
	kfree(f);
	atomic_dec(&fluxonkv_fetches_out);
}

static void fluxonkv_fetch_end(struct fluxonkv_upcall *up)
{
	struct fluxonkv_fetch *f = container_of(up, struct fluxonkv_fetch, up);

	complete(&f->done);
	fluxonkv_fetch_put(f);
}

/*
 * Ask the daemon to fill @a with the remote source @start names, and wait
 * (killable) at most request_timeout_ms.  Return: the daemon's status,
 * -ETIMEDOUT / -EINTR (the target stays allocated until the daemon
 * answers), -ENOTCONN, -EAGAIN (the request could not be sent), -EBUSY
 * (too many FETCHes out) or -ENOMEM.  *@answered: the status is the
 * daemon's (whatever its errno, the transfer from that source failed).
 */
static int fluxonkv_fetch(const u8 *key, u32 key_len,
			  const struct fluxonkv_upcall *start,
			  struct fluxonkv_alloc *a, bool *answered)
{
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .put_id = start->put_id,
		.len = start->len, .source = start->source,
		.handle = start->handle, .offset = a->offset,
		.has_offset = true,
	};
	unsigned long timeout = msecs_to_jiffies(fluxonkv_request_timeout_ms);
	struct fluxonkv_fetch *f;
	long left;
	int ret;

	*answered = false;
	if (atomic_inc_return(&fluxonkv_fetches_out) > FLUXONKV_FETCH_MAX) {
		atomic_dec(&fluxonkv_fetches_out);
		return -EBUSY;
	}
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f) {
		atomic_dec(&fluxonkv_fetches_out);
		return -ENOMEM;
	}
	init_completion(&f->done);
	refcount_set(&f->users, 2);
	fluxonkv_alloc_get(a);
	f->alloc = a;
	f->up.end = fluxonkv_fetch_end;
	f->up.no_expire = true;
	f->up.send_retry = true;
	fluxonkv_stat_inc(fetches);
	fluxonkv_upcall_async(FLUXONKV_CMD_FETCH, &args, &f->up);

	left = wait_for_completion_killable_timeout(&f->done, timeout);
	if (left > 0) {
		ret = f->up.status;
		/* Never reached the daemon: nothing is known of the source. */
		if (ret && f->up.send_failed)
			ret = ret == -ENOTCONN ? ret : -EAGAIN;
		/* A daemon that went away answered nothing either. */
		*answered = !f->up.send_failed && ret != -ENOTCONN;
	} else {
		ret = left ? -EINTR : -ETIMEDOUT;
		fluxonkv_stat_inc(fetch_abandoned);
		pr_warn_ratelimited("daemon did not fill a %llu byte target in %u ms; it stays allocated until it answers\n",
				    start->len, fluxonkv_request_timeout_ms);
	}
	fluxonkv_fetch_put(f);
	return ret;
}

/*
 * The master routes to another node (reference §4.2 remote memory pull,
 * §5.3 remote SSD push): allocate a local target, let the daemon fill it
 * (FETCH), then offer it with GET_DONE like an SSD refill: promoted to
 * this node's DRAM replica, or a temporary holder.  A failed transfer
 * revokes that source and the caller re-selects (-ESTALE): never a
 * half-filled holder.
 */
static int fluxonkv_get_remote(struct fluxonkv_session *s, const u8 *key,
			       u32 key_len, const struct fluxonkv_upcall *start,
			       struct fluxonkv_get_result *res)
{
	struct fluxonkv_replica *r;
	struct fluxonkv_alloc *a;
	bool answered;
	u64 t0;
	int ret;

	if (!start->len || !start->put_id || !start->handle ||
	    start->len > min_t(u64, FLUXONKV_VALUE_MAX, fluxonkv_seg.size))
		return -EPROTO;
	a = fluxonkv_alloc_room(start->len);
	if (IS_ERR(a))
		return PTR_ERR(a);
	t0 = fluxonkv_clock();
	ret = fluxonkv_fetch(key, key_len, start, a, &answered);
	fluxonkv_lat_record(FLUXONKV_LAT_FETCH, t0);
	if (ret && !answered)
		goto err_alloc;	/* nothing learnt about the source */
	if (ret) {
		/* The daemon's errno: the master decides what it means. */
		fluxonkv_stat_inc(fetch_errors);
		fluxonkv_get_revoke(key, key_len, start->put_id, start->source,
				    start->handle, ret);
		fluxonkv_alloc_put(a);
		return -ESTALE;
	}

	r = fluxonkv_replica_new(key, key_len, start->put_id, a);
	if (IS_ERR(r)) {
		ret = PTR_ERR(r);
		goto err_alloc;
	}
	fluxonkv_alloc_get(a);		/* the holder's reference */
	fluxonkv_get_done_offer(r, start->source);
	ret = fluxonkv_grant(s, a, start->put_id, start->source, res);
	if (!ret)
		fluxonkv_stat_inc(hits_remote);
	return ret;

err_alloc:
	fluxonkv_alloc_put(a);
	return ret;
}

/**
 * __fluxonkv_get() - pin the current value of @key for session @s.
 * @s: the caller's session (owns the holder).
 * @key: kernel copy of the key.
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @res: in: flags (FLUXONKV_GR_NOWAIT: -EAGAIN where the get would wait
 *	for the daemon, the SSD or a peer; FLUXONKV_GR_ALLOC: a reference in
 *	@res->alloc instead of a holder); out: holder id, offset/len in the
 *	segment, put_id, source tier.
 *
 * DRAM first: the local index, then the master's route (asked with
 * GET_START, or with a local-routes master read from the SSD index).
 * Without a DRAM replica the master may route to this owner's SSD; a stale
 * SSD route is revoked and the source re-selected at most
 * FLUXONKV_GET_RETRIES times.
 *
 * Return: 0, -ENOENT on a miss, or -errno.
 */
static int __fluxonkv_get(struct fluxonkv_session *s, const u8 *key,
			  u32 key_len, struct fluxonkv_get_result *res)
{
	struct fluxonkv_upcall_args args = { .key = key, .key_len = key_len };
	struct fluxonkv_alloc *a;
	u64 put_id, handle;
	unsigned int tries;
	int ret;

	if (!fluxonkv_daemon_connected())
		return -ENOTCONN;

	for (tries = 0; tries <= FLUXONKV_GET_RETRIES; tries++) {
		struct fluxonkv_upcall up = { .key = key, .key_len = key_len };
		bool local = fluxonkv_daemon_local_routes(), unsure = false;
		unsigned int seq = 0;

		if (local)
			seq = fluxonkv_look_begin(key, key_len, &unsure);
		a = fluxonkv_index_lookup(key, key_len, &put_id, &handle);
		if (a) {
			ret = fluxonkv_grant(s, a, put_id,
					     FLUXONKV_SOURCE_MEMORY, res);
			if (!ret) {
				fluxonkv_stat_inc(hits_memory);
				fluxonkv_access_note(handle);
			}
			return ret;
		}
		if (local && fluxonkv_ssd_lookup_routed(key, key_len, &up.put_id,
							&up.len)) {
			if ((res->flags & FLUXONKV_GR_NOWAIT) && res->refill)
				return fluxonkv_get_from_ssd_start(key, key_len,
								   &up,
								   res->refill);
			if (res->flags & FLUXONKV_GR_NOWAIT)
				return -EAGAIN;	/* a disk read: not inline */
			fluxonkv_stat_inc(local_refills);
			ret = fluxonkv_get_from_ssd(s, key, key_len, &up, res);
			if (ret != -ESTALE)
				return ret;
			continue;
		}
		if (local && !unsure &&
		    fluxonkv_look_stable(key, key_len, seq)) {
			fluxonkv_stat_inc(local_misses);
			break;
		}
		if (res->flags & FLUXONKV_GR_NOWAIT)
			return -EAGAIN;		/* the master must answer */
		if (local)	/* a put or removal overlapped: ask the master */
			fluxonkv_stat_inc(local_unsure);

		ret = fluxonkv_upcall(FLUXONKV_CMD_GET_START, &args, &up);
		if (ret == -ENOENT)
			break;
		if (ret)
			return ret;
		if (up.source == FLUXONKV_SOURCE_MEMORY) {
			a = up.alloc;	/* pinned by the answer handler */
			if (!a) {
				/* Not a live replica of this version here. */
				fluxonkv_get_revoke(key, key_len, up.put_id,
						    FLUXONKV_SOURCE_MEMORY,
						    up.handle, -ENOENT);
				continue;
			}
			ret = fluxonkv_grant(s, a, up.put_id,
					     FLUXONKV_SOURCE_MEMORY, res);
			if (!ret)
				fluxonkv_stat_inc(hits_memory);
			return ret;
		}
		if (up.source == FLUXONKV_SOURCE_REMOTE ||
		    up.source == FLUXONKV_SOURCE_REMOTE_SSD) {
			ret = fluxonkv_get_remote(s, key, key_len, &up, res);
			if (ret != -ESTALE)
				return ret;
			continue;
		}
		if (up.source != FLUXONKV_SOURCE_SSD || !up.put_id)
			break;
		ret = fluxonkv_get_from_ssd(s, key, key_len, &up, res);
		if (ret != -ESTALE)
			return ret;
	}
	fluxonkv_stat_inc(misses);
	return -ENOENT;
}

/* __fluxonkv_get(), counted in "gets" once (not again when retried). */
int fluxonkv_get(struct fluxonkv_session *s, const u8 *key, u32 key_len,
		 struct fluxonkv_get_result *res)
{
	int ret = __fluxonkv_get(s, key, key_len, res);

	if (ret != -EAGAIN || !(res->flags & FLUXONKV_GR_NOWAIT))
		fluxonkv_stat_inc(gets);	/* a retried get counts once */
	return ret;
}

/**
 * fluxonkv_hold() - pin the replica @handle for a privileged session.
 * @s: the caller's session; must be privileged (the node daemon).
 * @key: the key the caller expects @handle to carry.
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @handle: a replica handle (the master's reference).
 * @put_id: the version the caller expects @handle to be.
 * @res: out: holder id, offset and length.
 *
 * The node daemon serves another node's pull from the pinned range.
 * Return: 0, -EPERM, -ENOENT (no such live replica) or -errno.
 */
int fluxonkv_hold(struct fluxonkv_session *s, const u8 *key, u32 key_len,
		  u64 handle, u64 put_id, struct fluxonkv_get_result *res)
{
	struct fluxonkv_alloc *a;

	if (!s->privileged)
		return -EPERM;
	a = fluxonkv_handle_lookup(handle, key, key_len, put_id);
	if (!a)
		return -ENOENT;
	return fluxonkv_grant(s, a, put_id, FLUXONKV_SOURCE_MEMORY, res);
}

/**
 * fluxonkv_ssd_stage() - read a chunk of this node's SSD copy of a version
 *	into staging, for a privileged session (reference §5.3).
 * @s: the caller's session; must be privileged (the node daemon).
 * @key: key bytes.
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @put_id: the version the master routed to.
 * @off: first byte of the chunk (a multiple of FLUXONKV_SEGMENT_ALIGN).
 * @len: bytes of the chunk.
 * @res: out: a holder on the staging range, its offset and length.
 * @value_len: out: the whole value's length.
 *
 * The node daemon pushes the staged chunk to the requester, then releases
 * the holder.  Return: 0, -EPERM, -ENOENT (no committed entry of that
 * version: a stale route), -EINVAL (range), -ESTALE, -ENOSPC or an IO
 * error.
 */
int fluxonkv_ssd_stage(struct fluxonkv_session *s, const u8 *key,
		       u32 key_len, u64 put_id, u64 off, u64 len,
		       struct fluxonkv_get_result *res, u64 *value_len)
{
	struct fluxonkv_ssd_entry *e;
	struct fluxonkv_alloc *a;
	int ret;

	if (!s->privileged)
		return -EPERM;
	if (!len || len > FLUXONKV_SSD_CHUNK_MAX)
		return -EINVAL;
	/* Room first: a pin held across a room wait blocks ring writers. */
	a = fluxonkv_alloc_room(len);
	if (IS_ERR(a))
		return PTR_ERR(a);
	e = fluxonkv_ssd_pin(key, key_len, put_id);
	if (!e) {
		ret = -ENOENT;
		goto err_alloc;
	}
	*value_len = fluxonkv_ssd_entry_len(e);
	ret = fluxonkv_ssd_read_range(e, a, off, len);	/* unpins e */
	if (ret)
		goto err_alloc;
	return fluxonkv_grant(s, a, put_id, FLUXONKV_SOURCE_SSD, res);

err_alloc:
	fluxonkv_alloc_put(a);
	return ret;
}

static void fluxonkv_publish_persist_run(struct work_struct *work)
{
	struct fluxonkv_persist_req *req, *tmp;
	LIST_HEAD(batch);

	spin_lock(&fluxonkv_publish_persists.lock);
	list_splice_init(&fluxonkv_publish_persists.list, &batch);
	spin_unlock(&fluxonkv_publish_persists.lock);
	list_for_each_entry_safe(req, tmp, &batch, node) {
		struct fluxonkv_replica *r = req->r;

		/*
		 * -ENODEV (no SSD tier now): memory-only, as for a put.  A
		 * full device queue is waited for (request_timeout_ms), as a
		 * local put waits: a restarted daemon re-persists its adopted
		 * replicas all at once, often behind the writes the previous
		 * one left queued, and one refused would be memory-only --
		 * evictable, and so lost (issue 33).
		 */
		fluxonkv_ssd_persist(r->key, r->key_len, r->put_id, r->alloc,
				     NULL, true);
		fluxonkv_replica_put(r);
		kfree(req);
	}
}

/* Persist @r from the worker; takes over the caller's reference. */
static void fluxonkv_publish_persist(struct fluxonkv_replica *r)
{
	struct fluxonkv_persist_req *req = kzalloc(sizeof(*req), GFP_KERNEL);

	if (!req) {
		/* Not persisted: the master's persist TTL makes it evictable. */
		atomic64_inc(&fluxonkv_ssd_stats.persist_errors);
		fluxonkv_replica_put(r);
		return;
	}
	req->r = r;
	spin_lock(&fluxonkv_publish_persists.lock);
	list_add_tail(&req->node, &fluxonkv_publish_persists.list);
	spin_unlock(&fluxonkv_publish_persists.lock);
	queue_work(system_unbound_wq, &fluxonkv_publish_persists.work);
}

/**
 * fluxonkv_target() - allocate the replica of a put another node places
 *	here, for a privileged session (the target's half of PUT_PLACE).
 * @s: the caller's session; must be privileged (the node daemon).
 * @key: key bytes.
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @put_id: the version the master assigned.
 * @len: value bytes.
 * @res: out: a holder on the range (the daemon writes it through its
 *	writable mapping, then releases the holder), offset and length.
 * @handle: out: the replica's handle.
 *
 * The replica is in the handle table (the master's reference) but not in
 * the index until fluxonkv_publish().  Return: 0, -EPERM, -EINVAL,
 * -ENOSPC, -ENOMEM or -errno from waiting for room.
 */
int fluxonkv_target(struct fluxonkv_session *s, const u8 *key, u32 key_len,
		    u64 put_id, u64 len, struct fluxonkv_get_result *res,
		    u64 *handle)
{
	struct fluxonkv_replica *r;
	struct fluxonkv_alloc *a;
	u64 gen;
	int ret;

	if (!s->privileged)
		return -EPERM;
	if (!put_id || !len || len > min_t(u64, FLUXONKV_VALUE_MAX,
					   fluxonkv_seg.size))
		return -EINVAL;
	/* The handle table's reference is the registered daemon's. */
	gen = fluxonkv_daemon_generation();
	if (!fluxonkv_daemon_connected())
		return -ENOTCONN;
	/* Versions held here count for a master seeded from this node. */
	fluxonkv_put_id_note(put_id);
	a = fluxonkv_alloc_room(len);
	if (IS_ERR(a))
		return PTR_ERR(a);
	r = fluxonkv_replica_new(key, key_len, put_id, a);
	if (IS_ERR(r)) {
		fluxonkv_alloc_put(a);
		return PTR_ERR(r);
	}
	fluxonkv_alloc_get(a);		/* the holder's reference */
	ret = fluxonkv_grant(s, a, put_id, FLUXONKV_SOURCE_MEMORY, res);
	/*
	 * Entered in the handle table before this look: a detach that came
	 * after it drops the replica itself; one that came before changed
	 * the generation, and then nobody else will.
	 */
	smp_mb();
	if (!ret && (fluxonkv_daemon_generation() != gen ||
		     !fluxonkv_daemon_connected())) {
		fluxonkv_holder_release(s, res->holder_id);
		ret = -ENOTCONN;
	}
	if (ret) {
		fluxonkv_replica_drop(r->handle);
	} else {
		*handle = r->handle;
		fluxonkv_stat_inc(puts_targeted);
	}
	fluxonkv_replica_put(r);
	return ret;
}

/**
 * fluxonkv_publish() - the master published a replica of fluxonkv_target().
 * @s: the caller's session; must be privileged.
 * @handle: the replica.
 * @put_id: its version.
 * @persist: also write it to this node's SSD tier.
 *
 * Return: 0, -EPERM or -ENOENT (no such replica of that version).
 */
int fluxonkv_publish(struct fluxonkv_session *s, u64 handle, u64 put_id,
		     bool persist)
{
	struct fluxonkv_replica *r;

	if (!s->privileged)
		return -EPERM;
	r = fluxonkv_handle_replica(handle, put_id);
	if (!r)
		return -ENOENT;
	fluxonkv_replica_publish(r);
	if (persist)
		fluxonkv_publish_persist(r);	/* takes our reference */
	else
		fluxonkv_replica_put(r);
	return 0;
}

/**
 * fluxonkv_replica_persist() - write replica @handle to the SSD tier.
 * @handle: a replica handle.
 * @put_id: the version the daemon expects it to be.
 *
 * The daemon's PERSIST: a replica adopted after a restart whose persist
 * never committed (the previous daemon died first).  Queued like a
 * promotion's persist; SSD_COMMIT follows.
 *
 * Return: 0, -ENOENT (no such replica), -ENODEV (no SSD tier).
 */
int fluxonkv_replica_persist(u64 handle, u64 put_id)
{
	struct fluxonkv_replica *r;

	if (!fluxonkv_ssd_capacity())
		return -ENODEV;
	r = fluxonkv_handle_replica(handle, put_id);
	if (!r)
		return -ENOENT;
	fluxonkv_publish_persist(r);	/* takes our reference */
	return 0;
}

/* Return: 0, -ENOENT if the key had no route, or -errno. */
int fluxonkv_delete(const u8 *key, u32 key_len)
{
	struct fluxonkv_upcall_args args = { .key = key, .key_len = key_len };
	struct fluxonkv_upcall up = { .key = key, .key_len = key_len };
	int ret;

	ret = fluxonkv_upcall(FLUXONKV_CMD_DELETE, &args, &up);
	if (!ret)
		fluxonkv_stat_inc(deletes);
	return ret;
}

/**
 * fluxonkv_lookup() - where a get of @key would read it, without getting it.
 * @key: key bytes.
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @res: out: len, put_id and source (holder_id and offset stay 0).
 *
 * The local index and SSD routes first, as a get; with local routes a
 * stable miss is answered here; otherwise the master reads its route
 * (LOOKUP: no hold, no eviction touch).  Nothing is pinned, refilled or
 * counted as an access.
 *
 * Return: 0, -ENOENT if the key has no value, or -errno (-ENOTCONN without
 * a daemon, as for get).
 */
int fluxonkv_lookup(const u8 *key, u32 key_len,
		    struct fluxonkv_get_result *res)
{
	struct fluxonkv_upcall_args args = { .key = key, .key_len = key_len };
	struct fluxonkv_upcall up = { };
	u32 flags = res->flags;
	bool local, unsure = false;
	unsigned int seq = 0;
	int ret;

	memset(res, 0, sizeof(*res));
	res->flags = flags;
	if (!fluxonkv_daemon_connected())
		return -ENOTCONN;
	local = fluxonkv_daemon_local_routes();
	if (local)
		seq = fluxonkv_look_begin(key, key_len, &unsure);
	if (fluxonkv_index_peek(key, key_len, &res->put_id, &res->len)) {
		res->source = FLUXONKV_SOURCE_MEMORY;
		return 0;
	}
	if (local && fluxonkv_ssd_lookup_routed(key, key_len, &res->put_id,
						&res->len)) {
		res->source = FLUXONKV_SOURCE_SSD;
		return 0;
	}
	if (local && !unsure && fluxonkv_look_stable(key, key_len, seq))
		return -ENOENT;
	if (flags & FLUXONKV_GR_NOWAIT)
		return -EAGAIN;

	ret = fluxonkv_upcall(FLUXONKV_CMD_LOOKUP, &args, &up);
	if (ret)
		return ret;
	if (!up.put_id || !up.len || up.source == FLUXONKV_SOURCE_NONE)
		return -ENOENT;		/* a route without a source */
	res->put_id = up.put_id;
	res->len = up.len;
	res->source = up.source;
	return 0;
}
