// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec-example.h"
#include "util.h"
#include "cli.h"

int cmd_spec(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "rootless", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1, fd = -1;
	const char *bundle = ".";
	bool rootless = false;
	int c;

	while ((c = cli_getopt(argc, argv, "+b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			bundle = optarg;
			break;
		case 'r':
			rootless = true;
			break;
		case 'h':
			printf("Usage: cryo spec [--bundle DIR] [--rootless]\n\nWrite a default config.json into DIR.\n");
			return 0;
		default:
			return cli_usage_error("spec", "bad option");
		}
	}
	if (optind != argc)
		return cli_usage_error("spec", "takes no arguments");
	if (cryo_spec_example(rootless, &text, &err) < 0)
		return cli_fail(&err);
	dfd = open(bundle, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0) {
		cryo_error_set(&err, errno, "open bundle `%s`", bundle);
		return cli_fail(&err);
	}
	/* like runc: never overwrite an existing config */
	fd = openat(dfd, "config.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		cryo_error_set(&err, errno, "create `%s/config.json`", bundle);
		return cli_fail(&err);
	}
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		cryo_error_set(&err, errno, "write `%s/config.json`", bundle);
		return cli_fail(&err);
	}
	return 0;
}
