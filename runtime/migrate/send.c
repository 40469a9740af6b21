// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>

#include "freezer.h"
#include "image.h"
#include "log.h"
#include "sign.h"
#include "util.h"
#include "version.h"
#include "protocol.h"
#include "source.h"

struct file_ent {
	char *name;
	uint64_t size;
	uint32_t mode;
	struct timespec mtime;
};

static int cmp_ent(const void *a, const void *b)
{
	const struct file_ent *x = a, *y = b;
	bool mx = strcmp(x->name, CRYO_MANIFEST_NAME) == 0, my = strcmp(y->name, CRYO_MANIFEST_NAME) == 0;

	/* the manifest last: the destination has every file it lists before it */
	if (mx != my)
		return mx ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void ents_free(struct file_ent *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(e[i].name);
	free(e);
}

static int list_image(int dirfd, struct file_ent **ret, size_t *ret_n, uint64_t *ret_total, struct cryo_error *err)
{
	DIR *d = cryo_opendir_at(dirfd, ".");
	struct file_ent *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;

	if (!d)
		return cryo_error_set(err, errno, "list the image");
	while ((de = readdir(d))) {
		struct stat s;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* CRIU's link to the previous round: the destination makes its own */
		if (strcmp(de->d_name, "parent") == 0 && fstatat(dirfd, de->d_name, &s, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(s.st_mode))
			continue;
		if (fstatat(dirfd, de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(s.st_mode)) {
			closedir(d);
			ents_free(v, n);
			return cryo_error_setx(err, EINVAL, "image entry `%s` is not a regular file", de->d_name);
		}
		if (n == cap) {
			struct file_ent *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

			if (!nv) {
				closedir(d);
				ents_free(v, n);
				return cryo_error_set(err, ENOMEM, "list the image");
			}
			v = nv;
		}
		v[n].name = strdup(de->d_name);
		v[n].size = (uint64_t)s.st_size;
		v[n].mode = s.st_mode & 0777;
		v[n].mtime = s.st_mtim;
		if (!v[n].name) {
			closedir(d);
			ents_free(v, n);
			return cryo_error_set(err, ENOMEM, "list the image");
		}
		total += v[n].size;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_ent);
	*ret = v;
	*ret_n = n;
	*ret_total = total;
	return 0;
}

/* How send_file() sends one file. */
struct send_how {
	uint32_t round;
	bool replace;             /* it was sent before in this round (MigrateFile.replace) */
	bool early;               /* from the early sender: no progress, a short read pads, it stops when told */
	bool padded;              /* out (early): the file shrank while read, zeros were sent for the rest */
};

static bool early_cancelled(const struct mctx *c);

/* One file: its header, then size bytes of fd in chunks. */
static int send_file(struct mctx *c, int fd, const char *name, uint64_t size, uint32_t mode, struct send_how *how,
		     uint64_t *sent, uint64_t total, int64_t *last_report, uint8_t *buf, struct cryo_error *err)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateFile fm = CRYO__MIGRATE_FILE__INIT;
	Cryo__MigrateChunk ch = CRYO__MIGRATE_CHUNK__INIT;
	uint64_t left = size;
	int r;

	r = cryo_migrate_check_peer(c, 100, err);
	if (r < 0)
		return r;
	fm.name = (char *)name;
	fm.size = size;
	fm.has_mode = fm.has_round = 1;
	fm.mode = mode;
	fm.round = how->round;
	if (how->replace)
		fm.has_replace = fm.replace = 1;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_FILE;
	fr.file = &fm;
	r = cryo_transport_send(c->t, &fr, err);
	if (r < 0)
		return r;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
	fr.chunk = &ch;
	while (left > 0) {
		size_t want = left > CRYO_MIGRATE_CHUNK_SIZE ? CRYO_MIGRATE_CHUNK_SIZE : (size_t)left;
		ssize_t n = how->padded ? 0 : read(fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (how->early && early_cancelled(c))
			return cryo_error_setx(err, ECANCELED, "send `%s`: called off", name);
		if (n == 0 && how->early) {
			/* rewritten under us: what goes now is sent again after the dump */
			how->padded = true;
			memset(buf, 0, want);
			n = (ssize_t)want;
		}
		if (n <= 0)
			return cryo_error_set(err, n < 0 ? errno : EIO, "read `%s`", name);
		ch.data.data = buf;
		ch.data.len = (size_t)n;
		r = cryo_transport_send(c->t, &fr, err);
		if (r < 0)
			return r;
		left -= (uint64_t)n;
		*sent += (uint64_t)n;
		if ((*sent / CRYO_MIGRATE_CHUNK_SIZE) % 16 == 0) {
			r = cryo_migrate_check_peer(c, 100, err);
			if (r < 0)
				return r;
		}
		if (last_report && cryo_now_us() - *last_report > CRYO_MIGRATE_PROGRESS_EVERY_US) {
			*last_report = cryo_now_us();
			cryo_migrate_phase_progress(&c->ph, *sent, total);
		}
	}
	return 0;
}

/*
 * --- the final dump, sent while CRIU writes it ---------------------------
 *
 * The checkpoint's hashing thread (imghash.h) tells of each image file
 * as a writer closes it; a thread of ours sends it at once while CRIU
 * dumps the next. A file told of again after we took it to send is
 * stale, as is one whose size or mtime moved while we read it: what went
 * may not be what is there now. After the checkpoint (every close has
 * been told by then), the transfer step sends what is left, the manifest
 * and its signature last: the files not sent yet, and each one sent
 * stale or changed since (its size or mtime), once more, whole, as a
 * `replace`. A file sent and then removed from the image fails the
 * transfer (the destination would refuse it as unlisted). The
 * destination still trusts nothing before its verify step: every file
 * against the signed manifest, so a wrong guess here costs a failed
 * migration, never a wrong restore.
 */
struct early_file {
	char *name;
	bool taken;                     /* the thread took it to send */
	bool sent;                      /* its header went: the destination has a file of that name */
	bool stale;                     /* told of again after it was taken */
	bool whole;                     /* sent as read: not padded, size and mtime unchanged meanwhile */
	bool growing;                   /* told of as a page image CRIU appends to: sent as it grows */
	bool closed;                    /* (growing) its close came: its size is final */
	uint64_t size;                  /* announced (and sent) */
	struct timespec mtime;          /* when it was read */
};

struct early {
	pthread_t tid;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock: the files told of, each once, in order; the thread takes v[next] */
	struct early_file *v;
	size_t n, next;
	int dirfd;                      /* the staging dir (a dup), from the first report */
	bool closing;                   /* the checkpoint is done: send what was told, then end */
	bool cancel;                    /* end now (also read unlocked, between chunks) */
	bool lost;                      /* events were lost, or more files than we track: trust nothing sent */
	/* the thread's, read after the join */
	uint64_t bytes;
	int r;
	struct cryo_error err;
};

/* bound on what the early sender tracks (CRIU's image dirs hold tens of files) */
#define EARLY_MAX_FILES 4096

static bool early_cancelled(const struct mctx *c)
{
	return __atomic_load_n(&c->early->cancel, __ATOMIC_RELAXED);
}

static bool never_early(const char *name)
{
	/* written after the last report anyway; named here so that it stays so */
	return strcmp(name, CRYO_MANIFEST_NAME) == 0 || strcmp(name, CRYO_SIGNATURE_NAME) == 0;
}

/* imghash: a writer closed a file, or began a page image (name NULL: events were lost) */
void cryo_migrate_early_closed(int dirfd, const char *name, enum cryo_imghash_event ev, void *userdata)
{
	struct early *e = userdata;
	size_t i;

	pthread_mutex_lock(&e->lock);
	if (e->dirfd < 0)
		e->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (!name) {
		e->lost = true;
		pthread_cond_broadcast(&e->cond);
		goto out;
	}
	for (i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0) {
			if (ev == CRYO_IMGHASH_GROWING)
				goto out;
			if (e->v[i].growing && !e->v[i].closed) {
				/* the end of its growth, which the thread sending it waits for */
				e->v[i].closed = true;
				pthread_cond_broadcast(&e->cond);
				goto out;
			}
			/* written again: if it went (or is going), what went may be old */
			if (e->v[i].taken)
				e->v[i].stale = true;
			goto out;
		}
	if (e->n >= EARLY_MAX_FILES || never_early(name))
		goto out; /* the transfer step sends it */
	if (e->n % 64 == 0) {
		struct early_file *nv = realloc(e->v, (e->n + 64) * sizeof(*nv));

		if (!nv)
			goto out;
		e->v = nv;
	}
	memset(&e->v[e->n], 0, sizeof(e->v[e->n]));
	e->v[e->n].name = strdup(name);
	e->v[e->n].growing = ev == CRYO_IMGHASH_GROWING;
	if (e->v[e->n].name)
		e->n++;
	pthread_cond_broadcast(&e->cond);
out:
	pthread_mutex_unlock(&e->lock);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Send v[i] (taken) as it is now. */
static int early_send_one(struct mctx *c, size_t i, const char *name, int dirfd, uint8_t *buf)
{
	struct early *e = c->early;
	_cleanup_close_ int fd = -1;
	struct send_how how = { .round = 0, .early = true };
	struct stat st, after;
	int r;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0; /* gone or not a file: the transfer step sends what is there */
	pthread_mutex_lock(&e->lock);
	e->v[i].sent = true;
	e->v[i].size = (uint64_t)st.st_size;
	e->v[i].mtime = st.st_mtim;
	pthread_mutex_unlock(&e->lock);
	r = send_file(c, fd, name, (uint64_t)st.st_size, st.st_mode & 0777, &how, &e->bytes, 0, NULL, buf, &e->err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&e->lock);
	e->v[i].whole = !how.padded && fstat(fd, &after) == 0 && after.st_size == st.st_size &&
			same_time(&after.st_mtim, &st.st_mtim);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

/* how long the sender of a growing page image waits for more of it */
#define GROWING_POLL_MS 2

/* (locked) the growth of v[i] ended: closed, or nothing more will be told */
static bool growth_ended(const struct early *e, size_t i)
{
	return e->v[i].closed || e->lost || e->closing || e->cancel;
}

static void wait_growth(struct early *e, size_t i)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += GROWING_POLL_MS * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&e->lock);
	if (!growth_ended(e, i))
		(void)pthread_cond_timedwait(&e->cond, &e->lock, &ts);
	pthread_mutex_unlock(&e->lock);
}

/*
 * Send v[i], a page image CRIU is still appending to, as it grows: what
 * is below its size is final (imghash.h), so it goes at once, and once
 * its close came (its size final) the rest and the end. Without this a
 * dump's largest files went only after CRIU closed them (the transfer
 * step of a plain 256 MiB migration: 2.6 s after the dump). A file that
 * shrank is not an append: what went is marked not whole and the
 * transfer step sends it again, whole.
 */
static int early_send_growing(struct mctx *c, size_t i, const char *name, int dirfd, uint8_t *buf)
{
	struct early *e = c->early;
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateFile fm = CRYO__MIGRATE_FILE__INIT;
	Cryo__MigrateChunk ch = CRYO__MIGRATE_CHUNK__INIT;
	_cleanup_close_ int fd = -1;
	struct stat st;
	uint64_t off = 0;
	bool ended, shrank = false;
	int r;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0; /* gone or not a file: the transfer step sends what is there */
	r = cryo_migrate_check_peer(c, 100, &e->err);
	if (r < 0)
		return r;
	fm.name = (char *)name;
	fm.size = 0;
	fm.has_mode = fm.has_round = fm.has_growing = 1;
	fm.mode = st.st_mode & 0777;
	fm.round = 0;
	fm.growing = true;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_FILE;
	fr.file = &fm;
	pthread_mutex_lock(&e->lock);
	e->v[i].sent = true;
	pthread_mutex_unlock(&e->lock);
	r = cryo_transport_send(c->t, &fr, &e->err);
	if (r < 0)
		return r;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
	fr.chunk = &ch;
	for (;;) {
		if (early_cancelled(c))
			return cryo_error_setx(&e->err, ECANCELED, "send `%s`: called off", name);
		/* ended before the size is read: then the size is the final one */
		pthread_mutex_lock(&e->lock);
		ended = growth_ended(e, i);
		pthread_mutex_unlock(&e->lock);
		if (fstat(fd, &st) < 0)
			return cryo_error_set(&e->err, errno, "stat `%s`", name);
		if ((uint64_t)st.st_size < off) {
			shrank = true;
			break;
		}
		while (off < (uint64_t)st.st_size) {
			uint64_t left = (uint64_t)st.st_size - off;
			ssize_t n = pread(fd, buf, left > CRYO_MIGRATE_CHUNK_SIZE ? CRYO_MIGRATE_CHUNK_SIZE : (size_t)left,
					  (off_t)off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return cryo_error_set(&e->err, errno, "read `%s`", name);
			if (n == 0) {
				shrank = true;
				break;
			}
			ch.data.data = buf;
			ch.data.len = (size_t)n;
			r = cryo_transport_send(c->t, &fr, &e->err);
			if (r < 0)
				return r;
			off += (uint64_t)n;
			e->bytes += (uint64_t)n;
			if (early_cancelled(c))
				return cryo_error_setx(&e->err, ECANCELED, "send `%s`: called off", name);
		}
		if (shrank || ended)
			break;
		wait_growth(e, i);
	}
	ch.data.data = NULL;
	ch.data.len = 0;
	ch.has_end = ch.end = 1;
	r = cryo_transport_send(c->t, &fr, &e->err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&e->lock);
	e->v[i].size = off;
	e->v[i].mtime = st.st_mtim;
	e->v[i].whole = !shrank && e->v[i].closed && fstat(fd, &st) == 0 && (uint64_t)st.st_size == off &&
			same_time(&st.st_mtim, &e->v[i].mtime);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

static void *early_worker(void *arg)
{
	struct mctx *c = arg;
	struct early *e = c->early;
	uint8_t *buf = malloc(CRYO_MIGRATE_CHUNK_SIZE);

	if (!buf) {
		e->r = cryo_error_set(&e->err, ENOMEM, "transfer");
		return NULL;
	}
	for (;;) {
		const char *name;
		bool growing;
		size_t i;
		int dirfd;

		pthread_mutex_lock(&e->lock);
		while (e->next == e->n && !e->closing && !e->cancel)
			pthread_cond_wait(&e->cond, &e->lock);
		if (e->cancel || e->next == e->n) {
			pthread_mutex_unlock(&e->lock);
			break;
		}
		i = e->next++;
		/* from here on a report of it makes what we send stale */
		e->v[i].taken = true;
		name = e->v[i].name; /* its string stays where it is */
		dirfd = e->dirfd;
		growing = e->v[i].growing;
		pthread_mutex_unlock(&e->lock);
		e->r = growing ? early_send_growing(c, i, name, dirfd, buf) : early_send_one(c, i, name, dirfd, buf);
		if (e->r < 0)
			break;
	}
	free(buf);
	return NULL;
}

int cryo_migrate_early_start(struct mctx *c, struct cryo_error *err)
{
	struct early *e = calloc(1, sizeof(*e));
	int r;

	if (!e)
		return cryo_error_set(err, ENOMEM, "transfer");
	e->dirfd = -1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	c->early = e;
	r = pthread_create(&e->tid, NULL, early_worker, c);
	if (r != 0) {
		/* a help, not a need: the transfer step sends it all */
		cryo_debug("migrate `%s`: no sender thread (%s): the dump goes after the checkpoint", c->o->id,
			   strerror(r));
		cryo_migrate_early_free(c);
		return 0;
	}
	e->running = true;
	return 0;
}

/*
 * Wait for the thread: when cancel, it stops after the chunk it sends;
 * else it first sends every file it was told of. Its error, if any.
 */
void cryo_migrate_early_sent(const struct mctx *c, uint64_t *ret_bytes, unsigned *ret_files)
{
	*ret_bytes = c->early ? c->early->bytes : 0;
	*ret_files = c->early ? (unsigned)c->early->next : 0;
}

int cryo_migrate_early_join(struct mctx *c, bool cancel, struct cryo_error *err)
{
	struct early *e = c->early;

	if (!e || !e->running)
		return 0;
	pthread_mutex_lock(&e->lock);
	e->closing = true;
	if (cancel)
		__atomic_store_n(&e->cancel, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	pthread_join(e->tid, NULL);
	e->running = false;
	if (e->r < 0) {
		if (cancel)
			return 0;
		cryo_error_move(err, &e->err);
		return e->r;
	}
	return 0;
}

void cryo_migrate_early_free(struct mctx *c)
{
	struct early *e = c->early;
	size_t i;

	if (!e)
		return;
	(void)cryo_migrate_early_join(c, true, NULL);
	for (i = 0; i < e->n; i++)
		free(e->v[i].name);
	free(e->v);
	if (e->dirfd >= 0)
		close(e->dirfd);
	cryo_error_clear(&e->err);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	free(e);
	c->early = NULL;
}

/* (after the join) what went of this name, NULL if nothing */
static const struct early_file *early_find(const struct early *e, const char *name)
{
	size_t i;

	for (i = 0; e && i < e->n; i++)
		if (e->v[i].sent && strcmp(e->v[i].name, name) == 0)
			return &e->v[i];
	return NULL;
}

/* The destination has this file as it is now. */
static bool early_good(const struct early *e, const struct early_file *f, const struct file_ent *ent)
{
	return !e->lost && f->whole && !f->stale && f->size == ent->size && same_time(&f->mtime, &ent->mtime);
}

/*
 * One image, its manifest last, then the end of its round: round 0 is
 * the final dump, 1.. the pre-copy rounds. *ret_pages: its page bytes.
 * early: what of it went while it was written (see above), or NULL.
 */
int cryo_migrate_send_image(struct mctx *c, const char *dir, uint32_t round, const struct early *early,
			    uint64_t *ret_sent, uint64_t *ret_pages, struct cryo_error *err)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateDone done = CRYO__MIGRATE_DONE__INIT;
	_cleanup_close_ int dirfd = -1;
	uint8_t *buf;
	struct file_ent *ents = NULL;
	uint64_t total = 0, sent = 0;
	int64_t last = 0;
	size_t n = 0, i, j;
	int r;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return cryo_error_set(err, errno, "open `%s`", dir);
	r = list_image(dirfd, &ents, &n, &total, err);
	if (r < 0)
		return r;
	for (i = 0; early && i < early->n; i++) {
		if (!early->v[i].sent)
			continue;
		for (j = 0; j < n && strcmp(ents[j].name, early->v[i].name) != 0; j++)
			;
		if (j == n) {
			r = cryo_error_setx(err, EIO, "`%s` was sent while CRIU dumped, then removed from the image",
					    early->v[i].name);
			ents_free(ents, n);
			return r;
		}
	}
	buf = malloc(CRYO_MIGRATE_CHUNK_SIZE);
	if (!buf) {
		ents_free(ents, n);
		return cryo_error_set(err, ENOMEM, "transfer");
	}
	*ret_pages = 0;
	for (i = 0; i < n && r >= 0; i++) {
		const struct early_file *f = early_find(early, ents[i].name);
		struct send_how how = { .round = round, .replace = f != NULL };
		_cleanup_close_ int fd = -1;

		if (strncmp(ents[i].name, "pages-", 6) == 0)
			*ret_pages += ents[i].size;
		if (f && early_good(early, f, &ents[i])) {
			sent += ents[i].size;
			continue;
		}
		if (f) {
			c->res->resent_files++;
			cryo_debug("migrate `%s`: `%s` changed after it was sent: sending it again", c->o->id,
				   ents[i].name);
		}
		fd = openat(dirfd, ents[i].name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			r = cryo_error_set(err, errno, "open `%s`", ents[i].name);
			break;
		}
		r = send_file(c, fd, ents[i].name, ents[i].size, ents[i].mode, &how, &sent, total, &last, buf, err);
	}
	free(buf);
	ents_free(ents, n);
	if (r < 0)
		return r;
	cryo_migrate_phase_progress(&c->ph, sent, total);
	*ret_sent = sent;
	done.round = round;
	done.has_final = 1;
	done.final = round == 0;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_DONE;
	fr.done = &done;
	return cryo_transport_send(c->t, &fr, err);
}
