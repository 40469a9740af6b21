/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The OCI lifecycle: create (everything set up, the init waits on the
 * exec fifo), start (release it), run (both, optionally waiting for the
 * exit status), kill, delete, state. Each entry point takes the state root
 * (--root) and a container id and holds the container's lock while it
 * changes something.
 */
#ifndef CRYO_CONTAINER_H
#define CRYO_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "create.h"
#include "error.h"
#include "freezer.h"
#include "state.h"

int cryo_container_start(const char *root, const char *id, struct cryo_error *err);

/*
 * create + start. detach: return once started. Otherwise wait for the
 * init, forwarding SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 to it,
 * remove the container and set *ret_status to its exit code (128+n when
 * killed by signal n). Those signals are blocked from before create on:
 * one that arrives while create or start runs is forwarded once the
 * container runs (the container's process starts with the caller's mask).
 */
int cryo_container_run(const struct cryo_create_opts *o, bool detach, int *ret_status, struct cryo_error *err);

/* Signal the init (all: every task of the cgroup). */
int cryo_container_kill(const char *root, const char *id, int sig, bool all, struct cryo_error *err);

/*
 * Kill what is left of the container, remove its cgroups and network, run
 * its poststop hooks and remove its state: the end of delete, and of a
 * checkpoint that does not leave the container running (as runc: the
 * container is gone, restore makes it again). The caller holds the lock.
 */
int cryo_container_destroy(const char *root, struct cryo_state *st, struct cryo_error *err);

/*
 * Remove a stopped (or created) container; force kills a running one first.
 * -ENOENT only when there is no such container.
 */
int cryo_container_delete(const char *root, const char *id, bool force, struct cryo_error *err);

/* Load + refresh: status from the kernel (stopped, paused when frozen). */
int cryo_container_load(const char *root, const char *id, struct cryo_state **ret, struct cryo_error *err);

/* The freezer state of the container's cgroup (backend from the state). */
int cryo_container_freezer_state(const struct cryo_state *st, enum cryo_freezer_state *ret, struct cryo_error *err);

/* The OCI state JSON (+ "org.cryo.freezer"). */
int cryo_container_state_json(const char *root, const char *id, struct json_object **ret, struct cryo_error *err);

/* The pids in the container's cgroup. */
int cryo_container_pids(const char *root, const char *id, pid_t **ret, size_t *ret_n, struct cryo_error *err);

/* Signal names and numbers: "KILL", "SIGKILL", "9". */
int cryo_signal_parse(const char *s, int *ret);


#endif
