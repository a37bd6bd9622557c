// SPDX-License-Identifier: GPL-2.0
/*
 * test_async - GET_INTO, FLUXONKV_IOC_BATCH and io_uring (IORING_OP_URING_CMD)
 * end to end: fluxonkv.ko + fluxond + libfluxonkv (fkv_get_into, fkv_batch,
 * fkv_ring_*) and raw liburing where the library would hide the case.
 *
 * Values are patterns of (key, length, salt) checked byte for byte.  The
 * asynchronous cases stop fluxond (SIGSTOP) so that a command has to wait,
 * and show that the submitter does not: the command is still outstanding
 * after the submit returned, and completes once fluxond runs again.  Every
 * test ends with nothing held and the segment back where it started.
 */
#include <inttypes.h>
#include <liburing.h>
#include <sys/mman.h>

#include <fluxonkv.h>

#include "fkv_env.h"
#include "fkv_kv.h"

/* Long enough that a stopped daemon never times a request out here. */
#define ASYNC_PARAMS	"segment_mb=64 request_timeout_ms=60000"

/*
 * The cases where a put has to wait for a stopped daemon run it with
 * --put-via-master (PUT_START / PUT_DONE); by default the module
 * publishes a put itself and it needs no daemon unless room is short.
 */
static uint64_t setup_puts_via_master(void)
{
	uint64_t base;

	fkv_env_daemon_arg = "--put-via-master";
	base = setup(ASYNC_PARAMS);
	fkv_env_daemon_arg = NULL;
	return base;
}

static void stop_daemon(void)
{
	pid_t d = (pid_t)fkv_sysfs("daemon_pid");

	FKV_ASSERT(d > 0, "no daemon");
	FKV_ASSERT_EQ(kill(d, SIGSTOP), 0);
}

static void cont_daemon(void)
{
	pid_t d = (pid_t)fkv_sysfs("daemon_pid");

	FKV_ASSERT(d > 0, "no daemon");
	FKV_ASSERT_EQ(kill(d, SIGCONT), 0);
}

/*
 * Puts nobody reaps any more (their ring or process is gone) end when
 * their worker does: wait until no PUT_START or PUT_DONE has been pending
 * for 300 ms in a row.
 */
static void wait_puts_settled(void)
{
	int64_t end = fkv_now_ms() + 20000;
	int quiet = 0;

	while (quiet < 30) {
		int a = fkv_debugfs_pending(FLUXONKV_CMD_PUT_START);
		int b = fkv_debugfs_pending(FLUXONKV_CMD_PUT_DONE);

		FKV_ASSERT(a >= 0 && b >= 0, "no debugfs pending");
		quiet = a || b ? 0 : quiet + 1;
		FKV_ASSERT(fkv_now_ms() < end, "puts still pending: %d PUT_START,"
			   " %d PUT_DONE", a, b);
		fkv_msleep(10);
	}
}

FKV_TEST(get_into_copies_the_value_and_leaves_no_holder)
{
	const size_t len = 5 * FKV_MIB + 333;	/* several copy pieces */
	uint64_t base, put_id, gets;
	struct fkv_lookup l;
	struct fkv *kv;
	uint8_t *buf;
	int fd;

	base = setup(ASYNC_PARAMS);
	kv = kv_open();
	put_id = put_pattern(kv, "gi", len, 7);
	buf = malloc(len + 4096);
	FKV_ASSERT(buf);

	gets = fkv_sysfs("gets");
	memset(buf, 0xa5, len + 4096);
	FKV_ASSERT_EQ(fkv_get_into(kv, "gi", 2, buf, len + 4096, &l), 0);
	FKV_ASSERT_EQ(l.len, len);
	FKV_ASSERT_EQ(l.put_id, put_id);
	FKV_ASSERT_EQ(l.source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_PATTERN(buf, len, "gi", 2, 7);
	FKV_ASSERT_EQ(buf[len], 0xa5);	/* nothing past the value */
	FKV_ASSERT_EQ(fkv_sysfs("gets"), gets + 1);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	/* exactly the value's size, then one byte short: EMSGSIZE + len */
	FKV_ASSERT_EQ(fkv_get_into(kv, "gi", 2, buf, len, &l), 0);
	memset(buf, 0, 16);
	FKV_ASSERT_EQ(fkv_get_into(kv, "gi", 2, buf, len - 1, &l), -EMSGSIZE);
	FKV_ASSERT_EQ(l.len, len);
	FKV_ASSERT_EQ(buf[0], 0);	/* nothing copied */
	FKV_ASSERT_EQ(fkv_get_into(kv, "none", 4, buf, len, &l), -ENOENT);
	FKV_ASSERT_EQ(fkv_get_into(kv, "gi", 2, buf, 0, &l), -EINVAL);

	/* the raw ioctl: bad buffer, reserved fields, outputs set on input */
	fd = fkv_dev_open_ro();	/* a read-only consumer may copy out */
	FKV_ASSERT(fd >= 0);
	{
		struct fluxonkv_get_into gi = {
			.size = sizeof(gi), .key_len = 2,
			.key_ptr = (uintptr_t)"gi", .buf_ptr = (uintptr_t)buf,
			.buf_len = len,
		};
		void *ro = mmap(NULL, len, PROT_READ,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_GET_INTO, &gi), 0);
		FKV_ASSERT_EQ(gi.len, len);
		FKV_ASSERT_PATTERN(buf, len, "gi", 2, 7);

		gi.len = gi.put_id = gi.source = 0;
		gi.reserved[1] = 1;
		FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_GET_INTO, &gi), EINVAL);
		gi.reserved[1] = 0;
		gi.put_id = 1;
		FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_GET_INTO, &gi), EINVAL);
		gi.put_id = 0;
		gi.flags = 1;
		FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_GET_INTO, &gi), EINVAL);
		gi.flags = 0;
		/* a kernel address, then a read-only mapping */
		gi.buf_ptr = 0xffff888000000000ULL;
		FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_GET_INTO, &gi), EFAULT);
		FKV_ASSERT(ro != MAP_FAILED);
		gi.buf_ptr = (uintptr_t)ro;
		FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_GET_INTO, &gi), EFAULT);
		munmap(ro, len);
	}
	close(fd);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	free(buf);
	delete_key(kv, "gi");
	fkv_close(kv);
	teardown(base);
}

