// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "log.h"
#include "state.h"
#include "util.h"

#define STATE_FILE "state.json"
#define STATE_MAX_BYTES (1 << 20)

const char *const cryo_status_names[_CRYO_STATUS_MAX] = {
	[CRYO_STATUS_CREATING] = "creating",
	[CRYO_STATUS_CREATED] = "created",
	[CRYO_STATUS_RUNNING] = "running",
	[CRYO_STATUS_PAUSED] = "paused",
	[CRYO_STATUS_STOPPED] = "stopped",
};

int cryo_status_from_string(const char *s, enum cryo_status *ret)
{
	size_t i;

	for (i = 0; i < _CRYO_STATUS_MAX; i++) {
		if (s && strcmp(s, cryo_status_names[i]) == 0) {
			*ret = (enum cryo_status)i;
			return 0;
		}
	}
	return -EINVAL;
}

int cryo_state_new(const char *id, struct cryo_state **ret, struct cryo_error *err)
{
	struct cryo_state *st;
	int r;

	r = cryo_validate_id(id, err);
	if (r < 0)
		return r;
	st = calloc(1, sizeof(*st));
	if (!st)
		return cryo_error_set(err, ENOMEM, "allocate state");
	st->id = strdup(id);
	if (!st->id) {
		free(st);
		return cryo_error_set(err, ENOMEM, "allocate state");
	}
	st->status = CRYO_STATUS_CREATING;
	*ret = st;
	return 0;
}

void cryo_state_free(struct cryo_state *st)
{
	if (!st)
		return;
	free(st->id);
	free(st->bundle);
	free(st->rootfs);
	free(st->cgroup_path);
	free(st->cgroup_made);
	free(st->cgroup_v2);
	free(st->cgroup_v1_freezer);
	free(st->freezer_backend);
	free(st->rootfs_image);
	json_object_put(st->annotations);
	free(st);
}

static int dir_path(const char *root, const char *id, char *buf, size_t len, struct cryo_error *err)
{
	int r = cryo_validate_id(id, err);

	if (r < 0)
		return r;
	if ((size_t)snprintf(buf, len, "%s/%s", root, id) >= len)
		return cryo_error_setx(err, ENAMETOOLONG, "state dir `%s/%s` is too long", root, id);
	return 0;
}

/*
 * The state dir of id opened (its fd), its path in dir (PATH_MAX bytes)
 * for messages. A dir that is not there is "container `id` does not
 * exist" where the caller asks who it is (missing_is_unknown), an error
 * of open otherwise.
 */
static int open_dir(const char *root, const char *id, bool missing_is_unknown, char *dir, struct cryo_error *err)
{
	int fd, r = dir_path(root, id, dir, PATH_MAX, err);

	if (r < 0)
		return r;
	fd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno == ENOENT && missing_is_unknown)
		return cryo_error_setx(err, ENOENT, "container `%s` does not exist", id);
	return cryo_error_set(err, errno, "open state dir `%s`", dir);
}

static int get_string(struct json_object *o, const char *key, char **ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	*ret = strdup(json_object_get_string(v));
	return *ret ? 0 : -ENOMEM;
}

