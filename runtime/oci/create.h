/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * create: everything of a container set up, its init waiting on the exec
 * fifo (create.c, the init in init.c). run (container.h) starts with it.
 */
#ifndef CRYO_CREATE_H
#define CRYO_CREATE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "state.h"
#include "step.h"

/* In the container's state dir: the init blocks reading it until `start`. */
#define CRYO_EXEC_FIFO_NAME "exec.fifo"
/* How long a container's init may take to die once killed (delete, failed create). */
#define CRYO_CONTAINER_STOP_TIMEOUT_MS 10000

struct cryo_create_opts {
	const char *root;            /* state root */
	const char *id;
	const char *bundle;          /* bundle dir (relative is fine) */
	const char *pid_file;        /* write the init's pid here, or NULL */
	const char *console_socket;  /* unix socket for the pty master, or NULL */
	bool keep;                   /* run: leave the stopped container for `delete` (runc's --keep) */
};


int cryo_container_create(const struct cryo_create_opts *o, struct cryo_error *err);

/*
 * The names of create's steps, in order (i from 0; NULL past the last):
 * CRYO_FAULT=create:<name> makes that step fail, for unwind tests.
 */
const char *cryo_container_create_step(size_t i);

/* create's steps (step.h). */
extern const struct cryo_step_table cryo_create_step_table;

/*
 * Everything of create except releasing the lock; on success the init
 * waits on the fifo, the state says created, *ret_pid is our child and
 * *ret_lock the container's lock. With ret_console, the console's master
 * (a foreground run). On failure nothing is left: no cgroup, no veth, no
 * state dir, no process. init_sigmask: the signal mask the container's
 * process starts with (NULL: the caller's).
 */
int cryo_container_do_create(const struct cryo_create_opts *o, const sigset_t *init_sigmask, pid_t *ret_pid,
			     int *ret_lock, int *ret_console, struct cryo_error *err);

/* The container's state dir <root>/<id>, opened O_DIRECTORY. */
int cryo_container_state_dir_fd(const char *root, const char *id, struct cryo_error *err);

/* The OCI state handed to hooks on stdin (malloc'd JSON), NULL without memory. */
char *cryo_container_hook_state(const struct cryo_state *st, const char *status, pid_t pid);

#endif
