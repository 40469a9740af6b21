// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seccomp.h"
#include "util.h"
#include "testlib.h"

static void test_parse_valid(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_seccomp_spec spec;

	assert_int_equal(tl_parse(cryo_seccomp_parse, "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38,"
			       " \"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\", \"SCMP_ARCH_X32\"],"
			       " \"flags\": [\"SECCOMP_FILTER_FLAG_LOG\"],"
			       " \"syscalls\": [{\"names\": [\"read\", \"write\"], \"action\": \"SCMP_ACT_ALLOW\"},"
			       "  {\"names\": [\"personality\"], \"action\": \"SCMP_ACT_ALLOW\","
			       "   \"args\": [{\"index\": 0, \"value\": 4294967295, \"op\": \"SCMP_CMP_EQ\"},"
			       "             {\"index\": 1, \"value\": 7, \"valueTwo\": 1, \"op\": \"SCMP_CMP_MASKED_EQ\"}]},"
			       "  {\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}]}",
			       &spec, &err),
			 0);
	assert_true(spec.present);
	assert_int_equal(spec.default_action, SCMP_ACT_ERRNO(38));
	assert_int_equal(spec.n_arches, 3);
	assert_true(spec.flag_log);
	assert_false(spec.flag_tsync);
	assert_int_equal(spec.n_rules, 3);
	assert_int_equal(spec.rules[0].n_names, 2);
	assert_string_equal(spec.rules[0].names[1], "write");
	assert_int_equal(spec.rules[0].nrs[1], SYS_write);
	assert_int_equal(spec.rules[1].n_args, 2);
	assert_true(spec.rules[1].args[0].value == 4294967295u);
	assert_int_equal(spec.rules[1].args[1].op, SCMP_CMP_MASKED_EQ);
	assert_true(spec.rules[1].args[1].value_two == 1);
	assert_int_equal(spec.rules[2].action, SCMP_ACT_ERRNO(1));
	cryo_seccomp_spec_free(&spec);

	assert_int_equal(cryo_seccomp_parse(NULL, &spec, &err), 0);
	assert_false(spec.present);
	/* ERRNO without errnoRet is EPERM */
	assert_int_equal(tl_parse(cryo_seccomp_parse, "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}", &spec, &err), 0);
	assert_int_equal(spec.default_action, SCMP_ACT_ERRNO(EPERM));
	assert_false(spec.uses_notify);
	cryo_seccomp_spec_free(&spec);
	/* a listener: NOTIFY rules, metadata kept; without NOTIFY the path is ignored at run time */
	assert_int_equal(tl_parse(cryo_seccomp_parse, "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/run/a.sock\","
			       " \"listenerMetadata\": \"m=1\", \"syscalls\": [{\"names\": [\"mkdir\"],"
			       " \"action\": \"SCMP_ACT_NOTIFY\"}]}",
			       &spec, &err),
			 0);
	assert_true(spec.uses_notify);
	assert_string_equal(spec.listener_path, "/run/a.sock");
	assert_string_equal(spec.listener_metadata, "m=1");
	assert_int_equal(spec.rules[0].action, SCMP_ACT_NOTIFY);
	cryo_seccomp_spec_free(&spec);
	assert_int_equal(tl_parse(cryo_seccomp_parse, "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/run/a.sock\"}",
			       &spec, &err),
			 0);
	assert_false(spec.uses_notify);
	cryo_seccomp_spec_free(&spec);
}

static void expect_error(const char *json, int code, const char *msg)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_seccomp_spec spec;

	tl_expect_error(json, tl_parse(cryo_seccomp_parse, json, &spec, &err), code, &err, msg);
	assert_false(spec.present);
}

#define ALLOW "\"defaultAction\": \"SCMP_ACT_ALLOW\""

