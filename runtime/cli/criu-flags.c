// SPDX-License-Identifier: GPL-2.0-only
#include "criu-flags.h"
#include "cli.h"

int cli_criu_flag(const char *cmd, int c, const char *arg, struct cryo_criu_flags *f)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int rc;

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
	case CLI_OPT_MANAGE_CGROUPS_MODE:
		if (cryo_criu_cg_mode_from_string(arg, &f->cg_mode, &err) >= 0)
			return 0;
		rc = cli_usage_error(cmd, "%s", err.msg);
		cryo_error_clear(&err);
		return rc;
	default:
		return -1;
	}
}
