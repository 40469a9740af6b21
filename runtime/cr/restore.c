// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "cgroup.h"
#include "criu.h"
#include "console.h"
#include "container.h"
#include "extmounts.h"
#include "extns.h"
#include "freezer.h"
#include "hold.h"
#include "hooks.h"
#include "image.h"
#include "log.h"
#include "manifest.h"
#include "mount.h"
#include "mountinfo.h"
#include "network.h"
#include "proc.h"
#include "restore-config.h"
#include "restore.h"
#include "sign.h"
#include "snapshot.h"
#include "spec.h"
#include "state.h"
#include "step.h"
#include "util.h"

/* Under the state root; a leading dot can't be a container id. */
#define RESTORE_WORK_DIR ".restore"

/*
 * A state dir without state.json is a create or restore that died half-way
 * (SIGKILL): it holds no lock then, and goes (as `delete` removes it).
 */
static void remove_dead_claim(const struct cryo_restore_opts *o)
{
	struct cryo_state *st = NULL;
	_cleanup_close_ int lock = -1;

	if (cryo_state_lock(o->root, o->id, CRYO_STATE_LOCK_TIMEOUT_MS, &lock, NULL) < 0)
		return;
	if (cryo_state_load(o->root, o->id, &st, NULL) == -ENOENT && cryo_state_remove_dir(o->root, o->id, NULL) == 0)
		cryo_info("removed the state dir of `%s` a dead cryo left half-made", o->id);
	cryo_state_free(st);
}

/* The container must not exist, or be stopped (then its old state is replaced). */
static int claim_id(const struct cryo_restore_opts *o, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	int r;

	r = cryo_state_load(o->root, o->id, &st, NULL);
	if (r == -ENOENT) {
		remove_dead_claim(o);
		return 0;
	}
	if (r < 0)
		return cryo_error_set(err, -r, "load the state of `%s`", o->id);
	cryo_state_refresh(st);
	if (st->status != CRYO_STATUS_STOPPED) {
		r = cryo_error_setx(err, EBUSY, "container `%s` exists and is %s: delete it before restoring", o->id,
				    cryo_status_names[st->status]);
		cryo_state_free(st);
		return r;
	}
	cryo_state_free(st);
	return cryo_state_remove_dir(o->root, o->id, err);
}

/*
 * A cgroup left from before (the checkpointed container's, or one its
 * owner keeps) is reused only when it is empty, and thawed first: the
 * restored tasks would otherwise freeze the moment CRIU moves them in.
 */
static int reuse_cgroup(const char *rel, const struct cryo_cgroup_paths *cg, struct cryo_error *err)
{
	const char *paths[] = { cg->v2, cg->v1_freezer };
	const enum cryo_freezer_backend backends[] = { CRYO_FREEZER_V2, CRYO_FREEZER_V1 };
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, i;
	int r;

	r = cryo_cgroup_pids(rel, &pids, &n, err);
	if (r < 0)
		return r;
	if (n > 0) {
		char comm[64] = "?", path[64];
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;

		/*
		 * Name the first one, whose it is tells what was left behind:
		 * in our log only. The error may go to a migration's source,
		 * which has no business knowing this host's processes.
		 */
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pids[0]);
		if (cryo_read_file_at(AT_FDCWD, path, 4096, &buf, &len) == 0 && len > 0)
			snprintf(comm, sizeof(comm), "%s", buf);
		cryo_warn("restore: cgroup `%s` has %zu processes, the first pid %d `%s`", rel, n, (int)pids[0], comm);
		return cryo_error_setx(err, EBUSY, "cgroup `%s` exists and has %zu processes", rel, n);
	}
	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		struct cryo_freezer *f = NULL;

		if (!paths[i])
			continue;
		r = cryo_freezer_open(backends[i], paths[i], &f, err);
		if (r >= 0)
			r = cryo_freezer_thaw(f, 5000, 0, err);
		cryo_freezer_close(f);
		if (r < 0)
			return cryo_error_prefix(err, "thaw the existing cgroup `%s`", paths[i]);
	}
	return 0;
}

struct ctx {
	const struct cryo_restore_opts *o;
	const char *image;          /* as given, for messages */
	Cryo__Manifest *m;
	/*
	 * The page images' digests, checked while CRIU reads them; its
	 * verdict is needed before any restored task runs (verify_pages_gate).
	 */
	struct cryo_manifest_later *later;
	bool gate_ran;
	/*
	 * The host end of the container's veth (org.cryo.network), made by
	 * CRIU and set up here before the tasks run; net_err: why not.
	 */
	struct cryo_network_link net;
	struct cryo_error net_err;
	bool net_done;
	struct cryo_spec *spec;     /* the bundle's config.json: the one restore uses */
	char *bundle, *rootfs, *work, *cgrel;
	const char *freezer_backend;
	struct cryo_snapshot_undo *snap;
	/* `<id>@restore`: what to undo should this process die (cryo_restore_hold_undo()) */
	struct cryo_hold *hold;
	char **ext;
	struct cryo_extns ext_ns;  /* the new sandbox's namespaces the tasks go into */
	struct cryo_freezer *fz;
	/*
	 * The restored tasks die with this restore until it is done (or,
	 * for receive, until its caller lets them live): from before CRIU
	 * makes them (hold-tasks) to resume, or handed to the caller.
	 */
	struct cryo_hold *kill_hold;
	/* the tasks CRIU left stopped as they were dumped: resume leaves them so */
	pid_t *stopped_before;
	size_t n_stopped_before;
	struct cryo_state *st;
	struct cryo_cgroup_paths cg;
	struct cryo_step_timings timings;
	int image_fd;
	int bundle_fd;
	int lock_fd;
	int console;                /* --console-socket, connected */
	int pts_master;             /* the restored terminal's new master, until sent (or relayed: foreground) */
	pid_t pid;
	bool state_created;
	bool cgroup_created;
	bool froze;
	bool pid_file_written;
};

