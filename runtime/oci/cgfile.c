// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libcgroup.h>

#include "cgfile.h"
#include "cgroup.h"
#include "state.h"
#include "util.h"

#define CGFILE_MAX (1 << 20)

/* -errno for the call that just failed, never 0 */
static int negative_errno(void)
{
	int e = errno;

	return e > 0 ? -e : -EIO;
}

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Is ctrl listed in the cgroup.controllers of the v2 directory dir? */
static bool v2_has(const char *dir, const char *ctrl)
{
	const char *want = strcmp(ctrl, "cpuacct") == 0 ? "cpu" : strcmp(ctrl, "blkio") == 0 ? "io" : ctrl;
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd >= 0 && cryo_cgroup_v2_lists(fd, want);
}

int cryo_cgfile_dir(const struct cryo_state *st, const char *ctrl, char **ret_dir, bool *ret_v2,
		    struct cryo_error *err)
{
	struct cryo_cgroup_paths paths = { 0 };
	_cleanup_free_ char *mp = NULL;
	const char *rel = st->cgroup_path;
	char *dir = NULL;
	int r;

	if (!rel)
		return cryo_error_setx(err, ENOENT, "container `%s` has no cgroup", st->id);
	/* also initialises libcgroup, which the mount point lookup below needs */
	r = cryo_cgroup_get_paths(rel, &paths, err);
	if (r < 0)
		return r;
	while (*rel == '/')
		rel++;
	if (cgroup_get_subsys_mount_point(ctrl, &mp) == 0 && mp && asprintf(&dir, "%s/%s", mp, rel) >= 0) {
		if (is_dir(dir)) {
			cryo_cgroup_paths_free(&paths);
			*ret_dir = dir;
			*ret_v2 = false;
			return 0;
		}
		free(dir);
		dir = NULL;
	}
	if (paths.v2 && is_dir(paths.v2) && v2_has(paths.v2, ctrl)) {
		*ret_dir = paths.v2;
		paths.v2 = NULL;
		cryo_cgroup_paths_free(&paths);
		*ret_v2 = true;
		return 0;
	}
	cryo_cgroup_paths_free(&paths);
	return cryo_error_setx(err, ENOENT, "container `%s` has no cgroup with the %s controller", st->id, ctrl);
}

int cryo_cgfile_write(const char *dir, const char *name, const char *value, struct cryo_error *err)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (dfd < 0)
		return cryo_error_set(err, errno, "open `%s`", dir);
	r = cryo_write_file_at(dfd, name, value);
	if (r < 0)
		return cryo_error_set(err, -r, "write `%s` to `%s/%s`", value, dir, name);
	return 0;
}

int cryo_cgfile_read(const char *dir, const char *name, char **ret)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (dfd < 0)
		return negative_errno();
	r = cryo_read_file_at(dfd, name, CGFILE_MAX, ret, NULL);
	return r > 0 ? 0 : r;
}

int cryo_cgfile_read_u64(const char *dir, const char *name, uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	char *end;
	int r = cryo_cgfile_read(dir, name, &s);

	if (r < 0 || !s)
		return r < 0 ? r : -EIO;
	if (strncmp(s, "max", 3) == 0) {
		*ret = UINT64_MAX;
		return 0;
	}
	errno = 0;
	*ret = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	return 0;
}

int cryo_cgfile_keyed(const char *dir, const char *name, const char *key, uint64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	size_t klen = strlen(key);
	const char *line;
	int r = cryo_cgfile_read(dir, name, &s);

	if (r < 0 || !s)
		return r < 0 ? r : -EIO;
	for (line = s; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
			*ret = strtoull(line + klen + 1, NULL, 10);
			return 0;
		}
	}
	return -ENOENT;
}
