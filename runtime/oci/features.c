// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/stat.h>
#include <unistd.h>

#include <seccomp.h>

#include "features.h"
#include "kmod.h"
#include "seccomp.h"
#include "spec.h"
#include "step.h"
#include "version.h"

static struct json_object *string_array(const char *const *v, size_t n)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	return a;
}

static bool path_exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

/*
 * What the features document says cryo supports is asked of the parsers
 * that decide it (spec.c, seccomp.c), one candidate at a time, so the
 * document can never claim more — or less — than a config.json gets.
 * The candidates are the values the OCI spec and runc know.
 */
static const char *const mount_option_candidates[] = {
	"acl", "async", "atime", "bind", "defaults", "dev", "diratime", "dirsync", "exec", "idmap",
	"iversion", "lazytime", "loud", "mand", "noacl", "noatime", "nodev", "nodiratime", "noexec",
	"noiversion", "nolazytime", "nomand", "norelatime", "nostrictatime", "nosuid", "nosymfollow",
	"private", "ratime", "rbind", "rdev", "rdiratime", "relatime", "remount", "rexec", "ridmap",
	"rnoatime", "rnodev", "rnodiratime", "rnoexec", "rnorelatime", "rnostrictatime", "rnosuid",
	"rnosymfollow", "ro", "rprivate", "rrelatime", "rro", "rrw", "rshared", "rslave", "rstrictatime",
	"rsuid", "rsymfollow", "runbindable", "rw", "shared", "silent", "slave", "strictatime", "suid",
	"symfollow", "sync", "tmpcopyup", "unbindable",
};

static const char *const seccomp_action_candidates[] = {
	"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
	"SCMP_ACT_LOG", "SCMP_ACT_NOTIFY", "SCMP_ACT_TRACE", "SCMP_ACT_TRAP",
};

static const char *const seccomp_operator_candidates[] = {
	"SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ",
	"SCMP_CMP_NE",
};

static const char *const seccomp_arch_candidates[] = {
	"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM", "SCMP_ARCH_LOONGARCH64", "SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64",
	"SCMP_ARCH_MIPS64N32", "SCMP_ARCH_MIPSEL", "SCMP_ARCH_MIPSEL64", "SCMP_ARCH_MIPSEL64N32",
	"SCMP_ARCH_PARISC", "SCMP_ARCH_PARISC64", "SCMP_ARCH_PPC", "SCMP_ARCH_PPC64", "SCMP_ARCH_PPC64LE",
	"SCMP_ARCH_RISCV64", "SCMP_ARCH_S390", "SCMP_ARCH_S390X", "SCMP_ARCH_X32", "SCMP_ARCH_X86",
	"SCMP_ARCH_X86_64",
};

static const char *const seccomp_flag_candidates[] = {
	"SECCOMP_FILTER_FLAG_LOG", "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_TSYNC",
	"SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
};

/* A mount option is known when the parser turns it into flags, not into data for the kernel. */
static bool mount_option_known(const char *opt)
{
	struct cryo_spec *spec = NULL;
	char text[512];
	bool known;

	snprintf(text, sizeof(text),
		 "{\"ociVersion\": \"1.0.0\", \"root\": {\"path\": \"r\"}, \"process\": {\"args\": [\"a\"], \"cwd\": \"/\"},"
		 " \"mounts\": [{\"destination\": \"/m\", \"type\": \"none\", \"source\": \"/s\", \"options\": [\"%s\"]}]}",
		 opt);
	if (cryo_spec_parse(text, strlen(text), &spec, NULL) < 0)
		return false;
	known = spec->n_mounts == 1 && !spec->mounts[0].data;
	cryo_spec_free(spec);
	return known;
}

/* fmt: a linux.seccomp object with one %s for the candidate */
static int seccomp_parse_with(const char *fmt, const char *candidate)
{
	struct cryo_seccomp_spec spec;
	struct json_object *o;
	char text[512];
	int r;
	const char *hole = strstr(fmt, "%s");

	if (!hole)
		return -EINVAL;
	/* fmt is one of ours; filled by hand, as a format string it would not be a literal */
	snprintf(text, sizeof(text), "%.*s%s%s", (int)(hole - fmt), fmt, candidate, hole + 2);
	o = json_tokener_parse(text);
	if (!o)
		return -EINVAL;
	memset(&spec, 0, sizeof(spec));
	r = cryo_seccomp_parse(o, &spec, NULL);
	cryo_seccomp_spec_free(&spec);
	json_object_put(o);
	return r;
}

