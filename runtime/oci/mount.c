// SPDX-License-Identifier: GPL-2.0-only
/*
 * Mount setup for the container's init.
 *
 * Every destination is resolved inside the rootfs with openat2()'s
 * RESOLVE_IN_ROOT, so a symlink in the image (`/proc -> /`) can't make us
 * mount over a host path; the mount then targets the resolved O_PATH fd
 * through /proc/self/fd/N, which still names the host's /proc because we
 * have not pivoted yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/openat2.h>

#include "log.h"
#include "mount.h"
#include "mountinfo.h"
#include "proc.h"
#include "state.h"
#include "util.h"

static int openat2_in_root(int rootfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/*
 * Open path inside rootfd (O_PATH), creating missing components as
 * directories, the last one as a file when as_file.
 */
static int open_create_in_root(int rootfd, const char *path, bool as_file, int *ret_fd)
{
	_cleanup_free_ char *p = strdup(path);
	_cleanup_close_ int parent = -1;
	char *s, *comp;
	int fd;

	if (!p)
		return -ENOMEM;
	fd = openat2_in_root(rootfd, p, O_PATH);
	if (fd >= 0) {
		*ret_fd = fd;
		return 0;
	}
	if (fd != -ENOENT)
		return fd;
	parent = openat2_in_root(rootfd, "/", O_PATH | O_DIRECTORY);
	if (parent < 0)
		return parent;
	comp = p;
	for (;;) {
		bool last;

		while (*comp == '/')
			comp++;
		s = strchr(comp, '/');
		if (s)
			*s = '\0';
		last = !s || !s[1 + strspn(s + 1, "/")];
		if (*comp) {
			fd = openat2_in_root(rootfd, p, O_PATH);
			if (fd == -ENOENT) {
				if (last && as_file) {
					int f = openat(parent, comp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);

					if (f < 0 && errno != EEXIST)
						return -errno;
					if (f >= 0)
						close(f);
				} else if (mkdirat(parent, comp, 0755) < 0 && errno != EEXIST) {
					return -errno;
				}
				fd = openat2_in_root(rootfd, p, O_PATH);
			}
			if (fd < 0)
				return fd;
			close(parent);
			parent = fd;
		}
		if (last)
			break;
		*s = '/';
		comp = s + 1;
	}
	*ret_fd = TAKE_FD(parent);
	return 0;
}

static void fd_path(int fd, char buf[static 32])
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
}

const char *const cryo_mount_devices[CRYO_MOUNT_N_DEVICES] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
};

static bool is_default_device(const char *path)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cryo_mount_devices); i++)
		if (strcmp(path, cryo_mount_devices[i]) == 0)
			return true;
	return false;
}

/* One cgroup hierarchy of the host (v1, or cgroup2 beside them). */
struct cg_hier {
	char *mountpoint;   /* on the host: /sys/fs/cgroup/memory */
	char *controllers;  /* "memory", "cpu,cpuacct", "name=systemd"; "" for cgroup2 */
};

struct cg_hiers {
	struct cg_hier v[32];
	size_t n, n_v1;
};

static void cg_hiers_done(struct cg_hiers *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].mountpoint);
		free(h->v[i].controllers);
	}
	h->n = h->n_v1 = 0;
}

/* The controllers of a v1 hierarchy: its superblock options without the generic ones. */
static char *v1_controllers_of(const char *options)
{
	static const char *const generic[] = { "rw", "ro", "noprefix", "clone_children", "xattr", "cpuset_v2_mode", "all" };
	_cleanup_free_ char *o = strdup(options);
	char *out = calloc(1, strlen(options) + 1), *tok, *save = NULL;
	size_t i;

	if (!o || !out) {
		free(out);
		return NULL;
	}
	for (tok = strtok_r(o, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < ARRAY_SIZE(generic) && strcmp(tok, generic[i]) != 0; i++)
			;
		if (i < ARRAY_SIZE(generic) || strncmp(tok, "release_agent=", 14) == 0)
			continue;
		if (*out)
			strcat(out, ",");
		strcat(out, tok);
	}
	return out;
}

