// SPDX-License-Identifier: GPL-2.0
/*
 * nl.c - generic netlink transport of fluxond (nl.h), over libnl-genl-3.
 *
 * One socket does everything.  Requests (GET_VERSION, DAEMON_REGISTER,
 * DAEMON_UNREGISTER) carry NLM_F_ACK and are waited for with poll(); every
 * other message we send (upcall replies, DROP_REPLICA) goes without an ACK:
 * the kernel still reports a failure with an NLMSG_ERROR, which is logged.
 * Upcalls are unsolicited, hence no sequence checks; only messages from the
 * kernel (port 0) are believed, since any local process may unicast to us.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "fluxonkv_config.h"
#include "dispatch.h"
#include "log.h"
#include "nl.h"

#define FKV_NL_RCVBUF		(8 << 20)
#define FKV_NL_TIMEOUT_MS	5000
/* Datagrams handled per fkv_nl_process() call, so timers still run. */
#define FKV_NL_BATCH		256
/* Upcalls that may arrive while DAEMON_REGISTER's answer is awaited. */
#define FKV_NL_STASH		64

#define A(x)	FKV_ATTR(FLUXONKV_A_##x)

/* A request waiting for its answer and ACK. */
struct fkv_nl_request {
	bool active;
	bool done;		/* ACK or error seen */
	bool got_reply;
	uint8_t cmd;
	uint32_t seq;
	int error;		/* 0 or -errno from the kernel */
	uint32_t have;		/* FKV_ATTR bits of the answer */
	struct fkv_nl_register_info reg;
	struct fkv_nl_version ver;
};

struct fkv_nl {
	struct nl_sock *sock;
	struct nl_cb *cb;	/* the socket's callbacks (a reference) */
	int family;
	fkv_nl_upcall_fn fn;
	void *arg;
	bool family_gone;	/* the module was unloaded */
	struct fkv_nl_request req;
	struct nl_msg *stash[FKV_NL_STASH];	/* upcalls held back */
	unsigned int nstash;
	bool replaying;
	/*
	 * fkv_nl_process() reads what the socket holds before acting on
	 * any of it, so that a CANCEL behind a request drops the request.
	 */
	struct nl_msg *batch[FKV_NL_BATCH];
	unsigned int nbatch;
	bool batching;
	struct fkv_nl_stats st;
};

#define P_U64	{ .type = NLA_U64, .minlen = 8, .maxlen = 8 }
#define P_U32	{ .type = NLA_U32, .minlen = 4, .maxlen = 4 }
#define P_KEY	{ .type = NLA_UNSPEC, .minlen = 1, .maxlen = FLUXONKV_KEY_MAX }
#define P_ARRAY	{ .type = NLA_UNSPEC, .minlen = 8 }
#define P_STR	{ .type = NLA_UNSPEC, .minlen = 1 }
/* Each nest is checked entry by entry (fkv_upcall_next_entry). */
#define P_NEST	{ .type = NLA_NESTED }

static const struct nla_policy put_start_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_LEN] = P_U64,
};

static const struct nla_policy put_done_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_HANDLE] = P_U64,
	[FLUXONKV_A_LEN] = P_U64,
};

static const struct nla_policy put_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_HANDLE] = P_U64,
	[FLUXONKV_A_LEN] = P_U64,
};

static const struct nla_policy put_abort_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_HANDLE] = P_U64,
	[FLUXONKV_A_ERRNO] = P_U32,
};

static const struct nla_policy get_start_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
};

static const struct nla_policy get_done_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_HANDLE] = P_U64,
	[FLUXONKV_A_LEN] = P_U64,
	[FLUXONKV_A_SOURCE] = P_U32,
};

static const struct nla_policy get_revoke_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_SOURCE] = P_U32,
	[FLUXONKV_A_HANDLE] = P_U64,
	[FLUXONKV_A_ERRNO] = P_U32,
};

static const struct nla_policy fetch_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_LEN] = P_U64,
	[FLUXONKV_A_SOURCE] = P_U32,
	[FLUXONKV_A_HANDLE] = P_U64,
	[FLUXONKV_A_OFFSET] = P_U64,
};

static const struct nla_policy put_place_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_LEN] = P_U64,
};

static const struct nla_policy delete_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
};

static const struct nla_policy need_room_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_BYTES] = P_U64,
	[FLUXONKV_A_SEGMENT_USED] = P_U64,
	[FLUXONKV_A_HANDLES] = P_ARRAY,
};

static const struct nla_policy access_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_HANDLES] = P_ARRAY,
};

static const struct nla_policy ssd_commit_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_LEN] = P_U64,
	[FLUXONKV_A_ERRNO] = P_U32,	/* s32: the persist failed */
};

static const struct nla_policy ssd_evicted_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	[FLUXONKV_A_ENTRY] = P_NEST,
};

/* PUT_LOCAL: entries as SSD_EVICTED's, checked one by one. */
#define put_local_policy	ssd_evicted_policy

static const struct nla_policy ssd_state_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
	[FLUXONKV_A_DEADLINE] = P_U64,
	/* a cluster node's module's largest put_id (never from the kernel) */
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_SSD_CAPACITY] = P_U64,
};

/* Answers to our requests. */
static const struct nla_policy answer_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_VERSION] = P_STR,
	[FLUXONKV_A_ABI] = P_U32,
	[FLUXONKV_A_HANDLE_LAYOUT] = P_U32,
	[FLUXONKV_A_STATUS] = P_U32,
	[FLUXONKV_A_SEGMENT_SIZE] = P_U64,
	[FLUXONKV_A_SEGMENT_USED] = P_U64,
	[FLUXONKV_A_INCARNATION] = P_U64,
	[FLUXONKV_A_DAEMON_PID] = P_U32,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_SSD_CAPACITY] = P_U64,
	[FLUXONKV_A_FLAGS] = P_U32,
	[FLUXONKV_A_NODE_ID] = P_U32,
};

