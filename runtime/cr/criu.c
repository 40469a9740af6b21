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

#include "cgroup.h"
#include "criu.h"
#include "criu-cli.h"
#include "criu-rpc.h"
#include "image.h"
#include "log.h"
#include "util.h"

#define CRIU_LOG_LEVEL 4
#define CRIU_FAULT_NO_BREAKPOINTS "130"
#define LOG_ERRORS_MAX_LINES 4
#define LOG_ERRORS_MAX_LEN 1500

const char *const cryo_criu_cg_mode_names[_CRYO_CRIU_CG_MAX] = {
	[CRYO_CRIU_CG_DEFAULT] = "default",
	[CRYO_CRIU_CG_SOFT] = "soft",
	[CRYO_CRIU_CG_FULL] = "full",
	[CRYO_CRIU_CG_STRICT] = "strict",
	[CRYO_CRIU_CG_IGNORE] = "ignore",
};

int cryo_criu_cg_mode_from_string(const char *s, enum cryo_criu_cg_mode *ret, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cryo_criu_cg_mode_names); i++)
		if (s && strcmp(s, cryo_criu_cg_mode_names[i]) == 0) {
			*ret = (enum cryo_criu_cg_mode)i;
			return 0;
		}
	return cryo_error_setx(err, EINVAL, "unknown cgroups mode `%s` (soft, full, strict or ignore)", s ? s : "");
}

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

/*
 * Collect Error lines. CRIU also logs the exit of every helper it ran
 * (`exited, status=1` of an iptables probe...); those say nothing on
 * their own, so they are skipped unless nothing else is there.
 */
static char *log_errors(const char *path, unsigned max_lines, bool skip_exits)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	char *out = NULL;
	size_t cap = 0, len = 0;
	unsigned n = 0;

	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (n < max_lines && getline(&line, &cap, f) > 0) {
		char *e = strstr(line, "Error (");
		size_t l;
		char *nb;

		if (!e || (skip_exits && strstr(e, "exited, status=")))
			continue;
		l = strcspn(e, "\n");
		if (len + l + 3 > LOG_ERRORS_MAX_LEN)
			break;
		nb = realloc(out, len + l + 3);
		if (!nb)
			break;
		out = nb;
		if (len > 0) {
			memcpy(out + len, "; ", 2);
			len += 2;
		}
		memcpy(out + len, e, l);
		len += l;
		out[len] = '\0';
		n++;
	}
	return out;
}

char *cryo_criu_log_errors(const char *path, unsigned max_lines)
{
	char *s = log_errors(path, max_lines, true);

	return s ? s : log_errors(path, max_lines, false);
}

/*
 * The probe: a traced child stops, gets a hardware execution breakpoint
 * (DR0 + DR7.L0) on a function it is about to call, and runs. A working
 * breakpoint stops it with SIGTRAP; where debug registers are accepted
 * but never fire (some hypervisors), it runs to its exit.
 */
static __attribute__((noinline)) void probe_target(void)
{
	__asm__ volatile("" ::: "memory");
}

int cryo_criu_probe_hw_breakpoints(const char **ret_why)
{
	static int cached = -1000;
	static const char *cached_why;
	const char *why = NULL;
	int status, r;
	pid_t pid;

	if (cached != -1000) {
		if (ret_why)
			*ret_why = cached_why;
		return cached;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(2);
		raise(SIGSTOP);
		probe_target();
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		r = -ECHILD;
		goto out;
	}
	/* ptrace takes the user-area offset and the value as pointers */
	if (ptrace(PTRACE_POKEUSER, pid, (void *)offsetof(struct user, u_debugreg[0]), (void *)probe_target) < 0) { // NOLINT(performance-no-int-to-ptr)
		why = "ptrace cannot set debug register DR0";
		r = 0;
		goto out;
	}
	if (ptrace(PTRACE_POKEUSER, pid, (void *)offsetof(struct user, u_debugreg[7]), (void *)1L) < 0) { // NOLINT(performance-no-int-to-ptr)
		why = "ptrace cannot enable DR7";
		r = 0;
		goto out;
	}
	if (ptrace(PTRACE_CONT, pid, NULL, NULL) < 0) {
		r = -errno;
		goto out;
	}
	if (waitpid(pid, &status, 0) != pid) {
		r = -ECHILD;
		goto out;
	}
	if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP) {
		why = "an execution breakpoint trapped";
		r = 1;
	} else {
		why = "an execution breakpoint was accepted but never trapped";
		r = 0;
	}
