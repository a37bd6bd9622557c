// SPDX-License-Identifier: GPL-2.0
/*
 * Transfers between nodes, the node daemon's side: FETCH (a local target
 * the daemon fills from another node), HOLD (a pinned replica it serves),
 * SSD staging (a chunk of this node's SSD copy it pushes), TARGET and
 * PUBLISH (a put another node places here) and the persists PUBLISH and
 * PERSIST ask for, run from a worker.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/refcount.h>
#include <linux/slab.h>

#include "kv.h"

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

void fluxonkv_publish_persists_init(void)
{
	spin_lock_init(&fluxonkv_publish_persists.lock);
	INIT_LIST_HEAD(&fluxonkv_publish_persists.list);
	INIT_WORK(&fluxonkv_publish_persists.work, fluxonkv_publish_persist_run);
}

void fluxonkv_publish_persists_flush(void)
{
	flush_work(&fluxonkv_publish_persists.work);
}

/*
 * A target the daemon fills from another node (FETCH).  Shared by the get
 * waiting for it and by the upcall.  The upcall ends with the daemon's
 * answer, its disconnect or its expiry (fluxonkv_fetch_expire_ms(), the
 * FETCH's DEADLINE): until then the daemon may still be writing the
 * target through its mapping, so the range stays allocated (@alloc) even
 * when the get has given up.  After the expiry the sweep ends it, the
 * range is freed and a late answer finds no request (-ENOENT).
 */
struct fluxonkv_fetch {
	struct fluxonkv_upcall up;	/* asynchronous, expire_ms */
	struct completion done;		/* the upcall ended */
	refcount_t users;		/* the waiting get + the upcall */
	struct fluxonkv_alloc *alloc;	/* the target: one reference */
	/*
	 * The getter's user (held: the fetch may outlive its session),
	 * charged the target's span until the daemon answered: a get that
	 * gave up leaves its target in its user's budget until then.
	 * NULL: a privileged getter, not charged.
	 */
	struct fluxonkv_user *user;
};

/* FETCHes not ended yet (FLUXONKV_FETCH_MAX at most). */
static atomic_t fluxonkv_fetches_out = ATOMIC_INIT(0);

static void fluxonkv_fetch_put(struct fluxonkv_fetch *f)
{
	if (!refcount_dec_and_test(&f->users))
		return;
	fluxonkv_alloc_put(f->alloc);
	fluxonkv_user_release(f->user);
	kfree(f);
	atomic_dec(&fluxonkv_fetches_out);
}

static void fluxonkv_fetch_end(struct fluxonkv_upcall *up)
{
	struct fluxonkv_fetch *f = container_of(up, struct fluxonkv_fetch, up);

	/* The sweep's: nobody answered by the DEADLINE the FETCH carried. */
	if (up->status == -ETIMEDOUT && !up->send_failed) {
		fluxonkv_stat_inc(fetch_expired);
		pr_warn_ratelimited("FETCH of a %llu byte target unanswered for %u ms: target freed, a late answer is refused\n",
				    f->alloc->len, up->expire_ms);
	}

	/*
	 * The daemon is done with the target: from here only the get (if
	 * it still waits) has it, and its holder is charged on its own.
	 */
	fluxonkv_user_uncharge(f->user, f->alloc->span);
	complete(&f->done);
	fluxonkv_fetch_put(f);
}

/*
 * How long the daemon may take to fill a target of @len bytes, from the
 * FETCH's send: FLUXONKV_FETCH_EXPIRE_TIMEOUTS request timeouts plus
 * FLUXONKV_FETCH_EXPIRE_MS_PER_MIB per MiB (a pull's own bound in fluxond
 * is its IO timeout plus a second per MiB).  Sent as the FETCH's DEADLINE.
 */
static u32 fluxonkv_fetch_expire_ms(u64 len)
{
	u64 ms = (u64)fluxonkv_request_timeout_ms *
		 FLUXONKV_FETCH_EXPIRE_TIMEOUTS +
		 (len >> 20) * FLUXONKV_FETCH_EXPIRE_MS_PER_MIB;

	return min_t(u64, ms, U32_MAX);
}

/*
 * Ask the daemon to fill @a with the remote source @start names, and wait
 * (killable) at most request_timeout_ms.  @user was charged @a's span:
 * the charge is ours to undo, now or once the daemon answered.
 * Return: the daemon's status,
 * -ETIMEDOUT / -EINTR (the target stays allocated until the daemon
 * answers or the FETCH expires), -ENOTCONN, -EAGAIN (the request could
 * not be sent), -EBUSY (too many FETCHes out) or -ENOMEM.  *@answered: the status is the
 * daemon's (whatever its errno, the transfer from that source failed).
 */
static int fluxonkv_fetch(const u8 *key, u32 key_len,
			  const struct fluxonkv_upcall *start,
			  struct fluxonkv_alloc *a, struct fluxonkv_user *user,
			  bool *answered)
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
		ret = -EBUSY;
		goto err_count;
	}
	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f) {
		ret = -ENOMEM;
		goto err_count;
	}
	init_completion(&f->done);
	refcount_set(&f->users, 2);
	fluxonkv_alloc_get(a);
	f->alloc = a;
	f->user = fluxonkv_user_hold(user);	/* the charge is the fetch's */
	f->up.end = fluxonkv_fetch_end;
	f->up.expire_ms = fluxonkv_fetch_expire_ms(start->len);
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
		pr_warn_ratelimited("daemon did not fill a %llu byte target in %u ms; it stays allocated until it answers (at most %u ms)\n",
				    start->len, fluxonkv_request_timeout_ms,
				    f->up.expire_ms);
	}
	fluxonkv_fetch_put(f);
	return ret;

err_count:
	atomic_dec(&fluxonkv_fetches_out);
	fluxonkv_user_uncharge(user, a->span);
	return ret;
}

/*
 * The master routes to another node (reference §4.2 remote memory pull,
 * §5.3 remote SSD push): allocate a local target, let the daemon fill it
 * (FETCH), then offer it with GET_DONE like an SSD refill: promoted to
 * this node's DRAM replica, or a temporary holder.  A failed transfer
 * revokes that source and the caller re-selects (-ESTALE): never a
 * half-filled holder.  The target counts in the getter's pin budget from
 * before it is allocated until the daemon answered, however long after
 * the get gave up (-EDQUOT beyond the budget: nothing allocated, nothing
 * asked).
 */
int fluxonkv_get_remote(struct fluxonkv_session *s, const u8 *key,
			u32 key_len, const struct fluxonkv_upcall *start,
			struct fluxonkv_get_result *res)
{
	struct fluxonkv_replica *r;
	struct fluxonkv_alloc *a;
	bool answered;
	u64 t0, span;
	int ret;

	if (!start->len || !start->put_id || !start->handle ||
	    start->len > min_t(u64, FLUXONKV_VALUE_MAX, fluxonkv_seg.size))
		return -EPROTO;
	span = round_up(start->len, FLUXONKV_SEGMENT_ALIGN);
	ret = fluxonkv_user_charge(s->user, span);
	if (ret)
		return ret;
	a = fluxonkv_alloc_room(start->len);
	if (IS_ERR(a)) {
		fluxonkv_user_uncharge(s->user, span);
		return PTR_ERR(a);
	}
	t0 = fluxonkv_clock();
	/* uncharged once the daemon is done with the target */
	ret = fluxonkv_fetch(key, key_len, start, a, s->user, &answered);
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
	/* (a chunk larger than the segment could never have room) */
	if (!len || len > min_t(u64, FLUXONKV_SSD_CHUNK_MAX, fluxonkv_seg.size))
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
