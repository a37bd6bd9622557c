/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fluxonkv internal interfaces shared between the module's files.
 *
 * Object model (see Documentation/fluxonkv/design.md):
 *
 *   segment  - the DRAM bytes, order-0 pages from high-order chunks, vmapped
 *              for the kernel and mapped read-only into clients.
 *   alloc    - a refcounted range of the segment.  References: the replica
 *              that owns it (the master's route reference, by handle), every
 *              holder pinning it, and in-flight operations.  The range goes
 *              back to the allocator when the last reference drops.
 *   replica  - a published (or being published) value: key, put_id, alloc,
 *              named to the daemon by an opaque u64 handle.  The "current"
 *              replica of a key is in the local index, which serves gets
 *              without an upcall.
 *   session  - one open file description: its holders.
 *
 * Lock order (outer first; a lock is only ever taken with the ones above
 * it on its line held, never the other way round).  Each lock's purpose is
 * written beside it.
 *
 *   Sleeping locks:
 *     fluxonkv_daemon.lock (genl.c: registration, detach, teardown)
 *       -> fluxonkv_put_notes.send_lock (notes.c) -> fluxonkv_put_notes.lock
 *       -> fluxonkv_daemon.sk_lock
 *       -> fluxonkv_index_lock, fluxonkv_ssd.index_lock (the teardown's
 *          drop-all and unroute-all)
 *       -> fluxonkv_sessions_lock (the teardown's failed FETCHes release
 *          their getters' users)
 *     fluxonkv_ssd.attach_lock (ssd.h) -> shard->lock (a mutex)
 *       -> fluxonkv_ssd.index_lock, fluxonkv_ssd.notice_lock
 *     fluxonkv_compact_mutex (segment.c) -> fluxonkv_seg.lock
 *     fluxonkv_sessions_lock (holder.c) -> a session's holders (xa lock)
 *   Spinlocks: fluxonkv_ssd.index_lock -> a device's dev->lock (the kick
 *     of an entry that stops being busy, fluxonkv_shard_kick(), which
 *     also queues works).  Innermost: fluxonkv_seg.lock,
 *     fluxonkv_index_lock, notice_lock, a device's dev->lock, the
 *     pending-upcall and handle-table xa locks, the per-CPU access-note
 *     locks and the workers' list locks take no other lock, nor do
 *     the clean drops' hand lock and drop-note lock (replica.c,
 *     notes.c).  A device's dev->lock is taken from the device's
 *     completions (interrupt context): always with interrupts off.
 *     fluxonkv_seg.room_wq's lock: taken after the segment lock is let go;
 *     a refill's async room wait's wake function, run under it, only
 *     queues a work (workqueue internals).
 *
 *   Never held while sleeping or waiting: any spinlock; and no lock at all
 *   across an upcall (fluxonkv_upcall*() waits for the daemon, whose
 *   answers take fluxonkv_index_lock and the SSD index lock), nor across
 *   a room wait.  fluxonkv_put_notes.send_lock is never held while taking
 *   fluxonkv_daemon.lock.  A function that requires a lock says so with
 *   lockdep_assert_held().
 */
#ifndef _FLUXONKV_H
#define _FLUXONKV_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rbtree.h>
#include <linux/rhashtable-types.h>
#include <linux/sched/clock.h>
#include <linux/spinlock.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <net/netlink.h>
#include <linux/fluxonkv.h>

#define FLUXONKV_VERSION	"0.1.0"

/*
 * Reference design §4.1: retry (here: whenever a range is freed, rather
 * than every 2 ms) for at most 5 s, then -ENOSPC.
 */
#define FLUXONKV_ROOM_WAIT_MS		5000
/* While waiting for room, ask the master again this often. */
#define FLUXONKV_ROOM_ASK_MS		100
/* Reference §7.2: a stale SSD route is re-selected at most 3 times. */
#define FLUXONKV_GET_RETRIES		3
/*
 * PUT_LOCAL batches: at most FLUXONKV_PUT_NOTE_BATCH puts per message, sent
 * FLUXONKV_PUT_NOTE_DELAY_MS after the first one (or before any other
 * message to the daemon, whichever comes first).
 */
#define FLUXONKV_PUT_NOTE_DELAY_MS	2
#define FLUXONKV_PUT_NOTE_BATCH		64
/* Who numbers puts: fixed for as long as a daemon stays registered. */
#define FLUXONKV_REGISTER_F_PUTS	(FLUXONKV_REGISTER_F_LOCAL_PUTS | \
					 FLUXONKV_REGISTER_F_ONE_TRIP)

/* ACCESS batches: at most FLUXONKV_ACCESS_BATCH handles or 10 ms. */
#define FLUXONKV_ACCESS_DELAY_MS	10

/* ---- segment.c: the DRAM segment and its range allocator ---- */

struct fluxonkv_segment {
	size_t size;			/* bytes, multiple of PAGE_SIZE */
	unsigned long npages;
	struct page **pages;		/* order-0 pages (split chunks) */
	void *vaddr;			/* kernel mapping of all pages */
	unsigned int chunks;		/* high-order chunks it was built from */

