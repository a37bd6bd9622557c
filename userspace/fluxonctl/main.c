// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl: the operator's command line for fluxonkv.  This file only
 * dispatches: the global options (--help, --version, -j/--json) come
 * before the command, the command's own are parsed in ctl_args.c, each
 * command lives in cmd_*.c, output formats in ctl_format.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

#ifndef FLUXONKV_RELEASE
#error "FLUXONKV_RELEASE (the release, from kmod/fluxonkv.h) comes from the Makefile"
#endif

struct ctl_command {
	const char *name;
	ctl_parse_fn parse;
	int (*run)(const struct ctl_opts *o);
	const char *usage;
};

static const struct ctl_command ctl_commands[] = {
	{ "put", ctl_parse_put, ctl_cmd_put, ctl_usage_put },
	{ "get", ctl_parse_get, ctl_cmd_get, ctl_usage_get },
	{ "delete", ctl_parse_delete, ctl_cmd_delete, ctl_usage_delete },
	{ "status", ctl_parse_status, ctl_cmd_status, ctl_usage_status },
	{ "stats", ctl_parse_stats, ctl_cmd_stats, ctl_usage_stats },
	{ "dump", ctl_parse_dump, ctl_cmd_dump, ctl_usage_dump },
	{ "top", ctl_parse_top, ctl_cmd_top, ctl_usage_top },
	{ "cluster", ctl_parse_stats, ctl_cmd_cluster, ctl_usage_cluster },
	{ "clear", ctl_parse_clear, ctl_cmd_clear, ctl_usage_clear },
	{ "tenants", ctl_parse_tenants, ctl_cmd_tenants, ctl_usage_tenants },
	{ "config", ctl_parse_config, ctl_cmd_config, ctl_usage_config },
};

static const struct ctl_command *ctl_command_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(ctl_commands) / sizeof(ctl_commands[0]); i++)
		if (!strcmp(ctl_commands[i].name, name))
			return &ctl_commands[i];
	return NULL;
}

/* help [COMMAND]: the main usage, or @topic's. */
static int ctl_help(const char *topic)
{
	const struct ctl_command *cmd;

	if (!topic) {
		fputs(ctl_usage_main, stdout);
		return CTL_EXIT_OK;
	}
	cmd = ctl_command_find(topic);
	if (!cmd) {
		fprintf(stderr, "fluxonctl: unknown command '%s'\n", topic);
		return CTL_EXIT_USAGE;
	}
	fputs(cmd->usage, stdout);
	return CTL_EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct ctl_command *cmd;
	struct ctl_opts o;
	bool json = false;
	int i;

	/* global options, before the command */
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			return ctl_help(i + 1 < argc ? argv[i + 1] : NULL);
		} else if (!strcmp(argv[i], "--version")) {
			printf("fluxonctl %s (fluxonkv ABI %d)\n",
			       FLUXONKV_RELEASE, FLUXONKV_ABI_VERSION);
			return CTL_EXIT_OK;
		} else {
			fprintf(stderr, "fluxonctl: unknown option '%s'\n"
				"Try 'fluxonctl --help'.\n", argv[i]);
			return CTL_EXIT_USAGE;
		}
	}
	if (i >= argc) {
		fputs(ctl_usage_main, stderr);
		return CTL_EXIT_USAGE;
	}
	if (!strcmp(argv[i], "help"))
		return ctl_help(i + 1 < argc ? argv[i + 1] : NULL);

	cmd = ctl_command_find(argv[i]);
	if (!cmd) {
		fprintf(stderr, "fluxonctl: unknown command '%s'\n"
			"Try 'fluxonctl --help'.\n", argv[i]);
		return CTL_EXIT_USAGE;
	}
	if (cmd->parse(argc - i, argv + i, &o, stderr))
		return CTL_EXIT_USAGE;
	if (o.help) {
		fputs(cmd->usage, stdout);
		return CTL_EXIT_OK;
	}
	if (json && ctl_global_json(cmd->name, &o, stderr))
		return CTL_EXIT_USAGE;
	return cmd->run(&o);
}
