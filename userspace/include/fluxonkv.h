/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libfluxonkv - the C client API of the fluxonkv node-local cache.
 *
 * A thin layer over the ioctls and the read-only segment mapping of
 * /dev/fluxonkv (see <linux/fluxonkv.h>).  Every function returns 0 or a
 * negative errno; fkv_strerror() says what an error means for fluxonkv.
 *
 * Example:
 *
 *	struct fkv *kv;
 *	struct fkv_holder h;
 *	uint64_t put_id;
 *	int err;
 *
 *	err = fkv_open(NULL, &kv);
 *	if (err) {
 *		fprintf(stderr, "fluxonkv: %s\n", fkv_strerror(err));
 *		return err;
 *	}
 *	err = fkv_put(kv, "k", 1, buf, buf_len, &put_id);
 *	...
 *	err = fkv_get(kv, "k", 1, &h);
 *	if (err == -ENOENT) {
 *		... miss ...
 *	} else if (!err) {
 *		consume(h.data, h.len);		// zero-copy, read-only
 *		fkv_holder_release(kv, &h);	// the bytes may go after this
 *	}
 *	fkv_close(kv);
 *
 * Threads: a struct fkv may be used by any number of threads at once
 * (everything but fkv_close(), which must be the last call on it).  A holder
 * belongs to the handle that took it: release it through the same handle.
 * Closing the handle releases every holder it still has; their data pointers
 * become invalid with the mapping.
 */
#ifndef FLUXONKV_H
#define FLUXONKV_H

#include <stddef.h>
#include <stdint.h>

#include <linux/fluxonkv.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FKV_DEFAULT_DEVICE	"/dev/" FLUXONKV_DEVICE_NAME

/* Opaque handle: an open /dev/fluxonkv plus its read-only segment mapping. */
struct fkv;

/*
 * A pinned, read-only, zero-copy view of one value.  The bytes at
 * [data, data + len) do not change until the holder is released, whatever
 * happens to the key meanwhile (overwrite, delete, eviction).
 */
struct fkv_holder {
	uint64_t id;		/* holder id from the kernel */
	const void *data;	/* points into the read-only mapping */
	size_t len;
	uint64_t put_id;	/* version of the value */
	unsigned int source;	/* enum fluxonkv_source */
};

/*
 * Open @dev (NULL = FKV_DEFAULT_DEVICE) and map its segment read-only.
 * -ENODEV: no such device node (is the module loaded?); -ENOTTY: @dev is not
 * a fluxonkv device; -EPROTO: the module speaks another ABI version;
 * -EACCES: no permission to open the device.  A device the caller may
 * only read is opened read-only: gets work, puts and deletes get -EBADF.
 */
int fkv_open(const char *dev, struct fkv **out);

/* Unmap and close.  The kernel releases holders that are still held. */
void fkv_close(struct fkv *kv);

/*
 * Tenants (Documentation/fluxonkv/uapi.md "Tenants").  A tenant is a key
 * space of its own: tenant 1's key "k" and tenant 0's "k" are different
 * keys.  A handle starts in tenant 0 (the default, "default" by name) and
 * may be bound, once, to another: every key operation through it is then
 * in that tenant's key space, its keys at most FLUXONKV_KEY_MAX -
 * FLUXONKV_TENANT_PREFIX_LEN (250) bytes (fkv_key_max()).  The operator
 * names tenants and the uids / gids that may use each in fluxond's
 * configuration (`tenants:`); root (CAP_SYS_ADMIN) may bind to any.
 */
#define FKV_TENANT_DEFAULT	"default"	/* tenant 0's name */
#define FKV_TENANT_NAME_MAX	63		/* as fluxond's config allows */

/*
 * Bind @kv to tenant @tenant (1..FLUXONKV_TENANT_ID_MAX), before it holds
 * anything.  -EINVAL: @tenant 0 or past the max; -ENOENT: no such tenant
 * in the table the daemon loaded; -EPERM: the caller's uid / groups are
 * not the tenant's (and it lacks CAP_SYS_ADMIN); -EBUSY: @kv is already
 * bound, or has holders open;
 * -EOPNOTSUPP: the module predates tenants (no FLUXONKV_INFO_TENANTS).
 * Call it before sharing @kv with other threads: operations that race the
 * bind run in either key space.
 */
int fkv_bind_tenant(struct fkv *kv, uint32_t tenant);

/*
 * The id of the tenant @name, asked of fluxond over its control socket
 * @ctl_path (NULL: $FLUXOND_CONTROL, else FKV_CONTROL_PATH,
 * /run/fluxonkv/fluxond.sock).  "default" is 0 without asking.  -EINVAL:
 * @name empty or longer than FKV_TENANT_NAME_MAX; -ENOENT: the daemon has
 * no such tenant; -ENOTCONN: no daemon listens at the socket; -EACCES: no
 * permission on the socket; -ETIMEDOUT: no answer in 10 s; -EOPNOTSUPP:
 * the daemon closed without an answer (it predates tenants); -EBADMSG: an
 * answer that is not one; -ENAMETOOLONG: @ctl_path does not fit a UNIX
 * socket address.
 */
