// SPDX-License-Identifier: GPL-2.0-only
/*
 * exec --cgroup: a process of the container in sub-cgroups of the
 * container's cgroup, in every hierarchy (PATH) or in those of some
 * controllers (CTRL[,CTRL]:PATH), as runc does, with runc's error words.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "util.h"

/* An exec's --cgroup path: relative, no `..`; "" is the container's cgroup itself. */
static int sub_path(const char *path, char **ret, struct cryo_error *err)
{
	_cleanup_free_ char *copy = strdup(path), *out = calloc(1, strlen(path) + 1);
	char *tok, *save = NULL;

	if (!copy || !out)
		return cryo_error_set(err, ENOMEM, "--cgroup");
	for (tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0)
			return cryo_error_setx(err, EINVAL, "--cgroup: %s is not a sub cgroup path", path);
		if (*out)
			strcat(out, "/");
		strcat(out, tok);
	}
	*ret = TAKE_PTR(out);
	return 0;
}

/* Write pid into dir/sub/cgroup.procs (nothing when sub is NULL or ""). */
static int add_pid(const char *dir, const char *sub, pid_t pid, struct cryo_error *err)
{
	_cleanup_free_ char *file = NULL;
	char buf[24], why[128];
	int r;

	if (!sub || !*sub)
		return 0;
	if (asprintf(&file, "%s/%s/cgroup.procs", dir, sub) < 0)
		return cryo_error_set(err, ENOMEM, "--cgroup");
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	r = cryo_write_file_at(AT_FDCWD, file, buf);
	if (r == 0)
		return 0;
	/* runc's words (tools match on them): "adding pid N to cgroups: ... FILE: no such file or directory" */
	snprintf(why, sizeof(why), "%s", strerror(-r));
	why[0] = (char)(why[0] >= 'A' && why[0] <= 'Z' ? why[0] - 'A' + 'a' : why[0]);
	return cryo_error_setx(err, -r, "adding pid %d to cgroups: write %s: %s", (int)pid, file, why);
}

/* A v1 controller's hierarchy (not cgroup2, not a named one)? */
static bool is_ctrl(const struct cryo_cgroup_dir *d)
{
	return *d->controller && strncmp(d->controller, "name=", 5) != 0;
}

/* Set sub for the hierarchies of controller ctrl (v1), or cgroup2's on a host without v1 ones. */
static int set_for(const struct cryo_cgroup_dir *d, size_t n, bool v1, char **subs, const char *spec,
		   const char *ctrl, const char *sub, struct cryo_error *err)
{
	bool found = false;

	for (size_t i = 0; i < n; i++) {
		if (v1 ? strcmp(d[i].controller, ctrl) != 0 : *d[i].controller != '\0')
			continue;
		free(subs[i]);
		subs[i] = strdup(sub);
		if (!subs[i])
			return cryo_error_set(err, ENOMEM, "--cgroup");
		found = true;
	}
	if (!found)
		return cryo_error_setx(err, EINVAL, "--cgroup %s: unknown controller `%s`", spec, ctrl);
	return 0;
}

int cryo_cgroup_attach_sub(const char *rel, char *const *specs, pid_t pid, struct cryo_error *err)
{
	struct cryo_cgroup_dir *d = NULL;
	_cleanup_free_ char *all = NULL;
	char **subs = NULL;
	bool v1 = false;
	size_t n = 0;
	int r;

	r = cryo_cgroup_dirs(rel, &d, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		v1 |= is_ctrl(&d[i]);
	subs = calloc(n + 1, sizeof(*subs));
	if (!subs)
		r = cryo_error_set(err, ENOMEM, "--cgroup");
	for (size_t k = 0; r == 0 && specs[k]; k++) {
		const char *colon = strchr(specs[k], ':');
		_cleanup_free_ char *p = NULL, *ctrls = NULL;
		char *tok, *save = NULL;

		r = sub_path(colon ? colon + 1 : specs[k], &p, err);
		if (r < 0)
			break;
		if (!colon) {
			free(all);
			all = TAKE_PTR(p);
			continue;
		}
		ctrls = strndup(specs[k], (size_t)(colon - specs[k]));
		if (!ctrls) {
			r = cryo_error_set(err, ENOMEM, "--cgroup");
			break;
		}
		for (tok = strtok_r(ctrls, ",", &save); r == 0 && tok; tok = strtok_r(NULL, ",", &save))
			r = set_for(d, n, v1, subs, specs[k], tok, p, err);
	}
	/*
	 * A controller's own PATH, else the one for all: the hierarchies the
	 * container sees, its controllers' (cgroup2 beside them and the named
	 * ones are not in its /sys/fs/cgroup), or cgroup2 alone.
	 */
	for (size_t i = 0; r == 0 && i < n; i++)
		r = add_pid(d[i].dir, subs[i] ? subs[i] : (is_ctrl(&d[i]) || !v1 ? all : NULL), pid, err);
	for (size_t i = 0; subs && i < n; i++)
		free(subs[i]);
	free(subs);
	cryo_cgroup_dirs_free(d, n);
	return r;
}
