// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - fluxond: the fluxonkv master daemon.
 *
 * Startup: options, the configuration file (--config), detach if asked,
 * pid file, open the generic netlink family, register as the daemon,
 * build the master for the segment the module reports and, with a
 * cluster: section, the cluster control plane (cluster_ctl.h: the member
 * listener in master role, the connection to the master in node role).
 * Then one poll() loop: upcalls from the netlink socket, cluster
 * connections, and ticks (cluster timers every 100 ms; in-flight put and
 * persisting replica TTL sweeps every second).  SIGTERM/SIGINT unregister
 * and exit 0; SIGHUP reads the configuration again (reload_config()).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <netlink/attr.h>

#include "../common/cluster_msg.h"
#include "../common/ssd_attach.h"
#include "cluster_ctl.h"
#include "clusterd.h"
#include "ctlsock.h"
#include "daemon.h"
#include "dispatch.h"
#include "failover.h"
#include "log.h"
#include "master.h"
#include "nl.h"
#include "options.h"

#define FKV_TICK_MS	1000
#define FKV_CLUSTER_TICK_MS	100
/* Cluster descriptors polled at most: the data port's, then the control plane's. */
#define FKV_POLL_MAX	(1 + FKV_CCTL_POLL_MAX)
/* Control socket: the listener and its few connections. */
#define FKV_POLL_CTL	9

struct fluxond {
	struct fkv_options opt;
	struct fkv_config cfg;		/* --config, or the embedded default */
	struct fkv_clusterd *cd;	/* cluster runtime, or NULL */
	struct fkv_ctlsock *ctl;	/* control socket, or NULL */
	struct fkv_nl *nl;
	struct fkv_master *master;	/* NULL until registered */
	struct fkv_nl_register_info reg;
	int pidfile_fd;
	int ready_fd;			/* --daemon handshake, -1 if none */
	struct fkv_failover *fo;	/* cluster.etcd: the election, or NULL */
};

/* Set in the environment of a re-exec after a role change (failover.h). */
#define FLUXOND_REEXEC_ENV	"FLUXOND_REEXEC"

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t reload_signal;	/* SIGHUP: reread --config */

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

static void on_reload_signal(int sig)
{
	reload_signal = sig;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool on_upcall(void *arg, const struct fkv_upcall *u,
		      struct fkv_reply *r)
{
	struct fluxond *d = arg;

	if (d->cd)
		return fkv_clusterd_upcall(d->cd, u, r);
	if (!d->master) {
		memset(r, 0, sizeof(*r));
		r->status = -EAGAIN;
		return fkv_upcall_wants_reply(u->cmd);
	}
	return fkv_dispatch(d->master, u, r);
}

static void send_drop(void *arg, uint64_t handle, uint32_t flags)
{
	struct fluxond *d = arg;

	fkv_nl_send_drop(d->nl, handle, flags);
}

static void send_persist(void *arg, uint64_t handle, uint64_t put_id)
{
	struct fluxond *d = arg;

	fkv_nl_send_persist(d->nl, handle, put_id);
}

/* One node: @node is ours.  A CLEAR retires copies no DELETE answer names. */
static void send_ssd_drop(void *arg, uint32_t node, const void *key,
			  size_t key_len, uint64_t put_id)
{
	struct fluxond *d = arg;

	(void)node;
	fkv_nl_send_ssd_drop(d->nl, key, key_len, put_id);
}

static const struct fkv_master_ops master_ops = {
	.send_drop = send_drop,
	.persist = send_persist,
	.send_ssd_drop = send_ssd_drop,
};

/* Block the stop signals outside ppoll(); @orig gets the previous mask. */
static int setup_signals(sigset_t *orig)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	struct sigaction hup = { .sa_handler = on_reload_signal };
	sigset_t block;

	sigemptyset(&sa.sa_mask);
	sigemptyset(&hup.sa_mask);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &block, orig) ||
	    sigaction(SIGTERM, &sa, NULL) || sigaction(SIGINT, &sa, NULL) ||
	    sigaction(SIGHUP, &hup, NULL))
		return -errno;
	/*
	 * ppoll() unblocks them, whatever mask we inherited: a re-exec
	 * after a role change (failover.h) starts with them blocked.
	 */
	sigdelset(orig, SIGTERM);
	sigdelset(orig, SIGINT);
	sigdelset(orig, SIGHUP);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/*
 * A cluster: the runtime registers with the module itself (a node once it
 * has joined the master and learnt its id; in a cluster a local miss is
 * not a cluster miss, so never with local routes).
 */
