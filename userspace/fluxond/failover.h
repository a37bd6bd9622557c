/* SPDX-License-Identifier: GPL-2.0 */
/*
 * failover.h - fluxond's side of the master election (issue 32): with
 * cluster.etcd set, decide this fluxond's role before the cluster runtime
 * starts, keep campaigning / keeping the lease alive on a thread, and ask
 * the main loop to re-exec fluxond when the role or the leader changes.
 *
 * Role changes go through an exec of the same binary and arguments, the
 * module's warm-restart path (REGISTER_F_KEEP: the daemon's death keeps
 * the cache; the new process reports what it kept to the master it
 * joins): a follower that wins re-execs as master (carrying its lease and
 * leader key in FLUXOND_ETCD_RESUME), a leader that loses its lease
 * re-execs as a follower, a node whose leader moved re-execs to join the
 * new one.
 */
#ifndef FKV_FAILOVER_H
#define FKV_FAILOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>

#include "fluxonkv_config.h"

#define FKV_FAILOVER_RESUME_ENV	"FLUXOND_ETCD_RESUME"
/*
 * Set across every re-exec of a role change: the new image waits for etcd
 * as long as it takes (a leader cut off from etcd steps down and comes
 * back as a follower once etcd answers), where a first start gives up
 * after FKV_FAILOVER_FIRST_TIMEOUT_MS (a wrong endpoint is the operator's
 * to fix).
 */
#define FKV_FAILOVER_REEXEC_ENV	"FLUXOND_ETCD_REEXEC"

struct fkv_failover;
struct nl_msg;

/*
 * Contact etcd (a clear error and -errno when no endpoint answers or the
 * configuration is unusable), then wait for the election's outcome: set
 * @cc->role (MASTER when this fluxond leads) and @cc->master (the
 * leader's control address) and start the election thread.  Returns
 * -EINTR when one of @stop_sigs is pending while no leader exists yet.
 */
int fkv_failover_start(struct fkv_failover **out,
		       struct fkv_cluster_config *cc, const char *cluster_name,
		       const sigset_t *stop_sigs);
void fkv_failover_stop(struct fkv_failover *fo);

/*
 * The master's term (clusterd, before numbering puts): the etcd term,
 * read, as a floor (0 when none); then, once the local term @term is
 * taken above it, written back.  -EPERM: no longer the leader.
 */
int fkv_failover_term_floor(void *fo, uint64_t *etcd_term);
int fkv_failover_term_commit(void *fo, uint64_t term);

/*
 * Fences (term.h) in etcd: merge etcd's into @f (each raised in the
 * local file too), and raise one there.  0 or -errno (logged).
 */
struct fkv_fences;
int fkv_failover_fences_merge(void *fo, struct fkv_fences *f);
int fkv_failover_fence_raise(void *fo, const char *name, uint64_t put_id);
int fkv_failover_fence_lift(void *fo, const char *name, uint64_t put_id);

/* A reason to re-exec fluxond, or NULL (checked by the main loop). */
const char *fkv_failover_pending(struct fkv_failover *fo);
/*
 * clusterd's may_send: no re-exec pending (fkv_failover_pending), so a
 * leader whose hold ran out in the middle of a turn writes nothing more
 * to its nodes before the loop steps down.
 */
bool fkv_failover_may_send(void *fo);
/*
 * Re-exec fluxond (@argv as started), carrying a leadership if it holds
 * one.  Returns only on failure (-errno).
 */
int fkv_failover_exec(struct fkv_failover *fo, char **argv);

/* Name/value stats for fluxonctl cluster (fkv_ctl_put_stat). */
int fkv_failover_stats(void *fo, struct nl_msg *msg);

#endif
