// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "util.h"
#include "watchdog.h"

struct ready_msg {
	int status;
	pid_t pid;
	char msg[sizeof(((struct cryo_watchdog_ready *)0)->msg)];
};

_Static_assert(sizeof(struct ready_msg) < PIPE_BUF, "the ready message must be one atomic pipe write");

static void send_ready(int fd, int status, const char *msg)
{
	struct ready_msg m = { .status = status, .pid = getpid() };

	if (msg)
		snprintf(m.msg, sizeof(m.msg), "%s", msg);
	if (write(fd, &m, sizeof(m)) < 0) {
		/* the creator is gone: nobody to tell */
	}
}

void cryo_watchdog_ready(int ready_fd, int status, const char *msg)
{
	send_ready(ready_fd, status, msg);
	close(ready_fd);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/*
 * Leave nothing of the creator behind that could tie our lifetime or a
 * frozen filesystem to it: no inherited fds (a pipe held open would keep
 * `$(cryo fsfreeze ...)` waiting forever), no terminal, no cwd on a
 * filesystem that could be frozen, no inherited signal dispositions.
 */
static void detach(int ready_fd, const int *keep_fds, size_t n_keep)
{
	static const int ignored[] = { SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2 };
	int keep[66], n = 0, fd, sig;
	unsigned lo = 3;
	sigset_t all;
	size_t i;

	for (sig = 1; sig < _NSIG; sig++)
		signal(sig, SIG_DFL);
	for (i = 0; i < ARRAY_SIZE(ignored); i++)
		signal(ignored[i], SIG_IGN);
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);

	if (chdir("/") < 0) {
		/* "/" always exists */
	}
	umask(077);
	cryo_log_close();

	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}

	keep[n++] = ready_fd;
	for (i = 0; i < n_keep && n < (int)ARRAY_SIZE(keep); i++)
		keep[n++] = keep_fds[i];
	qsort(keep, (size_t)n, sizeof(keep[0]), cmp_int);
	for (i = 0; i < (size_t)n; i++) {
		if (keep[i] < (int)lo)
			continue;
		if ((unsigned)keep[i] > lo)
			close_range(lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	close_range(lo, ~0U, 0);

	/* the deadline is the host's safety net; it must not be the OOM victim */
	fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "-1000", 5) < 0) {
			/* without CAP_SYS_RESOURCE the default score stays */
		}
		close(fd);
	}
}

/* poll() fd for POLLIN up to timeout_ms, resuming after signals: 1, 0 on timeout, -1 with errno. */
static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	do {
		r = poll(&p, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	return r;
}

int cryo_watchdog_spawn(cryo_watchdog_main_fn main_fn, void *data, const int *keep_fds, size_t n_keep,
			int timeout_ms, pid_t *ret_pid, struct cryo_error *err)
{
	_cleanup_close_ int rfd = -1;
	struct ready_msg m = { 0 };
	int pfd[2], status, r;
	ssize_t n;
	pid_t pid;

	if (n_keep > 64)
		return cryo_error_setx(err, EINVAL, "watchdog: at most 64 fds can be passed, not %zu", n_keep);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "watchdog: pipe");
	rfd = pfd[0];

	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pfd[1]);
		return cryo_error_set(err, -r, "watchdog: fork");
	}
	if (pid == 0) {
		pid_t gc;

		close(pfd[0]);
		/* a session of its own: no process group or terminal signal reaches it */
		if (setsid() < 0) {
			send_ready(pfd[1], errno, "setsid failed");
			_exit(1);
		}
		/* the session leader exits so the watchdog can never reacquire a terminal */
		gc = fork();
		if (gc < 0) {
			send_ready(pfd[1], errno, "second fork failed");
			_exit(1);
		}
		if (gc > 0)
			_exit(0);
		detach(pfd[1], keep_fds, n_keep);
		main_fn(data, pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;

	r = wait_readable(rfd, timeout_ms);
	if (r < 0)
		return cryo_error_set(err, errno, "watchdog: wait for it to start");
	if (r == 0)
		return cryo_error_setx(err, ETIMEDOUT, "watchdog: not ready after %d ms", timeout_ms);
	n = read(rfd, &m, sizeof(m));
	if (n < 0)
		return cryo_error_set(err, errno, "watchdog: read its ready message");
	if (n != (ssize_t)sizeof(m))
		return cryo_error_setx(err, EIO, "watchdog: exited before it was ready");
	m.msg[sizeof(m.msg) - 1] = '\0';
	if (m.status != 0)
		return cryo_error_setx(err, m.status, "%s", m.msg[0] ? m.msg : strerror(m.status));
	if (ret_pid)
		*ret_pid = m.pid;
	return 0;
}

/* A new socket and the address of dirfd/name for it (through /proc: sun_path is short). */
static int open_socket(int dirfd, const char *name, struct sockaddr_un *sa, socklen_t *ret_len, int *ret_fd,
		       struct cryo_error *err)
{
	int n, fd;

	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path))
		return cryo_error_setx(err, ENAMETOOLONG, "watchdog socket name `%s` is too long", name);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cryo_error_set(err, errno, "watchdog: socket");
	*ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
	*ret_fd = fd;
	return 0;
}

