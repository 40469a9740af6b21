// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "error.h"
#include "proc.h"
#include "util.h"
#include "testlib.h"

static void test_error_chain(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int r;

	r = cryo_error_set(&err, ENOENT, "open `%s`", "/x/cgroup.freeze");
	assert_int_equal(r, -ENOENT);
	assert_string_equal(err.msg, "open `/x/cgroup.freeze`: No such file or directory");
	r = cryo_error_prefix(&err, "freeze cgroup");
	assert_int_equal(r, -ENOENT);
	r = cryo_error_prefix(&err, "checkpoint `%s`", "web");
	assert_string_equal(err.msg, "checkpoint `web`: freeze cgroup: open `/x/cgroup.freeze`: No such file or directory");
	assert_int_equal(err.status, ENOENT);
	cryo_error_clear(&err);
	assert_null(err.msg);
	assert_int_equal(err.status, 0);

	r = cryo_error_setx(&err, EBUSY, "3 tasks did not freeze");
	assert_int_equal(r, -EBUSY);
	assert_string_equal(err.msg, "3 tasks did not freeze");
	cryo_error_clear(&err);

	/* a NULL err still reports the errno */
	assert_int_equal(cryo_error_set(NULL, EPERM, "x"), -EPERM);
	/* negative errnos are accepted too */
	assert_int_equal(cryo_error_set(&err, -EINVAL, "x"), -EINVAL);
	cryo_error_clear(&err);
}

static void test_validate_id(void **state)
{
	static const char *const good[] = { "a", "web", "web-1", "A.b_c", "0" };
	static const char *const bad[] = { "", ".", "..", "a/b", "../x", "-a", ".a", "a b", "a\n" };
	char longid[200];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(good); i++)
		assert_int_equal(cryo_validate_id(good[i], NULL), 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(cryo_validate_id(bad[i], NULL), -EINVAL);

	memset(longid, 'a', sizeof(longid));
	longid[128] = '\0';
	assert_int_equal(cryo_validate_id(longid, NULL), 0);
	longid[128] = 'a';
	longid[129] = '\0';
	assert_int_equal(cryo_validate_id(longid, NULL), -EINVAL);
}

