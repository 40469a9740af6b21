// SPDX-License-Identifier: GPL-2.0-only
/*
 * A tar snapshot extracted ahead of its restore (receive, while the final
 * dump still comes): the restore of the same file takes the extracted dir
 * instead of extracting; one of another file, a failed one or a cancelled
 * one is removed and the restore extracts as it would have, refusing a
 * hostile archive in the same words; a cancelled extraction leaves no
 * child and no dir behind.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snapshot.h"
#include "util.h"
#include "testlib.h"

struct fixture {
	char dir[64];
	int dfd;      /* the test dir: the image files */
	int bfd;      /* <dir>/bundle: the bundle, with rootfs/ in it */
	char rootfs[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	if (geteuid() != 0) {
		print_message("skip: the extraction chroot()s (root only)\n");
		free(f);
		exit(77);
	}
	strcpy(f->dir, "/tmp/cryo-unit-snapshot.XXXXXX");
	f->dfd = tl_tmpdir(f->dir);
	assert_int_equal(mkdirat(f->dfd, "bundle", 0700), 0);
	f->bfd = openat(f->dfd, "bundle", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->bfd >= 0);
	assert_int_equal(mkdirat(f->bfd, "rootfs", 0755), 0);
	snprintf(f->rootfs, sizeof(f->rootfs), "%s/bundle/rootfs", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	close(f->bfd);
	close(f->dfd);
	assert_int_equal(tl_rm_rf(f->dir), 0);
	free(f);
	return 0;
}

/* A tar `name` in dfd with the entries: name, content (NULL = a dir); big: one file of that many bytes more. */
static void make_tar(int dfd, const char *name, const char *const *entries, size_t big)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e;
	int fd;

	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_non_null(a);
	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (; entries[0]; entries += 2) {
		size_t len = entries[1] ? strlen(entries[1]) : 0;

		e = archive_entry_new();
		archive_entry_set_pathname(e, entries[0]);
		archive_entry_set_filetype(e, entries[1] ? AE_IFREG : AE_IFDIR);
		archive_entry_set_perm(e, entries[1] ? 0644 : 0755);
		archive_entry_set_size(e, (la_int64_t)len);
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		if (len)
			assert_int_equal(archive_write_data(a, entries[1], len), (la_ssize_t)len);
		archive_entry_free(e);
	}
	if (big) {
		static char chunk[1 << 16];
		size_t left = big;

		e = archive_entry_new();
		archive_entry_set_pathname(e, "big");
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_size(e, (la_int64_t)big);
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		while (left) {
			size_t n = left < sizeof(chunk) ? left : sizeof(chunk);

			assert_int_equal(archive_write_data(a, chunk, n), (la_ssize_t)n);
			left -= n;
		}
		archive_entry_free(e);
	}
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	close(fd);
}

static const char *const GOOD[] = { "etc", NULL, "etc/hostname", "ahead\n", "counter", "41\n", NULL };
static const char *const EVIL[] = { "ok", "1\n", "../escape", "out\n", NULL };

