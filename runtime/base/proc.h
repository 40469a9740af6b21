/* SPDX-License-Identifier: GPL-2.0-only */
/* Facts about a process read from /proc. */
#ifndef CRYO_PROC_H
#define CRYO_PROC_H

#include <sys/types.h>

#include "error.h"

/*
 * The absolute paths of pid's cgroups: in the cgroup2 hierarchy (mounted
 * at /sys/fs/cgroup/unified on a hybrid host, /sys/fs/cgroup on a pure v2
 * one) and in the v1 freezer hierarchy. Either is set to NULL when that
 * hierarchy is not mounted.
 */
int cryo_proc_cgroups(pid_t pid, char **ret_v2, char **ret_v1_freezer, struct cryo_error *err);

/* Mount point of the cgroup2 hierarchy and of the v1 freezer, or NULL. */
const char *cryo_cgroup2_mountpoint(void);
const char *cryo_cgroup_v1_freezer_mountpoint(void);

#endif
