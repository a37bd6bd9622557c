// SPDX-License-Identifier: GPL-2.0
/*
 * libfluxonkv core: the ioctls of /dev/fluxonkv and the read-only segment
 * mapping.
 *
 * The handle is immutable after fkv_open() (fd, mapping, limits), so
 * concurrent calls need no lock: each is one ioctl on a struct on the
 * caller's stack, and the kernel serialises what it must.  The one
 * exception, fkv_bind_tenant(), lowers key_max and sets tenant: both are
 * read and written atomically.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fluxonkv.h>

#include "fkv_internal.h"

struct fkv {
	int fd;
	const unsigned char *base;	/* PROT_READ, MAP_SHARED */
	size_t size;
	size_t key_max;			/* atomic: fkv_bind_tenant() */
	uint64_t value_max;
	uint32_t tenant;		/* atomic: 0 until bound */
	uint32_t info_flags;		/* FLUXONKV_INFO_* at open */
};

/* One ioctl, restarted when a signal interrupted it; 0 or -errno. */
static int fkv_ioctl(int fd, unsigned long req, void *arg)
{
	int ret;

	do {
		ret = ioctl(fd, req, arg);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : 0;
}

static int fkv_check_key(const struct fkv *kv, const void *key, size_t len)
{
	if (!key || !len)
		return -EINVAL;
	if (len > __atomic_load_n(&kv->key_max, __ATOMIC_RELAXED))
		return -E2BIG;
	return 0;
}

/* Does [offset, offset + len) lie inside a mapping of @size bytes? */
static bool fkv_range_ok(uint64_t offset, uint64_t len, size_t size)
{
	return offset <= size && len <= size - offset;
}

static int fkv_query_info(int fd, struct fluxonkv_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return fkv_ioctl(fd, FLUXONKV_IOC_INFO, info);
}

int fkv_open(const char *dev, struct fkv **out)
{
	struct fluxonkv_info info;
	struct fkv *kv;
	void *base;
	int fd, err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!dev)
		dev = FKV_DEFAULT_DEVICE;

	do {
		fd = open(dev, O_RDWR | O_CLOEXEC);
	} while (fd < 0 && errno == EINTR);
	/* Read access only: a consumer (gets work, puts fail with EBADF). */
	while (fd < 0 && errno == EACCES) {
		fd = open(dev, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 || errno != EINTR)
			break;
		errno = EACCES;
	}
	if (fd < 0) {
		err = -errno;
		/* no node, or a node without its driver: module not loaded */
		return err == -ENOENT || err == -ENXIO ? -ENODEV : err;
	}

	err = fkv_query_info(fd, &info);
	if (err)
		goto err_close;
	if (info.abi_version != FLUXONKV_ABI_VERSION) {
		err = -EPROTO;
		goto err_close;
	}
	if (!info.segment_size || info.segment_size > SIZE_MAX) {
		err = -EIO;
		goto err_close;
	}

	kv = calloc(1, sizeof(*kv));
	if (!kv) {
		err = -ENOMEM;
		goto err_close;
	}
	base = mmap(NULL, info.segment_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto err_free;
	}

	kv->fd = fd;
	kv->base = base;
	kv->size = info.segment_size;
	kv->key_max = info.key_max ? info.key_max : FLUXONKV_KEY_MAX;
	kv->value_max = info.value_max ? info.value_max : FLUXONKV_VALUE_MAX;
	kv->info_flags = info.flags;
	*out = kv;
	return 0;

err_free:
	free(kv);
err_close:
	close(fd);
	return err;
}

void fkv_close(struct fkv *kv)
{
	if (!kv)
		return;
	munmap((void *)kv->base, kv->size);
	close(kv->fd);
	free(kv);
}

int fkv_bind_tenant(struct fkv *kv, uint32_t tenant)
{
	struct fluxonkv_tenant t;
	struct fluxonkv_info info;
	size_t key_max;
	int err;

	if (!kv || !tenant || tenant > FLUXONKV_TENANT_ID_MAX)
		return -EINVAL;
	memset(&t, 0, sizeof(t));
	t.size = sizeof(t);
	t.tenant = tenant;
	err = fkv_ioctl(kv->fd, FLUXONKV_IOC_TENANT, &t);
	if (err == -ENOTTY)
		return -EOPNOTSUPP;	/* the module predates tenants */
	if (err)
		return err;
	key_max = t.key_max;
	if (!key_max)
		key_max = !fkv_query_info(kv->fd, &info) && info.key_max ?
			  info.key_max :
			  FLUXONKV_KEY_MAX - FLUXONKV_TENANT_PREFIX_LEN;
	__atomic_store_n(&kv->key_max, key_max, __ATOMIC_RELAXED);
	__atomic_store_n(&kv->tenant, tenant, __ATOMIC_RELEASE);
	return 0;
}

