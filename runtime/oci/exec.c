// SPDX-License-Identifier: GPL-2.0-only
/*
 * `cryo exec`. The order, and why:
 *
 *  cryo (host)                              child (becomes the process)
 *  lock, load state: running? not paused?
 *  pidfd of the init, checked against the
 *  start time in the state (pid reuse)
 *  the process spec (config.json + changes)
 *  setns(pidfd, CLONE_NEWPID) if it differs
 *  fork ───────────────────────────────────▶ in the container's pid ns;
 *                                            non-dumpable (no container
 *                                            process may ptrace or open
 *                                            /proc/<it>/ while it still is
 *                                            a copy of cryo), dies with cryo
 *  attach it to the cgroup (every hierarchy)
 *  oom_score_adj, "G<pid>" ────────────────▶ setns(pidfd, user|mnt|net|ipc|
 *                                            uts|cgroup, only those that
 *                                            differ from ours): root and cwd
 *                                            become the container's root;
 *                                            the terminal (or a session of
 *                                            its own), chdir(cwd), args[0],
 *                                            rlimits/seccomp (the notify fd
 *                                            to listenerPath, with <pid>)/
 *                                            caps/user, exec
 *  EOF on the sync socket = exec'd;
 *  "E<message>" = it failed
 *  pid file, unlock; detach: done, else
 *  relay the terminal / forward signals,
 *  wait, exit code
 *
 * The child is a direct child of cryo (so its exit status is ours to
 * read); with --detach cryo exits and it is reparented to the nearest
 * subreaper (conmon for Podman) or the host's init, as with runc.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/close_range.h>

#include <json-c/json.h>

#include "cgroup.h"
#include "console.h"
#include "container.h"
#include "exec.h"
#include "process.h"
#include "spec.h"
#include "state.h"
#include "util.h"

#define MSG_MAX 4096
#define PROCESS_MAX_BYTES (1u << 20)
#define MAX_ARGS 4096

/* ---- the process spec ---- */

static int parse_json(const char *text, size_t len, const char *what, struct json_object **ret, struct cryo_error *err)
{
	struct json_tokener *tok = json_tokener_new_ex(64);
	struct json_object *o;
	enum json_tokener_error e;

	if (!tok)
		return cryo_error_set(err, ENOMEM, "%s", what);
	o = json_tokener_parse_ex(tok, text, (int)len);
	e = json_tokener_get_error(tok);
	json_tokener_free(tok);
	if (!o || e != json_tokener_success) {
		json_object_put(o);
		return cryo_error_setx(err, EINVAL, "%s: invalid JSON: %s", what,
				       e == json_tokener_continue ? "unexpected end of file" : json_tokener_error_desc(e));
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return cryo_error_setx(err, EINVAL, "%s: must be a JSON object", what);
	}
	*ret = o;
	return 0;
}

static int read_json_file(const char *path, const char *what, struct json_object **ret, struct cryo_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	r = cryo_read_file_at(AT_FDCWD, path, PROCESS_MAX_BYTES, &text, &len);
	if (r < 0)
		return cryo_error_set(err, -r, "read %s `%s`", what, path);
	return parse_json(text, len, what, ret, err);
}

static struct json_object *strv_json(char *const *v)
{
	struct json_object *a = json_object_new_array();

