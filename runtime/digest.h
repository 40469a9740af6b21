/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * SHA-256 of files, through OpenSSL's libcrypto EVP interface. Checkpoint
 * images are verified byte for byte before a restore touches anything.
 */
#ifndef CRYO_DIGEST_H
#define CRYO_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CRYO_SHA256_LEN 32
#define CRYO_SHA256_HEX_LEN (2 * CRYO_SHA256_LEN + 1)

/*
 * Hash the regular file dirfd/path (not following a symlink in its last
 * component, not blocking on a FIFO: anything but a regular file is
 * refused) and return its digest and the number of bytes hashed.
 */
int cryo_digest_file_at(int dirfd, const char *path, uint8_t ret_sha[CRYO_SHA256_LEN], uint64_t *ret_size,
			struct cryo_error *err);

/* Hash an open regular file from its current offset to EOF (the offset is left as it was). */
int cryo_digest_fd(int fd, uint8_t ret_sha[CRYO_SHA256_LEN], uint64_t *ret_size, struct cryo_error *err);

/*
 * One file of a parallel hash: name in, digest/size/error out. Jobs fail
 * on their own; the caller decides what a failed job means.
 */
struct cryo_digest_job {
	const char *name;
	uint64_t size_hint;            /* bytes expected, for scheduling only */
	uint8_t sha[CRYO_SHA256_LEN];
	uint64_t size;
	int r;                         /* 0 or -errno */
	struct cryo_error err;         /* set when r < 0; cleared by the caller */
};

/*
 * Hash n regular files of dirfd (O_NOFOLLOW, like cryo_digest_file_at) on
 * up to `threads` threads (0 = one per online CPU, at most 8), largest
 * first so no core idles at the end behind one big page image. Returns 0
 * when every job ran (each job's r says how it went), or -errno when the
 * threads could not be started (no job ran then).
 */
int cryo_digest_files_at(int dirfd, struct cryo_digest_job *jobs, size_t n, unsigned int threads,
			 struct cryo_error *err);

/* Free the jobs' error messages. */
void cryo_digest_jobs_clear(struct cryo_digest_job *jobs, size_t n);

/*
 * A digest fed piece by piece (bytes as they arrive from a peer): new,
 * update any number of times, final once. The same SHA-256 as the rest.
 */
struct cryo_sha256;
int cryo_sha256_new(struct cryo_sha256 **ret, struct cryo_error *err);
int cryo_sha256_update(struct cryo_sha256 *h, const void *buf, size_t len, struct cryo_error *err);
/*
 * Feed the bytes [from, from + len) of fd (to its end: len UINT64_MAX),
 * read with pread: the bytes fed, or -errno.
 */
int64_t cryo_sha256_update_fd(struct cryo_sha256 *h, int fd, uint64_t from, uint64_t len, struct cryo_error *err);
int cryo_sha256_final(struct cryo_sha256 *h, uint8_t ret_sha[CRYO_SHA256_LEN], struct cryo_error *err);
void cryo_sha256_free(struct cryo_sha256 *h);

static inline void cryo_sha256_freep(struct cryo_sha256 **h)
{
	cryo_sha256_free(*h);
}

/* Hash a buffer. */
int cryo_digest_buf(const void *buf, size_t len, uint8_t ret_sha[CRYO_SHA256_LEN], struct cryo_error *err);

/* Lower-case hex of a digest into out (CRYO_SHA256_HEX_LEN bytes, NUL-terminated). */
void cryo_digest_hex(const uint8_t sha[CRYO_SHA256_LEN], char out[CRYO_SHA256_HEX_LEN]);

#endif
