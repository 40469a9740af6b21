// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sys/capability.h>

#include "fsfreeze.h"
#include "hold.h"
#include "kmod.h"
#include "log.h"
#include "mountinfo.h"
#include "state.h"
#include "util.h"
#include "watchdog.h"

#define JOURNAL_DIR ".fsfreeze"
#define MAX_HOLDS 64
#define LOCK_TIMEOUT_MS 10000
#define CALL_TIMEOUT_MS 10000
#define JOURNAL_MAX (1U << 20)

/* The filesystem to act on, pinned by an fd on it (the ioctls go through it). */
struct target {
	int fd;
	struct cryo_mount m;
	char key[32];      /* "<major>:<minor>": names journal and socket */
	int dirfd;         /* <state_dir>/.fsfreeze */
	char *dirpath;
	int lockfd;        /* a flock on the journal dir (its own open file: never shared with a watchdog) */
	int holdsfd;       /* the hold journal (hold.h), where the watchdog journals the freeze for `cryo recover` */
};

/* The freeze's entry in the hold journal: `fs@<major>:<minor>`. */
static void hold_name(const struct target *t, char *buf, size_t size)
{
	snprintf(buf, size, "fs@%s", t->key);
}

/*
 * Nothing stays behind in the state dir once no freeze is left: the
 * journal dir goes when it is empty. Only under the lock, which every
 * user of the dir takes and then checks the dir is still linked.
 */
static void remove_dir_if_empty(struct target *t)
{
	if (t->lockfd >= 0 && t->dirpath && rmdir(t->dirpath) == 0)
		cryo_debug("removed the empty `%s`", t->dirpath);
}

static void target_done(struct target *t)
{
	remove_dir_if_empty(t);
	closep(&t->fd);
	closep(&t->dirfd);
	closep(&t->lockfd);
	closep(&t->holdsfd);
	free(t->dirpath);
	t->dirpath = NULL;
	cryo_mount_done(&t->m);
}

static const char *owner_of(const struct cryo_fsfreeze_opts *o)
{
	return o->owner ? o->owner : "cli";
}

static int open_target(const char *path, bool for_freeze, const struct cryo_fsfreeze_opts *o, struct target *t,
		       struct cryo_error *err)
{
	struct statx stx;
	int r;

	*t = (struct target){ .fd = -1, .dirfd = -1, .lockfd = -1, .holdsfd = -1 };
	/* O_RDONLY of a directory: no write, no atime update, works on a frozen fs */
	t->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);
	if (t->fd < 0) {
		if (errno == ENOTDIR)
			return cryo_error_setx(err, ENOTDIR, "`%s` is not a directory: name the mount point of the filesystem", path);
		return cryo_error_set(err, errno, "open `%s`", path);
	}
	r = cryo_mountinfo_find_fd(t->fd, &t->m, err);
	if (r < 0)
		return cryo_error_prefix(err, "find the mount holding `%s`", path);
	snprintf(t->key, sizeof(t->key), "%u:%u", major(t->m.dev), minor(t->m.dev));

	if (for_freeze && !(o->flags & CRYO_FSFREEZE_FORCE)) {
		if (statx(t->fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) < 0)
			return cryo_error_set(err, errno, "statx `%s`", path);
		if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
			return cryo_error_setx(err, EINVAL,
					       "`%s` is not a mount point: freezing it would freeze the whole %s filesystem "
					       "mounted at `%s` (%s); name that mount point, or pass --force",
					       path, t->m.fstype, t->m.mountpoint, t->m.source);
	}
	return 0;
}

static int open_journal_dir(const struct cryo_fsfreeze_opts *o, bool create, struct target *t, struct cryo_error *err)
{
	int r;

	if (!o->state_dir)
		return cryo_error_setx(err, EINVAL, "no state dir given");
	free(t->dirpath);
	if (asprintf(&t->dirpath, "%s/%s", o->state_dir, JOURNAL_DIR) < 0) {
		t->dirpath = NULL;
		return cryo_error_set(err, ENOMEM, "state dir");
	}
	if (create) {
		r = cryo_mkdir_p(t->dirpath, 0700);
		if (r < 0)
			return cryo_error_set(err, -r, "create `%s`", t->dirpath);
	}
	t->dirfd = open(t->dirpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->dirfd < 0)
		return cryo_error_set(err, errno, "open `%s`", t->dirpath);
	return 0;
}

/* Try to lock the journal dir (a new open file of it, so no watchdog shares it): 0, -EWOULDBLOCK, -errno. */
static int try_lock_dir(struct target *t)
{
	t->lockfd = openat(t->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->lockfd < 0)
		return -errno;
	if (flock(t->lockfd, LOCK_EX | LOCK_NB) < 0) {
		int r = -errno;

		closep(&t->lockfd);
		return r;
	}
	return 0;
}

/*
 * Serialises cryo commands on the journal; the watchdog never waits for
 * it (a command holding it may be waiting for the watchdog's reply). The
 * dir may have been removed as empty while we waited: then make it anew.
 */
static int lock_target(struct target *t, const struct cryo_fsfreeze_opts *o, bool create, struct cryo_error *err)
{
	int64_t until = cryo_now_ms() + LOCK_TIMEOUT_MS, delay = 1;
	int r;

	for (;;) {
		struct stat st;

		if (t->dirfd < 0) {
			r = open_journal_dir(o, create, t, err);
			if (r < 0)
				return r;
		}
		r = try_lock_dir(t);
		if (r == 0 && fstat(t->lockfd, &st) == 0 && st.st_nlink > 0)
			return 0;
		if (r == 0) {
			/* removed while we waited */
			closep(&t->lockfd);
			closep(&t->dirfd);
			continue;
		}
		if (r != -EWOULDBLOCK)
			return cryo_error_set(err, -r, "lock `%s`", t->dirpath);
		if (cryo_now_ms() >= until)
			return cryo_error_setx(err, EBUSY, "another cryo command holds the lock of `%s` for more than %d ms",
					       t->dirpath, LOCK_TIMEOUT_MS);
		cryo_sleep_ms(delay);
		delay = delay < 64 ? delay * 2 : 64;
	}
}

/* ---- safety checks ---------------------------------------------------- */

/* The mount of path, or of its nearest existing ancestor (a staging dir may not exist yet). */
static int mount_of_existing(const char *path, struct cryo_mount *ret, struct cryo_error *err)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	char p[PATH_MAX];
	int r;

	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return cryo_error_setx(err, ENAMETOOLONG, "path `%.64s...` is too long", path);
	for (;;) {
		char *slash;

		r = cryo_mountinfo_find(p, ret, &e);
		if (r != -ENOENT) {
			if (r < 0)
				cryo_error_move(err, &e);
			cryo_error_clear(&e);
			return r;
		}
		slash = strrchr(p, '/');
		if (!slash || slash == p) {
			cryo_error_move(err, &e);
			return r;
		}
		*slash = '\0';
	}
}

static int refuse_if_same(const struct target *t, const char *path, const char *why, struct cryo_error *err)
{
	struct cryo_mount m = { 0 };
	int r, same;

	r = mount_of_existing(path, &m, err);
	if (r < 0)
		return cryo_error_prefix(err, "check `%s`", path);
	same = cryo_mount_same_fs(&t->m, &m);
	cryo_mount_done(&m);
	if (same)
		return cryo_error_setx(err, EDEADLK, "refusing to freeze `%s` (%s on %s): it is the filesystem holding %s",
				       t->m.mountpoint, t->m.fstype, t->m.source, why);
	return 0;
}

