// SPDX-License-Identifier: GPL-2.0-only
/*
 * Freezer state/backend names and parsing, opening errors, and the hold
 * module with a real watchdog process (deadline, release, holder death).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "freezer.h"
#include "kmod.h"
#include "hold.h"
#include "util.h"
#include "testlib.h"

static void test_state_names(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	enum cryo_freezer_state st = _CRYO_FREEZER_STATE_MAX;
	size_t i;

	for (i = 0; i < _CRYO_FREEZER_STATE_MAX; i++) {
		assert_non_null(cryo_freezer_state_names[i]);
		assert_int_equal(cryo_freezer_state_from_string(cryo_freezer_state_names[i], &st, &err), 0);
		assert_int_equal(st, i);
	}
	assert_string_equal(cryo_freezer_state_names[CRYO_FREEZER_RUNNING], "RUNNING");
	assert_string_equal(cryo_freezer_state_names[CRYO_FREEZER_FREEZING], "FREEZING");
	assert_string_equal(cryo_freezer_state_names[CRYO_FREEZER_FROZEN], "FROZEN");

	/* what the kernel files hold: v1's THAWED and a trailing newline */
	assert_int_equal(cryo_freezer_state_from_string("THAWED\n", &st, &err), 0);
	assert_int_equal(st, CRYO_FREEZER_RUNNING);
	assert_int_equal(cryo_freezer_state_from_string("FROZEN\n", &st, &err), 0);
	assert_int_equal(st, CRYO_FREEZER_FROZEN);
}

static void test_state_bad(void **state)
{
	static const char *const bad[] = { "", "frozen", "FROZE", "FROZENX", " FROZEN", "THAW", "PAUSED", "1" };
	struct cryo_error err = CRYO_ERROR_INIT;
	enum cryo_freezer_state st = CRYO_FREEZER_FROZEN;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(cryo_freezer_state_from_string(bad[i], &st, &err), -EINVAL);
		assert_non_null(err.msg);
		/* the message names the string */
		assert_non_null(strstr(err.msg, "unknown freezer state"));
		if (bad[i][0])
			assert_non_null(strstr(err.msg, bad[i]));
		cryo_error_clear(&err);
		/* ret_* untouched on failure */
		assert_int_equal(st, CRYO_FREEZER_FROZEN);
	}
	assert_int_equal(cryo_freezer_state_from_string(NULL, &st, &err), -EINVAL);
	cryo_error_clear(&err);
}

static void test_backend_names(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	enum cryo_freezer_backend b;

	assert_int_equal(cryo_freezer_backend_from_string("v1", &b, &err), 0);
	assert_int_equal(b, CRYO_FREEZER_V1);
	assert_int_equal(cryo_freezer_backend_from_string("v2", &b, &err), 0);
	assert_int_equal(b, CRYO_FREEZER_V2);
	assert_int_equal(cryo_freezer_backend_from_string("kmod", &b, &err), 0);
	assert_int_equal(b, CRYO_FREEZER_KMOD);
	assert_int_equal(cryo_freezer_backend_from_string("v3", &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "`v3`"));
	cryo_error_clear(&err);
}

static void test_open_errors(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_freezer *f = NULL;

	assert_int_equal(cryo_freezer_open_path("relative/path", &f, &err), -EINVAL);
	cryo_error_clear(&err);
	assert_int_equal(cryo_freezer_open_path("/nonexistent-cryo-cgroup", &f, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent-cryo-cgroup"));
	cryo_error_clear(&err);
	assert_int_equal(cryo_freezer_open_path("/tmp", &f, &err), -ENOTDIR);
	assert_non_null(strstr(err.msg, "not in a cgroup filesystem"));
	cryo_error_clear(&err);
	/* a non-cgroup directory opened with an explicit backend */
	assert_int_equal(cryo_freezer_open(CRYO_FREEZER_V2, "/tmp", &f, &err), -ENOENT);
	cryo_error_clear(&err);
	assert_int_equal(cryo_freezer_open(CRYO_FREEZER_V1, "/tmp", &f, &err), -ENOENT);
	cryo_error_clear(&err);
	/* the kmod backend: the module is needed, and drives the files of a cgroup */
	assert_int_equal(cryo_freezer_open(CRYO_FREEZER_KMOD, "/tmp", &f, &err), cryo_kmod_available() ? -ENOENT : -ENODEV);
	cryo_error_clear(&err);
	assert_int_equal(cryo_freezer_open_for("nope", "/a", NULL, &f, &err), -EINVAL);
	cryo_error_clear(&err);
	assert_int_equal(cryo_freezer_open_for("v1", "/a", NULL, &f, &err), -ENOENT);
	cryo_error_clear(&err);
	assert_null(f);
}

/* The undo action of the hold tests: create <target>/undone. */
static int touch_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/undone", rec->target);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return cryo_error_set(err, errno, "create `%s`", path);
	close(fd);
	return 0;
}

struct tmp {
	char dir[64];
	char marker[128];
};

static void tmp_setup(struct tmp *t)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/cryo-unit-hold-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->marker, sizeof(t->marker), "%s/undone", t->dir);
}

