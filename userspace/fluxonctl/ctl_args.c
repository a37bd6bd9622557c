// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_args: fluxonctl's per-command option parsing and usage texts.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/cluster_msg.h"
#include "ctl_args.h"
#include "ctl_dump.h"

const char ctl_usage_main[] =
	"Usage: fluxonctl [--help] [--version] [-j|--json] COMMAND [ARGS]\n"
	"\n"
	"  -j, --json           JSON output, for the commands that have it (get\n"
	"                       --info, status, stats, dump, cluster, config check)\n"
	"      --version        print the version and the ABI\n"
	"\n"
	"Commands:\n"
	"  put KEY [FILE|-]     store a value read from FILE, stdin or --value\n"
	"  get KEY [-o FILE]    write a value to stdout or FILE\n"
	"  delete KEY           remove a key\n"
	"  clear [--regex RE]   remove every key of a tenant (--tenant; or those\n"
	"                       RE matches) through fluxond's master\n"
	"  status               module, daemon, segment and SSD tier state\n"
	"  stats                every counter and operation latency (human,\n"
	"                       --json or --prometheus)\n"
	"  dump WHAT            a debugfs dump: replicas, holders, pending, segment,\n"
	"                       rings, latency\n"
	"  top                  live rates and segment use, refreshed\n"
	"  cluster              fluxond's view of the cluster: nodes, liveness,\n"
	"                       remote transfers (human, --json or --prometheus)\n"
	"  tenants [NAME]       the master's per-tenant statistics (human, --json\n"
	"                       or --prometheus)\n"
	"  config check FILE    validate a configuration, show its SSD plan\n"
	"  config attach FILE   create the SSD shards of FILE, attach them\n"
	"\n"
	"'fluxonctl COMMAND --help' describes a command.\n"
	"\n"
	"Exit status: 0 ok, 1 error, 2 usage, 3 key not found,\n"
	"4 module not loaded or no fluxond daemon.\n";

#define CTL_USAGE_KEY							\
	"  -x, --hex            KEY is hex digits (for binary keys)\n"	\
	"  -d, --device PATH    device to use (default /dev/fluxonkv)\n"	\
	"  -h, --help           show this help\n"

const char ctl_usage_put[] =
	"Usage: fluxonctl put [OPTIONS] KEY [FILE|-]\n"
	"       fluxonctl put [OPTIONS] --value STRING KEY\n"
	"\n"
	"Store a value under KEY.  The value is FILE, standard input (no FILE\n"
	"or '-') or STRING.\n"
	"\n"
	"  -V, --value STRING   the value is STRING\n"
	"  -v, --verbose        print the put_id the daemon assigned\n"
	CTL_USAGE_KEY
	"\n"
	"Exit status: 0 stored, 1 error, 2 usage, 4 module or daemon absent.\n";

const char ctl_usage_get[] =
	"Usage: fluxonctl get [OPTIONS] KEY\n"
	"\n"
	"Write the value of KEY to standard output (or FILE), straight from\n"
	"the read-only segment mapping.\n"
	"\n"
	"  -o, --output FILE    write the value to FILE instead\n"
	"  -i, --info           print key, len, put_id, source and holder on\n"
	"                       stdout instead of the value\n"
	"  -j, --json           --info as one JSON object\n"
	CTL_USAGE_KEY
	"\n"
	"Exit status: 0 found, 1 error, 2 usage, 3 not found,\n"
	"4 module or daemon absent.\n";

const char ctl_usage_delete[] =
	"Usage: fluxonctl delete [OPTIONS] KEY\n"
	"\n"
	"Remove KEY.  Values pinned by holders stay readable until released.\n"
	"\n"
	CTL_USAGE_KEY
	"\n"
	"Exit status: 0 deleted, 1 error, 2 usage, 3 not found,\n"
	"4 module or daemon absent.\n";

