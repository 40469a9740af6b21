// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo freeze / cryo pause: freeze a container's cgroup (or any cgroup
 * with --cgroup) and wait until it is FROZEN.
 *
 * --deadline MS journals a hold whose watchdog thaws the cgroup MS from
 * now unless `cryo thaw` comes first; --hold MS keeps cryo itself holding
 * the freeze for MS (a stand-in for the frozen window of a checkpoint):
 * if cryo dies meanwhile, its watchdog thaws at once.
 *
 * With cryo_freezer.ko loaded the kernel is the watchdog: --deadline is a
 * detached kmod hold that outlives cryo and thaws at the deadline, --hold
 * a hold on cryo's own /dev/cryo_freezer fd that the kernel undoes the
 * moment cryo dies. The journal entry is written either way, so `cryo
 * thaw` and `cryo recover` know about the hold.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cgtarget.h"
#include "cli.h"
#include "hold.h"
#include "log.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 5000
#define HOLD_GRACE_MS 1000

static void usage(const char *name, FILE *out)
{
	fprintf(out,
		"Usage: cryo %s [OPTIONS] ID\n"
		"       cryo %s [OPTIONS] --cgroup PATH\n"
		"\n"
		"Freeze every task of the container and wait until the cgroup is FROZEN.\n"
		"If some task can't freeze in time (e.g. it sleeps uninterruptibly on a\n"
		"frozen filesystem), cryo retries with backoff until the timeout, then\n"
		"thaws the cgroup back and names the tasks that blocked it.\n"
		"\n"
		"Options:\n"
		"  --timeout MS       how long to wait for FROZEN (default %d)\n"
		"  --keep-freezing    on timeout leave the cgroup FREEZING (freeze again to retry,\n"
		"                     thaw to cancel) instead of thawing back\n"
		"  --thaw-retry       retry by thawing and freezing again (default on cgroup v1)\n"
		"  --deadline MS      thaw automatically MS from now unless `cryo thaw` comes first\n"
		"  --hold MS          stay and hold the freeze for MS, then thaw; if cryo dies,\n"
		"                     its watchdog thaws at once\n"
		"  --cgroup PATH      freeze this cgroup directory instead of a container\n"
		"\n"
		"Exit status: 0 frozen, 1 error, 2 usage, 3 the cgroup did not freeze in time\n"
		"(EBUSY; thawed back, or left FREEZING with --keep-freezing).\n",
		name, name, DEFAULT_TIMEOUT_MS);
}

/* Sleep up to ms, cut short by SIGINT/SIGTERM so the hold ends cleanly. */
static void hold_for(uint64_t ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
	sigset_t set, old;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, &old);
	while (sigtimedwait(&set, NULL, &ts) < 0 && errno == EINTR)
		;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* freeze's own options, besides --timeout and --cgroup */
struct freeze_args {
	unsigned flags;
	bool thaw_retry;
	uint64_t deadline, hold_ms;
};

static int freeze_opt(const char *name, int c, const char *arg, void *userdata)
{
	struct freeze_args *a = userdata;

	switch (c) {
	case 'k':
		a->flags |= CRYO_FREEZER_KEEP_FREEZING;
		return CLI_GO_ON;
	case 'r':
		a->thaw_retry = true;
		return CLI_GO_ON;
	case 'd':
		if (cryo_parse_u64(arg, 24ULL * 3600 * 1000, &a->deadline) < 0 || a->deadline == 0)
			return cli_usage_error(name, "--deadline wants milliseconds > 0, not `%s`", arg);
		return CLI_GO_ON;
	case 'H':
		if (cryo_parse_u64(arg, 24ULL * 3600 * 1000, &a->hold_ms) < 0 || a->hold_ms == 0)
			return cli_usage_error(name, "--hold wants milliseconds > 0, not `%s`", arg);
		return CLI_GO_ON;
	default:
		return cli_usage_error(name, "unknown option");
	}
}

static int run_freeze(const char *name, bool oci, struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		CGTARGET_OPTIONS,
		{ "keep-freezing", no_argument, NULL, 'k' },
		{ "thaw-retry", no_argument, NULL, 'r' },
		{ "deadline", required_argument, NULL, 'd' },
		{ "hold", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct freeze_args a = { .flags = CRYO_FREEZER_STRICT };
	const struct cgtarget_cmd cmd = {
		.name = name, .plain = "freeze", .oci = oci, .opts = opts, .usage = usage, .opt = freeze_opt, .userdata = &a,
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	uint64_t timeout = DEFAULT_TIMEOUT_MS;
	const char *cgroup = NULL, *id = NULL;
	struct cryo_hold *hold = NULL;
	struct cgtarget t;
	int r;

	r = cgtarget_parse(&cmd, argc, argv, &timeout, &cgroup, &id);
	if (r != CLI_GO_ON)
		return r;
	if (a.deadline && a.hold_ms)
		return cli_usage_error(name, "--deadline and --hold exclude each other");

	r = cgtarget_open_live(&t, cli->root, id, cgroup, "running", &err);
	if (r < 0)
		return cli_fail(&err);
	/* v1 tasks can miss a single kick; a thaw + freeze catches them */
	if (a.thaw_retry || cryo_freezer_backend_of(t.f) == CRYO_FREEZER_V1)
		a.flags |= CRYO_FREEZER_THAW_RETRY;

	if (a.deadline || a.hold_ms) {
		struct cryo_freezer_hold_opts ho = {
			.root = cli->root,
			.name = t.hold_name,
			.deadline_ms = a.deadline ? a.deadline : a.hold_ms + HOLD_GRACE_MS,
			.detached = a.deadline != 0,
		};

		r = cryo_freezer_freeze_held(t.f, (int64_t)timeout, a.flags, &ho, &hold, &err);
	} else {
		r = cryo_freezer_freeze(t.f, (int64_t)timeout, a.flags, &err);
	}
	if (r < 0) {
		cryo_error_prefix(&err, "freeze %s", t.what);
		goto fail;
	}
	r = cgtarget_set_status(&t, cli->root, CRYO_STATUS_PAUSED, &err);
	if (r < 0)
		goto fail_thaw;

	if (a.hold_ms) {
		hold_for(a.hold_ms);
		/* -ETIME: the deadline thawed it first */
		r = cryo_freezer_thaw_held(t.f, TAKE_PTR(hold), DEFAULT_TIMEOUT_MS, 0, &err);
		if (r < 0 && r != -ETIME)
			goto fail;
		cryo_error_clear(&err);
		r = cgtarget_set_status(&t, cli->root, CRYO_STATUS_RUNNING, &err);
		if (r < 0)
			goto fail;
	} else if (hold) {
		/* the watchdog (or the module) and the journal carry the hold from here */
		cryo_hold_free(TAKE_PTR(hold));
	}
	cgtarget_close(&t);
	return 0;

fail_thaw:
	{
		struct cryo_error terr = CRYO_ERROR_INIT;

		if (cryo_freezer_thaw_held(t.f, TAKE_PTR(hold), DEFAULT_TIMEOUT_MS, 0, &terr) < 0) {
			cryo_warn("thaw back %s: %s", t.what, terr.msg);
			cryo_error_clear(&terr);
		}
	}
fail:
	cgtarget_close(&t);
	return cgtarget_fail(r, &err);
}

int cmd_freeze(struct cryo_cli *cli, int argc, char **argv)
{
	return run_freeze("freeze", false, cli, argc, argv);
}

int cmd_pause(struct cryo_cli *cli, int argc, char **argv)
{
	return run_freeze("pause", true, cli, argc, argv);
}
