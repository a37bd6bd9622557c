// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_cluster.c - fluxonctl cluster: query fluxond's control socket and
 * render the answer (ctl_cluster.h).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "ctl_cluster.h"
#include "ctl_format.h"
#include "ctl_json.h"
#include "../common/wire.h"

static const struct nla_policy top_policy[FKV_CA_MAX + 1] = {
	[FKV_CA_ROLE] = { .type = NLA_STRING, .maxlen = 16 },
	[FKV_CA_NODE_NAME] = { .type = NLA_STRING,
			       .maxlen = FKV_NODE_NAME_MAX + 1 },
	[FKV_CA_NODE_ID] = { .type = NLA_U32 },
	[FLUXONKV_A_INCARNATION] = { .type = NLA_U64 },
	[FKV_CA_MASTER] = { .type = NLA_STRING, .maxlen = FKV_ADDR_MAX },
	[FKV_CA_TRANSPORT] = { .type = NLA_STRING, .maxlen = 8 },
	[FKV_CA_DATA_ADDR] = { .type = NLA_STRING, .maxlen = FKV_ADDR_MAX },
	[FKV_CA_LIVE] = { .type = NLA_U32 },
	[FLUXONKV_A_SEGMENT_SIZE] = { .type = NLA_U64 },
	[FLUXONKV_A_SEGMENT_USED] = { .type = NLA_U64 },
	[FLUXONKV_A_SSD_CAPACITY] = { .type = NLA_U64 },
	[FKV_CA_LEFT_REASON] = { .type = NLA_STRING, .maxlen = 48 },
	[FKV_CA_STAT_NAME] = { .type = NLA_STRING, .maxlen = 48 },
	[FKV_CA_STAT_VALUE] = { .type = NLA_U64 },
	[FKV_CA_TENANT_NAME] = { .type = NLA_STRING, .maxlen = 64 },
	[FKV_CA_TENANT_ID] = { .type = NLA_U32 },
};

static void copy_str(char *dst, size_t size, const struct nlattr *a)
{
	size_t n;

	dst[0] = '\0';
	if (!a)
		return;
	n = strnlen(nla_data(a), (size_t)nla_len(a));
	if (n >= size)
		n = size - 1;
	memcpy(dst, nla_data(a), n);
	dst[n] = '\0';
}

static int decode_stat(struct nlattr *nest, struct ctl_cstat *st,
		       unsigned int *n, unsigned int max)
{
	struct nlattr *tb[FKV_CA_MAX + 1];

	if (nla_parse_nested(tb, FKV_CA_MAX, nest,
			     (struct nla_policy *)top_policy) < 0 ||
	    !tb[FKV_CA_STAT_NAME] || !tb[FKV_CA_STAT_VALUE])
		return -EPROTO;
	if (*n == max)
		return 0;	/* more than we show: the rest is dropped */
	copy_str(st[*n].name, sizeof(st[*n].name), tb[FKV_CA_STAT_NAME]);
	st[*n].value = nla_get_u64(tb[FKV_CA_STAT_VALUE]);
	(*n)++;
	return 0;
}

static int decode_node(struct nlattr *nest, struct ctl_cnode *nd)
{
	struct nlattr *tb[FKV_CA_MAX + 1], *a;
	int rem;

	if (nla_parse_nested(tb, FKV_CA_MAX, nest,
			     (struct nla_policy *)top_policy) < 0 ||
	    !tb[FKV_CA_NODE_ID] || !tb[FKV_CA_NODE_NAME])
		return -EPROTO;
	memset(nd, 0, sizeof(*nd));
	nd->id = nla_get_u32(tb[FKV_CA_NODE_ID]);
	copy_str(nd->name, sizeof(nd->name), tb[FKV_CA_NODE_NAME]);
	nd->live = tb[FKV_CA_LIVE] && nla_get_u32(tb[FKV_CA_LIVE]);
	if (tb[FLUXONKV_A_INCARNATION])
		nd->incarnation = nla_get_u64(tb[FLUXONKV_A_INCARNATION]);
	copy_str(nd->addr, sizeof(nd->addr), tb[FKV_CA_DATA_ADDR]);
	copy_str(nd->transport, sizeof(nd->transport), tb[FKV_CA_TRANSPORT]);
	copy_str(nd->left_reason, sizeof(nd->left_reason),
		 tb[FKV_CA_LEFT_REASON]);
	if (tb[FLUXONKV_A_SEGMENT_SIZE])
		nd->segment_size = nla_get_u64(tb[FLUXONKV_A_SEGMENT_SIZE]);
	if (tb[FLUXONKV_A_SEGMENT_USED])
		nd->segment_used = nla_get_u64(tb[FLUXONKV_A_SEGMENT_USED]);
	if (tb[FLUXONKV_A_SSD_CAPACITY])
		nd->ssd_capacity = nla_get_u64(tb[FLUXONKV_A_SSD_CAPACITY]);
	nla_for_each_nested(a, nest, rem)
		if (nla_type(a) == FKV_CA_STAT &&
		    decode_stat(a, nd->st, &nd->nst, CTL_CLUSTER_NODE_STATS))
			return -EPROTO;
	return 0;
}

