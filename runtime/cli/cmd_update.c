// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "update.h"
#include "util.h"
#include "cli.h"

enum {
	OPT_BLKIO_WEIGHT = 0x100,
	OPT_CPU_PERIOD,
	OPT_CPU_QUOTA,
	OPT_CPU_SHARE,
	OPT_CPU_RT_PERIOD,
	OPT_CPU_RT_RUNTIME,
	OPT_CPUSET_CPUS,
	OPT_CPUSET_MEMS,
	OPT_KERNEL_MEMORY,
	OPT_KERNEL_MEMORY_TCP,
	OPT_MEMORY,
	OPT_MEMORY_RESERVATION,
	OPT_MEMORY_SWAP,
	OPT_PIDS_LIMIT,
	OPT_L3_CACHE_SCHEMA,
	OPT_MEM_BW_SCHEMA,
};

static void usage(void)
{
	printf("Usage: cryo update [OPTIONS] ID\n"
	       "\n"
	       "Change the resource limits of a container's cgroup (v1 or cgroup2), like runc update.\n"
	       "\n"
	       "  -r, --resources FILE      an OCI LinuxResources JSON (`-` = stdin); flags override it\n"
	       "  --memory SIZE             memory limit (bytes, or with k/m/g/t; -1 = unlimited)\n"
	       "  --memory-reservation SIZE soft limit\n"
	       "  --memory-swap SIZE        memory+swap limit (-1 = unlimited)\n"
	       "  --cpu-share N             cpu shares (cgroup2: cpu.weight)\n"
	       "  --cpu-period US           CFS period\n"
	       "  --cpu-quota US            CFS quota per period (-1 = unlimited)\n"
	       "  --cpu-rt-period US, --cpu-rt-runtime US   realtime (cgroup v1 only)\n"
	       "  --cpuset-cpus LIST, --cpuset-mems LIST\n"
	       "  --pids-limit N            (<= 0 = unlimited)\n"
	       "  --blkio-weight N          10..1000 (cgroup2: io.weight)\n"
	       "  --kernel-memory, --kernel-memory-tcp, --l3-cache-schema, --mem-bw-schema  refused:\n"
	       "                            not supported by cryo\n");
}

/* --resources: a file, or `-` for stdin (containerd's shim pipes the JSON) */
static int read_resources(const char *path, struct cryo_update *u, struct cryo_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (strcmp(path, "-") == 0)
		r = cryo_read_file_at(STDIN_FILENO, "/proc/self/fd/0", 1 << 20, &text, &len);
	else
		r = cryo_read_file_at(AT_FDCWD, path, 1 << 20, &text, &len);
	if (r < 0)
		return cryo_error_set(err, -r, "read resources `%s`", path);
	return cryo_update_from_json(text, len, u, err);
}

static int parse_i64(const char *opt, const char *arg, bool size, int64_t *ret)
{
	char *end;

	if (size) {
		if (cryo_update_parse_size(arg, ret) < 0)
			return cli_usage_error("update", "--%s takes a size (bytes, k/m/g/t, or -1), not `%s`", opt, arg);
		return 0;
	}
	errno = 0;
	*ret = strtoll(arg, &end, 10);
	if (errno || end == arg || *end)
		return cli_usage_error("update", "--%s takes a number, not `%s`", opt, arg);
	return 0;
}

