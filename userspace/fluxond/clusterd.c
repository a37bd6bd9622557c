// SPDX-License-Identifier: GPL-2.0
/*
 * clusterd.c - fluxond's cluster runtime (clusterd.h).
 *
 * Everything runs in the daemon's single thread except the transport's
 * own threads, whose completions come back through fkv_xport_reap().
 *
 * An upcall from our module:
 *   - master node: answered by the master in process, as from node self;
 *   - other nodes: forwarded verbatim to the master (REQ_ID is the
 *     module's), answered when the master's answer comes back; -ENOTCONN
 *     at once while not joined.
 * GET_START answered SOURCE=REMOTE names the source node's handle and
 * data address; the module gets a token instead (HANDLE), and its FETCH
 * {token, OFFSET} starts a pull into the target.  A failed pull is
 * answered with its errno; the module revokes (GET_REVOKE with the token,
 * translated back to the source handle here) and re-selects.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <openssl/crypto.h>

#include "auth.h"
#include "../common/cluster_msg.h"
#include "cluster_ctl.h"
#include "clusterd.h"
#include "ctlsock.h"
#include "dispatch.h"
#include "log.h"
#include "nl.h"
#include "term.h"
#include "u64map.h"
#include "../common/wire.h"
#include "xport.h"

#define A(x)	FKV_ATTR(FLUXONKV_A_##x)
/* A token the module never fetched, or whose revoke never came. */
#define FKV_TOKEN_TTL_MS	60000

/*
 * An overwrite or delete answer held back until the other nodes that had
 * a copy of the old version applied their DROP_REPLICA (they acknowledge
 * it), or until the lease we granted each of them before the drop ran out
 * (cluster.lease_ms from now: a node serves no local hit past the lease
 * of a heartbeat we answered, and we answer none of its heartbeats before
 * its drop): once the put or delete returns, no node serves the old
 * version.
 */
#define FKV_SYNC_NODES		8

struct sync_wait {
	struct sync_wait *next;
	uint64_t id;
	uint32_t nodes[FKV_SYNC_NODES];	/* still owing an ack */
	unsigned int nnodes;
	/*
	 * ... and nodes still owing the answer to a batch of eviction drops
	 * (FKV_CCMD_DROPS) that holds one of this key's replicas: until it
	 * is applied the node may serve that replica, the version this
	 * answer replaces.
	 */
	uint32_t bnodes[FKV_SYNC_NODES];
	uint64_t bbatch[FKV_SYNC_NODES];	/* up to this batch */
	unsigned int nbnodes;
	uint64_t deadline_ms;
	/*
	 * Not answered before this either, acks or not: the leases nodes we
	 * do not hear may still serve on (leases_may_run(); 0: none).
	 */
	uint64_t hold_until_ms;
	uint32_t caller;		/* whose upcall is answered */
	uint8_t cmd;
	uint64_t req_id;
	struct fkv_reply r;
	uint64_t epoch;			/* caller == self: our registration */
};

/* A remote source handed to the module as a token (GET_START .. FETCH). */
struct fetch_tok {
	uint64_t token;
	uint64_t put_id, len;
	uint64_t src_handle;
	uint32_t src_node;
	uint32_t source;		/* FLUXONKV_SOURCE_REMOTE */
	char addr[FKV_ADDR_MAX];
	uint64_t deadline_ms;
	uint64_t fetch_req;		/* the module's FETCH being served */
	uint64_t epoch;			/* registration it belongs to */
	bool pulling;
	struct fkv_pull pull;
	struct fkv_clusterd *cd;
};

/*
 * A put of ours placed on another node (PUT_PLACE .. PUT_DONE): the
 * transport asks the target for a replica (step 1: its handle and a
 * connection the module sends the value on), then waits for the
 * target's word that every byte is in (step 2) before the module's
 * PUT_DONE goes to the master.
 */
struct place_op {
	struct fkv_pull p;		/* FKV_XFER_PLACE */
	struct fkv_clusterd *cd;
	uint64_t place_req;		/* the module's PUT_PLACE */
	uint64_t done_req;		/* its PUT_DONE, held for step 2 */
	struct nlmsghdr *done_msg;	/* that PUT_DONE, verbatim */
	uint64_t epoch;			/* registration it belongs to */
	uint64_t deadline_ms;
	bool busy;			/* a transport step runs */
	bool answered;			/* the module has HANDLE and FD */
	bool dead;			/* aborted while busy: freed when done */
};

/*
 * A replica made here for another node's put, not published yet: the
 * master's PLACED publishes it; a failed transfer or FKV_TARGET_TTL_MS
 * without PLACED drops it (the master never referenced it).
 */
struct target_rec {
	uint64_t deadline_ms;
	int status;			/* 1 filling, 0 filled, < 0 failed */
};

/* Longer than a put may stay in flight at the master (60 s). */
#define FKV_TARGET_TTL_MS	70000

/*
 * Master: the eviction drops owed to another node, sent in batches of up
 * to FKV_DROPS_BATCH handles (FKV_CCMD_DROPS, 32 KiB), at most
 * FKV_DROPS_WINDOW of them unanswered, each only while that node's
 * control queue is less than half full (fkv_cctl_member_roomy).  An
 * eviction burst of 10^5 single DROP_REPLICAs (40 bytes each) overflowed
 * the node's 4 MiB queue and cost a healthy node its connection; now it
 * waits here, 24 bytes a handle, and goes as fast as the node applies it.
 * e[head, sent) are sent (e->batch their batch), e[sent, len) not yet; an
 * entry whose handle is 0 was sent on its own meanwhile (drops_sync).
 */
#define FKV_DROPS_BATCH		4096
#define FKV_DROPS_WINDOW	4

struct drop_ent {
	uint64_t handle;
	uint64_t hash;		/* its key's route hash */
	uint64_t batch;
};

struct drop_queue {
	struct drop_ent *e;
	size_t head, sent, len, cap;
	uint64_t batches, acked;	/* batches sent / answered */
};

struct fkv_clusterd {
	struct fkv_clusterd_config cfg;
	const struct fkv_cluster_config *cc;
	bool master_role;
	struct fkv_nl *nl;
	struct fkv_cctl *cctl;
	struct fkv_xport *xport;
	struct fkv_master *master;	/* master role */
	uint64_t term;			/* master role: ours */
	struct fkv_fences fences;	/* master role: the nodes' (term.h) */
	/* master role: each node's REPORTed DRAM replicas until its REPORT_DONE */
	struct fkv_adopted *reported[FKV_ROUTE_NODES];
	uint64_t report_at_ms;	/* reports held back until (test hook) */
	/*
	 * node: what our module kept, listed at registration and reported
	 * in acknowledged batches (report_pump): kept[kept_next..nkept)
	 * still to send; batches sent / acknowledged; the next batch's
	 * REPORT_ACK owed; when the master last acknowledged one.
	 */
	struct kept_rec **kept;
	size_t nkept, kept_cap, kept_next;
	uint64_t report_batches, report_acked, report_sent0;
	uint64_t report_ack_ms;
	bool reporting, report_marker_due;
	/* this rejoin's reports of each member: adopted, refused */
	uint64_t report_counts[FKV_ROUTE_NODES][2];
	uint32_t self;			/* our node id once known */
	bool registered;
	uint64_t epoch;			/* bumps at every (un)registration */
	struct fkv_nl_register_info reg;
	int devfd;
	uint8_t *seg;			/* writable mapping */
	uint64_t seg_size;
	struct fkv_u64map tokens;	/* token -> struct fetch_tok */
	uint64_t next_token;
	struct fkv_u64map places;	/* put_id -> struct place_op */
	pthread_mutex_t tgt_lock;	/* protects targets, place_key*,
					 * targets_refused (transport
					 * threads) */
	struct fkv_u64map targets;	/* handle -> struct target_rec */
	/*
	 * The key placement tickets for this node are checked with
	 * (auth.h): the master's own, random; a node's, the one its control
	 * connection shares with the master (none while not joined).
	 */
	uint8_t place_key[FKV_MAC_LEN];
	bool place_key_ok;
	uint64_t targets_refused;	/* PLACEs without a valid ticket */
	struct fkv_ratelimit refuse_log;
	struct sync_wait *syncs;	/* answers waiting for drop acks */
	struct sync_wait *cur_sync;	/* the one being built, in dispatch */
	uint64_t next_sync;
	/*
	 * master: a rejoined node's fence (at @at) is lifted once it
	 * acknowledges REPORT_DONE's SYNC_ID @sync: every refused copy it
	 * kept is dropped or unrouted on it by then (fkv_fences_lift).
	 */
	struct {
		uint64_t sync, at;
	} unfence[FKV_ROUTE_NODES];
	/* master: eviction drops owed to each node (drops_pump) ... */
	struct drop_queue dq[FKV_ROUTE_NODES];
	/* ... and per key route hash, how many of them are unanswered */
	struct fkv_u64map drop_keys;
	uint64_t lease_until;	/* node: the master's lease (CLOCK_MONOTONIC ns) */
	bool lease_void;	/* node: a drop failed: no lease until we rejoin */
	/*
	 * master: no overwrite or delete is answered before this (ms): a
	 * lease granted before it may still run on a node we do not hear --
	 * an earlier master's (we just started) or one we let go
	 * (leases_may_run()).
	 */
	uint64_t write_hold_ms;
	struct {
		uint64_t forwarded, answered, fetches, fetch_errors;
		uint64_t drops_relayed, tokens_expired, refused_unjoined;
		uint64_t sync_timeouts, syncs_held;
		uint64_t lease_holds;	/* master: answers held for leases */
		uint64_t leased_losses;	/* node: served alone on the lease */
		uint64_t fences_raised;		/* master: written */
		uint64_t fences_lifted;		/* master: rejoined, judged */
		uint64_t places, place_errors, targets_published;
		uint64_t targets_dropped;
		uint64_t reports_sent, reports_adopted, reports_repersisted;
		uint64_t reports_failed;	/* not sent: dropped */
		uint64_t reports_refused;	/* master: dropped */
		/* master: eviction drops queued, sent in batches, batches;
		 * node: handles of batches applied */
		uint64_t drops_queued, drops_batched, drop_batches;
		uint64_t drops_applied;
	} st;
};

static struct place_op *place_by_req(struct fkv_clusterd *cd, uint64_t req);
static bool place_routed(struct fkv_clusterd *cd, struct place_op *op,
			 struct fkv_reply *r, const char *addr,
			 const uint8_t *ticket);
static void places_sweep(struct fkv_clusterd *cd, uint64_t now, bool all);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	return now_ns() / 1000000;
}

/* ---- the segment, as the data plane sees it ---- */

static int seg_hold(void *arg, const void *key, size_t key_len,
		    uint64_t handle, uint64_t put_id, uint64_t *off,
		    uint64_t *len, uint64_t *pin)
{
	struct fkv_clusterd *cd = arg;
	struct fluxonkv_hold h = {
		.size = sizeof(h), .key_len = (uint32_t)key_len,
		.key_ptr = (uintptr_t)key, .handle = handle, .put_id = put_id,
	};

	if (ioctl(cd->devfd, FLUXONKV_IOC_HOLD, &h))
		return -errno;
	*off = h.offset;
	*len = h.len;
	*pin = h.holder_id;
	return 0;
}

static int seg_stage(void *arg, const void *key, size_t key_len,
		     uint64_t put_id, uint64_t off, uint64_t len,
		     uint64_t *seg_off, uint64_t *value_len, uint64_t *pin)
{
	struct fkv_clusterd *cd = arg;
	struct fluxonkv_ssd_stage st = {
		.size = sizeof(st), .key_len = (uint32_t)key_len,
		.key_ptr = (uintptr_t)key, .put_id = put_id, .offset = off,
		.len = len,
	};

	if (ioctl(cd->devfd, FLUXONKV_IOC_SSD_STAGE, &st))
		return -errno;
	*seg_off = st.seg_offset;
	*value_len = st.value_len;
	*pin = st.holder_id;
	return 0;
}

static void seg_release(void *arg, uint64_t pin)
{
	struct fkv_clusterd *cd = arg;
	struct fluxonkv_release rel = { .size = sizeof(rel), .holder_id = pin };

	if (ioctl(cd->devfd, FLUXONKV_IOC_RELEASE, &rel))
		fkv_warn("cluster: releasing holder %llu: %m",
			 (unsigned long long)pin);
}

/* The placement-ticket key of this node (NULL: none, refuse all). */
static void place_key_set(struct fkv_clusterd *cd, const uint8_t *key)
{
	pthread_mutex_lock(&cd->tgt_lock);
	if (key)
		memcpy(cd->place_key, key, FKV_MAC_LEN);
	else
		OPENSSL_cleanse(cd->place_key, FKV_MAC_LEN);
	cd->place_key_ok = key != NULL;
	pthread_mutex_unlock(&cd->tgt_lock);
}

/* Master: our own placement-ticket key, random.  0 or -errno. */
static int place_key_self(struct fkv_clusterd *cd)
{
	uint8_t key[FKV_MAC_LEN];
	int err = fkv_auth_random(key, sizeof(key));

	if (!err)
		place_key_set(cd, key);
	OPENSSL_cleanse(key, sizeof(key));
	return err;
}

/*
 * Master: the ticket for placing put @u ({KEY, PUT_ID, LEN}) on node
 * @node, under the key that node checks it with.  0 or -ENOTCONN.
 */
static int place_ticket(struct fkv_clusterd *cd, uint32_t node,
			const struct fkv_upcall *u,
			uint8_t ticket[FKV_MAC_LEN])
{
	uint8_t key[FKV_MAC_LEN];
	int err = 0;

	if (node == cd->self) {
		pthread_mutex_lock(&cd->tgt_lock);
		memcpy(key, cd->place_key, sizeof(key));
		if (!cd->place_key_ok)
			err = -ENOTCONN;
		pthread_mutex_unlock(&cd->tgt_lock);
	} else {
		err = fkv_cctl_place_key(cd->cctl, node, key);
	}
	if (!err)
		err = fkv_auth_place_ticket(key, u->key, u->key_len, u->put_id,
					    u->len, ticket);
	OPENSSL_cleanse(key, sizeof(key));
	return err;
}

/*
 * Transport thread: may a PLACE with @ticket (NULL: none) make a target
 * for put @put_id of @key, @len bytes, here?  Only with the master's
 * ticket for exactly that (auth.h): 0, -EACCES or -ENOTCONN (we have no
 * key: not joined).
 */
static int place_allowed(struct fkv_clusterd *cd, const void *key,
			 size_t key_len, uint64_t put_id, uint64_t len,
			 const uint8_t *ticket)
{
	char kb[FKV_KEY_FMT_LEN];
	int err = -EACCES;

	pthread_mutex_lock(&cd->tgt_lock);
	if (!cd->place_key_ok)
		err = -ENOTCONN;
	else if (ticket && fkv_auth_place_check(cd->place_key, key, key_len,
						put_id, len, ticket))
		err = 0;
	if (err) {
		cd->targets_refused++;
		fkv_ratelimited_warn(&cd->refuse_log,
				     "cluster: a PLACE of put %llu of key '%s' "
				     "(%llu bytes) %s: refused",
				     (unsigned long long)put_id,
				     fkv_key_fmt(kb, key, key_len),
				     (unsigned long long)len,
				     err == -ENOTCONN ?
				     "while we are not joined" : ticket ?
				     "with a ticket the master did not give" :
				     "without the master's ticket");
	}
	pthread_mutex_unlock(&cd->tgt_lock);
	return err;
}

