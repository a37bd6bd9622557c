// SPDX-License-Identifier: GPL-2.0
/*
 * evict.c - policy selection and weight-driven eviction (evict.h).
 */
#include <errno.h>
#include <string.h>

#include "evict.h"

static const struct {
	const char *name;
	struct fkv_evict *(*create)(uint64_t capacity);
} policies[] = {
	{ "s3fifo", fkv_evict_s3fifo_create },
	{ "lru", fkv_evict_lru_create },
};

int fkv_evict_valid_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (!strcmp(name, policies[i].name))
			return 1;
	return 0;
}

struct fkv_evict *fkv_evict_create(const char *name, uint64_t capacity)
{
	size_t i;

	if (!capacity) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (!strcmp(name, policies[i].name))
			return policies[i].create(capacity);
	errno = EINVAL;
	return NULL;
}

uint64_t fkv_evict_bytes(struct fkv_evict *e, uint64_t want,
			 void (*fn)(void *arg, uint64_t handle,
				    uint64_t weight),
			 void *arg)
{
	uint64_t freed = 0, handle, weight;

	while (freed < want && !fkv_evict_victim(e, &handle, &weight)) {
		freed += weight;
		if (fn)
			fn(arg, handle, weight);
	}
	return freed;
}
