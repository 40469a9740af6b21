// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo thaw / cryo resume: thaw a container's cgroup (or --cgroup PATH);
 * from FREEZING this cancels the freeze. A hold left by
 * `cryo freeze --deadline` is released first so its watchdog stands down
 * (or, with cryo_freezer.ko, its kernel hold is dropped).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cgtarget.h"
#include "cli.h"
#include "freezer.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 5000

static void usage(const char *name, FILE *out)
{
	fprintf(out,
		"Usage: cryo %s [--timeout MS] ID\n"
		"       cryo %s [--timeout MS] --cgroup PATH\n"
		"\n"
		"Thaw the container's cgroup (cancels a freeze still FREEZING) and wait\n"
		"until it runs again.\n"
		"\n"
		"Exit status: 0 thawed, 1 error (e.g. it was not frozen), 2 usage.\n",
		name, name);
}

static int run_thaw(const char *name, bool oci, struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	const char *cgroup = NULL, *id = NULL;
	uint64_t timeout = DEFAULT_TIMEOUT_MS;
	unsigned strict = CRYO_FREEZER_STRICT;
	struct cgtarget t;
	int c, r;

	while ((c = cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (cryo_parse_u64(optarg, 24ULL * 3600 * 1000, &timeout) < 0)
				return cli_usage_error(name, "--timeout wants milliseconds, not `%s`", optarg);
			break;
		case 'c':
			cgroup = optarg;
			break;
		case 'h':
			usage(name, stdout);
			return 0;
		default:
			return cli_usage_error(name, "unknown option");
		}
	}
	r = cgtarget_operands(name, "thaw", oci, argc, argv, cgroup, &id);
	if (r)
		return r;

	r = cgtarget_open_live(&t, cli->root, id, cgroup, "paused", &err);
	if (r < 0)
		return cli_fail(&err);
	/* a hold `cryo freeze --deadline` left (journal, watchdog, kernel hold) ends first */
	r = cryo_freezer_thaw_named(t.f, cli->root, t.hold_name, (int64_t)timeout, strict, &err);
	if (r < 0) {
		cryo_error_prefix(&err, "thaw %s", t.what);
		goto out;
	}
	r = cgtarget_set_status(&t, cli->root, CRYO_STATUS_RUNNING, &err);
out:
	cgtarget_close(&t);
	return r < 0 ? cli_fail(&err) : 0;
}

int cmd_thaw(struct cryo_cli *cli, int argc, char **argv)
{
	return run_thaw("thaw", false, cli, argc, argv);
}

int cmd_resume(struct cryo_cli *cli, int argc, char **argv)
{
	return run_thaw("resume", true, cli, argc, argv);
}
