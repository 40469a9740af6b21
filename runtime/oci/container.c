// SPDX-License-Identifier: GPL-2.0-only
/*
 * Container lifecycle.
 *
 * create (create.c, with the init in init.c) leaves the init blocked on
 * the exec fifo (<state>/exec.fifo, opened read-write before the clone so
 * that no open ever blocks); start writes one byte into it and the init
 * execs the container's process. Here: start, state, kill, delete and
 * run (create + start, forwarding signals).
 */#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/close_range.h>
#include <linux/sched.h>

#include "cgroup.h"
#include "console.h"
#include "container.h"
#include "create.h"
#include "loop.h"
#include "spec.h"
#include "step.h"
#include "util.h"
#include "version.h"

/* ---- signals ---- */

static const struct {
	const char *name;
	int sig;
} signals[] = {
	{ "HUP", SIGHUP },     { "INT", SIGINT },       { "QUIT", SIGQUIT },   { "ILL", SIGILL },
	{ "TRAP", SIGTRAP },   { "ABRT", SIGABRT },     { "IOT", SIGIOT },     { "BUS", SIGBUS },
	{ "FPE", SIGFPE },     { "KILL", SIGKILL },     { "USR1", SIGUSR1 },   { "SEGV", SIGSEGV },
	{ "USR2", SIGUSR2 },   { "PIPE", SIGPIPE },     { "ALRM", SIGALRM },   { "TERM", SIGTERM },
	{ "STKFLT", SIGSTKFLT }, { "CHLD", SIGCHLD },   { "CONT", SIGCONT },   { "STOP", SIGSTOP },
	{ "TSTP", SIGTSTP },   { "TTIN", SIGTTIN },     { "TTOU", SIGTTOU },   { "URG", SIGURG },
	{ "XCPU", SIGXCPU },   { "XFSZ", SIGXFSZ },     { "VTALRM", SIGVTALRM }, { "PROF", SIGPROF },
	{ "WINCH", SIGWINCH }, { "IO", SIGIO },         { "POLL", SIGPOLL },   { "PWR", SIGPWR },
	{ "SYS", SIGSYS },
};

