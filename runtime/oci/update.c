// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cgfile.h"
#include "container.h"
#include "state.h"
#include "update.h"
#include "util.h"

void cryo_update_clear(struct cryo_update *u)
{
	if (!u)
		return;
	free(u->cpuset_cpus);
	free(u->cpuset_mems);
	memset(u, 0, sizeof(*u));
}

int cryo_update_parse_size(const char *s, int64_t *ret)
{
	char *end;
	long long v;
	int shift = 0;

	if (strcmp(s, "-1") == 0) {
		*ret = -1;
		return 0;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		return -EINVAL;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'k':
		shift = 10;
		break;
	case 'm':
		shift = 20;
		break;
	case 'g':
		shift = 30;
		break;
	case 't':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1] && !((end[1] == 'b' || end[1] == 'B') && !end[2]))
		return -EINVAL;
	if (v > (INT64_MAX >> shift))
		return -ERANGE;
	*ret = (int64_t)v << shift;
	return 0;
}

/* ---- OCI LinuxResources ---- */

static int get_i64(struct json_object *o, const char *key, const char *where, bool *has, int64_t *v,
		   struct cryo_error *err)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, key, &x) || json_object_is_type(x, json_type_null))
		return 0;
	if (!json_object_is_type(x, json_type_int))
		return cryo_error_setx(err, EINVAL, "resources.%s.%s: must be an integer", where, key);
	*has = true;
	*v = json_object_get_int64(x);
	return 0;
}

static int get_u64(struct json_object *o, const char *key, const char *where, bool *has, uint64_t *v,
		   struct cryo_error *err)
{
	int64_t i = 0;
	bool h = false;
	int r = get_i64(o, key, where, &h, &i, err);

	if (r < 0 || !h)
		return r;
	if (i < 0)
		return cryo_error_setx(err, EINVAL, "resources.%s.%s: must not be negative", where, key);
	*has = true;
	*v = (uint64_t)i;
	return 0;
}

static int get_str(struct json_object *o, const char *key, const char *where, char **v, struct cryo_error *err)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, key, &x) || json_object_is_type(x, json_type_null))
		return 0;
	if (!json_object_is_type(x, json_type_string))
		return cryo_error_setx(err, EINVAL, "resources.%s.%s: must be a string", where, key);
	free(*v);
	*v = strdup(json_object_get_string(x));
	if (!*v)
		return cryo_error_set(err, ENOMEM, "resources");
	return 0;
}

/* a present, non-null, non-empty value of a field cryo can't apply */
static bool given(struct json_object *o, const char *key)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, key, &x) || json_object_is_type(x, json_type_null))
		return false;
	if (json_object_is_type(x, json_type_array))
		return json_object_array_length(x) > 0;
	if (json_object_is_type(x, json_type_object))
		return json_object_object_length(x) > 0;
	return true;
}

