// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo-test-seccomp-agent: the other end of linux.seccomp.listenerPath, for
 * tests. Listens on a unix socket (SOCK_STREAM), and for every connection
 * receives the container process state JSON with the notify fd
 * (SCM_RIGHTS) until the runtime closes it, then answers that fd's
 * notifications:
 *
 *	mkdir / mkdirat of a path ending in `agent-errno`  -> -EXDEV
 *	mkdir / mkdirat of a path ending in `agent-fake`   -> 0, nothing made
 *	anything else                                      -> let the kernel run it
 *
 * Files in OUTDIR: state.N.json (what connection N carried, N from 1),
 * fds.N (how many fds came with it), log (one line per answer:
 * `PID SYSCALL PATH errno|fake|continue`). Runs until killed.
 *
 *	cryo-test-seccomp-agent SOCKET OUTDIR
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_FDS 64
#define STATE_MAX (256 * 1024)

static const char *outdir;
static int n_conn;

static void die(const char *what)
{
	fprintf(stderr, "cryo-test-seccomp-agent: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_file(const char *name, const char *data, size_t len)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", outdir, name);
	f = fopen(p, "w");
	if (!f)
		die(p);
	fwrite(data, 1, len, f);
	fclose(f);
}

/* One connection: the JSON (over one or more reads) and the fds of the first message. */
static int take_connection(int conn)
{
	static char buf[STATE_MAX];
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	size_t len = 0, nfds = 0;
	int fds[4] = { -1, -1, -1, -1 };
	char name[64], count[16];
	ssize_t n;

	n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		die("recvmsg");
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfds > 4)
			nfds = 4;
		memcpy(fds, CMSG_DATA(cm), nfds * sizeof(int));
	}
	len = (size_t)n;
	while (n > 0 && len < sizeof(buf) - 1) {
		n = read(conn, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			n = 1;
		else if (n > 0)
			len += (size_t)n;
	}
	n_conn++;
	snprintf(name, sizeof(name), "state.%d.json", n_conn);
	write_file(name, buf, len);
	snprintf(name, sizeof(name), "fds.%d", n_conn);
	snprintf(count, sizeof(count), "%zu\n", nfds);
	write_file(name, count, strlen(count));
	for (size_t i = 1; i < nfds; i++)
		close(fds[i]);
	return fds[0];
}

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...)
{
	char p[PATH_MAX];
	va_list ap;
	FILE *f;

	snprintf(p, sizeof(p), "%s/log", outdir);
	f = fopen(p, "a");
	if (!f)
		die(p);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* One notification on fd; -1 when the fd is done (every process of the filter gone). */
static int answer(int fd)
{
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;
	char path[PATH_MAX] = "", memp[64], *name;
	const char *verdict = "continue";
	uint64_t addr = 0;
	int r, mem;

	if (seccomp_notify_alloc(&req, &resp) < 0)
		die("seccomp_notify_alloc");
	r = seccomp_notify_receive(fd, req);
	if (r < 0) {
		seccomp_notify_free(req, resp);
		/* ENOENT: the process went away between poll and receive */
		return r == -ENOENT || r == -EINTR ? 0 : -1;
	}
	name = seccomp_syscall_resolve_num_arch(req->data.arch, req->data.nr);
	if (name && strcmp(name, "mkdir") == 0)
		addr = req->data.args[0];
	else if (name && strcmp(name, "mkdirat") == 0)
		addr = req->data.args[1];
	if (addr) {
		snprintf(memp, sizeof(memp), "/proc/%u/mem", req->pid);
		mem = open(memp, O_RDONLY | O_CLOEXEC);
		if (mem >= 0) {
			ssize_t n = pread(mem, path, sizeof(path) - 1, (off_t)addr);

			path[n > 0 ? n : 0] = '\0';
			close(mem);
		}
	}
	resp->id = req->id;
	resp->flags = 0;
	resp->val = 0;
	resp->error = 0;
	/* the path was read from a process that may be gone or reused since: check the id again */
	if (seccomp_notify_id_valid(fd, req->id) < 0) {
		seccomp_notify_free(req, resp);
		return 0;
	}
	if (addr && ends_with(path, "agent-errno")) {
		resp->error = -EXDEV;
		verdict = "errno";
	} else if (addr && ends_with(path, "agent-fake")) {
		verdict = "fake";
	} else {
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	}
	log_line("%u %s %s %s\n", req->pid, name ? name : "?", path[0] ? path : "-", verdict);
	free(name);
	r = seccomp_notify_respond(fd, resp);
	seccomp_notify_free(req, resp);
	return r < 0 && r != -ENOENT ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd p[1 + MAX_FDS];
	size_t n = 1;
	int lfd;

	if (argc != 3) {
		fprintf(stderr, "usage: cryo-test-seccomp-agent SOCKET OUTDIR\n");
		return 2;
	}
	outdir = argv[2];
	if (strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "cryo-test-seccomp-agent: socket path too long\n");
		return 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	unlink(argv[1]);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0)
		die("bind/listen");
	p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (;;) {
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (p[0].revents & POLLIN) {
			int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), nfd;

			if (conn < 0)
				die("accept");
			nfd = take_connection(conn);
			close(conn);
			if (nfd >= 0 && n < 1 + MAX_FDS)
				p[n++] = (struct pollfd){ .fd = nfd, .events = POLLIN };
		}
		for (size_t i = 1; i < n; i++) {
			if (!p[i].revents)
				continue;
			if ((p[i].revents & POLLIN) && answer(p[i].fd) == 0)
				continue;
			if (p[i].revents & (POLLHUP | POLLERR | POLLIN)) {
				/* every process under this filter is gone */
				close(p[i].fd);
				p[i--] = p[--n];
			}
		}
	}
}
