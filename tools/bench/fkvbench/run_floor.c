// SPDX-License-Identifier: GPL-2.0
/*
 * fkvbench floor: the per-call costs of the client API next to their
 * floors, in one process, one boot (issue #13's targets).
 *
 * Floors: an ioctl the module rejects at once (-ENOTTY: the syscall, the
 * file lookup and the module's dispatch, nothing else) and memcpy of each
 * payload size.  Measured against them: a DRAM-hit get + release, each
 * alone, LOOKUP, GET_INTO (bytes mode) and get + copy + release, batches
 * of 16 gets (FLUXONKV_IOC_BATCH) and 16 gets through a ring (io_uring),
 * a 4 KiB put and a --size put.  Every case runs in --rounds interleaved
 * rounds (so drift in the guest touches them all alike); each figure is
 * the median over the rounds of ns per operation, with min and max.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <fluxonkv.h>

#include "bench.h"

#define FLOOR_BATCH	16
#define FLOOR_ROUNDS	7
#define FLOOR_SMALL	4096

enum floor_case {
	F_NOOP, F_GET_RELEASE, F_GET, F_RELEASE, F_LOOKUP,
	F_MEMCPY_SMALL, F_GET_INTO_SMALL, F_MEMCPY_BIG, F_GET_INTO_BIG,
	F_HOLDER_COPY_BIG, F_BATCH_GET, F_BATCH_GET_RELEASE, F_RING_GET,
	F_RING_BATCH, F_PUT_SMALL, F_PUT_BIG, F_NR
};

static const char *const floor_names[F_NR] = {
	[F_NOOP] = "noop_ioctl",
	[F_GET_RELEASE] = "get_release",
	[F_GET] = "get",
	[F_RELEASE] = "release",
	[F_LOOKUP] = "lookup",
	[F_MEMCPY_SMALL] = "memcpy_4k",
	[F_GET_INTO_SMALL] = "get_into_4k",
	[F_MEMCPY_BIG] = "memcpy_big",
	[F_GET_INTO_BIG] = "get_into_big",
	[F_HOLDER_COPY_BIG] = "get_copy_release_big",
	[F_BATCH_GET] = "batch16_get_per_key",
	[F_BATCH_GET_RELEASE] = "batch16_get_release_per_key",
	[F_RING_GET] = "ring16_get_release_per_key",
	[F_RING_BATCH] = "ringbatch16_get_release_per_key",
	[F_PUT_SMALL] = "put_4k",
	[F_PUT_BIG] = "put_big",
};

struct floor_ctx {
	struct fkv *kv;
	struct fkv_ring *ring;
	size_t big;
	unsigned char *src, *dst;	/* memcpy / get_into buffers (big) */
	char keys[FLOOR_BATCH][32];
	struct fkv_holder held[FLOOR_BATCH];
	struct fkv_op ops[FLOOR_BATCH];
	uint64_t part_ns;		/* split cases: the timed half */
	int err;			/* first error seen */
	const char *err_case;
};

static void floor_fail(struct floor_ctx *c, enum floor_case fc, int err)
{
	if (!c->err) {
		c->err = err;
		c->err_case = floor_names[fc];
	}
}

