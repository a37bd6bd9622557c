// SPDX-License-Identifier: GPL-2.0
/*
 * Tenants: key spaces of their own on one segment.
 *
 * A description bound to tenant T (FLUXONKV_IOC_TENANT) names its keys
 * with T's prefix (0x00 'T' <T big-endian>, ioctl.c fluxonkv_key_in()),
 * so the index, the daemon's routes, the SSD ring and other nodes keep
 * the tenants apart without knowing of them.  Who may bind to which id is
 * the daemon's table (FLUXONKV_CMD_TENANTS): uids and gids per id.
 *
 * Keys alone do not isolate reads: every description maps the whole
 * segment.  While a table is loaded the segment is "isolated": a fault of
 * an unprivileged description maps only the pages of a value its tenant
 * holds (the alloc's @tenant, set by the first holder: only the tenant's
 * own keys reach its holders), and a range that becomes another value's
 * (a new alloc, the destination of a compaction move) is first unmapped
 * from every process (fluxonkv_segment_zap()).  For that unmapping every
 * open of the device shares one address_space: the i_mapping of an inode
 * on a small pseudo filesystem (as DRM shares one across its minors).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/uidgid.h>
#include <asm/unaligned.h>
#include <net/genetlink.h>
#include <net/sock.h>

#include "fluxonkv.h"

/* One id of the table: who may bind to it. */
struct fluxonkv_tenant_ent {
	u32 id;
	u32 nuids;
	u32 ngids;
	kuid_t uids[FLUXONKV_TENANT_IDS_MAX];
	kgid_t gids[FLUXONKV_TENANT_IDS_MAX];
};

struct fluxonkv_tenant_table {
	struct rcu_head rcu;
	u32 n;
	struct fluxonkv_tenant_ent ents[];
};

/* The loaded table (NULL: none), read under RCU, replaced under the mutex. */
static struct fluxonkv_tenant_table __rcu *fluxonkv_tenants;
/* Serializes table replacements and with them the isolation switch. */
static DEFINE_MUTEX(fluxonkv_tenants_mutex);

/*
 * True while a table is loaded.  Faults read it inside the SRCU section
 * below: switching it on waits for the faults that saw it off, then
 * unmaps everything they may have mapped.
 */
bool fluxonkv_isolated;
DEFINE_SRCU(fluxonkv_fault_srcu);

/* The pseudo filesystem whose one inode's mapping every open shares. */
static struct vfsmount *fluxonkv_mnt;
static struct inode *fluxonkv_map_inode;

void fluxonkv_tenant_prefix(u8 *key, u32 tenant)
{
	key[0] = FLUXONKV_TENANT_TAG0;
	key[1] = FLUXONKV_TENANT_TAG1;
	put_unaligned_be32(tenant, key + 2);
}

bool fluxonkv_key_reserved(const u8 *key, u32 key_len)
{
	return key_len >= 2 && key[0] == FLUXONKV_TENANT_TAG0 &&
	       key[1] == FLUXONKV_TENANT_TAG1;
}

/* The tenant whose key (as the module names it) @key is; 0: the default. */
u32 fluxonkv_key_tenant(const u8 *key, u32 key_len)
{
	if (key_len <= FLUXONKV_TENANT_PREFIX_LEN ||
	    !fluxonkv_key_reserved(key, key_len))
		return 0;
	return get_unaligned_be32(key + 2);
}

/*
 * Sessions bound to a tenant now.  Isolation stays on while any is, even
 * when the table is emptied: a bound session's faults are never left
 * unchecked (its binding is not revoked by a new table).
 */
static atomic_t fluxonkv_tenant_sessions = ATOMIC_INIT(0);

void fluxonkv_tenant_bound(struct fluxonkv_session *s)
{
	atomic_inc(&fluxonkv_tenant_sessions);
	fluxonkv_stat_inc(tenant_binds);
}

/* @s is going: no longer bound. */
void fluxonkv_tenant_unbind(struct fluxonkv_session *s)
{
	if (s->tenant)
		atomic_dec(&fluxonkv_tenant_sessions);
}

/* Every open of the device maps through the one shared address_space. */
void fluxonkv_tenant_file_open(struct file *file)
{
	file->f_mapping = fluxonkv_map_inode->i_mapping;
}

/*
 * fluxonkv_segment_zap() - unmap [@off, @off + @len) of the segment from
 * every process before the range holds another value (isolated only).
 * May sleep.
 */
void fluxonkv_segment_zap(u64 off, u64 len)
{
	if (!READ_ONCE(fluxonkv_isolated))
		return;
	unmap_mapping_range(fluxonkv_map_inode->i_mapping, off, len, 1);
}

static bool fluxonkv_tenant_allows(const struct fluxonkv_tenant_ent *e)
{
	kuid_t fsuid = current_fsuid();
	u32 i;

	for (i = 0; i < e->nuids; i++)
		if (uid_eq(fsuid, e->uids[i]))
			return true;
	for (i = 0; i < e->ngids; i++)
		if (in_group_p(e->gids[i]))
			return true;
	return capable(CAP_SYS_ADMIN);
}