static int start_cluster(struct fluxond *d)
{
	struct fkv_clusterd_config c = {
		.cc = &d->cfg.cluster,
		.tenants = d->cfg.tenants,
		.ntenants = d->cfg.ntenants,
		.nl = d->nl,
		.policy = d->opt.policy,
		.high_pct = d->opt.high_pct,
		.put_via_master = d->opt.put_via_master,
		.no_clean_drops = d->opt.no_clean_drops,
		.low_pct = d->opt.low_pct,
	};

	if (d->fo) {
		/* The election decided role and master (failover.h). */
		c.election = d->fo;
		c.term_floor = fkv_failover_term_floor;
		c.term_commit = fkv_failover_term_commit;
		c.put_stats = fkv_failover_stats;
		c.fences_merge = fkv_failover_fences_merge;
		c.fence_raise = fkv_failover_fence_raise;
		c.fence_lift = fkv_failover_fence_lift;
		c.may_send = fkv_failover_may_send;
	}
	return fkv_clusterd_start(&d->cd, &c);
}

static int attach_shard(void *arg, int fd, uint64_t offset,
			uint64_t capacity, uint32_t device)
{
	struct fluxonkv_ssd_attach a = {
		.size = sizeof(a), .fd = fd, .offset = offset,
		.capacity = capacity, .device = device,
	};

	return ioctl(*(int *)arg, FLUXONKV_IOC_SSD_ATTACH, &a) ? -errno : 0;
}

static void attach_report(void *arg, bool warning, const char *line)
{
	if (warning)
		fkv_warn("SSD tier: %s", line);
	else
		fkv_info("SSD tier: %s", line);
}

/*
 * The SSD tier the configuration declares, attached before we register
 * (the module keeps its tier across daemon restarts: only a module
 * without one gets it).  A failure is logged and we go on DRAM-only.
 */
static void attach_ssd(struct fluxond *d)
{
	const char *dev = "/dev/fluxonkv";
	int fd;
	struct fkv_ssd_attach_ops ops = { .attach = attach_shard,
					  .report = attach_report,
					  .arg = &fd };
	struct fkv_ssd_attached got;
	char err[512];
	uint64_t have;

	if (!d->cfg.ssd)
		return;
	have = fkv_module_ssd_capacity();
	if (have) {
		fkv_info("SSD tier already attached (%llu MiB): %s not "
			 "applied again", (unsigned long long)(have >> 20),
			 d->opt.config_path);
		return;
	}
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fkv_err("SSD tier of %s not attached: %s: %m (DRAM only)",
			d->opt.config_path, dev);
		return;
	}
	if (fkv_ssd_attach_config(&d->cfg, &ops, &got, err, sizeof(err)))
		fkv_err("SSD tier of %s not attached: %s (DRAM only)",
			d->opt.config_path, err);
	else
		fkv_info("SSD tier: %u shards, %llu MiB", got.nshards,
			 (unsigned long long)(got.capacity >> 20));
	close(fd);
}

