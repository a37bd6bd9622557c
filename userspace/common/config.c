// SPDX-License-Identifier: GPL-2.0
/*
 * config: the node's YAML configuration (libyaml document API) and the size
 * strings in it.  See <fluxonkv_config.h> for the file format and the size
 * grammar; ssd_plan.c turns the result into SSD shards.  Nothing here
 * prints.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void fkv_cfg_segment_mb(struct fkv_cfg_ctx *x, yaml_node_t *n)
{
	char q[FKV_QUOTE_BUF];
	unsigned long v = 0;
	const char *s, *p;

	if (fkv_is_null(n))
		return;
	s = fkv_cfg_string(x, n, "segment_mb");
	if (!s)
		return;
	for (p = s; isdigit((unsigned char)*p) && v <= FKV_SEGMENT_MB_MAX; p++)
		v = v * 10 + (*p - '0');
	if (p == s || *p || !v || v > FKV_SEGMENT_MB_MAX) {
		fkv_cfg_err(x, n,
			    "segment_mb: %s: must be an integer from 1 to %d (MiB)",
			    fkv_quote(q, s), FKV_SEGMENT_MB_MAX);
		return;
	}
	x->c->segment_mb = v;
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

enum fkv_spec_key {
	FKV_KEY_CLUSTER,
	FKV_KEY_INSTANCE,
	FKV_KEY_SEGMENT_MB,
	FKV_KEY_PATHS,
	FKV_KEY_LIMITS,
	FKV_KEY_NR
};

static const char *const fkv_spec_keys[FKV_KEY_NR] = {
	[FKV_KEY_CLUSTER] = "cluster_name",
	[FKV_KEY_INSTANCE] = "instance",
	[FKV_KEY_SEGMENT_MB] = "segment_mb",
	[FKV_KEY_PATHS] = "large_file_paths",
	[FKV_KEY_LIMITS] = "large_limit_size",
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
	char q[FKV_QUOTE_BUF];
	int k;

	for (pair = spec->data.mapping.pairs.start;
	     pair < spec->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = yaml_document_get_node(x->doc, pair->key);
		yaml_node_t *val = yaml_document_get_node(x->doc, pair->value);

		if (key->type != YAML_SCALAR_NODE) {
			fkv_cfg_err(x, key, "fluxonkv_spec: keys must be strings");
			continue;
		}
		for (k = 0; k < FKV_KEY_NR; k++)
			if (!strcmp(fkv_scalar(key), fkv_spec_keys[k]))
				break;
		if (k == FKV_KEY_NR) {
			fkv_cfg_err(x, key,
				    "fluxonkv_spec: unknown key %s (known: cluster_name, instance, segment_mb, large_file_paths, large_limit_size)",
				    fkv_quote_n(q, fkv_scalar(key),
						key->data.scalar.length));
			continue;
		}
		if (vals[k]) {
			fkv_cfg_err(x, key, "fluxonkv_spec: duplicate key %s",
				    fkv_spec_keys[k]);
			continue;
		}
		vals[k] = val;
		switch (k) {
		case FKV_KEY_CLUSTER:
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
	free(buf);
	close(fd);
	return ret;
}

void fkv_config_free(struct fkv_config *c)
{
	size_t i;

	free(c->cluster_name);
	free(c->instance);
	for (i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	free(c->limits);
	fkv_msgs_free(&c->warnings);
	fkv_msgs_free(&c->errors);
	memset(c, 0, sizeof(*c));
}
