// SPDX-License-Identifier: GPL-2.0
/*
 * config: the node's YAML configuration (libyaml document API), the size
 * strings and host:port addresses in it.  See <fluxonkv_config.h> for the
 * file format and both grammars; ssd_plan.c turns the result into SSD
 * shards.  Nothing here prints, and nothing here resolves a name.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "fluxonkv_config.h"
#include "config_msg.h"

/* Size strings: the exact fraction is computed over at most this many. */
#define FKV_SIZE_FRAC_DIGITS	64

/* ---- messages ---------------------------------------------------------- */

void fkv_msgs_free(struct fkv_msgs *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

int fkv_msgs_vadd(struct fkv_msgs *m, const char *fmt, va_list ap)
{
	char **v, *s;

	if (vasprintf(&s, fmt, ap) < 0)
		return -ENOMEM;
	v = realloc(m->v, (m->n + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return -ENOMEM;
	}
	v[m->n++] = s;
	m->v = v;
	return 0;
}

int fkv_msgs_add(struct fkv_msgs *m, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = fkv_msgs_vadd(m, fmt, ap);
	va_end(ap);
	return ret;
}

/* Every message of @m into @err, one per line, truncated to @errlen. */
void fkv_msgs_copy(const struct fkv_msgs *m, char *err, size_t errlen)
{
	size_t i, used = 0;
	int n;

	if (!err || !errlen)
		return;
	err[0] = '\0';
	for (i = 0; i < m->n && used < errlen; i++) {
		n = snprintf(err + used, errlen - used, "%s%s", i ? "\n" : "",
			     m->v[i]);
		if (n < 0)
			break;
		used += n;
	}
}

void fkv_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * @s (@len bytes, may hold NULs) as a double-quoted, single-line string:
 * '"' and '\' escaped, bytes outside printable ASCII as \xNN, elided after
 * FKV_QUOTE_MAX bytes.  @buf has FKV_QUOTE_BUF bytes.
 */
const char *fkv_quote_n(char *buf, const char *s, size_t len)
{
	char *p = buf;
	size_t i;

	*p++ = '"';
	for (i = 0; i < len && i < FKV_QUOTE_MAX; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = c;
		} else if (c < 0x20 || c >= 0x7f) {
			p += sprintf(p, "\\x%02x", c);
		} else {
			*p++ = c;
		}
	}
	if (i < len)
		p += sprintf(p, "...");
	*p++ = '"';
	*p = '\0';
	return buf;
}

const char *fkv_quote(char *buf, const char *s)
{
	return fkv_quote_n(buf, s, strlen(s));
}

/* ---- sizes ------------------------------------------------------------- */

static const struct {
	const char *name;
	unsigned int shift;
} fkv_units[] = {
	{ "", 0 }, { "B", 0 },
	{ "KB", 10 }, { "KiB", 10 },
	{ "MB", 20 }, { "MiB", 20 },
	{ "GB", 30 }, { "GiB", 30 },
	{ "TB", 40 }, { "TiB", 40 },
};

/*
 * floor(0.<digits> * 2^shift), exactly: double the decimal fraction @shift
 * times; each carry out of its first digit is the next bit.
 */
static uint64_t fkv_frac_scale(const char *digits, size_t n,
			       unsigned int shift)
{
	unsigned char d[FKV_SIZE_FRAC_DIGITS];
	uint64_t v = 0;
	unsigned int s;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = digits[i] - '0';
	for (s = 0; s < shift; s++) {
		unsigned int carry = 0;

		for (i = n; i-- > 0;) {
			unsigned int x = d[i] * 2 + carry;

			d[i] = x % 10;
			carry = x / 10;
		}
		v = v << 1 | carry;
	}
	return v;
}

int fkv_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
	const char *p = s, *frac = NULL;
	char q[FKV_QUOTE_BUF];
	size_t nfrac = 0, i;
	uint64_t v = 0, f;
	int shift = -1;

	if (!*p) {
		fkv_seterr(err, errlen, "empty size");
		return -EINVAL;
	}
	if (*p == '-') {
		fkv_seterr(err, errlen, "negative size");
		return -EINVAL;
	}
	if (!isdigit((unsigned char)*p)) {
		fkv_seterr(err, errlen,
			   "not a size (want digits and a unit, e.g. \"4GB\" or 4294967296)");
		return -EINVAL;
	}
	for (; isdigit((unsigned char)*p); p++) {
		if (v > (FKV_SIZE_MAX - (*p - '0')) / 10)
			goto too_large;
		v = v * 10 + (*p - '0');
	}
	if (*p == '.') {
		frac = ++p;
		while (isdigit((unsigned char)*p))
			p++;
		nfrac = p - frac;
		if (!nfrac) {
			fkv_seterr(err, errlen, "a digit must follow '.'");
			return -EINVAL;
		}
		if (nfrac > FKV_SIZE_FRAC_DIGITS) {
			fkv_seterr(err, errlen,
				   "more than %d digits after '.'",
				   FKV_SIZE_FRAC_DIGITS);
			return -EINVAL;
		}
	}
	while (*p == ' ')
		p++;
	for (i = 0; i < sizeof(fkv_units) / sizeof(fkv_units[0]); i++) {
		if (!strcasecmp(p, fkv_units[i].name)) {
			shift = fkv_units[i].shift;
			break;
		}
	}
	if (shift < 0) {
		fkv_seterr(err, errlen,
			   "unknown unit %s (use B, KB, MB, GB, TB; binary units)",
			   fkv_quote(q, p));
		return -EINVAL;
	}
	if (v > FKV_SIZE_MAX >> shift)
		goto too_large;
	v <<= shift;
	f = frac ? fkv_frac_scale(frac, nfrac, shift) : 0;
	if (f > FKV_SIZE_MAX - v)
		goto too_large;
	v += f;
	if (v < FKV_SIZE_MIN) {
		fkv_seterr(err, errlen,
			   "%llu bytes is below the minimum of %llu bytes (one O_DIRECT sector)",
			   (unsigned long long)v, FKV_SIZE_MIN);
		return -EINVAL;
	}
	*out = v;
	return 0;

too_large:
	fkv_seterr(err, errlen, "too large (at most 2^63-1 bytes)");
	return -ERANGE;
}

/* ---- host:port --------------------------------------------------------- */

#define FKV_LABEL_MAX	63	/* one DNS label */

/* An IPv4 dotted quad, strictly: four octets 0..255, no leading zeros. */
static bool fkv_ipv4_ok(const char *h, size_t len)
{
	unsigned int octets = 0, v, digits;
	size_t i = 0;

	while (octets < 4) {
		v = 0;
		digits = 0;
		while (i < len && h[i] >= '0' && h[i] <= '9' && digits < 4) {
			v = v * 10 + (h[i++] - '0');
			digits++;
		}
		if (!digits || digits > 3 || v > 255 ||
		    (digits > 1 && h[i - digits] == '0'))
			return false;
		if (++octets < 4) {
			if (i >= len || h[i] != '.')
				return false;
			i++;
		}
	}
	return i == len;
}

