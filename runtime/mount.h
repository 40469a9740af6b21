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
 * Run in the container's mount namespace, before pivot_root: everything up
 * to and including pivot_root into rootfs (absolute host path). userns:
 * the process is in a new user namespace (no mknod; sysfs may need a bind).
 */
int cryo_mount_setup(const struct cryo_spec *spec, const char *rootfs, bool userns, struct cryo_error *err);

/* After pivot_root: masked paths, read-only paths, read-only root. */
int cryo_mount_finish(const struct cryo_spec *spec, struct cryo_error *err);

#endif
