// SPDX-License-Identifier: GPL-2.0
/*
 * What the module tells the master without making anyone wait:
 *
 *   ACCESS    replica handles hit on the fast path (no upcall), sent in
 *             batches of FLUXONKV_ACCESS_BATCH or every
 *             FLUXONKV_ACCESS_DELAY_MS, for the master's eviction policy;
 *   GET_DONE  refilled or fetched replicas offered for promotion, sent from
 *             a worker so that the get returns its holder first;
 *   PUT_LOCAL puts the module published itself, sent in batches from a
 *             worker -- and before any other message to the daemon, so
 *             the master never reads of a delete, a commit or a room
 *             request before the put it follows;
 *   DROPPED   clean replicas the module dropped itself (replica.c), sent
 *             in batches from a worker; never lost while the daemon stays
 *             registered: a drop first reserves its note's place.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "fluxonkv.h"

/*
 * Replica handles hit on the fast path, sent to the master in batches of
 * FLUXONKV_ACCESS_BATCH or every FLUXONKV_ACCESS_DELAY_MS.  Each CPU keeps
 * its own batch, so a DRAM hit touches no line another CPU's hits write.
 * A full batch drops further notes until it is sent: the notes are hints,
 * gets never wait.
 */
struct fluxonkv_access_cpu {
	/*
	 * Protects handles[] and n: taken by gets on this CPU and by the
	 * flush; contended only by the flush (or a get that migrated).
	 */
	spinlock_t lock;
	unsigned int n;
	u64 handles[FLUXONKV_ACCESS_BATCH];
};

/* Allocated at load (not static per-CPU data: the modules' reserve is small). */
static struct fluxonkv_access_cpu __percpu *fluxonkv_access_cpu;
static struct delayed_work fluxonkv_access_work;

static void fluxonkv_access_flush(struct work_struct *work)
{
	static u64 batch[FLUXONKV_ACCESS_BATCH];	/* only this work uses it */
	struct fluxonkv_upcall_args none = {};
	unsigned int n;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct fluxonkv_access_cpu *c =
			per_cpu_ptr(fluxonkv_access_cpu, cpu);

		spin_lock(&c->lock);
		n = c->n;
		memcpy(batch, c->handles, n * sizeof(u64));
		c->n = 0;
		spin_unlock(&c->lock);
		if (n)
			fluxonkv_notify(FLUXONKV_CMD_ACCESS, &none, batch, n);
	}
}

/* Notes taken under the previous daemon's handles are of no use now. */
void fluxonkv_access_forget(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct fluxonkv_access_cpu *c =
			per_cpu_ptr(fluxonkv_access_cpu, cpu);

		spin_lock(&c->lock);
		c->n = 0;
		spin_unlock(&c->lock);
	}
}

void fluxonkv_access_note(u64 handle)
{
	struct fluxonkv_access_cpu *c;
	unsigned int n;

	/*
	 * This CPU's batch, preemption left on (a spinlock sleeps under
	 * PREEMPT_RT): a get that migrates meanwhile still holds the lock
	 * of the batch it writes, only the batching is less local.
	 */
	c = raw_cpu_ptr(fluxonkv_access_cpu);
	spin_lock(&c->lock);
	n = c->n;
	if (n < FLUXONKV_ACCESS_BATCH)
		c->handles[c->n++] = handle;
	spin_unlock(&c->lock);

	/* The first note of a batch arms the flush, a full one runs it now. */
	if (n == 0)
		schedule_delayed_work(&fluxonkv_access_work,
				      msecs_to_jiffies(FLUXONKV_ACCESS_DELAY_MS));
	else if (n + 1 == FLUXONKV_ACCESS_BATCH)
		mod_delayed_work(system_wq, &fluxonkv_access_work, 0);
}

/*
 * Refilled replicas waiting to be offered to the master (GET_DONE), sent
 * from a worker so that a get returns without waking the daemon itself.
 */
struct fluxonkv_get_done_req {
	struct list_head node;		/* on fluxonkv_get_done.list */
	struct fluxonkv_upcall up;	/* up.replica: the refilled replica */
	u32 source;			/* where its bytes came from */
};

/*
 * Offers queued or waiting for their answer; above this a refill stays a
 * temporary holder instead (a stalled daemon must not fill the segment
 * with refilled copies it will never promote).
 */