/**
 * fluxonkv_tenant_may_bind() - may the caller bind to @tenant?
 * @tenant: 1..FLUXONKV_TENANT_ID_MAX.
 *
 * Return: 0, -ENOENT (not in the table), -EPERM (not one of its uids or
 * groups, and no CAP_SYS_ADMIN).
 */
int fluxonkv_tenant_may_bind(u32 tenant)
{
	const struct fluxonkv_tenant_table *t;
	const struct fluxonkv_tenant_ent *e = NULL;
	int ret = -ENOENT;
	u32 i;

	rcu_read_lock();
	t = rcu_dereference(fluxonkv_tenants);
	for (i = 0; t && i < t->n; i++) {
		if (t->ents[i].id == tenant) {
			e = &t->ents[i];
			break;
		}
	}
	if (e)
		ret = fluxonkv_tenant_allows(e) ? 0 : -EPERM;
	rcu_read_unlock();
	if (ret)
		fluxonkv_stat_inc(tenant_binds_refused);
	return ret;
}

/* An array of __u32 ids out of @nla into @out (u32s); count or -errno. */
static int fluxonkv_tenant_ids(const struct nlattr *nla, u32 *out,
			       struct netlink_ext_ack *extack)
{
	int n;

	if (!nla)
		return 0;
	n = nla_len(nla);
	if (n % sizeof(u32) || n / sizeof(u32) > FLUXONKV_TENANT_IDS_MAX) {
		NL_SET_ERR_MSG_ATTR(extack, nla,
				    "an array of at most FLUXONKV_TENANT_IDS_MAX u32 ids");
		return -EINVAL;
	}
	memcpy(out, nla_data(nla), n);
	return n / sizeof(u32);
}

/* past an s16: the policy's inline min / max cannot hold it */
static struct netlink_range_validation fluxonkv_tenant_id_range = {
	.min = 1,
	.max = FLUXONKV_TENANT_ID_MAX,
};

static const struct nla_policy fluxonkv_tenant_ent_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_TENANT_ID] = NLA_POLICY_FULL_RANGE(NLA_U32,
						       &fluxonkv_tenant_id_range),
	[FLUXONKV_A_UIDS] = { .type = NLA_BINARY,
			      .len = FLUXONKV_TENANT_IDS_MAX * sizeof(u32) },
	[FLUXONKV_A_GIDS] = { .type = NLA_BINARY,
			      .len = FLUXONKV_TENANT_IDS_MAX * sizeof(u32) },
};

const struct nla_policy fluxonkv_tenants_policy[FLUXONKV_A_MAX + 1] = {
	[FLUXONKV_A_TENANT_ENTRY] = NLA_POLICY_NESTED(fluxonkv_tenant_ent_policy),
};

/* One TENANT_ENTRY nest into @e; the ids in the sender's user namespace. */
static int fluxonkv_tenant_parse(const struct nlattr *nest,
				 struct fluxonkv_tenant_ent *e,
				 struct user_namespace *ns,
				 struct netlink_ext_ack *extack)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	u32 raw[FLUXONKV_TENANT_IDS_MAX];
	int ret, n, i;

	ret = nla_parse_nested(tb, FLUXONKV_A_MAX, nest,
			       fluxonkv_tenant_ent_policy, extack);
	if (ret)
		return ret;
	if (!tb[FLUXONKV_A_TENANT_ID]) {
		NL_SET_ERR_MSG_ATTR(extack, nest, "a tenant entry needs TENANT_ID");
		return -EINVAL;
	}
	e->id = nla_get_u32(tb[FLUXONKV_A_TENANT_ID]);
	n = fluxonkv_tenant_ids(tb[FLUXONKV_A_UIDS], raw, extack);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		e->uids[i] = make_kuid(ns, raw[i]);
		if (!uid_valid(e->uids[i]))
			goto bad_id;
	}
	e->nuids = n;
	n = fluxonkv_tenant_ids(tb[FLUXONKV_A_GIDS], raw, extack);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		e->gids[i] = make_kgid(ns, raw[i]);
		if (!gid_valid(e->gids[i]))
			goto bad_id;
	}
	e->ngids = n;
	return 0;

bad_id:
	NL_SET_ERR_MSG_ATTR(extack, nest,
			    "a uid or gid that does not map into this namespace");
	return -EINVAL;
}

/*
 * FLUXONKV_CMD_TENANTS: replace the table with the message's entries.
 * Switching isolation on waits for the faults in flight, then unmaps the
 * whole segment from every process: what was mapped without the checks
 * is mapped again only through them.  (Pages something pinned while it
 * was off -- a pipe, an O_DIRECT write in flight -- stay pinned: load the
 * table before tenants' clients start, as fluxond does at registration.)
 * It stays on while sessions are bound, table or not.
 */
