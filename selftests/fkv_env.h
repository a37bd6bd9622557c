/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fkv_env.h - the environment the VM selftests run in: load and unload
 * fluxonkv.ko, start and stop fluxond, read sysfs counters, speak the
 * "fluxonkv" generic netlink family, make and check value patterns.
 *
 * Header only (every selftests/test_*.c is its own program); include it
 * instead of fkv_test.h.  Unless the program defines FKV_TEST_SETUP_ALL
 * first, every test is skipped with a reason when not run as root or when
 * $FLUXONKV_KO does not name a readable module.
 *
 * A test loads the module itself (fkv_env_load() first unloads any previous
 * instance and kills a daemon a failed test left behind, printing its log).
 * fluxond runs with PR_SET_PDEATHSIG, so it dies with the test that started
 * it; its stdout/stderr go to FKV_DAEMON_LOG.
 */
#ifndef FKV_ENV_H
#define FKV_ENV_H

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <time.h>

#include <linux/capability.h>
#include <linux/fluxonkv.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

static int fkv_env_setup_all(const char **why);
#ifndef FKV_TEST_SETUP_ALL
#define FKV_TEST_SETUP_ALL fkv_env_setup_all
#endif
#include "fkv_test.h"

#define FKV_DEV_PATH		"/dev/" FLUXONKV_DEVICE_NAME
#define FKV_SYSFS_DIR		"/sys/kernel/fluxonkv"
#define FKV_DEBUGFS_DIR		"/sys/kernel/debug/fluxonkv"
#define FKV_MODULE_DIR		"/sys/module/fluxonkv"
#define FKV_DAEMON_LOG		"/tmp/fluxonkv-selftest-fluxond.log"
/* Exists while a test's daemon runs: a leftover means that test failed. */
#define FKV_DAEMON_MARK		"/tmp/fluxonkv-selftest-fluxond.pid"

#define FKV_MIB			(1ULL << 20)
#define FKV_ALIGN_UP(x)		(((x) + FLUXONKV_SEGMENT_ALIGN - 1) &	\
				 ~(uint64_t)(FLUXONKV_SEGMENT_ALIGN - 1))

/* The daemon this test process started (0: none). */
static pid_t fkv_env_daemon;
/* One more fluxond argument for the next fkv_daemon_start(), or NULL. */
static const char *fkv_env_daemon_arg;
/* Set in the harness's parent once the environment is usable. */
static bool fkv_env_usable;

/* ---- small utilities ---------------------------------------------------- */

static inline int64_t fkv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void fkv_msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static inline bool fkv_path_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/*
 * fork() with a pipe from the child to the parent: the child gets 0 and
 * the pipe's write end in *fd, the parent the child's pid and the read
 * end in *fd.  A failed pipe or fork fails the test.
 */
static inline pid_t fkv_fork_piped(int *fd)
{
	int p[2];
	pid_t pid;

	FKV_ASSERT(pipe(p) == 0, "pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0, "fork: %s", strerror(errno));
	close(pid ? p[1] : p[0]);
	*fd = pid ? p[0] : p[1];
	return pid;
}

/* Print a text (command output, a log) as TAP diagnostics, line by line. */
static inline void fkv_diag_text(const char *prefix, const char *text)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		printf("# %s%.*s\n", prefix, n, p);
		p += n + (nl ? 1 : 0);
	}
	fflush(stdout);
}

static inline void fkv_diag_file(const char *prefix, const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f) {
		fkv_diag("%s(cannot open %s: %s)", prefix, path,
			 strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		printf("# %s%s\n", prefix, line);
	}
	fflush(stdout);
	fclose(f);
}

/*
 * Run argv[0] (searched in PATH) with stdout+stderr captured into out.
 * Returns its exit status, 128 + signal if it was killed, or -errno.
 */
