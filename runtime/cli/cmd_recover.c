// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo recover: undo every hold (cgroup freeze, ...) whose owner died or
 * whose deadline passed without its watchdog acting (the watchdog was
 * killed too, or the undo failed), from the journal in <root>/.holds,
 * and removes the staging dir of a checkpoint whose cryo died.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "freezer.h"
#include "fsfreeze.h"
#include "hold.h"
#include "network.h"
#include "migrate.h"
#include "restore.h"

static void report(const struct cryo_hold_rec *rec, const char *what, int r, void *userdata)
{
	unsigned *n = userdata;

	if (!rec) {
		fprintf(stderr, "cryo recover: %s\n", what);
		return;
	}
	if (r < 0)
		fprintf(stderr, "cryo recover: %s `%s` of hold `%s` failed: %s\n", cryo_hold_kind_names[rec->kind],
			rec->target, rec->name, what);
	else if (strcmp(what, "held") == 0 && (rec->flags & CRYO_HOLD_KMOD))
		printf("kept %s `%s`: hold `%s` is live (holder pid %d, held by cryo_freezer)\n",
		       cryo_hold_kind_names[rec->kind], rec->target, rec->name, rec->holder_pid);
	else if (strcmp(what, "held") == 0)
		printf("kept %s `%s`: hold `%s` is live (holder pid %d, watchdog pid %d)\n",
		       cryo_hold_kind_names[rec->kind], rec->target, rec->name, rec->holder_pid, rec->watchdog_pid);
	else {
		printf("%s `%s`: hold `%s` of dead pid %d%s\n", cryo_hold_kind_names[rec->kind], rec->target, rec->name,
		       rec->holder_pid, (rec->flags & CRYO_HOLD_KMOD) ? " (already thawed by cryo_freezer)" : "");
		(*n)++;
	}
}

static void fs_report(const char *mountpoint, const char *what, int r, void *userdata)
{
	unsigned *n = userdata;

	if (r < 0) {
		fprintf(stderr, "cryo recover: fs-thaw `%s` failed: %s\n", mountpoint ? mountpoint : "?", what ? what : "?");
	} else if (strcmp(what, "held") == 0) {
		printf("kept fs-freeze `%s`: its watchdog is live\n", mountpoint);
	} else {
		printf("fs-thaw `%s`: its watchdog died\n", mountpoint);
		(*n)++;
	}
}

int cmd_recover(struct cryo_cli *cli, int argc, char **argv)
{
	static const cryo_hold_undo_fn undo[_CRYO_HOLD_KIND_MAX] = {
		[CRYO_HOLD_CGROUP_THAW] = cryo_freezer_hold_undo,
		[CRYO_HOLD_FS_THAW] = cryo_fsfreeze_hold_undo,
		[CRYO_HOLD_STAGING] = cryo_hold_staging_undo,
		[CRYO_HOLD_CGROUP_KILL] = cryo_freezer_kill_undo,
		[CRYO_HOLD_LINK_UP] = cryo_network_hold_undo,
		[CRYO_HOLD_RESTORE] = cryo_restore_hold_undo,
		[CRYO_HOLD_BUNDLE] = cryo_receive_bundle_undo,
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	unsigned n = 0;
	int r;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: cryo recover\n\n"
		       "Thaw whatever a dead cryo left frozen: every journalled hold in\n"
		       "<root>/.holds whose holder died or whose deadline passed is undone\n"
		       "(a frozen cgroup or filesystem thawed, a checkpoint's staging dir removed,\n"
		       "the rootfs a restore staged put back).\n"
		       "Exit status: 0 done, 1 some undo failed (the entry is kept).\n");
		return 0;
	}
	if (argc > 1)
		return cli_usage_error("recover", "unexpected argument `%s`", argv[1]);
	r = cryo_hold_recover(cli->root, undo, report, &n, &err);
	if (r < 0)
		return cli_fail(&err);
	r = cryo_fsfreeze_recover(cli->root, fs_report, &n, &err);
	if (r < 0)
		return cli_fail(&err);
	printf("recovered %u hold%s\n", n, n == 1 ? "" : "s");
	return 0;
}
