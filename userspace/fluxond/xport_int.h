/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xport_int.h - what transport implementations share (xport.c): the
 * completion queue back to the caller's thread, stats, configuration.
 */
#ifndef FLUXOND_XPORT_INT_H
#define FLUXOND_XPORT_INT_H

#include <pthread.h>

#include "xport.h"

struct fkv_xport {
	const struct fkv_xport_ops *ops;
	struct fkv_xport_config cfg;	/* strings and secret owned */
	struct fkv_seg_view seg;
	int efd;			/* eventfd: completions ready */
	pthread_mutex_t lock;		/* protects done list and st */
	struct fkv_pull *done_head, **done_tail;
	struct fkv_xport_stats st;
	unsigned int inflight;		/* queued, done() not run yet (caller) */
	uint16_t port;			/* bound listener port */
	void *priv;			/* the implementation's */
};

/* From any thread: @p is over with @status. */
void fkv_xport_complete(struct fkv_xport *x, struct fkv_pull *p, int status);
/* Add @delta to the counter at @field (offsetof in fkv_xport_stats). */
void fkv_xport_count(struct fkv_xport *x, size_t field, uint64_t delta);
#define FKV_XCOUNT(x, f, d) \
	fkv_xport_count(x, offsetof(struct fkv_xport_stats, f), d)

#endif /* FLUXOND_XPORT_INT_H */
