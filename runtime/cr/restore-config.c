// SPDX-License-Identifier: GPL-2.0-only
/*
 * restore's check-bundle step: the image's config.json against the
 * bundle's (restore-config.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "extns.h"
#include "log.h"
#include "restore-config.h"
#include "util.h"

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/*
 * The image's config.json is only compared with the bundle's: a container
 * restored with different namespaces, mounts or a rootfs of another kind
 * would not be the one that was dumped (CRIU fails late or, worse,
 * restores it half-right), so those are refused; other differences (the
 * root path, args, env, hostname) are the new bundle's business and only
 * warned about.
 */
int cryo_restore_compare_config(const char *id, const struct cryo_spec *cur, const struct cryo_spec *img,
				struct cryo_error *err)
{
	_cleanup_free_ bool *used = NULL;
	size_t i;

	for (i = 0; i < _CRYO_NS_MAX; i++) {
		if (img->namespaces[i].enabled != cur->namespaces[i].enabled)
			return cryo_error_setx(err, EINVAL,
					       "the bundle's config.json %s a %s namespace, the image's %s: refusing a different container",
					       cur->namespaces[i].enabled ? "has" : "has no", cryo_ns_type_names[i],
					       img->namespaces[i].enabled ? "has one" : "does not");
		/*
		 * A namespace CRIU keeps external (a pod's network) goes to the
		 * new bundle's: joined at dump, joined at restore, or CRIU would
		 * restore the pod's network into a namespace of its own (or
		 * want one it was not given)
		 */
		if (cryo_extns_type((enum cryo_ns_type)i)) {
			if (!img->namespaces[i].path != !cur->namespaces[i].path)
				return cryo_error_setx(err, EINVAL,
						       "the bundle's config.json %s the %s namespace by path, the image's %s: refusing a different container",
						       cur->namespaces[i].path ? "joins" : "does not join", cryo_ns_type_names[i],
						       img->namespaces[i].path ? "did" : "did not");
			continue;
		}
		if (!str_eq(img->namespaces[i].path, cur->namespaces[i].path))
			cryo_warn("restore `%s`: the %s namespace to join differs from the image's config.json", id,
				  cryo_ns_type_names[i]);
	}
	if (img->n_mounts != cur->n_mounts)
		return cryo_error_setx(err, EINVAL,
				       "the bundle's config.json has %zu mounts, the image's %zu: refusing a different container",
				       cur->n_mounts, img->n_mounts);
	/*
	 * The same mounts by destination, in any order: a client that writes
	 * a new bundle (podman restore --import) may list them differently.
	 */
	used = calloc(img->n_mounts + 1, sizeof(*used));
	if (!used)
		return cryo_error_set(err, ENOMEM, "restore");
	for (i = 0; i < cur->n_mounts; i++) {
		size_t j;

		for (j = 0; j < img->n_mounts; j++)
			if (!used[j] && str_eq(img->mounts[j].destination, cur->mounts[i].destination) &&
			    img->mounts[j].bind == cur->mounts[i].bind)
				break;
		if (j == img->n_mounts)
			return cryo_error_setx(err, EINVAL,
					       "the bundle's config.json mounts `%s`%s, the image's does not: refusing a different container",
					       cur->mounts[i].destination, cur->mounts[i].bind ? " (bind)" : "");
		used[j] = true;
	}
	/*
	 * A terminal is restored as a new pty for the one the image has (its
	 * master was outside the container): the image and the bundle agree
	 * on having one, or CRIU would be left to find a terminal of its own.
	 */
	if (img->terminal != cur->terminal)
		return cryo_error_setx(err, EINVAL,
				       "process.terminal is %s in the bundle's config.json, %s in the image's: a container with a terminal is restored with one (and --console-socket), one without without",
				       cur->terminal ? "true" : "false", img->terminal ? "true" : "false");
	if (img->root_readonly != cur->root_readonly)
		return cryo_error_setx(err, EINVAL, "root.readonly is %s in the bundle's config.json, %s in the image's",
				       cur->root_readonly ? "true" : "false", img->root_readonly ? "true" : "false");
	if (!str_eq(img->root_path, cur->root_path))
		cryo_warn("restore `%s`: root.path is `%s` in the bundle, `%.200s` in the image: the bundle's is used",
			  id, cur->root_path, img->root_path);
	if (img->n_args != cur->n_args || !str_eq(img->hostname, cur->hostname) || !str_eq(img->cwd, cur->cwd))
		cryo_warn("restore `%s`: the bundle's process or hostname differs from the image's config.json", id);
	return 0;
}
