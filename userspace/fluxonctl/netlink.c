// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl's generic netlink client (libnl-genl): one request, its reply,
 * then the ACK; every receive bounded by CTL_GENL_TIMEOUT_MS.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <linux/fluxonkv.h>

#include "netlink.h"

struct ctl_genl_req {
	bool done;
	int kernel_err;		/* from an NLMSG_ERROR, negative errno */
	int parse_err;
	struct ctl_genl_version *out;
};

static struct nla_policy ctl_version_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_VERSION] = { .type = NLA_STRING },
	[FLUXONKV_A_ABI] = { .type = NLA_U32 },
	[FLUXONKV_A_SEGMENT_SIZE] = { .type = NLA_U64 },
	[FLUXONKV_A_SEGMENT_USED] = { .type = NLA_U64 },
	[FLUXONKV_A_DAEMON_PID] = { .type = NLA_U32 },
};

static int ctl_genl_version_cb(struct nl_msg *msg, void *arg)
{
	struct ctl_genl_req *req = arg;
	struct ctl_genl_version *out = req->out;
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	int ret;

	ret = genlmsg_parse(nlmsg_hdr(msg), 0, tb, FLUXONKV_A_MAX,
			    ctl_version_policy);
	if (ret < 0) {
		req->parse_err = ret;
		return NL_SKIP;
	}
	if (tb[FLUXONKV_A_VERSION]) {
		nla_strlcpy(out->version, tb[FLUXONKV_A_VERSION],
			    sizeof(out->version));
		out->have |= CTL_GV_VERSION;
	}
	if (tb[FLUXONKV_A_ABI]) {
		out->abi = nla_get_u32(tb[FLUXONKV_A_ABI]);
		out->have |= CTL_GV_ABI;
	}
	if (tb[FLUXONKV_A_SEGMENT_SIZE]) {
		out->segment_size = nla_get_u64(tb[FLUXONKV_A_SEGMENT_SIZE]);
		out->have |= CTL_GV_SEGMENT_SIZE;
	}
	if (tb[FLUXONKV_A_SEGMENT_USED]) {
		out->segment_used = nla_get_u64(tb[FLUXONKV_A_SEGMENT_USED]);
		out->have |= CTL_GV_SEGMENT_USED;
	}
	if (tb[FLUXONKV_A_DAEMON_PID]) {
		out->daemon_pid = nla_get_u32(tb[FLUXONKV_A_DAEMON_PID]);
		out->have |= CTL_GV_DAEMON_PID;
	}
	return NL_OK;
}

static int ctl_genl_ack_cb(struct nl_msg *msg, void *arg)
{
	struct ctl_genl_req *req = arg;

	req->done = true;
	return NL_STOP;
}

static int ctl_genl_err_cb(struct sockaddr_nl *nla, struct nlmsgerr *e,
			   void *arg)
{
	struct ctl_genl_req *req = arg;

	req->kernel_err = e->error;
	req->done = true;
	return NL_STOP;
}

static __attribute__((format(printf, 3, 4)))
int ctl_genl_fail(struct ctl_genl_version *out, int err, const char *fmt, ...)
{
	va_list ap;

	out->err = err;
	va_start(ap, fmt);
	vsnprintf(out->error, sizeof(out->error), fmt, ap);
	va_end(ap);
	return err;
}

/* libnl error codes are not errnos; keep a plausible errno for callers. */
static int ctl_nlerr_errno(int nlerr)
{
	switch (-nlerr) {
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_AGAIN:
		return -ETIMEDOUT;
	case NLE_PERM:
		return -EPERM;
	default:
		return -EIO;
	}
}

static int ctl_genl_exchange(struct nl_sock *sk, int family,
			     struct ctl_genl_version *out)
{
	struct ctl_genl_req req = { .out = out };
	struct nl_msg *msg;
	struct nl_cb *cb;
	int ret;

	msg = nlmsg_alloc();
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!msg || !cb) {
		ret = ctl_genl_fail(out, -ENOMEM, "out of memory");
		goto out;
	}
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0,
			 FLUXONKV_CMD_GET_VERSION, FLUXONKV_GENL_VERSION)) {
		ret = ctl_genl_fail(out, -ENOMEM, "cannot build the request");
		goto out;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, ctl_genl_version_cb, &req);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ctl_genl_ack_cb, &req);
	nl_cb_err(cb, NL_CB_CUSTOM, ctl_genl_err_cb, &req);

	ret = nl_send_auto(sk, msg);	/* asks for an ACK */
	if (ret < 0) {
		ret = ctl_genl_fail(out, ctl_nlerr_errno(ret),
				    "cannot send GET_VERSION: %s",
				    nl_geterror(ret));
		goto out;
	}
	while (!req.done) {
		ret = nl_recvmsgs(sk, cb);
		if (ret < 0)
			break;
	}
	if (req.kernel_err)
		ret = ctl_genl_fail(out, req.kernel_err,
				    "GET_VERSION refused: %s",
				    strerror(-req.kernel_err));
	else if (!req.done)
		ret = ctl_genl_fail(out, ctl_nlerr_errno(ret),
				    "no answer to GET_VERSION: %s",
				    nl_geterror(ret));
	else if (req.parse_err)
		ret = ctl_genl_fail(out, -EPROTO,
				    "malformed GET_VERSION reply: %s",
				    nl_geterror(req.parse_err));
	else if (!out->have)
		ret = ctl_genl_fail(out, -EPROTO,
				    "GET_VERSION was acknowledged without a reply");
	else
		ret = 0;
out:
	nl_cb_put(cb);
	nlmsg_free(msg);
	return ret;
}

int ctl_genl_get_version(struct ctl_genl_version *out)
{
	struct timeval tv = {
		.tv_sec = CTL_GENL_TIMEOUT_MS / 1000,
		.tv_usec = CTL_GENL_TIMEOUT_MS % 1000 * 1000,
	};
	struct nl_sock *sk;
	int family, ret;

	memset(out, 0, sizeof(*out));
	sk = nl_socket_alloc();
	if (!sk)
		return ctl_genl_fail(out, -ENOMEM, "out of memory");
	ret = genl_connect(sk);
	if (ret < 0) {
		ret = ctl_genl_fail(out, ctl_nlerr_errno(ret),
				    "cannot open a generic netlink socket: %s",
				    nl_geterror(ret));
		goto out;
	}
	if (setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVTIMEO, &tv,
		       sizeof(tv))) {
		ret = ctl_genl_fail(out, -errno, "SO_RCVTIMEO: %s",
				    strerror(errno));
		goto out;
	}
	family = genl_ctrl_resolve(sk, FLUXONKV_GENL_NAME);
	if (family < 0) {
		ret = ctl_genl_fail(out, ctl_nlerr_errno(family),
				    "generic netlink family \"%s\" not found: %s",
				    FLUXONKV_GENL_NAME, nl_geterror(family));
		goto out;
	}
	ret = ctl_genl_exchange(sk, family, out);
out:
	nl_socket_free(sk);
	return ret;
}
