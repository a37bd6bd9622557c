// SPDX-License-Identifier: GPL-2.0
/*
 * Holders: pins on a range, owned by the file description that took them.
 *
 * A holder is one reference on a fluxonkv_alloc kept in its session's
 * xarray under a module-wide unique id, so an id from another file
 * description (or a released one) is simply unknown here: -ENOENT.  Closing
 * the file releases whatever is left, so a crashed client leaks nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "fluxonkv.h"

/* Holder ids are never reused while the module is loaded. */
static atomic64_t fluxonkv_holder_next = ATOMIC64_INIT(0);

/* Protects fluxonkv_sessions (the list, for debugfs). */
static DEFINE_MUTEX(fluxonkv_sessions_lock);
static LIST_HEAD(fluxonkv_sessions);

struct fluxonkv_session *fluxonkv_session_new(void)
{
	struct fluxonkv_session *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return NULL;
	xa_init(&s->holders);
	s->pid = task_tgid_nr(current);
	mutex_lock(&fluxonkv_sessions_lock);
	list_add_tail(&s->node, &fluxonkv_sessions);
	mutex_unlock(&fluxonkv_sessions_lock);
	return s;
}

void fluxonkv_session_free(struct fluxonkv_session *s)
{
	struct fluxonkv_alloc *a;
	unsigned long id;

	mutex_lock(&fluxonkv_sessions_lock);
	list_del(&s->node);
	mutex_unlock(&fluxonkv_sessions_lock);

	xa_for_each(&s->holders, id, a) {
		xa_erase(&s->holders, id);
		fluxonkv_alloc_put(a);
		atomic64_dec(&fluxonkv_stats.holders);
		cond_resched();
	}
	xa_destroy(&s->holders);
	kfree(s);
}

/**
 * fluxonkv_holder_add() - pin @a for session @s.
 * @s: the caller's session.
 * @a: the range; the holder takes over the caller's reference on success.
 * @id: out: the new holder id.
 *
 * Return: 0, -EMFILE if the session has FLUXONKV_HOLDERS_MAX holders
 * already, or -ENOMEM (the caller keeps its reference).
 */
int fluxonkv_holder_add(struct fluxonkv_session *s, struct fluxonkv_alloc *a,
			u64 *id)
{
	u64 hid;
	int ret;

	if (atomic_inc_return(&s->nholders) > FLUXONKV_HOLDERS_MAX) {
		atomic_dec(&s->nholders);
		return -EMFILE;
	}
	hid = atomic64_inc_return(&fluxonkv_holder_next);
	ret = xa_insert(&s->holders, hid, a, GFP_KERNEL_ACCOUNT);
	if (ret) {
		atomic_dec(&s->nholders);
		return ret == -EBUSY ? -EEXIST : ret;
	}
	atomic64_inc(&fluxonkv_stats.holders);
	*id = hid;
	return 0;
}

/* Return: 0, or -ENOENT if @id is not a live holder of @s. */
int fluxonkv_holder_release(struct fluxonkv_session *s, u64 id)
{
	struct fluxonkv_alloc *a;

	if (!id)
		return -ENOENT;
	a = xa_erase(&s->holders, id);
	if (!a)
		return -ENOENT;
	atomic_dec(&s->nholders);
	fluxonkv_alloc_put(a);
	atomic64_dec(&fluxonkv_stats.holders);
	return 0;
}

int fluxonkv_holders_show(struct seq_file *m, void *unused)
{
	struct fluxonkv_session *s;
	struct fluxonkv_alloc *a;
	unsigned long id;

	seq_puts(m, "pid\tholder\toffset\tlen\trefs\n");
	mutex_lock(&fluxonkv_sessions_lock);
	list_for_each_entry(s, &fluxonkv_sessions, node) {
		xa_lock(&s->holders);
		xa_for_each(&s->holders, id, a)
			seq_printf(m, "%d\t%lu\t%llu\t%llu\t%u\n", s->pid, id,
				   a->offset, a->len, kref_read(&a->ref));
		xa_unlock(&s->holders);
	}
	mutex_unlock(&fluxonkv_sessions_lock);
	return 0;
}