static void tmp_teardown(struct tmp *t)
{
	assert_int_equal(tl_rm_rf(t->dir), 0);
}

static bool wait_for_file(const char *path, bool present, int ms)
{
	int64_t end = cryo_now_ms() + ms;
	struct stat st;

	while (cryo_now_ms() < end) {
		if ((stat(path, &st) == 0) == present)
			return true;
		cryo_sleep_ms(5);
	}
	return (stat(path, &st) == 0) == present;
}

/* Gone or a zombie (an orphan's reaper may be slow). */
static bool wait_gone(pid_t pid, int ms)
{
	int64_t end = cryo_now_ms() + ms;
	char path[64], buf[512];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	do {
		FILE *f = fopen(path, "re");
		char *p;

		if (!f)
			return true;
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		if (!p || ((p = strrchr(buf, ')')) && p[2] == 'Z'))
			return true;
		cryo_sleep_ms(5);
	} while (cryo_now_ms() < end);
	return false;
}

static void test_hold_deadline(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_hold_rec *rec = NULL;
	struct cryo_hold *h = NULL;
	char journal[256];
	struct tmp t;
	int64_t start;

	tmp_setup(&t);
	snprintf(journal, sizeof(journal), "%s/.holds/unit.json", t.dir);
	start = cryo_now_ms();
	assert_int_equal(cryo_hold_acquire(t.dir, "unit", CRYO_HOLD_CGROUP_THAW, t.dir, "v2", 600, 0, touch_undo, &h, &err), 0);
	assert_int_equal(cryo_hold_load(t.dir, "unit", &rec, &err), 0);
	assert_string_equal(rec->target, t.dir);
	assert_string_equal(rec->backend, "v2");
	assert_int_equal(rec->kind, CRYO_HOLD_CGROUP_THAW);
	assert_int_equal(rec->holder_pid, getpid());
	assert_true(rec->watchdog_pid > 0 && rec->watchdog_pid != getpid());
	assert_true(cryo_hold_is_live(rec));
	cryo_hold_rec_free(rec);
	/* a second hold of the same name is refused while the first lives */
	assert_int_equal(cryo_hold_acquire(t.dir, "unit", CRYO_HOLD_CGROUP_THAW, t.dir, "v2", 300, 0, touch_undo, NULL, &err),
			 -EEXIST);
	cryo_error_clear(&err);

	/* not before the deadline (checked up to 400 ms after the start), but by it */
	assert_false(wait_for_file(t.marker, true, (int)(start + 400 - cryo_now_ms())));
	assert_true(wait_for_file(t.marker, true, 5000));
	assert_true(cryo_now_ms() - start >= 600);
	assert_true(wait_for_file(journal, false, 1000));
	/* the holder learns its window was lost */
	assert_int_equal(cryo_hold_release(h, &err), -ETIME);
	cryo_error_clear(&err);
	tmp_teardown(&t);
}

static void test_hold_release(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_hold_rec *rec = NULL;
	struct cryo_hold *h = NULL;
	struct tmp t;
	pid_t wd;

	tmp_setup(&t);
	assert_int_equal(cryo_hold_acquire(t.dir, "rel", CRYO_HOLD_FS_THAW, t.dir, "ioctl", 200, 0, touch_undo, &h, &err), 0);
	assert_int_equal(cryo_hold_load(t.dir, "rel", &rec, &err), 0);
	wd = rec->watchdog_pid;
	cryo_hold_rec_free(rec);
	assert_int_equal(cryo_hold_release(h, &err), 0);
	assert_int_equal(cryo_hold_load(t.dir, "rel", &rec, &err), -ENOENT);
	cryo_error_clear(&err);
	/* the watchdog stands down without undoing */
	assert_false(wait_for_file(t.marker, true, 500));
	assert_true(wait_gone(wd, 1000));
	tmp_teardown(&t);
}

