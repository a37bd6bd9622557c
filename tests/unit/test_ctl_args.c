// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl's command line: what each command accepts, what it refuses
 * (with which message), and the exit codes scripts rely on.
 */
#include <stdbool.h>

#include "../../userspace/fluxonctl/ctl_args.h"
#include "../../selftests/fkv_test.h"

#define ARGV(...) ((char *[]){ __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ __VA_ARGS__ }) / sizeof(char *)))

/* Parse, keeping what the parser said on its error stream. */
static int parse(ctl_parse_fn fn, int argc, char **argv, struct ctl_opts *o,
		 char **msg)
{
	size_t len;
	FILE *err = open_memstream(msg, &len);
	int ret;

	FKV_ASSERT(err);
	ret = fn(argc, argv, o, err);
	fclose(err);
	return ret;
}

#define PARSE(fn, o, msg, ...) parse(fn, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), o, msg)

/* The call must fail as a usage error whose message contains @want. */
static void assert_usage_error(int ret, char **msgp, const char *want)
{
	char *msg = *msgp;	/* read after the parse ran */
	const char *hit = strstr(msg, want);

	FKV_ASSERT_EQ(ret, -EINVAL);
	FKV_ASSERT(hit != NULL, "want \"%s\" in \"%s\"", want, msg);
	free(msg);
}

FKV_TEST(put_takes_a_key_and_an_optional_file)
{
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_put, &o, &msg, "put", "k1", "/tmp/v"), 0);
	FKV_ASSERT(!strcmp(o.key_arg, "k1"));
	FKV_ASSERT_EQ(o.key_len, 2);
	FKV_ASSERT(!memcmp(o.key, "k1", 2));
	FKV_ASSERT(!strcmp(o.input, "/tmp/v"));
	FKV_ASSERT(o.value == NULL);
	FKV_ASSERT_EQ(msg[0], '\0');
	free(msg);

	FKV_ASSERT_EQ(PARSE(ctl_parse_put, &o, &msg, "put", "k1"), 0);
	FKV_ASSERT(o.input == NULL);	/* stdin */
	free(msg);
}

FKV_TEST(put_takes_the_value_inline_and_verbose_anywhere)
{
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_put, &o, &msg, "put", "k", "--value",
			    "hello", "-v"), 0);
	FKV_ASSERT(!strcmp(o.value, "hello"));
	FKV_ASSERT(o.verbose);
	FKV_ASSERT(o.input == NULL);
	free(msg);
}

FKV_TEST(put_refuses_both_a_file_and_an_inline_value)
{
	struct ctl_opts o;
	char *msg;

	assert_usage_error(PARSE(ctl_parse_put, &o, &msg, "put", "--value",
				 "x", "k", "file"), &msg, "not both");
}

FKV_TEST(put_refuses_an_empty_inline_value)
{
	struct ctl_opts o;
	char *msg;

	assert_usage_error(PARSE(ctl_parse_put, &o, &msg, "put", "--value", "",
				 "k"), &msg, "empty");
}

FKV_TEST(a_missing_key_is_a_usage_error_that_points_to_help)
{
	struct ctl_opts o;
	char *msg;

	assert_usage_error(PARSE(ctl_parse_get, &o, &msg, "get"), &msg,
			   "fluxonctl get: missing KEY");
	assert_usage_error(PARSE(ctl_parse_delete, &o, &msg, "delete"), &msg,
			   "Try 'fluxonctl delete --help'.");
	assert_usage_error(PARSE(ctl_parse_put, &o, &msg, "put", "-v"), &msg,
			   "missing KEY");
}

FKV_TEST(an_empty_key_is_a_usage_error)
{
	struct ctl_opts o;
	char *msg;

	assert_usage_error(PARSE(ctl_parse_delete, &o, &msg, "delete", ""),
			   &msg, "KEY is empty");
}

FKV_TEST(keys_longer_than_the_module_limit_are_refused)
{
	char key[FLUXONKV_KEY_MAX + 2];
	struct ctl_opts o;
	char *msg;

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	assert_usage_error(PARSE(ctl_parse_get, &o, &msg, "get", key), &msg,
			   "longer than 256 bytes");
	key[FLUXONKV_KEY_MAX] = '\0';	/* exactly the limit is fine */
	FKV_ASSERT_EQ(PARSE(ctl_parse_get, &o, &msg, "get", key), 0);
	FKV_ASSERT_EQ(o.key_len, FLUXONKV_KEY_MAX);
	free(msg);
}

