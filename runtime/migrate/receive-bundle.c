// SPDX-License-Identifier: GPL-2.0-only
/*
 * The bundle `cryo receive` makes, journalled until the commit: a
 * CRYO_HOLD_BUNDLE hold whose detail names a random marker, written into
 * the bundle as CRYO_BUNDLE_MARKER. Should receive die before the commit,
 * the undo (`cryo recover`) removes the bundle, and only one that carries
 * that marker (or an empty dir): a journal entry never removes another's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <json-c/json.h>

#include "hold.h"
#include "log.h"
#include "migrate.h"
#include "protocol.h"
#include "receive-bundle.h"
#include "util.h"

int cryo_receive_bundle_undo(const struct cryo_hold_rec *rec, struct cryo_error *err)
{
	_cleanup_free_ char *parent = NULL;
	_cleanup_close_ int pfd = -1, bfd = -1;
	struct json_object *d = NULL, *t;
	char mark[64] = "";
	const char *base, *want = NULL;
	ssize_t n;
	int r;

	base = strrchr(rec->target, '/');
	if (!base || base == rec->target || cryo_validate_id(base + 1, NULL) < 0)
		return cryo_error_setx(err, EINVAL, "`%s` is not a received bundle", rec->target);
	parent = strndup(rec->target, (size_t)(base - rec->target));
	if (!parent)
		return cryo_error_set(err, ENOMEM, "received bundle");
	base++;
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0 && errno == ENOENT)
		return 0;
	if (pfd < 0)
		return cryo_error_set(err, errno, "open `%s`", parent);
	bfd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0 && errno == ENOENT)
		return 0;
	if (bfd < 0)
		return cryo_error_set(err, errno, "open `%s`", rec->target);
	/* made, and killed before the marker: an empty dir */
	if (unlinkat(pfd, base, AT_REMOVEDIR) == 0)
		return 0;
	if (rec->detail) {
		d = json_tokener_parse(rec->detail);
		if (d && json_object_object_get_ex(d, "marker", &t) && json_object_is_type(t, json_type_string))
			want = json_object_get_string(t);
	}
	r = openat(bfd, CRYO_BUNDLE_MARKER, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (r >= 0) {
		n = read(r, mark, sizeof(mark) - 1);
		close(r);
		mark[n > 0 ? n : 0] = '\0';
	}
	if (!want || !*want || strcmp(mark, want) != 0) {
		json_object_put(d);
		return cryo_error_setx(err, EEXIST, "`%s` does not carry the marker of the receive that made it: left as it is",
				       rec->target);
	}
	json_object_put(d);
	r = cryo_rm_rf_at(pfd, base);
	if (r < 0)
		return cryo_error_set(err, -r, "remove `%s`", rec->target);
	return 0;
}

/* Journal the bundle dir `bundle` (not made yet) with a fresh marker in token */
static int bundle_journal(const char *root, const char *id, const char *bundle, char token[CRYO_BUNDLE_TOKEN_SIZE],
			  struct cryo_hold **ret, struct cryo_error *err)
{
	unsigned char rnd[16];
	char detail[64], name[160];
	size_t i;
	int r;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return cryo_error_set(err, errno, "receive: random marker");
	for (i = 0; i < sizeof(rnd); i++)
		snprintf(token + 2 * i, 3, "%02x", rnd[i]);
	snprintf(name, sizeof(name), "%s@bundle", id);
	r = cryo_hold_acquire(root, name, CRYO_HOLD_BUNDLE, bundle, "bundle", 0,
			      CRYO_HOLD_UNDO_ON_EXIT | CRYO_HOLD_NO_WATCHDOG, cryo_receive_bundle_undo, ret, err);
	if (r < 0)
		return r;
	snprintf(detail, sizeof(detail), "{\"marker\":\"%s\"}", token);
	return cryo_hold_set_detail(*ret, detail, err);
}

