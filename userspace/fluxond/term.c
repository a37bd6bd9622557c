// SPDX-License-Identifier: GPL-2.0
/*
 * term.c - the master's term and fence files (term.h).
 */
#include <errno.h>
#include <stdbool.h>
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

/* Replace @path (in @dir) by @len bytes of @buf, durably. */
static int durable_write(const char *dir, const char *path, const char *buf,
			 size_t len, char *why, size_t why_len)
{
	char tmp[PATH_MAX];
	int fd, dfd;

	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return fail(why, why_len, ENAMETOOLONG, "%s: %s", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0640);
	if (fd < 0)
		return fail(why, why_len, errno, "%s: %s", tmp);
	errno = 0;
	if (write(fd, buf, len) != (ssize_t)len || fsync(fd)) {
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

static int term_write(const char *dir, const char *path, uint64_t term,
		      char *why, size_t why_len)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", term);

	return durable_write(dir, path, buf, (size_t)len, why, why_len);
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

/* ---- fences ---- */

static int fence_path(const struct fkv_fences *f, char *path, size_t size)
{
	return snprintf(path, size, "%s/%s", f->dir, FKV_FENCE_FILE) >=
	       (int)size ? -ENAMETOOLONG : 0;
}

static struct fkv_fence *fence_find(const struct fkv_fences *f,
				    const char *name)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].name, name))
			return &f->v[i];
	return NULL;
}

static int fence_add(struct fkv_fences *f, const char *name, uint64_t put_id)
{
	struct fkv_fence *e;

	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;

		e = realloc(f->v, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		f->v = e;
		f->cap = cap;
	}
	e = &f->v[f->n++];
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->put_id = put_id;
	return 0;
}

void fkv_fences_free(struct fkv_fences *f)
{
	free(f->dir);
	free(f->v);
	memset(f, 0, sizeof(*f));
}

int fkv_fences_load(struct fkv_fences *f, const char *dir, char *why,
		    size_t why_len)
{
	char path[PATH_MAX], line[160], name[FKV_FENCE_NAME_MAX + 2];
	unsigned long long v;
	unsigned int lineno = 0;
	FILE *fp;
	int err = 0;

	memset(f, 0, sizeof(*f));
	f->dir = strdup(dir);
	if (!f->dir)
		return -ENOMEM;
	if (fence_path(f, path, sizeof(path)))
		return fail(why, why_len, ENAMETOOLONG, "%s: %s", dir);
	fp = fopen(path, "re");
	if (!fp)
		return errno == ENOENT ? 0 : fail(why, why_len, errno,
						  "%s: %s", path);
	while (!err && fgets(line, sizeof(line), fp)) {
		char end;

		lineno++;
		if (sscanf(line, "%65s %llx%c", name, &v, &end) != 3 ||
		    end != '\n' || strlen(name) > FKV_FENCE_NAME_MAX ||
		    fence_find(f, name)) {
			snprintf(why, why_len,
				 "%s line %u: not a fence (\"name put_id\" in "
				 "hex, one per node): fix or remove it only if "
				 "no node keeps replicas from before it", path,
				 lineno);
			err = -EINVAL;
			break;
		}
		err = fence_add(f, name, v);
	}
	fclose(fp);
	return err;
}

/* Every fence to the file, durably (fences with put_id 0 are left out). */
static int fences_write(struct fkv_fences *f, char *why, size_t why_len)
{
	char path[PATH_MAX], *buf;
	size_t i, len = 0, cap;
	int err;

	if (fence_path(f, path, sizeof(path)))
		return fail(why, why_len, ENAMETOOLONG, "%s: %s", f->dir);
	cap = f->n * (FKV_FENCE_NAME_MAX + 20) + 1;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < f->n; i++)
		if (f->v[i].put_id)
			len += (size_t)snprintf(buf + len, cap - len,
						"%s %" PRIx64 "\n",
						f->v[i].name, f->v[i].put_id);
	err = durable_write(f->dir, path, buf, len, why, why_len);
	free(buf);
	return err;
}

int fkv_fences_lift(struct fkv_fences *f, const char *name, uint64_t put_id,
		    char *why, size_t why_len)
{
	struct fkv_fence *e = fence_find(f, name);
	int err;

	if (!e || !e->put_id || e->put_id != put_id)
		return 0;	/* none, or raised again since */
	e->put_id = 0;
	err = fences_write(f, why, why_len);
	if (err)
		e->put_id = put_id;	/* still on disk: still on */
	return err;
}

int fkv_fences_raise(struct fkv_fences *f, const char *name, uint64_t put_id,
		     char *why, size_t why_len)
{
	struct fkv_fence *e = fence_find(f, name);
	uint64_t old = e ? e->put_id : 0;
	bool had = e != NULL;
	int err;

	if (!f->dir || strlen(name) > FKV_FENCE_NAME_MAX) {
		snprintf(why, why_len, "no state directory, or a name too long");
		return -EINVAL;
	}
	if (e && e->put_id >= put_id)
		return 0;
	if (e)
		e->put_id = put_id;
	else if ((err = fence_add(f, name, put_id)))
		return err;
	err = fences_write(f, why, why_len);
	if (err) {
		/* Not written: not raised (the caller says so). */
		e = fence_find(f, name);
		if (had)
			e->put_id = old;	/* 0 if it was lifted */
		else
			f->n--;
	}
	return err;
}

uint64_t fkv_fences_of(const struct fkv_fences *f, const char *name)
{
	const struct fkv_fence *e = fence_find(f, name);

	return e ? e->put_id : 0;
}
