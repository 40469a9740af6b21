// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rlimits.h"
#include "util.h"
#include "testlib.h"

static void test_parse_valid(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_rlimits_spec spec;

	assert_int_equal(tl_parse(cryo_rlimits_parse, "[{\"type\": \"RLIMIT_NOFILE\", \"soft\": 256, \"hard\": 512},"
			       " {\"type\": \"RLIMIT_CORE\", \"soft\": 0, \"hard\": 18446744073709551615}]",
			       &spec, &err),
			 0);
	assert_int_equal(spec.n, 2);
	assert_int_equal(spec.items[0].resource, RLIMIT_NOFILE);
	assert_true(spec.items[0].soft == 256 && spec.items[0].hard == 512);
	assert_int_equal(spec.items[1].resource, RLIMIT_CORE);
	assert_true(spec.items[1].hard == RLIM_INFINITY);
	cryo_rlimits_spec_free(&spec);
	assert_int_equal(cryo_rlimits_parse(NULL, &spec, &err), 0);
	assert_int_equal(spec.n, 0);
}

static void expect_error(const char *json, const char *msg)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_rlimits_spec spec;

	tl_expect_error(json, tl_parse(cryo_rlimits_parse, json, &spec, &err), -EINVAL, &err, msg);
}

static void test_parse_invalid(void **state)
{
	expect_error("{}", "process.rlimits: must be an array");
	expect_error("[{\"type\": \"RLIMIT_FOO\", \"soft\": 1, \"hard\": 1}]",
		     "process.rlimits[0].type: unknown limit `RLIMIT_FOO`");
	expect_error("[{\"type\": \"RLIMIT_NOFILE\", \"soft\": 1, \"hard\": 1}, {\"type\": \"RLIMIT_NOFILE\", \"soft\": 2, \"hard\": 2}]",
		     "process.rlimits[1].type: `RLIMIT_NOFILE` already set by process.rlimits[0]");
	expect_error("[{\"type\": \"RLIMIT_NOFILE\", \"soft\": 10, \"hard\": 5}]",
		     "process.rlimits[0]: RLIMIT_NOFILE soft limit 10 is above the hard limit 5");
	expect_error("[{\"type\": \"RLIMIT_NOFILE\", \"hard\": 5}]", "process.rlimits[0].soft: missing");
	expect_error("[{\"type\": \"RLIMIT_NOFILE\", \"soft\": 1, \"hard\": -5}]",
		     "process.rlimits[0].hard: must be a non-negative integer");
	expect_error("[{\"soft\": 1, \"hard\": 1}]", "process.rlimits[0].type: missing or not a string");
	expect_error("[3]", "process.rlimits[0]: must be an object");
}

static int child(void)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_rlimits_spec spec;
	struct rlimit rl;

	if (tl_parse(cryo_rlimits_parse, "[{\"type\": \"RLIMIT_NOFILE\", \"soft\": 100, \"hard\": 200},"
		  " {\"type\": \"RLIMIT_CORE\", \"soft\": 0, \"hard\": 0}]", &spec, &err) < 0 ||
	    cryo_rlimits_apply(&spec, 0, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	cryo_rlimits_spec_free(&spec);
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur != 100 || rl.rlim_max != 200)
		return 2;
	if (getrlimit(RLIMIT_CORE, &rl) < 0 || rl.rlim_cur != 0 || rl.rlim_max != 0)
		return 3;
	/* raising the hard limit back is refused without CAP_SYS_RESOURCE (or fine with it) */
	if (tl_parse(cryo_rlimits_parse, "[{\"type\": \"RLIMIT_CORE\", \"soft\": 0, \"hard\": 4096}]", &spec, &err) < 0)
		return 4;
	if (cryo_rlimits_apply(&spec, 0, &err) < 0 &&
	    strcmp(err.msg, "set RLIMIT_CORE to 0/4096 (raising a hard limit needs CAP_SYS_RESOURCE): "
			    "Operation not permitted") != 0) {
		fprintf(stderr, "unexpected: %s\n", err.msg);
		return 5;
	}
	cryo_rlimits_spec_free(&spec);
	cryo_error_clear(&err);
	return 0;
}

/* The runtime parent sets the limits of the container init by pid. */
static void test_apply_pid(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_rlimits_spec spec;
	char path[64], *limits = NULL;
	int p[2];
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;

		close(p[1]);
		_exit(read(p[0], &c, 1) == 0 ? 0 : 1);
	}
	close(p[0]);
	assert_int_equal(tl_parse(cryo_rlimits_parse, "[{\"type\": \"RLIMIT_NOFILE\", \"soft\": 77, \"hard\": 99}]", &spec, &err), 0);
	assert_int_equal(cryo_rlimits_apply(&spec, pid, &err), 0);
	cryo_rlimits_spec_free(&spec);
	snprintf(path, sizeof(path), "/proc/%d/limits", pid);
	assert_int_equal(cryo_read_file_at(AT_FDCWD, path, 65536, &limits, NULL), 0);
	assert_non_null(strstr(limits, "Max open files            77                   99"));
	free(limits);
	close(p[1]);
	assert_int_equal(tl_wait(pid), 0);
}

static void test_apply(void **state)
{
	assert_int_equal(tl_in_child(child), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_apply_pid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
