/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef CRYO_FEATURES_H
#define CRYO_FEATURES_H

#include <json-c/json.h>

#include "error.h"

/*
 * Describe this build and host as an OCI `features` document extended with
 * an "org.cryo" section (freezer backends, fsfreeze, kmod, CRIU).
 */
int cryo_features_json(struct json_object **ret, struct cryo_error *err);

#endif