/* Transport thread: a replica for another node's put (FKV_CCMD_PLACE). */
static int seg_target(void *arg, const void *key, size_t key_len,
		      uint64_t put_id, uint64_t len, const uint8_t *ticket,
		      uint64_t *handle, uint64_t *off, uint64_t *pin)
{
	struct fkv_clusterd *cd = arg;
	struct fluxonkv_target t = {
		.size = sizeof(t), .key_len = (uint32_t)key_len,
		.key_ptr = (uintptr_t)key, .put_id = put_id, .len = len,
	};
	struct target_rec *tr;
	int err;

	err = place_allowed(cd, key, key_len, put_id, len, ticket);
	if (err)
		return err;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	if (ioctl(cd->devfd, FLUXONKV_IOC_TARGET, &t)) {
		err = -errno;
		free(tr);
		return err;
	}
	tr->status = 1;
	tr->deadline_ms = now_ms() + FKV_TARGET_TTL_MS;
	pthread_mutex_lock(&cd->tgt_lock);
	err = fkv_u64map_put(&cd->targets, t.handle, tr);
	pthread_mutex_unlock(&cd->tgt_lock);
	if (err) {
		/* Unrecorded, it could never be dropped: refuse it. */
		free(tr);
		tr = NULL;
		seg_release(cd, t.holder_id);
		fkv_err("cluster: target %#llx made but not recorded; it "
			"stays until the module forgets this registration",
			(unsigned long long)t.handle);
		return err;
	}
	*handle = t.handle;
	*off = t.offset;
	*pin = t.holder_id;
	return 0;
}

/* Transport thread: the transfer into target @handle ended. */
static void seg_placed(void *arg, uint64_t handle, uint64_t pin, int status)
{
	struct fkv_clusterd *cd = arg;
	struct target_rec *tr;

	seg_release(cd, pin);
	pthread_mutex_lock(&cd->tgt_lock);
	tr = fkv_u64map_get(&cd->targets, handle);
	if (tr)
		tr->status = status;	/* failed: the tick drops it */
	pthread_mutex_unlock(&cd->tgt_lock);
}

/* Forget the record of target @handle (published or dropped). */
static bool target_forget(struct fkv_clusterd *cd, uint64_t handle)
{
	struct target_rec *tr;

	pthread_mutex_lock(&cd->tgt_lock);
	tr = fkv_u64map_del(&cd->targets, handle);
	pthread_mutex_unlock(&cd->tgt_lock);
	free(tr);
	return tr != NULL;
}

/* The master published target @handle (PLACED): index it, maybe persist. */
static void publish_target(struct fkv_clusterd *cd, uint64_t handle,
			   uint64_t put_id, uint32_t flags)
{
	struct fluxonkv_publish pub = {
		.size = sizeof(pub), .handle = handle, .put_id = put_id,
		.flags = flags & FLUXONKV_PUBLISH_F_PERSIST,
	};
	struct target_rec *tr;
	int status;

	pthread_mutex_lock(&cd->tgt_lock);
	tr = fkv_u64map_del(&cd->targets, handle);
	status = tr ? tr->status : -ENOENT;
	pthread_mutex_unlock(&cd->tgt_lock);
	free(tr);
	if (!cd->registered)
		return;
	if (status) {
		/* Not every byte came: never index a half-written replica. */
		fkv_warn("cluster: PLACED %#llx for a target %s: dropped",
			 (unsigned long long)handle,
			 status > 0 ? "still being filled" : "not filled");
		cd->st.targets_dropped++;
		fkv_nl_send_drop(cd->nl, handle, 0);
		return;
	}
	if (ioctl(cd->devfd, FLUXONKV_IOC_PUBLISH, &pub))
		fkv_info("cluster: publishing placed replica %#llx: %m",
			 (unsigned long long)handle);
	else
		cd->st.targets_published++;
}

/* Drop the targets whose transfer failed or that were never published. */
static void targets_sweep(struct fkv_clusterd *cd, uint64_t now)
{
	uint64_t dead[64], key;
	unsigned int i, n = 0;
	size_t pos = 0;
	void *val;

	pthread_mutex_lock(&cd->tgt_lock);
	while (n < 64 && !fkv_u64map_next(&cd->targets, &pos, &key, &val)) {
		struct target_rec *tr = val;

		if (tr->status < 0 || now > tr->deadline_ms)
			dead[n++] = key;
	}
	pthread_mutex_unlock(&cd->tgt_lock);
	for (i = 0; i < n; i++) {
		target_forget(cd, dead[i]);
		cd->st.targets_dropped++;
		if (cd->registered)
			fkv_nl_send_drop(cd->nl, dead[i], 0);
	}
}

static void targets_clear(struct fkv_clusterd *cd)
{
	size_t pos = 0;
	uint64_t key;
	void *val;

	pthread_mutex_lock(&cd->tgt_lock);
	while (!fkv_u64map_next(&cd->targets, &pos, &key, &val)) {
		fkv_u64map_del(&cd->targets, key);
		free(val);
		pos = 0;
	}
	pthread_mutex_unlock(&cd->tgt_lock);
}

static int open_segment(struct fkv_clusterd *cd)
{
	const char *dev = cd->cfg.device ? cd->cfg.device : "/dev/fluxonkv";
	struct fluxonkv_info info = { .size = sizeof(info) };
	void *p;

	int err;

	cd->devfd = open(dev, O_RDWR | O_CLOEXEC);
	if (cd->devfd < 0) {
		err = -errno;
		fkv_err("cluster: cannot open %s read-write: %s", dev,
			strerror(-err));
		return err;
	}
	if (ioctl(cd->devfd, FLUXONKV_IOC_INFO, &info)) {
		err = -errno;
		fkv_err("cluster: %s: FLUXONKV_IOC_INFO: %s", dev, strerror(-err));
		return err;
	}
	/* Privileged (CAP_SYS_ADMIN): payloads land in their targets. */
	p = mmap(NULL, info.segment_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 cd->devfd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		fkv_err("cluster: cannot map the segment writable (needs "
			"CAP_SYS_ADMIN): %s", strerror(-err));
		return err;
	}
	cd->seg = p;
	cd->seg_size = info.segment_size;
	return 0;
}

/* ---- tokens ---- */

static struct fetch_tok *tok_new(struct fkv_clusterd *cd, uint64_t put_id,
				 uint64_t len, uint64_t src_handle,
				 uint32_t src_node, uint32_t source,
				 const char *addr)
{
	struct fetch_tok *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->token = ++cd->next_token;
	if (fkv_u64map_put(&cd->tokens, t->token, t)) {
		free(t);
		return NULL;
	}
	t->put_id = put_id;
	t->len = len;
	t->src_handle = src_handle;
	t->src_node = src_node;
	t->source = source;
	snprintf(t->addr, sizeof(t->addr), "%s", addr);
	t->deadline_ms = now_ms() + FKV_TOKEN_TTL_MS;
	t->epoch = cd->epoch;
	t->cd = cd;
	return t;
}

static void tok_free(struct fkv_clusterd *cd, struct fetch_tok *t)
{
	fkv_u64map_del(&cd->tokens, t->token);
	free(t);
}

/* Turn a REMOTE answer's source handle into a token for the module. */
static void tokenize(struct fkv_clusterd *cd, struct fkv_reply *r,
		     uint32_t src_node, const char *addr)
{
	struct fetch_tok *t;

	if (r->status || (r->source != FLUXONKV_SOURCE_REMOTE &&
			  r->source != FLUXONKV_SOURCE_REMOTE_SSD))
		return;
	t = addr && addr[0] ? tok_new(cd, r->put_id, r->len, r->handle,
				      src_node, r->source, addr) : NULL;
	if (!t) {
		memset(r, 0, sizeof(*r));
		r->status = addr && addr[0] ? -ENOMEM : -EPROTO;
		return;
	}
	r->handle = t->token;
	r->present |= A(HANDLE);
}

/* ---- the master's side ---- */

/*
 * DROP_REPLICA of @handle to its node @node now; with @sw (an overwrite or
 * a delete being answered) the answer waits for that node's DROP_ACK.
 */
/*
 * Relay the DROP_REPLICA @msg (freed here) to @node; with @sw (an overwrite
 * or a delete being answered) the answer waits for that node's DROP_ACK.
 * The caller's own drops go before the answer on its connection anyway.
 */
static void relay_drop(struct fkv_clusterd *cd, uint32_t node,
		       struct nl_msg *msg, struct sync_wait *sw)
{
	bool sync = sw && node != sw->caller && sw->nnodes < FKV_SYNC_NODES;
	unsigned int i;

