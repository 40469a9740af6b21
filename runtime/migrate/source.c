// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>

#include "cgroup.h"
#include "checkpoint.h"
#include "container.h"
#include "freezer.h"
#include "hold.h"
#include "log.h"
#include "migrate.h"
#include "migrate-lazy.h"
#include "mountinfo.h"
#include "network.h"
#include "snapshot.h"
#include "spec.h"
#include "step.h"
#include "state.h"
#include "util.h"
#include "version.h"
#include "protocol.h"
#include "source.h"

#define DEFAULT_FREEZE_DEADLINE_MS 300000


/* How long the container may stay frozen here (and its link down) before the watchdogs undo it. */
static int64_t freeze_deadline(const struct mctx *c)
{
	return c->o->freeze_deadline_ms > 0 ? c->o->freeze_deadline_ms : DEFAULT_FREEZE_DEADLINE_MS;
}

static int64_t mtimeout(const struct mctx *c)
{
	return c->o->timeout_ms > 0 ? c->o->timeout_ms : CRYO_MIGRATE_TIMEOUT_MS;
}

/* A frame from the destination; its failure report marks it as the one that failed. */
static int mrecv(struct mctx *c, Cryo__MigrateFrame__BodyCase want, Cryo__MigrateFrame **ret, struct cryo_error *err)
{
	int r = cryo_migrate_recv_expect(c->t, mtimeout(c), want, &c->res->peer_phase, ret, err);

	if (r < 0 && c->res->peer_phase)
		c->peer_failed = true;
	return r;
}

/*
 * While we only send (checkpoint, transfer), the destination may have
 * failed and said so: read its report before sending into a closed
 * connection. timeout_ms bounds the wait for a frame that started.
 */
int cryo_migrate_check_peer(struct mctx *c, int64_t timeout_ms, struct cryo_error *err)
{
	Cryo__MigrateFrame *f = NULL;
	int r;

	if (!c->t || !cryo_transport_pending(c->t))
		return 0;
	r = cryo_transport_recv(c->t, timeout_ms, &f, err);
	if (r == -ETIMEDOUT) {
		cryo_error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	if (f->body_case == CRYO__MIGRATE_FRAME__BODY_RESULT && f->result->status < 0) {
		c->peer_failed = true;
		free(c->res->peer_phase);
		c->res->peer_phase = f->result->phase && f->result->phase[0] ? strdup(f->result->phase) : NULL;
		r = cryo_error_setx(err, f->result->status > -4096 ? -f->result->status : EPROTO,
				    "%s failed at %s: %s", c->t->peer, c->res->peer_phase ? c->res->peer_phase : "?",
				    f->result->message ? f->result->message : "");
	} else {
		r = cryo_error_setx(err, EBADMSG, "%s sent an unexpected frame (kind %d)", c->t->peer, (int)f->body_case);
	}
	cryo_migrate_frame_free(f);
	return r;
}

static int step_connect(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	int r;

	r = cryo_dest_parse(c->o->dest, &c->dest, err);
	if (r < 0)
		return r;
	if (c->dest.kind == CRYO_DEST_TLS)
		r = cryo_transport_tls_connect(&c->dest, &c->o->tls, mtimeout(c), &c->t, err);
	else
		r = cryo_transport_ssh(&c->dest, c->o->ssh, c->o->remote_cmd ? c->o->remote_cmd : "cryo receive --stdio",
				       &c->t, err);
	if (r < 0)
		return r;
	c->t->io_timeout_ms = mtimeout(c);
	return 0;
}


static void undo_connect(void *ctx)
{
	struct mctx *c = ctx;

	cryo_migrate_tell_peer_and_close(&c->t, c->peer_failed, &c->fail, c->res->failed_phase, "migrate");
}

static uint64_t read_u64_file(const char *path)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	uint64_t v = 0;

	if (cryo_read_file_at(AT_FDCWD, path, 64, &buf, &len) < 0)
		return 0;
	if (sscanf(buf, "%" SCNu64, &v) != 1)
		return 0;
	return v;
}

/*
 * What CRIU will write of the tasks' memory: each task's anonymous pages
 * (smaps_rollup), counted per task as CRIU dumps them, pages a fork shares
 * copy-on-write included (the cgroup's memory use counts those once).
 */
