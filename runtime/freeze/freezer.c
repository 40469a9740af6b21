// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include "freezer.h"
#include "hold.h"
#include "kmod.h"
#include "log.h"
#include "util.h"

const char *const cryo_freezer_state_names[_CRYO_FREEZER_STATE_MAX] = {
	[CRYO_FREEZER_RUNNING] = "RUNNING",
	[CRYO_FREEZER_FREEZING] = "FREEZING",
	[CRYO_FREEZER_FROZEN] = "FROZEN",
};

const char *const cryo_freezer_backend_names[_CRYO_FREEZER_BACKEND_MAX] = {
	[CRYO_FREEZER_V1] = "v1",
	[CRYO_FREEZER_V2] = "v2",
	[CRYO_FREEZER_KMOD] = "kmod",
};

static const struct cryo_freezer_ops *const backends[_CRYO_FREEZER_BACKEND_MAX] = {
	[CRYO_FREEZER_V1] = &cryo_freezer_v1_ops,
	[CRYO_FREEZER_V2] = &cryo_freezer_v2_ops,
};

/* Largest pause between two freeze requests while waiting for FROZEN. */
#define RETRY_MAX_MS 200
#define RETRY_FIRST_MS 10
#define THREADS_MAX_BYTES (16U << 20)

int cryo_freezer_state_from_string(const char *s, enum cryo_freezer_state *ret, struct cryo_error *err)
{
	size_t len, i;

	if (!s)
		return cryo_error_setx(err, EINVAL, "no freezer state");
	len = strlen(s);
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	for (i = 0; i < _CRYO_FREEZER_STATE_MAX; i++) {
		if (strlen(cryo_freezer_state_names[i]) == len && strncmp(s, cryo_freezer_state_names[i], len) == 0) {
			*ret = (enum cryo_freezer_state)i;
			return 0;
		}
	}
	/* cgroup v1 renamed the seed's RUNNING */
	if (len == 6 && strncmp(s, "THAWED", 6) == 0) {
		*ret = CRYO_FREEZER_RUNNING;
		return 0;
	}
	return cryo_error_setx(err, EINVAL, "unknown freezer state `%.*s` (expected RUNNING, FREEZING or FROZEN)",
			       (int)(len > 64 ? 64 : len), s);
}

int cryo_freezer_backend_from_string(const char *s, enum cryo_freezer_backend *ret, struct cryo_error *err)
{
	size_t i;

	for (i = 0; s && i < _CRYO_FREEZER_BACKEND_MAX; i++) {
		if (strcmp(s, cryo_freezer_backend_names[i]) == 0) {
			*ret = (enum cryo_freezer_backend)i;
			return 0;
		}
	}
	return cryo_error_setx(err, EINVAL, "unknown freezer backend `%.64s` (expected v1, v2 or kmod)", s ? s : "");
}

int cryo_freezer_open(enum cryo_freezer_backend backend, const char *path, struct cryo_freezer **ret,
		      struct cryo_error *err)
{
	struct cryo_freezer *f;
	int r;

	const struct cryo_freezer_ops *ops = NULL, *file_ops = NULL;

