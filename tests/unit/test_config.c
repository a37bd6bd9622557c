// SPDX-License-Identifier: GPL-2.0
/*
 * The node configuration and its SSD plan, as specified in
 * <fluxonkv_config.h> (reference design §2): size strings, the
 * fluxonkv_spec checks, cache root derivation, device dedup, shard split,
 * the prepared shard files, and `fluxonctl config check`.
 *
 * Filesystem tests work under $TMPDIR or /var/tmp (a real disk: O_DIRECT
 * and fallocate work there; FKV_SSD_PREPARE_ALLOW_BUFFERED covers tmpfs).
 * Block device tests attach a loop device and skip where there is none.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/loop.h>

#include "fluxonkv_config.h"

static char tmpbase[PATH_MAX];	/* made by the parent, removed at its exit */
static char tmpdir[PATH_MAX];	/* this test's, under tmpbase */

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	remove(p);
	return 0;
}

static void tmp_cleanup(void)
{
	nftw(tmpbase, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * The parent makes one directory on a real filesystem for every test and
 * removes it when it exits (tests end with _exit(): no cleanup of theirs
 * would run on failure).
 */
static int tmp_setup(const char **why)
{
	const char *bases[] = { getenv("TMPDIR"), "/var/tmp", "/tmp" };
	size_t i;

	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		if (!bases[i])
			continue;
		snprintf(tmpbase, sizeof(tmpbase), "%s/fkv-cfg-XXXXXX",
			 bases[i]);
		if (mkdtemp(tmpbase)) {
			atexit(tmp_cleanup);
			return 0;
		}
	}
	*why = "cannot create a temporary directory";
	return -EROFS;
}
#define FKV_TEST_SETUP_ALL tmp_setup
#include "../../selftests/fkv_test.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)

#define ASSERT_HAS(hay, needle)						\
	do {								\
		const char *h_ = (hay);					\
		FKV_ASSERT(h_ && strstr(h_, (needle)),			\
			   "want \"%s\" in: %s", (needle),		\
			   h_ ? h_ : "(null)");				\
	} while (0)
#define ASSERT_STREQ(a, b)						\
	do {								\
		const char *a_ = (a);					\
		FKV_ASSERT(a_ && !strcmp(a_, (b)),			\
			   "want \"%s\", got \"%s\"", (b),		\
			   a_ ? a_ : "(null)");				\
	} while (0)
/* snprintf that must not truncate */
#define FMT(buf, ...)							\
	FKV_ASSERT(snprintf((buf), sizeof(buf), __VA_ARGS__) <		\
		   (int)sizeof(buf), "path too long")

/* ---- helpers ----------------------------------------------------------- */

static uint64_t size_ok(const char *s)
{
	char err[256] = "";
	uint64_t v = 0;
	int ret = fkv_parse_size(s, &v, err, sizeof(err));

	FKV_ASSERT(ret == 0, "\"%s\": %d %s", s, ret, err);
	return v;
}

/* The message of a size that must be refused. */
static const char *size_bad(const char *s, char *err, size_t len)
{
	uint64_t v = 12345;
	int ret;

	err[0] = '\0';
	ret = fkv_parse_size(s, &v, err, len);
	FKV_ASSERT(ret == -EINVAL || ret == -ERANGE,
		   "\"%s\" accepted as %llu", s, (unsigned long long)v);
	FKV_ASSERT(v == 12345, "\"%s\": *out written on error", s);
	FKV_ASSERT(err[0] && !strchr(err, '\n'), "\"%s\": message \"%s\"", s,
		   err);
	return err;
}

static int parse(const char *yaml, struct fkv_config *c, char *err,
		 size_t len)
{
	return fkv_config_parse_buffer(yaml, strlen(yaml), "t.yaml", c, err,
				       len);
}

static void parse_ok(const char *yaml, struct fkv_config *c)
{
	char err[1024];
	int ret = parse(yaml, c, err, sizeof(err));

	FKV_ASSERT(ret == 0, "%d: %s", ret, err);
	FKV_ASSERT_EQ(c->errors.n, 0);
}

/* Parse @yaml, which must be refused; its messages stay in @err. */
static void parse_bad(const char *yaml, struct fkv_config *c, char *err,
		      size_t len)
{
	int ret = parse(yaml, c, err, len);

	FKV_ASSERT_EQ(ret, -EINVAL);
	FKV_ASSERT(c->errors.n > 0);
}

/* Write @text to @path (created 0644 or truncated). */
static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	FKV_ASSERT(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	FKV_ASSERT_EQ(fclose(f), 0);
}

/* A fresh directory for this test. */
static const char *tmp_make(void)
{
	FMT(tmpdir, "%s/t-XXXXXX", tmpbase);
	FKV_ASSERT(mkdtemp(tmpdir), "mkdtemp %s: %s", tmpdir, strerror(errno));
	return tmpdir;
}

static void mkdir_in(const char *dir, const char *name, char *out,
		     size_t len)
{
	snprintf(out, len, "%s/%s", dir, name);
	FKV_ASSERT(!mkdir(out, 0755), "mkdir %s: %s", out, strerror(errno));
}

/* A config naming @n paths with limits, instance "n1", cluster "c1". */
static void config_for(struct fkv_config *c, int n, const char *const *paths,
		       const char *const *limits)
{
	char *yaml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&yaml, &len);
	int i;

	FKV_ASSERT(f);
	fprintf(f, "fluxonkv_spec:\n  cluster_name: c1\n  instance: n1\n"
		"  large_file_paths:\n");
	for (i = 0; i < n; i++)
		fprintf(f, "    - \"%s\"\n", paths[i]);
	fprintf(f, "  large_limit_size:\n");
	for (i = 0; i < n; i++)
		fprintf(f, "    - %s\n", limits[i]);
	FKV_ASSERT_EQ(fclose(f), 0);
	parse_ok(yaml, c);
	free(yaml);
}

static bool msgs_have(const struct fkv_msgs *m, const char *needle)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (strstr(m->v[i], needle))
			return true;
	return false;
}

/*
 * Attach a @size-byte file in @dir as a loop device (detached again when
 * the last fd closes); skips the test where loop devices are unavailable.
 */
static int loop_attach(const char *dir, uint64_t size, char *dev, size_t len)
{
	struct loop_config cfg = { 0 };
	char img[PATH_MAX];
	int ctl, bfd, lfd = -1, n, tries;

	FMT(img, "%s/loop.img", dir);
	bfd = open(img, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	FKV_ASSERT(bfd >= 0 && !ftruncate(bfd, size));
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		FKV_SKIP("no /dev/loop-control: %s", strerror(errno));
	for (tries = 0; tries < 5 && lfd < 0; tries++) {
		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			FKV_SKIP("LOOP_CTL_GET_FREE: %s", strerror(errno));
		snprintf(dev, len, "/dev/loop%d", n);
		lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0)
			FKV_SKIP("%s: %s", dev, strerror(errno));
		cfg.fd = bfd;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg)) {
			if (errno != EBUSY)
				FKV_SKIP("LOOP_CONFIGURE: %s", strerror(errno));
			close(lfd);	/* raced with someone: next one */
			lfd = -1;
		}
	}
	close(ctl);
	close(bfd);
	if (lfd < 0)
		FKV_SKIP("no free loop device");
	return lfd;
}

/* ---- sizes ------------------------------------------------------------- */

FKV_TEST(size_plain_digits_are_bytes)
{
	FKV_ASSERT_EQ(size_ok("512"), 512);
	FKV_ASSERT_EQ(size_ok("4096"), 4096);
	FKV_ASSERT_EQ(size_ok("0000512"), 512);
	FKV_ASSERT_EQ(size_ok("4294967296"), 4 * GiB);
	FKV_ASSERT_EQ(size_ok("600B"), 600);
}

FKV_TEST(size_units_are_binary)
{
	FKV_ASSERT_EQ(size_ok("1KB"), 1024);
	FKV_ASSERT_EQ(size_ok("64MB"), 64 * MiB);
	FKV_ASSERT_EQ(size_ok("4GB"), 4 * GiB);
	FKV_ASSERT_EQ(size_ok("2TB"), 2 * TiB);
	/* the IEC spellings are synonyms */
	FKV_ASSERT_EQ(size_ok("1KiB"), 1024);
	FKV_ASSERT_EQ(size_ok("64MiB"), 64 * MiB);
	FKV_ASSERT_EQ(size_ok("2GiB"), 2 * GiB);
	FKV_ASSERT_EQ(size_ok("3TiB"), 3 * TiB);
}

FKV_TEST(size_units_ignore_case_and_may_follow_spaces)
{
	FKV_ASSERT_EQ(size_ok("4gb"), 4 * GiB);
	FKV_ASSERT_EQ(size_ok("4Gb"), 4 * GiB);
	FKV_ASSERT_EQ(size_ok("4 GiB"), 4 * GiB);
	FKV_ASSERT_EQ(size_ok("1.5  mb"), 3 * MiB / 2);
	FKV_ASSERT_EQ(size_ok("1024 b"), 1024);
}

FKV_TEST(size_fractions_are_exact_then_floored)
{
	FKV_ASSERT_EQ(size_ok("512.9B"), 512);
	FKV_ASSERT_EQ(size_ok("512.99999999999999999999999999B"), 512);
	FKV_ASSERT_EQ(size_ok("1.5GB"), 1610612736ULL);
	FKV_ASSERT_EQ(size_ok("0.5KB"), 512);
	FKV_ASSERT_EQ(size_ok("1.1KB"), 1024 + 102);	/* 1126.4 */
	FKV_ASSERT_EQ(size_ok("2.25MB"), 2 * MiB + MiB / 4);
	/* 1023.9999...: floating point would round this up to 1024 */
	FKV_ASSERT_EQ(size_ok("0.99999999999999999999999999KB"), 1023);
	FKV_ASSERT_EQ(size_ok("1.000000000001TB"), TiB + 1);	/* 1.0995 */
}

FKV_TEST(size_below_512_bytes_is_refused)
{
	char err[256];

	ASSERT_HAS(size_bad("511", err, sizeof(err)),
		   "511 bytes is below the minimum of 512 bytes");
	ASSERT_HAS(size_bad("511.9B", err, sizeof(err)),
		   "511 bytes is below the minimum of 512 bytes");
	ASSERT_HAS(size_bad("0.49KB", err, sizeof(err)),
		   "501 bytes is below the minimum");
	ASSERT_HAS(size_bad("0", err, sizeof(err)), "0 bytes is below");
	ASSERT_HAS(size_bad("0.1KB", err, sizeof(err)), "102 bytes is below");
}

FKV_TEST(size_unknown_unit_names_it_and_the_accepted_ones)
{
	char err[256];

	ASSERT_STREQ(size_bad("1.5XB", err, sizeof(err)),
		     "unknown unit \"XB\" (use B, KB, MB, GB, TB; binary units)");
	/* an exponent is no unit: "1e3" is refused, not 1000 */
	ASSERT_HAS(size_bad("1e3", err, sizeof(err)), "unknown unit \"e3\"");
	ASSERT_HAS(size_bad("4GB junk", err, sizeof(err)),
		   "unknown unit \"GB junk\"");
	ASSERT_HAS(size_bad("0x1000", err, sizeof(err)), "unknown unit \"x1000\"");
	ASSERT_HAS(size_bad("1_000_000", err, sizeof(err)), "unknown unit \"_000_000\"");
	ASSERT_HAS(size_bad("4PB", err, sizeof(err)), "unknown unit \"PB\"");
	ASSERT_HAS(size_bad("4G", err, sizeof(err)), "unknown unit \"G\"");
	ASSERT_HAS(size_bad("4GB\t", err, sizeof(err)), "unknown unit \"GB\\x09\"");
}

FKV_TEST(size_malformed_numbers_are_refused)
{
	char err[256];

	ASSERT_STREQ(size_bad("", err, sizeof(err)), "empty size");
	ASSERT_STREQ(size_bad("-1", err, sizeof(err)), "negative size");
	ASSERT_STREQ(size_bad("-1GB", err, sizeof(err)), "negative size");
	ASSERT_HAS(size_bad("+1024", err, sizeof(err)), "not a size");
	ASSERT_HAS(size_bad("nan", err, sizeof(err)), "not a size");
	ASSERT_HAS(size_bad("inf", err, sizeof(err)), "not a size");
	ASSERT_HAS(size_bad("GB", err, sizeof(err)), "not a size");
	ASSERT_HAS(size_bad(" 1GB", err, sizeof(err)), "not a size");
	ASSERT_HAS(size_bad(".5GB", err, sizeof(err)), "not a size");
	ASSERT_STREQ(size_bad("1.GB", err, sizeof(err)),
		     "a digit must follow '.'");
	ASSERT_HAS(size_bad("1.2.3", err, sizeof(err)), "unknown unit \".3\"");
	ASSERT_HAS(size_bad("1."
			    "00000000000000000000000000000000"
			    "000000000000000000000000000000001KB",
			    err, sizeof(err)), "more than 64 digits after '.'");
}

FKV_TEST(size_at_or_above_2_pow_63_is_too_large)
{
	char err[256];

	FKV_ASSERT_EQ(size_ok("9223372036854775807"), INT64_MAX);
	FKV_ASSERT_EQ(size_ok("8388607TB"), 8388607ULL * TiB);
	FKV_ASSERT_EQ(size_ok("8388607.99999999999999TB"),
		      8388607ULL * TiB + TiB - 1);
	ASSERT_STREQ(size_bad("9223372036854775808", err, sizeof(err)),
		     "too large (at most 2^63-1 bytes)");
	ASSERT_HAS(size_bad("8388608TB", err, sizeof(err)), "too large");
	ASSERT_HAS(size_bad("8796093022208GB", err, sizeof(err)), "too large");
	ASSERT_HAS(size_bad("99999999999999999999999999", err, sizeof(err)),
		   "too large");
	ASSERT_HAS(size_bad("18446744073709551617", err, sizeof(err)),
		   "too large");	/* 2^64 + 1 must not wrap to 1 */
}

FKV_TEST(size_error_buffer_may_be_absent_or_short)
{
	char err[8];
	uint64_t v;

	FKV_ASSERT_EQ(fkv_parse_size("1XB", &v, NULL, 0), -EINVAL);
	FKV_ASSERT_EQ(fkv_parse_size("1XB", &v, err, sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "unknown");
}

/* ---- the YAML file ----------------------------------------------------- */

FKV_TEST(config_empty_spec_takes_the_defaults)
{
	char host[HOST_NAME_MAX + 1] = "";
	struct fkv_config c;

	parse_ok("fluxonkv_spec: {}\n", &c);
	ASSERT_STREQ(c.cluster_name, "default");
	FKV_ASSERT_EQ(gethostname(host, sizeof(host)), 0);
	host[64] = '\0';
	FKV_ASSERT(c.instance_default);
	FKV_ASSERT(strlen(c.instance) == strlen(host) && c.instance[0]);
	FKV_EXPECT(!strcmp(c.instance, host) || strchr(c.instance, '_'),
		   "instance %s for host %s", c.instance, host);
	FKV_ASSERT(!c.ssd);
	FKV_ASSERT_EQ(c.npaths, 0);
	FKV_ASSERT_EQ(c.segment_mb, 0);
	FKV_ASSERT_EQ(c.warnings.n, 0);
	fkv_config_free(&c);

	/* "fluxonkv_spec:" with nothing under it is the same */
	parse_ok("fluxonkv_spec:\n", &c);
	FKV_ASSERT(!c.ssd);
	fkv_config_free(&c);
}

FKV_TEST(config_reference_example_enables_ssd_with_index_matched_limits)
{
	struct fkv_config c;

	parse_ok("fluxonkv_spec:\n"
		 "  large_file_paths: [/data/fluxon_large0, /data/fluxon_large1] # Derive\n"
		 "  large_limit_size: [\"4GB\", \"8GB\"]  # Limit\n", &c);
	FKV_ASSERT(c.ssd);
	FKV_ASSERT_EQ(c.npaths, 2);
	ASSERT_STREQ(c.paths[0], "/data/fluxon_large0");
	ASSERT_STREQ(c.paths[1], "/data/fluxon_large1");
	FKV_ASSERT_EQ(c.limits[0], 4 * GiB);
	FKV_ASSERT_EQ(c.limits[1], 8 * GiB);
	fkv_config_free(&c);
}

FKV_TEST(config_limits_mix_integers_and_size_strings)
{
	struct fkv_config c;

	parse_ok("fluxonkv_spec:\n"
		 "  cluster_name: prod-a\n"
		 "  instance: node_7.rack2\n"
		 "  segment_mb: 4096\n"
		 "  large_file_paths:\n    - /a\n    - /b/\n    - /c\n"
		 "  large_limit_size:\n    - 8589934592\n    - 512.9B\n"
		 "    - '1.5 GiB'\n"
		 "other_section: {ignored: true}\n", &c);
	ASSERT_STREQ(c.cluster_name, "prod-a");
	ASSERT_STREQ(c.instance, "node_7.rack2");
	FKV_ASSERT(!c.instance_default);
	FKV_ASSERT_EQ(c.segment_mb, 4096);
	FKV_ASSERT_EQ(c.npaths, 3);
	ASSERT_STREQ(c.paths[1], "/b/");
	FKV_ASSERT_EQ(c.limits[0], 8 * GiB);
	FKV_ASSERT_EQ(c.limits[1], 512);
	FKV_ASSERT_EQ(c.limits[2], 3 * GiB / 2);
	fkv_config_free(&c);
}

FKV_TEST(config_null_or_absent_limits_mean_no_ssd_tier)
{
	static const char *const docs[] = {
		"fluxonkv_spec:\n  large_file_paths: [/a]\n",
		"fluxonkv_spec:\n  large_file_paths: [/a]\n  large_limit_size: null\n",
		"fluxonkv_spec:\n  large_file_paths: [/a]\n  large_limit_size: ~\n",
		"fluxonkv_spec:\n  large_file_paths: [/a]\n  large_limit_size:\n",
		"fluxonkv_spec:\n  large_file_paths: [/a]\n  large_limit_size: !!null x\n",
	};
	struct fkv_config c;
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		parse_ok(docs[i], &c);
		FKV_ASSERT(!c.ssd, "doc %zu", i);
		FKV_ASSERT_EQ(c.npaths, 1);
		FKV_ASSERT(!c.limits);
		FKV_ASSERT(msgs_have(&c.warnings,
				     "large_file_paths is set but large_limit_size is not: no SSD tier"));
		fkv_config_free(&c);
	}
	/* a quoted "null" is a string, hence no list */
	FKV_ASSERT_EQ(parse("fluxonkv_spec:\n  large_limit_size: \"null\"\n",
			    &c, NULL, 0), -EINVAL);
	fkv_config_free(&c);
}