static int check_target(const struct target *t, const struct cryo_fsfreeze_opts *o, struct cryo_error *err)
{
	_cleanup_free_ char *why = NULL;
	size_t i;
	int r;

	r = refuse_if_same(t, "/",
			   "`/`; freezing it would hang the host, cryo and its watchdog included. Give the container "
			   "a rootfs on a filesystem of its own, e.g. a loop-mounted ext4 or xfs image",
			   err);
	if (r < 0)
		return r;
	if (asprintf(&why, "cryo's state dir `%s` (--root), where the freeze's journal and watchdog live: the thaw "
			   "itself would block on it. Use a --root on another filesystem",
		     o->state_dir) < 0)
		return cryo_error_set(err, ENOMEM, "check");
	r = refuse_if_same(t, o->state_dir, why, err);
	if (r < 0)
		return r;
	for (i = 0; o->keep_writable && o->keep_writable[i]; i++) {
		free(why);
		why = NULL;
		if (i >= 64)
			return cryo_error_setx(err, E2BIG, "more than 64 paths to keep writable");
		if (asprintf(&why, "`%s`, which must stay writable while the filesystem is frozen (image, staging "
				   "or log): a write there would sleep uninterruptibly until thaw. Put it on another filesystem",
			     o->keep_writable[i]) < 0)
			return cryo_error_set(err, ENOMEM, "check");
		r = refuse_if_same(t, o->keep_writable[i], why, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int cryo_fsfreeze_check_target(const char *path, const struct cryo_fsfreeze_opts *o, struct cryo_error *err)
{
	_cleanup_(target_done) struct target t = { .fd = -1, .dirfd = -1, .lockfd = -1, .holdsfd = -1 };
	int r;

	r = open_target(path, true, o, &t, err);
	if (r < 0)
		return r;
	return check_target(&t, o, err);
}

static bool have_cap_sys_admin(void)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		return true; /* let the kernel decide */
	if (cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &v) < 0)
		v = CAP_SET;
	cap_free(caps);
	return v == CAP_SET;
}

static int explain_freeze_error(const struct target *t, int errnum, struct cryo_error *err)
{
	switch (errnum) {
	case EOPNOTSUPP:
		return cryo_error_setx(err, EOPNOTSUPP,
				       "cannot freeze `%s`: its filesystem (%s) does not support freezing (FIFREEZE: %s); "
				       "overlayfs, tmpfs and other filesystems without their own block device cannot be "
				       "frozen. Give the container a rootfs on a filesystem of its own, e.g. a loop-mounted "
				       "ext4 or xfs image (see examples/)",
				       t->m.mountpoint, t->m.fstype, strerror(EOPNOTSUPP));
	case EPERM:
		return cryo_error_setx(err, EPERM,
				       "cannot freeze `%s`: freezing a filesystem needs CAP_SYS_ADMIN in the initial user "
				       "namespace (FIFREEZE: %s)",
				       t->m.mountpoint, strerror(EPERM));
	case EBUSY:
		return cryo_error_setx(err, EBUSY,
				       "cannot freeze `%s`: it is already frozen, and not by cryo (no live cryo hold): "
				       "fsfreeze(8), a backup agent, LVM or a cryo watchdog that was killed. cryo does not "
				       "take over a freeze it did not make; its owner thaws it, or `cryo fsthaw --force "
				       "--path %s`",
				       t->m.mountpoint, t->m.mountpoint);
	case EINVAL:
		return cryo_error_setx(err, EINVAL, "cannot freeze `%s` (%s on %s): the kernel says it has no block device to freeze (FIFREEZE: %s)",
				       t->m.mountpoint, t->m.fstype, t->m.source, strerror(EINVAL));
	default:
		return cryo_error_set(err, errnum, "freeze `%s` (%s on %s)", t->m.mountpoint, t->m.fstype, t->m.source);
	}
}

/* ---- the journal ---------------------------------------------------------- */

static void json_putp(struct json_object **o)
{
	json_object_put(*o);
}

static struct json_object *journal_load(const struct target *t)
{
	_cleanup_free_ char *buf = NULL;
	char name[48];

	snprintf(name, sizeof(name), "%s.json", t->key);
	if (cryo_read_file_at(t->dirfd, name, JOURNAL_MAX, &buf, NULL) < 0)
		return NULL;
	return json_tokener_parse(buf);
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int64_t jint(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return 0;
	return json_object_get_int64(v);
}

/* This owner's entry in the journal's list of holds lost to a deadline or to the holder's exit. */
static struct json_object *journal_lost(struct json_object *j, const char *owner)
{
	struct json_object *lost, *found = NULL;
	size_t i;

	if (!j || !json_object_object_get_ex(j, "lost", &lost) || !json_object_is_type(lost, json_type_array))
		return NULL;
	for (i = 0; i < json_object_array_length(lost); i++) {
		struct json_object *e = json_object_array_get_idx(lost, i);
		const char *o = jstr(e, "owner");

		if (o && strcmp(o, owner) == 0)
			found = e;
	}
	return found;
}

static int64_t holds_count(struct json_object *j)
{
	struct json_object *h;

	if (!j || !json_object_object_get_ex(j, "holds", &h) || !json_object_is_type(h, json_type_array))
		return 0;
	return (int64_t)json_object_array_length(h);
}

/*
 * Drop owner's records from the list of lost holds of a journal whose
 * watchdog is gone; the journal goes with the last one (nothing else is
 * left to tell) unless it still says frozen.
 */
static void journal_forget_lost_if(const struct target *t, struct json_object *j,
				   bool (*drop)(const char *owner, const void *data), const void *data)
{
	struct json_object *lost, *keep;
	const char *state = jstr(j, "state"), *text;
	char name[48];
	size_t i;

	if (!json_object_object_get_ex(j, "lost", &lost) || !json_object_is_type(lost, json_type_array))
		return;
	keep = json_object_new_array();
	if (!keep)
		return;
	for (i = 0; i < json_object_array_length(lost); i++) {
		struct json_object *e = json_object_array_get_idx(lost, i);
		const char *o = jstr(e, "owner");

		if (!o || !drop(o, data))
			json_object_array_add(keep, json_object_get(e));
	}
	snprintf(name, sizeof(name), "%s.json", t->key);
	if (json_object_array_length(keep) == 0 && !(state && strcmp(state, "frozen") == 0)) {
		json_object_put(keep);
		unlinkat(t->dirfd, name, 0);
		return;
	}
	json_object_object_add(j, "lost", keep);
	text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY);
	(void)cryo_write_file_atomic_at(t->dirfd, name, text, strlen(text), 0600, true);
}

static bool is_owner(const char *owner, const void *data)
{
	return strcmp(owner, data) == 0;
}

static void journal_forget_lost(const struct target *t, struct json_object *j, const char *owner)
{
	journal_forget_lost_if(t, j, is_owner, owner);
}

/*
 * No watchdog answers for this filesystem: tell the owner what the journal
 * says happened to its hold.
 */
static int explain_no_hold(const struct target *t, const char *owner, const char *what, bool alive,
			   struct cryo_error *err)
{
	_cleanup_(json_putp) struct json_object *j = journal_load(t);
	struct json_object *lost = journal_lost(j, owner);
	const char *state = jstr(j, "state");

	if (lost) {
		int r = cryo_error_setx(err, EINVAL,
					"cannot %s `%s`: already thawed by %s %" PRId64 " ms after owner `%s` froze it "
					"(timeout %" PRId64 " ms): the consistency window was lost",
					what, t->m.mountpoint, jstr(lost, "reason") ? jstr(lost, "reason") : "timeout",
					jint(lost, "after_ms"), owner, jint(lost, "timeout_ms"));

		/* told at its thaw: the freeze is over for this owner, and its record goes */
		if (!alive && strcmp(what, "thaw") == 0)
			journal_forget_lost(t, j, owner);
		return r;
	}
	if (alive)
		return cryo_error_setx(err, EINVAL,
				       "cannot %s `%s`: it is frozen by cryo, but not for owner `%s` (%" PRId64 " other "
				       "hold(s) in its journal); each owner thaws only its own hold, --force thaws all",
				       what, t->m.mountpoint, owner, holds_count(j));
	if (state && strcmp(state, "frozen") == 0)
		return cryo_error_setx(err, EIO,
				       "cannot %s `%s`: its journal says it is frozen, but its watchdog (pid %" PRId64 ") "
				       "is gone, so no deadline will thaw it; thaw it with `cryo fsthaw --force --path %s`",
				       what, t->m.mountpoint, jint(j, "watchdog_pid"), t->m.mountpoint);
	if (state && strncmp(state, "thawed", 6) == 0)
		return cryo_error_setx(err, EINVAL,
				       "cannot %s `%s`: it is not frozen: cryo thawed it already (journal state `%s`) "
				       "and owner `%s` holds no freeze on it",
				       what, t->m.mountpoint, state, owner);
	return cryo_error_setx(err, EINVAL,
			       "cannot %s `%s`: it is not frozen by cryo for owner `%s` (no hold in its journal); "
			       "a filesystem that something else froze is thawed by its owner, or with `cryo fsthaw --force`",
			       what, t->m.mountpoint, owner);
}

/* FIFREEZE said EBUSY and no watchdog answered: a dead watchdog of ours, or someone else. */
static int explain_busy(const struct target *t, struct cryo_error *err)
{
	_cleanup_(json_putp) struct json_object *j = journal_load(t);
	const char *state = jstr(j, "state");

	if (state && strcmp(state, "frozen") == 0)
		return cryo_error_setx(err, EBUSY,
				       "cannot freeze `%s`: it is still frozen by cryo (%" PRId64 " hold(s) in its journal), "
				       "but their watchdog (pid %" PRId64 ") is gone, so no deadline will thaw it; thaw it "
				       "with `cryo fsthaw --force --path %s`",
				       t->m.mountpoint, holds_count(j), jint(j, "watchdog_pid"), t->m.mountpoint);
	return explain_freeze_error(t, EBUSY, err);
}

/* ---- the watchdog backend --------------------------------------------------- */

struct hold {
	char owner[129];
	pid_t pid;
	int pidfd;             /* >= 0 with CRYO_FSFREEZE_THAW_ON_EXIT */
	int64_t since_us;
	uint64_t timeout_ms;
	int64_t deadline_ms;   /* CLOCK_MONOTONIC, 0 = none; suspend does not count */
};

/* Why a hold ended without its owner's thaw; "already thawed by <reason>". */
#define LOST_TIMEOUT "timeout"
#define LOST_HOLDER_EXIT "its holder's exit"
#define LOST_SIGTERM "SIGTERM to its watchdog"
#define LOST_FORCED "a forced thaw"
#define LOST_BEHIND_BACK "a thaw behind cryo's back (fsfreeze -u?)"
#define LOST_RECOVER "`cryo recover` after its watchdog died"

struct lost {
	char owner[129];
	char reason[64];
	int64_t after_ms;
	uint64_t timeout_ms;
};

struct wd {
	struct target *t;
	int lfd;
	int sigfd;
	struct hold holds[MAX_HOLDS];
	size_t n_holds;
	struct lost lost[MAX_HOLDS];
	size_t n_lost;
	const char *state;
	const char *end_state;   /* the journal state once the last hold is lost */
	uint64_t start_time;     /* of the watchdog: tells `cryo recover` a live one from a reused pid */
	int64_t frozen_at_us;
	int64_t thawed_at_us;
	/* the first hold, from cryo_fsfreeze_freeze() */
	const char *owner;
	uint64_t timeout_ms;
	pid_t holder;
	unsigned flags;
	int kfd;                 /* /dev/cryo_freezer holder, or -1: plain FIFREEZE */
};

static void journal_save(struct wd *w)
{
	struct json_object *j = json_object_new_object(), *holds = json_object_new_array(),
			   *lost = json_object_new_array();
	char name[48];
	const char *s;
	size_t i;

	if (!j || !holds || !lost) {
		json_object_put(j);
		json_object_put(holds);
		json_object_put(lost);
		return;
	}
	json_object_object_add(j, "device", json_object_new_string(w->t->key));
	json_object_object_add(j, "mountpoint", json_object_new_string(w->t->m.mountpoint));
	json_object_object_add(j, "fstype", json_object_new_string(w->t->m.fstype));
	json_object_object_add(j, "source", json_object_new_string(w->t->m.source));
	json_object_object_add(j, "watchdog_pid", json_object_new_int64(getpid()));
	json_object_object_add(j, "watchdog_start", json_object_new_uint64(w->start_time));
	json_object_object_add(j, "state", json_object_new_string(w->state));
	json_object_object_add(j, "frozen_at_us", json_object_new_int64(w->frozen_at_us));
	if (w->thawed_at_us) {
		json_object_object_add(j, "thawed_at_us", json_object_new_int64(w->thawed_at_us));
		json_object_object_add(j, "frozen_us", json_object_new_int64(w->thawed_at_us - w->frozen_at_us));
	}
	for (i = 0; i < w->n_holds; i++) {
		struct json_object *h = json_object_new_object();

		json_object_object_add(h, "owner", json_object_new_string(w->holds[i].owner));
		json_object_object_add(h, "pid", json_object_new_int64(w->holds[i].pid));
		json_object_object_add(h, "since_us", json_object_new_int64(w->holds[i].since_us));
		json_object_object_add(h, "timeout_ms", json_object_new_int64((int64_t)w->holds[i].timeout_ms));
		json_object_object_add(h, "deadline_ms", json_object_new_int64(w->holds[i].deadline_ms));
		json_object_array_add(holds, h);
	}
	json_object_object_add(j, "holds", holds);
	for (i = 0; i < w->n_lost; i++) {
		struct json_object *l = json_object_new_object();

		json_object_object_add(l, "owner", json_object_new_string(w->lost[i].owner));
		json_object_object_add(l, "reason", json_object_new_string(w->lost[i].reason));
		json_object_object_add(l, "after_ms", json_object_new_int64(w->lost[i].after_ms));
		json_object_object_add(l, "timeout_ms", json_object_new_int64((int64_t)w->lost[i].timeout_ms));
		json_object_array_add(lost, l);
	}
	json_object_object_add(j, "lost", lost);

	/* the state dir is never the frozen filesystem (check_target), so this cannot block on the freeze */
	snprintf(name, sizeof(name), "%s.json", w->t->key);
	s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY);
	(void)cryo_write_file_atomic_at(w->t->dirfd, name, s, strlen(s), 0600, true);
	json_object_put(j);
}