	if (msg && sync && nla_put_u64(msg, FKV_CA_SYNC_ID, sw->id)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	if (!msg || fkv_cctl_send(cd->cctl, node, msg)) {
		fkv_dbg("cluster: DROP_REPLICA for node %u not sent (gone)",
			node);
	} else {
		cd->st.drops_relayed++;
		for (i = 0; sync && i < sw->nnodes && sw->nodes[i] != node; i++)
			;
		if (sync && i == sw->nnodes)
			sw->nodes[sw->nnodes++] = node;
	}
	nlmsg_free(msg);
}

static void send_drop_now(struct fkv_clusterd *cd, uint32_t node,
			  uint64_t handle, uint32_t flags, struct sync_wait *sw)
{
	if (node == cd->self)
		/* Applied by the module before the netlink send returns. */
		fkv_nl_send_drop(cd->nl, handle, flags);
	else
		relay_drop(cd, node, fkv_nl_drop_msg(FKV_WIRE_TYPE, handle,
						     flags), sw);
}

/* A newer version or a delete retired @node's SSD copy of the key. */
static void send_ssd_drop(void *arg, uint32_t node, const void *key,
			  size_t key_len, uint64_t put_id)
{
	struct fkv_clusterd *cd = arg;

	if (node == cd->self)
		fkv_nl_send_ssd_drop(cd->nl, key, key_len, put_id);
	else
		relay_drop(cd, node, fkv_nl_ssd_drop_msg(FKV_WIRE_TYPE, key,
							 key_len, put_id),
			   cd->cur_sync);
}

static void send_drop(void *arg, uint64_t handle, uint32_t flags)
{
	struct fkv_clusterd *cd = arg;

	send_drop_now(cd, FLUXONKV_HANDLE_NODE(handle), handle, flags,
		      flags & FLUXONKV_DROP_F_EVICTED ? NULL : cd->cur_sync);
}

/* ---- eviction drops in batches (struct drop_queue) ---- */

static uint64_t drop_key(uint64_t hash)
{
	return hash ? hash : 1;		/* a map key is never 0 */
}

/* One more (@delta 1) or one less (-1) unanswered drop of @hash's key. */
static int drop_key_count(struct fkv_clusterd *cd, uint64_t hash, int delta)
{
	uintptr_t n;
	int err;

	if (!cd->drop_keys.slots) {
		err = fkv_u64map_init(&cd->drop_keys, 0);
		if (err)
			return err;
	}
	n = (uintptr_t)fkv_u64map_del(&cd->drop_keys, drop_key(hash));
	n += (uintptr_t)(intptr_t)delta;
	return n ? fkv_u64map_put(&cd->drop_keys, drop_key(hash), (void *)n)
		 : 0;
}

/* The eviction of @handle (a replica of @hash's key) is owed to @node. */
static void drops_add(struct fkv_clusterd *cd, uint32_t node,
		      uint64_t handle, uint64_t hash)
{
	struct drop_queue *q = &cd->dq[node];
	struct drop_ent *e;

	if (q->len == q->cap && q->head) {
		memmove(q->e, q->e + q->head,
			(q->len - q->head) * sizeof(*q->e));
		q->sent -= q->head;
		q->len -= q->head;
		q->head = 0;
	}
	if (q->len == q->cap) {
		size_t cap = q->cap ? 2 * q->cap : 1024;

		e = realloc(q->e, cap * sizeof(*e));
		if (e) {
			q->e = e;
			q->cap = cap;
		}
	}
	/* No memory to keep it: on its own, as before batches. */
	if (q->len == q->cap || drop_key_count(cd, hash, 1)) {
		send_drop_now(cd, node, handle, FLUXONKV_DROP_F_EVICTED, NULL);
		return;
	}
	q->e[q->len++] = (struct drop_ent){ .handle = handle, .hash = hash };
	cd->st.drops_queued++;
}

/* Send @node what the window and its queue allow. */
static void drops_pump_node(struct fkv_clusterd *cd, uint32_t node)
{
	struct drop_queue *q = &cd->dq[node];
	static uint64_t h[FKV_DROPS_BATCH];

	while (q->sent < q->len && q->batches - q->acked < FKV_DROPS_WINDOW &&
	       fkv_cctl_member_roomy(cd->cctl, node)) {
		size_t i, n = 0, end;
		struct nl_msg *msg;
		int err = -ENOMEM;

		for (i = q->sent; i < q->len && n < FKV_DROPS_BATCH; i++)
			if (q->e[i].handle)
				h[n++] = q->e[i].handle;
		end = i;
		if (!n) {
			q->sent = end;	/* all sent on their own meanwhile */
			continue;
		}
		msg = fkv_wire_msg_max(FKV_CCMD_DROPS);
		if (msg && !nla_put(msg, FLUXONKV_A_HANDLES,
				    (int)(n * sizeof(h[0])), h) &&
		    !nla_put_u32(msg, FLUXONKV_A_FLAGS,
				 FLUXONKV_DROP_F_EVICTED) &&
		    !nla_put_u64(msg, FKV_CA_SYNC_ID, q->batches + 1))
			err = fkv_cctl_send(cd->cctl, node, msg);
		nlmsg_free(msg);
		if (err)
			return;		/* gone (member_down clears) or later */
		q->batches++;
		for (i = q->sent; i < end; i++)
			q->e[i].batch = q->batches;
		q->sent = end;
		cd->st.drop_batches++;
		cd->st.drops_batched += n;
	}
}

static void drops_pump(struct fkv_clusterd *cd)
{
	uint32_t node;

	for (node = 0; node < FKV_ROUTE_NODES; node++)
		if (cd->dq[node].sent < cd->dq[node].len)
			drops_pump_node(cd, node);
}

/* Forget what is owed to @node (it left or rejoined: nothing is). */
static void drops_clear(struct fkv_clusterd *cd, uint32_t node)
{
	struct drop_queue *q = &cd->dq[node];
	size_t i;

	for (i = q->head; i < q->len; i++)
		if (q->e[i].handle)
			drop_key_count(cd, q->e[i].hash, -1);
	free(q->e);
	memset(q, 0, sizeof(*q));
}

static void sync_batches_done(struct fkv_clusterd *cd, uint32_t node,
			      uint64_t acked);

/* @node applied every drop of its batches up to @n (FKV_CCMD_DROPS). */
static void drops_acked(struct fkv_clusterd *cd, uint32_t node, uint64_t n)
{
	struct drop_queue *q = &cd->dq[node];

	if (n <= q->acked || n > q->batches)
		return;
	for (; q->head < q->sent && q->e[q->head].batch <= n; q->head++)
		if (q->e[q->head].handle)
			drop_key_count(cd, q->e[q->head].hash, -1);
	if (q->head == q->len)
		q->head = q->sent = q->len = 0;
	q->acked = n;
	sync_batches_done(cd, node, n);
	drops_pump_node(cd, node);
}

static void sync_wait_batch(struct sync_wait *sw, uint32_t node,
			    uint64_t batch)
{
	unsigned int i;

	for (i = 0; i < sw->nbnodes; i++) {
		if (sw->bnodes[i] == node) {
			if (batch > sw->bbatch[i])
				sw->bbatch[i] = batch;
			return;
		}
	}
	if (sw->nbnodes < FKV_SYNC_NODES) {
		sw->bnodes[sw->nbnodes] = node;
		sw->bbatch[sw->nbnodes++] = batch;
	} else {
		fkv_warn("cluster: an answer cannot wait for node %u's "
			 "eviction drops (too many nodes)", node);
	}
}

/*
 * An overwrite or delete of the key whose route hash is @hash is being
 * answered (@sw): an eviction drop of one of its replicas that a node has
 * not applied yet would let that node serve the version replaced.  One
 * not sent yet goes now on its own, acknowledged (DROP_ACK); one in a
 * batch on its way holds the answer until that batch is answered.  Both
 * are on the node's connection before any later heartbeat answer, so the
 * lease bound holds for them as for any drop.
 */
static void drops_sync(struct fkv_clusterd *cd, struct sync_wait *sw,
		       uint64_t hash)
{
	uint32_t node;
	size_t i;

	if (!cd->drop_keys.slots ||
	    !fkv_u64map_get(&cd->drop_keys, drop_key(hash)))
		return;
	for (node = 0; node < FKV_ROUTE_NODES; node++) {
		struct drop_queue *q = &cd->dq[node];
		uint64_t wait = 0;

		for (i = q->head; i < q->len; i++) {
			struct drop_ent *e = &q->e[i];

			if (!e->handle || e->hash != hash)
				continue;
			if (i >= q->sent) {
				send_drop_now(cd, node, e->handle,
					      FLUXONKV_DROP_F_EVICTED, sw);
				drop_key_count(cd, hash, -1);
				e->handle = 0;
			} else if (e->batch > wait) {
				wait = e->batch;
			}
		}
		if (wait && node != sw->caller)
			sync_wait_batch(sw, node, wait);
	}
}

/* The master evicted @handle (route_drop): owed to its node in a batch. */
static void send_evicted(void *arg, uint64_t handle, uint64_t key_hash)
{
	struct fkv_clusterd *cd = arg;
	uint32_t node = FLUXONKV_HANDLE_NODE(handle);

	if (node == cd->self) {
		fkv_nl_send_drop(cd->nl, handle, FLUXONKV_DROP_F_EVICTED);
		return;
	}
	drops_add(cd, node, handle, key_hash);
}

/* An adopted replica whose persist never committed: its owner writes it. */
static void send_persist(void *arg, uint64_t handle, uint64_t put_id)
{
	struct fkv_clusterd *cd = arg;
	uint32_t node = FLUXONKV_HANDLE_NODE(handle);
	struct nl_msg *msg;

	if (node == cd->self) {
		fkv_nl_send_persist(cd->nl, handle, put_id);
		return;
	}
	msg = fkv_nl_persist_msg(FKV_WIRE_TYPE, handle, put_id);
	if (!msg || fkv_cctl_send(cd->cctl, node, msg))
		fkv_dbg("cluster: PERSIST %#llx for node %u not sent (gone)",
			(unsigned long long)handle, node);
	nlmsg_free(msg);
}

/* The master published a put placed on node @handle's owner. */
static void send_placed(void *arg, uint64_t handle, uint64_t put_id,
			uint32_t flags)
{
	struct fkv_clusterd *cd = arg;
	uint32_t node = FLUXONKV_HANDLE_NODE(handle);
	struct nl_msg *msg;

	if (node == cd->self) {
		publish_target(cd, handle, put_id, flags);
		return;
	}
	msg = fkv_wire_msg(FKV_CCMD_PLACED);
	if (!msg || nla_put_u64(msg, FLUXONKV_A_HANDLE, handle) ||
	    nla_put_u64(msg, FLUXONKV_A_PUT_ID, put_id) ||
	    nla_put_u32(msg, FLUXONKV_A_FLAGS, flags) ||
	    fkv_cctl_send(cd->cctl, node, msg))
		fkv_warn("cluster: PLACED %#llx for node %u not sent",
			 (unsigned long long)handle, node);
	nlmsg_free(msg);
}

static const struct fkv_master_ops master_ops = {
	.send_drop = send_drop,
	.send_evicted = send_evicted,
	.placed = send_placed,
	.persist = send_persist,
	.send_ssd_drop = send_ssd_drop,
};

/*
 * Answer @u from node @node with the in-process master; for GET_START the
 * source's node and address come back through @addr.
 */
/* Send a held-back answer and forget it. */
static void sync_complete(struct fkv_clusterd *cd, struct sync_wait *sw)
{
	struct sync_wait **pp;
	struct nl_msg *msg;

	for (pp = &cd->syncs; *pp && *pp != sw; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = sw->next;
	if (sw->caller == cd->self) {
		if (sw->epoch == cd->epoch && cd->registered)
			fkv_nl_send_reply(cd->nl, sw->cmd, sw->req_id, &sw->r);
	} else {
		msg = fkv_nl_reply_msg(FKV_WIRE_TYPE, sw->cmd, sw->req_id, &sw->r);
		if (!msg || fkv_cctl_send(cd->cctl, sw->caller, msg))
			fkv_dbg("cluster: node %u gone before its answer",
				sw->caller);
		nlmsg_free(msg);
	}
	free(sw);
}

/*
 * Answer @sw if nothing holds it any more: no node owes an ack and the
 * leases it waits out ran out (else the tick answers it at its time).
 */
static void sync_maybe_complete(struct fkv_clusterd *cd, struct sync_wait *sw)
{
	if (!sw->nnodes && !sw->nbnodes && now_ms() >= sw->hold_until_ms)
		sync_complete(cd, sw);
}

/* Node @node no longer owes @sw an ack (it acked, or it left). */
static void sync_node_done(struct fkv_clusterd *cd, struct sync_wait *sw,
			   uint32_t node)
{
	unsigned int i;

	for (i = 0; i < sw->nnodes; i++) {
		if (sw->nodes[i] != node)
			continue;
		sw->nodes[i] = sw->nodes[--sw->nnodes];
		break;
	}
	sync_maybe_complete(cd, sw);
}

/*
 * Node @node answered its batches of drops up to @acked (UINT64_MAX: it
 * left): the held answers that waited for them may go.
 */
static void sync_batches_done(struct fkv_clusterd *cd, uint32_t node,
			      uint64_t acked)
{
	struct sync_wait *sw, *next;
	unsigned int i;

	for (sw = cd->syncs; sw; sw = next) {
		next = sw->next;
		for (i = 0; i < sw->nbnodes; i++) {
			if (sw->bnodes[i] != node || sw->bbatch[i] > acked)
				continue;
			sw->nbnodes--;
			sw->bnodes[i] = sw->bnodes[sw->nbnodes];
			sw->bbatch[i] = sw->bbatch[sw->nbnodes];
			break;
		}
		sync_maybe_complete(cd, sw);
	}
}

/* Node @id acknowledged its REPORT_DONE: every copy it kept is judged. */
static void unfence(struct fkv_clusterd *cd, uint32_t id)
{
	const struct fkv_member *mb = fkv_members_get(
		fkv_cctl_members(cd->cctl), id);
	uint64_t at = cd->unfence[id].at;
	char why[256];
	int err;

	cd->unfence[id].sync = 0;
	if (!mb)
		return;
	err = fkv_fences_lift(&cd->fences, mb->name, at, why, sizeof(why));
	if (err) {
		fkv_warn("cluster: node '%s' stays fenced at %#llx: %s",
			 mb->name, (unsigned long long)at, why);
		return;
	}
	/* Elected on etcd: the next leader reads etcd's (same rule). */
	if (!fkv_fences_of(&cd->fences, mb->name) && cd->cfg.fence_lift &&
	    (err = cd->cfg.fence_lift(cd->cfg.election, mb->name, at))) {
		fkv_warn("cluster: node '%s' stays fenced at %#llx in etcd: %s",
			 mb->name, (unsigned long long)at, strerror(-err));
		return;
	}
	if (!fkv_fences_of(&cd->fences, mb->name)) {
		cd->st.fences_lifted++;
		fkv_info("cluster: node '%s' is back and its kept copies judged: "
			 "its fence at %#llx is lifted", mb->name,
			 (unsigned long long)at);
	}
}

static void drop_ack(void *arg, uint32_t id, uint64_t sync_id)
{
	struct fkv_clusterd *cd = arg;
	struct sync_wait *sw;

	if (id < FKV_ROUTE_NODES && sync_id && cd->unfence[id].sync == sync_id) {
		unfence(cd, id);
		return;
	}
	for (sw = cd->syncs; sw; sw = sw->next)
		if (sw->id == sync_id) {
			sync_node_done(cd, sw, id);
			return;
		}
}

/*
 * Answer @u from node @node with the in-process master; for GET_START the
 * source's node and address come back through @addr.  Returns whether
 * there is an answer to send now: false also when it is held back until
 * other nodes acknowledged their drops (sync_complete sends it).
 */
static bool master_answer(struct fkv_clusterd *cd, uint32_t node,
			  const struct fkv_upcall *u, struct fkv_reply *r,
			  uint32_t *src_node, const char **addr)
{
	struct sync_wait *sw = NULL;
	struct fkv_get_result g;
	bool reply;

	*addr = NULL;
	*src_node = 0;
	/* Overwrites and deletes drop other nodes' copies: wait for them. */
	if ((u->cmd == FLUXONKV_CMD_PUT_DONE || u->cmd == FLUXONKV_CMD_PUT ||
	     u->cmd == FLUXONKV_CMD_DELETE) &&
	    (u->present & A(REQ_ID))) {
		sw = calloc(1, sizeof(*sw));
		if (sw) {
			sw->id = ++cd->next_sync;
			sw->caller = node;
			sw->cmd = u->cmd;
			sw->req_id = u->req_id;
		}
	}
	cd->cur_sync = sw;
	fkv_master_set_caller(cd->master, node);
	if (u->cmd == FLUXONKV_CMD_GET_START && (u->present & A(KEY))) {
		memset(r, 0, sizeof(*r));
		r->status = fkv_master_get_start(cd->master, u->key,
						 u->key_len, &g);
		if (!r->status) {
			r->source = g.source;
			r->put_id = g.put_id;
			r->len = g.len;
			r->handle = g.handle;
			r->present = A(SOURCE) | A(PUT_ID) | A(LEN);
			if (g.handle)
				r->present |= A(HANDLE);
			*addr = g.addr;
			*src_node = g.node;
		}
		reply = true;
	} else if (u->cmd == FLUXONKV_CMD_PUT_PLACE &&
		   (u->present & (A(KEY) | A(PUT_ID) | A(LEN))) ==
		   (A(KEY) | A(PUT_ID) | A(LEN))) {
		memset(r, 0, sizeof(*r));
		r->status = fkv_master_put_place(cd->master, u->key,
						 u->key_len, u->put_id, u->len,
						 src_node, addr, &r->flags);
		if (!r->status) {
			r->put_id = u->put_id;
			r->present = A(PUT_ID) | A(FLAGS);
		}
		reply = true;
	} else {
		reply = fkv_dispatch(cd->master, u, r);
	}
	/* Eviction drops of this key still on their way hold it too. */
	if (sw && reply && (u->present & A(KEY)))
		drops_sync(cd, sw, fkv_routes_key_hash(
				   fkv_master_routes(cd->master), u->key,
				   u->key_len));
	fkv_master_set_caller(cd->master, cd->self);
	cd->cur_sync = NULL;
	/* What this upcall evicted on other nodes, as room allows. */
	drops_pump(cd);
	if (sw && reply && (sw->nnodes || sw->nbnodes ||
			    now_ms() < cd->write_hold_ms)) {
		sw->r = *r;
		sw->epoch = cd->epoch;
		sw->deadline_ms = now_ms() + cd->cc->lease_ms;
		/* (at most lease_ms ahead too: within the module's budget) */
		sw->hold_until_ms = cd->write_hold_ms;
		if (sw->nnodes || sw->nbnodes)
			cd->st.syncs_held++;
		if (now_ms() < sw->hold_until_ms)
			cd->st.lease_holds++;
		sw->next = cd->syncs;
		cd->syncs = sw;
		return false;
	}
	free(sw);
	return reply;
}

/*
 * Master: a node we do not hear from may still serve local hits on a
 * lease granted before now -- an earlier master's, when we start, or
 * ours, to a node whose connection we closed while it lived (its module
 * goes on alone on that lease: FLUXONKV_UNREGISTER_F_LEASED).  Its
 * replicas are not in our routes, so no drop can wait for it: every
 * overwrite and delete waits out the lease instead (cluster.lease_ms, the
 * same on every fluxond of a cluster).
 */
static void leases_may_run(struct fkv_clusterd *cd, const char *why)
{
	uint64_t until = now_ms() + cd->cc->lease_ms;

	if (until <= cd->write_hold_ms)
		return;
	cd->write_hold_ms = until;
	fkv_info("cluster: %s: overwrites and deletes are answered after %u ms "
		 "(the leases nodes may still serve on)", why,
		 cd->cc->lease_ms);
}

/*
 * The master goes on without node @name's copies (it left, or missed a
 * drop past its lease): its fence rises to our numbering, on disk first,
 * so that no later master adopts a copy it kept from before (term.h).
 */
static void fence_node(struct fkv_clusterd *cd, const char *name)
{
	uint64_t at = fkv_master_last_put_id(cd->master);
	char why[256];
	int err;

	err = fkv_fences_raise(&cd->fences, name, at, why, sizeof(why));
	if (err) {
		fkv_err("cluster: cannot fence node '%s' at %#llx: %s: after a "
			"master restart its kept copies could be adopted", name,
			(unsigned long long)at, why);
		return;
	}
	/* Elected on etcd: the next leader may run elsewhere. */
	if (cd->cfg.fence_raise) {
		err = cd->cfg.fence_raise(cd->cfg.election, name, at);
		if (err) {
			fkv_err("cluster: cannot fence node '%s' at %#llx in "
				"etcd: %s: a leader on another host could "
				"adopt its kept copies", name,
				(unsigned long long)at, strerror(-err));
			return;
		}
	}
	cd->st.fences_raised++;
}

static void member_up(void *arg, const struct fkv_member *m)
{
	struct fkv_clusterd *cd = arg;
	uint64_t floor = fkv_fences_of(&cd->fences, m->name);
	int err;

	/* A new incarnation: its module reports what it kept, anew. */
	drops_clear(cd, m->id);
	cd->unfence[m->id].sync = 0;
	err = fkv_master_node_up(cd->master, m->id, m->incarnation,
				 m->segment_size, m->ssd_capacity,
				 m->data_addr);
	if (err)
		fkv_err("cluster: node %u not usable: %s", m->id,
			strerror(-err));
	/*
	 * A fence of an earlier term: that master went on without this
	 * node and we know none of its tombstones.  Ours are exact.
	 */
	if (floor && FKV_PUT_ID_TERM(floor) >= cd->term)
		floor = 0;
	fkv_master_node_fence(cd->master, m->id, floor);
	if (floor)
		fkv_info("cluster: node '%s' was fenced at %#llx by a master of "
			 "term %llu: its kept copies up to that are dropped",
			 m->name, (unsigned long long)floor,
			 (unsigned long long)FKV_PUT_ID_TERM(floor));
}

/* Its departed instance's replicas are still being forgotten. */
static bool member_busy(void *arg, uint32_t id)
{
	struct fkv_clusterd *cd = arg;

	return cd->master && fkv_master_node_forgetting(cd->master, id);
}

static void member_down(void *arg, const struct fkv_member *m)
{
	struct fkv_clusterd *cd = arg;
	struct sync_wait *sw, *next;
	char why[128];

	/*
	 * A node whose connection we closed while it lived serves on its
	 * lease yet (alone, FLUXONKV_UNREGISTER_F_LEASED): every write waits
	 * it out, from before its replicas are forgotten below.
	 */
	if (m->last_left == FKV_LEFT_EXPELLED) {
		snprintf(why, sizeof(why), "we closed node '%s''s connection",
			 m->name);
		leases_may_run(cd, why);
	}
	fence_node(cd, m->name);
	cd->unfence[m->id].sync = 0;
	fkv_master_node_down(cd->master, m->id);
	fkv_adopted_free(&cd->reported[m->id]);
	/* Its replicas are forgotten, and the drops it was owed. */
	drops_clear(cd, m->id);
	/*
	 * Its copies are forgotten with it: nothing to wait for -- unless it
	 * may still serve them (expelled): the answers that wait for its
	 * drops wait out their deadline, its lease (the tick's timeout).
	 */
	if (m->last_left == FKV_LEFT_EXPELLED)
		return;
	sync_batches_done(cd, m->id, UINT64_MAX);
	for (sw = cd->syncs; sw; sw = next) {
		next = sw->next;
		sync_node_done(cd, sw, m->id);
	}
}

static const struct nla_policy report_policy[FKV_CA_MAX + 1] = {
	[FLUXONKV_A_HANDLE] = { .type = NLA_U64 },
	[FLUXONKV_A_KEY] = { .type = NLA_UNSPEC, .minlen = 1,
			     .maxlen = FLUXONKV_KEY_MAX },
	[FLUXONKV_A_PUT_ID] = { .type = NLA_U64 },
	[FLUXONKV_A_LEN] = { .type = NLA_U64 },
	[FLUXONKV_A_SOURCE] = { .type = NLA_U32 },
};

/* REPORT from member @id: a replica its module kept (warm restart). */
static void member_report(struct fkv_clusterd *cd, uint32_t id,
			  struct nlmsghdr *nlh)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	uint64_t handle;
	bool mem;

	if (fkv_wire_parse(nlh, tb, report_policy) || !tb[FLUXONKV_A_KEY] ||
	    !tb[FLUXONKV_A_PUT_ID] || !tb[FLUXONKV_A_LEN] ||
	    !tb[FLUXONKV_A_SOURCE] || !fkv_master_node_known(cd->master, id)) {
		fkv_warn("cluster: malformed REPORT from node %u: ignored", id);
		return;
	}
	mem = nla_get_u32(tb[FLUXONKV_A_SOURCE]) == FLUXONKV_SOURCE_MEMORY;
	handle = mem && tb[FLUXONKV_A_HANDLE] ?
		 nla_get_u64(tb[FLUXONKV_A_HANDLE]) : 0;
	if (mem && !handle)
		return;
	fkv_master_set_caller(cd->master, id);
	if (fkv_master_adopt(cd->master, nla_data(tb[FLUXONKV_A_KEY]),
			     (size_t)nla_len(tb[FLUXONKV_A_KEY]),
			     nla_get_u64(tb[FLUXONKV_A_PUT_ID]), handle,
			     nla_get_u64(tb[FLUXONKV_A_LEN]), !mem) <= 0) {
		cd->st.reports_refused++;
		cd->report_counts[id][1]++;
	} else {
		cd->st.reports_adopted++;
		cd->report_counts[id][0]++;
		if (mem)
			fkv_adopted_add(&cd->reported[id],
					nla_data(tb[FLUXONKV_A_KEY]),
					(size_t)nla_len(tb[FLUXONKV_A_KEY]),
					nla_get_u64(tb[FLUXONKV_A_PUT_ID]),
					handle);
	}
	fkv_master_set_caller(cd->master, cd->self);
}

/*
 * REPORT_DONE from member @id: its DRAM replicas adopted without an SSD
 * copy are persisted again on it (PERSIST, relayed by send_persist).
 */
static void member_report_done(struct fkv_clusterd *cd, uint32_t id)
{
	const struct fkv_member *mb;
	struct nl_msg *msg;
	unsigned long n;
	uint64_t at;

	if (!fkv_master_node_known(cd->master, id)) {
		fkv_adopted_free(&cd->reported[id]);
		return;
	}
	fkv_master_set_caller(cd->master, id);
	n = fkv_master_repersist_adopted(cd->master, &cd->reported[id]);
	fkv_master_set_caller(cd->master, cd->self);
	cd->st.reports_repersisted += n;
	fkv_info("cluster: node %u's reports: %llu adopted, %llu refused "
		 "(newer, deleted or never issued versions: dropped)", id,
		 (unsigned long long)cd->report_counts[id][0],
		 (unsigned long long)cd->report_counts[id][1]);
	cd->report_counts[id][0] = cd->report_counts[id][1] = 0;
	if (n)
		fkv_info("cluster: %lu replicas node %u kept had no SSD copy: "
			 "persisted again", n, id);
	/*
	 * After the DROP_REPLICAs of every refused report, on the same
	 * connection: the node's module may serve what is left.  A fenced
	 * node's acknowledgement of it (DROP_ACK of its SYNC_ID: those drops
	 * are applied) lifts its fence -- every copy it kept is judged, so
	 * a later master need not refuse them all (unfence()).
	 */
	mb = fkv_members_get(fkv_cctl_members(cd->cctl), id);
	at = mb ? fkv_fences_of(&cd->fences, mb->name) : 0;
	cd->unfence[id].sync = at ? ++cd->next_sync : 0;
	cd->unfence[id].at = at;
	msg = fkv_wire_msg(FKV_CCMD_REPORT_DONE);
	if (!msg || (at && nla_put_u64(msg, FKV_CA_SYNC_ID,
				       cd->unfence[id].sync)) ||
	    fkv_cctl_send(cd->cctl, id, msg))
		fkv_warn("cluster: cannot tell node %u its reports are adopted",
			 id);
	nlmsg_free(msg);
}

static const struct nla_policy ack_policy[FKV_CA_MAX + 1] = {
	[FKV_CA_SYNC_ID] = { .type = NLA_U64 },
};

/*
 * REPORT_ACK from member @id: every REPORT before it is handled (and the
 * DROP_REPLICAs of the refused ones queued): say so, with its SYNC_ID.
 */
static void member_report_ack(struct fkv_clusterd *cd, uint32_t id,
			      struct nlmsghdr *nlh)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	struct nl_msg *msg;

