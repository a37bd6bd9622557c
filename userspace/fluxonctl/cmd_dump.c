// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl dump: one of the module's debugfs dumps as a table or JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "ctl_dump.h"
#include "ctl_sysfs.h"
#include "ctl.h"

#ifndef DEBUGFS_MAGIC
#define DEBUGFS_MAGIC	0x64626720	/* <linux/magic.h> */
#endif

static bool ctl_debugfs_mounted(void)
{
	struct statfs sfs;

	return !statfs(CTL_DEBUGFS_MOUNT, &sfs) && sfs.f_type == DEBUGFS_MAGIC;
}

/*
 * Why @path cannot be opened, said for an operator, with its exit status:
 * a missing dump is a missing module or debugfs (4), anything else an error.
 */
static int ctl_dump_open_failed(const char *what, const char *dir,
				const char *path, bool dir_from_env, int err)
{
	struct ctl_sysfs sys;

	if (err == -EACCES || err == -EPERM) {
		fprintf(stderr, "fluxonctl dump: %s: %s (debugfs is readable by root only)\n",
			path, strerror(-err));
		return CTL_EXIT_ERROR;
	}
	if (err != -ENOENT && err != -ENOTDIR) {
		fprintf(stderr, "fluxonctl dump: %s: %s\n", path, strerror(-err));
		return CTL_EXIT_ERROR;
	}
	if (dir_from_env) {
		fprintf(stderr, "fluxonctl dump: %s: %s ($%s is %s)\n", path,
			strerror(-err), CTL_DEBUGFS_ENV, dir);
		return CTL_EXIT_ABSENT;
	}
	if (!ctl_sysfs_init(&sys) && !ctl_sysfs_present(&sys)) {
		fprintf(stderr, "fluxonctl dump: fluxonkv module not loaded (no %s)\n",
			sys.dir);
		return CTL_EXIT_ABSENT;
	}
	if (!ctl_debugfs_mounted()) {
		fprintf(stderr, "fluxonctl dump: debugfs is not mounted on %s "
			"(mount -t debugfs none %s)\n", CTL_DEBUGFS_MOUNT,
			CTL_DEBUGFS_MOUNT);
		return CTL_EXIT_ABSENT;
	}
	fprintf(stderr, "fluxonctl dump: %s: %s (the module is loaded but has no %s dump)\n",
		path, strerror(-err), what);
	return CTL_EXIT_ABSENT;
}

int ctl_cmd_dump(const struct ctl_opts *o)
{
	const struct ctl_dump_file *file = ctl_dump_file_find(o->what);
	const char *dir = getenv(CTL_DEBUGFS_ENV);
	bool from_env = dir && *dir;
	char path[PATH_MAX], *text = NULL;
	struct ctl_dump d;
	size_t len = 0;
	int fd, err;

	if (!file)	/* the parser let it through: a bug, not usage */
		return CTL_EXIT_ERROR;
	if (!from_env)
		dir = CTL_DEBUGFS_DEFAULT_DIR;
	if (snprintf(path, sizeof(path), "%s/%s", dir, file->name) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "fluxonctl dump: $%s: %s\n", CTL_DEBUGFS_ENV,
			strerror(ENAMETOOLONG));
		return CTL_EXIT_ERROR;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ctl_dump_open_failed(file->name, dir, path, from_env,
					    -errno);
	err = ctl_read_fd(fd, SIZE_MAX - 2, &text, &len);
	close(fd);
	if (err) {
		fprintf(stderr, "fluxonctl dump: %s: %s\n", path, strerror(-err));
		return CTL_EXIT_ERROR;
	}

	if (file->raw) {
		/* Nested layout, already meant for people: shown as is. */
		if (o->json) {
			free(text);
			fprintf(stderr, "fluxonctl dump: %s has no JSON form\n",
				file->name);
			return CTL_EXIT_USAGE;
		}
		err = fwrite(text, 1, len, stdout) == len ? 0 : -EIO;
		free(text);
		return err || fflush(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
	}
	err = ctl_dump_parse(text, len, &d);
	free(text);
	if (err == -EPROTO) {
		fprintf(stderr, "fluxonctl dump: %s: line %zu is neither \"name<TAB>value\" nor a row of the table\n",
			path, d.bad_line);
		return CTL_EXIT_ERROR;
	}
	if (!err && !strcmp(file->name, "pending") && d.header.n)
		err = ctl_dump_add_column(&d, "name", "cmd", ctl_upcall_name);
	if (err && err != -ENOENT) {
		fprintf(stderr, "fluxonctl dump: %s: %s\n", path, strerror(-err));
		ctl_dump_free(&d);
		return CTL_EXIT_ERROR;
	}

	if (o->json)
		ctl_dump_render_json(stdout, &d, file->table);
	else
		ctl_dump_render_table(stdout, &d);
	ctl_dump_free(&d);
	return fflush(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}
