/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The hold journal (hold.h says what a hold is): one entry per hold,
 * <root>/.holds/<name>.json, its records, its lock (hold-journal.c).
 */
#ifndef CRYO_HOLD_JOURNAL_H
#define CRYO_HOLD_JOURNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

enum cryo_hold_kind {
	CRYO_HOLD_CGROUP_THAW, /* target: cgroup dir; backend: freezer backend name */
	CRYO_HOLD_FS_THAW,     /* target: mount point; backend: "ioctl" or "kmod" */
	/*
	 * target: a checkpoint's staging dir `<parent>/.<name>.staging-<pid>`
	 * (backend "dir"), journal only (CRYO_HOLD_NO_WATCHDOG): `cryo
	 * recover` removes it once its holder died without committing it.
	 */
	CRYO_HOLD_STAGING,
	/*
	 * target: cgroup dir; backend: freezer backend name. A container
	 * that must not outlive its holder: `cryo receive`'s paused copy
	 * before the source commits. The undo kills every task in it.
	 */
	CRYO_HOLD_CGROUP_KILL,
	/*
	 * target: a host interface name; backend: its ifindex. The host end
	 * of a container's veth, taken down while `cryo migrate
	 * --tcp-established` moves the connections; the undo brings it up
	 * (if that index still has that name).
	 */
	CRYO_HOLD_LINK_UP,
	/*
	 * target: a restore's work dir; backend "restore". Journal only
	 * (CRYO_HOLD_NO_WATCHDOG | CRYO_HOLD_UNDO_ON_EXIT), its detail says
	 * what the restore changed so far (the rootfs it staged): should the
	 * restore die (SIGKILL), `cryo recover` or the next restore of that
	 * container puts the bundle's rootfs back and removes the work dir.
	 */
	CRYO_HOLD_RESTORE,
	/*
	 * target: the bundle dir `cryo receive` made (<bundle-dir>/<id>);
	 * backend "bundle". Journal only (CRYO_HOLD_NO_WATCHDOG |
	 * CRYO_HOLD_UNDO_ON_EXIT), its detail names the marker file receive
	 * wrote in it: should receive die before the commit, `cryo recover`
	 * removes the bundle (only one with that marker, or an empty dir).
	 */
	CRYO_HOLD_BUNDLE,
	_CRYO_HOLD_KIND_MAX,
};

extern const char *const cryo_hold_kind_names[_CRYO_HOLD_KIND_MAX];

enum cryo_hold_flag {
	/* also undo as soon as the holder process exits without releasing */
	CRYO_HOLD_UNDO_ON_EXIT = 1U << 0,
	/*
	 * cryo_freezer.ko holds the state change (a detached hold with the
	 * deadline, or one on the holder's fd for UNDO_ON_EXIT): no watchdog
	 * is started (watchdog_pid 0), the kernel undoes. The entry tells
	 * `cryo recover` and `cryo thaw` about it; once it is no longer live
	 * the kernel has undone it, so nothing is left to undo.
	 */
	CRYO_HOLD_KMOD = 1U << 1,
	/*
	 * Journal only: no watchdog, no deadline; the entry is live while its
	 * holder lives and `cryo recover` undoes it after (with UNDO_ON_EXIT).
	 */
	CRYO_HOLD_NO_WATCHDOG = 1U << 2,
	/*
	 * The hold is over and nothing is left to undo; its entry stays as a
	 * record its owners read (an fsfreeze whose deadline thawed it: the
	 * window its owners lost). Never live; `cryo recover` hands it to
	 * the kind's undo, which drops what nobody will ask about any more.
	 */
	CRYO_HOLD_ENDED = 1U << 3,
};

/*
 * The journal dir under the state root. Its leading dot keeps it out of
 * the container-id namespace (an id starts with a letter or digit).
 */
#define CRYO_HOLD_DIR ".holds"

/*
 * A hold's name: a container id, optionally followed by `@` and a tag of
 * letters, digits, `-`, `_`, `.` or `:` (cryo's own holds: `web@staging`,
 * `fs@7:1`). -EINVAL otherwise.
 */
int cryo_hold_validate_name(const char *name, struct cryo_error *err);

