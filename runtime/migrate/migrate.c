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
#include "manifest.h"
#include "migrate.h"
#include "migrate-lazy.h"
#include "mountinfo.h"
#include "network.h"
#include "restore.h"
#include "snapshot.h"
#include "sign.h"
#include "spec.h"
#include "step.h"
#include "state.h"
#include "util.h"
#include "version.h"

#define DEFAULT_TIMEOUT_MS 120000
#define DEFAULT_FREEZE_DEADLINE_MS 300000
#define FREEZE_TIMEOUT_MS 5000
#define THAW_TIMEOUT_MS 5000
/* below this much free space (after the image) the destination refuses */
#define FREE_RESERVE_BYTES (64ULL << 20)
#define PROGRESS_EVERY_US 200000

/* --- facts both ends exchange ------------------------------------------ */

/*
 * CONFIG_MEM_SOFT_DIRTY, as CRIU finds it: a page written after "4" to
 * clear_refs must show the soft-dirty bit (55) in pagemap. (Without it
 * the write to clear_refs may still succeed: that proves nothing.)
 */
static bool kernel_has_soft_dirty(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *page;
	uint64_t pme = 0;
	int cfd, pfd;
	bool ok = false;

	page = mmap(NULL, (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return false;
	page[0] = 1;
	cfd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	pfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (cfd >= 0 && pfd >= 0 && write(cfd, "4", 1) == 1) {
		page[0] = 2;
		if (pread(pfd, &pme, sizeof(pme), (off_t)((uintptr_t)page / (uintptr_t)psz * sizeof(pme))) ==
		    (ssize_t)sizeof(pme))
			ok = pme & (1ULL << 55);
	}
	if (cfd >= 0)
		close(cfd);
	if (pfd >= 0)
		close(pfd);
	munmap((void *)page, (size_t)psz);
	return ok;
}

static bool kernel_has_userfaultfd(void)
{
#ifdef SYS_userfaultfd
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0) {
		close(fd);
		return true;
	}
	/* EPERM: there, but not for us unprivileged (vm.unprivileged_userfaultfd) */
	return errno == EPERM || access("/dev/userfaultfd", F_OK) == 0;
#else
	return false;
#endif
}

static const char *cgroup_layout(void)
{
	struct stat st;
	bool v2 = stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0;
	bool unified = stat("/sys/fs/cgroup/unified/cgroup.controllers", &st) == 0;
	bool v1 = stat("/sys/fs/cgroup/freezer", &st) == 0;

	if (v2)
		return "v2";
	if (v1 && unified)
		return "hybrid";
	return v1 ? "v1" : "none";
}

static void local_facts(struct cryo_migrate_facts *f, bool criu_check)
{
	struct cryo_criu_version v;
	struct utsname u;

	if (uname(&u) == 0)
		snprintf(f->kernel, sizeof(f->kernel), "%s", u.release);
	if (cryo_criu_get_version(&v, NULL) == 0)
		snprintf(f->criu_version, sizeof(f->criu_version), "%u.%u.%u", v.major, v.minor, v.sublevel);
	snprintf(f->cryo_version, sizeof(f->cryo_version), "%s", CRYO_VERSION);
	snprintf(f->cgroup_layout, sizeof(f->cgroup_layout), "%s", cgroup_layout());
	f->soft_dirty = kernel_has_soft_dirty();
	f->userfaultfd = kernel_has_userfaultfd();
	if (criu_check) {
		struct cryo_criu_host h = { 0 };

		f->criu_checked = true;
		f->criu_check_ok = cryo_criu_check_host(&h, NULL) == 0 && h.found && h.check_ok;
		cryo_criu_host_done(&h);
	}
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int facts_to_hello(const struct cryo_migrate_facts *f, const char *id, bool dry_run, bool was_paused,
			  Cryo__MigrateHello *h)
{
	cryo__migrate_hello__init(h);
	h->protocol_version = CRYO_MIGRATE_PROTOCOL_VERSION;
	h->container_id = dup_or_empty(id);
	h->kernel_release = dup_or_empty(f->kernel);
	h->criu_version = dup_or_empty(f->criu_version);
	h->cryo_version = dup_or_empty(f->cryo_version);
	h->cgroup_layout = dup_or_empty(f->cgroup_layout);
	h->freezer_backend = dup_or_empty(f->freezer_backend);
	h->rootfs_kind = dup_or_empty(f->rootfs_kind);
	h->has_need_bytes = h->has_free_bytes = h->has_dry_run = h->has_was_paused = 1;
	h->need_bytes = f->need_bytes;
	h->free_bytes = f->free_bytes;
	h->dry_run = dry_run;
	h->was_paused = was_paused;
	h->has_soft_dirty = h->has_userfaultfd = h->has_lazy = h->has_digest = 1;
	h->lazy = f->lazy;
	/* the source's manifests (cryo_manifest_new); the destination hashes arrivals with it */
	h->digest = CRYO_DIGEST_DEFAULT;
	h->soft_dirty = f->soft_dirty;
	h->userfaultfd = f->userfaultfd;
	if (f->criu_checked) {
		h->has_criu_check = 1;
		h->criu_check = f->criu_check_ok;
	}
	if (!h->container_id || !h->kernel_release || !h->criu_version || !h->cryo_version || !h->cgroup_layout ||
	    !h->freezer_backend || !h->rootfs_kind)
		return -ENOMEM;
	return 0;
}

static void hello_strings_free(Cryo__MigrateHello *h)
{
	free(h->container_id);
	free(h->kernel_release);
	free(h->criu_version);
	free(h->cryo_version);
	free(h->cgroup_layout);
	free(h->freezer_backend);
	free(h->rootfs_kind);
}

static void hello_to_facts(const Cryo__MigrateHello *h, struct cryo_migrate_facts *f)
{
	snprintf(f->kernel, sizeof(f->kernel), "%s", h->kernel_release ? h->kernel_release : "");
	snprintf(f->criu_version, sizeof(f->criu_version), "%s", h->criu_version ? h->criu_version : "");
	snprintf(f->cryo_version, sizeof(f->cryo_version), "%s", h->cryo_version ? h->cryo_version : "");
	snprintf(f->cgroup_layout, sizeof(f->cgroup_layout), "%s", h->cgroup_layout ? h->cgroup_layout : "");
	snprintf(f->freezer_backend, sizeof(f->freezer_backend), "%s", h->freezer_backend ? h->freezer_backend : "");
	snprintf(f->rootfs_kind, sizeof(f->rootfs_kind), "%s", h->rootfs_kind ? h->rootfs_kind : "");
	f->need_bytes = h->need_bytes;
	f->free_bytes = h->free_bytes;
	f->soft_dirty = h->soft_dirty;
	f->userfaultfd = h->userfaultfd;
	f->lazy = h->lazy;
	f->criu_checked = h->has_criu_check;
	f->criu_check_ok = h->criu_check;
}

static int send_hello(struct cryo_transport *t, const struct cryo_migrate_facts *f, const char *id, bool dry_run,
		      bool was_paused, struct cryo_error *err)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateHello h;
	int r;

	r = facts_to_hello(f, id, dry_run, was_paused, &h);
	if (r < 0) {
		hello_strings_free(&h);
		return cryo_error_set(err, ENOMEM, "hello");
	}
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_HELLO;
	fr.hello = &h;
	r = cryo_transport_send(t, &fr, err);
	hello_strings_free(&h);
	return r;
}

static int send_result(struct cryo_transport *t, int status, const char *phase, const char *msg, uint64_t downtime_us,
		       struct cryo_error *err)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateResult res = CRYO__MIGRATE_RESULT__INIT;
	char m[CRYO_MIGRATE_STRING_MAX];

	snprintf(m, sizeof(m), "%s", msg ? msg : "");
	res.status = status;
	res.phase = (char *)(phase ? phase : "");
	res.message = m;
	if (downtime_us) {
		res.has_downtime_usec = 1;
		res.downtime_usec = downtime_us;
	}
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_RESULT;
	fr.result = &res;
	return cryo_transport_send(t, &fr, err);
}

/* Receive a frame of kind want; a Result with status < 0 is the peer's failure. */
static int recv_expect(struct cryo_transport *t, int64_t timeout_ms, Cryo__MigrateFrame__BodyCase want,
		       char **ret_peer_phase, Cryo__MigrateFrame **ret, struct cryo_error *err)
{
	Cryo__MigrateFrame *f = NULL;
	int r;

	r = cryo_transport_recv(t, timeout_ms, &f, err);
	if (r < 0)
		return r;
	if (f->body_case == CRYO__MIGRATE_FRAME__BODY_RESULT && f->result->status < 0 &&
	    want != CRYO__MIGRATE_FRAME__BODY_RESULT) {
		int st = f->result->status < -4095 ? EPROTO : -f->result->status;

		if (ret_peer_phase && f->result->phase && f->result->phase[0])
			*ret_peer_phase = strdup(f->result->phase);
		r = cryo_error_setx(err, st, "%s failed at %s: %s", t->peer,
				    f->result->phase && f->result->phase[0] ? f->result->phase : "?",
				    f->result->message ? f->result->message : "");
		cryo_migrate_frame_free(f);
		return r;
	}
	if (f->body_case != want) {
		r = cryo_error_setx(err, EBADMSG, "%s sent an unexpected frame (kind %d, expected %d)", t->peer,
				    (int)f->body_case, (int)want);
		cryo_migrate_frame_free(f);
		return r;
	}
	*ret = f;
	return 0;
}