	for (; a && v && *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

/* env: KEY=VALUE replaces the entry with the same KEY, or is appended. */
static int merge_env(struct json_object *proc, char *const *env, struct cryo_error *err)
{
	struct json_object *a = NULL;

	if (!env || !*env)
		return 0;
	if (!json_object_object_get_ex(proc, "env", &a) || !json_object_is_type(a, json_type_array)) {
		a = json_object_new_array();
		if (!a)
			return cryo_error_set(err, ENOMEM, "--env");
		json_object_object_add(proc, "env", a);
	}
	for (; *env; env++) {
		const char *eq = strchr(*env, '=');
		size_t klen, i, n = json_object_array_length(a);
		bool done = false;

		if (!eq || eq == *env)
			return cryo_error_setx(err, EINVAL, "--env `%s`: must be KEY=VALUE", *env);
		klen = (size_t)(eq - *env) + 1;
		for (i = 0; i < n && !done; i++) {
			const char *cur = json_object_get_string(json_object_array_get_idx(a, i));

			if (cur && strncmp(cur, *env, klen) == 0) {
				json_object_array_put_idx(a, i, json_object_new_string(*env));
				done = true;
			}
		}
		if (!done)
			json_object_array_add(a, json_object_new_string(*env));
	}
	return 0;
}

static bool has_cap(struct json_object *caps, const char *set, const char *cap)
{
	struct json_object *a = NULL;
	size_t i, n;

	if (!json_object_object_get_ex(caps, set, &a) || !json_object_is_type(a, json_type_array))
		return false;
	n = json_object_array_length(a);
	for (i = 0; i < n; i++) {
		const char *cur = json_object_get_string(json_object_array_get_idx(a, i));

		if (cur && strcasecmp(cur, cap) == 0)
			return true;
	}
	return false;
}

static void add_cap(struct json_object *caps, const char *set, const char *cap)
{
	struct json_object *a = NULL;

	if (has_cap(caps, set, cap))
		return;
	if (!json_object_object_get_ex(caps, set, &a) || !json_object_is_type(a, json_type_array)) {
		a = json_object_new_array();
		if (!a)
			return;
		json_object_object_add(caps, set, a);
	}
	json_object_array_add(a, json_object_new_string(cap));
}

/* runc's changes of the config's process for `exec ID CMD...`. */
static int apply_flags(struct json_object *proc, const struct cryo_exec_opts *o, struct cryo_error *err)
{
	struct json_object *v;
	int r;

	json_object_object_add(proc, "args", strv_json(o->args));
	if (o->cwd)
		json_object_object_add(proc, "cwd", json_object_new_string(o->cwd));
	r = merge_env(proc, o->env, err);
	if (r < 0)
		return r;
	if (o->caps && *o->caps) {
		if (!json_object_object_get_ex(proc, "capabilities", &v) || !json_object_is_type(v, json_type_object)) {
			v = json_object_new_object();
			if (!v)
				return cryo_error_set(err, ENOMEM, "--cap");
			json_object_object_add(proc, "capabilities", v);
		}
		for (char *const *c = o->caps; *c; c++) {
			add_cap(v, "bounding", *c);
			add_cap(v, "effective", *c);
			add_cap(v, "permitted", *c);
			/*
			 * runc also raises it in ambient when the config has
			 * inheritable caps; the kernel allows that only for a
			 * cap that is inheritable too
			 */
			if (has_cap(v, "inheritable", *c))
				add_cap(v, "ambient", *c);
		}
	}
	json_object_object_add(proc, "terminal", json_object_new_boolean(o->tty));
	if (o->no_new_privs)
		json_object_object_add(proc, "noNewPrivileges", json_object_new_boolean(true));
	if (o->has_user) {
		struct json_object *u = NULL;

		if (!json_object_object_get_ex(proc, "user", &u) || !json_object_is_type(u, json_type_object)) {
			u = json_object_new_object();
			if (!u)
				return cryo_error_set(err, ENOMEM, "--user");
			json_object_object_add(proc, "user", u);
		}
		json_object_object_add(u, "uid", json_object_new_int64(o->uid));
		json_object_object_add(u, "gid", json_object_new_int64(o->gid));
	}
	if (o->n_additional_gids) {
		struct json_object *u = NULL, *g = json_object_new_array();

		if (!g)
			return cryo_error_set(err, ENOMEM, "--additional-gids");
		for (size_t i = 0; i < o->n_additional_gids; i++)
			json_object_array_add(g, json_object_new_int64(o->additional_gids[i]));
		if (!json_object_object_get_ex(proc, "user", &u) || !json_object_is_type(u, json_type_object)) {
			u = json_object_new_object();
			json_object_object_add(proc, "user", u);
		}
		json_object_object_add(u, "additionalGids", g);
	}
	return 0;
}

/*
 * The container's config.json with its process replaced (--process) or
 * changed (the flags), parsed and validated as a whole: the process
 * fields get the same checks as at create, and seccomp, namespaces and
 * the rest are the container's.
 */
static int exec_spec(const struct cryo_exec_opts *o, const char *bundle, struct cryo_spec **ret,
		     struct cryo_error *err)
{
	struct json_object *config = NULL, *proc = NULL;
	char path[PATH_MAX];
	const char *text;
	int r;

	if (!bundle)
		return cryo_error_setx(err, ENOENT, "the container's state names no bundle");
	if ((size_t)snprintf(path, sizeof(path), "%s/config.json", bundle) >= sizeof(path))
		return cryo_error_setx(err, ENAMETOOLONG, "bundle `%s`", bundle);
	r = read_json_file(path, "the container's config", &config, err);
	if (r < 0)
		return r;
	if (o->process_path) {
		r = read_json_file(o->process_path, "process", &proc, err);
		if (r < 0)
			goto out;
		json_object_object_add(config, "process", proc);
	} else {
		if (!json_object_object_get_ex(config, "process", &proc) ||
		    !json_object_is_type(proc, json_type_object)) {
			proc = json_object_new_object();
			if (!proc) {
				r = cryo_error_set(err, ENOMEM, "process");
				goto out;
			}
			json_object_object_add(config, "process", proc);
		}
		r = apply_flags(proc, o, err);
		if (r < 0)
			goto out;
	}
	text = json_object_to_json_string_ext(config, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text) {
		r = cryo_error_set(err, ENOMEM, "process");
		goto out;
	}
	r = cryo_spec_parse(text, strlen(text), ret, err);
	if (r < 0 && o->process_path)
		r = cryo_error_prefix(err, "process `%s`", o->process_path);
out:
	json_object_put(config);
	return r;
}

/* ---- helpers ---- */

/*
 * The namespace types in the order they are joined: the user namespace
 * first (it owns the others, and joining it gives the capabilities the
 * other setns() calls need), pid last (joined by cryo itself, for its child).
 */
static const struct {
	const char *name;
	int flag;
} ns_types[] = {
	{ "user", CLONE_NEWUSER }, { "mnt", CLONE_NEWNS }, { "net", CLONE_NEWNET },	  { "ipc", CLONE_NEWIPC },
	{ "uts", CLONE_NEWUTS },   { "cgroup", CLONE_NEWCGROUP }, { "pid", CLONE_NEWPID },
};
#define N_NS ARRAY_SIZE(ns_types)
#define NS_PID (N_NS - 1)

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(TAKE_FD(fds[i]));
}

/*
 * Open /proc/<init>/ns/<type> of each namespace the init does not share
 * with us (fds[i] = -1 for those it shares: a setns() into our own user
 * namespace is EINVAL, into the others a no-op). The init's start time is
 * checked after the opens, so the fds are known to be the container's
 * even if its pid was reused meanwhile.
 */
static int open_namespaces(const struct cryo_state *st, int fds[N_NS], struct cryo_error *err)
{
	uint64_t now;
	int r = 0;

	for (size_t i = 0; i < N_NS; i++)
		fds[i] = -1;
	if (st->pid <= 0)
		return cryo_error_setx(err, ESRCH, "container `%s` has no init process", st->id);
	for (size_t i = 0; i < N_NS; i++) {
		char path[64];
		struct stat self, them;

		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)st->pid, ns_types[i].name);
		fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			if (errno == ENOENT && (ns_types[i].flag == CLONE_NEWCGROUP))
				continue; /* a kernel without that namespace type */
			r = cryo_error_set(err, errno, "open `%s`", path);
			goto fail;
		}
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns_types[i].name);
		if (fstat(fds[i], &them) < 0 || stat(path, &self) < 0) {
			r = cryo_error_set(err, errno, "stat `%s`", path);
			goto fail;
		}
		if (self.st_dev == them.st_dev && self.st_ino == them.st_ino)
			close(TAKE_FD(fds[i]));
	}
	if (cryo_pid_start_time(st->pid, &now) < 0 || (st->pid_start_time && now != st->pid_start_time)) {
		r = cryo_error_setx(err, ESRCH, "container `%s` is not running (its init %d is gone)", st->id,
				    (int)st->pid);
		goto fail;
	}
	return 0;
