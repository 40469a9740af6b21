/* SPDX-License-Identifier: GPL-2.0-only */
/* The bundle `cryo receive` makes, journalled until the commit (receive-bundle.c). */
#ifndef CRYO_RECEIVE_BUNDLE_H
#define CRYO_RECEIVE_BUNDLE_H

#include "error.h"
#include "hold.h"

/* in the bundle until the commit: the journal's proof that the dir is receive's */
#define CRYO_BUNDLE_MARKER ".cryo-receive"
#define CRYO_BUNDLE_TOKEN_SIZE 40   /* 32 hex digits and a NUL, rounded */

/* Journal the bundle dir `bundle` (made next) as `<id>@bundle`, with a fresh marker in token. */
int cryo_receive_bundle_journal(const char *root, const char *id, const char *bundle, char token[CRYO_BUNDLE_TOKEN_SIZE],
				struct cryo_hold **ret, struct cryo_error *err);
/* Committed: the bundle is the container's; its marker and journal entry go. */
void cryo_receive_bundle_keep(const char *bundle, const char *id, struct cryo_hold **h);

#endif
