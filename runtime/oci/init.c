// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
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

#include "console.h"
#include "init.h"
#include "mount.h"
#include "process.h"
#include "spec.h"
#include "util.h"

int cryo_init_sync_send(int fd, enum init_sync m)
{
	char b = (char)m;

	return send(fd, &b, 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/*
 * stdio the caller gave as its /dev/null (`run -d </dev/null`) is a file
 * on a mount of the host: CRIU can't dump it from inside the container.
 * The container's own /dev/null (a bind of the same device) serves the
 * same, so those fds are reopened there, with the same access mode.
 * A container without a mount namespace of its own has no /dev of its
 * own either: it keeps the caller's.
 */
static int reopen_null_stdio(struct cryo_error *err)
{
	int fd;

	for (fd = 0; fd <= 2; fd++) {
		struct stat st;
		int fl, nfd;

		if (fstat(fd, &st) < 0 || !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
			continue;
		fl = fcntl(fd, F_GETFL);
		if (fl < 0)
			continue;
		nfd = open("/dev/null", (fl & O_ACCMODE) | O_CLOEXEC);
		if (nfd < 0)
			return cryo_error_set(err, errno, "open the container's /dev/null");
		if (dup2(nfd, fd) < 0) {
			close(nfd);
			return cryo_error_set(err, errno, "stdio %d on the container's /dev/null", fd);
		}
		close(nfd);
	}
	return 0;
}

static void __attribute__((noreturn)) init_fail(int sync_fd, struct cryo_error *err)
{
	const char *msg = err->msg ? err->msg : "container init failed";
	char buf[CRYO_INIT_MSG_MAX];
	int n = snprintf(buf, sizeof(buf), "%c%s", SYNC_ERROR, msg);

	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	(void)!send(sync_fd, buf, (size_t)n, MSG_NOSIGNAL);
	_exit(1);
}

static int join_namespaces(const struct cryo_spec *spec, struct cryo_error *err)
{
	int fds[_CRYO_NS_MAX];
	int i, r = 0;

	for (i = 0; i < _CRYO_NS_MAX; i++)
		fds[i] = -1;
	/* open all first: after joining the mount ns the paths may be gone */
	for (i = 0; i < _CRYO_NS_MAX; i++) {
		if (i == CRYO_NS_PID || !spec->namespaces[i].enabled || !spec->namespaces[i].path)
			continue;
		fds[i] = open(spec->namespaces[i].path, O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			r = cryo_error_set(err, errno, "open %s namespace `%s`", cryo_ns_type_names[i],
					   spec->namespaces[i].path);
			goto out;
		}
	}
	/* the user namespace first: it owns the others */
	if (fds[CRYO_NS_USER] >= 0 && setns(fds[CRYO_NS_USER], CLONE_NEWUSER) < 0) {
		r = cryo_error_set(err, errno, "join user namespace `%s`", spec->namespaces[CRYO_NS_USER].path);
		goto out;
	}
	for (i = 0; i < _CRYO_NS_MAX; i++) {
		if (i == CRYO_NS_USER || fds[i] < 0)
			continue;
		if (setns(fds[i], cryo_ns_type_flags[i]) < 0) {
			r = cryo_error_set(err, errno, "join %s namespace `%s`", cryo_ns_type_names[i],
					   spec->namespaces[i].path);
			goto out;
		}
	}
out:
	for (i = 0; i < _CRYO_NS_MAX; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}

static int write_sysctls(const struct cryo_spec *spec, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < spec->n_sysctls; i++) {
		char path[PATH_MAX], *p;
		int r;

		snprintf(path, sizeof(path), "/proc/sys/%s", spec->sysctls[i].key);
		for (p = path + 10; *p; p++)
			if (*p == '.')
				*p = '/';
		r = cryo_write_file_at(AT_FDCWD, path, spec->sysctls[i].value);
		if (r < 0)
			return cryo_error_set(err, -r, "linux.sysctl: set %s", spec->sysctls[i].key);
	}
	return 0;
}

/*
 * Close every fd above 2 except the ones the init needs: the runtime's
 * lock fd in particular must not stay open here, or the container's lock
 * would live as long as the init waits on the fifo.
 */
static void close_fds_except(const int *keep, size_t n)
{
	unsigned int lo = 3;
	int fd;

	for (fd = 3; fd < 1 << 20; fd++) {
		size_t i;
		bool k = false;
		int max = -1;

		for (i = 0; i < n; i++) {
			k |= keep[i] == fd;
			if (keep[i] > max)
				max = keep[i];
		}
		if (fd > max)
			break;
		if (k) {
			if ((unsigned int)fd > lo)
				syscall(SYS_close_range, lo, fd - 1, 0);
			lo = (unsigned int)fd + 1;
		}
	}
	syscall(SYS_close_range, lo, ~0U, 0);
}

static bool joins_mount_ns(const struct cryo_spec *spec)
{
	return spec->namespaces[CRYO_NS_MOUNT].enabled && spec->namespaces[CRYO_NS_MOUNT].path;
}

/*
 * The container's filesystem view, with the createContainer hooks in the
 * middle (after the mounts, before pivot_root).
 *
 * A mount namespace joined by path is somebody else's: another
 * container's, a namespace kept by a tool, or the host's own
 * (/proc/1/ns/mnt). Preparing a rootfs in it would re-root and re-mount
 * every process that lives there (pivot_root changes the root of the
 * whole namespace, and `/` would turn slave). So joining one means
 * taking its mounts as they are: the container gets root.path, as that
 * namespace sees it, by chroot() -- which moves only the container --
 * and the config's mounts, devices, masked and read-only paths are not
 * applied. Nothing of the namespace is changed.
 *
 * No mount namespace at all (linux.namespaces without "mount") means the
 * container lives in the runtime's, and is treated the same way, as
 * crun does: root.path by chroot() and nothing else. Made in the host's
 * mount namespace, the config's mounts would outlive the container and,
 * for the propagation of `/`, change the host itself.
 *
 * chroot() is no barrier to a process that keeps CAP_SYS_CHROOT; in
 * both cases the container shares a mount namespace by its config's
 * choice, and what it could reach is that namespace's own view.
 */
static int init_filesystem(const struct init_args *a, const char *state_json, struct cryo_error *err)
{
	const struct cryo_spec *spec = a->spec;
	_cleanup_close_ int rootfd = -1;
	int r;

	if (joins_mount_ns(spec) || !spec->namespaces[CRYO_NS_MOUNT].enabled) {
		r = cryo_hooks_run(&spec->hooks, CRYO_HOOK_CREATE_CONTAINER, state_json, err);
		if (r >= 0)
			r = write_sysctls(spec, err);
		if (r >= 0 && (chroot(a->rootfs) < 0 || chdir("/") < 0))
			r = cryo_error_set(err, errno, "chroot to `%s`%s", a->rootfs,
					   joins_mount_ns(spec) ? " (root.path, as the joined mount namespace sees it)" : "");
		return r;
	}
	/* bind sources are relative to the bundle */
	if (chdir(a->bundle) < 0)
		return cryo_error_set(err, errno, "chdir to bundle `%s`", a->bundle);
	r = cryo_mount_prepare(spec, a->rootfs, a->new_userns || spec->namespaces[CRYO_NS_USER].path, a->mount_fds,
			       &rootfd, err);
	/* createContainer hooks run in the container's rootfs, as with runc (`touch ./lib/x` there) */
	if (r >= 0 && fchdir(rootfd) < 0)
		r = cryo_error_set(err, errno, "chdir to the rootfs `%s`", a->rootfs);
	if (r >= 0)
		r = cryo_hooks_run(&spec->hooks, CRYO_HOOK_CREATE_CONTAINER, state_json, err);
	if (r >= 0)
		r = cryo_mount_pivot(rootfd, a->rootfs, err);
	/* before /proc/sys turns read-only (readonlyPaths) */
	if (r >= 0)
		r = write_sysctls(spec, err);
	if (r >= 0)
		r = cryo_mount_finish(spec, err);
	return r;
}

int __attribute__((noreturn)) cryo_init_main(struct init_args *a)
{
	const struct cryo_spec *spec = a->spec;
	struct cryo_error err = CRYO_ERROR_INIT;
	_cleanup_free_ int *keep = calloc(4 + spec->n_mounts, sizeof(int));
	_cleanup_free_ char *state_json = NULL;
	struct cryo_seccomp_listener listener = { .fd = a->listener_fd };
	char exe[PATH_MAX], c;
	ssize_t n;

	if (!keep)
		_exit(1);
	keep[0] = a->sync_fd;
	keep[1] = a->fifo_fd;
	keep[2] = a->console_fd;
	keep[3] = a->listener_fd;
	for (size_t i = 0; a->mount_fds && i < spec->n_mounts; i++)
		keep[4 + i] = a->mount_fds[i];
	close_fds_except(keep, a->mount_fds ? 4 + spec->n_mounts : 4);
	/* `run` blocks the signals it forwards; the container's process gets the caller's mask */
	if (a->sigmask)
		sigprocmask(SIG_SETMASK, a->sigmask, NULL);

	/* die with the runtime while it still owes us setup */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
		_exit(1);
	n = recv(a->sync_fd, &c, 1, 0);
	if (n != 1 || c != SYNC_GO)
		_exit(1);

	if (a->new_userns && (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)) {
		cryo_error_set(&err, errno, "become root in the user namespace (is uid/gid 0 mapped?)");
		init_fail(a->sync_fd, &err);
	}
	if (join_namespaces(spec, &err) < 0)
		init_fail(a->sync_fd, &err);
	/* after the runtime moved us: the container's cgroup becomes the ns root */
	if (spec->namespaces[CRYO_NS_CGROUP].enabled && !spec->namespaces[CRYO_NS_CGROUP].path &&
	    unshare(CLONE_NEWCGROUP) < 0) {
		cryo_error_set(&err, errno, "create cgroup namespace");
		init_fail(a->sync_fd, &err);
	}
	if (spec->hostname && sethostname(spec->hostname, strlen(spec->hostname)) < 0) {
		cryo_error_set(&err, errno, "hostname: set `%s`", spec->hostname);
		init_fail(a->sync_fd, &err);
	}
	if (spec->domainname && setdomainname(spec->domainname, strlen(spec->domainname)) < 0) {
		cryo_error_set(&err, errno, "domainname: set `%s`", spec->domainname);
		init_fail(a->sync_fd, &err);
	}

	/* namespaces exist: the runtime runs prestart/createRuntime and sends the state */
	state_json = malloc(CRYO_INIT_STATE_MSG_MAX);
	if (!state_json || cryo_init_sync_send(a->sync_fd, SYNC_HOOKS) < 0)
		_exit(1);
	do
		n = recv(a->sync_fd, state_json, CRYO_INIT_STATE_MSG_MAX - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 1 || state_json[0] != SYNC_CONFIG)
		_exit(1);
	state_json[n] = '\0';

	if (cryo_fault("init-mount")) {
		cryo_error_setx(&err, EIO, "mount setup: injected fault");
		init_fail(a->sync_fd, &err);
	}
	if (init_filesystem(a, state_json + 1, &err) < 0)
		init_fail(a->sync_fd, &err);
	if (a->console_fd >= 0) {
		if (cryo_console_setup(a->console_fd, spec->uid, &err) < 0 ||
		    (spec->has_console_size &&
		     cryo_console_resize(0, spec->console_height, spec->console_width, &err) < 0))
			init_fail(a->sync_fd, &err);
		close(a->console_fd);
	} else if (setsid() < 0 && getsid(0) != getpid()) {
		/*
		 * A session of its own, as runc and crun give it: left in the
		 * caller's session, its leader would sit outside the container's
		 * pid namespace, which CRIU can't dump (without --shell-job).
		 */
		cryo_error_set(&err, errno, "setsid");
		init_fail(a->sync_fd, &err);
	}
	if (spec->namespaces[CRYO_NS_MOUNT].enabled && !joins_mount_ns(spec) && reopen_null_stdio(&err) < 0)
		init_fail(a->sync_fd, &err);
	/* like runc, a missing cwd is created, but never in a mount namespace that is not the container's */
	if (chdir(spec->cwd) < 0 &&
	    (errno != ENOENT || joins_mount_ns(spec) || cryo_mkdir_p(spec->cwd, 0755) < 0 || chdir(spec->cwd) < 0)) {
		cryo_error_set(&err, errno, "process.cwd: chdir `%s`", spec->cwd);
		init_fail(a->sync_fd, &err);
	}
	if (cryo_process_find_executable(spec, exe, sizeof(exe), &err) < 0 || cryo_caps_check(&spec->caps, &err) < 0)
		init_fail(a->sync_fd, &err);

	/* from here on we outlive the runtime that created us */
	if (prctl(PR_SET_PDEATHSIG, 0) < 0 || cryo_init_sync_send(a->sync_fd, SYNC_READY) < 0)
		_exit(1);
	close(a->sync_fd);

	/* wait for `start` */
	do
		n = read(a->fifo_fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(1);
	/* the fifo stays open (close-on-exec): its closing tells `start` we exec'd */

	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		cryo_error_set(&err, errno, "close_range");
		goto fail_exec;
	}
	/*
	 * rlimits, seccomp, caps, user, NNP (process.h's one order, shared
	 * with exec), then the startContainer hooks in that final context,
	 * under the filter as with runc and crun, then execve.
	 */
	listener.state = state_json + 1;
	if (cryo_process_setup(spec, &listener, &err) >= 0 &&
	    cryo_hooks_run(&spec->hooks, CRYO_HOOK_START_CONTAINER, state_json + 1, &err) >= 0) {
		execve(exe, spec->args, spec->env);
		cryo_error_set(&err, errno, "exec `%s`", exe);
	}
fail_exec:
	/*
	 * `start` is still waiting on the fifo: the reason goes back through
	 * it (one write under PIPE_BUF, read once we are gone), and to the
	 * container's stderr.
	 */
	{
		char why[PIPE_BUF];
		int len = snprintf(why, sizeof(why), "E%s", err.msg ? err.msg : "failed");

		if (len > 0)
			(void)!write(a->fifo_fd, why, (size_t)len < sizeof(why) ? (size_t)len : sizeof(why) - 1);
	}
	dprintf(2, "cryo: container init: %s\n", err.msg ? err.msg : "failed");
	_exit(127);
}
