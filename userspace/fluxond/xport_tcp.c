// SPDX-License-Identifier: GPL-2.0
/*
 * xport_tcp.c - the TCP data plane (xport.h).
 *
 * Requester side: one queue per peer address, served by up to
 * conns_per_peer threads, each with its own connection: many pulls are in
 * flight per peer, and a slow or dead peer ties up only its own threads.
 * At most pull_threads (FKV_XPORT_PULL_THREADS) run over all peers: a
 * peer that needs its first thread while all are taken waits in a FIFO,
 * and a thread that ends (idle for pull_idle_ms, or after a pull while
 * peers wait) hands its place to the first waiting peer.
 * A pull writes a PULL message and receives the answer, then recv()s the
 * payload straight into the target in the segment mapping.
 *
 * Source side: a listener thread; one thread per accepted connection.  A
 * connection starts with the join's challenge (cluster.h: HELLO with a
 * nonce, JOIN with the HMAC of the secret); then each PULL pins the
 * replica by handle (seg->hold), send()s it from the mapping and unpins.
 * A PULL with SOURCE=REMOTE_SSD is a push from this node's SSD (§5.3):
 * FKV_PUSH_READS reader threads stage FKV_PUSH_CHUNK chunks into the
 * segment (seg->stage), at most FKV_PUSH_QUEUE ahead of the sender, and
 * each chunk goes out as soon as it is read, in order, with its own
 * header {STATUS, OFFSET, LEN}: a failed read ends the push with its errno
 * and the requester never completes a half-filled target.
 *
 * Every socket operation has a timeout (SO_RCVTIMEO / SO_SNDTIMEO); a
 * connection that fails is closed and its pull completed with the error.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <endian.h>
#include <xxhash.h>

#include "auth.h"
#include "fluxonkv_config.h"
#include "log.h"
#include "netaddr.h"
#include "../common/wire.h"
#include "xport_int.h"
#include "xport_rdma.h"

struct tcp_peer {
	struct tcp_peer *next;
	struct fkv_xport *x;
	char addr[FKV_ADDR_MAX];
	pthread_mutex_t lock;		/* protects the queue and stop */
	pthread_cond_t cond;
	struct fkv_pull *head, **tail;
	bool stop;
	unsigned int cancel_gen;	/* bumped by each cancel (lock) */
	/* its threads (detached): changed under the priv lock and this one */
	unsigned int nthreads;
	unsigned int idle;		/* threads waiting for a pull (lock) */
	/* waiting for a first thread, in the priv's FIFO (priv lock) */
	bool waiting;
	struct tcp_peer *wait_next;
	int fds[16];			/* each thread's connection, -1: none */
	struct fkv_rdma_conn *rcs[16];	/* ... and its RDMA path, or NULL */
	/* RDMA failed with this peer: TCP only until then (ms, atomic) */
	uint64_t rdma_off_until;
};

/* A peer whose RDMA path failed is tried again after this long. */
#define FKV_RDMA_RETRY_MS	30000

struct tcp_conn {			/* a served connection */
	struct tcp_conn *next;
	struct fkv_xport *x;
	int fd;
	pthread_t thread;
	struct sockaddr_storage addr;	/* the peer's */
	uint64_t joined_by_ms;		/* the handshake's deadline */
	int preauth;			/* its pre-auth slot until joined, or -1 */
	bool done;			/* the thread finished (priv lock) */
	bool rdma;			/* the requester may READ: a ticket out */
	uint8_t ticket[FKV_TICKET_LEN];
};

/* Served connections at once; more are refused until some end. */
#define FKV_TCP_CONNS_MAX	256
/*
 * ... and from one address: a bit over a quarter, what a member opens in
 * a burst (4 pull connections and FKV_TCP_PLACES_MAX = 64
 * placements), so that one member, or whoever holds its address, cannot
 * take every slot from the others.  More are closed at accept.
 */
#define FKV_TCP_CONNS_PER_ADDR	68
/*
 * Before a peer proved the secret: at most this many connections in the
 * handshake at once, this many from one address, each given the socket
 * timeout from accept to a whole JOIN (not per read: a peer trickling a
 * byte at a time is cut at the deadline).  Whoever lacks the secret
 * therefore holds at most FKV_TCP_PREAUTH_MAX of the served connections,
 * each for one timeout, and one address at most FKV_TCP_PREAUTH_PER_ADDR.
 */
#define FKV_TCP_PREAUTH_MAX	64
/* (a member opens up to 4 pull and 64 placement connections in a burst) */
#define FKV_TCP_PREAUTH_PER_ADDR	16
/*
 * SSD pushes served at once: each stages up to FKV_PUSH_QUEUE chunks in
 * this node's segment, and making room for staging evicts its DRAM.
 */
#define FKV_TCP_PUSHES_MAX	2

struct tcp_priv {
	int lfd;
	pthread_t accept_thread;
	bool accepting;
	pthread_mutex_t lock;		/* protects peers, conns, nconns,
					 * pushes, stopping */
	pthread_cond_t push_cond;	/* a push slot came free */
	struct tcp_peer *peers;
	struct tcp_conn *conns;
	unsigned int nconns;		/* conns whose thread still runs */
	unsigned int pushes;		/* pushes being served */
	unsigned int placing;		/* placement threads running */
	pthread_cond_t place_cond;	/* placing dropped to 0 */
	/*
	 * Pull threads (lock): those counted against cfg.pull_threads, and
	 * those not yet returned (pull_cond when that drops to 0); peers
	 * waiting for a thread, first come first served (nwait is read
	 * without the lock by threads deciding to give theirs up).
	 */
	unsigned int pull_threads, pull_live, nwait;
	pthread_cond_t pull_cond;
	struct tcp_peer *wait_head, **wait_tail;
	bool stopping;
	bool want_rdma;			/* fkv_xport_rdma */
	struct fkv_rdma *rdma;		/* NULL: TCP only */
	/* connections in the handshake, by peer address (lock) */
	struct sockaddr_storage preauth[FKV_TCP_PREAUTH_MAX];
	bool preauth_used[FKV_TCP_PREAUTH_MAX];
	struct fkv_ratelimit preauth_log;	/* lock */
	struct fkv_ratelimit release_log;	/* lock */
	struct fkv_ratelimit conns_log;		/* lock */
};

/* Placements of ours in flight at once (each a thread and a connection). */
#define FKV_TCP_PLACES_MAX	64

static const struct nla_policy hello_policy[FKV_CA_MAX + 1] = {
	[FKV_CA_NONCE] = { .type = NLA_UNSPEC, .minlen = FKV_NONCE_LEN,
			   .maxlen = FKV_NONCE_LEN },
	[FKV_CA_PROTO] = { .type = NLA_U32 },
};

static const struct nla_policy join_policy[FKV_CA_MAX + 1] = {
	[FLUXONKV_A_STATUS] = { .type = NLA_U32 },
	[FKV_CA_NONCE] = { .type = NLA_UNSPEC, .minlen = FKV_NONCE_LEN,
			   .maxlen = FKV_NONCE_LEN },
	[FKV_CA_NODE_NAME] = { .type = NLA_STRING,
			       .maxlen = FKV_NODE_NAME_MAX + 1 },
	[FKV_CA_MAC] = { .type = NLA_UNSPEC, .minlen = FKV_MAC_LEN,
			 .maxlen = FKV_MAC_LEN },
};

static const struct nla_policy rdma_policy[FKV_CA_MAX + 1] = {
	[FLUXONKV_A_STATUS] = { .type = NLA_U32 },
	[FKV_CA_TICKET] = { .type = NLA_UNSPEC, .minlen = FKV_TICKET_LEN,
			    .maxlen = FKV_TICKET_LEN },
	[FKV_CA_ADDR] = { .type = NLA_U64 },
	[FKV_CA_RKEY] = { .type = NLA_U32 },
};

static const struct nla_policy pull_policy[FKV_CA_MAX + 1] = {
	[FKV_CA_RDMA] = { .type = NLA_U32 },
	[FKV_CA_ADDR] = { .type = NLA_U64 },
	[FKV_CA_RKEY] = { .type = NLA_U32 },
	[FLUXONKV_A_REQ_ID] = { .type = NLA_U64 },
	[FLUXONKV_A_STATUS] = { .type = NLA_U32 },
	[FLUXONKV_A_KEY] = { .type = NLA_UNSPEC, .minlen = 1,
			     .maxlen = FLUXONKV_KEY_MAX },
	[FLUXONKV_A_HANDLE] = { .type = NLA_U64 },
	[FLUXONKV_A_PUT_ID] = { .type = NLA_U64 },
	[FLUXONKV_A_LEN] = { .type = NLA_U64 },
	[FLUXONKV_A_SOURCE] = { .type = NLA_U32 },
	[FLUXONKV_A_OFFSET] = { .type = NLA_U64 },
	[FKV_CA_PLACE_TICKET] = { .type = NLA_UNSPEC, .minlen = FKV_MAC_LEN,
				  .maxlen = FKV_MAC_LEN },
	[FKV_CA_CSUM] = { .type = NLA_U64 },
};

/*
 * End-to-end checksums of the bytes a pull or a push moves (issue 29):
 * the source sums what it sends -- a replica it holds pinned, or a chunk
 * it staged from its SSD (which the module checked against the entry's
 * own xxh64s on the read) -- and every answer that carries bytes carries
 * the sum (FKV_CA_CSUM); the requester sums what landed in its target
 * before it answers the module's FETCH.  A torn, misplaced or altered
 * transfer (TCP or RDMA) ends the pull with -EBADMSG (the master keeps
 * the route: it says nothing about the source's copy; the module
 * re-selects), never with wrong bytes.  XXH3-64: tens of GB/s natively.
 * An answer with bytes but no sum is -EPROTO (a fluxond from before).
 */
static uint64_t data_sum(const void *p, uint64_t len)
{
	return XXH3_64bits(p, (size_t)len);
}

/* @len bytes at @off in our segment are what the source summed (@want). */
static int sum_check(struct fkv_xport *x, uint64_t off, uint64_t len,
		     uint64_t want)
{
	if (data_sum(x->seg.base + off, len) == want)
		return 0;
	FKV_XCOUNT(x, csum_errors, 1);
	return -EBADMSG;
}

/* ---- blocking socket helpers (transport threads only) ---- */

static int sock_err(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * @n bytes, or -ETIMEDOUT once @deadline_ms (CLOCK_MONOTONIC; 0: none)
 * passed: SO_RCVTIMEO bounds each wait, this bounds a peer that trickles.
 */
static int read_until(int fd, void *buf, size_t n, uint64_t deadline_ms)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t got = recv(fd, p, n, MSG_WAITALL);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return sock_err();
		}
		if (got == 0)
			return -ECONNRESET;
		p += got;
		n -= (size_t)got;
		if (n && deadline_ms && mono_ms() > deadline_ms)
			return -ETIMEDOUT;
	}
	return 0;
}

/* Until @fd has something to read, or -ETIMEDOUT at @deadline_ms. */
static int wait_readable(int fd, uint64_t deadline_ms)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = mono_ms();
		int n;

		if (now >= deadline_ms)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(deadline_ms - now));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* A pull may take the socket timeout plus a second per MiB (1 MiB/s). */
static uint64_t pull_deadline(const struct fkv_xport *x, uint64_t len)
{
	return mono_ms() + x->cfg.io_timeout_ms + (len >> 20) * 1000;
}

/* A pull's deadline: the one above, or its target's end if sooner. */
static uint64_t pull_until(const struct fkv_xport *x, const struct fkv_pull *p)
{
	uint64_t d = pull_deadline(x, p->len);

	return p->until_ms && p->until_ms < d ? p->until_ms : d;
}

