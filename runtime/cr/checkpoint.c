// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "checkpoint.h"
#include "container.h"
#include "extmounts.h"
#include "extns.h"
#include "freezer.h"
#include "fsfreeze.h"
#include "hold.h"
#include "image.h"
#include "imghash.h"
#include "log.h"
#include "manifest.h"
#include "sign.h"
#include "mountinfo.h"
#include "proc.h"
#include "snapshot.h"
#include "spec.h"
#include "state.h"
#include "step.h"
#include "util.h"
#include "version.h"

#define THAW_TIMEOUT_MS 5000
#define DEFAULT_FREEZE_TIMEOUT_MS 5000

const char *const cryo_fs_freeze_mode_names[_CRYO_FS_FREEZE_MAX] = {
	[CRYO_FS_FREEZE_AUTO] = "auto",
	[CRYO_FS_FREEZE_REQUIRED] = "required",
	[CRYO_FS_FREEZE_OFF] = "off",
};

int cryo_fs_freeze_mode_from_string(const char *s, enum cryo_fs_freeze_mode *ret, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cryo_fs_freeze_mode_names); i++)
		if (s && strcmp(s, cryo_fs_freeze_mode_names[i]) == 0) {
			*ret = (enum cryo_fs_freeze_mode)i;
			return 0;
		}
	return cryo_error_setx(err, EINVAL, "--fs-freeze must be auto, required or off, not `%s`", s ? s : "");
}

struct ctx {
	const struct cryo_checkpoint_opts *o;
	struct cryo_state *st;
	struct cryo_spec *spec;
	char *config_json;
	int lock_fd;
	struct cryo_freezer *fz;
	struct cryo_hold *hold;         /* our freeze of the cgroup: thawed at its deadline or if we die */
	struct cryo_hold *staging_hold; /* `cryo recover` removes the staging dir if we die */
	bool was_frozen;
	struct cryo_image *img;
	char *work_dir;
	struct cryo_mount mnt;
	bool own_fs;
	bool fs_frozen;
	const char *keep_writable[4];
	struct cryo_fsfreeze_opts fso;
	Cryo__Manifest *m;
	char **ext_mounts;       /* key, value pairs for CRIU, NULL-terminated */
	struct cryo_extns ext_ns; /* the namespaces it joined (a pod's network...): external to CRIU */
	bool criu_stopped;       /* CRIU ended the tasks itself (see step_criu_dump) */
	bool net_lock_skipped;   /* CRIU dumped without its network lock (see criu.c) */
	struct cryo_step_timings timings;  /* t0: when the checkpoint started */
	int64_t frozen_at, fs_frozen_at;
	int64_t thawed_at;       /* --leave-running: thawed right after the dump; 0 = still frozen */
	uint64_t fs_frozen_us;
	struct cryo_imghash *hash; /* hashes CRIU's files as it closes them */
};

/*
 * CRIU restores a filter's program, not the agent's end of its
 * notifications: the restored process would get ENOSYS where its agent
 * answered. Refused before anything freezes, by checkpoint and by
 * migrate's preflight.
 */
int cryo_checkpoint_refuse_spec(const struct cryo_spec *spec, struct cryo_error *err)
{
	if (spec->seccomp.listener_path)
		return cryo_error_setx(err, EOPNOTSUPP,
				       "the container's seccomp filter hands syscalls to an agent "
				       "(linux.seccomp.listenerPath `%s`): a restore would bring the filter back "
				       "without it", spec->seccomp.listener_path);
	return 0;
}