static int decode_cand(struct nlattr *nest, struct ctl_ccand *cd)
{
	struct nlattr *tb[FKV_CA_MAX + 1];

	if (nla_parse_nested(tb, FKV_CA_MAX, nest,
			     (struct nla_policy *)top_policy) < 0 ||
	    !tb[FKV_CA_NODE_NAME] || !tb[FKV_CA_MASTER])
		return -EPROTO;
	copy_str(cd->name, sizeof(cd->name), tb[FKV_CA_NODE_NAME]);
	copy_str(cd->addr, sizeof(cd->addr), tb[FKV_CA_MASTER]);
	return 0;
}

static int decode_tenant_nest(struct nlattr *nest, struct ctl_ctenant *t)
{
	struct nlattr *tb[FKV_CA_MAX + 1], *a;
	int rem;

	if (nla_parse_nested(tb, FKV_CA_MAX, nest,
			     (struct nla_policy *)top_policy) < 0 ||
	    !tb[FKV_CA_TENANT_ID] || !tb[FKV_CA_TENANT_NAME])
		return -EPROTO;
	memset(t, 0, sizeof(*t));
	t->id = nla_get_u32(tb[FKV_CA_TENANT_ID]);
	copy_str(t->name, sizeof(t->name), tb[FKV_CA_TENANT_NAME]);
	if (!t->name[0])
		return -EPROTO;
	nla_for_each_nested(a, nest, rem)
		if (nla_type(a) == FKV_CA_STAT &&
		    decode_stat(a, t->st, &t->nst, CTL_TENANT_STATS))
			return -EPROTO;
	return 0;
}

int ctl_cluster_decode(struct nlmsghdr *nlh, struct ctl_cluster *c)
{
	struct nlattr *tb[FKV_CA_MAX + 1], *a;
	int rem;

	memset(c, 0, sizeof(*c));
	if (fkv_wire_cmd(nlh) != FKV_CCMD_STATS ||
	    fkv_wire_parse(nlh, tb, top_policy) || !tb[FKV_CA_ROLE])
		return -EPROTO;
	copy_str(c->role, sizeof(c->role), tb[FKV_CA_ROLE]);
	copy_str(c->name, sizeof(c->name), tb[FKV_CA_NODE_NAME]);
	copy_str(c->master, sizeof(c->master), tb[FKV_CA_MASTER]);
	copy_str(c->transport, sizeof(c->transport), tb[FKV_CA_TRANSPORT]);
	if (tb[FKV_CA_NODE_ID])
		c->id = nla_get_u32(tb[FKV_CA_NODE_ID]);
	if (tb[FLUXONKV_A_INCARNATION])
		c->incarnation = nla_get_u64(tb[FLUXONKV_A_INCARNATION]);
	nlmsg_for_each_attr(a, nlh, GENL_HDRLEN, rem) {
		if (nla_type(a) == FKV_CA_STAT &&
		    decode_stat(a, c->st, &c->nst, CTL_CLUSTER_STATS))
			return -EPROTO;
		if (nla_type(a) == FKV_CA_NODE &&
		    c->nnodes < FKV_MEMBERS_MAX_CTL) {
			if (decode_node(a, &c->nodes[c->nnodes]))
				return -EPROTO;
			c->nnodes++;
		}
		if (nla_type(a) == FKV_CA_CANDIDATE &&
		    c->ncands < CTL_CLUSTER_CANDS) {
			if (decode_cand(a, &c->cands[c->ncands]))
				return -EPROTO;
			c->ncands++;
		}
		if (nla_type(a) == FKV_CA_TENANT &&
		    c->ntenants < CTL_TENANTS_MAX) {
			if (decode_tenant_nest(a, &c->tenants[c->ntenants]))
				return -EPROTO;
			c->ntenants++;
		}
	}
	return 0;
}

