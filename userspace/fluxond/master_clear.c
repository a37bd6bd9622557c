// SPDX-License-Identifier: GPL-2.0
/*
 * master_clear.c - remove every key of a tenant, or every key of it a
 * regular expression matches (Mooncake's remove_all / remove_by_regex):
 * the keys are collected from the route table first, then deleted one by
 * one as a client's DELETE is (the walk must not see the table change).
 * A tenant's keys are those with its prefix (tenant 0: those without
 * any); the expression sees a key without its prefix, as its tenant wrote
 * it.
 */
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../common/tenant.h"
#include "log.h"
#include "master.h"

struct clear_keys {
	uint32_t tenant;	/* only this tenant's keys */
	const regex_t *re;	/* NULL: every key */
	char *buf;		/* key_len (2 bytes), key bytes, ... */
	size_t len, cap;
	size_t n;
	char *scratch;		/* a key with a NUL after it, for regexec */
};

static bool clear_match(struct clear_keys *c, const void *key, size_t key_len)
{
	size_t prefix;

	if (fkv_key_tenant(key, key_len, &prefix) != c->tenant)
		return false;
	if (!c->re)
		return true;
	key = (const uint8_t *)key + prefix;
	key_len -= prefix;
	if (memchr(key, '\0', key_len))
		return false;	/* regexec sees C strings only */
	memcpy(c->scratch, key, key_len);
	c->scratch[key_len] = '\0';
	return regexec(c->re, c->scratch, 0, NULL, 0) == 0;
}

static int clear_collect(void *arg, const void *key, size_t key_len)
{
	struct clear_keys *c = arg;
	size_t need = 2 + key_len;
	uint16_t l = (uint16_t)key_len;

	if (!clear_match(c, key, key_len))
		return 0;
	if (c->len + need > c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 4096;
		char *n;

		while (ncap < c->len + need)
			ncap *= 2;
		n = realloc(c->buf, ncap);
		if (!n)
			return -ENOMEM;
		c->buf = n;
		c->cap = ncap;
	}
	memcpy(c->buf + c->len, &l, 2);
	memcpy(c->buf + c->len + 2, key, key_len);
	c->len += need;
	c->n++;
	return 0;
}

int fkv_master_remove_matching(struct fkv_master *m, uint32_t tenant,
			       const char *pattern, uint64_t *removed)
{
	struct clear_keys c = { .tenant = tenant };
	regex_t re;
	uint64_t put_id;
	size_t off;
	int err;

	*removed = 0;
	if (pattern) {
		if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))
			return -EINVAL;
		c.re = &re;
		c.scratch = malloc(FLUXONKV_KEY_MAX + 1);
		if (!c.scratch) {
			err = -ENOMEM;
			goto out_regfree;
		}
	}
	err = fkv_master_for_each_key(m, clear_collect, &c);
	if (err)
		goto out_free;
	for (off = 0; off < c.len;) {
		uint16_t l;

		memcpy(&l, c.buf + off, 2);
		if (!fkv_master_clear_key(m, c.buf + off + 2, l, &put_id))
			(*removed)++;
		off += 2 + (size_t)l;
	}
	fkv_info("removed %llu of %zu key(s) of tenant %u %s%s",
		 (unsigned long long)*removed, c.n, tenant,
		 pattern ? "matching " : "(all)", pattern ? pattern : "");
out_free:
	free(c.buf);
	free(c.scratch);
out_regfree:
	if (pattern)
		regfree(&re);
	return err;
}
