/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fluxonctl private: the commands main.c dispatches to.  Each returns an
 * exit status (enum ctl_exit) and prints its own diagnostics.
 */
#ifndef FLUXONKV_FLUXONCTL_CTL_H
#define FLUXONKV_FLUXONCTL_CTL_H

#include "ctl_args.h"

int ctl_cmd_put(const struct ctl_opts *o);
int ctl_cmd_get(const struct ctl_opts *o);
int ctl_cmd_delete(const struct ctl_opts *o);
int ctl_cmd_status(const struct ctl_opts *o);
int ctl_cmd_stats(const struct ctl_opts *o);
int ctl_cmd_cluster(const struct ctl_opts *o);
int ctl_cmd_clear(const struct ctl_opts *o);
int ctl_cmd_tenants(const struct ctl_opts *o);
int ctl_cmd_dump(const struct ctl_opts *o);
int ctl_cmd_top(const struct ctl_opts *o);

/* config check FILE (cmd_config.c parses its own sub-command; FILE: input) */
int ctl_parse_config(int argc, char **argv, struct ctl_opts *o, FILE *err);
int ctl_cmd_config(const struct ctl_opts *o);
extern const char ctl_usage_config[];

#endif /* FLUXONKV_FLUXONCTL_CTL_H */
