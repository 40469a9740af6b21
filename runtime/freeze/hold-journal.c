// SPDX-License-Identifier: GPL-2.0-only
/*
 * The hold journal on disk: <root>/.holds/<name>.json, one entry per hold
 * (hold.h says what an entry means), its lock, and the records' JSON.
 * hold.c takes, checks and undoes holds through these.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "hold-journal.h"
#include "log.h"
#include "util.h"

#define LEGACY_HOLDS_DIR "holds"
#define REC_MAX_BYTES 65536

const char *const cryo_hold_kind_names[_CRYO_HOLD_KIND_MAX] = {
	[CRYO_HOLD_CGROUP_THAW] = "cgroup-thaw",
	[CRYO_HOLD_FS_THAW] = "fs-thaw",
	[CRYO_HOLD_STAGING] = "staging-dir",
	[CRYO_HOLD_CGROUP_KILL] = "cgroup-kill",
	[CRYO_HOLD_LINK_UP] = "link-up",
	[CRYO_HOLD_RESTORE] = "restore",
	[CRYO_HOLD_BUNDLE] = "received-bundle",
};

int cryo_hold_validate_name(const char *name, struct cryo_error *err)
{
	_cleanup_free_ char *id = NULL;
	const char *at = name ? strchr(name, '@') : NULL;
	const char *p;
	int r;

	if (!at)
		return cryo_validate_id(name, err);
	id = strndup(name, (size_t)(at - name));
	if (!id)
		return cryo_error_set(err, ENOMEM, "hold name");
	r = cryo_validate_id(id, err);
	if (r < 0)
		return r;
	if (!at[1] || strlen(at) > 64)
		return cryo_error_setx(err, EINVAL, "hold name `%s`: the tag after `@` is empty or too long", name);
	for (p = at + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("-_.:", *p))
			return cryo_error_setx(err, EINVAL, "hold name `%s` has an invalid character in its tag", name);
	return 0;
}

void cryo_hold_rec_free(struct cryo_hold_rec *rec)
{
	if (!rec)
		return;
	free(rec->name);
	free(rec->target);
	free(rec->backend);
	free(rec->boot_id);
	free(rec->nonce);
	free(rec->detail);
	free(rec->root);
	free(rec);
}

char *cryo_hold_boot_id(void)
{
	char *buf = NULL;
	size_t len = 0;

	if (cryo_read_file_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", 64, &buf, &len) < 0)
		return strdup("");
	if (len > 0 && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return buf;
}

/*
 * Before the journal took a name no container id can have, it was
 * <root>/holds, which `create holds` / `delete holds` could take over or
 * remove. Move an old journal (a `holds` dir that is no container: no
 * state.json) to its new place. Watchdogs of old holds keep working: they
 * hold the directory by fd.
 */
static void migrate_legacy(const char *root)
{
	_cleanup_close_ int rfd = -1, lfd = -1;
	struct stat st;

	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return;
	lfd = openat(rfd, LEGACY_HOLDS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lfd < 0)
		return;
	if (fstatat(lfd, "state.json", &st, AT_SYMLINK_NOFOLLOW) == 0)
		return; /* a container called `holds` */
	if (renameat2(rfd, LEGACY_HOLDS_DIR, rfd, HOLDS_DIR, RENAME_NOREPLACE) == 0)
		cryo_debug("moved the hold journal `%s/%s` to `%s/%s`", root, LEGACY_HOLDS_DIR, root, HOLDS_DIR);
	else if (errno != ENOENT)
		cryo_debug("could not move the old hold journal `%s/%s`: %s", root, LEGACY_HOLDS_DIR, strerror(errno));
}

/* Open (creating) <root>/.holds. */
int cryo_hold_dir_open(const char *root, bool create, int *ret, struct cryo_error *err)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", root, HOLDS_DIR) >= (int)sizeof(path))
		return cryo_error_setx(err, ENAMETOOLONG, "state dir `%s` is too long", root);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		migrate_legacy(root);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0 && errno == ENOENT && create) {
		int r = cryo_mkdir_p(path, 0700);

		if (r < 0)
			return cryo_error_set(err, r, "create `%s`", path);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", path);
	*ret = fd;
	return 0;
}