int cmd_update(struct cryo_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "resources", required_argument, NULL, 'r' },
		{ "blkio-weight", required_argument, NULL, OPT_BLKIO_WEIGHT },
		{ "cpu-period", required_argument, NULL, OPT_CPU_PERIOD },
		{ "cpu-quota", required_argument, NULL, OPT_CPU_QUOTA },
		{ "cpu-share", required_argument, NULL, OPT_CPU_SHARE },
		{ "cpu-rt-period", required_argument, NULL, OPT_CPU_RT_PERIOD },
		{ "cpu-rt-runtime", required_argument, NULL, OPT_CPU_RT_RUNTIME },
		{ "cpuset-cpus", required_argument, NULL, OPT_CPUSET_CPUS },
		{ "cpuset-mems", required_argument, NULL, OPT_CPUSET_MEMS },
		{ "kernel-memory", required_argument, NULL, OPT_KERNEL_MEMORY },
		{ "kernel-memory-tcp", required_argument, NULL, OPT_KERNEL_MEMORY_TCP },
		{ "memory", required_argument, NULL, OPT_MEMORY },
		{ "memory-reservation", required_argument, NULL, OPT_MEMORY_RESERVATION },
		{ "memory-swap", required_argument, NULL, OPT_MEMORY_SWAP },
		{ "pids-limit", required_argument, NULL, OPT_PIDS_LIMIT },
		{ "l3-cache-schema", required_argument, NULL, OPT_L3_CACHE_SCHEMA },
		{ "mem-bw-schema", required_argument, NULL, OPT_MEM_BW_SCHEMA },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* flags are kept apart and laid over --resources once it is read */
	struct cryo_update flags = { 0 }, u = { 0 };
	struct cryo_error err = CRYO_ERROR_INIT;
	const char *resources = NULL;
	int64_t v = 0;
	int c, r = 0, idx = 0;

	while (r == 0 && (c = cli_getopt(argc, argv, "r:h", opts, &idx)) != -1) {
		const char *name = c == 'r' || c == 'h' || c == '?' ? "" : opts[idx].name;

		switch (c) {
		case 'r':
			resources = optarg;
			break;
		case OPT_MEMORY:
		case OPT_MEMORY_RESERVATION:
		case OPT_MEMORY_SWAP:
			r = parse_i64(name, optarg, true, &v);
			if (r == 0 && c == OPT_MEMORY)
				flags.has_memory_limit = true, flags.memory_limit = v;
			else if (r == 0 && c == OPT_MEMORY_RESERVATION)
				flags.has_memory_reservation = true, flags.memory_reservation = v;
			else if (r == 0)
				flags.has_memory_swap = true, flags.memory_swap = v;
			break;
		case OPT_CPU_QUOTA:
		case OPT_CPU_RT_RUNTIME:
		case OPT_PIDS_LIMIT:
			r = parse_i64(name, optarg, false, &v);
			if (r == 0 && c == OPT_CPU_QUOTA)
				flags.has_cpu_quota = true, flags.cpu_quota = v;
			else if (r == 0 && c == OPT_CPU_RT_RUNTIME)
				flags.has_cpu_rt_runtime = true, flags.cpu_rt_runtime = v;
			else if (r == 0)
				flags.has_pids_limit = true, flags.pids_limit = v;
			break;
		case OPT_CPU_PERIOD:
		case OPT_CPU_SHARE:
		case OPT_CPU_RT_PERIOD:
		case OPT_BLKIO_WEIGHT:
			r = parse_i64(name, optarg, false, &v);
			if (r == 0 && v < 0)
				r = cli_usage_error("update", "--%s must not be negative", name);
			if (r == 0 && c == OPT_CPU_PERIOD)
				flags.has_cpu_period = true, flags.cpu_period = (uint64_t)v;
			else if (r == 0 && c == OPT_CPU_SHARE)
				flags.has_cpu_shares = true, flags.cpu_shares = (uint64_t)v;
			else if (r == 0 && c == OPT_CPU_RT_PERIOD)
				flags.has_cpu_rt_period = true, flags.cpu_rt_period = (uint64_t)v;
			else if (r == 0 && (v < 10 || v > 1000))
				r = cli_usage_error("update", "--blkio-weight must be in 10..1000, not `%s`", optarg);
			else if (r == 0)
				flags.has_blkio_weight = true, flags.blkio_weight = (uint16_t)v;
			break;
		case OPT_CPUSET_CPUS:
			free(flags.cpuset_cpus);
			flags.cpuset_cpus = strdup(optarg);
			break;
		case OPT_CPUSET_MEMS:
			free(flags.cpuset_mems);
			flags.cpuset_mems = strdup(optarg);
			break;
		case OPT_KERNEL_MEMORY:
		case OPT_KERNEL_MEMORY_TCP:
		case OPT_L3_CACHE_SCHEMA:
		case OPT_MEM_BW_SCHEMA:
			cryo_error_setx(&err, EOPNOTSUPP, "update: --%s is not supported by cryo", name);
			r = cli_fail(&err);
			break;
		case 'h':
			usage();
			cryo_update_clear(&flags);
			return 0;
		default:
			r = cli_usage_error("update", "bad option");
			break;
		}
	}
	if (r == 0 && optind != argc - 1)
		r = cli_usage_error("update", "expects exactly one container id");
	if (r == 0 && resources && read_resources(resources, &u, &err) < 0)
		r = cli_fail(&err);
	if (r == 0) {
#define OVER(f)                                      \
	do {                                         \
		if (flags.has_##f) {                 \
			u.has_##f = true;            \
			u.f = flags.f;               \
		}                                    \
	} while (0)
		OVER(memory_limit);
		OVER(memory_reservation);
		OVER(memory_swap);
		OVER(cpu_shares);
		OVER(cpu_quota);
		OVER(cpu_period);
		OVER(cpu_rt_runtime);
		OVER(cpu_rt_period);
		OVER(pids_limit);
		OVER(blkio_weight);
#undef OVER
		if (flags.cpuset_cpus) {
			free(u.cpuset_cpus);
			u.cpuset_cpus = TAKE_PTR(flags.cpuset_cpus);
		}
		if (flags.cpuset_mems) {
			free(u.cpuset_mems);
			u.cpuset_mems = TAKE_PTR(flags.cpuset_mems);
		}
		if (cryo_update_apply(cli->root, argv[optind], &u, &err) < 0)
			r = cli_fail(&err);
	}
	cryo_update_clear(&flags);
	cryo_update_clear(&u);
	return r;
}
