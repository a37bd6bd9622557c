/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ctl_dump - the module's debugfs dumps (/sys/kernel/debug/fluxonkv/) as
 * data: parse their text, print it as an aligned table or JSON.  Pure
 * functions of their inputs; userspace/fluxonctl/cmd_dump.c reads the files.
 *
 * The module writes tab-separated lines: first "name<TAB>value" lines
 * (segment, the daemon part of pending), then optionally a table whose
 * header line is made of column names only (replicas, holders, the upcalls
 * of pending), one row per line.
 */
#ifndef FLUXONKV_CTL_DUMP_H
#define FLUXONKV_CTL_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CTL_DEBUGFS_DEFAULT_DIR	"/sys/kernel/debug/fluxonkv"
#define CTL_DEBUGFS_ENV		"FLUXONKV_DEBUGFS"
#define CTL_DEBUGFS_MOUNT	"/sys/kernel/debug"

/* $FLUXONKV_DEBUGFS when set and not empty, CTL_DEBUGFS_DEFAULT_DIR else. */
const char *ctl_debugfs_dir(void);

/* One dump file fluxonctl knows. */
struct ctl_dump_file {
	const char *name;	/* file in the debugfs directory */
	const char *table;	/* JSON member holding its rows */
	const char *what;	/* one line for --help */
	bool raw;		/* printed as the module writes it (no JSON) */
};

extern const struct ctl_dump_file ctl_dump_files[];
extern const size_t ctl_dump_nfiles;
const struct ctl_dump_file *ctl_dump_file_find(const char *name);

/* One line split at tabs. */
struct ctl_dump_line {
	char **f;
	size_t n;
};

struct ctl_dump {
	struct ctl_dump_line *kv;	/* the name/value lines, n == 2 */
	size_t nkv;
	struct ctl_dump_line header;	/* n == 0: no table */
	struct ctl_dump_line *rows;	/* each with header.n fields */
	size_t nrows;
	size_t bad_line;		/* after -EPROTO: 1-based line number */
};

/*
 * Parse @len bytes of @text into @d.  -ENOMEM, or -EPROTO when a line fits
 * neither part (d->bad_line says which); @d is empty (and freeable) then.
 * Cells are stored as printed: bytes outside printable ASCII become \xNN,
 * so raw bytes of a key can neither drive a terminal nor break JSON.
 */
int ctl_dump_parse(const char *text, size_t len, struct ctl_dump *d);
void ctl_dump_free(struct ctl_dump *d);

/*
 * Append a column @name computed by @map from column @from of every row
 * (pending: upcall names for the cmd numbers).  -ENOENT if there is no
 * column @from, -ENOMEM.  @map must not return NULL.
 */
int ctl_dump_add_column(struct ctl_dump *d, const char *name,
			const char *from, const char *(*map)(const char *cell));

/* name/value lines aligned, then the table with aligned columns. */
void ctl_dump_render_table(FILE *f, const struct ctl_dump *d);
/*
 * One JSON object: each name/value line a member, the rows an array of
 * objects under @table ("rows" if NULL).  Decimal cells are numbers,
 * everything else strings.
 */
void ctl_dump_render_json(FILE *f, const struct ctl_dump *d,
			  const char *table);

/* The FLUXONKV_CMD_* name of an upcall's cmd number ("PUT_START"), or "?". */
const char *ctl_upcall_name(const char *cmd);

#endif /* FLUXONKV_CTL_DUMP_H */
