/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctl_args - fluxonctl's command line: exit codes, per-command option
 * parsing and usage texts.  Parsers never exit and never print to stdout:
 * they fill a struct ctl_opts or write one error line to @err and return
 * -EINVAL, so the dispatcher (userspace/fluxonctl/main.c) decides the exit.
 */
#ifndef FLUXONKV_CTL_ARGS_H
#define FLUXONKV_CTL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <linux/fluxonkv.h>

/* Exit codes scripts can rely on. */
enum ctl_exit {
	CTL_EXIT_OK = 0,
	CTL_EXIT_ERROR = 1,
	CTL_EXIT_USAGE = 2,
	CTL_EXIT_MISS = 3,	/* get/delete of a key that has no value */
	CTL_EXIT_ABSENT = 4,	/* module not loaded, or no daemon where needed */
};

struct ctl_opts {
	bool help;		/* -h/--help: print usage, exit 0 */
	bool verbose;		/* put -v: print the put_id */
	bool json;
	bool prometheus;
	bool info;		/* get --info: metadata instead of bytes */
	bool hex;		/* -x: KEY is hex digits */
	bool if_needed;		/* config attach --if-needed */
	const char *device;	/* --device, NULL = default */
	const char *key_arg;	/* KEY as given */
	unsigned char key[FLUXONKV_KEY_MAX];
	size_t key_len;
	const char *value;	/* put --value */
	const char *input;	/* put FILE; NULL or "-" = stdin */
	const char *output;	/* get -o FILE; NULL or "-" = stdout */
	const char *what;	/* dump WHAT; config: its sub-command */
	const char *regex;	/* clear --regex */
	const char *tenant;	/* clear --tenant, tenants NAME */
	double interval;	/* top --interval, seconds */
	unsigned long iterations;	/* top --iterations, 0 = until killed */
};

/* top: default refresh and the range --interval accepts, in seconds. */
#define CTL_TOP_INTERVAL_DEFAULT	1.0
#define CTL_TOP_INTERVAL_MIN		0.05
#define CTL_TOP_INTERVAL_MAX		3600.0

/* @argv[0] is the command name; @err receives one line per error. */
typedef int (*ctl_parse_fn)(int argc, char **argv, struct ctl_opts *o,
			    FILE *err);

int ctl_parse_put(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_parse_get(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_parse_delete(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_parse_status(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_parse_clear(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_parse_stats(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_parse_dump(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_parse_top(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_parse_tenants(int argc, char **argv, struct ctl_opts *o, FILE *err);

/*
 * The global -j/--json (before the command) applied to @cmd's parsed
 * options, with the checks the command's own --json gets: get --info
 * --json (not with --output), stats/cluster (not with --prometheus),
 * status, dump, config.  -EINVAL (one line on @err) for a command with
 * no JSON output.
 */
int ctl_global_json(const char *cmd, struct ctl_opts *o, FILE *err);

extern const char ctl_usage_main[];
extern const char ctl_usage_put[];
extern const char ctl_usage_get[];
extern const char ctl_usage_delete[];
extern const char ctl_usage_status[];
extern const char ctl_usage_stats[];
extern const char ctl_usage_dump[];
extern const char ctl_usage_top[];
extern const char ctl_usage_cluster[];
extern const char ctl_usage_clear[];
extern const char ctl_usage_tenants[];

/*
 * The exit status for a negative errno from libfluxonkv: -ENOENT is a miss,
 * -ENODEV/-ENXIO (no device: module not loaded) and -ENOTCONN (no daemon)
 * are CTL_EXIT_ABSENT, anything else CTL_EXIT_ERROR.
 */
int ctl_exit_code(int err);

/*
 * KEY from the command line into @buf (FLUXONKV_KEY_MAX bytes): its bytes,
 * or with @hex its hex digits decoded.  -EINVAL: empty or bad hex;
 * -E2BIG: longer than FLUXONKV_KEY_MAX bytes.
 */
int ctl_key_decode(const char *arg, bool hex, unsigned char *buf,
		   size_t *len);

#endif /* FLUXONKV_CTL_ARGS_H */
