// SPDX-License-Identifier: GPL-2.0
/*
 * upcall.c - walking the nested entries of an upcall (upcall.h).
 */
#include <errno.h>

#include <linux/netlink.h>

#include "upcall.h"

/*
 * The attribute at @off of a stream of @len bytes: 0 with its type, payload
 * and payload length, or -EINVAL if no whole attribute starts there.
 * Attributes are read with memcpy: the stream may be unaligned.
 */
static int attr_at(const uint8_t *base, size_t len, size_t off,
		   uint16_t *type, const uint8_t **data, size_t *plen)
{
	struct nlattr a;

	if (off > len || len - off < NLA_HDRLEN)
		return -EINVAL;
	memcpy(&a, base + off, sizeof(a));
	if (a.nla_len < NLA_HDRLEN || a.nla_len > len - off)
		return -EINVAL;
	*type = a.nla_type & NLA_TYPE_MASK;
	*data = base + off + NLA_HDRLEN;
	*plen = a.nla_len - NLA_HDRLEN;
	return 0;
}

/* Decode one entry's nested attributes; 0 or -EINVAL. */
static int parse_entry(const uint8_t *p, size_t len, struct fkv_ssd_entry *e)
{
	bool have_key = false, have_id = false;
	const uint8_t *data;
	size_t off = 0, plen;
	uint16_t type;

	memset(e, 0, sizeof(*e));
	while (!attr_at(p, len, off, &type, &data, &plen)) {
		switch (type) {
		case FLUXONKV_A_KEY:
			if (have_key || !plen || plen > FLUXONKV_KEY_MAX)
				return -EINVAL;
			e->key = data;
			e->key_len = plen;
			have_key = true;
			break;
		case FLUXONKV_A_PUT_ID:
			if (have_id || plen != sizeof(e->put_id))
				return -EINVAL;
			memcpy(&e->put_id, data, sizeof(e->put_id));
			have_id = true;
			break;
		case FLUXONKV_A_HANDLE:
			if (plen != sizeof(e->handle))
				return -EINVAL;
			memcpy(&e->handle, data, sizeof(e->handle));
			break;
		case FLUXONKV_A_LEN:
			if (plen != sizeof(e->len))
				return -EINVAL;
			memcpy(&e->len, data, sizeof(e->len));
			break;
		case FLUXONKV_A_FLAGS:
			if (plen != sizeof(e->flags))
				return -EINVAL;
			memcpy(&e->flags, data, sizeof(e->flags));
			break;
		case FLUXONKV_A_DROPPED:
			if (plen != sizeof(e->dropped))
				return -EINVAL;
			memcpy(&e->dropped, data, sizeof(e->dropped));
			break;
		default:
			break;	/* PAD before a u64, or newer attributes */
		}
		off += NLA_ALIGN(NLA_HDRLEN + plen);
	}
	/* Trailing bytes that are no attribute: the nest is malformed. */
	if (off < len)
		return -EINVAL;
	return have_key && have_id && e->put_id ? 0 : -EINVAL;
}

int fkv_upcall_next_entry(const struct fkv_upcall *u, size_t *pos,
			  struct fkv_ssd_entry *e)
{
	const uint8_t *data;
	uint16_t type;
	size_t plen;

	if (!u->attrs)
		return 0;
	while (!attr_at(u->attrs, u->attrs_len, *pos, &type, &data, &plen)) {
		*pos += NLA_ALIGN(NLA_HDRLEN + plen);
		if (type != FLUXONKV_A_ENTRY)
			continue;
		return parse_entry(data, plen, e) ? -EINVAL : 1;
	}
	return 0;
}
