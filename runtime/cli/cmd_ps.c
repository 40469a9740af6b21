// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "cli.h"

int cmd_ps(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	pid_t *pids = NULL;
	size_t i, n = 0;
	bool json = false;
	int c;

	while ((c = cli_getopt(argc, argv, "+f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") == 0)
				json = true;
			else if (strcmp(optarg, "table") != 0)
				return cli_usage_error("ps", "--format must be `table` or `json`");
			break;
		case 'h':
			printf("Usage: cryo ps [--format table|json] ID\n\nList the pids in the container's cgroup.\n");
			return 0;
		default:
			return cli_usage_error("ps", "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("ps", "expects exactly one container id");
	if (cryo_container_pids(cli->root, argv[optind], &pids, &n, &err) < 0)
		return cli_fail(&err);
	if (json) {
		printf("[");
		for (i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", (int)pids[i]);
		printf("]\n");
	} else {
		printf("PID\n");
		for (i = 0; i < n; i++)
			printf("%d\n", (int)pids[i]);
	}
	free(pids);
	return 0;
}