/*
 * A mount of a hierarchy's root: "/", or, read from inside a cgroup
 * namespace (the container's, when its mounts are made), "/.." once per
 * level of the namespace's root below the hierarchy's. Anything else is
 * a bind of a sub-cgroup.
 */
static bool is_hierarchy_root(const char *root)
{
	if (strcmp(root, "/") == 0)
		return true;
	for (; *root; root += 3)
		if (strncmp(root, "/..", 3) != 0)
			return false;
	return true;
}

static int collect_cgroup(const struct cryo_mount *m, void *userdata)
{
	struct cg_hiers *h = userdata;
	bool v2 = strcmp(m->fstype, "cgroup2") == 0;
	struct cg_hier *e;
	char *controllers;

	if ((!v2 && strcmp(m->fstype, "cgroup") != 0) || h->n >= ARRAY_SIZE(h->v) || !is_hierarchy_root(m->root))
		return 0;
	controllers = v2 ? strdup("") : v1_controllers_of(m->options);
	if (!controllers)
		return -ENOMEM;
	/*
	 * One entry per hierarchy, the first mount of it listed (the host's,
	 * from boot): a hierarchy mounted twice, at the same place or at
	 * another (a CRIU's cgroup yard, another tool's), is one hierarchy,
	 * and the container shows it once. A v1 hierarchy is its controllers
	 * (each is in one hierarchy only); there is one cgroup2.
	 */
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->v[i].mountpoint, m->mountpoint) == 0 || strcmp(h->v[i].controllers, controllers) == 0) {
			free(controllers);
			return 0;
		}
	e = &h->v[h->n];
	e->mountpoint = strdup(m->mountpoint);
	if (!e->mountpoint) {
		free(controllers);
		return -ENOMEM;
	}
	e->controllers = controllers;
	h->n++;
	if (!v2)
		h->n_v1++;
	return 0;
}

/* What a bind's remount may change (not propagation, not the atime mode of the source's superblock) */
#define BIND_REMOUNT_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* A controllers' hierarchy the container sees (not cgroup2, not a named one): its directory name, or NULL. */
static const char *hier_name(const struct cg_hier *e)
{
	if (!*e->controllers || strncmp(e->controllers, "name=", 5) == 0)
		return NULL;
	return strrchr(e->mountpoint, '/') + 1;
}

bool cryo_mount_cgroup_is_binds(const struct cryo_spec *spec, const struct cryo_spec_mount *m)
{
	return m->type && strcmp(m->type, "cgroup") == 0 && !m->bind && !spec->namespaces[CRYO_NS_CGROUP].enabled;
}

int cryo_mount_cgroup_binds(const char *dest, const char *rel, char ***ret, struct cryo_error *err)
{
	_cleanup_(cg_hiers_done) struct cg_hiers h = { 0 };
	char **v;
	size_t n = 0;
	int r;

	*ret = NULL;
	r = cryo_mountinfo_foreach(collect_cgroup, &h, err);
	if (r < 0)
		return cryo_error_prefix(err, "list the host's cgroup hierarchies");
	v = calloc(2 * h.n + 1, sizeof(*v));
	if (!v)
		return cryo_error_set(err, ENOMEM, "cgroup binds");
	for (size_t i = 0; h.n_v1 && i < h.n; i++) {
		const char *name = hier_name(&h.v[i]);
		char *at = NULL, *src = NULL;

		if (!name || !*name)
			continue;
		if (asprintf(&at, "%s/%s", strcmp(dest, "/") == 0 ? "" : dest, name) < 0)
			at = NULL;
		if (at && rel && asprintf(&src, "%s/%s", h.v[i].mountpoint, rel + strspn(rel, "/")) < 0)
			src = NULL;
		if (at && !rel)
			src = strdup(at);
		if (!at || !src) {
			free(at);
			cryo_strv_free(v);
			return cryo_error_set(err, ENOMEM, "cgroup binds");
		}
		v[n++] = at;
		v[n++] = src;
	}
	*ret = v;
	return 0;
}

/*
 * A "cgroup" mount. On a host with v1 hierarchies: the controllers'
 * hierarchies as runc shows them, a tmpfs with one directory per
 * hierarchy (named as on the host: memory, cpu,cpuacct with a symlink per
 * controller), each rooted at the container's cgroup: a cgroup filesystem
 * mounted in the container's cgroup namespace, or without one a bind of
 * its cgroup's directory; read-only when the mount is. On a cgroup2-only
 * host, the cgroup2 hierarchy.
 */
