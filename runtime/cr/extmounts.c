// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extmounts.h"
#include "mount.h"
#include "spec.h"
#include "state.h"
#include "util.h"

/* At most this many binds in a "cgroup" mount (the v1 hierarchies of a host). */
#define CGROUP_BINDS_MAX 32

/* The name masked files are dumped under: the device bound over them. */
#define MASKED_FILE_NAME "/dev/null"

struct pairs {
	char **v;
	size_t n, max;
};

static int add(struct pairs *p, const char *k, char *v_owned)
{
	char *k2 = strdup(k);

	if (!k2 || !v_owned || p->n + 2 >= p->max) {
		free(k2);
		free(v_owned);
		return -ENOMEM;
	}
	p->v[p->n++] = k2;
	p->v[p->n++] = v_owned;
	return 0;
}

static int pairs_new(struct pairs *p, size_t n_pairs)
{
	p->max = 2 * n_pairs + 1;
	p->n = 0;
	p->v = calloc(p->max, sizeof(char *));
	return p->v ? 0 : -ENOMEM;
}

/*
 * path as the container sees it once its symlinks are followed inside
 * root (an fd of the container's root): where a bind mount whose
 * destination was a symlink (/conf -> /real/conf) really is, which is
 * the mountpoint CRIU finds. Component by component, each lookup of a
 * prefix that has no symlink left; `..` stops at the root; a missing
 * component ends the walk (the rest is taken as it is). At most 40 links.
 */
static char *resolve_in_root(int root, const char *path)
{
	_cleanup_free_ char *todo = strdup(path);
	char out[PATH_MAX] = "", target[PATH_MAX];
	int links = 0;

	if (!todo)
		return NULL;
	for (;;) {
		char *comp = todo + strspn(todo, "/"), *next = NULL;
		size_t len = strlen(out), clen = strcspn(comp, "/");
		const char *rest = comp[clen] ? comp + clen + 1 : "";
		struct stat sb;
		ssize_t n;

		if (!clen)
			break;
		if (clen == 1 && comp[0] == '.') {
			/* nothing */
		} else if (clen == 2 && comp[0] == '.' && comp[1] == '.') {
			if (len)
				*strrchr(out, '/') = '\0';
		} else if (len + 1 + clen >= sizeof(out)) {
			return NULL;
		} else {
			snprintf(out + len, sizeof(out) - len, "/%.*s", (int)clen, comp);
			/* out + 1, relative to root: no symlink in it but maybe its last component */
			if (fstatat(root, out + 1, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
				/* not there (yet): the rest as it is */
				if (*rest && asprintf(&next, "%s/%s", out, rest) < 0)
					return NULL;
				return next ? next : strdup(out);
			}
			if (S_ISLNK(sb.st_mode)) {
				n = readlinkat(root, out + 1, target, sizeof(target) - 1);
				if (n < 0 || ++links > 40)
					return NULL;
				target[n] = '\0';
				/* relative to the link's directory, or (absolute) to the root */
				out[target[0] == '/' ? 0 : len] = '\0';
				if (asprintf(&next, "%s/%s", target, rest) < 0)
					return NULL;
				free(todo);
				todo = next;
				continue;
			}
		}
		memmove(todo, rest, strlen(rest) + 1);
	}
	return strdup(*out ? out : "/");
}

/*
 * The binds of the container's cgroups that its "cgroup" mounts are made
 * of (v1, no cgroup namespace: cryo_mount_cgroup_binds()). Dumped under
 * their paths in the container; at restore (rel given) they are the new
 * container's cgroups.
 */
static int add_cgroup_binds(struct pairs *p, const struct cryo_spec *spec, const char *rel, struct cryo_error *err)
{
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct cryo_spec_mount *m = &spec->mounts[i];
		char **v = NULL;
		int r;

		if (!cryo_mount_cgroup_is_binds(spec, m))
			continue;
		r = cryo_mount_cgroup_binds(m->destination, rel, &v, err);
		if (r < 0)
			return r;
		for (size_t k = 0; r == 0 && v[k] && v[k + 1]; k += 2)
			r = add(p, v[k], strdup(v[k + 1]));
		cryo_strv_free(v);
		if (r < 0)
			return cryo_error_set(err, -r, "external mounts");
	}
	return 0;
}

