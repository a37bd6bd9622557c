// SPDX-License-Identifier: GPL-2.0
/*
 * The ioctl ABI of /dev/fluxonkv: copy in, validate, call kv.c, copy out.
 *
 * Every argument struct begins with its size (size-extensible structs, as
 * copy_struct_from_user defines them).  Nothing from userspace is used
 * before it is validated: sizes, reserved fields, flags, key and value
 * lengths; user pointers are only ever dereferenced with copy_*_user.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "fluxonkv.h"

static_assert(sizeof(struct fluxonkv_info) == FLUXONKV_INFO_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_put) == FLUXONKV_PUT_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_get) == FLUXONKV_GET_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_release) == FLUXONKV_RELEASE_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_delete) == FLUXONKV_DELETE_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_ssd_attach) == FLUXONKV_SSD_ATTACH_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_hold) == FLUXONKV_HOLD_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_ssd_stage) == FLUXONKV_SSD_STAGE_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_target) == FLUXONKV_TARGET_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_publish) == FLUXONKV_PUBLISH_SIZE_VER0);
static_assert(sizeof(struct fluxonkv_lookup) == FLUXONKV_LOOKUP_SIZE_VER0);

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

static int fluxonkv_key_in(u8 *key, u32 key_len, u64 key_ptr)
{
	if (!key_len || key_len > FLUXONKV_KEY_MAX)
		return -EINVAL;
	if (copy_from_user(key, u64_to_user_ptr(key_ptr), key_len))
		return -EFAULT;
	return 0;
}

static u64 fluxonkv_value_max(void)
{
	return min_t(u64, FLUXONKV_VALUE_MAX, fluxonkv_seg.size);
}

static long fluxonkv_ioc_info(void __user *uarg)
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
	info.key_max = FLUXONKV_KEY_MAX;
	info.flags = fluxonkv_daemon_connected() ? FLUXONKV_INFO_DAEMON : 0;
	info.segment_used = fluxonkv_segment_used();
	return fluxonkv_copy_out(uarg, &info, sizeof(info), usize);
}

static long fluxonkv_ioc_put(struct fluxonkv_session *s, void __user *uarg)
{
	u64 t0;
	u8 key[FLUXONKV_KEY_MAX];
	struct fluxonkv_put put;
	long usize;
	int ret;

	if (!s->writable)
		return -EBADF;	/* a read-only consumer */
	usize = fluxonkv_copy_in(&put, sizeof(put), FLUXONKV_PUT_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (put.flags || put.put_id ||
	    !fluxonkv_zero(put.reserved, ARRAY_SIZE(put.reserved)))
		return -EINVAL;
	if (!put.value_len)
		return -EINVAL;
	if (put.value_len > fluxonkv_value_max())
		return -E2BIG;
	ret = fluxonkv_key_in(key, put.key_len, put.key_ptr);
	if (ret)
		return ret;
	/* Fail a bad value pointer before asking the master for anything. */
	if (!access_ok(u64_to_user_ptr(put.value_ptr), put.value_len))
		return -EFAULT;

	t0 = ktime_get_ns();
	ret = fluxonkv_put(s->user, key, put.key_len,
			   u64_to_user_ptr(put.value_ptr), put.value_len,
			   &put.put_id);
	if (ret)
		return ret;
	fluxonkv_lat_record(FLUXONKV_LAT_PUT, t0);
	return fluxonkv_copy_out(uarg, &put, sizeof(put), usize);
}

static long fluxonkv_ioc_get(struct fluxonkv_session *s, void __user *uarg)
{
	u64 t0;
	struct fluxonkv_get_result res;
	u8 key[FLUXONKV_KEY_MAX];
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
	ret = fluxonkv_key_in(key, get.key_len, get.key_ptr);
	if (ret)
		return ret;

	t0 = ktime_get_ns();
	ret = fluxonkv_get(s, key, get.key_len, &res);
	if (ret == -ENOENT)
		fluxonkv_lat_record(FLUXONKV_LAT_GET_MISS, t0);
	if (ret)
		return ret;
	fluxonkv_lat_record(res.source == FLUXONKV_SOURCE_SSD ?
			    FLUXONKV_LAT_GET_SSD :
			    res.source == FLUXONKV_SOURCE_MEMORY ?
			    FLUXONKV_LAT_GET_MEMORY : FLUXONKV_LAT_GET_REMOTE, t0);
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

static long fluxonkv_ioc_lookup(void __user *uarg)
{
	struct fluxonkv_get_result res;
	u8 key[FLUXONKV_KEY_MAX];
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
	ret = fluxonkv_key_in(key, lk.key_len, lk.key_ptr);
	if (ret)
		return ret;
	ret = fluxonkv_lookup(key, lk.key_len, &res);
	if (ret)
		return ret;
	lk.len = res.len;
	lk.put_id = res.put_id;
	lk.source = res.source;
	return fluxonkv_copy_out(uarg, &lk, sizeof(lk), usize);
}

static long fluxonkv_ioc_hold(struct fluxonkv_session *s, void __user *uarg)
{
	struct fluxonkv_get_result res;
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
	ret = fluxonkv_key_in(key, hold.key_len, hold.key_ptr);
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
	struct fluxonkv_get_result res;
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
	    st.offset % FLUXONKV_SEGMENT_ALIGN ||
	    !fluxonkv_zero(st.reserved, ARRAY_SIZE(st.reserved)))
		return -EINVAL;
	ret = fluxonkv_key_in(key, st.key_len, st.key_ptr);
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
	struct fluxonkv_get_result res;
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
	ret = fluxonkv_key_in(key, t.key_len, t.key_ptr);
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

static long fluxonkv_ioc_delete(struct fluxonkv_session *s, void __user *uarg)
{
	u64 t0;
	struct fluxonkv_delete del;
	u8 key[FLUXONKV_KEY_MAX];
	long usize;
	int ret;

	if (!s->writable)
		return -EBADF;
	usize = fluxonkv_copy_in(&del, sizeof(del), FLUXONKV_DELETE_SIZE_VER0,
				 uarg);
	if (usize < 0)
		return usize;
	if (del.flags || !fluxonkv_zero(del.reserved, ARRAY_SIZE(del.reserved)))
		return -EINVAL;
	ret = fluxonkv_key_in(key, del.key_len, del.key_ptr);
	if (ret)
		return ret;
	t0 = ktime_get_ns();
	ret = fluxonkv_delete(key, del.key_len);
	if (!ret)
		fluxonkv_lat_record(FLUXONKV_LAT_DELETE, t0);
	return ret;
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

long fluxonkv_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct fluxonkv_session *s = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (FLUXONKV_IOC_NOSIZE(cmd)) {
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_INFO):
		return fluxonkv_ioc_info(uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_PUT):
		return fluxonkv_ioc_put(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_GET):
		return fluxonkv_ioc_get(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_RELEASE):
		return fluxonkv_ioc_release(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_DELETE):
		return fluxonkv_ioc_delete(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_SSD_ATTACH):
		return fluxonkv_ioc_ssd_attach(uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_HOLD):
		return fluxonkv_ioc_hold(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_SSD_STAGE):
		return fluxonkv_ioc_ssd_stage(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_TARGET):
		return fluxonkv_ioc_target(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_PUBLISH):
		return fluxonkv_ioc_publish(s, uarg);
	case FLUXONKV_IOC_NOSIZE(FLUXONKV_IOC_LOOKUP):
		return fluxonkv_ioc_lookup(uarg);
	default:
		return -ENOTTY;
	}
}
