// SPDX-License-Identifier: GPL-2.0
/*
 * Holders: pins on a range, owned by the file description that took them.
 *
 * A holder is one reference on a fluxonkv_alloc kept in its session's
 * xarray.  The slot is the lowest free one, so a get/release loop reuses
 * the same xarray node instead of growing the tree; released holders are
 * kept for the next get (up to FLUXONKV_HOLDER_SPARES), so the hot path
 * allocates nothing.  The id is the slot plus a per-session sequence
 * number that starts at a random value: an id from another file
 * description, or a released one, is unknown here (-ENOENT).  Closing the
 * file releases whatever is left, so a crashed client leaks nothing.
 *
 * What a client pins is charged to its user (by uid): the bytes of its
 * holders and of its puts still being copied in, at most pin_max_pct of the
 * segment per user (-EDQUOT beyond), so no tenant can starve the others
 * of room by holding everything across many file descriptions.
 * Privileged sessions (the node daemon's) are not charged.  A pin that
 * can outlive the operation that took it (a FETCH target whose get gave
 * up: the daemon may still write it) keeps the user with a reference of
 * its own (fluxonkv_user_hold()) and stays charged until it is freed.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/math64.h>
#include <linux/random.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uidgid.h>

#include "fluxonkv.h"

/*
 * Protects fluxonkv_sessions (the list, for debugfs, in the order of
 * @serial), fluxonkv_session_serial and fluxonkv_users (the table, every
 * user's @sessions, and the drop of a user's last reference: a lookup
 * never finds a user being freed).  Taken after the daemon's lock (the
 * last FETCH of a leaving daemon may release a user).
 */
static DEFINE_MUTEX(fluxonkv_sessions_lock);
static LIST_HEAD(fluxonkv_sessions);
static u64 fluxonkv_session_serial;

struct fluxonkv_user {
	struct hlist_node node;		/* in fluxonkv_users (sessions lock) */
	kuid_t uid;
	unsigned int sessions;		/* open client sessions (sessions lock) */
	/* one per open session + one per pin outliving its operation */
	refcount_t refs;
	atomic64_t pinned;		/* bytes charged */
};

static DEFINE_HASHTABLE(fluxonkv_users, 6);

/* The budget of one user, bytes. */
static u64 fluxonkv_pin_max(void)
{
	return div_u64((u64)fluxonkv_seg.size * READ_ONCE(fluxonkv_pin_max_pct),
		       100);
}

/* Charge @bytes to @u (NULL: not charged).  0 or -EDQUOT. */
int fluxonkv_user_charge(struct fluxonkv_user *u, u64 bytes)
{
	if (!u)
		return 0;
	if (atomic64_add_return(bytes, &u->pinned) > fluxonkv_pin_max()) {
		atomic64_sub(bytes, &u->pinned);
		return -EDQUOT;
	}
	return 0;
}

void fluxonkv_user_uncharge(struct fluxonkv_user *u, u64 bytes)
{
	if (u)
		WARN_ON_ONCE(atomic64_sub_return(bytes, &u->pinned) < 0);
}

/* The caller's user, one more session of it.  Sessions lock held. */
static struct fluxonkv_user *fluxonkv_user_get(void)
{
	kuid_t uid = current_fsuid();
	struct fluxonkv_user *u;

	lockdep_assert_held(&fluxonkv_sessions_lock);

