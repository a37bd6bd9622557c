// SPDX-License-Identifier: GPL-2.0
/*
 * The "fluxonkv" generic netlink family: the daemon's registration, upcalls
 * to it and its commands to the module.
 *
 * The pattern is TCMU's (drivers/target/target_core_user.c): the module
 * sends a request, the daemon answers with a message of the same command
 * carrying the request id, and the waiting caller is completed.  Nobody
 * registered -> -ENOTCONN at once; no answer in request_timeout_ms ->
 * -ETIMEDOUT; the daemon's socket closes -> every waiter fails with
 * -ENOTCONN, the master's replica references are dropped and holders stay.
 *
 * Every command has its own policy and is validated strictly; everything
 * the daemon can send is admin-only (GENL_ADMIN_PERM).  Answers are checked
 * against the sender: only the registered daemon's port may answer.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/net.h>
#include <linux/notifier.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "fluxonkv.h"

static struct genl_family fluxonkv_genl_family;

/*
 * The registered daemon.  @lock serialises registration and disconnect;
 * @portid is also read locklessly (READ_ONCE) on the upcall path, where a
 * stale value only means the send fails or the answer never comes.
 *
 * The port alone does not name the daemon: netlink frees a closing
 * socket's port (netlink_remove()) before NETLINK_URELEASE tells us, and
 * any local process may bind that port meanwhile.  So the daemon is its
 * socket, @sk, referenced from registration to detach: answers must come
 * from that socket, and nothing is sent once it is orphaned (SOCK_DEAD,
 * set by netlink_release() right after it frees the port).  The send
 * itself still goes by port (6.1 exports no send-to-socket): a send that
 * races the few instructions between netlink_remove() and sock_orphan()
 * in the daemon's close can reach a socket that bound the port in them.
 */
static struct {
	struct mutex lock;
	u32 portid;		/* 0: none */
	spinlock_t sk_lock;	/* protects @sk (taken on the send path) */
	struct sock *sk;	/* the daemon's socket, one reference */
	u32 flags;		/* FLUXONKV_REGISTER_F_* it registered with */
	pid_t pid;
	struct work_struct disconnect_work;
	u32 gone_portid;	/* port being torn down by disconnect_work */
	u32 gone_flags;		/* ... and its flags (daemon lock) */
	/*
	 * A daemon registered with F_KEEP went: its replica references and
	 * SSD routes wait for the next daemon (taken over or dropped when
	 * it registers).  Daemon lock.
	 */
	bool kept;
} fluxonkv_daemon = {
	.lock = __MUTEX_INITIALIZER(fluxonkv_daemon.lock),
	.sk_lock = __SPIN_LOCK_UNLOCKED(fluxonkv_daemon.sk_lock),
};

/*
 * Daemon activity, for senders that found the daemon's socket full
 * (fluxonkv_send()).  6.1 gives a module no way to wait on another
 * socket's receive room: netlink_unicast() waits on it only for a sender
 * socket with a send timeout (the family's kernel socket sends
 * non-blocking, genlmsg_unicast()), interruptibly (any signal), and
 * netlink_attachskb() and the receiver's wait queue (nlk->wait, in
 * net/netlink/af_netlink.h) are private.  So the senders wait here
 * instead: @activity moves and @wq is woken whenever the daemon's socket
 * sends us a message (a daemon that answers reads its socket: room may
 * have come), when a daemon registers and when it goes; a bounded
 * backoff covers a daemon that reads without sending.  @wq's lock is the
 * waitqueue's own, taken by no one holding another lock.
 */
static struct {
	wait_queue_head_t wq;
	atomic_t activity;
} fluxonkv_daemon_act = {
	.wq = __WAIT_QUEUE_HEAD_INITIALIZER(fluxonkv_daemon_act.wq),
};

/* Senders waiting for room: first after 1 ms, doubling up to 32 ms. */
#define FLUXONKV_SEND_WAIT_MIN_MS	1
#define FLUXONKV_SEND_WAIT_MAX_MS	32

static void fluxonkv_daemon_active(void)
{
	atomic_inc(&fluxonkv_daemon_act.activity);
	/* (a full barrier, then the look: a new sleeper saw the increment) */
	if (wq_has_sleeper(&fluxonkv_daemon_act.wq))
		wake_up_all(&fluxonkv_daemon_act.wq);
}

/*
 * Set (daemon lock) once the module is going away: registrations are
 * refused, no more multicasts.
 */
static bool fluxonkv_genl_exiting;

/* Replace the daemon's socket by @sk (referenced by the caller) or NULL. */
static void fluxonkv_daemon_set_sk(struct sock *sk)
{
	struct sock *old;

	spin_lock(&fluxonkv_daemon.sk_lock);
	old = fluxonkv_daemon.sk;
	WRITE_ONCE(fluxonkv_daemon.sk, sk);
	spin_unlock(&fluxonkv_daemon.sk_lock);
	if (old)
		sock_put(old);
}

/*
 * The daemon's socket, referenced, and its port; NULL when there is none
 * or it is being released.
 */
static struct sock *fluxonkv_daemon_sk_get(u32 *portid)
{
	struct sock *sk;

	spin_lock(&fluxonkv_daemon.sk_lock);
	sk = fluxonkv_daemon.sk;
	*portid = READ_ONCE(fluxonkv_daemon.portid);
	if (sk && !sock_flag(sk, SOCK_DEAD) && *portid)
		sock_hold(sk);
	else
		sk = NULL;
	spin_unlock(&fluxonkv_daemon.sk_lock);
	return sk;
}

/* Unicast @skb (consumed) to the daemon: its socket, never just its port. */
static int fluxonkv_daemon_unicast(struct sk_buff *skb)
{
	struct sock *sk;
	u32 portid;
	int ret;

	sk = fluxonkv_daemon_sk_get(&portid);
	if (!sk) {
		nlmsg_free(skb);
		return -ENOTCONN;
	}
	ret = genlmsg_unicast(&init_net, skb, portid);
	sock_put(sk);
	return ret == -ECONNREFUSED ? -ENOTCONN : ret;
}

/*
 * Outstanding upcalls by request id; whoever erases one (under the xa
 * lock) completes it, or ends it if it is asynchronous.
 */
static DEFINE_XARRAY_ALLOC1(fluxonkv_pending);
static u32 fluxonkv_pending_next;	/* cyclic cursor (xa lock) */

/* Fails asynchronous upcalls the daemon never answered. */
static void fluxonkv_async_sweep(struct work_struct *work);
static DECLARE_DELAYED_WORK(fluxonkv_async_sweep_work, fluxonkv_async_sweep);
/*
 * Protects fluxonkv_sweep_off and the arming of the sweep: once
 * fluxonkv_genl_exit() set it (and cancelled the sweep), nothing arms it
 * again -- an SSD worker's asynchronous upcall racing the unload would
 * otherwise queue work that runs from freed module text.
 */
static DEFINE_SPINLOCK(fluxonkv_sweep_lock);
static bool fluxonkv_sweep_off;

/* Run the sweep in @delay jiffies, while a daemon is there to answer. */
static void fluxonkv_sweep_arm(unsigned long delay)
{
	spin_lock(&fluxonkv_sweep_lock);
	/* none connected: its disconnect failed every pending upcall */
	if (!fluxonkv_sweep_off && READ_ONCE(fluxonkv_daemon.portid))
		schedule_delayed_work(&fluxonkv_async_sweep_work, delay);
	spin_unlock(&fluxonkv_sweep_lock);
}

bool fluxonkv_daemon_connected(void)
{
	return READ_ONCE(fluxonkv_daemon.portid) != 0;
}

/*
 * The registered master routes only to this owner (uapi
 * FLUXONKV_REGISTER_F_LOCAL_ROUTES): a get is answered from the index.
 * Read locklessly: a get racing a registration change either asks the
 * master or answers from an index that mirrors its routes.
 */
bool fluxonkv_daemon_local_routes(void)
{
	return READ_ONCE(fluxonkv_daemon.flags) &
	       FLUXONKV_REGISTER_F_LOCAL_ROUTES;
}

bool fluxonkv_daemon_placement(void)
{
	return READ_ONCE(fluxonkv_daemon.flags) &
	       FLUXONKV_REGISTER_F_PLACEMENT;
}

/* The master delegated puts (uapi FLUXONKV_REGISTER_F_LOCAL_PUTS). */
bool fluxonkv_daemon_local_puts(void)
{
	return READ_ONCE(fluxonkv_daemon.flags) &
	       FLUXONKV_REGISTER_F_LOCAL_PUTS;
}

/* The module may drop clean replicas itself (uapi F_CLEAN_DROPS). */
bool fluxonkv_daemon_clean_drops(void)
{
	return READ_ONCE(fluxonkv_daemon.flags) &
	       FLUXONKV_REGISTER_F_CLEAN_DROPS;
}

/* A put asks once, after the copy (uapi FLUXONKV_REGISTER_F_ONE_TRIP). */
bool fluxonkv_daemon_one_trip(void)
{
	return READ_ONCE(fluxonkv_daemon.flags) & FLUXONKV_REGISTER_F_ONE_TRIP;
}

/*
 * The registered daemon's pid, 0 without one.  Published last at
 * registration (after the port it is reached on) and cleared first at
 * detach: whoever sees a pid (sysfs daemon_pid) reaches the daemon.
 */
