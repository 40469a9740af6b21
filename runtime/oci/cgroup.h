/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A container's cgroups on this project's hosts: every v1 controller the
 * host mounts among memory, cpu, cpuacct, pids, freezer, cpuset, blkio,
 * devices, net_cls, net_prio, hugetlb, perf_event, rdma and misc, the
 * named v1 hierarchies (name=systemd), and the cgroup2 hierarchy side by
 * side (hybrid layout), created, filled and removed through libcgroup
 * (the named hierarchies, cpuset's inherited cpus and mems, and the
 * limits of cglimits.h are done on the files directly).
 * `rel` is the cgroup path relative to each hierarchy's root
 * ("cryo/web"); absolute paths are derived from the mount points.
 */
#ifndef CRYO_CGROUP_H
#define CRYO_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "spec.h"

struct cryo_cgroup_paths {
	char *v2;          /* absolute path in the cgroup2 hierarchy, or NULL */
	char *v1_freezer;  /* absolute path in the v1 freezer hierarchy, or NULL */
	char *v1_memory;   /* absolute path in the v1 memory hierarchy, or NULL */
	char *made;        /* set by create: the top-most level of rel it made ("cryo" of
			      "cryo/web", rel itself when only the leaf was new), or NULL */
	bool joined;       /* set by create: rel existed already, the container joined it */
};

void cryo_cgroup_paths_free(struct cryo_cgroup_paths *p);

/* Does the cgroup2 directory dirfd list ctrl in its cgroup.controllers? */
bool cryo_cgroup_v2_lists(int dirfd, const char *ctrl);

/* The default relative path of a container's cgroup: "cryo/<id>". */
#define CRYO_CGROUP_DEFAULT_PARENT "cryo"

/*
 * The v1 hierarchies a container's tasks are put in (besides cgroup2), as
 * CRIU names them: those of the controllers above that this host mounts
 * on v1, then the named ones without a controller ("name=systemd").
 */
const char *const *cryo_cgroup_v1_controllers(size_t *ret_n);

/*
 * The freezer backend of a new container: the config's annotation
 * org.cryo.freezer (`v1` or `v2`), else v2 where this host mounts cgroup2
 * and v1 where it does not (a v1-only host, or cgroup2 unmounted in the
 * caller's mount namespace). -EINVAL for another annotation value.
 */
int cryo_cgroup_freezer_backend(const struct cryo_spec *spec, const char **ret, struct cryo_error *err);

/*
 * Create rel in every hierarchy and write the resource limits; a cpuset
 * level that is new gets its parent's cpus and mems, so tasks (ours or
 * CRIU's) can join it as soon as this returns. A cgroup that exists
 * already is joined (ret->joined), as runc does: with a warning when
 * tasks are in it, refused (-EBUSY) when it is frozen. On failure nothing
 * is left behind: neither rel nor the parents it needed.
 * ret->made names what to hand to cryo_cgroup_destroy_made() later; a
 * joined cgroup goes with cryo_cgroup_release() instead.
 */
int cryo_cgroup_create(const char *rel, const struct cryo_spec_resources *res, struct cryo_cgroup_paths *ret,
		       struct cryo_error *err);

/* Does rel exist in any hierarchy create makes it in? */
bool cryo_cgroup_exists(const char *rel);

/*
 * The end of a container that joined an existing cgroup: rel is removed
 * if no task is left in it (the others' are never killed), else kept.
 */
void cryo_cgroup_release(const char *rel);

/*
 * Thaw rel (v1 freezer and cgroup2), whoever froze it: for a kill that
 * must take effect (a frozen task dies only once thawed).
 */
void cryo_cgroup_thaw(const char *rel);

/* Move pid into rel in every hierarchy. */
int cryo_cgroup_attach(const char *rel, pid_t pid, struct cryo_error *err);
/* A hierarchy the container's tasks are in, and the directory of its cgroup there. */
struct cryo_cgroup_dir {
	const char *controller; /* "memory", "cpu", ...: one per controller of a v1 hierarchy (co-mounted
				   ones share a dir); "" for cgroup2; "name=systemd" for a named one */
	char *dir;
};

/* Every hierarchy's directory of cgroup rel (free with cryo_cgroup_dirs_free()). */
int cryo_cgroup_dirs(const char *rel, struct cryo_cgroup_dir **ret, size_t *ret_n, struct cryo_error *err);
void cryo_cgroup_dirs_free(struct cryo_cgroup_dir *v, size_t n);

/*
 * exec --cgroup (cgsub.c): move pid (attached to rel already) into sub-cgroups of
 * rel. specs: NULL-terminated "PATH" (every hierarchy) or
 * "CTRL[,CTRL]:PATH" (the hierarchies of those controllers); PATH is
 * relative to rel and may not leave it.
 */
int cryo_cgroup_attach_sub(const char *rel, char *const *specs, pid_t pid, struct cryo_error *err);

/* The pids in rel (v2 cgroup.procs, else the v1 memory/pids hierarchy). */
int cryo_cgroup_pids(const char *rel, pid_t **ret, size_t *ret_n, struct cryo_error *err);

/*
 * Send sig to every task in rel. SIGKILL on cgroup2 uses cgroup.kill, which
 * also catches tasks forking while we look.
 */
int cryo_cgroup_kill(const char *rel, int sig, struct cryo_error *err);

/*
 * Kill what is left (thawing first), wait up to timeout_ms for the tasks
 * to go, and remove rel from every hierarchy; a missing cgroup is fine.
 * Empty default parents ("cryo") are removed too.
 */
int cryo_cgroup_destroy(const char *rel, int timeout_ms, struct cryo_error *err);

/*
 * cryo_cgroup_destroy(), then every parent of rel up to and including
 * made (a prefix of rel, from cryo_cgroup_paths.made), in every
 * hierarchy, as long as it is empty: exactly what create made goes.
 * made NULL: like cryo_cgroup_destroy().
 */
int cryo_cgroup_destroy_made(const char *rel, const char *made, int timeout_ms, struct cryo_error *err);

/* The absolute paths of rel (whether or not they exist). */
int cryo_cgroup_get_paths(const char *rel, struct cryo_cgroup_paths *ret, struct cryo_error *err);

#endif
