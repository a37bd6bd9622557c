// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_dump: parse and print the module's debugfs dumps (ctl_dump.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <linux/fluxonkv.h>

#include "ctl_dump.h"
#include "ctl_json.h"

const struct ctl_dump_file ctl_dump_files[] = {
	{ "replicas", "replicas",
	  "every DRAM replica: handle, put_id, offset, len, refs, key", false },
	{ "holders", "holders",
	  "every holder granted, by the pid of the session that holds it", false },
	{ "pending", "upcalls",
	  "the registered daemon and the upcalls waiting for its answer", false },
	{ "segment", NULL,
	  "the DRAM segment: size, used, pages, chunks", false },
	{ "rings", NULL,
	  "SSD devices (queues), shards (head, tail, used) and ring entries with state and pins",
	  true },
	{ "latency", NULL,
	  "per-operation latency histograms (fluxonctl stats shows percentiles)",
	  true },
};
const size_t ctl_dump_nfiles = sizeof(ctl_dump_files) / sizeof(ctl_dump_files[0]);

const char *ctl_debugfs_dir(void)
{
	const char *dir = getenv(CTL_DEBUGFS_ENV);

	return dir && *dir ? dir : CTL_DEBUGFS_DEFAULT_DIR;
}

const struct ctl_dump_file *ctl_dump_file_find(const char *name)
{
	size_t i;

	for (i = 0; i < ctl_dump_nfiles; i++)
		if (!strcmp(ctl_dump_files[i].name, name))
			return &ctl_dump_files[i];
	return NULL;
}

/* A column name: [a-z_][a-z0-9_]*. */
static bool ctl_dump_is_name(const char *s)
{
	if (!(islower((unsigned char)*s) || *s == '_'))
		return false;
	for (; *s; s++)
		if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) ||
		      *s == '_'))
			return false;
	return true;
}

/* A decimal integer JSON accepts as a number (no leading zeros). */
static bool ctl_dump_is_number(const char *s)
{
	if (*s == '-')
		s++;
	if (!isdigit((unsigned char)*s) || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* @len bytes of @src, non-printable and non-ASCII bytes as \xNN. */
static char *ctl_dump_cell(const char *src, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char *out = malloc(4 * len + 1), *p = out;
	size_t i;

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		unsigned char c = src[i];

		if (c >= 0x20 && c < 0x7f) {
			*p++ = c;
			continue;
		}
		*p++ = '\\';
		*p++ = 'x';
		*p++ = hex[c >> 4];
		*p++ = hex[c & 15];
	}
	*p = '\0';
	return out;
}

static void ctl_dump_line_free(struct ctl_dump_line *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->f[i]);
	free(l->f);
	l->f = NULL;
	l->n = 0;
}

/* @len bytes of @s (no newline) split at tabs into @l. */
static int ctl_dump_split(const char *s, size_t len, struct ctl_dump_line *l)
{
	const char *end = s + len, *tab;
	size_t n = 1, i;

	for (tab = s; (tab = memchr(tab, '\t', end - tab)); tab++)
		n++;
	l->f = calloc(n, sizeof(*l->f));
	if (!l->f)
		return -ENOMEM;
	l->n = n;
	for (i = 0; i < n; i++) {
		tab = memchr(s, '\t', end - s);
		if (!tab)
			tab = end;
		l->f[i] = ctl_dump_cell(s, tab - s);
		if (!l->f[i]) {
			ctl_dump_line_free(l);
			return -ENOMEM;
		}
		s = tab + 1;
	}
	return 0;
}

static bool ctl_dump_is_header(const struct ctl_dump_line *l)
{
	size_t i;

	if (l->n < 2)
		return false;
	for (i = 0; i < l->n; i++)
		if (!ctl_dump_is_name(l->f[i]))
			return false;
	return true;
}

/* Append @l (moved) to *@arr of *@n lines. */
static int ctl_dump_push(struct ctl_dump_line **arr, size_t *n,
			 struct ctl_dump_line *l)
{
	struct ctl_dump_line *na = realloc(*arr, (*n + 1) * sizeof(**arr));

	if (!na)
		return -ENOMEM;
	na[(*n)++] = *l;
	*arr = na;
	l->f = NULL;
	l->n = 0;
	return 0;
}

