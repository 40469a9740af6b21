// SPDX-License-Identifier: GPL-2.0-only
/* The limits libcgroup can't carry, written to the container's cgroup files: cglimits.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cglimits.h"
#include "log.h"
#include "util.h"

/*
 * What every container may use whatever its rules say (runc and crun
 * allow the same): mknod of any node, the null/zero/full/random/urandom
 * and tty nodes, the console, ptmx and the pty slaves.
 */
static const struct cryo_spec_dev_rule default_dev_rules[] = {
	{ true, 'c', -1, -1, "m" },  { true, 'b', -1, -1, "m" },  { true, 'c', 1, 3, "rwm" },
	{ true, 'c', 1, 5, "rwm" },  { true, 'c', 1, 7, "rwm" },  { true, 'c', 1, 8, "rwm" },
	{ true, 'c', 1, 9, "rwm" },  { true, 'c', 5, 0, "rwm" },  { true, 'c', 5, 1, "rwm" },
	{ true, 'c', 5, 2, "rwm" },  { true, 'c', 136, -1, "rwm" },
};

static int write_dev_rule(int dfd, const char *dir, const struct cryo_spec_dev_rule *d, struct cryo_error *err)
{
	char line[64], maj[24], min[24];
	int r;

	if (d->major < 0)
		snprintf(maj, sizeof(maj), "*");
	else
		snprintf(maj, sizeof(maj), "%lld", (long long)d->major);
	if (d->minor < 0)
		snprintf(min, sizeof(min), "*");
	else
		snprintf(min, sizeof(min), "%lld", (long long)d->minor);
	if (d->type == 'a')
		snprintf(line, sizeof(line), "a");
	else
		snprintf(line, sizeof(line), "%c %s:%s %s", d->type, maj, min, d->access);
	r = cryo_write_file_at(dfd, d->allow ? "devices.allow" : "devices.deny", line);
	if (r < 0)
		return cryo_error_set(err, -r, "write `%s` to `%s/%s`", line, dir, d->allow ? "devices.allow" : "devices.deny");
	return 0;
}

/*
 * The device rules, in the listed order (the kernel keeps the exceptions
 * in the order written, which is what devices.list shows), then the
 * defaults. The rules go in after the directory exists and before any
 * task joins; libcgroup can't carry them (one value per file name).
 */