/* A child takes the hold NAME of t->dir (undone by touch_undo) and dies holding it. */
static void die_holding(const struct tmp *t, const char *name, enum cryo_hold_kind kind,
			const char *backend, uint64_t timeout_ms, unsigned flags)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct cryo_error err = CRYO_ERROR_INIT;
		struct cryo_hold *h = NULL;

		if (cryo_hold_acquire(t->dir, name, kind, t->dir, backend, timeout_ms, flags,
				      touch_undo, &h, &err) < 0)
			_exit(1);
		_exit(0); /* dies holding it */
	}
	assert_int_equal(tl_wait(pid), 0);
}

static void test_hold_holder_death(void **state)
{
	int64_t start;
	struct tmp t;

	tmp_setup(&t);
	die_holding(&t, "dead", CRYO_HOLD_CGROUP_THAW, "v1", 60000, CRYO_HOLD_UNDO_ON_EXIT);
	start = cryo_now_ms();
	/* long before the 60 s deadline */
	assert_true(wait_for_file(t.marker, true, 3000));
	assert_true(cryo_now_ms() - start < 3000);
	tmp_teardown(&t);
}

static void test_hold_recover(void **state)
{
	static const cryo_hold_undo_fn undo[_CRYO_HOLD_KIND_MAX] = { [CRYO_HOLD_CGROUP_THAW] = touch_undo };
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_hold_rec *rec = NULL;
	struct cryo_hold *h = NULL;
	struct tmp t;

	tmp_setup(&t);
	assert_int_equal(cryo_hold_acquire(t.dir, "rec", CRYO_HOLD_CGROUP_THAW, t.dir, "v2", 60000, 0, touch_undo, &h, &err), 0);
	/* a live hold is kept */
	assert_int_equal(cryo_hold_recover(t.dir, undo, NULL, NULL, &err), 0);
	assert_int_equal(cryo_hold_load(t.dir, "rec", &rec, &err), 0);
	/* its watchdog dies too (the whole cryo was killed): recover undoes it */
	assert_int_equal(kill(rec->watchdog_pid, SIGKILL), 0);
	assert_true(wait_gone(rec->watchdog_pid, 2000));
	cryo_hold_rec_free(rec);
	assert_false(wait_for_file(t.marker, true, 10));
	assert_int_equal(cryo_hold_recover(t.dir, undo, NULL, NULL, &err), 0);
	assert_true(wait_for_file(t.marker, true, 10));
	assert_int_equal(cryo_hold_load(t.dir, "rec", &rec, &err), -ENOENT);
	cryo_error_clear(&err);
	cryo_hold_free(h);
	/* bad names and arguments */
	assert_int_equal(cryo_hold_acquire(t.dir, "../x", CRYO_HOLD_CGROUP_THAW, t.dir, "v2", 100, 0, touch_undo, &h, &err),
			 -EINVAL);
	cryo_error_clear(&err);
	assert_int_equal(cryo_hold_acquire(t.dir, "x", CRYO_HOLD_CGROUP_THAW, t.dir, "v2", 0, 0, touch_undo, &h, &err),
			 -EINVAL);
	cryo_error_clear(&err);
	tmp_teardown(&t);
}

/*
 * A journal-only hold of a holder that died (a SIGKILLed checkpoint's
 * staging hold) never blocks the next acquire of that name: it is undone
 * as recover would, and the new hold is taken. One whose holder lives
 * still refuses.
 */
static void test_hold_stale_dead_holder(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_hold_rec *rec = NULL;
	struct cryo_hold *h = NULL;
	struct tmp t;

	tmp_setup(&t);
	/* nothing but the next command undoes it */
	die_holding(&t, "web@staging", CRYO_HOLD_STAGING, "dir", 0,
		    CRYO_HOLD_UNDO_ON_EXIT | CRYO_HOLD_NO_WATCHDOG);
	assert_int_equal(cryo_hold_load(t.dir, "web@staging", &rec, &err), 0);
	assert_true(rec->flags & CRYO_HOLD_NO_WATCHDOG);
	assert_false(cryo_hold_is_live(rec));
	cryo_hold_rec_free(rec);
	assert_false(wait_for_file(t.marker, true, 10));
	assert_int_equal(cryo_hold_acquire(t.dir, "web@staging", CRYO_HOLD_STAGING, t.dir, "dir", 0,
					   CRYO_HOLD_UNDO_ON_EXIT | CRYO_HOLD_NO_WATCHDOG, touch_undo, &h, &err), 0);
	assert_true(wait_for_file(t.marker, true, 10));
	assert_int_equal(cryo_hold_load(t.dir, "web@staging", &rec, &err), 0);
	assert_int_equal(rec->holder_pid, getpid());
	/* live (this process): the journal-only hold is not mistaken for a dead one */
	assert_true(cryo_hold_is_live(rec));
	cryo_hold_rec_free(rec);
	assert_int_equal(cryo_hold_acquire(t.dir, "web@staging", CRYO_HOLD_STAGING, t.dir, "dir", 0,
					   CRYO_HOLD_UNDO_ON_EXIT | CRYO_HOLD_NO_WATCHDOG, touch_undo, NULL, &err),
			 -EEXIST);
	cryo_error_clear(&err);
	assert_int_equal(cryo_hold_release(h, &err), 0);
	tmp_teardown(&t);
}

