// SPDX-License-Identifier: GPL-2.0-only
/*
 * A filesystem that fails on demand, for the fault tests (tests/soak/):
 * a FUSE passthrough of a backing directory whose reads and writes start
 * failing when a control file says so.
 *
 *   cryo-test-faultfs BACKING MOUNTPOINT CTL STATS
 *
 * Runs in the foreground (single-threaded) until unmounted. CTL is read
 * again whenever it changed; its lines (any may be missing):
 *
 *   write_eio_after=N    writes fail with EIO once N more bytes went (-1: never)
 *   write_enospc_after=N writes fail with ENOSPC once N more bytes went (-1: never)
 *   read_eio_after=N     reads fail with EIO once N more bytes were read (-1: never)
 *
 * Every failure it injects is counted in STATS ("eio_write N\neio_read
 * N\nenospc N\n", rewritten each time), so a test can tell the fault hit.
 * Paths are resolved under BACKING's fd; nothing else of the host is
 * touched.
 */
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <unistd.h>

static int base_fd = -1;
static const char *ctl_path, *stats_path;
static struct timespec ctl_mtime;
static long long write_eio_left = -1, write_enospc_left = -1, read_eio_left = -1;
static unsigned long long n_eio_write, n_eio_read, n_enospc;

/* A FUSE path ("/a/b") as a path under the backing dir ("a/b", "." for the root). */
static const char *rel(const char *path)
{
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

static void ctl_reload(void)
{
	struct stat st;
	char line[128];
	FILE *f;

	if (stat(ctl_path, &st) < 0 || (st.st_mtim.tv_sec == ctl_mtime.tv_sec && st.st_mtim.tv_nsec == ctl_mtime.tv_nsec))
		return;
	ctl_mtime = st.st_mtim;
	write_eio_left = write_enospc_left = read_eio_left = -1;
	f = fopen(ctl_path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		long long v;

		if (sscanf(line, "write_eio_after=%lld", &v) == 1)
			write_eio_left = v;
		else if (sscanf(line, "write_enospc_after=%lld", &v) == 1)
			write_enospc_left = v;
		else if (sscanf(line, "read_eio_after=%lld", &v) == 1)
			read_eio_left = v;
	}
	fclose(f);
}

static void stats_write(void)
{
	char buf[256];
	int fd, n;

	n = snprintf(buf, sizeof(buf), "eio_write %llu\neio_read %llu\nenospc %llu\n", n_eio_write, n_eio_read, n_enospc);
	fd = open(stats_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, buf, (size_t)n) != n) {
		/* a test that reads it sees it short: nothing else to do */
	}
	close(fd);
}

/* 0 to go on with a transfer of len bytes, or the error to inject (counted). */
static int budget(long long *left, size_t len, int err, unsigned long long *count)
{
	if (*left < 0)
		return 0;
	if ((unsigned long long)*left < len) {
		*left = 0;
		(*count)++;
		stats_write();
		return -err;
	}
	*left -= (long long)len;
	return 0;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int r = fi ? fstat((int)fi->fh, st) : fstatat(base_fd, rel(path), st, AT_SYMLINK_NOFOLLOW);

	return r < 0 ? -errno : 0;
}

