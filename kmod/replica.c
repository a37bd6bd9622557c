// SPDX-License-Identifier: GPL-2.0
/*
 * Replicas, their handles and the local index.
 *
 * Every value the module stores becomes a replica, entered in the handle
 * table before PUT_DONE tells the master its handle.  The handle table's
 * reference is the master's route reference: it goes when the master sends
 * DROP_REPLICA (eviction, overwrite, delete), when a put is not published, or
 * when the daemon disconnects.
 *
 * The local index (the reference's get_cached_info) maps a key to its current
 * published replica so a get is answered without an upcall.  Publication
 * happens in the PUT_DONE answer handler and unpublication in DROP_REPLICA
 * and DELETE handlers, all in the order the daemon sent them, so a get never
 * sees a version older than a completed put or a key whose delete completed.
 *
 * With a local-routes master (kv.c) a get also answers "no such key" from
 * the index and the SSD routes.  That answer is only right for a stable
 * view: the daemon drops an overwritten version (DROP_REPLICA) before it
 * answers the PUT_DONE that publishes the new one, so for a moment neither
 * is indexed although the master routes to the new one.  Two things make
 * the view checkable: every removal of a route the index or the SSD routes
 * had is bracketed by fluxonkv_removal_begin()/_end(), and a put counts
 * itself in fluxonkv_put_inflight[] around PUT_DONE, both by key bucket (a
 * seeded hash of the key).  A get that saw no removal of a key in its
 * bucket start, end or run across its look, and no put of such a key in
 * flight, saw what the master routes: route changes of other keys (1 in
 * FLUXONKV_LOOK_BUCKETS share a bucket) do not make it ask the master.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/jhash.h>
#include <linux/random.h>
#include <linux/rhashtable.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <net/genetlink.h>

#include "fluxonkv.h"

/* handle -> replica; the xarray's own lock serialises insert/erase. */
static DEFINE_XARRAY_ALLOC1(fluxonkv_handles);
static u32 fluxonkv_handle_next;	/* cyclic allocation cursor (xa lock) */
/* Slots live in the low bits of a handle (uapi FLUXONKV_HANDLE_*). */
static const struct xa_limit fluxonkv_slot_limit =
	XA_LIMIT(1, FLUXONKV_HANDLE_SLOT_MASK);
/* Stamped into new handles; set at daemon registration (genl.c). */
static u32 fluxonkv_node_id;

/*
 * Kept replicas wait for their adoption (->adopting): while any does, no
 * local miss is trusted either (fluxonkv_look_begin() says unsure), so a
 * single node's module asks its master rather than answering a miss for a
 * key whose kept replica is being adopted.  Written under the handle
 * table's lock.
 */
static bool fluxonkv_adopting;

/*
 * The master's lease (FLUXONKV_REGISTER_F_LEASE): local hits only before
 * this CLOCK_MONOTONIC ns; U64_MAX without a lease.  Written by
 * DAEMON_REGISTER and LEASE (the daemon lock serialises them), read
 * locklessly by every lookup: a get that reads the old value raced the
 * LEASE and may go either way, as if it had run just before or after.
 */
static u64 fluxonkv_lease_until = U64_MAX;

void fluxonkv_lease_set(u64 until_ns)
{
	WRITE_ONCE(fluxonkv_lease_until, until_ns);
}

/* Local hits allowed: no lease, or the lease still holds. */
static bool fluxonkv_lease_holds(void)
{
	u64 until = READ_ONCE(fluxonkv_lease_until);

	if (likely(until == U64_MAX) || ktime_get_ns() < until)
		return true;
	fluxonkv_stat_inc(lease_refused);
	return false;
}

/*
 * The daemon went with FLUXONKV_UNREGISTER_F_LEASED: local hits go on
 * without it until this CLOCK_MONOTONIC ns (its lease's deadline as it
 * left); 0: none.  One word, compared once: a registration racing a get
 * that found no daemon resets fluxonkv_lease_until (to U64_MAX without
 * F_LEASE), which must not make a lease that ran out look alive again.
 * Written under the daemon lock by detach (set or cleared) and by
 * registration (cleared, before the lease is reset); read locklessly.
 */
static u64 fluxonkv_lease_alone_until;

void fluxonkv_lease_set_alone(bool alone)
{
	WRITE_ONCE(fluxonkv_lease_alone_until,
		   alone ? READ_ONCE(fluxonkv_lease_until) : 0);
}

/* No daemon, but the lease it left still covers this node's hits. */
bool fluxonkv_lease_serves_alone(void)
{
	u64 until = READ_ONCE(fluxonkv_lease_alone_until);

	return until && ktime_get_ns() < until;
}

/*
 * Fault injection for the tests (debugfs walk_delay_ms, root only): each
 * step of a walk over every replica (renumbering, ADOPT_DONE) takes this
 * long, as millions of replicas would.  One READ_ONCE when off.
 */
u32 fluxonkv_walk_delay_ms;

static void fluxonkv_walk_step(void)
{
	u32 ms = READ_ONCE(fluxonkv_walk_delay_ms);

	if (unlikely(ms))
		mdelay(min(ms, 100U));
}

/*
 * Replicas a walk over the whole handle table (renumbering, ADOPT_DONE)
 * handles under the table's lock -- a spinlock: no preemption on that
 * CPU -- before it lets go and reschedules: a node may keep millions.
 */
#define FLUXONKV_WALK_BATCH	64

