// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "seccomp.h"
#include "seccomp-load.h"
#include "util.h"
#include "version.h"

enum action_kind { ACT_PLAIN, ACT_WITH_ERRNO, ACT_WITH_TRACE, ACT_NOTIFY };

static const struct {
	const char *name;
	uint32_t action;
	enum action_kind kind;
} actions[] = {
	{ "SCMP_ACT_KILL", SCMP_ACT_KILL, ACT_PLAIN },
	{ "SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, ACT_PLAIN },
	{ "SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, ACT_PLAIN },
	{ "SCMP_ACT_TRAP", SCMP_ACT_TRAP, ACT_PLAIN },
	{ "SCMP_ACT_ERRNO", 0, ACT_WITH_ERRNO },
	{ "SCMP_ACT_TRACE", 0, ACT_WITH_TRACE },
	{ "SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, ACT_PLAIN },
	{ "SCMP_ACT_LOG", SCMP_ACT_LOG, ACT_PLAIN },
	{ "SCMP_ACT_NOTIFY", SCMP_ACT_NOTIFY, ACT_NOTIFY },
};

static const struct {
	const char *name;
	enum scmp_compare op;
} ops[] = {
	{ "SCMP_CMP_NE", SCMP_CMP_NE },	      { "SCMP_CMP_LT", SCMP_CMP_LT }, { "SCMP_CMP_LE", SCMP_CMP_LE },
	{ "SCMP_CMP_EQ", SCMP_CMP_EQ },	      { "SCMP_CMP_GE", SCMP_CMP_GE }, { "SCMP_CMP_GT", SCMP_CMP_GT },
	{ "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
};

/* errno values live in 16 bits of the filter's return value */
#define ERRNO_MAX 0xffff

static int get_u64(struct json_object *o, const char *field, uint64_t *ret, struct cryo_error *err)
{
	if (!json_object_is_type(o, json_type_int) || json_object_get_int64(o) < 0)
		return cryo_error_setx(err, EINVAL, "%s: must be a non-negative integer", field);
	*ret = json_object_get_uint64(o);
	return 0;
}

/*
 * action + optional errnoRet -> libseccomp action value. ERRNO and TRACE
 * without errnoRet use EPERM, as runc and crun do.
 */
static int parse_action(struct json_object *obj, const char *action_field, const char *errno_field,
			const char *where, uint32_t *ret, struct cryo_error *err)
{
	struct json_object *a, *e;
	uint64_t errnum = EPERM;
	bool has_errno;
	const char *s;

	if (!json_object_object_get_ex(obj, action_field, &a))
		return cryo_error_setx(err, EINVAL, "%s.%s: missing", where, action_field);
	if (!json_object_is_type(a, json_type_string))
		return cryo_error_setx(err, EINVAL, "%s.%s: must be a string", where, action_field);
	s = json_object_get_string(a);
	has_errno = json_object_object_get_ex(obj, errno_field, &e) && !json_object_is_type(e, json_type_null);
	if (has_errno) {
		char f[256];
		int r;

		snprintf(f, sizeof(f), "%s.%s", where, errno_field);
		r = get_u64(e, f, &errnum, err);
		if (r < 0)
			return r;
		if (errnum > ERRNO_MAX)
			return cryo_error_setx(err, EINVAL, "%s: %llu is out of range (0..%d)", f,
					       (unsigned long long)errnum, ERRNO_MAX);
	}
	for (size_t i = 0; i < ARRAY_SIZE(actions); i++) {
		if (strcmp(actions[i].name, s) != 0)
			continue;
		switch (actions[i].kind) {
		case ACT_WITH_ERRNO:
			*ret = SCMP_ACT_ERRNO((uint32_t)errnum);
			return 0;
		case ACT_WITH_TRACE:
			*ret = SCMP_ACT_TRACE((uint32_t)errnum);
			return 0;
		case ACT_PLAIN:
		case ACT_NOTIFY:
			if (has_errno)
				return cryo_error_setx(err, EINVAL, "%s.%s: only valid with SCMP_ACT_ERRNO or SCMP_ACT_TRACE",
						       where, errno_field);
			*ret = actions[i].action;
			return 0;
		}
	}
	return cryo_error_setx(err, EINVAL, "%s.%s: unknown action `%s`", where, action_field, s);
}

static int parse_arches(struct json_object *arr, struct cryo_seccomp_spec *spec, struct cryo_error *err)
{
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		return cryo_error_setx(err, EINVAL, "linux.seccomp.architectures: must be an array of strings");
	n = json_object_array_length(arr);
	if (n > CRYO_SECCOMP_MAX_ARCHES)
		return cryo_error_setx(err, EINVAL, "linux.seccomp.architectures: %zu entries, at most %d", n,
				       CRYO_SECCOMP_MAX_ARCHES);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		char lower[32];
		const char *s;
		uint32_t arch;
		size_t j;

		if (!json_object_is_type(v, json_type_string))
			return cryo_error_setx(err, EINVAL, "linux.seccomp.architectures[%zu]: must be a string", i);
		s = json_object_get_string(v);
		/* OCI says SCMP_ARCH_X86_64, libseccomp resolves x86_64 */
		if (strncmp(s, "SCMP_ARCH_", 10) != 0 || strlen(s + 10) >= sizeof(lower))
			goto unknown;
		for (j = 0; s[10 + j]; j++)
			lower[j] = (char)tolower((unsigned char)s[10 + j]);
		lower[j] = '\0';
		arch = seccomp_arch_resolve_name(lower);
		if (arch == 0)
			goto unknown;
		spec->arches[spec->n_arches++] = arch;
		continue;
unknown:
		return cryo_error_setx(err, EINVAL, "linux.seccomp.architectures[%zu]: unknown architecture `%s`", i, s);
	}
	return 0;
}

static int parse_flags(struct json_object *arr, struct cryo_seccomp_spec *spec, struct cryo_error *err)
{
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		return cryo_error_setx(err, EINVAL, "linux.seccomp.flags: must be an array of strings");
	n = json_object_array_length(arr);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		const char *s;

		if (!json_object_is_type(v, json_type_string))
			return cryo_error_setx(err, EINVAL, "linux.seccomp.flags[%zu]: must be a string", i);
		s = json_object_get_string(v);
		if (strcmp(s, "SECCOMP_FILTER_FLAG_TSYNC") == 0)
			spec->flag_tsync = true;
		else if (strcmp(s, "SECCOMP_FILTER_FLAG_LOG") == 0)
			spec->flag_log = true;
		else if (strcmp(s, "SECCOMP_FILTER_FLAG_SPEC_ALLOW") == 0)
			spec->flag_spec_allow = true;
		else if (strcmp(s, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") == 0)
			return cryo_error_setx(err, EOPNOTSUPP, "linux.seccomp.flags[%zu]: `%s` is not supported", i, s);
		else
			return cryo_error_setx(err, EINVAL, "linux.seccomp.flags[%zu]: unknown flag `%s`", i, s);
	}
	return 0;
}

static int parse_arg(struct json_object *o, const char *where, struct cryo_seccomp_arg *arg, struct cryo_error *err)
{
	struct json_object *v;
	char f[256];
	uint64_t index = 0;
	const char *s;
	int r;

	memset(arg, 0, sizeof(*arg));
	if (!json_object_is_type(o, json_type_object))
		return cryo_error_setx(err, EINVAL, "%s: must be an object", where);
	snprintf(f, sizeof(f), "%s.index", where);
	if (!json_object_object_get_ex(o, "index", &v))
		return cryo_error_setx(err, EINVAL, "%s: missing", f);
	r = get_u64(v, f, &index, err);
	if (r < 0)
		return r;
	if (index >= CRYO_SECCOMP_MAX_ARGS)
		return cryo_error_setx(err, EINVAL, "%s: %llu is out of range (0..5)", f, (unsigned long long)index);
	arg->index = (unsigned int)index;
	snprintf(f, sizeof(f), "%s.value", where);
	if (!json_object_object_get_ex(o, "value", &v))
		return cryo_error_setx(err, EINVAL, "%s: missing", f);
	r = get_u64(v, f, &arg->value, err);
	if (r < 0)
		return r;
	snprintf(f, sizeof(f), "%s.valueTwo", where);
	if (json_object_object_get_ex(o, "valueTwo", &v) && !json_object_is_type(v, json_type_null)) {
		r = get_u64(v, f, &arg->value_two, err);
		if (r < 0)
			return r;
	}
	snprintf(f, sizeof(f), "%s.op", where);
	if (!json_object_object_get_ex(o, "op", &v))
		return cryo_error_setx(err, EINVAL, "%s: missing", f);
	if (!json_object_is_type(v, json_type_string))
		return cryo_error_setx(err, EINVAL, "%s: must be a string", f);
	s = json_object_get_string(v);
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
		if (strcmp(ops[i].name, s) == 0) {
			arg->op = ops[i].op;
			return 0;
		}
	}
	return cryo_error_setx(err, EINVAL, "%s: unknown operator `%s`", f, s);
}

static void rule_free(struct cryo_seccomp_rule *rule)
{
	if (rule->names)
		for (size_t i = 0; i < rule->n_names; i++)
			free(rule->names[i]);
	free(rule->names);
	free(rule->nrs);
	memset(rule, 0, sizeof(*rule));
}

static int parse_rule(struct json_object *o, size_t idx, size_t *total_names, struct cryo_seccomp_rule *rule,
		      struct cryo_error *err)
{
	struct json_object *names, *args;
	char where[64];
	size_t n;
	int r;

	snprintf(where, sizeof(where), "linux.seccomp.syscalls[%zu]", idx);
	if (!json_object_is_type(o, json_type_object))
		return cryo_error_setx(err, EINVAL, "%s: must be an object", where);
	if (!json_object_object_get_ex(o, "names", &names) || !json_object_is_type(names, json_type_array))
		return cryo_error_setx(err, EINVAL, "%s.names: must be an array of strings", where);
	n = json_object_array_length(names);
	if (n == 0)
		return cryo_error_setx(err, EINVAL, "%s.names: must not be empty", where);
	*total_names += n;
	if (*total_names > CRYO_SECCOMP_MAX_SYSCALLS)
		return cryo_error_setx(err, EINVAL, "%s.names: more than %d syscall names in total", where,
				       CRYO_SECCOMP_MAX_SYSCALLS);
	rule->names = calloc(n + 1, sizeof(char *));
	rule->nrs = calloc(n, sizeof(int));
	if (!rule->names || !rule->nrs)
		return cryo_error_set(err, ENOMEM, "%s", where);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(names, i);
		const char *s;
		int nr;

		if (!json_object_is_type(v, json_type_string))
			return cryo_error_setx(err, EINVAL, "%s.names[%zu]: must be a string", where, i);
		s = json_object_get_string(v);
		nr = seccomp_syscall_resolve_name(s);
		if (nr == __NR_SCMP_ERROR)
			return cryo_error_setx(err, EINVAL, "%s.names[%zu]: unknown syscall `%s`", where, i, s);
		rule->names[i] = strdup(s);
		if (!rule->names[i])
			return cryo_error_set(err, ENOMEM, "%s", where);
		rule->nrs[i] = nr;
		rule->n_names++;
	}
	r = parse_action(o, "action", "errnoRet", where, &rule->action, err);
	if (r < 0)
		return r;
	/*
	 * The fd goes to the listener with sendmsg(2), made under the filter
	 * (see cryo_seccomp_apply), and after the load the init reports a
	 * failed exec with write(2) (to start's fifo and stderr): the report
	 * would wait for the listener, which may be what failed.
	 */
	for (size_t i = 0; rule->action == SCMP_ACT_NOTIFY && i < rule->n_names; i++) {
		if (strcmp(rule->names[i], "sendmsg") == 0)
			return cryo_error_setx(err, EINVAL,
					       "%s: SCMP_ACT_NOTIFY on `sendmsg`: the runtime sends the listener its fd "
					       "with sendmsg under the filter, it would wait for itself",
					       where);
		if (strcmp(rule->names[i], "write") == 0)
			return cryo_error_setx(err, EINVAL,
					       "%s: SCMP_ACT_NOTIFY cannot be used for the write syscall: the init "
					       "reports a failed exec with write under the filter",
					       where);
	}
	if (json_object_object_get_ex(o, "args", &args) && !json_object_is_type(args, json_type_null)) {
		if (!json_object_is_type(args, json_type_array))
			return cryo_error_setx(err, EINVAL, "%s.args: must be an array", where);
		n = json_object_array_length(args);
		if (n > CRYO_SECCOMP_MAX_ARGS)
			return cryo_error_setx(err, EINVAL, "%s.args: %zu entries, at most %d", where, n,
					       CRYO_SECCOMP_MAX_ARGS);
		for (size_t i = 0; i < n; i++) {
			char aw[96];

			snprintf(aw, sizeof(aw), "%s.args[%zu]", where, i);
			r = parse_arg(json_object_array_get_idx(args, i), aw, &rule->args[i], err);
			if (r < 0)
				return r;
			rule->n_args++;
		}
	}
	return 0;
}

static int get_string(struct json_object *o, const char *key, char **ret, struct cryo_error *err)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return cryo_error_setx(err, EINVAL, "linux.seccomp.%s: must be a string", key);
	*ret = strdup(json_object_get_string(v));
	if (!*ret)
		return cryo_error_set(err, ENOMEM, "linux.seccomp.%s", key);
	return 0;
}

/*
 * listenerPath: an absolute path (resolved in the runtime's namespace, as
 * crun and runc do), short enough for sun_path; listenerMetadata only
 * with it (runtime-spec: "MUST NOT be set if listenerPath is not set").
 */
static int parse_listener(struct json_object *seccomp, struct cryo_seccomp_spec *spec, struct cryo_error *err)
{
	int r;

	r = get_string(seccomp, "listenerPath", &spec->listener_path, err);
	if (r >= 0)
		r = get_string(seccomp, "listenerMetadata", &spec->listener_metadata, err);
	if (r < 0)
		return r;
	if (spec->listener_path) {
		if (spec->listener_path[0] != '/')
			return cryo_error_setx(err, EINVAL, "linux.seccomp.listenerPath: `%s` is not an absolute path",
					       spec->listener_path);
		if (strlen(spec->listener_path) >= sizeof(((struct sockaddr_un *)NULL)->sun_path))
			return cryo_error_setx(err, ENAMETOOLONG,
					       "linux.seccomp.listenerPath: `%s` is too long for a UNIX socket",
					       spec->listener_path);
	}
	if (spec->listener_metadata && !spec->listener_path)
		return cryo_error_setx(err, EINVAL, "linux.seccomp.listenerMetadata: set without listenerPath");
	if (spec->listener_metadata && strlen(spec->listener_metadata) > CRYO_SECCOMP_METADATA_MAX)
		return cryo_error_setx(err, EINVAL, "linux.seccomp.listenerMetadata: %zu bytes, at most %d",
				       strlen(spec->listener_metadata), CRYO_SECCOMP_METADATA_MAX);
	return 0;
}

int cryo_seccomp_parse(struct json_object *seccomp, struct cryo_seccomp_spec *out, struct cryo_error *err)
{
	struct cryo_seccomp_spec spec = { 0 };
	struct json_object *v;
	size_t total_names = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if (!seccomp || json_object_is_type(seccomp, json_type_null))
		return 0;
	if (!json_object_is_type(seccomp, json_type_object))
		return cryo_error_setx(err, EINVAL, "linux.seccomp: must be an object");
	spec.present = true;
	r = parse_action(seccomp, "defaultAction", "defaultErrnoRet", "linux.seccomp", &spec.default_action, err);
	if (r < 0)
		goto fail;
	if (spec.default_action == SCMP_ACT_NOTIFY) {
		/* as runc: every syscall of the runtime after the load would wait for a listener without its fd */
		r = cryo_error_setx(err, EINVAL, "linux.seccomp.defaultAction: SCMP_ACT_NOTIFY can't be the default action");
		goto fail;
	}
	r = parse_listener(seccomp, &spec, err);
	if (r < 0)
		goto fail;
	if (json_object_object_get_ex(seccomp, "architectures", &v) && !json_object_is_type(v, json_type_null)) {
		r = parse_arches(v, &spec, err);
		if (r < 0)
			goto fail;
	}
	if (json_object_object_get_ex(seccomp, "flags", &v) && !json_object_is_type(v, json_type_null)) {
		r = parse_flags(v, &spec, err);
		if (r < 0)
			goto fail;
	}
	if (json_object_object_get_ex(seccomp, "syscalls", &v) && !json_object_is_type(v, json_type_null)) {
		size_t n;

		if (!json_object_is_type(v, json_type_array)) {
			r = cryo_error_setx(err, EINVAL, "linux.seccomp.syscalls: must be an array");
			goto fail;
		}
		n = json_object_array_length(v);
		if (n > CRYO_SECCOMP_MAX_SYSCALLS) {
			r = cryo_error_setx(err, EINVAL, "linux.seccomp.syscalls: %zu entries, at most %d", n,
					    CRYO_SECCOMP_MAX_SYSCALLS);
			goto fail;
		}
		spec.rules = calloc(n ? n : 1, sizeof(*spec.rules));
		if (!spec.rules) {
			r = cryo_error_set(err, ENOMEM, "linux.seccomp.syscalls");
			goto fail;
		}
		for (size_t i = 0; i < n; i++) {
			/* counted before parsing so a half-parsed rule is freed too */
			spec.n_rules++;
			r = parse_rule(json_object_array_get_idx(v, i), i, &total_names, &spec.rules[i], err);
			if (r < 0)
				goto fail;
		}
	}
	for (size_t i = 0; i < spec.n_rules; i++)
		spec.uses_notify |= spec.rules[i].action == SCMP_ACT_NOTIFY;
	if (spec.uses_notify && !spec.listener_path) {
		r = cryo_error_setx(err, EINVAL,
				    "linux.seccomp: SCMP_ACT_NOTIFY needs linux.seccomp.listenerPath, the socket of the "
				    "agent that answers the notifications");
		goto fail;
	}
	*out = spec;
	return 0;
fail:
	cryo_seccomp_spec_free(&spec);
	return r;
}

static bool has_duplicate_index(const struct cryo_seccomp_rule *rule)
{
	unsigned int seen = 0;

	for (size_t i = 0; i < rule->n_args; i++) {
		if (seen & (1u << rule->args[i].index))
			return true;
		seen |= 1u << rule->args[i].index;
	}
	return false;
}

/*
 * One rule, all its conditions ANDed. libseccomp can't hold two conditions
 * on the same argument in one rule, so such a rule becomes one rule per
 * condition (ORed), which is what runc does with them.
 */
static int add_rule(scmp_filter_ctx ctx, const struct cryo_seccomp_rule *rule, size_t ri, size_t ni,
		    struct cryo_error *err)
{
	struct scmp_arg_cmp cmp[CRYO_SECCOMP_MAX_ARGS];
	int r;

	for (size_t i = 0; i < rule->n_args; i++)
		cmp[i] = (struct scmp_arg_cmp){ .arg = rule->args[i].index,
						.op = (enum scmp_compare)rule->args[i].op,
						.datum_a = rule->args[i].value,
						.datum_b = rule->args[i].value_two };
	if (!has_duplicate_index(rule)) {
		r = seccomp_rule_add_array(ctx, rule->action, rule->nrs[ni], (unsigned int)rule->n_args, cmp);
	} else {
		r = 0;
		for (size_t i = 0; i < rule->n_args && r == 0; i++)
			r = seccomp_rule_add_array(ctx, rule->action, rule->nrs[ni], 1, &cmp[i]);
	}
	if (r < 0)
		return cryo_error_set(err, -r, "add rule for `%s` (syscalls[%zu])", rule->names[ni], ri);
	return 0;
}

int cryo_seccomp_listener_connect(const struct cryo_seccomp_spec *spec, int *ret_fd, struct cryo_error *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -1;
	const char *path = spec->listener_path;
	struct stat st;

	*ret_fd = -1;
	if (!spec->present || !spec->uses_notify)
		return 0;
	/* a plain file or a dir would only give ECONNREFUSED: say what is wrong */
	if (stat(path, &st) < 0)
		return cryo_error_set(err, errno, "linux.seccomp.listenerPath: failed to connect with seccomp agent `%s`",
				      path);
	if (!S_ISSOCK(st.st_mode))
		return cryo_error_setx(err, ENOTSOCK, "linux.seccomp.listenerPath: `%s` is not a socket", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cryo_error_set(err, errno, "linux.seccomp.listenerPath: socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return cryo_error_set(err, errno, "linux.seccomp.listenerPath: failed to connect with seccomp agent `%s`",
				      path);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* The runtime-spec's "container process state" for the listener, as text. */
static char *process_state(const struct cryo_seccomp_spec *spec, const struct cryo_seccomp_listener *l,
			   struct cryo_error *err)
{
	struct json_object *o, *state, *fds, *v;
	int64_t pid = l->pid;
	char *text = NULL;

	state = json_tokener_parse(l->state ? l->state : "");
	if (!state || !json_object_is_type(state, json_type_object)) {
		json_object_put(state);
		cryo_error_setx(err, EINVAL, "seccomp listener: the container state is not a JSON object");
		return NULL;
	}
	if (pid <= 0 && json_object_object_get_ex(state, "pid", &v))
		pid = json_object_get_int64(v);
	o = json_object_new_object();
	fds = json_object_new_array();
	if (!o || !fds)
		goto nomem;
	json_object_array_add(fds, json_object_new_string("seccompFd"));
	json_object_object_add(o, "ociVersion", json_object_new_string(CRYO_OCI_VERSION));
	json_object_object_add(o, "fds", TAKE_PTR(fds));
	json_object_object_add(o, "pid", json_object_new_int64(pid));
	if (spec->listener_metadata)
		json_object_object_add(o, "metadata", json_object_new_string(spec->listener_metadata));
	json_object_object_add(o, "state", TAKE_PTR(state));
	text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	if (!text)
		goto nomem;
	json_object_put(o);
	return text;
nomem:
	json_object_put(o);
	json_object_put(fds);
	json_object_put(state);
	cryo_error_set(err, ENOMEM, "seccomp listener state");
	return NULL;
}

_Static_assert(CRYO_SECCOMP_MAX_ARCHES <= CRYO_SECCOMP_LOAD_MAX_ARCHES, "the loader takes every architecture");

/* Load ctx, built from spec: the loader gets the profile's names, arches and flags. */
static int load(scmp_filter_ctx ctx, const struct cryo_seccomp_spec *spec, int *ret_notify_fd, struct cryo_error *err)
{
	_cleanup_free_ const char **names = NULL;
	struct cryo_seccomp_load l = {
		.default_action = spec->default_action,
		.arches = spec->arches,
		.n_arches = spec->n_arches,
		.tsync = spec->flag_tsync,
		.log = spec->flag_log,
		.spec_allow = spec->flag_spec_allow,
		.notify = spec->uses_notify,
	};
	size_t n = 0;

	for (size_t i = 0; i < spec->n_rules; i++)
		n += spec->rules[i].n_names;
	names = calloc(n ? n : 1, sizeof(*names));
	if (!names)
		return cryo_error_set(err, ENOMEM, "seccomp");
	for (size_t i = 0; i < spec->n_rules; i++)
		for (size_t j = 0; j < spec->rules[i].n_names; j++)
			names[l.n_names++] = spec->rules[i].names[j];
	l.names = names;
	return cryo_seccomp_load(ctx, &l, ret_notify_fd, err);
}

int cryo_seccomp_apply(const struct cryo_seccomp_spec *spec, const struct cryo_seccomp_listener *l,
		       struct cryo_error *err)
{
	_cleanup_free_ char *payload = NULL;
	scmp_filter_ctx ctx;
	int r = 0, nfd;

	if (!spec->present)
		return 0;
	if (spec->uses_notify) {
		if (!l || l->fd < 0)
			return cryo_error_setx(err, EINVAL, "seccomp: SCMP_ACT_NOTIFY without a connection to the listener");
		/* before the load: under the filter only sendmsg is sure not to wait for the listener */
		payload = process_state(spec, l, err);
		if (!payload)
			return -(err && err->status ? err->status : ENOMEM);
	}
	ctx = seccomp_init(spec->default_action);
	if (!ctx)
		return cryo_error_setx(err, EINVAL, "seccomp: libseccomp refused the default action");
	/*
	 * NO_NEW_PRIVS is the config's decision (process.noNewPrivileges), not
	 * libseccomp's, and real errnos beat libseccomp's -ECANCELED.
	 */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0 || seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1) < 0) {
		r = cryo_error_setx(err, EINVAL, "seccomp: set filter attributes");
		goto out;
	}
	if (spec->flag_tsync && (r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0) {
		r = cryo_error_set(err, -r, "seccomp: flag SECCOMP_FILTER_FLAG_TSYNC");
		goto out;
	}
	if (spec->flag_log && (r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1)) < 0) {
		r = cryo_error_set(err, -r, "seccomp: flag SECCOMP_FILTER_FLAG_LOG");
		goto out;
	}
	if (spec->flag_spec_allow && (r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_SSB, 1)) < 0) {
		r = cryo_error_set(err, -r, "seccomp: flag SECCOMP_FILTER_FLAG_SPEC_ALLOW");
		goto out;
	}
	for (size_t i = 0; i < spec->n_arches; i++) {
		r = seccomp_arch_add(ctx, spec->arches[i]);
		if (r < 0 && r != -EEXIST) {
			r = cryo_error_set(err, -r, "seccomp: add architecture %zu of linux.seccomp.architectures", i);
			goto out;
		}
	}
	for (size_t i = 0; i < spec->n_rules; i++) {
		const struct cryo_seccomp_rule *rule = &spec->rules[i];

		/* libseccomp refuses rules that repeat the default; they change nothing */
		if (rule->action == spec->default_action)
			continue;
		for (size_t j = 0; j < rule->n_names; j++) {
			r = add_rule(ctx, rule, i, j, err);
			if (r < 0)
				goto prefix;
		}
	}
	r = load(ctx, spec, &nfd, err);
	if (r < 0)
		goto prefix;
	if (!spec->uses_notify || !payload)
		goto out;
	/*
	 * The notify fd, made by the kernel with O_CLOEXEC, closed here once
	 * the listener has its copy; it goes with the state in one sendmsg,
	 * as the runtime-spec has it.
	 */
	r = cryo_send_with_fd(l->fd, nfd, payload, strlen(payload));
	close(nfd);
	if (r < 0) {
		r = cryo_error_set(err, -r, "send the notify fd to linux.seccomp.listenerPath");
		goto prefix;
	}
	goto out;
prefix:
	cryo_error_prefix(err, "seccomp");
out:
	seccomp_release(ctx);
	return r;
}

void cryo_seccomp_spec_free(struct cryo_seccomp_spec *spec)
{
	if (!spec)
		return;
	for (size_t i = 0; i < spec->n_rules; i++)
		rule_free(&spec->rules[i]);
	free(spec->rules);
	free(spec->listener_path);
	free(spec->listener_metadata);
	memset(spec, 0, sizeof(*spec));
}
