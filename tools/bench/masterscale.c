// SPDX-License-Identifier: GPL-2.0
/*
 * masterscale - the master at cluster scale, simulated natively (issue 28):
 * one fkv_master (userspace/fluxond/master.c, the code fluxond runs) with
 * N member nodes and K keys of one replica each, owners round-robin, and
 * no network or module.  It times what runs in one turn of the master's
 * event loop, where a long call stalls every node's requests:
 *
 *   put        one PUT_START + PUT_DONE (mean over the fill, and the
 *              longest, wall time only: a table or map that grows at
 *              once shows here)
 *   left       member-left of one node: fkv_master_node_down(), then
 *              the loop's turns forgetting the rest (fkv_master_work):
 *              the longest turn, the turns, the sum
 *   restart    a node back under a new incarnation before the master saw
 *              it leave: the old instance leaves (node_down), its
 *              replicas go a slice a turn, then fkv_master_node_up():
 *              the longest of those calls
 *   evict      an eviction burst: one NEED_ROOM of --burst values' bytes
 *              on a node that holds at least that many (the master's own
 *              work; the drops themselves leave in batches, clusterd.c),
 *              then the turns that evict the rest: the longest turn
 *   report     a restarted master (next term) adopting every node's
 *              REPORTs, one acknowledged batch of 256 per turn (clusterd.c):
 *              the longest batch, and the whole
 *
 * each as wall time and as the thread's CPU time (the host may be shared:
 * CPU time does not count the time others ran), and the master's resident
 * memory per key (RSS growth over the fill).
 *
 *   masterscale [--nodes N] [--keys K] [--burst B] [--key-len L] [--json]
 *               [--spikes MS]
 *
 * --spikes prints every report batch that took more than MS of CPU with
 * its CLOCK_MONOTONIC window, to be matched against `perf record -k mono`
 * samples: on a virtual machine the thread's CPU clock also runs while
 * the host holds the vCPU (bench.md, *Master at scale*).
 *
 * Defaults: 64 nodes, 1,000,000 keys, a burst of 100,000 values, 40-byte
 * keys.  Up to 1,024 nodes, the members the control plane admits
 * (FKV_MEMBERS_MAX_CTL; a handle's 12 node bits would hold 4,095).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/fluxonkv.h>

#include "../../userspace/common/cluster_msg.h"
#include "../../userspace/fluxond/master.h"
#include "../../userspace/fluxond/route.h"

#define VAL	((uint64_t)FLUXONKV_SEGMENT_ALIGN)
#define BATCH	256

static uint64_t drops;

static void count_drop(void *arg, uint64_t handle, uint32_t flags)
{
	(void)arg;
	(void)handle;
	(void)flags;
	drops++;
}

static void no_placed(void *arg, uint64_t handle, uint64_t put_id,
		      uint32_t flags)
{
	(void)arg;
	(void)handle;
	(void)put_id;
	(void)flags;
}

static void no_persist(void *arg, uint64_t handle, uint64_t put_id)
{
	(void)arg;
	(void)handle;
	(void)put_id;
}

static const struct fkv_master_ops ops = {
	.send_drop = count_drop,
	.placed = no_placed,
	.persist = no_persist,
};

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

static double cpu_s(void)
{
	return clock_s(CLOCK_THREAD_CPUTIME_ID);
}

static uint64_t rss_bytes(void)
{
	unsigned long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &pages, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Key i: "masterscale-key-<i>" padded with '.' to @len bytes. */
static size_t make_key(char *buf, size_t len, uint64_t i)
{
	int n = snprintf(buf, len + 1, "masterscale-key-%" PRIu64, i);

	if (n < 0)
		return 0;
	if ((size_t)n < len)
		memset(buf + n, '.', len - (size_t)n);
	return len > (size_t)n ? len : (size_t)n;
}

/* The handle node @node's module would stamp on slot @slot (uapi). */
static uint64_t handle_of(uint32_t node, uint64_t slot, uint64_t put_id)
{
	return FLUXONKV_HANDLE_MAKE(slot, node, put_id);
}