/* A GET / RELEASE / ... op of fkv_batch. */
static struct fkv_op op_key(unsigned int opcode, const char *key)
{
	struct fkv_op op = { .opcode = opcode, .key = key,
			     .key_len = strlen(key) };

	return op;
}

FKV_TEST(batch_reports_each_operation_and_mixes_hits_misses_and_errors)
{
	uint8_t small[100], *val = pattern("b-new", 3000, 4);
	uint64_t base, id_a, id_b, gets;
	struct fkv_op ops[10];
	struct fkv *kv;
	unsigned int i;

	base = setup(ASYNC_PARAMS);
	kv = kv_open();
	id_a = put_pattern(kv, "b-a", 70000, 1);
	id_b = put_pattern(kv, "b-b", 4096, 2);
	put_pattern(kv, "b-del", 100, 3);
	gets = fkv_sysfs("gets");

	ops[0] = op_key(FLUXONKV_OP_GET, "b-a");
	ops[1] = op_key(FLUXONKV_OP_GET, "b-missing");
	ops[2] = op_key(FLUXONKV_OP_LOOKUP, "b-b");
	ops[3] = op_key(FLUXONKV_OP_GET_INTO, "b-b");
	ops[3].buf = malloc(4096);
	ops[3].buf_len = 4096;
	ops[4] = op_key(FLUXONKV_OP_GET_INTO, "b-a");
	ops[4].buf = small;
	ops[4].buf_len = sizeof(small);
	ops[5] = (struct fkv_op){ .opcode = FLUXONKV_OP_RELEASE,
				  .holder = { .id = 12345, .data = small } };
	ops[6] = op_key(FLUXONKV_OP_PUT, "b-new");
	ops[6].value = val;
	ops[6].buf_len = 3000;
	ops[7] = op_key(FLUXONKV_OP_DELETE, "b-del");
	ops[8] = op_key(99, "b-a");
	ops[9] = op_key(FLUXONKV_OP_GET, "b-b");
	ops[9].key_len = 0;
	FKV_ASSERT_EQ(fkv_batch(kv, ops, 10), 0);

	FKV_ASSERT_EQ(ops[0].result, 0);
	FKV_ASSERT_EQ(ops[0].holder.len, 70000);
	FKV_ASSERT_EQ(ops[0].holder.put_id, id_a);
	FKV_ASSERT_PATTERN(ops[0].holder.data, 70000, "b-a", 3, 1);
	FKV_ASSERT_EQ(ops[1].result, -ENOENT);
	FKV_ASSERT_EQ(ops[2].result, 0);
	FKV_ASSERT_EQ(ops[2].len, 4096);
	FKV_ASSERT_EQ(ops[2].put_id, id_b);
	FKV_ASSERT_EQ(ops[3].result, 0);
	FKV_ASSERT_PATTERN(ops[3].buf, 4096, "b-b", 3, 2);
	FKV_ASSERT_EQ(ops[4].result, -EMSGSIZE);
	FKV_ASSERT_EQ(ops[4].len, 70000);
	FKV_ASSERT_EQ(ops[5].result, -ENOENT);
	FKV_ASSERT_EQ(ops[6].result, 0);
	FKV_ASSERT_GT(ops[6].put_id, id_b);
	FKV_ASSERT_EQ(ops[7].result, 0);
	FKV_ASSERT_EQ(ops[8].result, -EINVAL);
	FKV_ASSERT_EQ(ops[9].result, -EINVAL);
	/* GET, GET miss, 2 x GET_INTO: four gets; LOOKUP counts none */
	FKV_ASSERT_EQ(fkv_sysfs("gets"), gets + 4);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	lookup_check(kv, "b-new", 3000, ops[6].put_id);
	lookup_miss(kv, "b-del");

	/* release the one holder by batch: the holder is zeroed */
	ops[1] = (struct fkv_op){ .opcode = FLUXONKV_OP_RELEASE,
				  .holder = ops[0].holder };
	FKV_ASSERT_EQ(fkv_batch(kv, &ops[1], 1), 0);
	FKV_ASSERT_EQ(ops[1].result, 0);
	FKV_ASSERT(!ops[1].holder.data, "released holder not zeroed");
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	/* more than one kernel batch's worth through the library */
	{
		struct fkv_op many[200];

		for (i = 0; i < 200; i++)
			many[i] = op_key(FLUXONKV_OP_GET, i % 2 ? "b-a" : "b-b");
		FKV_ASSERT_EQ(fkv_batch(kv, many, 200), 0);
		for (i = 0; i < 200; i++) {
			FKV_ASSERT_EQ(many[i].result, 0);
			FKV_ASSERT_EQ(many[i].holder.len, i % 2 ? 70000 : 4096);
		}
		FKV_ASSERT_EQ(fkv_sysfs("holders"), 200);
		for (i = 0; i < 200; i++)
			many[i] = (struct fkv_op){ .opcode = FLUXONKV_OP_RELEASE,
						   .holder = many[i].holder };
		FKV_ASSERT_EQ(fkv_batch(kv, many, 200), 0);
		for (i = 0; i < 200; i++)
			FKV_ASSERT_EQ(many[i].result, 0);
		FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	}
	free(ops[3].buf);
	free(val);
	delete_key(kv, "b-a");
	delete_key(kv, "b-b");
	delete_key(kv, "b-new");
	fkv_close(kv);
	teardown(base);
}

