/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * PM-resume skipping without the kernel module (seeds/005 in userspace):
 * the system-sleep hook records, before suspend, which containers are
 * FROZEN; after resume it checks each one and freezes again any that the
 * suspend/resume cycle thawed, so what cryo froze stays frozen. With the
 * kmod loaded its PM notifier does the same inside the kernel.
 */
#ifndef CRYO_SLEEP_H
#define CRYO_SLEEP_H

#include <stdint.h>

#include "error.h"

struct cryo_sleep_report {
	unsigned recorded;   /* frozen containers recorded before sleep */
	unsigned checked;    /* of those, found again after resume */
	unsigned refrozen;   /* found thawed after resume and frozen again */
	unsigned vanished;   /* deleted or stopped meanwhile: skipped */
};

/* Before sleep: record every FROZEN container under root in <root>/sleep.json. */
int cryo_sleep_pre(const char *root, struct cryo_sleep_report *ret, struct cryo_error *err);

/*
 * After resume: every recorded container must be FROZEN again, within
 * timeout_ms each. Fails naming those that could not be re-frozen.
 */
int cryo_sleep_post(const char *root, int64_t timeout_ms, struct cryo_sleep_report *ret, struct cryo_error *err);

#endif
