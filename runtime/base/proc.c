// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/magic.h>

#include "proc.h"
#include "util.h"

static bool is_fs(const char *path, long magic)
{
	struct statfs sfs;

	return statfs(path, &sfs) == 0 && sfs.f_type == magic;
}

const char *cryo_cgroup2_mountpoint(void)
{
	if (is_fs("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC))
		return "/sys/fs/cgroup/unified";
	if (is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC))
		return "/sys/fs/cgroup";
	return NULL;
}

const char *cryo_cgroup_v1_freezer_mountpoint(void)
{
	if (is_fs("/sys/fs/cgroup/freezer", CGROUP_SUPER_MAGIC))
		return "/sys/fs/cgroup/freezer";
	return NULL;
}

static int join(const char *mnt, const char *rel, char **ret)
{
	/* "/" in /proc/PID/cgroup is the hierarchy root itself */
	if (asprintf(ret, "%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel) < 0)
		return -ENOMEM;
	return 0;
}

/* Is ctrl one of a /proc/PID/cgroup line's controllers ("cpu,cpuacct"), or the whole list? */
static bool list_has(const char *list, size_t len, const char *ctrl)
{
	size_t n = strlen(ctrl);

	if (len == n && strncmp(list, ctrl, n) == 0)
		return true;
	for (const char *p = list, *end = list + len; p < end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t l = comma ? (size_t)(comma - p) : (size_t)(end - p);

		if (l == n && strncmp(p, ctrl, n) == 0)
			return true;
		p += l + 1;
	}
	return false;
}

/* In the text of a /proc/PID/cgroup, the path of ctrl's hierarchy ("": cgroup2's); -ENOENT: none */
static int cgroup_rel_in(const char *text, const char *ctrl, char **ret)
{
	/* each line: hierarchy-id:controller-list:path; cgroup2's is 0::path */
	for (const char *line = text; *line;) {
		const char *eol = strchrnul(line, '\n'), *c1, *c2;

		c1 = memchr(line, ':', (size_t)(eol - line));
		c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
		if (c2 && (*ctrl ? list_has(c1 + 1, (size_t)(c2 - c1 - 1), ctrl) : c1 == line + 1 && *line == '0' && c2 == c1 + 1)) {
			*ret = strndup(c2 + 1, (size_t)(eol - c2 - 1));
			return *ret ? 0 : -ENOMEM;
		}
		line = *eol ? eol + 1 : eol;
	}
	return -ENOENT;
}

/* /proc/PID/cgroup (pid 0: our own); -ESRCH when pid does not exist */
static int read_cgroup_file(pid_t pid, char **ret)
{
	char path[64];
	int r;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/cgroup");
	r = cryo_read_file_at(AT_FDCWD, path, 65536, ret, NULL);
	return r == -ENOENT ? -ESRCH : r < 0 ? r : 0;
}

int cryo_proc_cgroup_rel(pid_t pid, const char *ctrl, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	int r;

	*ret = NULL;
	r = read_cgroup_file(pid, &buf);
	if (r >= 0 && !buf)
		r = -ENOENT;
	return r < 0 ? r : cgroup_rel_in(buf, ctrl, ret);
}

int cryo_proc_cgroups(pid_t pid, char **ret_v2, char **ret_v1_freezer, struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL, *rel2 = NULL, *rel1 = NULL, *v2 = NULL, *v1 = NULL;
	const char *mnt2 = cryo_cgroup2_mountpoint();
	const char *mnt1 = cryo_cgroup_v1_freezer_mountpoint();
	int r;

	r = read_cgroup_file(pid, &buf);
	if (r == -ESRCH)
		return cryo_error_setx(err, ESRCH, "process %d does not exist", (int)pid);
	if (r < 0)
		return cryo_error_set(err, -r, "read `/proc/%d/cgroup`", (int)pid);
	if (buf && ((mnt2 && cgroup_rel_in(buf, "", &rel2) == -ENOMEM) ||
		    (mnt1 && cgroup_rel_in(buf, "freezer", &rel1) == -ENOMEM)))
		return cryo_error_set(err, ENOMEM, "cgroups of %d", (int)pid);
	if ((rel2 && join(mnt2, rel2, &v2) < 0) || (rel1 && join(mnt1, rel1, &v1) < 0))
		return cryo_error_set(err, ENOMEM, "cgroups of %d", (int)pid);
	*ret_v2 = TAKE_PTR(v2);
	*ret_v1_freezer = TAKE_PTR(v1);
	return 0;
}

/* Append the pids listed (space-separated) in one children file. */
static int add_children(const char *path, pid_t **v, size_t *n, size_t *cap, struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	char *p, *end;
	int r;

	r = cryo_read_file_at(AT_FDCWD, path, 1 << 20, &buf, &len);
	if (r == -ENOENT || r == -ESRCH)
		return 0; /* the thread or process ended */
	if (r < 0)
		return cryo_error_set(err, -r, "read `%s`", path);
	for (p = buf; p && *p;) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		p = end;
		if (pid <= 0)
			continue;
		if (*n == CRYO_PROC_TREE_MAX)
			return cryo_error_setx(err, E2BIG, "more than %d processes in the tree", CRYO_PROC_TREE_MAX);
		if (*n == *cap) {
			pid_t *nv = realloc(*v, (*cap * 2) * sizeof(**v));

			if (!nv)
				return cryo_error_set(err, ENOMEM, "process tree");
			*v = nv;
			*cap *= 2;
		}
		(*v)[(*n)++] = (pid_t)pid;
	}
	return 0;
}

int cryo_proc_tree(pid_t root, pid_t **ret, size_t *ret_n, struct cryo_error *err)
{
	_cleanup_free_ pid_t *v = NULL;
	size_t n = 0, cap = 64, i;
	int r;

	v = malloc(cap * sizeof(*v));
	if (!v)
		return cryo_error_set(err, ENOMEM, "process tree");
	v[n++] = root;
	/* breadth first: v grows while it is walked */
	for (i = 0; i < n; i++) {
		char path[64];
		struct dirent *e;
		DIR *d;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)v[i]);
		d = opendir(path);
		if (!d) {
			if (errno == ENOENT || errno == ESRCH)
				continue;
			return cryo_error_set(err, errno, "open `%s`", path);
		}
		r = 0;
		while (r >= 0 && (e = readdir(d))) {
			char file[128];

			if (e->d_name[0] == '.')
				continue;
			snprintf(file, sizeof(file), "/proc/%d/task/%.20s/children", (int)v[i], e->d_name);
			r = add_children(file, &v, &n, &cap, err);
		}
		closedir(d);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

#define STOP_SIGNALS ((1ULL << (SIGSTOP - 1)) | (1ULL << (SIGTSTP - 1)) | (1ULL << (SIGTTIN - 1)) | (1ULL << (SIGTTOU - 1)))

/* The mask of one "Name:\t<hex>" line of /proc/PID/status, 0 if absent. */
static unsigned long long status_mask(const char *status, const char *name)
{
	const char *p = strstr(status, name);

	return p ? strtoull(p + strlen(name), NULL, 16) : 0;
}

bool cryo_proc_stop_pending(pid_t pid)
{
	_cleanup_free_ char *buf = NULL;
	char path[64];
	size_t len = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (cryo_read_file_at(AT_FDCWD, path, 1 << 16, &buf, &len) < 0)
		return false;
	return ((status_mask(buf, "\nShdPnd:") | status_mask(buf, "\nSigPnd:")) & STOP_SIGNALS) != 0;
}

/*
 * CONFIG_MEM_SOFT_DIRTY, as CRIU finds it: a page written after "4" to
 * clear_refs must show the soft-dirty bit (55) in pagemap. (Without it
 * the write to clear_refs may still succeed: that proves nothing.)
 */
bool cryo_kernel_has_soft_dirty(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	volatile char *page;
	uint64_t pme = 0;
	int cfd, pfd;
	bool ok = false;

	page = mmap(NULL, (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return false;
	page[0] = 1;
	cfd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	pfd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (cfd >= 0 && pfd >= 0 && write(cfd, "4", 1) == 1) {
		page[0] = 2;
		if (pread(pfd, &pme, sizeof(pme), (off_t)((uintptr_t)page / (uintptr_t)psz * sizeof(pme))) ==
		    (ssize_t)sizeof(pme))
			ok = pme & (1ULL << 55);
	}
	if (cfd >= 0)
		close(cfd);
	if (pfd >= 0)
		close(pfd);
	munmap((void *)page, (size_t)psz);
	return ok;
}

bool cryo_kernel_has_userfaultfd(void)
{
#ifdef SYS_userfaultfd
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0) {
		close(fd);
		return true;
	}
	/* EPERM: there, but not for us unprivileged (vm.unprivileged_userfaultfd) */
	return errno == EPERM || access("/dev/userfaultfd", F_OK) == 0;
#else
	return false;
#endif
}

/* target (a /proc link) is path, below it, or path removed ("path (deleted)") */
static bool link_is_under(const char *target, const char *path, size_t n)
{
	return strncmp(target, path, n) == 0 &&
	       (target[n] == '\0' || target[n] == '/' || strcmp(target + n, " (deleted)") == 0);
}

/* Has pid (named comm) an open fd or its cwd at path, or below it? */
static bool proc_holds_path(pid_t pid, const char *path)
{
	char dir[64], link[128], target[PATH_MAX];
	size_t n = strlen(path);
	struct dirent *de;
	bool found = false;
	DIR *d;
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	k = readlink(link, target, sizeof(target) - 1);
	if (k > 0) {
		target[k] = '\0';
		if (link_is_under(target, path, n))
			return true;
	}
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(link, sizeof(link), "%.63s/%.32s", dir, de->d_name);
		k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = '\0';
		found = link_is_under(target, path, n);
	}
	closedir(d);
	return found;
}

static int kill_holding_once(const char *comm, const char *path)
{
	char file[64], name[32];
	struct dirent *de;
	pid_t pids[64];
	int n = 0, i, t;
	DIR *d;

	if (!path || path[0] != '/' || !path[1])
		return -EINVAL;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while (n < (int)ARRAY_SIZE(pids) && (de = readdir(d))) {
		uint64_t v;
		FILE *f;

		if (cryo_parse_u64(de->d_name, INT_MAX, &v) < 0 || (pid_t)v == getpid())
			continue;
		snprintf(file, sizeof(file), "/proc/%d/comm", (int)v);
		f = fopen(file, "re");
		if (!f)
			continue;
		if (!fgets(name, sizeof(name), f))
			name[0] = '\0';
		fclose(f);
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, comm) == 0 && proc_holds_path((pid_t)v, path) && kill((pid_t)v, SIGKILL) == 0)
			pids[n++] = (pid_t)v;
	}
	closedir(d);
	/* gone, or a zombie, within a second: its files are closed then */
	for (i = 0; i < n; i++)
		for (t = 0; t < 100; t++) {
			char st = 0;
			FILE *f;

			snprintf(file, sizeof(file), "/proc/%d/stat", (int)pids[i]);
			f = fopen(file, "re");
			if (!f)
				break;
			if (fscanf(f, "%*d (%*[^)]) %c", &st) != 1)
				st = 0;
			fclose(f);
			if (st == 'Z' || st == 'X')
				break;
			cryo_sleep_ms(10);
		}
	return n;
}

/*
 * Again until a round finds none: a CRIU killed in one round may have
 * been forking, and its child shows up in the next (a process can't fork
 * once it is gone: the wait above makes sure of that).
 */
int cryo_proc_kill_holding(const char *comm, const char *path)
{
	int n, total = 0, round;

	for (round = 0; round < 5; round++) {
		n = kill_holding_once(comm, path);
		if (n < 0)
			return total ? total : n;
		total += n;
		if (n == 0)
			break;
	}
	return total;
}
