// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hooks.h"
#include "util.h"
#include "testlib.h"

static void test_parse_valid(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_hooks_spec spec;

	assert_int_equal(tl_parse(cryo_hooks_parse, "{\"prestart\": [{\"path\": \"/bin/true\"},"
			       " {\"path\": \"/bin/sh\", \"args\": [\"sh\", \"-c\", \"exit 0\"], \"env\": [\"A=1\"], \"timeout\": 5}],"
			       " \"poststop\": [], \"createRuntime\": null, \"futureKind\": [1]}",
			       &spec, &err),
			 0);
	assert_int_equal(spec.n[CRYO_HOOK_PRESTART], 2);
	assert_int_equal(spec.n[CRYO_HOOK_POSTSTOP], 0);
	assert_int_equal(spec.n[CRYO_HOOK_CREATE_RUNTIME], 0);
	assert_string_equal(spec.hooks[CRYO_HOOK_PRESTART][0].path, "/bin/true");
	assert_string_equal(spec.hooks[CRYO_HOOK_PRESTART][0].args[0], "/bin/true");
	assert_null(spec.hooks[CRYO_HOOK_PRESTART][0].args[1]);
	assert_null(spec.hooks[CRYO_HOOK_PRESTART][0].env);
	assert_int_equal(spec.hooks[CRYO_HOOK_PRESTART][0].timeout_s, 0);
	assert_string_equal(spec.hooks[CRYO_HOOK_PRESTART][1].args[2], "exit 0");
	assert_string_equal(spec.hooks[CRYO_HOOK_PRESTART][1].env[0], "A=1");
	assert_int_equal(spec.hooks[CRYO_HOOK_PRESTART][1].timeout_s, 5);
	cryo_hooks_spec_free(&spec);
	assert_int_equal(cryo_hooks_parse(NULL, &spec, &err), 0);
	assert_int_equal(cryo_hooks_run(&spec, CRYO_HOOK_PRESTART, "{}", &err), 0);
}

static void expect_error(const char *json, const char *msg)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_hooks_spec spec;

	tl_expect_error(json, tl_parse(cryo_hooks_parse, json, &spec, &err), -EINVAL, &err, msg);
}

static void test_parse_invalid(void **state)
{
	expect_error("[]", "hooks: must be an object");
	expect_error("{\"prestart\": {}}", "hooks.prestart: must be an array");
	expect_error("{\"poststart\": [{\"args\": []}]}", "hooks.poststart[0].path: missing or not a string");
	expect_error("{\"poststop\": [{\"path\": \"/a\"}, {\"path\": \"bin/x\"}]}",
		     "hooks.poststop[1].path: `bin/x` is not an absolute path");
	expect_error("{\"createContainer\": [{\"path\": \"/a\", \"args\": [\"a\", 1]}]}",
		     "hooks.createContainer[0].args[1]: must be a string");
	expect_error("{\"startContainer\": [{\"path\": \"/a\", \"env\": [\"NOEQUALS\"]}]}",
		     "hooks.startContainer[0].env[0]: `NOEQUALS` is not NAME=VALUE");
	expect_error("{\"createRuntime\": [{\"path\": \"/a\", \"timeout\": 0}]}",
		     "hooks.createRuntime[0].timeout: must be a positive number of seconds (at most 86400)");
	expect_error("{\"createRuntime\": [{\"path\": \"/a\", \"timeout\": \"5\"}]}",
		     "hooks.createRuntime[0].timeout: must be a positive number of seconds (at most 86400)");
}

static void write_script(const char *name, const char *body)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tl_dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0755), 0);
}

static char *slurp(const char *name)
{
	char path[256], *buf = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", tl_dir, name);
	assert_int_equal(cryo_read_file_at(AT_FDCWD, path, 1 << 20, &buf, &len), 0);
	return buf;
}

/* json with every "@D" replaced by the test tl_dir */
static char *subst(const char *tmpl)
{
	size_t cap = strlen(tmpl) * 8 + 1, j = 0;
	char *out = malloc(cap);

	assert_non_null(out);
	for (const char *p = tmpl; *p;) {
		if (p[0] == '@' && p[1] == 'D') {
			j += (size_t)snprintf(out + j, cap - j, "%s", tl_dir);
			p += 2;
		} else {
			out[j++] = *p++;
		}
	}
	out[j] = '\0';
	return out;
}

static int run(const char *tmpl, enum cryo_hook_kind kind, const char *state_json, struct cryo_error *err)
{
	struct cryo_hooks_spec spec;
	char *json = subst(tmpl);
	int r;

	r = tl_parse(cryo_hooks_parse, json, &spec, err);
	free(json);
	assert_int_equal(r, 0);
	r = cryo_hooks_run(&spec, kind, state_json, err);
	cryo_hooks_spec_free(&spec);
	return r;
}

