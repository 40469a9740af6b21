/* SPDX-License-Identifier: GPL-2.0-only */
/* The bundle `cryo receive` makes, journalled until the commit (receive-bundle.c). */
#ifndef CRYO_RECEIVE_BUNDLE_H
#define CRYO_RECEIVE_BUNDLE_H

#include <stdbool.h>

#include "error.h"
#include "hold.h"
#include "snapshot.h"

/* in the bundle until the commit: the journal's proof that the dir is receive's */
#define CRYO_BUNDLE_MARKER ".cryo-receive"
#define CRYO_BUNDLE_TOKEN_SIZE 40   /* 32 hex digits and a NUL, rounded */

/* The rootfs extracted ahead, in the bundle until the restore takes it (a name no root.path of ours has) */
#define CRYO_BUNDLE_ROOTFS_AHEAD ".cryo-rootfs-ahead"

struct cryo_receive_bundle {
	char *path;                 /* <bundle_dir>/<id> */
	int fd;                     /* open on it once made, else -1 */
	bool made;
	struct cryo_hold *hold;     /* journals it until the commit (CRYO_HOLD_BUNDLE) */
	char token[CRYO_BUNDLE_TOKEN_SIZE];  /* its marker, in it and in its hold's detail */
	struct cryo_snapshot_pre pre;        /* the rootfs, extracted into it while the final dump comes */
};
#define CRYO_RECEIVE_BUNDLE_INIT { .fd = -1, .pre = CRYO_SNAPSHOT_PRE_INIT }

/*
 * Make the bundle dir <bundle_dir>/<id>, journalled first (`<id>@bundle`,
 * a fresh marker), with its marker in it; done once (a second call: 0).
 */
int cryo_receive_bundle_make(struct cryo_receive_bundle *b, const char *root, const char *bundle_dir, const char *id,
			     struct cryo_error *err);

/*
 * The final dump's rootfs snapshot `name` is in image_dirfd: start
 * extracting it into the bundle (made now if it was not), for the restore
 * to take (snapshot.h). A head start only: what fails is left to the
 * restore, which extracts as it would have.
 */
void cryo_receive_bundle_ahead(struct cryo_receive_bundle *b, const char *root, const char *bundle_dir,
			       const char *id, int image_dirfd, const char *name);

/* Undo: what is extracted ahead goes, the bundle is removed, its journal entry released. */
void cryo_receive_bundle_remove(struct cryo_receive_bundle *b, const char *bundle_dir, const char *id);

/* Committed: the bundle is the container's; its marker and journal entry go. */
void cryo_receive_bundle_keep(struct cryo_receive_bundle *b, const char *id);

/* Close and free (a journal entry not released stays, for `cryo recover`). */
void cryo_receive_bundle_free(struct cryo_receive_bundle *b);

#endif
