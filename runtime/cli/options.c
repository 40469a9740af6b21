// SPDX-License-Identifier: GPL-2.0-only
/*
 * Option parsing shared by every command, and the usage errors it gives.
 *
 * runc's CLI library takes every long option with one dash or two
 * (`-no-subreaper` and `--no-subreaper`), and containerd's Go client of
 * runtimes relies on it (it sends `restore ... -no-subreaper`). glibc's
 * getopt_long_only() has those semantics: an argument starting with one
 * dash is first tried as a long option, and only when no long option
 * matches does it fall back to the short options — so single-letter
 * options (`-d`), their clusters (`-dt`, `-qf json`) and attached values
 * (`-bDIR`) keep working wherever a command declares them, because a
 * single dash plus one known letter is always the short option.
 *
 * getopt's own messages go only to stderr; a client such as containerd's
 * shim shows the user what it finds in the `--log` file instead. So getopt
 * is kept quiet (opterr = 0, a leading ':' to tell a missing argument from
 * an unknown option) and the message is given by cli_usage_error(), which
 * writes both.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "cli.h"

/* The subcommand being run (main sets it), for messages; NULL = global options. */
const char *cli_command_name;

/* A usage error was already reported for this parse: don't print another. */
static bool usage_reported;
static char last_usage[512];

const char *cli_last_usage_error(void)
{
	return usage_reported ? last_usage : NULL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	char msg[sizeof(last_usage) - 64];
	va_list ap;

	/* the command's `default:` branch after cli_getopt() already reported it */
	if (usage_reported)
		return 2;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cmd && *cmd)
		snprintf(last_usage, sizeof(last_usage), "%s: %s", cmd, msg);
	else
		snprintf(last_usage, sizeof(last_usage), "%s", msg);
	usage_reported = true;
	if (cmd && *cmd)
		fprintf(stderr, "cryo %s\nTry `cryo %s --help`.\n", last_usage, cmd);
	else
		fprintf(stderr, "cryo: %s\nTry `cryo --help`.\n", last_usage);
	if (cryo_log_to_file())
		cryo_err("%s", last_usage);
	return 2;
}

static bool is_short_option(const char *optstring, int c)
{
	return c > 0 && c < 0x80 && c != ':' && c != '+' && c != '-' && strchr(optstring, c);
}

int cli_getopt(int argc, char *const argv[], const char *optstring, const struct option *longopts, int *longindex)
{
	const char *cmd = cli_command_name ? cli_command_name : "";
	char quiet[128];
	const char *bad;
	int c;

	/* ':' right after the ordering flag ('+'/'-') makes a missing argument ':' */
	if (optstring[0] == '+' || optstring[0] == '-')
		snprintf(quiet, sizeof(quiet), "%c:%s", optstring[0], optstring + 1);
	else
		snprintf(quiet, sizeof(quiet), ":%s", optstring);
	opterr = 0;
	c = getopt_long_only(argc, argv, quiet, longopts, longindex);
	if (c != '?' && c != ':')
		return c;

	/* the argument getopt stopped at (already consumed for long options) */
	bad = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
	if (c == ':') {
		if (is_short_option(optstring, optopt) && bad[0] == '-' && bad[1] != '-' && strlen(bad) == 2)
			cli_usage_error(cmd, "option `-%c` needs an argument", optopt);
		else
			cli_usage_error(cmd, "option `%s` needs an argument", bad);
	} else if (optopt == 0) {
		cli_usage_error(cmd, "unknown or ambiguous option `%s`", bad);
	} else if (optopt < 0x80 && !is_short_option(optstring, optopt) && !strchr(bad, '=')) {
		cli_usage_error(cmd, "unknown option `-%c`", optopt);
	} else {
		cli_usage_error(cmd, "option `%s` takes no argument", bad);
	}
	return '?';
}
