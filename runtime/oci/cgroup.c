// SPDX-License-Identifier: GPL-2.0-only
/*
 * Cgroups through libcgroup on a hybrid host.
 *
 * libcgroup 2.0 names a hierarchy by a controller mounted on it. On the
 * hybrid layout every real controller is bound to a v1 hierarchy and the
 * cgroup2 mount (/sys/fs/cgroup/unified) carries none of them, so
 * libcgroup knows that mount only under whichever leftover controller the
 * kernel lists in its cgroup.controllers (e.g. "hugetlb" here). We find
 * that name at run time by looking for the libcgroup mount whose
 * filesystem is cgroup2, and use it to create/attach/delete in the v2
 * hierarchy. Two things libcgroup has no call for are done on the files
 * directly: cgroup.kill (v2) and the freezer thaw before removal.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include <libcgroup.h>

#include "cglimits.h"
#include "cgroup.h"
#include "log.h"
#include "mountinfo.h"
#include "util.h"

/*
 * Every v1 controller a container's tasks join, when the host mounts it:
 * the resource ones the config can set (the OCI validation suite reads
 * them back from the container's own cgroup), freezer for checkpoints.
 * Indexed by enum v1_ctrl.
 */
enum v1_ctrl {
	V1_MEMORY, V1_CPU, V1_PIDS, V1_FREEZER, V1_CPUSET, V1_BLKIO, V1_DEVICES, V1_NET_CLS, V1_NET_PRIO, V1_HUGETLB,
	V1_CPUACCT, V1_PERF_EVENT, V1_RDMA, V1_MISC,
};
static const char *const v1_controllers[] = {
	[V1_MEMORY] = "memory", [V1_CPU] = "cpu",         [V1_PIDS] = "pids",       [V1_FREEZER] = "freezer",
	[V1_CPUSET] = "cpuset", [V1_BLKIO] = "blkio",     [V1_DEVICES] = "devices", [V1_NET_CLS] = "net_cls",
	[V1_NET_PRIO] = "net_prio", [V1_HUGETLB] = "hugetlb", [V1_CPUACCT] = "cpuacct", [V1_PERF_EVENT] = "perf_event",
	[V1_RDMA] = "rdma", [V1_MISC] = "misc",
};

/*
 * Named v1 hierarchies without a controller (systemd's name=systemd):
 * libcgroup does not know them, yet a container's tasks join them too,
 * as with runc, so that none of it stays in the runtime's cgroup there
 * and the container's own view of the hierarchy is its cgroup. Found in
 * mountinfo; made, joined and removed on the files.
 */
static char named[4][PATH_MAX];
static char named_name[4][64];  /* "name=systemd", as CRIU names the hierarchy */
static size_t n_named;
/* every v1 hierarchy the container joins: v1_mounted, then the named ones (for CRIU) */
static const char *v1_all[ARRAY_SIZE(v1_controllers) + ARRAY_SIZE(named)];
static size_t n_v1_all;

static bool lib_ready;
static const char *v1_mounted[ARRAY_SIZE(v1_controllers)]; /* those this host mounts, in order */
static size_t n_v1_mounted;
static char v2_name[64];     /* libcgroup's name for the cgroup2 mount, "" if none */
static char v2_mount[PATH_MAX];

static int cg_err(struct cryo_error *err, int code, const char *what, const char *rel)
{
	if (code == ECGOTHER)
		return cryo_error_set(err, cgroup_get_last_errno(), "%s cgroup `%s`", what, rel);
	return cryo_error_setx(err, code == ECGROUPNOTEXIST ? ENOENT : EIO, "%s cgroup `%s`: libcgroup: %s", what, rel,
			       cgroup_strerror(code));
}

