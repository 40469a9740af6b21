// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsfreeze.h"
#include "state.h"
#include "util.h"
#include "cli.h"
#include "cmd_fsfreeze.h"

#define DEFAULT_TIMEOUT_S 30
#define MAX_TIMEOUT_S 604800 /* a week */
#define MAX_KEEP 16

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: cryo fsfreeze [OPTIONS] ID|--path MOUNTPOINT [-- COMMAND...]\n"
		"       cryo fsfreeze --reset-timeout SECONDS ID|--path MOUNTPOINT\n"
		"\n"
		"Freeze the filesystem holding the container's rootfs (FIFREEZE) so a snapshot\n"
		"of it is consistent. It thaws by itself after the timeout, even if cryo is\n"
		"killed; `cryo fsthaw` thaws it earlier. With a COMMAND, run it while frozen\n"
		"and thaw when it exits (its exit status is returned).\n"
		"\n"
		"Options:\n"
		"  --path MOUNTPOINT        freeze this mount point instead of a container's rootfs\n"
		"  --timeout SECONDS        thaw by itself after SECONDS (default %d; 0 = never,\n"
		"                           needs --force: a freeze whose owner dies would stay)\n"
		"  --reset-timeout SECONDS  move the deadline of an existing freeze to SECONDS from now;\n"
		"                           fails if the deadline already thawed it (window lost)\n"
		"  --owner NAME             who holds the freeze (default: the ID, or `cli`)\n"
		"  --keep-writable DIR      refuse if DIR is on the frozen filesystem (image/staging dir)\n"
		"  --thaw-on-exit           with COMMAND: also thaw at once if cryo itself dies\n"
		"  --force                  freeze a path that is not a mount point (the whole filesystem\n"
		"                           freezes), or allow --timeout 0. Never lifts the refusals of\n"
		"                           the filesystems holding `/`, --root or a --keep-writable dir\n",
		DEFAULT_TIMEOUT_S);
}

static int parse_seconds(const char *opt, const char *s, uint64_t *ret)
{
	uint64_t v;

	if (cryo_parse_u64(s, MAX_TIMEOUT_S, &v) < 0)
		return cli_usage_error("fsfreeze", "%s wants whole seconds from 0 to %d, not `%s`", opt, MAX_TIMEOUT_S, s);
	*ret = v;
	return 0;
}

int cli_fsfreeze_parse(const struct cli_fsfreeze_cmd *cmd, int argc, char **argv, struct cryo_fsfreeze_opts *o,
		       const char **ret_path, const char **ret_id)
{
	const char *path = NULL, *id = NULL;
	int c, r;

	/* 0, not 1: glibc re-reads the ordering mode (main parses with "+") */
	optind = 0;
	while ((c = cli_getopt(argc, argv, "h", cmd->opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			path = optarg;
			continue;
		case 'o':
			o->owner = optarg;
			continue;
		case 'f':
			o->flags |= CRYO_FSFREEZE_FORCE;
			continue;
		case 'h':
			cmd->usage(stdout);
			return 0;
		default:
			r = cmd->opt ? cmd->opt(c, optarg, o, cmd->userdata) : cli_usage_error(cmd->name, "bad option");
			if (r != CLI_GO_ON)
				return r;
		}
	}
	if (!path) {
		if (optind >= argc)
			return cli_usage_error(cmd->name, "name a container ID or --path MOUNTPOINT");
		id = argv[optind++];
	}
	if (optind < argc)
		return cli_usage_error(cmd->name, "unexpected argument `%s`", argv[optind]);
	if (!o->owner)
		o->owner = id;
	*ret_path = path;
	*ret_id = id;
	return CLI_GO_ON;
}

/* The rootfs of container id, or path as given. */
int cli_fsfreeze_target(struct cryo_cli *cli, const char *id, const char *path, char *buf, size_t size,
			struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	int r;

	if (!path) {
		r = cryo_state_load(cli->root, id, &st, err);
		if (r < 0)
			return r;
		if (!st->rootfs || !*st->rootfs) {
			cryo_state_free(st);
			return cryo_error_setx(err, ENOENT, "container `%s` has no rootfs recorded", id);
		}
		path = st->rootfs;
	}
	r = snprintf(buf, size, "%s", path) >= (int)size ? -ENAMETOOLONG : 0;
	cryo_state_free(st);
	if (r < 0)
		return cryo_error_setx(err, ENAMETOOLONG, "path of `%s` is too long", id ? id : "--path");
	return 0;
}

int cli_fsfreeze_thaw(const char *target, const struct cryo_fsfreeze_opts *o)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_fsfreeze_thawed th = { 0 };

	if (cryo_fsfreeze_thaw(target, o, &th, &err) < 0)
		return cli_fail(&err);
	if (!th.thawed)
		printf("`%s` stays frozen: %u other hold(s)\n", target, th.holds_left);
	else if (th.frozen_us)
		printf("thawed `%s` (frozen %" PRIu64 ".%03" PRIu64 " ms)\n", target, th.frozen_us / 1000,
		       th.frozen_us % 1000);
	else
		printf("thawed `%s`\n", target);
	return 0;
}

