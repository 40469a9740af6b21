/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * cryo_freezer UAPI: the only interface shared between the kernel module
 * and userspace. Every open file of /dev/cryo_freezer is one holder: what
 * it freezes stays frozen until the holder thaws it, its deadline passes,
 * or the file is released (the holding process exits or is killed).
 *
 * All calls but VERSION need CAP_SYS_ADMIN (EPERM). Errors follow the
 * generic filesystem freeze (FIFREEZE/FITHAW) and its proposed timeout:
 *
 *   EBADF       fd is not an open file descriptor
 *   EOPNOTSUPP  the filesystem or cgroup cannot be frozen
 *   ENOTDIR     a cgroup call got an fd that is not a directory
 *   EINVAL      bad flags or timeout (a detached hold needs a timeout,
 *               also on RESET_TIMEOUT), a cgroup call got an fd outside a
 *               cgroup filesystem, or THAW/RESET_TIMEOUT of something this
 *               holder does not hold frozen - including a hold whose
 *               deadline has already thawed it (that is how the holder
 *               learns the deadline fired)
 *   EBUSY       already frozen (by another holder, by FIFREEZE, by a write
 *               to cgroup.freeze / freezer.state)
 *   ENOSPC      the holder has CRYO_FREEZER_MAX_HOLDS holds, or the
 *               module CRYO_FREEZER_MAX_DETACHED detached ones
 */
#ifndef _UAPI_CRYO_FREEZER_H
#define _UAPI_CRYO_FREEZER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define CRYO_FREEZER_ABI_VERSION	3

/* Largest timeout_ms accepted: one week. */
#define CRYO_FREEZER_TIMEOUT_MAX_MS	(7ULL * 24 * 3600 * 1000)

/* Holds per open file. */
#define CRYO_FREEZER_MAX_HOLDS		64

/* Detached holds in the whole module, fired ones included. */
#define CRYO_FREEZER_MAX_DETACHED	256

/*
 * Flags of a FREEZE (THAW and RESET_TIMEOUT take none).
 *
 * HOLD_DETACHED: the hold is not owned by this file but by the module.
 * It needs timeout_ms > 0 and survives the close of this file and the
 * exit of its creator; any CAP_SYS_ADMIN caller may THAW it or
 * RESET_TIMEOUT it (to another timeout > 0) through any open file.
 * Unloading the module thaws every detached hold.
 */
#define CRYO_FREEZER_HOLD_DETACHED	(1U << 0)

/*
 * Argument of every hold ioctl.
 *
 * fd:          FS_*: any file on the filesystem (like FIFREEZE);
 *              CGROUP_*: a directory fd of the cgroup (cgroup2, or a
 *              cgroup v1 hierarchy with the freezer controller)
 * flags:       FREEZE: 0 or CRYO_FREEZER_HOLD_DETACHED; others: 0
 * timeout_ms:  FREEZE and RESET_TIMEOUT: milliseconds until the freeze is
 *              undone by itself, 0 = no deadline; must be 0 for THAW. Time
 *              spent suspended or hibernated does not count.
 * reserved:    must be zero (EINVAL otherwise): room to grow without a
 *              new ioctl number.
 */
struct cryo_freezer_hold {
	__s32 fd;
	__u32 flags;
	__u64 timeout_ms;
	__u64 reserved[2];
};

#define CRYO_FREEZER_IOC_MAGIC		0xC7

/* Returns CRYO_FREEZER_ABI_VERSION. */
#define CRYO_FREEZER_IOC_VERSION	_IOR(CRYO_FREEZER_IOC_MAGIC, 0, __u32)

/* freeze_super() of fd's filesystem, held by this file. */
#define CRYO_FREEZER_IOC_FS_FREEZE \
	_IOW(CRYO_FREEZER_IOC_MAGIC, 1, struct cryo_freezer_hold)
#define CRYO_FREEZER_IOC_FS_THAW \
	_IOW(CRYO_FREEZER_IOC_MAGIC, 2, struct cryo_freezer_hold)
#define CRYO_FREEZER_IOC_FS_RESET_TIMEOUT \
	_IOW(CRYO_FREEZER_IOC_MAGIC, 3, struct cryo_freezer_hold)

/*
 * Freeze the cgroup through its own freezer file (cgroup.freeze = 1, or
 * freezer.state = FROZEN on v1). Returns once the freeze is requested: wait
 * for "frozen 1" in cgroup.events (v2) or FROZEN in freezer.state (v1).
 */
#define CRYO_FREEZER_IOC_CGROUP_FREEZE \
	_IOW(CRYO_FREEZER_IOC_MAGIC, 4, struct cryo_freezer_hold)
#define CRYO_FREEZER_IOC_CGROUP_THAW \
	_IOW(CRYO_FREEZER_IOC_MAGIC, 5, struct cryo_freezer_hold)
#define CRYO_FREEZER_IOC_CGROUP_RESET_TIMEOUT \
	_IOW(CRYO_FREEZER_IOC_MAGIC, 6, struct cryo_freezer_hold)

#endif /* _UAPI_CRYO_FREEZER_H */