pid_t fluxonkv_daemon_pid(void)
{
	return smp_load_acquire(&fluxonkv_daemon.pid);
}

static void fluxonkv_daemon_event(pid_t pid)
{
	struct sk_buff *skb;
	void *hdr;

	skb = genlmsg_new(nla_total_size(sizeof(u32)), GFP_KERNEL);
	if (!skb)
		return;
	hdr = genlmsg_put(skb, 0, 0, &fluxonkv_genl_family, 0,
			  FLUXONKV_CMD_DAEMON_EVENT);
	if (!hdr || nla_put_u32(skb, FLUXONKV_A_DAEMON_PID, pid)) {
		nlmsg_free(skb);
		return;
	}
	genlmsg_end(skb, hdr);
	genlmsg_multicast(&fluxonkv_genl_family, skb, 0, 0, GFP_KERNEL);
}

/* Hand a claimed (erased) upcall its outcome. */
static void fluxonkv_upcall_finish(struct fluxonkv_upcall *up, int status)
{
	up->status = status;
	if (up->end)
		up->end(up);	/* frees @up */
	else
		complete(&up->done);
}

/* Fail every waiter: the daemon that would answer is gone. */
static void fluxonkv_pending_fail_all(int err)
{
	struct fluxonkv_upcall *up;
	unsigned long id;

	xa_for_each(&fluxonkv_pending, id, up) {
		up = xa_erase(&fluxonkv_pending, id);
		if (!up)
			continue;
		fluxonkv_upcall_finish(up, err);
	}
}

/*
 * Expire asynchronous upcalls past their deadline.  Entries are looked at
 * under the xa lock only: an answer claims its entry under the same lock
 * and may free it right after.
 */
static void fluxonkv_async_sweep(struct work_struct *work)
{
	struct fluxonkv_upcall *up, *expired;
	bool more = false;
	unsigned long id;

	do {
		expired = NULL;
		xa_lock(&fluxonkv_pending);
		xa_for_each(&fluxonkv_pending, id, up) {
			if (!up->end || up->sending || up->no_expire)
				continue;
			if (time_before(jiffies, up->deadline)) {
				more = true;
				continue;
			}
			__xa_erase(&fluxonkv_pending, id);
			expired = up;
			break;
		}
		xa_unlock(&fluxonkv_pending);
		if (expired) {
			fluxonkv_stat_inc(upcall_timeouts);
			pr_warn_ratelimited("daemon did not answer cmd %u (req %llu) in %u ms\n",
					    expired->cmd, expired->id,
					    expired->expire_ms ?:
					    fluxonkv_request_timeout_ms);
			fluxonkv_upcall_finish(expired, -ETIMEDOUT);
		}
	} while (expired);
	if (more)
		fluxonkv_sweep_arm(HZ);
}

static void fluxonkv_disconnect_work(struct work_struct *work)
{
	mutex_lock(&fluxonkv_daemon.lock);
	fluxonkv_pending_fail_all(-ENOTCONN);
	fluxonkv_put_notes_forget();
	fluxonkv_drop_notes_forget();
	if (fluxonkv_daemon.gone_flags & FLUXONKV_REGISTER_F_KEEP) {
		pr_info("daemon (port %u) gone: its %lu replicas are kept for the next one\n",
			fluxonkv_daemon.gone_portid, fluxonkv_replica_count());
		fluxonkv_daemon.kept = true;
	} else {
		pr_info("daemon (port %u) gone: dropping its replica references\n",
			fluxonkv_daemon.gone_portid);
		fluxonkv_replica_drop_all();
		fluxonkv_ssd_unroute_all();
	}
	if (!fluxonkv_genl_exiting)
		fluxonkv_daemon_event(0);
	fluxonkv_daemon.gone_portid = 0;
	mutex_unlock(&fluxonkv_daemon.lock);
}

/*
 * Bumped (fully ordered) at every registration and detach: a replica made
 * on the daemon's own initiative (FLUXONKV_IOC_TARGET) checks it did not
 * change across its making, or no teardown would ever drop it.
 */
static atomic64_t fluxonkv_daemon_gen = ATOMIC64_INIT(0);

/*
 * Bumped (fully ordered) at every detach only: a local put's PUT_LOCAL
 * note is for the daemon connected when the put was delegated, which a
 * registration of that same daemon again (same socket) does not change.
 */
static atomic64_t fluxonkv_daemon_link = ATOMIC64_INIT(0);

u64 fluxonkv_daemon_generation(void)
{
	return atomic64_read(&fluxonkv_daemon_gen);
}

u64 fluxonkv_daemon_link_generation(void)
{
	return atomic64_read(&fluxonkv_daemon_link);
}

/* For who documents "daemon lock held" outside this file. */
void fluxonkv_daemon_assert_locked(void)
{
	lockdep_assert_held(&fluxonkv_daemon.lock);
}

/*
 * Called with the daemon lock held.  The flags are cleared before the
 * generations move (both bumps are fully ordered): whoever reads the new
 * generation then finds no local puts delegated any more
 * (fluxonkv_replica_publish_local()), so no put publishes under the
 * generation of a daemon that is gone -- its note would reach nobody.
 */
static void fluxonkv_daemon_detach(bool alone)
{
	lockdep_assert_held(&fluxonkv_daemon.lock);
	/*
	 * Local hits under the lease without a daemon (UNREGISTER_F_LEASED),
	 * or none from here: set before the port goes, so a get that finds
	 * no daemon reads this detach's choice.
	 */
	fluxonkv_lease_set_alone(alone);
	/* First: a pid seen means a daemon reached (fluxonkv_daemon_pid()). */
	WRITE_ONCE(fluxonkv_daemon.pid, 0);
	fluxonkv_daemon.gone_portid = fluxonkv_daemon.portid;
	fluxonkv_daemon.gone_flags = fluxonkv_daemon.flags;
	WRITE_ONCE(fluxonkv_daemon.portid, 0);
	fluxonkv_daemon_set_sk(NULL);
	WRITE_ONCE(fluxonkv_daemon.flags, 0);
	atomic64_inc_return(&fluxonkv_daemon_link);
	atomic64_inc_return(&fluxonkv_daemon_gen);
	/* senders waiting for room find no daemon now: ENOTCONN */
	fluxonkv_daemon_active();
	schedule_work(&fluxonkv_daemon.disconnect_work);
}

static int fluxonkv_netlink_notify(struct notifier_block *nb,
				   unsigned long event, void *ptr)
{
	struct netlink_notify *n = ptr;

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC ||
	    !net_eq(n->net, &init_net))
		return NOTIFY_DONE;
	mutex_lock(&fluxonkv_daemon.lock);
	if (n->portid && n->portid == fluxonkv_daemon.portid)
		fluxonkv_daemon_detach(false);
	mutex_unlock(&fluxonkv_daemon.lock);
	return NOTIFY_DONE;
}

static struct notifier_block fluxonkv_netlink_nb = {
	.notifier_call = fluxonkv_netlink_notify,
};

static int fluxonkv_put_u64(struct sk_buff *skb, int type, u64 v)
{
	return nla_put_u64_64bit(skb, type, v, FLUXONKV_A_PAD);
}

static int fluxonkv_fill_args(struct sk_buff *skb,
			      const struct fluxonkv_upcall_args *a)
{
	if (a->key && nla_put(skb, FLUXONKV_A_KEY, a->key_len, a->key))
		return -EMSGSIZE;
	if (a->len && fluxonkv_put_u64(skb, FLUXONKV_A_LEN, a->len))
		return -EMSGSIZE;
	if (a->put_id && fluxonkv_put_u64(skb, FLUXONKV_A_PUT_ID, a->put_id))
		return -EMSGSIZE;
	if (a->handle && fluxonkv_put_u64(skb, FLUXONKV_A_HANDLE, a->handle))
		return -EMSGSIZE;
	if (a->bytes && fluxonkv_put_u64(skb, FLUXONKV_A_BYTES, a->bytes))
		return -EMSGSIZE;
	if (a->bytes && fluxonkv_put_u64(skb, FLUXONKV_A_SEGMENT_USED,
					 fluxonkv_segment_used()))
		return -EMSGSIZE;
	if (a->err && nla_put_s32(skb, FLUXONKV_A_ERRNO, a->err))
		return -EMSGSIZE;
	if (a->source && nla_put_u32(skb, FLUXONKV_A_SOURCE, a->source))
		return -EMSGSIZE;
	if ((a->offset || a->has_offset) &&
	    fluxonkv_put_u64(skb, FLUXONKV_A_OFFSET, a->offset))
		return -EMSGSIZE;
	return 0;
}

/*
 * Build and unicast one message to the daemon; @req_id 0 = notify.  The
 * local puts' notes go first (fluxonkv_put_notes_flush): while they cannot,
 * neither can this message.
 */
