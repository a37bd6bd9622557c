// SPDX-License-Identifier: GPL-2.0
/*
 * ctlsock.c - fluxond's local control socket (ctlsock.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include "../common/cluster_msg.h"
#include "../common/wire.h"
#include "fluxonkv_config.h"
#include "ctlsock.h"
#include "log.h"
#include "master.h"

#define FKV_CTL_CONNS		8
/* A client that sends nothing useful in this long is dropped. */
#define FKV_CTL_TIMEOUT_MS	2000

/* Supplementary groups of a peer kept for the permission check. */
#define FKV_CTL_GROUPS		64

struct ctl_conn {
	struct fkv_wire w;
	bool used, answered;
	uint64_t since_ms;
	bool cred;		/* SO_PEERCRED worked */
	uint32_t uid, gid;
	uint32_t groups[FKV_CTL_GROUPS];
	size_t ngroups;
};

struct fkv_ctlsock {
	int lfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	fkv_ctlsock_stats_fn fn;
	void *arg;
	fkv_ctlsock_clear_fn clear_fn;
	void *clear_arg;
	const struct fkv_tenant_config *tenants;
	size_t ntenants;
	struct ctl_conn conns[FKV_CTL_CONNS];
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int fkv_ctl_put_stat(struct nl_msg *msg, const char *name, uint64_t value)
{
	struct nlattr *n = nla_nest_start(msg, FKV_CA_STAT);

	if (!n || nla_put_string(msg, FKV_CA_STAT_NAME, name) ||
	    nla_put_u64(msg, FKV_CA_STAT_VALUE, value))
		return -EMSGSIZE;
	nla_nest_end(msg, n);
	return 0;
}

int fkv_ctl_put_master(struct nl_msg *msg, const struct fkv_master *m)
{
	struct fkv_master_stats st;
	size_t i;
	int err = 0;

	fkv_master_get_stats(m, &st);
	const struct {
		const char *name;
		uint64_t v;
	} v[] = {
		{ "master_term", fkv_master_term(m) },
		{ "master_routes", st.routes },
		{ "master_high_bytes", st.high_bytes },
		{ "master_low_bytes", st.low_bytes },
		{ "master_inflight", st.inflight },
		{ "master_puts", st.puts },
		{ "master_puts_one_trip", st.puts_one_trip },
		{ "master_published", st.published },
		{ "master_gets", st.gets },
		{ "master_get_misses", st.get_misses },
		{ "master_lookups", st.lookups },
		{ "master_deletes", st.deletes },
		{ "master_evictions", st.evictions },
		{ "master_evicted_bytes", st.evicted_bytes },
		{ "master_clean_dropped", st.clean_dropped },
		{ "master_clean_dropped_gone", st.clean_dropped_gone },
		{ "master_revokes", st.revokes },
		{ "master_revokes_refused", st.revokes_refused },
		{ "master_remote_gets", st.remote_gets },
		{ "master_remote_ssd_gets", st.remote_ssd_gets },
		{ "master_remote_revoked", st.remote_revoked },
		{ "master_ssd_revoked", st.ssd_revoked },
		{ "master_ssd_dropped", st.ssd_dropped },
		{ "master_promotions", st.promotions },
		{ "master_nodes_left", st.nodes_left },
		{ "master_holds", st.holds },
		{ "master_held_skips", st.held_skips },
		{ "master_holds_expired", st.holds_expired },
		{ "master_placed", st.placed },
		{ "master_adopted", st.adopted },
		{ "master_adopt_refused", st.adopt_refused },
		{ "master_adopt_fenced", st.adopt_fenced },
		{ "master_put_ids_refused", st.put_ids_refused },
		{ "master_tombs", st.tombs },
		{ "master_tomb_floor", st.tomb_floor },
		{ "master_repersisted", st.repersisted },
		{ "master_place_refused", st.place_refused },
		{ "master_mem_replicas", st.mem_replicas },
		{ "master_ssd_replicas", st.ssd_replicas },
		{ "master_ssd_bytes", st.ssd_bytes },
	};

	for (i = 0; i < sizeof(v) / sizeof(v[0]) && !err; i++)
		err = fkv_ctl_put_stat(msg, v[i].name, v[i].v);
	return err;
}

int fkv_ctl_put_tenants(struct nl_msg *msg, const struct fkv_master *m,
			const struct fkv_tenant_config *t, size_t n)
{
	const struct fkv_tenant_config *tc;
	struct fkv_tenant_stats *v;
	char name[FKV_TENANT_NAME_MAX + 1];
	size_t i, k, nv;
	int err;

	err = fkv_master_tenant_stats(m, &v, &nv);
	if (err)
		return err;
	for (i = 0; i < nv && !err; i++) {
		const struct fkv_tenant_stats *s = &v[i];
		const struct {
			const char *name;
			uint64_t v;
		} st[] = {
			{ "puts", s->puts },
			{ "gets", s->gets },
			{ "mem_hits", s->mem_hits },
			{ "ssd_hits", s->ssd_hits },
			{ "remote_hits", s->remote_hits },
			{ "misses", s->misses },
			{ "keys", s->keys },
			{ "dram_bytes", s->dram_bytes },
			{ "ssd_bytes", s->ssd_bytes },
			{ "quota_evictions", s->quota_evictions },
			{ "quota_ssd_drops", s->quota_ssd_drops },
		};
		struct nlattr *nest;

		tc = fkv_tenant_by_id(t, n, s->tenant);
		if (tc)
			snprintf(name, sizeof(name), "%s", tc->name);
		else if (!s->tenant)
			snprintf(name, sizeof(name), FKV_TENANT_DEFAULT);
		else
			snprintf(name, sizeof(name), "tenant-%u", s->tenant);
		nest = nla_nest_start(msg, FKV_CA_TENANT);
		if (!nest || nla_put_string(msg, FKV_CA_TENANT_NAME, name) ||
		    nla_put_u32(msg, FKV_CA_TENANT_ID, s->tenant)) {
			err = -EMSGSIZE;
			break;
		}
		for (k = 0; k < sizeof(st) / sizeof(st[0]) && !err; k++)
			err = fkv_ctl_put_stat(msg, st[k].name, st[k].v);
		if (!err && tc && tc->dram_bytes)
			err = fkv_ctl_put_stat(msg, "dram_quota_bytes",
					       tc->dram_bytes);
		if (!err && tc && tc->ssd_bytes)
			err = fkv_ctl_put_stat(msg, "ssd_quota_bytes",
					       tc->ssd_bytes);
		if (!err)
			nla_nest_end(msg, nest);
	}
	free(v);
	return err;
}

/* Is something answering at @path? */
static bool socket_alive(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool alive;

	if (fd < 0)
		return false;
	alive = !connect(fd, (const struct sockaddr *)sun, sizeof(*sun));
	close(fd);
	return alive;
}

int fkv_ctlsock_open(struct fkv_ctlsock **out, const char *path, gid_t gid,
		     fkv_ctlsock_stats_fn fn, void *arg)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct fkv_ctlsock *c;
	char dir[sizeof(sun.sun_path)], *slash;
	unsigned int i;
	int err;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (i = 0; i < FKV_CTL_CONNS; i++)
		c->conns[i].w.fd = -1;
	snprintf(c->path, sizeof(c->path), "%s", path);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST) {
			err = -errno;
			goto err_free;
		}
	}
	if (socket_alive(&sun)) {
		err = -EADDRINUSE;
		goto err_free;
	}
	unlink(path);		/* a stale one of a daemon that died */
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->lfd < 0) {
		err = -errno;
		goto err_free;
	}
	if (bind(c->lfd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(c->lfd, 8)) {
		err = -errno;
		goto err_close;
	}
	/* Root and the device's group, like /dev/fluxonkv itself. */
	if (chmod(path, 0660) || (gid != (gid_t)-1 && chown(path, 0, gid)))
		fkv_warn("control socket %s: cannot set its mode: %m", path);
	c->fn = fn;
	c->arg = arg;
	*out = c;
	return 0;

err_close:
	close(c->lfd);
err_free:
	free(c);
	return err;
}

