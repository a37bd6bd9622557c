// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonkv: node-local DRAM cache for large objects, owner side.
 *
 * This file ties the module together: parameters, the misc device
 * /dev/fluxonkv, sysfs (/sys/kernel/fluxonkv/, one value per file) and
 * debugfs (/sys/kernel/debug/fluxonkv/: replicas, holders, pending upcalls).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <net/genetlink.h>
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/seq_file.h>
#include <linux/sysfs.h>
#include <linux/timekeeping.h>

#include "fluxonkv.h"

DEFINE_PER_CPU(struct fluxonkv_stats, fluxonkv_stats);
/* Allocated at load (not static per-CPU data: the modules' reserve is small). */
struct fluxonkv_lat_cpu {
	struct fluxonkv_lat op[FLUXONKV_LAT_NR];
};

static struct fluxonkv_lat_cpu __percpu *fluxonkv_lat;

/* The counter at @offset of struct fluxonkv_stats, summed over CPUs. */
u64 fluxonkv_stat_sum(size_t offset)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *(u64 *)((char *)per_cpu_ptr(&fluxonkv_stats, cpu) +
				offset);
	return sum;
}

static const char *const fluxonkv_lat_names[FLUXONKV_LAT_NR] = {
	[FLUXONKV_LAT_PUT] = "put",
	[FLUXONKV_LAT_GET_MEMORY] = "get_memory",
	[FLUXONKV_LAT_GET_SSD] = "get_ssd",
	[FLUXONKV_LAT_GET_MISS] = "get_miss",
	[FLUXONKV_LAT_DELETE] = "delete",
	[FLUXONKV_LAT_REFILL_ALLOC] = "refill_alloc",
	[FLUXONKV_LAT_REFILL_READ] = "refill_read",
	[FLUXONKV_LAT_REFILL_DONE] = "refill_done",
	[FLUXONKV_LAT_SSD_READ_IO] = "ssd_read_io",
	[FLUXONKV_LAT_SSD_WRITE_IO] = "ssd_write_io",
	[FLUXONKV_LAT_GET_REMOTE] = "get_remote",
	[FLUXONKV_LAT_FETCH] = "fetch",
	[FLUXONKV_LAT_PLACE_SEND] = "place_send",
	[FLUXONKV_LAT_SSD_CSUM] = "ssd_csum",
};

void fluxonkv_lat_record(enum fluxonkv_lat_op op, u64 start_ns)
{
	s64 d = fluxonkv_clock() - start_ns;
	u64 ns = d > 0 ? d : 0;	/* another CPU's clock may lag a little */
	unsigned int b = 0;

	if (ns >> FLUXONKV_LAT_SHIFT)
		b = min_t(unsigned int, ilog2(ns) - FLUXONKV_LAT_SHIFT + 1,
			  FLUXONKV_LAT_BUCKETS - 1);
	this_cpu_inc(fluxonkv_lat->op[op].count[b]);
	this_cpu_add(fluxonkv_lat->op[op].sum_ns, ns);
}

/*
 * One line per operation: name, count, sum_ns, then the bucket counts
 * ("<1024ns" first, "+Inf" last); the header names the upper bounds.
 */
int fluxonkv_latency_show(struct seq_file *m, void *unused)
{
	unsigned int op, b;

	seq_puts(m, "op\tcount\tsum_ns");
	for (b = 0; b < FLUXONKV_LAT_BUCKETS - 1; b++)
		seq_printf(m, "\tle_%llu", 1ULL << (b + FLUXONKV_LAT_SHIFT));
	seq_puts(m, "\tle_inf\n");
	for (op = 0; op < FLUXONKV_LAT_NR; op++) {
		u64 count[FLUXONKV_LAT_BUCKETS] = {}, total = 0, sum_ns = 0;
		int cpu;

		for_each_possible_cpu(cpu) {
			const struct fluxonkv_lat *l =
				&per_cpu_ptr(fluxonkv_lat, cpu)->op[op];

			for (b = 0; b < FLUXONKV_LAT_BUCKETS; b++)
				count[b] += READ_ONCE(l->count[b]);
			sum_ns += READ_ONCE(l->sum_ns);
		}
		for (b = 0; b < FLUXONKV_LAT_BUCKETS; b++)
			total += count[b];
		seq_printf(m, "%s\t%llu\t%llu", fluxonkv_lat_names[op], total,
			   sum_ns);
		for (b = 0; b < FLUXONKV_LAT_BUCKETS; b++)
			seq_printf(m, "\t%llu", count[b]);
		seq_putc(m, '\n');
	}
	return 0;
}
u64 fluxonkv_incarnation;
/* Largest put_id any master assigned: a new master continues above it. */
atomic64_t fluxonkv_put_id_max;

