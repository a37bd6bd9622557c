// SPDX-License-Identifier: GPL-2.0
/*
 * test_dram - the DRAM tier end to end: fluxonkv.ko + fluxond + libfluxonkv.
 *
 * Values are patterns derived from (key, length, salt) and are checked byte
 * for byte through the read-only segment mapping, so a torn, mixed, stale
 * or misplaced value fails.  Every test ends by releasing what it holds and
 * deleting its keys, and then segment_used_bytes must be back where it
 * started: nothing leaks.
 */
#include <pthread.h>
#include <sys/uio.h>

#include <fluxonkv.h>

#include "fkv_env.h"
#include "fkv_kv.h"

/* ---- helpers (setup, teardown, release, delete_key: fkv_kv.h) ---- */

/* The holder lies inside the mapping and holds the expected bytes. */
static void check_holder(struct fkv *kv, const struct fkv_holder *h,
			 const char *key, size_t len, uint64_t salt)
{
	const uint8_t *base = fkv_segment_base(kv);
	const uint8_t *data = h->data;

	FKV_ASSERT_EQ(h->len, len);
	FKV_ASSERT(data >= base && data + len <= base + fkv_segment_size(kv),
		   "holder data %p outside the mapping", h->data);
	FKV_ASSERT_PATTERN(data, len, key, strlen(key), salt);
}