int cryo_state_load(const char *root, const char *id, struct cryo_state **ret, struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL;
	struct cryo_state *st = NULL;
	struct json_object *o, *v;
	char dir[PATH_MAX];
	_cleanup_close_ int dfd = -1;
	int r;

	dfd = open_dir(root, id, true, dir, err);
	if (dfd < 0)
		return dfd;
	r = cryo_read_file_at(dfd, STATE_FILE, STATE_MAX_BYTES, &buf, NULL);
	if (r == -ENOENT)
		return cryo_error_setx(err, ENOENT, "container `%s` does not exist (no state yet)", id);
	if (r < 0)
		return cryo_error_set(err, r, "read `%s/%s`", dir, STATE_FILE);

	o = json_tokener_parse(buf);
	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return cryo_error_setx(err, EINVAL, "`%s/%s` is not a JSON object", dir, STATE_FILE);
	}
	r = cryo_state_new(id, &st, err);
	if (r < 0)
		goto out;

	r = get_string(o, "bundle", &st->bundle);
	if (r >= 0)
		r = get_string(o, "rootfs", &st->rootfs);
	if (r >= 0)
		r = get_string(o, "cgroupPath", &st->cgroup_path);
	if (r >= 0)
		r = get_string(o, "cgroupMade", &st->cgroup_made);
	if (r >= 0)
		r = get_string(o, "cgroupV2", &st->cgroup_v2);
	if (r >= 0)
		r = get_string(o, "cgroupV1Freezer", &st->cgroup_v1_freezer);
	if (r >= 0)
		r = get_string(o, "freezerBackend", &st->freezer_backend);
	if (r >= 0)
		r = get_string(o, "rootfsImage", &st->rootfs_image);
	if (r < 0) {
		r = cryo_error_set(err, r, "`%s/%s`: bad field", dir, STATE_FILE);
		goto out;
	}
	if (json_object_object_get_ex(o, "pid", &v))
		st->pid = (pid_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "pidStartTime", &v))
		st->pid_start_time = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(o, "created", &v))
		st->created = json_object_get_int64(v);
	if (json_object_object_get_ex(o, "cgroupJoined", &v))
		st->cgroup_joined = json_object_get_boolean(v);
	if (json_object_object_get_ex(o, "annotations", &v) && json_object_is_type(v, json_type_object))
		st->annotations = json_object_get(v);
	if (!json_object_object_get_ex(o, "status", &v) ||
	    cryo_status_from_string(json_object_get_string(v), &st->status) < 0) {
		r = cryo_error_setx(err, EINVAL, "`%s/%s`: unknown status `%s`", dir, STATE_FILE,
				    v ? json_object_get_string(v) : "(missing)");
		goto out;
	}
	*ret = TAKE_PTR(st);
	r = 0;
out:
	cryo_state_free(st);
	json_object_put(o);
	return r;
}

static void add_string(struct json_object *o, const char *key, const char *val)
{
	if (val)
		json_object_object_add(o, key, json_object_new_string(val));
}

int cryo_state_save(const char *root, const struct cryo_state *st, struct cryo_error *err)
{
	return cryo_state_save_ext(root, st, true, err);
}

int cryo_state_save_ext(const char *root, const struct cryo_state *st, bool durable, struct cryo_error *err)
{
	char dir[PATH_MAX];
	struct json_object *o;
	_cleanup_close_ int dfd = -1;
	const char *text;
	int r;

	dfd = open_dir(root, st->id, false, dir, err);
	if (dfd < 0)
		return dfd;

	o = json_object_new_object();
	if (!o)
		return cryo_error_set(err, ENOMEM, "save state");
	add_string(o, "id", st->id);
	add_string(o, "status", cryo_status_names[st->status]);
	json_object_object_add(o, "pid", json_object_new_int64(st->pid));
	json_object_object_add(o, "pidStartTime", json_object_new_int64((int64_t)st->pid_start_time));
	add_string(o, "bundle", st->bundle);
	add_string(o, "rootfs", st->rootfs);
	add_string(o, "cgroupPath", st->cgroup_path);
	add_string(o, "cgroupMade", st->cgroup_made);
	if (st->cgroup_joined)
		json_object_object_add(o, "cgroupJoined", json_object_new_boolean(true));
	add_string(o, "cgroupV2", st->cgroup_v2);
	add_string(o, "cgroupV1Freezer", st->cgroup_v1_freezer);
	add_string(o, "freezerBackend", st->freezer_backend);
	add_string(o, "rootfsImage", st->rootfs_image);
	json_object_object_add(o, "created", json_object_new_int64(st->created));
	if (st->annotations)
		json_object_object_add(o, "annotations", json_object_get(st->annotations));

	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	r = cryo_write_file_atomic_at(dfd, STATE_FILE, text, strlen(text), 0600, durable);
	json_object_put(o);
	if (r < 0)
		return cryo_error_set(err, -r, "write `%s/%s`", dir, STATE_FILE);
	return 0;
}

