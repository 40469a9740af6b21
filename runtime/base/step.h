/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The step runner: every multi-step operation of cryo (create,
 * checkpoint, pre-dump, restore, migrate, receive) is a table of named
 * steps, each with a `run` and an optional `undo`, run in order by
 * cryo_step_run() (bubblewrap's "plan, then execute": the order is data
 * that can be read, listed and tested).
 *
 * Undo order. When step i fails (or a fault is injected into it), the
 * runner calls undo(i), undo(i-1), ..., undo(0): first the failed step's
 * own undo, for whatever it did before it failed, then the undos of the
 * steps that succeeded, newest first. So every undo must be safe on a
 * step that did nothing (each keeps its own "made" flags in the context)
 * and must not fail: it logs a warning and goes on, and the first error
 * is the one reported.
 *
 * Fault points. CRYO_FAULT=<step> (as always) or CRYO_FAULT=<table>:<step>
 * (only that table's step: "restore:claim-id") makes the step fail with
 * EIO before it acts; a comma-separated list is allowed. Tables whose
 * step names other tables use too (migrate's "checkpoint", receive's
 * "restore") take only the qualified form. Tests list the
 * tables and their steps (`cryo features` → org.cryo.steps) instead of
 * hard-coding names.
 *
 * Timing. The runner records when each step started and how long it ran
 * (microseconds) into a struct cryo_step_timings the caller owns: the
 * checkpoint copies it into the manifest (`cryo inspect` shows it), a
 * migration reports the steps of its downtime on both hosts. A run nested
 * in a step of another (migrate's checkpoint, receive's restore) hands
 * its timings up with cryo_step_timings_append(): each entry names its
 * table.
 */
#ifndef CRYO_STEP_H
#define CRYO_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct cryo_step {
	const char *name;
	int (*run)(void *ctx, struct cryo_error *err);
	void (*undo)(void *ctx);  /* NULL = nothing to undo */
};

struct cryo_step_table {
	const char *name;         /* "checkpoint", "pre-dump", "restore", "create", "migrate", "receive" */
	const struct cryo_step *steps;
	size_t n_steps;
	bool unprefixed;          /* a failed step's error is not prefixed with its name */
	bool faults_qualified;    /* only CRYO_FAULT=<table>:<step> makes a step fail */
	/* Optional hooks, each called with the run's ctx: */
	/* a step starts (done = false), or ended well (done = true, after usec) */
	void (*on_step)(void *ctx, const char *step, bool done, int64_t usec);
	/* after a step ended well: true ends the run there, successfully (a dry run) */
	bool (*finished)(void *ctx);
	/* step number `failed` failed with err: called before the undos run */
	void (*on_fail)(void *ctx, size_t failed, struct cryo_error *err);
};

#define CRYO_STEP_MAX 48

struct cryo_step_timing {
	const char *table;        /* the table's name (static) */
	const char *step;         /* points into the table */
	int64_t start_usec;       /* since the run started */
	int64_t usec;
};

struct cryo_step_timings {
	int64_t t0;               /* cryo_now_us() when the run started */
	size_t n;                 /* steps that completed */
	struct cryo_step_timing t[CRYO_STEP_MAX];
};

/*
 * Run table t on ctx. On failure the error is prefixed with the failed
 * step's name and the undos run as described above. timings may be NULL;
 * its t0 is set at the start unless the caller set it already.
 */
int cryo_step_run(const struct cryo_step_table *t, void *ctx, struct cryo_step_timings *timings,
		  struct cryo_error *err);

/*
 * Add the timings of a run nested in one of outer's steps to outer (as
 * far as CRYO_STEP_MAX allows), their starts moved to outer's t0. They
 * come before the step they ran in, which ends after them.
 */
void cryo_step_timings_append(struct cryo_step_timings *outer, const struct cryo_step_timings *inner);

/*
 * A part of a step timed by the step itself (checkpoint's hash and sync
 * inside `manifest`): started at start_us (cryo_now_us()), took usec.
 */
void cryo_step_timings_add(struct cryo_step_timings *t, const char *table, const char *step, int64_t start_us,
			   int64_t usec);

/* true if CRYO_FAULT names table:step or step. */
bool cryo_step_fault(const struct cryo_step_table *t, const char *step);

#endif
