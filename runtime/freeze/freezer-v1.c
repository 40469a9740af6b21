// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgroup v1 freezer: freezer.state takes FROZEN or THAWED and reads back
 * THAWED, FREEZING or FROZEN. A write only marks the tasks; the state turns
 * FROZEN lazily when a read finds every task parked, and no notification
 * is sent, so the wait sleep-polls: every millisecond for the first
 * 50 ms (where nearly every freeze ends, seen within 1 ms of it), then
 * with a doubling backoff up to 50 ms so a long FREEZING costs few reads
 * (each read walks every task of the cgroup).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "freezer.h"
#include "util.h"

#define POLL_FIRST_MS 1
#define POLL_FAST_FOR_MS 50
#define POLL_MAX_MS 50

static int v1_open(struct cryo_freezer *f, struct cryo_error *err)
{
	if (faccessat(f->dirfd, "freezer.state", W_OK, 0) < 0) {
		if (errno == ENOENT)
			return cryo_error_setx(err, ENOENT, "`%s` has no freezer.state: not in the v1 freezer hierarchy, or its root (which can't be frozen)",
					       f->path);
		return cryo_error_set(err, errno, "`%s/freezer.state`", f->path);
	}
	return 0;
}

static int v1_get_state(struct cryo_freezer *f, enum cryo_freezer_state *ret, struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = cryo_read_file_at(f->dirfd, "freezer.state", 64, &buf, &len);
	if (r < 0)
		return cryo_error_set(err, r, "read `%s/freezer.state`", f->path);
	r = cryo_freezer_state_from_string(buf, ret, err);
	if (r < 0)
		return cryo_error_prefix(err, "`%s/freezer.state`", f->path);
	return 0;
}

static int write_state(struct cryo_freezer *f, const char *v, struct cryo_error *err)
{
	int r = cryo_write_file_at(f->dirfd, "freezer.state", v);

	if (r < 0)
		return cryo_error_set(err, r, "write %s to `%s/freezer.state`", v, f->path);
	return 0;
}

static int v1_freeze(struct cryo_freezer *f, struct cryo_error *err)
{
	return write_state(f, "FROZEN", err);
}

static int v1_thaw(struct cryo_freezer *f, struct cryo_error *err)
{
	return write_state(f, "THAWED", err);
}

static int v1_wait(struct cryo_freezer *f, enum cryo_freezer_state want, int64_t deadline_ms, struct cryo_error *err)
{
	int64_t step = POLL_FIRST_MS, fast_until = cryo_now_ms() + POLL_FAST_FOR_MS;

	for (;;) {
		enum cryo_freezer_state st = _CRYO_FREEZER_STATE_MAX;
		int64_t left;
		int r;

		r = v1_get_state(f, &st, err);
		if (r < 0)
			return r;
		if (st == want)
			return 0;
		left = deadline_ms - cryo_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		cryo_sleep_ms(step < left ? step : left);
		if (cryo_now_ms() >= fast_until)
			step = step * 2 > POLL_MAX_MS ? POLL_MAX_MS : step * 2;
	}
}

const struct cryo_freezer_ops cryo_freezer_v1_ops = {
	.backend = CRYO_FREEZER_V1,
	.open = v1_open,
	.get_state = v1_get_state,
	.freeze = v1_freeze,
	.thaw = v1_thaw,
	.wait = v1_wait,
	.kill = NULL,
	.parks_in_place = true,
	.threads_file = "tasks",
	.procs_file = "cgroup.procs",
};