int cryo_watchdog_listen(int dirfd, const char *name, int *ret_fd, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	socklen_t len = 0;
	int r;

	r = open_socket(dirfd, name, &sa, &len, &fd, err);
	if (r < 0)
		return r;
	if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return cryo_error_set(err, errno, "watchdog: remove stale socket `%s`", name);
	if (bind(fd, (struct sockaddr *)&sa, len) < 0)
		return cryo_error_set(err, errno, "watchdog: bind `%s`", name);
	if (listen(fd, 16) < 0)
		return cryo_error_set(err, errno, "watchdog: listen on `%s`", name);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

bool cryo_watchdog_gone(int dirfd, const char *name)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	socklen_t len = 0;

	if (open_socket(dirfd, name, &sa, &len, &fd, NULL) < 0)
		return false;
	return connect(fd, (struct sockaddr *)&sa, len) < 0 && errno == ECONNREFUSED;
}

int cryo_watchdog_call(int dirfd, const char *name, const char *req, char *reply, size_t size, int timeout_ms,
		       struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa;
	socklen_t len = 0;
	ssize_t n;
	int r;

	r = open_socket(dirfd, name, &sa, &len, &fd, err);
	if (r < 0)
		return r;
	if (connect(fd, (struct sockaddr *)&sa, len) < 0)
		return cryo_error_set(err, errno, "watchdog: connect to `%s`", name);
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0)
		return cryo_error_set(err, errno == EPIPE || errno == ECONNRESET ? EPIPE : errno, "watchdog: send");
	r = wait_readable(fd, timeout_ms);
	if (r < 0)
		return cryo_error_set(err, errno, "watchdog: wait for the reply");
	if (r == 0)
		return cryo_error_setx(err, ETIMEDOUT, "watchdog: no reply in %d ms", timeout_ms);
	n = recv(fd, reply, size - 1, 0);
	if (n < 0)
		return cryo_error_set(err, errno == ECONNRESET ? EPIPE : errno, "watchdog: receive the reply");
	if (n == 0)
		return cryo_error_setx(err, EPIPE, "watchdog: closed the connection without a reply");
	reply[n] = '\0';
	return 0;
}

int cryo_watchdog_accept(int listen_fd, char *req, size_t size)
{
	_cleanup_close_ int fd = -1;
	struct timeval tv = { .tv_sec = 1 };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	ssize_t n;

	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the directory is 0700 already; this also rejects a setuid-less peer in a user namespace */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
		return -errno;
	if (cred.uid != 0 && cred.uid != geteuid())
		return -EPERM;
	/* a client that connects and says nothing must not stall the deadline */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	n = recv(fd, req, size - 1, 0);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EPIPE;
	req[n] = '\0';
	return TAKE_FD(fd);
}

void cryo_watchdog_reply(int conn_fd, const char *reply)
{
	if (send(conn_fd, reply, strlen(reply), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the client gave up waiting; it reads the journal instead */
	}
	close(conn_fd);
}
