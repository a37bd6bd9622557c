// SPDX-License-Identifier: GPL-2.0
/*
 * xport_rdma.c - the RDMA data path (xport_rdma.h), on librdmacm and
 * libibverbs.
 *
 * One device per node: the one that carries the advertised address (a
 * cm_id bound to it tells which).  One protection domain, one memory
 * region over the whole segment mapping with IBV_ACCESS_LOCAL_WRITE (READs
 * land in our targets) and IBV_ACCESS_MW_BIND but no remote access: its
 * own rkey opens nothing.  Registered once at start; the daemon's exit
 * deregisters it (the kernel drops a dead process's verbs objects), so
 * nothing stays registered past the daemon.
 *
 * Source side: a listening cm_id and a thread for its events.  A
 * connection request is accepted only with a ticket handed out (once) on
 * an authenticated TCP connection.  Its QP gets FKV_RDMA_WINDOWS type 2
 * memory windows: to let the peer READ a pinned replica or a staged chunk
 * the serving thread binds one over exactly that range (remote read) on
 * that QP — a type 2 window works for its own QP only — and invalidates
 * it when the peer RELEASEs the range.  Device removal (DEVICE_REMOVAL,
 * e.g. `rdma link delete`) tears everything down, requester connections
 * included, so that the device can go; the transport is TCP from then on.
 *
 * Requester side: one RC QP per TCP connection, connected synchronously
 * (address and route resolution, connect, each with the socket timeout)
 * on the connection's own event channel; its CQ has a completion channel
 * so that waiting for a READ sleeps (busy polling would starve Soft-RoCE,
 * which runs in the kernel, on a small machine).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "auth.h"
#include "log.h"
#include "xport_rdma.h"

/* A ticket nobody connected with is forgotten after this. */
#define FKV_RDMA_TICKET_MS	30000

struct offer {
	struct offer *next;
	uint8_t ticket[FKV_RDMA_TICKET_LEN];
	bool used;			/* a connection came with it */
	bool ended;			/* its TCP connection is gone */
	uint64_t deadline_ms;
	/*
	 * Protects the verbs objects below: the serving thread binds and
	 * invalidates windows while the event thread may tear them down.
	 */
	pthread_mutex_t lock;
	struct rdma_cm_id *id;		/* the accepted connection, or NULL */
	struct ibv_comp_channel *cch;	/* binds and invalidations complete */
	struct ibv_cq *cq;
	struct ibv_mw *mw[FKV_RDMA_WINDOWS];
	bool bound[FKV_RDMA_WINDOWS];
	/*
	 * A bind or invalidation failed or timed out: the QP is in error
	 * (nothing is readable through it), no more windows are bound.
	 */
	bool broken;
	uint64_t next_wr;		/* wr_id of the next bind / inval */
};

struct fkv_rdma_conn {
	struct fkv_rdma_conn *next;	/* on fkv_rdma.conns */
	struct fkv_rdma *r;
	pthread_mutex_t lock;		/* protects the verbs objects below
					 * against a teardown (device gone) */
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	unsigned int inflight;
	bool ok;
};

struct fkv_rdma {
	struct rdma_event_channel *ech;	/* the listener's and dev_id's */
	struct rdma_cm_id *dev_id;	/* bound to our address: the device */
	struct rdma_cm_id *listen_id;
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *base;
	uint64_t size;
	unsigned int timeout_ms;
	char devname[64];
	int efd;			/* wakes the event thread to stop */
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;		/* protects offers, conns, dead */
	struct offer *offers;
	struct fkv_rdma_conn *conns;
	bool dead;			/* the device is gone (or failed) */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int resolve(const char *host, uint16_t port, bool passive,
		   struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : 0 };
	char p[8];

	snprintf(p, sizeof(p), "%u", port);
	return getaddrinfo(host, p, &hints, res) ? -EHOSTUNREACH : 0;
}

/*
 * The next event on @ech within @timeout_ms that is one of @want (or an
 * error event): 0 with *@ev (ack it), -ETIMEDOUT, -errno.
 */