uint32_t fkv_tenant(const struct fkv *kv)
{
	return kv ? __atomic_load_n(&kv->tenant, __ATOMIC_ACQUIRE) : 0;
}

size_t fkv_key_max(const struct fkv *kv)
{
	return kv ? __atomic_load_n(&kv->key_max, __ATOMIC_RELAXED) : 0;
}

int fkv_info(struct fkv *kv, struct fluxonkv_info *info)
{
	if (!kv || !info)
		return -EINVAL;
	return fkv_query_info(kv->fd, info);
}

size_t fkv_segment_size(const struct fkv *kv)
{
	return kv ? kv->size : 0;
}

const void *fkv_segment_base(const struct fkv *kv)
{
	return kv ? kv->base : NULL;
}

int fkv_put(struct fkv *kv, const void *key, size_t key_len,
	    const void *value, size_t value_len, uint64_t *put_id)
{
	struct fluxonkv_put p;
	int err;

	if (!kv)
		return -EINVAL;
	err = fkv_check_key(kv, key, key_len);
	if (err)
		return err;
	if (!value || !value_len)
		return -EINVAL;
	if (value_len > kv->value_max)
		return -E2BIG;

	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.key_len = key_len;
	p.key_ptr = (uintptr_t)key;
	p.value_ptr = (uintptr_t)value;
	p.value_len = value_len;
	err = fkv_ioctl(kv->fd, FLUXONKV_IOC_PUT, &p);
	if (err)
		return err;
	if (put_id)
		*put_id = p.put_id;
	return 0;
}

/*
 * struct iovec is struct fluxonkv_iovec on LP64: the kernel reads the
 * caller's array as it is.  Elsewhere fkv_put_iov() converts it.
 */
#define FKV_IOV_NATIVE	(sizeof(struct iovec) == sizeof(struct fluxonkv_iovec) && \
			 sizeof(void *) == sizeof(uint64_t) && \
			 sizeof(size_t) == sizeof(uint64_t))

/* The total length of @n pieces, or -EINVAL (@n, or overflow). */
static int fkv_iov_total(const struct iovec *iov, size_t n, size_t *total)
{
	size_t i, t = 0;

	if (!iov || !n || n > FLUXONKV_IOV_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (t + iov[i].iov_len < t)
			return -EINVAL;
		t += iov[i].iov_len;
	}
	*total = t;
	return 0;
}

int fkv_put_iov(struct fkv *kv, const void *key, size_t key_len,
		const struct iovec *iov, size_t iovcnt, uint64_t *put_id)
{
	struct fluxonkv_iovec *conv = NULL;
	struct fluxonkv_put p;
	size_t total, i;
	int err;

	if (!kv)
		return -EINVAL;
	err = fkv_check_key(kv, key, key_len);
	if (err)
		return err;
	err = fkv_iov_total(iov, iovcnt, &total);
	if (err)
		return err;
	if (!total)
		return -EINVAL;
	if (total > kv->value_max)
		return -E2BIG;

	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	p.key_len = key_len;
	p.key_ptr = (uintptr_t)key;
	p.value_len = total;
	p.flags = FLUXONKV_PUT_F_IOV;
	p.iov_count = iovcnt;
	if (FKV_IOV_NATIVE) {
		p.value_ptr = (uintptr_t)iov;
	} else {
		conv = calloc(iovcnt, sizeof(*conv));
		if (!conv)
			return -ENOMEM;
		for (i = 0; i < iovcnt; i++) {
			conv[i].base = (uintptr_t)iov[i].iov_base;
			conv[i].len = iov[i].iov_len;
		}
		p.value_ptr = (uintptr_t)conv;
	}
	err = fkv_ioctl(kv->fd, FLUXONKV_IOC_PUT, &p);
	free(conv);
	if (err)
		return err;
	if (put_id)
		*put_id = p.put_id;
	return 0;
}

static int fkv_release_id(struct fkv *kv, uint64_t id)
{
	struct fluxonkv_release r;

	memset(&r, 0, sizeof(r));
	r.size = sizeof(r);
	r.holder_id = id;
	return fkv_ioctl(kv->fd, FLUXONKV_IOC_RELEASE, &r);
}