/*
 * Send @msg (freed here) to the daemon's control socket at @path and hand
 * the first answer to @decode; at most @timeout_ms in all.
 */
int ctl_control_call(const char *path, int timeout_ms, struct nl_msg *msg,
		     int (*decode)(struct nlmsghdr *nlh, void *arg), void *arg)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct fkv_wire w;
	struct nlmsghdr *nlh;
	struct timespec t0, t;
	int fd, err;

	if (!msg)
		return -ENOMEM;
	if (!path)
		path = getenv(CTL_CONTROL_ENV);
	if (!path || !path[0])
		path = FKV_CONTROL_PATH;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		err = -ENAMETOOLONG;
		goto out_free;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto out_free;
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = -errno;
		close(fd);
		goto out_free;
	}
	fkv_wire_init(&w, fd);
	w.rx_max = FKV_WIRE_STATS_MAX;	/* every member's statistics */
	err = fkv_wire_send(&w, msg);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!err) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long ms;

		if (fkv_wire_pending(&w)) {
			pfd.events |= POLLOUT;
			err = fkv_wire_flush(&w);
			if (err == -EAGAIN)
				err = 0;
		}
		nlh = fkv_wire_next(&w, &err);
		if (nlh) {
			err = decode(nlh, arg);
			break;
		}
		if (err)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1000 +
		     (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= timeout_ms) {
			err = -ETIMEDOUT;
			break;
		}
		if (poll(&pfd, 1, (int)(timeout_ms - ms)) < 0 && errno != EINTR)
			err = -errno;
		else if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
			err = fkv_wire_read(&w);
		if (err == -EAGAIN)
			err = 0;
		else if (err == -EPIPE)
			err = -EPROTO;	/* closed without an answer */
	}
	fkv_wire_close(&w);
out_free:
	nlmsg_free(msg);
	return err;
}

static int decode_stats(struct nlmsghdr *nlh, void *arg)
{
	return ctl_cluster_decode(nlh, arg);
}

int ctl_cluster_query(const char *path, int timeout_ms, struct ctl_cluster *c)
{
	return ctl_control_call(path, timeout_ms, fkv_wire_msg(FKV_CCMD_STATS),
				decode_stats, c);
}

/* The attributes an answer to CLEAR or TENANT may carry. */
static const struct nla_policy answer_policy[FKV_CA_MAX + 1] = {
	[FLUXONKV_A_STATUS] = { .type = NLA_U32 },
	[FKV_CA_COUNT] = { .type = NLA_U64 },
	[FKV_CA_TENANT_ID] = { .type = NLA_U32 },
	[FKV_CA_MESSAGE] = { .type = NLA_STRING, .maxlen = 512 },
};

/* What a CLEAR or TENANT answer fills: its one value and the reason. */
struct value_answer {
	uint8_t cmd;		/* the command answered */
	int value_attr;		/* FKV_CA_COUNT or FKV_CA_TENANT_ID */
	uint64_t value;
	char *why;
	size_t why_len;
};

/*
 * An answer {STATUS, MESSAGE, and on 0 the value}: 0, the daemon's
 * -errno, or -EPROTO.
 */
