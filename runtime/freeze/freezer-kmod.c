// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo_freezer.ko as a freezer backend. The module freezes and thaws a
 * cgroup by writing its control file (cgroup.freeze or freezer.state)
 * from the kernel, so everything that is read - state, the wait for
 * FROZEN, the task lists - is the v1 or v2 files' backend's, driven
 * through f->file_ops. What the module adds is the hold: a freeze taken
 * with f->hold_ms armed (cryo_freezer_freeze_held()) lives on f->kfd and
 * is thawed by the kernel at its deadline or when that fd closes - when
 * this process dies - or, detached, at the deadline only.
 *
 * A freeze requested while the hold is taken (the retries of
 * cryo_freezer_freeze()) is the files' plain re-request; a thaw always
 * drops the kernel hold first, which also finds a detached hold another
 * process left (`cryo thaw` of `cryo freeze --deadline`).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "freezer.h"
#include "kmod.h"
#include "log.h"
#include "util.h"

static int kmod_open(struct cryo_freezer *f, struct cryo_error *err)
{
	int r;

	r = f->file_ops->open(f, err);
	if (r < 0)
		return r;
	f->cgfd = openat(f->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->cgfd < 0)
		return cryo_error_set(err, errno, "open cgroup `%s`", f->path);
	return cryo_kmod_open(&f->kfd, err);
}

/* Closing kfd makes the kernel thaw what it held: a freezer closed while holding is a holder that ended. */
static void kmod_close(struct cryo_freezer *f)
{
	closep(&f->kfd);
	closep(&f->cgfd);
	if (f->file_ops->close)
		f->file_ops->close(f);
}

static int kmod_get_state(struct cryo_freezer *f, enum cryo_freezer_state *ret, struct cryo_error *err)
{
	return f->file_ops->get_state(f, ret, err);
}

static int kmod_wait(struct cryo_freezer *f, enum cryo_freezer_state want, int64_t deadline_ms,
		     struct cryo_error *err)
{
	return f->file_ops->wait(f, want, deadline_ms, err);
}

static int kmod_freeze(struct cryo_freezer *f, struct cryo_error *err)
{
	int r;

	if (f->held || f->hold_ms == 0)
		return f->file_ops->freeze(f, err);
	r = f->hold_detached ? cryo_kmod_cgroup_freeze_detached(f->kfd, f->cgfd, f->hold_ms, err)
			     : cryo_kmod_cgroup_freeze(f->kfd, f->cgfd, f->hold_ms, err);
	if (r < 0)
		return cryo_error_prefix(err, "`%s`", f->path);
	f->held = true;
	cryo_debug("cryo_freezer holds `%s`%s, deadline %llu ms", f->path, f->hold_detached ? " (detached)" : "",
		   (unsigned long long)f->hold_ms);
	return 0;
}

static int kmod_thaw(struct cryo_freezer *f, struct cryo_error *err)
{
	/* -EINVAL: nothing held here, or the deadline thawed it already */
	if (cryo_kmod_cgroup_thaw(f->kfd, f->cgfd, NULL) < 0 && f->held)
		cryo_debug("the kernel hold of `%s` had ended (deadline)", f->path);
	f->held = false;
	return f->file_ops->thaw(f, err);
}

static int kmod_kill(struct cryo_freezer *f, struct cryo_error *err)
{
	if (!f->file_ops->kill)
		return cryo_error_setx(err, EOPNOTSUPP, "no cgroup.kill");
	return f->file_ops->kill(f, err);
}

/* The task files and parking are those of the files' backend (freezer-v1.c, freezer-v2.c). */
#define KMOD_OPS                                                                                   \
	.backend = CRYO_FREEZER_KMOD, .open = kmod_open, .close = kmod_close, .get_state = kmod_get_state, \
	.freeze = kmod_freeze, .thaw = kmod_thaw, .wait = kmod_wait, .kill = kmod_kill,            \
	.procs_file = "cgroup.procs"

const struct cryo_freezer_ops cryo_freezer_kmod_v1_ops = {
	KMOD_OPS,
	.parks_in_place = true,
	.threads_file = "tasks",
};

const struct cryo_freezer_ops cryo_freezer_kmod_v2_ops = {
	KMOD_OPS,
	.parks_in_place = false,
	.threads_file = "cgroup.threads",
};