/*
 * The RELEASE of a range we exposed (a window over a pinned replica or a
 * staged chunk) is due by the requester's own READ deadline for it (the
 * socket timeout plus a second per MiB of the value, from when it got
 * the announcement) plus one more socket timeout for the RELEASE to
 * come: with the default 5 s timeout, 10 s + 1 s per MiB after we
 * announced it.  At that deadline the window is invalidated, the pin
 * dropped (a push's slot freed) and the connection closed, however the
 * requester trickles.
 */
static uint64_t release_deadline(const struct fkv_xport *x, uint64_t len)
{
	return pull_deadline(x, len) + x->cfg.io_timeout_ms;
}

/*
 * @n bytes of a message by @deadline_ms exactly: each wait is a poll()
 * for what is left of the deadline, not a socket timeout, so a peer that
 * trickles a byte at a time is cut when it is due, not a timeout later.
 */
static int read_by(int fd, void *buf, size_t n, uint64_t deadline_ms)
{
	uint8_t *p = buf;

	while (n) {
		int err = wait_readable(fd, deadline_ms);
		ssize_t got;

		if (err)
			return err;
		got = recv(fd, p, n, MSG_DONTWAIT);
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == EWOULDBLOCK)
				continue;
			return -errno;
		}
		if (got == 0)
			return -ECONNRESET;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

/* Until @fd takes more bytes, or -ETIME at @deadline_ms. */
static int wait_writable(int fd, uint64_t deadline_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	for (;;) {
		uint64_t now = mono_ms();
		int n;

		if (now >= deadline_ms)
			return -ETIME;
		n = poll(&pfd, 1, (int)(deadline_ms - now));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * @n bytes, whole by @deadline_ms (CLOCK_MONOTONIC; 0: each send's socket
 * timeout only): a requester that reads a little now and then lets every
 * send progress within the socket timeout, so only a deadline on the
 * whole bounds how long it holds a serving thread and a pinned replica.
 * -ETIME once it passed.  @flags: MSG_MORE for a header whose payload
 * follows at once.
 */
static int write_by(int fd, const void *buf, size_t n, int flags,
		    uint64_t deadline_ms)
{
	const uint8_t *p = buf;

	if (deadline_ms)
		flags |= MSG_DONTWAIT;
	while (n) {
		ssize_t put;

		if (deadline_ms) {
			int err = wait_writable(fd, deadline_ms);

			if (err)
				return err;
		}
		put = send(fd, p, n, MSG_NOSIGNAL | flags);
		if (put < 0) {
			if (errno == EINTR || (deadline_ms &&
					       (errno == EAGAIN ||
						errno == EWOULDBLOCK)))
				continue;
			return sock_err();
		}
		p += put;
		n -= (size_t)put;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
	return write_by(fd, buf, n, 0, 0);
}

/*
 * A value not read whole by its deadline: reset the connection now (a
 * connect() to AF_UNSPEC disconnects a TCP socket, tcp_disconnect(): RST,
 * the queued bytes dropped) rather than leave the megabytes already
 * queued to trickle out behind a FIN.  The fd stays ours until reaped.
 */
static void send_timed_out(struct fkv_xport *x, int fd)
{
	struct sockaddr sa = { .sa_family = AF_UNSPEC };

	FKV_XCOUNT(x, send_timeouts, 1);
	if (connect(fd, &sa, sizeof(sa)))
		shutdown(fd, SHUT_RDWR);
}

static int send_msg(int fd, struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	return write_full(fd, nlh, nlh->nlmsg_len);
}

/*
 * Send @msg if it was built whole (@built: allocated and every attribute
 * put), -ENOMEM otherwise; frees it either way.
 */
static int send_free(int fd, struct nl_msg *msg, bool built)
{
	int err = built ? send_msg(fd, msg) : -ENOMEM;

	nlmsg_free(msg);
	return err;
}

/*
 * Read one framed message into @buf (FKV_WIRE_MAX bytes) and parse it
 * with @policy: 0, -EPROTO (bad frame, unexpected command, bad
 * attributes) or a socket error.
 */
/* Bit of cluster command @c in a recv_any() mask. */
#define CMD_BIT(c)	(1U << ((c) - FKV_CCMD_HELLO))

static int recv_until(int fd, uint8_t *buf, uint32_t cmds,
		      const struct nla_policy *policy, struct nlattr **tb,
		      uint8_t *got, uint64_t deadline_ms);

static int recv_msg(int fd, uint8_t *buf, uint8_t cmd,
		    const struct nla_policy *policy, struct nlattr **tb)
{
	return recv_until(fd, buf, CMD_BIT(cmd), policy, tb, NULL, 0);
}

/* The same, for a message of any command in @cmds (in *@got). */
static int recv_any(int fd, uint8_t *buf, uint32_t cmds,
		    const struct nla_policy *policy, struct nlattr **tb,
		    uint8_t *got)
{
	return recv_until(fd, buf, cmds, policy, tb, got, 0);
}

/* ... whole by @deadline_ms (CLOCK_MONOTONIC; 0: each read's timeout only). */
static int recv_until(int fd, uint8_t *buf, uint32_t cmds,
		      const struct nla_policy *policy, struct nlattr **tb,
		      uint8_t *got, uint64_t deadline_ms)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	size_t len;
	int err;

	err = deadline_ms ? read_by(fd, buf, sizeof(*nlh), deadline_ms) :
			    read_until(fd, buf, sizeof(*nlh), 0);
	if (err)
		return err;
	/* @buf holds FKV_WIRE_MAX: the data port seals nothing. */
	if (fkv_wire_frame(buf, sizeof(*nlh), &len) == -EPROTO ||
	    nlh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN ||
	    nlh->nlmsg_len > FKV_WIRE_MAX)
		return -EPROTO;
	len = nlh->nlmsg_len - sizeof(*nlh);
	err = deadline_ms ? read_by(fd, buf + sizeof(*nlh), len, deadline_ms) :
			    read_until(fd, buf + sizeof(*nlh), len, 0);
	if (err)
		return err;
	if (fkv_wire_cmd(nlh) < FKV_CCMD_HELLO ||
	    fkv_wire_cmd(nlh) >= FKV_CCMD_HELLO + 32 ||
	    !(cmds & CMD_BIT(fkv_wire_cmd(nlh))) ||
	    fkv_wire_parse(nlh, tb, policy))
		return -EPROTO;
	if (got)
		*got = fkv_wire_cmd(nlh);
	return 0;
}

static void set_timeouts(int fd, unsigned int ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- requester side ---- */

/* tcp_pull_one(): RDMA failed, the pull must be done again over TCP. */
#define FKV_RDMA_FALLBACK	1
/* tcp_pull_one(): done, but the source sent (some) bytes inline although
 * we asked RDMA: it could not expose them (its device is gone?). */
#define FKV_RDMA_INLINE		2

static int wire_status(struct nlattr *a);

/*
 * Ask the source of connection @fd for an RDMA path and make it.  0 with
 * *@rc; -errno with *@fd_ok (the TCP stream is still in step).
 */
static int rdma_negotiate(struct fkv_xport *x, int fd, uint8_t *buf,
			  const char *addr, struct fkv_rdma_conn **rc,
			  bool *fd_ok)
{
	struct tcp_priv *t = x->priv;
	struct nlattr *tb[FKV_CA_MAX + 1];
	char host[FKV_ADDR_MAX];
	struct nl_msg *msg;
	uint16_t port;
	int err;

	*fd_ok = false;
	msg = fkv_wire_msg(FKV_CCMD_RDMA);
	err = send_free(fd, msg, msg != NULL);
	if (!err)
		err = recv_msg(fd, buf, FKV_CCMD_RDMA, rdma_policy, tb);
	if (err)
		return err;
	*fd_ok = true;
	err = wire_status(tb[FLUXONKV_A_STATUS]);
	if (err)
		return err;
	if (!tb[FKV_CA_TICKET] ||
	    fkv_parse_hostport(addr, host, sizeof(host), &port, NULL, 0))
		return -EPROTO;
	err = fkv_rdma_connect(t->rdma, host, port, nla_data(tb[FKV_CA_TICKET]),
			       rc);
	if (!err)
		FKV_XCOUNT(x, rdma_conns, 1);
	return err;
}

/* Pulls from @peer stay on TCP for a while: its RDMA path failed. */
static void rdma_failed(struct fkv_xport *x, struct tcp_peer *peer, int err,
			const char *what)
{
	FKV_XCOUNT(x, rdma_fallbacks, 1);
	__atomic_store_n(&peer->rdma_off_until, mono_ms() + FKV_RDMA_RETRY_MS,
			 __ATOMIC_RELEASE);
	fkv_warn("data plane: RDMA to %s %s (%s): TCP for %u s",
		 peer->addr, what, strerror(-err), FKV_RDMA_RETRY_MS / 1000);
}

static int tcp_dial_plain(struct fkv_xport *x, const char *addr, uint8_t *buf);

/*
 * Connect to @peer and prove the secret; with @rc (an RDMA transport and
 * the peer not in TCP-only time) also make the RDMA path, *@rc NULL if
 * there is none.  fd or -errno.
 */
/*
 * Give connection @fd to @peer an RDMA path (*@rc) if we have a device
 * and the peer is not in its TCP-only time.  0, or -errno when @fd is
 * no longer usable (close it).
 */
static int rdma_attach(struct fkv_xport *x, struct tcp_peer *peer, int fd,
		       uint8_t *buf, struct fkv_rdma_conn **rc)
{
	struct tcp_priv *t = x->priv;
	bool fd_ok;
	int err;

	*rc = NULL;
	if (!t->rdma || !fkv_rdma_usable(t->rdma) ||
	    mono_ms() < __atomic_load_n(&peer->rdma_off_until, __ATOMIC_ACQUIRE))
		return 0;
	err = rdma_negotiate(x, fd, buf, peer->addr, rc, &fd_ok);
	if (err == -EOPNOTSUPP) {
		/* The peer has no RDMA: not a failure, but ask again later. */
		__atomic_store_n(&peer->rdma_off_until,
				 mono_ms() + FKV_RDMA_RETRY_MS, __ATOMIC_RELEASE);
	} else if (err) {
		rdma_failed(x, peer, err, "could not connect");
	}
	return fd_ok ? 0 : err;
}

static int tcp_dial(struct fkv_xport *x, struct tcp_peer *peer, uint8_t *buf,
		    struct fkv_rdma_conn **rc)
{
	int fd = tcp_dial_plain(x, peer->addr, buf), err;

	if (fd < 0 || !rc)
		return fd;
	err = rdma_attach(x, peer, fd, buf, rc);
	if (err) {
		/* The negotiation broke the stream (an older peer?): the
		 * peer is TCP-only for a while now; a plain connection. */
		close(fd);
		fd = tcp_dial_plain(x, peer->addr, buf);
	}
	return fd;
}

/* Connect to @addr and prove the secret: fd or -errno. */
static int tcp_dial_plain(struct fkv_xport *x, const char *addr, uint8_t *buf)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	uint8_t nonce[FKV_NONCE_LEN], theirs[FKV_NONCE_LEN];
	struct nlattr *tb[FKV_CA_MAX + 1];
	char host[FKV_ADDR_MAX], port[8];
	struct nl_msg *msg;
	uint16_t portnum;
	int fd = -1, err;

	/* Not -EINVAL: that would make the master forget the source. */
	if (fkv_parse_hostport(addr, host, sizeof(host), &portnum, NULL, 0))
		return -EHOSTUNREACH;
	snprintf(port, sizeof(port), "%u", portnum);
	err = getaddrinfo(host, port, &hints, &res);
	if (err)
		return -EHOSTUNREACH;
	err = -ECONNREFUSED;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		set_timeouts(fd, x->cfg.io_timeout_ms);
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		err = sock_err();
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		goto fail;

	err = recv_msg(fd, buf, FKV_CCMD_HELLO, hello_policy, tb);
	if (err)
		goto fail_fd;
	err = -EPROTO;
	if (!tb[FKV_CA_NONCE])
		goto fail_fd;
	if (!tb[FKV_CA_PROTO] ||
	    nla_get_u32(tb[FKV_CA_PROTO]) < FKV_AUTH_PROTO) {
		fkv_err("data plane: %s speaks an older protocol (no mutual authentication): upgrade it",
			addr);
		goto fail_fd;
	}
	memcpy(theirs, nla_data(tb[FKV_CA_NONCE]), sizeof(theirs));
	err = fkv_auth_nonce(nonce);
	if (err)
		goto fail_fd;
	msg = fkv_wire_msg(FKV_CCMD_JOIN);
	if (!msg || nla_put_string(msg, FKV_CA_NODE_NAME, x->cfg.node_name) ||
	    nla_put(msg, FKV_CA_NONCE, sizeof(nonce), nonce) ||
	    fkv_auth_sign(msg, x->cfg.secret, x->cfg.secret_len,
			  FKV_AUTH_DATA_JOIN, theirs, nonce)) {
		nlmsg_free(msg);
		err = -ENOMEM;
		goto fail_fd;
	}
	err = send_msg(fd, msg);
	nlmsg_free(msg);
	if (err)
		goto fail_fd;
	err = recv_msg(fd, buf, FKV_CCMD_JOIN, join_policy, tb);
	if (err)
		goto fail_fd;
	/* The source proves the secret too, before we take a byte from it. */
	if (!fkv_auth_verify((struct nlmsghdr *)buf, x->cfg.secret,
			     x->cfg.secret_len, FKV_AUTH_DATA_JOINED, nonce,
			     theirs)) {
		err = -EACCES;
		FKV_XCOUNT(x, source_unproven, 1);
		if (tb[FLUXONKV_A_STATUS] && nla_get_u32(tb[FLUXONKV_A_STATUS]))
			fkv_err("data plane: %s refused our secret (an unsigned answer: the cluster secrets differ, or it is no member)",
				addr);
		else
			fkv_err("data plane: %s failed the secret check (its answer is not signed with our secret): not using it",
				addr);
		goto fail_fd;
	}
	if (!tb[FLUXONKV_A_STATUS] || nla_get_u32(tb[FLUXONKV_A_STATUS])) {
		err = -EACCES;
		fkv_err("data plane: %s refused our secret", addr);
		goto fail_fd;
	}
	FKV_XCOUNT(x, conns_opened, 1);
	return fd;

fail_fd:
	close(fd);
fail:
	FKV_XCOUNT(x, conns_failed, 1);
	return err;
}

/* A status off the wire: 0 or a negative errno, else -EPROTO. */
static int wire_status(struct nlattr *a)
{
	int32_t st = a ? (int32_t)nla_get_u32(a) : -EPROTO;

	return st <= 0 && st > -4096 ? st : -EPROTO;
}

/*
 * The chunks of a push, in order, each straight into its place in the
 * target.  0, the source's errno (stream still in step), or a socket or
 * protocol error (*@broken).
 */
static int tcp_recv_push(struct fkv_xport *x, int fd, struct fkv_pull *p,
			 uint8_t *buf, bool *broken)
{
	uint64_t deadline = pull_until(x, p);
	struct nlattr *tb[FKV_CA_MAX + 1];
	uint64_t got = 0;
	int err, bad = 0;

	while (got < p->len) {
		uint64_t off, len;

		err = recv_msg(fd, buf, FKV_CCMD_PULL, pull_policy, tb);
		if (err)
			return err;
		err = wire_status(tb[FLUXONKV_A_STATUS]);
		if (err == -EPROTO)
			return err;
		if (err) {
			*broken = false;
			return err;
		}
		if (!tb[FLUXONKV_A_OFFSET] || !tb[FLUXONKV_A_LEN] ||
		    !tb[FKV_CA_CSUM])
			return -EPROTO;
		off = nla_get_u64(tb[FLUXONKV_A_OFFSET]);
		len = nla_get_u64(tb[FLUXONKV_A_LEN]);
		/* In order, inside the value, never empty. */
		if (off != got || !len || len > p->len - got)
			return -EPROTO;
		err = read_until(fd, x->seg.base + p->dst_off + off, len,
				 deadline);
		if (err)
			return err;
		/* a bad chunk fails the push; the rest is read (in step) */
		if (!bad)
			bad = sum_check(x, p->dst_off + off, len,
					nla_get_u64(tb[FKV_CA_CSUM]));
		got += len;
	}
	*broken = false;
	return bad;
}

static int send_release(int fd, uint64_t off, int status)
{
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_RELEASE);

	return send_free(fd, msg, msg &&
			 !nla_put_u64(msg, FLUXONKV_A_OFFSET, off) &&
			 !nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)status));
}