static uint64_t tasks_anon_bytes(const char *cgroup_rel)
{
	_cleanup_free_ pid_t *pids = NULL;
	uint64_t total = 0;
	size_t n = 0, i;

	if (!cgroup_rel || cryo_cgroup_pids(cgroup_rel, &pids, &n, NULL) < 0)
		return 0;
	for (i = 0; i < n; i++) {
		_cleanup_free_ char *path = NULL, *rollup = NULL;
		size_t rlen = 0;
		const char *a;
		unsigned long long kb;

		if (asprintf(&path, "/proc/%d/smaps_rollup", (int)pids[i]) < 0 ||
		    cryo_read_file_at(AT_FDCWD, path, 1 << 16, &rollup, &rlen) < 0)
			continue;
		a = strstr(rollup, "\nAnonymous:");
		if (a && sscanf(a + 1, "Anonymous: %llu kB", &kb) == 1)
			total += (uint64_t)kb << 10;
	}
	return total;
}

/* The image is about the tasks' memory plus, for an own fs, its image file. */
static void estimate_need(struct mctx *c, const struct cryo_mount *mnt, bool own_fs)
{
	_cleanup_free_ char *p = NULL, *backing = NULL;
	struct stat s;
	uint64_t mem;

	mem = tasks_anon_bytes(c->st->cgroup_path);
	if (!mem && c->st->cgroup_v2 && asprintf(&p, "%s/memory.current", c->st->cgroup_v2) >= 0)
		mem = read_u64_file(p);
	free(p);
	p = NULL;
	if (!mem && c->st->cgroup_path && asprintf(&p, "/sys/fs/cgroup/memory/%s/memory.usage_in_bytes",
						     c->st->cgroup_path) >= 0)
		mem = read_u64_file(p);
	c->res->local.need_bytes = mem;
	if (own_fs && mnt->source && cryo_loop_backing_file(mnt->source, &backing, NULL) == 0 &&
	    stat(backing, &s) == 0)
		c->res->local.need_bytes += (uint64_t)s.st_blocks * 512;
}

/*
 * What can't follow the container to another host, said before anything
 * is frozen. A terminal: its pty master is held by a console socket here,
 * and the destination restores detached, without one (it would refuse it
 * at its restore step, after the transfer). A seccomp notify agent:
 * checkpoint's own refusal.
 */
static int refuse_unmovable(struct mctx *c, struct cryo_error *err)
{
	_cleanup_(cryo_spec_freep) struct cryo_spec *spec = NULL;
	int r;

	r = cryo_spec_load(c->st->bundle, &spec, err);
	if (r < 0)
		return cryo_error_prefix(err, "the container's bundle");
	if (spec->terminal)
		return cryo_error_setx(err, EOPNOTSUPP,
				       "the container has a terminal (process.terminal): its console can't follow it to another host");
	/* a connection's local address must go where the container goes: cryo's veth does, the host's address does not */
	if (c->o->criu.tcp_established) {
		if (!spec->network.present || spec->namespaces[CRYO_NS_NET].path)
			return cryo_error_setx(err, EOPNOTSUPP,
					       "--tcp-established: the connections' address must move with the container, which needs a network namespace of its own with cryo's veth (annotation " CRYO_NETWORK_ANNOTATION ")");
		/* the lazy dump is CRIU's command line: no post-dump notification to lock the link at (step_net_lock) */
		if (c->o->lazy)
			return cryo_error_setx(err, EOPNOTSUPP, "--tcp-established and --lazy: not supported together");
		c->net = spec->network;
	}
	return cryo_checkpoint_refuse_spec(spec, err);
}

