// SPDX-License-Identifier: GPL-2.0-only
/*
 * The detached watchdog process: it reports readiness or failure, lives
 * in its own session and process group, keeps only the fds it was given,
 * has stdio on /dev/null and cwd `/`, and answers over its socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"
#include "watchdog.h"
#include "testlib.h"

struct fixture {
	char dir[64];
	int dirfd;
	int lfd;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/cryo-unit-watchdog.XXXXXX");
	f->dirfd = tl_tmpdir(f->dir);
	f->lfd = -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	closep(&f->lfd);
	close(f->dirfd);
	if (tl_rm_rf(f->dir) < 0)
		return -1;
	free(f);
	return 0;
}

/* Answers PING with PONG until QUIT; gone after 10 s whatever happens (a failed test sends no QUIT). */
static void echo_main(void *data, int ready_fd)
{
	struct fixture *f = data;
	int64_t until = cryo_now_ms() + 10000, left;

	cryo_watchdog_ready(ready_fd, 0, NULL);
	while ((left = until - cryo_now_ms()) > 0) {
		struct pollfd p = { .fd = f->lfd, .events = POLLIN };
		char req[64];
		int c;

		if (poll(&p, 1, (int)left) <= 0)
			continue;
		c = cryo_watchdog_accept(f->lfd, req, sizeof(req));
		if (c < 0)
			continue;
		if (strcmp(req, "QUIT") == 0) {
			cryo_watchdog_reply(c, "BYE");
			_exit(0);
		}
		cryo_watchdog_reply(c, strcmp(req, "PING") == 0 ? "PONG" : "WHAT");
	}
	_exit(0);
}

static void fail_main(void *data, int ready_fd)
{
	cryo_watchdog_ready(ready_fd, EOPNOTSUPP, "FIFREEZE: not supported here");
	_exit(1);
}

static void silent_main(void *data, int ready_fd)
{
	_exit(0);
}

static long stat_field(pid_t pid, int n)
{
	char path[64], *buf = NULL, *p;
	long v = -1;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cryo_read_file_at(AT_FDCWD, path, 4096, &buf, NULL) < 0)
		return -1;
	p = strrchr(buf, ')');
	/* field 3 starts after ") " */
	for (i = 3, p = p ? p + 2 : NULL; p && i < n; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		v = strtol(p, NULL, 10);
	free(buf);
	return v;
}

static int count_fds(pid_t pid)
{
	char cmd[96];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls /proc/%d/fd | wc -l", (int)pid);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (fscanf(p, "%d", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

static void test_detached(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct fixture *f = *state;
	char reply[64], path[64], link[PATH_MAX];
	int extra[2], keep[2];
	ssize_t n;
	pid_t pid = 0;
	int r;

	/* an fd that is not passed must not reach the watchdog (no O_CLOEXEC: fork keeps it) */
	assert_int_equal(pipe(extra), 0);
	assert_int_equal(cryo_watchdog_listen(f->dirfd, "wd.sock", &f->lfd, &err), 0);
	keep[0] = f->lfd;
	keep[1] = f->dirfd;
	r = cryo_watchdog_spawn(echo_main, f, keep, 2, 5000, &pid, &err);
	assert_int_equal(r, 0);
	assert_true(pid > 0);
	close(extra[0]);
	close(extra[1]);

	assert_int_equal(cryo_watchdog_call(f->dirfd, "wd.sock", "PING", reply, sizeof(reply), 5000, &err), 0);
	assert_string_equal(reply, "PONG");

	/* its own session and process group: kill -9 of ours does not reach it */
	/* not a session leader (that one exited): it can never acquire a terminal */
	assert_true(stat_field(pid, 6) != pid);
	assert_int_equal(stat_field(pid, 5), stat_field(pid, 6)); /* process group of the new session */
	assert_true(stat_field(pid, 5) != (long)getpgrp());
	assert_true(stat_field(pid, 6) != (long)getsid(0));
	assert_true(stat_field(pid, 4) != (long)getpid());   /* reparented */

	/* stdio on /dev/null, cwd `/`, and only the fds it was given */
	snprintf(path, sizeof(path), "/proc/%d/fd/1", (int)pid);
	n = readlink(path, link, sizeof(link) - 1);
	assert_true(n > 0);
	link[n] = '\0';
	assert_string_equal(link, "/dev/null");
	snprintf(path, sizeof(path), "/proc/%d/cwd", (int)pid);
	n = readlink(path, link, sizeof(link) - 1);
	assert_true(n > 0);
	link[n] = '\0';
	assert_string_equal(link, "/");
	/*
	 * The PING's connection may still be open for a moment after its
	 * reply reached us (the reply is written before the close): wait up
	 * to 2 s for it to go, then count. A leaked fd stays and fails.
	 */
	for (r = 0; r < 200 && count_fds(pid) > 3 + 2; r++)
		usleep(10000);
	assert_int_equal(count_fds(pid), 3 + 2);

	assert_int_equal(cryo_watchdog_call(f->dirfd, "wd.sock", "QUIT", reply, sizeof(reply), 5000, &err), 0);
	assert_string_equal(reply, "BYE");
	cryo_error_clear(&err);
}

static void test_failure_is_reported(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	pid_t pid = 0;
	int r;

	r = cryo_watchdog_spawn(fail_main, NULL, NULL, 0, 5000, &pid, &err);
	assert_int_equal(r, -EOPNOTSUPP);
	assert_string_equal(err.msg, "FIFREEZE: not supported here");
	assert_int_equal(pid, 0);
	cryo_error_clear(&err);

	r = cryo_watchdog_spawn(silent_main, NULL, NULL, 0, 5000, &pid, &err);
	assert_int_equal(r, -EIO);
	assert_non_null(strstr(err.msg, "exited before it was ready"));
	cryo_error_clear(&err);
}

static void test_no_watchdog(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct fixture *f = *state;
	char reply[64];
	int r;

	r = cryo_watchdog_call(f->dirfd, "none.sock", "PING", reply, sizeof(reply), 1000, &err);
	assert_int_equal(r, -ENOENT);
	cryo_error_clear(&err);

	/* a socket nobody listens on any more */
	assert_int_equal(cryo_watchdog_listen(f->dirfd, "dead.sock", &f->lfd, &err), 0);
	close(f->lfd);
	f->lfd = -1;
	r = cryo_watchdog_call(f->dirfd, "dead.sock", "PING", reply, sizeof(reply), 1000, &err);
	assert_int_equal(r, -ECONNREFUSED);
	cryo_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_detached, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_watchdog, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
