// SPDX-License-Identifier: GPL-2.0-only
/*
 * Namespaces a container joins by path (a Kubernetes pod's network and,
 * with shareProcessNamespace, its pid namespace) are CRIU externals:
 * the dump names them by the inode the container's init is in, under
 * runc's keys; the restore hands CRIU an fd of the namespace the bundle
 * joins, and only one of the right type. Namespaces the container owns,
 * and joined ipc/uts/mount namespaces, are none of this.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extns.h"
#include "spec.h"
#include "testlib.h"

static struct cryo_spec *spec_with(const char *net, const char *pid, const char *ipc)
{
	char json[1024];
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *spec = NULL;

	snprintf(json, sizeof(json),
		 "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"},"
		 "\"linux\":{\"namespaces\":[{\"type\":\"mount\"},"
		 "{\"type\":\"network\"%s%s%s},{\"type\":\"pid\"%s%s%s},{\"type\":\"ipc\"%s%s%s}]}}",
		 net ? ",\"path\":\"" : "", net ? net : "", net ? "\"" : "", pid ? ",\"path\":\"" : "", pid ? pid : "",
		 pid ? "\"" : "", ipc ? ",\"path\":\"" : "", ipc ? ipc : "", ipc ? "\"" : "");
	assert_int_equal(cryo_spec_parse(json, strlen(json), &spec, &err), 0);
	return spec;
}

static void test_dump_names_joined_net_and_pid(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *spec = spec_with("/proc/self/ns/net", "/proc/self/ns/pid", "/proc/self/ns/ipc");
	struct cryo_extns x;
	struct stat net, pid;
	char want[128];

	(void)state;
	assert_int_equal(stat("/proc/self/ns/net", &net), 0);
	assert_int_equal(stat("/proc/self/ns/pid", &pid), 0);
	/* this process stands for the container's init */
	assert_int_equal(cryo_extns_dump(spec, getpid(), &x, &err), 0);
	assert_int_equal(x.n, 2);
	snprintf(want, sizeof(want), "net[%llu]:extRootNetNS", (unsigned long long)net.st_ino);
	assert_string_equal(x.ns[0].external, want);
	assert_string_equal(x.ns[0].key, "extRootNetNS");
	snprintf(want, sizeof(want), "pid[%llu]:extRootPidNS", (unsigned long long)pid.st_ino);
	assert_string_equal(x.ns[1].external, want);
	assert_null(x.ns[2].key); /* the list's end: ipc is dumped as the container's */
	assert_true(cryo_extns_joined(spec, CRYO_NS_NET));
	assert_false(cryo_extns_joined(spec, CRYO_NS_IPC));
	cryo_extns_done(&x);
	cryo_spec_free(spec);
}

static void test_owned_namespaces_are_not_external(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *spec = spec_with(NULL, NULL, "/proc/self/ns/ipc");
	struct cryo_extns x;

	(void)state;
	assert_int_equal(cryo_extns_dump(spec, getpid(), &x, &err), 0);
	assert_int_equal(x.n, 0);
	assert_null(x.ns[0].key);
	cryo_extns_done(&x);
	assert_int_equal(cryo_extns_restore(spec, &x, &err), 0);
	assert_int_equal(x.n, 0);
	cryo_extns_done(&x);
	cryo_spec_free(spec);
}

static void test_restore_opens_the_bundles_namespace(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *spec = spec_with("/proc/self/ns/net", NULL, NULL);
	struct cryo_extns x;
	struct stat a, b;

	(void)state;
	assert_int_equal(cryo_extns_restore(spec, &x, &err), 0);
	assert_int_equal(x.n, 1);
	assert_string_equal(x.ns[0].key, "extRootNetNS");
	assert_null(x.ns[0].external);
	assert_true(x.ns[0].fd >= 0);
	/* CRIU inherits it: not close-on-exec */
	assert_int_equal(fcntl(x.ns[0].fd, F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(fstat(x.ns[0].fd, &a), 0);
	assert_int_equal(stat("/proc/self/ns/net", &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	cryo_extns_done(&x);
	assert_int_equal(x.n, 0);
	cryo_spec_free(spec);
}

static void test_restore_refuses_a_namespace_of_another_type(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *spec = spec_with("/proc/self/ns/uts", NULL, NULL);
	struct cryo_spec *missing = spec_with("/nonexistent-cryo-netns", NULL, NULL);
	struct cryo_extns x;

	(void)state;
	assert_int_equal(cryo_extns_restore(spec, &x, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "is not a net namespace"));
	cryo_error_clear(&err);
	assert_int_equal(cryo_extns_restore(missing, &x, &err), -ENOENT);
	cryo_error_clear(&err);
	cryo_spec_free(spec);
	cryo_spec_free(missing);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump_names_joined_net_and_pid),
		cmocka_unit_test(test_owned_namespaces_are_not_external),
		cmocka_unit_test(test_restore_opens_the_bundles_namespace),
		cmocka_unit_test(test_restore_refuses_a_namespace_of_another_type),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
