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
#include "util.h"

#define CFG "config.json: "

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

static void strv_free(char **v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

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
	strv_free(spec->args, spec->n_args);
	strv_free(spec->env, spec->n_env);
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
	strv_free(spec->masked_paths, spec->n_masked_paths);
	strv_free(spec->readonly_paths, spec->n_readonly_paths);
	for (i = 0; i < spec->n_sysctls; i++) {
		free(spec->sysctls[i].key);
		free(spec->sysctls[i].value);
	}
	free(spec->sysctls);
	cryo_seccomp_spec_free(&spec->seccomp);
	free(spec);
}

/* ---- typed readers; `name` is the dotted field name for errors ---- */

static struct json_object *field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	return v;
}

static int bad(struct cryo_error *err, const char *name, const char *what)
{
	return cryo_error_setx(err, EINVAL, CFG "%s: %s", name, what);
}

static int get_object(struct json_object *o, const char *key, const char *name, struct json_object **ret,
		      struct cryo_error *err)
{
	struct json_object *v = field(o, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return bad(err, name, "must be an object");
	*ret = v;
	return 0;
}

/*
 * The array v (NULL: absent, nothing to do) of at most max entries: a
 * zeroed table of n + 1 elements of size each in *ret (NULL when absent).
 */
static int get_array(struct json_object *v, const char *name, size_t max, size_t size, void **ret, size_t *ret_n,
		     struct cryo_error *err)
{
	size_t n;

	*ret = NULL;
	*ret_n = 0;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return bad(err, name, "must be an array");
	n = json_object_array_length(v);
	if (n > max)
		return bad(err, name, "too many entries");
	*ret = calloc(n + 1, size);
	if (!*ret)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	*ret_n = n;
	return 0;
}

static int get_string(struct json_object *o, const char *key, const char *name, size_t max, char **ret,
		      struct cryo_error *err)
{
	struct json_object *v = field(o, key);
	char *s;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return bad(err, name, "must be a string");
	if ((size_t)json_object_get_string_len(v) > max)
		return cryo_error_setx(err, EINVAL, CFG "%s: longer than %zu bytes", name, max);
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return bad(err, name, "contains a NUL byte");
	s = strdup(json_object_get_string(v));
	if (!s)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	free(*ret);
	*ret = s;
	return 0;
}

static int get_bool(struct json_object *o, const char *key, const char *name, bool *ret, struct cryo_error *err)
{
	struct json_object *v = field(o, key);

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return bad(err, name, "must be true or false");
	*ret = json_object_get_boolean(v);
	return 0;
}

/* An integer in [min, max]; *has set when present. */
static int get_int(struct json_object *o, const char *key, const char *name, int64_t min, int64_t max,
		   int64_t *ret, bool *has, struct cryo_error *err)
{
	struct json_object *v = field(o, key);
	int64_t x;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return bad(err, name, "must be an integer");
	errno = 0;
	x = json_object_get_int64(v);
	/* json-c clamps out-of-range values to INT64_MIN/MAX and sets errno */
	if (errno == ERANGE || x < min || x > max)
		return cryo_error_setx(err, EINVAL, CFG "%s: %s is out of range [%lld, %lld]", name,
				       json_object_get_string(v), (long long)min, (long long)max);
	*ret = x;
	if (has)
		*has = true;
	return 0;
}

static int get_u32(struct json_object *o, const char *key, const char *name, uint32_t *ret, bool *has,
		   struct cryo_error *err)
{
	int64_t x = 0;
	bool h = false;
	int r = get_int(o, key, name, 0, UINT32_MAX, &x, &h, err);

	if (r < 0)
		return r;
	if (h) {
		*ret = (uint32_t)x;
		if (has)
			*has = true;
	}
	return 0;
}

/* An array of strings, at most max entries; NULL-terminated result. */
static int get_strv(struct json_object *o, const char *key, const char *name, size_t max, bool nonempty,
		    char ***ret, size_t *ret_n, struct cryo_error *err)
{
	struct json_object *v = field(o, key);
	char **s;
	size_t i, n;

	if (!v) {
		if (nonempty)
			return bad(err, name, "must be a non-empty array of strings");
		return 0;
	}
	if (!json_object_is_type(v, json_type_array))
		return bad(err, name, nonempty ? "must be a non-empty array of strings" : "must be an array of strings");
	n = json_object_array_length(v);
	if (nonempty && n == 0)
		return bad(err, name, "must be a non-empty array of strings");
	if (n > max)
		return cryo_error_setx(err, E2BIG, CFG "%s: %zu entries, at most %zu are allowed", name, n, max);
	s = calloc(n + 1, sizeof(*s));
	if (!s)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);

