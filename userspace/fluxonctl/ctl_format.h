/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctl_format - everything fluxonctl prints: sizes in binary units and the
 * human, JSON and Prometheus forms of stats, status and holder metadata.
 * Pure functions of their inputs, writing to a FILE (tests use memstreams).
 */
#ifndef FLUXONKV_CTL_FORMAT_H
#define FLUXONKV_CTL_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl_latency.h"
#include "ctl_sysfs.h"

#define CTL_SIZE_BUFLEN		24

/* "512 B", "1.0 KiB", "1.5 MiB", ... "16.0 EiB", rounded to 0.1. */
const char *ctl_format_size(uint64_t bytes, char *buf, size_t len);
/* 100 * used / capacity; NAN when capacity is 0. */
double ctl_percent(uint64_t used, uint64_t capacity);
/* "none", "memory", "ssd", "unknown". */
const char *ctl_source_name(unsigned int source);

/* The FLUXONKV_CMD_GET_VERSION reply, as fluxonctl's netlink side saw it. */
#define CTL_GV_VERSION		(1U << 0)
#define CTL_GV_ABI		(1U << 1)
#define CTL_GV_SEGMENT_SIZE	(1U << 2)
#define CTL_GV_SEGMENT_USED	(1U << 3)
#define CTL_GV_DAEMON_PID	(1U << 4)

struct ctl_genl_version {
	int err;		/* 0: a reply arrived and parsed */
	char error[160];	/* what failed, when err */
	unsigned int have;	/* CTL_GV_* of the attributes present */
	char version[64];
	uint32_t abi;
	uint64_t segment_size;
	uint64_t segment_used;
	uint32_t daemon_pid;
};

struct ctl_status {
	const char *sysfs_dir;
	const struct ctl_stats *stats;	/* NULL: module not loaded */
	bool nl_queried;
	struct ctl_genl_version nl;
};

struct ctl_holder_info {
	const char *key;	/* as given on the command line */
	uint64_t holder_id;
	uint64_t len;
	uint64_t put_id;
	unsigned int source;
};

/*
 * The sysfs snapshot, then the latency histograms (ctl_latency.h) when
 * @lat is not NULL: a table or why it is unavailable (human), member
 * "latency" (JSON, null when unavailable), a histogram family
 * (Prometheus, left out when unavailable).
 */
void ctl_render_stats_human(FILE *f, const struct ctl_stats *st,
			    const struct ctl_latency *lat);
void ctl_render_stats_json(FILE *f, const struct ctl_stats *st,
			   const struct ctl_latency *lat);
void ctl_render_stats_prometheus(FILE *f, const struct ctl_stats *st,
				 const struct ctl_latency *lat);

void ctl_render_status_human(FILE *f, const struct ctl_status *s);
void ctl_render_status_json(FILE *f, const struct ctl_status *s);

void ctl_render_holder_human(FILE *f, const struct ctl_holder_info *h);
void ctl_render_holder_json(FILE *f, const struct ctl_holder_info *h);

#endif /* FLUXONKV_CTL_FORMAT_H */
