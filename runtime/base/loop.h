/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Loop devices: the one place cryo attaches a file to one
 * (/dev/loop-control) and asks which file backs one.
 */
#ifndef CRYO_LOOP_H
#define CRYO_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "error.h"

/*
 * Attach the open file fd to a free loop device, set to autoclear (it
 * goes away with the last unmount, or the last close before one) and
 * named label. LOOP_CTL_GET_FREE then LOOP_CONFIGURE is a race between
 * processes that attach at the same time (both are told the same free
 * device; the second one's LOOP_CONFIGURE fails with EBUSY): on EBUSY a
 * new free device is asked for, a bounded number of times, and the
 * final error names the device. Returns the open device (keep it open
 * until a mount holds it) and its path in ret_dev.
 */
int cryo_loop_attach(int fd, const char *label, char *ret_dev, size_t devlen, struct cryo_error *err);

/* The file backing loop device dev ("/dev/loop3"), malloc'd. */
int cryo_loop_backing_file(const char *dev, char **ret, struct cryo_error *err);

/* Is dev a loop device backed by the file of st (by device and inode)? */
bool cryo_loop_backed_by(const char *dev, const struct stat *file);

/*
 * Unmount mountpoint if it is still a loop mount of the file image (by
 * device and inode; an autoclear loop device goes with it). 0 also when
 * it is not, or no longer: then it is not ours to take down.
 */
int cryo_loop_unmount_image(const char *mountpoint, const char *image, struct cryo_error *err);

#endif
