// SPDX-License-Identifier: GPL-2.0
/*
 * test_options.c - fluxond's command line.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../selftests/fkv_test.h"
#include "fluxonkv_config.h"
#include "../../userspace/fluxond/options.h"

/* What the parser printed for the last usage error. */
static char errbuf[256];

static int parse(struct fkv_options *o, char **argv)
{
	FILE *err = fmemopen(errbuf, sizeof(errbuf), "w");
	int argc = 0, ret;

	FKV_ASSERT(err != NULL);
	while (argv[argc])
		argc++;
	ret = fkv_options_parse(o, argc, argv, err);
	fclose(err);
	return ret;
}

#define ARGV(...)	((char *[]){ "fluxond", __VA_ARGS__, NULL })

FKV_TEST(defaults_are_foreground_s3fifo_98_95_info)
{
	struct fkv_options o;

	FKV_ASSERT_EQ(parse(&o, (char *[]){ "fluxond", NULL }), 0);
	FKV_ASSERT(!o.daemon);
	FKV_ASSERT(o.pidfile == NULL);
	FKV_ASSERT(!strcmp(o.policy, "s3fifo"));
	FKV_ASSERT_EQ(o.high_pct, 98);
	FKV_ASSERT_EQ(o.low_pct, 95);
	FKV_ASSERT_EQ(o.log_level, FKV_LOG_INFO);
	FKV_ASSERT(!o.help && !o.version);
	FKV_ASSERT(!strcmp(o.config_path, "/etc/fluxonkv/fluxonkv.yaml"));
	FKV_ASSERT(!o.config_explicit);
}

FKV_TEST(config_file_is_recorded_with_whether_it_was_given)
{
	struct fkv_options o;

	FKV_ASSERT_EQ(parse(&o, ARGV("--config", "/srv/n1.yaml")), 0);
	FKV_ASSERT(!strcmp(o.config_path, "/srv/n1.yaml"));
	FKV_ASSERT(o.config_explicit);
	FKV_ASSERT_EQ(parse(&o, ARGV("-c", "rel.yaml")), 0);
	FKV_ASSERT(!strcmp(o.config_path, "rel.yaml"));
	FKV_ASSERT(o.config_explicit);
	FKV_ASSERT_EQ(parse(&o, ARGV("--config=/a.yaml", "-d")), 0);
	FKV_ASSERT(!strcmp(o.config_path, "/a.yaml"));
	FKV_ASSERT(o.daemon);
	/* giving the default path explicitly still counts as given */
	FKV_ASSERT_EQ(parse(&o, ARGV("-c/etc/fluxonkv/fluxonkv.yaml")), 0);
	FKV_ASSERT(o.config_explicit);
	/* the last one wins, like every other option */
	FKV_ASSERT_EQ(parse(&o, ARGV("-c", "/a", "--config", "/b")), 0);
	FKV_ASSERT(!strcmp(o.config_path, "/b"));
	/* a fresh parse forgets the last one */
	FKV_ASSERT_EQ(parse(&o, ARGV("-f")), 0);
	FKV_ASSERT(!o.config_explicit);
	FKV_ASSERT(!strcmp(o.config_path, "/etc/fluxonkv/fluxonkv.yaml"));
}

FKV_TEST(config_needs_a_nonempty_path)
{
	struct fkv_options o;

	FKV_ASSERT_EQ(parse(&o, ARGV("--config")), -EINVAL);
	FKV_ASSERT(strstr(errbuf, "option --config needs an argument"));
	FKV_ASSERT_EQ(parse(&o, ARGV("-c")), -EINVAL);
	FKV_ASSERT(strstr(errbuf, "option -c needs an argument"));
	FKV_ASSERT_EQ(parse(&o, ARGV("--config", "")), -EINVAL);
	FKV_ASSERT(strstr(errbuf, "--config needs a path"));
	FKV_ASSERT_EQ(parse(&o, ARGV("--config=")), -EINVAL);
	FKV_ASSERT(strstr(errbuf, "--config needs a path"));
}

FKV_TEST(help_lists_the_config_option_and_its_default)
{
	char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	FKV_ASSERT(f != NULL);
	fkv_options_usage(f, "fluxond");
	FKV_ASSERT_EQ(fclose(f), 0);
	FKV_ASSERT(strstr(buf, "  -c, --config FILE "));
	FKV_ASSERT(strstr(buf, "(default /etc/fluxonkv/fluxonkv.yaml;"));
}