FKV_TEST(config_mismatched_lengths_name_both)
{
	char err[1024];
	struct fkv_config c;

	parse_bad("fluxonkv_spec:\n"
		  "  large_file_paths: [/a, /b]\n"
		  "  large_limit_size: [4GB]\n", &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 1);
	ASSERT_STREQ(c.errors.v[0],
		     "t.yaml:3:21: large_limit_size has 1 entry but large_file_paths has 2: they are matched by index and must have the same length");
	ASSERT_STREQ(err, c.errors.v[0]);
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec:\n"
		  "  large_file_paths: [/a]\n"
		  "  large_limit_size: [4GB, 1GB, 1GB]\n", &c, err, sizeof(err));
	ASSERT_HAS(err, "large_limit_size has 3 entries but large_file_paths has 1");
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec:\n"
		  "  large_file_paths: [/a]\n"
		  "  large_limit_size: []\n", &c, err, sizeof(err));
	ASSERT_HAS(err, "large_limit_size has 0 entries but large_file_paths has 1");
	fkv_config_free(&c);
}

FKV_TEST(config_limits_without_storage_are_refused)
{
	char err[1024];
	struct fkv_config c;

	parse_bad("fluxonkv_spec:\n  large_limit_size: [4GB]\n", &c, err,
		  sizeof(err));
	ASSERT_HAS(err, "t.yaml:2:21: large_limit_size is set but large_file_paths is absent: a process that contributes no storage cannot declare SSD limits");
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec:\n  large_file_paths: []\n"
		  "  large_limit_size: []\n", &c, err, sizeof(err));
	ASSERT_HAS(err, "large_file_paths is empty: a process that contributes no storage");
	fkv_config_free(&c);
}

FKV_TEST(config_bad_limit_names_its_index_value_and_position)
{
	char err[1024];
	struct fkv_config c;

	parse_bad("fluxonkv_spec:\n"
		  "  large_file_paths: [/a, /b, /c]\n"
		  "  large_limit_size:\n"
		  "    - 4GB\n"
		  "    - \"1.5XB\"\n"
		  "    - [1]\n", &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 2);
	ASSERT_STREQ(c.errors.v[0],
		     "t.yaml:5:7: large_limit_size[1]: \"1.5XB\": unknown unit \"XB\" (use B, KB, MB, GB, TB; binary units)");
	ASSERT_STREQ(c.errors.v[1],
		     "t.yaml:6:7: large_limit_size[2]: must be an integer (bytes) or a size string such as \"1.5GB\"");
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec:\n  large_file_paths: [/a]\n"
		  "  large_limit_size: [~]\n", &c, err, sizeof(err));
	ASSERT_HAS(err, "large_limit_size[0]: must be an integer (bytes)");
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec:\n  large_file_paths: [/a]\n"
		  "  large_limit_size: [-1]\n", &c, err, sizeof(err));
	ASSERT_HAS(err, "large_limit_size[0]: \"-1\": negative size");
	fkv_config_free(&c);
}

FKV_TEST(config_reports_every_error_in_line_order)
{
	char err[2048], *line, *save;
	struct fkv_config c;
	int n = 0;

	parse_bad("fluxonkv_spec:\n"
		  "  cluster_name: \"a/b\"\n"
		  "  large_file_paths: [/ok, relative/x, \"\"]\n"
		  "  large_limit_size: [\"4GB\", \"1.5XB\", 3]\n"
		  "  large_limit_sizes: 1\n"
		  "  segment_mb: 0\n", &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 7);
	ASSERT_HAS(c.errors.v[0], "t.yaml:2:17: cluster_name: \"a/b\": may only contain letters, digits, '.', '_' and '-'");
	ASSERT_HAS(c.errors.v[1], "t.yaml:3:27: large_file_paths[1]: \"relative/x\": must be an absolute path");
	ASSERT_HAS(c.errors.v[2], "t.yaml:3:39: large_file_paths[2]: is empty");
	ASSERT_HAS(c.errors.v[3], "t.yaml:4:29: large_limit_size[1]: \"1.5XB\": unknown unit");
	ASSERT_HAS(c.errors.v[4], "t.yaml:4:38: large_limit_size[2]: \"3\": 3 bytes is below the minimum");
	ASSERT_HAS(c.errors.v[5], "t.yaml:5:3: fluxonkv_spec: unknown key \"large_limit_sizes\"");
	ASSERT_HAS(c.errors.v[6], "t.yaml:6:15: segment_mb: \"0\": must be an integer from 1 to 16384");
	/* the same, one per line, in the caller's buffer */
	for (line = strtok_r(err, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		ASSERT_STREQ(line, c.errors.v[n++]);
	FKV_ASSERT_EQ(n, 7);
	fkv_config_free(&c);
}

FKV_TEST(config_unknown_and_duplicate_keys_are_refused)
{
	char err[1024];
	struct fkv_config c;

	parse_bad("fluxonkv_spec:\n  large_file_path: [/a]\n", &c, err,
		  sizeof(err));
	ASSERT_HAS(err, "t.yaml:2:3: fluxonkv_spec: unknown key \"large_file_path\" (known: cluster_name, instance, segment_mb, large_file_paths, large_limit_size, cluster, policy, high_watermark, low_watermark, log_level, tenants)");
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec:\n  instance: a\n  instance: b\n", &c, err,
		  sizeof(err));
	ASSERT_STREQ(err, "t.yaml:3:3: fluxonkv_spec: duplicate key instance");
	ASSERT_STREQ(c.instance, "a");
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec: {}\nfluxonkv_spec: {}\n", &c, err,
		  sizeof(err));
	ASSERT_HAS(err, "duplicate key fluxonkv_spec");
	fkv_config_free(&c);
}

FKV_TEST(config_names_must_be_one_safe_path_component)
{
	static const struct {
		const char *yaml, *msg;
	} bad[] = {
		{ "instance: ..", "instance: \"..\": must not start with '.'" },
		{ "instance: .hidden", "must not start with '.'" },
		{ "instance: \"\"", "instance: \"\": is empty" },
		{ "cluster_name: \"a b\"", "cluster_name: \"a b\": may only contain" },
		{ "cluster_name: \"x\\ny\"", "cluster_name: \"x\\x0ay\": may only contain" },
		{ "cluster_name: \"\\u00e9t\\u00e9\"", "\"\\xc3\\xa9t\\xc3\\xa9\": may only contain" },
		{ "instance: [a]", "instance: must be a string, not a list" },
		{ "instance: \"a\\0b\"", "instance: \"a\\x00b\": contains a NUL byte" },
		{ "instance: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		  "is longer than 64 bytes" },
	};
	char yaml[256], err[1024];
	struct fkv_config c;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FMT(yaml, "fluxonkv_spec:\n  %s\n",
			 bad[i].yaml);
		parse_bad(yaml, &c, err, sizeof(err));
		ASSERT_HAS(err, bad[i].msg);
		fkv_config_free(&c);
	}
	/* numbers are names too; null means the default */
	parse_ok("fluxonkv_spec:\n  instance: 7\n  cluster_name: ~\n", &c);
	ASSERT_STREQ(c.instance, "7");
	ASSERT_STREQ(c.cluster_name, "default");
	fkv_config_free(&c);
	parse_ok("fluxonkv_spec:\n  instance: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", &c);
	FKV_ASSERT_EQ(strlen(c.instance), 64);
	fkv_config_free(&c);
}

FKV_TEST(config_paths_must_be_absolute_strings)
{
	char err[1024];
	struct fkv_config c;

	parse_bad("fluxonkv_spec:\n  large_file_paths: [data, ~, {a: b}]\n",
		  &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 3);
	ASSERT_HAS(c.errors.v[0], "large_file_paths[0]: \"data\": must be an absolute path");
	ASSERT_HAS(c.errors.v[1], "large_file_paths[1]: is empty");
	ASSERT_HAS(c.errors.v[2], "large_file_paths[2]: must be a string, not a mapping");
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec:\n  large_file_paths: /data\n", &c, err,
		  sizeof(err));
	ASSERT_HAS(err, "large_file_paths: must be a list (write [a, b] or one \"- item\" per line)");
	fkv_config_free(&c);
}

FKV_TEST(config_segment_mb_is_a_module_parameter_range)
{
	char err[1024];
	struct fkv_config c;

	parse_ok("fluxonkv_spec:\n  segment_mb: 16384\n", &c);
	FKV_ASSERT_EQ(c.segment_mb, 16384);
	fkv_config_free(&c);
	parse_ok("fluxonkv_spec:\n  segment_mb: 1\n", &c);
	FKV_ASSERT_EQ(c.segment_mb, 1);
	fkv_config_free(&c);
	parse_bad("fluxonkv_spec:\n  segment_mb: 16385\n", &c, err, sizeof(err));
	ASSERT_HAS(err, "segment_mb: \"16385\": must be an integer from 1 to 16384 (MiB)");
	fkv_config_free(&c);
	parse_bad("fluxonkv_spec:\n  segment_mb: 64MB\n", &c, err, sizeof(err));
	ASSERT_HAS(err, "segment_mb: \"64MB\": must be an integer");
	fkv_config_free(&c);
	parse_bad("fluxonkv_spec:\n  segment_mb: 99999999999999999999999\n", &c,
		  err, sizeof(err));
	ASSERT_HAS(err, "segment_mb:");
	fkv_config_free(&c);
}

FKV_TEST(config_document_shape_errors)
{
	static const struct {
		const char *yaml, *msg;
	} bad[] = {
		{ "", "t.yaml: empty configuration: no fluxonkv_spec mapping" },
		{ "# only a comment\n", "empty configuration" },
		{ "other: 1\n", "t.yaml: no fluxonkv_spec mapping" },
		{ "- fluxonkv_spec\n", "t.yaml:1:1: the top level must be a mapping with a fluxonkv_spec key" },
		{ "fluxonkv_spec: [1]\n", "t.yaml:1:16: fluxonkv_spec: must be a mapping" },
		{ "fluxonkv_spec: {a: [}\n", "t.yaml:1:21: invalid YAML: " },
		{ "fluxonkv_spec:\n  large_file_paths: [/a\n", "invalid YAML" },
		{ "fluxonkv_spec:\n\tsegment_mb: 1\n", "t.yaml:2:1: invalid YAML: found character that cannot start any token" },
		{ "fluxonkv_spec: {}\n---\nfluxonkv_spec: {}\n", "more than one YAML document" },
		{ "fluxonkv_spec: *nowhere\n", "invalid YAML: found undefined alias" },
		{ "fluxonkv_spec: {[a]: 1}\n", "fluxonkv_spec: keys must be strings" },
	};
	char err[1024];
	struct fkv_config c;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		parse_bad(bad[i].yaml, &c, err, sizeof(err));
		FKV_ASSERT(strstr(err, bad[i].msg), "doc %zu: want \"%s\" in: %s",
			   i, bad[i].msg, err);
		fkv_config_free(&c);
	}
}

FKV_TEST(config_anchors_and_aliases_resolve)
{
	struct fkv_config c;

	parse_ok("defaults: &lim 2GB\n"
		 "fluxonkv_spec:\n"
		 "  large_file_paths: [/a, /b]\n"
		 "  large_limit_size: [*lim, *lim]\n", &c);
	FKV_ASSERT_EQ(c.limits[0], 2 * GiB);
	FKV_ASSERT_EQ(c.limits[1], 2 * GiB);
	fkv_config_free(&c);
}

FKV_TEST(config_load_reads_a_file_and_names_it)
{
	char path[PATH_MAX], err[1024];
	struct fkv_config c;
	FILE *f;

	FMT(path, "%s/node.yaml", tmp_make());
	FKV_ASSERT_EQ(fkv_config_load(path, &c, err, sizeof(err)), -ENOENT);
	ASSERT_HAS(err, "node.yaml: No such file or directory");
	fkv_config_free(&c);

	f = fopen(path, "w");
	FKV_ASSERT(f);
	fputs("fluxonkv_spec:\n  large_file_paths: [/a]\n"
	      "  large_limit_size: [1ZB]\n", f);
	fclose(f);
	FKV_ASSERT_EQ(fkv_config_load(path, &c, err, sizeof(err)), -EINVAL);
	FKV_ASSERT(!strncmp(err, path, strlen(path)), "%s", err);
	ASSERT_HAS(err, "node.yaml:3:22: large_limit_size[0]: \"1ZB\": unknown unit \"ZB\"");
	fkv_config_free(&c);

	FKV_ASSERT_EQ(fkv_config_load(tmpdir, &c, err, sizeof(err)), -EISDIR);
	fkv_config_free(&c);

	/* a configuration is small: more than 1 MiB is some other file */
	f = fopen(path, "w");
	FKV_ASSERT(f);
	fputs("fluxonkv_spec: {}\n", f);
	FKV_ASSERT_EQ(fseek(f, 2 * MiB, SEEK_SET), 0);
	fputs("#\n", f);
	fclose(f);
	FKV_ASSERT_EQ(fkv_config_load(path, &c, err, sizeof(err)), -EFBIG);
	ASSERT_HAS(err, "node.yaml: larger than 1048576 bytes: not a configuration file");
	fkv_config_free(&c);
}

/* ---- host:port --------------------------------------------------------- */

/* @s must parse as @host and @port. */
static void hp_ok(const char *s, const char *host, unsigned int port)
{
	char h[FKV_HOST_BUF], err[256] = "";
	uint16_t p = 0;
	int ret = fkv_parse_hostport(s, h, sizeof(h), &p, err, sizeof(err));

	FKV_ASSERT(ret == 0, "\"%s\": %d %s", s, ret, err);
	ASSERT_STREQ(h, host);
	FKV_ASSERT_EQ(p, port);
}

/*
 * @s must be refused with a single-line message containing @msg, leaving
 * the outputs untouched.
 */
static void hp_bad(const char *s, const char *msg)
{
	char h[FKV_HOST_BUF] = "untouched", err[512] = "";
	uint16_t p = 4242;
	int ret = fkv_parse_hostport(s, h, sizeof(h), &p, err, sizeof(err));

	FKV_ASSERT(ret == -EINVAL, "\"%s\" accepted as %s port %u (%d)", s, h,
		   p, ret);
	ASSERT_STREQ(h, "untouched");
	FKV_ASSERT_EQ(p, 4242);
	FKV_ASSERT(err[0] && !strchr(err, '\n'), "\"%s\": message \"%s\"", s,
		   err);
	ASSERT_HAS(err, msg);
}

FKV_TEST(hostport_accepts_names_ipv4_and_bracketed_ipv6)
{
	char name[300], s[320];

	hp_ok("10.77.0.1:7470", "10.77.0.1", 7470);
	hp_ok("0.0.0.0:7471", "0.0.0.0", 7471);
	hp_ok("255.255.255.255:65535", "255.255.255.255", 65535);
	hp_ok("1.2.3.0:1", "1.2.3.0", 1);
	hp_ok("localhost:80", "localhost", 80);
	hp_ok("node-a.lan:7471", "node-a.lan", 7471);
	hp_ok("kv_0.svc.cluster.local:443", "kv_0.svc.cluster.local", 443);
	hp_ok("a:1", "a", 1);
	hp_ok("7.example:9", "7.example", 9);	/* numeric label, named host */
	hp_ok("10.77.0.1a:9", "10.77.0.1a", 9);	/* a letter: a name */
	hp_ok("[::1]:7470", "::1", 7470);
	hp_ok("[::]:7471", "::", 7471);
	hp_ok("[fe80::1:2]:9", "fe80::1:2", 9);
	hp_ok("[2001:db8::10.0.0.1]:5", "2001:db8::10.0.0.1", 5);
	hp_ok("[::ffff:10.0.0.1]:5", "::ffff:10.0.0.1", 5);
	/* a 63-byte label and a 253-byte name are the limits */
	memset(name, 'a', 63);
	name[63] = '\0';
	FMT(s, "%s.b:1", name);
	strcat(name, ".b");
	hp_ok(s, name, 1);
	memset(name, 'a', 253);
	name[253] = '\0';
	for (int i = 50; i < 253; i += 51)
		name[i] = '.';
	FMT(s, "%s:1", name);
	hp_ok(s, name, 1);
}

