// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "log.h"
#include "snapshot.h"
#include "util.h"

int cryo_loop_backing_file(const char *dev, char **ret, struct cryo_error *err)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	const char *name;
	size_t len = 0;
	int r;

	if (strncmp(dev, "/dev/loop", 9) != 0)
		return cryo_error_setx(err, EINVAL, "`%s` is not a loop device", dev);
	name = dev + 5;
	if (asprintf(&path, "/sys/block/%s/loop/backing_file", name) < 0)
		return cryo_error_set(err, ENOMEM, "loop");
	r = cryo_read_file_at(AT_FDCWD, path, PATH_MAX, &buf, &len);
	if (r < 0)
		return cryo_error_set(err, -r, "read `%s`", path);
	while (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (len == 0)
		return cryo_error_setx(err, ENXIO, "loop device `%s` has no backing file", dev);
	*ret = TAKE_PTR(buf);
	return 0;
}

/* Reflink src into dst; fall back to a copy. Returns 1 for a reflink, 0 for a copy. */
static int clone_or_copy(int src, int dst, struct cryo_error *err)
{
	struct stat st;
	off_t left;

	if (ioctl(dst, FICLONE, src) == 0)
		return 1;
	if (fstat(src, &st) < 0)
		return cryo_error_set(err, errno, "stat");
	left = st.st_size;
	while (left > 0) {
		ssize_t n = copy_file_range(src, NULL, dst, NULL, (size_t)left, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
			char buf[1 << 16];
			ssize_t k = read(src, buf, sizeof(buf));

			if (k < 0)
				return cryo_error_set(err, errno, "read");
			if (k == 0)
				break;
			if (write(dst, buf, (size_t)k) != k)
				return cryo_error_set(err, errno ? errno : EIO, "write");
			left -= k;
			continue;
		}
		if (n < 0)
			return cryo_error_set(err, errno, "copy_file_range");
		if (n == 0)
			break;
		left -= n;
	}
	return 0;
}

