// SPDX-License-Identifier: GPL-2.0
/*
 * ssd_plan: from a parsed configuration to the SSD tier's shards (reference
 * design §2.2-2.3).  fkv_ssd_plan() stat()s each large_file_paths entry,
 * derives its cache root, keeps one root per device and splits each limit
 * into shards, creating nothing; fkv_ssd_prepare() then makes the
 * directories and preallocated shard files and opens them for direct IO.
 * See <fluxonkv_config.h>.  Nothing here prints.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/fs.h>
#include <linux/fluxonkv.h>

#include "fluxonkv_config.h"
#include "config_msg.h"

int fkv_ssd_split(uint64_t capacity, const struct fkv_ssd_plan_opts *opts,
		  unsigned int *nshards, uint64_t *shard_size)
{
	uint64_t max = opts && opts->shard_max ? opts->shard_max :
		       FKV_SSD_SHARD_MAX;
	unsigned int maxn = opts && opts->max_shards ? opts->max_shards :
			    FKV_SSD_MAX_SHARDS;
	uint64_t n = capacity / max + (capacity % max != 0);

	if (maxn > 999)
		maxn = 999;	/* FKV_SSD_SHARD_FMT has three digits */
	if (n < 1)
		n = 1;
	if (n > maxn)
		n = maxn;
	*nshards = n;
	*shard_size = capacity / n / FKV_SSD_SHARD_ALIGN * FKV_SSD_SHARD_ALIGN;
	return *shard_size ? 0 : -ENOSPC;
}

void fkv_ssd_plan_free(struct fkv_ssd_plan *plan)
{
	size_t i;

	for (i = 0; i < plan->nroots; i++) {
		free(plan->roots[i].path);
		free(plan->roots[i].root);
	}
	free(plan->roots);
	fkv_msgs_free(&plan->warnings);
	fkv_msgs_free(&plan->errors);
	memset(plan, 0, sizeof(*plan));
}

