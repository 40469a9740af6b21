// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "restore.h"
#include "cli.h"
#include "criu-flags.h"

int cmd_restore(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "image-path", required_argument, NULL, 'i' },
		{ "work-path", required_argument, NULL, 'w' },
		{ "bundle", required_argument, NULL, 'b' },
		{ "detach", no_argument, NULL, 'd' },
		{ "pid-file", required_argument, NULL, 'p' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "tcp-close", no_argument, NULL, 'C' },
		CLI_CRIU_FLAG_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_restore_opts o = { .root = cli->root };
	pid_t pid = 0;
	int c, status = 0;

	while ((c = cli_getopt(argc, argv, "db:h", opts, NULL)) != -1) {
		int rc = cli_criu_flag("restore", c, optarg, &o.criu);

		if (rc >= 0) {
			if (rc > 0)
				return rc;
			continue;
		}
		switch (c) {
		case 'i':
			o.image_path = optarg;
			break;
		case 'w':
			o.work_path = optarg;
			break;
		case 'b':
			o.bundle = optarg;
			break;
		case 'd':
			o.detach = true;
			break;
		case 'p':
			o.pid_file = optarg;
			break;
		case 'c':
			o.console_socket = optarg;
			break;
		case 'C':
			o.tcp_close = true;
			break;
		case 'h':
			printf("Usage: cryo restore [OPTIONS] ID\n\n"
			       "Verify a checkpoint image (manifest and every file's sha256), put the rootfs\n"
			       "back from its snapshot and restore the container with CRIU.\n\n"
			       "  --image-path DIR   the image (default ./checkpoint)\n"
			       "  --work-path DIR    CRIU's work dir and log (default <root>/.restore/<ID>;\n"
			       "                     once restored the log moves to <root>/<ID>/criu)\n"
			       "  --bundle DIR       bundle (default: the one recorded in the image)\n"
			       "  -d, --detach       return once restored\n"
			       "  --pid-file FILE    write the init's pid\n"
			       "  --console-socket S accepted for compatibility\n"
			       "  --tcp-close        drop established TCP connections\n" CLI_CRIU_FLAG_HELP);
			return 0;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error("restore", "expects exactly one container id");
	o.id = argv[optind];
	if (cryo_restore(&o, &pid, o.detach ? NULL : &status, &err) < 0)
		return cli_fail(&err);
	return o.detach ? 0 : status;
}
