// SPDX-License-Identifier: GPL-2.0-only
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "container.h"
#include "cli.h"

int cmd_list(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct json_object *arr = NULL;
	bool json = false, quiet = false;
	char **ids = NULL, **p;
	int c;

	while ((c = cli_getopt(argc, argv, "+f:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (strcmp(optarg, "json") == 0)
				json = true;
			else if (strcmp(optarg, "table") != 0)
				return cli_usage_error("list", "--format must be `table` or `json`");
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			printf("Usage: cryo list [--format table|json] [-q|--quiet]\n");
			return 0;
		default:
			return cli_usage_error("list", "bad option");
		}
	}
	if (optind != argc)
		return cli_usage_error("list", "takes no arguments");
	if (cryo_state_list(cli->root, &ids, &err) < 0)
		return cli_fail(&err);
	if (json)
		arr = json_object_new_array();
	else if (!quiet)
		printf("%-20s %-8s %-10s %-40s %-20s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED", "FREEZER");
	for (p = ids; *p; p++) {
		struct json_object *o = NULL, *v;
		struct cryo_error e = CRYO_ERROR_INIT;

		if (quiet) {
			printf("%s\n", *p);
			continue;
		}
		/* a container vanishing or half-created while we list is skipped */
		if (cryo_container_state_json(cli->root, *p, &o, &e) < 0) {
			cryo_error_clear(&e);
			continue;
		}
		if (json) {
			json_object_array_add(arr, o);
			continue;
		}
		printf("%-20s %-8d %-10s %-40s %-20s %s\n", *p, json_object_get_int(json_object_object_get(o, "pid")),
		       json_object_get_string(json_object_object_get(o, "status")),
		       json_object_get_string(json_object_object_get(o, "bundle")),
		       json_object_get_string(json_object_object_get(o, "created")),
		       json_object_object_get_ex(o, "org.cryo.freezer", &v) ? json_object_get_string(v) : "-");
		json_object_put(o);
	}
	if (json) {
		/* one line, as runc prints it */
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(arr);
	}
	cryo_strv_free(ids);
	return 0;
}
