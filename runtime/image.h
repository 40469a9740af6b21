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

#include "error.h"

struct cryo_image {
	char *final_path;    /* absolute */
	char *staging_path;  /* absolute */
	int parent_fd;       /* O_DIRECTORY of the common parent */
	int dirfd;           /* O_DIRECTORY of the staging dir */
	char *final_name;
	char *staging_name;
	int committed;
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


#endif
