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
	uint8_t want[CRYO_DIGEST_LEN], got[CRYO_DIGEST_LEN];
	uint64_t wsize = 0, gsize = 0;

	assert_int_equal(cryo_digest_file_at(dfd, name, CRYO_DIGEST_BLAKE3, want, &wsize, &err), 0);
	if (cryo_imghash_lookup(h, dfd, name, CRYO_DIGEST_BLAKE3, got, &gsize)) {
		assert_memory_equal(got, want, CRYO_DIGEST_LEN);
		assert_int_equal(gsize, wsize);
	}
}

static void test_hashes_what_is_written(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_imghash *h = NULL;
	uint8_t sha[CRYO_DIGEST_LEN];
	uint64_t size = 0, bytes = 0;
	unsigned int files = 0, round;
	char name[32];
	int dfd;

	(void)state;
	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	put(dfd, "before.img", 4096, 1);
	assert_int_equal(cryo_imghash_start(dfd, CRYO_DIGEST_BLAKE3, CRYO_IMGHASH_WRITEBACK, &h, &err), 0);
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
		assert_true(cryo_imghash_lookup(h, dfd, name, CRYO_DIGEST_BLAKE3, sha, &size));
		/* hashed with BLAKE3: no digest for a manifest of SHA-256 */
		assert_false(cryo_imghash_lookup(h, dfd, name, CRYO_DIGEST_SHA256, sha, &size));
	}
	cryo_imghash_stats(h, &bytes, &files);
	assert_true(files >= 21);
	/* a file that appears after finish is unknown: the caller hashes it */
	put(dfd, "late.img", 100, 7);
	assert_false(cryo_imghash_lookup(h, dfd, "late.img", CRYO_DIGEST_BLAKE3, sha, &size));
	/* a file changed behind its back after finish (no event read any more) */
	put(dfd, "pages-1.img", 10, 9);
	assert_false(cryo_imghash_lookup(h, dfd, "pages-1.img", CRYO_DIGEST_BLAKE3, sha, &size));
	cryo_imghash_free(h);
	close(dfd);
}

static void test_free_while_running(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_imghash *h = NULL;
	uint8_t sha[CRYO_DIGEST_LEN];
	uint64_t size;
	int dfd;

	(void)state;
	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(cryo_imghash_start(dfd, CRYO_DIGEST_BLAKE3, CRYO_IMGHASH_WRITEBACK, &h, &err), 0);
	put(dfd, "x.img", 1000, 3);
	/* no finish: nothing may be trusted, and free stops the thread */
	assert_false(cryo_imghash_lookup(h, dfd, "x.img", CRYO_DIGEST_BLAKE3, sha, &size));
	cryo_imghash_free(h);
	assert_false(cryo_imghash_lookup(NULL, dfd, "x.img", CRYO_DIGEST_BLAKE3, sha, &size));
	close(dfd);
}

/* Append len bytes of a pattern (seeded by the offset) through fd. */
static void append(int fd, size_t len)
{
	_cleanup_free_ char *buf = malloc(len);
	off_t at = lseek(fd, 0, SEEK_CUR);
	size_t i;

	assert_non_null(buf);
	assert_true(at >= 0);
	for (i = 0; i < len; i++)
		buf[i] = (char)((size_t)at + i * 7 + (i >> 12));
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
}

/* Wait (5 s at most) until the thread has hashed at least want bytes. */
static uint64_t wait_hashed(struct cryo_imghash *h, uint64_t want)
{
	uint64_t bytes = 0;
	unsigned int files, i;

	for (i = 0; i < 500; i++) {
		cryo_imghash_stats(h, &bytes, &files);
		if (bytes >= want)
			break;
		usleep(10000);
	}
	return bytes;
}

#define MIB (1U << 20)