static int mount_cgroups(int rootfd, const struct cryo_spec_mount *m, bool cgroupns, int dirfd, struct cryo_error *err)
{
	unsigned long flags = m->flags & ~(MS_REMOUNT | MS_RDONLY | MS_BIND | MS_REC);
	_cleanup_(cg_hiers_done) struct cg_hiers h = { 0 };
	_cleanup_close_ int dfd = -1;
	char target[32];
	int r;

	r = cryo_mountinfo_foreach(collect_cgroup, &h, err);
	if (r < 0)
		return cryo_error_prefix(err, "list the host's cgroup hierarchies");
	fd_path(dirfd, target);
	if (!h.n_v1) {
		if (mount("cgroup2", target, "cgroup2", m->flags & ~MS_REMOUNT, NULL) < 0)
			return cryo_error_set(err, errno, "mount cgroup2 on `%s`", m->destination);
		return 0;
	}
	if (mount("tmpfs", target, "tmpfs", flags, "mode=755") < 0)
		return cryo_error_set(err, errno, "mount the tmpfs of `%s`", m->destination);
	/* the new tmpfs, not the directory under it */
	dfd = openat2_in_root(rootfd, m->destination, O_DIRECTORY | O_NOFOLLOW);
	if (dfd < 0)
		return cryo_error_set(err, -dfd, "open `%s`", m->destination);
	for (size_t i = 0; i < h.n; i++) {
		const struct cg_hier *e = &h.v[i];
		const char *name = hier_name(e);
		_cleanup_close_ int sub = -1;
		char sub_target[32];

		/*
		 * the controllers' hierarchies only: not the cgroup2 beside them
		 * (runc shows none either), nor a named one (name=systemd), which
		 * no checkpoint here has been seen to dump yet
		 */
		if (!name)
			continue;
		if (!*name)
			return cryo_error_setx(err, EINVAL, "a cgroup hierarchy mounted at `%s`", e->mountpoint);
		if (mkdirat(dfd, name, 0755) < 0)
			return cryo_error_set(err, errno, "mkdir `%s/%s`", m->destination, name);
		sub = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			return cryo_error_set(err, errno, "open `%s/%s`", m->destination, name);
		fd_path(sub, sub_target);
		if (cgroupns) {
			/*
			 * In the container's cgroup namespace the hierarchy's root is its
			 * own cgroup: the filesystem is mounted there (the kernel allows
			 * it to whoever owns the namespace, user namespaces too)
			 */
			if (mount("cgroup", sub_target, "cgroup", m->flags & ~MS_REMOUNT, e->controllers) < 0)
				return cryo_error_set(err, errno, "mount the %s hierarchy on `%s/%s`", e->controllers,
						      m->destination, name);
		} else {
			/*
			 * Without one, as runc: a bind of the container's own cgroup (the
			 * runtime put us there), which it may make sub-cgroups in.
			 * Checkpoints name these binds external mounts and restore maps
			 * them to the new cgroup (cryo_mount_cgroup_binds()).
			 */
			_cleanup_free_ char *own = NULL, *src = NULL;

			if (cryo_proc_cgroup_rel(0, e->controllers, &own) < 0 || !own ||
			    asprintf(&src, "%s%s", e->mountpoint, strcmp(own, "/") == 0 ? "" : own) < 0)
				return cryo_error_setx(err, ENOENT, "no cgroup of ours in the %s hierarchy", e->controllers);
			if (mount(src, sub_target, NULL, MS_BIND, NULL) < 0)
				return cryo_error_set(err, errno, "bind the %s cgroup `%s` on `%s/%s`", e->controllers, src,
						      m->destination, name);
			/* the bind, not the directory under it */
			closep(&sub);
			sub = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				fd_path(sub, sub_target);
			if (sub < 0 ||
			    mount(NULL, sub_target, NULL, MS_REMOUNT | MS_BIND | (m->flags & BIND_REMOUNT_FLAGS), NULL) < 0)
				return cryo_error_set(err, errno, "remount the bind of the %s cgroup on `%s/%s`",
						      e->controllers, m->destination, name);
		}
		/* cpu,cpuacct: cpu and cpuacct lead there too */
		if (strchr(name, ',')) {
			_cleanup_free_ char *parts = strdup(name);
			char *tok, *save = NULL;

			for (tok = parts ? strtok_r(parts, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save))
				if (symlinkat(name, dfd, tok) < 0 && errno != EEXIST)
					return cryo_error_set(err, errno, "symlink `%s/%s`", m->destination, tok);
		}
	}
	if (m->flags & MS_RDONLY) {
		char dtarget[32];

		fd_path(dfd, dtarget);
		if (mount(NULL, dtarget, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, NULL) < 0)
			return cryo_error_set(err, errno, "make `%s` read-only", m->destination);
	}
	return 0;
}