int fkv_tenant_id(const char *ctl_path, const char *name, uint32_t *id);

/*
 * fkv_tenant_id(NULL, @name), fkv_open(@dev) and fkv_bind_tenant() in one:
 * a handle in tenant @name's key space (@name NULL or "default": tenant
 * 0, no bind, exactly fkv_open()).  Any step's error; nothing stays open
 * on failure (*@out NULL).
 */
int fkv_open_tenant(const char *dev, const char *name, struct fkv **out);

/* The tenant @kv is bound to (0: none), and the longest key it may use. */
uint32_t fkv_tenant(const struct fkv *kv);
size_t fkv_key_max(const struct fkv *kv);

/* A fresh FLUXONKV_IOC_INFO (segment_used, daemon flag are live values). */
int fkv_info(struct fkv *kv, struct fluxonkv_info *info);

/* Size and address of the read-only segment mapping. */
size_t fkv_segment_size(const struct fkv *kv);
const void *fkv_segment_base(const struct fkv *kv);

/*
 * Store @value under @key; returns once any later get sees it.  @put_id
 * (may be NULL) receives the version assigned.  Keys are 1..key_max bytes
 * (fkv_key_max(): 256, 250 once bound to a tenant), values 1..value_max
 * bytes (struct fluxonkv_info): -EINVAL for a NULL or
 * empty key/value, -E2BIG past a limit.  -EBADF: opened read-only.
 * -ENOTCONN: no daemon; -ENOSPC:
 * nothing could be evicted to make room; -ETIMEDOUT: the daemon did not
 * answer in time.
 */
int fkv_put(struct fkv *kv, const void *key, size_t key_len,
	    const void *value, size_t value_len, uint64_t *put_id);

/*
 * A gather put: store the concatenation of the @iovcnt pieces at @iov
 * (1..FLUXONKV_IOV_MAX, empty pieces allowed) under @key, each copied by
 * the kernel straight into the cache (no staging copy).  As fkv_put()
 * otherwise; -EINVAL: no pieces, too many, a total of 0 or one that
 * overflows; -EFAULT: a piece the kernel cannot read (nothing is stored).
 * -EINVAL from a module that predates gather puts (FLUXONKV_PUT_F_IOV).
 */
struct iovec;
int fkv_put_iov(struct fkv *kv, const void *key, size_t key_len,
		const struct iovec *iov, size_t iovcnt, uint64_t *put_id);

/*
 * Pin the current value of @key into @out (zeroed first, also on failure).
 * -ENOENT on a miss; -EIO if the kernel named bytes outside the mapping (the
 * holder is then released again).
 */
int fkv_get(struct fkv *kv, const void *key, size_t key_len,
	    struct fkv_holder *out);

/* What fkv_lookup() found. */
struct fkv_lookup {
	size_t len;		/* value length */
	uint64_t put_id;	/* version of the value */
	unsigned int source;	/* enum fluxonkv_source: where a get would read it */
};

/*
 * Whether @key has a value, and its length, without reading it: 0 and *@out
 * filled, -ENOENT if not (*@out zeroed).  Takes no holder, triggers no SSD
 * refill or remote transfer and counts no access for eviction.  The answer
 * may be stale by the time the caller acts on it.  -ENOTTY: the module
 * predates FLUXONKV_IOC_LOOKUP.
 */
int fkv_lookup(struct fkv *kv, const void *key, size_t key_len,
	       struct fkv_lookup *out);

/*
 * Copy the current value of @key into @buf (room for @buf_len bytes) in one
 * call: no holder is left behind.  0: out->len bytes copied (@out may be
 * NULL); -ENOENT on a miss; -EMSGSIZE: the value is longer than @buf_len
 * (nothing copied, out->len says how long).  -ENOTTY: the module predates
 * FLUXONKV_IOC_GET_INTO.
 */
int fkv_get_into(struct fkv *kv, const void *key, size_t key_len, void *buf,
		 size_t buf_len, struct fkv_lookup *out);

/*
 * One operation of fkv_batch() or of a ring (fkv_ring_prep()).  The caller
 * sets @opcode and the inputs it needs; the outputs are written back.
 */
struct fkv_op {
	unsigned int opcode;	/* FLUXONKV_OP_GET, _GET_INTO, _RELEASE,
				 * _LOOKUP, _PUT, _PUT_IOV, _DELETE */
	const void *key;	/* all but RELEASE */
	size_t key_len;
	const void *value;	/* PUT: the value; PUT_IOV: its pieces, an
				 * array of struct iovec (64-bit only:
				 * -EOPNOTSUPP elsewhere) */
	void *buf;		/* GET_INTO: destination */
	size_t buf_len;		/* PUT: value length; PUT_IOV: pieces at
				 * @value; GET_INTO: room at @buf */
	struct fkv_holder holder;	/* GET: out; RELEASE: in (zeroed) */
	size_t len;		/* out: GET, GET_INTO, LOOKUP */
	uint64_t put_id;	/* out: GET, GET_INTO, LOOKUP, PUT */
	unsigned int source;	/* out: GET, GET_INTO, LOOKUP */
	int result;		/* out: 0 or -errno, as the single call */
};

