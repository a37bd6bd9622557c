/* SPDX-License-Identifier: GPL-2.0 */
/*
 * log.h - fluxond's logging: stderr (foreground) or syslog (--daemon).
 *
 * The sink and level are process-wide state (set once by main before
 * anything else runs), the one exception to "context structs, no globals".
 */
#ifndef FLUXOND_LOG_H
#define FLUXOND_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum fkv_log_level {
	FKV_LOG_ERR,
	FKV_LOG_WARN,
	FKV_LOG_INFO,
	FKV_LOG_DEBUG,
};

/* Default: stderr, FKV_LOG_WARN. */
void fkv_log_setup(enum fkv_log_level level, bool use_syslog);
/* With syslog: also copy messages to stderr (startup of --daemon). */
void fkv_log_tee_stderr(bool on);
enum fkv_log_level fkv_log_level(void);
/* Parse "error|warn|info|debug"; -EINVAL otherwise. */
int fkv_log_parse_level(const char *s, enum fkv_log_level *level);

/* Printable form of a binary key for log lines (escaped, truncated). */
#define FKV_KEY_FMT_LEN	80
const char *fkv_key_fmt(char buf[FKV_KEY_FMT_LEN], const void *key,
			size_t key_len);

void fkv_log(enum fkv_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A warning that a peer can provoke at will (refused connections): at most
 * one a second per @rl, the next one saying how many were left out.  The
 * caller serialises uses of one @rl.
 */
struct fkv_ratelimit {
	long long next_ms;
	unsigned long suppressed;
};
void fkv_ratelimited_warn(struct fkv_ratelimit *rl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define fkv_err(...)	fkv_log(FKV_LOG_ERR, __VA_ARGS__)
#define fkv_warn(...)	fkv_log(FKV_LOG_WARN, __VA_ARGS__)
#define fkv_info(...)	fkv_log(FKV_LOG_INFO, __VA_ARGS__)
#define fkv_dbg(...)							\
	do {								\
		if (fkv_log_level() >= FKV_LOG_DEBUG)			\
			fkv_log(FKV_LOG_DEBUG, __VA_ARGS__);		\
	} while (0)

#endif /* FLUXOND_LOG_H */
