// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <limits.h>
#include <time.h>

#include "util.h"

/* deeper trees are refused: a loop or a hostile tree, not cryo's own */
/* deep enough for any rootfs tree; a loop of bind mounts ends in ELOOP */
#define RM_RF_MAX_DEPTH 256

static int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t cryo_now_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000LL;
}

int64_t cryo_now_us(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000LL;
}

int64_t cryo_boottime_ms(void)
{
	return clock_ns(CLOCK_BOOTTIME) / 1000000LL;
}

void cryo_sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int cryo_read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, cap = 256;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;

	if (cap > max)
		cap = max;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb, probe;

			if (cap >= max) {
				/* full: a file of exactly max bytes is fine, more is not */
				n = read(fd, &probe, 1);
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0)
					return -errno;
				if (n > 0)
					return -EFBIG;
				break;
			}
			cap = cap * 2 > max ? max : cap * 2;
			nb = realloc(buf, cap + 1);
			if (!nb)
				return -ENOMEM;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (ret_len)
		*ret_len = len;
	*ret = TAKE_PTR(buf);
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int cryo_write_file_at(int dirfd, const char *path, const char *buf)
{
	_cleanup_close_ int fd = -1;

	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return write_all(fd, buf, strlen(buf));
}

static int write_new(int dirfd, const char *path, const void *buf, size_t len, mode_t mode, int flags, bool sync)
{
	_cleanup_close_ int fd = -1;
	int r;

	fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY | flags, mode);
	if (fd < 0)
		return -errno;
	if (fchmod(fd, mode) < 0)
		return -errno;
	r = write_all(fd, buf, len);
	if (r < 0)
		return r;
	if (sync && fsync(fd) < 0)
		return -errno;
	return 0;
}

int cryo_write_new_file_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode)
{
	return write_new(dirfd, path, buf, len, mode, 0, true);
}

int cryo_write_new_file_unsynced_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode)
{
	return write_new(dirfd, path, buf, len, mode, 0, false);
}

int cryo_write_file_atomic_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode,
			      bool durable)
{
	_cleanup_close_ int dfd = -1;
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	char dir[PATH_MAX], tmp[NAME_MAX + 1];
	int r;

	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	if ((size_t)snprintf(tmp, sizeof(tmp), CRYO_ATOMIC_TMP_PREFIX "%s" CRYO_ATOMIC_TMP_SUFFIX, name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (slash) {
		size_t n = slash == path ? 1 : (size_t)(slash - path);

		if (n >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, path, n);
		dir[n] = '\0';
	} else {
		snprintf(dir, sizeof(dir), ".");
	}
	dfd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/*
	 * The temp name is ours: whatever was planted there (a symlink, a
	 * hard link to another file) is unlinked, never written through.
	 */
	if (unlinkat(dfd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	r = write_new(dfd, tmp, buf, len, mode, O_NOFOLLOW | O_EXCL, durable);
	if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	if (durable && fsync(dfd) < 0)
		return -errno;
	return 0;
}

int cryo_write_pid_file(const char *path, pid_t pid, struct cryo_error *err)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	int r = cryo_write_file_atomic_at(AT_FDCWD, path, buf, (size_t)n, 0644, false);

	if (r < 0)
		return cryo_error_set(err, -r, "write pid file `%s`", path);
	return 0;
}

void cryo_pid_kill_reapp(pid_t *pid)
{
	int saved = errno;

	if (*pid <= 0)
		return;
	(void)kill(*pid, SIGKILL);
	while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
		;
	*pid = -1;
	errno = saved;
}

int cryo_mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
	char *s;

	if (!p)
		return -ENOMEM;
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static bool env_list_has(const char *env, const char *name)
{
	size_t n = strlen(name);

	while (env && *env) {
		const char *end = strchrnul(env, ',');

		if ((size_t)(end - env) == n && strncmp(env, name, n) == 0)
			return true;
		env = *end ? end + 1 : end;
	}
	return false;
}

/*
 * CRYO_PAUSE_AT=<point>[,...] stops cryo (SIGSTOP) at that fault point,
 * so that a test can kill it there, deterministically.
 */
bool cryo_fault(const char *step)
{
	if (env_list_has(getenv("CRYO_PAUSE_AT"), step))
		raise(SIGSTOP);
	return env_list_has(getenv("CRYO_FAULT"), step);
}

int cryo_validate_id(const char *id, struct cryo_error *err)
{
	size_t i, n;

	if (!id || !*id)
		return cryo_error_setx(err, EINVAL, "container id is empty");
	n = strlen(id);
	if (n > 128)
		return cryo_error_setx(err, EINVAL, "container id is %zu bytes long, at most 128 are allowed", n);
	if (strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return cryo_error_setx(err, EINVAL, "container id `%s` is not allowed", id);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)id[i];

		if (isalnum(c) || (i > 0 && (c == '_' || c == '-' || c == '.')))
			continue;
		return cryo_error_setx(err, EINVAL,
				       "container id `%s` has an invalid character at offset %zu (allowed: letters, digits, `_`, `-`, `.`; first a letter or digit)",
				       id, i);
	}
	return 0;
}

int cryo_parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE || *end != '\0')
		return errno == ERANGE ? -ERANGE : -EINVAL;
	if (v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

DIR *cryo_opendir_at(int dirfd, const char *name)
{
	DIR *d;
	int fd, e;

	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

static int rm_rf_depth(int dfd, const char *name, dev_t dev, int depth)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (dev && st.st_dev != dev)
		return -EXDEV;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	if (depth > RM_RF_MAX_DEPTH)
		return -ELOOP;
	d = cryo_opendir_at(dfd, name);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int q;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		q = rm_rf_depth(dirfd(d), de->d_name, dev, depth + 1);
		if (q < 0 && r == 0)
			r = q;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

int cryo_rm_rf_at(int dirfd, const char *name)
{
	return rm_rf_depth(dirfd, name, 0, 0);
}

int cryo_rm_rf_at_dev(int dirfd, const char *name, dev_t dev)
{
	return rm_rf_depth(dirfd, name, dev, 0);
}

int cryo_send_with_fd(int sock, int fd, const void *buf, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	size_t done = 0;

	if (!len)
		return -EINVAL;
	memset(&u, 0, sizeof(u));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	while (done < len) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
		/* the fd went with the first bytes */
		iov.iov_base = (char *)buf + done;
		iov.iov_len = len - done;
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
	}
	return 0;
}

int cryo_wait_fd(int fd, short events, int64_t deadline_ms, const char *what, struct cryo_error *err)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline_ms - cryo_now_ms();
		int n;

		if (left <= 0)
			return cryo_error_setx(err, ETIMEDOUT, "%s: timed out", what);
		n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cryo_error_set(err, errno, "%s: poll", what);
		if (n > 0)
			return 0;
	}
}
