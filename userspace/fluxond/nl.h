/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nl.h - fluxond's generic netlink transport (libnl-genl-3): resolve the
 * "fluxonkv" family, register as the daemon, receive upcalls, send replies
 * and DROP_REPLICA commands.
 */
#ifndef FLUXOND_NL_H
#define FLUXOND_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upcall.h"

/*
 * Called for each well-formed upcall; returns true if @r must be sent as
 * the reply (see fkv_dispatch()).
 */
typedef bool (*fkv_nl_upcall_fn)(void *arg, const struct fkv_upcall *u,
				 struct fkv_reply *r);

/* DAEMON_REGISTER's answer. */
struct fkv_nl_register_info {
	uint64_t segment_size;
	uint64_t segment_used;
	uint64_t incarnation;
	uint64_t put_id_max;	/* largest put_id the module has seen */
	uint64_t ssd_capacity;	/* the module's SSD ring bytes; 0 = none
				 * (or a module without an SSD tier) */
	uint32_t flags;		/* FLUXONKV_REGISTER_F_* the module took */
	uint32_t node_id;	/* stamped into its handles (0: single node) */
};

/* GET_VERSION's answer; fields the module did not send stay zero. */
struct fkv_nl_version {
	char version[64];
	uint32_t abi;
	uint32_t handle_layout;	/* FLUXONKV_HANDLE_LAYOUT; 1 if not said */
	uint64_t segment_size;
	uint64_t segment_used;
	uint32_t daemon_pid;
};

struct fkv_nl_stats {
	uint64_t upcalls, replies, drops_sent, malformed, foreign;
	uint64_t overruns, send_errors, rejected;
	uint64_t expired;	/* upcalls past their DEADLINE, dropped */
	uint64_t cancelled;	/* upcalls a CANCEL behind them dropped */
};

struct fkv_nl;

/*
 * Open a generic netlink socket and resolve the family.  -ENOENT when the
 * family does not exist (module not loaded), other -errno on failure.
 */
int fkv_nl_open(struct fkv_nl **out, fkv_nl_upcall_fn fn, void *arg);
void fkv_nl_close(struct fkv_nl *nl);
int fkv_nl_fd(const struct fkv_nl *nl);

int fkv_nl_get_version(struct fkv_nl *nl, struct fkv_nl_version *v);
/*
 * Become the daemon.  -EBUSY: another live daemon is registered; -EPERM:
 * no CAP_NET_ADMIN or CAP_SYS_ADMIN; -ESHUTDOWN: the module is unloading;
 * -ETIMEDOUT: no answer; -EPROTO: malformed answer.
 */
/*
 * DAEMON_REGISTER with @flags (FLUXONKV_REGISTER_F_*) and @node_id (0 on a
 * single node; the cluster id the master gave this node otherwise); the
 * module's answer in @info.  0 or -errno.
 */
int fkv_nl_register(struct fkv_nl *nl, uint32_t flags, uint32_t node_id,
		    struct fkv_nl_register_info *info);
int fkv_nl_unregister(struct fkv_nl *nl);
/*
 * ... leaving the module to serve this node's local hits alone until the
 * lease it holds runs out (FLUXONKV_UNREGISTER_F_LEASED: the master went).
 */
int fkv_nl_unregister_leased(struct fkv_nl *nl);

/*
 * Read and dispatch everything queued on the socket (at most a bounded
 * batch, so timers still run).  0, or a fatal -errno.
 */
int fkv_nl_process(struct fkv_nl *nl);

/*
 * Answer upcall @req_id of @cmd now; for the callback that returned false
 * to answer later (a FETCH, or an upcall forwarded to a remote master).
 */
void fkv_nl_send_reply(struct fkv_nl *nl, uint8_t cmd, uint64_t req_id,
		       const struct fkv_reply *r);

/* Send DROP_REPLICA {HANDLE, FLAGS (FLUXONKV_DROP_F_*)}.  0 or -errno. */
int fkv_nl_send_drop(struct fkv_nl *nl, uint64_t handle, uint32_t flags);
/*
 * DROP_REPLICA {SOURCE = SSD, KEY, PUT_ID}: the master no longer routes to
 * this node's SSD copies of the key up to @put_id; the module unroutes
 * them (so they are not reported to a later master).
 */
int fkv_nl_send_ssd_drop(struct fkv_nl *nl, const void *key, size_t key_len,
			 uint64_t put_id);
