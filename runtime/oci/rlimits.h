/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * process.rlimits of config.json: [{"type": "RLIMIT_NOFILE", "hard": N,
 * "soft": N}, ...], applied with prlimit(). Raising a hard limit needs
 * CAP_SYS_RESOURCE, so apply before capabilities are dropped: in the
 * container init before cryo_caps_prepare() (pid 0), or from the runtime
 * parent on the init's pid.
 */
#ifndef CRYO_RLIMITS_H
#define CRYO_RLIMITS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "error.h"

struct cryo_rlimit {
	int resource;   /* RLIMIT_* */
	uint64_t soft;
	uint64_t hard;
};

struct cryo_rlimits_spec {
	struct cryo_rlimit *items;
	size_t n;
};

/*
 * Parse process.rlimits (may be NULL). Unknown type, duplicate type,
 * missing/negative soft or hard, soft > hard: -EINVAL naming the entry.
 */
int cryo_rlimits_parse(struct json_object *rlimits, struct cryo_rlimits_spec *out,
		       struct cryo_error *err);

/* prlimit(pid, ...) for each entry; pid 0 is the calling process. */
int cryo_rlimits_apply(const struct cryo_rlimits_spec *spec, pid_t pid, struct cryo_error *err);

void cryo_rlimits_spec_free(struct cryo_rlimits_spec *spec);

#endif