/* Every FLUXONKV_WALK_BATCH steps of @xas (locked): let the CPU go. */
static void fluxonkv_walk_pause(struct xa_state *xas, unsigned long *n)
{
	fluxonkv_walk_step();
	if (++*n % FLUXONKV_WALK_BATCH)
		return;
	xas_pause(xas);
	xas_unlock(xas);
	cond_resched();
	xas_lock(xas);
}

/*
 * The node id stamped into new handles.  With @renumber, the replicas a
 * previous daemon kept (FLUXONKV_REGISTER_F_KEEP) take it too.  The id
 * is set first, under the handle table's lock, as replica_new() stamps
 * and stores a handle: a replica stored after that is stamped with it,
 * and one stored before is in the table for the walk, which therefore
 * may let go of the lock between batches (renumbering is idempotent).
 * Called with the daemon lock held, before the new daemon learns any
 * handle and before it is connected (no get looks at a replica).
 */
void fluxonkv_replica_set_node(u32 node_id, bool renumber)
{
	XA_STATE(xas, &fluxonkv_handles, 0);
	struct fluxonkv_replica *r;
	unsigned long n = 0;

	fluxonkv_daemon_assert_locked();
	xa_lock(&fluxonkv_handles);
	WRITE_ONCE(fluxonkv_node_id, node_id);
	/* nothing kept is adopted: no replica of a daemon before */
	if (!renumber)
		WRITE_ONCE(fluxonkv_adopting, false);
	xa_unlock(&fluxonkv_handles);
	if (!renumber)
		return;
	xas_lock(&xas);
	xas_for_each(&xas, r, ULONG_MAX) {
		/* a slot taken but not yet stored (XA_ZERO_ENTRY) */
		if (xas_retry(&xas, r))
			continue;
		r->handle = FLUXONKV_HANDLE_MAKE(r->handle, node_id, 0) |
			    (r->handle &
			     ~((1ULL << FLUXONKV_HANDLE_TAG_SHIFT) - 1));
		WRITE_ONCE(r->alloc->owner, r->handle);
		WRITE_ONCE(r->adopting, true);
		WRITE_ONCE(fluxonkv_adopting, true);
		fluxonkv_walk_pause(&xas, &n);
	}
	xas_unlock(&xas);
}

/*
 * ADOPT_DONE: the daemon's master has adopted every kept replica it did
 * not drop (its DROP_REPLICAs came first): the rest are local hits again.
 * Returns how many were waiting.  The global mark goes last: until then
 * no local miss is trusted, and a replica the walk has not reached yet
 * is no local hit.
 */
unsigned long fluxonkv_replica_adopt_done(void)
{
	XA_STATE(xas, &fluxonkv_handles, 0);
	struct fluxonkv_replica *r;
	unsigned long n = 0, steps = 0;

	xas_lock(&xas);
	xas_for_each(&xas, r, ULONG_MAX) {
		if (xas_retry(&xas, r))
			continue;
		if (r->adopting) {
			WRITE_ONCE(r->adopting, false);
			n++;
		}
		fluxonkv_walk_pause(&xas, &steps);
	}
	WRITE_ONCE(fluxonkv_adopting, false);
	xas_unlock(&xas);
	return n;
}

bool fluxonkv_adoption_pending(void)
{
	return READ_ONCE(fluxonkv_adopting);
}

u32 fluxonkv_replica_node(void)
{
	return READ_ONCE(fluxonkv_node_id);
}

static u32 fluxonkv_handle_slot(u64 handle)
{
	return (u32)(handle & FLUXONKV_HANDLE_SLOT_MASK);
}

/*
 * The local index: key -> its current published replica, an rhashtable
 * (random seed, grows and shrinks with the number of keys).  Lookups run
 * under RCU only -- a DRAM hit takes no lock -- and pin what they find
 * with kref_get_unless_zero(): replicas are freed after a grace period.
 * Changes (publish, unindex, forget) are serialised by
 * fluxonkv_index_lock, which also protects every replica's ->indexed.
 */
static DEFINE_SPINLOCK(fluxonkv_index_lock);
static struct rhashtable fluxonkv_index;
static atomic_long_t fluxonkv_nr_replicas;
/*
 * Publications the index could not take (rhashtable insert failed, no
 * memory): from then on the index may lack a published key, so a local
 * miss is never trusted (fluxonkv_look_begin() says unsure).
 */
static atomic_t fluxonkv_index_failures = ATOMIC_INIT(0);

/* What index lookups are given: the key's bytes. */
struct fluxonkv_index_key {
	const u8 *key;
	u32 len;
};

static u32 fluxonkv_index_hashfn(const void *data, u32 len, u32 seed)
{
	const struct fluxonkv_index_key *k = data;

	return jhash(k->key, k->len, seed);
}

static u32 fluxonkv_index_obj_hashfn(const void *data, u32 len, u32 seed)
{
	const struct fluxonkv_replica *r = data;

	return jhash(r->key, r->key_len, seed);
}

static int fluxonkv_index_cmpfn(struct rhashtable_compare_arg *arg,
				const void *obj)
{
	const struct fluxonkv_index_key *k = arg->key;
	const struct fluxonkv_replica *r = obj;

	return r->key_len != k->len || memcmp(r->key, k->key, k->len);
}

static const struct rhashtable_params fluxonkv_index_params = {
	.head_offset = offsetof(struct fluxonkv_replica, node),
	.hashfn = fluxonkv_index_hashfn,
	.obj_hashfn = fluxonkv_index_obj_hashfn,
	.obj_cmpfn = fluxonkv_index_cmpfn,
	.automatic_shrinking = true,
};

/*
 * By key bucket (see the comment on top): route removals in progress and
 * completed, and puts between sending PUT_DONE and its answer.  The seed
 * keeps anyone from aiming keys at another tenant's bucket.
 */
