// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "rlimits.h"
#include "util.h"

static const struct {
	const char *name;
	int resource;
} names[] = {
	{ "RLIMIT_AS", RLIMIT_AS },		{ "RLIMIT_CORE", RLIMIT_CORE },
	{ "RLIMIT_CPU", RLIMIT_CPU },		{ "RLIMIT_DATA", RLIMIT_DATA },
	{ "RLIMIT_FSIZE", RLIMIT_FSIZE },	{ "RLIMIT_LOCKS", RLIMIT_LOCKS },
	{ "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK },	{ "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
	{ "RLIMIT_NICE", RLIMIT_NICE },		{ "RLIMIT_NOFILE", RLIMIT_NOFILE },
	{ "RLIMIT_NPROC", RLIMIT_NPROC },	{ "RLIMIT_RSS", RLIMIT_RSS },
	{ "RLIMIT_RTPRIO", RLIMIT_RTPRIO },	{ "RLIMIT_RTTIME", RLIMIT_RTTIME },
	{ "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING }, { "RLIMIT_STACK", RLIMIT_STACK },
};

static const char *resource_name(int resource)
{
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].resource == resource)
			return names[i].name;
	return "?";
}

/* JSON integers up to UINT64_MAX; RLIM_INFINITY is UINT64_MAX on Linux */
static int get_u64(struct json_object *o, const char *key, size_t i, uint64_t *ret, struct cryo_error *err)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return cryo_error_setx(err, EINVAL, "process.rlimits[%zu].%s: missing", i, key);
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return cryo_error_setx(err, EINVAL, "process.rlimits[%zu].%s: must be a non-negative integer", i, key);
	*ret = json_object_get_uint64(v);
	return 0;
}

int cryo_rlimits_parse(struct json_object *rlimits, struct cryo_rlimits_spec *out, struct cryo_error *err)
{
	struct cryo_rlimits_spec spec = { 0 };
	size_t n;
	int r;

	memset(out, 0, sizeof(*out));
	if (!rlimits || json_object_is_type(rlimits, json_type_null))
		return 0;
	if (!json_object_is_type(rlimits, json_type_array))
		return cryo_error_setx(err, EINVAL, "process.rlimits: must be an array");
	n = json_object_array_length(rlimits);
	/* each type at most once, so more entries than types is always wrong */
	if (n > ARRAY_SIZE(names))
		return cryo_error_setx(err, EINVAL, "process.rlimits: %zu entries, at most %zu", n, ARRAY_SIZE(names));
	spec.items = calloc(n ? n : 1, sizeof(*spec.items));
	if (!spec.items)
		return cryo_error_set(err, ENOMEM, "process.rlimits");
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(rlimits, i), *t;
		struct cryo_rlimit *l = &spec.items[i];
		const char *type;
		size_t k;

		if (!json_object_is_type(o, json_type_object)) {
			r = cryo_error_setx(err, EINVAL, "process.rlimits[%zu]: must be an object", i);
			goto fail;
		}
		if (!json_object_object_get_ex(o, "type", &t) || !json_object_is_type(t, json_type_string)) {
			r = cryo_error_setx(err, EINVAL, "process.rlimits[%zu].type: missing or not a string", i);
			goto fail;
		}
		type = json_object_get_string(t);
		for (k = 0; k < ARRAY_SIZE(names); k++)
			if (strcmp(names[k].name, type) == 0)
				break;
		if (k == ARRAY_SIZE(names)) {
			r = cryo_error_setx(err, EINVAL, "process.rlimits[%zu].type: unknown limit `%s`", i, type);
			goto fail;
		}
		for (size_t j = 0; j < i; j++) {
			if (spec.items[j].resource == names[k].resource) {
				r = cryo_error_setx(err, EINVAL, "process.rlimits[%zu].type: `%s` already set by process.rlimits[%zu]",
						    i, type, j);
				goto fail;
			}
		}
		l->resource = names[k].resource;
		r = get_u64(o, "soft", i, &l->soft, err);
		if (r >= 0)
			r = get_u64(o, "hard", i, &l->hard, err);
		if (r < 0)
			goto fail;
		if (l->soft > l->hard) {
			r = cryo_error_setx(err, EINVAL, "process.rlimits[%zu]: %s soft limit %llu is above the hard limit %llu",
					    i, type, (unsigned long long)l->soft, (unsigned long long)l->hard);
			goto fail;
		}
		spec.n++;
	}
	*out = spec;
	return 0;
fail:
	cryo_rlimits_spec_free(&spec);
	return r;
}

int cryo_rlimits_apply(const struct cryo_rlimits_spec *spec, pid_t pid, struct cryo_error *err)
{
	for (size_t i = 0; i < spec->n; i++) {
		const struct cryo_rlimit *l = &spec->items[i];
		struct rlimit rl = { .rlim_cur = l->soft, .rlim_max = l->hard };

		if (prlimit(pid, (__rlimit_resource_t)l->resource, &rl, NULL) < 0) {
			if (errno == EPERM)
				return cryo_error_set(err, errno,
						      "set %s to %llu/%llu (raising a hard limit needs CAP_SYS_RESOURCE)",
						      resource_name(l->resource), (unsigned long long)l->soft,
						      (unsigned long long)l->hard);
			return cryo_error_set(err, errno, "set %s to %llu/%llu", resource_name(l->resource),
					      (unsigned long long)l->soft, (unsigned long long)l->hard);
		}
	}
	return 0;
}

void cryo_rlimits_spec_free(struct cryo_rlimits_spec *spec)
{
	if (!spec)
		return;
	free(spec->items);
	memset(spec, 0, sizeof(*spec));
}
