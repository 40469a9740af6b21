// SPDX-License-Identifier: GPL-2.0-only
#include <archive.h>
#include <archive_entry.h>
#include <json-c/json.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image.h"
#include "log.h"
#include "loop.h"
#include "mountinfo.h"
#include "snapshot.h"
#include "util.h"

/* Reflink src into dst; fall back to a copy. Returns 1 for a reflink, 0 for a copy. */
static int clone_or_copy(int src, int dst, struct cryo_error *err)
{
	struct stat st;
	off_t left;

	if (ioctl(dst, FICLONE, src) == 0)
		return 1;
	if (fstat(src, &st) < 0)
		return cryo_error_set(err, errno, "stat");
	left = st.st_size;
	while (left > 0) {
		ssize_t n = copy_file_range(src, NULL, dst, NULL, (size_t)left, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
			char buf[1 << 16];
			ssize_t k = read(src, buf, sizeof(buf));

			if (k < 0)
				return cryo_error_set(err, errno, "read");
			if (k == 0)
				break;
			if (write(dst, buf, (size_t)k) != k)
				return cryo_error_set(err, errno ? errno : EIO, "write");
			left -= k;
			continue;
		}
		if (n < 0)
			return cryo_error_set(err, errno, "copy_file_range");
		if (n == 0)
			break;
		left -= n;
	}
	return 0;
}

