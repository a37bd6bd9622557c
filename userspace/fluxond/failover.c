// SPDX-License-Identifier: GPL-2.0
/*
 * failover.c - the election thread and role changes (see failover.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <netlink/attr.h>
#include <sys/syscall.h>

#include "../common/cluster_msg.h"
#include "ctlsock.h"
#include "election.h"
#include "etcd.h"
#include "failover.h"
#include "log.h"
#include "term.h"

/* etcd's first answer at start: a cold connection, a loaded host. */
#define FKV_FAILOVER_FIRST_TIMEOUT_MS	5000
/* Candidates shown (fluxonctl cluster), re-read every this many rounds. */
#define FKV_FAILOVER_CANDS		16
#define FKV_FAILOVER_CANDS_EVERY	4

struct fkv_failover {
	struct fkv_cluster_config *cc;
	struct fkv_etcd *etcd;
	struct fkv_election *el;
	pthread_mutex_t lock;		/* etcd and el */
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	/*
	 * The watch on the leader key: its own etcd handle and thread; each
	 * change (and each re-established watch) pokes the election thread,
	 * which then runs its round at once instead of after its period.
	 */
	struct fkv_etcd *wetcd;
	struct fkv_etcd_tls tls;	/* the config's files, when set */
	pthread_t wthread;
	bool wthread_started;
	atomic_bool poke;
	atomic_bool watching;		/* a watch is established */
	_Atomic uint64_t watch_events;
	_Atomic(const char *) pending;	/* the reason to re-exec */
	unsigned int period_ms;
	char prefix[FKV_ELECT_KEY_BUF];
	char addr[FKV_ELECT_ADDR_BUF];
	struct fkv_leader leader;	/* under lock */
	uint64_t term;			/* master: ours */
	atomic_bool healthy;		/* the last etcd call answered */
	_Atomic uint64_t hold;		/* leader: held until (mono ms) */
	uint64_t lost_at;		/* leader seen gone (follower) */
	uint64_t failover_ms;		/* last: leader gone -> we won */
	struct {			/* under lock: etcd's candidates */
		char name[FKV_ELECT_NAME_BUF];
		char addr[FKV_ELECT_ADDR_BUF];
	} cands[FKV_FAILOVER_CANDS];
	unsigned int ncands;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* One election round under the lock; what the thread reacts to. */
static int fo_step(struct fkv_failover *fo, enum fkv_elect_event *ev,
		   struct fkv_leader *l)
{
	int err;