		if (!json_object_is_type(e, json_type_string) ||
		    strlen(json_object_get_string(e)) != (size_t)json_object_get_string_len(e)) {
			strv_free(s, i);
			return cryo_error_setx(err, EINVAL, CFG "%s[%zu]: must be a string", name, i);
		}
		s[i] = strdup(json_object_get_string(e));
		if (!s[i]) {
			strv_free(s, i);
			return cryo_error_set(err, ENOMEM, CFG "%s", name);
		}
	}
	*ret = s;
	*ret_n = n;
	return 0;
}

static int check_abs_path(const char *p, const char *name, struct cryo_error *err)
{
	if (!p || p[0] != '/')
		return bad(err, name, "must be an absolute path");
	if (strlen(p) >= PATH_MAX)
		return bad(err, name, "path is too long");
	return 0;
}

/* ---- sections ---- */

static int parse_user(struct json_object *proc, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *user, *gids;
	size_t i, n;
	int r;

	r = get_object(proc, "user", "process.user", &user, err);
	if (r < 0 || !user)
		return r;
	r = get_u32(user, "uid", "process.user.uid", &s->uid, NULL, err);
	if (r >= 0)
		r = get_u32(user, "gid", "process.user.gid", &s->gid, NULL, err);
	if (r >= 0)
		r = get_u32(user, "umask", "process.user.umask", &s->umask, &s->has_umask, err);
	if (r < 0)
		return r;
	if (s->has_umask && s->umask > 0777)
		return bad(err, "process.user.umask", "must be at most 0777");
	if (field(user, "username"))
		return bad(err, "process.user.username", "is a Windows field, not supported on Linux");
	gids = field(user, "additionalGids");
	if (!gids)
		return 0;
	if (!json_object_is_type(gids, json_type_array))
		return bad(err, "process.user.additionalGids", "must be an array of integers");
	n = json_object_array_length(gids);
	if (n > CRYO_SPEC_MAX_LIST)
		return bad(err, "process.user.additionalGids", "too many entries");
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

	r = get_object(root, "process", "process", &proc, err);
	if (r < 0)
		return r;
	if (!proc)
		return bad(err, "process", "is required");
	r = get_bool(proc, "terminal", "process.terminal", &s->terminal, err);
	if (r >= 0)
		r = get_object(proc, "consoleSize", "process.consoleSize", &v, err);
	if (r >= 0 && v) {
		s->has_console_size = true;
		r = get_u32(v, "height", "process.consoleSize.height", &s->console_height, NULL, err);
		if (r >= 0)
			r = get_u32(v, "width", "process.consoleSize.width", &s->console_width, NULL, err);
		if (r >= 0 && (s->console_height > 65535 || s->console_width > 65535))
			r = bad(err, "process.consoleSize", "height and width must be at most 65535");
	}
	if (r >= 0)
		r = parse_user(proc, s, err);
	if (r >= 0)
		r = get_strv(proc, "args", "process.args", CRYO_SPEC_MAX_ARGS, true, &s->args, &s->n_args, err);
	if (r < 0)
		return r;
	if (s->args[0][0] == '\0')
		return bad(err, "process.args[0]", "must not be empty");
	r = get_strv(proc, "env", "process.env", CRYO_SPEC_MAX_ENV, false, &s->env, &s->n_env, err);
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
	r = get_string(proc, "cwd", "process.cwd", PATH_MAX - 1, &s->cwd, err);
	if (r < 0)
		return r;
	if (!s->cwd)
		return bad(err, "process.cwd", "is required");
	r = check_abs_path(s->cwd, "process.cwd", err);
	if (r >= 0)
		r = get_bool(proc, "noNewPrivileges", "process.noNewPrivileges", &s->no_new_privileges, err);
	if (r >= 0)
		r = get_int(proc, "oomScoreAdj", "process.oomScoreAdj", -1000, 1000, &x, &s->has_oom_score_adj, err);
	if (r < 0)
		return r;
	s->oom_score_adj = (int)x;
	r = cryo_caps_parse(field(proc, "capabilities"), &s->caps, err);
	if (r >= 0)
		r = cryo_rlimits_parse(field(proc, "rlimits"), &s->rlimits, err);
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
	r = get_string(m, "destination", name, PATH_MAX - 1, &out->destination, err);
	if (r < 0)
		return r;
	r = check_abs_path(out->destination, name, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "mounts[%zu].type", idx);
	r = get_string(m, "type", name, 255, &out->type, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "mounts[%zu].source", idx);
	r = get_string(m, "source", name, PATH_MAX - 1, &out->source, err);
	if (r < 0)
		return r;
	snprintf(name, sizeof(name), "mounts[%zu].options", idx);
	r = get_strv(m, "options", name, 256, false, &opts, &n_opts, err);
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
		if (!known && (strchr(o, ',') || o[0] == '\0'))
			r = cryo_error_setx(err, EINVAL, CFG "mounts[%zu].options[%zu]: `%s` is not one option", idx,
					    i, o);
		else if (!known && append_data(&out->data, o) < 0)
			r = cryo_error_set(err, ENOMEM, CFG "mounts[%zu].options", idx);
		if (r < 0)
			break;
	}
	strv_free(opts, n_opts);
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
	struct json_object *v = field(root, "mounts");
	size_t i, n;
	int r;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return bad(err, "mounts", "must be an array");
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
	struct json_object *v = field(lnx, "namespaces");
	size_t i, n;
	int r;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return bad(err, "linux.namespaces", "must be an array");
	n = json_object_array_length(v);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		_cleanup_free_ char *type = NULL;
		char name[64];
		int t;

		if (!json_object_is_type(e, json_type_object))
			return cryo_error_setx(err, EINVAL, CFG "linux.namespaces[%zu]: must be an object", i);
		snprintf(name, sizeof(name), "linux.namespaces[%zu].type", i);
		r = get_string(e, "type", name, 32, &type, err);
		if (r < 0)
			return r;
		if (!type)
			return bad(err, name, "is required");
		t = ns_type_from_string(type);
		if (t < 0)
			return cryo_error_setx(err, EINVAL, CFG "%s: unknown namespace type `%s`", name, type);
		if (s->namespaces[t].enabled)
			return cryo_error_setx(err, EINVAL, CFG "%s: namespace `%s` is listed twice", name, type);
		s->namespaces[t].enabled = true;
		snprintf(name, sizeof(name), "linux.namespaces[%zu].path", i);
		r = get_string(e, "path", name, PATH_MAX - 1, &s->namespaces[t].path, err);
		if (r < 0)
			return r;
		if (s->namespaces[t].path) {
			r = check_abs_path(s->namespaces[t].path, name, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int parse_idmaps(struct json_object *lnx, const char *key, struct cryo_spec_idmap **ret, size_t *ret_n,
			struct cryo_error *err)
{
	struct json_object *v = field(lnx, key);
	char name[64];
	size_t i, n;
	int r;

	if (!v)
		return 0;
	snprintf(name, sizeof(name), "linux.%s", key);
	if (!json_object_is_type(v, json_type_array))
		return bad(err, name, "must be an array");
	n = json_object_array_length(v);
	if (n > 340) /* the kernel accepts at most 340 lines in uid_map */
		return bad(err, name, "at most 340 mappings are allowed");
	*ret = calloc(n + 1, sizeof(**ret));
	if (!*ret)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		struct cryo_spec_idmap *m = &(*ret)[i];
		bool h1 = false, h2 = false, h3 = false;

		snprintf(name, sizeof(name), "linux.%s[%zu]", key, i);
		if (!json_object_is_type(e, json_type_object))
			return bad(err, name, "must be an object");
		r = get_u32(e, "containerID", name, &m->container_id, &h1, err);
		if (r >= 0)
			r = get_u32(e, "hostID", name, &m->host_id, &h2, err);
		if (r >= 0)
			r = get_u32(e, "size", name, &m->size, &h3, err);
		if (r < 0)
			return r;
		if (!h1 || !h2 || !h3 || m->size == 0)
			return bad(err, name, "needs containerID, hostID and a non-zero size");
	}
	*ret_n = n;
	return 0;
}

/* The memory fields besides limit and swap: soft limit, kernel memory, swappiness, the OOM killer. */
static int parse_memory_v1(struct json_object *mem, struct cryo_spec_resources *res, struct cryo_error *err)
{
	int64_t x = 0;
	int r;

	r = get_int(mem, "reservation", "linux.resources.memory.reservation", -1, INT64_MAX, &res->memory_reservation,
		    &res->has_memory_reservation, err);
	if (r >= 0)
		r = get_int(mem, "kernel", "linux.resources.memory.kernel", -1, INT64_MAX, &res->memory_kernel,
			    &res->has_memory_kernel, err);
	if (r >= 0)
		r = get_int(mem, "kernelTCP", "linux.resources.memory.kernelTCP", -1, INT64_MAX, &res->memory_kernel_tcp,
			    &res->has_memory_kernel_tcp, err);
	if (r >= 0)
		r = get_int(mem, "swappiness", "linux.resources.memory.swappiness", 0, 100, &x,
			    &res->has_memory_swappiness, err);
	if (r >= 0)
		r = get_bool(mem, "disableOOMKiller", "linux.resources.memory.disableOOMKiller",
			     &res->disable_oom_killer, err);
	res->memory_swappiness = (uint64_t)x;
	return r;
}

#define CRYO_SPEC_MAX_DEV_RULES 1024

static int parse_dev_rule(struct json_object *e, const char *name, struct cryo_spec_dev_rule *d, struct cryo_error *err)
{
	_cleanup_free_ char *type = NULL, *access = NULL;
	bool has_allow = false, has = false;
	int r;

	if (!json_object_is_type(e, json_type_object))
		return bad(err, name, "must be an object");
	has_allow = field(e, "allow") != NULL;
	r = get_bool(e, "allow", name, &d->allow, err);
	if (r >= 0)
		r = get_string(e, "type", name, 1, &type, err);
	if (r >= 0)
		r = get_string(e, "access", name, 3, &access, err);
	if (r >= 0)
		r = get_int(e, "major", name, -1, UINT32_MAX, &d->major, &has, err);
	if (r >= 0 && !has)
		d->major = -1;
	if (r >= 0) {
		has = false;
		r = get_int(e, "minor", name, -1, UINT32_MAX, &d->minor, &has, err);
	}
	if (r >= 0 && !has)
		d->minor = -1;
	if (r < 0)
		return r;
	if (!has_allow)
		return bad(err, name, "needs allow");
	d->type = type && *type ? *type : 'a';
	if (!strchr("acb", d->type))
		return bad(err, name, "type must be a, c or b");
	snprintf(d->access, sizeof(d->access), "%s", access && *access ? access : "rwm");
	if (strspn(d->access, "rwm") != strlen(d->access))
		return bad(err, name, "access must be made of r, w and m");
	return 0;
}

static int parse_dev_rules(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *v = field(o, "devices");
	void *tab = NULL;
	char name[64];
	size_t i, n;
	int r;

	r = get_array(v, "linux.resources.devices", CRYO_SPEC_MAX_DEV_RULES, sizeof(*res->dev_rules), &tab, &n, err);
	res->dev_rules = tab;
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "linux.resources.devices[%zu]", i);
		r = parse_dev_rule(json_object_array_get_idx(v, i), name, &res->dev_rules[i], err);
		if (r < 0)
			return r;
	}
	res->n_dev_rules = n;
	return 0;
}