static void test_parse_invalid(void **state)
{
	expect_error("{}", -EINVAL, "linux.seccomp.defaultAction: missing");
	expect_error("{\"defaultAction\": \"SCMP_ACT_FOO\"}", -EINVAL,
		     "linux.seccomp.defaultAction: unknown action `SCMP_ACT_FOO`");
	expect_error("{\"defaultAction\": \"SCMP_ACT_NOTIFY\", \"listenerPath\": \"/run/x.sock\"}", -EINVAL,
		     "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY can't be the default action");
	expect_error("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": -1}", -EINVAL,
		     "linux.seccomp.defaultErrnoRet: must be a non-negative integer");
	expect_error("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 70000}", -EINVAL,
		     "linux.seccomp.defaultErrnoRet: 70000 is out of range (0..65535)");
	expect_error("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"defaultErrnoRet\": 1}", -EINVAL,
		     "linux.seccomp.defaultErrnoRet: only valid with SCMP_ACT_ERRNO or SCMP_ACT_TRACE");
	expect_error("{" ALLOW ", \"architectures\": [\"SCMP_ARCH_VAX\"]}", -EINVAL,
		     "linux.seccomp.architectures[0]: unknown architecture `SCMP_ARCH_VAX`");
	expect_error("{" ALLOW ", \"architectures\": [\"x86_64\"]}", -EINVAL,
		     "linux.seccomp.architectures[0]: unknown architecture `x86_64`");
	expect_error("{" ALLOW ", \"flags\": [\"SECCOMP_FILTER_FLAG_NOPE\"]}", -EINVAL,
		     "linux.seccomp.flags[0]: unknown flag `SECCOMP_FILTER_FLAG_NOPE`");
	expect_error("{" ALLOW ", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_NOTIFY\"}]}", -EINVAL,
		     "linux.seccomp: SCMP_ACT_NOTIFY needs linux.seccomp.listenerPath, the socket of the agent that "
		     "answers the notifications");
	expect_error("{" ALLOW ", \"listenerPath\": \"/x\", \"syscalls\": [{\"names\": [\"mkdir\", \"sendmsg\"],"
		     " \"action\": \"SCMP_ACT_NOTIFY\"}]}",
		     -EINVAL,
		     "linux.seccomp.syscalls[0]: SCMP_ACT_NOTIFY on `sendmsg`: the runtime sends the listener its fd "
		     "with sendmsg under the filter, it would wait for itself");
	expect_error("{" ALLOW ", \"listenerPath\": \"/x\", \"syscalls\": [{\"names\": [\"write\"],"
		     " \"action\": \"SCMP_ACT_NOTIFY\"}]}",
		     -EINVAL,
		     "linux.seccomp.syscalls[0]: SCMP_ACT_NOTIFY cannot be used for the write syscall: the init "
		     "reports a failed exec with write under the filter");
	expect_error("{" ALLOW ", \"listenerPath\": \"run/x.sock\"}", -EINVAL,
		     "linux.seccomp.listenerPath: `run/x.sock` is not an absolute path");
	expect_error("{" ALLOW ", \"listenerPath\": 3}", -EINVAL, "linux.seccomp.listenerPath: must be a string");
	expect_error("{" ALLOW ", \"listenerMetadata\": \"m\"}", -EINVAL,
		     "linux.seccomp.listenerMetadata: set without listenerPath");
	expect_error("{" ALLOW ", \"listenerPath\": \"/run/x.sock\", \"syscalls\": [{\"names\": [\"mkdir\"],"
		     " \"action\": \"SCMP_ACT_NOTIFY\", \"errnoRet\": 1}]}",
		     -EINVAL, "linux.seccomp.syscalls[0].errnoRet: only valid with SCMP_ACT_ERRNO or SCMP_ACT_TRACE");
	expect_error("{" ALLOW ", \"syscalls\": {}}", -EINVAL, "linux.seccomp.syscalls: must be an array");
	expect_error("{" ALLOW ", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ERRNO\"},"
		     " {\"names\": [\"read\", \"no_such_call\"], \"action\": \"SCMP_ACT_ERRNO\"}]}",
		     -EINVAL, "linux.seccomp.syscalls[1].names[1]: unknown syscall `no_such_call`");
	expect_error("{" ALLOW ", \"syscalls\": [{\"names\": [], \"action\": \"SCMP_ACT_ERRNO\"}]}", -EINVAL,
		     "linux.seccomp.syscalls[0].names: must not be empty");
	expect_error("{" ALLOW ", \"syscalls\": [{\"names\": [\"read\"]}]}", -EINVAL,
		     "linux.seccomp.syscalls[0].action: missing");
	expect_error("{" ALLOW ", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_KILL\","
		     " \"args\": [{\"index\": 6, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"}]}]}",
		     -EINVAL, "linux.seccomp.syscalls[0].args[0].index: 6 is out of range (0..5)");
	expect_error("{" ALLOW ", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_KILL\","
		     " \"args\": [{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_APPROX\"}]}]}",
		     -EINVAL, "linux.seccomp.syscalls[0].args[0].op: unknown operator `SCMP_CMP_APPROX`");
	expect_error("{" ALLOW ", \"syscalls\": [{\"names\": [\"read\"], \"action\": \"SCMP_ACT_KILL\","
		     " \"args\": [{\"index\": 0, \"op\": \"SCMP_CMP_EQ\"}]}]}",
		     -EINVAL, "linux.seccomp.syscalls[0].args[0].value: missing");
}