static int step_preflight(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	struct cryo_migrate_facts *lf = &c->res->local;
	enum cryo_freezer_state fs;
	struct cryo_mount mnt = { 0 };
	Cryo__MigrateFrame *f = NULL;
	bool own_fs = false, loop = false;
	int r;

	r = cryo_container_load(c->o->root, c->o->id, &c->st, err);
	if (r < 0)
		return r;
	if (c->st->status != CRYO_STATUS_RUNNING && c->st->status != CRYO_STATUS_PAUSED)
		return cryo_error_setx(err, EINVAL, "container is %s: only a running or paused container migrates",
				       cryo_status_names[c->st->status]);
	r = refuse_unmovable(c, err);
	if (r < 0)
		return r;
	r = cryo_freezer_open_for(c->st->freezer_backend, c->st->cgroup_v2, c->st->cgroup_v1_freezer, &c->fz, err);
	if (r < 0)
		return r;
	r = cryo_freezer_get_state(c->fz, &fs, err);
	if (r < 0)
		return r;
	c->was_paused = fs == CRYO_FREEZER_FROZEN;
	if (fs == CRYO_FREEZER_FREEZING)
		return cryo_error_setx(err, EBUSY, "container is FREEZING: thaw it or let the freeze finish first");

	cryo_migrate_local_facts(lf, c->o->dry_run);
	snprintf(lf->freezer_backend, sizeof(lf->freezer_backend), "%s",
		 cryo_freezer_backend_names[cryo_freezer_backend_of(c->fz)]);
	if (cryo_mountinfo_find(c->st->rootfs, &mnt, NULL) == 0) {
		own_fs = strcmp(mnt.mountpoint, c->st->rootfs) == 0 && strcmp(mnt.root, "/") == 0;
		loop = own_fs && mnt.source && strncmp(mnt.source, "/dev/loop", 9) == 0;
	}
	snprintf(lf->rootfs_kind, sizeof(lf->rootfs_kind), "%s", loop ? "image" : "dir");
	estimate_need(c, &mnt, own_fs);
	cryo_mount_done(&mnt);
	if (!lf->criu_version[0])
		return cryo_error_setx(err, ENOENT, "no working CRIU on this host");
	if (lf->criu_checked && !lf->criu_check_ok)
		return cryo_error_setx(err, EOPNOTSUPP, "`criu check` fails on this host (see `cryo check`)");
	if (c->o->pre_copy && !lf->soft_dirty)
		return cryo_error_setx(err, EOPNOTSUPP,
				       "--pre-copy needs the kernel to track dirty memory (CONFIG_MEM_SOFT_DIRTY), which this one does not");
	if (c->o->lazy) {
		r = cryo_lazy_preflight(c->o->root, lf, err);
		if (r < 0)
			return r;
	}

	r = cryo_migrate_send_hello(c->t, lf, c->o->id, c->o->dry_run, c->was_paused, err);
	if (r < 0)
		return r;
	r = mrecv(c, CRYO__MIGRATE_FRAME__BODY_HELLO, &f, err);
	if (r < 0)
		return r;
	if (f->hello->protocol_version != CRYO_MIGRATE_PROTOCOL_VERSION) {
		r = cryo_error_setx(err, EPROTO, "the destination speaks protocol %u, we speak %u",
				    f->hello->protocol_version, (unsigned)CRYO_MIGRATE_PROTOCOL_VERSION);
		cryo_migrate_frame_free(f);
		return r;
	}
	cryo_migrate_hello_to_facts(f->hello, &c->res->remote);
	cryo_migrate_frame_free(f);
	f = NULL;
	/* the destination's verdict on what it was told */
	r = mrecv(c, CRYO__MIGRATE_FRAME__BODY_RESULT, &f, err);
	if (r < 0)
		return r;
	if (f->result->status < 0) {
		c->peer_failed = true;
		r = cryo_error_setx(err, -f->result->status, "the destination refuses: %s",
				    f->result->message ? f->result->message : "");
		cryo_migrate_frame_free(f);
		return r;
	}
	cryo_migrate_frame_free(f);
	if (strcmp(c->res->remote.criu_version, lf->criu_version) != 0)
		cryo_warn("migrate `%s`: CRIU %s here, %s there", c->o->id, lf->criu_version,
			  c->res->remote.criu_version);
	if (strcmp(c->res->remote.kernel, lf->kernel) != 0)
		cryo_debug("migrate `%s`: kernel %s here, %s there", c->o->id, lf->kernel, c->res->remote.kernel);
	if (c->o->dry_run) {
		c->res->dry_run_ready = true;
		c->ph.step = NULL; /* the dry run ends here */
	}
	return 0;
}

/*
 * Freeze with a hold: if cryo dies or the deadline passes before the
 * commit, the watchdog thaws the container, which is how it was. A
 * container the user had paused is left as it is (no hold: it stays
 * paused whatever happens).
 */
static int step_freeze(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	int64_t deadline = freeze_deadline(c);
	unsigned flags = cryo_freezer_backend_of(c->fz) == CRYO_FREEZER_V1 ? CRYO_FREEZER_THAW_RETRY : 0;
	int r;

	if (c->was_paused) {
		c->frozen_at = cryo_now_us();
		return 0;
	}
	/*
	 * A journal hold, not the kmod's: before the commit the hold must be
	 * given up while the cgroup stays frozen, and the kmod can only end
	 * its hold by thawing. Taken before the freeze (its watchdog's start
	 * is not downtime: the container runs meanwhile).
	 */
	r = cryo_hold_acquire(c->o->root, c->o->id, CRYO_HOLD_CGROUP_THAW, cryo_freezer_path(c->fz),
			      cryo_freezer_backend_names[cryo_freezer_backend_of(c->fz)], (uint64_t)deadline,
			      CRYO_HOLD_UNDO_ON_EXIT, cryo_freezer_hold_undo, &c->hold, err);
	if (r < 0)
		return r;
	c->frozen_at = cryo_now_us();
	r = cryo_freezer_freeze(c->fz, CRYO_MIGRATE_FREEZE_TIMEOUT_MS, flags, err);
	if (r < 0)
		return r;
	c->frozen = true;
	return 0;
}