static void test_run_order_stdin_env(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	const char *st = "{\"ociVersion\":\"1.0.2\",\"id\":\"c1\",\"status\":\"creating\",\"pid\":42,\"bundle\":\"/b\"}";
	char *got;

	write_script("append.sh", "echo \"$1 $FOO\" >> \"$(dirname \"$0\")/order\"");
	write_script("stdin.sh", "cat > \"$(dirname \"$0\")/stdin\"");
	setenv("FOO", "inherited", 1);
	assert_int_equal(run("{\"createRuntime\": ["
			     "{\"path\": \"@D/append.sh\", \"args\": [\"@D/append.sh\", \"first\"], \"env\": [\"FOO=given\"]},"
			     "{\"path\": \"@D/stdin.sh\"},"
			     "{\"path\": \"@D/append.sh\", \"args\": [\"@D/append.sh\", \"second\"], \"timeout\": 10}]}",
			     CRYO_HOOK_CREATE_RUNTIME, st, &err),
			 0);
	got = slurp("order");
	/* given env replaces the environment; without env the caller's is inherited */
	assert_string_equal(got, "first given\nsecond inherited\n");
	free(got);
	got = slurp("stdin");
	assert_string_equal(got, st);
	free(got);
	unsetenv("FOO");
}

static void test_run_failure(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	char want[512], path[256];

	write_script("fail.sh", "echo some output; echo boom >&2; exit 3");
	write_script("never.sh", "touch \"$(dirname \"$0\")/never\"");
	assert_int_equal(run("{\"poststop\": [{\"path\": \"@D/fail.sh\"},"
			     " {\"path\": \"@D/never.sh\"}]}",
			     CRYO_HOOK_POSTSTOP, "{}", &err),
			 -ECANCELED);
	snprintf(want, sizeof(want), "error running hook poststop[0] `%s/fail.sh` exited with status 3: some output boom", tl_dir);
	assert_string_equal(err.msg, want);
	cryo_error_clear(&err);
	/* stopped at the first failure */
	snprintf(path, sizeof(path), "%s/never", tl_dir);
	assert_int_equal(access(path, F_OK), -1);

	assert_int_equal(run("{\"prestart\": [{\"path\": \"@D/missing\"}]}", CRYO_HOOK_PRESTART, "{}", &err),
			 -ECANCELED);
	snprintf(want, sizeof(want),
		 "error running hook prestart[0] `%s/missing` exited with status 127: cannot execute: No such file or directory", tl_dir);
	assert_string_equal(err.msg, want);
	cryo_error_clear(&err);

	write_script("signal.sh", "kill -TERM $$");
	assert_int_equal(run("{\"prestart\": [{\"path\": \"@D/signal.sh\"}]}", CRYO_HOOK_PRESTART, "{}", &err),
			 -ECANCELED);
	snprintf(want, sizeof(want), "error running hook prestart[0] `%s/signal.sh` killed by signal 15 (terminated)", tl_dir);
	assert_string_equal(err.msg, want);
	cryo_error_clear(&err);
}

static void test_run_timeout(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	char want[512];
	int64_t t0 = cryo_now_ms();

	write_script("slow.sh", "echo started; exec sleep 30");
	assert_int_equal(run("{\"startContainer\": [{\"path\": \"@D/slow.sh\", \"timeout\": 1}]}",
			     CRYO_HOOK_START_CONTAINER, "{}", &err),
			 -ETIMEDOUT);
	assert_true(cryo_now_ms() - t0 < 5000);
	snprintf(want, sizeof(want), "error running hook startContainer[0] `%s/slow.sh` timed out after 1 s: started", tl_dir);
	assert_string_equal(err.msg, want);
	cryo_error_clear(&err);
}

static void test_run_daemon_and_big_output(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int64_t t0 = cryo_now_ms();

	/* a hook that leaves a child holding its stdout: we return when the hook exits */
	write_script("daemon.sh", "sleep 5 & exit 0");
	assert_int_equal(run("{\"poststart\": [{\"path\": \"@D/daemon.sh\"}]}", CRYO_HOOK_POSTSTART, "{}", &err), 0);
	assert_true(cryo_now_ms() - t0 < 3000);

	write_script("noisy.sh", "head -c 200000 /dev/zero | tr '\\0' x; echo; echo the-reason; exit 1");
	assert_int_equal(run("{\"poststart\": [{\"path\": \"@D/noisy.sh\"}]}", CRYO_HOOK_POSTSTART, "{}", &err),
			 -ECANCELED);
	assert_true(strlen(err.msg) < CRYO_HOOKS_OUTPUT_MAX + 300);
	if (!strstr(err.msg, "exited with status 1: ... xxx"))
		fail_msg("%.300s", err.msg);
	assert_non_null(strstr(err.msg, "x the-reason"));
	cryo_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_run_order_stdin_env),
		cmocka_unit_test(test_run_failure),
		cmocka_unit_test(test_run_timeout),
		cmocka_unit_test(test_run_daemon_and_big_output),
	};

	return cmocka_run_group_tests(tests, tl_group_setup_tmpdir, tl_group_teardown_tmpdir);
}
