/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What `cryo migrate` and `cryo receive`, the two ends of one migration,
 * share on the command line: the options both take (the TLS files, the
 * peer timeout, --list-steps), the progress lines on stderr, and how a
 * run that streams an image is set up and how its failure is told.
 */
#ifndef CRYO_CLI_MIGRATE_COMMON_H
#define CRYO_CLI_MIGRATE_COMMON_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "migrate.h"

enum {
	CLI_OPT_CERT = 0x180,
	CLI_OPT_KEY,
	CLI_OPT_CA,
	CLI_OPT_TIMEOUT,
	CLI_OPT_LIST_STEPS,
};

#define CLI_MIGRATE_OPTIONS                                             \
	{ "cert", required_argument, NULL, CLI_OPT_CERT },              \
	{ "key", required_argument, NULL, CLI_OPT_KEY },                \
	{ "ca", required_argument, NULL, CLI_OPT_CA },                  \
	{ "timeout", required_argument, NULL, CLI_OPT_TIMEOUT },        \
	{ "list-steps", no_argument, NULL, CLI_OPT_LIST_STEPS }

/* Where the options above go, and whose phases --list-steps prints. */
struct cli_migrate_args {
	struct cryo_tls_files *tls;
	int64_t *timeout_ms;
	const struct cryo_step_table *steps;
};

/*
 * Take getopt's result c (with optarg arg) when it is one of
 * CLI_MIGRATE_OPTIONS: CLI_GO_ON (cli.h) when taken, else the status the
 * command cmd ends with: 0 after --list-steps, 2 for a bad value (printed)
 * or for any other c (the `default:` of a command's switch, whose errors
 * cli_getopt() already reported).
 */
int cli_migrate_opt(const char *cmd, int c, const char *arg, const struct cli_migrate_args *a);

/* A wait for the peer of option opt ("timeout"): 1 ms to a day; 0, or 2 after printing the usage error. */
int cli_migrate_parse_ms(const char *cmd, const char *opt, const char *arg, int64_t *ret);

/* Progress of `migrate` and `receive` on stderr (userdata: a struct cli_progress). */
struct cli_progress {
	bool json, tty, quiet, line_open;
};
void cli_migrate_progress(const struct cryo_migrate_progress *p, void *userdata);
/* After the run: end a live progress line left open on the terminal. */
void cli_progress_end(struct cli_progress *pc);

/*
 * Before a run that streams an image to or from a peer: a peer that hangs
 * up is an error to report, not a SIGPIPE to die of; and the frames (up to
 * 256 KiB each, hundreds of MiB in all) reuse freed heap memory instead of
 * handing it back to the kernel and faulting it in again (malloc's
 * defaults).
 */
void cli_stream_begin(void);

/*
 * "cryo CMD: failed at PHASE (the PEER at PEER_PHASE); OUTCOME" on stderr,
 * the parenthesis only when the peer said where it failed.
 */
void cli_migrate_failed(const char *cmd, const char *phase, const char *peer, const char *peer_phase,
			const char *outcome);

#endif