FKV_TEST(hostport_ports_are_1_to_65535_plain_decimal)
{
	hp_ok("a:65535", "a", 65535);
	hp_ok("a:1", "a", 1);
	hp_bad("a:0", "port \"0\": must be a decimal number from 1 to 65535");
	hp_bad("a:65536", "port \"65536\": must be a decimal number from 1 to 65535");
	hp_bad("a:99999999999999999999", "port \"99999999999999999999\": must be");
	hp_bad("a:", "port \"\": must be a decimal number");
	/* leading zeros are refused: "07470" reads as octal to some tools */
	hp_bad("a:07470",
	       "port \"07470\": must be a decimal number from 1 to 65535 without leading zeros");
	hp_bad("a:00", "without leading zeros");
	hp_bad("a:-1", "port \"-1\"");
	hp_bad("a:+80", "port \"+80\"");
	hp_bad("a: 80", "port \" 80\"");
	hp_bad("a:80 ", "port \"80 \"");
	hp_bad("a:0x50", "port \"0x50\"");
	hp_bad("a:80a", "port \"80a\"");
	hp_bad("a:8\x01", "port \"8\\x01\"");
	hp_bad("[::1]:0", "port \"0\"");
}

FKV_TEST(hostport_shape_errors_name_the_problem)
{
	hp_bad("", "empty address (want host:port)");
	hp_bad("a", "no :port (want host:port)");
	hp_bad("10.0.0.1", "no :port (want host:port)");
	hp_bad(":80", "host \"\" is empty");
	/* IPv6 without brackets: which colon is the port's? */
	hp_bad("::1:80", "more than one ':': write an IPv6 address in brackets, e.g. \"[::1]:7470\"");
	hp_bad("fe80::1", "more than one ':'");
	hp_bad("a:80:81", "more than one ':'");
	/* brackets */
	hp_bad("[::1", "'[' without ']' (want [IPv6]:port)");
	hp_bad("[::1:80", "'[' without ']'");
	hp_bad("::1]:80", "']' without '[' (want [IPv6]:port)");
	hp_bad("a]:80", "']' without '['");
	hp_bad("a[::1]:80", "'[' may only open the host (want [IPv6]:port)");
	hp_bad("[::1]", "no :port after ']' (want [IPv6]:port)");
	hp_bad("[::1]80", "\"80\" after ']' (want [IPv6]:port)");
	hp_bad("[::1]]:80", "\"]:80\" after ']'");
	hp_bad("[]:80", "host \"\" is empty");
	hp_bad("[[::1]:80", "host \"[::1\" is not an IPv6 address");
	hp_bad("[[::1]]:80", "\"]:80\" after ']'");
	hp_bad("[10.0.0.1]:80", "host \"10.0.0.1\" is not an IPv6 address");
	hp_bad("[node-a]:80", "is not an IPv6 address");
	hp_bad("[::1::2]:80", "is not an IPv6 address");
	hp_bad("[fe80::1%eth0]:80", "host \"fe80::1%eth0\" has a zone (%...): not supported");
	hp_bad("[0000:0000:0000:0000:0000:0000:0000:0000:0]:1",
	       "is not an IPv6 address");
}

FKV_TEST(hostport_hosts_are_dns_names_or_strict_ipv4)
{
	char name[300], s[320];

	/* digits and dots only: an IPv4 address, strictly */
	hp_bad("256.1.1.1:1", "host \"256.1.1.1\" is not an IPv4 address (four decimal numbers 0..255 without leading zeros, e.g. 10.0.0.1)");
	hp_bad("1.2.3:1", "host \"1.2.3\" is not an IPv4 address");
	hp_bad("1.2.3.4.5:1", "is not an IPv4 address");
	hp_bad("010.0.0.1:1", "host \"010.0.0.1\" is not an IPv4 address");
	hp_bad("1.2.3.04:1", "is not an IPv4 address");
	hp_bad("1..2.3:1", "is not an IPv4 address");
	hp_bad("1.2.3.4.:1", "is not an IPv4 address");
	hp_bad("1234.1.1.1:1", "is not an IPv4 address");
	hp_bad("7470:1", "host \"7470\" is not an IPv4 address");
	/* names */
	hp_bad("-a:1", "host \"-a\" has a label starting with '-'");
	hp_bad("a-:1", "host \"a-\" has a label ending with '-'");
	hp_bad("a.-b:1", "has a label starting with '-'");
	hp_bad("a-.b:1", "has a label ending with '-'");
	hp_bad("a..b:1", "host \"a..b\" has an empty label (a leading, trailing or doubled '.')");
	hp_bad(".a:1", "has an empty label");
	hp_bad("a.:1", "has an empty label");
	hp_bad("a b:1", "host \"a b\" may only contain letters, digits, '-', '_' and '.' (a DNS name), or be an IPv4 address or [IPv6]");
	hp_bad("a/b:1", "may only contain letters");
	hp_bad("*:1", "host \"*\" may only contain");
	hp_bad("a\x01:1", "host \"a\\x01\" may only contain");
	hp_bad("a\x7f:1", "host \"a\\x7f\" may only contain");
	hp_bad("\xc3\xa9t\xc3\xa9:1", "host \"\\xc3\\xa9t\\xc3\\xa9\" may only contain");
	hp_bad("a\tb:1", "host \"a\\x09b\"");
	/* a 64-byte label; a 254-byte name */
	memset(name, 'a', 64);
	name[64] = '\0';
	FMT(s, "%s:1", name);
	hp_bad(s, "has a label longer than 63 bytes");
	memset(name, 'a', 254);
	name[254] = '\0';
	for (int i = 50; i < 254; i += 51)
		name[i] = '.';
	FMT(s, "%s:1", name);
	hp_bad(s, "is longer than 253 bytes");
}

FKV_TEST(hostport_small_buffers_are_refused_not_overrun)
{
	char h[8] = "xxxxxxx", err[256], tiny[6];
	uint16_t p = 7;

	FKV_ASSERT_EQ(fkv_parse_hostport("abcdefgh:1", h, sizeof(h), &p, err,
					 sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "host is longer than 7 bytes");
	ASSERT_STREQ(h, "xxxxxxx");
	FKV_ASSERT_EQ(p, 7);
	FKV_ASSERT_EQ(fkv_parse_hostport("abcdefg:1", h, sizeof(h), &p, NULL,
					 0), 0);
	ASSERT_STREQ(h, "abcdefg");
	FKV_ASSERT_EQ(p, 1);
	/* no message buffer, or a short one */
	FKV_ASSERT_EQ(fkv_parse_hostport("a:0", h, sizeof(h), &p, NULL, 0),
		      -EINVAL);
	FKV_ASSERT_EQ(fkv_parse_hostport("a:0", h, sizeof(h), &p, tiny,
					 sizeof(tiny)), -EINVAL);
	ASSERT_STREQ(tiny, "port ");
}

FKV_TEST(hostport_wildcards_and_formatting)
{
	static const char *const any[] = {
		"0.0.0.0", "::", "0:0::0", "0:0:0:0:0:0:0:0", "::ffff:0.0.0.0",
	};
	static const char *const not_any[] = {
		"127.0.0.1", "0.0.0.1", "::1", "::ffff:127.0.0.1", "a", "zero",
	};
	struct fkv_hostport hp = { .port = 7470 };
	char buf[FKV_HOSTPORT_BUF], h[FKV_HOST_BUF];
	uint16_t port;
	size_t i;

	for (i = 0; i < sizeof(any) / sizeof(any[0]); i++)
		FKV_ASSERT(fkv_host_is_wildcard(any[i]), "%s", any[i]);
	for (i = 0; i < sizeof(not_any) / sizeof(not_any[0]); i++)
		FKV_ASSERT(!fkv_host_is_wildcard(not_any[i]), "%s", not_any[i]);

	strcpy(hp.host, "10.77.0.1");
	ASSERT_STREQ(fkv_hostport_str(buf, sizeof(buf), &hp), "10.77.0.1:7470");
	strcpy(hp.host, "fe80::1");
	ASSERT_STREQ(fkv_hostport_str(buf, sizeof(buf), &hp), "[fe80::1]:7470");
	/* what it writes parses back to the same */
	FKV_ASSERT_EQ(fkv_parse_hostport(buf, h, sizeof(h), &port, NULL, 0), 0);
	ASSERT_STREQ(h, "fe80::1");
	FKV_ASSERT_EQ(port, 7470);
}

/* ---- the cluster section ----------------------------------------------- */

/* fluxonkv_spec with instance n1 and a cluster mapping from line 4 on. */
#define SPEC	"fluxonkv_spec:\n  instance: n1\n  cluster:\n"
#define SECRET	"0123456789abcdef"	/* 16 bytes: the shortest */
/* The required keys, lines 4-7. */
#define CL_MIN	"    role: node\n"					\
		"    master: 10.77.0.1:7470\n"				\
		"    listen: 10.77.0.2:7471\n"				\
		"    secret: \"" SECRET "\"\n"

/* No message of @c mentions @secret. */
static void assert_secret_unsaid(const struct fkv_config *c,
				 const char *err, const char *secret)
{
	size_t i;

	FKV_ASSERT(!strstr(err, secret), "secret in: %s", err);
	for (i = 0; i < c->errors.n; i++)
		FKV_ASSERT(!strstr(c->errors.v[i], secret), "secret in: %s",
			   c->errors.v[i]);
	for (i = 0; i < c->warnings.n; i++)
		FKV_ASSERT(!strstr(c->warnings.v[i], secret), "secret in: %s",
			   c->warnings.v[i]);
}

/* @yaml must be refused with @msg among its errors. */
static void cl_bad(const char *yaml, const char *msg)
{
	char err[4096];
	struct fkv_config c;

	parse_bad(yaml, &c, err, sizeof(err));
	FKV_ASSERT(msgs_have(&c.errors, msg), "want \"%s\" in: %s", msg, err);
	fkv_config_free(&c);
}

/* A file @name in this test's directory with @len bytes and @mode. */
static const char *secret_file(const char *name, const void *text,
			       size_t len, mode_t mode)
{
	static char path[PATH_MAX];
	int fd;

	FMT(path, "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FKV_ASSERT(fd >= 0, "%s: %s", path, strerror(errno));
	FKV_ASSERT_EQ(write(fd, text, len), (ssize_t)len);
	FKV_ASSERT_EQ(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

/* A config whose cluster secret is the file @path. */
static int parse_secret_file(const char *path, struct fkv_config *c,
			     char *err, size_t len)
{
	char yaml[PATH_MAX + 256];

	FMT(yaml, SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	    "    listen: 10.77.0.2:7471\n    secret_file: \"%s\"\n", path);
	return parse(yaml, c, err, len);
}

FKV_TEST(cluster_absent_or_null_is_a_single_node)
{
	static const char *const docs[] = {
		"fluxonkv_spec:\n  instance: n1\n",
		SPEC,
		"fluxonkv_spec:\n  cluster: ~\n",
		"fluxonkv_spec:\n  cluster: null\n",
		"fluxonkv_spec: {cluster: }\n",
	};
	struct fkv_cluster_config zero = { 0 };
	struct fkv_config c;
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		parse_ok(docs[i], &c);
		FKV_ASSERT(!c.cluster.present, "doc %zu", i);
		FKV_ASSERT(!memcmp(&c.cluster, &zero, sizeof(zero)),
			   "doc %zu: fields set", i);
		fkv_config_free(&c);
	}
}

FKV_TEST(cluster_full_section_is_parsed)
{
	struct fkv_config c;

	parse_ok("fluxonkv_spec:\n"
		 "  cluster_name: prod\n"
		 "  instance: n1\n"
		 "  cluster:\n"
		 "    node_name: a\n"
		 "    role: master\n"
		 "    master: 10.77.0.1:7470\n"
		 "    listen: 0.0.0.0:7471\n"
		 "    advertise: node-a.lan:7471\n"
		 "    transport: rdma\n"
		 "    secret: \"at-least-16-bytes\"\n"
		 "    heartbeat_ms: 250\n"
		 "    dead_after_ms: 501\n"
		 "    state_dir: /srv/fluxonkv\n", &c);
	FKV_ASSERT(c.cluster.present);
	ASSERT_STREQ(c.cluster.node_name, "a");
	FKV_ASSERT(!c.cluster.node_name_default);
	FKV_ASSERT_EQ(c.cluster.role, FKV_ROLE_MASTER);
	ASSERT_STREQ(c.cluster.master.host, "10.77.0.1");
	FKV_ASSERT_EQ(c.cluster.master.port, 7470);
	ASSERT_STREQ(c.cluster.listen.host, "0.0.0.0");
	FKV_ASSERT_EQ(c.cluster.listen.port, 7471);
	ASSERT_STREQ(c.cluster.advertise.host, "node-a.lan");
	FKV_ASSERT_EQ(c.cluster.advertise.port, 7471);
	FKV_ASSERT(!c.cluster.advertise_default);
	FKV_ASSERT_EQ(c.cluster.transport, FKV_TRANSPORT_RDMA);
	FKV_ASSERT_EQ(c.cluster.secret_len, 17);
	FKV_ASSERT(!memcmp(c.cluster.secret, "at-least-16-bytes", 18));
	FKV_ASSERT_EQ(c.cluster.secret_source, FKV_SECRET_INLINE);
	FKV_ASSERT(c.cluster.secret_file == NULL);
	FKV_ASSERT_EQ(c.cluster.heartbeat_ms, 250);
	FKV_ASSERT_EQ(c.cluster.dead_after_ms, 501);
	ASSERT_STREQ(c.cluster.state_dir, "/srv/fluxonkv");
	FKV_ASSERT_EQ(c.warnings.n, 0);
	ASSERT_STREQ(fkv_cluster_role_name(c.cluster.role), "master");
	ASSERT_STREQ(fkv_transport_name(c.cluster.transport), "rdma");
	fkv_config_free(&c);

	/* the other enum values, an IPv6 master, a quoted number */
	parse_ok(SPEC "    role: node\n    master: \"[fd00::1]:7470\"\n"
		 "    listen: \"[fd00::2]:7471\"\n    transport: auto\n"
		 "    secret: \"" SECRET "\"\n    heartbeat_ms: \"50\"\n", &c);
	FKV_ASSERT_EQ(c.cluster.role, FKV_ROLE_NODE);
	FKV_ASSERT_EQ(c.cluster.transport, FKV_TRANSPORT_AUTO);
	ASSERT_STREQ(c.cluster.master.host, "fd00::1");
	ASSERT_STREQ(c.cluster.advertise.host, "fd00::2");
	FKV_ASSERT_EQ(c.cluster.heartbeat_ms, 50);
	fkv_config_free(&c);
}

FKV_TEST(cluster_defaults_node_name_advertise_transport_and_timing)
{
	struct fkv_config c;

	parse_ok(SPEC CL_MIN, &c);
	FKV_ASSERT(c.cluster.present);
	ASSERT_STREQ(c.cluster.node_name, "n1");	/* the instance */
	FKV_ASSERT(c.cluster.node_name_default);
	ASSERT_STREQ(c.cluster.advertise.host, "10.77.0.2");	/* listen */
	FKV_ASSERT_EQ(c.cluster.advertise.port, 7471);
	FKV_ASSERT(c.cluster.advertise_default);
	FKV_ASSERT_EQ(c.cluster.transport, FKV_TRANSPORT_TCP);
	FKV_ASSERT_EQ(c.cluster.heartbeat_ms, 1000);
	FKV_ASSERT_EQ(c.cluster.dead_after_ms, 5000);
	ASSERT_STREQ(c.cluster.state_dir, FKV_STATE_DIR_DEFAULT);
	FKV_ASSERT_EQ(c.cluster.secret_len, 16);
	FKV_ASSERT_EQ(c.cluster.secret[16], '\0');
	fkv_config_free(&c);

	/* null keys are not set; instance written after the cluster counts */
	parse_ok("fluxonkv_spec:\n  cluster:\n" CL_MIN
		 "    node_name: ~\n    transport:\n    advertise: null\n"
		 "    heartbeat_ms: ~\n    dead_after_ms: ~\n"
		 "  instance: late\n", &c);
	ASSERT_STREQ(c.cluster.node_name, "late");
	FKV_ASSERT(c.cluster.advertise_default);
	FKV_ASSERT_EQ(c.cluster.transport, FKV_TRANSPORT_TCP);
	FKV_ASSERT_EQ(c.cluster.dead_after_ms, 5000);
	fkv_config_free(&c);

	/* no instance: node_name is the host name's instance */
	parse_ok("fluxonkv_spec:\n  cluster:\n" CL_MIN, &c);
	FKV_ASSERT(c.instance_default && c.cluster.node_name_default);
	ASSERT_STREQ(c.cluster.node_name, c.instance);
	fkv_config_free(&c);
}

FKV_TEST(cluster_requires_role_master_listen_and_a_secret)
{
	char err[2048];
	struct fkv_config c;

	parse_bad(SPEC "    node_name: a\n", &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 4);
	ASSERT_STREQ(c.errors.v[0],
		     "t.yaml:4:5: cluster: role is required (master or node)");
	ASSERT_STREQ(c.errors.v[1],
		     "t.yaml:4:5: cluster: master is required (host:port of the master's control listener)");
	ASSERT_STREQ(c.errors.v[2],
		     "t.yaml:4:5: cluster: listen is required (host:port of this node's data-plane listener)");
	ASSERT_STREQ(c.errors.v[3],
		     "t.yaml:4:5: cluster: a shared secret is required: set secret or secret_file (16 to 1024 bytes)");
	fkv_config_free(&c);

	/* an empty mapping is a cluster section too, not a single node */
	parse_bad("fluxonkv_spec:\n  cluster: {}\n", &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 4);
	fkv_config_free(&c);

	/* null counts as absent for required keys */
	cl_bad(SPEC "    role: ~\n    master: 10.77.0.1:7470\n"
	       "    listen: 10.77.0.2:7471\n    secret: \"" SECRET "\"\n",
	       "cluster: role is required");

	cl_bad("fluxonkv_spec:\n  cluster: 5\n",
	       "t.yaml:2:12: cluster: must be a mapping (or null for a single node)");
	cl_bad("fluxonkv_spec:\n  cluster: [a]\n", "cluster: must be a mapping");
	cl_bad("fluxonkv_spec:\n  cluster: \"\"\n", "cluster: must be a mapping");
}

FKV_TEST(cluster_unknown_and_duplicate_keys_are_refused)
{
	char err[2048];
	struct fkv_config c;

	parse_bad(SPEC CL_MIN "    heartbeat: 1000\n", &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 1);
	ASSERT_STREQ(c.errors.v[0],
		     "t.yaml:8:5: cluster: unknown key \"heartbeat\" (known: node_name, role, master, listen, advertise, transport, secret, secret_file, heartbeat_ms, dead_after_ms, state_dir, lease_ms, etcd, master_candidate)");
	fkv_config_free(&c);

	parse_bad(SPEC CL_MIN "    role: master\n", &c, err, sizeof(err));
	ASSERT_STREQ(err, "t.yaml:8:5: cluster: duplicate key role");
	FKV_ASSERT_EQ(c.cluster.role, FKV_ROLE_NODE);	/* the first one */
	fkv_config_free(&c);

	/* a repeated key is one even when the first was null */
	cl_bad(SPEC "    transport: ~\n" CL_MIN "    transport: tcp\n",
	       "t.yaml:9:5: cluster: duplicate key transport");
	cl_bad(SPEC CL_MIN "    ? [a]\n    : b\n", "cluster: keys must be strings");
	/* cluster itself may appear once */
	cl_bad(SPEC CL_MIN "  cluster: ~\n",
	       "t.yaml:8:3: fluxonkv_spec: duplicate key cluster");
	/* fluxonkv_spec's list of known keys names cluster */
	cl_bad("fluxonkv_spec:\n  clusters: ~\n",
	       "fluxonkv_spec: unknown key \"clusters\" (known: cluster_name, instance, segment_mb, large_file_paths, large_limit_size, cluster, policy, high_watermark, low_watermark, log_level, tenants)");
}

FKV_TEST(cluster_role_and_transport_are_closed_lists)
{
	cl_bad(SPEC "    role: Master\n    master: 10.77.0.1:7470\n"
	       "    listen: 10.77.0.2:7471\n    secret: \"" SECRET "\"\n",
	       "t.yaml:4:11: cluster.role: \"Master\": must be master or node");
	cl_bad(SPEC "    role: worker\n    master: 10.77.0.1:7470\n"
	       "    listen: 10.77.0.2:7471\n    secret: \"" SECRET "\"\n",
	       "cluster.role: \"worker\": must be master or node");
	cl_bad(SPEC "    role: [node]\n    master: 10.77.0.1:7470\n"
	       "    listen: 10.77.0.2:7471\n    secret: \"" SECRET "\"\n",
	       "cluster.role: must be a string, not a list");
	cl_bad(SPEC CL_MIN "    transport: TCP\n",
	       "t.yaml:8:16: cluster.transport: \"TCP\": must be tcp, rdma or auto");
	cl_bad(SPEC CL_MIN "    transport: udp\n",
	       "cluster.transport: \"udp\": must be tcp, rdma or auto");
	cl_bad(SPEC CL_MIN "    transport: {a: b}\n",
	       "cluster.transport: must be a string, not a mapping");
}

FKV_TEST(cluster_node_name_is_checked_like_instance)
{
	cl_bad(SPEC CL_MIN "    node_name: \"a/b\"\n",
	       "t.yaml:8:16: cluster.node_name: \"a/b\": may only contain letters, digits, '.', '_' and '-'");
	cl_bad(SPEC CL_MIN "    node_name: .a\n",
	       "cluster.node_name: \".a\": must not start with '.'");
	cl_bad(SPEC CL_MIN "    node_name: \"\"\n",
	       "cluster.node_name: \"\": is empty");
	cl_bad(SPEC CL_MIN "    node_name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	       "cluster.node_name: \"aaaa");
}

FKV_TEST(cluster_addresses_are_checked_and_dialed_ones_are_no_wildcards)
{
	struct fkv_config c;

	cl_bad(SPEC "    role: node\n    master: 10.77.0.1:0\n"
	       "    listen: 10.77.0.2:7471\n    secret: \"" SECRET "\"\n",
	       "t.yaml:5:13: cluster.master: \"10.77.0.1:0\": port \"0\": must be a decimal number from 1 to 65535");
	cl_bad(SPEC "    role: node\n    master: 10.77.0.1\n"
	       "    listen: 10.77.0.2:7471\n    secret: \"" SECRET "\"\n",
	       "cluster.master: \"10.77.0.1\": no :port (want host:port)");
	cl_bad(SPEC "    role: node\n    master: \"::1:7470\"\n"
	       "    listen: 10.77.0.2:7471\n    secret: \"" SECRET "\"\n",
	       "cluster.master: \"::1:7470\": more than one ':': write an IPv6 address in brackets");
	cl_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	       "    listen: \"n 2:7471\"\n    secret: \"" SECRET "\"\n",
	       "t.yaml:6:13: cluster.listen: \"n 2:7471\": host \"n 2\" may only contain");
	cl_bad(SPEC CL_MIN "    advertise: 10.77.0.2:65536\n",
	       "t.yaml:8:16: cluster.advertise: \"10.77.0.2:65536\": port \"65536\"");
	cl_bad(SPEC CL_MIN "    advertise: [10.77.0.2:7471]\n",
	       "cluster.advertise: must be a string, not a list");
	/* unquoted, [IPv6] is a YAML flow list: the file is refused */
	cl_bad(SPEC "    master: [::1]:7470\n", "invalid YAML");

	/* a wildcard listen needs an advertise address */
	cl_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	       "    listen: 0.0.0.0:7471\n    secret: \"" SECRET "\"\n",
	       "t.yaml:6:13: cluster.listen: \"0.0.0.0:7471\" is a wildcard address, which peers cannot dial: set cluster.advertise");
	cl_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	       "    listen: \"[::]:7471\"\n    secret: \"" SECRET "\"\n",
	       "cluster.listen: \"[::]:7471\" is a wildcard address");
	parse_ok(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
		 "    listen: \"[::]:7471\"\n    advertise: \"[fd00::2]:7471\"\n"
		 "    secret: \"" SECRET "\"\n", &c);
	ASSERT_STREQ(c.cluster.listen.host, "::");
	ASSERT_STREQ(c.cluster.advertise.host, "fd00::2");
	fkv_config_free(&c);

	/* advertise and master are dialed: never a wildcard */
	cl_bad(SPEC CL_MIN "    advertise: 0.0.0.0:7471\n",
	       "t.yaml:8:16: cluster.advertise: \"0.0.0.0:7471\": a wildcard address cannot be dialed: give one peers can reach");
	cl_bad(SPEC "    role: master\n    master: 0.0.0.0:7470\n"
	       "    listen: 10.77.0.1:7471\n    secret: \"" SECRET "\"\n",
	       "cluster.master: \"0.0.0.0:7470\": a wildcard address cannot be dialed");
	cl_bad(SPEC "    role: master\n    master: \"[::]:7470\"\n"
	       "    listen: 10.77.0.1:7471\n    secret: \"" SECRET "\"\n",
	       "cluster.master: \"[::]:7470\": a wildcard address cannot be dialed");
}

