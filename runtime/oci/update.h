/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `cryo update`: change a live container's resource limits, as runc's
 * update does — from its flags or from an OCI LinuxResources JSON
 * (`--resources FILE`, `-` = stdin, which containerd's shim uses). Each
 * value goes to the container's cgroup file on v1 or on cgroup2 (with
 * runc's conversions: cpu.weight from shares, memory.swap.max from
 * memory+swap, io.weight from the blkio weight); a value the container's
 * hierarchy cannot take is an error naming it, never skipped.
 */
#ifndef CRYO_UPDATE_H
#define CRYO_UPDATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct cryo_update {
	bool has_memory_limit;
	int64_t memory_limit;        /* bytes; -1 = unlimited */
	bool has_memory_reservation;
	int64_t memory_reservation;  /* soft limit, bytes; -1 = none */
	bool has_memory_swap;
	int64_t memory_swap;         /* memory + swap (OCI/runc); -1 = unlimited */
	bool has_cpu_shares;
	uint64_t cpu_shares;
	bool has_cpu_quota;
	int64_t cpu_quota;           /* us per period; -1 = unlimited */
	bool has_cpu_period;
	uint64_t cpu_period;         /* us */
	bool has_cpu_rt_runtime;
	int64_t cpu_rt_runtime;
	bool has_cpu_rt_period;
	uint64_t cpu_rt_period;
	char *cpuset_cpus;           /* NULL = unchanged */
	char *cpuset_mems;
	bool has_pids_limit;
	int64_t pids_limit;          /* <= 0 = unlimited */
	bool has_blkio_weight;
	uint16_t blkio_weight;       /* 10..1000 */
};

void cryo_update_clear(struct cryo_update *u);

/*
 * Merge an OCI LinuxResources object (text, len bytes) into *u. Fields
 * cryo cannot apply (devices, hugepageLimits, network, rdma, unified,
 * kernel memory) are refused with -EOPNOTSUPP naming them, unless null.
 */
int cryo_update_from_json(const char *text, size_t len, struct cryo_update *u, struct cryo_error *err);

/* Parse a size as runc's flags take it: bytes with an optional k/m/g/t suffix (1024-based), or -1. */
int cryo_update_parse_size(const char *s, int64_t *ret);

/* Apply *u to the cgroup of container id (created, running or paused). */
int cryo_update_apply(const char *root, const char *id, const struct cryo_update *u, struct cryo_error *err);

#endif
