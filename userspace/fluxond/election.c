// SPDX-License-Identifier: GPL-2.0
/*
 * election.c - the master election on etcd (see election.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election.h"

struct fkv_election {
	struct fkv_etcd *e;
	char key_leader[FKV_ELECT_KEY_BUF];
	char key_term[FKV_ELECT_KEY_BUF];
	char key_fences[FKV_ELECT_KEY_BUF];	/* "<prefix>/fences/" */
	char key_cands[FKV_ELECT_KEY_BUF];	/* "<prefix>/candidates/" */
	char key_cand[FKV_ELECT_KEY_BUF + FKV_ELECT_NAME_BUF];	/* ours */
	int64_t cand_lease;	/* the lease our candidate key is under */
	char value[FKV_ELECT_NAME_BUF + FKV_ELECT_ADDR_BUF];
	unsigned int ttl_ms;
	bool candidate;
	bool leader;
	int64_t lease;		/* ours; 0: none */
	int64_t rev;		/* our leader key's create_revision */
	uint64_t held_until;	/* leader: the lease counts until then */
	uint64_t next_keepalive;
	struct fkv_leader seen;	/* the last leader read */
	struct fkv_election_stats st;
};

int fkv_leader_parse(const char *v, size_t len, struct fkv_leader *l)
{
	const char *sp = memchr(v, ' ', len);
	size_t nlen, alen;

	memset(l, 0, sizeof(*l));
	if (!sp)
		return -EPROTO;
	nlen = (size_t)(sp - v);
	alen = len - nlen - 1;
	if (nlen == 0 || nlen >= sizeof(l->name) || alen == 0 ||
	    alen >= sizeof(l->addr) || memchr(v, '\0', len))
		return -EPROTO;
	memcpy(l->name, v, nlen);
	memcpy(l->addr, sp + 1, alen);
	l->present = true;
	return 0;
}

int fkv_election_create(struct fkv_election **out, struct fkv_etcd *e,
			const struct fkv_election_opts *o, char *err,
			size_t errlen)
{
	struct fkv_election *el;
	int n;

	*out = NULL;
	if (!o->prefix || o->prefix[0] != '/' ||
	    strlen(o->prefix) > FKV_ELECT_KEY_BUF - 16) {
		snprintf(err, errlen, "etcd prefix must start with '/' and be at most %d bytes",
			 FKV_ELECT_KEY_BUF - 16);
		return -EINVAL;
	}
	if (!o->name || !o->name[0] || strlen(o->name) >= FKV_ELECT_NAME_BUF ||
	    strchr(o->name, ' ')) {
		snprintf(err, errlen, "election: bad node name");
		return -EINVAL;
	}
	if (o->candidate && (!o->addr || !o->addr[0] ||
			     strlen(o->addr) >= FKV_ELECT_ADDR_BUF)) {
		snprintf(err, errlen, "election: a candidate needs its control address");
		return -EINVAL;
	}
	if (o->ttl_ms < 1000) {
		snprintf(err, errlen, "election: lease TTL %u ms (>= 1000)",
			 o->ttl_ms);
		return -EINVAL;
	}
	el = calloc(1, sizeof(*el));
	if (!el) {
		snprintf(err, errlen, "election: out of memory");
		return -ENOMEM;
	}
	el->e = e;
	el->ttl_ms = o->ttl_ms;
	el->candidate = o->candidate;
	snprintf(el->key_leader, sizeof(el->key_leader), "%s/leader", o->prefix);
	snprintf(el->key_term, sizeof(el->key_term), "%s/term", o->prefix);
	snprintf(el->key_fences, sizeof(el->key_fences), "%s/fences/",
		 o->prefix);
	snprintf(el->key_cands, sizeof(el->key_cands), "%s/candidates/",
		 o->prefix);
	snprintf(el->key_cand, sizeof(el->key_cand), "%s%s", el->key_cands,
		 o->name);
	n = snprintf(el->value, sizeof(el->value), "%s %s", o->name,
		     o->addr ? o->addr : "-");
	(void)n;
	*out = el;
	return 0;
}

void fkv_election_destroy(struct fkv_election *el)
{
	if (!el)
		return;
	fkv_election_resign(el);
	free(el);
}

bool fkv_election_is_leader(const struct fkv_election *el)
{
	return el->leader;
}

uint64_t fkv_election_held_until(const struct fkv_election *el)
{
	return el->leader ? el->held_until : 0;
}

void fkv_election_get_stats(const struct fkv_election *el,
			    struct fkv_election_stats *st)
{
	*st = el->st;
}