/* ---- parameters: validated when set, read-only once loaded ---- */

static unsigned int fluxonkv_segment_mb = 64;
unsigned int fluxonkv_request_timeout_ms = 5000;
unsigned int fluxonkv_pin_max_pct = 50;

static int fluxonkv_param_set_range(const char *val,
				    const struct kernel_param *kp,
				    unsigned int min, unsigned int max)
{
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret)
		return ret;
	if (v < min || v > max) {
		pr_err("%s=%u out of range [%u, %u]\n", kp->name, v, min, max);
		return -EINVAL;
	}
	*(unsigned int *)kp->arg = v;
	return 0;
}

static int fluxonkv_segment_mb_set(const char *val,
				   const struct kernel_param *kp)
{
	return fluxonkv_param_set_range(val, kp, 1, 16384);
}

static int fluxonkv_timeout_set(const char *val, const struct kernel_param *kp)
{
	return fluxonkv_param_set_range(val, kp, 10, 600000);
}

static int fluxonkv_pin_max_set(const char *val, const struct kernel_param *kp)
{
	return fluxonkv_param_set_range(val, kp, 1, 100);
}

static const struct kernel_param_ops fluxonkv_pin_max_ops = {
	.set = fluxonkv_pin_max_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops fluxonkv_segment_mb_ops = {
	.set = fluxonkv_segment_mb_set,
	.get = param_get_uint,
};

static const struct kernel_param_ops fluxonkv_timeout_ops = {
	.set = fluxonkv_timeout_set,
	.get = param_get_uint,
};

module_param_cb(segment_mb, &fluxonkv_segment_mb_ops, &fluxonkv_segment_mb,
		0444);
MODULE_PARM_DESC(segment_mb, "DRAM segment size in MiB (1..16384, default 64)");
/* Writable at run time: read at every charge. */
module_param_cb(pin_max_pct, &fluxonkv_pin_max_ops, &fluxonkv_pin_max_pct,
		0644);
MODULE_PARM_DESC(pin_max_pct,
		 "Share of the segment one user's holders and puts may pin (1..100, default 50)");
module_param_cb(request_timeout_ms, &fluxonkv_timeout_ops,
		&fluxonkv_request_timeout_ms, 0444);
MODULE_PARM_DESC(request_timeout_ms,
		 "How long to wait for the daemon's answer (10..600000, default 5000)");

static int fluxonkv_clean_reserve_set(const char *val,
				      const struct kernel_param *kp)
{
	return fluxonkv_param_set_range(val, kp, 0, 50);
}

static const struct kernel_param_ops fluxonkv_clean_reserve_ops = {
	.set = fluxonkv_clean_reserve_set,
	.get = param_get_uint,
};

/* Writable at run time: read at every check (kv_room.c). */
module_param_cb(clean_reserve_pct, &fluxonkv_clean_reserve_ops,
		&fluxonkv_clean_reserve_pct, 0644);
MODULE_PARM_DESC(clean_reserve_pct,
		 "Share of the segment kept free by dropping clean replicas in the background (0..50, default 5)");

/* ---- misc device ---- */

static int fluxonkv_open(struct inode *inode, struct file *file)
{
	struct fluxonkv_session *s;

	bool writable = file->f_mode & FMODE_WRITE;

	/* Decided once, with the opener's credentials (like a capability). */
	s = fluxonkv_session_new(writable, writable && capable(CAP_SYS_ADMIN));
	if (!s)
		return -ENOMEM;
	file->private_data = s;
	/*
	 * One address_space for every unprivileged open: isolation unmaps
	 * through it.  The daemon's (trusted, unchecked) stays apart: its
	 * views are never unmapped for other tenants' values.
	 */
	if (!s->privileged)
		fluxonkv_tenant_file_open(file);
	return 0;
}

static int fluxonkv_release(struct inode *inode, struct file *file)
{
	fluxonkv_session_free(file->private_data);
	return 0;
}

static const struct file_operations fluxonkv_fops = {
	.owner = THIS_MODULE,
	.open = fluxonkv_open,
	.release = fluxonkv_release,
	.unlocked_ioctl = fluxonkv_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.uring_cmd = fluxonkv_uring_cmd,
	.mmap = fluxonkv_segment_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice fluxonkv_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = FLUXONKV_DEVICE_NAME,
	.fops = &fluxonkv_fops,
	.mode = 0660,
};

/* ---- sysfs: /sys/kernel/fluxonkv/ ---- */

static struct kobject *fluxonkv_kobj;

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", FLUXONKV_VERSION);
}

