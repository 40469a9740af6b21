// SPDX-License-Identifier: GPL-2.0-only
/*
 * CRIU's external mounts: checkpoint dumps mounts under names, restore
 * maps names to host sources. One module builds both lists; here every
 * name dumped must be a name restore maps (else CRIU fails at restore
 * with "no external mount for ..."), bind sources resolve against the
 * bundle given to restore, and masked files go by the /dev/null device.
 */
#include <errno.h>
#include <limits.h>
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
	assert_int_equal(cryo_extmounts_restore(spec, "/b", "/cryo-t/c1", &restore, &err), 0);
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

/*
 * A "cgroup" mount without a cgroup namespace is made of binds of the
 * container's v1 cgroups (where the host has v1 hierarchies): each is an
 * external mount, dumped by its path in the container, restored to the
 * new container's cgroup. In a cgroup namespace it is none.
 */
#define CGROUP_MOUNT_CONFIG(NS)                                                                                   \
	"{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"},"             \
	"\"mounts\":[{\"destination\":\"/sys/fs/cgroup\",\"type\":\"cgroup\",\"source\":\"cgroup\",\"options\":[\"ro\"]}]," \
	"\"linux\":{\"namespaces\":[{\"type\":\"mount\"}" NS "]}}"

static void test_cgroup_binds(void **state)
{
	static const char *const cfgs[] = { CGROUP_MOUNT_CONFIG(""), CGROUP_MOUNT_CONFIG(",{\"type\":\"cgroup\"}") };
	bool v1 = access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK) == 0;

	(void)state;
	for (int ns = 0; ns < 2; ns++) {
		struct cryo_error err = CRYO_ERROR_INIT;
		struct cryo_spec *spec = NULL;
		char **dump = NULL, **restore = NULL, **p;

		assert_int_equal(cryo_spec_parse(cfgs[ns], strlen(cfgs[ns]), &spec, &err), 0);
		assert_int_equal(cryo_extmounts_dump(spec, getpid(), &dump, &err), 0);
		assert_int_equal(cryo_extmounts_restore(spec, "/b", "/cryo-t/c1", &restore, &err), 0);
		for (p = dump; p[0] && p[1]; p += 2)
			if (!lookup(restore, p[1]))
				fail_msg("`%s` is dumped as `%s`, which restore does not map", p[0], p[1]);
		if (v1 && !ns) {
			assert_string_equal(lookup(dump, "/sys/fs/cgroup/memory"), "/sys/fs/cgroup/memory");
			assert_string_equal(lookup(restore, "/sys/fs/cgroup/memory"), "/sys/fs/cgroup/memory/cryo-t/c1");
		} else {
			assert_null(lookup(dump, "/sys/fs/cgroup/memory"));
			assert_null(lookup(restore, "/sys/fs/cgroup/memory"));
		}
		/* cgroup2 and named hierarchies are never binds */
		assert_null(lookup(dump, "/sys/fs/cgroup/unified"));
		assert_null(lookup(dump, "/sys/fs/cgroup/systemd"));
		cryo_strv_free(dump);
		cryo_strv_free(restore);
		cryo_spec_free(spec);
	}
}

/*
 * A bind mount whose destination goes through a symlink in the container
 * is where the link leads (runc's checkpoint.bats: /conf -> /real/conf):
 * CRIU finds the mount there, so that is the mountpoint dumped, under the
 * config's destination as its name (restore maps that name).
 */
static void test_bind_destination_through_symlinks(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *spec = NULL;
	char dir[] = "/tmp/cryo-extmounts.XXXXXX", real[PATH_MAX], link[PATH_MAX], cfg[8192];
	char want_abs[PATH_MAX], want_rel[PATH_MAX], want_up[PATH_MAX], want_missing[PATH_MAX];
	char **dump = NULL, **restore = NULL;
	int fd;

	(void)state;
	fd = tl_tmpdir(dir);

	assert_true(fd >= 0);
	close(fd);
	snprintf(real, sizeof(real), "%s/real/conf", dir);
	assert_int_equal(cryo_mkdir_p(real, 0755), 0);
	/* absolute, relative, and a relative one with `..` through another link */
	snprintf(link, sizeof(link), "%s/abs", dir);
	assert_int_equal(symlink(real, link), 0);
	snprintf(link, sizeof(link), "%s/rel", dir);
	assert_int_equal(symlink("real/conf", link), 0);
	snprintf(link, sizeof(link), "%s/real/up", dir);
	assert_int_equal(symlink("../rel", link), 0);
	snprintf(cfg, sizeof(cfg),
		 "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
		 "\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"},\"mounts\":["
		 "{\"destination\":\"%s/abs\",\"type\":\"bind\",\"source\":\"a\",\"options\":[\"bind\"]},"
		 "{\"destination\":\"%s/rel/x\",\"type\":\"bind\",\"source\":\"b\",\"options\":[\"bind\"]},"
		 "{\"destination\":\"%s/real/up/\",\"type\":\"bind\",\"source\":\"c\",\"options\":[\"bind\"]},"
		 "{\"destination\":\"%s/missing/abs\",\"type\":\"bind\",\"source\":\"d\",\"options\":[\"bind\"]}],"
		 "\"linux\":{\"namespaces\":[{\"type\":\"mount\"}]}}",
		 dir, dir, dir, dir);
	assert_int_equal(cryo_spec_parse(cfg, strlen(cfg), &spec, &err), 0);
	assert_int_equal(cryo_extmounts_dump(spec, getpid(), &dump, &err), 0);
	assert_int_equal(cryo_extmounts_restore(spec, "/b", "/cryo-t/c1", &restore, &err), 0);
	snprintf(want_abs, sizeof(want_abs), "%s/real/conf", dir);
	snprintf(want_rel, sizeof(want_rel), "%s/real/conf/x", dir);
	snprintf(want_up, sizeof(want_up), "%s/real/conf", dir);
	snprintf(want_missing, sizeof(want_missing), "%s/missing/abs", dir);
	/* /tmp itself may be a link elsewhere: compare what each name maps from */
	for (char **p = dump; p[0] && p[1]; p += 2) {
		const char *want = NULL;

		if (strstr(p[1], "/abs") && !strstr(p[1], "/missing/"))
			want = want_abs;
		else if (strstr(p[1], "/rel/x"))
			want = want_rel;
		else if (strstr(p[1], "/real/up"))
			want = want_up;
		else if (strstr(p[1], "/missing/abs"))
			want = want_missing;
		if (!want)
			continue;
		if (strcmp(p[0] + strlen(p[0]) - strlen(want + strlen(dir)), want + strlen(dir)) != 0)
			fail_msg("`%s` is dumped at `%s`, not at .../%s", p[1], p[0], want + strlen(dir) + 1);
		/* the name is the config's destination, which restore maps */
		assert_non_null(lookup(restore, p[1]));
	}
	assert_non_null(lookup(dump, want_missing));
	cryo_strv_free(dump);
	cryo_strv_free(restore);
	cryo_spec_free(spec);
	tl_rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dumped_names_are_mapped),
		cmocka_unit_test(test_cgroup_binds),
		cmocka_unit_test(test_bind_destination_through_symlinks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
