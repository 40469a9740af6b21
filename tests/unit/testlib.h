/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers shared by the cmocka unit tests (tests/unit/test_*.c), built once
 * as testlib.c and linked into each of them. Includes cmocka in the order
 * it needs, so a test includes this instead of cmocka.h.
 */
#pragma once

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "error.h"

/* The object of a JSON text; a typo in the test's own JSON fails the test. */
struct json_object *tl_json(const char *json);

/*
 * Run a `cryo_<x>_parse(struct json_object *, ...)` on a JSON text and
 * return what it returned: tl_parse(cryo_caps_parse, "{}", &spec, &err).
 */
#define tl_parse(parse_fn, json, ...)                                   \
	({                                                              \
		struct json_object *tl_o_ = tl_json(json);              \
		int tl_r_ = parse_fn(tl_o_, __VA_ARGS__);               \
		json_object_put(tl_o_);                                 \
		tl_r_;                                                  \
	})

/*
 * Assert that a call on `input` returned `want` and left exactly `msg` in
 * err (the whole sentence: the message is the interface); clears err.
 */
void tl_expect_error(const char *input, int r, int want, struct cryo_error *err, const char *msg);

/* Wait for a child: its exit code, or 128 + signal like a shell. */
int tl_wait(pid_t pid);

/* Run fn in a forked child and return tl_wait() of it (0 = passed). */
int tl_in_child(int (*fn)(void));

/* mkdtemp(tmpl) and open it; returns the O_CLOEXEC directory fd. */
int tl_tmpdir(char *tmpl);

/* Remove a temporary directory tree; 0 or -errno. */
int tl_rm_rf(const char *dir);

/* Flip the low bit of the byte at off in dirfd/name (asserts it could). */
void tl_flip_byte(int dirfd, const char *name, off_t off);

/*
 * A temporary directory tl_dir around a whole group, so a failed assert
 * leaves nothing: cmocka_run_group_tests(tests, tl_group_setup_tmpdir,
 * tl_group_teardown_tmpdir).
 */
extern char tl_dir[];
int tl_group_setup_tmpdir(void **state);
int tl_group_teardown_tmpdir(void **state);
