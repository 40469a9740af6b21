/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * process.terminal with --console-socket, runc's protocol: the container
 * init opens a pty in the container's own devpts, sends the master fd over
 * the unix socket (one message, SCM_RIGHTS, payload = the pty's name) and
 * makes the slave its controlling terminal and stdin/stdout/stderr.
 *
 *  runtime parent:  cryo_console_connect(path, &fd)   before cloning init;
 *                   the fd is inherited (or passed) to the init
 *  container init:  cryo_console_setup(fd, uid)   after pivot_root (so /dev/ptmx
 *                   is the container's devpts), before setuid; then close fd
 */
#ifndef CRYO_CONSOLE_H
#define CRYO_CONSOLE_H

#include <stdint.h>

#include "error.h"

/* Connect to the AF_UNIX stream socket at path; *ret_fd is O_CLOEXEC. */
int cryo_console_connect(const char *path, int *ret_fd, struct cryo_error *err);

/*
 * Open a pty pair via /dev/ptmx, send the master over socket_fd, make the
 * slave the controlling terminal (setsid, TIOCSCTTY) and dup it onto 0/1/2.
 * The slave belongs to uid, the process's user (its group stays devpts'
 * gid= option, the tty group), as with runc. The master is closed in this
 * process afterwards.
 */
int cryo_console_setup(int socket_fd, uint32_t uid, struct cryo_error *err);

/*
 * process.consoleSize: set the window size of the terminal on fd (0 after
 * cryo_console_setup) so the first program sees the right geometry.
 */
int cryo_console_resize(int fd, unsigned int height, unsigned int width, struct cryo_error *err);

/*
 * Send fd over the unix socket with payload name (runc's message). Exposed
 * for tests and for a runtime that allocates the pty elsewhere.
 */
int cryo_console_send_fd(int socket_fd, int fd, const char *name, struct cryo_error *err);

/* Receive one such message: *ret_fd (O_CLOEXEC), and the name when ret_name. */
int cryo_console_recv_fd(int socket_fd, int *ret_fd, char **ret_name, struct cryo_error *err);

/*
 * The window size of in_fd (or of out_fd when only that is a terminal)
 * onto pty, either side of it; nothing when neither is a terminal. Done
 * before the process starts, so its first look sees the right geometry.
 */
void cryo_console_copy_size(int pty, int in_fd, int out_fd);

/*
 * The foreground terminal (`run`/`exec` with process.terminal and no
 * console socket, as runc does): the container's process got a pty of its
 * own and cryo holds the master. Copy in_fd to master and master to
 * out_fd until the pty has no slave left (EIO/HUP) or stop_fd (a pidfd of
 * the process, -1 = none) becomes readable, after which what is left in
 * the master is drained. When in_fd is a terminal it is put in raw mode
 * for the duration (restored before returning, also on error). The window
 * size of in_fd (or of out_fd when only that is a terminal) is copied to
 * the pty at once and again on every SIGWINCH (read through a signalfd;
 * SIGWINCH is blocked meanwhile). SIGPIPE is ignored
 * meanwhile: a closed out_fd only stops the output. Signals read from
 * sig_fd (a signalfd of the caller's forwarded signals, -1 = none) go to
 * the process of stop_fd, so none wait while the relay runs.
 */
int cryo_console_relay(int master, int in_fd, int out_fd, int stop_fd, int sig_fd, struct cryo_error *err);

#endif