static int wait_event(struct rdma_event_channel *ech, unsigned int timeout_ms,
		      struct rdma_cm_event **ev)
{
	uint64_t deadline = mono_ms() + timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = ech->fd, .events = POLLIN };
		uint64_t now = mono_ms();
		int n;

		if (!rdma_get_cm_event(ech, ev))
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(deadline - now));
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ? -errno : 0;
}

/* The QP of @id to the error state: flushes what is posted.  Any lock. */
static void qp_to_error(struct rdma_cm_id *id)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (id && id->qp)
		ibv_modify_qp(id->qp, &attr, IBV_QP_STATE);
}

/* ---- teardown (device gone, or close) ---- */

static void conn_release(struct fkv_rdma_conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->cch)
		ibv_destroy_comp_channel(c->cch);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ech)
		rdma_destroy_event_channel(c->ech);
	c->id = NULL;
	c->cq = NULL;
	c->cch = NULL;
	c->ech = NULL;
	c->ok = false;
	c->inflight = 0;
}

/*
 * Free @o's verbs objects; @destroy_id: its cm_id too (else the caller
 * destroys it after acking its event).  Takes o->lock.
 */
static struct rdma_cm_id *offer_release(struct offer *o, bool destroy_id)
{
	struct rdma_cm_id *id;
	unsigned int i;

	pthread_mutex_lock(&o->lock);
	id = o->id;
	if (id) {
		/* The requester's QP goes to error: its READs fail at once. */
		rdma_disconnect(id);
		if (id->qp)
			rdma_destroy_qp(id);
	}
	for (i = 0; i < FKV_RDMA_WINDOWS; i++) {
		if (o->mw[i])
			ibv_dealloc_mw(o->mw[i]);
		o->mw[i] = NULL;
		o->bound[i] = false;
	}
	if (o->cq)
		ibv_destroy_cq(o->cq);
	if (o->cch)
		ibv_destroy_comp_channel(o->cch);
	o->cq = NULL;
	o->cch = NULL;
	o->id = NULL;
	pthread_mutex_unlock(&o->lock);
	if (id && destroy_id) {
		rdma_destroy_id(id);
		id = NULL;
	}
	return id;
}

static void offer_free(struct offer *o)
{
	pthread_mutex_destroy(&o->lock);
	free(o);
}

/* Give every verbs object of the device back.  Event thread or close. */
static void teardown(struct fkv_rdma *r)
{
	struct ibv_context **devs;
	struct fkv_rdma_conn *c;
	struct offer *o;

	pthread_mutex_lock(&r->lock);
	r->dead = true;
	for (o = r->offers; o; o = o->next)
		offer_release(o, true);
	for (c = r->conns; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		conn_release(c);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&r->lock);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->listen_id)
		rdma_destroy_id(r->listen_id);
	if (r->dev_id)
		rdma_destroy_id(r->dev_id);
	r->mr = NULL;
	r->pd = NULL;
	r->listen_id = NULL;
	r->dev_id = NULL;
	/*
	 * librdmacm closes its own context of a device that went away the
	 * next time it looks at the device list, once nothing of ours uses
	 * it: until then a driver without disassociation (rxe) cannot finish
	 * removing the device.  (It looks only while some device is left:
	 * the last one stays open until the process exits.)
	 */
	devs = rdma_get_devices(NULL);
	if (devs)
		rdma_free_devices(devs);
}

/* ---- source side: the listener's events ---- */

static struct offer *offer_of_ticket(struct fkv_rdma *r,
				     const uint8_t ticket[FKV_RDMA_TICKET_LEN])
{
	struct offer *o;

	for (o = r->offers; o; o = o->next)
		if (!memcmp(o->ticket, ticket, FKV_RDMA_TICKET_LEN))
			return o;
	return NULL;
}

static struct offer *offer_of_id(struct fkv_rdma *r, struct rdma_cm_id *id)
{
	struct offer *o;

	for (o = r->offers; o; o = o->next)
		if (o->id == id)
			return o;
	return NULL;
}

