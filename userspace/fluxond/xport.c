// SPDX-License-Identifier: GPL-2.0
/*
 * xport.c - the data plane interface (xport.h): configuration, the
 * completion queue and stats shared by every transport.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "xport_int.h"

static void free_cfg(struct fkv_xport_config *c)
{
	free((char *)c->listen_host);
	free((char *)c->node_name);
	free((char *)c->rdma_host);
	if (c->secret) {
		explicit_bzero((void *)c->secret, c->secret_len);
		free((void *)c->secret);
	}
}

int fkv_xport_create(struct fkv_xport **out, const struct fkv_xport_ops *ops,
		     const struct fkv_xport_config *cfg,
		     const struct fkv_seg_view *seg)
{
	struct fkv_xport *x;
	int err;

	if (!cfg->node_name || !cfg->secret || !cfg->secret_len)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->ops = ops;
	x->cfg = *cfg;
	x->cfg.listen_host = cfg->listen_host ? strdup(cfg->listen_host) : NULL;
	x->cfg.node_name = strdup(cfg->node_name);
	x->cfg.rdma_host = cfg->rdma_host ? strdup(cfg->rdma_host) : NULL;
	x->cfg.secret = malloc(cfg->secret_len);
	if (!x->cfg.io_timeout_ms)
		x->cfg.io_timeout_ms = 5000;
	if (!x->cfg.conns_per_peer)
		x->cfg.conns_per_peer = 4;
	if (!x->cfg.serve_idle_ms)
		x->cfg.serve_idle_ms = FKV_XPORT_IDLE_MS;
	if (!x->cfg.pull_threads)
		x->cfg.pull_threads = FKV_XPORT_PULL_THREADS;
	if (!x->cfg.pull_idle_ms)
		x->cfg.pull_idle_ms = FKV_XPORT_PULL_IDLE_MS;
	x->seg = *seg;
	x->done_tail = &x->done_head;
	pthread_mutex_init(&x->lock, NULL);
	x->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if ((cfg->listen_host && !x->cfg.listen_host) || !x->cfg.node_name ||
	    (cfg->rdma_host && !x->cfg.rdma_host) ||
	    !x->cfg.secret || x->efd < 0) {
		err = x->efd < 0 ? -errno : -ENOMEM;
		goto err_free;
	}
	memcpy((void *)x->cfg.secret, cfg->secret, cfg->secret_len);
	err = ops->start(x);
	if (err)
		goto err_free;
	*out = x;
	return 0;

err_free:
	if (x->efd >= 0)
		close(x->efd);
	free_cfg(&x->cfg);
	pthread_mutex_destroy(&x->lock);
	free(x);
	return err;
}

void fkv_xport_destroy(struct fkv_xport *x)
{
	if (!x)
		return;
	x->ops->stop(x);
	fkv_xport_reap(x);
	close(x->efd);
	free_cfg(&x->cfg);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

int fkv_xport_pull(struct fkv_xport *x, struct fkv_pull *p)
{
	int err;

	/* The caller's mistake, not the source's: never -EINVAL (revokes). */
	if (!p->len || p->dst_off > x->seg.size ||
	    p->len > x->seg.size - p->dst_off || !p->key_len ||
	    p->key_len > FLUXONKV_KEY_MAX || !p->done)
		return -EPROTO;
	err = x->ops->pull(x, p);
	if (!err)
		x->inflight++;
	return err;
}

int fkv_xport_place(struct fkv_xport *x, struct fkv_pull *p)
{
	int err;

	if (!p->len || p->len > FLUXONKV_VALUE_MAX || !p->key_len ||
	    p->key_len > FLUXONKV_KEY_MAX || !p->done || !x->ops->place)
		return -EPROTO;
	p->kind = FKV_XFER_PLACE;
	p->step = 1;
	p->fd = -1;
	err = x->ops->place(x, p);
	if (!err)
		x->inflight++;
	return err;
}

int fkv_xport_place_finish(struct fkv_xport *x, struct fkv_pull *p)
{
	int err;

	if (p->kind != FKV_XFER_PLACE || p->step != 1 || p->fd < 0)
		return -EPROTO;
	p->step = 2;
	err = x->ops->place_finish(x, p);
	if (!err)
		x->inflight++;
	return err;
}

void fkv_xport_complete(struct fkv_xport *x, struct fkv_pull *p, int status)
{
	uint64_t one = 1;

	p->status = status;
	p->next = NULL;
	pthread_mutex_lock(&x->lock);
	*x->done_tail = p;
	x->done_tail = &p->next;
	if (p->kind == FKV_XFER_PLACE) {
		if (status)
			x->st.place_errors++;
		else if (p->step == 2) {
			x->st.places++;
			x->st.place_bytes += p->len;
		}
	} else if (status) {
		x->st.pull_errors++;
	} else {
		x->st.pulls++;
		x->st.pull_bytes += p->len;
	}
	pthread_mutex_unlock(&x->lock);
	if (write(x->efd, &one, sizeof(one)) < 0) {
		/* The counter cannot overflow here; nothing to do. */
	}
}

void fkv_xport_count(struct fkv_xport *x, size_t field, uint64_t delta)
{
	pthread_mutex_lock(&x->lock);
	*(uint64_t *)((char *)&x->st + field) += delta;
	pthread_mutex_unlock(&x->lock);
}

unsigned int fkv_xport_reap(struct fkv_xport *x)
{
	struct fkv_pull *p, *next;
	unsigned int n = 0;
	uint64_t v;

	if (read(x->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing signalled; the list may still be empty. */
	}
	pthread_mutex_lock(&x->lock);
	p = x->done_head;
	x->done_head = NULL;
	x->done_tail = &x->done_head;
	pthread_mutex_unlock(&x->lock);
	for (; p; p = next, n++) {
		next = p->next;
		x->inflight--;
		p->done(p);
	}
	return n;
}

unsigned int fkv_xport_cancel(struct fkv_xport *x, int timeout_ms)
{
	struct timespec t0, t;

	x->ops->cancel(x);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (x->inflight) {
		struct pollfd pfd = { .fd = x->efd, .events = POLLIN };

		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms)
			break;
		poll(&pfd, 1, 50);
		fkv_xport_reap(x);
	}
	return x->inflight;
}

int fkv_xport_fd(const struct fkv_xport *x)
{
	return x->efd;
}

uint16_t fkv_xport_port(const struct fkv_xport *x)
{
	return x->port;
}

const char *fkv_xport_name(const struct fkv_xport *x)
{
	return x->ops->name;
}

void fkv_xport_get_stats(struct fkv_xport *x, struct fkv_xport_stats *st)
{
	pthread_mutex_lock(&x->lock);
	*st = x->st;
	pthread_mutex_unlock(&x->lock);
}
