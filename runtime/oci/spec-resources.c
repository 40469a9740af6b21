// SPDX-License-Identifier: GPL-2.0-only
/*
 * config.json's linux.resources (spec.h: struct cryo_spec_resources): the
 * memory, devices, blkio, network, hugepages and pids limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "spec.h"
#include "spec-json.h"
#include "util.h"

#define CFG CRYO_SPEC_CFG

/* The memory fields besides limit and swap: soft limit, kernel memory, swappiness, the OOM killer. */
static int parse_memory_v1(struct json_object *mem, struct cryo_spec_resources *res, struct cryo_error *err)
{
	int64_t x = 0;
	int r;

	r = cryo_spec_json_get_int(mem, "reservation", "linux.resources.memory.reservation", -1,
				   INT64_MAX, &res->memory_reservation,
				   &res->has_memory_reservation, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(mem, "kernel", "linux.resources.memory.kernel", -1, INT64_MAX, &res->memory_kernel,
			    &res->has_memory_kernel, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(mem, "kernelTCP", "linux.resources.memory.kernelTCP", -1,
					   INT64_MAX, &res->memory_kernel_tcp,
					   &res->has_memory_kernel_tcp, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(mem, "swappiness", "linux.resources.memory.swappiness", 0, 100, &x,
			    &res->has_memory_swappiness, err);
	if (r >= 0)
		r = cryo_spec_json_get_bool(mem, "disableOOMKiller", "linux.resources.memory.disableOOMKiller",
			     &res->disable_oom_killer, err);
	res->memory_swappiness = (uint64_t)x;
	return r;
}

#define CRYO_SPEC_MAX_DEV_RULES 1024

static int parse_dev_rule(struct json_object *e, const char *name, struct cryo_spec_dev_rule *d, struct cryo_error *err)
{
	_cleanup_free_ char *type = NULL, *access = NULL;
	bool has_allow = false, has = false;
	int r;

	if (!json_object_is_type(e, json_type_object))
		return cryo_spec_json_bad(err, name, "must be an object");
	has_allow = cryo_spec_json_field(e, "allow") != NULL;
	r = cryo_spec_json_get_bool(e, "allow", name, &d->allow, err);
	if (r >= 0)
		r = cryo_spec_json_get_string(e, "type", name, 1, &type, err);
	if (r >= 0)
		r = cryo_spec_json_get_string(e, "access", name, 3, &access, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(e, "major", name, -1, UINT32_MAX, &d->major, &has, err);
	if (r >= 0 && !has)
		d->major = -1;
	if (r >= 0) {
		has = false;
		r = cryo_spec_json_get_int(e, "minor", name, -1, UINT32_MAX, &d->minor, &has, err);
	}
	if (r >= 0 && !has)
		d->minor = -1;
	if (r < 0)
		return r;
	if (!has_allow)
		return cryo_spec_json_bad(err, name, "needs allow");
	d->type = type && *type ? *type : 'a';
	if (!strchr("acb", d->type))
		return cryo_spec_json_bad(err, name, "type must be a, c or b");
	snprintf(d->access, sizeof(d->access), "%s", access && *access ? access : "rwm");
	if (strspn(d->access, "rwm") != strlen(d->access))
		return cryo_spec_json_bad(err, name, "access must be made of r, w and m");
	return 0;
}

static int parse_dev_rules(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(o, "devices");
	void *tab = NULL;
	char name[64];
	size_t i, n;
	int r;

	r = cryo_spec_json_get_array(v, "linux.resources.devices", CRYO_SPEC_MAX_DEV_RULES,
				     sizeof(*res->dev_rules), &tab, &n, err);
	res->dev_rules = tab;
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "linux.resources.devices[%zu]", i);
		r = parse_dev_rule(json_object_array_get_idx(v, i), name, &res->dev_rules[i], err);
		if (r < 0)
			return r;
	}
	res->n_dev_rules = n;
	return 0;
}

static const char *const blkio_list_keys[_CRYO_BLKIO_LIST_MAX] = {
	[CRYO_BLKIO_WEIGHT_DEVICE] = "weightDevice",
	[CRYO_BLKIO_THROTTLE_READ_BPS] = "throttleReadBpsDevice",
	[CRYO_BLKIO_THROTTLE_WRITE_BPS] = "throttleWriteBpsDevice",
	[CRYO_BLKIO_THROTTLE_READ_IOPS] = "throttleReadIOPSDevice",
	[CRYO_BLKIO_THROTTLE_WRITE_IOPS] = "throttleWriteIOPSDevice",
};

static int get_weight(struct json_object *o, const char *key, const char *name, uint16_t *ret, struct cryo_error *err)
{
	int64_t x = 0;
	bool has = false;
	int r = cryo_spec_json_get_int(o, key, name, 10, 1000, &x, &has, err);

	if (r >= 0 && has)
		*ret = (uint16_t)x;
	return r;
}

static int parse_blkio_dev(struct json_object *e, const char *name, bool weights, struct cryo_spec_blkio_dev *d,
			   struct cryo_error *err)
{
	int64_t x = 0;
	bool h1 = false, h2 = false, h3 = true;
	int r;

	if (!json_object_is_type(e, json_type_object))
		return cryo_spec_json_bad(err, name, "must be an object");
	r = cryo_spec_json_get_int(e, "major", name, 0, UINT32_MAX, &x, &h1, err);
	d->major = (uint32_t)x;
	if (r >= 0)
		r = cryo_spec_json_get_int(e, "minor", name, 0, UINT32_MAX, &x, &h2, err);
	d->minor = (uint32_t)x;
	if (r >= 0 && weights) {
		r = get_weight(e, "weight", name, &d->weight, err);
		if (r >= 0)
			r = get_weight(e, "leafWeight", name, &d->leaf_weight, err);
	} else if (r >= 0) {
		h3 = false;
		r = cryo_spec_json_get_int(e, "rate", name, 0, INT64_MAX, &x, &h3, err);
		d->rate = (uint64_t)x;
	}
	if (r < 0)
		return r;
	if (!h1 || !h2 || !h3)
		return cryo_spec_json_bad(err, name, weights ? "needs major and minor" : "needs major, minor and rate");
	return 0;
}

/* linux.resources.blockIO: the weights and the per-device lists. */
static int parse_blkio(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *b;
	char name[96];
	size_t l, i, n;
	int r;

	r = cryo_spec_json_get_object(o, "blockIO", "linux.resources.blockIO", &b, err);
	if (r < 0 || !b)
		return r;
	r = get_weight(b, "weight", "linux.resources.blockIO.weight", &res->blkio_weight, err);
	if (r >= 0)
		r = get_weight(b, "leafWeight", "linux.resources.blockIO.leafWeight", &res->blkio_leaf_weight, err);
	if (r < 0)
		return r;
	for (l = 0; l < _CRYO_BLKIO_LIST_MAX; l++) {
		struct json_object *v = cryo_spec_json_field(b, blkio_list_keys[l]);
		void *tab = NULL;

		snprintf(name, sizeof(name), "linux.resources.blockIO.%s", blkio_list_keys[l]);
		r = cryo_spec_json_get_array(v, name, CRYO_SPEC_MAX_DEV_RULES, sizeof(*res->blkio[l]), &tab, &n,
			      err);
		res->blkio[l] = tab;
		if (r < 0)
			return r;
		for (i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "linux.resources.blockIO.%s[%zu]", blkio_list_keys[l], i);
			r = parse_blkio_dev(json_object_array_get_idx(v, i), name, l == CRYO_BLKIO_WEIGHT_DEVICE,
					    &res->blkio[l][i], err);
			if (r < 0)
				return r;
		}
		res->n_blkio[l] = n;
	}
	return 0;
}

/* linux.resources.network: the v1 net_cls class id and net_prio priorities. */
static int parse_network(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *n, *v;
	void *tab = NULL;
	char name[64];
	int64_t x = 0;
	size_t i, len;
	int r;

	r = cryo_spec_json_get_object(o, "network", "linux.resources.network", &n, err);
	if (r < 0 || !n)
		return r;
	r = cryo_spec_json_get_int(n, "classID", "linux.resources.network.classID", 0, UINT32_MAX,
				   &x, &res->has_net_classid, err);
	if (r < 0)
		return r;
	res->net_classid = (uint32_t)x;
	v = cryo_spec_json_field(n, "priorities");
	r = cryo_spec_json_get_array(v, "linux.resources.network.priorities",
				     CRYO_SPEC_MAX_DEV_RULES, sizeof(*res->net_prios), &tab, &len,
				     err);
	res->net_prios = tab;
	if (r < 0)
		return r;
	for (i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		struct cryo_spec_net_prio *p = &res->net_prios[i];
		_cleanup_free_ char *ifname = NULL;
		bool has = false;

		snprintf(name, sizeof(name), "linux.resources.network.priorities[%zu]", i);
		if (!json_object_is_type(e, json_type_object))
			return cryo_spec_json_bad(err, name, "must be an object");
		r = cryo_spec_json_get_string(e, "name", name, sizeof(p->name) - 1, &ifname, err);
		if (r >= 0)
			r = cryo_spec_json_get_int(e, "priority", name, 0, UINT32_MAX, &x, &has, err);
		if (r < 0)
			return r;
		/* one line of net_prio.ifpriomap: an interface name, no blanks or slashes */
		if (!ifname || !*ifname || !has || strcspn(ifname, " \t\n/") != strlen(ifname))
			return cryo_spec_json_bad(err, name, "needs an interface name and a priority");
		snprintf(p->name, sizeof(p->name), "%s", ifname);
		p->priority = (uint32_t)x;
	}
	res->n_net_prios = len;
	return 0;
}

/* "2MB", "64KB", "1GB": a number and a unit, as the hugetlb controller names its files. */
static bool valid_page_size(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && n < 8 && s[0] != '0' &&
	       (strcmp(s + n, "KB") == 0 || strcmp(s + n, "MB") == 0 || strcmp(s + n, "GB") == 0);
}

/* linux.resources.hugepageLimits */
static int parse_hugepages(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *v = cryo_spec_json_field(o, "hugepageLimits");
	void *tab = NULL;
	char name[64];
	size_t i, len;
	int r;

	r = cryo_spec_json_get_array(v, "linux.resources.hugepageLimits", 64, sizeof(*res->hugepages), &tab, &len, err);
	res->hugepages = tab;
	if (r < 0)
		return r;
	for (i = 0; i < len; i++) {
		struct json_object *e = json_object_array_get_idx(v, i);
		struct cryo_spec_hugepage *h = &res->hugepages[i];
		_cleanup_free_ char *size = NULL;
		int64_t x = 0;
		bool has = false;

		snprintf(name, sizeof(name), "linux.resources.hugepageLimits[%zu]", i);
		if (!json_object_is_type(e, json_type_object))
			return cryo_spec_json_bad(err, name, "must be an object");
		r = cryo_spec_json_get_string(e, "pageSize", name, sizeof(h->page_size) - 1, &size, err);
		if (r >= 0)
			r = cryo_spec_json_get_int(e, "limit", name, 0, INT64_MAX, &x, &has, err);
		if (r < 0)
			return r;
		if (!size || !has)
			return cryo_spec_json_bad(err, name, "needs pageSize and limit");
		if (!valid_page_size(size))
			return cryo_spec_json_bad(err, name, "pageSize must be a number and KB, MB or GB (\"2MB\")");
		snprintf(h->page_size, sizeof(h->page_size), "%s", size);
		h->limit = (uint64_t)x;
	}
	res->n_hugepages = len;
	return 0;
}

/* linux.resources.unified: cgroup2 file names (no path: `memory.high`) and what to write there. */
static int parse_unified(struct json_object *o, struct cryo_spec_resources *res, struct cryo_error *err)
{
	size_t i;
	int r;

	r = cryo_spec_json_get_string_map(o, "unified", "linux.resources.unified", CRYO_SPEC_MAX_LIST, &res->unified, &res->n_unified, err);
	for (i = 0; r >= 0 && i < res->n_unified; i++) {
		const char *k = res->unified[i].key;

		if (!*k || k[0] == '.' || strchr(k, '/') || !strchr(k, '.'))
			return cryo_error_setx(err, EINVAL, CFG "linux.resources.unified: `%s` is not a cgroup2 file name",
					       k);
		/* cgroup.procs, .threads, .kill, .freeze, .subtree_control act on tasks, not limits */
		if (strncmp(k, "cgroup.", 7) == 0 && strcmp(k, "cgroup.max.depth") != 0 &&
		    strcmp(k, "cgroup.max.descendants") != 0)
			return cryo_error_setx(err, EINVAL, CFG "linux.resources.unified: `%s` is not a resource limit", k);
	}
	return r;
}

int cryo_spec_parse_resources(struct json_object *lnx, struct cryo_spec_resources *res, struct cryo_error *err)
{
	struct json_object *o, *mem, *cpu, *pids;
	int64_t x = 0;
	int r;

	r = cryo_spec_json_get_object(lnx, "resources", "linux.resources", &o, err);
	if (r < 0 || !o)
		return r;
	r = cryo_spec_json_get_object(o, "memory", "linux.resources.memory", &mem, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(mem, "limit", "linux.resources.memory.limit", -1, INT64_MAX, &res->memory_limit,
			    &res->has_memory_limit, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(mem, "swap", "linux.resources.memory.swap", -1, INT64_MAX, &res->memory_swap,
			    &res->has_memory_swap, err);
	if (r >= 0)
		r = cryo_spec_json_get_object(o, "cpu", "linux.resources.cpu", &cpu, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(cpu, "shares", "linux.resources.cpu.shares", 2, 262144, &x, &res->has_cpu_shares, err);
	if (r < 0)
		return r;
	res->cpu_shares = (uint64_t)x;
	r = cryo_spec_json_get_int(cpu, "quota", "linux.resources.cpu.quota", -1, INT64_MAX,
				   &res->cpu_quota, &res->has_cpu_quota, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(cpu, "period", "linux.resources.cpu.period", 1000, 1000000, &x, &res->has_cpu_period, err);
	if (r < 0)
		return r;
	res->cpu_period = (uint64_t)x;
	if (res->has_cpu_quota && res->cpu_quota != -1 && res->cpu_quota < 1000)
		return cryo_spec_json_bad(err, "linux.resources.cpu.quota", "must be -1 or at least 1000 (us)");
	r = cryo_spec_json_get_int(cpu, "realtimeRuntime", "linux.resources.cpu.realtimeRuntime",
				   -1, INT64_MAX, &res->cpu_rt_runtime, &res->has_cpu_rt_runtime,
				   err);
	if (r >= 0)
		r = cryo_spec_json_get_int(cpu, "realtimePeriod", "linux.resources.cpu.realtimePeriod", 1, INT64_MAX, &x,
			    &res->has_cpu_rt_period, err);
	if (r < 0)
		return r;
	res->cpu_rt_period = (uint64_t)x;
	r = cryo_spec_json_get_string(cpu, "cpus", "linux.resources.cpu.cpus", 4096, &res->cpuset_cpus, err);
	if (r >= 0)
		r = cryo_spec_json_get_string(cpu, "mems", "linux.resources.cpu.mems", 4096, &res->cpuset_mems, err);
	if (r >= 0)
		r = parse_memory_v1(mem, res, err);
	if (r >= 0)
		r = parse_dev_rules(o, res, err);
	if (r >= 0)
		r = parse_blkio(o, res, err);
	if (r >= 0)
		r = parse_network(o, res, err);
	if (r >= 0)
		r = parse_hugepages(o, res, err);
	if (r >= 0)
		r = parse_unified(o, res, err);
	if (r < 0)
		return r;
	r = cryo_spec_json_get_object(o, "pids", "linux.resources.pids", &pids, err);
	if (r >= 0)
		r = cryo_spec_json_get_int(pids, "limit", "linux.resources.pids.limit", INT64_MIN, INT64_MAX, &res->pids_limit,
			    &res->has_pids_limit, err);
	return r;
}