	spinlock_t lock;		/* protects free, nfree, used, allocs, moving */
	struct rb_root free;		/* free extents, by offset (segment.c) */
	unsigned long nfree;		/* how many */
	u64 used;			/* bytes allocated */
	struct rb_root allocs;		/* every live alloc, by offset */
	unsigned int moving;		/* allocs a slide is moving (0 or 1) */
	/* Room waiters sleep here until an alloc is freed (@frees moves). */
	wait_queue_head_t room_wq;
	atomic_t frees;
};

/**
 * struct fluxonkv_alloc - a refcounted range of the segment.
 * @ref: route/holder/in-flight references; the range is freed at zero.
 * @offset: byte offset in the segment (FLUXONKV_SEGMENT_ALIGN aligned).
 * @span: bytes reserved (len rounded up).
 * @len: value bytes.
 * @node: in the segment's address-ordered tree (segment lock).
 * @owner: the handle of the replica whose bytes these are, 0 while none
 *	(a put copying in, a refill, staging); read under the segment lock
 *	to pick eviction victims by address.
 * @spare: the free extent its range becomes if it merges with neither
 *	neighbour when freed: allocated with the range, so freeing never
 *	allocates.
 * @moving: compaction is sliding the bytes to a lower @offset (segment.c);
 *	set only while the owner's is the one reference; whoever pins the
 *	range then reads @offset or the bytes only after
 *	fluxonkv_alloc_settle().  Written under the segment lock.
 * @tenant: whose description may map these pages while the segment is
 *	isolated (tenant.c): FLUXONKV_TENANT_NONE until the first
 *	unprivileged holder sets its session's tenant (cmpxchg); read by
 *	the fault handler under the segment lock.
 */
struct fluxonkv_alloc {
	struct kref ref;
	u64 offset;
	u64 span;
	u64 len;
	struct rb_node node;
	u64 owner;
	struct fluxonkv_extent *spare;
	bool moving;
	u32 tenant;
};

#define FLUXONKV_TENANT_NONE	U32_MAX

int fluxonkv_segment_init(size_t size);
void fluxonkv_segment_free_stats(unsigned long *extents, u64 *largest);
void fluxonkv_segment_exit(void);
struct fluxonkv_alloc *fluxonkv_alloc_new(u64 len);
/*
 * Pin @a (any context).  The barrier orders the new reference before any
 * look at @moving: compaction sets @moving, then checks that no pin
 * exists (fluxonkv_compact_freeze()), so either it sees this reference
 * and leaves the range alone, or this pinner sees @moving and settles.
 */
static inline void fluxonkv_alloc_get(struct fluxonkv_alloc *a)
{
	kref_get(&a->ref);
	/* the pin before any look at @moving (see above) */
	smp_mb__after_atomic();
}
void fluxonkv_alloc_settle(struct fluxonkv_alloc *a);
void fluxonkv_alloc_put(struct fluxonkv_alloc *a);
int fluxonkv_segment_compact(u64 len);
/* debugfs compact_stall_ms: a slide holds each moved value this long. */
extern u32 fluxonkv_compact_stall_ms;
/*
 * debugfs compact_freeze_delay_ms: a slide spins this long (segment lock
 * held) between its look at a value's references and its own reference;
 * compact_freeze_delays counts the spins.  debugfs fail_alloc: N > 0 makes
 * the Nth fluxonkv_alloc_new() from now fail as a slab failure would.
 */
extern u32 fluxonkv_compact_freeze_delay_ms;
extern u32 fluxonkv_compact_freeze_delays;
/* Values a slide found with their last reference gone (debugfs). */
extern u32 fluxonkv_compact_freeze_lost;
extern u32 fluxonkv_fail_alloc;
/* debugfs walk_delay_ms: each step of a walk over all replicas (replica.c). */
extern u32 fluxonkv_walk_delay_ms;
/* debugfs put_local_delay_ms / put_local_delays (kv_put.c). */
extern u32 fluxonkv_put_local_delay_ms;
extern u32 fluxonkv_put_local_delays;
u64 fluxonkv_segment_used(void);
/* Handles a fragmented segment should give up for @len bytes (segment.c). */
#define FLUXONKV_VICTIMS_MAX	64
int fluxonkv_segment_victims(u64 len, u64 *handles, bool *pinned);
unsigned int fluxonkv_segment_frees(void);
long fluxonkv_segment_wait_free(unsigned int frees, unsigned long timeout);
int fluxonkv_segment_mmap(struct file *file, struct vm_area_struct *vma);
/* Outstanding FETCHes (targets the daemon may be writing), at most: */
#define FLUXONKV_FETCH_MAX	1024
/*
 * An abandoned FETCH target is freed (and the daemon's late answer
 * refused, -ENOENT) this many request timeouts after the FETCH was sent,
 * plus FLUXONKV_FETCH_EXPIRE_MS_PER_MIB per MiB of the value; the FETCH's
 * DEADLINE says when, and the daemon writes the target no later.
 */
#define FLUXONKV_FETCH_EXPIRE_TIMEOUTS	4
#define FLUXONKV_FETCH_EXPIRE_MS_PER_MIB	1000

/* ---- replica.c: replicas, handles and the local index ---- */

