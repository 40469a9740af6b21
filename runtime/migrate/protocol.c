// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>

#include "criu.h"
#include "freezer.h"
#include "hold.h"
#include "log.h"
#include "manifest.h"
#include "step.h"
#include "proc.h"
#include "protocol.h"
#include "util.h"
#include "version.h"

/* --- facts both ends exchange ------------------------------------------ */


const char *cryo_migrate_cgroup_layout(void)
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

void cryo_migrate_local_facts(struct cryo_migrate_facts *f, bool criu_check)
{
	struct cryo_criu_version v;
	struct utsname u;

	if (uname(&u) == 0)
		snprintf(f->kernel, sizeof(f->kernel), "%s", u.release);
	if (cryo_criu_get_version(&v, NULL) == 0)
		snprintf(f->criu_version, sizeof(f->criu_version), "%u.%u.%u", v.major, v.minor, v.sublevel);
	snprintf(f->cryo_version, sizeof(f->cryo_version), "%s", CRYO_VERSION);
	snprintf(f->cgroup_layout, sizeof(f->cgroup_layout), "%s", cryo_migrate_cgroup_layout());
	f->soft_dirty = cryo_kernel_has_soft_dirty();
	f->userfaultfd = cryo_kernel_has_userfaultfd();
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
	if (f->timeout_ms) {
		h->has_timeout_ms = 1;
		h->timeout_ms = f->timeout_ms;
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

void cryo_migrate_hello_to_facts(const Cryo__MigrateHello *h, struct cryo_migrate_facts *f)
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
	f->timeout_ms = h->has_timeout_ms ? h->timeout_ms : 0;
}

int cryo_migrate_send_hello(struct cryo_transport *t, const struct cryo_migrate_facts *f, const char *id,
			    bool dry_run, bool was_paused, struct cryo_error *err)
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

int cryo_migrate_send_result(struct cryo_transport *t, int status, const char *phase, const char *msg,
			     uint64_t downtime_us, struct cryo_error *err)
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
int cryo_migrate_recv_expect(struct cryo_transport *t, int64_t timeout_ms, Cryo__MigrateFrame__BodyCase want,
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


static void phase_report(const struct cryo_migrate_phase *ph, bool done, int64_t usec, uint64_t bytes, uint64_t total)
{
	struct cryo_migrate_progress p = {
		.side = ph->side, .phase = ph->step, .phase_done = done, .bytes = bytes, .total = total,
		.phase_us = done ? usec : cryo_now_us() - ph->start,
	};

	if (ph->progress)
		ph->progress(&p, ph->userdata);
}

/* bytes of total moved in the step running */
void cryo_migrate_phase_progress(const struct cryo_migrate_phase *ph, uint64_t bytes, uint64_t total)
{
	phase_report(ph, false, 0, bytes, total);
}

void cryo_migrate_phase_on_step(void *ctx, const char *step, bool done, int64_t usec)
{
	struct cryo_migrate_phase *ph = ctx;

	ph->step = step;
	if (!done)
		ph->start = cryo_now_us();
	phase_report(ph, done, usec, 0, 0);
}

bool cryo_migrate_phase_finished(void *ctx)
{
	return !((const struct cryo_migrate_phase *)ctx)->step;
}

/*
 * Both ends, before closing after a failure: tell the peer which phase
 * failed and why (unless the failure was the peer's own).
 */
void cryo_migrate_tell_peer_and_close(struct cryo_transport **t, bool peer_failed, const struct cryo_error *fail,
				const char *phase, const char *who)
{
	if (*t && !peer_failed && fail->msg) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_migrate_send_result(*t, -(fail->status ? fail->status : EIO), phase, fail->msg, 0, &e) < 0)
			cryo_debug("%s: could not tell the peer: %s", who, e.msg);
		cryo_error_clear(&e);
	}
	cryo_transport_close(*t);
	*t = NULL;
}

int cryo_migrate_rm_under_root(const char *root, const char *rel)
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
int cryo_migrate_hold_dir(const char *root, const char *id, const char *tag, const char *dir, struct cryo_hold **ret,
		    struct cryo_error *err)
{
	char name[160];

	snprintf(name, sizeof(name), "%s@%s", id, tag);
	return cryo_hold_acquire(root, name, CRYO_HOLD_STAGING, dir, "dir", 0,
				 CRYO_HOLD_UNDO_ON_EXIT | CRYO_HOLD_NO_WATCHDOG, cryo_hold_staging_undo, ret, err);
}

/* The dir is gone (or kept on purpose): its journal entry goes too. */
void cryo_migrate_release_dir(struct cryo_hold **h, const char *id)
{
	struct cryo_error e = CRYO_ERROR_INIT;

	if (*h && cryo_hold_release(*h, &e) < 0)
		cryo_error_warn_clear(&e, "`%s`: release the journal entry of its images", id);
	*h = NULL;
}
