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
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <json-c/json.h>

#include "hold.h"
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
int cryo_receive_bundle_journal(const char *root, const char *id, const char *bundle, char token[CRYO_BUNDLE_TOKEN_SIZE],
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

void cryo_receive_bundle_keep(const char *bundle, const char *id, struct cryo_hold **h)
{
	_cleanup_close_ int bfd = -1;

	if (!*h)
		return;
	bfd = open(bundle, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd >= 0)
		(void)unlinkat(bfd, CRYO_BUNDLE_MARKER, 0);
	cryo_migrate_release_dir(h, id);
}