/* Drop offers that ended (and have no connection) or were never used. */
static void offers_reap(struct fkv_rdma *r, uint64_t now)
{
	struct offer **pp, *o;

	pthread_mutex_lock(&r->lock);
	for (pp = &r->offers; (o = *pp);) {
		/*
		 * Freed only once its TCP connection ended (its serving
		 * thread may be using it until then); a ticket nobody used
		 * in time just stops being good.
		 */
		if (o->ended && !o->id) {
			*pp = o->next;
			offer_free(o);
			continue;
		}
		if (!o->used && now > o->deadline_ms)
			o->used = true;
		pp = &o->next;
	}
	pthread_mutex_unlock(&r->lock);
}

/*
 * The verbs objects of @o's accepted connection @id: a CQ for its binds
 * and invalidations, the QP, the windows.  0 or -errno (all undone).
 */
static int offer_setup(struct fkv_rdma *r, struct offer *o,
		       struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 2 * FKV_RDMA_WINDOWS, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	unsigned int i;
	int err = 0;

	pthread_mutex_lock(&o->lock);
	o->cch = ibv_create_comp_channel(r->verbs);
	if (!o->cch || nonblock(o->cch->fd))
		goto fail;
	o->cq = ibv_create_cq(r->verbs, 2 * FKV_RDMA_WINDOWS, o, o->cch, 0);
	if (!o->cq || ibv_req_notify_cq(o->cq, 0))
		goto fail;
	qa.send_cq = qa.recv_cq = o->cq;
	if (rdma_create_qp(id, r->pd, &qa))
		goto fail;
	for (i = 0; i < FKV_RDMA_WINDOWS; i++) {
		o->mw[i] = ibv_alloc_mw(r->pd, IBV_MW_TYPE_2);
		if (!o->mw[i])
			goto fail;
	}
	o->id = id;
	pthread_mutex_unlock(&o->lock);
	return 0;

fail:
	err = errno ? -errno : -ENOMEM;
	o->id = id;	/* so that the release destroys its QP */
	pthread_mutex_unlock(&o->lock);
	offer_release(o, false);
	return err;
}

/* A connection request: accepted only with an unused ticket. */
static void on_request(struct fkv_rdma *r, struct rdma_cm_event *ev,
		       struct rdma_cm_id **reject)
{
	struct rdma_conn_param param = { .responder_resources = FKV_RDMA_DEPTH,
					 .initiator_depth = 0,
					 .rnr_retry_count = 7 };
	const struct rdma_conn_param *cp = &ev->param.conn;
	struct offer *o = NULL;
	int err;

	*reject = ev->id;
	pthread_mutex_lock(&r->lock);
	if (!r->dead && ev->id->verbs == r->verbs &&
	    cp->private_data_len >= FKV_RDMA_TICKET_LEN)
		for (o = r->offers; o; o = o->next)
			if (!o->used && !o->ended &&
			    !memcmp(o->ticket, cp->private_data,
				    FKV_RDMA_TICKET_LEN))
				break;
	if (o) {
		o->used = true;
		err = offer_setup(r, o, ev->id);
		if (!err && rdma_accept(ev->id, &param))
			err = -errno;
		if (err) {
			fkv_warn("rdma: accepting a connection: %s%s",
				 strerror(-err), err == -EOPNOTSUPP ||
				 err == -ENOSYS ? " (no memory windows on "
				 "this device?)" : "");
			if (o->cq)	/* else offer_setup undid itself */
				offer_release(o, false);
		} else {
			*reject = NULL;
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (*reject && !o)
		fkv_warn("rdma: a connection without a valid ticket: refused");
	if (*reject)
		rdma_reject(ev->id, NULL, 0);
}

static void handle_event(struct fkv_rdma *r, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *destroy = NULL;
	bool removal = false;
	struct offer *o;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		on_request(r, ev, &destroy);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		pthread_mutex_lock(&r->lock);
		o = offer_of_id(r, ev->id);
		if (o)
			destroy = offer_release(o, false);
		pthread_mutex_unlock(&r->lock);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		removal = true;
		break;
	default:
		break;
	}
	rdma_ack_cm_event(ev);
	if (destroy)
		rdma_destroy_id(destroy);
	if (removal && !r->dead) {
		fkv_warn("rdma: device %s removed: the data plane is TCP from now on",
			 r->devname);
		teardown(r);
	}
}

static void *event_thread(void *arg)
{
	struct fkv_rdma *r = arg;

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = r->ech->fd, .events = POLLIN },
			{ .fd = r->efd, .events = POLLIN },
		};
		struct rdma_cm_event *ev;

		if (poll(pfd, 2, 1000) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		while (!rdma_get_cm_event(r->ech, &ev))
			handle_event(r, ev);
		offers_reap(r, mono_ms());
	}
	return NULL;
}