out:
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r >= 0) {
		cached = r;
		cached_why = why;
	}
	if (ret_why)
		*ret_why = why;
	return r;
}

static void criu_opts_freep(criu_opts **o)
{
	if (*o)
		criu_local_free_opts(*o);
}

static int new_opts(criu_opts **ret, struct cryo_error *err)
{
	const char *bin = getenv("CRYO_CRIU");
	criu_opts *o = NULL;
	int r;

	r = criu_local_init_opts(&o);
	if (r < 0)
		return cryo_error_set(err, -r, "libcriu: init options");
	if (bin && *bin) {
		r = criu_local_set_service_binary(o, bin);
		if (r < 0) {
			criu_local_free_opts(o);
			return cryo_error_set(err, -r, "libcriu: service binary");
		}
	}
	*ret = o;
	return 0;
}

/*
 * Each version query is a `criu swrk` of its own (about 10 ms): asked
 * once per process and CRIU binary (CRYO_CRIU), not once per use (a
 * checkpoint wants it for CRIU's environment, its options and the manifest).
 */
static struct {
	bool known;
	char *bin;
	struct cryo_criu_version v;
} version_cache;

static int version_of(criu_opts *o, struct cryo_criu_version *ret, struct cryo_error *err)
{
	const char *env = getenv("CRYO_CRIU");
	const char *bin = env ? env : "";
	char *copy;
	int v;

	if (version_cache.known && strcmp(version_cache.bin, bin) == 0) {
		*ret = version_cache.v;
		return 0;
	}
	v = criu_local_get_version(o);
	if (v <= 0)
		return cryo_error_setx(err, ENOENT, "cannot run CRIU (`%s`) to ask its version: is the criu package installed?",
				       *bin ? bin : "criu");
	ret->code = v;
	ret->major = (unsigned)v / 10000;
	ret->minor = (unsigned)v / 100 % 100;
	ret->sublevel = (unsigned)v % 100;
	copy = strdup(bin);
	if (copy) {
		free(version_cache.bin);
		version_cache.bin = copy;
		version_cache.v = *ret;
		version_cache.known = true;
	}
	return 0;
}

int cryo_criu_get_version(struct cryo_criu_version *ret, struct cryo_error *err)
{
	_cleanup_(criu_opts_freep) criu_opts *o = NULL;
	int r;

	r = new_opts(&o, err);
	if (r < 0)
		return r;
	return version_of(o, ret, err);
}

/* CRIU >= 4 without working hardware breakpoints needs CRIU_FAULT=130. */
static bool needs_fault_130(const struct cryo_criu_version *v)
{
	const char *why;

	return v->major >= 4 && cryo_criu_probe_hw_breakpoints(&why) == 0;
}

static void prepare_env(const struct cryo_criu_version *v)
{
	if (getenv("CRIU_FAULT") || !needs_fault_130(v))
		return;
	/* libcriu forks `criu swrk`: it inherits our environment */
	if (setenv("CRIU_FAULT", CRIU_FAULT_NO_BREAKPOINTS, 0) == 0)
		cryo_debug("CRIU %u.%u.%u and no hardware breakpoints: running CRIU with CRIU_FAULT=130", v->major,
			   v->minor, v->sublevel);
}

int cryo_criu_prepare_env(struct cryo_error *err)
{
	struct cryo_criu_version v;
	int r = cryo_criu_get_version(&v, err);

	if (r < 0)
		return r;
	prepare_env(&v);
	return 0;
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
	_cleanup_free_ char *errors = path ? cryo_criu_log_errors(path, LOG_ERRORS_MAX_LINES) : NULL;
	int status = (r == -EBADE || r >= 0) ? EIO : -r;

	if (errors)
		return cryo_error_setx(err, status, "criu %s failed: %s (log: `%s`)", what, errors, path ? path : "?");
	return cryo_error_setx(err, status, "criu %s failed (libcriu: %s); the log `%s` has no Error lines", what,
			       r == -EBADE ? "CRIU reported a failure" : strerror(status), path ? path : "?");
}

