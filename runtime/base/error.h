/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Errors as values: every libcryo function that can fail returns a negative
 * errno and fills a struct cryo_error with one sentence that carries the
 * whole path of causes ("checkpoint `web`: freeze cgroup: ...").
 */
#ifndef CRYO_ERROR_H
#define CRYO_ERROR_H

#include <stdarg.h>
#include <stddef.h>

struct cryo_error {
	int status;   /* positive errno, 0 when no error is set */
	char *msg;    /* malloc'd, NULL when no error is set */
};

#define CRYO_ERROR_INIT { 0, NULL }

/*
 * Set *err (if err is not NULL) to "fmt: strerror(errnum)" and return
 * -errnum (cryo_error_set()); with_strerror 0 leaves the suffix out
 * (cryo_error_setx()). errnum 0 means "no errno": the message stands
 * alone and -EIO is returned.
 */
int cryo_error_set_(struct cryo_error *err, int errnum, int with_strerror, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Prepend "fmt: " to the message in *err; returns -err->status. */
int cryo_error_prefix_(struct cryo_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The wrappers make "the return value is negative" visible at every call
 * site, so callers (and static analysers) can rely on `return
 * cryo_error_set(...)` never looking like success.
 */
static inline int cryo_error_negative(int r)
{
	return r < 0 ? r : -5 /* EIO */;
}
#define cryo_error_set(err, errnum, ...) cryo_error_negative(cryo_error_set_(err, errnum, 1, __VA_ARGS__))
#define cryo_error_setx(err, errnum, ...) cryo_error_negative(cryo_error_set_(err, errnum, 0, __VA_ARGS__))
#define cryo_error_prefix(err, ...) cryo_error_negative(cryo_error_prefix_(err, __VA_ARGS__))

/* Free the message and reset *err. Accepts NULL. */
void cryo_error_clear(struct cryo_error *err);

/* Move src into *dst (dst cleared first); src is left empty. */
void cryo_error_move(struct cryo_error *dst, struct cryo_error *src);

/*
 * For a failure that must not hide the first error (an undo, a cleanup,
 * a best-effort step): log "fmt: <message of *e>" as a warning, then
 * clear *e. Nothing is logged when *e holds no error.
 */
void cryo_error_warn_clear(struct cryo_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
