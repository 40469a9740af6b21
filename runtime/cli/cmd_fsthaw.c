// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fsfreeze.h"
#include "util.h"
#include "cli.h"
#include "cmd_fsfreeze.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: cryo fsthaw [OPTIONS] ID|--path MOUNTPOINT\n"
		"\n"
		"Drop the freeze cryo holds on the filesystem of the container's rootfs\n"
		"(FITHAW once no other owner holds it). Fails if it is not frozen by this\n"
		"owner, or if its deadline already thawed it (the consistency window was lost).\n"
		"\n"
		"Options:\n"
		"  --path MOUNTPOINT   thaw this mount point instead of a container's rootfs\n"
		"  --owner NAME        whose hold to drop (default: the ID, or `cli`)\n"
		"  --force             thaw it whoever froze it: every cryo hold, or a freeze made\n"
		"                      by fsfreeze(8) or left behind by a killed watchdog\n");
}

int cmd_fsthaw(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_FSFREEZE_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_fsfreeze_cmd fc = { .name = "fsthaw", .opts = opts, .usage = usage };
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_fsfreeze_opts o = { .state_dir = cli->root };
	char target[PATH_MAX];
	const char *path = NULL, *id = NULL;
	int r;

	r = cli_fsfreeze_parse(&fc, argc, argv, &o, &path, &id);
	if (r != CLI_GO_ON)
		return r;
	if (cli_fsfreeze_target(cli, id, path, target, sizeof(target), &err) < 0)
		return cli_fail(&err);
	return cli_fsfreeze_thaw(target, &o);
}