const char ctl_usage_clear[] =
	"Usage: fluxonctl clear [--tenant NAME] [--regex RE] [--json]\n"
	"\n"
	"Remove every key of a tenant, or with --regex every key of it the POSIX\n"
	"extended regular expression RE matches anywhere in it (Mooncake's\n"
	"remove_all / remove_by_regex).  Without --tenant: the default tenant's\n"
	"keys (those of no tenant); --tenant NAME: that tenant's only, RE seeing\n"
	"its keys as the tenant wrote them.  A tenant's keys may be cleared by\n"
	"root and by the tenant's uids and gids (the configuration's tenants).  The local fluxond's master does it\n"
	"(control socket " FKV_CONTROL_PATH "; $FLUXOND_CONTROL overrides), on\n"
	"every node of a cluster: each key goes as a delete does, with its\n"
	"replicas and SSD copies.  Values pinned by holders stay readable until\n"
	"released.  Run it on the master's host.\n"
	"\n"
	"      --tenant NAME    that tenant's keys (default: the default tenant)\n"
	"      --regex RE       only the keys RE matches (keys with NUL bytes\n"
	"                       never match)\n"
	"  -j, --json           {\"removed\": N}\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 done (N removed), 1 error (a bad RE, an unknown tenant,\n"
	"not allowed, or this fluxond is not the master), 2 usage, 4 no fluxond\n"
	"running here.\n";

const char ctl_usage_tenants[] =
	"Usage: fluxonctl tenants [--json | --prometheus] [NAME]\n"
	"\n"
	"The per-tenant statistics of the local fluxond's master (control socket\n"
	FKV_CONTROL_PATH "; $FLUXOND_CONTROL overrides): every tenant of the\n"
	"configuration with keys or counts, \"default\" (tenant 0, the keys of no\n"
	"tenant) and \"tenant-<id>\" for ids found in keys but not configured; or\n"
	"only the tenant NAME.  keys, dram_bytes (the eviction weights of the\n"
	"tenant's DRAM replicas on every node), ssd_bytes and the quotas are\n"
	"gauges; puts, gets, mem_hits, ssd_hits, remote_hits and misses count\n"
	"what reached the master (gets a module answers from its own index, the\n"
	"single node default, are not seen); quota_evictions and quota_ssd_drops\n"
	"count the DRAM replicas evicted and the SSD copies unrouted because the\n"
	"tenant was past its quota.\n"
	"\n"
	"  -j, --json           {\"tenants\": [{\"name\", \"id\", STAT: N...}]}\n"
	"  -p, --prometheus     fluxonkv_tenant_STAT{tenant=\"NAME\",id=\"ID\"}\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 ok, 1 error (no such tenant, or this fluxond runs no\n"
	"master), 2 usage, 4 no fluxond running here.\n";

const char ctl_usage_status[] =
	"Usage: fluxonctl status [--json]\n"
	"\n"
	"Show whether the module is loaded, its version, the daemon, segment\n"
	"and SSD tier use (\"none\" without an SSD tier), replicas and holders\n"
	"(sysfs), and whether the generic netlink family answers.\n"
	"\n"
	"  -j, --json           one JSON object\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 ok, 1 netlink query failed (sysfs still shown),\n"
	"2 usage, 4 module not loaded.\n";

const char ctl_usage_stats[] =
	"Usage: fluxonctl stats [--json | --prometheus]\n"
	"\n"
	"Print every value in /sys/kernel/fluxonkv/ ($FLUXONKV_SYSFS overrides),\n"
	"then the latency of each operation (put, get_memory, get_ssd, get_miss,\n"
	"delete) from the module's histograms in /sys/kernel/debug/fluxonkv/latency\n"
	"($FLUXONKV_DEBUGFS overrides the directory): count, mean, p50, p95, p99.\n"
	"The buckets are powers of two, so a percentile is the UPPER BOUND of the\n"
	"bucket it falls in: the true value lies between half of it and it.\n"
	"\">17.18 s\" means past the last bound.  debugfs is readable by root\n"
	"only: without it, stats say latency is unavailable (--json: null,\n"
	"--prometheus: left out) and still exit 0.\n"
	"\n"
	"  -j, --json           one JSON object; \"latency\" holds count, sum_ns,\n"
	"                       mean_ns, p50_ns, p95_ns, p99_ns per operation\n"
	"  -p, --prometheus     Prometheus text exposition format; latency as the\n"
	"                       histogram fluxonkv_op_latency_seconds{op=\"...\"}\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 ok, 1 error, 2 usage, 4 module not loaded.\n";

