// SPDX-License-Identifier: GPL-2.0
/*
 * get: the local index, the master's route (GET_START) or the local SSD
 * route, the SSD refill (synchronous, or io_uring's asynchronous one) and
 * GET_REVOKE of a source that failed.  Remote sources: kv_xfer.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "kv.h"

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

void fluxonkv_revokes_init(void)
{
	spin_lock_init(&fluxonkv_revokes.lock);
	INIT_LIST_HEAD(&fluxonkv_revokes.list);
	INIT_WORK(&fluxonkv_revokes.work, fluxonkv_revokes_run);
}

void fluxonkv_revokes_flush(void)
{
	flush_work(&fluxonkv_revokes.work);
}

int fluxonkv_grant(struct fluxonkv_session *s, struct fluxonkv_alloc *a,
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
		ret = fluxonkv_holder_add(s, a, res->tenant, &res->holder_id);
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

void fluxonkv_get_revoke(const u8 *key, u32 key_len, u64 put_id,
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

/* The asynchronous refill's read ended and was checked (a worker). */
static void fluxonkv_refill_read_end(void *priv, struct fluxonkv_ssd_job *job)
{
	struct fluxonkv_refill *rf = priv;

	rf->read = job;
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
	u64 t0, span;
	int ret;

	if (!start->len || start->len > min_t(u64, FLUXONKV_VALUE_MAX,
					      fluxonkv_seg.size))
		return -EPROTO;
	/*
	 * The target is the getter's pin while it is read (its budget), a
	 * read that goes on after the getter was killed included.
	 */
	span = round_up(start->len, FLUXONKV_SEGMENT_ALIGN);
	ret = fluxonkv_user_charge(s->user, span);
	if (ret)
		return ret;
	/* Room first: a pin held across a room wait blocks ring writers. */
	t0 = fluxonkv_clock();
	a = fluxonkv_alloc_room(start->len);
	fluxonkv_lat_record(FLUXONKV_LAT_REFILL_ALLOC, t0);
	if (IS_ERR(a)) {
		ret = PTR_ERR(a);
		goto err_uncharge;
	}
	e = fluxonkv_ssd_pin(key, key_len, start->put_id);
	if (!e || fluxonkv_ssd_entry_len(e) != start->len) {
		if (e)
			fluxonkv_ssd_unpin(e);
		/* Stale route: overwritten in the ring, or an old incarnation. */
		fluxonkv_get_revoke(key, key_len, start->put_id,
				    FLUXONKV_SOURCE_SSD, 0, -ENOENT);
		ret = -ESTALE;
		goto err_alloc;
	}
	t0 = fluxonkv_clock();
	/* unpins e; a killed getter's read keeps the charge (span = 0) */
	ret = fluxonkv_ssd_read_charged(e, a, s->user, &span);
	fluxonkv_lat_record(FLUXONKV_LAT_REFILL_READ, t0);
	/* An interrupted read says nothing about the SSD copy: no revoke. */
	if (ret && signal_pending(current))
		ret = -EINTR;
	if (ret && ret != -EINTR) {
		/* Never a half-filled holder: revoke and re-select. */
		fluxonkv_get_revoke(key, key_len, start->put_id,
				    FLUXONKV_SOURCE_SSD, 0, ret);
		ret = -ESTALE;
	}
	if (ret)
		goto err_alloc;
	fluxonkv_user_uncharge(s->user, span);	/* the holder's from here */
	return fluxonkv_refill_publish(s, key, key_len, start->put_id, a, res);

err_alloc:
	fluxonkv_alloc_put(a);
err_uncharge:
	fluxonkv_user_uncharge(s->user, span);
	return ret;
}

/**
 * fluxonkv_refill_submit() - pin @rf's entry and submit its read into @a.
 * @rf: the refill: key, key_len, put_id and done set.
 * @a: the target (one reference, taken over: @rf->alloc once submitted).
 * @len: the value's length, as the route said.
 *
 * Never sleeps for long (io_uring's inline issue, or the room wait's
 * worker).  Return: 0 once the read is on its way (@rf->done follows);
 * -ESTALE: no committed entry of that version and length (the route is
 * stale); -ENOMEM or -EINVAL: not submitted.  On an error @a is put.
 */
int fluxonkv_refill_submit(struct fluxonkv_refill *rf,
			   struct fluxonkv_alloc *a, u64 len)
{
	struct fluxonkv_ssd_entry *e;
	int ret;