static int fluxonkv_send_once(u8 cmd, u64 req_id, u64 deadline,
			      const struct fluxonkv_upcall_args *args,
			      const u64 *handles, unsigned int nhandles)
{
	struct sk_buff *skb;
	void *hdr;
	int ret;

	if (!READ_ONCE(fluxonkv_daemon.portid))
		return -ENOTCONN;
	ret = fluxonkv_put_notes_flush();
	if (ret)
		return ret;
	skb = genlmsg_new(NLMSG_GOODSIZE + nhandles * sizeof(u64), GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	hdr = genlmsg_put(skb, 0, 0, &fluxonkv_genl_family, 0, cmd);
	if (!hdr)
		goto err_size;
	if (req_id && fluxonkv_put_u64(skb, FLUXONKV_A_REQ_ID, req_id))
		goto err_size;
	if (deadline && fluxonkv_put_u64(skb, FLUXONKV_A_DEADLINE, deadline))
		goto err_size;
	if (fluxonkv_fill_args(skb, args))
		goto err_size;
	if (nhandles && nla_put(skb, FLUXONKV_A_HANDLES,
				nhandles * sizeof(u64), handles))
		goto err_size;
	genlmsg_end(skb, hdr);
	return fluxonkv_daemon_unicast(skb);

err_size:
	nlmsg_free(skb);
	return -EMSGSIZE;
}

/*
 * FLUXONKV_A_DEADLINE of a request we stop waiting for: CLOCK_MONOTONIC
 * ns, comparable with the daemon's clock_gettime(CLOCK_MONOTONIC).  A
 * daemon that reads the request later (it was stopped, or busy) drops it
 * instead of acting on it: no reservation, no eviction for a put nobody
 * waits for.
 */
static u64 fluxonkv_upcall_deadline(void)
{
	return ktime_get_ns() + (u64)fluxonkv_request_timeout_ms * NSEC_PER_MSEC;
}

/*
 * Jiffies left until @deadline (ns, as above): the module waits exactly as
 * long as the request says, a send that had to retry included.
 */
static unsigned long fluxonkv_until(u64 deadline)
{
	u64 now = ktime_get_ns();

	return deadline > now ? nsecs_to_jiffies(deadline - now) : 0;
}

/*
 * A full daemon socket (-EAGAIN) is back-pressure, not failure: wait for
 * the daemon's activity (fluxonkv_daemon_act: it answered something, or
 * went) or a backoff of 1 ms doubling to 32 ms, whichever comes first,
 * and try again, until the request's @deadline or request_timeout_ms from
 * now, whichever is sooner (a FETCH's deadline is later: its getter waits
 * no longer for the send than for any upcall).  Killable.  Return: the
 * last send's result: -EAGAIN when the socket stayed full until then (or
 * the caller was killed), -ENOTCONN once the daemon went.
 */
static int fluxonkv_send(u8 cmd, u64 req_id, u64 deadline,
			 const struct fluxonkv_upcall_args *args,
			 const u64 *handles, unsigned int nhandles)
{
	unsigned long wait = msecs_to_jiffies(fluxonkv_request_timeout_ms);
	unsigned long until = jiffies + (deadline ?
			      min(fluxonkv_until(deadline), wait) : wait);
	unsigned int backoff = FLUXONKV_SEND_WAIT_MIN_MS;
	bool waited = false;
	long left;
	int seen, ret;

	for (;;) {
		/* before the send: activity after its failure wakes us */
		seen = atomic_read(&fluxonkv_daemon_act.activity);
		ret = fluxonkv_send_once(cmd, req_id, deadline, args, handles,
					 nhandles);
		left = (long)(until - jiffies);
		if (ret != -EAGAIN || left <= 0)
			return ret;
		if (!waited) {
			waited = true;
			fluxonkv_stat_inc(send_waits);
		}
		left = wait_event_killable_timeout(fluxonkv_daemon_act.wq,
				atomic_read(&fluxonkv_daemon_act.activity) != seen,
				min_t(long, left, msecs_to_jiffies(backoff)));
		if (left < 0)
			return ret;	/* killed */
		/* the daemon moved: soon again; else wait longer next time */
		backoff = left ? FLUXONKV_SEND_WAIT_MIN_MS :
			  min(backoff * 2, FLUXONKV_SEND_WAIT_MAX_MS);
	}
}

/* For messages other files build themselves: header now, send later. */
struct sk_buff *fluxonkv_genl_new(u8 cmd, size_t size, void **hdr)
{
	struct sk_buff *skb = genlmsg_new(size, GFP_KERNEL);

	if (!skb)
		return NULL;
	*hdr = genlmsg_put(skb, 0, 0, &fluxonkv_genl_family, 0, cmd);
	if (!*hdr) {
		nlmsg_free(skb);
		return NULL;
	}
	return skb;
}

/* Unicast to the daemon; consumes @skb.  -ENOTCONN without one. */
int fluxonkv_genl_send(struct sk_buff *skb, void *hdr)
{
	genlmsg_end(skb, hdr);
	return fluxonkv_daemon_unicast(skb);
}

static int fluxonkv_ssd_put_notice(struct sk_buff *skb,
				   const struct fluxonkv_ssd_notice *n)
{
	struct nlattr *nest = nla_nest_start(skb, FLUXONKV_A_ENTRY);

	if (!nest)
		return -EMSGSIZE;
	if (nla_put(skb, FLUXONKV_A_KEY, n->key_len, n->key) ||
	    nla_put_u64_64bit(skb, FLUXONKV_A_PUT_ID, n->put_id,
			      FLUXONKV_A_PAD)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

static size_t fluxonkv_put_local_size(const struct fluxonkv_replica *r)
{
	return nla_total_size(0) + nla_total_size(r->key_len) +
	       4 * nla_total_size_64bit(sizeof(u64)) + nla_total_size(sizeof(u32));
}

/*
 * PUT_LOCAL: one nested ENTRY {KEY, PUT_ID, HANDLE, LEN, FLAGS [, DROPPED]} per local
 * put of @batch taken in daemon generation @gen (older ones are skipped:
 * that daemon is gone).  0 (nothing to send included), or -errno.
 */
int fluxonkv_notify_put_local(struct list_head *batch, u64 gen)
{
	const struct fluxonkv_replica *r;
	struct nlattr *nest;
	struct sk_buff *skb;
	size_t size = 0;
	void *hdr;

	list_for_each_entry(r, batch, note)
		if (r->note_gen == gen)
			size += fluxonkv_put_local_size(r);
	if (!size)
		return 0;
	skb = fluxonkv_genl_new(FLUXONKV_CMD_PUT_LOCAL, size, &hdr);
	if (!skb)
		return -ENOMEM;
	list_for_each_entry(r, batch, note) {
		if (r->note_gen != gen)
			continue;
		nest = nla_nest_start(skb, FLUXONKV_A_ENTRY);
		if (!nest ||
		    nla_put(skb, FLUXONKV_A_KEY, r->key_len, r->key) ||
		    fluxonkv_put_u64(skb, FLUXONKV_A_PUT_ID, r->put_id) ||
		    /* renumbered under the handle table's lock */
		    fluxonkv_put_u64(skb, FLUXONKV_A_HANDLE,
				     READ_ONCE(r->handle)) ||
		    fluxonkv_put_u64(skb, FLUXONKV_A_LEN, r->alloc->len) ||
		    nla_put_u32(skb, FLUXONKV_A_FLAGS, r->note_flags) ||
		    (r->note_dropped &&
		     fluxonkv_put_u64(skb, FLUXONKV_A_DROPPED, r->note_dropped))) {
			nlmsg_free(skb);
			return -EMSGSIZE;
		}
		nla_nest_end(skb, nest);
	}
	return fluxonkv_genl_send(skb, hdr);
}

/*
 * DROPPED {HANDLES}: clean replicas the module dropped (notes.c, under
 * its send lock: no flush here).
 */
int fluxonkv_notify_dropped(const u64 *handles, unsigned int n)
{
	struct sk_buff *skb;
	void *hdr;

	skb = fluxonkv_genl_new(FLUXONKV_CMD_DROPPED,
				nla_total_size(n * sizeof(u64)), &hdr);
	if (!skb)
		return -ENOMEM;
	if (nla_put(skb, FLUXONKV_A_HANDLES, n * sizeof(u64), handles)) {
		nlmsg_free(skb);
		return -EMSGSIZE;
	}
	return fluxonkv_genl_send(skb, hdr);
}

/* SSD_EVICTED: one nested ENTRY {KEY, PUT_ID} per overwritten version. */
int fluxonkv_notify_ssd_evicted(struct list_head *batch)
{
	const struct fluxonkv_ssd_notice *n;
	struct sk_buff *skb;
	size_t size = 0;
	void *hdr;

	list_for_each_entry(n, batch, node)
		size += nla_total_size(0) + nla_total_size(n->key_len) +
			nla_total_size_64bit(sizeof(u64));
	skb = fluxonkv_genl_new(FLUXONKV_CMD_SSD_EVICTED, size, &hdr);
	if (!skb)
		return -ENOMEM;
	list_for_each_entry(n, batch, node) {
		if (fluxonkv_ssd_put_notice(skb, n)) {
			nlmsg_free(skb);
			return -EMSGSIZE;
		}
	}
	return fluxonkv_genl_send(skb, hdr);
}

/*
 * SSD_STATE: this owner's SSD capacity changed.  Under the daemon lock, so
 * it is ordered with a registration's answer (which carries the capacity
 * too) and a master never applies an older value after a newer one.
 */
void fluxonkv_notify_ssd_state(void)
{
	struct sk_buff *skb;
	void *hdr;

	mutex_lock(&fluxonkv_daemon.lock);
	if (!fluxonkv_daemon.portid)
		goto out;
	skb = fluxonkv_genl_new(FLUXONKV_CMD_SSD_STATE,
				nla_total_size_64bit(sizeof(u64)), &hdr);
	if (!skb)
		goto out;
	if (fluxonkv_put_u64(skb, FLUXONKV_A_SSD_CAPACITY,
			     fluxonkv_ssd_capacity())) {
		nlmsg_free(skb);
		goto out;
	}
	fluxonkv_genl_send(skb, hdr);
out:
	mutex_unlock(&fluxonkv_daemon.lock);
}

int fluxonkv_notify(u8 cmd, const struct fluxonkv_upcall_args *args,
		    const u64 *handles, unsigned int nhandles)
{
	return fluxonkv_send(cmd, 0, 0, args, handles, nhandles);
}

/* Give @up a request id among the outstanding upcalls: 0 or -errno. */
static int fluxonkv_pending_add(struct fluxonkv_upcall *up, u32 *id)
{
	int ret;

	if (!fluxonkv_daemon_connected())
		return -ENOTCONN;
	ret = xa_alloc_cyclic(&fluxonkv_pending, id, up, xa_limit_32b,
			      &fluxonkv_pending_next, GFP_KERNEL);
	if (ret < 0)
		return ret;
	up->id = *id;
	return 0;
}

/**
 * fluxonkv_upcall() - ask the daemon and wait for its answer.
 * @cmd: FLUXONKV_CMD_*.
 * @args: attributes to send.
 * @up: caller-owned request; answer attributes land here.
 *
 * Sleeps (killable) for at most request_timeout_ms.
 *
 * Return: the daemon's status (0 or -errno), -ENOTCONN without a daemon or
 * when it goes away, -ETIMEDOUT, -EINTR on a fatal signal.
 */
int fluxonkv_upcall(u8 cmd, const struct fluxonkv_upcall_args *args,
		    struct fluxonkv_upcall *up)
{
	return fluxonkv_upcall_handles(cmd, args, up, NULL, 0);
}

/* fluxonkv_upcall() with a HANDLES array (@nhandles of them, may be 0). */
int fluxonkv_upcall_handles(u8 cmd, const struct fluxonkv_upcall_args *args,
			    struct fluxonkv_upcall *up, const u64 *handles,
			    unsigned int nhandles)
{
	u64 deadline = fluxonkv_upcall_deadline();
	long left;
	u32 id;
	int ret;

	init_completion(&up->done);
	up->cmd = cmd;
	up->status = 0;
	ret = fluxonkv_pending_add(up, &id);
	if (ret)
		return ret;

	ret = fluxonkv_send(cmd, id, deadline, args, handles, nhandles);
	if (ret < 0)
		goto err_erase;

	left = wait_for_completion_killable_timeout(&up->done,
						    fluxonkv_until(deadline));
	if (left > 0)
		return up->status;
	ret = left ? -EINTR : -ETIMEDOUT;
	if (!left) {
		fluxonkv_stat_inc(upcall_timeouts);
		pr_warn_ratelimited("daemon did not answer cmd %u (req %u) in %u ms\n",
				    cmd, id, fluxonkv_request_timeout_ms);
	}
	if (xa_erase(&fluxonkv_pending, id) != up) {
		/* An answer is being delivered: it completes us shortly. */
		wait_for_completion(&up->done);
		return up->status;
	}
	fluxonkv_upcall_cancel(id);
	return ret;

err_erase:
	if (xa_erase(&fluxonkv_pending, id) != up) {
		wait_for_completion(&up->done);
		return up->status;
	}
	return ret;
}

/**
 * fluxonkv_upcall_cancel() - tell the daemon nobody waits for request @id.
 * @id: the request's FLUXONKV_A_REQ_ID.
 *
 * A daemon that has not acted on it yet (it reads its socket in batches
 * and looks ahead) drops it.  Best effort: no retry on a full socket.
 */
void fluxonkv_upcall_cancel(u64 id)
{
	struct fluxonkv_upcall_args args = {};

	fluxonkv_send_once(FLUXONKV_CMD_CANCEL, id, 0, &args, NULL, 0);
}

/**
 * fluxonkv_upcall_async() - ask the daemon without waiting for the answer.
 * @cmd: FLUXONKV_CMD_*.
 * @args: attributes to send; must stay valid until this returns even if
 *	@up ends meanwhile (a disconnect may end it during the send).
 * @up: allocated by the caller with @up->end set; owned by this call from
 *	here on.
 *
 * @up->end runs exactly once: from the answer handler (after what it does
 * for @cmd, e.g. publishing a promoted replica), on a send failure (a full
 * daemon socket included: nothing waits for room), when the daemon goes
 * away (-ENOTCONN) or request_timeout_ms (@up->expire_ms if set) after
 * the send (-ETIMEDOUT; never with @up->no_expire).
 * May sleep (allocation).
 */
void fluxonkv_upcall_async(u8 cmd, const struct fluxonkv_upcall_args *args,
			   struct fluxonkv_upcall *up)
{
	u64 deadline;
	u32 id;
	int ret;

	up->cmd = cmd;
	up->sending = true;	/* the sweep leaves it alone until sent */
	ret = fluxonkv_pending_add(up, &id);
	if (ret) {
		up->send_failed = true;
		goto end;
	}
	if (up->no_expire)
		deadline = 0;
	else if (up->expire_ms)
		deadline = ktime_get_ns() + (u64)up->expire_ms * NSEC_PER_MSEC;
	else
		deadline = fluxonkv_upcall_deadline();
	ret = up->send_retry ? fluxonkv_send(cmd, id, deadline, args, NULL, 0) :
			       fluxonkv_send_once(cmd, id, deadline, args, NULL,
						  0);
	if (ret < 0) {
		if (xa_erase(&fluxonkv_pending, id) != up)
			return;	/* a disconnect claimed and ended it */
		up->send_failed = true;
		goto end;
	}
	/* Still pending (not answered or failed meanwhile): start its clock. */
	xa_lock(&fluxonkv_pending);
	if (xa_load(&fluxonkv_pending, id) == up) {
		up->deadline = jiffies + fluxonkv_until(deadline);
		up->sending = false;
	}
	xa_unlock(&fluxonkv_pending);
	fluxonkv_sweep_arm(msecs_to_jiffies(fluxonkv_request_timeout_ms) + 1);
	return;
end:
	fluxonkv_upcall_finish(up, ret);
}

int fluxonkv_pending_show(struct seq_file *m, void *unused)
{
	struct fluxonkv_upcall *up;
	unsigned long id;

	seq_printf(m, "daemon_port\t%u\ndaemon_pid\t%d\n",
		   READ_ONCE(fluxonkv_daemon.portid), fluxonkv_daemon_pid());
	seq_puts(m, "req\tcmd\n");
	xa_lock(&fluxonkv_pending);
	xa_for_each(&fluxonkv_pending, id, up)
		seq_printf(m, "%lu\t%u\n", id, up->cmd);
	xa_unlock(&fluxonkv_pending);
	return 0;
}

/* ---- doit handlers ---- */

static u64 fluxonkv_attr_u64(struct genl_info *info, int type)
{
	return info->attrs[type] ? nla_get_u64(info->attrs[type]) : 0;
}

static u32 fluxonkv_attr_u32(struct genl_info *info, int type)
{
	return info->attrs[type] ? nla_get_u32(info->attrs[type]) : 0;
}

static int fluxonkv_reply_simple(struct genl_info *info, u8 cmd,
				 bool with_segment)
{
	struct sk_buff *skb;
	void *hdr;

	skb = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!skb)
		return -ENOMEM;
	hdr = genlmsg_put_reply(skb, info, &fluxonkv_genl_family, 0, cmd);
	if (!hdr)
		goto err;
	if (nla_put_string(skb, FLUXONKV_A_VERSION, FLUXONKV_VERSION) ||
	    nla_put_u32(skb, FLUXONKV_A_ABI, FLUXONKV_ABI_VERSION) ||
	    nla_put_u32(skb, FLUXONKV_A_HANDLE_LAYOUT,
			FLUXONKV_HANDLE_LAYOUT) ||
	    fluxonkv_put_u64(skb, FLUXONKV_A_SEGMENT_SIZE, fluxonkv_seg.size) ||
	    fluxonkv_put_u64(skb, FLUXONKV_A_SEGMENT_USED,
			     fluxonkv_segment_used()) ||
	    nla_put_u32(skb, FLUXONKV_A_DAEMON_PID, fluxonkv_daemon_pid()))
		goto err;
	if (with_segment &&
	    (fluxonkv_put_u64(skb, FLUXONKV_A_INCARNATION, fluxonkv_incarnation) ||
	     fluxonkv_put_u64(skb, FLUXONKV_A_PUT_ID,
			      atomic64_read(&fluxonkv_put_id_max)) ||
	     fluxonkv_put_u64(skb, FLUXONKV_A_SSD_CAPACITY,
			      fluxonkv_ssd_capacity()) ||
	     nla_put_u32(skb, FLUXONKV_A_FLAGS,
			 READ_ONCE(fluxonkv_daemon.flags)) ||
	     nla_put_u32(skb, FLUXONKV_A_NODE_ID, fluxonkv_replica_node())))
		goto err;
	genlmsg_end(skb, hdr);
	return genlmsg_reply(skb, info);
err:
	nlmsg_free(skb);
	return -EMSGSIZE;
}

static int fluxonkv_nl_get_version(struct sk_buff *skb, struct genl_info *info)
{
	return fluxonkv_reply_simple(info, FLUXONKV_CMD_GET_VERSION, false);
}

static int fluxonkv_nl_register(struct sk_buff *skb, struct genl_info *info)
{
	u32 flags = fluxonkv_attr_u32(info, FLUXONKV_A_FLAGS);
	u32 node_id = fluxonkv_attr_u32(info, FLUXONKV_A_NODE_ID);
	pid_t pid = task_tgid_nr(current);
	bool renumber = false;
	int ret;

	/*
	 * Whoever registers sees every key and decides every miss: more than
	 * the family's CAP_NET_ADMIN (GENL_ADMIN_PERM) is asked for.
	 */
	if (!netlink_capable(skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(info->extack,
			       "registering as the daemon needs CAP_SYS_ADMIN");
		return -EPERM;
	}
	/* A put placed on another node cannot have been published here. */
	if ((flags & FLUXONKV_REGISTER_F_LOCAL_PUTS) &&
	    (flags & FLUXONKV_REGISTER_F_PLACEMENT)) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[FLUXONKV_A_FLAGS],
				    "local puts are for a master of this node alone: not with placement");
		return -EINVAL;
	}
	if ((flags & FLUXONKV_REGISTER_F_LOCAL_PUTS) &&
	    (flags & FLUXONKV_REGISTER_F_ONE_TRIP)) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[FLUXONKV_A_FLAGS],
				    "local puts ask nothing: not with one-trip puts");
		return -EINVAL;
	}
	/*
	 * A previous daemon's teardown must finish before a new one starts;
	 * it may have been queued after our flush: look under the lock.
	 */
