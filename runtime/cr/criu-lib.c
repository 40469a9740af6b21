// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <criu/criu.h>
#include <criu/version.h>

#include "cgroup.h"
#include "criu-lib.h"
#include "log.h"
#include "proc.h"
#include "util.h"

static enum criu_cg_mode to_criu_cg_mode(enum cryo_criu_cg_mode m)
{
	switch (m) {
	case CRYO_CRIU_CG_SOFT:
		return CRIU_CG_MODE_SOFT;
	case CRYO_CRIU_CG_FULL:
		return CRIU_CG_MODE_FULL;
	case CRYO_CRIU_CG_STRICT:
		return CRIU_CG_MODE_STRICT;
	case CRYO_CRIU_CG_IGNORE:
		return CRIU_CG_MODE_IGNORE;
	default:
		return CRIU_CG_MODE_DEFAULT;
	}
}

/* Path of CRIU's log for messages. */
static char *log_path(const struct cryo_criu_opts *o, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", o->work_dir ? o->work_dir : o->image_dir, name) < 0)
		return NULL;
	return p;
}

static int criu_failed(const struct cryo_criu_opts *o, const char *what, const char *name, int r,
		       struct cryo_error *err)
{
	_cleanup_free_ char *path = log_path(o, name);
	_cleanup_free_ char *errors = path ? cryo_criu_log_errors(path, CRYO_CRIU_LOG_ERRORS_MAX_LINES) : NULL;
	int status = (r == -EBADE || r >= 0) ? EIO : -r;

	if (errors)
		return cryo_error_setx(err, status, "criu %s failed: %s (log: `%s`)", what, errors, path ? path : "?");
	return cryo_error_setx(err, status, "criu %s failed (libcriu: %s); the log `%s` has no Error lines", what,
			       r == -EBADE ? "CRIU reported a failure" : strerror(status), path ? path : "?");
}

/*
 * CRIU's network lock (firewall rules that drop every packet of the
 * container's netns while it is dumped or restored, taken out again after)
 * exists for established TCP connections, whose sockets are in repair
 * mode meanwhile. Without --tcp-established there are none in the image
 * (CRIU refuses to dump one), and the lock costs 2 iptables-restore runs to
 * set and up to 7 to lift (about 50 ms of a dump, 30 of a restore). CRIU
 * can skip it since 3.19. A restore needs nothing from us: CRIU keeps the
 * dump's lock method in the image (inventory) and its restore takes that
 * one, whatever it is told.
 */
#define CRIU_NETWORK_LOCK_SKIP_SINCE 31900
#define SKIP_LOCK_CONF "cryo-criu.conf"
/* CRIU's name for a network namespace the container joined (runc's name for it too) */
#define EXTERNAL_NETNS_KEY "extRootNetNS"

static bool skip_network_lock(const struct cryo_criu_opts *o, const struct cryo_criu_version *v, bool dump)
{
	return dump && !o->flags.tcp_established && v->code >= CRIU_NETWORK_LOCK_SKIP_SINCE;
}

/*
 * The skip goes to CRIU through a config file of ours (CRIU_CONFIG_FILE,
 * which `criu swrk` reads before the RPC options): the libcriu linked here
 * may predate 3.19 and refuse the RPC value. Only a dump skips, and a
 * dump's `criu swrk` is started by swrk_start(), which gives it the
 * variable: never over a CRIU_CONFIG_FILE of the user's (then CRIU locks,
 * as before). Returns the file's path (the caller frees it), or NULL.
 */
static char *skip_lock_conf(const struct cryo_criu_opts *o)
{
	static const char conf[] = "network-lock skip\n";
	char *path = NULL;

	if (getenv("CRIU_CONFIG_FILE"))
		return NULL;
	if (asprintf(&path, "%s/" SKIP_LOCK_CONF, o->work_dir ? o->work_dir : o->image_dir) < 0)
		return NULL;
	if (cryo_write_new_file_unsynced_at(AT_FDCWD, path, conf, sizeof(conf) - 1, 0600) < 0) {
		free(path);
		return NULL;
	}
	return path;
}