/* Why @h (@len bytes, no brackets) is no valid host, or NULL. */
static const char *fkv_host_problem(const char *h, size_t len, bool bracketed)
{
	char ip6[INET6_ADDRSTRLEN];
	struct in6_addr a6;
	size_t i, label = 0;
	bool numeric = true;

	if (!len)
		return "is empty";
	if (bracketed) {
		if (memchr(h, '%', len))
			return "has a zone (%...): not supported, use an address without one";
		if (len >= sizeof(ip6))
			return "is not an IPv6 address";
		memcpy(ip6, h, len);
		ip6[len] = '\0';
		if (inet_pton(AF_INET6, ip6, &a6) != 1)
			return "is not an IPv6 address";
		return NULL;
	}
	for (i = 0; i < len; i++)
		if (!(h[i] >= '0' && h[i] <= '9') && h[i] != '.')
			numeric = false;
	if (numeric)	/* never a name: the last label of one has a letter */
		return fkv_ipv4_ok(h, len) ? NULL :
		       "is not an IPv4 address (four decimal numbers 0..255 without leading zeros, e.g. 10.0.0.1)";
	if (len > FKV_HOST_MAX)
		return "is longer than 253 bytes";
	for (i = 0; i < len; i++) {
		unsigned char c = h[i];

		if (c == '.') {
			if (!label)
				return "has an empty label (a leading, trailing or doubled '.')";
			if (h[i - 1] == '-')
				return "has a label ending with '-'";
			label = 0;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_')
			return "may only contain letters, digits, '-', '_' and '.' (a DNS name), or be an IPv4 address or [IPv6]";
		if (!label && c == '-')
			return "has a label starting with '-'";
		if (++label > FKV_LABEL_MAX)
			return "has a label longer than 63 bytes";
	}
	if (!label)
		return "has an empty label (a leading, trailing or doubled '.')";
	if (h[len - 1] == '-')
		return "has a label ending with '-'";
	return NULL;
}

int fkv_parse_hostport(const char *s, char *host, size_t host_size,
		       uint16_t *port, char *err, size_t errlen)
{
	const char *hs, *colon, *p, *why;
	char q[FKV_QUOTE_BUF];
	bool bracketed = false;
	unsigned long v = 0;
	size_t hlen;

	if (!*s) {
		fkv_seterr(err, errlen, "empty address (want host:port)");
		return -EINVAL;
	}
	if (*s == '[') {
		const char *close = strchr(s, ']');

		if (!close) {
			fkv_seterr(err, errlen,
				   "'[' without ']' (want [IPv6]:port)");
			return -EINVAL;
		}
		if (close[1] != ':') {
			fkv_seterr(err, errlen, "%s after ']' (want [IPv6]:port)",
				   close[1] ? fkv_quote(q, close + 1) :
				   "no :port");
			return -EINVAL;
		}
		bracketed = true;
		hs = s + 1;
		hlen = close - hs;
		colon = close + 1;
	} else {
		if (strchr(s, '[')) {
			fkv_seterr(err, errlen,
				   "'[' may only open the host (want [IPv6]:port)");
			return -EINVAL;
		}
		if (strchr(s, ']')) {
			fkv_seterr(err, errlen,
				   "']' without '[' (want [IPv6]:port)");
			return -EINVAL;
		}
		colon = strchr(s, ':');
		if (!colon) {
			fkv_seterr(err, errlen, "no :port (want host:port)");
			return -EINVAL;
		}
		if (strchr(colon + 1, ':')) {
			/* an IPv6 address: which ':' starts the port? */
			fkv_seterr(err, errlen,
				   "more than one ':': write an IPv6 address in brackets, e.g. \"[::1]:7470\"");
			return -EINVAL;
		}
		hs = s;
		hlen = colon - s;
	}
	why = fkv_host_problem(hs, hlen, bracketed);
	if (why) {
		fkv_seterr(err, errlen, "host %s %s", fkv_quote_n(q, hs, hlen),
			   why);
		return -EINVAL;
	}
	if (hlen >= host_size) {
		fkv_seterr(err, errlen, "host is longer than %zu bytes",
			   host_size ? host_size - 1 : 0);
		return -EINVAL;
	}
	for (p = colon + 1; *p >= '0' && *p <= '9' && v <= 65535; p++)
		v = v * 10 + (*p - '0');
	if (p == colon + 1 || *p || !v || v > 65535 || colon[1] == '0') {
		fkv_seterr(err, errlen,
			   "port %s: must be a decimal number from 1 to 65535%s",
			   fkv_quote(q, colon + 1),
			   colon[1] == '0' && colon[2] ? " without leading zeros" : "");
		return -EINVAL;
	}
	memcpy(host, hs, hlen);
	host[hlen] = '\0';
	*port = (uint16_t)v;
	return 0;
}

bool fkv_host_is_wildcard(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, host, &a4) == 1)
		return a4.s_addr == htonl(INADDR_ANY);
	if (inet_pton(AF_INET6, host, &a6) != 1)
		return false;
	/* ::ffff:0.0.0.0 is 0.0.0.0 too: it would dial this host */
	return IN6_IS_ADDR_UNSPECIFIED(&a6) ||
	       (IN6_IS_ADDR_V4MAPPED(&a6) && !a6.s6_addr32[3]);
}

const char *fkv_hostport_str(char *buf, size_t len,
			     const struct fkv_hostport *hp)
{
	bool v6 = strchr(hp->host, ':');

	snprintf(buf, len, "%s%s%s:%u", v6 ? "[" : "", hp->host,
		 v6 ? "]" : "", hp->port);
	return buf;
}

const char *fkv_cluster_role_name(enum fkv_cluster_role role)
{
	switch (role) {
	case FKV_ROLE_MASTER:
		return "master";
	case FKV_ROLE_NODE:
		return "node";
	}
	return "?";
}

const char *fkv_transport_name(enum fkv_transport t)
{
	switch (t) {
	case FKV_TRANSPORT_TCP:
		return "tcp";
	case FKV_TRANSPORT_RDMA:
		return "rdma";
	case FKV_TRANSPORT_AUTO:
		return "auto";
	}
	return "?";
}

/* ---- YAML -------------------------------------------------------------- */

struct fkv_cfg_ctx {
	const char *name;
	yaml_document_t *doc;
	struct fkv_config *c;
	int oom;
};

static __attribute__((format(printf, 3, 4)))
void fkv_cfg_err(struct fkv_cfg_ctx *x, const yaml_node_t *n,
		 const char *fmt, ...)
{
	char *msg;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (ret < 0) {
		x->oom = 1;
		return;
	}
	if (n)
		ret = fkv_msgs_add(&x->c->errors, "%s:%zu:%zu: %s", x->name,
				   n->start_mark.line + 1,
				   n->start_mark.column + 1, msg);
	else
		ret = fkv_msgs_add(&x->c->errors, "%s: %s", x->name, msg);
	free(msg);
	if (ret)
		x->oom = 1;
}

static const char *fkv_scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* A YAML null: the !!null tag, or a plain "", "~", "null", "Null", "NULL". */
static bool fkv_is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE)
		return false;
	if (n->tag && !strcmp((const char *)n->tag, YAML_NULL_TAG))
		return true;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	v = fkv_scalar(n);
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") ||
	       !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/*
 * The text of a scalar that must be a string, or NULL after an error
 * (@what names the entry in the message).
 */
static const char *fkv_cfg_string(struct fkv_cfg_ctx *x, yaml_node_t *n,
				  const char *what)
{
	char q[FKV_QUOTE_BUF];

	if (n->type != YAML_SCALAR_NODE) {
		fkv_cfg_err(x, n, "%s: must be a string, not a %s", what,
			    n->type == YAML_SEQUENCE_NODE ? "list" : "mapping");
		return NULL;
	}
	if (strlen(fkv_scalar(n)) != n->data.scalar.length) {
		fkv_cfg_err(x, n, "%s: %s: contains a NUL byte", what,
			    fkv_quote_n(q, fkv_scalar(n), n->data.scalar.length));
		return NULL;
	}
	return fkv_scalar(n);
}

