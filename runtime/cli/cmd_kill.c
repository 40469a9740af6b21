// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <signal.h>
#include <stdio.h>

#include "container.h"
#include "cli.h"

int cmd_kill(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	bool all = false;
	int c, sig = SIGTERM;

	while ((c = cli_getopt(argc, argv, "+ah", opts, NULL)) != -1) {
		switch (c) {
		case 'a':
			all = true;
			break;
		case 'h':
			printf("Usage: cryo kill [-a|--all] ID [SIGNAL]\n\nSend SIGNAL (name or number, default TERM) to the container's init,\nor with -a/--all to every process in its cgroup.\n");
			return 0;
		default:
			return cli_usage_error("kill", "bad option");
		}
	}
	if (optind >= argc || argc - optind > 2)
		return cli_usage_error("kill", "expects ID [SIGNAL]");
	if (argc - optind == 2 && cryo_signal_parse(argv[optind + 1], &sig) < 0)
		return cli_usage_error("kill", "unknown signal `%s`", argv[optind + 1]);
	if (cryo_container_kill(cli->root, argv[optind], sig, all, &err) < 0)
		return cli_fail(&err);
	return 0;
}