/*
 * The org.criu.config file goes in CRIU's RPC field config_file: CRIU
 * reads it after the RPC options, so that it overrides them (runc's
 * semantics: the file's log-file wins over ours). libcriu has a setter
 * for it only since 3.18; bookworm's 3.17 has the field but no setter.
 * Its criu_opts starts with the CriuOpts message it sends (lib/c/criu.c,
 * unchanged since 3.x): the field is set there, once the log file set
 * through the API is found where it must be, else refused (-ENOTSUP).
 * Set right before the RPC call, taken back out right after (the string
 * is the caller's, libcriu must not free it).
 */
static int set_config_file(criu_opts *co, const char *path, const char *log_name)
{
#if CRIU_VERSION_MAJOR > 3 || CRIU_VERSION_MINOR >= 18
	(void)log_name;
	return criu_local_set_config_file(co, path);
#else
	CriuOpts *rpc = *(CriuOpts **)co;

	if (!rpc || !rpc->log_file || strcmp(rpc->log_file, log_name) != 0 || rpc->config_file)
		return -ENOTSUP;
	rpc->config_file = (char *)path;
	return 0;
#endif
}

static void unset_config_file(criu_opts *co)
{
#if !(CRIU_VERSION_MAJOR > 3 || CRIU_VERSION_MINOR >= 18)
	CriuOpts *rpc = co ? *(CriuOpts **)co : NULL;

	if (rpc)
		rpc->config_file = NULL;
#else
	(void)co;
#endif
}

