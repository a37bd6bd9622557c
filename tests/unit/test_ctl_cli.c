// SPDX-License-Identifier: GPL-2.0
/*
 * The fluxonctl binary as a script sees it: exit codes and where output
 * goes, for everything that works without the module (usage, a missing or
 * wrong device, sysfs from $FLUXONKV_SYSFS).  Runs $(O)/fluxonctl next to
 * $(O)/unit/; skips when it has not been built.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/fluxonkv.h>

static char ctl[PATH_MAX];

static int find_fluxonctl(const char **why)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0) {
		*why = "cannot read /proc/self/exe";
		return -errno;
	}
	self[n] = '\0';
	snprintf(ctl, sizeof(ctl), "%s/../fluxonctl", dirname(self));
	if (access(ctl, X_OK)) {
		*why = "fluxonctl not built (make userspace)";
		return -ENOENT;
	}
	return 0;
}
#define FKV_TEST_SETUP_ALL find_fluxonctl

#include "../../selftests/fkv_test.h"

struct run {
	int status;	/* exit code, or 128 + signal */
	char out[8192];
	char err[4096];
};

/* What the child wrote to @f, then close it. */
static void slurp(FILE *f, char *buf, size_t len)
{
	size_t got;

	rewind(f);
	got = fread(buf, 1, len - 1, f);
	buf[got] = '\0';
	fclose(f);
}

/* Run fluxonctl with @args (NULL-terminated), stdin from /dev/null. */
static void run(struct run *r, char *const args[])
{
	char *argv[16] = { ctl };
	FILE *out = tmpfile(), *err = tmpfile();
	int status, i;
	pid_t pid;

	FKV_ASSERT(out && err);

	for (i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		int in = open("/dev/null", O_RDONLY);

		dup2(in, 0);
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		execv(ctl, argv);
		_exit(127);
	}
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) :
		    128 + WTERMSIG(status);
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
}

#define RUN(r, ...) run(r, (char *const[]){ __VA_ARGS__, NULL })

static void assert_has(const char *hay, const char *needle)
{
	const char *hit = strstr(hay, needle);

	FKV_ASSERT(hit != NULL, "missing \"%s\" in \"%s\"", needle, hay);
}

static char sysdir[64];

static void put_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", sysdir, name);
	f = fopen(path, "w");
	FKV_ASSERT(f);
	fputs(text, f);
	fclose(f);
}

static void fake_sysfs(void)
{
	strcpy(sysdir, "/tmp/fkv-ctl-sysfs-XXXXXX");
	FKV_ASSERT(mkdtemp(sysdir));
	setenv("FLUXONKV_SYSFS", sysdir, 1);
	put_file("version", "0.1.0\n");
	put_file("abi_version", "1\n");
	put_file("segment_capacity_bytes", "1048576\n");
	put_file("segment_used_bytes", "262144\n");
	put_file("daemon_pid", "0\n");
	put_file("puts", "3\n");
}

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

static void fake_remove(void)
{
	nftw(sysdir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static char dbgdir[64];

/* A debugfs directory whose latency file has 3 gets: 2 fast, 1 slower. */
static void fake_debugfs(void)
{
	char path[128];
	FILE *f;

	strcpy(dbgdir, "/tmp/fkv-ctl-dbg-XXXXXX");
	FKV_ASSERT(mkdtemp(dbgdir));
	setenv("FLUXONKV_DEBUGFS", dbgdir, 1);
	snprintf(path, sizeof(path), "%s/latency", dbgdir);
	f = fopen(path, "w");
	FKV_ASSERT(f);
	fputs("op\tcount\tsum_ns\tle_1024\tle_2048\tle_4096\tle_inf\n"
	      "get_memory\t3\t5000\t0\t2\t1\t0\n", f);
	fclose(f);
}

FKV_TEST(no_command_is_a_usage_error_with_the_usage_on_stderr)
{
	struct run r;

	run(&r, (char *const[]){ NULL });
	FKV_ASSERT_EQ(r.status, 2);
	assert_has(r.err, "Usage: fluxonctl");
	FKV_ASSERT_EQ(r.out[0], '\0');
}

FKV_TEST(an_unknown_command_is_a_usage_error)
{
	struct run r;

	RUN(&r, "frobnicate");
	FKV_ASSERT_EQ(r.status, 2);
	assert_has(r.err, "unknown command 'frobnicate'");
}

FKV_TEST(help_goes_to_stdout_and_succeeds)
{
	struct run r;

	RUN(&r, "--help");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "Exit status");
	RUN(&r, "get", "--help");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "Usage: fluxonctl get");
	RUN(&r, "help", "stats");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "Usage: fluxonctl stats");
}