void ctl_dump_free(struct ctl_dump *d)
{
	size_t i;

	for (i = 0; i < d->nkv; i++)
		ctl_dump_line_free(&d->kv[i]);
	for (i = 0; i < d->nrows; i++)
		ctl_dump_line_free(&d->rows[i]);
	ctl_dump_line_free(&d->header);
	free(d->kv);
	free(d->rows);
	d->kv = d->rows = NULL;
	d->nkv = d->nrows = 0;
}

static int ctl_dump_take(struct ctl_dump *d, struct ctl_dump_line *l)
{
	if (d->header.n) {
		if (l->n != d->header.n)
			return -EPROTO;
		return ctl_dump_push(&d->rows, &d->nrows, l);
	}
	if (ctl_dump_is_header(l)) {
		d->header = *l;
		l->f = NULL;
		l->n = 0;
		return 0;
	}
	if (l->n != 2)
		return -EPROTO;
	return ctl_dump_push(&d->kv, &d->nkv, l);
}

int ctl_dump_parse(const char *text, size_t len, struct ctl_dump *d)
{
	const char *end = text + len, *nl;
	struct ctl_dump_line l = { 0 };
	size_t lineno = 0;
	int err = 0;

	memset(d, 0, sizeof(*d));
	while (text < end) {
		nl = memchr(text, '\n', end - text);
		if (!nl)
			nl = end;
		lineno++;
		if (nl > text) {
			err = ctl_dump_split(text, nl - text, &l);
			if (!err)
				err = ctl_dump_take(d, &l);
			ctl_dump_line_free(&l);
			if (err)
				break;
		}
		text = nl + 1;
	}
	if (err) {
		ctl_dump_free(d);
		if (err == -EPROTO)
			d->bad_line = lineno;
	}
	return err;
}

static struct ctl_dump_line *ctl_dump_line_at(struct ctl_dump *d, size_t i)
{
	return i ? &d->rows[i - 1] : &d->header;	/* 0: the header */
}

int ctl_dump_add_column(struct ctl_dump *d, const char *name,
			const char *from, const char *(*map)(const char *cell))
{
	size_t col, i, n = d->nrows + 1;
	char **cells, **nf;

	for (col = 0; col < d->header.n; col++)
		if (!strcmp(d->header.f[col], from))
			break;
	if (col == d->header.n)
		return -ENOENT;
	/*
	 * Room first (a larger array is harmless), then the cells, then
	 * commit: a failure leaves @d as it was.
	 */
	for (i = 0; i < n; i++) {
		struct ctl_dump_line *l = ctl_dump_line_at(d, i);

		nf = realloc(l->f, (l->n + 1) * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		l->f = nf;
	}
	cells = calloc(n, sizeof(*cells));
	if (!cells)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		cells[i] = strdup(i ? map(d->rows[i - 1].f[col]) : name);
		if (!cells[i]) {
			while (i--)
				free(cells[i]);
			free(cells);
			return -ENOMEM;
		}
	}
	for (i = 0; i < n; i++) {
		struct ctl_dump_line *l = ctl_dump_line_at(d, i);

		l->f[l->n++] = cells[i];
	}
	free(cells);
	return 0;
}

/* Does every row hold a number in column @col? */
static bool ctl_dump_numeric_col(const struct ctl_dump *d, size_t col)
{
	size_t i;

	if (!d->nrows)
		return false;
	for (i = 0; i < d->nrows; i++)
		if (!ctl_dump_is_number(d->rows[i].f[col]))
			return false;
	return true;
}

static void ctl_dump_print_line(FILE *f, const struct ctl_dump_line *l,
				const size_t *width, const bool *right)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		bool last = i + 1 == l->n;

		if (right[i])
			fprintf(f, "%*s", (int)width[i], l->f[i]);
		else if (last)
			fputs(l->f[i], f);
		else
			fprintf(f, "%-*s", (int)width[i], l->f[i]);
		fputs(last ? "\n" : "  ", f);
	}
}

