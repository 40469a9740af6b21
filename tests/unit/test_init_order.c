// SPDX-License-Identifier: GPL-2.0-only
/*
 * The spec modules composed in the order the container init uses them
 * (documented in caps.h / seccomp.h / rlimits.h), from one config.json
 * "process" + "linux.seccomp", ending in a real execve whose view of
 * itself is checked: capabilities, NoNewPrivs, seccomp mode, limits and a
 * denied syscall.
 */
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "rlimits.h"
#include "seccomp.h"
#include "util.h"
#include "testlib.h"

static const char *config =
	"{\"process\": {"
	"  \"capabilities\": {"
	"    \"bounding\": [\"CAP_CHOWN\", \"CAP_KILL\", \"CAP_NET_BIND_SERVICE\"],"
	"    \"effective\": [\"CAP_KILL\"], \"permitted\": [\"CAP_KILL\", \"CAP_NET_BIND_SERVICE\"],"
	"    \"inheritable\": [\"CAP_NET_BIND_SERVICE\"], \"ambient\": [\"CAP_NET_BIND_SERVICE\"]},"
	"  \"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"soft\": 321, \"hard\": 654}]},"
	" \"linux\": {\"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": ["
	"  {\"names\": [\"mkdir\", \"mkdirat\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 13}]}}}";

/* What runtime/oci/init.c's init does between `start` and execve. */
static int init_sequence(bool nnp, uid_t uid, const char *want_eff)
{
	struct json_object *root = json_tokener_parse(config), *proc, *lnx, *v;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_caps_spec caps;
	struct cryo_seccomp_spec sc;
	struct cryo_rlimits_spec rl;
	char cmd[1024];

	if (!root || !json_object_object_get_ex(root, "process", &proc) ||
	    !json_object_object_get_ex(root, "linux", &lnx))
		return 2;
	/* parse everything first: a bad config fails before anything changed */
	if (cryo_caps_parse(json_object_object_get_ex(proc, "capabilities", &v) ? v : NULL, &caps, &err) < 0 ||
	    cryo_rlimits_parse(json_object_object_get_ex(proc, "rlimits", &v) ? v : NULL, &rl, &err) < 0 ||
	    cryo_seccomp_parse(json_object_object_get_ex(lnx, "seccomp", &v) ? v : NULL, &sc, &err) < 0)
		goto fail;
	json_object_put(root);

	if (cryo_rlimits_apply(&rl, 0, &err) < 0)
		goto fail;
	/* without NNP the kernel wants CAP_SYS_ADMIN: load while still privileged */
	if (!nnp && cryo_seccomp_apply(&sc, NULL, &err) < 0)
		goto fail;
	if (cryo_caps_prepare(&caps, &err) < 0)
		goto fail;
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0) {
		cryo_error_set(&err, errno, "setuid");
		goto fail;
	}
	if (cryo_caps_apply(&caps, &err) < 0)
		goto fail;
	if (nnp && prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) < 0) {
		cryo_error_set(&err, errno, "no_new_privs");
		goto fail;
	}
	if (nnp && cryo_seccomp_apply(&sc, NULL, &err) < 0)
		goto fail;
	cryo_seccomp_spec_free(&sc);
	cryo_rlimits_spec_free(&rl);

	snprintf(cmd, sizeof(cmd),
		 "s=/proc/self/status; "
		 "grep -q '^CapBnd:.*0000000000000421$' $s || { echo bad CapBnd; exit 1; }; "
		 "grep -q '^CapEff:.*%s$' $s || { grep Cap $s; echo bad CapEff; exit 1; }; "
		 "grep -q '^CapAmb:.*0000000000000400$' $s || { echo bad CapAmb; exit 1; }; "
		 "grep -q '^NoNewPrivs:.%d$' $s || { echo bad NoNewPrivs; exit 1; }; "
		 "grep -q '^Seccomp:.2$' $s || { echo bad Seccomp; exit 1; }; "
		 "test \"$(ulimit -n)\" = 321 && test \"$(ulimit -Hn)\" = 654 || { echo bad limits; exit 1; }; "
		 "mkdir %s/x 2>/dev/null && { echo mkdir allowed; exit 1; }; "
		 "test -d %s/x && exit 1; exit 0",
		 want_eff, nnp ? 1 : 0, tl_dir, tl_dir);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	return 127;
fail:
	fprintf(stderr, "init sequence: %s\n", err.msg ? err.msg : "?");
	return 3;
}

static int run(bool nnp, uid_t uid, const char *want_eff)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(init_sequence(nnp, uid, want_eff));
	return tl_wait(pid);
}

static void test_order(void **state)
{
	if (geteuid() != 0)
		skip();
	assert_int_equal(chmod(tl_dir, 0777), 0);
	/* uid 1000 after execve: effective = ambient = CAP_NET_BIND_SERVICE (0x400) */
	assert_int_equal(run(true, 1000, "0000000000000400"), 0);
	assert_int_equal(run(false, 1000, "0000000000000400"), 0);
	/*
	 * uid 0: execve gives root bounding|inheritable (0x421), except that
	 * with NO_NEW_PRIVS it can't grow past the old permitted set (0x420).
	 */
	assert_int_equal(run(false, 0, "0000000000000421"), 0);
	assert_int_equal(run(true, 0, "0000000000000420"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
	};

	return cmocka_run_group_tests(tests, tl_group_setup_tmpdir, tl_group_teardown_tmpdir);
}
