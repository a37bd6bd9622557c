// SPDX-License-Identifier: GPL-2.0
/*
 * test_module - fluxonkv.ko as a module: load/unload, the device node,
 * sysfs, debugfs, the netlink family, module parameters, and what keeps
 * the module from being unloaded.
 */
#include <sys/statfs.h>

#include "fkv_env.h"

#define SEG_MB		32
#define DEBUGFS_MAGIC	0x64626720

/* Every sysfs counter the module exports, all zero on a fresh load. */
static const char *const counters[] = {
	"segment_used_bytes", "daemon_pid", "replicas", "holders", "puts",
	"gets", "hits_memory", "hits_ssd", "misses", "deletes", "evictions",
	"replica_drops", "upcall_timeouts", "upcall_errors", "room_waits",
};

static bool family_resolves(void)
{
	struct fkv_nl nl;

	if (fkv_nl_open(&nl))
		return false;
	fkv_nl_close(&nl);
	return true;
}

/* Wait up to 3 s for PATH to (dis)appear; true if it reached that state. */
static bool path_settles(const char *path, bool exists)
{
	int64_t end = fkv_now_ms() + 3000;

	while (fkv_path_exists(path) != exists) {
		if (fkv_now_ms() > end)
			return false;
		fkv_msleep(10);
	}
	return true;
}

static void read_file(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY);
	ssize_t r;

	FKV_ASSERT(fd >= 0, "open %s: %s", path, strerror(errno));
	r = read(fd, buf, n - 1);
	FKV_ASSERT(r >= 0, "read %s: %s", path, strerror(errno));
	buf[r] = 0;
	buf[strcspn(buf, "\n")] = 0;
	close(fd);
}

FKV_TEST(module_loads_and_unloads_cleanly)
{
	char state[32];
	int round;

	for (round = 0; round < 2; round++) {
		FKV_LOAD("segment_mb=32");
		read_file(FKV_MODULE_DIR "/initstate", state, sizeof(state));
		FKV_ASSERT(!strcmp(state, "live"), "initstate '%s'", state);
		FKV_ASSERT(fkv_path_exists(FKV_SYSFS_DIR "/version"));
		FKV_ASSERT(fkv_path_exists(FKV_DEV_PATH));
		FKV_ASSERT(family_resolves());

		FKV_ASSERT_EQ(fkv_env_unload(), 0);
		FKV_ASSERT(!fkv_path_exists(FKV_MODULE_DIR));
		FKV_ASSERT(!fkv_path_exists(FKV_SYSFS_DIR),
			   "sysfs directory left behind");
		FKV_ASSERT(!fkv_path_exists(FKV_DEBUGFS_DIR),
			   "debugfs directory left behind");
		FKV_ASSERT(path_settles(FKV_DEV_PATH, false),
			   "%s left behind", FKV_DEV_PATH);
		FKV_ASSERT(!family_resolves(),
			   "netlink family still registered after unload");
	}
}

