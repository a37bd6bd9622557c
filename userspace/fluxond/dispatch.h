/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dispatch.h - route a decoded upcall to the master and fill its reply.
 */
#ifndef FLUXOND_DISPATCH_H
#define FLUXOND_DISPATCH_H

#include <stdbool.h>

#include "master.h"
#include "upcall.h"

/* True for the upcalls the module waits an answer for. */
bool fkv_upcall_wants_reply(uint8_t cmd);

/*
 * Attributes an upcall must carry (FKV_ATTR bits); 0 for a command that is
 * not an upcall.
 */
uint32_t fkv_upcall_required(uint8_t cmd);

/* Human name of a command, for logs. */
const char *fkv_cmd_name(uint8_t cmd);

/*
 * Run @u against @m.  Returns true if @r must be sent back (the upcall wants
 * a reply); @r->status carries the result.  Checks the required attributes
 * itself (-EINVAL when one is missing).
 */
bool fkv_dispatch(struct fkv_master *m, const struct fkv_upcall *u,
		  struct fkv_reply *r);

/*
 * Warm restart: adopt into @m, for its current caller node, what the
 * local module kept from a previous daemon (FLUXONKV_CMD_DUMP), and log a
 * summary; then ADOPT_DONE on @nl, the registered daemon's socket: the
 * refused ones are dropped by then, the rest are local hits again.  0 or
 * -errno (the dump failed: the kept replicas stay unknown, and are evicted
 * by nobody until the module drops them).
 */
struct fkv_nl;
int fkv_adopt_kept(struct fkv_master *m, struct fkv_nl *nl, const char *what);

#endif /* FLUXOND_DISPATCH_H */
