// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_sysfs: read /sys/kernel/fluxonkv/ (or $FLUXONKV_SYSFS) for fluxonctl.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_sysfs.h"

const struct ctl_stat_def ctl_stat_defs[] = {
	{ "version", CTL_STAT_LABEL, true, false, NULL,
	  "Version of the loaded fluxonkv module." },
	{ "abi_version", CTL_STAT_LABEL, false, false, NULL,
	  "ABI version of /dev/fluxonkv and the netlink family." },
	{ "segment_capacity_bytes", CTL_STAT_GAUGE, false, true,
	  "kvcache_segment_capacity_bytes",
	  "Size of the DRAM segment in bytes." },
	{ "segment_used_bytes", CTL_STAT_GAUGE, false, true,
	  "kvcache_segment_used_bytes",
	  "Bytes of the DRAM segment currently allocated." },
	{ "daemon_pid", CTL_STAT_GAUGE, false, false, NULL,
	  "PID of the registered fluxond daemon (0 = none)." },
	{ "replicas", CTL_STAT_GAUGE, false, false, NULL,
	  "DRAM replicas currently held by the module." },
	{ "holders", CTL_STAT_GAUGE, false, false, NULL,
	  "Holders (pinned views) currently granted to clients." },
	{ "puts", CTL_STAT_COUNTER, false, false, NULL,
	  "Puts completed." },
	{ "gets", CTL_STAT_COUNTER, false, false, NULL,
	  "Gets requested." },
	{ "hits_memory", CTL_STAT_COUNTER, false, false, NULL,
	  "Gets served from a DRAM replica." },
	{ "hits_ssd", CTL_STAT_COUNTER, false, false, NULL,
	  "Gets refilled from the SSD tier." },
	{ "hits_remote", CTL_STAT_COUNTER, false, false, NULL,
	  "Gets served from another node (pulled from its DRAM or pushed from its SSD)." },
	{ "fetches", CTL_STAT_COUNTER, false, false, NULL,
	  "Remote transfers the module asked the daemon for (FETCH)." },
	{ "fetch_errors", CTL_STAT_COUNTER, false, false, NULL,
	  "Remote transfers that failed (source revoked, get re-selected)." },
	{ "fetch_abandoned", CTL_STAT_COUNTER, false, false, NULL,
	  "Gets that gave up waiting for a remote transfer (its target stays until the daemon answers or the transfer expires)." },
	{ "fetch_expired", CTL_STAT_COUNTER, false, false, NULL,
	  "Abandoned remote transfers the daemon did not answer by their deadline (target freed, late answer refused)." },
	{ "misses", CTL_STAT_COUNTER, false, false, NULL,
	  "Gets that found no value." },
	{ "local_misses", CTL_STAT_COUNTER, false, false, NULL,
	  "Misses the module answered from its own index (no upcall)." },
	{ "local_refills", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD refills the module started from its own index (no GET_START)." },
	{ "refills_async", CTL_STAT_COUNTER, false, false, NULL,
	  "Of those, io_uring gets completed from the read's end (no io-wq worker waiting)." },
	{ "local_unsure", CTL_STAT_COUNTER, false, false, NULL,
	  "Local misses the module asked the daemon about (a put or removal overlapped)." },
	{ "lease_refused", CTL_STAT_COUNTER, false, false, NULL,
	  "Local hits refused because the master's lease had run out (the master was asked)." },
	{ "hits_alone", CTL_STAT_COUNTER, false, false, NULL,
	  "Local hits served without a daemon, on the lease of a master that went." },
	{ "promotions", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD refills the daemon made the DRAM replica." },
	{ "promotions_refused", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD refills that stayed a temporary holder." },
	{ "deletes", CTL_STAT_COUNTER, false, false, NULL,
	  "Deletes that removed a key." },
	{ "evictions", CTL_STAT_COUNTER, false, false, NULL,
	  "Replicas the daemon evicted to make room." },
	{ "replica_drops", CTL_STAT_COUNTER, false, false, NULL,
	  "Replicas the daemon dropped (eviction, overwrite or delete)." },
	{ "upcall_timeouts", CTL_STAT_COUNTER, false, false, NULL,
	  "Upcalls the daemon did not answer in time." },
	{ "puts_abandoned", CTL_STAT_COUNTER, false, false, NULL,
	  "Puts whose caller stopped waiting for the daemon (PUT_START given back; PUT_DONE: its answer decides)." },
	{ "puts_local", CTL_STAT_COUNTER, false, false, NULL,
	  "Puts the module published itself, without a daemon round trip (the master delegated them)." },
	{ "puts_one_trip", CTL_STAT_COUNTER, false, false, NULL,
	  "Puts the master numbered and published in one round trip (PUT, a cluster's master)." },
	{ "upcall_errors", CTL_STAT_COUNTER, false, false, NULL,
	  "Daemon answers for unknown or expired requests." },
	{ "send_waits", CTL_STAT_COUNTER, false, false, NULL,
	  "Messages to the daemon that found its socket full and waited for room." },
	{ "room_waits", CTL_STAT_COUNTER, false, false, NULL,
	  "Allocations that had to wait for room in the segment." },
	{ "room_by_address", CTL_STAT_COUNTER, false, false, NULL,
	  "Room asked for by naming the replicas filling a window (fragmented segment)." },
	{ "room_pinned", CTL_STAT_COUNTER, false, false, NULL,
	  "Room asks no eviction could answer (every window holds bytes no eviction frees)." },
	{ "compactions", CTL_STAT_COUNTER, false, false, NULL,
	  "Room made by moving values down into the holes between them instead of evicting." },
	{ "compacted_bytes", CTL_STAT_COUNTER, false, true, NULL,
	  "Bytes compaction moved (slides that made no run included)." },
	{ "compact_waits", CTL_STAT_COUNTER, false, false, NULL,
	  "Gets and persists that waited for a value being moved." },
	{ "clean_drops", CTL_STAT_COUNTER, false, false, NULL,
	  "Clean replicas (a routed SSD copy of the same version) the module dropped itself for room." },
	{ "clean_drop_bytes", CTL_STAT_COUNTER, false, false, NULL,
	  "Bytes of segment those clean drops gave back." },
	{ "clean_reserve_runs", CTL_STAT_COUNTER, false, false, NULL,
	  "Background passes that dropped clean replicas to keep the free reserve." },
	{ "dropped_notes_full", CTL_STAT_COUNTER, false, false, NULL,
	  "Clean drops refused because the master had not yet read 4096 earlier drop notes." },
	/* tenants (uapi.md "Tenants") */
	{ "faults_refused", CTL_STAT_COUNTER, false, false, NULL,
	  "Page faults refused (SIGBUS) outside the values the faulting tenant holds, while a tenant table isolates the segment." },
	{ "tenant_binds", CTL_STAT_COUNTER, false, false, NULL,
	  "Open descriptions bound to a tenant (FLUXONKV_IOC_TENANT)." },
	{ "tenant_binds_refused", CTL_STAT_COUNTER, false, false, NULL,
	  "Binds refused: no such tenant in the table, or the caller is not one of its uids or groups." },
	/* the SSD tier (reference section 2.4 names the two gauges) */
	{ "kv_ssd_capacity_bytes", CTL_STAT_GAUGE, false, true,
	  "kv_ssd_capacity_bytes",
	  "Bytes of SSD attached as the tier below DRAM (0 = no SSD tier)." },
	{ "kv_ssd_used_bytes", CTL_STAT_GAUGE, false, true,
	  "kv_ssd_used_bytes",
	  "Bytes of the SSD tier between the tail and head of its rings." },
	{ "ssd_writes", CTL_STAT_COUNTER, false, false, NULL,
	  "Values written to the SSD tier." },
	{ "ssd_write_bytes", CTL_STAT_COUNTER, false, true, NULL,
	  "Bytes written to the SSD tier (aligned lengths)." },
	{ "ssd_reads", CTL_STAT_COUNTER, false, false, NULL,
	  "Values read back from the SSD tier." },
	{ "ssd_read_bytes", CTL_STAT_COUNTER, false, true, NULL,
	  "Bytes read from the SSD tier (aligned lengths)." },
	{ "ssd_io_errors", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD reads and writes that failed with an IO error." },
	{ "ssd_persist_errors", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD writes that could not be done (IO error, no room behind busy entries)." },
	{ "ssd_evictions", CTL_STAT_COUNTER, false, false, NULL,
	  "Committed SSD entries overwritten at a ring tail." },
	{ "ssd_busy_waits", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD writes that waited for a pinned entry at a ring tail." },
	{ "ssd_queue_waits", CTL_STAT_COUNTER, false, false, NULL,
	  "Local puts that waited for room in a device's persist queue (64 queued)." },
	{ "ssd_commits_published", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD replicas the daemon published in the route." },
	{ "ssd_commits_ignored", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD replicas the daemon did not publish (the version was gone)." },
	{ "ssd_notices_dropped", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD eviction notices to the daemon lost (no memory or a full queue)." },
	{ "ssd_revokes", CTL_STAT_COUNTER, false, false, NULL,
	  "Gets whose source failed and was revoked from the route." },
	{ "ssd_unrouted", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD copies the master retired because another node overwrote or deleted the key." },
	{ "ssd_csum_errors", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD reads whose bytes failed their xxh64 (entry dropped, get re-selected)." },
	{ "kv_ssd_meta_bytes", CTL_STAT_GAUGE, false, true, NULL,
	  "Kernel memory the SSD entries take (capped by ssd_meta_max_kb)." },
	{ "ssd_meta_evictions", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD entries evicted early to stay within ssd_meta_max_kb." },
	{ "ssd_meta_refused", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD writes refused because other shards' entries hold ssd_meta_max_kb." },
	{ "ssd_shards_offline", CTL_STAT_COUNTER, false, false, NULL,
	  "SSD shards taken offline after repeated IO errors (capacity withdrawn)." },
	{ "ssd_shards_reclaimed", CTL_STAT_COUNTER, false, false, NULL,
	  "Offline SSD shards freed, their entries gone and their number free again." },
};
const size_t ctl_stat_ndefs = sizeof(ctl_stat_defs) / sizeof(ctl_stat_defs[0]);

int ctl_sysfs_init(struct ctl_sysfs *s)
{
	const char *dir = getenv(CTL_SYSFS_ENV);

	if (!dir || !*dir)
		dir = CTL_SYSFS_DEFAULT_DIR;
	if (strlen(dir) >= sizeof(s->dir))
		return -ENAMETOOLONG;
	strcpy(s->dir, dir);
	return 0;
}

bool ctl_sysfs_present(const struct ctl_sysfs *s)
{
	struct stat st;

	return stat(s->dir, &st) == 0 && S_ISDIR(st.st_mode);
}

int ctl_sysfs_read_str(const struct ctl_sysfs *s, const char *name,
		       char *buf, size_t len)
{
	char path[PATH_MAX + CTL_STAT_NAME_MAX];
	size_t got = 0;
	ssize_t n;
	int fd, err = 0;

	if (!len)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/%s", s->dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < len - 1) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (!n)
			break;
		got += n;
	}
	close(fd);
	if (err)
		return err;
	while (got && isspace((unsigned char)buf[got - 1]))
		got--;
	buf[got] = '\0';
	return 0;
}

/* Strictly one unsigned decimal number: no sign, no spaces, no overflow. */
static int ctl_parse_u64(const char *str, uint64_t *v)
{
	unsigned long long x;
	char *end;

	if (!isdigit((unsigned char)str[0]))
		return -EINVAL;
	errno = 0;
	x = strtoull(str, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

int ctl_sysfs_read_u64(const struct ctl_sysfs *s, const char *name,
		       uint64_t *v)
{
	char buf[32];
	int err;

	err = ctl_sysfs_read_str(s, name, buf, sizeof(buf));
	if (err)
		return err;
	return ctl_parse_u64(buf, v);
}

static const struct ctl_stat_def *ctl_stat_def_find(const char *name)
{
	size_t i;

	for (i = 0; i < ctl_stat_ndefs; i++)
		if (!strcmp(ctl_stat_defs[i].name, name))
			return &ctl_stat_defs[i];
	return NULL;
}

static void ctl_stat_read(const struct ctl_sysfs *s, struct ctl_stat *st)
{
	st->err = ctl_sysfs_read_str(s, st->name, st->str, sizeof(st->str));
	if (!st->err && !(st->def && st->def->is_string))
		st->err = ctl_parse_u64(st->str, &st->value);
}

/* Files a newer module may add: names fit for a metric, regular files. */
static int ctl_extra_filter(const struct dirent *d)
{
	const char *c;

	if (strlen(d->d_name) >= CTL_STAT_NAME_MAX)
		return 0;
	for (c = d->d_name; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			return 0;
	return !ctl_stat_def_find(d->d_name);
}

static void ctl_stats_load_extras(const struct ctl_sysfs *s,
				  struct ctl_stats *st)
{
	struct dirent **names;
	struct stat sb;
	char path[sizeof(s->dir) + sizeof(names[0]->d_name) + 1];
	int i, n, added = 0;

	n = scandir(s->dir, &names, ctl_extra_filter, alphasort);
	if (n < 0)
		return;
	for (i = 0; i < n; i++) {
		struct ctl_stat *x = &st->v[st->n];

		snprintf(path, sizeof(path), "%s/%s", s->dir, names[i]->d_name);
		if (added < CTL_STATS_MAX_EXTRA && !stat(path, &sb) &&
		    S_ISREG(sb.st_mode)) {
			memset(x, 0, sizeof(*x));
			strcpy(x->name, names[i]->d_name);
			ctl_stat_read(s, x);
			/* only numbers: anything else is not a metric */
			if (!x->err) {
				st->n++;
				added++;
			}
		}
		free(names[i]);
	}
	free(names);
}

int ctl_stats_load(const struct ctl_sysfs *s, struct ctl_stats *st)
{
	size_t i;

	st->v = NULL;
	st->n = 0;
	if (!ctl_sysfs_present(s))
		return -ENOENT;
	st->v = calloc(ctl_stat_ndefs + CTL_STATS_MAX_EXTRA, sizeof(*st->v));
	if (!st->v)
		return -ENOMEM;
	for (i = 0; i < ctl_stat_ndefs; i++) {
		struct ctl_stat *x = &st->v[st->n++];

		x->def = &ctl_stat_defs[i];
		strcpy(x->name, x->def->name);
		ctl_stat_read(s, x);
	}
	ctl_stats_load_extras(s, st);
	return 0;
}

void ctl_stats_free(struct ctl_stats *st)
{
	free(st->v);
	st->v = NULL;
	st->n = 0;
}

const struct ctl_stat *ctl_stats_get(const struct ctl_stats *st,
				     const char *name)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (!strcmp(st->v[i].name, name))
			return st->v[i].err ? NULL : &st->v[i];
	return NULL;
}

enum ctl_stat_kind ctl_stat_kind(const struct ctl_stat *s)
{
	return s->def ? s->def->kind : CTL_STAT_UNTYPED;
}

int ctl_read_fd(int fd, size_t max, char **out, size_t *len)
{
	size_t cap = 4096, got = 0;
	char *buf, *nbuf;
	struct stat st;
	ssize_t n;

	/* A regular file says how big it is: one allocation, one pass. */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (uint64_t)st.st_size < max ? (size_t)st.st_size + 2 :
						   max + 2;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (cap - got < 2) {
			if (got > max) {
				free(buf);
				return -E2BIG;
			}
			cap = cap * 2 > max + 2 ? max + 2 : cap * 2;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				free(buf);
				return -ENOMEM;
			}
			buf = nbuf;
		}
		n = read(fd, buf + got, cap - got - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -errno;
		}
		if (!n)
			break;
		got += n;
	}
	if (got > max) {
		free(buf);
		return -E2BIG;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	return 0;
}