FKV_TEST(cluster_inline_secret_is_16_to_1024_bytes_and_never_quoted)
{
	char yaml[2048], long_secret[1100], err[4096];
	struct fkv_config c;

	/* 15 bytes: too short; the message gives the length only */
	parse_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
		  "    listen: 10.77.0.2:7471\n    secret: \"too-short-by-1!\"\n",
		  &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 1);
	ASSERT_STREQ(c.errors.v[0],
		     "t.yaml:7:13: cluster.secret: is 15 bytes: must be 16 to 1024 bytes");
	assert_secret_unsaid(&c, err, "too-short-by-1!");
	fkv_config_free(&c);

	/* 1024 bytes: the longest; 1025: too long */
	memset(long_secret, 'k', 1024);
	long_secret[1024] = '\0';
	FMT(yaml, SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	    "    listen: 10.77.0.2:7471\n    secret: %s\n", long_secret);
	parse_ok(yaml, &c);
	FKV_ASSERT_EQ(c.cluster.secret_len, 1024);
	fkv_config_free(&c);
	strcat(long_secret, "k");
	FMT(yaml, SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	    "    listen: 10.77.0.2:7471\n    secret: %s\n", long_secret);
	parse_bad(yaml, &c, err, sizeof(err));
	ASSERT_HAS(err, "cluster.secret: is 1025 bytes: must be 16 to 1024 bytes");
	assert_secret_unsaid(&c, err, "kkkkkkkkkkkkkkkk");
	fkv_config_free(&c);

	cl_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	       "    listen: 10.77.0.2:7471\n    secret: \"\"\n",
	       "cluster.secret: is 0 bytes: must be 16 to 1024 bytes");
	cl_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	       "    listen: 10.77.0.2:7471\n    secret: [a]\n",
	       "cluster.secret: must be a string, not a list");

	/* a NUL byte: refused, and still not quoted */
	parse_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
		  "    listen: 10.77.0.2:7471\n"
		  "    secret: \"abcdefgh\\0ijklmnopq\"\n", &c, err, sizeof(err));
	ASSERT_STREQ(err,
		     "t.yaml:7:13: cluster.secret: contains a NUL byte (put a binary secret in secret_file)");
	fkv_config_free(&c);

	/* a valid secret next to errors elsewhere: in no message either */
	parse_bad(SPEC "    role: nodes\n    master: 10.77.0.1:7470\n"
		  "    listen: 10.77.0.2:7471\n"
		  "    secret: \"do-not-print-this-secret\"\n"
		  "    secret_file: relative\n", &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 3);
	assert_secret_unsaid(&c, err, "do-not-print-this-secret");
	fkv_config_free(&c);
}

FKV_TEST(cluster_secret_and_secret_file_are_exclusive)
{
	char err[2048];
	struct fkv_config c;
	const char *path;

	tmp_make();
	path = secret_file("s", "file-secret-0123456789\n", 23, 0600);
	{
		char yaml[PATH_MAX + 256];

		FMT(yaml, SPEC CL_MIN "    secret_file: \"%s\"\n", path);
		parse_bad(yaml, &c, err, sizeof(err));
	}
	FKV_ASSERT_EQ(c.errors.n, 1);
	ASSERT_STREQ(c.errors.v[0],
		     "t.yaml:8:18: cluster: secret and secret_file are both set: use exactly one");
	assert_secret_unsaid(&c, err, "file-secret-0123456789");
	assert_secret_unsaid(&c, err, SECRET);
	fkv_config_free(&c);

	/* one of them null: the other one is used */
	{
		char yaml[PATH_MAX + 256];

		FMT(yaml, SPEC "    secret: ~\n    role: node\n"
		    "    master: 10.77.0.1:7470\n    listen: 10.77.0.2:7471\n"
		    "    secret_file: \"%s\"\n", path);
		parse_ok(yaml, &c);
	}
	FKV_ASSERT_EQ(c.cluster.secret_source, FKV_SECRET_FILE);
	fkv_config_free(&c);
	parse_ok(SPEC CL_MIN "    secret_file: ~\n", &c);
	FKV_ASSERT_EQ(c.cluster.secret_source, FKV_SECRET_INLINE);
	fkv_config_free(&c);
}

FKV_TEST(cluster_secret_file_is_read_with_one_newline_stripped)
{
	static const char bin[20] = "\x00\x01\x02\xff\nsecret\x00with-nul";
	char err[2048], path[PATH_MAX];
	struct fkv_config c;

	tmp_make();
	strcpy(path, secret_file("cluster.secret", "s3cr3t-from-a-file\n",
				 19, 0600));
	FKV_ASSERT(parse_secret_file(path, &c, err, sizeof(err)) == 0, "%s",
		   err);
	FKV_ASSERT_EQ(c.cluster.secret_source, FKV_SECRET_FILE);
	ASSERT_STREQ(c.cluster.secret_file, path);
	FKV_ASSERT_EQ(c.cluster.secret_len, 18);
	FKV_ASSERT(!memcmp(c.cluster.secret, "s3cr3t-from-a-file", 19));
	fkv_config_free(&c);

	/* no newline: all of it; two: only the last one goes */
	secret_file("cluster.secret", "s3cr3t-from-a-file", 18, 0600);
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(c.cluster.secret_len, 18);
	fkv_config_free(&c);
	secret_file("cluster.secret", "s3cr3t-from-a-file\n\n", 20, 0600);
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(c.cluster.secret_len, 19);
	FKV_ASSERT_EQ(c.cluster.secret[18], '\n');
	fkv_config_free(&c);

	/* binary, NULs included; owner-read-only is fine */
	secret_file("cluster.secret", bin, sizeof(bin), 0400);
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(c.cluster.secret_len, sizeof(bin));
	FKV_ASSERT(!memcmp(c.cluster.secret, bin, sizeof(bin)));
	fkv_config_free(&c);

	/* fkv_config_load() reads it the same way */
	{
		char yaml[PATH_MAX + 256], cfg[PATH_MAX];

		FMT(cfg, "%s/node.yaml", tmpdir);
		FMT(yaml, SPEC "    role: node\n    master: 10.77.0.1:7470\n"
		    "    listen: 10.77.0.2:7471\n    secret_file: \"%s\"\n", path);
		write_text(cfg, yaml);
		FKV_ASSERT(fkv_config_load(cfg, &c, err, sizeof(err)) == 0,
			   "%s", err);
		FKV_ASSERT_EQ(c.cluster.secret_len, sizeof(bin));
		fkv_config_free(&c);
	}
}

FKV_TEST(cluster_secret_file_open_to_group_or_others_is_refused)
{
	static const mode_t modes[] = { 0640, 0604, 0644, 0620, 0602, 0610,
					0601, 0660 };
	char err[2048], path[PATH_MAX], want[PATH_MAX + 128];
	struct fkv_config c;
	size_t i;

	tmp_make();
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		strcpy(path, secret_file("leaky.secret", "leaky-secret-0123456\n",
					 21, modes[i]));
		FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)),
			      -EINVAL);
		FMT(want, "t.yaml:7:18: cluster.secret_file: \"%s\": mode %04o lets group or others access the secret: chmod 600 it (as for an ssh key)",
		    path, (unsigned int)modes[i]);
		FKV_ASSERT_EQ(c.errors.n, 1);
		ASSERT_STREQ(c.errors.v[0], want);
		assert_secret_unsaid(&c, err, "leaky-secret");
		FKV_ASSERT(c.cluster.secret == NULL);	/* never read */
		fkv_config_free(&c);
	}
	/* 0600 and 0400 are fine (0700 too: x for the owner only) */
	secret_file("leaky.secret", "leaky-secret-0123456\n", 21, 0700);
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), 0);
	fkv_config_free(&c);
}

FKV_TEST(cluster_state_dir_must_be_absolute)
{
	cl_bad(SPEC CL_MIN "    state_dir: var/lib/fluxonkv\n",
	       "cluster.state_dir: \"var/lib/fluxonkv\": must be an absolute path");
	cl_bad(SPEC CL_MIN "    state_dir: [a]\n", "cluster.state_dir");
}

