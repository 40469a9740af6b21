// SPDX-License-Identifier: GPL-2.0-only
/*
 * CRIU's external mounts: checkpoint dumps mounts under names, restore
 * maps names to host sources. One module builds both lists; here every
 * name dumped must be a name restore maps (else CRIU fails at restore
 * with "no external mount for ..."), bind sources resolve against the
 * bundle given to restore, and masked files go by the /dev/null device.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "extmounts.h"
#include "spec.h"
#include "state.h"
#include "util.h"
#include "testlib.h"

static const char config[] =
	"{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
	"\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"},"
	"\"mounts\":["
	"{\"destination\":\"/data\",\"type\":\"bind\",\"source\":\"data\",\"options\":[\"rbind\"]},"
	"{\"destination\":\"/etc/resolv.conf\",\"type\":\"bind\",\"source\":\"/etc/resolv.conf\",\"options\":[\"bind\",\"ro\"]},"
	"{\"destination\":\"/tmp\",\"type\":\"tmpfs\",\"source\":\"tmpfs\"}],"
	"\"linux\":{\"namespaces\":[{\"type\":\"mount\"}],"
	"\"maskedPaths\":[\"/proc/version\",\"/proc/sys\",\"/nonexistent-cryo\"]}}";

static const char *lookup(char **pairs, const char *key)
{
	for (; pairs && pairs[0] && pairs[1]; pairs += 2)
		if (strcmp(pairs[0], key) == 0)
			return pairs[1];
	return NULL;
}

static void test_dumped_names_are_mapped(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *spec = NULL;
	char **dump = NULL, **restore = NULL, **p;
	size_t n = 0;

	(void)state;
	assert_int_equal(cryo_spec_parse(config, strlen(config), &spec, &err), 0);
	/* this process stands for the container: its root is the host's */
	assert_int_equal(cryo_extmounts_dump(spec, getpid(), &dump, &err), 0);
	assert_int_equal(cryo_extmounts_restore(spec, "/b", &restore, &err), 0);
	for (p = dump; p[0] && p[1]; p += 2, n++) {
		if (!lookup(restore, p[1]))
			fail_msg("`%s` is dumped as `%s`, which restore does not map", p[0], p[1]);
	}
	assert_int_equal(n, 2 + ARRAY_SIZE(cryo_mount_devices) + 1);
	/* binds by destination, sources from the bundle given to restore */
	assert_string_equal(lookup(dump, "/data"), "/data");
	assert_string_equal(lookup(restore, "/data"), "/b/data");
	assert_string_equal(lookup(restore, "/etc/resolv.conf"), "/etc/resolv.conf");
	assert_null(lookup(dump, "/tmp"));
	/* a masked file is the /dev/null device; a masked dir or a missing path is no external mount */
	assert_string_equal(lookup(dump, "/proc/version"), "/dev/null");
	assert_null(lookup(dump, "/proc/sys"));
	assert_null(lookup(dump, "/nonexistent-cryo"));
	assert_string_equal(lookup(restore, "/dev/null"), "/dev/null");
	cryo_strv_free(dump);
	cryo_strv_free(restore);
	cryo_spec_free(spec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dumped_names_are_mapped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
