// SPDX-License-Identifier: GPL-2.0-only
/*
 * The downtime's steps of a migration (runtime/migrate/timeline.h): the
 * steps that count, placed from the freeze, nested runs appended, the
 * destination's carried in a result frame and read back with every name
 * checked.
 */
#include <stdlib.h>
#include <string.h>

#include "step.h"
#include "timeline.h"
#include "util.h"
#include "testlib.h"

/* an outer run (t0 1000 us) with a nested run appended (t0 5000 us) */
static void make_timings(struct cryo_step_timings *st)
{
	struct cryo_step_timings inner = { .t0 = 5000 };

	*st = (struct cryo_step_timings){ .t0 = 1000 };
	cryo_step_timings_add(&inner, "checkpoint", "criu-dump", 5100, 300);
	cryo_step_timings_add(&inner, "checkpoint", "manifest", 5400, 20);
	cryo_step_timings_add(st, "migrate", "precopy", 1000, 2000);   /* ends before the freeze at 3000 */
	cryo_step_timings_add(st, "migrate", "freeze", 2900, 110);     /* its hold came before the freeze */
	cryo_step_timings_append(st, &inner);
	cryo_step_timings_add(st, "migrate", "checkpoint", 3010, 2500);
	cryo_step_timings_add(st, "migrate", "confirm", 7900, 200);    /* it ran there at 8000 */
	cryo_step_timings_add(st, "migrate", "stop", 9000, 40);        /* after it ran there */
}

static void test_add(void **state)
{
	struct cryo_step_timings st;
	struct cryo_migrate_timeline tl = { 0 };

	make_timings(&st);
	/* nested: moved to the outer clock */
	assert_int_equal(st.t[2].start_usec, 5100 - 1000);
	assert_string_equal(st.t[2].table, "checkpoint");
	cryo_migrate_timeline_add(&tl, false, &st, 3000, 8000);
	assert_int_equal(tl.n, 5);
	/* the parts between the freeze and the end */
	assert_string_equal(tl.t[0].step, "freeze");
	assert_int_equal(tl.t[0].start_us, 0);
	assert_int_equal(tl.t[0].usec, 10);
	assert_string_equal(tl.t[4].step, "confirm");
	assert_int_equal(tl.t[4].start_us, 4900);
	assert_int_equal(tl.t[4].usec, 100);
	/* the outer step before the steps nested in it */
	assert_string_equal(tl.t[1].step, "checkpoint");
	assert_string_equal(tl.t[1].table, "migrate");
	assert_string_equal(tl.t[2].step, "criu-dump");
	assert_int_equal(tl.t[2].start_us, 2100);
	assert_int_equal(tl.t[2].usec, 300);
	assert_string_equal(tl.t[3].step, "manifest");
	assert_false(tl.t[3].dest);
}

static void test_result_roundtrip(void **state)
{
	struct cryo_step_timings st;
	struct cryo_migrate_timeline dst = { 0 }, src = { 0 };
	Cryo__MigrateResult res = CRYO__MIGRATE_RESULT__INIT;
	Cryo__MigrateResult *back;
	uint8_t *buf;
	size_t len;
	char *json;

	make_timings(&st);
	cryo_migrate_timeline_add(&dst, true, &st, 3000, 0);
	assert_int_equal(dst.n, 6);
	assert_int_equal(cryo_migrate_timeline_to_result(&dst, &res), 0);
	len = cryo__migrate_result__get_packed_size(&res);
	buf = malloc(len);
	assert_non_null(buf);
	cryo__migrate_result__pack(&res, buf);
	cryo_migrate_timeline_result_free(&res);
	back = cryo__migrate_result__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(back);
	/* the source's own come first */
	cryo_step_timings_add(&st, "migrate", "confirm", 8000, 5);
	cryo_migrate_timeline_add(&src, false, &st, 3000, 0);
	cryo_migrate_timeline_from_result(&src, back);
	cryo__migrate_result__free_unpacked(back, NULL);
	assert_int_equal(src.n, 13);
	assert_false(src.t[0].dest);
	assert_true(src.t[12].dest);
	assert_string_equal(src.t[12].step, "stop");
	assert_int_equal(src.t[12].start_us, 6000);

	json = cryo_migrate_timeline_json(&src);
	assert_non_null(json);
	assert_non_null(strstr(json, "{\"host\":\"source\",\"step\":\"migrate:freeze\",\"at_ms\":0.0,\"ms\":0.0}"));
	assert_non_null(strstr(json, "{\"host\":\"destination\",\"step\":\"migrate:confirm\",\"at_ms\":4.9,\"ms\":0.2}"));
	assert_non_null(strstr(json, "{\"host\":\"destination\",\"step\":\"checkpoint:criu-dump\",\"at_ms\":2.1,\"ms\":0.3}"));
	free(json);
}

/* A peer's names are data: anything but a plain word is dropped, the count is bounded. */
static void test_hostile_names(void **state)
{
	static const char *const bad[] = { "", "a b", "x\"y", "../x", "\n", "LOUD",
					   "a-very-long-step-name-that-does-not-fit" };
	Cryo__MigrateStepTime st[ARRAY_SIZE(bad) + 1], *p[ARRAY_SIZE(bad) + 1];
	Cryo__MigrateResult res = CRYO__MIGRATE_RESULT__INIT;
	struct cryo_migrate_timeline tl = { 0 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(st); i++) {
		cryo__migrate_step_time__init(&st[i]);
		st[i].table = (char *)"restore";
		st[i].step = (char *)(i < ARRAY_SIZE(bad) ? bad[i] : "criu-restore");
		p[i] = &st[i];
	}
	res.steps = p;
	res.n_steps = ARRAY_SIZE(p);
	cryo_migrate_timeline_from_result(&tl, &res);
	assert_int_equal(tl.n, 1);
	assert_string_equal(tl.t[0].step, "criu-restore");

	/* never more than the timeline holds */
	res.steps = &p[ARRAY_SIZE(bad)];
	res.n_steps = 1;
	for (i = 0; i < 2 * CRYO_MIGRATE_TIMELINE_MAX; i++)
		cryo_migrate_timeline_from_result(&tl, &res);
	assert_int_equal(tl.n, CRYO_MIGRATE_TIMELINE_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add),
		cmocka_unit_test(test_result_roundtrip),
		cmocka_unit_test(test_hostile_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
