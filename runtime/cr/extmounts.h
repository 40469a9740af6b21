/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CRIU's external mounts: the one mapping between a container's mounts
 * whose source lies outside its mount namespace and the names CRIU dumps
 * them under, used by checkpoint (dump) and restore alike so the two can't
 * drift apart (tests/unit/test_extmounts.c checks that every name dumped
 * is a name restore maps):
 *
 *   what                      dumped as (mountpoint → name)   restored as (name → host source)
 *   bind mounts of the bundle destination → destination        destination → source (relative to the bundle)
 *   host devices in /dev      /dev/X → /dev/X                  /dev/X → /dev/X
 *   masked files              path → /dev/null                 (the /dev/null device entry)
 *
 * Masked directories are empty tmpfs mounts CRIU dumps like any tmpfs.
 * Both lists are NULL-terminated key, value pairs for libcriu's
 * criu_add_ext_mount(); free with cryo_strv_free().
 */
#ifndef CRYO_EXTMOUNTS_H
#define CRYO_EXTMOUNTS_H

#include <sys/types.h>

#include "error.h"
#include "mount.h"

struct cryo_spec;


/*
 * Dump: (mountpoint → name) pairs for the container whose init is pid
 * (which masked paths are files is seen through /proc/PID/root).
 */
int cryo_extmounts_dump(const struct cryo_spec *spec, pid_t pid, char ***ret, struct cryo_error *err);

/*
 * Restore: (name → host source) pairs, bind sources relative to bundle;
 * cgroup: the restored container's (where the binds of its v1 cgroups
 * lead, cryo_mount_cgroup_binds()).
 */
int cryo_extmounts_restore(const struct cryo_spec *spec, const char *bundle, const char *cgroup, char ***ret,
			   struct cryo_error *err);

#endif
