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
#include "spec.h"
#include "util.h"
#include "version.h"

#define FIFO_NAME "exec.fifo"
#define MSG_MAX 4096
#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define LOCK_TIMEOUT_MS 30000
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

static int write_pid_file(const char *path, pid_t pid, struct cryo_error *err)
{
	char tmp[PATH_MAX], buf[32];
	int r, n;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.cryo-tmp", path) >= sizeof(tmp))
		return cryo_error_setx(err, ENAMETOOLONG, "pid file `%s`", path);
	n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	r = cryo_write_new_file_at(AT_FDCWD, tmp, buf, (size_t)n, 0644);
	if (r < 0)
		return cryo_error_set(err, -r, "write pid file `%s`", tmp);
	if (rename(tmp, path) < 0) {
		r = cryo_error_set(err, errno, "rename pid file to `%s`", path);
		unlink(tmp);
		return r;
	}
	return 0;
}

/* ---- the init, in the container ---- */

struct init_args {
	const struct cryo_spec *spec;
	const char *bundle;
	const char *rootfs;
	int sync_fd;
	int fifo_fd;
	int console_fd;   /* --console-socket connection, or -1 */
	bool new_userns;
};

/* Room for the state JSON the runtime sends for the container's hooks. */
#define STATE_MSG_MAX ((size_t)128 * 1024)

/*
 * stdio the caller gave as its /dev/null (`run -d </dev/null`) is a file
 * on a mount of the host: CRIU can't dump it from inside the container.
 * The container's own /dev/null (a bind of the same device) serves the
 * same, so those fds are reopened there, with the same access mode.
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
	int n = snprintf(buf, sizeof(buf), "E%s", msg);

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

static const char *env_path(const struct cryo_spec *spec)
{
	size_t i;

	for (i = 0; i < spec->n_env; i++)
		if (strncmp(spec->env[i], "PATH=", 5) == 0)
			return spec->env[i] + 5;
	return DEFAULT_PATH;
}

/* Resolve args[0] like execvp(), but with the container's PATH. */
static int find_executable(const struct cryo_spec *spec, char *buf, size_t len, struct cryo_error *err)
{
	const char *cmd = spec->args[0], *p;
	struct stat st;

	if (strchr(cmd, '/')) {
		if (stat(cmd, &st) < 0)
			return cryo_error_set(err, errno, "process.args[0]: `%s`", cmd);
		snprintf(buf, len, "%s", cmd);
		return 0;
	}
	p = env_path(spec);
	while (*p) {
		const char *end = strchrnul(p, ':');
		int n = snprintf(buf, len, "%.*s/%s", (int)(end - p), p, cmd);

		if (end > p && n > 0 && (size_t)n < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(buf, X_OK) == 0)
			return 0;
		p = *end ? end + 1 : end;
	}
	return cryo_error_setx(err, ENOENT, "process.args[0]: `%s` not found in $PATH (%s)", cmd, env_path(spec));
}