int cryo_update_from_json(const char *text, size_t len, struct cryo_update *u, struct cryo_error *err)
{
	static const char *const refused[] = { "hugepageLimits", "network", "rdma", "unified" };
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o, *x;
	size_t i;
	int r = 0;

	if (!tok)
		return cryo_error_set(err, ENOMEM, "resources");
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success) {
		r = cryo_error_setx(err, EINVAL, "resources: not JSON: %s",
				    json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		r = cryo_error_setx(err, EINVAL, "resources: must be an object");
		goto out;
	}
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (given(o, refused[i])) {
			r = cryo_error_setx(err, EOPNOTSUPP, "resources.%s: not supported by cryo update", refused[i]);
			goto out;
		}
	/*
	 * "devices" is not read: like runc's update, the device rules are the
	 * ones set at create (containerd resends them unchanged).
	 */
	if (json_object_object_get_ex(o, "memory", &x) && !json_object_is_type(x, json_type_null)) {
		if ((r = get_i64(x, "limit", "memory", &u->has_memory_limit, &u->memory_limit, err)) < 0 ||
		    (r = get_i64(x, "reservation", "memory", &u->has_memory_reservation, &u->memory_reservation, err)) < 0 ||
		    (r = get_i64(x, "swap", "memory", &u->has_memory_swap, &u->memory_swap, err)) < 0)
			goto out;
		if (given(x, "kernel") || given(x, "kernelTCP")) {
			r = cryo_error_setx(err, EOPNOTSUPP, "resources.memory.kernel: kernel memory limits are not supported");
			goto out;
		}
	}
	if (json_object_object_get_ex(o, "cpu", &x) && !json_object_is_type(x, json_type_null)) {
		if ((r = get_u64(x, "shares", "cpu", &u->has_cpu_shares, &u->cpu_shares, err)) < 0 ||
		    (r = get_i64(x, "quota", "cpu", &u->has_cpu_quota, &u->cpu_quota, err)) < 0 ||
		    (r = get_u64(x, "period", "cpu", &u->has_cpu_period, &u->cpu_period, err)) < 0 ||
		    (r = get_i64(x, "realtimeRuntime", "cpu", &u->has_cpu_rt_runtime, &u->cpu_rt_runtime, err)) < 0 ||
		    (r = get_u64(x, "realtimePeriod", "cpu", &u->has_cpu_rt_period, &u->cpu_rt_period, err)) < 0 ||
		    (r = get_str(x, "cpus", "cpu", &u->cpuset_cpus, err)) < 0 ||
		    (r = get_str(x, "mems", "cpu", &u->cpuset_mems, err)) < 0)
			goto out;
	}
	if (json_object_object_get_ex(o, "pids", &x) && !json_object_is_type(x, json_type_null)) {
		if ((r = get_i64(x, "limit", "pids", &u->has_pids_limit, &u->pids_limit, err)) < 0)
			goto out;
	}
	if (json_object_object_get_ex(o, "blockIO", &x) && !json_object_is_type(x, json_type_null)) {
		uint64_t w = 0;
		bool has = false;

		if ((r = get_u64(x, "weight", "blockIO", &has, &w, err)) < 0)
			goto out;
		if (has && w != 0) {
			if (w < 10 || w > 1000) {
				r = cryo_error_setx(err, EINVAL, "resources.blockIO.weight: %" PRIu64 " is not in 10..1000", w);
				goto out;
			}
			u->has_blkio_weight = true;
			u->blkio_weight = (uint16_t)w;
		}
		if (given(x, "weightDevice") || given(x, "throttleReadBpsDevice") || given(x, "throttleWriteBpsDevice") ||
		    given(x, "throttleReadIOPSDevice") || given(x, "throttleWriteIOPSDevice")) {
			r = cryo_error_setx(err, EOPNOTSUPP, "resources.blockIO: per-device settings are not supported");
			goto out;
		}
	}
out:
	json_object_put(o);
	json_tokener_free(tok);
	return r;
}

/* ---- applying ---- */

static int write_i64(const char *dir, const char *name, int64_t v, bool minus_one_is_max, struct cryo_error *err)
{
	char buf[32];

	if (v < 0 && minus_one_is_max)
		snprintf(buf, sizeof(buf), "max");
	else
		snprintf(buf, sizeof(buf), "%" PRId64, v);
	return cryo_cgfile_write(dir, name, buf, err);
}

static int memory_v1(const char *dir, const struct cryo_update *u, struct cryo_error *err)
{
	struct cryo_error e2 = CRYO_ERROR_INIT;
	bool has_swap = u->has_memory_swap;
	int64_t swap = u->memory_swap;
	uint64_t memsw;
	int r = 0;

	/*
	 * No memory limit means no memory+swap limit either (runc's rule):
	 * with the old memsw limit kept, the kernel refuses an unlimited
	 * memory limit above it.
	 */
	if (u->has_memory_limit && u->memory_limit < 0 && !has_swap &&
	    cryo_cgfile_read_u64(dir, "memory.memsw.limit_in_bytes", &memsw) == 0) {
		has_swap = true;
		swap = -1;
	}
	if (u->has_memory_reservation) {
		r = write_i64(dir, "memory.soft_limit_in_bytes", u->memory_reservation, false, err);
		if (r < 0)
			return r;
	}
	if (!u->has_memory_limit && !has_swap)
		return 0;
	/*
	 * The kernel wants memory <= memory+swap at every moment: raising
	 * both goes memsw first, lowering limit first. Try one order and, when
	 * the kernel refuses (EINVAL), the other.
	 */
	if (u->has_memory_limit)
		r = write_i64(dir, "memory.limit_in_bytes", u->memory_limit, false, err);
	if (r >= 0 && has_swap)
		r = write_i64(dir, "memory.memsw.limit_in_bytes", swap, false, err);
	if (r == -EINVAL && u->has_memory_limit && has_swap) {
		r = write_i64(dir, "memory.memsw.limit_in_bytes", swap, false, &e2);
		if (r >= 0)
			r = write_i64(dir, "memory.limit_in_bytes", u->memory_limit, false, &e2);
		if (r >= 0)
			cryo_error_clear(err);
		else
			cryo_error_clear(&e2);
	}
	return r;
}

