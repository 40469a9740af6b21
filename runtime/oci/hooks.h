/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * OCI hooks (config.json "hooks"): each hook is forked and exec'd with the
 * container's state JSON on stdin, its own argv/env, and a timeout after
 * which it is SIGKILLed. Its stdout+stderr are captured (bounded) and put
 * into the error when it fails.
 *
 * Who calls cryo_hooks_run() for which kind (runtime-spec "Lifecycle"):
 *  - PRESTART, CREATE_RUNTIME: runtime parent, in the runtime namespaces,
 *    after the container's namespaces exist, before pivot_root;
 *  - CREATE_CONTAINER: container init, in the container namespaces, after
 *    the mounts and before pivot_root;
 *  - START_CONTAINER: container init at `start`, after pivot_root, before
 *    the user process is exec'd (path resolved in the container), in that
 *    process's final context: rlimits, seccomp filter, capabilities, user,
 *    no_new_privs (cryo_process_setup), as runc and crun run it;
 *  - POSTSTART: runtime parent after the user process started (failure is
 *    a warning for the caller, the container keeps running);
 *  - POSTSTOP: runtime parent on delete, after the container is gone.
 */
#ifndef CRYO_HOOKS_H
#define CRYO_HOOKS_H

#include <stddef.h>

#include <json-c/json.h>

#include "error.h"

enum cryo_hook_kind {
	CRYO_HOOK_PRESTART,
	CRYO_HOOK_CREATE_RUNTIME,
	CRYO_HOOK_CREATE_CONTAINER,
	CRYO_HOOK_START_CONTAINER,
	CRYO_HOOK_POSTSTART,
	CRYO_HOOK_POSTSTOP,
	_CRYO_HOOK_KIND_MAX,
};

/* "prestart", "createRuntime", ...: the config.json field names */
extern const char *const cryo_hook_kind_names[_CRYO_HOOK_KIND_MAX];

#define CRYO_HOOKS_MAX_PER_KIND 64
#define CRYO_HOOKS_MAX_ARGS 1024
#define CRYO_HOOKS_OUTPUT_MAX 4096  /* bytes of hook output kept in an error */

struct cryo_hook {
	char *path;          /* absolute */
	char **args;         /* NULL-terminated; args[0] is argv[0]; path when absent */
	char **env;          /* NULL-terminated, or NULL: inherit the caller's environ */
	int timeout_s;       /* > 0, or 0: no timeout */
};

struct cryo_hooks_spec {
	struct cryo_hook *hooks[_CRYO_HOOK_KIND_MAX];
	size_t n[_CRYO_HOOK_KIND_MAX];
};

/* Parse "hooks" (may be NULL). *out is zeroed first. */
int cryo_hooks_parse(struct json_object *hooks, struct cryo_hooks_spec *out,
		     struct cryo_error *err);

/*
 * Run the hooks of one kind in order, stopping at the first failure:
 * "hook prestart[1] `/bin/x` exited with status 3: <output>",
 * "... timed out after 5 s", "... killed by signal 9". 0 when there are none.
 */
int cryo_hooks_run(const struct cryo_hooks_spec *spec, enum cryo_hook_kind kind,
		   const char *state_json, struct cryo_error *err);

/*
 * Run hook number i of one kind (same errors as cryo_hooks_run). For
 * poststart and poststop, whose failures are warnings and never stop the
 * hooks after them (runtime-spec "Lifecycle").
 */
int cryo_hooks_run_one(const struct cryo_hooks_spec *spec, enum cryo_hook_kind kind, size_t i,
		       const char *state_json, struct cryo_error *err);

void cryo_hooks_spec_free(struct cryo_hooks_spec *spec);

#endif
