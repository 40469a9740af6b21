/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Migration between hosts: `cryo migrate ID DEST` on the source,
 * `cryo receive` on the destination, talking proto/migrate.proto over a
 * trusted transport (transport.h). Both sides are step tables
 * with undo, like checkpoint:
 *
 *   migrate: connect → preflight → precopy → freeze → checkpoint → transfer
 *            → restore (the destination's) → pages → commit → confirm → stop
 *   receive: accept → preflight → stage → transfer → verify → bundle
 *            → restore → pages → commit
 *
 * (pages: --lazy only, migrate-lazy.h: the copy there runs, the source
 * stays frozen and serves its memory; the commit comes once all of it
 * went.)
 *
 * The transfer overlaps the checkpoint: each file of the frozen dump goes
 * as CRIU closes it (imghash.h tells), the transfer step sends the rest
 * (and what changed after it went), the signed manifest last.
 *
 * The container is never running on both hosts, and never on neither:
 *
 *  - the source freezes it with a held freeze (journal + watchdog, undone
 *    when cryo dies or the deadline passes) and checkpoints it with
 *    leave-running semantics, so until the commit the source can resume
 *    it exactly as it was;
 *  - the destination restores it and keeps it frozen until the commit;
 *  - the source gives up its hold (the deadline could otherwise thaw it
 *    behind the commit) and only then sends the commit; the destination
 *    thaws and confirms; the source then stops its copy.
 *
 * Any failure before the commit resumes the source and makes the
 * destination remove everything it made. A commit whose confirmation
 * never arrives leaves the source PAUSED ("in doubt": the destination
 * may be running it): never thawed automatically, the user decides
 * (`cryo resume` here, or `cryo delete` here once it runs there).
 *
 * The destination trusts nothing in the image: it restores into a bundle
 * under its own --bundle-dir, refuses a config.json that names host
 * paths (hooks, bind mounts, namespace paths, devices, an absolute or
 * escaping root.path), and writes files only inside its staging dir.
 *
 * CRYO_FAULT=migrate:<step> / receive:<step> makes a step fail before it
 * acts.
 */
#ifndef CRYO_MIGRATE_H
#define CRYO_MIGRATE_H

#include <stdbool.h>
#include <stdint.h>

#include "criu.h"
#include "error.h"
#include "protocol.h"
#include "step.h"
#include "timeline.h"
#include "transport.h"

/* What one end tells the other in preflight (and the dry run reports). */
struct cryo_migrate_opts {
	const char *root;
	const char *id;
	const char *dest;             /* ssh://[user@]host[:port] or tls://host:port */
	const char *ssh;              /* ssh program; NULL = ssh */
	const char *remote_cmd;       /* ssh: NULL = "cryo receive --stdio" */
	struct cryo_tls_files tls;    /* tls: our certificate, key, and the CA */
	const char *sign_key;         /* sign the image (runtime/sign.h) */
	struct cryo_criu_flags criu;
	bool dry_run;
	unsigned pre_copy;            /* at most this many memory rounds while it runs (<= CRYO_MIGRATE_MAX_ROUNDS) */
	bool lazy;                    /* post-copy: the copy there runs at once and pulls its memory (migrate-lazy.h) */
	int64_t freeze_deadline_ms;   /* the source thaws by itself after this; 0 = 300000 */
	int64_t timeout_ms;           /* each wait for the peer; 0 = 120000 */
	cryo_migrate_progress_fn progress;
	void *userdata;
};

struct cryo_migrate_result {
	const char *failed_phase;     /* our step that failed (static), NULL on success */
	char *peer_phase;             /* the destination's failed step, if it said */
	bool in_doubt;                /* commit sent, unconfirmed: left PAUSED here */
	bool resume_failed;           /* an undo failed: see the warnings */
	bool stop_failed;             /* migrated, but the copy here could not be stopped (left frozen) */
	bool dry_run_ready;           /* --dry-run: both ends can do it */
	struct cryo_migrate_facts local, remote;
	uint64_t downtime_us;         /* frozen here → running there (measured here) */
	uint64_t total_us, bytes;     /* bytes: the final image (sent while frozen) */
	unsigned precopy_rounds;      /* pre-copy rounds sent before the freeze */
	uint64_t precopy_bytes;       /* their bytes */
	uint64_t pages_bytes;         /* memory pages in the final image */
	uint64_t first_round_pages;   /* memory pages in the first pre-copy round */
	uint64_t early_bytes;         /* of bytes: sent while CRIU was still dumping */
	unsigned early_files;         /* files sent while CRIU was still dumping */
	unsigned resent_files;        /* of those: sent again, changed after they went */
	uint64_t lazy_bytes;          /* --lazy: the page stream, both ways, after the copy ran there */
	struct cryo_migrate_timeline steps; /* the downtime's steps, here and there (timeline.h) */
};

void cryo_migrate_result_done(struct cryo_migrate_result *r);

int cryo_migrate(const struct cryo_migrate_opts *o, struct cryo_migrate_result *res, struct cryo_error *err);

struct cryo_receive_opts {
	const char *root;
	const char *bundle_dir;       /* the bundle goes to <bundle_dir>/<id> */
	bool stdio;                   /* the channel is fds 0/1 (under sshd) */
	const char *listen;           /* else: mutual TLS on this address */
	struct cryo_tls_files tls;
	const char *verify_key;       /* runtime/sign.h */
	bool allow_unsigned;
	int64_t timeout_ms;           /* each wait for the peer; 0 = 120000 */
	int64_t accept_timeout_ms;    /* --listen: 0 = forever */
	void (*listening)(unsigned port, void *userdata);
	cryo_migrate_progress_fn progress;
	void *userdata;
};

struct cryo_receive_result {
	char *id;
	const char *failed_phase;     /* ours, static */
	char *peer_phase;             /* the source's, if it said */
	bool dry_run;
	struct cryo_migrate_facts local, remote;
	uint64_t downtime_us;         /* estimate: the source's frozen time + ours until thawed */
	unsigned precopy_rounds;      /* pre-copy rounds received */
	struct cryo_migrate_timeline steps; /* our steps of the downtime (timeline.h) */
};

void cryo_receive_result_done(struct cryo_receive_result *r);

int cryo_receive(const struct cryo_receive_opts *o, struct cryo_receive_result *res, struct cryo_error *err);

/*
 * The undo of a CRYO_HOLD_BUNDLE hold (`cryo recover`, or the next
 * receive of that id): remove the bundle a receive that died before its
 * commit made, if it still carries that receive's marker; an empty dir
 * is removed too; anything else is left, and said.
 */
struct cryo_hold_rec;
int cryo_receive_bundle_undo(const struct cryo_hold_rec *rec, struct cryo_error *err);

/* --pre-copy: at most this many rounds (CRIU's parent chain stays short) */
#define CRYO_MIGRATE_MAX_ROUNDS 8

/*
 * The phases: the steps (step.h) of each side, the source's in source.c
 * (its image stream in send.c), the destination's in receive.c.
 */
extern const struct cryo_step_table cryo_migrate_step_table;
extern const struct cryo_step_table cryo_receive_step_table;

/* The state annotations where the destination stores the downtime, and its steps (JSON, timeline.h). */
#define CRYO_MIGRATE_DOWNTIME_ANNOTATION "org.cryo.migrate.downtime_usec"
#define CRYO_MIGRATE_STEPS_ANNOTATION "org.cryo.migrate.downtime_steps"

#endif
