// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo sleep-hook pre|post [ACTION]: called by systemd's system-sleep
 * hook (hooks/cryo-system-sleep) around suspend/hibernate.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "sleep.h"
#include "util.h"

int cmd_sleep_hook(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_sleep_report rep;
	uint64_t timeout_ms = 5000;
	int c, r;

	while ((c = cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (cryo_parse_u64(optarg, 600000, &timeout_ms) < 0)
				return cli_usage_error("sleep-hook", "--timeout takes milliseconds (0..600000), not `%s`",
						       optarg);
			break;
		case 'h':
			printf("Usage: cryo sleep-hook [--timeout MS] pre|post [suspend|hibernate|hybrid-sleep|suspend-then-hibernate]\n\n"
			       "pre: record the containers that are FROZEN; post: freeze again any of them\n"
			       "that the suspend/resume cycle thawed (frozen containers stay frozen).\n");
			return 0;
		default:
			return cli_usage_error("sleep-hook", "unknown option");
		}
	}
	if (optind >= argc || argc - optind > 2)
		return cli_usage_error("sleep-hook", "expected `pre` or `post` and an optional sleep action");

	if (strcmp(argv[optind], "pre") == 0) {
		r = cryo_sleep_pre(cli->root, &rep, &err);
		if (r < 0)
			return cli_fail(&err);
		printf("sleep-hook pre: %u frozen container(s) recorded\n", rep.recorded);
	} else if (strcmp(argv[optind], "post") == 0) {
		r = cryo_sleep_post(cli->root, (int64_t)timeout_ms, &rep, &err);
		if (r < 0)
			return cli_fail(&err);
		printf("sleep-hook post: %u recorded, %u checked, %u frozen again, %u gone\n", rep.recorded,
		       rep.checked, rep.refrozen, rep.vanished);
	} else {
		return cli_usage_error("sleep-hook", "expected `pre` or `post`, not `%s`", argv[optind]);
	}
	return 0;
}