/*
 * Run @n operations in order with as few system calls as possible
 * (FLUXONKV_IOC_BATCH, up to FLUXONKV_BATCH_MAX per call).  Each reports
 * its own @result; a miss does not stop the batch.  Returns 0 when every
 * operation ran, or -errno when the batch itself failed (ops[i].result of
 * those that did not run is -ECANCELED).
 */
int fkv_batch(struct fkv *kv, struct fkv_op *ops, size_t n);

/*
 * Asynchronous operations over io_uring (IORING_OP_URING_CMD): queue with
 * fkv_ring_prep(), send with fkv_ring_submit(), collect with
 * fkv_ring_reap().  A DRAM hit completes during the submit; an operation
 * that waits (SSD refill, daemon, peer) completes later without blocking
 * the submitter.  A ring belongs to one thread at a time; the key is
 * copied at prep, a PUT's value and a GET_INTO's buffer must stay valid
 * until the operation's completion is reaped.  Holders taken through a
 * ring belong to its struct fkv (release them either way).
 */
struct fkv_ring;

/*
 * A completed operation: @op with its outputs, and the caller's tag.  For
 * a batch (fkv_ring_prep_batch) @ops and @nops are the caller's ops, their
 * outputs written, and @op carries only the batch's own @result; for a
 * single operation @ops is NULL and @nops 0.
 */
struct fkv_completion {
	uint64_t user_data;
	struct fkv_op op;
	struct fkv_op *ops;
	size_t nops;
};

/*
 * A ring of @depth operations in flight at most (1..4096).  -ENOSYS or
 * -EPERM: io_uring unavailable here; -EOPNOTSUPP shows in the first
 * completion if the module predates it.
 */
int fkv_ring_open(struct fkv *kv, unsigned int depth, struct fkv_ring **out);

/* Queue @op (nothing is sent yet).  -EBUSY: @depth operations in flight. */
int fkv_ring_prep(struct fkv_ring *r, const struct fkv_op *op,
		  uint64_t user_data);

/*
 * Queue @n operations (1..FLUXONKV_BATCH_MAX) as one command: one SQE, one
 * FLUXONKV_IOC_BATCH and one completion for them all, the cheapest way
 * through a ring for many DRAM hits.  Nothing is copied: @ops (their keys,
 * values and buffers too) must stay valid until the completion is reaped
 * (or the ring closed); the outputs, each operation's @result included,
 * are written into @ops then (-ECANCELED: it did not run).  The batch
 * completes when its last operation does: a refill among hits holds their
 * completion back.  GETs read from the local SSD all go at once, the
 * operations after them running meanwhile; where the module has to stop
 * early (an operation on the key of a read in flight, one that waits for
 * the daemon) fkv_ring_reap() sends the rest again by itself (if it cannot
 * -- no room in the submission queue -- the completion's result is
 * -EAGAIN, the rest -ECANCELED).  -EINVAL, a check's error (nothing
 * queued), -EBUSY, -ENOMEM.
 */
int fkv_ring_prep_batch(struct fkv_ring *r, struct fkv_op *ops, size_t n,
			uint64_t user_data);

/* Send what was queued; returns how many, or -errno. */
int fkv_ring_submit(struct fkv_ring *r);

/*
 * Up to @max completions into @c, waiting until at least @min are there
 * (0: only what is ready).  Returns how many, or -errno.
 */
int fkv_ring_reap(struct fkv_ring *r, struct fkv_completion *c,
		  unsigned int max, unsigned int min);

/* Operations queued or in flight. */
unsigned int fkv_ring_inflight(const struct fkv_ring *r);

/* Wait for what is in flight, then free the ring. */
void fkv_ring_close(struct fkv_ring *r);

/* The file descriptor of @kv (for poll or a raw ioctl; do not close it). */
int fkv_fd(const struct fkv *kv);

/*
 * Release a holder taken through @kv and zero *@h on success.  Releasing a
 * zeroed (never taken or already released) holder returns -EINVAL.
 */
int fkv_holder_release(struct fkv *kv, struct fkv_holder *h);

/* Remove @key; -ENOENT if it had no value.  Held bytes stay valid. */
int fkv_delete(struct fkv *kv, const void *key, size_t key_len);

/*
 * Hand an SSD shard to the module (CAP_SYS_ADMIN): @fd is a regular file or
 * block device opened O_RDWR | O_DIRECT; the shard is [offset, offset +
 * capacity) of it; shards on one physical device share a @device number.
 * The module keeps its own reference: @fd may be closed afterwards.
 */
int fkv_ssd_attach(struct fkv *kv, int fd, uint64_t offset, uint64_t capacity,
		   uint32_t device, uint32_t *shard);

/*
 * What the negative errno @err means for fluxonkv (a positive errno is taken
 * as its negation).  Never NULL; the string is static and thread-safe.
 */
const char *fkv_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* FLUXONKV_H */