/* A v1 hierarchy whose options name it and carry no controller. */
static int collect_named(const struct cryo_mount *m, void *userdata)
{
	static const char *const generic[] = { "rw", "ro", "xattr", "noprefix", "clone_children", "none" };
	_cleanup_free_ char *o = NULL;
	char *tok, *save = NULL, name[64] = "";

	if (strcmp(m->fstype, "cgroup") != 0 || strcmp(m->root, "/") != 0 || n_named >= ARRAY_SIZE(named) ||
	    strlen(m->mountpoint) >= sizeof(named[0]) || !(o = strdup(m->options)))
		return 0;
	for (tok = strtok_r(o, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		if (strncmp(tok, "name=", 5) == 0 && strlen(tok) < sizeof(name)) {
			strcpy(name, tok);
			continue;
		}
		for (i = 0; i < ARRAY_SIZE(generic) && strcmp(tok, generic[i]) != 0; i++)
			;
		if (i == ARRAY_SIZE(generic) && strncmp(tok, "release_agent=", 14) != 0)
			return 0;  /* a controller: libcgroup's */
	}
	for (size_t i = 0; *name && i < n_named; i++)
		if (strcmp(named[i], m->mountpoint) == 0)
			return 0;
	if (*name) {
		strcpy(named_name[n_named], name);
		strcpy(named[n_named++], m->mountpoint);
	}
	return 0;
}

static int lib_init(struct cryo_error *err)
{
	struct cgroup_mount_point mp;
	void *h = NULL;
	int r;

	if (lib_ready)
		return 0;
	r = cgroup_init();
	if (r)
		return cryo_error_setx(err, EIO, "initialise libcgroup: %s", cgroup_strerror(r));
	r = cgroup_get_controller_begin(&h, &mp);
	while (r == 0) {
		struct statfs sfs;

		if (statfs(mp.path, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC && !v2_name[0] &&
		    strlen(mp.name) < sizeof(v2_name)) {
			strcpy(v2_name, mp.name);
			snprintf(v2_mount, sizeof(v2_mount), "%s", mp.path);
		}
		r = cgroup_get_controller_next(&h, &mp);
	}
	cgroup_get_controller_end(&h);
	for (size_t i = 0; i < ARRAY_SIZE(v1_controllers); i++) {
		char *p = NULL;
		struct statfs sfs;

		/* libcgroup may name the cgroup2 mount after a controller (see above): not a v1 one */
		if (cgroup_get_subsys_mount_point(v1_controllers[i], &p) == 0 && p && statfs(p, &sfs) == 0 &&
		    sfs.f_type != CGROUP2_SUPER_MAGIC)
			v1_mounted[n_v1_mounted++] = v1_controllers[i];
		free(p);
	}
	(void)cryo_mountinfo_foreach(collect_named, NULL, NULL);
	for (size_t i = 0; i < n_v1_mounted; i++)
		v1_all[n_v1_all++] = v1_mounted[i];
	for (size_t i = 0; i < n_named; i++)
		v1_all[n_v1_all++] = named_name[i];
	if (!v2_name[0]) {
		struct statfs sfs;

		/* cgroup2 without any controller listed: libcgroup can't see it */
		if (statfs("/sys/fs/cgroup/unified", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
			snprintf(v2_mount, sizeof(v2_mount), "/sys/fs/cgroup/unified");
		else if (statfs("/sys/fs/cgroup", &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC)
			snprintf(v2_mount, sizeof(v2_mount), "/sys/fs/cgroup");
	}
	lib_ready = true;
	return 0;
}

const char *const *cryo_cgroup_v1_controllers(size_t *ret_n)
{
	/* without libcgroup nothing is mounted that we could name */
	if (lib_init(NULL) < 0) {
		*ret_n = 0;
		return v1_all;
	}
	*ret_n = n_v1_all;
	return v1_all;
}

int cryo_cgroup_freezer_backend(const struct cryo_spec *spec, const char **ret, struct cryo_error *err)
{
	const char *b = cryo_spec_annotation(spec, "org.cryo.freezer");

	if (!b) {
		*ret = lib_init(NULL) == 0 && v2_mount[0] ? "v2" : "v1";
		return 0;
	}
	if (strcmp(b, "v1") != 0 && strcmp(b, "v2") != 0)
		return cryo_error_setx(err, EINVAL, "config.json: annotations.org.cryo.freezer: must be `v1` or `v2`, not `%s`",
				       b);
	*ret = b;
	return 0;
}

static char *join(const char *a, const char *rel)
{
	char *p = NULL;

	while (*rel == '/')
		rel++;
	if (asprintf(&p, "%s/%s", a, rel) < 0)
		return NULL;
	return p;
}

/* rmdir dir and the cgroups below it, deepest first (a cgroup directory holds no removable files). */
static int rmdir_tree(const char *dir, int depth)
{
	DIR *d;
	struct dirent *e;

	if (depth > 64)
		return -ELOOP;
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		_cleanup_free_ char *sub = NULL;

		if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (asprintf(&sub, "%s/%s", dir, e->d_name) >= 0)
			(void)rmdir_tree(sub, depth + 1);
	}
	if (d)
		closedir(d);
	return rmdir(dir) < 0 && errno != ENOENT ? -errno : 0;
}

enum named_op { NAMED_MKDIR, NAMED_ATTACH, NAMED_RMDIR, NAMED_RMDIR_TREE, NAMED_EXISTS };

/* op on rel in every named hierarchy: 1 (NAMED_EXISTS: somewhere), 0, or the first -errno. */
static int named_do(enum named_op op, const char *rel, pid_t pid)
{
	for (size_t i = 0; i < n_named; i++) {
		_cleanup_free_ char *d = join(named[i], rel);
		char buf[24];
		int r = 0;

		if (!d)
			return -ENOMEM;
		switch (op) {
		case NAMED_MKDIR:
			r = cryo_mkdir_p(d, 0755);
			break;
		case NAMED_ATTACH: {
			_cleanup_close_ int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			snprintf(buf, sizeof(buf), "%d", (int)pid);
			r = dfd < 0 ? -errno : cryo_write_file_at(dfd, "cgroup.procs", buf);
			break;
		}
		case NAMED_RMDIR:
			r = rmdir(d) < 0 && errno != ENOENT ? -errno : 0;
			break;
		case NAMED_RMDIR_TREE:
			r = rmdir_tree(d, 0);
			break;
		case NAMED_EXISTS:
			if (access(d, F_OK) == 0)
				return 1;
			break;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static bool is_v1(const char *ctrl)
{
	size_t i;

	for (i = 0; i < n_v1_mounted; i++)
		if (strcmp(v1_mounted[i], ctrl) == 0)
			return true;
	return false;
}

static char *v1_path(const char *ctrl, const char *rel)
{
	_cleanup_free_ char *mp = NULL;
	char *p;

	if (!is_v1(ctrl) || cgroup_get_subsys_mount_point(ctrl, &mp) != 0 || !mp)
		return NULL;
	p = join(mp, rel);
	return p;
}

void cryo_cgroup_paths_free(struct cryo_cgroup_paths *p)
{
	if (!p)
		return;
	free(p->v2);
	free(p->v1_freezer);
	free(p->v1_memory);
	free(p->made);
	p->v2 = p->v1_freezer = p->v1_memory = p->made = NULL;
}

int cryo_cgroup_get_paths(const char *rel, struct cryo_cgroup_paths *ret, struct cryo_error *err)
{
	struct cryo_cgroup_paths p = { 0 };
	int r = lib_init(err);

	if (r < 0)
		return r;
	if (v2_mount[0] && !(p.v2 = join(v2_mount, rel)))
		return cryo_error_set(err, ENOMEM, "cgroup paths");
	p.v1_freezer = v1_path("freezer", rel);
	p.v1_memory = v1_path("memory", rel);
	*ret = p;
	return 0;
}

/*
 * A libcgroup handle for rel with every controller (v1 ones and the v2
 * name). Controllers mounted together (cpu,cpuacct or net_cls,net_prio,
 * as systemd mounts them) share one directory: added once, or libcgroup
 * removes that directory once per controller and fails on the second
 * (ENOENT). The others get the same handle in ret_ctrls.
 */
static struct cgroup *new_cg(const char *rel, struct cgroup_controller **ret_ctrls, struct cryo_error *err)
{
	struct cgroup_controller *added[ARRAY_SIZE(v1_controllers)] = { 0 };
	char *mnt[ARRAY_SIZE(v1_controllers)] = { 0 };
	struct cgroup *cg = cgroup_new_cgroup(rel);
	size_t i, j;

	if (!cg) {
		cryo_error_setx(err, ENOMEM, "allocate cgroup `%s`", rel);
		return NULL;
	}
	for (i = 0; i < ARRAY_SIZE(v1_controllers); i++) {
		/* skip a controller this host doesn't mount on v1 */
		if (!is_v1(v1_controllers[i]) || cgroup_get_subsys_mount_point(v1_controllers[i], &mnt[i]) != 0 ||
		    !mnt[i])
			continue;
		for (j = 0; j < i; j++)
			if (added[j] && mnt[j] && strcmp(mnt[i], mnt[j]) == 0)
				break;
		if (j < i) {
			added[i] = added[j];
			continue;
		}
		added[i] = cgroup_add_controller(cg, v1_controllers[i]);
		if (!added[i]) {
			cgroup_free(&cg);
			cryo_error_setx(err, ENOMEM, "cgroup `%s`: add controller %s", rel, v1_controllers[i]);
			break;
		}
	}
	for (i = 0; i < ARRAY_SIZE(v1_controllers); i++) {
		free(mnt[i]);
		if (ret_ctrls)
			ret_ctrls[i] = cg ? added[i] : NULL;
	}
	if (cg && v2_name[0] && !cgroup_add_controller(cg, v2_name)) {
		cgroup_free(&cg);
		cryo_error_setx(err, ENOMEM, "cgroup `%s`: add the cgroup2 hierarchy", rel);
	}
	return cg;
}

static int add_u64(struct cgroup_controller *c, const char *name, uint64_t v)
{
	return c ? cgroup_add_value_uint64(c, name, v) : 0;
}

static int add_str(struct cgroup_controller *c, const char *name, const char *v)
{
	return c ? cgroup_add_value_string(c, name, v) : 0;
}

/* A limit where -1 means none. */
static int add_limit(struct cgroup_controller *c, const char *name, int64_t v)
{
	return v < 0 ? add_str(c, name, "-1") : add_u64(c, name, (uint64_t)v);
}

/*
 * The v1 memory files besides the hard limits. The kernel (5.16+) takes
 * a write of memory.kmem.limit_in_bytes and ignores it; it is written
 * all the same so an older kernel honours it.
 */
static int add_memory_v1(struct cgroup_controller *c, const struct cryo_spec_resources *res)
{
	int r = 0;

	if (res->has_memory_reservation)
		r = add_limit(c, "memory.soft_limit_in_bytes", res->memory_reservation);
	if (!r && res->has_memory_kernel)
		r = add_limit(c, "memory.kmem.limit_in_bytes", res->memory_kernel);
	if (!r && res->has_memory_kernel_tcp)
		r = add_limit(c, "memory.kmem.tcp.limit_in_bytes", res->memory_kernel_tcp);
	if (!r && res->has_memory_swappiness)
		r = add_u64(c, "memory.swappiness", res->memory_swappiness);
	if (!r && res->disable_oom_killer)
		r = add_str(c, "memory.oom_control", "1");
	return r;
}

static bool exists(const char *p)
{
	struct stat st;

	return p && stat(p, &st) == 0;
}

/*
 * libcgroup enables the cgroup2 controllers of the new cgroup's parent in
 * its parent, which fails with ENOENT unless every ancestor up to the
 * root already passes them down. Pass down, level by level, what each
 * level has and does not pass on yet (a fresh system's root passes
 * nothing); what can't be enabled is left for libcgroup to report.
 */
static void enable_v2_ancestors(const char *rel)
{
	_cleanup_free_ char *dir = NULL;
	char *slash;
	size_t keep;

	if (!v2_mount[0])
		return;
	while (*rel == '/')
		rel++;
	dir = join(v2_mount, rel);
	if (!dir)
		return;
	keep = strlen(v2_mount);
	for (;;) {
		_cleanup_free_ char *avail = NULL, *on = NULL;
		_cleanup_close_ int dfd = -1;
		char *tok, *save = NULL;
		size_t len;

		slash = strchr(dir + keep + 1, '/');
		dir[keep] = '\0';
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || cryo_read_file_at(dfd, "cgroup.controllers", 4096, &avail, &len) < 0 ||
		    cryo_read_file_at(dfd, "cgroup.subtree_control", 4096, &on, &len) < 0)
			return;
		for (tok = strtok_r(avail, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
			_cleanup_free_ char *plus = NULL;
			char *hit = strstr(on, tok);
			size_t n = strlen(tok);

			if (hit && (hit == on || hit[-1] == ' ') && (hit[n] == ' ' || hit[n] == '\n' || !hit[n]))
				continue;
			if (asprintf(&plus, "+%s", tok) >= 0 && cryo_write_file_at(dfd, "cgroup.subtree_control", plus) < 0)
				cryo_debug("cgroup: can't enable %s in `%s`", tok, dir);
		}
		if (!slash)
			return;
		dir[keep] = '/';
		keep = (size_t)(slash - dir);
		/* the level below must exist to pass controllers on from it */
		dir[keep] = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return;
		dir[keep] = '/';
	}
}

/* dir/name gets parent/name when it is empty (a fresh cpuset cgroup's cpus and mems). */
static int inherit_file(int pfd, int dfd, const char *dir, const char *name, struct cryo_error *err)
{
	_cleanup_free_ char *mine = NULL, *theirs = NULL;
	size_t len;
	int r;

	r = cryo_read_file_at(dfd, name, 4096, &mine, &len);
	if (r < 0)
		return cryo_error_set(err, -r, "read `%s/%s`", dir, name);
	if (strspn(mine, " \n") != len)
		return 0;
	r = cryo_read_file_at(pfd, name, 4096, &theirs, &len);
	if (r < 0)
		return cryo_error_set(err, -r, "read the parent's `%s` of `%s`", name, dir);
	r = cryo_write_file_at(dfd, name, theirs);
	if (r < 0)
		return cryo_error_set(err, -r, "write `%s/%s`", dir, name);
	return 0;
}

/*
 * A new v1 cpuset cgroup starts with empty cpus and mems, and the kernel
 * refuses a task in it (ENOSPC) until both are set. Make every level of
 * rel in the cpuset hierarchy and fill what is empty from its parent,
 * top down, before libcgroup writes the configured values into the leaf
 * and before any task (ours or CRIU's) joins it.
 */
static int cpuset_prepare(const char *rel, struct cryo_error *err)
{
	_cleanup_free_ char *root = NULL, *dir = NULL;
	_cleanup_close_ int pfd = -1;
	size_t keep;

	if (!is_v1("cpuset") || cgroup_get_subsys_mount_point("cpuset", &root) != 0 || !root)
		return 0;
	dir = join(root, rel);
	if (!dir)
		return cryo_error_set(err, ENOMEM, "cpuset cgroup `%s`", rel);
	keep = strlen(root);
	pfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return cryo_error_set(err, errno, "open `%s`", root);
	while (dir[keep]) {
		char *slash = strchr(dir + keep + 1, '/');
		_cleanup_close_ int dfd = -1;
		int r;

		keep = slash ? (size_t)(slash - dir) : strlen(dir);
		if (keep > 0 && dir[keep - 1] == '/')
			continue;
		dir[keep] = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return cryo_error_set(err, errno, "create `%s`", dir);
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return cryo_error_set(err, errno, "open `%s`", dir);
		r = inherit_file(pfd, dfd, dir, "cpuset.cpus", err);
		if (r >= 0)
			r = inherit_file(pfd, dfd, dir, "cpuset.mems", err);
		if (r < 0)
			return r;
		if (slash)
			dir[keep] = '/';
		close(pfd);
		pfd = TAKE_FD(dfd);
	}
	return 0;
}

bool cryo_cgroup_v2_lists(int dirfd, const char *ctrl)
{
	_cleanup_free_ char *list = NULL;
	char *tok, *save = NULL;
	size_t len;

	if (cryo_read_file_at(dirfd, "cgroup.controllers", 4096, &list, &len) < 0 || !list)
		return false;
	for (tok = strtok_r(list, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (strcmp(tok, ctrl) == 0)
			return true;
	return false;
}

/* The limits cglimits.c writes, into the directories of rel on this host. */
static int apply_limits(const char *rel, const struct cryo_cgroup_paths *paths, const struct cryo_spec_resources *res,
			struct cryo_error *err)
{
	_cleanup_free_ char *devices = v1_path("devices", rel), *blkio = v1_path("blkio", rel),
			    *net_cls = v1_path("net_cls", rel), *net_prio = v1_path("net_prio", rel),
			    *hugetlb = v1_path("hugetlb", rel);
	_cleanup_close_ int v2fd = paths->v2 ? open(paths->v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	struct cryo_cglimits_dirs d = {
		.devices = devices, .blkio = blkio, .net_cls = net_cls, .net_prio = net_prio, .hugetlb_v1 = hugetlb,
		.hugetlb_v2 = v2fd >= 0 && cryo_cgroup_v2_lists(v2fd, "hugetlb") ? paths->v2 : NULL, .v2 = paths->v2,
	};

	return cryo_cglimits_apply(&d, res, err);
}

/* Does rel exist in any hierarchy create makes it in? */
static bool exists_anywhere(const char *rel)
{
	size_t i;

	if (v2_mount[0]) {
		_cleanup_free_ char *p = join(v2_mount, rel);

		if (exists(p))
			return true;
	}
	for (i = 0; i < ARRAY_SIZE(v1_controllers); i++) {
		_cleanup_free_ char *p = v1_path(v1_controllers[i], rel);

		if (exists(p))
			return true;
	}
	return named_do(NAMED_EXISTS, rel, 0) == 1;
}

/*
 * The shallowest prefix of rel that exists in no hierarchy: creating rel
 * makes it and everything below it (libcgroup creates parents like
 * mkdir -p), so it is what delete may remove again. Existence is checked
 * level by level from the top; a level in some hierarchy means every
 * level above it is there too. NULL (with *ret NULL) if rel itself
 * exists somewhere.
 */
static int made_top(const char *rel, char **ret)
{
	_cleanup_free_ char *p = NULL;
	char *s;

	*ret = NULL;
	while (*rel == '/')
		rel++;
	p = strdup(rel);
	if (!p)
		return -ENOMEM;
	for (s = p;; s++) {
		char c = *s;

		if (c != '/' && c != '\0')
			continue;
		if (s == p || s[-1] == '/') {
			if (!c)
				break;
			continue;
		}
		*s = '\0';
		if (!exists_anywhere(p)) {
			*ret = TAKE_PTR(p);
			return 0;
		}
		if (!c)
			break;
		*s = c;
	}
	return 0;
}

/* rmdir the parents of rel, deepest first, down to made; only empty ones go. */
static void remove_made_parents(const char *rel, const char *made)
{
	_cleanup_free_ char *p = NULL;
	size_t top;
	char *slash;

	while (*rel == '/')
		rel++;
	while (*made == '/')
		made++;
	top = strlen(made);
	/* made must name rel or one of its ancestors, nothing else */
	if (!top || strncmp(rel, made, top) != 0 || (rel[top] && rel[top] != '/'))
		return;
	p = strdup(rel);
	if (!p)
		return;
	while ((slash = strrchr(p, '/')) && (size_t)(slash - p) >= top) {
		size_t i;

		*slash = '\0';
		if (!*p)
			break;
		if (v2_mount[0]) {
			_cleanup_free_ char *d = join(v2_mount, p);

			if (d && rmdir(d) < 0 && errno != ENOENT)
				cryo_debug("cgroup: keep `%s`: %s", d, strerror(errno));
		}
		for (i = 0; i < ARRAY_SIZE(v1_controllers); i++) {
			_cleanup_free_ char *d = v1_path(v1_controllers[i], p);

			if (d && rmdir(d) < 0 && errno != ENOENT)
				cryo_debug("cgroup: keep `%s`: %s", d, strerror(errno));
		}
		(void)named_do(NAMED_RMDIR, p, 0);
	}
}

/* What a failed create made goes again; a cgroup it joined stays, with whatever else is in it. */
static void undo_create(const char *rel, const struct cryo_cgroup_paths *p)
{
	struct cryo_error e = CRYO_ERROR_INIT;

	if (p->joined)
		cryo_cgroup_release(rel);
	else if (cryo_cgroup_destroy_made(rel, p->made, 1000, &e) < 0)
		cryo_error_warn_clear(&e, "undo cgroup `%s`", rel);
}

/*
 * An existing cgroup a container is about to join: not frozen (its init
 * would stop in it for good), and preferably empty (runc's warning).
 */
static int check_joinable(const char *rel, const struct cryo_cgroup_paths *p, struct cryo_error *err)
{
	_cleanup_free_ pid_t *pids = NULL;
	struct cryo_error e = CRYO_ERROR_INIT;
	size_t n = 0;
	bool frozen = false;

	if (p->v1_freezer && exists(p->v1_freezer)) {
		_cleanup_close_ int dfd = open(p->v1_freezer, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		_cleanup_free_ char *s = NULL;
		size_t len;

		frozen = dfd >= 0 && cryo_read_file_at(dfd, "freezer.state", 64, &s, &len) == 0 &&
			 strncmp(s, "THAWED", 6) != 0;
	}
	if (!frozen && p->v2 && exists(p->v2)) {
		_cleanup_close_ int dfd = open(p->v2, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
		_cleanup_free_ char *s = NULL;
		size_t len;

		frozen = dfd >= 0 && cryo_read_file_at(dfd, "cgroup.freeze", 64, &s, &len) == 0 && s[0] == '1';
	}
	if (frozen)
		return cryo_error_setx(err, EBUSY, "cgroup `%s`: container's cgroup unexpectedly frozen", rel);
	if (cryo_cgroup_pids(rel, &pids, &n, &e) < 0)
		cryo_error_clear(&e);
	else if (n)
		cryo_warn("cgroup `%s`: container's cgroup is not empty: %zu process(es) found", rel, n);
	return 0;
}

int cryo_cgroup_create(const char *rel, const struct cryo_spec_resources *res, struct cryo_cgroup_paths *ret,
		       struct cryo_error *err)
{
	struct cgroup_controller *ctrls[ARRAY_SIZE(v1_controllers)] = { 0 };
	struct cryo_cgroup_paths paths = { 0 };
	struct cgroup *cg = NULL;
	int r;

	r = cryo_cgroup_get_paths(rel, &paths, err);
	if (r < 0)
		return r;
	if (exists(paths.v2) || exists(paths.v1_memory) || exists(paths.v1_freezer)) {
		r = check_joinable(rel, &paths, err);
		if (r < 0) {
			cryo_cgroup_paths_free(&paths);
			return r;
		}
		paths.joined = true;
	} else if (made_top(rel, &paths.made) < 0) {
		cryo_cgroup_paths_free(&paths);
		return cryo_error_set(err, ENOMEM, "create cgroup `%s`", rel);
	}
	cg = new_cg(rel, ctrls, err);
	if (!cg) {
		cryo_cgroup_paths_free(&paths);
		return -ENOMEM;
	}
	/* period before quota (the kernel checks quota against it) */
	r = 0;
	if (res->has_memory_limit)
		r = add_limit(ctrls[V1_MEMORY], "memory.limit_in_bytes", res->memory_limit);
	if (!r && res->has_memory_swap) {
		_cleanup_free_ char *mp = v1_path("memory", "memory.memsw.limit_in_bytes");

		/* memsw exists only with swap accounting; without it the limit can't be honoured */
		if (!exists(mp)) {
			r = cryo_error_setx(err, EOPNOTSUPP,
					    "linux.resources.memory.swap: this kernel has no swap accounting (memory.memsw.*)");
			goto fail_nocg;
		}
		r = add_limit(ctrls[V1_MEMORY], "memory.memsw.limit_in_bytes", res->memory_swap);
	}
	if (!r)
		r = add_memory_v1(ctrls[V1_MEMORY], res);
	if (!r && res->has_cpu_shares)
		r = add_u64(ctrls[V1_CPU], "cpu.shares", res->cpu_shares);
	if (!r && res->has_cpu_period)
		r = add_u64(ctrls[V1_CPU], "cpu.cfs_period_us", res->cpu_period);
	if (!r && res->has_cpu_quota)
		r = add_limit(ctrls[V1_CPU], "cpu.cfs_quota_us", res->cpu_quota);
	if (!r && res->has_cpu_rt_period)
		r = add_u64(ctrls[V1_CPU], "cpu.rt_period_us", res->cpu_rt_period);
	if (!r && res->has_cpu_rt_runtime)
		r = add_limit(ctrls[V1_CPU], "cpu.rt_runtime_us", res->cpu_rt_runtime);
	if (!r && res->cpuset_cpus)
		r = add_str(ctrls[V1_CPUSET], "cpuset.cpus", res->cpuset_cpus);
	if (!r && res->cpuset_mems)
		r = add_str(ctrls[V1_CPUSET], "cpuset.mems", res->cpuset_mems);
	if (!r && res->has_pids_limit) {
		if (res->pids_limit <= 0)
			r = add_str(ctrls[V1_PIDS], "pids.max", "max");
		else
			r = add_u64(ctrls[V1_PIDS], "pids.max", (uint64_t)res->pids_limit);
	}
	if (r) {
		r = cg_err(err, r, "set limits of", rel);
		goto fail_nocg;
	}
	if (cryo_fault("cgroup-create")) {
		r = cryo_error_setx(err, EIO, "create cgroup `%s`: injected fault", rel);
		goto fail_nocg;
	}
	enable_v2_ancestors(rel);
	r = cpuset_prepare(rel, err);
	if (r < 0) {
		undo_create(rel, &paths);
		goto fail_nocg;
	}
	/* ignore_ownership: libcgroup would chown every file to uid 0 again */
	r = cgroup_create_cgroup(cg, 1);
	if (r) {
		r = cg_err(err, r, "create", rel);
		/* libcgroup may have created some hierarchies (and parents) before failing */
		undo_create(rel, &paths);
		goto fail_nocg;
	}
	r = named_do(NAMED_MKDIR, rel, 0);
	if (r < 0)
		r = cryo_error_set(err, -r, "create cgroup `%s` in the named hierarchies", rel);
	else
		r = apply_limits(rel, &paths, res, err);
	if (r < 0) {
		undo_create(rel, &paths);
		goto fail_nocg;
	}
	cgroup_free(&cg);
	*ret = paths;
	return 0;
fail_nocg:
	cgroup_free(&cg);
	cryo_cgroup_paths_free(&paths);
	return r;
}

int cryo_cgroup_attach(const char *rel, pid_t pid, struct cryo_error *err)
{
	struct cgroup *cg;
	int r = lib_init(err);

	if (r < 0)
		return r;
	cg = new_cg(rel, NULL, err);
	if (!cg)
		return -ENOMEM;
	r = cgroup_attach_task_pid(cg, pid);
	cgroup_free(&cg);
	if (r)
		return cg_err(err, r, "attach pid to", rel);
	r = named_do(NAMED_ATTACH, rel, pid);
	if (r < 0)
		return cryo_error_set(err, -r, "attach pid %d to cgroup `%s` in the named hierarchies", (int)pid, rel);
	return 0;
}

void cryo_cgroup_dirs_free(struct cryo_cgroup_dir *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].dir);
	free(v);
}

int cryo_cgroup_dirs(const char *rel, struct cryo_cgroup_dir **ret, size_t *ret_n, struct cryo_error *err)
{
	struct cryo_cgroup_dir *v;
	size_t n = 0;
	int r = lib_init(err);

	if (r < 0)
		return r;
	v = calloc(n_v1_mounted + n_named + 1, sizeof(*v));
	if (!v)
		return cryo_error_set(err, ENOMEM, "cgroup `%s`", rel);
	for (size_t i = 0; i < n_v1_mounted; i++) {
		v[n].controller = v1_mounted[i];
		v[n].dir = v1_path(v1_mounted[i], rel);
		if (v[n++].dir == NULL)
			goto nomem;
	}
	if (v2_mount[0]) {
		v[n].controller = "";
		v[n].dir = join(v2_mount, rel);
		if (!v[n].dir)
			goto nomem;
		/* the container's tasks are there only where its cgroup is (a hybrid host may have none) */
		if (exists(v[n].dir))
			n++;
		else
			free(v[n].dir);
	}
	for (size_t i = 0; i < n_named; i++) {
		v[n].controller = named_name[i];
		v[n].dir = join(named[i], rel);
		if (v[n++].dir == NULL)
			goto nomem;
	}
	*ret = v;
	*ret_n = n;
	return 0;
nomem:
	cryo_cgroup_dirs_free(v, n);
	return cryo_error_set(err, ENOMEM, "cgroup `%s`", rel);
}

int cryo_cgroup_pids(const char *rel, pid_t **ret, size_t *ret_n, struct cryo_error *err)
{
	_cleanup_free_ char *name = NULL;
	pid_t *pids = NULL;
	int n = 0, r;

	r = lib_init(err);
	if (r < 0)
		return r;
	name = strdup(rel);
	if (!name)
		return cryo_error_set(err, ENOMEM, "list cgroup `%s`", rel);
	r = cgroup_get_procs(name, v2_name[0] ? v2_name : (char *)"memory", &pids, &n);
	if (r) {
		if (r == ECGOTHER && cgroup_get_last_errno() == ENOENT)
			r = ECGROUPNOTEXIST;
		return cg_err(err, r, "list tasks of", rel);
	}
	if (!pids)
		pids = calloc(1, sizeof(*pids));
	if (!pids)
		return cryo_error_set(err, ENOMEM, "list cgroup `%s`", rel);
	*ret = pids;
	*ret_n = (size_t)n;
	return 0;
}

int cryo_cgroup_kill(const char *rel, int sig, struct cryo_error *err)
{
	struct cryo_cgroup_paths p = { 0 };
	_cleanup_free_ pid_t *pids = NULL;
	size_t i, n = 0;
	int r;

	r = cryo_cgroup_get_paths(rel, &p, err);
	if (r < 0)
		return r;
	if (sig == SIGKILL && p.v2) {
		_cleanup_close_ int dfd = open(p.v2, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

		/* cgroup.kill: no call in libcgroup; it kills atomically, forks included */
		if (dfd >= 0 && cryo_write_file_at(dfd, "cgroup.kill", "1") == 0) {
			cryo_cgroup_paths_free(&p);
			return 0;
		}
	}
	cryo_cgroup_paths_free(&p);
	r = cryo_cgroup_pids(rel, &pids, &n, err);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++)
		if (kill(pids[i], sig) < 0 && errno != ESRCH)
			return cryo_error_set(err, errno, "kill pid %d in cgroup `%s`", (int)pids[i], rel);
	return 0;
}

static void thaw(const struct cryo_cgroup_paths *p);

void cryo_cgroup_thaw(const char *rel)
{
	struct cryo_cgroup_paths p = { 0 };

	if (cryo_cgroup_get_paths(rel, &p, NULL) < 0)
		return;
	thaw(&p);
	cryo_cgroup_paths_free(&p);
}

static void thaw(const struct cryo_cgroup_paths *p)
{
	if (p->v2 && exists(p->v2)) {
		_cleanup_close_ int dfd = open(p->v2, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

		if (dfd >= 0)
			(void)cryo_write_file_at(dfd, "cgroup.freeze", "0");
	}
	if (p->v1_freezer && exists(p->v1_freezer)) {
		_cleanup_close_ int dfd = open(p->v1_freezer, O_DIRECTORY | O_RDONLY | O_CLOEXEC);

		if (dfd >= 0)
			(void)cryo_write_file_at(dfd, "freezer.state", "THAWED");
	}
}

bool cryo_cgroup_exists(const char *rel)
{
	return lib_init(NULL) == 0 && exists_anywhere(rel);
}

void cryo_cgroup_release(const char *rel)
{
	struct cgroup *cg;

	if (lib_init(NULL) < 0)
		return;
	cg = new_cg(rel, NULL, NULL);
	if (!cg)
		return;
	(void)cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_EMPTY_ONLY | CGFLAG_DELETE_IGNORE_MIGRATION);
	cgroup_free(&cg);
	(void)named_do(NAMED_RMDIR, rel, 0);
}

static void remove_default_parent(const char *rel)
{
	const char *slash;
	struct cgroup *cg;
	char parent[PATH_MAX];

	while (*rel == '/')
		rel++;
	slash = strchr(rel, '/');
	if (!slash || strchr(slash + 1, '/') || (size_t)(slash - rel) != strlen(CRYO_CGROUP_DEFAULT_PARENT) ||
	    strncmp(rel, CRYO_CGROUP_DEFAULT_PARENT, (size_t)(slash - rel)) != 0)
		return;
	snprintf(parent, sizeof(parent), "%s", CRYO_CGROUP_DEFAULT_PARENT);
	cg = new_cg(parent, NULL, NULL);
	if (!cg)
		return;
	/* other containers may live there: only an empty parent goes (libcgroup's hierarchies, then the named ones) */
	(void)cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_EMPTY_ONLY | CGFLAG_DELETE_IGNORE_MIGRATION);
	cgroup_free(&cg);
	(void)named_do(NAMED_RMDIR, parent, 0);
}

int cryo_cgroup_destroy(const char *rel, int timeout_ms, struct cryo_error *err)
{
	return cryo_cgroup_destroy_made(rel, NULL, timeout_ms, err);
}

int cryo_cgroup_destroy_made(const char *rel, const char *made, int timeout_ms, struct cryo_error *err)
{
	struct cryo_cgroup_paths p = { 0 };
	int64_t deadline = cryo_now_ms() + timeout_ms, backoff = 1;
	struct cgroup *cg;
	int r;

	r = cryo_cgroup_get_paths(rel, &p, err);
	if (r < 0)
		return r;
	if (!exists_anywhere(rel)) {
		cryo_cgroup_paths_free(&p);
		if (made)
			remove_made_parents(rel, made);
		remove_default_parent(rel);
		return 0;
	}
	thaw(&p);
	cryo_cgroup_paths_free(&p);
	for (;;) {
		_cleanup_free_ pid_t *pids = NULL;
		struct cryo_error e = CRYO_ERROR_INIT;
		size_t n = 0;

		(void)cryo_cgroup_kill(rel, SIGKILL, &e);
		cryo_error_clear(&e);
		if (cryo_cgroup_pids(rel, &pids, &n, &e) < 0 || n == 0) {
			cryo_error_clear(&e);
			break;
		}
		if (cryo_now_ms() >= deadline)
			return cryo_error_setx(err, EBUSY, "remove cgroup `%s`: %zu tasks still there after %d ms (first pid %d)",
					       rel, n, timeout_ms, (int)pids[0]);
		cryo_sleep_ms(backoff);
		backoff = backoff * 2 > 50 ? 50 : backoff * 2;
	}
	cg = new_cg(rel, NULL, err);
	if (!cg)
		return -ENOMEM;
	/*
	 * Non-recursive first: the recursive walk stats every file of every
	 * hierarchy. Children exist only if the container made some (its
	 * cgroup namespace allows that); then walk.
	 */
	r = cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_IGNORE_MIGRATION);
	if (r)
		r = cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_RECURSIVE | CGFLAG_DELETE_IGNORE_MIGRATION);
	cgroup_free(&cg);
	(void)named_do(NAMED_RMDIR_TREE, rel, 0);
	/*
	 * libcgroup's recursive walk takes the children of one hierarchy for
	 * those of all: a child the container made in some hierarchies only
	 * (memory/foo, freezer/foo) fails it with ENOENT in the others, after
	 * it removed everything. What counts is what is left.
	 */
	if (r && !exists_anywhere(rel))
		r = 0;
	/* a leaf that stays keeps its parents: rmdir of a non-empty one fails harmlessly */
	if (made)
		remove_made_parents(rel, made);
	if (r && r != ECGROUPNOTEXIST)
		return cg_err(err, r, "remove", rel);
	remove_default_parent(rel);
	return 0;
}