/* A one-op raw batch of GET "b-a". */
static void raw_get_op(struct fluxonkv_op *op)
{
	memset(op, 0, sizeof(*op));
	op->opcode = FLUXONKV_OP_GET;
	op->key_len = 3;
	op->key_ptr = (uintptr_t)"b-a";
}

FKV_TEST(batch_header_is_validated_and_a_fault_stops_it_without_a_leak)
{
	struct fluxonkv_batch b;
	struct fluxonkv_op *ops;
	uint64_t base;
	struct fkv *kv;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *map;
	int fd, i;

	base = setup(ASYNC_PARAMS);
	kv = kv_open();
	put_pattern(kv, "b-a", 4096, 1);
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);

	/* two pages, the second made inaccessible below */
	map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(map != MAP_FAILED);
	ops = (struct fluxonkv_op *)map;
	for (i = 0; i < 4; i++)
		raw_get_op(&ops[i]);

#define BATCH_INIT(n) do {						\
		memset(&b, 0, sizeof(b));				\
		b.size = sizeof(b);					\
		b.count = (n);						\
		b.ops_ptr = (uintptr_t)ops;				\
		b.op_size = sizeof(*ops);				\
	} while (0)

	BATCH_INIT(0);
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, &b), EINVAL);
	BATCH_INIT(FLUXONKV_BATCH_MAX + 1);
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, &b), EINVAL);
	BATCH_INIT(1);
	b.op_size = FLUXONKV_OP_SIZE_VER0 - 8;
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, &b), EINVAL);
	BATCH_INIT(1);
	b.flags = FLUXONKV_BATCH_F_RESUME << 1;	/* an unknown flag */
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, &b), EINVAL);
	BATCH_INIT(1);
	b.done = 2;
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, &b), EINVAL);
	BATCH_INIT(1);
	b.reserved[0] = 1;
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, &b), EINVAL);
	BATCH_INIT(1);
	b.ops_ptr = 0xffff888000000000ULL;
	FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, &b), EFAULT);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	/* done = 1: op 0 is skipped, op 1 runs */
	BATCH_INIT(2);
	b.done = 1;
	FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_BATCH, &b), 0);
	FKV_ASSERT_EQ(b.done, 2);
	FKV_ASSERT_EQ(ops[0].holder_id, 0);
	FKV_ASSERT_EQ(ops[1].result, 0);
	FKV_ASSERT_NE(ops[1].holder_id, 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
	{
		struct fluxonkv_release r = { .size = sizeof(r),
					      .holder_id = ops[1].holder_id };

		FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_RELEASE, &r), 0);
	}
	raw_get_op(&ops[1]);

	/* a larger op_size: a nonzero tail is that op's E2BIG, not the batch's */
	{
		unsigned char wide[2][FLUXONKV_OP_SIZE_VER0 + 16] = { 0 };

		raw_get_op((struct fluxonkv_op *)wide[0]);
		raw_get_op((struct fluxonkv_op *)wide[1]);
		wide[1][FLUXONKV_OP_SIZE_VER0 + 3] = 1;
		BATCH_INIT(2);
		b.ops_ptr = (uintptr_t)wide;
		b.op_size = sizeof(wide[0]);
		FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_BATCH, &b), 0);
		FKV_ASSERT_EQ(((struct fluxonkv_op *)wide[0])->result, 0);
		FKV_ASSERT_EQ(((struct fluxonkv_op *)wide[1])->result, -E2BIG);
		/* only its result was written: the rest is the caller's */
		FKV_ASSERT_EQ(((struct fluxonkv_op *)wide[1])->holder_id, 0);
		FKV_ASSERT_EQ(((struct fluxonkv_op *)wide[1])->opcode,
			      FLUXONKV_OP_GET);
		FKV_ASSERT_EQ(wide[1][FLUXONKV_OP_SIZE_VER0 + 3], 1);
		FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);
		{
			struct fluxonkv_release r = {
				.size = sizeof(r),
				.holder_id = ((struct fluxonkv_op *)wide[0])->holder_id };

			FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_RELEASE, &r), 0);
		}
	}

	/*
	 * Ops that straddle into a read-only page: the first fits, the one
	 * whose result cannot be written back is EFAULT, its holder is given
	 * back, and done says how far it got.
	 */
	{
		struct fluxonkv_op *edge =
			(struct fluxonkv_op *)(map + page) - 1;

		raw_get_op(edge);
		memcpy(map + page, edge, sizeof(*edge));	/* op 2 */
		FKV_ASSERT_EQ(mprotect(map + page, page, PROT_READ), 0);
		BATCH_INIT(2);
		b.ops_ptr = (uintptr_t)edge;
		FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, &b), EFAULT);
		FKV_ASSERT_EQ(b.done, 1);
		FKV_ASSERT_EQ(edge->result, 0);
		FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);	/* op 0's only */
		{
			struct fluxonkv_release r = { .size = sizeof(r),
						      .holder_id = edge->holder_id };

			FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_RELEASE, &r), 0);
		}
	}
	/*
	 * A header that cannot be written back (read-only): EFAULT before
	 * any entry ran, so no holder and no result to lose.
	 */
	{
		struct fluxonkv_batch *ro = (struct fluxonkv_batch *)(map + page);

		FKV_ASSERT_EQ(mprotect(map + page, page, PROT_READ | PROT_WRITE),
			      0);
		raw_get_op(&ops[0]);
		ops[0].result = 12345;
		BATCH_INIT(1);
		memcpy(ro, &b, sizeof(b));
		FKV_ASSERT_EQ(mprotect(map + page, page, PROT_READ), 0);
		FKV_ASSERT_ERRNO(ioctl(fd, FLUXONKV_IOC_BATCH, ro), EFAULT);
		FKV_ASSERT_EQ(ops[0].result, 12345);
		FKV_ASSERT_EQ(ops[0].holder_id, 0);
		FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	}