FKV_TEST(every_option_is_parsed)
{
	struct fkv_options o;

	FKV_ASSERT_EQ(parse(&o, ARGV("--daemon", "--pidfile", "/run/f.pid",
				     "--policy", "lru", "--high-watermark",
				     "70", "--low-watermark=60",
				     "--log-level", "debug")), 0);
	FKV_ASSERT(o.daemon);
	FKV_ASSERT(!strcmp(o.pidfile, "/run/f.pid"));
	FKV_ASSERT(!strcmp(o.policy, "lru"));
	FKV_ASSERT_EQ(o.high_pct, 70);
	FKV_ASSERT_EQ(o.low_pct, 60);
	FKV_ASSERT_EQ(o.log_level, FKV_LOG_DEBUG);
	FKV_ASSERT_EQ(parse(&o, ARGV("--daemon", "--foreground")), 0);
	FKV_ASSERT(!o.daemon);
	FKV_ASSERT_EQ(parse(&o, ARGV("--help")), 0);
	FKV_ASSERT(o.help);
	FKV_ASSERT_EQ(parse(&o, ARGV("-V")), 0);
	FKV_ASSERT(o.version);
}

FKV_TEST(bad_values_are_usage_errors)
{
	struct fkv_options o;

	FKV_ASSERT_EQ(parse(&o, ARGV("--policy", "lfu")), -EINVAL);
	FKV_ASSERT(strstr(errbuf, "unknown policy 'lfu'"));
	FKV_ASSERT_EQ(parse(&o, ARGV("--high-watermark", "0")), -EINVAL);
	FKV_ASSERT_EQ(parse(&o, ARGV("--high-watermark", "101")), -EINVAL);
	FKV_ASSERT_EQ(parse(&o, ARGV("--high-watermark", "9x")), -EINVAL);
	FKV_ASSERT_EQ(parse(&o, ARGV("--low-watermark", "-5")), -EINVAL);
	/* Alone, checked with the configuration's other one later. */
	FKV_ASSERT_EQ(parse(&o, ARGV("--low-watermark", "99")), 0);
	FKV_ASSERT_EQ(parse(&o, ARGV("--low-watermark", "99",
				     "--high-watermark", "98")), -EINVAL);
	FKV_ASSERT(strstr(errbuf, "low watermark 99% above high watermark 98%"));
	FKV_ASSERT_EQ(parse(&o, ARGV("--log-level", "loud")), -EINVAL);
	FKV_ASSERT_EQ(parse(&o, ARGV("--pidfile")), -EINVAL);
	FKV_ASSERT(strstr(errbuf, "--pidfile needs an argument"));
	FKV_ASSERT_EQ(parse(&o, ARGV("--frobnicate")), -EINVAL);
	FKV_ASSERT_EQ(parse(&o, ARGV("extra")), -EINVAL);
	FKV_ASSERT(strstr(errbuf, "unexpected argument 'extra'"));
	/* Equal watermarks are allowed. */
	FKV_ASSERT_EQ(parse(&o, ARGV("--high-watermark", "85",
				     "--low-watermark", "85")), 0);
}

FKV_TEST(the_configuration_applies_where_the_command_line_is_silent)
{
	struct fkv_config c = { 0 };
	struct fkv_options o;
	char policy[] = "lru", level[] = "debug";
	FILE *err = fopen("/dev/null", "w");

	FKV_ASSERT(err != NULL);
	c.policy = policy;
	c.high_pct = 90;
	c.low_pct = 80;
	c.log_level = level;
	FKV_ASSERT_EQ(parse(&o, (char *[]){ "fluxond", NULL }), 0);
	FKV_ASSERT_EQ(fkv_options_apply_config(&o, &c, err), 0);
	FKV_ASSERT(!strcmp(o.policy, "lru"));
	FKV_ASSERT_EQ(o.high_pct, 90);
	FKV_ASSERT_EQ(o.low_pct, 80);
	FKV_ASSERT_EQ(o.log_level, FKV_LOG_DEBUG);

	/* flags win, setting by setting */
	FKV_ASSERT_EQ(parse(&o, ARGV("--policy", "s3fifo", "--low-watermark",
				     "70", "--log-level", "warn")), 0);
	FKV_ASSERT_EQ(fkv_options_apply_config(&o, &c, err), 0);
	FKV_ASSERT(!strcmp(o.policy, "s3fifo"));
	FKV_ASSERT_EQ(o.high_pct, 90);
	FKV_ASSERT_EQ(o.low_pct, 70);
	FKV_ASSERT_EQ(o.log_level, FKV_LOG_WARN);

	/* the combination is checked: the file's low above the flag's high */
	FKV_ASSERT_EQ(parse(&o, ARGV("--high-watermark", "60",
				     "--low-watermark", "50")), 0);
	c.low_pct = 0;
	FKV_ASSERT_EQ(fkv_options_apply_config(&o, &c, err), 0);
	c.low_pct = 80;
	FKV_ASSERT_EQ(parse(&o, ARGV("--high-watermark", "60")), 0);
	FKV_ASSERT_EQ(fkv_options_apply_config(&o, &c, err), -EINVAL);
	fclose(err);
}