static int decode_value(struct nlmsghdr *nlh, void *arg)
{
	struct nlattr *tb[FKV_CA_MAX + 1], *v;
	struct value_answer *a = arg;
	int status;

	if (fkv_wire_cmd(nlh) != a->cmd ||
	    fkv_wire_parse(nlh, tb, answer_policy) || !tb[FLUXONKV_A_STATUS])
		return -EPROTO;
	status = (int32_t)nla_get_u32(tb[FLUXONKV_A_STATUS]);
	if (tb[FKV_CA_MESSAGE])
		snprintf(a->why, a->why_len, "%s",
			 nla_get_string(tb[FKV_CA_MESSAGE]));
	if (status > 0)
		return -EPROTO;
	if (status == -ENOENT && a->cmd == FKV_CCMD_TENANT)
		return -ESRCH;	/* no such tenant; -ENOENT: no daemon there */
	if (status)
		return status;
	v = tb[a->value_attr];
	if (!v)
		return -EPROTO;
	a->value = a->value_attr == FKV_CA_COUNT ? nla_get_u64(v) :
						   nla_get_u32(v);
	return 0;
}

/* @msg (NULL if building it failed) to the daemon, its answer into @a. */
static int value_call(const char *path, int timeout_ms, struct nl_msg *msg,
		      struct value_answer *a)
{
	if (a->why_len)
		a->why[0] = '\0';
	return ctl_control_call(path, timeout_ms, msg, decode_value, a);
}

int ctl_clear(const char *path, int timeout_ms, uint32_t tenant,
	      const char *pattern, uint64_t *removed, char *why,
	      size_t why_len)
{
	struct value_answer a = { FKV_CCMD_CLEAR, FKV_CA_COUNT, 0, why,
				  why_len };
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_CLEAR);
	int err;

	if (msg && ((pattern && nla_put_string(msg, FKV_CA_PATTERN, pattern)) ||
		    (tenant && nla_put_u32(msg, FKV_CA_TENANT_ID, tenant)))) {
		nlmsg_free(msg);
		msg = NULL;
	}
	err = value_call(path, timeout_ms, msg, &a);
	if (!err)
		*removed = a.value;
	return err;
}

int ctl_tenant_id(const char *path, int timeout_ms, const char *name,
		  uint32_t *id, char *why, size_t why_len)
{
	struct value_answer a = { FKV_CCMD_TENANT, FKV_CA_TENANT_ID, 0, why,
				  why_len };
	struct nl_msg *msg = fkv_wire_msg(FKV_CCMD_TENANT);
	int err;

	if (msg && nla_put_string(msg, FKV_CA_TENANT_NAME, name)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	err = value_call(path, timeout_ms, msg, &a);
	if (!err && a.value > FLUXONKV_TENANT_ID_MAX)
		return -EPROTO;
	if (!err)
		*id = (uint32_t)a.value;
	return err;
}

const struct ctl_cstat *ctl_cluster_stat(const struct ctl_cstat *st,
					 unsigned int n, const char *name)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!strcmp(st[i].name, name))
			return &st[i];
	return NULL;
}

static uint64_t stat_of(const struct ctl_cstat *st, unsigned int n,
			const char *name)
{
	const struct ctl_cstat *s = ctl_cluster_stat(st, n, name);

	return s ? s->value : 0;
}

