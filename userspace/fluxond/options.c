// SPDX-License-Identifier: GPL-2.0
/*
 * options.c - fluxond's command line (options.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "fluxonkv_config.h"
#include "../common/cluster_msg.h"
#include "evict.h"
#include "master.h"
#include "options.h"

enum {
	OPT_FOREGROUND = 'f',
	OPT_DAEMON = 'd',
	OPT_PIDFILE = 'p',
	OPT_CONFIG = 'c',
	OPT_HELP = 'h',
	OPT_VERSION = 'V',
	OPT_POLICY = 256,
	OPT_HIGH,
	OPT_LOW,
	OPT_LOG_LEVEL,
	OPT_ASK_ON_MISS,
	OPT_PUT_VIA_MASTER,
	OPT_NO_CLEAN_DROPS,
	OPT_CONTROL,
};

static const struct option long_opts[] = {
	{ "foreground", no_argument, NULL, OPT_FOREGROUND },
	{ "daemon", no_argument, NULL, OPT_DAEMON },
	{ "pidfile", required_argument, NULL, OPT_PIDFILE },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "high-watermark", required_argument, NULL, OPT_HIGH },
	{ "low-watermark", required_argument, NULL, OPT_LOW },
	{ "log-level", required_argument, NULL, OPT_LOG_LEVEL },
	{ "ask-on-miss", no_argument, NULL, OPT_ASK_ON_MISS },
	{ "put-via-master", no_argument, NULL, OPT_PUT_VIA_MASTER },
	{ "no-clean-drops", no_argument, NULL, OPT_NO_CLEAN_DROPS },
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

void fkv_options_usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [OPTION]...\n"
		"fluxonkv master daemon: routes, versions and eviction for the\n"
		"fluxonkv kernel module (generic netlink family \"%s\").\n"
		"\n"
		"  -f, --foreground         stay in the foreground, log to stderr (default)\n"
		"  -d, --daemon             detach (fork, setsid), log to syslog\n"
		"  -p, --pidfile PATH       write and lock a pid file\n"
		"  -c, --config FILE        node configuration: SSD tier, cluster section\n"
		"                           (default " FKV_CONFIG_PATH_DEFAULT ";\n"
		"                           if that is missing: one node, no SSD tier,\n"
		"                           no network; a FILE given must exist)\n"
		"      --control PATH       control socket for fluxonctl cluster (default\n"
		"                           " FKV_CONTROL_PATH "; \"none\": no socket)\n"
		"      --policy NAME        eviction policy: s3fifo (default) or lru\n"
		"      --high-watermark PCT start evicting above PCT%% of the segment (default %d)\n"
		"      --low-watermark PCT  ... down to PCT%% (default %d)\n"
		"      --log-level LEVEL    error, warn, info (default) or debug\n"
		"      --ask-on-miss        the module asks this daemon (GET_START) on every\n"
		"                           DRAM miss instead of answering from its own\n"
		"                           index (SSD routes, misses)\n"
		"      --put-via-master     every put asks this daemon for its version and\n"
		"                           publication (PUT_START, PUT_DONE: two round\n"
		"                           trips) instead of the module publishing it\n"
		"                           and telling the daemon afterwards (one node)\n"
		"                           or asking the master once (PUT, a cluster)\n"
		"      --no-clean-drops     the module makes room only through this\n"
		"                           daemon's eviction (NEED_ROOM), never by\n"
		"                           dropping DRAM replicas that have a routed SSD\n"
		"                           copy itself\n"
		"  -h, --help               show this help\n"
		"  -V, --version            show the version\n"
		"\n"
		"Needs CAP_NET_ADMIN and CAP_SYS_ADMIN.  Exit status: 0 on SIGTERM/SIGINT, 1 on errors\n"
		"(module not loaded, another daemon registered, ...), 2 on bad usage.\n",
		prog, FLUXONKV_GENL_NAME, FKV_HIGH_WATERMARK_DEFAULT,
		FKV_LOW_WATERMARK_DEFAULT);
}

static int parse_pct(const char *s, unsigned int *pct)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < 1 || v > 100)
		return -EINVAL;
	*pct = (unsigned int)v;
	return 0;
}

int fkv_options_parse(struct fkv_options *o, int argc, char **argv,
		      FILE *err)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->policy = "s3fifo";
	o->high_pct = FKV_HIGH_WATERMARK_DEFAULT;
	o->low_pct = FKV_LOW_WATERMARK_DEFAULT;
	o->log_level = FKV_LOG_INFO;
	o->config_path = FKV_CONFIG_PATH_DEFAULT;
	o->control_path = FKV_CONTROL_PATH;

	optind = 0;	/* full re-initialisation (glibc) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":fdp:c:hV", long_opts,
				NULL)) != -1) {
		switch (c) {
		case OPT_FOREGROUND:
			o->daemon = false;
			break;
		case OPT_DAEMON:
			o->daemon = true;
			break;
		case OPT_PIDFILE:
			if (!optarg[0]) {
				fprintf(err, "--pidfile needs a path\n");
				return -EINVAL;
			}
			o->pidfile = optarg;
			break;
		case OPT_CONFIG:
			if (!optarg[0]) {
				fprintf(err, "--config needs a path\n");
				return -EINVAL;
			}
			o->config_path = optarg;
			o->config_explicit = true;
			break;
		case OPT_CONTROL:
			if (!optarg[0]) {
				fprintf(err, "--control needs a path (or none)\n");
				return -EINVAL;
			}
			o->control_path = strcmp(optarg, "none") ? optarg : NULL;
			break;
		case OPT_POLICY:
			if (!fkv_evict_valid_name(optarg)) {
				fprintf(err, "unknown policy '%s' (s3fifo, lru)\n",
					optarg);
				return -EINVAL;
			}
			o->policy = optarg;
			o->policy_set = true;
			break;
		case OPT_HIGH:
		case OPT_LOW:
			if (parse_pct(optarg, c == OPT_HIGH ? &o->high_pct
							    : &o->low_pct)) {
				fprintf(err, "bad watermark '%s' (1..100)\n",
					optarg);
				return -EINVAL;
			}
			if (c == OPT_HIGH)
				o->high_set = true;
			else
				o->low_set = true;
			break;
		case OPT_LOG_LEVEL:
			if (fkv_log_parse_level(optarg, &o->log_level)) {
				fprintf(err, "bad log level '%s' "
					"(error, warn, info, debug)\n", optarg);
				return -EINVAL;
			}
			o->log_level_set = true;
			break;
		case OPT_ASK_ON_MISS:
			o->ask_on_miss = true;
			break;
		case OPT_PUT_VIA_MASTER:
			o->put_via_master = true;
			break;
		case OPT_NO_CLEAN_DROPS:
			o->no_clean_drops = true;
			break;
		case OPT_HELP:
			o->help = true;
			break;
		case OPT_VERSION:
			o->version = true;
			break;
		case ':':
			fprintf(err, "option %s needs an argument\n",
				argv[optind - 1]);
			return -EINVAL;
		default:
			if (optopt && optopt < 256)
				fprintf(err, "bad option -%c\n", optopt);
			else
				fprintf(err, "bad option %s\n",
					argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(err, "unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	/*
	 * One of them alone is checked with the configuration's other
	 * (fkv_options_apply_config()); both given are checked now.
	 */
	if (o->high_set && o->low_set &&
	    fkv_master_check_watermarks(o->high_pct, o->low_pct)) {
		fprintf(err, "low watermark %u%% above high watermark %u%%\n",
			o->low_pct, o->high_pct);
		return -EINVAL;
	}
	return 0;
}

int fkv_options_apply_config(struct fkv_options *o,
			     const struct fkv_config *cfg, FILE *err)
{
	if (cfg->policy && !o->policy_set)
		o->policy = cfg->policy;
	if (cfg->high_pct && !o->high_set)
		o->high_pct = cfg->high_pct;
	if (cfg->low_pct && !o->low_set)
		o->low_pct = cfg->low_pct;
	/* The file's names are the ones fkv_log_parse_level() takes. */
	if (cfg->log_level && !o->log_level_set &&
	    fkv_log_parse_level(cfg->log_level, &o->log_level)) {
		fprintf(err, "bad log level '%s' in the configuration\n",
			cfg->log_level);
		return -EINVAL;
	}
	if (fkv_master_check_watermarks(o->high_pct, o->low_pct)) {
		fprintf(err, "low watermark %u%% above high watermark %u%% "
			"(the configuration's and the command line's together)\n",
			o->low_pct, o->high_pct);
		return -EINVAL;
	}
	return 0;
}