#undef BATCH_INIT
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	munmap(map, 2 * page);
	close(fd);
	delete_key(kv, "b-a");
	fkv_close(kv);
	teardown(base);
}

/* Reap one completion of @r, waiting. */
static struct fkv_completion reap_one(struct fkv_ring *r)
{
	struct fkv_completion c;

	FKV_ASSERT_EQ(fkv_ring_reap(r, &c, 1, 1), 1);
	return c;
}

FKV_TEST(ring_runs_many_operations_in_flight)
{
	struct fkv_completion c[64];
	unsigned int i, done = 0, hits = 0, misses = 0;
	uint64_t base, put_id = 0;
	struct fkv_ring *r;
	struct fkv *kv;
	char key[32];
	int n;

	base = setup(ASYNC_PARAMS);
	kv = kv_open();
	for (i = 0; i < 32; i++) {
		snprintf(key, sizeof(key), "r-%02u", i);
		put_pattern(kv, key, 8192 + i, i);
	}
	FKV_ASSERT_EQ(fkv_ring_open(kv, 64, &r), 0);
	/* 256 gets, hits and misses, 64 in flight at most */
	for (i = 0; i < 256 || fkv_ring_inflight(r); ) {
		while (i < 256 && fkv_ring_inflight(r) < 64) {
			struct fkv_op op = { .opcode = FLUXONKV_OP_GET };

			snprintf(key, sizeof(key), "r-%02u", i % 40);
			op.key = key;
			op.key_len = strlen(key);
			FKV_ASSERT_EQ(fkv_ring_prep(r, &op, i % 40), 0);
			i++;
		}
		FKV_ASSERT_GT(fkv_ring_submit(r), -1);
		n = fkv_ring_reap(r, c, 64, 1);
		FKV_ASSERT_GT(n, 0);
		while (n--) {
			struct fkv_completion *e = &c[n];
			unsigned int k = (unsigned int)e->user_data;

			done++;
			if (k >= 32) {
				FKV_ASSERT_EQ(e->op.result, -ENOENT);
				misses++;
				continue;
			}
			FKV_ASSERT_EQ(e->op.result, 0);
			snprintf(key, sizeof(key), "r-%02u", k);
			FKV_ASSERT_EQ(e->op.holder.len, 8192 + k);
			FKV_ASSERT_PATTERN(e->op.holder.data, 8192 + k, key,
					   strlen(key), k);
			hits++;
			release(kv, &e->op.holder);
		}
	}
	FKV_ASSERT_EQ(done, 256);
	FKV_ASSERT_EQ(misses, 256 / 40 * 8 + 0);	/* i % 40 >= 32 */
	FKV_ASSERT_EQ(hits + misses, 256);

	/* GET_INTO, LOOKUP, PUT, DELETE, RELEASE through the ring */
	{
		uint8_t *buf = malloc(9000), *val = pattern("r-put", 5000, 9);
		struct fkv_op ops[4] = {
			op_key(FLUXONKV_OP_GET_INTO, "r-05"),
			op_key(FLUXONKV_OP_LOOKUP, "r-06"),
			op_key(FLUXONKV_OP_PUT, "r-put"),
			op_key(FLUXONKV_OP_DELETE, "r-07"),
		};

		ops[0].buf = buf;
		ops[0].buf_len = 9000;
		ops[2].value = val;
		ops[2].buf_len = 5000;
		for (i = 0; i < 4; i++)
			FKV_ASSERT_EQ(fkv_ring_prep(r, &ops[i], i), 0);
		FKV_ASSERT_EQ(fkv_ring_submit(r), 4);
		for (i = 0; i < 4; i++) {
			struct fkv_completion e = reap_one(r);

			FKV_ASSERT(e.op.result == 0, "op %" PRIu64 ": %s",
				   e.user_data, fkv_strerror(e.op.result));
			if (e.user_data == 0) {
				FKV_ASSERT_EQ(e.op.len, 8192 + 5);
				FKV_ASSERT_PATTERN(buf, 8192 + 5, "r-05", 4, 5);
			} else if (e.user_data == 1) {
				FKV_ASSERT_EQ(e.op.len, 8192 + 6);
			} else if (e.user_data == 2) {
				FKV_ASSERT_GT(e.op.put_id, 0);
				put_id = e.op.put_id;
			}
		}
		lookup_check(kv, "r-put", 5000, put_id);
		lookup_miss(kv, "r-07");
		free(buf);
		free(val);
	}
	/*
	 * GET_INTO of a value above the inline copy limit (64 KiB: copied
	 * from a worker), and into a buffer too small for it (answered at
	 * submission: EMSGSIZE with the length)
	 */
	{
		uint8_t *buf = malloc(300000);
		struct fkv_op ops[2] = {
			op_key(FLUXONKV_OP_GET_INTO, "r-big"),
			op_key(FLUXONKV_OP_GET_INTO, "r-big"),
		};

		FKV_ASSERT(buf);
		put_pattern(kv, "r-big", 200000, 11);
		ops[0].buf = buf;
		ops[0].buf_len = 300000;
		ops[1].buf = buf + 250000;
		ops[1].buf_len = 1000;
		for (i = 0; i < 2; i++)
			FKV_ASSERT_EQ(fkv_ring_prep(r, &ops[i], 10 + i), 0);
		FKV_ASSERT_EQ(fkv_ring_submit(r), 2);
		for (i = 0; i < 2; i++) {
			struct fkv_completion e = reap_one(r);

			FKV_ASSERT_EQ(e.op.len, 200000);
			if (e.user_data == 10) {
				FKV_ASSERT_EQ(e.op.result, 0);
				FKV_ASSERT_PATTERN(buf, 200000, "r-big", 5, 11);
			} else {
				FKV_ASSERT_EQ(e.op.result, -EMSGSIZE);
			}
		}
		delete_key(kv, "r-big");
		free(buf);
	}
	fkv_ring_close(r);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	for (i = 0; i < 32; i++) {
		snprintf(key, sizeof(key), "r-%02u", i);
		if (i != 7)
			delete_key(kv, key);
	}
	delete_key(kv, "r-put");
	fkv_close(kv);
	teardown(base);
}

