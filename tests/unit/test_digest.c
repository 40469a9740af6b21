// SPDX-License-Identifier: GPL-2.0-only
/*
 * The parallel file hash checkpoint and restore use for image files: the
 * same digests as the one-file hash, whatever the thread count, each job's
 * own error for a file that can't be hashed, and nothing read through a
 * symlink or from a non-regular file. Both algorithms give the digests of
 * their specifications: BLAKE3's here against Debian's b3sum (the Rust
 * implementation, not the C one cryo builds), across its chunk and tree
 * boundaries, whole, fed in odd pieces and read from a file.
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

static void hash_all(enum cryo_digest_alg alg, unsigned int threads, struct cryo_digest_job *jobs)
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
	assert_int_equal(cryo_digest_files_at(dfd, alg, jobs, NFILES, threads, &err), 0);
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
	for (t = 0; t < 2 * ARRAY_SIZE(threads); t++) {
		enum cryo_digest_alg alg = t % 2 ? CRYO_DIGEST_SHA256 : CRYO_DIGEST_BLAKE3;

		memset(jobs, 0, sizeof(jobs));
		hash_all(alg, threads[t / 2], jobs);
		for (i = 0; i < NFILES; i++) {
			struct cryo_error err = CRYO_ERROR_INIT;
			uint8_t sha[CRYO_DIGEST_LEN];
			uint64_t size = 0;
			struct stat st;

			assert_int_equal(jobs[i].r, 0);
			assert_int_equal(cryo_digest_file_at(dfd, names[i], alg, sha, &size, &err), 0);
			assert_memory_equal(jobs[i].sha, sha, CRYO_DIGEST_LEN);
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
	assert_int_equal(cryo_digest_files_at(dfd, CRYO_DIGEST_BLAKE3, jobs, 4, 2, &err), 0);
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
	assert_int_equal(cryo_digest_files_at(dfd, CRYO_DIGEST_SHA256, jobs, 1, 1, &err), 0);
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
	assert_int_equal(cryo_digest_files_at(AT_FDCWD, CRYO_DIGEST_BLAKE3, NULL, 0, 0, &err), 0);
}

/*
 * Input byte i is i % 251 (BLAKE3's test-vector input). Digests from
 * `b3sum --no-names` (Debian's b3sum 1.3.1) and `sha256sum`.
 */
static const struct {
	size_t len;
	const char *blake3, *sha256;
} vectors[] = {
	{ 0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
	  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
	{ 1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213",
	  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d" },
	{ 1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444",
	  "bc0b6b10b89b9487a12fda2a8cc13194e7091c217aabf8b92846274026f4bcd0" },
	{ 102400, "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085",
	  "74588b7f0bcc354ac14d9cf199fa3a20c05f0c7293b9075b2f2e146e718de800" },
	/* 3 MiB + 5: more than cryo's 64 KiB reads, a partial last chunk */
	{ 3 * 1048576 + 5, "a7bb55bed0c04f58879d1fc1cafb27e14e931f4411fe63baf5b2d5a60357bffb",
	  "b01669d77761c4dfdfc8fb927821087bcf5c9ef1f917c4f1f8504e529f19edab" },
};

static void check_hex(const uint8_t *md, const char *want)
{
	char hex[CRYO_DIGEST_HEX_LEN];

	cryo_digest_hex(md, hex);
	assert_string_equal(hex, want);
}

static void test_known_answers(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	size_t v, i;
	int dfd;

	(void)state;
	dfd = open(tl_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	for (v = 0; v < ARRAY_SIZE(vectors); v++) {
		size_t len = vectors[v].len;
		uint8_t *buf = malloc(len + 1);
		uint8_t md[CRYO_DIGEST_LEN];
		struct cryo_hash *h = NULL;
		uint64_t size = 0;
		size_t at = 0, step = 1;

		assert_non_null(buf);
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)(i % 251);
		assert_int_equal(cryo_digest_buf_alg(CRYO_DIGEST_BLAKE3, buf, len, md, &err), 0);
		check_hex(md, vectors[v].blake3);
		assert_int_equal(cryo_digest_buf_alg(CRYO_DIGEST_SHA256, buf, len, md, &err), 0);
		check_hex(md, vectors[v].sha256);
		assert_int_equal(cryo_digest_buf(buf, len, md, &err), 0);
		check_hex(md, vectors[v].sha256);

		/* fed in growing odd pieces, as bytes come off a network */
		assert_int_equal(cryo_hash_new(&h, CRYO_DIGEST_BLAKE3, &err), 0);
		while (at < len) {
			size_t n = len - at < step ? len - at : step;

			assert_int_equal(cryo_hash_update(h, buf + at, n, &err), 0);
			at += n;
			step = step * 3 + 1;
		}
		assert_int_equal(cryo_hash_final(h, md, &err), 0);
		cryo_hash_free(h);
		check_hex(md, vectors[v].blake3);

		/* and from a file, as the image files are */
		unlinkat(dfd, "vector.img", 0);
		assert_int_equal(cryo_write_new_file_at(dfd, "vector.img", buf, len, 0600), 0);
		assert_int_equal(cryo_digest_file_at(dfd, "vector.img", CRYO_DIGEST_BLAKE3, md, &size, &err), 0);
		check_hex(md, vectors[v].blake3);
		assert_int_equal(size, len);
		assert_int_equal(cryo_digest_file_at(dfd, "vector.img", CRYO_DIGEST_SHA256, md, &size, &err), 0);
		check_hex(md, vectors[v].sha256);
		free(buf);
	}
	unlinkat(dfd, "vector.img", 0);
	close(dfd);
}

static void test_alg_names(void **state)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	enum cryo_digest_alg alg = CRYO_DIGEST_SHA256;
	struct cryo_hash *h = NULL;

	(void)state;
	assert_int_equal(cryo_digest_alg_from_name("blake3", &alg), 0);
	assert_int_equal(alg, CRYO_DIGEST_BLAKE3);
	assert_int_equal(cryo_digest_alg_from_name("sha256", &alg), 0);
	assert_int_equal(alg, CRYO_DIGEST_SHA256);
	assert_int_equal(cryo_digest_alg_from_name("md5", &alg), -EINVAL);
	assert_int_equal(cryo_digest_alg_from_name(NULL, &alg), -EINVAL);
	assert_string_equal(cryo_digest_alg_name(CRYO_DIGEST_BLAKE3), "blake3");
	assert_null(cryo_digest_alg_name(2));
	assert_null(cryo_digest_alg_name(-1));
	/* a number from an image or a peer that names no algorithm */
	assert_int_equal(cryo_hash_new(&h, (enum cryo_digest_alg)7, &err), -EINVAL);
	assert_null(h);
	assert_non_null(strstr(err.msg, "unknown digest"));
	cryo_error_clear(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_serial),
		cmocka_unit_test(test_errors_stay_with_their_job),
		cmocka_unit_test(test_no_files),
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_alg_names),
	};

	return cmocka_run_group_tests(tests, setup, tl_group_teardown_tmpdir);
}
