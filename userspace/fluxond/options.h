/* SPDX-License-Identifier: GPL-2.0 */
/*
 * options.h - fluxond's command line.
 */
#ifndef FLUXOND_OPTIONS_H
#define FLUXOND_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "log.h"

#define FLUXOND_VERSION	"0.1.0"

struct fkv_options {
	bool daemon;			/* --daemon: fork, setsid, syslog */
	const char *pidfile;		/* --pidfile PATH or NULL */
	/*
	 * --config FILE: the node configuration, FKV_CONFIG_PATH_DEFAULT
	 * unless given.  config_explicit: it was given on the command line.
	 *
	 * Only the option is parsed here; nothing reads the file yet.  The
	 * contract for whoever loads it (fluxond/main.c, with
	 * fkv_config_load()):
	 *  - config_explicit and the file cannot be read (ENOENT included):
	 *    an error, exit 1;
	 *  - the default path and it does not exist (ENOENT): not an error:
	 *    use the embedded default, a single node with no SSD tier and no
	 *    cluster section (as an empty fluxonkv_spec parses);
	 *  - any other failure to read it (EACCES, ...) or an invalid file,
	 *    default path or not: an error, exit 1, with every message.
	 */
	const char *config_path;
	bool config_explicit;
	/* --control PATH: the control socket (FKV_CONTROL_PATH); NULL: none */
	const char *control_path;
	const char *policy;		/* --policy s3fifo|lru */
	unsigned int high_pct;		/* --high-watermark PCT */
	unsigned int low_pct;		/* --low-watermark PCT */
	enum fkv_log_level log_level;	/* --log-level */
	/*
	 * Given on the command line: the configuration file's value of the
	 * same setting does not apply (fkv_options_apply_config()).
	 */
	bool policy_set, high_set, low_set, log_level_set;
	bool ask_on_miss;		/* --ask-on-miss: no local routes */
	bool put_via_master;		/* --put-via-master: no local puts */
	bool no_clean_drops;		/* --no-clean-drops */
	bool help;
	bool version;
};

/*
 * Parse argv into @o (defaults first).  0, or -EINVAL after printing the
 * reason to @err.
 */
int fkv_options_parse(struct fkv_options *o, int argc, char **argv,
		      FILE *err);
void fkv_options_usage(FILE *f, const char *prog);
/*
 * The configuration file's policy, watermarks and log level into @o where
 * the command line did not set them.  0, or -EINVAL after printing to
 * @err (the combination has low above high).
 */
struct fkv_config;
int fkv_options_apply_config(struct fkv_options *o,
			     const struct fkv_config *cfg, FILE *err);

#endif /* FLUXOND_OPTIONS_H */
