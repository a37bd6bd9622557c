// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl top: sample /sys/kernel/fluxonkv/ every interval and draw a
 * frame (ctl_top.c).  On a terminal each frame replaces the last
 * (ANSI clear + home); otherwise frames follow each other, blank-line
 * separated, so `top --iterations N | ...` is scriptable.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_sysfs.h"
#include "ctl_top.h"
#include "ctl.h"

#define CTL_ANSI_CLEAR	"\033[H\033[2J"

static volatile sig_atomic_t ctl_top_stop;

static void ctl_top_on_signal(int sig)
{
	ctl_top_stop = 1;
}

static double ctl_top_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Sleep until monotonic time @t; false if a signal asked us to stop. */
static bool ctl_top_sleep_until(double t)
{
	struct timespec ts = { .tv_sec = (time_t)t };

	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);

	while (!ctl_top_stop) {
		int err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
					  NULL);

		if (!err)
			return !ctl_top_stop;
		if (err != EINTR)
			return false;
	}
	return false;
}

/* A snapshot, or an exit status (with a message) when there is none. */
static int ctl_top_sample(const struct ctl_sysfs *sys, struct ctl_stats *st,
			  bool first)
{
	int err = ctl_stats_load(sys, st);

	if (err == -ENOENT) {
		fprintf(stderr, "fluxonctl top: fluxonkv module %s (no %s)\n",
			first ? "not loaded" : "unloaded", sys->dir);
		return CTL_EXIT_ABSENT;
	}
	if (err) {
		fprintf(stderr, "fluxonctl top: %s: %s\n", sys->dir,
			strerror(-err));
		return CTL_EXIT_ERROR;
	}
	return CTL_EXIT_OK;
}

/* Render into memory first so a frame reaches the terminal in one write. */
static int ctl_top_draw(const struct ctl_top_frame *fr, bool tty, bool first)
{
	size_t len = 0;
	char *buf = NULL;
	FILE *m;

	m = open_memstream(&buf, &len);
	if (!m)
		return CTL_EXIT_ERROR;
	if (tty)
		fputs(CTL_ANSI_CLEAR, m);
	else if (!first)
		fputc('\n', m);
	ctl_top_render(m, fr);
	if (fclose(m)) {
		free(buf);
		return CTL_EXIT_ERROR;
	}
	fwrite(buf, 1, len, stdout);
	free(buf);
	return fflush(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}

int ctl_cmd_top(const struct ctl_opts *o)
{
	struct ctl_stats snap[2] = { { 0 } }, *prev = NULL, *cur;
	struct sigaction sa = { .sa_handler = ctl_top_on_signal };
	bool tty = isatty(STDOUT_FILENO);
	double t_prev = 0, t_cur, next;
	struct ctl_sysfs sys;
	unsigned long i;
	int ret;

	ret = ctl_sysfs_init(&sys);
	if (ret) {
		fprintf(stderr, "fluxonctl top: $%s: %s\n", CTL_SYSFS_ENV,
			strerror(-ret));
		return CTL_EXIT_ERROR;
	}
	/* no SA_RESTART: the sleep ends at once on ^C */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	next = ctl_top_now();
	for (i = 0; !o->iterations || i < o->iterations; i++) {
		struct ctl_top_frame fr;

		if (i && !ctl_top_sleep_until(next))
			break;
		cur = &snap[i % 2];
		t_cur = ctl_top_now();
		ret = ctl_top_sample(&sys, cur, !i);
		if (ret)
			break;
		fr = (struct ctl_top_frame){
			.prev = prev,
			.cur = cur,
			.dt = t_cur - t_prev,
			.interval = o->interval,
			.now = time(NULL),
		};
		ret = ctl_top_draw(&fr, tty, !i);
		if (ret) {
			ctl_stats_free(cur);
			break;
		}
		if (prev)
			ctl_stats_free(prev);
		prev = cur;
		t_prev = t_cur;
		/* a slow frame shifts the schedule instead of bursting */
		next += o->interval;
		if (next < t_cur)
			next = t_cur + o->interval;
	}
	if (prev)
		ctl_stats_free(prev);
	return ret;
}