/**
 * struct fluxonkv_replica - a value version the master may route to.
 * @ref: the handle table's reference plus temporary users.
 * @node: in the local index while @indexed (changed under the index lock,
 *	looked up under RCU).
 * @rcu: freed after a grace period (index lookups run under RCU).
 * @handle: names it to the daemon.
 * @put_id: version.
 * @alloc: the bytes (one reference, dropped when the replica is freed).
 * @indexed: current replica of its key (protected by the index lock).
 * @key_len: bytes of @key.
 * @key: the key.
 */
struct fluxonkv_replica {
	struct kref ref;
	struct rhash_head node;
	struct rcu_head rcu;
	u64 handle;
	u64 put_id;
	struct fluxonkv_alloc *alloc;
	bool indexed;
	/*
	 * Kept from a previous daemon and not adopted yet (the new one's
	 * master may refuse it: a newer version came while it was away).
	 * Set when the kept replicas are renumbered for the new daemon,
	 * cleared by its ADOPT_DONE; written under the handle table's lock,
	 * read locklessly: an adopting replica is no local hit (the index
	 * lookup skips it, the get asks the master, which routes to it by
	 * handle once it has adopted it).
	 */
	bool adopting;
	/*
	 * Hit since the clean drops' CLOCK hand last passed (replica.c):
	 * set locklessly by lookups that pin the bytes, cleared by the hand.
	 */
	bool accessed;
	/*
	 * A local put's PUT_LOCAL note (notes.c): on the note queue, under
	 * its lock, with a reference; the daemon link generation it was
	 * taken in (fluxonkv_daemon_link_generation()) and its
	 * FLUXONKV_PUT_F_* flags.
	 */
	struct list_head note;
	u64 note_gen;
	u64 note_dropped;	/* the version it replaced, dropped (or 0) */
	u32 note_flags;
	u32 key_len;
	u8 key[];
};

void fluxonkv_removal_begin(const u8 *key, u32 key_len);
void fluxonkv_removal_end(const u8 *key, u32 key_len);
void fluxonkv_removal_all_begin(void);
void fluxonkv_removal_all_end(void);
void fluxonkv_put_inflight_add(const u8 *key, u32 key_len, int delta);
unsigned int fluxonkv_look_begin(const u8 *key, u32 key_len, bool *unsure);
bool fluxonkv_look_stable(const u8 *key, u32 key_len, unsigned int seq);
int fluxonkv_replica_init(void);
void fluxonkv_replica_set_node(u32 node_id, bool renumber);
unsigned long fluxonkv_replica_adopt_done(void);
bool fluxonkv_adoption_pending(void);
void fluxonkv_lease_set(u64 until_ns);
void fluxonkv_lease_set_alone(bool alone);
bool fluxonkv_lease_serves_alone(void);
u32 fluxonkv_replica_node(void);
void fluxonkv_replica_exit(void);
struct fluxonkv_replica *fluxonkv_replica_new(const u8 *key, u32 key_len,
					      u64 put_id,
					      struct fluxonkv_alloc *alloc);
void fluxonkv_replica_put(struct fluxonkv_replica *r);
int fluxonkv_replica_drop(u64 handle);
void fluxonkv_replica_drop_all(void);
void fluxonkv_replica_publish(struct fluxonkv_replica *r);
void fluxonkv_put_id_note(u64 put_id);
void fluxonkv_replica_number(struct fluxonkv_replica *r, u64 put_id);
u64 fluxonkv_replica_publish_local(struct fluxonkv_replica *r, u64 gen,
				   u64 *link);
void fluxonkv_index_forget(const u8 *key, u32 key_len, u64 put_id);
struct fluxonkv_alloc *fluxonkv_index_lookup(const u8 *key, u32 key_len,
					     u64 *put_id, u64 *handle);
bool fluxonkv_index_peek(const u8 *key, u32 key_len, u64 *put_id, u64 *len);
bool fluxonkv_index_newer(const u8 *key, u32 key_len, u64 put_id);
struct fluxonkv_alloc *fluxonkv_handle_lookup(u64 handle, const u8 *key,
					      u32 key_len, u64 put_id);
struct fluxonkv_replica *fluxonkv_handle_replica(u64 handle, u64 put_id);
unsigned long fluxonkv_replica_count(void);
unsigned long fluxonkv_replica_drop_unindexed(void);
u64 fluxonkv_clean_drop(u64 want);
/* kv_room.c: the free reserve clean drops keep (module parameter) */
extern unsigned int fluxonkv_clean_reserve_pct;
void fluxonkv_clean_reserve_check(void);
void fluxonkv_clean_reserve_stop(void);
struct sk_buff;
struct netlink_callback;
struct genl_family;
int fluxonkv_replica_dump(struct sk_buff *skb, struct netlink_callback *cb,
			  long *cursor);

/* One record of FLUXONKV_CMD_DUMP (genl.c builds it). */
struct fluxonkv_dump_rec {
	const u8 *key;
	u32 key_len;
	u64 put_id;
	u64 len;
	u64 handle;	/* 0: left out */
	u32 source;
	u32 flags;
	bool has_flags;	/* send FLAGS (even 0) */
};

int fluxonkv_dump_record(struct sk_buff *skb, struct netlink_callback *cb,
			 const struct fluxonkv_dump_rec *rec);
struct seq_file;
extern const struct seq_operations fluxonkv_replicas_seq_ops;

/* ---- holder.c: per file description holders ---- */

