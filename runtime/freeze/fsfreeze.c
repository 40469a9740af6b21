// SPDX-License-Identifier: GPL-2.0-only
/*
 * fsfreeze.h's commands. The filesystem's state is one entry of the hold
 * journal (`fs@<major>:<minor>`, its detail: the holds of its owners and
 * the windows they lost), written by its watchdog (fsfreeze-watchdog.c);
 * every command takes the journal's lock (hold.h), an flock on a dir that
 * is never removed, and asks the watchdog over its socket next to the
 * entry.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sys/capability.h>

#include "fsfreeze.h"
#include "fsfreeze-watchdog.h"
#include "hold.h"
#include "log.h"
#include "mountinfo.h"
#include "state.h"
#include "util.h"
#include "watchdog.h"

#define LOCK_TIMEOUT_MS 10000
#define CALL_TIMEOUT_MS 10000
#define LEGACY_DIR ".fsfreeze"

#define TARGET_INIT { .fd = -1, .holdsfd = -1, .lockfd = -1 }

static void target_done(struct fsfreeze_target *t)
{
	closep(&t->fd);
	closep(&t->lockfd);
	closep(&t->holdsfd);
	cryo_mount_done(&t->m);
}

static const char *owner_of(const struct cryo_fsfreeze_opts *o)
{
	return o->owner ? o->owner : "cli";
}

static int open_target(const char *path, bool for_freeze, const struct cryo_fsfreeze_opts *o,
		       struct fsfreeze_target *t, struct cryo_error *err)
{
	struct statx stx;
	int r;

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

/*
 * Serialises cryo commands on the filesystems' entries, and with `cryo
 * recover`: the hold journal's lock. The watchdog never waits for it (a
 * command holding it may be waiting for the watchdog's reply).
 */
