// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "spec-example.h"
#include "version.h"

static struct json_object *strings(const char *const *v)
{
	struct json_object *a = json_object_new_array();

	for (; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

static void add_mount(struct json_object *mounts, const char *dst, const char *type, const char *src,
		      const char *const *opts, bool rootless)
{
	struct json_object *m = json_object_new_object();

	json_object_object_add(m, "destination", json_object_new_string(dst));
	json_object_object_add(m, "type", json_object_new_string(type));
	json_object_object_add(m, "source", json_object_new_string(src));
	if (opts) {
		struct json_object *o = json_object_new_array();

		for (; *opts; opts++) {
			/* a rootless container maps one id: no other uid=/gid= to mount with */
			if (rootless && (strncmp(*opts, "uid=", 4) == 0 || strncmp(*opts, "gid=", 4) == 0))
				continue;
			json_object_array_add(o, json_object_new_string(*opts));
		}
		json_object_object_add(m, "options", o);
	}
	json_object_array_add(mounts, m);
}

static struct json_object *id_mapping(unsigned host_id)
{
	struct json_object *a = json_object_new_array(), *m = json_object_new_object();

	json_object_object_add(m, "containerID", json_object_new_int(0));
	json_object_object_add(m, "hostID", json_object_new_int64(host_id));
	json_object_object_add(m, "size", json_object_new_int(1));
	json_object_array_add(a, m);
	return a;
}

static void add_namespace(struct json_object *a, const char *type)
{
	struct json_object *n = json_object_new_object();

	json_object_object_add(n, "type", json_object_new_string(type));
	json_object_array_add(a, n);
}

int cryo_spec_example(bool rootless, char **ret, struct cryo_error *err)
{
	static const char *const caps[] = { "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE", NULL };
	static const char *const cap_sets[] = { "bounding", "effective", "permitted", NULL };
	static const char *const env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
					   "TERM=xterm", NULL };
	static const char *const args[] = { "sh", NULL };
	static const char *const dev_opts[] = { "nosuid", "strictatime", "mode=755", "size=65536k", NULL };
	static const char *const pts_opts[] = { "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620",
						"gid=5", NULL };
	static const char *const shm_opts[] = { "nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL };
	static const char *const mq_opts[] = { "nosuid", "noexec", "nodev", NULL };
	static const char *const sys_opts[] = { "nosuid", "noexec", "nodev", "ro", NULL };
	static const char *const sys_bind_opts[] = { "rbind", "nosuid", "noexec", "nodev", "ro", NULL };
	static const char *const cg_opts[] = { "nosuid", "noexec", "nodev", "relatime", "ro", NULL };
	static const char *const masked[] = { "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
					      "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
					      "/proc/sched_debug", "/sys/firmware", "/proc/scsi", NULL };
	static const char *const readonly[] = { "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
						"/proc/sysrq-trigger", NULL };
	struct json_object *o = json_object_new_object();
	struct json_object *proc = json_object_new_object(), *user = json_object_new_object();
	struct json_object *capabilities = json_object_new_object(), *rl = json_object_new_object();
	struct json_object *root = json_object_new_object(), *mounts = json_object_new_array();
	struct json_object *linux_ = json_object_new_object(), *ns = json_object_new_array();
	struct json_object *rlimits = json_object_new_array();
	const char *const *s;
	struct stat st;
	char *text;

	json_object_object_add(o, "ociVersion", json_object_new_string(CRYO_OCI_VERSION));

	json_object_object_add(proc, "terminal", json_object_new_boolean(true));
	json_object_object_add(user, "uid", json_object_new_int(0));
	json_object_object_add(user, "gid", json_object_new_int(0));
	json_object_object_add(proc, "user", user);
	json_object_object_add(proc, "args", strings(args));
	json_object_object_add(proc, "env", strings(env));
	json_object_object_add(proc, "cwd", json_object_new_string("/"));
	for (s = cap_sets; *s; s++)
		json_object_object_add(capabilities, *s, strings(caps));
	json_object_object_add(proc, "capabilities", capabilities);
	json_object_object_add(rl, "type", json_object_new_string("RLIMIT_NOFILE"));
	json_object_object_add(rl, "hard", json_object_new_int(1024));
	json_object_object_add(rl, "soft", json_object_new_int(1024));
	json_object_array_add(rlimits, rl);
	json_object_object_add(proc, "rlimits", rlimits);
	json_object_object_add(proc, "noNewPrivileges", json_object_new_boolean(true));
	json_object_object_add(o, "process", proc);

	json_object_object_add(root, "path", json_object_new_string("rootfs"));
	json_object_object_add(root, "readonly", json_object_new_boolean(true));
	json_object_object_add(o, "root", root);
	json_object_object_add(o, "hostname", json_object_new_string("cryo"));

	add_mount(mounts, "/proc", "proc", "proc", NULL, rootless);
	add_mount(mounts, "/dev", "tmpfs", "tmpfs", dev_opts, rootless);
	add_mount(mounts, "/dev/pts", "devpts", "devpts", pts_opts, rootless);
	add_mount(mounts, "/dev/shm", "tmpfs", "shm", shm_opts, rootless);
	add_mount(mounts, "/dev/mqueue", "mqueue", "mqueue", mq_opts, rootless);
	/* a user namespace may not mount sysfs for a netns it does not own */
	if (rootless)
		add_mount(mounts, "/sys", "none", "/sys", sys_bind_opts, rootless);
	else
		add_mount(mounts, "/sys", "sysfs", "sysfs", sys_opts, rootless);
	add_mount(mounts, "/sys/fs/cgroup", "cgroup", "cgroup", cg_opts, rootless);
	json_object_object_add(o, "mounts", mounts);

	if (rootless) {
		json_object_object_add(linux_, "uidMappings", id_mapping((unsigned)geteuid()));
		json_object_object_add(linux_, "gidMappings", id_mapping((unsigned)getegid()));
	} else {
		struct json_object *res = json_object_new_object(), *devs = json_object_new_array();
		struct json_object *deny = json_object_new_object();

		json_object_object_add(deny, "allow", json_object_new_boolean(false));
		json_object_object_add(deny, "access", json_object_new_string("rwm"));
		json_object_array_add(devs, deny);
		json_object_object_add(res, "devices", devs);
		json_object_object_add(linux_, "resources", res);
	}
	add_namespace(ns, "pid");
	if (!rootless)
		add_namespace(ns, "network");
	add_namespace(ns, "ipc");
	add_namespace(ns, "uts");
	add_namespace(ns, "mount");
	/* once, and only where the host is cgroup2-only (as runc decides) */
	if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0)
		add_namespace(ns, "cgroup");
	if (rootless)
		add_namespace(ns, "user");
	json_object_object_add(linux_, "namespaces", ns);
	json_object_object_add(linux_, "maskedPaths", strings(masked));
	json_object_object_add(linux_, "readonlyPaths", strings(readonly));
	json_object_object_add(o, "linux", linux_);

	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	if (!text)
		return cryo_error_set(err, ENOMEM, "example config.json");
	*ret = text;
	return 0;
}
