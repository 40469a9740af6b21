// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <seccomp.h>

#include "log.h"
#include "version.h"
#include "cli.h"

/* A row without a name starts a group: its summary is the heading in --help. */
#define GROUP(heading) { NULL, heading, NULL }

static const struct cli_command commands[] = {
	/* lifecycle: the OCI runtime commands */
	GROUP("Container lifecycle (OCI)"),
	{ "create", "create a container from a bundle (it waits for start)", cmd_create },
	{ "start", "start the process of a created container", cmd_start },
	{ "run", "create and start a container; returns its exit code", cmd_run },
	{ "exec", "run a new process in a running container", cmd_exec },
	{ "state", "print the OCI state of a container (JSON)", cmd_state },
	{ "kill", "send a signal to a container", cmd_kill },
	{ "delete", "remove a container", cmd_delete },
	{ "list", "list containers", cmd_list },
	{ "ps", "list the processes of a container", cmd_ps },
	{ "update", "change a container's resource limits (runc's flags or --resources FILE)", cmd_update },
	{ "events", "resource statistics and OOM events of a container (JSON)", cmd_events },
	{ "spec", "write a default config.json", cmd_spec },
	/* freezer: cgroup freezes, their holds and what undoes them */
	GROUP("Freezer"),
	{ "freeze", "freeze a container (or --cgroup) and wait until FROZEN", cmd_freeze },
	{ "thaw", "thaw a container (or --cgroup); cancels FREEZING", cmd_thaw },
	{ "pause", "OCI name of freeze", cmd_pause },
	{ "resume", "OCI name of thaw", cmd_resume },
	{ "kill-all", "signal every task of a container (or --cgroup), none escapes", cmd_kill_all },
	{ "freezer-state", "print RUNNING, FREEZING or FROZEN for a container (or --cgroup)", cmd_freezer_state },
	{ "recover", "thaw whatever a dead cryo left frozen (journal of holds)", cmd_recover },
	{ "sleep-hook", "system-sleep hook: keep frozen containers frozen across suspend/resume", cmd_sleep_hook },
	/* fsfreeze: FIFREEZE of a container's rootfs, always with a deadline */
	GROUP("Filesystem freeze"),
	{ "fsfreeze", "freeze a container's rootfs filesystem, with a deadline", cmd_fsfreeze },
	{ "fsthaw", "thaw a filesystem frozen by `cryo fsfreeze`", cmd_fsthaw },
	/* checkpoint: CRIU images of containers and whether this host can make them */
	GROUP("Checkpoint/restore"),
	{ "checkpoint", "checkpoint a container (freeze, snapshot, CRIU dump, atomic image)", cmd_checkpoint },
	{ "restore", "restore a container from a checkpoint image", cmd_restore },
	{ "inspect", "print a checkpoint image's manifest", cmd_inspect },
	{ "check", "can this host checkpoint and restore? (CRIU, kernel, breakpoints)", cmd_check },
	{ "migrate", "move a running container to another host (ssh:// or tls://)", cmd_migrate },
	{ "receive", "the destination end of `cryo migrate`", cmd_receive },
	/* misc */
	GROUP("Other"),
	{ "features", "print what this build and host support (JSON)", cmd_features },
};

int cli_fail(struct cryo_error *err)
{
	const char *msg = err && err->msg ? err->msg : "unknown error";

	/* stderr for a person, the --log file for a client (runc does both) */
	fprintf(stderr, "cryo: %s\n", msg);
	if (cryo_log_to_file())
		cryo_err("%s", msg);
	cryo_error_clear(err);
	return 1;
}

int cli_exit_status(int r, int status, struct cryo_error *err)
{
	if (r >= 0)
		return status;
	if (!status)
		return cli_fail(err);
	/* the process ran and exited: its status wins over trouble after */
	fprintf(stderr, "cryo: %s\n", err->msg ? err->msg : "unknown error");
	if (cryo_log_to_file())
		cryo_warn("%s", err->msg ? err->msg : "unknown error");
	cryo_error_clear(err);
	return status;
}

