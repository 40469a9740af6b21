// SPDX-License-Identifier: GPL-2.0-only
/*
 * The staging-dir undo (what `cryo recover` runs for a dead holder's
 * staging hold) removes only dirs of names cryo makes: an image's
 * `.<name>.staging-<holder pid>`, or migration's `.migrate-in/<id>` and
 * `.migrate-out/<id>`; any other target in a journal entry is refused
 * and left alone.
 *
 * A watchdog that undoes when its holder dies does so at once, or, once
 * the holder set an exit delay (migrate --lazy's freeze), that long after.
 * A hold whose holder named a helper (a dump's CRIU) lives on while the
 * helper does: it is undone when the helper ends, or at its deadline,
 * which kills the helper first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hold.h"
#include "util.h"
#include "testlib.h"

static char base[PATH_MAX];

static void mkdirs(const char *rel)
{
	char p[PATH_MAX * 2];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	assert_int_equal(cryo_mkdir_p(p, 0700), 0);
	/* something inside, so removal is recursive */
	strncat(p, "/pages-1.img", sizeof(p) - strlen(p) - 1);
	assert_int_equal(cryo_write_new_file_at(AT_FDCWD, p, "x", 1, 0600), 0);
}

static bool exists(const char *rel)
{
	char p[PATH_MAX * 2];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	return lstat(p, &st) == 0;
}

static int undo(const char *rel, pid_t holder)
{
	char target[PATH_MAX * 2];
	struct cryo_hold_rec rec = { .kind = CRYO_HOLD_STAGING, .target = target, .holder_pid = holder };
	struct cryo_error err = CRYO_ERROR_INIT;
	int r;

	snprintf(target, sizeof(target), "%s/%s", base, rel);
	r = cryo_hold_staging_undo(&rec, &err);
	cryo_error_clear(&err);
	return r;
}

static void test_staging_undo(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/cryo-test-hold.XXXXXX");
	assert_non_null(mkdtemp(base));

	/* an image's staging dir of this holder: removed */
	mkdirs(".img.staging-4242");
	assert_int_equal(undo(".img.staging-4242", 4242), 0);
	assert_false(exists(".img.staging-4242"));
	/* of another holder: refused, kept */
	mkdirs(".img.staging-4243");
	assert_int_equal(undo(".img.staging-4243", 4242), -EINVAL);
	assert_true(exists(".img.staging-4243"));

	/* migration's dirs of one container: removed, pre-copy rounds and all */
	mkdirs("root/.migrate-in/web/pre1");
	mkdirs("root/.migrate-in/web/img");
	assert_int_equal(undo("root/.migrate-in/web", 1), 0);
	assert_false(exists("root/.migrate-in/web"));
	assert_true(exists("root/.migrate-in"));
	mkdirs("root/.migrate-out/web/pre1");
	assert_int_equal(undo("root/.migrate-out/web", 1), 0);
	assert_false(exists("root/.migrate-out/web"));

	/* anything else is refused and left: a plain dir, the state root, a bad id, the parent itself */
	mkdirs("root/web");
	assert_int_equal(undo("root/web", 1), -EINVAL);
	assert_true(exists("root/web"));
	assert_int_equal(undo("root", 1), -EINVAL);
	assert_true(exists("root"));
	mkdirs("root/.migrate-in/.hidden");
	assert_int_equal(undo("root/.migrate-in/.hidden", 1), -EINVAL);
	assert_true(exists("root/.migrate-in/.hidden"));
	assert_int_equal(undo("root/.migrate-in", 1), -EINVAL);
	assert_true(exists("root/.migrate-in"));
	mkdirs("root/.migrate-inx/web");
	assert_int_equal(undo("root/.migrate-inx/web", 1), -EINVAL);
	assert_true(exists("root/.migrate-inx/web"));

	/* gone already: nothing to do */
	assert_int_equal(undo("root/.migrate-in/gone", 1), 0);

	assert_int_equal(cryo_rm_rf_at(AT_FDCWD, base), 0);
}

/* The undo of the exit-delay test: a file named by the hold's target. */
static int mark_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	(void)err;
	return cryo_write_new_file_at(AT_FDCWD, rec->target, "undone", 6, 0600);
}

