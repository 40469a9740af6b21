// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgroup2 freezer: write cgroup.freeze, and learn the outcome from the
 * `frozen` key of cgroup.events, which the kernel flips when the last
 * task has parked and announces with a kernfs notification (POLLPRI).
 *
 * The kernel tracks "changed since last read" per open file, so the
 * events fd stays open for the freezer's lifetime and every wait reads it
 * again before polling: a flip between the read and the poll still wakes
 * the poll.
 *
 * The notification is rate-limited (cgroup_file_notify(): at most one per
 * 10 ms per file, later ones deferred to a timer), so right after a thaw
 * or an earlier freeze the event can trail the `frozen` flip by up to
 * 10 ms, while the freeze itself takes ~0.1 ms for a few tasks. The wait
 * therefore also re-reads the file on a short doubling ladder (100 us up
 * to 10 ms): the event still wakes it at once, the re-reads bridge the
 * deferral, and after 10 ms only the event and the deadline remain.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "freezer.h"
#include "util.h"

static int v2_open(struct cryo_freezer *f, struct cryo_error *err)
{
	int fd;

	fd = openat(f->dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return cryo_error_setx(err, ENOENT, "`%s` has no cgroup.events: not a cgroup2 directory, or the root cgroup (which can't be frozen)",
				       f->path);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s/cgroup.events`", f->path);
	f->fd = fd;
	if (faccessat(f->dirfd, "cgroup.freeze", W_OK, 0) < 0) {
		/* the root cgroup has no cgroup.freeze */
		return cryo_error_set(err, errno, "`%s/cgroup.freeze`", f->path);
	}
	return 0;
}

/* -1 = key missing, else 0/1 */
static int events_frozen(struct cryo_freezer *f, struct cryo_error *err)
{
	char buf[512], *p;
	ssize_t n;

	n = pread(f->fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return cryo_error_set(err, errno, "read `%s/cgroup.events`", f->path);
	buf[n] = '\0';
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "frozen ", 7) == 0)
			return p[7] == '1';
	}
	return cryo_error_setx(err, EOPNOTSUPP, "`%s/cgroup.events` has no `frozen` key (kernel < 5.2?)", f->path);
}

static int read_freeze(struct cryo_freezer *f, struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = cryo_read_file_at(f->dirfd, "cgroup.freeze", 64, &buf, &len);
	if (r < 0)
		return cryo_error_set(err, r, "read `%s/cgroup.freeze`", f->path);
	if (buf[0] == '0')
		return 0;
	if (buf[0] == '1')
		return 1;
	return cryo_error_setx(err, EINVAL, "unexpected `%s/cgroup.freeze` content `%.16s`", f->path, buf);
}

static int v2_get_state(struct cryo_freezer *f, enum cryo_freezer_state *ret, struct cryo_error *err)
{
	int want, frozen;

	want = read_freeze(f, err);
	if (want < 0)
		return want;
	frozen = events_frozen(f, err);
	if (frozen < 0)
		return frozen;
	/*
	 * cgroup.freeze is what was asked, `frozen` what the kernel reached;
	 * frozen without asking means an ancestor is frozen: show it as such.
	 */
	if (frozen)
		*ret = CRYO_FREEZER_FROZEN;
	else
		*ret = want ? CRYO_FREEZER_FREEZING : CRYO_FREEZER_RUNNING;
	return 0;
}

static int write_freeze(struct cryo_freezer *f, const char *v, struct cryo_error *err)
{
	int r = cryo_write_file_at(f->dirfd, "cgroup.freeze", v);

	if (r < 0)
		return cryo_error_set(err, r, "write %s to `%s/cgroup.freeze`", v, f->path);
	return 0;
}

static int v2_freeze(struct cryo_freezer *f, struct cryo_error *err)
{
	return write_freeze(f, "1", err);
}

static int v2_thaw(struct cryo_freezer *f, struct cryo_error *err)
{
	return write_freeze(f, "0", err);
}

#define REREAD_FIRST_US 100
#define REREAD_LAST_US 10000

static int v2_wait(struct cryo_freezer *f, enum cryo_freezer_state want, int64_t deadline_ms, struct cryo_error *err)
{
	int64_t deadline_us = deadline_ms * 1000, reread_us = REREAD_FIRST_US;

	for (;;) {
		struct pollfd p = { .fd = f->fd, .events = POLLPRI };
		struct timespec ts;
		int64_t left;
		int frozen, r;

		frozen = events_frozen(f, err);
		if (frozen < 0)
			return frozen;
		if (want == CRYO_FREEZER_FROZEN ? frozen == 1 : frozen == 0)
			return 0;
		left = deadline_us - cryo_now_us();
		if (left <= 0)
			return -ETIMEDOUT;
		if (reread_us <= REREAD_LAST_US) {
			if (left > reread_us)
				left = reread_us;
			reread_us *= 2;
		}
		ts.tv_sec = (time_t)(left / 1000000);
		ts.tv_nsec = (long)(left % 1000000) * 1000;
		r = ppoll(&p, 1, &ts, NULL);
		if (r < 0 && errno != EINTR)
			return cryo_error_set(err, errno, "poll `%s/cgroup.events`", f->path);
	}
}

static int v2_kill(struct cryo_freezer *f, struct cryo_error *err)
{
	int r = cryo_write_file_at(f->dirfd, "cgroup.kill", "1");

	if (r == -ENOENT)
		return cryo_error_setx(err, EOPNOTSUPP, "no `%s/cgroup.kill` (kernel < 5.14)", f->path);
	if (r < 0)
		return cryo_error_set(err, r, "write 1 to `%s/cgroup.kill`", f->path);
	return 0;
}

const struct cryo_freezer_ops cryo_freezer_v2_ops = {
	.backend = CRYO_FREEZER_V2,
	.open = v2_open,
	.get_state = v2_get_state,
	.freeze = v2_freeze,
	.thaw = v2_thaw,
	.wait = v2_wait,
	.kill = v2_kill,
	.threads_file = "cgroup.threads",
	.procs_file = "cgroup.procs",
};