#define FLUXONKV_GET_DONE_MAX	256

static struct {
	spinlock_t lock;		/* protects list */
	struct list_head list;
	struct work_struct work;
	atomic_t pending;		/* queued + sent, not ended */
} fluxonkv_get_done;

static void fluxonkv_get_done_send(struct work_struct *work);

/*
 * GET_DONE answered (or failed): the answer handler published @r if the
 * master promoted it; otherwise the handle table lets it go and the
 * holder's bytes were a temporary copy.
 */
static void fluxonkv_get_done_end(struct fluxonkv_upcall *up)
{
	struct fluxonkv_get_done_req *req =
		container_of(up, struct fluxonkv_get_done_req, up);
	struct fluxonkv_replica *r = up->replica;

	if (up->status || !(up->flags & FLUXONKV_GET_F_PROMOTED)) {
		fluxonkv_replica_drop(r->handle);
		fluxonkv_stat_inc(promotions_refused);
	} else {
		fluxonkv_stat_inc(promotions);
	}
	fluxonkv_replica_put(r);
	kfree(req);
	atomic_dec(&fluxonkv_get_done.pending);
}

static void fluxonkv_get_done_send(struct work_struct *work)
{
	struct fluxonkv_get_done_req *req, *tmp;
	LIST_HEAD(batch);

	spin_lock(&fluxonkv_get_done.lock);
	list_splice_init(&fluxonkv_get_done.list, &batch);
	spin_unlock(&fluxonkv_get_done.lock);
	list_for_each_entry_safe(req, tmp, &batch, node) {
		struct fluxonkv_replica *r = req->up.replica;
		struct fluxonkv_upcall_args args = {
			.key = r->key, .key_len = r->key_len,
			.put_id = r->put_id, .handle = r->handle,
			.len = r->alloc->len, .source = req->source,
		};

		list_del(&req->node);
		/* args point into @r: keep it even if @req ends meanwhile */
		kref_get(&r->ref);
		fluxonkv_upcall_async(FLUXONKV_CMD_GET_DONE, &args, &req->up);
		fluxonkv_replica_put(r);
	}
}

/*
 * Offer the refilled replica @r to the master (GET_DONE) without waiting:
 * the get returns its holder now, a worker sends the offer, and the
 * promotion lands in the index when the answer comes (in order with the
 * master's later DROP_REPLICA).  Takes over the caller's reference on @r.
 */
void fluxonkv_get_done_offer(struct fluxonkv_replica *r, u32 source)
{
	struct fluxonkv_get_done_req *req = NULL;

	if (atomic_inc_return(&fluxonkv_get_done.pending) <=
	    FLUXONKV_GET_DONE_MAX)
		req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req) {
		atomic_dec(&fluxonkv_get_done.pending);
		fluxonkv_replica_drop(r->handle);
		fluxonkv_stat_inc(promotions_refused);
		fluxonkv_replica_put(r);
		return;
	}
	req->up.replica = r;
	req->up.end = fluxonkv_get_done_end;
	req->source = source;
	spin_lock(&fluxonkv_get_done.lock);
	list_add_tail(&req->node, &fluxonkv_get_done.list);
	spin_unlock(&fluxonkv_get_done.lock);
	queue_work(system_unbound_wq, &fluxonkv_get_done.work);
}

/*
 * DROPPED notes: handles of clean replicas the module dropped, sent to the
 * master in batches of FLUXONKV_DROP_NOTE_BATCH, FLUXONKV_PUT_NOTE_DELAY_MS
 * after the first one.  A drop reserves its place before it erases the
 * handle (fluxonkv_drop_note_reserve()), so a full queue refuses drops
 * rather than losing notes: the master would route gets to, and count
 * bytes of, a replica that is gone.  A handle the master no longer knows
 * (it dropped the replica meanwhile) is ignored there.
 */
#define FLUXONKV_DROP_NOTE_MAX		4096
#define FLUXONKV_DROP_NOTE_BATCH	256

static struct {
	spinlock_t lock;		/* protects handles[], gens[], head, n */
	u64 handles[FLUXONKV_DROP_NOTE_MAX];	/* a ring from head */
	/* the daemon link generation each drop was made for */
	u64 gens[FLUXONKV_DROP_NOTE_MAX];
	unsigned int head, n;
	/* places taken: n plus drops between reserve and commit/cancel */
	atomic_t reserved;
	/* moved by a forget: a batch sent across it is not taken off again */
	unsigned int epoch;
	struct delayed_work work;
} fluxonkv_drop_notes;