int cryo_state_create_dir(const char *root, const char *id, struct cryo_error *err)
{
	char dir[PATH_MAX];
	int r;

	r = dir_path(root, id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	r = cryo_mkdir_p(root, 0700);
	if (r < 0)
		return cryo_error_set(err, r, "create state root `%s`", root);
	if (mkdir(dir, 0700) < 0) {
		if (errno == EEXIST)
			return cryo_error_setx(err, EEXIST, "container `%s` already exists", id);
		return cryo_error_set(err, errno, "create state dir `%s`", dir);
	}
	return 0;
}

int cryo_state_remove_dir(const char *root, const char *id, struct cryo_error *err)
{
	char dir[PATH_MAX];
	int r;

	r = dir_path(root, id, dir, sizeof(dir), err);
	if (r < 0)
		return r;
	r = cryo_rm_rf_at(AT_FDCWD, dir);
	if (r < 0)
		return cryo_error_set(err, r, "remove state dir `%s`", dir);
	return 0;
}

int cryo_state_lock(const char *root, const char *id, int timeout_ms, int *ret_fd, struct cryo_error *err)
{
	char dir[PATH_MAX];
	_cleanup_close_ int dfd = -1, fd = -1;
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : cryo_now_ms() + timeout_ms;
	int64_t backoff = 1;

	dfd = open_dir(root, id, true, dir, err);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s/lock`", dir);
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return cryo_error_set(err, errno, "lock `%s/lock`", dir);
		if (cryo_now_ms() >= deadline)
			return cryo_error_setx(err, EBUSY,
					       "container `%s` is locked by another cryo command (waited %d ms)",
					       id, timeout_ms);
		/* flock has no timed wait; back off from 1 to 50 ms */
		cryo_sleep_ms(backoff);
		backoff = backoff * 2 > 50 ? 50 : backoff * 2;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int cryo_pid_start_time(pid_t pid, uint64_t *ret)
{
	_cleanup_free_ char *buf = NULL;
	char path[64], *p;
	unsigned long long v;
	int i, r;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = cryo_read_file_at(AT_FDCWD, path, 4096, &buf, NULL);
	if (r < 0)
		return r;
	/* comm may contain spaces and parens: fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	/* after ')' come field 3 (state) ... field 22 (starttime) */
	for (i = 3; i <= 22; i++) {
		while (*p == ' ')
			p++;
		if (i == 22)
			break;
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
	}
	if (sscanf(p, "%llu", &v) != 1)
		return -EINVAL;
	*ret = v;
	return 0;
}

void cryo_state_refresh(struct cryo_state *st)
{
	uint64_t start;

	if (st->status == CRYO_STATUS_STOPPED || st->status == CRYO_STATUS_CREATING)
		return;
	if (st->pid <= 0 || cryo_pid_start_time(st->pid, &start) < 0 ||
	    (st->pid_start_time && start != st->pid_start_time)) {
		st->status = CRYO_STATUS_STOPPED;
		return;
	}
	/* a zombie init has exited: the container is stopped */
	{
		_cleanup_free_ char *buf = NULL;
		char path[64], *p;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)st->pid);
		if (cryo_read_file_at(AT_FDCWD, path, 4096, &buf, NULL) == 0 && (p = strrchr(buf, ')')) &&
		    (p[2] == 'Z' || p[2] == 'X'))
			st->status = CRYO_STATUS_STOPPED;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void cryo_strv_free(char **v)
{
	char **p;

	if (!v)
		return;
	for (p = v; *p; p++)
		free(*p);
	free(v);
}

static bool has_state(int rootfd, const char *id)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" STATE_FILE, id);
	return fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int cryo_state_list(const char *root, char ***ret, struct cryo_error *err)
{
	char **v = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d;

	d = opendir(root);
	if (!d && errno != ENOENT)
		return cryo_error_set(err, errno, "open state root `%s`", root);
	while (d && (de = readdir(d))) {
		char **nv;

		/*
		 * The root also holds directories that are not containers (the
		 * hold journal `holds/`) under names that are valid ids: a
		 * container is a directory with a state file.
		 */
		if (de->d_type != DT_DIR || cryo_validate_id(de->d_name, NULL) < 0 || !has_state(dirfd(d), de->d_name))
			continue;
		nv = realloc(v, (n + 2) * sizeof(*v));
		if (!nv)
			goto oom;
		v = nv;
		v[n] = strdup(de->d_name);
		if (!v[n])
			goto oom;
		v[++n] = NULL;
	}
	if (d)
		closedir(d);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return cryo_error_set(err, ENOMEM, "list containers");
	}
	qsort(v, n, sizeof(*v), cmp_str);
	*ret = v;
	return 0;
oom:
	if (d)
		closedir(d);
	if (v)
		v[n] = NULL;
	cryo_strv_free(v);
	return cryo_error_set(err, ENOMEM, "list containers");
}
