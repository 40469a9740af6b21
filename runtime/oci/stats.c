// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cgfile.h"
#include "state.h"
#include "stats.h"
#include "util.h"

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

/* add key = the number in dir/name, when there is one ("max" = 0: no limit, as runc reports) */
static void add_file(struct json_object *o, const char *key, const char *dir, const char *name)
{
	uint64_t v;

	if (cryo_cgfile_read_u64(dir, name, &v) == 0)
		add_u64(o, key, v == UINT64_MAX ? 0 : v);
}

static void add_keyed(struct json_object *o, const char *key, const char *dir, const char *name, const char *k,
		      uint64_t mul)
{
	uint64_t v;

	if (cryo_cgfile_keyed(dir, name, k, &v) == 0)
		add_u64(o, key, v * mul);
}

/* every "key value" line of a flat keyed file */
static struct json_object *raw_keyed(const char *dir, const char *name)
{
	struct json_object *o = json_object_new_object();
	_cleanup_free_ char *s = NULL;
	char *line, *save = NULL;

	if (cryo_cgfile_read(dir, name, &s) < 0 || !s)
		return o;
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (sp) {
			*sp = '\0';
			add_u64(o, line, strtoull(sp + 1, NULL, 10));
		}
	}
	return o;
}

static struct json_object *cpu_stats(const struct cryo_state *st)
{
	struct json_object *cpu = json_object_new_object(), *usage = json_object_new_object();
	struct json_object *thr = json_object_new_object();
	_cleanup_free_ char *dir = NULL, *acct = NULL, *percpu = NULL;
	bool v2 = false, acct_v2 = false;

	if (cryo_cgfile_dir(st, "cpuacct", &acct, &acct_v2, NULL) == 0 && !acct_v2) {
		add_file(usage, "total", acct, "cpuacct.usage");
		if (cryo_cgfile_read(acct, "cpuacct.usage_percpu", &percpu) == 0 && percpu) {
			struct json_object *a = json_object_new_array();
			char *tok, *save = NULL;

			for (tok = strtok_r(percpu, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
				json_object_array_add(a, json_object_new_uint64(strtoull(tok, NULL, 10)));
			json_object_object_add(usage, "percpu", a);
		}
		/* cpuacct.stat counts USER_HZ ticks; runc reports nanoseconds */
		add_keyed(usage, "kernel", acct, "cpuacct.stat", "system", 1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK));
		add_keyed(usage, "user", acct, "cpuacct.stat", "user", 1000000000ULL / (uint64_t)sysconf(_SC_CLK_TCK));
	}
	if (cryo_cgfile_dir(st, "cpu", &dir, &v2, NULL) == 0 || (st->cgroup_v2 && (dir = strdup(st->cgroup_v2)) && (v2 = true))) {
		if (v2) {
			add_keyed(usage, "total", dir, "cpu.stat", "usage_usec", 1000);
			add_keyed(usage, "kernel", dir, "cpu.stat", "system_usec", 1000);
			add_keyed(usage, "user", dir, "cpu.stat", "user_usec", 1000);
			add_keyed(thr, "throttledTime", dir, "cpu.stat", "throttled_usec", 1000);
		} else {
			add_keyed(thr, "throttledTime", dir, "cpu.stat", "throttled_time", 1);
		}
		add_keyed(thr, "periods", dir, "cpu.stat", "nr_periods", 1);
		add_keyed(thr, "throttledPeriods", dir, "cpu.stat", "nr_throttled", 1);
	}
	json_object_object_add(cpu, "usage", usage);
	json_object_object_add(cpu, "throttling", thr);
	return cpu;
}

static struct json_object *mem_entry(const char *dir, const char *prefix)
{
	struct json_object *e = json_object_new_object();
	char name[64];

	snprintf(name, sizeof(name), "%s.limit_in_bytes", prefix);
	add_file(e, "limit", dir, name);
	snprintf(name, sizeof(name), "%s.usage_in_bytes", prefix);
	add_file(e, "usage", dir, name);
	snprintf(name, sizeof(name), "%s.max_usage_in_bytes", prefix);
	add_file(e, "max", dir, name);
	snprintf(name, sizeof(name), "%s.failcnt", prefix);
	add_file(e, "failcnt", dir, name);
	return e;
}

static struct json_object *memory_stats(const struct cryo_state *st)
{
	struct json_object *mem = json_object_new_object(), *raw;
	_cleanup_free_ char *dir = NULL;
	uint64_t v;
	bool v2 = false;