	if ((unsigned)backend >= _CRYO_FREEZER_BACKEND_MAX)
		return cryo_error_setx(err, EOPNOTSUPP, "freezer backend `?` is not available");
	if (!path || path[0] != '/')
		return cryo_error_setx(err, EINVAL, "cgroup path `%s` is not absolute", path ? path : "");
	if (backend == CRYO_FREEZER_KMOD) {
		/* the module drives the files of the hierarchy the cgroup is in */
		struct statfs sfs;

		if (!cryo_kmod_available())
			return cryo_error_setx(err, ENODEV, "freezer backend `kmod`: cryo_freezer is not loaded (no %s)",
					       CRYO_KMOD_DEVICE);
		if (statfs(path, &sfs) < 0)
			return cryo_error_set(err, errno, "cgroup `%s`", path);
		file_ops = sfs.f_type == CGROUP2_SUPER_MAGIC ? &cryo_freezer_v2_ops : &cryo_freezer_v1_ops;
		ops = sfs.f_type == CGROUP2_SUPER_MAGIC ? &cryo_freezer_kmod_v2_ops : &cryo_freezer_kmod_v1_ops;
	} else {
		ops = backends[backend];
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return cryo_error_set(err, ENOMEM, "allocate freezer");
	f->ops = ops;
	f->file_ops = file_ops;
	f->fd = -1;
	f->kfd = -1;
	f->cgfd = -1;
	f->path = strdup(path);
	if (!f->path) {
		free(f);
		return cryo_error_set(err, ENOMEM, "allocate freezer");
	}
	f->dirfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (f->dirfd < 0) {
		r = cryo_error_set(err, errno, "open cgroup `%s`", path);
		cryo_freezer_close(f);
		return r;
	}
	r = f->ops->open(f, err);
	if (r < 0) {
		cryo_freezer_close(f);
		return r;
	}
	*ret = f;
	return 0;
}

int cryo_freezer_open_path(const char *path, struct cryo_freezer **ret, struct cryo_error *err)
{
	struct statfs sfs;

	if (!path || path[0] != '/')
		return cryo_error_setx(err, EINVAL, "cgroup path `%s` is not absolute", path ? path : "");
	if (statfs(path, &sfs) < 0)
		return cryo_error_set(err, errno, "cgroup `%s`", path);
	if (sfs.f_type == CGROUP2_SUPER_MAGIC)
		return cryo_freezer_open(CRYO_FREEZER_V2, path, ret, err);
	if (sfs.f_type == CGROUP_SUPER_MAGIC)
		return cryo_freezer_open(CRYO_FREEZER_V1, path, ret, err);
	return cryo_error_setx(err, ENOTDIR, "`%s` is not in a cgroup filesystem", path);
}

int cryo_freezer_open_for(const char *backend, const char *cgroup_v2, const char *cgroup_v1_freezer,
			  struct cryo_freezer **ret, struct cryo_error *err)
{
	enum cryo_freezer_backend b = CRYO_FREEZER_V2;
	int r;

	if (backend) {
		r = cryo_freezer_backend_from_string(backend, &b, err);
		if (r < 0)
			return r;
	} else {
		b = cgroup_v2 ? CRYO_FREEZER_V2 : CRYO_FREEZER_V1;
	}
	if (b == CRYO_FREEZER_V1) {
		if (!cgroup_v1_freezer)
			return cryo_error_setx(err, ENOENT, "no cgroup v1 freezer path recorded");
		return cryo_freezer_open(b, cgroup_v1_freezer, ret, err);
	}
	if (!cgroup_v2)
		return cryo_error_setx(err, ENOENT, "no cgroup2 path recorded");
	return cryo_freezer_open(b, cgroup_v2, ret, err);
}

void cryo_freezer_close(struct cryo_freezer *f)
{
	if (!f)
		return;
	if (f->ops && f->ops->close)
		f->ops->close(f);
	if (f->kfd >= 0)
		close(f->kfd);
	if (f->cgfd >= 0)
		close(f->cgfd);
	if (f->fd >= 0)
		close(f->fd);
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->path);
	free(f);
}

enum cryo_freezer_backend cryo_freezer_backend_of(const struct cryo_freezer *f)
{
	return f->ops->backend;
}

const char *cryo_freezer_path(const struct cryo_freezer *f)
{
	return f->path;
}

int cryo_freezer_get_state(struct cryo_freezer *f, enum cryo_freezer_state *ret, struct cryo_error *err)
{
	return f->ops->get_state(f, ret, err);
}

int cryo_freezer_state_of(const char *backend, const char *cgroup_v2, const char *cgroup_v1_freezer,
			  enum cryo_freezer_state *ret, struct cryo_error *err)
{
	struct cryo_freezer *f = NULL;
	int r;

	r = cryo_freezer_open_for(backend, cgroup_v2, cgroup_v1_freezer, &f, err);
	if (r < 0 || !f)
		return r < 0 ? r : -EIO;
	r = cryo_freezer_get_state(f, ret, err);
	cryo_freezer_close(f);
	return r;
}

/* A growable string for messages that list tasks. */
struct buf {
	char *s;
	size_t len, cap;
};

