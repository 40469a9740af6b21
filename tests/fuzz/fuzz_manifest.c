// SPDX-License-Identifier: GPL-2.0-only
/*
 * Manifest parser and verifier (runtime/manifest.c). The first input byte
 * picks what the rest is:
 *
 *   even  a manifest file as read from an image (magic, self-digest,
 *         protobuf): the framing checks;
 *   odd   the protobuf payload alone, framed here with a correct digest,
 *         so the fuzzer reaches protobuf-c and the shape checks without
 *         having to solve SHA-256.
 *
 * A manifest that parses must pack and parse again to the same bytes, and
 * is then verified against a small image directory made at start-up
 * (files, a symlink), which drives the listing and per-file checks.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "manifest.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static int dfd = -1;

static void remove_dir(void)
{
	if (dfd >= 0)
		close(dfd);
	if (dir[0])
		(void)cryo_rm_rf_at(AT_FDCWD, dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	strcpy(dir, "/tmp/cryo-fuzz-manifest.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	atexit(remove_dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || cryo_write_new_file_at(dfd, "core-1.img", "core", 4, 0600) < 0 ||
	    cryo_write_new_file_at(dfd, "pages-1.img", "0123456789abcdef", 16, 0600) < 0 ||
	    cryo_write_new_file_at(dfd, "rootfs.img", "", 0, 0600) < 0 || symlinkat("../parent", dfd, "parent") < 0)
		abort();
	return 0;
}

static uint8_t *pack(const Cryo__Manifest *m, size_t *ret_len)
{
	size_t len = cryo__manifest__get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);

	if (!buf || cryo__manifest__pack(m, buf) != len)
		abort();
	*ret_len = len;
	return buf;
}

/* The on-disk framing around a payload (what cryo_manifest_write_at() writes). */
static uint8_t *frame(const uint8_t *payload, size_t len, size_t *ret_len)
{
	uint8_t *buf = malloc(40 + len);

	if (!buf)
		abort();
	memcpy(buf, "CRYOMAN1", 8);
	if (cryo_digest_buf(payload, len, buf + 8, NULL) < 0)
		abort();
	if (len)
		memcpy(buf + 40, payload, len);
	*ret_len = 40 + len;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	Cryo__Manifest *m = NULL, *m2 = NULL;
	uint8_t *file, *p1, *p2, *f2;
	size_t flen, l1, l2, f2len;
	int r;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		file = frame(data + 1, size - 1, &flen);
	} else {
		flen = size - 1;
		file = malloc(flen ? flen : 1);
		if (!file)
			abort();
		memcpy(file, data + 1, flen);
	}
	r = cryo_manifest_parse(file, flen, &m, &err);
	free(file);
	if (getenv("CRYO_FUZZ_DEBUG")) /* triage: say what became of the input */
		fprintf(stderr, "%s\n", r < 0 ? err.msg : "parsed");
	if (r < 0) {
		if (!err.msg || m)
			abort();
		cryo_error_clear(&err);
		return 0;
	}

	/* what parses, packs and parses back to the same thing */
	p1 = pack(m, &l1);
	f2 = frame(p1, l1, &f2len);
	if (cryo_manifest_parse(f2, f2len, &m2, &err) < 0) {
		fprintf(stderr, "re-parse failed: %s\n", err.msg);
		abort();
	}
	p2 = pack(m2, &l2);
	if (l1 != l2 || memcmp(p1, p2, l1) != 0)
		abort();
	free(p1);
	free(p2);
	free(f2);
	cryo_manifest_free(m2);

	r = cryo_manifest_verify_at(dfd, m, &err);
	if (r < 0 && !err.msg)
		abort();
	cryo_error_clear(&err);
	cryo_manifest_free(m);
	return 0;
}