const char ctl_usage_cluster[] =
	"Usage: fluxonctl cluster [--json | --prometheus]\n"
	"\n"
	"Ask the local fluxond over its control socket (" FKV_CONTROL_PATH ";\n"
	"$FLUXOND_CONTROL overrides) for its view of the cluster: its role,\n"
	"node name, id and incarnation, the master's address; on the master\n"
	"every member with liveness, incarnation, data address, transport,\n"
	"DRAM capacity and use, SSD capacity, replicas and gets served to other\n"
	"nodes; and the counters of remote pulls, SSD pushes (chunks, bytes),\n"
	"revokes and member-left.  A single node says so.\n"
	"\n"
	"  -j, --json           one JSON object: role, stats, nodes[]\n"
	"  -p, --prometheus     Prometheus text: fluxond_* counters and\n"
	"                       fluxonkv_cluster_node_*{node=\"...\",id=\"...\"}\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 ok, 1 error, 2 usage, 4 no fluxond running here.\n";

const char ctl_usage_dump[] =
	"Usage: fluxonctl dump [--json] replicas|holders|pending|segment|rings|latency\n"
	"\n"
	"Print one of the module's debugfs dumps (/sys/kernel/debug/fluxonkv/,\n"
	"$FLUXONKV_DEBUGFS overrides) as an aligned table:\n"
	"  replicas             every DRAM replica: handle, put_id, offset, len,\n"
	"                       refs, indexed, key (first 64 bytes, as the module\n"
	"                       escapes it)\n"
	"  holders              every holder, with the pid that opened its session\n"
	"  pending              the registered daemon and the upcalls it has not\n"
	"                       answered yet\n"
	"  segment              size, used, pages, chunks of the DRAM segment\n"
	"Bytes outside printable ASCII are shown as \\xNN.  Needs root (debugfs).\n"
	"\n"
	"  -j, --json           one JSON object\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 ok, 1 error (permission, unreadable dump), 2 usage,\n"
	"4 module not loaded or debugfs not mounted.\n";

const char ctl_usage_top[] =
	"Usage: fluxonctl top [--interval SECONDS] [--iterations N]\n"
	"\n"
	"A live view of /sys/kernel/fluxonkv/: puts, gets, hits by tier, misses,\n"
	"deletes and evictions per second (from successive snapshots; the first\n"
	"frame has no rates yet), and used/capacity bars for the DRAM segment\n"
	"and, when the module reports one, the SSD tier.  On a terminal the\n"
	"screen is redrawn; otherwise one block is printed per interval.\n"
	"\n"
	"      --interval S     seconds between frames (default 1, 0.05..3600)\n"
	"  -n, --iterations N   stop after N frames (default: until interrupted)\n"
	"  -h, --help           show this help\n"
	"\n"
	"Exit status: 0 ok, 2 usage, 4 module not loaded (or unloaded meanwhile).\n";

int ctl_exit_code(int err)
{
	switch (err) {
	case 0:
		return CTL_EXIT_OK;
	case -ENOENT:
		return CTL_EXIT_MISS;
	case -ENODEV:
	case -ENXIO:
	case -ENOTCONN:
		return CTL_EXIT_ABSENT;
	default:
		return CTL_EXIT_ERROR;
	}
}

