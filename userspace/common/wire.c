// SPDX-License-Identifier: GPL-2.0
/*
 * wire.c - generic netlink messages over a TCP stream (wire.h).
 *
 * The framing is the netlink header itself: nlmsg_len says how long the
 * message is, nlmsg_type is FKV_WIRE_TYPE.  Messages are built and parsed
 * with libnl exactly as those on the kernel socket (nl.c), so forwarded
 * upcalls decode with the same policies.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "cluster_msg.h"
#include "../common/wire.h"

#define FKV_WIRE_TX_MAX		(4 << 20)

void fkv_wire_init(struct fkv_wire *w, int fd)
{
	int fl = fcntl(fd, F_GETFL);

	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->tx_max = FKV_WIRE_TX_MAX;
	w->rx_max = FKV_WIRE_MAX;
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void fkv_wire_close(struct fkv_wire *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->rx);
	free(w->tx);
	memset(w, 0, sizeof(*w));
	w->fd = -1;
}

static struct nl_msg *wire_msg(uint8_t cmd, struct nl_msg *msg)
{
	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, FKV_WIRE_TYPE, 0, 0,
			 cmd, FLUXONKV_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct nl_msg *fkv_wire_msg_max(uint8_t cmd)
{
	return wire_msg(cmd, nlmsg_alloc_size(FKV_WIRE_MAX));
}

struct nl_msg *fkv_wire_msg_stats(uint8_t cmd)
{
	return wire_msg(cmd, nlmsg_alloc_size(FKV_WIRE_STATS_MAX));
}

struct nl_msg *fkv_wire_msg(uint8_t cmd)
{
	return wire_msg(cmd, nlmsg_alloc());
}

/* Make room for @more bytes after @len in *@buf. */
static int grow(uint8_t **buf, size_t *cap, size_t len, size_t more)
{
	size_t want = len + more, ncap = *cap ? *cap : 4096;
	uint8_t *n;

	if (want <= *cap)
		return 0;
	while (ncap < want)
		ncap *= 2;
	n = realloc(*buf, ncap);
	if (!n)
		return -ENOMEM;
	*buf = n;
	*cap = ncap;
	return 0;
}

int fkv_wire_flush(struct fkv_wire *w)
{
	if (w->tx_off < w->tx_len && w->gate && !w->gate(w->gate_arg))
		return -EAGAIN;		/* held back: see struct fkv_wire */
	while (w->tx_off < w->tx_len) {
		ssize_t n = send(w->fd, w->tx + w->tx_off, w->tx_len - w->tx_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ?
			       -EAGAIN : -errno;
		}
		w->tx_off += (size_t)n;
	}
	w->tx_off = w->tx_len = 0;
	return 0;
}

void fkv_wire_seal(struct fkv_wire *w, fkv_wire_mac_fn mac,
		   const uint8_t tx_key[32], const uint8_t rx_key[32])
{
	w->mac = mac;
	w->tx_seq = w->rx_seq = 0;
	memcpy(w->tx_key, tx_key, sizeof(w->tx_key));
	memcpy(w->rx_key, rx_key, sizeof(w->rx_key));
}

/* Constant time: how many bytes differ does not show in the time taken. */
static bool same_mac(const uint8_t *a, const uint8_t *b)
{
	uint8_t d = 0;
	unsigned int i;

	for (i = 0; i < FKV_MAC_LEN; i++)
		d |= a[i] ^ b[i];
	return !*(volatile uint8_t *)&d;
}

int fkv_wire_send(struct fkv_wire *w, struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	size_t len = nlh->nlmsg_len, total;
	int err;

	_Static_assert(FKV_WIRE_SEAL_LEN == NLA_HDRLEN + FKV_MAC_LEN,
		       "a seal is one FKV_CA_MAC attribute");
	/* libnl keeps messages 4-aligned; a seal must start aligned. */
	if (w->mac && (len & (NLA_ALIGNTO - 1)))
		return -EINVAL;
	total = len + (w->mac ? FKV_WIRE_SEAL_LEN : 0);
	if (w->tx_len - w->tx_off + total > w->tx_max)
		return -ENOBUFS;
	if (w->tx_off && w->tx_off == w->tx_len)
		w->tx_off = w->tx_len = 0;
	err = grow(&w->tx, &w->tx_cap, w->tx_len, total);
	if (err)
		return err;
	memcpy(w->tx + w->tx_len, nlh, len);
	if (w->mac) {
		uint8_t *p = w->tx + w->tx_len;
		struct nlattr seal = { .nla_len = FKV_WIRE_SEAL_LEN,
				       .nla_type = FKV_CA_MAC };
		struct nlmsghdr *copy = (struct nlmsghdr *)p;

		err = w->mac(w->tx_key, w->tx_seq, p + NLMSG_HDRLEN,
			     len - NLMSG_HDRLEN, p + len + NLA_HDRLEN);
		if (err)
			return err;
		memcpy(p + len, &seal, sizeof(seal));
		copy->nlmsg_len = (uint32_t)total;
		w->tx_seq++;
	}
	w->tx_len += total;
	err = fkv_wire_flush(w);
	return err == -EAGAIN ? 0 : err;
}

