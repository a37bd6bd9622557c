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

/* A fresh FLUXONKV_IOC_INFO (segment_used, daemon flag are live values). */
int fkv_info(struct fkv *kv, struct fluxonkv_info *info);

/* Size and address of the read-only segment mapping. */
size_t fkv_segment_size(const struct fkv *kv);
const void *fkv_segment_base(const struct fkv *kv);

/*
 * Store @value under @key; returns once any later get sees it.  @put_id
 * (may be NULL) receives the version assigned.  Keys are 1..key_max bytes,
 * values 1..value_max bytes (struct fluxonkv_info): -EINVAL for a NULL or
 * empty key/value, -E2BIG past a limit.  -EBADF: opened read-only.
 * -ENOTCONN: no daemon; -ENOSPC:
 * nothing could be evicted to make room; -ETIMEDOUT: the daemon did not
 * answer in time.
 */
int fkv_put(struct fkv *kv, const void *key, size_t key_len,
	    const void *value, size_t value_len, uint64_t *put_id);

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
