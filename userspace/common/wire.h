/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wire.h - generic netlink messages over a TCP stream (cluster.h): build,
 * frame, queue for sending, reassemble and parse.  Non-blocking: the
 * caller's poll loop calls fkv_wire_read() on POLLIN and fkv_wire_flush()
 * on POLLOUT; nothing here waits.
 */
#ifndef FKV_WIRE_H
#define FKV_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nl_msg;
struct nlmsghdr;
struct nlattr;
struct nla_policy;

/*
 * A sealed connection's MAC of message @seq: @len bytes at @buf (its genl
 * header and attributes) under @key; 0 or -errno.  auth.c's fkv_auth_seal;
 * a pointer, so that this file needs no crypto library (fluxonctl).
 */
typedef int (*fkv_wire_mac_fn)(const uint8_t *key, uint64_t seq,
			       const void *buf, size_t len, uint8_t *mac);

/* What a seal adds to a message: the FKV_CA_MAC attribute, last. */
#define FKV_WIRE_SEAL_LEN	36

struct fkv_wire {
	int fd;
	uint8_t *rx;		/* received, not yet consumed */
	size_t rx_len, rx_cap, rx_off;
	uint8_t *tx;		/* queued, not yet written */
	size_t tx_len, tx_cap, tx_off;
	size_t tx_max;		/* fkv_wire_send refuses beyond this */
	size_t rx_max;		/* longest message read (FKV_WIRE_MAX) */
	/* sealed (fkv_wire_seal): every message carries a MAC, in order */
	fkv_wire_mac_fn mac;
	uint64_t tx_seq, rx_seq;
	uint8_t tx_key[32], rx_key[32];
	/*
	 * Optional: while gate(gate_arg) says no, nothing is written (the
	 * bytes stay queued).  A master that lost its etcd lease mid-turn
	 * sends nothing more to its nodes (cluster_ctl.h, may_send).
	 */
	bool (*gate)(void *gate_arg);
	void *gate_arg;
};

/* Take over @fd (made non-blocking). */
void fkv_wire_init(struct fkv_wire *w, int fd);
/* Close the fd and free the buffers. */
void fkv_wire_close(struct fkv_wire *w);

/*
 * Seal the connection from here on: every message sent gets FKV_CA_MAC =
 * @mac(@tx_key, its sequence number, genl header and attributes) as its
 * last attribute, and every message read must end with the right one for
 * @rx_key and the next sequence number (fkv_wire_next strips it).
 */
void fkv_wire_seal(struct fkv_wire *w, fkv_wire_mac_fn mac,
		   const uint8_t tx_key[32], const uint8_t rx_key[32]);

/* A message of @cmd for the wire; NULL on allocation failure. */
struct nl_msg *fkv_wire_msg(uint8_t cmd);
/* The same with room for a message up to FKV_WIRE_MAX (DROPS) ... */
struct nl_msg *fkv_wire_msg_max(uint8_t cmd);
/* ... or up to FKV_WIRE_STATS_MAX (the control socket's STATS). */
struct nl_msg *fkv_wire_msg_stats(uint8_t cmd);

/*
 * Queue @msg (not consumed) and write what the socket takes now.
 * 0, -ENOBUFS (more than tx_max queued: the peer does not read), or the
 * write's -errno.
 */
int fkv_wire_send(struct fkv_wire *w, struct nl_msg *msg);
/* Write queued bytes: 0 (all written), -EAGAIN (more left), -errno. */
int fkv_wire_flush(struct fkv_wire *w);
static inline bool fkv_wire_pending(const struct fkv_wire *w)
{
	return w->tx_len > w->tx_off;
}

/*
 * Read what the socket has.  0 on progress, -EAGAIN if nothing, -EPIPE at
 * end of stream, -errno.
 */
int fkv_wire_read(struct fkv_wire *w);
/*
 * The next complete message, valid until the next fkv_wire_* call on @w;
 * NULL if none is complete yet.  *@err = -EPROTO for a stream that can
 * no longer be framed (bad type, length below a genl header or above
 * rx_max: FKV_WIRE_MAX unless the caller raised it), or -EBADMSG for a message of a sealed connection whose
 * seal is missing or wrong: the caller closes the connection.
 */
struct nlmsghdr *fkv_wire_next(struct fkv_wire *w, int *err);

/*
 * Check a buffer as fkv_wire_next() does: 0 and *@len the message length
 * when a whole message starts at @buf, -EAGAIN when more bytes are needed,
 * -EPROTO.  For the fuzzer and tests.
 */
int fkv_wire_frame(const uint8_t *buf, size_t n, size_t *len);

/* Parse the attributes of @nlh with @policy (maxattr FKV_CA_MAX). */
int fkv_wire_parse(struct nlmsghdr *nlh, struct nlattr **tb,
		   const struct nla_policy *policy);
uint8_t fkv_wire_cmd(const struct nlmsghdr *nlh);

#endif /* FKV_WIRE_H */