FKV_TEST(version_prints_the_release_and_the_abi)
{
	char want[64];
	struct run r;

	RUN(&r, "--version");
	FKV_ASSERT_EQ(r.status, 0);
	snprintf(want, sizeof(want), "fluxonctl %s (fluxonkv ABI %d)\n",
		 FLUXONKV_RELEASE, FLUXONKV_ABI_VERSION);
	FKV_ASSERT(!strcmp(r.out, want), "got \"%s\", want \"%s\"", r.out, want);
	FKV_ASSERT_EQ(r.err[0], '\0');
}

FKV_TEST(the_global_json_option_is_the_commands_own)
{
	struct run r;

	fake_sysfs();
	RUN(&r, "-j", "stats");
	FKV_ASSERT_EQ(r.status, 0);
	FKV_ASSERT_EQ(r.out[0], '{');
	assert_has(r.out, "\"puts\":3");
	RUN(&r, "--json", "status");
	FKV_ASSERT_EQ(r.out[0], '{');
	/* the command's own checks still apply */
	RUN(&r, "-j", "stats", "--prometheus");
	FKV_ASSERT_EQ(r.status, 2);
	assert_has(r.err, "give --json or --prometheus, not both");
	RUN(&r, "-j", "get", "-o", "/dev/null", "k");
	FKV_ASSERT_EQ(r.status, 2);
	assert_has(r.err, "--info prints no value");
	/* commands without JSON output refuse it before touching anything */
	RUN(&r, "--json", "put", "--device", "/nonexistent", "--value", "v", "k");
	FKV_ASSERT_EQ(r.status, 2);
	assert_has(r.err, "fluxonctl put: -j/--json: put has no JSON output");
	RUN(&r, "--jason", "stats");
	FKV_ASSERT_EQ(r.status, 2);
	assert_has(r.err, "fluxonctl: unknown option '--jason'");
	fake_remove();
}

FKV_TEST(config_attach_if_needed_is_a_no_op_without_an_ssd_tier)
{
	char path[] = "/tmp/fkv-ctl-yaml-XXXXXX";
	const char *yaml = "fluxonkv_spec:\n  cluster_name: t\n";
	struct run r;
	int fd = mkstemp(path);

	FKV_ASSERT(fd >= 0);
	FKV_ASSERT(write(fd, yaml, strlen(yaml)) == (ssize_t)strlen(yaml));
	close(fd);
	/* no module needed: nothing to attach */
	RUN(&r, "config", "attach", "--if-needed", path);
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "declares no SSD tier");
	RUN(&r, "config", "attach", path);
	FKV_ASSERT_EQ(r.status, 1);
	assert_has(r.err, "declares no SSD tier");
	RUN(&r, "config", "check", "--if-needed", path);
	FKV_ASSERT_EQ(r.status, 2);
	assert_has(r.err, "--if-needed is an option of config attach");
	unlink(path);
}

FKV_TEST(a_bad_option_exits_2_before_touching_the_device)
{
	struct run r;

	RUN(&r, "get", "--device", "/nonexistent", "--bogus", "k");
	FKV_ASSERT_EQ(r.status, 2);
	assert_has(r.err, "unknown option '--bogus'");
}

FKV_TEST(a_missing_device_exits_4_module_not_loaded)
{
	struct run r;

	RUN(&r, "get", "--device", "/nonexistent/fluxonkv", "k");
	FKV_ASSERT_EQ(r.status, 4);
	assert_has(r.err, "module loaded");
	RUN(&r, "delete", "-d", "/nonexistent/fluxonkv", "k");
	FKV_ASSERT_EQ(r.status, 4);
	RUN(&r, "put", "-d", "/nonexistent/fluxonkv", "--value", "v", "k");
	FKV_ASSERT_EQ(r.status, 4);
}

