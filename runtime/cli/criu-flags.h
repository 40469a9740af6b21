/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The CRIU flags of `checkpoint` and `restore` (runc's names, which
 * containerd's shim and Podman send): one table of long options and one
 * parser, so both commands accept and document them the same way.
 *
 * What each does in cryo (never silently something else):
 *   --tcp-established, --ext-unix-sk, --shell-job, --file-locks,
 *   --manage-cgroups-mode, --auto-dedup, --lsm-profile,
 *   --lsm-mount-context       the CRIU option of the same name
 *   --status-fd N (checkpoint) '\0' is written to fd N once the image is
 *                             complete, then N is closed (runc: once CRIU
 *                             is ready to serve lazy pages)
 *   --empty-ns network        accepted, changes nothing — as in runc, where
 *                             the network namespace is always handled so;
 *                             any other namespace is refused, as in runc
 *   --no-subreaper (restore)  accepted, changes nothing: the restored init
 *                             is cryo's own child, cryo is never a subreaper
 *   --no-pivot (restore)      accepted, changes nothing: CRIU mounts the
 *                             restored root itself (no pivot_root by cryo)
 *   --lazy-pages, --page-server ADDR:PORT
 *                             refused with an error: cryo's images are
 *                             complete and digested locally (lazy
 *                             migration is `cryo migrate --lazy`)
 * Flags of one command only (runc's split) are unknown to the other.
 */
#ifndef CRYO_CLI_CRIU_FLAGS_H
#define CRYO_CLI_CRIU_FLAGS_H

#include <getopt.h>

#include "criu.h"

enum {
	CLI_OPT_TCP_ESTABLISHED = 0x100,
	CLI_OPT_EXT_UNIX_SK,
	CLI_OPT_SHELL_JOB,
	CLI_OPT_FILE_LOCKS,
	CLI_OPT_MANAGE_CGROUPS_MODE,
	CLI_OPT_AUTO_DEDUP,
	CLI_OPT_EMPTY_NS,
	CLI_OPT_LAZY_PAGES,
	CLI_OPT_STATUS_FD,       /* checkpoint only */
	CLI_OPT_PAGE_SERVER,     /* checkpoint only */
	CLI_OPT_NO_SUBREAPER,    /* restore only */
	CLI_OPT_NO_PIVOT,        /* restore only */
	CLI_OPT_LSM_PROFILE,     /* restore only */
	CLI_OPT_LSM_MOUNT_CONTEXT, /* restore only */
	CLI_OPT_IMAGE_PATH,      /* checkpoint and restore: CLI_CRIU_IMAGE_OPTIONS */
	CLI_OPT_WORK_PATH,
};

/* Where the image is and where CRIU works and logs (checkpoint, restore). */
#define CLI_CRIU_IMAGE_OPTIONS                                                             \
	{ "image-path", required_argument, NULL, CLI_OPT_IMAGE_PATH },                      \
	{ "work-path", required_argument, NULL, CLI_OPT_WORK_PATH }

#define CLI_CRIU_FLAG_OPTIONS                                                              \
	{ "tcp-established", no_argument, NULL, CLI_OPT_TCP_ESTABLISHED },                  \
	{ "ext-unix-sk", no_argument, NULL, CLI_OPT_EXT_UNIX_SK },                          \
	{ "shell-job", no_argument, NULL, CLI_OPT_SHELL_JOB },                              \
	{ "file-locks", no_argument, NULL, CLI_OPT_FILE_LOCKS },                            \
	{ "manage-cgroups-mode", required_argument, NULL, CLI_OPT_MANAGE_CGROUPS_MODE },    \
	{ "auto-dedup", no_argument, NULL, CLI_OPT_AUTO_DEDUP },                            \
	{ "empty-ns", required_argument, NULL, CLI_OPT_EMPTY_NS },                          \
	{ "lazy-pages", no_argument, NULL, CLI_OPT_LAZY_PAGES },                            \
	{ "status-fd", required_argument, NULL, CLI_OPT_STATUS_FD },                        \
	{ "page-server", required_argument, NULL, CLI_OPT_PAGE_SERVER },                    \
	{ "no-subreaper", no_argument, NULL, CLI_OPT_NO_SUBREAPER },                        \
	{ "no-pivot", no_argument, NULL, CLI_OPT_NO_PIVOT },                                \
	{ "lsm-profile", required_argument, NULL, CLI_OPT_LSM_PROFILE },                    \
	{ "lsm-mount-context", required_argument, NULL, CLI_OPT_LSM_MOUNT_CONTEXT }

#define CLI_CRIU_FLAG_HELP                                                                 \
	"  --tcp-established         dump/restore established TCP connections\n"             \
	"  --ext-unix-sk             allow external unix sockets\n"                          \
	"  --shell-job               the container was started from a shell (terminal)\n"    \
	"  --file-locks              dump/restore file locks\n"                              \
	"  --manage-cgroups-mode M   soft, full, strict or ignore\n"                         \
	"  --auto-dedup              CRIU's page deduplication\n"                            \
	"  --empty-ns network        accepted (runc's only value; changes nothing)\n"        \
	"  --status-fd N             checkpoint: write '\\0' to fd N once the image is done\n" \
	"  --lsm-profile TYPE:NAME   restore: LSM profile of the restored tasks\n"           \
	"  --lsm-mount-context CTX   restore: SELinux mount context\n"                       \
	"  --no-subreaper, --no-pivot  restore: accepted (cryo does neither anyway)\n"       \
	"  --lazy-pages, --page-server ADDR:PORT  refused: images are complete and local\n"  \
	"Every long option also takes a single dash (-no-subreaper).\n"

/* Where a command's CRIU flags, image options and signing key go. */
struct cli_criu_args {
	const char *cmd;                    /* "checkpoint", "restore", "migrate" */
	struct cryo_criu_flags *flags;
	const char **image_path, **work_path; /* CLI_CRIU_IMAGE_OPTIONS; NULL: not taken */
	const char **key;                   /* cli_criu_operand(): the key an option gave, */
	const char *key_env;                /* else the one this environment variable names */
	int status;                         /* the exit status for a bad option (see below) */
};

/*
 * cli_getopt() for a command with the CRIU flags: takes them, and
 * --image-path and --work-path, into a itself and returns the command's
 * next other option, -1 at the end, or '?' after a bad one, its error
 * printed and a->status the status to exit with (2, or 1 for a flag
 * cryo refuses).
 */
int cli_criu_getopt(struct cli_criu_args *a, int argc, char **argv, const char *optstring,
		    const struct option *longopts);

/*
 * After the options of checkpoint or restore: their one operand, the
 * container id, into *ret_id; and *a->key, when no option gave one, from
 * the environment variable a->key_env (a node's key, set where the
 * runtime is configured: a CRI handler's wrapper, for clients that pass
 * no such option). 1 when the key came from there, 0 when not, or 2
 * after the usage error.
 */
int cli_criu_operand(const struct cli_criu_args *a, int argc, char **argv, const char **ret_id);

/*
 * Called by a command once it succeeded: what the flags promise at the
 * end (--status-fd). 0, or 1 after printing an error.
 */
int cli_criu_flags_finish(void);

#endif