static int set_user(const struct cryo_spec *spec, struct cryo_error *err)
{
	gid_t *gids = NULL;
	size_t i;

	if (spec->n_additional_gids) {
		gids = calloc(spec->n_additional_gids, sizeof(*gids));
		if (!gids)
			return cryo_error_set(err, ENOMEM, "groups");
		for (i = 0; i < spec->n_additional_gids; i++)
			gids[i] = spec->additional_gids[i];
	}
	if (setgroups(spec->n_additional_gids, gids) < 0) {
		free(gids);
		return cryo_error_set(err, errno, "setgroups");
	}
	free(gids);
	if (setresgid(spec->gid, spec->gid, spec->gid) < 0)
		return cryo_error_set(err, errno, "setgid %u", spec->gid);
	if (setresuid(spec->uid, spec->uid, spec->uid) < 0)
		return cryo_error_set(err, errno, "setuid %u", spec->uid);
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

static int __attribute__((noreturn)) init_main(struct init_args *a)
{
	const struct cryo_spec *spec = a->spec;
	struct cryo_error err = CRYO_ERROR_INIT;
	const int keep[] = { a->sync_fd, a->fifo_fd, a->console_fd };
	_cleanup_free_ char *state_json = NULL;
	char exe[PATH_MAX], c;
	int rootfd = -1;
	ssize_t n;

	close_fds_except(keep, ARRAY_SIZE(keep));

	/* die with the runtime while it still owes us setup */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
		_exit(1);
	n = recv(a->sync_fd, &c, 1, 0);
	if (n != 1 || c != 'G')
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
	if (!state_json || send(a->sync_fd, "H", 1, MSG_NOSIGNAL) != 1)
		_exit(1);
	do
		n = recv(a->sync_fd, state_json, STATE_MSG_MAX - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 1 || state_json[0] != 'C')
		_exit(1);
	state_json[n] = '\0';

	/* bind sources are relative to the bundle */
	if (chdir(a->bundle) < 0) {
		cryo_error_set(&err, errno, "chdir to bundle `%s`", a->bundle);
		init_fail(a->sync_fd, &err);
	}
	if (cryo_fault("init-mount")) {
		cryo_error_setx(&err, EIO, "mount setup: injected fault");
		init_fail(a->sync_fd, &err);
	}
	if (cryo_mount_prepare(spec, a->rootfs, a->new_userns || spec->namespaces[CRYO_NS_USER].path, &rootfd,
			       &err) < 0)
		init_fail(a->sync_fd, &err);
	if (cryo_hooks_run(&spec->hooks, CRYO_HOOK_CREATE_CONTAINER, state_json + 1, &err) < 0)
		init_fail(a->sync_fd, &err);
	if (cryo_mount_pivot(rootfd, a->rootfs, &err) < 0 || write_sysctls(spec, &err) < 0 ||
	    cryo_mount_finish(spec, &err) < 0)
		init_fail(a->sync_fd, &err);
	close(rootfd);
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
	if (reopen_null_stdio(&err) < 0)
		init_fail(a->sync_fd, &err);
	/* like runc, a missing cwd is created */
	if (chdir(spec->cwd) < 0 && (errno != ENOENT || cryo_mkdir_p(spec->cwd, 0755) < 0 || chdir(spec->cwd) < 0)) {
		cryo_error_set(&err, errno, "process.cwd: chdir `%s`", spec->cwd);
		init_fail(a->sync_fd, &err);
	}
	if (find_executable(spec, exe, sizeof(exe), &err) < 0)
		init_fail(a->sync_fd, &err);

	/* from here on we outlive the runtime that created us */
	if (prctl(PR_SET_PDEATHSIG, 0) < 0 || send(a->sync_fd, "R", 1, MSG_NOSIGNAL) != 1)
		_exit(1);
	close(a->sync_fd);

	/* wait for `start` */
	do
		n = read(a->fifo_fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(1);
	/* the fifo stays open (close-on-exec): its closing tells `start` we exec'd */

	/*
	 * The order of caps.h: rlimits, seccomp early without NNP (loading
	 * needs CAP_SYS_ADMIN then), bounding set + KEEPCAPS, the user, the
	 * capability sets, NNP, seccomp late with NNP (so that as few syscalls
	 * as possible run under the filter), execve.
	 */
	if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
		cryo_error_set(&err, errno, "close_range");
		goto fail_exec;
	}
	if (cryo_hooks_run(&spec->hooks, CRYO_HOOK_START_CONTAINER, state_json + 1, &err) < 0 ||
	    cryo_rlimits_apply(&spec->rlimits, 0, &err) < 0)
		goto fail_exec;
	if (!spec->no_new_privileges && cryo_seccomp_apply(&spec->seccomp, &err) < 0)
		goto fail_exec;
	if (cryo_caps_prepare(&spec->caps, &err) < 0 || set_user(spec, &err) < 0 ||
	    cryo_caps_apply(&spec->caps, &err) < 0)
		goto fail_exec;
	umask(spec->has_umask ? (mode_t)spec->umask : 022);
	if (spec->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		cryo_error_set(&err, errno, "set no_new_privs");
		goto fail_exec;
	}
	if (spec->no_new_privileges && cryo_seccomp_apply(&spec->seccomp, &err) < 0)
		goto fail_exec;
	execve(exe, spec->args, spec->env);
	cryo_error_set(&err, errno, "exec `%s`", exe);
fail_exec:
	/* the runtime is gone by now: the container's stderr is all we have */
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
	char path[64], *buf = NULL;
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
	free(buf);
	if (r < 0)
		return cryo_error_set(err, -r, "write %s", path);
	return 0;
}

/*
 * prestart and createRuntime in the runtime's namespaces, then "C" + the
 * state JSON to the init, which runs createContainer and startContainer
 * with it.
 */
static int run_create_hooks(const struct cryo_spec *spec, const struct cryo_state *st, pid_t pid, int sync_fd,
			    struct cryo_error *err)
{
	_cleanup_free_ char *state = hook_state(st, "creating", pid);
	_cleanup_free_ char *msg = NULL;
	size_t len;
	int r;

	if (!state)
		return cryo_error_set(err, ENOMEM, "state for hooks");
	r = cryo_hooks_run(&spec->hooks, CRYO_HOOK_PRESTART, state, err);
	if (r >= 0)
		r = cryo_hooks_run(&spec->hooks, CRYO_HOOK_CREATE_RUNTIME, state, err);
	if (r < 0)
		return r;
	len = strlen(state);
	if (len + 2 > STATE_MSG_MAX)
		return cryo_error_setx(err, E2BIG, "state for hooks: %zu bytes (annotations too large)", len);
	if (asprintf(&msg, "C%s", state) < 0)
		return cryo_error_set(err, ENOMEM, "state for hooks");
	if (send(sync_fd, msg, len + 1, MSG_NOSIGNAL) != (ssize_t)(len + 1))
		return cryo_error_set(err, errno, "send the state to the init");
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
 * Everything of create except releasing the lock; on success the init
 * waits on the fifo, the state says created, and *ret_pid is our child.
 * On failure nothing is left: no cgroup, no state dir, no process.
 */
static int do_create(const struct cryo_create_opts *o, pid_t *ret_pid, int *ret_lock, int *ret_console,
		     struct cryo_error *err)
{
	struct cryo_spec *spec = NULL;
	struct cryo_state *st = NULL;
	struct cryo_cgroup_paths cg = { 0 };
	_cleanup_free_ char *bundle = NULL, *rootfs = NULL;
	_cleanup_close_ int lock = -1, sdir = -1, fifo = -1, pidns = -1, console = -1, console_peer = -1;
	int sync[2] = { -1, -1 };
	bool dir_made = false, cg_made = false, net_made = false;
	const char *backend;
	pid_t pid = -1;
	uint64_t flags = 0;
	char msg[MSG_MAX];
	ssize_t n;
	int i, r;

	r = cryo_validate_id(o->id, err);
	if (r < 0)
		return r;
	bundle = realpath(o->bundle ? o->bundle : ".", NULL);
	if (!bundle)
		return cryo_error_set(err, errno, "bundle `%s`", o->bundle ? o->bundle : ".");
	r = cryo_spec_load(bundle, &spec, err);
	if (r < 0)
		return r;
	if (!spec->namespaces[CRYO_NS_MOUNT].enabled) {
		r = cryo_error_setx(err, EINVAL, "config.json: linux.namespaces: cryo needs a mount namespace");
		goto out;
	}
	if (spec->terminal && !o->console_socket && !ret_console) {
		/* only a foreground run can relay the pty itself (runc's rule) */
		r = cryo_error_setx(err, EINVAL, "config.json: process.terminal: a detached container's terminal needs --console-socket");
		goto out;
	}
	if (!spec->terminal && o->console_socket) {
		r = cryo_error_setx(err, EINVAL, "--console-socket given but process.terminal is false");
		goto out;
	}
	backend = cryo_spec_annotation(spec, "org.cryo.freezer");
	if (!backend)
		backend = "v2";
	if (strcmp(backend, "v1") != 0 && strcmp(backend, "v2") != 0) {
		r = cryo_error_setx(err, EINVAL, "config.json: annotations.org.cryo.freezer: must be `v1` or `v2`, not `%s`",
				    backend);
		goto out;
	}
	{
		char p[PATH_MAX];
		struct stat sb;

		if (spec->root_path[0] == '/')
			snprintf(p, sizeof(p), "%s", spec->root_path);
		else
			snprintf(p, sizeof(p), "%s/%s", bundle, spec->root_path);
		rootfs = realpath(p, NULL);
		if (!rootfs || stat(rootfs, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
			r = cryo_error_set(err, rootfs ? ENOTDIR : errno, "config.json: root.path: `%s`", p);
			goto out;
		}
	}

	r = cryo_state_create_dir(o->root, o->id, err);
	if (r < 0)
		goto out;
	dir_made = true;
	r = cryo_state_lock(o->root, o->id, LOCK_TIMEOUT_MS, &lock, err);
	if (r < 0)
		goto fail;
	r = cryo_state_new(o->id, &st, err);
	if (r < 0)
		goto fail;
	st->bundle = strdup(bundle);
	st->rootfs = strdup(rootfs);
	st->freezer_backend = strdup(backend);
	st->cgroup_path = spec->cgroups_path ? strdup(spec->cgroups_path) : default_cgroup_path(o->id);
	st->annotations = json_object_get(spec->annotations);
	st->created = time(NULL);
	if (!st->bundle || !st->rootfs || !st->freezer_backend || !st->cgroup_path) {
		r = cryo_error_set(err, ENOMEM, "create");
		goto fail;
	}
	r = cryo_state_save_ext(o->root, st, false, err);
	if (r < 0)
		goto fail;

	r = cryo_cgroup_create(st->cgroup_path, &spec->resources, &cg, err);
	if (r < 0)
		goto fail;
	cg_made = true;
	st->cgroup_v2 = cg.v2 ? strdup(cg.v2) : NULL;
	st->cgroup_v1_freezer = cg.v1_freezer ? strdup(cg.v1_freezer) : NULL;

	sdir = state_dir_fd(o->root, o->id, err);
	if (sdir < 0) {
		r = sdir;
		goto fail;
	}
	if (mkfifoat(sdir, FIFO_NAME, 0600) < 0) {
		r = cryo_error_set(err, errno, "create exec fifo");
		goto fail;
	}
	/* read-write: never blocks, and the init holds a reader until start */
	fifo = openat(sdir, FIFO_NAME, O_RDWR | O_CLOEXEC);
	if (fifo < 0) {
		r = cryo_error_set(err, errno, "open exec fifo");
		goto fail;
	}
	if (o->console_socket) {
		r = cryo_console_connect(o->console_socket, &console, err);
		if (r < 0)
			goto fail;
	} else if (spec->terminal) {
		int pair[2];

		/* foreground run: the init sends the pty master to us, cryo_console_relay() serves it */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
			r = cryo_error_set(err, errno, "socketpair");
			goto fail;
		}
		console_peer = pair[0];
		console = pair[1];
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0) {
		r = cryo_error_set(err, errno, "socketpair");
		goto fail;
	}

	for (i = 0; i < _CRYO_NS_MAX; i++)
		if (spec->namespaces[i].enabled && !spec->namespaces[i].path && i != CRYO_NS_CGROUP)
			flags |= (uint64_t)cryo_ns_type_flags[i];
	/* a pid namespace is joined by the runtime: setns(CLONE_NEWPID) affects children only */
	if (spec->namespaces[CRYO_NS_PID].enabled && spec->namespaces[CRYO_NS_PID].path) {
		pidns = open(spec->namespaces[CRYO_NS_PID].path, O_RDONLY | O_CLOEXEC);
		if (pidns < 0 || setns(pidns, CLONE_NEWPID) < 0) {
			r = cryo_error_set(err, errno, "join pid namespace `%s`", spec->namespaces[CRYO_NS_PID].path);
			goto fail;
		}
	}

	{
		struct clone_args ca = { .flags = flags, .exit_signal = SIGCHLD };

		fflush(NULL);
		pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	}
	if (pid < 0) {
		r = cryo_error_set(err, errno, "clone the container init");
		goto fail;
	}
	if (pid == 0) {
		struct init_args a = {
			.spec = spec,
			.bundle = bundle,
			.rootfs = rootfs,
			.sync_fd = sync[1],
			.fifo_fd = fifo,
			.console_fd = console,
			.new_userns = (flags & CLONE_NEWUSER) != 0,
		};

		init_main(&a);
	}
	close(sync[1]);
	sync[1] = -1;
	close(TAKE_FD(fifo));
	if (console >= 0)
		close(TAKE_FD(console));

	if (flags & CLONE_NEWUSER) {
		r = write_id_map(pid, "uid_map", spec->uid_mappings, spec->n_uid_mappings, err);
		if (r >= 0)
			r = write_id_map(pid, "gid_map", spec->gid_mappings, spec->n_gid_mappings, err);
		if (r < 0)
			goto fail;
	}
	r = cryo_cgroup_attach(st->cgroup_path, pid, err);
	if (r < 0)
		goto fail;
	if (spec->has_oom_score_adj) {
		char path[64], val[16];

		snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
		snprintf(val, sizeof(val), "%d", spec->oom_score_adj);
		r = cryo_write_file_at(AT_FDCWD, path, val);
		if (r < 0) {
			r = cryo_error_set(err, -r, "process.oomScoreAdj: write %s", path);
			goto fail;
		}
	}
	if (send(sync[0], "G", 1, MSG_NOSIGNAL) != 1) {
		r = cryo_error_set(err, errno, "wake the container init");
		goto fail;
	}
	for (;;) {
		do
			n = recv(sync[0], msg, sizeof(msg) - 1, 0);
		while (n < 0 && errno == EINTR);
		if (n != 1 || msg[0] != 'H')
			break;
		/* the namespaces exist, nothing is mounted yet */
		r = run_create_hooks(spec, st, pid, sync[0], err);
		if (r >= 0 && spec->network.present) {
			net_made = true;
			r = cryo_network_apply(&spec->network, pid, err);
		}
		if (r < 0)
			goto fail;
	}
	if (n <= 0) {
		r = cryo_error_setx(err, EIO, "the container init died during setup");
		goto fail;
	}
	msg[n] = '\0';
	if (msg[0] != 'R') {
		r = cryo_error_setx(err, EINVAL, "container init: %s", msg + 1);
		goto fail;
	}

	st->pid = pid;
	(void)cryo_pid_start_time(pid, &st->pid_start_time);
	st->status = CRYO_STATUS_CREATED;
	r = cryo_state_save_ext(o->root, st, false, err);
	if (r < 0)
		goto fail;
	if (o->pid_file) {
		r = write_pid_file(o->pid_file, pid, err);
		if (r < 0)
			goto fail;
	}
	if (console_peer >= 0) {
		r = cryo_console_recv_fd(console_peer, ret_console, NULL, err);
		if (r < 0)
			goto fail;
	} else if (ret_console) {
		*ret_console = -1;
	}
	*ret_pid = pid;
	*ret_lock = TAKE_FD(lock);
	r = 0;
	goto out;

fail:
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (net_made) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_network_teardown(&spec->network, &e) < 0)
			cryo_warn("undo create: %s", e.msg);
		cryo_error_clear(&e);
	}
	if (cg_made) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_cgroup_destroy(st->cgroup_path, STOP_TIMEOUT_MS, &e) < 0)
			cryo_warn("undo create: %s", e.msg);
		cryo_error_clear(&e);
	}
	if (dir_made) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_state_remove_dir(o->root, o->id, &e) < 0)
			cryo_warn("undo create: %s", e.msg);
		cryo_error_clear(&e);
	}