static int open_and_register(struct fluxond *d)
{
	struct fkv_master_config mc = { 0 };
	struct fkv_nl_version v;
	uint32_t flags;
	int err;

	err = fkv_nl_open(&d->nl, on_upcall, d);
	if (err == -ENOENT) {
		fkv_err("the fluxonkv module is not loaded (no generic netlink "
			"family \"%s\"); load it first: modprobe fluxonkv",
			FLUXONKV_GENL_NAME);
		return err;
	}
	if (err) {
		fkv_err("cannot open generic netlink: %s", strerror(-err));
		return err;
	}
	err = fkv_nl_get_version(d->nl, &v);
	if (!err && v.abi && v.abi != FLUXONKV_ABI_VERSION) {
		fkv_err("module ABI %u, this fluxond speaks ABI %u", v.abi,
			FLUXONKV_ABI_VERSION);
		return -EPROTO;
	}
	if (!err && v.handle_layout != FLUXONKV_HANDLE_LAYOUT) {
		fkv_err("the fluxonkv module (%s) stamps handles of layout %u, "
			"this fluxond reads layout %u: install the module and "
			"fluxond of one release", v.version[0] ? v.version : "?",
			v.handle_layout, FLUXONKV_HANDLE_LAYOUT);
		return -EPROTO;
	}
	if (err)
		fkv_warn("GET_VERSION failed: %s", strerror(-err));
	else
		fkv_info("module %s, ABI %u", v.version[0] ? v.version : "?",
			 v.abi);

	attach_ssd(d);
	/*
	 * This master routes only to the module it registers with (one
	 * node): the module may answer gets from its own index.
	 */
	if (d->cfg.cluster.present)
		return start_cluster(d);
	/*
	 * KEEP: a crash or upgrade of fluxond loses no cached value.
	 * LOCAL_PUTS: the module publishes puts and tells us afterwards.
	 * CLEAN_DROPS: it drops replicas with a routed SSD copy for room
	 * itself and tells us afterwards (DROPPED).
	 */
	flags = FLUXONKV_REGISTER_F_KEEP |
		(d->opt.no_clean_drops ? 0 : FLUXONKV_REGISTER_F_CLEAN_DROPS) |
		(d->opt.ask_on_miss ? 0 : FLUXONKV_REGISTER_F_LOCAL_ROUTES) |
		(d->opt.put_via_master ? 0 : FLUXONKV_REGISTER_F_LOCAL_PUTS);
	err = fkv_nl_register(d->nl, flags, 0, &d->reg);
	if (err == -EINVAL && (flags & FLUXONKV_REGISTER_F_CLEAN_DROPS)) {
		/* A module that predates a flag refuses the attribute. */
		fkv_warn("module refused REGISTER_F_CLEAN_DROPS: room is made "
			 "only by this daemon's eviction");
		flags &= ~FLUXONKV_REGISTER_F_CLEAN_DROPS;
		err = fkv_nl_register(d->nl, flags, 0, &d->reg);
	}
	if (err == -EINVAL && (flags & FLUXONKV_REGISTER_F_LOCAL_PUTS)) {
		/* A module that predates a flag refuses the attribute. */
		fkv_warn("module refused REGISTER_F_LOCAL_PUTS: every put "
			 "will ask this daemon");
		flags &= ~FLUXONKV_REGISTER_F_LOCAL_PUTS;
		err = fkv_nl_register(d->nl, flags, 0, &d->reg);
	}
	if (err == -EINVAL && flags != 0) {
		fkv_warn("module refused REGISTER_F_LOCAL_ROUTES / _KEEP: "
			 "every miss will ask this daemon, a restart empties "
			 "the cache");
		err = fkv_nl_register(d->nl, 0, 0, &d->reg);
	}
	switch (err) {
	case 0:
		break;
	case -ESHUTDOWN:
		fkv_err("the module is being unloaded");
		return err;
	case -EBUSY:
		fkv_err("another fluxond is registered with the module "
			"(see /sys/kernel/fluxonkv/daemon_pid)");
		return err;
	case -EPERM:
	case -EACCES:
		fkv_err("registering needs CAP_NET_ADMIN and CAP_SYS_ADMIN");
		return err;
	default:
		fkv_err("DAEMON_REGISTER failed: %s", strerror(-err));
		return err;
	}

	/* A table of a previous daemon is replaced (or cleared). */
	err = fkv_nl_load_tenants(d->nl, d->cfg.tenants, d->cfg.ntenants);
	if (err) {
		fkv_nl_unregister(d->nl);
		return err;
	}

	mc.capacity = d->reg.segment_size;
	mc.incarnation = d->reg.incarnation;
	mc.ssd_capacity = d->reg.ssd_capacity;
	mc.first_put_id = d->reg.put_id_max;
	mc.local_puts = d->reg.flags & FLUXONKV_REGISTER_F_LOCAL_PUTS;
	mc.policy = d->opt.policy;
	mc.high_pct = d->opt.high_pct;
	mc.low_pct = d->opt.low_pct;
	mc.tenants = d->cfg.tenants;
	mc.ntenants = d->cfg.ntenants;
	d->master = fkv_master_create(&mc, &master_ops, d);
	if (!d->master) {
		err = -errno;
		fkv_err("cannot build the master: %s", strerror(-err));
		fkv_nl_unregister(d->nl);
		return err;
	}
	fkv_info("registered: segment %llu bytes (%llu MiB, %llu used), "
		 "SSD %llu MiB, incarnation %#llx, policy %s, watermarks "
		 "%u%%/%u%%, %s, %s%s",
		 (unsigned long long)d->reg.segment_size,
		 (unsigned long long)(d->reg.segment_size >> 20),
		 (unsigned long long)d->reg.segment_used,
		 (unsigned long long)(d->reg.ssd_capacity >> 20),
		 (unsigned long long)d->reg.incarnation, d->opt.policy,
		 d->opt.high_pct, d->opt.low_pct,
		 d->reg.flags & FLUXONKV_REGISTER_F_LOCAL_ROUTES ?
		 "misses answered by the module" : "every miss asks this master",
		 d->reg.flags & FLUXONKV_REGISTER_F_LOCAL_PUTS ?
		 "puts published by the module" : "every put asks this master",
		 d->reg.flags & FLUXONKV_REGISTER_F_CLEAN_DROPS ?
		 ", clean replicas dropped by the module" : "");
	if (d->reg.flags & FLUXONKV_REGISTER_F_ADOPT)
		fkv_adopt_kept(d->master, d->nl, "single node");
	else if (d->reg.segment_used)
		fkv_warn("the segment already holds %llu bytes this master "
			 "does not know about",
			 (unsigned long long)d->reg.segment_used);
	return 0;
}

