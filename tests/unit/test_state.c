// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "state.h"
#include "util.h"
#include "testlib.h"

static void test_roundtrip(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_state *st = NULL, *back = NULL;
	char path[256];
	struct stat sb;

	assert_int_equal(cryo_state_create_dir(tl_dir, "web", &err), 0);
	assert_int_equal(cryo_state_create_dir(tl_dir, "web", &err), -EEXIST);
	assert_string_equal(err.msg, "container `web` already exists");
	cryo_error_clear(&err);

	snprintf(path, sizeof(path), "%s/web", tl_dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0700);

	assert_int_equal(cryo_state_load(tl_dir, "web", &back, &err), -ENOENT);
	cryo_error_clear(&err);

	assert_int_equal(cryo_state_new("web", &st, &err), 0);
	st->bundle = strdup("/b");
	st->rootfs = strdup("/b/rootfs");
	st->cgroup_v2 = strdup("/sys/fs/cgroup/unified/cryo/web");
	st->freezer_backend = strdup("v2");
	st->pid = 4242;
	st->pid_start_time = 99;
	st->status = CRYO_STATUS_PAUSED;
	st->created = 1700000000;
	assert_int_equal(cryo_state_save(tl_dir, st, &err), 0);

	assert_int_equal(cryo_state_load(tl_dir, "web", &back, &err), 0);
	assert_string_equal(back->bundle, "/b");
	assert_string_equal(back->rootfs, "/b/rootfs");
	assert_string_equal(back->cgroup_v2, "/sys/fs/cgroup/unified/cryo/web");
	assert_null(back->cgroup_v1_freezer);
	assert_string_equal(back->freezer_backend, "v2");
	assert_int_equal(back->pid, 4242);
	assert_int_equal(back->pid_start_time, 99);
	assert_int_equal(back->status, CRYO_STATUS_PAUSED);
	assert_int_equal(back->created, 1700000000);

	snprintf(path, sizeof(path), "%s/web/state.json", tl_dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);

	/* the pid is not ours with that start time: refresh says stopped */
	cryo_state_refresh(back);
	assert_int_equal(back->status, CRYO_STATUS_STOPPED);

	cryo_state_free(st);
	cryo_state_free(back);
}

static void test_corrupt(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_state *st = NULL;
	char path[256];
	FILE *f;

	assert_int_equal(cryo_state_create_dir(tl_dir, "bad", &err), 0);
	snprintf(path, sizeof(path), "%s/bad/state.json", tl_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"status\": \"melting\"}", f);
	fclose(f);
	assert_int_equal(cryo_state_load(tl_dir, "bad", &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "unknown status `melting`"));
	cryo_error_clear(&err);

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("not json", f);
	fclose(f);
	assert_int_equal(cryo_state_load(tl_dir, "bad", &st, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "is not a JSON object"));
	cryo_error_clear(&err);

	assert_int_equal(cryo_state_load(tl_dir, "../etc", &st, &err), -EINVAL);
	cryo_error_clear(&err);

	assert_int_equal(cryo_state_remove_dir(tl_dir, "bad", &err), 0);
	assert_int_equal(cryo_state_load(tl_dir, "bad", &st, &err), -ENOENT);
	cryo_error_clear(&err);
}

static void test_lock(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int fd = -1, fd2 = -1;
	int64_t t0;
	pid_t pid;

	assert_int_equal(cryo_state_create_dir(tl_dir, "locked", &err), 0);
	assert_int_equal(cryo_state_lock(tl_dir, "locked", 0, &fd, &err), 0);

	/* another process cannot take it while we hold it */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cryo_error e = CRYO_ERROR_INIT;
		int cfd;

		t0 = cryo_now_ms();
		if (cryo_state_lock(tl_dir, "locked", 100, &cfd, &e) != -EBUSY)
			_exit(1);
		if (cryo_now_ms() - t0 < 90)
			_exit(2);
		_exit(strstr(e.msg, "locked by another cryo command") ? 0 : 3);
	}
	assert_int_equal(tl_wait(pid), 0);

	close(fd);
	assert_int_equal(cryo_state_lock(tl_dir, "locked", 0, &fd2, &err), 0);
	close(fd2);
}

static void test_list_and_status(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_state *st = NULL;
	enum cryo_status s;
	char **ids = NULL, path[256];
	size_t n;

	/*
	 * Not containers, though their names are valid ids: the hold journal
	 * (`holds/`, made by a held freeze) and `locked`, whose state dir was
	 * made (test_lock) but never got a state file.
	 */
	snprintf(path, sizeof(path), "%s/holds", tl_dir);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(cryo_state_list(tl_dir, &ids, &err), 0);
	for (n = 0; ids[n]; n++)
		;
	assert_int_equal(n, 1);
	assert_string_equal(ids[0], "web");
	cryo_strv_free(ids);

	assert_int_equal(cryo_state_new("locked", &st, &err), 0);
	assert_int_equal(cryo_state_save(tl_dir, st, &err), 0);
	cryo_state_free(st);
	assert_int_equal(cryo_state_list(tl_dir, &ids, &err), 0);
	for (n = 0; ids[n]; n++)
		;
	assert_int_equal(n, 2);
	assert_string_equal(ids[0], "locked");
	assert_string_equal(ids[1], "web");
	cryo_strv_free(ids);

	assert_int_equal(cryo_status_from_string("paused", &s), 0);
	assert_int_equal(s, CRYO_STATUS_PAUSED);
	assert_int_equal(cryo_status_from_string("PAUSED", &s), -EINVAL);
	assert_int_equal(cryo_status_from_string(NULL, &s), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_list_and_status),
	};

	return cmocka_run_group_tests(tests, tl_group_setup_tmpdir, tl_group_teardown_tmpdir);
}
