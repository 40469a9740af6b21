/* SPDX-License-Identifier: GPL-2.0-only */
/* Loading the filter of a linux.seccomp, with -ENOSYS for syscalls newer than the profile (seccomp-load.c). */
#ifndef CRYO_SECCOMP_LOAD_H
#define CRYO_SECCOMP_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <seccomp.h>

#include "error.h"

#define CRYO_SECCOMP_LOAD_MAX_ARCHES 16

/* What the loader needs of a profile (linux.seccomp) besides libseccomp's filter */
struct cryo_seccomp_load {
	uint32_t default_action;            /* SCMP_ACT_* */
	const uint32_t *arches;             /* SCMP_ARCH_* tokens it lists (the native one is added) */
	size_t n_arches;                    /* at most CRYO_SECCOMP_LOAD_MAX_ARCHES */
	const char *const *names;           /* every syscall name of its rules */
	size_t n_names;
	bool tsync, log, spec_allow;        /* its SECCOMP_FILTER_FLAG_* */
	bool notify;                        /* it uses SCMP_ACT_NOTIFY: make a listener */
};

/*
 * Load ctx, the filter built from the profile l describes, into the
 * calling thread (with its flags); *ret_notify_fd: the notify fd when it
 * uses SCMP_ACT_NOTIFY (O_CLOEXEC, the caller's to close), else -1.
 */
int cryo_seccomp_load(scmp_filter_ctx ctx, const struct cryo_seccomp_load *l, int *ret_notify_fd,
		      struct cryo_error *err);

#endif
