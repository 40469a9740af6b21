// SPDX-License-Identifier: GPL-2.0-only
/*
 * A self-checking workload for checkpoint/restore (CRIU's zdtm idea).
 *
 *   cryo-test-counter STATUS [MEM_MIB] [RECORDS|-] [[ADDR:]TCP_PORT|-] [LISTEN_PORT]
 *
 * It becomes a session leader with a tree: a child that sends an
 * increasing counter over a pipe and over a unix socket pair, and a
 * zombie child it never reaps. The parent checks every value arrives in
 * order on both channels, that MEM_MIB of touched memory still holds the
 * pattern it wrote, that its zombie is still there, and that the file
 * STATUS (kept open, written at offset 0) is still the file it opened.
 * With RECORDS (a path), it also appends numbered fixed-size records and
 * keeps the count in memory, so a restore can compare disk and memory.
 * With TCP_PORT, it keeps a TCP connection to an echo peer on ADDR
 * (an IPv4 address, 127.0.0.1 if not given; outside the container:
 * --tcp-established) and checks a round trip of the counter every 20 ms.
 * With LISTEN_PORT, it listens on that TCP port (all addresses) and, every
 * 20 ms, answers each connection that came meanwhile with its status line
 * and closes it: a client outside can follow the count (a connection is
 * never kept open, so the container can be checkpointed without
 * --tcp-established, as Kubernetes does).
 * Every 20 ms it rewrites STATUS as "<count> ok <records> <tcp round
 * trips>"; on the first broken check it writes "FAIL <why>" and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>

#define RECORD_LEN 32

static int status_fd = -1;
static struct stat status_st;
static const char *status_path;

static int listen_fd = -1;

/* Every connection waiting on the listener gets the status line, then is closed. */
static void answer(const char *line, size_t len)
{
	int c;

	if (listen_fd < 0)
		return;
	while ((c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		(void)send(c, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(c);
	}
}

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (ftruncate(status_fd, 0) < 0 || pwrite(status_fd, buf, (size_t)n, 0) != n)
		_exit(3);
	answer(buf, (size_t)n);
}

static void fail(const char *why, uint64_t a, uint64_t b)
{
	report("FAIL %s (%llu vs %llu)", why, (unsigned long long)a, (unsigned long long)b);
	_exit(1);
}

static void read_exact(int fd, void *buf, size_t len, const char *what)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fail(what, (uint64_t)n, (uint64_t)errno);
		p += n;
		len -= (size_t)n;
	}
}