static void test_parse_u64(void **state)
{
	uint64_t v = 0;

	assert_int_equal(cryo_parse_u64("42", 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(cryo_parse_u64("101", 100, &v), -ERANGE);
	assert_int_equal(cryo_parse_u64("-1", 100, &v), -EINVAL);
	assert_int_equal(cryo_parse_u64("1x", 100, &v), -EINVAL);
	assert_int_equal(cryo_parse_u64("", 100, &v), -EINVAL);
	assert_int_equal(cryo_parse_u64("99999999999999999999999", UINT64_MAX, &v), -ERANGE);
}

static void test_fault(void **state)
{
	setenv("CRYO_FAULT", "freeze,criu-dump", 1);
	assert_true(cryo_fault("freeze"));
	assert_true(cryo_fault("criu-dump"));
	assert_false(cryo_fault("criu"));
	assert_false(cryo_fault("fsfreeze"));
	unsetenv("CRYO_FAULT");
	assert_false(cryo_fault("freeze"));
}

/* NAME, under dfd, holds WANT */
static void assert_file_at(int dfd, const char *name, const char *want)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	assert_int_equal(cryo_read_file_at(dfd, name, 1024, &buf, &len), 0);
	assert_string_equal(buf, want);
}

static void test_files(void **state)
{
	char dir[] = "/tmp/cryo-unit-XXXXXX";
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int dfd = -1;
	char sub[256];
	struct stat st;
	struct dirent *de;
	size_t len = 0;
	int n = 0;
	DIR *d;

	dfd = tl_tmpdir(dir);

	assert_int_equal(cryo_write_new_file_at(dfd, "f", "hello", 5, 0600), 0);
	assert_int_equal(fstatat(dfd, "f", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(cryo_read_file_at(dfd, "f", 1024, &buf, &len), 0);
	assert_int_equal(len, 5);
	assert_string_equal(buf, "hello");
	free(TAKE_PTR(buf));
	/* bounded reads refuse larger files */
	assert_int_equal(cryo_read_file_at(dfd, "f", 2, &buf, &len), -EFBIG);
	assert_int_equal(cryo_write_file_at(dfd, "f", "bye"), 0);
	assert_file_at(dfd, "f", "byelo");
	assert_int_equal(cryo_write_file_at(dfd, "missing", "x"), -ENOENT);
	assert_int_equal(cryo_read_file_at(dfd, "missing", 10, &buf, &len), -ENOENT);

	snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
	assert_int_equal(cryo_mkdir_p(sub, 0700), 0);
	assert_int_equal(stat(sub, &st), 0);
	assert_true(S_ISDIR(st.st_mode));

	/* opendir relative to a dir fd: never through a symlink, never a file; "." leaves dfd alone */
	assert_int_equal(symlinkat("a", dfd, "link"), 0);
	errno = 0;
	assert_null(cryo_opendir_at(dfd, "link"));
	assert_true(errno == ELOOP || errno == ENOTDIR);
	errno = 0;
	assert_null(cryo_opendir_at(dfd, "f"));
	assert_int_equal(errno, ENOTDIR);
	d = cryo_opendir_at(dfd, ".");
	assert_non_null(d);
	while ((de = readdir(d)))
		n += strcmp(de->d_name, "a") == 0 || strcmp(de->d_name, "f") == 0 || strcmp(de->d_name, "link") == 0;
	assert_int_equal(n, 3);
	assert_true(fcntl(dirfd(d), F_GETFD) & FD_CLOEXEC);
	closedir(d);
	assert_true(fcntl(dfd, F_GETFD) >= 0);

	assert_int_equal(unlinkat(dfd, "f", 0), 0);
	assert_int_equal(tl_rm_rf(dir), 0);
}

static void test_atomic_write(void **state)
{
	char dir[] = "/tmp/cryo-unit-XXXXXX";
	_cleanup_close_ int dfd = -1;
	char path[300];
	struct stat st;

	dfd = tl_tmpdir(dir);
	/* new, then replaced; the mode is the one asked for; no temp file stays */
	assert_int_equal(cryo_write_file_atomic_at(dfd, "f.json", "one", 3, 0600, true), 0);
	assert_int_equal(cryo_write_file_atomic_at(dfd, "f.json", "second", 6, 0640, false), 0);
	assert_file_at(dfd, "f.json", "second");
	assert_int_equal(fstatat(dfd, "f.json", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(fstatat(dfd, ".f.json.tmp", &st, AT_SYMLINK_NOFOLLOW), -1);
	/* a path with directories, relative to dirfd */
	assert_int_equal(mkdirat(dfd, "d", 0700), 0);
	assert_int_equal(cryo_write_file_atomic_at(dfd, "d/g", "x", 1, 0644, false), 0);
	assert_int_equal(fstatat(dfd, "d/g", &st, 0), 0);
	/* a link planted at the temp name is never written through: it is replaced */
	assert_int_equal(symlinkat("victim", dfd, ".h.tmp"), 0);
	assert_int_equal(cryo_write_file_atomic_at(dfd, "h", "x", 1, 0644, false), 0);
	assert_int_equal(fstatat(dfd, "victim", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(dfd, "h", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	/* nor through a hard link to another file: that file keeps its content */
	assert_int_equal(cryo_write_file_atomic_at(dfd, "victim2", "keep", 4, 0600, false), 0);
	assert_int_equal(linkat(dfd, "victim2", dfd, ".k.tmp", 0), 0);
	assert_int_equal(cryo_write_file_atomic_at(dfd, "k", "new", 3, 0644, false), 0);
	assert_file_at(dfd, "victim2", "keep");
	assert_int_equal(cryo_write_file_atomic_at(dfd, "d/", "x", 1, 0644, false), -EINVAL);

	/* the pid file: the decimal pid, no newline (runc's format) */
	snprintf(path, sizeof(path), "%s/pid", dir);
	assert_int_equal(cryo_write_pid_file(path, 4242, NULL), 0);
	assert_file_at(dfd, "pid", "4242");
	assert_int_equal(tl_rm_rf(dir), 0);
}

static void test_kill_reap(void **state)
{
	pid_t pid = fork(), copy;

	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	copy = pid;
	{
		_cleanup_kill_reap_ pid_t scoped = pid;
		_cleanup_kill_reap_ pid_t none = -1;

		(void)scoped;
		(void)none;
	}
	/* killed and reaped: no such child any more */
	assert_int_equal(waitpid(copy, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	/* TAKE_PID hands it on */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(3);
	{
		_cleanup_kill_reap_ pid_t scoped = pid;

		copy = TAKE_PID(scoped);
		assert_int_equal(scoped, -1);
	}
	assert_int_equal(tl_wait(copy), 3);
}

static void test_warn_clear(void **state)
{
	struct cryo_error e = CRYO_ERROR_INIT;

	cryo_error_warn_clear(&e, "nothing to say");
	assert_int_equal(cryo_error_set(&e, ENOENT, "inner"), -ENOENT);
	cryo_error_warn_clear(&e, "outer %d", 1);
	assert_null(e.msg);
	assert_int_equal(e.status, 0);
	cryo_error_warn_clear(NULL, "null is fine");
}

/*
 * Our own cgroups from /proc/self/cgroup, against the same lines read
 * here: one controller or a joined list finds its hierarchy, part of a
 * name does not, cgroup2 is the "0::" line.
 */
static void test_proc_cgroup_rel(void **state)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	int checked = 0;

	(void)state;
	assert_non_null(f);
	while (getline(&line, &cap, f) > 0) {
		char *ctrls = strchr(line, ':'), *path = ctrls ? strchr(ctrls + 1, ':') : NULL, *one;
		_cleanup_free_ char *got = NULL, *got1 = NULL;

		if (!path || strncmp(ctrls + 1, "name=", 5) == 0)
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		assert_int_equal(cryo_proc_cgroup_rel(0, ctrls + 1, &got), 0);
		assert_string_equal(got, path);
		one = strchr(ctrls + 1, ',');
		if (one) {
			assert_int_equal(cryo_proc_cgroup_rel(0, one + 1, &got1), 0);
			assert_string_equal(got1, path);
		}
		checked++;
	}
	assert_true(checked > 0);
	{
		_cleanup_free_ char *x = NULL;

		assert_int_equal(cryo_proc_cgroup_rel(0, "cpuac", &x), -ENOENT);
		assert_null(x);
		assert_int_equal(cryo_proc_cgroup_rel(999999999, "", &x), -ESRCH);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_chain),
		cmocka_unit_test(test_validate_id),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_fault),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_atomic_write),
		cmocka_unit_test(test_kill_reap),
		cmocka_unit_test(test_warn_clear),
		cmocka_unit_test(test_proc_cgroup_rel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