out:
	if (sync[0] >= 0)
		close(sync[0]);
	if (sync[1] >= 0)
		close(sync[1]);
	cryo_cgroup_paths_free(&cg);
	cryo_state_free(st);
	cryo_spec_free(spec);
	return r;
}

int cryo_container_create(const struct cryo_create_opts *o, struct cryo_error *err)
{
	pid_t pid;
	int lock = -1, r;

	r = do_create(o, &pid, &lock, NULL, err);
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
		cryo_warn("container `%s`: no hooks or network teardown: %s", st->id, e.msg);
		cryo_error_clear(&e);
		return NULL;
	}
	return spec;
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
	(void)unlinkat(sdir, FIFO_NAME, 0);
	st->status = CRYO_STATUS_RUNNING;
	r = cryo_state_save_ext(root, st, false, err);
	if (r < 0)
		return r;
	/* runtime-spec: a failing poststart hook is a warning, the container runs on */
	if (spec && spec->hooks.n[CRYO_HOOK_POSTSTART]) {
		struct cryo_error e = CRYO_ERROR_INIT;
		_cleanup_free_ char *state = hook_state(st, "running", st->pid);

		if (!state || cryo_hooks_run(&spec->hooks, CRYO_HOOK_POSTSTART, state, &e) < 0)
			cryo_warn("start `%s`: %s", st->id, e.msg ? e.msg : "out of memory");
		cryo_error_clear(&e);
	}
	return 0;
}