bool cryo_criu_in_path(const char *name)
{
	_cleanup_free_ char *path = NULL;
	const char *env = getenv("PATH");
	char *dir, *save = NULL;

	path = strdup(env ? env : "/usr/sbin:/usr/bin:/sbin:/bin");
	if (!path)
		return false;
	for (dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char p[4096];

		snprintf(p, sizeof(p), "%s/%s", dir, name);
		if (access(p, X_OK) == 0)
			return true;
	}
	return false;
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

/* Options common to dump and restore. */
static int set_common(criu_opts *co, const struct cryo_criu_opts *o, bool skip_lock, const char *log_name,
		      int *ret_img_fd, int *ret_work_fd, struct cryo_error *err)
{
	_cleanup_close_ int img = -1, work = -1;
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
	criu_local_set_log_level(co, CRIU_LOG_LEVEL);
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
	_cleanup_(criu_opts_freep) criu_opts *co = NULL;
	struct cryo_criu_version v = { 0 };
	int r;

	r = new_opts(&co, err);
	if (r < 0)
		return r;
	r = version_of(co, &v, err);
	if (r < 0)
		return r;
	prepare_env(&v);
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

static int notify_cb(char *action, criu_notify_arg_t na)
{
	int fd;

	(void)na;
	if (action && strcmp(action, "post-dump") == 0 && notify_opts && notify_opts->post_dump) {
		if (notify_opts->ret_post_dump_ran)
			*notify_opts->ret_post_dump_ran = true;
		return notify_opts->post_dump(notify_opts->post_dump_userdata) == 0 ? 0 : -1;
	}
	if (action && strcmp(action, "post-restore") == 0 && notify_opts && notify_opts->post_restore_gate) {
		if (notify_opts->ret_gate_ran)
			*notify_opts->ret_gate_ran = true;
		return notify_opts->post_restore_gate(notify_opts->post_restore_gate_userdata) == 0 ? 0 : -1;
	}
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
 * A dump's `criu swrk`, started here rather than by libcriu, so that it
 * dies with the thread that started it (PR_SET_PDEATHSIG). CRIU holds
 * the container's tasks while it dumps and, when it ends, puts the
 * cgroup's freezer back as it found it: frozen. One that outlived a
 * killed cryo would freeze the container again after the hold's watchdog
 * thawed it, and nobody would thaw it then (host/checkpoint_kill_criu:
 * cryo alone SIGKILLed mid-dump). Killed mid-dump, CRIU lets go of the
 * tasks as they were. Its environment is ours plus CRIU_CONFIG_FILE when
 * config_file is set, given to exec: no setenv while other threads
 * (image hashing, migrate's sender) may read the environment.
 */
static int swrk_start(criu_opts *co, const char *config_file, pid_t *ret_pid, struct cryo_error *err)
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

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
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
	/* libcriu sends the request on it and closes it when the answer came */
	criu_local_set_service_fd(co, sk[0]);
	*ret_pid = pid;
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

int cryo_criu_dump(const struct cryo_criu_opts *o, struct cryo_error *err)
{
	_cleanup_(criu_opts_freep) criu_opts *co = NULL;
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
	if (cryo_fault("criu-dump"))
		return cryo_error_setx(err, EIO, "criu %s: injected fault (CRYO_FAULT=criu-dump)", what);

	if (o->post_dump)
		criu_local_set_notify_cb(co, notify_cb);
	r = swrk_start(co, skip_conf, &swrk, err);
	if (r < 0)
		return cryo_error_prefix(err, "criu %s", what);
	notify_opts = o;
	r = o->pre_dump ? criu_local_pre_dump(co) : criu_local_dump(co);
	notify_opts = NULL;
	swrk_reap(swrk);
	if (r < 0)
		return criu_failed(o, what, name, r, err);
	if (o->ret_network_lock_skipped)
		*o->ret_network_lock_skipped = skip_conf != NULL;
	return 0;
}



int cryo_criu_restore(const struct cryo_criu_opts *o, pid_t *ret_pid, struct cryo_error *err)
{
	_cleanup_(criu_opts_freep) criu_opts *co = NULL;
	_cleanup_close_ int img = -1, work = -1;
	const char *name = o->log_name ? o->log_name : "restore.log";
	_cleanup_free_ char *skip_conf = NULL;
	int r;

	/* libcriu has no lazy-pages setter (3.17): CRIU's command line */
	if (o->lazy_pages)
		return cryo_criu_cli_lazy_restore(o, ret_pid, err);
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

		r = criu_local_add_cg_root(co, "", o->cgroup_root);
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
	if (cryo_fault("criu-restore"))
		return cryo_error_setx(err, EIO, "criu restore: injected fault (CRYO_FAULT=criu-restore)");

	pts_master = -1;
	pts_master_expected = o->expect_pts_master;
	notify_opts = o;
	r = criu_local_restore_child(co);
	notify_opts = NULL;
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

void cryo_criu_host_done(struct cryo_criu_host *h)
{
	free(h->check_errors);
	h->check_errors = NULL;
}

/* Dump (leaving it running) a child that only sleeps, images and log in dir. */
static int probe_dump(const char *dir)
{
	struct cryo_criu_opts o = { .image_dir = dir, .leave_running = true };
	struct cryo_error err = CRYO_ERROR_INIT;
	int status, r;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		(void)setsid();
		if (fd >= 0) {
			(void)dup2(fd, 0);
			(void)dup2(fd, 1);
			(void)dup2(fd, 2);
		}
		(void)close_range(3, ~0U, 0);
		for (;;)
			pause();
	}
	o.pid = pid;
	r = cryo_criu_dump(&o, &err);
	cryo_error_clear(&err);
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return r;
}

int cryo_criu_check_host(struct cryo_criu_host *ret, struct cryo_error *err)
{
	_cleanup_(criu_opts_freep) criu_opts *co = NULL;
	_cleanup_close_ int dfd = -1, tmpfd = -1;
	struct cryo_criu_host h = { 0 };
	char dir[] = "/tmp/cryo-criu-check.XXXXXX";
	_cleanup_error_ struct cryo_error cerr = CRYO_ERROR_INIT;
	_cleanup_free_ char *log = NULL;
	int r;

	h.hw_breakpoints = cryo_criu_probe_hw_breakpoints(&h.hw_breakpoints_why);
	r = new_opts(&co, err);
	if (r < 0)
		return r;
	if (version_of(co, &h.version, NULL) < 0) {
		*ret = h;
		return 0;
	}
	h.found = true;
	h.needs_fault_130 = needs_fault_130(&h.version);
	prepare_env(&h.version);

	if (!mkdtemp(dir))
		return cryo_error_set(err, errno, "create a temp dir for CRIU's check log");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = cryo_error_set(err, errno, "open `%s`", dir);
		(void)rmdir(dir);
		return r;
	}
	/* over our own RPC: libcriu's check crashes criu 3.17 (see criu-rpc.h) */
	r = cryo_criu_rpc_check(dfd, "check.log", CRIU_LOG_LEVEL, &cerr);
	h.check_ok = r == 0;
	if (!h.check_ok) {
		if (asprintf(&log, "%s/check.log", dir) < 0)
			log = NULL;
		h.check_errors = log ? cryo_criu_log_errors(log, LOG_ERRORS_MAX_LINES) : NULL;
		/*
		 * CRIU fails before it opens its log when it can't even
		 * read the kernel's features: learn why from a real dump
		 * of a sleeping child, whose log has the Error lines.
		 */
		free(log);
		log = NULL;
		if (!h.check_errors && asprintf(&log, "%s/dump.log", dir) >= 0 && probe_dump(dir) < 0)
			h.check_errors = cryo_criu_log_errors(log, LOG_ERRORS_MAX_LINES);
		if (!h.check_errors)
			h.check_errors = strdup(cerr.msg ? cerr.msg : "criu check failed");
	}
	tmpfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tmpfd >= 0)
		(void)cryo_rm_rf_at(tmpfd, dir + strlen("/tmp/"));
	*ret = h;
	return 0;
}
