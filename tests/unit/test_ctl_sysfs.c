// SPDX-License-Identifier: GPL-2.0
/*
 * fluxonctl's sysfs reader and the stats/status renderers, against a fake
 * /sys/kernel/fluxonkv/ in a temporary directory ($FLUXONKV_SYSFS).
 */
#include <ctype.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../../userspace/fluxonctl/ctl_format.h"
#include "../../userspace/fluxonctl/ctl_latency.h"
#include "../../userspace/fluxonctl/ctl_sysfs.h"
#include "../../selftests/fkv_test.h"
#include "prom_expo.h"

static char sysdir[64];

static void put_file(const char *name, const char *text)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", sysdir, name);
	f = fopen(path, "w");
	FKV_ASSERT(f, "%s", path);
	fputs(text, f);
	FKV_ASSERT_EQ(fclose(f), 0);
}

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	return remove(path);
}

/* Remove the fake directory (left behind when a test fails, to look at). */
static void fake_remove(void)
{
	nftw(sysdir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* An empty fake directory, exported as $FLUXONKV_SYSFS. */
static void fake_empty(void)
{
	strcpy(sysdir, "/tmp/fkv-sysfs-XXXXXX");
	FKV_ASSERT(mkdtemp(sysdir));
	setenv(CTL_SYSFS_ENV, sysdir, 1);
}

/* What a loaded module with a daemon shows (values as the kernel writes). */
static void fake_module(void)
{
	fake_empty();
	put_file("version", "0.1.0\n");
	put_file("abi_version", "1\n");
	put_file("segment_capacity_bytes", "67108864\n");
	put_file("segment_used_bytes", "16777216\n");
	put_file("daemon_pid", "4242\n");
	put_file("replicas", "3\n");
	put_file("holders", "2\n");
	put_file("puts", "10\n");
	put_file("gets", "20\n");
	put_file("hits_memory", "15\n");
	put_file("hits_ssd", "1\n");
	put_file("hits_remote", "2\n");
	put_file("fetches", "3\n");
	put_file("fetch_errors", "1\n");
	put_file("fetch_abandoned", "0\n");
	put_file("fetch_expired", "0\n");
	put_file("misses", "4\n");
	put_file("local_misses", "3\n");
	put_file("local_refills", "1\n");
	put_file("refills_async", "1\n");
	put_file("local_unsure", "0\n");
	put_file("lease_refused", "2\n");
	put_file("hits_alone", "3\n");
	put_file("promotions", "1\n");
	put_file("promotions_refused", "0\n");
	put_file("deletes", "5\n");
	put_file("evictions", "6\n");
	put_file("replica_drops", "11\n");
	put_file("upcall_timeouts", "7\n");
	put_file("puts_abandoned", "1\n");
	put_file("puts_local", "12\n");
	put_file("puts_one_trip", "13\n");
	put_file("upcall_errors", "8\n");
	put_file("send_waits", "4\n");
	put_file("room_waits", "9\n");
	put_file("room_by_address", "2\n");
	put_file("room_pinned", "1\n");
	put_file("compactions", "3\n");
	put_file("compacted_bytes", "12582912\n");
	put_file("compact_waits", "0\n");
	put_file("clean_drops", "4\n");
	put_file("clean_drop_bytes", "4194304\n");
	put_file("clean_reserve_runs", "1\n");
	put_file("dropped_notes_full", "0\n");
	put_file("faults_refused", "3\n");
	put_file("tenant_binds", "5\n");
	put_file("tenant_binds_refused", "2\n");
	/* an SSD tier of 4 GiB, a quarter used */
	put_file("kv_ssd_capacity_bytes", "4294967296\n");
	put_file("kv_ssd_used_bytes", "1073741824\n");
	put_file("ssd_writes", "21\n");
	put_file("ssd_write_bytes", "22020096\n");
	put_file("ssd_reads", "23\n");
	put_file("ssd_read_bytes", "24117248\n");
	put_file("ssd_io_errors", "25\n");
	put_file("ssd_persist_errors", "26\n");
	put_file("ssd_evictions", "27\n");
	put_file("ssd_busy_waits", "28\n");
	put_file("ssd_queue_waits", "5\n");
	put_file("ssd_commits_published", "29\n");
	put_file("ssd_commits_ignored", "30\n");
	put_file("ssd_notices_dropped", "31\n");
	put_file("ssd_revokes", "32\n");
	put_file("ssd_unrouted", "37\n");
	put_file("ssd_csum_errors", "33\n");
	put_file("kv_ssd_meta_bytes", "34816\n");
	put_file("ssd_meta_evictions", "35\n");
	put_file("ssd_meta_refused", "36\n");
	put_file("ssd_shards_offline", "0\n");
	put_file("ssd_shards_reclaimed", "0\n");
}

/* A module older than the SSD tier: none of its files. */
static void fake_module_without_ssd(void)
{
	static const char *const ssd[] = {
		"kv_ssd_capacity_bytes", "kv_ssd_used_bytes", "ssd_writes",
		"ssd_write_bytes", "ssd_reads", "ssd_read_bytes",
		"ssd_io_errors", "ssd_persist_errors", "ssd_evictions",
		"ssd_busy_waits", "ssd_queue_waits", "ssd_commits_published",
		"ssd_commits_ignored", "ssd_notices_dropped", "ssd_revokes",
		"ssd_unrouted", "ssd_csum_errors", "kv_ssd_meta_bytes", "ssd_meta_evictions",
		"ssd_meta_refused", "ssd_shards_offline", "ssd_shards_reclaimed",
	};
	char path[128];
	size_t i;

	fake_module();
	for (i = 0; i < sizeof(ssd) / sizeof(ssd[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", sysdir, ssd[i]);
		FKV_ASSERT_EQ(unlink(path), 0);
	}
}

static struct ctl_stats load(void)
{
	struct ctl_sysfs s;
	struct ctl_stats st;

	FKV_ASSERT_EQ(ctl_sysfs_init(&s), 0);
	FKV_ASSERT_EQ(ctl_stats_load(&s, &st), 0);
	return st;
}

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

/*
 * Helpers, not macros: the harness pastes an assertion's condition into a
 * printf format, so expected texts with '%' cannot appear in one.
 */
static void diag_block(const char *label, const char *text)
{
	const char *nl;

	fkv_diag("%s:", label);
	for (; *text; text = nl + 1) {
		nl = strchrnul(text, '\n');
		fkv_diag("  %.*s", (int)(nl - text), text);
		if (!*nl)
			break;
	}
}

static void assert_has(const char *hay, const char *needle)
{
	const char *hit = strstr(hay, needle);

	if (!hit) {
		diag_block("missing", needle);
		diag_block("in", hay);
	}
	FKV_ASSERT(hit != NULL);
}

static void assert_str_eq(const char *got, const char *want)
{
	int diff = strcmp(got, want);

	if (diff) {
		diag_block("got", got);
		diag_block("want", want);
	}
	FKV_ASSERT(diff == 0);
}

#define ASSERT_HAS(hay, needle) assert_has((hay), (needle))

FKV_TEST(the_directory_is_the_environment_override_or_sys_kernel_fluxonkv)
{
	struct ctl_sysfs s;

	unsetenv(CTL_SYSFS_ENV);
	FKV_ASSERT_EQ(ctl_sysfs_init(&s), 0);
	FKV_ASSERT(!strcmp(s.dir, "/sys/kernel/fluxonkv"), "%s", s.dir);
	setenv(CTL_SYSFS_ENV, "/tmp/elsewhere", 1);
	FKV_ASSERT_EQ(ctl_sysfs_init(&s), 0);
	FKV_ASSERT(!strcmp(s.dir, "/tmp/elsewhere"), "%s", s.dir);
}

FKV_TEST(a_missing_directory_means_the_module_is_not_loaded)
{
	struct ctl_sysfs s;
	struct ctl_stats st;

	setenv(CTL_SYSFS_ENV, "/nonexistent/fluxonkv", 1);
	FKV_ASSERT_EQ(ctl_sysfs_init(&s), 0);
	FKV_ASSERT(!ctl_sysfs_present(&s));
	FKV_ASSERT_EQ(ctl_stats_load(&s, &st), -ENOENT);
}

FKV_TEST(numbers_are_read_strictly)
{
	struct ctl_sysfs s;
	uint64_t v = 0;

	fake_empty();
	FKV_ASSERT_EQ(ctl_sysfs_init(&s), 0);
	put_file("ok", "18446744073709551615\n");
	put_file("neg", "-1\n");
	put_file("junk", "12abc\n");
	put_file("space", " 5\n");
	put_file("big", "18446744073709551616\n");
	put_file("empty", "");
	FKV_ASSERT_EQ(ctl_sysfs_read_u64(&s, "ok", &v), 0);
	FKV_ASSERT(v == UINT64_MAX);
	FKV_ASSERT_EQ(ctl_sysfs_read_u64(&s, "neg", &v), -EINVAL);
	FKV_ASSERT_EQ(ctl_sysfs_read_u64(&s, "junk", &v), -EINVAL);
	FKV_ASSERT_EQ(ctl_sysfs_read_u64(&s, "space", &v), -EINVAL);
	FKV_ASSERT_EQ(ctl_sysfs_read_u64(&s, "big", &v), -EINVAL);
	FKV_ASSERT_EQ(ctl_sysfs_read_u64(&s, "empty", &v), -EINVAL);
	FKV_ASSERT_EQ(ctl_sysfs_read_u64(&s, "absent", &v), -ENOENT);
	fake_remove();
}

FKV_TEST(strings_lose_their_trailing_newline)
{
	struct ctl_sysfs s;
	char buf[16];

	fake_empty();
	FKV_ASSERT_EQ(ctl_sysfs_init(&s), 0);
	put_file("version", "1.2.3\n");
	FKV_ASSERT_EQ(ctl_sysfs_read_str(&s, "version", buf, sizeof(buf)), 0);
	FKV_ASSERT(!strcmp(buf, "1.2.3"), "%s", buf);
	/* too long for the buffer: truncated, still terminated */
	FKV_ASSERT_EQ(ctl_sysfs_read_str(&s, "version", buf, 4), 0);
	FKV_ASSERT(!strcmp(buf, "1.2"), "%s", buf);
	fake_remove();
}

FKV_TEST(a_snapshot_has_every_known_attribute_in_order_then_numeric_extras)
{
	struct ctl_stats st;
	size_t i;

	fake_module();
	put_file("zz_new_counter", "9\n");
	put_file("aa_new_gauge", "1\n");
	put_file("not_a_number", "hello\n");
	put_file("bad-name", "3\n");
	FKV_ASSERT_EQ(mkdir(strcat(sysdir, "/subdir"), 0755), 0);
	sysdir[strlen(sysdir) - strlen("/subdir")] = '\0';

	st = load();
	FKV_ASSERT_EQ(st.n, ctl_stat_ndefs + 2);
	for (i = 0; i < ctl_stat_ndefs; i++) {
		FKV_ASSERT(!strcmp(st.v[i].name, ctl_stat_defs[i].name));
		FKV_ASSERT_EQ(st.v[i].err, 0);
	}
	FKV_ASSERT(!strcmp(st.v[i].name, "aa_new_gauge"));
	FKV_ASSERT(!strcmp(st.v[i + 1].name, "zz_new_counter"));
	FKV_ASSERT_EQ(st.v[i + 1].value, 9);
	FKV_ASSERT(!strcmp(ctl_stats_get(&st, "version")->str, "0.1.0"));
	FKV_ASSERT_EQ(ctl_stats_get(&st, "segment_used_bytes")->value, 16777216);
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(the_snapshot_covers_every_attribute_the_module_documents)
{
	static const char *const documented[] = {
		"version", "abi_version", "segment_capacity_bytes",
		"segment_used_bytes", "daemon_pid", "replicas", "holders",
		"puts", "gets", "hits_memory", "hits_ssd", "hits_remote",
		"fetches", "fetch_errors", "fetch_abandoned", "fetch_expired",
		"misses",
		"local_misses", "local_refills", "refills_async", "local_unsure",
		"lease_refused",
		"hits_alone",
		"promotions",
		"promotions_refused", "deletes",
		"evictions", "replica_drops", "upcall_timeouts",
		"puts_abandoned", "puts_local", "puts_one_trip", "upcall_errors",
		"send_waits",
		"room_waits",
		"room_by_address", "room_pinned", "compactions",
		"compacted_bytes", "compact_waits",
		"clean_drops", "clean_drop_bytes", "clean_reserve_runs",
		"dropped_notes_full",
		"faults_refused", "tenant_binds", "tenant_binds_refused",
		"kv_ssd_capacity_bytes", "kv_ssd_used_bytes", "ssd_writes",
		"ssd_write_bytes", "ssd_reads", "ssd_read_bytes",
		"ssd_io_errors", "ssd_persist_errors", "ssd_evictions",
		"ssd_busy_waits", "ssd_queue_waits", "ssd_commits_published",
		"ssd_commits_ignored", "ssd_notices_dropped", "ssd_revokes",
		"ssd_unrouted", "ssd_csum_errors", "kv_ssd_meta_bytes", "ssd_meta_evictions",
		"ssd_meta_refused", "ssd_shards_offline", "ssd_shards_reclaimed",
	};
	struct ctl_stats st;
	size_t i;

	fake_module();
	st = load();
	for (i = 0; i < sizeof(documented) / sizeof(documented[0]); i++) {
		const struct ctl_stat *x = ctl_stats_get(&st, documented[i]);

		FKV_EXPECT(x != NULL, "%s", documented[i]);
		/* known, typed: none falls through to "untyped" */
		FKV_EXPECT(x && x->def, "%s is not in ctl_stat_defs",
			   documented[i]);
	}
	/* and the table knows nothing the module does not document */
	FKV_ASSERT_EQ(ctl_stat_ndefs, sizeof(documented) / sizeof(documented[0]));
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(stats_as_json_are_one_flat_object_with_null_for_unreadable_files)
{
	struct ctl_stats st;
	char *out;

	fake_module();
	unlink(strcat(sysdir, "/hits_ssd"));
	sysdir[strlen(sysdir) - strlen("/hits_ssd")] = '\0';
	put_file("version", "0.1\"x\n");
	st = load();
	out = CAPTURE(ctl_render_stats_json(f, &st, NULL));
	assert_str_eq(out,
		"{\"version\":\"0.1\\\"x\",\"abi_version\":1,"
		"\"segment_capacity_bytes\":67108864,"
		"\"segment_used_bytes\":16777216,\"daemon_pid\":4242,"
		"\"replicas\":3,\"holders\":2,\"puts\":10,\"gets\":20,"
		"\"hits_memory\":15,\"hits_ssd\":null,\"hits_remote\":2,"
		"\"fetches\":3,\"fetch_errors\":1,\"fetch_abandoned\":0,"
		"\"fetch_expired\":0,"
		"\"misses\":4,"
		"\"local_misses\":3,\"local_refills\":1,\"refills_async\":1,"
		"\"local_unsure\":0,\"lease_refused\":2,\"hits_alone\":3,"
		"\"promotions\":1,"
		"\"promotions_refused\":0,"
		"\"deletes\":5,\"evictions\":6,\"replica_drops\":11,"
		"\"upcall_timeouts\":7,\"puts_abandoned\":1,\"puts_local\":12,"
		"\"puts_one_trip\":13,"
		"\"upcall_errors\":8,\"send_waits\":4,\"room_waits\":9,"
		"\"room_by_address\":2,\"room_pinned\":1,"
		"\"compactions\":3,\"compacted_bytes\":12582912,"
		"\"compact_waits\":0,"
		"\"clean_drops\":4,\"clean_drop_bytes\":4194304,"
		"\"clean_reserve_runs\":1,\"dropped_notes_full\":0,"
		"\"faults_refused\":3,\"tenant_binds\":5,"
		"\"tenant_binds_refused\":2,"
		"\"kv_ssd_capacity_bytes\":4294967296,"
		"\"kv_ssd_used_bytes\":1073741824,\"ssd_writes\":21,"
		"\"ssd_write_bytes\":22020096,\"ssd_reads\":23,"
		"\"ssd_read_bytes\":24117248,\"ssd_io_errors\":25,"
		"\"ssd_persist_errors\":26,\"ssd_evictions\":27,"
		"\"ssd_busy_waits\":28,\"ssd_queue_waits\":5,"
		"\"ssd_commits_published\":29,"
		"\"ssd_commits_ignored\":30,\"ssd_notices_dropped\":31,"
		"\"ssd_revokes\":32,\"ssd_unrouted\":37,"
		"\"ssd_csum_errors\":33,"
		"\"kv_ssd_meta_bytes\":34816,\"ssd_meta_evictions\":35,"
		"\"ssd_meta_refused\":36,\"ssd_shards_offline\":0,"
		"\"ssd_shards_reclaimed\":0}\n");
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

/* The exposition format is valid (prom_expo.h); how many samples. */
static int assert_valid_exposition(const char *text)
{
	char *copy = strdup(text);
	struct prom_expo_result r;

	FKV_ASSERT(copy);
	r = prom_expo_check(copy);
	free(copy);
	return r.samples;
}

FKV_TEST(stats_for_prometheus_have_help_type_and_the_reference_names)
{
	struct ctl_stats st;
	char *out;

	fake_module();
	st = load();
	out = CAPTURE(ctl_render_stats_prometheus(f, &st, NULL));
	ASSERT_HAS(out, "# HELP fluxonkv_puts_total Puts completed.\n"
			"# TYPE fluxonkv_puts_total counter\n"
			"fluxonkv_puts_total 10\n");
	ASSERT_HAS(out, "# TYPE fluxonkv_upcall_errors_total counter\n"
			"fluxonkv_upcall_errors_total 8\n");
	ASSERT_HAS(out, "# TYPE fluxonkv_holders gauge\nfluxonkv_holders 2\n");
	ASSERT_HAS(out, "# TYPE kvcache_segment_capacity_bytes gauge\n"
			"kvcache_segment_capacity_bytes 67108864\n");
	ASSERT_HAS(out, "# TYPE kvcache_segment_used_bytes gauge\n"
			"kvcache_segment_used_bytes 16777216\n");
	ASSERT_HAS(out, "# TYPE fluxonkv_segment_used_bytes gauge\n"
			"fluxonkv_segment_used_bytes 16777216\n");
	ASSERT_HAS(out, "fluxonkv_info{version=\"0.1.0\",abi_version=\"1\"} 1\n");
	ASSERT_HAS(out, "fluxonkv_daemon_up 1\n");
	/* the SSD tier: the reference's gauges by their exact names */
	ASSERT_HAS(out, "# HELP kv_ssd_capacity_bytes Bytes of SSD attached as the tier below DRAM (0 = no SSD tier).\n"
			"# TYPE kv_ssd_capacity_bytes gauge\n"
			"kv_ssd_capacity_bytes 4294967296\n");
	ASSERT_HAS(out, "# TYPE kv_ssd_used_bytes gauge\n"
			"kv_ssd_used_bytes 1073741824\n");
	ASSERT_HAS(out, "# TYPE fluxonkv_kv_ssd_used_bytes gauge\n"
			"fluxonkv_kv_ssd_used_bytes 1073741824\n");
	/* its counters end in _total */
	ASSERT_HAS(out, "# HELP fluxonkv_ssd_writes_total Values written to the SSD tier.\n"
			"# TYPE fluxonkv_ssd_writes_total counter\n"
			"fluxonkv_ssd_writes_total 21\n");
	ASSERT_HAS(out, "# TYPE fluxonkv_ssd_write_bytes_total counter\n"
			"fluxonkv_ssd_write_bytes_total 22020096\n");
	ASSERT_HAS(out, "# TYPE fluxonkv_ssd_revokes_total counter\n"
			"fluxonkv_ssd_revokes_total 32\n");
	ASSERT_HAS(out, "# TYPE fluxonkv_ssd_commits_ignored_total counter\n"
			"fluxonkv_ssd_commits_ignored_total 30\n");
	FKV_ASSERT(strstr(out, "untyped") == NULL, "every known file is typed");
	FKV_ASSERT(strstr(out, "# HELP fluxonkv_ssd_writes ") == NULL);
	/* no latency was asked for: no histogram */
	FKV_ASSERT(strstr(out, "latency") == NULL);
	assert_valid_exposition(out);
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(prometheus_output_escapes_labels_and_skips_unreadable_values)
{
	struct ctl_stats st;
	char *out;

	fake_module();
	put_file("version", "a\"b\\c\n");
	put_file("daemon_pid", "0\n");
	put_file("misses", "garbage\n");
	put_file("brand_new", "5\n");
	st = load();
	out = CAPTURE(ctl_render_stats_prometheus(f, &st, NULL));
	ASSERT_HAS(out, "fluxonkv_info{version=\"a\\\"b\\\\c\",abi_version=\"1\"} 1\n");
	ASSERT_HAS(out, "fluxonkv_daemon_up 0\n");
	ASSERT_HAS(out, "# TYPE fluxonkv_brand_new untyped\nfluxonkv_brand_new 5\n");
	/* an unreadable counter is left out, not exported as 0 */
	FKV_ASSERT(strstr(out, "fluxonkv_misses") == NULL);
	assert_valid_exposition(out);
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(stats_for_humans_show_sizes_in_binary_units_and_the_used_share)
{
	struct ctl_stats st;
	char *out;

	fake_module();
	put_file("evictions", "x\n");
	st = load();
	out = CAPTURE(ctl_render_stats_human(f, &st, NULL));
	ASSERT_HAS(out, "segment_capacity_bytes   67108864 (64.0 MiB)\n");
	ASSERT_HAS(out, "segment_used_bytes       16777216 (16.0 MiB, 25.0%)\n");
	ASSERT_HAS(out, "kv_ssd_capacity_bytes    4294967296 (4.0 GiB)\n");
	ASSERT_HAS(out, "kv_ssd_used_bytes        1073741824 (1.0 GiB, 25.0%)\n");
	ASSERT_HAS(out, "ssd_write_bytes          22020096 (21.0 MiB)\n");
	ASSERT_HAS(out, "ssd_busy_waits           28\n");
	ASSERT_HAS(out, "version                  0.1.0\n");
	ASSERT_HAS(out, "puts                     10\n");
	ASSERT_HAS(out, "evictions                unreadable: Invalid argument\n");
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

static struct ctl_genl_version nl_ok = {
	.have = CTL_GV_VERSION | CTL_GV_ABI | CTL_GV_SEGMENT_SIZE |
		CTL_GV_SEGMENT_USED | CTL_GV_DAEMON_PID,
	.version = "0.1.0",
	.abi = 1,
	.segment_size = 67108864,
	.segment_used = 16777216,
	.daemon_pid = 4242,
};

FKV_TEST(status_for_humans_summarises_module_daemon_segment_and_netlink)
{
	struct ctl_status s = { .nl_queried = true, .nl = nl_ok };
	struct ctl_stats st;
	char *out;

	fake_module();
	st = load();
	s.sysfs_dir = sysdir;
	s.stats = &st;
	out = CAPTURE(ctl_render_status_human(f, &s));
	assert_str_eq(out,
		"module:    loaded, version 0.1.0, ABI 1\n"
		"daemon:    connected (pid 4242)\n"
		"segment:   16.0 MiB of 64.0 MiB used (25.0%)\n"
		"ssd:       1.0 GiB of 4.0 GiB used (25.0%)\n"
		"replicas:  3\n"
		"holders:   2\n"
		"netlink:   family \"fluxonkv\" reachable (version 0.1.0, ABI 1, daemon pid 4242)\n");
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(status_reports_an_absent_daemon_and_a_netlink_failure_with_sysfs)
{
	struct ctl_status s = { .nl_queried = true };
	struct ctl_stats st;
	char *out;

	fake_module();
	put_file("daemon_pid", "0\n");
	st = load();
	s.sysfs_dir = sysdir;
	s.stats = &st;
	s.nl.err = -ENOENT;
	strcpy(s.nl.error, "generic netlink family \"fluxonkv\" not found");
	out = CAPTURE(ctl_render_status_human(f, &s));
	ASSERT_HAS(out, "daemon:    not connected\n");
	ASSERT_HAS(out, "segment:   16.0 MiB of 64.0 MiB used (25.0%)\n");
	ASSERT_HAS(out, "netlink:   error: generic netlink family \"fluxonkv\" not found\n");
	free(out);

	out = CAPTURE(ctl_render_status_json(f, &s));
	ASSERT_HAS(out, "\"daemon_connected\":false,\"daemon_pid\":0,");
	ASSERT_HAS(out, "\"netlink\":{\"ok\":false,\"error\":"
			"\"generic netlink family \\\"fluxonkv\\\" not found\"}}\n");
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(status_as_json_carries_sysfs_and_the_netlink_reply)
{
	struct ctl_status s = { .nl_queried = true, .nl = nl_ok };
	struct ctl_stats st;
	char *out;

	fake_module();
	st = load();
	s.sysfs_dir = sysdir;
	s.stats = &st;
	out = CAPTURE(ctl_render_status_json(f, &s));
	assert_str_eq(out,
		"{\"module_loaded\":true,\"version\":\"0.1.0\",\"abi_version\":1,"
		"\"daemon_connected\":true,\"daemon_pid\":4242,"
		"\"segment_capacity_bytes\":67108864,"
		"\"segment_used_bytes\":16777216,\"segment_used_percent\":25.00,"
		"\"kv_ssd_capacity_bytes\":4294967296,"
		"\"kv_ssd_used_bytes\":1073741824,\"kv_ssd_used_percent\":25.00,"
		"\"ssd_shards_offline\":0,"
		"\"replicas\":3,\"holders\":2,"
		"\"netlink\":{\"ok\":true,\"version\":\"0.1.0\",\"abi_version\":1,"
		"\"segment_size\":67108864,\"segment_used\":16777216,"
		"\"daemon_pid\":4242}}\n");
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(status_of_an_unloaded_module_says_so)
{
	struct ctl_status s = { .sysfs_dir = "/sys/kernel/fluxonkv" };
	char *out;

	out = CAPTURE(ctl_render_status_human(f, &s));
	assert_str_eq(out, "module:    not loaded (no /sys/kernel/fluxonkv)\n");
	free(out);
	out = CAPTURE(ctl_render_status_json(f, &s));
	assert_str_eq(out, "{\"module_loaded\":false}\n");
	free(out);
}

FKV_TEST(status_says_none_for_an_ssd_tier_with_no_capacity)
{
	struct ctl_status s = { .nl_queried = false };
	struct ctl_stats st;
	char *out;

	fake_module();
	put_file("kv_ssd_capacity_bytes", "0\n");
	put_file("kv_ssd_used_bytes", "0\n");
	st = load();
	s.sysfs_dir = sysdir;
	s.stats = &st;
	out = CAPTURE(ctl_render_status_human(f, &s));
	ASSERT_HAS(out, "segment:   16.0 MiB of 64.0 MiB used (25.0%)\n"
			"ssd:       none\n"
			"replicas:  3\n");
	free(out);
	out = CAPTURE(ctl_render_status_json(f, &s));
	ASSERT_HAS(out, "\"kv_ssd_capacity_bytes\":0,\"kv_ssd_used_bytes\":0,"
			"\"kv_ssd_used_percent\":null,");
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(status_of_a_module_without_an_ssd_tier_has_no_ssd_line)
{
	struct ctl_status s = { .nl_queried = false };
	struct ctl_stats st;
	char *out;

	fake_module_without_ssd();
	st = load();
	s.sysfs_dir = sysdir;
	s.stats = &st;
	out = CAPTURE(ctl_render_status_human(f, &s));
	FKV_ASSERT(strstr(out, "ssd") == NULL, "%s", out);
	ASSERT_HAS(out, "segment:   16.0 MiB of 64.0 MiB used (25.0%)\n"
			"replicas:  3\n");
	free(out);
	out = CAPTURE(ctl_render_status_json(f, &s));
	ASSERT_HAS(out, "\"kv_ssd_capacity_bytes\":null,\"kv_ssd_used_bytes\":null,"
			"\"kv_ssd_used_percent\":null,");
	free(out);
	/* and its stats leave the SSD counters out rather than invent zeros */
	out = CAPTURE(ctl_render_stats_prometheus(f, &st, NULL));
	FKV_ASSERT(strstr(out, "fluxonkv_ssd_") == NULL, "%s", out);
	FKV_ASSERT(strstr(out, "kv_ssd") == NULL, "%s", out);
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

/* A latency file as the module writes it, with two bounds only. */
static const char small_latency[] =
	"op\tcount\tsum_ns\tle_1024\tle_2048\tle_inf\n"
	"put\t4\t6000\t1\t2\t1\n"
	"get_memory\t0\t0\t0\t0\t0\n";

FKV_TEST(stats_carry_the_latency_histograms_in_every_format)
{
	struct ctl_latency lat;
	struct ctl_stats st;
	char *out;

	FKV_ASSERT_EQ(ctl_latency_parse(small_latency, strlen(small_latency),
					&lat), 0);
	strcpy(lat.path, "/fake/latency");
	fake_module();
	st = load();

	out = CAPTURE(ctl_render_stats_prometheus(f, &st, &lat));
	ASSERT_HAS(out, "fluxonkv_daemon_up 1\n"
		"# HELP fluxonkv_op_latency_seconds ");
	ASSERT_HAS(out, "# TYPE fluxonkv_op_latency_seconds histogram\n"
		"fluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"0.000001024\"} 1\n"
		"fluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"0.000002048\"} 3\n"
		"fluxonkv_op_latency_seconds_bucket{op=\"put\",le=\"+Inf\"} 4\n"
		"fluxonkv_op_latency_seconds_sum{op=\"put\"} 0.000006\n"
		"fluxonkv_op_latency_seconds_count{op=\"put\"} 4\n"
		"fluxonkv_op_latency_seconds_bucket{op=\"get_memory\",le=\"0.000001024\"} 0\n");
	FKV_ASSERT_EQ(prom_expo_check(out).histogram_series, 2);
	free(out);

	out = CAPTURE(ctl_render_stats_json(f, &st, &lat));
	ASSERT_HAS(out, "\"ssd_shards_reclaimed\":0,\"latency\":{"
		"\"put\":{\"count\":4,\"sum_ns\":6000,\"mean_ns\":1500,"
		"\"p50_ns\":2048,\"p95_ns\":null,\"p99_ns\":null},"
		"\"get_memory\":{\"count\":0,\"sum_ns\":0,\"mean_ns\":null,"
		"\"p50_ns\":null,\"p95_ns\":null,\"p99_ns\":null}}}\n");
	free(out);

	out = CAPTURE(ctl_render_stats_human(f, &st, &lat));
	ASSERT_HAS(out, "ssd_shards_reclaimed     0\n\nlatency (");
	ASSERT_HAS(out, "\nput                     4      1.5 us      2.0 us     >2.0 us     >2.0 us\n");
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}

FKV_TEST(stats_without_debugfs_say_latency_is_unavailable_and_still_work)
{
	struct ctl_latency lat;
	struct ctl_stats st;
	char *out;

	FKV_ASSERT_EQ(ctl_latency_load("/nonexistent/fluxonkv", &lat), -ENOENT);
	fake_module();
	st = load();

	out = CAPTURE(ctl_render_stats_human(f, &st, &lat));
	ASSERT_HAS(out, "puts                     10\n");
	ASSERT_HAS(out, "\nlatency: unavailable (/nonexistent/fluxonkv/latency: "
			"No such file or directory; debugfs not mounted");
	free(out);

	out = CAPTURE(ctl_render_stats_json(f, &st, &lat));
	ASSERT_HAS(out, "\"ssd_shards_reclaimed\":0,\"latency\":null}\n");
	free(out);

	out = CAPTURE(ctl_render_stats_prometheus(f, &st, &lat));
	ASSERT_HAS(out, "fluxonkv_puts_total 10\n");
	FKV_ASSERT(strstr(out, "latency") == NULL, "%s", out);
	assert_valid_exposition(out);
	free(out);

	lat.err = -EACCES;
	out = CAPTURE(ctl_render_stats_human(f, &st, &lat));
	ASSERT_HAS(out, "latency: unavailable (/nonexistent/fluxonkv/latency: "
			"Permission denied; debugfs is readable by root only)\n");
	free(out);
	ctl_stats_free(&st);
	fake_remove();
}
