// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "container.h"
#include "state.h"
#include "stats.h"
#include "util.h"
#include "cli.h"

/* Go's durations as runc takes them: "5s", "500ms", "1m", "1h"; a bare number is seconds. */
static int parse_interval(const char *s, int64_t *ret_ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		;
	else if (*end == '\0' || strcmp(end, "s") == 0)
		v *= 1000;
	else if (strcmp(end, "m") == 0)
		v *= 60000;
	else if (strcmp(end, "h") == 0)
		v *= 3600000;
	else
		return -EINVAL;
	if (v < 1 || v > 86400000)
		return -ERANGE;
	*ret_ms = (int64_t)v;
	return 0;
}

static void emit(const char *type, const char *id, struct json_object *data)
{
	struct json_object *e = json_object_new_object();

	json_object_object_add(e, "type", json_object_new_string(type));
	json_object_object_add(e, "id", json_object_new_string(id));
	if (data)
		json_object_object_add(e, "data", data);
	printf("%s\n", json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	fflush(stdout);
	json_object_put(e);
}

/* The container as it is now; NULL (and 0) once it is gone or stopped, which ends the stream. */
static int load_live(const char *root, const char *id, struct cryo_state **ret, struct cryo_error *err)
{
	int r = cryo_container_load(root, id, ret, err);

	if (r < 0)
		return r;
	if ((*ret)->status == CRYO_STATUS_STOPPED) {
		cryo_state_free(*ret);
		*ret = NULL;
	}
	return 0;
}

int cmd_events(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stats", no_argument, NULL, 's' },
		{ "interval", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_oom_watch w = { .fd = -1, .efd = -1 };
	struct cryo_state *st = NULL;
	struct json_object *data = NULL;
	int64_t interval_ms = 5000, next;
	bool once = false;
	const char *id;
	int c, rc = 0;

	while ((c = cli_getopt(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			once = true;
			break;
		case 'i':
			if (parse_interval(optarg, &interval_ms) < 0)
				return cli_usage_error("events", "--interval takes a duration (5s, 500ms, 1m), not `%s`", optarg);
			break;
		case 'h':
			printf("Usage: cryo events [--stats] [--interval 5s] ID\n\n"
			       "Print the container's resource statistics as runc's JSON events: once with\n"
			       "--stats, else every interval, with an {\"type\":\"oom\"} event as soon as the\n"
			       "kernel OOM-kills in the container, until the container stops.\n");
			return 0;
		default:
			return cli_usage_error("events", "bad option");
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("events", "expects exactly one container id");
	id = argv[optind];

	if (load_live(cli->root, id, &st, &err) < 0)
		return cli_fail(&err);
	if (!st) {
		cryo_error_setx(&err, EINVAL, "events: container `%s` is not running", id);
		return cli_fail(&err);
	}
	if (once) {
		if (cryo_stats_collect(st, &data, &err) < 0)
			rc = cli_fail(&err);
		else
			emit("stats", id, data);
		cryo_state_free(st);
		return rc;
	}

	if (cryo_oom_watch_open(st, &w, &err) < 0) {
		cryo_state_free(st);
		return cli_fail(&err);
	}
	next = cryo_now_ms() + interval_ms;
	for (;;) {
		struct pollfd p = { .fd = w.fd, .events = w.events };
		int64_t left = next - cryo_now_ms();
		uint64_t kills;

		if (left > 0 && poll(&p, w.fd >= 0 ? 1 : 0, (int)left) < 0 && errno != EINTR) {
			cryo_error_set(&err, errno, "events: poll");
			rc = cli_fail(&err);
			break;
		}
		for (kills = cryo_oom_watch_new_kills(&w); kills > 0; kills--)
			emit("oom", id, NULL);
		if (cryo_now_ms() < next)
			continue;
		next += interval_ms;
		cryo_state_free(st);
		st = NULL;
		if (load_live(cli->root, id, &st, &err) < 0) {
			/* deleted while we watched: the stream is over */
			cryo_error_clear(&err);
			break;
		}
		if (!st)
			break;
		if (cryo_stats_collect(st, &data, &err) < 0) {
			rc = cli_fail(&err);
			break;
		}
		emit("stats", id, data);
	}
	cryo_oom_watch_close(&w);
	cryo_state_free(st);
	return rc;
}
