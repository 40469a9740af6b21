/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef CRYO_RESTORE_CONFIG_H
#define CRYO_RESTORE_CONFIG_H

#include "error.h"
#include "spec.h"

/*
 * Compare the bundle's config (cur) with the image's (img) for restore
 * `id`: namespaces, mounts (by destination, any order), the terminal and
 * a read-only root must be the same (-EINVAL with why, in err); other
 * differences are the new bundle's and only warned about.
 */
int cryo_restore_compare_config(const char *id, const struct cryo_spec *cur, const struct cryo_spec *img,
				struct cryo_error *err);

#endif