int fkv_ssd_shard_path(const struct fkv_ssd_root *r, unsigned int k,
		       char *buf, size_t len)
{
	int n;

	if (r->kind == FKV_SSD_BLOCKDEV)
		n = snprintf(buf, len, "%s", r->root);
	else
		n = snprintf(buf, len, "%s/" FKV_SSD_SHARD_FMT, r->root, k);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

struct fkv_plan_ctx {
	struct fkv_ssd_plan *plan;
	const struct fkv_ssd_plan_opts *opts;
	int err;		/* -ENOMEM, sticky */
};

static __attribute__((format(printf, 3, 4)))
void fkv_plan_msg(struct fkv_plan_ctx *x, struct fkv_msgs *m,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (fkv_msgs_vadd(m, fmt, ap))
		x->err = -ENOMEM;
	va_end(ap);
}

/* "GiB"-style rendering for messages: "1.5 GiB (1610612736 bytes)". */
const char *fkv_bytes(char *buf, size_t len, uint64_t v)
{
	static const char *const u[] = { "bytes", "KiB", "MiB", "GiB", "TiB",
					 "PiB", "EiB" };
	double d = v;
	int i = 0;

	while (d >= 1024 && i < 6) {
		d /= 1024;
		i++;
	}
	if (!i)
		snprintf(buf, len, "%llu bytes", (unsigned long long)v);
	else
		snprintf(buf, len, "%.4g %s (%llu bytes)", d, u[i],
			 (unsigned long long)v);
	return buf;
}

/*
 * The nearest existing ancestor of @path (itself included) into @anc
 * (malloc'ed) and its stat into @st.  0 or -errno; -ENOTDIR when that
 * ancestor is no directory (@anc then names it).
 */
static int fkv_existing_ancestor(const char *path, char **anc,
				 struct stat *st)
{
	char *p = strdup(path), *slash;
	int ret = 0;

	if (!p)
		return -ENOMEM;
	for (;;) {
		if (!stat(p, st))
			break;
		if (errno != ENOENT) {
			ret = -errno;
			break;
		}
		slash = strrchr(p, '/');
		if (!slash) {
			ret = -ENOENT;
			break;
		}
		if (slash == p)
			slash[1] = '\0';	/* "/" itself */
		else
			*slash = '\0';
	}
	if (!ret && !S_ISDIR(st->st_mode))
		ret = -ENOTDIR;
	*anc = p;
	return ret;
}

/* Bytes the existing shard files k < nshards hold (truncated on prepare). */
static uint64_t fkv_reclaimable(const struct fkv_ssd_root *r)
{
	char path[PATH_MAX];
	uint64_t total = 0;
	struct stat st;
	unsigned int k;

	for (k = 0; k < r->nshards; k++)
		if (!fkv_ssd_shard_path(r, k, path, sizeof(path)) &&
		    !lstat(path, &st) && S_ISREG(st.st_mode))
			total += (uint64_t)st.st_blocks * 512;
	return total;
}

/*
 * Fill @r for a directory: the cache root and its device.  0, or -errno
 * after an error message.
 */
static int fkv_plan_dir(struct fkv_plan_ctx *x, const struct fkv_config *c,
			struct fkv_ssd_root *r, const char *what)
{
	char q[FKV_QUOTE_BUF], shard[PATH_MAX];
	struct statvfs vfs;
	struct stat st;
	char *anc;
	int ret;

	r->kind = FKV_SSD_DIR;
	if (asprintf(&r->root, "%s/%s" FKV_SSD_ROOT_SUFFIX "/%s",
		     strcmp(r->path, "/") ? r->path : "", c->cluster_name,
		     c->instance) < 0) {
		r->root = NULL;
		return x->err = -ENOMEM;
	}
	if (fkv_ssd_shard_path(r, 999, shard, sizeof(shard))) {
		fkv_plan_msg(x, &x->plan->errors,
			     "%s: cache root %s: shard paths would exceed PATH_MAX",
			     what, fkv_quote(q, r->root));
		return -ENAMETOOLONG;
	}
	ret = fkv_existing_ancestor(r->root, &anc, &st);
	if (ret == -ENOMEM)
		return x->err = ret;
	if (ret == -ENOTDIR)
		fkv_plan_msg(x, &x->plan->errors,
			     "%s: %s is in the way of cache root %s: not a directory",
			     what, fkv_quote(q, anc), r->root);
	else if (ret)
		fkv_plan_msg(x, &x->plan->errors, "%s: cache root %s: %s",
			     what, fkv_quote(q, r->root), strerror(-ret));
	if (!ret) {
		r->dev = st.st_dev;
		r->exists = !strcmp(anc, r->root);
		if (!statvfs(anc, &vfs))
			r->avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	}
	free(anc);
	return ret;
}

/* Fill @r for a block device: its identity and size. */
static int fkv_plan_blockdev(struct fkv_plan_ctx *x, struct fkv_ssd_root *r,
			     const struct stat *st, const char *what)
{
	char q[FKV_QUOTE_BUF];
	uint64_t size;
	int fd, ret = 0;

	r->kind = FKV_SSD_BLOCKDEV;
	r->dev = st->st_rdev;
	r->exists = true;
	r->root = strdup(r->path);
	if (!r->root)
		return x->err = -ENOMEM;
	fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size)) {
		ret = -errno;
		fkv_plan_msg(x, &x->plan->errors,
			     "%s: %s: block device: cannot read its size: %s",
			     what, fkv_quote(q, r->path), strerror(-ret));
		goto out;
	}
	r->avail = size;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

static const char *fkv_file_type(mode_t m)
{
	if (S_ISREG(m))
		return "regular file";
	if (S_ISCHR(m))
		return "character device";
	if (S_ISFIFO(m))
		return "fifo";
	if (S_ISSOCK(m))
		return "socket";
	return "special file";
}