int fkv_get(struct fkv *kv, const void *key, size_t key_len,
	    struct fkv_holder *out)
{
	struct fluxonkv_get g;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!kv)
		return -EINVAL;
	err = fkv_check_key(kv, key, key_len);
	if (err)
		return err;

	memset(&g, 0, sizeof(g));
	g.size = sizeof(g);
	g.key_len = key_len;
	g.key_ptr = (uintptr_t)key;
	err = fkv_ioctl(kv->fd, FLUXONKV_IOC_GET, &g);
	if (err)
		return err;

	/* Never build a pointer from an offset we have not checked. */
	if (!g.len || !fkv_range_ok(g.offset, g.len, kv->size)) {
		fkv_release_id(kv, g.holder_id);
		return -EIO;
	}
	out->id = g.holder_id;
	out->data = kv->base + g.offset;
	out->len = g.len;
	out->put_id = g.put_id;
	out->source = g.source;
	return 0;
}

int fkv_lookup(struct fkv *kv, const void *key, size_t key_len,
	       struct fkv_lookup *out)
{
	struct fluxonkv_lookup lk;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!kv)
		return -EINVAL;
	err = fkv_check_key(kv, key, key_len);
	if (err)
		return err;

	memset(&lk, 0, sizeof(lk));
	lk.size = sizeof(lk);
	lk.key_len = key_len;
	lk.key_ptr = (uintptr_t)key;
	err = fkv_ioctl(kv->fd, FLUXONKV_IOC_LOOKUP, &lk);
	if (err)
		return err;
	out->len = lk.len;
	out->put_id = lk.put_id;
	out->source = lk.source;
	return 0;
}

int fkv_holder_release(struct fkv *kv, struct fkv_holder *h)
{
	int err;

	/* data is never NULL for a taken holder: catches double releases */
	if (!kv || !h || !h->data)
		return -EINVAL;
	err = fkv_release_id(kv, h->id);
	if (err)
		return err;
	memset(h, 0, sizeof(*h));
	return 0;
}

int fkv_delete(struct fkv *kv, const void *key, size_t key_len)
{
	struct fluxonkv_delete d;
	int err;

	if (!kv)
		return -EINVAL;
	err = fkv_check_key(kv, key, key_len);
	if (err)
		return err;

	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.key_len = key_len;
	d.key_ptr = (uintptr_t)key;
	return fkv_ioctl(kv->fd, FLUXONKV_IOC_DELETE, &d);
}

int fkv_ssd_attach(struct fkv *kv, int fd, uint64_t offset, uint64_t capacity,
		   uint32_t device, uint32_t *shard)
{
	struct fluxonkv_ssd_attach a;
	int err;

	if (!kv || fd < 0)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.fd = fd;
	a.offset = offset;
	a.capacity = capacity;
	a.device = device;
	err = fkv_ioctl(kv->fd, FLUXONKV_IOC_SSD_ATTACH, &a);
	if (!err && shard)
		*shard = a.shard;
	return err;
}

int fkv_fd(const struct fkv *kv)
{
	return kv ? kv->fd : -EINVAL;
}

bool fkv_batch_resume(const struct fkv *kv)
{
	return kv->info_flags & FLUXONKV_INFO_BATCH_RESUME;
}

int fkv_get_into(struct fkv *kv, const void *key, size_t key_len, void *buf,
		 size_t buf_len, struct fkv_lookup *out)
{
	struct fluxonkv_get_into gi;
	int err;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!kv || !buf || !buf_len)
		return -EINVAL;
	err = fkv_check_key(kv, key, key_len);
	if (err)
		return err;

	memset(&gi, 0, sizeof(gi));
	gi.size = sizeof(gi);
	gi.key_len = key_len;
	gi.key_ptr = (uintptr_t)key;
	gi.buf_ptr = (uintptr_t)buf;
	gi.buf_len = buf_len;
	err = fkv_ioctl(kv->fd, FLUXONKV_IOC_GET_INTO, &gi);
	if ((!err || err == -EMSGSIZE) && out) {
		out->len = gi.len;
		out->put_id = gi.put_id;
		out->source = gi.source;
	}
	return err;
}

