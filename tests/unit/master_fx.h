/* SPDX-License-Identifier: GPL-2.0 */
/*
 * master_fx.h - the fixture the master unit tests share: a master whose
 * DROP_REPLICA sends are recorded and whose clock is a variable.
 * Include after the fluxond headers.
 */
#ifndef MASTER_FX_H
#define MASTER_FX_H

#define U	((uint64_t)FLUXONKV_SEGMENT_ALIGN)
#define INC	0x5eedULL
#define MAXDROPS 8192

struct fx {
	struct fkv_master *m;
	uint64_t now;
	size_t ndrops;
	uint64_t drops[MAXDROPS];
	uint32_t drop_flags[MAXDROPS];
	uint64_t next_handle;
	size_t nplaced;			/* ops->placed calls */
	uint64_t placed_handle, placed_put_id;
	uint32_t placed_flags;
	size_t npersist;		/* ops->persist calls */
	uint64_t persist_handle, persist_put_id;
	size_t nssd_drops;		/* ops->send_ssd_drop calls */
	uint32_t ssd_drop_node;
	uint64_t ssd_drop_put_id;
	char ssd_drop_key[64];
};

static struct fx F;

static void rec_drop(void *arg, uint64_t handle, uint32_t flags)
{
	struct fx *f = arg;

	if (f->ndrops < MAXDROPS) {
		f->drops[f->ndrops] = handle;
		f->drop_flags[f->ndrops] = flags;
	}
	f->ndrops++;
}

static uint64_t fx_clock(void *arg)
{
	return ((struct fx *)arg)->now;
}

static void rec_placed(void *arg, uint64_t handle, uint64_t put_id,
		       uint32_t flags)
{
	struct fx *f = arg;

	f->nplaced++;
	f->placed_handle = handle;
	f->placed_put_id = put_id;
	f->placed_flags = flags;
}

static void rec_persist(void *arg, uint64_t handle, uint64_t put_id)
{
	struct fx *f = arg;

	f->npersist++;
	f->persist_handle = handle;
	f->persist_put_id = put_id;
}

static void rec_ssd_drop(void *arg, uint32_t node, const void *key,
			 size_t key_len, uint64_t put_id)
{
	struct fx *f = arg;

	f->nssd_drops++;
	f->ssd_drop_node = node;
	f->ssd_drop_put_id = put_id;
	snprintf(f->ssd_drop_key, sizeof(f->ssd_drop_key), "%.*s",
		 (int)key_len, (const char *)key);
}

static const struct fkv_master_ops rec_ops = {
	.send_drop = rec_drop,
	.placed = rec_placed,
	.persist = rec_persist,
	.send_ssd_drop = rec_ssd_drop,
};

#endif /* MASTER_FX_H */
