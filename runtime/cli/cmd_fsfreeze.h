/* SPDX-License-Identifier: GPL-2.0-only */
/* What `cryo fsfreeze` shares with `cryo fsthaw`. */
#ifndef CRYO_CLI_CMD_FSFREEZE_H
#define CRYO_CLI_CMD_FSFREEZE_H

#include <stddef.h>

#include "error.h"
#include "fsfreeze.h"
#include "cli.h"

/*
 * The operand left after getopt: a container ID unless --path was given,
 * then nothing. 0 and *ret_id set (NULL with --path), or the exit status
 * of the usage error it printed.
 */
int cli_fsfreeze_operands(const char *name, int argc, char **argv, const char *path, const char **ret_id);

/* The path to act on: --path as given, or the rootfs recorded for container id. */
int cli_fsfreeze_target(struct cryo_cli *cli, const char *id, const char *path, char *buf, size_t size,
			struct cryo_error *err);

/* "thawed `MP` (frozen 1.234 ms)" or "`MP` stays frozen: N other hold(s)". */
void cli_fsfreeze_print_thawed(const char *target, const struct cryo_fsfreeze_thawed *th);

#endif
