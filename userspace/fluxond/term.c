// SPDX-License-Identifier: GPL-2.0
/*
 * term.c - the master's term file (term.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "term.h"

static int fail(char *why, size_t len, int err, const char *fmt,
		const char *path)
{
	snprintf(why, len, fmt, path, strerror(err));
	return -err;
}

/* The term stored in @path: 0 if there is none yet. */
static int term_read(const char *path, uint64_t *term, char *why,
		     size_t why_len)
{
	char buf[32], *end;
	unsigned long long v;
	ssize_t n;
	int fd;

	*term = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 :
		       fail(why, why_len, errno, "%s: %s", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return fail(why, why_len, errno, "%s: %s", path);
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && strcmp(end, "\n")) ||
	    v > FKV_TERM_MAX) {
		snprintf(why, why_len,
			 "%s: not a term (a decimal number up to %llu): "
			 "fix or remove it only if no node keeps replicas "
			 "numbered by a later term", path, FKV_TERM_MAX);
		return -EINVAL;
	}
	*term = v;
	return 0;
}

static int term_write(const char *dir, const char *path, uint64_t term,
		      char *why, size_t why_len)
{
	char tmp[PATH_MAX], buf[32];
	int fd, len, dfd;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return fail(why, why_len, ENAMETOOLONG, "%s: %s", path);
	len = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", term);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0640);
	if (fd < 0)
		return fail(why, why_len, errno, "%s: %s", tmp);
	if (write(fd, buf, len) != len || fsync(fd)) {
		int err = errno ? errno : EIO;

		close(fd);
		unlink(tmp);
		return fail(why, why_len, err, "%s: %s", tmp);
	}
	close(fd);
	if (rename(tmp, path)) {
		int err = errno;

		unlink(tmp);
		return fail(why, why_len, err, "%s: %s", path);
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd)) {
		int err = errno;

		if (dfd >= 0)
			close(dfd);
		return fail(why, why_len, err, "%s: %s", dir);
	}
	close(dfd);
	return 0;
}

int fkv_term_next(const char *dir, uint64_t seen_put_id, uint64_t *term,
		  char *why, size_t why_len)
{
	char path[PATH_MAX];
	uint64_t stored;
	int err;

	if (!dir || dir[0] != '/') {
		snprintf(why, why_len, "state directory %s: not absolute",
			 dir ? dir : "(none)");
		return -EINVAL;
	}
	if (snprintf(path, sizeof(path), "%s/%s", dir, FKV_TERM_FILE) >=
	    (int)sizeof(path))
		return fail(why, why_len, ENAMETOOLONG, "%s: %s", dir);
	if (mkdir(dir, 0750) && errno != EEXIST)
		return fail(why, why_len, errno, "%s: %s", dir);
	err = term_read(path, &stored, why, why_len);
	if (err)
		return err;
	if (FKV_PUT_ID_TERM(seen_put_id) > stored)
		stored = FKV_PUT_ID_TERM(seen_put_id);
	if (stored >= FKV_TERM_MAX) {
		snprintf(why, why_len, "%s: every term is used (%" PRIu64 ")",
			 path, stored);
		return -EOVERFLOW;
	}
	err = term_write(dir, path, stored + 1, why, why_len);
	if (err)
		return err;
	*term = stored + 1;
	return 0;
}
