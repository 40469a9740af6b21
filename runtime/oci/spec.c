// SPDX-License-Identifier: GPL-2.0-only
/*
 * config.json → struct cryo_spec with json-c. Each reader takes the dotted
 * name of the field it reads so that every rejection names it exactly.
 * Types are checked strictly (a string where a number belongs is an
 * error); absent optional fields keep their zero/default value.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "spec.h"
#include "spec-json.h"
#include "util.h"

#define CFG CRYO_SPEC_CFG

const char *const cryo_ns_type_names[_CRYO_NS_MAX] = {
	[CRYO_NS_PID] = "pid",
	[CRYO_NS_NET] = "network",
	[CRYO_NS_MOUNT] = "mount",
	[CRYO_NS_IPC] = "ipc",
	[CRYO_NS_UTS] = "uts",
	[CRYO_NS_USER] = "user",
	[CRYO_NS_CGROUP] = "cgroup",
};

const int cryo_ns_type_flags[_CRYO_NS_MAX] = {
	[CRYO_NS_PID] = CLONE_NEWPID,
	[CRYO_NS_NET] = CLONE_NEWNET,
	[CRYO_NS_MOUNT] = CLONE_NEWNS,
	[CRYO_NS_IPC] = CLONE_NEWIPC,
	[CRYO_NS_UTS] = CLONE_NEWUTS,
	[CRYO_NS_USER] = CLONE_NEWUSER,
	[CRYO_NS_CGROUP] = CLONE_NEWCGROUP,
};

void cryo_spec_free(struct cryo_spec *spec)
{
	size_t i;

	if (!spec)
		return;
	free(spec->oci_version);
	free(spec->root_path);
	free(spec->resources.cpuset_cpus);
	free(spec->resources.cpuset_mems);
	free(spec->resources.dev_rules);
	for (i = 0; i < _CRYO_BLKIO_LIST_MAX; i++)
		free(spec->resources.blkio[i]);
	free(spec->resources.net_prios);
	free(spec->resources.hugepages);
	free(spec->additional_gids);
	cryo_spec_strv_free(spec->args, spec->n_args);
	cryo_spec_strv_free(spec->env, spec->n_env);
	free(spec->cwd);
	cryo_caps_spec_free(&spec->caps);
	cryo_rlimits_spec_free(&spec->rlimits);
	free(spec->hostname);
	free(spec->domainname);
	for (i = 0; i < spec->n_mounts; i++) {
		free(spec->mounts[i].destination);
		free(spec->mounts[i].type);
		free(spec->mounts[i].source);
		free(spec->mounts[i].data);
	}
	free(spec->mounts);
	cryo_hooks_spec_free(&spec->hooks);
	json_object_put(spec->annotations);
	cryo_network_spec_free(&spec->network);
	for (i = 0; i < _CRYO_NS_MAX; i++)
		free(spec->namespaces[i].path);
	free(spec->uid_mappings);
	free(spec->gid_mappings);
	free(spec->cgroups_path);
	for (i = 0; i < spec->n_devices; i++)
		free(spec->devices[i].path);
	free(spec->devices);
	cryo_spec_strv_free(spec->masked_paths, spec->n_masked_paths);
	cryo_spec_strv_free(spec->readonly_paths, spec->n_readonly_paths);
	cryo_spec_string_map_free(spec->sysctls, spec->n_sysctls);
	cryo_spec_string_map_free(spec->resources.unified, spec->resources.n_unified);
	cryo_seccomp_spec_free(&spec->seccomp);
	free(spec);
}

/* ---- sections ---- */

static int parse_user(struct json_object *proc, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *user, *gids;
	size_t i, n;
	int r;

	r = cryo_spec_json_get_object(proc, "user", "process.user", &user, err);
	if (r < 0 || !user)
		return r;
	r = cryo_spec_json_get_u32(user, "uid", "process.user.uid", &s->uid, NULL, err);
	if (r >= 0)
		r = cryo_spec_json_get_u32(user, "gid", "process.user.gid", &s->gid, NULL, err);
	if (r >= 0)
		r = cryo_spec_json_get_u32(user, "umask", "process.user.umask", &s->umask, &s->has_umask, err);
	if (r < 0)
		return r;
	if (s->has_umask && s->umask > 0777)
		return cryo_spec_json_bad(err, "process.user.umask", "must be at most 0777");
	if (cryo_spec_json_field(user, "username"))
		return cryo_spec_json_bad(err, "process.user.username", "is a Windows field, not supported on Linux");
	gids = cryo_spec_json_field(user, "additionalGids");
	if (!gids)
		return 0;
	if (!json_object_is_type(gids, json_type_array))
		return cryo_spec_json_bad(err, "process.user.additionalGids", "must be an array of integers");
	n = json_object_array_length(gids);
	if (n > CRYO_SPEC_MAX_LIST)
		return cryo_spec_json_bad(err, "process.user.additionalGids", "too many entries");
	s->additional_gids = calloc(n + 1, sizeof(*s->additional_gids));
	if (!s->additional_gids)
		return cryo_error_set(err, ENOMEM, CFG "process.user.additionalGids");
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(gids, i);
		int64_t g;

		errno = 0;
		if (!json_object_is_type(e, json_type_int) || (g = json_object_get_int64(e)) < 0 || g > UINT32_MAX ||
		    errno == ERANGE)
			return cryo_error_setx(err, EINVAL, CFG "process.user.additionalGids[%zu]: must be a gid", i);
		s->additional_gids[i] = (uint32_t)g;
	}
	s->n_additional_gids = n;
	return 0;
}