FKV_TEST(cluster_secret_file_errors_name_the_path)
{
	char err[2048], path[PATH_MAX], want[PATH_MAX + 128], big[1100];
	struct fkv_config c;

	tmp_make();
	cl_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	       "    listen: 10.77.0.2:7471\n    secret_file: etc/cluster.secret\n",
	       "t.yaml:7:18: cluster.secret_file: \"etc/cluster.secret\": must be an absolute path");
	cl_bad(SPEC "    role: node\n    master: 10.77.0.1:7470\n"
	       "    listen: 10.77.0.2:7471\n    secret_file: \"\"\n",
	       "cluster.secret_file: is empty");

	FMT(path, "%s/missing.secret", tmpdir);
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), -EINVAL);
	FMT(want, "cluster.secret_file: \"%s\": No such file or directory", path);
	ASSERT_HAS(err, want);
	fkv_config_free(&c);

	/* not a regular file: never opened (a FIFO would block) */
	FKV_ASSERT_EQ(parse_secret_file(tmpdir, &c, err, sizeof(err)), -EINVAL);
	ASSERT_HAS(err, "\": not a regular file");
	fkv_config_free(&c);
	FKV_ASSERT_EQ(parse_secret_file("/dev/null", &c, err, sizeof(err)),
		      -EINVAL);
	ASSERT_HAS(err, "cluster.secret_file: \"/dev/null\": not a regular file");
	fkv_config_free(&c);
	FMT(path, "%s/fifo", tmpdir);
	FKV_ASSERT_EQ(mkfifo(path, 0600), 0);
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), -EINVAL);
	ASSERT_HAS(err, "fifo\": not a regular file");
	fkv_config_free(&c);

	/* the secret's length, after the newline goes */
	strcpy(path, secret_file("short", "fifteen-bytes!!\n", 16, 0600));
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), -EINVAL);
	FMT(want, "cluster.secret_file: \"%s\": the secret is 15 bytes: must be 16 to 1024 bytes", path);
	ASSERT_HAS(err, want);
	assert_secret_unsaid(&c, err, "fifteen-bytes!!");
	fkv_config_free(&c);
	strcpy(path, secret_file("empty", "", 0, 0600));
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), -EINVAL);
	ASSERT_HAS(err, "the secret is 0 bytes");
	fkv_config_free(&c);
	memset(big, 'b', sizeof(big));
	big[1024] = '\n';	/* 1024 bytes and a newline: the longest */
	strcpy(path, secret_file("big", big, 1025, 0600));
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(c.cluster.secret_len, 1024);
	fkv_config_free(&c);
	strcpy(path, secret_file("big", big, 1025 - 1, 0600));
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(c.cluster.secret_len, 1024);
	fkv_config_free(&c);
	big[1024] = 'b';	/* 1025 bytes, no newline */
	strcpy(path, secret_file("big", big, 1025, 0600));
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), -EINVAL);
	ASSERT_HAS(err, "the secret is 1025 bytes: must be 16 to 1024 bytes");
	fkv_config_free(&c);
	strcpy(path, secret_file("big", big, sizeof(big), 0600));
	FKV_ASSERT_EQ(parse_secret_file(path, &c, err, sizeof(err)), -EINVAL);
	ASSERT_HAS(err, "\": longer than 1024 bytes (and a newline)");
	assert_secret_unsaid(&c, err, "bbbbbbbbbbbbbbbb");
	fkv_config_free(&c);
}

FKV_TEST(cluster_heartbeat_and_dead_after_ranges)
{
	struct fkv_config c;

	parse_ok(SPEC CL_MIN "    heartbeat_ms: 50\n    dead_after_ms: 101\n",
		 &c);
	FKV_ASSERT_EQ(c.cluster.heartbeat_ms, 50);
	FKV_ASSERT_EQ(c.cluster.dead_after_ms, 101);
	fkv_config_free(&c);
	parse_ok(SPEC CL_MIN "    heartbeat_ms: 60000\n"
		 "    dead_after_ms: 600000\n", &c);
	FKV_ASSERT_EQ(c.cluster.heartbeat_ms, 60000);
	FKV_ASSERT_EQ(c.cluster.dead_after_ms, 600000);
	fkv_config_free(&c);
	/* the default heartbeat with a short dead_after */
	parse_ok(SPEC CL_MIN "    dead_after_ms: 2001\n", &c);
	FKV_ASSERT_EQ(c.cluster.heartbeat_ms, 1000);
	fkv_config_free(&c);

	cl_bad(SPEC CL_MIN "    heartbeat_ms: 49\n",
	       "t.yaml:8:19: cluster.heartbeat_ms: \"49\": must be an integer from 50 to 60000 (ms)");
	cl_bad(SPEC CL_MIN "    heartbeat_ms: 60001\n",
	       "cluster.heartbeat_ms: \"60001\": must be an integer from 50 to 60000 (ms)");
	cl_bad(SPEC CL_MIN "    heartbeat_ms: 1e3\n", "cluster.heartbeat_ms: \"1e3\"");
	cl_bad(SPEC CL_MIN "    heartbeat_ms: -100\n", "cluster.heartbeat_ms: \"-100\"");
	cl_bad(SPEC CL_MIN "    heartbeat_ms: 1.5\n", "cluster.heartbeat_ms: \"1.5\"");
	cl_bad(SPEC CL_MIN "    heartbeat_ms: 99999999999999999999\n",
	       "cluster.heartbeat_ms: \"99999999999999999999\"");
	cl_bad(SPEC CL_MIN "    dead_after_ms: 600001\n",
	       "t.yaml:8:20: cluster.dead_after_ms: \"600001\": must be an integer from 1 to 600000 (ms, and more than 2 * heartbeat_ms)");
	cl_bad(SPEC CL_MIN "    dead_after_ms: 0\n", "cluster.dead_after_ms: \"0\"");
}

FKV_TEST(cluster_lease_lies_between_a_heartbeat_and_dead_after)
{
	struct fkv_config c;

	/* default: heartbeat_ms + dead_after_ms / 2, always in range */
	parse_ok(SPEC CL_MIN, &c);
	FKV_ASSERT_EQ(c.cluster.lease_ms, 3500);
	fkv_config_free(&c);
	parse_ok(SPEC CL_MIN "    heartbeat_ms: 50\n    dead_after_ms: 101\n",
		 &c);
	FKV_ASSERT_EQ(c.cluster.lease_ms, 100);
	fkv_config_free(&c);
	parse_ok(SPEC CL_MIN "    heartbeat_ms: 200\n    dead_after_ms: 2000\n",
		 &c);
	FKV_ASSERT_EQ(c.cluster.lease_ms, 1200);
	fkv_config_free(&c);
	parse_ok(SPEC CL_MIN "    lease_ms: 1001\n", &c);
	FKV_ASSERT_EQ(c.cluster.lease_ms, 1001);
	fkv_config_free(&c);
	parse_ok(SPEC CL_MIN "    lease_ms: 4999\n", &c);
	FKV_ASSERT_EQ(c.cluster.lease_ms, 4999);
	fkv_config_free(&c);

	cl_bad(SPEC CL_MIN "    lease_ms: 5000\n",
	       "t.yaml:8:15: cluster.lease_ms: 5000 must be greater than heartbeat_ms (1000) and less than dead_after_ms (5000)");
	cl_bad(SPEC CL_MIN "    lease_ms: 1000\n",
	       "cluster.lease_ms: 1000 must be greater than heartbeat_ms (1000) and less than dead_after_ms (5000)");
	cl_bad(SPEC CL_MIN "    heartbeat_ms: 200\n    dead_after_ms: 2000\n"
	       "    lease_ms: 3000\n",
	       "cluster.lease_ms: 3000 must be greater than heartbeat_ms (200) and less than dead_after_ms (2000)");
	cl_bad(SPEC CL_MIN "    lease_ms: 0\n", "cluster.lease_ms: \"0\"");
	cl_bad(SPEC CL_MIN "    lease_ms: soon\n", "cluster.lease_ms: \"soon\"");
}

FKV_TEST(cluster_dead_after_must_exceed_two_heartbeats)
{
	char err[2048];
	struct fkv_config c;

	cl_bad(SPEC CL_MIN "    heartbeat_ms: 1000\n    dead_after_ms: 2000\n",
	       "t.yaml:9:20: cluster.dead_after_ms: 2000 must be greater than 2 * heartbeat_ms (2 * 1000 = 2000)");
	cl_bad(SPEC CL_MIN "    dead_after_ms: 1999\n",
	       "cluster.dead_after_ms: 1999 must be greater than 2 * heartbeat_ms (2 * 1000 = 2000)");
	/* a long heartbeat against the default dead_after: said at heartbeat */
	cl_bad(SPEC CL_MIN "    heartbeat_ms: 2500\n",
	       "t.yaml:8:19: cluster.dead_after_ms: the default 5000 must be greater than 2 * heartbeat_ms (2 * 2500 = 5000): set dead_after_ms");
	/* a bad heartbeat is one error, not two */
	parse_bad(SPEC CL_MIN "    heartbeat_ms: 10\n    dead_after_ms: 15\n",
		  &c, err, sizeof(err));
	FKV_ASSERT(c.errors.n == 1, "%s", err);
	fkv_config_free(&c);
}

FKV_TEST(cluster_every_error_is_reported_in_one_pass)
{
	char err[4096], *line, *save;
	struct fkv_config c;
	int n = 0;

	parse_bad("fluxonkv_spec:\n"
		  "  cluster:\n"
		  "    role: boss\n"
		  "    master: \"::1:7470\"\n"
		  "    listen: 0.0.0.0:99999\n"
		  "    transport: udp\n"
		  "    secret: short\n"
		  "    heartbeat_ms: 10\n"
		  "    dead_after_ms: 1000000\n"
		  "    nodename: x\n"
		  "  segment_mb: 0\n", &c, err, sizeof(err));
	FKV_ASSERT(c.errors.n == 9, "%s", err);
	ASSERT_HAS(c.errors.v[0], "t.yaml:3:11: cluster.role: \"boss\"");
	ASSERT_HAS(c.errors.v[1], "t.yaml:4:13: cluster.master: \"::1:7470\"");
	ASSERT_HAS(c.errors.v[2], "t.yaml:5:13: cluster.listen: \"0.0.0.0:99999\": port \"99999\"");
	ASSERT_HAS(c.errors.v[3], "t.yaml:6:16: cluster.transport: \"udp\"");
	ASSERT_HAS(c.errors.v[4], "t.yaml:7:13: cluster.secret: is 5 bytes");
	ASSERT_HAS(c.errors.v[5], "t.yaml:8:19: cluster.heartbeat_ms: \"10\"");
	ASSERT_HAS(c.errors.v[6], "t.yaml:9:20: cluster.dead_after_ms: \"1000000\"");
	ASSERT_HAS(c.errors.v[7], "t.yaml:10:5: cluster: unknown key \"nodename\"");
	ASSERT_HAS(c.errors.v[8], "t.yaml:11:15: segment_mb: \"0\"");
	assert_secret_unsaid(&c, err, "short");
	for (line = strtok_r(err, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		ASSERT_STREQ(line, c.errors.v[n++]);
	FKV_ASSERT_EQ(n, 9);
	fkv_config_free(&c);
}

FKV_TEST(cluster_free_clears_the_struct)
{
	struct fkv_cluster_config zero = { 0 };
	struct fkv_config c;

	parse_ok(SPEC CL_MIN, &c);
	FKV_ASSERT(c.cluster.secret);
	fkv_config_free(&c);
	FKV_ASSERT(!memcmp(&c.cluster, &zero, sizeof(zero)));
	/* freeing twice, or after a failed parse, is fine */
	fkv_config_free(&c);
	FKV_ASSERT_EQ(parse(SPEC "    secret: \"" SECRET "\"\n", &c, NULL, 0),
		      -EINVAL);
	FKV_ASSERT(c.cluster.secret);	/* kept until freed, then wiped */
	fkv_config_free(&c);
}

/* ---- the SSD plan ------------------------------------------------------ */

FKV_TEST(split_uses_at_most_1GiB_shards_and_at_most_64)
{
	struct fkv_ssd_plan_opts small = { .shard_max = 64 * KiB,
					   .max_shards = 4 };
	unsigned int n;
	uint64_t sz;

	FKV_ASSERT_EQ(fkv_ssd_split(4 * GiB, NULL, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 4);
	FKV_ASSERT_EQ(sz, GiB);
	FKV_ASSERT_EQ(fkv_ssd_split(3 * GiB / 2, NULL, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 2);
	FKV_ASSERT_EQ(sz, 768 * MiB);
	FKV_ASSERT_EQ(fkv_ssd_split(GiB + 1, NULL, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 2);
	FKV_ASSERT_EQ(sz, GiB / 2);	/* (GiB + 1) / 2 rounded down */
	FKV_ASSERT_EQ(fkv_ssd_split(100 * GiB, NULL, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 64);
	FKV_ASSERT_EQ(sz, 1600 * MiB);
	FKV_ASSERT_EQ(fkv_ssd_split(10000, NULL, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 1);
	FKV_ASSERT_EQ(sz, 8192);
	FKV_ASSERT_EQ(fkv_ssd_split(4095, NULL, &n, &sz), -ENOSPC);
	FKV_ASSERT_EQ(fkv_ssd_split(FKV_SIZE_MAX, NULL, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 64);
	FKV_ASSERT_EQ(sz % 4096, 0);
	FKV_ASSERT(sz * 64 <= FKV_SIZE_MAX);
	FKV_ASSERT_EQ(fkv_ssd_split(1 * MiB, &small, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 4);
	FKV_ASSERT_EQ(sz, 256 * KiB);
	FKV_ASSERT_EQ(fkv_ssd_split(192 * KiB + 100, &small, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 4);
	FKV_ASSERT_EQ(sz, 48 * KiB);
	/* file names have three digits: never more than 999 shards */
	small.shard_max = 4096;
	small.max_shards = 5000;
	FKV_ASSERT_EQ(fkv_ssd_split(2000 * 4096, &small, &n, &sz), 0);
	FKV_ASSERT_EQ(n, 999);
	FKV_ASSERT_EQ(sz, 8192);
}

FKV_TEST(plan_without_ssd_is_empty)
{
	struct fkv_ssd_plan p;
	struct fkv_config c;

	parse_ok("fluxonkv_spec:\n  large_file_paths: [/nonexistent]\n", &c);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, NULL, 0), 0);
	FKV_ASSERT_EQ(p.nroots, 0);
	FKV_ASSERT_EQ(p.nshards, 0);
	FKV_ASSERT_EQ(p.capacity, 0);
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_refuses_an_invalid_config)
{
	struct fkv_ssd_plan p;
	struct fkv_config c;
	char err[256];

	FKV_ASSERT_EQ(parse("fluxonkv_spec: 1\n", &c, NULL, 0), -EINVAL);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, err, sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "the configuration has errors");
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_derives_the_cache_root_per_path)
{
	char a[PATH_MAX], slash[PATH_MAX + 2], want[PATH_MAX * 2];
	const char *paths[1], *limits[] = { "\"4GB\"" };
	struct fkv_ssd_plan p;
	struct fkv_config c;
	struct stat st;
	char err[1024];

	mkdir_in(tmp_make(), "large0", a, sizeof(a));
	FMT(slash, "%s//", a);	/* trailing '/' dropped */
	paths[0] = slash;
	config_for(&c, 1, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(p.nroots, 1);
	FKV_ASSERT_EQ(p.roots[0].kind, FKV_SSD_DIR);
	FKV_ASSERT_EQ(p.roots[0].index, 0);
	ASSERT_STREQ(p.roots[0].path, a);
	FMT(want, "%s/c1_cluster_kv_ssd_storage/n1", a);
	ASSERT_STREQ(p.roots[0].root, want);
	FKV_ASSERT(!p.roots[0].exists);
	FKV_ASSERT_EQ(stat(a, &st), 0);
	FKV_ASSERT_EQ(p.roots[0].dev, st.st_dev);
	FKV_ASSERT_EQ(p.roots[0].limit, 4 * GiB);
	FKV_ASSERT_EQ(p.roots[0].nshards, 4);
	FKV_ASSERT_EQ(p.roots[0].shard_size, GiB);
	FKV_ASSERT_EQ(p.roots[0].capacity, 4 * GiB);
	FKV_ASSERT_EQ(p.nshards, 4);
	FKV_ASSERT_EQ(p.capacity, 4 * GiB);
	FKV_ASSERT(p.roots[0].avail > 0);
	/* planning created nothing */
	FKV_ASSERT_ERRNO(access(want, F_OK), ENOENT);
	fkv_ssd_plan_free(&p);

	/* once it exists, the plan says so */
	FMT(want, "%s/c1_cluster_kv_ssd_storage", a);
	FKV_ASSERT_EQ(mkdir(want, 0750), 0);
	strcat(want, "/n1");
	FKV_ASSERT_EQ(mkdir(want, 0750), 0);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, err, sizeof(err)), 0);
	FKV_ASSERT(p.roots[0].exists);
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_path_that_does_not_exist_yet_is_planned_on_its_ancestor)
{
	const char *limits[] = { "1GB" }, *paths[1];
	char path[PATH_MAX];
	struct fkv_ssd_plan p;
	struct fkv_config c;
	struct stat st;

	FMT(path, "%s/not/yet", tmp_make());
	paths[0] = path;
	config_for(&c, 1, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, NULL, 0), 0);
	FKV_ASSERT_EQ(p.nroots, 1);
	FKV_ASSERT_EQ(p.roots[0].kind, FKV_SSD_DIR);
	FKV_ASSERT(!p.roots[0].exists);
	FKV_ASSERT_EQ(stat(tmpdir, &st), 0);
	FKV_ASSERT_EQ(p.roots[0].dev, st.st_dev);
	FKV_ASSERT(msgs_have(&p.warnings, "large_file_paths[0]: \""));
	FKV_ASSERT(msgs_have(&p.warnings, "/not/yet\" does not exist yet: it will be created"));
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_refuses_what_is_neither_directory_nor_block_device)
{
	const char *paths[] = { "/dev/null", NULL, NULL };
	const char *limits[] = { "1GB", "1GB", "1GB" };
	char file[PATH_MAX], under[PATH_MAX], err[2048];
	struct fkv_ssd_plan p;
	struct fkv_config c;
	int fd;

	FMT(file, "%s/plain", tmp_make());
	fd = open(file, O_CREAT | O_WRONLY, 0600);
	FKV_ASSERT(fd >= 0);
	close(fd);
	FMT(under, "%s/sub", file);
	paths[1] = file;
	paths[2] = under;
	config_for(&c, 3, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, err, sizeof(err)), -EINVAL);
	FKV_ASSERT_EQ(p.errors.n, 3);
	ASSERT_STREQ(p.errors.v[0], "large_file_paths[0]: \"/dev/null\": not a directory or block device (a character device)");
	ASSERT_HAS(p.errors.v[1], "large_file_paths[1]: \"");
	ASSERT_HAS(p.errors.v[1], "/plain\": not a directory or block device (a regular file)");
	ASSERT_HAS(p.errors.v[2], "/plain/sub\": Not a directory");
	FKV_ASSERT_EQ(p.nroots, 0);
	ASSERT_HAS(err, "(a character device)\nlarge_file_paths[1]");
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_dedups_paths_on_one_device_first_wins)
{
	char a[PATH_MAX], b[PATH_MAX];
	const char *paths[] = { a, b, a };
	const char *limits[] = { "2GB", "8GB", "1GB" };
	struct fkv_ssd_plan p;
	struct fkv_config c;

	mkdir_in(tmp_make(), "a", a, sizeof(a));
	mkdir_in(tmpdir, "b", b, sizeof(b));
	config_for(&c, 3, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, NULL, 0), 0);
	FKV_ASSERT_EQ(p.nroots, 1);
	ASSERT_STREQ(p.roots[0].path, a);
	FKV_ASSERT_EQ(p.roots[0].limit, 2 * GiB);
	FKV_ASSERT_EQ(p.capacity, 2 * GiB);	/* b's 8GB is not added */
	FKV_ASSERT_EQ(p.nshards, 2);
	FKV_ASSERT(msgs_have(&p.warnings, "large_file_paths[1]: \""));
	FKV_ASSERT(msgs_have(&p.warnings, "/b\" is on device"));
	FKV_ASSERT(msgs_have(&p.warnings, "like large_file_paths[0] \""));
	FKV_ASSERT(msgs_have(&p.warnings, "large_file_paths[2]: \""));
	FKV_ASSERT(msgs_have(&p.warnings, ": ignored, with its large_limit_size (one root per device)"));
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_keeps_paths_on_distinct_devices_in_order)
{
	char a[PATH_MAX], shm[] = "/dev/shm/fkv-cfg-XXXXXX";
	const char *paths[] = { a, shm };
	const char *limits[] = { "2GB", "1MB" };
	struct fkv_ssd_plan p;
	struct fkv_config c;
	struct stat sa, sb;

	mkdir_in(tmp_make(), "a", a, sizeof(a));
	if (!mkdtemp(shm))
		FKV_SKIP("no /dev/shm: %s", strerror(errno));
	if (stat(a, &sa) || stat(shm, &sb) || sa.st_dev == sb.st_dev) {
		rmdir(shm);
		FKV_SKIP("%s and /dev/shm are on one device", tmpdir);
	}
	config_for(&c, 2, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, NULL, 0), 0);
	rmdir(shm);
	FKV_ASSERT_EQ(p.nroots, 2);
	FKV_ASSERT_EQ(p.roots[0].dev, sa.st_dev);
	FKV_ASSERT_EQ(p.roots[1].dev, sb.st_dev);
	FKV_ASSERT_EQ(p.roots[1].index, 1);
	FKV_ASSERT_EQ(p.roots[0].first_shard, 0);
	FKV_ASSERT_EQ(p.roots[1].first_shard, 2);
	FKV_ASSERT_EQ(p.nshards, 3);
	FKV_ASSERT_EQ(p.capacity, 2 * GiB + MiB);
	/* a 1 MiB shard cannot hold the largest values */
	FKV_ASSERT(msgs_have(&p.warnings, "large_file_paths[1]: shards of 1 MiB (1048576 bytes) cannot hold values larger than that (values go up to 64 MiB"));
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_refuses_a_limit_below_one_4096_byte_shard)
{
	const char *limits[] = { "4095" }, *paths[1];
	struct fkv_ssd_plan p;
	struct fkv_config c;
	char err[512];

	paths[0] = tmp_make();
	config_for(&c, 1, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, err, sizeof(err)), -EINVAL);
	ASSERT_STREQ(err, "large_limit_size[0]: 4095 bytes is less than one 4096-byte shard");
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_warns_when_the_filesystem_lacks_the_space)
{
	const char *limits[] = { "4000000TB" }, *paths[1];
	struct fkv_ssd_plan p;
	struct fkv_config c;

	paths[0] = tmp_make();
	config_for(&c, 1, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, NULL, &p, NULL, 0), 0);
	FKV_ASSERT(msgs_have(&p.warnings, "free, less than the 3.815 EiB"));
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(plan_uses_a_block_device_raw_split_into_regions)
{
	const char *limits[] = { "3MB" }, *paths[1];
	char dev[64], err[512];
	struct fkv_ssd_plan_opts opts = { .shard_max = MiB };
	struct fkv_ssd_plan p;
	struct fkv_config c;
	struct stat st;
	int lfd;

	lfd = loop_attach(tmp_make(), 4 * MiB, dev, sizeof(dev));
	paths[0] = dev;
	config_for(&c, 1, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, &opts, &p, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(stat(dev, &st), 0);
	FKV_ASSERT_EQ(p.nroots, 1);
	FKV_ASSERT_EQ(p.roots[0].kind, FKV_SSD_BLOCKDEV);
	ASSERT_STREQ(p.roots[0].root, dev);	/* no cache root directory */
	FKV_ASSERT_EQ(p.roots[0].dev, st.st_rdev);
	FKV_ASSERT_EQ(p.roots[0].avail, 4 * MiB);
	FKV_ASSERT_EQ(p.roots[0].nshards, 3);
	FKV_ASSERT_EQ(p.roots[0].shard_size, MiB);
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);

	limits[0] = "5MB";
	config_for(&c, 1, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, &opts, &p, err, sizeof(err)), -EINVAL);
	ASSERT_HAS(err, "block device of 4 MiB (4194304 bytes) is smaller than its large_limit_size of 5 MiB (5242880 bytes)");
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
	close(lfd);
}