FKV_TEST(hex_keys_decode_to_binary_bytes)
{
	static const unsigned char want[] = { 0x00, 0xff, 0x7a, 0xb3 };
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_delete, &o, &msg, "delete", "00fF7aB3",
			    "--hex"), 0);
	FKV_ASSERT_EQ(o.key_len, 4);
	FKV_ASSERT(!memcmp(o.key, want, 4));
	FKV_ASSERT(!strcmp(o.key_arg, "00fF7aB3"));
	free(msg);
	assert_usage_error(PARSE(ctl_parse_get, &o, &msg, "get", "-x", "abc"),
			   &msg, "not pairs of hex digits");
	assert_usage_error(PARSE(ctl_parse_get, &o, &msg, "get", "-x", "zz"),
			   &msg, "not pairs of hex digits");
}

FKV_TEST(hex_key_limit_counts_decoded_bytes)
{
	char hex[2 * FLUXONKV_KEY_MAX + 3];
	unsigned char buf[FLUXONKV_KEY_MAX];
	size_t len;

	memset(hex, 'a', sizeof(hex) - 1);
	hex[2 * FLUXONKV_KEY_MAX] = '\0';
	FKV_ASSERT_EQ(ctl_key_decode(hex, true, buf, &len), 0);
	FKV_ASSERT_EQ(len, FLUXONKV_KEY_MAX);
	FKV_ASSERT_EQ(buf[0], 0xaa);
	hex[2 * FLUXONKV_KEY_MAX] = 'a';
	hex[2 * FLUXONKV_KEY_MAX + 2] = '\0';
	FKV_ASSERT_EQ(ctl_key_decode(hex, true, buf, &len), -E2BIG);
	FKV_ASSERT_EQ(ctl_key_decode("", true, buf, &len), -EINVAL);
}

FKV_TEST(get_writes_to_a_file_and_accepts_options_after_the_key)
{
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_get, &o, &msg, "get", "k", "-o", "out",
			    "--device", "/dev/other"), 0);
	FKV_ASSERT(!strcmp(o.output, "out"));
	FKV_ASSERT(!strcmp(o.device, "/dev/other"));
	FKV_ASSERT(!o.info);
	free(msg);
}

FKV_TEST(get_json_means_info_as_json)
{
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_get, &o, &msg, "get", "--json", "k"), 0);
	FKV_ASSERT(o.info);
	FKV_ASSERT(o.json);
	free(msg);
}

FKV_TEST(get_info_refuses_an_output_file)
{
	struct ctl_opts o;
	char *msg;

	assert_usage_error(PARSE(ctl_parse_get, &o, &msg, "get", "--info", "-o",
				 "f", "k"), &msg, "--info prints no value");
}

FKV_TEST(a_key_that_starts_with_a_dash_follows_a_double_dash)
{
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_delete, &o, &msg, "delete", "--", "-k"), 0);
	FKV_ASSERT(!strcmp(o.key_arg, "-k"));
	free(msg);
}

FKV_TEST(unknown_options_and_missing_option_arguments_are_named)
{
	struct ctl_opts o;
	char *msg;

	assert_usage_error(PARSE(ctl_parse_get, &o, &msg, "get", "--bogus", "k"),
			   &msg, "unknown option '--bogus'");
	assert_usage_error(PARSE(ctl_parse_get, &o, &msg, "get", "-q", "k"),
			   &msg, "unknown option '-q'");
	assert_usage_error(PARSE(ctl_parse_get, &o, &msg, "get", "k", "-o"),
			   &msg, "option '-o' needs an argument");
	assert_usage_error(PARSE(ctl_parse_put, &o, &msg, "put", "k", "--value"),
			   &msg, "option '--value' needs an argument");
	/* options of one command are not options of another */
	assert_usage_error(PARSE(ctl_parse_status, &o, &msg, "status",
				 "--prometheus"), &msg, "unknown option");
}

FKV_TEST(extra_operands_are_refused)
{
	struct ctl_opts o;
	char *msg;

	assert_usage_error(PARSE(ctl_parse_delete, &o, &msg, "delete", "a", "b"),
			   &msg, "unexpected argument 'b'");
	assert_usage_error(PARSE(ctl_parse_status, &o, &msg, "status", "now"),
			   &msg, "unexpected argument 'now'");
	assert_usage_error(PARSE(ctl_parse_put, &o, &msg, "put", "k", "f", "g"),
			   &msg, "unexpected argument 'g'");
}