int fkv_rdma_open(struct fkv_rdma **out, const char *host,
		  const char *listen_host, uint16_t port, void *base,
		  uint64_t size, unsigned int timeout_ms)
{
	struct fkv_rdma *r = calloc(1, sizeof(*r));
	struct addrinfo *ai = NULL;
	int err;

	if (!r)
		return -ENOMEM;
	r->base = base;
	r->size = size;
	r->timeout_ms = timeout_ms;
	r->efd = -1;
	pthread_mutex_init(&r->lock, NULL);
	r->ech = rdma_create_event_channel();
	if (!r->ech) {
		err = errno == ENODEV || errno == ENOENT ? -ENODEV : -errno;
		fkv_info("rdma: no RDMA connection manager (/dev/infiniband/"
			 "rdma_cm: modprobe rdma_ucm?): %s", strerror(-err));
		goto fail;
	}
	err = nonblock(r->ech->fd);
	if (err)
		goto fail;
	/* The device that carries our address. */
	err = resolve(host, 0, false, &ai);
	if (err)
		goto fail;
	if (rdma_create_id(r->ech, &r->dev_id, r, RDMA_PS_TCP) ||
	    rdma_bind_addr(r->dev_id, ai->ai_addr)) {
		err = -errno;
		fkv_info("rdma: binding to %s: %s", host, strerror(-err));
		goto fail;
	}
	freeaddrinfo(ai);
	ai = NULL;
	r->verbs = r->dev_id->verbs;
	if (!r->verbs) {
		err = -ENODEV;
		fkv_info("rdma: no RDMA device carries %s", host);
		goto fail;
	}
	snprintf(r->devname, sizeof(r->devname), "%s",
		 ibv_get_device_name(r->verbs->device));
	r->pd = ibv_alloc_pd(r->verbs);
	if (!r->pd) {
		err = -errno;
		goto fail;
	}
	/* No remote access: peers read only through windows (expose). */
	r->mr = ibv_reg_mr(r->pd, base, size, IBV_ACCESS_LOCAL_WRITE |
					     IBV_ACCESS_MW_BIND);
	if (!r->mr) {
		err = -errno;
		fkv_err("rdma: registering the %llu MiB segment on %s: %s "
			"(RLIMIT_MEMLOCK? run as root or raise LimitMEMLOCK)",
			(unsigned long long)(size >> 20), r->devname,
			strerror(-err));
		goto fail;
	}
	err = resolve(listen_host, port, true, &ai);
	if (err)
		goto fail;
	if (rdma_create_id(r->ech, &r->listen_id, r, RDMA_PS_TCP) ||
	    rdma_bind_addr(r->listen_id, ai->ai_addr) ||
	    rdma_listen(r->listen_id, 64)) {
		err = -errno;
		goto fail;
	}
	freeaddrinfo(ai);
	ai = NULL;
	r->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->efd < 0 || pthread_create(&r->thread, NULL, event_thread, r)) {
		err = r->efd < 0 ? -errno : -EAGAIN;
		goto fail;
	}
	r->thread_started = true;
	*out = r;
	return 0;

fail:
	if (ai)
		freeaddrinfo(ai);
	fkv_rdma_close(r);
	return err;
}

