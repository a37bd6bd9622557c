// SPDX-License-Identifier: GPL-2.0
/*
 * libfluxonkv rings: fluxonkv operations over io_uring.
 *
 * Each operation is a one-entry FLUXONKV_IOC_BATCH sent as an
 * IORING_OP_URING_CMD (sqe->cmd_op = the ioctl number, the sqe's command
 * bytes a struct fluxonkv_uring_cmd naming the batch header); a batch
 * (fkv_ring_prep_batch) is one FLUXONKV_IOC_BATCH of all its entries.  The
 * header, the entries and a copy of the key live in a slot of the ring
 * until the completion is reaped: the kernel may read them from an io-wq
 * worker long after the submit returned.  The module completes DRAM hits inline during
 * io_uring_submit(); what waits is punted to io_uring's workers, but for
 * GETs read from the local SSD, which go on without them (a batch's: with
 * FLUXONKV_BATCH_F_RESUME, resent from where the module ended it early).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <liburing.h>

#include "fkv_internal.h"

struct fkv_slot {
	struct fluxonkv_batch b;
	struct fluxonkv_op k;
	struct fkv_op op;		/* the caller's, outputs filled at reap */
	/* a batch: the caller's ops, their kernel entries (kept for reuse) */
	struct fkv_op *ops;
	size_t nops;
	struct fluxonkv_op *kops;
	size_t kcap;			/* entries @kops has room for */
	uint64_t user_data;
	unsigned char key[FLUXONKV_KEY_MAX];
	int next_free;			/* -1: end of the free list */
};

struct fkv_ring {
	struct fkv *kv;
	struct io_uring uring;
	struct fkv_slot *slots;
	unsigned int depth;
	unsigned int inflight;		/* prepped and not reaped */
	unsigned int unsent;		/* prepped and not submitted */
	int free;			/* head of the free slot list */
};

int fkv_ring_open(struct fkv *kv, unsigned int depth, struct fkv_ring **out)
{
	struct fkv_ring *r;
	unsigned int i;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!kv || !depth || depth > 4096)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->slots = calloc(depth, sizeof(*r->slots));
	if (!r->slots) {
		err = -ENOMEM;
		goto err_ring;
	}
	err = io_uring_queue_init(depth, &r->uring, 0);
	if (err)
		goto err_slots;
	r->kv = kv;
	r->depth = depth;
	for (i = 0; i < depth; i++)
		r->slots[i].next_free = i + 1 < depth ? (int)i + 1 : -1;
	r->free = 0;
	*out = r;
	return 0;

err_slots:
	free(r->slots);
err_ring:
	free(r);
	return err;
}

/*
 * A free slot and an SQE for one command: the slot (its batch header to
 * be filled by the caller), or NULL with *@err = -EBUSY.
 */
static struct fkv_slot *slot_get(struct fkv_ring *r, struct io_uring_sqe **sqe,
				 int *err)
{
	struct fkv_slot *sl;

	*err = -EBUSY;
	if (r->free < 0)
		return NULL;
	*sqe = io_uring_get_sqe(&r->uring);
	if (!*sqe)
		return NULL;	/* the SQ is full: submit first */
	sl = &r->slots[r->free];
	r->free = sl->next_free;
	sl->ops = NULL;
	sl->nops = 0;
	return sl;
}

/* (Re)send @sl's batch header with @sqe. */
static void slot_cmd(struct fkv_ring *r, struct fkv_slot *sl,
		     struct io_uring_sqe *sqe)
{
	struct fluxonkv_uring_cmd cmd = { 0 };

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fkv_fd(r->kv), NULL, 0, 0);
	sqe->cmd_op = FLUXONKV_IOC_BATCH;
	cmd.arg = (uintptr_t)&sl->b;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	io_uring_sqe_set_data64(sqe, (uint64_t)(sl - r->slots));
}

/*
 * Send @sl's batch of @count entries at @k with @sqe.  A batch of several
 * entries asks for FLUXONKV_BATCH_F_RESUME: each GET read from the SSD
 * goes on while the next entries run, and the kernel may end the command
 * early (-EAGAIN, b.done short), which fkv_ring_reap() sends again.
 */