/* Milliseconds left until @deadline (at least 1). */
static int ms_left(uint64_t deadline)
{
	uint64_t now = mono_ms();

	return now + 1 >= deadline ? 1 : (int)(deadline - now);
}

/*
 * A DRAM pull whose source answered with a window over the replica
 * (ADDR, RKEY): READ it in chunks, FKV_RDMA_DEPTH at once, then RELEASE.
 * Without a window the source sends the bytes after its answer (it could
 * not bind one): read them as over TCP.  0; FKV_RDMA_FALLBACK (a READ
 * failed: *@rcp is gone, the stream is in step, do it again over TCP);
 * -errno (*@broken).
 */
static int rdma_recv_pull(struct fkv_xport *x, int fd,
			  struct fkv_rdma_conn **rcp, struct fkv_pull *p,
			  struct nlattr **tb, bool *broken)
{
	/* Up to 16 MiB in one post list (4 READs, one completion). */
	const uint64_t batch = FKV_RDMA_DEPTH * FKV_PUSH_CHUNK;
	uint64_t deadline = pull_until(x, p), raddr, tag, off;
	struct fkv_rdma_conn *rc = *rcp;
	uint64_t sum = nla_get_u64(tb[FKV_CA_CSUM]);
	uint32_t rkey;
	int err = 0, e;

	if (!tb[FKV_CA_ADDR] || !tb[FKV_CA_RKEY]) {
		err = read_until(fd, x->seg.base + p->dst_off, p->len, deadline);
		if (err)
			return err;
		*broken = false;
		err = sum_check(x, p->dst_off, p->len, sum);
		return err ? err : FKV_RDMA_INLINE;
	}
	raddr = nla_get_u64(tb[FKV_CA_ADDR]);
	rkey = nla_get_u32(tb[FKV_CA_RKEY]);
	for (off = 0; off < p->len && !err; off += batch) {
		uint64_t len = p->len - off < batch ? p->len - off : batch;

		err = fkv_rdma_read_range(rc, off, p->dst_off + off,
					  raddr + off, rkey, len,
					  FKV_PUSH_CHUNK);
		if (!err)
			err = fkv_rdma_reap(rc, ms_left(deadline), &tag);
	}
	if (err)
		/* Every READ still posted ends (flushed) and is reaped: no
		 * late write into the target once the source unpins. */
		fkv_rdma_conn_fail(rc);
	e = send_release(fd, 0, err);
	if (e)
		return e;
	*broken = false;
	if (err) {
		FKV_XCOUNT(x, rdma_errors, 1);
		return FKV_RDMA_FALLBACK;
	}
	FKV_XCOUNT(x, rdma_pulls, 1);
	FKV_XCOUNT(x, rdma_bytes, p->len);
	return sum_check(x, p->dst_off, p->len, sum);
}

/*
 * An RDMA push: each chunk header names where the source staged it; READ
 * it into its place in the target, RELEASE it once read.  0, the
 * source's errno (stream in step), FKV_RDMA_FALLBACK (a READ failed: the
 * connection is broken too, do it again over TCP) or -errno (*@broken).
 */
static int rdma_recv_push(struct fkv_xport *x, int fd,
			  struct fkv_rdma_conn **rcp, struct fkv_pull *p,
			  uint8_t *buf, bool *broken)
{
	unsigned int n = (unsigned int)((p->len + FKV_PUSH_CHUNK - 1) /
					FKV_PUSH_CHUNK);
	uint64_t deadline = pull_until(x, p), tag;
	struct fkv_rdma_conn *rc = *rcp;
	struct nlattr *tb[FKV_CA_MAX + 1];
	unsigned int heads = 0, done = 0;
	uint64_t sums[FLUXONKV_VALUE_MAX / FKV_PUSH_CHUNK];
	int err = 0, src = 0, bad = 0;
	bool inline_seen = false;

	while (!err && (done < heads || (heads < n && !src))) {
		if (heads < n && !src && fkv_rdma_inflight(rc) < FKV_RDMA_DEPTH) {
			uint64_t off, len;

			err = recv_msg(fd, buf, FKV_CCMD_PULL, pull_policy, tb);
			if (err)
				return err;
			src = wire_status(tb[FLUXONKV_A_STATUS]);
			if (src == -EPROTO)
				return src;
			if (src)
				continue;	/* release what is out, then stop */
			if (!tb[FLUXONKV_A_OFFSET] || !tb[FLUXONKV_A_LEN] ||
			    !tb[FKV_CA_CSUM])
				return -EPROTO;
			off = nla_get_u64(tb[FLUXONKV_A_OFFSET]);
			len = nla_get_u64(tb[FLUXONKV_A_LEN]);
			if (off != (uint64_t)heads * FKV_PUSH_CHUNK || !len ||
			    len > FKV_PUSH_CHUNK || len > p->len - off)
				return -EPROTO;
			sums[heads] = nla_get_u64(tb[FKV_CA_CSUM]);
			if (!tb[FKV_CA_ADDR] || !tb[FKV_CA_RKEY]) {
				/* No window for it: the bytes follow inline. */
				err = read_until(fd, x->seg.base + p->dst_off +
						 off, len, deadline);
				if (err)
					return err;
				if (!bad)
					bad = sum_check(x, p->dst_off + off,
							len, sums[heads]);
				inline_seen = true;
				heads++;
				done++;
				continue;
			}
			err = fkv_rdma_read(rc, heads, p->dst_off + off,
					    nla_get_u64(tb[FKV_CA_ADDR]),
					    nla_get_u32(tb[FKV_CA_RKEY]), len);
			if (!err)
				heads++;
			continue;
		}
		err = fkv_rdma_reap(rc, ms_left(deadline), &tag);
		if (!err && tag >= heads)
			err = -EPROTO;		/* a READ we never posted */
		if (!err) {
			uint64_t off = tag * FKV_PUSH_CHUNK;
			uint64_t len = p->len - off < FKV_PUSH_CHUNK ?
				       p->len - off : FKV_PUSH_CHUNK;

			err = send_release(fd, off, 0);
			if (err)
				return err;
			if (!bad)
				bad = sum_check(x, p->dst_off + off, len,
						sums[tag]);
			done++;
		}
	}
	if (err) {
		fkv_rdma_conn_fail(rc);
		FKV_XCOUNT(x, rdma_errors, 1);
		return FKV_RDMA_FALLBACK;	/* *broken: the stream is not */
	}
	*broken = false;
	if (src)
		return src;
	if (bad)
		return bad;
	if (inline_seen)
		return FKV_RDMA_INLINE;
	FKV_XCOUNT(x, rdma_pulls, 1);
	FKV_XCOUNT(x, rdma_bytes, p->len);
	return 0;
}

/*
 * One pull on connection @fd (and its RDMA path *@rcp, if any): 0, the
 * source's status, FKV_RDMA_FALLBACK, or a socket error (*@broken: the
 * connection cannot be reused).
 */
