/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * process.capabilities of config.json: the five capability sets, parsed
 * into bit masks (bit N = capability number N, as in /proc/PID/status) and
 * applied in the container init with libcap.
 *
 * Order in the container init (same split as runc, for the same reason:
 * a setuid() away from uid 0 clears the permitted set unless KEEPCAPS is
 * on, and dropping the bounding set needs CAP_SETPCAP):
 *
 *	cryo_caps_prepare(spec)     drop the bounding set, PR_SET_KEEPCAPS=1
 *	setgroups/setresgid/setresuid
 *	cryo_caps_apply(spec)       KEEPCAPS=0, permitted/effective/inheritable,
 *	                            then ambient
 *	(seccomp if noNewPrivileges), execve
 *
 * cryo_caps_apply() alone is enough when the process stays uid 0.
 */
#ifndef CRYO_CAPS_H
#define CRYO_CAPS_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "error.h"

enum cryo_caps_set {
	CRYO_CAPS_BOUNDING,
	CRYO_CAPS_EFFECTIVE,
	CRYO_CAPS_PERMITTED,
	CRYO_CAPS_INHERITABLE,
	CRYO_CAPS_AMBIENT,
	_CRYO_CAPS_SET_MAX,
};

/* "bounding", "effective", ... : the config.json field names */
extern const char *const cryo_caps_set_names[_CRYO_CAPS_SET_MAX];

struct cryo_caps_spec {
	/* false: process.capabilities absent, apply leaves capabilities as they are */
	bool present;
	/* indexed by enum cryo_caps_set; an absent list is the empty set */
	uint64_t sets[_CRYO_CAPS_SET_MAX];
};

/*
 * Parse process.capabilities (may be NULL: absent). Names are "CAP_XXX"
 * (case-insensitive, resolved by libcap's cap_from_name); an unknown name,
 * a non-string entry or more than 64 entries per set is -EINVAL with an
 * error naming the field and the value. *out is zeroed first.
 */
int cryo_caps_parse(struct json_object *capabilities, struct cryo_caps_spec *out,
		    struct cryo_error *err);

/*
 * Container init, before it reports ready: -EPERM naming the set and the
 * capability when one that the effective, permitted, inheritable or
 * ambient set asks for is missing from the init's own bounding set (so
 * it could never be granted). Checked at create, where the caller still
 * sees the error, instead of failing silently after start. Capabilities
 * the kernel doesn't know are left to the apply step, which skips them.
 */
int cryo_caps_check(const struct cryo_caps_spec *spec, struct cryo_error *err);

/* Container init, still uid 0, before setuid/setgid. No-op when !present. */
int cryo_caps_prepare(const struct cryo_caps_spec *spec, struct cryo_error *err);

/* Container init, after setuid/setgid, just before exec. No-op when !present. */
int cryo_caps_apply(const struct cryo_caps_spec *spec, struct cryo_error *err);

/* Nothing is allocated today; kept so callers never depend on that. */
void cryo_caps_spec_free(struct cryo_caps_spec *spec);

#endif
