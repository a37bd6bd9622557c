// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl cluster: fluxond's view of the cluster, from its control
 * socket (ctl_cluster.c); fluxonctl clear: remove keys through its master.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl_cluster.h"
#include "ctl.h"

int ctl_cmd_cluster(const struct ctl_opts *o)
{
	static struct ctl_cluster c;	/* large: not on the stack */
	int err;

	err = ctl_cluster_query(NULL, 3000, &c);
	if (err == -ENOENT || err == -ECONNREFUSED) {
		fprintf(stderr, "fluxonctl cluster: fluxond is not running here "
			"(no control socket; see fluxond --control)\n");
		return CTL_EXIT_ABSENT;
	}
	if (err) {
		fprintf(stderr, "fluxonctl cluster: %s\n", strerror(-err));
		return CTL_EXIT_ERROR;
	}
	if (o->json)
		ctl_render_cluster_json(stdout, &c);
	else if (o->prometheus)
		ctl_render_cluster_prometheus(stdout, &c);
	else
		ctl_render_cluster_human(stdout, &c);
	return fflush(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}

int ctl_cmd_tenants(const struct ctl_opts *o)
{
	static struct ctl_cluster c;	/* large: not on the stack */
	int err;

	err = ctl_cluster_query(NULL, 3000, &c);
	if (err == -ENOENT || err == -ECONNREFUSED) {
		fprintf(stderr, "fluxonctl tenants: fluxond is not running here "
			"(no control socket; see fluxond --control)\n");
		return CTL_EXIT_ABSENT;
	}
	if (err) {
		fprintf(stderr, "fluxonctl tenants: %s\n", strerror(-err));
		return CTL_EXIT_ERROR;
	}
	/* tenant 0 is always there when a master answers */
	if (!c.ntenants) {
		fprintf(stderr, "fluxonctl tenants: this fluxond runs no master "
			"(role %s): ask on the master's host\n", c.role);
		return CTL_EXIT_ERROR;
	}
	if (o->tenant && !ctl_cluster_tenant(&c, o->tenant)) {
		fprintf(stderr, "fluxonctl tenants: no tenant \"%s\" in the "
			"master's statistics (not configured, and no key of "
			"it)\n", o->tenant);
		return CTL_EXIT_ERROR;
	}
	if (o->json)
		ctl_render_tenants_json(stdout, &c, o->tenant);
	else if (o->prometheus)
		ctl_render_tenants_prometheus(stdout, &c, o->tenant);
	else
		ctl_render_tenants_human(stdout, &c, o->tenant);
	return fflush(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}

/* A clear of millions of keys takes its time: the master deletes each. */
#define CTL_CLEAR_TIMEOUT_MS	120000

int ctl_cmd_clear(const struct ctl_opts *o)
{
	char why[256];
	uint64_t removed = 0;
	uint32_t tenant = 0;
	int err = 0;

	if (o->tenant)
		err = ctl_tenant_id(NULL, 3000, o->tenant, &tenant, why,
				    sizeof(why));
	if (err == -ESRCH) {
		fprintf(stderr, "fluxonctl clear: %s\n", why[0] ? why :
			"no such tenant in fluxond's configuration");
		return CTL_EXIT_ERROR;
	}
	if (!err)
		err = ctl_clear(NULL, CTL_CLEAR_TIMEOUT_MS, tenant, o->regex,
				&removed, why, sizeof(why));
	if (err == -ENOENT || err == -ECONNREFUSED) {
		fprintf(stderr, "fluxonctl clear: fluxond is not running here "
			"(no control socket; see fluxond --control)\n");
		return CTL_EXIT_ABSENT;
	}
	if (err) {
		fprintf(stderr, "fluxonctl clear: %s%s%s\n",
			why[0] ? why : strerror(-err),
			o->regex && err == -EINVAL ? ": " : "",
			o->regex && err == -EINVAL ? o->regex : "");
		return CTL_EXIT_ERROR;
	}
	if (o->json)
		printf("{\"removed\":%llu}\n", (unsigned long long)removed);
	else
		printf("removed %llu key%s\n", (unsigned long long)removed,
		       removed == 1 ? "" : "s");
	return fflush(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}
