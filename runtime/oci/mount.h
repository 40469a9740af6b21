/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The container's filesystem view, built inside its fresh mount
 * namespace by the container's init: rootfs bind + config mounts + /dev,
 * pivot_root, then masked and read-only paths. Nothing here may reach the
 * host: the whole tree is made a slave of the host first, and host device
 * nodes are only ever bind-mounted, never created, chowned or chmodded.
 */
#ifndef CRYO_MOUNT_H
#define CRYO_MOUNT_H

#include <stdbool.h>

#include "error.h"
#include "spec.h"

/*
 * The device nodes every container gets: new nodes in a /dev tmpfs of its
 * own, else the host's bind-mounted onto files of its /dev (in a user
 * namespace). The one list: checkpoint and restore hand the same paths to
 * CRIU as external mounts (for where they are binds).
 */
#define CRYO_MOUNT_N_DEVICES 6
extern const char *const cryo_mount_devices[CRYO_MOUNT_N_DEVICES];

/*
 * Run in the container's mount namespace: bind rootfs (absolute host path)
 * onto itself, the config's mounts, /dev. *ret_rootfd is an O_PATH fd of
 * the rootfs for cryo_mount_pivot(). userns: the process is in a user
 * namespace (no mknod; sysfs may need a bind). mount_fds: NULL, or an fd
 * per mount to bind from instead of its source (init.h). The
 * createContainer hooks run between the two.
 */
int cryo_mount_prepare(const struct cryo_spec *spec, const char *rootfs, bool userns, const int *mount_fds,
		       int *ret_rootfd, struct cryo_error *err);

/*
 * Before a restore: the mountpoints of the config's mounts in rootfs,
 * made as create makes them, by a child in a mount namespace of its own
 * that bind-mounts the binds on the way (runc does the same), so that a
 * bind inside another one gets its mountpoint in that one's source.
 * Mounts inside a filesystem other than a bind (a tmpfs, /sys, /dev) are
 * left out: CRIU brings that back with its mountpoints. Relative bind
 * sources are taken from bundle. Forks: call it before any thread runs.
 */
int cryo_mount_restore_points(const struct cryo_spec *spec, const char *rootfs, const char *bundle,
			      struct cryo_error *err);

/* pivot_root into rootfd and detach the old root. */
int cryo_mount_pivot(int rootfd, const char *rootfs, struct cryo_error *err);

/* After pivot_root: masked paths, read-only paths, read-only root, shared or unbindable root propagation. */
int cryo_mount_finish(const struct cryo_spec *spec, struct cryo_error *err);

/* Is m (of spec) a "cgroup" mount made of binds of the container's cgroups (v1, no cgroup namespace)? */
bool cryo_mount_cgroup_is_binds(const struct cryo_spec *spec, const struct cryo_spec_mount *m);
/*
 * The binds a "cgroup" mount at dest is made of on this host, as CRIU's
 * external mounts: NULL-terminated pairs of the bind's path in the
 * container and, given rel, the host directory of cgroup rel in that
 * hierarchy (without rel: the path again, the name in the image). Empty
 * on a host without v1 hierarchies.
 */
int cryo_mount_cgroup_binds(const char *dest, const char *rel, char ***ret, struct cryo_error *err);

#endif