int cryo_container_start(const char *root, const char *id, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	struct cryo_spec *spec = NULL;
	_cleanup_close_ int lock = -1;
	int r;

	r = cryo_state_lock(root, id, LOCK_TIMEOUT_MS, &lock, err);
	if (r >= 0)
		r = cryo_container_load(root, id, &st, err);
	if (r >= 0) {
		spec = bundle_spec(st);
		r = do_start(root, st, spec, err);
	}
	cryo_spec_free(spec);
	cryo_state_free(st);
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
	struct cryo_state *st = NULL;
	struct json_object *o;
	enum cryo_freezer_state fs;
	int r;

	r = cryo_container_load(root, id, &st, err);
	if (r < 0)
		return r;
	o = json_object_new_object();
	if (!o) {
		cryo_state_free(st);
		return cryo_error_set(err, ENOMEM, "state");
	}
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
	cryo_state_free(st);
	*ret = o;
	return 0;
}

int cryo_container_pids(const char *root, const char *id, pid_t **ret, size_t *ret_n, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	int r;

	r = cryo_state_load(root, id, &st, err);
	if (r < 0)
		return r;
	r = cryo_cgroup_pids(st->cgroup_path, ret, ret_n, err);
	cryo_state_free(st);
	return r;
}

/* ---- kill ---- */