/*
 * fkv_ring_prep_batch(): many operations as one ring command, one
 * completion; each operation's outputs and result land in the caller's
 * array.  A bad operation queues nothing; a ring closed with a batch of
 * GETs unreaped gives their holders back.
 */
FKV_TEST(ring_batch_is_one_command_with_a_result_per_operation)
{
	struct fkv_op ops[18], bad[2];
	struct fkv_completion e;
	struct fkv_ring *r;
	uint64_t base;
	struct fkv *kv;
	char keys[16][16];
	unsigned int i;

	base = setup(ASYNC_PARAMS);
	kv = kv_open();
	for (i = 0; i < 16; i++) {
		snprintf(keys[i], sizeof(keys[i]), "rb-%02u", i);
		put_pattern(kv, keys[i], 4096 + i, i);
	}
	FKV_ASSERT_EQ(fkv_ring_open(kv, 4, &r), 0);
	for (i = 0; i < 16; i++)
		ops[i] = op_key(FLUXONKV_OP_GET, keys[i]);
	ops[16] = op_key(FLUXONKV_OP_GET, "rb-none");
	ops[17] = op_key(FLUXONKV_OP_LOOKUP, "rb-03");

	FKV_ASSERT_EQ(fkv_ring_prep_batch(r, ops, 0, 1), -EINVAL);
	FKV_ASSERT_EQ(fkv_ring_prep_batch(r, ops, FLUXONKV_BATCH_MAX + 1, 1),
		      -EINVAL);
	bad[0] = op_key(FLUXONKV_OP_GET, "rb-00");
	bad[1] = op_key(FLUXONKV_OP_GET, "rb-01");
	bad[1].key_len = 0;
	FKV_ASSERT(fkv_ring_prep_batch(r, bad, 2, 1) < 0,
		   "a batch with an empty key was queued");
	FKV_ASSERT_EQ(fkv_ring_inflight(r), 0);

	FKV_ASSERT_EQ(fkv_ring_prep_batch(r, ops, 18, 77), 0);
	FKV_ASSERT_EQ(fkv_ring_inflight(r), 1);
	FKV_ASSERT_EQ(fkv_ring_submit(r), 1);
	e = reap_one(r);
	FKV_ASSERT_EQ(e.user_data, 77);
	FKV_ASSERT(e.ops == ops && e.nops == 18, "the caller's ops come back");
	FKV_ASSERT_EQ(e.op.result, 0);
	for (i = 0; i < 16; i++) {
		FKV_ASSERT_EQ(ops[i].result, 0);
		FKV_ASSERT_EQ(ops[i].holder.len, 4096 + i);
		FKV_ASSERT_PATTERN(ops[i].holder.data, 4096 + i, keys[i],
				   strlen(keys[i]), i);
	}
	FKV_ASSERT_EQ(ops[16].result, -ENOENT);
	FKV_ASSERT_EQ(ops[17].result, 0);
	FKV_ASSERT_EQ(ops[17].len, 4096 + 3);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 16);

	/* their releases: one more command */
	for (i = 0; i < 16; i++) {
		struct fkv_holder h = ops[i].holder;

		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].opcode = FLUXONKV_OP_RELEASE;
		ops[i].holder = h;
	}
	FKV_ASSERT_EQ(fkv_ring_prep_batch(r, ops, 16, 78), 0);
	e = reap_one(r);	/* submits what is queued */
	FKV_ASSERT_EQ(e.user_data, 78);
	FKV_ASSERT_EQ(e.nops, 16);
	for (i = 0; i < 16; i++)
		FKV_ASSERT_EQ(ops[i].result, 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	/* closed with a batch of GETs nobody reaped: no holder stays */
	for (i = 0; i < 16; i++)
		ops[i] = op_key(FLUXONKV_OP_GET, keys[i]);
	FKV_ASSERT_EQ(fkv_ring_prep_batch(r, ops, 16, 79), 0);
	FKV_ASSERT_EQ(fkv_ring_submit(r), 1);
	fkv_ring_close(r);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	for (i = 0; i < 16; i++)
		delete_key(kv, keys[i]);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(ring_submit_does_not_wait_for_a_stopped_daemon)
{
	uint8_t *val = pattern("s-put", 70000, 5);
	struct fkv_completion c[4];
	struct fkv_holder h;
	struct fkv_ring *r;
	uint64_t base;
	struct fkv *kv;
	int i;

	base = setup_puts_via_master();
	kv = kv_open();
	put_pattern(kv, "s-hit", 4096, 1);
	FKV_ASSERT_EQ(fkv_ring_open(kv, 8, &r), 0);
	stop_daemon();
	{
		struct fkv_op put = op_key(FLUXONKV_OP_PUT, "s-put");
		struct fkv_op get = op_key(FLUXONKV_OP_GET, "s-hit");

		put.value = val;
		put.buf_len = 70000;
		FKV_ASSERT_EQ(fkv_ring_prep(r, &put, 1), 0);
		FKV_ASSERT_EQ(fkv_ring_prep(r, &get, 2), 0);
		FKV_ASSERT_EQ(fkv_ring_submit(r), 2);
	}
	/* the DRAM hit completed during the submit; the put waits */
	FKV_ASSERT_EQ(fkv_ring_reap(r, c, 4, 0), 1);
	FKV_ASSERT_EQ(c[0].user_data, 2);
	FKV_ASSERT_EQ(c[0].op.result, 0);
	FKV_ASSERT_PATTERN(c[0].op.holder.data, 4096, "s-hit", 5, 1);
	release(kv, &c[0].op.holder);
	fkv_msleep(300);
	FKV_ASSERT_EQ(fkv_ring_reap(r, c, 4, 0), 0);
	FKV_ASSERT_EQ(fkv_ring_inflight(r), 1);
	cont_daemon();
	c[0] = reap_one(r);
	FKV_ASSERT_EQ(c[0].user_data, 1);
	FKV_ASSERT(c[0].op.result == 0, "put: %s",
		   fkv_strerror(c[0].op.result));
	FKV_ASSERT_EQ(fkv_get(kv, "s-put", 5, &h), 0);
	FKV_ASSERT_EQ(h.put_id, c[0].op.put_id);
	FKV_ASSERT_PATTERN(h.data, 70000, "s-put", 5, 5);
	release(kv, &h);
	for (i = 0; i < 2; i++)
		delete_key(kv, i ? "s-put" : "s-hit");
	fkv_ring_close(r);
	free(val);
	fkv_close(kv);
	teardown(base);
}

/*
 * With local puts (fluxond's default) a put needs no daemon while the
 * segment has room: submitted with fluxond stopped, it completes (from an
 * io-wq worker), its value is readable at once, and the master learns of
 * it from the PUT_LOCAL note once it runs again -- a delete right after
 * then finds it, as does every delete that follows its put at once.
 */
FKV_TEST(ring_put_completes_without_a_running_daemon_with_local_puts)
{
	uint8_t *val = pattern("l-put", 70000, 6);
	uint64_t base, local0, put_id;
	struct fkv_completion c[4];
	struct fkv_holder h;
	struct fkv_ring *r;
	struct fkv *kv;
	char key[32];
	int i;

	base = setup(ASYNC_PARAMS);
	kv = kv_open();
	local0 = fkv_sysfs("puts_local");
	FKV_ASSERT_EQ(fkv_ring_open(kv, 8, &r), 0);
	stop_daemon();
	{
		struct fkv_op put = op_key(FLUXONKV_OP_PUT, "l-put");

		put.value = val;
		put.buf_len = 70000;
		FKV_ASSERT_EQ(fkv_ring_prep(r, &put, 1), 0);
		FKV_ASSERT_EQ(fkv_ring_submit(r), 1);
	}
	c[0] = reap_one(r);
	FKV_ASSERT_EQ(c[0].user_data, 1);
	FKV_ASSERT(c[0].op.result == 0, "put: %s",
		   fkv_strerror(c[0].op.result));
	FKV_ASSERT_EQ(fkv_sysfs("puts_local"), local0 + 1);
	/* readable while the daemon is still stopped */
	FKV_ASSERT_EQ(fkv_get(kv, "l-put", 5, &h), 0);
	FKV_ASSERT_EQ(h.put_id, c[0].op.put_id);
	FKV_ASSERT_PATTERN(h.data, 70000, "l-put", 5, 6);
	release(kv, &h);
	cont_daemon();
	delete_key(kv, "l-put");
	FKV_ASSERT_EQ(fkv_get(kv, "l-put", 5, &h), -ENOENT);

	/* put then delete at once: the note always reaches the master first */
	for (i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "l-%d", i % 7);
		put_id = put_pattern(kv, key, 1 + (size_t)i * 97, i);
		FKV_ASSERT(put_id > 0);
		if (i % 3 == 2)
			delete_key(kv, key);
	}
	for (i = 0; i < 7; i++) {
		snprintf(key, sizeof(key), "l-%d", i);
		delete_any(kv, key);
		FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h), -ENOENT);
	}
	FKV_ASSERT_EQ(fkv_sysfs("puts_local"), local0 + 201);
	FKV_ASSERT_EQ(fkv_ring_reap(r, c, 4, 0), 0);
	fkv_ring_close(r);
	free(val);
	fkv_close(kv);
	teardown(base);
}