static struct hold *find_hold(struct wd *w, const char *owner)
{
	size_t i;

	for (i = 0; i < w->n_holds; i++)
		if (strcmp(w->holds[i].owner, owner) == 0)
			return &w->holds[i];
	return NULL;
}

static const struct lost *find_lost(const struct wd *w, const char *owner)
{
	size_t i;

	for (i = w->n_lost; i > 0; i--)
		if (strcmp(w->lost[i - 1].owner, owner) == 0)
			return &w->lost[i - 1];
	return NULL;
}

static void set_deadline(struct hold *h, uint64_t timeout_ms)
{
	h->timeout_ms = timeout_ms;
	h->deadline_ms = timeout_ms ? cryo_now_ms() + (int64_t)timeout_ms : 0;
}

static int add_hold(struct wd *w, const char *owner, pid_t pid, uint64_t timeout_ms, unsigned flags)
{
	struct hold *h;

	if (w->n_holds >= MAX_HOLDS)
		return -E2BIG;
	h = &w->holds[w->n_holds];
	*h = (struct hold){ .pid = pid, .pidfd = -1, .since_us = cryo_now_us() };
	snprintf(h->owner, sizeof(h->owner), "%s", owner);
	set_deadline(h, timeout_ms);
	if (flags & CRYO_FSFREEZE_THAW_ON_EXIT) {
		h->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		if (h->pidfd < 0)
			return -errno;
	}
	w->n_holds++;
	return 0;
}

