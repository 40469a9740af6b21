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

#include "imghash.h"
#include "util.h"

/* CRIU's image dirs hold tens of files; bound what a stranger could make us track. */
#define IMGHASH_MAX_FILES 4096

struct entry {
	char *name;
	unsigned int gen;        /* close-write events seen */
	unsigned int hashed_gen; /* gen the digest belongs to; 0 = none */
	bool pending;
	uint8_t sha[CRYO_SHA256_LEN];
	uint64_t size;
	struct timespec mtime;
};

struct cryo_imghash {
	int dirfd;
	int ifd;
	int efd;
	pthread_t tid;
	bool running;
	bool stopping;
	bool overflow;
	bool writeback;
	struct entry *v;
	size_t n, cap;
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
		if (strcmp(h->v[i].name, name) == 0)
			return &h->v[i];
	if (h->n >= IMGHASH_MAX_FILES)
		return NULL;
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct entry *v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		h->v = v;
		h->cap = cap;
	}
	e = &h->v[h->n];
	memset(e, 0, sizeof(*e));
	e->name = strdup(name);
	if (!e->name)
		return NULL;
	h->n++;
	return e;
}

/* Events were lost: trust nothing (and whoever listens, neither). */
static void lost(struct cryo_imghash *h)
{
	if (!h->overflow && h->closed)
		h->closed(h->dirfd, NULL, h->closed_data);
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
		h->closed(h->dirfd, name, h->closed_data);
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
			else if (ev->len > 0 && !(ev->mask & IN_ISDIR))
				touched(h, ev->name);
			p += sizeof(*ev) + ev->len;
		}
	}
}

static void hash_one(struct cryo_imghash *h, struct entry *e)
{
	_cleanup_close_ int fd = -1;
	unsigned int gen = e->gen;
	struct stat st;
	uint8_t sha[CRYO_SHA256_LEN];
	uint64_t size = 0;

	e->pending = false;
	fd = openat(h->dirfd, e->name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (cryo_digest_fd(fd, sha, &size, NULL) < 0)
		return;
	/* (CRYO_IMGHASH_WRITEBACK) */
	if (h->writeback)
		(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != size)
		return;
	/* a close-write that came while we read makes this digest stale */
	drain_events(h);
	if (e->gen != gen)
		return;
	memcpy(e->sha, sha, sizeof(sha));
	e->size = size;
	e->mtime = st.st_mtim;
	e->hashed_gen = gen;
	h->bytes += size;
	h->files++;
}

static struct entry *next_pending(struct cryo_imghash *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		if (h->v[i].pending)
			return &h->v[i];
	return NULL;
}

static void *worker(void *arg)
{
	struct cryo_imghash *h = arg;
	struct pollfd pfd[2] = {
		{ .fd = h->ifd, .events = POLLIN },
		{ .fd = h->efd, .events = POLLIN },
	};

	for (;;) {
		struct entry *e;

		drain_events(h);
		if (h->overflow)
			return NULL;
		e = next_pending(h);
		if (e) {
			hash_one(h, e);
			continue;
		}
		if (h->stopping)
			return NULL;
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return NULL;
		if (pfd[1].revents & POLLIN)
			h->stopping = true; /* drain once more, hash what is left, then go */
	}
}

int cryo_imghash_start(int dirfd, unsigned flags, struct cryo_imghash **ret, struct cryo_error *err)
{
	return cryo_imghash_start_notify(dirfd, flags, NULL, NULL, ret, err);
}

int cryo_imghash_start_notify(int dirfd, unsigned flags, cryo_imghash_closed_fn fn, void *userdata,
			      struct cryo_imghash **ret, struct cryo_error *err)
{
	struct cryo_imghash *h;
	struct dirent *de;
	DIR *d;
	int r;

	h = calloc(1, sizeof(*h));
	if (!h)
		return cryo_error_set(err, ENOMEM, "image hash");
	h->writeback = flags & CRYO_IMGHASH_WRITEBACK;
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
		if (inotify_add_watch(h->ifd, p, IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR) < 0) {
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
	r = pthread_create(&h->tid, NULL, worker, h);
	if (r != 0) {
		r = cryo_error_set(err, r, "image hash: start thread");
		goto fail;
	}
	h->running = true;
	*ret = h;
	return 0;
fail:
	cryo_imghash_free(h);
	return r;
}

static void stop(struct cryo_imghash *h)
{
	uint64_t one = 1;

	if (!h->running)
		return;
	if (write(h->efd, &one, sizeof(one)) < 0) {
		/* can't happen with a fresh eventfd; the join below would hang without it */
		h->overflow = true;
	}
	pthread_join(h->tid, NULL);
	h->running = false;
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

bool cryo_imghash_lookup(struct cryo_imghash *h, int dirfd, const char *name, uint8_t ret_sha[CRYO_SHA256_LEN],
			 uint64_t *ret_size)
{
	struct stat st;
	size_t i;

	if (!h || h->running || h->overflow)
		return false;
	for (i = 0; i < h->n; i++) {
		const struct entry *e = &h->v[i];

		if (strcmp(e->name, name) != 0)
			continue;
		if (e->pending || e->hashed_gen == 0 || e->hashed_gen != e->gen)
			return false;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size != e->size || st.st_mtim.tv_sec != e->mtime.tv_sec ||
		    st.st_mtim.tv_nsec != e->mtime.tv_nsec)
			return false;
		memcpy(ret_sha, e->sha, CRYO_SHA256_LEN);
		*ret_size = e->size;
		return true;
	}
	return false;
}

void cryo_imghash_stats(const struct cryo_imghash *h, uint64_t *ret_bytes, unsigned int *ret_files)
{
	*ret_bytes = h ? h->bytes : 0;
	*ret_files = h ? h->files : 0;
}

void cryo_imghash_free(struct cryo_imghash *h)
{
	size_t i;

	if (!h)
		return;
	stop(h);
	for (i = 0; i < h->n; i++)
		free(h->v[i].name);
	free(h->v);
	if (h->ifd >= 0)
		close(h->ifd);
	if (h->efd >= 0)
		close(h->efd);
	if (h->dirfd >= 0)
		close(h->dirfd);
	free(h);
}