static char *read_at(int dfd, const char *path)
{
	static char buf[256];
	int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void snap_init(Cryo__RootfsSnapshot *s, char *name)
{
	cryo__rootfs_snapshot__init(s);
	s->kind = CRYO__ROOTFS_SNAPSHOT__KIND__TAR;
	s->name = name;
}

static void restore(struct fixture *f, Cryo__RootfsSnapshot *s, struct cryo_snapshot_pre *pre, int want)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_snapshot_undo *u = NULL;
	int r;

	r = cryo_snapshot_restore(f->dfd, s, NULL, f->bfd, f->rootfs, pre, &u, &err);
	if (want == 0 && r < 0)
		fail_msg("restore: %s", err.msg);
	assert_int_equal(r, want);
	if (r == 0)
		cryo_snapshot_commit(u);
	else
		cryo_snapshot_undo(u);
	cryo_snapshot_undo_free(u);
	/* taken or cancelled: nothing of it stays */
	assert_null(pre->name);
	assert_int_equal(pre->pid, 0);
	assert_int_equal(faccessat(f->bfd, ".ahead", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	cryo_error_clear(&err);
}

/* The restore of the file that was extracted ahead takes the extracted dir. */
static void test_taken(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_snapshot_pre pre = CRYO_SNAPSHOT_PRE_INIT;
	Cryo__RootfsSnapshot s;
	struct stat st;
	ino_t ahead;

	make_tar(f->dfd, "rootfs.tar", GOOD, 0);
	assert_int_equal(cryo_snapshot_pre_start(f->dfd, "rootfs.tar", f->bfd, ".ahead", &pre, &err), 0);
	assert_true(pre.pid > 0);
	assert_int_equal(cryo_snapshot_pre_wait(&pre, &err), 0);
	assert_string_equal(read_at(f->bfd, ".ahead/etc/hostname"), "ahead\n");
	assert_int_equal(fstatat(f->bfd, ".ahead", &st, 0), 0);
	ahead = st.st_ino;
	/* the archive is gone now: a restore that extracted again would fail */
	assert_int_equal(unlinkat(f->dfd, "rootfs.tar", 0), 0);
	make_tar(f->dfd, "rootfs.tar", EVIL, 0);
	snap_init(&s, "rootfs.tar");
	restore(f, &s, &pre, 0);
	assert_int_equal(fstatat(f->bfd, "rootfs", &st, 0), 0);
	assert_int_equal(st.st_ino, ahead);
	assert_true(pre.taken_us >= pre.started_us && pre.started_us > 0);
	assert_string_equal(read_at(f->bfd, "rootfs/counter"), "41\n");
	cryo_error_clear(&err);
}

/* Extracted ahead from another file: not taken, removed; the restore extracts its own. */
static void test_other_file(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_snapshot_pre pre = CRYO_SNAPSHOT_PRE_INIT;
	const char *const other[] = { "counter", "7\n", NULL };
	Cryo__RootfsSnapshot s;

	make_tar(f->dfd, "rootfs.tar", GOOD, 0);
	make_tar(f->dfd, "other.tar", other, 0);
	assert_int_equal(cryo_snapshot_pre_start(f->dfd, "other.tar", f->bfd, ".ahead", &pre, &err), 0);
	snap_init(&s, "rootfs.tar");
	restore(f, &s, &pre, 0);
	assert_string_equal(read_at(f->bfd, "rootfs/counter"), "41\n");
	assert_int_equal(pre.taken_us, 0);
	cryo_error_clear(&err);
}

/* A hostile archive: the extraction ahead refuses it, and so does the restore, in the same words. */
static void test_hostile(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_snapshot_pre pre = CRYO_SNAPSHOT_PRE_INIT;
	struct cryo_snapshot_undo *u = NULL;
	Cryo__RootfsSnapshot s;
	char *ahead_msg;

	make_tar(f->dfd, "rootfs.tar", EVIL, 0);
	assert_int_equal(cryo_snapshot_pre_start(f->dfd, "rootfs.tar", f->bfd, ".ahead", &pre, &err), 0);
	assert_int_equal(cryo_snapshot_pre_wait(&pre, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "`../escape`: absolute or `..` names are refused"));
	ahead_msg = strdup(err.msg);
	cryo_error_clear(&err);
	/* nothing got out of its dir */
	assert_int_equal(faccessat(f->dfd, "escape", F_OK, 0), -1);
	assert_int_equal(faccessat(f->bfd, "escape", F_OK, 0), -1);
	snap_init(&s, "rootfs.tar");
	assert_int_equal(cryo_snapshot_restore(f->dfd, &s, NULL, f->bfd, f->rootfs, &pre, &u, &err), -EBADMSG);
	assert_string_equal(err.msg, ahead_msg);
	cryo_snapshot_undo(u);
	cryo_snapshot_undo_free(u);
	assert_null(pre.name);
	assert_int_equal(faccessat(f->bfd, ".ahead", F_OK, 0), -1);
	/* the rootfs is as it was: empty */
	assert_null(read_at(f->bfd, "rootfs/ok"));
	free(ahead_msg);
	cryo_error_clear(&err);
}

/* Cancelled while it runs: the child is gone (reaped), its dir removed. */
static void test_cancel_running(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_snapshot_pre pre = CRYO_SNAPSHOT_PRE_INIT;
	pid_t pid;

	make_tar(f->dfd, "rootfs.tar", GOOD, 256U << 20);
	assert_int_equal(cryo_snapshot_pre_start(f->dfd, "rootfs.tar", f->bfd, ".ahead", &pre, &err), 0);
	pid = pre.pid;
	assert_true(pid > 0);
	cryo_snapshot_pre_cancel(&pre);
	assert_int_equal(pre.pid, 0);
	assert_null(pre.name);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_int_equal(faccessat(f->bfd, ".ahead", F_OK, 0), -1);
	/* and once more: a cancelled one cancels again as a no-op */
	cryo_snapshot_pre_cancel(&pre);
	cryo_error_clear(&err);
}

/* Started again (the file was sent again): the old extraction goes, the new one is taken. */
static void test_restart(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_snapshot_pre pre = CRYO_SNAPSHOT_PRE_INIT;
	const char *const v1[] = { "counter", "1\n", NULL };
	Cryo__RootfsSnapshot s;

	make_tar(f->dfd, "rootfs.tar", v1, 0);
	assert_int_equal(cryo_snapshot_pre_start(f->dfd, "rootfs.tar", f->bfd, ".ahead", &pre, &err), 0);
	make_tar(f->dfd, "rootfs.tar", GOOD, 0);
	assert_int_equal(cryo_snapshot_pre_start(f->dfd, "rootfs.tar", f->bfd, ".ahead", &pre, &err), 0);
	snap_init(&s, "rootfs.tar");
	restore(f, &s, &pre, 0);
	assert_string_equal(read_at(f->bfd, "rootfs/counter"), "41\n");
	cryo_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