int cryo_container_kill(const char *root, const char *id, int sig, bool all, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	int r, pfd;

	r = cryo_container_load(root, id, &st, err);
	if (r < 0)
		goto out;
	if (all) {
		r = cryo_cgroup_kill(st->cgroup_path, sig, err);
		goto out;
	}
	if (st->status == CRYO_STATUS_STOPPED) {
		r = cryo_error_setx(err, ESRCH, "container `%s` is not running", id);
		goto out;
	}
	pfd = pidfd_open_checked(st->pid, st->pid_start_time);
	if (pfd < 0) {
		r = cryo_error_setx(err, ESRCH, "container `%s` is not running", id);
		goto out;
	}
	r = (int)syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
	close(pfd);
	if (r < 0)
		r = cryo_error_set(err, errno, "signal %d to pid %d", sig, (int)st->pid);
out:
	cryo_state_free(st);
	if (r < 0)
		return cryo_error_prefix(err, "kill `%s`", id);
	return 0;
}

/* ---- delete ---- */

/* Kill everything, remove cgroups and state; the lock is held. */
static int destroy(const char *root, struct cryo_state *st, struct cryo_error *err)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	struct cryo_spec *spec;
	int r, pfd;

	pfd = pidfd_open_checked(st->pid, st->pid_start_time);
	if (st->cgroup_path) {

		(void)cryo_cgroup_kill(st->cgroup_path, SIGKILL, &e);
		cryo_error_clear(&e);
	}
	if (pfd >= 0) {
		(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		r = wait_pidfd(pfd, STOP_TIMEOUT_MS);
		close(pfd);
		if (r < 0)
			return cryo_error_set(err, -r, "wait for init %d to die", (int)st->pid);
	}
	if (st->cgroup_path) {
		r = cryo_cgroup_destroy(st->cgroup_path, STOP_TIMEOUT_MS, err);
		if (r < 0)
			return r;
	}
	spec = bundle_spec(st);
	if (spec && spec->network.present && cryo_network_teardown(&spec->network, &e) < 0) {
		cryo_warn("delete `%s`: %s", st->id, e.msg);
		cryo_error_clear(&e);
	}
	/* runtime-spec: poststop failures are warnings, the container is gone anyway */
	if (spec && spec->hooks.n[CRYO_HOOK_POSTSTOP]) {
		_cleanup_free_ char *state = hook_state(st, "stopped", 0);

		if (!state || cryo_hooks_run(&spec->hooks, CRYO_HOOK_POSTSTOP, state, &e) < 0)
			cryo_warn("delete `%s`: %s", st->id, e.msg ? e.msg : "out of memory");
		cryo_error_clear(&e);
	}
	cryo_spec_free(spec);
	return cryo_state_remove_dir(root, st->id, err);
}