static void test_parse_bounds(void **state)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_seccomp_spec spec;

	json_object_object_add(o, "defaultAction", json_object_new_string("SCMP_ACT_ALLOW"));
	for (int i = 0; i < CRYO_SECCOMP_MAX_SYSCALLS + 1; i++) {
		struct json_object *rule = json_object_new_object(), *names = json_object_new_array();

		json_object_array_add(names, json_object_new_string("read"));
		json_object_object_add(rule, "names", names);
		json_object_object_add(rule, "action", json_object_new_string("SCMP_ACT_LOG"));
		json_object_array_add(arr, rule);
	}
	json_object_object_add(o, "syscalls", arr);
	assert_int_equal(cryo_seccomp_parse(o, &spec, &err), -EINVAL);
	assert_string_equal(err.msg, "linux.seccomp.syscalls: 4097 entries, at most 4096");
	cryo_error_clear(&err);
	json_object_put(o);
}

static int load(const char *json, bool nnp)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_seccomp_spec spec;

	if (tl_parse(cryo_seccomp_parse, json, &spec, &err) < 0) {
		fprintf(stderr, "parse: %s\n", err.msg);
		return -1;
	}
	if (nnp && prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) < 0)
		return -1;
	if (cryo_seccomp_apply(&spec, NULL, &err) < 0) {
		fprintf(stderr, "apply: %s\n", err.msg);
		cryo_seccomp_spec_free(&spec);
		return -1;
	}
	cryo_seccomp_spec_free(&spec);
	return 0;
}

#define FAILS_WITH(expr, e) ((expr) < 0 && errno == (e))

static int child_errno(void)
{
	char a[128], b[128];

	snprintf(a, sizeof(a), "%s/a", tl_dir);
	snprintf(b, sizeof(b), "%s/b", tl_dir);
	if (load("{" ALLOW ", \"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\"],"
		 " \"syscalls\": [{\"names\": [\"mkdir\", \"mkdirat\"], \"action\": \"SCMP_ACT_ERRNO\"},"
		 "  {\"names\": [\"umask\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 33,"
		 "   \"args\": [{\"index\": 0, \"value\": 18, \"op\": \"SCMP_CMP_EQ\"}]},"
		 "  {\"names\": [\"fchmodat\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 18,"
		 "   \"args\": [{\"index\": 2, \"value\": 3584, \"valueTwo\": 2048, \"op\": \"SCMP_CMP_MASKED_EQ\"}]},"
		 /* two conditions on one argument: either matches (runc's semantics) */
		 "  {\"names\": [\"personality\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 22,"
		 "   \"args\": [{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_EQ\"},"
		 "            {\"index\": 0, \"value\": 2, \"op\": \"SCMP_CMP_EQ\"}]}]}",
		 true) < 0)
		return 2;
	if (!FAILS_WITH(mkdir(a, 0700), EPERM))
		return 3;
	if (syscall(SYS_umask, 022) != -1 || errno != EDOM) /* 022 == 18, EDOM == 33 */
		return 4;
	if (syscall(SYS_umask, 077) < 0)
		return 5;
	/* allowed: creating a file, a plain fchmodat; denied: setuid (mode & 07000 == 04000) */
	if (close(creat(b, 0600)) < 0 || syscall(SYS_fchmodat, AT_FDCWD, b, 0644) < 0)
		return 6;
	if (!FAILS_WITH(syscall(SYS_fchmodat, AT_FDCWD, b, 04755), EXDEV))
		return 7;
	if (syscall(SYS_fchmodat, AT_FDCWD, b, 02755) < 0)
		return 8;
	if (!FAILS_WITH(syscall(SYS_personality, 1UL), EINVAL) || !FAILS_WITH(syscall(SYS_personality, 2UL), EINVAL))
		return 9;
	if (syscall(SYS_personality, 0xffffffffUL) < 0)
		return 10;
	return 0;
}