#define FLUXONKV_ATTR_U64(_name, _expr)					\
static ssize_t _name##_show(struct kobject *kobj,			\
			    struct kobj_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%llu\n", (unsigned long long)(_expr));	\
}									\
static struct kobj_attribute fluxonkv_attr_##_name = __ATTR_RO(_name)

#define FLUXONKV_ATTR_STAT(_name)					\
	FLUXONKV_ATTR_U64(_name, fluxonkv_stat_read(_name))

static struct kobj_attribute fluxonkv_attr_version = __ATTR_RO(version);
FLUXONKV_ATTR_U64(abi_version, FLUXONKV_ABI_VERSION);
FLUXONKV_ATTR_U64(segment_capacity_bytes, fluxonkv_seg.size);
FLUXONKV_ATTR_U64(segment_used_bytes, fluxonkv_segment_used());
FLUXONKV_ATTR_U64(daemon_pid, fluxonkv_daemon_pid());
FLUXONKV_ATTR_U64(replicas, fluxonkv_replica_count());
FLUXONKV_ATTR_STAT(holders);
FLUXONKV_ATTR_STAT(puts);
FLUXONKV_ATTR_STAT(gets);
FLUXONKV_ATTR_STAT(hits_memory);
FLUXONKV_ATTR_STAT(hits_ssd);
FLUXONKV_ATTR_STAT(hits_remote);
FLUXONKV_ATTR_STAT(fetches);
FLUXONKV_ATTR_STAT(fetch_errors);
FLUXONKV_ATTR_STAT(fetch_abandoned);
FLUXONKV_ATTR_STAT(fetch_expired);
FLUXONKV_ATTR_STAT(puts_placed);
FLUXONKV_ATTR_STAT(place_errors);
FLUXONKV_ATTR_STAT(puts_targeted);
FLUXONKV_ATTR_STAT(misses);
FLUXONKV_ATTR_STAT(local_misses);
FLUXONKV_ATTR_STAT(local_refills);
FLUXONKV_ATTR_STAT(refills_async);
FLUXONKV_ATTR_STAT(refills_room_async);
FLUXONKV_ATTR_STAT(local_unsure);
FLUXONKV_ATTR_STAT(lease_refused);
FLUXONKV_ATTR_STAT(hits_alone);
FLUXONKV_ATTR_STAT(promotions);
FLUXONKV_ATTR_STAT(promotions_refused);
FLUXONKV_ATTR_STAT(deletes);
FLUXONKV_ATTR_STAT(evictions);
FLUXONKV_ATTR_STAT(replica_drops);
FLUXONKV_ATTR_STAT(upcall_timeouts);
FLUXONKV_ATTR_STAT(puts_abandoned);
FLUXONKV_ATTR_STAT(puts_local);
FLUXONKV_ATTR_STAT(puts_one_trip);
FLUXONKV_ATTR_STAT(upcall_errors);
FLUXONKV_ATTR_STAT(send_waits);
FLUXONKV_ATTR_STAT(room_waits);
FLUXONKV_ATTR_STAT(clean_drops);
FLUXONKV_ATTR_STAT(clean_drop_bytes);
FLUXONKV_ATTR_STAT(clean_reserve_runs);
FLUXONKV_ATTR_STAT(dropped_notes_full);
FLUXONKV_ATTR_STAT(faults_refused);
FLUXONKV_ATTR_STAT(tenant_binds);
FLUXONKV_ATTR_STAT(tenant_binds_refused);
FLUXONKV_ATTR_STAT(room_by_address);
FLUXONKV_ATTR_STAT(room_pinned);
FLUXONKV_ATTR_STAT(compactions);
FLUXONKV_ATTR_STAT(compacted_bytes);
FLUXONKV_ATTR_STAT(compact_waits);
FLUXONKV_ATTR_U64(kv_ssd_capacity_bytes, fluxonkv_ssd_capacity());
FLUXONKV_ATTR_U64(kv_ssd_used_bytes, fluxonkv_ssd_used());
FLUXONKV_ATTR_U64(kv_ssd_meta_bytes, fluxonkv_ssd_meta_bytes());

