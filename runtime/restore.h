/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `cryo restore`: checkpoint in reverse. The image's manifest and every
 * file's digest are verified before anything else happens, so a damaged
 * image is refused with no process started and nothing changed. Then the
 * rootfs is put back from the snapshot, the cgroup recreated, CRIU
 * restores the tree into the rootfs, a container that was paused is
 * frozen again, the poststart hooks run and the state says running.
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

struct cryo_restore_opts {
	const char *root;
	const char *id;
	const char *image_path;     /* NULL = ./checkpoint */
	const char *work_path;      /* NULL = <root>/<id>/criu */
	const char *bundle;         /* NULL = the bundle recorded in the manifest */
	const char *pid_file;
	const char *console_socket; /* accepted; a restored tty is CRIU's (--shell-job) */
	bool detach;
	bool tcp_close;
	struct cryo_criu_flags criu;
	const char *verify_key;     /* the image must be signed with this key (sign.h); NULL = none */
	bool require_signature;     /* refuse an image that is not verified with verify_key */
};

/*
 * CRIU's external mounts on restore, NULL-terminated key, value pairs:
 * the name checkpoint gave each (host devices, masked files, bind mounts)
 * → where it is on this host (bind sources relative to bundle).
 */
struct cryo_spec;
int cryo_restore_ext_mounts(const struct cryo_spec *spec, const char *bundle, char ***ret, struct cryo_error *err);

/*
 * Restore; *ret_pid is the container's init. Without detach, wait for
 * it to exit and set *ret_status (128+n for signal n).
 */
int cryo_restore(const struct cryo_restore_opts *o, pid_t *ret_pid, int *ret_status, struct cryo_error *err);

#endif
