// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl put / get / delete: thin shells around libfluxonkv.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fluxonkv.h>

#include "ctl_format.h"
#include "ctl.h"

static int ctl_fail(const char *cmd, const char *what, int err)
{
	fprintf(stderr, "fluxonctl %s: %s: %s\n", cmd, what, fkv_strerror(err));
	return ctl_exit_code(err);
}

static int ctl_open(const char *cmd, const struct ctl_opts *o,
		    struct fkv **kv)
{
	int err = fkv_open(o->device, kv);

	if (err)
		return ctl_fail(cmd, o->device ? o->device : FKV_DEFAULT_DEVICE,
				err);
	return CTL_EXIT_OK;
}

static int ctl_read_input(const struct ctl_opts *o, uint64_t max,
			  unsigned char **buf, size_t *len)
{
	bool use_stdin = !o->input || !strcmp(o->input, "-");
	int fd, err;

	fd = use_stdin ? STDIN_FILENO : open(o->input, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = ctl_read_fd(fd, max, (char **)buf, len);
	if (!use_stdin)
		close(fd);
	return err;
}

int ctl_cmd_put(const struct ctl_opts *o)
{
	const char *input = o->input && strcmp(o->input, "-") ? o->input :
			    "standard input";
	struct fluxonkv_info info;
	unsigned char *buf = NULL;
	const void *value;
	uint64_t put_id;
	size_t len = 0;
	struct fkv *kv;
	int ret, err;

	ret = ctl_open("put", o, &kv);
	if (ret)
		return ret;
	err = fkv_info(kv, &info);
	if (err) {
		ret = ctl_fail("put", "info", err);
		goto out_close;
	}

	if (o->value) {
		value = o->value;
		len = strlen(o->value);
	} else {
		err = ctl_read_input(o, info.value_max, &buf, &len);
		if (err == -E2BIG) {
			fprintf(stderr, "fluxonctl put: %s: value larger than %llu bytes\n",
				input, (unsigned long long)info.value_max);
			ret = CTL_EXIT_ERROR;
			goto out_close;
		}
		if (err) {
			fprintf(stderr, "fluxonctl put: %s: %s\n", input,
				strerror(-err));
			ret = CTL_EXIT_ERROR;
			goto out_close;
		}
		value = buf;
	}
	if (!len) {
		fprintf(stderr, "fluxonctl put: %s: the value is empty\n", input);
		ret = CTL_EXIT_ERROR;
		goto out_free;
	}

	err = fkv_put(kv, o->key, o->key_len, value, len, &put_id);
	if (err) {
		/* a put has no "miss": ENOENT would be an error like any other */
		ret = err == -ENOENT ? CTL_EXIT_ERROR : ctl_exit_code(err);
		fprintf(stderr, "fluxonctl put: '%s': %s\n", o->key_arg,
			fkv_strerror(err));
		goto out_free;
	}
	if (o->verbose)
		printf("%llu\n", (unsigned long long)put_id);
	ret = CTL_EXIT_OK;
out_free:
	free(buf);
out_close:
	fkv_close(kv);
	return ret;
}

static int ctl_write_all(int fd, const unsigned char *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* The holder's bytes to @o->output (or stdout), straight from the mapping. */
static int ctl_write_value(const struct ctl_opts *o, const struct fkv_holder *h)
{
	bool use_stdout = !o->output || !strcmp(o->output, "-");
	const char *name = use_stdout ? "standard output" : o->output;
	int fd, err;

	fd = use_stdout ? STDOUT_FILENO :
	     open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	err = ctl_write_all(fd, h->data, h->len);
	if (!use_stdout && close(fd) && !err)
		err = -errno;
	if (!err)
		return CTL_EXIT_OK;
fail:
	fprintf(stderr, "fluxonctl get: %s: %s\n", name, strerror(-err));
	return CTL_EXIT_ERROR;
}

int ctl_cmd_get(const struct ctl_opts *o)
{
	struct ctl_holder_info info;
	struct fkv_holder h;
	struct fkv *kv;
	int ret, err;

	ret = ctl_open("get", o, &kv);
	if (ret)
		return ret;
	err = fkv_get(kv, o->key, o->key_len, &h);
	if (err) {
		ret = ctl_fail("get", o->key_arg, err);
		goto out_close;
	}

	if (o->info) {
		info = (struct ctl_holder_info){
			.key = o->key_arg,
			.holder_id = h.id,
			.len = h.len,
			.put_id = h.put_id,
			.source = h.source,
		};
		if (o->json)
			ctl_render_holder_json(stdout, &info);
		else
			ctl_render_holder_human(stdout, &info);
		ret = fflush(stdout) ? CTL_EXIT_ERROR : CTL_EXIT_OK;
	} else {
		ret = ctl_write_value(o, &h);
	}

	err = fkv_holder_release(kv, &h);
	if (err && !ret)
		ret = ctl_fail("get", "release", err);
out_close:
	fkv_close(kv);
	return ret;
}

int ctl_cmd_delete(const struct ctl_opts *o)
{
	struct fkv *kv;
	int ret, err;

	ret = ctl_open("delete", o, &kv);
	if (ret)
		return ret;
	err = fkv_delete(kv, o->key, o->key_len);
	if (err)
		ret = ctl_fail("delete", o->key_arg, err);
	fkv_close(kv);
	return ret;
}