fail:
	close_all(fds, N_NS);
	return r;
}

/*
 * The init's root (/proc/<init>/root), which the new process takes by
 * chroot() once it is in the container's namespaces: setns() into a mount
 * namespace leaves it at that namespace's root, which is the init's only
 * when create pivoted there. A container without a mount namespace of its
 * own, or in one joined by path, was chroot()ed into root.path instead.
 * Opened after open_namespaces(), so the start time is checked again.
 */
static int open_init_root(const struct cryo_state *st, int *ret_fd, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	char path[64];
	uint64_t now;

	*ret_fd = -1;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)st->pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", path);
	if (cryo_pid_start_time(st->pid, &now) < 0 || (st->pid_start_time && now != st->pid_start_time))
		return cryo_error_setx(err, ESRCH, "container `%s` is not running (its init %d is gone)", st->id,
				       (int)st->pid);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* --preserve-fds N: fds 3 .. 3+N-1 must all be open, or cryo's own would take their numbers. */
static int check_preserved(unsigned int n, struct cryo_error *err)
{
	if (n > CRYO_EXEC_MAX_PRESERVE_FDS)
		return cryo_error_setx(err, EINVAL, "--preserve-fds %u: at most %d", n, CRYO_EXEC_MAX_PRESERVE_FDS);
	for (unsigned int i = 0; i < n; i++)
		if (fcntl((int)(3 + i), F_GETFD) < 0)
			return cryo_error_setx(err, EBADF, "--preserve-fds %u: fd %u is not open", n, 3 + i);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Close every fd from `from` up except those in keep (at most 2 + N_NS). */
static void close_fds_from_except(unsigned int from, const int *keep, size_t n)
{
	int k[2 + N_NS] = { 0 };
	size_t m = 0;

	for (size_t i = 0; i < n && m < ARRAY_SIZE(k); i++)
		if (keep[i] >= (int)from)
			k[m++] = keep[i];
	qsort(k, m, sizeof(int), cmp_int);
	for (size_t i = 0; i < m; i++) {
		if ((unsigned int)k[i] > from)
			syscall(SYS_close_range, from, (unsigned int)k[i] - 1, 0);
		from = (unsigned int)k[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0);
}

/* ---- the child ---- */

struct child_args {
	const struct cryo_spec *spec;
	int sync_fd;
	int console_fd;     /* -1: no terminal */
	const int *ns_fds;  /* N_NS entries, -1 = shared with us */
	int root_fd;        /* the init's root */
	int listener_fd;    /* linux.seccomp.listenerPath connection, or -1 */
	const char *state;  /* the container's state JSON for the listener, or NULL */
	unsigned int preserve_fds;
	pid_t parent;
	bool relay;         /* foreground terminal: cryo relays the pty */
};

static void __attribute__((noreturn)) child_fail(int sync_fd, struct cryo_error *err)
{
	char buf[MSG_MAX];
	int n = snprintf(buf, sizeof(buf), "E%s", err->msg ? err->msg : "exec failed");

	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	(void)!send(sync_fd, buf, (size_t)n, MSG_NOSIGNAL);
	_exit(127);
}

static void __attribute__((noreturn)) child_main(const struct child_args *a)
{
	const struct cryo_spec *spec = a->spec;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_seccomp_listener listener = { .fd = a->listener_fd, .state = a->state };
	int keep[4 + N_NS];
	char exe[PATH_MAX], go[32];
	ssize_t n;

	keep[0] = a->sync_fd;
	keep[1] = a->console_fd;
	keep[2] = a->root_fd;
	keep[3] = a->listener_fd;
	for (size_t i = 0; i < N_NS; i++)
		keep[4 + i] = a->ns_fds[i];
	close_fds_from_except(3 + a->preserve_fds, keep, ARRAY_SIZE(keep));
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
	    getppid() != a->parent)
		_exit(127);
	/* "G", then our pid as cryo sees it (for the seccomp listener) */
	do
		n = recv(a->sync_fd, go, sizeof(go) - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 1 || go[0] != 'G')
		_exit(127);
	go[n] = '\0';
	listener.pid = (pid_t)atoi(go + 1);

	for (size_t i = 0; i < NS_PID; i++) {
		if (a->ns_fds[i] < 0)
			continue;
		if (setns(a->ns_fds[i], ns_types[i].flag) < 0) {
			cryo_error_set(&err, errno, "join the container's %s namespace", ns_types[i].name);
			child_fail(a->sync_fd, &err);
		}
		close(a->ns_fds[i]);
	}
	if (a->root_fd >= 0 && (fchdir(a->root_fd) < 0 || chroot(".") < 0)) {
		cryo_error_set(&err, errno, "chroot into the container's root");
		child_fail(a->sync_fd, &err);
	}
	if (a->console_fd >= 0) {
		/* after the mount namespace: the pty comes from the container's devpts */
		struct winsize ws = { 0 };
		/*
		 * cryo's own terminal size (on our stdio until the setup
		 * replaces it) for the pty: the relay copies it too, but only
		 * after the process may have looked
		 */
		bool own_size = a->relay && !spec->has_console_size &&
				(ioctl(0, TIOCGWINSZ, &ws) == 0 || ioctl(1, TIOCGWINSZ, &ws) == 0) && ws.ws_row && ws.ws_col;

		if (cryo_console_setup(a->console_fd, spec->uid, &err) < 0 ||
		    (spec->has_console_size &&
		     cryo_console_resize(0, spec->console_height, spec->console_width, &err) < 0) ||
		    (own_size && cryo_console_resize(0, ws.ws_row, ws.ws_col, &err) < 0))
			child_fail(a->sync_fd, &err);
		close(a->console_fd);
	} else if (setsid() < 0) {
		/* a session of its own inside the container, so CRIU can dump it with the rest */
		cryo_error_set(&err, errno, "setsid");
		child_fail(a->sync_fd, &err);
	}
	if (chdir(spec->cwd) < 0) {
		cryo_error_set(&err, errno, "process.cwd: chdir `%s`", spec->cwd);
		child_fail(a->sync_fd, &err);
	}
	if (cryo_process_find_executable(spec, exe, sizeof(exe), &err) < 0)
		child_fail(a->sync_fd, &err);
	for (unsigned int i = 0; i < a->preserve_fds; i++) {
		if (fcntl((int)(3 + i), F_SETFD, 0) < 0) {
			cryo_error_set(&err, errno, "--preserve-fds: fd %u", 3 + i);
			child_fail(a->sync_fd, &err);
		}
	}
	if (syscall(SYS_close_range, 3 + a->preserve_fds, ~0U, CLOSE_RANGE_CLOEXEC) < 0 ||
	    prctl(PR_SET_PDEATHSIG, 0) < 0) {
		cryo_error_set(&err, errno, "close_range");
		child_fail(a->sync_fd, &err);
	}
	cryo_process_exec(spec, exe, &listener, &err);
	child_fail(a->sync_fd, &err);
}

/* ---- the parent ---- */

static volatile sig_atomic_t exec_child_pid;

static void forward_signal(int sig)
{
	if (exec_child_pid > 0)
		kill((pid_t)exec_child_pid, sig);
}

static void reap(pid_t pid)
{
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/*
 * Wait for the process: relay its terminal when we hold the master, then
 * reap it. Signals sent to cryo go to it.
 */
static int wait_child(pid_t pid, int master, int *ret_status, struct cryo_error *err)
{
	static const int fwd[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	struct sigaction sa = { .sa_handler = forward_signal };
	int status = 0, r = 0;

	exec_child_pid = pid;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < ARRAY_SIZE(fwd); i++)
		sigaction(fwd[i], &sa, NULL);
	if (master >= 0) {
		_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pid, 0);

		r = cryo_console_relay(master, STDIN_FILENO, STDOUT_FILENO, pfd, -1, err);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			exec_child_pid = 0;
			return cryo_error_set(err, errno, "wait for the process");
		}
	}
	exec_child_pid = 0;
	if (WIFSIGNALED(status))
		*ret_status = 128 + WTERMSIG(status);
	else
		*ret_status = WEXITSTATUS(status);
	return r;
}