/*
 * A file description holds at most FLUXONKV_HOLDERS_MAX (65536) holders:
 * all of them are usable (a reserved xarray slot is not one of them), the
 * next get is EMFILE, and one release makes room for one more.  A root
 * O_RDWR session has no pin budget, so the holder cap is what stops it.
 */
#define HOLDERS_MAX	65536

FKV_TEST_TIMEOUT(a_session_holds_exactly_the_holder_cap, 300)
{
	struct fkv_op *ops = calloc(HOLDERS_MAX, sizeof(*ops));
	struct fkv_holder h;
	uint64_t base;
	struct fkv *kv;
	unsigned int i;

	FKV_ASSERT(ops);
	base = setup(ASYNC_PARAMS);
	kv = kv_open();
	put_pattern(kv, "cap", 4096, 3);
	for (i = 0; i < HOLDERS_MAX; i++)
		ops[i] = op_key(FLUXONKV_OP_GET, "cap");
	FKV_ASSERT_EQ(fkv_batch(kv, ops, HOLDERS_MAX), 0);
	for (i = 0; i < HOLDERS_MAX; i++)
		FKV_ASSERT(ops[i].result == 0, "get %u of %u: %s", i,
			   HOLDERS_MAX, fkv_strerror(ops[i].result));
	FKV_ASSERT_EQ(fkv_sysfs("holders"), HOLDERS_MAX);
	FKV_ASSERT_EQ(fkv_get(kv, "cap", 3, &h), -EMFILE);
	FKV_ASSERT_PATTERN(ops[HOLDERS_MAX - 1].holder.data, 4096, "cap", 3, 3);
	release(kv, &ops[7].holder);
	FKV_ASSERT_EQ(fkv_get(kv, "cap", 3, &ops[7].holder), 0);
	FKV_ASSERT_EQ(fkv_get(kv, "cap", 3, &h), -EMFILE);
	for (i = 0; i < HOLDERS_MAX; i++) {
		struct fkv_holder held = ops[i].holder;

		ops[i] = (struct fkv_op){ .opcode = FLUXONKV_OP_RELEASE,
					  .holder = held };
	}
	FKV_ASSERT_EQ(fkv_batch(kv, ops, HOLDERS_MAX), 0);
	for (i = 0; i < HOLDERS_MAX; i++)
		FKV_ASSERT(ops[i].result == 0, "release %u: %s", i,
			   fkv_strerror(ops[i].result));
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	delete_key(kv, "cap");
	free(ops);
	fkv_close(kv);
	teardown(base);
}