retry:
	flush_work(&fluxonkv_daemon.disconnect_work);
	mutex_lock(&fluxonkv_daemon.lock);
	if (fluxonkv_genl_exiting) {
		mutex_unlock(&fluxonkv_daemon.lock);
		NL_SET_ERR_MSG(info->extack, "the module is being unloaded");
		return -ESHUTDOWN;
	}
	if (fluxonkv_daemon.gone_portid) {
		mutex_unlock(&fluxonkv_daemon.lock);
		goto retry;
	}
	if (fluxonkv_daemon.portid &&
	    (fluxonkv_daemon.portid != info->snd_portid ||
	     fluxonkv_daemon.sk != NETLINK_CB(skb).sk)) {
		mutex_unlock(&fluxonkv_daemon.lock);
		NL_SET_ERR_MSG(info->extack, "another daemon is registered");
		return -EBUSY;
	}
	/* Live handles carry the node id: it changes only across a detach. */
	if (fluxonkv_daemon.portid && node_id != fluxonkv_replica_node()) {
		mutex_unlock(&fluxonkv_daemon.lock);
		NL_SET_ERR_MSG(info->extack,
			       "registered under another node id: unregister first");
		return -EBUSY;
	}
	/*
	 * Who numbers puts changes only across a detach too: local puts in
	 * flight draw put_ids the master would hand out again.
	 */
	if (fluxonkv_daemon.portid &&
	    ((flags ^ fluxonkv_daemon.flags) & FLUXONKV_REGISTER_F_PUTS)) {
		mutex_unlock(&fluxonkv_daemon.lock);
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[FLUXONKV_A_FLAGS],
				    "registered with other put flags: unregister first");
		return -EBUSY;
	}
	/*
	 * A lease the previous daemon left its hits on is over: what the
	 * index serves is this daemon's master's to say (the lease is reset
	 * below, and kept replicas wait for their adoption).
	 */
	fluxonkv_lease_set_alone(false);
	/*
	 * What a previous daemon left (F_KEEP): ours if we keep too, under
	 * our node id; else gone now, as if it had not kept them.
	 */
	if (fluxonkv_daemon.kept && !fluxonkv_daemon.portid) {
		fluxonkv_daemon.kept = false;
		if (flags & FLUXONKV_REGISTER_F_KEEP) {
			unsigned long n = fluxonkv_replica_drop_unindexed();

			if (n)
				pr_info("%lu kept replicas were never published: dropped\n",
					n);
			fluxonkv_access_forget();	/* old numbers */
			renumber = true;
			flags |= FLUXONKV_REGISTER_F_ADOPT;
		} else {
			fluxonkv_replica_drop_all();
			fluxonkv_ssd_unroute_all();
		}
	}
	/*
	 * The generation moves before the flags are published: a local put
	 * that sees them (fluxonkv_put()) works in this generation.
	 */
	atomic64_inc_return(&fluxonkv_daemon_gen);
	/*
	 * A daemon registering again (same socket): its own notes still
	 * reach it -- those queued already, and those of puts published
	 * before the bump but noted after it, since notes are matched by the
	 * link generation, which only a detach moves.
	 */
	fluxonkv_put_notes_flush();
	WRITE_ONCE(fluxonkv_daemon.flags, flags);
	/*
	 * No handle of a previous daemon survives its teardown (waited for
	 * above) unless renumbered here, so the node id changes only
	 * between two sets of handles.
	 */
	fluxonkv_replica_set_node(node_id, renumber);
	/* With a lease: no local hit until the daemon's first LEASE. */
	fluxonkv_lease_set(flags & FLUXONKV_REGISTER_F_LEASE ? 0 : U64_MAX);
	if (fluxonkv_daemon.sk != NETLINK_CB(skb).sk) {
		sock_hold(NETLINK_CB(skb).sk);
		fluxonkv_daemon_set_sk(NETLINK_CB(skb).sk);
	}
	WRITE_ONCE(fluxonkv_daemon.portid, info->snd_portid);
	/* Last: a pid seen means a daemon reached (fluxonkv_daemon_pid()). */
	smp_store_release(&fluxonkv_daemon.pid, pid);
	fluxonkv_daemon_active();	/* another socket: try it */
	/* Answered under the lock: see fluxonkv_notify_ssd_state(). */
	ret = fluxonkv_reply_simple(info, FLUXONKV_CMD_DAEMON_REGISTER, true);
	fluxonkv_daemon_event(pid);
	mutex_unlock(&fluxonkv_daemon.lock);

	pr_info("daemon registered: pid %d port %u node %u%s%s%s%s%s%s\n", pid,
		info->snd_portid, node_id,
		flags & FLUXONKV_REGISTER_F_LEASE ? ", leased local hits" : "",
		flags & FLUXONKV_REGISTER_F_LOCAL_ROUTES ? ", local routes" : "",
		flags & FLUXONKV_REGISTER_F_LOCAL_PUTS ? ", local puts" :
		flags & FLUXONKV_REGISTER_F_ONE_TRIP ? ", one-trip puts" : "",
		flags & FLUXONKV_REGISTER_F_PLACEMENT ? ", placement" : "",
		flags & FLUXONKV_REGISTER_F_CLEAN_DROPS ? ", clean drops" : "",
		flags & FLUXONKV_REGISTER_F_ADOPT ? ", adopting kept replicas" :
		flags & FLUXONKV_REGISTER_F_KEEP ? ", keep" : "");
	return ret;
}