#define FLUXONKV_ATTR_SSD(_name)					\
	FLUXONKV_ATTR_U64(ssd_##_name, atomic64_read(&fluxonkv_ssd_stats._name))

FLUXONKV_ATTR_SSD(writes);
FLUXONKV_ATTR_SSD(write_bytes);
FLUXONKV_ATTR_SSD(reads);
FLUXONKV_ATTR_SSD(read_bytes);
FLUXONKV_ATTR_SSD(io_errors);
FLUXONKV_ATTR_SSD(persist_errors);
FLUXONKV_ATTR_SSD(evictions);
FLUXONKV_ATTR_SSD(busy_waits);
FLUXONKV_ATTR_SSD(queue_waits);
FLUXONKV_ATTR_SSD(commits_published);
FLUXONKV_ATTR_SSD(commits_ignored);
FLUXONKV_ATTR_SSD(notices_dropped);
FLUXONKV_ATTR_SSD(revokes);
FLUXONKV_ATTR_SSD(unrouted);
FLUXONKV_ATTR_SSD(csum_errors);
FLUXONKV_ATTR_SSD(meta_evictions);
FLUXONKV_ATTR_SSD(meta_refused);
FLUXONKV_ATTR_SSD(shards_offline);
FLUXONKV_ATTR_SSD(shards_reclaimed);

static struct attribute *fluxonkv_attrs[] = {
	&fluxonkv_attr_version.attr,
	&fluxonkv_attr_abi_version.attr,
	&fluxonkv_attr_segment_capacity_bytes.attr,
	&fluxonkv_attr_segment_used_bytes.attr,
	&fluxonkv_attr_daemon_pid.attr,
	&fluxonkv_attr_replicas.attr,
	&fluxonkv_attr_holders.attr,
	&fluxonkv_attr_puts.attr,
	&fluxonkv_attr_gets.attr,
	&fluxonkv_attr_hits_memory.attr,
	&fluxonkv_attr_hits_ssd.attr,
	&fluxonkv_attr_hits_remote.attr,
	&fluxonkv_attr_fetches.attr,
	&fluxonkv_attr_fetch_errors.attr,
	&fluxonkv_attr_fetch_abandoned.attr,
	&fluxonkv_attr_fetch_expired.attr,
	&fluxonkv_attr_puts_placed.attr,
	&fluxonkv_attr_place_errors.attr,
	&fluxonkv_attr_puts_targeted.attr,
	&fluxonkv_attr_misses.attr,
	&fluxonkv_attr_local_misses.attr,
	&fluxonkv_attr_local_refills.attr,
	&fluxonkv_attr_refills_async.attr,
	&fluxonkv_attr_refills_room_async.attr,
	&fluxonkv_attr_local_unsure.attr,
	&fluxonkv_attr_lease_refused.attr,
	&fluxonkv_attr_hits_alone.attr,
	&fluxonkv_attr_promotions.attr,
	&fluxonkv_attr_promotions_refused.attr,
	&fluxonkv_attr_deletes.attr,
	&fluxonkv_attr_evictions.attr,
	&fluxonkv_attr_replica_drops.attr,
	&fluxonkv_attr_upcall_timeouts.attr,
	&fluxonkv_attr_puts_abandoned.attr,
	&fluxonkv_attr_puts_local.attr,
	&fluxonkv_attr_puts_one_trip.attr,
	&fluxonkv_attr_upcall_errors.attr,
	&fluxonkv_attr_send_waits.attr,
	&fluxonkv_attr_room_waits.attr,
	&fluxonkv_attr_clean_drops.attr,
	&fluxonkv_attr_clean_drop_bytes.attr,
	&fluxonkv_attr_clean_reserve_runs.attr,
	&fluxonkv_attr_dropped_notes_full.attr,
	&fluxonkv_attr_faults_refused.attr,
	&fluxonkv_attr_tenant_binds.attr,
	&fluxonkv_attr_tenant_binds_refused.attr,
	&fluxonkv_attr_room_by_address.attr,
	&fluxonkv_attr_room_pinned.attr,
	&fluxonkv_attr_compactions.attr,
	&fluxonkv_attr_compacted_bytes.attr,
	&fluxonkv_attr_compact_waits.attr,
	&fluxonkv_attr_kv_ssd_capacity_bytes.attr,
	&fluxonkv_attr_kv_ssd_used_bytes.attr,
	&fluxonkv_attr_kv_ssd_meta_bytes.attr,
	&fluxonkv_attr_ssd_writes.attr,
	&fluxonkv_attr_ssd_write_bytes.attr,
	&fluxonkv_attr_ssd_reads.attr,
	&fluxonkv_attr_ssd_read_bytes.attr,
	&fluxonkv_attr_ssd_io_errors.attr,
	&fluxonkv_attr_ssd_persist_errors.attr,
	&fluxonkv_attr_ssd_evictions.attr,
	&fluxonkv_attr_ssd_busy_waits.attr,
	&fluxonkv_attr_ssd_queue_waits.attr,
	&fluxonkv_attr_ssd_commits_published.attr,
	&fluxonkv_attr_ssd_commits_ignored.attr,
	&fluxonkv_attr_ssd_notices_dropped.attr,
	&fluxonkv_attr_ssd_revokes.attr,
	&fluxonkv_attr_ssd_unrouted.attr,
	&fluxonkv_attr_ssd_csum_errors.attr,
	&fluxonkv_attr_ssd_meta_evictions.attr,
	&fluxonkv_attr_ssd_meta_refused.attr,
	&fluxonkv_attr_ssd_shards_offline.attr,
	&fluxonkv_attr_ssd_shards_reclaimed.attr,
	NULL,
};

static const struct attribute_group fluxonkv_attr_group = {
	.attrs = fluxonkv_attrs,
};

static int fluxonkv_sysfs_init(void)
{
	int ret;

	fluxonkv_kobj = kobject_create_and_add("fluxonkv", kernel_kobj);
	if (!fluxonkv_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(fluxonkv_kobj, &fluxonkv_attr_group);
	if (ret)
		kobject_put(fluxonkv_kobj);
	return ret;
}

static void fluxonkv_sysfs_exit(void)
{
	sysfs_remove_group(fluxonkv_kobj, &fluxonkv_attr_group);
	kobject_put(fluxonkv_kobj);
}

/* ---- debugfs: /sys/kernel/debug/fluxonkv/ ---- */

static struct dentry *fluxonkv_debugfs;

static int fluxonkv_segment_show(struct seq_file *m, void *unused)
{
	unsigned long extents;
	u64 largest;

	fluxonkv_segment_free_stats(&extents, &largest);
	seq_printf(m, "size\t%zu\nused\t%llu\npages\t%lu\nchunks\t%u\n"
		   "free_extents\t%lu\nfree_largest\t%llu\nmoving\t%u\n",
		   fluxonkv_seg.size, fluxonkv_segment_used(),
		   fluxonkv_seg.npages, fluxonkv_seg.chunks, extents, largest,
		   READ_ONCE(fluxonkv_seg.moving));
	return 0;
}

#define FLUXONKV_DEBUGFS_SHOW(_name, _fn)				\
static int fluxonkv_##_name##_open(struct inode *inode, struct file *file) \
{									\
	return single_open(file, _fn, NULL);				\
}									\
static const struct file_operations fluxonkv_##_name##_fops = {	\
	.owner = THIS_MODULE,						\
	.open = fluxonkv_##_name##_open,				\
	.read = seq_read,						\
	.llseek = seq_lseek,						\
	.release = single_release,					\
}

FLUXONKV_DEBUGFS_SHOW(dbg_segment, fluxonkv_segment_show);
static int fluxonkv_dbg_replicas_open(struct inode *inode, struct file *file)
{
	return seq_open(file, &fluxonkv_replicas_seq_ops);
}

static const struct file_operations fluxonkv_dbg_replicas_fops = {
	.owner = THIS_MODULE,
	.open = fluxonkv_dbg_replicas_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release,
};
static const struct file_operations fluxonkv_dbg_holders_fops = {
	.owner = THIS_MODULE,
	.open = fluxonkv_holders_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release_private,
};
FLUXONKV_DEBUGFS_SHOW(dbg_pending, fluxonkv_pending_show);
static const struct file_operations fluxonkv_dbg_rings_fops = {
	.owner = THIS_MODULE,
	.open = fluxonkv_rings_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = seq_release_private,
};
FLUXONKV_DEBUGFS_SHOW(dbg_latency, fluxonkv_latency_show);
FLUXONKV_DEBUGFS_SHOW(dbg_users, fluxonkv_users_show);
FLUXONKV_DEBUGFS_SHOW(dbg_tenants, fluxonkv_tenants_show);

static void fluxonkv_debugfs_init(void)
{
	/* debugfs is optional: failures leave it absent, never fail load. */
	fluxonkv_debugfs = debugfs_create_dir("fluxonkv", NULL);
	debugfs_create_file("segment", 0400, fluxonkv_debugfs, NULL,
			    &fluxonkv_dbg_segment_fops);
	debugfs_create_file("replicas", 0400, fluxonkv_debugfs, NULL,
			    &fluxonkv_dbg_replicas_fops);
	debugfs_create_file("holders", 0400, fluxonkv_debugfs, NULL,
			    &fluxonkv_dbg_holders_fops);
	debugfs_create_file("pending", 0400, fluxonkv_debugfs, NULL,
			    &fluxonkv_dbg_pending_fops);
	debugfs_create_file("rings", 0400, fluxonkv_debugfs, NULL,
			    &fluxonkv_dbg_rings_fops);
	debugfs_create_file("latency", 0400, fluxonkv_debugfs, NULL,
			    &fluxonkv_dbg_latency_fops);
	debugfs_create_file("users", 0400, fluxonkv_debugfs, NULL,
			    &fluxonkv_dbg_users_fops);
	debugfs_create_file("tenants", 0400, fluxonkv_debugfs, NULL,
			    &fluxonkv_dbg_tenants_fops);
	debugfs_create_u32("compact_stall_ms", 0600, fluxonkv_debugfs,
			   &fluxonkv_compact_stall_ms);
	debugfs_create_u32("compact_freeze_delay_ms", 0600, fluxonkv_debugfs,
			   &fluxonkv_compact_freeze_delay_ms);
	debugfs_create_u32("compact_freeze_delays", 0400, fluxonkv_debugfs,
			   &fluxonkv_compact_freeze_delays);
	debugfs_create_u32("compact_freeze_lost", 0400, fluxonkv_debugfs,
			   &fluxonkv_compact_freeze_lost);
	debugfs_create_u32("put_local_delay_ms", 0600, fluxonkv_debugfs,
			   &fluxonkv_put_local_delay_ms);
	debugfs_create_u32("put_local_delays", 0400, fluxonkv_debugfs,
			   &fluxonkv_put_local_delays);
	debugfs_create_u32("fail_alloc", 0600, fluxonkv_debugfs,
			   &fluxonkv_fail_alloc);
	debugfs_create_u32("walk_delay_ms", 0600, fluxonkv_debugfs,
			   &fluxonkv_walk_delay_ms);
}

/* ---- init / exit ---- */

static int __init fluxonkv_init(void)
{
	int ret;

	fluxonkv_incarnation = get_random_u64() | 1;
	fluxonkv_lat = alloc_percpu(struct fluxonkv_lat_cpu);
	if (!fluxonkv_lat)
		return -ENOMEM;
	ret = fluxonkv_segment_init((size_t)fluxonkv_segment_mb << 20);
	if (ret) {
		pr_err("cannot allocate a %u MiB segment: %d\n",
		       fluxonkv_segment_mb, ret);
		goto err_lat;
	}
	ret = fluxonkv_replica_init();
	if (ret)
		goto err_segment;
	ret = fluxonkv_kv_init();
	if (ret)
		goto err_replica;
	ret = fluxonkv_ssd_init();
	if (ret)
		goto err_kv;
	ret = fluxonkv_tenant_init();
	if (ret)
		goto err_ssd;
	ret = fluxonkv_sysfs_init();
	if (ret)
		goto err_tenant;
	fluxonkv_debugfs_init();
	ret = fluxonkv_genl_init();
	if (ret)
		goto err_debugfs;
	ret = misc_register(&fluxonkv_misc);
	if (ret)
		goto err_genl;
	pr_info("version %s loaded: /dev/%s, segment %u MiB\n",
		FLUXONKV_VERSION, FLUXONKV_DEVICE_NAME, fluxonkv_segment_mb);
	return 0;

err_genl:
	fluxonkv_genl_exit();
err_debugfs:
	debugfs_remove_recursive(fluxonkv_debugfs);
	fluxonkv_sysfs_exit();
err_tenant:
	fluxonkv_tenant_exit();
err_ssd:
	fluxonkv_ssd_exit();
err_kv:
	fluxonkv_kv_exit();
err_replica:
	fluxonkv_replica_exit();
err_segment:
	fluxonkv_segment_exit();
err_lat:
	free_percpu(fluxonkv_lat);
	return ret;
}

static void __exit fluxonkv_exit(void)
{
	misc_deregister(&fluxonkv_misc);
	/* Queued GET_DONE offers may not re-arm genl's sweep after its exit. */
	fluxonkv_kv_quiesce();
	fluxonkv_genl_exit();
	/*
	 * Abandoned puts the daemon's teardown ended, and PERSISTs handled
	 * until the family went, may still persist: before the SSD tier goes.
	 */
	fluxonkv_kv_flush_late();
	/*
	 * No daemon, no clean drops (genl's exit cleared the flags): a
	 * reserve pass still running looks at the SSD index, which goes next.
	 */
	fluxonkv_clean_reserve_stop();
	debugfs_remove_recursive(fluxonkv_debugfs);
	fluxonkv_sysfs_exit();
	fluxonkv_tenant_exit();
	fluxonkv_ssd_exit();
	fluxonkv_kv_exit();
	fluxonkv_replica_exit();
	fluxonkv_segment_exit();
	free_percpu(fluxonkv_lat);
	pr_info("unloaded\n");
}

module_init(fluxonkv_init);
module_exit(fluxonkv_exit);

MODULE_LICENSE("GPL");
/*
 * Loaded on demand when a daemon resolves the generic netlink family
 * (genetlink asks for "net-pf-16-proto-16-family-fluxonkv").
 */
MODULE_ALIAS_GENL_FAMILY(FLUXONKV_GENL_NAME);
MODULE_AUTHOR("fluxonkv developers");
MODULE_DESCRIPTION("fluxonkv: DRAM + SSD cache for large objects");
MODULE_VERSION(FLUXONKV_VERSION);