/* Raw liburing: a PUT of @key (@len bytes at @val) as a uring command. */
static void raw_put(struct io_uring *ring, int fd, struct fluxonkv_put *p,
		    const char *key, const void *val, size_t len, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct fluxonkv_uring_cmd cmd = { .arg = (uintptr_t)p };

	FKV_ASSERT(sqe);
	memset(p, 0, sizeof(*p));
	p->size = sizeof(*p);
	p->key_len = strlen(key);
	p->key_ptr = (uintptr_t)key;
	p->value_ptr = (uintptr_t)val;
	p->value_len = len;
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = FLUXONKV_IOC_PUT;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	io_uring_sqe_set_data64(sqe, tag);
}

FKV_TEST(uring_commands_are_checked_like_the_ioctls)
{
	struct fluxonkv_hold hold = { .size = sizeof(hold) };
	struct fluxonkv_get g;
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct fluxonkv_uring_cmd cmd;
	static const int want[] = { 0, -EINVAL, -EOPNOTSUPP, -EFAULT, -ENOTTY };
	uint64_t base;
	struct fkv *kv;
	int fd, i;

	base = setup(ASYNC_PARAMS);
	kv = kv_open();
	put_pattern(kv, "u-a", 4096, 1);
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(io_uring_queue_init(8, &ring, 0), 0);
	for (i = 0; i < 5; i++) {
		memset(&g, 0, sizeof(g));
		g.size = sizeof(g);
		g.key_len = 3;
		g.key_ptr = (uintptr_t)"u-a";
		cmd = (struct fluxonkv_uring_cmd){ .arg = (uintptr_t)&g };
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
		sqe->cmd_op = FLUXONKV_IOC_GET;
		if (i == 1)
			cmd.reserved = 1;		/* EINVAL */
		if (i == 2) {
			sqe->cmd_op = FLUXONKV_IOC_HOLD;	/* daemon only */
			cmd.arg = (uintptr_t)&hold;
		}
		if (i == 3)
			cmd.arg = 0xffff888000000000ULL;	/* EFAULT */
		if (i == 4)		/* a number the module does not know */
			sqe->cmd_op = _IOWR(FLUXONKV_IOC_MAGIC, 0x7e,
					    struct fluxonkv_get);
		memcpy(sqe->cmd, &cmd, sizeof(cmd));
		FKV_ASSERT_EQ(io_uring_submit(&ring), 1);
		FKV_ASSERT_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
		FKV_ASSERT_EQ(cqe->res, want[i]);
		io_uring_cqe_seen(&ring, cqe);
		if (i == 0) {
			struct fluxonkv_release r = { .size = sizeof(r),
						      .holder_id = g.holder_id };

			FKV_ASSERT_EQ(g.len, 4096);
			FKV_ASSERT_EQ(g.source, FLUXONKV_SOURCE_MEMORY);
			FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_RELEASE, &r), 0);
		}
	}
	io_uring_queue_exit(&ring);
	close(fd);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);
	delete_key(kv, "u-a");
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(ring_closed_or_cancelled_with_commands_outstanding_leaks_nothing)
{
	uint8_t *val = pattern("c-put", 200000, 3);
	struct fluxonkv_put p[4];
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	struct fkv_holder h;
	uint64_t base;
	struct fkv *kv;
	int fd, i, ret, got, seen_put = 0, seen_cancel = 0;
	char key[4][16];

	base = setup_puts_via_master();
	kv = kv_open();
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);

	/* 1. cancel an outstanding put: it ends either way, consistently */
	FKV_ASSERT_EQ(io_uring_queue_init(8, &ring, 0), 0);
	stop_daemon();
	raw_put(&ring, fd, &p[0], "c-put", val, 200000, 1);
	FKV_ASSERT_EQ(io_uring_submit(&ring), 1);
	fkv_msleep(200);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 1, 0);
	io_uring_sqe_set_data64(sqe, 2);
	FKV_ASSERT_EQ(io_uring_submit(&ring), 1);
	/* the cancel's own answer comes first: the put is running */
	FKV_ASSERT_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
	FKV_ASSERT_EQ(cqe->user_data, 2);
	FKV_ASSERT(cqe->res == -EALREADY || cqe->res == 0,
		   "cancel: %s", strerror(-cqe->res));
	seen_cancel = 1;
	io_uring_cqe_seen(&ring, cqe);
	cont_daemon();
	FKV_ASSERT_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
	FKV_ASSERT_EQ(cqe->user_data, 1);
	ret = cqe->res;
	seen_put = 1;
	io_uring_cqe_seen(&ring, cqe);
	FKV_ASSERT(ret == 0 || ret == -ECANCELED || ret == -EINTR,
		   "cancelled put: %s", strerror(-ret));
	got = fkv_get(kv, "c-put", 5, &h);
	if (ret == 0) {
		FKV_ASSERT_EQ(got, 0);
		FKV_ASSERT_PATTERN(h.data, 200000, "c-put", 5, 3);
		release(kv, &h);
		delete_key(kv, "c-put");
	} else {
		FKV_ASSERT_EQ(got, -ENOENT);
	}
	FKV_ASSERT(seen_put && seen_cancel);

	/* 2. the ring closed while 4 puts wait for a stopped daemon */
	stop_daemon();
	for (i = 0; i < 4; i++) {
		snprintf(key[i], sizeof(key[i]), "c-%d", i);
		raw_put(&ring, fd, &p[i], key[i], val, 200000, 10 + i);
	}
	FKV_ASSERT_EQ(io_uring_submit(&ring), 4);
	fkv_msleep(200);
	io_uring_queue_exit(&ring);	/* returns; the puts are still out */
	cont_daemon();
	/* each put ends one way or the other; none leaves a pin */
	wait_puts_settled();
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	for (i = 0; i < 4; i++) {
		ret = fkv_get(kv, key[i], strlen(key[i]), &h);
		if (!ret) {
			/* every put sent the same bytes, c-put's pattern */
			FKV_ASSERT_PATTERN(h.data, 200000, "c-put", 5, 3);
			release(kv, &h);
			delete_key(kv, key[i]);
		} else {
			FKV_ASSERT_EQ(ret, -ENOENT);
		}
	}
	close(fd);
	free(val);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(process_killed_with_ring_commands_outstanding_leaks_nothing)
{
	uint64_t base;
	struct fkv *kv;
	int sync[2], status, i, ret;
	pid_t kid;
	char c;

	base = setup_puts_via_master();
	kv = kv_open();
	put_pattern(kv, "k-hit", 65536, 2);
	FKV_ASSERT_EQ(pipe(sync), 0);
	stop_daemon();
	fflush(stdout);
	kid = fork();
	FKV_ASSERT(kid >= 0);
	if (kid == 0) {
		static uint8_t val[300000];
		struct fkv *ckv = NULL;
		struct fkv_ring *r = NULL;
		char key[16];

		if (fkv_open(FKV_DEV_PATH, &ckv) ||
		    fkv_ring_open(ckv, 32, &r))
			_exit(2);
		/* 8 held DRAM hits, 8 puts waiting for the daemon */
		for (i = 0; i < 16; i++) {
			struct fkv_op op = { .opcode = i < 8 ? FLUXONKV_OP_GET :
					     FLUXONKV_OP_PUT };

			snprintf(key, sizeof(key), "k-%d", i);
			op.key = i < 8 ? "k-hit" : key;
			op.key_len = strlen(op.key);
			op.value = val;
			op.buf_len = i < 8 ? 0 : sizeof(val);
			if (fkv_ring_prep(r, &op, i))
				_exit(3);
		}
		if (fkv_ring_submit(r) != 16)
			_exit(4);
		if (write(sync[1], "x", 1) != 1)
			_exit(5);
		pause();
		_exit(6);
	}
	close(sync[1]);
	FKV_ASSERT_EQ(read(sync[0], &c, 1), 1);
	close(sync[0]);
	FKV_ASSERT_SYSFS_SETTLES("holders", 8);
	fkv_msleep(200);
	FKV_ASSERT_EQ(kill(kid, SIGKILL), 0);
	FKV_ASSERT_EQ(waitpid(kid, &status, 0), kid);
	FKV_ASSERT(WIFSIGNALED(status), "child status %#x", status);
	cont_daemon();
	/*
	 * The killed waiters cancelled their PUT_STARTs (the daemon drops
	 * them; the module sweeps them at their deadline): none publishes.
	 */
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	/* the daemon still answers; the killed puts left nothing behind */
	put_pattern(kv, "k-after", 4096, 4);
	for (i = 8; i < 16; i++) {
		char key[16];

		snprintf(key, sizeof(key), "k-%d", i);
		ret = delete_any(kv, key);
		(void)ret;
	}
	delete_key(kv, "k-after");
	delete_key(kv, "k-hit");
	fkv_close(kv);
	teardown(base);
}
