/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `cryo checkpoint`: the pipeline of DESIGN.md as data. An ordered table
 * of steps, each with an undo (bubblewrap's plan, then execute):
 *
 *   lock → stage → freeze-cgroup → freeze-fs → snapshot-rootfs → thaw-fs
 *        → criu-dump → manifest → commit → finish (thaw or stop)
 *
 * When step i fails, the undos of steps i-1..0 run in reverse: the
 * container is back to how it was (running, or paused if it was), its
 * filesystem thawed, no image committed, the staging dir gone. CRIU
 * always dumps with leave-running while the cgroup stays frozen, so a
 * failure after the dump (manifest, commit) still has a container to give
 * back; only `finish` stops it, after the image is safe on disk.
 * CRYO_FAULT=<step> makes a step fail before it acts.
 */
#ifndef CRYO_CHECKPOINT_H
#define CRYO_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "criu.h"
#include "error.h"

enum cryo_fs_freeze_mode {
	CRYO_FS_FREEZE_AUTO,      /* when the rootfs is a filesystem of its own */
	CRYO_FS_FREEZE_REQUIRED,  /* fail when it can't be frozen */
	CRYO_FS_FREEZE_OFF,
	_CRYO_FS_FREEZE_MAX,
};

extern const char *const cryo_fs_freeze_mode_names[_CRYO_FS_FREEZE_MAX];
int cryo_fs_freeze_mode_from_string(const char *s, enum cryo_fs_freeze_mode *ret, struct cryo_error *err);

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
	enum cryo_fs_freeze_mode fs_freeze;
	const char *sign_key;      /* sign the manifest with this key file (sign.h); NULL = unsigned */
};

/* The host devices cryo binds into a container's /dev: external mounts for CRIU. */
extern const char *const cryo_ext_devices[6];

/* The step names, in order (tests iterate them for CRYO_FAULT). */
extern const char *const cryo_checkpoint_steps[];

int cryo_checkpoint(const struct cryo_checkpoint_opts *o, struct cryo_error *err);

#endif
