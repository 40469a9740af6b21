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
 * and put back on restore, into the bundle given to restore and nowhere
 * else (the image is untrusted data and names no host path that is used):
 * the image file is written into the bundle dir (resolved in it, no
 * symlinks) and loop-mounted at the rootfs; the tar is extracted by
 * libarchive in a child chroot()ed into a new directory that then takes
 * the rootfs's place, refusing absolute names, `..`, hard links out,
 * writes through symlinks and device nodes.
 *
 * Restoring returns what it changed, so the restore's undo puts the old
 * rootfs back (unmount, rename back, remount) and its success drops it.
 */
#ifndef CRYO_SNAPSHOT_H
#define CRYO_SNAPSHOT_H

#include <stdbool.h>

#include "error.h"
#include "loop.h"
#include "manifest.h"
#include "mountinfo.h"

#define CRYO_SNAPSHOT_IMAGE "rootfs.img"
#define CRYO_SNAPSHOT_TAR "rootfs.tar"

/* Take the snapshot of rootfs (whose mount is mnt) into dirfd, describing it in *s. */
int cryo_snapshot_take(const char *rootfs, const struct cryo_mount *mnt, bool own_fs, int dirfd,
		       Cryo__RootfsSnapshot *s, struct cryo_error *err);

struct cryo_snapshot_undo {
	char *rootfs;          /* NULL: nothing was changed that can be undone */
	int parent_fd;         /* the dir holding `name` */
	char *name;            /* the image file, or the rootfs dir, in parent_fd */
	char *old_name;        /* the previous one, kept under this name until commit; NULL = none */
	char *old_fstype;      /* the previous image was mounted at rootfs as this */
	bool placed;           /* the restored copy is at `name` */
	bool is_dir;
	bool mounted;          /* the restored image is mounted at rootfs */
	bool old_was_mounted;
	bool made_rootfs;
};

/*
 * Put the snapshot s of the image open at image_dirfd back at rootfs, the
 * rootfs of the bundle open at bundle_fd. old_bundle is the bundle path
 * the image recorded: only used to name the image file inside the bundle
 * as it was named in the old one. *ret (always set, free with
 * cryo_snapshot_undo_free()) records what changed, also on failure.
 */
int cryo_snapshot_restore(int image_dirfd, const Cryo__RootfsSnapshot *s, const char *old_bundle, int bundle_fd,
			  const char *rootfs, struct cryo_snapshot_undo **ret, struct cryo_error *err);

/* Put the rootfs back as it was before cryo_snapshot_restore(). */
void cryo_snapshot_undo(struct cryo_snapshot_undo *u);

/* The restore worked: remove the previous rootfs (kept for the undo). */
void cryo_snapshot_commit(struct cryo_snapshot_undo *u);

void cryo_snapshot_undo_free(struct cryo_snapshot_undo *u);

/*
 * The image file u loop-mounted at the rootfs where nothing was mounted
 * before (malloc'd; NULL: none): the container's state keeps it, and
 * delete unmounts it.
 */
char *cryo_snapshot_mounted_image(const struct cryo_snapshot_undo *u);

/*
 * What u changed, as the text of a JSON object, for the restore's hold
 * (hold.h: CRYO_HOLD_RESTORE): malloc'd, NULL when nothing was changed
 * or out of memory.
 */
char *cryo_snapshot_undo_json(const struct cryo_snapshot_undo *u);

/*
 * cryo_snapshot_undo() of what such a JSON says was changed, by a
 * restore that died: the mount at the rootfs is only taken down when it
 * is still the restored image's.
 */
int cryo_snapshot_undo_from_json(const char *json, struct cryo_error *err);

#endif