void fkv_rdma_close(struct fkv_rdma *r)
{
	uint64_t one = 1;

	if (!r)
		return;
	if (r->thread_started) {
		if (write(r->efd, &one, sizeof(one)) < 0)
			fkv_warn("rdma: cannot stop the event thread: %m");
		pthread_join(r->thread, NULL);
	}
	if (!r->dead)
		teardown(r);
	while (r->offers) {
		struct offer *o = r->offers;

		r->offers = o->next;
		offer_free(o);
	}
	if (r->ech)
		rdma_destroy_event_channel(r->ech);
	if (r->efd >= 0)
		close(r->efd);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

const char *fkv_rdma_device(const struct fkv_rdma *r)
{
	return r->devname;
}

bool fkv_rdma_usable(const struct fkv_rdma *r)
{
	return !__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE);
}

int fkv_rdma_offer(struct fkv_rdma *r, uint8_t ticket[FKV_RDMA_TICKET_LEN])
{
	struct offer *o = calloc(1, sizeof(*o));
	int err;

	if (!o)
		return -ENOMEM;
	pthread_mutex_init(&o->lock, NULL);
	err = fkv_auth_random(o->ticket, sizeof(o->ticket));
	if (err) {
		offer_free(o);
		return err;
	}
	o->deadline_ms = mono_ms() + FKV_RDMA_TICKET_MS;
	pthread_mutex_lock(&r->lock);
	if (r->dead) {
		pthread_mutex_unlock(&r->lock);
		offer_free(o);
		return -ENODEV;
	}
	o->next = r->offers;
	r->offers = o;
	pthread_mutex_unlock(&r->lock);
	memcpy(ticket, o->ticket, FKV_RDMA_TICKET_LEN);
	return 0;
}

void fkv_rdma_offer_end(struct fkv_rdma *r,
			const uint8_t ticket[FKV_RDMA_TICKET_LEN])
{
	struct offer *o;

	pthread_mutex_lock(&r->lock);
	o = offer_of_ticket(r, ticket);
	if (o) {
		o->ended = true;
		/* The event thread frees it once disconnected. */
		pthread_mutex_lock(&o->lock);
		if (o->id)
			rdma_disconnect(o->id);
		pthread_mutex_unlock(&o->lock);
	}
	pthread_mutex_unlock(&r->lock);
}

/*
 * The next completion on @cq within @timeout_ms: 0 with @wc, -ETIMEDOUT,
 * -EIO.  The CQ must be armed (ibv_req_notify_cq); it is re-armed here.
 */
static int cq_wait(struct ibv_cq *cq, struct ibv_comp_channel *cch,
		   int timeout_ms, struct ibv_wc *wc)
{
	uint64_t deadline = mono_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = cch->fd, .events = POLLIN };
		struct ibv_cq *ecq;
		uint64_t now;
		void *ctx;
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -EIO;
		if (n == 1)
			return 0;
		now = mono_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)(deadline - now)) > 0 &&
		    !ibv_get_cq_event(cch, &ecq, &ctx)) {
			ibv_ack_cq_events(ecq, 1);
			ibv_req_notify_cq(ecq, 0);
		}
	}
}

/*
 * Post @wr (signalled) on @o's QP and wait for its own completion: 0 or
 * -errno.  Any failure, timeout or stray completion breaks the QP (error
 * state): a window whose bind or invalidation is not known to have gone
 * as asked must not stay reachable.  o->lock held.
 */
static int offer_post_wait(struct fkv_rdma *r, struct offer *o,
			   struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int err;

	if (o->broken)
		return -EIO;
	wr->wr_id = ++o->next_wr;
	wr->send_flags = IBV_SEND_SIGNALED;
	err = ibv_post_send(o->id->qp, wr, &bad);
	if (err)
		err = -err;
	else
		err = cq_wait(o->cq, o->cch, (int)r->timeout_ms, &wc);
	if (!err && (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr->wr_id)) {
		fkv_info("rdma: %s failed: %s",
			 wr->opcode == IBV_WR_BIND_MW ? "binding a window" :
			 "invalidating a window", ibv_wc_status_str(wc.status));
		err = -EIO;
	}
	if (err) {
		qp_to_error(o->id);
		o->broken = true;
	}
	return err;
}