int fkv_wire_read(struct fkv_wire *w)
{
	ssize_t n;
	int err;

	/* Slide consumed bytes out before reading more. */
	if (w->rx_off) {
		memmove(w->rx, w->rx + w->rx_off, w->rx_len - w->rx_off);
		w->rx_len -= w->rx_off;
		w->rx_off = 0;
	}
	err = grow(&w->rx, &w->rx_cap, w->rx_len, 16384);
	if (err)
		return err;
	n = recv(w->fd, w->rx + w->rx_len, w->rx_cap - w->rx_len,
		 MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN :
		       -errno;
	if (n == 0)
		return -EPIPE;
	w->rx_len += (size_t)n;
	return 0;
}

static int frame(const uint8_t *buf, size_t n, size_t max, size_t *len)
{
	struct nlmsghdr h;

	if (n < sizeof(h))
		return -EAGAIN;
	memcpy(&h, buf, sizeof(h));
	if (h.nlmsg_type != FKV_WIRE_TYPE ||
	    h.nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN ||
	    h.nlmsg_len > max + FKV_WIRE_SEAL_LEN)
		return -EPROTO;
	if (n < h.nlmsg_len)
		return -EAGAIN;
	*len = h.nlmsg_len;
	return 0;
}

int fkv_wire_frame(const uint8_t *buf, size_t n, size_t *len)
{
	return frame(buf, n, FKV_WIRE_MAX, len);
}

struct nlmsghdr *fkv_wire_next(struct fkv_wire *w, int *err)
{
	uint8_t *p = w->rx + w->rx_off;
	size_t len;
	int ret = frame(p, w->rx_len - w->rx_off, w->rx_max, &len);

	*err = ret == -EAGAIN ? 0 : ret;
	if (ret)
		return NULL;
	/*
	 * A frame is exactly nlmsg_len bytes.  libnl pads every message to
	 * 4 bytes; if a peer did not, realign before handing it out.
	 */
	if ((uintptr_t)p & 3) {
		memmove(w->rx, p, w->rx_len - w->rx_off);
		w->rx_len -= w->rx_off;
		w->rx_off = 0;
		p = w->rx;
	}
	if (w->mac) {
		struct nlmsghdr *nlh = (struct nlmsghdr *)p;
		const struct nlattr *seal;
		uint8_t want[FKV_MAC_LEN];

		/* The seal is the last attribute; the MAC covers the rest. */
		seal = (const struct nlattr *)(p + len - FKV_WIRE_SEAL_LEN);
		if (len < NLMSG_HDRLEN + GENL_HDRLEN + FKV_WIRE_SEAL_LEN ||
		    seal->nla_type != FKV_CA_MAC ||
		    seal->nla_len != FKV_WIRE_SEAL_LEN ||
		    w->mac(w->rx_key, w->rx_seq, p + NLMSG_HDRLEN,
			   len - NLMSG_HDRLEN - FKV_WIRE_SEAL_LEN, want) ||
		    !same_mac(want, (const uint8_t *)seal + NLA_HDRLEN)) {
			*err = -EBADMSG;
			return NULL;
		}
		w->rx_seq++;
		nlh->nlmsg_len = (uint32_t)(len - FKV_WIRE_SEAL_LEN);
	}
	w->rx_off += len;
	return (struct nlmsghdr *)p;
}

int fkv_wire_parse(struct nlmsghdr *nlh, struct nlattr **tb,
		   const struct nla_policy *policy)
{
	int err = genlmsg_parse(nlh, 0, tb, FKV_CA_MAX,
				(struct nla_policy *)policy);

	return err < 0 ? -EINVAL : 0;
}

uint8_t fkv_wire_cmd(const struct nlmsghdr *nlh)
{
	return ((const struct genlmsghdr *)nlmsg_data(nlh))->cmd;
}
