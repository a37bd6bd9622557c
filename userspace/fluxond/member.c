// SPDX-License-Identifier: GPL-2.0
/*
 * member.c - the master's membership table (member.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "member.h"

const char *fkv_left_reason_name(enum fkv_left_reason r)
{
	switch (r) {
	case FKV_LEFT_LEAVE: return "left";
	case FKV_LEFT_CLOSED: return "connection closed";
	case FKV_LEFT_EXPELLED: return "connection closed by the master";
	case FKV_LEFT_TIMEOUT: return "missed heartbeats";
	case FKV_LEFT_REPLACED: return "rejoined under a new incarnation";
	}
	return "?";
}

void fkv_members_init(struct fkv_members *t, uint64_t dead_after_ms,
		      const struct fkv_members_ops *ops, void *arg)
{
	memset(t, 0, sizeof(*t));
	t->dead_after_ms = dead_after_ms;
	t->ops = ops;
	t->arg = arg;
}

static bool is_past(const struct fkv_member *m, uint64_t inc)
{
	unsigned int i;

	for (i = 0; i < m->npast && i < FKV_MEMBER_PAST; i++)
		if (m->past[i] == inc)
			return true;
	return false;
}

static void make_left(struct fkv_members *t, struct fkv_member *m,
		      enum fkv_left_reason why)
{
	m->live = false;
	m->past[m->npast++ % FKV_MEMBER_PAST] = m->incarnation;
	m->lefts++;
	m->last_left = why;
	t->member_left++;
	if (t->ops && t->ops->left)
		t->ops->left(t->arg, m, why);
}

static void copy_str(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

/*
 * A full table: the slot of the member gone longest, if it was last heard
 * of FKV_ID_REUSE_MS ago or more (its name, id and past are forgotten).
 */
static struct fkv_member *reclaimable(struct fkv_members *t, uint64_t now)
{
	struct fkv_member *old = NULL;
	unsigned int i;

	for (i = 0; i < FKV_MEMBERS_MAX; i++) {
		struct fkv_member *m = &t->m[i];

		if (m->id && !m->live && now - m->last_seen_ms >= FKV_ID_REUSE_MS &&
		    (!old || m->last_seen_ms < old->last_seen_ms))
			old = m;
	}
	if (old)
		t->ids_reclaimed++;
	return old;
}

struct fkv_member *fkv_members_join(struct fkv_members *t,
				    const struct fkv_join *j, uint64_t now,
				    int *err)
{
	struct fkv_member *m = NULL, *free_slot = NULL;
	unsigned int i;

	if (!j->name || !j->name[0] || strlen(j->name) > FKV_NODE_NAME_MAX ||
	    !j->incarnation) {
		*err = -EINVAL;
		return NULL;
	}
	for (i = 0; i < FKV_MEMBERS_MAX; i++) {
		if (!t->m[i].id) {
			if (!free_slot)
				free_slot = &t->m[i];
			continue;
		}
		if (!strcmp(t->m[i].name, j->name)) {
			m = &t->m[i];
			break;
		}
	}
	if (m && is_past(m, j->incarnation)) {
		*err = -ESTALE;
		return NULL;
	}
	if (m && m->live && m->incarnation == j->incarnation)
		goto update;		/* a reconnect of the same instance */
	if (m && m->live)
		make_left(t, m, FKV_LEFT_REPLACED);
	if (!m && !free_slot)
		free_slot = reclaimable(t, now);
	/* (a free slot's id is 0; a reclaimed one's is its last name's) */
	if (t->ops && t->ops->busy &&
	    (m || (free_slot && free_slot->id)) &&
	    t->ops->busy(t->arg, m ? m->id : free_slot->id)) {
		*err = -EAGAIN;
		return NULL;
	}
	if (!m) {
		if (!free_slot) {
			*err = -ENOSPC;
			return NULL;
		}
		m = free_slot;
		memset(m, 0, sizeof(*m));
		m->id = (uint32_t)(m - t->m) + 1;
		copy_str(m->name, sizeof(m->name), j->name);
	}
	m->incarnation = j->incarnation;
	m->live = true;
	m->joined_ms = now;
	m->joins++;
update:
	m->last_seen_ms = now;
	copy_str(m->data_addr, sizeof(m->data_addr), j->data_addr);
	copy_str(m->transport, sizeof(m->transport), j->transport);
	m->segment_size = j->segment_size;
	m->segment_used = j->segment_used;
	m->ssd_capacity = j->ssd_capacity;
	*err = 0;
	return m;
}

static struct fkv_member *by_id(struct fkv_members *t, uint32_t id)
{
	if (!id || id > FKV_MEMBERS_MAX || t->m[id - 1].id != id)
		return NULL;
	return &t->m[id - 1];
}

struct fkv_member *fkv_members_live(struct fkv_members *t, uint32_t id)
{
	struct fkv_member *m = by_id(t, id);

	return m && m->live ? m : NULL;
}

const struct fkv_member *fkv_members_get(const struct fkv_members *t,
					 uint32_t id)
{
	const struct fkv_member *m = by_id((struct fkv_members *)t, id);

	return m && m->id ? m : NULL;
}

bool fkv_members_is_live(const struct fkv_members *t, uint32_t id,
			 uint64_t incarnation)
{
	const struct fkv_member *m = by_id((struct fkv_members *)t, id);

	return m && m->live && m->incarnation == incarnation;
}

/* The live member @id under @incarnation, or NULL with *@err. */
static struct fkv_member *checked(struct fkv_members *t, uint32_t id,
				  uint64_t incarnation, int *err)
{
	struct fkv_member *m = by_id(t, id);

	if (!m || (!m->live && !is_past(m, incarnation))) {
		*err = -ENOENT;
		return NULL;
	}
	if (!m->live || m->incarnation != incarnation) {
		*err = -ESTALE;
		return NULL;
	}
	return m;
}

int fkv_members_heartbeat(struct fkv_members *t, uint32_t id,
			  uint64_t incarnation, uint64_t segment_used,
			  uint64_t now)
{
	struct fkv_member *m;
	int err;

	m = checked(t, id, incarnation, &err);
	if (!m)
		return err;
	m->last_seen_ms = now;
	m->segment_used = segment_used;
	return 0;
}

int fkv_members_leave(struct fkv_members *t, uint32_t id,
		      uint64_t incarnation, enum fkv_left_reason why)
{
	struct fkv_member *m;
	int err;

	m = checked(t, id, incarnation, &err);
	if (!m)
		return err;
	make_left(t, m, why);
	return 0;
}

unsigned int fkv_members_tick(struct fkv_members *t, uint64_t now)
{
	unsigned int i, n = 0;

	for (i = 0; i < FKV_MEMBERS_MAX; i++) {
		struct fkv_member *m = &t->m[i];

		if (m->id && m->live &&
		    now - m->last_seen_ms > t->dead_after_ms) {
			make_left(t, m, FKV_LEFT_TIMEOUT);
			n++;
		}
	}
	return n;
}

size_t fkv_members_live_count(const struct fkv_members *t)
{
	size_t i, n = 0;

	for (i = 0; i < FKV_MEMBERS_MAX; i++)
		n += t->m[i].id && t->m[i].live;
	return n;
}
