// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "mountinfo.h"
#include "util.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static char *unescape(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

void cryo_mount_done(struct cryo_mount *m)
{
	if (!m)
		return;
	free(m->root);
	free(m->mountpoint);
	free(m->fstype);
	free(m->source);
	free(m->options);
	*m = (struct cryo_mount){ 0 };
}

/*
 * Parse one mountinfo line:
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 * Optional fields end at the lone "-".
 */
static int parse_line(char *line, struct cryo_mount *ret)
{
	char *f[64] = { 0 }, *save = NULL, *tok;
	size_t n = 0, dash;
	unsigned long long id;
	unsigned maj, min;
	struct cryo_mount m = { 0 };

	for (tok = strtok_r(line, " \n", &save); tok && n < ARRAY_SIZE(f); tok = strtok_r(NULL, " \n", &save))
		f[n++] = tok;
	if (n < 7)
		return -EINVAL;
	for (dash = 6; dash < n && strcmp(f[dash], "-") != 0; dash++)
		;
	if (dash + 2 >= n)
		return -EINVAL;
	if (sscanf(f[0], "%llu", &id) != 1 || sscanf(f[2], "%u:%u", &maj, &min) != 2)
		return -EINVAL;
	m.mnt_id = id;
	m.dev = makedev(maj, min);
	m.root = unescape(f[3]);
	m.mountpoint = unescape(f[4]);
	m.fstype = unescape(f[dash + 1]);
	m.source = unescape(f[dash + 2]);
	m.options = unescape(dash + 3 < n ? f[dash + 3] : "");
	if (!m.root || !m.mountpoint || !m.fstype || !m.source || !m.options) {
		cryo_mount_done(&m);
		return -ENOMEM;
	}
	*ret = m;
	return 0;
}

static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/*
 * Call fn for each mount of /proc/self/mountinfo, in its order. fn may
 * keep m (moving it out and leaving it zeroed); what it leaves is freed.
 * A negative return of fn stops the walk and is returned, a positive one
 * stops it with 0.
 */
static int walk(int (*fn)(struct cryo_mount *m, void *userdata), void *userdata, struct cryo_error *err)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return cryo_error_set(err, errno, "open /proc/self/mountinfo");
	while (getline(&line, &cap, f) > 0) {
		struct cryo_mount m;
		int r = parse_line(line, &m);

		if (r == -ENOMEM)
			return cryo_error_set(err, ENOMEM, "parse /proc/self/mountinfo");
		if (r < 0)
			continue;
		r = fn(&m, userdata);
		cryo_mount_done(&m);
		if (r)
			return r < 0 ? r : 0;
	}
	return 0;
}

/* What cryo_mountinfo_find_fd() looks for, and the mount it found. */
struct find {
	struct statx stx;
	bool have_id;
	const char *target;
	struct cryo_mount best;
};

static int find_one(struct cryo_mount *m, void *userdata)
{
	struct find *f = userdata;

	if (f->have_id ? m->mnt_id != f->stx.stx_mnt_id
			: (m->dev != makedev(f->stx.stx_dev_major, f->stx.stx_dev_minor) ||
			   !path_under(f->target, m->mountpoint)))
		return 0;
	/* later lines are mounted on top of earlier ones */
	cryo_mount_done(&f->best);
	f->best = *m;
	*m = (struct cryo_mount){ 0 };
	return f->have_id;
}

int cryo_mountinfo_find_fd(int fd, struct cryo_mount *ret, struct cryo_error *err)
{
	char self[64], target[4096];
	struct find fnd = { .target = target };
	ssize_t len;
	int r;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_MNT_ID | STATX_BASIC_STATS, &fnd.stx) < 0)
		return cryo_error_set(err, errno, "statx");
	fnd.have_id = fnd.stx.stx_mask & STATX_MNT_ID;

	/* only needed when the kernel predates STATX_MNT_ID (5.8) */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	len = readlink(self, target, sizeof(target) - 1);
	if (len < 0)
		return cryo_error_set(err, errno, "readlink `%s`", self);
	target[len] = '\0';

	r = walk(find_one, &fnd, err);
	if (r < 0) {
		cryo_mount_done(&fnd.best);
		return r;
	}
	if (!fnd.best.mountpoint)
		return cryo_error_setx(err, ENOENT, "`%s` is on no mount listed in /proc/self/mountinfo", target);
	/* mountinfo shows a btrfs subvolume's anonymous dev only on recent kernels */
	fnd.best.dev = makedev(fnd.stx.stx_dev_major, fnd.stx.stx_dev_minor);
	*ret = fnd.best;
	return 0;
}

/* cryo_mountinfo_foreach()'s callback and its data, called by walk() */
struct foreach_call {
	int (*fn)(const struct cryo_mount *m, void *userdata);
	void *userdata;
};

static int call_foreach(struct cryo_mount *m, void *userdata)
{
	const struct foreach_call *c = userdata;
	int r = c->fn(m, c->userdata);

	return r < 0 ? r : 0;
}

int cryo_mountinfo_foreach(int (*fn)(const struct cryo_mount *m, void *userdata), void *userdata,
			   struct cryo_error *err)
{
	struct foreach_call c = { fn, userdata };

	return walk(call_foreach, &c, err);
}

int cryo_mountinfo_find(const char *path, struct cryo_mount *ret, struct cryo_error *err)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", path);
	return cryo_mountinfo_find_fd(fd, ret, err);
}

int cryo_mount_same_fs(const struct cryo_mount *a, const struct cryo_mount *b)
{
	if (a->dev == b->dev)
		return 1;
	return strcmp(a->fstype, b->fstype) == 0 && a->source[0] == '/' && strcmp(a->source, b->source) == 0;
}

/* cryo_umount_prefixed()'s list: the mount points that begin with the prefix */
struct prefixed {
	const char *prefix;
	size_t len;
	char **v;
	size_t n;
};

static int collect_prefixed(const struct cryo_mount *m, void *userdata)
{
	struct prefixed *p = userdata;
	char **v;

	if (strncmp(m->mountpoint, p->prefix, p->len) != 0)
		return 0;
	v = realloc(p->v, (p->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->v = v;
	p->v[p->n] = strdup(m->mountpoint);
	if (!p->v[p->n])
		return -ENOMEM;
	p->n++;
	return 0;
}

/* the longer path first: a mount below another goes before it */
static int deeper_first(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);

	return la < lb ? 1 : la > lb ? -1 : 0;
}

int cryo_umount_prefixed(const char *prefix, struct cryo_error *err)
{
	struct prefixed p = { .prefix = prefix, .len = strlen(prefix) };
	int r, done = 0;
	size_t i;

	if (p.len == 0 || prefix[0] != '/')
		return cryo_error_setx(err, EINVAL, "unmount below `%s`: not an absolute path", prefix);
	r = cryo_mountinfo_foreach(collect_prefixed, &p, err);
	if (r == -ENOMEM)
		r = cryo_error_set(err, ENOMEM, "unmount below `%s`", prefix);
	if (r >= 0 && p.n > 1)
		qsort(p.v, p.n, sizeof(*p.v), deeper_first);
	for (i = 0; r >= 0 && i < p.n; i++) {
		/* detached: a process still in it (a CRIU being killed) does not keep it in our tree */
		if (umount2(p.v[i], MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			done++;
		else if (errno != EINVAL && errno != ENOENT)
			r = cryo_error_set(err, errno, "unmount `%s`", p.v[i]);
	}
	for (i = 0; i < p.n; i++)
		free(p.v[i]);
	free(p.v);
	return r < 0 ? r : done;
}