#define FLUXONKV_LOOK_BUCKETS	1024
static atomic_t fluxonkv_removing[FLUXONKV_LOOK_BUCKETS];
static atomic_t fluxonkv_removed_seq[FLUXONKV_LOOK_BUCKETS];
static atomic_t fluxonkv_put_inflight[FLUXONKV_LOOK_BUCKETS];
static u32 fluxonkv_look_seed;

int fluxonkv_replica_init(void)
{
	fluxonkv_look_seed = get_random_u32();
	return rhashtable_init(&fluxonkv_index, &fluxonkv_index_params);
}

void fluxonkv_replica_exit(void)
{
	fluxonkv_replica_drop_all();
	WARN_ON(atomic_long_read(&fluxonkv_nr_replicas));
	xa_destroy(&fluxonkv_handles);
	rhashtable_destroy(&fluxonkv_index);	/* empty: every replica went */
	/*
	 * Replicas and SSD entries are plain kmalloc memory freed by
	 * kfree_rcu(): nothing of ours runs after the grace period, so
	 * unloading need not wait for those batches; this waits for any
	 * call_rcu() callback of ours still queued.
	 */
	rcu_barrier();
}

static unsigned int fluxonkv_look_bucket(const u8 *key, u32 key_len)
{
	return jhash(key, key_len, fluxonkv_look_seed) % FLUXONKV_LOOK_BUCKETS;
}

static bool fluxonkv_key_eq(const struct fluxonkv_replica *r, const u8 *key,
			    u32 key_len)
{
	return r->key_len == key_len && !memcmp(r->key, key, key_len);
}

/*
 * Around anything that removes a route of @key the index or SSD routes
 * showed.  The full barriers pair with those of fluxonkv_look_begin() and
 * fluxonkv_look_stable(): a look that read the bucket's counters before
 * _begin() reads _end()'s sequence after it, or saw the removal running.
 */
void fluxonkv_removal_begin(const u8 *key, u32 key_len)
{
	atomic_inc(&fluxonkv_removing[fluxonkv_look_bucket(key, key_len)]);
	smp_mb__after_atomic();	/* running before the route goes */
}

void fluxonkv_removal_end(const u8 *key, u32 key_len)
{
	unsigned int b = fluxonkv_look_bucket(key, key_len);

	smp_mb__before_atomic();	/* the route is gone before ... */
	atomic_inc(&fluxonkv_removed_seq[b]);
	smp_mb__after_atomic();		/* ... the sequence moves, then ... */
	atomic_dec(&fluxonkv_removing[b]);	/* ... it stops running */
}

/* Around a removal of every route (the daemon went): every bucket. */
void fluxonkv_removal_all_begin(void)
{
	unsigned int b;

	for (b = 0; b < FLUXONKV_LOOK_BUCKETS; b++)
		atomic_inc(&fluxonkv_removing[b]);
	smp_mb__after_atomic();	/* as in fluxonkv_removal_begin() */
}

void fluxonkv_removal_all_end(void)
{
	unsigned int b;

	/* as in fluxonkv_removal_end(), for every bucket */
	smp_mb__before_atomic();
	for (b = 0; b < FLUXONKV_LOOK_BUCKETS; b++)
		atomic_inc(&fluxonkv_removed_seq[b]);
	smp_mb__after_atomic();
	for (b = 0; b < FLUXONKV_LOOK_BUCKETS; b++)
		atomic_dec(&fluxonkv_removing[b]);
}

/* Around PUT_DONE: @delta +1 before sending it, -1 once answered. */
void fluxonkv_put_inflight_add(const u8 *key, u32 key_len, int delta)
{
	atomic_t *c = &fluxonkv_put_inflight[fluxonkv_look_bucket(key, key_len)];

	smp_mb__before_atomic();
	atomic_add(delta, c);
	smp_mb__after_atomic();
}

/**
 * fluxonkv_look_begin() - start a look at the routes of @key.
 * @key: key bytes.
 * @key_len: key length.
 * @unsure: out: true if a removal or a put of a key in the same bucket is
 *	in flight, or kept replicas wait for adoption (then only the master
 *	can tell a miss).
 *
 * Return: a cookie for fluxonkv_look_stable() on the same key.
 */
unsigned int fluxonkv_look_begin(const u8 *key, u32 key_len, bool *unsure)
{
	unsigned int b = fluxonkv_look_bucket(key, key_len);
	unsigned int seq = atomic_read(&fluxonkv_removed_seq[b]);

	smp_mb();
	*unsure = atomic_read(&fluxonkv_removing[b]) ||
		  atomic_read(&fluxonkv_index_failures) ||
		  atomic_read(&fluxonkv_put_inflight[b]) ||
		  READ_ONCE(fluxonkv_adopting);
	smp_mb();
	return seq;
}

/* True if no removal of a key in @key's bucket overlapped the look. */
bool fluxonkv_look_stable(const u8 *key, u32 key_len, unsigned int seq)
{
	unsigned int b = fluxonkv_look_bucket(key, key_len);

	smp_mb();
	if (atomic_read_acquire(&fluxonkv_removing[b]))
		return false;
	return atomic_read(&fluxonkv_removed_seq[b]) == seq;
}

/**
 * fluxonkv_replica_new() - make a replica and give it a handle.
 * @key: key bytes (copied).
 * @key_len: 1..FLUXONKV_KEY_MAX.
 * @put_id: version.
 * @alloc: the bytes; the replica takes over the caller's reference.
 *
 * Return: the replica with two references (handle table + caller) or an
 * ERR_PTR; on error the caller keeps its @alloc reference.
 */
