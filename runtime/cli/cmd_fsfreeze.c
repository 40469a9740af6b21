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

int cli_fsfreeze_operands(const char *name, int argc, char **argv, const char *path, const char **ret_id)
{
	const char *id = NULL;

	if (!path) {
		if (optind >= argc)
			return cli_usage_error(name, "name a container ID or --path MOUNTPOINT");
		id = argv[optind++];
	}
	if (optind < argc)
		return cli_usage_error(name, "unexpected argument `%s`", argv[optind]);
	*ret_id = id;
	return 0;
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

void cli_fsfreeze_print_thawed(const char *target, const struct cryo_fsfreeze_thawed *th)
{
	if (!th->thawed)
		printf("`%s` stays frozen: %u other hold(s)\n", target, th->holds_left);
	else if (th->frozen_us)
		printf("thawed `%s` (frozen %" PRIu64 ".%03" PRIu64 " ms)\n", target, th->frozen_us / 1000,
		       th->frozen_us % 1000);
	else
		printf("thawed `%s`\n", target);
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

int cmd_fsfreeze(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "path", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "reset-timeout", required_argument, NULL, 'R' },
		{ "owner", required_argument, NULL, 'o' },
		{ "keep-writable", required_argument, NULL, 'k' },
		{ "thaw-on-exit", no_argument, NULL, 'x' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_fsfreeze_opts o = { .state_dir = cli->root };
	const char *keep[MAX_KEEP + 2] = { 0 }, *path = NULL, *id = NULL;
	char target[PATH_MAX];
	uint64_t timeout_s = DEFAULT_TIMEOUT_S, reset_s = 0;
	bool reset = false;
	size_t nkeep = 0;
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
	/* 0, not 1: glibc re-reads the ordering mode (main parses with "+") */
	optind = 0;
	while ((c = cli_getopt(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			path = optarg;
			break;
		case 't':
			if (parse_seconds("--timeout", optarg, &timeout_s) < 0)
				return 2;
			break;
		case 'R':
			if (parse_seconds("--reset-timeout", optarg, &reset_s) < 0)
				return 2;
			reset = true;
			break;
		case 'o':
			o.owner = optarg;
			break;
		case 'k':
			if (nkeep >= MAX_KEEP)
				return cli_usage_error("fsfreeze", "at most %d --keep-writable", MAX_KEEP);
			keep[nkeep++] = optarg;
			break;
		case 'x':
			o.flags |= CRYO_FSFREEZE_THAW_ON_EXIT;
			break;
		case 'f':
			o.flags |= CRYO_FSFREEZE_FORCE;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return cli_usage_error("fsfreeze", "bad option");
		}
	}
	r = cli_fsfreeze_operands("fsfreeze", argc, argv, path, &id);
	if (r)
		return r;
	if (cmd && !*cmd)
		return cli_usage_error("fsfreeze", "no COMMAND after `--`");
	if (cmd && reset)
		return cli_usage_error("fsfreeze", "--reset-timeout takes no COMMAND");
	if (!o.owner)
		o.owner = id;
	if ((o.flags & CRYO_FSFREEZE_THAW_ON_EXIT) && !cmd)
		return cli_usage_error("fsfreeze", "--thaw-on-exit needs a COMMAND (cryo fsfreeze exits right after freezing)");
	if (cli->log_path)
		keep[nkeep++] = cli->log_path;
	o.keep_writable = keep;

	if (reset && reset_s == 0 && !(o.flags & CRYO_FSFREEZE_FORCE))
		return cli_usage_error("fsfreeze", "--reset-timeout 0 removes the deadline: add --force if you mean it");
	if (!reset && timeout_s == 0 && !(o.flags & CRYO_FSFREEZE_FORCE))
		return cli_usage_error("fsfreeze", "--timeout 0 freezes without a deadline: add --force if you mean it");

	r = cli_fsfreeze_target(cli, id, path, target, sizeof(target), &err);
	if (r < 0)
		return cli_fail(&err);
	if (reset) {
		r = cryo_fsfreeze_reset_timeout(target, reset_s * 1000, &o, &err);
		return r < 0 ? cli_fail(&err) : 0;
	}

	r = cryo_fsfreeze_freeze(target, timeout_s * 1000, &o, &err);
	if (r < 0)
		return cli_fail(&err);
	if (cmd) {
		struct cryo_fsfreeze_thawed th = { 0 };
		int status = run_frozen(cmd);

		o.flags &= ~CRYO_FSFREEZE_FORCE;
		r = cryo_fsfreeze_thaw(target, &o, &th, &err);
		if (r < 0)
			return cli_fail(&err);
		cli_fsfreeze_print_thawed(target, &th);
		if (status < 0) {
			fprintf(stderr, "cryo fsfreeze: run `%s`: %s\n", cmd[0], strerror(-status));
			return 1;
		}
		return status;
	}
	return 0;
}