static int do_exec(const struct cryo_exec_opts *o, int *ret_status, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	struct cryo_spec *spec = NULL;
	_cleanup_close_ int lock = -1, console = -1, console_peer = -1, master = -1, self_pidns = -1, root_fd = -1;
	int sync[2] = { -1, -1 }, ns_fds[N_NS], listener = -1, r;
	_cleanup_free_ char *state_text = NULL;
	char msg[MSG_MAX];
	pid_t pid = -1;
	ssize_t n;

	for (size_t i = 0; i < N_NS; i++)
		ns_fds[i] = -1;
	if (!o->process_path && (!o->args || !o->args[0]))
		return cryo_error_setx(err, EINVAL, "no command given (and no --process)");
	r = check_preserved(o->preserve_fds, err);
	if (r < 0)
		return r;
	r = cryo_state_lock(o->root, o->id, CRYO_STATE_LOCK_TIMEOUT_MS, &lock, err);
	if (r >= 0)
		r = cryo_container_load(o->root, o->id, &st, err);
	if (r < 0)
		goto out;
	/* runc's words, which clients match */
	if (st->status == CRYO_STATUS_PAUSED && !o->ignore_paused) {
		r = cryo_error_setx(err, EBUSY, "cannot exec in a paused container (`%s`: resume it first)", o->id);
		goto out;
	}
	if (st->status != CRYO_STATUS_RUNNING && st->status != CRYO_STATUS_CREATED && st->status != CRYO_STATUS_PAUSED) {
		r = cryo_error_setx(err, ESRCH, "container `%s` is %s: only a running container takes exec", o->id,
				    cryo_status_names[st->status]);
		goto out;
	}
	r = exec_spec(o, st->bundle, &spec, err);
	if (r < 0)
		goto out;
	if (spec->terminal && !o->console_socket && o->detach) {
		r = cryo_error_setx(err, EINVAL, "a terminal for a detached process needs --console-socket");
		goto out;
	}
	if (!spec->terminal && o->console_socket) {
		r = cryo_error_setx(err, EINVAL, "--console-socket given but the process has no terminal");
		goto out;
	}
	r = open_namespaces(st, ns_fds, err);
	if (r >= 0)
		r = open_init_root(st, &root_fd, err);
	if (r < 0)
		goto out;
	if (o->console_socket) {
		r = cryo_console_connect(o->console_socket, &console, err);
		if (r < 0)
			goto out;
	} else if (spec->terminal) {
		int pair[2];

		/* the foreground terminal: the child sends the master to us */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
			r = cryo_error_set(err, errno, "socketpair");
			goto out;
		}
		console_peer = pair[0];
		console = pair[1];
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0) {
		r = cryo_error_set(err, errno, "socketpair");
		goto out;
	}
	/* an exec'd process gets the container's filter: its notify fd goes to the listener too (as runc, crun) */
	r = cryo_seccomp_listener_connect(&spec->seccomp, &listener, err);
	if (r >= 0 && listener >= 0) {
		struct json_object *so = NULL;

		r = cryo_container_state_json(o->root, o->id, &so, err);
		if (r >= 0) {
			state_text = strdup(json_object_to_json_string_ext(so, JSON_C_TO_STRING_PLAIN));
			json_object_put(so);
			if (!state_text)
				r = cryo_error_set(err, ENOMEM, "state for the seccomp listener");
		}
	}
	if (r < 0)
		goto out;
	/*
	 * Affects our children only: the fork below is born in the
	 * container's pid namespace. Undone right after, so that no later
	 * child of ours (a sanitizer's helper thread, a hook) lands there.
	 */
	if (ns_fds[NS_PID] >= 0) {
		self_pidns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
		if (self_pidns < 0 || setns(ns_fds[NS_PID], CLONE_NEWPID) < 0) {
			r = cryo_error_set(err, errno, "join the pid namespace of init %d", (int)st->pid);
			goto out;
		}
	}

	fflush(NULL);
	pid = fork();
	if (pid != 0 && self_pidns >= 0 && setns(self_pidns, CLONE_NEWPID) < 0 && pid > 0) {
		r = cryo_error_set(err, errno, "return to our own pid namespace");
		goto fail;
	}
	if (pid < 0) {
		r = cryo_error_set(err, errno, "fork into the container");
		goto out;
	}
	if (pid == 0) {
		struct child_args a = {
			.spec = spec,
			.sync_fd = sync[1],
			.console_fd = console,
			.ns_fds = ns_fds,
			.root_fd = root_fd,
			.listener_fd = listener,
			.state = state_text,
			.preserve_fds = o->preserve_fds,
			.parent = getppid(),
			.relay = console_peer >= 0,
		};

		child_main(&a);
	}
	close(sync[1]);
	sync[1] = -1;
	if (console >= 0)
		close(TAKE_FD(console));
	closep(&listener);

	r = cryo_cgroup_attach(st->cgroup_path, pid, err);
	if (r == 0 && o->cgroups && o->cgroups[0])
		r = cryo_cgroup_attach_sub(st->cgroup_path, o->cgroups, pid, err);
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
	snprintf(msg, sizeof(msg), "G%d", (int)pid);
	if (send(sync[0], msg, strlen(msg), MSG_NOSIGNAL) != (ssize_t)strlen(msg)) {
		r = cryo_error_set(err, errno, "wake the process");
		goto fail;
	}
	/* in a paused container it runs only after `resume`, which needs the lock */
	if (st->status == CRYO_STATUS_PAUSED)
		closep(&lock);
	do
		n = recv(sync[0], msg, sizeof(msg) - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		r = cryo_error_set(err, errno, "wait for the process to start");
		goto fail;
	}
	if (n > 0) {
		msg[n] = '\0';
		r = cryo_error_setx(err, EINVAL, "%s", msg[0] == 'E' ? msg + 1 : "the process failed to start");
		goto fail;
	}
	/* EOF: the socket closed with the exec */
	if (console_peer >= 0) {
		r = cryo_console_recv_fd(console_peer, &master, NULL, err);
		if (r < 0)
			goto fail;
	}
	if (o->pid_file) {
		r = cryo_write_pid_file(o->pid_file, pid, err);
		if (r < 0)
			goto fail;
	}
	closep(&lock);
	if (o->detach) {
		*ret_status = 0;
		r = 0;
		goto out;
	}
	r = wait_child(pid, master, ret_status, err);
	goto out;

fail:
	kill(pid, SIGKILL);
	reap(pid);
out:
	close_all(ns_fds, N_NS);
	closep(&listener);
	if (sync[0] >= 0)
		close(sync[0]);
	if (sync[1] >= 0)
		close(sync[1]);
	cryo_spec_free(spec);
	cryo_state_free(st);
	return r;
}

int cryo_exec(const struct cryo_exec_opts *o, int *ret_status, struct cryo_error *err)
{
	int r;

	*ret_status = 0;
	r = do_exec(o, ret_status, err);
	if (r < 0)
		return cryo_error_prefix(err, "exec in `%s`", o->id);
	return 0;
}
