/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `cryo restore`: checkpoint in reverse, a step table (step.h):
 *
 *   verify → check-bundle → claim-id → stage-rootfs → cgroup → hold-tasks
 *          → criu-restore → pause-or-run → state → hooks → resume
 *
 * An image is untrusted data. The image dir must not be writable by
 * another user; its manifest and every file's digest are verified before
 * anything else happens, so a damaged image is refused with no process
 * started and nothing changed. The bundle, the rootfs, the cgroup and the
 * bind sources come from --bundle and its config.json only (as runc);
 * the image's config.json is only compared with it (different
 * namespaces, mounts or root.readonly are refused). The rootfs snapshot
 * is put back only into that bundle (snapshot.h). CRIU then restores the
 * tree into the rootfs and leaves it stopped (SIGSTOP, CRIU's
 * leave-stopped): no restored task runs an instruction before the
 * container is whole. A container paused at checkpoint comes back
 * running unless keep_paused (then, or with `paused`, it is frozen while
 * its tasks are still stopped); the state is written, the poststart
 * hooks run, and only then does resume let the tasks go (SIGCONT). From
 * before CRIU makes a task until resume, the tasks die with the restore
 * (a kill hold on the cgroup): a restore killed at any step leaves none
 * running or stopped. When a step fails, the undos leave no state dir,
 * no cgroup cryo made, no process and the bundle's rootfs as it was.
 *
 * A container with a terminal (process.terminal) was dumped without its
 * pty's master, which lives outside (runc's way, criu.h): the restore
 * gets a new pty from CRIU, in the container's own devpts, and sends its
 * master to --console-socket as create does, or relays it to cryo's
 * stdio in the foreground; a detached restore without a socket is
 * refused before anything changes. Nothing in the image names a host
 * terminal that is opened: the image only says the container had one.
 *
 * One image can be restored any number of times: nothing of it is
 * consumed or modified (CRIU's restore log goes to the work dir, the
 * rootfs is rebuilt from a copy of the snapshot). A second restore while
 * the first container still runs is refused: its id is taken.
 */
#ifndef CRYO_RESTORE_H
#define CRYO_RESTORE_H

#include <stdbool.h>
#include <sys/types.h>

#include "criu.h"
#include "error.h"
#include "hold.h"
#include "step.h"

struct cryo_snapshot_pre;

struct cryo_restore_opts {
	const char *root;
	const char *id;
	const char *image_path;     /* NULL = ./checkpoint */
	const char *work_path;      /* NULL = <root>/<id>/criu */
	const char *bundle;         /* required (the CLI defaults to the cwd, as runc) */
	const char *pid_file;
	const char *console_socket; /* process.terminal: the restored terminal's new master goes here */
	bool detach;
	bool tcp_close;
	bool keep_paused;           /* paused at checkpoint → paused again (default: running) */
	bool paused;                /* come back paused whatever the image says (migrate: until the source commits) */
	struct cryo_criu_flags criu;
	const char *verify_key;     /* the image must be signed with this key (sign.h); NULL = none */
	bool require_signature;     /* refuse an image that is not verified with verify_key */
	/*
	 * The caller authenticated and verified this image and its parents
	 * itself, in a dir only it can write (receive): read, not checked again.
	 */
	bool preverified;
	/* receive: the rootfs snapshot extracted ahead (snapshot.h), taken or cancelled; NULL = none */
	struct cryo_snapshot_pre *rootfs_pre;
	/* migrate --lazy: the memory comes from CRIU's lazy-pages daemon on work_path (criu-cli.h) */
	bool lazy_pages;
	int (*lazy_wait)(void *userdata, int pidfd, struct cryo_error *err); /* see cryo_criu_opts */
	int (*lazy_ready)(void *userdata, struct cryo_error *err);           /* see cryo_criu_opts */
	void *lazy_wait_userdata;
	/* its steps' timings, also when it fails (receive's downtime report, step.h); NULL = not wanted */
	struct cryo_step_timings *ret_timings;
	/*
	 * The restored tasks die with the restore until its last step (a
	 * CRYO_HOLD_CGROUP_KILL hold on the cgroup, taken before CRIU makes
	 * them). Set: the hold is handed over here at the end instead of
	 * released, and the tasks die with the caller until it releases it
	 * (receive, until the source commits).
	 */
	struct cryo_hold **ret_kill_hold;
};

/*
 * Restore; *ret_pid is the container's init. Without detach, wait for
 * it to exit and set *ret_status (128+n for signal n).
 */
int cryo_restore(const struct cryo_restore_opts *o, pid_t *ret_pid, int *ret_status, struct cryo_error *err);

/* Its steps (step.h). */
extern const struct cryo_step_table cryo_restore_step_table;

/*
 * The undo of a restore's hold (hold.h: CRYO_HOLD_RESTORE, `<id>@restore`)
 * whose restore died: the bundle's rootfs put back as it was (unless the
 * restore had got as far as the container's state) and its work dir
 * removed, when it is <root>/.restore/<id>.
 */
struct cryo_hold_rec;
int cryo_restore_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err);

#endif
