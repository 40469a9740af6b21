// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "sealexe.h"
#include "cli.h"

extern char **environ;

/*
 * Shared by create and run: `ID --bundle DIR [--pid-file F]
 * [--console-socket S] [-d]`. Commands that start a container first
 * re-execute from a sealed memfd copy (CVE-2019-5736).
 */
int cli_parse_create(const char *cmd, int argc, char **argv, struct cryo_cli *cli, struct cryo_create_opts *o,
		     bool *detach)
{
	static const struct option opts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "detach", no_argument, NULL, 'd' },
		{ "no-pivot", no_argument, NULL, 'N' },
		{ "no-new-keyring", no_argument, NULL, 'K' },
		{ "keep", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	int c;

	*o = (struct cryo_create_opts){ .root = cli->root, .bundle = "." };
	while ((c = cli_getopt(argc, argv, detach ? "+b:dh" : "+b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			o->bundle = optarg;
			break;
		case 'p':
			o->pid_file = optarg;
			break;
		case 'c':
			o->console_socket = optarg;
			break;
		case 'd':
			if (!detach)
				return cli_usage_error(cmd, "unknown option `--detach`");
			*detach = true;
			break;
		case 'k':
			if (!detach)
				return cli_usage_error(cmd, "unknown option `--keep`");
			o->keep = true;
			break;
		case 'N':
		case 'K':
			break;  /* accepted for runc compatibility */
		case 'h':
			printf("Usage: cryo %s [OPTIONS] ID\n"
			       "\n"
			       "  -b, --bundle DIR          the OCI bundle (default: the current directory)\n"
			       "      --pid-file FILE       write the init's pid to FILE\n"
			       "      --console-socket SOCK send the pty master to this unix socket (process.terminal)\n",
			       cmd);
			if (detach)
				printf("  -d, --detach              return once the container runs\n"
				       "      --keep                keep the stopped container (and its cgroup) for delete\n");
			printf("      --no-pivot, --no-new-keyring  accepted for runc compatibility\n");
			return -1;
		default:
			return cli_usage_error(cmd, "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error(cmd, "expects exactly one container id");
	o->id = argv[optind];
	if (cryo_sealexe_ensure(environ, &err) < 0)
		return cli_fail(&err);
	return 0;
}

int cmd_create(struct cryo_cli *cli, int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_create_opts o;
	int r;

	r = cli_parse_create("create", argc, argv, cli, &o, NULL);
	if (r != 0)
		return r < 0 ? 0 : r;
	if (cryo_container_create(&o, &err) < 0)
		return cli_fail(&err);
	return 0;
}
