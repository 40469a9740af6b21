// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "imghash.h"
#include "util.h"

/* CRIU's image dirs hold tens of files; bound what a stranger could make us track. */
#define IMGHASH_MAX_FILES 4096

/*
 * A growing page image is hashed once this much more of it is there, at
 * most GROW_STEP at a time (then the closed files get their turn), and
 * looked at again after GROW_POLL_MS when nothing new came.
 */
#define GROW_MIN (1U << 20)
#define GROW_STEP (8U << 20)
#define GROW_POLL_MS 5

/*
 * The hash of a page image taken while CRIU still appends to it: the
 * bytes [0, done) of the inode (dev, ino), as it was before close number
 * gen + 1 of that name.
 */
struct growing {
	int fd;
	struct cryo_hash *sha;
	uint64_t done;
	unsigned int gen;
	dev_t dev;
	ino_t ino;
};

struct entry {
	char *name;
	unsigned int gen;        /* close-write events seen */
	unsigned int hashed_gen; /* gen the digest belongs to; 0 = none */
	bool pending;
	bool busy;               /* a thread reads it (and owns g) */
	bool growing;            /* created while watched, appended to: hash as it grows */
	bool created;            /* its creation was seen (and told) */
	struct growing g;        /* (g.sha != NULL: started) */
	uint8_t sha[CRYO_DIGEST_LEN];
	uint64_t size;
	struct timespec mtime;
};

/*
 * One thread hashes while CRIU writes (it has the dump's tasks to run on
 * the other cores); when it is done, finish adds one per other core for
 * what is left: two page images then hash side by side.
 */
#define IMGHASH_MAX_THREADS 4

/*
 * Locking: lock guards everything below but dirfd/ifd/efd and the
 * counters (atomic), and is held except around the reading of a file, which is
 * done by the one thread that marked the entry busy. Entries never move
 * (v holds pointers), so a busy entry stays where its thread left it.
 */
struct cryo_imghash {
	int dirfd;
	enum cryo_digest_alg alg;
	int ifd;
	int efd;
	pthread_mutex_t lock;
	pthread_t tid[IMGHASH_MAX_THREADS];
	unsigned int nthreads;
	bool stopping;
	bool overflow;
	bool writeback;
	bool grow;
	struct entry **v;
	size_t n, cap;
	size_t grow_next;        /* where the search for a growing file starts: each gets a turn */
	uint64_t bytes;
	unsigned int files;
	cryo_imghash_closed_fn closed;
	void *closed_data;
};

static struct entry *find_or_add(struct cryo_imghash *h, const char *name)
{
	struct entry *e;
	size_t i;

	for (i = 0; i < h->n; i++)
		if (strcmp(h->v[i]->name, name) == 0)
			return h->v[i];
	if (h->n >= IMGHASH_MAX_FILES)
		return NULL;
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct entry **v = realloc(h->v, cap * sizeof(struct entry *));

		if (!v)
			return NULL;
		h->v = v;
		h->cap = cap;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->g.fd = -1;
	e->name = strdup(name);
	if (!e->name) {
		free(e);
		return NULL;
	}
	h->v[h->n++] = e;
	return e;
}

static void grow_drop(struct entry *e)
{
	if (e->g.fd >= 0)
		close(e->g.fd);
	cryo_hash_free(e->g.sha);
	e->g.fd = -1;
	e->g.sha = NULL;
	e->g.done = 0;
}

/* Events were lost: trust nothing (and whoever listens, neither). */
static void lost(struct cryo_imghash *h)
{
	if (!h->overflow && h->closed)
		h->closed(h->dirfd, NULL, CRYO_IMGHASH_CLOSED, h->closed_data);
	h->overflow = true;
}

/* A file was (re)written: whatever digest it had is stale. */
static void touched(struct cryo_imghash *h, const char *name)
{
	struct entry *e = find_or_add(h, name);

	if (!e) {
		lost(h); /* can't track it */
		return;
	}
	e->gen++;
	e->pending = true;
	if (h->closed)
		h->closed(h->dirfd, name, CRYO_IMGHASH_CLOSED, h->closed_data);
}

/*
 * A file was created. CRIU writes a page image (pages-N.img) once, in
 * order, from start to end, through one fd (page-xfer's splice at the
 * file's offset): what is below its size is final. Those are hashed as
 * they grow; every other file waits for its close.
 */