static int child_kill(void)
{
	if (load("{" ALLOW ", \"syscalls\": [{\"names\": [\"getppid\"], \"action\": \"SCMP_ACT_KILL_PROCESS\"}]}",
		 true) < 0)
		return 2;
	syscall(SYS_getppid);
	return 0;
}

static int child_default_errno(void)
{
	/* everything but the few calls this child (and ASan) makes fails with ENOSYS */
	if (load("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, \"syscalls\": ["
		 " {\"names\": [\"exit\", \"exit_group\", \"write\", \"getpid\"], \"action\": \"SCMP_ACT_ALLOW\"},"
		 /* what a sanitizer runtime needs around exit */
		 " {\"names\": [\"mmap\", \"munmap\", \"mprotect\", \"madvise\", \"brk\", \"sigaltstack\","
		 "  \"rt_sigaction\", \"rt_sigprocmask\", \"futex\", \"prctl\", \"gettid\", \"read\", \"close\","
		 "  \"openat\", \"newfstatat\", \"fstat\", \"sched_yield\"], \"action\": \"SCMP_ACT_ALLOW\"}]}",
		 true) < 0)
		return 2;
	if (syscall(SYS_getpid) < 0)
		return 3;
	if (!FAILS_WITH(syscall(SYS_getppid), ENOSYS))
		return 4;
	return 0;
}

/* Without NO_NEW_PRIVS and without CAP_SYS_ADMIN the kernel refuses the filter. */
static int child_no_nnp_no_cap(void)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_seccomp_spec spec;
	cap_value_t sa = CAP_SYS_ADMIN;
	cap_t caps = cap_get_proc();

	if (!caps || cap_set_flag(caps, CAP_EFFECTIVE, 1, &sa, CAP_CLEAR) < 0 || cap_set_proc(caps) < 0)
		return 2;
	cap_free(caps);
	if (tl_parse(cryo_seccomp_parse, "{" ALLOW ", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\"}]}", &spec,
		  &err) < 0)
		return 3;
	if (cryo_seccomp_apply(&spec, NULL, &err) != -EACCES || !err.msg ||
	    strcmp(err.msg, "seccomp: load filter (without noNewPrivileges it must be loaded while CAP_SYS_ADMIN "
			    "is held): Permission denied") != 0) {
		fprintf(stderr, "unexpected: %s\n", err.msg ? err.msg : "(none)");
		return 4;
	}
	cryo_seccomp_spec_free(&spec);
	cryo_error_clear(&err);
	return prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L) == 0 ? 0 : 5;
}

/* With CAP_SYS_ADMIN and no NNP it loads and NNP stays off. */
static int child_privileged_no_nnp(void)
{
	char a[128];

	snprintf(a, sizeof(a), "%s/c", tl_dir);
	/* a rule that repeats the default action is dropped, not an error */
	if (load("{" ALLOW ", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\"},"
		 " {\"names\": [\"getpid\"], \"action\": \"SCMP_ACT_ALLOW\"}]}", false) < 0)
		return 2;
	if (prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L) != 0)
		return 3;
	return FAILS_WITH(mkdir(a, 0700), EPERM) ? 0 : 4;
}

static void test_apply(void **state)
{
	if (geteuid() != 0)
		skip();
	assert_int_equal(tl_in_child(child_errno), 0);
	assert_int_equal(tl_in_child(child_kill), 128 + SIGSYS);
	assert_int_equal(tl_in_child(child_default_errno), 0);
	assert_int_equal(tl_in_child(child_no_nnp_no_cap), 0);
	assert_int_equal(tl_in_child(child_privileged_no_nnp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_parse_bounds),
		cmocka_unit_test(test_apply),
	};

	return cmocka_run_group_tests(tests, tl_group_setup_tmpdir, tl_group_teardown_tmpdir);
}
