/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CRIU through libcriu: `criu swrk` started by cryo itself (it dies with
 * cryo: PR_SET_PDEATHSIG) and driven over libcriu's service fd, with
 * CRIU's notifications (post-dump, post-restore, the pty master) handled
 * here. The front end (criu.h) calls it for everything but lazy pages.
 */
#ifndef CRYO_CRIU_LIB_H
#define CRYO_CRIU_LIB_H

#include <sys/types.h>

#include "criu-env.h"
#include "error.h"

int cryo_criu_lib_dump(const struct cryo_criu_opts *o, struct cryo_error *err);
int cryo_criu_lib_restore(const struct cryo_criu_opts *o, pid_t *ret_pid, struct cryo_error *err);

#endif