static struct fkv_master *new_master(uint32_t nodes, uint64_t keys,
				     uint64_t term)
{
	struct fkv_master_config c = {
		.node = 1, .incarnation = 0x1000 + term, .term = term,
		.capacity = (keys / nodes + 2) * VAL * 2,
	};
	struct fkv_master *m = fkv_master_create(&c, &ops, NULL);
	uint32_t n;
	char addr[32];

	if (!m)
		return NULL;
	for (n = 1; n <= nodes; n++) {
		snprintf(addr, sizeof(addr), "10.77.%u.%u:7471", n / 250,
			 n % 250 + 1);
		if (fkv_master_node_up(m, n, 0x1000 + term + n,
				       c.capacity, 0, addr)) {
			fkv_master_destroy(m);
			return NULL;
		}
	}
	return m;
}

/*
 * The loop's turns that finish a long job (fkv_master_work): the longest
 * turn into *@max_s / *@max_cpu (if longer), the sum added to *@total_s.
 * Returns the turns.
 */
static unsigned int work_turns(struct fkv_master *m, double *max_s,
			       double *max_cpu, double *total_s)
{
	unsigned int turns = 0;
	bool more;

	do {
		double t0 = now_s(), c0 = cpu_s(), t, c;

		more = fkv_master_work(m);
		t = now_s() - t0;
		c = cpu_s() - c0;
		*total_s += t;
		if (t > *max_s)
			*max_s = t;
		if (c > *max_cpu)
			*max_cpu = c;
		turns++;
	} while (more);
	return turns;
}