/* What UNREGISTER_F_LEASED needs of the daemon's registration. */
#define FLUXONKV_LEASED_NEEDS	(FLUXONKV_REGISTER_F_LEASE |		\
				 FLUXONKV_REGISTER_F_KEEP)

static int fluxonkv_nl_unregister(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *attr = info->attrs[FLUXONKV_A_FLAGS];
	u32 flags = attr ? nla_get_u32(attr) : 0;
	bool alone = flags & FLUXONKV_UNREGISTER_F_LEASED;

	mutex_lock(&fluxonkv_daemon.lock);
	if (fluxonkv_daemon.portid != info->snd_portid ||
	    fluxonkv_daemon.sk != NETLINK_CB(skb).sk) {
		mutex_unlock(&fluxonkv_daemon.lock);
		NL_SET_ERR_MSG(info->extack, "sender is not the registered daemon");
		return -ENOENT;
	}
	/* Hits without a daemon only on a lease, of replicas that stay. */
	if (alone && (fluxonkv_daemon.flags & FLUXONKV_LEASED_NEEDS) !=
		     FLUXONKV_LEASED_NEEDS) {
		mutex_unlock(&fluxonkv_daemon.lock);
		NL_SET_ERR_MSG_ATTR(info->extack, attr,
				    "UNREGISTER_F_LEASED needs a registration with REGISTER_F_LEASE and REGISTER_F_KEEP");
		return -EINVAL;
	}
	fluxonkv_daemon_detach(alone);
	mutex_unlock(&fluxonkv_daemon.lock);
	if (alone)
		pr_info("daemon unregistered: local hits go on without it until its lease ends\n");
	return 0;
}

/*
 * Only the registered daemon's socket may answer upcalls or send commands
 * (not another socket that bound its port while it was being released).
 */
static int fluxonkv_from_daemon(struct sk_buff *skb, struct genl_info *info)
{
	if (!info->snd_portid ||
	    info->snd_portid != READ_ONCE(fluxonkv_daemon.portid) ||
	    NETLINK_CB(skb).sk != READ_ONCE(fluxonkv_daemon.sk)) {
		NL_SET_ERR_MSG(info->extack, "sender is not the registered daemon");
		return -EPERM;
	}
	/* it reads its socket: senders waiting for room try again */
	fluxonkv_daemon_active();
	return 0;
}