void ctl_render_cluster_human(FILE *f, const struct ctl_cluster *c)
{
	char a[32], b[32], d[32];
	unsigned int i;

	if (!strcmp(c->role, "single")) {
		fprintf(f, "cluster:  none (single node; no cluster: section in "
			"the configuration)\n");
		return;
	}
	fprintf(f, "cluster:  %s role, node '%s' (id %u, incarnation %#llx), "
		"master %s, transport %s\n", c->role, c->name, c->id,
		(unsigned long long)c->incarnation, c->master, c->transport);
	if (!strcmp(c->role, "node"))
		fprintf(f, "joined:   %s\n",
			stat_of(c->st, c->nst, "joined") ? "yes" : "no (gets fail "
			"until the master is reachable)");
	/* Elected on etcd (cluster.md, "Master failover on etcd"). */
	if (ctl_cluster_stat(c->st, c->nst, "etcd_healthy"))
		fprintf(f, "election: etcd %s; %s, term %llu; %s; %llu won, "
			"%llu step-downs, %llu leader changes, %llu etcd errors, "
			"last failover %llu ms\n",
			stat_of(c->st, c->nst, "etcd_healthy") ? "answering"
							       : "NOT ANSWERING",
			stat_of(c->st, c->nst, "etcd_leader_self")
				? "this node leads" : "the master above leads",
			(unsigned long long)stat_of(c->st, c->nst, "etcd_term"),
			stat_of(c->st, c->nst, "etcd_master_candidate")
				? "a candidate" : "not a candidate",
			(unsigned long long)stat_of(c->st, c->nst,
						    "etcd_elections_won"),
			(unsigned long long)stat_of(c->st, c->nst, "etcd_stepdowns"),
			(unsigned long long)stat_of(c->st, c->nst,
						    "etcd_leader_changes"),
			(unsigned long long)stat_of(c->st, c->nst, "etcd_errors"),
			(unsigned long long)stat_of(c->st, c->nst,
						    "etcd_failover_ms"));
	if (c->ncands) {
		fprintf(f, "candidates:");
		for (i = 0; i < c->ncands; i++)
			fprintf(f, "%s %s (%s)", i ? "," : "", c->cands[i].name,
				c->cands[i].addr);
		fprintf(f, "\n");
	}
	if (c->nnodes) {
		fprintf(f, "%-3s %-14s %-5s %-18s %-22s %-5s %-21s %-10s %8s %8s\n",
			"ID", "NAME", "STATE", "INCARNATION", "DATA ADDRESS",
			"XPORT", "DRAM USED/CAPACITY", "SSD", "REPLICAS",
			"SERVED");
		for (i = 0; i < c->nnodes; i++) {
			const struct ctl_cnode *n = &c->nodes[i];
			char dram[48];

			snprintf(dram, sizeof(dram), "%s/%s",
				 ctl_format_size(n->segment_used, a, sizeof(a)),
				 ctl_format_size(n->segment_size, b, sizeof(b)));
			fprintf(f, "%-3u %-14s %-5s %#-18llx %-22s %-5s %-21s "
				"%-10s %8llu %8llu\n", n->id, n->name,
				n->live ? "live" : "left",
				(unsigned long long)n->incarnation,
				n->addr[0] ? n->addr : "-", n->transport, dram,
				ctl_format_size(n->ssd_capacity, d, sizeof(d)),
				(unsigned long long)stat_of(n->st, n->nst, "replicas"),
				(unsigned long long)stat_of(n->st, n->nst,
							    "served_gets"));
			if (!n->live && n->left_reason[0])
				fprintf(f, "    left: %s\n", n->left_reason);
		}
	}
	fprintf(f, "remote:   %llu pulls (%s), %llu served (%s), %llu SSD pushes "
		"(%llu chunks, %s), %llu pull errors, %llu push errors\n",
		(unsigned long long)stat_of(c->st, c->nst, "remote_pulls"),
		ctl_format_size(stat_of(c->st, c->nst, "remote_pull_bytes"), a,
				sizeof(a)),
		(unsigned long long)stat_of(c->st, c->nst, "served_pulls"),
		ctl_format_size(stat_of(c->st, c->nst, "served_pull_bytes"), b,
				sizeof(b)),
		(unsigned long long)stat_of(c->st, c->nst, "ssd_pushes"),
		(unsigned long long)stat_of(c->st, c->nst, "ssd_push_chunks"),
		ctl_format_size(stat_of(c->st, c->nst, "ssd_push_bytes"), d,
				sizeof(d)),
		(unsigned long long)stat_of(c->st, c->nst, "remote_pull_errors"),
		(unsigned long long)stat_of(c->st, c->nst, "ssd_push_errors"));
	fprintf(f, "members:  %llu joins, %llu refused, %llu member-left, "
		"%llu revokes of remote sources\n",
		(unsigned long long)stat_of(c->st, c->nst, "member_joins"),
		(unsigned long long)stat_of(c->st, c->nst, "member_refused"),
		(unsigned long long)stat_of(c->st, c->nst, "member_left"),
		(unsigned long long)(stat_of(c->st, c->nst, "master_remote_revoked") +
				     stat_of(c->st, c->nst, "master_ssd_revoked")));
}

