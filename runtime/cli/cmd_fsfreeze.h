/* SPDX-License-Identifier: GPL-2.0-only */
/* What `cryo fsfreeze` shares with `cryo fsthaw`. */
#ifndef CRYO_CLI_CMD_FSFREEZE_H
#define CRYO_CLI_CMD_FSFREEZE_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "fsfreeze.h"
#include "cli.h"

/* The options of both: what to act on (--path), whose hold (--owner), --force. */
#define CLI_FSFREEZE_OPTIONS                                       \
	{ "path", required_argument, NULL, 'p' },                  \
	{ "owner", required_argument, NULL, 'o' },                 \
	{ "force", no_argument, NULL, 'f' }

/* A command of the two, as cli_fsfreeze_parse() reads its command line. */
struct cli_fsfreeze_cmd {
	const char *name;                   /* "fsfreeze", "fsthaw" */
	const struct option *opts;          /* CLI_FSFREEZE_OPTIONS, the command's own, "help" */
	void (*usage)(FILE *out);
	/* the command's own options (NULL: none): CLI_GO_ON or an exit status */
	int (*opt)(int c, const char *arg, struct cryo_fsfreeze_opts *o, void *userdata);
	void *userdata;
};

/*
 * The command line of cmd (options in any order with the operand; from
 * argv[0] up to argc): the options (--help prints the usage), then the
 * operand, a container ID unless --path was given, then nothing; the
 * owner is the ID unless --owner named one. CLI_GO_ON with *ret_path and
 * *ret_id set (one of them NULL), or the status to exit with (0 after
 * --help, else a usage error it printed).
 */
int cli_fsfreeze_parse(const struct cli_fsfreeze_cmd *cmd, int argc, char **argv, struct cryo_fsfreeze_opts *o,
		       const char **ret_path, const char **ret_id);

/* The path to act on: --path as given, or the rootfs recorded for container id. */
int cli_fsfreeze_target(struct cryo_cli *cli, const char *id, const char *path, char *buf, size_t size,
			struct cryo_error *err);

/*
 * Drop o's hold on target and say so: "thawed `MP` (frozen 1.234 ms)" or
 * "`MP` stays frozen: N other hold(s)". 0, or 1 after printing the error.
 */
int cli_fsfreeze_thaw(const char *target, const struct cryo_fsfreeze_opts *o);

#endif
