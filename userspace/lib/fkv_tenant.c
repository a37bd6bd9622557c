// SPDX-License-Identifier: GPL-2.0
/*
 * libfluxonkv tenants: a tenant's name to its id over fluxond's local
 * control socket (FKV_CCMD_TENANT, userspace/common/cluster_msg.h), and
 * fkv_open_tenant() = resolve + fkv_open() + fkv_bind_tenant().
 *
 * The control socket speaks the daemon's wire codec: one generic netlink
 * message (nlmsghdr of type FKV_WIRE_TYPE, a genl header, attributes) on
 * a UNIX stream socket, one request per connection.  The library does not
 * link libnl: the request is one string attribute, the answer two u32s,
 * both encoded here by hand.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <fluxonkv.h>

#include "../common/cluster_msg.h"

/* How long fkv_tenant_id() waits for the daemon's answer. */
#define FKV_TENANT_TIMEOUT_MS	10000

static int64_t fkv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The request: TENANT { TENANT_NAME = @name }; its length, or -EINVAL. */
static int fkv_tenant_request(unsigned char *buf, size_t cap, const char *name,
			      size_t name_len)
{
	struct nlmsghdr nlh;
	struct genlmsghdr g;
	struct nlattr a;
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN, total;

	a.nla_len = NLA_HDRLEN + name_len + 1;
	a.nla_type = FKV_CA_TENANT_NAME;
	total = off + NLA_ALIGN(a.nla_len);
	if (total > cap)
		return -EINVAL;
	memset(buf, 0, total);
	memset(&nlh, 0, sizeof(nlh));
	nlh.nlmsg_len = total;
	nlh.nlmsg_type = FKV_WIRE_TYPE;
	memcpy(buf, &nlh, sizeof(nlh));
	memset(&g, 0, sizeof(g));
	g.cmd = FKV_CCMD_TENANT;
	g.version = FLUXONKV_GENL_VERSION;
	memcpy(buf + NLMSG_HDRLEN, &g, sizeof(g));
	memcpy(buf + off, &a, sizeof(a));
	memcpy(buf + off + NLA_HDRLEN, name, name_len);	/* NUL: memset */
	return total;
}

/*
 * The answer in @buf (@len bytes, one whole message): 0 and *@id, the
 * daemon's -errno, or -EBADMSG for anything that is not a TENANT answer.
 */
static int fkv_tenant_answer(const unsigned char *buf, size_t len,
			     uint32_t *id)
{
	struct nlmsghdr nlh;
	struct genlmsghdr g;
	size_t off = NLMSG_HDRLEN + GENL_HDRLEN;
	bool have_status = false, have_id = false;
	int32_t status = 0;
	uint32_t tid = 0;

	memcpy(&nlh, buf, sizeof(nlh));
	memcpy(&g, buf + NLMSG_HDRLEN, sizeof(g));
	if (nlh.nlmsg_type != FKV_WIRE_TYPE || g.cmd != FKV_CCMD_TENANT)
		return -EBADMSG;
	while (off + NLA_HDRLEN <= len) {
		struct nlattr a;
		size_t plen;

		memcpy(&a, buf + off, sizeof(a));
		if (a.nla_len < NLA_HDRLEN || a.nla_len > len - off)
			return -EBADMSG;
		plen = a.nla_len - NLA_HDRLEN;
		switch (a.nla_type & NLA_TYPE_MASK) {
		case FLUXONKV_A_STATUS:
			if (plen < sizeof(status))
				return -EBADMSG;
			memcpy(&status, buf + off + NLA_HDRLEN, sizeof(status));
			have_status = true;
			break;
		case FKV_CA_TENANT_ID:
			if (plen < sizeof(tid))
				return -EBADMSG;
			memcpy(&tid, buf + off + NLA_HDRLEN, sizeof(tid));
			have_id = true;
			break;
		}
		off += NLA_ALIGN(a.nla_len);
	}
	if (!have_status || status > 0)
		return -EBADMSG;
	if (status)
		return status;
	if (!have_id || !tid || tid > FLUXONKV_TENANT_ID_MAX)
		return -EBADMSG;
	*id = tid;
	return 0;
}

/* Read one whole message into @buf (@cap bytes); its length or -errno. */
static int fkv_tenant_recv(int fd, unsigned char *buf, size_t cap)
{
	int64_t deadline = fkv_now_ms() + FKV_TENANT_TIMEOUT_MS;
	size_t have = 0, want = NLMSG_HDRLEN + GENL_HDRLEN;
	struct nlmsghdr nlh;
	ssize_t n;

	while (have < want) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - fkv_now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return -ETIMEDOUT;
		n = recv(fd, buf + have, cap - have, 0);
		if (n < 0 && errno == EINTR)
			continue;
		/* reset mid-request: no daemon to ask, as for no socket */
		if (n < 0)
			return errno == ECONNRESET ? -ENOTCONN : -errno;
		/*
		 * Closed without an answer: a daemon that does not know
		 * TENANT (it predates tenants) answers nothing.
		 */
		if (!n)
			return -EOPNOTSUPP;
		have += n;
		if (have >= NLMSG_HDRLEN) {
			memcpy(&nlh, buf, sizeof(nlh));
			if (nlh.nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN ||
			    nlh.nlmsg_len > cap)
				return -EBADMSG;
			want = nlh.nlmsg_len;
		}
	}
	return (int)want;
}

static const char *fkv_control_path(const char *ctl_path)
{
	const char *env;

	if (ctl_path)
		return ctl_path;
	env = secure_getenv("FLUXOND_CONTROL");
	return env && *env ? env : FKV_CONTROL_PATH;
}

int fkv_tenant_id(const char *ctl_path, const char *name, uint32_t *id)
{
	unsigned char buf[4096];
	struct sockaddr_un sun;
	size_t name_len;
	const char *path;
	int fd, len, err;

	if (!name || !id)
		return -EINVAL;
	name_len = strlen(name);
	if (!name_len || name_len > FKV_TENANT_NAME_MAX)
		return -EINVAL;
	if (!strcmp(name, FKV_TENANT_DEFAULT)) {
		*id = 0;
		return 0;
	}
	path = fkv_control_path(ctl_path);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);

	len = fkv_tenant_request(buf, sizeof(buf), name, name_len);
	if (len < 0)
		return len;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do {
		err = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	} while (err < 0 && errno == EINTR);
	if (err < 0) {
		/* no socket, or no one listening on it: no daemon */
		err = errno == EACCES || errno == EPERM ? -EACCES : -ENOTCONN;
		goto out;
	}
	if (send(fd, buf, len, MSG_NOSIGNAL) != len) {
		err = -ENOTCONN;
		goto out;
	}
	len = fkv_tenant_recv(fd, buf, sizeof(buf));
	err = len < 0 ? len : fkv_tenant_answer(buf, len, id);
out:
	close(fd);
	return err;
}

int fkv_open_tenant(const char *dev, const char *name, struct fkv **out)
{
	uint32_t id = 0;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (name) {
		err = fkv_tenant_id(NULL, name, &id);
		if (err)
			return err;
	}
	err = fkv_open(dev, out);
	if (err || !id)
		return err;
	err = fkv_bind_tenant(*out, id);
	if (err) {
		fkv_close(*out);
		*out = NULL;
	}
	return err;
}
