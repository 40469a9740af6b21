/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The container's init between clone and execve (create.c starts it):
 * it waits for a "go" on a SOCK_SEQPACKET pair until the runtime has
 * written its id maps, moved it into its cgroups and set its OOM score,
 * then joins namespaces given by path, builds its filesystem view,
 * pivots, and reports "ready" (or one error sentence) back. It then
 * blocks reading the exec fifo until `start` writes one byte into it,
 * and execs the container's process.
 */
#ifndef CRYO_INIT_H
#define CRYO_INIT_H

#include <signal.h>
#include <stdbool.h>

#include "spec.h"

/* One message between the runtime and the init (an error sentence). */
#define CRYO_INIT_MSG_MAX 4096

/*
 * The messages on the SOCK_SEQPACKET pair between the runtime and the
 * container's init, in the order they are sent: one packet each, the
 * letter first, a payload after it for SYNC_CONFIG and SYNC_ERROR.
 */
enum init_sync {
	SYNC_GO = 'G',      /* runtime -> init: id maps written, cgroups joined, OOM score set */
	SYNC_HOOKS = 'H',   /* init -> runtime: the namespaces exist, run prestart + createRuntime */
	SYNC_CONFIG = 'C',  /* runtime -> init: + the state JSON for createContainer/startContainer */
	SYNC_READY = 'R',   /* init -> runtime: set up, waiting on the exec fifo */
	SYNC_ERROR = 'E',   /* init -> runtime: + one error sentence; the init exits */
};


struct init_args {
	const struct cryo_spec *spec;
	const char *bundle;
	const char *rootfs;
	int sync_fd;
	int fifo_fd;
	int console_fd;           /* --console-socket connection, or -1 */
	int listener_fd;          /* linux.seccomp.listenerPath connection, or -1 */
	bool new_userns;
	/*
	 * In a new user namespace: an O_PATH fd of each bind mount's source,
	 * opened by the runtime (-1 for other mounts), which the init mounts
	 * from: a source its user namespace may not reach (a 0700 directory
	 * of the host's root) is still mounted, as with runc. NULL otherwise.
	 */
	const int *mount_fds;
	const sigset_t *sigmask;  /* restored before execve, NULL: keep the inherited one */
};

/* Room for the state JSON the runtime sends for the container's hooks. */
#define CRYO_INIT_STATE_MSG_MAX ((size_t)128 * 1024)

/* Send m as one packet on the runtime/init pair: 0, or -1 with errno. */
int cryo_init_sync_send(int fd, enum init_sync m);

/* The init: runs in the child of clone3, never returns. */
int __attribute__((noreturn)) cryo_init_main(struct init_args *a);

#endif
