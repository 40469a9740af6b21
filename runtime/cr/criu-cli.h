/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CRIU's lazy pages through its command line: what libcriu (3.17) can't
 * ask for. libcriu has no lazy-pages setter, and a lazy dump asked for
 * over CRIU's RPC binds its page server to every address; the command
 * line takes --address, so the page server listens on 127.0.0.1 only.
 * `cryo migrate --lazy` relays that stream (migrate-lazy.h).
 *
 *   source:      criu dump --lazy-pages --address 127.0.0.1 --port P
 *                (returns once the page server is up; runs until every
 *                page was served)
 *   destination: criu lazy-pages --page-server --address 127.0.0.1 --port Q
 *                criu restore --lazy-pages -d
 *
 * The options are the ones cryo_criu_dump()/cryo_criu_restore() give
 * libcriu, spelled for the command line. A terminal (a pty slave
 * without its master) is refused: the command line can't hand a new
 * master back.
 */
#ifndef CRYO_CRIU_CLI_H
#define CRYO_CRIU_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "criu-env.h"
#include "error.h"

/* A CRIU process of ours that outlives the call that started it. */
struct cryo_criu_proc {
	pid_t pid;     /* 0 = none */
	int pidfd;     /* readable once it exited; -1 = none */
	char *log;     /* its log, for messages */
	const char *what;
};

#define CRYO_CRIU_PROC_INIT { .pid = 0, .pidfd = -1 }

/*
 * Start a lazy dump of o->pid's tree (o as for cryo_criu_dump) whose page
 * server listens on 127.0.0.1:port, and return once it is up (the image
 * files other than the pages are written then) or CRIU failed.
 */
int cryo_criu_cli_lazy_dump(const struct cryo_criu_opts *o, unsigned port, struct cryo_criu_proc *ret,
			    struct cryo_error *err);

/*
 * Start `criu lazy-pages` on o->image_dir (its socket in o->work_dir),
 * pulling from a page server at 127.0.0.1:port, and return once its
 * socket is there.
 */
int cryo_criu_cli_lazy_daemon(const struct cryo_criu_opts *o, unsigned port, struct cryo_criu_proc *ret,
			      struct cryo_error *err);
/*
 * The same in two halves: start it (it reads the image and listens
 * meanwhile: the caller does something else), then wait for its socket
 * in work_dir (the work dir it was started with).
 */
int cryo_criu_cli_lazy_daemon_start(const struct cryo_criu_opts *o, unsigned port, struct cryo_criu_proc *ret,
				    struct cryo_error *err);
int cryo_criu_cli_lazy_daemon_ready(const char *work_dir, struct cryo_criu_proc *p, struct cryo_error *err);

/* `criu restore --lazy-pages -d` (o as for cryo_criu_restore): *ret_pid is the restored root. */
int cryo_criu_cli_lazy_restore(const struct cryo_criu_opts *o, pid_t *ret_pid, struct cryo_error *err);

/*
 * Wait for it to exit within timeout_ms (< 0 = forever): 0 when it
 * exited 0, else an error with its log's Error lines.
 */
int cryo_criu_proc_wait(struct cryo_criu_proc *p, int64_t timeout_ms, struct cryo_error *err);

/* SIGKILL and reap (if it still runs), close, free. */
void cryo_criu_proc_kill(struct cryo_criu_proc *p);

/*
 * Whether CRIU's lazy migration works on this host: a lazy dump, the
 * lazy-pages daemon and a restore, on 127.0.0.1, of a small child (in a
 * pid namespace of its own). 1 yes, 0 no (*ret_why: CRIU's Error lines,
 * malloc'd), < 0 the probe itself failed. The answer is kept for this
 * kernel and CRIU in <state_root>/.lazy-probe.
 */
int cryo_criu_cli_lazy_probe(const char *state_root, char **ret_why, struct cryo_error *err);

#endif