int cryo_receive_bundle_make(struct cryo_receive_bundle *b, const char *root, const char *bundle_dir, const char *id,
			     struct cryo_error *err)
{
	_cleanup_close_ int bdfd = -1;
	int r;

	if (b->made)
		return 0;
	r = cryo_mkdir_p(bundle_dir, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", bundle_dir);
	if (!b->path && asprintf(&b->path, "%s/%s", bundle_dir, id) < 0) {
		b->path = NULL;
		return cryo_error_set(err, ENOMEM, "bundle");
	}
	bdfd = open(bundle_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bdfd < 0)
		return cryo_error_set(err, errno, "open `%s`", bundle_dir);
	/* journalled first: killed from here on, `cryo recover` removes it */
	r = bundle_journal(root, id, b->path, b->token, &b->hold, err);
	if (r < 0)
		return r;
	if (mkdirat(bdfd, id, 0700) < 0) {
		r = cryo_error_set(err, errno, "create the bundle `%s`", b->path);
		cryo_migrate_release_dir(&b->hold, id);  /* (someone else's: not ours to remove) */
		return r;
	}
	b->made = true;
	b->fd = openat(bdfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (b->fd < 0)
		return cryo_error_set(err, errno, "open `%s`", b->path);
	r = cryo_write_new_file_unsynced_at(b->fd, CRYO_BUNDLE_MARKER, b->token, strlen(b->token), 0600);
	if (r < 0)
		return cryo_error_set(err, -r, "write `%s/%s`", b->path, CRYO_BUNDLE_MARKER);
	return 0;
}

/*
 * The image is not verified yet: nothing extracted here is used before
 * it is (the restore comes after the verify), and the extraction is the
 * restore's own, chroot()ed into the new dir with its refusals.
 */
void cryo_receive_bundle_ahead(struct cryo_receive_bundle *b, const char *root, const char *bundle_dir,
			       const char *id, int image_dirfd, const char *name)
{
	struct cryo_error e = CRYO_ERROR_INIT;

	if (cryo_receive_bundle_make(b, root, bundle_dir, id, &e) < 0 ||
	    cryo_snapshot_pre_start(image_dirfd, name, b->fd, CRYO_BUNDLE_ROOTFS_AHEAD, &b->pre, &e) < 0)
		cryo_debug("receive `%s`: the rootfs is not extracted ahead: %s", id, e.msg);
	else
		cryo_debug("receive `%s`: extracting `%s` ahead into `%s/%s` (pid %d)", id, name, b->path,
			   CRYO_BUNDLE_ROOTFS_AHEAD, (int)b->pre.pid);
	cryo_error_clear(&e);
}

void cryo_receive_bundle_remove(struct cryo_receive_bundle *b, const char *bundle_dir, const char *id)
{
	_cleanup_close_ int bdfd = -1;

	cryo_snapshot_pre_cancel(&b->pre);
	closep(&b->fd);
	if (!b->made)
		return;
	bdfd = open(bundle_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bdfd < 0 || cryo_rm_rf_at(bdfd, id) < 0)
		cryo_warn("receive `%s`: undo: could not remove the bundle `%s`", id, b->path);
	else
		cryo_migrate_release_dir(&b->hold, id);
	b->made = false;
}

void cryo_receive_bundle_keep(struct cryo_receive_bundle *b, const char *id)
{
	if (!b->hold)
		return;
	if (b->fd >= 0)
		(void)unlinkat(b->fd, CRYO_BUNDLE_MARKER, 0);
	cryo_migrate_release_dir(&b->hold, id);
}

void cryo_receive_bundle_free(struct cryo_receive_bundle *b)
{
	cryo_snapshot_pre_cancel(&b->pre);
	closep(&b->fd);
	free(b->path);
	b->path = NULL;
	/* (a bundle the undo could not remove: its journal entry stays, for `cryo recover`) */
	if (b->hold)
		cryo_hold_free(b->hold);
	b->hold = NULL;
}