#define PARENT_LINK "parent"
/* how long the host end's name of a container just killed may take to go with its netns */
#define NETWORK_NAME_WAIT_MS 5000
#define MAX_PARENTS 16

/*
 * CRIU reads what the image's files point to. The manifest lists symlinks
 * by their target, so a page file that is a symlink to a host file would
 * verify and be loaded into the container's memory: the only symlink an
 * image may hold is CRIU's `parent` (a dump on top of a pre-dump), and the
 * image it leads to is checked like this one, down the chain; its files
 * are hashed here unless the signature check did (with a key, sign.c
 * verifies the parents whole).
 */
static int verify_links(int image_fd, const Cryo__Manifest *m, int depth, bool hash, struct cryo_error *err)
{
	_cleanup_close_ int pfd = -1;
	Cryo__Manifest *pm = NULL;
	bool has_parent = false;
	size_t i;
	int r;

	for (i = 0; i < m->n_files; i++) {
		if (!m->files[i]->symlink)
			continue;
		if (strcmp(m->files[i]->name, PARENT_LINK) != 0)
			return cryo_error_setx(err, EBADMSG, "`%.200s` is a symlink (to `%.200s`): an image holds files, and only CRIU's `parent` link",
					       m->files[i]->name, m->files[i]->symlink);
		has_parent = true;
	}
	if (!has_parent)
		return 0;
	if (depth >= MAX_PARENTS)
		return cryo_error_setx(err, ELOOP, "more than %d parent images", MAX_PARENTS);
	pfd = cryo_image_open_at(image_fd, PARENT_LINK, err);
	if (pfd < 0)
		return cryo_error_prefix(err, "parent image");
	r = cryo_manifest_read_at(pfd, &pm, err);
	if (r >= 0 && hash)
		r = cryo_manifest_verify_at(pfd, pm, err);
	if (r >= 0)
		r = verify_links(pfd, pm, depth + 1, hash, err);
	cryo_manifest_free(pm);
	return r < 0 ? cryo_error_prefix(err, "parent image") : 0;
}

/*
 * CRIU copies a page image's bytes into the restored tasks' memory and
 * reads nothing else of it; the tasks run only after its post-restore
 * notification, when cryo has the digests' verdict (and CRIU kills them
 * all if it is no). So page images are hashed while CRIU restores, not
 * before: every other file (what CRIU parses) is verified first.
 */
static int verify_pages(struct ctx *c)
{
	return cryo_manifest_later_wait(c->later, NULL);
}

/* The host end of the veth CRIU made again: up, with its address, before a task sends a packet. */
static int network_host_end(struct ctx *c)
{
	c->net_done = true;
	return cryo_network_restore_host(&c->spec->network, &c->net, &c->net_err);
}

/* CRIU's post-restore notification: every task restored, none has run yet; nonzero = CRIU kills them all. */
static int post_restore_gate(void *userdata)
{
	struct ctx *c = userdata;

	if (c->spec->network.present && network_host_end(c) < 0)
		return -1;
	return c->later ? verify_pages(c) : 0;
}

static int step_verify(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	int r;

	/* a dir another user can write is refused: it could change after the check */
	c->image_fd = cryo_image_open(c->image, err);
	if (c->image_fd < 0)
		return c->image_fd;
	if (c->o->preverified) {
		r = cryo_manifest_read_at(c->image_fd, &c->m, err);
	} else {
		/* before anything else: an unauthenticated image changes nothing (sign.h) */
		r = cryo_image_authenticate_at(c->image_fd, c->o->verify_key, c->o->require_signature, err);
		if (r >= 0)
			r = cryo_manifest_read_at(c->image_fd, &c->m, err);
		/* lazy pages come from a daemon, through CRIU's command line: no notification to wait in */
		if (r >= 0 && !c->o->lazy_pages)
			r = cryo_manifest_verify_split_at(c->image_fd, c->m, cryo_image_is_pages, &c->later, err);
		else if (r >= 0)
			r = cryo_manifest_verify_at(c->image_fd, c->m, err);
		if (r >= 0)
			r = verify_links(c->image_fd, c->m, 0, !c->o->verify_key, err);
	}
	if (r < 0)
		return cryo_error_prefix(err, "image `%s`", c->image);
	if (c->m->criu && c->m->criu->has_pre_dump && c->m->criu->pre_dump)
		return cryo_error_setx(err, EINVAL, "`%s` is a pre-dump: restore the dump made with --parent-path", c->image);
	return 0;
}

