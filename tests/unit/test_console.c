// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "console.h"
#include "util.h"
#include "testlib.h"

static void test_send_recv(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int sp[2], pp[2], fd = -1;
	char *name = NULL, buf[8] = { 0 };

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	assert_int_equal(pipe2(pp, O_CLOEXEC), 0);
	assert_int_equal(cryo_console_send_fd(sp[0], pp[1], "/dev/pts/42", &err), 0);
	assert_int_equal(cryo_console_recv_fd(sp[1], &fd, &name, &err), 0);
	assert_string_equal(name, "/dev/pts/42");
	free(name);
	assert_true(fd >= 0 && fd != pp[1]);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	assert_int_equal(write(fd, "hi", 2), 2);
	assert_int_equal(read(pp[0], buf, sizeof(buf)), 2);
	assert_string_equal(buf, "hi");
	close(fd);

	/* an unnamed fd still arrives */
	assert_int_equal(cryo_console_send_fd(sp[0], pp[1], NULL, &err), 0);
	assert_int_equal(cryo_console_recv_fd(sp[1], &fd, &name, &err), 0);
	assert_string_equal(name, "");
	free(name);
	close(fd);

	/* a message without a descriptor, then a closed peer */
	assert_int_equal(write(sp[0], "hello", 5), 5);
	assert_int_equal(cryo_console_recv_fd(sp[1], &fd, NULL, &err), -EBADMSG);
	assert_string_equal(err.msg, "receive the console fd: message carries no file descriptor");
	cryo_error_clear(&err);
	close(sp[0]);
	assert_int_equal(cryo_console_recv_fd(sp[1], &fd, NULL, &err), -EBADMSG);
	assert_string_equal(err.msg, "receive the console fd: peer closed the socket");
	cryo_error_clear(&err);
	close(sp[1]);
	close(pp[0]);
	close(pp[1]);
}

static void test_connect_errors(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	char path[200];
	int fd;

	snprintf(path, sizeof(path), "%s/nobody-listens", tl_dir);
	assert_int_equal(cryo_console_connect(path, &fd, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "connect to console socket `"));
	assert_non_null(strstr(err.msg, "`: No such file or directory"));
	cryo_error_clear(&err);
	memset(path, 'a', 150);
	path[150] = '\0';
	assert_int_equal(cryo_console_connect(path, &fd, &err), -ENAMETOOLONG);
	assert_non_null(strstr(err.msg, "path longer than 107 bytes"));
	cryo_error_clear(&err);
	assert_int_equal(cryo_console_resize(0, 70000, 80, &err), -EINVAL);
	assert_string_equal(err.msg, "process.consoleSize: 70000x80 is larger than 65535x65535");
	cryo_error_clear(&err);
}

/*
 * The whole --console-socket path: recvtty listens, a "container init"
 * connects, sets up the pty as its controlling terminal and execs a shell
 * whose output recvtty relays.
 */
static void test_recvtty(void **state)
{
	const char *build = getenv("CRYO_BUILD");
	char tool[512], sock[256], ready[256], out[4096] = { 0 };
	int op[2];
	size_t len = 0;
	pid_t rpid, cpid;
	ssize_t n;

	if (!build)
		skip();
	snprintf(tool, sizeof(tool), "%s/tests/tools/recvtty", build);
	snprintf(sock, sizeof(sock), "%s/console.sock", tl_dir);
	snprintf(ready, sizeof(ready), "%s/ready", tl_dir);
	if (access(tool, X_OK) < 0 || access("/dev/ptmx", R_OK | W_OK) < 0)
		skip();
	assert_int_equal(pipe2(op, O_CLOEXEC), 0);
	rpid = fork();
	assert_true(rpid >= 0);
	if (rpid == 0) {
		if (dup2(op[1], 1) < 0)
			_exit(126);
		execl(tool, "recvtty", "--no-stdin", "--ready", ready, sock, (char *)NULL);
		_exit(127);
	}
	close(op[1]);
	for (int i = 0; i < 500 && access(ready, F_OK) < 0; i++)
		usleep(10000);
	assert_int_equal(access(ready, F_OK), 0);

	cpid = fork();
	assert_true(cpid >= 0);
	if (cpid == 0) {
		struct cryo_error err = CRYO_ERROR_INIT;
		int fd;

		if (cryo_console_connect(sock, &fd, &err) < 0 || cryo_console_setup(fd, geteuid() == 0 ? 4242 : 0, &err) < 0 ||
		    cryo_console_resize(0, 33, 111, &err) < 0) {
			fprintf(stderr, "console: %s\n", err.msg);
			_exit(1);
		}
		close(fd);
		/* tty_nr (field 7 of /proc/self/stat) is non-zero only with a controlling tty */
		execl("/bin/sh", "sh", "-c",
		      "tty; test -t 0 && test -t 2 && echo all-ttys; "
		      "set -- $(cat /proc/self/stat); test \"$7\" != 0 && echo has-ctty; "
		      "echo size=$(stty size); echo owner=$(stat -c %u $(tty))",
		      (char *)NULL);
		_exit(127);
	}
	assert_int_equal(tl_wait(cpid), 0);
	while (len + 1 < sizeof(out) && (n = read(op[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	close(op[0]);
	assert_int_equal(tl_wait(rpid), 0);
	if (!strstr(out, "/dev/pts/") || !strstr(out, "all-ttys") || !strstr(out, "has-ctty") ||
	    !strstr(out, "size=33 111") || (geteuid() == 0 && !strstr(out, "owner=4242")))
		fail_msg("recvtty relayed: %s", out);
	/* the pty's ONLCR turns \n into \r\n: proof the bytes went through a tty */
	assert_non_null(strstr(out, "all-ttys\r\n"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_recv),
		cmocka_unit_test(test_connect_errors),
		cmocka_unit_test(test_recvtty),
	};

	return cmocka_run_group_tests(tests, tl_group_setup_tmpdir, tl_group_teardown_tmpdir);
}