static const char *const blkio_list_keys[_CRYO_BLKIO_LIST_MAX] = {
	[CRYO_BLKIO_WEIGHT_DEVICE] = "weightDevice",
	[CRYO_BLKIO_THROTTLE_READ_BPS] = "throttleReadBpsDevice",
	[CRYO_BLKIO_THROTTLE_WRITE_BPS] = "throttleWriteBpsDevice",
	[CRYO_BLKIO_THROTTLE_READ_IOPS] = "throttleReadIOPSDevice",
	[CRYO_BLKIO_THROTTLE_WRITE_IOPS] = "throttleWriteIOPSDevice",
};

static int get_weight(struct json_object *o, const char *key, const char *name, uint16_t *ret, struct cryo_error *err)
{
	int64_t x = 0;
	bool has = false;
	int r = get_int(o, key, name, 10, 1000, &x, &has, err);

	if (r >= 0 && has)
		*ret = (uint16_t)x;
	return r;
}

static int parse_blkio_dev(struct json_object *e, const char *name, bool weights, struct cryo_spec_blkio_dev *d,
			   struct cryo_error *err)
{
	int64_t x = 0;
	bool h1 = false, h2 = false, h3 = true;
	int r;

	if (!json_object_is_type(e, json_type_object))
		return bad(err, name, "must be an object");
	r = get_int(e, "major", name, 0, UINT32_MAX, &x, &h1, err);
	d->major = (uint32_t)x;
	if (r >= 0)
		r = get_int(e, "minor", name, 0, UINT32_MAX, &x, &h2, err);
	d->minor = (uint32_t)x;
	if (r >= 0 && weights) {
		r = get_weight(e, "weight", name, &d->weight, err);
		if (r >= 0)
			r = get_weight(e, "leafWeight", name, &d->leaf_weight, err);
	} else if (r >= 0) {
		h3 = false;
		r = get_int(e, "rate", name, 0, INT64_MAX, &x, &h3, err);
		d->rate = (uint64_t)x;
	}
	if (r < 0)
		return r;
	if (!h1 || !h2 || !h3)
		return bad(err, name, weights ? "needs major and minor" : "needs major, minor and rate");
	return 0;
}