/*
 * Everything restore puts on the host comes from --bundle and its
 * config.json, as for runc: the rootfs, the cgroup, the bind sources.
 * Nothing the image says is a host path that is used.
 */
static int step_check_bundle(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	const struct cryo_restore_opts *o = c->o;
	struct cryo_spec *img = NULL;
	char real[PATH_MAX];
	struct stat st;
	int r;

	if (!o->bundle || !*o->bundle)
		return cryo_error_setx(err, EINVAL, "no bundle given (--bundle)");
	if (!realpath(o->bundle, real))
		return cryo_error_set(err, errno, "bundle `%s`", o->bundle);
	c->bundle = strdup(real);
	if (!c->bundle)
		return cryo_error_set(err, ENOMEM, "restore");
	c->bundle_fd = open(c->bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->bundle_fd < 0)
		return cryo_error_set(err, errno, "bundle `%s`", c->bundle);
	r = cryo_spec_load(c->bundle, &c->spec, err);
	if (r < 0)
		return r;
	r = cryo_spec_parse(c->m->config_json, strlen(c->m->config_json), &img, err);
	if (r < 0)
		return cryo_error_prefix(err, "the image's config.json");
	r = cryo_restore_compare_config(c->o->id, c->spec, img, err);
	cryo_spec_free(img);
	if (r < 0)
		return r;
	/* runc's rules, as for create: only a restore in the foreground relays the terminal itself */
	if (c->spec->terminal && !o->console_socket && o->detach)
		return cryo_error_setx(err, EINVAL,
				       "config.json: process.terminal: a detached restore of a container with a terminal needs --console-socket");
	if (!c->spec->terminal && o->console_socket)
		return cryo_error_setx(err, EINVAL, "--console-socket given but process.terminal is false");
	if (o->console_socket) {
		r = cryo_console_connect(o->console_socket, &c->console, err);
		if (r < 0)
			return r;
	}
	r = cryo_cgroup_freezer_backend(c->spec, &c->freezer_backend, err);
	if (r < 0)
		return r;
	if (c->spec->root_path[0] == '/')
		c->rootfs = strdup(c->spec->root_path);
	else if (asprintf(&c->rootfs, "%s/%s", c->bundle, c->spec->root_path) < 0)
		c->rootfs = NULL;
	if (!c->rootfs)
		return cryo_error_set(err, ENOMEM, "restore");
	/* resolved once, as create does; an image snapshot may create a missing one */
	if (realpath(c->rootfs, real)) {
		free(c->rootfs);
		c->rootfs = strdup(real);
		if (!c->rootfs)
			return cryo_error_set(err, ENOMEM, "restore");
		if (stat(c->rootfs, &st) < 0 || !S_ISDIR(st.st_mode))
			return cryo_error_setx(err, ENOTDIR, "config.json: root.path: `%s` is not a directory", c->rootfs);
	} else if (errno != ENOENT || !c->m->rootfs) {
		return cryo_error_set(err, errno, "config.json: root.path: `%s`", c->rootfs);
	}
	c->cgrel = c->spec->cgroups_path ? strdup(c->spec->cgroups_path) : NULL;
	if (!c->cgrel && asprintf(&c->cgrel, "%s/%s", CRYO_CGROUP_DEFAULT_PARENT, o->id) < 0)
		c->cgrel = NULL;
	if (!c->cgrel)
		return cryo_error_set(err, ENOMEM, "restore");
	return 0;
}

/* <root>/.restore/<id>, CRIU's work dir unless --work-path names one */
static char *default_work_dir(const char *root, const char *id)
{
	char *p = NULL;

	if (asprintf(&p, "%s/" RESTORE_WORK_DIR "/%s", root, id) < 0)
		return NULL;
	return p;
}

static int step_claim_id(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	char name[160];
	int r;

	r = claim_id(c->o, err);
	if (r < 0)
		return r;
	r = cryo_state_create_dir(c->o->root, c->o->id, err);
	if (r < 0)
		return r;
	c->state_created = true;
	r = cryo_state_lock(c->o->root, c->o->id, CRYO_STATE_LOCK_TIMEOUT_MS, &c->lock_fd, err);
	if (r < 0)
		return r;
	/*
	 * Not in the state dir: a failed restore removes that, and CRIU's log
	 * must outlive a failure when --work-path asks to keep it.
	 */
	c->work = c->o->work_path ? strdup(c->o->work_path) : default_work_dir(c->o->root, c->o->id);
	if (!c->work)
		return cryo_error_set(err, ENOMEM, "restore");
	snprintf(name, sizeof(name), "%s@restore", c->o->id);
	return cryo_hold_acquire(c->o->root, name, CRYO_HOLD_RESTORE, c->work, "restore", 0,
				 CRYO_HOLD_UNDO_ON_EXIT | CRYO_HOLD_NO_WATCHDOG, cryo_restore_hold_undo, &c->hold, err);
}

static void undo_claim_id(void *ctx)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (c->state_created && cryo_state_remove_dir(c->o->root, c->o->id, &e) < 0)
		cryo_error_warn_clear(&e, "restore `%s`: undo", c->o->id);
	c->state_created = false;
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	c->lock_fd = -1;
}