static void created(struct cryo_imghash *h, const char *name)
{
	struct entry *e;

	if ((!h->grow && !h->closed) || !cryo_image_is_pages(name))
		return;
	e = find_or_add(h, name);
	if (!e) {
		lost(h);
		return;
	}
	/* a name seen before (closed, moved in) is not a fresh append */
	if (e->gen != 0 || e->created)
		return;
	e->created = true;
	if (h->closed)
		h->closed(h->dirfd, name, CRYO_IMGHASH_GROWING, h->closed_data);
	if (h->grow) {
		e->growing = true;
		e->g.gen = e->gen;
	}
}

/* Read every queued event without blocking. */
static void drain_events(struct cryo_imghash *h)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t len = read(h->ifd, buf, sizeof(buf));
		const char *p;

		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0)
			return;
		for (p = buf; p < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			if (ev->mask & IN_Q_OVERFLOW)
				lost(h);
			else if (ev->len > 0 && !(ev->mask & IN_ISDIR) && (ev->mask & IN_CREATE))
				created(h, ev->name);
			else if (ev->len > 0 && !(ev->mask & IN_ISDIR))
				touched(h, ev->name);
			p += sizeof(*ev) + ev->len;
		}
	}
}

/*
 * The part of a growing file hashed so far still stands for this close
 * if this close is the first since the hash began, of the same inode, no
 * shorter than what was read.
 */
static bool grow_usable(const struct entry *e, unsigned int gen, const struct stat *st)
{
	return e->g.sha && gen == e->g.gen + 1 && st->st_dev == e->g.dev && st->st_ino == e->g.ino &&
	       (uint64_t)st->st_size >= e->g.done;
}

/* Called locked, with e pending and not busy; returns locked. */
static void hash_one(struct cryo_imghash *h, struct entry *e)
{
	_cleanup_close_ int fd = -1;
	_cleanup_(cryo_hash_freep) struct cryo_hash *sha = NULL;
	unsigned int gen = e->gen;
	bool ok = false;
	struct stat st;
	uint8_t md[CRYO_DIGEST_LEN];
	uint64_t from = 0;
	int64_t n = -1;

	e->pending = false;
	e->busy = true;
	pthread_mutex_unlock(&h->lock);
	fd = openat(h->dirfd, e->name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		/* go on from where the growing hash is, or start over */
		if (grow_usable(e, gen, &st)) {
			sha = e->g.sha;
			e->g.sha = NULL;
			from = e->g.done;
		}
		grow_drop(e);
		if (sha || cryo_hash_new(&sha, h->alg, NULL) == 0)
			n = cryo_hash_update_fd(sha, fd, from, UINT64_MAX, NULL);
		ok = n >= 0 && cryo_hash_final(sha, md, NULL) == 0;
		/* (CRYO_IMGHASH_WRITEBACK) */
		if (ok && h->writeback)
			(void)sync_file_range(fd, (off_t)from, 0, SYNC_FILE_RANGE_WRITE);
		ok = ok && fstat(fd, &st) == 0 && (uint64_t)st.st_size == from + (uint64_t)n;
	} else {
		grow_drop(e);
	}
	if (n > 0)
		__atomic_add_fetch(&h->bytes, (uint64_t)n, __ATOMIC_RELAXED);
	pthread_mutex_lock(&h->lock);
	e->busy = false;
	e->growing = false;
	/* a close-write that came while we read makes this digest stale */
	drain_events(h);
	if (!ok || e->gen != gen)
		return;
	memcpy(e->sha, md, sizeof(md));
	e->size = (uint64_t)st.st_size;
	e->mtime = st.st_mtim;
	e->hashed_gen = gen;
	__atomic_add_fetch(&h->files, 1, __ATOMIC_RELAXED);
}

enum grow_step {
	GROW_GAVE_UP = -1, /* not (or no more) hashed as it grows: its close hashes it whole */
	GROW_WAIT = 0,     /* too little new: look again later */
	GROW_MOVED = 1,
};

/*
 * Hash what has been appended to one growing page image since the last
 * look, GROW_STEP at most. Called unlocked, by the thread that marked e
 * busy (e->g is its own then).
 */
static enum grow_step grow_one(struct cryo_imghash *h, struct entry *e)
{
	struct stat st;
	uint64_t len;
	int64_t n;

