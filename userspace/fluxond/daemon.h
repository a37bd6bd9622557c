/* SPDX-License-Identifier: GPL-2.0 */
/*
 * daemon.h - process housekeeping: detaching with a readiness handshake, and
 * the pid file.
 */
#ifndef FLUXOND_DAEMON_H
#define FLUXOND_DAEMON_H

/*
 * Detach: fork, setsid, fork again, chdir /, stdin and stdout on /dev/null
 * (stderr stays until fkv_daemon_ready(), for startup errors).  The
 * original process waits until the daemon calls fkv_daemon_ready() and
 * exits with the status given there (1 if the daemon dies first), so the
 * caller of "fluxond --daemon" still sees startup errors.  Returns the
 * handshake fd (>= 0) in the daemon, or -errno.
 */
int fkv_daemon_detach(void);
/*
 * Report startup success (0) or failure (exit status) to the launcher;
 * stderr moves to /dev/null.
 */
void fkv_daemon_ready(int fd, int status);

/*
 * Create and lock a pid file holding our pid.  Returns its fd, -EEXIST if
 * another live process holds it, or -errno.
 */
/*
 * Tell the service manager @state ("READY=1", "RELOADING=1",
 * "STOPPING=1", "STATUS=..."; sd_notify(3)) through $NOTIFY_SOCKET, if
 * it set one (Type=notify).  0, or -errno; nothing to do is 0.
 */
int fkv_sd_notify(const char *state);
int fkv_pidfile_create(const char *path);
void fkv_pidfile_remove(const char *path, int fd);

#endif /* FLUXOND_DAEMON_H */