/*
 * --config: load it as fkv_options promises (options.h).  0, or 1 after
 * printing every problem.
 */
static int load_config(struct fluxond *d)
{
	char msg[4096] = "";
	int err;

	err = fkv_config_load(d->opt.config_path, &d->cfg, msg, sizeof(msg));
	if (err == -ENOENT && !d->opt.config_explicit) {
		fkv_config_free(&d->cfg);
		memset(&d->cfg, 0, sizeof(d->cfg));
		fkv_dbg("no %s: single node, DRAM only", d->opt.config_path);
		return 0;
	}
	if (err) {
		fkv_err("configuration %s: %s", d->opt.config_path,
			msg[0] ? msg : strerror(-err));
		return 1;
	}
	return 0;
}

/* The same tenants, in the same order. */
static bool tenants_equal(const struct fkv_config *a,
			  const struct fkv_config *b)
{
	size_t i;

	if (a->ntenants != b->ntenants)
		return false;
	for (i = 0; i < a->ntenants; i++) {
		const struct fkv_tenant_config *x = &a->tenants[i];
		const struct fkv_tenant_config *y = &b->tenants[i];

		if (strcmp(x->name, y->name) || x->id != y->id ||
		    x->nuids != y->nuids || x->ngids != y->ngids ||
		    x->dram_bytes != y->dram_bytes ||
		    x->ssd_bytes != y->ssd_bytes ||
		    (x->nuids && memcmp(x->uids, y->uids,
					x->nuids * sizeof(*x->uids))) ||
		    (x->ngids && memcmp(x->gids, y->gids,
					x->ngids * sizeof(*x->gids))))
			return false;
	}
	return true;
}

/*
 * SIGHUP: read --config again and apply what can change live (watermarks,
 * log level) where the command line did not set it; say what needs a
 * restart.  A file that does not parse changes nothing.
 */