void fkv_ctlsock_close(struct fkv_ctlsock *c)
{
	unsigned int i;

	if (!c)
		return;
	for (i = 0; i < FKV_CTL_CONNS; i++)
		if (c->conns[i].used)
			fkv_wire_close(&c->conns[i].w);
	close(c->lfd);
	unlink(c->path);
	free(c);
}

int fkv_ctlsock_pollfds(struct fkv_ctlsock *c, struct pollfd *pfd, int max)
{
	uint64_t now = now_ms();
	unsigned int i;
	int n = 0;

	/*
	 * Accept only into a free slot: while all are busy new clients wait
	 * in the listen backlog (within their own timeouts), never closed
	 * unanswered -- which a client would take for a daemon that does not
	 * know its request.
	 */
	for (i = 0; i < FKV_CTL_CONNS && c->conns[i].used; i++)
		;
	if (max > 0 && i < FKV_CTL_CONNS)
		pfd[n++] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
	for (i = 0; i < FKV_CTL_CONNS && n < max; i++) {
		struct ctl_conn *cc = &c->conns[i];

		if (!cc->used)
			continue;
		if (now - cc->since_ms > FKV_CTL_TIMEOUT_MS) {
			fkv_wire_close(&cc->w);
			cc->used = false;
			continue;
		}
		pfd[n++] = (struct pollfd){
			.fd = cc->w.fd,
			.events = POLLIN | (fkv_wire_pending(&cc->w) ? POLLOUT : 0),
		};
	}
	return n;
}

