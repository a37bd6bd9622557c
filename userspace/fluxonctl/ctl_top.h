/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctl_top - one frame of `fluxonctl top`: rates per second from two sysfs
 * snapshots and used/capacity bars per tier.  Pure: the loop, the clock and
 * the terminal live in userspace/fluxonctl/cmd_top.c.
 */
#ifndef FLUXONKV_CTL_TOP_H
#define FLUXONKV_CTL_TOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "ctl_sysfs.h"

#define CTL_TOP_BAR_WIDTH	40

/* SSD tier sysfs files (ARCHITECTURE.md, "Observability"); shown if present. */
#define CTL_TOP_SSD_CAPACITY	CTL_SSD_CAPACITY
#define CTL_TOP_SSD_USED	CTL_SSD_USED

struct ctl_top_frame {
	const struct ctl_stats *prev;	/* NULL: first frame, no rates yet */
	const struct ctl_stats *cur;
	double dt;			/* seconds from prev to cur */
	double interval;		/* the requested refresh, for the title */
	time_t now;			/* wall clock, for the title */
};

/*
 * The counter @name's increase per second from prev to cur.  false when
 * there is no rate: first frame, dt <= 0, the file is missing in either
 * snapshot, or the counter went backwards (module reloaded).
 */
bool ctl_top_rate(const struct ctl_top_frame *fr, const char *name,
		  double *rate);

/* "[#######.........]" of @width cells for @used of @capacity, into @buf. */
const char *ctl_top_bar(uint64_t used, uint64_t capacity, int width,
			char *buf, size_t len);

void ctl_top_render(FILE *f, const struct ctl_top_frame *fr);

#endif /* FLUXONKV_CTL_TOP_H */
