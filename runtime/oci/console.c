// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <termios.h>

#include "console.h"
#include "util.h"

#define NAME_MAX_LEN 4096

int cryo_console_connect(const char *path, int *ret_fd, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path))
		return cryo_error_setx(err, ENAMETOOLONG, "console socket `%s`: path longer than %zu bytes", path,
				       sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cryo_error_set(err, errno, "console socket `%s`: socket", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return cryo_error_set(err, errno, "connect to console socket `%s`", path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int cryo_console_send_fd(int socket_fd, int fd, const char *name, struct cryo_error *err)
{
	/* an unnamed fd still travels with one byte (a NUL) */
	bool named = name && *name;
	int r = cryo_send_with_fd(socket_fd, fd, named ? name : "", named ? strlen(name) : 1);

	return r < 0 ? cryo_error_set(err, -r, "send the console fd") : 0;
}

int cryo_console_recv_fd(int socket_fd, int *ret_fd, char **ret_name, struct cryo_error *err)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	_cleanup_free_ char *name = malloc(NAME_MAX_LEN + 1);
	struct iovec iov = { .iov_base = name, .iov_len = NAME_MAX_LEN };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	int fd = -1;
	ssize_t n;

	if (!name)
		return cryo_error_set(err, ENOMEM, "receive the console fd");
	memset(&u, 0, sizeof(u));
	do
		n = recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return cryo_error_set(err, errno, "receive the console fd");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t nfds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfds; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd < 0)
				fd = f;
			else
				close(f); /* more than one: keep the first, leak nothing */
		}
	}
	if (fd < 0)
		return cryo_error_setx(err, EBADMSG, "receive the console fd: %s",
				       n == 0 ? "peer closed the socket" : "message carries no file descriptor");
	if (msg.msg_flags & MSG_CTRUNC) {
		close(fd);
		return cryo_error_setx(err, EBADMSG, "receive the console fd: control data truncated");
	}
	name[n] = '\0';
	if (ret_name)
		*ret_name = TAKE_PTR(name);
	*ret_fd = fd;
	return 0;
}

/*
 * Why TIOCGPTPEER rather than open(ptsname()): the name is resolved in
 * whatever /dev/pts the process sees, which a hostile rootfs could have
 * replaced; the peer ioctl gets the slave of exactly this master.
 */
int cryo_console_setup(int socket_fd, uint32_t uid, struct cryo_error *err)
{
	_cleanup_close_ int master = -1, slave = -1;
	char name[256];

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return cryo_error_set(err, errno, "console: open /dev/ptmx");
	if (unlockpt(master) < 0)
		return cryo_error_set(err, errno, "console: unlockpt");
	if (ptsname_r(master, name, sizeof(name)) != 0)
		return cryo_error_set(err, errno, "console: ptsname");
	slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return cryo_error_set(err, errno, "console: open the pty slave %s", name);
	/* the process's terminal is its user's (tty.bats: `stat $(tty)` says its uid) */
	if (uid != 0 && fchown(slave, (uid_t)uid, (gid_t)-1) < 0)
		return cryo_error_set(err, errno, "console: chown the pty slave %s to uid %u", name, uid);
	if (cryo_console_send_fd(socket_fd, master, name, err) < 0)
		return cryo_error_prefix(err, "console");
	close(TAKE_FD(master));

	if (setsid() < 0 && getsid(0) != getpid())
		return cryo_error_set(err, errno, "console: setsid");
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		return cryo_error_set(err, errno, "console: make %s the controlling terminal", name);
	for (int i = 0; i < 3; i++)
		if (dup2(slave, i) < 0)
			return cryo_error_set(err, errno, "console: dup %s onto fd %d", name, i);
	if (slave <= 2)
		TAKE_FD(slave); /* now one of 0..2: keep it open */
	return 0;
}

int cryo_console_resize(int fd, unsigned int height, unsigned int width, struct cryo_error *err)
{
	struct winsize ws = { 0 };

	if (height > UINT16_MAX || width > UINT16_MAX)
		return cryo_error_setx(err, EINVAL, "process.consoleSize: %ux%u is larger than 65535x65535", height,
				       width);
	ws.ws_row = (unsigned short)height;
	ws.ws_col = (unsigned short)width;
	if (ioctl(fd, TIOCSWINSZ, &ws) < 0)
		return cryo_error_set(err, errno, "console: set the window size to %ux%u", height, width);
	return 0;
}

