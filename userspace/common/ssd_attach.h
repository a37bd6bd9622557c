/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ssd_attach.h - attach a configuration's SSD tier to the module.
 */
#ifndef FKV_SSD_ATTACH_H
#define FKV_SSD_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fkv_config;

struct fkv_ssd_attach_ops {
	/* FLUXONKV_IOC_SSD_ATTACH of one shard: 0 or -errno. */
	int (*attach)(void *arg, int fd, uint64_t offset, uint64_t capacity,
		      uint32_t device);
	/* One line: a root attached, or a warning of the preparation. */
	void (*report)(void *arg, bool warning, const char *line);
	void *arg;
};

struct fkv_ssd_attached {
	unsigned int nshards;
	uint64_t capacity;	/* bytes, once all are attached */
};

/*
 * Plan, prepare (create / truncate / open) and attach every shard @cfg
 * declares.  0, or -errno with one line in @err (-ENOENT: @cfg declares
 * no SSD tier); shards attached before a failure stay attached.
 */
int fkv_ssd_attach_config(const struct fkv_config *cfg,
			  const struct fkv_ssd_attach_ops *ops,
			  struct fkv_ssd_attached *out, char *err,
			  size_t errlen);

#endif /* FKV_SSD_ATTACH_H */