void fkv_ctlsock_set_clear(struct fkv_ctlsock *c, fkv_ctlsock_clear_fn fn,
			   void *arg)
{
	c->clear_fn = fn;
	c->clear_arg = arg;
}

void fkv_ctlsock_set_tenants(struct fkv_ctlsock *c,
			     const struct fkv_tenant_config *t, size_t n)
{
	c->tenants = t;
	c->ntenants = n;
}

static bool id_listed(const uint32_t *v, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

int fkv_ctl_tenant_permitted(const struct fkv_tenant_config *t, size_t n,
			     uint32_t tenant, uint32_t uid, uint32_t gid,
			     const uint32_t *groups, size_t ngroups)
{
	const struct fkv_tenant_config *e;
	size_t i;

	if (tenant > FLUXONKV_TENANT_ID_MAX)
		return -EINVAL;
	if (!tenant)
		return 0;
	e = fkv_tenant_by_id(t, n, tenant);
	if (!uid)
		return 0;
	if (!e)
		return -ENOENT;
	if (id_listed(e->uids, e->nuids, uid) ||
	    id_listed(e->gids, e->ngids, gid))
		return 0;
	for (i = 0; i < ngroups; i++)
		if (id_listed(e->gids, e->ngids, groups[i]))
			return 0;
	return -EPERM;
}

/* Is @gid one of some tenant's gids (of @t, @n)? */
static bool tenant_group(const struct fkv_tenant_config *t, size_t n,
			 uint32_t gid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (id_listed(t[i].gids, t[i].ngids, gid))
			return true;
	return false;
}

/*
 * The peer's credentials as they were when it connected: SO_PEERCRED, and
 * its supplementary groups from SO_PEERGROUPS (not /proc/<pid>: the pid
 * may be another process's by now).  Of the groups only those some tenant
 * lists are kept (FKV_CTL_GROUPS of them at most); without SO_PEERGROUPS
 * only uid and gid count.
 */
static void peer_creds(const struct fkv_ctlsock *c, struct ctl_conn *cc,
		       int fd)
{
	socklen_t len = sizeof(struct ucred);
	gid_t few[64], *g = few;
	struct ucred cr;
	size_t i, n;

	cc->cred = false;
	cc->ngroups = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
	    len != sizeof(cr))
		return;
	cc->cred = true;
	cc->uid = cr.uid;
	cc->gid = cr.gid;
	len = sizeof(few);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
		if (errno != ERANGE || !(g = malloc(len)) ||
		    getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len))
			len = 0;
	}
	n = len / sizeof(gid_t);
	for (i = 0; i < n && cc->ngroups < FKV_CTL_GROUPS; i++)
		if (tenant_group(c->tenants, c->ntenants, g[i]))
			cc->groups[cc->ngroups++] = g[i];
	if (g != few)
		free(g);
}

