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
#include "hold-journal.h"

/*
 * An undo's answer besides 0 (undone: the entry goes) and -errno (failed:
 * the entry stays for the next `cryo recover`): undone, and the undo
 * rewrote the entry as a CRYO_HOLD_ENDED record, which stays.
 */
#define CRYO_HOLD_UNDO_KEEP 1


/*
 * Undo the state change recorded in rec (thaw the cgroup, FITHAW the fs).
 * Runs under the journal lock (cryo_hold_lock()): it must not take it.
 * 0, CRYO_HOLD_UNDO_KEEP or -errno.
 */
typedef int (*cryo_hold_undo_fn)(const struct cryo_hold_rec *rec, struct cryo_error *err);

/* An acquired hold (owned by the process that acquired it). */
struct cryo_hold;

/*
 * Journal and arm a hold called name (see cryo_hold_validate_name()) before making the state change: the
 * watchdog is started first, the journal entry written second, so a
 * crash at any point leaves either nothing or a recoverable entry.
 * timeout_ms is relative to now (0 = no deadline, only with
 * CRYO_HOLD_UNDO_ON_EXIT). -EEXIST if a hold of that name exists and is
 * live, or is stale but its holder may live (or lived in another boot):
 * `cryo recover` decides that one. A stale hold of the same kind whose
 * holder is verifiably dead (this boot, pid and start time gone) never
 * blocks: it is undone with undo, as `cryo recover` would, and logged
 * (`recovered stale hold NAME of dead pid N`).
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
 * Journal pid (a dump's CRIU, started by the holder) as the hold's
 * helper: should the holder die, the hold lives on while the helper does
 * (cryo_hold_is_live(); `recover` and a new hold of the name leave it),
 * and the watchdog undoes it when the helper is gone too, or at the
 * deadline, after killing the helper. For a hold undone on exit, not
 * by the kernel module; h NULL: nothing to do.
 */
int cryo_hold_set_helper(struct cryo_hold *h, pid_t pid, struct cryo_error *err);

/*
 * Before a command reads what the hold `name` guards: the hold (of kind)
 * of a holder that died is undone now with undo (its helper awaited first, up
 * to the hold's deadline), as a new hold of the name would, so that what
 * it left (a freeze) does not pass for the state a user chose. Holds of
 * live holders, and no hold, are left to the caller: 0.
 */
int cryo_hold_settle(const char *root, const char *name, enum cryo_hold_kind kind, cryo_hold_undo_fn undo,
		     struct cryo_error *err);

/* Does the kernel module undo h (it thaws at once when the holder dies)? */
bool cryo_hold_is_kmod(const struct cryo_hold *h);

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

/*
 * Replace the detail of h's entry (what its undo needs to know, as a JSON
 * object's text; NULL: none), as the holder's work goes on. -ETIME if it
 * was undone meanwhile.
 */
int cryo_hold_set_detail(struct cryo_hold *h, const char *detail, struct cryo_error *err);

/* Forget h without releasing (the process is handing the hold over). */
void cryo_hold_free(struct cryo_hold *h);


/*
 * For a watchdog that guards a state change for several owners itself
 * (the fsfreeze watchdog): the entry tmpl->name (kind, target, backend,
 * flags and detail from tmpl), whose holder and watchdog are the calling
 * process, without a deadline of its own (the process keeps its owners'
 * deadlines); it is live while the process lives, and `cryo recover`
 * undoes it after. dfd: the journal dir, from cryo_hold_lock() (kept
 * open across the watchdog's detach). One process guards a target at a
 * time (the caller serialises that under the lock): an existing entry (a
 * dead guard's, for `cryo recover`) is replaced only with replace, else
 * -EEXIST. Takes no lock: the watchdog never waits for a command that
 * may be waiting for it.
 */
int cryo_hold_put_self(int dfd, const struct cryo_hold_rec *tmpl, bool replace, struct cryo_error *err);
/* Remove the entry name if this process wrote it with cryo_hold_put_self(). */
void cryo_hold_drop_self(int dfd, const char *name);


/*
 * True while the hold still protects: its watchdog lives, and (with
 * CRYO_HOLD_UNDO_ON_EXIT) its holder or its helper lives, and its
 * deadline has not passed.
 */
bool cryo_hold_is_live(const struct cryo_hold_rec *rec);

/* Called by cryo_hold_recover() for each entry it handles. */
typedef void (*cryo_hold_report_fn)(const struct cryo_hold_rec *rec, const char *what, int r, void *userdata);

/*
 * First waits for the helpers that outlived their holders (a dump's
 * CRIU ends its dump), each up to its hold's deadline. Then:
 * undo every hold whose owner is gone (see cryo_hold_is_live()) with
 * undo[rec->kind] and remove its entry (unless the undo keeps it as a
 * record: CRYO_HOLD_UNDO_KEEP); live holds are reported and kept; ended
 * ones (CRYO_HOLD_ENDED) go to their undo too, and are reported only
 * when it fails.
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