static const struct nla_policy cancel_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = P_U64,
};

static const struct nla_policy *upcall_policy(uint8_t cmd)
{
	switch (cmd) {
	case FLUXONKV_CMD_PUT_START:	return put_start_policy;
	case FLUXONKV_CMD_PUT_DONE:	return put_done_policy;
	case FLUXONKV_CMD_PUT:		return put_policy;
	case FLUXONKV_CMD_PUT_ABORT:	return put_abort_policy;
	case FLUXONKV_CMD_GET_START:	return get_start_policy;
	case FLUXONKV_CMD_LOOKUP:	return get_start_policy;
	case FLUXONKV_CMD_GET_DONE:	return get_done_policy;
	case FLUXONKV_CMD_GET_REVOKE:	return get_revoke_policy;
	case FLUXONKV_CMD_DELETE:	return delete_policy;
	case FLUXONKV_CMD_NEED_ROOM:	return need_room_policy;
	case FLUXONKV_CMD_ACCESS:	return access_policy;
	case FLUXONKV_CMD_DROPPED:	return access_policy;
	case FLUXONKV_CMD_SSD_COMMIT:	return ssd_commit_policy;
	case FLUXONKV_CMD_SSD_EVICTED:	return ssd_evicted_policy;
	case FLUXONKV_CMD_SSD_STATE:	return ssd_state_policy;
	case FLUXONKV_CMD_FETCH:	return fetch_policy;
	case FLUXONKV_CMD_PUT_PLACE:	return put_place_policy;
	case FLUXONKV_CMD_CANCEL:	return cancel_policy;
	case FLUXONKV_CMD_PUT_LOCAL:	return put_local_policy;
	default:			return NULL;
	}
}