/* Plan large_file_paths[i] into @r; 0 or -errno after an error message. */
static int fkv_plan_one(struct fkv_plan_ctx *x, const struct fkv_config *c,
			size_t i, struct fkv_ssd_root *r)
{
	char q[FKV_QUOTE_BUF], what[48];
	size_t len;
	struct stat st;
	int ret;

	snprintf(what, sizeof(what), "large_file_paths[%zu]", i);
	memset(r, 0, sizeof(*r));
	r->index = i;
	r->limit = c->limits[i];
	r->path = strdup(c->paths[i]);
	if (!r->path)
		return x->err = -ENOMEM;
	for (len = strlen(r->path); len > 1 && r->path[len - 1] == '/'; len--)
		r->path[len - 1] = '\0';

	if (!stat(r->path, &st)) {
		if (S_ISBLK(st.st_mode))
			ret = fkv_plan_blockdev(x, r, &st, what);
		else if (S_ISDIR(st.st_mode))
			ret = fkv_plan_dir(x, c, r, what);
		else {
			fkv_plan_msg(x, &x->plan->errors,
				     "%s: %s: not a directory or block device (a %s)",
				     what, fkv_quote(q, r->path),
				     fkv_file_type(st.st_mode));
			ret = -ENOTDIR;
		}
	} else if (errno == ENOENT) {
		ret = fkv_plan_dir(x, c, r, what);
	} else {
		ret = -errno;
		fkv_plan_msg(x, &x->plan->errors, "%s: %s: %s", what,
			     fkv_quote(q, r->path), strerror(-ret));
	}
	return ret;
}

/* Split a kept root's limit into shards, which its device must hold. */
static int fkv_plan_shards(struct fkv_plan_ctx *x, struct fkv_ssd_root *r)
{
	char q[FKV_QUOTE_BUF], b1[64], b2[64];

	if (r->kind == FKV_SSD_BLOCKDEV && r->avail < r->limit) {
		fkv_plan_msg(x, &x->plan->errors,
			     "large_file_paths[%u]: %s: block device of %s is smaller than its large_limit_size of %s",
			     r->index, fkv_quote(q, r->path),
			     fkv_bytes(b1, sizeof(b1), r->avail),
			     fkv_bytes(b2, sizeof(b2), r->limit));
		return -ENOSPC;
	}
	if (fkv_ssd_split(r->limit, x->opts, &r->nshards, &r->shard_size)) {
		fkv_plan_msg(x, &x->plan->errors,
			     "large_limit_size[%u]: %llu bytes is less than one %llu-byte shard",
			     r->index, (unsigned long long)r->limit,
			     FKV_SSD_SHARD_ALIGN);
		return -ENOSPC;
	}
	r->capacity = r->nshards * r->shard_size;
	return 0;
}

/* Warnings about a planned root that do not stop it. */
static void fkv_plan_remarks(struct fkv_plan_ctx *x, struct fkv_ssd_root *r)
{
	char q[FKV_QUOTE_BUF], b1[64], b2[64];
	uint64_t free_now;

	if (r->shard_size < FLUXONKV_VALUE_MAX)
		fkv_plan_msg(x, &x->plan->warnings,
			     "large_file_paths[%u]: shards of %s cannot hold values larger than that (values go up to %s)",
			     r->index, fkv_bytes(b1, sizeof(b1), r->shard_size),
			     fkv_bytes(b2, sizeof(b2), FLUXONKV_VALUE_MAX));
	if (r->kind != FKV_SSD_DIR)
		return;
	if (access(r->path, F_OK) && errno == ENOENT)
		fkv_plan_msg(x, &x->plan->warnings,
			     "large_file_paths[%u]: %s does not exist yet: it will be created",
			     r->index, fkv_quote(q, r->path));
	free_now = r->avail + fkv_reclaimable(r);
	if (free_now < r->capacity)
		fkv_plan_msg(x, &x->plan->warnings,
			     "large_file_paths[%u]: %s: the filesystem has %s free, less than the %s the shards preallocate",
			     r->index, fkv_quote(q, r->path),
			     fkv_bytes(b1, sizeof(b1), free_now),
			     fkv_bytes(b2, sizeof(b2), r->capacity));
}

/* -EEXIST (with a warning) when an earlier root is on @r's device. */
static int fkv_plan_dup(struct fkv_plan_ctx *x, const struct fkv_ssd_root *r)
{
	char q1[FKV_QUOTE_BUF], q2[FKV_QUOTE_BUF];
	const struct fkv_ssd_root *first;
	size_t j;

	for (j = 0; j < x->plan->nroots; j++) {
		first = &x->plan->roots[j];
		if (first->dev != r->dev)
			continue;
		fkv_plan_msg(x, &x->plan->warnings,
			     "large_file_paths[%u]: %s is on device %u:%u like large_file_paths[%u] %s: ignored, with its large_limit_size (one root per device)",
			     r->index, fkv_quote(q1, r->path),
			     major(r->dev), minor(r->dev), first->index,
			     fkv_quote(q2, first->path));
		return -EEXIST;
	}
	return 0;
}