/* linux.resources.blockIO: the weights and the per-device lists. */
static int parse_blkio(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *b;
	char name[96];
	size_t l, i, n;
	int r;

	r = get_object(o, "blockIO", "linux.resources.blockIO", &b, err);
	if (r < 0 || !b)
		return r;
	r = get_weight(b, "weight", "linux.resources.blockIO.weight", &res->blkio_weight, err);
	if (r >= 0)
		r = get_weight(b, "leafWeight", "linux.resources.blockIO.leafWeight", &res->blkio_leaf_weight, err);
	if (r < 0)
		return r;
	for (l = 0; l < _CRYO_BLKIO_LIST_MAX; l++) {
		struct json_object *v = field(b, blkio_list_keys[l]);
		void *tab = NULL;

		snprintf(name, sizeof(name), "linux.resources.blockIO.%s", blkio_list_keys[l]);
		r = get_array(v, name, CRYO_SPEC_MAX_DEV_RULES, sizeof(*res->blkio[l]), &tab, &n,
			      err);
		res->blkio[l] = tab;
		if (r < 0)
			return r;
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "linux.resources.blockIO.%s[%zu]", blkio_list_keys[l], i);
			r = parse_blkio_dev(json_object_array_get_idx(v, i), name, l == CRYO_BLKIO_WEIGHT_DEVICE,
					    &res->blkio[l][i], err);
			if (r < 0)
				return r;
		}
		res->n_blkio[l] = n;
	}
	return 0;
}

