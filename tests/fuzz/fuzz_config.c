// SPDX-License-Identifier: GPL-2.0-only
/*
 * config.json parser (runtime/spec.c): any bytes in, a struct cryo_spec
 * or an error out; never a crash, a leak or a read past the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_spec *spec = NULL;
	char *text;
	int r;

	/* an exact-size copy, not NUL-terminated: ASan sees any read past len */
	text = malloc(size ? size : 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	r = cryo_spec_parse(text, size, &spec, &err);
	if (getenv("CRYO_FUZZ_DEBUG")) /* triage: say what became of the input */
		fprintf(stderr, "%s\n", r < 0 ? err.msg : "parsed");
	if (r < 0 && !err.msg)
		abort(); /* every failure says why */
	if (r >= 0 && (!spec || err.msg))
		abort();
	/* JSON text never holds a raw NUL: one that was accepted was cut short somewhere */
	if (r >= 0 && memchr(data, '\0', size))
		abort();
	cryo_spec_free(spec);
	cryo_error_clear(&err);
	free(text);
	return 0;
}
