/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * linux.seccomp of config.json, validated at parse time (actions, ops,
 * architectures, flags, syscall names resolved by libseccomp) and turned
 * into a BPF filter with libseccomp when applied.
 *
 * Where to load it (the kernel refuses a filter from a process that has
 * neither NO_NEW_PRIVS nor CAP_SYS_ADMIN):
 *  - process.noNewPrivileges true: the runtime sets PR_SET_NO_NEW_PRIVS,
 *    then calls cryo_seccomp_apply() as the very last step before execve
 *    (after setuid and cryo_caps_apply), so the filter only has to allow
 *    execve itself;
 *  - noNewPrivileges false: call it while CAP_SYS_ADMIN is still held, i.e.
 *    before cryo_caps_prepare()/setuid; the filter then also sees the
 *    runtime's own remaining syscalls (setresuid, capset, prctl, execve).
 * cryo_seccomp_apply() never sets NO_NEW_PRIVS by itself.
 *
 * SCMP_ACT_NOTIFY (runtime-spec "listenerPath"): the runtime connects to
 * linux.seccomp.listenerPath in its own namespace before the process
 * exists (cryo_seccomp_listener_connect(), so a wrong path fails create
 * and leaves nothing), hands the connection to the process, and
 * cryo_seccomp_apply() there sends the "container process state" JSON
 * with the filter's notify fd (SCM_RIGHTS) right after the load, closes
 * its copy of the fd (the kernel made it O_CLOEXEC too) and the caller
 * closes the connection. As with runc, SCMP_ACT_NOTIFY can't be the
 * default action, nor the action of `sendmsg` or `write`: those would
 * make the process wait for a listener that doesn't have the fd yet, or
 * a failed exec's report wait for the listener.
 *
 * With a deny default, syscalls newer than the profile get -ENOSYS
 * (seccomp-load.c), as with runc.
 */
#ifndef CRYO_SECCOMP_H
#define CRYO_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "error.h"

#define CRYO_SECCOMP_MAX_SYSCALLS 4096 /* rules and names, each */
#define CRYO_SECCOMP_MAX_ARCHES 16
#define CRYO_SECCOMP_MAX_ARGS 6
#define CRYO_SECCOMP_METADATA_MAX 4096 /* bytes of listenerMetadata */

struct cryo_seccomp_arg {
	unsigned int index;  /* 0..5 */
	uint64_t value;
	uint64_t value_two;
	int op;              /* enum scmp_compare */
};

struct cryo_seccomp_rule {
	char **names;        /* NULL-terminated */
	int *nrs;            /* syscall numbers resolved for the native arch, n_names */
	size_t n_names;
	uint32_t action;     /* libseccomp SCMP_ACT_* value with errno/trace data */
	struct cryo_seccomp_arg args[CRYO_SECCOMP_MAX_ARGS];
	size_t n_args;
};

struct cryo_seccomp_spec {
	bool present;        /* false: no linux.seccomp, apply is a no-op */
	uint32_t default_action;
	uint32_t arches[CRYO_SECCOMP_MAX_ARCHES]; /* SCMP_ARCH_* tokens */
	size_t n_arches;
	bool flag_tsync, flag_log, flag_spec_allow;
	struct cryo_seccomp_rule *rules;
	size_t n_rules;
	bool uses_notify;          /* some rule is SCMP_ACT_NOTIFY */
	char *listener_path;       /* linux.seccomp.listenerPath, or NULL */
	char *listener_metadata;   /* linux.seccomp.listenerMetadata, or NULL */
};

/* Where the notify fd goes (SCMP_ACT_NOTIFY). */
struct cryo_seccomp_listener {
	int fd;                    /* connected to listenerPath, -1: none */
	const char *state;         /* the container's OCI state JSON, the "state" member */
	pid_t pid;                 /* the process as the runtime sees it; <= 0: the state's pid */
};

/*
 * Parse linux.seccomp (may be NULL: absent). Every invalid value is
 * -EINVAL with an error naming the field and the value, e.g.
 * "linux.seccomp.syscalls[3].action: unknown action `SCMP_ACT_FOO`".
 * SCMP_ACT_NOTIFY needs listenerPath.
 */
int cryo_seccomp_parse(struct json_object *seccomp, struct cryo_seccomp_spec *out,
		       struct cryo_error *err);

/*
 * With SCMP_ACT_NOTIFY in the profile, *ret_fd is a connection to
 * listenerPath (an error names the path: missing, not a socket, refused);
 * else -1.
 */
int cryo_seccomp_listener_connect(const struct cryo_seccomp_spec *spec, int *ret_fd, struct cryo_error *err);

/*
 * Build and load the filter into the calling thread (see above for when);
 * with SCMP_ACT_NOTIFY, send the notify fd over l (must be given then).
 */
int cryo_seccomp_apply(const struct cryo_seccomp_spec *spec, const struct cryo_seccomp_listener *l,
		       struct cryo_error *err);

void cryo_seccomp_spec_free(struct cryo_seccomp_spec *spec);

#endif