struct fluxonkv_replica *fluxonkv_replica_new(const u8 *key, u32 key_len,
					      u64 put_id,
					      struct fluxonkv_alloc *alloc)
{
	struct fluxonkv_replica *r;
	u32 id;
	int ret;

	r = kzalloc(struct_size(r, key, key_len), GFP_KERNEL);
	if (!r)
		return ERR_PTR(-ENOMEM);
	kref_init(&r->ref);
	kref_get(&r->ref);
	memcpy(r->key, key, key_len);
	r->key_len = key_len;
	r->put_id = put_id;
	r->alloc = alloc;

	/*
	 * The slot is reserved (NULL) until @r is complete: walkers of the
	 * table (DUMP, debugfs, renumbering) see whole replicas only.
	 */
	ret = xa_alloc_cyclic(&fluxonkv_handles, &id, NULL, fluxonkv_slot_limit,
			      &fluxonkv_handle_next, GFP_KERNEL);
	if (ret < 0) {
		kfree(r);
		return ERR_PTR(ret);
	}
	/*
	 * The upper half makes a recycled slot a different handle, so a late
	 * DROP_REPLICA for an old replica cannot hit a new one.
	 */
	xa_lock(&fluxonkv_handles);
	r->handle = FLUXONKV_HANDLE_MAKE(id, fluxonkv_node_id, put_id);
	/* the slot is reserved: storing allocates nothing */
	ret = xa_err(__xa_store(&fluxonkv_handles, id, r, GFP_NOWAIT));
	if (ret) {
		__xa_erase(&fluxonkv_handles, id);
		xa_unlock(&fluxonkv_handles);
		kfree(r);
		return ERR_PTR(ret);
	}
	/* names the bytes' owner to the segment's victim search */
	WRITE_ONCE(alloc->owner, r->handle);
	xa_unlock(&fluxonkv_handles);
	atomic_long_inc(&fluxonkv_nr_replicas);
	return r;
}

static void fluxonkv_replica_release(struct kref *ref)
{
	struct fluxonkv_replica *r =
		container_of(ref, struct fluxonkv_replica, ref);

	WARN_ON(r->indexed);
	WRITE_ONCE(r->alloc->owner, 0);	/* holders may keep the bytes */
	fluxonkv_alloc_put(r->alloc);
	atomic_long_dec(&fluxonkv_nr_replicas);
	/* An index lookup may still be looking at it (it fails to pin it). */
	kfree_rcu(r, rcu);
}

void fluxonkv_replica_put(struct fluxonkv_replica *r)
{
	kref_put(&r->ref, fluxonkv_replica_release);
}

static void fluxonkv_unindex(struct fluxonkv_replica *r)
{
	fluxonkv_removal_begin(r->key, r->key_len);
	spin_lock(&fluxonkv_index_lock);
	if (r->indexed) {
		rhashtable_remove_fast(&fluxonkv_index, &r->node,
				       fluxonkv_index_params);
		r->indexed = false;
	}
	spin_unlock(&fluxonkv_index_lock);
	fluxonkv_removal_end(r->key, r->key_len);
}

static struct fluxonkv_replica *fluxonkv_handle_erase(u64 handle)
{
	struct fluxonkv_replica *r;
	u32 id = fluxonkv_handle_slot(handle);

	xa_lock(&fluxonkv_handles);
	r = xa_load(&fluxonkv_handles, id);
	if (r && r->handle == handle)
		__xa_erase(&fluxonkv_handles, id);
	else
		r = NULL;
	xa_unlock(&fluxonkv_handles);
	return r;
}

/**
 * fluxonkv_replica_drop() - the master gives up its reference on a replica.
 * @handle: as sent in PUT_DONE.
 *
 * Return: 0, or -ENOENT for a handle the module does not know (never issued,
 * or already dropped).
 */
int fluxonkv_replica_drop(u64 handle)
{
	struct fluxonkv_replica *r = fluxonkv_handle_erase(handle);

	if (!r)
		return -ENOENT;
	fluxonkv_unindex(r);
	fluxonkv_replica_put(r);
	return 0;
}

/* The daemon went away: its routes are gone, so are its references. */
void fluxonkv_replica_drop_all(void)
{
	struct fluxonkv_replica *r;
	unsigned long id;

	xa_for_each(&fluxonkv_handles, id, r) {
		/* Only the one who erases an entry owns its reference. */
		r = xa_erase(&fluxonkv_handles, id);
		if (!r)
			continue;
		fluxonkv_unindex(r);
		fluxonkv_replica_put(r);
		cond_resched();
	}
}

/*
 * Index @r in place of @old (the key's indexed replica, or NULL), under
 * the index lock.  A failed insert (no memory) leaves @r unindexed and
 * local misses unsure from then on: the master still routes to @r.
 */
static void fluxonkv_index_set(struct fluxonkv_replica *r,
			       struct fluxonkv_replica *old)
{
	int ret;

	lockdep_assert_held(&fluxonkv_index_lock);
	if (old) {
		/* in one step: a lookup sees the old or the new one */
		ret = rhashtable_replace_fast(&fluxonkv_index, &old->node,
					      &r->node, fluxonkv_index_params);
		if (!WARN_ON_ONCE(ret)) {
			old->indexed = false;
			r->indexed = true;
		}
		return;
	}
	ret = rhashtable_insert_fast(&fluxonkv_index, &r->node,
				     fluxonkv_index_params);
	if (ret) {
		atomic_inc(&fluxonkv_index_failures);
		pr_warn_ratelimited("index cannot take a replica (%d): local misses are asked of the master from now on\n",
				    ret);
		return;
	}
	r->indexed = true;
}