static void drop_hold(struct wd *w, struct hold *h, const char *lost_reason)
{
	if (lost_reason && w->n_lost < MAX_HOLDS) {
		struct lost *l = &w->lost[w->n_lost++];

		snprintf(l->owner, sizeof(l->owner), "%s", h->owner);
		snprintf(l->reason, sizeof(l->reason), "%s", lost_reason);
		l->after_ms = (cryo_now_us() - h->since_us) / 1000;
		l->timeout_ms = h->timeout_ms;
		if (strcmp(lost_reason, LOST_TIMEOUT) == 0)
			w->end_state = "thawed-by-timeout";
		else if (strcmp(lost_reason, LOST_HOLDER_EXIT) == 0)
			w->end_state = "thawed-holder-exited";
		else if (strcmp(lost_reason, LOST_BEHIND_BACK) == 0)
			w->end_state = "thawed-behind-cryos-back";
		else
			w->end_state = "thawed-by-signal";
	}
	closep(&h->pidfd);
	*h = w->holds[--w->n_holds];
}

/*
 * Record the outcome r of FITHAW and stop listening: the watchdog's work
 * is done. The journal stays only to tell owners whose hold was lost
 * (they read it on thaw or reset); otherwise nothing is left behind.
 */
static int thaw_done(struct wd *w, int r, const char *state)
{
	char sock[48], name[48];

	w->thawed_at_us = cryo_now_us();
	/* EINVAL: someone thawed it behind cryo's back (fsfreeze -u); it is thawed all the same */
	w->state = r == 0 || r == -EINVAL ? state : "thaw-failed";
	if (w->n_lost > 0 || strcmp(w->state, "thaw-failed") == 0) {
		journal_save(w);
	} else {
		snprintf(name, sizeof(name), "%s.json", w->t->key);
		unlinkat(w->t->dirfd, name, 0);
	}
	if (r == 0 || r == -EINVAL) {
		char hold[64];

		hold_name(w->t, hold, sizeof(hold));
		cryo_hold_drop_self(w->t->holdsfd, hold);
	}
	snprintf(sock, sizeof(sock), "%s.sock", w->t->key);
	unlinkat(w->t->dirfd, sock, 0);
	/* a command holding the lock (the thaw that got us here) removes the dir itself */
	if (w->t->lockfd < 0 && try_lock_dir(w->t) == 0) {
		remove_dir_if_empty(w->t);
		closep(&w->t->lockfd);
	}
	/* from now on the main loop exits: a late deadline must never FITHAW a freeze made after this one */
	closep(&w->lfd);
	w->lfd = -1;
	return r;
}

/*
 * The freeze itself. With cryo_freezer.ko loaded the watchdog holds it
 * through /dev/cryo_freezer: should the watchdog itself die (kill -9, OOM),
 * the kernel thaws the filesystem at once instead of leaving it frozen
 * until `cryo recover`. The per-owner deadlines stay the watchdog's. The
 * errors are FIFREEZE's (EBUSY, EOPNOTSUPP, EPERM).
 */
static int wd_freeze(struct wd *w)
{
	int r;

	w->kfd = -1;
	if (cryo_kmod_available() && cryo_kmod_open(&w->kfd, NULL) == 0) {
		r = cryo_kmod_fs_freeze(w->kfd, w->t->fd, 0, NULL);
		if (r < 0)
			closep(&w->kfd);
		return r;
	}
	return ioctl(w->t->fd, FIFREEZE, 0) < 0 ? -errno : 0;
}

/* FITHAW's answer: EINVAL when it was not frozen (thawed behind cryo's back). */
static int wd_thaw(struct wd *w)
{
	if (w->kfd >= 0)
		return cryo_kmod_fs_thaw(w->kfd, w->t->fd, NULL);
	return ioctl(w->t->fd, FITHAW, 0) < 0 ? -errno : 0;
}

static int thaw_now(struct wd *w, const char *state)
{
	return thaw_done(w, wd_thaw(w), state);
}

/*
 * Linux cannot be asked whether a filesystem is frozen, but a second
 * userspace FIFREEZE fails with EBUSY at once, before any sync. If it
 * succeeds, someone thawed the filesystem behind cryo's back (fsfreeze -u)
 * and every hold's consistency window was broken: they are all lost, and
 * the filesystem is frozen again, by this probe, from now on.
 */
static bool thawed_behind_back(struct wd *w)
{
	int64_t t0 = cryo_now_us();

	/*
	 * A kmod hold: since Linux 6.6 a userspace FIFREEZE nests inside a
	 * kernel freeze (and FITHAW cannot undo ours), so the probe would
	 * freeze for good. Before 6.6 a FITHAW behind cryo's back does undo
	 * it; the module then answers RESET_TIMEOUT with EINVAL (0 keeps the
	 * hold without a deadline, as it is), and the filesystem is frozen
	 * again through the module, as by the probe.
	 */
	if (w->kfd >= 0) {
		if (cryo_kmod_fs_reset(w->kfd, w->t->fd, 0, NULL) != -EINVAL)
			return false;
		if (cryo_kmod_fs_freeze(w->kfd, w->t->fd, 0, NULL) < 0)
			cryo_debug("freeze `%s` again after a thaw behind cryo's back failed", w->t->m.mountpoint);
	} else if (ioctl(w->t->fd, FIFREEZE, 0) < 0) {
		return false;
	}
	while (w->n_holds > 0)
		drop_hold(w, &w->holds[0], LOST_BEHIND_BACK);
	w->frozen_at_us = t0;
	return true;
}