/* What the library refuses before the kernel sees @op (0: send it). */
int fkv_op_check(const struct fkv *kv, const struct fkv_op *op)
{
	switch (op->opcode) {
	case FLUXONKV_OP_RELEASE:
		return op->holder.data ? 0 : -EINVAL;
	case FLUXONKV_OP_PUT:
		if (!op->value || !op->buf_len)
			return -EINVAL;
		if (op->buf_len > kv->value_max)
			return -E2BIG;
		break;
	case FLUXONKV_OP_PUT_IOV: {
		size_t total;
		int err;

		if (!FKV_IOV_NATIVE)
			return -EOPNOTSUPP;	/* fkv_put_iov() converts */
		err = fkv_iov_total(op->value, op->buf_len, &total);
		if (err)
			return err;
		if (!total)
			return -EINVAL;
		if (total > kv->value_max)
			return -E2BIG;
		break;
	}
	case FLUXONKV_OP_GET_INTO:
		if (!op->buf || !op->buf_len)
			return -EINVAL;
		break;
	case FLUXONKV_OP_GET:
	case FLUXONKV_OP_LOOKUP:
	case FLUXONKV_OP_DELETE:
		break;
	default:
		return -EINVAL;
	}
	return fkv_check_key(kv, op->key, op->key_len);
}

/* @op in the kernel's form; @key is where the kernel reads the key. */
void fkv_op_encode(struct fluxonkv_op *k, const struct fkv_op *op,
		   const void *key)
{
	memset(k, 0, sizeof(*k));
	k->opcode = op->opcode;
	if (op->opcode == FLUXONKV_OP_RELEASE) {
		k->holder_id = op->holder.id;
		return;
	}
	k->key_len = op->key_len;
	k->key_ptr = (uintptr_t)key;
	if (op->opcode == FLUXONKV_OP_PUT) {
		k->buf_ptr = (uintptr_t)op->value;
		k->buf_len = op->buf_len;
	} else if (op->opcode == FLUXONKV_OP_PUT_IOV) {
		/* checked by fkv_op_check(): native layout, no overflow */
		const struct iovec *iov = op->value;
		size_t i;

		k->buf_ptr = (uintptr_t)iov;
		k->iov_count = op->buf_len;
		for (i = 0; i < op->buf_len; i++)
			k->buf_len += iov[i].iov_len;
	} else if (op->opcode == FLUXONKV_OP_GET_INTO) {
		k->buf_ptr = (uintptr_t)op->buf;
		k->buf_len = op->buf_len;
	}
}

/* The kernel's answer @k into @op's outputs. */
void fkv_op_decode(struct fkv *kv, struct fkv_op *op,
		   const struct fluxonkv_op *k)
{
	op->result = k->result;
	switch (op->opcode) {
	case FLUXONKV_OP_RELEASE:
		if (!k->result)
			memset(&op->holder, 0, sizeof(op->holder));
		return;
	case FLUXONKV_OP_GET:
		memset(&op->holder, 0, sizeof(op->holder));
		if (k->result)
			break;
		/* Never build a pointer from an offset we have not checked. */
		if (!k->len || !fkv_range_ok(k->offset, k->len, kv->size)) {
			fkv_release_id(kv, k->holder_id);
			op->result = -EIO;
			break;
		}
		op->holder.id = k->holder_id;
		op->holder.data = kv->base + k->offset;
		op->holder.len = k->len;
		op->holder.put_id = k->put_id;
		op->holder.source = k->source;
		break;
	default:
		break;
	}
	op->len = k->len;
	op->put_id = k->put_id;
	op->source = k->source;
}

/* Entries per FLUXONKV_IOC_BATCH call from fkv_batch (on the stack). */
#define FKV_BATCH_CHUNK	64

int fkv_batch(struct fkv *kv, struct fkv_op *ops, size_t n)
{
	struct fluxonkv_op k[FKV_BATCH_CHUNK];
	size_t idx[FKV_BATCH_CHUNK];
	struct fluxonkv_batch b;
	size_t i = 0, j, m;
	int err;

	if (!kv || (n && !ops))
		return -EINVAL;
	while (i < n) {
		for (m = 0; i < n && m < FKV_BATCH_CHUNK; i++) {
			ops[i].result = fkv_op_check(kv, &ops[i]);
			if (ops[i].result)
				continue;
			fkv_op_encode(&k[m], &ops[i], ops[i].key);
			idx[m++] = i;
		}
		if (!m)
			continue;
		memset(&b, 0, sizeof(b));
		b.size = sizeof(b);
		b.count = m;
		b.ops_ptr = (uintptr_t)k;
		b.op_size = sizeof(k[0]);
		do {
			/* an interrupted batch resumes at b.done */
			err = ioctl(kv->fd, FLUXONKV_IOC_BATCH, &b) < 0 ? -errno : 0;
		} while (err == -EINTR && b.done < m);
		for (j = 0; j < b.done && j < m; j++)
			fkv_op_decode(kv, &ops[idx[j]], &k[j]);
		if (err) {
			for (; j < m; j++)
				ops[idx[j]].result = -ECANCELED;
			for (; i < n; i++)
				ops[i].result = -ECANCELED;
			return err;
		}
	}
	return 0;
}
