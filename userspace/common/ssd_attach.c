// SPDX-License-Identifier: GPL-2.0
/*
 * ssd_attach.c - attach the SSD tier a configuration declares (plan,
 * prepare, one FLUXONKV_IOC_SSD_ATTACH per shard): what `fluxonctl config
 * attach` does, and fluxond at start.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fluxonkv_config.h"
#include "ssd_attach.h"

int fkv_ssd_attach_config(const struct fkv_config *cfg,
			  const struct fkv_ssd_attach_ops *ops,
			  struct fkv_ssd_attached *out, char *err, size_t errlen)
{
	struct fkv_ssd_plan plan = { 0 };
	struct fkv_msgs warn = { 0 };
	unsigned int i, k;
	int *fds = NULL, ret;
	size_t r;

	out->nshards = 0;
	out->capacity = 0;
	if (!cfg->ssd) {
		snprintf(err, errlen, "no SSD tier declared (large_limit_size)");
		return -ENOENT;
	}
	ret = fkv_ssd_plan(cfg, NULL, &plan, err, errlen);
	if (ret) {
		if (plan.errors.n)
			snprintf(err, errlen, "%s", plan.errors.v[0]);
		goto out_plan;
	}
	fds = calloc(plan.nshards ? plan.nshards : 1, sizeof(*fds));
	if (!fds) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out_plan;
	}
	ret = fkv_ssd_prepare(&plan, 0, fds, &warn, err, errlen);
	for (i = 0; i < warn.n; i++)
		ops->report(ops->arg, true, warn.v[i]);
	if (ret)
		goto out_fds;
	for (r = 0; r < plan.nroots; r++) {
		const struct fkv_ssd_root *root = &plan.roots[r];
		char line[4200];	/* a path (PATH_MAX) and the count */

		for (k = 0; k < root->nshards; k++) {
			uint64_t off = root->kind == FKV_SSD_BLOCKDEV ?
				       (uint64_t)k * root->shard_size : 0;

			ret = ops->attach(ops->arg, fds[root->first_shard + k],
					  off, root->shard_size, (uint32_t)r);
			if (ret) {
				snprintf(err, errlen, "%s shard %u: %s",
					 root->root, k, strerror(-ret));
				goto out_fds;
			}
			out->nshards++;
		}
		snprintf(line, sizeof(line), "%s: %u shard%s x %llu MiB attached",
			 root->root, root->nshards,
			 root->nshards == 1 ? "" : "s",
			 (unsigned long long)(root->shard_size >> 20));
		ops->report(ops->arg, false, line);
	}
	out->capacity = plan.capacity;
out_fds:
	fkv_ssd_close(fds, plan.nshards);
	free(fds);
	fkv_msgs_free(&warn);
out_plan:
	fkv_ssd_plan_free(&plan);
	return ret;
}
