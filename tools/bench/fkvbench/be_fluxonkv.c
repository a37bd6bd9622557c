// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonkv backend: libfluxonkv.  A get returns a holder (zero-copy view into
 * the read-only segment mapping) and says which tier served it.  Threads of
 * one process share one handle (libfluxonkv is thread-safe); each process
 * opens its own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <fluxonkv.h>

#include "bench.h"

static pthread_mutex_t fkvb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fkv *fkvb_kv;
static pid_t fkvb_pid;
static unsigned int fkvb_users;

static int fkvb_open(const struct bench_opts *o, void **conn)
{
	int err = 0;

	pthread_mutex_lock(&fkvb_lock);
	if (!fkvb_kv || fkvb_pid != getpid()) {
		/* a forked child must not use its parent's handle */
		fkvb_kv = NULL;
		fkvb_users = 0;
		err = fkv_open(NULL, &fkvb_kv);
		if (err) {
			fprintf(stderr, "fkvbench: open %s: %s\n",
				FKV_DEFAULT_DEVICE, fkv_strerror(err));
			fkvb_kv = NULL;
		}
		fkvb_pid = getpid();
	}
	if (!err) {
		fkvb_users++;
		*conn = fkvb_kv;
	}
	pthread_mutex_unlock(&fkvb_lock);
	return err;
}

static void fkvb_close(void *conn)
{
	pthread_mutex_lock(&fkvb_lock);
	if (conn == fkvb_kv && --fkvb_users == 0) {
		fkv_close(fkvb_kv);
		fkvb_kv = NULL;
	}
	pthread_mutex_unlock(&fkvb_lock);
}

static int fkvb_put(void *conn, const char *key, size_t kl, const void *val,
		    size_t len)
{
	return fkv_put(conn, key, kl, val, len, NULL);
}

static int fkvb_get(void *conn, const char *key, size_t kl,
		    struct bench_ref *ref)
{
	struct fkv_holder *h = (struct fkv_holder *)ref->priv;
	int err;

	_Static_assert(sizeof(*h) <= sizeof(ref->priv), "holder fits");
	err = fkv_get(conn, key, kl, h);
	if (err)
		return err;
	ref->data = h->data;
	ref->len = h->len;
	ref->tier = h->source == FLUXONKV_SOURCE_SSD ? BENCH_TIER_SSD :
						       BENCH_TIER_DRAM;
	return 0;
}

static void fkvb_release(void *conn, struct bench_ref *ref)
{
	fkv_holder_release(conn, (struct fkv_holder *)ref->priv);
}

static uint64_t sysfs_u64(const char *name)
{
	unsigned long long v = 0;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/fluxonkv/%s", name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Cross-check only: get() already names the tier of every hit. */
static int fkvb_counters(const struct bench_opts *o, struct bench_counters *c)
{
	c->valid = true;
	c->ssd_hits = sysfs_u64("hits_ssd");
	c->ssd_read_bytes = sysfs_u64("ssd_read_bytes");
	return 0;
}

static void fkvb_describe(const struct bench_opts *o, char *buf, size_t cap)
{
	snprintf(buf, cap,
		 "\"segment_capacity_bytes\":%llu,\"segment_used_bytes\":%llu,"
		 "\"kv_ssd_capacity_bytes\":%llu,\"kv_ssd_used_bytes\":%llu,"
		 "\"replicas\":%llu,\"evictions\":%llu,\"room_waits\":%llu,"
		 "\"room_by_address\":%llu,\"room_pinned\":%llu,"
		 "\"upcall_timeouts\":%llu,\"ssd_busy_waits\":%llu,"
		 "\"ssd_revokes\":%llu,\"clean_drops\":%llu,"
		 "\"refills_room_async\":%llu",
		 (unsigned long long)sysfs_u64("segment_capacity_bytes"),
		 (unsigned long long)sysfs_u64("segment_used_bytes"),
		 (unsigned long long)sysfs_u64("kv_ssd_capacity_bytes"),
		 (unsigned long long)sysfs_u64("kv_ssd_used_bytes"),
		 (unsigned long long)sysfs_u64("replicas"),
		 (unsigned long long)sysfs_u64("evictions"),
		 (unsigned long long)sysfs_u64("room_waits"),
		 (unsigned long long)sysfs_u64("room_by_address"),
		 (unsigned long long)sysfs_u64("room_pinned"),
		 (unsigned long long)sysfs_u64("upcall_timeouts"),
		 (unsigned long long)sysfs_u64("ssd_busy_waits"),
		 (unsigned long long)sysfs_u64("ssd_revokes"),
		 (unsigned long long)sysfs_u64("clean_drops"),
		 (unsigned long long)sysfs_u64("refills_room_async"));
}

static int fkvb_ring_open(void *conn, unsigned int depth, void **ring)
{
	return fkv_ring_open(conn, depth, (struct fkv_ring **)ring);
}

static int fkvb_ring_get(void *ring, const char *key, size_t kl, uint64_t tag)
{
	struct fkv_op op = { .opcode = FLUXONKV_OP_GET, .key = key,
			     .key_len = kl };
	int err = fkv_ring_prep(ring, &op, tag);

	return err ? err : (fkv_ring_submit(ring) < 0 ? -EIO : 0);
}

static void fkvb_ref(struct bench_ref *ref, const struct fkv_holder *h)
{
	*(struct fkv_holder *)ref->priv = *h;
	ref->data = h->data;
	ref->len = h->len;
	ref->tier = h->source == FLUXONKV_SOURCE_SSD ? BENCH_TIER_SSD :
						       BENCH_TIER_DRAM;
}

static int fkvb_ring_reap(void *ring, uint64_t *tag, struct bench_ref *ref)
{
	struct fkv_completion c;
	int n = fkv_ring_reap(ring, &c, 1, 1);

	if (n < 0)
		return n;
	*tag = c.user_data;
	if (c.op.result)
		return c.op.result;
	fkvb_ref(ref, &c.op.holder);
	return 0;
}

static int fkvb_ring_get_batch(void *ring, const char *const *keys,
			       const size_t *kls, unsigned int n, int *res,
			       struct bench_ref *refs)
{
	struct fkv_op ops[BENCH_RING_BATCH_MAX];
	struct fkv_completion c;
	unsigned int i;
	int err;

	memset(ops, 0, n * sizeof(ops[0]));
	for (i = 0; i < n; i++) {
		ops[i].opcode = FLUXONKV_OP_GET;
		ops[i].key = keys[i];
		ops[i].key_len = kls[i];
	}
	err = fkv_ring_prep_batch(ring, ops, n, 0);
	if (!err && fkv_ring_submit(ring) < 0)
		err = -EIO;
	if (!err && fkv_ring_reap(ring, &c, 1, 1) != 1)
		err = -EIO;
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		res[i] = ops[i].result;
		if (!res[i])
			fkvb_ref(&refs[i], &ops[i].holder);
	}
	return 0;
}

static void fkvb_ring_close(void *ring)
{
	fkv_ring_close(ring);
}

const struct bench_backend bench_backend_fluxonkv = {
	.name = "fluxonkv",
	.open = fkvb_open,
	.close = fkvb_close,
	.put = fkvb_put,
	.get = fkvb_get,
	.release = fkvb_release,
	.counters = fkvb_counters,
	.describe = fkvb_describe,
	.ring_open = fkvb_ring_open,
	.ring_get = fkvb_ring_get,
	.ring_reap = fkvb_ring_reap,
	.ring_get_batch = fkvb_ring_get_batch,
	.ring_close = fkvb_ring_close,
};