	if (!e->g.sha) {
		int fd = openat(h->dirfd, e->name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);

		if (fd < 0)
			return GROW_GAVE_UP;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || cryo_hash_new(&e->g.sha, h->alg, NULL) < 0) {
			close(fd);
			return GROW_GAVE_UP;
		}
		e->g.fd = fd;
		e->g.dev = st.st_dev;
		e->g.ino = st.st_ino;
		e->g.done = 0;
	}
	/* shrank: not an append */
	if (fstat(e->g.fd, &st) < 0 || (uint64_t)st.st_size < e->g.done)
		return GROW_GAVE_UP;
	len = (uint64_t)st.st_size - e->g.done;
	if (len < GROW_MIN)
		return GROW_WAIT;
	len = len > GROW_STEP ? GROW_STEP : len & ~(uint64_t)4095;
	n = cryo_hash_update_fd(e->g.sha, e->g.fd, e->g.done, len, NULL);
	if (n <= 0)
		return GROW_GAVE_UP;
	if (h->writeback)
		(void)sync_file_range(e->g.fd, (off_t)e->g.done, n, SYNC_FILE_RANGE_WRITE);
	e->g.done += (uint64_t)n;
	__atomic_add_fetch(&h->bytes, (uint64_t)n, __ATOMIC_RELAXED);
	return GROW_MOVED;
}

/*
 * Called locked: one step on the growing files, each in turn, until one
 * moves on (true). ret_any: there are growing files to look at again.
 */
static bool grow_some(struct cryo_imghash *h, bool *ret_any)
{
	size_t k;

	*ret_any = false;
	for (k = 0; k < h->n; k++) {
		size_t i = (h->grow_next + k) % h->n;
		struct entry *e = h->v[i];
		enum grow_step step;

		if (!e->growing || e->pending || e->busy)
			continue;
		e->busy = true;
		pthread_mutex_unlock(&h->lock);
		step = grow_one(h, e);
		if (step == GROW_GAVE_UP)
			grow_drop(e);
		pthread_mutex_lock(&h->lock);
		e->busy = false;
		if (step == GROW_GAVE_UP) {
			e->growing = false;
			continue;
		}
		*ret_any = true;
		if (step == GROW_MOVED) {
			h->grow_next = i + 1;
			return true;
		}
	}
	return false;
}

/* A file closed and not hashed since, that no other thread reads. */
static struct entry *next_pending(struct cryo_imghash *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (h->v[i]->pending && !h->v[i]->busy)
			return h->v[i];
	return NULL;
}

