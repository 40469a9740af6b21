/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The checkpoint manifest (proto/manifest.proto): what a checkpoint image
 * directory holds, down to every file's size and digest (BLAKE3 for new
 * images, SHA-256 for those of format version 1). It is written
 * last, just before the image is committed, and verified before a restore
 * touches anything: a manifest from a newer cryo, a missing, extra,
 * truncated or altered file are all refused with the file named.
 *
 * A Cryo__Manifest here is always heap-owned in protobuf-c's "unpacked"
 * shape (every string, array and sub-message malloc'd), whether it was
 * read from disk or built with the helpers below, so one
 * cryo_manifest_free() releases either.
 */
#ifndef CRYO_MANIFEST_H
#define CRYO_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "image.h"
#include "manifest.pb-c.h"
#include "error.h"

/* 2: file digests may be other than SHA-256 (the `digest` field). */
#define CRYO_MANIFEST_VERSION 2
/* config.json plus a few thousand file entries fit easily. */
#define CRYO_MANIFEST_MAX_SIZE (8U << 20)
#define CRYO_MANIFEST_MAX_FILES 65536

/* A new manifest for container id, format_version set, digests CRYO_DIGEST_DEFAULT. */
int cryo_manifest_new(const char *id, const char *config_json, Cryo__Manifest **ret, struct cryo_error *err);

/* The algorithm of m's file digests; setting it sets the format version it needs. */
enum cryo_digest_alg cryo_manifest_digest(const Cryo__Manifest *m);
void cryo_manifest_set_digest(Cryo__Manifest *m, enum cryo_digest_alg alg);
void cryo_manifest_free(Cryo__Manifest *m);

/* Replace *field (a malloc'd string of m) by a copy of s (NULL clears). */
int cryo_manifest_set_string(char **field, const char *s);

/* Append a step timing. */
int cryo_manifest_add_timing(Cryo__Manifest *m, const char *step, uint64_t start_usec, uint64_t usec);

/*
 * Hash every entry of the directory dirfd (regular files and symlinks,
 * one level: CRIU's images are flat) except the manifest itself into
 * m->files, sorted by name. Any other kind of entry is an error.
 */
int cryo_manifest_hash_dir(Cryo__Manifest *m, int dirfd, struct cryo_error *err);

/* The same, taking the digests a cryo_imghash made while the files were written. */
struct cryo_imghash;
int cryo_manifest_hash_dir_with(Cryo__Manifest *m, int dirfd, struct cryo_imghash *cache, struct cryo_error *err);

/* Write m as dirfd/manifest.pb (0600, fsync'd, via a temp file + rename). */
int cryo_manifest_write_at(int dirfd, const Cryo__Manifest *m, struct cryo_error *err);

/*
 * Read dirfd/manifest.pb (at most CRYO_MANIFEST_MAX_SIZE bytes) and check
 * its shape: known format_version, sane file names, digests 32 bytes.
 */
int cryo_manifest_read_at(int dirfd, Cryo__Manifest **ret, struct cryo_error *err);

/*
 * The same on the bytes of a manifest file already in memory (framing,
 * self-digest, protobuf, shape): what cryo_manifest_read_at() does after
 * reading, and what the fuzzer drives.
 */
int cryo_manifest_parse(const void *buf, size_t len, Cryo__Manifest **ret, struct cryo_error *err);

/*
 * Verify the directory against m: every listed file present with its
 * size and digest, nothing unlisted. -EBADMSG (or -ENOENT for a missing
 * file) with the file named.
 */
int cryo_manifest_verify_at(int dirfd, const Cryo__Manifest *m, struct cryo_error *err);

/*
 * A file's digest taken as this host wrote it (a received image: hashed
 * as each byte arrived), so the verify need not read it back.
 */
struct cryo_known_digest {
	char *name;
	enum cryo_digest_alg alg;       /* a manifest of another one hashes the file */
	uint8_t sha[CRYO_DIGEST_LEN];
	uint64_t size;
};

/* Sort by name, as cryo_manifest_verify_known_at() wants them. */
void cryo_known_digests_sort(struct cryo_known_digest *known, size_t n);

/*
 * cryo_manifest_verify_at() taking the digests of `known` (sorted by
 * name) for the files it lists instead of hashing them; every other check
 * (nothing unlisted, each listed file a regular file of the listed size,
 * symlinks) is the same, and a file not in `known` is hashed.
 */
int cryo_manifest_verify_known_at(int dirfd, const Cryo__Manifest *m, const struct cryo_known_digest *known,
				  size_t n_known, struct cryo_error *err);

/*
 * cryo_manifest_verify_split_at() in two parts, for a restore that lets CRIU
 * read page images while they are hashed: every check is made now but
 * the hashing of the files for which later(name) is true, which runs on
 * a thread that cryo_manifest_later_start() starts (on every core). Its
 * verdict comes from cryo_manifest_later_wait(), which the caller must
 * have before anything runs from those files (restore.c: CRIU's
 * post-restore notification, when the restored tasks have not run yet).
 * m and dirfd's directory must outlive *ret.
 *
 * Start the thread only after the last fork that does not exec (restore's
 * tar child): a child forked beside a thread that holds an allocator lock
 * deadlocks on it (ASan's, seen in CI).
 */
struct cryo_manifest_later;
int cryo_manifest_verify_split_at(int dirfd, const Cryo__Manifest *m, bool (*later)(const char *name),
				  struct cryo_manifest_later **ret, struct cryo_error *err);
/* Start hashing the later files on a thread (again: nothing). */
int cryo_manifest_later_start(struct cryo_manifest_later *l, struct cryo_error *err);
/*
 * Wait for the thread: 0 when every file it hashed matches, else why not.
 * Again: the same answer. Never started: hashes them here first.
 */
int cryo_manifest_later_wait(struct cryo_manifest_later *l, struct cryo_error *err);
/* Wait (if running) and free. Accepts NULL. */
void cryo_manifest_later_free(struct cryo_manifest_later *l);

static inline void cryo_manifest_later_freep(struct cryo_manifest_later **l)
{
	cryo_manifest_later_free(*l);
}

/* cryo_manifest_read_at() + cryo_manifest_verify_at() on a directory path. */
int cryo_manifest_load_verified(const char *dir, Cryo__Manifest **ret, struct cryo_error *err);

#endif