/*
 * PUT_PLACE's answer: HANDLE and FD, a connected stream socket.  Takes a
 * reference for the waiting put (it drops it); 0 or -errno with the
 * reason in extack.
 */
static int fluxonkv_answer_sock(struct genl_info *info,
				struct fluxonkv_upcall *up)
{
	struct socket *sock;
	int err;

	if (!up->handle || !info->attrs[FLUXONKV_A_FD]) {
		NL_SET_ERR_MSG(info->extack, "PUT_PLACE answer needs HANDLE and FD");
		return -EINVAL;
	}
	sock = sockfd_lookup(nla_get_u32(info->attrs[FLUXONKV_A_FD]), &err);
	if (!sock) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[FLUXONKV_A_FD],
				    "not a socket of the daemon");
		return err;
	}
	if (sock->type != SOCK_STREAM || sock->state != SS_CONNECTED) {
		sockfd_put(sock);
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[FLUXONKV_A_FD],
				    "not a connected stream socket");
		return -EINVAL;
	}
	up->sock = sock;
	return 0;
}

/*
 * The answers to upcalls, one handler per command.  Each claims its waiter
 * (fluxonkv_answer_claim()), does what that answer does here and completes
 * the waiter.  PUT_DONE, PUT and a promoting GET_DONE publish here, DELETE
 * unindexes here and GET_START pins its memory source here, so all of them
 * are ordered with the daemon's DROP_REPLICA commands (the waiter may run
 * much later).
 */

/*
 * Check the answer and claim the waiter of its REQ_ID: 0 with *@upp (out
 * of fluxonkv_pending, ours to finish with fluxonkv_upcall_finish()) and
 * *@status, its fields copied from the answer; or -errno, nothing claimed.
 */
static int fluxonkv_answer_claim(struct sk_buff *skb, struct genl_info *info,
				 struct fluxonkv_upcall **upp, s32 *status)
{
	u8 cmd = info->genlhdr->cmd;
	struct fluxonkv_upcall *up;
	u64 id;
	int ret;

	ret = fluxonkv_from_daemon(skb, info);
	if (ret)
		return ret;
	if (GENL_REQ_ATTR_CHECK(info, FLUXONKV_A_REQ_ID) ||
	    GENL_REQ_ATTR_CHECK(info, FLUXONKV_A_STATUS))
		return -EINVAL;
	*status = nla_get_s32(info->attrs[FLUXONKV_A_STATUS]);
	if (*status > 0 || *status <= -ERESTARTSYS) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[FLUXONKV_A_STATUS],
				    "status must be 0 or a negative errno below 512");
		return -EINVAL;
	}
	id = nla_get_u64(info->attrs[FLUXONKV_A_REQ_ID]);
	up = NULL;
	if (id && id <= U32_MAX) {
		xa_lock(&fluxonkv_pending);
		up = xa_load(&fluxonkv_pending, id);
		if (up && up->cmd == cmd)
			__xa_erase(&fluxonkv_pending, id);
		else
			up = NULL;
		xa_unlock(&fluxonkv_pending);
	}
	if (!up) {
		fluxonkv_stat_inc(upcall_errors);
		NL_SET_ERR_MSG(info->extack, "no such outstanding request (timed out?)");
		return -ENOENT;
	}

	up->status = *status;
	up->put_id = fluxonkv_attr_u64(info, FLUXONKV_A_PUT_ID);
	up->flags = fluxonkv_attr_u32(info, FLUXONKV_A_FLAGS);
	up->handle = fluxonkv_attr_u64(info, FLUXONKV_A_HANDLE);
	up->len = fluxonkv_attr_u64(info, FLUXONKV_A_LEN);
	up->source = fluxonkv_attr_u32(info, FLUXONKV_A_SOURCE);
	*upp = up;
	return 0;
}

/*
 * An answer that does nothing here but complete its waiter: PUT_START,
 * GET_REVOKE, NEED_ROOM, FETCH and LOOKUP (their waiters read the fields).
 */
static int fluxonkv_nl_plain_answer(struct sk_buff *skb, struct genl_info *info)
{
	struct fluxonkv_upcall *up;
	s32 status;
	int ret;

	ret = fluxonkv_answer_claim(skb, info, &up, &status);
	if (ret)
		return ret;
	fluxonkv_upcall_finish(up, status);
	return 0;
}

/* A published put's replica enters the index; older SSD copies go. */
static void fluxonkv_answer_publish_put(struct fluxonkv_upcall *up)
{
	fluxonkv_replica_publish(up->replica);
	/* The master dropped the older versions' SSD copies. */
	fluxonkv_ssd_unroute(up->replica->key, up->replica->key_len,
			     up->replica->put_id - 1);
}

/* PUT_DONE: the master published the two-trip put (or did not). */
static int fluxonkv_nl_put_done_answer(struct sk_buff *skb,
				       struct genl_info *info)
{
	struct fluxonkv_upcall *up;
	s32 status;
	int ret;

	ret = fluxonkv_answer_claim(skb, info, &up, &status);
	if (ret)
		return ret;
	if (!status && up->replica && (up->flags & FLUXONKV_PUT_F_PUBLISHED))
		fluxonkv_answer_publish_put(up);
	fluxonkv_upcall_finish(up, status);
	return 0;
}

/* PUT: the master numbered and published the one-trip put (or did not). */
static int fluxonkv_nl_put_answer(struct sk_buff *skb, struct genl_info *info)
{
	struct fluxonkv_upcall *up;
	s32 status;
	int ret;

	ret = fluxonkv_answer_claim(skb, info, &up, &status);
	if (ret)
		return ret;
	/* A published one-trip put is numbered by its answer. */
	if (!status && (up->flags & FLUXONKV_PUT_F_PUBLISHED) && !up->put_id) {
		NL_SET_ERR_MSG(info->extack, "a published PUT needs PUT_ID");
		status = -EPROTO;
		ret = status;	/* told to the daemon too */
	}
	if (!status && up->replica && (up->flags & FLUXONKV_PUT_F_PUBLISHED)) {
		fluxonkv_replica_number(up->replica, up->put_id);
		fluxonkv_answer_publish_put(up);
	}
	fluxonkv_upcall_finish(up, status);
	return ret;
}

/* GET_START: a memory source here is pinned now, before any drop. */
static int fluxonkv_nl_get_start_answer(struct sk_buff *skb,
					struct genl_info *info)
{
	struct fluxonkv_upcall *up;
	s32 status;
	int ret;

	ret = fluxonkv_answer_claim(skb, info, &up, &status);
	if (ret)
		return ret;
	if (!status && up->key && up->source == FLUXONKV_SOURCE_MEMORY)
		up->alloc = fluxonkv_handle_lookup(up->handle, up->key,
						   up->key_len, up->put_id);
	fluxonkv_upcall_finish(up, status);
	return 0;
}

/* GET_DONE: a refill or FETCH target the master promoted is published. */
static int fluxonkv_nl_get_done_answer(struct sk_buff *skb,
				       struct genl_info *info)
{
	struct fluxonkv_upcall *up;
	s32 status;
	int ret;

	ret = fluxonkv_answer_claim(skb, info, &up, &status);
	if (ret)
		return ret;
	if (!status && up->replica && (up->flags & FLUXONKV_GET_F_PROMOTED))
		fluxonkv_replica_publish(up->replica);
	fluxonkv_upcall_finish(up, status);
	return 0;
}

/* DELETE: the version deleted leaves the index and the SSD routes. */
static int fluxonkv_nl_delete_answer(struct sk_buff *skb,
				     struct genl_info *info)
{
	struct fluxonkv_upcall *up;
	s32 status;
	int ret;

	ret = fluxonkv_answer_claim(skb, info, &up, &status);
	if (ret)
		return ret;
	if (!status && up->key) {
		fluxonkv_index_forget(up->key, up->key_len, up->put_id);
		fluxonkv_ssd_unroute(up->key, up->key_len, up->put_id);
	}
	fluxonkv_upcall_finish(up, status);
	return 0;
}

/* SSD_COMMIT: an SSD copy the master published is routed here. */
static int fluxonkv_nl_ssd_commit_answer(struct sk_buff *skb,
					 struct genl_info *info)
{
	struct fluxonkv_upcall *up;
	s32 status;
	int ret;

	ret = fluxonkv_answer_claim(skb, info, &up, &status);
	if (ret)
		return ret;
	if (!status && up->ssd_entry && (up->flags & FLUXONKV_SSD_F_PUBLISHED))
		fluxonkv_ssd_route(up->ssd_entry);
	fluxonkv_upcall_finish(up, status);
	return 0;
}

/* PUT_PLACE: the socket to the node the master placed the put on. */
static int fluxonkv_nl_put_place_answer(struct sk_buff *skb,
					struct genl_info *info)
{
	struct fluxonkv_upcall *up;
	s32 status;
	int ret;

	ret = fluxonkv_answer_claim(skb, info, &up, &status);
	if (ret)
		return ret;
	if (!status) {
		/* We run in the daemon's sendmsg: FD is in its file table. */
		ret = fluxonkv_answer_sock(info, up);
		if (ret) {
			fluxonkv_upcall_finish(up, ret);
			return ret;
		}
	}
	fluxonkv_upcall_finish(up, status);
	return 0;
}