static int apply_dev_rules(const char *dir, const struct cryo_spec_resources *res, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	size_t i;
	int r;

	if (!res->dev_rules || !dir)
		return 0;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return cryo_error_set(err, errno, "open `%s`", dir);
	for (i = 0; i < res->n_dev_rules; i++) {
		r = write_dev_rule(dfd, dir, &res->dev_rules[i], err);
		if (r < 0)
			return cryo_error_prefix(err, "linux.resources.devices[%zu]", i);
	}
	for (i = 0; i < ARRAY_SIZE(default_dev_rules); i++) {
		r = write_dev_rule(dfd, dir, &default_dev_rules[i], err);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * A weight is a share under a proportional I/O scheduler (CFQ, BFQ); with
 * none of them built in there is no weight file and nothing would honour
 * the weight: refused, as runc and crun do, rather than dropped in
 * silence. A throttle file is always there; a line naming a block device
 * this host does not have (ENODEV: nothing to throttle) is skipped, as
 * cryo did before it wrote blockIO at all, so a config made elsewhere
 * still runs.
 */
static int write_at(int dfd, const char *dir, const char *name, const char *line, const char *field,
		    struct cryo_error *err)
{
	int r = cryo_write_file_at(dfd, name, line);

	if (r == -ENOENT && strstr(name, "weight"))
		return cryo_error_setx(err, EOPNOTSUPP,
				       "%s: this host's blkio controller has no `%s` (no proportional I/O scheduler): "
				       "the weight would not be honoured",
				       field, name);
	if (r == -ENODEV) {
		cryo_debug("cgroup: %s: `%s`: no such device on this host: not applied", field, line);
		return 0;
	}
	if (r < 0)
		return cryo_error_set(err, -r, "%s: write `%s` to `%s/%s`", field, line, dir, name);
	return 0;
}

/* blkio.weight, or the BFQ scheduler's file where CFQ's is gone */
static const char *weight_file(int dfd, const char *cfq, const char *bfq)
{
	return faccessat(dfd, cfq, F_OK, 0) == 0 || faccessat(dfd, bfq, F_OK, 0) < 0 ? cfq : bfq;
}

/* The container's directory dir in the v1 hierarchy of ctrl (NULL: none), which field of the config needs. */
static int open_v1_dir(const char *dir, const char *ctrl, const char *field, int *ret_fd, struct cryo_error *err)
{
	int fd;

	if (!dir)
		return cryo_error_setx(err, EOPNOTSUPP, "%s: this host mounts no v1 %s hierarchy (cgroup2 has none)",
				       field, ctrl);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", dir);
	*ret_fd = fd;
	return 0;
}

/*
 * linux.resources.blockIO. Its per-device lists are one line per device
 * into the same file, which libcgroup can't carry (one value per name):
 * written here, after the directory exists and before any task joins.
 */
static int apply_blkio(const char *dir, const struct cryo_spec_resources *res, struct cryo_error *err)
{
	static const char *const throttle[_CRYO_BLKIO_LIST_MAX] = {
		[CRYO_BLKIO_THROTTLE_READ_BPS] = "blkio.throttle.read_bps_device",
		[CRYO_BLKIO_THROTTLE_WRITE_BPS] = "blkio.throttle.write_bps_device",
		[CRYO_BLKIO_THROTTLE_READ_IOPS] = "blkio.throttle.read_iops_device",
		[CRYO_BLKIO_THROTTLE_WRITE_IOPS] = "blkio.throttle.write_iops_device",
	};
	_cleanup_close_ int dfd = -1;
	const char *f = "linux.resources.blockIO";
	char line[96];
	size_t l, i;
	bool any = res->blkio_weight || res->blkio_leaf_weight;
	int r = 0;

	for (l = 0; l < _CRYO_BLKIO_LIST_MAX; l++)
		any = any || res->n_blkio[l];
	if (!any)
		return 0;
	r = open_v1_dir(dir, "blkio", f, &dfd, err);
	if (r < 0)
		return r;
	if (res->blkio_weight) {
		snprintf(line, sizeof(line), "%u", (unsigned)res->blkio_weight);
		r = write_at(dfd, dir, weight_file(dfd, "blkio.weight", "blkio.bfq.weight"), line,
			     "linux.resources.blockIO.weight", err);
	}
	if (r >= 0 && res->blkio_leaf_weight) {
		snprintf(line, sizeof(line), "%u", (unsigned)res->blkio_leaf_weight);
		r = write_at(dfd, dir, "blkio.leaf_weight", line, "linux.resources.blockIO.leafWeight", err);
	}
	for (i = 0; r >= 0 && i < res->n_blkio[CRYO_BLKIO_WEIGHT_DEVICE]; i++) {
		const struct cryo_spec_blkio_dev *d = &res->blkio[CRYO_BLKIO_WEIGHT_DEVICE][i];

		if (d->weight) {
			snprintf(line, sizeof(line), "%u:%u %u", d->major, d->minor, (unsigned)d->weight);
			r = write_at(dfd, dir, weight_file(dfd, "blkio.weight_device", "blkio.bfq.weight_device"), line,
				     "linux.resources.blockIO.weightDevice", err);
		}
		if (r >= 0 && d->leaf_weight) {
			snprintf(line, sizeof(line), "%u:%u %u", d->major, d->minor, (unsigned)d->leaf_weight);
			r = write_at(dfd, dir, "blkio.leaf_weight_device", line, "linux.resources.blockIO.weightDevice", err);
		}
	}
	for (l = 0; r >= 0 && l < _CRYO_BLKIO_LIST_MAX; l++) {
		if (!throttle[l])
			continue;
		for (i = 0; r >= 0 && i < res->n_blkio[l]; i++) {
			const struct cryo_spec_blkio_dev *d = &res->blkio[l][i];

			snprintf(line, sizeof(line), "%u:%u %llu", d->major, d->minor, (unsigned long long)d->rate);
			r = write_at(dfd, dir, throttle[l], line, "linux.resources.blockIO", err);
		}
	}
	return r;
}

/*
 * linux.resources.network: net_cls.classid and one net_prio.ifpriomap
 * line per interface. Both controllers exist only on cgroup v1; a config
 * that asks for them on a host without them is refused, not run without.
 */
static int write_v1(const char *dir, const char *ctrl, const char *name, const char *line, const char *field,
		    struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	int r = open_v1_dir(dir, ctrl, field, &dfd, err);

	return r < 0 ? r : write_at(dfd, dir, name, line, field, err);
}

static int apply_network(const struct cryo_cglimits_dirs *d, const struct cryo_spec_resources *res,
			 struct cryo_error *err)
{
	char line[48];
	size_t i;
	int r = 0;

	if (res->has_net_classid) {
		snprintf(line, sizeof(line), "%u", res->net_classid);
		r = write_v1(d->net_cls, "net_cls", "net_cls.classid", line, "linux.resources.network.classID", err);
	}
	for (i = 0; r >= 0 && i < res->n_net_prios; i++) {
		snprintf(line, sizeof(line), "%s %u", res->net_prios[i].name, res->net_prios[i].priority);
		r = write_v1(d->net_prio, "net_prio", "net_prio.ifpriomap", line, "linux.resources.network.priorities", err);
	}
	return r;
}

/*
 * linux.resources.hugepageLimits: hugetlb.<size>.limit_in_bytes on a v1
 * hugetlb hierarchy, else hugetlb.<size>.max in the cgroup2 one when the
 * controller is there (this host's layout: hugetlb only on cgroup2).
 * A size the host has no pool for has no file: refused by name.
 */
static int apply_hugepages(const struct cryo_cglimits_dirs *d, const struct cryo_spec_resources *res,
			   struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	const char *f = "linux.resources.hugepageLimits";
	const char *dir = d->hugetlb_v1 ? d->hugetlb_v1 : d->hugetlb_v2;
	bool v1 = d->hugetlb_v1;
	size_t i;
	int r = 0;

	if (!res->n_hugepages)
		return 0;
	if (!dir)
		return cryo_error_setx(err, EOPNOTSUPP, "%s: this host has no hugetlb cgroup controller", f);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return cryo_error_set(err, errno, "open `%s`", dir);
	for (i = 0; r >= 0 && i < res->n_hugepages; i++) {
		const struct cryo_spec_hugepage *h = &res->hugepages[i];
		char name[64], line[32];

		snprintf(name, sizeof(name), "hugetlb.%s.%s", h->page_size, v1 ? "limit_in_bytes" : "max");
		snprintf(line, sizeof(line), "%llu", (unsigned long long)h->limit);
		r = cryo_write_file_at(dfd, name, line);
		if (r == -ENOENT)
			r = cryo_error_setx(err, EOPNOTSUPP, "%s: pageSize %s: this host has no huge pages of that size", f,
					    h->page_size);
		else if (r < 0)
			r = cryo_error_set(err, -r, "%s: write `%s` to `%s/%s`", f, line, dir, name);
	}
	return r;
}

/*
 * linux.resources.unified: each value into its cgroup2 file. A host
 * without cgroup2 (or one that keeps the controller on v1, so that
 * cgroup2 has no such file) can't honour them: refused as an invalid
 * configuration, as runc refuses them on v1.
 */
static int apply_unified(const char *v2, const struct cryo_spec_resources *res, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;
	size_t i;

	if (!res->n_unified)
		return 0;
	if (!v2)
		return cryo_error_setx(err, EINVAL,
				       "invalid configuration: linux.resources.unified: this host has no cgroup v2 hierarchy");
	dfd = open(v2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return cryo_error_set(err, errno, "open `%s`", v2);
	for (i = 0; i < res->n_unified; i++) {
		const struct cryo_spec_kv *u = &res->unified[i];
		int r = cryo_write_file_at(dfd, u->key, u->value);

		if (r == -ENOENT)
			return cryo_error_setx(err, EINVAL,
					       "invalid configuration: linux.resources.unified: cgroup v2 has no `%s` here "
					       "(`%s`: is its controller on cgroup v1?)",
					       u->key, v2);
		if (r < 0)
			return cryo_error_set(err, -r, "linux.resources.unified: write `%s` to `%s/%s`", u->value,
					      v2, u->key);
	}
	return 0;
}

int cryo_cglimits_apply(const struct cryo_cglimits_dirs *d, const struct cryo_spec_resources *res,
			struct cryo_error *err)
{
	int r = apply_dev_rules(d->devices, res, err);

	if (r >= 0)
		r = apply_blkio(d->blkio, res, err);
	if (r >= 0)
		r = apply_network(d, res, err);
	if (r >= 0)
		r = apply_hugepages(d, res, err);
	if (r >= 0)
		r = apply_unified(d->v2, res, err);
	return r;
}
