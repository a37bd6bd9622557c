// SPDX-License-Identifier: GPL-2.0
/*
 * fkvbench batch: the C library's twin of the Mooncake adapter's batch
 * calls (tools/bench/pybench --steps adapter, issue 30).
 *
 * --batch B keys per call, keys walked cyclically over --keys K (call c
 * takes keys (c * B + i) mod K), each into slot i of a host buffer pool,
 * as the inference stacks' registered host pools:
 *
 *   --pieces 1   one range per key: slot i at pool + i * size.  get: one
 *                fkv_batch of B GET_INTO ops (the adapter's batch_get_into);
 *                put: one fkv_batch of B PUT ops from the slots (its
 *                batch_upsert_from).
 *   --pieces P   each value is the concatenation of P equal pieces; piece l
 *                of slot i at region l + i * (size / P), the P regions one
 *                page apart so no two pieces touch (vLLM's per-layer
 *                caches).  get: one fkv_batch of B GETs, the pieces copied
 *                out of each holder with memcpy (--copy vm: with one
 *                process_vm_writev a key, the checked copy the adapter
 *                makes), one fkv_batch of B RELEASEs (the adapter's
 *                batch_get_into_multi_buffers);
 *                put: the pieces gathered into a staging buffer with
 *                memcpy, one fkv_batch of B PUTs from it; --copy vm: one
 *                fkv_batch of B gather puts (FLUXONKV_OP_PUT_IOV: the
 *                module reads the pieces, as the adapter's
 *                batch_upsert_from_multi_buffers does).
 *
 * --size is a multiple of 8 bytes a piece.  A get needs the values there
 * already (pybench puts them through the adapter: zeroes but for fkvbench's
 * first and last word, as bench_check_ends reads them); a put stores such
 * values, slot i holding key i's (so a put takes --keys = --batch).  A
 * warmup, then calls until the window closes and at least --min-calls
 * were counted; after it, the last call's
 * slots are checked (get) and every result must be a hit of --size bytes.
 * Prints one JSON line: calls, per call and per key microseconds, GiB/s of
 * hit payload.  --serve: no window; turns read from stdin instead (a
 * number N: N calls made, their nanoseconds printed on a line; 0 or EOF
 * ends), so that a driver can alternate turns with its own calls at a
 * fine grain -- a shared host's slow spells then fall on both alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fluxonkv.h>

#include "bench.h"

#define BATCH_GAP	4096	/* between the regions of a multi-piece pool */

struct batch_ctx {
	struct fkv *kv;
	const struct bench_opts *o;
	size_t piece, stride;	/* bytes a piece; region l at pool + l * stride */
	unsigned char *pool, *staging;
	size_t pool_len;
	char (*names)[BENCH_KEY_MAX];
	size_t *name_len;
	struct fkv_op *ops, *rel;
	struct iovec *iov;	/* --copy vm: the pieces (get: one key's,
				 * put: every key's, P a key) */
	uint64_t first, last;	/* the next call's first key, the last one's */
	uint64_t errors, bad;
};

static unsigned char *batch_piece(struct batch_ctx *c, unsigned int slot,
				  unsigned int l)
{
	return c->pool + l * c->stride + slot * c->piece;
}

/* @iov: the pieces of slot @i. */
static void batch_iov(struct batch_ctx *c, unsigned int i, struct iovec *iov)
{
	unsigned int l;

	for (l = 0; l < c->o->pieces; l++) {
		iov[l].iov_base = batch_piece(c, i, l);
		iov[l].iov_len = c->piece;
	}
}

/*
 * One call of B keys starting at key c->first (then the next B); 0 or the
 * batch's -errno.
 */
