// SPDX-License-Identifier: GPL-2.0-only
/* Typed readers of config.json: spec-json.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "spec-json.h"
#include "util.h"

#define CFG CRYO_SPEC_CFG

void cryo_spec_strv_free(char **v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

struct json_object *cryo_spec_json_field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	if (!o || !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	return v;
}

int cryo_spec_json_bad(struct cryo_error *err, const char *name, const char *what)
{
	return cryo_error_setx(err, EINVAL, CFG "%s: %s", name, what);
}

int cryo_spec_json_get_object(struct json_object *o, const char *key, const char *name, struct json_object **ret,
		      struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(o, key);

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return cryo_spec_json_bad(err, name, "must be an object");
	*ret = v;
	return 0;
}

/*
 * The array v (NULL: absent, nothing to do) of at most max entries: a
 * zeroed table of n + 1 elements of size each in *ret (NULL when absent).
 */
int cryo_spec_json_get_array(struct json_object *v, const char *name, size_t max, size_t size,
			     void **ret, size_t *ret_n, struct cryo_error *err)
{
	size_t n;

	*ret = NULL;
	*ret_n = 0;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_array))
		return cryo_spec_json_bad(err, name, "must be an array");
	n = json_object_array_length(v);
	if (n > max)
		return cryo_spec_json_bad(err, name, "too many entries");
	*ret = calloc(n + 1, size);
	if (!*ret)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	*ret_n = n;
	return 0;
}

int cryo_spec_json_get_string(struct json_object *o, const char *key, const char *name, size_t max, char **ret,
		      struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(o, key);
	char *s;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return cryo_spec_json_bad(err, name, "must be a string");
	if ((size_t)json_object_get_string_len(v) > max)
		return cryo_error_setx(err, EINVAL, CFG "%s: longer than %zu bytes", name, max);
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return cryo_spec_json_bad(err, name, "contains a NUL byte");
	s = strdup(json_object_get_string(v));
	if (!s)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	free(*ret);
	*ret = s;
	return 0;
}

int cryo_spec_json_get_bool(struct json_object *o, const char *key, const char *name, bool *ret, struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(o, key);

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return cryo_spec_json_bad(err, name, "must be true or false");
	*ret = json_object_get_boolean(v);
	return 0;
}

/* An integer in [min, max]; *has set when present. */
int cryo_spec_json_get_int(struct json_object *o, const char *key, const char *name, int64_t min, int64_t max,
		   int64_t *ret, bool *has, struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(o, key);
	int64_t x;

	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_int))
		return cryo_spec_json_bad(err, name, "must be an integer");
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

int cryo_spec_json_get_u32(struct json_object *o, const char *key, const char *name, uint32_t *ret, bool *has,
		   struct cryo_error *err)
{
	int64_t x = 0;
	bool h = false;
	int r = cryo_spec_json_get_int(o, key, name, 0, UINT32_MAX, &x, &h, err);

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
int cryo_spec_json_get_strv(struct json_object *o, const char *key, const char *name, size_t max, bool nonempty,
		    char ***ret, size_t *ret_n, struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(o, key);
	char **s;
	size_t i, n;

	if (!v) {
		if (nonempty)
			return cryo_spec_json_bad(err, name, "must be a non-empty array of strings");
		return 0;
	}
	if (!json_object_is_type(v, json_type_array))
		return cryo_spec_json_bad(err, name,
					  nonempty ? "must be a non-empty array of strings"
						   : "must be an array of strings");
	n = json_object_array_length(v);
	if (nonempty && n == 0)
		return cryo_spec_json_bad(err, name, "must be a non-empty array of strings");
	if (n > max)
		return cryo_error_setx(err, E2BIG, CFG "%s: %zu entries, at most %zu are allowed", name, n, max);
	s = calloc(n + 1, sizeof(*s));
	if (!s)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);

		if (!json_object_is_type(e, json_type_string) ||
		    strlen(json_object_get_string(e)) != (size_t)json_object_get_string_len(e)) {
			cryo_spec_strv_free(s, i);
			return cryo_error_setx(err, EINVAL, CFG "%s[%zu]: must be a string", name, i);
		}
		s[i] = strdup(json_object_get_string(e));
		if (!s[i]) {
			cryo_spec_strv_free(s, i);
			return cryo_error_set(err, ENOMEM, CFG "%s", name);
		}
	}
	*ret = s;
	*ret_n = n;
	return 0;
}

int cryo_spec_json_check_abs_path(const char *p, const char *name, struct cryo_error *err)
{
	if (!p || p[0] != '/')
		return cryo_spec_json_bad(err, name, "must be an absolute path");
	if (strlen(p) >= PATH_MAX)
		return cryo_spec_json_bad(err, name, "path is too long");
	return 0;
}

int cryo_spec_json_get_string_map(struct json_object *o, const char *key, const char *name, size_t max,
				  struct cryo_spec_kv **ret, size_t *ret_n, struct cryo_error *err)
{
	struct cryo_spec_kv *m;
	struct json_object *v;
	size_t n, i = 0;
	int r;

	r = cryo_spec_json_get_object(o, key, name, &v, err);
	if (r < 0 || !v)
		return r;
	n = (size_t)json_object_object_length(v);
	if (n > max)
		return cryo_spec_json_bad(err, name, "too many entries");
	m = calloc(n + 1, sizeof(*m));
	if (!m)
		return cryo_error_set(err, ENOMEM, CFG "%s", name);
	*ret = m;
	json_object_object_foreach(v, k, val)
	{
		if (!json_object_is_type(val, json_type_string))
			return cryo_error_setx(err, EINVAL, CFG "%s.%s: must be a string", name, k);
		m[i].key = strdup(k);
		m[i].value = strdup(json_object_get_string(val));
		*ret_n = ++i;
		if (!m[i - 1].key || !m[i - 1].value)
			return cryo_error_set(err, ENOMEM, CFG "%s", name);
	}
	return 0;
}

void cryo_spec_string_map_free(struct cryo_spec_kv *m, size_t n)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < n; i++) {
		free(m[i].key);
		free(m[i].value);
	}
	free(m);
}
