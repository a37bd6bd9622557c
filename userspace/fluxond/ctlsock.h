/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctlsock.h - fluxond's local control socket: a UNIX stream socket that
 * answers one request per connection in the wire codec (cluster_msg.h:
 * FKV_CCMD_STATS for fluxonctl, FKV_CCMD_CLEAR for the Mooncake adapter's
 * remove_all / remove_by_regex, FKV_CCMD_TENANT for fkv_open_tenant()).
 * The asker's credentials (SO_PEERCRED, and its supplementary groups read
 * from /proc/<pid>/status at accept) decide which tenant it may CLEAR.  Non-blocking, driven by the poll loop.
 * Readable by root and the device's group (the socket file's mode 0660).
 */
#ifndef FLUXOND_CTLSOCK_H
#define FLUXOND_CTLSOCK_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct nl_msg;

/* Fill the answer to STATS; 0 or -errno. */
typedef int (*fkv_ctlsock_stats_fn)(void *arg, struct nl_msg *msg);

/*
 * Remove every key of @tenant (@pattern NULL) or those @pattern matches
 * (fkv_master_remove_matching()): 0 and *@removed, or -errno.
 */
typedef int (*fkv_ctlsock_clear_fn)(void *arg, uint32_t tenant,
				    const char *pattern, uint64_t *removed);

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
/*
 * The configured tenants (@n of @t, which must outlive @c): TENANT
 * resolves their names, CLEAR checks who may clear which.
 */
struct fkv_tenant_config;
void fkv_ctlsock_set_tenants(struct fkv_ctlsock *c,
			     const struct fkv_tenant_config *t, size_t n);
/*
 * May a peer with @uid, @gid and supplementary @groups (@ngroups) clear
 * tenant @tenant's keys?  0: root (uid 0) always, anyone for tenant 0 (the
 * socket's mode decides), a tenant's listed uid or gid; -EPERM otherwise;
 * -ENOENT for an id no tenant of @t has (root may still clear what is
 * left of a tenant removed from the configuration); -EINVAL past
 * FLUXONKV_TENANT_ID_MAX.
 */
int fkv_ctl_tenant_permitted(const struct fkv_tenant_config *t, size_t n,
			     uint32_t tenant, uint32_t uid, uint32_t gid,
			     const uint32_t *groups, size_t ngroups);
int fkv_ctlsock_pollfds(struct fkv_ctlsock *c, struct pollfd *pfd, int max);
void fkv_ctlsock_handle(struct fkv_ctlsock *c, const struct pollfd *pfd,
			int n);

/* Helpers for the answer: one STAT {NAME, VALUE}. */
int fkv_ctl_put_stat(struct nl_msg *msg, const char *name, uint64_t value);
/* The master's counters and gauges as STATs ("master_*"). */
struct fkv_master;
int fkv_ctl_put_master(struct nl_msg *msg, const struct fkv_master *m);

/*
 * The master's per-tenant statistics (fkv_master_tenant_stats()) as one
 * TENANT {TENANT_NAME, TENANT_ID, STAT...} nest each: the name from @t
 * (@n), "default" for tenant 0, "tenant-<id>" for an id no tenant of @t
 * has (keys left by a tenant since removed from the configuration).
 * STATs: puts, gets, mem_hits, ssd_hits, remote_hits, misses (counters),
 * quota_evictions, quota_ssd_drops (counters: what the quotas took),
 * keys, dram_bytes, ssd_bytes (gauges), and the configured quotas
 * dram_quota_bytes / ssd_quota_bytes when set.  0 or -errno.
 */
int fkv_ctl_put_tenants(struct nl_msg *msg, const struct fkv_master *m,
			const struct fkv_tenant_config *t, size_t n);

#endif /* FLUXOND_CTLSOCK_H */
