/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctl_json - a minimal streaming JSON writer for fluxonctl's --json output:
 * one compact line per document, strings escaped per RFC 8259.
 */
#ifndef FLUXONKV_CTL_JSON_H
#define FLUXONKV_CTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CTL_JSON_MAX_DEPTH	8

struct ctl_json {
	FILE *f;
	int depth;
	bool need_comma[CTL_JSON_MAX_DEPTH];
};

/* @key is the member name inside an object, NULL at top level. */
void ctl_json_init(struct ctl_json *j, FILE *f);
void ctl_json_open(struct ctl_json *j, const char *key);
void ctl_json_close(struct ctl_json *j);	/* ends the line at depth 0 */
/* An array member (or element, @key NULL); its elements take @key NULL. */
void ctl_json_array_open(struct ctl_json *j, const char *key);
void ctl_json_array_close(struct ctl_json *j);
void ctl_json_u64(struct ctl_json *j, const char *key, uint64_t v);
void ctl_json_double(struct ctl_json *j, const char *key, double v);
void ctl_json_bool(struct ctl_json *j, const char *key, bool v);
void ctl_json_null(struct ctl_json *j, const char *key);
void ctl_json_str(struct ctl_json *j, const char *key, const char *s);
/* @literal verbatim: the caller has checked it is a JSON number. */
void ctl_json_number(struct ctl_json *j, const char *key, const char *literal);
/* Write @s as a JSON string literal, quotes included. */
void ctl_json_quote(FILE *f, const char *s);

#endif /* FLUXONKV_CTL_JSON_H */
