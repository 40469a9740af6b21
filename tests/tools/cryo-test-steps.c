// SPDX-License-Identifier: GPL-2.0-only
/*
 * Print the step names of a libcryo step table, one a line, so that the
 * fault-injection tests iterate the table itself instead of a copy of it.
 *
 *	cryo-test-steps create
 */
#include <stdio.h>
#include <string.h>

#include "container.h"

int main(int argc, char **argv)
{
	const char *name;
	size_t i;

	if (argc != 2 || strcmp(argv[1], "create") != 0) {
		fprintf(stderr, "usage: cryo-test-steps create\n");
		return 2;
	}
	for (i = 0; (name = cryo_container_create_step(i)); i++)
		printf("%s\n", name);
	return 0;
}