/*
 * What the restore changed so far, in its hold's detail: should we die
 * from here on (SIGKILL), the next restore of this id or `cryo recover`
 * undoes it (cryo_restore_hold_undo()). Also after a failed step, whose
 * partial work is there.
 */
static int journal_progress(struct ctx *c, int r, struct cryo_error *err)
{
	_cleanup_free_ char *snap = NULL;
	struct cryo_error e = CRYO_ERROR_INIT;
	struct json_object *o;
	int k;

	if (!c->hold)
		return r;
	o = json_object_new_object();
	if (!o)
		return r < 0 ? r : cryo_error_set(err, ENOMEM, "restore");
	snap = cryo_snapshot_undo_json(c->snap);
	if (snap)
		json_object_object_add(o, "rootfs", json_tokener_parse(snap));
	if (c->cgroup_created)
		json_object_object_add(o, "cgroup", json_object_new_string(c->cgrel));
	k = cryo_hold_set_detail(c->hold, json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), &e);
	json_object_put(o);
	if (k < 0 && r >= 0) {
		cryo_error_move(err, &e);
		return cryo_error_prefix(err, "journal what the restore changed");
	}
	cryo_error_clear(&e);
	return r;
}

static int step_stage_rootfs(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	int r;

	if (!c->m->rootfs)
		return 0;
	r = cryo_snapshot_restore(c->image_fd, c->m->rootfs, c->m->bundle, c->bundle_fd, c->rootfs, c->o->rootfs_pre,
				  &c->snap, err);
	return journal_progress(c, r, err);
}

static void undo_stage_rootfs(void *ctx)
{
	struct ctx *c = ctx;

	cryo_snapshot_undo(c->snap);
}

/*
 * The mountpoints of the config's mounts, in the rootfs and in the sources
 * of binds that hold others: empty directories, which stay, as create's
 * and runc's do. The last step before CRIU's, so that a restore refused
 * or failed before it leaves the bundle as it was.
 */
static int step_mountpoints(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;

	return cryo_mount_restore_points(c->spec, c->rootfs, c->bundle, err);
}

static int step_cgroup(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	int r;

	if (cryo_cgroup_exists(c->cgrel)) {
		r = cryo_cgroup_get_paths(c->cgrel, &c->cg, err);
		if (r >= 0)
			r = reuse_cgroup(c->cgrel, &c->cg, err);
		return r;
	}
	r = cryo_cgroup_create(c->cgrel, &c->spec->resources, &c->cg, err);
	if (r >= 0) {
		c->cgroup_created = true;
		r = journal_progress(c, r, err);
	}
	return r;
}

static void undo_cgroup(void *ctx)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (c->cgroup_created && cryo_cgroup_destroy(c->cgrel, 5000, &e) < 0)
		cryo_error_warn_clear(&e, "restore `%s`: undo", c->o->id);
	c->cgroup_created = false;
}

/*
 * Before CRIU puts a task in the cgroup: a hold whose watchdog kills
 * every task there the moment this restore dies (or `cryo recover` does,
 * after), until resume lets them go. A restore killed at any point
 * leaves no copy running, nor one stopped for good, behind; receive
 * keeps the hold past the restore, until the source commits.
 */
static int step_hold_tasks(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	char name[160];
	int r;

	r = cryo_freezer_open_for(c->freezer_backend, c->cg.v2, c->cg.v1_freezer, &c->fz, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "%s@tasks", c->o->id);
	return cryo_hold_acquire(c->o->root, name, CRYO_HOLD_CGROUP_KILL, cryo_freezer_path(c->fz),
				 cryo_freezer_backend_names[cryo_freezer_backend_of(c->fz)], 0, CRYO_HOLD_UNDO_ON_EXIT,
				 cryo_freezer_kill_undo, &c->kill_hold, err);
}

static void undo_hold_tasks(void *ctx)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	/* (criu-restore's undo killed the tasks already) */
	if (c->kill_hold && cryo_hold_release(c->kill_hold, &e) < 0)
		cryo_error_warn_clear(&e, "restore `%s`: undo: release the hold", c->o->id);
	c->kill_hold = NULL;
}

/* The new master to the console socket, named as create names it (its index in the container's devpts). */
static int send_master(struct ctx *c, struct cryo_error *err)
{
	char name[64] = "";
	unsigned int n;

	if (ioctl(c->pts_master, TIOCGPTN, &n) == 0)
		snprintf(name, sizeof(name), "/dev/pts/%u", n);
	if (cryo_console_send_fd(c->console, c->pts_master, name, err) < 0)
		return cryo_error_prefix(err, "console socket `%s`", c->o->console_socket);
	return 0;
}

