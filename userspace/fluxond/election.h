/* SPDX-License-Identifier: GPL-2.0 */
/*
 * election.h - the master election on etcd (issue 32).
 *
 * Keys under the prefix (cluster.etcd.prefix, default /fluxonkv/<cluster>):
 *	<prefix>/leader	"<name> <control host:port>", created by the
 *			winner under its etcd lease (a txn on
 *			create_revision == 0): it goes when the lease does
 *	<prefix>/candidates/<name>
 *			"<name> <control host:port>" of every campaigning
 *			candidate, under its etcd lease (gone with it)
 *	<prefix>/term	the last master term, decimal; each new leader
 *			raises it by compare-and-swap, guarded by its
 *			leader key's create_revision (a deposed leader's
 *			raise fails)
 *
 * The election is driven by fkv_election_step(), called from one thread
 * (fluxond's election thread, the unit test); each step is a few etcd
 * calls, each bounded by the etcd handle's timeout.
 *
 * Safety: a leader keeps its lease alive every ttl/3 and counts it held
 * only until ttl - ttl/4 after the *send* of its last successful
 * keepalive; past that it steps down on its own (FKV_ELECT_LOST), before
 * etcd can have expired the lease and let another candidate win, so two
 * leaders never overlap as long as the clocks' rates agree.
 */
#ifndef FKV_ELECTION_H
#define FKV_ELECTION_H

#include <stdbool.h>
#include <stdint.h>

#include "etcd.h"

#define FKV_ELECT_NAME_BUF	64
#define FKV_ELECT_ADDR_BUF	272
#define FKV_ELECT_KEY_BUF	320

struct fkv_election_opts {
	const char *prefix;	/* no trailing '/' */
	const char *name;	/* this fluxond's node name */
	const char *addr;	/* its control listener "host:port" */
	unsigned int ttl_ms;	/* >= 1000: etcd's TTL is seconds, rounded up */
	bool candidate;		/* campaigns; else only reads the leader */
};

/* The leader as read from etcd. */
struct fkv_leader {
	bool present;
	char name[FKV_ELECT_NAME_BUF];
	char addr[FKV_ELECT_ADDR_BUF];
	int64_t rev;		/* the leader key's create_revision */
	int64_t lease;
};

enum fkv_elect_event {
	FKV_ELECT_NONE = 0,	/* nothing changed */
	FKV_ELECT_WON,		/* this candidate is now the leader */
	FKV_ELECT_LOST,		/* this leader stepped down (lease lost) */
	FKV_ELECT_CHANGED,	/* another leader, or none any more */
};

struct fkv_election_stats {
	uint64_t campaigns;	/* create attempts */
	uint64_t won;		/* elections won */
	uint64_t stepdowns;	/* leadership lost */
	uint64_t leader_changes;	/* leader seen to change (any) */
	uint64_t etcd_errors;	/* failed steps */
	uint64_t keepalives;
};

struct fkv_election;

/* 0 and *@out, or -EINVAL / -ENOMEM with a line in @err.  Keeps @e. */
int fkv_election_create(struct fkv_election **out, struct fkv_etcd *e,
			const struct fkv_election_opts *o, char *err,
			size_t errlen);
/* Resigns if leader (its key deleted, its lease revoked), then frees. */
void fkv_election_destroy(struct fkv_election *el);

/*
 * One round at @now_ms (monotonic): a leader keeps its lease alive when
 * due and steps down if it cannot; a follower reads the leader and, if a
 * candidate and there is none, campaigns.  *@ev says what changed; the
 * current leader (possibly this one) is in @leader.  0, or a negative
 * errno from etcd (*@ev still valid: a leader may have stepped down).
 */
int fkv_election_step(struct fkv_election *el, uint64_t now_ms,
		      enum fkv_elect_event *ev, struct fkv_leader *leader);

bool fkv_election_is_leader(const struct fkv_election *el);
/*
 * Leader: the monotonic ms until which its lease counts as held (3/4 TTL
 * after the send of its last good keepalive); 0 when not the leader.
 */
uint64_t fkv_election_held_until(const struct fkv_election *el);

/*
 * Leader only: raise <prefix>/term to max(etcd's + 1, @floor) by CAS
 * guarded by this leadership, and return it in *@term.  -EPERM: not (or
 * no longer) the leader; -EPROTO: the key is not a number.
 */
int fkv_election_raise_term(struct fkv_election *el, uint64_t floor,
			    uint64_t *term);
/* <prefix>/term as etcd has it (0 when absent). */
int fkv_election_read_term(struct fkv_election *el, uint64_t *term);

/*
 * Take over a leadership this process held before an exec: @lease and
 * the leader key's @rev.  0 if etcd still has both as ours (keepalive
 * sent), -ESTALE if not (a follower then).
 */
int fkv_election_resume(struct fkv_election *el, int64_t lease, int64_t rev,
			uint64_t now_ms);
/*
 * Leader: keep the lease alive now, whatever the schedule (before an
 * exec).  0, or the keepalive's error (the schedule's hold is unchanged).
 */
int fkv_election_refresh(struct fkv_election *el, uint64_t now_ms);
/* The lease and leader key revision to pass across an exec (leader). */
void fkv_election_handle(const struct fkv_election *el, int64_t *lease,
			 int64_t *rev);

/*
 * Fences in etcd (term.h's, for the next leader wherever it runs):
 * <prefix>/fences/<name> = put_id in hex.  Raise @name's to @put_id if
 * above, by CAS guarded by this leadership: 0, -EPERM (not the leader),
 * -errno.  Load: @fn for each fence etcd holds.
 */
int fkv_election_fence_raise(struct fkv_election *el, const char *name,
			     uint64_t put_id);
/*
 * Lift @name's fence if it is still @put_id (a rejoined node's copies
 * judged, term.h fkv_fences_lift): 0, -EAGAIN (it moved meanwhile: the
 * fence stays), -EPERM, -errno.
 */
int fkv_election_fence_lift(struct fkv_election *el, const char *name,
			    uint64_t put_id);
/*
 * @fn for every candidate etcd lists (<prefix>/candidates/: those whose
 * lease lives), in key order; 0 or -errno (etcd, or @fn's).
 */
int fkv_election_candidates(struct fkv_election *el,
			    int (*fn)(void *arg, const char *name,
				      const char *addr),
			    void *arg);
int fkv_election_fences_load(struct fkv_election *el,
			     int (*fn)(void *arg, const char *name,
				       uint64_t put_id),
			     void *arg);

/* Resign now: delete the leader key (if ours) and revoke the lease. */
void fkv_election_resign(struct fkv_election *el);

void fkv_election_get_stats(const struct fkv_election *el,
			    struct fkv_election_stats *st);

/* "<name> <addr>" -> @l; -EPROTO if malformed. */
int fkv_leader_parse(const char *v, size_t len, struct fkv_leader *l);

#endif