static int tcp_pull_one(struct fkv_xport *x, int fd,
			struct fkv_rdma_conn **rcp, struct fkv_pull *p,
			uint8_t *buf, bool *broken)
{
	bool rdma = rcp && fkv_rdma_conn_ok(*rcp);
	struct nlattr *tb[FKV_CA_MAX + 1];
	struct nl_msg *msg;
	int32_t status;
	int err;

	*broken = true;
	msg = fkv_wire_msg(FKV_CCMD_PULL);
	if (!msg || nla_put(msg, FLUXONKV_A_KEY, (int)p->key_len, p->key) ||
	    nla_put_u64(msg, FLUXONKV_A_HANDLE, p->handle) ||
	    nla_put_u64(msg, FLUXONKV_A_PUT_ID, p->put_id) ||
	    nla_put_u64(msg, FLUXONKV_A_LEN, p->len) ||
	    nla_put_u32(msg, FLUXONKV_A_SOURCE, p->source) ||
	    (rdma && nla_put_u32(msg, FKV_CA_RDMA, 1))) {
		nlmsg_free(msg);
		*broken = false;
		return -ENOMEM;
	}
	err = send_msg(fd, msg);
	nlmsg_free(msg);
	if (err)
		return err;
	if (p->source == FLUXONKV_SOURCE_REMOTE_SSD)
		return rdma ? rdma_recv_push(x, fd, rcp, p, buf, broken)
			    : tcp_recv_push(x, fd, p, buf, broken);
	err = recv_msg(fd, buf, FKV_CCMD_PULL, pull_policy, tb);
	if (err)
		return err;
	if (!tb[FLUXONKV_A_STATUS])
		return -EPROTO;
	status = (int32_t)nla_get_u32(tb[FLUXONKV_A_STATUS]);
	if (status) {
		*broken = false;
		return status < 0 && status > -4096 ? status : -EPROTO;
	}
	if (!tb[FLUXONKV_A_LEN] || nla_get_u64(tb[FLUXONKV_A_LEN]) != p->len ||
	    !tb[FKV_CA_CSUM])
		return -EPROTO;
	if (rdma)
		return rdma_recv_pull(x, fd, rcp, p, tb, broken);
	/* the module frees a FETCH's target at its DEADLINE: none past it */
	if (p->until_ms && mono_ms() >= p->until_ms)
		return -ETIMEDOUT;
	/* Straight into the target: no intermediate buffer. */
	err = read_until(fd, x->seg.base + p->dst_off, p->len,
			 pull_until(x, p));
	if (err)
		return err;
	*broken = false;
	return sum_check(x, p->dst_off, p->len, nla_get_u64(tb[FKV_CA_CSUM]));
}

/* Publish thread @slot's connection, so that a cancel can shut it down. */
static void peer_set_fd(struct tcp_peer *peer, unsigned int slot, int fd)
{
	pthread_mutex_lock(&peer->lock);
	peer->fds[slot] = fd;
	pthread_mutex_unlock(&peer->lock);
}

/* The same for its RDMA path (a cancel stops its READs). */
static void peer_set_rc(struct tcp_peer *peer, unsigned int slot,
			struct fkv_rdma_conn *rc)
{
	pthread_mutex_lock(&peer->lock);
	peer->rcs[slot] = rc;
	pthread_mutex_unlock(&peer->lock);
}

/* Thread @slot is done with its RDMA path *@rc (unpublished first). */
static void peer_drop_rc(struct tcp_peer *peer, unsigned int slot,
			 struct fkv_rdma_conn **rc)
{
	if (!*rc)
		return;
	peer_set_rc(peer, slot, NULL);
	fkv_rdma_disconnect(*rc);
	*rc = NULL;
}

/*
 * Dial @peer for thread @slot (an RDMA path too with @rc) and publish the
 * connection, unless a cancel came since the thread took its pull under
 * generation @gen: a dial takes a while (connect, the join, the RDMA
 * handshake) and a cancel in that time finds nothing to shut down, so
 * the check and the publication are one step under the peer's lock.
 * fd, -ECANCELED (closed) or the dial's -errno.
 */
static int dial_published(struct fkv_xport *x, struct tcp_peer *peer,
			  unsigned int slot, uint8_t *buf,
			  struct fkv_rdma_conn **rc, unsigned int gen)
{
	int fd = tcp_dial(x, peer, buf, rc);
	bool cancelled;

	pthread_mutex_lock(&peer->lock);
	cancelled = gen != peer->cancel_gen;
	peer->fds[slot] = cancelled ? -1 : fd;
	if (rc && !cancelled)
		peer->rcs[slot] = *rc;
	pthread_mutex_unlock(&peer->lock);
	if (!cancelled || fd < 0)
		return fd;
	if (rc && *rc) {
		fkv_rdma_disconnect(*rc);
		*rc = NULL;
	}
	close(fd);
	return -ECANCELED;
}

/* The gauge of pull threads (priv lock held). */
static void pull_gauge(struct fkv_xport *x, struct tcp_priv *t)
{
	pthread_mutex_lock(&x->lock);
	x->st.pull_threads = t->pull_threads;
	if (x->st.pull_threads > x->st.pull_threads_peak)
		x->st.pull_threads_peak = x->st.pull_threads;
	pthread_mutex_unlock(&x->lock);
}

static void *peer_thread(void *arg);

/* One more thread for @peer (priv lock and @peer's lock held).  0 or -EAGAIN. */
static int peer_spawn(struct fkv_xport *x, struct tcp_peer *peer)
{
	struct tcp_priv *t = x->priv;
	pthread_attr_t attr;
	pthread_t th;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &attr, peer_thread, peer);
	pthread_attr_destroy(&attr);
	if (err)
		return -EAGAIN;
	peer->nthreads++;
	t->pull_threads++;
	t->pull_live++;
	pull_gauge(x, t);
	return 0;
}

/* @peer waits for a thread, behind every peer already waiting (priv lock). */
static void peer_wait(struct tcp_priv *t, struct tcp_peer *peer)
{
	if (peer->waiting)
		return;
	peer->waiting = true;
	peer->wait_next = NULL;
	*t->wait_tail = peer;
	t->wait_tail = &peer->wait_next;
	__atomic_store_n(&t->nwait, t->nwait + 1, __ATOMIC_RELEASE);
}

/*
 * Peers wait: wake every idle thread, which gives its place up (priv
 * lock held, no peer's).  Each peer's lock is taken for the broadcast,
 * so that a thread that saw nobody waiting is in its wait by then.
 */
static void kick_idle(struct tcp_priv *t)
{
	struct tcp_peer *q;

	for (q = t->peers; q; q = q->next) {
		pthread_mutex_lock(&q->lock);
		if (q->idle)
			pthread_cond_broadcast(&q->cond);
		pthread_mutex_unlock(&q->lock);
	}
}

/*
 * A thread ended: the first waiting peers that still have pulls queued
 * get one, while the cap allows (priv lock held).  A peer that cannot
 * get one (no thread could start) fails its queued pulls.
 */
static void hand_off(struct fkv_xport *x, struct tcp_priv *t)
{
	while (!t->stopping && t->wait_head &&
	       t->pull_threads < x->cfg.pull_threads) {
		struct tcp_peer *q = t->wait_head;
		struct fkv_pull *p;

		t->wait_head = q->wait_next;
		if (!t->wait_head)
			t->wait_tail = &t->wait_head;
		q->waiting = false;
		__atomic_store_n(&t->nwait, t->nwait - 1, __ATOMIC_RELEASE);
		pthread_mutex_lock(&q->lock);
		if (q->head && !q->stop && !q->nthreads && peer_spawn(x, q)) {
			while ((p = q->head)) {
				q->head = p->next;
				fkv_xport_complete(x, p, -EAGAIN);
			}
			q->tail = &q->head;
		}
		pthread_mutex_unlock(&q->lock);
	}
}

/* Until @deadline_ms (CLOCK_MONOTONIC), for pthread_cond_timedwait. */
static struct timespec abs_ms(uint64_t deadline_ms)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ms / 1000),
			       .tv_nsec = (long)(deadline_ms % 1000) * 1000000 };

	return ts;
}