static const struct nla_policy tenant_policy[FKV_CA_MAX + 1] = {
	[FKV_CA_TENANT_NAME] = { .type = NLA_STRING, .maxlen = 64 },
};

/* TENANT {TENANT_NAME} -> {STATUS, TENANT_ID | MESSAGE}. */
static void answer_tenant(struct fkv_ctlsock *c, struct ctl_conn *cc,
			  struct nlmsghdr *nlh)
{
	const struct fkv_tenant_config *t = NULL;
	struct nlattr *tb[FKV_CA_MAX + 1];
	const char *name = NULL;
	char why[160] = "";
	uint32_t id = 0;
	struct nl_msg *msg;
	int err;

	err = fkv_wire_parse(nlh, tb, tenant_policy);
	if (!err && !tb[FKV_CA_TENANT_NAME])
		err = -EINVAL;
	if (err) {
		snprintf(why, sizeof(why), "malformed TENANT (TENANT_NAME, a string of at most 63 bytes, is required)");
	} else {
		name = nla_get_string(tb[FKV_CA_TENANT_NAME]);
		t = fkv_tenant_by_name(c->tenants, c->ntenants, name);
		if (t) {
			id = t->id;
		} else if (strcmp(name, FKV_TENANT_DEFAULT)) {
			err = -ENOENT;
			snprintf(why, sizeof(why),
				 "no tenant \"%.63s\" in this daemon's configuration (%zu tenant%s)",
				 name, c->ntenants, c->ntenants == 1 ? "" : "s");
		}
	}
	msg = fkv_wire_msg(FKV_CCMD_TENANT);
	if (!msg || nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)err) ||
	    (!err && nla_put_u32(msg, FKV_CA_TENANT_ID, id)) ||
	    (why[0] && nla_put_string(msg, FKV_CA_MESSAGE, why)) ||
	    fkv_wire_send(&cc->w, msg))
		fkv_warn("control socket: cannot answer TENANT");
	nlmsg_free(msg);
	cc->answered = true;
}

static const struct nla_policy clear_policy[FKV_CA_MAX + 1] = {
	[FKV_CA_PATTERN] = { .type = NLA_STRING, .maxlen = 4096 },
	[FKV_CA_TENANT_ID] = { .type = NLA_U32 },
};

static void answer_clear(struct fkv_ctlsock *c, struct ctl_conn *cc,
			 struct nlmsghdr *nlh)
{
	struct nlattr *tb[FKV_CA_MAX + 1];
	const char *pattern = NULL, *why = NULL;
	uint64_t removed = 0;
	uint32_t tenant = 0;
	struct nl_msg *msg;
	char buf[160];
	int err;