/* Run case @fc @n times; returns operations done (0 on error). */
static uint64_t floor_run(struct floor_ctx *c, enum floor_case fc, uint64_t n)
{
	struct fkv_completion comp[FLOOR_BATCH];
	struct fkv_lookup lk;
	struct fkv_holder h;
	const char *k = c->keys[0];
	size_t kl = strlen(k);
	uint64_t i;
	int err = 0, j;

	for (i = 0; i < n && !err; i++) {
		switch (fc) {
		case F_NOOP:
			/* an unknown command: -ENOTTY from the module */
			if (ioctl(fkv_fd(c->kv), _IO(FLUXONKV_IOC_MAGIC, 0xfe)) == 0 ||
			    errno != ENOTTY)
				err = -EPROTO;
			break;
		case F_GET_RELEASE:
			err = fkv_get(c->kv, k, kl, &h);
			if (!err)
				err = fkv_holder_release(c->kv, &h);
			break;
		case F_GET:
		case F_RELEASE: {
			/* FLOOR_BATCH gets, then their releases: timed apart */
			uint64_t t0 = bench_now_ns(), t1;

			for (j = 0; j < FLOOR_BATCH && !err; j++)
				err = fkv_get(c->kv, k, kl, &c->held[j]);
			t1 = bench_now_ns();
			for (j = 0; j < FLOOR_BATCH && !err; j++)
				err = fkv_holder_release(c->kv, &c->held[j]);
			c->part_ns += fc == F_GET ? t1 - t0 : bench_now_ns() - t1;
			break;
		}
		case F_LOOKUP:
			err = fkv_lookup(c->kv, k, kl, &lk);
			break;
		case F_MEMCPY_SMALL:
			memcpy(c->dst, c->src, FLOOR_SMALL);
			__asm__ volatile("" : : "r"(c->dst) : "memory");
			break;
		case F_GET_INTO_SMALL:
			err = fkv_get_into(c->kv, k, kl, c->dst, c->big, &lk);
			if (!err && lk.len != FLOOR_SMALL)
				err = -EPROTO;
			break;
		case F_MEMCPY_BIG:
			memcpy(c->dst, c->src, c->big);
			__asm__ volatile("" : : "r"(c->dst) : "memory");
			break;
		case F_GET_INTO_BIG:
			err = fkv_get_into(c->kv, "floor-big", 9, c->dst, c->big,
					   &lk);
			if (!err && lk.len != c->big)
				err = -EPROTO;
			break;
		case F_HOLDER_COPY_BIG:
			err = fkv_get(c->kv, "floor-big", 9, &h);
			if (!err) {
				memcpy(c->dst, h.data, h.len);
				__asm__ volatile("" : : "r"(c->dst) : "memory");
				err = fkv_holder_release(c->kv, &h);
			}
			break;
		case F_BATCH_GET:
		case F_BATCH_GET_RELEASE: {
			uint64_t t0 = bench_now_ns(), t1;

			for (j = 0; j < FLOOR_BATCH; j++) {
				memset(&c->ops[j], 0, sizeof(c->ops[j]));
				c->ops[j].opcode = FLUXONKV_OP_GET;
				c->ops[j].key = c->keys[j];
				c->ops[j].key_len = strlen(c->keys[j]);
			}
			err = fkv_batch(c->kv, c->ops, FLOOR_BATCH);
			for (j = 0; j < FLOOR_BATCH && !err; j++) {
				err = c->ops[j].result;
				c->held[j] = c->ops[j].holder;
			}
			t1 = bench_now_ns();
			if (err)
				break;
			/* the releases: one batch too */
			for (j = 0; j < FLOOR_BATCH; j++) {
				memset(&c->ops[j], 0, sizeof(c->ops[j]));
				c->ops[j].opcode = FLUXONKV_OP_RELEASE;
				c->ops[j].holder = c->held[j];
			}
			err = fkv_batch(c->kv, c->ops, FLOOR_BATCH);
			for (j = 0; j < FLOOR_BATCH && !err; j++)
				err = c->ops[j].result;
			c->part_ns += fc == F_BATCH_GET ? t1 - t0 :
				      bench_now_ns() - t0;
			break;
		}
		case F_RING_GET:
			for (j = 0; j < FLOOR_BATCH && !err; j++) {
				struct fkv_op op = {
					.opcode = FLUXONKV_OP_GET,
					.key = c->keys[j],
					.key_len = strlen(c->keys[j]),
				};
				err = fkv_ring_prep(c->ring, &op, j);
			}
			if (!err && fkv_ring_reap(c->ring, comp, FLOOR_BATCH,
						  FLOOR_BATCH) != FLOOR_BATCH)
				err = -EIO;
			for (j = 0; j < FLOOR_BATCH && !err; j++) {
				err = comp[j].op.result;
				c->held[j] = comp[j].op.holder;
			}
			for (j = 0; j < FLOOR_BATCH && !err; j++) {
				struct fkv_op op = {
					.opcode = FLUXONKV_OP_RELEASE,
					.holder = c->held[j],
				};
				err = fkv_ring_prep(c->ring, &op, j);
			}
			if (!err && fkv_ring_reap(c->ring, comp, FLOOR_BATCH,
						  FLOOR_BATCH) != FLOOR_BATCH)
				err = -EIO;
			for (j = 0; j < FLOOR_BATCH && !err; j++)
				err = comp[j].op.result;
			break;
		case F_RING_BATCH:
			/* 16 gets as one ring command, then 16 releases */
			for (j = 0; j < FLOOR_BATCH; j++) {
				memset(&c->ops[j], 0, sizeof(c->ops[j]));
				c->ops[j].opcode = FLUXONKV_OP_GET;
				c->ops[j].key = c->keys[j];
				c->ops[j].key_len = strlen(c->keys[j]);
			}
			err = fkv_ring_prep_batch(c->ring, c->ops, FLOOR_BATCH, 0);
			if (!err && fkv_ring_reap(c->ring, comp, 1, 1) != 1)
				err = -EIO;
			if (!err)
				err = comp[0].op.result;
			for (j = 0; j < FLOOR_BATCH && !err; j++) {
				err = c->ops[j].result;
				c->held[j] = c->ops[j].holder;
			}
			for (j = 0; j < FLOOR_BATCH && !err; j++) {
				memset(&c->ops[j], 0, sizeof(c->ops[j]));
				c->ops[j].opcode = FLUXONKV_OP_RELEASE;
				c->ops[j].holder = c->held[j];
			}
			if (!err)
				err = fkv_ring_prep_batch(c->ring, c->ops,
							  FLOOR_BATCH, 1);
			if (!err && fkv_ring_reap(c->ring, comp, 1, 1) != 1)
				err = -EIO;
			if (!err)
				err = comp[0].op.result;
			for (j = 0; j < FLOOR_BATCH && !err; j++)
				err = c->ops[j].result;
			break;
		case F_PUT_SMALL:
			err = fkv_put(c->kv, "floor-put-small", 15, c->src,
				      FLOOR_SMALL, NULL);
			break;
		case F_PUT_BIG:
			err = fkv_put(c->kv, "floor-put-big", 13, c->src, c->big,
				      NULL);
			break;
		default:
			err = -EINVAL;
		}
	}
	if (err) {
		floor_fail(c, fc, err);
		return 0;
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* What one measured iteration of @fc counts as operations. */
static unsigned int floor_per_iter(enum floor_case fc)
{
	switch (fc) {
	case F_GET:
	case F_RELEASE:
	case F_BATCH_GET:
	case F_BATCH_GET_RELEASE:
	case F_RING_GET:
	case F_RING_BATCH:
		return FLOOR_BATCH;
	default:
		return 1;
	}
}

/* Cases that time part of each iteration themselves (c->part_ns). */
static bool floor_split(enum floor_case fc)
{
	return fc == F_GET || fc == F_RELEASE || fc == F_BATCH_GET ||
	       fc == F_BATCH_GET_RELEASE;
}

/*
 * ns per operation of one round of @fc lasting about @budget_ns.  F_GET
 * and F_RELEASE run the same loop (16 gets, then their releases) and each
 * reports its own half; F_BATCH_GET the get batch of a get + release pair.
 */
static double floor_round(struct floor_ctx *c, enum floor_case fc,
			  uint64_t budget_ns)
{
	uint64_t n = 1, t0, dt;

	/* grow the iteration count until a run takes a tenth of the budget */
	for (;;) {
		t0 = bench_now_ns();
		if (!floor_run(c, fc, n))
			return -1;
		dt = bench_now_ns() - t0;
		if (dt * 10 >= budget_ns || n >= (1ull << 30))
			break;
		n *= dt ? (budget_ns / 10 / dt > 8 ? 8 : 2) : 8;
	}
	n = dt ? n * budget_ns / dt : n;
	if (!n)
		n = 1;
	c->part_ns = 0;
	t0 = bench_now_ns();
	if (!floor_run(c, fc, n))
		return -1;
	dt = floor_split(fc) ? c->part_ns : bench_now_ns() - t0;
	return (double)dt / ((double)n * floor_per_iter(fc));
}

static int floor_setup(struct floor_ctx *c, const struct bench_opts *o)
{
	int err, j;

	c->big = o->size;
	/* page-aligned, as the segment's values are: memcpy at its best */
	if (posix_memalign((void **)&c->src, 4096, c->big) ||
	    posix_memalign((void **)&c->dst, 4096, c->big))
		return -ENOMEM;
	bench_fill(c->src, c->big, 7);
	memset(c->dst, 0, c->big);
	err = fkv_open(NULL, &c->kv);
	if (err)
		return err;
	for (j = 0; j < FLOOR_BATCH; j++) {
		snprintf(c->keys[j], sizeof(c->keys[j]), "floor-small-%d", j);
		err = fkv_put(c->kv, c->keys[j], strlen(c->keys[j]), c->src,
			      FLOOR_SMALL, NULL);
		if (err)
			return err;
	}
	err = fkv_put(c->kv, "floor-big", 9, c->src, c->big, NULL);
	if (err)
		return err;
	return fkv_ring_open(c->kv, 2 * FLOOR_BATCH, &c->ring);
}

int bench_run_floor(const struct bench_opts *o)
{
	double ns[F_NR][FLOOR_ROUNDS];
	struct floor_ctx c = { 0 };
	unsigned int r, i;
	uint64_t budget;
	int err;

	err = floor_setup(&c, o);
	if (err)
		goto out;
	budget = (uint64_t)(o->seconds * 1e9 / (FLOOR_ROUNDS * F_NR));
	for (r = 0; r < FLOOR_ROUNDS; r++) {
		fprintf(stderr, "fkvbench floor: round %u of %u\n", r + 1,
			FLOOR_ROUNDS);
		for (i = 0; i < F_NR; i++) {
			enum floor_case fc = i;	/* the enum's order */

			if (o->ranges && strcmp(o->ranges, floor_names[fc])) {
				ns[fc][r] = 0;	/* --ranges NAME: that case only */
				continue;
			}
			ns[fc][r] = floor_round(&c, fc, budget);
			if (ns[fc][r] < 0) {
				err = c.err;
				fprintf(stderr, "fkvbench floor: %s: %s\n",
					c.err_case, fkv_strerror(err));
				goto out;
			}
		}
	}

	printf("{\"cmd\":\"floor\",\"size\":%zu,\"small\":%d,\"batch\":%d,"
	       "\"rounds\":%d", c.big, FLOOR_SMALL, FLOOR_BATCH, FLOOR_ROUNDS);
	if (o->label)
		printf(",%s", o->label);
	printf(",\"ns\":{");
	for (i = 0; i < F_NR; i++) {
		enum floor_case fc = i;
		double v[FLOOR_ROUNDS];

		memcpy(v, ns[fc], sizeof(v));
		qsort(v, FLOOR_ROUNDS, sizeof(v[0]), cmp_double);
		printf("%s\"%s\":{\"median\":%.1f,\"min\":%.1f,\"max\":%.1f}",
		       i ? "," : "", floor_names[fc], v[FLOOR_ROUNDS / 2], v[0],
		       v[FLOOR_ROUNDS - 1]);
	}
	printf("}}\n");
out:
	fkv_ring_close(c.ring);
	fkv_close(c.kv);
	free(c.src);
	free(c.dst);
	return err;
}
