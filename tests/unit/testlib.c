// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"
#include "util.h"

struct json_object *tl_json(const char *json)
{
	struct json_object *o = json_tokener_parse(json);

	if (!o)
		fail_msg("bad test json: %s", json);
	return o;
}

void tl_expect_error(const char *input, int r, int want, struct cryo_error *err, const char *msg)
{
	if (r != want)
		fail_msg("for %s\n got: %d (%s)\nwant: %d", input, r, err->msg ? err->msg : "no message", want);
	assert_non_null(err->msg);
	if (strcmp(err->msg, msg) != 0)
		fail_msg("for %s\n got: %s\nwant: %s", input, err->msg, msg);
	cryo_error_clear(err);
}

int tl_wait(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int tl_in_child(int (*fn)(void))
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn());
	return tl_wait(pid);
}

int tl_tmpdir(char *tmpl)
{
	int fd;

	assert_non_null(mkdtemp(tmpl));
	fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

int tl_rm_rf(const char *dir)
{
	return cryo_rm_rf_at(AT_FDCWD, dir);
}

char tl_dir[PATH_MAX];

int tl_group_setup_tmpdir(void **state)
{
	snprintf(tl_dir, PATH_MAX, "/tmp/cryo-unit-%s-XXXXXX", program_invocation_short_name);
	return mkdtemp(tl_dir) ? 0 : -1;
}

int tl_group_teardown_tmpdir(void **state)
{
	return tl_rm_rf(tl_dir);
}

void tl_flip_byte(int dirfd, const char *name, off_t off)
{
	int fd = openat(dirfd, name, O_RDWR | O_CLOEXEC);
	char c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x01;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}