/* linux.resources.network: the v1 net_cls class id and net_prio priorities. */
static int parse_network(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *n, *v;
	void *tab = NULL;
	char name[64];
	int64_t x = 0;
	size_t i, len;
	int r;

	r = get_object(o, "network", "linux.resources.network", &n, err);
	if (r < 0 || !n)
		return r;
	r = get_int(n, "classID", "linux.resources.network.classID", 0, UINT32_MAX, &x, &res->has_net_classid, err);
	if (r < 0)
		return r;
	res->net_classid = (uint32_t)x;
	v = field(n, "priorities");
	r = get_array(v, "linux.resources.network.priorities", CRYO_SPEC_MAX_DEV_RULES, sizeof(*res->net_prios), &tab,
		      &len, err);
	res->net_prios = tab;
	if (r < 0)
		return r;
	for (i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		struct cryo_spec_net_prio *p = &res->net_prios[i];
		_cleanup_free_ char *ifname = NULL;
		bool has = false;

		snprintf(name, sizeof(name), "linux.resources.network.priorities[%zu]", i);
		if (!json_object_is_type(e, json_type_object))
			return bad(err, name, "must be an object");
		r = get_string(e, "name", name, sizeof(p->name) - 1, &ifname, err);
		if (r >= 0)
			r = get_int(e, "priority", name, 0, UINT32_MAX, &x, &has, err);
		if (r < 0)
			return r;
		/* one line of net_prio.ifpriomap: an interface name, no blanks or slashes */
		if (!ifname || !*ifname || !has || strcspn(ifname, " \t\n/") != strlen(ifname))
			return bad(err, name, "needs an interface name and a priority");
		snprintf(p->name, sizeof(p->name), "%s", ifname);
		p->priority = (uint32_t)x;
	}
	res->n_net_prios = len;
	return 0;
}

/* "2MB", "64KB", "1GB": a number and a unit, as the hugetlb controller names its files. */
static bool valid_page_size(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && n < 8 && s[0] != '0' &&
	       (strcmp(s + n, "KB") == 0 || strcmp(s + n, "MB") == 0 || strcmp(s + n, "GB") == 0);
}