FKV_TEST(device_node_is_a_misc_char_device_that_opens)
{
	struct fluxonkv_info info;
	struct stat st;
	int fd;

	FKV_LOAD("segment_mb=32");
	FKV_ASSERT_EQ(stat(FKV_DEV_PATH, &st), 0);
	FKV_ASSERT(S_ISCHR(st.st_mode), "mode %o", st.st_mode);
	FKV_EXPECT_EQ(major(st.st_rdev), 10);	/* MISC_MAJOR */
	FKV_EXPECT_EQ(st.st_mode & 0777, 0660);

	fd = open(FKV_DEV_PATH, O_RDWR);
	FKV_ASSERT(fd >= 0, "open O_RDWR: %s", strerror(errno));
	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	FKV_ASSERT_EQ(info.abi_version, FLUXONKV_ABI_VERSION);
	close(fd);

	fd = open(FKV_DEV_PATH, O_RDONLY);
	FKV_ASSERT(fd >= 0, "open O_RDONLY: %s", strerror(errno));
	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	close(fd);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

FKV_TEST(unknown_ioctls_are_enotty)
{
	struct fluxonkv_info info = { .size = sizeof(info) };
	int fd;

	FKV_LOAD("segment_mb=32");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_ERRNO(ioctl(fd, _IO('x', 1), 0), ENOTTY);
	FKV_ASSERT_ERRNO(ioctl(fd, TCGETS, &info), ENOTTY);
	/* fluxonkv's magic, numbers it does not define */
	FKV_ASSERT_ERRNO(ioctl(fd, _IOWR(FLUXONKV_IOC_MAGIC, 0x0e,
					 struct fluxonkv_info), &info), ENOTTY);
	FKV_ASSERT_ERRNO(ioctl(fd, _IOWR(FLUXONKV_IOC_MAGIC, 0x3f,
					 struct fluxonkv_info), &info), ENOTTY);
	FKV_ASSERT_ERRNO(ioctl(fd, _IO(FLUXONKV_IOC_MAGIC, 0xff), 0), ENOTTY);
	/* an unknown ioctl changes nothing: the fd still works */
	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	close(fd);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

FKV_TEST(sysfs_reports_version_abi_capacity_and_zero_counters)
{
	char version[128];
	unsigned int i;
	int fd;

	FKV_LOAD("segment_mb=32");
	FKV_ASSERT_EQ(fkv_sysfs_str("version", version, sizeof(version)), 0);
	FKV_ASSERT(version[0], "empty version");
	FKV_ASSERT_EQ(fkv_sysfs("abi_version"), FLUXONKV_ABI_VERSION);
	FKV_ASSERT_EQ(fkv_sysfs("segment_capacity_bytes"), SEG_MB * FKV_MIB);
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		uint64_t v = 1;
		int ret = fkv_sysfs_u64(counters[i], &v);

		FKV_EXPECT(ret == 0, "%s: %s", counters[i], strerror(-ret));
		FKV_EXPECT(v == 0, "%s = %" PRIu64 " on a fresh load",
			   counters[i], v);
	}
	/* One value per file, read-only: no store method behind it. */
	fd = open(FKV_SYSFS_DIR "/segment_used_bytes", O_WRONLY);
	FKV_EXPECT(fd < 0, "segment_used_bytes opened for writing");
	if (fd >= 0)
		close(fd);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

FKV_TEST(debugfs_directory_exists)
{
	struct statfs sfs;
	struct stat st;

	if (statfs("/sys/kernel/debug", &sfs) || sfs.f_type != DEBUGFS_MAGIC)
		FKV_SKIP("debugfs is not mounted on /sys/kernel/debug");
	FKV_LOAD("segment_mb=32");
	FKV_ASSERT_EQ(stat(FKV_DEBUGFS_DIR, &st), 0);
	FKV_ASSERT(S_ISDIR(st.st_mode));
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
	FKV_ASSERT(!fkv_path_exists(FKV_DEBUGFS_DIR));
}

FKV_TEST(netlink_get_version_reports_version_abi_and_segment)
{
	struct nlattr *tb[FLUXONKV_A_MAX + 1];
	char version[128];
	struct fkv_nl nl;
	int ret;

	FKV_LOAD("segment_mb=32");
	FKV_ASSERT_EQ(fkv_sysfs_str("version", version, sizeof(version)), 0);
	ret = fkv_nl_open(&nl);
	FKV_ASSERT(ret == 0, "family %s: %s", FLUXONKV_GENL_NAME,
		   strerror(-ret));
	FKV_ASSERT_EQ(fkv_nl_transact(&nl, fkv_nl_msg(&nl,
				FLUXONKV_CMD_GET_VERSION)), 0);
	FKV_ASSERT_EQ(fkv_nl_next(&nl, FLUXONKV_CMD_GET_VERSION, tb, 1000), 0);

	FKV_ASSERT(tb[FLUXONKV_A_VERSION], "no VERSION attribute");
	FKV_ASSERT(!strcmp(nla_get_string(tb[FLUXONKV_A_VERSION]), version),
		   "netlink version '%s', sysfs '%s'",
		   nla_get_string(tb[FLUXONKV_A_VERSION]), version);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_ABI]), FLUXONKV_ABI_VERSION);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_SEGMENT_SIZE]),
		      SEG_MB * FKV_MIB);
	FKV_ASSERT_EQ(fkv_nla_u64(tb[FLUXONKV_A_SEGMENT_USED]), 0);
	FKV_ASSERT_EQ(fkv_nla_u32(tb[FLUXONKV_A_DAEMON_PID]), 0);
	fkv_nl_close(&nl);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

FKV_TEST(rmmod_is_refused_while_the_device_is_open)
{
	struct fluxonkv_info info;
	char out[1024];
	int fd;

	FKV_LOAD("segment_mb=32");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_NE(fkv_env_rmmod(out, sizeof(out)), 0);
	FKV_ASSERT(fkv_module_loaded(), "module gone with an fd open");
	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	FKV_ASSERT_EQ(info.segment_size, SEG_MB * FKV_MIB);
	close(fd);
	FKV_ASSERT_EQ(fkv_env_rmmod(out, sizeof(out)), 0);
	FKV_ASSERT(!fkv_module_loaded());
}