/* PERSIST {HANDLE, PUT_ID}: write that replica to the SSD tier. */
int fkv_nl_send_persist(struct fkv_nl *nl, uint64_t handle, uint64_t put_id);
/*
 * ADOPT_DONE: every kept replica the master did not drop is adopted (their
 * DROP_REPLICAs were sent before): they are local hits again.
 */
int fkv_nl_send_adopt_done(struct fkv_nl *nl);
/*
 * TENANTS (issue 30): replace the module's tenant table with @t (@n
 * entries; none: no table, isolation off), waiting for the module's ack.
 * 0, or -EOPNOTSUPP from a module without tenants, -EINVAL / -E2BIG for a
 * table past the uapi limits, another -errno.
 */
struct fkv_tenant_config;
int fkv_nl_set_tenants(struct fkv_nl *nl, const struct fkv_tenant_config *t,
		       size_t n);
/*
 * The same after every DAEMON_REGISTER, with the log line: -EOPNOTSUPP
 * with @n == 0 is 0 (an older module has no table to clear); any other
 * error is logged as one line and returned (the caller exits 1).
 */
int fkv_nl_load_tenants(struct fkv_nl *nl, const struct fkv_tenant_config *t,
			size_t n);
/* LEASE: local hits until CLOCK_MONOTONIC @until_ns (REGISTER_F_LEASE). */
int fkv_nl_send_lease(struct fkv_nl *nl, uint64_t until_ns);

void fkv_nl_get_stats(const struct fkv_nl *nl, struct fkv_nl_stats *st);

/* The module's SSD ring bytes (its sysfs gauge), 0 if none or unreadable. */
uint64_t fkv_module_ssd_capacity(void);
/* The module's request_timeout_ms parameter; 0 if unreadable. */
unsigned int fkv_module_request_timeout_ms(void);

/* One FLUXONKV_CMD_DUMP record; @key points into the message. */
struct fkv_dump_rec {
	uint32_t source;	/* FLUXONKV_SOURCE_MEMORY or _SSD */
	uint64_t handle;	/* MEMORY */
	const uint8_t *key;
	size_t key_len;
	uint64_t put_id;
	uint64_t len;
	uint32_t flags;		/* FLUXONKV_DUMP_F_* */
};

/*
 * Ask the module for every replica and routed SSD entry it holds (DUMP,
 * on a socket of its own: the daemon's keeps answering upcalls) and call
 * @fn for each well-formed record (malformed ones are counted in
 * *@bad).  0 or -errno.
 */
int fkv_nl_dump_module(void (*fn)(void *arg, const struct fkv_dump_rec *r),
		       void *arg, unsigned int *bad);

/* errno for a libnl error code (NLE_*, either sign); positive. */
int fkv_nlerr_to_errno(int nlerr);

/* Message level helpers, exposed for the unit tests. */
struct nlmsghdr;
struct nl_msg;

/*
 * Decode an upcall (or notification) of the "fluxonkv" family with the
 * policy of its command.  0; -EOPNOTSUPP if the command is not one the
 * module sends us; -EINVAL if malformed, in which case @u still carries
 * REQ_ID when one could be recovered.  @u->key, @u->handles and @u->attrs
 * point into @nlh.  SSD_EVICTED entries are checked one by one when walked
 * (fkv_upcall_next_entry), so one bad entry does not lose the others.
 */
int fkv_nl_decode(struct nlmsghdr *nlh, struct fkv_upcall *u);

/*
 * Build the answer to an upcall: same @cmd, REQ_ID, STATUS and, when the
 * status is 0, the attributes in @r->present.  NULL on allocation failure.
 */
struct nl_msg *fkv_nl_reply_msg(int family, uint8_t cmd, uint64_t req_id,
				const struct fkv_reply *r);

/* Build DROP_REPLICA {HANDLE, FLAGS}. */
struct nl_msg *fkv_nl_drop_msg(int family, uint64_t handle, uint32_t flags);
struct nl_msg *fkv_nl_ssd_drop_msg(int family, const void *key,
				   size_t key_len, uint64_t put_id);
struct nl_msg *fkv_nl_persist_msg(int family, uint64_t handle, uint64_t put_id);
/*
 * Build TENANTS {TENANT_ENTRY {TENANT_ID, UIDS, GIDS}...} with NLM_F_ACK;
 * UIDS / GIDS are left out when empty.  NULL with errno (E2BIG: more than
 * FLUXONKV_TENANTS_MAX entries; EINVAL: an id or id list out of the
 * uapi's range; ENOMEM).
 */
struct nl_msg *fkv_nl_tenants_msg(int family,
				  const struct fkv_tenant_config *t, size_t n);

#endif /* FLUXOND_NL_H */
