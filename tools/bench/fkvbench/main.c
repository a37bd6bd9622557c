// SPDX-License-Identifier: GPL-2.0
/*
 * fkvbench - benchmark load generator for fluxonkv and a memcached peer.
 *
 *   fkvbench put    [opts]   serial bootstrap of --keys values
 *   fkvbench get    [opts]   warmup + fixed window of Zipf gets
 *   fkvbench trace  [opts]   the keys of a get run's counted ops (Belady)
 *   fkvbench memcpy [opts]   single-thread memcpy bandwidth of --size
 *   fkvbench loopback [opts] TCP loopback request/response bandwidth of --size
 *   fkvbench fill   [opts]   segment fill factor under a 1..--size MiB put mix
 *   fkvbench floor  [opts]   per-call costs against the no-op ioctl and memcpy
 *   fkvbench batch  [opts]   batches of GET_INTO / GET + copy / PUT into host
 *                            buffers (the Mooncake adapter's C twin)
 *
 * Each prints one JSON line on stdout.  Exit status: 0; 1 on errors
 * (including any get error or content mismatch); 2 on usage errors.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: fkvbench put|get|trace|memcpy|loopback|fill|floor|batch [options]\n"
"  --backend B      fluxonkv (default) | memcached\n"
"  --server H:P     memcached address (default 127.0.0.1:11211; /path: UNIX)\n"
"  --keys N         dataset keys (default 320)\n"
"  --size BYTES     payload size (default 1 MiB - 128)\n"
"  --zipf S         Zipf exponent (default 0.99)\n"
"  --seed X         key-sequence seed (default 1)\n"
"  --rank-map M     shuffle (default: popularity independent of put order)\n"
"                   | identity (rank r is key r - 1)\n"
"  --pattern P      zipf (default) | scan: op i of worker w reads key\n"
"                   (i * workers + w) mod keys, a cyclic scan in put order\n"
"                   that a DRAM tier smaller than the data cannot hold\n"
"  --prefix P       key prefix (default \"fkvbench-\")\n"
"  --put-rate MIB   put: bootstrap rate limit in MiB/s (default 0: none)\n"
"  --workers N      get: concurrent workers (default 1)\n"
"  --procs          get: workers are processes (default threads)\n"
"  --qd N           get: each worker keeps N gets in flight through an\n"
"                   io_uring ring (fluxonkv; default: one synchronous get)\n"
"  --ring-batch N   get: each worker sends its gets through an io_uring\n"
"                   ring as batches of N, one command each, one at a time\n"
"  --mode M         get: holder (default) | bytes\n"
"  --warmup S       get: uncounted seconds first (default 1)\n"
"  --window S       get: measured seconds (default 5)\n"
"  --disk NAME      get: /proc/diskstats device sampled at the window edges\n"
"  --ranges R       trace: first:count per worker, comma separated;\n"
"                   floor: run only the case named R (for profiling)\n"
"  --seconds S      memcpy, loopback, fill, floor: duration (default 2)\n"
"                   (fill: puts of 1 MiB..--size to --keys keys, counted\n"
"                   once the segment is full; --warmup caps that in minutes)\n"
"  --batch N        batch: keys a call (default 16; keys (c*N+i) mod --keys)\n"
"  --pieces P       batch: buffers a key (default 1: GET_INTO; more: GET,\n"
"                   memcpy of each piece, RELEASE -- or a gathered PUT)\n"
"  --op O           batch: get (default) | put (needs --keys = --batch)\n"
"  --min-calls N    batch: the window lasts until N calls were counted\n"
"  --copy C         batch, --pieces > 1: memcpy (default) | vm: as the\n"
"                   Python adapter copies: one checked process_vm_writev a\n"
"                   key (get), a gather put, FLUXONKV_OP_PUT_IOV (put)\n"
"  --serve          batch: turns from stdin (N: N calls, their ns printed)\n"
"  --label JSON     members added to the output object, e.g. '\"ssd\":\"on\"'\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "backend", 1, NULL, 'b' }, { "server", 1, NULL, 'S' },
		{ "keys", 1, NULL, 'k' }, { "size", 1, NULL, 's' },
		{ "zipf", 1, NULL, 'z' }, { "seed", 1, NULL, 'x' },
		{ "rank-map", 1, NULL, 'r' }, { "prefix", 1, NULL, 'P' },
		{ "put-rate", 1, NULL, 'R' }, { "workers", 1, NULL, 'w' },
		{ "procs", 0, NULL, 'p' }, { "mode", 1, NULL, 'm' },
		{ "warmup", 1, NULL, 'W' }, { "window", 1, NULL, 'T' },
		{ "disk", 1, NULL, 'd' }, { "ranges", 1, NULL, 'g' },
		{ "seconds", 1, NULL, 'e' }, { "label", 1, NULL, 'l' },
		{ "pattern", 1, NULL, 'A' }, { "qd", 1, NULL, 'q' },
		{ "ring-batch", 1, NULL, 'G' },
		{ "batch", 1, NULL, 'B' }, { "pieces", 1, NULL, 'N' },
		{ "op", 1, NULL, 'O' }, { "min-calls", 1, NULL, 'C' },
		{ "copy", 1, NULL, 'Y' }, { "serve", 0, NULL, 'V' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct bench_opts o = {
		.backend = "fluxonkv", .server = "127.0.0.1:11211", .keys = 320,
		.size = (1 << 20) - 128, .zipf = 0.99, .seed = 1, .shuffle = true,
		.prefix = "fkvbench-", .workers = 1, .warmup_s = 1, .window_s = 5,
		.seconds = 2, .batch = 16, .pieces = 1,
	};
	const struct bench_backend *be;
	const char *cmd;
	int c, err;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'b': o.backend = optarg; break;
		case 'S': o.server = optarg; break;
		case 'k': o.keys = strtoul(optarg, NULL, 0); break;
		case 's': o.size = strtoull(optarg, NULL, 0); break;
		case 'z': o.zipf = strtod(optarg, NULL); break;
		case 'x': o.seed = strtoull(optarg, NULL, 0); break;
		case 'P': o.prefix = optarg; break;
		case 'R': o.put_rate_mib = strtod(optarg, NULL); break;
		case 'w': o.workers = strtoul(optarg, NULL, 0); break;
		case 'p': o.procs = true; break;
		case 'q': o.qd = strtoul(optarg, NULL, 0); break;
		case 'G': o.ring_batch = strtoul(optarg, NULL, 0); break;
		case 'W': o.warmup_s = strtod(optarg, NULL); break;
		case 'T': o.window_s = strtod(optarg, NULL); break;
		case 'd': o.disk = optarg; break;
		case 'g': o.ranges = optarg; break;
		case 'e': o.seconds = strtod(optarg, NULL); break;
		case 'l': o.label = optarg; break;
		case 'B': o.batch = strtoul(optarg, NULL, 0); break;
		case 'N': o.pieces = strtoul(optarg, NULL, 0); break;
		case 'C': o.min_calls = strtoul(optarg, NULL, 0); break;
		case 'V': o.serve = true; break;
		case 'Y':
			if (!strcmp(optarg, "vm"))
				o.vm_copy = true;
			else if (strcmp(optarg, "memcpy"))
				goto bad;
			break;
		case 'O':
			if (!strcmp(optarg, "put"))
				o.batch_put = true;
			else if (strcmp(optarg, "get"))
				goto bad;
			break;
		case 'r':
			if (!strcmp(optarg, "identity"))
				o.shuffle = false;
			else if (strcmp(optarg, "shuffle"))
				goto bad;
			break;
		case 'A':
			if (!strcmp(optarg, "scan"))
				o.scan = true;
			else if (strcmp(optarg, "zipf"))
				goto bad;
			break;
		case 'm':
			if (!strcmp(optarg, "bytes"))
				o.bytes_mode = true;
			else if (strcmp(optarg, "holder"))
				goto bad;
			break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (optind != argc || !o.keys || o.keys > (1ul << 31) || o.size < 16 ||
	    o.window_s <= 0 || o.warmup_s < 0 || o.seconds <= 0 ||
	    strlen(o.prefix) > BENCH_KEY_MAX - 24)
		goto bad;
	if (!strcmp(o.backend, "fluxonkv"))
		be = &bench_backend_fluxonkv;
	else if (!strcmp(o.backend, "memcached"))
		be = &bench_backend_memcached;
	else
		goto bad;

	signal(SIGPIPE, SIG_IGN);	/* a dead server is an error, not a kill */
	if (!strcmp(cmd, "put"))
		err = bench_run_put(&o, be);
	else if (!strcmp(cmd, "get"))
		err = bench_run_get(&o, be);
	else if (!strcmp(cmd, "trace"))
		err = bench_run_trace(&o);
	else if (!strcmp(cmd, "memcpy"))
		err = bench_run_memcpy(&o);
	else if (!strcmp(cmd, "loopback"))
		err = bench_run_loopback(&o);
	else if (!strcmp(cmd, "fill"))
		err = bench_run_fill(&o, be);
	else if (!strcmp(cmd, "floor"))
		err = bench_run_floor(&o);
	else if (!strcmp(cmd, "batch"))
		err = bench_run_batch(&o);
	else
		goto bad;
	if (err == -EINVAL)
		goto bad;
	if (err)
		fprintf(stderr, "fkvbench %s: %s\n", cmd, strerror(-err));
	return err ? 1 : 0;
bad:
	usage(stderr);
	return 2;
}
