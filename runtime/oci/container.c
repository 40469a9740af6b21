// SPDX-License-Identifier: GPL-2.0-only
/*
 * Container lifecycle.
 *
 * create: the runtime clone3()s the init into the new namespaces; the
 * init waits for a "go" on a SOCK_SEQPACKET pair until the runtime has
 * written its id maps, moved it into its cgroups and set its OOM score.
 * The init then joins namespaces given by path, builds its filesystem
 * view, pivots, and reports "ready" (or one error sentence) back. It then
 * blocks reading the exec fifo (<state>/exec.fifo, opened read-write
 * before the clone so that no open ever blocks) until `start` writes one
 * byte into it, and execs the container's process.
 *
 * Every fd is O_CLOEXEC, and before execve the init marks every fd above
 * 2 close-on-exec again (close_range), so nothing of the runtime leaks in.
 */
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

#include "cgroup.h"
#include "console.h"
#include "container.h"
#include "log.h"
#include "mount.h"
#include "process.h"
#include "spec.h"
#include "step.h"
#include "util.h"
#include "version.h"

#define FIFO_NAME "exec.fifo"
#define MSG_MAX 4096
#define STOP_TIMEOUT_MS 10000


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
	if (cryo_parse_u64(s, SIGRTMAX, &n) == 0) {
		if (n == 0)
			return -EINVAL;
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

static int state_dir_fd(const char *root, const char *id, struct cryo_error *err)
{
	char p[PATH_MAX];
	int fd;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", root, id) >= sizeof(p))
		return cryo_error_setx(err, ENAMETOOLONG, "state dir of `%s` is too long", id);
	fd = open(p, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "open state dir `%s`", p);
	return fd;
}

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

/* ---- the init, in the container ---- */

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

static int sync_send(int fd, enum init_sync m)
{
	char b = (char)m;

	return send(fd, &b, 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

struct init_args {
	const struct cryo_spec *spec;
	const char *bundle;
	const char *rootfs;
	int sync_fd;
	int fifo_fd;
	int console_fd;           /* --console-socket connection, or -1 */
	int listener_fd;          /* linux.seccomp.listenerPath connection, or -1 */
	bool new_userns;
	const sigset_t *sigmask;  /* restored before execve, NULL: keep the inherited one */
};

/* Room for the state JSON the runtime sends for the container's hooks. */
#define STATE_MSG_MAX ((size_t)128 * 1024)

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
	char buf[MSG_MAX];
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
	r = cryo_mount_prepare(spec, a->rootfs, a->new_userns || spec->namespaces[CRYO_NS_USER].path, &rootfd, err);
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

static int __attribute__((noreturn)) init_main(struct init_args *a)
{
	const struct cryo_spec *spec = a->spec;
	struct cryo_error err = CRYO_ERROR_INIT;
	const int keep[] = { a->sync_fd, a->fifo_fd, a->console_fd, a->listener_fd };
	_cleanup_free_ char *state_json = NULL;
	struct cryo_seccomp_listener listener = { .fd = a->listener_fd };
	char exe[PATH_MAX], c;
	ssize_t n;

	close_fds_except(keep, ARRAY_SIZE(keep));
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
	state_json = malloc(STATE_MSG_MAX);
	if (!state_json || sync_send(a->sync_fd, SYNC_HOOKS) < 0)
		_exit(1);
	do
		n = recv(a->sync_fd, state_json, STATE_MSG_MAX - 1, 0);
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
		if (cryo_console_setup(a->console_fd, &err) < 0 ||
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
	if (prctl(PR_SET_PDEATHSIG, 0) < 0 || sync_send(a->sync_fd, SYNC_READY) < 0)
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

/* ---- create ---- */

/* The OCI state handed to hooks on stdin. */
static char *hook_state(const struct cryo_state *st, const char *status, pid_t pid)
{
	struct json_object *o = json_object_new_object();
	char *text;

	if (!o)
		return NULL;
	json_object_object_add(o, "ociVersion", json_object_new_string(CRYO_OCI_VERSION));
	json_object_object_add(o, "id", json_object_new_string(st->id));
	json_object_object_add(o, "status", json_object_new_string(status));
	json_object_object_add(o, "pid", json_object_new_int(pid));
	json_object_object_add(o, "bundle", json_object_new_string(st->bundle ? st->bundle : ""));
	json_object_object_add(o, "annotations",
			       st->annotations ? json_object_get(st->annotations) : json_object_new_object());
	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

static int write_id_map(pid_t pid, const char *file, const struct cryo_spec_idmap *m, size_t n,
			struct cryo_error *err)
{
	char path[64];
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);
	int r;

	if (!f)
		return cryo_error_set(err, ENOMEM, "%s", file);
	for (i = 0; i < n; i++)
		fprintf(f, "%u %u %u\n", m[i].container_id, m[i].host_id, m[i].size);
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	r = cryo_write_file_at(AT_FDCWD, path, buf);
	if (r < 0)
		return cryo_error_set(err, -r, "write %s", path);
	return 0;
}

static char *default_cgroup_path(const char *id)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", CRYO_CGROUP_DEFAULT_PARENT, id) < 0)
		return NULL;
	return p;
}

/*
 * create as a table of steps, each with its undo (run in reverse when a
 * later step fails; a failed step's own undo runs too, so every undo
 * checks what its step got done). CRYO_FAULT=create:<step> (or the plain
 * step name) makes a step fail before it runs.
 */
struct create_ctx {
	const struct cryo_create_opts *o;
	const sigset_t *init_sigmask;  /* the container process's signal mask, NULL: the runtime's */
	struct cryo_spec *spec;
	struct cryo_state *st;
	struct cryo_cgroup_paths cg;
	struct cryo_network_link net;  /* what the network step made */
	char *bundle;                  /* absolute */
	char *rootfs;                  /* absolute, resolved */
	const char *backend;           /* freezer backend, "v1" or "v2" */
	uint64_t clone_flags;          /* the namespaces the init is cloned into */
	int lock, fifo, console, sync[2];
	int listener;                  /* linux.seccomp.listenerPath connection, or -1 */
	bool foreground;               /* run: a terminal without socket is relayed by cryo */
	int console_peer;              /* foreground terminal: the init sends the pty master here */
	int *ret_console;              /* where the console step puts the master (foreground run) */
	bool dir_made, cg_made;
	pid_t pid;                     /* the init, our child; -1 before the clone */
};

static int step_config(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	const struct cryo_create_opts *o = c->o;
	char p[PATH_MAX];
	struct stat sb;
	int r;

	r = cryo_validate_id(o->id, err);
	if (r < 0)
		return r;
	c->bundle = realpath(o->bundle ? o->bundle : ".", NULL);
	if (!c->bundle)
		return cryo_error_set(err, errno, "bundle `%s`", o->bundle ? o->bundle : ".");
	r = cryo_spec_load(c->bundle, &c->spec, err);
	if (r < 0)
		return r;
	/* only a foreground run can relay the pty itself (runc's rule) */
	if (c->spec->terminal && !o->console_socket && !c->foreground)
		return cryo_error_setx(err, EINVAL,
				       "config.json: process.terminal: a detached container's terminal needs --console-socket");
	if (!c->spec->terminal && o->console_socket)
		return cryo_error_setx(err, EINVAL, "--console-socket given but process.terminal is false");
	c->backend = cryo_spec_annotation(c->spec, "org.cryo.freezer");
	if (!c->backend)
		c->backend = "v2";
	if (strcmp(c->backend, "v1") != 0 && strcmp(c->backend, "v2") != 0)
		return cryo_error_setx(err, EINVAL,
				       "config.json: annotations.org.cryo.freezer: must be `v1` or `v2`, not `%s`",
				       c->backend);
	r = cryo_spec_check_sysctl_paths(c->spec, err);
	if (r < 0)
		return r;
	if (c->spec->root_path[0] == '/')
		snprintf(p, sizeof(p), "%s", c->spec->root_path);
	else
		snprintf(p, sizeof(p), "%s/%s", c->bundle, c->spec->root_path);
	c->rootfs = realpath(p, NULL);
	if (!c->rootfs || stat(c->rootfs, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return cryo_error_set(err, c->rootfs ? ENOTDIR : errno, "config.json: root.path: `%s`", p);
	return 0;
}

/* The state dir, locked, with a first state.json: a crash from here on leaves something delete finds. */
static int step_state_dir(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	const struct cryo_create_opts *o = c->o;
	struct cryo_state *st;
	int r;

	r = cryo_state_create_dir(o->root, o->id, err);
	if (r < 0)
		return r;
	c->dir_made = true;
	r = cryo_state_lock(o->root, o->id, CRYO_STATE_LOCK_TIMEOUT_MS, &c->lock, err);
	if (r < 0)
		return r;
	r = cryo_state_new(o->id, &c->st, err);
	if (r < 0)
		return r;
	st = c->st;
	st->bundle = strdup(c->bundle);
	st->rootfs = strdup(c->rootfs);
	st->freezer_backend = strdup(c->backend);
	st->cgroup_path = c->spec->cgroups_path ? strdup(c->spec->cgroups_path) : default_cgroup_path(o->id);
	st->annotations = json_object_get(c->spec->annotations);
	st->created = time(NULL);
	if (!st->bundle || !st->rootfs || !st->freezer_backend || !st->cgroup_path)
		return cryo_error_set(err, ENOMEM, "state");
	return cryo_state_save_ext(o->root, st, false, err);
}

static void undo_state_dir(void *ctx)
{
	struct create_ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (c->dir_made && cryo_state_remove_dir(c->o->root, c->o->id, &e) < 0)
		cryo_error_warn_clear(&e, "undo create");
}

static int step_cgroup(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	struct cryo_state *st = c->st;
	int r;

	r = cryo_cgroup_create(st->cgroup_path, &c->spec->resources, &c->cg, err);
	if (r < 0)
		return r;
	c->cg_made = true;
	st->cgroup_v2 = c->cg.v2 ? strdup(c->cg.v2) : NULL;
	st->cgroup_v1_freezer = c->cg.v1_freezer ? strdup(c->cg.v1_freezer) : NULL;
	st->cgroup_made = c->cg.made ? strdup(c->cg.made) : NULL;
	if ((c->cg.v2 && !st->cgroup_v2) || (c->cg.v1_freezer && !st->cgroup_v1_freezer) ||
	    (c->cg.made && !st->cgroup_made))
		return cryo_error_set(err, ENOMEM, "state");
	/* what to remove again is on disk before anything runs in it */
	return cryo_state_save_ext(c->o->root, st, false, err);
}

static void undo_cgroup(void *ctx)
{
	struct create_ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (c->cg_made && cryo_cgroup_destroy_made(c->st->cgroup_path, c->cg.made, STOP_TIMEOUT_MS, &e) < 0)
		cryo_error_warn_clear(&e, "undo create");
}

/* The exec fifo, the console socket, the sync pair and the seccomp listener, all before the clone. */
static int step_channels(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	_cleanup_close_ int sdir = -1;
	int r;

	sdir = state_dir_fd(c->o->root, c->o->id, err);
	if (sdir < 0)
		return sdir;
	if (mkfifoat(sdir, FIFO_NAME, 0600) < 0)
		return cryo_error_set(err, errno, "create exec fifo");
	/* read-write: never blocks, and the init holds a reader until start */
	c->fifo = openat(sdir, FIFO_NAME, O_RDWR | O_CLOEXEC);
	if (c->fifo < 0)
		return cryo_error_set(err, errno, "open exec fifo");
	if (c->o->console_socket) {
		r = cryo_console_connect(c->o->console_socket, &c->console, err);
		if (r < 0)
			return r;
	} else if (c->spec->terminal) {
		int pair[2];

		/* foreground run: the init sends the pty master to us, cryo_console_relay() serves it */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
			return cryo_error_set(err, errno, "socketpair");
		c->console_peer = pair[0];
		c->console = pair[1];
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sync) < 0)
		return cryo_error_set(err, errno, "socketpair");
	/* in the runtime's namespace, as crun does; the init sends the notify fd over it at start */
	return cryo_seccomp_listener_connect(&c->spec->seccomp, &c->listener, err);
}

/*
 * A pid namespace given by path is joined by the runtime, not the init:
 * setns(CLONE_NEWPID) only decides where the caller's next children go.
 * Ours go back to our own pid namespace right after the clone, so that
 * nothing forked later (poststart hooks of `run`) lands in the container's.
 */
static int step_clone(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	const struct cryo_spec *spec = c->spec;
	_cleanup_close_ int self_pidns = -1, pidns = -1;
	struct clone_args ca = { .exit_signal = SIGCHLD };
	int i, r = 0;

	for (i = 0; i < _CRYO_NS_MAX; i++)
		if (spec->namespaces[i].enabled && !spec->namespaces[i].path && i != CRYO_NS_CGROUP)
			c->clone_flags |= (uint64_t)cryo_ns_type_flags[i];
	if (spec->namespaces[CRYO_NS_PID].enabled && spec->namespaces[CRYO_NS_PID].path) {
		self_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
		if (self_pidns < 0)
			return cryo_error_set(err, errno, "open the runtime's pid namespace");
		pidns = open(spec->namespaces[CRYO_NS_PID].path, O_RDONLY | O_CLOEXEC);
		if (pidns < 0 || setns(pidns, CLONE_NEWPID) < 0)
			return cryo_error_set(err, errno, "join pid namespace `%s`", spec->namespaces[CRYO_NS_PID].path);
	}
	ca.flags = c->clone_flags;
	fflush(NULL);
	c->pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (c->pid == 0) {
		struct init_args a = {
			.spec = spec,
			.bundle = c->bundle,
			.rootfs = c->rootfs,
			.sync_fd = c->sync[1],
			.fifo_fd = c->fifo,
			.console_fd = c->console,
			.listener_fd = c->listener,
			.new_userns = (c->clone_flags & CLONE_NEWUSER) != 0,
			.sigmask = c->init_sigmask,
		};

		init_main(&a);
	}
	if (c->pid < 0)
		r = cryo_error_set(err, errno, "clone the container init");
	if (self_pidns >= 0 && setns(self_pidns, CLONE_NEWPID) < 0 && r >= 0)
		r = cryo_error_set(err, errno, "return to the runtime's pid namespace");
	if (r < 0)
		return r;
	close(TAKE_FD(c->sync[1]));
	close(TAKE_FD(c->fifo));
	if (c->console >= 0)
		close(TAKE_FD(c->console));
	closep(&c->listener);
	return 0;
}

static void undo_clone(void *ctx)
{
	struct create_ctx *c = ctx;
	cryo_pid_kill_reapp(&c->pid);
}

/*
 * The next message from the init: *ret_len bytes into buf (NUL-ended).
 * An error report (SYNC_ERROR) becomes the error, anything but want too.
 */
static int sync_expect(int fd, enum init_sync want, char *buf, size_t size, size_t *ret_len, struct cryo_error *err)
{
	ssize_t n;

	do
		n = recv(fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return cryo_error_setx(err, EIO, "the container init died during setup");
	buf[n] = '\0';
	if (buf[0] == SYNC_ERROR)
		return cryo_error_setx(err, EINVAL, "container init: %s", buf + 1);
	if (buf[0] != (char)want)
		return cryo_error_setx(err, EPROTO, "container init: unexpected message `%c`", buf[0]);
	if (ret_len)
		*ret_len = (size_t)n;
	return 0;
}

/* Id maps, cgroups, OOM score: what the init must not do itself, then "go". */
static int step_init_setup(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	const struct cryo_spec *spec = c->spec;
	int r;

	if (c->clone_flags & CLONE_NEWUSER) {
		r = write_id_map(c->pid, "uid_map", spec->uid_mappings, spec->n_uid_mappings, err);
		if (r >= 0)
			r = write_id_map(c->pid, "gid_map", spec->gid_mappings, spec->n_gid_mappings, err);
		if (r < 0)
			return r;
	}
	r = cryo_cgroup_attach(c->st->cgroup_path, c->pid, err);
	if (r < 0)
		return r;
	if (spec->has_oom_score_adj) {
		char path[64], val[16];

		snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)c->pid);
		snprintf(val, sizeof(val), "%d", spec->oom_score_adj);
		r = cryo_write_file_at(AT_FDCWD, path, val);
		if (r < 0)
			return cryo_error_set(err, -r, "process.oomScoreAdj: write %s", path);
	}
	if (sync_send(c->sync[0], SYNC_GO) < 0)
		return cryo_error_set(err, errno, "wake the container init");
	return 0;
}

/*
 * The namespaces exist, nothing is mounted yet: prestart and
 * createRuntime in the runtime's namespaces, then the state JSON to the
 * init, which runs createContainer and startContainer with it.
 */
static int step_create_hooks(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	_cleanup_free_ char *state = NULL, *msg = NULL;
	char buf[MSG_MAX];
	size_t len;
	int r;

	r = sync_expect(c->sync[0], SYNC_HOOKS, buf, sizeof(buf), NULL, err);
	if (r < 0)
		return r;
	/*
	 * prestart and createRuntime run once the runtime environment exists
	 * and see "created", as with crun (and as the runtime-tools suite
	 * checks); the init's own hooks, inside the half-built container,
	 * see "creating".
	 */
	state = hook_state(c->st, "created", c->pid);
	if (!state)
		return cryo_error_set(err, ENOMEM, "state for hooks");
	r = cryo_hooks_run(&c->spec->hooks, CRYO_HOOK_PRESTART, state, err);
	if (r >= 0)
		r = cryo_hooks_run(&c->spec->hooks, CRYO_HOOK_CREATE_RUNTIME, state, err);
	if (r < 0)
		return r;
	free(state);
	state = hook_state(c->st, "creating", c->pid);
	if (!state)
		return cryo_error_set(err, ENOMEM, "state for hooks");
	len = strlen(state);
	if (len + 2 > STATE_MSG_MAX)
		return cryo_error_setx(err, E2BIG, "state for hooks: %zu bytes (annotations too large)", len);
	if (asprintf(&msg, "%c%s", SYNC_CONFIG, state) < 0)
		return cryo_error_set(err, ENOMEM, "state for hooks");
	if (send(c->sync[0], msg, len + 1, MSG_NOSIGNAL) != (ssize_t)(len + 1))
		return cryo_error_set(err, errno, "send the state to the init");
	return 0;
}

/* While the init builds its filesystem view. */
static int step_network(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	return cryo_network_apply(&c->spec->network, c->pid, &c->net, err);
}

static void undo_network(void *ctx)
{
	struct create_ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	/* by what this create made: the name may be another container's by now */
	if (cryo_network_undo(&c->net, &e) < 0)
		cryo_error_warn_clear(&e, "undo create");
	c->net.host_ifindex = 0;
}

static int step_init_ready(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	struct cryo_state *st = c->st;
	char buf[MSG_MAX];
	int r;

	r = sync_expect(c->sync[0], SYNC_READY, buf, sizeof(buf), NULL, err);
	if (r < 0)
		return r;
	st->pid = c->pid;
	(void)cryo_pid_start_time(c->pid, &st->pid_start_time);
	st->status = CRYO_STATUS_CREATED;
	r = cryo_state_save_ext(c->o->root, st, false, err);
	if (r >= 0 && c->o->pid_file)
		r = cryo_write_pid_file(c->o->pid_file, c->pid, err);
	return r;
}

/* The console the init made for a foreground run: it sent the master during its setup. */
static int step_console(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;

	if (c->ret_console)
		*c->ret_console = -1;
	if (c->console_peer < 0)
		return 0;
	return cryo_console_recv_fd(c->console_peer, c->ret_console, NULL, err);
}

/*
 * Errors are not prefixed with the step's name: each step's messages
 * already name what failed (a config.json field, the cgroup, the init).
 */
static const struct cryo_step create_steps[] = {
	{ "config", step_config, NULL },
	{ "state-dir", step_state_dir, undo_state_dir },
	{ "cgroup", step_cgroup, undo_cgroup },
	{ "channels", step_channels, NULL },
	{ "clone", step_clone, undo_clone },
	{ "init-setup", step_init_setup, NULL },
	{ "create-hooks", step_create_hooks, NULL },
	{ "network", step_network, undo_network },
	{ "init-ready", step_init_ready, NULL },
	{ "console", step_console, NULL },
};

const struct cryo_step_table cryo_create_step_table = {
	.name = "create", .steps = create_steps, .n_steps = ARRAY_SIZE(create_steps), .unprefixed = true,
};

const char *cryo_container_create_step(size_t i)
{
	return i < ARRAY_SIZE(create_steps) ? create_steps[i].name : NULL;
}

static void create_ctx_done(struct create_ctx *c)
{
	closep(&c->lock);
	closep(&c->fifo);
	closep(&c->console);
	closep(&c->console_peer);
	closep(&c->listener);
	closep(&c->sync[0]);
	closep(&c->sync[1]);
	cryo_cgroup_paths_free(&c->cg);
	cryo_state_free(c->st);
	cryo_spec_free(c->spec);
	free(c->bundle);
	free(c->rootfs);
}

/*
 * Everything of create except releasing the lock; on success the init
 * waits on the fifo, the state says created, and *ret_pid is our child.
 * On failure nothing is left: no cgroup, no veth, no state dir, no process.
 * init_sigmask: the signal mask the container's process starts with
 * (NULL: the caller's).
 */
static int do_create(const struct cryo_create_opts *o, const sigset_t *init_sigmask, pid_t *ret_pid, int *ret_lock,
		     int *ret_console, struct cryo_error *err)
{
	struct create_ctx c = {
		.o = o, .init_sigmask = init_sigmask, .lock = -1, .fifo = -1, .console = -1,
		.sync = { -1, -1 }, .listener = -1, .pid = -1, .foreground = ret_console != NULL, .console_peer = -1,
		.ret_console = ret_console,
	};
	int r;

	r = cryo_step_run(&cryo_create_step_table, &c, NULL, err);
	if (r >= 0) {
		*ret_pid = TAKE_PID(c.pid);
		*ret_lock = TAKE_FD(c.lock);
	}
	create_ctx_done(&c);
	return r;
}

int cryo_container_create(const struct cryo_create_opts *o, struct cryo_error *err)
{
	pid_t pid;
	int lock = -1, r;

	r = do_create(o, NULL, &pid, &lock, NULL, err);
	if (r < 0)
		return cryo_error_prefix(err, "create `%s`", o->id);
	close(lock);
	return 0;
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
	state = hook_state(st, status, pid);
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
	_cleanup_close_ int rd = openat(sdir, FIFO_NAME, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
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
	sdir = state_dir_fd(root, st->id, err);
	if (sdir < 0)
		return sdir;
	fifo = openat(sdir, FIFO_NAME, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
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
		int64_t deadline = cryo_now_ms() + STOP_TIMEOUT_MS;

		while (poll(&p, 1, (int)(deadline - cryo_now_ms())) < 0 && errno == EINTR && cryo_now_ms() < deadline)
			;
	}
	r = start_outcome(sdir, st->id, err);
	(void)unlinkat(sdir, FIFO_NAME, 0);
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
	json_object_object_add(o, "status", json_object_new_string(cryo_status_names[st->status]));
	json_object_object_add(o, "pid", json_object_new_int(st->status == CRYO_STATUS_STOPPED ? 0 : st->pid));
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

/* Kill everything, remove cgroups, network and state; the lock is held. */
static int destroy(const char *root, struct cryo_state *st, struct cryo_error *err)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	_cleanup_(cryo_spec_freep) struct cryo_spec *spec = bundle_spec(st);
	_cleanup_close_ int pfd = -1, netns = -1;
	int r;

	pfd = pidfd_open_checked(st->pid, st->pid_start_time);
	netns = container_netns(spec, st->pid, pfd);
	if (st->cgroup_path && cryo_cgroup_kill(st->cgroup_path, SIGKILL, &e) < 0)
		cryo_error_clear(&e);
	if (pfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		r = wait_pidfd(pfd, STOP_TIMEOUT_MS);
		if (r < 0)
			return cryo_error_set(err, -r, "wait for init %d to die", (int)st->pid);
	}
	if (st->cgroup_path) {
		r = cryo_cgroup_destroy_made(st->cgroup_path, st->cgroup_made, STOP_TIMEOUT_MS, err);
		if (r < 0)
			return r;
	}
	if (spec && cryo_network_teardown(&spec->network, netns, &e) < 0)
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
	r = destroy(root, st, err);
	/*
	 * -ENOENT means "no such container" to the caller (delete --force of
	 * one already gone is done): a file missing half-way through the
	 * teardown is not that, and the container is still there.
	 */
	if (r == -ENOENT)
		r = -EIO;
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

	r = do_create(o, init_mask, &pid, &lock, wait ? &master : NULL, err);
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

		if (cryo_state_load(o->root, o->id, &st, &e) == 0 && destroy(o->root, st, &e) < 0)
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
		r = destroy(o->root, st, err);
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
