// SPDX-License-Identifier: GPL-2.0
/*
 * memcached backend: the text meta protocol over TCP (loopback; or a UNIX
 * socket when --server is a path), one connection per worker, one request in flight per connection.
 *
 *   put:  "ms <key> <len> T0\r\n" <data> "\r\n"  ->  "HD\r\n"
 *   get:  "mg <key> v\r\n"  ->  "VA <len>\r\n" <data> "\r\n"  |  "EN\r\n"
 *
 * A get's value is received straight into the connection's buffer and the
 * returned view points there (the counterpart of a native reference: the
 * payload is resident in the client's memory, nothing copied after recv).
 * memcached does not say per get whether a value came from extstore, so
 * tiers are attributed from the "stats" counters sampled at the window's
 * edges (counters()).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench.h"

struct mc_conn {
	int fd;
	char *buf;
	size_t cap, len;
};

static int mc_connect(const char *server)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	char host[128], *port;
	int fd = -1, one = 1, err;

	if (server && server[0] == '/') {	/* a UNIX socket path */
		struct sockaddr_un un = { .sun_family = AF_UNIX };

		snprintf(un.sun_path, sizeof(un.sun_path), "%s", server);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&un, sizeof(un))) {
			close(fd);
			return -ECONNREFUSED;
		}
		return fd;
	}
	snprintf(host, sizeof(host), "%s", server ? server : "127.0.0.1:11211");
	port = strrchr(host, ':');
	if (!port)
		return -EINVAL;
	*port++ = 0;
	err = getaddrinfo(host, port, &hints, &res);
	if (err)
		return -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return -ECONNREFUSED;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int mc_open(const struct bench_opts *o, void **conn)
{
	struct mc_conn *c = calloc(1, sizeof(*c));
	int fd;

	if (!c)
		return -ENOMEM;
	c->cap = o->size + 4096;
	c->buf = malloc(c->cap);
	fd = mc_connect(o->server);
	if (!c->buf || fd < 0) {
		fprintf(stderr, "fkvbench: memcached %s: %s\n",
			o->server ? o->server : "127.0.0.1:11211",
			strerror(fd < 0 ? -fd : ENOMEM));
		free(c->buf);
		free(c);
		return fd < 0 ? fd : -ENOMEM;
	}
	c->fd = fd;
	*conn = c;
	return 0;
}

static void mc_close(void *conn)
{
	struct mc_conn *c = conn;

	close(c->fd);
	free(c->buf);
	free(c);
}

static int mc_send(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= w;
		}
	}
	return 0;
}

/* Read until c->len >= want (growing the buffer if needed). */
static int mc_fill(struct mc_conn *c, size_t want)
{
	if (want > c->cap) {
		char *nb = realloc(c->buf, want + 4096);

		if (!nb)
			return -ENOMEM;
		c->buf = nb;
		c->cap = want + 4096;
	}
	while (c->len < want) {
		ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ECONNRESET;
		c->len += r;
	}
	return 0;
}

/* Read one header line; returns its length including "\r\n". */
static ssize_t mc_line(struct mc_conn *c)
{
	size_t scanned = 0;
	int err;

	for (;;) {
		char *nl = c->len > scanned ?
			memchr(c->buf + scanned, '\n', c->len - scanned) : NULL;

		if (nl)
			return nl - c->buf + 1;
		scanned = c->len;
		if (c->len >= 4096)
			return -EPROTO;
		err = mc_fill(c, c->len + 1);
		if (err)
			return err;
	}
}

static int mc_put(void *conn, const char *key, size_t kl, const void *val,
		  size_t len)
{
	struct mc_conn *c = conn;
	char hdr[BENCH_KEY_MAX + 64];
	struct iovec iov[3];
	ssize_t ll;
	int n, err;

	n = snprintf(hdr, sizeof(hdr), "ms %.*s %zu T0\r\n", (int)kl, key, len);
	iov[0] = (struct iovec){ hdr, (size_t)n };
	iov[1] = (struct iovec){ (void *)val, len };
	iov[2] = (struct iovec){ "\r\n", 2 };
	err = mc_send(c->fd, iov, 3);
	if (err)
		return err;
	c->len = 0;
	ll = mc_line(c);
	if (ll < 0)
		return (int)ll;
	if (ll >= 2 && !memcmp(c->buf, "HD", 2))
		return 0;
	fprintf(stderr, "fkvbench: memcached put %.*s: %.*s\n", (int)kl, key,
		(int)(ll > 2 ? ll - 2 : 0), c->buf);
	return -ENOSPC;
}

