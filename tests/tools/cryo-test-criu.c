// SPDX-License-Identifier: GPL-2.0-only
/*
 * Drives libcryo's criu, manifest and image modules directly on a plain
 * process tree (no container), for the VM tests:
 *
 *   cryo-test-criu dump PID IMAGE_DIR [--leave-running]
 *       stage IMAGE_DIR, CRIU dump into the staging dir (log in IMAGE_DIR.work),
 *       manifest, commit
 *   cryo-test-criu restore IMAGE_DIR WORK_DIR
 *       verify the manifest and digests, CRIU restore, print the pid
 *   cryo-test-criu verify IMAGE_DIR
 *   cryo-test-criu set-version IMAGE_DIR N   (rewrite the manifest's format version)
 *   cryo-test-criu seal DIR ID [BUNDLE]      (write a manifest for the files in DIR)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "criu.h"
#include "image.h"
#include "manifest.h"
#include "util.h"

static int die(struct cryo_error *err)
{
	fprintf(stderr, "cryo-test-criu: %s\n", err->msg ? err->msg : "?");
	cryo_error_clear(err);
	return 1;
}

int main(int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	Cryo__Manifest *m = NULL;
	int r;

	if (argc >= 4 && strcmp(argv[1], "dump") == 0) {
		struct cryo_criu_opts o = { 0 };
		struct cryo_image *img = NULL;
		_cleanup_free_ char *work = NULL;
		uint64_t pid;

		if (cryo_parse_u64(argv[2], INT32_MAX, &pid) < 0)
			return 2;
		o.pid = (pid_t)pid;
		o.leave_running = argc > 4 && strcmp(argv[4], "--leave-running") == 0;
		/* CRIU's log outside the staging dir, so it outlives a failed dump */
		if (asprintf(&work, "%s.work", argv[3]) < 0 || cryo_mkdir_p(work, 0700) < 0)
			return 1;
		o.work_dir = work;
		r = cryo_image_stage(argv[3], &img, &err);
		if (r < 0)
			return die(&err);
		o.image_dir = img->staging_path;
		r = cryo_criu_dump(&o, &err);
		if (r >= 0)
			r = cryo_manifest_new("tree", "{}", &m, &err);
		if (r >= 0)
			r = cryo_manifest_hash_dir(m, img->dirfd, &err);
		if (r >= 0)
			r = cryo_manifest_write_at(img->dirfd, m, &err);
		if (r >= 0)
			r = cryo_image_commit(img, &err);
		cryo_manifest_free(m);
		cryo_image_abort(img);
		return r < 0 ? die(&err) : 0;
	}
	if (argc >= 4 && strcmp(argv[1], "restore") == 0) {
		struct cryo_criu_opts o = { .image_dir = argv[2], .work_dir = argv[3] };
		pid_t pid = 0;

		r = cryo_manifest_load_verified(argv[2], &m, &err);
		cryo_manifest_free(m);
		if (r < 0)
			return die(&err);
		r = cryo_criu_restore(&o, &pid, &err);
		if (r < 0)
			return die(&err);
		printf("%d\n", (int)pid);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "verify") == 0) {
		r = cryo_manifest_load_verified(argv[2], &m, &err);
		cryo_manifest_free(m);
		return r < 0 ? die(&err) : 0;
	}
	if (argc >= 4 && strcmp(argv[1], "seal") == 0) {
		_cleanup_close_ int dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd < 0)
			return 1;
		r = cryo_manifest_new(argv[3], "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}}", &m, &err);
		if (r >= 0)
			r = cryo_manifest_hash_dir(m, dfd, &err);
		if (r >= 0)
			r = cryo_manifest_set_string(&m->bundle, argc > 4 ? argv[4] : "/nonexistent");
		if (r >= 0)
			r = cryo_manifest_write_at(dfd, m, &err);
		cryo_manifest_free(m);
		return r < 0 ? die(&err) : 0;
	}
	if (argc >= 4 && strcmp(argv[1], "set-version") == 0) {
		_cleanup_close_ int dfd = open(argv[2], O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd < 0 || cryo_manifest_read_at(dfd, &m, &err) < 0)
			return die(&err);
		m->format_version = (uint32_t)strtoul(argv[3], NULL, 10);
		r = cryo_manifest_write_at(dfd, m, &err);
		cryo_manifest_free(m);
		return r < 0 ? die(&err) : 0;
	}
	fprintf(stderr, "usage: cryo-test-criu dump PID DIR [--leave-running] | restore DIR WORKDIR | verify DIR\n");
	return 2;
}