	pthread_mutex_lock(&fo->lock);
	err = fkv_election_step(fo->el, mono_ms(), ev, l);
	fo->leader = *l;
	atomic_store(&fo->hold, fkv_election_held_until(fo->el));
	pthread_mutex_unlock(&fo->lock);
	atomic_store(&fo->healthy, err == 0);
	return err;
}

static int fo_cand(void *arg, const char *name, const char *addr)
{
	struct fkv_failover *fo = arg;

	if (fo->ncands == FKV_FAILOVER_CANDS)
		return 0;		/* more than we show */
	snprintf(fo->cands[fo->ncands].name, sizeof(fo->cands[0].name), "%s",
		 name);
	snprintf(fo->cands[fo->ncands].addr, sizeof(fo->cands[0].addr), "%s",
		 addr);
	fo->ncands++;
	return 0;
}

/* etcd's list of candidates, for fluxonctl cluster (kept on an error). */
static void fo_read_cands(struct fkv_failover *fo)
{
	unsigned int n;

	pthread_mutex_lock(&fo->lock);
	n = fo->ncands;
	fo->ncands = 0;
	if (fkv_election_candidates(fo->el, fo_cand, fo))
		fo->ncands = n;
	pthread_mutex_unlock(&fo->lock);
}

static void fo_request(struct fkv_failover *fo, const char *why)
{
	const char *none = NULL;

	if (atomic_compare_exchange_strong(&fo->pending, &none, why))
		fkv_warn("etcd election: %s: re-executing fluxond", why);
}

static void *fo_thread(void *arg)
{
	struct fkv_failover *fo = arg;
	bool master = fo->cc->role == FKV_ROLE_MASTER;
	uint64_t last_err_log = 0;
	unsigned int round = 0;

	while (!atomic_load(&fo->stop) && !atomic_load(&fo->pending)) {
		enum fkv_elect_event ev;
		struct fkv_leader l;
		int err = fo_step(fo, &ev, &l);
		uint64_t now = mono_ms();

		if (!err && !(round++ % FKV_FAILOVER_CANDS_EVERY))
			fo_read_cands(fo);
		if (err && now - last_err_log >= 5000) {
			pthread_mutex_lock(&fo->lock);
			fkv_warn("etcd election: %s", fkv_etcd_error(fo->etcd));
			pthread_mutex_unlock(&fo->lock);
			last_err_log = now;
		}
		if (master) {
			if (ev == FKV_ELECT_LOST)
				fo_request(fo, "lost the etcd lease: stepping down from master");
		} else if (ev == FKV_ELECT_WON) {
			fo->failover_ms = fo->lost_at ? now - fo->lost_at : 0;
			fo_request(fo, "won the election: becoming the master");
		} else if (ev == FKV_ELECT_CHANGED) {
			if (!l.present) {
				fo->lost_at = now;
				fkv_warn("etcd election: no leader (the last was at %s)",
					 fo->addr);
			} else if (strcmp(l.addr, fo->addr)) {
				fo_request(fo, "a new leader at another address");
			} else {
				fkv_info("etcd election: leader %s at %s (term key rev %" PRId64 ")",
					 l.name, l.addr, l.rev);
			}
		}
		/* the next round after the period, or at the watch's poke */
		for (unsigned int t = 0; t < fo->period_ms &&
		     !atomic_load(&fo->stop) &&
		     !atomic_exchange(&fo->poke, false); t += 20)
			sleep_ms(20);
	}
	return NULL;
}

/* The watch saw the leader key change (@ev), or (NULL) it is in place. */
static int fo_watch_event(void *arg, const struct fkv_etcd_event *ev)
{
	struct fkv_failover *fo = arg;

	if (ev)
		atomic_fetch_add(&fo->watch_events, 1);
	else
		atomic_store(&fo->watching, true);
	/* established: a change may have come before it, look too */
	atomic_store(&fo->poke, true);
	return 0;
}

/*
 * Watch the leader key for as long as the election runs: nodes follow a
 * new leader, and a standby campaigns, as soon as the key changes -- the
 * polling every period stays as the fallback (a watch that broke is set
 * up again after a second).
 */
static void *fo_watch_thread(void *arg)
{
	struct fkv_failover *fo = arg;
	char key[FKV_ELECT_KEY_BUF + 8];
	uint64_t logged = 0;

	snprintf(key, sizeof(key), "%s/leader", fo->prefix);
	while (!atomic_load(&fo->stop) && !atomic_load(&fo->pending)) {
		int err = fkv_etcd_watch(fo->wetcd, key, fo_watch_event, fo,
					 &fo->stop);
		uint64_t now = mono_ms();

		atomic_store(&fo->watching, false);
		if (atomic_load(&fo->stop))
			break;
		if (err && now - logged >= 5000) {
			fkv_info("etcd election: the watch on %s ended (%s): "
				 "reading it every %u ms meanwhile", key,
				 fkv_etcd_error(fo->wetcd), fo->period_ms);
			logged = now;
		}
		for (unsigned int t = 0; t < 1000 && !atomic_load(&fo->stop);
		     t += 50)
			sleep_ms(50);
	}
	return NULL;
}

static int fo_set_master(struct fkv_failover *fo, const char *addr)
{
	char host[FKV_HOST_BUF], why[256];
	uint16_t port;

	if (fkv_parse_hostport(addr, host, sizeof(host), &port, why,
			       sizeof(why))) {
		fkv_err("etcd election: the leader's address \"%s\": %s", addr,
			why);
		return -EPROTO;
	}
	snprintf(fo->cc->master.host, sizeof(fo->cc->master.host), "%s", host);
	fo->cc->master.port = port;
	snprintf(fo->addr, sizeof(fo->addr), "%s", addr);
	return 0;
}

static bool fo_stop_pending(const sigset_t *stop_sigs)
{
	sigset_t p;

	if (!stop_sigs || sigpending(&p))
		return false;
	for (int s = 1; s < NSIG; s++)
		if (sigismember(stop_sigs, s) == 1 && sigismember(&p, s) == 1)
			return true;
	return false;
}

/* A round's pause while fluxond starts: -EINTR once a stop is pending. */
static int fo_pause(struct fkv_failover *fo, const sigset_t *stop_sigs)
{
	if (fo_stop_pending(stop_sigs))
		return -EINTR;
	sleep_ms(fo->period_ms);
	return 0;
}

/*
 * Every fluxond of a cluster runs the same cluster.lease_ms: a new master
 * waits out the leases an earlier one granted by its own (cluster.md,
 * "What is served while no leader exists"), so a shorter one on any
 * candidate would answer writes while a node still serves on a longer
 * lease.  The first fluxond writes it to <prefix>/lease_ms; any other
 * value refuses to start.
 */
static int fo_lease_agreed(struct fkv_failover *fo)
{
	struct fkv_etcd_kv cur = { 0 };
	char key[FKV_ELECT_KEY_BUF + 16], val[16];
	int n, err;

	snprintf(key, sizeof(key), "%s/lease_ms", fo->prefix);
	n = snprintf(val, sizeof(val), "%u", fo->cc->lease_ms);
	err = fkv_etcd_create(fo->etcd, key, val, (size_t)n, 0, NULL, &cur);
	if (err < 0) {
		fkv_err("cluster.etcd: cannot read %s: %s", key,
			fkv_etcd_error(fo->etcd));
		return err;
	}
	if (err == 0 && (cur.value_len != (size_t)n ||
			 memcmp(cur.value, val, (size_t)n))) {
		fkv_err("cluster.lease_ms: %u, but this cluster's fluxonds run %.*s (%s): every fluxond of a cluster must use the same lease (set heartbeat_ms, dead_after_ms or lease_ms alike)",
			fo->cc->lease_ms, (int)cur.value_len, cur.value, key);
		fkv_etcd_kv_free(&cur);
		return -EINVAL;
	}
	fkv_etcd_kv_free(&cur);
	return 0;
}

/* Resume a leadership carried across our own exec. */
static bool fo_resume(struct fkv_failover *fo)
{
	const char *env = getenv(FKV_FAILOVER_RESUME_ENV);
	long long lease, rev, ms = 0;
	int err;

	if (!env)
		return false;
	if (sscanf(env, "%lld %lld %lld", &lease, &rev, &ms) < 2) {
		unsetenv(FKV_FAILOVER_RESUME_ENV);
		return false;
	}
	unsetenv(FKV_FAILOVER_RESUME_ENV);
	/* etcd slow or away for a moment: try while the lease may last. */
	for (uint64_t t0 = mono_ms();;) {
		err = fkv_election_resume(fo->el, lease, rev, mono_ms());
		if (!err || err == -ESTALE ||
		    mono_ms() - t0 >= fo->cc->etcd_lease_ttl_ms)
			break;
		sleep_ms(100);
	}
	if (err) {
		fkv_warn("etcd election: the leadership before the exec is gone (%s): campaigning again",
			 err == -ESTALE ? "lease or key replaced"
					: fkv_etcd_error(fo->etcd));
		return false;
	}
	fo->failover_ms = ms > 0 ? (uint64_t)ms : 0;
	return true;
}

int fkv_failover_start(struct fkv_failover **out,
		       struct fkv_cluster_config *cc, const char *cluster_name,
		       const sigset_t *stop_sigs)
{
	struct fkv_election_opts eo = { 0 };
	struct fkv_failover *fo;
	char err_s[FKV_ETCD_ERR_BUF], ver[32], self[FKV_HOSTPORT_BUF];
	uint64_t waiting_since = mono_ms(), logged = 0;
	unsigned int timeout;
	bool reexec;
	int err;

	*out = NULL;
	fo = calloc(1, sizeof(*fo));
	if (!fo)
		return -ENOMEM;
	pthread_mutex_init(&fo->lock, NULL);
	fo->cc = cc;
	fo->period_ms = cc->etcd_lease_ttl_ms / 6;
	if (fo->period_ms < 100)
		fo->period_ms = 100;
	/* The first contact may take its time (a cold connection)... */
	if (cc->etcd_ca_file) {
		fo->tls.ca_file = cc->etcd_ca_file;
		fo->tls.cert_file = cc->etcd_cert_file;
		fo->tls.key_file = cc->etcd_key_file;
	}
	err = fkv_etcd_open_tls(&fo->etcd,
				(const char *const *)cc->etcd_endpoints,
				cc->netcd, cc->etcd_ca_file ? &fo->tls : NULL,
				FKV_FAILOVER_FIRST_TIMEOUT_MS, err_s,
				sizeof(err_s));
	if (err) {
		fkv_err("cluster.etcd: %s", err_s);
		goto fail;
	}
	reexec = getenv(FKV_FAILOVER_REEXEC_ENV) != NULL;
	unsetenv(FKV_FAILOVER_REEXEC_ENV);
	while ((err = fkv_etcd_status(fo->etcd, ver, sizeof(ver)))) {
		uint64_t now = mono_ms();

		if (!reexec) {
			fkv_err("cluster.etcd: no endpoint answers (%s); %s",
				fkv_etcd_error(fo->etcd),
				err == -EKEYREJECTED ||
				(cc->etcd_ca_file && err == -EIO) ?
				"do cluster.etcd.tls's files match etcd's certificates (and name its host)?" :
				"is etcd running there, and is this its client URL?");
			goto fail;
		}
		/* A role change's image: etcd was there; wait for it. */
		if (now - logged >= 5000) {
			fkv_warn("cluster.etcd: no endpoint answers (%s) after %llu ms: waiting (a re-executed fluxond waits for etcd)",
				 fkv_etcd_error(fo->etcd),
				 (unsigned long long)(now - waiting_since));
			logged = now;
		}
		err = fo_pause(fo, stop_sigs);
		if (err)
			goto fail;
	}
	logged = 0;
	/*
	 * ... the election's may not: a leader checks its hold after each
	 * keepalive, so one that hangs from 3/4 of the TTL must end before
	 * the TTL does (election.h).
	 */
	timeout = cc->etcd_lease_ttl_ms / 4;
	fkv_etcd_set_timeout(fo->etcd, timeout);
	if (cc->etcd_prefix)
		snprintf(fo->prefix, sizeof(fo->prefix), "%s", cc->etcd_prefix);
	else
		snprintf(fo->prefix, sizeof(fo->prefix), "/fluxonkv/%s",
			 cluster_name);
	fkv_hostport_str(self, sizeof(self), &cc->master);
	eo.prefix = fo->prefix;
	eo.name = cc->node_name;
	eo.addr = cc->master_candidate ? self : NULL;
	eo.ttl_ms = cc->etcd_lease_ttl_ms;
	eo.candidate = cc->master_candidate;
	err = fkv_election_create(&fo->el, fo->etcd, &eo, err_s, sizeof(err_s));
	if (err) {
		fkv_err("cluster.etcd: %s", err_s);
		goto fail;
	}
	err = fo_lease_agreed(fo);
	if (err)
		goto fail;
	fkv_info("etcd %s (version %s), election under %s, lease TTL %u ms, %s",
		 fkv_etcd_endpoint(fo->etcd), ver, fo->prefix,
		 cc->etcd_lease_ttl_ms,
		 cc->master_candidate ? "master candidate" : "not a candidate");

	if (fo_resume(fo)) {
		atomic_store(&fo->hold, fkv_election_held_until(fo->el));
		fo->leader.present = true;
		snprintf(fo->leader.name, sizeof(fo->leader.name), "%s",
			 cc->node_name);
		snprintf(fo->leader.addr, sizeof(fo->leader.addr), "%s", self);
	} else {
		for (;;) {
			enum fkv_elect_event ev;
			struct fkv_leader l;
			uint64_t now;

			err = fo_step(fo, &ev, &l);
			/*
			 * A leader key under our own name that is not ours is
			 * our previous image's (a resume that failed): wait
			 * for it to expire rather than follow ourselves.
			 */
			if (!err && l.present &&
			    (fkv_election_is_leader(fo->el) ||
			     strcmp(l.name, cc->node_name)))
				break;
			now = mono_ms();
			if (now - logged >= 5000) {
				if (err)
					fkv_warn("etcd election: %s", fkv_etcd_error(fo->etcd));
				else if (logged)
					fkv_info("etcd election: no leader yet after %llu ms: waiting",
						 (unsigned long long)(now - waiting_since));
				logged = now;
			}
			err = fo_pause(fo, stop_sigs);
			if (err)
				goto fail;
		}
	}
	fo_read_cands(fo);
	if (fkv_election_is_leader(fo->el)) {
		cc->role = FKV_ROLE_MASTER;
		snprintf(fo->addr, sizeof(fo->addr), "%s", self);
		fkv_info("etcd election: leading as %s at %s", cc->node_name, self);
	} else {
		cc->role = FKV_ROLE_NODE;
		err = fo_set_master(fo, fo->leader.addr);
		if (err)
			goto fail;
		fkv_info("etcd election: following %s at %s", fo->leader.name,
			 fo->leader.addr);
		pthread_mutex_lock(&fo->lock);
		if (fkv_election_read_term(fo->el, &fo->term))
			fo->term = 0;
		pthread_mutex_unlock(&fo->lock);
	}
	err = pthread_create(&fo->thread, NULL, fo_thread, fo);
	if (err) {
		err = -err;
		fkv_err("etcd election: cannot start its thread: %s",
			strerror(-err));
		goto fail;
	}
	fo->thread_started = true;
	/* The watch is a latency gain only: without it we poll. */
	err = fkv_etcd_open_tls(&fo->wetcd,
				(const char *const *)cc->etcd_endpoints,
				cc->netcd, cc->etcd_ca_file ? &fo->tls : NULL,
				timeout, err_s, sizeof(err_s));
	if (!err) {
		err = pthread_create(&fo->wthread, NULL, fo_watch_thread, fo);
		if (err)
			fkv_warn("etcd election: no watch (%s): reading the leader every %u ms",
				 strerror(err), fo->period_ms);
		fo->wthread_started = !err;
	} else {
		fkv_warn("etcd election: no watch (%s): reading the leader every %u ms",
			 err_s, fo->period_ms);
	}
	*out = fo;
	return 0;

fail:
	fkv_failover_stop(fo);
	return err;
}

void fkv_failover_stop(struct fkv_failover *fo)
{
	if (!fo)
		return;
	atomic_store(&fo->stop, true);
	if (fo->thread_started)
		pthread_join(fo->thread, NULL);
	/* A clean stop resigns: the standby need not wait for the TTL. */
	fkv_election_destroy(fo->el);
	/* (curl looks at the stop about once a second while idle) */
	if (fo->wthread_started)
		pthread_join(fo->wthread, NULL);
	fkv_etcd_close(fo->wetcd);
	fkv_etcd_close(fo->etcd);
	pthread_mutex_destroy(&fo->lock);
	free(fo);
}

int fkv_failover_term_floor(void *arg, uint64_t *etcd_term)
{
	struct fkv_failover *fo = arg;
	int err;

	pthread_mutex_lock(&fo->lock);
	err = fkv_election_read_term(fo->el, etcd_term);
	if (err)
		fkv_err("etcd election: cannot read the term: %s",
			err == -EPROTO ? "not a number"
				       : fkv_etcd_error(fo->etcd));
	pthread_mutex_unlock(&fo->lock);
	return err;
}

int fkv_failover_term_commit(void *arg, uint64_t term)
{
	struct fkv_failover *fo = arg;
	uint64_t got = 0;
	int err;

	pthread_mutex_lock(&fo->lock);
	err = fkv_election_raise_term(fo->el, term, &got);
	if (!err && got != term)
		err = -ESTALE;
	if (err)
		fkv_err("etcd election: cannot record term %" PRIu64 ": %s", term,
			err == -EPERM ? "no longer the leader"
			: err == -ESTALE ? "the term in etcd moved past it"
			: fkv_etcd_error(fo->etcd));
	else
		fo->term = term;
	pthread_mutex_unlock(&fo->lock);
	return err;
}

static int fo_fence_merge_one(void *arg, const char *name, uint64_t put_id)
{
	struct fkv_fences *f = arg;
	char why[PATH_MAX + 128];
	int err = fkv_fences_raise(f, name, put_id, why, sizeof(why));

	if (err)
		fkv_err("fence of node '%s' from etcd: %s", name, why);
	return err;
}

int fkv_failover_fences_merge(void *arg, struct fkv_fences *f)
{
	struct fkv_failover *fo = arg;
	int err;

	pthread_mutex_lock(&fo->lock);
	err = fkv_election_fences_load(fo->el, fo_fence_merge_one, f);
	if (err && err != -EPROTO)
		fkv_err("etcd election: the fences: %s",
			fkv_etcd_error(fo->etcd));
	else if (err)
		fkv_err("etcd election: a fence under %s/fences/ is not a hex put_id",
			fo->prefix);
	pthread_mutex_unlock(&fo->lock);
	return err;
}

int fkv_failover_fence_raise(void *arg, const char *name, uint64_t put_id)
{
	struct fkv_failover *fo = arg;
	int err;

	pthread_mutex_lock(&fo->lock);
	err = fkv_election_fence_raise(fo->el, name, put_id);
	if (err && err != -EPERM)
		fkv_err("etcd election: fence of '%s': %s", name,
			fkv_etcd_error(fo->etcd));
	pthread_mutex_unlock(&fo->lock);
	return err;
}

int fkv_failover_fence_lift(void *arg, const char *name, uint64_t put_id)
{
	struct fkv_failover *fo = arg;
	int err;

	pthread_mutex_lock(&fo->lock);
	err = fkv_election_fence_lift(fo->el, name, put_id);
	if (err && err != -EPERM && err != -EAGAIN)
		fkv_err("etcd election: lifting the fence of '%s': %s", name,
			fkv_etcd_error(fo->etcd));
	pthread_mutex_unlock(&fo->lock);
	return err;
}

const char *fkv_failover_pending(struct fkv_failover *fo)
{
	uint64_t hold;

	if (!fo)
		return NULL;
	/*
	 * The main loop asks before it handles anything: a leader whose
	 * process was stopped past its hold (SIGSTOP, a paused VM) steps
	 * down before it answers, without waiting for its election thread.
	 */
	hold = atomic_load(&fo->hold);
	if (hold && fo->cc->role == FKV_ROLE_MASTER && mono_ms() >= hold)
		fo_request(fo, "the etcd lease may have run out (no keepalive for 3/4 of the TTL): stepping down from master");
	return atomic_load(&fo->pending);
}

bool fkv_failover_may_send(void *fo)
{
	return !fkv_failover_pending(fo);
}

int fkv_failover_exec(struct fkv_failover *fo, char **argv)
{
	int64_t lease = 0, rev = 0;
	char env[64];
	int err;

	atomic_store(&fo->stop, true);
	if (fo->thread_started) {
		pthread_join(fo->thread, NULL);
		fo->thread_started = false;
	}
	pthread_mutex_lock(&fo->lock);
	fkv_election_handle(fo->el, &lease, &rev);
	if (lease && rev) {
		/* A fresh TTL for the exec and the new image's start. */
		if (fkv_election_refresh(fo->el, mono_ms()))
			fkv_warn("etcd election: keepalive before the exec: %s",
				 fkv_etcd_error(fo->etcd));
	}
	pthread_mutex_unlock(&fo->lock);
	if (lease && rev) {
		snprintf(env, sizeof(env), "%" PRId64 " %" PRId64 " %" PRIu64,
			 lease, rev, fo->failover_ms);
		if (setenv(FKV_FAILOVER_RESUME_ENV, env, 1))
			return -errno;
	}
	if (setenv(FKV_FAILOVER_REEXEC_ENV, "1", 1))
		return -errno;
	/*
	 * Nothing but 0-2 crosses the exec: the module must see its netlink
	 * socket close (the daemon's death: it keeps the cache), the pid
	 * file's lock must go.
	 */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC)) {
		for (int fd = 3; fd < 65536; fd++)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	execv("/proc/self/exe", argv);
	err = -errno;
	fkv_err("cannot re-execute fluxond: %s", strerror(-err));
	unsetenv(FKV_FAILOVER_RESUME_ENV);
	unsetenv(FKV_FAILOVER_REEXEC_ENV);
	return err;
}

