/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What both sides of a migration share (source.c, send.c and receive.c
 * for the source and the destination, migrate-lazy.c for --lazy): the
 * facts each side tells the other in its Hello frame, the Result frame
 * that ends a run or reports a failure, the wait for a frame of one kind,
 * progress reports of the phases, and the dirs of a run's images, which
 * each side journals (a staging hold) so that `cryo recover` removes them
 * if it dies. The frames themselves are proto/migrate.proto, carried by
 * transport.h.
 */
#ifndef CRYO_MIGRATE_PROTOCOL_H
#define CRYO_MIGRATE_PROTOCOL_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "hold.h"
#include "transport.h"

/* each wait for the peer, unless --timeout says otherwise */
#define CRYO_MIGRATE_TIMEOUT_MS 120000
/* freezing and thawing the container on either side */
#define CRYO_MIGRATE_FREEZE_TIMEOUT_MS 5000
#define CRYO_MIGRATE_THAW_TIMEOUT_MS 5000
/* a transfer reports its progress this often */
#define CRYO_MIGRATE_PROGRESS_EVERY_US 200000

struct cryo_migrate_facts {
	char kernel[65];
	char criu_version[32];       /* "" = no CRIU */
	char cryo_version[32];
	char cgroup_layout[8];       /* v1, v2, hybrid */
	char freezer_backend[8];     /* source: the container's */
	char rootfs_kind[8];         /* source: image (own fs, loop) or dir */
	uint64_t need_bytes;         /* source: estimated image size */
	uint64_t free_bytes;         /* destination: free space for it */
	bool soft_dirty, userfaultfd;
	bool criu_checked, criu_check_ok; /* `criu check` (dry run only) */
	bool lazy;                   /* source: --lazy asked for; destination: it can (migrate-lazy.h) */
	uint32_t timeout_ms;         /* destination: its --timeout, after which a lazy copy that heard nothing is stopped (0 = not said) */
};

struct cryo_migrate_progress {
	const char *side;     /* "migrate" or "receive" */
	const char *phase;    /* the step */
	bool phase_done;      /* the step ended (ok) */
	uint64_t bytes, total;/* transfer: so far / all; 0 otherwise */
	int64_t phase_us;     /* time in the phase so far */
};

typedef void (*cryo_migrate_progress_fn)(const struct cryo_migrate_progress *p, void *userdata);

/*
 * Where a run is, for progress reports: the first member of both sides'
 * contexts, so the step table hooks serve both.
 */
struct cryo_migrate_phase {
	const char *side;        /* "migrate" / "receive" */
	const char *step;        /* the step running; NULL ends the table early (dry run) */
	int64_t start;
	cryo_migrate_progress_fn progress;
	void *userdata;
};

/* This host's facts; criu_check: also run `criu check` (slow: dry runs). */
void cryo_migrate_local_facts(struct cryo_migrate_facts *f, bool criu_check);
/* v1, v2, hybrid or none */
const char *cryo_migrate_cgroup_layout(void);
void cryo_migrate_hello_to_facts(const Cryo__MigrateHello *h, struct cryo_migrate_facts *f);
int cryo_migrate_send_hello(struct cryo_transport *t, const struct cryo_migrate_facts *f, const char *id, bool dry_run,
			    bool was_paused, struct cryo_error *err);
int cryo_migrate_send_result(struct cryo_transport *t, int status, const char *phase, const char *msg,
			     uint64_t downtime_us, struct cryo_error *err);
/*
 * Receive a frame of kind want; a Result with status < 0 is the peer's
 * failure (its phase in *ret_peer_phase, malloc'd, when that is not NULL).
 */
int cryo_migrate_recv_expect(struct cryo_transport *t, int64_t timeout_ms, Cryo__MigrateFrame__BodyCase want,
			     char **ret_peer_phase, Cryo__MigrateFrame **ret, struct cryo_error *err);
/*
 * Tell the peer (unless it is the one that failed) that the run failed
 * at phase and why, then close the transport.
 */
void cryo_migrate_tell_peer_and_close(struct cryo_transport **t, bool peer_failed, const struct cryo_error *fail,
				      const char *phase, const char *who);

/* bytes of total moved in the step running */
void cryo_migrate_phase_progress(const struct cryo_migrate_phase *ph, uint64_t bytes, uint64_t total);
/* the step tables' hooks (step.h): ctx is the side's context, a struct cryo_migrate_phase first */
void cryo_migrate_phase_on_step(void *ctx, const char *step, bool done, int64_t usec);
bool cryo_migrate_phase_finished(void *ctx);

/* rm -rf root/rel (rel relative to root, resolved under it) */
int cryo_migrate_rm_under_root(const char *root, const char *rel);
/*
 * A dir of this run's images, journalled (a staging hold named
 * <id>@<tag>): a migrate or receive killed before it cleans up leaves it
 * to `cryo recover`.
 */
int cryo_migrate_hold_dir(const char *root, const char *id, const char *tag, const char *dir, struct cryo_hold **ret,
			  struct cryo_error *err);
/* The dir is gone (or kept on purpose): its journal entry goes too. */
void cryo_migrate_release_dir(struct cryo_hold **h, const char *id);

#endif
