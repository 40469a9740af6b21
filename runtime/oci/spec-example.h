/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The config.json `cryo spec` writes: the same example runc's `spec`
 * writes (a terminal, three capabilities bounding/effective/permitted and
 * no ambient ones — as runc since 1.2: ambient ones need inheritable —,
 * a read-only rootfs, /sys/fs/cgroup read-only, every device denied, the cgroup
 * namespace only on a cgroup2-only host), and its `--rootless` variant
 * (no network namespace, a user namespace mapping the caller to root,
 * /sys bound from the host, no uid=/gid= mount options, no resources).
 */
#ifndef CRYO_SPEC_EXAMPLE_H
#define CRYO_SPEC_EXAMPLE_H

#include <stdbool.h>

#include "error.h"

/* *ret (malloc'd, pretty-printed JSON text) */
int cryo_spec_example(bool rootless, char **ret, struct cryo_error *err);

#endif