void ctl_render_cluster_json(FILE *f, const struct ctl_cluster *c)
{
	struct ctl_json j;
	unsigned int i, k;

	ctl_json_init(&j, f);
	ctl_json_open(&j, NULL);
	ctl_json_str(&j, "role", c->role);
	if (strcmp(c->role, "single")) {
		ctl_json_str(&j, "node", c->name);
		ctl_json_u64(&j, "id", c->id);
		ctl_json_u64(&j, "incarnation", c->incarnation);
		ctl_json_str(&j, "master", c->master);
		ctl_json_str(&j, "transport", c->transport);
	}
	ctl_json_open(&j, "stats");
	for (i = 0; i < c->nst; i++)
		ctl_json_u64(&j, c->st[i].name, c->st[i].value);
	ctl_json_close(&j);
	ctl_json_array_open(&j, "nodes");
	for (i = 0; i < c->nnodes; i++) {
		const struct ctl_cnode *n = &c->nodes[i];

		ctl_json_open(&j, NULL);
		ctl_json_u64(&j, "id", n->id);
		ctl_json_str(&j, "name", n->name);
		ctl_json_bool(&j, "live", n->live);
		ctl_json_u64(&j, "incarnation", n->incarnation);
		ctl_json_str(&j, "address", n->addr);
		ctl_json_str(&j, "transport", n->transport);
		ctl_json_u64(&j, "segment_capacity_bytes", n->segment_size);
		ctl_json_u64(&j, "segment_used_bytes", n->segment_used);
		ctl_json_u64(&j, "ssd_capacity_bytes", n->ssd_capacity);
		if (n->left_reason[0])
			ctl_json_str(&j, "last_left", n->left_reason);
		for (k = 0; k < n->nst; k++)
			ctl_json_u64(&j, n->st[k].name, n->st[k].value);
		ctl_json_close(&j);
	}
	ctl_json_array_close(&j);
	if (c->ncands) {
		ctl_json_array_open(&j, "candidates");
		for (i = 0; i < c->ncands; i++) {
			ctl_json_open(&j, NULL);
			ctl_json_str(&j, "name", c->cands[i].name);
			ctl_json_str(&j, "address", c->cands[i].addr);
			ctl_json_close(&j);
		}
		ctl_json_array_close(&j);
	}
	ctl_json_close(&j);
}

/* Counters end in _total in Prometheus; these names are gauges. */
static bool is_gauge(const char *name)
{
	static const char *const gauges[] = {
		"joined", "registered", "master_routes", "master_inflight",
		"master_holds",
		"master_ssd_replicas", "master_ssd_bytes", "replicas",
		"module_segment_used", "seen_ms_ago",
	};
	size_t i;

	for (i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++)
		if (!strcmp(name, gauges[i]))
			return true;
	return false;
}

static void prom_series(FILE *f, const char *prefix, const char *name,
			uint64_t v)
{
	bool gauge = is_gauge(name);

	fprintf(f, "# TYPE %s_%s%s %s\n%s_%s%s %llu\n", prefix, name,
		gauge ? "" : "_total", gauge ? "gauge" : "counter", prefix, name,
		gauge ? "" : "_total", (unsigned long long)v);
}

