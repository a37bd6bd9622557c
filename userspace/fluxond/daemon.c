// SPDX-License-Identifier: GPL-2.0
/*
 * daemon.c - detaching and the pid file (daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"

int fkv_daemon_detach(void)
{
	int pfd[2], null;
	unsigned char status;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid > 0) {
		/* The launcher: wait for the daemon's verdict. */
		close(pfd[1]);
		do {
			n = read(pfd[0], &status, 1);
		} while (n < 0 && errno == EINTR);
		_exit(n == 1 ? status : 1);
	}
	close(pfd[0]);
	if (setsid() < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0)
		_exit(0);	/* the daemon is not a session leader */
	if (chdir("/"))
		return -errno;
	null = open("/dev/null", O_RDWR);
	if (null < 0)
		return -errno;
	dup2(null, STDIN_FILENO);
	dup2(null, STDOUT_FILENO);
	if (null > STDERR_FILENO)
		close(null);
	return pfd[1];
}

void fkv_daemon_ready(int fd, int status)
{
	unsigned char s = (unsigned char)status;
	int null;

	if (fd < 0)
		return;
	while (write(fd, &s, 1) < 0 && errno == EINTR)
		;
	close(fd);
	null = open("/dev/null", O_WRONLY);
	if (null >= 0) {
		dup2(null, STDERR_FILENO);
		if (null != STDERR_FILENO)
			close(null);
	}
}

int fkv_pidfile_create(const char *path)
{
	char buf[32];
	int fd, len;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno == EWOULDBLOCK ? -EEXIST : -errno;

		close(fd);
		return err;
	}
	len = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)len, 0) != len) {
		int err = -errno;

		close(fd);
		return err ? err : -EIO;
	}
	return fd;
}

void fkv_pidfile_remove(const char *path, int fd)
{
	if (fd < 0)
		return;
	unlink(path);
	close(fd);
}

int fkv_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, err = 0;

	if (!path || !path[0])
		return 0;
	/* An absolute path, or '@' for the abstract namespace. */
	if ((path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	strcpy(sa.sun_path, path);
	if (path[0] == '@')
		sa.sun_path[0] = 0;
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		   (struct sockaddr *)&sa, len) < 0)
		err = -errno;
	close(fd);
	return err;
}