/* ---- prepare ----------------------------------------------------------- */

/* Plan @limit under a fresh directory with 64 KiB shards. */
static void plan_tmp(struct fkv_config *c, struct fkv_ssd_plan *p,
		     const char *limit, char *base, size_t len)
{
	struct fkv_ssd_plan_opts opts = { .shard_max = 64 * KiB };
	const char *paths[1] = { base }, *limits[1] = { limit };
	char err[1024];

	snprintf(base, len, "%s/large", tmp_make());
	config_for(c, 1, paths, limits);
	FKV_ASSERT(fkv_ssd_plan(c, &opts, p, err, sizeof(err)) == 0, "%s", err);
}

static bool fd_is_direct(int fd)
{
	return fcntl(fd, F_GETFL) & O_DIRECT;
}

FKV_TEST(prepare_creates_the_root_and_preallocated_direct_io_shards)
{
	char base[PATH_MAX], path[PATH_MAX], err[1024];
	struct fkv_msgs warn = { 0 };
	struct fkv_ssd_plan p;
	struct fkv_config c;
	struct stat st;
	void *buf;
	int fds[3], k;

	umask(022);
	plan_tmp(&c, &p, "192KB", base, sizeof(base));
	FKV_ASSERT_EQ(p.nshards, 3);
	FKV_ASSERT_EQ(fkv_ssd_prepare(&p, FKV_SSD_PREPARE_ALLOW_BUFFERED, fds,
				      &warn, err, sizeof(err)), 0);

	FKV_ASSERT_EQ(stat(p.roots[0].root, &st), 0);
	FKV_ASSERT(S_ISDIR(st.st_mode));
	FKV_ASSERT_EQ(st.st_mode & 07777, 0750);
	FMT(path, "%s/c1_cluster_kv_ssd_storage", base);
	FKV_ASSERT_EQ(stat(path, &st), 0);
	FKV_ASSERT_EQ(st.st_mode & 07777, 0750);
	for (k = 0; k < 3; k++) {
		FKV_ASSERT(fds[k] >= 0);
		FKV_ASSERT(fcntl(fds[k], F_GETFD) & FD_CLOEXEC);
		FKV_ASSERT_EQ(fcntl(fds[k], F_GETFL) & O_ACCMODE, O_RDWR);
		if (!msgs_have(&warn, "no O_DIRECT"))
			FKV_ASSERT(fd_is_direct(fds[k]), "shard %d", k);
		FMT(path, "%s/shard-%03d.dat",
			 p.roots[0].root, k);
		FKV_ASSERT_EQ(stat(path, &st), 0);
		FKV_ASSERT(S_ISREG(st.st_mode));
		FKV_ASSERT_EQ(st.st_mode & 07777, 0640);
		FKV_ASSERT_EQ(st.st_size, 64 * KiB);
		if (!msgs_have(&warn, "no fallocate"))
			FKV_ASSERT_GE((uint64_t)st.st_blocks * 512, 64 * KiB);
	}
	FMT(path, "%s/shard-003.dat", p.roots[0].root);
	FKV_ASSERT_ERRNO(access(path, F_OK), ENOENT);

	/* an aligned direct write lands at the shard's offset */
	FKV_ASSERT_EQ(posix_memalign(&buf, 4096, 4096), 0);
	memset(buf, 0xa5, 4096);
	FKV_ASSERT_EQ(pwrite(fds[2], buf, 4096, 60 * KiB), 4096);
	free(buf);
	fkv_ssd_close(fds, 3);
	FKV_ASSERT_EQ(fds[0], -1);
	fkv_msgs_free(&warn);
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(prepare_truncates_old_shards_and_removes_stale_ones)
{
	char base[PATH_MAX], path[PATH_MAX], err[1024], old[8192];
	struct fkv_msgs warn = { 0 };
	struct fkv_ssd_plan p;
	struct fkv_config c;
	struct stat st;
	int fds[2], fd;
	size_t i;

	plan_tmp(&c, &p, "128KB", base, sizeof(base));
	FKV_ASSERT_EQ(fkv_ssd_prepare(&p, FKV_SSD_PREPARE_ALLOW_BUFFERED, fds,
				      NULL, err, sizeof(err)), 0);
	fkv_ssd_close(fds, 2);

	/* a previous run's data, and shards of a larger previous config */
	memset(old, 'x', sizeof(old));
	FMT(path, "%s/shard-000.dat", p.roots[0].root);
	fd = open(path, O_WRONLY);
	FKV_ASSERT_EQ(pwrite(fd, old, sizeof(old), 0), (ssize_t)sizeof(old));
	FKV_ASSERT_EQ(ftruncate(fd, 1 * MiB), 0);
	close(fd);
	FMT(path, "%s/shard-007.dat", p.roots[0].root);
	FKV_ASSERT((fd = open(path, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);
	FMT(path, "%s/shard-7.dat", p.roots[0].root);
	FKV_ASSERT((fd = open(path, O_CREAT | O_WRONLY, 0600)) >= 0);
	close(fd);

	FKV_ASSERT_EQ(fkv_ssd_prepare(&p, FKV_SSD_PREPARE_ALLOW_BUFFERED, fds,
				      &warn, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(fstat(fds[0], &st), 0);
	FKV_ASSERT_EQ(st.st_size, 64 * KiB);
	fd = open(path, O_RDONLY);	/* not a name we write: kept */
	FKV_ASSERT(fd >= 0);
	close(fd);
	FMT(path, "%s/shard-000.dat", p.roots[0].root);
	fd = open(path, O_RDONLY);
	FKV_ASSERT_EQ(pread(fd, old, sizeof(old), 0), (ssize_t)sizeof(old));
	close(fd);
	for (i = 0; i < sizeof(old); i++)
		FKV_ASSERT(old[i] == 0, "byte %zu survived truncation", i);
	FMT(path, "%s/shard-007.dat", p.roots[0].root);
	FKV_ASSERT_ERRNO(access(path, F_OK), ENOENT);
	FKV_ASSERT(msgs_have(&warn, "removed stale shard-007.dat (the plan has 2 shards)"));
	fkv_ssd_close(fds, 2);
	fkv_msgs_free(&warn);
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(prepare_does_not_follow_a_planted_symlink)
{
	char base[PATH_MAX], path[PATH_MAX], victim[PATH_MAX], err[1024];
	struct fkv_ssd_plan p;
	struct fkv_config c;
	struct stat st;
	int fds[2] = { 7, 7 }, fd;

	plan_tmp(&c, &p, "128KB", base, sizeof(base));
	FKV_ASSERT_EQ(fkv_ssd_prepare(&p, FKV_SSD_PREPARE_ALLOW_BUFFERED, fds,
				      NULL, err, sizeof(err)), 0);
	fkv_ssd_close(fds, 2);
	FMT(victim, "%s/victim", tmpdir);
	fd = open(victim, O_CREAT | O_WRONLY, 0600);
	FKV_ASSERT_EQ(write(fd, "precious", 8), 8);
	close(fd);
	FMT(path, "%s/shard-001.dat", p.roots[0].root);
	FKV_ASSERT_EQ(unlink(path), 0);
	FKV_ASSERT_EQ(symlink(victim, path), 0);

	FKV_ASSERT_EQ(fkv_ssd_prepare(&p, FKV_SSD_PREPARE_ALLOW_BUFFERED, fds,
				      NULL, err, sizeof(err)), -ELOOP);
	ASSERT_HAS(err, "shard-001.dat: Too many levels of symbolic links");
	FKV_ASSERT_EQ(fds[0], -1);	/* shard 0 was opened, then closed */
	FKV_ASSERT_EQ(fds[1], -1);
	FKV_ASSERT_EQ(stat(victim, &st), 0);
	FKV_ASSERT_EQ(st.st_size, 8);
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(prepare_refuses_a_root_that_moved_to_another_device)
{
	char base[PATH_MAX], err[1024];
	struct fkv_ssd_plan p;
	struct fkv_config c;
	int fds[2];

	plan_tmp(&c, &p, "128KB", base, sizeof(base));
	p.roots[0].dev = makedev(0, 1);	/* as if mounted over since */
	FKV_ASSERT_EQ(fkv_ssd_prepare(&p, 0, fds, NULL, err, sizeof(err)),
		      -EXDEV);
	ASSERT_HAS(err, "planned on 0:1 (mounted meanwhile?): plan again");
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
}

FKV_TEST(prepare_opens_a_block_device_exclusively)
{
	const char *limits[] = { "2MB" }, *paths[1];
	struct fkv_ssd_plan_opts opts = { .shard_max = MiB };
	char dev[64], err[512];
	struct fkv_ssd_plan p;
	struct fkv_config c;
	int lfd, fds[2];

	lfd = loop_attach(tmp_make(), 4 * MiB, dev, sizeof(dev));
	paths[0] = dev;
	config_for(&c, 1, paths, limits);
	FKV_ASSERT_EQ(fkv_ssd_plan(&c, &opts, &p, err, sizeof(err)), 0);
	FKV_ASSERT_EQ(fkv_ssd_prepare(&p, 0, fds, NULL, err, sizeof(err)), 0);
	FKV_ASSERT(fds[0] >= 0 && fds[1] >= 0 && fds[0] != fds[1]);
	FKV_ASSERT(fd_is_direct(fds[0]) && fd_is_direct(fds[1]));
	FKV_ASSERT(fcntl(fds[1], F_GETFD) & FD_CLOEXEC);
	FKV_ASSERT_ERRNO(open(dev, O_RDWR | O_EXCL), EBUSY);
	/* a second prepare of the same plan says why it cannot */
	{
		int again[2];

		FKV_ASSERT_EQ(fkv_ssd_prepare(&p, 0, again, NULL, err,
					      sizeof(err)), -EBUSY);
		ASSERT_HAS(err, "(mounted or in use)");
	}
	fkv_ssd_close(fds, 2);
	fkv_ssd_plan_free(&p);
	fkv_config_free(&c);
	close(lfd);
}

/* ---- fluxonctl config check -------------------------------------------- */

struct run {
	int status;
	char out[16384];
	char err[16384];
};

static void slurp(FILE *f, char *buf, size_t len)
{
	size_t got;

	rewind(f);
	got = fread(buf, 1, len - 1, f);
	buf[got] = '\0';
	fclose(f);
}

/* $(O)/fluxonctl config @a1 [@a2 [@a3]]; skips when it is not built. */
static void ctl(struct run *r, const char *a1, const char *a2, const char *a3)
{
	char self[PATH_MAX], bin[PATH_MAX + 16];
	FILE *out = tmpfile(), *err = tmpfile();
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status;
	pid_t pid;

	FKV_ASSERT(n > 0 && out && err);
	self[n] = '\0';
	FMT(bin, "%s/../fluxonctl", dirname(self));
	if (access(bin, X_OK))
		FKV_SKIP("fluxonctl not built (make userspace)");
	pid = fork();
	FKV_ASSERT(pid >= 0);
	if (!pid) {
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		execl(bin, "fluxonctl", "config", a1, a2, a3, (char *)NULL);
		_exit(127);
	}
	FKV_ASSERT_EQ(waitpid(pid, &status, 0), pid);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
	slurp(out, r->out, sizeof(r->out));
	slurp(err, r->err, sizeof(r->err));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	FKV_ASSERT(f);
	fputs(text, f);
	FKV_ASSERT_EQ(fclose(f), 0);
}

FKV_TEST(ctl_config_check_prints_the_plan_and_exits_0)
{
	char yaml[PATH_MAX], a[PATH_MAX], b[PATH_MAX], text[PATH_MAX * 3], want[PATH_MAX * 2];
	struct run r;

	mkdir_in(tmp_make(), "a", a, sizeof(a));
	mkdir_in(tmpdir, "b", b, sizeof(b));
	FMT(yaml, "%s/node.yaml", tmpdir);
	FMT(text,
		 "fluxonkv_spec:\n  instance: n1\n"
		 "  large_file_paths: [\"%s\", \"%s\"]\n"
		 "  large_limit_size: [1.5GB, 4GB]\n", a, b);
	write_file(yaml, text);
	ctl(&r, "check", yaml, NULL);
	FKV_ASSERT(r.status == 0, "status %d, stderr: %s", r.status, r.err);
	ASSERT_HAS(r.out, ": valid\n");
	ASSERT_HAS(r.out, "  cluster_name  default\n");
	ASSERT_HAS(r.out, "  instance      n1\n");
	ASSERT_HAS(r.out, "  ssd tier      1 root, 2 shards, 1.5 GiB (1610612736 bytes)\n");
	FMT(want,
		 "      cache root %s/default_cluster_kv_ssd_storage/n1/ (to be created)\n", a);
	ASSERT_HAS(r.out, want);
	ASSERT_HAS(r.out, "      2 shards x 768 MiB (805306368 bytes): shard-000.dat .. shard-001.dat\n");
	ASSERT_HAS(r.err, "warning: large_file_paths[1]: \"");
	ASSERT_HAS(r.err, "like large_file_paths[0]");
}

FKV_TEST(ctl_config_check_json_is_one_object)
{
	char yaml[PATH_MAX], a[PATH_MAX], text[PATH_MAX * 3], want[PATH_MAX * 2];
	char dev[32];
	struct stat st;
	struct run r;

	mkdir_in(tmp_make(), "a", a, sizeof(a));
	FMT(yaml, "%s/node.yaml", tmpdir);
	FMT(text,
		 "fluxonkv_spec:\n  cluster_name: c1\n  instance: n1\n"
		 "  segment_mb: 256\n"
		 "  large_file_paths: [\"%s\"]\n  large_limit_size: [2GB]\n", a);
	write_file(yaml, text);
	ctl(&r, "check", "--json", yaml);
	FKV_ASSERT(r.status == 0, "status %d, stderr: %s", r.status, r.err);
	FKV_ASSERT_EQ(r.err[0], '\0');
	FKV_ASSERT_EQ(r.out[0], '{');
	FKV_ASSERT_EQ(strchr(r.out, '\n') - r.out, (long)strlen(r.out) - 1);
	ASSERT_HAS(r.out, "\"valid\":true,\"cluster_name\":\"c1\",\"instance\":\"n1\",\"instance_default\":false,\"segment_mb\":256,\"policy\":\"s3fifo\",\"high_watermark\":98,\"low_watermark\":95,\"log_level\":\"info\",\"ssd\":true,\"capacity_bytes\":2147483648,\"shards\":2,\"roots\":[{\"index\":0,\"path\":");
	FKV_ASSERT_EQ(stat(a, &st), 0);
	FMT(dev, "%u:%u", major(st.st_dev), minor(st.st_dev));
	FMT(want,
		 "\"kind\":\"dir\",\"device\":\"%s\",\"cache_root\":\"%s/c1_cluster_kv_ssd_storage/n1\",\"exists\":false,\"limit_bytes\":2147483648,\"capacity_bytes\":2147483648,",
		 dev, a);
	ASSERT_HAS(r.out, want);
	ASSERT_HAS(r.out, "\"shards\":2,\"shard_bytes\":1073741824,\"first_shard\":0}],\"cluster\":null,\"tenants\":[],\"warnings\":[],\"errors\":[]}\n");
}

FKV_TEST(ctl_config_check_lists_every_error_and_exits_1)
{
	char yaml[PATH_MAX];
	struct run r;

	FMT(yaml, "%s/bad.yaml", tmp_make());
	write_file(yaml, "fluxonkv_spec:\n"
		   "  large_file_paths: [/dev/null, rel]\n"
		   "  large_limit_size: [1GB, 2XB]\n");
	ctl(&r, "check", yaml, NULL);
	FKV_ASSERT_EQ(r.status, 1);
	FKV_ASSERT_EQ(r.out[0], '\0');
	ASSERT_HAS(r.err, "bad.yaml: invalid (2 errors)\n");
	ASSERT_HAS(r.err, "error: ");
	ASSERT_HAS(r.err, "bad.yaml:2:33: large_file_paths[1]: \"rel\": must be an absolute path\n");
	ASSERT_HAS(r.err, "bad.yaml:3:27: large_limit_size[1]: \"2XB\": unknown unit \"XB\" (use B, KB, MB, GB, TB; binary units)\n");

	/* a valid file whose plan fails: the plan's errors */
	write_file(yaml, "fluxonkv_spec:\n"
		   "  large_file_paths: [/dev/null]\n"
		   "  large_limit_size: [1GB]\n");
	ctl(&r, "check", "--json", yaml);
	FKV_ASSERT_EQ(r.status, 1);
	ASSERT_HAS(r.out, "\"valid\":false,\"warnings\":[],\"errors\":[\"large_file_paths[0]: \\\"/dev/null\\\": not a directory or block device (a character device)\"]}\n");

	ctl(&r, "check", "/nonexistent/node.yaml", NULL);
	FKV_ASSERT_EQ(r.status, 1);
	ASSERT_HAS(r.err, "error: /nonexistent/node.yaml: No such file or directory\n");
}

FKV_TEST(ctl_config_check_shows_the_cluster_but_never_the_secret)
{
	char yaml[PATH_MAX], sec[PATH_MAX], text[PATH_MAX * 2];
	char want[PATH_MAX * 2];
	struct run r;

	FMT(yaml, "%s/a.yaml", tmp_make());
	write_file(yaml, "fluxonkv_spec:\n  cluster_name: prod\n  instance: a\n"
		   "  cluster:\n    role: master\n    master: 10.77.0.1:7470\n"
		   "    listen: 0.0.0.0:7471\n    advertise: 10.77.0.1:7471\n"
		   "    secret: \"inline-secret-never-shown\"\n");
	ctl(&r, "check", yaml, NULL);
	FKV_ASSERT(r.status == 0, "status %d, stderr: %s", r.status, r.err);
	ASSERT_HAS(r.out, "  ssd tier      off (large_limit_size not set)\n"
		   "  cluster       role master, node name a (instance)\n"
		   "      master    10.77.0.1:7470\n"
		   "      listen    0.0.0.0:7471\n"
		   "      advertise 10.77.0.1:7471\n"
		   "      transport tcp\n"
		   "      heartbeat 1000 ms, lease 3500 ms, dead after 5000 ms\n"
		   "      state     /var/lib/fluxonkv\n"
		   "      secret    25 bytes from inline\n");
	FKV_ASSERT(!strstr(r.out, "never-shown") && !strstr(r.err, "never-shown"));
	ctl(&r, "check", "--json", yaml);
	FKV_ASSERT(r.status == 0, "status %d, stderr: %s", r.status, r.err);
	ASSERT_HAS(r.out, "\"roots\":[],\"cluster\":{\"node_name\":\"a\",\"node_name_default\":true,\"role\":\"master\",\"master\":\"10.77.0.1:7470\",\"listen\":\"0.0.0.0:7471\",\"advertise\":\"10.77.0.1:7471\",\"advertise_default\":false,\"transport\":\"tcp\",\"heartbeat_ms\":1000,\"lease_ms\":3500,\"dead_after_ms\":5000,\"secret_bytes\":25,\"secret_source\":\"inline\",\"secret_file\":null,\"state_dir\":\"/var/lib/fluxonkv\"},\"tenants\":[],\"warnings\":[],\"errors\":[]}\n");
	FKV_ASSERT(!strstr(r.out, "never-shown"));

	/* node b: secret from a file, IPv6, defaults */
	FMT(sec, "%s/cluster.secret", tmpdir);
	write_file(sec, "file-secret-never-shown\n");
	FKV_ASSERT_EQ(chmod(sec, 0600), 0);
	FMT(yaml, "%s/b.yaml", tmpdir);
	FMT(text, "fluxonkv_spec:\n  instance: b\n  cluster:\n    node_name: nb\n"
	    "    role: node\n    master: \"[fd00::1]:7470\"\n"
	    "    listen: \"[fd00::2]:7471\"\n    transport: auto\n"
	    "    heartbeat_ms: 200\n    dead_after_ms: 1000\n"
	    "    secret_file: %s\n", sec);
	write_file(yaml, text);
	ctl(&r, "check", yaml, NULL);
	FKV_ASSERT(r.status == 0, "status %d, stderr: %s", r.status, r.err);
	FMT(want, "  cluster       role node, node name nb\n"
	    "      master    [fd00::1]:7470\n"
	    "      listen    [fd00::2]:7471\n"
	    "      advertise [fd00::2]:7471 (listen)\n"
	    "      transport auto\n"
	    "      heartbeat 200 ms, lease 700 ms, dead after 1000 ms\n"
	    "      state     /var/lib/fluxonkv\n"
	    "      secret    23 bytes from file %s\n", sec);
	ASSERT_HAS(r.out, want);
	FKV_ASSERT(!strstr(r.out, "never-shown"));
	ctl(&r, "check", "--json", yaml);
	FKV_ASSERT(r.status == 0, "status %d, stderr: %s", r.status, r.err);
	FMT(want, "\"cluster\":{\"node_name\":\"nb\",\"node_name_default\":false,\"role\":\"node\",\"master\":\"[fd00::1]:7470\",\"listen\":\"[fd00::2]:7471\",\"advertise\":\"[fd00::2]:7471\",\"advertise_default\":true,\"transport\":\"auto\",\"heartbeat_ms\":200,\"lease_ms\":700,\"dead_after_ms\":1000,\"secret_bytes\":23,\"secret_source\":\"file\",\"secret_file\":\"%s\",\"state_dir\":\"/var/lib/fluxonkv\"}", sec);
	ASSERT_HAS(r.out, want);
	FKV_ASSERT(!strstr(r.out, "never-shown"));

	/* a readable secret file: invalid, exit 1, still not shown */
	FKV_ASSERT_EQ(chmod(sec, 0644), 0);
	ctl(&r, "check", yaml, NULL);
	FKV_ASSERT_EQ(r.status, 1);
	ASSERT_HAS(r.err, "b.yaml: invalid (1 error)\n");
	ASSERT_HAS(r.err, "mode 0644 lets group or others access the secret");
	FKV_ASSERT(!strstr(r.out, "never-shown") && !strstr(r.err, "never-shown"));
	ctl(&r, "check", "--json", yaml);
	FKV_ASSERT_EQ(r.status, 1);
	ASSERT_HAS(r.out, "\"valid\":false,\"warnings\":[],\"errors\":[\"");
	FKV_ASSERT(!strstr(r.out, "never-shown"));

	/* no cluster section: said so */
	write_file(yaml, "fluxonkv_spec: {}\n");
	ctl(&r, "check", yaml, NULL);
	FKV_ASSERT_EQ(r.status, 0);
	ASSERT_HAS(r.out, "  cluster       off (single node)\n");
}

FKV_TEST(ctl_config_usage_errors_exit_2)
{
	struct run r;

	ctl(&r, NULL, NULL, NULL);
	FKV_ASSERT_EQ(r.status, 2);
	ASSERT_HAS(r.err, "fluxonctl config: missing sub-command (check)\n");
	ctl(&r, "verify", NULL, NULL);
	FKV_ASSERT_EQ(r.status, 2);
	ASSERT_HAS(r.err, "unknown sub-command 'verify'");
	ctl(&r, "check", NULL, NULL);
	FKV_ASSERT_EQ(r.status, 2);
	ASSERT_HAS(r.err, "missing FILE");
	ctl(&r, "check", "a", "b");
	FKV_ASSERT_EQ(r.status, 2);
	ASSERT_HAS(r.err, "unexpected argument 'b'");
	ctl(&r, "check", "--yaml", "a");
	FKV_ASSERT_EQ(r.status, 2);
	ASSERT_HAS(r.err, "unknown option '--yaml'");
	ctl(&r, "--help", NULL, NULL);
	FKV_ASSERT_EQ(r.status, 0);
	ASSERT_HAS(r.out, "Usage: fluxonctl config check [--json] FILE\n");
}

FKV_TEST(daemon_settings_parse_and_are_checked)
{
	struct fkv_config c;
	char err[2048];

	parse_ok("fluxonkv_spec:\n"
		 "  policy: lru\n"
		 "  high_watermark: 90\n"
		 "  low_watermark: 80\n"
		 "  log_level: debug\n", &c);
	FKV_ASSERT(c.policy && !strcmp(c.policy, "lru"));
	FKV_ASSERT_EQ(c.high_pct, 90);
	FKV_ASSERT_EQ(c.low_pct, 80);
	FKV_ASSERT(c.log_level && !strcmp(c.log_level, "debug"));
	fkv_config_free(&c);

	/* unset: NULL / 0 (fluxond's defaults apply) */
	parse_ok("fluxonkv_spec:\n  policy: ~\n  log_level:\n", &c);
	FKV_ASSERT(c.policy == NULL && c.log_level == NULL);
	FKV_ASSERT_EQ(c.high_pct, 0);
	FKV_ASSERT_EQ(c.low_pct, 0);
	fkv_config_free(&c);

	parse_bad("fluxonkv_spec:\n"
		  "  policy: fifo\n"
		  "  high_watermark: 101\n"
		  "  low_watermark: 0\n"
		  "  log_level: loud\n", &c, err, sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 4);
	ASSERT_HAS(c.errors.v[0], "t.yaml:2:11: policy: \"fifo\": must be one of s3fifo, lru");
	ASSERT_HAS(c.errors.v[1], "high_watermark: \"101\": must be an integer from 1 to 100");
	ASSERT_HAS(c.errors.v[2], "low_watermark: \"0\": must be an integer from 1 to 100");
	ASSERT_HAS(c.errors.v[3], "log_level: \"loud\": must be one of error, warn, info, debug");
	fkv_config_free(&c);

	/* low above high, with the default standing in for the one unset */
	parse_bad("fluxonkv_spec:\n  low_watermark: 99\n", &c, err,
		  sizeof(err));
	FKV_ASSERT_EQ(c.errors.n, 1);
	ASSERT_HAS(c.errors.v[0], "low_watermark 99% is above high_watermark 98%");
	fkv_config_free(&c);
	parse_bad("fluxonkv_spec:\n  high_watermark: 50\n", &c, err,
		  sizeof(err));
	ASSERT_HAS(c.errors.v[0], "low_watermark 95% is above high_watermark 50%");
	fkv_config_free(&c);
	parse_ok("fluxonkv_spec:\n  high_watermark: 50\n  low_watermark: 40\n",
		 &c);
	fkv_config_free(&c);
}

/* ---- cluster.etcd (issue 32) ------------------------------------------- */

#define CL_ETCD	"    listen: 10.77.0.2:7471\n"				\
		"    secret: \"" SECRET "\"\n"

FKV_TEST(cluster_etcd_section_is_parsed_and_the_election_decides_the_role)
{
	struct fkv_config c;

	parse_ok(SPEC CL_ETCD "    master: 10.77.0.2:7470\n"
		 "    master_candidate: true\n"
		 "    etcd:\n"
		 "      endpoints: [\"http://10.77.0.9:2379\", \"http://etcd-b.lan:2379/\"]\n"
		 "      prefix: /fluxonkv/prod\n"
		 "      lease_ttl_ms: 5000\n", &c);
	FKV_ASSERT_EQ(c.cluster.netcd, 2);
	ASSERT_STREQ(c.cluster.etcd_endpoints[0], "http://10.77.0.9:2379");
	ASSERT_STREQ(c.cluster.etcd_endpoints[1], "http://etcd-b.lan:2379/");
	ASSERT_STREQ(c.cluster.etcd_prefix, "/fluxonkv/prod");
	FKV_ASSERT_EQ(c.cluster.etcd_lease_ttl_ms, 5000);
	FKV_ASSERT(c.cluster.master_candidate);
	/* a node until elected */
	FKV_ASSERT_EQ(c.cluster.role, FKV_ROLE_NODE);
	fkv_config_free(&c);

	/* defaults; no master needed by a node that is no candidate */
	parse_ok(SPEC CL_ETCD "    etcd: {endpoints: [\"http://127.0.0.1:2379\"]}\n",
		 &c);
	FKV_ASSERT_EQ(c.cluster.netcd, 1);
	FKV_ASSERT(c.cluster.etcd_prefix == NULL);
	FKV_ASSERT_EQ(c.cluster.etcd_lease_ttl_ms, FKV_ETCD_LEASE_TTL_MS_DEFAULT);
	FKV_ASSERT(!c.cluster.master_candidate);
	FKV_ASSERT_EQ(c.cluster.role, FKV_ROLE_NODE);
	fkv_config_free(&c);

	/* Without etcd nothing changes: no endpoint, no candidate. */
	parse_ok(SPEC CL_MIN, &c);
	FKV_ASSERT_EQ(c.cluster.netcd, 0);
	FKV_ASSERT(!c.cluster.master_candidate);
	fkv_config_free(&c);
}

FKV_TEST(cluster_etcd_settings_are_checked)
{
	cl_bad(SPEC CL_ETCD "    role: master\n    master: 10.77.0.2:7470\n"
	       "    etcd: {endpoints: [\"http://127.0.0.1:2379\"]}\n",
	       "t.yaml:6:11: cluster.role: the election on etcd decides it when cluster.etcd is set: remove role, set master_candidate");
	cl_bad(SPEC CL_ETCD "    master_candidate: true\n"
	       "    etcd: {endpoints: [\"http://127.0.0.1:2379\"]}\n",
	       "t.yaml:4:5: cluster: a master_candidate needs master (host:port of its own control listener, advertised while it leads)");
	cl_bad(SPEC CL_MIN "    master_candidate: true\n",
	       "t.yaml:8:23: cluster.master_candidate: needs cluster.etcd (the election)");
	cl_bad(SPEC CL_ETCD "    master_candidate: yes\n    master: 10.77.0.2:7470\n"
	       "    etcd: {endpoints: [\"http://127.0.0.1:2379\"]}\n",
	       "t.yaml:6:23: cluster.master_candidate: \"yes\": must be true or false");
	cl_bad(SPEC CL_ETCD "    etcd: {prefix: /x}\n",
	       "cluster.etcd: endpoints is required (a list of http://host:port)");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: []}\n",
	       "cluster.etcd.endpoints: 0 endpoints (1 to 8)");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: \"http://127.0.0.1:2379\"}\n",
	       "cluster.etcd.endpoints: must be a list");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"127.0.0.1:2379\"]}\n",
	       "cluster.etcd.endpoints[0]: \"127.0.0.1:2379\": must be http://host:port (https:// with tls)");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"https://127.0.0.1:2379\"]}\n",
	       "cluster.etcd.endpoints[0]: \"https://127.0.0.1:2379\": https needs cluster.etcd.tls");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"http://127.0.0.1:99999\"]}\n",
	       "cluster.etcd.endpoints[0]: \"http://127.0.0.1:99999\":");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"http://0.0.0.0:2379\"]}\n",
	       "a wildcard address cannot be dialed");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"http://h:1/v3\"]}\n",
	       "cluster.etcd.endpoints[0]: \"http://h:1/v3\":");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"http://h:1\"], prefix: x}\n",
	       "cluster.etcd.prefix: \"x\": must start with '/'");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"http://h:1\"], prefix: /x/}\n",
	       "cluster.etcd.prefix: \"/x/\": must start with '/', not end with one");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"http://h:1\"], lease_ttl_ms: 999}\n",
	       "cluster.etcd.lease_ttl_ms: \"999\": must be an integer from 1000 to 60000 (ms)");
	cl_bad(SPEC CL_ETCD "    etcd: {endpoints: [\"http://h:1\"], ttl: 1}\n",
	       "cluster.etcd: unknown key \"ttl\" (known: endpoints, prefix, lease_ttl_ms, tls)");
	cl_bad(SPEC CL_ETCD "    etcd: [a]\n",
	       "cluster.etcd: must be a mapping (endpoints, prefix, lease_ttl_ms, tls)");
}

