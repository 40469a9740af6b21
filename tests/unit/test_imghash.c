// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hashing image files while they are written: what the thread hashed is
 * exactly what is on disk when finish returns, whatever was rewritten
 * after (same size, new bytes), and files it never saw are left to the
 * caller rather than guessed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "imghash.h"
#include "util.h"
#include "testlib.h"

static void put(int dfd, const char *name, size_t len, int seed)
{
	_cleanup_free_ char *buf = malloc(len + 1);
	size_t i;

	assert_non_null(buf);
	for (i = 0; i < len; i++)
		buf[i] = (char)(seed + (int)i * 13);
	(void)unlinkat(dfd, name, 0);
	assert_int_equal(cryo_write_new_file_at(dfd, name, buf, len, 0600), 0);
}

/* Overwrite in place, same size: only a close-write event can tell. */
static void rewrite(int dfd, const char *name, size_t len, int seed)
{
	_cleanup_free_ char *buf = malloc(len + 1);
	int fd;
	size_t i;

	assert_non_null(buf);
	for (i = 0; i < len; i++)
		buf[i] = (char)(seed + (int)i * 29);
	fd = openat(dfd, name, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	close(fd);
}

static void expect_true_digest(struct cryo_imghash *h, int dfd, const char *name)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	uint8_t want[CRYO_SHA256_LEN], got[CRYO_SHA256_LEN];
	uint64_t wsize = 0, gsize = 0;

	assert_int_equal(cryo_digest_file_at(dfd, name, want, &wsize, &err), 0);
	if (cryo_imghash_lookup(h, dfd, name, got, &gsize)) {
		assert_memory_equal(got, want, CRYO_SHA256_LEN);
		assert_int_equal(gsize, wsize);
	}
}

static void test_hashes_what_is_written(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_imghash *h = NULL;
	uint8_t sha[CRYO_SHA256_LEN];
	uint64_t size = 0, bytes = 0;
	unsigned int files = 0, round;
	char name[32];
	int dfd;

	(void)state;
	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	put(dfd, "before.img", 4096, 1);
	assert_int_equal(cryo_imghash_start(dfd, CRYO_IMGHASH_WRITEBACK, &h, &err), 0);
	for (round = 0; round < 20; round++) {
		snprintf(name, sizeof(name), "pages-%u.img", round);
		put(dfd, name, 65536 + round * 4096, (int)round);
	}
	/* rewritten in place, same size, new content: the old digest must not stand */
	for (round = 0; round < 20; round += 3) {
		snprintf(name, sizeof(name), "pages-%u.img", round);
		rewrite(dfd, name, 65536 + round * 4096, 100 + (int)round);
	}
	assert_int_equal(cryo_imghash_finish(h, &err), 0);
	expect_true_digest(h, dfd, "before.img");
	for (round = 0; round < 20; round++) {
		snprintf(name, sizeof(name), "pages-%u.img", round);
		expect_true_digest(h, dfd, name);
	}
	/* after finish every file was seen and closed: all of them are there */
	for (round = 0; round < 20; round++) {
		snprintf(name, sizeof(name), "pages-%u.img", round);
		assert_true(cryo_imghash_lookup(h, dfd, name, sha, &size));
	}
	cryo_imghash_stats(h, &bytes, &files);
	assert_true(files >= 21);
	/* a file that appears after finish is unknown: the caller hashes it */
	put(dfd, "late.img", 100, 7);
	assert_false(cryo_imghash_lookup(h, dfd, "late.img", sha, &size));
	/* a file changed behind its back after finish (no event read any more) */
	put(dfd, "pages-1.img", 10, 9);
	assert_false(cryo_imghash_lookup(h, dfd, "pages-1.img", sha, &size));
	cryo_imghash_free(h);
	close(dfd);
}

static void test_free_while_running(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_imghash *h = NULL;
	uint8_t sha[CRYO_SHA256_LEN];
	uint64_t size;
	int dfd;

	(void)state;
	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(cryo_imghash_start(dfd, CRYO_IMGHASH_WRITEBACK, &h, &err), 0);
	put(dfd, "x.img", 1000, 3);
	/* no finish: nothing may be trusted, and free stops the thread */
	assert_false(cryo_imghash_lookup(h, dfd, "x.img", sha, &size));
	cryo_imghash_free(h);
	assert_false(cryo_imghash_lookup(NULL, dfd, "x.img", sha, &size));
	close(dfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hashes_what_is_written),
		cmocka_unit_test(test_free_while_running),
	};

	return cmocka_run_group_tests(tests, tl_group_setup_tmpdir, tl_group_teardown_tmpdir);
}
