// SPDX-License-Identifier: GPL-2.0-only
/*
 * Staging and atomic commit of checkpoint image dirs: a failed checkpoint
 * leaves no image and no staging dir; a committed one is complete; an
 * older checkpoint is replaced whole; a foreign directory is never
 * replaced; staging dirs of dead cryo processes are swept.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "image.h"
#include "manifest.h"
#include "util.h"
#include "testlib.h"

struct fixture {
	char dir[64];
	char final[128];
	int dfd;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	strcpy(f->dir, "/tmp/cryo-unit-image.XXXXXX");
	f->dfd = tl_tmpdir(f->dir);
	snprintf(f->final, sizeof(f->final), "%s/ckpt", f->dir);
	unsetenv("CRYO_FAULT");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	close(f->dfd);
	assert_int_equal(tl_rm_rf(f->dir), 0);
	unsetenv("CRYO_FAULT");
	free(f);
	return 0;
}

/* Number of entries in the fixture dir (the image and any staging dirs). */
static int count_entries(struct fixture *f)
{
	char cmd[256];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", f->dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

/* Stage, put a file and a manifest in, commit. */
static void checkpoint(struct fixture *f, const char *content, int want)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_image *img = NULL;
	Cryo__Manifest *m = NULL;
	struct stat st;

	assert_int_equal(cryo_image_stage(f->final, &img, &err), 0);
	assert_int_equal(fstat(img->dirfd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_non_null(strstr(img->staging_path, "/.ckpt.staging-"));
	assert_int_equal(cryo_write_new_file_at(img->dirfd, "pages-1.img", content, strlen(content), 0600), 0);
	assert_int_equal(cryo_manifest_new("c1", "{}", &m, &err), 0);
	assert_int_equal(cryo_manifest_hash_dir(m, img->dirfd, &err), 0);
	assert_int_equal(cryo_manifest_write_at(img->dirfd, m, &err), 0);
	cryo_manifest_free(m);
	assert_int_equal(cryo_image_commit(img, &err), want);
	if (want < 0) {
		assert_non_null(err.msg);
		cryo_error_clear(&err);
	}
	cryo_image_abort(img);
}

static void assert_image_holds(struct fixture *f, const char *content)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	Cryo__Manifest *m = NULL;
	char *buf = NULL;
	int fd;

	assert_int_equal(cryo_manifest_load_verified(f->final, &m, &err), 0);
	cryo_manifest_free(m);
	fd = open(f->final, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(cryo_read_file_at(fd, "pages-1.img", 4096, &buf, NULL), 0);
	assert_string_equal(buf, content);
	free(buf);
	close(fd);
}

static void test_commit(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	checkpoint(f, "first", 0);
	assert_image_holds(f, "first");
	assert_int_equal(stat(f->final, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* nothing but the image: the staging dir is gone */
	assert_int_equal(count_entries(f), 1);
}

static void test_abort_leaves_nothing(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_image *img = NULL;

	assert_int_equal(cryo_image_stage(f->final, &img, &err), 0);
	assert_int_equal(cryo_write_new_file_at(img->dirfd, "pages-1.img", "x", 1, 0600), 0);
	assert_int_equal(count_entries(f), 1);
	cryo_image_abort(img);
	assert_int_equal(count_entries(f), 0);
	assert_int_equal(access(f->final, F_OK), -1);
}

static void test_fault_at_commit(void **state)
{
	struct fixture *f = *state;

	setenv("CRYO_FAULT", "image-commit", 1);
	checkpoint(f, "never", -EIO);
	assert_int_equal(count_entries(f), 0);
}

static void test_fault_keeps_previous(void **state)
{
	struct fixture *f = *state;

	checkpoint(f, "first", 0);
	setenv("CRYO_FAULT", "image-commit", 1);
	checkpoint(f, "second", -EIO);
	unsetenv("CRYO_FAULT");
	assert_image_holds(f, "first");
	assert_int_equal(count_entries(f), 1);
}

static void test_replace_previous(void **state)
{
	struct fixture *f = *state;

	checkpoint(f, "first", 0);
	checkpoint(f, "second", 0);
	assert_image_holds(f, "second");
	assert_int_equal(count_entries(f), 1);
}

static void test_empty_dir_target(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(mkdir(f->final, 0755), 0);
	checkpoint(f, "into-empty", 0);
	assert_image_holds(f, "into-empty");
}

static void test_foreign_dir_refused(void **state)
{
	struct fixture *f = *state;
	int fd;
	char *buf = NULL;

	assert_int_equal(mkdir(f->final, 0755), 0);
	fd = open(f->final, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(cryo_write_new_file_at(fd, "precious", "data", 4, 0644), 0);
	checkpoint(f, "x", -EEXIST);
	assert_int_equal(cryo_read_file_at(fd, "precious", 64, &buf, NULL), 0);
	assert_string_equal(buf, "data");
	free(buf);
	close(fd);
	assert_int_equal(count_entries(f), 1);
}

static void test_file_target_refused(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(cryo_write_new_file_at(f->dfd, "ckpt", "x", 1, 0600), 0);
	checkpoint(f, "x", -ENOTDIR);
	assert_int_equal(count_entries(f), 1);
}

static void test_stale_staging_swept(void **state)
{
	struct fixture *f = *state;
	char name[64], live[64];
	pid_t dead;

	dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	snprintf(name, sizeof(name), ".ckpt.staging-%d", (int)dead);
	assert_int_equal(mkdirat(f->dfd, name, 0700), 0);
	/* pid 1 is alive: its staging dir must stay */
	snprintf(live, sizeof(live), ".ckpt.staging-1");
	assert_int_equal(mkdirat(f->dfd, live, 0700), 0);
	checkpoint(f, "after-crash", 0);
	assert_int_equal(faccessat(f->dfd, name, F_OK, 0), -1);
	assert_int_equal(faccessat(f->dfd, live, F_OK, 0), 0);
	assert_int_equal(unlinkat(f->dfd, live, AT_REMOVEDIR), 0);
}

static void test_parent_created(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_image *img = NULL;
	char path[192];

	snprintf(path, sizeof(path), "%s/a/b/ckpt/", f->dir);
	assert_int_equal(cryo_image_stage(path, &img, &err), 0);
	assert_int_equal(cryo_image_commit(img, &err), 0);
	assert_int_equal(cryo_image_commit(img, &err), -EALREADY);
	cryo_error_clear(&err);
	cryo_image_abort(img);
	snprintf(path, sizeof(path), "%s/a/b/ckpt", f->dir);
	assert_int_equal(access(path, F_OK), 0);

	assert_int_equal(cryo_image_stage("/", &img, &err), -EINVAL);
	cryo_error_clear(&err);
	assert_int_equal(cryo_image_stage("", &img, &err), -EINVAL);
	cryo_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_leaves_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_at_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fault_keeps_previous, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace_previous, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_dir_target, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_dir_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_target_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_staging_swept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_created, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