static int ctl_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int ctl_key_decode(const char *arg, bool hex, unsigned char *buf,
		   size_t *len)
{
	size_t n = strlen(arg), i;

	if (!n)
		return -EINVAL;
	if (!hex) {
		if (n > FLUXONKV_KEY_MAX)
			return -E2BIG;
		memcpy(buf, arg, n);
		*len = n;
		return 0;
	}
	if (n % 2)
		return -EINVAL;
	if (n / 2 > FLUXONKV_KEY_MAX)
		return -E2BIG;
	for (i = 0; i < n / 2; i++) {
		int hi = ctl_hexval(arg[2 * i]), lo = ctl_hexval(arg[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		buf[i] = hi << 4 | lo;
	}
	*len = n / 2;
	return 0;
}

enum {
	CTL_OPT_DEVICE = 'd',
	CTL_OPT_HELP = 'h',
	CTL_OPT_INFO = 'i',
	CTL_OPT_JSON = 'j',
	CTL_OPT_OUTPUT = 'o',
	CTL_OPT_PROMETHEUS = 'p',
	CTL_OPT_VERBOSE = 'v',
	CTL_OPT_VALUE = 'V',
	CTL_OPT_HEX = 'x',
	CTL_OPT_ITERATIONS = 'n',
	CTL_OPT_INTERVAL = 256,
	CTL_OPT_REGEX,
	CTL_OPT_TENANT,
};

#define CTL_LONG_KEY							\
	{ "hex", no_argument, NULL, CTL_OPT_HEX },			\
	{ "device", required_argument, NULL, CTL_OPT_DEVICE },		\
	{ "help", no_argument, NULL, CTL_OPT_HELP }

static __attribute__((format(printf, 3, 4)))
int ctl_usage_error(FILE *err, const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(err, "fluxonctl %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(err, fmt, ap);
	va_end(ap);
	fprintf(err, "\nTry 'fluxonctl %s --help'.\n", cmd);
	return -EINVAL;
}

static int ctl_parse_interval(const char *arg, double *v)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(x) ||
	    x < CTL_TOP_INTERVAL_MIN || x > CTL_TOP_INTERVAL_MAX)
		return -EINVAL;
	*v = x;
	return 0;
}

static int ctl_parse_count(const char *arg, unsigned long *v)
{
	unsigned long x;
	char *end;

	if (*arg < '0' || *arg > '9')
		return -EINVAL;
	errno = 0;
	x = strtoul(arg, &end, 10);
	if (errno || *end || !x)
		return -EINVAL;
	*v = x;
	return 0;
}

/*
 * Options of one command into @o.  Returns the index of the first operand
 * (getopt moves operands after the options), or -EINVAL.
 */
static int ctl_getopt(int argc, char **argv, const char *shortopts,
		      const struct option *longopts, struct ctl_opts *o,
		      FILE *err)
{
	const char *cmd = argv[0];
	int c;

	memset(o, 0, sizeof(*o));
	optind = 0;	/* glibc: full re-initialisation, parsers run often */
	opterr = 0;	/* our own messages, to @err */
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case CTL_OPT_HELP:
			o->help = true;
			break;
		case CTL_OPT_VERBOSE:
			o->verbose = true;
			break;
		case CTL_OPT_JSON:
			o->json = true;
			break;
		case CTL_OPT_PROMETHEUS:
			o->prometheus = true;
			break;
		case CTL_OPT_INFO:
			o->info = true;
			break;
		case CTL_OPT_HEX:
			o->hex = true;
			break;
		case CTL_OPT_DEVICE:
			o->device = optarg;
			break;
		case CTL_OPT_VALUE:
			o->value = optarg;
			break;
		case CTL_OPT_OUTPUT:
			o->output = optarg;
			break;
		case CTL_OPT_REGEX:
			o->regex = optarg;
			break;
		case CTL_OPT_TENANT:
			o->tenant = optarg;
			break;
		case CTL_OPT_INTERVAL:
			if (ctl_parse_interval(optarg, &o->interval))
				return ctl_usage_error(err, cmd,
						       "--interval wants seconds from %g to %g, not '%s'",
						       CTL_TOP_INTERVAL_MIN,
						       CTL_TOP_INTERVAL_MAX, optarg);
			break;
		case CTL_OPT_ITERATIONS:
			if (ctl_parse_count(optarg, &o->iterations))
				return ctl_usage_error(err, cmd,
						       "--iterations wants a count of at least 1, not '%s'",
						       optarg);
			break;
		case ':':
			return ctl_usage_error(err, cmd,
					       "option '%s' needs an argument",
					       argv[optind - 1]);
		default:
			if (optopt && optopt != '?')
				return ctl_usage_error(err, cmd,
						       "unknown option '-%c'",
						       optopt);
			return ctl_usage_error(err, cmd, "unknown option '%s'",
					       argv[optind - 1]);
		}
	}
	return optind;
}

