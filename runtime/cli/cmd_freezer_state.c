// SPDX-License-Identifier: GPL-2.0-only
/* cryo freezer-state: print RUNNING, FREEZING or FROZEN for a container or --cgroup. */
#include <getopt.h>
#include <stdio.h>

#include "cgtarget.h"
#include "cli.h"

int cmd_freezer_state(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	const char *cgroup = NULL, *id = NULL;
	enum cryo_freezer_state st;
	struct cgtarget t;
	int c, r;

	while ((c = cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cgroup = optarg;
			break;
		case 'h':
			printf("Usage: cryo freezer-state (ID | --cgroup PATH)\n\n"
			       "Print the freezer state: RUNNING, FREEZING or FROZEN.\n");
			return 0;
		default:
			return cli_usage_error("freezer-state", "unknown option");
		}
	}
	if (optind < argc)
		id = argv[optind++];
	if (optind < argc)
		return cli_usage_error("freezer-state", "unexpected argument `%s`", argv[optind]);
	if (!!id == !!cgroup)
		return cli_usage_error("freezer-state", "give a container ID or --cgroup PATH (exactly one)");
	r = cgtarget_open_query(&t, cli->root, id, cgroup, &err);
	if (r < 0)
		return cli_fail(&err);
	r = cryo_freezer_get_state(t.f, &st, &err);
	cgtarget_close(&t);
	if (r < 0)
		return cli_fail(&err);
	printf("%s\n", cryo_freezer_state_names[st]);
	return 0;
}
