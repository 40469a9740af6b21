/* SPDX-License-Identifier: GPL-2.0-only */
/* Loading the filter of a linux.seccomp, with -ENOSYS for syscalls newer than the profile (seccomp-load.c). */
#ifndef CRYO_SECCOMP_LOAD_H
#define CRYO_SECCOMP_LOAD_H

#include <stdbool.h>

#include <seccomp.h>

#include "error.h"
#include "seccomp.h"

/* Does spec's filter get the -ENOSYS stub (any default but allow and log)? */
bool cryo_seccomp_wants_enosys(const struct cryo_seccomp_spec *spec);

/*
 * Load ctx, the filter built from spec, into the calling thread (with
 * spec's flags); *ret_notify_fd: the notify fd when spec uses
 * SCMP_ACT_NOTIFY (O_CLOEXEC, the caller's to close), else -1.
 */
int cryo_seccomp_load(scmp_filter_ctx ctx, const struct cryo_seccomp_spec *spec, int *ret_notify_fd,
		      struct cryo_error *err);

#endif
