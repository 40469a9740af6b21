// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "container.h"
#include "log.h"
#include "cli.h"

int cmd_delete(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	bool force = false;
	int c, r;

	while ((c = cli_getopt(argc, argv, "+fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = true;
			break;
		case 'h':
			printf("Usage: cryo delete [-f|--force] ID\n\nRemove a stopped or created container; -f/--force kills a running or paused\none first, and a missing one is no error then.\n");
			return 0;
		default:
			return cli_usage_error("delete", "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("delete", "expects exactly one container id");
	r = cryo_container_delete(cli->root, argv[optind], force, &err);
	/* runc: deleting what is already gone is done, with --force */
	if (r == -ENOENT && force) {
		cryo_debug("%s", err.msg);
		cryo_error_clear(&err);
		return 0;
	}
	if (r < 0)
		return cli_fail(&err);
	return 0;
}
