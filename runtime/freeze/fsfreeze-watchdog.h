/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The fsfreeze watchdog (fsfreeze.h): one process per frozen filesystem
 * that made the FIFREEZE, holds it for its owners, each with a deadline,
 * and is the only one ever to FITHAW it. fsfreeze.c's commands talk to it
 * over its socket in the hold journal's dir (<root>/.holds/fs@<key>.sock),
 * under the journal's lock; it keeps the filesystem's entry in that
 * journal (`fs@<key>.json`: the holds, and the windows owners lost) and
 * never waits for the lock itself, since a command that holds it may be
 * waiting for its reply.
 */
#ifndef CRYO_FSFREEZE_WATCHDOG_H
#define CRYO_FSFREEZE_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "mountinfo.h"

/* The filesystem to act on, pinned by an fd on it (the ioctls go through it). */
struct fsfreeze_target {
	int fd;
	struct cryo_mount m;
	char key[32];      /* "<major>:<minor>": names the journal entry and the socket */
	int holdsfd;       /* the hold journal's dir, where the entry and the watchdog's socket are */
	int lockfd;        /* the journal's lock, while a command holds it (never passed to a watchdog) */
};

/* Why a hold ended without its owner's thaw; "already thawed by <reason>". */
#define LOST_TIMEOUT "timeout"
#define LOST_HOLDER_EXIT "its holder's exit"
#define LOST_SIGTERM "SIGTERM to its watchdog"
#define LOST_FORCED "a forced thaw"
#define LOST_BEHIND_BACK "a thaw behind cryo's back (fsfreeze -u?)"
#define LOST_RECOVER "`cryo recover` after its watchdog died"

/* The journal entry of the filesystem key ("fs@<key>") and its watchdog's socket ("fs@<key>.sock"). */
void cryo_fsfreeze_entry_name(const char *key, char *buf, size_t size);
void cryo_fsfreeze_sock_name(const char *key, char *buf, size_t size);

/*
 * Start the watchdog of t, which freezes it and holds it for owner (pid
 * holder, timeout_ms; thaw_on_exit: also at holder's exit) until its
 * holds end. Its requests, one per connection: `HOLD <timeout_ms> <pid>
 * <thaw_on_exit 0|1> <owner>`, `RESET <timeout_ms> <owner>`, `THAW
 * <owner>`, `THAWALL`; replies `<errno> <text>`. Called under the
 * journal's lock (t->lockfd), with no watchdog answering for t; the lock
 * is released once the watchdog's socket is there, before the freeze.
 * The errors of FIFREEZE come back with a message starting "FIFREEZE".
 */
int cryo_fsfreeze_watchdog_start(struct fsfreeze_target *t, const char *owner, pid_t holder, uint64_t timeout_ms,
				 bool thaw_on_exit, pid_t *ret_pid, struct cryo_error *err);

#endif