/* --- the source: cryo migrate ------------------------------------------ */

/*
 * Where a run is, for progress reports: the first member of both sides'
 * contexts, so the step table hooks serve both.
 */
struct phase {
	const char *side;        /* "migrate" / "receive" */
	const char *step;        /* the step running; NULL ends the table early (dry run) */
	int64_t start;
	cryo_migrate_progress_fn progress;
	void *userdata;
};

static void phase_report(const struct phase *ph, bool done, int64_t usec, uint64_t bytes, uint64_t total)
{
	struct cryo_migrate_progress p = {
		.side = ph->side, .phase = ph->step, .phase_done = done, .bytes = bytes, .total = total,
		.phase_us = done ? usec : cryo_now_us() - ph->start,
	};

	if (ph->progress)
		ph->progress(&p, ph->userdata);
}

/* bytes of total moved in the step running */
static void phase_progress(const struct phase *ph, uint64_t bytes, uint64_t total)
{
	phase_report(ph, false, 0, bytes, total);
}

static void phase_on_step(void *ctx, const char *step, bool done, int64_t usec)
{
	struct phase *ph = ctx;

	ph->step = step;
	if (!done)
		ph->start = cryo_now_us();
	phase_report(ph, done, usec, 0, 0);
}

static bool phase_finished(void *ctx)
{
	return !((const struct phase *)ctx)->step;
}

struct early;

struct mctx {
	struct phase ph;         /* first: the table hooks take the context as a struct phase */
	const struct cryo_migrate_opts *o;
	struct cryo_migrate_result *res;
	struct cryo_dest dest;
	struct cryo_transport *t;
	struct cryo_state *st;
	struct cryo_freezer *fz;
	struct cryo_hold *hold;
	bool was_paused, frozen;
	bool image_made;
	bool commit_sent, confirmed, peer_failed;
	int64_t frozen_at, t0;
	char *base_rel;          /* .migrate-out/<id>: every image of this run */
	char *out_dir;           /* <root>/.migrate-out/<id>/img: the final dump */
	char *out_rel;           /* .migrate-out/<id>/img */
	unsigned rounds;         /* pre-copy rounds sent: pre1 .. pre<rounds> */
	struct cryo_hold *out_hold; /* journals .migrate-out/<id>: `cryo recover` removes it if we die */
	struct cryo_error fail;  /* the error that failed the run, for the abort frame */
	struct early *early;     /* sends the final dump's files while CRIU writes it */
	struct cryo_lazy_source lazy; /* --lazy: the dump serving the pages */
	/* --tcp-established: the container's veth, its host end held down (step_net_lock) */
	struct cryo_network_spec net;
	struct cryo_hold *link_hold;
	int link_index;
	char link_name[16];
};

/* How long the container may stay frozen here (and its link down) before the watchdogs undo it. */
static int64_t freeze_deadline(const struct mctx *c)
{
	return c->o->freeze_deadline_ms > 0 ? c->o->freeze_deadline_ms : DEFAULT_FREEZE_DEADLINE_MS;
}

static int64_t mtimeout(const struct mctx *c)
{
	return c->o->timeout_ms > 0 ? c->o->timeout_ms : DEFAULT_TIMEOUT_MS;
}

/* A frame from the destination; its failure report marks it as the one that failed. */
static int mrecv(struct mctx *c, Cryo__MigrateFrame__BodyCase want, Cryo__MigrateFrame **ret, struct cryo_error *err)
{
	int r = recv_expect(c->t, mtimeout(c), want, &c->res->peer_phase, ret, err);

	if (r < 0 && c->res->peer_phase)
		c->peer_failed = true;
	return r;
}

/*
 * While we only send (checkpoint, transfer), the destination may have
 * failed and said so: read its report before sending into a closed
 * connection. timeout_ms bounds the wait for a frame that started.
 */
static int check_peer(struct mctx *c, int64_t timeout_ms, struct cryo_error *err)
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

/*
 * Both ends, before closing after a failure: tell the peer which phase
 * failed and why (unless the failure was the peer's own).
 */
static void tell_peer_and_close(struct cryo_transport **t, bool peer_failed, const struct cryo_error *fail,
				const char *phase, const char *who)
{
	if (*t && !peer_failed && fail->msg) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (send_result(*t, -(fail->status ? fail->status : EIO), phase, fail->msg, 0, &e) < 0)
			cryo_debug("%s: could not tell the peer: %s", who, e.msg);
		cryo_error_clear(&e);
	}
	cryo_transport_close(*t);
	*t = NULL;
}

static void undo_connect(void *ctx)
{
	struct mctx *c = ctx;

	tell_peer_and_close(&c->t, c->peer_failed, &c->fail, c->res->failed_phase, "migrate");
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

	local_facts(lf, c->o->dry_run);
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

	r = send_hello(c->t, lf, c->o->id, c->o->dry_run, c->was_paused, err);
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
	hello_to_facts(f->hello, &c->res->remote);
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

	c->frozen_at = cryo_now_us();
	if (c->was_paused)
		return 0;
	/*
	 * A journal hold, not the kmod's: before the commit the hold must be
	 * given up while the cgroup stays frozen, and the kmod can only end
	 * its hold by thawing.
	 */
	r = cryo_hold_acquire(c->o->root, c->o->id, CRYO_HOLD_CGROUP_THAW, cryo_freezer_path(c->fz),
			      cryo_freezer_backend_names[cryo_freezer_backend_of(c->fz)], (uint64_t)deadline,
			      CRYO_HOLD_UNDO_ON_EXIT, cryo_freezer_hold_undo, &c->hold, err);
	if (r < 0)
		return r;
	r = cryo_freezer_freeze(c->fz, FREEZE_TIMEOUT_MS, flags, err);
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
	if (!c->was_paused && c->fz && cryo_freezer_thaw(c->fz, THAW_TIMEOUT_MS, 0, &e) < 0) {
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

static int rm_under_root(const char *root, const char *rel)
{
	_cleanup_close_ int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (rfd < 0)
		return -errno;
	return cryo_rm_rf_at(rfd, rel);
}

/*
 * A dir of this run's images, journalled (a staging hold): a migrate or
 * receive killed before it cleans up leaves it to `cryo recover`.
 */
static int hold_dir(const char *root, const char *id, const char *tag, const char *dir, struct cryo_hold **ret,
		    struct cryo_error *err)
{
	char name[160];

	snprintf(name, sizeof(name), "%s@%s", id, tag);
	return cryo_hold_acquire(root, name, CRYO_HOLD_STAGING, dir, "dir", 0,
				 CRYO_HOLD_UNDO_ON_EXIT | CRYO_HOLD_NO_WATCHDOG, cryo_hold_staging_undo, ret, err);
}

/* The dir is gone (or kept on purpose): its journal entry goes too. */
static void release_dir(struct cryo_hold **h, const char *id)
{
	struct cryo_error e = CRYO_ERROR_INIT;

	if (*h && cryo_hold_release(*h, &e) < 0)
		cryo_error_warn_clear(&e, "`%s`: release the journal entry of its images", id);
	*h = NULL;
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
	(void)rm_under_root(c->o->root, c->base_rel);
	c->image_made = true;
	if (mkdir(base, 0700) < 0)
		return cryo_error_set(err, errno, "create `%s`", base);
	return hold_dir(c->o->root, c->o->id, "migrate-out", base, &c->out_hold, err);
}

static void undo_images(void *ctx)
{
	struct mctx *c = ctx;

	if (c->image_made && c->base_rel)
		(void)rm_under_root(c->o->root, c->base_rel);
	c->image_made = false;
	release_dir(&c->out_hold, c->o->id);
}

struct early;
static int send_image(struct mctx *c, const char *dir, uint32_t round, const struct early *early, uint64_t *ret_sent,
		      uint64_t *ret_pages, struct cryo_error *err);

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
		r = send_image(c, dir, k, NULL, &sent, &pages, err);
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

static int early_start(struct mctx *c, struct cryo_error *err);
static int early_join(struct mctx *c, bool cancel, struct cryo_error *err);
static void early_closed(int dirfd, const char *name, void *userdata);

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
	int r;

	r = prepare_out(c, err);
	if (r < 0)
		return r;
	if (c->rounds && asprintf(&parent, "../pre%u", c->rounds) < 0)
		return cryo_error_set(err, ENOMEM, "parent image");
	co.image_path = c->out_dir;
	co.parent_path = parent;
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
	} else {
		/* its files go out as CRIU closes them; the transfer step sends the rest */
		r = early_start(c, err);
		if (r < 0)
			return r;
		if (c->early) {
			co.on_file_closed = early_closed;
			co.on_file_closed_data = c->early;
		}
	}
	(void)cryo_transport_keepalive_start(c->t, "checkpoint", NULL);
	r = cryo_checkpoint(&co, err);
	cryo_transport_keepalive_stop(c->t);
	if (r < 0)
		(void)early_join(c, true, NULL);
	if (r < 0 || !c->o->lazy)
		return r;
	r = cryo_lazy_source_connect(&c->lazy, err);
	/*
	 * CRIU thaws the cgroup while it holds the tasks (ptrace) for its
	 * page server: frozen again, so that they stay stopped if CRIU dies
	 * while the copy runs there (CRIU leaves it as it found it: frozen).
	 */
	if (r >= 0)
		r = cryo_freezer_freeze(c->fz, FREEZE_TIMEOUT_MS,
					cryo_freezer_backend_of(c->fz) == CRYO_FREEZER_V1 ? CRYO_FREEZER_THAW_RETRY : 0, err);
	return r;
}