static int memory_v2(const char *dir, const struct cryo_update *u, struct cryo_error *err)
{
	int r;

	if (u->has_memory_reservation) {
		r = write_i64(dir, "memory.low", u->memory_reservation < 0 ? 0 : u->memory_reservation, false, err);
		if (r < 0)
			return r;
	}
	if (u->has_memory_limit) {
		r = write_i64(dir, "memory.max", u->memory_limit, true, err);
		if (r < 0)
			return r;
	}
	if (u->has_memory_swap) {
		int64_t swap = -1;

		/* OCI's swap is memory+swap; cgroup2's memory.swap.max is the swap alone */
		if (u->memory_swap >= 0) {
			if (!u->has_memory_limit || u->memory_limit < 0)
				return cryo_error_setx(err, EINVAL, "memory swap %" PRId64 " on cgroup2 needs a memory limit too",
						       u->memory_swap);
			if (u->memory_swap < u->memory_limit)
				return cryo_error_setx(err, EINVAL, "memory+swap %" PRId64 " is below the memory limit %" PRId64,
						       u->memory_swap, u->memory_limit);
			swap = u->memory_swap - u->memory_limit;
		}
		r = write_i64(dir, "memory.swap.max", swap, true, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int cpu_v1(const char *dir, const struct cryo_update *u, struct cryo_error *err)
{
	bool period_after_quota = false;
	int r = 0;

	if (u->has_cpu_shares)
		r = write_i64(dir, "cpu.shares", (int64_t)u->cpu_shares, false, err);
	/*
	 * A shorter period with the old quota may be more than a parent
	 * allows (EINVAL): when a quota comes too, it goes first and the
	 * period after it.
	 */
	if (r >= 0 && u->has_cpu_period) {
		r = write_i64(dir, "cpu.cfs_period_us", (int64_t)u->cpu_period, false, err);
		if (r == -EINVAL && u->has_cpu_quota) {
			cryo_error_clear(err);
			period_after_quota = true;
			r = 0;
		}
	}
	if (r >= 0 && u->has_cpu_quota)
		r = write_i64(dir, "cpu.cfs_quota_us", u->cpu_quota < 0 ? -1 : u->cpu_quota, false, err);
	if (r >= 0 && period_after_quota)
		r = write_i64(dir, "cpu.cfs_period_us", (int64_t)u->cpu_period, false, err);
	if (r >= 0 && u->has_cpu_rt_period)
		r = write_i64(dir, "cpu.rt_period_us", (int64_t)u->cpu_rt_period, false, err);
	if (r >= 0 && u->has_cpu_rt_runtime)
		r = write_i64(dir, "cpu.rt_runtime_us", u->cpu_rt_runtime, false, err);
	return r;
}

static int cpu_v2(const char *dir, const struct cryo_update *u, struct cryo_error *err)
{
	int r;

	if (u->has_cpu_rt_period || u->has_cpu_rt_runtime)
		return cryo_error_setx(err, EOPNOTSUPP, "realtime cpu limits do not exist on cgroup2");
	if (u->has_cpu_shares && u->cpu_shares) {
		/* runc's mapping of shares [2, 262144] onto weight [1, 10000] */
		uint64_t s = u->cpu_shares < 2 ? 2 : u->cpu_shares > 262144 ? 262144 : u->cpu_shares;

		r = write_i64(dir, "cpu.weight", (int64_t)(1 + ((s - 2) * 9999) / 262142), false, err);
		if (r < 0)
			return r;
	}
	if (u->has_cpu_quota || u->has_cpu_period) {
		_cleanup_free_ char *cur = NULL;
		char quota[32] = "max", buf[64];
		uint64_t period = 100000;

		/* cpu.max is "QUOTA PERIOD": keep the half not given */
		if (cryo_cgfile_read(dir, "cpu.max", &cur) == 0 && cur &&
		    sscanf(cur, "%31s %" SCNu64, quota, &period) < 1)
			snprintf(quota, sizeof(quota), "max");
		if (u->has_cpu_quota) {
			if (u->cpu_quota < 0)
				snprintf(quota, sizeof(quota), "max");
			else
				snprintf(quota, sizeof(quota), "%" PRId64, u->cpu_quota);
		}
		if (u->has_cpu_period)
			period = u->cpu_period;
		snprintf(buf, sizeof(buf), "%s %" PRIu64, quota, period);
		r = cryo_cgfile_write(dir, "cpu.max", buf, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Run fn on the directory of ctrl, or fail naming what could not be applied. */
static int apply_ctrl(const struct cryo_state *st, const char *ctrl, const char *what,
		      int (*v1)(const char *, const struct cryo_update *, struct cryo_error *),
		      int (*v2)(const char *, const struct cryo_update *, struct cryo_error *),
		      const struct cryo_update *u, struct cryo_error *err)
{
	_cleanup_free_ char *dir = NULL;
	bool is_v2 = false;
	int r;

	r = cryo_cgfile_dir(st, ctrl, &dir, &is_v2, err);
	if (r < 0)
		return cryo_error_prefix(err, "%s", what);
	return is_v2 ? v2(dir, u, err) : v1(dir, u, err);
}

static int pids_any(const char *dir, const struct cryo_update *u, struct cryo_error *err)
{
	return write_i64(dir, "pids.max", u->pids_limit <= 0 ? -1 : u->pids_limit, true, err);
}

static int cpuset_any(const char *dir, const struct cryo_update *u, struct cryo_error *err)
{
	int r = 0;

	if (u->cpuset_cpus)
		r = cryo_cgfile_write(dir, "cpuset.cpus", u->cpuset_cpus, err);
	if (r >= 0 && u->cpuset_mems)
		r = cryo_cgfile_write(dir, "cpuset.mems", u->cpuset_mems, err);
	return r;
}

static int blkio_v1(const char *dir, const struct cryo_update *u, struct cryo_error *err)
{
	return write_i64(dir, "blkio.weight", u->blkio_weight, false, err);
}

static int blkio_v2(const char *dir, const struct cryo_update *u, struct cryo_error *err)
{
	/* runc's mapping of blkio [10, 1000] onto io.weight [1, 10000] */
	return write_i64(dir, "io.weight", 1 + ((int64_t)u->blkio_weight - 10) * 9999 / 990, false, err);
}

int cryo_update_apply(const char *root, const char *id, const struct cryo_update *u, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	int r;

	r = cryo_container_load(root, id, &st, err);
	if (r < 0)
		return cryo_error_prefix(err, "update `%s`", id);
	if (st->status == CRYO_STATUS_STOPPED) {
		r = cryo_error_setx(err, EINVAL, "container `%s` is stopped", id);
		goto out;
	}
	if (u->has_memory_limit || u->has_memory_swap || u->has_memory_reservation)
		r = apply_ctrl(st, "memory", "memory", memory_v1, memory_v2, u, err);
	if (r >= 0 && (u->has_cpu_shares || u->has_cpu_quota || u->has_cpu_period || u->has_cpu_rt_period ||
		       u->has_cpu_rt_runtime))
		r = apply_ctrl(st, "cpu", "cpu", cpu_v1, cpu_v2, u, err);
	if (r >= 0 && (u->cpuset_cpus || u->cpuset_mems))
		r = apply_ctrl(st, "cpuset", "cpuset", cpuset_any, cpuset_any, u, err);
	if (r >= 0 && u->has_pids_limit)
		r = apply_ctrl(st, "pids", "pids", pids_any, pids_any, u, err);
	if (r >= 0 && u->has_blkio_weight)
		r = apply_ctrl(st, "blkio", "blkio weight", blkio_v1, blkio_v2, u, err);
out:
	cryo_state_free(st);
	if (r < 0)
		return cryo_error_prefix(err, "update `%s`", id);
	return 0;
}
