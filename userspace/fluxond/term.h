/* SPDX-License-Identifier: GPL-2.0 */
/*
 * term.h - the master's term: the one piece of state a cluster master
 * keeps across restarts.
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

#endif