/*
 * Serialises journal changes between holders, watchdogs and `cryo
 * recover`: a flock on a new open file of the journal dir (no lock file
 * is left behind; a watchdog keeps the dir open, but never this file).
 * timeout_ms < 0 waits as long as it takes; else -EBUSY once it passed.
 */
int cryo_hold_dir_lock_for(int dfd, int timeout_ms)
{
	int64_t until = cryo_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int delay = 1;

	if (fd < 0)
		return -errno;
	while (flock(fd, timeout_ms < 0 ? LOCK_EX : LOCK_EX | LOCK_NB) < 0) {
		int r = -errno;

		if (r == -EINTR)
			continue;
		if (r != -EWOULDBLOCK || cryo_now_ms() >= until) {
			close(fd);
			return r == -EWOULDBLOCK ? -EBUSY : r;
		}
		/* short steps: many commands of one node take it in turns, each for a few ms */
		cryo_sleep_ms(delay);
		delay = delay < 8 ? delay * 2 : 8;
	}
	return fd;
}

int cryo_hold_dir_lock(int dfd)
{
	return cryo_hold_dir_lock_for(dfd, -1);
}

int cryo_hold_lock(const char *root, int timeout_ms, int *ret_dfd, int *ret_lockfd, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	int r;

	r = cryo_hold_dir_open(root, true, &dfd, err);
	if (r < 0)
		return r;
	r = cryo_hold_dir_lock_for(dfd, timeout_ms < 0 ? 0 : timeout_ms);
	if (r == -EBUSY)
		return cryo_error_setx(err, EBUSY, "another cryo command holds the lock of `%s/%s` for more than %d ms",
				       root, HOLDS_DIR, timeout_ms);
	if (r < 0)
		return cryo_error_set(err, -r, "lock `%s/%s`", root, HOLDS_DIR);
	*ret_dfd = TAKE_FD(dfd);
	*ret_lockfd = r;
	return 0;
}

static int rec_to_json(const struct cryo_hold_rec *rec, char **ret)
{
	struct json_object *o = json_object_new_object();
	char *s;

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "name", json_object_new_string(rec->name));
	json_object_object_add(o, "kind", json_object_new_string(cryo_hold_kind_names[rec->kind]));
	json_object_object_add(o, "target", json_object_new_string(rec->target));
	json_object_object_add(o, "backend", json_object_new_string(rec->backend));
	json_object_object_add(o, "undoOnExit", json_object_new_boolean(rec->flags & CRYO_HOLD_UNDO_ON_EXIT));
	json_object_object_add(o, "kmod", json_object_new_boolean(rec->flags & CRYO_HOLD_KMOD));
	json_object_object_add(o, "noWatchdog", json_object_new_boolean(rec->flags & CRYO_HOLD_NO_WATCHDOG));
	if (rec->flags & CRYO_HOLD_ENDED)
		json_object_object_add(o, "ended", json_object_new_boolean(1));
	json_object_object_add(o, "holderPid", json_object_new_int(rec->holder_pid));
	json_object_object_add(o, "holderStartTime", json_object_new_uint64(rec->holder_start));
	json_object_object_add(o, "watchdogPid", json_object_new_int(rec->watchdog_pid));
	json_object_object_add(o, "watchdogStartTime", json_object_new_uint64(rec->watchdog_start));
	json_object_object_add(o, "deadlineMonotonicMs", json_object_new_int64(rec->deadline_ms));
	if (rec->exit_delay_ms > 0)
		json_object_object_add(o, "exitDelayMs", json_object_new_int64(rec->exit_delay_ms));
	if (rec->helper_pid > 0) {
		json_object_object_add(o, "helperPid", json_object_new_int(rec->helper_pid));
		json_object_object_add(o, "helperStartTime", json_object_new_uint64(rec->helper_start));
	}
	json_object_object_add(o, "bootId", json_object_new_string(rec->boot_id));
	json_object_object_add(o, "nonce", json_object_new_string(rec->nonce));
	if (rec->detail) {
		struct json_object *d = json_tokener_parse(rec->detail);

		if (!d || !json_object_is_type(d, json_type_object)) {
			json_object_put(d);
			json_object_put(o);
			return -EINVAL;
		}
		json_object_object_add(o, "detail", d);
	}
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

