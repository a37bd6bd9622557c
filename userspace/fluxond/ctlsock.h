/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctlsock.h - fluxond's local control socket: a UNIX stream socket that
 * answers one request per connection in the wire codec (cluster_msg.h:
 * FKV_CCMD_STATS for fluxonctl, FKV_CCMD_CLEAR for the Mooncake adapter's
 * remove_all / remove_by_regex).  Non-blocking, driven by the poll loop.
 * Readable by root and the device's group (the socket file's mode 0660).
 */
#ifndef FLUXOND_CTLSOCK_H
#define FLUXOND_CTLSOCK_H

#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

struct nl_msg;

/* Fill the answer to STATS; 0 or -errno. */
typedef int (*fkv_ctlsock_stats_fn)(void *arg, struct nl_msg *msg);

/*
 * Remove every key (@pattern NULL) or those @pattern matches: 0 and
 * *@removed, or -errno.
 */
typedef int (*fkv_ctlsock_clear_fn)(void *arg, const char *pattern,
				    uint64_t *removed);

struct fkv_ctlsock;

/*
 * Listen at @path (its directory is created if missing; a stale socket
 * file is replaced, a live one is -EADDRINUSE), group @gid.
 */
int fkv_ctlsock_open(struct fkv_ctlsock **out, const char *path, gid_t gid,
		     fkv_ctlsock_stats_fn fn, void *arg);
void fkv_ctlsock_close(struct fkv_ctlsock *c);
/* Answer CLEAR with @fn (without it: -EOPNOTSUPP). */
void fkv_ctlsock_set_clear(struct fkv_ctlsock *c, fkv_ctlsock_clear_fn fn,
			   void *arg);
int fkv_ctlsock_pollfds(struct fkv_ctlsock *c, struct pollfd *pfd, int max);
void fkv_ctlsock_handle(struct fkv_ctlsock *c, const struct pollfd *pfd,
			int n);

/* Helpers for the answer: one STAT {NAME, VALUE}. */
int fkv_ctl_put_stat(struct nl_msg *msg, const char *name, uint64_t value);
/* The master's counters and gauges as STATs ("master_*"). */
struct fkv_master;
int fkv_ctl_put_master(struct nl_msg *msg, const struct fkv_master *m);

#endif /* FLUXOND_CTLSOCK_H */
