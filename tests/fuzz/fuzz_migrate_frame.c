// SPDX-License-Identifier: GPL-2.0-only
/*
 * The migrate frame parser (runtime/transport.c): what `cryo receive`
 * and `cryo migrate` do with every byte a peer sends. The input is a
 * byte stream; frames are parsed from it one after the other, as the
 * transport does, until one is incomplete or refused. Every frame that
 * parses must be within the bounds the receivers rely on, and pack back
 * to bytes that parse to the same kind.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const Cryo__MigrateFrame *f)
{
	size_t n = cryo__migrate_frame__get_packed_size(f);
	Cryo__MigrateFrame *again = NULL;
	uint8_t *buf;

	if (f->body_case == CRYO__MIGRATE_FRAME__BODY_CHUNK && f->chunk->data.len > CRYO_MIGRATE_CHUNK_SIZE)
		abort();
	if (f->body_case == CRYO__MIGRATE_FRAME__BODY_FILE &&
	    strnlen(f->file->name, CRYO_MIGRATE_NAME_MAX + 1) > CRYO_MIGRATE_NAME_MAX)
		abort();
	if (n > CRYO_MIGRATE_FRAME_MAX)
		return; /* repacking may grow (defaults made explicit): not a bug of ours */
	/*
	 * protobuf-c keeps unknown fields verbatim, even ones it could not
	 * pack validly again (field number 0): the round trip is only
	 * meaningful without them.
	 */
	if (f->base.n_unknown_fields || ((const ProtobufCMessage *)f->hello)->n_unknown_fields)
		return;
	buf = malloc(n ? n : 1);
	if (!buf)
		return;
	cryo__migrate_frame__pack(f, buf);
	if (cryo_migrate_frame_decode(buf, n, &again, NULL) != 0 || again->body_case != f->body_case)
		abort();
	cryo_migrate_frame_free(again);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct cryo_error err = CRYO_ERROR_INIT;
		Cryo__MigrateFrame *f = NULL;
		size_t used = 0;
		int r = cryo_migrate_frame_parse(data + off, size - off, &used, &f, &err);

		cryo_error_clear(&err);
		if (r == -EAGAIN || r < 0)
			break;
		if (used < 4 || used > size - off)
			abort();
		check(f);
		cryo_migrate_frame_free(f);
		off += used;
	}
	return 0;
}