static int step_criu_restore(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	const struct cryo_restore_opts *o = c->o;
	struct cryo_criu_opts co = { 0 };
	_cleanup_free_ char *cgroot = NULL;
	int r;

	r = cryo_mkdir_p(c->work, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create work dir `%s`", c->work);
	r = cryo_extmounts_restore(c->spec, c->bundle, c->cgrel, &c->ext, err);
	if (r < 0)
		return r;
	/* CRIU reads the image by path: the dir we verified, pinned by our fd */
	co.image_dir = c->image;
	co.work_dir = c->work;
	co.root = c->rootfs;
	if (asprintf(&cgroot, "/%s", c->cgrel + strspn(c->cgrel, "/")) < 0)
		return cryo_error_set(err, ENOMEM, "restore");
	co.cgroup_root = cgroot;
	co.no_cgroup2 = !c->cg.v2;
	co.config_file = cryo_spec_annotation(c->spec, "org.criu.config");
	co.external_netns = c->spec->namespaces[CRYO_NS_NET].enabled ? c->spec->namespaces[CRYO_NS_NET].path : NULL;
	co.tcp_close = o->tcp_close;
	co.flags = o->criu;
	co.ext_mounts = (const char *const *)c->ext;
	r = cryo_extns_restore(c->spec, &c->ext_ns, err);
	if (r < 0)
		return r;
	co.ext_ns = c->ext_ns.ns;
	co.expect_pts_master = c->spec->terminal;
	co.ret_pts_master = &c->pts_master;
	co.lazy_pages = o->lazy_pages;
	co.lazy_wait = o->lazy_wait;
	co.lazy_ready = o->lazy_ready;
	co.lazy_wait_userdata = o->lazy_wait_userdata;
	/* nothing of them runs before this restore's own setup is done: resume sends them SIGCONT */
	co.leave_stopped = true;
	co.ret_stopped_before = &c->stopped_before;
	co.ret_n_stopped_before = &c->n_stopped_before;
	if (c->spec->network.present) {
		/* CRIU makes the pair again, its host end named as the config names it */
		r = cryo_network_wait_name_free(&c->spec->network, NETWORK_NAME_WAIT_MS, err);
		if (r < 0)
			return r;
		co.veth_inside = c->spec->network.ifname;
		co.veth_outside = c->spec->network.host_ifname;
	}
	if (c->later || c->spec->network.present) {
		co.post_restore_gate = post_restore_gate;
		co.post_restore_gate_userdata = c;
		co.ret_gate_ran = &c->gate_ran;
	}
	/*
	 * The page images are hashed while CRIU reads them, from here: not
	 * before stage-rootfs, whose tar child forks without exec (manifest.h)
	 */
	if (c->later) {
		r = cryo_manifest_later_start(c->later, err);
		if (r < 0)
			return r;
	}
	r = cryo_criu_restore(&co, &c->pid, err);
	/* CRIU had them: no hook or child of ours inherits a pod's namespace */
	cryo_extns_done(&c->ext_ns);
	/* a damaged page image: cryo_restore() reports it, whatever CRIU made of it */
	if (c->later && verify_pages(c) < 0)
		return r < 0 ? r : cryo_error_setx(err, EBADMSG, "criu restore: a page image is damaged");
	/* tasks that ran without the verdict: not a restore to keep (undo kills them) */
	if (c->later && r >= 0 && !c->gate_ran)
		return cryo_error_setx(err, EPROTO,
				       "criu restore: CRIU resumed the tasks without its post-restore notification: the page images were not verified before they ran");
	/* a lazy restore (CRIU's command line) sends no notification: its tasks run already */
	if (r >= 0 && c->spec->network.present && !c->net_done)
		(void)network_host_end(c);
	/* the host end refused (at the gate: that is why CRIU failed) */
	if (c->net_err.msg) {
		cryo_error_move(err, &c->net_err);
		return cryo_error_prefix(err, "criu restore");
	}
	if (r < 0)
		return r;
	if (!c->spec->terminal)
		return 0;
	if (c->pts_master < 0) {
		/* the process had closed its terminal before the checkpoint: nothing to hand over */
		cryo_warn("restore `%s`: process.terminal is true but the image has no terminal open: no console", o->id);
		return 0;
	}
	if (c->console < 0)
		return 0; /* foreground: cryo_restore() relays it */
	r = send_master(c, err);
	close(c->pts_master);
	c->pts_master = -1;
	return r;
}

static void undo_criu_restore(void *ctx)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, i;

	/* the pair goes with the netns, but the kernel takes its time: the name is free at once */
	if (c->net.host_ifindex > 0 && cryo_network_undo(&c->net, &e) < 0)
		cryo_error_warn_clear(&e, "restore `%s`: undo", c->o->id);
	c->net.host_ifindex = 0;
	if (c->pid <= 0)
		return;
	/* init (of its pid namespace, when it has one: the rest goes with it), then any other task CRIU put in the cgroup */
	kill(c->pid, SIGKILL);
	(void)waitpid(c->pid, NULL, 0);
	c->pid = 0;
	if (cryo_cgroup_pids(c->cgrel, &pids, &n, NULL) == 0)
		for (i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
}

/*
 * On a hybrid host the cgroup has two freezers, and CRIU restores the v1
 * freezer.state it dumped (frozen, when the dump froze through v1, e.g.
 * an image made by another runtime or a client's --manage-cgroups-mode):
 * a running container must be thawed in both, or its tasks sleep in the
 * freezer cryo does not use.
 */
static int thaw_other_freezer(struct ctx *c, struct cryo_error *err)
{
	bool v1 = strcmp(c->freezer_backend, "v1") == 0;
	const char *path = v1 ? c->cg.v2 : c->cg.v1_freezer;
	_cleanup_(cryo_freezer_closep) struct cryo_freezer *f = NULL;
	enum cryo_freezer_state s;
	int r;

	if (!path)
		return 0;
	r = cryo_freezer_open(v1 ? CRYO_FREEZER_V2 : CRYO_FREEZER_V1, path, &f, err);
	if (r >= 0)
		r = cryo_freezer_get_state(f, &s, err);
	if (r >= 0 && s != CRYO_FREEZER_RUNNING)
		r = cryo_freezer_thaw(f, 5000, 0, err);
	return r < 0 ? cryo_error_prefix(err, "thaw the %s freezer", v1 ? "v2" : "v1") : 0;
}

/*
 * A container paused at checkpoint comes back running (what runc does and
 * containerd expects: it resumes only what it paused itself), or paused
 * with --keep-paused. Either way the cgroup is made to say so, whatever
 * CRIU left in it, and the state written next agrees.
 */
static int step_pause_or_run(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	bool was_paused = c->m->freezer_state && strcmp(c->m->freezer_state, "FROZEN") == 0;
	enum cryo_freezer_state s;
	int r;

	/* (the tasks are stopped: frozen, they stay so when resume sends them SIGCONT) */
	if (c->o->paused || (was_paused && c->o->keep_paused)) {
		r = cryo_freezer_freeze(c->fz, 5000, 0, err);
		if (r < 0)
			return r;
		c->froze = true;
		return 0;
	}
	r = cryo_freezer_get_state(c->fz, &s, err);
	if (r >= 0 && s != CRYO_FREEZER_RUNNING)
		r = cryo_freezer_thaw(c->fz, 5000, 0, err);
	if (r >= 0)
		r = thaw_other_freezer(c, err);
	return r;
}

static void undo_pause_or_run(void *ctx)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	/* a frozen task can't die: thaw before criu-restore's undo kills */
	if (c->froze && cryo_freezer_thaw(c->fz, 5000, 0, &e) < 0)
		cryo_error_warn_clear(&e, "restore `%s`: undo: thaw", c->o->id);
	c->froze = false;
}

