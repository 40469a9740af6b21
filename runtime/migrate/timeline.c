// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "timeline.h"
#include "util.h"

/* the source's steps first, each host's in order of start */
static int by_start(const void *a, const void *b)
{
	const struct cryo_migrate_timed *x = a, *y = b;

	if (x->dest != y->dest)
		return x->dest ? 1 : -1;
	if (x->start_us != y->start_us)
		return x->start_us < y->start_us ? -1 : 1;
	/* a step before the steps nested in it (it ends last) */
	return x->usec > y->usec ? -1 : x->usec < y->usec;
}

void cryo_migrate_timeline_add(struct cryo_migrate_timeline *tl, bool dest, const struct cryo_step_timings *st,
			       int64_t freeze_us, int64_t until_us)
{
	size_t i;

	for (i = 0; i < st->n && tl->n < CRYO_MIGRATE_TIMELINE_MAX; i++) {
		const struct cryo_step_timing *s = &st->t[i];
		int64_t start = st->t0 + s->start_usec, end = start + s->usec;
		struct cryo_migrate_timed *t;

		if (end <= freeze_us || (until_us && start >= until_us))
			continue;
		/* only its part of the downtime (the freeze step's hold came before) */
		if (start < freeze_us)
			start = freeze_us;
		if (until_us && end > until_us)
			end = until_us;
		t = &tl->t[tl->n++];
		t->dest = dest;
		snprintf(t->table, sizeof(t->table), "%s", s->table ? s->table : "");
		snprintf(t->step, sizeof(t->step), "%s", s->step ? s->step : "");
		t->start_us = start - freeze_us;
		t->usec = end - start;
	}
	qsort(tl->t, tl->n, sizeof(tl->t[0]), by_start);
}

int cryo_migrate_timeline_to_result(const struct cryo_migrate_timeline *tl, Cryo__MigrateResult *res)
{
	size_t i;

	res->steps = calloc(tl->n + 1, sizeof(Cryo__MigrateStepTime *));
	if (!res->steps)
		return -ENOMEM;
	for (i = 0; i < tl->n; i++) {
		Cryo__MigrateStepTime *s = malloc(sizeof(*s));

		if (!s)
			return -ENOMEM;
		cryo__migrate_step_time__init(s);
		s->table = (char *)tl->t[i].table;
		s->step = (char *)tl->t[i].step;
		s->has_start_usec = s->has_usec = 1;
		s->start_usec = tl->t[i].start_us;
		s->usec = tl->t[i].usec > 0 ? (uint64_t)tl->t[i].usec : 0;
		res->steps[res->n_steps++] = s;
	}
	return 0;
}

void cryo_migrate_timeline_result_free(Cryo__MigrateResult *res)
{
	size_t i;

	for (i = 0; i < res->n_steps; i++)
		free(res->steps[i]);
	free(res->steps);
	res->steps = NULL;
	res->n_steps = 0;
}

/* A name from the peer: short, printable, nothing to quote. */
static bool name_ok(const char *s, size_t max)
{
	size_t n = 0;

	for (; s && *s; s++, n++)
		if (n >= max || !((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
			return false;
	return s && n > 0;
}

void cryo_migrate_timeline_from_result(struct cryo_migrate_timeline *tl, const Cryo__MigrateResult *res)
{
	size_t i;

	for (i = 0; i < res->n_steps && tl->n < CRYO_MIGRATE_TIMELINE_MAX; i++) {
		const Cryo__MigrateStepTime *s = res->steps[i];
		struct cryo_migrate_timed *t;

		if (!name_ok(s->table, sizeof(t->table) - 1) || !name_ok(s->step, sizeof(t->step) - 1) ||
		    s->usec > INT64_MAX)
			continue;
		t = &tl->t[tl->n++];
		t->dest = true;
		snprintf(t->table, sizeof(t->table), "%s", s->table);
		snprintf(t->step, sizeof(t->step), "%s", s->step);
		t->start_us = s->start_usec;
		t->usec = (int64_t)s->usec;
	}
	qsort(tl->t, tl->n, sizeof(tl->t[0]), by_start);
}

/* milliseconds, to the tenth */
static struct json_object *ms(int64_t us)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.1f", (double)us / 1e3);
	return json_object_new_double_s((double)us / 1e3, buf);
}

char *cryo_migrate_timeline_json(const struct cryo_migrate_timeline *tl)
{
	struct json_object *a = json_object_new_array();
	char *out = NULL;
	size_t i;

	if (!a)
		return NULL;
	for (i = 0; i < tl->n; i++) {
		const struct cryo_migrate_timed *t = &tl->t[i];
		struct json_object *o = json_object_new_object();
		char step[48];

		if (!o || json_object_array_add(a, o) < 0) {
			json_object_put(o);
			json_object_put(a);
			return NULL;
		}
		snprintf(step, sizeof(step), "%s:%s", t->table, t->step);
		json_object_object_add(o, "host", json_object_new_string(t->dest ? "destination" : "source"));
		json_object_object_add(o, "step", json_object_new_string(step));
		json_object_object_add(o, "at_ms", ms(t->start_us));
		json_object_object_add(o, "ms", ms(t->usec));
	}
	out = strdup(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
	json_object_put(a);
	return out;
}
