/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fkv_test.h - the project's small kselftest-style harness.
 *
 * Each FKV_TEST(name) runs in its own forked child with a timeout, so a
 * crash or a hang fails that test only.  Output is TAP 13; the process exits
 * 0 (all passed), 1 (something failed) or 4 (everything skipped), as
 * kselftest expects.  A test passes by returning, fails through an
 * FKV_ASSERT* or FKV_EXPECT* and skips through FKV_SKIP().
 *
 * Optional per-program hooks: define FKV_TEST_SETUP_ALL() to run once before
 * the tests (return a negative errno to skip all, with a reason).
 */
#ifndef FKV_TEST_H
#define FKV_TEST_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FKV_EXIT_SKIP	4
#define FKV_MAX_TESTS	256

struct fkv_test {
	const char *name;
	void (*fn)(void);
	unsigned int timeout_s;
};

static struct fkv_test fkv_tests[FKV_MAX_TESTS];
static int fkv_ntests;
static int fkv_failed_here;	/* in the child: an EXPECT failed */

#define FKV_TEST_TIMEOUT(name, secs)					\
	static void fkv_test_##name(void);				\
	__attribute__((constructor)) static void fkv_reg_##name(void)	\
	{								\
		if (fkv_ntests < FKV_MAX_TESTS)				\
			fkv_tests[fkv_ntests++] = (struct fkv_test){	\
				#name, fkv_test_##name, (secs) };	\
	}								\
	static void fkv_test_##name(void)

#define FKV_TEST(name) FKV_TEST_TIMEOUT(name, 60)

#define fkv_diag(...)							\
	do {								\
		printf("# ");						\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		fflush(stdout);						\
	} while (0)

#define FKV_SKIP(...)							\
	do {								\
		printf("# SKIP ");					\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		fflush(stdout);						\
		_exit(FKV_EXIT_SKIP);					\
	} while (0)

#define FKV_FAIL_AT(fatal, ...)						\
	do {								\
		printf("# %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		fflush(stdout);						\
		if (fatal)						\
			_exit(1);					\
		fkv_failed_here = 1;					\
	} while (0)

#define FKV_CHECK_(fatal, cond, ...)					\
	do {								\
		if (!(cond)) {						\
			printf("# %s:%d: check failed: %s\n# ",		\
			       __FILE__, __LINE__, #cond);		\
			printf(__VA_ARGS__);				\
			printf("\n");					\
			fflush(stdout);					\
			if (fatal)					\
				_exit(1);				\
			fkv_failed_here = 1;				\
		}							\
	} while (0)

#define FKV_ASSERT(cond, ...) FKV_CHECK_(1, cond, " " __VA_ARGS__)
#define FKV_EXPECT(cond, ...) FKV_CHECK_(0, cond, " " __VA_ARGS__)

/* Compare integers and print both values on mismatch. */
#define FKV_CMP_(fatal, a, op, b)					\
	do {								\
		long long fkv_a_ = (long long)(a);			\
		long long fkv_b_ = (long long)(b);			\
		if (!(fkv_a_ op fkv_b_))				\
			FKV_FAIL_AT(fatal, "%s %s %s: %lld vs %lld",	\
				    #a, #op, #b, fkv_a_, fkv_b_);	\
	} while (0)
#define FKV_ASSERT_EQ(a, b) FKV_CMP_(1, a, ==, b)
#define FKV_ASSERT_NE(a, b) FKV_CMP_(1, a, !=, b)
#define FKV_ASSERT_GE(a, b) FKV_CMP_(1, a, >=, b)
#define FKV_ASSERT_LE(a, b) FKV_CMP_(1, a, <=, b)
#define FKV_ASSERT_GT(a, b) FKV_CMP_(1, a, >, b)
#define FKV_ASSERT_LT(a, b) FKV_CMP_(1, a, <, b)
#define FKV_EXPECT_EQ(a, b) FKV_CMP_(0, a, ==, b)
#define FKV_EXPECT_NE(a, b) FKV_CMP_(0, a, !=, b)

/* A syscall-style call that must fail with exactly errno e. */
#define FKV_ASSERT_ERRNO(call, e)					\
	do {								\
		errno = 0;						\
		long fkv_r_ = (long)(call);				\
		if (fkv_r_ != -1 || errno != (e))			\
			FKV_FAIL_AT(1, "%s: want -1/%s, got %ld/%s",	\
				    #call, strerror(e), fkv_r_,		\
				    strerror(errno));			\
	} while (0)

static int fkv_run_one(const struct fkv_test *t)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		alarm(t->timeout_s);
		t->fn();
		fflush(stdout);
		_exit(fkv_failed_here ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		printf("# %s: killed by signal %d%s\n", t->name,
		       WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
		return 1;
	}
	return WEXITSTATUS(status);
}

#ifndef FKV_TEST_SETUP_ALL
static int fkv_setup_all_default(const char **why) { (void)why; return 0; }
#define FKV_TEST_SETUP_ALL fkv_setup_all_default
#endif

int main(int argc, char **argv)
{
	int pass = 0, fail = 0, skip = 0, i;
	const char *why = "";
	const char *only = argc > 1 ? argv[1] : NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	if (FKV_TEST_SETUP_ALL(&why) < 0) {
		printf("1..0 # SKIP %s\n", why);
		return FKV_EXIT_SKIP;
	}
	printf("1..%d\n", fkv_ntests);
	for (i = 0; i < fkv_ntests; i++) {
		const struct fkv_test *t = &fkv_tests[i];
		int rc;

		if (only && strcmp(only, t->name)) {
			printf("ok %d %s # SKIP not selected\n", i + 1, t->name);
			skip++;
			continue;
		}
		rc = fkv_run_one(t);
		if (rc == 0) {
			printf("ok %d %s\n", i + 1, t->name);
			pass++;
		} else if (rc == FKV_EXIT_SKIP) {
			printf("ok %d %s # SKIP\n", i + 1, t->name);
			skip++;
		} else {
			printf("not ok %d %s\n", i + 1, t->name);
			fail++;
		}
	}
	printf("# %s: %d passed, %d failed, %d skipped\n", argv[0], pass, fail,
	       skip);
	if (fail)
		return 1;
	return pass ? 0 : FKV_EXIT_SKIP;
}

#endif /* FKV_TEST_H */
