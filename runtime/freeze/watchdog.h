/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A watchdog is a small process that undoes a state change (a FIFREEZE,
 * a cgroup freeze) when its deadline passes, for when no kernel module
 * does it. It must outlive whoever created it: cryo may be killed with
 * SIGKILL, alone or with its whole process group or session, or lose its
 * terminal. So it is double-forked, setsid()'d, holds only the fds it
 * was given, has stdio on /dev/null, its cwd on `/` (never a filesystem
 * it might freeze) and an oom_score_adj of -1000.
 *
 * Clients talk to it over a SOCK_SEQPACKET unix socket in a state
 * directory, one request and one reply per connection, both short text
 * messages. The socket is addressed through /proc/self/fd/<dirfd>/<name>
 * so a long --root cannot overflow sun_path.
 */
#ifndef CRYO_WATCHDOG_H
#define CRYO_WATCHDOG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define CRYO_WATCHDOG_MSG_MAX 4096

struct cryo_watchdog_ready {
	int status;         /* 0 or a positive errno */
	char msg[1024];     /* the error sentence when status != 0 */
};

/*
 * What runs in the detached process. It must call cryo_watchdog_ready()
 * exactly once (success or failure) and then never return: _exit().
 */
typedef void (*cryo_watchdog_main_fn)(void *data, int ready_fd);

/*
 * Start main(data, ready_fd) in a detached process that keeps only
 * keep_fds[0..n_keep) (at the same numbers) and ready_fd. Waits up to
 * timeout_ms for the ready message; on success *ret_pid is the watchdog's
 * pid. A non-zero ready status is returned as -status with its message.
 */
int cryo_watchdog_spawn(cryo_watchdog_main_fn main_fn, void *data, const int *keep_fds, size_t n_keep,
			int timeout_ms, pid_t *ret_pid, struct cryo_error *err);

/* In the watchdog: report readiness (status 0) or failure, close ready_fd. */
void cryo_watchdog_ready(int ready_fd, int status, const char *msg);

/* Bind and listen on dirfd/name (a stale socket file is replaced). */
int cryo_watchdog_listen(int dirfd, const char *name, int *ret_fd, struct cryo_error *err);

/*
 * Whether the socket file dirfd/name has nobody listening on it any more
 * (its maker died between bind and handing it to its watchdog). Ask it
 * under the lock that listeners bind under: between bind and listen a
 * live one refuses too.
 */
bool cryo_watchdog_gone(int dirfd, const char *name);

/*
 * Send req to the watchdog listening on dirfd/name and wait up to
 * timeout_ms for its reply (NUL-terminated into reply[size]).
 * -ECONNREFUSED / -ENOENT: no watchdog is listening there (it is gone);
 * -EPIPE: it closed the connection without a reply (it was exiting).
 */
int cryo_watchdog_call(int dirfd, const char *name, const char *req, char *reply, size_t size, int timeout_ms,
		       struct cryo_error *err);

/*
 * In the watchdog: accept one connection and read its request
 * (NUL-terminated, at most size-1 bytes). Returns the connection fd to
 * answer with cryo_watchdog_reply(), or -errno.
 */
int cryo_watchdog_accept(int listen_fd, char *req, size_t size);
void cryo_watchdog_reply(int conn_fd, const char *reply);

#endif