static int parse_process(struct json_object *root, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *proc, *v;
	int64_t x = 0;
	size_t i;
	int r;

	r = cryo_spec_json_get_object(root, "process", "process", &proc, err);
	if (r < 0)
		return r;
	if (!proc)
		return cryo_spec_json_bad(err, "process", "is required");
	r = cryo_spec_json_get_bool(proc, "terminal", "process.terminal", &s->terminal, err);
	if (r >= 0)
		r = cryo_spec_json_get_object(proc, "consoleSize", "process.consoleSize", &v, err);
	if (r >= 0 && v) {
		s->has_console_size = true;
		r = cryo_spec_json_get_u32(v, "height", "process.consoleSize.height", &s->console_height, NULL, err);
		if (r >= 0)
			r = cryo_spec_json_get_u32(v, "width", "process.consoleSize.width", &s->console_width, NULL, err);
		if (r >= 0 && (s->console_height > 65535 || s->console_width > 65535))
			r = cryo_spec_json_bad(err, "process.consoleSize", "height and width must be at most 65535");
	}
	if (r >= 0)
		r = parse_user(proc, s, err);
	if (r >= 0)
		r = cryo_spec_json_get_strv(proc, "args", "process.args", CRYO_SPEC_MAX_ARGS, true, &s->args, &s->n_args, err);
	if (r < 0)
		return r;
	if (s->args[0][0] == '\0')
		return cryo_spec_json_bad(err, "process.args[0]", "must not be empty");
	r = cryo_spec_json_get_strv(proc, "env", "process.env", CRYO_SPEC_MAX_ENV, false, &s->env, &s->n_env, err);
	if (r < 0)
		return r;
	if (!s->env) {
		s->env = calloc(1, sizeof(*s->env));
		if (!s->env)
			return cryo_error_set(err, ENOMEM, CFG "process.env");
	}
	for (i = 0; s->env && i < s->n_env; i++)
		if (!s->env[i] || !strchr(s->env[i], '=') || s->env[i][0] == '=')
			return cryo_error_setx(err, EINVAL, CFG "process.env[%zu]: `%s` is not KEY=VALUE", i, s->env[i]);
	r = cryo_spec_json_get_string(proc, "cwd", "process.cwd", PATH_MAX - 1, &s->cwd, err);
	if (r < 0)
		return r;
	if (!s->cwd)
		return cryo_spec_json_bad(err, "process.cwd", "is required");
	r = cryo_spec_json_check_abs_path(s->cwd, "process.cwd", err);
	if (r >= 0)
		r = cryo_spec_json_get_bool(proc, "noNewPrivileges", "process.noNewPrivileges", &s->no_new_privileges, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(proc, "oomScoreAdj", "process.oomScoreAdj", -1000, 1000, &x, &s->has_oom_score_adj, err);
	if (r < 0)
		return r;
	s->oom_score_adj = (int)x;
	r = cryo_caps_parse(cryo_spec_json_field(proc, "capabilities"), &s->caps, err);
	if (r >= 0)
		r = cryo_rlimits_parse(cryo_spec_json_field(proc, "rlimits"), &s->rlimits, err);
	if (r < 0)
		return cryo_error_prefix(err, "config.json");
	/* apparmorProfile, selinuxLabel, ioPriority, scheduler: not enforced, ignored */
	return 0;
}

struct mount_opt {
	const char *name;
	bool clear;
	unsigned long flag;
};

static const struct mount_opt mount_flags[] = {
	{ "defaults", false, 0 },
	{ "ro", false, MS_RDONLY },
	{ "rw", true, MS_RDONLY },
	{ "nosuid", false, MS_NOSUID },
	{ "suid", true, MS_NOSUID },
	{ "nodev", false, MS_NODEV },
	{ "dev", true, MS_NODEV },
	{ "noexec", false, MS_NOEXEC },
	{ "exec", true, MS_NOEXEC },
	{ "sync", false, MS_SYNCHRONOUS },
	{ "async", true, MS_SYNCHRONOUS },
	{ "dirsync", false, MS_DIRSYNC },
	{ "remount", false, MS_REMOUNT },
	{ "mand", false, MS_MANDLOCK },
	{ "nomand", true, MS_MANDLOCK },
	{ "atime", true, MS_NOATIME },
	{ "noatime", false, MS_NOATIME },
	{ "diratime", true, MS_NODIRATIME },
	{ "nodiratime", false, MS_NODIRATIME },
	{ "relatime", false, MS_RELATIME },
	{ "norelatime", true, MS_RELATIME },
	{ "strictatime", false, MS_STRICTATIME },
	{ "nostrictatime", true, MS_STRICTATIME },
	{ "lazytime", false, MS_LAZYTIME },
	{ "nolazytime", true, MS_LAZYTIME },
};

/*
 * The recursive options (runc's, after mount_setattr(2)): they apply to
 * the mount and every mount under it, where "ro" is the top one's only.
 * Setting an atime mode clears all of them first, as the kernel wants.
 */
struct mount_attr_opt {
	const char *name;
	uint64_t set, clr;
};

static const struct mount_attr_opt mount_attrs[] = {
	{ "rro", MOUNT_ATTR_RDONLY, 0 },
	{ "rrw", 0, MOUNT_ATTR_RDONLY },
	{ "rnosuid", MOUNT_ATTR_NOSUID, 0 },
	{ "rsuid", 0, MOUNT_ATTR_NOSUID },
	{ "rnodev", MOUNT_ATTR_NODEV, 0 },
	{ "rdev", 0, MOUNT_ATTR_NODEV },
	{ "rnoexec", MOUNT_ATTR_NOEXEC, 0 },
	{ "rexec", 0, MOUNT_ATTR_NOEXEC },
	{ "rnodiratime", MOUNT_ATTR_NODIRATIME, 0 },
	{ "rdiratime", 0, MOUNT_ATTR_NODIRATIME },
	{ "rnosymfollow", MOUNT_ATTR_NOSYMFOLLOW, 0 },
	{ "rsymfollow", 0, MOUNT_ATTR_NOSYMFOLLOW },
	{ "rrelatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME },
	{ "rnorelatime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME },
	{ "rnoatime", MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME },
	{ "ratime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME },
	{ "rstrictatime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME },
	{ "rnostrictatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME },
};

static bool mount_attr_from_string(const char *s, struct cryo_spec_mount *out)
{
	for (size_t i = 0; i < ARRAY_SIZE(mount_attrs); i++) {
		const struct mount_attr_opt *a = &mount_attrs[i];

		if (strcmp(s, a->name) != 0)
			continue;
		out->attr_set = (out->attr_set & ~a->clr) | a->set;
		out->attr_clr = (out->attr_clr & ~a->set) | a->clr;
		return true;
	}
	return false;
}

static const struct mount_opt propagation_flags[] = {
	{ "private", false, MS_PRIVATE },
	{ "rprivate", false, MS_PRIVATE | MS_REC },
	{ "shared", false, MS_SHARED },
	{ "rshared", false, MS_SHARED | MS_REC },
	{ "slave", false, MS_SLAVE },
	{ "rslave", false, MS_SLAVE | MS_REC },
	{ "unbindable", false, MS_UNBINDABLE },
	{ "runbindable", false, MS_UNBINDABLE | MS_REC },
};

static int propagation_from_string(const char *s, unsigned long *ret)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(propagation_flags); i++) {
		if (strcmp(s, propagation_flags[i].name) == 0) {
			*ret = propagation_flags[i].flag;
			return 0;
		}
	}
	return -EINVAL;
}

static int append_data(char **data, const char *opt)
{
	size_t old = *data ? strlen(*data) : 0;
	char *n = realloc(*data, old + strlen(opt) + 2);

	if (!n)
		return -ENOMEM;
	if (old)
		n[old++] = ',';
	strcpy(n + old, opt);
	*data = n;
	return 0;
}

static int parse_mount(struct json_object *m, size_t idx, struct cryo_spec_mount *out, struct cryo_error *err)
{
	char name[64];
	_cleanup_free_ char **opts = NULL;
	size_t n_opts = 0, i, j;
	int r;

	if (!json_object_is_type(m, json_type_object))
		return cryo_error_setx(err, EINVAL, CFG "mounts[%zu]: must be an object", idx);
	snprintf(name, sizeof(name), "mounts[%zu].destination", idx);
	r = cryo_spec_json_get_string(m, "destination", name, PATH_MAX - 1, &out->destination, err);
	if (r < 0)
		return r;
	r = cryo_spec_json_check_abs_path(out->destination, name, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "mounts[%zu].type", idx);
	r = cryo_spec_json_get_string(m, "type", name, 255, &out->type, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "mounts[%zu].source", idx);
	r = cryo_spec_json_get_string(m, "source", name, PATH_MAX - 1, &out->source, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "mounts[%zu].options", idx);
	r = cryo_spec_json_get_strv(m, "options", name, 256, false, &opts, &n_opts, err);
	if (r < 0)
		return r;
	for (i = 0; i < n_opts; i++) {
		const char *o = opts[i];
		bool known = false;

		if (strcmp(o, "bind") == 0 || strcmp(o, "rbind") == 0) {
			out->bind = true;
			out->recursive_bind |= o[0] == 'r';
			known = true;
		}
		for (j = 0; !known && j < ARRAY_SIZE(mount_flags); j++) {
			if (strcmp(o, mount_flags[j].name) == 0) {
				if (mount_flags[j].clear)
					out->flags &= ~mount_flags[j].flag;
				else
					out->flags |= mount_flags[j].flag;
				known = true;
			}
		}
		if (!known && propagation_from_string(o, &out->propagation) == 0)
			known = true;
		if (!known)
			known = mount_attr_from_string(o, out);
		if (!known && (strchr(o, ',') || o[0] == '\0'))
			r = cryo_error_setx(err, EINVAL, CFG "mounts[%zu].options[%zu]: `%s` is not one option", idx,
					    i, o);
		else if (!known && append_data(&out->data, o) < 0)
			r = cryo_error_set(err, ENOMEM, CFG "mounts[%zu].options", idx);
		if (r < 0)
			break;
	}
	cryo_spec_strv_free(opts, n_opts);
	opts = NULL;
	if (r < 0)
		return r;
	if (out->type && strcmp(out->type, "bind") == 0)
		out->bind = true;
	if (!out->bind && !out->type)
		return cryo_error_setx(err, EINVAL, CFG "mounts[%zu].type: is required unless the mount is a bind mount", idx);
	if (out->bind && (!out->source || !*out->source))
		return cryo_error_setx(err, EINVAL, CFG "mounts[%zu].source: a bind mount needs a source", idx);
	return 0;
}

static int parse_mounts(struct json_object *root, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(root, "mounts");
	size_t i, n;
	int r;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return cryo_spec_json_bad(err, "mounts", "must be an array");
	n = json_object_array_length(v);
	if (n > CRYO_SPEC_MAX_MOUNTS)
		return cryo_error_setx(err, E2BIG, CFG "mounts: %zu entries, at most %d are allowed", n, CRYO_SPEC_MAX_MOUNTS);
	s->mounts = calloc(n + 1, sizeof(*s->mounts));
	if (!s->mounts)
		return cryo_error_set(err, ENOMEM, CFG "mounts");
	for (i = 0; i < n; i++) {
		s->n_mounts = i + 1;
		r = parse_mount(json_object_array_get_idx(v, i), i, &s->mounts[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int ns_type_from_string(const char *t)
{
	int i;

	for (i = 0; i < _CRYO_NS_MAX; i++)
		if (strcmp(t, cryo_ns_type_names[i]) == 0)
			return i;
	return -1;
}

static int parse_namespaces(struct json_object *lnx, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(lnx, "namespaces");
	size_t i, n;
	int r;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return cryo_spec_json_bad(err, "linux.namespaces", "must be an array");
	n = json_object_array_length(v);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		_cleanup_free_ char *type = NULL;
		char name[64];
		int t;

		if (!json_object_is_type(e, json_type_object))
			return cryo_error_setx(err, EINVAL, CFG "linux.namespaces[%zu]: must be an object", i);
		snprintf(name, sizeof(name), "linux.namespaces[%zu].type", i);
		r = cryo_spec_json_get_string(e, "type", name, 32, &type, err);
		if (r < 0)
			return r;
		if (!type)
			return cryo_spec_json_bad(err, name, "is required");
		t = ns_type_from_string(type);
		if (t < 0)
			return cryo_error_setx(err, EINVAL, CFG "%s: unknown namespace type `%s`", name, type);
		if (s->namespaces[t].enabled)
			return cryo_error_setx(err, EINVAL, CFG "%s: namespace `%s` is listed twice", name, type);
		s->namespaces[t].enabled = true;
		snprintf(name, sizeof(name), "linux.namespaces[%zu].path", i);
		r = cryo_spec_json_get_string(e, "path", name, PATH_MAX - 1, &s->namespaces[t].path, err);
		if (r < 0)
			return r;
		if (s->namespaces[t].path) {
			r = cryo_spec_json_check_abs_path(s->namespaces[t].path, name, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int parse_idmaps(struct json_object *lnx, const char *key, struct cryo_spec_idmap **ret, size_t *ret_n,
			struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(lnx, key);
	char name[64];
	size_t i, n;
	int r;

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "linux.%s", key);
	if (!json_object_is_type(v, json_type_array))
		return cryo_spec_json_bad(err, name, "must be an array");
	n = json_object_array_length(v);
	if (n > 340) /* the kernel accepts at most 340 lines in uid_map */
		return cryo_spec_json_bad(err, name, "at most 340 mappings are allowed");
	*ret = calloc(n + 1, sizeof(**ret));
	if (!*ret)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		struct cryo_spec_idmap *m = &(*ret)[i];
		bool h1 = false, h2 = false, h3 = false;

		snprintf(name, sizeof(name), "linux.%s[%zu]", key, i);
		if (!json_object_is_type(e, json_type_object))
			return cryo_spec_json_bad(err, name, "must be an object");
		r = cryo_spec_json_get_u32(e, "containerID", name, &m->container_id, &h1, err);
		if (r >= 0)
			r = cryo_spec_json_get_u32(e, "hostID", name, &m->host_id, &h2, err);
		if (r >= 0)
			r = cryo_spec_json_get_u32(e, "size", name, &m->size, &h3, err);
		if (r < 0)
			return r;
		if (!h1 || !h2 || !h3 || m->size == 0)
			return cryo_spec_json_bad(err, name, "needs containerID, hostID and a non-zero size");
	}
	*ret_n = n;
	return 0;
}

static int parse_devices(struct json_object *lnx, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(lnx, "devices");
	void *tab = NULL;
	size_t i, n;
	int r;

	r = cryo_spec_json_get_array(v, "linux.devices", CRYO_SPEC_MAX_LIST, sizeof(*s->devices), &tab, &n, err);
	s->devices = tab;
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		struct cryo_spec_device *d = &s->devices[i];
		_cleanup_free_ char *type = NULL;
		char name[64];
		bool hm = false, hn = false;

		s->n_devices = i + 1;
		snprintf(name, sizeof(name), "linux.devices[%zu]", i);
		if (!json_object_is_type(e, json_type_object))
			return cryo_spec_json_bad(err, name, "must be an object");
		snprintf(name, sizeof(name), "linux.devices[%zu].path", i);
		r = cryo_spec_json_get_string(e, "path", name, PATH_MAX - 1, &d->path, err);
		if (r >= 0)
			r = cryo_spec_json_check_abs_path(d->path, name, err);
		if (r < 0)
			return r;
		if (strncmp(d->path, "/dev/", 5) != 0 || strstr(d->path, "/../") || strstr(d->path, "/./"))
			return cryo_spec_json_bad(err, name, "must be a path under /dev");
		snprintf(name, sizeof(name), "linux.devices[%zu].type", i);
		r = cryo_spec_json_get_string(e, "type", name, 1, &type, err);
		if (r < 0)
			return r;
		if (!type || !strchr("cbup", type[0]) || !type[0])
			return cryo_spec_json_bad(err, name, "must be one of `c`, `b`, `u`, `p`");
		d->type = type[0];
		snprintf(name, sizeof(name), "linux.devices[%zu]", i);
		r = cryo_spec_json_get_int(e, "major", name, 0, 0xfff, &d->major, &hm, err);
		if (r >= 0)
			r = cryo_spec_json_get_int(e, "minor", name, 0, 0xfffff, &d->minor, &hn, err);
		if (r >= 0)
			r = cryo_spec_json_get_u32(e, "fileMode", name, &d->file_mode, &d->has_file_mode, err);
		if (r >= 0)
			r = cryo_spec_json_get_u32(e, "uid", name, &d->uid, &d->has_uid, err);
		if (r >= 0)
			r = cryo_spec_json_get_u32(e, "gid", name, &d->gid, &d->has_gid, err);
		if (r < 0)
			return r;
		if (d->type != 'p' && (!hm || !hn))
			return cryo_spec_json_bad(err, name, "major and minor are required for c, u and b devices");
		if (d->has_file_mode && d->file_mode > 07777)
			return cryo_spec_json_bad(err, name, "fileMode must be at most 07777");
	}
	return 0;
}

static int parse_sysctl(struct json_object *lnx, struct cryo_spec *s, struct cryo_error *err)
{
	size_t i;
	int r;

	r = cryo_spec_json_get_string_map(lnx, "sysctl", "linux.sysctl", CRYO_SPEC_MAX_LIST, &s->sysctls, &s->n_sysctls, err);
	for (i = 0; r >= 0 && i < s->n_sysctls; i++) {
		const char *key = s->sysctls[i].key;

		if (!*key || strstr(key, "..") || key[0] == '.' || key[0] == '/')
			return cryo_error_setx(err, EINVAL, CFG "linux.sysctl: `%s` is not a sysctl name", key);
	}
	return r;
}

/*
 * The namespace a sysctl lives in (key with `.` or `/` separators), or -1
 * for one that is global to the host (vm.*, most of kernel.*, fs.*):
 * those would be written to the host, whatever namespaces the container
 * has, so they are refused (as runc does). The IPC ones are the ipc
 * namespace's System V limits and POSIX message queues.
 */
int cryo_spec_sysctl_namespace(const char *key)
{
	static const char *const ipc_keys[] = {
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem",
		"kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced",
	};
	char k[256], *p;
	size_t i;

	if ((size_t)snprintf(k, sizeof(k), "%s", key) >= sizeof(k))
		return -1;
	for (p = k; *p; p++)
		if (*p == '/')
			*p = '.';
	for (i = 0; i < ARRAY_SIZE(ipc_keys); i++)
		if (strcmp(k, ipc_keys[i]) == 0)
			return CRYO_NS_IPC;
	if (strncmp(k, "fs.mqueue.", 10) == 0)
		return CRYO_NS_IPC;
	if (strncmp(k, "net.", 4) == 0)
		return CRYO_NS_NET;
	if (strcmp(k, "kernel.domainname") == 0)
		return CRYO_NS_UTS;
	if (strncmp(k, "user.", 5) == 0)
		return CRYO_NS_USER;
	return -1;
}

static int check_sysctls(const struct cryo_spec *s, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < s->n_sysctls; i++) {
		const char *key = s->sysctls[i].key;
		int ns = cryo_spec_sysctl_namespace(key);

		if (strcmp(key, "kernel.hostname") == 0 || strcmp(key, "kernel/hostname") == 0)
			return cryo_error_setx(err, EINVAL, CFG "linux.sysctl: `%s`: use the `hostname` field", key);
		if (ns < 0)
			return cryo_error_setx(err, EINVAL,
					       CFG "linux.sysctl: `%s` is not in a namespace of the container: it would change the host",
					       key);
		if (!s->namespaces[ns].enabled)
			return cryo_error_setx(err, EINVAL,
					       CFG "linux.sysctl: `%s` needs the container to have its own %s namespace (linux.namespaces)",
					       key, cryo_ns_type_names[ns]);
	}
	return 0;
}

/* The runtime's own namespace file for each type (where a joined path must not lead). */
static const char *const self_ns_files[_CRYO_NS_MAX] = {
	[CRYO_NS_PID] = "/proc/self/ns/pid",     [CRYO_NS_NET] = "/proc/self/ns/net",
	[CRYO_NS_MOUNT] = "/proc/self/ns/mnt",   [CRYO_NS_IPC] = "/proc/self/ns/ipc",
	[CRYO_NS_UTS] = "/proc/self/ns/uts",     [CRYO_NS_USER] = "/proc/self/ns/user",
	[CRYO_NS_CGROUP] = "/proc/self/ns/cgroup",
};

int cryo_spec_check_sysctl_paths(const struct cryo_spec *s, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < s->n_sysctls; i++) {
		int ns = cryo_spec_sysctl_namespace(s->sysctls[i].key);
		struct stat a, b;

		if (ns < 0 || !s->namespaces[ns].path)
			continue;
		if (stat(s->namespaces[ns].path, &a) < 0)
			return cryo_error_set(err, errno, CFG "linux.namespaces: %s `%s`", cryo_ns_type_names[ns],
					      s->namespaces[ns].path);
		if (stat(self_ns_files[ns], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return cryo_error_setx(err, EINVAL,
					       CFG "linux.sysctl: `%s`: the %s namespace `%s` is the runtime's own: it would change the host",
					       s->sysctls[i].key, cryo_ns_type_names[ns], s->namespaces[ns].path);
	}
	return 0;
}

static int parse_linux(struct json_object *root, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *lnx;
	_cleanup_free_ char *prop = NULL;
	int r;

	r = cryo_spec_json_get_object(root, "linux", "linux", &lnx, err);
	if (r < 0 || !lnx)
		return r;
	r = parse_namespaces(lnx, s, err);
	if (r >= 0)
		r = parse_idmaps(lnx, "uidMappings", &s->uid_mappings, &s->n_uid_mappings, err);
	if (r >= 0)
		r = parse_idmaps(lnx, "gidMappings", &s->gid_mappings, &s->n_gid_mappings, err);
	if (r >= 0)
		r = cryo_spec_parse_resources(lnx, &s->resources, err);
	if (r >= 0)
		r = cryo_spec_json_get_string(lnx, "cgroupsPath", "linux.cgroupsPath", PATH_MAX - 1, &s->cgroups_path, err);
	if (r < 0)
		return r;
	if (s->cgroups_path && (strstr(s->cgroups_path, "..") || !*s->cgroups_path || strchr(s->cgroups_path, ':')))
		return cryo_spec_json_bad(
		    err, "linux.cgroupsPath",
		    "must be a cgroup path without `..` (systemd `a:b:c` paths are not supported)");
	/*
	 * The nodes of linux.devices get no rule of their own in the device
	 * cgroup: as with runc, what linux.resources.devices says (and the
	 * defaults) decides (runc's dev.bats: a /dev/kmsg node behind a
	 * deny-all stays denied).
	 */
	r = parse_devices(lnx, s, err);
	if (r >= 0)
		r = cryo_spec_json_get_strv(lnx, "maskedPaths", "linux.maskedPaths", CRYO_SPEC_MAX_LIST, false, &s->masked_paths,
			     &s->n_masked_paths, err);
	if (r >= 0)
		r = cryo_spec_json_get_strv(lnx, "readonlyPaths", "linux.readonlyPaths", CRYO_SPEC_MAX_LIST, false,
			     &s->readonly_paths, &s->n_readonly_paths, err);
	if (r >= 0)
		r = parse_sysctl(lnx, s, err);
	if (r >= 0)
		r = cryo_spec_json_get_string(lnx, "rootfsPropagation", "linux.rootfsPropagation", 32, &prop, err);
	if (r < 0)
		return r;
	if (prop && propagation_from_string(prop, &s->rootfs_propagation) < 0)
		return cryo_error_setx(err, EINVAL, CFG "linux.rootfsPropagation: unknown propagation `%s`", prop);
	r = cryo_seccomp_parse(cryo_spec_json_field(lnx, "seccomp"), &s->seccomp, err);
	if (r < 0)
		return cryo_error_prefix(err, "config.json");
	if ((s->n_uid_mappings || s->n_gid_mappings) && !s->namespaces[CRYO_NS_USER].enabled)
		return cryo_spec_json_bad(err, "linux.uidMappings", "id mappings need a user namespace");
	r = check_sysctls(s, err);
	if (r < 0)
		return r;
	if (s->namespaces[CRYO_NS_USER].enabled && !s->namespaces[CRYO_NS_USER].path &&
	    (!s->n_uid_mappings || !s->n_gid_mappings))
		return cryo_spec_json_bad(err, "linux.uidMappings", "a new user namespace needs uidMappings and gidMappings");
	return 0;
}

int cryo_spec_parse(const char *text, size_t len, struct cryo_spec **ret, struct cryo_error *err)
{
	struct json_tokener *tok;
	struct json_object *root = NULL, *v;
	struct cryo_spec *s = NULL;
	int r;

	if (len > CRYO_SPEC_MAX_BYTES)
		return cryo_error_setx(err, EFBIG, CFG "larger than %u bytes", CRYO_SPEC_MAX_BYTES);
	tok = json_tokener_new_ex(64);
	if (!tok)
		return cryo_error_set(err, ENOMEM, "config.json");
	root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    (size_t)json_tokener_get_parse_end(tok) < len) {
		enum json_tokener_error e = json_tokener_get_error(tok);
		size_t at = json_tokener_get_parse_end(tok);

		/* trailing whitespace after the document is fine */
		while (root && e == json_tokener_success && at < len && text[at] && strchr(" \t\r\n", text[at]))
			at++;
		if (!root || e != json_tokener_success || at < len) {
			r = cryo_error_setx(err, EINVAL, CFG "invalid JSON at byte %zu: %s", at,
					    e == json_tokener_success ? "trailing data" :
					    e == json_tokener_continue ? "unexpected end of file" :
					    json_tokener_error_desc(e));
			goto out;
		}
	}
	if (!json_object_is_type(root, json_type_object)) {
		r = cryo_error_setx(err, EINVAL, CFG "must be a JSON object");
		goto out;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		r = cryo_error_set(err, ENOMEM, "config.json");
		goto out;
	}
	r = cryo_spec_json_get_string(root, "ociVersion", "ociVersion", 64, &s->oci_version, err);
	if (r < 0)
		goto out;
	if (!s->oci_version || strncmp(s->oci_version, "1.", 2) != 0) {
		r = cryo_error_setx(err, EINVAL, CFG "ociVersion: `%s` is not a runtime-spec 1.x version",
				    s->oci_version ? s->oci_version : "(missing)");
		goto out;
	}
	r = cryo_spec_json_get_object(root, "root", "root", &v, err);
	if (r < 0)
		goto out;
	if (!v) {
		r = cryo_spec_json_bad(err, "root", "is required");
		goto out;
	}
	r = cryo_spec_json_get_string(v, "path", "root.path", PATH_MAX - 1, &s->root_path, err);
	if (r >= 0 && (!s->root_path || !*s->root_path))
		r = cryo_spec_json_bad(err, "root.path", "is required");
	if (r >= 0)
		r = cryo_spec_json_get_bool(v, "readonly", "root.readonly", &s->root_readonly, err);
	if (r >= 0)
		r = parse_process(root, s, err);
	if (r >= 0)
		r = cryo_spec_json_get_string(root, "hostname", "hostname", 64, &s->hostname, err);
	if (r >= 0)
		r = cryo_spec_json_get_string(root, "domainname", "domainname", 64, &s->domainname, err);
	if (r >= 0)
		r = parse_mounts(root, s, err);
	if (r >= 0 && cryo_hooks_parse(cryo_spec_json_field(root, "hooks"), &s->hooks, err) < 0)
		r = cryo_error_prefix(err, "config.json");
	if (r < 0)
		goto out;
	r = cryo_spec_json_get_object(root, "annotations", "annotations", &v, err);
	if (r < 0)
		goto out;
	if (v) {
		json_object_object_foreach(v, key, val)
		{
			if (!json_object_is_type(val, json_type_string)) {
				r = cryo_error_setx(err, EINVAL, CFG "annotations.%s: must be a string", key);
				goto out;
			}
		}
	}
	s->annotations = json_object_get(v);
	if (cryo_network_parse(s->annotations, &s->network, err) < 0) {
		r = cryo_error_prefix(err, "config.json");
		goto out;
	}
	r = parse_linux(root, s, err);
	if (r < 0)
		goto out;
	if ((s->hostname || s->domainname) && !s->namespaces[CRYO_NS_UTS].enabled) {
		r = cryo_spec_json_bad(err, "hostname", "needs a uts namespace");
		goto out;
	}
	*ret = TAKE_PTR(s);
	r = 0;
out:
	cryo_spec_free(s);
	json_object_put(root);
	json_tokener_free(tok);
	return r;
}

int cryo_spec_load(const char *bundle, struct cryo_spec **ret, struct cryo_error *err)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int dfd = -1;
	size_t len = 0;
	int r;

	dfd = open(bundle, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
		return cryo_error_set(err, errno, "open bundle `%s`", bundle);
	r = cryo_read_file_at(dfd, "config.json", CRYO_SPEC_MAX_BYTES, &text, &len);
	if (r == -EFBIG)
		return cryo_error_setx(err, EFBIG, "`%s/config.json` is larger than %u bytes", bundle, CRYO_SPEC_MAX_BYTES);
	if (r < 0)
		return cryo_error_set(err, -r, "read `%s/config.json`", bundle);
	if (memchr(text, '\0', len))
		return cryo_error_setx(err, EINVAL, CFG "contains a NUL byte");
	return cryo_spec_parse(text, len, ret, err);
}

const char *cryo_spec_annotation(const struct cryo_spec *spec, const char *key)
{
	struct json_object *v = cryo_spec_json_field(spec->annotations, key);

	return v ? json_object_get_string(v) : NULL;
}

static const char default_spec[] =
	"{\n"
	"  \"ociVersion\": \"1.0.2\",\n"
	"  \"process\": {\n"
	"    \"terminal\": false,\n"
	"    \"user\": { \"uid\": 0, \"gid\": 0 },\n"
	"    \"args\": [ \"sh\" ],\n"
	"    \"env\": [ \"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", \"TERM=xterm\" ],\n"
	"    \"cwd\": \"/\",\n"
	"    \"capabilities\": {\n"
	"      \"bounding\": [ \"CAP_AUDIT_WRITE\", \"CAP_KILL\", \"CAP_NET_BIND_SERVICE\" ],\n"
	"      \"effective\": [ \"CAP_AUDIT_WRITE\", \"CAP_KILL\", \"CAP_NET_BIND_SERVICE\" ],\n"
	"      \"permitted\": [ \"CAP_AUDIT_WRITE\", \"CAP_KILL\", \"CAP_NET_BIND_SERVICE\" ]\n"
	"    },\n"
	"    \"rlimits\": [ { \"type\": \"RLIMIT_NOFILE\", \"hard\": 1024, \"soft\": 1024 } ],\n"
	"    \"noNewPrivileges\": true\n"
	"  },\n"
	"  \"root\": { \"path\": \"rootfs\", \"readonly\": true },\n"
	"  \"hostname\": \"cryo\",\n"
	"  \"mounts\": [\n"
	"    { \"destination\": \"/proc\", \"type\": \"proc\", \"source\": \"proc\" },\n"
	"    { \"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\": \"tmpfs\",\n"
	"      \"options\": [ \"nosuid\", \"strictatime\", \"mode=755\", \"size=65536k\" ] },\n"
	"    { \"destination\": \"/dev/pts\", \"type\": \"devpts\", \"source\": \"devpts\",\n"
	"      \"options\": [ \"nosuid\", \"noexec\", \"newinstance\", \"ptmxmode=0666\", \"mode=0620\"%s ] },\n"
	"    { \"destination\": \"/dev/shm\", \"type\": \"tmpfs\", \"source\": \"shm\",\n"
	"      \"options\": [ \"nosuid\", \"noexec\", \"nodev\", \"mode=1777\", \"size=65536k\" ] },\n"
	"    { \"destination\": \"/dev/mqueue\", \"type\": \"mqueue\", \"source\": \"mqueue\",\n"
	"      \"options\": [ \"nosuid\", \"noexec\", \"nodev\" ] },\n"
	"    %s\n"
	"  ],\n"
	"  \"linux\": {\n"
	"%s"
	"    \"maskedPaths\": [ \"/proc/acpi\", \"/proc/asound\", \"/proc/kcore\", \"/proc/keys\",\n"
	"      \"/proc/latency_stats\", \"/proc/timer_list\", \"/proc/timer_stats\", \"/proc/sched_debug\",\n"
	"      \"/sys/firmware\", \"/proc/scsi\" ],\n"
	"    \"readonlyPaths\": [ \"/proc/bus\", \"/proc/fs\", \"/proc/irq\", \"/proc/sys\", \"/proc/sysrq-trigger\" ],\n"
	"    \"namespaces\": [ { \"type\": \"pid\" }, { \"type\": \"network\" }, { \"type\": \"ipc\" },\n"
	"      { \"type\": \"uts\" }, { \"type\": \"mount\" }%s ]\n"
	"  }\n"
	"}\n";

int cryo_spec_default_json(bool rootless, char **ret, struct cryo_error *err)
{
	char *text = NULL;
	uid_t uid = getuid();
	gid_t gid = getgid();
	char idmaps[256];
	int n;

	snprintf(idmaps, sizeof(idmaps),
		 "    \"uidMappings\": [ { \"containerID\": 0, \"hostID\": %u, \"size\": 1 } ],\n"
		 "    \"gidMappings\": [ { \"containerID\": 0, \"hostID\": %u, \"size\": 1 } ],\n",
		 (unsigned)uid, (unsigned)gid);
	n = asprintf(&text, default_spec, rootless ? "" : ", \"gid=5\"",
		     rootless ? "{ \"destination\": \"/sys\", \"type\": \"none\", \"source\": \"/sys\",\n"
				"      \"options\": [ \"rbind\", \"nosuid\", \"noexec\", \"nodev\", \"ro\" ] }" :
				"{ \"destination\": \"/sys\", \"type\": \"sysfs\", \"source\": \"sysfs\",\n"
				"      \"options\": [ \"nosuid\", \"noexec\", \"nodev\", \"ro\" ] }",
		     rootless ? idmaps : "", rootless ? ", { \"type\": \"user\" }" : ", { \"type\": \"cgroup\" }");
	if (n < 0)
		return cryo_error_set(err, ENOMEM, "default config.json");
	*ret = text;
	return 0;
}
