// SPDX-License-Identifier: GPL-2.0
/*
 * test_u64map.c - fluxond's handle map and key hash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/hash.h"
#include "../../userspace/fluxond/u64map.h"

FKV_TEST(siphash_matches_the_reference_vectors)
{
	uint8_t key[16], msg[15];
	int i;

	for (i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	/* SipHash-2-4 paper, appendix A / reference vectors.h. */
	FKV_ASSERT(fkv_siphash(key, msg, 0) == 0x726fdb47dd0e0e31ULL);
	FKV_ASSERT(fkv_siphash(key, msg, 15) == 0xa129ca6149be45e5ULL);
}

FKV_TEST(put_get_del_and_refusals)
{
	struct fkv_u64map m;
	int a, b;

	FKV_ASSERT_EQ(fkv_u64map_init(&m, 0), 0);
	FKV_ASSERT_EQ(fkv_u64map_put(&m, 0, &a), -EINVAL);
	FKV_ASSERT_EQ(fkv_u64map_put(&m, 5, &a), 0);
	FKV_ASSERT_EQ(fkv_u64map_put(&m, 5, &b), -EEXIST);
	FKV_ASSERT(fkv_u64map_get(&m, 5) == &a);
	FKV_ASSERT(fkv_u64map_get(&m, 6) == NULL);
	FKV_ASSERT(fkv_u64map_get(&m, 0) == NULL);
	FKV_ASSERT(fkv_u64map_del(&m, 5) == &a);
	FKV_ASSERT(fkv_u64map_del(&m, 5) == NULL);
	FKV_ASSERT_EQ(fkv_u64map_count(&m), 0);
	fkv_u64map_fini(&m);
}

/* Random churn against a plain array as the model. */
FKV_TEST(random_churn_matches_a_reference_model)
{
	enum { N = 5000, OPS = 200000 };
	static void *model[N];
	struct fkv_u64map m;
	uint64_t s = 99, key, pos_count = 0;
	size_t pos = 0, live = 0;
	void *val;
	int i;

	FKV_ASSERT_EQ(fkv_u64map_init(&m, 0), 0);
	for (i = 0; i < OPS; i++) {
		uint64_t r = fkv_mix64(s += 0x9e3779b97f4a7c15ULL);
		uint64_t k = 1 + r % N;
		void *v = (void *)(uintptr_t)(r | 1);

		if ((r >> 32) % 3) {
			int err = fkv_u64map_put(&m, k, v);

			FKV_ASSERT_EQ(err, model[k - 1] ? -EEXIST : 0);
			if (!err) {
				model[k - 1] = v;
				live++;
			}
		} else {
			FKV_ASSERT(fkv_u64map_del(&m, k) == model[k - 1]);
			if (model[k - 1])
				live--;
			model[k - 1] = NULL;
		}
		FKV_ASSERT(fkv_u64map_get(&m, k) == model[k - 1]);
	}
	FKV_ASSERT_EQ(fkv_u64map_count(&m), live);
	for (i = 0; i < N; i++)
		FKV_ASSERT(fkv_u64map_get(&m, (uint64_t)i + 1) == model[i]);
	while (!fkv_u64map_next(&m, &pos, &key, &val)) {
		FKV_ASSERT(model[key - 1] == val);
		pos_count++;
	}
	FKV_ASSERT_EQ(pos_count, live);
	fkv_u64map_fini(&m);
}
