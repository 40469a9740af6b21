/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The CRIU flags `checkpoint` and `restore` share (runc's names): one
 * table of long options and one parser, so both commands accept and
 * document them the same way.
 */
#ifndef CRYO_CLI_CRIU_FLAGS_H
#define CRYO_CLI_CRIU_FLAGS_H

#include <getopt.h>

#include "criu.h"

enum {
	CLI_OPT_TCP_ESTABLISHED = 0x100,
	CLI_OPT_EXT_UNIX_SK,
	CLI_OPT_SHELL_JOB,
	CLI_OPT_FILE_LOCKS,
	CLI_OPT_MANAGE_CGROUPS_MODE,
};

#define CLI_CRIU_FLAG_OPTIONS                                                              \
	{ "tcp-established", no_argument, NULL, CLI_OPT_TCP_ESTABLISHED },                  \
	{ "ext-unix-sk", no_argument, NULL, CLI_OPT_EXT_UNIX_SK },                          \
	{ "shell-job", no_argument, NULL, CLI_OPT_SHELL_JOB },                              \
	{ "file-locks", no_argument, NULL, CLI_OPT_FILE_LOCKS },                            \
	{ "manage-cgroups-mode", required_argument, NULL, CLI_OPT_MANAGE_CGROUPS_MODE }

#define CLI_CRIU_FLAG_HELP                                                                 \
	"  --tcp-established         dump/restore established TCP connections\n"             \
	"  --ext-unix-sk             allow external unix sockets\n"                          \
	"  --shell-job               the container was started from a shell (terminal)\n"    \
	"  --file-locks              dump/restore file locks\n"                              \
	"  --manage-cgroups-mode M   soft, full, strict or ignore\n"

/*
 * Take getopt's result c (with optarg arg) into f when it is one of the
 * flags above: 0 when taken, -1 when c is not one of them, else the exit
 * status of a usage error of cmd (already printed).
 */
int cli_criu_flag(const char *cmd, int c, const char *arg, struct cryo_criu_flags *f);

#endif