static void *peer_thread(void *arg)
{
	struct tcp_peer *peer = arg;
	struct fkv_xport *x = peer->x;
	struct tcp_priv *t = x->priv;
	uint8_t *buf = malloc(FKV_WIRE_MAX);
	struct fkv_rdma_conn *rc = NULL;
	uint64_t idle_until = mono_ms() + x->cfg.pull_idle_ms;
	bool served = false;	/* one pull done: it may give its place up */
	unsigned int slot;
	int fd = -1;

	pthread_mutex_lock(&peer->lock);
	for (slot = 0; slot < 16 && peer->fds[slot] != -2; slot++)
		;
	peer->fds[slot] = -1;		/* taken: -2 marked it free */
	pthread_mutex_unlock(&peer->lock);

	for (;;) {
		struct fkv_pull *p;
		bool broken, stop, fresh;
		unsigned int gen;
		int err;

		pthread_mutex_lock(&peer->lock);
		while (!peer->head && !peer->stop &&
		       !__atomic_load_n(&t->nwait, __ATOMIC_ACQUIRE) &&
		       mono_ms() < idle_until) {
			struct timespec ts = abs_ms(idle_until);

			peer->idle++;
			pthread_cond_timedwait(&peer->cond, &peer->lock, &ts);
			peer->idle--;
		}
		if (!peer->head || (served && !peer->stop &&
				    __atomic_load_n(&t->nwait, __ATOMIC_ACQUIRE))) {
			/*
			 * Idle, stopped, or peers wait for a thread: end,
			 * unless a pull came meanwhile (decided under both
			 * locks, so that a pull queued from now on finds
			 * this thread gone and starts or waits for another).
			 */
			pthread_mutex_unlock(&peer->lock);
			pthread_mutex_lock(&t->lock);
			pthread_mutex_lock(&peer->lock);
			if ((peer->head && (peer->stop || !t->nwait ||
					    !served)) ||
			    (!peer->head && !peer->stop && !t->nwait &&
			     mono_ms() < idle_until)) {
				pthread_mutex_unlock(&peer->lock);
				pthread_mutex_unlock(&t->lock);
				continue;
			}
			/* Giving up its place with pulls left: the peer
			 * waits behind the others (round robin). */
			if (peer->head && peer->nthreads == 1)
				peer_wait(t, peer);
			peer->fds[slot] = -2;
			peer->rcs[slot] = NULL;
			peer->nthreads--;
			t->pull_threads--;
			pull_gauge(x, t);
			pthread_mutex_unlock(&peer->lock);
			hand_off(x, t);
			pthread_mutex_unlock(&t->lock);
			break;
		}
		p = peer->head;
		peer->head = p->next;
		if (!peer->head)
			peer->tail = &peer->head;
		stop = peer->stop;
		gen = peer->cancel_gen;
		pthread_mutex_unlock(&peer->lock);
		if (stop || !buf) {
			fkv_xport_complete(x, p, buf ? -ECANCELED : -ENOMEM);
			continue;
		}
		fresh = fd < 0;
		if (fresh) {
			fd = dial_published(x, peer, slot, buf, &rc, gen);
		} else if (!rc && rdma_attach(x, peer, fd, buf, &rc)) {
			/* A kept connection back on RDMA, or broken. */
			peer_set_fd(peer, slot, -1);
			close(fd);
			fd = dial_published(x, peer, slot, buf, &rc, gen);
			fresh = true;
		}
		peer_set_rc(peer, slot, rc);
		if (fd < 0) {
			fkv_xport_complete(x, p, fd);
			continue;
		}
		err = tcp_pull_one(x, fd, &rc, p, buf, &broken);
		if (err == FKV_RDMA_INLINE) {
			/* The get is served; the peer's RDMA is not there. */
			rdma_failed(x, peer, -EOPNOTSUPP, "has no window for us");
			peer_drop_rc(peer, slot, &rc);
			err = 0;
		}
		if (err == FKV_RDMA_FALLBACK) {
			/* Without failing the get: the same pull over TCP. */
			rdma_failed(x, peer, -EIO, "failed mid-pull");
			peer_drop_rc(peer, slot, &rc);
			if (broken) {
				peer_set_fd(peer, slot, -1);
				close(fd);
				fd = dial_published(x, peer, slot, buf, NULL,
						    gen);
			}
			/* A cancel's READ abort looks like a failure too. */
			if (fd >= 0 && gen != __atomic_load_n(&peer->cancel_gen,
							      __ATOMIC_ACQUIRE))
				err = -ECANCELED;
			else
				err = fd < 0 ? fd : tcp_pull_one(x, fd, NULL, p,
								 buf, &broken);
			fresh = true;	/* no second retry below */
		}
		/*
		 * A kept connection the peer closed meanwhile (it restarted):
		 * once more on a fresh one.  The target is ours until the
		 * pull completes, so writing it again is harmless.
		 */
		if (broken && !fresh && (err == -ECONNRESET || err == -EPIPE) &&
		    gen == __atomic_load_n(&peer->cancel_gen, __ATOMIC_ACQUIRE)) {
			peer_set_fd(peer, slot, -1);
			close(fd);
			peer_drop_rc(peer, slot, &rc);
			fd = dial_published(x, peer, slot, buf, &rc, gen);
			if (fd < 0) {
				fkv_xport_complete(x, p, fd);
				continue;
			}
			err = tcp_pull_one(x, fd, &rc, p, buf, &broken);
			if (err == FKV_RDMA_FALLBACK) {
				peer_drop_rc(peer, slot, &rc);
				err = -EIO;
			}
			if (err == FKV_RDMA_INLINE) {
				peer_drop_rc(peer, slot, &rc);
				err = 0;
			}
		}
		if (broken && fd >= 0) {
			peer_set_fd(peer, slot, -1);
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			peer_drop_rc(peer, slot, &rc);
		fkv_xport_complete(x, p, err);
		idle_until = mono_ms() + x->cfg.pull_idle_ms;
		served = true;
	}
	/* Unpublished above: nobody else shuts these down any more. */
	if (rc)
		fkv_rdma_disconnect(rc);
	if (fd >= 0)
		close(fd);
	free(buf);
	pthread_mutex_lock(&t->lock);
	if (!--t->pull_live)
		pthread_cond_broadcast(&t->pull_cond);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static struct tcp_peer *peer_get(struct fkv_xport *x, const char *addr)
{
	struct tcp_priv *t = x->priv;
	struct tcp_peer *peer;
	pthread_condattr_t ca;
	unsigned int i;

	for (peer = t->peers; peer; peer = peer->next)
		if (!strcmp(peer->addr, addr))
			return peer;
	peer = calloc(1, sizeof(*peer));
	if (!peer)
		return NULL;
	peer->x = x;
	for (i = 0; i < 16; i++)
		peer->fds[i] = -2;	/* no thread in that slot yet */
	snprintf(peer->addr, sizeof(peer->addr), "%s", addr);
	pthread_mutex_init(&peer->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&peer->cond, &ca);
	pthread_condattr_destroy(&ca);
	peer->tail = &peer->head;
	peer->next = t->peers;
	t->peers = peer;
	return peer;
}

static int tcp_pull(struct fkv_xport *x, struct fkv_pull *p)
{
	struct tcp_priv *t = x->priv;
	struct tcp_peer *peer;
	unsigned int want = x->cfg.conns_per_peer;
	bool kick = false;
	int err = 0;

	if (want > 16)
		want = 16;
	pthread_mutex_lock(&t->lock);
	peer = t->stopping ? NULL : peer_get(x, p->peer);
	if (!peer) {
		pthread_mutex_unlock(&t->lock);
		return t->stopping ? -ECANCELED : -ENOMEM;
	}
	pthread_mutex_lock(&peer->lock);
	p->next = NULL;
	*peer->tail = p;
	peer->tail = &p->next;
	/*
	 * One more connection while pulls queue up, up to the limit per
	 * peer and over all peers; a peer without any while every thread
	 * is taken waits for one (idle threads give theirs up at once).
	 */
	if (peer->nthreads < want && (peer->nthreads == 0 || peer->head != p)) {
		if (t->pull_threads < x->cfg.pull_threads) {
			err = peer_spawn(x, peer);
			if (peer->nthreads || peer->waiting)
				err = 0;
		} else if (!peer->nthreads && !peer->waiting) {
			peer_wait(t, peer);
			kick = true;
		}
	}
	if (err) {
		peer->head = NULL;
		peer->tail = &peer->head;
	}
	pthread_cond_signal(&peer->cond);
	pthread_mutex_unlock(&peer->lock);
	if (kick)
		kick_idle(t);
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* ---- placements (requester side) ---- */

struct place_job {
	struct fkv_xport *x;
	struct fkv_pull *p;
};

/* Step 1: connect, ask the peer for a target, learn its handle. */
static int place_ask(struct fkv_xport *x, struct fkv_pull *p, uint8_t *buf)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	struct nl_msg *msg;
	int fd, err;

	fd = tcp_dial_plain(x, p->peer, buf);
	if (fd < 0)
		return fd;
	msg = fkv_wire_msg(FKV_CCMD_PLACE);
	err = send_free(fd, msg, msg &&
			!nla_put(msg, FLUXONKV_A_KEY, (int)p->key_len, p->key) &&
			!nla_put_u64(msg, FLUXONKV_A_PUT_ID, p->put_id) &&
			!nla_put_u64(msg, FLUXONKV_A_LEN, p->len) &&
			!nla_put(msg, FKV_CA_PLACE_TICKET, FKV_MAC_LEN,
				 p->ticket));
	if (!err)
		err = recv_msg(fd, buf, FKV_CCMD_PLACE, pull_policy, tb);
	if (!err)
		err = wire_status(tb[FLUXONKV_A_STATUS]);
	if (!err && (!tb[FLUXONKV_A_HANDLE] ||
		     !nla_get_u64(tb[FLUXONKV_A_HANDLE])))
		err = -EPROTO;
	if (err) {
		close(fd);
		return err;
	}
	p->handle = nla_get_u64(tb[FLUXONKV_A_HANDLE]);
	p->fd = fd;
	return 0;
}

/* Step 2: the peer's word that every byte is in; the connection ends. */
static int place_wait(struct fkv_xport *x, struct fkv_pull *p, uint8_t *buf)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	int err;

	(void)x;
	err = recv_msg(p->fd, buf, FKV_CCMD_PLACE, pull_policy, tb);
	if (!err)
		err = wire_status(tb[FLUXONKV_A_STATUS]);
	close(p->fd);
	p->fd = -1;
	return err;
}

static void *place_thread(void *arg)
{
	struct place_job *j = arg;
	struct fkv_xport *x = j->x;
	struct tcp_priv *t = x->priv;
	uint8_t *buf = malloc(FKV_WIRE_MAX);
	int err = -ENOMEM;

	if (buf)
		err = j->p->step == 1 ? place_ask(x, j->p, buf)
				      : place_wait(x, j->p, buf);
	else if (j->p->fd >= 0) {
		close(j->p->fd);
		j->p->fd = -1;
	}
	free(buf);
	fkv_xport_complete(x, j->p, err);
	free(j);
	pthread_mutex_lock(&t->lock);
	if (!--t->placing)
		pthread_cond_broadcast(&t->place_cond);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

static int tcp_place_step(struct fkv_xport *x, struct fkv_pull *p)
{
	struct tcp_priv *t = x->priv;
	struct place_job *j = malloc(sizeof(*j));
	pthread_attr_t attr;
	pthread_t th;
	int err = 0;

	if (!j)
		return -ENOMEM;
	j->x = x;
	j->p = p;
	pthread_mutex_lock(&t->lock);
	if (t->stopping)
		err = -ECANCELED;
	else if (t->placing >= FKV_TCP_PLACES_MAX)
		err = -EBUSY;
	else
		t->placing++;
	pthread_mutex_unlock(&t->lock);
	if (err) {
		free(j);
		return err;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, place_thread, j)) {
		err = -EAGAIN;
		free(j);
		pthread_mutex_lock(&t->lock);
		if (!--t->placing)
			pthread_cond_broadcast(&t->place_cond);
		pthread_mutex_unlock(&t->lock);
	}
	pthread_attr_destroy(&attr);
	return err;
}

/* ---- source side ---- */

static int serve_join(struct fkv_xport *x, int fd, uint8_t *buf,
		      uint64_t deadline_ms)
{
	uint8_t nonce[FKV_NONCE_LEN], theirs[FKV_NONCE_LEN];
	struct nlattr *tb[FKV_CA_MAX + 1];
	struct nl_msg *msg;
	bool ok;
	int err;

	err = fkv_auth_nonce(nonce);
	if (err)
		return err;
	msg = fkv_wire_msg(FKV_CCMD_HELLO);
	err = send_free(fd, msg, msg && !nla_put(msg, FKV_CA_NONCE,
						  sizeof(nonce), nonce) &&
			!nla_put_u32(msg, FKV_CA_PROTO, FKV_AUTH_PROTO));
	if (err)
		return err;
	err = recv_until(fd, buf, CMD_BIT(FKV_CCMD_JOIN), join_policy, tb,
			 NULL, deadline_ms);
	if (err) {
		if (err == -ETIMEDOUT || err == -EAGAIN) {
			FKV_XCOUNT(x, handshake_timeouts, 1);
			fkv_dbg("data plane: a peer did not join in time: closed");
		}
		return err;
	}
	ok = tb[FKV_CA_NODE_NAME] && tb[FKV_CA_NONCE] &&
	     fkv_auth_verify((struct nlmsghdr *)buf, x->cfg.secret,
			     x->cfg.secret_len, FKV_AUTH_DATA_JOIN, nonce,
			     nla_data(tb[FKV_CA_NONCE]));
	/* Signed for the requester's nonce: it checks us in turn. */
	if (tb[FKV_CA_NONCE])
		memcpy(theirs, nla_data(tb[FKV_CA_NONCE]), sizeof(theirs));
	/* counted before the peer can see the refusal (and ask the count) */
	if (!ok)
		FKV_XCOUNT(x, auth_refused, 1);
	msg = fkv_wire_msg(FKV_CCMD_JOIN);
	err = send_free(fd, msg, msg && !nla_put_u32(msg, FLUXONKV_A_STATUS,
						      ok ? 0 : (uint32_t)-EACCES) &&
			(!tb[FKV_CA_NONCE] ||
			 !fkv_auth_sign(msg, x->cfg.secret, x->cfg.secret_len,
					FKV_AUTH_DATA_JOINED, theirs, nonce)));
	if (!ok) {
		fkv_warn("data plane: a peer failed the secret check: refused");
		return -EACCES;
	}
	return err;
}

/* One chunk header of a push (or the answer header of a pull). */
/* On success the payload follows: the header goes out with it (MSG_MORE). */
/*
 * A PULL answer's head: an error, or a push chunk's {OFFSET, LEN, CSUM}
 * whose bytes follow; by @deadline_ms.
 */
static int send_head(int fd, int status, uint64_t off, uint64_t len,
		     uint64_t sum, uint64_t deadline_ms)
{
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_PULL);
	int err;

	if (!msg || nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)status) ||
	    (!status && (nla_put_u64(msg, FLUXONKV_A_OFFSET, off) ||
			 nla_put_u64(msg, FLUXONKV_A_LEN, len) ||
			 nla_put_u64(msg, FKV_CA_CSUM, sum)))) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	err = write_by(fd, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len,
		       status ? 0 : MSG_MORE, deadline_ms);
	nlmsg_free(msg);
	return err;
}

static int recv_release(struct fkv_xport *x, int fd, uint8_t *buf,
			uint64_t deadline_ms, uint64_t *off, int *status);

/* An RDMA push's chunk header: the window over chunk @off of the value. */
static int send_rdma_head(int fd, uint64_t off, uint64_t len, uint64_t sum,
			  uint64_t addr, uint32_t rkey, uint64_t deadline_ms)
{
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_PULL);
	int err = -ENOMEM;

	if (msg && !nla_put_u32(msg, FLUXONKV_A_STATUS, 0) &&
	    !nla_put_u64(msg, FLUXONKV_A_OFFSET, off) &&
	    !nla_put_u64(msg, FLUXONKV_A_LEN, len) &&
	    !nla_put_u64(msg, FKV_CA_CSUM, sum) &&
	    !nla_put_u64(msg, FKV_CA_ADDR, addr) &&
	    !nla_put_u32(msg, FKV_CA_RKEY, rkey))
		err = write_by(fd, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len,
			       0, deadline_ms);
	nlmsg_free(msg);
	return err;
}

