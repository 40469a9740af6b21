// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "caps.h"
#include "util.h"

const char *const cryo_caps_set_names[_CRYO_CAPS_SET_MAX] = {
	[CRYO_CAPS_BOUNDING] = "bounding",
	[CRYO_CAPS_EFFECTIVE] = "effective",
	[CRYO_CAPS_PERMITTED] = "permitted",
	[CRYO_CAPS_INHERITABLE] = "inheritable",
	[CRYO_CAPS_AMBIENT] = "ambient",
};

/* "CAP_SYS_ADMIN" for messages; libcap spells names in lower case. */
static void cap_name(cap_value_t c, char buf[static 64])
{
	char *n = cap_to_name(c);

	snprintf(buf, 64, "%s", n ? n : "?");
	cap_free(n);
	for (char *p = buf; *p; p++)
		*p = (char)toupper((unsigned char)*p);
}

static int parse_set(struct json_object *arr, const char *field, uint64_t *ret,
		     struct cryo_error *err)
{
	uint64_t mask = 0;
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		return cryo_error_setx(err, EINVAL, "process.capabilities.%s: must be an array of strings", field);
	n = json_object_array_length(arr);
	if (n > 64)
		return cryo_error_setx(err, EINVAL, "process.capabilities.%s: %zu entries, at most 64", field, n);
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);
		const char *s;
		cap_value_t c;

		if (!json_object_is_type(v, json_type_string))
			return cryo_error_setx(err, EINVAL, "process.capabilities.%s[%zu]: must be a string", field, i);
		s = json_object_get_string(v);
		/* cap_from_name() also takes bare numbers and names without CAP_; OCI does not */
		if (strncasecmp(s, "CAP_", 4) != 0 || cap_from_name(s, &c) < 0 || c < 0 || c >= 64)
			return cryo_error_setx(err, EINVAL, "process.capabilities.%s[%zu]: unknown capability `%s`",
					       field, i, s);
		mask |= UINT64_C(1) << c;
	}
	*ret = mask;
	return 0;
}

int cryo_caps_parse(struct json_object *capabilities, struct cryo_caps_spec *out, struct cryo_error *err)
{
	struct cryo_caps_spec spec = { 0 };

	memset(out, 0, sizeof(*out));
	if (!capabilities || json_object_is_type(capabilities, json_type_null))
		return 0;
	if (!json_object_is_type(capabilities, json_type_object))
		return cryo_error_setx(err, EINVAL, "process.capabilities: must be an object");
	spec.present = true;
	for (int s = 0; s < _CRYO_CAPS_SET_MAX; s++) {
		struct json_object *arr;
		int r;

		if (!json_object_object_get_ex(capabilities, cryo_caps_set_names[s], &arr) ||
		    json_object_is_type(arr, json_type_null))
			continue;
		r = parse_set(arr, cryo_caps_set_names[s], &spec.sets[s], err);
		if (r < 0)
			return r;
	}
	*out = spec;
	return 0;
}

/*
 * Dropping from the bounding set needs CAP_SETPCAP in the effective set;
 * caps the running kernel doesn't know (cap_get_bound < 0) are skipped, so
 * a config written for a newer kernel still runs here (as runc does).
 */
static int drop_bounding(const struct cryo_caps_spec *spec, struct cryo_error *err)
{
	unsigned int max = cap_max_bits();

	for (cap_value_t c = 0; c < (cap_value_t)max && c < 64; c++) {
		char name[64];

		if (spec->sets[CRYO_CAPS_BOUNDING] & (UINT64_C(1) << c))
			continue;
		if (cap_get_bound(c) <= 0)
			continue;
		if (cap_drop_bound(c) < 0) {
			cap_name(c, name);
			return cryo_error_set(err, errno, "drop %s from the bounding set", name);
		}
	}
	return 0;
}

int cryo_caps_prepare(const struct cryo_caps_spec *spec, struct cryo_error *err)
{
	int r;

	if (!spec->present)
		return 0;
	r = drop_bounding(spec, err);
	if (r < 0)
		return cryo_error_prefix(err, "capabilities");
	/* keep the permitted set across the coming setuid() away from root */
	if (prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L) < 0)
		return cryo_error_set(err, errno, "capabilities: set PR_SET_KEEPCAPS");
	return 0;
}