/*
 * Make @r the current replica of its key unless a newer version is already
 * there.  Called from the PUT_DONE answer handler.  A replica that was
 * dropped meanwhile (daemon disconnect) is not resurrected.
 */
void fluxonkv_replica_publish(struct fluxonkv_replica *r)
{
	struct fluxonkv_index_key k = { r->key, r->key_len };
	struct fluxonkv_replica *old;

	spin_lock(&fluxonkv_index_lock);
	/*
	 * Checked under the index lock: a concurrent drop erases the handle
	 * first and unindexes under this lock after us.
	 */
	if (xa_load(&fluxonkv_handles, fluxonkv_handle_slot(r->handle)) != r)
		goto out;
	old = rhashtable_lookup_fast(&fluxonkv_index, &k,
				     fluxonkv_index_params);
	if (!old || old->put_id <= r->put_id)
		fluxonkv_index_set(r, old);
out:
	spin_unlock(&fluxonkv_index_lock);
}

/* The master assigned @put_id: later local numbers are drawn above it. */
void fluxonkv_put_id_note(u64 put_id)
{
	s64 cur = atomic64_read(&fluxonkv_put_id_max);

	while ((u64)cur < put_id &&
	       !atomic64_try_cmpxchg(&fluxonkv_put_id_max, &cur, put_id))
		;
}

/*
 * A one-trip put's replica (FLUXONKV_CMD_PUT) takes the put_id its answer
 * assigned, just before fluxonkv_replica_publish() indexes it; until then
 * it is unnumbered (0).  Walkers of the handle table read it without a
 * lock.
 */
void fluxonkv_replica_number(struct fluxonkv_replica *r, u64 put_id)
{
	fluxonkv_put_id_note(put_id);
	WRITE_ONCE(r->put_id, put_id);
}

/**
 * fluxonkv_replica_publish_local() - index a put the module placed itself.
 * @r: a replica fresh from fluxonkv_replica_new() (FLUXONKV_REGISTER_F_LOCAL_PUTS).
 * @gen: the daemon generation the put started in.
 * @link: out: the daemon link generation it was published in, for its
 *	PUT_LOCAL note (fluxonkv_put_note()).
 *
 * The put_id is drawn here, under the index lock, so versions of a key
 * enter the index in put_id order: @r replaces whatever is there, and a
 * version evicted or persisted meanwhile is always older.  Its SSD routes
 * are the caller's to retire.
 *
 * The replaced version is dropped at once (its handle is left in
 * @r->note_dropped for the PUT_LOCAL note).
 *
 * Return: the put_id, or 0 if @r was dropped or the daemon changed
 * meanwhile (nothing indexed).
 */
u64 fluxonkv_replica_publish_local(struct fluxonkv_replica *r, u64 gen,
				   u64 *link)
{
	struct fluxonkv_index_key k = { r->key, r->key_len };
	struct fluxonkv_replica *old;
	u64 put_id = 0, superseded = 0;

	spin_lock(&fluxonkv_index_lock);
	/*
	 * As in fluxonkv_replica_publish(): a drop unindexes after us.  And
	 * still the daemon generation @gen that delegated the put: a daemon
	 * that went since may already have had its replicas dropped.  The
	 * link first, then the generation, then the flags (each read after
	 * the one before): a detach clears the flags, then moves the link
	 * and the generation (fluxonkv_daemon_detach()), so @gen unchanged
	 * with local puts still on means no detach came since the put began
	 * -- not even one whose bump the put's own look at @gen saw (the
	 * flags are off then), and @link is that daemon's.
	 */
	*link = fluxonkv_daemon_link_generation();
	smp_rmb();
	if (xa_load(&fluxonkv_handles, fluxonkv_handle_slot(r->handle)) != r ||
	    fluxonkv_daemon_generation() != gen)
		goto out;
	smp_rmb();	/* the generation before the flags (see above) */
	if (!fluxonkv_daemon_local_puts())
		goto out;
	put_id = atomic64_inc_return(&fluxonkv_put_id_max);
	/* before the index shows @r: lookups read it after finding it */
	WRITE_ONCE(r->put_id, put_id);
	old = rhashtable_lookup_fast(&fluxonkv_index, &k,
				     fluxonkv_index_params);
	fluxonkv_index_set(r, old);
	if (old && !old->indexed)
		superseded = old->handle;
out:
	spin_unlock(&fluxonkv_index_lock);
	/*
	 * The version @r replaced goes now, not when the master's
	 * DROP_REPLICA for it comes (that one then finds nothing): a key
	 * overwritten faster than the master reads its notes would fill the
	 * segment with old versions, and the master would evict live values
	 * for the room they hold.
	 */
	if (superseded && !fluxonkv_replica_drop(superseded)) {
		fluxonkv_stat_inc(replica_drops);	/* an overwrite's drop */
		r->note_dropped = superseded;	/* the note says so */
	}
	return put_id;
}

/* A delete of @put_id completed: no get may return that version or older. */
void fluxonkv_index_forget(const u8 *key, u32 key_len, u64 put_id)
{
	struct fluxonkv_index_key k = { key, key_len };
	struct fluxonkv_replica *cur;

	fluxonkv_removal_begin(key, key_len);
	spin_lock(&fluxonkv_index_lock);
	cur = rhashtable_lookup_fast(&fluxonkv_index, &k,
				     fluxonkv_index_params);
	if (cur && cur->put_id <= put_id) {
		rhashtable_remove_fast(&fluxonkv_index, &cur->node,
				       fluxonkv_index_params);
		cur->indexed = false;
	}
	spin_unlock(&fluxonkv_index_lock);
	fluxonkv_removal_end(key, key_len);
}