static int batch_call(struct batch_ctx *c)
{
	const struct bench_opts *o = c->o;
	unsigned int i, l, n, P = o->pieces;
	uint64_t first = c->first;
	int err;

	c->last = first;
	c->first = (first + o->batch) % o->keys;

	for (i = 0; i < o->batch; i++) {
		uint64_t k = (first + i) % o->keys;
		struct fkv_op *op = &c->ops[i];

		memset(op, 0, sizeof(*op));
		op->key = c->names[k];
		op->key_len = c->name_len[k];
		if (o->batch_put) {
			op->opcode = FLUXONKV_OP_PUT;
			op->buf_len = o->size;
			if (P == 1) {
				op->value = batch_piece(c, i, 0);
			} else if (o->vm_copy) {
				/* a gather put: the module reads the pieces */
				batch_iov(c, i, c->iov + i * P);
				op->opcode = FLUXONKV_OP_PUT_IOV;
				op->value = c->iov + i * P;
				op->buf_len = P;
			} else {
				unsigned char *v = c->staging + i * o->size;

				for (l = 0; l < P; l++)
					memcpy(v + l * c->piece,
					       batch_piece(c, i, l), c->piece);
				op->value = v;
			}
		} else if (P == 1) {
			op->opcode = FLUXONKV_OP_GET_INTO;
			op->buf = batch_piece(c, i, 0);
			op->buf_len = o->size;
		} else {
			op->opcode = FLUXONKV_OP_GET;
		}
	}
	err = fkv_batch(c->kv, c->ops, o->batch);
	if (err)
		return err;
	for (i = 0; i < o->batch; i++) {
		struct fkv_op *op = &c->ops[i];

		if (op->result || (!o->batch_put && op->len != o->size)) {
			c->errors++;
			continue;
		}
		if (o->batch_put || P == 1)
			continue;
		if (o->vm_copy) {
			struct iovec src = {
				.iov_base = (void *)op->holder.data,
				.iov_len = o->size,
			};

			batch_iov(c, i, c->iov);
			if (process_vm_writev(getpid(), &src, 1, c->iov, P, 0) !=
			    (ssize_t)o->size)
				c->errors++;
			continue;
		}
		for (l = 0; l < P; l++)
			memcpy(batch_piece(c, i, l),
			       (const unsigned char *)op->holder.data +
			       l * c->piece, c->piece);
	}
	if (o->batch_put || P == 1)
		return 0;
	for (i = 0, n = 0; i < o->batch; i++) {
		if (c->ops[i].result)
			continue;
		memset(&c->rel[n], 0, sizeof(c->rel[n]));
		c->rel[n].opcode = FLUXONKV_OP_RELEASE;
		c->rel[n++].holder = c->ops[i].holder;
	}
	err = n ? fkv_batch(c->kv, c->rel, n) : 0;
	for (i = 0; !err && i < n; i++)
		err = c->rel[i].result;
	return err;
}

/* The slots of the call that started at @first hold their keys' ends. */
static void batch_check(struct batch_ctx *c, uint64_t first)
{
	const struct bench_opts *o = c->o;
	size_t n = o->size / 8;
	unsigned int i;

	for (i = 0; i < o->batch; i++) {
		uint64_t k = (first + i) % o->keys, a, b;
		const unsigned char *last = batch_piece(c, i, o->pieces - 1) +
					    c->piece - 8;

		memcpy(&a, batch_piece(c, i, 0), 8);
		memcpy(&b, last, 8);
		if (a != bench_word(k, 0) || b != bench_word(k, n - 1))
			c->bad++;
	}
}