int cryo_caps_check(const struct cryo_caps_spec *spec, struct cryo_error *err)
{
	static const enum cryo_caps_set granted[] = { CRYO_CAPS_EFFECTIVE, CRYO_CAPS_PERMITTED, CRYO_CAPS_INHERITABLE,
						      CRYO_CAPS_AMBIENT };
	unsigned int max = cap_max_bits();

	if (!spec->present)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(granted); i++)
		for (cap_value_t c = 0; c < (cap_value_t)max && c < 64; c++) {
			char name[64];

			if (!(spec->sets[granted[i]] & (UINT64_C(1) << c)) || cap_get_bound(c) != 0)
				continue;
			cap_name(c, name);
			return cryo_error_setx(err, EPERM,
					       "process.capabilities.%s: %s is not in the runtime's bounding set, it can't be granted",
					       cryo_caps_set_names[granted[i]], name);
		}
	return 0;
}

/* Effective := permitted, so that CAP_SETPCAP (if still permitted) is usable. */
static int raise_effective(struct cryo_error *err)
{
	cap_t cur = cap_get_proc();
	int r = 0;

	if (!cur)
		return cryo_error_set(err, errno, "read own capabilities");
	if (cap_fill(cur, CAP_EFFECTIVE, CAP_PERMITTED) < 0 || cap_set_proc(cur) < 0)
		r = cryo_error_set(err, errno, "raise the effective set to the permitted set");
	cap_free(cur);
	return r;
}

static int set_proc(const struct cryo_caps_spec *spec, struct cryo_error *err)
{
	static const struct {
		enum cryo_caps_set set;
		cap_flag_t flag;
	} map[] = {
		{ CRYO_CAPS_EFFECTIVE, CAP_EFFECTIVE },
		{ CRYO_CAPS_PERMITTED, CAP_PERMITTED },
		{ CRYO_CAPS_INHERITABLE, CAP_INHERITABLE },
	};
	unsigned int max = cap_max_bits();
	cap_t caps = cap_init();
	int r = 0;

	if (!caps)
		return cryo_error_set(err, errno, "allocate capability state");
	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		for (cap_value_t c = 0; c < (cap_value_t)max && c < 64; c++) {
			if (!(spec->sets[map[i].set] & (UINT64_C(1) << c)))
				continue;
			if (cap_set_flag(caps, map[i].flag, 1, &c, CAP_SET) < 0) {
				r = cryo_error_set(err, errno, "build the %s set", cryo_caps_set_names[map[i].set]);
				goto out;
			}
		}
	}
	if (cap_set_proc(caps) < 0)
		r = cryo_error_set(err, errno,
				   "set effective/permitted/inheritable (effective must be within permitted, "
				   "permitted within what the process still holds, inheritable within bounding)");
out:
	cap_free(caps);
	return r;
}

static int set_ambient(const struct cryo_caps_spec *spec, struct cryo_error *err)
{
	unsigned int max = cap_max_bits();

	if (cap_reset_ambient() < 0) {
		if (errno == EINVAL && !spec->sets[CRYO_CAPS_AMBIENT])
			return 0; /* kernel without ambient capabilities, none asked */
		return cryo_error_set(err, errno, "clear the ambient set");
	}
	for (cap_value_t c = 0; c < (cap_value_t)max && c < 64; c++) {
		char name[64];

		if (!(spec->sets[CRYO_CAPS_AMBIENT] & (UINT64_C(1) << c)))
			continue;
		if (cap_set_ambient(c, CAP_SET) < 0) {
			cap_name(c, name);
			if (errno == EPERM)
				return cryo_error_set(err, errno,
						      "raise ambient %s (it must be in both permitted and inheritable)",
						      name);
			return cryo_error_set(err, errno, "raise ambient %s", name);
		}
	}
	return 0;
}

int cryo_caps_apply(const struct cryo_caps_spec *spec, struct cryo_error *err)
{
	int r;

	if (!spec->present)
		return 0;
	if (prctl(PR_SET_KEEPCAPS, 0L, 0L, 0L, 0L) < 0)
		return cryo_error_set(err, errno, "capabilities: clear PR_SET_KEEPCAPS");
	r = raise_effective(err);
	if (r >= 0)
		r = drop_bounding(spec, err);
	if (r >= 0)
		r = set_proc(spec, err);
	if (r >= 0)
		r = set_ambient(spec, err);
	if (r < 0)
		return cryo_error_prefix(err, "capabilities");
	return 0;
}

void cryo_caps_spec_free(struct cryo_caps_spec *spec)
{
	if (spec)
		memset(spec, 0, sizeof(*spec));
}