/* linux.resources.hugepageLimits */
static int parse_hugepages(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *v = field(o, "hugepageLimits");
	void *tab = NULL;
	char name[64];
	size_t i, len;
	int r;

	r = get_array(v, "linux.resources.hugepageLimits", 64, sizeof(*res->hugepages), &tab, &len, err);
	res->hugepages = tab;
	if (r < 0)
		return r;
	for (i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		struct cryo_spec_hugepage *h = &res->hugepages[i];
		_cleanup_free_ char *size = NULL;
		int64_t x = 0;
		bool has = false;

		snprintf(name, sizeof(name), "linux.resources.hugepageLimits[%zu]", i);
		if (!json_object_is_type(e, json_type_object))
			return bad(err, name, "must be an object");
		r = get_string(e, "pageSize", name, sizeof(h->page_size) - 1, &size, err);
		if (r >= 0)
			r = get_int(e, "limit", name, 0, INT64_MAX, &x, &has, err);
		if (r < 0)
			return r;
		if (!size || !has)
			return bad(err, name, "needs pageSize and limit");
		if (!valid_page_size(size))
			return bad(err, name, "pageSize must be a number and KB, MB or GB (\"2MB\")");
		snprintf(h->page_size, sizeof(h->page_size), "%s", size);
		h->limit = (uint64_t)x;
	}
	res->n_hugepages = len;
	return 0;
}

/* The nodes of linux.devices are the container's own: allow them after the configured rules. */
static int allow_device_nodes(struct cryo_spec *s, struct cryo_error *err)
{
	struct cryo_spec_resources *res = &s->resources;
	struct cryo_spec_dev_rule *d;
	size_t i;

	if (!res->dev_rules || !s->n_devices)
		return 0;
	d = reallocarray(res->dev_rules, res->n_dev_rules + s->n_devices, sizeof(*d));
	if (!d)
		return cryo_error_set(err, ENOMEM, CFG "linux.devices");
	res->dev_rules = d;
	for (i = 0; i < s->n_devices; i++) {
		const struct cryo_spec_device *n = &s->devices[i];

		/* a fifo needs no device rule */
		if (n->type == 'p')
			continue;
		d = &res->dev_rules[res->n_dev_rules++];
		*d = (struct cryo_spec_dev_rule){ .allow = true, .type = n->type == 'b' ? 'b' : 'c', .major = n->major,
						  .minor = n->minor };
		snprintf(d->access, sizeof(d->access), "rwm");
	}
	return 0;
}

static int parse_resources(struct json_object *lnx, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *o, *mem, *cpu, *pids;
	int64_t x = 0;
	int r;

	r = get_object(lnx, "resources", "linux.resources", &o, err);
	if (r < 0 || !o)
		return r;
	r = get_object(o, "memory", "linux.resources.memory", &mem, err);
	if (r >= 0)
		r = get_int(mem, "limit", "linux.resources.memory.limit", -1, INT64_MAX, &res->memory_limit,
			    &res->has_memory_limit, err);
	if (r >= 0)
		r = get_int(mem, "swap", "linux.resources.memory.swap", -1, INT64_MAX, &res->memory_swap,
			    &res->has_memory_swap, err);
	if (r >= 0)
		r = get_object(o, "cpu", "linux.resources.cpu", &cpu, err);
	if (r >= 0)
		r = get_int(cpu, "shares", "linux.resources.cpu.shares", 2, 262144, &x, &res->has_cpu_shares, err);
	if (r < 0)
		return r;
	res->cpu_shares = (uint64_t)x;
	r = get_int(cpu, "quota", "linux.resources.cpu.quota", -1, INT64_MAX, &res->cpu_quota, &res->has_cpu_quota, err);
	if (r >= 0)
		r = get_int(cpu, "period", "linux.resources.cpu.period", 1000, 1000000, &x, &res->has_cpu_period, err);
	if (r < 0)
		return r;
	res->cpu_period = (uint64_t)x;
	if (res->has_cpu_quota && res->cpu_quota != -1 && res->cpu_quota < 1000)
		return bad(err, "linux.resources.cpu.quota", "must be -1 or at least 1000 (us)");
	r = get_int(cpu, "realtimeRuntime", "linux.resources.cpu.realtimeRuntime", -1, INT64_MAX, &res->cpu_rt_runtime,
		    &res->has_cpu_rt_runtime, err);
	if (r >= 0)
		r = get_int(cpu, "realtimePeriod", "linux.resources.cpu.realtimePeriod", 1, INT64_MAX, &x,
			    &res->has_cpu_rt_period, err);
	if (r < 0)
		return r;
	res->cpu_rt_period = (uint64_t)x;
	r = get_string(cpu, "cpus", "linux.resources.cpu.cpus", 4096, &res->cpuset_cpus, err);
	if (r >= 0)
		r = get_string(cpu, "mems", "linux.resources.cpu.mems", 4096, &res->cpuset_mems, err);
	if (r >= 0)
		r = parse_memory_v1(mem, res, err);
	if (r >= 0)
		r = parse_dev_rules(o, res, err);
	if (r >= 0)
		r = parse_blkio(o, res, err);
	if (r >= 0)
		r = parse_network(o, res, err);
	if (r >= 0)
		r = parse_hugepages(o, res, err);
	if (r < 0)
		return r;
	r = get_object(o, "pids", "linux.resources.pids", &pids, err);
	if (r >= 0)
		r = get_int(pids, "limit", "linux.resources.pids.limit", INT64_MIN, INT64_MAX, &res->pids_limit,
			    &res->has_pids_limit, err);
	return r;
}

