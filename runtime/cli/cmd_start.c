// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <string.h>

#include "container.h"
#include "cli.h"

int cmd_start(struct cryo_cli *cli, int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: cryo start ID\n\nRun the process of a created container.\n");
		return 0;
	}
	if (argc != 2)
		return cli_usage_error("start", "expects exactly one container id");
	if (cryo_container_start(cli->root, argv[1], &err) < 0)
		return cli_fail(&err);
	return 0;
}
