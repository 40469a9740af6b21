/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The container freezer with the seed's semantics (seeds/004): a cgroup is
 * RUNNING, FREEZING or FROZEN; a freeze that cannot complete stays
 * FREEZING and fails with EBUSY; writing FROZEN again retries; thawing
 * from FREEZING cancels; a task that leaves the cgroup unblocks it.
 *
 * One interface, one backend per kernel interface behind a vtable:
 *   v1    cgroup v1 freezer.state (THAWED|FREEZING|FROZEN), no event:
 *         sleep-polling with backoff
 *   v2    cgroup2 cgroup.freeze + cgroup.events (`frozen 0|1`), waited
 *         for with poll(POLLPRI)
 *   kmod  /dev/cryo_freezer (added by the kmod module's backend)
 *
 * cryo_freezer_freeze() waits for the event up to a deadline, retries
 * with backoff inside it, and when it gives up thaws back (unless
 * CRYO_FREEZER_KEEP_FREEZING) and returns -EBUSY with a message that
 * names every task that did not freeze: pid, comm, state, wchan, and the
 * kernel stack when readable.
 */
#ifndef CRYO_FREEZER_H
#define CRYO_FREEZER_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

enum cryo_freezer_state {
	CRYO_FREEZER_RUNNING,
	CRYO_FREEZER_FREEZING,
	CRYO_FREEZER_FROZEN,
	_CRYO_FREEZER_STATE_MAX,
};

extern const char *const cryo_freezer_state_names[_CRYO_FREEZER_STATE_MAX];

/*
 * Parse a state name: the seed's RUNNING/FREEZING/FROZEN, and v1's THAWED
 * (= RUNNING). Trailing whitespace (a file's newline) is ignored.
 * -EINVAL naming the string otherwise.
 */
int cryo_freezer_state_from_string(const char *s, enum cryo_freezer_state *ret, struct cryo_error *err);

enum cryo_freezer_backend {
	CRYO_FREEZER_V1,
	CRYO_FREEZER_V2,
	CRYO_FREEZER_KMOD,
	_CRYO_FREEZER_BACKEND_MAX,
};

extern const char *const cryo_freezer_backend_names[_CRYO_FREEZER_BACKEND_MAX];

int cryo_freezer_backend_from_string(const char *s, enum cryo_freezer_backend *ret, struct cryo_error *err);

enum cryo_freezer_flag {
	/* on giving up, leave the cgroup FREEZING instead of thawing back */
	CRYO_FREEZER_KEEP_FREEZING = 1U << 0,
	/*
	 * On retry, thaw and freeze again instead of only re-requesting the
	 * freeze (runc's trick against tasks stuck between fork and freeze
	 * on v1). Costs a short run of the already frozen tasks.
	 */
	CRYO_FREEZER_THAW_RETRY = 1U << 1,
	/* fail with -EALREADY instead of succeeding when already frozen/thawed */
	CRYO_FREEZER_STRICT = 1U << 2,
};

struct cryo_freezer;

/*
 * A backend. Every call gets the freezer opened by open(); all report
 * errors as -errno with a message. wait() returns 0 once the cgroup is in
 * state want, -ETIMEDOUT at deadline_ms (CLOCK_MONOTONIC ms).
 */
struct cryo_freezer_ops {
	enum cryo_freezer_backend backend;
	int (*open)(struct cryo_freezer *f, struct cryo_error *err);
	void (*close)(struct cryo_freezer *f);
	int (*get_state)(struct cryo_freezer *f, enum cryo_freezer_state *ret, struct cryo_error *err);
	/* request the freeze and return; the kernel freezes asynchronously */
	int (*freeze)(struct cryo_freezer *f, struct cryo_error *err);
	int (*thaw)(struct cryo_freezer *f, struct cryo_error *err);
	int (*wait)(struct cryo_freezer *f, enum cryo_freezer_state want, int64_t deadline_ms, struct cryo_error *err);
	/* kill every task at once (v2 cgroup.kill); NULL = freeze, signal each, thaw */
	int (*kill)(struct cryo_freezer *f, struct cryo_error *err);
	/*
	 * Frozen tasks may stay parked inside a freezable sleep, looking
	 * like any task in D (v1 since Linux 6.1): blockers can only be told
	 * apart after a thaw, as the tasks still in D.
	 */
	bool parks_in_place;
	/* file listing every thread of the cgroup (blockers, kill) */
	const char *threads_file;
	const char *procs_file;
};

/* Backend-visible innards; users only hold the pointer. */
struct cryo_freezer {
	const struct cryo_freezer_ops *ops;
	char *path;      /* absolute cgroup directory */
	int dirfd;       /* O_PATH|O_DIRECTORY of path */
	int fd;          /* backend's state file (v1 freezer.state, v2 cgroup.events), or -1 */
	int64_t poll_ms; /* v1: last sleep of the backoff */
};

extern const struct cryo_freezer_ops cryo_freezer_v1_ops;
extern const struct cryo_freezer_ops cryo_freezer_v2_ops;

/* Open the cgroup at path with the given backend. */
int cryo_freezer_open(enum cryo_freezer_backend backend, const char *path, struct cryo_freezer **ret,
		      struct cryo_error *err);

/* Open the cgroup at path, choosing v1 or v2 from the filesystem it is on. */
int cryo_freezer_open_path(const char *path, struct cryo_freezer **ret, struct cryo_error *err);

/*
 * Open a container's cgroup as recorded in its state: backend "v1", "v2"
 * or "kmod" (NULL = v2 if cgroup_v2 is set, else v1) and the matching path.
 */
int cryo_freezer_open_for(const char *backend, const char *cgroup_v2, const char *cgroup_v1_freezer,
			  struct cryo_freezer **ret, struct cryo_error *err);

void cryo_freezer_close(struct cryo_freezer *f);

enum cryo_freezer_backend cryo_freezer_backend_of(const struct cryo_freezer *f);
const char *cryo_freezer_path(const struct cryo_freezer *f);

int cryo_freezer_get_state(struct cryo_freezer *f, enum cryo_freezer_state *ret, struct cryo_error *err);

/* For `cryo state`/`cryo list`: the freezer state of a container's cgroup. */
int cryo_freezer_state_of(const char *backend, const char *cgroup_v2, const char *cgroup_v1_freezer,
			  enum cryo_freezer_state *ret, struct cryo_error *err);

/*
 * Freeze and wait for FROZEN until timeout_ms from now, retrying with
 * backoff. -EBUSY (blockers named, thawed back unless KEEP_FREEZING) when
 * it did not freeze in time. Already FROZEN: 0 (-EALREADY with STRICT).
 */
int cryo_freezer_freeze(struct cryo_freezer *f, int64_t timeout_ms, unsigned flags, struct cryo_error *err);

/*
 * Thaw (also cancels FREEZING) and wait up to timeout_ms for RUNNING.
 * Already RUNNING: 0 (-EALREADY with STRICT).
 */
int cryo_freezer_thaw(struct cryo_freezer *f, int64_t timeout_ms, unsigned flags, struct cryo_error *err);

/*
 * Send sig to every task so none escapes by forking: v2 cgroup.kill for
 * SIGKILL; otherwise freeze, signal every task, thaw. For SIGKILL, waits
 * up to timeout_ms for the cgroup to be empty. The cgroup's previous
 * freezer state is not restored for SIGKILL (nothing is left to freeze).
 */
int cryo_freezer_kill_all(struct cryo_freezer *f, int sig, int64_t timeout_ms, struct cryo_error *err);

/* Number of threads in the cgroup (tests, kill). */
int cryo_freezer_count_tasks(struct cryo_freezer *f, unsigned *ret, struct cryo_error *err);

/*
 * Describe the threads of the cgroup that are not frozen, as
 * "pid 41 `sh` D in `folio_wait_bit` [stack: a < b < c]; ..." (at most
 * max_named of them, then "and N more"). *ret_count is how many.
 */
int cryo_freezer_describe_blockers(struct cryo_freezer *f, unsigned max_named, char **ret, unsigned *ret_count,
				   struct cryo_error *err);
/* Same, for a cgroup just thawed: the tasks still in D are the ones that blocked. */
int cryo_freezer_describe_stuck(struct cryo_freezer *f, unsigned max_named, char **ret, unsigned *ret_count,
				struct cryo_error *err);

/*
 * Held freezes through cryo_freezer.ko (when cryo_kmod_available()): the
 * kernel owns the deadline and the thaw, no watchdog process is needed.
 *
 * cryo_freezer_kmod_freeze() takes the kernel hold, then waits for FROZEN
 * exactly like cryo_freezer_freeze() (same retries, states and errors).
 * Already FROZEN: -EALREADY whatever the flags, since nobody could hold
 * a freeze made by someone else. deadline_ms > 0 is the
 * hold's deadline, 0 none. detached: the hold belongs to the module and
 * outlives this process until its deadline (needs deadline_ms > 0) or
 * cryo_freezer_kmod_thaw(); *ret_kfd is -1. Otherwise the hold lives on
 * *ret_kfd, the caller's /dev/cryo_freezer fd: if the caller dies, the
 * kernel thaws at once. On failure the kernel hold is dropped again
 * (kept, still with its deadline, under KEEP_FREEZING).
 */
int cryo_freezer_kmod_freeze(struct cryo_freezer *f, int64_t timeout_ms, unsigned flags, uint64_t deadline_ms,
			     bool detached, int *ret_kfd, struct cryo_error *err);

/*
 * End the kernel hold on f (kfd: the holder's fd, or -1 to go through a
 * new one, which finds detached holds). Only drops the hold and requests
 * the thaw; cryo_freezer_thaw() waits. -EINVAL if no hold is live (none,
 * or its deadline fired), -ENODEV without the module.
 */
int cryo_freezer_kmod_thaw(struct cryo_freezer *f, int kfd, struct cryo_error *err);

/* The undo action of a CRYO_HOLD_CGROUP_THAW hold (see hold.h). */
struct cryo_hold_rec;
int cryo_freezer_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err);

#endif
