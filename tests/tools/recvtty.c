// SPDX-License-Identifier: GPL-2.0-only
/*
 * recvtty: the other end of --console-socket, for tests. Listens on a unix
 * socket, accepts one connection, receives the pty master (runc's protocol)
 * and relays it: pty output to stdout, stdin to the pty (unless --no-stdin),
 * until the container side closes the pty.
 *
 *	recvtty [--no-stdin] [--print-name] [--ready FILE] SOCKET
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "console.h"
#include "util.h"

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "no-stdin", no_argument, NULL, 'n' },
		{ "print-name", no_argument, NULL, 'p' },
		{ "ready", required_argument, NULL, 'r' },
		{ 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	bool use_stdin = true, print_name = false;
	const char *ready = NULL;
	char *name = NULL;
	int c, lfd, cfd, master;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			use_stdin = false;
			break;
		case 'p':
			print_name = true;
			break;
		case 'r':
			ready = optarg;
			break;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc || strlen(argv[optind]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: recvtty [--no-stdin] [--print-name] [--ready FILE] SOCKET\n");
		return 2;
	}
	memcpy(sa.sun_path, argv[optind], strlen(argv[optind]) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0) {
		perror("recvtty: listen");
		return 1;
	}
	if (ready) {
		FILE *f = fopen(ready, "we");

		if (!f || fclose(f) != 0) {
			perror("recvtty: ready file");
			return 1;
		}
	}
	cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0) {
		perror("recvtty: accept");
		return 1;
	}
	if (cryo_console_recv_fd(cfd, &master, &name, &err) < 0) {
		fprintf(stderr, "recvtty: %s\n", err.msg);
		return 1;
	}
	close(cfd);
	close(lfd);
	unlink(argv[optind]);
	if (print_name)
		fprintf(stderr, "recvtty: got %s\n", name);
	free(name);

	for (;;) {
		struct pollfd p[2] = { { .fd = master, .events = POLLIN }, { .fd = use_stdin ? 0 : -1, .events = POLLIN } };
		char buf[4096];
		ssize_t n;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("recvtty: poll");
			return 1;
		}
		if (p[0].revents) {
			n = read(master, buf, sizeof(buf));
			/* EIO: every slave fd is closed, the container side is gone */
			if (n <= 0)
				break;
			if (write_all(1, buf, (size_t)n) < 0)
				return 1;
		}
		if (p[1].revents) {
			n = read(0, buf, sizeof(buf));
			if (n <= 0)
				use_stdin = false;
			else if (write_all(master, buf, (size_t)n) < 0)
				break;
		}
	}
	close(master);
	return 0;
}