static void slot_send(struct fkv_ring *r, struct fkv_slot *sl,
		      struct io_uring_sqe *sqe, struct fluxonkv_op *k,
		      unsigned int count, uint64_t user_data)
{
	sl->user_data = user_data;
	memset(&sl->b, 0, sizeof(sl->b));
	sl->b.size = sizeof(sl->b);
	sl->b.count = count;
	sl->b.ops_ptr = (uintptr_t)k;
	sl->b.op_size = sizeof(*k);
	if (count > 1 && fkv_batch_resume(r->kv))
		sl->b.flags = FLUXONKV_BATCH_F_RESUME;
	slot_cmd(r, sl, sqe);
	r->inflight++;
	r->unsent++;
}

int fkv_ring_prep(struct fkv_ring *r, const struct fkv_op *op,
		  uint64_t user_data)
{
	struct io_uring_sqe *sqe;
	struct fkv_slot *sl;
	int err;

	if (!r || !op)
		return -EINVAL;
	err = fkv_op_check(r->kv, op);
	if (err)
		return err;
	if (op->opcode != FLUXONKV_OP_RELEASE &&
	    op->key_len > sizeof(r->slots[0].key))
		return -E2BIG;	/* a module with a larger key_max than ours */
	sl = slot_get(r, &sqe, &err);
	if (!sl)
		return err;
	sl->op = *op;
	if (op->opcode != FLUXONKV_OP_RELEASE)
		memcpy(sl->key, op->key, op->key_len);
	fkv_op_encode(&sl->k, op, sl->key);
	slot_send(r, sl, sqe, &sl->k, 1, user_data);
	return 0;
}

int fkv_ring_prep_batch(struct fkv_ring *r, struct fkv_op *ops, size_t n,
			uint64_t user_data)
{
	struct io_uring_sqe *sqe;
	struct fluxonkv_op *k;
	struct fkv_slot *sl;
	size_t i;
	int err;

	if (!r || !ops || !n || n > FLUXONKV_BATCH_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		err = fkv_op_check(r->kv, &ops[i]);
		if (err)
			return err;
	}
	if (r->free < 0)
		return -EBUSY;
	sl = &r->slots[r->free];
	if (sl->kcap < n) {
		k = realloc(sl->kops, n * sizeof(*k));
		if (!k)
			return -ENOMEM;
		sl->kops = k;
		sl->kcap = n;
	}
	sl = slot_get(r, &sqe, &err);
	if (!sl)
		return err;
	k = sl->kops;
	for (i = 0; i < n; i++)
		fkv_op_encode(&k[i], &ops[i], ops[i].key);
	memset(&sl->op, 0, sizeof(sl->op));
	sl->ops = ops;
	sl->nops = n;
	slot_send(r, sl, sqe, k, (unsigned int)n, user_data);
	return 0;
}

int fkv_ring_submit(struct fkv_ring *r)
{
	int n;

	if (!r)
		return -EINVAL;
	do {
		n = io_uring_submit(&r->uring);
	} while (n == -EINTR);
	if (n > 0)
		r->unsent -= (unsigned int)n < r->unsent ? (unsigned int)n : r->unsent;
	return n;
}

/*
 * @cqe ends a batch early (FLUXONKV_BATCH_F_RESUME: -EAGAIN with entries
 * left after some ran): send the rest now, from b.done.  True if sent (the
 * completion is not the caller's); false to complete it as it is.
 */
static bool fkv_ring_resend(struct fkv_ring *r, struct io_uring_cqe *cqe)
{
	unsigned int i = (unsigned int)io_uring_cqe_get_data64(cqe);
	struct fkv_slot *sl = &r->slots[i];
	struct io_uring_sqe *sqe;

	if (!sl->nops || cqe->res != -EAGAIN ||
	    !(sl->b.flags & FLUXONKV_BATCH_F_RESUME) ||
	    sl->b.done >= sl->nops)
		return false;
	sqe = io_uring_get_sqe(&r->uring);
	if (!sqe && fkv_ring_submit(r) >= 0)
		sqe = io_uring_get_sqe(&r->uring);
	if (!sqe)
		return false;	/* the rest is -ECANCELED */
	slot_cmd(r, sl, sqe);
	r->unsent++;
	fkv_ring_submit(r);	/* if it fails, the reap's next wait sends it */
	return true;
}

