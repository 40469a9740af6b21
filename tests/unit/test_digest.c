// SPDX-License-Identifier: GPL-2.0-only
/*
 * The parallel file hash checkpoint and restore use for image files: the
 * same digests as the one-file hash, whatever the thread count, each job's
 * own error for a file that can't be hashed, and nothing read through a
 * symlink or from a non-regular file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "util.h"
#include "testlib.h"

#define NFILES 24

static char names[NFILES][32];

static int setup(void **state)
{
	int dfd;
	size_t i, j;

	(void)state;
	if (tl_group_setup_tmpdir(state) < 0)
		return -1;
	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	for (i = 0; i < NFILES; i++) {
		/* sizes from 0 to ~1.5 MiB, so scheduling by size matters */
		size_t len = (i * i * 2731) % (1536 * 1024);
		char *buf = malloc(len + 1);

		if (!buf)
			return -1;
		for (j = 0; j < len; j++)
			buf[j] = (char)(i * 31 + j * 7);
		snprintf(names[i], sizeof(names[i]), "pages-%zu.img", i);
		if (cryo_write_new_file_at(dfd, names[i], buf, len, 0600) < 0) {
			free(buf);
			return -1;
		}
		free(buf);
	}
	close(dfd);
	return 0;
}

static void hash_all(unsigned int threads, struct cryo_digest_job *jobs)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int dfd;
	size_t i;

	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	for (i = 0; i < NFILES; i++) {
		jobs[i].name = names[i];
		jobs[i].size_hint = i;
	}
	assert_int_equal(cryo_digest_files_at(dfd, jobs, NFILES, threads, &err), 0);
	close(dfd);
}

static void test_same_as_serial(void **state)
{
	struct cryo_digest_job jobs[NFILES];
	unsigned int threads[] = { 1, 2, 3, 8, 0 };
	size_t t, i;
	int dfd;

	(void)state;
	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	for (t = 0; t < ARRAY_SIZE(threads); t++) {
		memset(jobs, 0, sizeof(jobs));
		hash_all(threads[t], jobs);
		for (i = 0; i < NFILES; i++) {
			struct cryo_error err = CRYO_ERROR_INIT;
			uint8_t sha[CRYO_SHA256_LEN];
			uint64_t size = 0;
			struct stat st;

			assert_int_equal(jobs[i].r, 0);
			assert_int_equal(cryo_digest_file_at(dfd, names[i], sha, &size, &err), 0);
			assert_memory_equal(jobs[i].sha, sha, CRYO_SHA256_LEN);
			assert_int_equal(fstatat(dfd, names[i], &st, 0), 0);
			assert_int_equal(jobs[i].size, (uint64_t)st.st_size);
		}
		cryo_digest_jobs_clear(jobs, NFILES);
	}
	close(dfd);
}

static void test_errors_stay_with_their_job(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_digest_job jobs[4];
	int dfd;

	(void)state;
	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(symlinkat(names[3], dfd, "link.img"), 0);
	assert_int_equal(mkfifoat(dfd, "fifo.img", 0600), 0);
	memset(jobs, 0, sizeof(jobs));
	jobs[0].name = names[5];
	jobs[1].name = "missing.img";
	jobs[2].name = "link.img";  /* O_NOFOLLOW: never read through it */
	jobs[3].name = names[7];
	assert_int_equal(cryo_digest_files_at(dfd, jobs, 4, 2, &err), 0);
	assert_int_equal(jobs[0].r, 0);
	assert_int_equal(jobs[1].r, -ENOENT);
	assert_non_null(strstr(jobs[1].err.msg, "missing.img"));
	assert_int_equal(jobs[2].r, -ELOOP);
	assert_int_equal(jobs[3].r, 0);
	cryo_digest_jobs_clear(jobs, 4);
	assert_null(jobs[1].err.msg);

	/* a FIFO would block a plain open(O_RDONLY) forever; refused at once */
	memset(jobs, 0, sizeof(jobs));
	jobs[0].name = "fifo.img";
	alarm(10);
	assert_int_equal(cryo_digest_files_at(dfd, jobs, 1, 1, &err), 0);
	alarm(0);
	assert_int_equal(jobs[0].r, -EINVAL);
	cryo_digest_jobs_clear(jobs, 1);
	unlinkat(dfd, "link.img", 0);
	unlinkat(dfd, "fifo.img", 0);
	close(dfd);
}

static void test_no_files(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;

	(void)state;
	assert_int_equal(cryo_digest_files_at(AT_FDCWD, NULL, 0, 0, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_serial),
		cmocka_unit_test(test_errors_stay_with_their_job),
		cmocka_unit_test(test_no_files),
	};

	return cmocka_run_group_tests(tests, setup, tl_group_teardown_tmpdir);
}