static int step_state(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	const struct cryo_restore_opts *o = c->o;
	int r;

	r = cryo_state_new(o->id, &c->st, err);
	if (r < 0)
		return r;
	c->st->bundle = strdup(c->bundle);
	c->st->rootfs = strdup(c->rootfs);
	c->st->cgroup_path = strdup(c->cgrel);
	c->st->cgroup_v2 = c->cg.v2 ? strdup(c->cg.v2) : NULL;
	c->st->cgroup_v1_freezer = c->cg.v1_freezer ? strdup(c->cg.v1_freezer) : NULL;
	c->st->freezer_backend = strdup(c->freezer_backend);
	c->st->rootfs_image = cryo_snapshot_mounted_image(c->snap);
	c->st->annotations = json_object_get(c->spec->annotations);
	c->st->pid = c->pid;
	(void)cryo_pid_start_time(c->pid, &c->st->pid_start_time);
	c->st->created = (int64_t)time(NULL);
	c->st->status = c->froze ? CRYO_STATUS_PAUSED : CRYO_STATUS_RUNNING;
	if (!c->st->bundle || !c->st->rootfs || !c->st->cgroup_path || !c->st->freezer_backend)
		return cryo_error_set(err, ENOMEM, "restore");
	/* a lifecycle state (state.h): after a host crash the tasks are gone and refresh says stopped */
	r = cryo_state_save_ext(o->root, c->st, false, err);
	if (r < 0)
		return r;
	if (o->pid_file) {
		r = cryo_write_pid_file(o->pid_file, c->pid, err);
		if (r < 0)
			return r;
		c->pid_file_written = true;
	}
	return 0;
}

static void undo_state(void *ctx)
{
	struct ctx *c = ctx;

	/* state.json goes with the state dir (claim-id's undo) */
	if (c->pid_file_written)
		(void)unlink(c->o->pid_file);
	c->pid_file_written = false;
}

/*
 * A CRIU killed while it restored (with its restore, or by the undo of a
 * dead one) leaves its cgroup yard mounted in its work dir: a tmpfs with
 * every hierarchy below it, in our mount namespace. Only those go.
 */
static void umount_criu_yards(const char *work)
{
	_cleanup_free_ char *real = realpath(work, NULL), *prefix = NULL;
	struct cryo_error e = CRYO_ERROR_INIT;
	int r;

	if (!real || asprintf(&prefix, "%s/.criu.cgyard.", real) < 0)
		return;
	r = cryo_umount_prefixed(prefix, &e);
	if (r > 0)
		cryo_warn("restore: unmounted %d mounts of the cgroup yard a killed CRIU left in `%s`", r, real);
	if (r < 0)
		cryo_error_warn_clear(&e, "restore: the cgroup yard a killed CRIU left in `%s`", real);
}

/* <root>/.restore/<id> goes, whatever the restore's outcome: nothing of a restore stays there. */
static void remove_work_dir(const char *root, const char *id)
{
	_cleanup_free_ char *rel = NULL, *work = default_work_dir(root, id);
	_cleanup_close_ int rootfd = -1;

	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0 || !work || asprintf(&rel, RESTORE_WORK_DIR "/%s", id) < 0)
		return;
	umount_criu_yards(work);
	(void)cryo_rm_rf_at(rootfd, rel);
}

