/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A container's cgroup directory for one controller, and small reads and
 * writes of its interface files — for `update` and `events`, which touch
 * files the container's creation (cgroup.c) does not. A controller's v1
 * hierarchy is used when the container has a cgroup there, else the
 * cgroup2 one when that lists the controller (hybrid hosts carry the real
 * controllers on v1, cgroup2-only hosts on v2).
 */
#ifndef CRYO_CGFILE_H
#define CRYO_CGFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

struct cryo_state;

/*
 * *ret_dir: the directory of st's cgroup for ctrl ("memory", "cpu",
 * "cpuacct", "cpuset", "pids", "blkio"); *ret_v2 whether it is cgroup2.
 * -ENOENT when the container has no cgroup with that controller.
 */
int cryo_cgfile_dir(const struct cryo_state *st, const char *ctrl, char **ret_dir, bool *ret_v2,
		    struct cryo_error *err);

/* Write value to dir/name; the error names both. */
int cryo_cgfile_write(const char *dir, const char *name, const char *value, struct cryo_error *err);

/* Read dir/name (NUL-terminated, trailing newline kept); 0 or -errno, no error text. */
int cryo_cgfile_read(const char *dir, const char *name, char **ret);

/* A number file ("max" reads as UINT64_MAX); -errno when absent or not a number. */
int cryo_cgfile_read_u64(const char *dir, const char *name, uint64_t *ret);

/* The value of key in a flat keyed file ("key value" lines: memory.stat, cpu.stat, memory.events). */
int cryo_cgfile_keyed(const char *dir, const char *name, const char *key, uint64_t *ret);

#endif