/* Holders one file description may have at once (-EMFILE beyond). */
#define FLUXONKV_HOLDERS_MAX	65536

/*
 * Bytes one user's client sessions pin: their holders and their puts in
 * flight, at most pin_max_pct of the segment (holder.c).
 */
struct fluxonkv_user;

/*
 * A holder: slot @id & FLUXONKV_HOLDER_SLOT_MASK of its session's xarray.
 * Slots are reused (the lowest free one), so the xarray keeps its nodes;
 * the id's upper bits are a per-session sequence number, so a released
 * id, or another session's, names no holder here.
 */
#define FLUXONKV_HOLDER_SLOT_BITS	17
#define FLUXONKV_HOLDER_SLOT_MASK	((1ULL << FLUXONKV_HOLDER_SLOT_BITS) - 1)
/* Ids stay below 2^53, exact in JSON tools that read numbers as doubles. */
#define FLUXONKV_HOLDER_SEQ_MASK	((1ULL << (53 - FLUXONKV_HOLDER_SLOT_BITS)) - 1)
static_assert(FLUXONKV_HOLDERS_MAX + 1 < FLUXONKV_HOLDER_SLOT_MASK);

struct fluxonkv_holder {
	struct fluxonkv_alloc *a;	/* the pinned range (one reference) */
	u64 id;
	struct fluxonkv_holder *next_spare;	/* on @spare (xarray lock) */
};

/* Never a holder: a reserved entry that keeps the first xarray node. */
#define FLUXONKV_HOLDER_KEEP_SLOT	(XA_CHUNK_SIZE - 1)

/* Released holders a session keeps for its next gets. */
#define FLUXONKV_HOLDER_SPARES	64

struct fluxonkv_session {
	/*
	 * Slot -> struct fluxonkv_holder.  Its lock also protects @spare,
	 * @nspare and @id_seq.
	 */
	struct xarray holders;
	struct fluxonkv_holder *spare;	/* recycled holders, no allocation */
	unsigned int nspare;
	u64 id_seq;			/* next id's upper bits (random start) */
	/* Whose budget its pins count in; NULL for a privileged session. */
	struct fluxonkv_user *user;
	atomic_t nholders;		/* entries in @holders */
	struct list_head node;		/* on the session list (debugfs) */
	u64 serial;			/* its place in that list */
	pid_t pid;			/* opener, for debugfs */
	/* Opened for writing: may put and delete (read-only: get only). */
	bool writable;
	/*
	 * Opened O_RDWR with CAP_SYS_ADMIN: may map the segment writable
	 * and pin replicas by handle (the node daemon's data plane).
	 */
	bool privileged;
	/*
	 * 0, or the tenant FLUXONKV_IOC_TENANT bound it to (once, cmpxchg):
	 * its keys get that tenant's prefix, its faults map that tenant's
	 * values only (tenant.c).
	 */
	u32 tenant;
};

struct fluxonkv_session *fluxonkv_session_new(bool writable, bool privileged);
int fluxonkv_user_charge(struct fluxonkv_user *u, u64 bytes);
void fluxonkv_user_uncharge(struct fluxonkv_user *u, u64 bytes);
struct fluxonkv_user *fluxonkv_user_hold(struct fluxonkv_user *u);
void fluxonkv_user_release(struct fluxonkv_user *u);
int fluxonkv_users_show(struct seq_file *m, void *unused);
extern unsigned int fluxonkv_pin_max_pct;
void fluxonkv_session_free(struct fluxonkv_session *s);
int fluxonkv_holder_add(struct fluxonkv_session *s, struct fluxonkv_alloc *a,
			u32 tenant, u64 *id);
int fluxonkv_holder_release(struct fluxonkv_session *s, u64 id);
int fluxonkv_holders_open(struct inode *inode, struct file *file);

/* ---- kv*.c: put / get / delete flows (kv.c says which file) ---- */

/*
 * fluxonkv_get_result.flags (in).  NOWAIT: -EAGAIN rather than wait on the
 * daemon, the SSD or a peer.  ALLOC: hand back @alloc, no holder.
 */
#define FLUXONKV_GR_NOWAIT	(1U << 0)
#define FLUXONKV_GR_ALLOC	(1U << 1)

struct fluxonkv_get_result {
	u32 flags;			/* in: FLUXONKV_GR_* */
	u64 holder_id;
	u64 offset;
	u64 len;
	u64 put_id;
	u32 source;
	/* out with FLUXONKV_GR_ALLOC: a reference the caller puts */
	struct fluxonkv_alloc *alloc;
	/*
	 * in, with FLUXONKV_GR_NOWAIT: a local SSD refill may run
	 * asynchronously (-EIOCBQUEUED) in this context
	 */
	struct fluxonkv_refill *refill;
	/* in: the tenant of the key asked for (its prefix), for holders */
	u32 tenant;
};

/* What one room wait has asked for so far (fluxonkv_ask_room()). */
struct fluxonkv_room_wait {
	bool by_policy;		/* a NEED_ROOM the master's policy answered */
	bool pinned_window;	/* a window with pinned values was named */
	u64 victims[FLUXONKV_VICTIMS_MAX];
};

