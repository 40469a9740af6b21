/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The cryo command line: global options (runc compatible) and the table of
 * subcommands. Each subcommand lives in its own cmd_<name>.c, parses its own
 * options, calls one libcryo entry point and returns an exit status; the
 * one final error is printed by cli_fail().
 */
#ifndef CRYO_CLI_H
#define CRYO_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "error.h"

struct cryo_cli {
	const char *root;       /* --root, state dir; default /run/cryo */
	const char *log_path;   /* --log */
	bool log_json;          /* --log-format json */
	bool debug;             /* --debug */
	bool systemd_cgroup;    /* --systemd-cgroup (accepted, ignored) */
};

struct cli_command {
	const char *name;
	const char *summary;
	int (*run)(struct cryo_cli *cli, int argc, char **argv);
};

/* Print "cryo: <msg>" to stderr and the --log file, clear err, return 1. */
int cli_fail(struct cryo_error *err);
/*
 * The exit status of a command that ran a process (run, exec): its
 * status; when r < 0 the error too, and 1 if the process never exited
 * with a status of its own.
 */
int cli_exit_status(int r, int status, struct cryo_error *err);
/*
 * Print a usage error for cmd to stderr and the --log file and return 2.
 * Only the first one of a run is printed: a command's `default:` branch
 * calling it after cli_getopt() reported the precise problem adds nothing.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The usage error reported so far ("cmd: msg"), or NULL. */
const char *cli_last_usage_error(void);

/*
 * getopt_long() as every command calls it, with runc's conventions: each
 * long option is taken with one dash or two (`-no-subreaper`), short
 * options and their clusters (`-dt`) still work where the command has
 * them, and a bad option is reported once through cli_usage_error()
 * (stderr and --log); '?' is returned for it, as getopt does.
 */
int cli_getopt(int argc, char *const argv[], const char *optstring, const struct option *longopts, int *longindex);
/*
 * What a helper that takes one of a command's options returns when it
 * took it and parsing goes on; any other value is the status the command
 * ends with.
 */
#define CLI_GO_ON (-1)

/* The subcommand being run, for messages (set by main). */
extern const char *cli_command_name;

/*
 * Subcommands: one function each. Adding a command = one cmd_<name>.c and
 * one row in the table in main.c.
 */
int cmd_features(struct cryo_cli *cli, int argc, char **argv);
int cmd_check(struct cryo_cli *cli, int argc, char **argv);
int cmd_checkpoint(struct cryo_cli *cli, int argc, char **argv);
int cmd_restore(struct cryo_cli *cli, int argc, char **argv);
int cmd_inspect(struct cryo_cli *cli, int argc, char **argv);
int cmd_fsfreeze(struct cryo_cli *cli, int argc, char **argv);
int cmd_fsthaw(struct cryo_cli *cli, int argc, char **argv);
int cmd_freeze(struct cryo_cli *cli, int argc, char **argv);
int cmd_thaw(struct cryo_cli *cli, int argc, char **argv);
int cmd_pause(struct cryo_cli *cli, int argc, char **argv);
int cmd_resume(struct cryo_cli *cli, int argc, char **argv);
int cmd_kill_all(struct cryo_cli *cli, int argc, char **argv);
int cmd_freezer_state(struct cryo_cli *cli, int argc, char **argv);
int cmd_recover(struct cryo_cli *cli, int argc, char **argv);
int cmd_sleep_hook(struct cryo_cli *cli, int argc, char **argv);
int cmd_create(struct cryo_cli *cli, int argc, char **argv);
int cmd_start(struct cryo_cli *cli, int argc, char **argv);
int cmd_run(struct cryo_cli *cli, int argc, char **argv);
int cmd_exec(struct cryo_cli *cli, int argc, char **argv);
int cmd_state(struct cryo_cli *cli, int argc, char **argv);
int cmd_kill(struct cryo_cli *cli, int argc, char **argv);
int cmd_delete(struct cryo_cli *cli, int argc, char **argv);
int cmd_list(struct cryo_cli *cli, int argc, char **argv);
int cmd_ps(struct cryo_cli *cli, int argc, char **argv);
int cmd_spec(struct cryo_cli *cli, int argc, char **argv);
int cmd_update(struct cryo_cli *cli, int argc, char **argv);
int cmd_events(struct cryo_cli *cli, int argc, char **argv);
int cmd_migrate(struct cryo_cli *cli, int argc, char **argv);
int cmd_receive(struct cryo_cli *cli, int argc, char **argv);

struct cryo_create_opts;
/* create/run option parsing; <0 = help printed, >0 = exit status */
int cli_parse_create(const char *cmd, int argc, char **argv, struct cryo_cli *cli, struct cryo_create_opts *o,
		     bool *detach);

#endif
