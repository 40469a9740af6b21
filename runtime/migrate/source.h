/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The source of a migration, inside the migrate layer: its context,
 * shared by its steps (source.c) and its image stream (send.c), which
 * sends the final dump's files while CRIU writes them (the "early"
 * sender, a thread fed by imghash's close events) and the rest after.
 */
#ifndef CRYO_MIGRATE_SOURCE_H
#define CRYO_MIGRATE_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "freezer.h"
#include "hold.h"
#include "imghash.h"
#include "migrate.h"
#include "migrate-lazy.h"
#include "network.h"
#include "protocol.h"
#include "state.h"
#include "transport.h"

struct early;

struct mctx {
	struct cryo_migrate_phase ph;         /* first: the table hooks take the context as a struct cryo_migrate_phase */
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
	int64_t running_at;      /* when the copy there ran (its confirmation, --lazy: its restore) */
	struct cryo_step_timings timings;  /* our steps (t0: the run's start), the final checkpoint's nested in */
	char *base_rel;          /* .migrate-out/<id>: every image of this run */
	char *out_dir;           /* <root>/.migrate-out/<id>/img: the final dump */
	char *out_rel;           /* .migrate-out/<id>/img */
	unsigned rounds;         /* pre-copy rounds sent: pre1 .. pre<rounds> */
	struct cryo_hold *out_hold; /* journals .migrate-out/<id>: `cryo recover` removes it if we die */
	struct cryo_error fail;  /* the error that failed the run, for the abort frame */
	struct early *early;     /* sends the final dump's files while CRIU writes it */
	struct cryo_lazy_source lazy; /* --lazy: the dump serving the pages */
	/*
	 * --lazy: the copy there may run from its restore on. Until the
	 * commit, the source resumes only once that copy is stopped
	 * (cryo_lazy_source_fence), at most lazy_fence_ms after it lost the
	 * destination; the freeze hold's watchdog waits as long if we die.
	 */
	bool lazy_copy_may_run;
	int64_t lazy_fence_ms;
	/* --tcp-established: the container's veth, its host end held down (step_net_lock) */
	struct cryo_network_spec net;
	struct cryo_hold *link_hold;
	int link_index;
	char link_name[16];
};

/* A frame from the destination telling it is alive or failed, within timeout_ms. */
int cryo_migrate_check_peer(struct mctx *c, int64_t timeout_ms, struct cryo_error *err);

/*
 * Send the image in dir as round (0 = the final dump, k = pre-copy round
 * k): every file the early sender did not already send whole, then the
 * manifest (signed). *ret_sent: bytes sent; *ret_pages: of them, pages.
 */
int cryo_migrate_send_image(struct mctx *c, const char *dir, uint32_t round, const struct early *early,
			    uint64_t *ret_sent, uint64_t *ret_pages, struct cryo_error *err);

/* The early sender: started before CRIU dumps, fed by early_closed (imghash's callback), joined after. */
int cryo_migrate_early_start(struct mctx *c, struct cryo_error *err);
void cryo_migrate_early_closed(int dirfd, const char *name, enum cryo_imghash_event ev, void *userdata);
/* cancel: stop at once (a failure); else wait until what was queued went */
int cryo_migrate_early_join(struct mctx *c, bool cancel, struct cryo_error *err);
void cryo_migrate_early_free(struct mctx *c);
/* What the early sender sent (after its join): bytes, files. */
void cryo_migrate_early_sent(const struct mctx *c, uint64_t *ret_bytes, unsigned *ret_files);

#endif
