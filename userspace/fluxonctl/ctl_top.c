// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_top: render one frame of `fluxonctl top` (ctl_top.h).
 */
#include <math.h>
#include <string.h>

#include "ctl_format.h"
#include "ctl_top.h"

/* The counters shown as rates, in order. */
static const struct {
	const char *label;
	const char *stat;
} ctl_top_counters[] = {
	{ "puts", "puts" },
	{ "gets", "gets" },
	{ "hits memory", "hits_memory" },
	{ "hits ssd", "hits_ssd" },
	{ "misses", "misses" },
	{ "deletes", "deletes" },
	{ "evictions", "evictions" },
	{ "room waits", "room_waits" },
	{ "timeouts", "upcall_timeouts" },
};

static bool ctl_top_value(const struct ctl_stats *st, const char *name,
			  uint64_t *v)
{
	const struct ctl_stat *s = st ? ctl_stats_get(st, name) : NULL;

	if (!s || (s->def && s->def->is_string))
		return false;
	*v = s->value;
	return true;
}

bool ctl_top_rate(const struct ctl_top_frame *fr, const char *name,
		  double *rate)
{
	uint64_t a, b;

	if (!fr->prev || fr->dt <= 0 || !ctl_top_value(fr->prev, name, &a) ||
	    !ctl_top_value(fr->cur, name, &b) || b < a)
		return false;
	*rate = (double)(b - a) / fr->dt;
	return true;
}

const char *ctl_top_bar(uint64_t used, uint64_t capacity, int width,
			char *buf, size_t len)
{
	int filled = 0, i;
	size_t p = 0;

	if (len < (size_t)width + 3) {
		snprintf(buf, len, "[]");
		return buf;
	}
	if (capacity)
		filled = used >= capacity ? width :
			 (int)((double)used / (double)capacity * width + 0.5);
	if (filled > width)
		filled = width;
	buf[p++] = '[';
	for (i = 0; i < width; i++)
		buf[p++] = i < filled ? '#' : '.';
	buf[p++] = ']';
	buf[p] = '\0';
	return buf;
}

static void ctl_top_tier(FILE *f, const char *label, const struct ctl_stats *st,
			 const char *cap_name, const char *used_name)
{
	char bar[CTL_TOP_BAR_WIDTH + 3], a[CTL_SIZE_BUFLEN], b[CTL_SIZE_BUFLEN];
	uint64_t cap, used;

	if (!ctl_top_value(st, cap_name, &cap) ||
	    !ctl_top_value(st, used_name, &used)) {
		fprintf(f, "%-5s unknown\n", label);
		return;
	}
	if (!cap) {	/* the module knows the tier, none is attached */
		fprintf(f, "%-5s none\n", label);
		return;
	}
	fprintf(f, "%-5s %s %10s / %-10s %5.1f%%\n", label,
		ctl_top_bar(used, cap, CTL_TOP_BAR_WIDTH, bar, sizeof(bar)),
		ctl_format_size(used, a, sizeof(a)),
		ctl_format_size(cap, b, sizeof(b)), ctl_percent(used, cap));
}

static void ctl_top_title(FILE *f, const struct ctl_top_frame *fr)
{
	const struct ctl_stat *ver = ctl_stats_get(fr->cur, "version");
	char when[16] = "";
	struct tm tm;
	uint64_t pid;

	if (localtime_r(&fr->now, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	fprintf(f, "fluxonkv %s  %s  every %gs  ", ver ? ver->str : "?", when,
		fr->interval);
	if (!ctl_top_value(fr->cur, "daemon_pid", &pid))
		fputs("daemon: unknown\n", f);
	else if (pid)
		fprintf(f, "daemon: pid %llu\n", (unsigned long long)pid);
	else
		fputs("daemon: NOT CONNECTED\n", f);
}

static void ctl_top_gauge(FILE *f, const struct ctl_stats *st,
			  const char *label, const char *name)
{
	uint64_t v;

	if (ctl_top_value(st, name, &v))
		fprintf(f, "%s %llu", label, (unsigned long long)v);
	else
		fprintf(f, "%s -", label);
}

/* hits / gets in percent, over the interval and since load. */
static void ctl_top_hit_ratio(FILE *f, const struct ctl_top_frame *fr)
{
	double hm, hs, g, ratio = NAN;
	uint64_t m, s, n;

	if (ctl_top_rate(fr, "hits_memory", &hm) &&
	    ctl_top_rate(fr, "hits_ssd", &hs) &&
	    ctl_top_rate(fr, "gets", &g) && g > 0)
		ratio = 100.0 * (hm + hs) / g;
	fprintf(f, "%-12s", "hit ratio");
	if (isnan(ratio))
		fprintf(f, " %11s", "-");
	else
		fprintf(f, " %10.1f%%", ratio);
	if (ctl_top_value(fr->cur, "hits_memory", &m) &&
	    ctl_top_value(fr->cur, "hits_ssd", &s) &&
	    ctl_top_value(fr->cur, "gets", &n) && n)
		fprintf(f, " %13.1f%%\n", 100.0 * (double)(m + s) / (double)n);
	else
		fprintf(f, " %14s\n", "-");
}

void ctl_top_render(FILE *f, const struct ctl_top_frame *fr)
{
	size_t i;

	ctl_top_title(f, fr);
	ctl_top_tier(f, "DRAM", fr->cur, "segment_capacity_bytes",
		     "segment_used_bytes");
	if (ctl_stats_get(fr->cur, CTL_TOP_SSD_CAPACITY) ||
	    ctl_stats_get(fr->cur, CTL_TOP_SSD_USED))
		ctl_top_tier(f, "SSD", fr->cur, CTL_TOP_SSD_CAPACITY,
			     CTL_TOP_SSD_USED);
	ctl_top_gauge(f, fr->cur, "replicas", "replicas");
	ctl_top_gauge(f, fr->cur, "  holders", "holders");
	fputc('\n', f);
	fputc('\n', f);

	fprintf(f, "%-12s %11s %14s\n", "", "per second", "total");
	for (i = 0; i < sizeof(ctl_top_counters) / sizeof(ctl_top_counters[0]);
	     i++) {
		const char *name = ctl_top_counters[i].stat;
		uint64_t total;
		double rate;

		fprintf(f, "%-12s", ctl_top_counters[i].label);
		if (ctl_top_rate(fr, name, &rate))
			fprintf(f, " %11.1f", rate);
		else
			fprintf(f, " %11s", "-");
		if (ctl_top_value(fr->cur, name, &total))
			fprintf(f, " %14llu\n", (unsigned long long)total);
		else
			fprintf(f, " %14s\n", "-");
	}
	ctl_top_hit_ratio(f, fr);
}
