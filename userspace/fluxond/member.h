/* SPDX-License-Identifier: GPL-2.0 */
/*
 * member.h - the master's membership table: which nodes are in the
 * cluster, under which incarnation, and whether they are alive.
 *
 * A node joins under its name with a fresh incarnation (its tomb tag; see
 * route.h).  Its id is stable per name, so an operator sees "node b" come
 * back.  It leaves on LEAVE, when its control connection closes, or when
 * no heartbeat came within dead_after_ms: ops->left runs once per
 * incarnation, and that incarnation is never live again — a late message
 * or a rejoin carrying it is refused (-ESTALE).  Pure logic, single
 * threaded, clock injected: the unit tests drive it directly.
 */
#ifndef FLUXOND_MEMBER_H
#define FLUXOND_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/cluster_msg.h"

/* Members (names) a master tracks. */
#define FKV_MEMBERS_MAX		FKV_MEMBERS_MAX_CTL
/* Past incarnations remembered per name, to refuse their late messages. */
#define FKV_MEMBER_PAST		8
/*
 * A name not heard of for this long while the table is full gives its id
 * to a new name: longer than every hold, token and target that may name
 * a node by id (at most 70 s), so nothing still points at the old one.
 */
#define FKV_ID_REUSE_MS		600000

enum fkv_left_reason {
	FKV_LEFT_LEAVE,		/* the node said LEAVE */
	FKV_LEFT_CLOSED,	/* its control connection closed (its end) */
	/*
	 * the master closed it (a refusal, a protocol error, a full queue):
	 * the node, still alive, may serve its hits on its lease a while
	 */
	FKV_LEFT_EXPELLED,
	FKV_LEFT_TIMEOUT,	/* no heartbeat within dead_after_ms */
	FKV_LEFT_REPLACED,	/* it rejoined under a new incarnation */
};

const char *fkv_left_reason_name(enum fkv_left_reason r);

struct fkv_member {
	uint32_t id;			/* 1..FKV_MEMBERS_MAX; 0 = unused */
	char name[FKV_NODE_NAME_MAX + 1];
	bool live;
	uint64_t incarnation;		/* live (or last) incarnation */
	uint64_t past[FKV_MEMBER_PAST];	/* incarnations that left */
	unsigned int npast;
	char data_addr[FKV_ADDR_MAX];
	char transport[8];
	uint64_t segment_size, segment_used, ssd_capacity;
	uint64_t joined_ms, last_seen_ms;
	uint64_t joins, lefts;
	enum fkv_left_reason last_left;
};

struct fkv_members_ops {
	/* @m left under m->incarnation (m->live is already false). */
	void (*left)(void *arg, const struct fkv_member *m,
		     enum fkv_left_reason why);
	/*
	 * Optional: id @id cannot take a new incarnation yet (what its
	 * departed one left behind is still being cleaned up).
	 */
	bool (*busy)(void *arg, uint32_t id);
};

/* What a JOIN carries (the secret is checked by the caller, auth.h). */
struct fkv_join {
	const char *name;
	uint64_t incarnation;
	const char *data_addr;
	const char *transport;
	uint64_t segment_size, segment_used, ssd_capacity;
};

struct fkv_members {
	struct fkv_member m[FKV_MEMBERS_MAX];
	uint64_t dead_after_ms;
	const struct fkv_members_ops *ops;
	void *arg;
	uint64_t member_left;		/* counter: every left */
	uint64_t ids_reclaimed;		/* counter: slots given to a new name */
};

void fkv_members_init(struct fkv_members *t, uint64_t dead_after_ms,
		      const struct fkv_members_ops *ops, void *arg);

/*
 * Admit @j at @now.  Returns the member (its id stays the name's), or
 * NULL with *@err: -ESTALE (that incarnation already left), -EINVAL
 * (empty name or incarnation 0), -ENOSPC (table full), -EAGAIN (the id's
 * departed incarnation is still being cleaned up: ops->busy; retry).  A
 * live member of the same name under another incarnation leaves first
 * (REPLACED), even when the new one must then wait; the same incarnation
 * again (a reconnect) keeps the member as it is.
 */
struct fkv_member *fkv_members_join(struct fkv_members *t,
				    const struct fkv_join *j, uint64_t now,
				    int *err);
/*
 * A heartbeat of member @id under @incarnation: 0, -ENOENT (no live member
 * @id) or -ESTALE (another incarnation: a late message).
 */
int fkv_members_heartbeat(struct fkv_members *t, uint32_t id,
			  uint64_t incarnation, uint64_t segment_used,
			  uint64_t now);
/* @id under @incarnation leaves for @why; 0, -ENOENT or -ESTALE. */
int fkv_members_leave(struct fkv_members *t, uint32_t id,
		      uint64_t incarnation, enum fkv_left_reason why);
/* Members whose last heartbeat is older than dead_after_ms leave. */
unsigned int fkv_members_tick(struct fkv_members *t, uint64_t now);

/* The live member @id, or NULL. */
struct fkv_member *fkv_members_live(struct fkv_members *t, uint32_t id);
/* Member @id, live or not (its name stays); NULL if the id is unused. */
const struct fkv_member *fkv_members_get(const struct fkv_members *t,
					 uint32_t id);
/* Is @incarnation the live incarnation of @id? */
bool fkv_members_is_live(const struct fkv_members *t, uint32_t id,
			 uint64_t incarnation);
size_t fkv_members_live_count(const struct fkv_members *t);

#endif /* FLUXOND_MEMBER_H */