static int get_str(struct json_object *o, const char *key, char **ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return -EINVAL;
	*ret = strdup(json_object_get_string(v));
	return *ret ? 0 : -ENOMEM;
}

static int get_int(struct json_object *o, const char *key, int64_t *ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -EINVAL;
	*ret = json_object_get_int64(v);
	return 0;
}

int cryo_hold_load_at(int dfd, const char *name, struct cryo_hold_rec **ret, struct cryo_error *err)
{
	_cleanup_free_ char *data = NULL;
	char *kind = NULL;
	struct cryo_hold_rec *rec;
	struct json_object *o, *v;
	char file[PATH_MAX];
	int64_t i64 = 0;
	size_t len = 0, k;
	int r;

	snprintf(file, sizeof(file), "%s.json", name);
	r = cryo_read_file_at(dfd, file, REC_MAX_BYTES, &data, &len);
	if (r == -ENOENT)
		return cryo_error_setx(err, ENOENT, "no hold `%s`", name);
	if (r < 0)
		return cryo_error_set(err, r, "read hold `%s`", name);
	o = json_tokener_parse(data);
	if (!o)
		return cryo_error_setx(err, EINVAL, "hold `%s`: journal entry is not JSON", name);
	rec = calloc(1, sizeof(*rec));
	if (!rec) {
		json_object_put(o);
		return cryo_error_set(err, ENOMEM, "hold `%s`", name);
	}
	r = get_str(o, "name", &rec->name);
	if (r == 0)
		r = get_str(o, "kind", &kind);
	if (r == 0)
		r = get_str(o, "target", &rec->target);
	if (r == 0)
		r = get_str(o, "backend", &rec->backend);
	if (r == 0)
		r = get_str(o, "bootId", &rec->boot_id);
	if (r == 0)
		r = get_str(o, "nonce", &rec->nonce);
	if (r == 0 && (r = get_int(o, "holderPid", &i64)) == 0)
		rec->holder_pid = (pid_t)i64;
	if (r == 0 && (r = get_int(o, "holderStartTime", &i64)) == 0)
		rec->holder_start = (uint64_t)i64;
	if (r == 0 && (r = get_int(o, "watchdogPid", &i64)) == 0)
		rec->watchdog_pid = (pid_t)i64;
	if (r == 0 && (r = get_int(o, "watchdogStartTime", &i64)) == 0)
		rec->watchdog_start = (uint64_t)i64;
	if (r == 0)
		r = get_int(o, "deadlineMonotonicMs", &rec->deadline_ms);
	if (r == 0 && json_object_object_get_ex(o, "exitDelayMs", &v))
		r = get_int(o, "exitDelayMs", &rec->exit_delay_ms);
	if (r == 0 && json_object_object_get_ex(o, "helperPid", &v) && (r = get_int(o, "helperPid", &i64)) == 0) {
		if (i64 <= 0 || i64 > INT_MAX)
			r = -EINVAL;
		rec->helper_pid = (pid_t)i64;
		if (r == 0 && (r = get_int(o, "helperStartTime", &i64)) == 0)
			rec->helper_start = (uint64_t)i64;
	}
	if (r == 0 && json_object_object_get_ex(o, "undoOnExit", &v) && json_object_get_boolean(v))
		rec->flags |= CRYO_HOLD_UNDO_ON_EXIT;
	if (r == 0 && json_object_object_get_ex(o, "kmod", &v) && json_object_get_boolean(v))
		rec->flags |= CRYO_HOLD_KMOD;
	if (r == 0 && json_object_object_get_ex(o, "noWatchdog", &v) && json_object_get_boolean(v))
		rec->flags |= CRYO_HOLD_NO_WATCHDOG;
	if (r == 0 && json_object_object_get_ex(o, "ended", &v) && json_object_get_boolean(v))
		rec->flags |= CRYO_HOLD_ENDED;
	if (r == 0 && json_object_object_get_ex(o, "detail", &v) && json_object_is_type(v, json_type_object) &&
	    !(rec->detail = strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN))))
		r = -ENOMEM;
	json_object_put(o);
	if (r < 0 || !kind) {
		free(kind);
		cryo_hold_rec_free(rec);
		return cryo_error_setx(err, EINVAL, "hold `%s`: journal entry lacks a field or has a wrong type", name);
	}
	for (k = 0; k < _CRYO_HOLD_KIND_MAX; k++)
		if (strcmp(kind, cryo_hold_kind_names[k]) == 0)
			break;
	if (k == _CRYO_HOLD_KIND_MAX) {
		r = cryo_error_setx(err, EINVAL, "hold `%s`: unknown kind `%.32s`", name, kind);
		free(kind);
		cryo_hold_rec_free(rec);
		return r;
	}
	free(kind);
	rec->kind = (enum cryo_hold_kind)k;
	*ret = rec;
	return 0;
}