/* Options common to dump and restore. */
static int set_common(criu_opts *co, const struct cryo_criu_opts *o, bool skip_lock, const char *log_name,
		      int *ret_img_fd, int *ret_work_fd, struct cryo_error *err)
{
	_cleanup_close_ int img = -1, work = -1;
	const struct cryo_criu_extns *x;
	const char *const *m;
	int r;

	img = open(o->image_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (img < 0)
		return cryo_error_set(err, errno, "open image dir `%s`", o->image_dir);
	criu_local_set_images_dir_fd(co, img);
	if (o->work_dir) {
		work = open(o->work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (work < 0)
			return cryo_error_set(err, errno, "open work dir `%s`", o->work_dir);
		criu_local_set_work_dir_fd(co, work);
	}
	criu_local_set_log_level(co, cryo_criu_log_level());
	r = criu_local_set_log_file(co, log_name);
	if (r < 0)
		return cryo_error_set(err, -r, "libcriu: log file");
	/*
	 * CRIU locks a network namespace with iptables by default; where
	 * iptables is not installed, its nftables backend does the job.
	 */
	if (!skip_lock && !cryo_criu_in_path("iptables-restore"))
		(void)criu_local_set_network_lock(co, CRIU_NETWORK_LOCK_NFTABLES);
	criu_local_set_ext_unix_sk(co, o->flags.ext_unix_sk);
	criu_local_set_tcp_established(co, o->flags.tcp_established);
	criu_local_set_shell_job(co, o->flags.shell_job);
	criu_local_set_file_locks(co, o->flags.file_locks);
	criu_local_set_auto_dedup(co, o->flags.auto_dedup);
	if (o->flags.lsm_profile) {
		r = criu_local_set_lsm_profile(co, o->flags.lsm_profile);
		if (r < 0)
			return cryo_error_set(err, -r, "libcriu: lsm profile");
	}
	if (o->flags.lsm_mount_context) {
		r = criu_local_set_lsm_mount_context(co, o->flags.lsm_mount_context);
		if (r < 0)
			return cryo_error_set(err, -r, "libcriu: lsm mount context");
	}
	if (o->flags.cg_mode != CRYO_CRIU_CG_DEFAULT)
		criu_local_set_manage_cgroups_mode(co, to_criu_cg_mode(o->flags.cg_mode));

	if (o->timeout_s)
		criu_local_set_timeout(co, o->timeout_s);
	for (m = o->ext_mounts; m && m[0] && m[1]; m += 2) {
		r = criu_local_add_ext_mount(co, m[0], m[1]);
		if (r < 0)
			return cryo_error_set(err, -r, "external mount `%s`", m[0]);
	}
	for (x = o->ext_ns; x && x->key; x++) {
		r = x->external ? criu_local_add_external(co, x->external) : criu_local_add_inherit_fd(co, x->fd, x->key);
		if (r < 0)
			return cryo_error_set(err, -r, "external namespace `%s`", x->key);
	}
	if (o->veth_inside && o->veth_outside) {
		r = criu_local_add_veth_pair(co, o->veth_inside, o->veth_outside);
		if (r < 0)
			return cryo_error_set(err, -r, "veth pair `%s`", o->veth_inside);
	}
	*ret_img_fd = TAKE_FD(img);
	*ret_work_fd = TAKE_FD(work);
	return 0;
}

/*
 * libcriu options for one dump or restore (`what`): the service binary,
 * the environment this CRIU version needs, and the options common to both.
 * The image and work dir fds must stay open until CRIU has run.
 */
static int open_session(const struct cryo_criu_opts *o, const char *what, const char *log_name, criu_opts **ret_co,
			int *ret_img_fd, int *ret_work_fd, char **ret_skip_conf, struct cryo_error *err)
{
	_cleanup_(cryo_criu_opts_freep) criu_opts *co = NULL;
	struct cryo_criu_version v = { 0 };
	int r;

	r = cryo_criu_new_opts(&co, err);
	if (r < 0)
		return r;
	r = cryo_criu_get_version(&v, err);
	if (r < 0)
		return r;
	cryo_criu_set_env(&v);
	*ret_skip_conf = skip_network_lock(o, &v, strcmp(what, "restore") != 0) ? skip_lock_conf(o) : NULL;
	r = set_common(co, o, *ret_skip_conf != NULL, log_name, ret_img_fd, ret_work_fd, err);
	if (r < 0)
		return cryo_error_prefix(err, "criu %s", what);
	*ret_co = TAKE_PTR(co);
	return 0;
}

/*
 * CRIU's notifications come through libcriu's callback, which has no
 * argument of ours: one dump or restore at a time per process (cryo runs
 * one).
 * -1 = none received, -2 = one was refused (not expected, or a second).
 */
static int pts_master = -1;
static bool pts_master_expected;
static const struct cryo_criu_opts *notify_opts;
/* restore: the tree's root (post-restore tells it), whether leave_stopped was done */
static pid_t restored_root;
static bool left_stopped;

/*
 * leave_stopped over libcriu (see criu-env.h): every process of the
 * tree gets SIGSTOP while CRIU still holds them all (each stopped by
 * ptrace at its rt_sigreturn), as CRIU's own leave-stopped does a step
 * earlier; they stop as CRIU lets them go, before an instruction of
 * their own. A stop signal already pending is CRIU's for a task that was
 * stopped when dumped: it stays stopped after the caller's SIGCONT.
 */
static int stop_tree(const struct cryo_criu_opts *o)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	_cleanup_free_ pid_t *pids = NULL, *before = NULL;
	size_t n = 0, nb = 0, i;

	if (restored_root <= 0) {
		cryo_warn("criu restore: leave stopped: no post-restore notification named the tree's root");
		return -1;
	}
	if (cryo_proc_tree(restored_root, &pids, &n, &e) < 0) {
		cryo_error_warn_clear(&e, "criu restore: leave stopped");
		return -1;
	}
	before = calloc(n, sizeof(*before));
	if (!before)
		return -1;
	for (i = 0; i < n; i++) {
		if (cryo_proc_stop_pending(pids[i]))
			before[nb++] = pids[i];
		if (kill(pids[i], SIGSTOP) < 0 && errno != ESRCH) {
			cryo_warn("criu restore: leave stopped: SIGSTOP %d: %s", (int)pids[i], strerror(errno));
			return -1;
		}
	}
	if (o->ret_stopped_before && o->ret_n_stopped_before) {
		*o->ret_stopped_before = nb ? TAKE_PTR(before) : NULL;
		*o->ret_n_stopped_before = nb;
	}
	left_stopped = true;
	return 0;
}

static int notify_cb(char *action, criu_notify_arg_t na)
{
	int fd;

	if (action && strcmp(action, "post-dump") == 0 && notify_opts && notify_opts->post_dump) {
		if (notify_opts->ret_post_dump_ran)
			*notify_opts->ret_post_dump_ran = true;
		return notify_opts->post_dump(notify_opts->post_dump_userdata) == 0 ? 0 : -1;
	}
	if (action && strcmp(action, "post-restore") == 0) {
		restored_root = criu_notify_pid(na);
		if (!notify_opts || !notify_opts->post_restore_gate)
			return 0;
		if (notify_opts->ret_gate_ran)
			*notify_opts->ret_gate_ran = true;
		return notify_opts->post_restore_gate(notify_opts->post_restore_gate_userdata) == 0 ? 0 : -1;
	}
	if (action && strcmp(action, "pre-resume") == 0)
		return notify_opts && notify_opts->leave_stopped ? stop_tree(notify_opts) : 0;
	if (!action || strcmp(action, "orphan-pts-master") != 0)
		return 0;
	fd = criu_get_orphan_pts_master_fd();
	if (fd < 0)
		return -1;
	if (!pts_master_expected || pts_master != -1) {
		/* not ours to take: the restore fails rather than run on a terminal nobody holds */
		close(fd);
		if (pts_master >= 0)
			close(pts_master);
		pts_master = -2;
		return -1;
	}
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	pts_master = fd;
	return 0;
}

/*
 * A dump's `criu swrk`, started here rather than by libcriu, to choose
 * how it ends should cryo die. CRIU holds the container's tasks while it
 * dumps and, when it ends, puts the cgroup's freezer back as it found
 * it: frozen. One that outlived a killed cryo once froze the container
 * again after the hold's watchdog thawed it, for good. Killing it with
 * cryo (PR_SET_PDEATHSIG) mended that but could kill a task of the
 * container: CRIU killed while its code runs in a task leaves the task
 * to a trap nobody catches (host/checkpoint_kill_criu: the counter's
 * sender died, its pipe at EOF). So with o->outlive CRIU lives on: the
 * holds name it their helper (on_start), their watchdog thaws once it is
 * gone, or kills it at the deadline; it keeps the container's lock, and
 * is out of cryo's process group. Without, it dies with cryo (a dump
 * that ends the tasks: finished alone, it would end them with the image
 * left uncommitted). Its environment is ours plus CRIU_CONFIG_FILE when
 * config_file is set, given to exec: no setenv while other threads
 * (image hashing, migrate's sender) may read the environment.
 */
static int swrk_start(criu_opts *co, const struct cryo_criu_opts *o, const char *config_file, pid_t *ret_pid,
		      struct cryo_error *err)
{
	const char *bin = getenv("CRYO_CRIU");
	_cleanup_free_ char **envp = NULL;
	_cleanup_free_ char *conf_var = NULL;
	char fdstr[16];
	const char *argv[4];
	pid_t parent = getpid(), pid;
	size_t n = 0, i;
	int sk[2];

	if (!bin || !*bin)
		bin = "criu";
	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	if (!envp || (config_file && asprintf(&conf_var, "CRIU_CONFIG_FILE=%s", config_file) < 0))
		return cryo_error_set(err, ENOMEM, "criu swrk");
	for (i = 0, n = 0; environ[i]; i++)
		if (!conf_var || strncmp(environ[i], "CRIU_CONFIG_FILE=", 17) != 0)
			envp[n++] = environ[i];
	if (conf_var)
		envp[n++] = conf_var;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sk) < 0)
		return cryo_error_set(err, errno, "criu swrk: socketpair");
	snprintf(fdstr, sizeof(fdstr), "%d", sk[1]);
	argv[0] = bin;
	argv[1] = "swrk";
	argv[2] = fdstr;
	argv[3] = NULL;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(sk[0]);
		close(sk[1]);
		return cryo_error_set(err, e, "criu swrk: fork");
	}
	if (pid == 0) {
		sigset_t mask;

		if (!o->outlive && (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent))
			_exit(127);
		if (o->outlive && (setpgid(0, 0) < 0 || (o->keep_fd && fcntl(*o->keep_fd, F_SETFD, 0) < 0)))
			_exit(127);
		/* CRIU wants SIGCHLD (libcriu does the same) */
		sigemptyset(&mask);
		sigaddset(&mask, SIGCHLD);
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
		if (fcntl(sk[1], F_SETFD, 0) < 0)
			_exit(127);
		execvpe(bin, (char *const *)argv, envp);
		_exit(127);
	}
	close(sk[1]);
	*ret_pid = pid;
	if (o->on_start) {
		int r = o->on_start(o->on_start_userdata, pid, err);

		if (r < 0) {
			/* it has no request yet: it has not touched the tasks */
			close(sk[0]);
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			*ret_pid = 0;
			return r;
		}
	}
	/* libcriu sends the request on it and closes it when the answer came */
	criu_local_set_service_fd(co, sk[0]);
	return 0;
}