/* A push's pipeline state (§5.3), shared by its readers and its sender. */
struct push {
	struct fkv_xport *x;
	const void *key;
	size_t key_len;
	uint64_t put_id, len;
	unsigned int nchunks;
	pthread_mutex_t lock;		/* protects everything below */
	pthread_cond_t cond;
	unsigned int next_read;		/* next chunk a reader takes */
	unsigned int next_send;		/* next chunk the sender sends */
	bool abort;
	const uint8_t *ticket;		/* RDMA: the connection's, else NULL */
	struct push_chunk {
		bool ready;
		int status;
		uint64_t seg_off, pin;
		uint64_t sum;		/* data_sum() of its staged bytes */
		uint32_t rkey;		/* RDMA: its window, 0 = none */
		uint64_t release_by;	/* RDMA: its RELEASE is due (ms) */
	} *c;
};

/* Chunk @i is read (or will never be): close its window, unpin it. */
static void push_chunk_done(struct push *ps, unsigned int i)
{
	struct tcp_priv *t = ps->x->priv;

	if (ps->c[i].rkey)
		fkv_rdma_unexpose(t->rdma, ps->ticket, ps->c[i].rkey);
	ps->c[i].rkey = 0;
	ps->x->seg.release(ps->x->seg.arg, ps->c[i].pin);
	ps->c[i].pin = 0;
}

static void *push_reader(void *arg)
{
	struct push *ps = arg;

	pthread_mutex_lock(&ps->lock);
	for (;;) {
		unsigned int i;
		uint64_t off, len, seg_off = 0, pin = 0, vlen = 0;
		int st;

		/*
		 * Chunk 0 is read alone, so that the first bytes go out as
		 * soon as one chunk's read allows; then up to FKV_PUSH_READS
		 * reads run while the sender sends, FKV_PUSH_QUEUE ahead.
		 */
		while (!ps->abort && ps->next_read < ps->nchunks &&
		       (ps->next_read - ps->next_send >= FKV_PUSH_QUEUE ||
			(ps->next_read == 1 && !ps->c[0].ready)))
			pthread_cond_wait(&ps->cond, &ps->lock);
		if (ps->abort || ps->next_read == ps->nchunks)
			break;
		i = ps->next_read++;
		pthread_mutex_unlock(&ps->lock);
		off = (uint64_t)i * FKV_PUSH_CHUNK;
		len = ps->len - off < FKV_PUSH_CHUNK ? ps->len - off
						     : FKV_PUSH_CHUNK;
		st = ps->x->seg.stage(ps->x->seg.arg, ps->key, ps->key_len,
				      ps->put_id, off, len, &seg_off, &vlen,
				      &pin);
		/* Another length than the route's: not the value asked for. */
		if (!st && vlen != ps->len) {
			ps->x->seg.release(ps->x->seg.arg, pin);
			st = -ESTALE;
		}
		if (!st && (seg_off > ps->x->seg.size ||
			    len > ps->x->seg.size - seg_off)) {
			ps->x->seg.release(ps->x->seg.arg, pin);
			st = -EPROTO;
		}
		/* summed here, by up to FKV_PUSH_READS readers at once */
		if (!st)
			ps->c[i].sum = data_sum(ps->x->seg.base + seg_off, len);
		pthread_mutex_lock(&ps->lock);
		ps->c[i].status = st;
		ps->c[i].seg_off = seg_off;
		ps->c[i].pin = pin;
		ps->c[i].ready = true;
		pthread_cond_broadcast(&ps->cond);
	}
	pthread_mutex_unlock(&ps->lock);
	return NULL;
}

/*
 * The push pipeline of @len bytes of this node's SSD copy of @key at
 * @put_id, in one of the push slots.  0 to go on with the connection,
 * -errno to close it.
 */
/*
 * RDMA pushes: the requester READs each announced chunk and RELEASEs it;
 * wait for RELEASEs until at most @keep chunks are out.  0 or -errno (the
 * connection is lost: pins of chunks still out are released by the
 * caller).  A RELEASE with an error status fails the push (@status).
 */
static int push_collect(struct push *ps, int fd, uint8_t *buf,
			unsigned int *out, unsigned int keep, int *status)
{
	while (*out > keep) {
		uint64_t off, due = UINT64_MAX;
		unsigned int i;
		int st, err;

		/* The earliest deadline of the chunks still out. */
		for (i = 0; i < ps->nchunks; i++)
			if (ps->c[i].rkey && ps->c[i].release_by < due)
				due = ps->c[i].release_by;
		if (due == UINT64_MAX)
			return -EPROTO;		/* none out: cannot be */
		err = recv_release(ps->x, fd, buf, due, &off, &st);

		if (err)
			return err;
		i = (unsigned int)(off / FKV_PUSH_CHUNK);
		if (off % FKV_PUSH_CHUNK || i >= ps->nchunks || !ps->c[i].rkey)
			return -EPROTO;
		push_chunk_done(ps, i);
		(*out)--;
		if (st && !*status)
			*status = st;
	}
	return 0;
}

static int push_run(struct fkv_xport *x, int fd, uint8_t *buf,
		    const uint8_t *ticket, const void *key, size_t key_len,
		    uint64_t put_id, uint64_t len)
{
	unsigned int out = 0;	/* RDMA: chunks announced, not released */
	struct push ps = { .x = x, .key = key, .key_len = key_len,
			   .put_id = put_id, .len = len, .ticket = ticket };
	/* the requester's deadline is the whole value's: ours is later */
	uint64_t send_by = release_deadline(x, len);
	struct tcp_priv *t = x->priv;
	pthread_t readers[FKV_PUSH_READS];
	unsigned int i, nreaders = 0;
	int err = 0, status = 0;

	ps.nchunks = (unsigned int)((len + FKV_PUSH_CHUNK - 1) / FKV_PUSH_CHUNK);
	ps.c = calloc(ps.nchunks, sizeof(*ps.c));
	if (!ps.c)
		return send_head(fd, -ENOMEM, 0, 0, 0, send_by);
	pthread_mutex_init(&ps.lock, NULL);
	pthread_cond_init(&ps.cond, NULL);
	for (i = 0; i < FKV_PUSH_READS && i < ps.nchunks; i++)
		if (!pthread_create(&readers[nreaders], NULL, push_reader, &ps))
			nreaders++;
	if (!nreaders)
		status = -EAGAIN;

	/* Send each chunk as soon as it is staged, in order. */
	for (i = 0; i < ps.nchunks && !status && !err; i++) {
		uint64_t off = (uint64_t)i * FKV_PUSH_CHUNK;
		uint64_t clen = len - off < FKV_PUSH_CHUNK ? len - off
							    : FKV_PUSH_CHUNK;

		pthread_mutex_lock(&ps.lock);
		while (!ps.c[i].ready)
			pthread_cond_wait(&ps.cond, &ps.lock);
		pthread_mutex_unlock(&ps.lock);
		status = ps.c[i].status;
		if (status)
			break;
		if (ticket) {
			uint64_t addr;
			uint32_t rkey;

			/* At most FKV_RDMA_DEPTH READs out at once. */
			err = push_collect(&ps, fd, buf, &out,
					   FKV_RDMA_DEPTH - 1, &status);
			if (!err && !status &&
			    !fkv_rdma_expose(t->rdma, ticket, ps.c[i].seg_off,
					     clen, &addr, &rkey)) {
				ps.c[i].rkey = rkey;
				/* the requester's deadline is the whole
				 * value's, from its PULL: ours is later */
				ps.c[i].release_by = release_deadline(x, len);
				err = send_rdma_head(fd, off, clen,
						     ps.c[i].sum, addr, rkey,
						     send_by);
				if (!err)
					out++;
			} else if (!err && !status) {
				/* No window: this chunk inline, as over TCP. */
				FKV_XCOUNT(x, rdma_fallbacks, 1);
				err = send_head(fd, 0, off, clen, ps.c[i].sum,
						send_by);
				if (!err)
					err = write_by(fd, x->seg.base +
						       ps.c[i].seg_off, clen,
						       0, send_by);
				push_chunk_done(&ps, i);
			} else if (!err) {
				push_chunk_done(&ps, i);
			}
		} else {
			err = send_head(fd, 0, off, clen, ps.c[i].sum,
					send_by);
			if (!err)
				err = write_by(fd, x->seg.base + ps.c[i].seg_off,
					       clen, 0, send_by);
			x->seg.release(x->seg.arg, ps.c[i].pin);
			ps.c[i].pin = 0;
		}
		if (status)
			break;
		FKV_XCOUNT(x, push_chunks, 1);
		FKV_XCOUNT(x, push_bytes, clen);
		pthread_mutex_lock(&ps.lock);
		ps.next_send++;
		pthread_cond_broadcast(&ps.cond);
		pthread_mutex_unlock(&ps.lock);
	}
	pthread_mutex_lock(&ps.lock);
	ps.abort = true;
	pthread_cond_broadcast(&ps.cond);
	pthread_mutex_unlock(&ps.lock);
	for (i = 0; i < nreaders; i++)
		pthread_join(readers[i], NULL);
	/* A failure first: the requester stops and releases what it read. */
	if (!err && status)
		err = send_head(fd, status, 0, 0, 0, send_by);
	/* RDMA: every announced chunk must be read before we unpin it. */
	if (ticket && !err) {
		int st = 0;

		err = push_collect(&ps, fd, buf, &out, 0, &st);
		if (!err && !status && !st)
			FKV_XCOUNT(x, rdma_served, 1);
		if (!status)
			status = st;
	}
	/* Staged, never sent (a failure ended the push early), or announced
	 * to a requester that is gone. */
	for (i = 0; i < ps.nchunks; i++)
		if (ps.c[i].ready && !ps.c[i].status && ps.c[i].pin)
			push_chunk_done(&ps, i);
	FKV_XCOUNT(x, pushes, 1);
	if (status || err)
		FKV_XCOUNT(x, push_errors, 1);
	if (err == -ETIME)
		send_timed_out(x, fd);
	pthread_cond_destroy(&ps.cond);
	pthread_mutex_destroy(&ps.lock);
	free(ps.c);
	return err;
}

/*
 * Push @len bytes of this node's SSD copy of @key at @put_id, once one of
 * the FKV_TCP_PUSHES_MAX slots is free.  0 to go on with the connection,
 * -errno to close it.
 */
static int serve_push(struct fkv_xport *x, int fd, uint8_t *buf,
		      const uint8_t *ticket, const void *key, size_t key_len,
		      uint64_t put_id, uint64_t len)
{
	struct tcp_priv *t = x->priv;
	int err;

	if (!x->seg.stage || !len || len > FLUXONKV_VALUE_MAX)
		return send_head(fd, x->seg.stage ? -EINVAL : -ENODEV, 0, 0,
				 0, 0);
	pthread_mutex_lock(&t->lock);
	while (t->pushes >= FKV_TCP_PUSHES_MAX && !t->stopping)
		pthread_cond_wait(&t->push_cond, &t->lock);
	t->pushes++;
	pthread_mutex_unlock(&t->lock);
	err = push_run(x, fd, buf, ticket, key, key_len, put_id, len);
	pthread_mutex_lock(&t->lock);
	t->pushes--;
	pthread_cond_signal(&t->push_cond);
	pthread_mutex_unlock(&t->lock);
	return err;
}