static int parse_devices(struct json_object *lnx, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *v = field(lnx, "devices");
	void *tab = NULL;
	size_t i, n;
	int r;

	r = get_array(v, "linux.devices", CRYO_SPEC_MAX_LIST, sizeof(*s->devices), &tab, &n, err);
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
			return bad(err, name, "must be an object");
		snprintf(name, sizeof(name), "linux.devices[%zu].path", i);
		r = get_string(e, "path", name, PATH_MAX - 1, &d->path, err);
		if (r >= 0)
			r = check_abs_path(d->path, name, err);
		if (r < 0)
			return r;
		if (strncmp(d->path, "/dev/", 5) != 0 || strstr(d->path, "/../") || strstr(d->path, "/./"))
			return bad(err, name, "must be a path under /dev");
		snprintf(name, sizeof(name), "linux.devices[%zu].type", i);
		r = get_string(e, "type", name, 1, &type, err);
		if (r < 0)
			return r;
		if (!type || !strchr("cbup", type[0]) || !type[0])
			return bad(err, name, "must be one of `c`, `b`, `u`, `p`");
		d->type = type[0];
		snprintf(name, sizeof(name), "linux.devices[%zu]", i);
		r = get_int(e, "major", name, 0, 0xfff, &d->major, &hm, err);
		if (r >= 0)
			r = get_int(e, "minor", name, 0, 0xfffff, &d->minor, &hn, err);
		if (r >= 0)
			r = get_u32(e, "fileMode", name, &d->file_mode, &d->has_file_mode, err);
		if (r >= 0)
			r = get_u32(e, "uid", name, &d->uid, &d->has_uid, err);
		if (r >= 0)
			r = get_u32(e, "gid", name, &d->gid, &d->has_gid, err);
		if (r < 0)
			return r;
		if (d->type != 'p' && (!hm || !hn))
			return bad(err, name, "major and minor are required for c, u and b devices");
		if (d->has_file_mode && d->file_mode > 07777)
			return bad(err, name, "fileMode must be at most 07777");
	}
	return 0;
}