FKV_TEST(rmmod_is_refused_while_the_segment_is_mapped)
{
	const volatile uint8_t *map;
	char out[1024];
	uint64_t size;
	int fd;

	FKV_LOAD("segment_mb=32");
	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	map = fkv_dev_map(fd, &size);
	FKV_ASSERT(map != MAP_FAILED, "mmap: %s", strerror(errno));
	close(fd);	/* the mapping alone keeps the file */
	FKV_ASSERT_NE(fkv_env_rmmod(out, sizeof(out)), 0);
	FKV_ASSERT(fkv_module_loaded());
	FKV_ASSERT_EQ(map[size - 1], 0);	/* still backed */
	munmap((void *)map, size);
	FKV_ASSERT_EQ(fkv_env_rmmod(out, sizeof(out)), 0);
	FKV_ASSERT(!fkv_module_loaded());
}

FKV_TEST(invalid_params_are_refused_and_leave_nothing_loaded)
{
	static const char *const bad[] = {
		"segment_mb=0", "segment_mb=16385", "segment_mb=-1",
		"segment_mb=abc", "request_timeout_ms=1",
		"request_timeout_ms=9", "request_timeout_ms=600001",
	};
	char out[2048];
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FKV_ASSERT_EQ(fkv_env_reset(), 0);
		FKV_EXPECT(fkv_env_insmod(bad[i], out, sizeof(out)) != 0,
			   "insmod %s succeeded", bad[i]);
		FKV_EXPECT(!fkv_module_loaded(), "%s left the module loaded",
			   bad[i]);
		FKV_EXPECT(!fkv_path_exists(FKV_SYSFS_DIR),
			   "%s left %s behind", bad[i], FKV_SYSFS_DIR);
	}
	/* the bounds themselves are valid */
	FKV_LOAD("segment_mb=1 request_timeout_ms=10");
	FKV_ASSERT_EQ(fkv_sysfs("segment_capacity_bytes"), FKV_MIB);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}

FKV_TEST(segment_mb_sets_capacity_info_and_mapping)
{
	const uint64_t seg = 48 * FKV_MIB;
	struct fluxonkv_info info;
	const uint8_t *map;
	char param[32];
	uint64_t size, i, nonzero = 0;
	int fd;

	FKV_LOAD("segment_mb=48");
	FKV_ASSERT_EQ(fkv_sysfs("segment_capacity_bytes"), seg);
	read_file(FKV_MODULE_DIR "/parameters/segment_mb", param,
		  sizeof(param));
	FKV_EXPECT(!strcmp(param, "48"), "parameters/segment_mb '%s'", param);

	fd = fkv_dev_open();
	FKV_ASSERT(fd >= 0);
	FKV_ASSERT_EQ(fkv_dev_info(fd, &info), 0);
	FKV_ASSERT_EQ(info.abi_version, FLUXONKV_ABI_VERSION);
	FKV_ASSERT_EQ(info.segment_size, seg);
	FKV_ASSERT_EQ(info.key_max, FLUXONKV_KEY_MAX);
	/* values never exceed the segment nor FLUXONKV_VALUE_MAX */
	FKV_ASSERT_EQ(info.value_max, seg < FLUXONKV_VALUE_MAX ?
				      seg : FLUXONKV_VALUE_MAX);
	FKV_ASSERT_EQ(info.flags & FLUXONKV_INFO_DAEMON, 0);
	FKV_ASSERT_EQ(info.segment_used, 0);
	FKV_ASSERT_EQ(info.reserved[0] | info.reserved[1], 0);

	/* The whole segment maps, and a fresh one shows no stale memory. */
	map = fkv_dev_map(fd, &size);
	FKV_ASSERT(map != MAP_FAILED, "mmap: %s", strerror(errno));
	FKV_ASSERT_EQ(size, seg);
	for (i = 0; i < size; i += 8) {
		uint64_t v;

		memcpy(&v, map + i, 8);
		nonzero |= v;
	}
	FKV_ASSERT_EQ(nonzero, 0);
	munmap((void *)map, size);
	close(fd);
	FKV_ASSERT_EQ(fkv_env_unload(), 0);
}
