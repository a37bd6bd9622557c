/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xport.h - the node-to-node data plane behind one interface.
 *
 * A transport moves value bytes between the segments of two nodes: pull
 * (a remote DRAM replica into a local target) now, push (a staged SSD
 * chunk into a remote target) with the remote SSD path.  Bytes land in
 * the target range of the local segment's writable mapping (the node
 * daemon's privileged mapping, uapi FLUXONKV_IOC_HOLD / FETCH): no
 * intermediate buffer on either side.  A source serves only replicas it
 * can pin by handle (seg->hold), and only to peers that proved the
 * cluster secret.
 *
 * Threads are the transport's business; the caller's single-threaded
 * loop sees completions only through fkv_xport_fd() (readable when some
 * are ready) and fkv_xport_reap(), which runs their callbacks in the
 * caller's thread.  Adding RDMA touches only a new ops table.
 */
#ifndef FLUXOND_XPORT_H
#define FLUXOND_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/fluxonkv.h>

#include "../common/cluster_msg.h"

/* The local segment as a transport sees it. */
struct fkv_seg_view {
	uint8_t *base;		/* writable, shared mapping of the segment */
	uint64_t size;
	/*
	 * Pin the local replica @handle (of @key at @put_id) while it is
	 * sent: 0 with its offset, length and a pin id, or -errno.  Called
	 * from transport threads: must be thread safe.
	 */
	int (*hold)(void *arg, const void *key, size_t key_len,
		    uint64_t handle, uint64_t put_id, uint64_t *off,
		    uint64_t *len, uint64_t *pin);
	void (*release)(void *arg, uint64_t pin);
	/*
	 * Read @len bytes from @off of this node's SSD copy of @key at
	 * @put_id into staging in the segment: 0 with its offset and a pin
	 * (release it), or -errno.  NULL: no SSD tier to push from.  Called
	 * from transport threads, several at once.
	 */
	int (*stage)(void *arg, const void *key, size_t key_len,
		     uint64_t put_id, uint64_t off, uint64_t len,
		     uint64_t *seg_off, uint64_t *value_len, uint64_t *pin);
	/*
	 * A put another node places here (FKV_CCMD_PLACE): allocate its
	 * replica if @ticket (NULL: none came) is the master's for exactly
	 * that put and this node (clusterd.c checks it, -EACCES if not): 0
	 * with its handle, offset and a pin, or -errno.  Then,
	 * once the bytes are in (@status 0) or the transfer failed,
	 * placed() (which releases the pin).  NULL: this node takes no
	 * placements.  Transport threads, several at once.
	 */
	int (*target)(void *arg, const void *key, size_t key_len,
		      uint64_t put_id, uint64_t len, const uint8_t *ticket,
		      uint64_t *handle, uint64_t *off, uint64_t *pin);
	void (*placed)(void *arg, uint64_t handle, uint64_t pin, int status);
	void *arg;
};

/* A remote SSD push moves values in chunks of this size (§5.3)... */
#define FKV_PUSH_CHUNK		FLUXONKV_SSD_CHUNK
/* staged chunks start and end on checksummed MiBs (uapi SSD_STAGE) */
_Static_assert(FKV_PUSH_CHUNK % FLUXONKV_SSD_CSUM_CHUNK == 0,
	       "push chunks are whole checksummed MiBs");
/* ... with at most this many staging reads in flight ... */
#define FKV_PUSH_READS		4
/* ... and this many chunks staged or being read, not yet sent. */
#define FKV_PUSH_QUEUE		8

/* A served connection without a request for this long is closed. */
#define FKV_XPORT_IDLE_MS	60000
/*
 * A requester runs at most this many pull threads (a connection each)
 * over all its peers, and ends one idle for FKV_XPORT_PULL_IDLE_MS.
 */
#define FKV_XPORT_PULL_THREADS	64
#define FKV_XPORT_PULL_IDLE_MS	30000