/* A holder that takes the hold, sets its exit delay (ms, 0 = none) and dies: how long until its undo ran. */
static int64_t undo_after_death(int64_t delay_ms)
{
	char mark[PATH_MAX * 2];
	struct stat st;
	int64_t t0;
	pid_t pid;

	snprintf(mark, sizeof(mark), "%s/mark-%lld", base, (long long)delay_ms);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cryo_error err = CRYO_ERROR_INIT;
		struct cryo_hold *h = NULL;

		if (cryo_hold_acquire(base, "web@test", CRYO_HOLD_CGROUP_KILL, mark, "v2", 0, CRYO_HOLD_UNDO_ON_EXIT,
				      mark_undo, &h, &err) < 0)
			_exit(2);
		if (delay_ms && cryo_hold_set_exit_delay(h, delay_ms, &err) < 0)
			_exit(3);
		_exit(0);
	}
	assert_int_equal(tl_wait(pid), 0);
	t0 = cryo_now_ms();
	while (stat(mark, &st) < 0 && cryo_now_ms() - t0 < 8000)
		cryo_sleep_ms(10);
	assert_int_equal(stat(mark, &st), 0);
	return cryo_now_ms() - t0;
}

static void test_exit_delay(void **state)
{
	char entry[PATH_MAX * 2];
	struct stat st;
	int64_t at_once, delayed;

	(void)state;
	snprintf(base, sizeof(base), "/tmp/cryo-test-hold.XXXXXX");
	assert_non_null(mkdtemp(base));
	/* (bounds wide apart: the machine may be busy) */
	at_once = undo_after_death(0);
	delayed = undo_after_death(2500);
	assert_true(at_once < 1500);
	assert_true(delayed >= 2450);
	assert_true(delayed < 6000);
	/* and the entry goes with the undo (right after it) */
	snprintf(entry, sizeof(entry), "%s/.holds/web@test.json", base);
	for (int i = 0; i < 200 && stat(entry, &st) == 0; i++)
		cryo_sleep_ms(10);
	assert_int_not_equal(stat(entry, &st), 0);
	assert_int_equal(cryo_rm_rf_at(AT_FDCWD, base), 0);
}

/*
 * A holder (a child) takes the hold name of kind (deadline_ms, 0 =
 * none), forks a helper in a group of its own that lives helper_ms and
 * then writes done (if not NULL), names it, and dies. Returns the
 * helper's pid once the holder is dead.
 */
static pid_t holder_with_helper(const char *name, enum cryo_hold_kind kind, const char *mark, uint64_t deadline_ms,
				int helper_ms, const char *done)
{
	int pfd[2];
	pid_t pid, helper = 0;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cryo_error err = CRYO_ERROR_INIT;
		struct cryo_hold *h = NULL;
		pid_t hp;

		close(pfd[0]);
		if (cryo_hold_acquire(base, name, kind, mark, "v2", deadline_ms, CRYO_HOLD_UNDO_ON_EXIT, mark_undo, &h,
				      &err) < 0)
			_exit(2);
		hp = fork();
		if (hp == 0) {
			setpgid(0, 0);
			cryo_sleep_ms(helper_ms);
			if (done)
				(void)cryo_write_new_file_at(AT_FDCWD, done, "x", 1, 0600);
			_exit(0);
		}
		if (hp < 0 || cryo_hold_set_helper(h, hp, &err) < 0)
			_exit(3);
		if (write(pfd[1], &hp, sizeof(hp)) != sizeof(hp))
			_exit(4);
		_exit(0);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &helper, sizeof(helper)), (ssize_t)sizeof(helper));
	close(pfd[0]);
	assert_int_equal(tl_wait(pid), 0);
	return helper;
}

/*
 * A holder takes the hold (deadline_ms, 0 = none), forks a helper that
 * lives helper_ms, names it, and dies. Returns when the undo ran (ms
 * after the holder's death); *ret_helper_end: when the helper ended
 * (its file), or -1 if it never wrote it (killed).
 */
