// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

int cryo_error_set_(struct cryo_error *err, int errnum, int with_strerror, const char *fmt, ...)
{
	char *base = NULL, *msg = NULL;
	int status = errnum > 0 ? errnum : (errnum < 0 ? -errnum : EIO);
	va_list ap;
	int r;

	if (!err)
		return -status;

	va_start(ap, fmt);
	r = vasprintf(&base, fmt, ap);
	va_end(ap);
	if (r < 0)
		base = NULL;
	if (base && with_strerror && errnum != 0) {
		if (asprintf(&msg, "%s: %s", base, strerror(status)) < 0)
			msg = NULL;
		free(base);
	} else {
		msg = base;
	}
	cryo_error_clear(err);
	err->status = status;
	err->msg = msg;
	return -status;
}

int cryo_error_prefix_(struct cryo_error *err, const char *fmt, ...)
{
	char *prefix = NULL, *msg = NULL;
	va_list ap;

	if (!err)
		return -EIO;
	if (err->status == 0)
		err->status = EIO;

	va_start(ap, fmt);
	if (vasprintf(&prefix, fmt, ap) < 0)
		prefix = NULL;
	va_end(ap);
	if (!prefix)
		return -err->status;

	if (asprintf(&msg, "%s: %s", prefix, err->msg ? err->msg : "unknown error") >= 0) {
		free(err->msg);
		err->msg = msg;
	}
	free(prefix);
	return -err->status;
}

void cryo_error_clear(struct cryo_error *err)
{
	if (!err)
		return;
	free(err->msg);
	err->msg = NULL;
	err->status = 0;
}

void cryo_error_move(struct cryo_error *dst, struct cryo_error *src)
{
	cryo_error_clear(dst);
	*dst = *src;
	src->msg = NULL;
	src->status = 0;
}

void cryo_error_warn_clear(struct cryo_error *e, const char *fmt, ...)
{
	char *what = NULL;
	va_list ap;

	if (!e || (!e->status && !e->msg))
		return;
	va_start(ap, fmt);
	if (vasprintf(&what, fmt, ap) < 0)
		what = NULL;
	va_end(ap);
	cryo_warn("%s: %s", what ? what : "warning", e->msg ? e->msg : strerror(e->status));
	free(what);
	cryo_error_clear(e);
}