static bool is_dev(const struct cryo_spec_mount *m)
{
	return !m->bind && strcmp(m->destination, "/dev") == 0;
}

/* The /dev mount made read-only once its nodes and links are there (runc does the same). */
static int dev_readonly(int rootfd, const struct cryo_spec *spec, struct cryo_error *err)
{
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct cryo_spec_mount *m = &spec->mounts[i];
		_cleanup_close_ int fd = -1;
		char target[32];

		if (!is_dev(m) || !(m->flags & MS_RDONLY))
			continue;
		fd = openat2_in_root(rootfd, "/dev", O_PATH | O_DIRECTORY);
		if (fd < 0)
			return cryo_error_set(err, -fd, "open /dev");
		fd_path(fd, target);
		if (mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | (m->flags & ~MS_REMOUNT), NULL) < 0)
			return cryo_error_set(err, errno, "make /dev read-only");
	}
	return 0;
}

static int do_mount(int rootfd, const struct cryo_spec_mount *m, bool userns, bool cgroupns, int srcfd,
		    struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	char target[32];
	bool as_file = false;
	const char *type = m->type;
	unsigned long flags = m->flags & ~MS_REMOUNT;

	/* a read-only /dev is filled first, then made read-only (dev_readonly()) */
	if (is_dev(m))
		flags &= ~MS_RDONLY;
	int r;

	if (m->bind) {
		struct stat st;

		/* srcfd: the runtime's clone of the source, as a user namespace may not reach its path */
		if ((srcfd >= 0 ? fstat(srcfd, &st) : stat(m->source, &st)) < 0)
			return cryo_error_set(err, errno, "bind mount source `%s`", m->source);
		as_file = !S_ISDIR(st.st_mode);
	}
	/*
	 * proc and sysfs go on a directory, never through a symlink the image
	 * put there (`/proc -> /somewhere`): what the container would then
	 * take for /proc is not (runc refuses it too, in these words).
	 */
	if (!m->bind && type && (strcmp(type, "proc") == 0 || strcmp(type, "sysfs") == 0)) {
		struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS };
		const char *rel = m->destination + strspn(m->destination, "/");
		long pfd = syscall(SYS_openat2, rootfd, *rel ? rel : ".", &how, sizeof(how));
		struct stat st;

		if (pfd < 0 && errno == ELOOP)
			return cryo_error_setx(err, EINVAL, "%s on `%s`: must be mounted on ordinary directory, not a symlink",
					       type, m->destination);
		if (pfd >= 0) {
			bool dir = fstat((int)pfd, &st) == 0 && S_ISDIR(st.st_mode);

			close((int)pfd);
			if (!dir)
				return cryo_error_setx(err, EINVAL, "%s on `%s`: must be mounted on ordinary directory", type,
						       m->destination);
		}
	}
	r = open_create_in_root(rootfd, m->destination, as_file, &fd);
	if (r < 0)
		return cryo_error_set(err, -r, "mount destination `%s`", m->destination);
	fd_path(fd, target);

	if (m->bind) {
		/*
		 * The runtime's clone of the source (open_tree()), for an init in
		 * a user namespace: moved into place, as a bind by path would not
		 * reach the source and a bind of the fd is refused (EINVAL, a
		 * mount of another mount namespace).
		 */
		if (srcfd >= 0) {
			if (syscall(SYS_move_mount, srcfd, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
				return cryo_error_set(err, errno, "bind mount `%s` on `%s`", m->source, m->destination);
		} else if (mount(m->source, target, NULL, MS_BIND | (m->recursive_bind ? MS_REC : 0), NULL) < 0) {
			return cryo_error_set(err, errno, "bind mount `%s` on `%s`", m->source, m->destination);
		}
	} else if (!type) {
		return cryo_error_setx(err, EINVAL, "mount on `%s`: a mount that is not a bind needs a type", m->destination);
	} else if (strcmp(type, "cgroup") == 0) {
		r = mount_cgroups(rootfd, m, cgroupns, fd, err);
		if (r < 0)
			return r;
	} else {
		if (mount(m->source ? m->source : type, target, type, flags, m->data) < 0) {
			int e = errno;

			/* sysfs in a user ns without its own net ns: bind the host's, read-only */
			if (strcmp(type, "sysfs") == 0 && (e == EPERM || e == EBUSY) && userns) {
				if (mount("/sys", target, NULL, MS_BIND | MS_REC, NULL) == 0)
					return 0;
			}
			return cryo_error_set(err, e, "mount %s on `%s`%s%s", type, m->destination,
					      m->data ? " with " : "", m->data ? m->data : "");
		}
	}
	/*
	 * What the mount call could not set goes on the new mount, reopened
	 * once (fd is what was under it): a bind's other flags (a bind
	 * ignores them) by a remount, the recursive options, the propagation.
	 */
	bool remount = m->bind && (flags & ~MS_REC);

	if (remount || m->attr_set || m->attr_clr || m->propagation) {
		struct mount_attr attr = { .attr_set = m->attr_set, .attr_clr = m->attr_clr };
		_cleanup_close_ int nfd = openat2_in_root(rootfd, m->destination, O_PATH);
		char ntarget[32];

		if (nfd < 0)
			return cryo_error_set(err, -nfd, "reopen `%s`", m->destination);
		fd_path(nfd, ntarget);
		if (remount && mount(NULL, ntarget, NULL, MS_REMOUNT | MS_BIND | flags, NULL) < 0)
			return cryo_error_set(err, errno, "remount `%s` with its options", m->destination);
		if ((m->attr_set || m->attr_clr) &&
		    syscall(SYS_mount_setattr, nfd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof(attr)) < 0)
			return cryo_error_set(err, errno, "set the recursive options of `%s`", m->destination);
		/* shared would join the host's peer group: never propagate out */
		if (m->propagation && !(m->propagation & MS_SHARED) &&
		    mount(NULL, ntarget, NULL, m->propagation, NULL) < 0)
			return cryo_error_set(err, errno, "set propagation of `%s`", m->destination);
	}
	return 0;
}

/*
 * The default device nodes (cryo_mount_devices). In a /dev that is a
 * tmpfs of the container's own, outside a user namespace, they are new
 * nodes there, root's, 0666, as runc and crun make them. Else (a user
 * namespace can't mknod; a /dev the config binds from elsewhere is not
 * ours to add nodes to) the host's nodes are bind-mounted onto empty
 * files. Either way no host inode is ever created, chowned or chmodded:
 * that is what broke hosts before.
 */
static int default_devices(int rootfd, bool mknod_ok, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cryo_mount_devices); i++) {
		const char *host = cryo_mount_devices[i], *dest = host;
		_cleanup_close_ int fd = -1;
		char target[32];
		struct stat st;
		int r;

		if (stat(host, &st) < 0 || !S_ISCHR(st.st_mode))
			continue;
		if (mknod_ok) {
			_cleanup_close_ int dev = openat2_in_root(rootfd, "/dev", O_RDONLY | O_DIRECTORY);

			if (dev < 0)
				return cryo_error_set(err, -dev, "open the container's /dev");
			if (mknodat(dev, host + strlen("/dev/"), S_IFCHR | 0666, st.st_rdev) < 0 && errno != EEXIST)
				return cryo_error_set(err, errno, "mknod `%s` in the container", dest);
			/* the umask took bits off: the mode is exactly 0666 */
			if (fchmodat(dev, host + strlen("/dev/"), 0666, 0) < 0)
				return cryo_error_set(err, errno, "chmod `%s` in the container", dest);
			continue;
		}
		r = open_create_in_root(rootfd, dest, true, &fd);
		if (r < 0)
			return cryo_error_set(err, -r, "create `%s` in the container", dest);
		fd_path(fd, target);
		if (mount(host, target, NULL, MS_BIND, NULL) < 0)
			return cryo_error_set(err, errno, "bind `%s` into the container", host);
	}
	return 0;
}