static int64_t undo_after_helper(uint64_t deadline_ms, int helper_ms, int64_t *ret_helper_end)
{
	char mark[PATH_MAX * 2], done[PATH_MAX * 2], entry[PATH_MAX * 2];
	struct cryo_hold_rec *rec = NULL;
	struct stat st;
	int64_t t0, end = -1, undone = -1;
	int dfd;
	pid_t helper;

	snprintf(mark, sizeof(mark), "%s/mark-helper-%llu", base, (unsigned long long)deadline_ms);
	snprintf(done, sizeof(done), "%s/helper-done-%llu", base, (unsigned long long)deadline_ms);
	helper = holder_with_helper("web@helper", CRYO_HOLD_CGROUP_KILL, mark, deadline_ms, helper_ms, done);
	t0 = cryo_now_ms();
	/* the holder is dead, its helper lives: the hold is live, not undone */
	assert_int_equal(cryo_hold_open_dir(base, &dfd, NULL), 0);
	assert_int_equal(cryo_hold_load_at(dfd, "web@helper", &rec, NULL), 0);
	assert_true(rec->helper_pid == helper);
	assert_true(cryo_hold_is_live(rec));
	cryo_hold_rec_free(rec);
	close(dfd);
	while (cryo_now_ms() - t0 < 12000) {
		if (end < 0 && stat(done, &st) == 0)
			end = cryo_now_ms() - t0;
		if (stat(mark, &st) == 0) {
			undone = cryo_now_ms() - t0;
			break;
		}
		/* (we are the helper's reaper: see test_helper) */
		(void)waitpid(-1, NULL, WNOHANG);
		cryo_sleep_ms(5);
	}
	assert_true(undone >= 0);
	/* and the helper is gone then */
	for (int i = 0; i < 300 && kill(helper, 0) == 0; i++) {
		(void)waitpid(helper, NULL, WNOHANG);
		cryo_sleep_ms(10);
	}
	assert_int_not_equal(kill(helper, 0), 0);
	snprintf(entry, sizeof(entry), "%s/.holds/web@helper.json", base);
	for (int i = 0; i < 200 && stat(entry, &st) == 0; i++)
		cryo_sleep_ms(10);
	assert_int_not_equal(stat(entry, &st), 0);
	*ret_helper_end = end;
	return undone;
}

static void test_helper(void **state)
{
	int64_t undone, end;

	(void)state;
	/* the helper, orphaned, comes to us */
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	snprintf(base, sizeof(base), "/tmp/cryo-test-hold.XXXXXX");
	assert_non_null(mkdtemp(base));
	/* no deadline: undone once the helper ended (1.5 s on), not at the holder's death */
	undone = undo_after_helper(0, 1500, &end);
	assert_true(end >= 0);
	assert_true(undone >= end);
	assert_true(undone >= 1000);
	assert_true(undone < end + 1500);
	/* a deadline that comes first: the helper is killed, then the undo runs */
	undone = undo_after_helper(1200, 30000, &end);
	assert_true(end < 0);
	assert_true(undone >= 700);
	assert_true(undone < 6000);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
	assert_int_equal(cryo_rm_rf_at(AT_FDCWD, base), 0);
}

/*
 * cryo_hold_settle(): a dead holder's hold whose helper still works is
 * undone once the helper ended, before settle returns (a hold of
 * another kind is left alone, at once).
 */
static void test_settle(void **state)
{
	char mark[PATH_MAX * 2];
	struct stat st;
	int64_t t0, took;

	(void)state;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	snprintf(base, sizeof(base), "/tmp/cryo-test-hold.XXXXXX");
	assert_non_null(mkdtemp(base));
	snprintf(mark, sizeof(mark), "%s/mark-settle", base);
	(void)holder_with_helper("web", CRYO_HOLD_CGROUP_THAW, mark, 0, 800, NULL);
	t0 = cryo_now_ms();
	/* another kind: not this one's to undo */
	assert_int_equal(cryo_hold_settle(base, "web", CRYO_HOLD_CGROUP_KILL, mark_undo, NULL), 0);
	assert_true(cryo_now_ms() - t0 < 400);
	assert_int_not_equal(stat(mark, &st), 0);
	/* its kind: waits for the helper, and the undo has run when it returns */
	assert_int_equal(cryo_hold_settle(base, "web", CRYO_HOLD_CGROUP_THAW, mark_undo, NULL), 0);
	took = cryo_now_ms() - t0;
	assert_int_equal(stat(mark, &st), 0);
	assert_true(took >= 500);
	assert_true(took < 5000);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
	assert_int_equal(cryo_rm_rf_at(AT_FDCWD, base), 0);
}