/* The journal dir that should hold entry name; a missing dir is "no hold `name`" (-ENOENT). */
int cryo_hold_dir_open_for(const char *root, const char *name, int *ret_fd, struct cryo_error *err)
{
	int r;

	r = cryo_hold_validate_name(name, err);
	if (r < 0)
		return r;
	r = cryo_hold_dir_open(root, false, ret_fd, err);
	if (r == -ENOENT) {
		cryo_error_clear(err);
		return cryo_error_setx(err, ENOENT, "no hold `%s`", name);
	}
	return r;
}

int cryo_hold_load(const char *root, const char *name, struct cryo_hold_rec **ret, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	int r;

	r = cryo_hold_dir_open_for(root, name, &dfd, err);
	if (r < 0)
		return r;
	r = cryo_hold_load_at(dfd, name, ret, err);
	if (r == 0 && !((*ret)->root = strdup(root))) {
		cryo_hold_rec_free(*ret);
		*ret = NULL;
		return cryo_error_set(err, ENOMEM, "hold `%s`", name);
	}
	return r;
}

/*
 * Atomic (a cryo killed mid-write leaves the old entry or the new), not
 * synced: the journal is for a holder that dies, not a host that does.
 * After a host crash every hold is of another boot, so stale, whether its
 * entry reached the disk or not (the state root is a tmpfs by default
 * anyway), and what it held is gone with the boot: no frozen cgroup,
 * filesystem or link is left to undo, and a staging dir is removed by the
 * next checkpoint to that place. An fsync here was paid inside frozen
 * windows (a migration's destination takes a hold on the copy it restored
 * before the source may commit), and waits for every writer of the disk.
 */
int cryo_hold_rec_save_at(int dfd, const struct cryo_hold_rec *rec)
{
	char file[PATH_MAX], *json = NULL;
	int r;

	r = rec_to_json(rec, &json);
	if (r < 0)
		return r;
	snprintf(file, sizeof(file), "%s.json", rec->name);
	r = cryo_write_file_atomic_at(dfd, file, json, strlen(json), 0600, false);
	free(json);
	return r;
}

int cryo_hold_update_at(int dfd, const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	int r = cryo_hold_rec_save_at(dfd, rec);

	return r < 0 ? cryo_error_set(err, -r, "hold `%s`: write journal entry", rec->name) : 0;
}

void cryo_hold_remove_at(int dfd, const char *name)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s.json", name);
	unlinkat(dfd, file, 0);
}

int cryo_hold_open_dir(const char *root, int *ret_dfd, struct cryo_error *err)
{
	return cryo_hold_dir_open(root, true, ret_dfd, err);
}

/* Does the entry called name still carry this nonce? Its exit delay in *ret_exit_delay_ms (may be NULL). */
bool cryo_hold_entry_is_delay(int dfd, const char *name, const char *nonce, int64_t *ret_exit_delay_ms)
{
	struct cryo_hold_rec *cur = NULL;
	bool same;

	if (cryo_hold_load_at(dfd, name, &cur, NULL) < 0 || !cur)
		return false;
	same = strcmp(cur->nonce, nonce) == 0;
	if (same && ret_exit_delay_ms)
		*ret_exit_delay_ms = cur->exit_delay_ms;
	cryo_hold_rec_free(cur);
	return same;
}

bool cryo_hold_entry_is(int dfd, const char *name, const char *nonce)
{
	return cryo_hold_entry_is_delay(dfd, name, nonce, NULL);
}