/* A dir of its own under the test's tmpdir, so the counts are this test's. */
static int fresh_dir(const char *name)
{
	_cleanup_close_ int top = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int dfd;

	assert_true(top >= 0);
	assert_int_equal(mkdirat(top, name, 0700), 0);
	dfd = openat(top, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	return dfd;
}

/*
 * A page image is hashed while it is appended to, and the close only
 * adds its tail: the bytes hashed in all are the file's size, not twice
 * it, and the digest is the file's.
 */
static void test_growing_page_image(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_imghash *h = NULL;
	uint8_t sha[CRYO_DIGEST_LEN];
	uint64_t size = 0, bytes = 0;
	unsigned int files = 0;
	int dfd, fd;

	(void)state;
	dfd = fresh_dir("grow");
	assert_int_equal(cryo_imghash_start(dfd, CRYO_DIGEST_BLAKE3, CRYO_IMGHASH_GROWING_PAGES, &h, &err), 0);
	fd = openat(dfd, "pages-1.img", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	append(fd, 4 * MIB);
	/* hashed while still open: nothing was closed yet */
	assert_true(wait_hashed(h, 4 * MIB) >= 4 * MIB);
	append(fd, 3 * MIB + 123);
	assert_true(wait_hashed(h, 6 * MIB) >= 6 * MIB);
	append(fd, 5);
	close(fd);
	assert_int_equal(cryo_imghash_finish(h, &err), 0);
	assert_true(cryo_imghash_lookup(h, dfd, "pages-1.img", CRYO_DIGEST_BLAKE3, sha, &size));
	assert_int_equal(size, 7 * MIB + 128);
	expect_true_digest(h, dfd, "pages-1.img");
	cryo_imghash_stats(h, &bytes, &files);
	assert_int_equal(bytes, 7 * MIB + 128);
	assert_int_equal(files, 1);
	cryo_imghash_free(h);
	close(dfd);
}

/*
 * What breaks the append-only promise is hashed whole at its close: a
 * page image cut shorter than what was read, one replaced by another
 * inode under its name, one closed twice (a second writer).
 */
static void test_growing_broken_promise(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_imghash *h = NULL;
	uint8_t sha[CRYO_DIGEST_LEN];
	uint64_t size = 0;
	int dfd, fd, fd2;

	(void)state;
	dfd = fresh_dir("broken");
	assert_int_equal(cryo_imghash_start(dfd, CRYO_DIGEST_BLAKE3, CRYO_IMGHASH_GROWING_PAGES, &h, &err), 0);

	/* cut below what was read, then written on */
	fd = openat(dfd, "pages-2.img", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	append(fd, 3 * MIB);
	assert_true(wait_hashed(h, 3 * MIB) >= 3 * MIB);
	assert_int_equal(ftruncate(fd, MIB), 0);
	assert_int_equal(lseek(fd, MIB, SEEK_SET), MIB);
	append(fd, MIB + 17);
	close(fd);

	/* replaced by a new inode of the same name after part of it was read */
	fd = openat(dfd, "pages-3.img", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	append(fd, 2 * MIB);
	assert_true(wait_hashed(h, 5 * MIB) >= 5 * MIB);
	put(dfd, "pages-3.img.tmp", 3 * MIB, 5);
	assert_int_equal(renameat(dfd, "pages-3.img.tmp", dfd, "pages-3.img"), 0);
	close(fd);

	/* two writers: the first close must not end the hash of what the second still writes */
	fd = openat(dfd, "pages-4.img", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	fd2 = openat(dfd, "pages-4.img", O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd2 >= 0);
	append(fd, 2 * MIB);
	close(fd);
	append(fd2, MIB + 3);
	close(fd2);

	assert_int_equal(cryo_imghash_finish(h, &err), 0);
	expect_true_digest(h, dfd, "pages-2.img");
	expect_true_digest(h, dfd, "pages-3.img");
	expect_true_digest(h, dfd, "pages-4.img");
	assert_true(cryo_imghash_lookup(h, dfd, "pages-2.img", CRYO_DIGEST_BLAKE3, sha, &size));
	assert_int_equal(size, 2 * MIB + 17);
	assert_true(cryo_imghash_lookup(h, dfd, "pages-4.img", CRYO_DIGEST_BLAKE3, sha, &size));
	assert_int_equal(size, 3 * MIB + 3);
	cryo_imghash_free(h);
	close(dfd);
}

/* Only page images are read before their close: CRIU's other files make no such promise. */
static void test_growing_only_page_images(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_imghash *h = NULL;
	uint8_t sha[CRYO_DIGEST_LEN];
	uint64_t size = 0, bytes = 0;
	unsigned int files = 0;
	int dfd, fd, other;

	(void)state;
	dfd = fresh_dir("other");
	assert_int_equal(cryo_imghash_start(dfd, CRYO_DIGEST_BLAKE3, CRYO_IMGHASH_GROWING_PAGES, &h, &err), 0);
	other = openat(dfd, "core-9.img", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(other >= 0);
	append(other, 2 * MIB);
	fd = openat(dfd, "pages-9.img", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	append(fd, 2 * MIB);
	/* the thread is at work (it read the page image), and leaves core-9.img alone */
	assert_true(wait_hashed(h, 2 * MIB) >= 2 * MIB);
	usleep(50000);
	cryo_imghash_stats(h, &bytes, &files);
	assert_int_equal(bytes, 2 * MIB);
	close(other);
	close(fd);
	assert_int_equal(cryo_imghash_finish(h, &err), 0);
	expect_true_digest(h, dfd, "core-9.img");
	assert_true(cryo_imghash_lookup(h, dfd, "core-9.img", CRYO_DIGEST_BLAKE3, sha, &size));
	assert_true(cryo_imghash_lookup(h, dfd, "pages-9.img", CRYO_DIGEST_BLAKE3, sha, &size));
	cryo_imghash_stats(h, &bytes, &files);
	assert_int_equal(bytes, 4 * MIB);
	assert_int_equal(files, 2);
	cryo_imghash_free(h);
	close(dfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hashes_what_is_written),
		cmocka_unit_test(test_free_while_running),
		cmocka_unit_test(test_growing_page_image),
		cmocka_unit_test(test_growing_broken_promise),
		cmocka_unit_test(test_growing_only_page_images),
	};

	return cmocka_run_group_tests(tests, tl_group_setup_tmpdir, tl_group_teardown_tmpdir);
}