/* A name that becomes one path component: [A-Za-z0-9._-]{1,64}, no '.' first. */
static const char *fkv_name_problem(const char *s)
{
	const char *p;

	if (!*s)
		return "is empty";
	if (strlen(s) > FKV_NAME_MAX)
		return "is longer than 64 bytes";
	if (*s == '.')
		return "must not start with '.'";
	for (p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
			return "may only contain letters, digits, '.', '_' and '-' (it names a directory)";
	return NULL;
}

/* The host name, made a valid name: bad bytes become '_'. */
static char *fkv_default_instance(void)
{
	char host[HOST_NAME_MAX + 1] = "";
	size_t i;

	if (gethostname(host, sizeof(host)) || !host[0])
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = '\0';
	host[FKV_NAME_MAX] = '\0';
	for (i = 0; host[i]; i++)
		if (!isalnum((unsigned char)host[i]) && !strchr("._-", host[i]))
			host[i] = '_';
	if (host[0] == '.')
		host[0] = '_';
	return strdup(host);
}

static void fkv_cfg_name(struct fkv_cfg_ctx *x, yaml_node_t *n,
			 const char *key, char **dst)
{
	const char *v, *why;
	char q[FKV_QUOTE_BUF];

	if (fkv_is_null(n))
		return;
	v = fkv_cfg_string(x, n, key);
	if (!v)
		return;
	why = fkv_name_problem(v);
	if (why) {
		fkv_cfg_err(x, n, "%s: %s: %s", key, fkv_quote(q, v), why);
		return;
	}
	free(*dst);
	*dst = strdup(v);
	if (!*dst)
		x->oom = 1;
}

/*
 * A decimal integer in [@min, @max] (@max well below ULONG_MAX / 10) into
 * *@out; false after an error, whose message ends with "(@unit)".
 */
static bool fkv_cfg_uint(struct fkv_cfg_ctx *x, yaml_node_t *n,
			 const char *key, unsigned long min, unsigned long max,
			 const char *unit, unsigned int *out)
{
	char q[FKV_QUOTE_BUF];
	unsigned long v = 0;
	const char *s, *p;

	s = fkv_cfg_string(x, n, key);
	if (!s)
		return false;
	for (p = s; isdigit((unsigned char)*p) && v <= max; p++)
		v = v * 10 + (*p - '0');
	if (p == s || *p || v < min || v > max) {
		fkv_cfg_err(x, n, "%s: %s: must be an integer from %lu to %lu (%s)",
			    key, fkv_quote(q, s), min, max, unit);
		return false;
	}
	*out = v;
	return true;
}

static void fkv_cfg_segment_mb(struct fkv_cfg_ctx *x, yaml_node_t *n)
{
	if (!fkv_is_null(n))
		fkv_cfg_uint(x, n, "segment_mb", 1, FKV_SEGMENT_MB_MAX, "MiB",
			     &x->c->segment_mb);
}

/* The entries of a list, or -1 after an error. */
static int fkv_cfg_list(struct fkv_cfg_ctx *x, yaml_node_t *n,
			const char *key)
{
	if (n->type != YAML_SEQUENCE_NODE) {
		fkv_cfg_err(x, n, "%s: must be a list%s", key,
			    n->type == YAML_SCALAR_NODE ?
			    " (write [a, b] or one \"- item\" per line)" : "");
		return -1;
	}
	return n->data.sequence.items.top - n->data.sequence.items.start;
}

/* large_file_paths: the number of entries, or -1 when it is no list. */
static int fkv_cfg_paths(struct fkv_cfg_ctx *x, yaml_node_t *n)
{
	struct fkv_config *c = x->c;
	char what[48], q[FKV_QUOTE_BUF];
	int count, i;

	if (fkv_is_null(n))
		return 0;
	count = fkv_cfg_list(x, n, "large_file_paths");
	if (count <= 0)
		return count;
	c->paths = calloc(count, sizeof(*c->paths));
	if (!c->paths) {
		x->oom = 1;
		return -1;
	}
	c->npaths = count;
	for (i = 0; i < count; i++) {
		yaml_node_t *item = yaml_document_get_node(x->doc,
				n->data.sequence.items.start[i]);
		const char *v;

		snprintf(what, sizeof(what), "large_file_paths[%d]", i);
		v = fkv_cfg_string(x, item, what);
		if (!v)
			continue;
		if (fkv_is_null(item) || !*v) {
			fkv_cfg_err(x, item, "%s: is empty", what);
			continue;
		}
		if (v[0] != '/') {
			fkv_cfg_err(x, item, "%s: %s: must be an absolute path",
				    what, fkv_quote(q, v));
			continue;
		}
		if (strlen(v) >= PATH_MAX) {
			fkv_cfg_err(x, item, "%s: longer than %d bytes", what,
				    PATH_MAX - 1);
			continue;
		}
		c->paths[i] = strdup(v);
		if (!c->paths[i])
			x->oom = 1;
	}
	return count;
}

/* large_limit_size: the number of entries, or -1 when it is no list. */
static int fkv_cfg_limits(struct fkv_cfg_ctx *x, yaml_node_t *n)
{
	struct fkv_config *c = x->c;
	char what[48], q[FKV_QUOTE_BUF], why[160];
	int count, i;

	if (fkv_is_null(n))
		return 0;
	count = fkv_cfg_list(x, n, "large_limit_size");
	if (count < 0)
		return -1;
	c->ssd = true;
	c->limits = calloc(count ? count : 1, sizeof(*c->limits));
	if (!c->limits) {
		x->oom = 1;
		return -1;
	}
	for (i = 0; i < count; i++) {
		yaml_node_t *item = yaml_document_get_node(x->doc,
				n->data.sequence.items.start[i]);
		const char *v;

		snprintf(what, sizeof(what), "large_limit_size[%d]", i);
		if (item->type != YAML_SCALAR_NODE || fkv_is_null(item)) {
			fkv_cfg_err(x, item,
				    "%s: must be an integer (bytes) or a size string such as \"1.5GB\"",
				    what);
			continue;
		}
		v = fkv_cfg_string(x, item, what);
		if (!v)
			continue;
		if (fkv_parse_size(v, &c->limits[i], why, sizeof(why)))
			fkv_cfg_err(x, item, "%s: %s: %s", what,
				    fkv_quote(q, v), why);
	}
	return count;
}

/*
 * The index of mapping key @key in @names (@n of them), or -1 after
 * reporting it as no string, unknown or repeated (@section names the
 * mapping).  @vals[i] is the value of names[i] seen so far.
 */
static int fkv_cfg_key(struct fkv_cfg_ctx *x, const char *section,
		       yaml_node_t *key, const char *const *names, int n,
		       yaml_node_t **vals)
{
	char q[FKV_QUOTE_BUF], known[256] = "";
	size_t used = 0;
	int k;

	if (key->type != YAML_SCALAR_NODE) {
		fkv_cfg_err(x, key, "%s: keys must be strings", section);
		return -1;
	}
	for (k = 0; k < n; k++)
		if (!strcmp(fkv_scalar(key), names[k]))
			break;
	if (k == n) {
		for (k = 0; k < n && used < sizeof(known); k++)
			used += snprintf(known + used, sizeof(known) - used,
					 "%s%s", k ? ", " : "", names[k]);
		fkv_cfg_err(x, key, "%s: unknown key %s (known: %s)", section,
			    fkv_quote_n(q, fkv_scalar(key),
					key->data.scalar.length), known);
		return -1;
	}
	if (vals[k]) {
		fkv_cfg_err(x, key, "%s: duplicate key %s", section, names[k]);
		return -1;
	}
	return k;
}

/* ---- the cluster section ----------------------------------------------- */

enum fkv_cluster_key {
	FKV_CL_NODE_NAME,
	FKV_CL_ROLE,
	FKV_CL_MASTER,
	FKV_CL_LISTEN,
	FKV_CL_ADVERTISE,
	FKV_CL_TRANSPORT,
	FKV_CL_SECRET,
	FKV_CL_SECRET_FILE,
	FKV_CL_HEARTBEAT,
	FKV_CL_DEAD_AFTER,
	FKV_CL_STATE_DIR,
	FKV_CL_LEASE,
	FKV_CL_ETCD,
	FKV_CL_CANDIDATE,
	FKV_CL_NR
};

static const char *const fkv_cluster_keys[FKV_CL_NR] = {
	[FKV_CL_NODE_NAME] = "node_name",
	[FKV_CL_ROLE] = "role",
	[FKV_CL_MASTER] = "master",
	[FKV_CL_LISTEN] = "listen",
	[FKV_CL_ADVERTISE] = "advertise",
	[FKV_CL_TRANSPORT] = "transport",
	[FKV_CL_SECRET] = "secret",
	[FKV_CL_SECRET_FILE] = "secret_file",
	[FKV_CL_HEARTBEAT] = "heartbeat_ms",
	[FKV_CL_DEAD_AFTER] = "dead_after_ms",
	[FKV_CL_STATE_DIR] = "state_dir",
	[FKV_CL_LEASE] = "lease_ms",
	[FKV_CL_ETCD] = "etcd",
	[FKV_CL_CANDIDATE] = "master_candidate",
};

/*
 * A host:port; @dialed: peers connect to it, so a wildcard is refused.
 * False after an error.
 */
static bool fkv_cfg_hostport(struct fkv_cfg_ctx *x, yaml_node_t *n,
			     const char *key, bool dialed,
			     struct fkv_hostport *hp)
{
	char q[FKV_QUOTE_BUF], why[256];
	struct fkv_hostport v;
	const char *s;

	s = fkv_cfg_string(x, n, key);
	if (!s)
		return false;
	if (fkv_parse_hostport(s, v.host, sizeof(v.host), &v.port, why,
			       sizeof(why))) {
		fkv_cfg_err(x, n, "%s: %s: %s", key, fkv_quote(q, s), why);
		return false;
	}
	if (dialed && fkv_host_is_wildcard(v.host)) {
		fkv_cfg_err(x, n,
			    "%s: %s: a wildcard address cannot be dialed: give one peers can reach",
			    key, fkv_quote(q, s));
		return false;
	}
	*hp = v;
	return true;
}

/* One of @names (@count of them) as its index + 1; 0 after an error. */
static int fkv_cfg_enum(struct fkv_cfg_ctx *x, yaml_node_t *n,
			const char *key, const char *const *names, int count,
			const char *want)
{
	char q[FKV_QUOTE_BUF];
	const char *s;
	int i;

	s = fkv_cfg_string(x, n, key);
	if (!s)
		return 0;
	for (i = 0; i < count; i++)
		if (!strcmp(s, names[i]))
			return i + 1;
	fkv_cfg_err(x, n, "%s: %s: must be %s", key, fkv_quote(q, s), want);
	return 0;
}

static void fkv_secret_wipe(struct fkv_cluster_config *cl)
{
	if (cl->secret) {
		explicit_bzero(cl->secret, cl->secret_len);
		free(cl->secret);
	}
	cl->secret = NULL;
	cl->secret_len = 0;
}

/* Keep a copy of the @len secret bytes at @p (and a NUL after them). */
static bool fkv_cfg_secret_set(struct fkv_cfg_ctx *x, const void *p,
			       size_t len, enum fkv_secret_source src)
{
	struct fkv_cluster_config *cl = &x->c->cluster;

	fkv_secret_wipe(cl);	/* both keys given: an error follows */
	cl->secret = malloc(len + 1);
	if (!cl->secret) {
		x->oom = 1;
		return false;
	}
	memcpy(cl->secret, p, len);
	cl->secret[len] = '\0';
	cl->secret_len = len;
	cl->secret_source = src;
	return true;
}

/*
 * cluster.secret.  Its text is never quoted in a message; the document's
 * copy is wiped once taken (libyaml's own input buffers cannot be reached).
 */
static bool fkv_cfg_secret(struct fkv_cfg_ctx *x, yaml_node_t *n)
{
	size_t len;
	bool ok = false;

	if (n->type != YAML_SCALAR_NODE) {
		fkv_cfg_err(x, n, "cluster.secret: must be a string, not a %s",
			    n->type == YAML_SEQUENCE_NODE ? "list" : "mapping");
		return false;
	}
	len = n->data.scalar.length;
	if (memchr(n->data.scalar.value, '\0', len))
		fkv_cfg_err(x, n,
			    "cluster.secret: contains a NUL byte (put a binary secret in secret_file)");
	else if (len < FKV_SECRET_MIN || len > FKV_SECRET_MAX)
		fkv_cfg_err(x, n,
			    "cluster.secret: is %zu byte%s: must be %d to %d bytes",
			    len, len == 1 ? "" : "s", FKV_SECRET_MIN,
			    FKV_SECRET_MAX);
	else
		ok = fkv_cfg_secret_set(x, n->data.scalar.value, len,
					FKV_SECRET_INLINE);
	explicit_bzero(n->data.scalar.value, len);
	return ok;
}

/*
 * cluster.state_dir: an absolute path, not checked for existence here (the
 * master creates it when it first writes its term; fluxonctl config check
 * may run where it does not exist yet).
 */
static bool fkv_cfg_state_dir(struct fkv_cfg_ctx *x, yaml_node_t *n)
{
	static const char *const key = "cluster.state_dir";
	struct fkv_cluster_config *cl = &x->c->cluster;
	char q[FKV_QUOTE_BUF];
	const char *path;

	path = fkv_cfg_string(x, n, key);
	if (!path)
		return false;
	if (path[0] != '/') {
		fkv_cfg_err(x, n, "%s: %s: must be an absolute path", key,
			    fkv_quote(q, path));
		return false;
	}
	if (strlen(path) >= PATH_MAX - 64) {
		fkv_cfg_err(x, n, "%s: longer than %d bytes", key,
			    PATH_MAX - 65);
		return false;
	}
	free(cl->state_dir);
	cl->state_dir = strdup(path);
	if (!cl->state_dir)
		x->oom = 1;
	return cl->state_dir;
}

/*
 * cluster.secret_file: read it now.  Only a regular file is opened (a
 * FIFO or a device could block or act on open), and one that group or
 * others may access is refused before its content is read, as ssh does
 * with keys.
 */
static bool fkv_cfg_secret_file(struct fkv_cfg_ctx *x, yaml_node_t *n)
{
	static const char *const key = "cluster.secret_file";
	struct fkv_cluster_config *cl = &x->c->cluster;
	char q[FKV_QUOTE_BUF], buf[FKV_SECRET_MAX + 2];
	const char *path;
	struct stat st;
	size_t len = 0;
	bool ok = false;
	ssize_t r;
	int fd;

	path = fkv_cfg_string(x, n, key);
	if (!path)
		return false;
	if (!*path) {
		fkv_cfg_err(x, n, "%s: is empty", key);
		return false;
	}
	if (path[0] != '/') {
		fkv_cfg_err(x, n, "%s: %s: must be an absolute path", key,
			    fkv_quote(q, path));
		return false;
	}
	if (strlen(path) >= PATH_MAX) {
		fkv_cfg_err(x, n, "%s: longer than %d bytes", key, PATH_MAX - 1);
		return false;
	}
	free(cl->secret_file);
	cl->secret_file = strdup(path);
	if (!cl->secret_file) {
		x->oom = 1;
		return false;
	}
	fkv_quote(q, path);
	if (stat(path, &st)) {
		fkv_cfg_err(x, n, "%s: %s: %s", key, q, strerror(errno));
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		fkv_cfg_err(x, n, "%s: %s: not a regular file", key, q);
		return false;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		fkv_cfg_err(x, n, "%s: %s: %s", key, q, strerror(errno));
		return false;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {	/* replaced since */
		fkv_cfg_err(x, n, "%s: %s: not a regular file", key, q);
		goto out;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		fkv_cfg_err(x, n,
			    "%s: %s: mode %04o lets group or others access the secret: chmod 600 it (as for an ssh key)",
			    key, q, (unsigned int)(st.st_mode & 07777));
		goto out;
	}
	while (len < sizeof(buf)) {
		r = read(fd, buf + len, sizeof(buf) - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fkv_cfg_err(x, n, "%s: %s: %s", key, q, strerror(errno));
			goto out;
		}
		if (!r)
			break;
		len += r;
	}
	if (len == sizeof(buf)) {
		fkv_cfg_err(x, n, "%s: %s: longer than %d bytes (and a newline)",
			    key, q, FKV_SECRET_MAX);
		goto out;
	}
	if (len && buf[len - 1] == '\n')
		len--;
	if (len < FKV_SECRET_MIN || len > FKV_SECRET_MAX) {
		fkv_cfg_err(x, n,
			    "%s: %s: the secret is %zu byte%s: must be %d to %d bytes",
			    key, q, len, len == 1 ? "" : "s", FKV_SECRET_MIN,
			    FKV_SECRET_MAX);
		goto out;
	}
	ok = fkv_cfg_secret_set(x, buf, len, FKV_SECRET_FILE);
out:
	explicit_bzero(buf, sizeof(buf));
	close(fd);
	return ok;
}

/* true | false (YAML 1.1's yes/no are refused: say which is meant). */
static bool fkv_cfg_bool(struct fkv_cfg_ctx *x, yaml_node_t *n,
			 const char *key, bool *out)
{
	char q[FKV_QUOTE_BUF];
	const char *s = fkv_cfg_string(x, n, key);

	if (!s)
		return false;
	if (!strcmp(s, "true") || !strcmp(s, "false")) {
		*out = s[0] == 't';
		return true;
	}
	fkv_cfg_err(x, n, "%s: %s: must be true or false", key, fkv_quote(q, s));
	return false;
}

/*
 * An etcd client URL: http://host:port or https://host:port (an optional
 * trailing '/'); which one the TLS settings decide (fkv_cfg_etcd()).
 */
static bool fkv_cfg_etcd_endpoint(struct fkv_cfg_ctx *x, yaml_node_t *n,
				  const char *what, char **dst)
{
	char q[FKV_QUOTE_BUF], why[256], host[FKV_HOST_BUF];
	char hp[FKV_HOSTPORT_BUF + 1];
	const char *s = fkv_cfg_string(x, n, what);
	uint16_t port;
	size_t len, skip;

	if (!s)
		return false;
	if (!strncmp(s, "https://", 8)) {
		skip = 8;
	} else if (!strncmp(s, "http://", 7)) {
		skip = 7;
	} else {
		fkv_cfg_err(x, n, "%s: %s: must be http://host:port (https:// with tls)",
			    what, fkv_quote(q, s));
		return false;
	}
	len = strlen(s + skip);
	if (len && s[skip + len - 1] == '/')
		len--;
	if (len == 0 || len >= sizeof(hp)) {
		fkv_cfg_err(x, n, "%s: %s: must be http://host:port (https:// with tls)",
			    what, fkv_quote(q, s));
		return false;
	}
	memcpy(hp, s + skip, len);
	hp[len] = '\0';
	if (fkv_parse_hostport(hp, host, sizeof(host), &port, why,
			       sizeof(why))) {
		fkv_cfg_err(x, n, "%s: %s: %s", what, fkv_quote(q, s), why);
		return false;
	}
	if (fkv_host_is_wildcard(host)) {
		fkv_cfg_err(x, n, "%s: %s: a wildcard address cannot be dialed",
			    what, fkv_quote(q, s));
		return false;
	}
	*dst = strdup(s);
	if (!*dst)
		x->oom = 1;
	return *dst != NULL;
}

/*
 * A PEM file of cluster.etcd.tls: an absolute path to a regular file we
 * can read now (fluxond reads it again at each connection to etcd).
 */
static bool fkv_cfg_pem_file(struct fkv_cfg_ctx *x, yaml_node_t *n,
			     const char *key, char **dst)
{
	const char *path = fkv_cfg_string(x, n, key);
	char q[FKV_QUOTE_BUF];
	struct stat st;

	if (!path)
		return false;
	fkv_quote(q, path);
	if (path[0] != '/' || strlen(path) >= PATH_MAX) {
		fkv_cfg_err(x, n, "%s: %s: must be an absolute path", key, q);
		return false;
	}
	if (stat(path, &st) || access(path, R_OK)) {
		fkv_cfg_err(x, n, "%s: %s: %s", key, q, strerror(errno));
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		fkv_cfg_err(x, n, "%s: %s: not a regular file", key, q);
		return false;
	}
	free(*dst);
	*dst = strdup(path);
	if (!*dst)
		x->oom = 1;
	return *dst != NULL;
}

/* cluster.etcd.tls: {ca_file, cert_file, key_file}. */
static bool fkv_cfg_etcd_tls(struct fkv_cfg_ctx *x, yaml_node_t *map)
{
	static const char *const keys[] = { "ca_file", "cert_file",
					    "key_file" };
	static const char *const what[] = { "cluster.etcd.tls.ca_file",
					    "cluster.etcd.tls.cert_file",
					    "cluster.etcd.tls.key_file" };
	struct fkv_cluster_config *cl = &x->c->cluster;
	char **dst[] = { &cl->etcd_ca_file, &cl->etcd_cert_file,
			 &cl->etcd_key_file };
	yaml_node_t *seen[3] = { NULL };
	yaml_node_pair_t *pair;
	bool ok = true;
	int k;

	if (map->type != YAML_MAPPING_NODE) {
		fkv_cfg_err(x, map, "cluster.etcd.tls: must be a mapping (ca_file, cert_file, key_file)");
		return false;
	}
	for (pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = yaml_document_get_node(x->doc, pair->key);
		yaml_node_t *val = yaml_document_get_node(x->doc, pair->value);

		k = fkv_cfg_key(x, "cluster.etcd.tls", key, keys, 3, seen);
		if (k < 0) {
			ok = false;
			continue;
		}
		seen[k] = val;
		if (!fkv_is_null(val))
			ok &= fkv_cfg_pem_file(x, val, what[k], dst[k]);
	}
	if (!ok)
		return false;
	if (!cl->etcd_ca_file) {
		fkv_cfg_err(x, map, "cluster.etcd.tls: ca_file is required (the CA that signed etcd's certificate)");
		return false;
	}
	if (!cl->etcd_cert_file != !cl->etcd_key_file) {
		fkv_cfg_err(x, map, "cluster.etcd.tls: cert_file and key_file go together (a client certificate and its key)");
		return false;
	}
	return true;
}

/* cluster.etcd: {endpoints, prefix, lease_ttl_ms, tls}. */
static bool fkv_cfg_etcd(struct fkv_cfg_ctx *x, yaml_node_t *map)
{
	static const char *const keys[] = { "endpoints", "prefix",
					    "lease_ttl_ms", "tls" };
	struct fkv_cluster_config *cl = &x->c->cluster;
	yaml_node_t *seen[4] = { NULL };
	yaml_node_pair_t *pair;
	char q[FKV_QUOTE_BUF], what[48];
	bool ok = true;
	int k, count;

	if (map->type != YAML_MAPPING_NODE) {
		fkv_cfg_err(x, map, "cluster.etcd: must be a mapping (endpoints, prefix, lease_ttl_ms, tls)");
		return false;
	}
	cl->etcd_lease_ttl_ms = FKV_ETCD_LEASE_TTL_MS_DEFAULT;
	for (pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = yaml_document_get_node(x->doc, pair->key);
		yaml_node_t *val = yaml_document_get_node(x->doc, pair->value);
		const char *s;

		k = fkv_cfg_key(x, "cluster.etcd", key, keys, 4, seen);
		if (k < 0) {
			ok = false;
			continue;
		}
		seen[k] = val;
		if (fkv_is_null(val))
			continue;
		switch (k) {
		case 0:
			count = fkv_cfg_list(x, val, "cluster.etcd.endpoints");
			if (count < 0) {
				ok = false;
				break;
			}
			if (count < 1 || count > FKV_ETCD_ENDPOINTS_MAX_CFG) {
				fkv_cfg_err(x, val, "cluster.etcd.endpoints: %d endpoints (1 to %d)",
					    count, FKV_ETCD_ENDPOINTS_MAX_CFG);
				ok = false;
				break;
			}
			cl->etcd_endpoints = calloc(count,
						    sizeof(*cl->etcd_endpoints));
			if (!cl->etcd_endpoints) {
				x->oom = 1;
				return false;
			}
			for (int i = 0; i < count; i++) {
				yaml_node_t *item = yaml_document_get_node(x->doc,
						val->data.sequence.items.start[i]);

				snprintf(what, sizeof(what),
					 "cluster.etcd.endpoints[%d]", i);
				if (fkv_cfg_etcd_endpoint(x, item, what,
							  &cl->etcd_endpoints[cl->netcd]))
					cl->netcd++;
				else
					ok = false;
			}
			break;
		case 1:
			s = fkv_cfg_string(x, val, "cluster.etcd.prefix");
			if (!s) {
				ok = false;
				break;
			}
			if (s[0] != '/' || strlen(s) > FKV_ETCD_PREFIX_MAX ||
			    (strlen(s) > 1 && s[strlen(s) - 1] == '/') ||
			    strchr(s, ' ')) {
				fkv_cfg_err(x, val, "cluster.etcd.prefix: %s: must start with '/', not end with one, hold no space and be at most %d bytes",
					    fkv_quote(q, s), FKV_ETCD_PREFIX_MAX);
				ok = false;
				break;
			}
			free(cl->etcd_prefix);
			cl->etcd_prefix = strdup(s);
			if (!cl->etcd_prefix)
				x->oom = 1;
			break;
		case 2:
			ok &= fkv_cfg_uint(x, val, "cluster.etcd.lease_ttl_ms",
					   FKV_ETCD_LEASE_TTL_MS_MIN,
					   FKV_ETCD_LEASE_TTL_MS_MAX, "ms",
					   &cl->etcd_lease_ttl_ms);
			break;
		case 3:
			ok &= fkv_cfg_etcd_tls(x, val);
			break;
		}
	}
	if (!seen[0] || fkv_is_null(seen[0])) {
		fkv_cfg_err(x, map, "cluster.etcd: endpoints is required (a list of http://host:port)");
		ok = false;
	}
	/* TLS or not, all alike: https with tls, http without */
	for (size_t i = 0; ok && i < cl->netcd; i++) {
		bool https = !strncmp(cl->etcd_endpoints[i], "https://", 8);

		if (https == (cl->etcd_ca_file != NULL))
			continue;
		fkv_cfg_err(x, seen[0], "cluster.etcd.endpoints[%zu]: %s: %s",
			    i, fkv_quote(q, cl->etcd_endpoints[i]),
			    https ? "https needs cluster.etcd.tls (ca_file; cert_file and key_file for a client certificate)"
				  : "http with cluster.etcd.tls set: use https://");
		ok = false;
	}
	return ok;
}

/*
 * The master's lease on local hits: a node serves none past lease_ms after
 * it sent the heartbeat the master last answered, and the master declares
 * it left only dead_after_ms after that heartbeat came, so the lease must
 * end first; a lease not longer than a heartbeat would lapse between two.
 * Default: halfway between 2 * heartbeat_ms and dead_after_ms.
 */
static void fkv_cfg_lease_check(struct fkv_cfg_ctx *x, yaml_node_t **vals,
				const bool *ok)
{
	struct fkv_cluster_config *cl = &x->c->cluster;
	unsigned int hb = cl->heartbeat_ms, dead = cl->dead_after_ms;

	if (!vals[FKV_CL_LEASE]) {
		cl->lease_ms = hb + dead / 2;
		return;
	}
	if (!ok[FKV_CL_LEASE])
		return;		/* already reported */
	if (cl->lease_ms > hb && cl->lease_ms < dead)
		return;
	fkv_cfg_err(x, vals[FKV_CL_LEASE],
		    "cluster.lease_ms: %u must be greater than heartbeat_ms (%u) and less than dead_after_ms (%u)",
		    cl->lease_ms, hb, dead);
}

/*
 * The cross-checks and defaults once every key of @map has been seen:
 * @vals[k] is the value of key k when set (not null), @ok[k] whether it
 * was valid.
 */
static void fkv_cfg_cluster_check(struct fkv_cfg_ctx *x, yaml_node_t *map,
				  yaml_node_t **vals, const bool *ok)
{
	struct fkv_cluster_config *cl = &x->c->cluster;
	char hp[FKV_HOSTPORT_BUF], q[FKV_QUOTE_BUF];
	yaml_node_t *later;
	unsigned int hb, dead;

	if (vals[FKV_CL_ETCD]) {
		/* The election decides the role (issue 32). */
		if (vals[FKV_CL_ROLE])
			fkv_cfg_err(x, vals[FKV_CL_ROLE],
				    "cluster.role: the election on etcd decides it when cluster.etcd is set: remove role, set master_candidate");
		else
			cl->role = FKV_ROLE_NODE;	/* until elected */
		if (cl->master_candidate && !vals[FKV_CL_MASTER])
			fkv_cfg_err(x, map,
				    "cluster: a master_candidate needs master (host:port of its own control listener, advertised while it leads)");
	} else {
		if (vals[FKV_CL_CANDIDATE])
			fkv_cfg_err(x, vals[FKV_CL_CANDIDATE],
				    "cluster.master_candidate: needs cluster.etcd (the election)");
		if (!vals[FKV_CL_ROLE])
			fkv_cfg_err(x, map, "cluster: role is required (master or node)");
		if (!vals[FKV_CL_MASTER])
			fkv_cfg_err(x, map,
				    "cluster: master is required (host:port of the master's control listener)");
	}
	if (!vals[FKV_CL_LISTEN])
		fkv_cfg_err(x, map,
			    "cluster: listen is required (host:port of this node's data-plane listener)");
	if (!vals[FKV_CL_SECRET] && !vals[FKV_CL_SECRET_FILE])
		fkv_cfg_err(x, map,
			    "cluster: a shared secret is required: set secret or secret_file (%d to %d bytes)",
			    FKV_SECRET_MIN, FKV_SECRET_MAX);
	if (vals[FKV_CL_SECRET] && vals[FKV_CL_SECRET_FILE]) {
		later = vals[FKV_CL_SECRET];
		if (vals[FKV_CL_SECRET_FILE]->start_mark.index >
		    later->start_mark.index)
			later = vals[FKV_CL_SECRET_FILE];
		fkv_cfg_err(x, later,
			    "cluster: secret and secret_file are both set: use exactly one");
	}

	if (!vals[FKV_CL_ADVERTISE] && ok[FKV_CL_LISTEN]) {
		fkv_hostport_str(hp, sizeof(hp), &cl->listen);
		if (fkv_host_is_wildcard(cl->listen.host))
			fkv_cfg_err(x, vals[FKV_CL_LISTEN],
				    "cluster.listen: %s is a wildcard address, which peers cannot dial: set cluster.advertise",
				    fkv_quote(q, hp));
		cl->advertise = cl->listen;
		cl->advertise_default = true;
	}
	if (!vals[FKV_CL_TRANSPORT])
		cl->transport = FKV_TRANSPORT_TCP;

	if (!vals[FKV_CL_STATE_DIR]) {
		cl->state_dir = strdup(FKV_STATE_DIR_DEFAULT);
		if (!cl->state_dir)
			x->oom = 1;
	}
	if (!vals[FKV_CL_HEARTBEAT])
		cl->heartbeat_ms = FKV_HEARTBEAT_MS_DEFAULT;
	if (!vals[FKV_CL_DEAD_AFTER])
		cl->dead_after_ms = FKV_DEAD_AFTER_MS_DEFAULT;
	if ((vals[FKV_CL_HEARTBEAT] && !ok[FKV_CL_HEARTBEAT]) ||
	    (vals[FKV_CL_DEAD_AFTER] && !ok[FKV_CL_DEAD_AFTER]))
		return;		/* already reported */
	hb = cl->heartbeat_ms;
	dead = cl->dead_after_ms;
	if (dead > 2 * hb) {
		fkv_cfg_lease_check(x, vals, ok);
		return;
	}
	if (vals[FKV_CL_DEAD_AFTER])
		fkv_cfg_err(x, vals[FKV_CL_DEAD_AFTER],
			    "cluster.dead_after_ms: %u must be greater than 2 * heartbeat_ms (2 * %u = %u)",
			    dead, hb, 2 * hb);
	else
		fkv_cfg_err(x, vals[FKV_CL_HEARTBEAT],
			    "cluster.dead_after_ms: the default %u must be greater than 2 * heartbeat_ms (2 * %u = %u): set dead_after_ms",
			    dead, hb, 2 * hb);
}

static void fkv_cfg_cluster(struct fkv_cfg_ctx *x, yaml_node_t *map)
{
	static const char *const roles[] = { "node", "master" };
	static const char *const transports[] = { "tcp", "rdma", "auto" };
	struct fkv_cluster_config *cl = &x->c->cluster;
	yaml_node_t *vals[FKV_CL_NR] = { NULL }, *seen[FKV_CL_NR] = { NULL };
	bool ok[FKV_CL_NR] = { false };
	yaml_node_pair_t *pair;
	int k;

	if (fkv_is_null(map))
		return;		/* single node */
	if (map->type != YAML_MAPPING_NODE) {
		fkv_cfg_err(x, map,
			    "cluster: must be a mapping (or null for a single node)");
		return;
	}
	cl->present = true;
	for (pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = yaml_document_get_node(x->doc, pair->key);
		yaml_node_t *val = yaml_document_get_node(x->doc, pair->value);

		k = fkv_cfg_key(x, "cluster", key, fkv_cluster_keys,
				FKV_CL_NR, seen);
		if (k < 0)
			continue;
		seen[k] = val;	/* a repeated key is one even after a null */
		if (fkv_is_null(val))
			continue;	/* not set */
		vals[k] = val;
		switch (k) {
		case FKV_CL_NODE_NAME:
			fkv_cfg_name(x, val, "cluster.node_name",
				     &cl->node_name);
			ok[k] = cl->node_name;
			break;
		case FKV_CL_ROLE:
			/* FKV_ROLE_NODE = 1, FKV_ROLE_MASTER = 2: index + 1 */
			cl->role = fkv_cfg_enum(x, val, "cluster.role", roles,
						2, "master or node");
			ok[k] = cl->role;
			break;
		case FKV_CL_MASTER:
			ok[k] = fkv_cfg_hostport(x, val, "cluster.master", true,
						 &cl->master);
			break;
		case FKV_CL_LISTEN:
			ok[k] = fkv_cfg_hostport(x, val, "cluster.listen", false,
						 &cl->listen);
			break;
		case FKV_CL_ADVERTISE:
			ok[k] = fkv_cfg_hostport(x, val, "cluster.advertise",
						 true, &cl->advertise);
			break;
		case FKV_CL_TRANSPORT:
			cl->transport = fkv_cfg_enum(x, val, "cluster.transport",
						     transports, 3,
						     "tcp, rdma or auto");
			ok[k] = cl->transport;
			break;
		case FKV_CL_SECRET:
			ok[k] = fkv_cfg_secret(x, val);
			break;
		case FKV_CL_SECRET_FILE:
			ok[k] = fkv_cfg_secret_file(x, val);
			break;
		case FKV_CL_STATE_DIR:
			ok[k] = fkv_cfg_state_dir(x, val);
			break;
		case FKV_CL_HEARTBEAT:
			ok[k] = fkv_cfg_uint(x, val, "cluster.heartbeat_ms",
					     FKV_HEARTBEAT_MS_MIN,
					     FKV_HEARTBEAT_MS_MAX, "ms",
					     &cl->heartbeat_ms);
			break;
		case FKV_CL_DEAD_AFTER:
			ok[k] = fkv_cfg_uint(x, val, "cluster.dead_after_ms", 1,
					     FKV_DEAD_AFTER_MS_MAX,
					     "ms, and more than 2 * heartbeat_ms",
					     &cl->dead_after_ms);
			break;
		case FKV_CL_LEASE:
			ok[k] = fkv_cfg_uint(x, val, "cluster.lease_ms", 1,
					     FKV_DEAD_AFTER_MS_MAX,
					     "ms, between heartbeat_ms and dead_after_ms",
					     &cl->lease_ms);
			break;
		case FKV_CL_ETCD:
			ok[k] = fkv_cfg_etcd(x, val);
			break;
		case FKV_CL_CANDIDATE:
			ok[k] = fkv_cfg_bool(x, val, "cluster.master_candidate",
					     &cl->master_candidate);
			break;
		}
	}
	fkv_cfg_cluster_check(x, map, vals, ok);
}

/* ---- the tenants section (issue 30) ------------------------------------ */

const char *fkv_tenant_name_problem(const char *s)
{
	const char *p;

	if (!*s)
		return "is empty";
	if (strlen(s) > FKV_TENANT_NAME_MAX)
		return "is longer than 63 bytes";
	for (p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
			return "may only contain letters, digits, '.', '_' and '-'";
	if (!strcmp(s, FKV_TENANT_DEFAULT))
		return "is reserved (tenant 0, the keys of no tenant)";
	return NULL;
}

const struct fkv_tenant_config *
fkv_tenant_by_name(const struct fkv_tenant_config *t, size_t n,
		   const char *name)
{
	size_t i;

	for (i = 0; name && i < n; i++)
		if (t[i].name && !strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

const struct fkv_tenant_config *
fkv_tenant_by_id(const struct fkv_tenant_config *t, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; id && i < n; i++)
		if (t[i].id == id)
			return &t[i];
	return NULL;
}

/*
 * A user or group name's number (getpwnam_r / getgrnam_r, the buffer grown
 * while it is too small: a directory's group may list thousands); -errno.
 */
static int fkv_resolve_id(const char *name, bool group, uint32_t *out)
{
	size_t len = 16384;
	char *buf = NULL, *bigger;
	int ret;

	do {
		bigger = len <= (64U << 20) ? realloc(buf, len) : NULL;
		if (!bigger) {
			free(buf);
			return -ENOMEM;
		}
		buf = bigger;
		if (group) {
			struct group gr, *res = NULL;

			ret = getgrnam_r(name, &gr, buf, len, &res);
			if (!ret && res)
				*out = res->gr_gid;
		} else {
			struct passwd pw, *res = NULL;

			ret = getpwnam_r(name, &pw, buf, len, &res);
			if (!ret && res)
				*out = res->pw_uid;
		}
		len *= 2;
	} while (ret == ERANGE);
	free(buf);
	if (ret)
		return -ret;
	return *out == UINT32_MAX ? -ENOENT : 0;
}

/* tenants[i].uids / .gids: numbers or names, at most 64, no repeats. */
static bool fkv_cfg_tenant_ids(struct fkv_cfg_ctx *x, yaml_node_t *n,
			       const char *what, bool group, uint32_t **out,
			       size_t *nout)
{
	char q[FKV_QUOTE_BUF], item_what[80];
	bool ok = true;
	int count, i;
	size_t j;

	if (fkv_is_null(n))
		return true;
	count = fkv_cfg_list(x, n, what);
	if (count < 0)
		return false;
	if (count > FKV_TENANT_IDS_MAX) {
		fkv_cfg_err(x, n, "%s: %d entries (at most %d)", what, count,
			    FKV_TENANT_IDS_MAX);
		return false;
	}
	*out = calloc(count ? count : 1, sizeof(**out));
	if (!*out) {
		x->oom = 1;
		return false;
	}
	for (i = 0; i < count; i++) {
		yaml_node_t *item = yaml_document_get_node(x->doc,
				n->data.sequence.items.start[i]);
		uint32_t v = UINT32_MAX;
		unsigned int num;
		const char *s;
		int ret;

		snprintf(item_what, sizeof(item_what), "%s[%d]", what, i);
		if (fkv_is_null(item)) {
			fkv_cfg_err(x, item, "%s: is empty", item_what);
			ok = false;
			continue;
		}
		s = fkv_cfg_string(x, item, item_what);
		if (!s) {
			ok = false;
			continue;
		}
		/* a number only if all digits: "1svc" is a name */
		if (s[0] && strspn(s, "0123456789") == strlen(s)) {
			if (!fkv_cfg_uint(x, item, item_what, 0, UINT32_MAX - 1,
					  group ? "a gid" : "a uid", &num)) {
				ok = false;
				continue;
			}
			v = num;
		} else {
			ret = fkv_resolve_id(s, group, &v);
			if (ret) {
				fkv_cfg_err(x, item, "%s: %s: %s", item_what,
					    fkv_quote(q, s), ret == -ENOENT ?
					    (group ? "no such group" :
						     "no such user") :
					    strerror(-ret));
				ok = false;
				continue;
			}
		}
		for (j = 0; j < *nout && (*out)[j] != v; j++)
			;
		if (j < *nout) {
			fkv_cfg_err(x, item, "%s: %s %u is listed twice",
				    item_what, group ? "gid" : "uid", v);
			ok = false;
			continue;
		}
		(*out)[(*nout)++] = v;
	}
	return ok;
}

/* tenants[i].dram_bytes / .ssd_bytes: a size, or null (no quota). */
static bool fkv_cfg_tenant_size(struct fkv_cfg_ctx *x, yaml_node_t *n,
				const char *what, uint64_t *out)
{
	char q[FKV_QUOTE_BUF], why[160];
	const char *v;

	if (fkv_is_null(n))
		return true;
	if (n->type != YAML_SCALAR_NODE) {
		fkv_cfg_err(x, n, "%s: must be an integer (bytes) or a size string such as \"64GB\"",
			    what);
		return false;
	}
	v = fkv_cfg_string(x, n, what);
	if (!v)
		return false;
	if (fkv_parse_size(v, out, why, sizeof(why))) {
		fkv_cfg_err(x, n, "%s: %s: %s", what, fkv_quote(q, v), why);
		return false;
	}
	return true;
}

enum fkv_tenant_key {
	FKV_TK_NAME,
	FKV_TK_ID,
	FKV_TK_UIDS,
	FKV_TK_GIDS,
	FKV_TK_DRAM,
	FKV_TK_SSD,
	FKV_TK_NR
};

static const char *const fkv_tenant_keys[FKV_TK_NR] = {
	[FKV_TK_NAME] = "name",
	[FKV_TK_ID] = "id",
	[FKV_TK_UIDS] = "uids",
	[FKV_TK_GIDS] = "gids",
	[FKV_TK_DRAM] = "dram_bytes",
	[FKV_TK_SSD] = "ssd_bytes",
};

/* One entry of tenants; false after an error. */
static bool fkv_cfg_tenant(struct fkv_cfg_ctx *x, yaml_node_t *map, int i,
			   struct fkv_tenant_config *t)
{
	yaml_node_t *vals[FKV_TK_NR] = { NULL };
	char sect[32], what[64], q[FKV_QUOTE_BUF];
	yaml_node_pair_t *pair;
	unsigned int id = 0;
	bool ok = true;
	const char *s, *why;
	int k;

	snprintf(sect, sizeof(sect), "tenants[%d]", i);
	if (map->type != YAML_MAPPING_NODE) {
		fkv_cfg_err(x, map, "%s: must be a mapping (name, id, uids, gids, dram_bytes, ssd_bytes)",
			    sect);
		return false;
	}
	for (pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = yaml_document_get_node(x->doc, pair->key);
		yaml_node_t *val = yaml_document_get_node(x->doc, pair->value);

		k = fkv_cfg_key(x, sect, key, fkv_tenant_keys, FKV_TK_NR,
				vals);
		if (k < 0) {
			ok = false;
			continue;
		}
		vals[k] = val;
		snprintf(what, sizeof(what), "%s.%s", sect,
			 fkv_tenant_keys[k]);
		switch (k) {
		case FKV_TK_NAME:
			if (fkv_is_null(val))
				break;	/* reported as missing below */
			s = fkv_cfg_string(x, val, what);
			if (!s) {
				ok = false;
				break;
			}
			why = fkv_tenant_name_problem(s);
			if (why) {
				fkv_cfg_err(x, val, "%s: %s: %s", what,
					    fkv_quote(q, s), why);
				ok = false;
				break;
			}
			t->name = strdup(s);
			if (!t->name)
				x->oom = 1;
			break;
		case FKV_TK_ID:
			if (fkv_is_null(val))
				break;
			if (fkv_cfg_uint(x, val, what, 1, FKV_TENANT_ID_MAX,
					 "a tenant id; 0 is the default tenant",
					 &id))
				t->id = id;
			else
				ok = false;
			break;
		case FKV_TK_UIDS:
			ok &= fkv_cfg_tenant_ids(x, val, what, false, &t->uids,
						 &t->nuids);
			break;
		case FKV_TK_GIDS:
			ok &= fkv_cfg_tenant_ids(x, val, what, true, &t->gids,
						 &t->ngids);
			break;
		case FKV_TK_DRAM:
			ok &= fkv_cfg_tenant_size(x, val, what, &t->dram_bytes);
			break;
		case FKV_TK_SSD:
			ok &= fkv_cfg_tenant_size(x, val, what, &t->ssd_bytes);
			break;
		}
	}
	if (!vals[FKV_TK_NAME] || fkv_is_null(vals[FKV_TK_NAME])) {
		fkv_cfg_err(x, map, "%s: name is required", sect);
		ok = false;
	}
	if (!vals[FKV_TK_ID] || fkv_is_null(vals[FKV_TK_ID])) {
		fkv_cfg_err(x, map, "%s: id is required (1 to %d)", sect,
			    FKV_TENANT_ID_MAX);
		ok = false;
	}
	return ok;
}

/* fluxonkv_spec.tenants: a list of tenants, names and ids unique. */
static void fkv_cfg_tenants(struct fkv_cfg_ctx *x, yaml_node_t *n)
{
	struct fkv_config *c = x->c;
	char q[FKV_QUOTE_BUF];
	int count, i, j;

	if (fkv_is_null(n))
		return;
	count = fkv_cfg_list(x, n, "tenants");
	if (count <= 0)
		return;
	if (count > FKV_TENANTS_MAX) {
		fkv_cfg_err(x, n, "tenants: %d entries (at most %d)", count,
			    FKV_TENANTS_MAX);
		return;
	}
	c->tenants = calloc(count, sizeof(*c->tenants));
	if (!c->tenants) {
		x->oom = 1;
		return;
	}
	c->ntenants = count;
	for (i = 0; i < count; i++) {
		yaml_node_t *item = yaml_document_get_node(x->doc,
				n->data.sequence.items.start[i]);
		struct fkv_tenant_config *t = &c->tenants[i];

		if (!fkv_cfg_tenant(x, item, i, t))
			continue;
		for (j = 0; j < i; j++) {
			const struct fkv_tenant_config *o = &c->tenants[j];

			if (o->name && !strcmp(o->name, t->name))
				fkv_cfg_err(x, item, "tenants[%d].name: %s is already tenants[%d]'s",
					    i, fkv_quote(q, t->name), j);
			if (o->id == t->id)
				fkv_cfg_err(x, item, "tenants[%d].id: %u is already tenants[%d]'s (%s)",
					    i, t->id, j, fkv_quote(q, o->name ?
								   o->name : "?"));
		}
		if (!t->nuids && !t->ngids &&
		    fkv_msgs_add(&c->warnings,
				 "%s:%zu:%zu: tenants[%d] (%s): neither uids nor gids: only root may use it",
				 x->name, item->start_mark.line + 1,
				 item->start_mark.column + 1, i,
				 fkv_quote(q, t->name)))
			x->oom = 1;
	}
}

/* ---- fluxonkv_spec ----------------------------------------------------- */

enum fkv_spec_key {
	FKV_KEY_CLUSTER_NAME,
	FKV_KEY_INSTANCE,
	FKV_KEY_SEGMENT_MB,
	FKV_KEY_PATHS,
	FKV_KEY_LIMITS,
	FKV_KEY_CLUSTER,
	FKV_KEY_POLICY,
	FKV_KEY_HIGH,
	FKV_KEY_LOW,
	FKV_KEY_LOG_LEVEL,
	FKV_KEY_TENANTS,
	FKV_KEY_NR
};

static const char *const fkv_spec_keys[FKV_KEY_NR] = {
	[FKV_KEY_CLUSTER_NAME] = "cluster_name",
	[FKV_KEY_INSTANCE] = "instance",
	[FKV_KEY_SEGMENT_MB] = "segment_mb",
	[FKV_KEY_PATHS] = "large_file_paths",
	[FKV_KEY_LIMITS] = "large_limit_size",
	[FKV_KEY_CLUSTER] = "cluster",
	[FKV_KEY_POLICY] = "policy",
	[FKV_KEY_HIGH] = "high_watermark",
	[FKV_KEY_LOW] = "low_watermark",
	[FKV_KEY_LOG_LEVEL] = "log_level",
	[FKV_KEY_TENANTS] = "tenants",
};

/* @n's string if it is one of the NULL-terminated @names, else an error. */
static void fkv_cfg_choice(struct fkv_cfg_ctx *x, yaml_node_t *n,
			   const char *key, const char *const *names,
			   const char *list, char **dst)
{
	char q[FKV_QUOTE_BUF];
	const char *v;
	size_t i;

	if (fkv_is_null(n))
		return;
	v = fkv_cfg_string(x, n, key);
	if (!v)
		return;
	for (i = 0; names[i] && strcmp(names[i], v); i++)
		;
	if (!names[i]) {
		fkv_cfg_err(x, n, "%s: %s: must be one of %s", key,
			    fkv_quote(q, v), list);
		return;
	}
	free(*dst);
	*dst = strdup(v);
	if (!*dst)
		x->oom = 1;
}

static const char *const fkv_policies[] = { "s3fifo", "lru", NULL };
static const char *const fkv_log_levels[] = {
	"error", "warn", "info", "debug", NULL
};

/*
 * Each known key's value handled in document order (so errors come out in
 * line order); the value nodes into @vals for the cross-checks.
 */
static void fkv_cfg_spec_keys(struct fkv_cfg_ctx *x, yaml_node_t *spec,
			      yaml_node_t **vals, int *npaths, int *nlimits)
{
	struct fkv_config *c = x->c;
	yaml_node_pair_t *pair;
	int k;

	for (pair = spec->data.mapping.pairs.start;
	     pair < spec->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = yaml_document_get_node(x->doc, pair->key);
		yaml_node_t *val = yaml_document_get_node(x->doc, pair->value);

		k = fkv_cfg_key(x, "fluxonkv_spec", key, fkv_spec_keys,
				FKV_KEY_NR, vals);
		if (k < 0)
			continue;
		vals[k] = val;
		switch (k) {
		case FKV_KEY_CLUSTER_NAME:
			fkv_cfg_name(x, val, "cluster_name", &c->cluster_name);
			break;
		case FKV_KEY_INSTANCE:
			fkv_cfg_name(x, val, "instance", &c->instance);
			break;
		case FKV_KEY_SEGMENT_MB:
			fkv_cfg_segment_mb(x, val);
			break;
		case FKV_KEY_PATHS:
			*npaths = fkv_cfg_paths(x, val);
			break;
		case FKV_KEY_LIMITS:
			*nlimits = fkv_cfg_limits(x, val);
			break;
		case FKV_KEY_CLUSTER:
			fkv_cfg_cluster(x, val);
			break;
		case FKV_KEY_POLICY:
			fkv_cfg_choice(x, val, "policy", fkv_policies,
				       "s3fifo, lru", &c->policy);
			break;
		case FKV_KEY_HIGH:
		case FKV_KEY_LOW:
			if (!fkv_is_null(val))
				fkv_cfg_uint(x, val, fkv_spec_keys[k], 1, 100,
					     "% of the segment",
					     k == FKV_KEY_HIGH ? &c->high_pct
							       : &c->low_pct);
			break;
		case FKV_KEY_LOG_LEVEL:
			fkv_cfg_choice(x, val, "log_level", fkv_log_levels,
				       "error, warn, info, debug",
				       &c->log_level);
			break;
		case FKV_KEY_TENANTS:
			fkv_cfg_tenants(x, val);
			break;
		}
	}
}

static void fkv_cfg_spec(struct fkv_cfg_ctx *x, yaml_node_t *spec)
{
	yaml_node_t *vals[FKV_KEY_NR] = { NULL };
	struct fkv_config *c = x->c;
	int nlimits = 0, npaths = 0;

	if (!fkv_is_null(spec) && spec->type != YAML_MAPPING_NODE) {
		fkv_cfg_err(x, spec, "fluxonkv_spec: must be a mapping");
		return;
	}
	if (spec->type == YAML_MAPPING_NODE)
		fkv_cfg_spec_keys(x, spec, vals, &npaths, &nlimits);
	/* With the defaults for whichever is not set. */
	if ((c->high_pct || c->low_pct) &&
	    (c->low_pct ? c->low_pct : FKV_LOW_WATERMARK_PCT) >
	    (c->high_pct ? c->high_pct : FKV_HIGH_WATERMARK_PCT))
		fkv_cfg_err(x, vals[FKV_KEY_LOW] ? vals[FKV_KEY_LOW]
						 : vals[FKV_KEY_HIGH],
			    "low_watermark %u%% is above high_watermark %u%%",
			    c->low_pct ? c->low_pct : FKV_LOW_WATERMARK_PCT,
			    c->high_pct ? c->high_pct : FKV_HIGH_WATERMARK_PCT);

	if (!c->ssd && npaths > 0 &&
	    fkv_msgs_add(&c->warnings,
			 "%s: large_file_paths is set but large_limit_size is not: no SSD tier",
			 x->name))
		x->oom = 1;
	if (!c->ssd || nlimits < 0 || npaths < 0)
		return;		/* not set, or already reported */
	if (!npaths) {
		fkv_cfg_err(x, vals[FKV_KEY_LIMITS],
			    "large_limit_size is set but large_file_paths is %s: a process that contributes no storage cannot declare SSD limits (remove large_limit_size)",
			    vals[FKV_KEY_PATHS] ? "empty" : "absent");
	} else if ((size_t)nlimits != c->npaths) {
		fkv_cfg_err(x, vals[FKV_KEY_LIMITS],
			    "large_limit_size has %d %s but large_file_paths has %zu: they are matched by index and must have the same length",
			    nlimits, nlimits == 1 ? "entry" : "entries",
			    c->npaths);
	}
}

static void fkv_cfg_root(struct fkv_cfg_ctx *x, yaml_node_t *root)
{
	yaml_node_t *spec = NULL;
	yaml_node_pair_t *pair;

	if (root->type != YAML_MAPPING_NODE) {
		fkv_cfg_err(x, root,
			    "the top level must be a mapping with a fluxonkv_spec key");
		return;
	}
	for (pair = root->data.mapping.pairs.start;
	     pair < root->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = yaml_document_get_node(x->doc, pair->key);

		if (key->type != YAML_SCALAR_NODE ||
		    strcmp(fkv_scalar(key), "fluxonkv_spec"))
			continue;	/* other sections are not ours */
		if (spec) {
			fkv_cfg_err(x, key, "duplicate key fluxonkv_spec");
			return;
		}
		spec = yaml_document_get_node(x->doc, pair->value);
	}
	if (!spec) {
		fkv_cfg_err(x, NULL, "no fluxonkv_spec mapping");
		return;
	}
	fkv_cfg_spec(x, spec);
}

static void fkv_cfg_yaml_error(struct fkv_cfg_ctx *x, yaml_parser_t *p)
{
	int ret;

	if (p->error == YAML_MEMORY_ERROR) {
		x->oom = 1;
		return;
	}
	ret = fkv_msgs_add(&x->c->errors, "%s:%zu:%zu: invalid YAML: %s%s%s",
			   x->name, p->problem_mark.line + 1,
			   p->problem_mark.column + 1,
			   p->problem ? p->problem : "syntax error",
			   p->context ? " " : "",
			   p->context ? p->context : "");
	if (ret)
		x->oom = 1;
}

int fkv_config_parse_buffer(const char *buf, size_t len, const char *name,
			    struct fkv_config *out, char *err, size_t errlen)
{
	struct fkv_cfg_ctx x = { .name = name ? name : "<config>", .c = out };
	yaml_document_t doc, extra;
	yaml_parser_t parser;
	yaml_node_t *root;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = '\0';
	out->cluster_name = strdup(FKV_CLUSTER_DEFAULT);
	if (!out->cluster_name || !yaml_parser_initialize(&parser)) {
		fkv_seterr(err, errlen, "%s: out of memory", x.name);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		fkv_cfg_yaml_error(&x, &parser);
		goto out_parser;
	}
	x.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (!root) {
		fkv_cfg_err(&x, NULL, "empty configuration: no fluxonkv_spec mapping");
	} else {
		fkv_cfg_root(&x, root);
		/* A second document would be silently ignored: refuse it. */
		if (!yaml_parser_load(&parser, &extra)) {
			fkv_cfg_yaml_error(&x, &parser);
		} else {
			if (yaml_document_get_root_node(&extra))
				fkv_cfg_err(&x, NULL,
					    "more than one YAML document (only one is read)");
			yaml_document_delete(&extra);
		}
	}
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);

	if (!x.oom && !out->instance) {
		out->instance = fkv_default_instance();
		out->instance_default = true;
		if (!out->instance)
			x.oom = 1;
	}
	/* node_name defaults to the instance, itself known only now */
	if (!x.oom && out->cluster.present && !out->cluster.node_name) {
		out->cluster.node_name = strdup(out->instance);
		out->cluster.node_name_default = true;
		if (!out->cluster.node_name)
			x.oom = 1;
	}
	if (x.oom) {
		fkv_seterr(err, errlen, "%s: out of memory", x.name);
		return -ENOMEM;
	}
	if (out->errors.n) {
		fkv_msgs_copy(&out->errors, err, errlen);
		return -EINVAL;
	}
	return 0;
}

/* The whole of @path, at most 1 MiB (a configuration, not a data file). */
#define FKV_CONFIG_MAX	(1U << 20)

int fkv_config_load(const char *path, struct fkv_config *out, char *err,
		    size_t errlen)
{
	size_t len = 0, cap = 4096;
	char *buf, *nbuf;
	ssize_t n;
	int fd, ret;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		fkv_seterr(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len == cap) {
			if (cap >= FKV_CONFIG_MAX) {
				fkv_seterr(err, errlen,
					   "%s: larger than %u bytes: not a configuration file",
					   path, FKV_CONFIG_MAX);
				ret = -EFBIG;
				goto out;
			}
			cap *= 2;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			fkv_seterr(err, errlen, "%s: %s", path, strerror(-ret));
			goto out;
		}
		if (!n)
			break;
		len += n;
	}
	ret = fkv_config_parse_buffer(buf, len, path, out, err, errlen);
out:
	explicit_bzero(buf, len);	/* it may hold cluster.secret */
	free(buf);
	close(fd);
	return ret;
}

void fkv_config_free(struct fkv_config *c)
{
	size_t i;

	free(c->cluster_name);
	free(c->instance);
	free(c->policy);
	free(c->log_level);
	for (i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	free(c->limits);
	fkv_secret_wipe(&c->cluster);
	free(c->cluster.node_name);
	free(c->cluster.secret_file);
	free(c->cluster.state_dir);
	for (i = 0; i < c->cluster.netcd; i++)
		free(c->cluster.etcd_endpoints[i]);
	free(c->cluster.etcd_endpoints);
	free(c->cluster.etcd_prefix);
	free(c->cluster.etcd_ca_file);
	free(c->cluster.etcd_cert_file);
	free(c->cluster.etcd_key_file);
	for (i = 0; i < c->ntenants; i++) {
		free(c->tenants[i].name);
		free(c->tenants[i].uids);
		free(c->tenants[i].gids);
	}
	free(c->tenants);
	fkv_msgs_free(&c->warnings);
	fkv_msgs_free(&c->errors);
	memset(c, 0, sizeof(*c));
}