int fluxonkv_nl_tenants(struct sk_buff *skb, struct genl_info *info)
{
	struct fluxonkv_tenant_table *t = NULL, *old;
	const struct nlattr *nla;
	bool was, isolated;
	u32 n = 0, i;
	int rem, ret;

	nla_for_each_attr(nla, genlmsg_data(info->genlhdr),
			  genlmsg_len(info->genlhdr), rem)
		if (nla_type(nla) == FLUXONKV_A_TENANT_ENTRY)
			n++;
	if (n > FLUXONKV_TENANTS_MAX) {
		NL_SET_ERR_MSG(info->extack, "more than FLUXONKV_TENANTS_MAX tenants");
		return -E2BIG;
	}
	if (n) {
		t = kvzalloc(struct_size(t, ents, n), GFP_KERNEL);
		if (!t)
			return -ENOMEM;
		nla_for_each_attr(nla, genlmsg_data(info->genlhdr),
				  genlmsg_len(info->genlhdr), rem) {
			if (nla_type(nla) != FLUXONKV_A_TENANT_ENTRY)
				continue;
			ret = fluxonkv_tenant_parse(nla, &t->ents[t->n],
						    sk_user_ns(NETLINK_CB(skb).sk),
						    info->extack);
			if (ret)
				goto err_free;
			for (i = 0; i < t->n; i++) {
				if (t->ents[i].id == t->ents[t->n].id) {
					NL_SET_ERR_MSG_ATTR(info->extack, nla,
							    "a tenant id given twice");
					ret = -EINVAL;
					goto err_free;
				}
			}
			t->n++;
		}
	}

	mutex_lock(&fluxonkv_tenants_mutex);
	old = rcu_replace_pointer(fluxonkv_tenants, t,
				  lockdep_is_held(&fluxonkv_tenants_mutex));
	was = fluxonkv_isolated;
	isolated = t || atomic_read(&fluxonkv_tenant_sessions);
	WRITE_ONCE(fluxonkv_isolated, isolated);
	if (isolated && !was) {
		/* faults that saw it off are done: unmap what they mapped */
		synchronize_srcu(&fluxonkv_fault_srcu);
		unmap_mapping_range(fluxonkv_map_inode->i_mapping, 0, 0, 1);
	}
	mutex_unlock(&fluxonkv_tenants_mutex);
	if (old)
		kvfree_rcu(old, rcu);
	pr_info("tenant table: %u tenants, isolation %s\n", n,
		isolated ? "on" : "off");
	return 0;

err_free:
	kvfree(t);
	return ret;
}

/* debugfs "tenants": the table, one id a line with its uids and gids. */
int fluxonkv_tenants_show(struct seq_file *m, void *unused)
{
	const struct fluxonkv_tenant_table *t;
	u32 i, j;

	rcu_read_lock();
	t = rcu_dereference(fluxonkv_tenants);
	seq_printf(m, "isolated\t%d\n", READ_ONCE(fluxonkv_isolated));
	for (i = 0; t && i < t->n; i++) {
		const struct fluxonkv_tenant_ent *e = &t->ents[i];

		seq_printf(m, "tenant\t%u\tuids", e->id);
		for (j = 0; j < e->nuids; j++)
			seq_printf(m, " %u", from_kuid_munged(seq_user_ns(m),
							      e->uids[j]));
		seq_puts(m, "\tgids");
		for (j = 0; j < e->ngids; j++)
			seq_printf(m, " %u", from_kgid_munged(seq_user_ns(m),
							      e->gids[j]));
		seq_putc(m, '\n');
	}
	rcu_read_unlock();
	return 0;
}

#define FLUXONKV_MAPFS_MAGIC	0x666b766d	/* "fkvm" */

static int fluxonkv_mapfs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, FLUXONKV_MAPFS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type fluxonkv_mapfs = {
	.name = "fluxonkv_map",
	.init_fs_context = fluxonkv_mapfs_init_fs_context,
	.kill_sb = kill_anon_super,
};

int fluxonkv_tenant_init(void)
{
	int ret;

	fluxonkv_mnt = kern_mount(&fluxonkv_mapfs);
	if (IS_ERR(fluxonkv_mnt))
		return PTR_ERR(fluxonkv_mnt);
	fluxonkv_map_inode = alloc_anon_inode(fluxonkv_mnt->mnt_sb);
	if (IS_ERR(fluxonkv_map_inode)) {
		ret = PTR_ERR(fluxonkv_map_inode);
		goto err_mnt;
	}
	return 0;

err_mnt:
	kern_unmount(fluxonkv_mnt);
	return ret;
}

/* After the device is gone: no open file refers to the mapping any more. */
void fluxonkv_tenant_exit(void)
{
	struct fluxonkv_tenant_table *t;

	t = rcu_replace_pointer(fluxonkv_tenants, NULL, true);
	kvfree(t);	/* the family is unregistered: no reader is left */
	WRITE_ONCE(fluxonkv_isolated, false);	/* no zap after the iput */
	iput(fluxonkv_map_inode);
	kern_unmount(fluxonkv_mnt);
}