/* RDMA {}: a ticket for this connection's RDMA path, if we have one. */
static int serve_rdma(struct fkv_xport *x, struct tcp_conn *c)
{
	struct tcp_priv *t = x->priv;
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_RDMA);
	int status = -EOPNOTSUPP;

	if (c->rdma) {
		/* Asked again (its RDMA path failed): a fresh ticket. */
		fkv_rdma_offer_end(t->rdma, c->ticket);
		c->rdma = false;
	}
	if (t->rdma && fkv_rdma_usable(t->rdma))
		status = fkv_rdma_offer(t->rdma, c->ticket);
	if (!status)
		c->rdma = true;
	return send_free(c->fd, msg, msg &&
			 !nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)status) &&
			 (status || !nla_put(msg, FKV_CA_TICKET, FKV_TICKET_LEN,
					     c->ticket)));
}

/*
 * The requester READ a chunk (or a whole DRAM replica) we announced:
 * RELEASE {OFFSET, STATUS}, whole by @deadline_ms (release_deadline()
 * of the earliest range still out).  0 with the chunk's value offset, or
 * -errno (-ETIMEDOUT: counted, the caller closes the connection).
 */
static int recv_release(struct fkv_xport *x, int fd, uint8_t *buf,
			uint64_t deadline_ms, uint64_t *off, int *status)
{
	struct tcp_priv *t = x->priv;
	struct nlattr *tb[FKV_CA_MAX + 1];
	int err = recv_until(fd, buf, CMD_BIT(FKV_CCMD_RELEASE), pull_policy,
			     tb, NULL, deadline_ms);

	if (err == -ETIMEDOUT) {
		FKV_XCOUNT(x, release_timeouts, 1);
		pthread_mutex_lock(&t->lock);
		fkv_ratelimited_warn(&t->release_log,
				     "data plane: a requester did not release an exposed range in time: window closed, pin dropped, connection closed");
		pthread_mutex_unlock(&t->lock);
	}
	if (err)
		return err;
	*off = tb[FLUXONKV_A_OFFSET] ? nla_get_u64(tb[FLUXONKV_A_OFFSET]) : 0;
	*status = wire_status(tb[FLUXONKV_A_STATUS]);
	return 0;
}

/* Answer one PULL: 0 to go on, -errno to close the connection. */
static int serve_pull(struct fkv_xport *x, struct tcp_conn *c, uint8_t *buf,
		      struct nlattr **tb)
{
	bool rdma = c->rdma && tb[FKV_CA_RDMA] && nla_get_u32(tb[FKV_CA_RDMA]);
	struct tcp_priv *t = x->priv;
	uint64_t off = 0, len = 0, pin = 0, addr = 0, release_by = 0;
	uint64_t send_by = 0;
	struct nl_msg *msg;
	uint32_t rkey = 0;
	int fd = c->fd;
	int status, err;

	if (tb[FLUXONKV_A_SOURCE] &&
	    nla_get_u32(tb[FLUXONKV_A_SOURCE]) == FLUXONKV_SOURCE_REMOTE_SSD) {
		if (!tb[FLUXONKV_A_KEY] || !tb[FLUXONKV_A_PUT_ID] ||
		    !tb[FLUXONKV_A_LEN])
			return send_head(fd, -EINVAL, 0, 0, 0, 0);
		return serve_push(x, fd, buf, rdma ? c->ticket : NULL,
				  nla_data(tb[FLUXONKV_A_KEY]),
				  (size_t)nla_len(tb[FLUXONKV_A_KEY]),
				  nla_get_u64(tb[FLUXONKV_A_PUT_ID]),
				  nla_get_u64(tb[FLUXONKV_A_LEN]));
	}
	if (!tb[FLUXONKV_A_KEY] || !tb[FLUXONKV_A_HANDLE] ||
	    !tb[FLUXONKV_A_PUT_ID] || !tb[FLUXONKV_A_LEN])
		status = -EINVAL;
	else
		status = x->seg.hold(x->seg.arg, nla_data(tb[FLUXONKV_A_KEY]),
				     (size_t)nla_len(tb[FLUXONKV_A_KEY]),
				     nla_get_u64(tb[FLUXONKV_A_HANDLE]),
				     nla_get_u64(tb[FLUXONKV_A_PUT_ID]),
				     &off, &len, &pin);
	if (!status && (len != nla_get_u64(tb[FLUXONKV_A_LEN]) ||
			off > x->seg.size || len > x->seg.size - off)) {
		x->seg.release(x->seg.arg, pin);
		status = -ESTALE;
	}
	/* A window over just this replica, or the bytes inline after all. */
	if (!status && rdma &&
	    fkv_rdma_expose(t->rdma, c->ticket, off, len, &addr, &rkey)) {
		FKV_XCOUNT(x, rdma_fallbacks, 1);
		rdma = false;
	}
	msg = fkv_wire_msg(FKV_CCMD_PULL);
	if (!msg || nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)status) ||
	    (!status && nla_put_u64(msg, FLUXONKV_A_LEN, len)) ||
	    (!status && nla_put_u64(msg, FKV_CA_CSUM,
				    data_sum(x->seg.base + off, len))) ||
	    (!status && rdma && (nla_put_u64(msg, FKV_CA_ADDR, addr) ||
				 nla_put_u32(msg, FKV_CA_RKEY, rkey)))) {
		nlmsg_free(msg);
		if (!status && rdma)
			fkv_rdma_unexpose(t->rdma, c->ticket, rkey);
		if (!status)
			x->seg.release(x->seg.arg, pin);
		return -ENOMEM;
	}
	if (!status && rdma)
		release_by = release_deadline(x, len);
	/* Inline: the value whole by the same deadline, however it is read. */
	if (!status && !rdma)
		send_by = release_deadline(x, len);
	/* The answer and the value in one go (MSG_MORE on the header). */
	err = write_by(fd, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len,
		       status || rdma ? 0 : MSG_MORE, send_by);
	nlmsg_free(msg);
	if (!status && rdma) {
		uint64_t roff;
		int st = 0;

		/* Pinned (and readable) until the requester's READ is over,
		 * as long as its own deadline lets it take, and no longer. */
		if (!err)
			err = recv_release(x, fd, buf, release_by, &roff, &st);
		fkv_rdma_unexpose(t->rdma, c->ticket, rkey);
		if (!err && !st)
			FKV_XCOUNT(x, rdma_served, 1);
		if (!err && st)
			FKV_XCOUNT(x, serve_errors, 1);	/* its READ failed */
	} else if (!err && !status) {
		err = write_by(fd, x->seg.base + off, len, 0, send_by);
	}
	if (!status)
		x->seg.release(x->seg.arg, pin);
	if (err == -ETIME)
		send_timed_out(x, fd);
	if (err || status)
		FKV_XCOUNT(x, serve_errors, 1);
	else {
		FKV_XCOUNT(x, served, 1);
		FKV_XCOUNT(x, served_bytes, len);
	}
	return err;
}

/*
 * After a placed value, the putter's module sends the XXH64 (seed 0) of
 * its bytes, 8 bytes little endian (kmod/kv_put.c; the kernel has no
 * XXH3): our replica at @off must match it, or the put fails -EBADMSG
 * and the replica goes.
 */
static int place_sum_check(struct fkv_xport *x, int fd, uint64_t off,
			   uint64_t len)
{
	uint64_t le;
	int err;

	err = read_until(fd, &le, sizeof(le), pull_deadline(x, len));
	if (err)
		return err;
	if (XXH64(x->seg.base + off, (size_t)len, 0) == le64toh(le))
		return 0;
	FKV_XCOUNT(x, csum_errors, 1);
	return -EBADMSG;
}

/*
 * A put another node places here: a target, its handle, the bytes
 * straight into it, their sum, our word.  Always -errno or 1: the
 * connection ends.
 */
static int serve_place(struct fkv_xport *x, int fd, struct nlattr **tb)
{
	uint64_t handle = 0, off = 0, pin = 0, len = 0;
	struct nl_msg *msg;
	int status, err;

	if (!x->seg.target)
		status = -EOPNOTSUPP;
	else if (!tb[FLUXONKV_A_KEY] || !tb[FLUXONKV_A_PUT_ID] ||
		 !tb[FLUXONKV_A_LEN])
		status = -EINVAL;
	else
		status = x->seg.target(x->seg.arg, nla_data(tb[FLUXONKV_A_KEY]),
				       (size_t)nla_len(tb[FLUXONKV_A_KEY]),
				       nla_get_u64(tb[FLUXONKV_A_PUT_ID]),
				       len = nla_get_u64(tb[FLUXONKV_A_LEN]),
				       tb[FKV_CA_PLACE_TICKET] ?
				       nla_data(tb[FKV_CA_PLACE_TICKET]) :
				       NULL, &handle, &off, &pin);
	if (!status && (off > x->seg.size || len > x->seg.size - off)) {
		x->seg.placed(x->seg.arg, handle, pin, -EPROTO);
		status = -EPROTO;
	}
	msg = fkv_wire_msg(FKV_CCMD_PLACE);
	err = send_free(fd, msg, msg &&
			!nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)status) &&
			(status || !nla_put_u64(msg, FLUXONKV_A_HANDLE, handle)));
	if (status) {
		FKV_XCOUNT(x, target_errors, 1);
		return err ? err : 1;
	}
	if (!err)
		err = read_until(fd, x->seg.base + off, len,
				 pull_deadline(x, len));
	if (!err)
		err = place_sum_check(x, fd, off, len);
	/* Released (and, failed, dropped) before the requester hears. */
	x->seg.placed(x->seg.arg, handle, pin, err);
	if (!err || err == -EBADMSG) {	/* the requester learns which */
		int st = err;

		msg = fkv_wire_msg(FKV_CCMD_PLACE);
		err = send_free(fd, msg, msg &&
				!nla_put_u32(msg, FLUXONKV_A_STATUS,
					     (uint32_t)st));
		if (!err)
			err = st;
	}
	if (err) {
		FKV_XCOUNT(x, target_errors, 1);
		return err;
	}
	FKV_XCOUNT(x, targets, 1);
	FKV_XCOUNT(x, target_bytes, len);
	return 1;
}

/* The connection's pre-auth slot goes back (it joined, or it is done). */
static void preauth_end(struct tcp_priv *t, struct tcp_conn *c)
{
	pthread_mutex_lock(&t->lock);
	if (c->preauth >= 0)
		t->preauth_used[c->preauth] = false;
	c->preauth = -1;
	pthread_mutex_unlock(&t->lock);
}

/*
 * A pre-auth slot for a connection from @peer (lock held): its index, or
 * -1 when FKV_TCP_PREAUTH_MAX are in the handshake or
 * FKV_TCP_PREAUTH_PER_ADDR from that address.
 */
static int preauth_take(struct tcp_priv *t, const struct sockaddr_storage *peer)
{
	int i, free_slot = -1, same = 0;

	for (i = 0; i < FKV_TCP_PREAUTH_MAX; i++) {
		if (!t->preauth_used[i]) {
			if (free_slot < 0)
				free_slot = i;
		} else if (fkv_same_host(&t->preauth[i], peer)) {
			same++;
		}
	}
	if (free_slot < 0 || same >= FKV_TCP_PREAUTH_PER_ADDR)
		return -1;
	t->preauth[free_slot] = *peer;
	t->preauth_used[free_slot] = true;
	return free_slot;
}