/* A hit: the clean drops' CLOCK passes @r over once (written only if clear). */
static inline void fluxonkv_replica_touch(struct fluxonkv_replica *r)
{
	if (!READ_ONCE(r->accessed))
		WRITE_ONCE(r->accessed, true);
}

/* The indexed replica of @key with a reference, or NULL: RCU only. */
static struct fluxonkv_replica *fluxonkv_index_get(const u8 *key, u32 key_len)
{
	struct fluxonkv_index_key k = { key, key_len };
	struct fluxonkv_replica *cur;

	rcu_read_lock();
	cur = rhashtable_lookup(&fluxonkv_index, &k, fluxonkv_index_params);
	/*
	 * One being freed fails to pin and counts as not found; so does a
	 * kept one not adopted yet (its version may be stale), and any once
	 * the master's lease ran out (the master may have replaced it).
	 */
	if (cur && (READ_ONCE(cur->adopting) || !fluxonkv_lease_holds() ||
		    !kref_get_unless_zero(&cur->ref)))
		cur = NULL;
	rcu_read_unlock();
	return cur;
}

/**
 * fluxonkv_index_lookup() - the local fast path of get.
 * @key: key bytes.
 * @key_len: key length.
 * @put_id: out: version found.
 * @handle: out: its handle (for ACCESS notes).
 *
 * No lock: an RCU lookup, then a reference on the replica if it is still
 * alive (one being freed fails kref_get_unless_zero() and counts as not
 * found), whose alloc it then pins.  A lookup racing a change sees the
 * version before or after it, never neither: a newer version replaces
 * the older in one step.
 *
 * Return: the current replica's bytes with a new reference, or NULL.
 */
struct fluxonkv_alloc *fluxonkv_index_lookup(const u8 *key, u32 key_len,
					     u64 *put_id, u64 *handle)
{
	struct fluxonkv_replica *cur = fluxonkv_index_get(key, key_len);
	struct fluxonkv_alloc *a;

	if (!cur)
		return NULL;
	/* Our reference keeps the replica, and the replica its alloc. */
	a = cur->alloc;
	fluxonkv_alloc_get(a);
	fluxonkv_replica_touch(cur);
	*put_id = cur->put_id;
	*handle = cur->handle;
	fluxonkv_replica_put(cur);
	return a;
}

/* The index holds a version of @key newer than @put_id.  Any context. */
bool fluxonkv_index_newer(const u8 *key, u32 key_len, u64 put_id)
{
	struct fluxonkv_index_key k = { key, key_len };
	struct fluxonkv_replica *cur;
	bool newer;

	rcu_read_lock();
	cur = rhashtable_lookup(&fluxonkv_index, &k, fluxonkv_index_params);
	/* freed by RCU: readable here without a reference */
	newer = cur && READ_ONCE(cur->put_id) > put_id;
	rcu_read_unlock();
	return newer;
}

/**
 * fluxonkv_index_peek() - the current replica's version and length.
 * @key: key bytes.
 * @key_len: key length.
 * @put_id: out: version found.
 * @len: out: its length.
 *
 * Like fluxonkv_index_lookup() but pins no bytes: the replica is referenced
 * only while its fields are read.
 *
 * Return: true if the index has a replica of @key.
 */
bool fluxonkv_index_peek(const u8 *key, u32 key_len, u64 *put_id, u64 *len)
{
	struct fluxonkv_replica *cur = fluxonkv_index_get(key, key_len);

	if (!cur)
		return false;
	/* Our reference keeps the replica, and the replica its alloc. */
	*put_id = cur->put_id;
	*len = cur->alloc->len;
	fluxonkv_replica_put(cur);
	return true;
}

/*
 * The master routed a get to a replica by handle: pin its bytes if the
 * handle is live and really is that key and version.
 */
struct fluxonkv_alloc *fluxonkv_handle_lookup(u64 handle, const u8 *key,
					      u32 key_len, u64 put_id)
{
	struct fluxonkv_alloc *a = NULL;
	struct fluxonkv_replica *r;

	u64 id;

	xa_lock(&fluxonkv_handles);
	r = xa_load(&fluxonkv_handles, fluxonkv_handle_slot(handle));
	/*
	 * put_id 0: a one-trip put's replica the master published but whose
	 * answer has not numbered it yet; the handle alone names it then.
	 */
	id = r ? READ_ONCE(r->put_id) : 0;
	if (r && r->handle == handle && (id == put_id || !id) &&
	    fluxonkv_key_eq(r, key, key_len)) {
		a = r->alloc;
		fluxonkv_alloc_get(a);
		fluxonkv_replica_touch(r);
	}
	xa_unlock(&fluxonkv_handles);
	return a;
}

/* The replica @handle of version @put_id with a reference, or NULL. */
struct fluxonkv_replica *fluxonkv_handle_replica(u64 handle, u64 put_id)
{
	struct fluxonkv_replica *r;

	xa_lock(&fluxonkv_handles);
	r = xa_load(&fluxonkv_handles, fluxonkv_handle_slot(handle));
	if (r && (r->handle != handle || r->put_id != put_id))
		r = NULL;
	if (r)
		kref_get(&r->ref);
	xa_unlock(&fluxonkv_handles);
	return r;
}

/*
 * Before a new daemon adopts what the previous one kept: only replicas the
 * master had published as their key's current copy (indexed) are worth
 * adopting; the rest (puts whose PUT_DONE was never answered, refills
 * never promoted, targets never published, versions being replaced) go.
 * Returns how many went.
 */