/*
 * cluster.etcd.tls (issue 32: etcd over TLS): PEM files that exist now,
 * ca_file required, cert_file and key_file together; with them every
 * endpoint is https://, without them http://.
 */
FKV_TEST(cluster_etcd_tls_files_and_schemes_are_checked)
{
	char yaml[4 * PATH_MAX], ca[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
	struct fkv_config c;

	snprintf(ca, sizeof(ca), "%s", secret_file("ca.pem", "x", 1, 0644));
	snprintf(cert, sizeof(cert), "%s", secret_file("cert.pem", "x", 1,
						       0644));
	snprintf(key, sizeof(key), "%s", secret_file("key.pem", "x", 1, 0600));
	snprintf(yaml, sizeof(yaml), SPEC CL_ETCD
		 "    etcd:\n"
		 "      endpoints: [\"https://10.77.0.9:2379\"]\n"
		 "      tls: {ca_file: %s, cert_file: %s, key_file: %s}\n",
		 ca, cert, key);
	parse_ok(yaml, &c);
	ASSERT_STREQ(c.cluster.etcd_ca_file, ca);
	ASSERT_STREQ(c.cluster.etcd_cert_file, cert);
	ASSERT_STREQ(c.cluster.etcd_key_file, key);
	fkv_config_free(&c);
	/* server-side TLS only: no client certificate */
	snprintf(yaml, sizeof(yaml), SPEC CL_ETCD
		 "    etcd:\n"
		 "      tls: {ca_file: %s}\n"
		 "      endpoints: [\"https://etcd-a.lan:2379\"]\n", ca);
	parse_ok(yaml, &c);
	FKV_ASSERT(c.cluster.etcd_cert_file == NULL);
	fkv_config_free(&c);

	snprintf(yaml, sizeof(yaml), SPEC CL_ETCD
		 "    etcd:\n"
		 "      endpoints: [\"http://10.77.0.9:2379\"]\n"
		 "      tls: {ca_file: %s}\n", ca);
	cl_bad(yaml, "cluster.etcd.endpoints[0]: \"http://10.77.0.9:2379\": http with cluster.etcd.tls set: use https://");
	snprintf(yaml, sizeof(yaml), SPEC CL_ETCD
		 "    etcd:\n"
		 "      endpoints: [\"https://10.77.0.9:2379\"]\n"
		 "      tls: {ca_file: %s, cert_file: %s}\n", ca, cert);
	cl_bad(yaml, "cluster.etcd.tls: cert_file and key_file go together");
	snprintf(yaml, sizeof(yaml), SPEC CL_ETCD
		 "    etcd:\n"
		 "      endpoints: [\"https://10.77.0.9:2379\"]\n"
		 "      tls: {cert_file: %s, key_file: %s}\n", cert, key);
	cl_bad(yaml, "cluster.etcd.tls: ca_file is required");
	cl_bad(SPEC CL_ETCD "    etcd:\n"
	       "      endpoints: [\"https://10.77.0.9:2379\"]\n"
	       "      tls: {ca_file: /nonexistent/ca.pem}\n",
	       "cluster.etcd.tls.ca_file: \"/nonexistent/ca.pem\": No such file or directory");
	cl_bad(SPEC CL_ETCD "    etcd:\n"
	       "      endpoints: [\"https://10.77.0.9:2379\"]\n"
	       "      tls: {ca_file: ca.pem}\n",
	       "cluster.etcd.tls.ca_file: \"ca.pem\": must be an absolute path");
	cl_bad(SPEC CL_ETCD "    etcd:\n"
	       "      endpoints: [\"https://10.77.0.9:2379\"]\n"
	       "      tls: {ca_file: /tmp}\n",
	       "cluster.etcd.tls.ca_file: \"/tmp\": not a regular file");
	cl_bad(SPEC CL_ETCD "    etcd:\n"
	       "      endpoints: [\"https://10.77.0.9:2379\"]\n"
	       "      tls: {ca: /tmp/x}\n",
	       "cluster.etcd.tls: unknown key \"ca\" (known: ca_file, cert_file, key_file)");
	cl_bad(SPEC CL_ETCD "    etcd:\n"
	       "      endpoints: [\"https://10.77.0.9:2379\"]\n"
	       "      tls: yes\n",
	       "cluster.etcd.tls: must be a mapping (ca_file, cert_file, key_file)");
}

/* ---- tenants (issue 30) ------------------------------------------------ */

#define TSPEC	"fluxonkv_spec:\n  instance: n1\n  tenants:\n"

/* @yaml must be refused with @want among its messages. */
static void tenants_bad(const char *yaml, const char *want)
{
	struct fkv_config c;
	char err[2048];

	parse_bad(yaml, &c, err, sizeof(err));
	ASSERT_HAS(err, want);
	fkv_config_free(&c);
}

FKV_TEST(tenants_section_is_parsed_with_names_sizes_and_ids)
{
	struct fkv_config c;
	const struct fkv_tenant_config *t;

	parse_ok(TSPEC
		 "    - name: sglang\n"
		 "      id: 1\n"
		 "      uids: [1001, root]\n"
		 "      gids: [0, 4242]\n"
		 "      dram_bytes: 64GB\n"
		 "      ssd_bytes: 1099511627776\n"
		 "    - {name: vllm.a_b-2, id: 65535, uids: [7], dram_bytes: ~}\n",
		 &c);
	FKV_ASSERT_EQ(c.ntenants, 2);
	t = &c.tenants[0];
	ASSERT_STREQ(t->name, "sglang");
	FKV_ASSERT_EQ(t->id, 1);
	FKV_ASSERT_EQ(t->nuids, 2);
	FKV_ASSERT_EQ(t->uids[0], 1001);
	FKV_ASSERT_EQ(t->uids[1], 0);	/* "root", resolved */
	FKV_ASSERT_EQ(t->ngids, 2);
	FKV_ASSERT_EQ(t->gids[1], 4242);
	FKV_ASSERT_EQ(t->dram_bytes, 64 * GiB);
	FKV_ASSERT_EQ(t->ssd_bytes, TiB);
	t = &c.tenants[1];
	ASSERT_STREQ(t->name, "vllm.a_b-2");
	FKV_ASSERT_EQ(t->id, 65535);
	FKV_ASSERT_EQ(t->ngids, 0);
	FKV_ASSERT_EQ(t->dram_bytes, 0);	/* null: no quota */
	FKV_ASSERT_EQ(t->ssd_bytes, 0);
	FKV_ASSERT(fkv_tenant_by_name(c.tenants, c.ntenants, "vllm.a_b-2") ==
		   &c.tenants[1]);
	FKV_ASSERT(fkv_tenant_by_id(c.tenants, c.ntenants, 1) == &c.tenants[0]);
	FKV_ASSERT(fkv_tenant_by_id(c.tenants, c.ntenants, 0) == NULL);
	FKV_ASSERT(fkv_tenant_by_name(c.tenants, c.ntenants, "x") == NULL);
	FKV_ASSERT_EQ(c.warnings.n, 0);
	fkv_config_free(&c);
}

FKV_TEST(tenants_absent_null_or_empty_mean_none)
{
	static const char *const docs[] = {
		"fluxonkv_spec:\n  instance: n1\n",
		TSPEC,
		"fluxonkv_spec:\n  instance: n1\n  tenants: []\n",
	};
	struct fkv_config c;
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		parse_ok(docs[i], &c);
		FKV_ASSERT_EQ(c.ntenants, 0);
		FKV_ASSERT(c.tenants == NULL);
		fkv_config_free(&c);
	}
}