static void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void buf_printf(struct buf *b, const char *fmt, ...)
{
	char *piece = NULL, *ns;
	va_list ap;
	size_t n;
	int len;

	va_start(ap, fmt);
	len = vasprintf(&piece, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	n = (size_t)len;
	if (b->len + n + 1 > b->cap) {
		size_t ncap = (b->len + n + 1) * 2;

		ns = realloc(b->s, ncap);
		if (!ns) {
			free(piece);
			return;
		}
		b->s = ns;
		b->cap = ncap;
	}
	memcpy(b->s + b->len, piece, n + 1);
	b->len += n;
	free(piece);
}

/* Read a cgroup's list of ids (cgroup.threads, tasks, cgroup.procs). */
static int read_ids(struct cryo_freezer *f, const char *file, pid_t **ret, size_t *ret_n, struct cryo_error *err)
{
	_cleanup_free_ char *data = NULL;
	_cleanup_free_ pid_t *ids = NULL;
	size_t n = 0, cap = 0, len = 0;
	char *p, *save = NULL;
	int r;

	r = cryo_read_file_at(f->dirfd, file, THREADS_MAX_BYTES, &data, &len);
	if (r < 0)
		return cryo_error_set(err, r, "read `%s/%s`", f->path, file);
	for (p = strtok_r(data, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
		uint64_t v;

		if (cryo_parse_u64(p, INT32_MAX, &v) < 0 || v == 0)
			continue;
		if (n == cap) {
			pid_t *ni;

			cap = cap ? cap * 2 : 64;
			ni = realloc(ids, cap * sizeof(*ids));
			if (!ni)
				return cryo_error_set(err, ENOMEM, "read `%s/%s`", f->path, file);
			ids = ni;
		}
		ids[n++] = (pid_t)v;
	}
	*ret = TAKE_PTR(ids);
	*ret_n = n;
	return 0;
}

int cryo_freezer_count_tasks(struct cryo_freezer *f, unsigned *ret, struct cryo_error *err)
{
	pid_t *ids = NULL;
	size_t n = 0;
	int r;

	r = read_ids(f, f->ops->threads_file, &ids, &n, err);
	free(ids);
	if (r < 0)
		return r;
	*ret = (unsigned)n;
	return 0;
}

/* A thread parked by either cgroup freezer sleeps in one of these. */
static bool wchan_is_frozen(const char *w)
{
	return strcmp(w, "do_freezer_trap") == 0 || strcmp(w, "get_signal") == 0 || strcmp(w, "__refrigerator") == 0 ||
	       strcmp(w, "refrigerator") == 0;
}

struct task_info {
	char comm[64];
	char state;
	char wchan[64];
};

static int read_task(pid_t tid, struct task_info *ti)
{
	char path[64], *open_paren, *close_paren;
	_cleanup_free_ char *stat = NULL, *wchan = NULL;
	size_t len = 0;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	r = cryo_read_file_at(AT_FDCWD, path, 4096, &stat, &len);
	if (r < 0)
		return r;
	/* comm may hold spaces and parens: it spans from the first '(' to the last ')' */
	open_paren = strchr(stat, '(');
	close_paren = strrchr(stat, ')');
	if (!open_paren || !close_paren || close_paren < open_paren || close_paren[1] != ' ')
		return -EINVAL;
	snprintf(ti->comm, sizeof(ti->comm), "%.*s", (int)(close_paren - open_paren - 1), open_paren + 1);
	ti->state = close_paren[2];

	snprintf(path, sizeof(path), "/proc/%d/wchan", tid);
	ti->wchan[0] = '\0';
	if (cryo_read_file_at(AT_FDCWD, path, 256, &wchan, &len) == 0)
		snprintf(ti->wchan, sizeof(ti->wchan), "%s", wchan);
	return 0;
}

/* Append "a < b < c" from /proc/TID/stack (innermost first), when readable. */
static void append_stack(struct buf *b, pid_t tid)
{
	_cleanup_free_ char *stack = NULL;
	char path[64], *line, *save = NULL;
	size_t len = 0;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/stack", tid);
	if (cryo_read_file_at(AT_FDCWD, path, 16384, &stack, &len) < 0 || len == 0)
		return;
	for (line = strtok_r(stack, "\n", &save); line && n < 8; line = strtok_r(NULL, "\n", &save)) {
		/* "[<0>] folio_wait_bit_common+0x13e/0x340" */
		char *sym = strchr(line, ']'), *plus;

		sym = sym ? sym + 1 : line;
		while (*sym == ' ')
			sym++;
		plus = strchr(sym, '+');
		if (plus)
			*plus = '\0';
		buf_printf(b, "%s%s", n == 0 ? " [stack: " : " < ", sym);
		n++;
	}
	if (n > 0)
		buf_printf(b, "]");
}

static int describe(struct cryo_freezer *f, bool stuck_only, unsigned max_named, char **ret, unsigned *ret_count,
		    struct cryo_error *err)
{
	pid_t *ids = NULL;
	struct buf b = { 0 };
	unsigned count = 0;
	size_t n = 0, i;
	int r;

	r = read_ids(f, f->ops->threads_file, &ids, &n, err);
	if (r < 0) {
		free(ids);
		return r;
	}
	for (i = 0; i < n; i++) {
		struct task_info ti;

		if (read_task(ids[i], &ti) < 0)
			continue; /* exited meanwhile: it no longer blocks */
		if (stuck_only) {
			if (ti.state != 'D')
				continue;
		} else if (wchan_is_frozen(ti.wchan) || ti.state == 'T' || ti.state == 't' || ti.state == 'Z' ||
			   ti.state == 'X') {
			/* stopped and traced tasks are "frozen enough" (seed 004) */
			continue;
		}
		count++;
		if (count > max_named)
			continue;
		buf_printf(&b, "%spid %d `%s` %c", count > 1 ? "; " : "", ids[i], ti.comm, ti.state);
		if (ti.wchan[0] && strcmp(ti.wchan, "0") != 0)
			buf_printf(&b, " in `%s`", ti.wchan);
		append_stack(&b, ids[i]);
	}
	free(ids);
	if (count > max_named)
		buf_printf(&b, "; and %u more", count - max_named);
	if (!b.s) {
		b.s = strdup("");
		if (!b.s)
			return cryo_error_set(err, ENOMEM, "describe blockers");
	}
	*ret = b.s;
	*ret_count = count;
	return 0;
}

int cryo_freezer_describe_blockers(struct cryo_freezer *f, unsigned max_named, char **ret, unsigned *ret_count,
				   struct cryo_error *err)
{
	return describe(f, false, max_named, ret, ret_count, err);
}

int cryo_freezer_describe_stuck(struct cryo_freezer *f, unsigned max_named, char **ret, unsigned *ret_count,
				struct cryo_error *err)
{
	return describe(f, true, max_named, ret, ret_count, err);
}

static void thaw_back(struct cryo_freezer *f)
{
	struct cryo_error terr = CRYO_ERROR_INIT;

	if (f->ops->thaw(f, &terr) < 0) {
		cryo_warn("thaw back `%s` after the failed freeze: %s", f->path, terr.msg);
		cryo_error_clear(&terr);
	}
}

/*
 * Why a retry loop inside the deadline: v1 marks tasks freezing once per
 * write and a task that forks or is woken at the wrong moment can miss the
 * kick and stay FREEZING until the next write (the seed's "userspace
 * retries after EBUSY"). v2 re-evaluates by itself, so its retries are
 * cheap no-ops unless THAW_RETRY asks for a full thaw + freeze.
 */
int cryo_freezer_freeze(struct cryo_freezer *f, int64_t timeout_ms, unsigned flags, struct cryo_error *err)
{
	_cleanup_free_ char *blockers = NULL;
	enum cryo_freezer_state st;
	int64_t start = cryo_now_ms(), deadline, step = RETRY_FIRST_MS;
	unsigned count = 0, attempts = 1;
	int r;

	if (timeout_ms < 0)
		timeout_ms = 0;
	deadline = start + timeout_ms;

	r = f->ops->get_state(f, &st, err);
	if (r < 0)
		return r;
	if (st == CRYO_FREEZER_FROZEN) {
		if (flags & CRYO_FREEZER_STRICT)
			return cryo_error_setx(err, EALREADY, "cgroup `%s` is already FROZEN", f->path);
		return 0;
	}
	if (cryo_fault("freeze"))
		return cryo_error_setx(err, EIO, "freeze `%s`: injected fault", f->path);

	r = f->ops->freeze(f, err);
	if (r < 0)
		return r;
	for (;;) {
		int64_t now = cryo_now_ms(), until = now + step;

		if (until > deadline)
			until = deadline;
		r = f->ops->wait(f, CRYO_FREEZER_FROZEN, until, err);
		if (r == 0) {
			cryo_debug("froze `%s` in %lld ms after %u request(s)", f->path,
				   (long long)(cryo_now_ms() - start), attempts);
			return 0;
		}
		if (r != -ETIMEDOUT)
			goto undo;
		cryo_error_clear(err);
		if (cryo_now_ms() >= deadline)
			break;
		if (flags & CRYO_FREEZER_THAW_RETRY) {
			r = f->ops->thaw(f, err);
			if (r < 0)
				goto undo;
		}
		r = f->ops->freeze(f, err);
		if (r < 0)
			goto undo;
		attempts++;
		step = step * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : step * 2;
	}

	if (!(flags & CRYO_FREEZER_KEEP_FREEZING) && f->ops->parks_in_place) {
		/* thawed, the parked tasks are back in their sleeps; the blockers stay in D */
		thaw_back(f);
		r = cryo_freezer_describe_stuck(f, 8, &blockers, &count, err);
		if (r < 0)
			return r;
	} else {
		r = cryo_freezer_describe_blockers(f, 8, &blockers, &count, err);
		if (r < 0)
			goto undo;
		if (!(flags & CRYO_FREEZER_KEEP_FREEZING))
			thaw_back(f);
	}
	return cryo_error_setx(err, EBUSY, "%u task%s of `%s` did not freeze in %lld ms (%u request%s)%s%s; %s", count,
			       count == 1 ? "" : "s", f->path, (long long)timeout_ms, attempts, attempts == 1 ? "" : "s",
			       count ? ": " : "", blockers,
			       (flags & CRYO_FREEZER_KEEP_FREEZING) ? "left FREEZING" : "thawed back to RUNNING");

undo:
	if (!(flags & CRYO_FREEZER_KEEP_FREEZING))
		thaw_back(f);
	return r;
}

int cryo_freezer_thaw(struct cryo_freezer *f, int64_t timeout_ms, unsigned flags, struct cryo_error *err)
{
	enum cryo_freezer_state st;
	int r;

	r = f->ops->get_state(f, &st, err);
	if (r < 0)
		return r;
	if (st == CRYO_FREEZER_RUNNING) {
		if (flags & CRYO_FREEZER_STRICT)
			return cryo_error_setx(err, EALREADY, "cgroup `%s` is not frozen (RUNNING)", f->path);
		return 0;
	}
	r = f->ops->thaw(f, err);
	if (r < 0)
		return r;
	if (timeout_ms < 0)
		timeout_ms = 0;
	r = f->ops->wait(f, CRYO_FREEZER_RUNNING, cryo_now_ms() + timeout_ms, err);
	if (r == -ETIMEDOUT) {
		cryo_error_clear(err);
		return cryo_error_setx(err, ETIMEDOUT, "cgroup `%s` did not thaw in %lld ms", f->path,
				       (long long)timeout_ms);
	}
	return r;
}

static int signal_all(struct cryo_freezer *f, int sig, unsigned *ret_sent, struct cryo_error *err)
{
	pid_t *ids = NULL;
	unsigned sent = 0;
	size_t n = 0, i;
	int r;

	/* processes, not threads: a signal goes to a whole thread group */
	r = read_ids(f, f->ops->procs_file, &ids, &n, err);
	for (i = 0; r == 0 && i < n; i++) {
		if (kill(ids[i], sig) == 0)
			sent++;
		else if (errno != ESRCH)
			r = cryo_error_set(err, errno, "send signal %d to pid %d", sig, ids[i]);
	}
	free(ids);
	if (r < 0)
		return r;
	*ret_sent = sent;
	return 0;
}

int cryo_freezer_kill_all(struct cryo_freezer *f, int sig, int64_t timeout_ms, struct cryo_error *err)
{
	int64_t deadline = cryo_now_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
	unsigned left = 0, sent = 0, round;
	enum cryo_freezer_state before;
	int r;

	if (sig <= 0 || sig >= _NSIG)
		return cryo_error_setx(err, EINVAL, "invalid signal %d", sig);
	if (sig == SIGKILL && f->ops->kill) {
		r = f->ops->kill(f, err);
		if (r < 0 && r != -EOPNOTSUPP)
			return r;
		if (r == 0)
			goto wait_empty;
		cryo_error_clear(err);
	}

	r = f->ops->get_state(f, &before, err);
	if (r < 0)
		return r;
	/*
	 * Freeze first so no task forks a child we have not signalled yet;
	 * a task that can't freeze (D state) can't fork either. Rounds
	 * catch children forked by tasks that were not yet frozen.
	 */
	for (round = 0; round < 16; round++) {
		struct cryo_error ferr = CRYO_ERROR_INIT;
		int64_t settle;

		r = cryo_freezer_freeze(f, 1000, CRYO_FREEZER_KEEP_FREEZING, &ferr);
		if (r < 0 && r != -EBUSY) {
			cryo_error_move(err, &ferr);
			return cryo_error_prefix(err, "kill all tasks of `%s`", f->path);
		}
		cryo_error_clear(&ferr);
		r = signal_all(f, sig, &sent, err);
		if (r < 0)
			return r;
		if (sig != SIGKILL) {
			/* a paused container stays paused; a running one runs on */
			if (before == CRYO_FREEZER_RUNNING)
				return f->ops->thaw(f, err);
			return 0;
		}
		/* killed tasks only die once thawed */
		r = f->ops->thaw(f, err);
		if (r < 0)
			return r;
		settle = cryo_now_ms() + 200;
		for (;;) {
			r = cryo_freezer_count_tasks(f, &left, err);
			if (r < 0)
				return r;
			if (left == 0 || cryo_now_ms() >= settle || cryo_now_ms() >= deadline)
				break;
			cryo_sleep_ms(1);
		}
		if (left == 0 || cryo_now_ms() >= deadline)
			break;
	}

wait_empty:
	for (;;) {
		r = cryo_freezer_count_tasks(f, &left, err);
		if (r < 0)
			return r;
		if (left == 0)
			return 0;
		if (cryo_now_ms() >= deadline)
			break;
		cryo_sleep_ms(2);
	}
	return cryo_error_setx(err, EBUSY, "%u task%s of `%s` still alive %lld ms after SIGKILL", left,
			       left == 1 ? "" : "s", f->path, (long long)timeout_ms);
}

/*
 * Switch f to the kmod backend in place: the files' backend it was opened
 * with (and its open fds) goes on underneath. -ENODEV without the module.
 */
static int use_kmod(struct cryo_freezer *f, struct cryo_error *err)
{
	const struct cryo_freezer_ops *ops;
	int r;

	if (f->ops->backend == CRYO_FREEZER_KMOD)
		return 0;
	if (!cryo_kmod_available())
		return cryo_error_setx(err, ENODEV, "cryo_freezer is not loaded");
	ops = f->ops->backend == CRYO_FREEZER_V2 ? &cryo_freezer_kmod_v2_ops : &cryo_freezer_kmod_v1_ops;
	f->cgfd = openat(f->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->cgfd < 0)
		return cryo_error_set(err, errno, "open cgroup `%s`", f->path);
	r = cryo_kmod_open(&f->kfd, err);
	if (r < 0) {
		closep(&f->cgfd);
		return r;
	}
	f->file_ops = f->ops;
	f->ops = ops;
	return 0;
}

/* The files' backend name ("v1", "v2"): what `cryo recover` thaws with once the module is gone. */
static const char *files_backend_name(const struct cryo_freezer *f)
{
	const struct cryo_freezer_ops *ops = f->file_ops ? f->file_ops : f->ops;

	return cryo_freezer_backend_names[ops->backend];
}

int cryo_freezer_freeze_held(struct cryo_freezer *f, int64_t timeout_ms, unsigned flags,
			     const struct cryo_freezer_hold_opts *o, struct cryo_hold **ret, struct cryo_error *err)
{
	struct cryo_error kerr = CRYO_ERROR_INIT;
	enum cryo_freezer_state st;
	struct cryo_hold *h = NULL;
	bool kmod = false;
	int r;

	if (!o || !o->root || !o->name || o->deadline_ms == 0)
		return cryo_error_setx(err, EINVAL, "a held freeze needs a journal and a deadline");
	r = f->ops->get_state(f, &st, err);
	if (r < 0)
		return r;
	if (st == CRYO_FREEZER_FROZEN)
		return cryo_error_setx(err, EALREADY, "cgroup `%s` is already FROZEN", f->path);
	if (cryo_kmod_available()) {
		kmod = use_kmod(f, &kerr) == 0;
		if (!kmod)
			cryo_debug("held freeze of `%s` without cryo_freezer: %s", f->path, kerr.msg);
		cryo_error_clear(&kerr);
	}
	/* the hold (journal, and the watchdog without the module) exists before the freeze it guards */
	r = cryo_hold_acquire(o->root, o->name, CRYO_HOLD_CGROUP_THAW, f->path, files_backend_name(f), o->deadline_ms,
			      (o->detached ? 0 : CRYO_HOLD_UNDO_ON_EXIT) | (kmod ? CRYO_HOLD_KMOD : 0),
			      cryo_freezer_hold_undo, &h, err);
	if (r < 0)
		return r;
	f->hold_ms = kmod ? o->deadline_ms : 0;
	f->hold_detached = o->detached;
	r = cryo_freezer_freeze(f, timeout_ms, flags & ~CRYO_FREEZER_STRICT, err);
	if (r < 0) {
		struct cryo_error herr = CRYO_ERROR_INIT;

		/* KEEP_FREEZING leaves it FREEZING: the deadline still guards it */
		if (flags & CRYO_FREEZER_KEEP_FREEZING)
			cryo_hold_free(h);
		else if (cryo_hold_release(h, &herr) < 0)
			cryo_debug("release the hold of `%s`: %s", f->path, herr.msg);
		cryo_error_clear(&herr);
		f->hold_ms = 0;
		return r;
	}
	*ret = h;
	return 0;
}

int cryo_freezer_thaw_held(struct cryo_freezer *f, struct cryo_hold *h, int64_t timeout_ms, unsigned flags,
			   struct cryo_error *err)
{
	struct cryo_error herr = CRYO_ERROR_INIT;
	int r, lost;

	/*
	 * Thawed first, then the hold ends (and with it the watchdog, so that
	 * it cannot fire on a later freeze). The other way round, a SIGKILL
	 * between the two left the container frozen with no hold to thaw it
	 * (host/parallel_kill_checkpoint, a kill 259 ms in); this way the
	 * watchdog thaws again, which changes nothing. A thaw that failed
	 * keeps the hold: its watchdog (our exit, its deadline) or `cryo
	 * recover` thaws.
	 */
	f->hold_ms = 0;
	r = cryo_freezer_thaw(f, timeout_ms, flags, err);
	if (r < 0) {
		cryo_hold_free(h);
		return r;
	}
	/* -ETIME: the deadline thawed it already */
	lost = cryo_hold_release(h, &herr);
	if (lost < 0) {
		cryo_error_move(err, &herr);
		return lost;
	}
	return 0;
}

int cryo_freezer_thaw_named(struct cryo_freezer *f, const char *root, const char *name, int64_t timeout_ms,
			    unsigned flags, struct cryo_error *err)
{
	struct cryo_error kerr = CRYO_ERROR_INIT;
	int r;

	r = cryo_hold_release_name(root, name, err);
	if (r < 0 && r != -ENOENT && r != -ETIME)
		return r;
	cryo_error_clear(err);
	/* a detached kernel hold (`cryo freeze --deadline` with the module) is dropped by the kmod thaw */
	if (cryo_kmod_available() && use_kmod(f, &kerr) < 0)
		cryo_debug("thaw `%s` without cryo_freezer: %s", f->path, kerr.msg);
	cryo_error_clear(&kerr);
	return cryo_freezer_thaw(f, timeout_ms, flags, err);
}

static int open_rec(const struct cryo_hold_rec *rec, struct cryo_freezer **ret, struct cryo_error *err)
{
	enum cryo_freezer_backend b = CRYO_FREEZER_V2;
	int r;

	*ret = NULL;
	r = cryo_freezer_backend_from_string(rec->backend, &b, err);
	if (r >= 0)
		r = cryo_freezer_open(b, rec->target, ret, err);
	if (r == -ENOENT) {
		/* the cgroup is gone: nothing is frozen or running in it any more */
		cryo_error_clear(err);
		return 0;
	}
	return r;
}

int cryo_freezer_kill_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	struct cryo_freezer *f = NULL;
	int r;

	r = open_rec(rec, &f, err);
	if (r < 0 || !f)
		return r;
	r = cryo_freezer_kill_all(f, SIGKILL, 5000, err);
	cryo_freezer_close(f);
	return r;
}

int cryo_freezer_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	struct cryo_freezer *f = NULL;
	int r;

	r = open_rec(rec, &f, err);
	if (r < 0 || !f)
		return r;
	r = f->ops->thaw(f, err);
	cryo_freezer_close(f);
	return r;
}