static void handle_request(struct wd *w, int conn, char *req)
{
	char reply[CRYO_WATCHDOG_MSG_MAX], owner[129];
	unsigned long long ms;
	unsigned flags;
	struct hold *h;
	int pid, r;

	if (sscanf(req, "HOLD %llu %d %u %128s", &ms, &pid, &flags, owner) == 4) {
		/* a new hold must not join holds whose window is already broken */
		thawed_behind_back(w);
		h = find_hold(w, owner);
		if (h) {
			snprintf(reply, sizeof(reply), "%d owner `%s` already holds `%s` frozen (since %" PRId64 " ms)", EBUSY,
				 owner, w->t->m.mountpoint, (cryo_now_us() - h->since_us) / 1000);
		} else {
			r = add_hold(w, owner, pid, ms, flags);
			if (r < 0)
				snprintf(reply, sizeof(reply), "%d cannot add a hold: %s", -r, strerror(-r));
			else
				snprintf(reply, sizeof(reply), "0 held %zu", w->n_holds);
			journal_save(w);
		}
	} else if (sscanf(req, "RESET %llu %128s", &ms, owner) == 2) {
		if (thawed_behind_back(w)) {
			/* nobody holds the probe's freeze */
			thaw_now(w, "thawed-behind-cryos-back");
		}
		h = find_hold(w, owner);
		if (h) {
			set_deadline(h, ms);
			journal_save(w);
			snprintf(reply, sizeof(reply), "0 reset");
		} else if (find_lost(w, owner)) {
			snprintf(reply, sizeof(reply), "%d lost", EINVAL);
		} else {
			snprintf(reply, sizeof(reply), "%d none", EINVAL);
		}
	} else if (sscanf(req, "THAW %128s", owner) == 1 || strcmp(req, "THAWALL") == 0) {
		bool all = strcmp(req, "THAWALL") == 0;

		h = all ? NULL : find_hold(w, owner);
		if (!all && !h) {
			snprintf(reply, sizeof(reply), "%d %s", EINVAL, find_lost(w, owner) ? "lost" : "none");
		} else {
			bool last = all || w->n_holds == 1;

			while (all && w->n_holds > 0)
				drop_hold(w, &w->holds[0], LOST_FORCED);
			if (!last) {
				drop_hold(w, h, NULL);
				journal_save(w);
				snprintf(reply, sizeof(reply), "0 held %zu", w->n_holds);
			} else {
				r = wd_thaw(w);
				if (h)
					drop_hold(w, h, r == -EINVAL ? LOST_BEHIND_BACK : NULL);
				r = thaw_done(w, r, r == -EINVAL ? "thawed-behind-cryos-back" : "thawed");
				if (r == -EINVAL && !all)
					snprintf(reply, sizeof(reply), "%d lost", EINVAL);
				else if (r < 0 && r != -EINVAL)
					snprintf(reply, sizeof(reply), "%d FITHAW failed: %s", -r, strerror(-r));
				else
					snprintf(reply, sizeof(reply), "0 thawed %" PRId64, w->thawed_at_us - w->frozen_at_us);
			}
		}
	} else {
		snprintf(reply, sizeof(reply), "%d unknown request", EINVAL);
	}
	cryo_watchdog_reply(conn, reply);
}

static int64_t next_deadline(const struct wd *w)
{
	int64_t d = 0;
	size_t i;

	for (i = 0; i < w->n_holds; i++)
		if (w->holds[i].deadline_ms && (!d || w->holds[i].deadline_ms < d))
			d = w->holds[i].deadline_ms;
	return d;
}

/*
 * The watchdog: freeze, then hold the filesystem until the last hold is
 * released, its deadline passes, its holder exits (THAW_ON_EXIT) or
 * someone sends SIGTERM. Only this process ever calls FITHAW for a hold,
 * so a deadline can never thaw a freeze made after the hold ended.
 */
static void watchdog_main(void *data, int ready_fd)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	struct wd *w = data;
	const char *backend;
	size_t n_lost;
	char msg[256], hold[64];
	bool stale;
	sigset_t ss;
	int r;

	prctl(PR_SET_NAME, "cryo-fsfreeze", 0, 0, 0);
	/* the creator's lock fd was not passed on (detach() closed it) */
	w->t->lockfd = -1;
	if (cryo_pid_start_time(getpid(), &w->start_time) < 0)
		w->start_time = 0;
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	w->sigfd = signalfd(-1, &ss, SFD_CLOEXEC);

	/* journalled first, so that `cryo recover` finds the freeze should this process die at any point */
	hold_name(w->t, hold, sizeof(hold));
	backend = cryo_kmod_available() ? "kmod" : "ioctl";
	r = cryo_hold_put_self(w->t->holdsfd, hold, CRYO_HOLD_FS_THAW, w->t->m.mountpoint, backend, false, &e);
	/* the entry of a dead watchdog stays for `cryo recover` unless the filesystem turns out thawed */
	stale = r == -EEXIST;
	if (r < 0 && !stale) {
		cryo_watchdog_ready(ready_fd, e.status > 0 ? e.status : EIO, e.msg);
		_exit(1);
	}
	cryo_error_clear(&e);
	/* writers block from the start of FIFREEZE (it syncs with SB_FREEZE_WRITE set): the window starts here */
	w->frozen_at_us = cryo_now_us();
	r = -wd_freeze(w);
	if (r == 0 && stale &&
	    cryo_hold_put_self(w->t->holdsfd, hold, CRYO_HOLD_FS_THAW, w->t->m.mountpoint, backend, true, &e) < 0) {
		wd_thaw(w);
		cryo_watchdog_ready(ready_fd, e.status > 0 ? e.status : EIO, e.msg);
		_exit(1);
	}
	if (r) {
		cryo_hold_drop_self(w->t->holdsfd, hold);
		snprintf(msg, sizeof(msg), "FIFREEZE%s: %s", w->kfd >= 0 ? " (cryo_freezer)" : "", strerror(r));
		cryo_watchdog_ready(ready_fd, r, msg);
		_exit(1);
	}
	w->state = "frozen";
	r = cryo_fault("fsfreeze-hold") ? -EIO : add_hold(w, w->owner, w->holder, w->timeout_ms, w->flags);
	if (r < 0) {
		/* nobody would ever thaw it: undo before telling the caller */
		wd_thaw(w);
		cryo_hold_drop_self(w->t->holdsfd, hold);
		snprintf(msg, sizeof(msg), "watch the holder: %s", strerror(-r));
		cryo_watchdog_ready(ready_fd, -r, msg);
		_exit(1);
	}
	journal_save(w);
	cryo_watchdog_ready(ready_fd, 0, NULL);
	n_lost = w->n_lost;

	for (;;) {
		struct pollfd p[2 + MAX_HOLDS];
		int64_t d = next_deadline(w), now;
		size_t n = 0, i;
		int timeout = -1;

		p[n++] = (struct pollfd){ .fd = w->lfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = w->sigfd, .events = POLLIN };
		for (i = 0; i < w->n_holds; i++)
			p[n++] = (struct pollfd){ .fd = w->holds[i].pidfd, .events = POLLIN };
		if (d) {
			now = cryo_now_ms();
			timeout = d > now ? (int)(d - now < 0x7fffffff ? d - now : 0x7fffffff) : 0;
		}
		r = poll(p, n, timeout);
		if (r < 0 && errno != EINTR)
			break;

		if (p[1].revents & POLLIN) {
			while (w->n_holds > 0)
				drop_hold(w, &w->holds[0], LOST_SIGTERM);
			break;
		}
		/* holder exits first: a pidfd slot moves when a hold is dropped */
		/* a dead holder will never ask what happened to its hold: nothing to record */
		for (i = w->n_holds; i > 0; i--)
			if (p[2 + i - 1].revents & POLLIN)
				drop_hold(w, &w->holds[i - 1], NULL);
		now = cryo_now_ms();
		for (i = w->n_holds; i > 0; i--)
			if (w->holds[i - 1].deadline_ms && w->holds[i - 1].deadline_ms <= now)
				drop_hold(w, &w->holds[i - 1], LOST_TIMEOUT);
		if (w->n_holds == 0)
			break;
		if (w->n_lost != n_lost) {
			n_lost = w->n_lost;
			journal_save(w);
		}

		if (p[0].revents & POLLIN) {
			char req[CRYO_WATCHDOG_MSG_MAX];
			int conn = cryo_watchdog_accept(w->lfd, req, sizeof(req));

			if (conn >= 0)
				handle_request(w, conn, req);
			if (w->lfd < 0)
				_exit(0);
		}
	}
	thaw_now(w, w->end_state ? w->end_state : "thawed-by-timeout");
	_exit(0);
}

