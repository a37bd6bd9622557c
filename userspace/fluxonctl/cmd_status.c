// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl status / stats: sysfs (and, for status, netlink; for stats,
 * the debugfs latency histograms) to text.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_format.h"
#include "ctl_latency.h"
#include "ctl_sysfs.h"
#include "ctl.h"
#include "netlink.h"

/* The snapshot, or an exit status (and a message) when there is none. */
static int ctl_load(const char *cmd, struct ctl_sysfs *sys,
		    struct ctl_stats *st)
{
	int err;

	err = ctl_sysfs_init(sys);
	if (err) {
		fprintf(stderr, "fluxonctl %s: $%s: %s\n", cmd, CTL_SYSFS_ENV,
			strerror(-err));
		return CTL_EXIT_ERROR;
	}
	err = ctl_stats_load(sys, st);
	if (err == -ENOENT)
		return CTL_EXIT_ABSENT;
	if (err) {
		fprintf(stderr, "fluxonctl %s: %s: %s\n", cmd, sys->dir,
			strerror(-err));
		return CTL_EXIT_ERROR;
	}
	return CTL_EXIT_OK;
}

int ctl_cmd_status(const struct ctl_opts *o)
{
	struct ctl_status status = { 0 };
	struct ctl_sysfs sys;
	struct ctl_stats st;
	int ret;

	ret = ctl_load("status", &sys, &st);
	if (ret && ret != CTL_EXIT_ABSENT)
		return ret;
	status.sysfs_dir = sys.dir;
	if (!ret) {
		status.stats = &st;
		status.nl_queried = true;
		ctl_genl_get_version(&status.nl);
		if (status.nl.err)
			ret = CTL_EXIT_ERROR;
	}
	if (o->json)
		ctl_render_status_json(stdout, &status);
	else
		ctl_render_status_human(stdout, &status);
	if (status.stats)
		ctl_stats_free(&st);
	if (fflush(stdout))
		return CTL_EXIT_ERROR;
	return ret;
}

int ctl_cmd_stats(const struct ctl_opts *o)
{
	struct ctl_latency *lat;
	struct ctl_sysfs sys;
	struct ctl_stats st;
	int ret;

	ret = ctl_load("stats", &sys, &st);
	if (ret == CTL_EXIT_ABSENT)
		fprintf(stderr, "fluxonctl stats: fluxonkv module not loaded (no %s)\n",
			sys.dir);
	if (ret)
		return ret;
	/*
	 * Latency lives in debugfs (root only): without it the sysfs values
	 * are still worth printing, and lat->err says why it is missing.
	 */
	lat = malloc(sizeof(*lat));
	if (!lat) {
		fprintf(stderr, "fluxonctl stats: %s\n", strerror(ENOMEM));
		ctl_stats_free(&st);
		return CTL_EXIT_ERROR;
	}
	ctl_latency_load(NULL, lat);
	if (o->prometheus)
		ctl_render_stats_prometheus(stdout, &st, lat);
	else if (o->json)
		ctl_render_stats_json(stdout, &st, lat);
	else
		ctl_render_stats_human(stdout, &st, lat);
	free(lat);
	ctl_stats_free(&st);
	return fflush(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}
