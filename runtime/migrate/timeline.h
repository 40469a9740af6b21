/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Where a migration's downtime goes: the steps of both hosts from the
 * freeze on, each with its start (microseconds since the source froze
 * the container) and its length, from their step runners (step.h),
 * nested runs included (the source's checkpoint, the destination's
 * restore). The destination places its steps on the source's time line
 * through the commit, which says how long the source had been frozen
 * when it sent it: one network latency off, no clocks compared. It
 * sends them in the commit's result; `migrate` prints both ends, the
 * destination keeps its own in the container's state.
 */
#ifndef CRYO_MIGRATE_TIMELINE_H
#define CRYO_MIGRATE_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>

#include "step.h"
#include "transport.h"

#define CRYO_MIGRATE_TIMELINE_MAX 64

struct cryo_migrate_timed {
	bool dest;                /* a step of the destination */
	char table[16];           /* "migrate", "checkpoint", "receive", "restore" */
	char step[24];
	int64_t start_us;         /* since the source froze the container */
	int64_t usec;
};

struct cryo_migrate_timeline {
	size_t n;
	struct cryo_migrate_timed t[CRYO_MIGRATE_TIMELINE_MAX];
};

/*
 * Add the steps of st that end after the freeze, which happened at
 * freeze_us (cryo_now_us() of this host), and start before until_us (0:
 * any): their part between the two.
 */
void cryo_migrate_timeline_add(struct cryo_migrate_timeline *tl, bool dest, const struct cryo_step_timings *st,
			       int64_t freeze_us, int64_t until_us);

/* The destination's steps into its commit's result, and back (bounded, names checked). */
int cryo_migrate_timeline_to_result(const struct cryo_migrate_timeline *tl, Cryo__MigrateResult *res);
void cryo_migrate_timeline_result_free(Cryo__MigrateResult *res);
void cryo_migrate_timeline_from_result(struct cryo_migrate_timeline *tl, const Cryo__MigrateResult *res);

/* As JSON (a malloc'd array of {"host","step","at_ms","ms"}), NULL when out of memory. */
char *cryo_migrate_timeline_json(const struct cryo_migrate_timeline *tl);

#endif
