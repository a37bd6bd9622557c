// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_ctl - libFuzzer (or replay) target for the master's side of the
 * cluster control port: what members (and strangers) send it before and
 * after the join, through the real code -- cluster_ctl.c (accept, HELLO,
 * JOIN and its HMAC check, heartbeats, LEAVE, DROP_ACK), clusterd.c's
 * router (member_msg: REPORT, REPORT_DONE and every forwarded upcall
 * decoded by nl.c: GET_START, GET_DONE, GET_REVOKE, PUT_*, DELETE,
 * SSD_STATE, ...), dispatch.c and the master (master.c, route.c,
 * member.c).
 *
 * This file includes clusterd.c, so that the router's statics are
 * reachable, and stands in for the module side of it: the fkv_nl_*
 * calls that would reach the kernel are renamed to the fakes below (the
 * master node has no module here; everything members send is real).  The
 * master's control listener is swapped for an AF_UNIX one after
 * fkv_cctl_start() (dup2), so that members connect without TCP ports;
 * the daemon's loop is emulated: poll() the fds fkv_cctl_pollfds() lists,
 * fkv_cctl_handle() what is ready, until nothing is (there is no data
 * plane: fkv_clusterd_handle() less its first slot).  The master's
 * acceptor (accept, HELLO, the JOIN's check; a thread in fluxond) runs
 * inline here (fkv_cctl_config.inline_preauth): the same functions, in
 * this loop, so that a replay is deterministic.
 *
 * Input (all little endian):
 *   byte 0: bits 0-1: members joined (with a valid MAC) before the
 *           stream, as "n1".."n3" in slots 0..2; bit 2: heartbeat each.
 *   then records, each an op byte and its operands:
 *     0 RAW    slot, len(u16), bytes        written as they are
 *     1 FRAME  slot, cmd, len(u16), attrs   wrapped in a valid nlmsghdr
 *                                           + genlmsghdr (lengths fixed)
 *     2 JOIN   slot, inc, name(u8 len + bytes), addr(u8 len + bytes),
 *              len(u16), extra attrs       a JOIN signed for the slot's
 *                                           nonces over every field, the
 *                                           extra bytes too: the fuzzer
 *                                           cannot forge one, so it gets
 *                                           one for whatever it names;
 *                                           once the master accepts it,
 *                                           the slot's FRAME, UPCALL and
 *                                           heartbeats are sealed as a
 *                                           node seals them (RAW bytes
 *                                           are not: they must close it)
 *     3 CONNECT slot                        a new connection (pre-auth)
 *     4 CLOSE  slot                         the member's end closes
 *     5 TICK   slot(unused), secs/2        the master's clock (virtual)
 *                                           forward, fkv_master_tick(),
 *                                           fkv_clusterd_tick()
 *     6 UPCALL slot, cmd, key, put_id, handle, len(u16), source, misc,
 *              len(u16), extra attrs       a forwarded upcall built from
 *              selectors: keys from a small set (or empty, or one byte
 *              too long), put_ids and handles the master answered
 *              lately or the slot's own node's handles (whose node id
 *              the JOIN answer gave), so that a put's PUT_DONE names the
 *              put_id its PUT_START got; misc adds BYTES (= LEN), ERRNO,
 *              HANDLES, one or two ENTRY nests (SSD_EVICTED, PUT_LOCAL)
 *              and FLAGS
 *   slots are 0..FUZZ_SLOTS-1 (taken modulo); ops modulo 7.
 *
 * Promises checked besides the sanitizers (abort() when one breaks):
 *   - whatever the master sends is one well framed message after another
 *     (fkv_wire_frame, nlmsg_type FKV_WIRE_TYPE), sealed right after an
 *     accepted JOIN;
 *   - a connection that never sent a valid JOIN is sent nothing but HELLO
 *     and a JOIN refusal (STATUS != 0): nothing it says is served;
 *   - an upcall whose KEY attribute is empty or longer than
 *     FLUXONKV_KEY_MAX is never answered with STATUS 0;
 *   - after every record: the route table agrees with its counters
 *     (fkv_routes_check), and every node the master holds live is a live
 *     member;
 *   - no leak once the master stops (LeakSanitizer).
 *
 * Build and run (clang; or make fuzz, which does this for every target):
 *
 *   make fuzz FUZZ_TARGETS=ctl FUZZ_SECONDS=60
 *
 * by hand: compile this file and every object of the daemon but main.c,
 * clusterd.c and log.c's fkv_log (wrapped: -Wl,--wrap=fkv_log) with
 * -fsanitize=fuzzer,address,undefined; see the Makefile's fuzz target.
 * New inputs go to build/fuzz/corpus-ctl, not the tree.
 *
 * Replay without clang (make unit runs it): build/unit/fuzz_ctl, built
 * with gcc -DFKV_FUZZ_STANDALONE, replays tests/fuzz/corpus/ctl (or the
 * files named on its command line) and prints TAP; FKV_FUZZ_LOG=1 shows
 * the daemon's log lines.  build/unit/fuzz_ctl --seeds DIR writes the
 * seed corpus (the real encoders' frames) into DIR.
 */
#include <dirent.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/un.h>

/* The module side of the router: fakes (below). */
#define fkv_nl_send_drop	fuzz_nl_send_drop
#define fkv_nl_send_persist	fuzz_nl_send_persist
#define fkv_nl_send_reply	fuzz_nl_send_reply
#define fkv_nl_send_adopt_done	fuzz_nl_send_adopt_done
#define fkv_nl_register		fuzz_nl_register
#define fkv_nl_unregister	fuzz_nl_unregister
#define fkv_nl_unregister_leased fuzz_nl_unregister_leased
#define fkv_nl_dump_module	fuzz_nl_dump_module
#define fkv_adopt_kept		fuzz_adopt_kept
#define fkv_module_ssd_capacity	fuzz_module_ssd_capacity
#include "../../userspace/fluxond/clusterd.c"
#include "../../userspace/fluxond/member.h"
#include "../../userspace/fluxond/route.h"

#define FUZZ_WRAP_LOG
#define FUZZ_FRAMES
#include "fuzz_common.h"

#define FUZZ_SLOTS	5
#define FUZZ_SEG	(64ULL << 20)
#define FUZZ_MASTER_INC	0x4d4d4d4d00000001ULL
#define FUZZ_BAD_REQS	64

static const char fuzz_secret[] = "fuzz-secret-of-the-cluster-0123456789";

/* ---- the module side, faked ---- */

static struct {
	uint64_t drops, persists, replies, adopt_done;
} mod;

int fuzz_nl_send_drop(struct fkv_nl *nl, uint64_t handle, uint32_t flags)
{
	mod.drops++;
	return 0;
}

int fuzz_nl_send_persist(struct fkv_nl *nl, uint64_t handle, uint64_t put_id)
{
	mod.persists++;
	return 0;
}

void fuzz_nl_send_reply(struct fkv_nl *nl, uint8_t cmd, uint64_t req_id,
			const struct fkv_reply *r)
{
	mod.replies++;
}

int fuzz_nl_send_adopt_done(struct fkv_nl *nl)
{
	mod.adopt_done++;
	return 0;
}

int fuzz_nl_register(struct fkv_nl *nl, uint32_t flags, uint32_t node_id,
		     struct fkv_nl_register_info *info)
{
	return -ENODEV;
}

int fuzz_nl_unregister(struct fkv_nl *nl)
{
	return 0;
}

int fuzz_nl_unregister_leased(struct fkv_nl *nl)
{
	return 0;
}

int fuzz_nl_dump_module(void (*fn)(void *arg, const struct fkv_dump_rec *r),
			void *arg, unsigned int *bad)
{
	return -ENODEV;
}

int fuzz_adopt_kept(struct fkv_master *m, struct fkv_nl *nl, const char *what)
{
	return 0;
}

uint64_t fuzz_module_ssd_capacity(void)
{
	return 0;
}

static uint64_t fuzz_segment_used(void *arg)
{
	return 0;
}

/* ---- the members' ends ---- */

struct slot {
	int fd;				/* -1: not connected */
	bool hello;			/* its HELLO arrived: nonce valid */
	uint8_t nonce[FKV_NONCE_LEN];
	bool authed;			/* sent a JOIN with a valid MAC */
	uint8_t my_nonce[FKV_NONCE_LEN];	/* the one its JOIN sent */
	bool sealed;			/* joined: both ways sealed */
	uint8_t tx_key[FKV_MAC_LEN], rx_key[FKV_MAC_LEN];
	uint64_t tx_seq, rx_seq;
	uint32_t node;			/* the id its JOIN answer gave */
	uint8_t rx[2 * FKV_WIRE_MAX] __attribute__((aligned(8)));
	size_t rx_len;
};

static struct {
	struct fkv_clusterd *cd;
	int lfd;			/* our AF_UNIX listener, kept */
	struct sockaddr_un addr;
	socklen_t addr_len;
	struct slot s[FUZZ_SLOTS];
	uint64_t bad_req[FUZZ_BAD_REQS];	/* req_ids that must fail */
	unsigned int nbad;
	uint64_t now;				/* the master's clock (ms) */
	uint64_t req_id;
	uint64_t put_ids[8], handles[8];	/* answered lately */
	unsigned int nput_ids, nhandles;
} F;

static uint64_t fuzz_clock(void *arg)
{
	return F.now;
}

static void bad_req_add(uint64_t id)
{
	if (F.nbad < FUZZ_BAD_REQS)
		F.bad_req[F.nbad++] = id;
}

/* A valid upcall reused the id: its answer may be 0, no promise left. */
static void bad_req_forget(uint64_t id)
{
	unsigned int i;

	for (i = 0; i < F.nbad; i++)
		if (F.bad_req[i] == id)
			F.bad_req[i--] = F.bad_req[--F.nbad];
}

static bool bad_req(uint64_t id)
{
	unsigned int i;

	for (i = 0; i < F.nbad; i++)
		if (F.bad_req[i] == id)
			return true;
	return false;
}

/* One message the master sent to slot @s: true if it accepted a JOIN. */
static bool check_sent(struct slot *s, const struct nlmsghdr *nlh)
{
	const struct genlmsghdr *gh = nlmsg_data(nlh);
	struct nlattr *a;
	uint64_t req_id = 0;
	bool has_req = false, has_status = false;
	uint32_t status = 0;
	int rem;

	CHECK(nlh->nlmsg_type == FKV_WIRE_TYPE);
	nla_for_each_attr(a, (struct nlattr *)((uint8_t *)gh + GENL_HDRLEN),
			  (int)nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN,
			  rem) {
		if (nla_type(a) == FLUXONKV_A_REQ_ID && nla_len(a) == 8) {
			req_id = nla_get_u64(a);
			has_req = true;
		}
		if (nla_type(a) == FLUXONKV_A_STATUS && nla_len(a) == 4) {
			status = nla_get_u32(a);
			has_status = true;
		}
		if (nla_type(a) == FLUXONKV_A_PUT_ID && nla_len(a) == 8)
			F.put_ids[F.nput_ids++ % 8] = nla_get_u64(a);
		if (nla_type(a) == FLUXONKV_A_HANDLE && nla_len(a) == 8)
			F.handles[F.nhandles++ % 8] = nla_get_u64(a);
		if (nla_type(a) == FKV_CA_NODE_ID && nla_len(a) == 4 &&
		    gh->cmd == FKV_CCMD_JOIN)
			s->node = nla_get_u32(a);
	}
	if (gh->cmd == FKV_CCMD_HELLO) {
		CHECK(!s->authed);
		return false;
	}
	/* Strangers hear a HELLO and a refusal, nothing else. */
	if (!s->authed)
		CHECK(gh->cmd == FKV_CCMD_JOIN && has_status && status);
	if (has_req && has_status && gh->cmd < FKV_CCMD_HELLO)
		CHECK(!(bad_req(req_id) && status == 0));
	return gh->cmd == FKV_CCMD_JOIN && has_status && !status && !s->sealed;
}

/* The master accepted slot @s's JOIN: key both directions as a node would. */
static void slot_seal(struct slot *s)
{
	const size_t sl = sizeof(fuzz_secret) - 1;

	CHECK(!fkv_auth_session_key(fuzz_secret, sl, FKV_AUTH_CTL_N2M,
				    s->nonce, s->my_nonce, s->tx_key) &&
	      !fkv_auth_session_key(fuzz_secret, sl, FKV_AUTH_CTL_M2N,
				    s->nonce, s->my_nonce, s->rx_key));
	s->tx_seq = s->rx_seq = 0;
	s->sealed = true;
}

/* A sealed message from the master: its seal must be right; stripped. */
static void check_seal(struct slot *s, struct nlmsghdr *nlh)
{
	const struct nlattr *seal;
	uint8_t want[FKV_MAC_LEN];

	CHECK(nlh->nlmsg_len >= NLMSG_HDRLEN + GENL_HDRLEN + FKV_WIRE_SEAL_LEN);
	seal = (const struct nlattr *)((uint8_t *)nlh + nlh->nlmsg_len -
				       FKV_WIRE_SEAL_LEN);
	CHECK(seal->nla_type == FKV_CA_MAC &&
	      seal->nla_len == FKV_WIRE_SEAL_LEN);
	CHECK(!fkv_auth_seal(s->rx_key, s->rx_seq++, (uint8_t *)nlh +
			     NLMSG_HDRLEN, nlh->nlmsg_len - NLMSG_HDRLEN -
			     FKV_WIRE_SEAL_LEN, want));
	CHECK(!memcmp(want, (const uint8_t *)seal + NLA_HDRLEN, FKV_MAC_LEN));
	nlh->nlmsg_len -= FKV_WIRE_SEAL_LEN;
}

/* Read what the master sent slot @s so far. */
static void drain(struct slot *s)
{
	for (;;) {
		ssize_t n;
		size_t off = 0, len;

		if (s->fd < 0)
			return;
		n = recv(s->fd, s->rx + s->rx_len, sizeof(s->rx) - s->rx_len,
			 MSG_DONTWAIT);
		if (n <= 0)
			return;
		s->rx_len += (size_t)n;
		while (off < s->rx_len) {
			int err = fkv_wire_frame(s->rx + off, s->rx_len - off,
						 &len);
			struct nlmsghdr *nlh;

			CHECK(err != -EPROTO);
			if (err)
				break;	/* not whole yet */
			nlh = (struct nlmsghdr *)(s->rx + off);
			if (off & 3) {
				/* keep it aligned for the parser */
				memmove(s->rx, s->rx + off, s->rx_len - off);
				s->rx_len -= off;
				off = 0;
				nlh = (struct nlmsghdr *)s->rx;
			}
			if (s->sealed)
				check_seal(s, nlh);
			if (check_sent(s, nlh))
				slot_seal(s);
			if (fkv_wire_cmd(nlh) == FKV_CCMD_HELLO && !s->hello) {
				struct nlattr *tb[FKV_CA_MAX + 1];
				static const struct nla_policy pol[FKV_CA_MAX + 1] = {
					[FKV_CA_NONCE] = { .minlen = FKV_NONCE_LEN },
				};

				CHECK(!fkv_wire_parse(nlh, tb, pol));
				CHECK(tb[FKV_CA_NONCE] &&
				      nla_len(tb[FKV_CA_NONCE]) == FKV_NONCE_LEN);
				memcpy(s->nonce, nla_data(tb[FKV_CA_NONCE]),
				       FKV_NONCE_LEN);
				s->hello = true;
			}
			off += len;
		}
		memmove(s->rx, s->rx + off, s->rx_len - off);
		s->rx_len -= off;
	}
}

/*
 * The daemon's loop until nothing is ready (bounded): fkv_clusterd_handle()
 * less its data plane slot (there is no data plane here).
 */
static void pump(void)
{
	struct pollfd pfd[FKV_MEMBERS_MAX + 32];	/* > FKV_CCTL_CONNS */
	unsigned int i;
	int round, n;

	for (round = 0; round < 32; round++) {
		n = fkv_cctl_pollfds(F.cd->cctl, pfd,
				     (int)(sizeof(pfd) / sizeof(pfd[0])));
		if (poll(pfd, (nfds_t)n, 0) <= 0)
			break;
		fkv_cctl_handle(F.cd->cctl, pfd, n);
		for (i = 0; i < FUZZ_SLOTS; i++)
			drain(&F.s[i]);
	}
	for (i = 0; i < FUZZ_SLOTS; i++)
		drain(&F.s[i]);
}

static void slot_close(struct slot *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->hello = s->authed = s->sealed = false;
	s->rx_len = 0;
	s->node = 0;
}

static void slot_connect(struct slot *s)
{
	slot_close(s);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(s->fd >= 0);
	CHECK(!connect(s->fd, (struct sockaddr *)&F.addr, F.addr_len));
	pump();		/* accepted, HELLO read */
}

static void slot_write(struct slot *s, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (s->fd >= 0 && len) {
		ssize_t n = send(s->fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n <= 0) {
			if (n < 0 && errno == EAGAIN) {
				pump();
				continue;
			}
			return;		/* the master closed it */
		}
		p += n;
		len -= (size_t)n;
	}
}

/*
 * A whole message from slot @s: sealed as its node would seal it once
 * joined (the fuzzer cannot forge a seal; RAW bytes go unsealed).
 */
static void slot_send(struct slot *s, const void *frame, size_t len)
{
	static uint8_t buf[FKV_WIRE_MAX + FKV_WIRE_SEAL_LEN]
		__attribute__((aligned(8)));
	uint8_t mac[FKV_MAC_LEN];

	if (!s->sealed || len < NLMSG_HDRLEN || len > FKV_WIRE_MAX ||
	    (len & 3)) {
		slot_write(s, frame, len);
		return;
	}
	memcpy(buf, frame, len);
	CHECK(!fkv_auth_seal(s->tx_key, s->tx_seq++, buf + NLMSG_HDRLEN,
			     len - NLMSG_HDRLEN, mac));
	len = fuzz_append_mac(buf, len, sizeof(buf), mac);
	CHECK(len);
	slot_write(s, buf, len);
}

/* A frame: command @cmd, attribute bytes @attrs (padded to 4). */
static void slot_frame(struct slot *s, uint8_t cmd, const uint8_t *attrs,
		       size_t len)
{
	static uint8_t buf[FKV_WIRE_MAX];
	size_t total = fuzz_frame(buf, sizeof(buf), cmd, attrs, len);

	if (total)
		slot_send(s, buf, total);
}

/* Promise bookkeeping for an upcall frame an authed member sends. */
static void note_upcall(const uint8_t *attrs, size_t len)
{
	const struct nlattr *a;
	uint64_t req_id = 0;
	bool has_req = false, bad = false;
	int rem;

	nla_for_each_attr(a, (struct nlattr *)attrs, (int)len, rem) {
		if (nla_type(a) == FLUXONKV_A_REQ_ID && nla_len(a) >= 8 &&
		    !has_req) {
			req_id = nla_get_u64(a);
			has_req = true;
		}
		if (nla_type(a) == FLUXONKV_A_KEY &&
		    (nla_len(a) < 1 || nla_len(a) > FLUXONKV_KEY_MAX))
			bad = true;
	}
	if (!has_req)
		return;
	if (bad)
		bad_req_add(req_id);
	else
		bad_req_forget(req_id);
}

static void slot_join(struct slot *s, const char *name, uint64_t inc,
		      const char *addr, const uint8_t *extra, size_t extra_len)
{
	struct nl_msg *msg;
	struct nlmsghdr *nlh;

	if (s->fd < 0 || !s->hello || s->authed)
		return;
	CHECK(!fkv_auth_nonce(s->my_nonce));
	msg = fkv_wire_msg_max(FKV_CCMD_JOIN);
	CHECK(msg);
	CHECK(!nla_put_string(msg, FKV_CA_NODE_NAME, name) &&
	      !nla_put_u64(msg, FLUXONKV_A_INCARNATION, inc) &&
	      !nla_put_string(msg, FKV_CA_DATA_ADDR, addr) &&
	      !nla_put_u64(msg, FLUXONKV_A_SEGMENT_SIZE, FUZZ_SEG) &&
	      !nla_put(msg, FKV_CA_NONCE, FKV_NONCE_LEN, s->my_nonce));
	nlh = nlmsg_hdr(msg);
	if (extra_len && nlh->nlmsg_len + NLA_ALIGN(extra_len) +
	    FKV_WIRE_SEAL_LEN < FKV_WIRE_MAX) {
		void *p = nlmsg_reserve(msg, extra_len, NLMSG_ALIGNTO);

		if (p) {
			memcpy(p, extra, extra_len);
			nlh = nlmsg_hdr(msg);
		}
	}
	/* Signed over every field, the fuzzer's extra bytes too. */
	CHECK(!fkv_auth_sign(msg, fuzz_secret, sizeof(fuzz_secret) - 1,
			     FKV_AUTH_CTL_JOIN, s->nonce, s->my_nonce));
	nlh = nlmsg_hdr(msg);
	/* From here it may be served: the refusal promise ends. */
	s->authed = true;
	slot_write(s, nlh, nlh->nlmsg_len);
	nlmsg_free(msg);
	pump();		/* its answer: from then on, sealed */
}

/* ---- setup and teardown per input ---- */

static struct fkv_cluster_config fuzz_cc;

static void fuzz_init_once(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	fuzz_log_quiet();
	fuzz_cc.present = true;
	fuzz_cc.node_name = (char *)"master";
	fuzz_cc.role = FKV_ROLE_MASTER;
	snprintf(fuzz_cc.master.host, sizeof(fuzz_cc.master.host), "127.0.0.1");
	fuzz_cc.master.port = 0;
	snprintf(fuzz_cc.listen.host, sizeof(fuzz_cc.listen.host), "127.0.0.1");
	fuzz_cc.listen.port = 7471;
	fuzz_cc.advertise = fuzz_cc.listen;
	fuzz_cc.transport = FKV_TRANSPORT_TCP;
	fuzz_cc.secret = (unsigned char *)fuzz_secret;
	fuzz_cc.secret_len = sizeof(fuzz_secret) - 1;
	fuzz_cc.heartbeat_ms = 1000;
	fuzz_cc.dead_after_ms = 3000;
	fuzz_cc.state_dir = (char *)"/nonexistent";

	F.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	CHECK(F.lfd >= 0);
	F.addr.sun_family = AF_UNIX;
	/* abstract, per process */
	snprintf(F.addr.sun_path + 1, sizeof(F.addr.sun_path) - 1,
		 "fluxonkv-fuzz-ctl-%d", (int)getpid());
	F.addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				 strlen(F.addr.sun_path + 1));
	CHECK(!bind(F.lfd, (struct sockaddr *)&F.addr, F.addr_len));
	CHECK(!listen(F.lfd, 64));
}

static void fuzz_start(void)
{
	struct fkv_cctl_config ccfg = { 0 };
	struct fkv_master_config mc = { 0 };
	struct fkv_clusterd *cd = calloc(1, sizeof(*cd));
	struct pollfd pfd[4];
	char addr[FKV_ADDR_MAX];
	unsigned int i;
	int n;

	CHECK(cd);
	memset(&mod, 0, sizeof(mod));
	F.nbad = 0;
	F.now = 1000000;
	F.req_id = 0;
	F.nput_ids = F.nhandles = 0;
	memset(F.put_ids, 0, sizeof(F.put_ids));
	memset(F.handles, 0, sizeof(F.handles));
	cd->cfg.cc = &fuzz_cc;
	cd->cc = &fuzz_cc;
	cd->devfd = -1;
	cd->master_role = true;
	pthread_mutex_init(&cd->tgt_lock, NULL);
	CHECK(!fkv_u64map_init(&cd->tokens, 0) &&
	      !fkv_u64map_init(&cd->places, 0) &&
	      !fkv_u64map_init(&cd->targets, 0));
	ccfg.cc = &fuzz_cc;
	ccfg.ops = &cctl_ops;
	ccfg.segment_size = FUZZ_SEG;
	ccfg.segment_used = fuzz_segment_used;
	ccfg.arg = cd;
	ccfg.incarnation = FUZZ_MASTER_INC;
	ccfg.inline_preauth = true;	/* no acceptor thread: deterministic */
	CHECK(!fkv_cctl_start(&cd->cctl, &ccfg));
	/* Its TCP listener becomes ours (AF_UNIX): the same fd number. */
	n = fkv_cctl_pollfds(cd->cctl, pfd, 4);
	CHECK(n == 1);
	CHECK(dup2(F.lfd, pfd[0].fd) == pfd[0].fd);
	/* start_master() without the module and the term file */
	cd->self = fkv_cctl_self_id(cd->cctl);
	mc.node = cd->self;
	mc.capacity = FUZZ_SEG;
	mc.incarnation = FUZZ_MASTER_INC;
	mc.term = 1;
	mc.hash_secret = (const uint8_t *)"fuzz-hash-secret";
	mc.tombs = 64;		/* small: the floor moves too */
	mc.now_ms = fuzz_clock;
	cd->master = fkv_master_create(&mc, &master_ops, cd);
	CHECK(cd->master);
	fkv_hostport_str(addr, sizeof(addr), &fuzz_cc.advertise);
	CHECK(!fkv_master_node_up(cd->master, cd->self, mc.incarnation,
				  mc.capacity, 0, addr));
	cd->registered = true;
	cd->epoch++;
	F.cd = cd;
	for (i = 0; i < FUZZ_SLOTS; i++) {
		F.s[i].fd = -1;
		slot_close(&F.s[i]);
	}
}

static void fuzz_stop(void)
{
	unsigned int i;

	for (i = 0; i < FUZZ_SLOTS; i++)
		slot_close(&F.s[i]);
	fkv_clusterd_stop(F.cd);
	F.cd = NULL;
}

/* The master's invariants, after every record. */
static void check_master(void)
{
	const struct fkv_members *mt = fkv_cctl_members(F.cd->cctl);
	uint32_t id;

	CHECK(fkv_routes_check(fkv_master_routes(F.cd->master)) == 0);
	for (id = 1; id < FKV_ROUTE_NODES; id++) {
		struct fkv_master_node_info ni;

		if (id == F.cd->self ||
		    fkv_master_node_info(F.cd->master, id, &ni) || !ni.live)
			continue;
		CHECK(fkv_members_is_live(mt, id, ni.incarnation));
	}
}

/* ---- the input ---- */

struct in {
	const uint8_t *p;
	size_t left;
};

static bool take(struct in *in, void *buf, size_t n)
{
	if (in->left < n)
		return false;
	memcpy(buf, in->p, n);
	in->p += n;
	in->left -= n;
	return true;
}

static uint8_t take8(struct in *in)
{
	uint8_t b = 0;

	take(in, &b, 1);
	return b;
}

static uint16_t take16(struct in *in)
{
	uint8_t b[2] = { 0, 0 };

	take(in, b, 2);
	return (uint16_t)(b[0] | b[1] << 8);
}

/* @len bytes of the input, as many as there are. */
static const uint8_t *take_n(struct in *in, size_t *len)
{
	const uint8_t *p = in->p;

	if (*len > in->left)
		*len = in->left;
	in->p += *len;
	in->left -= *len;
	return p;
}

/* A string of the input (u8 length): NUL-terminated into @buf. */
static void take_str(struct in *in, char *buf, size_t size)
{
	size_t n = take8(in);
	const uint8_t *p = take_n(in, &n);

	if (n >= size)
		n = size - 1;
	memcpy(buf, p, n);
	buf[n] = 0;
}

/* Handle of node @node as its module stamps it (uapi). */
static uint64_t H(uint32_t node, uint32_t slot, uint64_t put_id)
{
	return FLUXONKV_HANDLE_MAKE(slot, node, put_id);
}

/* Record UPCALL: a forwarded upcall built from selectors. */
static void slot_upcall(struct slot *s, struct in *in)
{
	static char key[FLUXONKV_KEY_MAX + 2];
	uint8_t cmd = take8(in) % 32, ks = take8(in), ps = take8(in);
	uint8_t hs = take8(in), src, misc;
	uint64_t len = (uint64_t)take16(in) * 512, put_id = 0, handle = 0;
	size_t klen = 0, xlen;
	const uint8_t *extra;
	struct nl_msg *msg;
	struct nlmsghdr *nlh;
	bool put_ok;

	src = take8(in);
	misc = take8(in);
	xlen = take16(in);
	extra = take_n(in, &xlen);
	switch (ks & 15) {
	case 0:
		break;
	case 13:
		klen = FLUXONKV_KEY_MAX;
		memset(key, 'm', klen);
		break;
	case 14:
		klen = FLUXONKV_KEY_MAX + 1;	/* must fail */
		memset(key, 'o', klen);
		break;
	case 15:
		klen = 0;			/* an empty KEY: must fail */
		break;
	default:
		key[0] = 'k';
		key[1] = (char)('a' + (ks & 15));
		klen = 2;
	}
	if (!ps)
		put_id = 0;
	else if (ps <= 8)
		put_id = F.put_ids[(ps - 1) % 8];
	else if (ps <= 16)
		put_id = FKV_PUT_ID(1, ps - 8);
	else
		put_id = (uint64_t)ps << (ps & 7) * 8;
	if (!hs)
		handle = 0;
	else if (hs < 64)
		handle = H(s->node, hs, put_id);
	else if (hs < 128)
		handle = F.handles[hs % 8];
	else
		handle = H(hs & 7, hs >> 3 & 15, put_id);

	msg = fkv_wire_msg(cmd);
	CHECK(msg);
	put_ok = !nla_put_u64(msg, FLUXONKV_A_REQ_ID, ++F.req_id) &&
		 (!(ks & 15) || !nla_put(msg, FLUXONKV_A_KEY, (int)klen, key)) &&
		 (!ps || !nla_put_u64(msg, FLUXONKV_A_PUT_ID, put_id)) &&
		 (!hs || !nla_put_u64(msg, FLUXONKV_A_HANDLE, handle)) &&
		 (!len || !nla_put_u64(msg, FLUXONKV_A_LEN, len)) &&
		 (!src || !nla_put_u32(msg, FLUXONKV_A_SOURCE, src - 1u)) &&
		 (!(misc & 1) || !nla_put_u64(msg, FLUXONKV_A_BYTES, len)) &&
		 (!(misc & 2) || !nla_put_u32(msg, FLUXONKV_A_ERRNO,
					      (uint32_t)-EIO)) &&
		 (!(misc & 32) || !nla_put_u32(msg, FLUXONKV_A_FLAGS,
					       misc >> 6));
	if (put_ok && (misc & 4)) {
		uint64_t hv[4] = { handle, F.handles[0], F.handles[1],
				   F.handles[2] };

		put_ok = !nla_put(msg, FLUXONKV_A_HANDLES, sizeof(hv), hv);
	}
	for (unsigned int e = 0; put_ok && e < 2; e++) {
		struct nlattr *nest;

		if (!(misc & (8 << e)))
			continue;
		nest = nla_nest_start(msg, FLUXONKV_A_ENTRY);
		put_ok = nest &&
			 !nla_put(msg, FLUXONKV_A_KEY, e ? 2 : (int)klen,
				  e ? "kz" : key) &&
			 !nla_put_u64(msg, FLUXONKV_A_PUT_ID,
				      e ? F.put_ids[1] : put_id) &&
			 !nla_put_u64(msg, FLUXONKV_A_HANDLE, handle + e) &&
			 !nla_put_u64(msg, FLUXONKV_A_LEN, len ? len : 1) &&
			 !nla_put_u32(msg, FLUXONKV_A_FLAGS, misc >> 6);
		if (put_ok)
			nla_nest_end(msg, nest);
	}
	nlh = nlmsg_hdr(msg);
	if (put_ok && xlen &&
	    nlh->nlmsg_len + NLA_ALIGN(xlen) < FKV_WIRE_MAX) {
		void *p = nlmsg_reserve(msg, xlen, NLMSG_ALIGNTO);

		if (p)
			memcpy(p, extra, xlen);
		nlh = nlmsg_hdr(msg);
	}
	if (put_ok) {
		if (s->authed && cmd < FKV_CCMD_HELLO)
			note_upcall((uint8_t *)nlh + NLMSG_HDRLEN + GENL_HDRLEN,
				    nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN);
		slot_send(s, nlh, nlh->nlmsg_len);
	}
	nlmsg_free(msg);
}

static void member_hello(struct slot *s, unsigned int i, bool beat)
{
	char name[8], addr[32];

	slot_connect(s);
	snprintf(name, sizeof(name), "n%u", i + 1);
	snprintf(addr, sizeof(addr), "127.0.0.%u:7471", i + 2);
	slot_join(s, name, 0x100 + i, addr, NULL, 0);
	pump();
	if (beat) {
		struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_HEARTBEAT);

		CHECK(msg && !nla_put_u64(msg, FLUXONKV_A_INCARNATION,
					  0x100 + i));
		slot_send(s, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len);
		nlmsg_free(msg);
		pump();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	unsigned int i, nmem, steps = 0;
	uint8_t flags;

	if (size < 1 || size > (1 << 18))
		return 0;
	fuzz_init_once();
	fuzz_start();
	flags = take8(&in);
	nmem = flags & 3;
	for (i = 0; i < nmem && i < FUZZ_SLOTS; i++)
		member_hello(&F.s[i], i, flags & 4);
	check_master();
	while (in.left && steps++ < 4096) {
		uint8_t op = take8(&in) % 7;
		struct slot *s = &F.s[take8(&in) % FUZZ_SLOTS];
		size_t len;
		const uint8_t *p;

		switch (op) {
		case 0:
			len = take16(&in);
			p = take_n(&in, &len);
			slot_write(s, p, len);
			break;
		case 1: {
			uint8_t cmd = take8(&in);

			len = take16(&in);
			p = take_n(&in, &len);
			if (s->authed && cmd < FKV_CCMD_HELLO)
				note_upcall(p, len);
			slot_frame(s, cmd, p, len);
			break;
		}
		case 2: {
			char name[FKV_NODE_NAME_MAX + 8], addr[FKV_ADDR_MAX];
			uint64_t inc = 0x100 + (take8(&in) & 15);

			take_str(&in, name, sizeof(name));
			take_str(&in, addr, sizeof(addr));
			len = take16(&in);
			p = take_n(&in, &len);
			if (!name[0])
				snprintf(name, sizeof(name), "n9");
			if (!addr[0])
				snprintf(addr, sizeof(addr), "127.0.0.9:7471");
			slot_join(s, name, inc, addr, p, len);
			break;
		}
		case 3:
			slot_connect(s);
			break;
		case 4:
			slot_close(s);
			break;
		case 5:
			F.now += (uint64_t)take8(&in) * 500;
			fkv_master_tick(F.cd->master);
			fkv_clusterd_tick(F.cd);
			break;
		case 6:
			slot_upcall(s, &in);
			break;
		}
		pump();
		check_master();
	}
	fuzz_stop();
	return 0;
}

#ifdef FKV_FUZZ_STANDALONE
/* ---- the seed corpus, from the real encoders ---- */

static void put_str(struct seed *sd, const char *str)
{
	put8(sd, (uint8_t)strlen(str));
	while (*str)
		put8(sd, (uint8_t)*str++);
}

static void put_connect(struct seed *sd, uint8_t slot)
{
	put8(sd, 3);
	put8(sd, slot);
}

/* Record UPCALL for @slot (selectors as the harness reads them). */
static void put_upcall_misc(struct seed *sd, uint8_t slot, uint8_t cmd,
			    uint8_t ks, uint8_t ps, uint8_t hs, uint16_t len,
			    uint8_t misc)
{
	put8(sd, 6);
	put8(sd, slot);
	put8(sd, cmd);
	put8(sd, ks);
	put8(sd, ps);
	put8(sd, hs);
	put16(sd, len);
	put8(sd, 0);
	put8(sd, misc);
	put16(sd, 0);
}

static void put_upcall(struct seed *sd, uint8_t slot, uint8_t cmd, uint8_t ks,
		       uint8_t ps, uint8_t hs, uint16_t len, uint8_t src)
{
	put8(sd, 6);
	put8(sd, slot);
	put8(sd, cmd);
	put8(sd, ks);
	put8(sd, ps);
	put8(sd, hs);
	put16(sd, len);
	put8(sd, src);
	put8(sd, 0);
	put16(sd, 0);
}

/* Record JOIN (with a valid MAC) for @slot. */
static void put_join(struct seed *sd, uint8_t slot, uint8_t inc,
		     const char *name, const char *addr)
{
	put8(sd, 2);
	put8(sd, slot);
	put8(sd, inc);
	put_str(sd, name);
	put_str(sd, addr);
	put16(sd, 0);
}

/* Record FRAME for @slot from the attributes of @msg (consumed). */
static void put_frame(struct seed *sd, uint8_t slot, struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gh = nlmsg_data(nlh);
	size_t alen = nlh->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;
	size_t i;

	put8(sd, 1);
	put8(sd, slot);
	put8(sd, gh->cmd);
	put16(sd, (uint16_t)alen);
	for (i = 0; i < alen; i++)
		put8(sd, ((uint8_t *)gh)[GENL_HDRLEN + i]);
	nlmsg_free(msg);
}

/* Record RAW for @slot: @msg's bytes as they are (consumed). */
static void put_raw(struct seed *sd, uint8_t slot, struct nl_msg *msg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	uint32_t i;

	put8(sd, 0);
	put8(sd, slot);
	put16(sd, (uint16_t)nlh->nlmsg_len);
	for (i = 0; i < nlh->nlmsg_len; i++)
		put8(sd, ((uint8_t *)nlh)[i]);
	nlmsg_free(msg);
}

static struct nl_msg *upcall(uint8_t cmd, uint64_t req, const char *key)
{
	struct nl_msg *msg = fkv_wire_msg(cmd);

	CHECK(msg && !nla_put_u64(msg, FLUXONKV_A_REQ_ID, req));
	if (key)
		CHECK(!nla_put(msg, FLUXONKV_A_KEY, (int)strlen(key), key));
	return msg;
}

static struct nl_msg *with_u64(struct nl_msg *msg, int attr, uint64_t v)
{
	CHECK(!nla_put_u64(msg, attr, v));
	return msg;
}

static struct nl_msg *with_u32(struct nl_msg *msg, int attr, uint32_t v)
{
	CHECK(!nla_put_u32(msg, attr, v));
	return msg;
}

/* A put of "k" by node 2 (slot 0) through PUT_START and PUT_DONE. */
static void seed_put(struct seed *sd, const char *key, uint64_t put_id)
{
	put_frame(sd, 0, with_u64(upcall(FLUXONKV_CMD_PUT_START, 1, key),
				  FLUXONKV_A_LEN, 4096));
	put_frame(sd, 0, with_u64(with_u64(with_u64(
		upcall(FLUXONKV_CMD_PUT_DONE, 2, key), FLUXONKV_A_PUT_ID,
		put_id), FLUXONKV_A_HANDLE, H(2, 1, put_id)), FLUXONKV_A_LEN,
		4096));
}

static int make_seeds(const char *dir)
{
	static struct seed sd;
	/* master term 1: the first put_id (term.h FKV_PUT_ID) */
	uint64_t pid = FKV_PUT_ID(1, 1);

	/* a stranger's bytes, no member */
	put8(&sd, 0);
	put_connect(&sd, 0);
	put_raw(&sd, 0, fkv_wire_msg(FKV_CCMD_HEARTBEAT));
	seed_write(dir, "stranger-heartbeat", &sd);
	put8(&sd, 0);
	put_connect(&sd, 0);
	put_frame(&sd, 0, with_u64(fkv_wire_msg(FKV_CCMD_JOIN),
				   FLUXONKV_A_INCARNATION, 7));
	seed_write(dir, "stranger-bad-join", &sd);
	/* a join with a valid MAC for an odd name and address */
	put8(&sd, 0);
	put_connect(&sd, 1);
	put_join(&sd, 1, 4, "node", "[::1]:7471 xyz");
	seed_write(dir, "join-odd-address", &sd);

	/* two members: heartbeats, leave, drop acks */
	put8(&sd, 2 | 4);
	put_frame(&sd, 0, with_u64(with_u64(fkv_wire_msg(FKV_CCMD_HEARTBEAT),
					    FLUXONKV_A_INCARNATION, 0x100),
				   FLUXONKV_A_SEGMENT_USED, 1 << 20));
	put_frame(&sd, 1, with_u64(fkv_wire_msg(FKV_CCMD_DROP_ACK),
				   FKV_CA_SYNC_ID, 1));
	put_frame(&sd, 1, with_u64(fkv_wire_msg(FKV_CCMD_LEAVE),
				   FLUXONKV_A_INCARNATION, 0x101));
	put8(&sd, 5);
	put8(&sd, 0);
	seed_write(dir, "heartbeat-leave", &sd);

	/* a put, a get from the other node, its pull's done and revoke */
	put8(&sd, 2);
	seed_put(&sd, "k", pid);
	put_frame(&sd, 1, upcall(FLUXONKV_CMD_GET_START, 3, "k"));
	put_frame(&sd, 1, with_u32(with_u64(with_u64(with_u64(
		upcall(FLUXONKV_CMD_GET_DONE, 4, "k"), FLUXONKV_A_PUT_ID, pid),
		FLUXONKV_A_HANDLE, H(3, 1, pid)), FLUXONKV_A_LEN, 4096),
		FLUXONKV_A_SOURCE, FLUXONKV_SOURCE_REMOTE));
	put_frame(&sd, 1, with_u32(with_u64(with_u64(
		upcall(FLUXONKV_CMD_GET_REVOKE, 5, "k"), FLUXONKV_A_PUT_ID,
		pid), FLUXONKV_A_HANDLE, H(2, 1, pid)), FLUXONKV_A_SOURCE,
		FLUXONKV_SOURCE_REMOTE));
	put_frame(&sd, 0, upcall(FLUXONKV_CMD_DELETE, 6, "k"));
	seed_write(dir, "put-get-revoke-delete", &sd);

	/* one-trip PUT, PUT_PLACE, an abort */
	put8(&sd, 2);
	put_frame(&sd, 0, with_u64(with_u64(with_u64(
		upcall(FLUXONKV_CMD_PUT, 1, "one"), FLUXONKV_A_HANDLE,
		H(2, 3, 0)), FLUXONKV_A_LEN, 100), FLUXONKV_A_PUT_ID, 0));
	put_frame(&sd, 0, with_u64(upcall(FLUXONKV_CMD_PUT_START, 2, "pl"),
				   FLUXONKV_A_LEN, 8192));
	put_frame(&sd, 0, with_u64(with_u64(
		upcall(FLUXONKV_CMD_PUT_PLACE, 3, "pl"), FLUXONKV_A_PUT_ID,
		pid + 1), FLUXONKV_A_LEN, 8192));
	put_frame(&sd, 0, with_u64(upcall(FLUXONKV_CMD_PUT_ABORT, 4, "pl"),
				   FLUXONKV_A_PUT_ID, pid + 1));
	seed_write(dir, "put-one-trip-place-abort", &sd);

	/* SSD state, commit, eviction */
	put8(&sd, 1);
	put_frame(&sd, 0, with_u64(with_u64(fkv_wire_msg(FLUXONKV_CMD_SSD_STATE),
					    FLUXONKV_A_SSD_CAPACITY, 1 << 30),
				   FLUXONKV_A_PUT_ID, pid + 40));
	seed_put(&sd, "s", pid + 41);
	put_frame(&sd, 0, with_u64(with_u64(
		upcall(FLUXONKV_CMD_SSD_COMMIT, 7, "s"), FLUXONKV_A_PUT_ID,
		pid + 41), FLUXONKV_A_LEN, 4096));
	seed_write(dir, "ssd-state-commit", &sd);

	/* warm restart reports */
	put8(&sd, 2);
	put_frame(&sd, 0, with_u32(with_u64(with_u64(with_u64(
		fkv_wire_msg(FKV_CCMD_REPORT), FLUXONKV_A_HANDLE, H(2, 9, 5)),
		FLUXONKV_A_PUT_ID, 5), FLUXONKV_A_LEN, 10),
		FLUXONKV_A_SOURCE, FLUXONKV_SOURCE_MEMORY));
	{
		struct nl_msg *m = fkv_wire_msg(FKV_CCMD_REPORT);

		CHECK(m && !nla_put(m, FLUXONKV_A_KEY, 2, "rk"));
		put_frame(&sd, 0, with_u32(with_u64(with_u64(with_u64(m,
			FLUXONKV_A_HANDLE, H(2, 9, 5)), FLUXONKV_A_PUT_ID, 5),
			FLUXONKV_A_LEN, 10), FLUXONKV_A_SOURCE,
			FLUXONKV_SOURCE_MEMORY));
	}
	put_frame(&sd, 0, fkv_wire_msg(FKV_CCMD_REPORT_DONE));
	put_frame(&sd, 1, upcall(FLUXONKV_CMD_GET_START, 8, "rk"));
	seed_write(dir, "report-adopt", &sd);

	/* a join replacing a live member, then a close */
	put8(&sd, 1);
	put_connect(&sd, 1);
	put_join(&sd, 1, 5, "n1", "127.0.0.2:7471");
	put8(&sd, 4);
	put8(&sd, 1);
	put8(&sd, 5);
	put8(&sd, 0);
	seed_write(dir, "rejoin-replace-close", &sd);

	/* an oversized key: must fail */
	put8(&sd, 1);
	{
		static char big[FLUXONKV_KEY_MAX + 2];

		memset(big, 'x', sizeof(big) - 1);
		put_frame(&sd, 0, upcall(FLUXONKV_CMD_GET_START, 9, big));
	}
	seed_write(dir, "key-too-long", &sd);

	/* selectors: a put, a remote get and its promotion, time passes */
	put8(&sd, 2);
	put_upcall(&sd, 0, FLUXONKV_CMD_PUT_START, 1, 0, 0, 8, 0);
	put_upcall(&sd, 0, FLUXONKV_CMD_PUT_DONE, 1, 1, 1, 8, 0);
	put_upcall(&sd, 1, FLUXONKV_CMD_GET_START, 1, 0, 0, 0, 0);
	put_upcall(&sd, 1, FLUXONKV_CMD_GET_DONE, 1, 1, 2, 8,
		   FLUXONKV_SOURCE_REMOTE + 1);
	put_upcall(&sd, 0, FLUXONKV_CMD_PUT_START, 2, 0, 0, 8, 0);
	put8(&sd, 5);
	put8(&sd, 0);
	put8(&sd, 200);
	put_upcall(&sd, 0, FLUXONKV_CMD_PUT_DONE, 2, 2, 1, 8, 0);
	put_upcall(&sd, 1, FLUXONKV_CMD_GET_REVOKE, 1, 1, 64,
		   0, FLUXONKV_SOURCE_REMOTE + 1);
	seed_write(dir, "upcalls-put-get-expire", &sd);

	/* selectors: one-trip puts filling node 2, a placement, a delete */
	put8(&sd, 3);
	for (uint8_t i = 1; i < 12; i++)
		put_upcall(&sd, 0, FLUXONKV_CMD_PUT, i, 0, i, 0xffff, 0);
	put_upcall(&sd, 2, FLUXONKV_CMD_PUT_START, 3, 0, 0, 100, 0);
	put_upcall(&sd, 2, FLUXONKV_CMD_PUT_PLACE, 3, 1, 0, 100, 0);
	put_upcall(&sd, 1, FLUXONKV_CMD_DELETE, 1, 0, 0, 0, 0);
	put_upcall(&sd, 1, FLUXONKV_CMD_NEED_ROOM, 0, 0, 0, 0xffff, 0);
	seed_write(dir, "upcalls-fill-place-delete", &sd);

	/* misc: NEED_ROOM (BYTES, HANDLES), ACCESS, SSD_COMMIT ERRNO,
	 * SSD_EVICTED and PUT_LOCAL entries */
	put8(&sd, 2);
	put_upcall(&sd, 0, FLUXONKV_CMD_PUT_START, 4, 0, 0, 8, 0);
	put_upcall(&sd, 0, FLUXONKV_CMD_PUT_DONE, 4, 1, 1, 8, 0);
	put_upcall_misc(&sd, 0, FLUXONKV_CMD_ACCESS, 0, 0, 64, 0, 4);
	put_upcall_misc(&sd, 0, FLUXONKV_CMD_NEED_ROOM, 0, 0, 64, 100, 1 | 4);
	put_upcall_misc(&sd, 0, FLUXONKV_CMD_SSD_COMMIT, 4, 1, 0, 8, 2);
	put_upcall_misc(&sd, 0, FLUXONKV_CMD_SSD_EVICTED, 4, 1, 0, 8, 8 | 16);
	put_upcall_misc(&sd, 1, FLUXONKV_CMD_PUT_LOCAL, 5, 12, 3, 8, 8);
	seed_write(dir, "upcalls-misc", &sd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--seeds"))
		return make_seeds(argv[2]);
	return fuzz_replay_main(argc, argv, "tests/fuzz/corpus/ctl",
				LLVMFuzzerTestOneInput);
}
#endif