static void swrk_reap(pid_t pid)
{
	int status;

	if (pid <= 0)
		return;
	/* libcriu closed our end: CRIU is done or sees EOF and ends */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

int cryo_criu_lib_dump(const struct cryo_criu_opts *o, struct cryo_error *err)
{
	_cleanup_(cryo_criu_opts_freep) criu_opts *co = NULL;
	_cleanup_close_ int img = -1, work = -1;
	const char *what = o->pre_dump ? "pre-dump" : "dump";
	const char *name = o->log_name ? o->log_name : (o->pre_dump ? "pre-dump.log" : "dump.log");
	_cleanup_free_ char *skip_conf = NULL;
	pid_t swrk = 0;
	int r;

	if (o->pid <= 0)
		return cryo_error_setx(err, EINVAL, "criu %s: no process to dump", what);
	/*
	 * Without iptables-restore CRIU locks the connections with nftables,
	 * and before 4.1 it names that lock after the dumped pid: the restored
	 * tree has another pid, so its restore never unlocks them and every
	 * restored connection hangs. Refuse before CRIU touches the tasks.
	 */
	if (o->flags.tcp_established && !cryo_criu_in_path("iptables-restore")) {
		struct cryo_criu_version v;

		if (cryo_criu_get_version(&v, NULL) == 0 && v.code < 40100)
			return cryo_error_setx(err, EOPNOTSUPP,
					       "criu %s: --tcp-established needs iptables-restore with CRIU %u.%u (its nftables lock is never released after a restore): install iptables",
					       what, v.major, v.minor);
	}
	r = open_session(o, what, name, &co, &img, &work, &skip_conf, err);
	if (r < 0)
		return r;
	criu_local_set_pid(co, o->pid);
	criu_local_set_leave_running(co, o->leave_running);
	/* a pty slave whose master is outside (process.terminal): dumped without it, as runc does */
	criu_local_set_orphan_pts_master(co, true);
	if (o->track_mem || o->pre_dump)
		criu_local_set_track_mem(co, true);
	if (o->parent_path) {
		r = criu_local_set_parent_images(co, o->parent_path);
		if (r < 0)
			return cryo_error_set(err, -r, "criu %s: parent images", what);
	}
	if (o->freeze_cgroup) {
		r = criu_local_set_freeze_cgroup(co, o->freeze_cgroup);
		if (r < 0)
			return cryo_error_set(err, -r, "criu %s: freeze cgroup", what);
	}
	if (o->no_cgroup2) {
		size_t i, n;
		const char *const *v1 = cryo_cgroup_v1_controllers(&n);

		for (i = 0, r = 0; r >= 0 && i < n; i++)
			r = criu_local_add_cg_dump_controller(co, v1[i]);
		if (r < 0)
			return cryo_error_set(err, -r, "criu %s: cgroup controllers", what);
	}
	if (o->external_netns) {
		struct stat sb;
		char key[64];

		if (stat(o->external_netns, &sb) < 0)
			return cryo_error_set(err, errno, "criu %s: network namespace `%s`", what, o->external_netns);
		snprintf(key, sizeof(key), "net[%llu]:" EXTERNAL_NETNS_KEY, (unsigned long long)sb.st_ino);
		r = criu_local_add_external(co, key);
		if (r < 0)
			return cryo_error_set(err, -r, "criu %s: external network namespace", what);
	}
	if (cryo_fault("criu-dump"))
		return cryo_error_setx(err, EIO, "criu %s: injected fault (CRYO_FAULT=criu-dump)", what);

	if (o->post_dump)
		criu_local_set_notify_cb(co, notify_cb);
	r = o->config_file ? set_config_file(co, o->config_file, name) : 0;
	if (r < 0)
		return cryo_error_set(err, -r, "criu %s: config file `%s` (org.criu.config)", what, o->config_file);
	r = swrk_start(co, o, skip_conf, &swrk, err);
	if (r < 0) {
		unset_config_file(co);
		return cryo_error_prefix(err, "criu %s", what);
	}
	notify_opts = o;
	r = o->pre_dump ? criu_local_pre_dump(co) : criu_local_dump(co);
	unset_config_file(co);
	notify_opts = NULL;
	swrk_reap(swrk);
	if (r < 0)
		return criu_failed(o, what, name, r, err);
	if (o->ret_network_lock_skipped)
		*o->ret_network_lock_skipped = skip_conf != NULL;
	return 0;
}

int cryo_criu_lib_restore(const struct cryo_criu_opts *o, pid_t *ret_pid, struct cryo_error *err)
{
	_cleanup_(cryo_criu_opts_freep) criu_opts *co = NULL;
	_cleanup_close_ int img = -1, work = -1, netns = -1;
	const char *name = o->log_name ? o->log_name : "restore.log";
	_cleanup_free_ char *skip_conf = NULL;
	int r;

	/* (a restore never skips the lock: skip_conf stays NULL) */
	r = open_session(o, "restore", name, &co, &img, &work, &skip_conf, err);
	if (r < 0)
		return r;
	criu_local_set_tcp_close(co, o->tcp_close);
	if (o->root) {
		r = criu_local_set_root(co, o->root);
		if (r < 0)
			return cryo_error_set(err, -r, "criu restore: root");
	}
	/*
	 * The tasks go into the bundle's cgroup, not back into the one they
	 * were dumped from: a new root for each hierarchy cryo puts them in
	 * (cgroup2 is CRIU's controller ""), the others are left as dumped.
	 */
	if (o->cgroup_root) {
		size_t i, n;
		const char *const *v1 = cryo_cgroup_v1_controllers(&n);

		r = o->no_cgroup2 ? 0 : criu_local_add_cg_root(co, "", o->cgroup_root);
		for (i = 0; r >= 0 && i < n; i++)
			r = criu_local_add_cg_root(co, v1[i], o->cgroup_root);
		if (r < 0)
			return cryo_error_set(err, -r, "criu restore: cgroup root");
	}
	/*
	 * Always: a pty slave of the image without its master gets a new
	 * master, handed to us (and refused when not expected), never CRIU's
	 * own stdin as with --shell-job alone.
	 */
	criu_local_set_orphan_pts_master(co, true);
	criu_local_set_notify_cb(co, notify_cb);
	if (o->external_netns) {
		/* without O_CLOEXEC: `criu swrk`, forked and exec'd by libcriu, takes it by number */
		netns = open(o->external_netns, O_RDONLY);
		if (netns < 0)
			return cryo_error_set(err, errno, "criu restore: network namespace `%s`", o->external_netns);
		r = criu_local_add_inherit_fd(co, netns, EXTERNAL_NETNS_KEY);
		if (r < 0)
			return cryo_error_set(err, -r, "criu restore: external network namespace");
	}
	if (cryo_fault("criu-restore"))
		return cryo_error_setx(err, EIO, "criu restore: injected fault (CRYO_FAULT=criu-restore)");

	pts_master = -1;
	pts_master_expected = o->expect_pts_master;
	restored_root = 0;
	left_stopped = false;
	notify_opts = o;
	r = o->config_file ? set_config_file(co, o->config_file, name) : 0;
	if (r < 0)
		return cryo_error_set(err, -r, "criu restore: config file `%s` (org.criu.config)", o->config_file);
	r = criu_local_restore_child(co);
	unset_config_file(co);
	notify_opts = NULL;
	/* CRIU resumed the tree without the notification that stops it: it runs */
	if (r > 0 && o->leave_stopped && !left_stopped) {
		_cleanup_free_ pid_t *pids = NULL;
		size_t n = 0, i;

		/* its tree, listed before the root goes (the init of its pid namespace takes the rest along) */
		if (cryo_proc_tree(r, &pids, &n, NULL) < 0)
			n = 0;
		kill(r, SIGKILL);
		for (i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
		(void)waitpid(r, NULL, 0);
		if (pts_master >= 0)
			close(pts_master);
		pts_master = -1;
		return cryo_error_setx(err, EPROTO,
				       "criu restore: CRIU resumed the tasks without its pre-resume notification: they could not be left stopped");
	}
	if (r <= 0) {
		bool refused = pts_master == -2;

		if (pts_master >= 0)
			close(pts_master);
		pts_master = -1;
		if (refused)
			return cryo_error_setx(err, EINVAL,
					       "criu restore: the image has a terminal (a pty without its master) and this restore has none for it: process.terminal must be true in the bundle's config.json");
		return criu_failed(o, "restore", name, r, err);
	}
	if (o->ret_pts_master)
		*o->ret_pts_master = pts_master;
	else if (pts_master >= 0)
		close(pts_master);
	pts_master = -1;
	*ret_pid = r;
	return 0;
}