FKV_TEST(stats_take_one_format)
{
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_stats, &o, &msg, "stats", "-p"), 0);
	FKV_ASSERT(o.prometheus && !o.json);
	free(msg);
	FKV_ASSERT_EQ(PARSE(ctl_parse_stats, &o, &msg, "stats", "--json"), 0);
	FKV_ASSERT(o.json && !o.prometheus);
	free(msg);
	assert_usage_error(PARSE(ctl_parse_stats, &o, &msg, "stats", "--json",
				 "--prometheus"), &msg, "not both");
}

FKV_TEST(clear_takes_an_optional_regex_and_nothing_else)
{
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_clear, &o, &msg, "clear"), 0);
	FKV_ASSERT(o.regex == NULL);	/* every key */
	free(msg);
	FKV_ASSERT_EQ(PARSE(ctl_parse_clear, &o, &msg, "clear", "--regex",
			    "^req-[0-9]+$", "--json"), 0);
	FKV_ASSERT(!strcmp(o.regex, "^req-[0-9]+$"));
	FKV_ASSERT(o.json);
	free(msg);
	assert_usage_error(PARSE(ctl_parse_clear, &o, &msg, "clear",
				 "--regex", ""), &msg, "--regex wants a pattern");
	assert_usage_error(PARSE(ctl_parse_clear, &o, &msg, "clear", "--regex"),
			   &msg, "needs an argument");
	assert_usage_error(PARSE(ctl_parse_clear, &o, &msg, "clear", "k"),
			   &msg, "unexpected argument 'k'");
	FKV_ASSERT_EQ(ctl_global_json("clear", &o, stderr), 0);
}

FKV_TEST(help_wins_over_missing_operands)
{
	struct ctl_opts o;
	char *msg;

	FKV_ASSERT_EQ(PARSE(ctl_parse_put, &o, &msg, "put", "--help"), 0);
	FKV_ASSERT(o.help);
	FKV_ASSERT_EQ(msg[0], '\0');
	free(msg);
	FKV_ASSERT_EQ(PARSE(ctl_parse_status, &o, &msg, "status", "-h"), 0);
	FKV_ASSERT(o.help);
	free(msg);
}

FKV_TEST(every_command_documents_its_options_and_exit_codes)
{
	FKV_ASSERT(strstr(ctl_usage_put, "--value") != NULL);
	FKV_ASSERT(strstr(ctl_usage_get, "--info") != NULL);
	FKV_ASSERT(strstr(ctl_usage_get, "3 not found") != NULL);
	FKV_ASSERT(strstr(ctl_usage_delete, "3 not found") != NULL);
	FKV_ASSERT(strstr(ctl_usage_status, "4 module not loaded") != NULL);
	FKV_ASSERT(strstr(ctl_usage_stats, "--prometheus") != NULL);
	/* percentiles from a log2 histogram are bucket bounds: say so */
	FKV_ASSERT(strstr(ctl_usage_stats, "UPPER BOUND") != NULL);
	FKV_ASSERT(strstr(ctl_usage_stats, "$FLUXONKV_DEBUGFS") != NULL);
	FKV_ASSERT(strstr(ctl_usage_main, "3 key not found") != NULL);
}

FKV_TEST(library_errors_map_to_the_documented_exit_codes)
{
	FKV_ASSERT_EQ(ctl_exit_code(0), 0);
	FKV_ASSERT_EQ(ctl_exit_code(-ENOENT), 3);
	FKV_ASSERT_EQ(ctl_exit_code(-ENODEV), 4);
	FKV_ASSERT_EQ(ctl_exit_code(-ENXIO), 4);
	FKV_ASSERT_EQ(ctl_exit_code(-ENOTCONN), 4);
	FKV_ASSERT_EQ(ctl_exit_code(-ENOSPC), 1);
	FKV_ASSERT_EQ(ctl_exit_code(-ETIMEDOUT), 1);
	FKV_ASSERT_EQ(ctl_exit_code(-EACCES), 1);
	FKV_ASSERT_EQ(CTL_EXIT_USAGE, 2);
}
