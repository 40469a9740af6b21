// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "extns.h"
#include "util.h"

/* CRIU's name of the namespace (its external key prefix), runc's key, /proc/PID/ns/ name */
static const struct {
	enum cryo_ns_type type;
	const char *criu, *key, *proc;
} extns_table[CRYO_EXTNS_MAX] = {
	{ CRYO_NS_NET, "net", "extRootNetNS", "net" },
	{ CRYO_NS_PID, "pid", "extRootPidNS", "pid" },
};

bool cryo_extns_type(enum cryo_ns_type t)
{
	size_t i;

	for (i = 0; i < CRYO_EXTNS_MAX; i++)
		if (extns_table[i].type == t)
			return true;
	return false;
}

bool cryo_extns_joined(const struct cryo_spec *spec, enum cryo_ns_type t)
{
	return cryo_extns_type(t) && spec->namespaces[t].enabled && spec->namespaces[t].path != NULL;
}

int cryo_extns_dump(const struct cryo_spec *spec, pid_t pid, struct cryo_extns *ret, struct cryo_error *err)
{
	struct cryo_extns x = { 0 };
	size_t i;

	for (i = 0; i < CRYO_EXTNS_MAX; i++) {
		char path[64];
		struct stat st;

		if (!cryo_extns_joined(spec, extns_table[i].type))
			continue;
		/* the namespace the init is in now: the one it joined */
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, extns_table[i].proc);
		if (stat(path, &st) < 0) {
			int e = errno;

			cryo_extns_done(&x);
			return cryo_error_set(err, e, "external %s namespace: stat `%s`", extns_table[i].criu, path);
		}
		if (asprintf(&x.external[x.n], "%s[%llu]:%s", extns_table[i].criu, (unsigned long long)st.st_ino,
			     extns_table[i].key) < 0) {
			x.external[x.n] = NULL;
			cryo_extns_done(&x);
			return cryo_error_set(err, ENOMEM, "external namespaces");
		}
		x.ns[x.n].key = extns_table[i].key;
		x.ns[x.n].external = x.external[x.n];
		x.ns[x.n].fd = -1;
		x.n++;
	}
	*ret = x;
	return 0;
}

int cryo_extns_restore(const struct cryo_spec *spec, struct cryo_extns *ret, struct cryo_error *err)
{
	struct cryo_extns x = { 0 };
	size_t i;

	for (i = 0; i < CRYO_EXTNS_MAX; i++) {
		const char *path = spec->namespaces[extns_table[i].type].path;
		int fd, type;

		if (!cryo_extns_joined(spec, extns_table[i].type))
			continue;
		/* CRIU inherits it: no O_CLOEXEC (closed by cryo_extns_done() once CRIU ran) */
		fd = open(path, O_RDONLY | O_NOCTTY); // NOLINT(android-cloexec-open)
		if (fd < 0) {
			int e = errno;

			cryo_extns_done(&x);
			return cryo_error_set(err, e, "config.json: the %s namespace to join `%s`", extns_table[i].criu, path);
		}
		type = ioctl(fd, NS_GET_NSTYPE);
		if (type != cryo_ns_type_flags[extns_table[i].type]) {
			close(fd);
			cryo_extns_done(&x);
			return cryo_error_setx(err, EINVAL, "config.json: `%s` is not a %s namespace", path,
					       extns_table[i].criu);
		}
		x.ns[x.n].key = extns_table[i].key;
		x.ns[x.n].fd = fd;
		x.n++;
	}
	*ret = x;
	return 0;
}

void cryo_extns_done(struct cryo_extns *x)
{
	size_t i;

	for (i = 0; i < x->n; i++) {
		if (x->ns[i].fd >= 0)
			close(x->ns[i].fd);
		free(x->external[i]);
	}
	memset(x, 0, sizeof(*x));
}
