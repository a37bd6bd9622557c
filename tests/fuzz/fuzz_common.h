/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fuzz_common.h - what the fuzz targets share: CHECK() (a broken promise
 * aborts, as a sanitizer finding would), the daemon's log silenced (the
 * targets that link fluxond's code are linked with -Wl,--wrap=fkv_log and
 * define FUZZ_WRAP_LOG), and, with -DFKV_FUZZ_STANDALONE, the replay
 * driver that make unit runs: every file of a corpus directory through
 * LLVMFuzzerTestOneInput(), one TAP line each.
 */
#ifndef FKV_FUZZ_COMMON_H
#define FKV_FUZZ_COMMON_H

#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CHECK
#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: broken promise: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)
#endif

#ifdef FUZZ_FRAMES
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "../../userspace/common/cluster_msg.h"

/*
 * A frame of the TCP protocols in @buf (@cap bytes): command @cmd and the
 * attribute bytes @attrs (@len, padded to 4).  Its length, or 0 if it does
 * not fit.
 */
static inline size_t fuzz_frame(uint8_t *buf, size_t cap, uint8_t cmd,
				const uint8_t *attrs, size_t len)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct genlmsghdr *gh;
	size_t total = NLMSG_HDRLEN + GENL_HDRLEN + NLA_ALIGN(len);

	if (total > cap)
		return 0;
	memset(buf, 0, total);
	nlh->nlmsg_len = (uint32_t)total;
	nlh->nlmsg_type = FKV_WIRE_TYPE;
	gh = (struct genlmsghdr *)(buf + NLMSG_HDRLEN);
	gh->cmd = cmd;
	gh->version = FLUXONKV_GENL_VERSION;
	memcpy(buf + NLMSG_HDRLEN + GENL_HDRLEN, attrs, len);
	return total;
}

/*
 * Append FKV_CA_MAC = @mac (FKV_MAC_LEN bytes) to the frame of @total
 * bytes in @buf (@cap): a signature or a seal (auth.h).  The new total, or
 * 0 if it does not fit.
 */
static inline size_t fuzz_append_mac(uint8_t *buf, size_t total, size_t cap,
				     const uint8_t *mac)
{
	struct nlattr a = { .nla_len = NLA_HDRLEN + FKV_MAC_LEN,
			    .nla_type = FKV_CA_MAC };
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;

	if (total + NLA_HDRLEN + FKV_MAC_LEN > cap)
		return 0;
	memcpy(buf + total, &a, sizeof(a));
	memcpy(buf + total + NLA_HDRLEN, mac, FKV_MAC_LEN);
	total += NLA_HDRLEN + FKV_MAC_LEN;
	nlh->nlmsg_len = (uint32_t)total;
	return total;
}
#endif

#if defined(FKV_FUZZ_STANDALONE) && defined(FUZZ_FRAMES)
/* The seed corpora's writers (--seeds DIR): one input file at a time. */
struct seed {
	uint8_t buf[8192];
	size_t len;
};

static void put8(struct seed *sd, uint8_t b)
{
	if (sd->len < sizeof(sd->buf))
		sd->buf[sd->len++] = b;
}

static void put16(struct seed *sd, uint16_t v)
{
	put8(sd, (uint8_t)v);
	put8(sd, (uint8_t)(v >> 8));
}

static void seed_write(const char *dir, const char *name, struct seed *sd)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	CHECK(f);
	CHECK(fwrite(sd->buf, 1, sd->len, f) == sd->len);
	fclose(f);
	sd->len = 0;
}
#endif

#ifdef FUZZ_WRAP_LOG
/*
 * Every fkv_log() of the daemon's code lands here (--wrap): formatted (so
 * that the sanitizers see every argument a log line reads) and dropped,
 * unless FKV_FUZZ_LOG is set in the environment.
 */
static bool fuzz_log_on;

void __wrap_fkv_log(enum fkv_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void __wrap_fkv_log(enum fkv_log_level level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (fuzz_log_on)
		fprintf(stderr, "fluxond: %d: %s\n", (int)level, buf);
}

static inline void fuzz_log_quiet(void)
{
	fuzz_log_on = getenv("FKV_FUZZ_LOG") != NULL;
	/* fkv_dbg() tests the level before it formats anything */
	fkv_log_setup(fuzz_log_on ? FKV_LOG_DEBUG : FKV_LOG_ERR, false);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef FKV_FUZZ_STANDALONE
static int fuzz_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void fuzz_replay_file(const char *path, int n)
{
	static uint8_t buf[1 << 20];
	FILE *f = fopen(path, "rb");
	size_t len;

	if (!f) {
		printf("not ok %d - %s: cannot open\n", n, path);
		return;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	fflush(stdout);
	LLVMFuzzerTestOneInput(buf, len);
	/* a broken promise or a sanitizer finding aborted before this */
	printf("ok %d - %s replays (%zu bytes)\n", n, path, len);
	fflush(stdout);
}

/*
 * Replay the files named in @argv, or every file of @dir (relative to
 * the tree's root, where make runs) in name order: TAP on stdout.
 */
static int fuzz_replay_main(int argc, char **argv, const char *dir,
			    int (*fn)(const uint8_t *, size_t))
{
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;

	(void)fn;
	if (argc > 1) {
		printf("1..%d\n", argc - 1);
		for (i = 1; i < (size_t)argc; i++)
			fuzz_replay_file(argv[i], (int)i);
		return 0;
	}
	d = opendir(dir);
	if (!d) {
		printf("1..0 # SKIP no corpus at %s\n", dir);
		return 0;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			CHECK(names);
		}
		names[n] = strdup(de->d_name);
		CHECK(names[n]);
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), fuzz_cmp);
	printf("1..%zu\n", n);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		fuzz_replay_file(path, (int)i + 1);
		free(names[i]);
	}
	free(names);
	return 0;
}
#endif

#endif /* FKV_FUZZ_COMMON_H */
