/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The limits of linux.resources that libcgroup can't carry — several
 * lines into one file (device rules, blkio per-device lists, net_prio
 * map), files it doesn't know (hugetlb sizes, cgroup2's unified map) —
 * written straight into the container's cgroup directories after they
 * exist and before any task joins. cgroup.c says which directories.
 */
#ifndef CRYO_CGLIMITS_H
#define CRYO_CGLIMITS_H

#include "error.h"
#include "spec.h"

/* The container's directory for each, NULL where the host has none. */
struct cryo_cglimits_dirs {
	const char *devices, *blkio, *net_cls, *net_prio;  /* v1 hierarchies */
	const char *hugetlb_v1;  /* the v1 hugetlb hierarchy */
	const char *hugetlb_v2;  /* else the cgroup2 directory when it lists hugetlb */
	const char *v2;          /* the cgroup2 directory (linux.resources.unified) */
};

/*
 * Write them; the first failure is returned naming the config field. A
 * limit whose hierarchy the host lacks is refused, never dropped.
 */
int cryo_cglimits_apply(const struct cryo_cglimits_dirs *d, const struct cryo_spec_resources *res,
			struct cryo_error *err);

#endif