static void undo_freeze(void *ctx)
{
	struct mctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	/* in doubt or done: the container must not run here again */
	if (c->res->in_doubt || c->confirmed)
		return;
	/* --lazy: not while the copy there may still run */
	if (c->lazy_copy_may_run && !c->was_paused) {
		bool told = false;
		int64_t waited = cryo_lazy_source_fence(&c->t, c->peer_failed, &c->fail, c->res->failed_phase,
							 c->lazy_fence_ms, &told);

		if (!told)
			cryo_warn("migrate `%s`: the destination did not say its copy stopped: resuming here %lld ms after, when it stopped on its own (its --timeout and 5 s)",
				  c->o->id, (long long)waited);
	}
	if (!c->was_paused && c->fz && cryo_freezer_thaw(c->fz, CRYO_MIGRATE_THAW_TIMEOUT_MS, 0, &e) < 0) {
		cryo_warn("migrate `%s`: undo: thaw: %s", c->o->id, e.msg);
		c->res->resume_failed = true;
		cryo_error_clear(&e);
	}
	if (c->hold && cryo_hold_release(c->hold, &e) < 0 && e.status != ETIME)
		cryo_warn("migrate `%s`: undo: release the hold: %s", c->o->id, e.msg);
	cryo_error_clear(&e);
	c->hold = NULL;
	c->frozen = false;
}

/*
 * --tcp-established: the host end of the container's veth goes down once
 * CRIU has dumped the connections, and comes up again only if the source
 * resumes. CRIU, leaving the tasks alive, then takes their sockets out of
 * repair mode and its own lock off: from then on nothing of them may
 * reach the peer, neither an ACK of data the image lacks nor the FIN or
 * RST of their close when the tasks here are killed after the commit.
 * The copy there owns the connections. Not before the dump: CRIU would
 * save the container's routes with the "linkdown" flag of a peer that is
 * down, and the kernel refuses them so at the restore.
 *
 * This step finds the host end and takes a link-up hold, like the
 * freeze's: if we die or its deadline passes first, its watchdog brings
 * the link up. checkpoint takes the link down at CRIU's post-dump
 * notification (net_down).
 */
static int net_down(void *userdata)
{
	struct mctx *c = userdata;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (cryo_fault("migrate:net-down"))
		(void)cryo_error_setx(&e, EIO, "injected fault (CRYO_FAULT=migrate:net-down)");
	else
		(void)cryo_network_set_up(c->link_index, c->link_name, false, &e);
	if (!e.msg)
		return 0;
	cryo_warn("migrate `%s`: network lock: %s", c->o->id, e.msg);
	cryo_error_clear(&e);
	return -1;
}

static int step_net_lock(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	_cleanup_close_ int netns = -1;
	_cleanup_free_ char *name = NULL, *path = NULL;
	char index[16];
	int r;

	if (!c->o->criu.tcp_established)
		return 0;
	if (asprintf(&path, "/proc/%d/ns/net", (int)c->st->pid) < 0 || asprintf(&name, "%s@net", c->o->id) < 0)
		return cryo_error_set(err, ENOMEM, "network lock");
	netns = open(path, O_RDONLY | O_CLOEXEC);
	if (netns < 0)
		return cryo_error_set(err, errno, "network lock: open %s", path);
	r = cryo_network_host_end(&c->net, netns, &c->link_index, c->link_name, err);
	if (r < 0)
		return r;
	snprintf(index, sizeof(index), "%d", c->link_index);
	return cryo_hold_acquire(c->o->root, name, CRYO_HOLD_LINK_UP, c->link_name, index, (uint64_t)freeze_deadline(c),
				 CRYO_HOLD_UNDO_ON_EXIT, cryo_network_hold_undo, &c->link_hold, err);
}

static void undo_net_lock(void *ctx)
{
	struct mctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	/* in doubt or done: the connections are the copy's, the link stays down */
	if (c->res->in_doubt || c->confirmed || !c->link_hold)
		return;
	if (cryo_network_set_up(c->link_index, c->link_name, true, &e) < 0) {
		cryo_warn("migrate `%s`: undo: %s", c->o->id, e.msg);
		c->res->resume_failed = true;
		cryo_error_clear(&e);
	}
	if (cryo_hold_release(c->link_hold, &e) < 0 && e.status != ETIME)
		cryo_warn("migrate `%s`: undo: release the link hold: %s", c->o->id, e.msg);
	cryo_error_clear(&e);
	c->link_hold = NULL;
}


