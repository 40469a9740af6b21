/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Hash image files while CRIU writes them. A thread watches the staging
 * dir with inotify and hashes each file when its writer closes it
 * (IN_CLOSE_WRITE), page images even as they grow
 * (CRYO_IMGHASH_GROWING_PAGES), on the core CRIU leaves idle; the
 * manifest then takes those digests instead of reading 1 GB of page
 * images again after the dump.
 *
 * Why it can't go stale: every close of a written file queues an event.
 * A digest counts only if no event for that file arrived after the hash
 * began (its generation is unchanged). cryo_imghash_finish() is called
 * after CRIU returned, so every close has happened and every event is
 * already queued; finish drains them all before it answers, and a file
 * rewritten after its hash is hashed again. An overflowed event queue
 * drops every cached digest (the manifest hashes everything itself).
 */
#ifndef CRYO_IMGHASH_H
#define CRYO_IMGHASH_H

#include <stdbool.h>
#include <stdint.h>

#include "digest.h"
#include "error.h"

struct cryo_imghash;

/*
 * Start each file's writeback as soon as it is hashed (sync_file_range):
 * the final syncfs then waits only for the rest. It competes with the
 * writer for the disk, so it pays where the whole run counts (a
 * checkpoint that stops the container), not where the writer's own time
 * does (--leave-running: the container is frozen while CRIU writes).
 */
#define CRYO_IMGHASH_WRITEBACK (1U << 0)

/*
 * Hash CRIU's page images (pages-*.img created while watched) as they
 * grow, not only once closed: the dump's largest files are written last
 * and would otherwise be read whole after it. Safe because CRIU appends
 * each page image in order through one fd: the hash of a growing file is
 * kept only for its first close, same inode, no shorter than what was
 * read; anything else and the close hashes the file whole.
 */
#define CRYO_IMGHASH_GROWING_PAGES (1U << 1)

/* Watch dirfd (flat, as CRIU's image dir is) and hash what is there and what comes, with alg. */
int cryo_imghash_start(int dirfd, enum cryo_digest_alg alg, unsigned flags, struct cryo_imghash **ret,
		       struct cryo_error *err);

/*
 * What a writer did to a file of the watched dir:
 *
 *   CLOSED   closed it after writing (or moved it in, or it was there at
 *            the start);
 *   GROWING  created a CRIU page image (cryo_image_is_pages): CRIU
 *            appends to it, in order, through one fd, until its close
 *            (then CLOSED), so what is below its size is final until
 *            then; told once, when it is created.
 */
enum cryo_imghash_event {
	CRYO_IMGHASH_CLOSED,
	CRYO_IMGHASH_GROWING,
};

/*
 * Called for each such event, from the hashing thread (or the caller's,
 * in start and finish), before the file is hashed. Keep it short, take
 * your own lock. dirfd is the watched dir (valid until cryo_imghash_free;
 * dup it to keep it). name NULL: events were lost, nothing said so far
 * about any file can be trusted. A file can be closed, and so reported,
 * again: a file read after a report is what its writers left, unless a
 * later report names it. Once the writer is done and
 * cryo_imghash_finish() returned, every close was reported. Used to send
 * each file of a dump while CRIU writes the next, a page image even as
 * CRIU writes it.
 */
typedef void (*cryo_imghash_closed_fn)(int dirfd, const char *name, enum cryo_imghash_event ev, void *userdata);

/* cryo_imghash_start(), telling fn of each file hashed. */
int cryo_imghash_start_notify(int dirfd, enum cryo_digest_alg alg, unsigned flags, cryo_imghash_closed_fn fn,
			      void *userdata, struct cryo_imghash **ret, struct cryo_error *err);

/* The writer is done: hash what is pending and stop the thread. */
int cryo_imghash_finish(struct cryo_imghash *h, struct cryo_error *err);

/*
 * After finish: the digest of `name` if it was hashed after its last
 * write and its size still is what was hashed, taken with alg. false =
 * hash it yourself.
 */
bool cryo_imghash_lookup(struct cryo_imghash *h, int dirfd, const char *name, enum cryo_digest_alg alg,
			 uint8_t ret_sha[CRYO_DIGEST_LEN], uint64_t *ret_size);

/*
 * Bytes hashed by the thread (also while it runs: a file's growing part
 * counts as it is read), and files hashed (after finish).
 */
void cryo_imghash_stats(const struct cryo_imghash *h, uint64_t *ret_bytes, unsigned int *ret_files);

/* Stop (if running) and free. Accepts NULL. */
void cryo_imghash_free(struct cryo_imghash *h);

static inline void cryo_imghash_freep(struct cryo_imghash **h)
{
	cryo_imghash_free(*h);
}

#endif
