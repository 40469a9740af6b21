// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "criu-cli.h"
#include "log.h"
#include "util.h"

#define MAX_ARGS 160
#define READY_TIMEOUT_MS 120000
#define PROBE_TIMEOUT_MS 60000
#define PROBE_MEM (1U << 20)

struct args {
	char *v[MAX_ARGS + 1];
	size_t n;
	bool full;
};

static void args_done(struct args *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->v[i]);
	a->n = 0;
}

static void add(struct args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct args *a, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int r;

	if (a->n >= MAX_ARGS) {
		a->full = true;
		return;
	}
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0) {
		a->full = true;
		return;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static const char *criu_bin(void)
{
	const char *b = getenv("CRYO_CRIU");

	return b && *b ? b : "criu";
}

static const char *const cg_mode_arg[_CRYO_CRIU_CG_MAX] = {
	[CRYO_CRIU_CG_SOFT] = "soft",
	[CRYO_CRIU_CG_FULL] = "full",
	[CRYO_CRIU_CG_STRICT] = "strict",
	[CRYO_CRIU_CG_IGNORE] = "ignore",
};

/* What cryo_criu_dump()/restore() set through libcriu, for the command line. */
static void add_common(struct args *a, const struct cryo_criu_opts *o, const char *log)
{
	const struct cryo_criu_extns *x;
	const char *const *m;

	add(a, "-D");
	add(a, "%s", o->image_dir);
	add(a, "-W");
	add(a, "%s", o->work_dir ? o->work_dir : o->image_dir);
	add(a, "-o");
	add(a, "%s", log);
	add(a, "-v%d", cryo_criu_log_level());
	if (!cryo_criu_in_path("iptables-restore"))
		add(a, "--network-lock=nftables");
	if (o->flags.ext_unix_sk)
		add(a, "--ext-unix-sk");
	if (o->flags.tcp_established)
		add(a, "--tcp-established");
	if (o->flags.shell_job)
		add(a, "--shell-job");
	if (o->flags.file_locks)
		add(a, "--file-locks");
	if (o->flags.auto_dedup)
		add(a, "--auto-dedup");
	if (o->flags.lsm_profile)
		add(a, "--lsm-profile=%s", o->flags.lsm_profile);
	if (o->flags.lsm_mount_context)
		add(a, "--lsm-mount-context=%s", o->flags.lsm_mount_context);
	if (o->flags.cg_mode != CRYO_CRIU_CG_DEFAULT && cg_mode_arg[o->flags.cg_mode])
		add(a, "--manage-cgroups=%s", cg_mode_arg[o->flags.cg_mode]);
	if (o->timeout_s)
		add(a, "--timeout=%u", o->timeout_s);
	for (m = o->ext_mounts; m && m[0] && m[1]; m += 2)
		add(a, "--ext-mount-map=%s:%s", m[0], m[1]);
	/* (a restore's namespaces are fds: criu.c keeps them off this back end) */
	for (x = o->ext_ns; x && x->key; x++)
		if (x->external)
			add(a, "--external=%s", x->external);
	if (o->veth_inside && o->veth_outside)
		add(a, "--veth-pair=%s=%s", o->veth_inside, o->veth_outside);
}

static char *log_of(const struct cryo_criu_opts *o, const char *name)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s", o->work_dir ? o->work_dir : o->image_dir, name) < 0)
		return NULL;
	return p;
}

/* Start argv; keep_fd (or -1) is passed on as is, every other fd of ours is closed in the child. */
static int spawn(struct args *a, int keep_fd, const char *what, const char *log, struct cryo_criu_proc *ret,
		 struct cryo_error *err)
{
	pid_t pid;

	if (a->full)
		return cryo_error_setx(err, E2BIG, "criu %s: too many arguments", what);
	pid = fork();
	if (pid < 0)
		return cryo_error_set(err, errno, "criu %s: fork", what);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null >= 0) {
			(void)dup2(null, STDIN_FILENO);
			(void)dup2(null, STDOUT_FILENO);
			(void)dup2(null, STDERR_FILENO);
		}
		if (keep_fd >= 0) {
			(void)close_range(3, (unsigned)keep_fd - 1, 0);
			(void)close_range((unsigned)keep_fd + 1, ~0U, 0);
			(void)fcntl(keep_fd, F_SETFD, 0);
		} else {
			(void)close_range(3, ~0U, 0);
		}
		execvp(a->v[0], a->v);
		_exit(127);
	}
	ret->pid = pid;
	ret->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ret->what = what;
	ret->log = log ? strdup(log) : NULL;
	if (ret->pidfd < 0) {
		int r = cryo_error_set(err, errno, "criu %s: pidfd_open", what);

		cryo_criu_proc_kill(ret);
		return r;
	}
	return 0;
}