	err = fkv_wire_parse(nlh, tb, clear_policy);
	if (!err && tb[FKV_CA_TENANT_ID])
		tenant = nla_get_u32(tb[FKV_CA_TENANT_ID]);
	if (err) {
		why = "malformed CLEAR";
	} else if (!cc->cred && tenant) {
		err = -EPERM;
		why = "cannot tell who asks (SO_PEERCRED failed)";
	} else if (tenant &&
		   (err = fkv_ctl_tenant_permitted(c->tenants, c->ntenants,
						   tenant, cc->uid, cc->gid,
						   cc->groups, cc->ngroups))) {
		if (err == -EINVAL)
			snprintf(buf, sizeof(buf), "tenant id %u is past %u",
				 tenant, FLUXONKV_TENANT_ID_MAX);
		else if (err == -ENOENT)
			snprintf(buf, sizeof(buf),
				 "no tenant %u in this daemon's configuration",
				 tenant);
		else
			snprintf(buf, sizeof(buf),
				 "uid %u may not clear tenant %u (not root, nor one of its uids or gids)",
				 cc->uid, tenant);
		why = buf;
	} else if (!c->clear_fn) {
		err = -EOPNOTSUPP;
		why = "this daemon runs no master";
	} else {
		if (tb[FKV_CA_PATTERN])
			pattern = nla_get_string(tb[FKV_CA_PATTERN]);
		err = c->clear_fn(c->clear_arg, tenant, pattern, &removed);
		if (err == -EINVAL)
			why = "not a POSIX extended regular expression";
		else if (err == -EAGAIN)
			why = "a new master waits out the leases nodes may still serve on (cluster.lease_ms): retry";
		else if (err == -EOPNOTSUPP)
			why = "this daemon runs no master";
	}
	msg = fkv_wire_msg(FKV_CCMD_CLEAR);
	if (!msg || nla_put_u32(msg, FLUXONKV_A_STATUS, (uint32_t)err) ||
	    (!err && nla_put_u64(msg, FKV_CA_COUNT, removed)) ||
	    (why && nla_put_string(msg, FKV_CA_MESSAGE, why)) ||
	    fkv_wire_send(&cc->w, msg))
		fkv_warn("control socket: cannot answer CLEAR");
	nlmsg_free(msg);
	cc->answered = true;
}

static void answer(struct fkv_ctlsock *c, struct ctl_conn *cc,
		   struct nlmsghdr *nlh)
{
	struct nl_msg *msg;

	if (fkv_wire_cmd(nlh) == FKV_CCMD_CLEAR) {
		answer_clear(c, cc, nlh);
		return;
	}
	if (fkv_wire_cmd(nlh) == FKV_CCMD_TENANT) {
		answer_tenant(c, cc, nlh);
		return;
	}
	if (fkv_wire_cmd(nlh) != FKV_CCMD_STATS) {
		cc->answered = true;	/* nothing else is spoken here */
		return;
	}
	/* ~320 bytes a member: 1,024 of them in FKV_WIRE_STATS_MAX. */
	msg = fkv_wire_msg_stats(FKV_CCMD_STATS);
	if (!msg || c->fn(c->arg, msg) || fkv_wire_send(&cc->w, msg))
		fkv_warn("control socket: cannot answer STATS");
	nlmsg_free(msg);
	cc->answered = true;
}

void fkv_ctlsock_handle(struct fkv_ctlsock *c, const struct pollfd *pfd,
			int n)
{
	unsigned int i;
	int k;

	for (k = 0; k < n; k++) {
		if (!pfd[k].revents)
			continue;
		if (pfd[k].fd == c->lfd) {
			int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);

			for (i = 0; fd >= 0 && i < FKV_CTL_CONNS; i++) {
				if (c->conns[i].used)
					continue;
				fkv_wire_init(&c->conns[i].w, fd);
				c->conns[i].w.tx_max = 2 * FKV_WIRE_STATS_MAX;
				c->conns[i].used = true;
				c->conns[i].answered = false;
				c->conns[i].since_ms = now_ms();
				peer_creds(c, &c->conns[i], fd);
				fd = -1;
			}
			if (fd >= 0)
				close(fd);	/* not polled while busy */
			continue;
		}
		for (i = 0; i < FKV_CTL_CONNS; i++) {
			struct ctl_conn *cc = &c->conns[i];
			struct nlmsghdr *nlh;
			int err = 0, rerr = 0;

			if (!cc->used || cc->w.fd != pfd[k].fd)
				continue;
			if (pfd[k].revents & POLLOUT)
				err = fkv_wire_flush(&cc->w);
			if (!cc->answered && (pfd[k].revents & POLLIN)) {
				rerr = fkv_wire_read(&cc->w);
				nlh = fkv_wire_next(&cc->w, &err);
				if (nlh)
					answer(c, cc, nlh);
			}
			if ((err && err != -EAGAIN) ||
			    (rerr && rerr != -EAGAIN) ||
			    (cc->answered && !fkv_wire_pending(&cc->w))) {
				fkv_wire_close(&cc->w);
				cc->used = false;
			}
		}
	}
}
