// SPDX-License-Identifier: GPL-2.0
/*
 * dispatch.c - upcall -> master call -> reply (dispatch.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "log.h"
#include "nl.h"

#define A(x)	FKV_ATTR(FLUXONKV_A_##x)

static const struct {
	const char *name;
	uint32_t required;	/* 0: not an upcall */
	bool reply;
} cmds[] = {
	[FLUXONKV_CMD_UNSPEC] = { "UNSPEC", 0, false },
	[FLUXONKV_CMD_GET_VERSION] = { "GET_VERSION", 0, false },
	[FLUXONKV_CMD_DAEMON_REGISTER] = { "DAEMON_REGISTER", 0, false },
	[FLUXONKV_CMD_DAEMON_UNREGISTER] = { "DAEMON_UNREGISTER", 0, false },
	[FLUXONKV_CMD_PUT_START] = { "PUT_START",
		A(REQ_ID) | A(KEY) | A(LEN), true },
	[FLUXONKV_CMD_PUT_DONE] = { "PUT_DONE",
		A(REQ_ID) | A(KEY) | A(PUT_ID) | A(HANDLE) | A(LEN), true },
	[FLUXONKV_CMD_PUT_ABORT] = { "PUT_ABORT", A(KEY) | A(PUT_ID), false },
	[FLUXONKV_CMD_GET_START] = { "GET_START", A(REQ_ID) | A(KEY), true },
	[FLUXONKV_CMD_GET_DONE] = { "GET_DONE",
		A(REQ_ID) | A(KEY) | A(PUT_ID) | A(SOURCE), true },
	[FLUXONKV_CMD_GET_REVOKE] = { "GET_REVOKE",
		A(REQ_ID) | A(KEY) | A(PUT_ID) | A(SOURCE), true },
	[FLUXONKV_CMD_DELETE] = { "DELETE", A(REQ_ID) | A(KEY), true },
	[FLUXONKV_CMD_NEED_ROOM] = { "NEED_ROOM", A(REQ_ID) | A(BYTES), true },
	[FLUXONKV_CMD_ACCESS] = { "ACCESS", A(HANDLES), false },
	[FLUXONKV_CMD_DROP_REPLICA] = { "DROP_REPLICA", 0, false },
	[FLUXONKV_CMD_DAEMON_EVENT] = { "DAEMON_EVENT", 0, false },
	[FLUXONKV_CMD_SSD_COMMIT] = { "SSD_COMMIT",
		A(REQ_ID) | A(KEY) | A(PUT_ID) | A(LEN), true },
	[FLUXONKV_CMD_SSD_EVICTED] = { "SSD_EVICTED", A(ENTRY), false },
	[FLUXONKV_CMD_SSD_STATE] = { "SSD_STATE", A(SSD_CAPACITY), false },
	[FLUXONKV_CMD_FETCH] = { "FETCH", A(REQ_ID) | A(KEY) | A(PUT_ID) |
		A(LEN) | A(SOURCE) | A(HANDLE) | A(OFFSET), true },
	[FLUXONKV_CMD_PUT_PLACE] = { "PUT_PLACE",
		A(REQ_ID) | A(KEY) | A(PUT_ID) | A(LEN), true },
	[FLUXONKV_CMD_DUMP] = { "DUMP", 0, false },
	/* consumed by nl.c's look-ahead, never dispatched */
	[FLUXONKV_CMD_CANCEL] = { "CANCEL", A(REQ_ID), false },
	[FLUXONKV_CMD_LOOKUP] = { "LOOKUP", A(REQ_ID) | A(KEY), true },
	[FLUXONKV_CMD_PERSIST] = { "PERSIST", 0, false },
	[FLUXONKV_CMD_PUT_LOCAL] = { "PUT_LOCAL", A(ENTRY), false },
	[FLUXONKV_CMD_PUT] = { "PUT",
		A(REQ_ID) | A(KEY) | A(HANDLE) | A(LEN), true },
	[FLUXONKV_CMD_ADOPT_DONE] = { "ADOPT_DONE", 0, false },
	[FLUXONKV_CMD_LEASE] = { "LEASE", 0, false },
	[FLUXONKV_CMD_DROPPED] = { "DROPPED", A(HANDLES), false },
	/* daemon -> module only: named for the log */
	[FLUXONKV_CMD_TENANTS] = { "TENANTS", 0, false },
};

#define NCMDS	(sizeof(cmds) / sizeof(cmds[0]))

const char *fkv_cmd_name(uint8_t cmd)
{
	return cmd < NCMDS && cmds[cmd].name ? cmds[cmd].name : "?";
}

bool fkv_upcall_wants_reply(uint8_t cmd)
{
	return cmd < NCMDS && cmds[cmd].reply;
}