static void sender(int pipe_w, int sock)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	uint64_t n = 0;

	for (;;) {
		n++;
		if (write(pipe_w, &n, sizeof(n)) != sizeof(n) || write(sock, &n, sizeof(n)) != sizeof(n))
			_exit(2);
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	uint64_t expect = 1, mem_mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 4, records = 0, i;
	const char *records_path = argc > 3 && strcmp(argv[3], "-") != 0 ? argv[3] : NULL;
	const char *tcp_arg = argc > 4 && strcmp(argv[4], "-") != 0 ? argv[4] : NULL, *colon;
	unsigned long listen_port = argc > 5 ? strtoul(argv[5], NULL, 10) : 0;
	unsigned long tcp_port = 0;
	struct in_addr tcp_addr = { .s_addr = htonl(INADDR_LOOPBACK) };
	uint64_t round_trips = 0;
	int pipefd[2], sp[2], rec_fd = -1, tcp = -1, devnull;
	size_t mem_len;
	uint64_t *mem;
	pid_t child, zombie;
	siginfo_t si;
	struct stat st;
	int64_t last = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s STATUS [MEM_MIB] [RECORDS|-] [[ADDR:]TCP_PORT|-] [LISTEN_PORT]\n", argv[0]);
		return 2;
	}
	if (tcp_arg) {
		char host[INET_ADDRSTRLEN];

		colon = strrchr(tcp_arg, ':');
		if (colon) {
			if ((size_t)(colon - tcp_arg) >= sizeof(host))
				return 2;
			memcpy(host, tcp_arg, (size_t)(colon - tcp_arg));
			host[colon - tcp_arg] = '\0';
			if (inet_pton(AF_INET, host, &tcp_addr) != 1)
				return 2;
			tcp_arg = colon + 1;
		}
		tcp_port = strtoul(tcp_arg, NULL, 10);
	}
	status_path = argv[1];
	status_fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (status_fd < 0 || fstat(status_fd, &status_st) < 0)
		return 2;
	if (records_path) {
		rec_fd = open(records_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (rec_fd < 0)
			return 2;
	}
	if (tcp_port > 0) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)tcp_port) };

		a.sin_addr = tcp_addr;
		/* the peer may come up with the container's network: retry for 5 s */
		for (i = 0;; i++) {
			tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (tcp < 0)
				return 2;
			if (connect(tcp, (struct sockaddr *)&a, sizeof(a)) == 0)
				break;
			close(tcp);
			if (i == 100)
				return 2;
			usleep(50000);
		}
	}
	if (listen_port > 0) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port) };
		int one = 1;

		a.sin_addr.s_addr = htonl(INADDR_ANY);
		listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (listen_fd < 0 || setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
		    bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(listen_fd, 16) < 0)
			return 2;
	}
	/* no terminal, own session: CRIU needs no --shell-job */
	devnull = open("/dev/null", O_RDWR);
	if (devnull < 0)
		return 2;
	dup2(devnull, 0);
	dup2(devnull, 1);
	dup2(devnull, 2);
	close(devnull);
	setsid();

	mem_len = (size_t)mem_mib << 20;
	mem = malloc(mem_len);
	if (!mem)
		return 2;
	for (i = 0; i < mem_len / sizeof(*mem); i++)
		mem[i] = i * 0x9e3779b97f4a7c15ULL;

	zombie = fork();
	if (zombie == 0)
		_exit(7);
	/* wait until it is a zombie: the loop below checks it never stops being one */
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT) < 0)
		return 2;
	if (pipe(pipefd) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
		return 2;
	child = fork();
	if (child == 0) {
		close(pipefd[0]);
		close(sp[0]);
		sender(pipefd[1], sp[1]);
	}
	close(pipefd[1]);
	close(sp[1]);

	for (;;) {
		uint64_t a, b;
		struct timespec now;
		int64_t ms;

		read_exact(pipefd[0], &a, sizeof(a), "pipe read");
		read_exact(sp[0], &b, sizeof(b), "socket read");
		if (a != expect)
			fail("pipe value out of order", a, expect);
		if (b != expect)
			fail("socket value out of order", b, expect);
		expect++;
		if (records_path) {
			char rec[RECORD_LEN + 1];

			snprintf(rec, sizeof(rec), "record %020llu\n", (unsigned long long)(records + 1));
			if (write(rec_fd, rec, RECORD_LEN) != RECORD_LEN)
				fail("record write", records, 0);
			records++;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
		if (ms - last < 20)
			continue;
		last = ms;
		/* the slow checks, every 20 ms */
		for (i = 0; i < mem_len / sizeof(*mem); i += 512)
			if (mem[i] != i * 0x9e3779b97f4a7c15ULL)
				fail("memory pattern", i, mem[i]);
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid != zombie ||
		    si.si_status != 7)
			fail("zombie child lost", (uint64_t)zombie, (uint64_t)si.si_pid);
		if (fstat(status_fd, &st) < 0)
			fail("status file gone", 0, 0);
		/*
		 * A rootfs moved to another filesystem (migration with a tar
		 * snapshot) gives every file a new inode: then the open file
		 * must still be the one at its path.
		 */
		if (st.st_ino != status_st.st_ino && getenv("COUNTER_NEW_INODES")) {
			struct stat ps;

			if (stat(status_path, &ps) < 0 || ps.st_ino != st.st_ino || ps.st_dev != st.st_dev)
				fail("status file is not the one at its path", st.st_ino, 0);
			status_st = st;
		}
		if (st.st_ino != status_st.st_ino)
			fail("status file changed", st.st_ino, status_st.st_ino);
		if (rec_fd >= 0) {
			if (fstat(rec_fd, &st) < 0 || (uint64_t)st.st_size != records * RECORD_LEN)
				fail("records on disk vs memory", (uint64_t)st.st_size / RECORD_LEN, records);
		}
		if (tcp >= 0) {
			uint64_t back = 0;

			if (write(tcp, &expect, sizeof(expect)) != sizeof(expect))
				fail("tcp write", (uint64_t)errno, 0);
			read_exact(tcp, &back, sizeof(back), "tcp read");
			if (back != expect)
				fail("tcp echo", back, expect);
			round_trips++;
		}
		report("%llu ok %llu %llu", (unsigned long long)(expect - 1), (unsigned long long)records,
		       (unsigned long long)round_trips);
	}
}