/* All of buf to fd (blocking), restarting on EINTR. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void copy_winsize(int from, int to)
{
	struct winsize ws;

	if (ioctl(from, TIOCGWINSZ, &ws) == 0 && (ws.ws_row || ws.ws_col))
		(void)ioctl(to, TIOCSWINSZ, &ws);
}

void cryo_console_copy_size(int pty, int in_fd, int out_fd)
{
	int from = isatty(in_fd) ? in_fd : isatty(out_fd) ? out_fd : -1;

	if (from >= 0)
		copy_winsize(from, pty);
}

/*
 * One read from master to out. 1 = go on, 0 = the pty has no slave left
 * (Linux reports EIO then), <0 = -errno.
 */
static int pump_master(int master, int out_fd, bool *out_ok)
{
	char buf[8192];
	ssize_t n = read(master, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n == 0 || (n < 0 && errno == EIO))
		return 0;
	if (n < 0)
		return -errno;
	if (*out_ok && write_all(out_fd, buf, (size_t)n) < 0)
		*out_ok = false; /* nobody reads our output any more: drop it, keep the pty drained */
	return 1;
}

int cryo_console_relay(int master, int in_fd, int out_fd, int stop_fd, int sig_fd, struct cryo_error *err)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;
	struct termios saved;
	sigset_t winch, old_mask;
	bool raw = false, in_open = in_fd >= 0, out_ok = true;
	_cleanup_close_ int sfd = -1;
	int r = 0, size_fd;

	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	if (sigprocmask(SIG_BLOCK, &winch, &old_mask) < 0)
		return cryo_error_set(err, errno, "console relay: block SIGWINCH");
	sigaction(SIGPIPE, &ign, &old_pipe);
	if (in_open && isatty(in_fd) && tcgetattr(in_fd, &saved) == 0) {
		struct termios t = saved;

		cfmakeraw(&t);
		raw = tcsetattr(in_fd, TCSANOW, &t) == 0;
	}
	/* the geometry comes from our terminal, on whichever side we have one */
	size_fd = isatty(in_fd) ? in_fd : isatty(out_fd) ? out_fd : -1;
	if (size_fd >= 0) {
		sfd = signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK);
		copy_winsize(size_fd, master);
	}

	for (;;) {
		struct pollfd p[5];
		nfds_t np = 0;
		int im = -1, ii = -1, is = -1, ik = -1, ig = -1;

		p[np] = (struct pollfd){ .fd = master, .events = POLLIN };
		im = (int)np++;
		if (in_open) {
			p[np] = (struct pollfd){ .fd = in_fd, .events = POLLIN };
			ii = (int)np++;
		}
		if (sfd >= 0) {
			p[np] = (struct pollfd){ .fd = sfd, .events = POLLIN };
			is = (int)np++;
		}
		if (stop_fd >= 0) {
			p[np] = (struct pollfd){ .fd = stop_fd, .events = POLLIN };
			ik = (int)np++;
		}
		if (sig_fd >= 0 && stop_fd >= 0) {
			p[np] = (struct pollfd){ .fd = sig_fd, .events = POLLIN };
			ig = (int)np++;
		}
		if (poll(p, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = cryo_error_set(err, errno, "console relay: poll");
			break;
		}
		if (p[im].revents) {
			int k = pump_master(master, out_fd, &out_ok);

			if (k < 0) {
				r = cryo_error_set(err, -k, "console relay: read the pty");
				break;
			}
			if (k == 0)
				break;
		}
		if (ii >= 0 && p[ii].revents) {
			char buf[4096];
			ssize_t n = read(in_fd, buf, sizeof(buf));

			if (n < 0 && errno == EINTR)
				continue;
			/* EOF on our input (the process keeps its pty), or the pty takes no more */
			if (n <= 0 || write_all(master, buf, (size_t)n) < 0)
				in_open = false;
		}
		if (is >= 0 && p[is].revents) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
			copy_winsize(size_fd, master);
		}
		if (ig >= 0 && p[ig].revents) {
			struct signalfd_siginfo si;

			while (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				(void)syscall(SYS_pidfd_send_signal, stop_fd, (int)si.ssi_signo, NULL, 0);
		}
		if (ik >= 0 && p[ik].revents) {
			/* the process is gone: take what it left in the pty, without waiting for more */
			struct pollfd d = { .fd = master, .events = POLLIN };

			while (poll(&d, 1, 0) > 0 && (d.revents & POLLIN) && pump_master(master, out_fd, &out_ok) > 0)
				;
			break;
		}
	}

	if (raw)
		(void)tcsetattr(in_fd, TCSANOW, &saved);
	sigaction(SIGPIPE, &old_pipe, NULL);
	if (sfd >= 0) {
		struct signalfd_siginfo si;

		/* a pending SIGWINCH is ours: consume it rather than deliver it on unblock */
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
	}
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	return r;
}