	if (cryo_cgfile_dir(st, "memory", &dir, &v2, NULL) < 0)
		return mem;
	if (v2) {
		struct json_object *usage = json_object_new_object(), *swap = json_object_new_object();

		add_file(usage, "usage", dir, "memory.current");
		add_file(usage, "limit", dir, "memory.max");
		add_file(usage, "max", dir, "memory.peak");
		add_keyed(usage, "failcnt", dir, "memory.events", "max", 1);
		add_file(swap, "usage", dir, "memory.swap.current");
		add_file(swap, "limit", dir, "memory.swap.max");
		json_object_object_add(mem, "usage", usage);
		json_object_object_add(mem, "swap", swap);
		raw = raw_keyed(dir, "memory.stat");
		if (cryo_cgfile_keyed(dir, "memory.stat", "file", &v) == 0)
			add_u64(mem, "cache", v);
	} else {
		json_object_object_add(mem, "usage", mem_entry(dir, "memory"));
		json_object_object_add(mem, "swap", mem_entry(dir, "memory.memsw"));
		json_object_object_add(mem, "kernel", mem_entry(dir, "memory.kmem"));
		json_object_object_add(mem, "kernelTCP", mem_entry(dir, "memory.kmem.tcp"));
		raw = raw_keyed(dir, "memory.stat");
		if (cryo_cgfile_keyed(dir, "memory.stat", "cache", &v) == 0)
			add_u64(mem, "cache", v);
	}
	json_object_object_add(mem, "raw", raw);
	return mem;
}

int cryo_stats_collect(const struct cryo_state *st, struct json_object **ret, struct cryo_error *err)
{
	struct json_object *o = json_object_new_object(), *pids = json_object_new_object();
	_cleanup_free_ char *dir = NULL;
	bool v2 = false;

	if (!o || !pids) {
		json_object_put(o);
		json_object_put(pids);
		return cryo_error_set(err, ENOMEM, "stats");
	}
	json_object_object_add(o, "cpu", cpu_stats(st));
	json_object_object_add(o, "memory", memory_stats(st));
	if (cryo_cgfile_dir(st, "pids", &dir, &v2, NULL) == 0) {
		add_file(pids, "current", dir, "pids.current");
		add_file(pids, "limit", dir, "pids.max");
	}
	json_object_object_add(o, "pids", pids);
	json_object_object_add(o, "blkio", json_object_new_object());
	json_object_object_add(o, "hugetlb", json_object_new_object());
	*ret = o;
	return 0;
}

/* ---- OOM ---- */

static uint64_t oom_kills(const struct cryo_oom_watch *w)
{
	uint64_t v = 0;

	/* v1 has oom_kill since Linux 4.13; under_oom-only kernels count nothing */
	if (cryo_cgfile_keyed(w->dir, w->v2 ? "memory.events" : "memory.oom_control", "oom_kill", &v) < 0)
		return w->last;
	return v;
}

int cryo_oom_watch_open(const struct cryo_state *st, struct cryo_oom_watch *w, struct cryo_error *err)
{
	bool v2 = false;
	int r;

	*w = (struct cryo_oom_watch){ .fd = -1, .efd = -1 };
	r = cryo_cgfile_dir(st, "memory", &w->dir, &v2, NULL);
	if (r < 0)
		return 0;
	w->v2 = v2;
	w->last = oom_kills(w);
	if (v2) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/memory.events", w->dir);
		w->fd = open(path, O_RDONLY | O_CLOEXEC);
		if (w->fd < 0)
			return cryo_error_set(err, errno, "open `%s`", path);
		w->events = POLLPRI;
	} else {
		_cleanup_close_ int ctl = -1;
		char path[4096], line[64];

		snprintf(path, sizeof(path), "%s/memory.oom_control", w->dir);
		ctl = open(path, O_RDONLY | O_CLOEXEC);
		if (ctl < 0)
			return cryo_error_set(err, errno, "open `%s`", path);
		w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->efd < 0)
			return cryo_error_set(err, errno, "eventfd");
		/* the v1 notification API: "<eventfd> <fd of memory.oom_control>" */
		snprintf(line, sizeof(line), "%d %d", w->efd, ctl);
		r = cryo_cgfile_write(w->dir, "cgroup.event_control", line, err);
		if (r < 0) {
			close(w->efd);
			w->efd = -1;
			return r;
		}
		w->fd = w->efd;
		w->events = POLLIN;
	}
	return 0;
}

uint64_t cryo_oom_watch_new_kills(struct cryo_oom_watch *w)
{
	uint64_t now, n, ticks = 0;

	/* drain the eventfd so poll() waits for the next one (EAGAIN: nothing signalled) */
	if (w->efd >= 0 && read(w->efd, &ticks, sizeof(ticks)) != sizeof(ticks))
		ticks = 0;
	if (!w->dir)
		return 0;
	now = oom_kills(w);
	n = now > w->last ? now - w->last : 0;
	w->last = now;
	/* a v1 kernel without the oom_kill counter still signals each OOM */
	return n ? n : ticks;
}

void cryo_oom_watch_close(struct cryo_oom_watch *w)
{
	if (w->v2 && w->fd >= 0)
		close(w->fd);
	if (w->efd >= 0)
		close(w->efd);
	free(w->dir);
	*w = (struct cryo_oom_watch){ .fd = -1, .efd = -1 };
}
