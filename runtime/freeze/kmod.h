/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Userspace side of cryo_freezer.ko (kmod/uapi/cryo_freezer.h): freezes of
 * filesystems and cgroups held by an open /dev/cryo_freezer, each with a
 * deadline, undone by the kernel when the deadline passes or the holder
 * dies. Errors are the kernel's, as -errno (see the UAPI header): -EBUSY
 * frozen by someone else, -EOPNOTSUPP cannot be frozen, -EINVAL on THAW or
 * RESET of something not held - also once the deadline has thawed it.
 *
 * Deadlines are given in milliseconds like every wait in cryo and rounded
 * up to the kernel's whole seconds; 0 means no deadline.
 */
#ifndef CRYO_KMOD_H
#define CRYO_KMOD_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define CRYO_KMOD_DEVICE "/dev/cryo_freezer"

/* True when the module is loaded (the device exists). */
bool cryo_kmod_available(void);

/*
 * Open a new holder (O_RDWR|O_CLOEXEC) and check that the module speaks
 * our ABI version (-EPROTO if not). Closing the fd thaws all it holds.
 */
int cryo_kmod_open(int *ret_fd, struct cryo_error *err);

int cryo_kmod_version(int kfd, uint32_t *ret_version, struct cryo_error *err);

/* fd: any file on the filesystem (like FIFREEZE). */
int cryo_kmod_fs_freeze(int kfd, int fd, uint64_t timeout_ms, struct cryo_error *err);
int cryo_kmod_fs_thaw(int kfd, int fd, struct cryo_error *err);
int cryo_kmod_fs_reset(int kfd, int fd, uint64_t timeout_ms, struct cryo_error *err);

/* dirfd: the cgroup's directory (cgroup2, or a v1 freezer hierarchy). */
int cryo_kmod_cgroup_freeze(int kfd, int dirfd, uint64_t timeout_ms, struct cryo_error *err);
int cryo_kmod_cgroup_thaw(int kfd, int dirfd, struct cryo_error *err);
int cryo_kmod_cgroup_reset(int kfd, int dirfd, uint64_t timeout_ms, struct cryo_error *err);

/*
 * Detached holds (timeout_ms > 0 required): owned by the module, not by
 * kfd. They outlive the caller and end at the deadline, at a THAW through
 * any holder fd (cryo_kmod_*_thaw naming the same target), or at rmmod.
 */
int cryo_kmod_fs_freeze_detached(int kfd, int fd, uint64_t timeout_ms, struct cryo_error *err);
int cryo_kmod_cgroup_freeze_detached(int kfd, int dirfd, uint64_t timeout_ms, struct cryo_error *err);

#endif