static void usage(FILE *out)
{
	size_t i;

	fprintf(out,
		"Usage: cryo [GLOBAL OPTIONS] COMMAND [ARGS...]\n"
		"\n"
		"cryo is an OCI container runtime built for consistent, crash-safe\n"
		"checkpoint/restore and migration of containers.\n"
		"\n"
		"Global options:\n"
		"  --root DIR            state directory (default /run/cryo)\n"
		"  --log FILE            write diagnostics to FILE\n"
		"  --log-format FORMAT   text or json\n"
		"  --debug               verbose diagnostics (runc's level=debug lines)\n"
		"  --systemd-cgroup      accepted for compatibility, ignored\n"
		"  --rootless BOOL       accepted for compatibility (true, false or auto)\n"
		"  --criu PATH           the criu binary to run (sets CRYO_CRIU)\n"
		"Every long option takes one dash or two (`-root DIR` = `--root DIR`).\n"
		"  -v, --version         print the version\n"
		"  -h, --help            print this help\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!commands[i].name)
			fprintf(out, "\n%s:\n", commands[i].summary);
		else
			fprintf(out, "  %-14s %s\n", commands[i].name, commands[i].summary);
	}
}

static void print_version(void)
{
	const struct scmp_version *sv = seccomp_version();

	/* runc's layout: clients parse the first line and `spec:` */
	printf("cryo version %s\nspec: %s\n", CRYO_VERSION, CRYO_OCI_VERSION);
	if (sv)
		printf("libseccomp: %u.%u.%u\n", sv->major, sv->minor, sv->micro);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "log", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "systemd-cgroup", no_argument, NULL, 's' },
		{ "rootless", required_argument, NULL, 'R' },
		{ "criu", required_argument, NULL, 'C' },
		{ "version", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_cli cli = { .root = "/run/cryo" };
	const char *bad_format = NULL;
	bool bad = false;
	size_t i;
	int c, r;

	while (!bad && (c = cli_getopt(argc, argv, "+vh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			cli.root = optarg;
			break;
		case 'l':
			cli.log_path = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "json") == 0)
				cli.log_json = true;
			else if (strcmp(optarg, "text") != 0)
				bad_format = optarg;
			break;
		case 'd':
			cli.debug = true;
			break;
		case 's':
			cli.systemd_cgroup = true;
			break;
		case 'R':
			if (strcmp(optarg, "true") != 0 && strcmp(optarg, "false") != 0 && strcmp(optarg, "auto") != 0) {
				cli_usage_error("", "--rootless must be `true`, `false` or `auto`, not `%s`", optarg);
				bad = true;
			}
			break;
		case 'C':
			if (setenv("CRYO_CRIU", optarg, 1) < 0)
				bad = true;
			break;
		case 'v':
			print_version();
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			bad = true;
			break;
		}
	}

	/* the log first, so that even a bad global option reaches --log */
	r = cryo_log_init(cli.log_path, cli.log_json ? CRYO_LOG_JSON : CRYO_LOG_TEXT, cli.debug);
	if (r < 0) {
		fprintf(stderr, "cryo: open log `%s`: %s\n", cli.log_path, strerror(-r));
		return 1;
	}
	if (bad_format && !bad) {
		cli_usage_error("", "--log-format must be `text` or `json`, not `%s`", bad_format);
		bad = true;
	} else if (bad && cli_last_usage_error() && cryo_log_to_file()) {
		/* reported before the log was open: now to the log too */
		cryo_err("%s", cli_last_usage_error());
	}
	if (bad) {
		cryo_log_close();
		return 2;
	}
	if (optind >= argc) {
		cli_usage_error("", "no command given");
		usage(stderr);
		cryo_log_close();
		return 2;
	}

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (commands[i].name && strcmp(commands[i].name, argv[optind]) == 0) {
			/* the subcommand sees argv starting at its own name */
			char **sub = argv + optind;
			int subc = argc - optind;

			cryo_debug("cryo %s: %s (root %s)", CRYO_VERSION, commands[i].name, cli.root);
			cli_command_name = commands[i].name;
			/*
			 * optind = 0 makes glibc re-initialise getopt entirely, so the
			 * subcommand's own optstring (without our leading `+`) is used
			 * and options may follow operands (`freeze ID --timeout 5`).
			 */
			optind = 0;
			r = commands[i].run(&cli, subc, sub);
			cryo_log_close();
			return r;
		}
	}
	/* `cryo foo --help`: runc's words for it (its CLI library's) */
	if (optind + 1 < argc && (strcmp(argv[optind + 1], "-h") == 0 || strcmp(argv[optind + 1], "--help") == 0))
		cli_usage_error("", "No help topic for '%s': unknown command `%s`", argv[optind], argv[optind]);
	else
		cli_usage_error("", "unknown command `%s`", argv[optind]);
	cryo_log_close();
	return 2;
}