/* get KEY, which must be (put_id, pattern of len/salt); caller releases. */
static void get_check(struct fkv *kv, const char *key, size_t len,
		      uint64_t salt, uint64_t put_id, struct fkv_holder *h)
{
	int ret = fkv_get(kv, key, strlen(key), h);

	FKV_ASSERT(ret == 0, "get '%s': %s", key, fkv_strerror(ret));
	FKV_ASSERT_EQ(h->source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(h->put_id, put_id);
	check_holder(kv, h, key, len, salt);
}

/* ---- single-client semantics ---- */

FKV_TEST_TIMEOUT(round_trip_of_every_size_up_to_value_max, 300)
{
	/*
	 * value_max first: it fills the whole segment, so the small values
	 * after it land on bytes that held another value.
	 */
	size_t sizes[] = { 0 /* value_max */, 1, 2, 7, 4095, 4096, 4097,
			   FKV_MIB - 128, 4 * FKV_MIB, 16 * FKV_MIB };
	struct fluxonkv_info info;
	struct fkv_holder h;
	struct fkv *kv;
	uint64_t base, put_id;
	unsigned int i;
	char key[64];

	base = setup("segment_mb=64");
	kv = kv_open();
	FKV_ASSERT_EQ(fkv_info(kv, &info), 0);
	FKV_ASSERT_GE(info.value_max, 16 * FKV_MIB);
	FKV_ASSERT(info.flags & FLUXONKV_INFO_DAEMON);
	sizes[0] = info.value_max;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i], pad, j;
		const uint8_t *p;

		snprintf(key, sizeof(key), "size-%zu", len);
		put_id = put_pattern(kv, key, len, i);
		FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
			      base + FKV_ALIGN_UP(len));
		FKV_ASSERT_EQ(fkv_info(kv, &info), 0);
		FKV_ASSERT_EQ(info.segment_used, base + FKV_ALIGN_UP(len));

		get_check(kv, key, len, i, put_id, &h);
		/* the rest of the last granule shows no other value's bytes */
		p = h.data;
		pad = FKV_ALIGN_UP(len) - len;
		for (j = 0; j < pad; j++)
			FKV_ASSERT(p[len + j] == 0, "size %zu: padding byte "
				   "%zu is %#x", len, j, p[len + j]);
		release(kv, &h);
		delete_key(kv, key);
		FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	}
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(sysfs_counters_follow_puts_gets_and_deletes)
{
	struct fkv_holder h1, h2, miss;
	uint64_t base, put_id;
	struct fkv *kv;

	base = setup("segment_mb=32");
	kv = kv_open();
	FKV_ASSERT_EQ(fkv_sysfs("puts"), 0);
	put_id = put_pattern(kv, "cnt", 70000, 0);
	FKV_ASSERT_EQ(fkv_sysfs("puts"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), 1);

	get_check(kv, "cnt", 70000, 0, put_id, &h1);
	get_check(kv, "cnt", 70000, 0, put_id, &h2);
	FKV_ASSERT_NE(h1.id, h2.id);
	FKV_ASSERT(h1.data == h2.data, "two holders of one replica differ");
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 2);
	FKV_ASSERT_EQ(fkv_sysfs("hits_memory"), 2);
	FKV_ASSERT_EQ(fkv_get(kv, "nope", 4, &miss), -ENOENT);
	FKV_ASSERT_EQ(fkv_sysfs("misses"), 1);
	FKV_ASSERT_EQ(fkv_sysfs("gets"), 3);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 2);
	release(kv, &h1);
	release(kv, &h2);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 0);

	delete_key(kv, "cnt");
	FKV_ASSERT_EQ(fkv_sysfs("deletes"), 1);
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_timeouts"), 0);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(lookup_reports_a_value_without_getting_or_counting_it)
{
	uint64_t base, id1, id2, hits;
	struct fkv_holder h;
	struct fkv *kv;

	base = setup("segment_mb=32");
	kv = kv_open();
	lookup_miss(kv, "lk");
	id1 = put_pattern(kv, "lk", 70000, 1);
	hits = fkv_sysfs("hits_memory");
	FKV_ASSERT_EQ(lookup_check(kv, "lk", 70000, id1),
		      FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT_EQ(fkv_sysfs("hits_memory"), hits);
	/* an overwrite is seen at once, a holder of the old one aside */
	get_check(kv, "lk", 70000, 1, id1, &h);
	id2 = put_pattern(kv, "lk", 5000, 2);
	FKV_ASSERT_EQ(lookup_check(kv, "lk", 5000, id2),
		      FLUXONKV_SOURCE_MEMORY);
	release(kv, &h);
	delete_key(kv, "lk");
	lookup_miss(kv, "lk");
	/* a read-only consumer may look up */
	{
		struct fkv_lookup l;
		int fd = fkv_dev_open_ro();

		FKV_ASSERT(fd >= 0, "open O_RDONLY: %s", strerror(errno));
		put_pattern(kv, "lk-ro", 4096, 3);
		{
			struct fluxonkv_lookup lk = {
				.size = sizeof(lk), .key_len = 5,
				.key_ptr = (uintptr_t)"lk-ro" };

			FKV_ASSERT_EQ(ioctl(fd, FLUXONKV_IOC_LOOKUP, &lk), 0);
			FKV_ASSERT_EQ(lk.len, 4096);
			FKV_ASSERT_EQ(lk.source, FLUXONKV_SOURCE_MEMORY);
		}
		close(fd);
		FKV_ASSERT_EQ(fkv_lookup(kv, "lk-ro", 5, &l), 0);
		delete_key(kv, "lk-ro");
	}
	FKV_ASSERT_EQ(fkv_sysfs("upcall_timeouts"), 0);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(overwrite_gets_a_larger_put_id_and_new_bytes)
{
	struct fkv_holder h;
	uint64_t base, id1, id2, id3;
	struct fkv *kv;

	base = setup("segment_mb=32");
	kv = kv_open();
	id1 = put_pattern(kv, "ow", 10000, 1);
	id2 = put_pattern(kv, "ow", 20000, 2);
	FKV_ASSERT_GT(id2, id1);
	get_check(kv, "ow", 20000, 2, id2, &h);
	release(kv, &h);
	/* the old version's bytes went back to the segment */
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes",
				 base + FKV_ALIGN_UP(20000));
	FKV_ASSERT_SYSFS_SETTLES("replicas", 1);

	/* same length, other bytes */
	id3 = put_pattern(kv, "ow", 20000, 3);
	FKV_ASSERT_GT(id3, id2);
	get_check(kv, "ow", 20000, 3, id3, &h);
	release(kv, &h);
	delete_key(kv, "ow");
	fkv_close(kv);
	teardown(base);
}

/* ---- gather puts (FLUXONKV_PUT_F_IOV) ---- */

/*
 * The value @v (@len bytes) cut into @n pieces of uneven lengths (0 and 1
 * byte ones among them), each copied to its own place in @area with a
 * gap after it, so that no two pieces are adjacent.  @iov gets them.
 */
static void scatter_pieces(const uint8_t *v, size_t len, uint8_t *area,
			   struct iovec *iov, size_t n)
{
	size_t i, off = 0, at = 0;

	for (i = 0; i < n; i++) {
		size_t want = i + 1 == n ? len - off :
			      i % 7 == 3 ? 0 : i % 5 == 1 ? 1 :
			      (len / n) + (i % 3) * 17;

		if (want > len - off)
			want = len - off;
		memcpy(area + at, v + off, want);
		iov[i].iov_base = area + at;
		iov[i].iov_len = want;
		off += want;
		at += want + 64;	/* a gap: never adjacent */
	}
	FKV_ASSERT_EQ(off, len);
}

/* A raw FLUXONKV_IOC_PUT of @key with the given fields; 0 or errno. */
static int raw_put(struct fkv *kv, const char *key, uint64_t value_ptr,
		   uint64_t value_len, uint64_t flags, uint32_t iov_count)
{
	struct fluxonkv_put p = {
		.size = sizeof(p), .key_len = strlen(key),
		.key_ptr = (uintptr_t)key, .value_ptr = value_ptr,
		.value_len = value_len, .flags = flags, .iov_count = iov_count,
	};

	return ioctl(fkv_fd(kv), FLUXONKV_IOC_PUT, &p) ? errno : 0;
}

FKV_TEST_TIMEOUT(gather_puts_store_their_pieces_in_order_byte_exact, 180)
{
	static const size_t counts[] = { 2, 3, 64, FLUXONKV_IOV_MAX };
	size_t len = 3 * FKV_MIB + 12345, i;
	struct iovec *iov;
	struct fkv_op ops[3];
	struct fkv_holder h;
	uint64_t base, put_id;
	uint8_t *v, *area;
	struct fkv *kv;
	char key[64];

	base = setup("segment_mb=64");
	kv = kv_open();
	iov = calloc(FLUXONKV_IOV_MAX, sizeof(*iov));
	area = malloc(len + FLUXONKV_IOV_MAX * 64);
	FKV_ASSERT(iov && area);
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		snprintf(key, sizeof(key), "gather-%zu", counts[i]);
		v = pattern(key, len, i);
		scatter_pieces(v, len, area, iov, counts[i]);
		free(v);
		put_id = 0;
		FKV_ASSERT_EQ(fkv_put_iov(kv, key, strlen(key), iov, counts[i],
					  &put_id), 0);
		FKV_ASSERT_GT(put_id, 0);
		/* the pieces were read at the call: scribbling now is harmless */
		memset(area, 0xa5, len + FLUXONKV_IOV_MAX * 64);
		get_check(kv, key, len, i, put_id, &h);
		release(kv, &h);
		FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
			      base + FKV_ALIGN_UP(len));
		delete_key(kv, key);
	}

	/* three gather puts in one FLUXONKV_IOC_BATCH, one of 1 piece */
	{
		static const size_t lens[] = { 70000, 1, 300001 };
		static const size_t pieces[] = { 5, 1, 64 };
		struct iovec *at = iov;
		uint8_t *ar = area;

		memset(ops, 0, sizeof(ops));
		for (i = 0; i < 3; i++) {
			snprintf(key, sizeof(key), "gather-batch-%zu", i);
			v = pattern(key, lens[i], 10 + i);
			scatter_pieces(v, lens[i], ar, at, pieces[i]);
			free(v);
			ops[i].opcode = FLUXONKV_OP_PUT_IOV;
			ops[i].key = strdup(key);
			ops[i].key_len = strlen(key);
			ops[i].value = at;
			ops[i].buf_len = pieces[i];
			at += pieces[i];
			ar += lens[i] + pieces[i] * 64;
		}
		FKV_ASSERT_EQ(fkv_batch(kv, ops, 3), 0);
		for (i = 0; i < 3; i++) {
			FKV_ASSERT(ops[i].result == 0, "op %zu: %s", i,
				   fkv_strerror(ops[i].result));
			get_check(kv, ops[i].key, lens[i], 10 + i,
				  ops[i].put_id, &h);
			release(kv, &h);
			delete_key(kv, ops[i].key);
			free((void *)ops[i].key);
		}
	}
	free(iov);
	free(area);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(bad_gather_puts_fail_with_a_precise_errno_and_store_nothing)
{
	struct fluxonkv_iovec fi[4], *many;
	uint64_t base, puts;
	uint8_t buf[3][4096];
	uint8_t *hole;
	struct fkv *kv;
	const char *k = "gather-bad";
	size_t i;

	base = setup("segment_mb=32");
	kv = kv_open();
	puts = fkv_sysfs("puts");
	for (i = 0; i < 3; i++) {
		memset(buf[i], 'a' + i, sizeof(buf[i]));
		fi[i].base = (uintptr_t)buf[i];
		fi[i].len = sizeof(buf[i]);
	}
	/* a hole: mapped, then unmapped (in range, but faults in the copy) */
	hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(hole != MAP_FAILED);
	FKV_ASSERT_EQ(munmap(hole, 4096), 0);
	many = calloc(FLUXONKV_IOV_MAX + 1, sizeof(*many));
	FKV_ASSERT(many);
	for (i = 0; i <= FLUXONKV_IOV_MAX; i++) {
		many[i].base = (uintptr_t)buf[0];
		many[i].len = 1;
	}

	/* the good one works: the checks below are about what is wrong */
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 3 * 4096,
			      FLUXONKV_PUT_F_IOV, 3), 0);
	delete_key(kv, k);
	puts = fkv_sysfs("puts");

	/* the count: none, past FLUXONKV_IOV_MAX, without the flag */
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 3 * 4096,
			      FLUXONKV_PUT_F_IOV, 0), EINVAL);
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)many, FLUXONKV_IOV_MAX + 1,
			      FLUXONKV_PUT_F_IOV, FLUXONKV_IOV_MAX + 1), EINVAL);
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)buf[0], 4096, 0, 1), EINVAL);
	/* FLUXONKV_IOV_MAX itself is fine */
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)many, FLUXONKV_IOV_MAX,
			      FLUXONKV_PUT_F_IOV, FLUXONKV_IOV_MAX), 0);
	delete_key(kv, k);
	puts = fkv_sysfs("puts");
	/* unknown flags */
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 3 * 4096,
			      FLUXONKV_PUT_F_IOV | (1ULL << 40), 3), EINVAL);
	/* the total against value_len: short, long */
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 3 * 4096 - 1,
			      FLUXONKV_PUT_F_IOV, 3), EINVAL);
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 3 * 4096 + 1,
			      FLUXONKV_PUT_F_IOV, 3), EINVAL);
	/* a piece whose end overflows; a total that overflows */
	fi[3].base = (uintptr_t)buf[0];
	fi[3].len = UINT64_MAX - 100;
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)&fi[3], 4096,
			      FLUXONKV_PUT_F_IOV, 1), EINVAL);
	fi[0].len = 1ULL << 63;
	fi[1].len = 1ULL << 63;
	fi[2].len = 4096;
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 4096,
			      FLUXONKV_PUT_F_IOV, 3), EINVAL);
	fi[0].len = fi[1].len = 4096;
	/* the array itself unreadable; running off a mapping */
	FKV_EXPECT_EQ(raw_put(kv, k, 8, 3 * 4096, FLUXONKV_PUT_F_IOV, 3),
		      EFAULT);
	/* a piece outside the user address space */
	fi[1].base = 0xffff888000000000ULL;
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 3 * 4096,
			      FLUXONKV_PUT_F_IOV, 3), EFAULT);
	/* a piece in range but not mapped: faults in the copy */
	fi[1].base = (uintptr_t)hole;
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 3 * 4096,
			      FLUXONKV_PUT_F_IOV, 3), EFAULT);
	fi[1].base = 0;
	FKV_EXPECT_EQ(raw_put(kv, k, (uintptr_t)fi, 3 * 4096,
			      FLUXONKV_PUT_F_IOV, 3), EFAULT);
	fi[1].base = (uintptr_t)buf[1];

	/* the same checks for an entry of a batch */
	{
		struct fluxonkv_op op[3];
		struct fluxonkv_batch b = {
			.size = sizeof(b), .count = 3, .ops_ptr = (uintptr_t)op,
			.op_size = sizeof(op[0]),
		};

		memset(op, 0, sizeof(op));
		for (i = 0; i < 3; i++) {
			op[i].opcode = FLUXONKV_OP_PUT_IOV;
			op[i].key_len = strlen(k);
			op[i].key_ptr = (uintptr_t)k;
			op[i].buf_ptr = (uintptr_t)fi;
			op[i].buf_len = 3 * 4096;
			op[i].iov_count = 3;
		}
		op[0].iov_count = 0;			/* no pieces */
		op[1].buf_len = 3 * 4096 + 1;		/* total differs */
		op[2].opcode = FLUXONKV_OP_PUT;		/* pieces on a PUT */
		FKV_ASSERT_EQ(ioctl(fkv_fd(kv), FLUXONKV_IOC_BATCH, &b), 0);
		FKV_EXPECT_EQ(b.done, 3);
		for (i = 0; i < 3; i++)
			FKV_EXPECT(op[i].result == -EINVAL, "op %zu: %d", i,
				   op[i].result);
	}
	/* the library refuses what it can see */
	FKV_EXPECT_EQ(fkv_put_iov(kv, k, strlen(k), NULL, 3, NULL), -EINVAL);
	FKV_EXPECT_EQ(fkv_put_iov(kv, k, strlen(k), (struct iovec *)fi, 0, NULL),
		      -EINVAL);

	/* nothing of all that was stored */
	lookup_miss(kv, k);
	FKV_EXPECT_EQ(fkv_sysfs("puts"), puts);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	free(many);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(delete_then_get_is_enoent_and_second_delete_is_enoent)
{
	struct fkv_holder h;
	uint64_t base, id1, id2;
	struct fkv *kv;

	base = setup("segment_mb=32");
	kv = kv_open();
	id1 = put_pattern(kv, "del", 5000, 1);
	get_check(kv, "del", 5000, 1, id1, &h);	/* indexed locally now */
	release(kv, &h);
	delete_key(kv, "del");
	FKV_ASSERT_EQ(fkv_get(kv, "del", 3, &h), -ENOENT);
	FKV_ASSERT_EQ(fkv_delete(kv, "del", 3), -ENOENT);
	FKV_ASSERT_EQ(fkv_delete(kv, "never-put", 9), -ENOENT);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	/* the key can come back, with a newer version */
	id2 = put_pattern(kv, "del", 6000, 2);
	FKV_ASSERT_GT(id2, id1);
	get_check(kv, "del", 6000, 2, id2, &h);
	release(kv, &h);
	delete_key(kv, "del");
	FKV_ASSERT_EQ(fkv_get(kv, "del", 3, &h), -ENOENT);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(holder_keeps_old_bytes_across_overwrite_and_delete)
{
	const size_t l1 = 300000, l2 = 123457;
	struct fkv_holder h1, h2, h3;
	uint64_t base, id1, id2;
	struct fkv *kv;

	base = setup("segment_mb=32");
	kv = kv_open();
	id1 = put_pattern(kv, "pin", l1, 1);
	get_check(kv, "pin", l1, 1, id1, &h1);

	id2 = put_pattern(kv, "pin", l2, 2);
	FKV_ASSERT_GT(id2, id1);
	get_check(kv, "pin", l2, 2, id2, &h2);
	check_holder(kv, &h1, "pin", l1, 1);	/* old bytes intact */
	FKV_ASSERT_EQ(h1.put_id, id1);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      base + FKV_ALIGN_UP(l1) + FKV_ALIGN_UP(l2));

	delete_key(kv, "pin");
	FKV_ASSERT_EQ(fkv_get(kv, "pin", 3, &h3), -ENOENT);
	check_holder(kv, &h1, "pin", l1, 1);
	check_holder(kv, &h2, "pin", l2, 2);
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      base + FKV_ALIGN_UP(l1) + FKV_ALIGN_UP(l2));

	/* a new value must not land on bytes still held */
	put_pattern(kv, "pin-other", l1 + l2, 3);
	check_holder(kv, &h1, "pin", l1, 1);
	check_holder(kv, &h2, "pin", l2, 2);
	delete_key(kv, "pin-other");

	release(kv, &h1);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes",
				 base + FKV_ALIGN_UP(l2));
	release(kv, &h2);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(holders_are_released_when_the_fd_closes)
{
	struct fluxonkv_get g;
	struct fkv_holder h;
	uint64_t base;
	struct fkv *kv;
	int fd, i;

	base = setup("segment_mb=32");
	kv = kv_open();
	put_pattern(kv, "close-a", 50000, 1);
	put_pattern(kv, "close-b", 8000, 2);

	/* raw descriptor: only the kernel can clean up after close() */
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	for (i = 0; i < 3; i++)
		FKV_ASSERT_EQ(fkv_dev_get(fd, "close-a", 7, &g), 0);
	FKV_ASSERT_EQ(fkv_dev_get(fd, "close-b", 7, &g), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 4);
	delete_key(kv, "close-a");
	delete_key(kv, "close-b");
	/* still pinned */
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      base + FKV_ALIGN_UP(50000) + FKV_ALIGN_UP(8000));
	close(fd);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);

	/* the library handle: fkv_close() with holders outstanding */
	put_pattern(kv, "close-c", 9000, 3);
	FKV_ASSERT_EQ(fkv_get(kv, "close-c", 7, &h), 0);
	FKV_ASSERT_EQ(fkv_get(kv, "close-c", 7, &h), 0);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 2);
	fkv_close(kv);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	kv = kv_open();
	delete_key(kv, "close-c");
	fkv_close(kv);
	teardown(base);
}