static inline int fkv_env_run(char *const argv[], char *out, size_t outsz)
{
	int pfd[2], status;
	size_t used = 0;
	pid_t pid;

	if (outsz)
		out[0] = 0;
	if (pipe(pfd) < 0)
		return -errno;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		char buf[512];
		ssize_t n = read(pfd[0], buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (outsz && used < outsz - 1) {
			size_t c = (size_t)n < outsz - 1 - used ?
				   (size_t)n : outsz - 1 - used;

			memcpy(out + used, buf, c);
			used += c;
			out[used] = 0;
		}
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* ---- sysfs -------------------------------------------------------------- */

/* Read /sys/kernel/fluxonkv/NAME, trailing newline removed. */
static inline int fkv_sysfs_str(const char *name, char *buf, size_t n)
{
	char path[256];
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), FKV_SYSFS_DIR "/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, n - 1);
	if (r < 0) {
		r = -errno;
		close(fd);
		return (int)r;
	}
	close(fd);
	buf[r] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

static inline int fkv_sysfs_u64(const char *name, uint64_t *val)
{
	char buf[64], *end;
	int ret = fkv_sysfs_str(name, buf, sizeof(buf));

	if (ret)
		return ret;
	errno = 0;
	*val = strtoull(buf, &end, 0);
	if (errno || end == buf || *end)
		return -EINVAL;
	return 0;
}

/* The value of a sysfs counter; a failed read fails the test. */
static inline uint64_t fkv_sysfs(const char *name)
{
	uint64_t v = 0;
	int ret = fkv_sysfs_u64(name, &v);

	if (ret)
		FKV_FAIL_AT(1, "cannot read %s/%s: %s", FKV_SYSFS_DIR, name,
			    strerror(-ret));
	return v;
}

/*
 * Wait up to timeout_ms for counter NAME to read want.  Returns 0, or
 * -ETIMEDOUT with the last value read in *last.
 */
static inline int fkv_sysfs_wait(const char *name, uint64_t want,
				 unsigned int timeout_ms, uint64_t *last)
{
	int64_t end = fkv_now_ms() + timeout_ms;
	uint64_t v = 0;

	for (;;) {
		v = fkv_sysfs(name);
		if (v == want)
			break;
		if (fkv_now_ms() > end) {
			if (last)
				*last = v;
			return -ETIMEDOUT;
		}
		fkv_msleep(10);
	}
	if (last)
		*last = v;
	return 0;
}

/* Counter NAME must settle at want within 3 s (frees may be deferred). */
#define FKV_ASSERT_SYSFS_SETTLES(name, want)				\
	do {								\
		uint64_t fkv_last_;					\
		if (fkv_sysfs_wait(name, want, 3000, &fkv_last_))	\
			FKV_FAIL_AT(1, "sysfs %s stays %" PRIu64	\
				    ", want %" PRIu64, name, fkv_last_,	\
				    (uint64_t)(want));			\
	} while (0)

/* ---- the module --------------------------------------------------------- */

static inline const char *fkv_env_ko(void)
{
	return getenv("FLUXONKV_KO");
}

static inline bool fkv_module_loaded(void)
{
	return fkv_path_exists(FKV_MODULE_DIR "/initstate") ||
	       fkv_path_exists(FKV_SYSFS_DIR);
}

/*
 * insmod $FLUXONKV_KO with space-separated params; returns insmod's exit
 * status (0 = loaded) or -errno.  Its output lands in out.
 */
static inline int fkv_env_insmod(const char *params, char *out, size_t outsz)
{
	char *argv[32], copy[512], *save = NULL, *tok;
	int argc = 0;

	argv[argc++] = (char *)"insmod";
	argv[argc++] = (char *)fkv_env_ko();
	snprintf(copy, sizeof(copy), "%s", params ? params : "");
	for (tok = strtok_r(copy, " ", &save); tok && argc < 31;
	     tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return fkv_env_run(argv, out, outsz);
}

/* rmmod fluxonkv once; returns rmmod's exit status or -errno. */
static inline int fkv_env_rmmod(char *out, size_t outsz)
{
	char *argv[] = { (char *)"rmmod", (char *)"fluxonkv", NULL };

	return fkv_env_run(argv, out, outsz);
}

/* Unload the module if loaded, retrying for 3 s (references may linger). */
static inline int fkv_env_unload(void)
{
	int64_t end = fkv_now_ms() + 3000;
	char out[1024];
	int ret = 0;

	while (fkv_module_loaded()) {
		ret = fkv_env_rmmod(out, sizeof(out));
		if (ret == 0 && !fkv_module_loaded())
			return 0;
		if (fkv_now_ms() > end) {
			fkv_diag("rmmod fluxonkv failed (status %d):", ret);
			fkv_diag_text("  ", out);
			return -EBUSY;
		}
		fkv_msleep(50);
	}
	return 0;
}

static inline void fkv_daemon_dump_log(const char *why)
{
	fkv_diag("---- fluxond log (%s): %s ----", why, FKV_DAEMON_LOG);
	fkv_diag_file("fluxond: ", FKV_DAEMON_LOG);
	fkv_diag("---- end of fluxond log ----");
}

/*
 * Clean slate: a daemon left by a failed test is killed (and its log shown),
 * the module is unloaded.
 */
static inline int fkv_env_reset(void)
{
	FILE *f = fopen(FKV_DAEMON_MARK, "r");

	if (f) {
		int pid = 0;

		if (fscanf(f, "%d", &pid) == 1 && pid > 0)
			kill(pid, SIGKILL);
		fclose(f);
		unlink(FKV_DAEMON_MARK);
		fkv_daemon_dump_log("left running by a failed test");
	}
	return fkv_env_unload();
}

/*
 * Load a fresh instance of the module with PARAMS ("segment_mb=32 ...").
 * Returns 0 once /dev/fluxonkv and the sysfs directory exist.
 */
static inline int fkv_env_load(const char *params)
{
	int64_t end;
	char out[2048];
	int ret, fd;

	ret = fkv_env_reset();
	if (ret)
		return ret;
	fd = open(FKV_DAEMON_LOG, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
	ret = fkv_env_insmod(params, out, sizeof(out));
	if (ret) {
		fkv_diag("insmod %s %s failed (status %d):", fkv_env_ko(),
			 params ? params : "", ret);
		fkv_diag_text("  ", out);
		return -EIO;
	}
	end = fkv_now_ms() + 3000;
	while (!fkv_path_exists(FKV_DEV_PATH) ||
	       !fkv_path_exists(FKV_SYSFS_DIR "/version")) {
		if (fkv_now_ms() > end) {
			fkv_diag("module loaded but %s or %s/version missing",
				 FKV_DEV_PATH, FKV_SYSFS_DIR);
			return -ENODEV;
		}
		fkv_msleep(10);
	}
	return 0;
}

#define FKV_LOAD(params) FKV_ASSERT_EQ(fkv_env_load(params), 0)

/* ---- the daemon --------------------------------------------------------- */

static inline const char *fkv_env_fluxond(void)
{
	const char *d = getenv("FLUXOND");

	return d && access(d, X_OK) == 0 ? d : NULL;
}

/* Skip the calling test when there is no fluxond to run. */
#define FKV_REQUIRE_DAEMON()						\
	do {								\
		if (!fkv_env_fluxond())					\
			FKV_SKIP("FLUXOND (%s) is not an executable "	\
				 "fluxond", getenv("FLUXOND") ?: "unset"); \
	} while (0)

/*
 * Start `$FLUXOND --foreground` (log: FKV_DAEMON_LOG, appended) and wait up
 * to 10 s for it to register (sysfs daemon_pid != 0).  Returns its pid or
 * -errno (the log has been printed).
 */
static inline pid_t fkv_daemon_start(void)
{
	const char *bin = fkv_env_fluxond();
	pid_t parent = getpid(), pid;
	int64_t end;
	FILE *f;

	if (!bin)
		return -ENOENT;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int log, in;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		log = open(FKV_DAEMON_LOG, O_WRONLY | O_CREAT | O_APPEND,
			   0644);
		in = open("/dev/null", O_RDONLY);
		if (log < 0 || in < 0)
			_exit(126);
		dup2(in, 0);
		dup2(log, 1);
		dup2(log, 2);
		execl(bin, bin, "--foreground", fkv_env_daemon_arg,
		      (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	fkv_env_daemon = pid;
	f = fopen(FKV_DAEMON_MARK, "w");
	if (f) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
	end = fkv_now_ms() + 10000;
	for (;;) {
		uint64_t dpid = 0;
		int status;

		if (waitpid(pid, &status, WNOHANG) == pid) {
			fkv_env_daemon = 0;
			unlink(FKV_DAEMON_MARK);
			fkv_diag("fluxond exited during startup (%s %d)",
				 WIFSIGNALED(status) ? "signal" : "status",
				 WIFSIGNALED(status) ? WTERMSIG(status) :
				 WEXITSTATUS(status));
			fkv_daemon_dump_log("startup failed");
			return -ECHILD;
		}
		if (fkv_sysfs_u64("daemon_pid", &dpid) == 0 && dpid) {
			if (dpid != (uint64_t)pid)
				fkv_diag("note: daemon_pid %" PRIu64
					 " != fluxond pid %d", dpid, (int)pid);
			return pid;
		}
		if (fkv_now_ms() > end) {
			fkv_diag("fluxond (pid %d) did not register in 10 s",
				 (int)pid);
			fkv_daemon_dump_log("no registration");
			return -ETIMEDOUT;
		}
		fkv_msleep(20);
	}
}

#define FKV_START_DAEMON()						\
	do {								\
		FKV_REQUIRE_DAEMON();					\
		FKV_ASSERT_GT(fkv_daemon_start(), 0);			\
	} while (0)

/* Wait for the daemon to exit (up to timeout_ms); its wait status or -1. */
static inline int fkv_daemon_reap(pid_t pid, unsigned int timeout_ms)
{
	int64_t end = fkv_now_ms() + timeout_ms;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (fkv_now_ms() > end)
			return -1;
		fkv_msleep(10);
	}
}

/*
 * SIGTERM the daemon and wait for it (5 s) and for the module to see it gone
 * (daemon_pid 0).  Returns 0 if it exited with status 0, else -EIO (its log
 * has been printed).
 */
static inline int fkv_daemon_stop(void)
{
	pid_t pid = fkv_env_daemon;
	int status, ret = 0;

	if (!pid)
		return 0;
	kill(pid, SIGTERM);
	status = fkv_daemon_reap(pid, 5000);
	if (status == -1) {
		fkv_diag("fluxond ignored SIGTERM for 5 s; killing it");
		kill(pid, SIGKILL);
		fkv_daemon_reap(pid, 5000);
		ret = -EIO;
	} else if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fkv_diag("fluxond ended with %s %d after SIGTERM",
			 WIFSIGNALED(status) ? "signal" : "status",
			 WIFSIGNALED(status) ? WTERMSIG(status) :
			 WEXITSTATUS(status));
		ret = -EIO;
	}
	fkv_env_daemon = 0;
	unlink(FKV_DAEMON_MARK);
	if (fkv_sysfs_wait("daemon_pid", 0, 3000, NULL)) {
		fkv_diag("daemon_pid still set 3 s after fluxond exited");
		ret = -EIO;
	}
	if (ret)
		fkv_daemon_dump_log("bad stop");
	return ret;
}

#define FKV_STOP_DAEMON() FKV_ASSERT_EQ(fkv_daemon_stop(), 0)

/* SIGKILL the daemon and reap it; returns 0 once it is gone. */
static inline int fkv_daemon_kill(void)
{
	pid_t pid = fkv_env_daemon;

	if (!pid)
		return -ESRCH;
	kill(pid, SIGKILL);
	fkv_daemon_reap(pid, 5000);
	fkv_env_daemon = 0;
	unlink(FKV_DAEMON_MARK);
	return 0;
}

/* ---- harness hooks -------------------------------------------------------- */

static int fkv_env_setup_all(const char **why)
{
	static char reason[512];
	const char *ko = fkv_env_ko();

	if (geteuid() != 0) {
		*why = "selftests need root (they load fluxonkv.ko)";
		return -EPERM;
	}
	if (!ko || !*ko) {
		*why = "FLUXONKV_KO is not set (path of kmod/fluxonkv.ko)";
		return -ENOENT;
	}
	if (access(ko, R_OK)) {
		snprintf(reason, sizeof(reason), "FLUXONKV_KO=%s: %s", ko,
			 strerror(errno));
		*why = reason;
		return -ENOENT;
	}
	fkv_env_usable = true;
	return 0;
}

/* The harness's parent leaves no module and no daemon behind. */
__attribute__((destructor)) static void fkv_env_teardown(void)
{
	if (fkv_env_usable)
		fkv_env_reset();
}

/* ---- raw device helpers ------------------------------------------------- */

static inline int fkv_dev_open(void)
{
	return open(FKV_DEV_PATH, O_RDWR | O_CLOEXEC);
}

/* FLUXONKV_IOC_INFO on fd; 0 or -errno. */
static inline int fkv_dev_info(int fd, struct fluxonkv_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return ioctl(fd, FLUXONKV_IOC_INFO, info) ? -errno : 0;
}

static inline int fkv_dev_put(int fd, const void *key, size_t klen,
			      const void *val, size_t vlen, uint64_t *put_id)
{
	struct fluxonkv_put p = {
		.size = sizeof(p), .key_len = (uint32_t)klen,
		.key_ptr = (uintptr_t)key, .value_ptr = (uintptr_t)val,
		.value_len = vlen,
	};

	if (ioctl(fd, FLUXONKV_IOC_PUT, &p))
		return -errno;
	if (put_id)
		*put_id = p.put_id;
	return 0;
}

static inline int fkv_dev_get(int fd, const void *key, size_t klen,
			      struct fluxonkv_get *g)
{
	memset(g, 0, sizeof(*g));
	g->size = sizeof(*g);
	g->key_len = (uint32_t)klen;
	g->key_ptr = (uintptr_t)key;
	return ioctl(fd, FLUXONKV_IOC_GET, g) ? -errno : 0;
}

static inline int fkv_dev_release(int fd, uint64_t holder_id)
{
	struct fluxonkv_release r = { .size = sizeof(r),
				      .holder_id = holder_id };

	return ioctl(fd, FLUXONKV_IOC_RELEASE, &r) ? -errno : 0;
}

static inline int fkv_dev_delete(int fd, const void *key, size_t klen)
{
	struct fluxonkv_delete d = { .size = sizeof(d),
				     .key_len = (uint32_t)klen,
				     .key_ptr = (uintptr_t)key };

	return ioctl(fd, FLUXONKV_IOC_DELETE, &d) ? -errno : 0;
}

/* Map the whole segment read-only; MAP_FAILED on error. */
static inline const uint8_t *fkv_dev_map(int fd, uint64_t *size)
{
	struct fluxonkv_info info;
	void *p;

	if (fkv_dev_info(fd, &info))
		return MAP_FAILED;
	*size = info.segment_size;
	p = mmap(NULL, info.segment_size, PROT_READ, MAP_SHARED, fd, 0);
	return p;
}

/* ---- value patterns ----------------------------------------------------- */

static inline uint64_t fkv_hash(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static inline uint64_t fkv_xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/* The bytes a value of LEN under KEY with SALT consists of. */
static inline void fkv_pattern_fill(void *buf, size_t len, const void *key,
				    size_t klen, uint64_t salt)
{
	uint64_t s = fkv_hash(key, klen, salt ^ (len * 0x9e3779b97f4a7c15ULL));
	uint8_t *p = buf;
	size_t i;

	s |= 1;
	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t v = fkv_xorshift(&s);

		memcpy(p + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = fkv_xorshift(&s);

		memcpy(p + i, &v, len - i);
	}
}

/*
 * Compare DATA with the pattern of (key, len, salt).  Returns -1 if equal,
 * else the first differing offset.
 */
static inline long fkv_pattern_check(const void *data, size_t len,
				     const void *key, size_t klen,
				     uint64_t salt)
{
	uint64_t s = fkv_hash(key, klen, salt ^ (len * 0x9e3779b97f4a7c15ULL));
	const uint8_t *p = data;
	size_t i, j;

	s |= 1;
	for (i = 0; i < len; i += 8) {
		uint64_t v = fkv_xorshift(&s);
		size_t n = len - i < 8 ? len - i : 8;

		if (memcmp(p + i, &v, n)) {
			for (j = 0; j < n; j++)
				if (p[i + j] != ((uint8_t *)&v)[j])
					return (long)(i + j);
		}
	}
	return -1;
}

/* The bytes at DATA must be the pattern of (key, len, salt). */
#define FKV_ASSERT_PATTERN(data, len, key, klen, salt)			\
	do {								\
		long fkv_off_ = fkv_pattern_check(data, len, key, klen,	\
						  salt);		\
		if (fkv_off_ >= 0)					\
			FKV_FAIL_AT(1, "value of %zu bytes differs from "	\
				    "its pattern at offset %ld", 		\
				    (size_t)(len), fkv_off_);		\
	} while (0)

/* ---- generic netlink ---------------------------------------------------- */

#define FKV_NL_QUEUE	16

/*
 * A genl socket to the "fluxonkv" family.  Requests are sent with NLM_F_ACK
 * and answered one at a time; every other message (replies, upcalls,
 * events) is queued for fkv_nl_next().
 */
struct fkv_nl {
	struct nl_sock *sk;
	int family;
	int err;		/* kernel's error for the pending request */
	bool done;		/* ACK or error seen */
	struct nl_msg *queue[FKV_NL_QUEUE];
	int queued;
	struct nl_msg *cur;	/* the message fkv_nl_next() last returned */
};

static inline int fkv_nl_valid_cb(struct nl_msg *msg, void *arg)
{
	struct fkv_nl *nl = arg;

	if (nl->queued == FKV_NL_QUEUE) {	/* full: forget the oldest */
		nlmsg_free(nl->queue[0]);
		memmove(&nl->queue[0], &nl->queue[1],
			(FKV_NL_QUEUE - 1) * sizeof(nl->queue[0]));
		nl->queued--;
	}
	nlmsg_get(msg);
	nl->queue[nl->queued++] = msg;
	return NL_OK;
}

static inline int fkv_nl_ack_cb(struct nl_msg *msg, void *arg)
{
	struct fkv_nl *nl = arg;

	nl->err = 0;
	nl->done = true;
	return NL_STOP;
}

static inline int fkv_nl_err_cb(struct sockaddr_nl *nla, struct nlmsgerr *e,
				void *arg)
{
	struct fkv_nl *nl = arg;

	nl->err = e->error;
	nl->done = true;
	return NL_STOP;
}

/* Connect and resolve the family; 0 or -errno. */
static inline int fkv_nl_open(struct fkv_nl *nl)
{
	struct timeval tv = { .tv_sec = 10 };
	int ret;

	memset(nl, 0, sizeof(*nl));
	nl->sk = nl_socket_alloc();
	if (!nl->sk)
		return -ENOMEM;
	ret = genl_connect(nl->sk);
	if (ret) {
		nl_socket_free(nl->sk);
		nl->sk = NULL;
		return -ECONNREFUSED;
	}
	setsockopt(nl_socket_get_fd(nl->sk), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));
	/* Resolve with libnl's own callbacks, then install ours. */
	nl->family = genl_ctrl_resolve(nl->sk, FLUXONKV_GENL_NAME);
	if (nl->family < 0) {
		nl_socket_free(nl->sk);
		nl->sk = NULL;
		return -ENOENT;
	}
	nl_socket_disable_seq_check(nl->sk);
	nl_socket_modify_cb(nl->sk, NL_CB_VALID, NL_CB_CUSTOM,
			    fkv_nl_valid_cb, nl);
	nl_socket_modify_cb(nl->sk, NL_CB_ACK, NL_CB_CUSTOM, fkv_nl_ack_cb, nl);
	nl_socket_modify_err_cb(nl->sk, NL_CB_CUSTOM, fkv_nl_err_cb, nl);
	return 0;
}

static inline void fkv_nl_close(struct fkv_nl *nl)
{
	int i;

	for (i = 0; i < nl->queued; i++)
		nlmsg_free(nl->queue[i]);
	nl->queued = 0;
	if (nl->cur)
		nlmsg_free(nl->cur);
	nl->cur = NULL;
	if (nl->sk)
		nl_socket_free(nl->sk);
	nl->sk = NULL;
}

/* A request for CMD (NLM_F_ACK set); attributes are added by the caller. */
static inline struct nl_msg *fkv_nl_msg(struct fkv_nl *nl, uint8_t cmd)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0,
			 NLM_F_ACK, cmd, FLUXONKV_GENL_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

/* Receive once (blocking, 10 s at most); 0 or -ETIMEDOUT / -EIO. */
static inline int fkv_nl_recv_some(struct fkv_nl *nl)
{
	int ret = nl_recvmsgs_default(nl->sk);

	if (ret < 0 && !nl->done)
		return ret == -NLE_AGAIN ? -ETIMEDOUT : -EIO;
	return 0;
}

/*
 * Send MSG (freed) and wait for its ACK: returns 0 or the kernel's -errno
 * (-ETIMEDOUT if nothing came back in 10 s).
 */
static inline int fkv_nl_transact(struct fkv_nl *nl, struct nl_msg *msg)
{
	int ret;

	nl->done = false;
	nl->err = 0;
	ret = nl_send_auto(nl->sk, msg);
	nlmsg_free(msg);
	if (ret < 0)
		return -EIO;
	while (!nl->done) {
		ret = fkv_nl_recv_some(nl);
		if (ret)
			return ret;
	}
	return nl->err;
}

/*
 * The next queued message with genl command CMD (receiving for up to
 * timeout_ms): its attributes are parsed into tb (FLUXONKV_A_MAX + 1
 * entries) and stay valid until the next call.  0 or -ETIMEDOUT.
 */
static inline int fkv_nl_next(struct fkv_nl *nl, uint8_t cmd,
			      struct nlattr **tb, unsigned int timeout_ms)
{
	int64_t end = fkv_now_ms() + timeout_ms;
	struct timeval tv = { .tv_usec = 100000 }, tv10 = { .tv_sec = 10 };
	int i, ret = -ETIMEDOUT;

	if (nl->cur)
		nlmsg_free(nl->cur);
	nl->cur = NULL;
	setsockopt(nl_socket_get_fd(nl->sk), SOL_SOCKET, SO_RCVTIMEO, &tv,
		   sizeof(tv));
	for (;;) {
		for (i = 0; i < nl->queued; i++) {
			struct genlmsghdr *gh = nlmsg_data(nlmsg_hdr(
							nl->queue[i]));

			if (gh->cmd != cmd)
				continue;
			nl->cur = nl->queue[i];
			memmove(&nl->queue[i], &nl->queue[i + 1],
				(size_t)(nl->queued - i - 1) *
				sizeof(nl->queue[0]));
			nl->queued--;
			ret = genlmsg_parse(nlmsg_hdr(nl->cur), 0, tb,
					    FLUXONKV_A_MAX, NULL) ? -EBADMSG : 0;
			goto out;
		}
		if (fkv_now_ms() > end)
			goto out;
		nl->done = false;
		nl_recvmsgs_default(nl->sk);
	}
out:
	setsockopt(nl_socket_get_fd(nl->sk), SOL_SOCKET, SO_RCVTIMEO, &tv10,
		   sizeof(tv10));
	return ret;
}

static inline uint64_t fkv_nla_u64(struct nlattr *a)
{
	return a && nla_len(a) == 8 ? nla_get_u64(a) : UINT64_MAX;
}

static inline uint32_t fkv_nla_u32(struct nlattr *a)
{
	return a && nla_len(a) == 4 ? nla_get_u32(a) : UINT32_MAX;
}

/* ---- scratch disks, filesystems and SSD shards --------------------------- */

/* Where tests mount scratch filesystems and write their files. */
#define FKV_SCRATCH_DIR		"/tmp/fkv-scratch"

/* modprobe NAME; its exit status or -errno (output shown on failure). */
static inline int fkv_modprobe(const char *name)
{
	char *argv[] = { (char *)"modprobe", (char *)name, NULL };
	char out[1024];
	int ret = fkv_env_run(argv, out, sizeof(out));

	if (ret) {
		fkv_diag("modprobe %s failed (status %d):", name, ret);
		fkv_diag_text("  ", out);
	}
	return ret;
}

/* The /sys/block name (vda, ...) of the virtio disk with serial NAME. */
static inline int fkv_scratch_disk_node(const char *name, char *blk,
					size_t len)
{
	struct dirent *de;
	int ret = -ENODEV;
	DIR *d = opendir("/sys/block");

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[300], serial[128];
		FILE *f;

		if (strncmp(de->d_name, "vd", 2))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/serial",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(serial, sizeof(serial), f)) {
			serial[strcspn(serial, "\n")] = 0;
			if (!strcmp(serial, name)) {
				snprintf(blk, len, "%s", de->d_name);
				ret = 0;
			}
		}
		fclose(f);
		if (!ret)
			break;
	}
	closedir(d);
	return ret;
}

/*
 * The scratch disk `tools/vm/run --disk NAME:SIZE` gave the guest, as
 * /dev/disk/by-id/virtio-NAME (in buf).  Loads virtio_blk if needed; the
 * guest runs no udev, so the by-id link is made here from the disk's serial
 * when it is missing.  0, or -ENODEV when no virtio disk has that serial.
 */
static inline int fkv_scratch_disk(const char *name, char *buf, size_t len)
{
	int64_t end = fkv_now_ms() + 3000;
	char blk[256], target[300];
	int ret;

	snprintf(buf, len, "/dev/disk/by-id/virtio-%s", name);
	ret = fkv_scratch_disk_node(name, blk, sizeof(blk));
	if (ret == -ENODEV && !fkv_path_exists("/sys/module/virtio_blk")) {
		fkv_modprobe("virtio_blk");
		while ((ret = fkv_scratch_disk_node(name, blk, sizeof(blk))) &&
		       fkv_now_ms() < end)
			fkv_msleep(20);
	}
	if (ret)
		return ret;
	snprintf(target, sizeof(target), "/dev/%s", blk);
	while (!fkv_path_exists(target) && fkv_now_ms() < end)
		fkv_msleep(20);
	if (fkv_path_exists(buf))
		return 0;
	mkdir("/dev/disk", 0755);
	mkdir("/dev/disk/by-id", 0755);
	snprintf(target, sizeof(target), "../../%s", blk);
	if (symlink(target, buf) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Is DIR a mount point (on another device than its parent)? */
static inline bool fkv_is_mountpoint(const char *dir)
{
	char parent[512];
	struct stat a, b;

	snprintf(parent, sizeof(parent), "%s/..", dir);
	return !stat(dir, &a) && !stat(parent, &b) && a.st_dev != b.st_dev;
}

/* mkdir -p PATH (mode 0755); 0 or -errno. */
static inline int fkv_mkdirs(const char *path)
{
	char buf[512], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * A fresh ext4 on DISK (a block device path) mounted on DIR, made once: if
 * DIR is already a mount point it is reused.  0 or -errno (the failing
 * command's output is shown).
 */
static inline int fkv_scratch_ext4(const char *disk, const char *dir)
{
	char *mkfs[] = { (char *)"mkfs.ext4", (char *)"-q", (char *)"-F",
			 (char *)"-E", (char *)"nodiscard,lazy_itable_init=1,lazy_journal_init=1",
			 (char *)disk, NULL };
	char *mnt[] = { (char *)"mount", (char *)"-t", (char *)"ext4",
			(char *)disk, (char *)dir, NULL };
	char out[2048];
	int ret;

	ret = fkv_mkdirs(dir);
	if (ret)
		return ret;
	if (fkv_is_mountpoint(dir))
		return 0;
	ret = fkv_env_run(mkfs, out, sizeof(out));
	if (!ret)
		ret = fkv_env_run(mnt, out, sizeof(out));
	if (ret) {
		fkv_diag("mkfs.ext4/mount %s on %s failed (status %d):", disk,
			 dir, ret);
		fkv_diag_text("  ", out);
		return -EIO;
	}
	return 0;
}

/* rm -rf PATH; 0 or rm's exit status. */
static inline int fkv_rm_rf(const char *path)
{
	char *argv[] = { (char *)"rm", (char *)"-rf", (char *)path, NULL };

	return fkv_env_run(argv, NULL, 0);
}

/* Write TEXT to PATH (created or truncated); 0 or -errno. */
static inline int fkv_write_file(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n != (ssize_t)len) {
		int err = n < 0 ? -errno : -EIO;

		close(fd);
		return err;
	}
	return close(fd) ? -errno : 0;
}

/*
 * FLUXONKV_IOC_SSD_ATTACH on the fluxonkv descriptor FD: the shard is
 * [offset, offset + capacity) of SHARD_FD.  0 (index in *shard) or -errno.
 */
static inline int fkv_dev_ssd_attach(int fd, int shard_fd, uint64_t offset,
				     uint64_t capacity, uint32_t device,
				     uint32_t *shard)
{
	struct fluxonkv_ssd_attach a = {
		.size = sizeof(a), .fd = shard_fd, .capacity = capacity,
		.device = device, .offset = offset,
	};

	if (ioctl(fd, FLUXONKV_IOC_SSD_ATTACH, &a))
		return -errno;
	if (shard)
		*shard = a.shard;
	return 0;
}

static inline const char *fkv_env_fluxonctl(void)
{
	const char *c = getenv("FLUXONCTL");

	return c && access(c, X_OK) == 0 ? c : NULL;
}

/* Skip the calling test when there is no fluxonctl to run. */
#define FKV_REQUIRE_FLUXONCTL()						\
	do {								\
		if (!fkv_env_fluxonctl())				\
			FKV_SKIP("FLUXONCTL (%s) is not an executable "	\
				 "fluxonctl", getenv("FLUXONCTL") ?: "unset"); \
	} while (0)

/*
 * Run `$FLUXONCTL ARG...` (NULL-terminated list) with its output in out;
 * returns its exit status or -errno.
 */
static inline int fkv_ctl(char *out, size_t outsz, ...)
{
	char *argv[32];
	const char *a;
	va_list ap;
	int argc = 0;

	if (!fkv_env_fluxonctl())
		return -ENOENT;
	argv[argc++] = (char *)fkv_env_fluxonctl();
	va_start(ap, outsz);
	while ((a = va_arg(ap, const char *)) && argc < 31)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return fkv_env_run(argv, out, outsz);
}

/* ---- privileged sessions and the cluster data plane ------------------------ */

/*
 * A session (open file description) is privileged when opened O_RDWR by a
 * process with CAP_SYS_ADMIN: it may map the segment writable and HOLD
 * replicas by handle.  A root process opening O_RDONLY, or one that
 * dropped CAP_SYS_ADMIN (fkv_drop_cap_sys_admin()), gets a client session.
 */

/* Open the device read-only: a client session even for root. */
static inline int fkv_dev_open_ro(void)
{
	return open(FKV_DEV_PATH, O_RDONLY | O_CLOEXEC);
}

/* This process's effective capabilities (/proc/self/status CapEff). */
static inline uint64_t fkv_cap_effective(void)
{
	char line[256];
	uint64_t caps = UINT64_MAX;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return caps;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %" SCNx64, &caps) == 1)
			break;
	fclose(f);
	return caps;
}

/*
 * Drop CAP_SYS_ADMIN from the effective, permitted and inheritable sets of
 * this process (it stays uid 0, so it can still open the device O_RDWR).
 * Meant for a forked child.  0 or -errno.
 */
static inline int fkv_drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	unsigned int i = CAP_TO_INDEX(CAP_SYS_ADMIN);
	uint32_t bit = CAP_TO_MASK(CAP_SYS_ADMIN);

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[i].effective &= ~bit;
	data[i].permitted &= ~bit;
	data[i].inheritable &= ~bit;
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	if (fkv_cap_effective() & (1ULL << CAP_SYS_ADMIN))
		return -EPERM;
	return 0;
}

/*
 * Run fn(arg) in a forked child and fail the test unless it returned (or
 * _exit'ed 0): FKV_ASSERT* in fn fail the child, hence the test.
 */
static inline void fkv_in_child(void (*fn)(void *), void *arg,
				const char *what)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	FKV_ASSERT(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		fn(arg);
		fflush(stdout);
		_exit(fkv_failed_here ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		FKV_ASSERT(errno == EINTR, "waitpid: %s", strerror(errno));
	FKV_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "%s failed in its child (status %#x)", what, status);
}

/* FLUXONKV_IOC_HOLD on fd; 0 or -errno, the result in *h. */
static inline int fkv_dev_hold(int fd, const void *key, size_t klen,
			       uint64_t handle, uint64_t put_id,
			       struct fluxonkv_hold *h)
{
	memset(h, 0, sizeof(*h));
	h->size = sizeof(*h);
	h->key_len = (uint32_t)klen;
	h->key_ptr = (uintptr_t)key;
	h->handle = handle;
	h->put_id = put_id;
	return ioctl(fd, FLUXONKV_IOC_HOLD, h) ? -errno : 0;
}

/*
 * FLUXONKV_IOC_TARGET on fd (a replica for another node's put); 0 or
 * -errno, the result (holder_id, offset, handle) in *t.
 */
static inline int fkv_dev_target(int fd, const void *key, size_t klen,
				 uint64_t put_id, uint64_t len,
				 struct fluxonkv_target *t)
{
	memset(t, 0, sizeof(*t));
	t->size = sizeof(*t);
	t->key_len = (uint32_t)klen;
	t->key_ptr = (uintptr_t)key;
	t->put_id = put_id;
	t->len = len;
	return ioctl(fd, FLUXONKV_IOC_TARGET, t) ? -errno : 0;
}

/* FLUXONKV_IOC_PUBLISH of target HANDLE at PUT_ID on fd; 0 or -errno. */
static inline int fkv_dev_publish(int fd, uint64_t handle, uint64_t put_id,
				  uint32_t flags)
{
	struct fluxonkv_publish p = { .size = sizeof(p), .flags = flags,
				      .handle = handle, .put_id = put_id };

	return ioctl(fd, FLUXONKV_IOC_PUBLISH, &p) ? -errno : 0;
}

/* Map the whole segment shared and writable (privileged sessions only). */
static inline uint8_t *fkv_dev_map_rw(int fd, uint64_t *size)
{
	struct fluxonkv_info info;

	if (fkv_dev_info(fd, &info))
		return MAP_FAILED;
	*size = info.segment_size;
	return mmap(NULL, info.segment_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
}

/* ---- debugfs views ------------------------------------------------------- */

/*
 * The handle of KEY's replica at PUT_ID in debugfs `replicas` (keys without
 * characters debugfs escapes).  0 with *handle set, -ESRCH if there is no
 * such replica, -ENOENT without debugfs.
 */
static inline int fkv_debugfs_replica(const char *key, uint64_t put_id,
				      uint64_t *handle)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/replicas", "r");
	char line[512], k[300];
	int ret = -ESRCH;

	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		uint64_t h, pid, off, len;
		unsigned int refs;
		int indexed;

		if (sscanf(line, "%" SCNx64 "\t%" SCNu64 "\t%" SCNu64 "\t%"
			   SCNu64 "\t%u\t%d\t%299s", &h, &pid, &off, &len,
			   &refs, &indexed, k) != 7)
			continue;
		if (pid == put_id && !strcmp(k, key)) {
			*handle = h;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Field NAME of debugfs `segment` (size, used, free_extents, ...); -1 without. */
static inline long long fkv_debugfs_segment(const char *name)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/segment", "r");
	char line[256], field[64];
	long long v, n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", field, &v) == 2 &&
		    !strcmp(field, name)) {
			n = v;
			break;
		}
	fclose(f);
	return n;
}

/* Outstanding upcalls of command CMD in debugfs `pending`; -1 without. */
static inline int fkv_debugfs_pending(unsigned int cmd)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/pending", "r");
	char line[256];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long id;
		unsigned int c;

		if (sscanf(line, "%lu\t%u", &id, &c) == 2 && c == cmd)
			n++;
	}
	fclose(f);
	return n;
}

/* How many times latency op NAME was recorded (debugfs); -1 without. */
static inline long long fkv_debugfs_latency_count(const char *name)
{
	FILE *f = fopen(FKV_DEBUGFS_DIR "/latency", "r");
	char line[2048], op[64];
	long long n = -1, count;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", op, &count) == 2 &&
		    !strcmp(op, name)) {
			n = count;
			break;
		}
	fclose(f);
	return n;
}

/*
 * A fake master's answer to an upcall (or a command): the attributes a
 * test sets, NLM_F_ACK unless @no_ack.
 */
struct answer {
	uint8_t cmd;
	bool has_req_id;
	uint64_t req_id;
	bool has_status;
	int32_t status;
	uint64_t put_id;	/* 0: left out */
	bool has_flags;
	uint32_t flags;
	uint64_t handle;	/* 0: left out */
	uint64_t len;		/* 0: left out */
	uint32_t source;	/* 0: left out */
	bool has_fd;
	uint32_t fd;		/* a descriptor of the sender (PUT_PLACE) */
	bool no_ack;		/* send without NLM_F_ACK, do not wait */
};

static inline struct nl_msg *fkv_answer_msg(struct fkv_nl *nl,
					    const struct answer *a)
{
	struct nl_msg *msg = nlmsg_alloc();

	FKV_ASSERT(msg);
	FKV_ASSERT(genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0,
			       a->no_ack ? 0 : NLM_F_ACK, a->cmd,
			       FLUXONKV_GENL_VERSION));
	if (a->has_req_id)
		FKV_ASSERT_EQ(nla_put_u64(msg, FLUXONKV_A_REQ_ID, a->req_id), 0);
	if (a->has_status)
		FKV_ASSERT_EQ(nla_put_s32(msg, FLUXONKV_A_STATUS, a->status), 0);
	if (a->put_id)
		FKV_ASSERT_EQ(nla_put_u64(msg, FLUXONKV_A_PUT_ID, a->put_id), 0);
	if (a->has_flags)
		FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_FLAGS, a->flags), 0);
	if (a->handle)
		FKV_ASSERT_EQ(nla_put_u64(msg, FLUXONKV_A_HANDLE, a->handle), 0);
	if (a->len)
		FKV_ASSERT_EQ(nla_put_u64(msg, FLUXONKV_A_LEN, a->len), 0);
	if (a->source)
		FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_SOURCE, a->source), 0);
	if (a->has_fd)
		FKV_ASSERT_EQ(nla_put_u32(msg, FLUXONKV_A_FD, a->fd), 0);
	return msg;
}

