// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "step.h"
#include "util.h"

bool cryo_step_fault(const struct cryo_step_table *t, const char *step)
{
	char qualified[128];

	if (!t->faults_qualified && cryo_fault(step))
		return true;
	if (snprintf(qualified, sizeof(qualified), "%s:%s", t->name, step) >= (int)sizeof(qualified))
		return false;
	return cryo_fault(qualified);
}

int cryo_step_run(const struct cryo_step_table *t, void *ctx, struct cryo_step_timings *timings,
		  struct cryo_error *err)
{
	struct cryo_step_timings local = { 0 };
	size_t i, j;
	int r = 0;

	if (!timings)
		timings = &local;
	if (!timings->t0)
		timings->t0 = cryo_now_us();
	timings->n = 0;
	for (i = 0; i < t->n_steps; i++) {
		const struct cryo_step *s = &t->steps[i];
		int64_t start = cryo_now_us();

		if (t->on_step)
			t->on_step(ctx, s->name, false, 0);
		if (cryo_step_fault(t, s->name))
			r = t->unprefixed || t->faults_qualified ?
				    cryo_error_setx(err, EIO, "injected fault (CRYO_FAULT=%s:%s)", t->name, s->name) :
				    cryo_error_setx(err, EIO, "injected fault (CRYO_FAULT=%s)", s->name);
		else
			r = s->run(ctx, err);
		if (r < 0) {
			if (!t->unprefixed)
				cryo_error_prefix(err, "%s", s->name);
			break;
		}
		if (timings->n < CRYO_STEP_MAX) {
			struct cryo_step_timing *tm = &timings->t[timings->n++];

			tm->table = t->name;
			tm->step = s->name;
			tm->start_usec = start - timings->t0;
			tm->usec = cryo_now_us() - start;
		}
		cryo_debug("%s: %s done in %lld us", t->name, s->name, (long long)(cryo_now_us() - start));
		if (t->finished && t->finished(ctx))
			break;
		if (t->on_step)
			t->on_step(ctx, s->name, true, cryo_now_us() - start);
	}
	if (r >= 0)
		return 0;
	if (t->on_fail)
		t->on_fail(ctx, i, err);
	/* the failed step's own undo first (its partial work), then the others newest first */
	j = i + 1;
	while (j-- > 0)
		if (t->steps[j].undo) {
			cryo_debug("%s: undo %s", t->name, t->steps[j].name);
			t->steps[j].undo(ctx);
		}
	return r;
}

void cryo_step_timings_append(struct cryo_step_timings *outer, const struct cryo_step_timings *inner)
{
	size_t i;

	for (i = 0; i < inner->n && outer->n < CRYO_STEP_MAX; i++) {
		struct cryo_step_timing *tm = &outer->t[outer->n++];

		*tm = inner->t[i];
		tm->start_usec += inner->t0 - outer->t0;
	}
}

void cryo_step_timings_add(struct cryo_step_timings *t, const char *table, const char *step, int64_t start_us,
			   int64_t usec)
{
	struct cryo_step_timing *tm;

	if (t->n >= CRYO_STEP_MAX)
		return;
	tm = &t->t[t->n++];
	tm->table = table;
	tm->step = step;
	tm->start_usec = start_us - t->t0;
	tm->usec = usec;
}
