/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xport_rdma.h - the RDMA data path of the data plane (rdma-core:
 * librdmacm + libibverbs), used by xport_tcp.c on top of its
 * authenticated TCP connections.
 *
 * Every byte moves by RDMA READ issued by the node that wants it: a
 * requester reads a remote DRAM replica, or each staged chunk of a remote
 * SSD push, straight from the source's segment into its own target.  A
 * node registers its segment once, with no remote access at all; what a
 * peer may read is exposed range by range through type 2 memory windows
 * bound on that peer's own QP, for the pinned replica or staged chunk
 * only, and invalidated when the peer releases it: nobody can write
 * another node's memory, nor read more of it than it was handed.  The TCP
 * connection carries the requests, pins and releases; the RDMA
 * connection that goes with it is set up by librdmacm with a one-time
 * ticket the source handed out on that (secret-checked) TCP connection.
 */
#ifndef FLUXOND_XPORT_RDMA_H
#define FLUXOND_XPORT_RDMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FKV_RDMA_TICKET_LEN	16
/* READs one connection keeps in flight (initiator depth). */
#define FKV_RDMA_DEPTH		4
/* Ranges one served connection exposes at once (memory windows). */
#define FKV_RDMA_WINDOWS	(FKV_RDMA_DEPTH + 1)

struct fkv_rdma;		/* one per transport: device, PD, MR, listener */
struct fkv_rdma_conn;		/* one per requester connection: QP, CQ */

/*
 * Open the RDMA device that carries @host (this node's advertised
 * address), register @base .. @base + @size (the segment's mapping) for
 * local writes and remote reads, and listen for ticketed connections on
 * @listen_host:@port.  0 or -errno (-ENODEV: no RDMA device for @host).
 */
int fkv_rdma_open(struct fkv_rdma **out, const char *host,
		  const char *listen_host, uint16_t port, void *base,
		  uint64_t size, unsigned int timeout_ms);
void fkv_rdma_close(struct fkv_rdma *r);
/* The device's name ("rxe0", "mlx5_0"), for logs. */
const char *fkv_rdma_device(const struct fkv_rdma *r);
/* False once the device went away or failed: everything is TCP then. */
bool fkv_rdma_usable(const struct fkv_rdma *r);

/*
 * Source side: a ticket for one requester connection.  0 or -errno.
 * fkv_rdma_offer_end() when that TCP connection ends: its RDMA
 * connection, if one was made, is torn down.
 */
int fkv_rdma_offer(struct fkv_rdma *r, uint8_t ticket[FKV_RDMA_TICKET_LEN]);
void fkv_rdma_offer_end(struct fkv_rdma *r,
			const uint8_t ticket[FKV_RDMA_TICKET_LEN]);
/*
 * Let the peer of @ticket's connection READ @len bytes at our segment
 * offset @off: bind a memory window over them on its QP (remote read
 * only; no other QP can use it).  0 with the address and key to hand
 * over, or -errno (no RDMA connection yet, no free window, bind failed:
 * send the bytes over TCP instead).  fkv_rdma_unexpose() once the peer
 * released them: the key is dead from then on.
 */
int fkv_rdma_expose(struct fkv_rdma *r,
		    const uint8_t ticket[FKV_RDMA_TICKET_LEN], uint64_t off,
		    uint64_t len, uint64_t *addr, uint32_t *rkey);
void fkv_rdma_unexpose(struct fkv_rdma *r,
		       const uint8_t ticket[FKV_RDMA_TICKET_LEN], uint32_t rkey);

/* Requester side: connect to @host:@port presenting @ticket.  0 or -errno. */
int fkv_rdma_connect(struct fkv_rdma *r, const char *host, uint16_t port,
		     const uint8_t ticket[FKV_RDMA_TICKET_LEN],
		     struct fkv_rdma_conn **out);
void fkv_rdma_disconnect(struct fkv_rdma_conn *c);
/*
 * Stop @c at once (from any thread): its QP goes to the error state, so
 * its posted READs end (flushed) and no more bytes land in our targets
 * once they are reaped.  fkv_rdma_conn_fail() also reaps them (the
 * thread that posts on @c): when it returns nothing of @c writes our
 * memory any more.  @c stays allocated (not ok) until disconnected.
 */
void fkv_rdma_conn_abort(struct fkv_rdma_conn *c);
void fkv_rdma_conn_fail(struct fkv_rdma_conn *c);
/* False after an error on the connection (QP error, device gone). */
bool fkv_rdma_conn_ok(const struct fkv_rdma_conn *c);
/*
 * Post a READ of @len bytes at the peer's @raddr (a window it exposed
 * with @rkey) into our segment at @loff, tagged @tag; at most
 * FKV_RDMA_DEPTH posted and not reaped.  0 or -errno.
 */
int fkv_rdma_read(struct fkv_rdma_conn *c, uint64_t tag, uint64_t loff,
		  uint64_t raddr, uint32_t rkey, uint64_t len);
/*
 * The same for @len bytes from @raddr as one post list of READs of at
 * most @piece bytes each (at most FKV_RDMA_DEPTH of them), only the last
 * one signalled: reliable connections complete in order, so its one
 * completion (tag @tag) says the whole range is in.  Counts as one READ
 * in flight.  0 or -errno.
 */
int fkv_rdma_read_range(struct fkv_rdma_conn *c, uint64_t tag, uint64_t loff,
			uint64_t raddr, uint32_t rkey, uint64_t len,
			uint64_t piece);
/*
 * Wait (at most @timeout_ms) for the next completion: 0 with its @tag,
 * -errno of a failed READ (the connection is no longer ok, *@tag set),
 * -ETIMEDOUT.
 */
int fkv_rdma_reap(struct fkv_rdma_conn *c, int timeout_ms, uint64_t *tag);
/* READs posted and not reaped. */
unsigned int fkv_rdma_inflight(const struct fkv_rdma_conn *c);

#endif /* FLUXOND_XPORT_RDMA_H */
