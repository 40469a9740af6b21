// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <linux/fs.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "sealexe.h"
#include "util.h"

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
struct mount_attr {
	__u64 attr_set;
	__u64 attr_clr;
	__u64 propagation;
	__u64 userns_fd;
};
#endif

#define SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

bool cryo_sealexe_is_sealed(void)
{
	_cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int seals;

	if (fd < 0)
		return false;
	seals = fcntl(fd, F_GET_SEALS);
	return seals >= 0 && (seals & SEALS) == SEALS;
}

/* argv of this process: /proc/self/cmdline split at NULs */
static char **self_argv(char **ret_buf)
{
	char *buf = NULL, *p, **v;
	size_t len = 0, n = 0, i = 0;

	if (cryo_read_file_at(AT_FDCWD, "/proc/self/cmdline", 1 << 20, &buf, &len) < 0)
		return NULL;
	for (p = buf; p < buf + len; p += strlen(p) + 1)
		n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v) {
		free(buf);
		return NULL;
	}
	for (p = buf; p < buf + len; p += strlen(p) + 1)
		v[i++] = p;
	*ret_buf = buf;
	return v;
}

/*
 * The host binary can't be overwritten through /proc/PID/exe at all when
 * it is immutable (chattr +i) or on a read-only mount: then the copy, which
 * costs a few ms per container start for a static binary, is skipped.
 */
bool cryo_sealexe_binary_protected(void)
{
	_cleanup_close_ int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct statvfs sv;
	int flags = 0;

	if (fd < 0)
		return false;
	if (fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY))
		return true;
	return ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & FS_IMMUTABLE_FL);
}

/*
 * A read-only bind mount of just the binary, detached: in no mount table.
 * Writes through /proc/PID/exe then fail with EROFS, also later, through
 * an O_PATH fd the container kept after cryo exited. The fd returned here
 * is O_CLOEXEC and exec'd: the exec closes it, and closing the last fd of
 * an open_tree() dissolves the tree (umounts it; it lives on only for the
 * references it still has, the exe of the processes that run from it, and
 * is freed with the last). That matters: while it is still attached to
 * its anonymous namespace, anyone with CAP_SYS_ADMIN over their own mount
 * namespace (a user namespace of their own) could mount_setattr() it back
 * to read-write; once dissolved, mount_setattr() and open_tree() refuse it
 * (EINVAL). Kernel >= 5.12 and CAP_SYS_ADMIN (else ENOSYS, EPERM).
 */
static int ro_bind_self(void)
{
	struct mount_attr attr = {
		.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	};
	_cleanup_close_ int fd = -1;

	fd = (int)syscall(SYS_open_tree, AT_FDCWD, "/proc/self/exe", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
		return -errno;
	return TAKE_FD(fd);
}

static int memfd_copy_self(struct cryo_error *err)
{
	_cleanup_close_ int exe = -1, mfd = -1;
	struct stat st;
	off_t off = 0;

	exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (exe < 0)
		return cryo_error_set(err, errno, "open /proc/self/exe");
	if (fstat(exe, &st) < 0)
		return cryo_error_set(err, errno, "stat /proc/self/exe");
	mfd = memfd_create("cryo", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (mfd < 0 && errno == EINVAL)  /* kernels before 6.3 don't know MFD_EXEC */
		mfd = memfd_create("cryo", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return cryo_error_set(err, errno, "memfd_create");
	while (off < st.st_size) {
		ssize_t n = sendfile(mfd, exe, NULL, (size_t)(st.st_size - off));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return cryo_error_set(err, n < 0 ? errno : EIO, "copy the cryo binary into a memfd");
		off += n;
	}
	if (fcntl(mfd, F_ADD_SEALS, SEALS) < 0)
		return cryo_error_set(err, errno, "seal the memfd copy of cryo");
	return TAKE_FD(mfd);
}

/* a file on a detached mount reads as `/` through /proc/self/exe */
static bool on_detached_mount(void)
{
	char buf[2];

	return readlink("/proc/self/exe", buf, sizeof(buf)) == 1 && buf[0] == '/';
}

int cryo_sealexe_ensure(char **envp, struct cryo_error *err)
{
	const char *mode = getenv("CRYO_SEALEXE");
	_cleanup_free_ char *argbuf = NULL;
	_cleanup_free_ char **argv = NULL;
	_cleanup_close_ int fd = -1;
	const char *how = "a read-only detached bind mount";

	if (cryo_sealexe_is_sealed()) {
		cryo_debug("sealexe: running from a sealed memfd copy");
		return 0;
	}
	if (cryo_sealexe_binary_protected()) {
		cryo_debug("sealexe: running from %s", on_detached_mount() ? "a read-only detached bind mount"
				: "an immutable binary or a read-only mount: no re-exec");
		return 0;
	}
	if (on_detached_mount())  /* a re-exec that did not make it read-only: don't loop */
		return cryo_error_setx(err, EROFS, "cryo runs from a detached mount that is not read-only");
	if (mode && *mode && strcmp(mode, "memfd") != 0 && strcmp(mode, "bind") != 0)
		return cryo_error_setx(err, EINVAL, "CRYO_SEALEXE=`%s`: expected `bind` or `memfd`", mode);
	argv = self_argv(&argbuf);
	if (!argv)
		return cryo_error_set(err, ENOMEM, "read /proc/self/cmdline");
	if (!mode || strcmp(mode, "memfd") != 0) {
		fd = ro_bind_self();
		if (fd < 0 && mode && strcmp(mode, "bind") == 0)
			return cryo_error_set(err, -fd, "CRYO_SEALEXE=bind: read-only bind mount of the cryo binary");
		if (fd < 0)
			cryo_debug("sealexe: no read-only bind mount of the binary (%s): sealed memfd copy instead",
				   strerror(-fd));
	}
	if (fd < 0) {
		fd = memfd_copy_self(err);
		if (fd < 0)
			return fd;
		how = "a sealed memfd copy";
	}
	cryo_debug("sealexe: re-executing from %s", how);
	/*
	 * O_CLOEXEC + AT_EMPTY_PATH works: the kernel keeps the file open
	 * across exec; closing fd there is what dissolves the bind mount.
	 */
	syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
	return cryo_error_set(err, errno, "re-execute cryo from %s", how);
}
