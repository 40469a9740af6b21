// SPDX-License-Identifier: GPL-2.0-only
/*
 * The raw kernel operation the freeze benchmark compares against: freeze
 * or thaw one cgroup and wait until the kernel says it is done, with
 * nothing else around it (no state checks, no error text, no libraries).
 *   cgroup2: write cgroup.freeze, poll(POLLPRI) cgroup.events for `frozen`
 *   v1:      write freezer.state, re-read it until it says so (no event)
 * Usage: bench_rawfreeze CGROUP_DIR freeze|thaw [--print-us]
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int write_at(int dfd, const char *file, const char *v)
{
	int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, v, strlen(v));
	close(fd);
	return n < 0 ? -1 : 0;
}

static int v2(int dfd, int freeze)
{
	int fd = openat(dfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	char buf[256];

	if (fd < 0 || write_at(dfd, "cgroup.freeze", freeze ? "1" : "0") < 0)
		return -1;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLPRI };
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		char *k;

		if (n < 0)
			return -1;
		buf[n] = '\0';
		k = strstr(buf, "frozen ");
		if (k && (k[7] == '1') == !!freeze)
			break;
		if (poll(&p, 1, 10000) <= 0)
			return -1;
	}
	close(fd);
	return 0;
}

static int v1(int dfd, int freeze)
{
	const char *want = freeze ? "FROZEN" : "THAWED";
	char buf[64];

	if (write_at(dfd, "freezer.state", want) < 0)
		return -1;
	for (;;) {
		int fd = openat(dfd, "freezer.state", O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

		if (fd >= 0)
			close(fd);
		if (n < 0)
			return -1;
		buf[n] = '\0';
		if (strncmp(buf, want, strlen(want)) == 0)
			return 0;
		usleep(1000);
	}
}

int main(int argc, char **argv)
{
	long long t0 = now_us();
	int dfd, freeze, r;

	if (argc < 3)
		return 2;
	dfd = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		perror(argv[1]);
		return 1;
	}
	freeze = strcmp(argv[2], "freeze") == 0;
	r = faccessat(dfd, "cgroup.freeze", F_OK, 0) == 0 ? v2(dfd, freeze) : v1(dfd, freeze);
	if (r < 0) {
		perror("freeze");
		return 1;
	}
	if (argc > 3)
		printf("%lld\n", now_us() - t0);
	return 0;
}