/* Is the container's /dev a tmpfs it mounts itself? */
static bool own_dev_tmpfs(const struct cryo_spec *spec)
{
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (is_dev(&spec->mounts[i]) && spec->mounts[i].type && strcmp(spec->mounts[i].type, "tmpfs") == 0)
			return true;
	return false;
}

static int make_devices(int rootfd, const struct cryo_spec *spec, bool userns, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < spec->n_devices; i++) {
		const struct cryo_spec_device *d = &spec->devices[i];
		_cleanup_free_ char *dir = strdup(d->path);
		_cleanup_close_ int dfd = -1;
		char *base;
		mode_t type;
		int r;

		if (is_default_device(d->path))
			continue;
		if (!dir)
			return cryo_error_set(err, ENOMEM, "device `%s`", d->path);
		base = strrchr(dir, '/');
		*base++ = '\0';
		r = open_create_in_root(rootfd, dir, false, &dfd);
		if (r < 0)
			return cryo_error_set(err, -r, "device `%s`: parent directory", d->path);
		if (userns) {
			_cleanup_close_ int fd = -1;
			char target[32];
			struct stat st;

			if (stat(d->path, &st) < 0)
				return cryo_error_set(err, errno, "device `%s`: can't bind it from the host in a user namespace", d->path);
			r = open_create_in_root(rootfd, d->path, true, &fd);
			if (r < 0)
				return cryo_error_set(err, -r, "device `%s`", d->path);
			fd_path(fd, target);
			if (mount(d->path, target, NULL, MS_BIND, NULL) < 0)
				return cryo_error_set(err, errno, "bind device `%s`", d->path);
			continue;
		}
		type = d->type == 'b' ? S_IFBLK : d->type == 'p' ? S_IFIFO : S_IFCHR;
		{
			_cleanup_close_ int real = -1;

			/* mknodat needs a real directory fd, not O_PATH */
			real = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (real < 0)
				return cryo_error_set(err, errno, "device `%s`: open parent", d->path);
			if (mknodat(real, base, type | (d->has_file_mode ? (d->file_mode & 07777) : 0666),
				    makedev((unsigned)d->major, (unsigned)d->minor)) < 0) {
				/* an existing node may be a host bind: never touch it */
				if (errno == EEXIST)
					continue;
				return cryo_error_set(err, errno, "mknod `%s`", d->path);
			}
			/* only the node we just created in the container's own /dev */
			if ((d->has_uid || d->has_gid) &&
			    fchownat(real, base, d->has_uid ? d->uid : (uid_t)-1, d->has_gid ? d->gid : (gid_t)-1,
				     AT_SYMLINK_NOFOLLOW) < 0)
				return cryo_error_set(err, errno, "chown `%s`", d->path);
			if (d->has_file_mode && fchmodat(real, base, d->file_mode & 07777, 0) < 0)
				return cryo_error_set(err, errno, "chmod `%s`", d->path);
		}
	}
	return 0;
}

