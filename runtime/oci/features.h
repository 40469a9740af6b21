/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef CRYO_FEATURES_H
#define CRYO_FEATURES_H

#include <json-c/json.h>

#include "error.h"
#include "step.h"

/*
 * Describe this build and host as an OCI `features` document extended with
 * an "org.cryo" section (freezer backends, fsfreeze, kmod, CRIU) and the
 * steps of the pipelines in steps (NULL-terminated; the caller knows them
 * all, this layer only some).
 */
int cryo_features_json(const struct cryo_step_table *const *steps, struct json_object **ret, struct cryo_error *err);

#endif
