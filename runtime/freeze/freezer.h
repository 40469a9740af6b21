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
 *   kmod  /dev/cryo_freezer: the module writes the same files from the
 *         kernel and holds the freeze (thaws at a deadline or when its
 *         holder's fd closes); states and waits are the v1/v2 files'
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
#include "util.h"

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
	/* kmod backend: it drives the cgroup through the v1/v2 files' backend */
	const struct cryo_freezer_ops *file_ops;
	int kfd;            /* this freezer's /dev/cryo_freezer holder, or -1 */
	int cgfd;           /* O_RDONLY|O_DIRECTORY of path (the module wants a real fd) */
	uint64_t hold_ms;   /* > 0: freeze() takes a kernel hold with this deadline */
	bool hold_detached; /* that hold is the module's, not kfd's: it outlives us */
	bool held;          /* a kernel hold is taken */
};

extern const struct cryo_freezer_ops cryo_freezer_v1_ops;
extern const struct cryo_freezer_ops cryo_freezer_v2_ops;
extern const struct cryo_freezer_ops cryo_freezer_kmod_v1_ops;
extern const struct cryo_freezer_ops cryo_freezer_kmod_v2_ops;

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
CRYO_DEFINE_CLEANUP(struct cryo_freezer *, cryo_freezer_close)

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
 * Held freezes: the one way cryo makes a freeze it owns (`cryo freeze
 * --deadline/--hold`, checkpoint, migrate). Nothing in Linux thaws a
 * frozen cgroup whose freezer died, so every such freeze is taken with a
 * hold that has a deadline:
 *
 *  - with cryo_freezer.ko (/dev/cryo_freezer), f switches to the kmod
 *    backend and the kernel holds the freeze: on f's holder fd (it thaws
 *    the moment this process dies, or at the deadline), or detached (it
 *    thaws at the deadline, whoever lives);
 *  - without it, a watchdog process thaws at the deadline or, unless
 *    detached, as soon as this process dies.
 *
 * Either way the hold is journalled in <root>/.holds/<name>.json first,
 * so `cryo thaw` and `cryo recover` know about it.
 */
struct cryo_freezer_hold_opts {
	const char *root;     /* the state dir holding the journal */
	const char *name;     /* the journal entry: a container id, or cryo's own name */
	uint64_t deadline_ms; /* thaw this long from now whatever happens; > 0 */
	bool detached;        /* outlive this process (until the deadline or a thaw) */
};

struct cryo_hold;

/*
 * Freeze f and hold it (see above): waits for FROZEN like
 * cryo_freezer_freeze() (same retries, states and errors). Already FROZEN:
 * -EALREADY whatever the flags (nobody can hold a freeze made by someone
 * else). On failure the hold is dropped again (kept, with its deadline,
 * under KEEP_FREEZING). *ret is the hold, for cryo_freezer_thaw_held(),
 * or cryo_hold_free() to leave a detached hold to its deadline.
 */
int cryo_freezer_freeze_held(struct cryo_freezer *f, int64_t timeout_ms, unsigned flags,
			     const struct cryo_freezer_hold_opts *o, struct cryo_hold **ret, struct cryo_error *err);

/*
 * Thaw f, waiting up to timeout_ms, then end hold h (NULL: none). -ETIME
 * when the hold's deadline had thawed it already (the owner's window was
 * lost; f is thawed all the same). A failed thaw leaves the hold to its
 * watchdog or `cryo recover`. Frees h.
 */
int cryo_freezer_thaw_held(struct cryo_freezer *f, struct cryo_hold *h, int64_t timeout_ms, unsigned flags,
			   struct cryo_error *err);

/*
 * `cryo thaw`: end whatever hold another cryo left on f under name (its
 * journal entry, its watchdog, a detached kernel hold) and thaw f.
 */
int cryo_freezer_thaw_named(struct cryo_freezer *f, const char *root, const char *name, int64_t timeout_ms,
			    unsigned flags, struct cryo_error *err);

/* The undo action of a CRYO_HOLD_CGROUP_THAW hold (see hold.h). */
struct cryo_hold_rec;
int cryo_freezer_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err);
/* The undo of a CRYO_HOLD_CGROUP_KILL hold: SIGKILL every task of the cgroup (frozen or not). */
int cryo_freezer_kill_undo(const struct cryo_hold_rec *rec, struct cryo_error *err);

#endif