static int parse_sysctl(struct json_object *lnx, struct cryo_spec *s, struct cryo_error *err)
{
	struct json_object *v;
	size_t n, i = 0;
	int r;

	r = get_object(lnx, "sysctl", "linux.sysctl", &v, err);
	if (r < 0 || !v)
		return r;
	n = (size_t)json_object_object_length(v);
	if (n > CRYO_SPEC_MAX_LIST)
		return bad(err, "linux.sysctl", "too many entries");
	s->sysctls = calloc(n + 1, sizeof(*s->sysctls));
	if (!s->sysctls)
		return cryo_error_set(err, ENOMEM, CFG "linux.sysctl");
	json_object_object_foreach(v, key, val)
	{
		if (!json_object_is_type(val, json_type_string))
			return cryo_error_setx(err, EINVAL, CFG "linux.sysctl.%s: must be a string", key);
		if (!*key || strstr(key, "..") || key[0] == '.' || key[0] == '/')
			return cryo_error_setx(err, EINVAL, CFG "linux.sysctl: `%s` is not a sysctl name", key);
		s->sysctls[i].key = strdup(key);
		s->sysctls[i].value = strdup(json_object_get_string(val));
		s->n_sysctls = ++i;
		if (!s->sysctls[i - 1].key || !s->sysctls[i - 1].value)
			return cryo_error_set(err, ENOMEM, CFG "linux.sysctl");
	}
	return 0;
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

	r = get_object(root, "linux", "linux", &lnx, err);
	if (r < 0 || !lnx)
		return r;
	r = parse_namespaces(lnx, s, err);
	if (r >= 0)
		r = parse_idmaps(lnx, "uidMappings", &s->uid_mappings, &s->n_uid_mappings, err);
	if (r >= 0)
		r = parse_idmaps(lnx, "gidMappings", &s->gid_mappings, &s->n_gid_mappings, err);
	if (r >= 0)
		r = parse_resources(lnx, &s->resources, err);
	if (r >= 0)
		r = get_string(lnx, "cgroupsPath", "linux.cgroupsPath", PATH_MAX - 1, &s->cgroups_path, err);
	if (r < 0)
		return r;
	if (s->cgroups_path && (strstr(s->cgroups_path, "..") || !*s->cgroups_path || strchr(s->cgroups_path, ':')))
		return bad(err, "linux.cgroupsPath", "must be a cgroup path without `..` (systemd `a:b:c` paths are not supported)");
	r = parse_devices(lnx, s, err);
	if (r >= 0)
		r = allow_device_nodes(s, err);
	if (r >= 0)
		r = get_strv(lnx, "maskedPaths", "linux.maskedPaths", CRYO_SPEC_MAX_LIST, false, &s->masked_paths,
			     &s->n_masked_paths, err);
	if (r >= 0)
		r = get_strv(lnx, "readonlyPaths", "linux.readonlyPaths", CRYO_SPEC_MAX_LIST, false,
			     &s->readonly_paths, &s->n_readonly_paths, err);
	if (r >= 0)
		r = parse_sysctl(lnx, s, err);
	if (r >= 0)
		r = get_string(lnx, "rootfsPropagation", "linux.rootfsPropagation", 32, &prop, err);
	if (r < 0)
		return r;
	if (prop && propagation_from_string(prop, &s->rootfs_propagation) < 0)
		return cryo_error_setx(err, EINVAL, CFG "linux.rootfsPropagation: unknown propagation `%s`", prop);
	r = cryo_seccomp_parse(field(lnx, "seccomp"), &s->seccomp, err);
	if (r < 0)
		return cryo_error_prefix(err, "config.json");
	if ((s->n_uid_mappings || s->n_gid_mappings) && !s->namespaces[CRYO_NS_USER].enabled)
		return bad(err, "linux.uidMappings", "id mappings need a user namespace");
	r = check_sysctls(s, err);
	if (r < 0)
		return r;
	if (s->namespaces[CRYO_NS_USER].enabled && !s->namespaces[CRYO_NS_USER].path &&
	    (!s->n_uid_mappings || !s->n_gid_mappings))
		return bad(err, "linux.uidMappings", "a new user namespace needs uidMappings and gidMappings");
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
	r = get_string(root, "ociVersion", "ociVersion", 64, &s->oci_version, err);
	if (r < 0)
		goto out;
	if (!s->oci_version || strncmp(s->oci_version, "1.", 2) != 0) {
		r = cryo_error_setx(err, EINVAL, CFG "ociVersion: `%s` is not a runtime-spec 1.x version",
				    s->oci_version ? s->oci_version : "(missing)");
		goto out;
	}
	r = get_object(root, "root", "root", &v, err);
	if (r < 0)
		goto out;
	if (!v) {
		r = bad(err, "root", "is required");
		goto out;
	}
	r = get_string(v, "path", "root.path", PATH_MAX - 1, &s->root_path, err);
	if (r >= 0 && (!s->root_path || !*s->root_path))
		r = bad(err, "root.path", "is required");
	if (r >= 0)
		r = get_bool(v, "readonly", "root.readonly", &s->root_readonly, err);
	if (r >= 0)
		r = parse_process(root, s, err);
	if (r >= 0)
		r = get_string(root, "hostname", "hostname", 64, &s->hostname, err);
	if (r >= 0)
		r = get_string(root, "domainname", "domainname", 64, &s->domainname, err);
	if (r >= 0)
		r = parse_mounts(root, s, err);
	if (r >= 0 && cryo_hooks_parse(field(root, "hooks"), &s->hooks, err) < 0)
		r = cryo_error_prefix(err, "config.json");
	if (r < 0)
		goto out;
	r = get_object(root, "annotations", "annotations", &v, err);
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
		r = bad(err, "hostname", "needs a uts namespace");
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
	struct json_object *v = field(spec->annotations, key);

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