FKV_TEST(holders_are_released_when_the_holding_process_is_killed)
{
	uint64_t base, ida, idb;
	int pfd[2], status;
	struct fkv *kv;
	pid_t pid;
	char c;

	base = setup("segment_mb=32");
	kv = kv_open();
	ida = put_pattern(kv, "kill-a", 200000, 1);
	idb = put_pattern(kv, "kill-b", 3000, 2);
	FKV_ASSERT_EQ(pipe(pfd), 0);
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (pid == 0) {
		struct fkv *ckv = kv_open();
		struct fkv_holder h;

		close(pfd[0]);
		get_check(ckv, "kill-a", 200000, 1, ida, &h);
		get_check(ckv, "kill-a", 200000, 1, ida, &h);
		get_check(ckv, "kill-b", 3000, 2, idb, &h);
		if (write(pfd[1], "r", 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(pfd[1]);
	FKV_ASSERT_EQ(read(pfd[0], &c, 1), 1);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 3);
	delete_key(kv, "kill-a");
	delete_key(kv, "kill-b");
	FKV_ASSERT_EQ(fkv_sysfs("segment_used_bytes"),
		      base + FKV_ALIGN_UP(200000) + FKV_ALIGN_UP(3000));

	kill(pid, SIGKILL);
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	FKV_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);
	FKV_ASSERT_SYSFS_SETTLES("segment_used_bytes", base);
	fkv_close(kv);
	teardown(base);
}

/* ---- many clients at once ---- */

#define CC_PROCS	4
#define CC_THREADS	3
#define CC_OPS		150
#define CC_SHARED	4
#define CC_OWN		3
#define CC_MAXBODY	(160 * 1024)
#define CC_TABLE	(1 << 16)
#define CC_MAGIC	0x666b7663635f7631ULL	/* "fkvcc_v1" */
#define CC_PREPOP	0xffff

/*
 * A concurrent value: a header naming key, writer, sequence and length, then
 * a body that is the pattern of (key, writer << 32 | seq), a checksum over
 * every byte.  Which put_id a (writer, seq) got is published in a shared
 * table once put returns, so a get that pairs a put_id with another put's
 * bytes is caught too.
 */
struct cc_hdr {
	uint64_t magic;
	uint64_t len;		/* the whole value */
	uint32_t writer;
	uint32_t seq;
	uint32_t key_len;
	uint32_t pad;
	char key[32];
};

struct cc_shared {
	uint64_t owner[CC_TABLE];	/* put_id -> (writer + 1) << 32 | seq */
	uint64_t puts;			/* successful puts, all workers */
};

static struct cc_shared *cc;

static uint64_t cc_salt(uint32_t writer, uint32_t seq)
{
	return (uint64_t)writer << 32 | seq;
}

static void cc_shared_key(char *buf, size_t n, int i)
{
	snprintf(buf, n, "cc-shared-%d", i);
}

static void cc_own_key(char *buf, size_t n, int p, int t, int i)
{
	snprintf(buf, n, "cc-p%d-t%d-k%d", p, t, i);
}

/* Put a fresh cc value under KEY from (writer, seq); returns put_id. */
static uint64_t cc_put(struct fkv *kv, uint8_t *buf, const char *key,
		       uint32_t writer, uint32_t seq, size_t body)
{
	struct cc_hdr *hd = (struct cc_hdr *)buf;
	size_t len = sizeof(*hd) + body;
	uint64_t put_id = 0;
	int ret;

	memset(hd, 0, sizeof(*hd));
	hd->magic = CC_MAGIC;
	hd->len = len;
	hd->writer = writer;
	hd->seq = seq;
	hd->key_len = strlen(key);
	memcpy(hd->key, key, hd->key_len);
	fkv_pattern_fill(buf + sizeof(*hd), body, key, strlen(key),
			 cc_salt(writer, seq));
	ret = fkv_put(kv, key, strlen(key), buf, len, &put_id);
	FKV_ASSERT(ret == 0, "cc put '%s': %s", key, fkv_strerror(ret));
	FKV_ASSERT(put_id > 0 && put_id < CC_TABLE, "put_id %" PRIu64, put_id);
	__atomic_store_n(&cc->owner[put_id], (uint64_t)(writer + 1) << 32 | seq,
			 __ATOMIC_RELEASE);
	__atomic_fetch_add(&cc->puts, 1, __ATOMIC_RELAXED);
	return put_id;
}

/* Verify a cc value held by H under KEY; returns its (writer, seq). */
static uint64_t cc_check(struct fkv *kv, const struct fkv_holder *h,
			 const char *key)
{
	const struct cc_hdr *hd = h->data;
	uint64_t owner;
	long off;

	FKV_ASSERT_EQ(h->source, FLUXONKV_SOURCE_MEMORY);
	FKV_ASSERT(h->len >= sizeof(*hd), "cc value of %zu bytes", h->len);
	FKV_ASSERT(hd->magic == CC_MAGIC, "'%s': bad magic", key);
	FKV_ASSERT(hd->len == h->len, "'%s': header says %" PRIu64
		   " bytes, holder %zu", key, hd->len, h->len);
	FKV_ASSERT(hd->key_len == strlen(key) &&
		   !memcmp(hd->key, key, hd->key_len),
		   "'%s': value of key '%.32s'", key, hd->key);
	off = fkv_pattern_check((const uint8_t *)h->data + sizeof(*hd),
				h->len - sizeof(*hd), key, strlen(key),
				cc_salt(hd->writer, hd->seq));
	FKV_ASSERT(off < 0, "'%s' (writer %u seq %u put_id %" PRIu64
		   "): torn at body offset %ld", key, hd->writer, hd->seq,
		   h->put_id, off);
	FKV_ASSERT(h->put_id > 0 && h->put_id < CC_TABLE);
	owner = __atomic_load_n(&cc->owner[h->put_id], __ATOMIC_ACQUIRE);
	FKV_ASSERT(!owner || owner == ((uint64_t)(hd->writer + 1) << 32 |
				       hd->seq),
		   "'%s': put_id %" PRIu64 " belongs to writer %u seq %u, "
		   "bytes to writer %u seq %u", key, h->put_id,
		   (unsigned int)(owner >> 32) - 1, (unsigned int)owner,
		   hd->writer, hd->seq);
	(void)kv;
	return cc_salt(hd->writer, hd->seq);
}

struct cc_thread {
	struct fkv *kv;
	int proc, thread;
};

static void *cc_worker(void *arg)
{
	struct cc_thread *t = arg;
	uint32_t writer = (uint32_t)(t->proc * CC_THREADS + t->thread);
	uint64_t last_seen[CC_SHARED] = { 0 };
	uint64_t rnd = 0x9e3779b97f4a7c15ULL * (writer + 1);
	struct fkv_holder kept[2] = { { 0 } };
	uint8_t *buf = malloc(sizeof(struct cc_hdr) + CC_MAXBODY);
	char key[64];
	uint32_t seq;
	int i;

	FKV_ASSERT(buf);
	for (seq = 1; seq <= CC_OPS; seq++) {
		uint64_t r = fkv_xorshift(&rnd);
		size_t body = (size_t)((r >> 8) % CC_MAXBODY);
		int op = (int)(r % 10), k = (int)((r >> 40) % CC_SHARED);
		struct fkv_holder h;
		uint64_t put_id;
		int ret;

		if (op < 3) {
			/* my own key: nobody else writes it */
			cc_own_key(key, sizeof(key), t->proc, t->thread,
				   k % CC_OWN);
			put_id = cc_put(t->kv, buf, key, writer, seq, body);
			ret = fkv_get(t->kv, key, strlen(key), &h);
			FKV_ASSERT(ret == 0, "get own '%s': %s", key,
				   fkv_strerror(ret));
			FKV_ASSERT_EQ(h.put_id, put_id);
			FKV_ASSERT_EQ(cc_check(t->kv, &h, key),
				      cc_salt(writer, seq));
			release(t->kv, &h);
		} else if (op < 5) {
			cc_shared_key(key, sizeof(key), k);
			put_id = cc_put(t->kv, buf, key, writer, seq, body);
			FKV_ASSERT_GT(put_id, last_seen[k]);
			last_seen[k] = put_id;
		} else {
			struct fkv_holder *slot = &kept[seq & 1];

			cc_shared_key(key, sizeof(key), k);
			ret = fkv_get(t->kv, key, strlen(key), &h);
			FKV_ASSERT(ret == 0, "get '%s': %s", key,
				   fkv_strerror(ret));
			cc_check(t->kv, &h, key);
			/* versions only move forward for one reader */
			FKV_ASSERT(h.put_id >= last_seen[k], "'%s' went back "
				   "from put_id %" PRIu64 " to %" PRIu64, key,
				   last_seen[k], h.put_id);
			last_seen[k] = h.put_id;
			/* keep some holders across later operations */
			if (slot->id) {
				FKV_ASSERT_EQ(((const struct cc_hdr *)
					       slot->data)->magic, CC_MAGIC);
				release(t->kv, slot);
			}
			*slot = h;
		}
	}
	for (i = 0; i < 2; i++)
		if (kept[i].id)
			release(t->kv, &kept[i]);
	free(buf);
	return NULL;
}

static void cc_process(int proc)
{
	struct cc_thread t[CC_THREADS];
	pthread_t tid[CC_THREADS];
	struct fkv *kv = kv_open();	/* one handle shared by the threads */
	int i;

	for (i = 0; i < CC_THREADS; i++) {
		t[i] = (struct cc_thread){ kv, proc, i };
		FKV_ASSERT_EQ(pthread_create(&tid[i], NULL, cc_worker, &t[i]),
			      0);
	}
	for (i = 0; i < CC_THREADS; i++)
		pthread_join(tid[i], NULL);
	fkv_close(kv);
}

FKV_TEST_TIMEOUT(concurrent_processes_and_threads_see_intact_values, 300)
{
	uint8_t *buf = malloc(sizeof(struct cc_hdr) + CC_MAXBODY);
	pid_t pids[CC_PROCS];
	uint64_t base, puts0;
	struct fkv *kv;
	char key[64];
	int i, t, k, status, failed = 0;

	base = setup("segment_mb=64");
	cc = mmap(NULL, sizeof(*cc), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	FKV_ASSERT(cc != MAP_FAILED && buf);
	kv = kv_open();
	puts0 = fkv_sysfs("puts");
	for (k = 0; k < CC_SHARED; k++) {
		cc_shared_key(key, sizeof(key), k);
		cc_put(kv, buf, key, CC_PREPOP, (uint32_t)k, 1000 + 5000 * k);
	}

	fflush(stdout);
	for (i = 0; i < CC_PROCS; i++) {
		pids[i] = fork();
		FKV_ASSERT(pids[i] >= 0);
		if (pids[i] == 0) {
			cc_process(i);
			_exit(0);
		}
	}
	for (i = 0; i < CC_PROCS; i++) {
		FKV_ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fkv_diag("worker process %d failed (status %#x)", i,
				 status);
			failed++;
		}
	}
	FKV_ASSERT_EQ(failed, 0);
	FKV_ASSERT_EQ(fkv_sysfs("puts") - puts0, cc->puts);
	FKV_ASSERT_SYSFS_SETTLES("holders", 0);

	/* every key still reads back intact, then goes */
	for (k = 0; k < CC_SHARED; k++) {
		struct fkv_holder h;

		cc_shared_key(key, sizeof(key), k);
		FKV_ASSERT_EQ(fkv_get(kv, key, strlen(key), &h), 0);
		cc_check(kv, &h, key);
		release(kv, &h);
		delete_key(kv, key);
	}
	for (i = 0; i < CC_PROCS; i++)
		for (t = 0; t < CC_THREADS; t++)
			for (k = 0; k < CC_OWN; k++) {
				int ret;

				cc_own_key(key, sizeof(key), i, t, k);
				ret = fkv_delete(kv, key, strlen(key));
				FKV_ASSERT(ret == 0 || ret == -ENOENT,
					   "delete '%s': %s", key,
					   fkv_strerror(ret));
			}
	FKV_ASSERT_SYSFS_SETTLES("replicas", 0);
	fkv_close(kv);
	free(buf);
	teardown(base);
}

/* ---- eviction ---- */

#define EV_SEG_MB	16
#define EV_KEYS		64
#define EV_LEN		(512 * 1024 - 100)

FKV_TEST_TIMEOUT(eviction_keeps_every_get_correct_under_twice_the_segment, 300)
{
	uint64_t base, ids[EV_KEYS], present = 0;
	struct fkv_holder h;
	struct fkv *kv;
	char key[32];
	uint64_t rnd = 12345;
	int i, ret;

	base = setup("segment_mb=16");
	kv = kv_open();
	for (i = 0; i < EV_KEYS; i++) {
		snprintf(key, sizeof(key), "ev-%d", i);
		ids[i] = put_pattern(kv, key, EV_LEN, i);
		if (i)
			FKV_ASSERT_GT(ids[i], ids[i - 1]);
		/* what was just put is readable */
		get_check(kv, key, EV_LEN, i, ids[i], &h);
		release(kv, &h);
		/* an older key is either gone or exactly what was put */
		if (i > 4 && (i % 3) == 0) {
			int j = (int)(fkv_xorshift(&rnd) % (uint64_t)i);

			snprintf(key, sizeof(key), "ev-%d", j);
			ret = fkv_get(kv, key, strlen(key), &h);
			FKV_ASSERT(ret == 0 || ret == -ENOENT, "get '%s': %s",
				   key, fkv_strerror(ret));
			if (!ret) {
				FKV_ASSERT_EQ(h.put_id, ids[j]);
				check_holder(kv, &h, key, EV_LEN, j);
				release(kv, &h);
			}
		}
	}
	FKV_ASSERT_GT(fkv_sysfs("evictions"), 0);
	/*
	 * With local puts the master evicts for a put when its PUT_LOCAL
	 * note arrives, after the put returned.  A delete goes after every
	 * note and is answered after the DROP_REPLICAs of what came before
	 * it: once it returns, no eviction of these puts is still to come.
	 */
	FKV_ASSERT_EQ(fkv_delete(kv, "ev-none", 7), -ENOENT);

	for (i = 0; i < EV_KEYS; i++) {
		snprintf(key, sizeof(key), "ev-%d", i);
		ret = fkv_get(kv, key, strlen(key), &h);
		FKV_ASSERT(ret == 0 || ret == -ENOENT, "get '%s': %s", key,
			   fkv_strerror(ret));
		/* the most recent keys were not the ones to go */
		FKV_ASSERT(ret == 0 || i < EV_KEYS - 4,
			   "recent key '%s' was evicted", key);
		if (!ret) {
			FKV_ASSERT_EQ(h.put_id, ids[i]);
			check_holder(kv, &h, key, EV_LEN, i);
			release(kv, &h);
			present++;
		}
	}
	fkv_diag("%" PRIu64 " of %d keys survived, %" PRIu64 " evictions",
		 present, EV_KEYS, fkv_sysfs("evictions"));
	FKV_ASSERT_LE(present * FKV_ALIGN_UP(EV_LEN), EV_SEG_MB * FKV_MIB);
	FKV_ASSERT_EQ(fkv_sysfs("replicas"), present);

	for (i = 0; i < EV_KEYS; i++) {
		snprintf(key, sizeof(key), "ev-%d", i);
		ret = fkv_delete(kv, key, strlen(key));
		FKV_ASSERT(ret == 0 || ret == -ENOENT, "delete '%s': %s", key,
			   fkv_strerror(ret));
	}
	fkv_close(kv);
	teardown(base);
}

/* ---- the daemon dies ---- */

#define DK_MAXOPS	20000
#define DK_SLOW_MS	2000

struct dk_op {
	int64_t start, end;
	int ret;
};

struct dk_state {
	volatile bool stop;
	int nops;		/* written by the worker only */
	int ok;			/* successful ops */
	struct dk_op ops[DK_MAXOPS];
};

static void dk_record(struct dk_state *s, int64_t start, int ret)
{
	if (s->nops < DK_MAXOPS) {
		s->ops[s->nops] = (struct dk_op){ start, fkv_now_ms(), ret };
		__atomic_store_n(&s->nops, s->nops + 1, __ATOMIC_RELEASE);
	}
	if (!ret)
		__atomic_fetch_add(&s->ok, 1, __ATOMIC_RELAXED);
}

static void *dk_worker(void *arg)
{
	struct dk_state *s = arg;
	struct fkv *kv = kv_open();
	const size_t len = 64 * 1024;
	uint8_t *buf = malloc(len);
	unsigned int i;
	char key[32];

	for (i = 0; !s->stop; i++) {
		struct fkv_holder h;
		uint64_t put_id;
		int64_t t0;
		int ret;

		snprintf(key, sizeof(key), "dk-%u", i % 8);
		fkv_pattern_fill(buf, len, key, strlen(key), i);
		t0 = fkv_now_ms();
		ret = fkv_put(kv, key, strlen(key), buf, len, &put_id);
		dk_record(s, t0, ret);
		t0 = fkv_now_ms();
		ret = fkv_get(kv, key, strlen(key), &h);
		dk_record(s, t0, ret);
		if (!ret) {
			/* whichever version it is, it is a whole one */
			FKV_ASSERT_EQ(h.len, len);
			release(kv, &h);
		} else {
			fkv_msleep(2);
		}
	}
	free(buf);
	fkv_close(kv);
	return NULL;
}

FKV_TEST_TIMEOUT(daemon_killed_midstream_fails_fast_and_restart_recovers, 180)
{
	struct dk_state *s = calloc(1, sizeof(*s));
	int64_t t_kill, t_gone, end, t0;
	int i, after = 0, inflight = 0;
	struct fkv_holder held, h;
	uint64_t base, held_id, put_id;
	pthread_t tid;
	struct fkv *kv;
	int ret;

	FKV_ASSERT(s);
	base = setup("segment_mb=32 request_timeout_ms=5000");
	kv = kv_open();
	held_id = put_pattern(kv, "dk-held", 300000, 77);
	get_check(kv, "dk-held", 300000, 77, held_id, &held);

	FKV_ASSERT_EQ(pthread_create(&tid, NULL, dk_worker, s), 0);
	end = fkv_now_ms() + 20000;
	while (__atomic_load_n(&s->ok, __ATOMIC_RELAXED) < 10 &&
	       fkv_now_ms() < end)
		fkv_msleep(5);
	FKV_ASSERT_GE(s->ok, 10);

	t_kill = fkv_now_ms();
	FKV_ASSERT_EQ(fkv_daemon_kill(), 0);
	FKV_ASSERT_SYSFS_SETTLES("daemon_pid", 0);
	t_gone = fkv_now_ms();
	end = t_gone + 5000;
	for (;;) {
		int n = __atomic_load_n(&s->nops, __ATOMIC_ACQUIRE);

		after = 0;
		for (i = 0; i < n; i++)
			if (s->ops[i].start >= t_gone)
				after++;
		if (after >= 20 || fkv_now_ms() > end)
			break;
		fkv_msleep(10);
	}
	s->stop = true;
	pthread_join(tid, NULL);

	for (i = 0; i < s->nops; i++) {
		const struct dk_op *o = &s->ops[i];

		FKV_EXPECT(o->end - o->start < DK_SLOW_MS,
			   "op %d took %" PRId64 " ms (ret %d)", i,
			   o->end - o->start, o->ret);
		if (o->start >= t_gone)
			FKV_EXPECT(o->ret == -ENOTCONN, "op %d after the daemon "
				   "died: %s", i, fkv_strerror(o->ret));
		else if (o->end >= t_kill) {
			inflight++;
			FKV_EXPECT(o->ret == 0 || o->ret == -ENOTCONN,
				   "op %d in flight at the kill: %s", i,
				   fkv_strerror(o->ret));
		}
	}
	fkv_diag("%d ops, %d in flight at the kill, %d after", s->nops,
		 inflight, after);
	FKV_ASSERT_GE(after, 20);
	FKV_ASSERT_EQ(fkv_sysfs("upcall_timeouts"), 0);

	/* without a daemon: fast ENOTCONN, held bytes intact */
	t0 = fkv_now_ms();
	FKV_ASSERT_EQ(fkv_put(kv, "dk-new", 6, "x", 1, &put_id), -ENOTCONN);
	FKV_ASSERT_EQ(fkv_get(kv, "dk-held", 7, &h), -ENOTCONN);
	FKV_ASSERT_EQ(fkv_delete(kv, "dk-held", 7), -ENOTCONN);
	FKV_ASSERT_LT(fkv_now_ms() - t0, 1000);
	check_holder(kv, &held, "dk-held", 300000, 77);
	FKV_ASSERT_EQ(fkv_sysfs("holders"), 1);

	/* a new daemon: service resumes */
	FKV_ASSERT_GT(fkv_daemon_start(), 0);
	put_id = put_pattern(kv, "dk-new", 100000, 5);
	get_check(kv, "dk-new", 100000, 5, put_id, &h);
	release(kv, &h);
	/* what the dead master knew is either gone or still correct */
	ret = fkv_get(kv, "dk-held", 7, &h);
	FKV_ASSERT(ret == 0 || ret == -ENOENT, "old key: %s",
		   fkv_strerror(ret));
	if (!ret) {
		fkv_diag("note: a key put before the restart is still served");
		check_holder(kv, &h, "dk-held", 300000, 77);
		release(kv, &h);
	}
	check_holder(kv, &held, "dk-held", 300000, 77);
	release(kv, &held);

	delete_key(kv, "dk-new");
	for (i = 0; i < 9; i++) {
		char key[32];

		if (i < 8)
			snprintf(key, sizeof(key), "dk-%d", i);
		else
			snprintf(key, sizeof(key), "dk-held");
		ret = fkv_delete(kv, key, strlen(key));
		FKV_ASSERT(ret == 0 || ret == -ENOENT, "delete '%s': %s", key,
			   fkv_strerror(ret));
	}
	fkv_close(kv);
	free(s);
	teardown(base);
}