/* The KEY operand at argv[*i], decoded; advances *i. */
static int ctl_take_key(int argc, char **argv, int *i, struct ctl_opts *o,
			FILE *err)
{
	bool hex = o->hex;
	int ret;

	if (*i >= argc)
		return ctl_usage_error(err, argv[0], "missing KEY");
	o->key_arg = argv[(*i)++];
	ret = ctl_key_decode(o->key_arg, hex, o->key, &o->key_len);
	if (ret == -E2BIG)
		return ctl_usage_error(err, argv[0],
				       "KEY is longer than %d bytes",
				       FLUXONKV_KEY_MAX);
	if (ret && !*o->key_arg)
		return ctl_usage_error(err, argv[0], "KEY is empty");
	if (ret)
		return ctl_usage_error(err, argv[0],
				       "KEY is not pairs of hex digits");
	return 0;
}

static int ctl_no_more(int argc, char **argv, int i, FILE *err)
{
	if (i < argc)
		return ctl_usage_error(err, argv[0], "unexpected argument '%s'",
				       argv[i]);
	return 0;
}

int ctl_parse_put(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	static const struct option longopts[] = {
		{ "value", required_argument, NULL, CTL_OPT_VALUE },
		{ "verbose", no_argument, NULL, CTL_OPT_VERBOSE },
		CTL_LONG_KEY,
		{ 0 }
	};
	int i, ret;

	i = ctl_getopt(argc, argv, ":V:vxd:h", longopts, o, err);
	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	ret = ctl_take_key(argc, argv, &i, o, err);
	if (ret)
		return ret;
	if (i < argc) {
		if (o->value)
			return ctl_usage_error(err, argv[0],
					       "give FILE or --value, not both");
		o->input = argv[i++];
	}
	if (o->value && !*o->value)
		return ctl_usage_error(err, argv[0], "the value is empty");
	return ctl_no_more(argc, argv, i, err);
}

/* get: --json implies --info, which prints no value. */
static int ctl_get_info_check(const char *cmd, struct ctl_opts *o, FILE *err)
{
	if (o->json)
		o->info = true;
	if (o->info && o->output)
		return ctl_usage_error(err, cmd,
				       "--info prints no value: drop --output");
	return 0;
}

/* stats, cluster: one format at a time. */
static int ctl_one_format_check(const char *cmd, const struct ctl_opts *o,
				FILE *err)
{
	if (o->json && o->prometheus)
		return ctl_usage_error(err, cmd,
				       "give --json or --prometheus, not both");
	return 0;
}

int ctl_parse_get(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, CTL_OPT_OUTPUT },
		{ "info", no_argument, NULL, CTL_OPT_INFO },
		{ "json", no_argument, NULL, CTL_OPT_JSON },
		CTL_LONG_KEY,
		{ 0 }
	};
	int i, ret;

	i = ctl_getopt(argc, argv, ":o:ijxd:h", longopts, o, err);
	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	ret = ctl_take_key(argc, argv, &i, o, err);
	if (ret)
		return ret;
	ret = ctl_get_info_check(argv[0], o, err);
	if (ret)
		return ret;
	return ctl_no_more(argc, argv, i, err);
}

int ctl_parse_delete(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	static const struct option longopts[] = {
		CTL_LONG_KEY,
		{ 0 }
	};
	int i, ret;

	i = ctl_getopt(argc, argv, ":xd:h", longopts, o, err);
	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	ret = ctl_take_key(argc, argv, &i, o, err);
	if (ret)
		return ret;
	return ctl_no_more(argc, argv, i, err);
}

