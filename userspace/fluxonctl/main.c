// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl: the operator's command line for fluxonkv.  This file only
 * dispatches: options are parsed in ctl_args.c, each command lives in
 * cmd_*.c, output formats in ctl_format.c.
 */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

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

static int ctl_help(int argc, char **argv)
{
	const struct ctl_command *cmd;

	if (argc < 3) {
		fputs(ctl_usage_main, stdout);
		return CTL_EXIT_OK;
	}
	cmd = ctl_command_find(argv[2]);
	if (!cmd) {
		fprintf(stderr, "fluxonctl: unknown command '%s'\n", argv[2]);
		return CTL_EXIT_USAGE;
	}
	fputs(cmd->usage, stdout);
	return CTL_EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct ctl_command *cmd;
	struct ctl_opts o;

	if (argc < 2) {
		fputs(ctl_usage_main, stderr);
		return CTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "--help"))
		return ctl_help(argc, argv);
	if (!strcmp(argv[1], "--version")) {
		printf("fluxonctl (fluxonkv ABI %d)\n", FLUXONKV_ABI_VERSION);
		return CTL_EXIT_OK;
	}

	cmd = ctl_command_find(argv[1]);
	if (!cmd) {
		fprintf(stderr, "fluxonctl: unknown command '%s'\n"
			"Try 'fluxonctl --help'.\n", argv[1]);
		return CTL_EXIT_USAGE;
	}
	if (cmd->parse(argc - 1, argv + 1, &o, stderr))
		return CTL_EXIT_USAGE;
	if (o.help) {
		fputs(cmd->usage, stdout);
		return CTL_EXIT_OK;
	}
	return cmd->run(&o);
}