/*
 * DROP_REPLICA {SOURCE = SSD, KEY, PUT_ID}: another node overwrote or
 * deleted KEY, and the master dropped its route to our SSD copies up to
 * PUT_ID.  Unrouted, a copy is neither served nor reported to a later
 * master (fluxonkv_ssd_dump() lists routed entries only), so a restarted
 * master cannot adopt a deleted version back from us.  Idempotent.
 */
static int fluxonkv_nl_drop_ssd(struct genl_info *info)
{
	struct nlattr *key = info->attrs[FLUXONKV_A_KEY];

	if (GENL_REQ_ATTR_CHECK(info, FLUXONKV_A_KEY) ||
	    GENL_REQ_ATTR_CHECK(info, FLUXONKV_A_PUT_ID))
		return -EINVAL;
	if (!nla_len(key)) {
		NL_SET_ERR_MSG_ATTR(info->extack, key, "empty key");
		return -EINVAL;
	}
	fluxonkv_ssd_unroute(nla_data(key), nla_len(key),
			     nla_get_u64(info->attrs[FLUXONKV_A_PUT_ID]));
	atomic64_inc(&fluxonkv_ssd_stats.unrouted);
	return 0;
}

static int fluxonkv_nl_drop_replica(struct sk_buff *skb, struct genl_info *info)
{
	int ret;

	ret = fluxonkv_from_daemon(skb, info);
	if (ret)
		return ret;
	if (fluxonkv_attr_u32(info, FLUXONKV_A_SOURCE) == FLUXONKV_SOURCE_SSD &&
	    !info->attrs[FLUXONKV_A_HANDLE])
		return fluxonkv_nl_drop_ssd(info);
	if (GENL_REQ_ATTR_CHECK(info, FLUXONKV_A_HANDLE))
		return -EINVAL;
	ret = fluxonkv_replica_drop(nla_get_u64(info->attrs[FLUXONKV_A_HANDLE]));
	if (ret) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[FLUXONKV_A_HANDLE],
				    "unknown replica handle");
		return ret;
	}
	fluxonkv_stat_inc(replica_drops);
	if (fluxonkv_attr_u32(info, FLUXONKV_A_FLAGS) & FLUXONKV_DROP_F_EVICTED)
		fluxonkv_stat_inc(evictions);
	return 0;
}

/* PERSIST {HANDLE, PUT_ID}: the daemon wants that replica on the SSD. */
static int fluxonkv_nl_persist(struct sk_buff *skb, struct genl_info *info)
{
	int ret;

	ret = fluxonkv_from_daemon(skb, info);
	if (ret)
		return ret;
	if (GENL_REQ_ATTR_CHECK(info, FLUXONKV_A_HANDLE) ||
	    GENL_REQ_ATTR_CHECK(info, FLUXONKV_A_PUT_ID))
		return -EINVAL;
	ret = fluxonkv_replica_persist(nla_get_u64(info->attrs[FLUXONKV_A_HANDLE]),
				       nla_get_u64(info->attrs[FLUXONKV_A_PUT_ID]));
	if (ret == -ENOENT)
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[FLUXONKV_A_HANDLE],
				    "no such replica of that version");
	else if (ret == -ENODEV)
		NL_SET_ERR_MSG(info->extack, "no SSD tier attached");
	return ret;
}

static int fluxonkv_nl_adopt_done(struct sk_buff *skb, struct genl_info *info)
{
	unsigned long n;
	int ret;

	ret = fluxonkv_from_daemon(skb, info);
	if (ret)
		return ret;
	n = fluxonkv_replica_adopt_done();
	if (n)
		pr_info("%lu kept replicas adopted: local hits again\n", n);
	return 0;
}

/* The longest lease a LEASE may grant. */
#define FLUXONKV_LEASE_MAX_NS	(3600ULL * NSEC_PER_SEC)

static int fluxonkv_nl_lease(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *attr = info->attrs[FLUXONKV_A_DEADLINE];
	u64 until;
	int ret;

	ret = fluxonkv_from_daemon(skb, info);
	if (ret)
		return ret;
	if (!(READ_ONCE(fluxonkv_daemon.flags) & FLUXONKV_REGISTER_F_LEASE)) {
		NL_SET_ERR_MSG(info->extack,
			       "registered without FLUXONKV_REGISTER_F_LEASE");
		return -EINVAL;
	}
	if (!attr) {
		NL_SET_ERR_MSG(info->extack, "LEASE needs DEADLINE");
		return -EINVAL;
	}
	until = nla_get_u64(attr);
	if (until > ktime_get_ns() + FLUXONKV_LEASE_MAX_NS) {
		NL_SET_ERR_MSG_ATTR(info->extack, attr,
				    "a lease ends at most an hour ahead");
		return -ERANGE;
	}
	/* Under the daemon lock: not across a re-registration's reset. */
	mutex_lock(&fluxonkv_daemon.lock);
	if (READ_ONCE(fluxonkv_daemon.portid) == info->snd_portid)
		fluxonkv_lease_set(until);
	mutex_unlock(&fluxonkv_daemon.lock);
	return 0;
}

/*
 * DUMP: every replica of the handle table, then every routed SSD entry;
 * cb->args[0] the phase, [1] the next handle slot, [2]/[3] the next SSD
 * shard number and ring position in it, [4] that shard's serial.
 */
/*
 * DUMP returns every key this node holds: the rule of registering as the
 * daemon (CAP_SYS_ADMIN, fluxonkv_nl_register()) on top of the family's
 * GENL_ADMIN_PERM (CAP_NET_ADMIN), checked before the first record.
 */
static int fluxonkv_nl_dump_start(struct netlink_callback *cb)
{
	if (!netlink_capable(cb->skb, CAP_SYS_ADMIN)) {
		NL_SET_ERR_MSG(cb->extack, "DUMP needs CAP_SYS_ADMIN");
		return -EPERM;
	}
	return 0;
}

static int fluxonkv_nl_dump(struct sk_buff *skb, struct netlink_callback *cb)
{
	int ret;

	if (!cb->args[0]) {
		ret = fluxonkv_replica_dump(skb, cb, &cb->args[1]);
		if (ret <= 0)
			return ret < 0 ? ret : skb->len;
		cb->args[0] = 1;
	}
	return fluxonkv_ssd_dump(skb, cb, &cb->args[2], &cb->args[3],
				 &cb->args[4]) < 0 ?
	       -EMSGSIZE : skb->len;
}

/**
 * fluxonkv_dump_record() - one DUMP message (NLM_F_MULTI) for @rec.
 * @skb: the dump's buffer.
 * @cb: the dump.
 * @rec: what to say; @rec->handle 0 is left out, FLAGS only if has_flags.
 *
 * Return: 0, or -EMSGSIZE when @skb is full (nothing of the record left).
 */
int fluxonkv_dump_record(struct sk_buff *skb, struct netlink_callback *cb,
			 const struct fluxonkv_dump_rec *rec)
{
	void *hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, &fluxonkv_genl_family,
				NLM_F_MULTI, FLUXONKV_CMD_DUMP);

	if (!hdr)
		return -EMSGSIZE;
	if ((rec->handle && fluxonkv_put_u64(skb, FLUXONKV_A_HANDLE,
					     rec->handle)) ||
	    nla_put(skb, FLUXONKV_A_KEY, rec->key_len, rec->key) ||
	    fluxonkv_put_u64(skb, FLUXONKV_A_PUT_ID, rec->put_id) ||
	    fluxonkv_put_u64(skb, FLUXONKV_A_LEN, rec->len) ||
	    nla_put_u32(skb, FLUXONKV_A_SOURCE, rec->source) ||
	    (rec->has_flags &&
	     nla_put_u32(skb, FLUXONKV_A_FLAGS, rec->flags))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/* ---- policies: one per command ---- */

static const struct nla_policy fluxonkv_empty_policy[FLUXONKV_A_MAX + 1] = {
};

static const struct nla_policy fluxonkv_lease_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_DEADLINE] = { .type = NLA_U64 },
};

static const struct nla_policy fluxonkv_unregister_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_FLAGS] = NLA_POLICY_MASK(NLA_U32,
					     FLUXONKV_UNREGISTER_F_LEASED),
};

static const struct nla_policy fluxonkv_register_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_FLAGS] = NLA_POLICY_MASK(NLA_U32,
					     FLUXONKV_REGISTER_F_LOCAL_ROUTES |
					     FLUXONKV_REGISTER_F_PLACEMENT |
					     FLUXONKV_REGISTER_F_KEEP |
					     FLUXONKV_REGISTER_F_PUTS |
					     FLUXONKV_REGISTER_F_LEASE |
					     FLUXONKV_REGISTER_F_CLEAN_DROPS),
	[FLUXONKV_A_NODE_ID] = NLA_POLICY_MAX(NLA_U32, FLUXONKV_NODE_MAX),
};

/* Common to every answer: request id and status. */
#define FLUXONKV_ANSWER_POLICY						\
	[FLUXONKV_A_REQ_ID] = { .type = NLA_U64 },			\
	[FLUXONKV_A_STATUS] = { .type = NLA_S32 }

static const struct nla_policy fluxonkv_put_start_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
	[FLUXONKV_A_PUT_ID] = NLA_POLICY_MIN(NLA_U64, 1),
	[FLUXONKV_A_FLAGS] = NLA_POLICY_MASK(NLA_U32, FLUXONKV_PUT_F_PERSIST),
};

