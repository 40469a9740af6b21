/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `cryo exec`: run one more process in a running (or created) container,
 * runc's semantics. The process is the container's own config.json
 * process with the caller's changes, or a whole OCI process JSON
 * (--process, what Podman/conmon pass); the rest of the config — seccomp
 * profile, namespaces — is the container's.
 *
 * The new process joins every namespace of the container's init (through
 * a pidfd of it: one atomic setns, the user namespace first; the pid
 * namespace is entered by cryo itself before the fork, since a setns of
 * CLONE_NEWPID only places children there), its cgroup in every hierarchy
 * (written by cryo before the child may go on), then chdir()s to
 * process.cwd inside the container root and ends like the init
 * (runtime/process.h). A paused container is refused: a process joining a
 * frozen cgroup would freeze before it could exec (ignore_paused: it
 * does, and starts when the container is resumed; the container's lock
 * is let go meanwhile, so that `resume` can take it).
 *
 * A restored container is no different: its init pid and cgroup are in
 * the state like any other's.
 */
#ifndef CRYO_EXEC_H
#define CRYO_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CRYO_EXEC_MAX_PRESERVE_FDS 1024

struct cryo_exec_opts {
	const char *root;            /* state root */
	const char *id;
	/*
	 * An OCI process JSON (runtime-spec `process` object). When set, the
	 * process is exactly that and the per-field options below are
	 * ignored, as runc does.
	 */
	const char *process_path;
	/* Without process_path: the container's process with these changes. */
	char *const *args;           /* NULL-terminated, at least one */
	const char *cwd;             /* NULL: the config's */
	char *const *env;            /* KEY=VALUE, replaces the config's KEY; may be NULL */
	char *const *caps;           /* CAP_* added to bounding, effective, permitted (and ambient
					when it is inheritable in the config); may be NULL */
	bool has_user;
	uint32_t uid, gid;           /* --user uid[:gid] (gid 0 when not given) */
	const uint32_t *additional_gids;
	size_t n_additional_gids;
	bool tty;                    /* process.terminal */
	bool no_new_privs;           /* force noNewPrivileges on */

	bool detach;                 /* return once the process runs */
	const char *pid_file;        /* its host pid, written once it runs */
	const char *console_socket;  /* unix socket for the pty master (terminal) */
	unsigned int preserve_fds;   /* fds 3 .. 3+n-1 are passed on */
	bool ignore_paused;          /* a paused container is not refused: the process starts once it is resumed */
	char *const *cgroups;        /* --cgroup [CTRL[,CTRL]:]PATH, sub-cgroups to join; may be NULL */
};

/*
 * Run it. Without detach, wait for the process (forwarding SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 to it; relaying its terminal to our
 * stdio when it has one and no console socket was given) and set
 * *ret_status to its exit code, 128+n when killed by signal n. With
 * detach, *ret_status is 0 once it was exec'd.
 */
int cryo_exec(const struct cryo_exec_opts *o, int *ret_status, struct cryo_error *err);

#endif
