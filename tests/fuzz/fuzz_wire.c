// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_wire - libFuzzer (or replay) target for what fluxond and fluxonctl
 * read off a TCP stream or the control socket: the framing of generic
 * netlink messages (userspace/common/wire.c) and the STATS answer decoder
 * of fluxonctl cluster (userspace/fluxonctl/ctl_cluster.c), including the
 * three renderings of whatever it accepted.
 *
 * The input is a byte stream, fed to a struct fkv_wire through a socket
 * pair in random-sized pieces (the first byte seeds the piece sizes).
 * Promises checked, besides the sanitizers: fkv_wire_frame() and
 * fkv_wire_next() agree; every message handed out has a valid header, a
 * length within FKV_WIRE_MAX and is 4-byte aligned; -EPROTO ends the
 * stream for good; a decoded STATS answer has NUL-terminated strings and
 * counts within its arrays.
 *
 * Build and run (clang):
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
 *         -Iuapi -Iuserspace/include $(pkg-config --cflags libnl-genl-3.0) \
 *         tests/fuzz/fuzz_wire.c userspace/common/wire.c \
 *         userspace/fluxonctl/ctl_cluster.c userspace/fluxonctl/ctl_format.c \
 *         userspace/fluxonctl/ctl_json.c userspace/fluxonctl/ctl_sysfs.c \
 *         userspace/fluxonctl/ctl_latency.c userspace/fluxonctl/ctl_dump.c \
 *         $(pkg-config --libs libnl-genl-3.0) -o build-fuzz/fuzz_wire
 *   build-fuzz/fuzz_wire -max_total_time=60 build-fuzz/corpus-wire \
 *         tests/fuzz/corpus/wire
 *
 * or simply make fuzz FUZZ_TARGETS=wire (tests/fuzz/run).  Replay without
 * clang: make unit builds build/unit/fuzz_wire (gcc, -DFKV_FUZZ_STANDALONE),
 * which replays tests/fuzz/corpus/wire (or the files it is given) as TAP.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/genetlink.h>
#include <netlink/msg.h>

#include "../../userspace/common/cluster_msg.h"
#include "../../userspace/fluxonctl/ctl_cluster.h"
#include "../../userspace/common/wire.h"
#include "fuzz_common.h"

static void check_cluster(const struct ctl_cluster *c)
{
	unsigned int i;
	FILE *f = fopen("/dev/null", "w");

	CHECK(memchr(c->role, 0, sizeof(c->role)));
	CHECK(memchr(c->name, 0, sizeof(c->name)));
	CHECK(memchr(c->master, 0, sizeof(c->master)));
	CHECK(c->nst <= CTL_CLUSTER_STATS);
	CHECK(c->nnodes <= FKV_MEMBERS_MAX_CTL);
	for (i = 0; i < c->nnodes; i++) {
		CHECK(c->nodes[i].nst <= CTL_CLUSTER_NODE_STATS);
		CHECK(memchr(c->nodes[i].name, 0, sizeof(c->nodes[i].name)));
		CHECK(memchr(c->nodes[i].addr, 0, sizeof(c->nodes[i].addr)));
	}
	if (f) {
		ctl_render_cluster_human(f, c);
		ctl_render_cluster_json(f, c);
		ctl_render_cluster_prometheus(f, c);
		fclose(f);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctl_cluster c;
	struct fkv_wire w;
	size_t fed = 0, piece;
	unsigned int seed;
	int sv[2], err = 0;
	bool dead = false;

	if (size < 1 || size > (1 << 20))
		return 0;
	seed = data[0];
	data++;
	size--;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 0;
	fkv_wire_init(&w, sv[0]);
	while (fed < size && !dead) {
		struct nlmsghdr *nlh;

		seed = seed * 1103515245u + 12345u;
		piece = 1 + (seed >> 16) % 4096;
		if (piece > size - fed)
			piece = size - fed;
		if (write(sv[1], data + fed, piece) != (ssize_t)piece)
			break;
		fed += piece;
		while (fkv_wire_read(&w) == 0)
			;
		while ((nlh = fkv_wire_next(&w, &err))) {
			size_t len;

			CHECK(((uintptr_t)nlh & 3) == 0);
			CHECK(fkv_wire_frame((uint8_t *)nlh, nlh->nlmsg_len,
					     &len) == 0);
			CHECK(len == nlh->nlmsg_len && len <= FKV_WIRE_MAX);
			CHECK(nlh->nlmsg_type == FKV_WIRE_TYPE);
			if (!ctl_cluster_decode(nlh, &c))
				check_cluster(&c);
		}
		if (err) {
			CHECK(err == -EPROTO);
			dead = true;	/* the connection would be closed */
		}
	}
	fkv_wire_close(&w);
	close(sv[1]);
	return 0;
}

#ifdef FKV_FUZZ_STANDALONE
#include "fuzz_common.h"

/*
 * Replay the files named on the command line, or every file of
 * tests/fuzz/corpus/wire (make unit): one TAP line each.
 */
int main(int argc, char **argv)
{
	return fuzz_replay_main(argc, argv, "tests/fuzz/corpus/wire",
				LLVMFuzzerTestOneInput);
}
#endif
