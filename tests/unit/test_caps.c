// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps.h"
#include "util.h"
#include "testlib.h"

#define BIT(c) (UINT64_C(1) << (c))

static void test_parse_valid(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_caps_spec spec;

	assert_int_equal(tl_parse(cryo_caps_parse, "{\"bounding\": [\"CAP_CHOWN\", \"CAP_KILL\"], \"effective\": [\"CAP_KILL\"],"
			       " \"permitted\": [\"CAP_KILL\"], \"ambient\": [], \"unknownField\": 1}", &spec, &err), 0);
	assert_true(spec.present);
	assert_true(spec.sets[CRYO_CAPS_BOUNDING] == (BIT(CAP_CHOWN) | BIT(CAP_KILL)));
	assert_true(spec.sets[CRYO_CAPS_EFFECTIVE] == BIT(CAP_KILL));
	assert_true(spec.sets[CRYO_CAPS_PERMITTED] == BIT(CAP_KILL));
	assert_true(spec.sets[CRYO_CAPS_INHERITABLE] == 0);
	assert_true(spec.sets[CRYO_CAPS_AMBIENT] == 0);
	cryo_caps_spec_free(&spec);

	/* absent: nothing to do */
	assert_int_equal(cryo_caps_parse(NULL, &spec, &err), 0);
	assert_false(spec.present);
	assert_int_equal(tl_parse(cryo_caps_parse, "{}", &spec, &err), 0);
	assert_true(spec.present);
	assert_true(spec.sets[CRYO_CAPS_BOUNDING] == 0);
}

static void expect_error(const char *json, const char *msg)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_caps_spec spec;

	tl_expect_error(json, tl_parse(cryo_caps_parse, json, &spec, &err), -EINVAL, &err, msg);
}

static void test_parse_invalid(void **state)
{
	expect_error("{\"bounding\": [\"CAP_CHOWN\", \"CAP_NOPE\"]}",
		     "process.capabilities.bounding[1]: unknown capability `CAP_NOPE`");
	expect_error("{\"effective\": [\"12\"]}", "process.capabilities.effective[0]: unknown capability `12`");
	expect_error("{\"ambient\": [\"chown\"]}", "process.capabilities.ambient[0]: unknown capability `chown`");
	expect_error("{\"permitted\": \"CAP_KILL\"}", "process.capabilities.permitted: must be an array of strings");
	expect_error("{\"inheritable\": [7]}", "process.capabilities.inheritable[0]: must be a string");
	expect_error("[]", "process.capabilities: must be an object");
}

static int status_mask(const char *key, uint64_t *ret)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	int r = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':') {
			*ret = strtoull(line + strlen(key) + 1, NULL, 16);
			r = 0;
		}
	}
	fclose(f);
	return r;
}

static int check(const char *key, uint64_t want)
{
	uint64_t got = 0;

	if (status_mask(key, &got) < 0 || got != want) {
		fprintf(stderr, "%s: got %016llx want %016llx\n", key, (unsigned long long)got,
			(unsigned long long)want);
		return 1;
	}
	return 0;
}

static struct cryo_caps_spec functional_spec(void)
{
	struct cryo_caps_spec s = { .present = true };

	s.sets[CRYO_CAPS_BOUNDING] = BIT(CAP_CHOWN) | BIT(CAP_KILL) | BIT(CAP_NET_BIND_SERVICE);
	s.sets[CRYO_CAPS_PERMITTED] = BIT(CAP_CHOWN) | BIT(CAP_NET_BIND_SERVICE);
	s.sets[CRYO_CAPS_EFFECTIVE] = BIT(CAP_CHOWN);
	s.sets[CRYO_CAPS_INHERITABLE] = BIT(CAP_NET_BIND_SERVICE);
	s.sets[CRYO_CAPS_AMBIENT] = BIT(CAP_NET_BIND_SERVICE);
	return s;
}

static int child_root(void)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_caps_spec s = functional_spec();

	if (cryo_caps_apply(&s, &err) < 0) {
		fprintf(stderr, "apply: %s\n", err.msg);
		return 1;
	}
	return check("CapBnd", s.sets[CRYO_CAPS_BOUNDING]) | check("CapEff", s.sets[CRYO_CAPS_EFFECTIVE]) |
	       check("CapPrm", s.sets[CRYO_CAPS_PERMITTED]) | check("CapInh", s.sets[CRYO_CAPS_INHERITABLE]) |
	       check("CapAmb", s.sets[CRYO_CAPS_AMBIENT]);
}

/* The container-init order: prepare, setuid away from root, apply, exec. */
static int child_setuid_exec(void)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_caps_spec s = functional_spec();
	int r;

	if (cryo_caps_prepare(&s, &err) < 0 || setgroups(0, NULL) < 0 || setresgid(1000, 1000, 1000) < 0 ||
	    setresuid(1000, 1000, 1000) < 0 || cryo_caps_apply(&s, &err) < 0) {
		fprintf(stderr, "prepare/setuid/apply: %s\n", err.msg ? err.msg : strerror(errno));
		return 1;
	}
	r = check("CapBnd", s.sets[CRYO_CAPS_BOUNDING]) | check("CapEff", s.sets[CRYO_CAPS_EFFECTIVE]) |
	    check("CapPrm", s.sets[CRYO_CAPS_PERMITTED]) | check("CapAmb", s.sets[CRYO_CAPS_AMBIENT]);
	if (r)
		return r;
	/* after execve as uid 1000 only the ambient set survives into effective */
	execl("/bin/sh", "sh", "-c",
	      "grep -q '^CapEff:.*0000000000000400$' /proc/self/status && "
	      "grep -q '^CapAmb:.*0000000000000400$' /proc/self/status && "
	      "grep -q '^CapBnd:.*0000000000000421$' /proc/self/status",
	      (char *)NULL);
	return 127;
}

static int child_bad_ambient(void)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_caps_spec s = functional_spec();

	s.sets[CRYO_CAPS_AMBIENT] |= BIT(CAP_CHOWN); /* not inheritable */
	if (cryo_caps_apply(&s, &err) != -EPERM || !err.msg ||
	    !strstr(err.msg, "raise ambient CAP_CHOWN (it must be in both permitted and inheritable)")) {
		fprintf(stderr, "unexpected: %s\n", err.msg ? err.msg : "(none)");
		return 1;
	}
	return 0;
}

static void test_apply(void **state)
{
	if (geteuid() != 0)
		skip();
	assert_int_equal(tl_in_child(child_root), 0);
	assert_int_equal(tl_in_child(child_setuid_exec), 0);
	assert_int_equal(tl_in_child(child_bad_ambient), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_invalid),
		cmocka_unit_test(test_apply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