static void *conn_thread(void *arg)
{
	struct tcp_conn *c = arg;
	struct fkv_xport *x = c->x;
	struct nlattr *tb[FKV_CA_MAX + 1];
	uint8_t *buf = malloc(FKV_WIRE_MAX);
	int err = buf ? serve_join(x, c->fd, buf, c->joined_by_ms) : -ENOMEM;

	preauth_end(x->priv, c);
	if (!err) {
		for (;;) {
			/*
			 * A requester may keep its connection between
			 * requests, for FKV_XPORT_IDLE_MS (a stop shuts the
			 * socket down); a frame once started must arrive in
			 * time.  Idle longer: closed, its thread and slot
			 * freed (the requester dials again when it needs us).
			 */
			struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
			int n = poll(&pfd, 1, (int)x->cfg.serve_idle_ms);
			uint8_t cmd;

			if (n < 0 && errno != EINTR)
				break;
			if (n == 0) {
				FKV_XCOUNT(x, idle_closed, 1);
				fkv_dbg("data plane: a connection idle for %u ms: closed",
					x->cfg.serve_idle_ms);
				break;
			}

			if (recv_any(c->fd, buf, CMD_BIT(FKV_CCMD_PULL) |
				     CMD_BIT(FKV_CCMD_PLACE) |
				     CMD_BIT(FKV_CCMD_RDMA),
				     pull_policy, tb, &cmd) ||
			    (cmd == FKV_CCMD_PLACE ? serve_place(x, c->fd, tb) :
			     cmd == FKV_CCMD_RDMA ? serve_rdma(x, c) :
			     serve_pull(x, c, buf, tb)))
				break;
		}
	}
	free(buf);
	shutdown(c->fd, SHUT_RDWR);
	if (c->rdma)
		fkv_rdma_offer_end(((struct tcp_priv *)x->priv)->rdma, c->ticket);
	pthread_mutex_lock(&((struct tcp_priv *)x->priv)->lock);
	c->done = true;
	((struct tcp_priv *)x->priv)->nconns--;
	pthread_mutex_unlock(&((struct tcp_priv *)x->priv)->lock);
	return NULL;
}

/* Join and free the connections whose thread has finished. */
static void reap_conns(struct tcp_priv *t)
{
	struct tcp_conn **pp, *c, *dead = NULL;

	pthread_mutex_lock(&t->lock);
	for (pp = &t->conns; (c = *pp);) {
		if (!c->done) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		c->next = dead;
		dead = c;
	}
	pthread_mutex_unlock(&t->lock);
	while ((c = dead)) {
		dead = c->next;
		pthread_join(c->thread, NULL);
		close(c->fd);
		free(c);
	}
}

/*
 * Room for one more served connection from @peer (lock held): not past
 * FKV_TCP_CONNS_MAX in all, nor FKV_TCP_CONNS_PER_ADDR from its address.
 */
static bool conn_room(struct tcp_priv *t, const struct sockaddr_storage *peer)
{
	const struct tcp_conn *c;
	unsigned int same = 0;

	if (t->nconns >= FKV_TCP_CONNS_MAX)
		return false;
	for (c = t->conns; c; c = c->next)
		if (!c->done && fkv_same_host(&c->addr, peer) &&
		    ++same >= FKV_TCP_CONNS_PER_ADDR)
			return false;
	return true;
}

static void *accept_thread(void *arg)
{
	struct fkv_xport *x = arg;
	struct tcp_priv *t = x->priv;

	for (;;) {
		struct sockaddr_storage peer = { 0 };
		socklen_t plen = sizeof(peer);
		int fd = accept4(t->lfd, (struct sockaddr *)&peer, &plen,
				 SOCK_CLOEXEC);
		struct tcp_conn *c;
		int slot;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* Out of fds or memory for now: wait, never give up. */
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				fkv_warn("data plane: accept: %m (retrying)");
				usleep(100000);
				continue;
			}
			break;		/* the listener was shut down */
		}
		reap_conns(t);
		set_timeouts(fd, x->cfg.io_timeout_ms);
		c = calloc(1, sizeof(*c));
		if (c) {
			c->x = x;
			c->fd = fd;
			c->addr = peer;
			c->joined_by_ms = mono_ms() + x->cfg.io_timeout_ms;
		}
		pthread_mutex_lock(&t->lock);
		if (c && !t->stopping && !conn_room(t, &peer)) {
			/* nothing read, nothing parsed: closed at once */
			FKV_XCOUNT(x, conns_refused, 1);
			fkv_ratelimited_warn(&t->conns_log,
					     "data plane: served connections full (%u at most, %u per address): refused",
					     FKV_TCP_CONNS_MAX,
					     FKV_TCP_CONNS_PER_ADDR);
			pthread_mutex_unlock(&t->lock);
			close(fd);
			free(c);
			continue;
		}
		slot = c && !t->stopping ? preauth_take(t, &peer) : -1;
		if (c && slot < 0 && !t->stopping) {
			/* nothing read, nothing parsed: closed at once */
			FKV_XCOUNT(x, preauth_refused, 1);
			fkv_ratelimited_warn(&t->preauth_log,
					     "data plane: too many connections in the handshake (%u at most, %u per address): refused",
					     FKV_TCP_PREAUTH_MAX,
					     FKV_TCP_PREAUTH_PER_ADDR);
		}
		if (c)
			c->preauth = slot;
		if (!c || slot < 0 || t->stopping ||
		    pthread_create(&c->thread, NULL, conn_thread, c)) {
			if (slot >= 0)
				t->preauth_used[slot] = false;
			pthread_mutex_unlock(&t->lock);
			close(fd);
			free(c);
			continue;
		}
		t->nconns++;
		c->next = t->conns;
		t->conns = c;
		pthread_mutex_unlock(&t->lock);
	}
	return NULL;
}

static int tcp_listen(struct fkv_xport *x, struct tcp_priv *t)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE }, *res;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char port[8];
	int one = 1, err;

	snprintf(port, sizeof(port), "%u", x->cfg.listen_port);
	err = getaddrinfo(x->cfg.listen_host, port, &hints, &res);
	if (err)
		return -EADDRNOTAVAIL;
	t->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t->lfd < 0) {
		err = -errno;
		goto out;
	}
	setsockopt(t->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(t->lfd, res->ai_addr, res->ai_addrlen) ||
	    listen(t->lfd, 64) ||
	    getsockname(t->lfd, (struct sockaddr *)&ss, &sl)) {
		err = -errno;
		close(t->lfd);
		t->lfd = -1;
		goto out;
	}
	x->port = ntohs(ss.ss_family == AF_INET6 ?
			((struct sockaddr_in6 *)&ss)->sin6_port :
			((struct sockaddr_in *)&ss)->sin_port);
	err = 0;
out:
	freeaddrinfo(res);
	return err;
}

static int start(struct fkv_xport *x, bool want_rdma)
{
	struct tcp_priv *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->want_rdma = want_rdma;
	t->lfd = -1;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->push_cond, NULL);
	pthread_cond_init(&t->place_cond, NULL);
	pthread_cond_init(&t->pull_cond, NULL);
	t->wait_tail = &t->wait_head;
	x->priv = t;
	if (!x->cfg.listen_host)
		return 0;
	err = tcp_listen(x, t);
	if (!err && t->want_rdma) {
		err = fkv_rdma_open(&t->rdma, x->cfg.rdma_host ?
				    x->cfg.rdma_host : x->cfg.listen_host,
				    x->cfg.listen_host, x->port, x->seg.base,
				    x->seg.size, x->cfg.io_timeout_ms);
		if (err)
			fkv_log(x->cfg.rdma_optional ? FKV_LOG_INFO : FKV_LOG_ERR,
				"data plane: no RDMA for %s: %s%s",
				x->cfg.rdma_host ? x->cfg.rdma_host : "?",
				strerror(-err),
				x->cfg.rdma_optional ? " (transport auto: TCP)" :
				"");
		else
			fkv_info("data plane: RDMA on %s (segment registered; "
				 "peers read only through per-range windows), "
				 "TCP where a peer has none",
				 fkv_rdma_device(t->rdma));
		if (x->cfg.rdma_optional)
			err = 0;
	}
	if (!err && pthread_create(&t->accept_thread, NULL, accept_thread, x))
		err = -EAGAIN;
	if (err) {
		fkv_rdma_close(t->rdma);
		if (t->lfd >= 0)
			close(t->lfd);
		pthread_cond_destroy(&t->push_cond);
		pthread_cond_destroy(&t->place_cond);
		pthread_cond_destroy(&t->pull_cond);
		pthread_mutex_destroy(&t->lock);
		free(t);
		x->priv = NULL;
		return err;
	}
	t->accepting = true;
	return 0;
}

static void tcp_stop(struct fkv_xport *x)
{
	struct tcp_priv *t = x->priv;
	struct tcp_peer *peer, *pn;
	struct tcp_conn *c, *cn;
	unsigned int i;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	pthread_cond_broadcast(&t->push_cond);
	/* Placement threads end within their socket timeouts. */
	while (t->placing)
		pthread_cond_wait(&t->place_cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	if (t->accepting) {
		shutdown(t->lfd, SHUT_RDWR);
		pthread_join(t->accept_thread, NULL);
	}
	if (t->lfd >= 0)
		close(t->lfd);
	/* No new conns or peers from here: walk the lists unlocked. */
	for (c = t->conns; c; c = cn) {
		cn = c->next;
		shutdown(c->fd, SHUT_RDWR);
		pthread_join(c->thread, NULL);
		close(c->fd);
		free(c);
	}
	for (peer = t->peers; peer; peer = peer->next) {
		pthread_mutex_lock(&peer->lock);
		peer->stop = true;
		for (i = 0; i < 16; i++)
			if (peer->fds[i] >= 0)
				shutdown(peer->fds[i], SHUT_RDWR);
		pthread_cond_broadcast(&peer->cond);
		pthread_mutex_unlock(&peer->lock);
	}
	/* Pull threads are detached: wait until the last one returned. */
	pthread_mutex_lock(&t->lock);
	while (t->pull_live)
		pthread_cond_wait(&t->pull_cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	for (peer = t->peers; peer; peer = pn) {
		struct fkv_pull *p;

		pn = peer->next;
		/* A peer that waited for a thread still has its pulls. */
		while ((p = peer->head)) {
			peer->head = p->next;
			fkv_xport_complete(x, p, -ECANCELED);
		}
		pthread_mutex_destroy(&peer->lock);
		pthread_cond_destroy(&peer->cond);
		free(peer);
	}
	/* Every QP of ours is gone with the peers and served conns. */
	fkv_rdma_close(t->rdma);
	pthread_cond_destroy(&t->push_cond);
	pthread_cond_destroy(&t->place_cond);
	pthread_cond_destroy(&t->pull_cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
	x->priv = NULL;
}

/*
 * Complete every queued pull with -ECANCELED and shut down the
 * connections of those in flight, so that no transport thread writes a
 * target any more once they are reaped (the module frees them when the
 * daemon unregisters).
 */
static void tcp_cancel(struct fkv_xport *x)
{
	struct tcp_priv *t = x->priv;
	struct tcp_peer *peer;
	struct fkv_pull *p;
	unsigned int i;

	pthread_mutex_lock(&t->lock);
	for (peer = t->peers; peer; peer = peer->next) {
		pthread_mutex_lock(&peer->lock);
		__atomic_add_fetch(&peer->cancel_gen, 1, __ATOMIC_RELEASE);
		while ((p = peer->head)) {
			peer->head = p->next;
			fkv_xport_complete(x, p, -ECANCELED);
		}
		peer->tail = &peer->head;
		for (i = 0; i < 16; i++) {
			if (peer->fds[i] >= 0)
				shutdown(peer->fds[i], SHUT_RDWR);
			/* READs in flight end now, not at their deadline. */
			fkv_rdma_conn_abort(peer->rcs[i]);
		}
		pthread_mutex_unlock(&peer->lock);
	}
	pthread_mutex_unlock(&t->lock);
}

static int tcp_start(struct fkv_xport *x)
{
	return start(x, false);
}

static int rdma_start(struct fkv_xport *x)
{
	return start(x, true);
}

const struct fkv_xport_ops fkv_xport_tcp = {
	.name = "tcp",
	.start = tcp_start,
	.pull = tcp_pull,
	.place = tcp_place_step,
	.place_finish = tcp_place_step,
	.cancel = tcp_cancel,
	.stop = tcp_stop,
};

const struct fkv_xport_ops fkv_xport_rdma = {
	.name = "rdma",
	.start = rdma_start,
	.pull = tcp_pull,
	.place = tcp_place_step,
	.place_finish = tcp_place_step,
	.cancel = tcp_cancel,
	.stop = tcp_stop,
};