/*
 * The candidates v[] the parsers take: mount options (fmt NULL), or
 * values in the linux.seccomp object fmt; with known_only, also those
 * recognised but refused as unsupported (-EOPNOTSUPP).
 */
static struct json_object *accepted(const char *const *v, size_t n, const char *fmt, bool known_only)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++) {
		int r = fmt ? seccomp_parse_with(fmt, v[i]) : (mount_option_known(v[i]) ? 0 : -EINVAL);

		if (r >= 0 || (known_only && r == -EOPNOTSUPP))
			json_object_array_add(a, json_object_new_string(v[i]));
	}
	return a;
}

#define ACCEPTED(v, fmt) accepted((v), sizeof(v) / sizeof((v)[0]), (fmt), false)
#define KNOWN(v, fmt) accepted((v), sizeof(v) / sizeof((v)[0]), (fmt), true)

static struct json_object *capabilities(void)
{
	struct json_object *a = json_object_new_array();
	int i, max = (int)cap_max_bits();

	for (i = 0; i < max && i < 64; i++) {
		char *name = cap_to_name((cap_value_t)i), *p;
		char buf[64];

		if (!name)
			continue;
		/* libcap names them in lower case; a number means it has no name for it */
		if (!isdigit((unsigned char)name[0])) {
			snprintf(buf, sizeof(buf), "%s", name);
			for (p = buf; *p; p++)
				*p = (char)toupper((unsigned char)*p);
			json_object_array_add(a, json_object_new_string(buf));
		}
		cap_free(name);
	}
	return a;
}

static struct json_object *enabled(bool on)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "enabled", json_object_new_boolean(on));
	return o;
}

#define SECCOMP_FLAGS_FMT "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"flags\": [\"%s\"]}"

static struct json_object *linux_features(void)
{
	static const char *const namespaces[] = {
		"cgroup", "ipc", "mount", "network", "pid", "user", "uts",
	};
	struct json_object *l = json_object_new_object();
	struct json_object *cg = json_object_new_object(), *sc = json_object_new_object();
	const struct scmp_version *sv = seccomp_version();

	json_object_object_add(l, "namespaces", string_array(namespaces, sizeof(namespaces) / sizeof(namespaces[0])));
	json_object_object_add(l, "capabilities", capabilities());

	/* cgroupfs v1 and v2; --systemd-cgroup is accepted but no systemd manager is used */
	json_object_object_add(cg, "v1", json_object_new_boolean(true));
	json_object_object_add(cg, "v2", json_object_new_boolean(true));
	json_object_object_add(cg, "systemd", json_object_new_boolean(false));
	json_object_object_add(cg, "systemdUser", json_object_new_boolean(false));
	json_object_object_add(cg, "rdma", json_object_new_boolean(false));
	json_object_object_add(l, "cgroup", cg);

	json_object_object_add(sc, "enabled", json_object_new_boolean(sv != NULL));
	json_object_object_add(sc, "actions",
			       ACCEPTED(seccomp_action_candidates,
					"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/l\", \"syscalls\":"
					" [{\"names\": [\"mkdir\"], \"action\": \"%s\"}]}"));
	json_object_object_add(sc, "operators",
			       ACCEPTED(seccomp_operator_candidates,
					"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"],"
					" \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 1, \"op\": \"%s\"}]}]}"));
	json_object_object_add(sc, "archs",
			       ACCEPTED(seccomp_arch_candidates,
					"{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"%s\"]}"));
	json_object_object_add(sc, "knownFlags", KNOWN(seccomp_flag_candidates, SECCOMP_FLAGS_FMT));
	json_object_object_add(sc, "supportedFlags", ACCEPTED(seccomp_flag_candidates, SECCOMP_FLAGS_FMT));
	json_object_object_add(l, "seccomp", sc);

	/* apparmorProfile, selinuxLabel and intelRdt are not enforced (spec.c ignores them) */
	json_object_object_add(l, "apparmor", enabled(false));
	json_object_object_add(l, "selinux", enabled(false));
	json_object_object_add(l, "intelRdt", enabled(false));
	json_object_object_add(l, "mountExtensions", json_object_new_object());
	json_object_object_add(json_object_object_get(l, "mountExtensions"), "idmap",
			       enabled(mount_option_known("idmap")));
	return l;
}