FKV_TEST(tenants_without_uids_or_gids_warn_root_only)
{
	struct fkv_config c;

	parse_ok(TSPEC "    - {name: ops, id: 9}\n", &c);
	FKV_ASSERT_EQ(c.warnings.n, 1);
	ASSERT_HAS(c.warnings.v[0],
		   "t.yaml:4:7: tenants[0] (\"ops\"): neither uids nor gids: only root may use it");
	fkv_config_free(&c);
}

FKV_TEST(tenant_names_are_checked_and_default_is_reserved)
{
	char long_name[80], yaml[256];

	tenants_bad(TSPEC "    - {name: default, id: 1}\n",
		    "t.yaml:4:14: tenants[0].name: \"default\": is reserved (tenant 0, the keys of no tenant)");
	tenants_bad(TSPEC "    - {name: \"a/b\", id: 1}\n",
		    "tenants[0].name: \"a/b\": may only contain letters, digits, '.', '_' and '-'");
	tenants_bad(TSPEC "    - {name: \"\", id: 1}\n",
		    "tenants[0].name: \"\": is empty");
	memset(long_name, 'n', 64);
	long_name[64] = '\0';
	FMT(yaml, TSPEC "    - {name: %s, id: 1}\n", long_name);
	tenants_bad(yaml, "is longer than 63 bytes");
	long_name[63] = '\0';	/* 63: the longest */
	FMT(yaml, TSPEC "    - {name: %s, id: 1, uids: [1]}\n", long_name);
	{
		struct fkv_config c;

		parse_ok(yaml, &c);
		FKV_ASSERT_EQ(strlen(c.tenants[0].name), 63);
		fkv_config_free(&c);
	}
	tenants_bad(TSPEC "    - {id: 1}\n", "t.yaml:4:7: tenants[0]: name is required");
	tenants_bad(TSPEC "    - {name: a}\n",
		    "t.yaml:4:7: tenants[0]: id is required (1 to 65535)");
}

FKV_TEST(tenant_ids_are_1_to_65535_and_unique_as_are_names)
{
	tenants_bad(TSPEC "    - {name: a, id: 0}\n",
		    "tenants[0].id: \"0\": must be an integer from 1 to 65535 (a tenant id; 0 is the default tenant)");
	tenants_bad(TSPEC "    - {name: a, id: 65536}\n",
		    "tenants[0].id: \"65536\": must be an integer from 1 to 65535");
	tenants_bad(TSPEC "    - {name: a, id: -1}\n",
		    "tenants[0].id: \"-1\": must be an integer");
	tenants_bad(TSPEC "    - {name: a, id: 3}\n    - {name: b, id: 3}\n",
		    "t.yaml:5:7: tenants[1].id: 3 is already tenants[0]'s (\"a\")");
	tenants_bad(TSPEC "    - {name: a, id: 3}\n    - {name: a, id: 4}\n",
		    "t.yaml:5:7: tenants[1].name: \"a\" is already tenants[0]'s");
}

FKV_TEST(tenant_sections_are_strict_mappings_and_lists)
{
	tenants_bad(TSPEC "    - {name: a, id: 1, quota: 5}\n",
		    "tenants[0]: unknown key \"quota\" (known: name, id, uids, gids, dram_bytes, ssd_bytes)");
	tenants_bad(TSPEC "    - {name: a, id: 1, id: 2}\n",
		    "tenants[0]: duplicate key id");
	tenants_bad(TSPEC "    - a\n",
		    "tenants[0]: must be a mapping (name, id, uids, gids, dram_bytes, ssd_bytes)");
	tenants_bad("fluxonkv_spec:\n  tenants: {name: a, id: 1}\n",
		    "tenants: must be a list");
	tenants_bad(TSPEC "    - {name: a, id: 1, uids: 5}\n",
		    "tenants[0].uids: must be a list");
}

FKV_TEST(tenant_uids_and_gids_are_numbers_or_known_names)
{
	tenants_bad(TSPEC "    - {name: a, id: 1, uids: [no-such-user-fkv]}\n",
		    "tenants[0].uids[0]: \"no-such-user-fkv\": no such user");
	tenants_bad(TSPEC "    - {name: a, id: 1, gids: [no-such-group-fkv]}\n",
		    "tenants[0].gids[0]: \"no-such-group-fkv\": no such group");
	tenants_bad(TSPEC "    - {name: a, id: 1, uids: [4294967295]}\n",
		    "tenants[0].uids[0]: \"4294967295\": must be an integer from 0 to 4294967294 (a uid)");
	tenants_bad(TSPEC "    - {name: a, id: 1, gids: [5, 6, 5]}\n",
		    "tenants[0].gids[2]: gid 5 is listed twice");
	tenants_bad(TSPEC "    - {name: a, id: 1, uids: [0, root]}\n",
		    "tenants[0].uids[1]: uid 0 is listed twice");
	tenants_bad(TSPEC "    - {name: a, id: 1, uids: [~]}\n",
		    "tenants[0].uids[0]: is empty");
}

FKV_TEST(tenant_quotas_use_the_size_grammar)
{
	tenants_bad(TSPEC "    - {name: a, id: 1, dram_bytes: 5XB}\n",
		    "tenants[0].dram_bytes: \"5XB\": unknown unit \"XB\"");
	tenants_bad(TSPEC "    - {name: a, id: 1, ssd_bytes: 100}\n",
		    "tenants[0].ssd_bytes: \"100\":");
	tenants_bad(TSPEC "    - {name: a, id: 1, ssd_bytes: [1]}\n",
		    "tenants[0].ssd_bytes: must be an integer (bytes) or a size string such as \"64GB\"");
}

/* A list of @n tenants, each with @ids uids. */
static char *tenants_yaml(int n, int ids)
{
	char *yaml = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&yaml, &len);
	int i, j;

	FKV_ASSERT(f);
	fputs(TSPEC, f);
	for (i = 0; i < n; i++) {
		fprintf(f, "    - {name: t%d, id: %d, uids: [", i, i + 1);
		for (j = 0; j < ids; j++)
			fprintf(f, "%s%d", j ? ", " : "", 1000 + j);
		fputs("]}\n", f);
	}
	FKV_ASSERT_EQ(fclose(f), 0);
	return yaml;
}

FKV_TEST(tenants_are_limited_to_256_with_64_uids_and_gids_each)
{
	struct fkv_config c;
	char *yaml;

	yaml = tenants_yaml(FKV_TENANTS_MAX, FKV_TENANT_IDS_MAX);
	parse_ok(yaml, &c);
	FKV_ASSERT_EQ(c.ntenants, FKV_TENANTS_MAX);
	FKV_ASSERT_EQ(c.tenants[255].nuids, FKV_TENANT_IDS_MAX);
	fkv_config_free(&c);
	free(yaml);
	yaml = tenants_yaml(FKV_TENANTS_MAX + 1, 1);
	tenants_bad(yaml, "t.yaml:4:5: tenants: 257 entries (at most 256)");
	free(yaml);
	yaml = tenants_yaml(1, FKV_TENANT_IDS_MAX + 1);
	tenants_bad(yaml, "tenants[0].uids: 65 entries (at most 64)");
	free(yaml);
	/* the uapi's limits are the parser's */
	FKV_ASSERT_EQ(FKV_TENANTS_MAX, 256);
	FKV_ASSERT_EQ(FKV_TENANT_IDS_MAX, 64);
}
