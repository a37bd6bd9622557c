// SPDX-License-Identifier: GPL-2.0
/*
 * log.c - leveled logging to stderr or syslog (log.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <syslog.h>
#include <time.h>

#include "log.h"

/* Set by main before the event loop; read-only afterwards. */
static struct {
	enum fkv_log_level level;
	bool syslog;
	bool tee;
} fkv_log_state = { FKV_LOG_WARN, false, false };

static const char *const level_names[] = {
	[FKV_LOG_ERR] = "error",
	[FKV_LOG_WARN] = "warn",
	[FKV_LOG_INFO] = "info",
	[FKV_LOG_DEBUG] = "debug",
};

static const int level_prio[] = {
	[FKV_LOG_ERR] = LOG_ERR,
	[FKV_LOG_WARN] = LOG_WARNING,
	[FKV_LOG_INFO] = LOG_INFO,
	[FKV_LOG_DEBUG] = LOG_DEBUG,
};

void fkv_log_setup(enum fkv_log_level level, bool use_syslog)
{
	fkv_log_state.level = level;
	fkv_log_state.syslog = use_syslog;
	if (use_syslog)
		openlog("fluxond", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void fkv_log_tee_stderr(bool on)
{
	fkv_log_state.tee = on;
}

enum fkv_log_level fkv_log_level(void)
{
	return fkv_log_state.level;
}

int fkv_log_parse_level(const char *s, enum fkv_log_level *level)
{
	size_t i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcmp(s, level_names[i])) {
			*level = (enum fkv_log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void fkv_log(enum fkv_log_level level, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (level > fkv_log_state.level)
		return;
	if (fkv_log_state.syslog) {
		va_start(ap, fmt);
		vsyslog(level_prio[level], fmt, ap);
		va_end(ap);
	}
	if (!fkv_log_state.syslog || fkv_log_state.tee) {
		va_start(ap, fmt);
		/* Under systemd stderr is the journal: "<N>" is the priority. */
		if (getenv("JOURNAL_STREAM"))
			fprintf(stderr, "<%d>", level_prio[level]);
		fprintf(stderr, "fluxond: %s: ", level_names[level]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
	errno = saved;
}

const char *fkv_key_fmt(char buf[FKV_KEY_FMT_LEN], const void *key,
			size_t key_len)
{
	const unsigned char *k = key;
	size_t i, o = 0;

	for (i = 0; i < key_len && o + 8 < FKV_KEY_FMT_LEN; i++) {
		if (k[i] >= 0x20 && k[i] < 0x7f && k[i] != '\\')
			buf[o++] = (char)k[i];
		else
			o += (size_t)snprintf(buf + o, FKV_KEY_FMT_LEN - o,
					      "\\x%02x", k[i]);
	}
	if (i < key_len) {
		buf[o++] = '.';
		buf[o++] = '.';
		buf[o++] = '.';
	}
	buf[o] = '\0';
	return buf;
}

void fkv_ratelimited_warn(struct fkv_ratelimit *rl, const char *fmt, ...)
{
	struct timespec ts;
	long long now;
	char msg[512];
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (now < rl->next_ms) {
		rl->suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (rl->suppressed)
		fkv_warn("%s (and %lu more like it in the last second)", msg,
			 rl->suppressed);
	else
		fkv_warn("%s", msg);
	rl->suppressed = 0;
	rl->next_ms = now + 1000;
}