	hash_for_each_possible(fluxonkv_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			goto found;
	u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
	if (!u)
		return NULL;
	u->uid = uid;
	refcount_set(&u->refs, 1);
	atomic64_set(&u->pinned, 0);
	hash_add(fluxonkv_users, &u->node, __kuid_val(uid));
	u->sessions++;
	return u;
found:
	refcount_inc(&u->refs);
	u->sessions++;
	return u;
}

/* @u's last reference went (sessions lock held): forget it. */
static void fluxonkv_user_free(struct fluxonkv_user *u)
{
	lockdep_assert_held(&fluxonkv_sessions_lock);

	WARN_ON_ONCE(atomic64_read(&u->pinned));
	hash_del(&u->node);
	kfree(u);
}

/* One session of @u less.  Sessions lock held. */
static void fluxonkv_user_put(struct fluxonkv_user *u)
{
	lockdep_assert_held(&fluxonkv_sessions_lock);

	if (!u)
		return;
	u->sessions--;
	if (refcount_dec_and_test(&u->refs))
		fluxonkv_user_free(u);
}

/**
 * fluxonkv_user_hold() - keep @u past its sessions.
 * @u: a user with an open session (its caller's), or NULL.
 *
 * For a pin that may outlive the session that took it; pair with
 * fluxonkv_user_release().  Return: @u.
 */
struct fluxonkv_user *fluxonkv_user_hold(struct fluxonkv_user *u)
{
	if (u)
		refcount_inc(&u->refs);
	return u;
}

/* Drop fluxonkv_user_hold()'s reference.  May sleep (the sessions lock). */
void fluxonkv_user_release(struct fluxonkv_user *u)
{
	if (u && refcount_dec_and_mutex_lock(&u->refs,
					     &fluxonkv_sessions_lock)) {
		fluxonkv_user_free(u);
		mutex_unlock(&fluxonkv_sessions_lock);
	}
}

struct fluxonkv_session *fluxonkv_session_new(bool writable, bool privileged)
{
	struct fluxonkv_session *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return NULL;
	xa_init_flags(&s->holders, XA_FLAGS_ALLOC1 | XA_FLAGS_ACCOUNT);
	/*
	 * A reserved (zero) entry in the last slot of the first node keeps
	 * that node alive when the session holds nothing: otherwise every
	 * get/release pair of a lone holder allocates a node and frees it
	 * by RCU.  Lookups and iteration do not see reserved entries.
	 */
	if (xa_reserve(&s->holders, FLUXONKV_HOLDER_KEEP_SLOT,
		       GFP_KERNEL_ACCOUNT))
		goto err_free;
	s->id_seq = get_random_u64();
	s->pid = task_tgid_nr(current);
	s->writable = writable;
	s->privileged = privileged;
	mutex_lock(&fluxonkv_sessions_lock);
	if (!privileged) {
		s->user = fluxonkv_user_get();
		if (!s->user) {
			mutex_unlock(&fluxonkv_sessions_lock);
			goto err_holders;
		}
	}
	s->serial = ++fluxonkv_session_serial;
	list_add_tail(&s->node, &fluxonkv_sessions);
	mutex_unlock(&fluxonkv_sessions_lock);
	return s;

err_holders:
	xa_destroy(&s->holders);
err_free:
	kfree(s);
	return NULL;
}

void fluxonkv_session_free(struct fluxonkv_session *s)
{
	struct fluxonkv_holder *h;
	unsigned long slot;

	mutex_lock(&fluxonkv_sessions_lock);
	list_del(&s->node);
	mutex_unlock(&fluxonkv_sessions_lock);

	xa_for_each(&s->holders, slot, h) {
		xa_erase(&s->holders, slot);
		fluxonkv_user_uncharge(s->user, h->a->span);
		fluxonkv_alloc_put(h->a);
		kfree(h);
		fluxonkv_stat_dec(holders);
		cond_resched();
	}
	xa_destroy(&s->holders);
	fluxonkv_tenant_unbind(s);
	while ((h = s->spare)) {
		s->spare = h->next_spare;
		kfree(h);
	}
	mutex_lock(&fluxonkv_sessions_lock);
	fluxonkv_user_put(s->user);
	mutex_unlock(&fluxonkv_sessions_lock);
	kfree(s);
}

/**
 * fluxonkv_holder_add() - pin @a for session @s.
 * @s: the caller's session.
 * @a: the range; the holder takes over the caller's reference on success.
 * @tenant: the tenant of the key it was asked for: the first holder of an
 *	unprivileged session (or of any session for a tenant's key) says
 *	whose the value is, for isolated faults (tenant.c).
 * @id: out: the new holder id.
 *
 * Return: 0, -EMFILE if the session has FLUXONKV_HOLDERS_MAX holders
 * already, -EDQUOT if its user's pins would exceed pin_max_pct of the
 * segment, or -ENOMEM (the caller keeps its reference).
 */
int fluxonkv_holder_add(struct fluxonkv_session *s, struct fluxonkv_alloc *a,
			u32 tenant, u64 *id)
{
	struct fluxonkv_holder *h;
	u32 slot;
	int ret;

	if (atomic_inc_return(&s->nholders) > FLUXONKV_HOLDERS_MAX) {
		ret = -EMFILE;
		goto err_count;
	}
	ret = fluxonkv_user_charge(s->user, a->span);
	if (ret)
		goto err_count;

	xa_lock(&s->holders);
	h = s->spare;
	if (h) {
		s->spare = h->next_spare;
		s->nspare--;
	} else {
		xa_unlock(&s->holders);
		h = kmalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
		if (!h) {
			ret = -ENOMEM;
			goto err_charge;
		}
		xa_lock(&s->holders);
	}
	h->a = a;
	/*
	 * May drop the lock to allocate a node; slots below are reused.  One
	 * slot more than the cap: FLUXONKV_HOLDER_KEEP_SLOT is never a holder.
	 */
	ret = __xa_alloc(&s->holders, &slot, h,
			 XA_LIMIT(1, FLUXONKV_HOLDERS_MAX + 1), GFP_KERNEL_ACCOUNT);
	if (ret) {
		xa_unlock(&s->holders);
		kfree(h);
		ret = ret == -EBUSY ? -EMFILE : ret;
		goto err_charge;
	}
	h->id = ((s->id_seq++ & FLUXONKV_HOLDER_SEQ_MASK) <<
		 FLUXONKV_HOLDER_SLOT_BITS) | slot;
	*id = h->id;
	xa_unlock(&s->holders);
	/* the first holder says whose the value is (tenant.c) */
	if (!s->privileged || tenant)
		cmpxchg(&a->tenant, FLUXONKV_TENANT_NONE, tenant);
	fluxonkv_stat_inc(holders);
	return 0;

err_charge:
	fluxonkv_user_uncharge(s->user, a->span);
err_count:
	atomic_dec(&s->nholders);
	return ret;
}

/* Return: 0, or -ENOENT if @id is not a live holder of @s. */
int fluxonkv_holder_release(struct fluxonkv_session *s, u64 id)
{
	unsigned long slot = id & FLUXONKV_HOLDER_SLOT_MASK;
	struct fluxonkv_holder *h;
	struct fluxonkv_alloc *a;

	if (!slot)
		return -ENOENT;
	xa_lock(&s->holders);
	h = xa_load(&s->holders, slot);
	if (!h || h->id != id) {
		xa_unlock(&s->holders);
		return -ENOENT;
	}
	__xa_erase(&s->holders, slot);
	a = h->a;
	if (s->nspare < FLUXONKV_HOLDER_SPARES) {
		h->next_spare = s->spare;
		s->spare = h;
		s->nspare++;
		h = NULL;
	}
	xa_unlock(&s->holders);
	kfree(h);
	atomic_dec(&s->nholders);
	fluxonkv_user_uncharge(s->user, a->span);
	fluxonkv_alloc_put(a);
	fluxonkv_stat_dec(holders);
	return 0;
}

/*
 * debugfs `holders`: a seq_file whose cursor is (session serial, holder
 * id).  The sessions mutex is held for one buffer fill (it only orders
 * opens and closes), each session's xarray lock only while one holder is
 * found and copied: gets and releases never wait for the printing, and a
 * buffer refill resumes at the cursor instead of starting over.
 */
struct fluxonkv_holders_iter {
	loff_t index;			/* the *pos the cursor stands for */
	u64 serial;			/* cursor: session ... */
	unsigned long id;		/* ... and holder slot in it */
	struct fluxonkv_session *s;	/* that session, start..stop only */
	/* the holder found, copied under the xarray lock */
	u64 holder_id;
	pid_t pid;
	u64 offset, len;
	unsigned int refs;
};

/* The first holder at or after the cursor, into @it; false at the end. */
static bool fluxonkv_holders_find(struct fluxonkv_holders_iter *it)
{
	struct fluxonkv_session *s = it->s;
	struct fluxonkv_holder *h;

	lockdep_assert_held(&fluxonkv_sessions_lock);
	if (!s) {
		list_for_each_entry(s, &fluxonkv_sessions, node)
			if (s->serial >= it->serial)
				break;
	}
	for (; !list_entry_is_head(s, &fluxonkv_sessions, node);
	     s = list_next_entry(s, node)) {
		if (s->serial != it->serial) {
			it->serial = s->serial;
			it->id = 0;
		}
		xa_lock(&s->holders);
		h = xa_find(&s->holders, &it->id, ULONG_MAX, XA_PRESENT);
		if (h) {
			it->holder_id = h->id;
			it->pid = s->pid;
			it->offset = h->a->offset;
			it->len = h->a->len;
			it->refs = kref_read(&h->a->ref);
		}
		xa_unlock(&s->holders);
		if (h) {
			it->s = s;
			return true;
		}
	}
	it->s = NULL;
	return false;
}

static void *fluxonkv_holders_start(struct seq_file *m, loff_t *pos)
{
	struct fluxonkv_holders_iter *it = m->private;
	loff_t i;

	mutex_lock(&fluxonkv_sessions_lock);
	it->s = NULL;		/* sessions may have gone since the last fill */
	if (!*pos)
		return SEQ_START_TOKEN;
	if (*pos != it->index) {
		/* a seek: count from the first holder */
		it->serial = 0;
		it->id = 0;
		for (i = 1; fluxonkv_holders_find(it) && i < *pos; i++)
			it->id++;
		it->index = *pos;
		return it->s ? it : NULL;
	}
	return fluxonkv_holders_find(it) ? it : NULL;
}

static void *fluxonkv_holders_next(struct seq_file *m, void *v, loff_t *pos)
{
	struct fluxonkv_holders_iter *it = m->private;

	if (v == SEQ_START_TOKEN) {
		it->serial = 0;
		it->id = 0;
	} else {
		it->id++;
	}
	it->index = ++*pos;
	return fluxonkv_holders_find(it) ? it : NULL;
}

static void fluxonkv_holders_stop(struct seq_file *m, void *v)
{
	struct fluxonkv_holders_iter *it = m->private;

	it->s = NULL;
	mutex_unlock(&fluxonkv_sessions_lock);
}

static int fluxonkv_holders_show_one(struct seq_file *m, void *v)
{
	struct fluxonkv_holders_iter *it = v;

	if (v == SEQ_START_TOKEN)
		seq_puts(m, "pid\tholder\toffset\tlen\trefs\n");
	else
		seq_printf(m, "%d\t%llu\t%llu\t%llu\t%u\n", it->pid,
			   it->holder_id,
			   it->offset, it->len, it->refs);
	return 0;
}

static const struct seq_operations fluxonkv_holders_seq_ops = {
	.start = fluxonkv_holders_start,
	.next = fluxonkv_holders_next,
	.stop = fluxonkv_holders_stop,
	.show = fluxonkv_holders_show_one,
};

int fluxonkv_holders_open(struct inode *inode, struct file *file)
{
	struct fluxonkv_holders_iter *it;

	it = __seq_open_private(file, &fluxonkv_holders_seq_ops, sizeof(*it));
	return it ? 0 : -ENOMEM;
}

int fluxonkv_users_show(struct seq_file *m, void *unused)
{
	struct fluxonkv_user *u;
	unsigned int bkt;

	seq_printf(m, "budget\t%llu\n", fluxonkv_pin_max());
	seq_puts(m, "uid\tsessions\tpinned\n");
	mutex_lock(&fluxonkv_sessions_lock);
	hash_for_each(fluxonkv_users, bkt, u, node)
		seq_printf(m, "%u\t%u\t%lld\n",
			   from_kuid_munged(&init_user_ns, u->uid), u->sessions,
			   (long long)atomic64_read(&u->pinned));
	mutex_unlock(&fluxonkv_sessions_lock);
	return 0;
}