int fkv_failover_stats(void *arg, struct nl_msg *msg)
{
	struct fkv_failover *fo = arg;
	struct fkv_election_stats st;
	bool leader;
	uint64_t term;

	pthread_mutex_lock(&fo->lock);
	fkv_election_get_stats(fo->el, &st);
	leader = fkv_election_is_leader(fo->el);
	term = fo->term;
	for (unsigned int i = 0; i < fo->ncands; i++) {
		struct nlattr *nest = nla_nest_start(msg, FKV_CA_CANDIDATE);

		if (!nest ||
		    nla_put_string(msg, FKV_CA_NODE_NAME, fo->cands[i].name) ||
		    nla_put_string(msg, FKV_CA_MASTER, fo->cands[i].addr)) {
			pthread_mutex_unlock(&fo->lock);
			return -EMSGSIZE;
		}
		nla_nest_end(msg, nest);
	}
	pthread_mutex_unlock(&fo->lock);
	if (fkv_ctl_put_stat(msg, "etcd_healthy", atomic_load(&fo->healthy)) ||
	    fkv_ctl_put_stat(msg, "etcd_leader_self", leader) ||
	    fkv_ctl_put_stat(msg, "etcd_master_candidate",
			     fo->cc->master_candidate) ||
	    fkv_ctl_put_stat(msg, "etcd_term", term) ||
	    fkv_ctl_put_stat(msg, "etcd_campaigns", st.campaigns) ||
	    fkv_ctl_put_stat(msg, "etcd_elections_won", st.won) ||
	    fkv_ctl_put_stat(msg, "etcd_stepdowns", st.stepdowns) ||
	    fkv_ctl_put_stat(msg, "etcd_leader_changes", st.leader_changes) ||
	    fkv_ctl_put_stat(msg, "etcd_keepalives", st.keepalives) ||
	    fkv_ctl_put_stat(msg, "etcd_errors", st.etcd_errors) ||
	    fkv_ctl_put_stat(msg, "etcd_failover_ms", fo->failover_ms) ||
	    fkv_ctl_put_stat(msg, "etcd_watching", atomic_load(&fo->watching)) ||
	    fkv_ctl_put_stat(msg, "etcd_watch_events",
			     atomic_load(&fo->watch_events)))
		return -EMSGSIZE;
	return 0;
}
