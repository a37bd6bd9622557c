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
	const char *policy;		/* --policy s3fifo|lru */
	unsigned int high_pct;		/* --high-watermark PCT */
	unsigned int low_pct;		/* --low-watermark PCT */
	enum fkv_log_level log_level;	/* --log-level */
	bool ask_on_miss;		/* --ask-on-miss: no local routes */
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

#endif /* FLUXOND_OPTIONS_H */