/**
 * struct fluxonkv_refill - an SSD refill running without its getter.
 * @done: set by the caller; called once the read is over, from a worker
 *	(process context): the caller then finishes the get in its task
 *	with fluxonkv_get_refill_finish().
 * @t_get: for the caller: when the get began (its latency).
 * @ret: the result (0 or -errno): a failed room wait's when @done is
 *	called; a read's is taken from @read by fluxonkv_get_refill_finish().
 * @read: the read, once it ended and was checked, or NULL.
 * @alloc: the target (one reference) from the start to the finish.
 * @t_read: when the read was submitted.
 * @put_id: the version read.
 * @revoke: a failed refill's copy is revoked (not for a room wait that
 *	failed: that says nothing of the copy).
 * @room: the room wait of a refill that found no room at the inline issue
 *	(fluxonkv_refill_room_wait()).
 * @key_len: the key.
 * @key: the key.
 */
struct fluxonkv_refill {
	void (*done)(struct fluxonkv_refill *rf);
	u64 t_get;
	int ret;
	struct fluxonkv_alloc *alloc;
	u64 t_read;
	struct fluxonkv_ssd_job *read;
	u64 put_id;
	/* the finish revokes the SSD copy when @ret is set (a read, a stale route) */
	bool revoke;
	/* the getter's user, charged @charged bytes (the target) until the finish */
	struct fluxonkv_user *user;
	u64 charged;
	/* the async room wait (kv_room.c), for a refill that found no room */
	struct fluxonkv_refill_room {
		/* on fluxonkv_seg.room_wq while waiting for a free */
		struct wait_queue_entry wait;
		struct delayed_work work;	/* retries; on system_unbound_wq */
		u64 len;			/* the value's */
		u64 t0;				/* when the wait began */
		unsigned long deadline;		/* FLUXONKV_ROOM_WAIT_MS after */
		unsigned long next_ask;		/* the next NEED_ROOM */
		u64 compact_failed;		/* free bytes then, or 0 */
		struct fluxonkv_room_wait asked;
	} room;
	u32 key_len;
	u8 key[FLUXONKV_KEY_MAX];
};

int fluxonkv_kv_init(void);
void fluxonkv_kv_quiesce(void);
void fluxonkv_kv_flush_late(void);
void fluxonkv_kv_exit(void);
struct iov_iter;
int fluxonkv_put(struct fluxonkv_user *user, const u8 *key, u32 key_len,
		 const struct iov_iter *value, u64 *put_id);
int fluxonkv_get(struct fluxonkv_session *s, const u8 *key, u32 key_len,
		 struct fluxonkv_get_result *res);
int fluxonkv_get_refill_finish(struct fluxonkv_session *s,
			       struct fluxonkv_refill *rf,
			       struct fluxonkv_get_result *res, bool gone);
int fluxonkv_delete(const u8 *key, u32 key_len);
int fluxonkv_replica_persist(u64 handle, u64 put_id);
int fluxonkv_lookup(const u8 *key, u32 key_len,
		    struct fluxonkv_get_result *res);
int fluxonkv_hold(struct fluxonkv_session *s, const u8 *key, u32 key_len,
		  u64 handle, u64 put_id, struct fluxonkv_get_result *res);
int fluxonkv_ssd_stage(struct fluxonkv_session *s, const u8 *key,
		       u32 key_len, u64 put_id, u64 off, u64 len,
		       struct fluxonkv_get_result *res, u64 *value_len);
int fluxonkv_target(struct fluxonkv_session *s, const u8 *key, u32 key_len,
		    u64 put_id, u64 len, struct fluxonkv_get_result *res,
		    u64 *handle);
int fluxonkv_publish(struct fluxonkv_session *s, u64 handle, u64 put_id,
		     bool persist);

/* ---- notes.c: ACCESS notes and GET_DONE offers, batched ---- */

int fluxonkv_notes_init(void);
void fluxonkv_notes_quiesce(void);
void fluxonkv_notes_exit(void);
void fluxonkv_access_note(u64 handle);
void fluxonkv_access_forget(void);
bool fluxonkv_drop_note_reserve(void);
void fluxonkv_drop_note_cancel(void);
void fluxonkv_drop_note_commit(u64 handle, u64 gen);
void fluxonkv_drop_notes_forget(void);
void fluxonkv_get_done_offer(struct fluxonkv_replica *r, u32 source);
void fluxonkv_put_note(struct fluxonkv_replica *r, u32 flags, u64 gen);
int fluxonkv_put_notes_flush(void);
void fluxonkv_put_notes_forget(void);

/* ---- ioctl.c ---- */

long fluxonkv_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
struct io_uring_cmd;
int fluxonkv_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);

/* ---- genl.c: the netlink family, the daemon and upcalls ---- */

