/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Dump and restore process trees through CRIU. The options are the ones
 * runc hands to CRIU, so Podman/CRI-O flags map one to one
 * (criu-env.h). This front end picks the back end: libcriu, which runs
 * `criu swrk` and speaks CRIU's RPC to it (criu-lib.h), or CRIU's command
 * line for what libcriu can't ask for (lazy pages, criu-cli.h).
 *
 * CRIU's own log (level 4, like runc) goes to <work dir>/<log name>; when
 * CRIU fails, the error carries the `Error` lines of that log and its
 * path: the user sees why, not "criu failed".
 */
#ifndef CRYO_CRIU_H
#define CRYO_CRIU_H

#include <stdbool.h>
#include <sys/types.h>

#include "criu-env.h"
#include "error.h"

/* Dump (or pre-dump) o->pid's tree into o->image_dir. */
int cryo_criu_dump(const struct cryo_criu_opts *o, struct cryo_error *err);

/*
 * Restore the tree in o->image_dir as a child of the calling process and
 * return the pid of its root.
 */
int cryo_criu_restore(const struct cryo_criu_opts *o, pid_t *ret_pid, struct cryo_error *err);

/* What `cryo check` reports. */
struct cryo_criu_host {
	bool found;                    /* libcriu could talk to a criu binary */
	struct cryo_criu_version version;
	bool check_ok;                 /* `criu check` passed */
	char *check_errors;            /* its Error lines when it did not (malloc'd) */
	int hw_breakpoints;            /* 1 / 0 / -errno */
	const char *hw_breakpoints_why;
	bool needs_fault_130;          /* CRIU >= 4 without hardware breakpoints */
};

/* Run CRIU's self-check with its log in a temporary dir. */
int cryo_criu_check_host(struct cryo_criu_host *ret, struct cryo_error *err);
void cryo_criu_host_done(struct cryo_criu_host *h);

#endif
