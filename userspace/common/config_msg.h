/* SPDX-License-Identifier: GPL-2.0 */
/*
 * config_msg - the message helpers config.c and ssd_plan.c share (private
 * to them): lists of single-line messages and quoting of configured strings.
 */
#ifndef FLUXONKV_CONFIG_MSG_H
#define FLUXONKV_CONFIG_MSG_H

#include <stdarg.h>
#include <stddef.h>

#include "fluxonkv_config.h"

/* Longest configured string a message repeats before eliding the rest. */
#define FKV_QUOTE_MAX	160
#define FKV_QUOTE_BUF	(FKV_QUOTE_MAX * 4 + 8)

/* Append a formatted message to @m: 0 or -ENOMEM. */
__attribute__((format(printf, 2, 0)))
int fkv_msgs_vadd(struct fkv_msgs *m, const char *fmt, va_list ap);
__attribute__((format(printf, 2, 3)))
int fkv_msgs_add(struct fkv_msgs *m, const char *fmt, ...);
/* Every message of @m into @err, one per line, truncated to @errlen. */
void fkv_msgs_copy(const struct fkv_msgs *m, char *err, size_t errlen);
/* One message into @err (nothing when @err is NULL or @errlen 0). */
__attribute__((format(printf, 3, 4)))
void fkv_seterr(char *err, size_t errlen, const char *fmt, ...);

/*
 * @s (@len bytes, may hold NULs) double-quoted on one line: '"' and '\'
 * escaped, bytes outside printable ASCII as \xNN, elided after
 * FKV_QUOTE_MAX bytes.  @buf has FKV_QUOTE_BUF bytes; returns it.
 */
const char *fkv_quote_n(char *buf, const char *s, size_t len);
const char *fkv_quote(char *buf, const char *s);

#endif /* FLUXONKV_CONFIG_MSG_H */
