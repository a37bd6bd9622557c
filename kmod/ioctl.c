// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl ABI of /dev/fluxonkv: copy in, validate, call the kv flows (kv*.c), copy out.
 *
 * Every argument struct begins with its size (size-extensible structs, as
 * copy_struct_from_user defines them).  Nothing from userspace is used
 * before it is validated: sizes, reserved fields, flags, key and value
 * lengths; user pointers are only ever dereferenced with copy_*_user.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "compat.h"
#include "fluxonkv.h"

static_assert(sizeof(struct fluxonkv_info) == FLUXONKV_INFO_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_put) == FLUXONKV_PUT_SIZE_VER1);
static_assert(sizeof(struct fluxonkv_iovec) == 16);
static_assert(sizeof(struct fluxonkv_get) == FLUXONKV_GET_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_release) == FLUXONKV_RELEASE_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_delete) == FLUXONKV_DELETE_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_ssd_attach) == FLUXONKV_SSD_ATTACH_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_hold) == FLUXONKV_HOLD_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_ssd_stage) == FLUXONKV_SSD_STAGE_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_target) == FLUXONKV_TARGET_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_publish) == FLUXONKV_PUBLISH_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_lookup) == FLUXONKV_LOOKUP_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_get_into) == FLUXONKV_GET_INTO_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_op) == FLUXONKV_OP_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_batch) == FLUXONKV_BATCH_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_uring_cmd) == 16);

/*
 * Copy a size-prefixed struct in.  @ver0 is the smallest size ever defined;
 * anything up to a page is accepted if the bytes we do not know are zero.
 * Returns the caller's size (for copy-out) or -errno.
 */
static long fluxonkv_copy_in(void *karg, size_t ksize, size_t ver0,
			     void __user *uarg)
{
	u32 usize;
	int ret;

	/* The common case, a caller built against this header: one copy. */
	if (!copy_from_user(karg, uarg, ksize) && *(u32 *)karg == ksize)
		return ksize;
	if (get_user(usize, (u32 __user *)uarg))
		return -EFAULT;
	if (usize < ver0 || usize > PAGE_SIZE)
		return -EINVAL;
	ret = copy_struct_from_user(karg, ksize, uarg, usize);
	if (ret)
		return ret;
	return usize;
}

static int fluxonkv_copy_out(void __user *uarg, const void *karg,
			     size_t ksize, size_t usize)
{
	return copy_to_user(uarg, karg, min(ksize, usize)) ? -EFAULT : 0;
}

static bool fluxonkv_zero(const u64 *v, size_t n)
{
	while (n--)
		if (v[n])
			return false;
	return true;
}

/*
 * The key at @key_ptr (@key_len bytes) as the module names it, into @key
 * (FLUXONKV_KEY_MAX bytes): a bound description's keys get its tenant's
 * prefix (@key_len grows by it); an unprivileged description may not name
 * a tenant's key itself.  The daemon's (privileged) descriptions pass the
 * keys of every tenant as they are.
 */
static int fluxonkv_key_in(const struct fluxonkv_session *s, u8 *key,
			   u32 *key_len, u64 key_ptr)
{
	u32 tenant = READ_ONCE(s->tenant);
	u32 len = *key_len, pre = tenant ? FLUXONKV_TENANT_PREFIX_LEN : 0;

	if (!len || len > FLUXONKV_KEY_MAX - pre)
		return -EINVAL;
	if (copy_from_user(key + pre, u64_to_user_ptr(key_ptr), len))
		return -EFAULT;
	if (pre) {
		fluxonkv_tenant_prefix(key, tenant);
		*key_len = len + pre;
	} else if (!s->privileged && fluxonkv_key_reserved(key, len)) {
		return -EINVAL;
	}
	return 0;
}

static u64 fluxonkv_value_max(void)
{
	return min_t(u64, FLUXONKV_VALUE_MAX, fluxonkv_seg.size);
}