void ctl_dump_render_table(FILE *f, const struct ctl_dump *d)
{
	size_t kw = 0, i, c, n = d->header.n;
	size_t *width;
	bool *right;

	for (i = 0; i < d->nkv; i++)
		if (strlen(d->kv[i].f[0]) > kw)
			kw = strlen(d->kv[i].f[0]);
	for (i = 0; i < d->nkv; i++)
		fprintf(f, "%-*s  %s\n", (int)kw, d->kv[i].f[0], d->kv[i].f[1]);
	if (!n)
		return;
	if (d->nkv)
		fputc('\n', f);

	width = calloc(n, sizeof(*width));
	right = calloc(n, sizeof(*right));
	if (!width || !right) {
		/* no alignment without memory, but still every cell */
		for (i = 0; i <= d->nrows; i++) {
			const struct ctl_dump_line *l = i ? &d->rows[i - 1] :
						     &d->header;

			for (c = 0; c < n; c++)
				fprintf(f, "%s%s", l->f[c], c + 1 < n ? "\t" : "\n");
		}
		goto out;
	}
	for (c = 0; c < n; c++) {
		width[c] = strlen(d->header.f[c]);
		for (i = 0; i < d->nrows; i++)
			if (strlen(d->rows[i].f[c]) > width[c])
				width[c] = strlen(d->rows[i].f[c]);
		right[c] = ctl_dump_numeric_col(d, c);
	}
	ctl_dump_print_line(f, &d->header, width, right);
	for (i = 0; i < d->nrows; i++)
		ctl_dump_print_line(f, &d->rows[i], width, right);
out:
	free(width);
	free(right);
}

static void ctl_dump_json_cell(struct ctl_json *j, const char *key,
			       const char *cell)
{
	if (ctl_dump_is_number(cell))
		ctl_json_number(j, key, cell);
	else
		ctl_json_str(j, key, cell);
}

void ctl_dump_render_json(FILE *f, const struct ctl_dump *d,
			  const char *table)
{
	struct ctl_json j;
	size_t i, c;

	ctl_json_init(&j, f);
	ctl_json_open(&j, NULL);
	for (i = 0; i < d->nkv; i++)
		ctl_dump_json_cell(&j, d->kv[i].f[0], d->kv[i].f[1]);
	if (d->header.n) {
		ctl_json_array_open(&j, table ? table : "rows");
		for (i = 0; i < d->nrows; i++) {
			ctl_json_open(&j, NULL);
			for (c = 0; c < d->header.n; c++)
				ctl_dump_json_cell(&j, d->header.f[c],
						   d->rows[i].f[c]);
			ctl_json_close(&j);
		}
		ctl_json_array_close(&j);
	}
	ctl_json_close(&j);
}

const char *ctl_upcall_name(const char *cmd)
{
	static const char *const names[] = {
		[FLUXONKV_CMD_GET_VERSION] = "GET_VERSION",
		[FLUXONKV_CMD_DAEMON_REGISTER] = "DAEMON_REGISTER",
		[FLUXONKV_CMD_DAEMON_UNREGISTER] = "DAEMON_UNREGISTER",
		[FLUXONKV_CMD_PUT_START] = "PUT_START",
		[FLUXONKV_CMD_PUT_DONE] = "PUT_DONE",
		[FLUXONKV_CMD_PUT_ABORT] = "PUT_ABORT",
		[FLUXONKV_CMD_GET_START] = "GET_START",
		[FLUXONKV_CMD_GET_DONE] = "GET_DONE",
		[FLUXONKV_CMD_GET_REVOKE] = "GET_REVOKE",
		[FLUXONKV_CMD_DELETE] = "DELETE",
		[FLUXONKV_CMD_NEED_ROOM] = "NEED_ROOM",
		[FLUXONKV_CMD_ACCESS] = "ACCESS",
		[FLUXONKV_CMD_DROP_REPLICA] = "DROP_REPLICA",
		[FLUXONKV_CMD_DAEMON_EVENT] = "DAEMON_EVENT",
		[FLUXONKV_CMD_SSD_COMMIT] = "SSD_COMMIT",
		[FLUXONKV_CMD_SSD_EVICTED] = "SSD_EVICTED",
		[FLUXONKV_CMD_SSD_STATE] = "SSD_STATE",
		[FLUXONKV_CMD_FETCH] = "FETCH",
		[FLUXONKV_CMD_PUT_PLACE] = "PUT_PLACE",
		[FLUXONKV_CMD_DUMP] = "DUMP",
		[FLUXONKV_CMD_CANCEL] = "CANCEL",
		[FLUXONKV_CMD_LOOKUP] = "LOOKUP",
		[FLUXONKV_CMD_PERSIST] = "PERSIST",
		[FLUXONKV_CMD_PUT_LOCAL] = "PUT_LOCAL",
		[FLUXONKV_CMD_PUT] = "PUT",
		[FLUXONKV_CMD_ADOPT_DONE] = "ADOPT_DONE",
	};
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)*cmd))
		return "?";
	errno = 0;
	v = strtoul(cmd, &end, 10);
	if (errno || *end || v >= sizeof(names) / sizeof(names[0]) || !names[v])
		return "?";
	return names[v];
}
