// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl's pure formatting: binary-unit sizes, percentages, JSON
 * strings, holder metadata.
 */
#include <math.h>
#include <stdint.h>

#include <linux/fluxonkv.h>

#include "../../userspace/fluxonctl/ctl_format.h"
#include "../../userspace/fluxonctl/ctl_json.h"
#include "../../selftests/fkv_test.h"

static const char *size(uint64_t bytes)
{
	static char buf[CTL_SIZE_BUFLEN];

	return ctl_format_size(bytes, buf, sizeof(buf));
}

#define ASSERT_STR(got, want)						\
	do {								\
		const char *g_ = (got), *w_ = (want);			\
		if (strcmp(g_, w_))					\
			FKV_FAIL_AT(1, "got \"%s\", want \"%s\"", g_, w_); \
	} while (0)

FKV_TEST(sizes_below_one_kib_are_whole_bytes)
{
	ASSERT_STR(size(0), "0 B");
	ASSERT_STR(size(1), "1 B");
	ASSERT_STR(size(1023), "1023 B");
}

FKV_TEST(sizes_use_binary_units_with_one_decimal)
{
	ASSERT_STR(size(1024), "1.0 KiB");
	ASSERT_STR(size(1536), "1.5 KiB");
	ASSERT_STR(size(4096), "4.0 KiB");
	ASSERT_STR(size(64ULL << 20), "64.0 MiB");
	ASSERT_STR(size(3ULL << 29), "1.5 GiB");
	ASSERT_STR(size(16384ULL << 20), "16.0 GiB");
	ASSERT_STR(size(5ULL << 40), "5.0 TiB");
	ASSERT_STR(size(1ULL << 50), "1.0 PiB");
}

FKV_TEST(sizes_round_to_the_nearest_tenth)
{
	/* 1065 B = 1.040 KiB; 1076 B = 1.051 KiB */
	ASSERT_STR(size(1065), "1.0 KiB");
	ASSERT_STR(size(1076), "1.1 KiB");
	/* either side of 1.05 GiB */
	ASSERT_STR(size((1ULL << 30) + (1ULL << 30) / 20), "1.0 GiB");
	ASSERT_STR(size((1ULL << 30) + (1ULL << 30) / 20 + 1), "1.1 GiB");
}

FKV_TEST(sizes_that_round_up_to_1024_move_to_the_next_unit)
{
	/* 1023.96 KiB is shown as 1.0 MiB, never as 1024.0 KiB */
	ASSERT_STR(size((1ULL << 20) - 41), "1.0 MiB");
	ASSERT_STR(size((1ULL << 30) - 1), "1.0 GiB");
	ASSERT_STR(size((1ULL << 20) - 52), "1023.9 KiB");
}

FKV_TEST(the_largest_size_is_sixteen_eib_without_overflow)
{
	ASSERT_STR(size(UINT64_MAX), "16.0 EiB");
	ASSERT_STR(size(1ULL << 60), "1.0 EiB");
}

FKV_TEST(a_short_buffer_gets_a_truncated_terminated_size)
{
	char buf[5];

	ctl_format_size(64ULL << 20, buf, sizeof(buf));
	ASSERT_STR(buf, "64.0");
}

FKV_TEST(percent_of_an_empty_capacity_is_not_a_number)
{
	FKV_ASSERT(isnan(ctl_percent(5, 0)));
	FKV_ASSERT(ctl_percent(1, 4) == 25.0);
	FKV_ASSERT(ctl_percent(0, 4) == 0.0);
}

FKV_TEST(sources_have_names)
{
	ASSERT_STR(ctl_source_name(FLUXONKV_SOURCE_NONE), "none");
	ASSERT_STR(ctl_source_name(FLUXONKV_SOURCE_MEMORY), "memory");
	ASSERT_STR(ctl_source_name(FLUXONKV_SOURCE_SSD), "ssd");
	ASSERT_STR(ctl_source_name(77), "unknown");
}

/* Run @fn into a memstream and return what it wrote (malloc'ed). */
#define CAPTURE(call)							\
	({								\
		char *buf_ = NULL;					\
		size_t len_ = 0;					\
		FILE *f = open_memstream(&buf_, &len_);			\
		FKV_ASSERT(f);						\
		call;							\
		fclose(f);						\
		buf_;							\
	})

FKV_TEST(json_strings_escape_quotes_backslashes_and_control_bytes)
{
	char *out = CAPTURE(ctl_json_quote(f, "a\"b\\c\nd\te\x01\x7f" "\xc3\xa9"));

	ASSERT_STR(out, "\"a\\\"b\\\\c\\nd\\te\\u0001\\u007f\xc3\xa9\"");
	free(out);
}

FKV_TEST(json_writer_separates_members_and_nests_objects)
{
	struct ctl_json j;
	char *out = CAPTURE(({
		ctl_json_init(&j, f);
		ctl_json_open(&j, NULL);
		ctl_json_u64(&j, "a", 18446744073709551615ULL);
		ctl_json_open(&j, "o");
		ctl_json_bool(&j, "t", true);
		ctl_json_null(&j, "n");
		ctl_json_close(&j);
		ctl_json_double(&j, "d", 6.25);
		ctl_json_double(&j, "nan", NAN);
		ctl_json_str(&j, "s", "x");
		ctl_json_close(&j);
	}));

	ASSERT_STR(out, "{\"a\":18446744073709551615,\"o\":{\"t\":true,\"n\":null},"
			"\"d\":6.25,\"nan\":null,\"s\":\"x\"}\n");
	free(out);
}

static const struct ctl_holder_info holder = {
	.key = "layer\"0",
	.holder_id = 12,
	.len = 3 << 20,
	.put_id = 7,
	.source = FLUXONKV_SOURCE_MEMORY,
};

FKV_TEST(holder_info_as_json_is_one_object_with_every_field)
{
	char *out = CAPTURE(ctl_render_holder_json(f, &holder));

	ASSERT_STR(out, "{\"key\":\"layer\\\"0\",\"len\":3145728,\"put_id\":7,"
			"\"source\":\"memory\",\"holder_id\":12}\n");
	free(out);
}

FKV_TEST(holder_info_for_humans_shows_len_put_id_and_source)
{
	char *out = CAPTURE(ctl_render_holder_human(f, &holder));

	ASSERT_STR(out, "key:      layer\"0\n"
			"len:      3145728 (3.0 MiB)\n"
			"put_id:   7\n"
			"source:   memory\n"
			"holder:   12\n");
	free(out);
}
