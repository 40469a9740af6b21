// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "extmounts.h"
#include "spec.h"
#include "state.h"
#include "util.h"

/* The name masked files are dumped under: the device bound over them. */
#define MASKED_FILE_NAME "/dev/null"

struct pairs {
	char **v;
	size_t n, max;
};

static int add(struct pairs *p, const char *k, char *v_owned)
{
	char *k2 = strdup(k);

	if (!k2 || !v_owned || p->n + 2 >= p->max) {
		free(k2);
		free(v_owned);
		return -ENOMEM;
	}
	p->v[p->n++] = k2;
	p->v[p->n++] = v_owned;
	return 0;
}

static int pairs_new(struct pairs *p, size_t n_pairs)
{
	p->max = 2 * n_pairs + 1;
	p->n = 0;
	p->v = calloc(p->max, sizeof(char *));
	return p->v ? 0 : -ENOMEM;
}

int cryo_extmounts_dump(const struct cryo_spec *spec, pid_t pid, char ***ret, struct cryo_error *err)
{
	struct pairs p;
	size_t i;
	int r = 0;

	if (pairs_new(&p, spec->n_mounts + spec->n_masked_paths + ARRAY_SIZE(cryo_mount_devices)) < 0)
		return cryo_error_set(err, ENOMEM, "external mounts");
	for (i = 0; r == 0 && i < spec->n_mounts; i++)
		if (spec->mounts[i].bind)
			r = add(&p, spec->mounts[i].destination, strdup(spec->mounts[i].destination));
	for (i = 0; r == 0 && i < ARRAY_SIZE(cryo_mount_devices); i++)
		r = add(&p, cryo_mount_devices[i], strdup(cryo_mount_devices[i]));
	/* which masked paths are files (a missing path is not mounted) is seen through the container's root */
	for (i = 0; r == 0 && i < spec->n_masked_paths; i++) {
		_cleanup_free_ char *path = NULL;
		struct stat st;

		if (asprintf(&path, "/proc/%d/root%s", (int)pid, spec->masked_paths[i]) < 0) {
			r = -ENOMEM;
			break;
		}
		if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode))
			r = add(&p, spec->masked_paths[i], strdup(MASKED_FILE_NAME));
	}
	if (r < 0) {
		cryo_strv_free(p.v);
		return cryo_error_set(err, -r, "external mounts");
	}
	*ret = p.v;
	return 0;
}

int cryo_extmounts_restore(const struct cryo_spec *spec, const char *bundle, char ***ret, struct cryo_error *err)
{
	struct pairs p;
	size_t i;
	int r = 0;

	if (pairs_new(&p, spec->n_mounts + ARRAY_SIZE(cryo_mount_devices)) < 0)
		return cryo_error_set(err, ENOMEM, "external mounts");
	/* host devices, the /dev/null one also for the masked files */
	for (i = 0; r == 0 && i < ARRAY_SIZE(cryo_mount_devices); i++)
		r = add(&p, cryo_mount_devices[i], strdup(cryo_mount_devices[i]));
	for (i = 0; r == 0 && i < spec->n_mounts; i++) {
		const struct cryo_spec_mount *m = &spec->mounts[i];
		char *src = NULL;

		if (!m->bind)
			continue;
		if (!m->source) {
			cryo_strv_free(p.v);
			return cryo_error_setx(err, EINVAL, "bind mount `%s` has no source", m->destination);
		}
		if (m->source[0] == '/')
			src = strdup(m->source);
		else if (asprintf(&src, "%s/%s", bundle, m->source) < 0)
			src = NULL;
		r = add(&p, m->destination, src);
	}
	if (r < 0) {
		cryo_strv_free(p.v);
		return cryo_error_set(err, -r, "external mounts");
	}
	*ret = p.v;
	return 0;
}