/* Run tar with argv; its stdin/stdout are in_fd/out_fd (-1 = unchanged). */
static int run_tar(char *const argv[], int in_fd, int out_fd, struct cryo_error *err)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return cryo_error_set(err, errno, "fork tar");
	if (pid == 0) {
		if ((in_fd >= 0 && dup2(in_fd, STDIN_FILENO) < 0) || (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0))
			_exit(127);
		execvp("tar", argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cryo_error_set(err, errno, "wait for tar");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return cryo_error_setx(err, EIO, "tar %s", WIFEXITED(status) ? "failed" : "was killed");
	return 0;
}

int cryo_snapshot_take(const char *rootfs, const struct cryo_mount *mnt, bool own_fs, int dirfd,
		       Cryo__RootfsSnapshot *s, struct cryo_error *err)
{
	_cleanup_free_ char *backing = NULL;
	_cleanup_close_ int src = -1, dst = -1;
	struct stat st;
	int r;

	if (own_fs && mnt->source && strncmp(mnt->source, "/dev/loop", 9) == 0) {
		r = cryo_loop_backing_file(mnt->source, &backing, err);
		if (r < 0)
			return r;
		src = open(backing, O_RDONLY | O_CLOEXEC);
		if (src < 0)
			return cryo_error_set(err, errno, "open rootfs image `%s`", backing);
		dst = openat(dirfd, CRYO_SNAPSHOT_IMAGE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (dst < 0)
			return cryo_error_set(err, errno, "create `%s`", CRYO_SNAPSHOT_IMAGE);
		r = clone_or_copy(src, dst, err);
		if (r < 0)
			return cryo_error_prefix(err, "copy `%s`", backing);
		s->kind = r == 1 ? CRYO__ROOTFS_SNAPSHOT__KIND__REFLINK : CRYO__ROOTFS_SNAPSHOT__KIND__COPY;
		if (cryo_manifest_set_string(&s->name, CRYO_SNAPSHOT_IMAGE) < 0 ||
		    cryo_manifest_set_string(&s->source, backing) < 0)
			return cryo_error_set(err, ENOMEM, "snapshot");
	} else {
		char *argv[] = { "tar", "--numeric-owner", "--xattrs", "--one-file-system", "-C", (char *)rootfs,
				 "-cf", "-", ".", NULL };

		dst = openat(dirfd, CRYO_SNAPSHOT_TAR, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (dst < 0)
			return cryo_error_set(err, errno, "create `%s`", CRYO_SNAPSHOT_TAR);
		r = run_tar(argv, -1, dst, err);
		if (r < 0)
			return cryo_error_prefix(err, "tar of `%s`", rootfs);
		s->kind = CRYO__ROOTFS_SNAPSHOT__KIND__TAR;
		if (cryo_manifest_set_string(&s->name, CRYO_SNAPSHOT_TAR) < 0 ||
		    cryo_manifest_set_string(&s->source, rootfs) < 0)
			return cryo_error_set(err, ENOMEM, "snapshot");
	}
	if (fstat(dst, &st) < 0)
		return cryo_error_set(err, errno, "stat snapshot");
	s->has_size = 1;
	s->size = (uint64_t)st.st_size;
	if (cryo_manifest_set_string(&s->fstype, mnt->fstype) < 0 ||
	    cryo_manifest_set_string(&s->mountpoint, mnt->mountpoint) < 0)
		return cryo_error_set(err, ENOMEM, "snapshot");
	return 0;
}

/*
 * Attach path to a free loop device (autoclear: it goes away with the last
 * unmount). Returns the open device: autoclear also fires on the last close,
 * so the caller keeps it open until the mount holds the device.
 */
static int loop_attach(const char *path, char *ret_dev, size_t devlen, struct cryo_error *err)
{
	_cleanup_close_ int ctl = -1, file = -1, dev = -1;
	struct loop_config cfg;
	int n;

	file = open(path, O_RDWR | O_CLOEXEC);
	if (file < 0)
		return cryo_error_set(err, errno, "open `%s`", path);
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return cryo_error_set(err, errno, "open /dev/loop-control");
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	if (n < 0)
		return cryo_error_set(err, errno, "find a free loop device");
	snprintf(ret_dev, devlen, "/dev/loop%d", n);
	dev = open(ret_dev, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return cryo_error_set(err, errno, "open `%s`", ret_dev);
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (unsigned)file;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s", path);
	if (ioctl(dev, LOOP_CONFIGURE, &cfg) < 0)
		return cryo_error_set(err, errno, "attach `%s` to `%s`", path, ret_dev);
	/* the device may just have been released by the old rootfs: drop its cached blocks */
	(void)ioctl(dev, BLKFLSBUF, 0);
	return TAKE_FD(dev);
}

static int restore_image(const char *image_dir, const Cryo__RootfsSnapshot *s, const char *rootfs,
			 struct cryo_error *err)
{
	_cleanup_free_ char *tmp = NULL, *backing = NULL;
	_cleanup_close_ int src = -1, dst = -1, idir = -1, loopfd = -1;
	struct cryo_mount mnt = { 0 };
	char dev[32];
	int r;

	if (!s->source || !s->fstype)
		return cryo_error_setx(err, EBADMSG, "the snapshot does not say which image file it came from");
	/* the rootfs is still mounted from this image (same host): take it down first */
	if (cryo_mountinfo_find(rootfs, &mnt, NULL) == 0 && strcmp(mnt.mountpoint, rootfs) == 0 && mnt.source &&
	    cryo_loop_backing_file(mnt.source, &backing, NULL) == 0 && strcmp(backing, s->source) == 0) {
		if (umount2(rootfs, 0) < 0) {
			r = cryo_error_set(err, errno, "unmount the current rootfs `%s`", rootfs);
			cryo_mount_done(&mnt);
			return r;
		}
		/* a loop device not set to autoclear stays bound: release it */
		int lfd = open(mnt.source, O_RDONLY | O_CLOEXEC);

		if (lfd >= 0) {
			(void)ioctl(lfd, LOOP_CLR_FD, 0);
			close(lfd);
		}
	}
	cryo_mount_done(&mnt);

	idir = open(image_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (idir < 0)
		return cryo_error_set(err, errno, "open `%s`", image_dir);
	src = openat(idir, s->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (src < 0)
		return cryo_error_set(err, errno, "open `%s`", s->name);
	/* a new file renamed over the old: the image keeps its copy for the next restore */
	if (asprintf(&tmp, "%s.cryo-restore", s->source) < 0)
		return cryo_error_set(err, ENOMEM, "restore rootfs");
	dst = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (dst < 0)
		return cryo_error_set(err, errno, "create `%s`", tmp);
	r = clone_or_copy(src, dst, err);
	if (r >= 0 && fsync(dst) < 0)
		r = cryo_error_set(err, errno, "fsync `%s`", tmp);
	if (r >= 0 && rename(tmp, s->source) < 0)
		r = cryo_error_set(err, errno, "rename `%s` to `%s`", tmp, s->source);
	if (r < 0) {
		(void)unlink(tmp);
		return r;
	}
	r = cryo_mkdir_p(rootfs, 0755);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", rootfs);
	/* held until the mount holds the device (see loop_attach) */
	loopfd = loop_attach(s->source, dev, sizeof(dev), err);
	if (loopfd < 0)
		return loopfd;
	if (mount(dev, rootfs, s->fstype, 0, NULL) < 0) {
		r = cryo_error_set(err, errno, "mount `%s` (%s) at `%s`", dev, s->fstype, rootfs);
		(void)ioctl(loopfd, LOOP_CLR_FD, 0);
		return r;
	}
	return 0;
}

int cryo_snapshot_restore(const char *image_dir, const Cryo__RootfsSnapshot *s, const char *rootfs,
			  struct cryo_error *err)
{
	_cleanup_free_ char *tarpath = NULL;
	_cleanup_close_ int in = -1;

	switch (s->kind) {
	case CRYO__ROOTFS_SNAPSHOT__KIND__NONE:
		return 0;
	case CRYO__ROOTFS_SNAPSHOT__KIND__REFLINK:
	case CRYO__ROOTFS_SNAPSHOT__KIND__COPY:
		return restore_image(image_dir, s, rootfs, err);
	case CRYO__ROOTFS_SNAPSHOT__KIND__TAR: {
		char *argv[] = { "tar", "--numeric-owner", "--xattrs", "-p", "-C", (char *)rootfs, "-xf", "-", NULL };

		if (!s->name || asprintf(&tarpath, "%s/%s", image_dir, s->name) < 0)
			return cryo_error_set(err, ENOMEM, "restore rootfs");
		in = open(tarpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (in < 0)
			return cryo_error_set(err, errno, "open `%s`", tarpath);
		return run_tar(argv, in, -1, err);
	}
	default:
		return cryo_error_setx(err, EBADMSG, "unknown rootfs snapshot kind %d", (int)s->kind);
	}
}
