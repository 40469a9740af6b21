// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image.h"
#include "proc.h"
#include "log.h"
#include "util.h"

#define STAGING_TAG ".staging-"
#define RM_MAX_DEPTH 32

/* SIGKILL any CRIU process that has parent_fd/name open */
static void kill_criu_in(int parent_fd, const char *name)
{
	char link[64], dir[PATH_MAX];
	_cleanup_free_ char *path = NULL;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", parent_fd);
	n = readlink(link, dir, sizeof(dir) - 1);
	if (n <= 0)
		return;
	dir[n] = '\0';
	if (asprintf(&path, "%s/%s", dir, name) < 0) {
		path = NULL;
		return;
	}
	if (cryo_proc_kill_holding("criu", path) > 0)
		cryo_warn("killed the CRIU a dead cryo left in `%s`", path);
}

/* Remove `.<name>.staging-<pid>` dirs whose cryo is gone. */
static void remove_stale_staging(int parent_fd, const char *final_name)
{
	_cleanup_free_ char *prefix = NULL;
	struct dirent *de;
	size_t plen;
	DIR *d;

	if (asprintf(&prefix, ".%s" STAGING_TAG, final_name) < 0) {
		prefix = NULL;
		return;
	}
	plen = strlen(prefix);
	d = cryo_opendir_at(parent_fd, ".");
	if (!d)
		return;
	while ((de = readdir(d))) {
		uint64_t pid;

		if (strncmp(de->d_name, prefix, plen) != 0)
			continue;
		if (cryo_parse_u64(de->d_name + plen, INT_MAX, &pid) < 0 || pid == 0)
			continue;
		if ((pid_t)pid == getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		cryo_debug("removing stale checkpoint staging dir `%s` of dead pid %llu", de->d_name,
			   (unsigned long long)pid);
		/* a CRIU its cryo left (cryo_proc_kill_holding()) goes first */
		kill_criu_in(parent_fd, de->d_name);
		if (cryo_rm_rf_at(parent_fd, de->d_name) < 0)
			cryo_warn("could not remove stale staging dir `%s`", de->d_name);
	}
	closedir(d);
}

static void image_free(struct cryo_image *img)
{
	if (!img)
		return;
	if (img->dirfd >= 0)
		close(img->dirfd);
	if (img->parent_fd >= 0)
		close(img->parent_fd);
	free(img->final_path);
	free(img->staging_path);
	free(img->final_name);
	free(img->staging_name);
	free(img);
}

void cryo_image_abort(struct cryo_image *img)
{
	int r;

	if (!img)
		return;
	if (!img->committed && img->staging_name && img->parent_fd >= 0) {
		r = cryo_rm_rf_at(img->parent_fd, img->staging_name);
		if (r < 0)
			cryo_warn("could not remove checkpoint staging dir `%s`: %s", img->staging_path, strerror(-r));
		else
			(void)fsync(img->parent_fd);
	}
	image_free(img);
}

static void image_abortp(struct cryo_image **img)
{
	cryo_image_abort(*img);
}

int cryo_image_stage(const char *final_path, struct cryo_image **ret, struct cryo_error *err)
{
	_cleanup_(image_abortp) struct cryo_image *img = NULL;
	_cleanup_free_ char *copy1 = NULL, *copy2 = NULL;
	char parent_real[PATH_MAX];
	const char *base, *parent;
	size_t n;
	int r;

	if (!final_path || !*final_path)
		return cryo_error_setx(err, EINVAL, "image path is empty");
	copy1 = strdup(final_path);
	copy2 = strdup(final_path);
	img = calloc(1, sizeof(*img));
	if (!copy1 || !copy2 || !img)
		return cryo_error_set(err, ENOMEM, "image `%s`", final_path);
	img->parent_fd = img->dirfd = -1;
	n = strlen(copy1);
	while (n > 1 && copy1[n - 1] == '/') {
		n--;
		copy1[n] = '\0';
		copy2[n] = '\0';
	}
	base = basename(copy1);
	parent = dirname(copy2);
	if (strcmp(base, "/") == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return cryo_error_setx(err, EINVAL, "image path `%s` does not name a directory to create", final_path);

	r = cryo_mkdir_p(parent, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", parent);
	if (!realpath(parent, parent_real))
		return cryo_error_set(err, errno, "resolve `%s`", parent);
	img->parent_fd = open(parent_real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (img->parent_fd < 0)
		return cryo_error_set(err, errno, "open `%s`", parent_real);
	img->final_name = strdup(base);
	if (!img->final_name || asprintf(&img->staging_name, ".%s" STAGING_TAG "%d", base, (int)getpid()) < 0 ||
	    asprintf(&img->final_path, "%s/%s", strcmp(parent_real, "/") == 0 ? "" : parent_real, base) < 0 ||
	    asprintf(&img->staging_path, "%s/%s", strcmp(parent_real, "/") == 0 ? "" : parent_real,
		     img->staging_name) < 0) {
		img->staging_name = NULL; /* never unlink what we did not create */
		return cryo_error_set(err, ENOMEM, "image `%s`", final_path);
	}

	remove_stale_staging(img->parent_fd, img->final_name);
	if (mkdirat(img->parent_fd, img->staging_name, 0700) < 0) {
		r = -errno;
		if (r == -EEXIST) {
			/* ours from an earlier, failed attempt in this very process */
			r = cryo_rm_rf_at(img->parent_fd, img->staging_name);
			if (r == 0 && mkdirat(img->parent_fd, img->staging_name, 0700) < 0)
				r = -errno;
		}
		if (r < 0) {
			free(img->staging_name);
			img->staging_name = NULL;
			return cryo_error_set(err, -r, "create staging dir `%s`", img->staging_path);
		}
	}
	img->dirfd = openat(img->parent_fd, img->staging_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (img->dirfd < 0)
		return cryo_error_set(err, errno, "open staging dir `%s`", img->staging_path);
	if (fchmod(img->dirfd, 0700) < 0)
		return cryo_error_set(err, errno, "chmod staging dir `%s`", img->staging_path);
	*ret = TAKE_PTR(img);
	return 0;
}

/*
 * Images hold the container's memory: 0600 files, 0700 dirs, whatever
 * CRIU's umask made. Only modes here; durability is one syncfs after.
 */
static int seal_tree(int dfd, int depth, struct cryo_error *err)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (depth > RM_MAX_DEPTH)
		return cryo_error_setx(err, ELOOP, "image directory nests too deep");
	d = cryo_opendir_at(dfd, ".");
	if (!d)
		return cryo_error_set(err, errno, "open image dir");
	while (r == 0 && (de = readdir(d))) {
		struct stat st;
		int cfd;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = cryo_error_set(err, errno, "stat `%s`", de->d_name);
			break;
		}
		if (S_ISREG(st.st_mode)) {
			if ((st.st_mode & 077) && fchmodat(dirfd(d), de->d_name, st.st_mode & 0700, 0) < 0)
				r = cryo_error_set(err, errno, "chmod `%s`", de->d_name);
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			continue;
		cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			r = cryo_error_set(err, errno, "open `%s`", de->d_name);
			break;
		}
		if ((st.st_mode & 077) && fchmod(cfd, 0700) < 0)
			r = cryo_error_set(err, errno, "chmod `%s`", de->d_name);
		if (r == 0)
			r = seal_tree(cfd, depth + 1, err);
		close(cfd);
	}
	closedir(d);
	return r;
}

/*
 * CRIU writes its images without fsync. One syncfs of the image's
 * filesystem writes them all back (and since 5.8 reports any writeback
 * error on it), instead of one fsync per file in turn: the data of 40-odd
 * image files goes out in one pass the block layer can merge.
 */
static int sync_tree(int dfd, bool transient, struct cryo_error *err)
{
	int r;

	r = seal_tree(dfd, 0, err);
	if (r < 0 || transient)
		return r;
	if (syncfs(dfd) < 0)
		return cryo_error_set(err, errno, "syncfs the image dir's filesystem");
	return 0;
}

/* 1 if dirfd/name is an empty dir, 0 if not empty, -errno. */
static int dir_is_empty_at(int dirfd, const char *name)
{
	struct dirent *de;
	DIR *d;
	int r = 1;

	d = cryo_opendir_at(dirfd, name);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			r = 0;
			break;
		}
	closedir(d);
	return r;
}

int cryo_image_sync(struct cryo_image *img, struct cryo_error *err)
{
	return sync_tree(img->dirfd, img->transient, err);
}

int cryo_image_commit(struct cryo_image *img, struct cryo_error *err)
{
	struct stat st;
	bool exchanged = false;
	int r;

	if (img->committed)
		return cryo_error_setx(err, EALREADY, "image `%s` is already committed", img->final_path);
	r = sync_tree(img->dirfd, img->transient, err);
	if (r < 0)
		return cryo_error_prefix(err, "commit `%s`", img->final_path);
	if (cryo_fault("image-commit"))
		return cryo_error_setx(err, EIO, "commit `%s`: injected fault (CRYO_FAULT=image-commit)",
				       img->final_path);

	if (fstatat(img->parent_fd, img->final_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return cryo_error_set(err, errno, "commit: stat `%s`", img->final_path);
		if (renameat2(img->parent_fd, img->staging_name, img->parent_fd, img->final_name, RENAME_NOREPLACE) < 0)
			return cryo_error_set(err, errno, "commit: rename `%s` to `%s`", img->staging_path,
					      img->final_path);
	} else if (!S_ISDIR(st.st_mode)) {
		return cryo_error_setx(err, ENOTDIR, "commit: `%s` exists and is not a directory", img->final_path);
	} else {
		r = dir_is_empty_at(img->parent_fd, img->final_name);
		if (r < 0)
			return cryo_error_set(err, -r, "commit: read `%s`", img->final_path);
		if (r == 1) {
			/* rename(2) replaces an empty directory atomically */
			if (renameat(img->parent_fd, img->staging_name, img->parent_fd, img->final_name) < 0)
				return cryo_error_set(err, errno, "commit: rename `%s` to `%s`", img->staging_path,
						      img->final_path);
		} else {
			_cleanup_close_ int ofd = -1;

			ofd = openat(img->parent_fd, img->final_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (ofd < 0)
				return cryo_error_set(err, errno, "commit: open `%s`", img->final_path);
			if (faccessat(ofd, CRYO_MANIFEST_NAME, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
				return cryo_error_setx(err, EEXIST,
						       "commit: `%s` exists, is not empty and holds no cryo checkpoint: refusing to replace it",
						       img->final_path);
			if (renameat2(img->parent_fd, img->staging_name, img->parent_fd, img->final_name,
				      RENAME_EXCHANGE) < 0)
				return cryo_error_set(err, errno, "commit: exchange `%s` with `%s`", img->staging_path,
						      img->final_path);
			exchanged = true;
		}
	}
	img->committed = 1;
	if (fsync(img->parent_fd) < 0)
		return cryo_error_set(err, errno, "commit: fsync the parent of `%s`", img->final_path);
	if (exchanged) {
		/* the previous checkpoint now sits under the staging name */
		r = cryo_rm_rf_at(img->parent_fd, img->staging_name);
		if (r < 0)
			cryo_warn("could not remove the replaced checkpoint at `%s`: %s", img->staging_path,
				  strerror(-r));
		(void)fsync(img->parent_fd);
	}
	return 0;
}

int cryo_image_open(const char *path, struct cryo_error *err)
{
	return cryo_image_open_at(AT_FDCWD, path, err);
}

int cryo_image_open_at(int dirfd, const char *path, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;

	fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "image `%s`", path);
	if (fstat(fd, &st) < 0)
		return cryo_error_set(err, errno, "image `%s`", path);
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return cryo_error_setx(err, EPERM, "image `%s` is owned by uid %u, not by %u: refusing an image another user can change",
				       path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return cryo_error_setx(err, EPERM, "image `%s` is writable by %s (mode %04o): refusing an image another user can change",
				       path, (st.st_mode & S_IWOTH) ? "everyone" : "its group",
				       (unsigned)(st.st_mode & 07777));
	return TAKE_FD(fd);
}

static int open_regular(int dirfd, const char *name, const char *verb, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int fl;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			return cryo_error_setx(err, ELOOP, "`%s` in the image is a symlink, not a file", name);
		return cryo_error_set(err, errno, "%s `%s`", verb, name);
	}
	if (fstat(fd, &st) < 0)
		return cryo_error_set(err, errno, "stat `%s`", name);
	if (!S_ISREG(st.st_mode))
		return cryo_error_setx(err, EBADMSG, "`%s` in the image is not a regular file", name);
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return cryo_error_set(err, errno, "fcntl `%s`", name);
	return TAKE_FD(fd);
}

int cryo_image_open_file(int dirfd, const char *name, struct cryo_error *err)
{
	return open_regular(dirfd, name, "open", err);
}

int cryo_image_read_file(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len, struct stat *ret_st,
			 struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t len = 0, cap;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 && errno == ELOOP)
		return cryo_error_setx(err, ELOOP, "read `%s`: it is a symlink, refusing to follow it", name);
	if (fd < 0)
		return cryo_error_set(err, errno, "read `%s`", name);
	if (fstat(fd, &st) < 0)
		return cryo_error_set(err, errno, "stat `%s`", name);
	if (!S_ISREG(st.st_mode))
		return cryo_error_setx(err, EINVAL, "read `%s`: not a regular file", name);
	if ((uint64_t)st.st_size > max)
		return cryo_error_setx(err, EFBIG, "`%s` is larger than %zu bytes", name, max);
	/* the size is a hint: read until EOF, but never more than max */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf)
		return cryo_error_set(err, ENOMEM, "read `%s`", name);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap > max)
				return cryo_error_setx(err, EFBIG, "`%s` is larger than %zu bytes", name, max);
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb)
				return cryo_error_set(err, ENOMEM, "read `%s`", name);
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cryo_error_set(err, errno, "read `%s`", name);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		return cryo_error_setx(err, EFBIG, "`%s` is larger than %zu bytes", name, max);
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	if (ret_st)
		*ret_st = st;
	return 0;
}

bool cryo_image_is_pages(const char *name)
{
	return fnmatch("pages-*.img", name, 0) == 0;
}
