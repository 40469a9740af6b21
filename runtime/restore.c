// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "cgroup.h"
#include "checkpoint.h"
#include "container.h"
#include "freezer.h"
#include "hooks.h"
#include "log.h"
#include "manifest.h"
#include "restore.h"
#include "sign.h"
#include "snapshot.h"
#include "spec.h"
#include "state.h"
#include "util.h"

#define LOCK_TIMEOUT_MS 5000
/* Under the state root; a leading dot can't be a container id. */
#define RESTORE_WORK_DIR ".restore"

/* The container must not exist, or be stopped (then its old state is replaced). */
static int claim_id(const struct cryo_restore_opts *o, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	int r;

	r = cryo_state_load(o->root, o->id, &st, NULL);
	if (r == -ENOENT)
		return 0;
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

static char *abs_from(const char *base, const char *p)
{
	char *out = NULL;

	if (p[0] == '/')
		return strdup(p);
	if (asprintf(&out, "%s/%s", base, p) < 0)
		return NULL;
	return out;
}

int cryo_restore_ext_mounts(const struct cryo_spec *spec, const char *bundle, char ***ret, struct cryo_error *err)
{
	char **v;
	size_t i, n = 0;

	v = calloc(2 * (spec->n_mounts + ARRAY_SIZE(cryo_ext_devices)) + 1, sizeof(*v));
	if (!v)
		return cryo_error_set(err, ENOMEM, "external mounts");
	/* host devices, and /dev/null also for the masked paths */
	for (i = 0; i < ARRAY_SIZE(cryo_ext_devices); i++) {
		v[n] = strdup(cryo_ext_devices[i]);
		v[n + 1] = strdup(cryo_ext_devices[i]);
		if (!v[n] || !v[n + 1]) {
			cryo_strv_free(v);
			return cryo_error_set(err, ENOMEM, "external mounts");
		}
		n += 2;
	}
	for (i = 0; i < spec->n_mounts; i++) {
		const struct cryo_spec_mount *m = &spec->mounts[i];

		if (!m->bind)
			continue;
		v[n] = strdup(m->destination);
		v[n + 1] = abs_from(bundle, m->source);
		if (!v[n] || !v[n + 1]) {
			cryo_strv_free(v);
			return cryo_error_set(err, ENOMEM, "external mounts");
		}
		n += 2;
	}
	*ret = v;
	return 0;
}

static int write_pid_file(const char *path, pid_t pid, struct cryo_error *err)
{
	char buf[32];
	int r;

	snprintf(buf, sizeof(buf), "%d", (int)pid);
	r = cryo_write_new_file_at(AT_FDCWD, path, buf, strlen(buf), 0644);
	if (r < 0)
		return cryo_error_set(err, -r, "write pid file `%s`", path);
	return 0;
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
	if (n > 0)
		return cryo_error_setx(err, EBUSY, "cgroup `%s` exists and has %zu processes (pid %d)", rel, n,
				       (int)pids[0]);
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

struct rctx {
	Cryo__Manifest *m;
	struct cryo_spec *spec;
	struct cryo_state *st;
	struct cryo_cgroup_paths cg;
	char *bundle, *rootfs, *image, *work, *cgrel;
	char **ext;
	int lock_fd;
	bool state_created, cgroup_created;
};

static void rctx_done(struct rctx *c)
{
	cryo_manifest_free(c->m);
	cryo_spec_free(c->spec);
	cryo_state_free(c->st);
	cryo_cgroup_paths_free(&c->cg);
	free(c->bundle);
	free(c->rootfs);
	free(c->image);
	free(c->work);
	free(c->cgrel);
	cryo_strv_free(c->ext);
	if (c->lock_fd >= 0)
		close(c->lock_fd);
}

static int do_restore(const struct cryo_restore_opts *o, struct rctx *c, pid_t *ret_pid, struct cryo_error *err)
{
	struct cryo_criu_opts co = { 0 };
	char real[PATH_MAX];
	pid_t pid = 0;
	int r;

	c->image = realpath(o->image_path ? o->image_path : "checkpoint", NULL);
	if (!c->image)
		return cryo_error_set(err, errno, "image `%s`", o->image_path ? o->image_path : "checkpoint");
	/* before anything else: a damaged or unauthenticated image changes nothing */
	r = cryo_image_authenticate(c->image, o->verify_key, o->require_signature, err);
	if (r >= 0)
		r = cryo_manifest_load_verified(c->image, &c->m, err);
	if (r < 0)
		return r;
	if (cryo_fault("restore-verify"))
		return cryo_error_setx(err, EIO, "injected fault (CRYO_FAULT=restore-verify)");
	if (c->m->criu && c->m->criu->has_pre_dump && c->m->criu->pre_dump)
		return cryo_error_setx(err, EINVAL, "`%s` is a pre-dump: restore the dump made with --parent-path", c->image);

	r = claim_id(o, err);
	if (r < 0)
		return r;
	r = cryo_spec_parse(c->m->config_json, strlen(c->m->config_json), &c->spec, err);
	if (r < 0)
		return cryo_error_prefix(err, "the manifest's config.json");
	if (!o->bundle && !c->m->bundle)
		return cryo_error_setx(err, EINVAL, "the image names no bundle: pass --bundle");
	if (!realpath(o->bundle ? o->bundle : c->m->bundle, real))
		return cryo_error_set(err, errno, "bundle `%s`", o->bundle ? o->bundle : c->m->bundle);
	c->bundle = strdup(real);
	c->rootfs = c->bundle ? abs_from(c->bundle, c->spec->root_path) : NULL;
	c->cgrel = c->spec->cgroups_path ? strdup(c->spec->cgroups_path) : NULL;
	if (!c->cgrel && asprintf(&c->cgrel, "%s/%s", CRYO_CGROUP_DEFAULT_PARENT, o->id) < 0)
		c->cgrel = NULL;
	if (!c->bundle || !c->rootfs || !c->cgrel)
		return cryo_error_set(err, ENOMEM, "restore");

	r = cryo_state_create_dir(o->root, o->id, err);
	if (r < 0)
		return r;
	c->state_created = true;
	r = cryo_state_lock(o->root, o->id, LOCK_TIMEOUT_MS, &c->lock_fd, err);
	if (r < 0)
		return r;

	if (c->m->rootfs) {
		r = cryo_snapshot_restore(c->image, c->m->rootfs, c->rootfs, err);
		if (r < 0)
			return cryo_error_prefix(err, "rootfs");
	}
	r = cryo_cgroup_create(c->cgrel, &c->spec->resources, &c->cg, err);
	if (r == -EEXIST) {
		cryo_error_clear(err);
		r = cryo_cgroup_get_paths(c->cgrel, &c->cg, err);
		if (r >= 0)
			r = reuse_cgroup(c->cgrel, &c->cg, err);
	} else if (r >= 0) {
		c->cgroup_created = true;
	}
	if (r < 0)
		return cryo_error_prefix(err, "cgroup");

	/*
	 * Not in the state dir by default: a failed restore removes that, and
	 * CRIU's log must outlive the failure it explains.
	 */
	if (o->work_path)
		c->work = strdup(o->work_path);
	else if (asprintf(&c->work, "%s/" RESTORE_WORK_DIR "/%s", o->root, o->id) < 0)
		c->work = NULL;
	if (!c->work)
		return cryo_error_set(err, ENOMEM, "restore");
	r = cryo_mkdir_p(c->work, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create work dir `%s`", c->work);
	r = cryo_restore_ext_mounts(c->spec, c->bundle, &c->ext, err);
	if (r < 0)
		return r;
	co.image_dir = c->image;
	co.work_dir = c->work;
	co.root = c->rootfs;
	co.tcp_close = o->tcp_close;
	co.flags = o->criu;
	co.ext_mounts = (const char *const *)c->ext;
	r = cryo_criu_restore(&co, &pid, err);
	if (r < 0)
		return r;

	r = cryo_state_new(o->id, &c->st, err);
	if (r < 0)
		goto kill;
	c->st->bundle = strdup(c->bundle);
	c->st->rootfs = strdup(c->rootfs);
	c->st->cgroup_path = strdup(c->cgrel);
	c->st->cgroup_v2 = c->cg.v2 ? strdup(c->cg.v2) : NULL;
	c->st->cgroup_v1_freezer = c->cg.v1_freezer ? strdup(c->cg.v1_freezer) : NULL;
	c->st->freezer_backend = strdup(c->m->freezer_backend ? c->m->freezer_backend : (c->cg.v2 ? "v2" : "v1"));
	c->st->pid = pid;
	(void)cryo_pid_start_time(pid, &c->st->pid_start_time);
	c->st->created = (int64_t)time(NULL);
	c->st->status = CRYO_STATUS_RUNNING;
	if (!c->st->bundle || !c->st->rootfs || !c->st->cgroup_path || !c->st->freezer_backend) {
		r = cryo_error_set(err, ENOMEM, "restore");
		goto kill;
	}
	/* a container checkpointed while paused comes back paused */
	if (c->m->freezer_state && strcmp(c->m->freezer_state, "FROZEN") == 0) {
		struct cryo_freezer *f = NULL;

		r = cryo_freezer_open_for(c->st->freezer_backend, c->st->cgroup_v2, c->st->cgroup_v1_freezer, &f, err);
		if (r >= 0)
			r = cryo_freezer_freeze(f, 5000, 0, err);
		cryo_freezer_close(f);
		if (r < 0)
			goto kill;
		c->st->status = CRYO_STATUS_PAUSED;
	}
	r = cryo_state_save(o->root, c->st, err);
	if (r < 0)
		goto kill;
	if (o->pid_file) {
		r = write_pid_file(o->pid_file, pid, err);
		if (r < 0)
			goto kill;
	}
	*ret_pid = pid;
	return 0;
kill:
	kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	return r;
}

/* After a restore that worked: CRIU's log moves into the state dir, next to the dump's. */
static void keep_restore_log(const struct cryo_restore_opts *o, const char *work)
{
	_cleanup_free_ char *dst = NULL, *src = NULL;
	_cleanup_close_ int rootfd = -1;

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
	rootfd = open(o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd >= 0) {
		free(src);
		if (asprintf(&src, RESTORE_WORK_DIR "/%s", o->id) >= 0)
			(void)cryo_rm_rf_at(rootfd, src);
	}
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

int cryo_restore(const struct cryo_restore_opts *o, pid_t *ret_pid, int *ret_status, struct cryo_error *err)
{
	struct rctx c = { .lock_fd = -1 };
	pid_t pid = 0;
	int r, status;

	r = cryo_validate_id(o->id, err);
	if (r < 0)
		return r;
	r = do_restore(o, &c, &pid, err);
	if (r < 0) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (c.cgroup_created && cryo_cgroup_destroy(c.cgrel, 5000, &e) < 0)
			cryo_warn("restore `%s`: undo: %s", o->id, e.msg);
		cryo_error_clear(&e);
		if (c.state_created && cryo_state_remove_dir(o->root, o->id, &e) < 0)
			cryo_warn("restore `%s`: undo: %s", o->id, e.msg);
		cryo_error_clear(&e);
		rctx_done(&c);
		return cryo_error_prefix(err, "restore `%s`", o->id);
	}
	/* poststart: a failure is reported but the container stays (as for start) */
	if (run_poststart(o, c.spec, err) < 0) {
		cryo_warn("restore `%s`: %s", o->id, err->msg);
		cryo_error_clear(err);
	}
	keep_restore_log(o, c.work);
	if (c.lock_fd >= 0)
		close(c.lock_fd);
	c.lock_fd = -1;
	rctx_done(&c);
	*ret_pid = pid;
	if (o->detach || !ret_status)
		return 0;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cryo_error_set(err, errno, "restore `%s`: wait for the container", o->id);
	*ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 0;
}
