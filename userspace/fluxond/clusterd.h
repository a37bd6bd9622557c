/* SPDX-License-Identifier: GPL-2.0 */
/*
 * clusterd.h - fluxond's cluster runtime: routes the module's upcalls to
 * the master (in process on the master node, over the control connection
 * on the others), relays the master's DROP_REPLICA to the owner node, and
 * runs the data plane: a GET_START answered with another node's DRAM copy
 * becomes a FETCH token, and the FETCH a pull into the target
 * (xport.h) straight through this daemon's writable mapping of its
 * segment.  Serving side: peers' pulls pin replicas with
 * FLUXONKV_IOC_HOLD.  Documentation/fluxonkv/cluster.md.
 */
#ifndef FLUXOND_CLUSTERD_H
#define FLUXOND_CLUSTERD_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "fluxonkv_config.h"
#include "master.h"
#include "nl.h"
#include "upcall.h"

struct nl_msg;
struct fkv_fences;

struct fkv_clusterd_config {
	const struct fkv_cluster_config *cc;	/* must outlive the runtime */
	/* tenants: loaded into the module after each DAEMON_REGISTER */
	const struct fkv_tenant_config *tenants;	/* must outlive it too */
	size_t ntenants;
	struct fkv_nl *nl;			/* opened, not registered */
	const char *device;			/* NULL: /dev/fluxonkv */
	const char *policy;
	unsigned int high_pct, low_pct;
	bool put_via_master;			/* PUT_START + PUT_DONE */
	bool no_clean_drops;			/* no REGISTER_F_CLEAN_DROPS */
	/*
	 * cluster.etcd (failover.h): the master's term agreed with etcd --
	 * term_floor reads etcd's before the local term is taken above it,
	 * term_commit writes it back, guarded by the leadership -- and the
	 * election's stats.  NULL: no etcd.
	 */
	void *election;
	int (*term_floor)(void *election, uint64_t *etcd_term);
	int (*term_commit)(void *election, uint64_t term);
	int (*put_stats)(void *election, struct nl_msg *msg);
	/*
	 * Fences kept in etcd too (for a leader on another host): merged
	 * into the loaded ones at start, raised there after the local file.
	 */
	int (*fences_merge)(void *election, struct fkv_fences *f);
	int (*fence_raise)(void *election, const char *name, uint64_t put_id);
	/* ... and lifted there after the local file (a rejoin judged) */
	int (*fence_lift)(void *election, const char *name, uint64_t put_id);
	/*
	 * Master: may it still write to its nodes (its etcd hold runs)?
	 * Checked before every write (cluster_ctl.h, may_send).
	 */
	bool (*may_send)(void *election);
};

struct fkv_clusterd;

/*
 * Open the device (privileged, writable mapping), start the data plane
 * listener and the control plane; on the master node register with the
 * module now, on the others once joined.  0 or -errno (logged).
 */
int fkv_clusterd_start(struct fkv_clusterd **out,
		       const struct fkv_clusterd_config *c);
void fkv_clusterd_stop(struct fkv_clusterd *cd);
/* The nl upcall callback (fkv_nl_upcall_fn) in cluster mode. */
bool fkv_clusterd_upcall(void *arg, const struct fkv_upcall *u,
			 struct fkv_reply *r);
int fkv_clusterd_pollfds(struct fkv_clusterd *cd, struct pollfd *pfd,
			 int max);
/* 0 or a fatal -errno. */
int fkv_clusterd_handle(struct fkv_clusterd *cd, const struct pollfd *pfd,
			int n);
/* About every 100 ms. */
void fkv_clusterd_tick(struct fkv_clusterd *cd);
/* The master (master role) or NULL. */
struct fkv_master *fkv_clusterd_master(struct fkv_clusterd *cd);
/*
 * Cancel the data plane's pulls and wait for them (call before any
 * unregistration: the module frees FETCH targets then).
 */
void fkv_clusterd_quiesce(struct fkv_clusterd *cd);
/* Registered with the module right now. */
bool fkv_clusterd_registered(const struct fkv_clusterd *cd);
/*
 * Master: ms before writes are answered again (a new master, a node we
 * let go: leases nodes may still serve on), 0 when none is held.
 */
uint64_t fkv_clusterd_write_hold_left(const struct fkv_clusterd *cd);
/* The answer to fluxonctl's STATS (ctlsock.h); 0 or -EMSGSIZE. */
struct nl_msg;
int fkv_clusterd_stats(struct fkv_clusterd *cd, struct nl_msg *msg);
/* Log a summary (at exit). */
void fkv_clusterd_log_stats(struct fkv_clusterd *cd);

#endif /* FLUXOND_CLUSTERD_H */
