/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Digests of files: BLAKE3 (the reference C implementation, SIMD-dispatched
 * at run time; Debian ships it in librust-blake3-dev) or SHA-256 (OpenSSL's
 * libcrypto EVP interface). Checkpoint images are verified byte for byte
 * before a restore touches anything. Both give 32 bytes; which one a
 * manifest's file digests are is that manifest's `digest` field.
 */
#ifndef CRYO_DIGEST_H
#define CRYO_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define CRYO_DIGEST_LEN 32
#define CRYO_DIGEST_HEX_LEN (2 * CRYO_DIGEST_LEN + 1)

/* The values are manifest.proto's DigestAlg (and on the wire in migrate.proto). */
enum cryo_digest_alg {
	CRYO_DIGEST_SHA256 = 0,
	CRYO_DIGEST_BLAKE3 = 1,
};

/*
 * What a new checkpoint uses: BLAKE3 hashes 3-4x faster than SHA-256 on
 * one core here (SHA-NI against AVX-512) and the images are 1 GB.
 */
#define CRYO_DIGEST_DEFAULT CRYO_DIGEST_BLAKE3

/* "sha256", "blake3"; NULL for a value that is neither. */
const char *cryo_digest_alg_name(int alg);
/* The reverse: 0 and *ret set, or -EINVAL. */
int cryo_digest_alg_from_name(const char *name, enum cryo_digest_alg *ret);

/*
 * Hash the regular file dirfd/path (not following a symlink in its last
 * component, not blocking on a FIFO: anything but a regular file is
 * refused) and return its digest and the number of bytes hashed.
 */
int cryo_digest_file_at(int dirfd, const char *path, enum cryo_digest_alg alg, uint8_t ret_sha[CRYO_DIGEST_LEN],
			uint64_t *ret_size, struct cryo_error *err);

/* Hash an open regular file from its current offset to EOF (the offset is left as it was). */
int cryo_digest_fd(int fd, enum cryo_digest_alg alg, uint8_t ret_sha[CRYO_DIGEST_LEN], uint64_t *ret_size,
		   struct cryo_error *err);

/*
 * One file of a parallel hash: name in, digest/size/error out. Jobs fail
 * on their own; the caller decides what a failed job means.
 */
struct cryo_digest_job {
	const char *name;
	uint64_t size_hint;            /* bytes expected, for scheduling only */
	uint8_t sha[CRYO_DIGEST_LEN];
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
int cryo_digest_files_at(int dirfd, enum cryo_digest_alg alg, struct cryo_digest_job *jobs, size_t n,
			 unsigned int threads, struct cryo_error *err);

/* Free the jobs' error messages. */
void cryo_digest_jobs_clear(struct cryo_digest_job *jobs, size_t n);

/*
 * A digest fed piece by piece (bytes as they arrive from a peer): new,
 * update any number of times, final once.
 */
struct cryo_hash;
int cryo_hash_new(struct cryo_hash **ret, enum cryo_digest_alg alg, struct cryo_error *err);
int cryo_hash_update(struct cryo_hash *h, const void *buf, size_t len, struct cryo_error *err);
/*
 * Feed the bytes [from, from + len) of fd (to its end: len UINT64_MAX),
 * read with pread: the bytes fed, or -errno.
 */
int64_t cryo_hash_update_fd(struct cryo_hash *h, int fd, uint64_t from, uint64_t len, struct cryo_error *err);
int cryo_hash_final(struct cryo_hash *h, uint8_t ret_sha[CRYO_DIGEST_LEN], struct cryo_error *err);
void cryo_hash_free(struct cryo_hash *h);

static inline void cryo_hash_freep(struct cryo_hash **h)
{
	cryo_hash_free(*h);
}

/* Hash a buffer with alg. */
int cryo_digest_buf_alg(enum cryo_digest_alg alg, const void *buf, size_t len, uint8_t ret_sha[CRYO_DIGEST_LEN],
			struct cryo_error *err);

/* SHA-256 of a buffer (the manifest's own checksum, key ids). */
int cryo_digest_buf(const void *buf, size_t len, uint8_t ret_sha[CRYO_DIGEST_LEN], struct cryo_error *err);

/* Lower-case hex of a digest into out (CRYO_DIGEST_HEX_LEN bytes, NUL-terminated). */
void cryo_digest_hex(const uint8_t sha[CRYO_DIGEST_LEN], char out[CRYO_DIGEST_HEX_LEN]);

#endif