/* The undo of the stuck-lock test: one more line in the file the target names, each time it runs. */
static int count_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	int fd = open(rec->target, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd < 0)
		return cryo_error_set(err, errno, "open");
	if (write(fd, "u\n", 2) != 2) {
		close(fd);
		return cryo_error_set(err, EIO, "write");
	}
	close(fd);
	return 0;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) < 0 ? -1 : st.st_size;
}

/*
 * A holder stuck inside the journal's lock (SIGSTOP, a debugger)
 * past its deadline, maybe right after it froze: the watchdog undoes
 * without the lock, a short wait after the deadline, and tidies the
 * entry once the lock is free again.
 */
static void test_stuck_lock(void **state)
{
	char mark[PATH_MAX * 2], locked[PATH_MAX * 2], entry[PATH_MAX * 2];
	int64_t t0, seen, undone = -1;
	pid_t pid;

	(void)state;
	snprintf(base, sizeof(base), "/tmp/cryo-test-hold.XXXXXX");
	assert_non_null(mkdtemp(base));
	snprintf(mark, sizeof(mark), "%s/mark", base);
	snprintf(locked, sizeof(locked), "%s/locked", base);
	snprintf(entry, sizeof(entry), "%s/.holds/web.json", base);
	t0 = cryo_now_ms();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct cryo_error err = CRYO_ERROR_INIT;
		struct cryo_hold *h = NULL;
		int dfd, lfd;

		if (cryo_hold_acquire(base, "web", CRYO_HOLD_CGROUP_THAW, mark, "v2", 800, CRYO_HOLD_UNDO_ON_EXIT,
				      count_undo, &h, &err) < 0)
			_exit(2);
		dfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || (dfd = openat(dfd, ".holds", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			_exit(3);
		lfd = cryo_hold_dir_lock(dfd);
		if (lfd < 0 || cryo_write_new_file_at(AT_FDCWD, locked, "x", 1, 0600) < 0)
			_exit(4);
		/* (stuck: the parent kills it; bounded, so that a failed test leaves nothing behind) */
		cryo_sleep_ms(15000);
		_exit(0);
	}
	/* (slow under TSan beside the VM tests: the acquire alone took over 5 s once) */
	while (file_size(locked) < 0 && cryo_now_ms() - t0 < 30000)
		cryo_sleep_ms(5);
	assert_true(file_size(locked) > 0);
	/*
	 * Undone once while the holder still sits in the lock, soon after the
	 * deadline: at least its 800 ms after the fork (the acquire came
	 * later), and within 3 s of when the lock was seen taken (the acquire
	 * came just before).
	 */
	seen = cryo_now_ms();
	while (file_size(mark) <= 0 && cryo_now_ms() - seen < 8000)
		cryo_sleep_ms(10);
	undone = cryo_now_ms() - t0;
	assert_int_equal(file_size(mark), 2);
	assert_true(undone >= 700);
	assert_true(cryo_now_ms() - seen < 3000);
	assert_int_equal(file_size(entry) > 0, 1);
	/* the holder goes on (and dies): the watchdog takes the lock, undoes again (harmless) and the entry goes */
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(tl_wait(pid), 128 + SIGKILL);
	for (int i = 0; i < 300 && file_size(entry) >= 0; i++)
		cryo_sleep_ms(10);
	assert_int_equal(file_size(entry), -1);
	assert_int_equal(file_size(mark), 4);
	assert_int_equal(cryo_rm_rf_at(AT_FDCWD, base), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_staging_undo),
		cmocka_unit_test(test_exit_delay),
		cmocka_unit_test(test_helper),
		cmocka_unit_test(test_settle),
		cmocka_unit_test(test_stuck_lock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