static long fluxonkv_ioc_info(struct fluxonkv_session *s, void __user *uarg)
{
	struct fluxonkv_info info;
	long usize;

	usize = fluxonkv_copy_in(&info, sizeof(info), FLUXONKV_INFO_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (info.abi_version || info.segment_size || info.value_max ||
	    info.key_max || info.flags || info.segment_used ||
	    !fluxonkv_zero(info.reserved, ARRAY_SIZE(info.reserved)))
		return -EINVAL;
	info.abi_version = FLUXONKV_ABI_VERSION;
	info.segment_size = fluxonkv_seg.size;
	info.value_max = fluxonkv_value_max();
	info.key_max = FLUXONKV_KEY_MAX -
		       (READ_ONCE(s->tenant) ? FLUXONKV_TENANT_PREFIX_LEN : 0);
	info.flags = fluxonkv_daemon_connected() ? FLUXONKV_INFO_DAEMON : 0;
	info.flags |= FLUXONKV_INFO_PUT_IOV | FLUXONKV_INFO_TENANTS |
		      FLUXONKV_INFO_BATCH_RESUME;
	if (READ_ONCE(fluxonkv_isolated))
		info.flags |= FLUXONKV_INFO_ISOLATED;
	info.segment_used = fluxonkv_segment_used();
	return fluxonkv_copy_out(uarg, &info, sizeof(info), usize);
}

/*
 * The pieces of a gather put: @count struct fluxonkv_iovec at @iov_ptr,
 * @value_len bytes in all, read once into @iov (@fast when they fit,
 * else allocated: *@alloc, for the caller to kvfree).  Everything is
 * checked before the master is asked: the count (EINVAL), each piece's
 * end and the running total for overflow (EINVAL), the total against
 * @value_len (EINVAL), then every piece against the caller's address
 * space (EFAULT).  A piece that is in range but not mapped faults in the
 * copy (EFAULT then, nothing stored).
 */
static int fluxonkv_iov_in(u64 iov_ptr, u32 count, u64 value_len,
			   struct iovec *fast, unsigned int nfast,
			   struct iovec **iov, struct iovec **alloc)
{
	const struct fluxonkv_iovec __user *uiov = u64_to_user_ptr(iov_ptr);
	struct fluxonkv_iovec piece;
	struct iovec *v = fast;
	u64 total = 0, end;
	u32 i;
	int ret;

	*alloc = NULL;
	if (!count || count > FLUXONKV_IOV_MAX)
		return -EINVAL;
	if (count > nfast) {
		v = kvmalloc_array(count, sizeof(*v), GFP_KERNEL);
		if (!v)
			return -ENOMEM;
		*alloc = v;
	}
	for (i = 0; i < count; i++) {
		ret = -EFAULT;
		if (copy_from_user(&piece, &uiov[i], sizeof(piece)))
			goto err;
		ret = -EINVAL;
		if (check_add_overflow(piece.base, piece.len, &end) ||
		    check_add_overflow(total, piece.len, &total) ||
		    total > value_len)
			goto err;
		v[i].iov_base = u64_to_user_ptr(piece.base);
		v[i].iov_len = piece.len;
	}
	if (total != value_len)
		goto err;
	ret = -EFAULT;
	for (i = 0; i < count; i++)
		if (!access_ok(v[i].iov_base, v[i].iov_len))
			goto err;
	*iov = v;
	return 0;

err:
	kvfree(*alloc);
	*alloc = NULL;
	return ret;
}

/* Pieces of a gather put kept on the stack (more are allocated). */
#define FLUXONKV_FAST_IOV	8

/*
 * The operations a client runs, shared by the single ioctls, FLUXONKV_IOC_BATCH
 * and io_uring (uring.c).  @flags: FLUXONKV_GR_NOWAIT makes whatever would
 * wait for the daemon, the SSD or a peer return -EAGAIN before it has any
 * effect (io_uring then runs the command again from its workers).
 *
 * @value_ptr: the value, or with @iov_count (a gather put) its pieces
 * (struct fluxonkv_iovec); @value_len bytes either way.
 */
static int fluxonkv_do_put(struct fluxonkv_session *s, u32 key_len,
			   u64 key_ptr, u64 value_ptr, u64 value_len,
			   u32 iov_count, unsigned int flags, u64 *put_id)
{
	struct iovec fast[FLUXONKV_FAST_IOV], *iov = fast, *alloc = NULL;
	u8 key[FLUXONKV_KEY_MAX];
	struct iov_iter value;
	u64 t0;
	int ret;

	if (!s->writable)
		return -EBADF;	/* a read-only consumer */
	if (!value_len)
		return -EINVAL;
	if (value_len > fluxonkv_value_max())
		return -E2BIG;
	ret = fluxonkv_key_in(s, key, &key_len, key_ptr);
	if (ret)
		return ret;
	/* Fail a bad value pointer before asking the master for anything. */
	if (iov_count) {
		ret = fluxonkv_iov_in(value_ptr, iov_count, value_len, fast,
				      ARRAY_SIZE(fast), &iov, &alloc);
		if (ret)
			return ret;
	} else {
		if (!access_ok(u64_to_user_ptr(value_ptr), value_len))
			return -EFAULT;
		fast[0].iov_base = u64_to_user_ptr(value_ptr);
		fast[0].iov_len = value_len;
		iov_count = 1;
	}
	/*
	 * A put copies the whole value and may wait for room or the master:
	 * from an io-wq worker, never at submission.
	 */
	if (flags & FLUXONKV_GR_NOWAIT) {
		ret = -EAGAIN;
		goto out;
	}
	iov_iter_init(&value, FLUXONKV_ITER_SOURCE, iov, iov_count, value_len);

	t0 = fluxonkv_clock();
	ret = fluxonkv_put(s->user, key, key_len, &value, put_id);
	if (!ret)
		fluxonkv_lat_record(FLUXONKV_LAT_PUT, t0);
out:
	kvfree(alloc);
	return ret;
}

static void fluxonkv_get_lat(int ret, const struct fluxonkv_get_result *res,
			     u64 t0)
{
	if (ret == -ENOENT)
		fluxonkv_lat_record(FLUXONKV_LAT_GET_MISS, t0);
	if (ret)
		return;
	fluxonkv_lat_record(res->source == FLUXONKV_SOURCE_SSD ?
			    FLUXONKV_LAT_GET_SSD :
			    res->source == FLUXONKV_SOURCE_MEMORY ?
			    FLUXONKV_LAT_GET_MEMORY : FLUXONKV_LAT_GET_REMOTE, t0);
}

/* A holder on the value of the key at @key_ptr, into @res. */
static int fluxonkv_do_get(struct fluxonkv_session *s, u32 key_len,
			   u64 key_ptr, unsigned int flags,
			   struct fluxonkv_get_result *res)
{
	u8 key[FLUXONKV_KEY_MAX];
	u64 t0;
	int ret;

	ret = fluxonkv_key_in(s, key, &key_len, key_ptr);
	if (ret)
		return ret;
	t0 = fluxonkv_clock();
	res->flags = flags & FLUXONKV_GR_NOWAIT;
	res->tenant = fluxonkv_key_tenant(key, key_len);
	ret = fluxonkv_get(s, key, key_len, res);
	if (ret != -EAGAIN)
		fluxonkv_get_lat(ret, res, t0);
	return ret;
}

/* Copy a MiB at a time: a kill is noticed between pieces. */
#define FLUXONKV_COPY_PIECE	(1UL << 20)
/*
 * GET_INTO over io_uring copies at submission up to this many bytes; a
 * larger value is copied from an io-wq worker, so that submitting a big
 * copy does not stall the submitter's other commands.
 */
#define FLUXONKV_INLINE_COPY_MAX	(64UL << 10)

/*
 * The value of the key at @key_ptr copied to @buf_ptr: a get that takes a
 * reference instead of a holder (no pin budget, no holder slot), the copy
 * from the segment's kernel mapping, the reference dropped.
 */
static int fluxonkv_do_get_into(struct fluxonkv_session *s, u32 key_len,
				u64 key_ptr, u64 buf_ptr, u64 buf_len,
				unsigned int flags,
				struct fluxonkv_get_result *res)
{
	void __user *buf = u64_to_user_ptr(buf_ptr);
	u64 t0, done, n, peek_id, peek_len;
	u8 key[FLUXONKV_KEY_MAX];
	const u8 *src;
	int ret;

	if (!buf_len || !access_ok(buf, buf_len))
		return buf_len ? -EFAULT : -EINVAL;
	ret = fluxonkv_key_in(s, key, &key_len, key_ptr);
	if (ret)
		return ret;
	/* A peek has no effect: no access counted, nothing pinned. */
	if ((flags & FLUXONKV_GR_NOWAIT) &&
	    fluxonkv_index_peek(key, key_len, &peek_id, &peek_len) &&
	    peek_len > FLUXONKV_INLINE_COPY_MAX && peek_len <= buf_len)
		return -EAGAIN;
	t0 = fluxonkv_clock();
	res->flags = (flags & FLUXONKV_GR_NOWAIT) | FLUXONKV_GR_ALLOC;
	ret = fluxonkv_get(s, key, key_len, res);
	if (ret == -EAGAIN)
		return ret;
	fluxonkv_get_lat(ret, res, t0);
	if (ret)
		return ret;
	if (res->len > buf_len) {
		ret = -EMSGSIZE;
		goto out;
	}
	/* Pinned while copied (a fault may stall the copy): the user's budget. */
	ret = fluxonkv_user_charge(s->user, res->alloc->span);
	if (ret)
		goto out;
	src = fluxonkv_alloc_vaddr(res->alloc);
	for (done = 0; done < res->len; done += n) {
		n = min_t(u64, res->len - done, FLUXONKV_COPY_PIECE);
		if (copy_to_user(buf + done, src + done, n)) {
			ret = -EFAULT;
			break;
		}
		if (done + n < res->len && fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
	}
	fluxonkv_user_uncharge(s->user, res->alloc->span);
out:
	fluxonkv_alloc_put(res->alloc);
	res->alloc = NULL;
	return ret;
}

static int fluxonkv_do_lookup(struct fluxonkv_session *s, u32 key_len,
			      u64 key_ptr, unsigned int flags,
			      struct fluxonkv_get_result *res)
{
	u8 key[FLUXONKV_KEY_MAX];
	int ret;

	ret = fluxonkv_key_in(s, key, &key_len, key_ptr);
	if (ret)
		return ret;
	res->flags = flags & FLUXONKV_GR_NOWAIT;
	return fluxonkv_lookup(key, key_len, res);
}

static int fluxonkv_do_delete(struct fluxonkv_session *s, u32 key_len,
			      u64 key_ptr, unsigned int flags)
{
	u8 key[FLUXONKV_KEY_MAX];
	u64 t0;
	int ret;

	if (!s->writable)
		return -EBADF;
	ret = fluxonkv_key_in(s, key, &key_len, key_ptr);
	if (ret)
		return ret;
	if (flags & FLUXONKV_GR_NOWAIT)
		return -EAGAIN;		/* the master removes the route */
	t0 = fluxonkv_clock();
	ret = fluxonkv_delete(key, key_len);
	if (!ret)
		fluxonkv_lat_record(FLUXONKV_LAT_DELETE, t0);
	return ret;
}

static long fluxonkv_ioc_put(struct fluxonkv_session *s, void __user *uarg,
			     unsigned int flags)
{
	struct fluxonkv_put put;
	long usize;
	int ret;

	if (!s->writable)
		return -EBADF;	/* a read-only consumer */
	usize = fluxonkv_copy_in(&put, sizeof(put), FLUXONKV_PUT_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if ((put.flags & ~(u64)FLUXONKV_PUT_F_IOV) || put.put_id ||
	    put.reserved1 ||
	    !fluxonkv_zero(put.reserved, ARRAY_SIZE(put.reserved)))
		return -EINVAL;
	/* a gather put names its pieces; a plain one has none */
	if (!(put.flags & FLUXONKV_PUT_F_IOV) != !put.iov_count)
		return -EINVAL;
	ret = fluxonkv_do_put(s, put.key_len, put.key_ptr, put.value_ptr,
			      put.value_len, put.iov_count, flags,
			      &put.put_id);
	if (ret)
		return ret;
	return fluxonkv_copy_out(uarg, &put, sizeof(put), usize);
}

static long fluxonkv_ioc_get(struct fluxonkv_session *s, void __user *uarg,
			     unsigned int flags)
{
	struct fluxonkv_get_result res = {};
	struct fluxonkv_get get;
	long usize;
	int ret;

	usize = fluxonkv_copy_in(&get, sizeof(get), FLUXONKV_GET_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (get.flags || get.holder_id || get.offset || get.len ||
	    get.put_id || get.source || get.reserved0 ||
	    !fluxonkv_zero(get.reserved, ARRAY_SIZE(get.reserved)))
		return -EINVAL;
	ret = fluxonkv_do_get(s, get.key_len, get.key_ptr, flags, &res);
	if (ret)
		return ret;
	get.holder_id = res.holder_id;
	get.offset = res.offset;
	get.len = res.len;
	get.put_id = res.put_id;
	get.source = res.source;
	ret = fluxonkv_copy_out(uarg, &get, sizeof(get), usize);
	if (ret)
		/* The caller cannot learn the id: do not leak the pin. */
		fluxonkv_holder_release(s, res.holder_id);
	return ret;
}

static long fluxonkv_ioc_get_into(struct fluxonkv_session *s,
				  void __user *uarg, unsigned int flags)
{
	struct fluxonkv_get_result res = {};
	struct fluxonkv_get_into gi;
	long usize;
	int ret;

	usize = fluxonkv_copy_in(&gi, sizeof(gi), FLUXONKV_GET_INTO_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (gi.flags || gi.len || gi.put_id || gi.source || gi.reserved0 ||
	    !fluxonkv_zero(gi.reserved, ARRAY_SIZE(gi.reserved)))
		return -EINVAL;
	ret = fluxonkv_do_get_into(s, gi.key_len, gi.key_ptr, gi.buf_ptr,
				   gi.buf_len, flags, &res);
	if (ret && ret != -EMSGSIZE)
		return ret;
	gi.len = res.len;
	gi.put_id = res.put_id;
	gi.source = res.source;
	return fluxonkv_copy_out(uarg, &gi, sizeof(gi), usize) ?: ret;
}

static long fluxonkv_ioc_lookup(struct fluxonkv_session *s, void __user *uarg,
				unsigned int flags)
{
	struct fluxonkv_get_result res = {};
	struct fluxonkv_lookup lk;
	long usize;
	int ret;

	usize = fluxonkv_copy_in(&lk, sizeof(lk), FLUXONKV_LOOKUP_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (lk.flags || lk.len || lk.put_id || lk.source || lk.reserved0 ||
	    !fluxonkv_zero(lk.reserved, ARRAY_SIZE(lk.reserved)))
		return -EINVAL;
	ret = fluxonkv_do_lookup(s, lk.key_len, lk.key_ptr, flags, &res);
	if (ret)
		return ret;
	lk.len = res.len;
	lk.put_id = res.put_id;
	lk.source = res.source;
	return fluxonkv_copy_out(uarg, &lk, sizeof(lk), usize);
}

static long fluxonkv_ioc_hold(struct fluxonkv_session *s, void __user *uarg)
{
	struct fluxonkv_get_result res = {};
	u8 key[FLUXONKV_KEY_MAX];
	struct fluxonkv_hold hold;
	long usize;
	int ret;

	usize = fluxonkv_copy_in(&hold, sizeof(hold), FLUXONKV_HOLD_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (!s->privileged)
		return -EPERM;
	if (hold.flags || hold.holder_id || hold.offset || hold.len ||
	    !hold.handle || !hold.put_id ||
	    !fluxonkv_zero(hold.reserved, ARRAY_SIZE(hold.reserved)))
		return -EINVAL;
	ret = fluxonkv_key_in(s, key, &hold.key_len, hold.key_ptr);
	if (ret)
		return ret;
	ret = fluxonkv_hold(s, key, hold.key_len, hold.handle, hold.put_id,
			    &res);
	if (ret)
		return ret;
	hold.holder_id = res.holder_id;
	hold.offset = res.offset;
	hold.len = res.len;
	ret = fluxonkv_copy_out(uarg, &hold, sizeof(hold), usize);
	if (ret)
		fluxonkv_holder_release(s, res.holder_id);
	return ret;
}

static long fluxonkv_ioc_ssd_stage(struct fluxonkv_session *s,
				   void __user *uarg)
{
	struct fluxonkv_get_result res = {};
	struct fluxonkv_ssd_stage st;
	u8 key[FLUXONKV_KEY_MAX];
	long usize;
	int ret;

	usize = fluxonkv_copy_in(&st, sizeof(st), FLUXONKV_SSD_STAGE_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (!s->privileged)
		return -EPERM;
	if (st.flags || st.holder_id || st.seg_offset || st.value_len ||
	    !st.put_id || !st.len || st.len > FLUXONKV_SSD_CHUNK_MAX ||
	    st.offset % FLUXONKV_SSD_CSUM_CHUNK ||
	    !fluxonkv_zero(st.reserved, ARRAY_SIZE(st.reserved)))
		return -EINVAL;
	ret = fluxonkv_key_in(s, key, &st.key_len, st.key_ptr);
	if (ret)
		return ret;
	ret = fluxonkv_ssd_stage(s, key, st.key_len, st.put_id, st.offset,
				 st.len, &res, &st.value_len);
	if (ret)
		return ret;
	st.holder_id = res.holder_id;
	st.seg_offset = res.offset;
	ret = fluxonkv_copy_out(uarg, &st, sizeof(st), usize);
	if (ret)
		fluxonkv_holder_release(s, res.holder_id);
	return ret;
}

static long fluxonkv_ioc_target(struct fluxonkv_session *s, void __user *uarg)
{
	struct fluxonkv_get_result res = {};
	struct fluxonkv_target t;
	u8 key[FLUXONKV_KEY_MAX];
	long usize;
	int ret;

	usize = fluxonkv_copy_in(&t, sizeof(t), FLUXONKV_TARGET_SIZE_VER0, uarg);
	if (usize < 0)
		return usize;
	if (!s->privileged)
		return -EPERM;
	if (t.flags || t.holder_id || t.offset || t.handle || !t.put_id ||
	    !t.len || !fluxonkv_zero(t.reserved, ARRAY_SIZE(t.reserved)))
		return -EINVAL;
	if (t.len > fluxonkv_value_max())
		return -E2BIG;
	ret = fluxonkv_key_in(s, key, &t.key_len, t.key_ptr);
	if (ret)
		return ret;
	ret = fluxonkv_target(s, key, t.key_len, t.put_id, t.len, &res,
			      &t.handle);
	if (ret)
		return ret;
	t.holder_id = res.holder_id;
	t.offset = res.offset;
	ret = fluxonkv_copy_out(uarg, &t, sizeof(t), usize);
	if (ret) {
		fluxonkv_holder_release(s, res.holder_id);
		fluxonkv_replica_drop(t.handle);
	}
	return ret;
}

static long fluxonkv_ioc_publish(struct fluxonkv_session *s, void __user *uarg)
{
	struct fluxonkv_publish pub;
	long usize;

	usize = fluxonkv_copy_in(&pub, sizeof(pub), FLUXONKV_PUBLISH_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (!s->privileged)
		return -EPERM;
	if (pub.flags & ~FLUXONKV_PUBLISH_F_PERSIST || !pub.handle ||
	    !pub.put_id || !fluxonkv_zero(pub.reserved, ARRAY_SIZE(pub.reserved)))
		return -EINVAL;
	return fluxonkv_publish(s, pub.handle, pub.put_id,
				pub.flags & FLUXONKV_PUBLISH_F_PERSIST);
}

static long fluxonkv_ioc_release(struct fluxonkv_session *s, void __user *uarg)
{
	struct fluxonkv_release rel;
	long usize;

	usize = fluxonkv_copy_in(&rel, sizeof(rel), FLUXONKV_RELEASE_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (rel.reserved0 ||
	    !fluxonkv_zero(rel.reserved, ARRAY_SIZE(rel.reserved)))
		return -EINVAL;
	return fluxonkv_holder_release(s, rel.holder_id);
}

static long fluxonkv_ioc_delete(struct fluxonkv_session *s, void __user *uarg,
				unsigned int flags)
{
	struct fluxonkv_delete del;
	long usize;

	if (!s->writable)
		return -EBADF;
	usize = fluxonkv_copy_in(&del, sizeof(del), FLUXONKV_DELETE_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (del.flags || !fluxonkv_zero(del.reserved, ARRAY_SIZE(del.reserved)))
		return -EINVAL;
	return fluxonkv_do_delete(s, del.key_len, del.key_ptr, flags);
}

/* A get's outputs into its batch entry. */
static void fluxonkv_op_fill(struct fluxonkv_op *op,
			     const struct fluxonkv_get_result *res)
{
	op->holder_id = res->holder_id;
	op->offset = res->offset;
	op->len = res->len;
	op->put_id = res->put_id;
	op->source = res->source;
}

/*
 * One entry of a batch; its result (0 or -errno).  @op's outputs filled.
 * @rf: with FLUXONKV_GR_NOWAIT, a GET's SSD refill may go on without us
 * there (-EIOCBQUEUED), or NULL.
 */
static int fluxonkv_batch_one(struct fluxonkv_session *s,
			      struct fluxonkv_op *op, unsigned int flags,
			      struct fluxonkv_refill *rf)
{
	struct fluxonkv_get_result res = { .refill = rf };
	bool keyed = op->opcode != FLUXONKV_OP_RELEASE;
	bool buf = op->opcode == FLUXONKV_OP_PUT ||
		   op->opcode == FLUXONKV_OP_PUT_IOV ||
		   op->opcode == FLUXONKV_OP_GET_INTO;
	bool gather = op->opcode == FLUXONKV_OP_PUT_IOV;
	int ret;

	if (op->opcode == FLUXONKV_OP_NONE || op->opcode >= FLUXONKV_OP_MAX ||
	    op->offset || op->len || op->put_id || op->source || op->result ||
	    op->reserved || !gather != !op->iov_count ||
	    (op->holder_id && keyed) ||
	    (!keyed && (op->key_len || op->key_ptr)) ||
	    (!buf && (op->buf_ptr || op->buf_len)))
		return -EINVAL;

	switch (op->opcode) {
	case FLUXONKV_OP_GET:
		ret = fluxonkv_do_get(s, op->key_len, op->key_ptr, flags, &res);
		break;
	case FLUXONKV_OP_GET_INTO:
		ret = fluxonkv_do_get_into(s, op->key_len, op->key_ptr,
					   op->buf_ptr, op->buf_len, flags,
					   &res);
		break;
	case FLUXONKV_OP_RELEASE:
		return fluxonkv_holder_release(s, op->holder_id);
	case FLUXONKV_OP_LOOKUP:
		ret = fluxonkv_do_lookup(s, op->key_len, op->key_ptr, flags, &res);
		break;
	case FLUXONKV_OP_PUT:
	case FLUXONKV_OP_PUT_IOV:
		return fluxonkv_do_put(s, op->key_len, op->key_ptr,
				       op->buf_ptr, op->buf_len, op->iov_count,
				       flags, &op->put_id);
	default:	/* FLUXONKV_OP_DELETE */
		return fluxonkv_do_delete(s, op->key_len, op->key_ptr, flags);
	}
	if (ret && ret != -EMSGSIZE)
		return ret;
	fluxonkv_op_fill(op, &res);
	return ret;
}

/*
 * Entry @op ran with @ret: write it back to @uop.  A get's holder is
 * released if the entry cannot be written (nobody would learn its id).
 * Return: 0 or -EFAULT.
 */
static int fluxonkv_batch_result(struct fluxonkv_session *s, u8 __user *uop,
				 struct fluxonkv_op *op, int ret)
{
	op->result = ret;
	if (!copy_to_user(uop, op, sizeof(*op)))
		return 0;
	if (!ret && op->opcode == FLUXONKV_OP_GET)
		fluxonkv_holder_release(s, op->holder_id);
	return -EFAULT;
}

/* SSD refills one batch over io_uring may have in flight (see below). */
#define FLUXONKV_URING_REFILLS_MAX	64

/*
 * A batch over io_uring some of whose GETs refill from the SSD without the
 * submitter: the last entry's always, any entry's with
 * FLUXONKV_BATCH_F_RESUME.  Made at the first such GET; the command is
 * its from then on.  The pass goes on with the next entries while the
 * reads are in flight; the command completes once the pass is over and
 * every read ended (@pending), in the submitter's task, where each
 * refill's entry is written.
 */
struct fluxonkv_uring_batch {
	struct io_uring_cmd *ioucmd;
	struct fluxonkv_session *s;
	struct fluxonkv_batch b;	/* the header; b.done: where the pass ended */
	void __user *uarg;		/* the header */
	long usize;			/* its size */
	int ret;			/* the pass's own result */
	/* refills in flight, + 1 (the pass's) until the pass is over */
	atomic_t pending;
	unsigned int nrefills;
	struct list_head refills;	/* in entry order */
	u8 key[FLUXONKV_KEY_MAX];	/* a later entry's, compared */
};

/* One GET of such a batch whose refill goes on without the submitter. */
struct fluxonkv_uring_refill {
	struct fluxonkv_refill rf;	/* rf.done: fluxonkv_uring_refill_end */
	struct fluxonkv_uring_batch *ub;
	struct list_head node;		/* on ub->refills */
	u64 index;			/* its entry's */
	struct fluxonkv_op op;		/* the entry as read */
};

static struct fluxonkv_uring_batch *fluxonkv_uring_batch_of(struct io_uring_cmd *c)
{
	return *(struct fluxonkv_uring_batch **)c->pdu;
}

/*
 * The pass is over and every refill ended: finish each refill's get and
 * write its entry, then the header; free @ub.  In the submitter's task
 * (io_uring's task work, or the issue itself when the reads ended before
 * the pass), or in io_uring's fallback worker when the task is exiting.
 * Return: the command's result.
 */
static int fluxonkv_uring_batch_finish(struct fluxonkv_uring_batch *ub)
{
	/*
	 * Nothing is given to a submitter being killed (io_uring runs this
	 * from its exit before PF_EXITING), to an exiting one, or from a
	 * kthread (io_uring's fallback when the task cannot take task work).
	 */
	bool gone = fatal_signal_pending(current) ||
		    (current->flags & (PF_EXITING | PF_KTHREAD));
	struct fluxonkv_uring_refill *r, *tmp;
	int ret = ub->ret;

	list_for_each_entry_safe(r, tmp, &ub->refills, node) {
		struct fluxonkv_get_result res = {};
		u8 __user *uop;
		int rret;

		rret = fluxonkv_get_refill_finish(ub->s, &r->rf, &res, gone);
		if (!gone) {
			fluxonkv_get_lat(rret, &res, r->rf.t_get);
			if (!rret)
				fluxonkv_op_fill(&r->op, &res);
			uop = u64_to_user_ptr(ub->b.ops_ptr) +
			      r->index * ub->b.op_size;
			/*
			 * Its holder released if the entry cannot be written;
			 * @done then stops before it (results written only).
			 */
			if (fluxonkv_batch_result(ub->s, uop, &r->op, rret)) {
				ret = -EFAULT;
				ub->b.done = min(ub->b.done, r->index);
			}
		}
		list_del(&r->node);
		kfree(r);
	}
	if (gone)
		ret = -ECANCELED;
	else
		ret = fluxonkv_copy_out(ub->uarg, &ub->b, sizeof(ub->b),
					ub->usize) ?: ret;
	kfree(ub);
	return ret;
}

static void fluxonkv_uring_batch_done(struct io_uring_cmd *ioucmd,
				      unsigned int issue_flags)
{
	int ret = fluxonkv_uring_batch_finish(fluxonkv_uring_batch_of(ioucmd));

	io_uring_cmd_done(ioucmd, ret, 0, issue_flags);
}

/*
 * A refill's read ended (its check's worker, or the room wait's): the last
 * one to end, pass included, completes the command in the submitter's
 * task.
 */
static void fluxonkv_uring_refill_end(struct fluxonkv_refill *rf)
{
	struct fluxonkv_uring_refill *r =
		container_of(rf, struct fluxonkv_uring_refill, rf);
	struct fluxonkv_uring_batch *ub = r->ub;

	if (atomic_dec_and_test(&ub->pending))
		io_uring_cmd_complete_in_task(ub->ioucmd,
					      fluxonkv_uring_batch_done);
}

/*
 * Entry @op of a batch whose refills @ub has in flight names the key of
 * one of them: it must wait for that read (the batch's order), so the
 * pass stops there.  A key that cannot be read is the entry's own error.
 */
static bool fluxonkv_uring_batch_conflict(struct fluxonkv_uring_batch *ub,
					  const struct fluxonkv_op *op)
{
	struct fluxonkv_uring_refill *r;
	u32 key_len = op->key_len;

	if (list_empty(&ub->refills) || op->opcode == FLUXONKV_OP_RELEASE ||
	    op->opcode == FLUXONKV_OP_NONE || op->opcode >= FLUXONKV_OP_MAX ||
	    fluxonkv_key_in(ub->s, ub->key, &key_len, op->key_ptr))
		return false;
	list_for_each_entry(r, &ub->refills, node)
		if (r->rf.key_len == key_len &&
		    !memcmp(r->rf.key, ub->key, key_len))
			return true;
	return false;
}

/*
 * Entry @b->done of the batch, the GET @op, returned -EAGAIN at io_uring's
 * non-blocking issue: run it again letting a local SSD refill go on
 * asynchronously (a second look, paid only by gets that would wait, so
 * that a DRAM hit allocates nothing for this).  *@ubp is made at the
 * first (the command is its from then).  -EIOCBQUEUED: the refill is on
 * its way, the entry written when the command completes; otherwise
 * (-EAGAIN, or the entry's own result) as before.
 */
static int fluxonkv_uring_refill_start(struct fluxonkv_uring_batch **ubp,
				       struct fluxonkv_session *s,
				       const struct fluxonkv_batch *b,
				       struct fluxonkv_op *op,
				       void __user *uarg, long usize,
				       struct io_uring_cmd *ioucmd)
{
	struct fluxonkv_uring_batch *ub = *ubp;
	struct fluxonkv_uring_refill *r;
	int ret;

	if (!ub) {
		ub = kmalloc(sizeof(*ub), GFP_KERNEL);
		if (!ub)
			return -EAGAIN;
		ub->ioucmd = ioucmd;
		ub->s = s;
		ub->uarg = uarg;
		ub->usize = usize;
		ub->ret = 0;
		atomic_set(&ub->pending, 1);
		ub->nrefills = 0;
		INIT_LIST_HEAD(&ub->refills);
		*(struct fluxonkv_uring_batch **)ioucmd->pdu = ub;
		*ubp = ub;
	}
	if (ub->nrefills >= FLUXONKV_URING_REFILLS_MAX)
		return -EAGAIN;
	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -EAGAIN;
	r->rf.done = fluxonkv_uring_refill_end;
	r->rf.t_get = fluxonkv_clock();	/* from the second look */
	r->ub = ub;
	r->index = b->done;
	r->op = *op;
	/* before the read may end: the pass's reference keeps @ub */
	atomic_inc(&ub->pending);
	list_add_tail(&r->node, &ub->refills);
	ret = fluxonkv_batch_one(s, &r->op, FLUXONKV_GR_NOWAIT, &r->rf);
	if (ret == -EIOCBQUEUED) {
		ub->nrefills++;
		return ret;
	}
	/* no read started: @rf->done is never called */
	list_del(&r->node);
	atomic_dec(&ub->pending);
	*op = r->op;
	kfree(r);
	return ret;
}

/*
 * The pass over a batch some of whose refills @ub has in flight is over at
 * @b->done with @ret: the last to end completes the command.  Return:
 * -EIOCBQUEUED, or the command's result when every read ended already
 * (-EAGAIN then makes io_uring run the rest from a worker, from the
 * header's @done, as for any batch that stops at the inline issue).
 */
static int fluxonkv_uring_batch_pass_end(struct fluxonkv_uring_batch *ub,
					 const struct fluxonkv_batch *b, int ret)
{
	ub->b = *b;
	/* -EAGAIN (FLUXONKV_BATCH_F_RESUME): the caller sends the rest */
	ub->ret = ret == -EIOCBQUEUED ? 0 : ret;
	if (atomic_dec_and_test(&ub->pending))
		return fluxonkv_uring_batch_finish(ub);
	return -EIOCBQUEUED;
}

/*
 * @ioucmd: io_uring's non-blocking issue, where a GET entry may refill
 * from the SSD asynchronously (the last one, or any with
 * FLUXONKV_BATCH_F_RESUME), or NULL.
 */
static long fluxonkv_ioc_batch(struct fluxonkv_session *s, void __user *uarg,
			       unsigned int flags, struct io_uring_cmd *ioucmd)
{
	struct fluxonkv_uring_batch *ub = NULL;
	struct fluxonkv_batch b;
	struct fluxonkv_op op;
	bool resume;
	u8 __user *ops;
	long usize;
	int ret = 0;

	usize = fluxonkv_copy_in(&b, sizeof(b), FLUXONKV_BATCH_SIZE_VER0, uarg);
	if (usize < 0)
		return usize;
	if ((b.flags & ~FLUXONKV_BATCH_F_RESUME) || !b.count ||
	    b.count > FLUXONKV_BATCH_MAX ||
	    b.op_size < FLUXONKV_OP_SIZE_VER0 || b.op_size > PAGE_SIZE ||
	    b.done > b.count ||
	    !fluxonkv_zero(b.reserved, ARRAY_SIZE(b.reserved)))
		return -EINVAL;
	resume = ioucmd && (b.flags & FLUXONKV_BATCH_F_RESUME);
	ops = u64_to_user_ptr(b.ops_ptr);
	if (!access_ok(ops, (size_t)b.count * b.op_size))
		return -EFAULT;
	/*
	 * @done goes back at the end: a header it cannot be written to fails
	 * here, before any entry ran (one unmapped meanwhile by another
	 * thread still leaves each entry's result to say what ran).
	 */
	if (put_user(b.done, &((struct fluxonkv_batch __user *)uarg)->done))
		return -EFAULT;

	for (; b.done < b.count; b.done++) {
		u8 __user *uop = ops + b.done * b.op_size;

		ret = copy_struct_from_user(&op, sizeof(op), uop, b.op_size);
		if (ret == -EFAULT)
			break;
		if (ret) {
			struct fluxonkv_op __user *u = (void __user *)uop;

			/* Unknown nonzero bytes: only the result is written. */
			if (put_user(ret, &u->result)) {
				ret = -EFAULT;
				break;
			}
			ret = 0;
			continue;
		}
		/* after a refill of the same key: resumed from here */
		if (ub && fluxonkv_uring_batch_conflict(ub, &op)) {
			ret = -EAGAIN;
			break;
		}
		ret = fluxonkv_batch_one(s, &op, flags, NULL);
		if (ret == -EAGAIN && ioucmd && op.opcode == FLUXONKV_OP_GET &&
		    (resume || b.done + 1 == b.count))
			ret = fluxonkv_uring_refill_start(&ub, s, &b, &op, uarg,
							  usize, ioucmd);
		if (ret == -EIOCBQUEUED)
			continue;	/* written when the command completes */
		if (ret == -EAGAIN && (flags & FLUXONKV_GR_NOWAIT))
			break;		/* resumed from here, off the submitter */
		ret = fluxonkv_batch_result(s, uop, &op, ret);
		if (ret)
			break;
		if (fatal_signal_pending(current)) {
			b.done++;
			ret = -EINTR;
			break;
		}
	}
	if (ub && list_empty(&ub->refills)) {
		kfree(ub);		/* no refill started after all */
		ub = NULL;
	}
	if (ub)
		return fluxonkv_uring_batch_pass_end(ub, &b, ret);
	return fluxonkv_copy_out(uarg, &b, sizeof(b), usize) ?: ret;
}

static long fluxonkv_ioc_ssd_attach(void __user *uarg)
{
	struct fluxonkv_ssd_attach att;
	long usize;
	int ret;

	usize = fluxonkv_copy_in(&att, sizeof(att),
				 FLUXONKV_SSD_ATTACH_SIZE_VER0, uarg);
	if (usize < 0)
		return usize;
	if (att.flags || att.shard || att.reserved0 ||
	    !fluxonkv_zero(att.reserved, ARRAY_SIZE(att.reserved)))
		return -EINVAL;
	ret = fluxonkv_ssd_attach(att.fd, att.offset, att.capacity, att.device,
				  &att.shard);
	if (ret)
		return ret;
	return fluxonkv_copy_out(uarg, &att, sizeof(att), usize);
}

/*
 * The size encoded in an ioctl number is that of the caller's header; the
 * struct's own size field is what counts, so commands match without it.
 */
#define FLUXONKV_IOC_NOSIZE(cmd) ((cmd) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT))

/*
 * Bind @s to a tenant (tenant.c): once, before it holds anything.  From
 * then on its keys are the tenant's.  A privileged description (root's
 * O_RDWR) may bind too: its keys are then the tenant's, its mapping stays
 * unchecked (it is trusted with the segment, as the daemon is).
 */
static long fluxonkv_ioc_tenant(struct fluxonkv_session *s, void __user *uarg)
{
	struct fluxonkv_tenant t;
	long usize;
	int ret;

	usize = fluxonkv_copy_in(&t, sizeof(t), FLUXONKV_TENANT_SIZE_VER0, uarg);
	if (usize < 0)
		return usize;
	if (t.flags || t.key_max || !t.tenant ||
	    t.tenant > FLUXONKV_TENANT_ID_MAX ||
	    !fluxonkv_zero(t.reserved, ARRAY_SIZE(t.reserved)))
		return -EINVAL;
	ret = fluxonkv_tenant_may_bind(t.tenant);
	if (ret)
		return ret;
	if (atomic_read(&s->nholders) || cmpxchg(&s->tenant, 0, t.tenant))
		return -EBUSY;
	fluxonkv_tenant_bound(s);
	t.key_max = FLUXONKV_KEY_MAX - FLUXONKV_TENANT_PREFIX_LEN;
	return fluxonkv_copy_out(uarg, &t, sizeof(t), usize);
}

/*
 * One command for the ioctl or io_uring (@flags: FLUXONKV_GR_NOWAIT from
 * io_uring's inline issue, @ioucmd then its command).  @uring: the daemon's
 * commands are EOPNOTSUPP there (unknown numbers ENOTTY, as for the ioctl).
 */
static long fluxonkv_dispatch(struct fluxonkv_session *s, unsigned int cmd,
			      void __user *uarg, unsigned int flags,
			      bool uring, struct io_uring_cmd *ioucmd)
{
	switch (FLUXONKV_IOC_NOSIZE(cmd)) {
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_INFO):
		return fluxonkv_ioc_info(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_PUT):
		return fluxonkv_ioc_put(s, uarg, flags);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_GET):
		return fluxonkv_ioc_get(s, uarg, flags);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_GET_INTO):
		return fluxonkv_ioc_get_into(s, uarg, flags);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_RELEASE):
		return fluxonkv_ioc_release(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_DELETE):
		return fluxonkv_ioc_delete(s, uarg, flags);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_LOOKUP):
		return fluxonkv_ioc_lookup(s, uarg, flags);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_BATCH):
		return fluxonkv_ioc_batch(s, uarg, flags, ioucmd);
	}
	switch (FLUXONKV_IOC_NOSIZE(cmd)) {
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_SSD_ATTACH):
		return uring ? -EOPNOTSUPP : fluxonkv_ioc_ssd_attach(uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_HOLD):
		return uring ? -EOPNOTSUPP : fluxonkv_ioc_hold(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_SSD_STAGE):
		return uring ? -EOPNOTSUPP : fluxonkv_ioc_ssd_stage(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_TARGET):
		return uring ? -EOPNOTSUPP : fluxonkv_ioc_target(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_PUBLISH):
		return uring ? -EOPNOTSUPP : fluxonkv_ioc_publish(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_TENANT):
		return uring ? -EOPNOTSUPP : fluxonkv_ioc_tenant(s, uarg);
	default:
		return -ENOTTY;
	}
}

long fluxonkv_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return fluxonkv_dispatch(file->private_data, cmd, (void __user *)arg, 0,
				 false, NULL);
}

/*
 * IORING_OP_URING_CMD: sqe->cmd_op is the ioctl number, the sqe's command
 * bytes a struct fluxonkv_uring_cmd.  Issued inline first with
 * FLUXONKV_GR_NOWAIT: a DRAM hit completes at submission; a command that
 * would wait returns -EAGAIN untouched, and io_uring issues it again from
 * an io-wq worker (the submitter's mm and credentials), where it may block.
 * Completion is the return value, but for a batch whose last entry (or,
 * with FLUXONKV_BATCH_F_RESUME, any GET entry) is served by a local SSD
 * refill: its read is submitted at the inline issue, the pass goes on, and
 * the last read to end completes the command from the submitter's task
 * (-EIOCBQUEUED here; fluxonkv_uring_batch_finish()), no io-wq worker
 * waiting for it.  (6.1 has no cancellation for uring commands: the read
 * ends on its own, and a ring closed or a process killed meanwhile waits
 * for it.)
 */
int fluxonkv_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	const struct fluxonkv_uring_cmd *c = ioucmd->cmd;
	u64 arg = READ_ONCE(c->arg);	/* shared with userspace: read once */
	bool nowait = issue_flags & IO_URING_F_NONBLOCK;

	if (READ_ONCE(c->reserved))
		return -EINVAL;
	return fluxonkv_dispatch(ioucmd->file->private_data, ioucmd->cmd_op,
				 u64_to_user_ptr(arg),
				 nowait ? FLUXONKV_GR_NOWAIT : 0, true,
				 nowait ? ioucmd : NULL);
}