int fkv_ssd_plan(const struct fkv_config *c,
		 const struct fkv_ssd_plan_opts *opts,
		 struct fkv_ssd_plan *plan, char *err, size_t errlen)
{
	struct fkv_plan_ctx x = { .plan = plan, .opts = opts };
	size_t i;

	memset(plan, 0, sizeof(*plan));
	if (err && errlen)
		err[0] = '\0';
	if (c->errors.n || (c->ssd && !c->limits)) {
		fkv_seterr(err, errlen, "the configuration has errors");
		return -EINVAL;
	}
	if (!c->ssd || !c->npaths)
		return 0;
	plan->roots = calloc(c->npaths, sizeof(*plan->roots));
	if (!plan->roots)
		return -ENOMEM;

	for (i = 0; i < c->npaths && !x.err; i++) {
		struct fkv_ssd_root *r = &plan->roots[plan->nroots];

		if (fkv_plan_one(&x, c, i, r) || fkv_plan_dup(&x, r) ||
		    fkv_plan_shards(&x, r)) {
			free(r->path);
			free(r->root);
			memset(r, 0, sizeof(*r));
			continue;
		}
		r->first_shard = plan->nshards;
		plan->nshards += r->nshards;
		plan->capacity += r->capacity;
		fkv_plan_remarks(&x, r);
		plan->nroots++;
	}
	if (x.err) {
		fkv_seterr(err, errlen, "out of memory");
		return x.err;
	}
	if (plan->errors.n) {
		fkv_msgs_copy(&plan->errors, err, errlen);
		return -EINVAL;
	}
	return 0;
}

/* ---- prepare ----------------------------------------------------------- */

/* mkdir -p @path: missing components get @mode. */
static int fkv_mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX], save;
	struct stat st;
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		save = *p;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		if (stat(buf, &st))
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		*p = save;
		if (!save)
			return 0;
	}
}

void fkv_ssd_close(int *fds, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

struct fkv_prep_ctx {
	unsigned int flags;
	struct fkv_msgs *warnings;
	char *err;
	size_t errlen;
};

static __attribute__((format(printf, 2, 3)))
void fkv_prep_warn(struct fkv_prep_ctx *x, const char *fmt, ...)
{
	va_list ap;

	if (!x->warnings)
		return;
	va_start(ap, fmt);
	fkv_msgs_vadd(x->warnings, fmt, ap);	/* a lost warning is no error */
	va_end(ap);
}

/* Remove shard files numbered nshards and up: a smaller config's leftovers. */
static void fkv_remove_stale(struct fkv_prep_ctx *x,
			     const struct fkv_ssd_root *r)
{
	char name[32];
	struct dirent *de;
	unsigned int k;
	DIR *d;

	d = opendir(r->root);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (sscanf(de->d_name, "shard-%u.dat", &k) != 1 ||
		    k < r->nshards)
			continue;
		snprintf(name, sizeof(name), FKV_SSD_SHARD_FMT, k);
		if (strcmp(name, de->d_name))
			continue;
		if (!unlinkat(dirfd(d), name, 0))
			fkv_prep_warn(x, "%s: removed stale %s (the plan has %u shards)",
				      r->root, name, r->nshards);
	}
	closedir(d);
}