/**
 * struct fluxonkv_upcall - one request to the daemon and its answer.
 * @id: FLUXONKV_A_REQ_ID.
 * @cmd: the command, checked against the answer's.
 * @done: completed by the answer (or by a daemon disconnect).
 * @status: 0 or -errno from the daemon, or a local error.
 * @put_id, @flags, @handle, @len, @source: answer attributes.
 * @replica: PUT_DONE and GET_DONE: published from the answer handler (if
 *	the master published / promoted it), in order with the daemon's
 *	later commands.
 * @alloc: GET_START only: a memory source pinned by the answer handler,
 *	before a later DROP_REPLICA from the daemon can free it.
 * @key, @key_len: DELETE and GET_START: the key of the request.
 * @ssd_entry: SSD_COMMIT: the committed entry (commit-pinned until the
 *	answer); a PUBLISHED answer marks it routed in the answer handler.
 * @end: asynchronous upcalls only (fluxonkv_upcall_async()): called once,
 *	with @status set, instead of completing @done; it owns @up.
 * @deadline: asynchronous upcalls: jiffies after which the sweep fails it
 *	with -ETIMEDOUT (xa lock).
 * @sending: asynchronous upcalls: not sent yet, the sweep skips it (xa lock).
 * @no_expire: asynchronous upcalls the sweep never times out (PUT_DONE,
 *	PUT); ended only by the answer or a daemon disconnect.
 * @expire_ms: asynchronous upcalls: the sweep times it out this long
 *	after the send instead of request_timeout_ms (FETCH: the daemon may
 *	write the target until the DEADLINE the request carries).
 * @send_retry: asynchronous upcalls whose caller waits anyway (FETCH):
 *	a full daemon socket is retried up to the request timeout.
 * @send_failed: set when @end runs because the module could not send
 *	the request: the daemon never saw it.
 * @sock: PUT_PLACE: the socket the answer named (FLUXONKV_A_FD), looked
 *	up in the answering daemon's file table by the answer handler; the
 *	waiter owns the reference (sockfd_put()).
 */
struct fluxonkv_upcall {
	u64 id;
	u8 cmd;
	struct completion done;
	void (*end)(struct fluxonkv_upcall *up);
	unsigned long deadline;
	bool sending;
	bool no_expire;
	u32 expire_ms;		/* async: its own expiry (0: the timeout) */
	bool send_retry;	/* async: wait out a full daemon socket */
	bool send_failed;	/* async: ended by our own send error */
	int status;
	u64 put_id;
	u32 flags;
	u64 handle;
	u64 len;
	u32 source;
	struct fluxonkv_replica *replica;
	struct fluxonkv_alloc *alloc;
	const u8 *key;
	u32 key_len;
	struct fluxonkv_ssd_entry *ssd_entry;
	struct socket *sock;
};

/* Attributes an upcall carries; zero/NULL fields are left out. */
struct fluxonkv_upcall_args {
	const u8 *key;
	u32 key_len;
	u64 len;
	u64 put_id;
	u64 handle;
	u64 bytes;
	s32 err;
	u32 source;
	u64 offset;
	bool has_offset;	/* send OFFSET even when it is 0 */
};

int fluxonkv_genl_init(void);
void fluxonkv_genl_exit(void);
bool fluxonkv_daemon_connected(void);
bool fluxonkv_daemon_local_routes(void);
bool fluxonkv_daemon_placement(void);
bool fluxonkv_daemon_local_puts(void);
bool fluxonkv_daemon_clean_drops(void);
bool fluxonkv_daemon_one_trip(void);
u64 fluxonkv_daemon_generation(void);
void fluxonkv_daemon_assert_locked(void);
u64 fluxonkv_daemon_link_generation(void);
pid_t fluxonkv_daemon_pid(void);
int fluxonkv_upcall(u8 cmd, const struct fluxonkv_upcall_args *args,
		    struct fluxonkv_upcall *up);
int fluxonkv_upcall_handles(u8 cmd, const struct fluxonkv_upcall_args *args,
			    struct fluxonkv_upcall *up, const u64 *handles,
			    unsigned int nhandles);
void fluxonkv_upcall_async(u8 cmd, const struct fluxonkv_upcall_args *args,
			   struct fluxonkv_upcall *up);
void fluxonkv_upcall_cancel(u64 id);
int fluxonkv_notify(u8 cmd, const struct fluxonkv_upcall_args *args,
		    const u64 *handles, unsigned int nhandles);
int fluxonkv_pending_show(struct seq_file *m, void *unused);

struct sk_buff;
struct sk_buff *fluxonkv_genl_new(u8 cmd, size_t size, void **hdr);
int fluxonkv_genl_send(struct sk_buff *skb, void *hdr);
void fluxonkv_notify_ssd_state(void);
int fluxonkv_notify_ssd_evicted(struct list_head *batch);
int fluxonkv_notify_dropped(const u64 *handles, unsigned int n);
int fluxonkv_notify_put_local(struct list_head *batch, u64 gen);

/* ---- ssd_*.c: the SSD tier (internals: ssd.h) ---- */

struct fluxonkv_ssd_entry;

/* A committed SSD entry overwritten at a ring tail, for SSD_EVICTED. */
struct fluxonkv_ssd_notice {
	struct list_head node;
	u64 put_id;
	u32 key_len;
	u8 key[];
};

/* SSD counters shown in sysfs; atomic, no lock. */
struct fluxonkv_ssd_stats {
	atomic64_t writes;
	atomic64_t write_bytes;
	atomic64_t reads;
	atomic64_t read_bytes;
	atomic64_t io_errors;
	atomic64_t persist_errors;
	atomic64_t evictions;
	atomic64_t busy_waits;
	atomic64_t queue_waits;		/* local puts that waited for a persist queue */
	atomic64_t commits_published;
	atomic64_t commits_ignored;
	atomic64_t notices_dropped;
	atomic64_t revokes;
	atomic64_t unrouted;		/* copies another node's write retired */
	atomic64_t csum_errors;		/* refills that failed their xxh64 */
	atomic64_t meta_evictions;	/* entries evicted for the memory cap */
	atomic64_t meta_refused;	/* persists refused by the memory cap */
	atomic64_t shards_offline;	/* shards taken out for IO errors */
	atomic64_t shards_reclaimed;	/* offline shards freed, slot back */
};

