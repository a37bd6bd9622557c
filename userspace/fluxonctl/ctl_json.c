// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_json: the streaming JSON writer behind fluxonctl --json.
 */
#include <math.h>

#include "ctl_json.h"

void ctl_json_quote(FILE *f, const char *s)
{
	const unsigned char *c;

	fputc('"', f);
	for (c = (const unsigned char *)s; *c; c++) {
		switch (*c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*c < 0x20 || *c == 0x7f)
				fprintf(f, "\\u%04x", *c);
			else
				fputc(*c, f);
		}
	}
	fputc('"', f);
}

void ctl_json_init(struct ctl_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
}

/* Separator and member name before a value. */
static void ctl_json_member(struct ctl_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (key) {
		ctl_json_quote(j->f, key);
		fputc(':', j->f);
	}
}

void ctl_json_open(struct ctl_json *j, const char *key)
{
	ctl_json_member(j, key);
	fputc('{', j->f);
	if (j->depth < CTL_JSON_MAX_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

void ctl_json_close(struct ctl_json *j)
{
	fputc('}', j->f);
	if (j->depth > 0)
		j->depth--;
	if (!j->depth) {
		fputc('\n', j->f);
		j->need_comma[0] = false;
	}
}

void ctl_json_array_open(struct ctl_json *j, const char *key)
{
	ctl_json_member(j, key);
	fputc('[', j->f);
	if (j->depth < CTL_JSON_MAX_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

void ctl_json_array_close(struct ctl_json *j)
{
	fputc(']', j->f);
	if (j->depth > 0)
		j->depth--;
	if (!j->depth) {
		fputc('\n', j->f);
		j->need_comma[0] = false;
	}
}

void ctl_json_u64(struct ctl_json *j, const char *key, uint64_t v)
{
	ctl_json_member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void ctl_json_double(struct ctl_json *j, const char *key, double v)
{
	ctl_json_member(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.2f", v);
	else
		fputs("null", j->f);
}

void ctl_json_bool(struct ctl_json *j, const char *key, bool v)
{
	ctl_json_member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void ctl_json_null(struct ctl_json *j, const char *key)
{
	ctl_json_member(j, key);
	fputs("null", j->f);
}

void ctl_json_str(struct ctl_json *j, const char *key, const char *s)
{
	ctl_json_member(j, key);
	ctl_json_quote(j->f, s);
}

void ctl_json_number(struct ctl_json *j, const char *key, const char *literal)
{
	ctl_json_member(j, key);
	fputs(literal, j->f);
}
