// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <string.h>

#include "container.h"
#include "cli.h"

int cmd_state(struct cryo_cli *cli, int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct json_object *o = NULL;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: cryo state ID\n\nPrint the OCI state of a container as JSON.\n");
		return 0;
	}
	if (argc != 2)
		return cli_usage_error("state", "expects exactly one container id");
	if (cryo_container_state_json(cli->root, argv[1], &o, &err) < 0)
		return cli_fail(&err);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return 0;
}