static void reload_config(struct fluxond *d)
{
	struct fkv_options o = d->opt;
	struct fkv_config cfg;
	char msg[4096] = "";
	int err;

	err = fkv_config_load(d->opt.config_path, &cfg, msg, sizeof(msg));
	if (err) {
		fkv_err("SIGHUP: %s: %s: nothing changed", d->opt.config_path,
			msg[0] ? msg : strerror(-err));
		fkv_config_free(&cfg);
		return;
	}
	/* From the defaults again: a setting removed from the file goes. */
	if (!o.high_set)
		o.high_pct = FKV_HIGH_WATERMARK_DEFAULT;
	if (!o.low_set)
		o.low_pct = FKV_LOW_WATERMARK_DEFAULT;
	if (!o.policy_set)
		o.policy = "s3fifo";
	if (!o.log_level_set)
		o.log_level = FKV_LOG_INFO;
	if (fkv_options_apply_config(&o, &cfg, stderr)) {
		fkv_err("SIGHUP: %s: nothing changed", d->opt.config_path);
		fkv_config_free(&cfg);
		return;
	}
	if (strcmp(o.policy, d->opt.policy))
		fkv_warn("SIGHUP: policy %s -> %s needs a restart of fluxond "
			 "(kept %s)", d->opt.policy, o.policy, d->opt.policy);
	if (cfg.segment_mb != d->cfg.segment_mb || cfg.ssd != d->cfg.ssd ||
	    cfg.npaths != d->cfg.npaths ||
	    cfg.cluster.present != d->cfg.cluster.present)
		fkv_warn("SIGHUP: segment, SSD tier and cluster settings change "
			 "only with a restart (of the module for segment_mb)");
	if (!tenants_equal(&cfg, &d->cfg))
		fkv_warn("SIGHUP: the tenants section changes only with a "
			 "restart of fluxond (the table stays as loaded)");
	if (d->master && (o.high_pct != d->opt.high_pct ||
			  o.low_pct != d->opt.low_pct)) {
		fkv_master_set_watermarks(d->master, o.high_pct, o.low_pct);
		fkv_info("SIGHUP: watermarks %u%%/%u%% -> %u%%/%u%%",
			 d->opt.high_pct, d->opt.low_pct, o.high_pct, o.low_pct);
		d->opt.high_pct = o.high_pct;
		d->opt.low_pct = o.low_pct;
	}
	if (o.log_level != d->opt.log_level) {
		fkv_log_setup(o.log_level, d->opt.daemon);
		d->opt.log_level = o.log_level;
		fkv_info("SIGHUP: log level %s", cfg.log_level ?
			 cfg.log_level : "info");
	}
	fkv_info("SIGHUP: %s read again", d->opt.config_path);
	fkv_config_free(&cfg);
}

/* fluxonctl cluster: this daemon's view. */
static int control_stats(void *arg, struct nl_msg *msg)
{
	struct fluxond *d = arg;
	int err;

	if (d->cd)
		err = fkv_clusterd_stats(d->cd, msg);
	else if (nla_put_string(msg, FKV_CA_ROLE, "single"))
		err = -EMSGSIZE;
	else
		err = d->master ? fkv_ctl_put_master(msg, d->master) : 0;
	/* The master's per-tenant view (issue 30). */
	if (!err && d->master)
		err = fkv_ctl_put_tenants(msg, d->master, d->cfg.tenants,
					  d->cfg.ntenants);
	return err;
}

/*
 * Mooncake's remove_all / remove_by_regex (the adapter's CLEAR): the
 * master's keys.  Upcalls already queued (a PUT_LOCAL batch the module
 * flushed) are handled first; the adapter makes the module flush its
 * notes before it asks (a DELETE upcall goes after them).
 */
static int control_clear(void *arg, uint32_t tenant, const char *pattern,
			 uint64_t *removed)
{
	struct fluxond *d = arg;
	int err;

	if (!d->master)
		return -EOPNOTSUPP;
	/*
	 * Not while nodes may serve on leases we wait out: their copies are
	 * not in our routes, so no drop would reach them (cluster.md).
	 */
	if (d->cd && fkv_clusterd_write_hold_left(d->cd)) {
		fkv_info("CLEAR refused for %llu ms more: leases nodes may still serve on run",
			 (unsigned long long)fkv_clusterd_write_hold_left(d->cd));
		return -EAGAIN;
	}
	err = fkv_nl_process(d->nl);
	if (err && err != -EAGAIN)
		fkv_warn("CLEAR: netlink: %s", strerror(-err));
	return fkv_master_remove_matching(d->master, tenant, pattern, removed);
}

