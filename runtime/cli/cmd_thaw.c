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
		CGTARGET_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cgtarget_cmd cmd = { .name = name, .plain = "thaw", .oci = oci, .opts = opts, .usage = usage };
	struct cryo_error err = CRYO_ERROR_INIT;
	const char *cgroup = NULL, *id = NULL;
	uint64_t timeout = DEFAULT_TIMEOUT_MS;
	unsigned strict = CRYO_FREEZER_STRICT;
	struct cgtarget t;
	int r;

	r = cgtarget_parse(&cmd, argc, argv, &timeout, &cgroup, &id);
	if (r != CLI_GO_ON)
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