bool fluxonkv_drop_note_reserve(void)
{
	if (atomic_inc_return(&fluxonkv_drop_notes.reserved) >
	    FLUXONKV_DROP_NOTE_MAX) {
		atomic_dec(&fluxonkv_drop_notes.reserved);
		fluxonkv_stat_inc(dropped_notes_full);
		return false;
	}
	return true;
}

void fluxonkv_drop_note_cancel(void)
{
	atomic_dec(&fluxonkv_drop_notes.reserved);
}

void fluxonkv_drop_note_commit(u64 handle, u64 gen)
{
	unsigned int n, i;

	spin_lock(&fluxonkv_drop_notes.lock);
	n = fluxonkv_drop_notes.n++;
	i = (fluxonkv_drop_notes.head + n) % FLUXONKV_DROP_NOTE_MAX;
	fluxonkv_drop_notes.handles[i] = handle;
	fluxonkv_drop_notes.gens[i] = gen;
	spin_unlock(&fluxonkv_drop_notes.lock);
	/* The first note arms the flush, a full batch runs it now. */
	if (n == 0)
		schedule_delayed_work(&fluxonkv_drop_notes.work,
				      msecs_to_jiffies(FLUXONKV_PUT_NOTE_DELAY_MS));
	else if (n + 1 == FLUXONKV_DROP_NOTE_BATCH)
		mod_delayed_work(system_wq, &fluxonkv_drop_notes.work, 0);
}

/*
 * Send every queued DROPPED note; called by fluxonkv_put_notes_flush()
 * with the send lock held, so drops go out before the PUT_LOCAL notes
 * queued with them and before any other message: the master's eviction
 * after a local put counts the room the drops made (it would evict more
 * than needed otherwise, dirty replicas among them).  Return: 0, or
 * -EAGAIN with notes still queued (a full daemon socket, no memory).
 */
static int fluxonkv_drop_notes_send_locked(void)
{
	/* only under the send lock */
	static u64 batch[FLUXONKV_DROP_NOTE_BATCH];
	u64 gen = fluxonkv_daemon_link_generation();
	unsigned int n, i, j, m, epoch;
	int ret;

	for (;;) {
		spin_lock(&fluxonkv_drop_notes.lock);
		n = min_t(unsigned int, fluxonkv_drop_notes.n,
			  FLUXONKV_DROP_NOTE_BATCH);
		/* a previous daemon's notes are left out (its routes went) */
		for (i = 0, m = 0; i < n; i++) {
			j = (fluxonkv_drop_notes.head + i) %
			    FLUXONKV_DROP_NOTE_MAX;
			if (fluxonkv_drop_notes.gens[j] == gen)
				batch[m++] = fluxonkv_drop_notes.handles[j];
		}
		epoch = fluxonkv_drop_notes.epoch;
		spin_unlock(&fluxonkv_drop_notes.lock);
		if (!n)
			return 0;
		ret = m ? fluxonkv_notify_dropped(batch, m) : 0;
		if (ret == -EAGAIN || ret == -ENOMEM)
			return -EAGAIN;	/* kept, in order */
		/* Sent, or no daemon: its routes went with it.  Off the queue. */
		if (ret && ret != -ENOTCONN)
			pr_warn_ratelimited("%u clean drop notes lost: %d\n",
					    m, ret);
		spin_lock(&fluxonkv_drop_notes.lock);
		if (fluxonkv_drop_notes.epoch == epoch) {
			fluxonkv_drop_notes.head = (fluxonkv_drop_notes.head + n) %
						   FLUXONKV_DROP_NOTE_MAX;
			fluxonkv_drop_notes.n -= n;
			atomic_sub(n, &fluxonkv_drop_notes.reserved);
		}
		spin_unlock(&fluxonkv_drop_notes.lock);
	}
}

static void fluxonkv_drop_notes_run(struct work_struct *work)
{
	fluxonkv_put_notes_flush();
}

/*
 * The daemon went (daemon lock held), or the module goes: the notes were
 * for its routes, gone with it (a successor adopts only replicas still in
 * the handle table).
 */
