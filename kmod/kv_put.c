// SPDX-License-Identifier: GPL-2.0
/*
 * put: the three put protocols (two trips, one trip, local puts) and the
 * put placed on another node (PUT_PLACE); kv.c says how each numbers and
 * publishes its version.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/file.h>
#include <linux/memcontrol.h>
#include <linux/net.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/xxhash.h>

#include "kv.h"

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

void fluxonkv_put_late_init(void)
{
	spin_lock_init(&fluxonkv_put_late.lock);
	INIT_LIST_HEAD(&fluxonkv_put_late.list);
	INIT_WORK(&fluxonkv_put_late.work, fluxonkv_put_late_run);
}

void fluxonkv_put_late_flush(void)
{
	flush_work(&fluxonkv_put_late.work);
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

/* The putter's bytes go through a bounce buffer this large. */
#define FLUXONKV_PLACE_PIECE	(64 * 1024)

/*
 * Send all of @v (@len bytes, kernel memory) on @sock.  The socket's own
 * send timeout (SO_SNDTIMEO, which fluxond sets; the file's O_NONBLOCK
 * does not apply) bounds each wait: -ETIMEDOUT; a signal ends it: -EINTR.
 */
static int fluxonkv_sock_send_all(struct socket *sock, const void *v,
				  size_t len)
{
	struct kvec k = { .iov_base = (void *)v, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_NOSIGNAL };
	int ret;

	iov_iter_kvec(&msg.msg_iter, WRITE, &k, 1, len);
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
 * Send the putter's bytes @value (its buffer or pieces) on @sock from its
 * context, then their XXH64 (seed 0; 8 bytes, little endian), which the
 * target checks its replica against before it says every byte is in.
 * One pass: each piece is copied from the putter into a bounce buffer,
 * summed and sent from there (the kernel's xxh64 reads kernel memory
 * only), so the sum is of exactly the bytes sent, whatever the putter
 * does to its buffer meanwhile.  Nothing is staged in the segment.
 * Return: 0, -EFAULT, -ENOMEM, -EINTR, -ETIMEDOUT, -EPIPE or the
 * socket's error.
 */
static int fluxonkv_sock_send_user(struct socket *sock,
				   const struct iov_iter *value)
{
	struct iov_iter it = *value;	/* ours to advance */
	u64 len = iov_iter_count(value);
	struct xxh64_state st;
	__le64 sum;
	u64 off, n;
	int ret = 0;
	u8 *b;

	b = kvmalloc(FLUXONKV_PLACE_PIECE, GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	xxh64_reset(&st, 0);
	for (off = 0; off < len && !ret; off += n) {
		n = min_t(u64, len - off, FLUXONKV_PLACE_PIECE);
		if (copy_from_iter(b, n, &it) != n) {
			ret = -EFAULT;
			break;
		}
		xxh64_update(&st, b, n);
		ret = fluxonkv_sock_send_all(sock, b, n);
	}
	if (!ret) {
		sum = cpu_to_le64(xxh64_digest(&st));
		ret = fluxonkv_sock_send_all(sock, &sum, sizeof(sum));
	}
	kvfree(b);
	return ret;
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
			       const struct iov_iter *value, u64 put_id)
{
	u64 len = iov_iter_count(value);
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
	ret = fluxonkv_sock_send_user(place.sock, value);
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
 * Copy a put's value in (from one buffer or, a gather put, from each of
 * its pieces in turn), a chunk at a time: a putter killed meanwhile stops
 * at the next chunk (-EINTR), one whose pages fault for good gets -EFAULT.
 * @value is left as it is (a copy of it advances).
 */
#define FLUXONKV_COPY_CHUNK	(1ULL << 20)

static int fluxonkv_copy_value(void *dst, const struct iov_iter *value)
{
	struct iov_iter it = *value;
	u64 len = iov_iter_count(value);
	u64 off, n;

	for (off = 0; off < len; off += n) {
		n = min_t(u64, len - off, FLUXONKV_COPY_CHUNK);
		if (fatal_signal_pending(current))
			return -EINTR;
		if (copy_from_iter(dst + off, n, &it) != n)
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
				 u32 key_len, const struct iov_iter *value,
				 u64 span, struct fluxonkv_alloc *a,
				 u64 *put_id)
{
	u64 len = iov_iter_count(value);
	struct fluxonkv_upcall_args args = {
		.key = key, .key_len = key_len, .len = len,
	};
	struct fluxonkv_put_wait *w;
	struct fluxonkv_replica *r;
	u64 ssd;
	int ret;

	ret = fluxonkv_copy_value(fluxonkv_alloc_vaddr(a), value);
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
			      u32 key_len, const struct iov_iter *value,
			      u64 span, u64 gen, u64 *put_id)
{
	u64 len = iov_iter_count(value);
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
	ret = fluxonkv_copy_value(fluxonkv_alloc_vaddr(a), value);
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
 * fluxonkv_put() - store the bytes of @value under @key.
 * @user: whose budget the bytes count in while they are copied in (NULL:
 *	a privileged session, not charged); -EDQUOT when it is spent.
 * @key: kernel copy of the key (validated length).
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @value: the putter's bytes, a user-backed iterator (one buffer or a
 *	gather put's pieces, access_ok checked) of
 *	1..min(FLUXONKV_VALUE_MAX, segment size) bytes; not advanced.
 * @put_id: out: the version the master assigned.
 *
 * Return: 0 once a DRAM replica is readable, or -errno (nothing is left
 * behind on failure: the range is freed and the master told to forget).
 * -ETIMEDOUT / -EINTR while PUT_DONE is asked: the outcome is unknown,
 * the master's late answer publishes the version or not, and until then
 * the previous version stays readable.
 */
int fluxonkv_put(struct fluxonkv_user *user, const u8 *key, u32 key_len,
		 const struct iov_iter *value, u64 *put_id)
{
	u64 len = iov_iter_count(value);
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
		return fluxonkv_put_local(user, key, key_len, value, span,
					  fluxonkv_daemon_generation(), put_id);
	}
	if (fluxonkv_daemon_one_trip()) {
		a = fluxonkv_alloc_room_for(len, fluxonkv_daemon_placement());
		if (!IS_ERR(a))
			return fluxonkv_put_one_trip(user, key, key_len, value,
						     span, a, put_id);
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
		ret = fluxonkv_put_remote(key, key_len, value, start.put_id);
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
	ret = fluxonkv_copy_value(fluxonkv_alloc_vaddr(a), value);
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
