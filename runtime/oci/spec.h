/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * An OCI bundle's config.json (runtime-spec 1.x) as a plain struct.
 * Parsing validates every field it reads and names the bad one
 * ("config.json: process.args: must be a non-empty array of strings");
 * unknown fields are ignored. Sections owned by other modules
 * (capabilities, seccomp, rlimits, hooks, the network annotation) are
 * parsed by those modules' parsers into their structs, embedded here.
 */
#ifndef CRYO_SPEC_H
#define CRYO_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "caps.h"
#include "error.h"
#include "hooks.h"
#include "network.h"
#include "rlimits.h"
#include "spec-json.h"
#include "seccomp.h"
#include "util.h"

/* Bounds on what a config may ask for. */
#define CRYO_SPEC_MAX_BYTES (4u << 20)
#define CRYO_SPEC_MAX_ARGS 4096
#define CRYO_SPEC_MAX_ENV 4096
#define CRYO_SPEC_MAX_MOUNTS 1024
#define CRYO_SPEC_MAX_LIST 1024  /* devices, masked/readonly paths, id maps, gids, sysctls */

enum cryo_ns_type {
	CRYO_NS_PID,
	CRYO_NS_NET,
	CRYO_NS_MOUNT,
	CRYO_NS_IPC,
	CRYO_NS_UTS,
	CRYO_NS_USER,
	CRYO_NS_CGROUP,
	_CRYO_NS_MAX,
};

/* OCI names: "pid", "network", "mount", "ipc", "uts", "user", "cgroup" */
extern const char *const cryo_ns_type_names[_CRYO_NS_MAX];
/* CLONE_NEW* flag of each type */
extern const int cryo_ns_type_flags[_CRYO_NS_MAX];

struct cryo_spec_namespace {
	bool enabled;   /* listed in linux.namespaces */
	char *path;     /* join this one instead of creating; NULL = new */
};

struct cryo_spec_idmap {
	uint32_t container_id;
	uint32_t host_id;
	uint32_t size;
};

struct cryo_spec_mount {
	char *destination;       /* absolute path inside the container */
	char *type;              /* may be NULL for bind mounts */
	char *source;            /* may be NULL */
	unsigned long flags;     /* MS_* from options */
	unsigned long propagation; /* MS_PRIVATE/MS_SLAVE/... from options, 0 = none */
	bool bind;               /* bind or rbind */
	bool recursive_bind;     /* rbind */
	uint64_t attr_set, attr_clr; /* MOUNT_ATTR_* of the r-options (rro, rnosuid, ...), for the whole tree */
	char *data;              /* options the kernel parses (size=, mode=, ...) or NULL */
};

struct cryo_spec_device {
	char *path;
	char type;        /* 'c', 'b', 'u' (= 'c') or 'p' */
	int64_t major, minor;
	uint32_t file_mode;
	bool has_file_mode;
	uint32_t uid, gid;
	bool has_uid, has_gid;
};


/* One linux.resources.devices entry: a line for v1 devices.allow/deny. */
struct cryo_spec_dev_rule {
	bool allow;
	char type;                  /* 'a', 'c' or 'b' */
	int64_t major, minor;       /* -1 = any */
	char access[4];             /* a non-empty part of "rwm" */
};

/* A blockIO per-device entry: weight/leafWeight (0 = not given) or a throttle rate. */
struct cryo_spec_blkio_dev {
	uint32_t major, minor;
	uint16_t weight, leaf_weight;
	uint64_t rate;
};

/* A linux.resources.network.priorities entry (v1 net_prio.ifpriomap). */
struct cryo_spec_net_prio {
	char name[16];          /* an interface name (IFNAMSIZ) */
	uint32_t priority;
};

/* A linux.resources.hugepageLimits entry. */
struct cryo_spec_hugepage {
	char page_size[16];     /* "2MB", "1GB": part of a cgroup file name, checked */
	uint64_t limit;         /* bytes */
};

enum cryo_spec_blkio_list {
	CRYO_BLKIO_WEIGHT_DEVICE,
	CRYO_BLKIO_THROTTLE_READ_BPS,
	CRYO_BLKIO_THROTTLE_WRITE_BPS,
	CRYO_BLKIO_THROTTLE_READ_IOPS,
	CRYO_BLKIO_THROTTLE_WRITE_IOPS,
	_CRYO_BLKIO_LIST_MAX,
};