void fkv_election_handle(const struct fkv_election *el, int64_t *lease,
			 int64_t *rev)
{
	*lease = el->leader ? el->lease : 0;
	*rev = el->leader ? el->rev : 0;
}

/* The seconds etcd is asked for: ttl_ms rounded up. */
static int64_t fkv_election_ttl_s(const struct fkv_election *el)
{
	return (el->ttl_ms + 999) / 1000;
}

static void fkv_election_step_down(struct fkv_election *el)
{
	el->leader = false;
	el->lease = 0;		/* a new one for the next campaign */
	el->rev = 0;
	el->st.stepdowns++;
}

/* Note the leader read; CHANGED if it differs from the last one. */
static void fkv_election_saw(struct fkv_election *el,
			     const struct fkv_leader *l,
			     enum fkv_elect_event *ev)
{
	if (l->present != el->seen.present || l->rev != el->seen.rev) {
		el->st.leader_changes++;
		if (*ev == FKV_ELECT_NONE)
			*ev = FKV_ELECT_CHANGED;
	}
	el->seen = *l;
}

static int fkv_election_kv_leader(const struct fkv_etcd_kv *kv,
				  struct fkv_leader *l)
{
	int err = fkv_leader_parse(kv->value, kv->value_len, l);

	if (err)
		return err;
	l->rev = kv->create_revision;
	l->lease = kv->lease;
	return 0;
}

static int fkv_election_keepalive(struct fkv_election *el, uint64_t now_ms)
{
	int64_t ttl;
	int err;

	err = fkv_etcd_lease_keepalive(el->e, el->lease, &ttl);
	if (err)
		return err;
	el->st.keepalives++;
	/*
	 * etcd expires the lease ttl after it got this keepalive, which is
	 * after @now_ms (taken before sending): hold it a quarter less.
	 */
	el->held_until = now_ms + el->ttl_ms - el->ttl_ms / 4;
	el->next_keepalive = now_ms + el->ttl_ms / 3;
	return 0;
}

int fkv_election_refresh(struct fkv_election *el, uint64_t now_ms)
{
	if (!el->leader)
		return -EPERM;
	return fkv_election_keepalive(el, now_ms);
}

int fkv_election_resume(struct fkv_election *el, int64_t lease, int64_t rev,
			uint64_t now_ms)
{
	struct fkv_etcd_kv kv;
	int err;

	if (!el->candidate || !lease || !rev)
		return -ESTALE;
	el->lease = lease;
	err = fkv_election_keepalive(el, now_ms);
	if (err) {
		el->lease = 0;
		return err == -ENOENT ? -ESTALE : err;
	}
	err = fkv_etcd_get(el->e, el->key_leader, &kv);
	if (err) {
		if (err == -ENOENT)
			err = -ESTALE;
		goto revoke;
	}
	if (kv.create_revision != rev || kv.lease != lease) {
		fkv_etcd_kv_free(&kv);
		err = -ESTALE;
		goto revoke;
	}
	fkv_election_kv_leader(&kv, &el->seen);
	fkv_etcd_kv_free(&kv);
	el->leader = true;
	el->rev = rev;
	el->st.won++;		/* this process's share of the election */
	return 0;

revoke:
	/* Not ours any more: let the lease go, campaign afresh. */
	fkv_etcd_lease_revoke(el->e, lease);
	el->lease = 0;
	return err;
}

static int fkv_election_campaign(struct fkv_election *el, uint64_t now_ms,
				 enum fkv_elect_event *ev,
				 struct fkv_leader *leader)
{
	struct fkv_etcd_kv cur;
	int64_t rev = 0;
	int ok, err;

	if (!el->lease) {
		err = fkv_etcd_lease_grant(el->e, fkv_election_ttl_s(el),
					   &el->lease);
		if (err)
			return err;
	} else {
		/* Keep the waiting lease alive; a lapsed one is replaced. */
		err = fkv_election_keepalive(el, now_ms);
		if (err == -ENOENT) {
			el->lease = 0;
			err = fkv_etcd_lease_grant(el->e, fkv_election_ttl_s(el),
						   &el->lease);
		}
		if (err)
			return err;
	}
	el->held_until = now_ms + el->ttl_ms - el->ttl_ms / 4;
	el->next_keepalive = now_ms + el->ttl_ms / 3;
	/* Listed as a candidate for as long as this lease lives. */
	if (el->cand_lease != el->lease) {
		err = fkv_etcd_put(el->e, el->key_cand, el->value,
				   strlen(el->value), el->lease);
		if (err)
			return err;
		el->cand_lease = el->lease;
	}
	el->st.campaigns++;
	ok = fkv_etcd_create(el->e, el->key_leader, el->value,
			     strlen(el->value), el->lease, &rev, &cur);
	if (ok < 0)
		return ok;
	if (ok) {
		el->leader = true;
		el->rev = rev;
		el->st.won++;
		*ev = FKV_ELECT_WON;
		memset(leader, 0, sizeof(*leader));
		fkv_leader_parse(el->value, strlen(el->value), leader);
		leader->rev = rev;
		leader->lease = el->lease;
		fkv_election_saw(el, leader, ev);
		return 0;
	}
	memset(leader, 0, sizeof(*leader));
	if (cur.value) {
		err = fkv_election_kv_leader(&cur, leader);
		fkv_etcd_kv_free(&cur);
		if (err)
			return err;
	}
	fkv_election_saw(el, leader, ev);
	return 0;
}