static int watchdog_hold(struct target *t, const struct cryo_fsfreeze_opts *o, uint64_t timeout_ms,
			 struct cryo_error *err)
{
	char req[256], reply[CRYO_WATCHDOG_MSG_MAX], sock[48];
	struct cryo_error e = CRYO_ERROR_INIT;
	struct wd *w = NULL;
	int keep[4], r, status;
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s.sock", t->key);
	snprintf(req, sizeof(req), "HOLD %" PRIu64 " %d %u %s", timeout_ms, (int)getpid(), o->flags, owner_of(o));
	r = cryo_watchdog_call(t->dirfd, sock, req, reply, sizeof(reply), CALL_TIMEOUT_MS, &e);
	if (r == 0) {
		if (sscanf(reply, "%d", &status) != 1 || status != 0) {
			const char *msg = strchr(reply, ' ');

			return cryo_error_setx(err, status > 0 ? status : EIO, "freeze `%s`: %s", t->m.mountpoint,
					       msg ? msg + 1 : reply);
		}
		return 0;
	}
	if (r != -ENOENT && r != -ECONNREFUSED && r != -EPIPE) {
		cryo_error_move(err, &e);
		return cryo_error_prefix(err, "freeze `%s`", t->m.mountpoint);
	}
	cryo_error_clear(&e);

	/* no live watchdog for this filesystem: start one, which freezes it */
	w = calloc(1, sizeof(*w));
	if (!w)
		return cryo_error_set(err, ENOMEM, "freeze");
	*w = (struct wd){ .t = t, .lfd = -1, .sigfd = -1, .kfd = -1, .owner = owner_of(o), .timeout_ms = timeout_ms,
			  .holder = getpid(), .flags = o->flags };
	r = cryo_hold_open_dir(o->state_dir, &t->holdsfd, err);
	if (r < 0) {
		free(w);
		return r;
	}
	r = cryo_watchdog_listen(t->dirfd, sock, &w->lfd, err);
	if (r < 0) {
		free(w);
		return r;
	}
	keep[0] = t->fd;
	keep[1] = t->dirfd;
	keep[2] = w->lfd;
	keep[3] = t->holdsfd;
	r = cryo_watchdog_spawn(watchdog_main, w, keep, ARRAY_SIZE(keep), CALL_TIMEOUT_MS, &pid, &e);
	closep(&w->lfd);
	free(w);
	if (r < 0) {
		unlinkat(t->dirfd, sock, 0);
		if (strncmp(e.msg ? e.msg : "", "FIFREEZE", 8) == 0) {
			cryo_error_clear(&e);
			if (r == -EBUSY)
				return explain_busy(t, err);
			return explain_freeze_error(t, -r, err);
		}
		cryo_error_move(err, &e);
		return cryo_error_prefix(err, "freeze `%s`", t->m.mountpoint);
	}
	cryo_debug("froze `%s` (%s on %s) for `%s`, watchdog pid %d, timeout %" PRIu64 " ms", t->m.mountpoint,
		   t->m.fstype, t->m.source, owner_of(o), (int)pid, timeout_ms);
	return 0;
}

static int recover_one(int dirfd, const char *key, struct json_object *j, const char *reason, struct cryo_error *err);

/* The hold journal's entry of a freeze whose watchdog died, once thawed by other means. */
static void drop_hold_entry(const char *state_dir, const struct target *t)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	char hold[64];

	hold_name(t, hold, sizeof(hold));
	if (cryo_hold_release_name(state_dir, hold, &e) < 0 && e.status != ENOENT)
		cryo_debug("drop hold `%s`: %s", hold, e.msg);
	cryo_error_clear(&e);
}

static int watchdog_thaw(struct target *t, const struct cryo_fsfreeze_opts *o, struct cryo_fsfreeze_thawed *ret,
			 struct cryo_error *err)
{
	_cleanup_(json_putp) struct json_object *j = NULL;
	const char *state;
	char req[256], reply[CRYO_WATCHDOG_MSG_MAX], sock[48], word[16];
	struct cryo_error e = CRYO_ERROR_INIT;
	bool force = o->flags & CRYO_FSFREEZE_FORCE;
	unsigned long long v;
	int r, status;

	snprintf(sock, sizeof(sock), "%s.sock", t->key);
	if (force)
		snprintf(req, sizeof(req), "THAWALL");
	else
		snprintf(req, sizeof(req), "THAW %s", owner_of(o));
	r = cryo_watchdog_call(t->dirfd, sock, req, reply, sizeof(reply), CALL_TIMEOUT_MS, &e);
	if (r == 0) {
		if (sscanf(reply, "%d", &status) != 1)
			return cryo_error_setx(err, EIO, "thaw `%s`: garbled watchdog reply `%s`", t->m.mountpoint, reply);
		if (status == 0 && sscanf(reply, "0 %15s %llu", word, &v) == 2) {
			*ret = (struct cryo_fsfreeze_thawed){ .thawed = strcmp(word, "thawed") == 0 };
			if (ret->thawed)
				ret->frozen_us = v;
			else
				ret->holds_left = (unsigned)v;
			return 0;
		}
		if (status == EINVAL)
			return explain_no_hold(t, owner_of(o), "thaw", true, err);
		return cryo_error_setx(err, status > 0 ? status : EIO, "thaw `%s`: %s", t->m.mountpoint,
				       strchr(reply, ' ') ? strchr(reply, ' ') + 1 : reply);
	}
	if (r != -ENOENT && r != -ECONNREFUSED && r != -EPIPE) {
		cryo_error_move(err, &e);
		return cryo_error_prefix(err, "thaw `%s`", t->m.mountpoint);
	}
	cryo_error_clear(&e);
	if (!force)
		return explain_no_hold(t, owner_of(o), "thaw", false, err);