enum fkv_xfer_kind {
	FKV_XFER_PULL,		/* a remote replica into a local target */
	/*
	 * A put placed on the peer (PUT_PLACE), in two steps: the peer
	 * allocates a target and answers its handle (done() with @fd, a
	 * connection on which the peer now expects exactly @len bytes; the
	 * caller hands it to the module, which sends them), then, after
	 * fkv_xport_place_finish(), the peer's word that every byte is in
	 * (done() again, @fd closed).
	 */
	FKV_XFER_PLACE,
};

/* One pull: the request, then its outcome. */
struct fkv_pull {
	enum fkv_xfer_kind kind;
	unsigned int step;		/* PLACE: 1 (handle), 2 (bytes in) */
	int fd;				/* PLACE: the connection, -1: none */
	char peer[FKV_ADDR_MAX];	/* the source's data address */
	uint8_t key[FLUXONKV_KEY_MAX];
	size_t key_len;
	uint32_t source;		/* FLUXONKV_SOURCE_REMOTE or _SSD */
	uint64_t handle;		/* REMOTE: the source's replica handle;
					 * PLACE: the target's (out) */
	uint64_t put_id;
	uint64_t len;
	uint64_t dst_off;		/* the local target */
	/*
	 * FETCH: CLOCK_MONOTONIC ms after which the module frees the target
	 * (the FETCH's DEADLINE): no byte lands in it later.  0: none.
	 */
	uint64_t until_ms;
	/* PLACE: the master's ticket for it, checked by the target node */
	uint8_t ticket[FKV_MAC_LEN];
	int status;			/* outcome: 0 or -errno */
	/* Runs in the caller's thread from fkv_xport_reap(). */
	void (*done)(struct fkv_pull *p);
	void *arg;
	struct fkv_pull *next;		/* the transport's queues */
};

struct fkv_xport_config {
	const char *listen_host;	/* NULL: no listener (tests) */
	uint16_t listen_port;		/* 0: any; see fkv_xport_port() */
	const char *node_name;		/* ours, proven to sources */
	const void *secret;
	size_t secret_len;
	unsigned int io_timeout_ms;	/* per socket operation; 0 = 5000 */
	unsigned int conns_per_peer;	/* 0 = 4 */
	/* a served connection without a request this long is closed;
	 * 0 = FKV_XPORT_IDLE_MS (tests set less) */
	unsigned int serve_idle_ms;
	/* requester: pull threads over all peers, 0 = FKV_XPORT_PULL_THREADS;
	 * one idle this long ends, 0 = FKV_XPORT_PULL_IDLE_MS */
	unsigned int pull_threads;
	unsigned int pull_idle_ms;
	/*
	 * fkv_xport_rdma: the address whose RDMA device carries the data
	 * (our advertised host); rdma_optional: no usable device is not an
	 * error (transport auto), pulls just stay on TCP.
	 */
	const char *rdma_host;
	bool rdma_optional;
};

struct fkv_xport_stats {
	uint64_t pulls, pull_bytes, pull_errors;
	uint64_t served, served_bytes, serve_errors, auth_refused;
	/* pre-auth: refused at accept (limits), cut at the join deadline */
	uint64_t preauth_refused, handshake_timeouts;
	/* a RELEASE not in by its deadline (the connection closed) */
	uint64_t release_timeouts;
	/* a served value (or push) not read whole by its deadline (closed) */
	uint64_t send_timeouts;
	/* requester: pulled bytes whose end-to-end checksum did not match */
	uint64_t csum_errors;
	/* served connections closed after FKV_XPORT_IDLE_MS without a request */
	uint64_t idle_closed;
	/* connections refused at accept: an address past its share, or the
	 * node's cap */
	uint64_t conns_refused;
	/* requester: pull threads running now (a gauge) and at most so far */
	uint64_t pull_threads, pull_threads_peak;
	/* requester: sources whose JOIN answer failed the secret check */
	uint64_t source_unproven;
	uint64_t pushes, push_chunks, push_bytes, push_errors;
	uint64_t places, place_bytes, place_errors;	/* ours, sent */
	uint64_t targets, target_bytes, target_errors;	/* others', taken */
	uint64_t conns_opened, conns_failed;
	/* RDMA: connections made, pulls whose bytes moved by READ (and the
	 * bytes), READs that failed, pulls and peers moved back to TCP,
	 * pulls served to peers that READ */
	uint64_t rdma_conns, rdma_pulls, rdma_bytes, rdma_errors;
	uint64_t rdma_fallbacks, rdma_served;
};

