/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The last stretch of every process cryo puts in a container — the init
 * after `start`, and each `exec` — once it is in the container's
 * namespaces, cgroup and root: find args[0] with the process's own PATH,
 * then rlimits, seccomp, capabilities, user, umask and no_new_privs in the
 * order caps.h and seccomp.h explain, and execve.
 */
#ifndef CRYO_PROCESS_H
#define CRYO_PROCESS_H

#include <stddef.h>

#include "error.h"
#include "spec.h"

/*
 * Resolve spec->args[0] like execvp() would inside the container: as a
 * path when it has a `/`, else along the PATH of spec->env (a default
 * PATH when there is none). buf receives the path to execve.
 */
int cryo_process_find_executable(const struct cryo_spec *spec, char *buf, size_t len, struct cryo_error *err);

/* setgroups(additionalGids), setresgid(gid), setresuid(uid). */
int cryo_process_set_user(const struct cryo_spec *spec, struct cryo_error *err);

/*
 * rlimits, seccomp (early without NNP), bounding set + KEEPCAPS, the
 * user, the capability sets, umask (022 by default), NNP, seccomp (late
 * with NNP): the process's final security context, in which the
 * startContainer hooks run too (as with runc and crun). With
 * SCMP_ACT_NOTIFY, l->fd (from cryo_seccomp_listener_connect) gets the
 * notify fd and the container process state; l->fd is closed (set to -1)
 * in every case. l may be NULL without SCMP_ACT_NOTIFY.
 */
int cryo_process_setup(const struct cryo_spec *spec, struct cryo_seccomp_listener *l, struct cryo_error *err);

/* cryo_process_setup(), then execve(exe, args, env). Returns only on failure. */
int cryo_process_exec(const struct cryo_spec *spec, const char *exe, struct cryo_seccomp_listener *l,
		      struct cryo_error *err);

#endif