int cryo_features_json(const struct cryo_step_table *const *steps, struct json_object **ret, struct cryo_error *err)
{
	static const char *const hooks[] = {
		"prestart", "createRuntime", "createContainer",
		"startContainer", "poststart", "poststop",
	};
	const struct scmp_version *sv;
	struct json_object *o = json_object_new_object(), *annotations;
	char buf[64];
	struct json_object *cryo = json_object_new_object();
	struct json_object *freezer = json_object_new_object();

	if (!o || !cryo || !freezer) {
		json_object_put(o);
		json_object_put(cryo);
		json_object_put(freezer);
		return cryo_error_set(err, ENOMEM, "features");
	}

	json_object_object_add(o, "ociVersionMin", json_object_new_string("1.0.0"));
	json_object_object_add(o, "ociVersionMax", json_object_new_string(CRYO_OCI_VERSION));
	json_object_object_add(o, "hooks", string_array(hooks, sizeof(hooks) / sizeof(hooks[0])));
	json_object_object_add(o, "mountOptions", ACCEPTED(mount_option_candidates, NULL));
	json_object_object_add(o, "linux", linux_features());
	annotations = json_object_new_object();
	sv = seccomp_version();
	if (sv) {
		snprintf(buf, sizeof(buf), "%u.%u.%u", sv->major, sv->minor, sv->micro);
		json_object_object_add(annotations, "io.github.seccomp.libseccomp.version", json_object_new_string(buf));
	}
	json_object_object_add(annotations, "org.cryo.version", json_object_new_string(CRYO_VERSION));
	json_object_object_add(annotations, "org.cryo.checkpoint.enabled", json_object_new_string("true"));
	/* the features schema has no field for it: linux.seccomp.listenerPath, asked of the parser */
	json_object_object_add(annotations, "org.cryo.seccomp.listenerPath",
			       json_object_new_string(seccomp_parse_with("{\"defaultAction\": \"SCMP_ACT_ALLOW\","
									 " \"listenerPath\": \"%s\", \"syscalls\":"
									 " [{\"names\": [\"mkdir\"], \"action\":"
									 " \"SCMP_ACT_NOTIFY\"}]}",
									 "/l") == 0 ?
							      "true" :
							      "false"));
	json_object_object_add(o, "annotations", annotations);

	json_object_object_add(cryo, "version", json_object_new_string(CRYO_VERSION));
	json_object_object_add(freezer, "cgroupV1",
			       json_object_new_boolean(path_exists("/sys/fs/cgroup/freezer/freezer.state") ||
						       path_exists("/sys/fs/cgroup/freezer/tasks")));
	json_object_object_add(freezer, "cgroupV2",
			       json_object_new_boolean(path_exists("/sys/fs/cgroup/unified/cgroup.controllers") ||
						       path_exists("/sys/fs/cgroup/cgroup.controllers")));
	json_object_object_add(freezer, "kmod", json_object_new_boolean(path_exists("/dev/cryo_freezer")));
	/* which backend holds filesystem freezes (see fsfreeze.h) */
	json_object_object_add(freezer, "fsfreezeBackend",
			       json_object_new_string(cryo_kmod_available() ? "kmod" : "watchdog"));
	/* and held cgroup freezes: detached kmod holds, or the hold watchdog (hold.h) */
	json_object_object_add(freezer, "cgroupHoldBackend",
			       json_object_new_string(cryo_kmod_available() ? "kmod" : "watchdog"));
	json_object_object_add(cryo, "freezer", freezer);
	/* the step tables (step.h): names for CRYO_FAULT=<table>:<step>, in order */
	{
		struct json_object *names = json_object_new_object();
		size_t i, j;

		for (i = 0; steps[i]; i++) {
			struct json_object *a = json_object_new_array();

			for (j = 0; j < steps[i]->n_steps; j++)
				json_object_array_add(a, json_object_new_string(steps[i]->steps[j].name));
			json_object_object_add(names, steps[i]->name, a);
		}
		json_object_object_add(cryo, "steps", names);
	}
	json_object_object_add(o, "org.cryo", cryo);

	*ret = o;
	return 0;
}