static const struct nla_policy fluxonkv_put_done_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
	[FLUXONKV_A_FLAGS] = NLA_POLICY_MASK(NLA_U32, FLUXONKV_PUT_F_PUBLISHED),
};

static const struct nla_policy fluxonkv_put_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
	[FLUXONKV_A_PUT_ID] = NLA_POLICY_MIN(NLA_U64, 1),
	[FLUXONKV_A_FLAGS] = NLA_POLICY_MASK(NLA_U32, FLUXONKV_PUT_F_PUBLISHED |
					     FLUXONKV_PUT_F_PERSIST),
};

/* Not const: 6.1's NLA_POLICY_FULL_RANGE takes a plain pointer. */
static struct netlink_range_validation fluxonkv_len_range = {
	.min = 1,
	.max = FLUXONKV_VALUE_MAX,
};

static const struct nla_policy fluxonkv_get_start_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
	[FLUXONKV_A_SOURCE] = NLA_POLICY_MAX(NLA_U32,
					     FLUXONKV_SOURCE_REMOTE_SSD),
	[FLUXONKV_A_HANDLE] = NLA_POLICY_MIN(NLA_U64, 1),
	[FLUXONKV_A_PUT_ID] = NLA_POLICY_MIN(NLA_U64, 1),
	[FLUXONKV_A_LEN] = NLA_POLICY_FULL_RANGE(NLA_U64, &fluxonkv_len_range),
};

static const struct nla_policy fluxonkv_get_done_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
	[FLUXONKV_A_FLAGS] = NLA_POLICY_MASK(NLA_U32, FLUXONKV_GET_F_PROMOTED),
};

static const struct nla_policy fluxonkv_ssd_commit_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
	[FLUXONKV_A_FLAGS] = NLA_POLICY_MASK(NLA_U32, FLUXONKV_SSD_F_PUBLISHED),
};

static const struct nla_policy fluxonkv_status_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
};

static const struct nla_policy fluxonkv_delete_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
	[FLUXONKV_A_PUT_ID] = { .type = NLA_U64 },
};

static const struct nla_policy fluxonkv_put_place_policy[FLUXONKV_A_MAX + 1] = {
	FLUXONKV_ANSWER_POLICY,
	[FLUXONKV_A_HANDLE] = NLA_POLICY_MIN(NLA_U64, 1),
	[FLUXONKV_A_FD] = { .type = NLA_U32 },
};

static const struct nla_policy fluxonkv_persist_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_HANDLE] = NLA_POLICY_MIN(NLA_U64, 1),
	[FLUXONKV_A_PUT_ID] = NLA_POLICY_MIN(NLA_U64, 1),
};

static const struct nla_policy fluxonkv_drop_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_HANDLE] = NLA_POLICY_MIN(NLA_U64, 1),
	[FLUXONKV_A_FLAGS] = NLA_POLICY_MASK(NLA_U32, FLUXONKV_DROP_F_EVICTED),
	/* an SSD copy's route: SOURCE = SSD, KEY, PUT_ID */
	[FLUXONKV_A_SOURCE] = NLA_POLICY_RANGE(NLA_U32, FLUXONKV_SOURCE_MEMORY,
					       FLUXONKV_SOURCE_SSD),
	[FLUXONKV_A_KEY] = { .type = NLA_BINARY, .len = FLUXONKV_KEY_MAX },
	[FLUXONKV_A_PUT_ID] = NLA_POLICY_MIN(NLA_U64, 1),
};

#define FLUXONKV_OP(_cmd, _doit, _policy, _flags)			\
	{								\
		.cmd = _cmd,						\
		.doit = _doit,						\
		.policy = _policy,					\
		.maxattr = FLUXONKV_A_MAX,				\
		.flags = _flags,					\
	}

static const struct genl_ops fluxonkv_genl_ops[] = {
	FLUXONKV_OP(FLUXONKV_CMD_GET_VERSION, fluxonkv_nl_get_version,
		    fluxonkv_empty_policy, 0),
	FLUXONKV_OP(FLUXONKV_CMD_DAEMON_REGISTER, fluxonkv_nl_register,
		    fluxonkv_register_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_DAEMON_UNREGISTER, fluxonkv_nl_unregister,
		    fluxonkv_unregister_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_PUT_START, fluxonkv_nl_plain_answer,
		    fluxonkv_put_start_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_PUT_DONE, fluxonkv_nl_put_done_answer,
		    fluxonkv_put_done_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_PUT, fluxonkv_nl_put_answer,
		    fluxonkv_put_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_GET_START, fluxonkv_nl_get_start_answer,
		    fluxonkv_get_start_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_GET_DONE, fluxonkv_nl_get_done_answer,
		    fluxonkv_get_done_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_GET_REVOKE, fluxonkv_nl_plain_answer,
		    fluxonkv_status_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_DELETE, fluxonkv_nl_delete_answer,
		    fluxonkv_delete_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_NEED_ROOM, fluxonkv_nl_plain_answer,
		    fluxonkv_status_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_DROP_REPLICA, fluxonkv_nl_drop_replica,
		    fluxonkv_drop_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_SSD_COMMIT, fluxonkv_nl_ssd_commit_answer,
		    fluxonkv_ssd_commit_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_FETCH, fluxonkv_nl_plain_answer,
		    fluxonkv_status_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_PUT_PLACE, fluxonkv_nl_put_place_answer,
		    fluxonkv_put_place_policy, GENL_ADMIN_PERM),
	/* a route without HANDLE: the same attributes as GET_START's */
	FLUXONKV_OP(FLUXONKV_CMD_LOOKUP, fluxonkv_nl_plain_answer,
		    fluxonkv_get_start_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_PERSIST, fluxonkv_nl_persist,
		    fluxonkv_persist_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_ADOPT_DONE, fluxonkv_nl_adopt_done,
		    fluxonkv_empty_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_LEASE, fluxonkv_nl_lease,
		    fluxonkv_lease_policy, GENL_ADMIN_PERM),
	FLUXONKV_OP(FLUXONKV_CMD_TENANTS, fluxonkv_nl_tenants,
		    fluxonkv_tenants_policy, GENL_ADMIN_PERM),
	{
		.cmd = FLUXONKV_CMD_DUMP,
		.start = fluxonkv_nl_dump_start,
		.dumpit = fluxonkv_nl_dump,
		.policy = fluxonkv_empty_policy,
		.maxattr = FLUXONKV_A_MAX,
		.flags = GENL_ADMIN_PERM,
	},
};

static const struct genl_multicast_group fluxonkv_genl_mcgrps[] = {
	{ .name = FLUXONKV_GENL_MCGRP_EVENTS },
};

static struct genl_family fluxonkv_genl_family __ro_after_init = {
	.name = FLUXONKV_GENL_NAME,
	.version = FLUXONKV_GENL_VERSION,
	.maxattr = FLUXONKV_A_MAX,
	.netnsok = false,
	/*
	 * Handlers lock their own state; messages from one socket are still
	 * handled in order (synchronously in its sendmsg), and a register
	 * that waits for a teardown does not stall all of generic netlink.
	 */
	.parallel_ops = true,
	.module = THIS_MODULE,
	.ops = fluxonkv_genl_ops,
	.n_ops = ARRAY_SIZE(fluxonkv_genl_ops),
	.mcgrps = fluxonkv_genl_mcgrps,
	.n_mcgrps = ARRAY_SIZE(fluxonkv_genl_mcgrps),
};

int fluxonkv_genl_init(void)
{
	int ret;

	INIT_WORK(&fluxonkv_daemon.disconnect_work, fluxonkv_disconnect_work);
	ret = netlink_register_notifier(&fluxonkv_netlink_nb);
	if (ret)
		return ret;
	ret = genl_register_family(&fluxonkv_genl_family);
	if (ret)
		goto err_notifier;
	return 0;

err_notifier:
	netlink_unregister_notifier(&fluxonkv_netlink_nb);
	return ret;
}

void fluxonkv_genl_exit(void)
{
	/* No registration from now on (one may be running: see below). */
	mutex_lock(&fluxonkv_daemon.lock);
	fluxonkv_genl_exiting = true;
	mutex_unlock(&fluxonkv_daemon.lock);
	/*
	 * Waits for every handler in flight (genl's cb_lock), so the daemon
	 * seen below is the last one; its socket's close after this finds
	 * no daemon and queues nothing.
	 */
	genl_unregister_family(&fluxonkv_genl_family);
	mutex_lock(&fluxonkv_daemon.lock);
	if (fluxonkv_daemon.portid)
		fluxonkv_daemon_detach(false);
	fluxonkv_lease_set_alone(false);	/* nobody serves on unloading */
	mutex_unlock(&fluxonkv_daemon.lock);
	flush_work(&fluxonkv_daemon.disconnect_work);
	spin_lock(&fluxonkv_sweep_lock);
	fluxonkv_sweep_off = true;	/* not armed again (see above) */
	spin_unlock(&fluxonkv_sweep_lock);
	cancel_delayed_work_sync(&fluxonkv_async_sweep_work);
	netlink_unregister_notifier(&fluxonkv_netlink_nb);
	/*
	 * The pending xarray is static and every entry is erased by its
	 * owner (an SSD worker may still be finishing an upcall that fails
	 * with -ENOTCONN): nothing to destroy here.
	 */
}
