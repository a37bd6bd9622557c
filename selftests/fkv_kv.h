/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fkv_kv.h - value helpers shared by the selftests that go through
 * libfluxonkv (test_dram, test_ssd): open the device, put a pattern.
 * Include after fkv_env.h.
 */
#ifndef FKV_KV_H
#define FKV_KV_H

#include <fluxonkv.h>

static struct fkv *kv_open(void)
{
	struct fkv *kv = NULL;
	int ret = fkv_open(FKV_DEV_PATH, &kv);

	FKV_ASSERT(ret == 0, "fkv_open: %s", fkv_strerror(ret));
	return kv;
}

/* Put the pattern of (key, len, salt); returns the put_id. */
static uint64_t put_pattern(struct fkv *kv, const char *key, size_t len,
			    uint64_t salt)
{
	uint8_t *buf = malloc(len);
	uint64_t put_id = 0;
	int ret;

	FKV_ASSERT(buf, "malloc %zu", len);
	fkv_pattern_fill(buf, len, key, strlen(key), salt);
	ret = fkv_put(kv, key, strlen(key), buf, len, &put_id);
	free(buf);
	FKV_ASSERT(ret == 0, "put '%s' (%zu bytes): %s", key, len,
		   fkv_strerror(ret));
	FKV_ASSERT_GT(put_id, 0);
	return put_id;
}

#endif /* FKV_KV_H */