/* An undo that keeps the entry as a record (fsfreeze's lost windows); ended records are not reported. */
static int keep_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	struct cryo_hold_rec copy = *rec;
	int r;

	r = touch_undo(rec, err);
	if (r < 0)
		return r;
	r = cryo_hold_open_dir(rec->root, &dfd, err);
	if (r < 0)
		return r;
	copy.flags |= CRYO_HOLD_ENDED;
	copy.detail = (char *)"{\"lost\":[1]}";
	r = cryo_hold_update_at(dfd, &copy, err);
	return r < 0 ? r : CRYO_HOLD_UNDO_KEEP;
}

static void count_reports(const struct cryo_hold_rec *rec, const char *what, int r, void *userdata)
{
	(*(int *)userdata)++;
}

static void test_hold_recover_keeps_record(void **state)
{
	static const cryo_hold_undo_fn undo[_CRYO_HOLD_KIND_MAX] = { [CRYO_HOLD_FS_THAW] = keep_undo };
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_hold_rec tmpl = { .name = (char *)"fs@7:99", .kind = CRYO_HOLD_FS_THAW, .backend = (char *)"ioctl",
				      .detail = (char *)"{\"state\":\"frozen\"}" };
	struct cryo_hold_rec *rec = NULL;
	int dfd = -1, lfd = -1, reports = 0;
	struct tmp t;
	pid_t pid;

	tmp_setup(&t);
	tmpl.target = t.dir;
	assert_int_equal(cryo_hold_lock(t.dir, 1000, &dfd, &lfd, &err), 0);
	close(lfd);
	/* written by a guard that then died */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(cryo_hold_put_self(dfd, &tmpl, false, NULL) < 0);
	assert_int_equal(tl_wait(pid), 0);
	assert_int_equal(cryo_hold_put_self(dfd, &tmpl, false, &err), -EEXIST);
	cryo_error_clear(&err);
	assert_int_equal(cryo_hold_load(t.dir, "fs@7:99", &rec, &err), 0);
	assert_string_equal(rec->detail, "{\"state\":\"frozen\"}");
	cryo_hold_rec_free(rec);
	/* undone, reported, and kept as the record the undo wrote */
	assert_int_equal(cryo_hold_recover(t.dir, undo, count_reports, &reports, &err), 0);
	assert_int_equal(reports, 1);
	assert_true(wait_for_file(t.marker, true, 10));
	assert_int_equal(cryo_hold_load(t.dir, "fs@7:99", &rec, &err), 0);
	assert_true(rec->flags & CRYO_HOLD_ENDED);
	assert_false(cryo_hold_is_live(rec));
	cryo_hold_rec_free(rec);
	/* a record is handed to the undo again, silently */
	assert_int_equal(cryo_hold_recover(t.dir, undo, count_reports, &reports, &err), 0);
	assert_int_equal(reports, 1);
	/* the journal's lock is the dir's: a second locker waits, and gives up after its timeout */
	close(dfd);
	assert_int_equal(cryo_hold_lock(t.dir, 1000, &dfd, &lfd, &err), 0);
	{
		int dfd2 = -1, lfd2 = -1;

		assert_int_equal(cryo_hold_lock(t.dir, 50, &dfd2, &lfd2, &err), -EBUSY);
		cryo_error_clear(&err);
	}
	close(lfd);
	close(dfd);
	tmp_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_names),     cmocka_unit_test(test_state_bad),
		cmocka_unit_test(test_backend_names),   cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_hold_deadline),   cmocka_unit_test(test_hold_release),
		cmocka_unit_test(test_hold_holder_death), cmocka_unit_test(test_hold_recover),
		cmocka_unit_test(test_hold_stale_dead_holder), cmocka_unit_test(test_hold_recover_keeps_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