unsigned long fluxonkv_replica_drop_unindexed(void)
{
	struct fluxonkv_replica *r;
	unsigned long slot, n = 0;
	u64 handle;

	for (slot = 0;; slot++) {
		xa_lock(&fluxonkv_handles);
		r = xa_find(&fluxonkv_handles, &slot, ULONG_MAX, XA_PRESENT);
		handle = r && !READ_ONCE(r->indexed) ? r->handle : 0;
		xa_unlock(&fluxonkv_handles);
		if (!r)
			break;
		if (handle && !fluxonkv_replica_drop(handle))
			n++;
	}
	return n;
}

/*
 * DUMP, the handle table from slot *@cursor on: one message per replica.
 * Return: 1 when every replica is in, 0 when @skb is full (*@cursor is
 * where to go on), or -errno.
 */
int fluxonkv_replica_dump(struct sk_buff *skb, struct netlink_callback *cb,
			  long *cursor)
{
	struct fluxonkv_replica *r;
	unsigned long slot;
	int ret = 1;

	/* Held while reading: no replica leaves the table under us. */
	xa_lock(&fluxonkv_handles);
	xa_for_each_start(&fluxonkv_handles, slot, r, (unsigned long)*cursor) {
		struct fluxonkv_dump_rec rec;

		/* a one-trip put not answered yet: not a version to adopt */
		if (!READ_ONCE(r->put_id))
			continue;
		rec = (struct fluxonkv_dump_rec){
			.key = r->key, .key_len = r->key_len,
			.put_id = r->put_id, .len = r->alloc->len,
			.handle = r->handle, .source = FLUXONKV_SOURCE_MEMORY,
			.flags = READ_ONCE(r->indexed) ?
				 FLUXONKV_DUMP_F_INDEXED : 0,
			.has_flags = true,
		};

		if (fluxonkv_dump_record(skb, cb, &rec)) {
			*cursor = slot;
			ret = 0;
			break;
		}
	}
	xa_unlock(&fluxonkv_handles);
	return ret;
}

unsigned long fluxonkv_replica_count(void)
{
	return atomic_long_read(&fluxonkv_nr_replicas);
}

/*
 * debugfs `replicas`: a seq_file walking the handle table by slot under
 * RCU alone -- the cursor (*pos) is the next slot, so a big table never
 * holds the table's lock or a data-path lock while it is printed, and a
 * buffer refill resumes where it stopped instead of starting over.
 */
static void *fluxonkv_replicas_find(loff_t *pos)
{
	unsigned long slot = *pos;
	void *r = xa_find(&fluxonkv_handles, &slot, ULONG_MAX, XA_PRESENT);

	if (r)
		*pos = slot;
	return r;
}

static void *fluxonkv_replicas_start(struct seq_file *m, loff_t *pos)
	__acquires(RCU)
{
	rcu_read_lock();
	return *pos ? fluxonkv_replicas_find(pos) : SEQ_START_TOKEN;
}

static void *fluxonkv_replicas_next(struct seq_file *m, void *v, loff_t *pos)
{
	void *r;

	++*pos;
	r = fluxonkv_replicas_find(pos);
	return r;
}

static void fluxonkv_replicas_stop(struct seq_file *m, void *v)
	__releases(RCU)
{
	rcu_read_unlock();
}

static int fluxonkv_replicas_show_one(struct seq_file *m, void *v)
{
	struct fluxonkv_replica *r = v;

	if (v == SEQ_START_TOKEN) {
		seq_puts(m, "handle\tput_id\toffset\tlen\trefs\tindexed\tkey\n");
		return 0;
	}
	/* alive (its alloc with it) while we hold it */
	if (!kref_get_unless_zero(&r->ref))
		return 0;
	seq_printf(m, "%#llx\t%llu\t%llu\t%llu\t%u\t%d\t",
		   r->handle, r->put_id, r->alloc->offset, r->alloc->len,
		   kref_read(&r->alloc->ref), READ_ONCE(r->indexed));
	seq_escape_mem(m, r->key, min_t(u32, r->key_len, 64),
		       ESCAPE_HEX | ESCAPE_NP | ESCAPE_APPEND, "\\\t\n ");
	seq_putc(m, '\n');
	fluxonkv_replica_put(r);
	return 0;
}

const struct seq_operations fluxonkv_replicas_seq_ops = {
	.start = fluxonkv_replicas_start,
	.next = fluxonkv_replicas_next,
	.stop = fluxonkv_replicas_stop,
	.show = fluxonkv_replicas_show_one,
};

/*
 * Clean drops (FLUXONKV_REGISTER_F_CLEAN_DROPS, design.md "Clean drops").
 *
 * A clean replica is one whose loss loses nothing: its key's current
 * (indexed) version, adopted, with no reference on its bytes but its own
 * (no holder, no slide, no transfer), and a committed SSD copy of the
 * same put_id that the master routes to.  The module drops such replicas
 * itself when an allocation finds no room, and in the background to keep
 * a free reserve, without a round trip to the daemon; the master hears of
 * them in DROPPED notes (notes.c) and keeps routing to the SSD copy.
 *
 * Victims are chosen by CLOCK over the handle table: slots are allocated
 * cyclically, so their order is the order replicas were made; the hand
 * goes round it, and a replica hit since the hand last passed (->accessed,
 * set by every lookup that pins its bytes) gets a second chance instead.
 * The look is lockless (RCU; replicas are freed after a grace period) and
 * only a hint: the drop itself is the handle table's erase, which exactly
 * one of a clean drop, the master's DROP_REPLICA and a teardown wins, and
 * the SSD copy is looked at again just before it.  A copy that leaves the
 * ring after that look leaves the key with no copy -- a miss, as when the
 * master evicts the DRAM replica and the ring then overwrites the copy.
 * A replica whose SSD copy left the ring (or was never routed) is dirty
 * and stays for the master's eviction.
 */

