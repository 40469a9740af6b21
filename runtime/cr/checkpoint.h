/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `cryo checkpoint`: the pipeline of DESIGN.md as data, two step tables
 * run by the step runner (step.h):
 *
 *   checkpoint: lock → stage → freeze-cgroup → freeze-fs → snapshot-rootfs
 *               → thaw-fs → criu-dump → manifest → commit → finish (thaw or stop)
 *   pre-dump:   lock → stage → freeze-cgroup → criu-pre-dump → manifest
 *               → commit → resume
 *
 * When a step fails, its own undo and then the undos of the steps before
 * it run, newest first: the container is back to how it was (running, or
 * paused if it was), its filesystem thawed, no image committed, the
 * staging dir gone. CRIU always dumps with leave-running while the cgroup
 * stays frozen, so a failure after the dump (manifest, commit) still has
 * a container to give back; only `finish` stops it, after the image is
 * safe on disk. CRYO_FAULT=<step> or CRYO_FAULT=checkpoint:<step> (or
 * pre-dump:<step>) makes a step fail before it acts.
 */
#ifndef CRYO_CHECKPOINT_H
#define CRYO_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "criu.h"
#include "criu-cli.h"
#include "error.h"
#include "step.h"
#include "imghash.h"
#include "mount.h"

enum cryo_fs_freeze_mode {
	CRYO_FS_FREEZE_AUTO,      /* when the rootfs is a filesystem of its own */
	CRYO_FS_FREEZE_REQUIRED,  /* fail when it can't be frozen */
	CRYO_FS_FREEZE_OFF,
	_CRYO_FS_FREEZE_MAX,
};

extern const char *const cryo_fs_freeze_mode_names[_CRYO_FS_FREEZE_MAX];
int cryo_fs_freeze_mode_from_string(const char *s, enum cryo_fs_freeze_mode *ret, struct cryo_error *err);

#define CRYO_CHECKPOINT_FREEZE_DEADLINE_MS 300000

struct cryo_checkpoint_opts {
	const char *root;          /* state root */
	const char *id;
	const char *image_path;    /* NULL = ./checkpoint (runc's default) */
	const char *work_path;     /* CRIU's log; NULL = <root>/<id>/criu */
	const char *parent_path;
	struct cryo_criu_flags criu;
	bool leave_running;
	bool pre_dump;
	int64_t freeze_timeout_ms; /* cgroup freeze; 0 = 5000 */
	/*
	 * The longest the container and its rootfs stay frozen: past it they
	 * thaw (the checkpoint then fails), also if cryo hangs or dies.
	 * 0 = CRYO_CHECKPOINT_FREEZE_DEADLINE_MS.
	 */
	int64_t freeze_deadline_ms;
	enum cryo_fs_freeze_mode fs_freeze;
	const char *sign_key;      /* sign the manifest with this key file (sign.h); NULL = unsigned */
	const char *digest;        /* the files' digest, "blake3" or "sha256"; NULL = CRYO_DIGEST_DEFAULT */
	/*
	 * The image is read once right away and then removed (migrate): no
	 * early writeback, no syncfs (cryo_image.transient).
	 */
	bool transient;
	/*
	 * Told of each image file as its writer (CRIU, cryo) closes it, while
	 * the checkpoint goes on (imghash.h: from another thread, files may be
	 * reported again). The manifest and its signature are written after
	 * the last call. NULL = nobody.
	 */
	cryo_imghash_closed_fn on_file_closed;
	void *on_file_closed_data;
	/*
	 * migrate --lazy: CRIU's lazy dump (criu-cli.h) with its page server
	 * on 127.0.0.1:lazy_port, left running in *ret_lazy_dump (the
	 * caller's to wait for or kill); needs leave_running and a frozen
	 * container. 0 = a plain dump.
	 */
	unsigned lazy_port;
	struct cryo_criu_proc *ret_lazy_dump;
	/*
	 * Called at CRIU's post-dump notification (criu.h), before CRIU lets
	 * go of the tasks and their connections; nonzero fails the
	 * checkpoint. A dump that never asked fails too. NULL = nothing.
	 */
	int (*post_dump)(void *userdata);
	void *post_dump_data;
	/*
	 * Its steps' timings, also when it fails (migrate's downtime report,
	 * step.h): t0 is when the checkpoint started. NULL = not wanted.
	 */
	struct cryo_step_timings *ret_timings;
};

int cryo_checkpoint(const struct cryo_checkpoint_opts *o, struct cryo_error *err);

struct cryo_spec;
/* A config that checkpoint refuses (a seccomp notify agent): -EOPNOTSUPP. */
int cryo_checkpoint_refuse_spec(const struct cryo_spec *spec, struct cryo_error *err);

/* Their steps (step.h): checkpoint, and checkpoint --pre-dump. */
extern const struct cryo_step_table cryo_checkpoint_step_table;
extern const struct cryo_step_table cryo_pre_dump_step_table;

#endif
