// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caps.h"
#include "process.h"
#include "rlimits.h"
#include "seccomp.h"
#include "util.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char *env_path(const struct cryo_spec *spec)
{
	size_t i;

	for (i = 0; i < spec->n_env; i++)
		if (strncmp(spec->env[i], "PATH=", 5) == 0)
			return spec->env[i] + 5;
	return DEFAULT_PATH;
}

int cryo_process_find_executable(const struct cryo_spec *spec, char *buf, size_t len, struct cryo_error *err)
{
	const char *cmd = spec->args[0], *p;
	struct stat st;

	if (strchr(cmd, '/')) {
		if (stat(cmd, &st) < 0)
			return cryo_error_set(err, errno, "process.args[0]: `%s`", cmd);
		if ((size_t)snprintf(buf, len, "%s", cmd) >= len)
			return cryo_error_setx(err, ENAMETOOLONG, "process.args[0]: `%s` is too long", cmd);
		return 0;
	}
	p = env_path(spec);
	while (*p) {
		const char *end = strchrnul(p, ':');
		int n = snprintf(buf, len, "%.*s/%s", (int)(end - p), p, cmd);

		if (end > p && n > 0 && (size_t)n < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(buf, X_OK) == 0)
			return 0;
		p = *end ? end + 1 : end;
	}
	/* with strerror: clients (Podman) map "no such file or directory" to exit code 127 */
	return cryo_error_set(err, ENOENT, "process.args[0]: `%s` not found in $PATH (%s)", cmd, env_path(spec));
}

int cryo_process_set_user(const struct cryo_spec *spec, struct cryo_error *err)
{
	_cleanup_free_ gid_t *gids = NULL;
	size_t i;

	if (spec->n_additional_gids) {
		gids = calloc(spec->n_additional_gids, sizeof(*gids));
		if (!gids)
			return cryo_error_set(err, ENOMEM, "groups");
		for (i = 0; i < spec->n_additional_gids; i++)
			gids[i] = spec->additional_gids[i];
	}
	if (setgroups(spec->n_additional_gids, gids) < 0)
		return cryo_error_set(err, errno, "setgroups");
	if (setresgid(spec->gid, spec->gid, spec->gid) < 0)
		return cryo_error_set(err, errno, "setgid %u", spec->gid);
	if (setresuid(spec->uid, spec->uid, spec->uid) < 0)
		return cryo_error_set(err, errno, "setuid %u", spec->uid);
	return 0;
}

int cryo_process_setup(const struct cryo_spec *spec, struct cryo_seccomp_listener *l, struct cryo_error *err)
{
	int r;

	r = cryo_rlimits_apply(&spec->rlimits, 0, err);
	if (r >= 0 && !spec->no_new_privileges)
		r = cryo_seccomp_apply(&spec->seccomp, l, err);
	if (r >= 0)
		r = cryo_caps_prepare(&spec->caps, err);
	if (r >= 0)
		r = cryo_process_set_user(spec, err);
	if (r >= 0)
		r = cryo_caps_apply(&spec->caps, err);
	if (r < 0)
		goto out;
	umask(spec->has_umask ? (mode_t)spec->umask : 022);
	if (spec->no_new_privileges) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
			r = cryo_error_set(err, errno, "set no_new_privs");
			goto out;
		}
		r = cryo_seccomp_apply(&spec->seccomp, l, err);
	}
out:
	/* one state per connection, closed after it (runtime-spec) */
	if (l)
		closep(&l->fd);
	return r;
}

int cryo_process_exec(const struct cryo_spec *spec, const char *exe, struct cryo_seccomp_listener *l,
		      struct cryo_error *err)
{
	int r = cryo_process_setup(spec, l, err);

	if (r < 0)
		return r;
	execve(exe, spec->args, spec->env);
	return cryo_error_set(err, errno, "exec `%s`", exe);
}