static int dev_symlinks(int rootfd, struct cryo_error *err)
{
	static const char *const links[][2] = {
		{ "/proc/self/fd", "fd" },     { "/proc/self/fd/0", "stdin" }, { "/proc/self/fd/1", "stdout" },
		{ "/proc/self/fd/2", "stderr" }, { "/proc/kcore", "core" },   { "pts/ptmx", "ptmx" },
	};
	_cleanup_close_ int dev = -1, real = -1;
	size_t i;
	int r;

	r = open_create_in_root(rootfd, "/dev", false, &dev);
	if (r < 0)
		return cryo_error_set(err, -r, "open /dev in the container");
	real = openat(dev, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (real < 0)
		return cryo_error_set(err, errno, "open /dev in the container");
	for (i = 0; i < ARRAY_SIZE(links); i++) {
		struct stat st;

		/* ptmx only points somewhere when devpts is mounted */
		if (strcmp(links[i][1], "ptmx") == 0 && fstatat(real, "pts/ptmx", &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (strcmp(links[i][1], "ptmx") == 0)
			(void)unlinkat(real, "ptmx", 0);
		if (symlinkat(links[i][0], real, links[i][1]) < 0 && errno != EEXIST)
			return cryo_error_set(err, errno, "symlink /dev/%s", links[i][1]);
	}
	if (mkdirat(real, "shm", 01777) < 0 && errno != EEXIST)
		return cryo_error_set(err, errno, "mkdir /dev/shm");
	return 0;
}

int cryo_mount_prepare(const struct cryo_spec *spec, const char *rootfs, bool userns, const int *mount_fds,
		       int *ret_rootfd, struct cryo_error *err)
{
	_cleanup_close_ int rootfd = -1;
	size_t i;
	int r;

	/*
	 * Slave first: the new mount namespace starts out in the host's peer
	 * groups, so without this our mounts would show up on the host.
	 */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return cryo_error_set(err, errno, "make / a recursive slave");
	/*
	 * private and slave cut us off from the host before anything is
	 * mounted. shared and unbindable wait for pivot_root (in finish):
	 * the old `/` made shared would carry our mounts back to the host's
	 * peers, made unbindable it would refuse the rootfs bind below.
	 */
	if (spec->rootfs_propagation & (MS_PRIVATE | MS_SLAVE) &&
	    mount(NULL, "/", NULL, spec->rootfs_propagation, NULL) < 0)
		return cryo_error_set(err, errno, "set rootfs propagation");
	if (mount(rootfs, rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
		return cryo_error_set(err, errno, "bind the rootfs `%s` onto itself", rootfs);
	rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return cryo_error_set(err, errno, "open rootfs `%s`", rootfs);

	for (i = 0; i < spec->n_mounts; i++) {
		r = do_mount(rootfd, &spec->mounts[i], userns, spec->namespaces[CRYO_NS_CGROUP].enabled,
			     mount_fds ? mount_fds[i] : -1, err);
		if (r < 0)
			return cryo_error_prefix(err, "mounts[%zu]", i);
	}
	r = default_devices(rootfd, !userns && own_dev_tmpfs(spec), err);
	if (r >= 0)
		r = make_devices(rootfd, spec, userns, err);
	if (r >= 0)
		r = dev_symlinks(rootfd, err);
	if (r >= 0)
		r = dev_readonly(rootfd, spec, err);
	if (r < 0)
		return r;
	*ret_rootfd = TAKE_FD(rootfd);
	return 0;
}

/*
 * Is dest inside another mount than a bind (a tmpfs, /sys, /proc, /dev)?
 * Its mountpoint is that filesystem's, which CRIU brings back (a tmpfs
 * with its content, the others fresh): nothing to make in the rootfs.
 */
static bool under_fs_mount(const struct cryo_spec *spec, const char *dest)
{
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct cryo_spec_mount *t = &spec->mounts[i];
		size_t n = strlen(t->destination);

		while (n > 1 && t->destination[n - 1] == '/')
			n--;
		if (!t->bind && strncmp(dest, t->destination, n) == 0 && dest[n] == '/')
			return true;
	}
	return false;
}

/* The child of cryo_mount_restore_points(): 0, or a message on fd. */
static int restore_points_child(const struct cryo_spec *spec, const char *rootfs, const char *bundle, int fd)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	_cleanup_close_ int rootfd = -1;
	int r = 0;

	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		r = cryo_error_set(&err, errno, "a mount namespace of its own");
	else if (chdir(bundle) < 0)
		r = cryo_error_set(&err, errno, "chdir to the bundle `%s`", bundle);
	else if ((rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = cryo_error_set(&err, errno, "open rootfs `%s`", rootfs);
	for (size_t i = 0; r >= 0 && i < spec->n_mounts; i++) {
		const struct cryo_spec_mount *m = &spec->mounts[i];
		_cleanup_close_ int at = -1;
		struct stat st;
		char target[32];
		bool as_file = m->bind && m->source && stat(m->source, &st) == 0 && !S_ISDIR(st.st_mode);

		if (under_fs_mount(spec, m->destination))
			continue;
		r = open_create_in_root(rootfd, m->destination, as_file, &at);
		if (r < 0) {
			r = cryo_error_set(&err, -r, "mountpoint `%s`", m->destination);
			break;
		}
		fd_path(at, target);
		if (m->bind && m->source && mount(m->source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
			r = cryo_error_set(&err, errno, "bind `%s` on `%s`", m->source, m->destination);
	}
	if (r < 0 && err.msg)
		(void)!write(fd, err.msg, strlen(err.msg));
	cryo_error_clear(&err);
	return r < 0 ? 1 : 0;
}

int cryo_mount_restore_points(const struct cryo_spec *spec, const char *rootfs, const char *bundle,
			      struct cryo_error *err)
{
	char msg[1024];
	int fds[2], status;
	pid_t pid;
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "mountpoints: pipe");
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return cryo_error_set(err, errno, "mountpoints: fork");
	}
	if (pid == 0) {
		close(fds[0]);
		_exit(restore_points_child(spec, rootfs, bundle, fds[1]));
	}
	close(fds[1]);
	do
		n = read(fds[0], msg, sizeof(msg) - 1);
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	msg[n > 0 ? n : 0] = '\0';
	return cryo_error_setx(err, EIO, "mountpoints: %s", n > 0 ? msg : "the child failed");
}

int cryo_mount_pivot(int rootfd, const char *rootfs, struct cryo_error *err)
{
	/* pivot_root(".", "."): the old root ends up stacked on /, then detached */
	if (fchdir(rootfd) < 0)
		return cryo_error_set(err, errno, "chdir into the rootfs");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return cryo_error_set(err, errno, "pivot_root into `%s`", rootfs);
	if (umount2(".", MNT_DETACH) < 0)
		return cryo_error_set(err, errno, "detach the old root");
	if (chdir("/") < 0)
		return cryo_error_set(err, errno, "chdir /");
	return 0;
}

/*
 * Masked directories share one empty read-only tmpfs: the first gets it,
 * the others are bind mounts of it (read-only too). One superblock is one
 * tmpfs for CRIU to archive at every checkpoint, instead of a tar run
 * for each masked directory.
 */
static int mask_dir(const char *p, const char **first, struct cryo_error *err)
{
	if (!*first) {
		if (mount("tmpfs", p, "tmpfs", MS_RDONLY, "size=0") < 0)
			return cryo_error_set(err, errno, "mask `%s` with an empty tmpfs", p);
		*first = p;
		return 0;
	}
	if (mount(*first, p, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		return cryo_error_set(err, errno, "mask `%s` with the empty tmpfs of `%s`", p, *first);
	return 0;
}

int cryo_mount_finish(const struct cryo_spec *spec, struct cryo_error *err)
{
	const char *first_dir = NULL;
	size_t i;

	for (i = 0; i < spec->n_masked_paths; i++) {
		const char *p = spec->masked_paths[i];
		struct stat st;

		if (lstat(p, &st) < 0) {
			if (errno == ENOENT)
				continue;
			return cryo_error_set(err, errno, "masked path `%s`", p);
		}
		if (S_ISDIR(st.st_mode)) {
			int r = mask_dir(p, &first_dir, err);

			if (r < 0)
				return r;
		} else if (mount("/dev/null", p, NULL, MS_BIND, NULL) < 0) {
			return cryo_error_set(err, errno, "mask `%s` with /dev/null", p);
		}
	}
	for (i = 0; i < spec->n_readonly_paths; i++) {
		const char *p = spec->readonly_paths[i];

		if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0) {
			if (errno == ENOENT)
				continue;
			return cryo_error_set(err, errno, "bind read-only path `%s`", p);
		}
		if (mount(NULL, p, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			return cryo_error_set(err, errno, "make `%s` read-only", p);
	}
	if (spec->root_readonly && mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		return cryo_error_set(err, errno, "make the root read-only");
	/* the container's own root now: shared (peers only in this namespace) or unbindable */
	if (spec->rootfs_propagation & (MS_SHARED | MS_UNBINDABLE) &&
	    mount(NULL, "/", NULL, spec->rootfs_propagation, NULL) < 0)
		return cryo_error_set(err, errno, "set rootfs propagation");
	return 0;
}