extern struct fluxonkv_ssd_stats fluxonkv_ssd_stats;

int fluxonkv_ssd_init(void);
void fluxonkv_ssd_exit(void);
int fluxonkv_ssd_attach(int fd, u64 offset, u64 capacity, u32 device,
			u32 *shard);
struct mem_cgroup;
int fluxonkv_ssd_persist(const u8 *key, u32 key_len, u64 put_id,
			 struct fluxonkv_alloc *a, struct mem_cgroup *memcg,
			 bool wait);
struct fluxonkv_ssd_entry *fluxonkv_ssd_pin(const u8 *key, u32 key_len,
					    u64 put_id);
void fluxonkv_ssd_unpin(struct fluxonkv_ssd_entry *e);
bool fluxonkv_ssd_lookup_routed(const u8 *key, u32 key_len, u64 *put_id,
				u64 *len);
void fluxonkv_ssd_route(struct fluxonkv_ssd_entry *e);
void fluxonkv_ssd_unroute(const u8 *key, u32 key_len, u64 max_put_id);
void fluxonkv_ssd_unroute_all(void);
u64 fluxonkv_ssd_entry_len(const struct fluxonkv_ssd_entry *e);
int fluxonkv_ssd_read(struct fluxonkv_ssd_entry *e, struct fluxonkv_alloc *a);
int fluxonkv_ssd_read_charged(struct fluxonkv_ssd_entry *e,
			      struct fluxonkv_alloc *a,
			      struct fluxonkv_user *user, u64 *charged);
int fluxonkv_ssd_read_range(struct fluxonkv_ssd_entry *e,
			    struct fluxonkv_alloc *a, u64 off, u64 len);
struct fluxonkv_ssd_job;
int fluxonkv_ssd_read_async(struct fluxonkv_ssd_entry *e,
			    struct fluxonkv_alloc *a,
			    void (*end)(void *priv, struct fluxonkv_ssd_job *job),
			    void *priv);
int fluxonkv_ssd_read_async_end(struct fluxonkv_ssd_job *job);
u64 fluxonkv_ssd_capacity(void);
u64 fluxonkv_ssd_used(void);
u64 fluxonkv_ssd_meta_bytes(void);
int fluxonkv_ssd_dump(struct sk_buff *skb, struct netlink_callback *cb,
		      long *shard, long *pos, long *serial);
int fluxonkv_rings_open(struct inode *inode, struct file *file);

/* ---- main.c: module state shared by all files ---- */

/* Counters shown in sysfs; all atomic, no lock. */
struct fluxonkv_stats {
	u64 puts;
	u64 gets;
	u64 hits_memory;
	u64 hits_ssd;
	u64 hits_remote;		/* pulled / pushed from another node */
	u64 fetches;		/* FETCH upcalls sent */
	u64 fetch_errors;	/* FETCHes that failed (revoked) */
	u64 fetch_abandoned;	/* gets that gave up on a FETCH */
	u64 fetch_expired;	/* abandoned targets freed unanswered */
	u64 puts_placed;		/* puts sent to another node's target */
	u64 place_errors;	/* ... that failed */
	u64 puts_targeted;	/* targets made for other nodes' puts */
	u64 misses;
	u64 local_misses;	/* answered from the index, no upcall */
	u64 local_refills;	/* SSD refills without GET_START */
	u64 refills_async;	/* ... completed from the read's end */
	u64 refills_room_async;	/* ... that waited for room, not in io-wq */
	u64 local_unsure;	/* local misses asked of the master */
	u64 lease_refused;	/* local hits refused: the lease ran out */
	u64 hits_alone;		/* local hits served without a daemon */
	u64 promotions;		/* refills the master promoted */
	u64 promotions_refused;	/* refills left temporary */
	u64 deletes;
	u64 evictions;		/* drops flagged as evictions */
	u64 replica_drops;	/* every DROP_REPLICA */
	u64 holders;			/* a gauge: per-CPU parts may wrap, the sum does not */
	u64 upcall_timeouts;
	u64 puts_abandoned;	/* putters that left before PUT_DONE's answer */
	u64 puts_local;		/* puts published without a round trip */
	u64 puts_one_trip;	/* puts the master published in one PUT */
	u64 upcall_errors;
	u64 send_waits;		/* sends that found the daemon's socket full */
	u64 room_waits;
	u64 room_by_address;	/* NEED_ROOMs naming a window's victims */
	u64 room_pinned;		/* room asks no eviction could help */
	u64 compactions;	/* slides that made a run (segment.c) */
	u64 compacted_bytes;	/* bytes slides moved, made a run or not */
	u64 compact_waits;	/* pins that waited for a slide to end */
	u64 clean_drops;	/* clean replicas the module dropped itself */
	u64 clean_drop_bytes;	/* ... their spans */
	u64 clean_reserve_runs;	/* background passes refilling the reserve */
	u64 dropped_notes_full;	/* clean drops refused: notes queue full */
	u64 faults_refused;	/* isolated faults outside the tenant's values */
	u64 tenant_binds;	/* FLUXONKV_IOC_TENANT binds */
	u64 tenant_binds_refused;	/* ... refused: ENOENT / EPERM */
};

