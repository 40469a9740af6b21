/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Small helpers every module uses: scope-bound cleanup (systemd style),
 * monotonic time in milliseconds, whole-file I/O relative to a dirfd, and
 * fault injection for unwind tests (CRYO_FAULT=<step>).
 */
#ifndef CRYO_UTIL_H
#define CRYO_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>
#include <errno.h>

#include "error.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static inline void freep(void *p)
{
	free(*(void **)p);
}

/* Also called by hand to close early: the fd is -1 after, so a later use fails clearly, never on a reused number. */
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
		*fd = -1;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void cryo_error_clearp(struct cryo_error *err)
{
	cryo_error_clear(err);
}

/*
 * A child process owned by the scope: SIGKILL and reap it on the way out
 * unless TAKE_PID() handed it on. For children of ours only (waitpid).
 */
void cryo_pid_kill_reapp(pid_t *pid);

/* cleanup function for a pointer to an object with a NULL-tolerant free */
#define CRYO_DEFINE_CLEANUP(type, func)                \
	static inline void func##p(type *p)            \
	{                                              \
		func(*p);                              \
	}

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_error_ _cleanup_(cryo_error_clearp)
#define _cleanup_kill_reap_ _cleanup_(cryo_pid_kill_reapp)

/* Take ownership: return the value and reset the variable. */
#define TAKE_PTR(p)                              \
	({                                       \
		__typeof__(p) _tp = (p);         \
		(p) = NULL;                      \
		_tp;                             \
	})
#define TAKE_FD(fd)                              \
	({                                       \
		int _tfd = (fd);                 \
		(fd) = -1;                       \
		_tfd;                            \
	})

#define TAKE_PID(pid)                            \
	({                                       \
		pid_t _tpid = (pid);             \
		(pid) = -1;                      \
		_tpid;                           \
	})

/*
 * How long a command waits for another one holding a container's state
 * lock (cryo_state_lock) before it gives up. One value for every command:
 * a lifecycle command, a checkpoint or a restore all wait as long.
 */
#define CRYO_STATE_LOCK_TIMEOUT_MS 30000

/* CLOCK_MONOTONIC in milliseconds / microseconds. */
int64_t cryo_now_ms(void);
int64_t cryo_now_us(void);
/* CLOCK_BOOTTIME in milliseconds: counts time spent suspended. */
int64_t cryo_boottime_ms(void);

/* Sleep for ms milliseconds, restarting on EINTR. */
void cryo_sleep_ms(int64_t ms);

/*
 * Read a whole small file at dirfd/path into a NUL-terminated malloc'd
 * buffer (at most max bytes). Returns 0 or -errno.
 */
int cryo_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len);

/* Write buf to dirfd/path (O_WRONLY|O_CLOEXEC, no O_CREAT). Returns 0 or -errno. */
int cryo_write_file_at(int dirfd, const char *path, const char *buf);

/* Create or truncate dirfd/path with mode and write len bytes, fsync'd. */
int cryo_write_new_file_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode);

/*
 * The same without the fsync: for a file whose filesystem the caller
 * syncs as a whole later (an image's syncfs before its commit).
 */
int cryo_write_new_file_unsynced_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode);

/* Name of the temp file cryo_write_file_atomic_at() writes for "NAME": ".NAME.tmp". */
#define CRYO_ATOMIC_TMP_PREFIX "."
#define CRYO_ATOMIC_TMP_SUFFIX ".tmp"

/*
 * Replace dirfd/path atomically: readers see the old content or the new,
 * never a part. The bytes go to ".NAME.tmp" in the same directory, which
 * is then renamed over NAME. durable: fsync the file before the rename
 * and the directory after it (survives a host crash, not only a crash of
 * cryo). On failure the temp file is removed. Returns 0 or -errno.
 */
int cryo_write_file_atomic_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode,
			      bool durable);

/*
 * Write pid (decimal, no newline, like runc) to path atomically, mode
 * 0644: a reader never sees an empty or half-written pid file.
 */
int cryo_write_pid_file(const char *path, pid_t pid, struct cryo_error *err);

/*
 * Send buf (len >= 1: a stream socket drops ancillary data that comes with
 * no payload) over a UNIX stream socket with fd attached (SCM_RIGHTS) to
 * its first byte; what a short write leaves follows without fds. Only
 * sendmsg(2) is used, one syscall a seccomp filter can be asked to let
 * through. 0 or -errno.
 */
int cryo_send_with_fd(int sock, int fd, const void *buf, size_t len);

/*
 * Remove dirfd/name and, for a directory, everything below it (never
 * following symlinks; at most 256 levels). A missing name is not an error.
 */
int cryo_rm_rf_at(int dirfd, const char *name);
/* The same, staying on the filesystem dev: what is on another one is left, and -EXDEV returned. */
int cryo_rm_rf_at_dev(int dirfd, const char *name, dev_t dev);

/*
 * opendir() of dirfd/name (never following a symlink at name; "." for
 * dirfd itself, read from a new open file of its own, so the caller's fd
 * and offset stay untouched). NULL with errno set on failure, like opendir().
 */
DIR *cryo_opendir_at(int dirfd, const char *name);

/* mkdir -p with mode for each created component. */
int cryo_mkdir_p(const char *path, mode_t mode);

/*
 * Fault injection for unwind tests. Returns true when the environment
 * variable CRYO_FAULT names step (a comma-separated list is allowed).
 * When CRYO_PAUSE_AT names it, cryo first stops itself (SIGSTOP) there,
 * for kill tests.
 */
bool cryo_fault(const char *step);

/* A container id: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}, never "." or "..". */
int cryo_validate_id(const char *id, struct cryo_error *err);

/* Parse a decimal non-negative integer with an upper bound. */
int cryo_parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* Wait until fd is ready for events (poll(2)) or deadline_ms (CLOCK_MONOTONIC) passes; what names it in errors. */
int cryo_wait_fd(int fd, short events, int64_t deadline_ms, const char *what, struct cryo_error *err);

#endif
