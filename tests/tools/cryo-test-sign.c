// SPDX-License-Identifier: GPL-2.0-only
/*
 * libcryo's image signing for the host tests, on an image made without
 * a container (cryo-test-criu seal):
 *
 *   cryo-test-sign sign DIR KEY      sign DIR's manifest (what checkpoint --sign-key does)
 *   cryo-test-sign verify DIR KEY    verify it (what restore --verify-key does first)
 */
#include <stdio.h>
#include <string.h>

#include "sign.h"

int main(int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int r;

	if (argc != 4)
		goto usage;
	if (strcmp(argv[1], "sign") == 0)
		r = cryo_image_sign(argv[2], argv[3], &err);
	else if (strcmp(argv[1], "verify") == 0)
		r = cryo_image_verify(argv[2], argv[3], &err);
	else
		goto usage;
	if (r < 0) {
		fprintf(stderr, "cryo-test-sign: %s\n", err.msg ? err.msg : "?");
		cryo_error_clear(&err);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: cryo-test-sign sign|verify DIR KEY\n");
	return 2;
}