	if (fkv_wire_parse(nlh, tb, ack_policy) || !tb[FKV_CA_SYNC_ID]) {
		fkv_warn("cluster: malformed REPORT_ACK from node %u: ignored",
			 id);
		return;
	}
	msg = fkv_wire_msg(FKV_CCMD_REPORT_ACK);
	if (!msg || nla_put_u64(msg, FKV_CA_SYNC_ID,
				nla_get_u64(tb[FKV_CA_SYNC_ID])) ||
	    fkv_cctl_send(cd->cctl, id, msg))
		fkv_warn("cluster: cannot acknowledge node %u's reports", id);
	nlmsg_free(msg);
}

/* A forwarded upcall from member @id. */
static void member_msg(void *arg, uint32_t id, struct nlmsghdr *nlh)
{
	struct fkv_clusterd *cd = arg;
	struct fkv_reply r = { .status = -EINVAL };
	uint8_t ticket[FKV_MAC_LEN];
	const char *addr = NULL;
	uint32_t src_node = 0;
	struct fkv_upcall u;
	struct nl_msg *msg;
	bool reply, ticketed;
	int err;

	if (fkv_wire_cmd(nlh) == FKV_CCMD_REPORT) {
		member_report(cd, id, nlh);
		return;
	}
	if (fkv_wire_cmd(nlh) == FKV_CCMD_REPORT_DONE) {
		member_report_done(cd, id);
		return;
	}
	if (fkv_wire_cmd(nlh) == FKV_CCMD_REPORT_ACK) {
		member_report_ack(cd, id, nlh);
		return;
	}
	if (fkv_wire_cmd(nlh) == FKV_CCMD_DROPS) {
		struct nlattr *tb[FKV_CA_MAX + 1];

		if (!fkv_wire_parse(nlh, tb, ack_policy) &&
		    tb[FKV_CA_SYNC_ID] && id < FKV_ROUTE_NODES)
			drops_acked(cd, id, nla_get_u64(tb[FKV_CA_SYNC_ID]));
		else
			fkv_warn("cluster: malformed DROPS answer from node "
				 "%u: ignored", id);
		return;
	}
	err = fkv_nl_decode(nlh, &u);
	if (err == -EOPNOTSUPP || u.cmd == FLUXONKV_CMD_FETCH) {
		fkv_warn("cluster: node %u sent command %u: ignored", id, u.cmd);
		return;
	}
	/* A member the master holds no state for is answered, not served. */
	if (!err && !fkv_master_node_known(cd->master, id)) {
		err = -EINVAL;
		r.status = -ENOTCONN;
	}
	reply = err ? fkv_upcall_wants_reply(u.cmd) && (u.present & A(REQ_ID))
		    : master_answer(cd, id, &u, &r, &src_node, &addr);
	if (!reply || !(u.present & A(REQ_ID)))
		return;
	ticketed = !err && u.cmd == FLUXONKV_CMD_PUT_PLACE && addr &&
		   !r.status;
	if (ticketed && place_ticket(cd, src_node, &u, ticket)) {
		/* the target's connection is gone: the put is given up */
		memset(&r, 0, sizeof(r));
		r.status = -EAGAIN;
	}
	msg = fkv_nl_reply_msg(FKV_WIRE_TYPE, u.cmd, u.req_id, &r);
	if (msg && addr && !r.status &&
	    (nla_put_string(msg, FKV_CA_DATA_ADDR, addr) ||
	     nla_put_u32(msg, FKV_CA_NODE_ID, src_node) ||
	     (ticketed && nla_put(msg, FKV_CA_PLACE_TICKET, FKV_MAC_LEN,
				  ticket)))) {
		nlmsg_free(msg);
		msg = NULL;
	}
	if (!msg || fkv_cctl_send(cd->cctl, id, msg))
		fkv_warn("cluster: cannot answer %s of node %u",
			 fkv_cmd_name(u.cmd), id);
	nlmsg_free(msg);
}

/* ---- a node's side ---- */

/* A replica our module kept, until it is reported. */
struct kept_rec {
	uint64_t handle, put_id, len;
	uint32_t source;
	uint32_t key_len;
	uint8_t key[];
};

/*
 * REPORTs go in batches of FKV_REPORT_BATCH, each closed by a REPORT_ACK
 * the master answers; at most FKV_REPORT_WINDOW batches are unanswered
 * (a few hundred KiB at most in either direction, DROP_REPLICAs of the
 * refused ones included).  A master that answers no batch for
 * FKV_REPORT_ACK_MS costs us the connection: we rejoin and report anew.
 */
#define FKV_REPORT_BATCH	256
#define FKV_REPORT_WINDOW	4
#define FKV_REPORT_ACK_MS	30000

/* DUMP callback: keep the record for report_pump(). */
static void report_collect(void *arg, const struct fkv_dump_rec *r)
{
	struct fkv_clusterd *cd = arg;
	struct kept_rec *k = malloc(sizeof(*k) + r->key_len), **grown;

	if (k && cd->nkept == cd->kept_cap) {
		size_t cap = cd->kept_cap ? 2 * cd->kept_cap : 1024;

		grown = realloc(cd->kept, cap * sizeof(*grown));
		if (grown) {
			cd->kept = grown;
			cd->kept_cap = cap;
		} else {
			free(k);
			k = NULL;
		}
	}
	if (!k) {
		/*
		 * No memory to hold the report: the master would never
		 * adopt, evict or drop this replica, and ADOPT_DONE would
		 * make it a local hit of a version nobody checked.  Drop it:
		 * a cache may lose a value, never serve a stale one.
		 */
		cd->st.reports_failed++;
		if (r->handle)
			fkv_nl_send_drop(cd->nl, r->handle, 0);
		return;
	}
	k->handle = r->handle;
	k->put_id = r->put_id;
	k->len = r->len;
	k->source = r->source;
	k->key_len = (uint32_t)r->key_len;
	memcpy(k->key, r->key, r->key_len);
	cd->kept[cd->nkept++] = k;
}

/* Forget what is left to report (the connection to the master is gone). */
static void report_clear(struct fkv_clusterd *cd)
{
	size_t i;

	for (i = cd->kept_next; i < cd->nkept; i++)
		free(cd->kept[i]);
	free(cd->kept);
	cd->kept = NULL;
	cd->nkept = cd->kept_cap = cd->kept_next = 0;
	cd->reporting = cd->report_marker_due = false;
}

/* Queue one REPORT: 0, or -ENOBUFS / -ENOTCONN (try again later). */
static int report_send(struct fkv_clusterd *cd, const struct kept_rec *k)
{
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_REPORT);
	int err = -ENOMEM;

	if (msg && !(k->handle &&
		     nla_put_u64(msg, FLUXONKV_A_HANDLE, k->handle)) &&
	    !nla_put(msg, FLUXONKV_A_KEY, (int)k->key_len, k->key) &&
	    !nla_put_u64(msg, FLUXONKV_A_PUT_ID, k->put_id) &&
	    !nla_put_u64(msg, FLUXONKV_A_LEN, k->len) &&
	    !nla_put_u32(msg, FLUXONKV_A_SOURCE, k->source))
		err = fkv_cctl_send(cd->cctl, 0, msg);
	nlmsg_free(msg);
	return err;
}

