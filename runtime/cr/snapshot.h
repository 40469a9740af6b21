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
#include <stdint.h>
#include <sys/types.h>

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
 * A tar snapshot extracted ahead of its restore, as extract_tar would
 * (same child, same refusals), into a new dir `name` in dir_fd: receive
 * starts it as soon as the snapshot file is in, while the source's final
 * dump still runs, and the restore of that same file then takes the dir
 * instead of extracting (cryo_snapshot_restore's pre). Nothing in it is
 * used before the caller verified the image: the restore comes after.
 * The extraction dies with the thread that started it.
 */
struct cryo_snapshot_pre {
	pid_t pid;           /* the extraction running, 0 = none */
	int msg_fd;          /* where its error comes */
	int dir_fd;          /* the dir `name` is in (the caller's) */
	char *name;          /* the dir it fills; NULL = nothing ahead */
	char *file;          /* the snapshot file it extracts */
	int r;               /* its outcome, once waited */
	/* what became of the last one (kept by cancel, for the caller's timings) */
	int64_t started_us;  /* cryo_now_us() at its start */
	int64_t taken_us;    /* when the restore took it (0: it did not) */
	int64_t waited_us;   /* how long the restore waited for it to end */
};
#define CRYO_SNAPSHOT_PRE_INIT { .msg_fd = -1, .dir_fd = -1 }

/* Start extracting the tar `file` of image_dirfd into a new dir `name` in dir_fd (*p: a cancelled one). */
int cryo_snapshot_pre_start(int image_dirfd, const char *file, int dir_fd, const char *name,
			    struct cryo_snapshot_pre *p, struct cryo_error *err);

/* Wait for the extraction to end: 0 = whole. */
int cryo_snapshot_pre_wait(struct cryo_snapshot_pre *p, struct cryo_error *err);

/* Kill the extraction (if running), remove its dir; *p is empty again. */
void cryo_snapshot_pre_cancel(struct cryo_snapshot_pre *p);

/*
 * Put the snapshot s of the image open at image_dirfd back at rootfs, the
 * rootfs of the bundle open at bundle_fd. old_bundle is the bundle path
 * the image recorded: only used to name the image file inside the bundle
 * as it was named in the old one. pre (NULL: none): a tar extracted ahead,
 * taken when it is of s's file, whole and on the rootfs's filesystem, and
 * cancelled in any case. *ret (always set, free with
 * cryo_snapshot_undo_free()) records what changed, also on failure.
 */
int cryo_snapshot_restore(int image_dirfd, const Cryo__RootfsSnapshot *s, const char *old_bundle, int bundle_fd,
			  const char *rootfs, struct cryo_snapshot_pre *pre, struct cryo_snapshot_undo **ret,
			  struct cryo_error *err);

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