static int exited_with(const struct cryo_criu_proc *p, int status, struct cryo_error *err)
{
	_cleanup_free_ char *errors = NULL;

	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	errors = p->log ? cryo_criu_log_errors(p->log, CRYO_CRIU_LOG_ERRORS_MAX_LINES) : NULL;
	if (WIFSIGNALED(status))
		return cryo_error_setx(err, EIO, "criu %s was killed by signal %d%s%s", p->what, WTERMSIG(status),
				       errors ? ": " : "", errors ? errors : "");
	if (WEXITSTATUS(status) == 127)
		return cryo_error_setx(err, ENOENT, "criu %s: cannot run `%s`", p->what, criu_bin());
	if (errors)
		return cryo_error_setx(err, EIO, "criu %s failed: %s (log: `%s`)", p->what, errors, p->log);
	return cryo_error_setx(err, EIO, "criu %s exited %d; the log `%s` has no Error lines", p->what,
			       WEXITSTATUS(status), p->log ? p->log : "?");
}

int cryo_criu_proc_wait(struct cryo_criu_proc *p, int64_t timeout_ms, struct cryo_error *err)
{
	int status = 0, r;

	if (p->pid <= 0)
		return cryo_error_setx(err, ECHILD, "criu: no process");
	if (timeout_ms >= 0) {
		r = cryo_wait_fd(p->pidfd, POLLIN, cryo_now_ms() + timeout_ms, p->what, err);
		if (r < 0)
			return r;
	}
	while ((r = waitpid(p->pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return cryo_error_set(err, errno, "criu %s: wait", p->what);
	p->pid = 0;
	return exited_with(p, status, err);
}

void cryo_criu_proc_kill(struct cryo_criu_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	p->pid = 0;
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	free(p->log);
	p->log = NULL;
}

int cryo_criu_cli_lazy_dump(const struct cryo_criu_opts *o, unsigned port, struct cryo_criu_proc *ret,
			    struct cryo_error *err)
{
	struct args a = { 0 };
	_cleanup_free_ char *log = NULL;
	_cleanup_close_ int rd = -1, wr = -1;
	const char *name = o->log_name ? o->log_name : "dump.log";
	int fds[2], r;
	char c;

	if (o->pid <= 0)
		return cryo_error_setx(err, EINVAL, "criu lazy dump: no process to dump");
	if (o->pre_dump || o->parent_path)
		return cryo_error_setx(err, EINVAL, "criu lazy dump: not on top of a pre-dump");
	r = cryo_criu_prepare_env(err);
	if (r < 0)
		return r;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "criu lazy dump: pipe");
	rd = fds[0];
	wr = fds[1];
	log = log_of(o, name);
	add(&a, "%s", criu_bin());
	add(&a, "dump");
	add(&a, "-t");
	add(&a, "%d", (int)o->pid);
	add_common(&a, o, name);
	if (o->leave_running)
		add(&a, "--leave-running");
	if (o->freeze_cgroup)
		add(&a, "--freeze-cgroup=%s", o->freeze_cgroup);
	if (o->no_cgroup2) {
		size_t i, n;
		const char *const *v1 = cryo_cgroup_v1_controllers(&n);

		for (i = 0; i < n; i++)
			add(&a, "--cgroup-dump-controller=%s", v1[i]);
	}
	add(&a, "--lazy-pages");
	add(&a, "--address=127.0.0.1");
	add(&a, "--port=%u", port);
	add(&a, "--status-fd=%d", wr);
	r = spawn(&a, wr, "lazy dump", log, ret, err);
	args_done(&a);
	if (r < 0)
		return r;
	close(TAKE_FD(wr));
	/* CRIU writes a byte once its page server listens; the pipe ends with it otherwise */
	r = cryo_wait_fd(rd, POLLIN, cryo_now_ms() + READY_TIMEOUT_MS, "criu lazy dump: ready", err);
	if (r >= 0 && read(rd, &c, 1) == 1)
		return 0;
	if (r >= 0)
		r = cryo_criu_proc_wait(ret, READY_TIMEOUT_MS, err);
	if (r >= 0)
		r = cryo_error_setx(err, EIO, "criu lazy dump ended without serving its pages");
	cryo_criu_proc_kill(ret);
	return r;
}

int cryo_criu_cli_lazy_daemon_start(const struct cryo_criu_opts *o, unsigned port, struct cryo_criu_proc *ret,
				    struct cryo_error *err)
{
	struct args a = { 0 };
	_cleanup_free_ char *log = NULL;
	int r;

	r = cryo_criu_prepare_env(err);
	if (r < 0)
		return r;
	log = log_of(o, "lazy-pages.log");
	add(&a, "%s", criu_bin());
	add(&a, "lazy-pages");
	add(&a, "--page-server");
	add(&a, "--address=127.0.0.1");
	add(&a, "--port=%u", port);
	add(&a, "-D");
	add(&a, "%s", o->image_dir);
	add(&a, "-W");
	add(&a, "%s", o->work_dir ? o->work_dir : o->image_dir);
	add(&a, "-o");
	add(&a, "lazy-pages.log");
	add(&a, "-v%d", cryo_criu_log_level());
	r = spawn(&a, -1, "lazy-pages", log, ret, err);
	args_done(&a);
	return r;
}

/* its socket is there within a few ms of its start: looked for this often */
#define DAEMON_POLL_MS 5

int cryo_criu_cli_lazy_daemon_ready(const char *work_dir, struct cryo_criu_proc *p, struct cryo_error *err)
{
	_cleanup_close_ int wfd = -1;
	int64_t deadline = cryo_now_ms() + READY_TIMEOUT_MS;
	int r;

	wfd = open(work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		return cryo_error_set(err, errno, "criu lazy-pages: open its work dir");
	/* no status fd for it: its socket appears once it listens */
	for (;;) {
		struct stat s;
		struct pollfd pf = { .fd = p->pidfd, .events = POLLIN };

		if (fstatat(wfd, "lazy-pages.socket", &s, 0) == 0 && S_ISSOCK(s.st_mode))
			return 0;
		if (poll(&pf, 1, DAEMON_POLL_MS) > 0) {
			r = cryo_criu_proc_wait(p, 0, err);
			if (r >= 0)
				r = cryo_error_setx(err, EIO, "criu lazy-pages exited before it listened");
			cryo_criu_proc_kill(p);
			return r;
		}
		if (cryo_now_ms() > deadline) {
			cryo_criu_proc_kill(p);
			return cryo_error_setx(err, ETIMEDOUT, "criu lazy-pages: no socket after %d ms", READY_TIMEOUT_MS);
		}
	}
}

int cryo_criu_cli_lazy_daemon(const struct cryo_criu_opts *o, unsigned port, struct cryo_criu_proc *ret,
			      struct cryo_error *err)
{
	int r = cryo_criu_cli_lazy_daemon_start(o, port, ret, err);

	return r < 0 ? r : cryo_criu_cli_lazy_daemon_ready(o->work_dir ? o->work_dir : o->image_dir, ret, err);
}

static int read_pid_file(const char *path, pid_t *ret)
{
	FILE *f = fopen(path, "re");
	int pid = 0, n;

	if (!f)
		return -errno;
	n = fscanf(f, "%d", &pid);
	fclose(f);
	if (n != 1 || pid <= 0)
		return -EBADMSG;
	*ret = pid;
	return 0;
}

int cryo_criu_cli_lazy_restore(const struct cryo_criu_opts *o, pid_t *ret_pid, struct cryo_error *err)
{
	struct cryo_criu_proc p = CRYO_CRIU_PROC_INIT;
	struct args a = { 0 };
	_cleanup_free_ char *log = NULL, *pidfile = NULL;
	const char *name = o->log_name ? o->log_name : "restore.log";
	int r;

	if (o->expect_pts_master)
		return cryo_error_setx(err, EOPNOTSUPP,
				       "criu restore --lazy-pages: a container with a terminal can't be restored lazily");
	r = cryo_criu_prepare_env(err);
	if (r < 0)
		return r;
	log = log_of(o, name);
	if (asprintf(&pidfile, "%s/restore.pid", o->work_dir ? o->work_dir : o->image_dir) < 0)
		return cryo_error_set(err, ENOMEM, "criu restore");
	(void)unlink(pidfile);
	add(&a, "%s", criu_bin());
	add(&a, "restore");
	add_common(&a, o, name);
	if (o->tcp_close)
		add(&a, "--tcp-close");
	if (o->root)
		add(&a, "--root=%s", o->root);
	if (o->cgroup_root && o->no_cgroup2) {
		size_t i, n;
		const char *const *v1 = cryo_cgroup_v1_controllers(&n);

		for (i = 0; i < n; i++)
			add(&a, "--cgroup-root=%s:%s", v1[i], o->cgroup_root);
	} else if (o->cgroup_root) {
		add(&a, "--cgroup-root=%s", o->cgroup_root);
	}
	add(&a, "--lazy-pages");
	if (o->leave_stopped)
		add(&a, "--leave-stopped");
	add(&a, "-d");
	add(&a, "--pidfile=%s", pidfile);
	/* CRIU connects to the daemon's socket at once: it must be there */
	if (o->lazy_ready) {
		r = o->lazy_ready(o->lazy_wait_userdata, err);
		if (r < 0) {
			args_done(&a);
			return r;
		}
	}
	r = spawn(&a, -1, "restore", log, &p, err);
	args_done(&a);
	if (r < 0)
		return r;
	if (o->lazy_wait)
		r = o->lazy_wait(o->lazy_wait_userdata, p.pidfd, err);
	if (r >= 0)
		r = cryo_criu_proc_wait(&p, READY_TIMEOUT_MS, err);
	cryo_criu_proc_kill(&p);
	if (r < 0)
		return r;
	r = read_pid_file(pidfile, ret_pid);
	if (r < 0)
		return cryo_error_set(err, -r, "criu restore: its pid file `%s`", pidfile);
	return 0;
}

/* --- the probe ------------------------------------------------------------ */

/* A small tree worth dumping: pid 1 of its own pid namespace, with touched memory; its pid on fd. */
static pid_t probe_child(int pid_fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	if (unshare(CLONE_NEWPID) < 0)
		_exit(1);
	pid = fork();
	if (pid < 0)
		_exit(1);
	if (pid == 0) {
		char *mem = malloc(PROBE_MEM);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (null >= 0) {
			(void)dup2(null, 0);
			(void)dup2(null, 1);
			(void)dup2(null, 2);
		}
		(void)close_range(3, ~0U, 0);
		(void)setsid();
		if (mem)
			memset(mem, 0x5a, PROBE_MEM);
		for (;;)
			pause();
	}
	(void)!write(pid_fd, &pid, sizeof(pid));
	_exit(0);
}

static int free_port(unsigned *ret, struct cryo_error *err)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return cryo_error_set(err, errno, "lazy probe: a local port");
	*ret = ntohs(a.sin_port);
	return 0;
}

static int run_probe(const char *dir, char **ret_why, struct cryo_error *err)
{
	struct cryo_criu_opts o = { .image_dir = dir, .work_dir = dir };
	struct cryo_criu_proc dump = CRYO_CRIU_PROC_INIT, daemon = CRYO_CRIU_PROC_INIT;
	unsigned port = 0;
	pid_t outer = 0, restored = 0;
	int fds[2], status, r;
	struct cryo_error e = CRYO_ERROR_INIT;

	/* a port for the page server: one the kernel picked, given back */
	r = free_port(&port, err);
	if (r < 0)
		return r;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "lazy probe: pipe");
	outer = probe_child(fds[1]);
	close(fds[1]);
	if (outer < 0) {
		close(fds[0]);
		return cryo_error_set(err, errno, "lazy probe: fork");
	}
	o.pid = 0;
	if (read(fds[0], &o.pid, sizeof(o.pid)) != (ssize_t)sizeof(o.pid))
		o.pid = 0;
	close(fds[0]);
	while (waitpid(outer, &status, 0) < 0 && errno == EINTR)
		;
	if (o.pid <= 0)
		return cryo_error_setx(err, ECHILD, "lazy probe: no child to dump");
	o.flags.shell_job = true;
	r = cryo_criu_cli_lazy_dump(&o, port, &dump, &e);
	if (r >= 0)
		r = cryo_criu_cli_lazy_daemon(&o, port, &daemon, &e);
	if (r >= 0) {
		o.log_name = "restore.log";
		r = cryo_criu_cli_lazy_restore(&o, &restored, &e);
	}
	/* all pages served: the dump exits 0; where CRIU's page server fails, it says why */
	if (r >= 0) {
		r = cryo_criu_proc_wait(&dump, PROBE_TIMEOUT_MS, &e);
	} else if (dump.pid > 0) {
		struct cryo_error de = CRYO_ERROR_INIT;

		/* the restore (or daemon) failed because the page server did: its reason is the first */
		if (cryo_criu_proc_wait(&dump, 5000, &de) < 0 && de.status != ETIMEDOUT)
			cryo_error_move(&e, &de);
		cryo_error_clear(&de);
	}
	if (restored > 0)
		kill(restored, SIGKILL);
	if (o.pid > 0)
		kill(o.pid, SIGKILL);
	cryo_criu_proc_kill(&dump);
	cryo_criu_proc_kill(&daemon);
	if (r < 0) {
		*ret_why = e.msg ? strdup(e.msg) : strdup("CRIU failed");
		cryo_error_clear(&e);
		return 0;
	}
	return 1;
}

/*
 * A lazy dump's page server reads the pages a restore asks for through a
 * pipe it sizes to 819 pages (criu/include/page-pipe.h: PIPE_MAX_SIZE)
 * without checking that it got them: in a smaller pipe its tee() of a
 * larger request comes back short ("page-pipe: tee: 65536") and the
 * restore fails. Without CAP_SYS_RESOURCE a pipe can't grow past
 * fs.pipe-max-size (1 MiB by default). NULL when a pipe that large can be
 * had, else why not (malloc'd).
 */
#define CRIU_PAGE_SERVER_PIPE_BYTES (819 * 4096)

static char *page_server_pipe_short(void)
{
	_cleanup_free_ char *max = NULL;
	char *why = NULL;
	size_t len = 0;
	int p[2], r, e;

	if (pipe2(p, O_CLOEXEC) < 0)
		return NULL; /* the probe will say */
	r = fcntl(p[0], F_SETPIPE_SZ, CRIU_PAGE_SERVER_PIPE_BYTES);
	e = errno;
	close(p[0]);
	close(p[1]);
	if (r >= 0 || e != EPERM)
		return NULL;
	(void)cryo_read_file_at(AT_FDCWD, "/proc/sys/fs/pipe-max-size", 64, &max, &len);
	if (asprintf(&why,
		     "CRIU's lazy page server needs pipes of %d bytes, fs.pipe-max-size is %.*s and cryo runs "
		     "without CAP_SYS_RESOURCE (sysctl fs.pipe-max-size=4194304 lets it)",
		     CRIU_PAGE_SERVER_PIPE_BYTES, max ? (int)strcspn(max, "\n") : 1, max ? max : "?") < 0)
		return NULL;
	return why;
}

int cryo_criu_cli_lazy_probe(const char *state_root, char **ret_why, struct cryo_error *err)
{
	struct cryo_criu_version v;
	struct utsname u;
	_cleanup_free_ char *key = NULL, *cached = NULL;
	_cleanup_close_ int rfd = -1, tfd = -1;
	char dir[] = "/tmp/cryo-lazy-probe.XXXXXX";
	size_t len = 0;
	int r, ok;

	*ret_why = NULL;
	r = cryo_criu_get_version(&v, err);
	if (r < 0)
		return r;
	/* before the kept answer: it changes with the sysctl */
	*ret_why = page_server_pipe_short();
	if (*ret_why)
		return 0;
	(void)uname(&u);
	if (asprintf(&key, "%s criu-%d ", u.release, v.code) < 0)
		return cryo_error_set(err, ENOMEM, "lazy probe");
	rfd = open(state_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0 && cryo_read_file_at(rfd, ".lazy-probe", 4096, &cached, &len) >= 0 && cached &&
	    strncmp(cached, key, strlen(key)) == 0) {
		const char *rest = cached + strlen(key);

		if (strncmp(rest, "yes", 3) == 0)
			return 1;
		if (strncmp(rest, "no ", 3) == 0) {
			*ret_why = strndup(rest + 3, strcspn(rest + 3, "\n"));
			return 0;
		}
	}
	if (!mkdtemp(dir))
		return cryo_error_set(err, errno, "lazy probe: create a temp dir");
	ok = run_probe(dir, ret_why, err);
	tfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tfd >= 0)
		(void)cryo_rm_rf_at(tfd, dir + strlen("/tmp/"));
	if (ok < 0)
		return ok;
	if (rfd >= 0) {
		_cleanup_free_ char *line = NULL;

		if (asprintf(&line, "%s%s%s\n", key, ok ? "yes" : "no ", ok ? "" : *ret_why) >= 0)
			(void)cryo_write_file_atomic_at(rfd, ".lazy-probe", line, strlen(line), 0600, false);
	}
	return ok;
}
