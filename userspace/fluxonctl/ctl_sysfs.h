/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctl_sysfs - fluxonctl's view of /sys/kernel/fluxonkv/: raw reads of one
 * value per file, the table of attributes the module exports, and a
 * snapshot of all of them for the renderers (ctl_format.h).
 *
 * The directory is FLUXONKV_SYSFS from the environment when set (tests point
 * it at a temporary directory), /sys/kernel/fluxonkv otherwise.
 */
#ifndef FLUXONKV_CTL_SYSFS_H
#define FLUXONKV_CTL_SYSFS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_SYSFS_DEFAULT_DIR	"/sys/kernel/fluxonkv"
#define CTL_SYSFS_ENV		"FLUXONKV_SYSFS"

struct ctl_sysfs {
	char dir[PATH_MAX];
};

/* Pick the directory (env or default); -ENAMETOOLONG if it cannot fit. */
int ctl_sysfs_init(struct ctl_sysfs *s);

/*
 * All of @fd (to end of file) into a malloc'ed, NUL-terminated buffer;
 * @len excludes the NUL.  0, -E2BIG past @max bytes, -ENOMEM or -errno.
 */
int ctl_read_fd(int fd, size_t max, char **out, size_t *len);
/* Is the module loaded, i.e. does the directory exist? */
bool ctl_sysfs_present(const struct ctl_sysfs *s);
/* Read a file's text without its trailing newline; -errno on failure. */
int ctl_sysfs_read_str(const struct ctl_sysfs *s, const char *name,
		       char *buf, size_t len);
/* Read a file holding one unsigned decimal integer; -EINVAL if not one. */
int ctl_sysfs_read_u64(const struct ctl_sysfs *s, const char *name,
		       uint64_t *v);

/* The SSD tier's gauges (reference section 2.4 names them so). */
#define CTL_SSD_CAPACITY	"kv_ssd_capacity_bytes"
#define CTL_SSD_USED		"kv_ssd_used_bytes"

/* How a value is presented (Prometheus type, human form). */
enum ctl_stat_kind {
	CTL_STAT_LABEL,		/* identifies the module: an info label */
	CTL_STAT_GAUGE,
	CTL_STAT_COUNTER,	/* monotonic; Prometheus name ends in _total */
	CTL_STAT_UNTYPED,	/* a numeric file this fluxonctl does not know */
};

struct ctl_stat_def {
	const char *name;	/* sysfs file name */
	enum ctl_stat_kind kind;
	bool is_string;		/* text, not a number */
	bool is_bytes;		/* shown in binary units too */
	const char *alias;	/* extra Prometheus gauge name, or NULL */
	const char *help;
};

/* Every attribute of /sys/kernel/fluxonkv/ this version knows, in order. */
extern const struct ctl_stat_def ctl_stat_defs[];
extern const size_t ctl_stat_ndefs;

#define CTL_STAT_NAME_MAX	64
#define CTL_STAT_STR_MAX	128
#define CTL_STATS_MAX_EXTRA	64

struct ctl_stat {
	char name[CTL_STAT_NAME_MAX];
	const struct ctl_stat_def *def;	/* NULL for an unknown (extra) file */
	int err;			/* 0, or why the file could not be read */
	uint64_t value;
	char str[CTL_STAT_STR_MAX];	/* the file's text (is_string ones) */
};

/* A snapshot of the directory: known attributes, then numeric extras. */
struct ctl_stats {
	struct ctl_stat *v;
	size_t n;
};

/* -ENOENT if the directory does not exist (module not loaded). */
int ctl_stats_load(const struct ctl_sysfs *s, struct ctl_stats *st);
void ctl_stats_free(struct ctl_stats *st);
/* The readable stat called @name, or NULL. */
const struct ctl_stat *ctl_stats_get(const struct ctl_stats *st,
				     const char *name);
enum ctl_stat_kind ctl_stat_kind(const struct ctl_stat *s);

#endif /* FLUXONKV_CTL_SYSFS_H */