/* One journal entry, as read back from <root>/holds/<name>.json. */
struct cryo_hold_rec {
	char *name;
	enum cryo_hold_kind kind;
	char *target;
	char *backend;
	unsigned flags;
	pid_t holder_pid;
	uint64_t holder_start;   /* /proc/PID/stat field 22 */
	pid_t watchdog_pid;
	uint64_t watchdog_start;
	int64_t deadline_ms;     /* CLOCK_MONOTONIC; 0 = none */
	int64_t exit_delay_ms;   /* UNDO_ON_EXIT: the undo waits this long after the holder died (0 = at once) */
	/*
	 * UNDO_ON_EXIT: a process the holder started that acts on the target
	 * and may outlive it (a dump's CRIU, which must not be killed while it
	 * holds the tasks): the hold lives on while it does, up to the
	 * deadline. 0 = none.
	 */
	pid_t helper_pid;
	uint64_t helper_start;
	char *boot_id;           /* the journal of another boot is stale */
	char *nonce;             /* identifies this hold across release/undo races */
	char *detail;            /* the kind's own JSON object (text), or NULL; stored as is */
	char *root;              /* the state dir whose journal has it (not stored) */
};

/*
 * The journal's lock, for a module that keeps entries of its own (the
 * fsfreeze watchdog's): an flock on <root>/.holds, a dir that is never
 * removed, so a waiter always locks the dir that is there. Waits at most
 * timeout_ms (-EBUSY after). *ret_dfd: the journal dir; the lock is held
 * until *ret_lockfd is closed. cryo_hold_*() calls that lock must not be
 * made while it is held (flock does not nest across open files): use the
 * _at() ones.
 */
int cryo_hold_lock(const char *root, int timeout_ms, int *ret_dfd, int *ret_lockfd, struct cryo_error *err);

/* Read the entry name from the journal dir dfd (no lock taken). -ENOENT if there is none. */
int cryo_hold_load_at(int dfd, const char *name, struct cryo_hold_rec **ret, struct cryo_error *err);

/* Write rec as it is (its nonce, pids, detail) over its entry, under the lock. */
int cryo_hold_update_at(int dfd, const struct cryo_hold_rec *rec, struct cryo_error *err);
/* Remove the entry name, under the lock. */
void cryo_hold_remove_at(int dfd, const char *name);
/* The journal dir <root>/.holds (made if missing), without the lock: for an undo, which runs under it. */
int cryo_hold_open_dir(const char *root, int *ret_dfd, struct cryo_error *err);

/* Read one entry. -ENOENT if there is none. */
int cryo_hold_load(const char *root, const char *name, struct cryo_hold_rec **ret, struct cryo_error *err);
void cryo_hold_rec_free(struct cryo_hold_rec *rec);

/* For hold.c: */
#define HOLDS_DIR CRYO_HOLD_DIR
/* this boot's id (/proc/sys/kernel/random/boot_id), "" if unknown; NULL only on ENOMEM */
char *cryo_hold_boot_id(void);
/* Open <root>/.holds (moving a journal of the old layout there), creating it if create. */
int cryo_hold_dir_open(const char *root, bool create, int *ret, struct cryo_error *err);
/* The journal dir that should hold entry name; a missing dir is "no hold `name`" (-ENOENT). */
int cryo_hold_dir_open_for(const char *root, const char *name, int *ret_fd, struct cryo_error *err);
/* Take the journal's lock (blocking): the locked fd, or -errno. */
int cryo_hold_dir_lock(int dfd);
/* The same, waiting at most timeout_ms (< 0: as long as it takes): -EBUSY when it passed. */
int cryo_hold_dir_lock_for(int dfd, int timeout_ms);
/* Write rec's entry (atomically, not synced): 0 or -errno. */
int cryo_hold_rec_save_at(int dfd, const struct cryo_hold_rec *rec);
/* Does entry name still carry this nonce? Its exit delay in *ret_exit_delay_ms (may be NULL). */
bool cryo_hold_entry_is_delay(int dfd, const char *name, const char *nonce, int64_t *ret_exit_delay_ms);
bool cryo_hold_entry_is(int dfd, const char *name, const char *nonce);

#endif