static int fkv_prep_shard(struct fkv_prep_ctx *x, const struct fkv_ssd_root *r,
			  unsigned int k, int *fdp)
{
	const int flags = O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC | O_NOFOLLOW;
	char path[PATH_MAX];
	int fd, ret;

	ret = fkv_ssd_shard_path(r, k, path, sizeof(path));
	if (ret) {
		fkv_seterr(x->err, x->errlen, "%s: shard %u: %s", r->root, k,
			   strerror(-ret));
		return ret;
	}
	fd = open(path, flags | O_DIRECT, 0640);
	if (fd < 0 && errno == EINVAL &&
	    (x->flags & FKV_SSD_PREPARE_ALLOW_BUFFERED)) {
		fd = open(path, flags, 0640);
		if (fd >= 0)
			fkv_prep_warn(x, "%s: no O_DIRECT on this filesystem: opened buffered (test mode)",
				      path);
	}
	if (fd < 0) {
		ret = -errno;
		fkv_seterr(x->err, x->errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	*fdp = fd;
	if (!fallocate(fd, 0, 0, r->shard_size))
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS) {
		ret = -errno;
		fkv_seterr(x->err, x->errlen, "%s: preallocating %llu bytes: %s",
			   path, (unsigned long long)r->shard_size,
			   strerror(-ret));
		return ret;
	}
	if (ftruncate(fd, r->shard_size)) {
		ret = -errno;
		fkv_seterr(x->err, x->errlen, "%s: ftruncate: %s", path,
			   strerror(-ret));
		return ret;
	}
	fkv_prep_warn(x, "%s: no fallocate on this filesystem: the shard is sparse and writes may hit ENOSPC",
		      path);
	return 0;
}

static int fkv_prep_dir(struct fkv_prep_ctx *x, const struct fkv_ssd_root *r,
			int *fds)
{
	struct stat st;
	unsigned int k;
	int ret;

	ret = fkv_mkdir_p(r->root, 0750);
	if (ret) {
		fkv_seterr(x->err, x->errlen, "mkdir -p %s: %s", r->root,
			   strerror(-ret));
		return ret;
	}
	if (stat(r->root, &st))
		return -errno;
	if (st.st_dev != r->dev) {
		fkv_seterr(x->err, x->errlen,
			   "%s: now on device %u:%u, planned on %u:%u (mounted meanwhile?): plan again",
			   r->root, major(st.st_dev), minor(st.st_dev),
			   major(r->dev), minor(r->dev));
		return -EXDEV;
	}
	for (k = 0; k < r->nshards; k++) {
		ret = fkv_prep_shard(x, r, k, &fds[k]);
		if (ret)
			return ret;
	}
	fkv_remove_stale(x, r);
	return 0;
}

static int fkv_prep_blockdev(struct fkv_prep_ctx *x,
			     const struct fkv_ssd_root *r, int *fds)
{
	struct stat st;
	unsigned int k;
	int ret;

	fds[0] = open(r->root, O_RDWR | O_DIRECT | O_EXCL | O_CLOEXEC);
	if (fds[0] < 0) {
		ret = -errno;
		fkv_seterr(x->err, x->errlen, "%s: %s%s", r->root,
			   strerror(-ret),
			   ret == -EBUSY ? " (mounted or in use)" : "");
		return ret;
	}
	if (fstat(fds[0], &st))
		return -errno;
	if (!S_ISBLK(st.st_mode) || st.st_rdev != r->dev) {
		fkv_seterr(x->err, x->errlen,
			   "%s: no longer the planned block device %u:%u",
			   r->root, major(r->dev), minor(r->dev));
		return -ENODEV;
	}
	for (k = 1; k < r->nshards; k++) {
		fds[k] = fcntl(fds[0], F_DUPFD_CLOEXEC, 0);
		if (fds[k] < 0) {
			ret = -errno;
			fkv_seterr(x->err, x->errlen, "%s: dup: %s", r->root,
				   strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int fkv_ssd_prepare(const struct fkv_ssd_plan *plan, unsigned int flags,
		    int *fds, struct fkv_msgs *warnings, char *err,
		    size_t errlen)
{
	struct fkv_prep_ctx x = { flags, warnings, err, errlen };
	unsigned int i;
	int ret = 0;

	if (err && errlen)
		err[0] = '\0';
	for (i = 0; i < plan->nshards; i++)
		fds[i] = -1;
	for (i = 0; i < plan->nroots && !ret; i++) {
		const struct fkv_ssd_root *r = &plan->roots[i];
		int *rfds = fds + r->first_shard;

		if (r->kind == FKV_SSD_BLOCKDEV)
			ret = fkv_prep_blockdev(&x, r, rfds);
		else
			ret = fkv_prep_dir(&x, r, rfds);
	}
	if (ret) {
		if (err && errlen && !err[0])
			fkv_seterr(err, errlen, "%s", strerror(-ret));
		fkv_ssd_close(fds, plan->nshards);
	}
	return ret;
}
