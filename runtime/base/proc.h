/* SPDX-License-Identifier: GPL-2.0-only */
/* Facts about a process read from /proc. */
#ifndef CRYO_PROC_H
#define CRYO_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/*
 * The absolute paths of pid's cgroups: in the cgroup2 hierarchy (mounted
 * at /sys/fs/cgroup/unified on a hybrid host, /sys/fs/cgroup on a pure v2
 * one) and in the v1 freezer hierarchy. Either is set to NULL when that
 * hierarchy is not mounted.
 */
int cryo_proc_cgroups(pid_t pid, char **ret_v2, char **ret_v1_freezer, struct cryo_error *err);

/*
 * *ret: pid's cgroup (pid 0: the caller's), as /proc/PID/cgroup has it
 * ("/a/b", relative to the hierarchy's root), in the v1 hierarchy of ctrl
 * (one controller, "memory", or the whole list, "cpu,cpuacct") or, for
 * ctrl "", in cgroup2. -ENOENT: no such hierarchy; -ESRCH: no such pid.
 */
int cryo_proc_cgroup_rel(pid_t pid, const char *ctrl, char **ret);

/* Mount point of the cgroup2 hierarchy and of the v1 freezer, or NULL. */
const char *cryo_cgroup2_mountpoint(void);
const char *cryo_cgroup_v1_freezer_mountpoint(void);

/*
 * root and every process below it (the children of each of its threads,
 * from /proc/PID/task/TID/children, and theirs), root first, each parent
 * before its children; at most CRYO_PROC_TREE_MAX. The tree must not
 * change meanwhile (its tasks stopped or held): a child forked during
 * the walk may be missed.
 */
#define CRYO_PROC_TREE_MAX 65536
int cryo_proc_tree(pid_t root, pid_t **ret, size_t *ret_n, struct cryo_error *err);

/*
 * Whether a stop signal (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) is pending
 * for pid, sent to the process or to one of its threads.
 */
bool cryo_proc_stop_pending(pid_t pid);

/*
 * Can this kernel track dirty pages (CONFIG_MEM_SOFT_DIRTY), as CRIU's
 * pre-dump and pre-copy need? And does it have userfaultfd (lazy pages)?
 */
bool cryo_kernel_has_soft_dirty(void);
bool cryo_kernel_has_userfaultfd(void);

/*
 * SIGKILL every process named comm that has an fd, or its cwd, at path or
 * below it, and wait (a second at most) until each is gone. For the CRIU
 * a killed cryo leaves behind: its helpers (CRIU forks some, such as the
 * child of its hardware-breakpoint probe, which stops itself) do not get
 * the parent-death signal cryo gives CRIU. Returns how many were killed.
 */
int cryo_proc_kill_holding(const char *comm, const char *path);

#endif