void ctl_render_cluster_prometheus(FILE *f, const struct ctl_cluster *c)
{
	static const char *const node_gauges[] = {
		"up", "segment_capacity_bytes", "segment_used_bytes",
		"ssd_capacity_bytes",
	};
	char labels[160];
	unsigned int i, k;

	for (i = 0; i < c->nst; i++)
		prom_series(f, "fluxond", c->st[i].name, c->st[i].value);
	if (c->ncands)
		fprintf(f, "# HELP fluxonkv_cluster_candidate 1 for each master "
			"candidate etcd lists.\n"
			"# TYPE fluxonkv_cluster_candidate gauge\n");
	for (i = 0; i < c->ncands; i++)
		fprintf(f, "fluxonkv_cluster_candidate{node=\"%s\",address=\"%s\"} 1\n",
			c->cands[i].name, c->cands[i].addr);
	for (k = 0; k < sizeof(node_gauges) / sizeof(node_gauges[0]); k++) {
		fprintf(f, "# HELP fluxonkv_cluster_node_%s %s\n"
			"# TYPE fluxonkv_cluster_node_%s gauge\n", node_gauges[k],
			k == 0 ? "1 while the node is a live member." :
			k == 1 ? "DRAM segment bytes the node offers." :
			k == 2 ? "DRAM bytes of the node's replicas the master accounts." :
			"SSD tier bytes of the node (0 = none).",
			node_gauges[k]);
		for (i = 0; i < c->nnodes; i++) {
			const struct ctl_cnode *n = &c->nodes[i];
			uint64_t v = k == 0 ? n->live : k == 1 ? n->segment_size :
				     k == 2 ? n->segment_used : n->ssd_capacity;

			/* Names and addresses are validated: no quoting. */
			fprintf(f, "fluxonkv_cluster_node_%s{node=\"%s\",id=\"%u\"} "
				"%llu\n", node_gauges[k], n->name, n->id,
				(unsigned long long)v);
		}
	}
	/* One family per statistic, every node's value under it. */
	for (k = 0; c->nnodes && k < c->nodes[0].nst; k++) {
		const char *name = c->nodes[0].st[k].name;
		bool gauge = is_gauge(name);

		fprintf(f, "# TYPE fluxonkv_cluster_node_%s%s %s\n", name,
			gauge ? "" : "_total", gauge ? "gauge" : "counter");
		for (i = 0; i < c->nnodes; i++) {
			const struct ctl_cnode *n = &c->nodes[i];
			const struct ctl_cstat *s = ctl_cluster_stat(n->st, n->nst,
								     name);

			if (!s)
				continue;
			snprintf(labels, sizeof(labels), "{node=\"%s\",id=\"%u\"}",
				 n->name, n->id);
			fprintf(f, "fluxonkv_cluster_node_%s%s%s %llu\n", name,
				gauge ? "" : "_total", labels,
				(unsigned long long)s->value);
		}
	}
}

/* ---- tenants (issue 30) ------------------------------------------------ */

const struct ctl_ctenant *ctl_cluster_tenant(const struct ctl_cluster *c,
					     const char *name)
{
	unsigned int i;

	for (i = 0; i < c->ntenants; i++)
		if (!strcmp(c->tenants[i].name, name))
			return &c->tenants[i];
	return NULL;
}

static bool tenant_shown(const struct ctl_ctenant *t, const char *only)
{
	return !only || !strcmp(t->name, only);
}

/* The statistics of a tenant, in the order shown; gauges first. */
static const struct {
	const char *name;
	bool gauge;
	const char *help;
} tenant_stats[] = {
	{ "keys", true, "Keys of the tenant the master routes." },
	{ "dram_bytes", true, "DRAM bytes of the tenant's replicas (eviction weights, every node)." },
	{ "ssd_bytes", true, "SSD bytes of the tenant's replicas." },
	{ "dram_quota_bytes", true, "The tenant's DRAM quota (absent: none)." },
	{ "ssd_quota_bytes", true, "The tenant's SSD quota (absent: none)." },
	{ "puts", false, "Puts of the tenant the master saw." },
	{ "gets", false, "Gets of the tenant the master answered." },
	{ "mem_hits", false, "Of them, served from the asking node's DRAM." },
	{ "ssd_hits", false, "Of them, served from the asking node's SSD." },
	{ "remote_hits", false, "Of them, served from another node (DRAM or SSD)." },
	{ "misses", false, "Of them, misses." },
	{ "quota_evictions", false, "DRAM replicas evicted for the tenant's DRAM quota." },
	{ "quota_ssd_drops", false, "SSD copies unrouted for the tenant's SSD quota." },
};
#define NTENANT_STATS	(sizeof(tenant_stats) / sizeof(tenant_stats[0]))