int fkv_election_step(struct fkv_election *el, uint64_t now_ms,
		      enum fkv_elect_event *ev, struct fkv_leader *leader)
{
	struct fkv_etcd_kv kv;
	int err;

	*ev = FKV_ELECT_NONE;
	if (el->leader) {
		*leader = el->seen;
		if (now_ms >= el->next_keepalive) {
			err = fkv_election_keepalive(el, now_ms);
			if (err == -ENOENT)
				el->held_until = 0;	/* etcd says gone */
		} else {
			err = 0;
		}
		if (now_ms >= el->held_until) {
			fkv_election_step_down(el);
			*ev = FKV_ELECT_LOST;
			memset(leader, 0, sizeof(*leader));
			el->seen = *leader;
		}
		if (err)
			el->st.etcd_errors++;
		return err;
	}
	if (el->candidate) {
		err = fkv_election_campaign(el, now_ms, ev, leader);
		if (err)
			el->st.etcd_errors++;
		return err;
	}
	err = fkv_etcd_get(el->e, el->key_leader, &kv);
	if (err && err != -ENOENT) {
		el->st.etcd_errors++;
		return err;
	}
	memset(leader, 0, sizeof(*leader));
	if (!err) {
		err = fkv_election_kv_leader(&kv, leader);
		fkv_etcd_kv_free(&kv);
		if (err) {
			el->st.etcd_errors++;
			return err;
		}
	}
	fkv_election_saw(el, leader, ev);
	return 0;
}

static int fkv_election_term_kv(struct fkv_election *el, uint64_t *term,
				int64_t *mod)
{
	struct fkv_etcd_kv kv;
	char *end;
	int err;

	*term = 0;
	*mod = 0;
	err = fkv_etcd_get(el->e, el->key_term, &kv);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	errno = 0;
	*term = strtoull(kv.value, &end, 10);
	if (errno || end == kv.value || *end) {
		fkv_etcd_kv_free(&kv);
		return -EPROTO;
	}
	*mod = kv.mod_revision;
	fkv_etcd_kv_free(&kv);
	return 0;
}

int fkv_election_read_term(struct fkv_election *el, uint64_t *term)
{
	int64_t mod;

	return fkv_election_term_kv(el, term, &mod);
}

int fkv_election_raise_term(struct fkv_election *el, uint64_t floor,
			    uint64_t *term)
{
	for (int tries = 0; tries < 8; tries++) {
		uint64_t cur, next;
		int64_t mod;
		char buf[24];
		int ok;

		if (!el->leader)
			return -EPERM;
		ok = fkv_election_term_kv(el, &cur, &mod);
		if (ok)
			return ok;
		next = cur + 1 > floor ? cur + 1 : floor;
		snprintf(buf, sizeof(buf), "%" PRIu64, next);
		ok = fkv_etcd_cas(el->e, el->key_term, mod, buf, strlen(buf),
				  el->key_leader, el->rev);
		if (ok < 0)
			return ok;
		if (ok) {
			*term = next;
			return 0;
		}
		/* The term moved, or our leader key is gone: which? */
		{
			struct fkv_etcd_kv kv;
			int err = fkv_etcd_get(el->e, el->key_leader, &kv);

			if (err && err != -ENOENT)
				return err;
			if (err == -ENOENT || kv.create_revision != el->rev) {
				if (!err)
					fkv_etcd_kv_free(&kv);
				return -EPERM;
			}
			fkv_etcd_kv_free(&kv);
		}
	}
	return -EAGAIN;
}

static int fkv_fence_parse(const struct fkv_etcd_kv *kv, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(kv->value, &end, 16);
	return errno || end == kv->value || *end ? -EPROTO : 0;
}

