/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Namespaces a container joins by path and does not own: the network
 * namespace of a Kubernetes pod (the CRI's sandbox holds it, with the
 * address CNI gave it) and, in a pod with shareProcessNamespace, its pid
 * namespace. CRIU must not dump them as the container's (it would take
 * the pod's veth along, or refuse a pid namespace whose init it does not
 * dump): they are marked external at dump, and at restore the tasks are
 * put into the namespaces the restoring bundle joins (the new sandbox's),
 * as runc does, under runc's keys so images of either name them alike.
 *
 *   joined by path    dump: CRIU external          restore: CRIU inherit-fd
 *   network           net[<inode>]:extRootNetNS    the bundle's netns, key extRootNetNS
 *   pid               pid[<inode>]:extRootPidNS    the bundle's pidns, key extRootPidNS
 *
 * Other namespaces joined by path (a pod's ipc and uts) are dumped like
 * the container's own and restored as private copies (runc does the same).
 * The paths come only from the bundle's config.json, never from an image;
 * whether a namespace was joined at dump must match at restore (restore's
 * check-bundle compares the two configs).
 */
#ifndef CRYO_EXTNS_H
#define CRYO_EXTNS_H

#include <sys/types.h>

#include "criu-env.h"
#include "error.h"
#include "spec.h"

#define CRYO_EXTNS_MAX 2

struct cryo_extns {
	struct cryo_criu_extns ns[CRYO_EXTNS_MAX + 1]; /* ended by a NULL key */
	char *external[CRYO_EXTNS_MAX];                /* dump: CRIU's "net[INO]:KEY" strings */
	size_t n;
};

/* Whether CRIU treats a namespace of type t that is joined by path as external. */
bool cryo_extns_type(enum cryo_ns_type t);

/* Whether spec joins namespace type t by path in a way CRIU must treat as external. */
bool cryo_extns_joined(const struct cryo_spec *spec, enum cryo_ns_type t);

/* Dump: the namespaces of the container whose init is pid, marked external. */
int cryo_extns_dump(const struct cryo_spec *spec, pid_t pid, struct cryo_extns *ret, struct cryo_error *err);

/*
 * Restore: the namespaces spec joins, opened (fds CRIU inherits: not
 * close-on-exec), each checked to be a namespace of its type.
 */
int cryo_extns_restore(const struct cryo_spec *spec, struct cryo_extns *ret, struct cryo_error *err);

void cryo_extns_done(struct cryo_extns *x);

#endif
