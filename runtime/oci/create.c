// SPDX-License-Identifier: GPL-2.0-only
/*
 * create: the runtime clone3()s the init (init.h) into the new namespaces,
 * a step table with undo (create_steps): config → state dir → cgroup →
 * channels → clone → init setup → hooks → network → init ready → console.
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
#include <sys/mount.h>
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
#include "create.h"
#include "init.h"
#include "spec.h"
#include "step.h"
#include "util.h"
#include "version.h"

int cryo_container_state_dir_fd(const char *root, const char *id, struct cryo_error *err)
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

/* The OCI state handed to hooks on stdin. */
char *cryo_container_hook_state(const struct cryo_state *st, const char *status, pid_t pid)
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
	int *mount_fds;                /* new user namespace: the bind sources, opened (init.h) */
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
	r = cryo_cgroup_freezer_backend(c->spec, &c->backend, err);
	if (r < 0)
		return r;
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
	st->cgroup_joined = c->cg.joined;
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

	if (!c->cg_made)
		return;
	if (c->cg.joined)
		cryo_cgroup_release(c->st->cgroup_path);
	else if (cryo_cgroup_destroy_made(c->st->cgroup_path, c->cg.made, CRYO_CONTAINER_STOP_TIMEOUT_MS, &e) < 0)
		cryo_error_warn_clear(&e, "undo create");
}

/* The exec fifo, the console socket, the sync pair and the seccomp listener, all before the clone. */
static int step_channels(void *ctx, struct cryo_error *err)
{
	struct create_ctx *c = ctx;
	_cleanup_close_ int sdir = -1;
	int r;

	sdir = cryo_container_state_dir_fd(c->o->root, c->o->id, err);
	if (sdir < 0)
		return sdir;
	if (mkfifoat(sdir, CRYO_EXEC_FIFO_NAME, 0600) < 0)
		return cryo_error_set(err, errno, "create exec fifo");
	/* read-write: never blocks, and the init holds a reader until start */
	c->fifo = openat(sdir, CRYO_EXEC_FIFO_NAME, O_RDWR | O_CLOEXEC);
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
static void close_mount_sources(struct create_ctx *c)
{
	for (size_t i = 0; c->mount_fds && i < c->spec->n_mounts; i++)
		closep(&c->mount_fds[i]);
	free(c->mount_fds);
	c->mount_fds = NULL;
}

/*
 * The bind sources, cloned by us (open_tree(), a detached mount) for an
 * init that starts in a user namespace of its own: there it may not reach
 * a source the host's root can (a 0700 directory), yet the config mounts
 * it (runc does the same); it moves the clone into place. Relative
 * sources are the bundle's.
 */
static int open_mount_sources(struct create_ctx *c, struct cryo_error *err)
{
	const struct cryo_spec *spec = c->spec;

	c->mount_fds = malloc((spec->n_mounts ? spec->n_mounts : 1) * sizeof(int));
	if (!c->mount_fds)
		return cryo_error_set(err, ENOMEM, "bind mount sources");
	for (size_t i = 0; i < spec->n_mounts; i++)
		c->mount_fds[i] = -1;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct cryo_spec_mount *m = &spec->mounts[i];
		_cleanup_free_ char *p = NULL;

		if (!m->bind || !m->source)
			continue;
		if (m->source[0] != '/' && asprintf(&p, "%s/%s", c->bundle, m->source) < 0)
			return cryo_error_set(err, ENOMEM, "bind mount sources");
		c->mount_fds[i] = (int)syscall(SYS_open_tree, AT_FDCWD, p ? p : m->source,
					       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (m->recursive_bind ? AT_RECURSIVE : 0));
		if (c->mount_fds[i] < 0)
			return cryo_error_set(err, errno, "bind mount source `%s`", m->source);
	}
	return 0;
}

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
	if (c->clone_flags & CLONE_NEWUSER) {
		r = open_mount_sources(c, err);
		if (r < 0)
			return r;
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
			.mount_fds = c->mount_fds,
			.sigmask = c->init_sigmask,
		};

		cryo_init_main(&a);
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
	if (cryo_init_sync_send(c->sync[0], SYNC_GO) < 0)
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
	char buf[CRYO_INIT_MSG_MAX];
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
	state = cryo_container_hook_state(c->st, "created", c->pid);
	if (!state)
		return cryo_error_set(err, ENOMEM, "state for hooks");
	r = cryo_hooks_run(&c->spec->hooks, CRYO_HOOK_PRESTART, state, err);
	if (r >= 0)
		r = cryo_hooks_run(&c->spec->hooks, CRYO_HOOK_CREATE_RUNTIME, state, err);
	if (r < 0)
		return r;
	free(state);
	state = cryo_container_hook_state(c->st, "creating", c->pid);
	if (!state)
		return cryo_error_set(err, ENOMEM, "state for hooks");
	len = strlen(state);
	if (len + 2 > CRYO_INIT_STATE_MSG_MAX)
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
	char buf[CRYO_INIT_MSG_MAX];
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
	close_mount_sources(c);
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
int cryo_container_do_create(const struct cryo_create_opts *o, const sigset_t *init_sigmask, pid_t *ret_pid,
			     int *ret_lock, int *ret_console, struct cryo_error *err)
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

	r = cryo_container_do_create(o, NULL, &pid, &lock, NULL, err);
	if (r < 0)
		return cryo_error_prefix(err, "create `%s`", o->id);
	close(lock);
	return 0;
}
