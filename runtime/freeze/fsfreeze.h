/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Filesystem freeze (FIFREEZE/FITHAW) of a container's rootfs, with the
 * semantics of the never-merged timeout patch (seeds/006): every freeze
 * has an owner and a deadline after which the filesystem thaws by itself,
 * the deadline can be reset, and a reset or thaw after it fired fails
 * with EINVAL so the owner learns its consistency window was lost.
 *
 * Linux refuses a second userspace FIFREEZE with EBUSY, so cryo counts
 * nested freezes itself (as the seed's bd_fsfreeze_count did): the first
 * hold freezes, further owners add holds, each owner thaws only its own
 * hold and the filesystem thaws when the last hold is gone. The one hold
 * journal (hold.h) has it all: the entry `fs@<major>:<minor>` says the
 * filesystem is frozen, by which watchdog, who holds it until when, and,
 * once over, which owners lost their window (so their thaw can say so);
 * `cryo recover` walks it. Commands serialise on the journal's lock.
 *
 * A watchdog process per frozen filesystem owns the holds and thaws at
 * the deadline, even after cryo was killed. When cryo_freezer.ko is loaded
 * (/dev/cryo_freezer) the watchdog freezes through it instead of FIFREEZE,
 * so that the kernel thaws the filesystem should the watchdog itself die.
 *
 * Deadlines are in milliseconds on CLOCK_MONOTONIC (time asleep in
 * suspend does not count); 0 = none. Unlike the seed's FIFREEZE argument,
 * 1 is not another "none" (that was for XFS's old ioctl ABI).
 *
 * Safety: cryo refuses to freeze the filesystem that holds `/`, the state
 * dir, or any path the caller must still write (image/staging dir, log),
 * because a write to a frozen filesystem sleeps uninterruptibly until
 * thaw. These refusals return -EDEADLK and cannot be forced.
 */
#ifndef CRYO_FSFREEZE_H
#define CRYO_FSFREEZE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

enum cryo_fsfreeze_flag {
	/*
	 * Freeze through a path that is not the root of its mount (the whole
	 * filesystem mounted elsewhere freezes), and thaw a filesystem that
	 * cryo holds no freeze on (frozen by fsfreeze(8), a backup tool, or
	 * left frozen after its watchdog was killed). Never lifts the `/`,
	 * state dir and keep-writable refusals.
	 */
	CRYO_FSFREEZE_FORCE = 1U << 0,
	/* Also thaw as soon as the calling process exits (pidfd), not only at the deadline. */
	CRYO_FSFREEZE_THAW_ON_EXIT = 1U << 1,
};

struct cryo_fsfreeze_opts {
	const char *state_dir;            /* --root: the entry and the watchdog's socket go in <state_dir>/.holds */
	const char *owner;                /* who holds the freeze (container id); NULL = "cli" */
	const char *const *keep_writable; /* NULL-terminated, may be NULL: must not be on the frozen fs */
	unsigned flags;                   /* enum cryo_fsfreeze_flag */
};

struct cryo_fsfreeze_thawed {
	bool thawed;          /* false: other owners' holds keep it frozen */
	unsigned holds_left;
	uint64_t frozen_us;   /* FIFREEZE..FITHAW, when thawed */
};

/*
 * Freeze the filesystem holding path (its mount point) for o->owner,
 * thawing it by itself after timeout_ms (0 = no deadline). If cryo
 * already holds it for another owner, add a hold; -EBUSY if this owner
 * holds it already or something else froze it.
 */
int cryo_fsfreeze_freeze(const char *path, uint64_t timeout_ms, const struct cryo_fsfreeze_opts *o,
			 struct cryo_error *err);

/*
 * Drop o->owner's hold; the filesystem thaws when it was the last one.
 * -EINVAL when the owner holds nothing (the filesystem is not frozen by
 * it, or its deadline already thawed it: the message says which).
 */
int cryo_fsfreeze_thaw(const char *path, const struct cryo_fsfreeze_opts *o, struct cryo_fsfreeze_thawed *ret,
		       struct cryo_error *err);

/*
 * Move o->owner's deadline to timeout_ms from now (0 = none). -EINVAL
 * "already thawed by timeout" once the deadline fired.
 */
int cryo_fsfreeze_reset_timeout(const char *path, uint64_t timeout_ms, const struct cryo_fsfreeze_opts *o,
				struct cryo_error *err);

/* The safety checks alone (a checkpoint plan runs them before freezing anything). */
int cryo_fsfreeze_check_target(const char *path, const struct cryo_fsfreeze_opts *o, struct cryo_error *err);

/*
 * The undo of a CRYO_HOLD_FS_THAW hold (`fs@<major>:<minor>` in the hold
 * journal, written by the watchdog of a frozen filesystem): its watchdog
 * died, so FITHAW the filesystem if it is still mounted where it was
 * frozen, and keep the entry as the record of the lost windows of its
 * owners (CRYO_HOLD_UNDO_KEEP). Of such a record (CRYO_HOLD_ENDED), drop
 * the windows of containers that no longer exist, and the entry with
 * the last one. Runs under the journal lock.
 */
struct cryo_hold_rec;
int cryo_fsfreeze_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err);

/* Called by cryo_fsfreeze_recover() for a live watchdog of an older cryo ("held"). */
typedef void (*cryo_fsfreeze_report_fn)(const char *mountpoint, const char *what, int r, void *userdata);

/*
 * `cryo recover`'s tidying after the hold journal's undos: the journal
 * dir <state_dir>/.fsfreeze of an older cryo goes once no watchdog of
 * that cryo answers there (their freezes are `fs@` entries of the hold
 * journal too, undone with it).
 */
int cryo_fsfreeze_recover(const char *state_dir, cryo_fsfreeze_report_fn report, void *userdata,
			  struct cryo_error *err);

#endif