/* Run tar with argv; its stdin/stdout are in_fd/out_fd (-1 = unchanged). */
static int run_tar(char *const argv[], int in_fd, int out_fd, struct cryo_error *err)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return cryo_error_set(err, errno, "fork tar");
	if (pid == 0) {
		if ((in_fd >= 0 && dup2(in_fd, STDIN_FILENO) < 0) || (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0))
			_exit(127);
		execvp("tar", argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cryo_error_set(err, errno, "wait for tar");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return cryo_error_setx(err, EIO, "tar %s", WIFEXITED(status) ? "failed" : "was killed");
	return 0;
}

int cryo_snapshot_take(const char *rootfs, const struct cryo_mount *mnt, bool own_fs, int dirfd,
		       Cryo__RootfsSnapshot *s, struct cryo_error *err)
{
	_cleanup_free_ char *backing = NULL;
	_cleanup_close_ int src = -1, dst = -1;
	struct stat st;
	int r;

	if (own_fs && mnt->source && strncmp(mnt->source, "/dev/loop", 9) == 0) {
		r = cryo_loop_backing_file(mnt->source, &backing, err);
		if (r < 0)
			return r;
		src = open(backing, O_RDONLY | O_CLOEXEC);
		if (src < 0)
			return cryo_error_set(err, errno, "open rootfs image `%s`", backing);
		dst = openat(dirfd, CRYO_SNAPSHOT_IMAGE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (dst < 0)
			return cryo_error_set(err, errno, "create `%s`", CRYO_SNAPSHOT_IMAGE);
		r = clone_or_copy(src, dst, err);
		if (r < 0)
			return cryo_error_prefix(err, "copy `%s`", backing);
		s->kind = r == 1 ? CRYO__ROOTFS_SNAPSHOT__KIND__REFLINK : CRYO__ROOTFS_SNAPSHOT__KIND__COPY;
		if (cryo_manifest_set_string(&s->name, CRYO_SNAPSHOT_IMAGE) < 0 ||
		    cryo_manifest_set_string(&s->source, backing) < 0)
			return cryo_error_set(err, ENOMEM, "snapshot");
	} else {
		char *argv[] = { "tar", "--numeric-owner", "--xattrs", "--one-file-system", "-C", (char *)rootfs,
				 "-cf", "-", ".", NULL };

		dst = openat(dirfd, CRYO_SNAPSHOT_TAR, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (dst < 0)
			return cryo_error_set(err, errno, "create `%s`", CRYO_SNAPSHOT_TAR);
		r = run_tar(argv, -1, dst, err);
		if (r < 0)
			return cryo_error_prefix(err, "tar of `%s`", rootfs);
		s->kind = CRYO__ROOTFS_SNAPSHOT__KIND__TAR;
		if (cryo_manifest_set_string(&s->name, CRYO_SNAPSHOT_TAR) < 0 ||
		    cryo_manifest_set_string(&s->source, rootfs) < 0)
			return cryo_error_set(err, ENOMEM, "snapshot");
	}
	if (fstat(dst, &st) < 0)
		return cryo_error_set(err, errno, "stat snapshot");
	s->has_size = 1;
	s->size = (uint64_t)st.st_size;
	if (cryo_manifest_set_string(&s->fstype, mnt->fstype) < 0 ||
	    cryo_manifest_set_string(&s->mountpoint, mnt->mountpoint) < 0)
		return cryo_error_set(err, ENOMEM, "snapshot");
	return 0;
}

/* Mount the image file open at fd on rootfs. */
static int mount_image(int fd, const char *label, const char *fstype, const char *rootfs, struct cryo_error *err)
{
	_cleanup_close_ int loopfd = -1;
	char dev[32];
	int r;

	/* held until the mount holds the device (see loop_attach) */
	loopfd = cryo_loop_attach(fd, label, dev, sizeof(dev), err);
	if (loopfd < 0)
		return loopfd;
	if (mount(dev, rootfs, fstype, 0, NULL) < 0) {
		r = cryo_error_set(err, errno, "mount `%s` (%s) at `%s`", dev, fstype, rootfs);
		(void)ioctl(loopfd, LOOP_CLR_FD, 0);
		return r;
	}
	return 0;
}

/* The file systems a rootfs image snapshot may be mounted as (the image names one). */
static bool fstype_allowed(const char *t)
{
	static const char *const ok[] = { "ext2", "ext3", "ext4", "xfs", "btrfs" };
	size_t i;

	for (i = 0; t && i < ARRAY_SIZE(ok); i++)
		if (strcmp(t, ok[i]) == 0)
			return true;
	return false;
}

/*
 * A relative path that stays where it starts: not empty, not absolute, no
 * `..` (nor `.`) component, no empty component.
 */
static bool clean_relative(const char *p)
{
	const char *c = p;

	if (!p || !*p || *p == '/')
		return false;
	while (*c) {
		const char *e = strchrnul(c, '/');
		size_t n = (size_t)(e - c);

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = *e ? e + 1 : e;
	}
	return p[strlen(p) - 1] != '/';
}

static int openat2_beneath(int dirfd, const char *path, int flags, struct cryo_error *err)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s` in the bundle%s", path,
				      errno == ELOOP ? " (a symlink: refused)" : "");
	return fd;
}

void cryo_snapshot_undo_free(struct cryo_snapshot_undo *u)
{
	if (!u)
		return;
	if (u->parent_fd >= 0)
		close(u->parent_fd);
	free(u->rootfs);
	free(u->name);
	free(u->old_name);
	free(u->old_fstype);
	free(u);
}

/*
 * Image snapshot: the file goes into the bundle (never to a path the
 * image names) and is loop-mounted at the rootfs. Its name in the bundle:
 * where it was relative to the checkpointed bundle when that is a clean
 * relative path, else `rootfs.img`; resolved in the bundle without
 * symlinks. A rootfs mounted from that same file (the container's own,
 * left mounted after the checkpoint) is unmounted first and remounted by
 * the undo; a rootfs mounted from anything else is refused.
 */
static int restore_image(int image_dirfd, const Cryo__RootfsSnapshot *s, const char *old_bundle, int bundle_fd,
			 const char *rootfs, struct cryo_snapshot_undo *u, struct cryo_error *err)
{
	_cleanup_free_ char *rel = NULL, *dir = NULL, *tmp = NULL;
	_cleanup_close_ int src = -1, dst = -1;
	struct cryo_mount mnt = { 0 };
	const char *base;
	struct stat st, rst;
	bool exists, mounted_from_it = false;
	char old_dev[64] = "";
	size_t n;
	int r, lfd;

	if (!fstype_allowed(s->fstype))
		return cryo_error_setx(err, EBADMSG, "the snapshot's filesystem type `%.32s` is not one cryo mounts",
				       s->fstype ? s->fstype : "");
	n = old_bundle ? strlen(old_bundle) : 0;
	if (s->source && n > 1 && strncmp(s->source, old_bundle, n) == 0 && s->source[n] == '/' &&
	    clean_relative(s->source + n + 1))
		rel = strdup(s->source + n + 1);
	else
		rel = strdup(CRYO_SNAPSHOT_IMAGE);
	if (!rel)
		return cryo_error_set(err, ENOMEM, "restore rootfs");
	base = strrchr(rel, '/');
	dir = base ? strndup(rel, (size_t)(base - rel)) : strdup(".");
	base = base ? base + 1 : rel;
	if (!dir || asprintf(&tmp, ".%s.cryo-restore", base) < 0)
		return cryo_error_set(err, ENOMEM, "restore rootfs");
	u->name = strdup(base);
	u->rootfs = strdup(rootfs);
	if (!u->name || !u->rootfs)
		return cryo_error_set(err, ENOMEM, "restore rootfs");
	u->parent_fd = openat2_beneath(bundle_fd, dir, O_RDONLY | O_DIRECTORY, err);
	if (u->parent_fd < 0)
		return u->parent_fd;

	if (fstatat(u->parent_fd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode))
			return cryo_error_setx(err, EEXIST, "`%s` in the bundle exists and is not a regular file", rel);
		exists = true;
	} else if (errno == ENOENT) {
		exists = false;
	} else {
		return cryo_error_set(err, errno, "stat `%s` in the bundle", rel);
	}
	if (stat(rootfs, &rst) == 0 && cryo_mountinfo_find(rootfs, &mnt, NULL) == 0 &&
	    strcmp(mnt.mountpoint, rootfs) == 0) {
		mounted_from_it = exists && cryo_loop_backed_by(mnt.source, &st);
		if (!mounted_from_it) {
			r = cryo_error_setx(err, EBUSY,
					    "the rootfs `%s` is a mount of `%s`, not of the bundle's `%s`: unmount it first",
					    rootfs, mnt.source ? mnt.source : "?", rel);
			cryo_mount_done(&mnt);
			return r;
		}
		u->old_fstype = mnt.fstype ? strdup(mnt.fstype) : NULL;
		snprintf(old_dev, sizeof(old_dev), "%s", mnt.source);
	}
	cryo_mount_done(&mnt);

	src = cryo_image_open_file(image_dirfd, s->name, err);
	if (src < 0)
		return src;
	/* a new file, then renamed over the old one: the image keeps its copy for the next restore */
	(void)unlinkat(u->parent_fd, tmp, 0);
	dst = openat(u->parent_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (dst < 0)
		return cryo_error_set(err, errno, "create `%s` in the bundle", tmp);
	r = clone_or_copy(src, dst, err);
	if (r >= 0 && fsync(dst) < 0)
		r = cryo_error_set(err, errno, "fsync `%s`", tmp);
	if (r < 0) {
		(void)unlinkat(u->parent_fd, tmp, 0);
		return r;
	}
	if (mounted_from_it) {
		if (umount2(rootfs, 0) < 0) {
			r = cryo_error_set(err, errno, "unmount the current rootfs `%s`", rootfs);
			(void)unlinkat(u->parent_fd, tmp, 0);
			return r;
		}
		u->old_was_mounted = true;
		/* a loop device not set to autoclear (losetup's default) stays bound: release it */
		lfd = open(old_dev, O_RDONLY | O_CLOEXEC);
		if (lfd >= 0) {
			(void)ioctl(lfd, LOOP_CLR_FD, 0);
			close(lfd);
		}
	}
	if (renameat2(u->parent_fd, tmp, u->parent_fd, base, exists ? RENAME_EXCHANGE : RENAME_NOREPLACE) < 0) {
		r = cryo_error_set(err, errno, "rename `%s` to `%s` in the bundle", tmp, rel);
		(void)unlinkat(u->parent_fd, tmp, 0);
		return r;
	}
	if (exists) {
		u->old_name = TAKE_PTR(tmp);
	}
	u->placed = true;
	if (mkdir(rootfs, 0755) == 0)
		u->made_rootfs = true;
	else if (errno != EEXIST)
		return cryo_error_set(err, errno, "create `%s`", rootfs);
	r = mount_image(dst, rel, s->fstype, rootfs, err);
	if (r < 0)
		return r;
	u->mounted = true;
	return 0;
}

/*
 * A name in a tar snapshot: `tar -C rootfs .` writes `./`, `./etc/`,
 * `./etc/passwd`; without the `./` and a directory's trailing `/` it must
 * be a clean relative name (or empty: the root itself).
 */
static bool entry_name_ok(const char *name)
{
	char buf[PATH_MAX];
	size_t n;

	while (name[0] == '.' && name[1] == '/')
		name += 2;
	n = strlen(name);
	if (n == 0 || strcmp(name, ".") == 0)
		return true;
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, name, n + 1);
	if (buf[n - 1] == '/')
		buf[--n] = '\0';
	return clean_relative(buf);
}

/*
 * Runs in a child that has chroot()ed into the directory to fill, so no
 * name in the archive can reach outside it whatever libarchive does; the
 * checks and libarchive's SECURE flags refuse (rather than clamp) what a
 * snapshot made by cryo never contains: absolute names, `..`, hard links
 * out, symlinks written through, device nodes.
 */
static int extract_tar_child(int tar_fd, char *msg, size_t msglen)
{
	struct archive *a = archive_read_new(), *w = archive_write_disk_new();
	struct archive_entry *e;
	int r;

	if (!a || !w) {
		snprintf(msg, msglen, "libarchive: out of memory");
		return -1;
	}
	archive_read_support_format_tar(a);
	archive_read_support_filter_none(a);
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
						  ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_ACL |
						  ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
						  ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
	if (archive_read_open_fd(a, tar_fd, 1 << 16) != ARCHIVE_OK) {
		snprintf(msg, msglen, "%s", archive_error_string(a));
		return -1;
	}
	for (;;) {
		const char *name, *link;
		mode_t type;

		r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK) {
			snprintf(msg, msglen, "%s", archive_error_string(a));
			return -1;
		}
		name = archive_entry_pathname(e);
		if (!name) {
			snprintf(msg, msglen, "an entry has no name");
			return -1;
		}
		if (!entry_name_ok(name)) {
			snprintf(msg, msglen, "`%.200s`: absolute or `..` names are refused", name);
			return -1;
		}
		type = archive_entry_filetype(e);
		if (type == AE_IFCHR || type == AE_IFBLK) {
			snprintf(msg, msglen, "`%.200s`: device nodes are refused", name);
			return -1;
		}
		link = archive_entry_hardlink(e);
		if (link) {
			if (!entry_name_ok(link) || !*link || strcmp(link, ".") == 0 || strcmp(link, "./") == 0) {
				snprintf(msg, msglen, "`%.200s`: hard link to `%.200s` is refused", name, link);
				return -1;
			}
		}
		r = archive_write_header(w, e);
		if (r == ARCHIVE_OK && archive_entry_size(e) > 0) {
			const void *buf;
			size_t len;
			la_int64_t off;

			while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK)
				if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK) {
					snprintf(msg, msglen, "`%.200s`: %s", name, archive_error_string(w));
					return -1;
				}
			if (r != ARCHIVE_EOF) {
				snprintf(msg, msglen, "`%.200s`: %s", name, archive_error_string(a));
				return -1;
			}
			r = ARCHIVE_OK;
		}
		if (r != ARCHIVE_OK || archive_write_finish_entry(w) != ARCHIVE_OK) {
			snprintf(msg, msglen, "`%.200s`: %s", name, archive_error_string(w));
			return -1;
		}
	}
	if (archive_write_close(w) != ARCHIVE_OK) {
		snprintf(msg, msglen, "%s", archive_error_string(w));
		return -1;
	}
	archive_write_free(w);
	archive_read_free(a);
	return 0;
}

/*
 * Start extracting the tar open at tar_fd into the directory open at
 * dest_fd (see extract_tar_child): *pid is the child, *msg_fd the pipe
 * its error message comes on. The child dies with the thread that
 * started it: an extraction never outlives the cryo that wanted it.
 */
static int extract_tar_start(int tar_fd, int dest_fd, pid_t *pid, int *msg_fd, struct cryo_error *err)
{
	char msg[512] = "";
	pid_t parent = getpid();
	int pfd[2];

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "pipe");
	*pid = fork();
	if (*pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return cryo_error_set(err, errno, "fork");
	}
	if (*pid == 0) {
		close(pfd[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent) {
			snprintf(msg, sizeof(msg), "the extraction lost its parent");
		} else if (fchdir(dest_fd) < 0 || chroot(".") < 0 || chdir("/") < 0) {
			snprintf(msg, sizeof(msg), "chroot into the rootfs: %s", strerror(errno));
		} else {
			umask(0);
			if (extract_tar_child(tar_fd, msg, sizeof(msg)) == 0)
				_exit(0);
		}
		(void)!write(pfd[1], msg, strlen(msg));
		_exit(1);
	}
	close(pfd[1]);
	*msg_fd = pfd[0];
	return 0;
}

/* Wait for the extraction extract_tar_start() started; closes msg_fd. */
static int extract_tar_wait(pid_t pid, int msg_fd, struct cryo_error *err)
{
	char msg[512];
	int status;
	ssize_t n;

	do
		n = read(msg_fd, msg, sizeof(msg) - 1);
	while (n < 0 && errno == EINTR);
	close(msg_fd);
	msg[n > 0 ? n : 0] = '\0';
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cryo_error_set(err, errno, "wait for the extraction");
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	return cryo_error_setx(err, EBADMSG, "%s", msg[0] ? msg : "the extraction failed");
}

/* Extract the tar open at tar_fd into the directory open at dest_fd. */
static int extract_tar(int tar_fd, int dest_fd, struct cryo_error *err)
{
	int msg_fd = -1;
	pid_t pid = 0;
	int r;

	r = extract_tar_start(tar_fd, dest_fd, &pid, &msg_fd, err);
	return r < 0 ? r : extract_tar_wait(pid, msg_fd, err);
}

int cryo_snapshot_pre_start(int image_dirfd, const char *file, int dir_fd, const char *name,
			    struct cryo_snapshot_pre *p, struct cryo_error *err)
{
	_cleanup_close_ int src = -1, dest = -1;
	int r;

	cryo_snapshot_pre_cancel(p);
	p->started_us = cryo_now_us();
	p->taken_us = p->waited_us = 0;
	src = cryo_image_open_file(image_dirfd, file, err);
	if (src < 0)
		return src;
	if (mkdirat(dir_fd, name, 0700) < 0)
		return cryo_error_set(err, errno, "create `%s`", name);
	p->dir_fd = dir_fd;
	p->name = strdup(name);
	p->file = strdup(file);
	if (!p->name || !p->file) {
		cryo_snapshot_pre_cancel(p);
		return cryo_error_set(err, ENOMEM, "extract ahead");
	}
	dest = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dest < 0)
		r = cryo_error_set(err, errno, "open `%s`", name);
	else
		r = extract_tar_start(src, dest, &p->pid, &p->msg_fd, err);
	if (r < 0)
		cryo_snapshot_pre_cancel(p);
	return r;
}

int cryo_snapshot_pre_wait(struct cryo_snapshot_pre *p, struct cryo_error *err)
{
	if (!p->name)
		return cryo_error_setx(err, ENOENT, "nothing was extracted ahead");
	if (p->pid > 0) {
		p->r = extract_tar_wait(p->pid, p->msg_fd, err);
		p->pid = 0;
		p->msg_fd = -1;
		return p->r;
	}
	return p->r < 0 ? cryo_error_setx(err, -p->r, "the extraction ahead failed") : 0;
}

void cryo_snapshot_pre_cancel(struct cryo_snapshot_pre *p)
{
	struct stat st;

	if (p->pid > 0) {
		(void)kill(p->pid, SIGKILL);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
		close(p->msg_fd);
	}
	if (p->name && fstat(p->dir_fd, &st) == 0)
		(void)cryo_rm_rf_at_dev(p->dir_fd, p->name, st.st_dev);
	free(p->name);
	free(p->file);
	p->name = p->file = NULL;
	p->pid = 0;
	p->msg_fd = p->dir_fd = -1;
	p->r = 0;
}

/* cryo_snapshot_pre_wait(), timed */
static int waited(struct cryo_snapshot_pre *p, struct cryo_error *err)
{
	int64_t t = cryo_now_us();
	int r = cryo_snapshot_pre_wait(p, err);

	p->waited_us = cryo_now_us() - t;
	return r;
}

/*
 * The extraction ahead p, when it is of file and whole, becomes `newname`
 * in parent_fd: 1 when it did, 0 when the caller extracts (p is gone).
 */
static int take_pre(struct cryo_snapshot_pre *p, const char *file, int parent_fd, const char *newname)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	int r = 0;

	if (!p || !p->name)
		return 0;
	if (strcmp(p->file, file) != 0) {
		cryo_debug("the rootfs extracted ahead is of `%s`, not `%s`: extracting again", p->file, file);
	} else if (waited(p, &e) < 0) {
		cryo_debug("the rootfs extracted ahead: %s: extracting again", e.msg);
	} else if (renameat(p->dir_fd, p->name, parent_fd, newname) < 0) {
		cryo_debug("the rootfs extracted ahead: move it into place: %s: extracting again", strerror(errno));
	} else {
		free(p->name);
		p->name = NULL;
		p->taken_us = cryo_now_us();
		r = 1;
	}
	cryo_error_clear(&e);
	cryo_snapshot_pre_cancel(p);
	return r;
}

/*
 * Tar snapshot: extracted into a new directory next to the rootfs, which
 * then takes the rootfs's place in one rename (the old one is kept until
 * commit, and put back by the undo). A rootfs that is a mount point of its
 * own can't be exchanged: the snapshot is unpacked over it in place.
 */
static int restore_tar(int image_dirfd, const Cryo__RootfsSnapshot *s, const char *rootfs,
		       struct cryo_snapshot_pre *pre, struct cryo_snapshot_undo *u, struct cryo_error *err)
{
	_cleanup_free_ char *copy = NULL, *newname = NULL;
	_cleanup_close_ int src = -1, dest = -1;
	struct cryo_mount mnt = { 0 };
	struct stat st;
	const char *base;
	bool in_place = false, exists;
	int r;

	src = cryo_image_open_file(image_dirfd, s->name, err);
	if (src < 0)
		return src;
	exists = stat(rootfs, &st) == 0;
	if (exists && !S_ISDIR(st.st_mode))
		return cryo_error_setx(err, ENOTDIR, "the rootfs `%s` is not a directory", rootfs);
	if (exists && cryo_mountinfo_find(rootfs, &mnt, NULL) == 0 && strcmp(mnt.mountpoint, rootfs) == 0)
		in_place = true;
	cryo_mount_done(&mnt);
	if (in_place) {
		dest = open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dest < 0)
			return cryo_error_set(err, errno, "open `%s`", rootfs);
		return extract_tar(src, dest, err);
	}
	base = strrchr(rootfs, '/');
	if (!base || !base[1])
		return cryo_error_setx(err, EINVAL, "rootfs `%s` has no parent directory", rootfs);
	copy = strndup(rootfs, (size_t)(base - rootfs));
	u->rootfs = strdup(rootfs);
	if (!copy || !u->rootfs)
		return cryo_error_set(err, ENOMEM, "restore rootfs");
	base++;
	u->name = strdup(base);
	if (!u->name || asprintf(&newname, ".%s.cryo-restore", base) < 0)
		return cryo_error_set(err, ENOMEM, "restore rootfs");
	u->parent_fd = open(copy[0] ? copy : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (u->parent_fd < 0)
		return cryo_error_set(err, errno, "open `%s`", copy);
	if (fstat(u->parent_fd, &st) < 0)
		return cryo_error_set(err, errno, "stat `%s`", copy);
	(void)cryo_rm_rf_at_dev(u->parent_fd, newname, st.st_dev);
	if (take_pre(pre, s->name, u->parent_fd, newname) == 1) {
		r = 0;
	} else {
		if (mkdirat(u->parent_fd, newname, 0700) < 0)
			return cryo_error_set(err, errno, "create `%s` next to the rootfs", newname);
		dest = openat(u->parent_fd, newname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dest < 0)
			r = cryo_error_set(err, errno, "open `%s`", newname);
		else
			r = extract_tar(src, dest, err);
	}
	if (r >= 0 && renameat2(u->parent_fd, newname, u->parent_fd, base, exists ? RENAME_EXCHANGE : RENAME_NOREPLACE) < 0)
		r = cryo_error_set(err, errno, "put `%s` in place of `%s`", newname, rootfs);
	if (r < 0) {
		(void)cryo_rm_rf_at_dev(u->parent_fd, newname, st.st_dev);
		return r;
	}
	u->placed = true;
	u->is_dir = true;
	if (exists)
		u->old_name = TAKE_PTR(newname);
	return 0;
}

int cryo_snapshot_restore(int image_dirfd, const Cryo__RootfsSnapshot *s, const char *old_bundle, int bundle_fd,
			  const char *rootfs, struct cryo_snapshot_pre *pre, struct cryo_snapshot_undo **ret,
			  struct cryo_error *err)
{
	struct cryo_snapshot_undo *u;
	int r;

	u = calloc(1, sizeof(*u));
	if (u)
		u->parent_fd = -1;
	if (!u)
		r = cryo_error_set(err, ENOMEM, "restore rootfs");
	else if (s->kind != CRYO__ROOTFS_SNAPSHOT__KIND__NONE && !s->name)
		r = cryo_error_setx(err, EBADMSG, "the snapshot names no file");
	else if (s->kind == CRYO__ROOTFS_SNAPSHOT__KIND__NONE)
		r = 0;
	else if (s->kind == CRYO__ROOTFS_SNAPSHOT__KIND__REFLINK || s->kind == CRYO__ROOTFS_SNAPSHOT__KIND__COPY)
		r = restore_image(image_dirfd, s, old_bundle, bundle_fd, rootfs, u, err);
	else if (s->kind == CRYO__ROOTFS_SNAPSHOT__KIND__TAR)
		r = restore_tar(image_dirfd, s, rootfs, pre, u, err);
	else
		r = cryo_error_setx(err, EBADMSG, "unknown rootfs snapshot kind %d", (int)s->kind);
	/* what was extracted ahead and not taken goes */
	if (pre)
		cryo_snapshot_pre_cancel(pre);
	*ret = u;
	return r;
}

void cryo_snapshot_undo(struct cryo_snapshot_undo *u)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	struct stat st;

	if (!u || !u->rootfs)
		return;
	if (u->mounted && umount2(u->rootfs, 0) < 0 && umount2(u->rootfs, MNT_DETACH) < 0)
		cryo_warn("undo: unmount `%s`: %s", u->rootfs, strerror(errno));
	u->mounted = false;
	if (u->placed) {
		if (u->old_name) {
			if (renameat2(u->parent_fd, u->old_name, u->parent_fd, u->name, RENAME_EXCHANGE) < 0)
				cryo_warn("undo: put back `%s`: %s", u->name, strerror(errno));
		}
		/* the restored copy: under the temp name now, or the only one */
		if (fstat(u->parent_fd, &st) == 0)
			(void)cryo_rm_rf_at_dev(u->parent_fd, u->old_name ? u->old_name : u->name, st.st_dev);
		u->placed = false;
	}
	if (u->made_rootfs)
		(void)rmdir(u->rootfs);
	if (u->old_was_mounted && u->old_fstype) {
		_cleanup_close_ int fd = openat(u->parent_fd, u->name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0 || mount_image(fd, u->name, u->old_fstype, u->rootfs, &e) < 0) {
			cryo_warn("undo: remount the previous rootfs at `%s`: %s", u->rootfs,
				  fd < 0 ? strerror(errno) : e.msg);
			cryo_error_clear(&e);
		}
	}
}

/* The path of the dir open at fd, into buf[PATH_MAX]. */
static int fd_path(int fd, char *buf)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, PATH_MAX - 1);
	if (n <= 0 || buf[0] != '/')
		return -EINVAL;
	buf[n] = '\0';
	return 0;
}

char *cryo_snapshot_mounted_image(const struct cryo_snapshot_undo *u)
{
	char parent[PATH_MAX], *p = NULL;

	if (!u || !u->mounted || u->old_was_mounted || u->is_dir || !u->name || fd_path(u->parent_fd, parent) < 0)
		return NULL;
	if (asprintf(&p, "%s/%s", parent, u->name) < 0)
		return NULL;
	return p;
}

char *cryo_snapshot_undo_json(const struct cryo_snapshot_undo *u)
{
	struct json_object *o;
	char parent[PATH_MAX];
	char *s = NULL;

	if (!u || !u->rootfs || u->parent_fd < 0 || fd_path(u->parent_fd, parent) < 0)
		return NULL;
	o = json_object_new_object();
	if (!o)
		return NULL;
	json_object_object_add(o, "rootfs", json_object_new_string(u->rootfs));
	json_object_object_add(o, "parent", json_object_new_string(parent));
	if (u->name)
		json_object_object_add(o, "name", json_object_new_string(u->name));
	if (u->old_name)
		json_object_object_add(o, "oldName", json_object_new_string(u->old_name));
	if (u->old_fstype)
		json_object_object_add(o, "oldFstype", json_object_new_string(u->old_fstype));
	json_object_object_add(o, "placed", json_object_new_boolean(u->placed));
	json_object_object_add(o, "isDir", json_object_new_boolean(u->is_dir));
	json_object_object_add(o, "mounted", json_object_new_boolean(u->mounted));
	json_object_object_add(o, "oldWasMounted", json_object_new_boolean(u->old_was_mounted));
	json_object_object_add(o, "madeRootfs", json_object_new_boolean(u->made_rootfs));
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
	return s;
}

static char *json_strdup(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return strdup(json_object_get_string(v));
}

static bool json_true(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

/* Is rootfs a mount of the file parent_fd/name (through a loop device)? */
static bool mounted_from(const char *rootfs, int parent_fd, const char *name)
{
	struct cryo_mount m = { 0 };
	struct stat st;
	bool yes;

	if (!name || fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (cryo_mountinfo_find(rootfs, &m, NULL) < 0)
		return false;
	yes = strcmp(m.mountpoint, rootfs) == 0 && cryo_loop_backed_by(m.source, &st);
	cryo_mount_done(&m);
	return yes;
}

int cryo_snapshot_undo_from_json(const char *json, struct cryo_error *err)
{
	struct json_object *o = json ? json_tokener_parse(json) : NULL;
	struct cryo_snapshot_undo *u;
	_cleanup_free_ char *parent = NULL;
	int r = 0;

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return cryo_error_setx(err, EINVAL, "the staged rootfs's record is not a JSON object");
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		json_object_put(o);
		return cryo_error_set(err, ENOMEM, "undo");
	}
	u->parent_fd = -1;
	u->rootfs = json_strdup(o, "rootfs");
	parent = json_strdup(o, "parent");
	u->name = json_strdup(o, "name");
	u->old_name = json_strdup(o, "oldName");
	u->old_fstype = json_strdup(o, "oldFstype");
	u->placed = json_true(o, "placed");
	u->is_dir = json_true(o, "isDir");
	u->mounted = json_true(o, "mounted");
	u->old_was_mounted = json_true(o, "oldWasMounted");
	u->made_rootfs = json_true(o, "madeRootfs");
	json_object_put(o);
	if (!u->rootfs || !parent || !u->name || u->rootfs[0] != '/' || parent[0] != '/') {
		r = cryo_error_setx(err, EINVAL, "the staged rootfs's record lacks a path");
		goto out;
	}
	u->parent_fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (u->parent_fd < 0) {
		/* the bundle is gone: nothing of it to put back */
		r = errno == ENOENT ? 0 : cryo_error_set(err, errno, "open `%s`", parent);
		goto out;
	}
	/* whatever is mounted there now is not ours to take down unless it is the restored image */
	if (u->mounted && !u->is_dir)
		u->mounted = mounted_from(u->rootfs, u->parent_fd, u->name);
	cryo_snapshot_undo(u);
out:
	cryo_snapshot_undo_free(u);
	return r;
}

void cryo_snapshot_commit(struct cryo_snapshot_undo *u)
{
	struct stat st;
	int r;

	if (!u || !u->placed || !u->old_name)
		return;
	if (fstat(u->parent_fd, &st) < 0)
		return;
	r = cryo_rm_rf_at_dev(u->parent_fd, u->old_name, st.st_dev);
	if (r < 0)
		cryo_warn("could not remove the previous rootfs `%s`: %s", u->old_name, strerror(-r));
}