int fkv_rdma_expose(struct fkv_rdma *r,
		    const uint8_t ticket[FKV_RDMA_TICKET_LEN], uint64_t off,
		    uint64_t len, uint64_t *addr, uint32_t *rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };
	struct offer *o;
	unsigned int i;
	int err = -ENOTCONN;

	if (off > r->size || !len || len > r->size - off)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	o = r->dead ? NULL : offer_of_ticket(r, ticket);
	if (o)
		pthread_mutex_lock(&o->lock);
	pthread_mutex_unlock(&r->lock);
	if (!o)
		return err;
	/* The serving thread of this connection is the only binder. */
	for (i = 0; o->id && !o->broken && i < FKV_RDMA_WINDOWS && o->bound[i];
	     i++)
		;
	if (o->broken)
		err = -EIO;
	if (o->id && !o->broken && i == FKV_RDMA_WINDOWS)
		err = -EBUSY;
	if (o->id && !o->broken && i < FKV_RDMA_WINDOWS) {
		wr.wr_id = i;
		wr.bind_mw.mw = o->mw[i];
		wr.bind_mw.rkey = ibv_inc_rkey(o->mw[i]->rkey);
		wr.bind_mw.bind_info.mr = r->mr;
		wr.bind_mw.bind_info.addr = (uintptr_t)(r->base + off);
		wr.bind_mw.bind_info.length = len;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
		err = offer_post_wait(r, o, &wr);
		if (!err) {
			o->mw[i]->rkey = wr.bind_mw.rkey;
			o->bound[i] = true;
			*addr = wr.bind_mw.bind_info.addr;
			*rkey = wr.bind_mw.rkey;
		}
	}
	pthread_mutex_unlock(&o->lock);
	return err;
}

void fkv_rdma_unexpose(struct fkv_rdma *r,
		       const uint8_t ticket[FKV_RDMA_TICKET_LEN], uint32_t rkey)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV,
				  .invalidate_rkey = rkey };
	struct offer *o;
	unsigned int i;

	pthread_mutex_lock(&r->lock);
	o = offer_of_ticket(r, ticket);
	if (o)
		pthread_mutex_lock(&o->lock);
	pthread_mutex_unlock(&r->lock);
	if (!o)
		return;
	for (i = 0; i < FKV_RDMA_WINDOWS; i++) {
		if (!o->id || !o->bound[i] || o->mw[i]->rkey != rkey)
			continue;
		/* Failed: the QP is now in error, nothing reads through it. */
		if (offer_post_wait(r, o, &wr))
			fkv_info("rdma: window %#x not invalidated: its "
				 "connection is shut", rkey);
		o->bound[i] = false;
		break;
	}
	pthread_mutex_unlock(&o->lock);
}

/* ---- requester side ---- */

/* Wait for @want on @c's channel: 0, or -errno (another event: refused). */
static int conn_step(struct fkv_rdma_conn *c, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	int err, got;

	err = wait_event(c->ech, c->r->timeout_ms, &ev);
	if (err)
		return err;
	got = ev->event;
	err = ev->status;
	rdma_ack_cm_event(ev);
	if (got == (int)want)
		return 0;
	if (got == RDMA_CM_EVENT_REJECTED)
		return -ECONNREFUSED;
	return err < 0 ? err : -EHOSTUNREACH;
}

int fkv_rdma_connect(struct fkv_rdma *r, const char *host, uint16_t port,
		     const uint8_t ticket[FKV_RDMA_TICKET_LEN],
		     struct fkv_rdma_conn **out)
{
	struct rdma_conn_param param = { .private_data = ticket,
					 .private_data_len = FKV_RDMA_TICKET_LEN,
					 .initiator_depth = FKV_RDMA_DEPTH,
					 .responder_resources = 0,
					 .retry_count = 7,
					 .rnr_retry_count = 7 };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 2 * FKV_RDMA_DEPTH, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct fkv_rdma_conn *c;
	struct addrinfo *ai;
	int err;