int cryo_signal_parse(const char *s, int *ret)
{
	uint64_t n;
	size_t i;

	if (!s || !*s)
		return -EINVAL;
	/* 0 too: no signal, only the check that the process is there (kill(2), runc) */
	if (cryo_parse_u64(s, SIGRTMAX, &n) == 0) {
		*ret = (int)n;
		return 0;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (i = 0; i < ARRAY_SIZE(signals); i++) {
		if (strcasecmp(s, signals[i].name) == 0) {
			*ret = signals[i].sig;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- small helpers ---- */

static int pidfd_open_checked(pid_t pid, uint64_t start_time)
{
	uint64_t now;
	int fd;

	if (pid <= 0)
		return -ESRCH;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return -errno;
	/* the pid may have been reused since we recorded it: compare start times */
	if (start_time && (cryo_pid_start_time(pid, &now) < 0 || now != start_time)) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

/* Wait until pidfd's process exits, at most timeout_ms. */
static int wait_pidfd(int pidfd, int timeout_ms)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int64_t deadline = cryo_now_ms() + timeout_ms;

	for (;;) {
		int64_t left = deadline - cryo_now_ms();
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/* ---- start ---- */

/*
 * The config again, for hooks and network after create (the state keeps
 * only the bundle path, like runc's). A bundle that changed or vanished
 * only costs those hooks, with a warning.
 */
static struct cryo_spec *bundle_spec(const struct cryo_state *st)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	struct cryo_spec *spec = NULL;

	if (st->bundle && cryo_spec_load(st->bundle, &spec, &e) < 0) {
		cryo_error_warn_clear(&e, "container `%s`: no hooks or network teardown", st->id);
		return NULL;
	}
	return spec;
}

/*
 * Hooks whose failure is only a warning (runtime-spec: poststart,
 * poststop): the container runs on, or is gone anyway.
 */
static void run_hooks_warn(const struct cryo_spec *spec, const struct cryo_state *st, enum cryo_hook_kind kind,
			   const char *status, pid_t pid, const char *what)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	_cleanup_free_ char *state = NULL;

	if (!spec || !spec->hooks.n[kind])
		return;
	state = cryo_container_hook_state(st, status, pid);
	if (!state) {
		cryo_error_set(&e, ENOMEM, "state for hooks");
		cryo_error_warn_clear(&e, "%s `%s`", what, st->id);
		return;
	}
	/* a failed hook is a warning, and the ones after it still run */
	for (size_t i = 0; i < spec->hooks.n[kind]; i++)
		if (cryo_hooks_run_one(&spec->hooks, kind, i, state, &e) < 0)
			cryo_error_warn_clear(&e, "%s `%s`", what, st->id);
}

/*
 * After the fifo lost its reader: an init that failed between the fifo
 * and execve (rlimits, seccomp and its listener, caps, startContainer
 * hooks, the exec itself) left "E<reason>" in it; one that died before
 * it read the start byte left that byte. An exec leaves nothing. Our
 * write end keeps the pipe's buffer alive for this read.
 */
static int start_outcome(int sdir, const char *id, struct cryo_error *err)
{
	_cleanup_close_ int rd = openat(sdir, CRYO_EXEC_FIFO_NAME, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	char buf[PIPE_BUF];
	ssize_t n;

	if (rd < 0)
		return cryo_error_set(err, errno, "open exec fifo to read the init's outcome");
	n = read(rd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (buf[0] == 'E')
		return cryo_error_setx(err, ECANCELED, "container `%s` failed before its process ran: %s", id,
				       buf + 1);
	return cryo_error_setx(err, ESRCH, "container `%s`: its init died before it was started", id);
}

static int do_start(const char *root, struct cryo_state *st, const struct cryo_spec *spec, struct cryo_error *err)
{
	_cleanup_close_ int sdir = -1, fifo = -1;
	int r;

	if (st->status != CRYO_STATUS_CREATED)
		return cryo_error_setx(err, EINVAL, "container `%s` is %s, only a created container can be started",
				       st->id, cryo_status_names[st->status]);
	sdir = cryo_container_state_dir_fd(root, st->id, err);
	if (sdir < 0)
		return sdir;
	fifo = openat(sdir, CRYO_EXEC_FIFO_NAME, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fifo < 0) {
		if (errno == ENXIO || errno == ENOENT)
			return cryo_error_setx(err, ESRCH, "container `%s`: its init is gone", st->id);
		return cryo_error_set(err, errno, "open exec fifo");
	}
	if (write(fifo, "0", 1) != 1)
		return cryo_error_set(err, errno, "write exec fifo");
	/*
	 * The init holds the only reader until its execve closes it: a writer
	 * sees POLLERR then. So start returns (and poststart runs) once the
	 * user process runs, after the startContainer hooks.
	 */
	{
		struct pollfd p = { .fd = fifo, .events = 0 };
		int64_t deadline = cryo_now_ms() + CRYO_CONTAINER_STOP_TIMEOUT_MS;

		while (poll(&p, 1, (int)(deadline - cryo_now_ms())) < 0 && errno == EINTR && cryo_now_ms() < deadline)
			;
	}
	r = start_outcome(sdir, st->id, err);
	(void)unlinkat(sdir, CRYO_EXEC_FIFO_NAME, 0);
	if (r < 0)
		return r;
	st->status = CRYO_STATUS_RUNNING;
	r = cryo_state_save_ext(root, st, false, err);
	if (r < 0)
		return r;
	run_hooks_warn(spec, st, CRYO_HOOK_POSTSTART, "running", st->pid, "start");
	return 0;
}

/* The container's lock (*ret_lock set once taken), then its state. */
static int lock_and_load(const char *root, const char *id, int *ret_lock, struct cryo_state **ret,
			 struct cryo_error *err)
{
	int r = cryo_state_lock(root, id, CRYO_STATE_LOCK_TIMEOUT_MS, ret_lock, err);

	return r < 0 ? r : cryo_container_load(root, id, ret, err);
}

int cryo_container_start(const char *root, const char *id, struct cryo_error *err)
{
	_cleanup_(cryo_state_freep) struct cryo_state *st = NULL;
	_cleanup_(cryo_spec_freep) struct cryo_spec *spec = NULL;
	_cleanup_close_ int lock = -1;
	int r;

	r = lock_and_load(root, id, &lock, &st, err);
	if (r >= 0) {
		spec = bundle_spec(st);
		r = do_start(root, st, spec, err);
	}
	if (r < 0)
		return cryo_error_prefix(err, "start `%s`", id);
	return 0;
}

/* ---- state ---- */

int cryo_container_freezer_state(const struct cryo_state *st, enum cryo_freezer_state *ret, struct cryo_error *err)
{
	return cryo_freezer_state_of(st->freezer_backend, st->cgroup_v2, st->cgroup_v1_freezer, ret, err);
}

int cryo_container_load(const char *root, const char *id, struct cryo_state **ret, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	int r;

	r = cryo_state_load(root, id, &st, err);
	if (r < 0)
		return r;
	cryo_state_refresh(st);
	if (st->status == CRYO_STATUS_RUNNING || st->status == CRYO_STATUS_PAUSED) {
		enum cryo_freezer_state fs;

		if (cryo_container_freezer_state(st, &fs, NULL) == 0)
			st->status = fs == CRYO_FREEZER_RUNNING ? CRYO_STATUS_RUNNING : CRYO_STATUS_PAUSED;
	}
	*ret = st;
	return 0;
}

int cryo_container_state_json(const char *root, const char *id, struct json_object **ret, struct cryo_error *err)
{
	_cleanup_(cryo_state_freep) struct cryo_state *st = NULL;
	struct json_object *o;
	enum cryo_freezer_state fs;
	int r;

	r = cryo_container_load(root, id, &st, err);
	if (r < 0)
		return r;
	o = json_object_new_object();
	if (!o)
		return cryo_error_set(err, ENOMEM, "state");
	json_object_object_add(o, "ociVersion", json_object_new_string(CRYO_OCI_VERSION));
	json_object_object_add(o, "id", json_object_new_string(st->id));
	/* runc's order (its list --format json is matched as text by some) */
	json_object_object_add(o, "pid", json_object_new_int(st->status == CRYO_STATUS_STOPPED ? 0 : st->pid));
	json_object_object_add(o, "status", json_object_new_string(cryo_status_names[st->status]));
	json_object_object_add(o, "bundle", json_object_new_string(st->bundle ? st->bundle : ""));
	json_object_object_add(o, "rootfs", json_object_new_string(st->rootfs ? st->rootfs : ""));
	{
		char buf[64];
		struct tm tm;
		time_t t = (time_t)st->created;

		gmtime_r(&t, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_object_object_add(o, "created", json_object_new_string(buf));
	}
	json_object_object_add(o, "annotations", st->annotations ? json_object_get(st->annotations) :
								   json_object_new_object());
	if (st->status != CRYO_STATUS_STOPPED && cryo_container_freezer_state(st, &fs, NULL) == 0)
		json_object_object_add(o, "org.cryo.freezer", json_object_new_string(cryo_freezer_state_names[fs]));
	*ret = o;
	return 0;
}

int cryo_container_pids(const char *root, const char *id, pid_t **ret, size_t *ret_n, struct cryo_error *err)
{
	_cleanup_(cryo_state_freep) struct cryo_state *st = NULL;
	int r;

	r = cryo_state_load(root, id, &st, err);
	if (r < 0)
		return r;
	return cryo_cgroup_pids(st->cgroup_path, ret, ret_n, err);
}

/* ---- kill ---- */

int cryo_container_kill(const char *root, const char *id, int sig, bool all, struct cryo_error *err)
{
	_cleanup_(cryo_state_freep) struct cryo_state *st = NULL;
	_cleanup_close_ int pfd = -1;
	int r;

	r = cryo_container_load(root, id, &st, err);
	if (r >= 0 && all)
		r = cryo_cgroup_kill(st->cgroup_path, sig, err);
	else if (r >= 0) {
		if (st->status != CRYO_STATUS_STOPPED)
			pfd = pidfd_open_checked(st->pid, st->pid_start_time);
		if (pfd < 0)
			r = cryo_error_setx(err, ESRCH, "container `%s` is not running", id);
		else if (syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0) < 0)
			r = cryo_error_set(err, errno, "signal %d to pid %d", sig, (int)st->pid);
	}
	if (r < 0)
		return cryo_error_prefix(err, "kill `%s`", id);
	return 0;
}

/* ---- delete ---- */

/*
 * The container's network namespace, opened while its init still holds
 * it: where delete finds the host end of its veth (see network.h). -1
 * when there is none to look in.
 */
static int container_netns(const struct cryo_spec *spec, pid_t pid, int pidfd)
{
	char path[64];
	int fd;

	if (!spec || !spec->network.present)
		return -1;
	if (spec->namespaces[CRYO_NS_NET].path)
		return open(spec->namespaces[CRYO_NS_NET].path, O_RDONLY | O_CLOEXEC);
	if (pidfd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	/* still the same process after the open: its pid was not reused meanwhile */
	if (fd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int cryo_container_destroy(const char *root, struct cryo_state *st, struct cryo_error *err)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	_cleanup_(cryo_spec_freep) struct cryo_spec *spec = bundle_spec(st);
	_cleanup_close_ int pfd = -1, netns = -1;
	int r;

	pfd = pidfd_open_checked(st->pid, st->pid_start_time);
	netns = container_netns(spec, st->pid, pfd);
	/* a joined cgroup holds others' tasks too: the init's pid namespace takes the container's own */
	if (st->cgroup_path && !st->cgroup_joined && cryo_cgroup_kill(st->cgroup_path, SIGKILL, &e) < 0)
		cryo_error_clear(&e);
	if (pfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		/* a paused container's tasks die only once thawed (delete --force of a paused one) */
		if (st->cgroup_path)
			cryo_cgroup_thaw(st->cgroup_path);
		r = wait_pidfd(pfd, CRYO_CONTAINER_STOP_TIMEOUT_MS);
		if (r < 0)
			return cryo_error_set(err, -r, "wait for init %d to die", (int)st->pid);
	}
	if (st->cgroup_path && st->cgroup_joined) {
		cryo_cgroup_release(st->cgroup_path);
	} else if (st->cgroup_path) {
		r = cryo_cgroup_destroy_made(st->cgroup_path, st->cgroup_made, CRYO_CONTAINER_STOP_TIMEOUT_MS, err);
		if (r < 0)
			return r;
	}
	if (spec && cryo_network_teardown(&spec->network, netns, &e) < 0)
		cryo_error_warn_clear(&e, "delete `%s`", st->id);
	/* the rootfs restore mounted where nothing was: its loop device goes with the mount */
	if (st->rootfs_image && cryo_loop_unmount_image(st->rootfs, st->rootfs_image, &e) < 0)
		cryo_error_warn_clear(&e, "delete `%s`", st->id);
	run_hooks_warn(spec, st, CRYO_HOOK_POSTSTOP, "stopped", 0, "delete");
	return cryo_state_remove_dir(root, st->id, err);
}

int cryo_container_delete(const char *root, const char *id, bool force, struct cryo_error *err)
{
	_cleanup_(cryo_state_freep) struct cryo_state *st = NULL;
	_cleanup_close_ int lock = -1;
	int r;

	r = lock_and_load(root, id, &lock, &st, err);
	if (r < 0) {
		/* a state dir without state.json is a create that died half-way */
		if (r == -ENOENT && lock >= 0) {
			cryo_error_clear(err);
			r = cryo_state_remove_dir(root, id, err);
		}
		goto out;
	}
	if (!force && (st->status == CRYO_STATUS_RUNNING || st->status == CRYO_STATUS_PAUSED)) {
		r = cryo_error_setx(err, EBUSY, "container `%s` is %s (stop it first, or use --force)", id,
				    cryo_status_names[st->status]);
		goto out;
	}
	r = cryo_container_destroy(root, st, err);
	/*
	 * -ENOENT means "no such container" to the caller (delete --force of
	 * one already gone is done): a file missing half-way through the
	 * teardown is not that, and the container is still there.
	 */
	if (r == -ENOENT) {
		err->status = EIO;
		r = -EIO;
	}
out:
	if (r < 0)
		return cryo_error_prefix(err, "delete `%s`", id);
	return 0;
}

/* ---- run ---- */

/* What `run` forwards to the container (see container.h). */
static const int forwarded_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

/*
 * Wait for the init (our child) to exit, forwarding every signal of set
 * that arrives meanwhile, those that came while create and start ran
 * included (they are pending: the caller blocked set before create).
 * Signals are taken from a signalfd, so no handler ever runs and none
 * can be missed between two checks.
 */
static int forward_until_exit(pid_t pid, const sigset_t *set, int master, int *ret_status, struct cryo_error *err)
{
	_cleanup_close_ int sfd = -1, pidfd = -1;
	int status = 0;

	sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return cryo_error_set(err, errno, "signalfd");
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return cryo_error_set(err, errno, "pidfd_open %d", (int)pid);
	/* a terminal of its own (no console socket): relay it until the init exits */
	if (master >= 0) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_console_relay(master, STDIN_FILENO, STDOUT_FILENO, pidfd, sfd, &e) < 0)
			cryo_error_warn_clear(&e, "run: terminal");
		cryo_error_clear(&e);
	}
	for (;;) {
		struct pollfd p[2] = { { .fd = sfd, .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return cryo_error_set(err, errno, "poll");
		}
		while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			(void)syscall(SYS_pidfd_send_signal, pidfd, (int)si.ssi_signo, NULL, 0);
		if (p[1].revents)
			break;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return cryo_error_set(err, errno, "wait for the container init %d", (int)pid);
	}
	if (WIFSIGNALED(status))
		*ret_status = 128 + WTERMSIG(status);
	else
		*ret_status = WEXITSTATUS(status);
	return 0;
}

/* The container is gone: signals still pending for it have nobody to go to. */
static void drop_pending(const sigset_t *set)
{
	const struct timespec zero = { 0, 0 };

	while (sigtimedwait(set, NULL, &zero) > 0)
		;
}

/* create + start (+ wait); the caller blocked `fwd` when wait is set. */
static int run_blocked(const struct cryo_create_opts *o, bool wait, const sigset_t *fwd, const sigset_t *init_mask,
		       int *ret_status, struct cryo_error *err)
{
	_cleanup_(cryo_state_freep) struct cryo_state *st = NULL;
	_cleanup_close_ int lock = -1, master = -1;
	pid_t pid;
	int r;

	r = cryo_container_do_create(o, init_mask, &pid, &lock, wait ? &master : NULL, err);
	if (r < 0)
		return r;
	if (master >= 0)
		cryo_console_copy_size(master, STDIN_FILENO, STDOUT_FILENO);
	r = cryo_state_load(o->root, o->id, &st, err);
	if (r >= 0) {
		_cleanup_(cryo_spec_freep) struct cryo_spec *spec = bundle_spec(st);

		r = do_start(o->root, st, spec, err);
	}
	cryo_state_free(TAKE_PTR(st));
	if (r < 0) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_state_load(o->root, o->id, &st, &e) == 0 && cryo_container_destroy(o->root, st, &e) < 0)
			cryo_error_warn_clear(&e, "undo run");
		cryo_error_clear(&e);
		return r;
	}
	if (!wait) {
		*ret_status = 0;
		return 0;
	}
	close(TAKE_FD(lock));

	r = forward_until_exit(pid, fwd, master, ret_status, err);
	if (r < 0) {
		*ret_status = 255;
		return r;
	}

	if (o->keep)
		return 0;
	/* the container is stopped: remove it, as runc does */
	r = cryo_state_lock(o->root, o->id, CRYO_STATE_LOCK_TIMEOUT_MS, &lock, err);
	if (r >= 0)
		r = cryo_state_load(o->root, o->id, &st, err);
	if (r == -ENOENT) {
		cryo_error_clear(err);
		return 0;
	}
	if (r >= 0) {
		st->pid = 0;
		r = cryo_container_destroy(o->root, st, err);
	}
	if (r < 0)
		return cryo_error_prefix(err, "remove after exit");
	return 0;
}

int cryo_container_run(const struct cryo_create_opts *o, bool detach, int *ret_status, struct cryo_error *err)
{
	sigset_t fwd, old;
	size_t i;
	int r;

	*ret_status = 0;
	/*
	 * Blocked from before the clone: a signal that comes while create or
	 * start runs waits, and goes to the container once it runs, instead
	 * of killing `run` half-way (and leaving the container behind).
	 */
	sigemptyset(&fwd);
	for (i = 0; i < ARRAY_SIZE(forwarded_signals); i++)
		sigaddset(&fwd, forwarded_signals[i]);
	if (!detach && sigprocmask(SIG_BLOCK, &fwd, &old) < 0)
		return cryo_error_set(err, errno, "run `%s`: block signals", o->id);
	r = run_blocked(o, !detach, &fwd, detach ? NULL : &old, ret_status, err);
	if (!detach) {
		if (r >= 0)
			drop_pending(&fwd);
		sigprocmask(SIG_SETMASK, &old, NULL);
	}
	if (r < 0)
		return cryo_error_prefix(err, "run `%s`", o->id);
	return 0;
}
