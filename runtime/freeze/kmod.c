// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cryo_freezer.h"
#include "kmod.h"
#include "util.h"

bool cryo_kmod_available(void)
{
	return access(CRYO_KMOD_DEVICE, F_OK) == 0;
}

int cryo_kmod_version(int kfd, uint32_t *ret_version, struct cryo_error *err)
{
	__u32 v = 0;

	if (ioctl(kfd, CRYO_FREEZER_IOC_VERSION, &v) < 0)
		return cryo_error_set(err, errno, "cryo_freezer: ABI version");
	*ret_version = v;
	return 0;
}

int cryo_kmod_open(int *ret_fd, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	uint32_t v = 0;
	int r;

	fd = open(CRYO_KMOD_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", CRYO_KMOD_DEVICE);
	r = cryo_kmod_version(fd, &v, err);
	if (r < 0)
		return r;
	if (v != CRYO_FREEZER_ABI_VERSION)
		return cryo_error_setx(err, EPROTO, "cryo_freezer speaks ABI %u, cryo needs %u", v,
				       (unsigned int)CRYO_FREEZER_ABI_VERSION);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* The kernel's answer in the words of the caller's operation. */
static int hold_error(struct cryo_error *err, int e, bool freeze, const char *what, const char *op)
{
	switch (e) {
	case EBUSY:
		return cryo_error_setx(err, e, "%s %s: already frozen by someone else", op, what);
	case EOPNOTSUPP:
		return cryo_error_setx(err, e, "%s %s: it cannot be frozen", op, what);
	case EINVAL:
		if (!freeze)
			return cryo_error_setx(err, e, "%s %s: not held frozen (its deadline may have thawed it)",
					       op, what);
		break;
	default:
		break;
	}
	return cryo_error_set(err, e, "%s %s with cryo_freezer", op, what);
}

static int hold_ioctl_flags(int kfd, unsigned long cmd, int fd, uint32_t flags, uint64_t timeout_ms,
			    const char *what, const char *op, struct cryo_error *err)
{
	struct cryo_freezer_hold h = {
		.fd = fd,
		.flags = flags,
		.timeout_ms = timeout_ms,
	};

	if (ioctl(kfd, cmd, &h) < 0)
		return hold_error(err, errno,
				  cmd == CRYO_FREEZER_IOC_FS_FREEZE || cmd == CRYO_FREEZER_IOC_CGROUP_FREEZE,
				  what, op);
	return 0;
}

static int hold_ioctl(int kfd, unsigned long cmd, int fd, uint64_t timeout_ms, const char *what,
		      const char *op, struct cryo_error *err)
{
	return hold_ioctl_flags(kfd, cmd, fd, 0, timeout_ms, what, op, err);
}

int cryo_kmod_fs_freeze(int kfd, int fd, uint64_t timeout_ms, struct cryo_error *err)
{
	return hold_ioctl(kfd, CRYO_FREEZER_IOC_FS_FREEZE, fd, timeout_ms, "filesystem", "freeze", err);
}

int cryo_kmod_fs_thaw(int kfd, int fd, struct cryo_error *err)
{
	return hold_ioctl(kfd, CRYO_FREEZER_IOC_FS_THAW, fd, 0, "filesystem", "thaw", err);
}

int cryo_kmod_fs_reset(int kfd, int fd, uint64_t timeout_ms, struct cryo_error *err)
{
	return hold_ioctl(kfd, CRYO_FREEZER_IOC_FS_RESET_TIMEOUT, fd, timeout_ms, "filesystem",
			  "reset the deadline of", err);
}

int cryo_kmod_cgroup_freeze(int kfd, int dirfd, uint64_t timeout_ms, struct cryo_error *err)
{
	return hold_ioctl(kfd, CRYO_FREEZER_IOC_CGROUP_FREEZE, dirfd, timeout_ms, "cgroup", "freeze", err);
}

int cryo_kmod_cgroup_thaw(int kfd, int dirfd, struct cryo_error *err)
{
	return hold_ioctl(kfd, CRYO_FREEZER_IOC_CGROUP_THAW, dirfd, 0, "cgroup", "thaw", err);
}

int cryo_kmod_cgroup_reset(int kfd, int dirfd, uint64_t timeout_ms, struct cryo_error *err)
{
	return hold_ioctl(kfd, CRYO_FREEZER_IOC_CGROUP_RESET_TIMEOUT, dirfd, timeout_ms, "cgroup",
			  "reset the deadline of", err);
}

int cryo_kmod_fs_freeze_detached(int kfd, int fd, uint64_t timeout_ms, struct cryo_error *err)
{
	if (timeout_ms == 0)
		return cryo_error_setx(err, EINVAL, "freeze filesystem: a detached hold needs a deadline");
	return hold_ioctl_flags(kfd, CRYO_FREEZER_IOC_FS_FREEZE, fd, CRYO_FREEZER_HOLD_DETACHED, timeout_ms,
				"filesystem", "freeze", err);
}

int cryo_kmod_cgroup_freeze_detached(int kfd, int dirfd, uint64_t timeout_ms, struct cryo_error *err)
{
	if (timeout_ms == 0)
		return cryo_error_setx(err, EINVAL, "freeze cgroup: a detached hold needs a deadline");
	return hold_ioctl_flags(kfd, CRYO_FREEZER_IOC_CGROUP_FREEZE, dirfd, CRYO_FREEZER_HOLD_DETACHED,
				timeout_ms, "cgroup", "freeze", err);
}