FKV_TEST(a_device_that_is_not_fluxonkv_exits_1)
{
	struct run r;

	RUN(&r, "put", "--device", "/dev/null", "--value", "v", "k");
	FKV_ASSERT_EQ(r.status, 1);
	assert_has(r.err, "not a fluxonkv device");
}

FKV_TEST(stats_without_the_module_exit_4)
{
	struct run r;

	setenv("FLUXONKV_SYSFS", "/nonexistent/fluxonkv", 1);
	RUN(&r, "stats");
	FKV_ASSERT_EQ(r.status, 4);
	assert_has(r.err, "not loaded");
	RUN(&r, "status");
	FKV_ASSERT_EQ(r.status, 4);
	assert_has(r.out, "not loaded");
	RUN(&r, "status", "--json");
	FKV_ASSERT_EQ(r.status, 4);
	FKV_ASSERT(!strcmp(r.out, "{\"module_loaded\":false}\n"), "%s", r.out);
}

FKV_TEST(stats_print_the_sysfs_directory_in_each_format)
{
	struct run r;

	fake_sysfs();
	RUN(&r, "stats", "--prometheus");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "fluxonkv_puts_total 3\n");
	assert_has(r.out, "kvcache_segment_used_bytes 262144\n");
	RUN(&r, "stats", "--json");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "\"puts\":3,");
	RUN(&r, "stats");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "segment_used_bytes       262144 (256.0 KiB, 25.0");
	fake_remove();
}

FKV_TEST(status_shows_sysfs_even_when_netlink_cannot_answer)
{
	struct run r;

	fake_sysfs();
	RUN(&r, "status");
	/* 0 if a fluxonkv family answers on this host, 1 if not */
	FKV_ASSERT(r.status == 0 || r.status == 1, "exit %d", r.status);
	assert_has(r.out, "module:    loaded, version 0.1.0, ABI 1\n");
	assert_has(r.out, "daemon:    not connected\n");
	assert_has(r.out, "segment:   256.0 KiB of 1.0 MiB used (25.0");
	assert_has(r.out, "netlink:   ");
	if (r.status == 1)
		assert_has(r.out, "netlink:   error: ");
	fake_remove();
}

FKV_TEST(stats_add_latency_from_the_debugfs_override_in_each_format)
{
	struct run r;

	fake_sysfs();
	fake_debugfs();
	RUN(&r, "stats");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "\nget_memory              3      1.7 us      2.0 us      4.1 us      4.1 us\n");
	RUN(&r, "stats", "--json");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "\"latency\":{\"get_memory\":{\"count\":3,\"sum_ns\":5000,"
		   "\"mean_ns\":1667,\"p50_ns\":2048,\"p95_ns\":4096,\"p99_ns\":4096}}}\n");
	RUN(&r, "stats", "--prometheus");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "fluxonkv_op_latency_seconds_bucket{op=\"get_memory\",le=\"0.000002048\"} 2\n"
		   "fluxonkv_op_latency_seconds_bucket{op=\"get_memory\",le=\"0.000004096\"} 3\n"
		   "fluxonkv_op_latency_seconds_bucket{op=\"get_memory\",le=\"+Inf\"} 3\n"
		   "fluxonkv_op_latency_seconds_sum{op=\"get_memory\"} 0.000005\n"
		   "fluxonkv_op_latency_seconds_count{op=\"get_memory\"} 3\n");
	nftw(dbgdir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
	fake_remove();
}

FKV_TEST(stats_without_a_readable_latency_file_still_succeed)
{
	struct run r;

	fake_sysfs();
	setenv("FLUXONKV_DEBUGFS", "/nonexistent/fluxonkv", 1);
	RUN(&r, "stats");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "puts                     3\n");
	assert_has(r.out, "latency: unavailable (/nonexistent/fluxonkv/latency: ");
	RUN(&r, "stats", "--json");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "\"latency\":null}\n");
	RUN(&r, "stats", "--prometheus");
	FKV_ASSERT_EQ(r.status, 0);
	assert_has(r.out, "fluxonkv_puts_total 3\n");
	FKV_ASSERT(strstr(r.out, "latency") == NULL, "%s", r.out);
	fake_remove();
}
