// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>

#include "container.h"
#include "cli.h"

int cmd_run(struct cryo_cli *cli, int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_create_opts o;
	bool detach = false;
	int r, status = 0;

	r = cli_parse_create("run", argc, argv, cli, &o, &detach);
	if (r != 0)
		return r < 0 ? 0 : r;
	r = cryo_container_run(&o, detach, &status, &err);
	return cli_exit_status(r, status, &err);
}