int cryo_extmounts_dump(const struct cryo_spec *spec, pid_t pid, char ***ret, struct cryo_error *err)
{
	_cleanup_close_ int root = -1;
	char proc_root[64];
	struct pairs p;
	size_t i;
	int r = 0;

	if (pairs_new(&p, spec->n_mounts * CGROUP_BINDS_MAX + spec->n_masked_paths + ARRAY_SIZE(cryo_mount_devices)) < 0)
		return cryo_error_set(err, ENOMEM, "external mounts");
	snprintf(proc_root, sizeof(proc_root), "/proc/%d/root", (int)pid);
	root = open(proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* a bind mount is dumped where it is (its destination's symlinks followed), under its name in the config */
	for (i = 0; r == 0 && i < spec->n_mounts; i++) {
		const char *dest = spec->mounts[i].destination;
		_cleanup_free_ char *at = NULL;

		if (!spec->mounts[i].bind)
			continue;
		at = root >= 0 ? resolve_in_root(root, dest) : NULL;
		r = add(&p, at ? at : dest, strdup(dest));
	}
	for (i = 0; r == 0 && i < ARRAY_SIZE(cryo_mount_devices); i++)
		r = add(&p, cryo_mount_devices[i], strdup(cryo_mount_devices[i]));
	if (r == 0) {
		r = add_cgroup_binds(&p, spec, NULL, err);
		if (r < 0) {
			cryo_strv_free(p.v);
			return r;
		}
	}
	/* which masked paths are files (a missing path is not mounted) is seen through the container's root */
	for (i = 0; r == 0 && i < spec->n_masked_paths; i++) {
		_cleanup_free_ char *path = NULL;
		struct stat st;

		if (asprintf(&path, "/proc/%d/root%s", (int)pid, spec->masked_paths[i]) < 0) {
			r = -ENOMEM;
			break;
		}
		if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
			r = add(&p, spec->masked_paths[i], strdup(MASKED_FILE_NAME));
	}
	if (r < 0) {
		cryo_strv_free(p.v);
		return cryo_error_set(err, -r, "external mounts");
	}
	*ret = p.v;
	return 0;
}

int cryo_extmounts_restore(const struct cryo_spec *spec, const char *bundle, const char *cgroup, char ***ret,
			   struct cryo_error *err)
{
	struct pairs p;
	size_t i;
	int r = 0;

	if (pairs_new(&p, spec->n_mounts * CGROUP_BINDS_MAX + ARRAY_SIZE(cryo_mount_devices)) < 0)
		return cryo_error_set(err, ENOMEM, "external mounts");
	/* host devices, the /dev/null one also for the masked files */
	for (i = 0; r == 0 && i < ARRAY_SIZE(cryo_mount_devices); i++)
		r = add(&p, cryo_mount_devices[i], strdup(cryo_mount_devices[i]));
	for (i = 0; r == 0 && i < spec->n_mounts; i++) {
		const struct cryo_spec_mount *m = &spec->mounts[i];
		char *src = NULL;

		if (!m->bind)
			continue;
		if (!m->source) {
			cryo_strv_free(p.v);
			return cryo_error_setx(err, EINVAL, "bind mount `%s` has no source", m->destination);
		}
		if (m->source[0] == '/')
			src = strdup(m->source);
		else if (asprintf(&src, "%s/%s", bundle, m->source) < 0)
			src = NULL;
		r = add(&p, m->destination, src);
	}
	if (r == 0 && cgroup) {
		r = add_cgroup_binds(&p, spec, cgroup, err);
		if (r < 0) {
			cryo_strv_free(p.v);
			return r;
		}
	}
	if (r < 0) {
		cryo_strv_free(p.v);
		return cryo_error_set(err, -r, "external mounts");
	}
	*ret = p.v;
	return 0;
}