uint32_t fkv_upcall_required(uint8_t cmd)
{
	return cmd < NCMDS ? cmds[cmd].required : 0;
}

/*
 * Apply @apply to every well-formed ENTRY of @u that @ok accepts; skip
 * (and log) the others.
 */
static void each_entry(struct fkv_master *m, const struct fkv_upcall *u,
		       bool (*ok)(const struct fkv_ssd_entry *e),
		       void (*apply)(struct fkv_master *m,
				     const struct fkv_ssd_entry *e))
{
	struct fkv_ssd_entry e;
	unsigned int bad = 0;
	size_t pos = 0;
	int ret;

	while ((ret = fkv_upcall_next_entry(u, &pos, &e))) {
		if (ret < 0 || !ok(&e))
			bad++;
		else
			apply(m, &e);
	}
	if (bad)
		fkv_warn("%s: %u malformed entries skipped",
			 fkv_cmd_name(u->cmd), bad);
}

static bool any_entry(const struct fkv_ssd_entry *e)
{
	(void)e;
	return true;
}

/* SSD_EVICTED: committed entries overwritten at a ring tail. */
static void ssd_evicted(struct fkv_master *m, const struct fkv_ssd_entry *e)
{
	fkv_master_ssd_evicted(m, e->key, e->key_len, e->put_id);
}

/* PUT_LOCAL needs HANDLE and LEN: without them the replica stays unrouted. */
static bool put_local_entry(const struct fkv_ssd_entry *e)
{
	return e->handle && e->len;
}

/* PUT_LOCAL: a put the module published itself. */
static void put_local(struct fkv_master *m, const struct fkv_ssd_entry *e)
{
	fkv_master_put_local(m, e->key, e->key_len, e->put_id, e->handle,
			     e->len, e->flags, e->dropped);
}

/*
 * SSD_COMMIT with a non-zero ERRNO reports a failed persist (an ERRNO of 0
 * is a success like a commit without one).
 */
static bool ssd_commit_failed(const struct fkv_upcall *u)
{
	return u->cmd == FLUXONKV_CMD_SSD_COMMIT &&
	       (u->present & A(ERRNO)) && u->error;
}

bool fkv_dispatch(struct fkv_master *m, const struct fkv_upcall *u,
		  struct fkv_reply *r)
{
	uint32_t need = fkv_upcall_required(u->cmd);
	struct fkv_get_result g;
	size_t i;

	memset(r, 0, sizeof(*r));
	/* A failed persist has no length to publish: LEN is not needed. */
	if (ssd_commit_failed(u))
		need &= ~A(LEN);
	if (!need) {
		fkv_warn("unexpected command %u (%s) from the module", u->cmd,
			 fkv_cmd_name(u->cmd));
		r->status = -EOPNOTSUPP;
		return false;
	}
	if ((u->present & need) != need) {
		fkv_warn("%s without required attributes (have %#x, need %#x)",
			 fkv_cmd_name(u->cmd), u->present, need);
		r->status = -EINVAL;
		return fkv_upcall_wants_reply(u->cmd) &&
		       (u->present & A(REQ_ID));
	}