	/* forced, and no watchdog holds it: thaw whatever froze it */
	j = journal_load(t);
	state = jstr(j, "state");
	if (state && strcmp(state, "frozen") == 0) {
		/* its watchdog died: close its journal too, so its owners learn the window was lost */
		r = recover_one(t->dirfd, t->key, j, LOST_FORCED, err);
		if (r < 0)
			return r;
		drop_hold_entry(o->state_dir, t);
		*ret = (struct cryo_fsfreeze_thawed){ .thawed = true };
		return 0;
	}
	if (ioctl(t->fd, FITHAW, 0) < 0) {
		if (errno == EINVAL)
			return cryo_error_setx(err, EINVAL, "cannot thaw `%s`: it is not frozen (FITHAW: %s)",
					       t->m.mountpoint, strerror(EINVAL));
		if (errno == EPERM)
			return cryo_error_setx(err, EPERM, "cannot thaw `%s`: thawing needs CAP_SYS_ADMIN (FITHAW: %s)",
					       t->m.mountpoint, strerror(EPERM));
		return cryo_error_set(err, errno, "thaw `%s`", t->m.mountpoint);
	}
	*ret = (struct cryo_fsfreeze_thawed){ .thawed = true };
	return 0;
}

static int watchdog_reset(struct target *t, const struct cryo_fsfreeze_opts *o, uint64_t timeout_ms,
			  struct cryo_error *err)
{
	char req[256], reply[CRYO_WATCHDOG_MSG_MAX], sock[48];
	struct cryo_error e = CRYO_ERROR_INIT;
	int r, status;

	snprintf(sock, sizeof(sock), "%s.sock", t->key);
	snprintf(req, sizeof(req), "RESET %" PRIu64 " %s", timeout_ms, owner_of(o));
	r = cryo_watchdog_call(t->dirfd, sock, req, reply, sizeof(reply), CALL_TIMEOUT_MS, &e);
	if (r == 0) {
		if (sscanf(reply, "%d", &status) != 1)
			return cryo_error_setx(err, EIO, "reset timeout of `%s`: garbled watchdog reply `%s`",
					       t->m.mountpoint, reply);
		if (status == 0)
			return 0;
		return explain_no_hold(t, owner_of(o), "reset the timeout of", true, err);
	}
	if (r != -ENOENT && r != -ECONNREFUSED && r != -EPIPE) {
		cryo_error_move(err, &e);
		return cryo_error_prefix(err, "reset timeout of `%s`", t->m.mountpoint);
	}
	cryo_error_clear(&e);
	return explain_no_hold(t, owner_of(o), "reset the timeout of", false, err);
}

/*
 * Backends behind one interface: the kmod (/dev/cryo_freezer, holds by
 * fd with in-kernel deadlines) slots in before the watchdog when present.
 */
struct fsfreeze_backend {
	const char *name;
	bool (*available)(void);
	int (*hold)(struct target *t, const struct cryo_fsfreeze_opts *o, uint64_t timeout_ms, struct cryo_error *err);
	int (*thaw)(struct target *t, const struct cryo_fsfreeze_opts *o, struct cryo_fsfreeze_thawed *ret,
		    struct cryo_error *err);
	int (*reset)(struct target *t, const struct cryo_fsfreeze_opts *o, uint64_t timeout_ms, struct cryo_error *err);
};

static bool always(void)
{
	return true;
}

static const struct fsfreeze_backend backends[] = {
	{ "watchdog", always, watchdog_hold, watchdog_thaw, watchdog_reset },
};

static const struct fsfreeze_backend *backend(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(backends); i++)
		if (backends[i].available())
			return &backends[i];
	return &backends[ARRAY_SIZE(backends) - 1];
}

static int check_owner(const struct cryo_fsfreeze_opts *o, struct cryo_error *err)
{
	int r = cryo_validate_id(owner_of(o), err);

	return r < 0 ? cryo_error_prefix(err, "freeze owner") : 0;
}

int cryo_fsfreeze_freeze(const char *path, uint64_t timeout_ms, const struct cryo_fsfreeze_opts *o,
			 struct cryo_error *err)
{
	_cleanup_(target_done) struct target t = { .fd = -1, .dirfd = -1, .lockfd = -1, .holdsfd = -1 };
	int r;

	r = check_owner(o, err);
	if (r < 0)
		return r;
	if (timeout_ms > INT64_MAX / 2)
		return cryo_error_setx(err, ERANGE, "freeze timeout %" PRIu64 " ms is too long", timeout_ms);
	r = open_target(path, true, o, &t, err);
	if (r < 0)
		return r;
	r = check_target(&t, o, err);
	if (r < 0)
		return r;
	if (!have_cap_sys_admin())
		return explain_freeze_error(&t, EPERM, err);
	if (cryo_fault("fsfreeze-freeze"))
		return cryo_error_setx(err, EIO, "freeze `%s`: injected fault", t.m.mountpoint);
	r = lock_target(&t, o, true, err);
	if (r < 0)
		return cryo_error_prefix(err, "freeze `%s`", path);
	return backend()->hold(&t, o, timeout_ms, err);
}

static int open_existing(const char *path, const char *what, const struct cryo_fsfreeze_opts *o, struct target *t,
			 struct cryo_error *err)
{
	int r;

	r = check_owner(o, err);
	if (r < 0)
		return r;
	r = open_target(path, false, o, t, err);
	if (r < 0)
		return r;
	/* the watchdog would do it with its own privileges: not for a caller the kernel would refuse */
	if (!have_cap_sys_admin())
		return cryo_error_setx(err, EPERM, "cannot %s `%s`: that needs CAP_SYS_ADMIN, as FITHAW does", what,
				       t->m.mountpoint);
	return lock_target(t, o, true, err);
}

int cryo_fsfreeze_thaw(const char *path, const struct cryo_fsfreeze_opts *o, struct cryo_fsfreeze_thawed *ret,
		       struct cryo_error *err)
{
	_cleanup_(target_done) struct target t = { .fd = -1, .dirfd = -1, .lockfd = -1, .holdsfd = -1 };
	struct cryo_fsfreeze_thawed th = { 0 };
	int r;

	r = open_existing(path, "thaw", o, &t, err);
	if (r < 0)
		return r;
	r = backend()->thaw(&t, o, &th, err);
	if (r < 0)
		return r;
	if (ret)
		*ret = th;
	return 0;
}

int cryo_fsfreeze_reset_timeout(const char *path, uint64_t timeout_ms, const struct cryo_fsfreeze_opts *o,
				struct cryo_error *err)
{
	_cleanup_(target_done) struct target t = { .fd = -1, .dirfd = -1, .lockfd = -1, .holdsfd = -1 };
	int r;

	if (timeout_ms > INT64_MAX / 2)
		return cryo_error_setx(err, ERANGE, "freeze timeout %" PRIu64 " ms is too long", timeout_ms);
	r = open_existing(path, "reset the timeout of", o, &t, err);
	if (r < 0)
		return r;
	return backend()->reset(&t, o, timeout_ms, err);
}

/* ---- recovery ----------------------------------------------------------------- */