static void open_control(struct fluxond *d)
{
	struct stat st;
	int err;

	if (!d->opt.control_path)
		return;
	/* Readable by the group that may open the device. */
	err = fkv_ctlsock_open(&d->ctl, d->opt.control_path,
			       stat("/dev/fluxonkv", &st) ? (gid_t)-1 : st.st_gid,
			       control_stats, d);
	if (!err) {
		fkv_ctlsock_set_clear(d->ctl, control_clear, d);
		fkv_ctlsock_set_tenants(d->ctl, d->cfg.tenants,
					d->cfg.ntenants);
	}
	if (err)
		fkv_warn("control socket %s: %s (fluxonctl cluster will not "
			 "reach this daemon)", d->opt.control_path,
			 strerror(-err));
}

static uint64_t next_deadline(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static int run(struct fluxond *d, const sigset_t *unblocked)
{
	uint64_t next_tick = now_ms() + FKV_TICK_MS;
	uint64_t next_cluster = now_ms();
	int err;

	/* Upcalls held back while DAEMON_REGISTER was answered. */
	err = fkv_nl_process(d->nl);
	while (!err && !stop_signal && !fkv_failover_pending(d->fo)) {
		struct pollfd pfd[1 + FKV_POLL_MAX + FKV_POLL_CTL];
		uint64_t now = now_ms(), until;
		struct timespec ts = { 0 };
		int n, ncl = 0, nctl = 0;

		if (reload_signal) {
			reload_signal = 0;
			fkv_sd_notify("RELOADING=1");
			reload_config(d);
			fkv_sd_notify("READY=1");
		}

		if (now >= next_tick) {
			if (d->master)
				fkv_master_tick(d->master);
			next_tick = now + FKV_TICK_MS;
		}
		if (d->cd && now >= next_cluster) {
			fkv_clusterd_tick(d->cd);
			next_cluster = now + FKV_CLUSTER_TICK_MS;
		}
		until = d->cd ? next_deadline(next_tick, next_cluster)
			      : next_tick;
		/* A long job in slices: the next one after the sockets. */
		if (d->master && fkv_master_work(d->master))
			until = now;
		ts.tv_nsec = (long)(until > now ? until - now : 0) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec = ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
		}
		pfd[0] = (struct pollfd){ .fd = fkv_nl_fd(d->nl),
					  .events = POLLIN };
		if (d->cd)
			ncl = fkv_clusterd_pollfds(d->cd, pfd + 1, FKV_POLL_MAX);
		if (d->ctl)
			nctl = fkv_ctlsock_pollfds(d->ctl, pfd + 1 + ncl,
						   FKV_POLL_CTL);
		n = ppoll(pfd, 1 + (nfds_t)(ncl + nctl), &ts, unblocked);
		if (n < 0) {
			if (errno != EINTR)
				err = -errno;
			continue;
		}
		/* A leader past its etcd lease answers nothing (failover.h). */
		if (fkv_failover_pending(d->fo))
			break;
		if (n > 0 && pfd[0].revents)
			err = fkv_nl_process(d->nl);
		if (n > 0 && d->ctl)
			fkv_ctlsock_handle(d->ctl, pfd + 1 + ncl, nctl);
		if (!err && n > 0 && d->cd) {
			err = fkv_clusterd_handle(d->cd, pfd + 1, ncl);
			if (err)
				fkv_err("cluster: cannot go on: %s (fix the "
					"cluster section of %s)", strerror(-err),
					d->opt.config_path);
		}
	}
	if (err == -ENODEV)
		fkv_err("the fluxonkv module was unloaded");
	else if (err && err != -EACCES && err != -EEXIST)
		fkv_err("netlink: %s", strerror(-err));
	return err;
}

