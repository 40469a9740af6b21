// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo kill-all: signal every task of a container's cgroup (or --cgroup
 * PATH) so none escapes by forking: cgroup.kill on v2 for SIGKILL, else
 * freeze, signal each task, thaw. `cryo kill ID SIG --all` does the same.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cgtarget.h"
#include "cli.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 5000

static int parse_signal(const char *s, int *ret)
{
	uint64_t v;
	int sig;

	if (cryo_parse_u64(s, _NSIG - 1, &v) == 0 && v > 0) {
		*ret = (int)v;
		return 0;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (sig = 1; sig < SIGRTMIN; sig++) {
		const char *abbrev = sigabbrev_np(sig);

		if (abbrev && strcasecmp(abbrev, s) == 0) {
			*ret = sig;
			return 0;
		}
	}
	return -EINVAL;
}

int cmd_kill_all(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		CGTARGET_OPTIONS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	const char *cgroup = NULL, *id = NULL, *sigstr = "KILL";
	uint64_t timeout = DEFAULT_TIMEOUT_MS;
	struct cgtarget t;
	int c, r, sig = 0;

	while ((c = cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("Usage: cryo kill-all [--timeout MS] (ID | --cgroup PATH) [SIGNAL]\n\n"
			       "Send SIGNAL (default KILL) to every task of the cgroup so that none\n"
			       "escapes by forking; for KILL, wait up to MS (default %d) until the\n"
			       "cgroup is empty. Exit status: 0 done, 1 error, 2 usage, 3 tasks survived.\n",
			       DEFAULT_TIMEOUT_MS);
			return 0;
		default:
			r = cgtarget_opt("kill-all", c, optarg, &timeout, &cgroup);
			if (r != CLI_GO_ON)
				return r;
			break;
		}
	}
	if (!cgroup && optind < argc)
		id = argv[optind++];
	if (optind < argc)
		sigstr = argv[optind++];
	if (optind < argc)
		return cli_usage_error("kill-all", "unexpected argument `%s`", argv[optind]);
	if (!!id == !!cgroup)
		return cli_usage_error("kill-all", "give a container ID or --cgroup PATH (exactly one)");
	if (parse_signal(sigstr, &sig) < 0)
		return cli_usage_error("kill-all", "unknown signal `%s`", sigstr);

	r = cgtarget_open(&t, cli->root, id, cgroup, &err);
	if (r < 0)
		return cli_fail(&err);
	r = cryo_freezer_kill_all(t.f, sig, (int64_t)timeout, &err);
	if (r < 0)
		cryo_error_prefix(&err, "kill all of %s", t.what);
	cgtarget_close(&t);
	return r < 0 ? cgtarget_fail(r, &err) : 0;
}