/* Every batch sent and acknowledged: the end of our reports. */
static void report_finish(struct fkv_clusterd *cd)
{
	struct nl_msg *msg;

	fkv_info("cluster: reported %llu replicas our module kept to the "
		 "master in %llu batches",
		 (unsigned long long)(cd->st.reports_sent - cd->report_sent0),
		 (unsigned long long)cd->report_batches);
	report_clear(cd);
	/*
	 * The master checks their SSD copies now and answers REPORT_DONE
	 * after the DROP_REPLICAs of those it refused; then our module may
	 * serve the rest (ADOPT_DONE).
	 */
	msg = fkv_wire_msg(FKV_CCMD_REPORT_DONE);
	if (!msg || fkv_cctl_send(cd->cctl, 0, msg))
		fkv_warn("cluster: cannot tell the master our reports ended "
			 "(kept replicas stay no local hits)");
	nlmsg_free(msg);
}

/*
 * Send what the window allows: from the daemon's loop after the listing,
 * at each acknowledgement and each tick (a full queue is waited out,
 * never dropped from).
 */
static void report_pump(struct fkv_clusterd *cd)
{
	struct nl_msg *msg;
	size_t end;
	int err;

	while (cd->reporting) {
		if (!fkv_cctl_roomy(cd->cctl))
			return;		/* the rest when the queue drained */
		if (cd->report_marker_due) {
			msg = fkv_wire_msg(FKV_CCMD_REPORT_ACK);
			err = !msg || nla_put_u64(msg, FKV_CA_SYNC_ID,
						  cd->report_batches + 1) ?
			      -ENOMEM : fkv_cctl_send(cd->cctl, 0, msg);
			nlmsg_free(msg);
			if (err)
				return;
			if (cd->report_batches++ == cd->report_acked)
				cd->report_ack_ms = now_ms();
			cd->report_marker_due = false;
			continue;
		}
		if (cd->kept_next == cd->nkept) {
			if (cd->report_acked == cd->report_batches)
				report_finish(cd);
			return;
		}
		if (cd->report_batches - cd->report_acked >= FKV_REPORT_WINDOW)
			return;
		end = cd->kept_next + FKV_REPORT_BATCH;
		if (end > cd->nkept)
			end = cd->nkept;
		while (cd->kept_next < end) {
			if (!fkv_cctl_roomy(cd->cctl) ||
			    report_send(cd, cd->kept[cd->kept_next]))
				return;
			cd->st.reports_sent++;
			free(cd->kept[cd->kept_next]);
			cd->kept[cd->kept_next++] = NULL;
		}
		cd->report_marker_due = true;
	}
}

/*
 * Fault injection for selftests/cluster/fence.sh: FLUXOND_TEST_REPORT_DELAY_MS
 * holds the reports back this long after registering (as a slow control
 * connection would), the daemon serving meanwhile, so that gets arrive
 * while the kept replicas are not adopted yet.  0: report at once.
 */
static uint64_t report_delay_ms(void)
{
	const char *s = getenv("FLUXOND_TEST_REPORT_DELAY_MS");
	unsigned long ms = s ? strtoul(s, NULL, 10) : 0;

	return ms <= 60000 ? ms : 0;
}

/* Report every replica our module kept to the master, which adopts them. */
static void report_kept(struct fkv_clusterd *cd)
{
	uint64_t failed = cd->st.reports_failed;
	unsigned int bad = 0;
	int err;

	report_clear(cd);
	err = fkv_nl_dump_module(report_collect, cd, &bad);
	if (err)
		fkv_err("cluster: cannot list the module's kept replicas: %s",
			strerror(-err));
	else
		fkv_info("cluster: our module kept %zu replicas (%u malformed): "
			 "reporting them to the master", cd->nkept, bad);
	if (cd->st.reports_failed != failed)
		fkv_warn("cluster: %llu kept replicas could not be held for "
			 "reporting (no memory): dropped",
			 (unsigned long long)(cd->st.reports_failed - failed));
	cd->reporting = true;
	cd->report_batches = cd->report_acked = 0;
	cd->report_sent0 = cd->st.reports_sent;
	report_pump(cd);
}

/*
 * DAEMON_REGISTER as node @id: a put asks the master once (ONE_TRIP)
 * unless --put-via-master; a module that refuses it (EINVAL: an older
 * one) gets the two round trips.
 */
static int cluster_register_flags(struct fkv_clusterd *cd, uint32_t id)
{
	uint32_t flags = FLUXONKV_REGISTER_F_PLACEMENT |
			 FLUXONKV_REGISTER_F_KEEP;
	int err;

	if (!cd->cfg.no_clean_drops)
		flags |= FLUXONKV_REGISTER_F_CLEAN_DROPS;

	/* A node's local hits live on the master's lease (not the master's). */
	if (!cd->master_role)
		flags |= FLUXONKV_REGISTER_F_LEASE;
	if (flags & FLUXONKV_REGISTER_F_CLEAN_DROPS) {
		err = fkv_nl_register(cd->nl, flags |
				      (cd->cfg.put_via_master ? 0 :
				       FLUXONKV_REGISTER_F_ONE_TRIP), id,
				      &cd->reg);
		if (err != -EINVAL)
			return err;
		fkv_warn("module refused REGISTER_F_CLEAN_DROPS: room is made "
			 "only by the master's eviction");
		flags &= ~FLUXONKV_REGISTER_F_CLEAN_DROPS;
	}
	if (!cd->cfg.put_via_master) {
		err = fkv_nl_register(cd->nl,
				      flags | FLUXONKV_REGISTER_F_ONE_TRIP, id,
				      &cd->reg);
		if (err != -EINVAL)
			return err;
		fkv_warn("module refused REGISTER_F_ONE_TRIP: every put asks "
			 "the master twice");
	}
	return fkv_nl_register(cd->nl, flags, id, &cd->reg);
}

/*
 * Register as node @id, then load the tenant table: a table of a previous
 * daemon is replaced (or cleared), on a master's own node as on any other.
 * A table this module refuses is a configuration it cannot serve: fluxond
 * exits (fkv_nl_load_tenants() said why); any other failure (a timeout,
 * memory) unregisters and is the caller's to retry.
 */
static int cluster_register(struct fkv_clusterd *cd, uint32_t id)
{
	int err = cluster_register_flags(cd, id);

	if (err)
		return err;
	err = fkv_nl_load_tenants(cd->nl, cd->cfg.tenants, cd->cfg.ntenants);
	if (!err)
		return 0;
	/* Registered moments ago: no pull, no target of ours yet. */
	fkv_nl_unregister(cd->nl);
	if (err == -EOPNOTSUPP || err == -EINVAL || err == -E2BIG ||
	    err == -ERANGE)
		exit(EXIT_FAILURE);
	return err;
}

static void node_register(struct fkv_clusterd *cd, uint32_t id)
{
	uint8_t key[FKV_MAC_LEN];
	struct nl_msg *msg;
	int err;

	err = cluster_register(cd, id);
	if (err) {
		fkv_err("cluster: DAEMON_REGISTER as node %u failed: %s", id,
			strerror(-err));
		return;
	}
	cd->self = id;
	cd->registered = true;
	cd->epoch++;
	/* From now on the master's tickets for placements here are good. */
	if (!fkv_cctl_place_key(cd->cctl, 0, key))
		place_key_set(cd, key);
	OPENSSL_cleanse(key, sizeof(key));
	/* The JOIN's answer granted the first lease: no local hit before. */
	fkv_nl_send_lease(cd->nl, cd->lease_until);
	fkv_info("cluster: registered with the module as node %u (segment "
		 "%llu MiB, SSD %llu MiB)", id,
		 (unsigned long long)(cd->reg.segment_size >> 20),
		 (unsigned long long)(cd->reg.ssd_capacity >> 20));
	/* The master learnt our SSD before we registered: tell it now. */
	/* ... and the put_ids its module saw, for a restarted master. */
	msg = fkv_wire_msg(FLUXONKV_CMD_SSD_STATE);
	if (!msg || nla_put_u64(msg, FLUXONKV_A_SSD_CAPACITY,
				cd->reg.ssd_capacity) ||
	    (cd->reg.put_id_max &&
	     nla_put_u64(msg, FLUXONKV_A_PUT_ID, cd->reg.put_id_max)) ||
	    fkv_cctl_send(cd->cctl, 0, msg))
		fkv_warn("cluster: cannot tell the master our SSD capacity");
	nlmsg_free(msg);
	/* What our module kept (the master restarted, or we rejoined). */
	if (!(cd->reg.flags & FLUXONKV_REGISTER_F_ADOPT))
		return;
	cd->report_at_ms = report_delay_ms();
	if (!cd->report_at_ms) {
		report_kept(cd);
		return;
	}
	fkv_warn("cluster: test hook: reports held back %llu ms",
		 (unsigned long long)cd->report_at_ms);
	cd->report_at_ms += now_ms();
}

/*
 * Before unregistering: no pull may still be writing a target, since the
 * module frees the targets of the FETCHes it fails.  Pulls are cancelled
 * and reaped (their FETCHes are answered, to a registration that ends),
 * and tokens of this registration forgotten.
 */
void fkv_clusterd_quiesce(struct fkv_clusterd *cd)
{
	unsigned int left = fkv_xport_cancel(cd->xport, 10000);
	struct fetch_tok *dead[256];
	unsigned int i, n = 0;
	size_t pos = 0;
	uint64_t key;
	void *val;

	/*
	 * Every pull in flight had its connection shut down (a dial still
	 * going publishes nothing after the cancel): they end at once.  One
	 * that did not would write into a target the module frees when we
	 * unregister; the process going takes its threads with it first.
	 */
	if (left) {
		fkv_err("cluster: %u pulls did not stop in 10 s: exiting rather "
			"than unregistering under them", left);
		_exit(EXIT_FAILURE);
	}
	cd->epoch++;	/* late completions answer nobody */
	places_sweep(cd, now_ms(), true);
	targets_clear(cd);	/* the module drops them as it unregisters */
	while (n < 256 && !fkv_u64map_next(&cd->tokens, &pos, &key, &val))
		if (!((struct fetch_tok *)val)->pulling)
			dead[n++] = val;
	for (i = 0; i < n; i++)
		tok_free(cd, dead[i]);
}

static void lease(void *arg, uint64_t until_ns)
{
	struct fkv_clusterd *cd = arg;

	if (cd->lease_void)
		return;
	cd->lease_until = until_ns;
	if (cd->registered)
		fkv_nl_send_lease(cd->nl, until_ns);
}

static void joined(void *arg, uint32_t id)
{
	node_register(arg, id);
}

static void lost(void *arg, bool peer_gone)
{
	struct fkv_clusterd *cd = arg;
	bool alone;

	if (!cd->registered)
		return;
	fkv_clusterd_quiesce(cd);
	/*
	 * The module fails every waiting upcall (gets fail ENOTCONN until we
	 * are back) and keeps its replicas (KEEP): once we rejoined we
	 * report them and the master adopts what is still current.  If the
	 * master's end went (it died, or it let us go and waits out our
	 * lease), the module serves our local hits alone until the lease
	 * ends: the master answers no overwrite of them before (cluster.md,
	 * "What is served while no leader exists").  If we are the ones
	 * closing, nothing more: the master goes on without us at once.
	 */
	alone = peer_gone && !cd->master_role && !cd->lease_void &&
		cd->lease_until > now_ns();
	if (alone && !fkv_nl_unregister_leased(cd->nl)) {
		cd->st.leased_losses++;
		fkv_warn("cluster: the master's end closed: local hits go on "
			 "for the %llu ms left of its lease",
			 (unsigned long long)((cd->lease_until -
					       now_ns()) / 1000000));
	} else {
		fkv_nl_unregister(cd->nl);
	}
	cd->registered = false;
	place_key_set(cd, NULL);	/* the next join makes another */
	cd->lease_void = false;		/* the next join grants afresh */
	cd->report_at_ms = 0;
	report_clear(cd);		/* reported anew after the rejoin */
	cd->epoch++;
	fkv_warn("cluster: unregistered from the module until the master is back");
}

static const struct nla_policy answer_policy[FKV_CA_MAX + 1] = {
	[FLUXONKV_A_REQ_ID] = { .type = NLA_U64 },
	[FLUXONKV_A_STATUS] = { .type = NLA_U32 },
	[FLUXONKV_A_PUT_ID] = { .type = NLA_U64 },
	[FLUXONKV_A_HANDLE] = { .type = NLA_U64 },
	[FLUXONKV_A_LEN] = { .type = NLA_U64 },
	[FLUXONKV_A_FLAGS] = { .type = NLA_U32 },
	[FLUXONKV_A_SOURCE] = { .type = NLA_U32 },
	[FLUXONKV_A_KEY] = { .type = NLA_UNSPEC, .minlen = 1,
			     .maxlen = FLUXONKV_KEY_MAX },
	[FKV_CA_DATA_ADDR] = { .type = NLA_STRING, .maxlen = FKV_ADDR_MAX },
	[FKV_CA_NODE_ID] = { .type = NLA_U32 },
	[FKV_CA_SYNC_ID] = { .type = NLA_U64 },
	[FLUXONKV_A_HANDLES] = { .type = NLA_UNSPEC, .minlen = 8,
				 .maxlen = FKV_DROPS_BATCH * 8 },
	[FKV_CA_PLACE_TICKET] = { .type = NLA_UNSPEC, .minlen = FKV_MAC_LEN,
				  .maxlen = FKV_MAC_LEN },
};

/* A drop our module could not apply: no local hits until we rejoin. */
static void drop_failed(struct fkv_clusterd *cd)
{
	fkv_err("cluster: DROP_REPLICA not applied: no local hits until we "
		"rejoin the master");
	cd->lease_void = true;
	cd->lease_until = 0;
	fkv_nl_send_lease(cd->nl, 0);
}

/*
 * FKV_CCMD_DROPS: a batch of eviction drops; each handle to our module,
 * then the answer, which lets the master send more.  A drop the module
 * could not apply gives up our lease (as for a single DROP_REPLICA), so
 * the answer holds either way: we serve none of them locally.
 */
static void master_drops(struct fkv_clusterd *cd, struct nlattr **tb)
{
	const uint8_t *p;
	struct nl_msg *ack;
	uint32_t flags;
	size_t i, n;
	bool failed = false;
	uint64_t h;
	int err;

	if (!tb[FLUXONKV_A_HANDLES] || !tb[FKV_CA_SYNC_ID] ||
	    nla_len(tb[FLUXONKV_A_HANDLES]) % 8) {
		fkv_warn("cluster: malformed DROPS from the master: ignored");
		return;
	}
	flags = tb[FLUXONKV_A_FLAGS] ? nla_get_u32(tb[FLUXONKV_A_FLAGS])
				     : FLUXONKV_DROP_F_EVICTED;
	p = nla_data(tb[FLUXONKV_A_HANDLES]);
	n = (size_t)nla_len(tb[FLUXONKV_A_HANDLES]) / 8;
	for (i = 0; i < n; i++) {
		memcpy(&h, p + i * 8, sizeof(h));
		target_forget(cd, h);
		if (!cd->registered)
			continue;
		err = fkv_nl_send_drop(cd->nl, h, flags);
		if (err && err != -ENOENT)
			failed = true;
	}
	cd->st.drops_applied += n;
	if (failed && !cd->lease_void)
		drop_failed(cd);
	ack = fkv_wire_msg(FKV_CCMD_DROPS);
	if (!ack || nla_put_u64(ack, FKV_CA_SYNC_ID,
				nla_get_u64(tb[FKV_CA_SYNC_ID])) ||
	    fkv_cctl_send(cd->cctl, 0, ack))
		fkv_warn("cluster: cannot answer a batch of drops");
	nlmsg_free(ack);
}

