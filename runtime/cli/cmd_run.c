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
	if (cryo_container_run(&o, detach, &status, &err) < 0) {
		/* the container ran and exited: its status wins over cleanup trouble */
		if (status)
			fprintf(stderr, "cryo: %s\n", err.msg);
		else
			return cli_fail(&err);
		cryo_error_clear(&err);
	}
	return status;
}
