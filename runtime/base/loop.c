// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include "loop.h"
#include "mountinfo.h"
#include "util.h"

#define ATTACH_TRIES 64

int cryo_loop_attach(int fd, const char *label, char *ret_dev, size_t devlen, struct cryo_error *err)
{
	_cleanup_close_ int ctl = -1;
	struct loop_config cfg;
	int n, i, delay = 1;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return cryo_error_set(err, errno, "open /dev/loop-control");
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (unsigned)fd;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s", label);
	for (i = 1;; i++) {
		_cleanup_close_ int dev = -1;

		n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return cryo_error_set(err, errno, "find a free loop device");
		snprintf(ret_dev, devlen, "/dev/loop%d", n);
		dev = open(ret_dev, O_RDWR | O_CLOEXEC);
		if (dev < 0)
			return cryo_error_set(err, errno, "open `%s`", ret_dev);
		if (ioctl(dev, LOOP_CONFIGURE, &cfg) == 0) {
			/* the device may just have been released by another filesystem: drop its cached blocks */
			(void)ioctl(dev, BLKFLSBUF, 0);
			return TAKE_FD(dev);
		}
		/* EBUSY: another process took that device between GET_FREE and CONFIGURE */
		if (errno != EBUSY || i >= ATTACH_TRIES)
			return cryo_error_set(err, errno, "attach `%s` to `%s`%s", label, ret_dev,
					      errno == EBUSY ? " (every free loop device was taken by another process first)" : "");
		cryo_sleep_ms(delay);
		delay = delay < 16 ? delay * 2 : 16;
	}
}

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

bool cryo_loop_backed_by(const char *dev, const struct stat *file)
{
	struct loop_info64 li;
	_cleanup_close_ int fd = -1;

	if (!dev || strncmp(dev, "/dev/loop", 9) != 0)
		return false;
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, LOOP_GET_STATUS64, &li) < 0)
		return false;
	return li.lo_inode == file->st_ino && li.lo_device == file->st_dev;
}

int cryo_loop_unmount_image(const char *mountpoint, const char *image, struct cryo_error *err)
{
	struct cryo_mount m = { 0 };
	struct stat st;
	bool ours;

	if (stat(image, &st) < 0 || cryo_mountinfo_find(mountpoint, &m, NULL) < 0)
		return 0;
	ours = strcmp(m.mountpoint, mountpoint) == 0 && cryo_loop_backed_by(m.source, &st);
	cryo_mount_done(&m);
	if (ours && umount2(mountpoint, 0) < 0)
		return cryo_error_set(err, errno, "unmount `%s` (a loop mount of `%s`)", mountpoint, image);
	return 0;
}