/* An answer to a forwarded upcall, or a DROP_REPLICA, from the master. */
static void master_msg(void *arg, struct nlmsghdr *nlh)
{
	struct fkv_clusterd *cd = arg;
	struct nlattr *tb[FKV_CA_MAX + 1];
	uint8_t cmd = fkv_wire_cmd(nlh);
	struct fkv_reply r = { 0 };
	uint64_t req_id;

	if (fkv_wire_parse(nlh, tb, answer_policy)) {
		fkv_warn("cluster: malformed message %u from the master", cmd);
		return;
	}
	if (cmd == FKV_CCMD_PLACED) {
		if (tb[FLUXONKV_A_HANDLE] && tb[FLUXONKV_A_PUT_ID])
			publish_target(cd, nla_get_u64(tb[FLUXONKV_A_HANDLE]),
				       nla_get_u64(tb[FLUXONKV_A_PUT_ID]),
				       tb[FLUXONKV_A_FLAGS] ?
				       nla_get_u32(tb[FLUXONKV_A_FLAGS]) : 0);
		return;
	}
	if (cmd == FKV_CCMD_DROPS) {
		master_drops(cd, tb);
		return;
	}
	if (cmd == FKV_CCMD_REPORT_DONE) {
		struct nl_msg *ack;

		/* every DROP_REPLICA of a refused report came before */
		if (!cd->registered)
			return;
		fkv_nl_send_adopt_done(cd->nl);
		/*
		 * With SYNC_ID (we were fenced): say that every one of those
		 * drops reached our module -- not if one failed (no lease
		 * until we rejoin: the fence stays).
		 */
		if (!tb[FKV_CA_SYNC_ID] || cd->lease_void)
			return;
		ack = fkv_wire_msg(FKV_CCMD_DROP_ACK);
		if (!ack || nla_put_u64(ack, FKV_CA_SYNC_ID,
					nla_get_u64(tb[FKV_CA_SYNC_ID])) ||
		    fkv_cctl_send(cd->cctl, 0, ack))
			fkv_warn("cluster: cannot acknowledge REPORT_DONE");
		nlmsg_free(ack);
		return;
	}
	if (cmd == FKV_CCMD_REPORT_ACK) {
		uint64_t n = tb[FKV_CA_SYNC_ID] ?
			     nla_get_u64(tb[FKV_CA_SYNC_ID]) : 0;

		if (cd->reporting && n > cd->report_acked &&
		    n <= cd->report_batches) {
			cd->report_acked = n;
			cd->report_ack_ms = now_ms();
			report_pump(cd);
		}
		return;
	}
	if (cmd == FLUXONKV_CMD_PERSIST) {
		if (tb[FLUXONKV_A_HANDLE] && tb[FLUXONKV_A_PUT_ID] &&
		    cd->registered)
			fkv_nl_send_persist(cd->nl,
					    nla_get_u64(tb[FLUXONKV_A_HANDLE]),
					    nla_get_u64(tb[FLUXONKV_A_PUT_ID]));
		return;
	}
	if (cmd == FLUXONKV_CMD_DROP_REPLICA) {
		struct nl_msg *ack;

		int err = 0;

		if (tb[FLUXONKV_A_HANDLE])
			target_forget(cd, nla_get_u64(tb[FLUXONKV_A_HANDLE]));
		if (tb[FLUXONKV_A_HANDLE] && cd->registered)
			err = fkv_nl_send_drop(cd->nl,
					       nla_get_u64(tb[FLUXONKV_A_HANDLE]),
					       tb[FLUXONKV_A_FLAGS] ?
					       nla_get_u32(tb[FLUXONKV_A_FLAGS]) : 0);
		/* an SSD copy another node's write retired (no HANDLE) */
		else if (tb[FLUXONKV_A_KEY] && tb[FLUXONKV_A_PUT_ID] &&
			 tb[FLUXONKV_A_SOURCE] &&
			 nla_get_u32(tb[FLUXONKV_A_SOURCE]) ==
			 FLUXONKV_SOURCE_SSD && cd->registered)
			err = fkv_nl_send_ssd_drop(cd->nl,
						   nla_data(tb[FLUXONKV_A_KEY]),
						   (size_t)nla_len(tb[FLUXONKV_A_KEY]),
						   nla_get_u64(tb[FLUXONKV_A_PUT_ID]));
		/*
		 * Not applied (and not already gone): our module may still
		 * serve that version.  Give up the lease until we rejoin and
		 * do not acknowledge: the master answers once the lease it
		 * granted before this drop is over.
		 */
		if (err && err != -ENOENT) {
			drop_failed(cd);
			return;
		}
		/*
		 * The module applied it when the send returned (genetlink
		 * runs the handler in our sendmsg): acknowledge.  Unregistered,
		 * the module holds no replica: nothing to wait for either.
		 */
		if (!tb[FKV_CA_SYNC_ID])
			return;
		ack = fkv_wire_msg(FKV_CCMD_DROP_ACK);
		if (!ack || nla_put_u64(ack, FKV_CA_SYNC_ID,
					nla_get_u64(tb[FKV_CA_SYNC_ID])) ||
		    fkv_cctl_send(cd->cctl, 0, ack))
			fkv_warn("cluster: cannot acknowledge a DROP_REPLICA");
		nlmsg_free(ack);
		return;
	}
	if (!tb[FLUXONKV_A_REQ_ID] || !tb[FLUXONKV_A_STATUS])
		return;
	req_id = nla_get_u64(tb[FLUXONKV_A_REQ_ID]);
	r.status = (int32_t)nla_get_u32(tb[FLUXONKV_A_STATUS]);
#define TAKE(attr, field, get)						\
	do {								\
		if (tb[FLUXONKV_A_##attr]) {				\
			r.field = get(tb[FLUXONKV_A_##attr]);		\
			r.present |= A(attr);				\
		}							\
	} while (0)
	TAKE(PUT_ID, put_id, nla_get_u64);
	TAKE(HANDLE, handle, nla_get_u64);
	TAKE(LEN, len, nla_get_u64);
	TAKE(FLAGS, flags, nla_get_u32);
	TAKE(SOURCE, source, nla_get_u32);
#undef TAKE
	if (cmd == FLUXONKV_CMD_GET_START)
		tokenize(cd, &r, tb[FKV_CA_NODE_ID] ?
			 nla_get_u32(tb[FKV_CA_NODE_ID]) : 0,
			 tb[FKV_CA_DATA_ADDR] ?
			 nla_get_string(tb[FKV_CA_DATA_ADDR]) : NULL);
	cd->st.answered++;
	if (cmd == FLUXONKV_CMD_PUT_PLACE) {
		struct place_op *op = place_by_req(cd, req_id);

		if (op && (op->busy || op->answered))
			return;		/* a stray second answer */
		if (op && !place_routed(cd, op, &r, tb[FKV_CA_DATA_ADDR] ?
					nla_get_string(tb[FKV_CA_DATA_ADDR]) :
					NULL, tb[FKV_CA_PLACE_TICKET] ?
					nla_data(tb[FKV_CA_PLACE_TICKET]) :
					NULL))
			return;		/* answered when step 1 ends */
	}
	if (cd->registered)
		fkv_nl_send_reply(cd->nl, cmd, req_id, &r);
}

/* Forward @u verbatim; GET_REVOKE's token becomes the source's handle. */
static int forward(struct fkv_clusterd *cd, const struct fkv_upcall *u,
		   uint64_t src_handle)
{
	struct nl_msg *msg = nlmsg_alloc_size(u->nlh->nlmsg_len + 64);
	struct nlmsghdr *nlh;
	struct nlattr *h;
	int err;

	if (!msg)
		return -ENOMEM;
	nlh = nlmsg_hdr(msg);
	memcpy(nlh, u->nlh, u->nlh->nlmsg_len);
	nlh->nlmsg_type = FKV_WIRE_TYPE;
	if (src_handle) {
		h = nla_find(genlmsg_attrdata(nlmsg_data(nlh), 0),
			     genlmsg_attrlen(nlmsg_data(nlh), 0),
			     FLUXONKV_A_HANDLE);
		if (h && nla_len(h) == sizeof(src_handle))
			memcpy(nla_data(h), &src_handle, sizeof(src_handle));
	}
	err = fkv_cctl_send(cd->cctl, 0, msg);
	nlmsg_free(msg);
	if (!err)
		cd->st.forwarded++;
	return err;
}

/* ---- the data plane ---- */

static void pull_done(struct fkv_pull *p)
{
	struct fetch_tok *t = p->arg;
	struct fkv_clusterd *cd = t->cd;
	struct fkv_reply r = { .status = p->status };

	t->pulling = false;
	if (p->status) {
		cd->st.fetch_errors++;
		fkv_info("cluster: pull of %llu bytes from node %u (%s) failed: %s",
			 (unsigned long long)t->len, t->src_node, t->addr,
			 strerror(-p->status));
	}
	/* A registration later, the module no longer waits for it. */
	if (t->epoch == cd->epoch && cd->registered)
		fkv_nl_send_reply(cd->nl, FLUXONKV_CMD_FETCH, t->fetch_req, &r);
	/* Kept on failure: the module's GET_REVOKE names the token. */
	if (!p->status || t->epoch != cd->epoch)
		tok_free(cd, t);
}

/* FETCH {KEY, PUT_ID, LEN, HANDLE=token, OFFSET}: false = answered later. */
static bool fetch(struct fkv_clusterd *cd, const struct fkv_upcall *u,
		  struct fkv_reply *r)
{
	struct fetch_tok *t = fkv_u64map_get(&cd->tokens, u->handle);
	int err;

	memset(r, 0, sizeof(*r));
	/* Our own errors are -EPROTO: the master forgets no source for it. */
	if (!t || t->pulling || t->epoch != cd->epoch ||
	    t->put_id != u->put_id || t->len != u->len) {
		r->status = -EPROTO;
		return true;
	}
	if (u->offset > cd->seg_size || u->len > cd->seg_size - u->offset) {
		r->status = -EPROTO;
		return true;
	}
	memset(&t->pull, 0, sizeof(t->pull));
	snprintf(t->pull.peer, sizeof(t->pull.peer), "%s", t->addr);
	memcpy(t->pull.key, u->key, u->key_len);
	t->pull.key_len = u->key_len;
	t->pull.source = t->source;
	t->pull.handle = t->src_handle;
	t->pull.put_id = t->put_id;
	t->pull.len = t->len;
	t->pull.dst_off = u->offset;
	/* the module frees the target at the FETCH's DEADLINE: not later */
	if (u->present & A(DEADLINE))
		t->pull.until_ms = u->deadline / 1000000;
	t->pull.done = pull_done;
	t->pull.arg = t;
	t->fetch_req = u->req_id;
	t->pulling = true;
	cd->st.fetches++;
	err = fkv_xport_pull(cd->xport, &t->pull);
	if (err) {
		t->pulling = false;
		r->status = err;
		return true;
	}
	return false;
}

/* ---- remote placement, the requester's side ---- */

static void place_free(struct fkv_clusterd *cd, struct place_op *op)
{
	if (op->p.fd >= 0)
		close(op->p.fd);	/* the target drops its replica */
	fkv_u64map_del(&cd->places, op->p.put_id);
	free(op->done_msg);
	free(op);
}

static struct place_op *place_by_req(struct fkv_clusterd *cd, uint64_t req)
{
	size_t pos = 0;
	uint64_t key;
	void *val;

	while (!fkv_u64map_next(&cd->places, &pos, &key, &val))
		if (((struct place_op *)val)->place_req == req)
			return val;
	return NULL;
}

static bool route_upcall(struct fkv_clusterd *cd, const struct fkv_upcall *u,
			 struct fkv_reply *r, uint64_t src_handle);

/* A transport step of @p ended (in our thread, from the reap). */
static void place_step_done(struct fkv_pull *p)
{
	struct place_op *op = p->arg;
	struct fkv_clusterd *cd = op->cd;
	struct fkv_reply r = { .status = p->status };
	struct fkv_upcall u;

	op->busy = false;
	if (p->status) {
		cd->st.place_errors++;
		fkv_info("cluster: placing put %llu (%llu bytes) on %s: step "
			 "%u failed: %s", (unsigned long long)p->put_id,
			 (unsigned long long)p->len, p->peer, p->step,
			 strerror(-p->status));
	}
	if (op->dead || op->epoch != cd->epoch || !cd->registered) {
		place_free(cd, op);
		return;
	}
	if (p->step == 1) {
		if (!p->status) {
			r.handle = p->handle;
			r.fd = (uint32_t)p->fd;
			r.present = A(HANDLE) | A(FD);
		}
		/* The module takes its own reference on the socket here. */
		fkv_nl_send_reply(cd->nl, FLUXONKV_CMD_PUT_PLACE, op->place_req,
				  &r);
		if (p->status)
			place_free(cd, op);
		else
			op->answered = true;
		return;
	}
	/* Step 2: every byte is in, the PUT_DONE goes to the master now. */
	if (!p->status && fkv_nl_decode(op->done_msg, &u))
		r.status = -EPROTO;
	if (!r.status) {
		cd->st.places++;
		if (!route_upcall(cd, &u, &r, 0)) {
			place_free(cd, op);
			return;
		}
	}
	fkv_nl_send_reply(cd->nl, FLUXONKV_CMD_PUT_DONE, op->done_req, &r);
	place_free(cd, op);
}

/*
 * The master answered PUT_PLACE for @op (@r, the target's data address
 * @addr, the master's @ticket for the target): start step 1, or answer
 * the module now (true, with @r).
 */
static bool place_routed(struct fkv_clusterd *cd, struct place_op *op,
			 struct fkv_reply *r, const char *addr,
			 const uint8_t *ticket)
{
	int err;

	if (!r->status && (!addr || !addr[0] || !ticket))
		r->status = -EPROTO;
	if (r->status) {
		r->present = 0;
		place_free(cd, op);
		return true;
	}
	snprintf(op->p.peer, sizeof(op->p.peer), "%s", addr);
	memcpy(op->p.ticket, ticket, FKV_MAC_LEN);
	op->p.done = place_step_done;
	op->p.arg = op;
	err = fkv_xport_place(cd->xport, &op->p);
	if (err) {
		memset(r, 0, sizeof(*r));
		r->status = err == -EBUSY ? -EAGAIN : err;
		place_free(cd, op);
		return true;
	}
	op->busy = true;
	return false;
}

/* PUT_PLACE {KEY, PUT_ID, LEN}: false = answered later. */
static bool place_begin(struct fkv_clusterd *cd, const struct fkv_upcall *u,
			struct fkv_reply *r)
{
	uint8_t ticket[FKV_MAC_LEN];
	struct place_op *op;
	const char *addr;
	uint32_t node;
	int err;

	if (!u->put_id || !u->len || !u->key_len ||
	    u->key_len > FLUXONKV_KEY_MAX) {
		r->status = -EINVAL;
		return true;
	}
	if (fkv_u64map_get(&cd->places, u->put_id)) {
		r->status = -EBUSY;
		return true;
	}
	op = calloc(1, sizeof(*op));
	if (!op || fkv_u64map_put(&cd->places, u->put_id, op)) {
		free(op);
		r->status = -ENOMEM;
		return true;
	}
	op->cd = cd;
	op->p.fd = -1;
	memcpy(op->p.key, u->key, u->key_len);
	op->p.key_len = u->key_len;
	op->p.put_id = u->put_id;
	op->p.len = u->len;
	op->place_req = u->req_id;
	op->epoch = cd->epoch;
	op->deadline_ms = now_ms() + FKV_TOKEN_TTL_MS;
	if (cd->master) {
		master_answer(cd, cd->self, u, r, &node, &addr);
		if (!r->status && addr && place_ticket(cd, node, u, ticket)) {
			memset(r, 0, sizeof(*r));
			r->status = -EAGAIN;
		}
		return place_routed(cd, op, r, addr, ticket);
	}
	err = forward(cd, u, 0);
	if (err) {
		place_free(cd, op);
		cd->st.refused_unjoined++;
		r->status = err == -ENOBUFS ? -EAGAIN : -ENOTCONN;
		return true;
	}
	return false;
}

/* The module's PUT_DONE of a placed put: wait for the target's word. */
static bool place_put_done(struct fkv_clusterd *cd, struct place_op *op,
			   const struct fkv_upcall *u, struct fkv_reply *r)
{
	int err;

	if (!op->answered || op->busy || op->done_msg ||
	    u->handle != op->p.handle) {
		r->status = -EPROTO;
		return true;
	}
	op->done_msg = malloc(u->nlh->nlmsg_len);
	if (!op->done_msg) {
		r->status = -ENOMEM;
		return true;
	}
	memcpy(op->done_msg, u->nlh, u->nlh->nlmsg_len);
	op->done_req = u->req_id;
	err = fkv_xport_place_finish(cd->xport, &op->p);
	if (err) {
		r->status = err == -EBUSY ? -EAGAIN : err;
		place_free(cd, op);
		return true;
	}
	op->busy = true;
	return false;
}

/* The module gave the put up (PUT_ABORT): end its placement. */
static void place_abort(struct fkv_clusterd *cd, uint64_t put_id)
{
	struct place_op *op = fkv_u64map_get(&cd->places, put_id);

	if (!op)
		return;
	if (op->busy)
		op->dead = true;
	else
		place_free(cd, op);
}

/* Placements of another registration, or past their time: gone. */
static void places_sweep(struct fkv_clusterd *cd, uint64_t now, bool all)
{
	struct place_op *dead[64];
	unsigned int i, n = 0;
	size_t pos = 0;
	uint64_t key;
	void *val;

again:
	n = 0;
	pos = 0;
	while (n < 64 && !fkv_u64map_next(&cd->places, &pos, &key, &val)) {
		struct place_op *op = val;

		/*
		 * One the module has the socket of ends with its PUT_DONE or
		 * PUT_ABORT, however long the send takes: never by time.
		 */
		if (op->busy)
			op->dead |= all;
		else if (all || (!op->answered && now > op->deadline_ms))
			dead[n++] = op;
	}
	for (i = 0; i < n; i++)
		place_free(cd, dead[i]);
	if (n == 64)
		goto again;
}

/* ---- the module's upcalls ---- */

bool fkv_clusterd_upcall(void *arg, const struct fkv_upcall *u,
			 struct fkv_reply *r)
{
	struct fkv_clusterd *cd = arg;
	uint64_t src_handle = 0;

	memset(r, 0, sizeof(*r));
	if (!cd->registered) {
		r->status = -ENOTCONN;
		return fkv_upcall_wants_reply(u->cmd);
	}
	if (u->cmd == FLUXONKV_CMD_FETCH)
		return fetch(cd, u, r);
	if (u->cmd == FLUXONKV_CMD_PUT_PLACE)
		return place_begin(cd, u, r);
	if (u->cmd == FLUXONKV_CMD_PUT_DONE) {
		struct place_op *op = fkv_u64map_get(&cd->places, u->put_id);

		if (op)
			return place_put_done(cd, op, u, r);
		/* A placed put we no longer track: its bytes are unproven. */
		if (FLUXONKV_HANDLE_NODE(u->handle) != cd->self) {
			r->status = -ETIMEDOUT;
			return true;
		}
	}
	if (u->cmd == FLUXONKV_CMD_PUT_ABORT)
		place_abort(cd, u->put_id);
	if (u->cmd == FLUXONKV_CMD_GET_REVOKE &&
	    (u->source == FLUXONKV_SOURCE_REMOTE ||
	     u->source == FLUXONKV_SOURCE_REMOTE_SSD)) {
		struct fetch_tok *t = fkv_u64map_get(&cd->tokens, u->handle);

		if (!t || t->pulling)
			return true;	/* nothing known to revoke: STATUS 0 */
		/* REMOTE: the source's replica; REMOTE_SSD: its node. */
		src_handle = t->source == FLUXONKV_SOURCE_REMOTE ? t->src_handle
								 : t->src_node;
		tok_free(cd, t);
	}
	return route_upcall(cd, u, r, src_handle);
}

/* Answer @u with the in-process master, or forward it to the master. */
static bool route_upcall(struct fkv_clusterd *cd, const struct fkv_upcall *u,
			 struct fkv_reply *r, uint64_t src_handle)
{
	const char *addr;
	uint32_t src_node;
	bool reply;
	int err;

	if (cd->master) {
		struct fkv_upcall v = *u;

		if (src_handle)
			v.handle = src_handle;
		reply = master_answer(cd, cd->self, &v, r, &src_node, &addr);
		if (reply && u->cmd == FLUXONKV_CMD_GET_START)
			tokenize(cd, r, src_node, addr);
		return reply;
	}
	err = forward(cd, u, src_handle);
	if (err && u->cmd == FLUXONKV_CMD_DROPPED && err != -ENOTCONN) {
		/*
		 * A notify has no answer to retry on, and a master that never
		 * hears of a clean drop routes to, and counts, a replica that
		 * is gone: start over, so that it rebuilds this node's routes
		 * from the report of what the module still holds.
		 */
		fkv_err("cluster: a DROPPED note could not go to the master "
			"(%s): reconnecting", strerror(-err));
		fkv_cctl_reset(cd->cctl);
	}
	if (err) {
		cd->st.refused_unjoined++;
		r->status = err == -ENOBUFS ? -EAGAIN : -ENOTCONN;
		return fkv_upcall_wants_reply(u->cmd);
	}
	return false;	/* the master's answer comes back in master_msg() */
}

/* ---- lifecycle ---- */

static const struct fkv_cctl_ops cctl_ops = {
	.member_up = member_up,
	.member_down = member_down,
	.member_busy = member_busy,
	.member_msg = member_msg,
	.drop_ack = drop_ack,
	.joined = joined,
	.lost = lost,
	.master_msg = master_msg,
	.lease = lease,
};

/* The master's writes to its nodes, while its etcd hold runs. */
static bool master_may_send(void *arg)
{
	struct fkv_clusterd *cd = arg;

	return cd->cfg.may_send(cd->cfg.election);
}

static uint64_t segment_used(void *arg)
{
	struct fkv_clusterd *cd = arg;
	struct fluxonkv_info info = { .size = sizeof(info) };

	return ioctl(cd->devfd, FLUXONKV_IOC_INFO, &info) ? 0 :
	       info.segment_used;
}

static int start_master(struct fkv_clusterd *cd)
{
	struct fkv_master_config mc = { 0 };
	uint64_t seen, etcd_term = 0;
	char addr[FKV_ADDR_MAX], why[PATH_MAX + 128];
	int err;

	cd->self = fkv_cctl_self_id(cd->cctl);
	err = cluster_register(cd, cd->self);
	if (err) {
		fkv_err("DAEMON_REGISTER failed: %s", strerror(-err));
		return err;
	}
	/*
	 * A new term before numbering anything: every put of ours is then
	 * newer than any version a node kept from an earlier master,
	 * whenever that node rejoins (term.h).
	 */
	seen = cd->reg.put_id_max;
	if (cd->cfg.term_floor) {
		/* Elected on etcd: above every term any master took there. */
		err = cd->cfg.term_floor(cd->cfg.election, &etcd_term);
		if (err) {
			fkv_nl_unregister(cd->nl);
			return err;
		}
		if (etcd_term > FKV_TERM_MAX) {
			fkv_err("the term in etcd, %llu, is past the last one (%llu)",
				(unsigned long long)etcd_term,
				(unsigned long long)FKV_TERM_MAX);
			fkv_nl_unregister(cd->nl);
			return -ERANGE;
		}
		if (FKV_PUT_ID(etcd_term, 0) > seen)
			seen = FKV_PUT_ID(etcd_term, 0);
	}
	err = fkv_term_next(cd->cc->state_dir, seen, &mc.term,
			    why, sizeof(why));
	if (err) {
		fkv_err("cannot start a master term: %s", why);
		fkv_nl_unregister(cd->nl);
		return err;
	}
	if (cd->cfg.term_commit) {
		err = cd->cfg.term_commit(cd->cfg.election, mc.term);
		if (err) {
			fkv_nl_unregister(cd->nl);
			return err;
		}
	}
	fkv_info("master term %llu (put_ids from %#llx)",
		 (unsigned long long)mc.term,
		 (unsigned long long)FKV_PUT_ID(mc.term, 1));
	cd->term = mc.term;
	fkv_fences_free(&cd->fences);
	err = fkv_fences_load(&cd->fences, cd->cc->state_dir, why,
			      sizeof(why));
	if (err) {
		fkv_err("cannot read the nodes' fences: %s", why);
		fkv_nl_unregister(cd->nl);
		return err;
	}
	if (cd->cfg.fences_merge) {
		err = cd->cfg.fences_merge(cd->cfg.election, &cd->fences);
		if (err) {
			fkv_err("cannot read the nodes' fences from etcd: %s",
				strerror(-err));
			fkv_nl_unregister(cd->nl);
			return err;
		}
	}
	if (cd->fences.n)
		fkv_info("%zu node fence(s) from earlier terms (%s/%s)",
			 cd->fences.n, cd->cc->state_dir, FKV_FENCE_FILE);
	mc.node = cd->self;
	mc.capacity = cd->reg.segment_size;
	mc.incarnation = fkv_cctl_incarnation(cd->cctl);
	mc.ssd_capacity = cd->reg.ssd_capacity;
	mc.first_put_id = cd->reg.put_id_max;
	mc.policy = cd->cfg.policy;
	mc.high_pct = cd->cfg.high_pct;
	mc.low_pct = cd->cfg.low_pct;
	mc.tenants = cd->cfg.tenants;
	mc.ntenants = cd->cfg.ntenants;
	cd->master = fkv_master_create(&mc, &master_ops, cd);
	if (!cd->master) {
		err = -errno;
		fkv_err("cannot build the master: %s", strerror(-err));
		fkv_nl_unregister(cd->nl);
		return err;
	}
	/* Nodes may serve on an earlier master's leases a while yet. */
	leases_may_run(cd, "a new master");
	/* Our own node serves pulls to the others at its data address. */
	fkv_hostport_str(addr, sizeof(addr), &cd->cc->advertise);
	fkv_master_node_up(cd->master, cd->self, mc.incarnation, mc.capacity,
			   mc.ssd_capacity, addr);
	cd->registered = true;
	cd->epoch++;
	/* A restarted master: its own module's kept replicas first. */
	if (cd->reg.flags & FLUXONKV_REGISTER_F_ADOPT)
		fkv_adopt_kept(cd->master, cd->nl, "master node");
	return 0;
}

int fkv_clusterd_start(struct fkv_clusterd **out,
		       const struct fkv_clusterd_config *c)
{
	const struct fkv_cluster_config *cc = c->cc;
	struct fkv_clusterd *cd = calloc(1, sizeof(*cd));
	struct fkv_cctl_config ccfg = { 0 };
	struct fkv_xport_config xc = { 0 };
	struct fkv_seg_view seg = { 0 };
	int err;

	if (!cd)
		return -ENOMEM;
	/*
	 * The timing budget: an overwrite's answer may wait lease_ms for a
	 * node that does not acknowledge its drop, and the module gives up
	 * on an answer after request_timeout_ms: the put would fail while
	 * the master publishes it.
	 */
	if (fkv_module_request_timeout_ms() &&
	    fkv_module_request_timeout_ms() <= cc->lease_ms + 500) {
		fkv_err("cluster: the module's request_timeout_ms (%u) must exceed "
			"cluster.lease_ms (%u) by more than 500 ms: an overwrite "
			"waits up to the lease for a node that does not answer",
			fkv_module_request_timeout_ms(), cc->lease_ms);
		free(cd);
		return -EINVAL;
	}
	cd->cfg = *c;
	cd->cc = cc;
	cd->nl = c->nl;
	cd->devfd = -1;
	cd->master_role = cc->role == FKV_ROLE_MASTER;
	pthread_mutex_init(&cd->tgt_lock, NULL);
	err = fkv_u64map_init(&cd->tokens, 0);
	if (!err)
		err = fkv_u64map_init(&cd->places, 0);
	if (!err)
		err = fkv_u64map_init(&cd->targets, 0);
	if (!err && cd->master_role)
		err = place_key_self(cd);
	if (err)
		goto fail;
	err = open_segment(cd);
	if (err)
		goto fail;

	xc.listen_host = cc->listen.host;
	xc.listen_port = cc->listen.port;
	xc.node_name = cc->node_name;
	xc.secret = cc->secret;
	xc.secret_len = cc->secret_len;
	seg.base = cd->seg;
	seg.size = cd->seg_size;
	seg.hold = seg_hold;
	seg.release = seg_release;
	seg.stage = seg_stage;
	seg.target = seg_target;
	seg.placed = seg_placed;
	seg.arg = cd;
	/* rdma / auto: RDMA READ where both ends have it, TCP otherwise. */
	xc.rdma_host = cc->advertise.host;
	xc.rdma_optional = cc->transport == FKV_TRANSPORT_AUTO;
	err = fkv_xport_create(&cd->xport, cc->transport == FKV_TRANSPORT_TCP ?
			       &fkv_xport_tcp : &fkv_xport_rdma, &xc, &seg);
	if (err) {
		fkv_err("cluster: data plane on %s:%u: %s", cc->listen.host,
			cc->listen.port, strerror(-err));
		goto fail;
	}

	ccfg.cc = cc;
	ccfg.ops = &cctl_ops;
	ccfg.segment_size = cd->seg_size;
	/* Before we register (a node joins first); SSD_STATE corrects it. */
	ccfg.ssd_capacity = fkv_module_ssd_capacity();
	ccfg.segment_used = segment_used;
	ccfg.arg = cd;
	if (cd->master_role && c->may_send)
		ccfg.may_send = master_may_send;
	err = fkv_auth_incarnation(&ccfg.incarnation);
	if (!err)
		err = fkv_cctl_start(&cd->cctl, &ccfg);
	if (err)
		goto fail;
	if (cd->master_role) {
		err = start_master(cd);
		if (err)
			goto fail;
	}
	fkv_info("cluster: data plane %s on %s:%u", fkv_xport_name(cd->xport),
		 cc->listen.host, fkv_xport_port(cd->xport));
	*out = cd;
	return 0;

fail:
	fkv_clusterd_stop(cd);
	return err;
}

void fkv_clusterd_stop(struct fkv_clusterd *cd)
{
	size_t pos = 0;
	uint64_t key;
	void *val;
	unsigned int i;

	if (!cd)
		return;
	/* Pull completions still reaped here reply to nobody. */
	cd->registered = false;
	while (cd->syncs) {
		struct sync_wait *sw = cd->syncs;

		cd->syncs = sw->next;
		free(sw);
	}
	fkv_cctl_stop(cd->cctl);
	fkv_xport_destroy(cd->xport);
	while (!fkv_u64map_next(&cd->tokens, &pos, &key, &val))
		free(val);
	fkv_u64map_fini(&cd->tokens);
	places_sweep(cd, 0, true);	/* none is busy after the destroy */
	fkv_u64map_fini(&cd->places);
	targets_clear(cd);
	fkv_u64map_fini(&cd->targets);
	pthread_mutex_destroy(&cd->tgt_lock);
	for (i = 0; i < FKV_ROUTE_NODES; i++) {
		fkv_adopted_free(&cd->reported[i]);
		free(cd->dq[i].e);
	}
	if (cd->drop_keys.slots)
		fkv_u64map_fini(&cd->drop_keys);
	report_clear(cd);
	fkv_master_destroy(cd->master);
	fkv_fences_free(&cd->fences);
	if (cd->seg)
		munmap(cd->seg, cd->seg_size);
	if (cd->devfd >= 0)
		close(cd->devfd);
	free(cd);
}

int fkv_clusterd_pollfds(struct fkv_clusterd *cd, struct pollfd *pfd, int max)
{
	int n = 0;

	if (max > 0)
		pfd[n++] = (struct pollfd){ .fd = fkv_xport_fd(cd->xport),
					    .events = POLLIN };
	return n + fkv_cctl_pollfds(cd->cctl, pfd + n, max - n);
}

int fkv_clusterd_handle(struct fkv_clusterd *cd, const struct pollfd *pfd,
			int n)
{
	if (n > 0 && pfd[0].revents)
		fkv_xport_reap(cd->xport);
	return fkv_cctl_handle(cd->cctl, pfd + 1, n - 1);
}

void fkv_clusterd_tick(struct fkv_clusterd *cd)
{
	uint64_t now = now_ms(), key;
	struct fetch_tok *dead[64];
	unsigned int i, ndead = 0;
	size_t pos = 0;
	void *val;

	fkv_cctl_tick(cd->cctl);
	if (cd->report_at_ms && now >= cd->report_at_ms) {
		cd->report_at_ms = 0;
		if (cd->registered)
			report_kept(cd);
	}
	/* A fresh clock: the reports above may have started after @now. */
	if (cd->reporting && cd->report_acked < cd->report_batches &&
	    now_ms() > cd->report_ack_ms + FKV_REPORT_ACK_MS) {
		fkv_err("cluster: the master acknowledged none of our reports "
			"in %u ms: reconnecting", FKV_REPORT_ACK_MS);
		fkv_cctl_reset(cd->cctl);	/* lost() clears the reports */
	}
	report_pump(cd);
	if (cd->master)
		drops_pump(cd);
	for (struct sync_wait *sw = cd->syncs, *next; sw; sw = next) {
		next = sw->next;
		if (!sw->nnodes && !sw->nbnodes) {	/* only leases hold it */
			if (now >= sw->hold_until_ms)
				sync_complete(cd, sw);
			continue;
		}
		if (now < sw->deadline_ms)
			continue;
		fkv_warn("cluster: %u node(s) did not acknowledge a drop in %u ms: "
			 "their lease is over, answering", sw->nnodes,
			 cd->cc->lease_ms);
		for (i = 0; i < sw->nnodes; i++) {
			const struct fkv_member *mb = fkv_members_get(
				fkv_cctl_members(cd->cctl), sw->nodes[i]);

			if (mb)
				fence_node(cd, mb->name);
		}
		cd->st.sync_timeouts++;
		sync_complete(cd, sw);
	}
	while (ndead < 64 && !fkv_u64map_next(&cd->tokens, &pos, &key, &val)) {
		struct fetch_tok *t = val;

		if (!t->pulling && now > t->deadline_ms)
			dead[ndead++] = t;
	}
	for (i = 0; i < ndead; i++) {
		cd->st.tokens_expired++;
		tok_free(cd, dead[i]);
	}
	places_sweep(cd, now, false);
	targets_sweep(cd, now);
}

struct fkv_master *fkv_clusterd_master(struct fkv_clusterd *cd)
{
	return cd->master;
}

uint64_t fkv_clusterd_write_hold_left(const struct fkv_clusterd *cd)
{
	uint64_t now = now_ms();

	return cd->master && now < cd->write_hold_ms ?
	       cd->write_hold_ms - now : 0;
}

bool fkv_clusterd_registered(const struct fkv_clusterd *cd)
{
	return cd->registered;
}

void fkv_clusterd_log_stats(struct fkv_clusterd *cd)
{
	struct fkv_xport_stats xs;

	fkv_xport_get_stats(cd->xport, &xs);
	fkv_info("cluster: %llu upcalls forwarded, %llu answered, %llu fetches "
		 "(%llu failed), %llu drops relayed, %llu puts placed "
		 "elsewhere (%llu failed), %llu targets taken; data plane: "
		 "%llu pulls (%llu bytes, %llu errors), %llu served (%llu "
		 "bytes, %llu errors, %llu refused)",
		 (unsigned long long)cd->st.forwarded,
		 (unsigned long long)cd->st.answered,
		 (unsigned long long)cd->st.fetches,
		 (unsigned long long)cd->st.fetch_errors,
		 (unsigned long long)cd->st.drops_relayed,
		 (unsigned long long)cd->st.places,
		 (unsigned long long)cd->st.place_errors,
		 (unsigned long long)xs.targets,
		 (unsigned long long)xs.pulls, (unsigned long long)xs.pull_bytes,
		 (unsigned long long)xs.pull_errors,
		 (unsigned long long)xs.served,
		 (unsigned long long)xs.served_bytes,
		 (unsigned long long)xs.serve_errors,
		 (unsigned long long)xs.auth_refused);
}

/* One member for STATS (master role). */
static int put_member(struct fkv_clusterd *cd, struct nl_msg *msg,
		      const struct fkv_member *mb, uint64_t now)
{
	struct fkv_master_node_info ni = { 0 };
	struct nlattr *n = nla_nest_start(msg, FKV_CA_NODE);
	int err;

	if (!n)
		return -EMSGSIZE;
	fkv_master_node_info(cd->master, mb->id, &ni);
	err = nla_put_u32(msg, FKV_CA_NODE_ID, mb->id) ||
	      nla_put_string(msg, FKV_CA_NODE_NAME, mb->name) ||
	      nla_put_u32(msg, FKV_CA_LIVE, mb->live) ||
	      nla_put_u64(msg, FLUXONKV_A_INCARNATION, mb->incarnation) ||
	      nla_put_string(msg, FKV_CA_DATA_ADDR, mb->data_addr) ||
	      nla_put_string(msg, FKV_CA_TRANSPORT, mb->transport) ||
	      nla_put_u64(msg, FLUXONKV_A_SEGMENT_SIZE, mb->segment_size) ||
	      nla_put_u64(msg, FLUXONKV_A_SEGMENT_USED, ni.used) ||
	      nla_put_u64(msg, FLUXONKV_A_SSD_CAPACITY, ni.ssd_capacity) ||
	      (mb->lefts && nla_put_string(msg, FKV_CA_LEFT_REASON,
					   fkv_left_reason_name(mb->last_left))) ||
	      fkv_ctl_put_stat(msg, "replicas", ni.replicas) ||
	      fkv_ctl_put_stat(msg, "served_gets", ni.remote_gets) ||
	      fkv_ctl_put_stat(msg, "module_segment_used", mb->segment_used) ||
	      fkv_ctl_put_stat(msg, "joins", mb->joins) ||
	      fkv_ctl_put_stat(msg, "lefts", mb->lefts) ||
	      fkv_ctl_put_stat(msg, "seen_ms_ago", now - mb->last_seen_ms);
	nla_nest_end(msg, n);
	return err ? -EMSGSIZE : 0;
}

int fkv_clusterd_stats(struct fkv_clusterd *cd, struct nl_msg *msg)
{
	const struct fkv_members *t = fkv_cctl_members(cd->cctl);
	struct fkv_cctl_stats cs;
	struct fkv_xport_stats xs;
	char master[FKV_ADDR_MAX];
	uint64_t now = now_ms(), refused;
	unsigned int i;
	int err;

	pthread_mutex_lock(&cd->tgt_lock);
	refused = cd->targets_refused;
	pthread_mutex_unlock(&cd->tgt_lock);
	fkv_cctl_get_stats(cd->cctl, &cs);
	fkv_xport_get_stats(cd->xport, &xs);
	fkv_hostport_str(master, sizeof(master), &cd->cc->master);
	const struct {
		const char *name;
		uint64_t v;
	} v[] = {
		{ "joined", cd->master_role || fkv_cctl_node_id(cd->cctl) },
		{ "registered", cd->registered },
		{ "upcalls_forwarded", cd->st.forwarded },
		{ "answers_relayed", cd->st.answered },
		{ "fetches", cd->st.fetches },
		{ "fetch_errors", cd->st.fetch_errors },
		{ "drops_relayed", cd->st.drops_relayed },
		{ "evictions_queued", cd->st.drops_queued },
		{ "evictions_batched", cd->st.drops_batched },
		{ "eviction_batches", cd->st.drop_batches },
		{ "evictions_applied", cd->st.drops_applied },
		{ "tokens_expired", cd->st.tokens_expired },
		{ "refused_unjoined", cd->st.refused_unjoined },
		{ "answers_held_for_drops", cd->st.syncs_held },
		{ "answers_held_for_leases", cd->st.lease_holds },
		{ "masters_lost_with_a_lease", cd->st.leased_losses },
		{ "drop_ack_timeouts", cd->st.sync_timeouts },
		{ "fences_raised", cd->st.fences_raised },
		{ "fences_lifted", cd->st.fences_lifted },
		{ "remote_pulls", xs.pulls },
		{ "remote_pull_bytes", xs.pull_bytes },
		{ "remote_pull_errors", xs.pull_errors },
		{ "served_pulls", xs.served },
		{ "served_pull_bytes", xs.served_bytes },
		{ "served_pull_errors", xs.serve_errors },
		{ "ssd_pushes", xs.pushes },
		{ "ssd_push_chunks", xs.push_chunks },
		{ "ssd_push_bytes", xs.push_bytes },
		{ "ssd_push_errors", xs.push_errors },
		{ "puts_placed_remote", cd->st.places },
		{ "place_errors", cd->st.place_errors },
		{ "place_bytes_sent", xs.place_bytes },
		{ "targets_taken", xs.targets },
		{ "target_bytes", xs.target_bytes },
		{ "target_errors", xs.target_errors },
		{ "targets_published", cd->st.targets_published },
		{ "targets_dropped", cd->st.targets_dropped },
		{ "targets_refused", refused },
		{ "kept_replicas_reported", cd->st.reports_sent },
		{ "kept_replicas_adopted", cd->st.reports_adopted },
		{ "kept_replicas_unreported", cd->st.reports_failed },
		{ "kept_replicas_refused", cd->st.reports_refused },
		{ "kept_replicas_repersisted", cd->st.reports_repersisted },
		{ "data_auth_refused", xs.auth_refused },
		{ "data_preauth_refused", xs.preauth_refused },
		{ "data_source_unproven", xs.source_unproven },
		{ "data_handshake_timeouts", xs.handshake_timeouts },
		{ "data_release_timeouts", xs.release_timeouts },
		{ "data_send_timeouts", xs.send_timeouts },
		{ "data_csum_errors", xs.csum_errors },
		{ "data_idle_closed", xs.idle_closed },
		{ "data_conns_refused", xs.conns_refused },
		{ "rdma_conns", xs.rdma_conns },
		{ "rdma_pulls", xs.rdma_pulls },
		{ "rdma_bytes", xs.rdma_bytes },
		{ "rdma_errors", xs.rdma_errors },
		{ "rdma_fallbacks", xs.rdma_fallbacks },
		{ "rdma_served", xs.rdma_served },
		{ "data_conns_opened", xs.conns_opened },
		{ "data_conns_failed", xs.conns_failed },
		{ "member_joins", cs.joins },
		{ "member_refused", cs.refused },
		{ "member_join_waits", cs.join_waits },
		{ "control_preauth_refused", cs.preauth_refused },
		{ "control_join_timeouts", cs.join_timeouts },
		{ "control_bad_seals", cs.bad_seals },
		{ "master_unproven", cs.master_unproven },
		{ "member_left", cs.member_left },
		{ "heartbeats", cs.heartbeats },
		{ "stale_messages", cs.stale },
		{ "master_connects", cs.connects },
		{ "master_connect_failures", cs.connect_failures },
	};

	err = nla_put_string(msg, FKV_CA_ROLE,
			     cd->master_role ? "master" : "node") ||
	      nla_put_string(msg, FKV_CA_NODE_NAME, cd->cc->node_name) ||
	      nla_put_u32(msg, FKV_CA_NODE_ID, cd->self) ||
	      nla_put_u64(msg, FLUXONKV_A_INCARNATION,
			  fkv_cctl_incarnation(cd->cctl)) ||
	      nla_put_string(msg, FKV_CA_MASTER, master) ||
	      nla_put_string(msg, FKV_CA_TRANSPORT, fkv_xport_name(cd->xport));
	for (i = 0; i < sizeof(v) / sizeof(v[0]) && !err; i++)
		err = fkv_ctl_put_stat(msg, v[i].name, v[i].v);
	if (!err && cd->cfg.put_stats)
		err = cd->cfg.put_stats(cd->cfg.election, msg);
	if (!err && cd->master)
		err = fkv_ctl_put_master(msg, cd->master);
	for (i = 0; t && !err && i < FKV_MEMBERS_MAX; i++)
		if (t->m[i].id)
			err = put_member(cd, msg, &t->m[i], now);
	return err ? -EMSGSIZE : 0;
}