/* a failure after the checkpoint: the early sender stops, a lazy dump still serving ends (the tasks here stay whole) */
static void undo_checkpoint(void *ctx)
{
	(void)early_join(ctx, true, NULL);
	cryo_lazy_source_done(&((struct mctx *)ctx)->lazy);
}

struct file_ent {
	char *name;
	uint64_t size;
	uint32_t mode;
	struct timespec mtime;
};

static int cmp_ent(const void *a, const void *b)
{
	const struct file_ent *x = a, *y = b;
	bool mx = strcmp(x->name, CRYO_MANIFEST_NAME) == 0, my = strcmp(y->name, CRYO_MANIFEST_NAME) == 0;

	/* the manifest last: the destination has every file it lists before it */
	if (mx != my)
		return mx ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void ents_free(struct file_ent *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

static int list_image(int dirfd, struct file_ent **ret, size_t *ret_n, uint64_t *ret_total, struct cryo_error *err)
{
	DIR *d = cryo_opendir_at(dirfd, ".");
	struct file_ent *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;

	if (!d)
		return cryo_error_set(err, errno, "list the image");
	while ((de = readdir(d))) {
		struct stat s;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* CRIU's link to the previous round: the destination makes its own */
		if (strcmp(de->d_name, "parent") == 0 && fstatat(dirfd, de->d_name, &s, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(s.st_mode))
			continue;
		if (fstatat(dirfd, de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(s.st_mode)) {
			closedir(d);
			ents_free(v, n);
			return cryo_error_setx(err, EINVAL, "image entry `%s` is not a regular file", de->d_name);
		}
		if (n == cap) {
			struct file_ent *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!nv) {
				closedir(d);
				ents_free(v, n);
				return cryo_error_set(err, ENOMEM, "list the image");
			}
			v = nv;
		}
		v[n].name = strdup(de->d_name);
		v[n].size = (uint64_t)s.st_size;
		v[n].mode = s.st_mode & 0777;
		v[n].mtime = s.st_mtim;
		if (!v[n].name) {
			closedir(d);
			ents_free(v, n);
			return cryo_error_set(err, ENOMEM, "list the image");
		}
		total += v[n].size;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_ent);
	*ret = v;
	*ret_n = n;
	*ret_total = total;
	return 0;
}

/* How send_file() sends one file. */
struct send_how {
	uint32_t round;
	bool replace;             /* it was sent before in this round (MigrateFile.replace) */
	bool early;               /* from the early sender: no progress, a short read pads, it stops when told */
	bool padded;              /* out (early): the file shrank while read, zeros were sent for the rest */
};

static bool early_cancelled(const struct mctx *c);

/* One file: its header, then size bytes of fd in chunks. */
static int send_file(struct mctx *c, int fd, const char *name, uint64_t size, uint32_t mode, struct send_how *how,
		     uint64_t *sent, uint64_t total, int64_t *last_report, uint8_t *buf, struct cryo_error *err)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateFile fm = CRYO__MIGRATE_FILE__INIT;
	Cryo__MigrateChunk ch = CRYO__MIGRATE_CHUNK__INIT;
	uint64_t left = size;
	int r;

	r = check_peer(c, 100, err);
	if (r < 0)
		return r;
	fm.name = (char *)name;
	fm.size = size;
	fm.has_mode = fm.has_round = 1;
	fm.mode = mode;
	fm.round = how->round;
	if (how->replace)
		fm.has_replace = fm.replace = 1;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_FILE;
	fr.file = &fm;
	r = cryo_transport_send(c->t, &fr, err);
	if (r < 0)
		return r;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
	fr.chunk = &ch;
	while (left > 0) {
		size_t want = left > CRYO_MIGRATE_CHUNK_SIZE ? CRYO_MIGRATE_CHUNK_SIZE : (size_t)left;
		ssize_t n = how->padded ? 0 : read(fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (how->early && early_cancelled(c))
			return cryo_error_setx(err, ECANCELED, "send `%s`: called off", name);
		if (n == 0 && how->early) {
			/* rewritten under us: what goes now is sent again after the dump */
			how->padded = true;
			memset(buf, 0, want);
			n = (ssize_t)want;
		}
		if (n <= 0)
			return cryo_error_set(err, n < 0 ? errno : EIO, "read `%s`", name);
		ch.data.data = buf;
		ch.data.len = (size_t)n;
		r = cryo_transport_send(c->t, &fr, err);
		if (r < 0)
			return r;
		left -= (uint64_t)n;
		*sent += (uint64_t)n;
		if ((*sent / CRYO_MIGRATE_CHUNK_SIZE) % 16 == 0) {
			r = check_peer(c, 100, err);
			if (r < 0)
				return r;
		}
		if (last_report && cryo_now_us() - *last_report > PROGRESS_EVERY_US) {
			*last_report = cryo_now_us();
			phase_progress(&c->ph, *sent, total);
		}
	}
	return 0;
}

/*
 * --- the final dump, sent while CRIU writes it ---------------------------
 *
 * The checkpoint's hashing thread (imghash.h) tells of each image file
 * as a writer closes it; a thread of ours sends it at once while CRIU
 * dumps the next. A file told of again after we took it to send is
 * stale, as is one whose size or mtime moved while we read it: what went
 * may not be what is there now. After the checkpoint (every close has
 * been told by then), the transfer step sends what is left, the manifest
 * and its signature last: the files not sent yet, and each one sent
 * stale or changed since (its size or mtime), once more, whole, as a
 * `replace`. A file sent and then removed from the image fails the
 * transfer (the destination would refuse it as unlisted). The
 * destination still trusts nothing before its verify step: every file
 * against the signed manifest, so a wrong guess here costs a failed
 * migration, never a wrong restore.
 */
struct early_file {
	char *name;
	bool taken;                     /* the thread took it to send */
	bool sent;                      /* its header went: the destination has a file of that name */
	bool stale;                     /* told of again after it was taken */
	bool whole;                     /* sent as read: not padded, size and mtime unchanged meanwhile */
	uint64_t size;                  /* announced (and sent) */
	struct timespec mtime;          /* when it was read */
};

struct early {
	pthread_t tid;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock: the files told of, each once, in order; the thread takes v[next] */
	struct early_file *v;
	size_t n, next;
	int dirfd;                      /* the staging dir (a dup), from the first report */
	bool closing;                   /* the checkpoint is done: send what was told, then end */
	bool cancel;                    /* end now (also read unlocked, between chunks) */
	bool lost;                      /* events were lost, or more files than we track: trust nothing sent */
	/* the thread's, read after the join */
	uint64_t bytes;
	int r;
	struct cryo_error err;
};

/* bound on what the early sender tracks (CRIU's image dirs hold tens of files) */
#define EARLY_MAX_FILES 4096

static bool early_cancelled(const struct mctx *c)
{
	return __atomic_load_n(&c->early->cancel, __ATOMIC_RELAXED);
}

static bool never_early(const char *name)
{
	/* written after the last report anyway; named here so that it stays so */
	return strcmp(name, CRYO_MANIFEST_NAME) == 0 || strcmp(name, CRYO_SIGNATURE_NAME) == 0;
}

/* imghash: a writer closed a file (name NULL: events were lost) */
static void early_closed(int dirfd, const char *name, void *userdata)
{
	struct early *e = userdata;
	size_t i;

	pthread_mutex_lock(&e->lock);
	if (e->dirfd < 0)
		e->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (!name) {
		e->lost = true;
		goto out;
	}
	for (i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0) {
			/* written again: if it went (or is going), what went may be old */
			if (e->v[i].taken)
				e->v[i].stale = true;
			goto out;
		}
	if (e->n >= EARLY_MAX_FILES || never_early(name))
		goto out; /* the transfer step sends it */
	if (e->n % 64 == 0) {
		struct early_file *nv = realloc(e->v, (e->n + 64) * sizeof(*nv));

		if (!nv)
			goto out;
		e->v = nv;
	}
	memset(&e->v[e->n], 0, sizeof(e->v[e->n]));
	e->v[e->n].name = strdup(name);
	if (e->v[e->n].name)
		e->n++;
	pthread_cond_signal(&e->cond);
out:
	pthread_mutex_unlock(&e->lock);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Send v[i] (taken) as it is now. */
static int early_send_one(struct mctx *c, size_t i, const char *name, int dirfd, uint8_t *buf)
{
	struct early *e = c->early;
	_cleanup_close_ int fd = -1;
	struct send_how how = { .round = 0, .early = true };
	struct stat st, after;
	int r;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0; /* gone or not a file: the transfer step sends what is there */
	pthread_mutex_lock(&e->lock);
	e->v[i].sent = true;
	e->v[i].size = (uint64_t)st.st_size;
	e->v[i].mtime = st.st_mtim;
	pthread_mutex_unlock(&e->lock);
	r = send_file(c, fd, name, (uint64_t)st.st_size, st.st_mode & 0777, &how, &e->bytes, 0, NULL, buf, &e->err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&e->lock);
	e->v[i].whole = !how.padded && fstat(fd, &after) == 0 && after.st_size == st.st_size &&
			same_time(&after.st_mtim, &st.st_mtim);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

static void *early_worker(void *arg)
{
	struct mctx *c = arg;
	struct early *e = c->early;
	uint8_t *buf = malloc(CRYO_MIGRATE_CHUNK_SIZE);

	if (!buf) {
		e->r = cryo_error_set(&e->err, ENOMEM, "transfer");
		return NULL;
	}
	for (;;) {
		const char *name;
		size_t i;
		int dirfd;

		pthread_mutex_lock(&e->lock);
		while (e->next == e->n && !e->closing && !e->cancel)
			pthread_cond_wait(&e->cond, &e->lock);
		if (e->cancel || e->next == e->n) {
			pthread_mutex_unlock(&e->lock);
			break;
		}
		i = e->next++;
		/* from here on a report of it makes what we send stale */
		e->v[i].taken = true;
		name = e->v[i].name; /* its string stays where it is */
		dirfd = e->dirfd;
		pthread_mutex_unlock(&e->lock);
		e->r = early_send_one(c, i, name, dirfd, buf);
		if (e->r < 0)
			break;
	}
	free(buf);
	return NULL;
}

static void early_free(struct mctx *c);

static int early_start(struct mctx *c, struct cryo_error *err)
{
	struct early *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return cryo_error_set(err, ENOMEM, "transfer");
	e->dirfd = -1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	c->early = e;
	r = pthread_create(&e->tid, NULL, early_worker, c);
	if (r != 0) {
		/* a help, not a need: the transfer step sends it all */
		cryo_debug("migrate `%s`: no sender thread (%s): the dump goes after the checkpoint", c->o->id,
			   strerror(r));
		early_free(c);
		return 0;
	}
	e->running = true;
	return 0;
}

/*
 * Wait for the thread: when cancel, it stops after the chunk it sends;
 * else it first sends every file it was told of. Its error, if any.
 */
static int early_join(struct mctx *c, bool cancel, struct cryo_error *err)
{
	struct early *e = c->early;

	if (!e || !e->running)
		return 0;
	pthread_mutex_lock(&e->lock);
	e->closing = true;
	if (cancel)
		__atomic_store_n(&e->cancel, true, __ATOMIC_RELAXED);
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->tid, NULL);
	e->running = false;
	if (e->r < 0) {
		if (cancel)
			return 0;
		cryo_error_move(err, &e->err);
		return e->r;
	}
	return 0;
}

static void early_free(struct mctx *c)
{
	struct early *e = c->early;
	size_t i;

	if (!e)
		return;
	(void)early_join(c, true, NULL);
	for (i = 0; i < e->n; i++)
		free(e->v[i].name);
	free(e->v);
	if (e->dirfd >= 0)
		close(e->dirfd);
	cryo_error_clear(&e->err);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
	c->early = NULL;
}

/* (after the join) what went of this name, NULL if nothing */
static const struct early_file *early_find(const struct early *e, const char *name)
{
	size_t i;

	for (i = 0; e && i < e->n; i++)
		if (e->v[i].sent && strcmp(e->v[i].name, name) == 0)
			return &e->v[i];
	return NULL;
}

/* The destination has this file as it is now. */
static bool early_good(const struct early *e, const struct early_file *f, const struct file_ent *ent)
{
	return !e->lost && f->whole && !f->stale && f->size == ent->size && same_time(&f->mtime, &ent->mtime);
}

/*
 * One image, its manifest last, then the end of its round: round 0 is
 * the final dump, 1.. the pre-copy rounds. *ret_pages: its page bytes.
 * early: what of it went while it was written (see above), or NULL.
 */
static int send_image(struct mctx *c, const char *dir, uint32_t round, const struct early *early, uint64_t *ret_sent,
		      uint64_t *ret_pages, struct cryo_error *err)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateDone done = CRYO__MIGRATE_DONE__INIT;
	_cleanup_close_ int dirfd = -1;
	uint8_t *buf;
	struct file_ent *ents = NULL;
	uint64_t total = 0, sent = 0;
	int64_t last = 0;
	size_t n = 0, i, j;
	int r;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return cryo_error_set(err, errno, "open `%s`", dir);
	r = list_image(dirfd, &ents, &n, &total, err);
	if (r < 0)
		return r;
	for (i = 0; early && i < early->n; i++) {
		if (!early->v[i].sent)
			continue;
		for (j = 0; j < n && strcmp(ents[j].name, early->v[i].name) != 0; j++)
			;
		if (j == n) {
			r = cryo_error_setx(err, EIO, "`%s` was sent while CRIU dumped, then removed from the image",
					    early->v[i].name);
			ents_free(ents, n);
			return r;
		}
	}
	buf = malloc(CRYO_MIGRATE_CHUNK_SIZE);
	if (!buf) {
		ents_free(ents, n);
		return cryo_error_set(err, ENOMEM, "transfer");
	}
	*ret_pages = 0;
	for (i = 0; i < n && r >= 0; i++) {
		const struct early_file *f = early_find(early, ents[i].name);
		struct send_how how = { .round = round, .replace = f != NULL };
		_cleanup_close_ int fd = -1;

		if (strncmp(ents[i].name, "pages-", 6) == 0)
			*ret_pages += ents[i].size;
		if (f && early_good(early, f, &ents[i])) {
			sent += ents[i].size;
			continue;
		}
		if (f) {
			c->res->resent_files++;
			cryo_debug("migrate `%s`: `%s` changed after it was sent: sending it again", c->o->id,
				   ents[i].name);
		}
		fd = openat(dirfd, ents[i].name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			r = cryo_error_set(err, errno, "open `%s`", ents[i].name);
			break;
		}
		r = send_file(c, fd, ents[i].name, ents[i].size, ents[i].mode, &how, &sent, total, &last, buf, err);
	}
	free(buf);
	ents_free(ents, n);
	if (r < 0)
		return r;
	phase_progress(&c->ph, sent, total);
	*ret_sent = sent;
	done.round = round;
	done.has_final = 1;
	done.final = round == 0;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_DONE;
	fr.done = &done;
	return cryo_transport_send(c->t, &fr, err);
}

static int step_transfer(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	int r;

	/* the early sender's last files first: the connection is one stream */
	r = early_join(c, false, err);
	if (r < 0)
		return r;
	if (c->early) {
		c->res->early_bytes = c->early->bytes;
		c->res->early_files = (unsigned)c->early->next;
	}
	return send_image(c, c->out_dir, 0, c->early, &c->res->bytes, &c->res->pages_bytes, err);
}

/* The destination verifies, restores and keeps the container frozen; it says when. */
static int step_remote_restore(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	Cryo__MigrateFrame *f = NULL;
	int r;

	if (c->o->lazy) {
		/* CRIU's restore there may pull pages already: served meanwhile */
		r = cryo_lazy_source_await_restore(&c->lazy, c->t, mtimeout(c), &c->peer_failed, &c->res->peer_phase, err);
		if (r >= 0)
			c->res->downtime_us = (uint64_t)(cryo_now_us() - c->frozen_at); /* it runs there (its memory still here) */
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
	cm.has_frozen_usec = 1;
	cm.frozen_usec = c->o->lazy ? c->res->downtime_us : (uint64_t)(cryo_now_us() - c->frozen_at);
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
	cryo_migrate_frame_free(f);
	c->confirmed = true;
	if (!c->o->lazy)
		c->res->downtime_us = (uint64_t)(cryo_now_us() - c->frozen_at);
	return 0;
}

/* It runs there: end it here (killed while frozen, nothing runs after the dump). */
static int step_stop(void *ctx, struct cryo_error *err)
{
	struct mctx *c = ctx;
	int r;

	r = cryo_freezer_kill_all(c->fz, SIGKILL, THAW_TIMEOUT_MS, err);
	if (r < 0)
		return r;
	/* empty now: a cgroup left frozen would freeze whatever comes next */
	r = cryo_freezer_thaw(c->fz, THAW_TIMEOUT_MS, 0, err);
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

		if (check_peer(c, 1000, &pe) < 0 && c->peer_failed)
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
	.on_step = phase_on_step,
	.finished = phase_finished,
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
	r = cryo_step_run(&cryo_migrate_step_table, &c, NULL, err);
	if (r < 0 && c.st && res->in_doubt) {
		c.st->status = CRYO_STATUS_PAUSED;
		(void)cryo_state_save(o->root, c.st, NULL);
	}
	res->total_us = (uint64_t)(cryo_now_us() - c.t0);
	/* (joined already by the transfer step or an undo: the connection is not in use) */
	early_free(&c);
	if (c.t)
		cryo_transport_close(c.t);
	if (c.hold)
		cryo_hold_free(c.hold);
	cryo_lazy_source_done(&c.lazy);
	release_dir(&c.out_hold, o->id);
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

/* --- the destination: cryo receive ------------------------------------- */

struct rctx {
	struct phase ph;            /* first: see struct phase */
	const struct cryo_receive_opts *o;
	struct cryo_receive_result *res;
	struct cryo_transport *t;
	char *id;
	bool dry_run, was_paused;
	char *in_rel, *in_dir;      /* .migrate-in/<id>, <root>/.migrate-in/<id>: every image received */
	char *img_dir;              /* <in_dir>/img: the final dump (pre-copy rounds: <in_dir>/pre<k>) */
	int in_fd;
	int round_fd;               /* the dir of the round being received, or -1 */
	uint32_t round;             /* its number (0 = the final dump) */
	unsigned rounds_done;       /* pre-copy rounds received and verified */
	struct cryo_known_digest *known;    /* the round's files, hashed as they arrived */
	size_t n_known;
	char **replaced;            /* the round's files sent again (MigrateFile.replace): once each */
	size_t n_replaced;
	bool staged;
	struct cryo_hold *in_hold;  /* journals .migrate-in/<id> (see hold_dir) */
	char *bundle;               /* <bundle_dir>/<id> */
	bool bundle_made;
	Cryo__Manifest *m;
	struct cryo_spec *spec;
	struct cryo_hold *kill_hold;    /* the paused copy dies with us until the commit */
	bool restored, committed, peer_failed;
	bool lazy;                  /* post-copy (the source asked, we can) */
	enum cryo_digest_alg digest; /* how the source's manifests hash: so are arrivals hashed */
	int64_t commit_at;
	uint64_t frozen_usec;
	struct cryo_error fail;
	struct cryo_lazy_dest lz;   /* --lazy: restore with CRIU's lazy pages, pull them (migrate-lazy.h) */
};

static int64_t rtimeout(const struct rctx *c)
{
	return c->o->timeout_ms > 0 ? c->o->timeout_ms : DEFAULT_TIMEOUT_MS;
}

static int rstep_accept(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	int r;

	if (c->o->stdio)
		r = cryo_transport_fds(STDIN_FILENO, STDOUT_FILENO, "the source (stdio)", &c->t, err);
	else
		r = cryo_transport_tls_accept(c->o->listen, &c->o->tls, c->o->accept_timeout_ms, c->o->listening,
					      c->o->userdata, &c->t, err);
	if (r < 0)
		return r;
	c->t->io_timeout_ms = rtimeout(c);
	return 0;
}

static void rundo_accept(void *ctx)
{
	struct rctx *c = ctx;

	tell_peer_and_close(&c->t, c->peer_failed, &c->fail, c->res->failed_phase, "receive");
}

static uint64_t free_bytes_at(const char *path)
{
	struct statvfs s;

	if (statvfs(path, &s) < 0)
		return 0;
	return (uint64_t)s.f_bavail * s.f_frsize;
}

/* What this host can't take, as a sentence; NULL when it can. */
static int judge(struct rctx *c, const Cryo__MigrateHello *h, char *why, size_t len)
{
	struct cryo_state *st = NULL;
	_cleanup_free_ char *bundle = NULL;
	struct stat s;
	const struct cryo_migrate_facts *lf = &c->res->local;
	int r;

	if (h->protocol_version != CRYO_MIGRATE_PROTOCOL_VERSION) {
		snprintf(why, len, "protocol %u is not ours (%u)", h->protocol_version, (unsigned)CRYO_MIGRATE_PROTOCOL_VERSION);
		return -EPROTO;
	}
	if (cryo_validate_id(h->container_id, NULL) < 0) {
		snprintf(why, len, "`%.64s` is not a valid container id", h->container_id);
		return -EINVAL;
	}
	if (h->has_digest && !cryo_digest_alg_name((int)h->digest)) {
		snprintf(why, len, "digest algorithm %u is unknown here", h->digest);
		return -EPROTONOSUPPORT;
	}
	r = cryo_state_load(c->o->root, h->container_id, &st, NULL);
	cryo_state_free(st);
	if (r != -ENOENT) {
		snprintf(why, len, "a container `%s` exists here", h->container_id);
		return -EEXIST;
	}
	if (asprintf(&bundle, "%s/%s", c->o->bundle_dir, h->container_id) < 0)
		return -ENOMEM;
	if (lstat(bundle, &s) == 0) {
		snprintf(why, len, "the bundle `%s` exists here", bundle);
		return -EEXIST;
	}
	if (!lf->criu_version[0]) {
		snprintf(why, len, "no working CRIU here");
		return -ENOENT;
	}
	if (lf->criu_checked && !lf->criu_check_ok) {
		snprintf(why, len, "`criu check` fails here");
		return -EOPNOTSUPP;
	}
	if (h->freezer_backend && strcmp(h->freezer_backend, "v2") == 0 && strcmp(lf->cgroup_layout, "v1") == 0) {
		snprintf(why, len, "the container uses the cgroup2 freezer, this host has none");
		return -EOPNOTSUPP;
	}
	if (h->freezer_backend && strcmp(h->freezer_backend, "v1") == 0 && strcmp(lf->cgroup_layout, "v2") == 0) {
		snprintf(why, len, "the container uses the cgroup v1 freezer, this host has none");
		return -EOPNOTSUPP;
	}
	if (h->lazy) {
		r = cryo_lazy_judge(c->o->root, &c->res->local, why, len);
		if (r < 0)
			return r;
	}
	if (h->need_bytes + FREE_RESERVE_BYTES > lf->free_bytes) {
		snprintf(why, len, "%" PRIu64 " MiB free here, the image needs about %" PRIu64 " MiB (+%llu reserved)",
			 lf->free_bytes >> 20, (uint64_t)h->need_bytes >> 20, FREE_RESERVE_BYTES >> 20);
		return -ENOSPC;
	}
	return 0;
}

static int rstep_preflight(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	Cryo__MigrateFrame *f = NULL;
	char why[512] = "";
	int r, verdict;

	r = recv_expect(c->t, rtimeout(c), CRYO__MIGRATE_FRAME__BODY_HELLO, NULL, &f, err);
	if (r < 0)
		return r;
	c->dry_run = f->hello->dry_run;
	c->res->dry_run = c->dry_run;
	c->was_paused = f->hello->was_paused;
	c->lazy = f->hello->lazy;
	/* judge() refuses a value it does not know; absent: an older source, sha256 */
	c->digest = f->hello->has_digest ? (enum cryo_digest_alg)f->hello->digest : CRYO_DIGEST_SHA256;
	hello_to_facts(f->hello, &c->res->remote);
	local_facts(&c->res->local, c->dry_run);
	c->res->local.free_bytes = free_bytes_at(c->o->root);
	if (c->o->bundle_dir) {
		uint64_t b = free_bytes_at(c->o->bundle_dir);

		if (b && b < c->res->local.free_bytes)
			c->res->local.free_bytes = b;
	}
	verdict = judge(c, f->hello, why, sizeof(why));
	if (verdict >= 0) {
		c->id = strdup(f->hello->container_id);
		c->res->id = strdup(f->hello->container_id);
		if (!c->id || !c->res->id)
			verdict = -ENOMEM;
	}
	cryo_migrate_frame_free(f);
	r = send_hello(c->t, &c->res->local, c->id ? c->id : "", c->dry_run, false, err);
	if (r < 0)
		return r;
	r = send_result(c->t, verdict < 0 ? verdict : 0, "preflight", verdict < 0 ? why : "ready", 0, err);
	if (r < 0)
		return r;
	if (verdict < 0) {
		/* the source knows: no abort frame for it */
		c->peer_failed = true;
		return cryo_error_setx(err, -verdict, "refused: %s", why[0] ? why : strerror(-verdict));
	}
	if (c->dry_run)
		c->ph.step = NULL;
	return 0;
}

static int rstep_stage(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	_cleanup_free_ char *parent = NULL;
	_cleanup_close_ int rfd = -1;
	int r;

	if (asprintf(&parent, "%s/" CRYO_MIGRATE_IN_DIR, c->o->root) < 0 ||
	    asprintf(&c->in_rel, CRYO_MIGRATE_IN_DIR "/%s", c->id) < 0 ||
	    asprintf(&c->in_dir, "%s/%s", c->o->root, c->in_rel) < 0 ||
	    asprintf(&c->img_dir, "%s/img", c->in_dir) < 0)
		return cryo_error_set(err, ENOMEM, "staging dir");
	r = cryo_mkdir_p(parent, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", parent);
	rfd = open(c->o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return cryo_error_set(err, errno, "open `%s`", c->o->root);
	/* a leftover of a receive that was killed: the name is cryo's own */
	(void)cryo_rm_rf_at(rfd, c->in_rel);
	if (mkdirat(rfd, c->in_rel, 0700) < 0)
		return cryo_error_set(err, errno, "create `%s`", c->in_dir);
	c->staged = true;
	r = hold_dir(c->o->root, c->id, "migrate-in", c->in_dir, &c->in_hold, err);
	if (r < 0)
		return r;
	c->in_fd = openat(rfd, c->in_rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->in_fd < 0)
		return cryo_error_set(err, errno, "open `%s`", c->in_dir);
	return 0;
}

static void rundo_stage(void *ctx)
{
	struct rctx *c = ctx;

	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = -1;
	if (c->round_fd >= 0)
		close(c->round_fd);
	c->round_fd = -1;
	if (c->staged)
		(void)rm_under_root(c->o->root, c->in_rel);
	c->staged = false;
	release_dir(&c->in_hold, c->id);
}

/* A file name from the peer: one plain component, nothing hidden. */
static bool name_ok(const char *n)
{
	const char *p;

	if (!n[0] || n[0] == '.' || strlen(n) > CRYO_MIGRATE_NAME_MAX)
		return false;
	for (p = n; *p; p++)
		if (*p == '/' || (unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			return false;
	return true;
}

static void known_clear(struct rctx *c)
{
	size_t i;

	for (i = 0; i < c->n_known; i++)
		free(c->known[i].name);
	free(c->known);
	c->known = NULL;
	c->n_known = 0;
	for (i = 0; i < c->n_replaced; i++)
		free(c->replaced[i]);
	free(c->replaced);
	c->replaced = NULL;
	c->n_replaced = 0;
}

/*
 * A file of this round sent again (the source's copy changed after it
 * went, while CRIU dumped): only one that came before, and once, so the
 * round stays bounded. Its entry is what the new bytes replace.
 */
static int replace_target(struct rctx *c, const char *name, struct cryo_known_digest **ret, struct cryo_error *err)
{
	struct cryo_known_digest *k = NULL;
	char **v;
	size_t i;

	for (i = 0; i < c->n_known && !k; i++)
		if (strcmp(c->known[i].name, name) == 0)
			k = &c->known[i];
	if (!k)
		return cryo_error_setx(err, EBADMSG, "the source replaced `%s`, which it had not sent", name);
	for (i = 0; i < c->n_replaced; i++)
		if (strcmp(c->replaced[i], name) == 0)
			return cryo_error_setx(err, EBADMSG, "the source sent `%s` a third time", name);
	v = realloc(c->replaced, (c->n_replaced + 1) * sizeof(*v));
	if (!v)
		return cryo_error_set(err, ENOMEM, "receive `%s`", name);
	c->replaced = v;
	v[c->n_replaced] = strdup(name);
	if (!v[c->n_replaced])
		return cryo_error_set(err, ENOMEM, "receive `%s`", name);
	c->n_replaced++;
	*ret = k;
	return 0;
}

/*
 * Each file is hashed as it arrives (the bytes written are the bytes
 * hashed; the staging dir is ours alone): the verify then compares
 * digests with the manifest instead of reading the image back.
 */
static int receive_file(struct rctx *c, const Cryo__MigrateFile *fm, uint64_t *got, uint64_t *budget,
			struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_(cryo_hash_freep) struct cryo_hash *h = NULL;
	struct cryo_known_digest *k, *old = NULL;
	uint64_t left = fm->size;
	int r;

	/* `parent` is CRIU's link to the previous round: ours to make, never the peer's */
	if (!name_ok(fm->name) || strcmp(fm->name, "parent") == 0)
		return cryo_error_setx(err, EBADMSG, "the source sent a bad file name");
	if (fm->has_replace && fm->replace) {
		r = replace_target(c, fm->name, &old, err);
		if (r < 0)
			return r;
		/* its old bytes go: they count no more */
		*budget += old->size;
	}
	if (fm->size > *budget)
		return cryo_error_setx(err, ENOSPC, "file `%s` of %" PRIu64 " bytes: not that much space here", fm->name,
				       fm->size);
	*budget -= fm->size;
	/* O_EXCL: a name sent twice (not as a replace) is refused, nothing is overwritten */
	if (old)
		fd = openat(c->round_fd, fm->name, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	else
		fd = openat(c->round_fd, fm->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		return cryo_error_setx(err, EBADMSG, "the source sent `%s` twice", fm->name);
	if (fd < 0)
		return cryo_error_set(err, errno, "create `%s`", fm->name);
	/* files per round are bounded by the caller (CRYO_MANIFEST_MAX_FILES); old stays where it is */
	if (!old) {
		k = realloc(c->known, (c->n_known + 1) * sizeof(*c->known));
		if (!k)
			return cryo_error_set(err, ENOMEM, "receive `%s`", fm->name);
		c->known = k;
	}
	r = cryo_hash_new(&h, c->digest, err);
	if (r < 0)
		return r;
	while (left > 0) {
		Cryo__MigrateFrame *f = NULL;
		const uint8_t *p;
		size_t n;

		r = recv_expect(c->t, rtimeout(c), CRYO__MIGRATE_FRAME__BODY_CHUNK, &c->res->peer_phase, &f, err);
		if (r < 0) {
			if (c->res->peer_phase)
				c->peer_failed = true;
			return r;
		}
		n = f->chunk->data.len;
		if (n == 0 || n > left) {
			cryo_migrate_frame_free(f);
			return cryo_error_setx(err, EBADMSG, "`%s`: more data than announced", fm->name);
		}
		p = f->chunk->data.data;
		left -= n;
		*got += n;
		r = cryo_hash_update(h, p, n, err);
		if (r < 0) {
			cryo_migrate_frame_free(f);
			return r;
		}
		while (n > 0) {
			ssize_t w = write(fd, p, n);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				r = cryo_error_set(err, errno, "write `%s`", fm->name);
				cryo_migrate_frame_free(f);
				return r;
			}
			p += w;
			n -= (size_t)w;
		}
		cryo_migrate_frame_free(f);
	}
	if (old) {
		/* what the verify compares now: the new bytes */
		old->size = fm->size;
		old->alg = c->digest;
		return cryo_hash_final(h, old->sha, err);
	}
	k = &c->known[c->n_known];
	k->alg = c->digest;
	r = cryo_hash_final(h, k->sha, err);
	if (r < 0)
		return r;
	k->name = strdup(fm->name);
	if (!k->name)
		return cryo_error_set(err, ENOMEM, "receive `%s`", fm->name);
	k->size = fm->size;
	c->n_known++;
	return 0;
}

/*
 * The first file of a round opens its dir: pre-copy rounds come in
 * order (pre1, pre2, ...), the final dump (round 0) last; from the
 * second on, each links to the round before (CRIU's `parent`), a link
 * this host makes and the peer never names.
 */
static int enter_round(struct rctx *c, uint32_t round, struct cryo_error *err)
{
	char name[32], target[32];
	_cleanup_close_ int fd = -1;

	if (c->round_fd >= 0) {
		if (round != c->round)
			return cryo_error_setx(err, EBADMSG, "a file of round %u in round %u", round, c->round);
		return 0;
	}
	if (round && (round != c->rounds_done + 1 || round > CRYO_MIGRATE_MAX_ROUNDS))
		return cryo_error_setx(err, EBADMSG, "pre-copy round %u after round %u (at most %u)", round,
				       c->rounds_done, CRYO_MIGRATE_MAX_ROUNDS);
	if (round)
		snprintf(name, sizeof(name), "pre%u", round);
	else
		snprintf(name, sizeof(name), "img");
	if (mkdirat(c->in_fd, name, 0700) < 0)
		return cryo_error_set(err, errno, "create `%s`", name);
	fd = openat(c->in_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", name);
	if (c->rounds_done) {
		snprintf(target, sizeof(target), "../pre%u", c->rounds_done);
		if (symlinkat(target, fd, "parent") < 0)
			return cryo_error_set(err, errno, "link `%s` to its parent", name);
	}
	c->round_fd = TAKE_FD(fd);
	c->round = round;
	return 0;
}

static int check_signed(const struct rctx *c, struct cryo_error *err)
{
	if (!c->o->verify_key && !c->o->allow_unsigned)
		return cryo_error_setx(err, EPERM, "an image from another host must be signed: pass --verify-key (or --allow-unsigned)");
	return 0;
}

/* A pre-copy round is checked as it arrives, like the final dump: signed, whole, ours, a pre-dump. */
static int verify_round(struct rctx *c, struct cryo_error *err)
{
	Cryo__Manifest *m = NULL;
	int r;

	/* the rounds before were checked as they came: of them, only their signatures */
	r = check_signed(c, err);
	if (r >= 0 && c->o->verify_key)
		r = cryo_image_verify_sigs_at(c->round_fd, c->o->verify_key, err);
	if (r >= 0)
		r = cryo_manifest_read_at(c->round_fd, &m, err);
	if (r >= 0) {
		cryo_known_digests_sort(c->known, c->n_known);
		r = cryo_manifest_verify_known_at(c->round_fd, m, c->known, c->n_known, err);
	}
	if (r >= 0 && (!m->container_id || strcmp(m->container_id, c->id) != 0))
		r = cryo_error_setx(err, EBADMSG, "the image is of container `%s`, not `%s`",
				    m->container_id ? m->container_id : "", c->id);
	if (r >= 0 && !(m->criu && m->criu->has_pre_dump && m->criu->pre_dump))
		r = cryo_error_setx(err, EBADMSG, "it is not a pre-dump");
	cryo_manifest_free(m);
	return r < 0 ? cryo_error_prefix(err, "pre-copy round %u", c->round) : 0;
}

/* 1: the final dump is in; 0: a pre-copy round is. */
static int end_round(struct rctx *c, const Cryo__MigrateDone *d, struct cryo_error *err)
{
	bool final = d->has_final && d->final;
	int r = 0;

	if (c->round_fd < 0 || d->round != c->round)
		return cryo_error_setx(err, EBADMSG, "the end of round %u, which was not sent", d->round);
	if (final != (c->round == 0))
		return cryo_error_setx(err, EBADMSG, "round %u ended as %s", d->round,
				       final ? "the final dump" : "a pre-copy round");
	if (!final) {
		r = verify_round(c, err);
		known_clear(c);
	}
	close(c->round_fd);
	c->round_fd = -1;
	if (r < 0)
		return r;
	if (final)
		return 1;
	c->rounds_done++;
	return 0;
}

static int rstep_transfer(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	uint64_t got = 0, budget, files = 0;
	int64_t last = 0;
	int r;

	budget = free_bytes_at(c->in_dir);
	budget = budget > FREE_RESERVE_BYTES ? budget - FREE_RESERVE_BYTES : 0;
	for (;;) {
		Cryo__MigrateFrame *f = NULL;

		r = cryo_transport_recv(c->t, rtimeout(c), &f, err);
		if (r < 0)
			return r;
		switch (f->body_case) {
		case CRYO__MIGRATE_FRAME__BODY_FILE:
			if (++files > CRYO_MANIFEST_MAX_FILES) {
				cryo_migrate_frame_free(f);
				return cryo_error_setx(err, EBADMSG, "more than %u files", CRYO_MANIFEST_MAX_FILES);
			}
			r = enter_round(c, f->file->has_round ? f->file->round : 0, err);
			if (r >= 0)
				r = receive_file(c, f->file, &got, &budget, err);
			break;
		case CRYO__MIGRATE_FRAME__BODY_DONE:
			r = end_round(c, f->done, err);
			if (r > 0) {
				cryo_migrate_frame_free(f);
				c->res->precopy_rounds = c->rounds_done;
				phase_progress(&c->ph, got, got);
				return 0;
			}
			break;
		case CRYO__MIGRATE_FRAME__BODY_RESULT:
			c->peer_failed = true;
			if (f->result->phase && f->result->phase[0])
				c->res->peer_phase = strdup(f->result->phase);
			r = cryo_error_setx(err, f->result->status < 0 && f->result->status > -4096 ? -f->result->status : EPROTO,
					    "the source failed at %s: %s", f->result->phase ? f->result->phase : "?",
					    f->result->message ? f->result->message : "");
			break;
		default:
			r = cryo_error_setx(err, EBADMSG, "%s sent an unexpected frame (kind %d)", c->t->peer,
					    (int)f->body_case);
			break;
		}
		cryo_migrate_frame_free(f);
		if (r < 0)
			return r;
		if (cryo_now_us() - last > PROGRESS_EVERY_US) {
			last = cryo_now_us();
			phase_progress(&c->ph, got, 0);
		}
	}
}

/*
 * This host's rules for a config.json that came from elsewhere: nothing
 * in it may name or reach a host path.
 */
static int check_foreign_spec(const struct cryo_spec *s, struct cryo_error *err)
{
	size_t i;

	if (!s->root_path || s->root_path[0] == '/' || strstr(s->root_path, ".."))
		return cryo_error_setx(err, EPERM, "root.path `%s` is not a plain path inside the bundle",
				       s->root_path ? s->root_path : "");
	for (i = 0; i < _CRYO_HOOK_KIND_MAX; i++)
		if (s->hooks.n[i])
			return cryo_error_setx(err, EPERM, "the config has hooks (host programs): refused");
	for (i = 0; i < s->n_mounts; i++)
		if (s->mounts[i].bind)
			return cryo_error_setx(err, EPERM, "the config bind-mounts `%s` (a host path): refused",
					       s->mounts[i].source ? s->mounts[i].source : "");
	for (i = 0; i < _CRYO_NS_MAX; i++)
		if (s->namespaces[i].path)
			return cryo_error_setx(err, EPERM, "the config joins the namespace `%s` (a host path): refused",
					       s->namespaces[i].path);
	if (s->n_devices)
		return cryo_error_setx(err, EPERM, "the config creates %zu device nodes: refused", s->n_devices);
	if (s->cgroups_path && strstr(s->cgroups_path, ".."))
		return cryo_error_setx(err, EPERM, "cgroupsPath `%s` escapes: refused", s->cgroups_path);
	return 0;
}

static int rstep_verify(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	_cleanup_close_ int fd = -1;
	int r;

	/* from another machine: authenticated before anything is read (sign.h) */
	r = check_signed(c, err);
	if (r < 0)
		return r;
	/*
	 * Once, here; restore takes it as verified (the staging dir is ours
	 * alone). The pre-copy rounds were checked as they came: hashing them
	 * again now would add to the downtime.
	 */
	fd = open(c->img_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", c->img_dir);
	if (c->o->verify_key) {
		r = cryo_image_verify_sigs_at(fd, c->o->verify_key, err);
		if (r < 0)
			return r;
	}
	/* every file against the manifest's digest: those taken as they arrived */
	r = cryo_manifest_read_at(fd, &c->m, err);
	if (r >= 0) {
		cryo_known_digests_sort(c->known, c->n_known);
		r = cryo_manifest_verify_known_at(fd, c->m, c->known, c->n_known, err);
	}
	known_clear(c);
	if (r < 0)
		return cryo_error_prefix(err, "image `%s`", c->img_dir);
	if (!c->m->container_id || strcmp(c->m->container_id, c->id) != 0)
		return cryo_error_setx(err, EBADMSG, "the image is of container `%s`, not `%s`",
				       c->m->container_id ? c->m->container_id : "", c->id);
	if (c->m->criu && c->m->criu->has_pre_dump && c->m->criu->pre_dump)
		return cryo_error_setx(err, EINVAL, "the image is a pre-dump");
	if (!c->m->config_json)
		return cryo_error_setx(err, EBADMSG, "the image has no config.json");
	r = cryo_spec_parse(c->m->config_json, strlen(c->m->config_json), &c->spec, err);
	if (r < 0)
		return cryo_error_prefix(err, "the image's config.json");
	r = check_foreign_spec(c->spec, err);
	if (r < 0)
		return r;
	return 0;
}

/* The bundle this host restores from: its own dir, config.json, an empty rootfs. */
static int rstep_bundle(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	_cleanup_close_ int bdfd = -1, bfd = -1;
	_cleanup_free_ char *rootfs = NULL;
	int r;

	r = cryo_mkdir_p(c->o->bundle_dir, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", c->o->bundle_dir);
	if (asprintf(&c->bundle, "%s/%s", c->o->bundle_dir, c->id) < 0 ||
	    asprintf(&rootfs, "%s/%s/%s", c->o->bundle_dir, c->id, c->spec->root_path) < 0)
		return cryo_error_set(err, ENOMEM, "bundle");
	bdfd = open(c->o->bundle_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bdfd < 0)
		return cryo_error_set(err, errno, "open `%s`", c->o->bundle_dir);
	if (mkdirat(bdfd, c->id, 0700) < 0)
		return cryo_error_set(err, errno, "create the bundle `%s`", c->bundle);
	c->bundle_made = true;
	bfd = openat(bdfd, c->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0)
		return cryo_error_set(err, errno, "open `%s`", c->bundle);
	r = cryo_write_new_file_at(bfd, "config.json", c->m->config_json, strlen(c->m->config_json), 0600);
	if (r < 0)
		return cryo_error_set(err, -r, "write `%s/config.json`", c->bundle);
	r = cryo_mkdir_p(rootfs, 0755);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", rootfs);
	return 0;
}

static void rundo_bundle(void *ctx)
{
	struct rctx *c = ctx;
	_cleanup_close_ int bdfd = -1;

	if (!c->bundle_made)
		return;
	bdfd = open(c->o->bundle_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bdfd >= 0 && cryo_rm_rf_at(bdfd, c->id) < 0)
		cryo_warn("receive `%s`: undo: could not remove the bundle `%s`", c->id, c->bundle);
	c->bundle_made = false;
}

static int freeze_restored(struct rctx *c, bool freeze, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	struct cryo_freezer *fz = NULL;
	int r;

	r = cryo_state_load(c->o->root, c->id, &st, err);
	if (r < 0)
		return r;
	r = cryo_freezer_open_for(st->freezer_backend, st->cgroup_v2, st->cgroup_v1_freezer, &fz, err);
	if (r >= 0)
		r = freeze ? cryo_freezer_freeze(fz, FREEZE_TIMEOUT_MS, 0, err) : cryo_freezer_thaw(fz, THAW_TIMEOUT_MS, 0, err);
	cryo_freezer_close(fz);
	cryo_state_free(st);
	return r;
}

/*
 * Until the source commits, the paused copy here must not outlive this
 * receive: killed by a watchdog the moment we die (or by `cryo recover`),
 * so a receive killed before the commit leaves no container behind while
 * the source resumes. (A kill between CRIU's restore and this hold is not
 * covered: a paused copy would stay until deleted.)
 */
static int hold_restored(struct rctx *c, struct cryo_error *err)
{
	_cleanup_(cryo_state_freep) struct cryo_state *st = NULL;
	_cleanup_(cryo_freezer_closep) struct cryo_freezer *fz = NULL;
	char name[160];
	int r;

	r = cryo_state_load(c->o->root, c->id, &st, err);
	if (r >= 0)
		r = cryo_freezer_open_for(st->freezer_backend, st->cgroup_v2, st->cgroup_v1_freezer, &fz, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "%s@received", c->id);
	return cryo_hold_acquire(c->o->root, name, CRYO_HOLD_CGROUP_KILL, cryo_freezer_path(fz),
				 cryo_freezer_backend_names[cryo_freezer_backend_of(fz)], 0, CRYO_HOLD_UNDO_ON_EXIT,
				 cryo_freezer_kill_undo, &c->kill_hold, err);
}

static void release_restored_hold(struct rctx *c)
{
	struct cryo_error e = CRYO_ERROR_INIT;

	if (c->kill_hold && cryo_hold_release(c->kill_hold, &e) < 0)
		cryo_error_warn_clear(&e, "receive `%s`: release the hold of the restored copy", c->id);
	c->kill_hold = NULL;
}

/*
 * Restore from the staged image into our bundle, and keep it frozen
 * until the source commits: it must not run here while the source may
 * still resume. Restore freezes it as its last step before the state is
 * written (ro.paused); CRIU gives no way to keep the tasks stopped, so
 * they run for the moment between CRIU's end and that freeze.
 */
static int rstep_restore(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	struct cryo_restore_opts ro = {
		.root = c->o->root,
		.id = c->id,
		.image_path = c->img_dir,
		.bundle = c->bundle,
		.detach = true,
		.paused = true,
		.verify_key = c->o->verify_key,
		.preverified = true,
	};
	_cleanup_free_ char *work = NULL;
	pid_t pid = 0;
	int r;

	if (c->lazy) {
		/* it runs at once, pulling its memory (kept paused only if it was paused) */
		r = cryo_lazy_dest_restore_opts(&c->lz, c->t, c->in_dir, c->img_dir, &work, err);
		if (r < 0)
			return r;
		ro.work_path = work;
		ro.lazy_pages = true;
		ro.lazy_wait = cryo_lazy_dest_restore_wait;
		ro.lazy_wait_userdata = &c->lz;
		ro.paused = c->was_paused;
	}
	if (c->m->criu) {
		ro.criu.tcp_established = c->m->criu->tcp_established;
		ro.criu.ext_unix_sk = c->m->criu->ext_unix_sk;
		ro.criu.shell_job = c->m->criu->shell_job;
		ro.criu.file_locks = c->m->criu->file_locks;
	}
	/* the source waits meanwhile (with --lazy the page stream is busy enough) */
	if (!c->lazy)
		(void)cryo_transport_keepalive_start(c->t, "restore", NULL);
	r = cryo_restore(&ro, &pid, NULL, err);
	cryo_transport_keepalive_stop(c->t);
	if (r < 0 && c->lz.restore_peer_failed) {
		/* the source's failure report came while CRIU restored (--lazy) */
		c->peer_failed = true;
		c->res->peer_phase = TAKE_PTR(c->lz.restore_peer_phase);
	}
	if (r < 0)
		return r;
	c->restored = true;
	r = hold_restored(c, err);
	if (r < 0)
		return r;
	return send_result(c->t, 0, "restore", c->lazy ? "restored, running" : "restored, frozen", 0, err);
}

/* --lazy: relay its pages until the source commits (every page served) */
static int rstep_pages(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;

	if (!c->lazy)
		return 0;
	return cryo_lazy_dest_pull(&c->lz, c->t, rtimeout(c), &c->peer_failed, &c->res->peer_phase, err);
}

static void rundo_restore(void *ctx)
{
	struct rctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (!c->restored || c->committed) {
		cryo_lazy_dest_done(&c->lz);
		return;
	}
	/* we delete it ourselves: the watchdog need not */
	release_restored_hold(c);
	if (cryo_container_delete(c->o->root, c->id, true, &e) < 0)
		cryo_error_warn_clear(&e, "receive `%s`: undo: delete the restored container", c->id);
	cryo_lazy_dest_done(&c->lz);
	c->restored = false;
}

static int record_downtime(struct rctx *c, uint64_t downtime_us, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	int r;

	r = cryo_state_load(c->o->root, c->id, &st, err);
	if (r < 0)
		return r;
	if (!st->annotations)
		st->annotations = json_object_new_object();
	if (st->annotations)
		json_object_object_add(st->annotations, CRYO_MIGRATE_DOWNTIME_ANNOTATION,
				       json_object_new_int64((int64_t)downtime_us));
	st->status = c->was_paused ? CRYO_STATUS_PAUSED : CRYO_STATUS_RUNNING;
	r = cryo_state_save(c->o->root, st, err);
	cryo_state_free(st);
	return r;
}

/* The source's go (a plain migration: the next frame; --lazy: it came in the page stream). */
static int recv_commit(struct rctx *c, struct cryo_error *err)
{
	Cryo__MigrateFrame *f = NULL;
	int r;

	if (c->lazy) {
		c->commit_at = cryo_now_us();
		c->frozen_usec = c->lz.frozen_usec;
		return 0;
	}
	r = recv_expect(c->t, rtimeout(c), CRYO__MIGRATE_FRAME__BODY_COMMIT, &c->res->peer_phase, &f, err);
	if (r < 0) {
		if (c->res->peer_phase)
			c->peer_failed = true;
		return r;
	}
	c->commit_at = cryo_now_us();
	if (!f->commit->go) {
		cryo_migrate_frame_free(f);
		c->peer_failed = true;
		return cryo_error_setx(err, ECANCELED, "the source called it off");
	}
	c->frozen_usec = f->commit->frozen_usec;
	cryo_migrate_frame_free(f);
	return 0;
}

static int rstep_commit(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	uint64_t downtime;
	int r;

	r = recv_commit(c, err);
	if (r < 0)
		return r;
	/* ours now: whatever happens next, it stays here */
	c->committed = true;
	release_restored_hold(c);
	if (!c->was_paused) {
		r = freeze_restored(c, false, err);
		if (r < 0) {
			cryo_warn("receive `%s`: committed, but thawing failed: %s (left paused)", c->id, err->msg);
			cryo_error_clear(err);
		}
	}
	downtime = c->frozen_usec + (c->lazy ? 0 : (uint64_t)(cryo_now_us() - c->commit_at));
	c->res->downtime_us = downtime;
	r = record_downtime(c, downtime, err);
	if (r < 0) {
		cryo_warn("receive `%s`: %s", c->id, err->msg);
		cryo_error_clear(err);
	}
	r = send_result(c->t, 0, "commit", c->was_paused ? "paused" : "running", downtime, err);
	if (r < 0) {
		/* the source will call it in doubt and keep its copy paused: ours runs */
		cryo_warn("receive `%s`: running, but the confirmation did not reach the source: %s", c->id, err->msg);
		cryo_error_clear(err);
	}
	return 0;
}

static const struct cryo_step receive_steps[] = {
	{ "accept", rstep_accept, rundo_accept },
	{ "preflight", rstep_preflight, NULL },
	{ "stage", rstep_stage, rundo_stage },
	{ "transfer", rstep_transfer, NULL },
	{ "verify", rstep_verify, NULL },
	{ "bundle", rstep_bundle, rundo_bundle },
	{ "restore", rstep_restore, rundo_restore },
	{ "pages", rstep_pages, NULL },
	{ "commit", rstep_commit, NULL },
};

void cryo_receive_result_done(struct cryo_receive_result *r)
{
	free(r->id);
	free(r->peer_phase);
	r->id = r->peer_phase = NULL;
}

static void receive_failed(void *ctx, size_t failed, struct cryo_error *err)
{
	struct rctx *c = ctx;

	c->res->failed_phase = receive_steps[failed].name;
	c->fail.status = err->status;
	c->fail.msg = err->msg ? strdup(err->msg) : NULL;
}

const struct cryo_step_table cryo_receive_step_table = {
	.name = "receive",
	.steps = receive_steps,
	.n_steps = ARRAY_SIZE(receive_steps),
	.faults_qualified = true,
	.on_step = phase_on_step,
	.finished = phase_finished,
	.on_fail = receive_failed,
};

int cryo_receive(const struct cryo_receive_opts *o, struct cryo_receive_result *res, struct cryo_error *err)
{
	struct rctx c = {
		.ph = { .side = "receive", .progress = o->progress, .userdata = o->userdata },
		.o = o,
		.res = res,
		.in_fd = -1,
		.round_fd = -1,
	};
	int r;

	memset(res, 0, sizeof(*res));
	cryo_lazy_dest_init(&c.lz);
	if (!o->bundle_dir || o->bundle_dir[0] != '/')
		return cryo_error_setx(err, EINVAL, "receive: --bundle-dir must be an absolute path");
	r = cryo_step_run(&cryo_receive_step_table, &c, NULL, err);
	if (r >= 0) {
		/* the image served its purpose; CRIU's restore log is in the state dir */
		rundo_stage(&c);
		cryo_transport_close(c.t);
		c.t = NULL;
	}
	if (c.in_fd >= 0)
		close(c.in_fd);
	if (c.round_fd >= 0)
		close(c.round_fd);
	cryo_lazy_dest_done(&c.lz);
	cryo_transport_close(c.t);
	free(c.id);
	free(c.in_rel);
	free(c.in_dir);
	free(c.img_dir);
	free(c.bundle);
	known_clear(&c);
	cryo_manifest_free(c.m);
	cryo_spec_free(c.spec);
	cryo_error_clear(&c.fail);
	if (r < 0)
		return cryo_error_prefix(err, "receive%s%s%s", res->id ? " `" : "", res->id ? res->id : "",
					 res->id ? "`" : "");
	return 0;
}