int cryo_container_delete(const char *root, const char *id, bool force, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	_cleanup_close_ int lock = -1;
	int r;

	r = cryo_state_lock(root, id, LOCK_TIMEOUT_MS, &lock, err);
	if (r >= 0)
		r = cryo_container_load(root, id, &st, err);
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
out:
	cryo_state_free(st);
	if (r < 0)
		return cryo_error_prefix(err, "delete `%s`", id);
	return 0;
}

/* ---- run ---- */

static volatile sig_atomic_t run_child;

static void forward_signal(int sig)
{
	if (run_child > 0)
		kill((pid_t)run_child, sig);
}

int cryo_container_run(const struct cryo_create_opts *o, bool detach, int *ret_status, struct cryo_error *err)
{
	static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct cryo_state *st = NULL;
	struct sigaction sa = { .sa_handler = forward_signal };
	_cleanup_close_ int lock = -1, master = -1;
	pid_t pid;
	size_t i;
	int r, status = 0;

	r = do_create(o, &pid, &lock, detach ? NULL : &master, err);
	if (r < 0)
		return cryo_error_prefix(err, "run `%s`", o->id);
	if (master >= 0)
		cryo_console_copy_size(master, STDIN_FILENO, STDOUT_FILENO);
	r = cryo_state_load(o->root, o->id, &st, err);
	if (r >= 0) {
		struct cryo_spec *spec = bundle_spec(st);

		r = do_start(o->root, st, spec, err);
		cryo_spec_free(spec);
	}
	cryo_state_free(st);
	st = NULL;
	if (r < 0) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_state_load(o->root, o->id, &st, &e) == 0 && destroy(o->root, st, &e) < 0)
			cryo_warn("undo run: %s", e.msg);
		cryo_error_clear(&e);
		cryo_state_free(st);
		return cryo_error_prefix(err, "run `%s`", o->id);
	}
	if (detach) {
		*ret_status = 0;
		return 0;
	}
	close(TAKE_FD(lock));

	run_child = pid;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (i = 0; i < ARRAY_SIZE(fwd); i++)
		sigaction(fwd[i], &sa, NULL);
	if (master >= 0) {
		struct cryo_error e = CRYO_ERROR_INIT;
		_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0);

		if (cryo_console_relay(master, STDIN_FILENO, STDOUT_FILENO, pfd, -1, &e) < 0)
			cryo_warn("run `%s`: %s", o->id, e.msg);
		cryo_error_clear(&e);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			status = -1;
			break;
		}
	}
	run_child = 0;
	if (status == -1)
		*ret_status = 255;
	else if (WIFSIGNALED(status))
		*ret_status = 128 + WTERMSIG(status);
	else
		*ret_status = WEXITSTATUS(status);

	/* the container is stopped: remove it, as runc does */
	r = cryo_state_lock(o->root, o->id, LOCK_TIMEOUT_MS, &lock, err);
	if (r == -ENOENT) {
		cryo_error_clear(err);
		return 0;
	}
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
	cryo_state_free(st);
	if (r < 0)
		return cryo_error_prefix(err, "run `%s`: remove after exit", o->id);
	return 0;
}