/* A killed watchdog may linger as a zombie of a subreaper that reaps late. */
static bool is_zombie(pid_t pid)
{
	_cleanup_free_ char *buf = NULL;
	char path[64];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (cryo_read_file_at(AT_FDCWD, path, 4096, &buf, NULL) < 0)
		return true;
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

static bool watchdog_alive(struct json_object *j)
{
	uint64_t start = 0;
	int64_t pid = jint(j, "watchdog_pid");

	if (pid <= 0 || pid > INT32_MAX || cryo_pid_start_time((pid_t)pid, &start) < 0)
		return false;
	return start == (uint64_t)jint(j, "watchdog_start") && !is_zombie((pid_t)pid);
}

/* Thaw one journalled filesystem whose watchdog died, and say so in its journal. */
/*
 * FITHAW the filesystem mounted on mp, if it still is the one key names
 * (never whatever is mounted there now); not frozen (EINVAL) is fine.
 */
static int thaw_checked(const char *mp, const char *key, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	unsigned maj, min;
	struct stat st;

	if (!mp || sscanf(key, "%u:%u", &maj, &min) != 2)
		return cryo_error_setx(err, EINVAL, "journal `%s.json` is malformed", key);
	fd = open(mp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", mp);
	if (fstat(fd, &st) < 0)
		return cryo_error_set(err, errno, "stat `%s`", mp);
	if (st.st_dev != makedev(maj, min))
		return cryo_error_setx(err, ENODEV, "`%s` is no longer the filesystem %s it froze", mp, key);
	if (ioctl(fd, FITHAW, 0) < 0 && errno != EINVAL)
		return cryo_error_set(err, errno, "thaw `%s`", mp);
	return 0;
}

static int recover_one(int dirfd, const char *key, struct json_object *j, const char *reason, struct cryo_error *err)
{
	const char *mp = jstr(j, "mountpoint");
	struct json_object *holds, *lost;
	char name[48];
	const char *text;
	size_t i;
	int r;

	r = thaw_checked(mp, key, err);
	if (r < 0)
		return r;

	if (!json_object_object_get_ex(j, "lost", &lost) || !json_object_is_type(lost, json_type_array)) {
		lost = json_object_new_array();
		json_object_object_add(j, "lost", lost);
	}
	if (json_object_object_get_ex(j, "holds", &holds) && json_object_is_type(holds, json_type_array)) {
		for (i = 0; i < json_object_array_length(holds); i++) {
			struct json_object *h = json_object_array_get_idx(holds, i), *l = json_object_new_object();
			const char *owner = jstr(h, "owner");

			json_object_object_add(l, "owner", json_object_new_string(owner ? owner : "?"));
			json_object_object_add(l, "reason", json_object_new_string(reason));
			json_object_object_add(l, "after_ms", json_object_new_int64((cryo_now_us() - jint(h, "since_us")) / 1000));
			json_object_object_add(l, "timeout_ms", json_object_new_int64(jint(h, "timeout_ms")));
			json_object_array_add(lost, l);
		}
	}
	json_object_object_add(j, "holds", json_object_new_array());
	json_object_object_add(j, "state", json_object_new_string(strcmp(reason, LOST_RECOVER) == 0 ? "thawed-by-recover"
												     : "thawed-by-force"));
	snprintf(name, sizeof(name), "%s.json", key);
	text = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY);
	if (cryo_write_file_atomic_at(dirfd, name, text, strlen(text), 0600, true) < 0)
		cryo_warn("thawed `%s` but could not update its journal `%s`", mp, name);
	return 0;
}

int cryo_fsfreeze_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	_cleanup_(target_done) struct target t = { .fd = -1, .dirfd = -1, .lockfd = -1, .holdsfd = -1 };
	_cleanup_(json_putp) struct json_object *j = NULL;
	struct cryo_fsfreeze_opts o = { .state_dir = rec->root };
	const char *key = strchr(rec->name, '@'), *state;
	int r;

	if (!key || !rec->root || snprintf(t.key, sizeof(t.key), "%s", key + 1) >= (int)sizeof(t.key))
		return cryo_error_setx(err, EINVAL, "hold `%s` names no filesystem", rec->name);
	/* the same lock as fsfreeze/fsthaw: never race a freeze that is starting */
	r = lock_target(&t, &o, false, err);
	if (r == -ENOENT) {
		cryo_error_clear(err);
		return thaw_checked(rec->target, t.key, err);
	}
	if (r < 0)
		return r;
	j = journal_load(&t);
	state = jstr(j, "state");
	/* its owners learn from their thaw or reset that the window was lost */
	if (state && strcmp(state, "frozen") == 0)
		return recover_one(t.dirfd, t.key, j, LOST_RECOVER, err);
	return thaw_checked(rec->target, t.key, err);
}

/* An owner that was a container no longer there: nobody will ask about its window. */
static bool is_deleted_container(const char *owner, const void *data)
{
	_cleanup_free_ char *path = NULL;

	if (strcmp(owner, "cli") == 0 || cryo_validate_id(owner, NULL) < 0)
		return false;
	if (asprintf(&path, "%s/%s/state.json", (const char *)data, owner) < 0) {
		path = NULL;
		return false;
	}
	return access(path, F_OK) < 0 && errno == ENOENT;
}

int cryo_fsfreeze_recover(const char *state_dir, cryo_fsfreeze_report_fn report, void *userdata,
			  struct cryo_error *err)
{
	_cleanup_(target_done) struct target t = { .fd = -1, .dirfd = -1, .lockfd = -1, .holdsfd = -1 };
	struct cryo_fsfreeze_opts o = { .state_dir = state_dir };
	struct cryo_error first = CRYO_ERROR_INIT;
	struct dirent *de;
	DIR *d;
	int r;

	/* the same lock as fsfreeze/fsthaw: never race a freeze that is starting */
	r = lock_target(&t, &o, false, err);
	if (r == -ENOENT) {
		cryo_error_clear(err);
		return 0;
	}
	if (r < 0)
		return r;
	d = cryo_opendir_at(t.dirfd, ".");
	if (!d)
		return cryo_error_set(err, errno, "list `%s/%s`", state_dir, JOURNAL_DIR);
	while ((de = readdir(d))) {
		struct cryo_error e = CRYO_ERROR_INIT;
		struct json_object *j;
		size_t n = strlen(de->d_name);
		const char *state;

		/* half-written journals of a killed writer, and the lock files of older versions */
		if ((n > 9 && strcmp(de->d_name + n - 9, ".json.tmp") == 0) ||
		    (n > 5 && strcmp(de->d_name + n - 5, ".lock") == 0)) {
			unlinkat(t.dirfd, de->d_name, 0);
			continue;
		}
		if (n < 6 || n >= sizeof(t.key) + 5 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		snprintf(t.key, sizeof(t.key), "%.*s", (int)(n - 5), de->d_name);
		j = journal_load(&t);
		state = jstr(j, "state");
		if (state && strcmp(state, "frozen") == 0) {
			if (watchdog_alive(j)) {
				report(jstr(j, "mountpoint"), "held", 0, userdata);
			} else {
				r = recover_one(t.dirfd, t.key, j, LOST_RECOVER, &e);
				report(jstr(j, "mountpoint"), r < 0 ? e.msg : "thawed", r, userdata);
				if (r < 0 && !first.msg)
					cryo_error_move(&first, &e);
			}
		} else if (j && !watchdog_alive(j)) {
			journal_forget_lost_if(&t, j, is_deleted_container, state_dir);
		}
		json_object_put(j);
		cryo_error_clear(&e);
	}
	closedir(d);
	if (first.msg) {
		cryo_error_move(err, &first);
		return -err->status;
	}
	return 0;
}