/* One completion into @c; the slot goes back to the free list. */
static void fkv_ring_complete(struct fkv_ring *r, struct io_uring_cqe *cqe,
			      struct fkv_completion *c)
{
	unsigned int i = (unsigned int)io_uring_cqe_get_data64(cqe);
	struct fkv_slot *sl = &r->slots[i];

	size_t j;

	c->user_data = sl->user_data;
	c->op = sl->op;
	c->ops = sl->ops;
	c->nops = sl->nops;
	if (sl->nops) {
		/* the batch's own result; each entry's in the caller's ops */
		c->op.result = cqe->res < 0 ? cqe->res : 0;
		for (j = 0; j < sl->nops; j++)
			if (j < sl->b.done)
				fkv_op_decode(r->kv, &sl->ops[j], &sl->kops[j]);
			else
				sl->ops[j].result = -ECANCELED;
	} else if (cqe->res < 0) {
		/* the batch itself failed (EOPNOTSUPP: an old module) */
		c->op.result = cqe->res;
	} else {
		fkv_op_decode(r->kv, &c->op, &sl->k);
	}
	sl->next_free = r->free;
	r->free = (int)i;
	r->inflight--;
}

int fkv_ring_reap(struct fkv_ring *r, struct fkv_completion *c,
		  unsigned int max, unsigned int min)
{
	struct io_uring_cqe *cqe;
	unsigned int n = 0;
	int err;

	if (!r || (max && !c) || min > max)
		return -EINVAL;
	if (r->unsent) {
		err = fkv_ring_submit(r);
		if (err < 0)
			return err;
	}
	if (min > r->inflight)
		min = r->inflight;
	while (n < max) {
		if (n < min && r->unsent)
			fkv_ring_submit(r);	/* a resend's, before waiting */
		if (n < min)
			err = io_uring_wait_cqe(&r->uring, &cqe);
		else
			err = io_uring_peek_cqe(&r->uring, &cqe);
		if (err == -EINTR)
			continue;
		if (err == -EAGAIN)
			break;		/* nothing more ready */
		if (err)
			return n ? (int)n : err;
		if (fkv_ring_resend(r, cqe)) {
			io_uring_cqe_seen(&r->uring, cqe);
			continue;
		}
		fkv_ring_complete(r, cqe, &c[n++]);
		io_uring_cqe_seen(&r->uring, cqe);
	}
	return (int)n;
}

unsigned int fkv_ring_inflight(const struct fkv_ring *r)
{
	return r ? r->inflight : 0;
}

void fkv_ring_close(struct fkv_ring *r)
{
	struct io_uring_cqe *cqe;
	struct fkv_completion c;
	unsigned int sent;
	int err;

	if (!r)
		return;
	/* What was queued goes out if it can; what never went needs no wait. */
	if (r->unsent)
		fkv_ring_submit(r);
	sent = r->inflight - r->unsent;
	/*
	 * Every command the kernel has must complete before the slots go: an
	 * io-wq worker may still write into them after the ring fd closes.
	 */
	while (sent) {
		err = io_uring_wait_cqe(&r->uring, &cqe);
		if (err == -EINTR || err == -EAGAIN)
			continue;
		if (err) {
			/* cannot tell when the kernel is done: keep the memory */
			io_uring_queue_exit(&r->uring);
			return;
		}
		fkv_ring_complete(r, cqe, &c);
		io_uring_cqe_seen(&r->uring, cqe);
		sent--;
		/* a GET that nobody will see: give its holder back */
		if (!c.op.result && c.op.opcode == FLUXONKV_OP_GET)
			fkv_holder_release(r->kv, &c.op.holder);
		for (size_t j = 0; j < c.nops; j++)
			if (!c.ops[j].result &&
			    c.ops[j].opcode == FLUXONKV_OP_GET)
				fkv_holder_release(r->kv, &c.ops[j].holder);
	}
	io_uring_queue_exit(&r->uring);
	for (unsigned int i = 0; i < r->depth; i++)
		free(r->slots[i].kops);	/* batches' entries, kept for reuse */
	free(r->slots);
	free(r);
}