/* The hand: the next slot the CLOCK looks at (clean_lock). */
static unsigned long fluxonkv_clean_hand;
/* Protects fluxonkv_clean_hand only; never held across a drop. */
static DEFINE_SPINLOCK(fluxonkv_clean_lock);

/* Replicas one call of fluxonkv_clean_drop() looks at, at most. */
#define FLUXONKV_CLEAN_SCAN	1024
/* Victims taken per look (each dropped outside RCU). */
#define FLUXONKV_CLEAN_BATCH	16

/* Called with a reference on @r (which keeps its alloc). */
static bool fluxonkv_replica_clean(const struct fluxonkv_replica *r)
{
	u64 put_id, len;

	/*
	 * Not while kept replicas wait for their adoption: a registration
	 * publishes its flags before it marks them ->adopting.
	 */
	return READ_ONCE(r->indexed) && !READ_ONCE(r->adopting) &&
	       !READ_ONCE(fluxonkv_adopting) && READ_ONCE(r->put_id) &&
	       kref_read(&r->alloc->ref) == 1 &&
	       fluxonkv_ssd_lookup_routed(r->key, r->key_len, &put_id, &len) &&
	       put_id == READ_ONCE(r->put_id);
}

/* Drop @r (the caller holds a reference) if it is clean; its span, or 0. */
static u64 fluxonkv_clean_drop_one(struct fluxonkv_replica *r)
{
	u64 span = r->alloc->span, gen;

	if (!fluxonkv_replica_clean(r))
		return 0;
	/*
	 * Room for its note first: the master must hear of every drop.  The
	 * note is for the daemon connected now (a detach in between makes
	 * it one the sender leaves out, as the drop's look at the flag says).
	 */
	gen = fluxonkv_daemon_link_generation();
	if (!fluxonkv_daemon_clean_drops() || !fluxonkv_drop_note_reserve())
		return 0;
	if (fluxonkv_handle_erase(r->handle) != r) {
		fluxonkv_drop_note_cancel();	/* dropped by someone else */
		return 0;
	}
	fluxonkv_drop_note_commit(r->handle, gen);
	fluxonkv_unindex(r);
	fluxonkv_replica_put(r);	/* the handle table's reference */
	fluxonkv_stat_inc(clean_drops);
	fluxonkv_stat_add(clean_drop_bytes, span);
	return span;
}

/**
 * fluxonkv_clean_drop() - drop clean replicas for @want bytes.
 * @want: bytes of segment to give back (spans).
 *
 * Process context; takes only spinlocks and sleeps nowhere, so io_uring's
 * inline issue may call it.  Looks at FLUXONKV_CLEAN_SCAN replicas at
 * most.  The bytes are free when this returns (a victim had no other
 * reference when it was looked at; one that a get pinned just before its
 * erase frees them when that holder goes).
 *
 * Return: bytes dropped (0: nothing clean found).
 */
u64 fluxonkv_clean_drop(u64 want)
{
	struct fluxonkv_replica *batch[FLUXONKV_CLEAN_BATCH], *r;
	unsigned long start, slot, looked = 0, last;
	bool second = false, end;
	u64 dropped = 0, taking;
	unsigned int n, i;

	if (!want || !fluxonkv_daemon_clean_drops())
		return 0;
	spin_lock(&fluxonkv_clean_lock);
	start = fluxonkv_clean_hand;
	spin_unlock(&fluxonkv_clean_lock);
	slot = start;

	/*
	 * From the hand to the table's end, then from its start to the hand;
	 * not past a detach (the flag is looked at again each batch).
	 */
	while (dropped < want && looked < FLUXONKV_CLEAN_SCAN &&
	       fluxonkv_daemon_clean_drops()) {
		XA_STATE(xas, &fluxonkv_handles, slot);

		last = second ? start - 1 : ULONG_MAX;
		n = 0;
		taking = 0;
		end = true;
		rcu_read_lock();
		xas_for_each(&xas, r, last) {
			if (xas_retry(&xas, r))
				continue;
			slot = xas.xa_index + 1;
			if (READ_ONCE(r->accessed)) {
				WRITE_ONCE(r->accessed, false);	/* second chance */
			} else if (READ_ONCE(r->indexed) &&
				   kref_get_unless_zero(&r->ref)) {
				/*
				 * Referenced: its alloc is ours to look at
				 * now; let go (maybe the last reference) only
				 * outside RCU, below.
				 */
				batch[n++] = r;
				if (fluxonkv_replica_clean(r))
					taking += r->alloc->span;
			}
			if (++looked >= FLUXONKV_CLEAN_SCAN ||
			    n == FLUXONKV_CLEAN_BATCH ||
			    dropped + taking >= want) {
				end = false;
				break;
			}
		}
		rcu_read_unlock();

		for (i = 0; i < n; i++) {
			dropped += fluxonkv_clean_drop_one(batch[i]);
			fluxonkv_replica_put(batch[i]);
		}
		if (end) {
			if (second || !start)
				break;		/* all the way round */
			second = true;
			slot = 0;
		}
	}

	spin_lock(&fluxonkv_clean_lock);
	fluxonkv_clean_hand = slot;
	spin_unlock(&fluxonkv_clean_lock);
	return dropped;
}