void fluxonkv_drop_notes_forget(void)
{
	spin_lock(&fluxonkv_drop_notes.lock);
	atomic_sub(fluxonkv_drop_notes.n, &fluxonkv_drop_notes.reserved);
	fluxonkv_drop_notes.n = 0;
	fluxonkv_drop_notes.head = 0;
	fluxonkv_drop_notes.epoch++;
	spin_unlock(&fluxonkv_drop_notes.lock);
}

/*
 * Local puts the master has not been told of yet (PUT_LOCAL), in
 * publication order.  Unlike ACCESS notes they are never dropped while
 * the daemon that delegated the puts is registered: a put the master
 * never hears of is a replica it never evicts.  Their number is bounded
 * by the segment (each note holds a published replica), and a full daemon
 * socket holds them back until it drains.
 */
static struct {
	spinlock_t lock;		/* protects list */
	struct list_head list;		/* replicas, by ->note, one ref each */
	/*
	 * Notes queued or being sent, so that a sender sees a flush in
	 * progress: it must wait for it (send_lock), or its message could
	 * overtake the notes.
	 */
	atomic_t pending;
	/*
	 * Held while notes are taken off the list and sent: batches leave in
	 * order, and a message another sender sends after its flush follows
	 * every note queued before it.  Never held while taking the daemon
	 * lock (the teardown takes it under the daemon lock).
	 */
	struct mutex send_lock;
	struct delayed_work work;
} fluxonkv_put_notes;

static void fluxonkv_put_notes_release(struct list_head *batch)
{
	struct fluxonkv_replica *r, *tmp;

	list_for_each_entry_safe(r, tmp, batch, note) {
		list_del(&r->note);
		atomic_dec(&fluxonkv_put_notes.pending);
		fluxonkv_replica_put(r);
	}
}

/**
 * fluxonkv_put_notes_flush() - send every queued PUT_LOCAL note now.
 *
 * Called before any other message to the daemon.  Notes of a previous
 * daemon are dropped (its successor learns of the replicas from DUMP).
 * May sleep.
 *
 * Return: 0 (nothing left queued, or no daemon), or -EAGAIN with the notes
 * still queued (a full daemon socket, no memory): the caller's own message
 * must not go out before them (fluxonkv_send() retries).
 */
int fluxonkv_put_notes_flush(void)
{
	struct fluxonkv_replica *r, *tmp;
	LIST_HEAD(batch);
	unsigned int n;
	int ret = 0;
	u64 gen;

	if (!atomic_read(&fluxonkv_put_notes.pending) &&
	    !READ_ONCE(fluxonkv_drop_notes.n))
		return 0;
	mutex_lock(&fluxonkv_put_notes.send_lock);
	if (fluxonkv_drop_notes_send_locked()) {
		/* the worker tries again; a sender retries (fluxonkv_send()) */
		schedule_delayed_work(&fluxonkv_drop_notes.work,
				      msecs_to_jiffies(FLUXONKV_PUT_NOTE_DELAY_MS));
		mutex_unlock(&fluxonkv_put_notes.send_lock);
		return -EAGAIN;
	}
	/* read under the lock: a flush that waited must not use a stale one */
	gen = fluxonkv_daemon_link_generation();
	for (;;) {
		n = 0;
		spin_lock(&fluxonkv_put_notes.lock);
		list_for_each_entry_safe(r, tmp, &fluxonkv_put_notes.list,
					 note) {
			if (n == FLUXONKV_PUT_NOTE_BATCH)
				break;
			list_move_tail(&r->note, &batch);
			n++;
		}
		spin_unlock(&fluxonkv_put_notes.lock);
		if (list_empty(&batch))
			break;
		ret = fluxonkv_notify_put_local(&batch, gen);
		if (ret == -EAGAIN || ret == -ENOMEM) {
			/* back at the head, in order; the worker tries again */
			spin_lock(&fluxonkv_put_notes.lock);
			list_splice(&batch, &fluxonkv_put_notes.list);
			spin_unlock(&fluxonkv_put_notes.lock);
			schedule_delayed_work(&fluxonkv_put_notes.work,
					      msecs_to_jiffies(FLUXONKV_PUT_NOTE_DELAY_MS));
			/* a sender retries a full socket (fluxonkv_send()) */
			ret = -EAGAIN;
			break;
		}
		/*
		 * Sent, or no daemon to send them to: done.  Anything else
		 * (the message could not be built) loses them: the master
		 * never evicts those replicas.  Said, never silently.
		 */
		if (ret && ret != -ENOTCONN)
			pr_warn_ratelimited("%u local put notes lost: %d\n",
					    n, ret);
		fluxonkv_put_notes_release(&batch);
		ret = 0;
	}
	mutex_unlock(&fluxonkv_put_notes.send_lock);
	return ret;
}