/* After a restore that worked: CRIU's log moves into the state dir, next to the dump's. */
static void keep_restore_log(const struct cryo_restore_opts *o, const char *work)
{
	_cleanup_free_ char *dst = NULL, *src = NULL;

	if (o->work_path)
		return;
	if (asprintf(&src, "%s/restore.log", work) < 0 || asprintf(&dst, "%s/%s/criu", o->root, o->id) < 0)
		return;
	if (cryo_mkdir_p(dst, 0700) < 0)
		return;
	free(dst);
	if (asprintf(&dst, "%s/%s/criu/restore.log", o->root, o->id) < 0)
		return;
	(void)rename(src, dst);
	remove_work_dir(o->root, o->id);
}

/* What journal_progress() recorded: the tasks CRIU restored go, with the cgroup, then the rootfs is put back. */
static int undo_progress(const char *detail, struct cryo_error *err)
{
	struct json_object *o = json_tokener_parse(detail), *v;
	int r = 0;

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return cryo_error_setx(err, EINVAL, "the restore's record is not a JSON object");
	}
	if (json_object_object_get_ex(o, "cgroup", &v) && json_object_is_type(v, json_type_string) &&
	    cryo_cgroup_destroy(json_object_get_string(v), 5000, err) < 0)
		r = cryo_error_prefix(err, "remove the restore's cgroup");
	/* its tasks are gone: the rootfs is no longer busy */
	if (r == 0 && json_object_object_get_ex(o, "rootfs", &v))
		r = cryo_snapshot_undo_from_json(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), err);
	json_object_put(o);
	return r;
}

static bool state_dir_exists(const char *root, const char *id)
{
	_cleanup_free_ char *dir = NULL;
	struct stat sb;

	return asprintf(&dir, "%s/%s", root, id) >= 0 && lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int cryo_restore_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	_cleanup_free_ char *id = NULL, *work = NULL, *state = NULL;
	const char *at = strchr(rec->name, '@');
	int r = 0;

	id = at ? strndup(rec->name, (size_t)(at - rec->name)) : NULL;
	if (!id || !rec->root || cryo_validate_id(id, NULL) < 0)
		return cryo_error_setx(err, EINVAL, "hold `%s` names no container", rec->name);
	if (asprintf(&state, "%s/%s/state.json", rec->root, id) < 0)
		return cryo_error_set(err, ENOMEM, "undo");
	/* a CRIU helper the parent-death signal did not reach (see cryo_proc_kill_holding()) */
	if (rec->target && cryo_proc_kill_holding("criu", rec->target) > 0)
		cryo_warn("restore `%s`: killed the CRIU its dead restore left", id);
	/* a restore that wrote the container's state was done but for its hooks: the container is `delete`'s */
	if (rec->detail && access(state, F_OK) < 0)
		r = undo_progress(rec->detail, err);
	work = default_work_dir(rec->root, id);
	if (r == 0 && work && rec->target && strcmp(work, rec->target) == 0)
		remove_work_dir(rec->root, id);
	else if (rec->target)
		umount_criu_yards(rec->target); /* a --work-path is the user's; CRIU's yard in it is not */
	/*
	 * the state dir it claimed, with no state in it: `cryo recover` removes
	 * it (the next restore of the id would). Not while someone holds its
	 * lock: that is the next restore itself, which undoes this hold as it
	 * claims the id.
	 */
	if (r == 0 && access(state, F_OK) < 0 && errno == ENOENT && state_dir_exists(rec->root, id)) {
		_cleanup_close_ int lock = -1;

		if (cryo_state_lock(rec->root, id, 0, &lock, NULL) == 0 && access(state, F_OK) < 0 && errno == ENOENT)
			(void)cryo_state_remove_dir(rec->root, id, NULL);
	}
	return r;
}

static int run_poststart(const struct cryo_restore_opts *o, const struct cryo_spec *spec, struct cryo_error *err)
{
	struct json_object *js = NULL;
	int r;

	if (spec->hooks.n[CRYO_HOOK_POSTSTART] == 0)
		return 0;
	r = cryo_container_state_json(o->root, o->id, &js, err);
	if (r < 0)
		return r;
	r = cryo_hooks_run(&spec->hooks, CRYO_HOOK_POSTSTART, json_object_to_json_string(js), err);
	json_object_put(js);
	return r;
}


/* poststart: a failure is reported but the container stays (as for start) */
static int step_hooks(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (run_poststart(c->o, c->spec, &e) < 0)
		cryo_error_warn_clear(&e, "restore `%s`", c->o->id);
	return 0;
}

static bool stopped_before(const struct ctx *c, pid_t pid)
{
	size_t i;

	for (i = 0; i < c->n_stopped_before; i++)
		if (c->stopped_before[i] == pid)
			return true;
	return false;
}

/*
 * Everything is in place (network, cgroup, state, hooks): the tasks CRIU
 * left stopped go on (into the freezer, when the container comes back
 * paused), except those that were stopped when dumped. The hold that
 * would kill them is released, or handed to the caller.
 */
