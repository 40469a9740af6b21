// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "freezer.h"
#include "log.h"
#include "sleep.h"
#include "state.h"
#include "util.h"

#define SLEEP_FILE "sleep.json"
#define SLEEP_MAX_BYTES (4 << 20)

static void add_str(struct json_object *o, const char *k, const char *v)
{
	if (v)
		json_object_object_add(o, k, json_object_new_string(v));
}

static const char *get_str(struct json_object *o, const char *k)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int cryo_sleep_pre(const char *root, struct cryo_sleep_report *ret, struct cryo_error *err)
{
	struct cryo_sleep_report rep = { 0 };
	struct json_object *list = NULL;
	_cleanup_close_ int dfd = -1;
	char **ids = NULL;
	const char *text;
	size_t i;
	int r;

	r = cryo_state_list(root, &ids, err);
	if (r < 0)
		return r;
	list = json_object_new_array();
	for (i = 0; ids[i]; i++) {
		struct cryo_error e = CRYO_ERROR_INIT;
		struct cryo_state *st = NULL;
		enum cryo_freezer_state fs;
		struct json_object *o;

		if (cryo_state_load(root, ids[i], &st, &e) < 0 ||
		    cryo_freezer_state_of(st->freezer_backend, st->cgroup_v2, st->cgroup_v1_freezer, &fs, &e) < 0) {
			/* a container that is going away cannot be left frozen by us */
			cryo_debug("sleep pre: skipping `%s`: %s", ids[i], e.msg ? e.msg : "?");
			cryo_error_clear(&e);
			cryo_state_free(st);
			continue;
		}
		if (fs == CRYO_FREEZER_FROZEN) {
			o = json_object_new_object();
			add_str(o, "id", st->id);
			add_str(o, "backend", st->freezer_backend);
			add_str(o, "cgroupV2", st->cgroup_v2);
			add_str(o, "cgroupV1Freezer", st->cgroup_v1_freezer);
			json_object_array_add(list, o);
			rep.recorded++;
		}
		cryo_state_free(st);
	}
	cryo_strv_free(ids);

	r = cryo_mkdir_p(root, 0700);
	dfd = r < 0 ? -1 : open(root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0) {
		json_object_put(list);
		return cryo_error_set(err, r < 0 ? r : -errno, "open state root `%s`", root);
	}
	text = json_object_to_json_string_ext(list, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	r = cryo_write_new_file_at(dfd, SLEEP_FILE, text, strlen(text), 0600);
	json_object_put(list);
	if (r < 0)
		return cryo_error_set(err, r, "write `%s/%s`", root, SLEEP_FILE);
	*ret = rep;
	return 0;
}

int cryo_sleep_post(const char *root, int64_t timeout_ms, struct cryo_sleep_report *ret, struct cryo_error *err)
{
	struct cryo_sleep_report rep = { 0 };
	_cleanup_free_ char *buf = NULL, *failed = NULL;
	_cleanup_close_ int dfd = -1;
	struct json_object *list;
	size_t i, n, failed_len = 0;
	int r;

	dfd = open(root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0 && errno != ENOENT)
		return cryo_error_set(err, errno, "open state root `%s`", root);
	r = dfd < 0 ? -ENOENT : cryo_read_file_at(dfd, SLEEP_FILE, SLEEP_MAX_BYTES, &buf, NULL);
	if (r == -ENOENT) {
		/* no pre record: nothing was frozen by us before sleep */
		*ret = rep;
		return 0;
	}
	if (r < 0)
		return cryo_error_set(err, r, "read `%s/%s`", root, SLEEP_FILE);
	list = json_tokener_parse(buf);
	if (!list || !json_object_is_type(list, json_type_array)) {
		json_object_put(list);
		unlinkat(dfd, SLEEP_FILE, 0);
		return cryo_error_setx(err, EINVAL, "`%s/%s` is not a JSON array", root, SLEEP_FILE);
	}

	n = json_object_array_length(list);
	rep.recorded = (unsigned)n;
	for (i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(list, i);
		const char *id = get_str(o, "id");
		struct cryo_error e = CRYO_ERROR_INIT;
		struct cryo_freezer *f = NULL;
		enum cryo_freezer_state fs;

		struct cryo_state *st = NULL;

		/*
		 * Only a container that still exists, with the cgroup recorded
		 * before sleep, is frozen again: one deleted (or re-created)
		 * while the machine slept is not ours to freeze any more.
		 */
		if (!id || cryo_state_load(root, id, &st, &e) < 0 ||
		    !same_str(st->cgroup_v2, get_str(o, "cgroupV2")) ||
		    !same_str(st->cgroup_v1_freezer, get_str(o, "cgroupV1Freezer")) ||
		    cryo_freezer_open_for(st->freezer_backend, st->cgroup_v2, st->cgroup_v1_freezer, &f, &e) < 0) {
			rep.vanished++;
			cryo_error_clear(&e);
			cryo_state_free(st);
			continue;
		}
		cryo_state_free(st);
		rep.checked++;
		r = cryo_freezer_get_state(f, &fs, &e);
		if (r >= 0 && fs != CRYO_FREEZER_FROZEN) {
			cryo_warn("container `%s` was %s after resume: freezing it again", id,
				  cryo_freezer_state_names[fs]);
			r = cryo_freezer_freeze(f, timeout_ms, 0, &e);
			if (r >= 0)
				rep.refrozen++;
		}
		if (r < 0) {
			char *nf = NULL;

			if (asprintf(&nf, "%s%s`%s` (%s)", failed ? failed : "", failed ? ", " : "", id,
				     e.msg ? e.msg : "?") >= 0) {
				free(failed);
				failed = nf;
				failed_len++;
			}
		}
		cryo_error_clear(&e);
		cryo_freezer_close(f);
	}
	json_object_put(list);
	unlinkat(dfd, SLEEP_FILE, 0);
	if (failed)
		return cryo_error_setx(err, EBUSY, "%zu container(s) frozen before sleep could not be frozen again: %s",
				       failed_len, failed);
	*ret = rep;
	return 0;
}
