/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fkv_kv.h - value helpers shared by the selftests that go through
 * libfluxonkv (test_dram, test_ssd, test_stage): load the module and start
 * fluxond, open the device, put a pattern, release and delete.
 * Include after fkv_env.h.
 */
#ifndef FKV_KV_H
#define FKV_KV_H

#include <fluxonkv.h>

/* Load with PARAMS and start fluxond; returns segment_used_bytes. */
static inline uint64_t setup(const char *params)
{
	FKV_REQUIRE_DAEMON();
	FKV_LOAD(params);
	FKV_START_DAEMON();
	return fkv_sysfs("segment_used_bytes");
}

/* Nothing held, segment_used_bytes back at BASE; fluxond stopped. */
static inline void teardown(uint64_t base)
{
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	FKV_STOP_DAEMON();
}

static struct fkv *kv_open(void)
{
	struct fkv *kv = NULL;
	int ret = fkv_open(FKV_DEV_PATH, &kv);

	FKV_ASSERT(ret == 0, "fkv_open: %s", fkv_strerror(ret));
	return kv;
}

/* The pattern of (KEY, LEN, SALT) in a new buffer (free it). */
static inline uint8_t *pattern(const char *key, size_t len, uint64_t salt)
{
	uint8_t *buf = malloc(len);

	FKV_ASSERT(buf, "malloc %zu", len);
	fkv_pattern_fill(buf, len, key, strlen(key), salt);
	return buf;
}

/* Put the pattern of (key, len, salt); returns the put_id. */
static uint64_t put_pattern(struct fkv *kv, const char *key, size_t len,
			    uint64_t salt)
{
	uint8_t *buf = pattern(key, len, salt);
	uint64_t put_id = 0;
	int ret;

	ret = fkv_put(kv, key, strlen(key), buf, len, &put_id);
	free(buf);
	FKV_ASSERT(ret == 0, "put '%s' (%zu bytes): %s", key, len,
		   fkv_strerror(ret));
	FKV_ASSERT_GT(put_id, 0);
	return put_id;
}

/*
 * fkv_lookup KEY, which must have (LEN, PUT_ID), without a get, a holder or
 * an access counted; returns the source it reports.
 */
static inline unsigned int lookup_check(struct fkv *kv, const char *key,
					size_t len, uint64_t put_id)
{
	uint64_t gets = fkv_sysfs("gets"), holders = fkv_sysfs("holders");
	uint64_t refills = fkv_sysfs("local_refills");
	struct fkv_lookup l;
	int ret;

	ret = fkv_lookup(kv, key, strlen(key), &l);
	FKV_ASSERT(ret == 0, "lookup '%s': %s", key, fkv_strerror(ret));
	FKV_ASSERT_EQ(l.len, len);
	FKV_ASSERT_EQ(l.put_id, put_id);
	FKV_ASSERT_EQ(fkv_sysfs("gets"), gets);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), holders);
	FKV_ASSERT_EQ(fkv_sysfs("local_refills"), refills);
	return l.source;
}

/* fkv_lookup KEY must say it has no value. */
static inline void lookup_miss(struct fkv *kv, const char *key)
{
	struct fkv_lookup l;
	int ret = fkv_lookup(kv, key, strlen(key), &l);

	FKV_ASSERT(ret == -ENOENT, "lookup '%s': %s", key, fkv_strerror(ret));
	FKV_ASSERT_EQ(l.len, 0);
}

/* Release H, which must succeed. */
static inline void release(struct fkv *kv, struct fkv_holder *h)
{
	int ret = fkv_holder_release(kv, h);

	FKV_ASSERT(ret == 0, "release: %s", fkv_strerror(ret));
}

/* Delete KEY, which must exist. */
static inline void delete_key(struct fkv *kv, const char *key)
{
	int ret = fkv_delete(kv, key, strlen(key));

	FKV_ASSERT(ret == 0, "delete '%s': %s", key, fkv_strerror(ret));
}

/* Delete KEY, which may have left both tiers already; 0 or -ENOENT. */
static inline int delete_any(struct fkv *kv, const char *key)
{
	int ret = fkv_delete(kv, key, strlen(key));

	FKV_ASSERT(ret == 0 || ret == -ENOENT, "delete '%s': %s", key,
		   fkv_strerror(ret));
	return ret;
}

#endif /* FKV_KV_H */