static int run_frozen(char **argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execvp(argv[0], argv);
		fprintf(stderr, "cryo fsfreeze: run `%s`: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* fsfreeze's own options, besides CLI_FSFREEZE_OPTIONS */
struct fsfreeze_args {
	uint64_t timeout_s, reset_s;
	bool reset;
	const char *keep[MAX_KEEP + 2];
	size_t nkeep;
};

static int fsfreeze_opt(int c, const char *arg, struct cryo_fsfreeze_opts *o, void *userdata)
{
	struct fsfreeze_args *a = userdata;

	switch (c) {
	case 't':
		return parse_seconds("--timeout", arg, &a->timeout_s) < 0 ? 2 : CLI_GO_ON;
	case 'R':
		a->reset = true;
		return parse_seconds("--reset-timeout", arg, &a->reset_s) < 0 ? 2 : CLI_GO_ON;
	case 'k':
		if (a->nkeep >= MAX_KEEP)
			return cli_usage_error("fsfreeze", "at most %d --keep-writable", MAX_KEEP);
		a->keep[a->nkeep++] = arg;
		return CLI_GO_ON;
	case 'x':
		o->flags |= CRYO_FSFREEZE_THAW_ON_EXIT;
		return CLI_GO_ON;
	default:
		return cli_usage_error("fsfreeze", "bad option");
	}
}

int cmd_fsfreeze(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		CLI_FSFREEZE_OPTIONS,
		{ "timeout", required_argument, NULL, 't' },
		{ "reset-timeout", required_argument, NULL, 'R' },
		{ "keep-writable", required_argument, NULL, 'k' },
		{ "thaw-on-exit", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsfreeze_args a = { .timeout_s = DEFAULT_TIMEOUT_S };
	const struct cli_fsfreeze_cmd fc = {
		.name = "fsfreeze", .opts = opts, .usage = usage, .opt = fsfreeze_opt, .userdata = &a,
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_fsfreeze_opts o = { .state_dir = cli->root };
	const char *path = NULL, *id = NULL;
	char target[PATH_MAX];
	char **cmd = NULL;
	int c, r;

	/* options and the ID may come in any order before `--`; the COMMAND follows it */
	for (c = 1; c < argc; c++) {
		if (strcmp(argv[c], "--") == 0) {
			cmd = argv + c + 1;
			argc = c;
			break;
		}
	}
	r = cli_fsfreeze_parse(&fc, argc, argv, &o, &path, &id);
	if (r != CLI_GO_ON)
		return r;
	if (cmd && !*cmd)
		return cli_usage_error("fsfreeze", "no COMMAND after `--`");
	if (cmd && a.reset)
		return cli_usage_error("fsfreeze", "--reset-timeout takes no COMMAND");
	if ((o.flags & CRYO_FSFREEZE_THAW_ON_EXIT) && !cmd)
		return cli_usage_error("fsfreeze", "--thaw-on-exit needs a COMMAND (cryo fsfreeze exits right after freezing)");
	if (cli->log_path)
		a.keep[a.nkeep++] = cli->log_path;
	o.keep_writable = a.keep;

	if (a.reset && a.reset_s == 0 && !(o.flags & CRYO_FSFREEZE_FORCE))
		return cli_usage_error("fsfreeze", "--reset-timeout 0 removes the deadline: add --force if you mean it");
	if (!a.reset && a.timeout_s == 0 && !(o.flags & CRYO_FSFREEZE_FORCE))
		return cli_usage_error("fsfreeze", "--timeout 0 freezes without a deadline: add --force if you mean it");

	r = cli_fsfreeze_target(cli, id, path, target, sizeof(target), &err);
	if (r < 0)
		return cli_fail(&err);
	if (a.reset) {
		r = cryo_fsfreeze_reset_timeout(target, a.reset_s * 1000, &o, &err);
		return r < 0 ? cli_fail(&err) : 0;
	}

	r = cryo_fsfreeze_freeze(target, a.timeout_s * 1000, &o, &err);
	if (r < 0)
		return cli_fail(&err);
	if (cmd) {
		int status = run_frozen(cmd);

		o.flags &= ~CRYO_FSFREEZE_FORCE;
		r = cli_fsfreeze_thaw(target, &o);
		if (r)
			return r;
		if (status < 0) {
			fprintf(stderr, "cryo fsfreeze: run `%s`: %s\n", cmd[0], strerror(-status));
			return 1;
		}
		return status;
	}
	return 0;
}