static void log_stats(const struct fluxond *d)
{
	struct fkv_master_stats st;

	fkv_master_get_stats(d->master, &st);
	fkv_info("stats: %zu routes, %llu/%llu bytes used, %llu puts "
		 "(%llu published, %llu superseded, %llu expired), %llu gets "
		 "(%llu misses), %llu accesses, %llu deletes, %llu evictions",
		 st.routes, (unsigned long long)st.used,
		 (unsigned long long)st.capacity, (unsigned long long)st.puts,
		 (unsigned long long)st.published,
		 (unsigned long long)st.superseded,
		 (unsigned long long)st.expired, (unsigned long long)st.gets,
		 (unsigned long long)st.get_misses,
		 (unsigned long long)st.accesses,
		 (unsigned long long)st.deletes,
		 (unsigned long long)st.evictions);
	fkv_info("stats: SSD %zu replicas (%llu bytes), %llu persist puts, "
		 "%zu persisting (%llu bytes), %llu persist failures, "
		 "%llu persist timeouts, "
		 "%llu commits published, %llu ignored, %llu SSD gets, "
		 "%llu promoted, %llu not, %llu revoked, %llu evicted",
		 st.ssd_replicas, (unsigned long long)st.ssd_bytes,
		 (unsigned long long)st.persist_puts, st.persisting,
		 (unsigned long long)st.persisting_bytes,
		 (unsigned long long)st.persist_failures,
		 (unsigned long long)st.persist_expired,
		 (unsigned long long)st.ssd_commits_published,
		 (unsigned long long)st.ssd_commits_ignored,
		 (unsigned long long)st.ssd_gets,
		 (unsigned long long)st.promotions,
		 (unsigned long long)st.promotions_refused,
		 (unsigned long long)st.ssd_revoked,
		 (unsigned long long)st.ssd_evicted);
}

/*
 * A master holds a control connection per member (up to 1,024) besides the
 * data port's connections: the soft limit of open files (1,024 by default)
 * is raised towards the hard one.  Too low a hard limit is said once; the
 * accept that hits it is refused and retried by the member.
 */
#define FKV_NOFILE_WANT		8192

static void raise_nofile(const struct fluxond *d)
{
	struct rlimit rl;

	if (!d->cfg.cluster.present || getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur >= FKV_NOFILE_WANT)
		return;
	rl.rlim_cur = rl.rlim_max < FKV_NOFILE_WANT ? rl.rlim_max
						      : FKV_NOFILE_WANT;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		fkv_warn("cannot raise the open files limit: %m");
	if (rl.rlim_cur < FKV_NOFILE_WANT)
		fkv_warn("open files limited to %llu (LimitNOFILE): a master "
			 "of more than ~%llu members refuses the rest",
			 (unsigned long long)rl.rlim_cur,
			 (unsigned long long)(rl.rlim_cur > 320 ?
					      (rl.rlim_cur - 320) / 2 : 0));
}