DECLARE_PER_CPU(struct fluxonkv_stats, fluxonkv_stats);

/*
 * Module counters are per CPU (no shared cache line on the hot path) and
 * summed when read; a gauge's parts may each wrap, their sum is exact.
 */
#define fluxonkv_stat_inc(f)	this_cpu_inc(fluxonkv_stats.f)
#define fluxonkv_stat_dec(f)	this_cpu_dec(fluxonkv_stats.f)
#define fluxonkv_stat_add(f, n)	this_cpu_add(fluxonkv_stats.f, n)
u64 fluxonkv_stat_sum(size_t offset);
#define fluxonkv_stat_read(f)	\
	fluxonkv_stat_sum(offsetof(struct fluxonkv_stats, f))


/*
 * Operation latency histograms (debugfs "latency"): bucket i counts
 * operations that took < 2^(i + FLUXONKV_LAT_SHIFT) ns, the last bucket
 * everything slower.  Per-CPU counters, no lock.
 */
#define FLUXONKV_LAT_SHIFT	10	/* first bucket: < 1.024 us */
#define FLUXONKV_LAT_BUCKETS	26	/* last bound 2^34 ns = 17 s, then +Inf */

enum fluxonkv_lat_op {
	FLUXONKV_LAT_PUT,
	FLUXONKV_LAT_GET_MEMORY,
	FLUXONKV_LAT_GET_SSD,
	FLUXONKV_LAT_GET_MISS,
	FLUXONKV_LAT_DELETE,
	/* stages of an SSD refill (get_ssd) and of a persist */
	FLUXONKV_LAT_REFILL_ALLOC,	/* room for the target */
	FLUXONKV_LAT_REFILL_READ,	/* queued read until the waiter wakes */
	FLUXONKV_LAT_REFILL_DONE,	/* replica + sending GET_DONE */
	FLUXONKV_LAT_SSD_READ_IO,	/* submission to the device's completion */
	FLUXONKV_LAT_SSD_WRITE_IO,	/* the same for a persist's write */
	FLUXONKV_LAT_GET_REMOTE,	/* a get answered from another node */
	FLUXONKV_LAT_FETCH,		/* FETCH sent until the target is full */
	FLUXONKV_LAT_PLACE_SEND,	/* PUT_PLACE + sending the value */
	FLUXONKV_LAT_SSD_CSUM,		/* a read's XXH64 check, after its IO */
	FLUXONKV_LAT_NR,
};

/* Per CPU, summed by debugfs "latency". */
struct fluxonkv_lat {
	u64 count[FLUXONKV_LAT_BUCKETS];
	u64 sum_ns;
};

/*
 * The latency clock: sched_clock() (the TSC where there is one), not
 * ktime_get(): a clocksource read may be an MMIO access (HPET), which costs
 * more than the whole DRAM hit it would time, and not local_clock(), whose
 * per-CPU filtering of an unstable TSC costs a cmpxchg.  An operation that
 * moved CPUs may read a little off (never negative: main.c clamps it).
 */
static inline u64 fluxonkv_clock(void)
{
	return sched_clock();
}

void fluxonkv_lat_record(enum fluxonkv_lat_op op, u64 start_ns);
int fluxonkv_latency_show(struct seq_file *m, void *unused);
/* ---- tenant.c: key spaces, the bind table, isolated mappings ---- */
void fluxonkv_tenant_prefix(u8 *key, u32 tenant);
bool fluxonkv_key_reserved(const u8 *key, u32 key_len);
u32 fluxonkv_key_tenant(const u8 *key, u32 key_len);
void fluxonkv_tenant_bound(struct fluxonkv_session *s);
void fluxonkv_tenant_unbind(struct fluxonkv_session *s);
int fluxonkv_tenant_may_bind(u32 tenant);
extern const struct nla_policy fluxonkv_tenants_policy[FLUXONKV_A_MAX + 1];
struct genl_info;
int fluxonkv_nl_tenants(struct sk_buff *skb, struct genl_info *info);
int fluxonkv_tenants_show(struct seq_file *m, void *unused);
extern bool fluxonkv_isolated;
/* Faults read fluxonkv_isolated inside it (tenant.c says why). */
extern struct srcu_struct fluxonkv_fault_srcu;
void fluxonkv_tenant_file_open(struct file *file);
void fluxonkv_segment_zap(u64 off, u64 len);
int fluxonkv_tenant_init(void);
void fluxonkv_tenant_exit(void);

extern struct fluxonkv_segment fluxonkv_seg;
extern unsigned int fluxonkv_request_timeout_ms;
extern u64 fluxonkv_incarnation;
extern atomic64_t fluxonkv_put_id_max;

static inline void *fluxonkv_alloc_vaddr(struct fluxonkv_alloc *a)
{
	return fluxonkv_seg.vaddr + a->offset;
}

#endif /* _FLUXONKV_H */
