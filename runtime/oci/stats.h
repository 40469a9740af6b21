/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A container's resource statistics and OOM events, for `cryo events`:
 * the JSON runc's events writes (cpu, memory, pids, blkio, hugetlb, as
 * containerd's Go client decodes them), read from the container's v1
 * controllers or its cgroup2 files; OOM kills counted from v1's
 * memory.oom_control or cgroup2's memory.events, with an fd to wait on
 * (an eventfd registered on memory.oom_control, or memory.events itself,
 * which the kernel signals with POLLPRI).
 */
#ifndef CRYO_STATS_H
#define CRYO_STATS_H

#include <stdint.h>

#include <json-c/json.h>

#include "error.h"

struct cryo_state;

/* runc's "data" object of a stats event. */
int cryo_stats_collect(const struct cryo_state *st, struct json_object **ret, struct cryo_error *err);

struct cryo_oom_watch {
	int fd;              /* poll() it for `events`; -1 = no memory cgroup */
	short events;
	int efd;             /* v1: the eventfd (== fd), read to re-arm; -1 on v2 */
	char *dir;           /* the memory cgroup directory */
	int v2;
	uint64_t last;       /* OOM kills counted so far */
};

/* Set up *w for st (a container without a memory cgroup gets fd -1). */
int cryo_oom_watch_open(const struct cryo_state *st, struct cryo_oom_watch *w, struct cryo_error *err);

/* After fd became ready (or at any time): the OOM kills since the last call. */
uint64_t cryo_oom_watch_new_kills(struct cryo_oom_watch *w);

void cryo_oom_watch_close(struct cryo_oom_watch *w);

#endif