int main(int argc, char **argv)
{
	struct fluxond d = { .pidfile_fd = -1, .ready_fd = -1 };
	char *pidfile = NULL;	/* an absolute --pidfile we built */
	sigset_t unblocked;
	bool reexec;
	int err;

	if (fkv_options_parse(&d.opt, argc, argv, stderr)) {
		fprintf(stderr, "Try '%s --help'.\n", argv[0]);
		return 2;
	}
	if (d.opt.help) {
		fkv_options_usage(stdout, argv[0]);
		return 0;
	}
	if (d.opt.version) {
		printf("fluxond %s (fluxonkv ABI %d)\n", FLUXOND_VERSION,
		       FLUXONKV_ABI_VERSION);
		return 0;
	}
	fkv_log_setup(d.opt.log_level, false);
	if (load_config(&d))
		return 1;
	/* The file's policy, watermarks, log level; flags win. */
	if (fkv_options_apply_config(&d.opt, &d.cfg, stderr))
		return 1;
	if (d.opt.daemon && d.opt.pidfile && d.opt.pidfile[0] != '/') {
		/* The daemon runs in /: anchor a relative pid file path now. */
		char *cwd = get_current_dir_name();

		if (!cwd || asprintf(&pidfile, "%s/%s", cwd, d.opt.pidfile) < 0) {
			fprintf(stderr, "fluxond: out of memory\n");
			free(cwd);
			return 1;
		}
		free(cwd);
		d.opt.pidfile = pidfile;
	}
	/* A re-exec after a role change (failover.h) is detached already. */
	reexec = getenv(FLUXOND_REEXEC_ENV) != NULL;
	unsetenv(FLUXOND_REEXEC_ENV);
	if (d.opt.daemon && !reexec) {
		d.ready_fd = fkv_daemon_detach();
		if (d.ready_fd < 0) {
			fprintf(stderr, "fluxond: cannot detach: %s\n",
				strerror(-d.ready_fd));
			return 1;
		}
	}
	fkv_log_setup(d.opt.log_level, d.opt.daemon);
	fkv_log_tee_stderr(d.opt.daemon);
	if (setup_signals(&unblocked)) {
		fkv_err("cannot set up signals: %m");
		goto fail;
	}
	raise_nofile(&d);
	if (d.opt.pidfile) {
		d.pidfile_fd = fkv_pidfile_create(d.opt.pidfile);
		if (d.pidfile_fd < 0) {
			fkv_err("pid file %s: %s", d.opt.pidfile,
				d.pidfile_fd == -EEXIST
				? "held by another running fluxond"
				: strerror(-d.pidfile_fd));
			goto fail;
		}
	}
	if (d.cfg.cluster.present && d.cfg.cluster.netcd) {
		sigset_t stop;

		/*
		 * cluster.etcd: etcd must answer (or fluxond exits 1 saying
		 * why) and the election decide this fluxond's role before
		 * anything registers (failover.h).
		 */
		sigemptyset(&stop);
		sigaddset(&stop, SIGTERM);
		sigaddset(&stop, SIGINT);
		if (fkv_failover_start(&d.fo, &d.cfg.cluster,
				       d.cfg.cluster_name, &stop))
			goto fail;
	}
	if (open_and_register(&d))
		goto fail;
	/* The master of a cluster routes; a plain node has none. */
	if (d.cd)
		d.master = fkv_clusterd_master(d.cd);
	open_control(&d);
	fkv_sd_notify("READY=1\nSTATUS=registered with the module");
	fkv_daemon_ready(d.ready_fd, 0);
	d.ready_fd = -1;
	fkv_log_tee_stderr(false);

	err = run(&d, &unblocked);
	if (!err && !stop_signal && fkv_failover_pending(d.fo)) {
		/*
		 * A role change: as after kill -9, nothing unregistered and
		 * nobody told -- the module keeps the cache for the next
		 * process, which reports it to the master it joins.
		 */
		if (setenv(FLUXOND_REEXEC_ENV, "1", 1) == 0)
			fkv_failover_exec(d.fo, argv);
		fkv_err("cannot re-execute for the role change: exiting");
		return 1;
	}
	fkv_sd_notify("STOPPING=1");
	if (stop_signal)
		fkv_info("%s: unregistering", strsignal(stop_signal));
	/* No pull may still write a target the unregistration frees. */
	if (d.cd)
		fkv_clusterd_quiesce(d.cd);
	if (!err && (!d.cd || fkv_clusterd_registered(d.cd))) {
		int uerr = fkv_nl_unregister(d.nl);

		if (uerr)
			fkv_warn("DAEMON_UNREGISTER: %s", strerror(-uerr));
	}
	fkv_ctlsock_close(d.ctl);
	if (d.master)
		log_stats(&d);
	if (d.cd) {
		fkv_clusterd_log_stats(d.cd);
		fkv_clusterd_stop(d.cd);	/* owns the master */
		d.master = NULL;
	}
	fkv_failover_stop(d.fo);	/* resigns: no wait for the TTL */
	fkv_master_destroy(d.master);
	fkv_nl_close(d.nl);
	fkv_pidfile_remove(d.opt.pidfile, d.pidfile_fd);
	fkv_config_free(&d.cfg);
	free(pidfile);
	return err ? 1 : 0;

fail:
	if (d.cd) {
		fkv_clusterd_stop(d.cd);
		d.master = NULL;
	}
	fkv_failover_stop(d.fo);
	fkv_config_free(&d.cfg);
	fkv_master_destroy(d.master);
	fkv_nl_close(d.nl);
	fkv_pidfile_remove(d.opt.pidfile, d.pidfile_fd);
	fkv_daemon_ready(d.ready_fd, 1);
	free(pidfile);
	return 1;
}