static int step_resume(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, i;
	int r;

	r = cryo_proc_tree(c->pid, &pids, &n, err);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++)
		if (!stopped_before(c, pids[i]) && kill(pids[i], SIGCONT) < 0 && errno != ESRCH)
			return cryo_error_set(err, errno, "SIGCONT pid %d", (int)pids[i]);
	if (c->o->ret_kill_hold) {
		*c->o->ret_kill_hold = TAKE_PTR(c->kill_hold);
		return 0;
	}
	r = cryo_hold_release(c->kill_hold, err);
	c->kill_hold = NULL;
	return r;
}

/*
 * The plan. verify and check-bundle only read; from claim-id on each step
 * changes the host and its undo takes the change back: no state dir, no
 * cgroup cryo made, the bundle's rootfs as it was, no process.
 */
static const struct cryo_step restore_steps[] = {
	{ "verify", step_verify, NULL },
	{ "check-bundle", step_check_bundle, NULL },
	{ "claim-id", step_claim_id, undo_claim_id },
	{ "stage-rootfs", step_stage_rootfs, undo_stage_rootfs },
	{ "cgroup", step_cgroup, undo_cgroup },
	{ "hold-tasks", step_hold_tasks, undo_hold_tasks },
	{ "mountpoints", step_mountpoints, NULL },
	{ "criu-restore", step_criu_restore, undo_criu_restore },
	{ "pause-or-run", step_pause_or_run, undo_pause_or_run },
	{ "state", step_state, undo_state },
	{ "hooks", step_hooks, NULL },
	{ "resume", step_resume, NULL },
};

const struct cryo_step_table cryo_restore_step_table = {
	.name = "restore", .steps = restore_steps, .n_steps = ARRAY_SIZE(restore_steps),
};

static void ctx_done(struct ctx *c)
{
	if (c->image_fd >= 0)
		close(c->image_fd);
	if (c->bundle_fd >= 0)
		close(c->bundle_fd);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	if (c->console >= 0)
		close(c->console);
	if (c->pts_master >= 0)
		close(c->pts_master);
	cryo_manifest_later_free(c->later);
	cryo_error_clear(&c->net_err);
	cryo_manifest_free(c->m);
	cryo_spec_free(c->spec);
	cryo_state_free(c->st);
	cryo_cgroup_paths_free(&c->cg);
	cryo_snapshot_undo_free(c->snap);
	cryo_hold_free(c->hold);
	cryo_freezer_close(c->fz);
	cryo_hold_free(c->kill_hold);
	free(c->stopped_before);
	free(c->bundle);
	free(c->rootfs);
	free(c->work);
	free(c->cgrel);
	cryo_strv_free(c->ext);
	cryo_extns_done(&c->ext_ns);
}

static void release_hold(struct ctx *c)
{
	struct cryo_error e = CRYO_ERROR_INIT;

	if (cryo_hold_release(TAKE_PTR(c->hold), &e) < 0)
		cryo_error_warn_clear(&e, "restore `%s`", c->o->id);
}

int cryo_restore(const struct cryo_restore_opts *o, pid_t *ret_pid, int *ret_status, struct cryo_error *err)
{
	struct ctx c = { .o = o, .image_fd = -1, .bundle_fd = -1, .lock_fd = -1, .console = -1, .pts_master = -1 };
	_cleanup_close_ int master = -1;
	pid_t pid;
	int r, status;

	r = cryo_validate_id(o->id, err);
	if (r < 0)
		return r;
	c.image = o->image_path ? o->image_path : "checkpoint";
	r = cryo_step_run(&cryo_restore_step_table, &c, &c.timings, err);
	if (o->ret_timings)
		*o->ret_timings = c.timings;
	if (r < 0) {
		/*
		 * A page image found damaged while the steps after verify ran is
		 * the cause of any of their failures: said as the verify's.
		 */
		struct cryo_error e = CRYO_ERROR_INIT;

		if (c.later && cryo_manifest_later_wait(c.later, &e) < 0) {
			cryo_error_clear(err);
			(void)cryo_error_setx(err, e.status, "verify: image `%s`: %s", c.image, e.msg);
		}
		cryo_error_clear(&e);
		/* every step is undone: nothing is left to recover, CRIU's Error lines are in err */
		if (!o->work_path && c.hold)
			remove_work_dir(o->root, o->id);
		release_hold(&c);
		ctx_done(&c);
		return cryo_error_prefix(err, "restore `%s`", o->id);
	}
	/* the container is there: from here on, dying leaves nothing for the hold's undo to put back */
	release_hold(&c);
	cryo_snapshot_commit(c.snap);
	keep_restore_log(o, c.work);
	pid = c.pid;
	master = c.pts_master;
	c.pts_master = -1;
	ctx_done(&c);
	*ret_pid = pid;
	if (o->detach || !ret_status)
		return 0;
	/* a terminal without a console socket: relayed to our stdio until the init exits, as run does */
	if (master >= 0) {
		_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		struct cryo_error e = CRYO_ERROR_INIT;

		if (pidfd < 0)
			cryo_warn("restore `%s`: terminal: pidfd_open %d: %s", o->id, (int)pid, strerror(errno));
		else if (cryo_console_relay(master, STDIN_FILENO, STDOUT_FILENO, pidfd, -1, &e) < 0)
			cryo_error_warn_clear(&e, "restore `%s`: terminal", o->id);
		cryo_error_clear(&e);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cryo_error_set(err, errno, "restore `%s`: wait for the container", o->id);
	*ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 0;
}