int fkv_nlerr_to_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case NLE_SUCCESS:		return 0;
	case NLE_INTR:			return EINTR;
	case NLE_BAD_SOCK:		return EBADF;
	case NLE_AGAIN:			return EAGAIN;
	case NLE_NOMEM:			return ENOMEM;
	case NLE_EXIST:			return EEXIST;
	case NLE_INVAL:			return EINVAL;
	case NLE_RANGE:			return ERANGE;
	case NLE_MSGSIZE:		return EMSGSIZE;
	case NLE_OPNOTSUPP:		return EOPNOTSUPP;
	case NLE_AF_NOSUPPORT:		return EAFNOSUPPORT;
	case NLE_OBJ_NOTFOUND:		return ENOENT;
	case NLE_NOADDR:		return EADDRNOTAVAIL;
	case NLE_BUSY:			return EBUSY;
	case NLE_PROTO_MISMATCH:	return EPROTONOSUPPORT;
	case NLE_NOACCESS:		return EACCES;
	case NLE_PERM:			return EPERM;
	case NLE_NODEV:			return ENODEV;
	case NLE_MSG_TRUNC:
	case NLE_MSG_TOOSHORT:
	case NLE_MSG_OVERFLOW:		return EMSGSIZE;
	default:			return EIO;
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* @size 0: libnl's default (a page). */
static struct nl_msg *new_msg_size(int family, uint8_t cmd, int flags,
				   size_t size)
{
	struct nl_msg *msg = size ? nlmsg_alloc_size(size) : nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags,
			 cmd, FLUXONKV_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static struct nl_msg *new_msg(int family, uint8_t cmd, int flags)
{
	return new_msg_size(family, cmd, flags, 0);
}

static int send_msg(struct fkv_nl *nl, struct nl_msg *msg)
{
	int err = nl_send_auto(nl->sock, msg);

	if (err < 0) {
		nl->st.send_errors++;
		return -fkv_nlerr_to_errno(err);
	}
	return 0;
}

struct nl_msg *fkv_nl_reply_msg(int family, uint8_t cmd, uint64_t req_id,
				const struct fkv_reply *r)
{
	uint32_t p = r->status ? 0 : r->present;
	struct nl_msg *msg = new_msg(family, cmd, 0);

	if (!msg)
		return NULL;
	if (nla_put_u64(msg, FLUXONKV_A_REQ_ID, req_id) ||
	    nla_put_s32(msg, FLUXONKV_A_STATUS, r->status) ||
	    ((p & A(PUT_ID)) &&
	     nla_put_u64(msg, FLUXONKV_A_PUT_ID, r->put_id)) ||
	    ((p & A(HANDLE)) &&
	     nla_put_u64(msg, FLUXONKV_A_HANDLE, r->handle)) ||
	    ((p & A(LEN)) && nla_put_u64(msg, FLUXONKV_A_LEN, r->len)) ||
	    ((p & A(FLAGS)) && nla_put_u32(msg, FLUXONKV_A_FLAGS, r->flags)) ||
	    ((p & A(FD)) && nla_put_u32(msg, FLUXONKV_A_FD, r->fd)) ||
	    ((p & A(SOURCE)) &&
	     nla_put_u32(msg, FLUXONKV_A_SOURCE, r->source))) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct nl_msg *fkv_nl_drop_msg(int family, uint64_t handle, uint32_t flags)
{
	struct nl_msg *msg = new_msg(family, FLUXONKV_CMD_DROP_REPLICA, 0);

	if (!msg)
		return NULL;
	if (nla_put_u64(msg, FLUXONKV_A_HANDLE, handle) ||
	    nla_put_u32(msg, FLUXONKV_A_FLAGS, flags)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct nl_msg *fkv_nl_ssd_drop_msg(int family, const void *key,
				   size_t key_len, uint64_t put_id)
{
	struct nl_msg *msg = new_msg(family, FLUXONKV_CMD_DROP_REPLICA, 0);

	if (!msg)
		return NULL;
	if (nla_put_u32(msg, FLUXONKV_A_SOURCE, FLUXONKV_SOURCE_SSD) ||
	    nla_put(msg, FLUXONKV_A_KEY, (int)key_len, key) ||
	    nla_put_u64(msg, FLUXONKV_A_PUT_ID, put_id)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct nl_msg *fkv_nl_persist_msg(int family, uint64_t handle, uint64_t put_id)
{
	struct nl_msg *msg = new_msg(family, FLUXONKV_CMD_PERSIST, 0);

	if (!msg)
		return NULL;
	if (nla_put_u64(msg, FLUXONKV_A_HANDLE, handle) ||
	    nla_put_u64(msg, FLUXONKV_A_PUT_ID, put_id)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int request_msg(struct fkv_nl *nl, struct nl_msg *msg, uint8_t cmd);

/* An upper bound of the TENANTS message for @t (@n entries). */
static size_t tenants_msg_size(const struct fkv_tenant_config *t, size_t n)
{
	size_t i, size = NLMSG_HDRLEN + GENL_HDRLEN + 64;

	for (i = 0; i < n; i++)
		size += 3 * NLA_HDRLEN + NLA_ALIGN(sizeof(uint32_t)) + 8 +
			NLA_ALIGN(t[i].nuids * sizeof(uint32_t)) +
			NLA_ALIGN(t[i].ngids * sizeof(uint32_t)) + NLA_HDRLEN;
	return size;
}

struct nl_msg *fkv_nl_tenants_msg(int family,
				  const struct fkv_tenant_config *t, size_t n)
{
	struct nl_msg *msg;
	size_t i;

	if (n > FLUXONKV_TENANTS_MAX) {
		errno = E2BIG;
		return NULL;
	}
	msg = new_msg_size(family, FLUXONKV_CMD_TENANTS, NLM_F_ACK,
			   tenants_msg_size(t, n));
	if (!msg) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		struct nlattr *e;

		if (!t[i].id || t[i].id > FLUXONKV_TENANT_ID_MAX ||
		    t[i].nuids > FLUXONKV_TENANT_IDS_MAX ||
		    t[i].ngids > FLUXONKV_TENANT_IDS_MAX) {
			nlmsg_free(msg);
			errno = EINVAL;
			return NULL;
		}
		e = nla_nest_start(msg, FLUXONKV_A_TENANT_ENTRY);
		if (!e || nla_put_u32(msg, FLUXONKV_A_TENANT_ID, t[i].id) ||
		    (t[i].nuids &&
		     nla_put(msg, FLUXONKV_A_UIDS,
			     (int)(t[i].nuids * sizeof(uint32_t)),
			     t[i].uids)) ||
		    (t[i].ngids &&
		     nla_put(msg, FLUXONKV_A_GIDS,
			     (int)(t[i].ngids * sizeof(uint32_t)),
			     t[i].gids))) {
			nlmsg_free(msg);
			errno = EMSGSIZE;
			return NULL;
		}
		nla_nest_end(msg, e);
	}
	return msg;
}

int fkv_nl_set_tenants(struct fkv_nl *nl, const struct fkv_tenant_config *t,
		       size_t n)
{
	struct nl_msg *msg = fkv_nl_tenants_msg(nl->family, t, n);
	int size;

	if (!msg)
		return -errno;
	/*
	 * A full table is ~140 KiB, past the 32 KiB send buffer libnl sets:
	 * grow it (SO_SNDBUFFORCE ignores net.core.wmem_max).
	 */
	size = 2 * (int)nlmsg_hdr(msg)->nlmsg_len;
	if (size > 32768 &&
	    setsockopt(fkv_nl_fd(nl), SOL_SOCKET, SO_SNDBUFFORCE, &size,
		       sizeof(size)) &&
	    setsockopt(fkv_nl_fd(nl), SOL_SOCKET, SO_SNDBUF, &size,
		       sizeof(size)))
		fkv_warn("tenants: cannot grow the netlink send buffer: %m");
	return request_msg(nl, msg, FLUXONKV_CMD_TENANTS);
}

int fkv_nl_load_tenants(struct fkv_nl *nl, const struct fkv_tenant_config *t,
			size_t n)
{
	int err = fkv_nl_set_tenants(nl, t, n);

	if (!err) {
		if (n)
			fkv_info("tenants: %zu loaded into the module", n);
		else
			fkv_dbg("tenants: none configured, the module's table cleared");
		return 0;
	}
	if (err == -EOPNOTSUPP && !n) {
		fkv_dbg("tenants: the module has none (no FLUXONKV_CMD_TENANTS)");
		return 0;
	}
	if (err == -EOPNOTSUPP)
		fkv_err("the configuration declares %zu tenant%s but this fluxonkv module has no tenants (FLUXONKV_CMD_TENANTS unknown): install the module of this release, or remove the tenants section",
			n, n == 1 ? "" : "s");
	else
		fkv_err("cannot load the %zu tenant%s into the module: %s", n,
			n == 1 ? "" : "s", strerror(-err));
	return err;
}

int fkv_nl_send_persist(struct fkv_nl *nl, uint64_t handle, uint64_t put_id)
{
	struct nl_msg *msg = fkv_nl_persist_msg(nl->family, handle, put_id);
	int err = -ENOMEM;

	if (msg) {
		err = send_msg(nl, msg);
		nlmsg_free(msg);
	}
	if (err)
		fkv_warn("cannot send PERSIST %#llx: %s",
			 (unsigned long long)handle, strerror(-err));
	return err;
}

int fkv_nl_send_adopt_done(struct fkv_nl *nl)
{
	struct nl_msg *msg = new_msg(nl->family, FLUXONKV_CMD_ADOPT_DONE, 0);
	int err = -ENOMEM;

	if (msg) {
		err = send_msg(nl, msg);
		nlmsg_free(msg);
	}
	if (err)
		fkv_warn("cannot send ADOPT_DONE (kept replicas stay no local "
			 "hits): %s", strerror(-err));
	return err;
}

int fkv_nl_send_lease(struct fkv_nl *nl, uint64_t until_ns)
{
	struct nl_msg *msg = new_msg(nl->family, FLUXONKV_CMD_LEASE, 0);
	int err = -ENOMEM;

	if (msg) {
		err = nla_put_u64(msg, FLUXONKV_A_DEADLINE, until_ns) ?
		      -EMSGSIZE : send_msg(nl, msg);
		nlmsg_free(msg);
	}
	if (err)
		fkv_warn("cannot send LEASE (no local hits until the next): %s",
			 strerror(-err));
	return err;
}

void fkv_nl_send_reply(struct fkv_nl *nl, uint8_t cmd, uint64_t req_id,
		       const struct fkv_reply *r)
{
	struct nl_msg *msg = fkv_nl_reply_msg(nl->family, cmd, req_id, r);
	int err = -ENOMEM;

	if (msg) {
		err = send_msg(nl, msg);
		nlmsg_free(msg);
	}
	if (err)
		fkv_warn("cannot answer %s %llu: %s", fkv_cmd_name(cmd),
			 (unsigned long long)req_id, strerror(-err));
	else
		nl->st.replies++;
}

int fkv_nl_send_drop(struct fkv_nl *nl, uint64_t handle, uint32_t flags)
{
	struct nl_msg *msg = fkv_nl_drop_msg(nl->family, handle, flags);
	int err = -ENOMEM;

	if (msg) {
		err = send_msg(nl, msg);
		nlmsg_free(msg);
	}
	if (err)
		fkv_warn("cannot send DROP_REPLICA %#llx: %s",
			 (unsigned long long)handle, strerror(-err));
	else
		nl->st.drops_sent++;
	return err;
}

int fkv_nl_send_ssd_drop(struct fkv_nl *nl, const void *key, size_t key_len,
			 uint64_t put_id)
{
	struct nl_msg *msg = fkv_nl_ssd_drop_msg(nl->family, key, key_len,
						 put_id);
	int err = -ENOMEM;

	if (msg) {
		err = send_msg(nl, msg);
		nlmsg_free(msg);
	}
	if (err)
		fkv_warn("cannot send DROP_REPLICA of an SSD copy (put_id %llu): %s",
			 (unsigned long long)put_id, strerror(-err));
	else
		nl->st.drops_sent++;
	return err;
}

/*
 * Fill @u from attributes validated by @pol; -EINVAL if malformed.  @gh's
 * attribute stream is kept for repeated nests (FLUXONKV_A_ENTRY).
 */
static int decode(const struct nla_policy *pol, struct nlattr **tb,
		  struct genlmsghdr *gh, struct fkv_upcall *u)
{
	int a;

	for (a = 1; a <= FLUXONKV_A_MAX; a++) {
		struct nlattr *n = tb[a];

		if (!n || (pol[a].type == NLA_UNSPEC && !pol[a].minlen))
			continue;	/* absent, or not part of this upcall */
		u->present |= FKV_ATTR(a);
		switch (a) {
		case FLUXONKV_A_REQ_ID:
			u->req_id = nla_get_u64(n);
			break;
		case FLUXONKV_A_KEY:
			u->key = nla_data(n);
			u->key_len = (size_t)nla_len(n);
			break;
		case FLUXONKV_A_LEN:
			u->len = nla_get_u64(n);
			break;
		case FLUXONKV_A_PUT_ID:
			u->put_id = nla_get_u64(n);
			break;
		case FLUXONKV_A_HANDLE:
			u->handle = nla_get_u64(n);
			break;
		case FLUXONKV_A_SOURCE:
			u->source = nla_get_u32(n);
			break;
		case FLUXONKV_A_BYTES:
			u->bytes = nla_get_u64(n);
			break;
		case FLUXONKV_A_SEGMENT_USED:
			u->segment_used = nla_get_u64(n);
			break;
		case FLUXONKV_A_ERRNO:
			u->error = (int32_t)nla_get_u32(n);
			break;
		case FLUXONKV_A_HANDLES:
			if (nla_len(n) % (int)sizeof(uint64_t))
				return -EINVAL;
			u->handles = nla_data(n);
			u->nhandles = (size_t)nla_len(n) / sizeof(uint64_t);
			break;
		case FLUXONKV_A_SSD_CAPACITY:
			u->ssd_capacity = nla_get_u64(n);
			break;
		case FLUXONKV_A_OFFSET:
			u->offset = nla_get_u64(n);
			break;
		case FLUXONKV_A_DEADLINE:
			u->deadline = nla_get_u64(n);
			break;
		case FLUXONKV_A_ENTRY:
			/* tb[] keeps the last one: walk them all later. */
			u->attrs = genlmsg_attrdata(gh, 0);
			u->attrs_len = (size_t)genlmsg_attrlen(gh, 0);
			break;
		}
	}
	return 0;
}

int fkv_nl_decode(struct nlmsghdr *nlh, struct fkv_upcall *u)
{
	struct genlmsghdr *gh = genlmsg_hdr(nlh);
	const struct nla_policy *pol = upcall_policy(gh->cmd);
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct nlattr *id;

	memset(u, 0, sizeof(*u));
	u->cmd = gh->cmd;
	if (!pol)
		return -EOPNOTSUPP;
	if (genlmsg_parse(nlh, 0, tb, FLUXONKV_A_MAX, pol) >= 0 &&
	    decode(pol, tb, gh, u) >= 0) {
		u->nlh = nlh;
		return 0;
	}
	/* Malformed: keep only a REQ_ID that can still be answered. */
	memset(u, 0, sizeof(*u));
	u->cmd = gh->cmd;
	id = nla_find(genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0),
		      FLUXONKV_A_REQ_ID);
	if (id && nla_len(id) == sizeof(uint64_t)) {
		u->req_id = nla_get_u64(id);
		u->present = A(REQ_ID);
	}
	return -EINVAL;
}

static void handle_upcall(struct fkv_nl *nl, struct nlmsghdr *nlh,
			  uint8_t cmd)
{
	struct fkv_reply r = { .status = -EINVAL };
	struct fkv_upcall u;
	int err;

	if (cmd == FLUXONKV_CMD_CANCEL)
		return;		/* what it names was acted on already */
	err = fkv_nl_decode(nlh, &u);
	if (err == -EOPNOTSUPP) {
		nl->st.malformed++;
		fkv_warn("ignoring unexpected command %u (%s) from the module",
			 cmd, fkv_cmd_name(cmd));
		return;
	}
	nl->st.upcalls++;
	if (err) {
		nl->st.malformed++;
		if (!(u.present & A(REQ_ID)) || !fkv_upcall_wants_reply(cmd)) {
			fkv_warn("malformed %s upcall dropped (no REQ_ID to "
				 "answer)", fkv_cmd_name(cmd));
			return;
		}
		fkv_warn("malformed %s upcall %llu answered -EINVAL",
			 fkv_cmd_name(cmd), (unsigned long long)u.req_id);
		fkv_nl_send_reply(nl, cmd, u.req_id, &r);
		return;
	}
	/*
	 * The module stopped waiting for this one (we were stopped, or
	 * behind): acting on it now would reserve, evict or route for a
	 * caller that is gone.  Its clock is ours (CLOCK_MONOTONIC, this
	 * host): checked here, never where a forwarded copy lands.
	 */
	if ((u.present & A(DEADLINE)) && now_ns() > u.deadline) {
		nl->st.expired++;
		fkv_dbg("%s upcall %llu expired %llu us ago: dropped",
			fkv_cmd_name(cmd), (unsigned long long)u.req_id,
			(unsigned long long)(now_ns() - u.deadline) / 1000);
		return;
	}
	if (nl->fn(nl->arg, &u, &r) && (u.present & A(REQ_ID)))
		fkv_nl_send_reply(nl, cmd, u.req_id, &r);
}

/* Keep an upcall that arrived before DAEMON_REGISTER's answer. */
static bool stash(struct fkv_nl *nl, struct nl_msg *msg)
{
	if (nl->nstash == FKV_NL_STASH)
		return false;
	nlmsg_get(msg);
	nl->stash[nl->nstash++] = msg;
	return true;
}

static void replay_stash(struct fkv_nl *nl)
{
	unsigned int i, n = nl->nstash;

	nl->nstash = 0;
	nl->replaying = true;
	for (i = 0; i < n; i++) {
		struct nlmsghdr *nlh = nlmsg_hdr(nl->stash[i]);

		handle_upcall(nl, nlh, genlmsg_hdr(nlh)->cmd);
		nlmsg_free(nl->stash[i]);
	}
	nl->replaying = false;
}

static void drop_stash(struct fkv_nl *nl)
{
	while (nl->nstash)
		nlmsg_free(nl->stash[--nl->nstash]);
}

static void take_answer(struct fkv_nl *nl, struct nlmsghdr *nlh, uint8_t cmd)
{
	struct fkv_nl_request *q = &nl->req;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct nlattr *n;

	if (!q->active || q->cmd != cmd || nlh->nlmsg_seq != q->seq) {
		fkv_dbg("stray %s answer (seq %u)", fkv_cmd_name(cmd),
			nlh->nlmsg_seq);
		return;
	}
	if (genlmsg_parse(nlh, 0, tb, FLUXONKV_A_MAX, answer_policy) < 0) {
		q->error = -EPROTO;
		return;
	}
	q->got_reply = true;
	if ((n = tb[FLUXONKV_A_STATUS]) && (int32_t)nla_get_u32(n) < 0)
		q->error = (int32_t)nla_get_u32(n);
	if ((n = tb[FLUXONKV_A_VERSION])) {
		size_t len = (size_t)nla_len(n);

		if (len >= sizeof(q->ver.version))
			len = sizeof(q->ver.version) - 1;
		memcpy(q->ver.version, nla_data(n), len);
		q->ver.version[len] = '\0';
		q->have |= A(VERSION);
	}
	if ((n = tb[FLUXONKV_A_ABI])) {
		q->ver.abi = nla_get_u32(n);
		q->have |= A(ABI);
	}
	q->ver.handle_layout = (n = tb[FLUXONKV_A_HANDLE_LAYOUT]) ?
			       nla_get_u32(n) : 1;
	if ((n = tb[FLUXONKV_A_SEGMENT_SIZE])) {
		q->ver.segment_size = q->reg.segment_size = nla_get_u64(n);
		q->have |= A(SEGMENT_SIZE);
	}
	if ((n = tb[FLUXONKV_A_SEGMENT_USED])) {
		q->ver.segment_used = q->reg.segment_used = nla_get_u64(n);
		q->have |= A(SEGMENT_USED);
	}
	if ((n = tb[FLUXONKV_A_PUT_ID]))
		q->reg.put_id_max = nla_get_u64(n);
	/* Absent from modules without an SSD tier: 0 = no SSD. */
	if ((n = tb[FLUXONKV_A_SSD_CAPACITY]))
		q->reg.ssd_capacity = nla_get_u64(n);
	if ((n = tb[FLUXONKV_A_FLAGS]))
		q->reg.flags = nla_get_u32(n);
	if ((n = tb[FLUXONKV_A_NODE_ID]))
		q->reg.node_id = nla_get_u32(n);
	if ((n = tb[FLUXONKV_A_INCARNATION])) {
		q->reg.incarnation = nla_get_u64(n);
		q->have |= A(INCARNATION);
	}
	if ((n = tb[FLUXONKV_A_DAEMON_PID])) {
		q->ver.daemon_pid = nla_get_u32(n);
		q->have |= A(DAEMON_PID);
	}
}

/* nlctrl told us a family went away: ours means the module is unloaded. */
static void ctrl_event(struct fkv_nl *nl, struct nlmsghdr *nlh)
{
	static const struct nla_policy pol[CTRL_ATTR_MAX + 1] = {
		[CTRL_ATTR_FAMILY_ID] = { .type = NLA_U16, .minlen = 2 },
	};
	struct nlattr *tb[CTRL_ATTR_MAX + 1];

	if (genlmsg_hdr(nlh)->cmd != CTRL_CMD_DELFAMILY ||
	    genlmsg_parse(nlh, 0, tb, CTRL_ATTR_MAX, pol) < 0 ||
	    !tb[CTRL_ATTR_FAMILY_ID] ||
	    nla_get_u16(tb[CTRL_ATTR_FAMILY_ID]) != nl->family)
		return;
	nl->family_gone = true;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct fkv_nl *nl = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct sockaddr_nl *src = nlmsg_get_src(msg);
	uint8_t cmd;

	if (src && src->nl_pid) {
		nl->st.foreign++;
		fkv_warn("ignoring a message from user port %u", src->nl_pid);
		return NL_SKIP;
	}
	if (!genlmsg_valid_hdr(nlh, 0)) {
		nl->st.malformed++;
		fkv_warn("ignoring a message without a genl header");
		return NL_SKIP;
	}
	if (nlh->nlmsg_type == GENL_ID_CTRL) {
		ctrl_event(nl, nlh);
		return NL_OK;
	}
	if (nlh->nlmsg_type != nl->family)
		return NL_SKIP;
	cmd = genlmsg_hdr(nlh)->cmd;
	switch (cmd) {
	case FLUXONKV_CMD_GET_VERSION:
	case FLUXONKV_CMD_DAEMON_REGISTER:
	case FLUXONKV_CMD_DAEMON_UNREGISTER:
		take_answer(nl, nlh, cmd);
		break;
	case FLUXONKV_CMD_DAEMON_EVENT:
		break;
	default:
		/* upcalls wait while we register and load the tenants */
		if (nl->req.active &&
		    (nl->req.cmd == FLUXONKV_CMD_DAEMON_REGISTER ||
		     nl->req.cmd == FLUXONKV_CMD_TENANTS) && stash(nl, msg))
			break;
		if (nl->batching && nl->nbatch < FKV_NL_BATCH) {
			nlmsg_get(msg);
			nl->batch[nl->nbatch++] = msg;
			break;
		}
		handle_upcall(nl, nlh, cmd);
		break;
	}
	return NL_OK;
}

/* The REQ_ID of a CANCEL, or 0. */
static uint64_t cancel_req_id(struct nlmsghdr *nlh)
{
	struct genlmsghdr *gh = genlmsg_hdr(nlh);
	struct nlattr *id;

	if (gh->cmd != FLUXONKV_CMD_CANCEL)
		return 0;
	id = nla_find(genlmsg_attrdata(gh, 0), genlmsg_attrlen(gh, 0),
		      FLUXONKV_A_REQ_ID);
	return id && nla_len(id) == sizeof(uint64_t) ? nla_get_u64(id) : 0;
}

/*
 * Act on the batch in order, except requests a later CANCEL in the same
 * batch names (a CANCEL for a request already acted on is too late: the
 * module gives back what the answer grants, e.g. PUT_ABORT).
 */
static void run_batch(struct fkv_nl *nl)
{
	uint64_t cancelled[FKV_NL_BATCH];
	unsigned int i, j, ncancel = 0, n = nl->nbatch;

	nl->nbatch = 0;
	for (i = 0; i < n; i++) {
		uint64_t id = cancel_req_id(nlmsg_hdr(nl->batch[i]));

		if (id)
			cancelled[ncancel++] = id;
	}
	for (i = 0; i < n; i++) {
		struct nlmsghdr *nlh = nlmsg_hdr(nl->batch[i]);
		struct fkv_upcall u;
		bool skip = false;

		if (genlmsg_hdr(nlh)->cmd == FLUXONKV_CMD_CANCEL) {
			nlmsg_free(nl->batch[i]);
			continue;
		}
		if (ncancel && fkv_nl_decode(nlh, &u) == 0 &&
		    (u.present & A(REQ_ID)))
			for (j = 0; j < ncancel && !skip; j++)
				skip = cancelled[j] == u.req_id;
		if (skip) {
			nl->st.cancelled++;
			fkv_dbg("%s upcall %llu cancelled by the module: dropped",
				fkv_cmd_name(u.cmd),
				(unsigned long long)u.req_id);
		} else {
			handle_upcall(nl, nlh, genlmsg_hdr(nlh)->cmd);
		}
		nlmsg_free(nl->batch[i]);
	}
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	struct fkv_nl *nl = arg;

	if (nl->req.active && nlmsg_hdr(msg)->nlmsg_seq == nl->req.seq)
		nl->req.done = true;
	return NL_OK;
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct fkv_nl *nl = arg;
	const char *what = "message";

	if (nl->req.active && e->msg.nlmsg_seq == nl->req.seq) {
		nl->req.error = e->error;
		nl->req.done = true;
		return NL_SKIP;
	}
	nl->st.rejected++;
	/* Without NETLINK_CAP_ACK the error quotes our whole message. */
	if (e->msg.nlmsg_type == nl->family &&
	    e->msg.nlmsg_len >= NLMSG_HDRLEN + GENL_HDRLEN)
		what = fkv_cmd_name(((struct genlmsghdr *)(e + 1))->cmd);
	if (e->error == -ENOENT)
		fkv_info("module no longer waits for our %s (expired upcall)",
			 what);
	else
		fkv_warn("module rejected our %s: %s", what,
			 strerror(-e->error));
	return NL_SKIP;
}

/*
 * Send @msg (a request with NLM_F_ACK; freed here) and wait for its answer
 * and ACK.
 */
static int request_msg(struct fkv_nl *nl, struct nl_msg *msg, uint8_t cmd)
{
	uint64_t deadline = now_ms() + FKV_NL_TIMEOUT_MS;
	int err;

	memset(&nl->req, 0, sizeof(nl->req));
	err = send_msg(nl, msg);
	if (!err) {
		nl->req.seq = nlmsg_hdr(msg)->nlmsg_seq;
		nl->req.cmd = cmd;
		nl->req.active = true;
	}
	nlmsg_free(msg);
	while (!err && !nl->req.done) {
		struct pollfd pfd = { .fd = fkv_nl_fd(nl), .events = POLLIN };
		uint64_t now = now_ms();
		int n;

		if (now >= deadline) {
			err = -ETIMEDOUT;
			break;
		}
		n = poll(&pfd, 1, (int)(deadline - now));
		if (n < 0 && errno != EINTR)
			err = -errno;
		if (n <= 0)
			continue;
		n = nl_recvmsgs_report(nl->sock, nl->cb);
		if (n == -NLE_NOMEM) {
			nl->st.overruns++;
			fkv_warn("netlink receive overrun (ENOBUFS)");
		} else if (n < 0 && n != -NLE_AGAIN && n != -NLE_INTR) {
			err = -fkv_nlerr_to_errno(n);
		}
	}
	nl->req.active = false;
	return err ? err : nl->req.error;
}

static int request(struct fkv_nl *nl, uint8_t cmd, uint32_t flags,
		   uint32_t node_id)
{
	struct nl_msg *msg = new_msg(nl->family, cmd, NLM_F_ACK);

	if (!msg)
		return -ENOMEM;
	if ((flags && nla_put_u32(msg, FLUXONKV_A_FLAGS, flags) < 0) ||
	    (node_id && nla_put_u32(msg, FLUXONKV_A_NODE_ID, node_id) < 0)) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	return request_msg(nl, msg, cmd);
}

int fkv_nl_get_version(struct fkv_nl *nl, struct fkv_nl_version *v)
{
	int err = request(nl, FLUXONKV_CMD_GET_VERSION, 0, 0);

	if (err)
		return err;
	if (!nl->req.got_reply)
		return -EPROTO;
	*v = nl->req.ver;
	return 0;
}

int fkv_nl_register(struct fkv_nl *nl, uint32_t flags, uint32_t node_id,
		    struct fkv_nl_register_info *info)
{
	int err = request(nl, FLUXONKV_CMD_DAEMON_REGISTER, flags, node_id);

	if (!err && (!nl->req.got_reply ||
		     (nl->req.have & (A(SEGMENT_SIZE) | A(INCARNATION))) !=
		     (A(SEGMENT_SIZE) | A(INCARNATION)) ||
		     !nl->req.reg.segment_size))
		err = -EPROTO;
	if (err) {
		drop_stash(nl);
		return err;
	}
	*info = nl->req.reg;
	return 0;
}

int fkv_nl_unregister(struct fkv_nl *nl)
{
	return request(nl, FLUXONKV_CMD_DAEMON_UNREGISTER, 0, 0);
}

int fkv_nl_unregister_leased(struct fkv_nl *nl)
{
	return request(nl, FLUXONKV_CMD_DAEMON_UNREGISTER,
		       FLUXONKV_UNREGISTER_F_LEASED, 0);
}

int fkv_nl_process(struct fkv_nl *nl)
{
	int i, n;

	if (nl->nstash && !nl->replaying)
		replay_stash(nl);
	nl->batching = true;
	for (i = 0; i < FKV_NL_BATCH && !nl->family_gone; i++) {
		n = nl_recvmsgs_report(nl->sock, nl->cb);
		if (n > 0)
			continue;
		if (n == 0 || n == -NLE_AGAIN || n == -NLE_INTR)
			break;
		if (n == -NLE_NOMEM) {
			/* ENOBUFS: upcalls were lost; the module times them out. */
			nl->st.overruns++;
			fkv_warn("netlink receive overrun (ENOBUFS): upcalls lost");
			continue;
		}
		if (n == -NLE_BAD_SOCK) {
			nl->batching = false;
			run_batch(nl);
			return -EBADF;
		}
		nl->st.malformed++;
		fkv_warn("netlink receive: %s", nl_geterror(n));
	}
	nl->batching = false;
	run_batch(nl);
	return nl->family_gone ? -ENODEV : 0;
}

int fkv_nl_fd(const struct fkv_nl *nl)
{
	return nl_socket_get_fd(nl->sock);
}

void fkv_nl_get_stats(const struct fkv_nl *nl, struct fkv_nl_stats *st)
{
	*st = nl->st;
}

static void set_rcvbuf(struct fkv_nl *nl)
{
	int size = FKV_NL_RCVBUF;

	/* SO_RCVBUFFORCE (CAP_NET_ADMIN) ignores net.core.rmem_max. */
	if (setsockopt(fkv_nl_fd(nl), SOL_SOCKET, SO_RCVBUFFORCE, &size,
		       sizeof(size)) &&
	    nl_socket_set_buffer_size(nl->sock, size, 0) < 0)
		fkv_warn("cannot grow the netlink receive buffer");
}

int fkv_nl_open(struct fkv_nl **out, fkv_nl_upcall_fn fn, void *arg)
{
	struct fkv_nl *nl;
	int err, grp;

	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->fn = fn;
	nl->arg = arg;
	err = -ENOMEM;
	nl->sock = nl_socket_alloc();
	if (!nl->sock)
		goto err_free;
	err = genl_connect(nl->sock);
	if (err < 0) {
		err = -fkv_nlerr_to_errno(err);
		goto err_sock;
	}
	/* Resolve with libnl's defaults (it waits for an ACK). */
	nl->family = genl_ctrl_resolve(nl->sock, FLUXONKV_GENL_NAME);
	if (nl->family < 0) {
		err = -fkv_nlerr_to_errno(nl->family);
		goto err_sock;
	}
	grp = genl_ctrl_resolve_grp(nl->sock, "nlctrl", "notify");
	if (grp < 0 || nl_socket_add_membership(nl->sock, grp) < 0)
		fkv_warn("cannot follow nlctrl notifications: module unload "
			 "will go unnoticed");

	nl_socket_disable_seq_check(nl->sock);
	nl_socket_disable_auto_ack(nl->sock);
	nl_socket_enable_msg_peek(nl->sock);
	if (nl_socket_modify_cb(nl->sock, NL_CB_VALID, NL_CB_CUSTOM, on_valid,
				nl) < 0 ||
	    nl_socket_modify_cb(nl->sock, NL_CB_ACK, NL_CB_CUSTOM, on_ack,
				nl) < 0 ||
	    nl_socket_modify_err_cb(nl->sock, NL_CB_CUSTOM, on_error, nl) < 0) {
		err = -ENOMEM;
		goto err_sock;
	}
	nl->cb = nl_socket_get_cb(nl->sock);
	set_rcvbuf(nl);
	err = nl_socket_set_nonblocking(nl->sock);
	if (err < 0) {
		err = -fkv_nlerr_to_errno(err);
		goto err_cb;
	}
	*out = nl;
	return 0;

err_cb:
	nl_cb_put(nl->cb);
err_sock:
	nl_socket_free(nl->sock);
err_free:
	free(nl);
	return err;
}

void fkv_nl_close(struct fkv_nl *nl)
{
	if (!nl)
		return;
	drop_stash(nl);
	nl_cb_put(nl->cb);
	nl_socket_free(nl->sock);
	free(nl);
}

uint64_t fkv_module_ssd_capacity(void)
{
	unsigned long long v = 0;
	FILE *f = fopen("/sys/kernel/fluxonkv/kv_ssd_capacity_bytes", "r");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

unsigned int fkv_module_request_timeout_ms(void)
{
	unsigned int v = 0;
	FILE *f = fopen("/sys/module/fluxonkv/parameters/request_timeout_ms",
			"r");

	if (f) {
		if (fscanf(f, "%u", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* ---- DUMP (warm restart) ---- */

static const struct nla_policy dump_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_HANDLE] = P_U64,
	[FLUXONKV_A_KEY] = P_KEY,
	[FLUXONKV_A_PUT_ID] = P_U64,
	[FLUXONKV_A_LEN] = P_U64,
	[FLUXONKV_A_SOURCE] = P_U32,
	[FLUXONKV_A_FLAGS] = P_U32,
};

struct dump_ctx {
	void (*fn)(void *arg, const struct fkv_dump_rec *r);
	void *arg;
	unsigned int bad;
};

static int on_dump(struct nl_msg *msg, void *arg)
{
	struct dump_ctx *x = arg;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	struct fkv_dump_rec r = { 0 };

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, FLUXONKV_A_MAX,
			  (struct nla_policy *)dump_policy) < 0 ||
	    !tb[FLUXONKV_A_KEY] || !tb[FLUXONKV_A_PUT_ID] ||
	    !tb[FLUXONKV_A_LEN] || !tb[FLUXONKV_A_SOURCE]) {
		x->bad++;
		return NL_OK;
	}
	r.source = nla_get_u32(tb[FLUXONKV_A_SOURCE]);
	r.key = nla_data(tb[FLUXONKV_A_KEY]);
	r.key_len = (size_t)nla_len(tb[FLUXONKV_A_KEY]);
	r.put_id = nla_get_u64(tb[FLUXONKV_A_PUT_ID]);
	r.len = nla_get_u64(tb[FLUXONKV_A_LEN]);
	r.handle = tb[FLUXONKV_A_HANDLE] ? nla_get_u64(tb[FLUXONKV_A_HANDLE]) : 0;
	r.flags = tb[FLUXONKV_A_FLAGS] ? nla_get_u32(tb[FLUXONKV_A_FLAGS]) : 0;
	if ((r.source != FLUXONKV_SOURCE_MEMORY &&
	     r.source != FLUXONKV_SOURCE_SSD) ||
	    (r.source == FLUXONKV_SOURCE_MEMORY && !r.handle) ||
	    !r.put_id || !r.len) {
		x->bad++;
		return NL_OK;
	}
	x->fn(x->arg, &r);
	return NL_OK;
}

int fkv_nl_dump_module(void (*fn)(void *arg, const struct fkv_dump_rec *r),
		       void *arg, unsigned int *bad)
{
	struct dump_ctx x = { .fn = fn, .arg = arg };
	struct nl_sock *sk = nl_socket_alloc();
	int family, err;

	if (!sk)
		return -ENOMEM;
	err = genl_connect(sk);
	if (err < 0)
		goto out;
	family = genl_ctrl_resolve(sk, FLUXONKV_GENL_NAME);
	if (family < 0) {
		err = family;
		goto out;
	}
	err = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_dump, &x);
	if (err < 0)
		goto out;
	err = genl_send_simple(sk, family, FLUXONKV_CMD_DUMP,
			       FLUXONKV_GENL_VERSION, NLM_F_DUMP);
	if (err >= 0)
		err = nl_recvmsgs_default(sk);
out:
	nl_socket_free(sk);
	if (bad)
		*bad = x.bad;
	return err < 0 ? -fkv_nlerr_to_errno(err) : 0;
}
