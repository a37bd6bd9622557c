// SPDX-License-Identifier: GPL-2.0
/*
 * The offline pieces: the key trace of a measured window (for the Belady
 * bound), the single-thread memcpy limit and the loopback TCP limit.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

/*
 * --ranges "first:count,..." (a get run's trace_ranges, worker by worker):
 * print the keys those ops chose, one per line, interleaving the workers
 * round-robin (op j of every worker before op j + 1 of any).
 */
int bench_run_trace(const struct bench_opts *o)
{
	uint64_t first[BENCH_MAX_WORKERS], count[BENCH_MAX_WORKERS], j, more;
	struct bench_keys keys;
	unsigned int n = 0, w;
	const char *p = o->ranges;
	int err;

	while (p && *p && n < BENCH_MAX_WORKERS) {
		char *end;

		first[n] = strtoull(p, &end, 10);
		if (*end != ':')
			return -EINVAL;
		count[n] = strtoull(end + 1, &end, 10);
		n++;
		p = *end == ',' ? end + 1 : end;
		if (*p && *end != ',')
			return -EINVAL;
	}
	if (!n)
		return -EINVAL;
	err = bench_keys_init(&keys, o);
	if (err)
		return err;
	for (j = 0, more = 1; more; j++) {
		more = 0;
		for (w = 0; w < n; w++) {
			if (j >= count[w])
				continue;
			more = 1;
			printf("%" PRIu64 "\n", bench_key_at(&keys, w, first[w] + j));
		}
	}
	bench_keys_free(&keys);
	return fflush(stdout) ? -EIO : 0;
}

/*
 * One thread copies --size bytes at a time for --seconds from a 128 MiB
 * pool of faulted-in sources (well past any cache) into one destination:
 * the shape of a bytes-mode get's copy.
 */
int bench_run_memcpy(const struct bench_opts *o)
{
	size_t pool = 128ull << 20, slots = pool / o->size, i = 0;
	uint64_t t0, t, copies = 0;
	char *src, *dst;

	if (!slots)
		slots = 1, pool = o->size;
	src = malloc(slots * o->size);
	dst = malloc(o->size);
	if (!src || !dst)
		return -ENOMEM;
	memset(src, 0x5a, slots * o->size);
	memset(dst, 0, o->size);
	t0 = bench_now_ns();
	do {
		memcpy(dst, src + (i++ % slots) * o->size, o->size);
		__asm__ volatile("" : : "r"(dst) : "memory");
		copies++;
		t = bench_now_ns();
	} while (t - t0 < (uint64_t)(o->seconds * 1e9));
	printf("{\"phase\":\"memcpy\",%s%s\"size\":%zu,\"copies\":%" PRIu64 ","
	       "\"secs\":%.3f,\"gib_s\":%.4f,\"copy_us\":%.1f}\n",
	       o->label ? o->label : "", o->label ? "," : "", o->size, copies,
	       (t - t0) / 1e9, copies * (double)o->size / ((t - t0) / 1e9) / (1ull << 30),
	       (t - t0) / 1e3 / copies);
	free(src);
	free(dst);
	return fflush(stdout) ? -EIO : 0;
}

struct lo_srv {
	int lfd;
	size_t size;
};

/* Answer every 1-byte request with --size bytes, until the peer closes. */
static void *lo_server(void *arg)
{
	struct lo_srv *sv = arg;
	char *buf = calloc(1, sv->size), req;
	int fd = accept(sv->lfd, NULL, NULL), one = 1;

	if (fd < 0 || !buf)
		goto out;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (recv(fd, &req, 1, MSG_WAITALL) == 1) {
		size_t off = 0;

		while (off < sv->size) {
			ssize_t w = send(fd, buf + off, sv->size - off, 0);

			if (w <= 0)
				goto out;
			off += w;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/*
 * Request/response over TCP loopback, one connection, one thread each side:
 * what any socket-based peer pays to move a payload to its client in this
 * machine (the memcached peer's transport, without memcached).
 */
int bench_run_loopback(const struct bench_opts *o)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	struct lo_srv sv = { .size = o->size };
	uint64_t t0, t, n = 0;
	pthread_t tid;
	char *buf;
	int fd, one = 1;

	sv.lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (sv.lfd < 0 || bind(sv.lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(sv.lfd, 1) || getsockname(sv.lfd, (struct sockaddr *)&a, &al))
		return -errno;
	if (pthread_create(&tid, NULL, lo_server, &sv))
		return -EAGAIN;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	buf = malloc(o->size);
	if (fd < 0 || !buf || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	t0 = bench_now_ns();
	do {
		if (send(fd, "g", 1, 0) != 1 ||
		    recv(fd, buf, o->size, MSG_WAITALL) != (ssize_t)o->size)
			return -EIO;
		n++;
		t = bench_now_ns();
	} while (t - t0 < (uint64_t)(o->seconds * 1e9));
	close(fd);
	pthread_join(tid, NULL);
	close(sv.lfd);
	free(buf);
	printf("{\"phase\":\"loopback\",%s%s\"size\":%zu,\"transfers\":%" PRIu64 ","
	       "\"secs\":%.3f,\"gib_s\":%.4f,\"transfer_us\":%.1f}\n",
	       o->label ? o->label : "", o->label ? "," : "", o->size, n,
	       (t - t0) / 1e9, n * (double)o->size / ((t - t0) / 1e9) / (1ull << 30),
	       (t - t0) / 1e3 / n);
	return fflush(stdout) ? -EIO : 0;
}