static int fs_readlink(const char *path, char *buf, size_t size)
{
	ssize_t n = readlinkat(base_fd, rel(path), buf, size - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

static int fs_mkdir(const char *path, mode_t mode)
{
	return mkdirat(base_fd, rel(path), mode) < 0 ? -errno : 0;
}

static int fs_unlink(const char *path)
{
	return unlinkat(base_fd, rel(path), 0) < 0 ? -errno : 0;
}

static int fs_rmdir(const char *path)
{
	return unlinkat(base_fd, rel(path), AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int fs_symlink(const char *target, const char *path)
{
	return symlinkat(target, base_fd, rel(path)) < 0 ? -errno : 0;
}

/* (flags: RENAME_NOREPLACE, RENAME_EXCHANGE: cryo's image commit uses both) */
static int fs_rename(const char *from, const char *to, unsigned int flags)
{
	return renameat2(base_fd, rel(from), base_fd, rel(to), flags) < 0 ? -errno : 0;
}

static int fs_link(const char *from, const char *to)
{
	return linkat(base_fd, rel(from), base_fd, rel(to), 0) < 0 ? -errno : 0;
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int r = fi ? fchmod((int)fi->fh, mode) : fchmodat(base_fd, rel(path), mode, 0);

	return r < 0 ? -errno : 0;
}

static int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
	int r = fi ? fchown((int)fi->fh, uid, gid) : fchownat(base_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW);

	return r < 0 ? -errno : 0;
}

static int fs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd, r;

	if (fi)
		return ftruncate((int)fi->fh, size) < 0 ? -errno : 0;
	fd = openat(base_fd, rel(path), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	r = ftruncate(fd, size) < 0 ? -errno : 0;
	close(fd);
	return r;
}

static int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	int r = fi ? futimens((int)fi->fh, tv) : utimensat(base_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW);

	return r < 0 ? -errno : 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(base_fd, rel(path), (fi->flags & ~O_NOFOLLOW) | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	int fd = openat(base_fd, rel(path), fi->flags | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode);

	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n;
	int r;

	(void)path;
	ctl_reload();
	r = budget(&read_eio_left, size, EIO, &n_eio_read);
	if (r < 0)
		return r;
	n = pread((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	ssize_t n;
	int r;

	(void)path;
	ctl_reload();
	r = budget(&write_eio_left, size, EIO, &n_eio_write);
	if (r == 0)
		r = budget(&write_enospc_left, size, ENOSPC, &n_enospc);
	if (r < 0)
		return r;
	n = pwrite((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int fs_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	return fstatvfs(base_fd, st) < 0 ? -errno : 0;
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	int r;

	(void)path;
	r = datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh);
	return r < 0 ? -errno : 0;
}

static int fs_opendir(const char *path, struct fuse_file_info *fi)
{
	int fd = openat(base_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return -e;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	DIR *d = (DIR *)(uintptr_t)fi->fh;
	struct dirent *e;

	(void)path;
	(void)off;
	(void)flags;
	rewinddir(d);
	while ((e = readdir(d))) {
		struct stat st = { .st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type) };

		if (fill(buf, e->d_name, &st, 0, 0))
			break;
	}
	return 0;
}

static int fs_releasedir(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	closedir((DIR *)(uintptr_t)fi->fh);
	return 0;
}

static int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path;
	(void)datasync;
	return fsync(dirfd((DIR *)(uintptr_t)fi->fh)) < 0 ? -errno : 0;
}

static int fs_access(const char *path, int mask)
{
	return faccessat(base_fd, rel(path), mask, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* no caching: every read and write reaches us, so a fault hits when asked */
	cfg->direct_io = 1;
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->use_ino = 1;
	return NULL;
}

static const struct fuse_operations ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readlink = fs_readlink,
	.mkdir = fs_mkdir,
	.unlink = fs_unlink,
	.rmdir = fs_rmdir,
	.symlink = fs_symlink,
	.rename = fs_rename,
	.link = fs_link,
	.chmod = fs_chmod,
	.chown = fs_chown,
	.truncate = fs_truncate,
	.utimens = fs_utimens,
	.open = fs_open,
	.create = fs_create,
	.read = fs_read,
	.write = fs_write,
	.statfs = fs_statfs,
	.release = fs_release,
	.fsync = fs_fsync,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.releasedir = fs_releasedir,
	.fsyncdir = fs_fsyncdir,
	.access = fs_access,
};

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], NULL, "-f", "-s", "-o", "default_permissions,allow_other,fsname=cryo-faultfs", NULL };

	if (argc != 5) {
		fprintf(stderr, "usage: %s BACKING MOUNTPOINT CTL STATS\n", argv[0]);
		return 2;
	}
	base_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base_fd < 0) {
		perror(argv[1]);
		return 2;
	}
	ctl_path = argv[3];
	stats_path = argv[4];
	stats_write();
	ctl_reload();
	/* CRIU and cryo run as root: the mount is for everyone, permissions as in BACKING */
	umask(0);
	fargv[1] = argv[2];
	return fuse_main(6, fargv, &ops, NULL);
}