/* Send an answer; returns the kernel's 0 / -errno (0 at once if no_ack). */
static inline int send_answer(struct fkv_nl *nl, const struct answer *a)
{
	struct nl_msg *msg = fkv_answer_msg(nl, a);
	int ret;

	if (!a->no_ack)
		return fkv_nl_transact(nl, msg);
	nl_socket_disable_auto_ack(nl->sk);
	ret = nl_send_auto(nl->sk, msg);
	nl_socket_enable_auto_ack(nl->sk);
	nlmsg_free(msg);
	FKV_ASSERT(ret >= 0, "send without ack: %d", ret);
	return 0;
}


/*
 * Debugfs hook NAME (a u32 under FKV_DEBUGFS_DIR): write VAL; returns
 * -errno (-ENOENT: a module without that hook).
 */
static inline int fkv_debugfs_set(const char *name, unsigned long long val)
{
	char path[256], buf[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), FKV_DEBUGFS_DIR "/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%llu", val);
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/* Debugfs u32 NAME's value; -1 without it. */
static inline long long fkv_debugfs_u32(const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), FKV_DEBUGFS_DIR "/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * The kernel log from now on: fkv_kmsg_mark() opens /dev/kmsg at its end;
 * fkv_kmsg_splat() reads what was logged since, copies the first record
 * that is a splat (a WARNING, BUG, refcount_t or slub report) into BUF and
 * returns 1, or returns 0; it closes FD.  -1 when /dev/kmsg is not there.
 */
static inline int fkv_kmsg_mark(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

static inline int fkv_kmsg_splat(int fd, char *buf, size_t n)
{
	static const char *const splats[] = {
		"WARNING:", "BUG:", "refcount_t", "Oops", "general protection",
		"Poison overwritten", "Redzone", "list_add corruption",
		"list_del corruption",
	};
	char rec[4096];
	int found = 0;
	ssize_t r;
	size_t i;

	if (fd < 0)
		return 0;
	for (;;) {
		r = read(fd, rec, sizeof(rec) - 1);
		if (r < 0 && errno == EPIPE)
			continue;	/* records overwritten: go on */
		if (r <= 0)
			break;
		rec[r] = 0;
		for (i = 0; !found && i < sizeof(splats) / sizeof(*splats); i++)
			if (strstr(rec, splats[i])) {
				const char *msg = strchr(rec, ';');

				snprintf(buf, n, "%.*s", (int)(n - 1),
					 msg ? msg + 1 : rec);
				found = 1;
			}
	}
	close(fd);
	return found;
}

#endif /* FKV_ENV_H */