int fkv_election_fence_raise(struct fkv_election *el, const char *name,
			     uint64_t put_id)
{
	char key[FKV_ELECT_KEY_BUF + FKV_ELECT_NAME_BUF], buf[24];
	struct fkv_etcd_kv kv;
	int err, ok;

	if ((size_t)snprintf(key, sizeof(key), "%s%s", el->key_fences, name) >=
	    sizeof(key))
		return -ENAMETOOLONG;
	snprintf(buf, sizeof(buf), "%" PRIx64, put_id);
	for (int tries = 0; tries < 8; tries++) {
		int64_t mod = 0;
		uint64_t cur;

		if (!el->leader)
			return -EPERM;
		err = fkv_etcd_get(el->e, key, &kv);
		if (err && err != -ENOENT)
			return err;
		if (!err) {
			err = fkv_fence_parse(&kv, &cur);
			mod = kv.mod_revision;
			fkv_etcd_kv_free(&kv);
			if (err)
				return err;
			if (cur >= put_id)
				return 0;	/* only ever rises */
		}
		ok = fkv_etcd_cas(el->e, key, mod, buf, strlen(buf),
				  el->key_leader, el->rev);
		if (ok < 0)
			return ok;
		if (ok)
			return 0;
		/* Moved, or no longer ours: the guard tells on the next try. */
		err = fkv_etcd_get(el->e, el->key_leader, &kv);
		if (err && err != -ENOENT)
			return err;
		if (err == -ENOENT || kv.create_revision != el->rev) {
			if (!err)
				fkv_etcd_kv_free(&kv);
			return -EPERM;
		}
		fkv_etcd_kv_free(&kv);
	}
	return -EAGAIN;
}

int fkv_election_fence_lift(struct fkv_election *el, const char *name,
			    uint64_t put_id)
{
	char key[FKV_ELECT_KEY_BUF + FKV_ELECT_NAME_BUF];
	struct fkv_etcd_kv kv;
	uint64_t cur;
	int64_t mod;
	int err, ok;

	if ((size_t)snprintf(key, sizeof(key), "%s%s", el->key_fences, name) >=
	    sizeof(key))
		return -ENAMETOOLONG;
	if (!el->leader)
		return -EPERM;
	err = fkv_etcd_get(el->e, key, &kv);
	if (err == -ENOENT)
		return 0;
	if (err)
		return err;
	err = fkv_fence_parse(&kv, &cur);
	mod = kv.mod_revision;
	fkv_etcd_kv_free(&kv);
	if (err)
		return err;
	if (cur != put_id)
		return 0;	/* lifted, or raised again since */
	/* "0": no fence; only if unchanged since we read it, while ours */
	ok = fkv_etcd_cas(el->e, key, mod, "0", 1, el->key_leader, el->rev);
	if (ok < 0)
		return ok;
	return ok ? 0 : -EAGAIN;
}

struct fkv_fence_walk {
	size_t skip;
	int (*fn)(void *arg, const char *name, uint64_t put_id);
	void *arg;
};

static int fkv_fence_one(void *arg, const char *key,
			 const struct fkv_etcd_kv *kv)
{
	struct fkv_fence_walk *w = arg;
	uint64_t v;

	if (strlen(key) <= w->skip || fkv_fence_parse(kv, &v))
		return -EPROTO;
	return w->fn(w->arg, key + w->skip, v);
}

int fkv_election_fences_load(struct fkv_election *el,
			     int (*fn)(void *arg, const char *name,
				       uint64_t put_id),
			     void *arg)
{
	struct fkv_fence_walk w = { strlen(el->key_fences), fn, arg };

	return fkv_etcd_get_prefix(el->e, el->key_fences, fkv_fence_one, &w);
}

void fkv_election_resign(struct fkv_election *el)
{
	if (el->leader && el->rev)
		fkv_etcd_delete_if(el->e, el->key_leader, el->rev);
	if (el->lease)
		fkv_etcd_lease_revoke(el->e, el->lease);
	el->leader = false;
	el->lease = 0;
	el->rev = 0;
}

struct cands_walk {
	int (*fn)(void *arg, const char *name, const char *addr);
	void *arg;
};

static int cand_one(void *arg, const char *key, const struct fkv_etcd_kv *kv)
{
	struct cands_walk *w = arg;
	struct fkv_leader l;

	(void)key;
	/* the value is the leader key's: "<name> <addr>"; skip the malformed */
	if (fkv_leader_parse(kv->value, kv->value_len, &l))
		return 0;
	return w->fn(w->arg, l.name, l.addr);
}

int fkv_election_candidates(struct fkv_election *el,
			    int (*fn)(void *arg, const char *name,
				      const char *addr),
			    void *arg)
{
	struct cands_walk w = { fn, arg };

	return fkv_etcd_get_prefix(el->e, el->key_cands, cand_one, &w);
}
