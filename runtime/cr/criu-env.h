/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The CRIU that cryo runs, whichever back end talks to it (libcriu in
 * criu-lib.h, its command line in criu-cli.h): what a dump or restore
 * asks of it (struct cryo_criu_opts), which binary (CRYO_CRIU, else
 * libcriu's default), its version, the environment it needs, and the
 * `Error` lines of its logs. The front end (criu.h) and both back ends
 * build on this; it knows none of them.
 *
 * CRIU >= 4 sets hardware breakpoints in compel's parasite code; where the
 * CPU (or hypervisor) gives none, CRIU must be told CRIU_FAULT=130. cryo
 * probes for working breakpoints once and sets it for CRIU's process when
 * needed (never overriding a CRIU_FAULT the user set).
 */
#ifndef CRYO_CRIU_ENV_H
#define CRYO_CRIU_ENV_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

/*
 * CRIU's log level: 3 (what it does, step by step, and every warning and
 * error), 4 with cryo's --debug (runc's level: also a line or two per
 * page run it reads or writes). Level 4 is not free: a restore of the
 * counter workload (tests/tools) wrote 180000 lines (9 MB) in one write()
 * each, 2.4 s of the 9 s a pre-copied 64 MiB container was down in the VM
 * harness (CRIU 3.17), 0.1-0.2 s of each 64 MiB restore on the host.
 */
#define CRYO_CRIU_LOG_LEVEL_DEBUG 4
int cryo_criu_log_level(void);
/* how many Error lines a message quotes */
#define CRYO_CRIU_LOG_ERRORS_MAX_LINES 4

/* runc's --manage-cgroups-mode values */
enum cryo_criu_cg_mode {
	CRYO_CRIU_CG_DEFAULT,  /* not given: CRIU's default (soft) */
	CRYO_CRIU_CG_SOFT,
	CRYO_CRIU_CG_FULL,
	CRYO_CRIU_CG_STRICT,
	CRYO_CRIU_CG_IGNORE,
	_CRYO_CRIU_CG_MAX,
};

extern const char *const cryo_criu_cg_mode_names[_CRYO_CRIU_CG_MAX];
int cryo_criu_cg_mode_from_string(const char *s, enum cryo_criu_cg_mode *ret, struct cryo_error *err);

/* The CRIU flags a user passes to both checkpoint and restore (runc's names). */
struct cryo_criu_flags {
	bool tcp_established;
	bool ext_unix_sk;
	bool shell_job;
	bool file_locks;
	bool auto_dedup;                 /* CRIU deduplicates pages against the parent (dump) / punches them out of the image (restore) */
	const char *lsm_profile;         /* restore: "apparmor:NAME" / "selinux:CTX" for the restored tasks */
	const char *lsm_mount_context;   /* restore: SELinux context= for mounts */
	enum cryo_criu_cg_mode cg_mode;
};

/*
 * A namespace the container joined rather than owns (extns.h): dump:
 * CRIU's external string ("net[INODE]:KEY"); restore: fd of the namespace
 * the tasks go into, handed to CRIU under KEY (inherit-fd).
 */
struct cryo_criu_extns {
	const char *key;           /* NULL ends a list */
	const char *external;      /* dump */
	int fd;                    /* restore */
};

struct cryo_criu_opts {
	pid_t pid;                 /* dump: root of the tree */
	const char *image_dir;     /* where images go (dump) or come from (restore) */
	const char *work_dir;      /* CRIU's work dir and log; NULL = image_dir */
	const char *log_name;      /* NULL = "dump.log" / "restore.log" / "pre-dump.log" */
	const char *parent_path;   /* previous (pre-)dump, relative to image_dir */
	const char *root;          /* restore: the rootfs to restore into (containers); NULL = / */
	const char *freeze_cgroup; /* dump: a cgroup cryo froze already; CRIU seizes its tasks without ptrace-freezing */
	const char *cgroup_root;   /* restore: the container's cgroup (path in every hierarchy) that takes the place of the dumped one */
	/*
	 * The tasks are in no cgroup2 cgroup of the container's (cryo sees no
	 * cgroup2 mount): dump only the v1 controllers cryo manages, and
	 * restore into v1 only. Else CRIU, which finds cgroup2 itself, dumps
	 * the whole tree below the tasks' cgroup2 root, the host's own
	 * cgroups included, and a restore makes them again under cgroup_root.
	 */
	bool no_cgroup2;
	/*
	 * The bundle's org.criu.config annotation: a CRIU configuration file
	 * for this container (CRIU's RPC config_file, over its default ones).
	 */
	const char *config_file;
	/*
	 * A network namespace the container joined by path (linux.namespaces):
	 * not the container's to dump; it is external to CRIU (dump: by its
	 * inode; restore: the namespace at that path is handed to CRIU), so
	 * the restored container is in that same namespace again.
	 */
	const char *external_netns;
	struct cryo_criu_flags flags;
	bool leave_running;
	bool tcp_close;            /* restore: drop established connections */
	bool pre_dump;             /* dump: a pre-dump (memory only, tree keeps running) */
	bool track_mem;            /* dump: keep soft-dirty tracking for a later incremental dump */
	unsigned timeout_s;        /* CRIU's own timeout for seizing tasks; 0 = CRIU's default */
	/*
	 * External (bind) mounts, NULL-terminated key, value pairs, may be NULL:
	 * dump: mountpoint in the container, name; restore: name, host path.
	 */
	const char *const *ext_mounts;
	/* External namespaces (extns.h), ended by a NULL key; may be NULL */
	const struct cryo_criu_extns *ext_ns;
	/*
	 * restore: the image's network namespace has a veth whose end there is
	 * veth_inside; CRIU makes its other end here, named veth_outside
	 * (--veth-pair). NULL: CRIU names it.
	 */
	const char *veth_inside, *veth_outside;
	/*
	 * A terminal whose master is outside the tree (process.terminal: the
	 * console socket's receiver or `run` holds it), runc's way: the dump
	 * takes the container's pty slave without its master (CRIU's
	 * orphan_pts_master); a restore makes CRIU open a new pty in the
	 * container's own devpts, at the slave's index, and hand its master
	 * back. Restore only: with expect_pts_master the master ends up in
	 * *ret_pts_master (O_CLOEXEC, -1 = the image had none); without it a
	 * master CRIU offers is refused and the restore fails. CRIU is never
	 * left to fall back on a terminal of its own (its stdin).
	 */
	bool expect_pts_master;
	int *ret_pts_master;
	/*
	 * Dump: set to whether CRIU ran without its network lock, which it
	 * skips where nothing needs it (no --tcp-established, CRIU >= 3.19;
	 * see criu.c). The restore follows the dump (CRIU's inventory).
	 */
	bool *ret_network_lock_skipped;
	/*
	 * restore: CRIU's lazy pages (`migrate --lazy`): the memory comes
	 * from the lazy-pages daemon running on work_dir (criu-cli.h).
	 */
	bool lazy_pages;
	/* with lazy_pages: waits until pidfd (CRIU's restore) is readable, serving its pages meanwhile */
	int (*lazy_wait)(void *userdata, int pidfd, struct cryo_error *err);
	/* with lazy_pages, NULL or called before CRIU starts: returns once the daemon listens */
	int (*lazy_ready)(void *userdata, struct cryo_error *err);
	void *lazy_wait_userdata;
	/*
	 * restore (libcriu): asked at CRIU's post-restore notification, when
	 * every task is restored (its memory read) and none has run a single
	 * instruction of its own yet: nonzero makes CRIU kill them all and
	 * fail. *ret_gate_ran says it was asked.
	 */
	int (*post_restore_gate)(void *userdata);
	void *post_restore_gate_userdata;
	bool *ret_gate_ran;
	/*
	 * restore: CRIU lets the tasks go stopped (SIGSTOP), as its
	 * --leave-stopped does: none runs an instruction of its own before
	 * the caller, its own setup done, sends them SIGCONT. The command
	 * line back end passes --leave-stopped. libcriu has no setter for
	 * it (neither 3.17 nor 4.1), so its back end does at CRIU's
	 * pre-resume notification what CRIU does just before it with
	 * leave-stopped: a SIGSTOP to every process of the tree while CRIU
	 * still holds them all; the restore fails (and CRIU kills the tree)
	 * if that notification does not come. A task stopped when it was
	 * dumped is stopped again by CRIU itself (a stop signal pending at
	 * that point): libcriu's back end lists those in
	 * *ret_stopped_before (malloc'd, may be NULL), for the caller to
	 * leave stopped.
	 */
	bool leave_stopped;
	pid_t **ret_stopped_before;
	size_t *ret_n_stopped_before;
	/*
	 * dump: called at CRIU's post-dump notification, when the image is
	 * written and the tasks and their connections are still locked
	 * (before CRIU ends or resumes them); nonzero fails the dump.
	 * *ret_post_dump_ran says it was asked.
	 */
	int (*post_dump)(void *userdata);
	void *post_dump_userdata;
	bool *ret_post_dump_ran;
	/*
	 * dump (libcriu): CRIU may outlive cryo. Killed while it works inside
	 * a task (its parasite, a syscall it makes the task run), CRIU leaves
	 * that task to die of the trap that was to hand it back; let go, it
	 * ends its dump, lets the tasks go as they were and exits. So it is
	 * not killed with cryo (no PR_SET_PDEATHSIG) and runs in a process
	 * group of its own, keeping *keep_fd (the container's lock: the next
	 * command on the container waits for it). on_start is called with its
	 * pid before it gets the request (it exits without touching the
	 * tasks if cryo dies first); nonzero kills it and fails the dump.
	 * Without outlive, CRIU dies with cryo.
	 */
	bool outlive;
	const int *keep_fd;
	int (*on_start)(void *userdata, pid_t pid, struct cryo_error *err);
	void *on_start_userdata;
};

struct cryo_criu_version {
	unsigned major, minor, sublevel;
	int code;                  /* major * 10000 + minor * 100 + sublevel */
};

/* The CRIU that libcriu will run. */
int cryo_criu_get_version(struct cryo_criu_version *ret, struct cryo_error *err);

/*
 * Whether a hardware execution breakpoint set with ptrace actually traps:
 * 1 yes, 0 no (reason in *ret_why, static), -errno when the probe itself
 * failed.
 */
int cryo_criu_probe_hw_breakpoints(const char **ret_why);

/*
 * Set the environment the installed CRIU needs (CRIU_FAULT=130 where
 * CRIU >= 4 has no hardware breakpoints) for a criu we run ourselves.
 */
int cryo_criu_prepare_env(struct cryo_error *err);

/* Whether name is an executable in $PATH. */
bool cryo_criu_in_path(const char *name);

/* CRIU >= 4 without working hardware breakpoints needs CRIU_FAULT=130. */
bool cryo_criu_needs_fault_130(const struct cryo_criu_version *v);

/* Set what CRIU version v needs in our environment (CRIU_FAULT=130); the
 * criu processes we start inherit it. */
void cryo_criu_set_env(const struct cryo_criu_version *v);

/* libcriu options aimed at the CRIU binary cryo runs (CRYO_CRIU). */
struct criu_opts; /* <criu/criu.h>, kept out of this header: its names are not ours */
int cryo_criu_new_opts(struct criu_opts **ret, struct cryo_error *err);
void cryo_criu_opts_freep(struct criu_opts **o);

/*
 * The `Error` lines of a CRIU log (at most max_lines, joined with "; "),
 * or NULL when it has none or can't be read.
 */
char *cryo_criu_log_errors(const char *path, unsigned max_lines);

#endif