/* <root>/.migrate-out/<id>, empty: the images of this run (pre-copy rounds, the dump) */
static int prepare_out(struct mctx *c, struct cryo_error *err)
{
	_cleanup_free_ char *parent = NULL, *base = NULL;
	int r;

	if (c->image_made)
		return 0;
	if (asprintf(&parent, "%s/" CRYO_MIGRATE_OUT_DIR, c->o->root) < 0 ||
	    asprintf(&c->base_rel, CRYO_MIGRATE_OUT_DIR "/%s", c->o->id) < 0 ||
	    asprintf(&c->out_rel, "%s/img", c->base_rel) < 0 ||
	    asprintf(&c->out_dir, "%s/%s", c->o->root, c->out_rel) < 0 ||
	    asprintf(&base, "%s/%s", c->o->root, c->base_rel) < 0)
		return cryo_error_set(err, ENOMEM, "image dir");
	r = cryo_mkdir_p(parent, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", parent);
	/* a leftover of a migrate that was killed is ours to replace */
	(void)cryo_migrate_rm_under_root(c->o->root, c->base_rel);
	c->image_made = true;
	if (mkdir(base, 0700) < 0)
		return cryo_error_set(err, errno, "create `%s`", base);
	return cryo_migrate_hold_dir(c->o->root, c->o->id, "migrate-out", base, &c->out_hold, err);
}

static void undo_images(void *ctx)
{
	struct mctx *c = ctx;

	if (c->image_made && c->base_rel)
		(void)cryo_migrate_rm_under_root(c->o->root, c->base_rel);
	c->image_made = false;
	cryo_migrate_release_dir(&c->out_hold, c->o->id);
}


/* a round that sends more than this share of the last one: stop pre-copying */
#define PRECOPY_SHRINK_PERCENT 80

/*
 * --pre-copy N: memory pre-dumps while the container runs, each sent
 * at once; CRIU tracks the pages dirtied since the last one, so each
 * round sends less, and the final dump (frozen) only what is left.
 * The rounds stop early when the dirty set stops shrinking.
 */
static int step_precopy(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	uint64_t last_pages = 0;
	unsigned k;
	int r;

	if (!c->o->pre_copy)
		return 0;
	r = prepare_out(c, err);
	if (r < 0)
		return r;
	for (k = 1; k <= c->o->pre_copy; k++) {
		_cleanup_free_ char *dir = NULL, *parent = NULL;
		struct cryo_checkpoint_opts co = {
			.root = c->o->root,
			.id = c->o->id,
			.pre_dump = true,
			.criu = c->o->criu,
			.fs_freeze = CRYO_FS_FREEZE_AUTO,
			.sign_key = c->o->sign_key,
			.transient = true,
		};
		uint64_t sent = 0, pages = 0;

		if (asprintf(&dir, "%s/%s/pre%u", c->o->root, c->base_rel, k) < 0 ||
		    (k > 1 && asprintf(&parent, "../pre%u", k - 1) < 0))
			return cryo_error_set(err, ENOMEM, "pre-copy");
		co.image_path = dir;
		co.parent_path = parent;
		/* the destination waits meanwhile: a round of a large container outlasts its --timeout */
		(void)cryo_transport_keepalive_start(c->t, "precopy", NULL);
		r = cryo_checkpoint(&co, err);
		cryo_transport_keepalive_stop(c->t);
		if (r < 0)
			return cryo_error_prefix(err, "round %u", k);
		r = cryo_migrate_send_image(c, dir, k, NULL, &sent, &pages, err);
		if (r < 0)
			return cryo_error_prefix(err, "round %u", k);
		c->rounds = k;
		if (k == 1)
			c->res->first_round_pages = pages;
		c->res->precopy_rounds = k;
		c->res->precopy_bytes += sent;
		cryo_debug("migrate `%s`: pre-copy round %u: %" PRIu64 " bytes (%" PRIu64 " of pages)", c->o->id, k,
			   sent, pages);
		if (k > 1 && pages * 100 >= last_pages * PRECOPY_SHRINK_PERCENT)
			break;
		last_pages = pages;
	}
	return 0;
}

/*
 * The image of the frozen container. cryo_checkpoint() finds the cgroup
 * frozen (by us) and, with leave-running, leaves it so: the tasks are
 * all there for a resume, and nothing of them runs meanwhile. After a
 * pre-copy it holds only what changed since the last round.
 */
static int step_checkpoint(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	_cleanup_free_ char *parent = NULL;
	struct cryo_checkpoint_opts co = {
		.root = c->o->root,
		.id = c->o->id,
		.leave_running = true,
		.criu = c->o->criu,
		.fs_freeze = CRYO_FS_FREEZE_AUTO,
		.sign_key = c->o->sign_key,
		/* sent and removed: a syncfs would only wait for the disk (and every other writer of it) */
		.transient = true,
	};
	struct cryo_step_timings inner = { 0 };
	int r;

	r = prepare_out(c, err);
	if (r < 0)
		return r;
	if (c->rounds && asprintf(&parent, "../pre%u", c->rounds) < 0)
		return cryo_error_set(err, ENOMEM, "parent image");
	co.image_path = c->out_dir;
	co.parent_path = parent;
	co.ret_timings = &inner;
	if (c->link_hold) {
		co.post_dump = net_down;
		co.post_dump_data = c;
	}
	if (c->o->lazy) {
		r = cryo_lazy_source_port(&c->lazy, err);
		if (r < 0)
			return r;
		co.lazy_port = c->lazy.port;
		co.ret_lazy_dump = &c->lazy.dump;
	}
	/* its files go out as CRIU closes them, the rootfs snapshot first; the transfer step sends the rest */
	r = cryo_migrate_early_start(c, err);
	if (r < 0)
		return r;
	if (c->early) {
		co.on_file_closed = cryo_migrate_early_closed;
		co.on_file_closed_data = c->early;
	}
	(void)cryo_transport_keepalive_start(c->t, "checkpoint", NULL);
	r = cryo_checkpoint(&co, err);
	cryo_transport_keepalive_stop(c->t);
	cryo_step_timings_append(&c->timings, &inner);
	if (r < 0)
		(void)cryo_migrate_early_join(c, true, NULL);
	if (r < 0 || !c->o->lazy)
		return r;
	r = cryo_lazy_source_connect(&c->lazy, err);
	/*
	 * CRIU thaws the cgroup while it holds the tasks (ptrace) for its
	 * page server: frozen again, so that they stay stopped if CRIU dies
	 * while the copy runs there (CRIU leaves it as it found it: frozen).
	 */
	if (r >= 0)
		r = cryo_freezer_freeze(c->fz, CRYO_MIGRATE_FREEZE_TIMEOUT_MS,
					cryo_freezer_backend_of(c->fz) == CRYO_FREEZER_V1 ? CRYO_FREEZER_THAW_RETRY : 0, err);
	return r;
}

/* a failure after the checkpoint: the early sender stops, a lazy dump still serving ends (the tasks here stay whole) */
static void undo_checkpoint(void *ctx)
{
	(void)cryo_migrate_early_join(ctx, true, NULL);
	cryo_lazy_source_done(&((struct mctx *)ctx)->lazy);
}


static int step_transfer(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	int r;

	/* the early sender's last files first: the connection is one stream */
	r = cryo_migrate_early_join(c, false, err);
	if (r < 0)
		return r;
	cryo_migrate_early_sent(c, &c->res->early_bytes, &c->res->early_files);
	return cryo_migrate_send_image(c, c->out_dir, 0, c->early, &c->res->bytes, &c->res->pages_bytes, err);
}

/* The destination verifies, restores and keeps the container frozen; it says when. */
static int step_remote_restore(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	Cryo__MigrateFrame *f = NULL;
	int r;

	if (c->o->lazy) {
		/*
		 * From here the copy there may run (once its restore is done):
		 * this side resumes only once it stopped, and if we die, the
		 * hold's watchdog thaws only when it surely did.
		 */
		c->lazy_copy_may_run = true;
		c->lazy_fence_ms = cryo_lazy_fence_ms(c->res->remote.timeout_ms);
		if (c->hold) {
			r = cryo_hold_set_exit_delay(c->hold, c->lazy_fence_ms, err);
			if (r < 0)
				return r;
		}
		/* CRIU's restore there may pull pages already: served meanwhile */
		r = cryo_lazy_source_await_restore(&c->lazy, c->t, mtimeout(c), &c->peer_failed, &c->res->peer_phase, err);
		if (r >= 0) {
			/* it runs there (its memory still here) */
			c->running_at = cryo_now_us();
			c->res->downtime_us = (uint64_t)(c->running_at - c->frozen_at);
		}
		return r;
	}
	r = mrecv(c, CRYO__MIGRATE_FRAME__BODY_RESULT, &f, err);
	if (r < 0)
		return r;
	if (f->result->status < 0) {
		c->peer_failed = true;
		free(c->res->peer_phase);
		c->res->peer_phase = f->result->phase && f->result->phase[0] ? strdup(f->result->phase) : NULL;
		r = cryo_error_setx(err, -f->result->status, "destination: %s", f->result->message ? f->result->message : "");
	}
	cryo_migrate_frame_free(f);
	return r;
}

/* --lazy: serve the pages; the commit waits until the dump served every one */
static int step_pages(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;

	if (!c->o->lazy)
		return 0;
	return cryo_lazy_source_serve(&c->lazy, c->t, mtimeout(c), &c->peer_failed, &c->res->peer_phase,
				      &c->res->lazy_bytes, err);
}

/* Give up a hold while keeping its state change; ETIME if its watchdog undid it first. */
static int release_for_commit(struct cryo_hold **h, const char *lost, struct cryo_error *err)
{
	int r;

	if (!*h)
		return 0;
	r = cryo_hold_release(*h, err);
	*h = NULL;
	if (r == -ETIME)
		return cryo_error_setx(err, ETIME, "%s: not committing", lost);
	return r;
}

/*
 * The point of no return. The hold goes first: its watchdog must not
 * be able to thaw the container here once the destination may run it.
 * If it already did (the deadline passed), the source runs again and
 * the migration is called off.
 */
static int step_commit(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateCommit cm = CRYO__MIGRATE_COMMIT__INIT;
	int r;

	r = release_for_commit(&c->hold, "the freeze deadline passed and the container was thawed here", err);
	/* the link stays down from here: the connections go to the copy there */
	if (r >= 0)
		r = release_for_commit(&c->link_hold, "the link's deadline passed and its host end came up here", err);
	if (r < 0)
		return r;
	cm.go = true;
	cm.has_frozen_usec = cm.has_since_freeze_usec = 1;
	cm.since_freeze_usec = (uint64_t)(cryo_now_us() - c->frozen_at);
	cm.frozen_usec = c->o->lazy ? c->res->downtime_us : cm.since_freeze_usec;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_COMMIT;
	fr.commit = &cm;
	/* from here on, a silence means the destination may be running it */
	c->commit_sent = true;
	r = cryo_transport_send(c->t, &fr, err);
	if (r < 0 && r != -ETIMEDOUT) {
		/* the frame did not leave whole: the destination can't have committed */
		c->commit_sent = false;
	}
	return r;
}

static int step_confirm(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	Cryo__MigrateFrame *f = NULL;
	int r;

	r = mrecv(c, CRYO__MIGRATE_FRAME__BODY_RESULT, &f, err);
	if (r < 0)
		return r;
	if (f->result->status < 0) {
		/* it says it failed and removed what it made: resuming is right */
		c->peer_failed = true;
		c->commit_sent = false;
		free(c->res->peer_phase);
		c->res->peer_phase = f->result->phase && f->result->phase[0] ? strdup(f->result->phase) : NULL;
		r = cryo_error_setx(err, -f->result->status, "destination: %s", f->result->message ? f->result->message : "");
		cryo_migrate_frame_free(f);
		return r;
	}
	c->confirmed = true;
	if (!c->o->lazy) {
		c->running_at = cryo_now_us();
		c->res->downtime_us = (uint64_t)(c->running_at - c->frozen_at);
	}
	/* where the destination's part of the downtime went */
	cryo_migrate_timeline_from_result(&c->res->steps, f->result);
	cryo_migrate_frame_free(f);
	return 0;
}

/* It runs there: end it here (killed while frozen, nothing runs after the dump). */
static int step_stop(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	int r;

	r = cryo_freezer_kill_all(c->fz, SIGKILL, CRYO_MIGRATE_THAW_TIMEOUT_MS, err);
	if (r < 0)
		return r;
	/* empty now: a cgroup left frozen would freeze whatever comes next */
	r = cryo_freezer_thaw(c->fz, CRYO_MIGRATE_THAW_TIMEOUT_MS, 0, err);
	if (r < 0)
		return r;
	/*
	 * --tcp-established: the killed tasks' sockets live on, orphaned, and
	 * keep the netns (and the pair) for minutes while they retry their
	 * FIN into the link that is down. The pair goes now: the host name is
	 * free and nothing of them ever leaves.
	 */
	if (c->link_index > 0) {
		struct cryo_network_link link = { .host_ifindex = c->link_index };
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_network_undo(&link, &e) < 0)
			cryo_error_warn_clear(&e, "migrate `%s`: delete the veth `%s`", c->o->id, c->link_name);
	}
	c->st->status = CRYO_STATUS_STOPPED;
	r = cryo_state_save(c->o->root, c->st, err);
	if (r < 0)
		return r;
	undo_images(c);
	return 0;
}