void ctl_render_tenants_human(FILE *f, const struct ctl_cluster *c,
			      const char *only)
{
	char b[4][CTL_SIZE_BUFLEN];
	unsigned int i;

	fprintf(f, "%-20s %5s %8s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s\n",
		"TENANT", "ID", "KEYS", "DRAM", "DRAM_QUOTA", "SSD",
		"SSD_QUOTA", "PUTS", "GETS", "MEM_HITS", "SSD_HITS", "REMOTE",
		"MISSES", "Q_EVICTED", "Q_SSD_DROP");
	for (i = 0; i < c->ntenants; i++) {
		const struct ctl_ctenant *t = &c->tenants[i];
		const struct ctl_cstat *dq, *sq;

		if (!tenant_shown(t, only))
			continue;
		dq = ctl_cluster_stat(t->st, t->nst, "dram_quota_bytes");
		sq = ctl_cluster_stat(t->st, t->nst, "ssd_quota_bytes");
		fprintf(f, "%-20s %5u %8llu %10s %10s %10s %10s %10llu %10llu %10llu %10llu %10llu %10llu %10llu %10llu\n",
			t->name, t->id,
			(unsigned long long)stat_of(t->st, t->nst, "keys"),
			ctl_format_size(stat_of(t->st, t->nst, "dram_bytes"),
					b[0], sizeof(b[0])),
			dq ? ctl_format_size(dq->value, b[1], sizeof(b[1])) : "-",
			ctl_format_size(stat_of(t->st, t->nst, "ssd_bytes"),
					b[2], sizeof(b[2])),
			sq ? ctl_format_size(sq->value, b[3], sizeof(b[3])) : "-",
			(unsigned long long)stat_of(t->st, t->nst, "puts"),
			(unsigned long long)stat_of(t->st, t->nst, "gets"),
			(unsigned long long)stat_of(t->st, t->nst, "mem_hits"),
			(unsigned long long)stat_of(t->st, t->nst, "ssd_hits"),
			(unsigned long long)stat_of(t->st, t->nst, "remote_hits"),
			(unsigned long long)stat_of(t->st, t->nst, "misses"),
			(unsigned long long)stat_of(t->st, t->nst,
						    "quota_evictions"),
			(unsigned long long)stat_of(t->st, t->nst,
						    "quota_ssd_drops"));
	}
}

void ctl_render_tenants_json(FILE *f, const struct ctl_cluster *c,
			     const char *only)
{
	struct ctl_json j;
	unsigned int i, k;

	ctl_json_init(&j, f);
	ctl_json_open(&j, NULL);
	ctl_json_array_open(&j, "tenants");
	for (i = 0; i < c->ntenants; i++) {
		const struct ctl_ctenant *t = &c->tenants[i];

		if (!tenant_shown(t, only))
			continue;
		ctl_json_open(&j, NULL);
		ctl_json_str(&j, "name", t->name);
		ctl_json_u64(&j, "id", t->id);
		for (k = 0; k < NTENANT_STATS; k++) {
			const struct ctl_cstat *s;

			s = ctl_cluster_stat(t->st, t->nst,
					     tenant_stats[k].name);
			if (s)
				ctl_json_u64(&j, s->name, s->value);
			else
				ctl_json_null(&j, tenant_stats[k].name);
		}
		ctl_json_close(&j);
	}
	ctl_json_array_close(&j);
	ctl_json_close(&j);
}

/* @s as a Prometheus label value (\\, \" and \n escaped). */
static void prom_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

void ctl_render_tenants_prometheus(FILE *f, const struct ctl_cluster *c,
				   const char *only)
{
	unsigned int i, k;

	for (k = 0; k < NTENANT_STATS; k++) {
		const char *name = tenant_stats[k].name;
		const char *sfx = tenant_stats[k].gauge ? "" : "_total";
		bool any = false;

		for (i = 0; i < c->ntenants; i++) {
			const struct ctl_ctenant *t = &c->tenants[i];
			const struct ctl_cstat *s;

			s = ctl_cluster_stat(t->st, t->nst, name);
			if (!s || !tenant_shown(t, only))
				continue;
			if (!any)
				fprintf(f, "# HELP fluxonkv_tenant_%s%s %s\n"
					"# TYPE fluxonkv_tenant_%s%s %s\n",
					name, sfx, tenant_stats[k].help, name,
					sfx, tenant_stats[k].gauge ?
					"gauge" : "counter");
			any = true;
			fprintf(f, "fluxonkv_tenant_%s%s{tenant=\"", name, sfx);
			prom_label(f, t->name);
			fprintf(f, "\",id=\"%u\"} %llu\n", t->id,
				(unsigned long long)s->value);
		}
	}
}