	e = fluxonkv_ssd_pin(rf->key, rf->key_len, rf->put_id);
	if (!e || fluxonkv_ssd_entry_len(e) != len) {
		if (e)
			fluxonkv_ssd_unpin(e);
		fluxonkv_alloc_put(a);
		return -ESTALE;
	}
	rf->alloc = a;
	rf->t_read = fluxonkv_clock();
	ret = fluxonkv_ssd_read_async(e, a, fluxonkv_refill_read_end, rf);
	if (ret) {
		rf->alloc = NULL;
		fluxonkv_alloc_put(a);
		return ret;
	}
	fluxonkv_stat_inc(local_refills);
	fluxonkv_stat_inc(refills_async);
	return 0;
}

/*
 * The asynchronous refill of io_uring's non-blocking issue: room without
 * waiting, the entry pinned, the read submitted (fluxonkv_ssd_read_async);
 * the read's check calls @rf->done from a worker, and the submitter's
 * task then finishes the get with fluxonkv_get_refill_finish().  No room: the
 * room wait goes on asynchronously too (fluxonkv_refill_room_wait(): a
 * waitqueue entry whose wake retries the allocation and submits the read),
 * not in io-wq.  Wherever fluxonkv_get_from_ssd() would ask the master
 * something else (a stale route to revoke) or find no memory, it returns
 * -EAGAIN before any effect.
 * Return: -EIOCBQUEUED once the read (or the room wait) is on its way, or
 * -EAGAIN.
 */
static int fluxonkv_get_from_ssd_start(struct fluxonkv_session *s,
				       const u8 *key, u32 key_len,
				       const struct fluxonkv_upcall *start,
				       struct fluxonkv_refill *rf)
{
	struct fluxonkv_alloc *a;
	u64 span;
	int ret;

	if (!start->len || start->len > min_t(u64, FLUXONKV_VALUE_MAX,
					      fluxonkv_seg.size))
		return -EAGAIN;		/* the synchronous path says -EPROTO */
	/* isolated, a new range is unmapped first (may sleep): io-wq's */
	if (READ_ONCE(fluxonkv_isolated))
		return -EAGAIN;
	/*
	 * The target is the getter's pin from before it is allocated until
	 * the finish (the room wait included): charged to its user.
	 */
	span = round_up(start->len, FLUXONKV_SEGMENT_ALIGN);
	ret = fluxonkv_user_charge(s->user, span);
	if (ret)
		return ret;
	memcpy(rf->key, key, key_len);
	rf->key_len = key_len;
	rf->put_id = start->put_id;
	rf->alloc = NULL;
	rf->read = NULL;
	rf->revoke = false;
	rf->user = s->user;	/* the command holds the file: the session */
	rf->charged = span;
	a = fluxonkv_alloc_new(start->len);
	/* clean replicas dropped inline: no room wait at all */
	if (PTR_ERR_OR_ZERO(a) == -ENOSPC && fluxonkv_clean_room(start->len))
		a = fluxonkv_alloc_new(start->len);
	if (PTR_ERR_OR_ZERO(a) == -ENOSPC) {
		fluxonkv_refill_room_wait(rf, start->len);
		return -EIOCBQUEUED;
	}
	/* -ENOMEM: io-wq's; stale: revoked by the retry */
	if (IS_ERR(a) || fluxonkv_refill_submit(rf, a, start->len)) {
		rf->charged = 0;
		fluxonkv_user_uncharge(s->user, span);
		return -EAGAIN;
	}
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
 * read's error (-EIO for a device error or a checksum mismatch); for a
 * room wait that failed its error (-ENOSPC after FLUXONKV_ROOM_WAIT_MS,
 * -ENOTCONN, -ENOMEM), nothing revoked; -ECANCELED with @gone.
 */
int fluxonkv_get_refill_finish(struct fluxonkv_session *s,
			       struct fluxonkv_refill *rf,
			       struct fluxonkv_get_result *res, bool gone)
{
	struct fluxonkv_alloc *a = rf->alloc;
	int ret;