static int lock_target(struct fsfreeze_target *t, const struct cryo_fsfreeze_opts *o, struct cryo_error *err)
{
	if (!o->state_dir)
		return cryo_error_setx(err, EINVAL, "no state dir given");
	return cryo_hold_lock(o->state_dir, LOCK_TIMEOUT_MS, &t->holdsfd, &t->lockfd, err);
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

static int refuse_if_same(const struct fsfreeze_target *t, const char *path, const char *why, struct cryo_error *err)
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

static int check_target(const struct fsfreeze_target *t, const struct cryo_fsfreeze_opts *o, struct cryo_error *err)
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
	_cleanup_(target_done) struct fsfreeze_target t = TARGET_INIT;
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

static int explain_freeze_error(const struct fsfreeze_target *t, int errnum, struct cryo_error *err)
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
/* ---- the journal entry ------------------------------------------------------ */

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

/* The filesystem's entry in the hold journal, and its detail parsed. */
struct record {
	struct cryo_hold_rec *rec;   /* NULL: none */
	struct json_object *j;       /* its detail, NULL if none */
};

static void record_done(struct record *r)
{
	cryo_hold_rec_free(r->rec);
	json_object_put(r->j);
}

static struct record record_of(struct cryo_hold_rec *rec)
{
	struct record r = { .rec = rec };

	if (rec && rec->detail)
		r.j = json_tokener_parse(rec->detail);
	if (r.j && !json_object_is_type(r.j, json_type_object)) {
		json_object_put(r.j);
		r.j = NULL;
	}
	return r;
}

static struct record record_load(const struct fsfreeze_target *t)
{
	struct cryo_hold_rec *rec = NULL;
	char name[48];

	cryo_fsfreeze_entry_name(t->key, name, sizeof(name));
	if (cryo_hold_load_at(t->holdsfd, name, &rec, NULL) < 0)
		return (struct record){ 0 };
	return record_of(rec);
}

static struct json_object *jarray(struct json_object *j, const char *key)
{
	struct json_object *a;

	if (!j || !json_object_object_get_ex(j, key, &a) || !json_object_is_type(a, json_type_array))
		return NULL;
	return a;
}

static size_t lost_count(struct json_object *j)
{
	struct json_object *lost = jarray(j, "lost");

	return lost ? json_object_array_length(lost) : 0;
}

/* This owner's entry in the list of holds lost to a deadline or to the holder's exit. */
static struct json_object *record_lost(struct json_object *j, const char *owner)
{
	struct json_object *lost = jarray(j, "lost"), *found = NULL;
	size_t i;

	for (i = 0; lost && i < json_object_array_length(lost); i++) {
		struct json_object *e = json_object_array_get_idx(lost, i);
		const char *o = jstr(e, "owner");

		if (o && strcmp(o, owner) == 0)
			found = e;
	}
	return found;
}

static int64_t holds_count(struct json_object *j)
{
	struct json_object *h = jarray(j, "holds");

	return h ? (int64_t)json_object_array_length(h) : 0;
}

/* Drop the lost windows of the owners drop() names. */
static void prune_lost(struct json_object *j, bool (*drop)(const char *owner, const void *data), const void *data)
{
	struct json_object *lost = jarray(j, "lost"), *keep;
	size_t i;

	if (!lost || !(keep = json_object_new_array()))
		return;
	for (i = 0; i < json_object_array_length(lost); i++) {
		struct json_object *e = json_object_array_get_idx(lost, i);
		const char *o = jstr(e, "owner");

		if (!o || !drop(o, data))
			json_object_array_add(keep, json_object_get(e));
	}
	json_object_object_add(j, "lost", keep);
}

static bool is_owner(const char *owner, const void *data)
{
	return strcmp(owner, data) == 0;
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

/*
 * Write an ended filesystem's record back (the caller holds the journal
 * lock): it goes once no lost window is left to tell. 0 when it went,
 * CRYO_HOLD_UNDO_KEEP when it stays.
 */
static int record_store(int dfd, struct record *r, struct cryo_error *err)
{
	const char *state = jstr(r->j, "state");
	char *text;

	if (!r->rec)
		return 0;
	if (lost_count(r->j) == 0 && !(state && strcmp(state, "frozen") == 0)) {
		cryo_hold_remove_at(dfd, r->rec->name);
		return 0;
	}
	text = strdup(json_object_to_json_string_ext(r->j, JSON_C_TO_STRING_PLAIN));
	if (!text)
		return cryo_error_set(err, ENOMEM, "journal");
	free(r->rec->detail);
	r->rec->detail = text;
	return cryo_hold_update_at(dfd, r->rec, err) < 0 ? -EIO : CRYO_HOLD_UNDO_KEEP;
}

/*
 * No watchdog answers for this filesystem: tell the owner what the journal
 * says happened to its hold.
 */
static int explain_no_hold(const struct fsfreeze_target *t, const char *owner, const char *what, bool alive,
			   struct cryo_error *err)
{
	_cleanup_(record_done) struct record rec = record_load(t);
	struct json_object *j = rec.j, *lost = record_lost(j, owner);
	const char *state = jstr(j, "state");

	if (lost) {
		int r = cryo_error_setx(err, EINVAL,
					"cannot %s `%s`: already thawed by %s %" PRId64 " ms after owner `%s` froze it "
					"(timeout %" PRId64 " ms): the consistency window was lost",
					what, t->m.mountpoint, jstr(lost, "reason") ? jstr(lost, "reason") : "timeout",
					jint(lost, "after_ms"), owner, jint(lost, "timeout_ms"));

		/* told at its thaw: the freeze is over for this owner, and its record goes */
		if (!alive && strcmp(what, "thaw") == 0) {
			prune_lost(j, is_owner, owner);
			(void)record_store(t->holdsfd, &rec, NULL);
		}
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
				       what, t->m.mountpoint, (int64_t)rec.rec->watchdog_pid, t->m.mountpoint);
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
static int explain_busy(const struct fsfreeze_target *t, struct cryo_error *err)
{
	_cleanup_(record_done) struct record rec = record_load(t);
	struct json_object *j = rec.j;
	const char *state = jstr(j, "state");

	if (state && strcmp(state, "frozen") == 0)
		return cryo_error_setx(err, EBUSY,
				       "cannot freeze `%s`: it is still frozen by cryo (%" PRId64 " hold(s) in its journal), "
				       "but their watchdog (pid %" PRId64 ") is gone, so no deadline will thaw it; thaw it "
				       "with `cryo fsthaw --force --path %s`",
				       t->m.mountpoint, holds_count(j), (int64_t)rec.rec->watchdog_pid, t->m.mountpoint);
	return explain_freeze_error(t, EBUSY, err);
}

/* ---- recovery ------------------------------------------------------------------ */

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
		return cryo_error_setx(err, EINVAL, "journal entry fs@%s is malformed", key);
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

/*
 * Thaw a filesystem whose watchdog died, and turn its entry into the
 * record of the windows its owners lost (reason): they learn it from
 * their thaw or reset. Owners that were containers no longer there are
 * not told. The caller holds the journal lock. 0 or CRYO_HOLD_UNDO_KEEP
 * as record_store().
 */
static int close_record(int dfd, struct record *r, const char *key, const char *reason, const char *root,
			struct cryo_error *err)
{
	struct json_object *holds = jarray(r->j, "holds"), *lost;
	size_t i;
	int ret;

	ret = thaw_checked(r->rec->target, key, err);
	if (ret < 0)
		return ret;
	if (!r->j)
		return 0;
	lost = jarray(r->j, "lost");
	if (!lost) {
		lost = json_object_new_array();
		json_object_object_add(r->j, "lost", lost);
	}
	for (i = 0; holds && i < json_object_array_length(holds); i++) {
		struct json_object *h = json_object_array_get_idx(holds, i), *l = json_object_new_object();
		const char *owner = jstr(h, "owner");

		json_object_object_add(l, "owner", json_object_new_string(owner ? owner : "?"));
		json_object_object_add(l, "reason", json_object_new_string(reason));
		json_object_object_add(l, "after_ms", json_object_new_int64((cryo_now_us() - jint(h, "since_us")) / 1000));
		json_object_object_add(l, "timeout_ms", json_object_new_int64(jint(h, "timeout_ms")));
		json_object_array_add(lost, l);
	}
	json_object_object_add(r->j, "holds", json_object_new_array());
	json_object_object_add(r->j, "state", json_object_new_string(strcmp(reason, LOST_RECOVER) == 0 ? "thawed-by-recover"
												      : "thawed-by-force"));
	prune_lost(r->j, is_deleted_container, root);
	r->rec->flags |= CRYO_HOLD_ENDED;
	ret = record_store(dfd, r, err);
	if (ret < 0)
		cryo_warn("thawed `%s` but could not update its journal entry `%s`", r->rec->target, r->rec->name);
	return ret < 0 ? 0 : ret;
}

int cryo_fsfreeze_hold_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	_cleanup_(record_done) struct record r = { 0 };
	const char *key = strchr(rec->name, '@');
	struct cryo_hold_rec *copy = NULL;
	int ret;

	if (!key || !rec->root || strlen(key + 1) >= sizeof(((struct fsfreeze_target *)0)->key))
		return cryo_error_setx(err, EINVAL, "hold `%s` names no filesystem", rec->name);
	key++;
	ret = cryo_hold_open_dir(rec->root, &dfd, err);
	if (ret < 0)
		return ret;
	/* ours to rewrite (under the lock recover holds): a fresh copy of the entry */
	ret = cryo_hold_load_at(dfd, rec->name, &copy, err);
	if (ret == -ENOENT) {
		cryo_error_clear(err);
		return 0;
	}
	if (ret < 0)
		return ret;
	r = record_of(copy);
	/* a new watchdog took the filesystem over since (it freezes without the lock): its entry now */
	if (cryo_hold_is_live(r.rec))
		return CRYO_HOLD_UNDO_KEEP;
	/* a record of lost windows: only those of containers still there stay */
	if (r.rec->flags & CRYO_HOLD_ENDED) {
		prune_lost(r.j, is_deleted_container, rec->root);
		return record_store(dfd, &r, err);
	}
	/* its watchdog died: its owners learn from their thaw or reset that the window was lost */
	return close_record(dfd, &r, key, LOST_RECOVER, rec->root, err);
}

/*
 * `cryo recover` of a state dir an older cryo used: its fsfreeze journal
 * dir `.fsfreeze` goes once no watchdog of that cryo answers in it (the
 * freezes those watchdogs made are in the hold journal too, as `fs@`
 * entries, and recovered there).
 */
int cryo_fsfreeze_recover(const char *state_dir, cryo_fsfreeze_report_fn report, void *userdata,
			  struct cryo_error *err)
{
	_cleanup_close_ int rfd = -1, dfd = -1;
	struct dirent *de;
	bool live = false;
	DIR *d;
	int r;

	rfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0)
		dfd = openat(rfd, LEGACY_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	d = cryo_opendir_at(dfd, ".");
	if (!d)
		return cryo_error_set(err, errno, "list `%s/%s`", state_dir, LEGACY_DIR);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char reply[CRYO_WATCHDOG_MSG_MAX];

		if (n > 5 && strcmp(de->d_name + n - 5, ".sock") == 0 &&
		    cryo_watchdog_call(dfd, de->d_name, "PING", reply, sizeof(reply), CALL_TIMEOUT_MS, NULL) == 0) {
			live = true;
			report(de->d_name, "held", 0, userdata);
		}
	}
	closedir(d);
	if (live)
		return 0;
	r = cryo_rm_rf_at(rfd, LEGACY_DIR);
	if (r < 0 && r != -ENOENT)
		return cryo_error_set(err, -r, "remove `%s/%s`", state_dir, LEGACY_DIR);
	return 0;
}

/* ---- the commands, through the watchdog ---------------------------------------- */

static int watchdog_hold(struct fsfreeze_target *t, const struct cryo_fsfreeze_opts *o, uint64_t timeout_ms,
			 struct cryo_error *err)
{
	char req[256], reply[CRYO_WATCHDOG_MSG_MAX], sock[48];
	struct cryo_error e = CRYO_ERROR_INIT;
	unsigned on_exit = (o->flags & CRYO_FSFREEZE_THAW_ON_EXIT) ? 1 : 0;
	int r, status;
	pid_t pid;

	cryo_fsfreeze_sock_name(t->key, sock, sizeof(sock));
	snprintf(req, sizeof(req), "HOLD %" PRIu64 " %d %u %s", timeout_ms, (int)getpid(), on_exit, owner_of(o));
	r = cryo_watchdog_call(t->holdsfd, sock, req, reply, sizeof(reply), CALL_TIMEOUT_MS, &e);
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
	r = cryo_fsfreeze_watchdog_start(t, owner_of(o), getpid(), timeout_ms, on_exit, &pid, &e);
	if (r < 0) {
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

/* FITHAW of a filesystem no cryo watchdog holds (frozen by fsfreeze(8) or the like): --force only. */
static int thaw_foreign(const struct fsfreeze_target *t, struct cryo_error *err)
{
	if (ioctl(t->fd, FITHAW, 0) == 0)
		return 0;
	if (errno == EINVAL)
		return cryo_error_setx(err, EINVAL, "cannot thaw `%s`: it is not frozen (FITHAW: %s)", t->m.mountpoint,
				       strerror(EINVAL));
	if (errno == EPERM)
		return cryo_error_setx(err, EPERM, "cannot thaw `%s`: thawing needs CAP_SYS_ADMIN (FITHAW: %s)",
				       t->m.mountpoint, strerror(EPERM));
	return cryo_error_set(err, errno, "thaw `%s`", t->m.mountpoint);
}

static int watchdog_thaw(struct fsfreeze_target *t, const struct cryo_fsfreeze_opts *o,
			 struct cryo_fsfreeze_thawed *ret, struct cryo_error *err)
{
	char req[256], reply[CRYO_WATCHDOG_MSG_MAX], sock[48], word[16];
	struct cryo_error e = CRYO_ERROR_INIT;
	bool force = o->flags & CRYO_FSFREEZE_FORCE;
	unsigned long long v;
	int r, status;

	cryo_fsfreeze_sock_name(t->key, sock, sizeof(sock));
	if (force)
		snprintf(req, sizeof(req), "THAWALL");
	else
		snprintf(req, sizeof(req), "THAW %s", owner_of(o));
	r = cryo_watchdog_call(t->holdsfd, sock, req, reply, sizeof(reply), CALL_TIMEOUT_MS, &e);
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
	{
		_cleanup_(record_done) struct record rec = record_load(t);
		const char *state = jstr(rec.j, "state");

		if (rec.rec && !(rec.rec->flags & CRYO_HOLD_ENDED) && state && strcmp(state, "frozen") == 0) {
			/* its watchdog died: close its entry too, so its owners learn the window was lost */
			r = close_record(t->holdsfd, &rec, t->key, LOST_FORCED, o->state_dir, err);
			if (r < 0)
				return r;
			*ret = (struct cryo_fsfreeze_thawed){ .thawed = true };
			return 0;
		}
	}
	r = thaw_foreign(t, err);
	if (r < 0)
		return r;
	*ret = (struct cryo_fsfreeze_thawed){ .thawed = true };
	return 0;
}

static int watchdog_reset(struct fsfreeze_target *t, const struct cryo_fsfreeze_opts *o, uint64_t timeout_ms,
			  struct cryo_error *err)
{
	char req[256], reply[CRYO_WATCHDOG_MSG_MAX], sock[48];
	struct cryo_error e = CRYO_ERROR_INIT;
	int r, status;

	cryo_fsfreeze_sock_name(t->key, sock, sizeof(sock));
	snprintf(req, sizeof(req), "RESET %" PRIu64 " %s", timeout_ms, owner_of(o));
	r = cryo_watchdog_call(t->holdsfd, sock, req, reply, sizeof(reply), CALL_TIMEOUT_MS, &e);
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

static int check_owner(const struct cryo_fsfreeze_opts *o, struct cryo_error *err)
{
	int r = cryo_validate_id(owner_of(o), err);

	return r < 0 ? cryo_error_prefix(err, "freeze owner") : 0;
}

int cryo_fsfreeze_freeze(const char *path, uint64_t timeout_ms, const struct cryo_fsfreeze_opts *o,
			 struct cryo_error *err)
{
	_cleanup_(target_done) struct fsfreeze_target t = TARGET_INIT;
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
	r = lock_target(&t, o, err);
	if (r < 0)
		return cryo_error_prefix(err, "freeze `%s`", path);
	return watchdog_hold(&t, o, timeout_ms, err);
}

static int open_existing(const char *path, const char *what, const struct cryo_fsfreeze_opts *o,
			 struct fsfreeze_target *t, struct cryo_error *err)
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
	return lock_target(t, o, err);
}

int cryo_fsfreeze_thaw(const char *path, const struct cryo_fsfreeze_opts *o, struct cryo_fsfreeze_thawed *ret,
		       struct cryo_error *err)
{
	_cleanup_(target_done) struct fsfreeze_target t = TARGET_INIT;
	struct cryo_fsfreeze_thawed th = { 0 };
	int r;

	r = open_existing(path, "thaw", o, &t, err);
	if (r < 0)
		return r;
	r = watchdog_thaw(&t, o, &th, err);
	if (r < 0)
		return r;
	if (ret)
		*ret = th;
	return 0;
}

int cryo_fsfreeze_reset_timeout(const char *path, uint64_t timeout_ms, const struct cryo_fsfreeze_opts *o,
				struct cryo_error *err)
{
	_cleanup_(target_done) struct fsfreeze_target t = TARGET_INIT;
	int r;

	if (timeout_ms > INT64_MAX / 2)
		return cryo_error_setx(err, ERANGE, "freeze timeout %" PRIu64 " ms is too long", timeout_ms);
	r = open_existing(path, "reset the timeout of", o, &t, err);
	if (r < 0)
		return r;
	return watchdog_reset(&t, o, timeout_ms, err);
}
