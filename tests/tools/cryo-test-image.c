// SPDX-License-Identifier: GPL-2.0-only
/*
 * Crafts checkpoint images for the restore attack tests: a manifest that
 * seals whatever files DIR holds (regular files and symlinks) and says
 * whatever the attacker wants about the container, so restore gets past
 * its digest check and the test sees what restore does with the content.
 *
 *   cryo-test-image seal DIR ID CONFIG_JSON_FILE BUNDLE [KIND NAME SOURCE FSTYPE]
 *       KIND: tar | copy (a rootfs snapshot named NAME, "from" SOURCE)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "util.h"

int main(int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	_cleanup_free_ char *config = NULL;
	_cleanup_close_ int dfd = -1;
	Cryo__Manifest *m = NULL;
	size_t len = 0;
	int r;

	if ((argc != 6 && argc != 10) || strcmp(argv[1], "seal") != 0) {
		fprintf(stderr, "usage: cryo-test-image seal DIR ID CONFIG_JSON_FILE BUNDLE [tar|copy NAME SOURCE FSTYPE]\n");
		return 2;
	}
	dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || cryo_read_file_at(AT_FDCWD, argv[4], 1 << 20, &config, &len) < 0) {
		fprintf(stderr, "cryo-test-image: %s: %s\n", dfd < 0 ? argv[2] : argv[4], strerror(errno));
		return 1;
	}
	r = cryo_manifest_new(argv[3], config, &m, &err);
	if (r >= 0)
		r = cryo_manifest_hash_dir(m, dfd, &err);
	if (r >= 0 && cryo_manifest_set_string(&m->bundle, argv[5]) < 0)
		r = cryo_error_set(&err, ENOMEM, "bundle");
	if (r >= 0 && argc == 10) {
		Cryo__RootfsSnapshot *s = calloc(1, sizeof(*s));

		if (!s) {
			r = cryo_error_set(&err, ENOMEM, "snapshot");
		} else {
			cryo__rootfs_snapshot__init(s);
			m->rootfs = s;
			s->kind = strcmp(argv[6], "tar") == 0 ? CRYO__ROOTFS_SNAPSHOT__KIND__TAR
							      : CRYO__ROOTFS_SNAPSHOT__KIND__COPY;
			if (cryo_manifest_set_string(&s->name, argv[7]) < 0 ||
			    cryo_manifest_set_string(&s->source, argv[8]) < 0 ||
			    cryo_manifest_set_string(&s->fstype, argv[9]) < 0)
				r = cryo_error_set(&err, ENOMEM, "snapshot");
		}
	}
	if (r >= 0)
		r = cryo_manifest_write_at(dfd, m, &err);
	cryo_manifest_free(m);
	if (r < 0) {
		fprintf(stderr, "cryo-test-image: %s\n", err.msg ? err.msg : "?");
		cryo_error_clear(&err);
		return 1;
	}
	return 0;
}