static const struct cryo_step migrate_steps[] = {
	{ "connect", step_connect, undo_connect },
	{ "preflight", step_preflight, undo_images },
	{ "precopy", step_precopy, NULL },
	{ "freeze", step_freeze, undo_freeze },
	{ "net-lock", step_net_lock, undo_net_lock },
	{ "checkpoint", step_checkpoint, undo_checkpoint },
	{ "transfer", step_transfer, NULL },
	{ "restore", step_remote_restore, NULL },
	{ "pages", step_pages, NULL },
	{ "commit", step_commit, NULL },
	{ "confirm", step_confirm, NULL },
	{ "stop", step_stop, NULL },
};

void cryo_migrate_result_done(struct cryo_migrate_result *r)
{
	free(r->peer_phase);
	r->peer_phase = NULL;
}

static void migrate_failed(void *ctx, size_t failed, struct cryo_error *err)
{
	struct mctx *c = ctx;

	/* the connection broke under us: the destination may have said why */
	if (!c->peer_failed && c->t && (err->status == EPIPE || err->status == ECONNRESET)) {
		struct cryo_error pe = CRYO_ERROR_INIT;

		if (cryo_migrate_check_peer(c, 1000, &pe) < 0 && c->peer_failed)
			cryo_error_move(err, &pe);
		cryo_error_clear(&pe);
	}

	c->res->failed_phase = migrate_steps[failed].name;
	/* a commit sent and never answered: the destination may run it */
	if (c->commit_sent && !c->confirmed && !c->peer_failed) {
		c->res->in_doubt = true;
		cryo_warn("migrate `%s`: the commit was sent but not confirmed: the container is left PAUSED here; "
			  "check the destination, then `cryo resume %s` (not running there) or `cryo delete -f %s` "
			  "(running there)", c->o->id, c->o->id, c->o->id);
	}
	c->res->stop_failed = c->confirmed;
	/* for the abort frame undo_connect sends (none once it runs there) */
	if (c->confirmed)
		c->peer_failed = true;
	c->fail.status = err->status;
	c->fail.msg = err->msg ? strdup(err->msg) : NULL;
}

