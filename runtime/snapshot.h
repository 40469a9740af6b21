/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The rootfs snapshot of a checkpoint, taken while the container (and,
 * when it is a filesystem of its own, the filesystem) is frozen:
 *
 *   loop-mounted image  the image file backing the loop device (found in
 *                       /sys/block/loopN/loop/backing_file), reflinked
 *                       (FICLONE) when the filesystems allow, else copied
 *   anything else       a tar of the rootfs directory (tar(1), one
 *                       filesystem, numeric owners, xattrs)
 *
 * and put back on restore: the image file replaces the backing file (the
 * rootfs is unmounted and remounted from it), the tar is unpacked over
 * the directory.
 */
#ifndef CRYO_SNAPSHOT_H
#define CRYO_SNAPSHOT_H

#include <stdbool.h>

#include "error.h"
#include "manifest.h"
#include "mountinfo.h"

#define CRYO_SNAPSHOT_IMAGE "rootfs.img"
#define CRYO_SNAPSHOT_TAR "rootfs.tar"

/* Take the snapshot of rootfs (whose mount is mnt) into dirfd, describing it in *s. */
int cryo_snapshot_take(const char *rootfs, const struct cryo_mount *mnt, bool own_fs, int dirfd,
		       Cryo__RootfsSnapshot *s, struct cryo_error *err);

/* Put the snapshot from image_dir back at rootfs. */
int cryo_snapshot_restore(const char *image_dir, const Cryo__RootfsSnapshot *s, const char *rootfs,
			  struct cryo_error *err);

/* The file backing loop device dev ("/dev/loop3"), malloc'd. */
int cryo_loop_backing_file(const char *dev, char **ret, struct cryo_error *err);

#endif