static void fluxonkv_put_notes_run(struct work_struct *work)
{
	fluxonkv_put_notes_flush();
}

/**
 * fluxonkv_put_note() - tell the master of a put published locally.
 * @r: the published replica (the note takes its own reference).
 * @flags: FLUXONKV_PUT_F_PERSIST if its SSD write is about to start.
 * @gen: the daemon link generation that delegated the put (only that
 *	daemon is told; fluxonkv_replica_publish_local() gave it).
 *
 * Queued for the worker; any message to the daemon sent after this
 * returns follows the note.
 */
void fluxonkv_put_note(struct fluxonkv_replica *r, u32 flags, u64 gen)
{
	unsigned int n;

	kref_get(&r->ref);
	r->note_gen = gen;
	r->note_flags = flags;
	spin_lock(&fluxonkv_put_notes.lock);
	list_add_tail(&r->note, &fluxonkv_put_notes.list);
	n = atomic_inc_return(&fluxonkv_put_notes.pending);
	spin_unlock(&fluxonkv_put_notes.lock);
	/* The first note arms the flush, a full batch runs it now. */
	if (n == 1)
		schedule_delayed_work(&fluxonkv_put_notes.work,
				      msecs_to_jiffies(FLUXONKV_PUT_NOTE_DELAY_MS));
	else if (n == FLUXONKV_PUT_NOTE_BATCH)
		mod_delayed_work(system_wq, &fluxonkv_put_notes.work, 0);
}

/*
 * The daemon went (daemon lock held), or the module goes (no daemon is
 * left): its notes are of no use now.
 */
void fluxonkv_put_notes_forget(void)
{
	LIST_HEAD(batch);

	mutex_lock(&fluxonkv_put_notes.send_lock);
	spin_lock(&fluxonkv_put_notes.lock);
	list_splice_init(&fluxonkv_put_notes.list, &batch);
	spin_unlock(&fluxonkv_put_notes.lock);
	fluxonkv_put_notes_release(&batch);
	mutex_unlock(&fluxonkv_put_notes.send_lock);
}

int fluxonkv_notes_init(void)
{
	int cpu;

	fluxonkv_access_cpu = alloc_percpu(struct fluxonkv_access_cpu);
	if (!fluxonkv_access_cpu)
		return -ENOMEM;
	for_each_possible_cpu(cpu)
		spin_lock_init(&per_cpu_ptr(fluxonkv_access_cpu, cpu)->lock);
	INIT_DELAYED_WORK(&fluxonkv_access_work, fluxonkv_access_flush);
	spin_lock_init(&fluxonkv_get_done.lock);
	INIT_LIST_HEAD(&fluxonkv_get_done.list);
	INIT_WORK(&fluxonkv_get_done.work, fluxonkv_get_done_send);
	spin_lock_init(&fluxonkv_put_notes.lock);
	INIT_LIST_HEAD(&fluxonkv_put_notes.list);
	mutex_init(&fluxonkv_put_notes.send_lock);
	INIT_DELAYED_WORK(&fluxonkv_put_notes.work, fluxonkv_put_notes_run);
	spin_lock_init(&fluxonkv_drop_notes.lock);
	INIT_DELAYED_WORK(&fluxonkv_drop_notes.work, fluxonkv_drop_notes_run);
	return 0;
}

/* No more gets (the device is gone): send or end the queued offers. */
void fluxonkv_notes_quiesce(void)
{
	flush_work(&fluxonkv_get_done.work);
}

void fluxonkv_notes_exit(void)
{
	cancel_delayed_work_sync(&fluxonkv_put_notes.work);
	fluxonkv_put_notes_forget();
	cancel_delayed_work_sync(&fluxonkv_drop_notes.work);
	fluxonkv_drop_notes_forget();
	cancel_delayed_work_sync(&fluxonkv_access_work);
	fluxonkv_notes_quiesce();
	free_percpu(fluxonkv_access_cpu);
}