	if (!fkv_rdma_usable(r))
		return -ENODEV;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->r = r;
	pthread_mutex_init(&c->lock, NULL);
	err = resolve(host, port, false, &ai);
	if (err)
		goto fail;
	c->ech = rdma_create_event_channel();
	if (!c->ech || nonblock(c->ech->fd) ||
	    rdma_create_id(c->ech, &c->id, c, RDMA_PS_TCP) ||
	    rdma_resolve_addr(c->id, NULL, ai->ai_addr, (int)r->timeout_ms)) {
		err = -errno;
		freeaddrinfo(ai);
		goto fail;
	}
	freeaddrinfo(ai);
	err = conn_step(c, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!err && c->id->verbs != r->verbs)
		err = -ENODEV;	/* another device than our region's */
	if (!err && rdma_resolve_route(c->id, (int)r->timeout_ms))
		err = -errno;
	if (!err)
		err = conn_step(c, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (err)
		goto fail;
	c->cch = ibv_create_comp_channel(r->verbs);
	if (c->cch && nonblock(c->cch->fd))
		goto fail_errno;
	c->cq = c->cch ? ibv_create_cq(r->verbs, 2 * FKV_RDMA_DEPTH, c,
				       c->cch, 0) : NULL;
	if (!c->cq || ibv_req_notify_cq(c->cq, 0))
		goto fail_errno;
	qa.send_cq = qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, r->pd, &qa) || rdma_connect(c->id, &param))
		goto fail_errno;
	err = conn_step(c, RDMA_CM_EVENT_ESTABLISHED);
	if (err)
		goto fail;
	c->ok = true;
	pthread_mutex_lock(&r->lock);
	if (r->dead) {
		pthread_mutex_unlock(&r->lock);
		err = -ENODEV;
		goto fail;
	}
	c->next = r->conns;
	r->conns = c;
	pthread_mutex_unlock(&r->lock);
	*out = c;
	return 0;

fail_errno:
	err = errno ? -errno : -ENOMEM;
fail:
	conn_release(c);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return err;
}

