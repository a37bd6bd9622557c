/* SPDX-License-Identifier: GPL-2.0 */
/*
 * term.h - what a cluster master keeps across restarts: its term and the
 * nodes' fences.
 *
 * Every put_id a cluster master issues is FKV_PUT_ID(term, seq): the term
 * in the high bits, a sequence number below.  A master starting up takes
 * a term above every term it (or a master before it using the same state
 * directory) ever used and writes it down before it answers anything, so
 * every put it numbers is newer than every version any node may still
 * hold from before -- whatever order the nodes rejoin in.
 */
#ifndef FKV_TERM_H
#define FKV_TERM_H

#include <stddef.h>
#include <stdint.h>

#define FKV_TERM_SHIFT		40
/* put_ids stay below 2^63: the module keeps its largest in an atomic64_t */
#define FKV_TERM_MAX		((1ULL << (63 - FKV_TERM_SHIFT)) - 1)
#define FKV_PUT_ID(term, seq)	(((uint64_t)(term) << FKV_TERM_SHIFT) | (seq))
#define FKV_PUT_ID_TERM(id)	((uint64_t)(id) >> FKV_TERM_SHIFT)
#define FKV_TERM_FILE		"master.term"

/*
 * Start a new term in @dir (created 0750 if missing): read @dir/master.term
 * (absent = 0), take max(it, term of @seen_put_id) + 1, write it (a
 * temporary file, fsync, rename, fsync of the directory) and return it in
 * @term.  @seen_put_id is the largest put_id this node's module saw.
 * -errno with @why filled: the file is unreadable or malformed, the terms
 * are exhausted, or it cannot be written.  A master must not number puts
 * without it.
 */
int fkv_term_next(const char *dir, uint64_t seen_put_id, uint64_t *term,
		  char *why, size_t why_len);

/*
 * Fences.  When a node leaves the master (or misses a DROP_REPLICA past
 * its lease), the master goes on without it: it forgets that node's
 * copies, and an overwrite or delete returns without them.  Within one
 * term the tombstones refuse what the node kept of a version replaced
 * meanwhile (route.h); a master restarted after that knows no tombstone.
 * So before going on, the master raises the node's fence to its current
 * numbering, durably (@dir/fences: "name put_id" lines, a temporary file,
 * fsync, rename): a master of a later term adopts none of that node's kept
 * replicas at or below its fence.  It costs the cache those replicas,
 * never a version going backwards.  A fence only ever rises.
 */
#define FKV_FENCE_FILE		"fences"
#define FKV_FENCE_NAME_MAX	64	/* FKV_NODE_NAME_MAX */

struct fkv_fence {
	char name[FKV_FENCE_NAME_MAX + 1];
	uint64_t put_id;
};

struct fkv_fences {
	char *dir;
	struct fkv_fence *v;
	size_t n, cap;
};

/* Read @dir/fences (absent: none); 0 or -errno with @why filled. */
int fkv_fences_load(struct fkv_fences *f, const char *dir, char *why,
		    size_t why_len);
/*
 * Raise @name's fence to @put_id (if above) and write the file before
 * returning: 0, or -errno with @why filled (the old file stays).
 */
int fkv_fences_raise(struct fkv_fences *f, const char *name, uint64_t put_id,
		     char *why, size_t why_len);
/*
 * @name rejoined and every copy it kept at or below its fence was judged
 * (the refused ones dropped or unrouted on it, which it acknowledged):
 * the fence is lifted, on disk first, if it is still @put_id (not raised
 * again meanwhile).  0, or -errno with @why filled (the fence stays).
 */
int fkv_fences_lift(struct fkv_fences *f, const char *name, uint64_t put_id,
		    char *why, size_t why_len);
/* @name's fence; 0 if none. */
uint64_t fkv_fences_of(const struct fkv_fences *f, const char *name);
void fkv_fences_free(struct fkv_fences *f);

#endif