struct cryo_spec_resources {
	bool has_memory_limit;
	int64_t memory_limit;       /* bytes, -1 = unlimited */
	bool has_memory_swap;
	int64_t memory_swap;
	bool has_cpu_shares;
	uint64_t cpu_shares;
	bool has_cpu_quota;
	int64_t cpu_quota;          /* us per period, -1 = unlimited */
	bool has_cpu_period;
	uint64_t cpu_period;        /* us */
	bool has_pids_limit;
	int64_t pids_limit;         /* <= 0 = unlimited */
	bool has_memory_reservation;
	int64_t memory_reservation; /* bytes, -1 = unlimited (memory.soft_limit_in_bytes) */
	bool has_memory_kernel;
	int64_t memory_kernel;      /* bytes, -1 = unlimited (v1 memory.kmem.limit_in_bytes) */
	bool has_memory_kernel_tcp;
	int64_t memory_kernel_tcp;  /* bytes, -1 = unlimited (v1 memory.kmem.tcp.limit_in_bytes) */
	bool has_memory_swappiness;
	uint64_t memory_swappiness; /* 0..100 */
	bool disable_oom_killer;    /* memory.oom_control = 1 */
	bool has_cpu_rt_runtime;
	int64_t cpu_rt_runtime;     /* us, -1 = unlimited */
	bool has_cpu_rt_period;
	uint64_t cpu_rt_period;     /* us */
	char *cpuset_cpus;          /* "0-3,5", NULL = the parent's */
	char *cpuset_mems;          /* NULL = the parent's */
	/*
	 * linux.resources.devices, then an allow rule per linux.devices node;
	 * NULL when the config has no device rules (the cgroup's are inherited).
	 */
	struct cryo_spec_dev_rule *dev_rules;
	size_t n_dev_rules;
	uint16_t blkio_weight, blkio_leaf_weight;  /* 10..1000, 0 = not given */
	struct cryo_spec_blkio_dev *blkio[_CRYO_BLKIO_LIST_MAX];
	size_t n_blkio[_CRYO_BLKIO_LIST_MAX];
	bool has_net_classid;
	uint32_t net_classid;       /* v1 net_cls.classid */
	struct cryo_spec_net_prio *net_prios;
	size_t n_net_prios;
	struct cryo_spec_hugepage *hugepages;
	size_t n_hugepages;
	struct cryo_spec_kv *unified; /* cgroup2 file name -> value */
	size_t n_unified;
};

struct cryo_spec {
	char *oci_version;

	/* root */
	char *root_path;        /* as written in the config */
	bool root_readonly;

	/* process */
	bool terminal;
	bool has_console_size;
	uint32_t console_height, console_width;  /* process.consoleSize */
	uint32_t uid, gid;
	uint32_t *additional_gids;
	size_t n_additional_gids;
	bool has_umask;
	uint32_t umask;
	char **args;            /* NULL-terminated, n_args >= 1 */
	size_t n_args;
	char **env;             /* NULL-terminated */
	size_t n_env;
	char *cwd;              /* absolute */
	bool no_new_privileges;
	bool has_oom_score_adj;
	int oom_score_adj;
	struct cryo_caps_spec caps;        /* process.capabilities */
	struct cryo_rlimits_spec rlimits;  /* process.rlimits */

	char *hostname;
	char *domainname;

	struct cryo_spec_mount *mounts;
	size_t n_mounts;

	struct cryo_hooks_spec hooks;      /* hooks */
	struct json_object *annotations;   /* annotations object, or NULL */
	struct cryo_network_spec network;  /* annotations["org.cryo.network"] */

	/* linux */
	struct cryo_spec_namespace namespaces[_CRYO_NS_MAX];
	struct cryo_spec_idmap *uid_mappings;
	size_t n_uid_mappings;
	struct cryo_spec_idmap *gid_mappings;
	size_t n_gid_mappings;
	struct cryo_spec_resources resources;
	char *cgroups_path;     /* NULL = runtime default */
	struct cryo_spec_device *devices;
	size_t n_devices;
	char **masked_paths;    /* NULL-terminated */
	size_t n_masked_paths;
	char **readonly_paths;  /* NULL-terminated */
	size_t n_readonly_paths;
	struct cryo_spec_kv *sysctls;
	size_t n_sysctls;
	unsigned long rootfs_propagation; /* MS_* propagation, 0 = runtime default */
	struct cryo_seccomp_spec seccomp;  /* linux.seccomp */
};

/*
 * Parse config.json text. Errors name the field: "config.json: <field>:
 * <problem>".
 */
int cryo_spec_parse(const char *text, size_t len, struct cryo_spec **ret, struct cryo_error *err);

/* Read and parse <bundle>/config.json (bounded by CRYO_SPEC_MAX_BYTES). */
int cryo_spec_load(const char *bundle, struct cryo_spec **ret, struct cryo_error *err);

void cryo_spec_free(struct cryo_spec *spec);
CRYO_DEFINE_CLEANUP(struct cryo_spec *, cryo_spec_free)

/*
 * The namespace (enum cryo_ns_type) a linux.sysctl key lives in, -1 for
 * a key that is global to the host. Parsing refuses global keys and keys
 * whose namespace the container does not have.
 */
int cryo_spec_sysctl_namespace(const char *key);

/*
 * At create: refuse a sysctl whose namespace is joined by a path that is
 * the runtime's own namespace (writing it would change the host).
 */
int cryo_spec_check_sysctl_paths(const struct cryo_spec *spec, struct cryo_error *err);

/* The annotation value for key, or NULL. */
const char *cryo_spec_annotation(const struct cryo_spec *spec, const char *key);

/*
 * A default config.json like `runc spec`: busybox-friendly sh, the usual
 * mounts, masked paths and namespaces. Returns a malloc'd JSON text.
 */
int cryo_spec_default_json(bool rootless, char **ret, struct cryo_error *err);

#endif