	if (rf->read) {
		/* the read's result (its check ran before @done) */
		rf->ret = fluxonkv_ssd_read_async_end(rf->read);
		rf->revoke = rf->ret != 0;	/* the copy's read failed */
		rf->read = NULL;
	}
	/* the target is the holder's, or freed, from here */
	fluxonkv_user_uncharge(rf->user, rf->charged);
	rf->charged = 0;
	rf->alloc = NULL;
	if (a)
		fluxonkv_lat_record(FLUXONKV_LAT_REFILL_READ, rf->t_read);
	if (gone) {
		if (a)
			fluxonkv_alloc_put(a);
		return -ECANCELED;
	}
	res->flags = 0;
	if (rf->ret) {
		/* Never a half-filled holder; never a wait in task work. */
		if (a)
			fluxonkv_alloc_put(a);
		if (rf->revoke)
			fluxonkv_refill_revoke(rf, rf->ret);
		ret = rf->ret == -ESTALE ? -ENOENT : rf->ret;
	} else {
		ret = fluxonkv_refill_publish(s, rf->key, rf->key_len,
					      rf->put_id, a, res);
	}
	return ret;
}

/*
 * A routed SSD copy of @key read into a temporary holder, for a get that
 * found no daemon (fluxonkv_get_alone()): room only where it is free now
 * (nobody to ask for more), no replica made (nobody to offer it to).
 * Return: 0 with a holder, -EAGAIN inline, -ENOTCONN where a daemon
 * would have been asked (no room, the copy went), -EIO / -EBADMSG (the
 * copy's bytes are bad: unrouted), -EINTR, -ENOMEM.
 */
static int fluxonkv_get_alone_ssd(struct fluxonkv_session *s, const u8 *key,
				  u32 key_len, u64 put_id, u64 len,
				  struct fluxonkv_get_result *res)
{
	struct fluxonkv_ssd_entry *e;
	struct fluxonkv_alloc *a;
	u64 span;
	int ret;

	if (res->flags & FLUXONKV_GR_NOWAIT)
		return -EAGAIN;		/* a disk read: not inline */
	if (!len || len > min_t(u64, FLUXONKV_VALUE_MAX, fluxonkv_seg.size))
		return -ENOTCONN;
	span = round_up(len, FLUXONKV_SEGMENT_ALIGN);
	ret = fluxonkv_user_charge(s->user, span);
	if (ret)
		return ret;
	a = fluxonkv_alloc_new(len);
	if (IS_ERR(a)) {
		ret = PTR_ERR(a) == -ENOSPC ? -ENOTCONN : PTR_ERR(a);
		goto err_uncharge;
	}
	e = fluxonkv_ssd_pin(key, key_len, put_id);
	if (!e || fluxonkv_ssd_entry_len(e) != len) {
		if (e)
			fluxonkv_ssd_unpin(e);
		ret = -ENOTCONN;	/* the ring overtook it */
		goto err_alloc;
	}
	/* unpins e; checks every MiB; a killed getter's read keeps the charge */
	ret = fluxonkv_ssd_read_charged(e, a, s->user, &span);
	/* An interrupted read says nothing about the SSD copy. */
	if (ret && signal_pending(current))
		ret = -EINTR;
	if (ret == -EIO || ret == -EBADMSG)
		/* bad bytes on the device: no later get reads that copy */
		fluxonkv_ssd_revoke_local(key, key_len, put_id);
	else if (ret && ret != -EINTR && ret != -ENOMEM)
		ret = -ENOTCONN;	/* the ring overtook it: as not here */
	if (ret)
		goto err_alloc;
	fluxonkv_user_uncharge(s->user, span);	/* the holder's from here */
	ret = fluxonkv_grant(s, a, put_id, FLUXONKV_SOURCE_SSD, res);
	if (!ret) {
		fluxonkv_stat_inc(hits_ssd);
		fluxonkv_stat_inc(hits_alone);
	}
	return ret;

err_alloc:
	fluxonkv_alloc_put(a);
err_uncharge:
	fluxonkv_user_uncharge(s->user, span);
	return ret;
}

/*
 * A get that found no daemon: served from this node's own index and SSD
 * routes while the lease its daemon left (FLUXONKV_UNREGISTER_F_LEASED)
 * still covers them -- the master that granted it answers no overwrite
 * or delete of a key held here before the lease ran out.  No access is
 * noted and nothing is asked: -ENOTCONN for whatever is not here (a miss
 * here says nothing about the cluster).
 */
static int fluxonkv_get_alone(struct fluxonkv_session *s, const u8 *key,
			      u32 key_len, struct fluxonkv_get_result *res)
{
	struct fluxonkv_alloc *a;
	u64 put_id, handle, len;
	int ret;

	if (!fluxonkv_lease_serves_alone())
		return -ENOTCONN;
	a = fluxonkv_index_lookup(key, key_len, &put_id, &handle);
	if (a) {
		ret = fluxonkv_grant(s, a, put_id, FLUXONKV_SOURCE_MEMORY, res);
		if (!ret) {
			fluxonkv_stat_inc(hits_memory);
			fluxonkv_stat_inc(hits_alone);
		}
		return ret;
	}
	if (fluxonkv_ssd_lookup_routed(key, key_len, &put_id, &len))
		return fluxonkv_get_alone_ssd(s, key, key_len, put_id, len,
					      res);
	return -ENOTCONN;
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
		return fluxonkv_get_alone(s, key, key_len, res);

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
				return fluxonkv_get_from_ssd_start(s, key,
								   key_len, &up,
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