static void *worker(void *arg)
{
	struct cryo_imghash *h = arg;
	struct pollfd pfd[2] = {
		{ .fd = h->ifd, .events = POLLIN },
		{ .fd = h->efd, .events = POLLIN },
	};

	pthread_mutex_lock(&h->lock);
	for (;;) {
		struct entry *e;
		bool any_growing;
		int r;

		drain_events(h);
		if (h->overflow)
			break;
		e = next_pending(h);
		if (e) {
			hash_one(h, e);
			continue;
		}
		/* the writer is done: every close is queued, and drained above */
		if (h->stopping)
			break;
		if (grow_some(h, &any_growing))
			continue;
		pthread_mutex_unlock(&h->lock);
		r = poll(pfd, 2, any_growing ? GROW_POLL_MS : -1);
		pthread_mutex_lock(&h->lock);
		if (r < 0 && errno != EINTR)
			break;
		/* (the eventfd is never read: every thread sees it) */
		if (r > 0 && (pfd[1].revents & POLLIN))
			h->stopping = true;
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

int cryo_imghash_start(int dirfd, enum cryo_digest_alg alg, unsigned flags, struct cryo_imghash **ret,
		       struct cryo_error *err)
{
	return cryo_imghash_start_notify(dirfd, alg, flags, NULL, NULL, ret, err);
}

int cryo_imghash_start_notify(int dirfd, enum cryo_digest_alg alg, unsigned flags, cryo_imghash_closed_fn fn,
			      void *userdata, struct cryo_imghash **ret, struct cryo_error *err)
{
	struct cryo_imghash *h;
	struct dirent *de;
	DIR *d;
	int r;

	h = calloc(1, sizeof(*h));
	if (!h)
		return cryo_error_set(err, ENOMEM, "image hash");
	pthread_mutex_init(&h->lock, NULL);
	h->writeback = flags & CRYO_IMGHASH_WRITEBACK;
	h->grow = flags & CRYO_IMGHASH_GROWING_PAGES;
	h->alg = alg;
	h->closed = fn;
	h->closed_data = userdata;
	h->ifd = h->efd = -1;
	h->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (h->dirfd < 0) {
		r = cryo_error_set(err, errno, "image hash: dup dir fd");
		goto fail;
	}
	h->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->ifd < 0 || h->efd < 0) {
		r = cryo_error_set(err, errno, "image hash: inotify");
		goto fail;
	}
	/* /proc/self/fd/N names the dir without a path anyone could swap */
	{
		char p[64];

		snprintf(p, sizeof(p), "/proc/self/fd/%d", h->dirfd);
		if (inotify_add_watch(h->ifd, p, IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR) < 0) {
			r = cryo_error_set(err, errno, "image hash: watch the image dir");
			goto fail;
		}
	}
	/* what is there already (after the watch: nothing falls in between) */
	d = cryo_opendir_at(h->dirfd, ".");
	if (!d) {
		r = cryo_error_set(err, errno, "image hash: list the image dir");
		goto fail;
	}
	while ((de = readdir(d)))
		if (de->d_type == DT_REG)
			touched(h, de->d_name);
	closedir(d);
	r = pthread_create(&h->tid[0], NULL, worker, h);
	if (r != 0) {
		r = cryo_error_set(err, r, "image hash: start thread");
		goto fail;
	}
	h->nthreads = 1;
	*ret = h;
	return 0;
fail:
	cryo_imghash_free(h);
	return r;
}

/* The writer is done: a thread per core hashes what is left, then all end. */
static void stop(struct cryo_imghash *h)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t one = 1;
	unsigned int i;

	if (h->nthreads == 0)
		return;
	while (h->nthreads < IMGHASH_MAX_THREADS && (long)h->nthreads < cpus &&
	       pthread_create(&h->tid[h->nthreads], NULL, worker, h) == 0)
		h->nthreads++;
	if (write(h->efd, &one, sizeof(one)) < 0) {
		/* can't happen with a fresh eventfd; the joins below would hang without it */
		pthread_mutex_lock(&h->lock);
		h->overflow = true;
		pthread_mutex_unlock(&h->lock);
	}
	for (i = 0; i < h->nthreads; i++)
		pthread_join(h->tid[i], NULL);
	h->nthreads = 0;
}

int cryo_imghash_finish(struct cryo_imghash *h, struct cryo_error *err)
{
	if (!h)
		return cryo_error_setx(err, EINVAL, "image hash: not started");
	stop(h);
	/* events queued after the thread's last look */
	drain_events(h);
	return 0;
}

bool cryo_imghash_lookup(struct cryo_imghash *h, int dirfd, const char *name, enum cryo_digest_alg alg,
			 uint8_t ret_sha[CRYO_DIGEST_LEN], uint64_t *ret_size)
{
	struct stat st;
	size_t i;

	if (!h || h->nthreads > 0 || h->overflow || h->alg != alg)
		return false;
	for (i = 0; i < h->n; i++) {
		const struct entry *e = h->v[i];

		if (strcmp(e->name, name) != 0)
			continue;
		if (e->pending || e->hashed_gen == 0 || e->hashed_gen != e->gen)
			return false;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size != e->size || st.st_mtim.tv_sec != e->mtime.tv_sec ||
		    st.st_mtim.tv_nsec != e->mtime.tv_nsec)
			return false;
		memcpy(ret_sha, e->sha, CRYO_DIGEST_LEN);
		*ret_size = e->size;
		return true;
	}
	return false;
}

void cryo_imghash_stats(const struct cryo_imghash *h, uint64_t *ret_bytes, unsigned int *ret_files)
{
	*ret_bytes = h ? __atomic_load_n(&h->bytes, __ATOMIC_RELAXED) : 0;
	*ret_files = h ? __atomic_load_n(&h->files, __ATOMIC_RELAXED) : 0;
}

void cryo_imghash_free(struct cryo_imghash *h)
{
	size_t i;

	if (!h)
		return;
	stop(h);
	for (i = 0; i < h->n; i++) {
		grow_drop(h->v[i]);
		free(h->v[i]->name);
		free(h->v[i]);
	}
	free(h->v);
	pthread_mutex_destroy(&h->lock);
	if (h->ifd >= 0)
		close(h->ifd);
	if (h->efd >= 0)
		close(h->efd);
	if (h->dirfd >= 0)
		close(h->dirfd);
	free(h);
}
