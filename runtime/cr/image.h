/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Checkpoint image directories, committed atomically.
 *
 * A checkpoint is written into a staging directory (0700) created next to
 * the final one, in the same parent and so on the same filesystem:
 * `.<name>.staging-<pid>`. Commit fsyncs every file and the directory,
 * renames staging over the final name in one step and fsyncs the parent,
 * so after a crash at any moment the final path holds either the previous
 * checkpoint or the complete new one, never a mix. A failed checkpoint
 * removes its staging dir; one left by a killed cryo (its pid gone) is
 * removed by the next checkpoint to the same place.
 *
 * The final path may not exist, be an empty directory, or hold an older
 * cryo checkpoint (which is replaced atomically with RENAME_EXCHANGE and
 * then removed). Anything else is refused: cryo never deletes a directory
 * it did not write.
 */
#ifndef CRYO_IMAGE_H
#define CRYO_IMAGE_H

#include <stdbool.h>

#include "error.h"

/*
 * Every cryo image holds its manifest (manifest.h) under this name: a
 * directory with one is a cryo checkpoint (commit may replace it).
 */
#define CRYO_MANIFEST_NAME "manifest.pb"
/* The signature over manifest.pb (sign.h): not listed in it. */
#define CRYO_MANIFEST_SIG_NAME "manifest.sig"

struct cryo_image {
	char *final_path;    /* absolute */
	char *staging_path;  /* absolute */
	int parent_fd;       /* O_DIRECTORY of the common parent */
	int dirfd;           /* O_DIRECTORY of the staging dir */
	char *final_name;
	char *staging_name;
	int committed;
	/*
	 * Read once right away, then removed (a migration's image): its
	 * syncs only seal the modes, no syncfs (nothing would read it back
	 * after a crash, and syncfs waits for every writer of that fs).
	 */
	bool transient;
};

/* Create the staging dir for final_path (creating its parent 0700 if needed). */
int cryo_image_stage(const char *final_path, struct cryo_image **ret, struct cryo_error *err);

/* fsync, rename into place, fsync the parent. The staging dir is gone afterwards. */
int cryo_image_commit(struct cryo_image *img, struct cryo_error *err);

/* Make every file of the staged image durable (one syncfs), before the manifest names them. */
int cryo_image_sync(struct cryo_image *img, struct cryo_error *err);

/*
 * Remove the staging dir if the image was not committed, then free. Safe
 * on NULL and after a commit.
 */
void cryo_image_abort(struct cryo_image *img);

/*
 * Reading an image: it is untrusted data (whoever could write it may be
 * hostile), so nothing in it is followed, waited on or trusted by name.
 *
 * cryo_image_open() opens the image directory and refuses one another user
 * could change under us: it must be a directory owned by the caller's
 * effective uid (or root) and writable by neither group nor others.
 * Returns the O_DIRECTORY fd.
 */
int cryo_image_open(const char *path, struct cryo_error *err);
/* The same, path relative to dirfd (symlinks followed: `parent` of a dump on a pre-dump). */
int cryo_image_open_at(int dirfd, const char *path, struct cryo_error *err);

/*
 * Open a file of the image: O_NOFOLLOW|O_NONBLOCK (a FIFO planted in the
 * image returns at once instead of blocking), and it must be a regular
 * file. Returns the fd (blocking again), or -errno with the file named.
 */
int cryo_image_open_file(int dirfd, const char *name, struct cryo_error *err);

/*
 * Read a whole file of an image (or a key file) into a NUL-terminated
 * malloc'd buffer, treating it as untrusted: never following a symlink
 * in its last component (-ELOOP), never blocking on a FIFO, only a
 * regular file (-EINVAL otherwise), at most max bytes (-EFBIG).
 * ret_st (may be NULL) gets the file's fstat().
 */
struct stat;
int cryo_image_read_file(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len, struct stat *ret_st,
			 struct cryo_error *err);


/*
 * A CRIU page image (pages-N.img): the tasks' raw memory. CRIU writes it
 * once, in order, through one fd, and on restore copies its bytes into the
 * tasks without parsing any of them (imghash.h, restore.c).
 */
bool cryo_image_is_pages(const char *name);

#endif
