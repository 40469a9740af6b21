// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "proc.h"
#include "util.h"

static bool is_fs(const char *path, long magic)
{
	struct statfs sfs;

	return statfs(path, &sfs) == 0 && sfs.f_type == magic;
}

const char *cryo_cgroup2_mountpoint(void)
{
	if (is_fs("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC))
		return "/sys/fs/cgroup/unified";
	if (is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC))
		return "/sys/fs/cgroup";
	return NULL;
}

const char *cryo_cgroup_v1_freezer_mountpoint(void)
{
	if (is_fs("/sys/fs/cgroup/freezer", CGROUP_SUPER_MAGIC))
		return "/sys/fs/cgroup/freezer";
	return NULL;
}

static int join(const char *mnt, const char *rel, char **ret)
{
	/* "/" in /proc/PID/cgroup is the hierarchy root itself */
	if (asprintf(ret, "%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel) < 0)
		return -ENOMEM;
	return 0;
}

int cryo_proc_cgroups(pid_t pid, char **ret_v2, char **ret_v1_freezer, struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL, *v2 = NULL, *v1 = NULL;
	const char *mnt2 = cryo_cgroup2_mountpoint();
	const char *mnt1 = cryo_cgroup_v1_freezer_mountpoint();
	char path[64], *line, *save = NULL;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	r = cryo_read_file_at(AT_FDCWD, path, 65536, &buf, NULL);
	if (r == -ENOENT)
		return cryo_error_setx(err, ESRCH, "process %d does not exist", (int)pid);
	if (r < 0)
		return cryo_error_set(err, r, "read `%s`", path);

	/* each line: hierarchy-id:controller-list:path */
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(line, ':'), *c2, *rel;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c2 = '\0';
		rel = c2 + 1;
		if (strncmp(line, "0:", 2) == 0 && c1[1] == '\0') {
			if (mnt2 && !v2 && join(mnt2, rel, &v2) < 0)
				return cryo_error_set(err, ENOMEM, "cgroups of %d", (int)pid);
		} else {
			char *ctrl, *csave = NULL;

			for (ctrl = strtok_r(c1 + 1, ",", &csave); ctrl; ctrl = strtok_r(NULL, ",", &csave)) {
				if (strcmp(ctrl, "freezer") == 0 && mnt1 && !v1 && join(mnt1, rel, &v1) < 0)
					return cryo_error_set(err, ENOMEM, "cgroups of %d", (int)pid);
			}
		}
	}
	*ret_v2 = TAKE_PTR(v2);
	*ret_v1_freezer = TAKE_PTR(v1);
	return 0;
}