int ctl_parse_clear(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	static const struct option longopts[] = {
		{ "regex", required_argument, NULL, CTL_OPT_REGEX },
		{ "tenant", required_argument, NULL, CTL_OPT_TENANT },
		{ "json", no_argument, NULL, CTL_OPT_JSON },
		{ "help", no_argument, NULL, CTL_OPT_HELP },
		{ 0 }
	};
	int i;

	i = ctl_getopt(argc, argv, ":jh", longopts, o, err);
	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	if (o->regex && !o->regex[0])
		return ctl_usage_error(err, argv[0],
				       "--regex wants a pattern (without it every key goes)");
	if (o->tenant && !o->tenant[0])
		return ctl_usage_error(err, argv[0],
				       "--tenant wants a tenant name (see fluxonctl tenants)");
	return ctl_no_more(argc, argv, i, err);
}

int ctl_parse_status(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, CTL_OPT_JSON },
		{ "help", no_argument, NULL, CTL_OPT_HELP },
		{ 0 }
	};
	int i;

	i = ctl_getopt(argc, argv, ":jh", longopts, o, err);
	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	return ctl_no_more(argc, argv, i, err);
}

/*
 * --json, --prometheus (one of them) and --help: the index of the first
 * operand, or -errno; with --help, 0 and o->help set.
 */
static int ctl_parse_formats(int argc, char **argv, struct ctl_opts *o,
			     FILE *err)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, CTL_OPT_JSON },
		{ "prometheus", no_argument, NULL, CTL_OPT_PROMETHEUS },
		{ "help", no_argument, NULL, CTL_OPT_HELP },
		{ 0 }
	};
	int i;

	i = ctl_getopt(argc, argv, ":jph", longopts, o, err);
	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	if (ctl_one_format_check(argv[0], o, err))
		return -EINVAL;
	return i;
}

int ctl_parse_stats(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	int i = ctl_parse_formats(argc, argv, o, err);

	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	return ctl_no_more(argc, argv, i, err);
}

int ctl_parse_tenants(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	int i = ctl_parse_formats(argc, argv, o, err);

	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	if (i < argc) {
		o->tenant = argv[i++];
		if (!o->tenant[0])
			return ctl_usage_error(err, argv[0],
					       "NAME is empty");
	}
	return ctl_no_more(argc, argv, i, err);
}

int ctl_parse_dump(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, CTL_OPT_JSON },
		{ "help", no_argument, NULL, CTL_OPT_HELP },
		{ 0 }
	};
	int i;

	i = ctl_getopt(argc, argv, ":jh", longopts, o, err);
	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	if (i >= argc)
		return ctl_usage_error(err, argv[0],
				       "missing WHAT (replicas, holders, pending, segment, rings, latency)");
	o->what = argv[i++];
	if (!ctl_dump_file_find(o->what))
		return ctl_usage_error(err, argv[0],
				       "unknown dump '%s' (replicas, holders, pending, segment, rings, latency)",
				       o->what);
	return ctl_no_more(argc, argv, i, err);
}

int ctl_parse_top(int argc, char **argv, struct ctl_opts *o, FILE *err)
{
	static const struct option longopts[] = {
		{ "interval", required_argument, NULL, CTL_OPT_INTERVAL },
		{ "iterations", required_argument, NULL, CTL_OPT_ITERATIONS },
		{ "help", no_argument, NULL, CTL_OPT_HELP },
		{ 0 }
	};
	int i;

	i = ctl_getopt(argc, argv, ":n:h", longopts, o, err);
	if (i < 0 || o->help)
		return i < 0 ? i : 0;
	if (!o->interval)
		o->interval = CTL_TOP_INTERVAL_DEFAULT;
	return ctl_no_more(argc, argv, i, err);
}

int ctl_global_json(const char *cmd, struct ctl_opts *o, FILE *err)
{
	o->json = true;
	if (!strcmp(cmd, "get"))
		return ctl_get_info_check(cmd, o, err);
	if (!strcmp(cmd, "stats") || !strcmp(cmd, "cluster") ||
	    !strcmp(cmd, "tenants"))
		return ctl_one_format_check(cmd, o, err);
	if (!strcmp(cmd, "status") || !strcmp(cmd, "dump") ||
	    !strcmp(cmd, "config") || !strcmp(cmd, "clear"))
		return 0;
	return ctl_usage_error(err, cmd, "-j/--json: %s has no JSON output", cmd);
}
