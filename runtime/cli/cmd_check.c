// SPDX-License-Identifier: GPL-2.0-only
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "criu.h"
#include "cli.h"
#include "kmod.h"
#include "proc.h"
#include "util.h"

/* Which backend holds freezes: cryo_freezer.ko, or FIFREEZE + watchdog. */
static void print_freezer_backend(void)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	uint32_t v = 0;
	int fd = -1;

	if (!cryo_kmod_available()) {
		printf("freezer module: not loaded (holds: watchdog process for cgroup and fsfreeze)\n");
		return;
	}
	if (cryo_kmod_open(&fd, &err) < 0 || cryo_kmod_version(fd, &v, &err) < 0) {
		printf("freezer module: unusable: %s (held freezes fail until it is replaced or unloaded)\n",
		       err.msg ? err.msg : "?");
		cryo_error_clear(&err);
	} else {
		printf("freezer module: loaded, ABI %u (holds: kmod for cgroup, kmod under a watchdog for fsfreeze)\n", v);
	}
	if (fd >= 0)
		close(fd);
}

/* Where tests/setup-criu4.sh installs CRIU: CRYO_CRIU4_PREFIX as it reads it. */
#define CRIU4_PREFIX "/opt/cryo-criu4"

/*
 * The setup-criu4 script for this cryo: beside an installed binary
 * (<prefix>/libexec/cryo/setup-criu4, from the .deb or `cmake --install`),
 * else in the source tree this binary was built from. NULL if neither.
 */
static char *find_setup_criu4(void)
{
	char exe[PATH_MAX], *slash, *path = NULL;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			if (asprintf(&path, "%s/../libexec/cryo/setup-criu4", exe) < 0)
				path = NULL;
			else if (access(path, X_OK) == 0)
				return path;
			free(path);
			path = NULL;
		}
	}
#ifdef CRYO_SOURCE_DIR
	if (access(CRYO_SOURCE_DIR "/tests/setup-criu4.sh", R_OK) == 0)
		return strdup("bash " CRYO_SOURCE_DIR "/tests/setup-criu4.sh");
#endif
	return NULL;
}

/* CRIU < 4 fails on this kernel: say exactly what to run. */
static void print_criu4_howto(const char *release)
{
	const char *env = getenv("CRYO_CRIU"), *prefix = getenv("CRYO_CRIU4_PREFIX");
	_cleanup_free_ char *bin = NULL, *setup = NULL;

	if (!prefix || !*prefix)
		prefix = CRIU4_PREFIX;
	if (asprintf(&bin, "%s/sbin/criu", prefix) < 0) {
		bin = NULL;
		return;
	}
	printf("to fix: this kernel (%s) needs CRIU >= 4.\n", release);
	if (access(bin, X_OK) == 0 && !(env && strcmp(env, bin) == 0)) {
		printf("  CRIU 4 is installed at %s; run cryo with it:\n"
		       "    sudo CRYO_CRIU=%s cryo check\n", bin, bin);
		return;
	}
	setup = find_setup_criu4();
	if (setup && strcmp(prefix, CRIU4_PREFIX) != 0)
		printf("  build it from Debian trixie's source into %s (about a minute on two cores):\n"
		       "    sudo CRYO_CRIU4_PREFIX=%s %s\n", prefix, prefix, setup);
	else if (setup)
		printf("  build it from Debian trixie's source into %s (about a minute on two cores):\n"
		       "    sudo %s\n", prefix, setup);
	else
		printf("  build it into %s with tests/setup-criu4.sh of cryo's source tree\n", prefix);
	printf("  then run cryo with it:\n"
	       "    sudo CRYO_CRIU=%s cryo check\n"
	       "  (or install criu >= 4 from the distribution: Debian trixie and later ship it)\n", bin);
}

/* Kernels >= 6.13 changed the vDSO layout that CRIU < 4 parses. */
static bool kernel_needs_criu4(const char *release)
{
	unsigned major = 0, minor = 0;

	if (sscanf(release, "%u.%u", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 13);
}

/*
 * `cryo check`: can this host checkpoint and restore? Prints one line per
 * fact and, when it can't, why; exit 0 when CRIU works here, 1 when not.
 */
int cmd_check(struct cryo_cli *cli, int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_criu_host h;
	struct utsname u;
	int r;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("Usage: cryo check\n\nCheck whether this host can checkpoint and restore containers (CRIU's\n"
		       "self-check, its version, hardware breakpoints). Exit 0 when it can.\n");
		return 0;
	}
	if (argc > 1)
		return cli_usage_error("check", "unexpected argument `%s`", argv[1]);

	r = cryo_criu_check_host(&h, &err);
	if (r < 0)
		return cli_fail(&err);
	if (uname(&u) == 0)
		printf("kernel: %s %s\n", u.sysname, u.release);
	else
		snprintf(u.release, sizeof(u.release), "?");
	print_freezer_backend();
	printf("memory tracking: soft-dirty %s (pre-dump, pre-copy), userfaultfd %s (lazy pages)\n",
	       cryo_kernel_has_soft_dirty() ? "yes" : "no", cryo_kernel_has_userfaultfd() ? "yes" : "no");
	if (!h.found) {
		printf("criu: not found (libcriu could not run `criu`)\n");
		printf("checkpoint/restore: NOT available: install the criu package\n");
		if (kernel_needs_criu4(u.release))
			print_criu4_howto(u.release);
		return 1;
	}
	printf("criu: %u.%u.%u\n", h.version.major, h.version.minor, h.version.sublevel);
	if (h.hw_breakpoints < 0)
		printf("hardware breakpoints: probe failed: %s\n", strerror(-h.hw_breakpoints));
	else
		printf("hardware breakpoints: %s (%s)\n", h.hw_breakpoints ? "yes" : "no", h.hw_breakpoints_why);
	if (h.needs_fault_130)
		printf("criu fault injection: CRIU_FAULT=130 is set for CRIU (CRIU >= 4 needs it without hardware breakpoints)\n");
	else if (h.version.major < 4)
		printf("criu fault injection: none needed (CRIU < 4 does not use hardware breakpoints)\n");
	else
		printf("criu fault injection: none needed\n");
	if (h.check_ok) {
		printf("criu check: ok\n");
		printf("checkpoint/restore: available\n");
		cryo_criu_host_done(&h);
		return 0;
	}
	printf("criu check: FAILED: %s\n", h.check_errors ? h.check_errors : "no Error lines in its log");
	printf("checkpoint/restore: NOT available on this host: CRIU %u.%u.%u fails its self-check on kernel %s%s\n",
	       h.version.major, h.version.minor, h.version.sublevel, u.release,
	       h.check_errors && strstr(h.check_errors, "vdso") ?
		       " (its vDSO parser predates this kernel's vDSO layout; use CRIU >= 4 or a kernel < 6.13)" :
		       "");
	if (h.version.major < 4)
		print_criu4_howto(u.release);
	cryo_criu_host_done(&h);
	return 1;
}
