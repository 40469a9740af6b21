/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The per-container state directory: <root>/<id>/ (0700) holding
 * state.json and a lock file. Every command that changes a container
 * holds the flock of <root>/<id>/lock, so concurrent commands on one
 * container are serialised.
 */
#ifndef CRYO_STATE_H
#define CRYO_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "error.h"
#include "util.h"

enum cryo_status {
	CRYO_STATUS_CREATING,
	CRYO_STATUS_CREATED,
	CRYO_STATUS_RUNNING,
	CRYO_STATUS_PAUSED,
	CRYO_STATUS_STOPPED,
	_CRYO_STATUS_MAX,
};

extern const char *const cryo_status_names[_CRYO_STATUS_MAX];

/* Parse a status name; -EINVAL for an unknown one. */
int cryo_status_from_string(const char *s, enum cryo_status *ret);

struct cryo_state {
	char *id;
	char *bundle;             /* absolute path of the OCI bundle */
	char *rootfs;             /* absolute host path of the container's rootfs */
	pid_t pid;                /* container init, 0 if none */
	uint64_t pid_start_time;  /* /proc/PID/stat field 22, guards pid reuse */
	enum cryo_status status;  /* as last recorded; see cryo_state_refresh() */
	char *cgroup_path;        /* relative cgroup path in every hierarchy ("cryo/web") */
	char *cgroup_made;        /* the top of what create made of cgroup_path ("cryo"), NULL: unknown */
	bool cgroup_joined;       /* cgroup_path existed at create: delete never kills the rest of it */
	char *cgroup_v2;          /* absolute path in the cgroup2 hierarchy, or NULL */
	char *cgroup_v1_freezer;  /* absolute path in the v1 freezer hierarchy, or NULL */
	char *freezer_backend;    /* "v1", "v2" or "kmod" */
	char *rootfs_image;       /* the image file restore loop-mounted at rootfs, where nothing was mounted: delete unmounts it */
	int64_t created;          /* unix seconds */
	struct json_object *annotations; /* owned, may be NULL */
};

/* Allocate an empty state for id (validated). */
int cryo_state_new(const char *id, struct cryo_state **ret, struct cryo_error *err);
void cryo_state_free(struct cryo_state *st);
CRYO_DEFINE_CLEANUP(struct cryo_state *, cryo_state_free)

/* Load <root>/<id>/state.json. -ENOENT with "container `id` does not exist". */
int cryo_state_load(const char *root, const char *id, struct cryo_state **ret, struct cryo_error *err);

/* Atomically replace <root>/<id>/state.json (write temp, fsync, rename). */
int cryo_state_save(const char *root, const struct cryo_state *st, struct cryo_error *err);

/*
 * durable=false skips the fsyncs: still atomic against a crash of cryo
 * (rename), not against a crash of the host. Fine for lifecycle states:
 * after a host crash the processes are gone and refresh says stopped.
 */
int cryo_state_save_ext(const char *root, const struct cryo_state *st, bool durable, struct cryo_error *err);

/*
 * Create <root> (0700) and <root>/<id> (0700); -EEXIST if the container
 * exists already.
 */
int cryo_state_create_dir(const char *root, const char *id, struct cryo_error *err);

/* Remove <root>/<id> and everything in it. */
int cryo_state_remove_dir(const char *root, const char *id, struct cryo_error *err);

/*
 * Take the container's lock (flock LOCK_EX on <root>/<id>/lock), waiting
 * at most timeout_ms (<0 = forever). Returns the fd holding the lock.
 */
int cryo_state_lock(const char *root, const char *id, int timeout_ms, int *ret_fd, struct cryo_error *err);

/*
 * Re-derive status from the kernel: stopped if pid is gone (or reused,
 * detected by start time); keeps created/paused otherwise.
 */
void cryo_state_refresh(struct cryo_state *st);

/* Read /proc/PID/stat field 22 (start time in clock ticks). */
int cryo_pid_start_time(pid_t pid, uint64_t *ret);

/* List container ids under root (sorted). *ret is a NULL-terminated array. */
int cryo_state_list(const char *root, char ***ret, struct cryo_error *err);
void cryo_strv_free(char **v);

#endif