int main(int argc, char **argv)
{
	uint64_t keys = 1000000, burst = 100000, i, rss0, rss1, *put_ids;
	uint32_t nodes = 64, flags, owner;
	size_t key_len = 40, kl;
	double t0, c0, t, c, put_s, left_s, evict_s, report_s, batch_max = 0;
	double put_max = 0, put_sum = 0, left_cpu, evict_cpu, batch_max_cpu = 0;
	double restart_s, restart_cpu, left_total_s, evict_total_s;
	double restart_total_s;
	unsigned int left_turns, evict_turns, restart_turns;
	uint64_t left_drops, evict_drops, adopted = 0, evict_node_keys;
	struct fkv_master *m;
	bool json = false;
	double spikes = 0;
	char key[FLUXONKV_KEY_MAX + 1];
	int a;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--nodes") && a + 1 < argc)
			nodes = (uint32_t)strtoul(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--keys") && a + 1 < argc)
			keys = strtoull(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--burst") && a + 1 < argc)
			burst = strtoull(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--key-len") && a + 1 < argc)
			key_len = strtoul(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--json"))
			json = true;
		else if (!strcmp(argv[a], "--spikes") && a + 1 < argc)
			spikes = strtod(argv[++a], NULL) / 1e3;
		else {
			fprintf(stderr, "usage: %s [--nodes N] [--keys K] "
				"[--burst B] [--key-len L] [--json] [--spikes MS]\n",
				argv[0]);
			return 2;
		}
	}
	if (nodes < 2 || nodes > FKV_MEMBERS_MAX_CTL || !keys ||
	    key_len < 24 || key_len > FLUXONKV_KEY_MAX) {
		fprintf(stderr, "masterscale: 2..%u nodes, keys > 0, key length "
			"24..%u\n", FKV_MEMBERS_MAX_CTL, FLUXONKV_KEY_MAX);
		return 2;
	}
	put_ids = calloc(keys, sizeof(*put_ids));
	rss0 = rss_bytes();
	m = new_master(nodes, keys, 1);
	if (!m || !put_ids) {
		fprintf(stderr, "masterscale: out of memory\n");
		return 1;
	}

	/* Fill: owners round-robin over nodes 2..N (1 is the master's). */
	t0 = now_s();
	for (i = 0; i < keys; i++) {
		double p0 = now_s();

		owner = 2 + (uint32_t)(i % (nodes - 1));
		kl = make_key(key, key_len, i);
		fkv_master_set_caller(m, owner);
		if (fkv_master_put_start(m, key, kl, VAL, &put_ids[i], &flags) ||
		    fkv_master_put_done(m, key, kl, put_ids[i],
					handle_of(owner, i / nodes + 1,
						  put_ids[i]),
					VAL, &flags) ||
		    !(flags & FLUXONKV_PUT_F_PUBLISHED)) {
			fprintf(stderr, "masterscale: put %" PRIu64 " failed\n", i);
			return 1;
		}
		/* wall only: the thread's CPU clock is a system call */
		t = now_s() - p0;
		put_sum += t;
		if (t > put_max)
			put_max = t;
		if (!json && !(i % 1000000) && i)
			fprintf(stderr, "  %" PRIu64 " keys in %.1f s\n", i,
				now_s() - t0);
	}
	put_s = put_sum / (double)keys;
	rss1 = rss_bytes();

	/*
	 * member-left of node 2: the call, then the loop's turns that forget
	 * the rest a slice at a time (fkv_master_work): the longest of them
	 * is what stalls the loop, the sum what it costs.
	 */
	drops = 0;
	t0 = now_s();
	c0 = cpu_s();
	fkv_master_node_down(m, 2);
	left_s = now_s() - t0;
	left_cpu = cpu_s() - c0;
	left_total_s = left_s;
	left_turns = work_turns(m, &left_s, &left_cpu, &left_total_s);
	left_drops = drops;

	/*
	 * node 4 restarts and rejoins before the master saw it leave: as the
	 * control plane does it (member.c, cluster_ctl.c), the old instance
	 * leaves (REPLACED), its replicas go a slice a turn, and the new one
	 * is admitted once fkv_master_node_forgetting() says they are gone.
	 */
	t0 = now_s();
	c0 = cpu_s();
	fkv_master_node_down(m, 4);
	restart_s = now_s() - t0;
	restart_cpu = cpu_s() - c0;
	restart_total_s = restart_s;
	restart_turns = work_turns(m, &restart_s, &restart_cpu,
				   &restart_total_s);
	if (fkv_master_node_forgetting(m, 4)) {
		fprintf(stderr, "masterscale: node 4 still being forgotten\n");
		return 1;
	}
	t0 = now_s();
	c0 = cpu_s();
	fkv_master_node_up(m, 4, 0x9000004, (keys / nodes + 2) * VAL * 2, 0,
			   "10.77.0.5:7471");
	t = now_s() - t0;
	c = cpu_s() - c0;
	restart_total_s += t;
	if (t > restart_s)
		restart_s = t;
	if (c > restart_cpu)
		restart_cpu = c;

	/* an eviction burst on node 3: room for @burst values at once */
	evict_node_keys = fkv_routes_node_used(fkv_master_routes(m), 3) / VAL;
	fkv_master_set_caller(m, 3);
	drops = 0;
	t0 = now_s();
	c0 = cpu_s();
	fkv_master_need_room(m, burst * VAL, 0);
	evict_s = now_s() - t0;
	evict_cpu = cpu_s() - c0;
	evict_total_s = evict_s;
	evict_turns = work_turns(m, &evict_s, &evict_cpu, &evict_total_s);
	evict_drops = drops;
	fkv_master_destroy(m);

	/* A restarted master (term 2) adopts every node's reports. */
	m = new_master(nodes, keys, 2);
	if (!m)
		return 1;
	t0 = now_s();
	for (i = 0; i < keys;) {
		uint64_t end = i + BATCH < keys ? i + BATCH : keys;
		double b0 = now_s(), bc0 = cpu_s();

		for (; i < end; i++) {
			owner = 2 + (uint32_t)(i % (nodes - 1));
			kl = make_key(key, key_len, i);
			fkv_master_set_caller(m, owner);
			if (fkv_master_adopt(m, key, kl, put_ids[i],
					     handle_of(owner, i / nodes + 1,
						       put_ids[i]),
					     VAL, false) > 0)
				adopted++;
		}
		t = now_s() - b0;
		c = cpu_s() - bc0;
		if (spikes > 0 && c > spikes)
			fprintf(stderr, "report batch at %.6f..%.6f s: %.1f ms "
				"CPU, %.1f ms wall, keys ..%" PRIu64 "\n",
				b0, b0 + t, c * 1e3, t * 1e3, i);
		if (t > batch_max)
			batch_max = t;
		if (c > batch_max_cpu)
			batch_max_cpu = c;
	}
	report_s = now_s() - t0;
	fkv_master_destroy(m);
	free(put_ids);

	if (json) {
		printf("{\"nodes\":%u,\"keys\":%" PRIu64 ",\"key_len\":%zu,"
		       "\"put_us\":%.3f,\"put_max_ms\":%.3f,"
		       "\"bytes_per_key\":%.1f,"
		       "\"left_ms\":%.3f,\"left_cpu_ms\":%.3f,"
		       "\"left_turns\":%u,\"left_total_ms\":%.3f,"
		       "\"left_forgotten\":%" PRIu64 ","
		       "\"restart_ms\":%.3f,\"restart_cpu_ms\":%.3f,"
		       "\"restart_turns\":%u,\"restart_total_ms\":%.3f,"
		       "\"evict_ms\":%.3f,\"evict_cpu_ms\":%.3f,"
		       "\"evict_turns\":%u,\"evict_total_ms\":%.3f,"
		       "\"evict_drops\":%" PRIu64 ","
		       "\"report_batch_max_ms\":%.3f,"
		       "\"report_batch_max_cpu_ms\":%.3f,\"report_s\":%.3f,"
		       "\"adopted\":%" PRIu64 "}\n",
		       nodes, keys, key_len, put_s * 1e6, put_max * 1e3,
		       (double)(rss1 - rss0) / (double)keys, left_s * 1e3,
		       left_cpu * 1e3, left_turns, left_total_s * 1e3,
		       keys / (nodes - 1), restart_s * 1e3,
		       restart_cpu * 1e3, restart_turns,
		       restart_total_s * 1e3, evict_s * 1e3, evict_cpu * 1e3,
		       evict_turns, evict_total_s * 1e3, evict_drops, batch_max * 1e3, batch_max_cpu * 1e3,
		       report_s, adopted);
		return 0;
	}
	printf("master at scale: %u nodes, %" PRIu64 " keys of %zu bytes, one "
	       "replica each (times: wall / CPU)\n", nodes, keys, key_len);
	printf("  put (PUT_START + PUT_DONE)  %8.2f us mean, longest %.1f ms "
	       "(wall)\n", put_s * 1e6, put_max * 1e3);
	printf("  master memory               %8.1f bytes per key (RSS)\n",
	       (double)(rss1 - rss0) / (double)keys);
	printf("  member-left of one node     %8.1f / %.1f ms longest of the call and %u turns "
	       "(%.1f ms in all; %" PRIu64 " drops sent, its ~%" PRIu64
	       " replicas forgotten)\n", left_s * 1e3, left_cpu * 1e3,
	       left_turns, left_total_s * 1e3, left_drops, keys / (nodes - 1));
	printf("  a node's restart            %8.1f / %.1f ms longest of the call, %u turns "
	       "and the rejoin (%.1f ms in all; its ~%" PRIu64
	       " replicas forgotten)\n", restart_s * 1e3, restart_cpu * 1e3,
	       restart_turns, restart_total_s * 1e3, keys / (nodes - 1));
	printf("  eviction burst              %8.1f / %.1f ms longest of the call and %u turns "
	       "(%.1f ms in all; one NEED_ROOM, %" PRIu64 " DROP_REPLICAs of "
	       "the node's %" PRIu64 ")\n", evict_s * 1e3, evict_cpu * 1e3,
	       evict_turns, evict_total_s * 1e3, evict_drops, evict_node_keys);
	printf("  restart, every node reports %8.1f / %.1f ms longest batch of "
	       "%d, %.2f s in all, %" PRIu64 " adopted\n", batch_max * 1e3,
	       batch_max_cpu * 1e3, BATCH, report_s, adopted);
	return 0;
}
