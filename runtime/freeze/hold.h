/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Holds: a state change that must not outlive its owner — a cgroup
 * freeze, a filesystem freeze — taken with a deadline and an undo action.
 *
 * Nothing in the kernel thaws a frozen cgroup (or filesystem) whose owner
 * died, so every hold is backed twice:
 *
 *  - a journal entry <root>/.holds/<name>.json (kind, target, backend,
 *    holder pid + start time, watchdog pid + start time, deadline, nonce)
 *    from which `cryo recover` undoes whatever a dead cryo left behind;
 *  - a watchdog process (double-forked, setsid'd, cwd `/`, stdio on
 *    /dev/null, no inherited fds) that runs the undo action when the
 *    deadline passes or, with CRYO_HOLD_UNDO_ON_EXIT, as soon as the
 *    holder dies (pidfd), unless the hold was released first.
 *
 * The deadline is on CLOCK_MONOTONIC, which stops during suspend: a
 * system that sleeps does not eat a container's frozen window.
 *
 * The module is generic: it knows kinds and names, not cgroups or
 * filesystems. The undo action is a callback given at acquire time (it
 * runs in the watchdog, a fork of the caller) and, for `cryo recover`, a
 * table indexed by kind.
 */
#ifndef CRYO_HOLD_H
#define CRYO_HOLD_H

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
	char *boot_id;           /* the journal of another boot is stale */
	char *nonce;             /* identifies this hold across release/undo races */
	char *root;              /* the state dir whose journal has it (not stored) */
};

/* Undo the state change recorded in rec (thaw the cgroup, FITHAW the fs). */
typedef int (*cryo_hold_undo_fn)(const struct cryo_hold_rec *rec, struct cryo_error *err);

/* An acquired hold (owned by the process that acquired it). */
struct cryo_hold;

/*
 * Journal and arm a hold called name (see cryo_hold_validate_name()) before making the state change: the
 * watchdog is started first, the journal entry written second, so a
 * crash at any point leaves either nothing or a recoverable entry.
 * timeout_ms is relative to now (0 = no deadline, only with
 * CRYO_HOLD_UNDO_ON_EXIT). -EEXIST if a hold of that name exists (live, or
 * stale until `cryo recover`).
 */
int cryo_hold_acquire(const char *root, const char *name, enum cryo_hold_kind kind, const char *target,
		      const char *backend, uint64_t timeout_ms, unsigned flags, cryo_hold_undo_fn undo,
		      struct cryo_hold **ret, struct cryo_error *err);

/*
 * Release: remove the journal entry and stop the watchdog without undoing.
 * The caller undoes (or keeps) the state change itself. Frees h. Returns
 * -ETIME (and frees h) when the watchdog already fired: the caller's
 * window was lost. Accepts NULL.
 */
int cryo_hold_release(struct cryo_hold *h, struct cryo_error *err);

/*
 * From now on, the watchdog of h (a CRYO_HOLD_UNDO_ON_EXIT hold with a
 * watchdog) undoes delay_ms after the holder died, or at the deadline if
 * that comes first, instead of at once: for a state change that is only
 * safe to undo once something elsewhere has surely ended (migrate
 * --lazy: the source resumes only once the copy on the destination
 * stopped). `cryo recover` undoes such a hold at once: it is run by
 * hand, once the operator knows. -ETIME when the watchdog undid it
 * already.
 */
int cryo_hold_set_exit_delay(struct cryo_hold *h, int64_t delay_ms, struct cryo_error *err);

/*
 * Is h still holding? -ETIME once its deadline passed or its watchdog
 * undid it (the owner's window was lost), 0 otherwise.
 */
int cryo_hold_check(const struct cryo_hold *h, struct cryo_error *err);

/*
 * Release a hold by name from another process (`cryo thaw` of a cgroup
 * that `cryo freeze --deadline` left held). -ENOENT if there is none.
 */
int cryo_hold_release_name(const char *root, const char *name, struct cryo_error *err);

/* Forget h without releasing (the process is handing the hold over). */
void cryo_hold_free(struct cryo_hold *h);

/*
 * For a watchdog that guards a state change for several owners itself
 * (the fsfreeze watchdog): journal entry name of the given kind, whose
 * holder and watchdog are the calling process, without a deadline of its
 * own (the process keeps its owners' deadlines); it is live while the
 * process lives, and `cryo recover` undoes it after. dfd: the journal
 * dir, from cryo_hold_open_dir() (kept open across the watchdog's
 * detach). One process guards a target at a time (the caller serialises
 * that): an existing entry (a dead guard's, for `cryo recover`) is
 * replaced only with replace, else -EEXIST.
 */
int cryo_hold_open_dir(const char *root, int *ret_dfd, struct cryo_error *err);
int cryo_hold_put_self(int dfd, const char *name, enum cryo_hold_kind kind, const char *target, const char *backend,
		       bool replace, struct cryo_error *err);
/* Remove the entry name if this process wrote it with cryo_hold_put_self(). */
void cryo_hold_drop_self(int dfd, const char *name);

/* Read one entry. -ENOENT if there is none. */
int cryo_hold_load(const char *root, const char *name, struct cryo_hold_rec **ret, struct cryo_error *err);
void cryo_hold_rec_free(struct cryo_hold_rec *rec);

/*
 * True while the hold still protects: its watchdog lives, and (with
 * CRYO_HOLD_UNDO_ON_EXIT) its holder lives, and its deadline has not
 * passed.
 */
bool cryo_hold_is_live(const struct cryo_hold_rec *rec);

/* Called by cryo_hold_recover() for each entry it handles. */
typedef void (*cryo_hold_report_fn)(const struct cryo_hold_rec *rec, const char *what, int r, void *userdata);

/*
 * Undo every hold whose owner is gone (see cryo_hold_is_live()) with
 * undo[rec->kind] and remove its entry; live holds are reported and kept.
 * A failing undo is reported and keeps its entry; the first failure is
 * returned after all entries were tried. Entries half-written by a
 * killed writer (`.<name>.json.tmp`) are removed.
 */
int cryo_hold_recover(const char *root, const cryo_hold_undo_fn undo[_CRYO_HOLD_KIND_MAX], cryo_hold_report_fn report,
		      void *userdata, struct cryo_error *err);

/*
 * Migration's image dirs, under the state root (migrate/; a leading dot
 * can't be a container id): <root>/<dir>/<id>.
 */
#define CRYO_MIGRATE_OUT_DIR ".migrate-out"
#define CRYO_MIGRATE_IN_DIR ".migrate-in"

/*
 * The undo of a CRYO_HOLD_STAGING hold: remove the staging dir of the
 * dead holder. Only a dir of a name cryo makes: an image's staging dir
 * (`.<name>.staging-<holder pid>`), or migration's `.migrate-in/<id>` /
 * `.migrate-out/<id>` (under the state root).
 */
int cryo_hold_staging_undo(const struct cryo_hold_rec *rec, struct cryo_error *err);

#endif
