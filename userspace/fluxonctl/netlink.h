/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fluxonctl's generic netlink side: the unprivileged questions fluxonctl
 * asks the "fluxonkv" family.
 */
#ifndef FLUXONKV_FLUXONCTL_NETLINK_H
#define FLUXONKV_FLUXONCTL_NETLINK_H

#include "ctl_format.h"

/* Receive timeout for every answer, so fluxonctl never hangs. */
#define CTL_GENL_TIMEOUT_MS	2000

/*
 * FLUXONKV_CMD_GET_VERSION.  Fills @out (out->err and out->error say what
 * failed) and returns out->err: 0 or a negative errno.
 */
int ctl_genl_get_version(struct ctl_genl_version *out);

#endif /* FLUXONKV_FLUXONCTL_NETLINK_H */
