// SPDX-License-Identifier: GPL-2.0-only
/*
 * cryo-hook: an OCI hook that lets containers run by another runtime
 * (runc, crun, Podman, CRI-O) be frozen, fs-frozen and checkpointed by
 * cryo. At poststart it registers the container in cryo's state dir
 * (its init pid, bundle, rootfs and the cgroups the kernel reports for
 * that pid); at poststop it unregisters it.
 *
 *   cryo-hook [--root DIR] register|unregister   (OCI state JSON on stdin)
 *
 * Podman/CRI-O hooks.d: see examples/hooks.d/cryo.json.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "proc.h"
#include "state.h"
#include "util.h"

#define STDIN_MAX (1 << 20)
#define CONFIG_MAX (4 << 20)

static const char *json_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* rootfs = config.json's root.path, relative to the bundle unless absolute */
static int bundle_rootfs(const char *bundle, char **ret, struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int dfd = -1;
	struct json_object *cfg, *root;
	const char *path;
	int r;

	dfd = open(bundle, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
		return cryo_error_set(err, errno, "open bundle `%s`", bundle);
	r = cryo_read_file_at(dfd, "config.json", CONFIG_MAX, &buf, NULL);
	if (r < 0)
		return cryo_error_set(err, r, "read `%s/config.json`", bundle);
	cfg = json_tokener_parse(buf);
	if (!cfg || !json_object_object_get_ex(cfg, "root", &root) ||
	    !(path = json_str(root, "path"))) {
		json_object_put(cfg);
		return cryo_error_setx(err, EINVAL, "`%s/config.json`: no root.path", bundle);
	}
	if (path[0] == '/')
		r = asprintf(ret, "%s", path);
	else
		r = asprintf(ret, "%s/%s", bundle, path);
	json_object_put(cfg);
	return r < 0 ? cryo_error_set(err, ENOMEM, "rootfs path") : 0;
}

static int do_register(const char *root, struct json_object *in, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	const char *id = json_str(in, "id"), *bundle = json_str(in, "bundle");
	struct json_object *pidv, *ann;
	_cleanup_close_ int lockfd = -1;
	const char *backend;
	int r;

	if (!id || !bundle || !json_object_object_get_ex(in, "pid", &pidv) ||
	    json_object_get_int(pidv) <= 0)
		return cryo_error_setx(err, EINVAL, "OCI state on stdin lacks id, bundle or pid");

	r = cryo_state_new(id, &st, err);
	if (r < 0)
		return r;
	st->pid = json_object_get_int(pidv);
	st->status = CRYO_STATUS_RUNNING;
	st->created = time(NULL);
	st->bundle = strdup(bundle);
	if (!st->bundle) {
		r = cryo_error_set(err, ENOMEM, "register");
		goto out;
	}
	r = cryo_pid_start_time(st->pid, &st->pid_start_time);
	if (r < 0) {
		r = cryo_error_set(err, r, "container init %d", (int)st->pid);
		goto out;
	}
	r = bundle_rootfs(bundle, &st->rootfs, err);
	if (r < 0)
		goto out;
	r = cryo_proc_cgroups(st->pid, &st->cgroup_v2, &st->cgroup_v1_freezer, err);
	if (r < 0)
		goto out;
	st->annotations = json_object_new_object();
	if (json_object_object_get_ex(in, "annotations", &ann) && json_object_is_type(ann, json_type_object)) {
		json_object_object_foreach(ann, k, v)
			json_object_object_add(st->annotations, k, json_object_get(v));
	}
	/* the container may ask for a freezer backend, as with `cryo run` */
	backend = json_str(st->annotations, "org.cryo.freezer");
	if (!backend)
		backend = st->cgroup_v2 ? "v2" : "v1";
	if ((strcmp(backend, "v2") == 0 && !st->cgroup_v2) ||
	    (strcmp(backend, "v1") == 0 && !st->cgroup_v1_freezer) ||
	    (strcmp(backend, "v1") != 0 && strcmp(backend, "v2") != 0)) {
		r = cryo_error_setx(err, EINVAL, "org.cryo.freezer=`%s`: no such freezer hierarchy for pid %d",
				    backend, (int)st->pid);
		goto out;
	}
	st->freezer_backend = strdup(backend);
	json_object_object_add(st->annotations, "org.cryo.external", json_object_new_string("true"));

	r = cryo_state_create_dir(root, id, err);
	if (r < 0)
		goto out;
	r = cryo_state_lock(root, id, 5000, &lockfd, err);
	if (r >= 0)
		r = cryo_state_save(root, st, err);
	if (r < 0) {
		struct cryo_error e2 = CRYO_ERROR_INIT;

		cryo_state_remove_dir(root, id, &e2);
		cryo_error_clear(&e2);
	}
out:
	cryo_state_free(st);
	return r;
}

static int do_unregister(const char *root, struct json_object *in, struct cryo_error *err)
{
	const char *id = json_str(in, "id");
	_cleanup_close_ int lockfd = -1;
	int r;

	if (!id)
		return cryo_error_setx(err, EINVAL, "OCI state on stdin lacks id");
	r = cryo_state_lock(root, id, 5000, &lockfd, err);
	if (r == -ENOENT) {
		cryo_error_clear(err);
		return 0; /* never registered: nothing to undo */
	}
	if (r < 0)
		return r;
	return cryo_state_remove_dir(root, id, err);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	_cleanup_free_ char *buf = NULL;
	const char *root = "/run/cryo", *verb;
	struct json_object *in;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			root = optarg;
			break;
		case 'h':
			printf("Usage: cryo-hook [--root DIR] register|unregister < oci-state.json\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc - 1 ||
	    (strcmp(argv[optind], "register") != 0 && strcmp(argv[optind], "unregister") != 0)) {
		fprintf(stderr, "cryo-hook: expected `register` or `unregister`\n");
		return 2;
	}
	verb = argv[optind];

	r = cryo_read_file_at(STDIN_FILENO, "/dev/stdin", STDIN_MAX, &buf, NULL);
	if (r < 0) {
		fprintf(stderr, "cryo-hook: read OCI state from stdin: %s\n", strerror(-r));
		return 1;
	}
	in = json_tokener_parse(buf);
	if (!in || !json_object_is_type(in, json_type_object)) {
		json_object_put(in);
		fprintf(stderr, "cryo-hook: stdin is not an OCI state JSON object\n");
		return 1;
	}
	if (strcmp(verb, "register") == 0)
		r = do_register(root, in, &err);
	else
		r = do_unregister(root, in, &err);
	json_object_put(in);
	if (r < 0) {
		fprintf(stderr, "cryo-hook: %s: %s\n", verb, err.msg ? err.msg : strerror(-r));
		cryo_error_clear(&err);
		return 1;
	}
	return 0;
}
