// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "criu-flags.h"
#include "util.h"
#include "cli.h"

/* --status-fd of this run (one command per process); -1 = none */
static int status_fd = -1;

static int refuse(const char *cmd, const char *opt, const char *why)
{
	struct cryo_error err = CRYO_ERROR_INIT;

	cryo_error_setx(&err, EOPNOTSUPP, "%s: %s is not supported: %s", cmd, opt, why);
	return cli_fail(&err);
}

/*
 * Take getopt's result c (with optarg arg) into f when it is one of the
 * flags above: 0 when taken, -1 when c is not one of them, else the exit
 * status of an error of cmd, already printed.
 */
static int criu_flag(const char *cmd, int c, const char *arg, struct cryo_criu_flags *f)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	bool restore = strcmp(cmd, "restore") == 0;
	uint64_t v;
	int rc;

	switch (c) {
	case CLI_OPT_STATUS_FD:
	case CLI_OPT_PAGE_SERVER:
		if (restore)
			return cli_usage_error(cmd, "unknown option `--%s`",
					       c == CLI_OPT_STATUS_FD ? "status-fd" : "page-server");
		break;
	case CLI_OPT_NO_SUBREAPER:
	case CLI_OPT_NO_PIVOT:
	case CLI_OPT_LSM_PROFILE:
	case CLI_OPT_LSM_MOUNT_CONTEXT:
		if (!restore)
			return cli_usage_error(cmd, "option `%s` is for restore only",
					       c == CLI_OPT_NO_SUBREAPER ? "--no-subreaper" :
					       c == CLI_OPT_NO_PIVOT	 ? "--no-pivot" :
					       c == CLI_OPT_LSM_PROFILE	 ? "--lsm-profile" :
									   "--lsm-mount-context");
		break;
	default:
		break;
	}

	switch (c) {
	case CLI_OPT_TCP_ESTABLISHED:
		f->tcp_established = true;
		return 0;
	case CLI_OPT_EXT_UNIX_SK:
		f->ext_unix_sk = true;
		return 0;
	case CLI_OPT_SHELL_JOB:
		f->shell_job = true;
		return 0;
	case CLI_OPT_FILE_LOCKS:
		f->file_locks = true;
		return 0;
	case CLI_OPT_AUTO_DEDUP:
		f->auto_dedup = true;
		return 0;
	case CLI_OPT_MANAGE_CGROUPS_MODE:
		if (cryo_criu_cg_mode_from_string(arg, &f->cg_mode, &err) >= 0)
			return 0;
		rc = cli_usage_error(cmd, "%s", err.msg);
		cryo_error_clear(&err);
		return rc;
	case CLI_OPT_EMPTY_NS:
		/* runc knows only this one, and always treats the netns so */
		if (strcmp(arg, "network") != 0)
			return cli_usage_error(cmd, "--empty-ns: namespace `%s` is not supported (only `network`)", arg);
		return 0;
	case CLI_OPT_NO_SUBREAPER:
	case CLI_OPT_NO_PIVOT:
		return 0;
	case CLI_OPT_LSM_PROFILE:
		f->lsm_profile = arg;
		return 0;
	case CLI_OPT_LSM_MOUNT_CONTEXT:
		f->lsm_mount_context = arg;
		return 0;
	case CLI_OPT_STATUS_FD:
		if (cryo_parse_u64(arg, 1 << 20, &v) < 0)
			return cli_usage_error(cmd, "--status-fd takes a file descriptor number, not `%s`", arg);
		if (fcntl((int)v, F_GETFD) < 0)
			return cli_usage_error(cmd, "--status-fd %d: %s", (int)v, strerror(errno));
		status_fd = (int)v;
		return 0;
	case CLI_OPT_LAZY_PAGES:
		return refuse(cmd, "--lazy-pages",
			      "cryo's images are complete and digested locally (lazy migration: `cryo migrate --lazy`)");
	case CLI_OPT_PAGE_SERVER:
		return refuse(cmd, "--page-server",
			      "cryo's images are complete and digested locally (remote: `cryo migrate`)");
	default:
		return -1;
	}
}

int cli_criu_getopt(struct cli_criu_args *a, int argc, char **argv, const char *optstring,
		    const struct option *longopts)
{
	int c, r;

	a->status = 2;
	for (;;) {
		c = cli_getopt(argc, argv, optstring, longopts, NULL);
		if (c == CLI_OPT_IMAGE_PATH && a->image_path) {
			*a->image_path = optarg;
			continue;
		}
		if (c == CLI_OPT_WORK_PATH && a->work_path) {
			*a->work_path = optarg;
			continue;
		}
		r = criu_flag(a->cmd, c, optarg, a->flags);
		if (r < 0)
			return c;
		if (r > 0) {
			a->status = r;
			return '?';
		}
	}
}

int cli_criu_operand(const struct cli_criu_args *a, int argc, char **argv, const char **ret_id)
{
	const char *env = getenv(a->key_env);

	if (optind + 1 != argc)
		return cli_usage_error(a->cmd, "expects exactly one container id");
	*ret_id = argv[optind];
	if (*a->key || !env || !*env)
		return 0;
	*a->key = env;
	return 1;
}

int cli_criu_flags_finish(void)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int fd = status_fd;

	if (fd < 0)
		return 0;
	status_fd = -1;
	if (write(fd, "", 1) != 1) {
		cryo_error_set(&err, errno, "--status-fd %d: write", fd);
		close(fd);
		return cli_fail(&err);
	}
	close(fd);
	return 0;
}
