/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Which mount holds a path: the mount id from statx(STATX_MNT_ID) looked
 * up in /proc/self/mountinfo, so bind mounts and mounts stacked on the
 * same directory resolve to the mount the kernel actually walks through.
 */
#ifndef CRYO_MOUNTINFO_H
#define CRYO_MOUNTINFO_H

#include <stdint.h>
#include <sys/types.h>

#include "error.h"

struct cryo_mount {
	uint64_t mnt_id;
	dev_t dev;          /* st_dev of the filesystem (mountinfo major:minor) */
	char *root;         /* the directory of the filesystem mounted here ("/" unless a bind mount) */
	char *mountpoint;   /* absolute, unescaped */
	char *fstype;       /* "ext4", "xfs", "overlay", ... */
	char *source;       /* "/dev/loop3", "overlay", ... */
	char *options;      /* the superblock's options ("rw,memory" for a v1 cgroup hierarchy) */
};

/*
 * Find the mount holding the file open at fd (any fd, also O_PATH).
 * Returns 0 and fills *ret (free with cryo_mount_done()), or -errno.
 */
int cryo_mountinfo_find_fd(int fd, struct cryo_mount *ret, struct cryo_error *err);

/* Same, for a path (followed if it is a symlink). */
int cryo_mountinfo_find(const char *path, struct cryo_mount *ret, struct cryo_error *err);

/*
 * Call fn for each mount of /proc/self/mountinfo, in its order (m is
 * freed after the call). A negative return of fn stops the walk and is
 * returned; else 0.
 */
int cryo_mountinfo_foreach(int (*fn)(const struct cryo_mount *m, void *userdata), void *userdata,
			   struct cryo_error *err);

/*
 * Detach every mount whose mount point begins with prefix (an absolute
 * path, compared as a string: "/a/b/.x." takes /a/b/.x.1 and all below
 * it), the deepest first. Returns how many, or -errno.
 */
int cryo_umount_prefixed(const char *prefix, struct cryo_error *err);

/* Free the strings of m; accepts a zeroed struct. */
void cryo_mount_done(struct cryo_mount *m);

/*
 * Do a and b belong to one superblock? Same device number, or, for
 * filesystems whose subvolumes get distinct device numbers (btrfs), the
 * same fstype on the same block device.
 */
int cryo_mount_same_fs(const struct cryo_mount *a, const struct cryo_mount *b);

#endif