void fkv_rdma_disconnect(struct fkv_rdma_conn *c)
{
	struct fkv_rdma *r;
	struct fkv_rdma_conn **pp;

	if (!c)
		return;
	r = c->r;
	pthread_mutex_lock(&r->lock);
	for (pp = &r->conns; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
	pthread_mutex_unlock(&r->lock);
	pthread_mutex_lock(&c->lock);
	if (c->id)
		rdma_disconnect(c->id);
	conn_release(c);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void fkv_rdma_conn_abort(struct fkv_rdma_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	qp_to_error(c->id);
	c->ok = false;
	pthread_mutex_unlock(&c->lock);
}

void fkv_rdma_conn_fail(struct fkv_rdma_conn *c)
{
	uint64_t tag;

	fkv_rdma_conn_abort(c);
	/* Flushed completions come at once; a torn-down CQ ends it too. */
	while (c && c->cq && c->inflight &&
	       fkv_rdma_reap(c, (int)c->r->timeout_ms, &tag) != -ETIMEDOUT)
		;
}

bool fkv_rdma_conn_ok(const struct fkv_rdma_conn *c)
{
	return c && c->ok && fkv_rdma_usable(c->r);
}

unsigned int fkv_rdma_inflight(const struct fkv_rdma_conn *c)
{
	return c->inflight;
}

/*
 * Post the READ list @wr (its @n sges get the MR's lkey) on @c: one more
 * in flight.  @alone: only when nothing else is.  -EBUSY when full,
 * -ENOTCONN once the connection failed; a failed post marks it failed.
 */
static int rdma_post(struct fkv_rdma_conn *c, struct ibv_send_wr *wr,
		     struct ibv_sge *sge, unsigned int n, bool alone)
{
	struct ibv_send_wr *bad;
	unsigned int i;
	int err = 0;

	pthread_mutex_lock(&c->lock);
	if (!c->ok || !c->id ||
	    (alone ? c->inflight > 0 : c->inflight >= FKV_RDMA_DEPTH)) {
		err = c->ok ? -EBUSY : -ENOTCONN;
		goto out;
	}
	for (i = 0; i < n; i++)
		sge[i].lkey = c->r->mr->lkey;
	err = ibv_post_send(c->id->qp, wr, &bad);
	if (err) {
		err = -err;
		c->ok = false;
	} else {
		c->inflight++;
	}
out:
	pthread_mutex_unlock(&c->lock);
	return err;
}

int fkv_rdma_read(struct fkv_rdma_conn *c, uint64_t tag, uint64_t loff,
		  uint64_t raddr, uint32_t rkey, uint64_t len)
{
	struct fkv_rdma *r = c->r;
	struct ibv_send_wr wr = { .wr_id = tag, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_sge sge;

	if (loff > r->size || len > r->size - loff || !len || len > UINT32_MAX)
		return -EINVAL;
	sge.addr = (uintptr_t)(r->base + loff);
	sge.length = (uint32_t)len;
	wr.sg_list = &sge;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return rdma_post(c, &wr, &sge, 1, false);
}

int fkv_rdma_read_range(struct fkv_rdma_conn *c, uint64_t tag, uint64_t loff,
			uint64_t raddr, uint32_t rkey, uint64_t len,
			uint64_t piece)
{
	struct ibv_send_wr wr[FKV_RDMA_DEPTH];
	struct ibv_sge sge[FKV_RDMA_DEPTH];
	struct fkv_rdma *r = c->r;
	unsigned int i, n;
	uint64_t off;

	if (!len || !piece || piece > UINT32_MAX || loff > r->size ||
	    len > r->size - loff || (len + piece - 1) / piece > FKV_RDMA_DEPTH)
		return -EINVAL;
	n = (unsigned int)((len + piece - 1) / piece);
	memset(wr, 0, sizeof(wr));
	for (i = 0, off = 0; i < n; i++, off += piece) {
		uint64_t l = len - off < piece ? len - off : piece;

		sge[i].addr = (uintptr_t)(r->base + loff + off);
		sge[i].length = (uint32_t)l;
		wr[i].wr_id = tag;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].wr.rdma.remote_addr = raddr + off;
		wr[i].wr.rdma.rkey = rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	wr[n - 1].send_flags = IBV_SEND_SIGNALED;
	/* One list at a time: its unsignalled READs hold send queue slots. */
	return rdma_post(c, wr, sge, n, true);
}

int fkv_rdma_reap(struct fkv_rdma_conn *c, int timeout_ms, uint64_t *tag)
{
	uint64_t deadline = mono_ms() + (uint64_t)timeout_ms;
	int err = -ETIMEDOUT;

	pthread_mutex_lock(&c->lock);
	while (c->cq && c->inflight) {
		struct pollfd pfd = { .fd = c->cch->fd, .events = POLLIN };
		struct ibv_cq *cq;
		struct ibv_wc wc;
		uint64_t now;
		void *ctx;
		int n = ibv_poll_cq(c->cq, 1, &wc);

		if (n < 0) {
			c->ok = false;
			err = -EIO;
			break;
		}
		if (n == 1) {
			c->inflight--;
			*tag = wc.wr_id;
			if (wc.status == IBV_WC_SUCCESS) {
				err = 0;
			} else {
				c->ok = false;
				err = wc.status == IBV_WC_RETRY_EXC_ERR ?
				      -ETIMEDOUT : -EIO;
				fkv_info("rdma: READ failed: %s",
					 ibv_wc_status_str(wc.status));
			}
			break;
		}
		now = mono_ms();
		if (now >= deadline)
			break;
		/* Sleep until the CQ has something (never busy-poll). */
		pthread_mutex_unlock(&c->lock);
		n = poll(&pfd, 1, (int)(deadline - now));
		pthread_mutex_lock(&c->lock);
		if (n > 0 && c->cch && !ibv_get_cq_event(c->cch, &cq, &ctx)) {
			ibv_ack_cq_events(cq, 1);
			ibv_req_notify_cq(cq, 0);
		}
	}
	if (!c->cq && err == -ETIMEDOUT)
		err = -ENOTCONN;	/* torn down: the device went */
	pthread_mutex_unlock(&c->lock);
	return err;
}
