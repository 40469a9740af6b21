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
		{ "path", required_argument, NULL, 'p' },
		{ "owner", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_fsfreeze_opts o = { .state_dir = cli->root };
	struct cryo_fsfreeze_thawed th = { 0 };
	char target[PATH_MAX];
	const char *path = NULL, *id = NULL;
	int c, r;

	/* 0, not 1: glibc re-reads the ordering mode (main parses with "+") */
	optind = 0;
	while ((c = cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			path = optarg;
			break;
		case 'o':
			o.owner = optarg;
			break;
		case 'f':
			o.flags |= CRYO_FSFREEZE_FORCE;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_usage_error("fsthaw", "bad option");
		}
	}
	r = cli_fsfreeze_operands("fsthaw", argc, argv, path, &id);
	if (r)
		return r;
	if (!o.owner)
		o.owner = id;

	r = cli_fsfreeze_target(cli, id, path, target, sizeof(target), &err);
	if (r < 0)
		return cli_fail(&err);
	r = cryo_fsfreeze_thaw(target, &o, &th, &err);
	if (r < 0)
		return cli_fail(&err);
	cli_fsfreeze_print_thawed(target, &th);
	return 0;
}
