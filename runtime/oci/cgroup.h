/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A container's cgroups on this project's hosts: every v1 controller the
 * host mounts among memory, cpu, pids, freezer, cpuset, blkio, devices,
 * net_cls, net_prio and hugetlb, and the cgroup2 hierarchy side by side
 * (hybrid layout), created, filled and removed through libcgroup (the
 * per-device lines of devices and blkio, and cpuset's inherited cpus and
 * mems, are written directly).
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
};

void cryo_cgroup_paths_free(struct cryo_cgroup_paths *p);

/* Does the cgroup2 directory dirfd list ctrl in its cgroup.controllers? */
bool cryo_cgroup_v2_lists(int dirfd, const char *ctrl);

/* The default relative path of a container's cgroup: "cryo/<id>". */
#define CRYO_CGROUP_DEFAULT_PARENT "cryo"

/*
 * The v1 controllers a container's tasks are put in (besides cgroup2):
 * those of the list above that this host mounts on v1.
 */
const char *const *cryo_cgroup_v1_controllers(size_t *ret_n);

/*
 * Create rel in every hierarchy and write the resource limits; a cpuset
 * level that is new gets its parent's cpus and mems, so tasks (ours or
 * CRIU's) can join it as soon as this returns. -EEXIST
 * when the cgroup exists already (it is not ours to take over). On
 * failure nothing is left behind: neither rel nor the parents it needed.
 * ret->made names what to hand to cryo_cgroup_destroy_made() later.
 */
int cryo_cgroup_create(const char *rel, const struct cryo_spec_resources *res, struct cryo_cgroup_paths *ret,
		       struct cryo_error *err);

/* Move pid into rel in every hierarchy. */
int cryo_cgroup_attach(const char *rel, pid_t pid, struct cryo_error *err);

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
