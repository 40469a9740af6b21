// SPDX-License-Identifier: GPL-2.0-only
/* Which mount holds a path, on this host's real /proc/self/mountinfo. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mountinfo.h"
#include "util.h"
#include "testlib.h"

static void test_root_and_proc(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_mount root = { 0 }, proc = { 0 }, again = { 0 };
	struct stat st;

	assert_int_equal(cryo_mountinfo_find("/", &root, &err), 0);
	assert_string_equal(root.mountpoint, "/");
	assert_int_equal(stat("/", &st), 0);
	assert_true(root.dev == st.st_dev);
	assert_true(root.mnt_id > 0);

	assert_int_equal(cryo_mountinfo_find("/proc/self", &proc, &err), 0);
	assert_string_equal(proc.fstype, "proc");
	assert_string_equal(proc.mountpoint, "/proc");
	assert_false(cryo_mount_same_fs(&root, &proc));

	assert_int_equal(cryo_mountinfo_find("/", &again, &err), 0);
	assert_true(cryo_mount_same_fs(&root, &again));

	cryo_mount_done(&root);
	cryo_mount_done(&proc);
	cryo_mount_done(&again);
	cryo_mount_done(&again); /* twice is fine */
}

static void test_missing(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_mount m = { 0 };

	assert_int_equal(cryo_mountinfo_find("/nonexistent/cryo/path", &m, &err), -ENOENT);
	assert_non_null(err.msg);
	cryo_error_clear(&err);
}

/* mountinfo escapes spaces as \040; a mount point with one must come back intact */
static void test_escaped_mountpoint(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_mount m = { 0 };
	char dir[64], mp[96], sub[128];

	if (geteuid() != 0)
		skip();
	snprintf(dir, sizeof(dir), "/tmp/cryo-unit-mountinfo.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(mp, sizeof(mp), "%s/a b\\c", dir);
	assert_int_equal(mkdir(mp, 0700), 0);
	if (mount("cryo-unit-mountinfo", mp, "tmpfs", 0, "size=1m") < 0) {
		rmdir(mp);
		rmdir(dir);
		skip();
	}
	snprintf(sub, sizeof(sub), "%s/sub", mp);
	assert_int_equal(mkdir(sub, 0700), 0);

	assert_int_equal(cryo_mountinfo_find(sub, &m, &err), 0);
	assert_string_equal(m.mountpoint, mp);
	assert_string_equal(m.fstype, "tmpfs");
	assert_string_equal(m.source, "cryo-unit-mountinfo");
	cryo_mount_done(&m);

	assert_int_equal(umount(mp), 0);
	assert_int_equal(rmdir(mp), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_and_proc),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_escaped_mountpoint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