struct fkv_xport;

struct fkv_xport_ops {
	const char *name;
	int (*start)(struct fkv_xport *x);
	/* Queue @p; its done() runs exactly once.  0 or -errno (not queued). */
	int (*pull)(struct fkv_xport *x, struct fkv_pull *p);
	/* Start step 1 of @p (FKV_XFER_PLACE); done() runs once per step.
	 * 0 or -errno (not started). */
	int (*place)(struct fkv_xport *x, struct fkv_pull *p);
	/* Step 2: wait for the peer's word on @p->fd, then close it. */
	int (*place_finish)(struct fkv_xport *x, struct fkv_pull *p);
	/* End every queued and in-flight pull soon (-ECANCELED or a socket
	 * error); the transport keeps serving and takes new pulls. */
	void (*cancel)(struct fkv_xport *x);
	void (*stop)(struct fkv_xport *x);
};

extern const struct fkv_xport_ops fkv_xport_tcp;
/*
 * TCP connections whose pulls move their bytes by RDMA READ where both
 * ends have a device (xport_rdma.h); TCP for the rest, and for a peer
 * whose RDMA path failed.
 */
extern const struct fkv_xport_ops fkv_xport_rdma;

/*
 * Start a transport serving @seg.  0 or -errno (the listener could not
 * bind, ...).
 */
int fkv_xport_create(struct fkv_xport **out, const struct fkv_xport_ops *ops,
		     const struct fkv_xport_config *cfg,
		     const struct fkv_seg_view *seg);
/* Stop: queued pulls complete with -ECANCELED (reap them first). */
void fkv_xport_destroy(struct fkv_xport *x);
int fkv_xport_pull(struct fkv_xport *x, struct fkv_pull *p);
/*
 * Cancel every pull and reap until none is in flight (or @timeout_ms):
 * afterwards no transport thread writes a target.  Returns the pulls
 * still in flight (0 normally).
 */
unsigned int fkv_xport_cancel(struct fkv_xport *x, int timeout_ms);
/*
 * Place a put on @p->peer (FKV_XFER_PLACE; @key, @put_id, @len set):
 * step 1 ends with @p->handle and @p->fd; after the module sent the bytes
 * on @p->fd, fkv_xport_place_finish() waits for the peer's word (step 2).
 * Dropping a placement after step 1: close @p->fd (the peer drops its
 * target).  0 or -errno (done() will not run).
 */
int fkv_xport_place(struct fkv_xport *x, struct fkv_pull *p);
int fkv_xport_place_finish(struct fkv_xport *x, struct fkv_pull *p);
/* Readable (POLLIN) when completions wait for fkv_xport_reap(). */
int fkv_xport_fd(const struct fkv_xport *x);
/* Run the callbacks of the completed pulls; returns how many. */
unsigned int fkv_xport_reap(struct fkv_xport *x);
/* The port the listener bound (useful with listen_port 0). */
uint16_t fkv_xport_port(const struct fkv_xport *x);
const char *fkv_xport_name(const struct fkv_xport *x);
void fkv_xport_get_stats(struct fkv_xport *x, struct fkv_xport_stats *st);

#endif /* FLUXOND_XPORT_H */
