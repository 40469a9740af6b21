/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What freeze/thaw/pause/resume/kill-all act on: a container (ID, its
 * cgroup from its state, its lock held for the command) or a bare cgroup
 * (--cgroup PATH, e.g. a container of another runtime).
 */
#ifndef CRYO_CLI_CGTARGET_H
#define CRYO_CLI_CGTARGET_H

#include <stdbool.h>

#include "error.h"
#include "freezer.h"
#include "state.h"

/* exit status of a freeze that did not complete in time (EBUSY) */
#define CLI_EXIT_BUSY 3

struct cgtarget {
	struct cryo_freezer *f;
	struct cryo_state *st;  /* NULL with --cgroup */
	int lock_fd;
	char hold_name[160];    /* journal name of this target's holds */
	char what[300];         /* "container `x`" or "cgroup `/p`" for messages */
};

int cgtarget_open(struct cgtarget *t, const char *root, const char *id, const char *cgroup, struct cryo_error *err);

/*
 * The operands left after getopt (from optind): a container ID or, with
 * --cgroup, nothing. Exactly one of the two; the OCI names (oci: pause,
 * resume) take no --cgroup, plain is the command that does ("freeze").
 * 0 and *ret_id set, or the exit status of the usage error it printed.
 */
int cgtarget_operands(const char *name, const char *plain, bool oci, int argc, char **argv, const char *cgroup,
		      const char **ret_id);

/*
 * cgtarget_open() for a command that needs the container running or
 * paused; state names the state it wants for the message ("running").
 * On failure t is closed.
 */
int cgtarget_open_live(struct cgtarget *t, const char *root, const char *id, const char *cgroup, const char *state,
		       struct cryo_error *err);
/* Record a new status for a container (no-op for --cgroup). */
int cgtarget_set_status(struct cgtarget *t, const char *root, enum cryo_status status, struct cryo_error *err);
void cgtarget_close(struct cgtarget *t);

/* Exit status for a failed freezer call: CLI_EXIT_BUSY for EBUSY, else 1. */
int cgtarget_fail(int r, struct cryo_error *err);

#endif
