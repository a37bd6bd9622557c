// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_data - libFuzzer (or replay) target for the source side of the
 * data port (userspace/fluxond/xport_tcp.c): the handshake (HELLO, JOIN
 * and its HMAC check) and every request a joined peer may send on a
 * served connection -- PULL of a DRAM replica, PULL with
 * SOURCE=REMOTE_SSD (a push: reader threads staging chunks), PLACE (a
 * target, then the bytes), RDMA (no device here: refused) -- through the
 * real transport: fkv_xport_create() listening on 127.0.0.1 (any port),
 * its accept thread and connection threads, one TCP connection per input.
 *
 * The segment behind it is a fake (fkv_seg_view over a heap buffer of
 * FUZZ_SEG bytes, so that ASan sees any byte read or written outside it):
 * one DRAM replica (key "key", handle FUZZ_H, put_id FUZZ_P) the source
 * can hold, one whose offset lies past the segment's end (FUZZ_H_BAD:
 * the transport must refuse it), an SSD copy of "key" at FUZZ_P it
 * stages, and targets for placements (put_id FUZZ_P: inside the segment,
 * FUZZ_P_BAD: past its end).
 *
 * Input: byte 0, bit 0: the harness answers the HELLO with a valid JOIN
 * (the fuzzer cannot forge the MAC over a random nonce) and checks the
 * source's signed answer, so what follows
 * reaches the request handlers; clear, the fuzzer's bytes are the JOIN.
 * Bit 1: the other way round, the requesting side: the transport pulls
 * (a DRAM replica, or with bit 2 an SSD push; bits 3-4 pick its length:
 * 1, 1000, 4096 bytes or a chunk and 10) from this harness, whose answers
 * to its JOIN and PULL are the records (a JOIN record gets the source's
 * signature for the requester's nonce); promises: the requester's JOIN is
 * signed, the pull completes, and not a byte around its target in the
 * segment is written.
 * Then records: op byte, then
 *   0 RAW    len(u16), bytes       sent as they are (payload of a PLACE,
 *                                  broken frames, ...)
 *   1 FRAME  cmd, len(u16), attrs  in a valid nlmsghdr + genlmsghdr
 *   2 READ                         read what the source sent so far
 * after which the harness shuts its sending side and reads to the end.
 *
 * Promises checked besides the sanitizers (abort() when one breaks):
 *   - before a valid JOIN the source sends a HELLO (32-byte nonce) and at
 *     most a JOIN refusal (STATUS != 0), and the segment is never touched
 *     (no hold, stage or target);
 *   - every key the handlers pass to the segment is 1..FLUXONKV_KEY_MAX
 *     bytes (pull_policy); offsets the transport uses lie in the segment;
 *   - every pin taken (hold, stage, target) is released exactly once,
 *     every target placed() once, by the time the connection ends;
 *   - the connection ends: no hang (the input's stream is finite);
 *   - no leak once the transport is destroyed (LeakSanitizer).
 *
 * Build and run: make fuzz FUZZ_TARGETS=data FUZZ_SECONDS=60 (clang;
 * build/fuzz/corpus-data gets the new inputs).  Replay without clang
 * (make unit runs it): build/unit/fuzz_data [FILE...], gcc with
 * -DFKV_FUZZ_STANDALONE, TAP out; build/unit/fuzz_data --seeds DIR
 * writes the seed corpus.
 */
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <xxhash.h>

#include "../../userspace/fluxond/auth.h"
#include "../../userspace/fluxond/log.h"
#include "../../userspace/common/wire.h"
#include "../../userspace/fluxond/xport.h"

#define FUZZ_WRAP_LOG
#define FUZZ_FRAMES
#include "fuzz_common.h"

#define FUZZ_SEG	(8u << 20)
#define FUZZ_H		0x0000000502000001ULL
#define FUZZ_H_BAD	0x0000000502000002ULL
#define FUZZ_P		5ULL
#define FUZZ_P_BAD	6ULL
#define FUZZ_LEN	1000ULL
#define FUZZ_DISK	3000ULL		/* the SSD copy's length */
#define FUZZ_TGT_H	0x0000000702000003ULL

static const char fuzz_secret[] = "fuzz-data-plane-secret-0123456789";

/* ---- the fake segment ---- */

static struct {
	uint8_t *mem;
	int holds, stages, targets;	/* pins taken */
	int releases, placed;		/* ... given back */
	int calls;			/* any callback at all */
} seg;

static void check_key(const void *key, size_t key_len)
{
	CHECK(key && key_len >= 1 && key_len <= FLUXONKV_KEY_MAX);
}

static int fake_hold(void *arg, const void *key, size_t key_len,
		     uint64_t handle, uint64_t put_id, uint64_t *off,
		     uint64_t *len, uint64_t *pin)
{
	__atomic_add_fetch(&seg.calls, 1, __ATOMIC_SEQ_CST);
	check_key(key, key_len);
	if (key_len != 3 || memcmp(key, "key", 3) || put_id != FUZZ_P ||
	    (handle != FUZZ_H && handle != FUZZ_H_BAD))
		return -ENOENT;
	/* the bad one: a length that runs past the segment's end */
	*off = handle == FUZZ_H ? 4096 : FUZZ_SEG - 10;
	*len = FUZZ_LEN;
	*pin = 1;
	__atomic_add_fetch(&seg.holds, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void fake_release(void *arg, uint64_t pin)
{
	CHECK(pin == 1 || pin == 2);
	__atomic_add_fetch(&seg.releases, 1, __ATOMIC_SEQ_CST);
}

static int fake_stage(void *arg, const void *key, size_t key_len,
		      uint64_t put_id, uint64_t off, uint64_t len,
		      uint64_t *seg_off, uint64_t *value_len, uint64_t *pin)
{
	__atomic_add_fetch(&seg.calls, 1, __ATOMIC_SEQ_CST);
	check_key(key, key_len);
	CHECK(len >= 1 && len <= FKV_PUSH_CHUNK && off % FKV_PUSH_CHUNK == 0);
	if (key_len != 3 || memcmp(key, "key", 3) || put_id != FUZZ_P)
		return -ENOENT;
	if (off + len > FUZZ_DISK) {
		/* the caller asked another length: it learns ours */
		if (off >= FUZZ_DISK)
			return -EINVAL;
		len = FUZZ_DISK - off;
	}
	*seg_off = 8192 + off;
	*value_len = FUZZ_DISK;
	*pin = 2;
	__atomic_add_fetch(&seg.stages, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* The ticket fake_target takes (clusterd.c checks the master's MAC). */
#define FUZZ_TICKET_BYTE	0x5a

static int fake_target(void *arg, const void *key, size_t key_len,
		       uint64_t put_id, uint64_t len, const uint8_t *ticket,
		       uint64_t *handle, uint64_t *off, uint64_t *pin)
{
	unsigned int i;

	__atomic_add_fetch(&seg.calls, 1, __ATOMIC_SEQ_CST);
	check_key(key, key_len);
	if (!ticket)
		return -EACCES;
	for (i = 0; i < FKV_MAC_LEN; i++)
		if (ticket[i] != FUZZ_TICKET_BYTE)
			return -EACCES;
	if (put_id != FUZZ_P && put_id != FUZZ_P_BAD)
		return -ENOSPC;
	if (!len || len > FLUXONKV_VALUE_MAX)
		return -EINVAL;
	*handle = FUZZ_TGT_H;
	*off = put_id == FUZZ_P ? 65536 : FUZZ_SEG;
	*pin = 3;
	__atomic_add_fetch(&seg.targets, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void fake_placed(void *arg, uint64_t handle, uint64_t pin, int status)
{
	CHECK(handle == FUZZ_TGT_H && pin == 3);
	__atomic_add_fetch(&seg.placed, 1, __ATOMIC_SEQ_CST);
}

/* ---- the requester's end ---- */

struct peer {
	int fd;
	uint8_t rx[FKV_WIRE_MAX + 16] __attribute__((aligned(8)));
	size_t rx_len;
	bool eof;
	/* as a source: JOIN answers are signed for these nonces */
	bool sign;
	uint8_t their_nonce[FKV_NONCE_LEN], my_nonce[FKV_NONCE_LEN];
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Wait up to @ms for something to read (0: what is there now), then read
 * what there is, into @p->rx while @keep, else discard it.  The source never stalls forever: 10 s without
 * a byte or the end is a hang.
 */
static void peer_read(struct peer *p, int ms, bool keep)
{
	uint8_t junk[65536];
	uint64_t until = mono_ms() + (uint64_t)ms;

	while (!p->eof) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
		uint64_t now = mono_ms();
		ssize_t n;

		if (poll(&pfd, 1, now >= until ? 0 : (int)(until - now)) <= 0)
			return;
		if (keep && p->rx_len < sizeof(p->rx))
			n = recv(p->fd, p->rx + p->rx_len,
				 sizeof(p->rx) - p->rx_len, MSG_DONTWAIT);
		else
			n = recv(p->fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			p->eof = true;
			return;
		}
		if (n > 0 && keep && p->rx_len < sizeof(p->rx))
			p->rx_len += (size_t)n;
		until = 0;	/* something came: the rest only if there */
	}
}

/* The next whole message in @p->rx (blocking up to 10 s), or NULL at EOF. */
static struct nlmsghdr *peer_msg(struct peer *p, size_t *len)
{
	uint64_t until = mono_ms() + 10000;

	for (;;) {
		int err = fkv_wire_frame(p->rx, p->rx_len, len);

		CHECK(err != -EPROTO);
		if (!err)
			return (struct nlmsghdr *)p->rx;
		if (p->eof)
			return NULL;
		CHECK(mono_ms() < until);	/* no hang */
		peer_read(p, 100, true);
	}
}

static void peer_consume(struct peer *p, size_t len)
{
	memmove(p->rx, p->rx + len, p->rx_len - len);
	p->rx_len -= len;
}

static void peer_send(struct peer *p, const void *buf, size_t len)
{
	const uint8_t *b = buf;
	uint64_t until = mono_ms() + 10000;

	while (len) {
		ssize_t n = send(p->fd, b, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EAGAIN) {
			/* the source answers as we send: read it meanwhile */
			CHECK(mono_ms() < until);
			peer_read(p, 10, false);
			continue;
		}
		if (n <= 0)
			return;		/* it closed: the rest is lost */
		b += n;
		len -= (size_t)n;
	}
}

static void peer_frame(struct peer *p, uint8_t cmd, const uint8_t *attrs,
		       size_t len)
{
	static uint8_t buf[FKV_WIRE_MAX + FKV_WIRE_SEAL_LEN];
	size_t total = fuzz_frame(buf, FKV_WIRE_MAX, cmd, attrs, len);

	/*
	 * A source's JOIN answer gets the MAC over what the fuzzer wrote
	 * (it cannot forge one for the requester's random nonce).
	 */
	if (total && p->sign && cmd == FKV_CCMD_JOIN) {
		uint8_t mac[FKV_MAC_LEN];

		CHECK(!fkv_auth_msg_mac((struct nlmsghdr *)buf, fuzz_secret,
					sizeof(fuzz_secret) - 1,
					FKV_AUTH_DATA_JOINED, p->their_nonce,
					p->my_nonce, mac));
		total = fuzz_append_mac(buf, total, sizeof(buf), mac);
	}
	if (total)
		peer_send(p, buf, total);
}

static const struct nla_policy hello_pol[FKV_CA_MAX + 1] = {
	[FKV_CA_NONCE] = { .minlen = FKV_NONCE_LEN, .maxlen = FKV_NONCE_LEN },
};

static const struct nla_policy join_pol[FKV_CA_MAX + 1] = {
	[FLUXONKV_A_STATUS] = { .type = NLA_U32 },
};

/* Its HELLO: the nonce. */
static void peer_hello(struct peer *p, uint8_t nonce[FKV_NONCE_LEN])
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	struct nlmsghdr *nlh;
	size_t len;

	nlh = peer_msg(p, &len);
	CHECK(nlh && fkv_wire_cmd(nlh) == FKV_CCMD_HELLO);
	CHECK(!fkv_wire_parse(nlh, tb, hello_pol) && tb[FKV_CA_NONCE]);
	memcpy(nonce, nla_data(tb[FKV_CA_NONCE]), FKV_NONCE_LEN);
	peer_consume(p, len);
}

/* A JOIN answer, if any: its STATUS. */
static bool peer_join_answer(struct peer *p, int32_t *status)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	struct nlmsghdr *nlh;
	size_t len;

	nlh = peer_msg(p, &len);
	if (!nlh)
		return false;
	CHECK(fkv_wire_cmd(nlh) == FKV_CCMD_JOIN);
	CHECK(!fkv_wire_parse(nlh, tb, join_pol) && tb[FLUXONKV_A_STATUS]);
	*status = (int32_t)nla_get_u32(tb[FLUXONKV_A_STATUS]);
	peer_consume(p, len);
	return true;
}

static void peer_join(struct peer *p, const uint8_t nonce[FKV_NONCE_LEN])
{
	uint8_t mine[FKV_NONCE_LEN];
	struct nlmsghdr *nlh;
	struct nl_msg *msg;
	int32_t status;
	size_t len;

	CHECK(!fkv_auth_nonce(mine));
	msg = fkv_wire_msg(FKV_CCMD_JOIN);
	CHECK(msg && !nla_put_string(msg, FKV_CA_NODE_NAME, "requester") &&
	      !nla_put(msg, FKV_CA_NONCE, FKV_NONCE_LEN, mine) &&
	      !fkv_auth_sign(msg, fuzz_secret, sizeof(fuzz_secret) - 1,
			     FKV_AUTH_DATA_JOIN, nonce, mine));
	peer_send(p, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len);
	nlmsg_free(msg);
	/* the source proves the secret in its answer */
	nlh = peer_msg(p, &len);
	CHECK(nlh && fkv_auth_verify(nlh, fuzz_secret, sizeof(fuzz_secret) - 1,
				     FKV_AUTH_DATA_JOINED, mine, nonce));
	CHECK(peer_join_answer(p, &status) && status == 0);
}

/* ---- the input ---- */

static void fuzz_init_once(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	fuzz_log_quiet();
	seg.mem = malloc(FUZZ_SEG);	/* exactly: ASan guards its ends */
	CHECK(seg.mem);
	memset(seg.mem, 0x5a, FUZZ_SEG);
}

/*
 * Send the records of @data from @off on @p; @preauth: nothing was joined,
 * check that the source says nothing but its refusal meanwhile.
 */
static void send_records(struct peer *p, const uint8_t *data, size_t size,
			 size_t off, bool preauth)
{
	unsigned int steps = 0;

	while (off < size && steps++ < 4096) {
		uint8_t op = data[off++] % 3;
		size_t len;

		if (op == 2) {
			peer_read(p, 0, false);
			continue;
		}
		if (op == 1) {
			uint8_t cmd = off < size ? data[off] : 0;

			off++;
			len = off + 2 <= size ? (size_t)(data[off] |
							 data[off + 1] << 8) : 0;
			off += 2;
			if (off > size)
				break;
			if (len > size - off)
				len = size - off;
			peer_frame(p, cmd, data + off, len);
		} else {
			len = off + 2 <= size ? (size_t)(data[off] |
							 data[off + 1] << 8) : 0;
			off += 2;
			if (off > size)
				break;
			if (len > size - off)
				len = size - off;
			peer_send(p, data + off, len);
		}
		off += len;
		if (preauth) {
			/*
			 * Before the join the source says nothing but, once a
			 * whole JOIN came, its refusal; then it closes.
			 */
			int32_t status;

			peer_read(p, 0, true);
			if (p->rx_len >= NLMSG_HDRLEN &&
			    peer_join_answer(p, &status)) {
				CHECK(status != 0);
				CHECK(p->rx_len == 0);
			}
		}
	}
}

/* Read until the end (the source closes), 10 s at most. */
static void peer_read_to_end(struct peer *p)
{
	uint64_t until = mono_ms() + 10000;

	while (!p->eof) {
		CHECK(mono_ms() < until);	/* no hang */
		peer_read(p, 100, false);
	}
}

static void peer_close(struct peer *p)
{
	/* no TIME_WAIT: one connection per input adds up */
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(p->fd);
	p->fd = -1;
}

static struct fkv_xport_config xport_cfg(bool listen)
{
	return (struct fkv_xport_config){
		.listen_host = listen ? "127.0.0.1" : NULL,
		.node_name = "source",
		.secret = fuzz_secret, .secret_len = sizeof(fuzz_secret) - 1,
		.io_timeout_ms = 2000, .conns_per_peer = 1,
	};
}

static struct fkv_seg_view seg_view(void)
{
	return (struct fkv_seg_view){
		.base = seg.mem, .size = FUZZ_SEG, .hold = fake_hold,
		.release = fake_release, .stage = fake_stage,
		.target = fake_target, .placed = fake_placed,
	};
}

/* Serving side: we are a requester on one connection. */
static void serve_one(const uint8_t *data, size_t size)
{
	struct fkv_xport_config c = xport_cfg(true);
	struct fkv_seg_view v = seg_view();
	static struct peer p;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	uint8_t nonce[FKV_NONCE_LEN];
	struct fkv_xport *x = NULL;
	bool authed = data[0] & 1;

	CHECK(!fkv_xport_create(&x, &fkv_xport_tcp, &c, &v));
	memset(&p, 0, sizeof(p));
	p.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(p.fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(fkv_xport_port(x));
	CHECK(!connect(p.fd, (struct sockaddr *)&sin, sizeof(sin)));

	peer_hello(&p, nonce);
	if (authed)
		peer_join(&p, nonce);
	send_records(&p, data, size, 1, !authed);
	shutdown(p.fd, SHUT_WR);
	if (!authed) {
		int32_t status;

		if (peer_join_answer(&p, &status))
			CHECK(status != 0);
		peer_read(&p, 10000, true);
		CHECK(p.eof && p.rx_len == 0);
		CHECK(__atomic_load_n(&seg.calls, __ATOMIC_SEQ_CST) == 0);
	}
	peer_read_to_end(&p);
	peer_close(&p);
	fkv_xport_destroy(x);
	CHECK(seg.holds + seg.stages == seg.releases);
	CHECK(seg.targets == seg.placed);
}

/* ---- requesting side: we are the source a pull reads from ---- */

#define FUZZ_DST	(256u << 10)	/* the pull's target in the segment */
#define FUZZ_GUARD	4096		/* bytes checked on each side of it */

static void pull_done(struct fkv_pull *pl)
{
	*(int *)pl->arg = 1;
}

/*
 * A pull (DRAM, or an SSD push with bit 2) of one of four lengths (bits
 * 3-4) from a source that is this harness: HELLO, then whatever the
 * records say in answer to the requester's JOIN and PULL.  Promises: the
 * pull completes (no hang); not a byte outside its target is written.
 */
static void request_one(const uint8_t *data, size_t size)
{
	static const uint64_t lens[4] = { 1, 1000, 4096, FKV_PUSH_CHUNK + 10 };
	struct fkv_xport_config c = xport_cfg(false);
	struct fkv_seg_view v = seg_view();
	static struct fkv_pull pl;
	static struct peer p;
	static int lfd = -1;
	static uint16_t port;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	uint8_t nonce[FKV_NONCE_LEN] = { 1, 2, 3 };
	struct fkv_xport *x = NULL;
	struct nl_msg *msg;
	uint64_t until;
	size_t len, i;
	int done = 0;

	if (lfd < 0) {
		lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(lfd >= 0);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		CHECK(!bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) &&
		      !listen(lfd, 8) &&
		      !getsockname(lfd, (struct sockaddr *)&sin, &sl));
		port = ntohs(sin.sin_port);
	}
	CHECK(!fkv_xport_create(&x, &fkv_xport_tcp, &c, &v));
	memset(&pl, 0, sizeof(pl));
	pl.kind = FKV_XFER_PULL;
	pl.fd = -1;
	snprintf(pl.peer, sizeof(pl.peer), "127.0.0.1:%u", port);
	memcpy(pl.key, "key", 3);
	pl.key_len = 3;
	pl.source = data[0] & 4 ? FLUXONKV_SOURCE_REMOTE_SSD :
		    FLUXONKV_SOURCE_REMOTE;
	pl.handle = FUZZ_H;
	pl.put_id = FUZZ_P;
	pl.len = lens[data[0] >> 3 & 3];
	pl.dst_off = FUZZ_DST;
	pl.done = pull_done;
	pl.arg = &done;
	CHECK(!fkv_xport_pull(x, &pl));

	memset(&p, 0, sizeof(p));
	{
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };

		CHECK(poll(&pfd, 1, 10000) == 1);	/* it dials */
	}
	p.fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(p.fd >= 0);
	msg = fkv_wire_msg(FKV_CCMD_HELLO);
	CHECK(msg && !nla_put(msg, FKV_CA_NONCE, FKV_NONCE_LEN, nonce) &&
	      !nla_put_u32(msg, FKV_CA_PROTO, FKV_AUTH_PROTO));
	peer_send(&p, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len);
	nlmsg_free(msg);
	/* its JOIN, signed for our nonce: our answers get signed for its */
	if (peer_msg(&p, &len)) {
		struct nlmsghdr *nlh = (struct nlmsghdr *)p.rx;
		struct nlattr *tb[FKV_CA_MAX + 1];

		CHECK(fkv_wire_cmd(nlh) == FKV_CCMD_JOIN);
		CHECK(!fkv_wire_parse(nlh, tb, hello_pol) && tb[FKV_CA_NONCE]);
		CHECK(fkv_auth_verify(nlh, fuzz_secret, sizeof(fuzz_secret) - 1,
				      FKV_AUTH_DATA_JOIN, nonce,
				      nla_data(tb[FKV_CA_NONCE])));
		memcpy(p.their_nonce, nla_data(tb[FKV_CA_NONCE]),
		       FKV_NONCE_LEN);
		memcpy(p.my_nonce, nonce, FKV_NONCE_LEN);
		p.sign = true;
		peer_consume(&p, len);
	}
	send_records(&p, data, size, 1, false);
	shutdown(p.fd, SHUT_WR);
	until = mono_ms() + 10000;
	while (!done) {
		struct pollfd pfd = { .fd = fkv_xport_fd(x), .events = POLLIN };

		CHECK(mono_ms() < until);	/* the pull ends */
		peer_read(&p, 0, false);
		poll(&pfd, 1, 10);
		fkv_xport_reap(x);
	}
	peer_close(&p);
	fkv_xport_destroy(x);
	CHECK(pl.status <= 0);
	if (fuzz_log_on)
		fprintf(stderr, "fuzz_data: the pull ended: %d\n", pl.status);
	for (i = 0; i < FUZZ_GUARD; i++) {
		CHECK(seg.mem[FUZZ_DST - 1 - i] == 0x5a);
		CHECK(seg.mem[FUZZ_DST + pl.len + i] == 0x5a);
	}
	memset(seg.mem + FUZZ_DST, 0x5a, pl.len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1 << 18))
		return 0;
	fuzz_init_once();
	memset(&seg.holds, 0, sizeof(seg) - offsetof(typeof(seg), holds));
	if (data[0] & 2)
		request_one(data, size);
	else
		serve_one(data, size);
	return 0;
}

#ifdef FKV_FUZZ_STANDALONE
/* ---- the seed corpus, from the real encoders ---- */

static void put_bytes(struct seed *sd, const void *b, size_t n)
{
	const uint8_t *p = b;

	put8(sd, 0);
	put16(sd, (uint16_t)n);
	while (n--)
		put8(sd, *p++);
}

/* Record FRAME from @msg's attributes (consumed). */
static void put_frame(struct seed *sd, struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gh = nlmsg_data(nlh);
	size_t alen = nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN, i;

	put8(sd, 1);
	put8(sd, gh->cmd);
	put16(sd, (uint16_t)alen);
	for (i = 0; i < alen; i++)
		put8(sd, ((uint8_t *)gh)[GENL_HDRLEN + i]);
	nlmsg_free(msg);
}

static struct nl_msg *pull(const char *key, uint64_t handle, uint64_t put_id,
			   uint64_t len, uint32_t source)
{
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_PULL);

	CHECK(msg && !nla_put(msg, FLUXONKV_A_KEY, (int)strlen(key), key) &&
	      !nla_put_u64(msg, FLUXONKV_A_HANDLE, handle) &&
	      !nla_put_u64(msg, FLUXONKV_A_PUT_ID, put_id) &&
	      !nla_put_u64(msg, FLUXONKV_A_LEN, len) &&
	      !nla_put_u32(msg, FLUXONKV_A_SOURCE, source));
	return msg;
}

static struct nl_msg *place(const char *key, uint64_t put_id, uint64_t len)
{
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_PLACE);

	uint8_t ticket[FKV_MAC_LEN];

	memset(ticket, FUZZ_TICKET_BYTE, sizeof(ticket));
	CHECK(msg && !nla_put(msg, FLUXONKV_A_KEY, (int)strlen(key), key) &&
	      !nla_put_u64(msg, FLUXONKV_A_PUT_ID, put_id) &&
	      !nla_put_u64(msg, FLUXONKV_A_LEN, len) &&
	      !nla_put(msg, FKV_CA_PLACE_TICKET, FKV_MAC_LEN, ticket));
	return msg;
}

/*
 * An answer: STATUS, OFFSET (unless < 0), LEN (unless 0), and the
 * end-to-end checksum of the @len zero bytes that follow (with @sum).
 */
static struct nl_msg *answer_sum(uint8_t cmd, uint32_t status, int64_t off,
				 uint64_t len, bool sum)
{
	static const uint8_t zeros[FKV_PUSH_CHUNK];
	struct nl_msg *msg = fkv_wire_msg(cmd);

	CHECK(msg && !nla_put_u32(msg, FLUXONKV_A_STATUS, status));
	if (off >= 0)
		CHECK(!nla_put_u64(msg, FLUXONKV_A_OFFSET, (uint64_t)off));
	if (len)
		CHECK(!nla_put_u64(msg, FLUXONKV_A_LEN, len));
	if (sum)
		CHECK(len <= sizeof(zeros) &&
		      !nla_put_u64(msg, FKV_CA_CSUM,
				   XXH3_64bits(zeros, (size_t)len)));
	return msg;
}

static struct nl_msg *answer(uint8_t cmd, uint32_t status, int64_t off,
			     uint64_t len)
{
	return answer_sum(cmd, status, off, len,
			  cmd == FKV_CCMD_PULL && !status && len);
}

static int make_seeds(const char *dir)
{
	static struct seed sd;
	static uint8_t payload[600], other[1000];
	struct nl_msg *msg;
	uint64_t sum;

	/* pre-auth: a JOIN with a wrong MAC, and garbage */
	put8(&sd, 0);
	msg = fkv_wire_msg(FKV_CCMD_JOIN);
	CHECK(msg && !nla_put_string(msg, FKV_CA_NODE_NAME, "x") &&
	      !nla_put(msg, FKV_CA_MAC, FKV_MAC_LEN, payload));
	put_frame(&sd, msg);
	seed_write(dir, "join-wrong-mac", &sd);
	put8(&sd, 0);
	put_bytes(&sd, "GET / HTTP/1.0\r\n\r\n", 18);
	seed_write(dir, "not-the-protocol", &sd);
	put8(&sd, 0);
	put_frame(&sd, pull("key", FUZZ_H, FUZZ_P, FUZZ_LEN,
			    FLUXONKV_SOURCE_REMOTE));
	seed_write(dir, "pull-before-join", &sd);

	/* joined: pulls of the good, the missing and the bad replica */
	put8(&sd, 1);
	put_frame(&sd, pull("key", FUZZ_H, FUZZ_P, FUZZ_LEN,
			    FLUXONKV_SOURCE_REMOTE));
	put8(&sd, 2);
	put_frame(&sd, pull("kex", FUZZ_H, FUZZ_P, FUZZ_LEN,
			    FLUXONKV_SOURCE_REMOTE));
	put_frame(&sd, pull("key", FUZZ_H_BAD, FUZZ_P, FUZZ_LEN,
			    FLUXONKV_SOURCE_REMOTE));
	put_frame(&sd, pull("key", FUZZ_H, FUZZ_P, FUZZ_LEN + 1,
			    FLUXONKV_SOURCE_REMOTE));
	seed_write(dir, "pulls", &sd);

	/* joined: an SSD push, a wrong length, a missing copy */
	put8(&sd, 1);
	put_frame(&sd, pull("key", 0, FUZZ_P, FUZZ_DISK,
			    FLUXONKV_SOURCE_REMOTE_SSD));
	put8(&sd, 2);
	put_frame(&sd, pull("key", 0, FUZZ_P, FUZZ_DISK - 1,
			    FLUXONKV_SOURCE_REMOTE_SSD));
	put_frame(&sd, pull("kez", 0, FUZZ_P, 10,
			    FLUXONKV_SOURCE_REMOTE_SSD));
	seed_write(dir, "pushes", &sd);

	/* joined: a placement and its bytes */
	put8(&sd, 1);
	put_frame(&sd, place("key", FUZZ_P, sizeof(payload)));
	put_bytes(&sd, payload, sizeof(payload));
	sum = htole64(XXH64(payload, sizeof(payload), 0));
	put_bytes(&sd, &sum, sizeof(sum));	/* the putter's sum */
	seed_write(dir, "place", &sd);
	put8(&sd, 1);
	put_frame(&sd, place("key", FUZZ_P, sizeof(payload)));
	put_bytes(&sd, payload, sizeof(payload));
	sum = ~sum;
	put_bytes(&sd, &sum, sizeof(sum));
	seed_write(dir, "place-bad-sum", &sd);
	put8(&sd, 1);
	put_frame(&sd, place("key", FUZZ_P_BAD, 16));
	put_bytes(&sd, payload, 16);
	seed_write(dir, "place-past-the-segment", &sd);
	put8(&sd, 1);
	put_frame(&sd, place("key", FUZZ_P, sizeof(payload)));
	put_bytes(&sd, payload, 100);
	seed_write(dir, "place-cut-short", &sd);
	put8(&sd, 1);
	msg = place("key", FUZZ_P, 16);
	nlmsg_hdr(msg)->nlmsg_len -= NLA_HDRLEN + FKV_MAC_LEN;	/* no ticket */
	put_frame(&sd, msg);
	put_bytes(&sd, payload, 16);
	seed_write(dir, "place-without-a-ticket", &sd);

	/* joined: RDMA asked (refused here), a RELEASE out of turn */
	put8(&sd, 1);
	put_frame(&sd, fkv_wire_msg(FKV_CCMD_RDMA));
	msg = pull("key", FUZZ_H, FUZZ_P, FUZZ_LEN, FLUXONKV_SOURCE_REMOTE);
	CHECK(!nla_put_u32(msg, FKV_CA_RDMA, 1));
	put_frame(&sd, msg);
	msg = fkv_wire_msg(FKV_CCMD_RELEASE);
	CHECK(msg && !nla_put_u64(msg, FLUXONKV_A_OFFSET, 0));
	put_frame(&sd, msg);
	seed_write(dir, "rdma-refused-release", &sd);

	/* requesting side: a DRAM pull of 1000 bytes, answered in full */
	put8(&sd, 2 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer(FKV_CCMD_PULL, 0, -1, 1000));
	put_bytes(&sd, payload, 1000 > sizeof(payload) ? sizeof(payload) : 1000);
	put_bytes(&sd, payload, 1000 - sizeof(payload));
	seed_write(dir, "req-pull", &sd);
	put8(&sd, 2 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, (uint32_t)-EACCES, -1, 0));
	seed_write(dir, "req-refused", &sd);
	put8(&sd, 2 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer(FKV_CCMD_PULL, (uint32_t)-ENOENT, -1, 0));
	seed_write(dir, "req-pull-enoent", &sd);
	put8(&sd, 2 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer(FKV_CCMD_PULL, 0, -1, 1000));
	put_bytes(&sd, payload, 100);
	seed_write(dir, "req-pull-short", &sd);
	put8(&sd, 2 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer(FKV_CCMD_PULL, 0, -1, 4000));
	put_bytes(&sd, payload, sizeof(payload));
	seed_write(dir, "req-pull-wrong-len", &sd);
	/* ... with bytes that are not what the source summed, or no sum */
	memset(other, 0x5a, sizeof(other));
	put8(&sd, 2 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer(FKV_CCMD_PULL, 0, -1, 1000));
	put_bytes(&sd, other, 1000);
	seed_write(dir, "req-pull-bad-sum", &sd);
	put8(&sd, 2 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer_sum(FKV_CCMD_PULL, 0, -1, 1000, false));
	put_bytes(&sd, payload, 600);
	put_bytes(&sd, payload, 400);
	seed_write(dir, "req-pull-without-a-sum", &sd);

	/* requesting side: an SSD push of 1000 bytes in two chunks */
	put8(&sd, 2 | 4 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer(FKV_CCMD_PULL, 0, 0, 600));
	put_bytes(&sd, payload, 600);
	put_frame(&sd, answer(FKV_CCMD_PULL, 0, 600, 400));
	put_bytes(&sd, payload, 400);
	seed_write(dir, "req-push", &sd);
	put8(&sd, 2 | 4 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer(FKV_CCMD_PULL, 0, 0, 600));
	put_bytes(&sd, payload, 600);
	put_frame(&sd, answer(FKV_CCMD_PULL, (uint32_t)-EIO, -1, 0));
	seed_write(dir, "req-push-fails-mid", &sd);
	put8(&sd, 2 | 4 | 1 << 3);
	put_frame(&sd, answer(FKV_CCMD_JOIN, 0, -1, 0));
	put_frame(&sd, answer(FKV_CCMD_PULL, 0, 600, 400));
	put_bytes(&sd, payload, 400);
	seed_write(dir, "req-push-out-of-order", &sd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--seeds"))
		return make_seeds(argv[2]);
	return fuzz_replay_main(argc, argv, "tests/fuzz/corpus/data",
				LLVMFuzzerTestOneInput);
}
#endif