static int mc_get(void *conn, const char *key, size_t kl, struct bench_ref *ref)
{
	struct mc_conn *c = conn;
	char hdr[BENCH_KEY_MAX + 16];
	struct iovec iov[1];
	unsigned long long vlen;
	ssize_t ll;
	int n, err;

	n = snprintf(hdr, sizeof(hdr), "mg %.*s v\r\n", (int)kl, key);
	iov[0] = (struct iovec){ hdr, (size_t)n };
	err = mc_send(c->fd, iov, 1);
	if (err)
		return err;
	c->len = 0;
	ll = mc_line(c);
	if (ll < 0)
		return (int)ll;
	if (ll >= 2 && !memcmp(c->buf, "EN", 2))
		return -ENOENT;
	if (ll < 4 || memcmp(c->buf, "VA ", 3) ||
	    sscanf(c->buf + 3, "%llu", &vlen) != 1) {
		fprintf(stderr, "fkvbench: memcached get %.*s: %.*s\n", (int)kl,
			key, (int)(ll > 2 ? ll - 2 : 0), c->buf);
		return -EPROTO;
	}
	err = mc_fill(c, (size_t)ll + vlen + 2);
	if (err)
		return err;
	ref->data = c->buf + ll;
	ref->len = vlen;
	ref->tier = BENCH_TIER_UNKNOWN;
	return 0;
}

static void mc_release(void *conn, struct bench_ref *ref)
{
	((struct mc_conn *)conn)->len = 0;
}

/* "stats" over a fresh connection: fetch the named counters. */
static int mc_stats(const struct bench_opts *o, const char *const *names,
		    uint64_t *vals, unsigned int n)
{
	struct bench_opts so = *o;
	struct mc_conn *c;
	struct iovec iov = { "stats\r\n", 7 };
	size_t off = 0;
	unsigned int i;
	int err;

	so.size = 64 * 1024;
	err = mc_open(&so, (void **)&c);
	if (err)
		return err;
	err = mc_send(c->fd, &iov, 1);
	c->len = 0;
	while (!err) {
		char *nl, name[64];
		unsigned long long v;

		nl = c->len > off ? memchr(c->buf + off, '\n', c->len - off) : NULL;
		if (!nl) {
			err = mc_fill(c, c->len + 1);
			continue;
		}
		*nl = 0;
		if (!strncmp(c->buf + off, "END", 3))
			break;
		if (sscanf(c->buf + off, "STAT %63s %llu", name, &v) == 2)
			for (i = 0; i < n; i++)
				if (!strcmp(name, names[i]))
					vals[i] = v;
		off = nl - c->buf + 1;
	}
	mc_close(c);
	return err;
}

/*
 * A get served from extstore bumps get_extstore; the ones that still failed
 * (miss, bad CRC, aborted, out of memory for the read buffer) bump one of
 * the others and are misses to the client.
 */
static int mc_counters(const struct bench_opts *o, struct bench_counters *c)
{
	static const char *const names[] = {
		"get_extstore", "miss_from_extstore", "badcrc_from_extstore",
		"get_aborted_extstore", "get_oom_extstore", "extstore_bytes_read",
	};
	uint64_t v[6] = { 0 };
	int err = mc_stats(o, names, v, 6);

	c->valid = !err;
	c->ssd_hits = v[0] - v[1] - v[2] - v[3] - v[4];
	c->ssd_read_bytes = v[5];
	return err;
}

static void mc_describe(const struct bench_opts *o, char *buf, size_t cap)
{
	static const char *const names[] = {
		"limit_maxbytes", "bytes", "curr_items", "evictions",
		"extstore_objects_used", "extstore_bytes_used",
		"extstore_limit_maxbytes", "total_items",
	};
	uint64_t v[8] = { 0 };

	mc_stats(o, names, v, 8);
	snprintf(buf, cap,
		 "\"mc_limit_maxbytes\":%llu,\"mc_bytes\":%llu,"
		 "\"mc_curr_items\":%llu,\"mc_evictions\":%llu,"
		 "\"mc_extstore_objects_used\":%llu,\"mc_extstore_bytes_used\":%llu,"
		 "\"mc_extstore_limit_maxbytes\":%llu,\"mc_total_items\":%llu",
		 (unsigned long long)v[0], (unsigned long long)v[1],
		 (unsigned long long)v[2], (unsigned long long)v[3],
		 (unsigned long long)v[4], (unsigned long long)v[5],
		 (unsigned long long)v[6], (unsigned long long)v[7]);
}

const struct bench_backend bench_backend_memcached = {
	.name = "memcached",
	.open = mc_open,
	.close = mc_close,
	.put = mc_put,
	.get = mc_get,
	.release = mc_release,
	.counters = mc_counters,
	.describe = mc_describe,
};
