// SPDX-License-Identifier: GPL-2.0
/*
 * test_notify.c - fluxond's sd_notify(3) (daemon.c fkv_sd_notify): the
 * message reaches $NOTIFY_SOCKET, a path or an abstract name; nothing is
 * sent without one; a bad one is refused.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../selftests/fkv_test.h"
#include "../../userspace/fluxond/daemon.h"

/* A datagram socket bound at @name (a path, or "@..." abstract). */
static int listener(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				    strlen(name));
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	FKV_ASSERT(fd >= 0);
	strcpy(sa.sun_path, name);
	if (name[0] == '@')
		sa.sun_path[0] = 0;
	FKV_ASSERT_EQ(bind(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

static void expect_message(int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	FKV_ASSERT(n >= 0, "nothing received: %s", strerror(errno));
	buf[n] = 0;
	FKV_ASSERT(!strcmp(buf, want), "got '%s', want '%s'", buf, want);
}

FKV_TEST(ready_reaches_the_service_manager_socket)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/fkv-notify-%d", (int)getpid());
	unlink(path);
	fd = listener(path);
	setenv("NOTIFY_SOCKET", path, 1);
	FKV_ASSERT_EQ(fkv_sd_notify("READY=1\nSTATUS=registered"), 0);
	expect_message(fd, "READY=1\nSTATUS=registered");
	FKV_ASSERT_EQ(fkv_sd_notify("STOPPING=1"), 0);
	expect_message(fd, "STOPPING=1");
	close(fd);
	unlink(path);
	/* gone: the send fails, nothing else happens */
	FKV_ASSERT_EQ(fkv_sd_notify("READY=1"), -ENOENT);
}

FKV_TEST(an_abstract_socket_name_works_too)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@fkv-notify-%d", (int)getpid());
	fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	FKV_ASSERT_EQ(fkv_sd_notify("RELOADING=1"), 0);
	expect_message(fd, "RELOADING=1");
	close(fd);
}

FKV_TEST(without_or_with_a_bad_notify_socket_nothing_is_sent)
{
	unsetenv("NOTIFY_SOCKET");
	FKV_ASSERT_EQ(fkv_sd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	FKV_ASSERT_EQ(fkv_sd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	FKV_ASSERT_EQ(fkv_sd_notify("READY=1"), -EINVAL);
	unsetenv("NOTIFY_SOCKET");
}