const struct cryo_step_table cryo_migrate_step_table = {
	.name = "migrate",
	.steps = migrate_steps,
	.n_steps = ARRAY_SIZE(migrate_steps),
	.faults_qualified = true,
	.on_step = cryo_migrate_phase_on_step,
	.finished = cryo_migrate_phase_finished,
	.on_fail = migrate_failed,
};

int cryo_migrate(const struct cryo_migrate_opts *o, struct cryo_migrate_result *res, struct cryo_error *err)
{
	struct mctx c = {
		.ph = { .side = "migrate", .progress = o->progress, .userdata = o->userdata },
		.o = o,
		.res = res,
	};
	int r;

	memset(res, 0, sizeof(*res));
	cryo_lazy_source_init(&c.lazy);
	r = cryo_validate_id(o->id, err);
	if (r < 0)
		return r;
	c.t0 = cryo_now_us();
	c.timings.t0 = c.t0;
	r = cryo_step_run(&cryo_migrate_step_table, &c, &c.timings, err);
	/* ours, from the freeze until the copy there ran (the destination's came with its confirmation) */
	if (c.frozen_at)
		cryo_migrate_timeline_add(&res->steps, false, &c.timings, c.frozen_at, c.running_at);
	if (r < 0 && c.st && res->in_doubt) {
		c.st->status = CRYO_STATUS_PAUSED;
		(void)cryo_state_save(o->root, c.st, NULL);
	}
	res->total_us = (uint64_t)(cryo_now_us() - c.t0);
	/* (joined already by the transfer step or an undo: the connection is not in use) */
	cryo_migrate_early_free(&c);
	if (c.t)
		cryo_transport_close(c.t);
	if (c.hold)
		cryo_hold_free(c.hold);
	cryo_lazy_source_done(&c.lazy);
	cryo_migrate_release_dir(&c.out_hold, o->id);
	cryo_freezer_close(c.fz);
	cryo_state_free(c.st);
	cryo_dest_done(&c.dest);
	free(c.out_dir);
	free(c.out_rel);
	free(c.base_rel);
	cryo_error_clear(&c.fail);
	if (r < 0)
		return cryo_error_prefix(err, "migrate `%s`", o->id);
	return 0;
}

