/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctl_cluster - fluxonctl cluster: ask fluxond over its control socket
 * (cluster_msg.h FKV_CCMD_STATS) and render its view of the cluster as
 * text, JSON or Prometheus series labelled by node.
 */
#ifndef FLUXONKV_CTL_CLUSTER_H
#define FLUXONKV_CTL_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../common/cluster_msg.h"

#define CTL_CLUSTER_STATS	128
#define CTL_CLUSTER_NODE_STATS	16
/* The environment variable that overrides FKV_CONTROL_PATH. */
#define CTL_CONTROL_ENV		"FLUXOND_CONTROL"

struct ctl_cstat {
	char name[48];
	uint64_t value;
};

struct ctl_cnode {
	uint32_t id;
	char name[FKV_NODE_NAME_MAX + 1];
	bool live;
	uint64_t incarnation;
	char addr[FKV_ADDR_MAX];
	char transport[8];
	uint64_t segment_size, segment_used, ssd_capacity;
	char left_reason[48];	/* "" if it never left */
	struct ctl_cstat st[CTL_CLUSTER_NODE_STATS];
	unsigned int nst;
};

/* A master candidate etcd lists (issue 32). */
#define CTL_CLUSTER_CANDS	16
struct ctl_ccand {
	char name[FKV_NODE_NAME_MAX + 1];
	char addr[FKV_ADDR_MAX];
};

/* A tenant of the master's STATS (issue 30). */
#define CTL_TENANTS_MAX		512	/* more are dropped */
#define CTL_TENANT_STATS	16
#define CTL_TENANT_NAME_MAX	63
struct ctl_ctenant {
	uint32_t id;
	char name[CTL_TENANT_NAME_MAX + 1];
	struct ctl_cstat st[CTL_TENANT_STATS];
	unsigned int nst;
};

struct ctl_cluster {
	char role[16];		/* single | master | node */
	char name[FKV_NODE_NAME_MAX + 1];
	uint32_t id;
	uint64_t incarnation;
	char master[FKV_ADDR_MAX];
	char transport[8];
	struct ctl_cstat st[CTL_CLUSTER_STATS];
	unsigned int nst;
	struct ctl_cnode nodes[FKV_MEMBERS_MAX_CTL];
	unsigned int nnodes;
	struct ctl_ccand cands[CTL_CLUSTER_CANDS];	/* etcd's */
	unsigned int ncands;
	struct ctl_ctenant tenants[CTL_TENANTS_MAX];	/* the master's */
	unsigned int ntenants;
};

struct nlmsghdr;

/* Decode a STATS answer; 0 or -EPROTO. */
int ctl_cluster_decode(struct nlmsghdr *nlh, struct ctl_cluster *c);
/*
 * Ask the daemon at @path (NULL: $FLUXOND_CONTROL, else FKV_CONTROL_PATH),
 * waiting at most @timeout_ms.  0, -ENOENT / -ECONNREFUSED (no daemon
 * there), -ETIMEDOUT, -EPROTO.
 */
int ctl_cluster_query(const char *path, int timeout_ms, struct ctl_cluster *c);
/*
 * CLEAR over the control socket: remove every key of tenant @tenant (0:
 * the keys of no tenant; TENANT_ID is sent only when not 0), or those the
 * POSIX ERE @pattern matches; *@removed on 0.  -EINVAL (a bad pattern),
 * -EPERM (not this tenant's), -ENOENT (no such tenant id), -EOPNOTSUPP
 * (that daemon runs no master), or as ctl_cluster_query; @why gets the
 * daemon's reason when it gave one.
 */
int ctl_clear(const char *path, int timeout_ms, uint32_t tenant,
	      const char *pattern, uint64_t *removed, char *why,
	      size_t why_len);
/*
 * TENANT over the control socket: the id of the tenant @name ("default":
 * 0).  0 and *@id; -ESRCH when the daemon has no such tenant (-ENOENT
 * stays "no daemon there"), or as ctl_cluster_query; @why as ctl_clear.
 */
/*
 * Send @msg (freed) to the control socket at @path (NULL: the default),
 * hand the first answer to @decode; at most @timeout_ms in all.
 */
struct nl_msg;
struct nlmsghdr;
int ctl_control_call(const char *path, int timeout_ms, struct nl_msg *msg,
		     int (*decode)(struct nlmsghdr *nlh, void *arg), void *arg);
int ctl_tenant_id(const char *path, int timeout_ms, const char *name,
		  uint32_t *id, char *why, size_t why_len);
/* A statistic by name, or NULL. */
const struct ctl_cstat *ctl_cluster_stat(const struct ctl_cstat *st,
					 unsigned int n, const char *name);

void ctl_render_cluster_human(FILE *f, const struct ctl_cluster *c);
void ctl_render_cluster_json(FILE *f, const struct ctl_cluster *c);
void ctl_render_cluster_prometheus(FILE *f, const struct ctl_cluster *c);

/* The tenant named @name of @c, or NULL. */
const struct ctl_ctenant *ctl_cluster_tenant(const struct ctl_cluster *c,
					     const char *name);
/*
 * fluxonctl tenants: the master's per-tenant statistics, every tenant or
 * only @only (NULL: all).  Human: one line per tenant; JSON: {"tenants":
 * [{"name", "id", "<stat>": N...}]}; Prometheus: one family per
 * statistic, fluxonkv_tenant_<stat>[_total]{tenant="NAME",id="ID"}.
 */
void ctl_render_tenants_human(FILE *f, const struct ctl_cluster *c,
			      const char *only);
void ctl_render_tenants_json(FILE *f, const struct ctl_cluster *c,
			     const char *only);
void ctl_render_tenants_prometheus(FILE *f, const struct ctl_cluster *c,
				   const char *only);

#endif /* FLUXONKV_CTL_CLUSTER_H */