	switch (u->cmd) {
	case FLUXONKV_CMD_PUT_START:
		r->status = fkv_master_put_start(m, u->key, u->key_len, u->len,
						 &r->put_id, &r->flags);
		r->present = A(PUT_ID) | A(FLAGS);
		break;
	case FLUXONKV_CMD_PUT_DONE:
		r->status = fkv_master_put_done(m, u->key, u->key_len,
						u->put_id, u->handle, u->len,
						&r->flags);
		r->present = A(FLAGS);
		break;
	case FLUXONKV_CMD_PUT:
		r->status = fkv_master_put(m, u->key, u->key_len, u->handle,
					   u->len, &r->put_id, &r->flags);
		r->present = A(PUT_ID) | A(FLAGS);
		break;
	case FLUXONKV_CMD_PUT_ABORT:
		fkv_master_put_abort(m, u->key, u->key_len, u->put_id,
				     u->handle, u->error);
		break;
	case FLUXONKV_CMD_GET_START:
		r->status = fkv_master_get_start(m, u->key, u->key_len, &g);
		r->source = g.source;
		r->put_id = g.put_id;
		r->len = g.len;
		r->present = A(SOURCE) | A(PUT_ID) | A(LEN);
		if (g.source == FLUXONKV_SOURCE_MEMORY) {
			r->handle = g.handle;
			r->present |= A(HANDLE);
		}
		break;
	case FLUXONKV_CMD_LOOKUP:
		r->status = fkv_master_lookup(m, u->key, u->key_len, &g);
		if (!r->status) {
			r->source = g.source;
			r->put_id = g.put_id;
			r->len = g.len;
			r->present = A(SOURCE) | A(PUT_ID) | A(LEN);
		}
		break;
	case FLUXONKV_CMD_GET_DONE:
		/* HANDLE and LEN matter (and are checked) for SSD refills. */
		r->status = fkv_master_get_done(m, u->key, u->key_len,
						u->put_id, u->handle, u->len,
						u->source, &r->flags);
		r->present = A(FLAGS);
		break;
	case FLUXONKV_CMD_GET_REVOKE:
		/* The module's policy takes REQ_ID and STATUS only. */
		r->status = fkv_master_get_revoke(m, u->key, u->key_len,
						  u->put_id, u->source,
						  u->handle, u->error);
		break;
	case FLUXONKV_CMD_DELETE:
		r->status = fkv_master_delete(m, u->key, u->key_len,
					      &r->put_id);
		r->present = A(PUT_ID);
		break;
	case FLUXONKV_CMD_NEED_ROOM:
		r->status = u->nhandles ?
			fkv_master_need_room_of(m, u->handles, u->nhandles) :
			fkv_master_need_room(m, u->bytes, u->segment_used);
		break;
	case FLUXONKV_CMD_ACCESS:
		for (i = 0; i < u->nhandles; i++)
			fkv_master_access(m, fkv_upcall_handle(u, i));
		break;
	case FLUXONKV_CMD_DROPPED:
		for (i = 0; i < u->nhandles; i++)
			fkv_master_dropped(m, fkv_upcall_handle(u, i));
		break;
	case FLUXONKV_CMD_SSD_COMMIT:
		if (ssd_commit_failed(u))
			r->status = fkv_master_ssd_commit_failed(m, u->key,
								 u->key_len,
								 u->put_id,
								 u->error,
								 &r->flags);
		else
			r->status = fkv_master_ssd_commit(m, u->key,
							  u->key_len,
							  u->put_id, u->len,
							  &r->flags);
		r->present = A(FLAGS);
		break;
	case FLUXONKV_CMD_SSD_EVICTED:
		each_entry(m, u, any_entry, ssd_evicted);
		break;
	case FLUXONKV_CMD_PUT_LOCAL:
		each_entry(m, u, put_local_entry, put_local);
		break;
	case FLUXONKV_CMD_SSD_STATE:
		fkv_master_set_ssd_capacity(m, u->ssd_capacity);
		if (u->present & A(PUT_ID))
			fkv_master_note_put_id(m, u->put_id);
		break;
	case FLUXONKV_CMD_FETCH:
	case FLUXONKV_CMD_PUT_PLACE:
		/* The cluster runtime moves bytes; the master never does. */
		r->status = -EOPNOTSUPP;
		break;
	}
	if (r->status)
		r->present = 0;
	return fkv_upcall_wants_reply(u->cmd);
}

struct adopt_ctx {
	struct fkv_master *m;
	unsigned long mem, ssd, refused;
	uint64_t bytes;
	struct fkv_adopted *mems;	/* to persist again if no SSD copy */
};

static void adopt_one(void *arg, const struct fkv_dump_rec *r)
{
	struct adopt_ctx *x = arg;
	bool mem = r->source == FLUXONKV_SOURCE_MEMORY;
	int ret = fkv_master_adopt(x->m, r->key, r->key_len, r->put_id,
				   mem ? r->handle : 0, r->len, !mem);

	if (ret <= 0) {
		x->refused++;
	} else if (mem) {
		x->mem++;
		x->bytes += r->len;
		fkv_adopted_add(&x->mems, r->key, r->key_len, r->put_id,
				r->handle);
	} else {
		x->ssd++;
	}
}

int fkv_adopt_kept(struct fkv_master *m, struct fkv_nl *nl, const char *what)
{
	struct adopt_ctx x = { .m = m };
	unsigned long again;
	unsigned int bad = 0;
	int err;

	err = fkv_nl_dump_module(adopt_one, &x, &bad);
	/*
	 * The DRAM replicas adopted without an SSD copy (their persist had
	 * not committed when the previous master died) are persisted again,
	 * so a restart does not leave them to be evicted for good.
	 */
	again = fkv_master_repersist_adopted(m, &x.mems);
	/* The refused ones are dropped (in the module already): serve the rest. */
	fkv_nl_send_adopt_done(nl);
	if (err) {
		fkv_err("warm restart: cannot list the module's kept replicas: "
			"%s", strerror(-err));
		return err;
	}
	fkv_info("warm restart (%s): adopted %lu DRAM replicas (%llu bytes) "
		 "and %lu SSD copies kept by the module; %lu refused (newer "
		 "or deleted versions), %u malformed; %lu persisted again "
		 "(no SSD copy had committed)", what, x.mem,
		 (unsigned long long)x.bytes, x.ssd, x.refused, bad, again);
	return 0;
}