int bench_run_batch(const struct bench_opts *o)
{
	struct batch_ctx c = { .o = o };
	uint64_t t0, warm_end, win_end, now, counted = 0, t_count = 0;
	double secs;
	unsigned long k;
	int err;

	if (!o->batch || !o->pieces || o->pieces > 1024 ||
	    o->size % (8 * o->pieces) ||
	    o->batch > o->keys || (o->batch_put && o->batch != o->keys))
		return -EINVAL;
	c.piece = o->size / o->pieces;
	c.stride = o->pieces == 1 ? 0 :
		   (o->batch * c.piece + BATCH_GAP - 1) / BATCH_GAP * BATCH_GAP +
		   BATCH_GAP;
	c.pool_len = o->pieces == 1 ? o->batch * o->size :
		     o->pieces * c.stride;
	c.pool = mmap(NULL, c.pool_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (c.pool == MAP_FAILED)
		return -errno;
	c.names = calloc(o->keys, sizeof(*c.names));
	c.name_len = calloc(o->keys, sizeof(*c.name_len));
	c.ops = calloc(o->batch, sizeof(*c.ops));
	c.rel = calloc(o->batch, sizeof(*c.rel));
	c.iov = calloc((size_t)o->pieces * o->batch, sizeof(*c.iov));
	if (o->batch_put && o->pieces > 1 && !o->vm_copy)
		c.staging = malloc(o->batch * o->size);
	err = -ENOMEM;
	if (!c.names || !c.name_len || !c.ops || !c.rel || !c.iov ||
	    (o->batch_put && o->pieces > 1 && !o->vm_copy && !c.staging))
		goto out;
	if (c.staging)
		memset(c.staging, 0, o->batch * o->size);
	for (k = 0; k < o->keys; k++)
		c.name_len[k] = bench_key_name(c.names[k], BENCH_KEY_MAX,
					       o->prefix, k);
	err = fkv_open(NULL, &c.kv);
	if (err)
		goto out;
	if (o->batch_put) {
		/* the values a put stores: the keys' ends in each slot */
		unsigned int i;

		for (i = 0; i < o->batch; i++) {
			size_t n = o->size / 8;
			uint64_t a = bench_word(i % o->keys, 0);
			uint64_t b = bench_word(i % o->keys, n - 1);

			memcpy(batch_piece(&c, i, 0), &a, 8);
			memcpy(batch_piece(&c, i, o->pieces - 1) + c.piece - 8,
			       &b, 8);
		}
	}
	if (o->serve) {
		/* turns: read N, make N calls, answer their nanoseconds */
		unsigned long turn;
		uint64_t ns = 0;

		while (scanf("%lu", &turn) == 1 && turn) {
			uint64_t a = bench_now_ns();

			for (; turn; turn--, counted++) {
				err = batch_call(&c);
				if (err)
					goto out;
			}
			a = bench_now_ns() - a;
			ns += a;
			printf("%" PRIu64 "\n", a);
			fflush(stdout);
		}
		secs = ns / 1e9;
		goto done;
	}
	t0 = bench_now_ns();
	warm_end = t0 + (uint64_t)(o->warmup_s * 1e9);
	win_end = warm_end + (uint64_t)(o->window_s * 1e9);
	for (;;) {
		now = bench_now_ns();
		if (now >= win_end && counted >= o->min_calls)
			break;
		err = batch_call(&c);
		if (err)
			goto out;
		if (now >= warm_end) {
			if (!counted)
				t_count = now;
			counted++;
		}
	}
	secs = counted ? (now - t_count) / 1e9 : 0;
done:
	if (!o->batch_put)
		batch_check(&c, c.last);
	printf("{\"phase\":\"batch\",\"backend\":\"fluxonkv\",%s%s"
	       "\"op\":\"%s\",\"copy\":\"%s\",\"batch\":%u,\"pieces\":%u,\"keys\":%lu,"
	       "\"size\":%zu,\"calls\":%" PRIu64 ",\"secs\":%.3f,"
	       "\"us_per_call\":%.2f,\"us_per_key\":%.3f,\"hit_gib_s\":%.4f,"
	       "\"errors\":%" PRIu64 ",\"content_errors\":%" PRIu64 "}\n",
	       o->label ? o->label : "", o->label ? "," : "",
	       o->batch_put ? "put" : "get", o->vm_copy ? "vm" : "memcpy",
	       o->batch, o->pieces, o->keys,
	       o->size, counted, secs,
	       counted ? secs * 1e6 / counted : 0,
	       counted ? secs * 1e6 / counted / o->batch : 0,
	       secs > 0 ? counted * o->batch * (double)o->size / secs /
			  (1024.0 * 1024 * 1024) : 0,
	       c.errors, c.bad);
	fflush(stdout);
	err = c.errors || c.bad ? -EIO : 0;
out:
	if (c.kv)
		fkv_close(c.kv);
	munmap(c.pool, c.pool_len);
	free(c.names);
	free(c.name_len);
	free(c.ops);
	free(c.rel);
	free(c.iov);
	free(c.staging);
	return err;
}
