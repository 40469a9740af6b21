/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What freeze/thaw/pause/resume/kill-all act on: a container (ID, its
 * cgroup from its state, its lock held for the command) or a bare cgroup
 * (--cgroup PATH, e.g. a container of another runtime).
 */
#ifndef CRYO_CLI_CGTARGET_H
#define CRYO_CLI_CGTARGET_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

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

/* The options of a command that acts on a target: --timeout MS (where it has one) and --cgroup PATH. */
#define CGTARGET_OPTIONS                                           \
	{ "timeout", required_argument, NULL, 't' },               \
	{ "cgroup", required_argument, NULL, 'c' }

/*
 * Take getopt's result c (with optarg arg) of command name when it is one
 * of CGTARGET_OPTIONS, into *timeout (ms) or *cgroup: CLI_GO_ON when
 * taken, else the exit status of the usage error printed (a bad
 * --timeout, or any other c: "unknown option").
 */
int cgtarget_opt(const char *name, int c, const char *arg, uint64_t *timeout, const char **cgroup);

/* A command that acts on a target, as cgtarget_parse() reads its command line. */
struct cgtarget_cmd {
	const char *name;                   /* as called: "freeze", "pause" */
	const char *plain;                  /* the name that takes --cgroup ("freeze") */
	bool oci;                           /* an OCI name (pause, resume): no --cgroup */
	const struct option *opts;          /* CGTARGET_OPTIONS, the command's own, "help" */
	void (*usage)(const char *name, FILE *out);
	/* the command's own options (NULL: none): CLI_GO_ON or an exit status */
	int (*opt)(const char *name, int c, const char *arg, void *userdata);
	void *userdata;
};

/*
 * The command line of cmd: its options (--help prints the usage), then
 * its operands (cgtarget_operands()). CLI_GO_ON with *timeout, *cgroup
 * and *ret_id set, or the status to exit with (0 after --help).
 */
int cgtarget_parse(const struct cgtarget_cmd *cmd, int argc, char **argv, uint64_t *timeout, const char **cgroup,
		   const char **ret_id);

int cgtarget_open(struct cgtarget *t, const char *root, const char *id, const char *cgroup, struct cryo_error *err);
/*
 * cgtarget_open() without the container's lock, for a command that only
 * reads (the state file is replaced atomically): `freezer-state` answers
 * while another command holds the lock, even one that was stopped.
 */
int cgtarget_open_query(struct cgtarget *t, const char *root, const char *id, const char *cgroup,
			struct cryo_error *err);

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
