// SPDX-License-Identifier: GPL-2.0-only
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "checkpoint.h"
#include "container.h"
#include "features.h"
#include "migrate.h"
#include "restore.h"
#include "cli.h"

/* The pipelines of this cryo, each a step table of its layer (step.h). */
static const struct cryo_step_table *const step_tables[] = {
	&cryo_checkpoint_step_table,
	&cryo_pre_dump_step_table,
	&cryo_restore_step_table,
	&cryo_create_step_table,
	&cryo_migrate_step_table,
	&cryo_receive_step_table,
	NULL,
};

int cmd_features(struct cryo_cli *cli, int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct json_object *o = NULL;
	int r;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: cryo features\n\nPrint what this build and this host support, as JSON.\n");
		return 0;
	}
	if (argc > 1)
		return cli_usage_error("features", "unexpected argument `%s`", argv[1]);

	r = cryo_features_json(step_tables, &o, &err);
	if (r < 0)
		return cli_fail(&err);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return 0;
}