static int step_lock(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	const struct cryo_checkpoint_opts *o = c->o;
	_cleanup_close_ int bfd = -1;
	size_t len = 0;
	int r;

	r = cryo_state_lock(o->root, o->id, CRYO_STATE_LOCK_TIMEOUT_MS, &c->lock_fd, err);
	if (r < 0)
		return r;
	r = cryo_state_load(o->root, o->id, &c->st, err);
	if (r < 0)
		return r;
	cryo_state_refresh(c->st);
	if (c->st->status != CRYO_STATUS_RUNNING && c->st->status != CRYO_STATUS_PAUSED)
		return cryo_error_setx(err, EINVAL, "container is %s: only a running or paused container can be checkpointed",
				       cryo_status_names[c->st->status]);
	if (c->st->pid <= 0)
		return cryo_error_setx(err, ESRCH, "container has no init process");
	bfd = open(c->st->bundle, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return cryo_error_set(err, errno, "open bundle `%s`", c->st->bundle);
	r = cryo_read_file_at(bfd, "config.json", CRYO_MANIFEST_MAX_SIZE / 2, &c->config_json, &len);
	if (r < 0)
		return cryo_error_set(err, -r, "read `%s/config.json`", c->st->bundle);
	r = cryo_spec_parse(c->config_json, len, &c->spec, err);
	if (r < 0)
		return r;
	r = cryo_checkpoint_refuse_spec(c->spec, err);
	if (r < 0)
		return r;
	r = cryo_manifest_new(o->id, c->config_json, &c->m, err);
	if (r < 0)
		return r;
	if (o->digest) {
		enum cryo_digest_alg alg;

		if (cryo_digest_alg_from_name(o->digest, &alg) < 0)
			return cryo_error_setx(err, EINVAL, "unknown digest `%s` (blake3, sha256)", o->digest);
		cryo_manifest_set_digest(c->m, alg);
	}
	return 0;
}

static void undo_lock(void *ctx)
{
	struct ctx *c = ctx;
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	c->lock_fd = -1;
}

static int64_t freeze_deadline(const struct ctx *c)
{
	return c->o->freeze_deadline_ms > 0 ? c->o->freeze_deadline_ms : CRYO_CHECKPOINT_FREEZE_DEADLINE_MS;
}

/* Journal the staging dir, so that `cryo recover` removes it should we die before commit or abort. */
static int hold_staging(struct ctx *c, struct cryo_error *err)
{
	char name[160];

	snprintf(name, sizeof(name), "%s@staging", c->o->id);
	return cryo_hold_acquire(c->o->root, name, CRYO_HOLD_STAGING, c->img->staging_path, "dir", 0,
				 CRYO_HOLD_UNDO_ON_EXIT | CRYO_HOLD_NO_WATCHDOG, cryo_hold_staging_undo,
				 &c->staging_hold, err);
}

static int step_stage(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	const struct cryo_checkpoint_opts *o = c->o;
	int r;

	if (o->work_path)
		c->work_dir = strdup(o->work_path);
	else if (asprintf(&c->work_dir, "%s/%s/criu", o->root, o->id) < 0)
		c->work_dir = NULL;
	if (!c->work_dir)
		return cryo_error_set(err, ENOMEM, "work dir");
	r = cryo_mkdir_p(c->work_dir, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create work dir `%s`", c->work_dir);
	r = cryo_image_stage(o->image_path ? o->image_path : "checkpoint", &c->img, err);
	if (r < 0)
		return r;
	c->img->transient = o->transient;
	return hold_staging(c, err);
}

static void undo_stage(void *ctx)
{
	struct ctx *c = ctx;
	cryo_image_abort(c->img);
	c->img = NULL;
}

/*
 * The freeze is ours, so it is held (cryo_freezer_freeze_held()): should
 * cryo die or hang, the kernel module or a watchdog thaws the container
 * at once or at the deadline. A container paused before is left alone:
 * its freeze is its user's.
 */
static int step_freeze_cgroup(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	struct cryo_freezer_hold_opts ho = {
		.root = c->o->root,
		.name = c->o->id,
		.deadline_ms = (uint64_t)freeze_deadline(c),
	};
	enum cryo_freezer_state s;
	int64_t timeout = c->o->freeze_timeout_ms > 0 ? c->o->freeze_timeout_ms : DEFAULT_FREEZE_TIMEOUT_MS;
	int r;

	/*
	 * A killed checkpoint's freeze is undone first: its CRIU, which
	 * outlived it and held our lock, froze the cgroup again as it ended,
	 * and that would pass for a pause of the user's, left frozen.
	 */
	r = cryo_hold_settle(c->o->root, c->o->id, CRYO_HOLD_CGROUP_THAW, cryo_freezer_hold_undo, err);
	if (r < 0)
		return r;
	r = cryo_freezer_open_for(c->st->freezer_backend, c->st->cgroup_v2, c->st->cgroup_v1_freezer, &c->fz, err);
	if (r < 0)
		return r;
	r = cryo_freezer_get_state(c->fz, &s, err);
	if (r < 0)
		return r;
	c->was_frozen = s == CRYO_FREEZER_FROZEN;
	c->frozen_at = cryo_now_us();
	if (c->was_frozen)
		return 0;
	/*
	 * A pre-dump is taken while the container runs: CRIU freezes the
	 * cgroup itself only while it takes the pages, and lets it go before
	 * it writes them out. Frozen by cryo, CRIU would leave it as it found
	 * it, frozen for the whole write (seconds for a large container: each
	 * of migrate's pre-copy rounds did that). The hold guards CRIU's
	 * freeze as it guards cryo's: if cryo (and with it CRIU) dies or the
	 * deadline passes, its watchdog thaws the cgroup.
	 */
	if (c->o->pre_dump)
		return cryo_hold_acquire(c->o->root, c->o->id, CRYO_HOLD_CGROUP_THAW, cryo_freezer_path(c->fz),
					 cryo_freezer_backend_names[cryo_freezer_backend_of(c->fz)], ho.deadline_ms,
					 CRYO_HOLD_UNDO_ON_EXIT, cryo_freezer_hold_undo, &c->hold, err);
	return cryo_freezer_freeze_held(c->fz, timeout, 0, &ho, &c->hold, err);
}

/* End our hold and thaw; -ETIME if the deadline thawed it before (the frozen window was lost). */
static int thaw_cgroup(struct ctx *c, struct cryo_error *err)
{
	if (c->was_frozen || !c->fz)
		return 0;
	return cryo_freezer_thaw_held(c->fz, TAKE_PTR(c->hold), THAW_TIMEOUT_MS, 0, err);
}

static void undo_freeze_cgroup(void *ctx)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (thaw_cgroup(c, &e) < 0)
		cryo_error_warn_clear(&e, "checkpoint `%s`: undo: thaw cgroup", c->o->id);
}

static int step_freeze_fs(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	enum cryo_fs_freeze_mode mode = c->o->fs_freeze;
	int r;

	r = cryo_mountinfo_find(c->st->rootfs, &c->mnt, err);
	if (r < 0)
		return r;
	c->own_fs = strcmp(c->mnt.mountpoint, c->st->rootfs) == 0 && strcmp(c->mnt.root, "/") == 0;
	if (mode == CRYO_FS_FREEZE_OFF)
		return 0;
	if (!c->own_fs) {
		if (mode == CRYO_FS_FREEZE_REQUIRED)
			return cryo_error_setx(err, EOPNOTSUPP,
					       "--fs-freeze=required: the rootfs `%s` is not a filesystem of its own (it is inside `%s`)",
					       c->st->rootfs, c->mnt.mountpoint);
		cryo_debug("rootfs `%s` is inside `%s`: not freezing that filesystem", c->st->rootfs, c->mnt.mountpoint);
		return 0;
	}
	c->keep_writable[0] = c->o->root;
	c->keep_writable[1] = c->img->staging_path;
	c->keep_writable[2] = c->work_dir;
	c->keep_writable[3] = NULL;
	c->fso.state_dir = c->o->root;
	c->fso.owner = c->o->id;
	c->fso.keep_writable = c->keep_writable;
	/* held like the cgroup: thawed at the deadline, or at once if we die */
	c->fso.flags = CRYO_FSFREEZE_THAW_ON_EXIT;
	c->fs_frozen_at = cryo_now_us();
	r = cryo_fsfreeze_freeze(c->st->rootfs, (uint64_t)freeze_deadline(c), &c->fso, err);
	if (r < 0 && mode == CRYO_FS_FREEZE_AUTO && (r == -EOPNOTSUPP || r == -EDEADLK)) {
		cryo_warn("checkpoint `%s`: not freezing the rootfs: %s", c->o->id, err->msg);
		cryo_error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	c->fs_frozen = true;
	return 0;
}

static void undo_freeze_fs(void *ctx)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (c->fs_frozen && cryo_fsfreeze_thaw(c->st->rootfs, &c->fso, NULL, &e) < 0)
		cryo_error_warn_clear(&e, "checkpoint `%s`: undo: thaw rootfs", c->o->id);
	c->fs_frozen = false;
}

static int step_snapshot(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	Cryo__RootfsSnapshot *s;
	int r;

	s = malloc(sizeof(*s));
	if (!s)
		return cryo_error_set(err, ENOMEM, "snapshot");
	cryo__rootfs_snapshot__init(s);
	c->m->rootfs = s;
	r = cryo_snapshot_take(c->st->rootfs, &c->mnt, c->own_fs, c->img->dirfd, s, err);
	if (r < 0)
		return r;
	s->has_fs_frozen = 1;
	s->fs_frozen = c->fs_frozen;
	return 0;
}

static int step_thaw_fs(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	struct cryo_fsfreeze_thawed t = { 0 };
	int r;

	if (!c->fs_frozen)
		return 0;
	r = cryo_fsfreeze_thaw(c->st->rootfs, &c->fso, &t, err);
	if (r == -EINVAL)
		c->fs_frozen = false; /* the deadline thawed it: the window was lost, nothing is left to thaw */
	if (r < 0)
		return r;
	c->fs_frozen = false;
	c->fs_frozen_us = (uint64_t)(cryo_now_us() - c->fs_frozen_at);
	return 0;
}

static int copy_log_into_image(struct ctx *c, const char *name)
{
	_cleanup_close_ int wfd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	wfd = open(c->work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		return -errno;
	r = cryo_read_file_at(wfd, name, 64U << 20, &buf, &len);
	if (r < 0)
		return r;
	/* no fsync of its own: the commit's syncfs of the image makes it durable with the rest */
	return cryo_write_new_file_unsynced_at(c->img->dirfd, name, buf, len, 0600);
}

/*
 * CRIU started (it has no request yet): our holds name it their helper,
 * so that, should we die, they live on until its dump ends (criu-env.h).
 */
static int criu_started(void *userdata, pid_t pid, struct cryo_error *err)
{
	struct ctx *c = userdata;
	int r;

	r = cryo_hold_set_helper(c->hold, pid, err);
	if (r == 0)
		r = cryo_hold_set_helper(c->staging_hold, pid, err);
	return r < 0 ? cryo_error_prefix(err, "criu") : 0;
}

static int criu_dump(struct ctx *c, bool pre_dump, struct cryo_error *err)
{
	const struct cryo_checkpoint_opts *o = c->o;
	struct cryo_criu_opts co = {
		.pid = c->st->pid,
		.image_dir = c->img->staging_path,
		.work_dir = c->work_dir,
		.parent_path = o->parent_path,
		/*
		 * The cgroup stays frozen: the container is only stopped once the
		 * image is committed. Except for established TCP connections when
		 * the container stops: only CRIU can end the tasks while their
		 * sockets are in repair mode, or the kernel would close them and
		 * the peers would see the connections end.
		 */
		.leave_running = o->leave_running || pre_dump || !o->criu.tcp_established,
		.flags = o->criu,
		.pre_dump = pre_dump,
		/*
		 * On top of a pre-dump CRIU leaves out the pages not dirtied
		 * since only while tracking: without it the dump is full.
		 */
		.track_mem = o->parent_path != NULL,
	};
	bool post_dump_ran = false;
	int r;

	co.freeze_cgroup = cryo_freezer_path(c->fz);
	co.no_cgroup2 = !c->st->cgroup_v2;
	co.config_file = cryo_spec_annotation(c->spec, "org.criu.config");
	co.external_netns = c->spec->namespaces[CRYO_NS_NET].enabled ? c->spec->namespaces[CRYO_NS_NET].path : NULL;
	co.ret_network_lock_skipped = &c->net_lock_skipped;
	/*
	 * A CRIU that leaves the tasks running outlives us should we die:
	 * killed, it could kill the task it worked in. Not under the kernel
	 * module, which thaws at our death, before CRIU's end would freeze
	 * again; nor when it ends the tasks, which it would do alone.
	 */
	co.outlive = co.leave_running && !cryo_hold_is_kmod(c->hold);
	if (co.outlive) {
		co.keep_fd = &c->lock_fd;
		co.on_start = criu_started;
		co.on_start_userdata = c;
	}
	co.post_dump = pre_dump ? NULL : o->post_dump;
	co.post_dump_userdata = o->post_dump_data;
	co.ret_post_dump_ran = &post_dump_ran;
	r = cryo_extmounts_dump(c->spec, c->st->pid, &c->ext_mounts, err);
	if (r < 0)
		return r;
	co.ext_mounts = (const char *const *)c->ext_mounts;
	r = cryo_extns_dump(c->spec, c->st->pid, &c->ext_ns, err);
	if (r < 0)
		return r;
	co.ext_ns = c->ext_ns.ns;
	/*
	 * Where the image stays (not transient), nothing competes with CRIU
	 * for the cores or the disk while the container is frozen: its files
	 * are hashed after the dump, on every core, while the disk takes them
	 * (step_manifest). Hashing page images as they grow, with their
	 * writeback, made CRIU's dump 1.77x bare CRIU's at 64 MiB (1.28x at
	 * 512), longer than runc's whole checkpoint. A migration's image
	 * (transient) goes out as CRIU writes it, and the downtime is all of
	 * it: its files are hashed as they come, page images as they grow,
	 * and the rootfs snapshot, already there when the watch begins, is
	 * the first one reported (the destination extracts it meanwhile).
	 */
	if (o->transient &&
	    cryo_imghash_start_notify(c->img->dirfd, cryo_manifest_digest(c->m), CRYO_IMGHASH_GROWING_PAGES,
				      o->on_file_closed, o->on_file_closed_data, &c->hash, NULL) < 0)
		c->hash = NULL;
	/* --lazy (migrate): the dump runs on, serving the pages, once the rest is written */
	r = o->lazy_port ? cryo_criu_cli_lazy_dump(&co, o->lazy_port, o->ret_lazy_dump, err) : cryo_criu_dump(&co, err);
	if (r < 0)
		return r;
	c->criu_stopped = !co.leave_running;
	if (co.post_dump && !post_dump_ran)
		return cryo_error_setx(err, EPROTO, "criu dump: CRIU let go of the tasks without its post-dump notification");
	/*
	 * --leave-running: the dump is complete and consistent, so the
	 * container goes on now rather than through hashing and commit;
	 * if those fail, running is how it was before.
	 */
	if ((o->leave_running || pre_dump) && !c->was_frozen) {
		r = thaw_cgroup(c, err);
		if (r < 0)
			return r;
		c->thawed_at = cryo_now_us();
	} else {
		/* a dump of a container its deadline thawed meanwhile is not consistent */
		r = cryo_hold_check(c->hold, err);
		if (r < 0)
			return r;
	}
	r = copy_log_into_image(c, pre_dump ? "pre-dump.log" : "dump.log");
	if (r < 0)
		cryo_warn("checkpoint `%s`: could not copy CRIU's log into the image: %s", o->id, strerror(-r));
	return 0;
}

static int step_criu_dump(void *ctx, struct cryo_error *err)
{
	return criu_dump(ctx, false, err);
}

/* Pre-dump: CRIU copies the memory and keeps tracking it; the tasks go on at once. */
static int step_criu_pre_dump(void *ctx, struct cryo_error *err)
{
	/* CRIU says only "Tracking memory is not available": say what it lacks */
	if (!cryo_kernel_has_soft_dirty())
		return cryo_error_setx(err, EOPNOTSUPP,
				       "a pre-dump needs the kernel's soft-dirty page tracking (CONFIG_MEM_SOFT_DIRTY), "
				       "which this kernel lacks: take a full checkpoint instead");
	return criu_dump(ctx, true, err);
}

/*
 * A later step failed after CRIU ended the tasks (--tcp-established
 * without --leave-running): bring the container back from the staged
 * image, into the same cgroup and the same rootfs, so a failed checkpoint
 * still leaves it as it was. The cgroup is empty now and thawed first:
 * CRIU can't finish restoring tasks that freeze as it moves them in.
 */
static void undo_criu_dump(void *ctx)
{
	struct ctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;
	struct cryo_criu_opts co = { 0 };
	struct cryo_extns ns = { 0 };
	char **ext = NULL;
	pid_t pid = 0;
	int r;

	if (!c->criu_stopped || !c->img)
		return;
	r = cryo_freezer_thaw(c->fz, THAW_TIMEOUT_MS, 0, &e);
	if (r >= 0)
		r = cryo_extmounts_restore(c->spec, c->st->bundle, c->st->cgroup_path, &ext, &e);
	if (r >= 0)
		r = cryo_extns_restore(c->spec, &ns, &e);
	if (r >= 0) {
		co.image_dir = c->img->staging_path;
		co.work_dir = c->work_dir;
		co.log_name = "undo-restore.log";
		co.root = c->st->rootfs;
		co.flags = c->o->criu;
		co.ext_mounts = (const char *const *)ext;
		co.ext_ns = ns.ns;
		r = cryo_criu_restore(&co, &pid, &e);
	}
	cryo_extns_done(&ns);
	cryo_strv_free(ext);
	/* as it was: frozen until `freeze-cgroup`'s undo (or for good, if it was paused) */
	if (r >= 0)
		r = cryo_freezer_freeze(c->fz, THAW_TIMEOUT_MS, 0, &e);
	if (r >= 0) {
		c->st->pid = pid;
		(void)cryo_pid_start_time(pid, &c->st->pid_start_time);
		r = cryo_state_save(c->o->root, c->st, &e);
	}
	if (r < 0) {
		cryo_warn("checkpoint `%s`: undo: CRIU ended the container and bringing it back failed: %s", c->o->id,
			  e.msg);
		cryo_error_clear(&e);
		return;
	}
	c->criu_stopped = false;
}

static int fill_manifest(struct ctx *c, struct cryo_error *err)
{
	const struct cryo_checkpoint_opts *o = c->o;
	Cryo__Manifest *m = c->m;
	Cryo__CriuInfo *ci;
	struct cryo_criu_version v;
	struct utsname u;
	const char *fault;
	char host[256];

	ci = malloc(sizeof(*ci));
	if (!ci)
		return cryo_error_set(err, ENOMEM, "manifest");
	cryo__criu_info__init(ci);
	m->criu = ci;
	if (cryo_criu_get_version(&v, NULL) == 0) {
		ci->has_version_major = ci->has_version_minor = ci->has_version_sublevel = 1;
		ci->version_major = v.major;
		ci->version_minor = v.minor;
		ci->version_sublevel = v.sublevel;
	}
#define SETB(f, v)                \
	do {                      \
		ci->has_##f = 1;  \
		ci->f = (v);      \
	} while (0)
	SETB(tcp_established, o->criu.tcp_established);
	SETB(ext_unix_sk, o->criu.ext_unix_sk);
	SETB(shell_job, o->criu.shell_job);
	SETB(file_locks, o->criu.file_locks);
	SETB(leave_running, o->leave_running);
	SETB(pre_dump, o->pre_dump);
	SETB(network_lock_skipped, c->net_lock_skipped);
#undef SETB
	fault = getenv("CRIU_FAULT");
	if (fault) {
		ci->has_fault = 1;
		ci->fault = (uint32_t)strtoul(fault, NULL, 10);
	}
	m->has_created_unix = 1;
	m->created_unix = (uint64_t)time(NULL);
	m->has_init_pid = 1;
	m->init_pid = (uint64_t)c->st->pid;
	m->has_frozen_window_usec = 1;
	m->frozen_window_usec = (uint64_t)((c->thawed_at ? c->thawed_at : cryo_now_us()) - c->frozen_at);
	m->has_fs_frozen_window_usec = 1;
	m->fs_frozen_window_usec = c->fs_frozen_us;
	if ((cryo_manifest_set_string(&ci->manage_cgroups_mode, cryo_criu_cg_mode_names[o->criu.cg_mode]) < 0) ||
	    (o->parent_path && cryo_manifest_set_string(&ci->parent_path, o->parent_path) < 0) ||
	    cryo_manifest_set_string(&ci->log_file, o->pre_dump ? "pre-dump.log" : "dump.log") < 0 ||
	    cryo_manifest_set_string(&m->bundle, c->st->bundle) < 0 ||
	    cryo_manifest_set_string(&m->cgroup_path, c->st->cgroup_v2) < 0 ||
	    cryo_manifest_set_string(&m->cgroup_v1_freezer, c->st->cgroup_v1_freezer) < 0 ||
	    cryo_manifest_set_string(&m->freezer_backend, c->st->freezer_backend) < 0 ||
	    cryo_manifest_set_string(&m->freezer_state, c->was_frozen ? "FROZEN" : "RUNNING") < 0 ||
	    cryo_manifest_set_string(&m->rootfs_path, c->st->rootfs) < 0 ||
	    cryo_manifest_set_string(&m->cryo_version, CRYO_VERSION) < 0 ||
	    (uname(&u) == 0 && cryo_manifest_set_string(&m->kernel_release, u.release) < 0) ||
	    (gethostname(host, sizeof(host)) == 0 && cryo_manifest_set_string(&m->hostname, host) < 0))
		return cryo_error_set(err, ENOMEM, "manifest");
	return 0;
}

/* The image's sync in a thread of its own, while the files are hashed. */
struct sync_job {
	pthread_t tid;
	struct cryo_image *img;
	int r;
	struct cryo_error err;
	int64_t end;
};

static void *sync_thread(void *arg)
{
	struct sync_job *j = arg;

	j->r = cryo_image_sync(j->img, &j->err);
	j->end = cryo_now_us();
	return NULL;
}

static int start_sync(struct ctx *c, struct sync_job *j)
{
	*j = (struct sync_job){ .img = c->img, .err = CRYO_ERROR_INIT };
	return -pthread_create(&j->tid, NULL, sync_thread, j);
}

static int join_sync(struct sync_job *j, struct cryo_error *err)
{
	pthread_join(j->tid, NULL);
	if (j->r < 0)
		cryo_error_move(err, &j->err);
	cryo_error_clear(&j->err);
	return j->r;
}

static int step_manifest(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	struct sync_job sync_job;
	bool sync_started = false;
	int64_t start, hash_end, sync_end;
	size_t i;
	int r, r2 = 0;

	r = fill_manifest(c, err);
	if (r < 0)
		return r;
	/* the steps so far: this one and those after it end after the manifest is written */
	for (i = 0; i < c->timings.n; i++)
		if (cryo_manifest_add_timing(c->m, c->timings.t[i].step, (uint64_t)c->timings.t[i].start_usec,
					     (uint64_t)c->timings.t[i].usec) < 0)
			return cryo_error_set(err, ENOMEM, "timings");
	/*
	 * hash: every file (but what the imghash thread did while CRIU wrote
	 * a transient image); sync: the files are durable before the
	 * manifest that names them is. Side by side: the hash waits for the
	 * cores, the sync for the disk. Both are timed into the manifest
	 * itself (inspect shows them).
	 */
	start = cryo_now_us();
	if (!c->img->transient)
		sync_started = start_sync(c, &sync_job) == 0;
	if (c->hash)
		(void)cryo_imghash_finish(c->hash, NULL);
	r = cryo_manifest_hash_dir_with(c->m, c->img->dirfd, c->hash, err);
	hash_end = cryo_now_us();
	if (sync_started) {
		struct cryo_error se = CRYO_ERROR_INIT;

		/* the hash's failure is the one to tell */
		r2 = join_sync(&sync_job, &se);
		if (r >= 0 && r2 < 0)
			cryo_error_move(err, &se);
		cryo_error_clear(&se);
	}
	if (r < 0)
		return r;
	if (cryo_manifest_add_timing(c->m, "hash", (uint64_t)(start - c->timings.t0), (uint64_t)(hash_end - start)) < 0)
		return cryo_error_set(err, ENOMEM, "timings");
	cryo_step_timings_add(&c->timings, "checkpoint", "hash", start, hash_end - start);
	if (!sync_started) {
		start = cryo_now_us();
		r2 = cryo_image_sync(c->img, err);
	}
	if (r2 < 0)
		return r2;
	sync_end = sync_started ? sync_job.end : cryo_now_us();
	if (cryo_manifest_add_timing(c->m, "sync", (uint64_t)(start - c->timings.t0), (uint64_t)(sync_end - start)) < 0)
		return cryo_error_set(err, ENOMEM, "timings");
	cryo_step_timings_add(&c->timings, "checkpoint", "sync", start, sync_end - start);
	c->m->has_total_usec = 1;
	c->m->total_usec = (uint64_t)(cryo_now_us() - c->timings.t0);
	r = cryo_manifest_write_at(c->img->dirfd, c->m, err);
	if (r >= 0 && c->o->sign_key)
		r = cryo_image_sign_at(c->img->dirfd, c->o->sign_key, err);
	return r;
}

static int step_commit(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	return cryo_image_commit(c->img, err);
}

/*
 * The image is on disk: give the container back (thaw unless it was
 * paused before) or stop it. A failure here leaves a valid image and is
 * still reported.
 */
static int step_resume(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;

	return thaw_cgroup(c, err);
}

static int step_finish(void *ctx, struct cryo_error *err)
{
	struct ctx *c = ctx;
	int r;

	if (c->o->leave_running)
		return step_resume(c, err);
	/* killed while still held: nothing runs after the dump */
	r = cryo_freezer_kill_all(c->fz, SIGKILL, THAW_TIMEOUT_MS, err);
	if (r < 0)
		return r;
	/* empty now: a cgroup left frozen would freeze whatever is restored into it */
	r = c->was_frozen ? cryo_freezer_thaw(c->fz, THAW_TIMEOUT_MS, 0, err) : thaw_cgroup(c, err);
	if (r < 0 && r != -ETIME)
		return r;
	cryo_error_clear(err);
	/* the image is the container now: gone, as with runc, until restore makes it again */
	return cryo_container_destroy(c->o->root, c->st, err);
}

/*
 * The plan. CRIU runs after the rootfs is thawed, not beside its freeze
 * and snapshot (which would save the ~45 ms of FIFREEZE on every dump):
 * its mount dump makes a directory in the container's root, which blocks
 * on the frozen filesystem until its deadline, and a CRIU that ends after
 * the cgroup hold's watchdog thawed the container freezes it again.
 * Steps after `criu-dump` have no undo of their own: what they
 * did lives in the staging dir, which `stage`'s undo removes, and the
 * container is still frozen, which `freeze-cgroup`'s undo thaws (when
 * CRIU ended the tasks, `criu-dump`'s undo first restores them, frozen,
 * from the staging dir).
 */
static const struct cryo_step checkpoint_steps[] = {
	{ "lock", step_lock, undo_lock },
	{ "stage", step_stage, undo_stage },
	{ "freeze-cgroup", step_freeze_cgroup, undo_freeze_cgroup },
	{ "freeze-fs", step_freeze_fs, undo_freeze_fs },
	{ "snapshot-rootfs", step_snapshot, NULL },
	{ "thaw-fs", step_thaw_fs, NULL },
	{ "criu-dump", step_criu_dump, undo_criu_dump },
	{ "manifest", step_manifest, NULL },
	{ "commit", step_commit, NULL },
	{ "finish", step_finish, NULL },
};

const struct cryo_step_table cryo_checkpoint_step_table = {
	.name = "checkpoint", .steps = checkpoint_steps, .n_steps = ARRAY_SIZE(checkpoint_steps),
};

/*
 * --pre-dump: no rootfs freeze or snapshot (the final dump takes those),
 * CRIU leaves the tasks running, and the container is given back as it
 * was as soon as the image is committed.
 */
static const struct cryo_step pre_dump_steps[] = {
	{ "lock", step_lock, undo_lock },
	{ "stage", step_stage, undo_stage },
	{ "freeze-cgroup", step_freeze_cgroup, undo_freeze_cgroup },
	{ "criu-pre-dump", step_criu_pre_dump, NULL },
	{ "manifest", step_manifest, NULL },
	{ "commit", step_commit, NULL },
	{ "resume", step_resume, NULL },
};

const struct cryo_step_table cryo_pre_dump_step_table = {
	.name = "pre-dump", .steps = pre_dump_steps, .n_steps = ARRAY_SIZE(pre_dump_steps),
};

static void ctx_done(struct ctx *c)
{
	cryo_image_abort(c->img);
	/* committed or aborted: nothing is left to recover */
	if (cryo_hold_release(TAKE_PTR(c->staging_hold), NULL) < 0)
		cryo_debug("checkpoint `%s`: the staging dir's journal entry was gone", c->o->id);
	if (c->hold && thaw_cgroup(c, NULL) < 0)
		cryo_debug("checkpoint `%s`: the freeze's hold had ended", c->o->id);
	cryo_freezer_close(c->fz);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	cryo_mount_done(&c->mnt);
	cryo_manifest_free(c->m);
	cryo_spec_free(c->spec);
	cryo_state_free(c->st);
	free(c->config_json);
	free(c->work_dir);
	cryo_strv_free(c->ext_mounts);
	cryo_extns_done(&c->ext_ns);
	cryo_imghash_free(c->hash);
}

/*
 * dir/rel with `.` and `..` taken lexically, as Go's filepath.Join (runc
 * joins them so): the image dir is made only at the commit, so
 * `img/../pre` can't be looked up through it.
 */
static char *join_lexical(const char *dir, const char *rel)
{
	_cleanup_free_ char *all = NULL;
	char *out, *tok, *save = NULL;
	size_t n = 0;

	if (asprintf(&all, "%s/%s", dir, rel) < 0)
		return NULL;
	out = calloc(strlen(all) + 2, 1);
	if (!out)
		return NULL;
	if (all[0] == '/')
		out[n++] = '/';
	for (tok = strtok_r(all, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		char *slash;

		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0 && n == 1 && out[0] == '/')
			continue; /* above the root is the root */
		if (strcmp(tok, "..") == 0 && n > 0) {
			out[n] = '\0';
			slash = strrchr(out, '/');
			/* `..` after `..` (a relative path above its start) stays */
			if (strcmp(slash ? slash + 1 : out, "..") != 0) {
				n = slash ? (size_t)(slash - out) + (slash == out) : 0;
				out[n] = '\0';
				continue;
			}
		}
		if (n > 0 && out[n - 1] != '/')
			out[n++] = '/';
		n += (size_t)sprintf(out + n, "%s", tok);
	}
	if (n == 0)
		out[n++] = '.';
	out[n] = '\0';
	return out;
}

/* --parent-path names a (pre-)dump beside the image, relative to it (runc's rule and words). */
static int check_parent_path(const struct cryo_checkpoint_opts *o, struct cryo_error *err)
{
	_cleanup_free_ char *p = NULL;
	struct stat sb;

	if (o->parent_path[0] == '/')
		return cryo_error_setx(err, EINVAL, "--parent-path must be relative to the image path, not `%s`",
				       o->parent_path);
	p = join_lexical(o->image_path ? o->image_path : "checkpoint", o->parent_path);
	if (!p)
		return cryo_error_set(err, ENOMEM, "--parent-path");
	if (stat(p, &sb) < 0)
		return cryo_error_set(err, errno, "invalid --parent-path `%s` (`%s`)", o->parent_path, p);
	if (!S_ISDIR(sb.st_mode))
		return cryo_error_setx(err, ENOTDIR, "invalid --parent-path `%s`: `%s` is not a directory", o->parent_path,
				       p);
	return 0;
}

int cryo_checkpoint(const struct cryo_checkpoint_opts *o, struct cryo_error *err)
{
	struct ctx c = { .o = o, .lock_fd = -1 };
	int r;

	r = cryo_validate_id(o->id, err);
	if (r >= 0 && o->parent_path)
		r = check_parent_path(o, err);
	/* a key that can't sign fails now, not after the container was frozen and dumped */
	if (r >= 0 && o->sign_key)
		r = cryo_sign_key_check(o->sign_key, true, NULL, err);
	if (r < 0)
		return r;
	c.timings.t0 = cryo_now_us();
	r = cryo_step_run(o->pre_dump ? &cryo_pre_dump_step_table : &cryo_checkpoint_step_table, &c, &c.timings,
			  err);
	if (o->ret_timings)
		*o->ret_timings = c.timings;
	ctx_done(&c);
	if (r < 0)
		return cryo_error_prefix(err, "checkpoint `%s`", o->id);
	return 0;
}
