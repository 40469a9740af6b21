// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <criu/criu.h>

#include "criu-env.h"
#include "log.h"
#include "util.h"

#define CRIU_FAULT_NO_BREAKPOINTS "130"
#define LOG_ERRORS_MAX_LEN 1500

const char *const cryo_criu_cg_mode_names[_CRYO_CRIU_CG_MAX] = {
	[CRYO_CRIU_CG_DEFAULT] = "default",
	[CRYO_CRIU_CG_SOFT] = "soft",
	[CRYO_CRIU_CG_FULL] = "full",
	[CRYO_CRIU_CG_STRICT] = "strict",
	[CRYO_CRIU_CG_IGNORE] = "ignore",
};

int cryo_criu_cg_mode_from_string(const char *s, enum cryo_criu_cg_mode *ret, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cryo_criu_cg_mode_names); i++)
		if (s && strcmp(s, cryo_criu_cg_mode_names[i]) == 0) {
			*ret = (enum cryo_criu_cg_mode)i;
			return 0;
		}
	return cryo_error_setx(err, EINVAL, "unknown cgroups mode `%s` (soft, full, strict or ignore)", s ? s : "");
}


/*
 * Collect Error lines. CRIU also logs the exit of every helper it ran
 * (`exited, status=1` of an iptables probe...); those say nothing on
 * their own, so they are skipped unless nothing else is there.
 */
static char *log_errors(const char *path, unsigned max_lines, bool skip_exits)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	char *out = NULL;
	size_t cap = 0, len = 0;
	unsigned n = 0;

	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (n < max_lines && getline(&line, &cap, f) > 0) {
		char *e = strstr(line, "Error (");
		size_t l;
		char *nb;

		if (!e || (skip_exits && strstr(e, "exited, status=")))
			continue;
		l = strcspn(e, "\n");
		if (len + l + 3 > LOG_ERRORS_MAX_LEN)
			break;
		nb = realloc(out, len + l + 3);
		if (!nb)
			break;
		out = nb;
		if (len > 0) {
			memcpy(out + len, "; ", 2);
			len += 2;
		}
		memcpy(out + len, e, l);
		len += l;
		out[len] = '\0';
		n++;
	}
	return out;
}

int cryo_criu_log_level(void)
{
	return cryo_log_debugging() ? CRYO_CRIU_LOG_LEVEL_DEBUG : 3;
}

char *cryo_criu_log_errors(const char *path, unsigned max_lines)
{
	char *s = log_errors(path, max_lines, true);

	return s ? s : log_errors(path, max_lines, false);
}

/*
 * The probe: a traced child stops, gets a hardware execution breakpoint
 * (DR0 + DR7.L0) on a function it is about to call, and runs. A working
 * breakpoint stops it with SIGTRAP; where debug registers are accepted
 * but never fire (some hypervisors), it runs to its exit.
 */
static __attribute__((noinline)) void probe_target(void)
{
	__asm__ volatile("" ::: "memory");
}

int cryo_criu_probe_hw_breakpoints(const char **ret_why)
{
	static int cached = -1000;
	static const char *cached_why;
	const char *why = NULL;
	int status, r;
	pid_t pid;

	if (cached != -1000) {
		if (ret_why)
			*ret_why = cached_why;
		return cached;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(2);
		raise(SIGSTOP);
		probe_target();
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		r = -ECHILD;
		goto out;
	}
	/* ptrace takes the user-area offset and the value as pointers */
	if (ptrace(PTRACE_POKEUSER, pid, (void *)offsetof(struct user, u_debugreg[0]), (void *)probe_target) < 0) { // NOLINT(performance-no-int-to-ptr)
		why = "ptrace cannot set debug register DR0";
		r = 0;
		goto out;
	}
	if (ptrace(PTRACE_POKEUSER, pid, (void *)offsetof(struct user, u_debugreg[7]), (void *)1L) < 0) { // NOLINT(performance-no-int-to-ptr)
		why = "ptrace cannot enable DR7";
		r = 0;
		goto out;
	}
	if (ptrace(PTRACE_CONT, pid, NULL, NULL) < 0) {
		r = -errno;
		goto out;
	}
	if (waitpid(pid, &status, 0) != pid) {
		r = -ECHILD;
		goto out;
	}
	if (WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP) {
		why = "an execution breakpoint trapped";
		r = 1;
	} else {
		why = "an execution breakpoint was accepted but never trapped";
		r = 0;
	}
out:
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (r >= 0) {
		cached = r;
		cached_why = why;
	}
	if (ret_why)
		*ret_why = why;
	return r;
}

void cryo_criu_opts_freep(criu_opts **o)
{
	if (*o)
		criu_local_free_opts(*o);
}

int cryo_criu_new_opts(criu_opts **ret, struct cryo_error *err)
{
	const char *bin = getenv("CRYO_CRIU");
	criu_opts *o = NULL;
	int r;

	r = criu_local_init_opts(&o);
	if (r < 0)
		return cryo_error_set(err, -r, "libcriu: init options");
	if (bin && *bin) {
		r = criu_local_set_service_binary(o, bin);
		if (r < 0) {
			criu_local_free_opts(o);
			return cryo_error_set(err, -r, "libcriu: service binary");
		}
	}
	*ret = o;
	return 0;
}

/*
 * Each version query is a `criu swrk` of its own (about 10 ms): asked
 * once per process and CRIU binary (CRYO_CRIU), not once per use (a
 * checkpoint wants it for CRIU's environment, its options and the manifest).
 */
static struct {
	bool known;
	char *bin;
	struct cryo_criu_version v;
} version_cache;

static int version_of(criu_opts *o, struct cryo_criu_version *ret, struct cryo_error *err)
{
	const char *env = getenv("CRYO_CRIU");
	const char *bin = env ? env : "";
	char *copy;
	int v;

	if (version_cache.known && strcmp(version_cache.bin, bin) == 0) {
		*ret = version_cache.v;
		return 0;
	}
	v = criu_local_get_version(o);
	if (v <= 0)
		return cryo_error_setx(err, ENOENT, "cannot run CRIU (`%s`) to ask its version: is the criu package installed?",
				       *bin ? bin : "criu");
	ret->code = v;
	ret->major = (unsigned)v / 10000;
	ret->minor = (unsigned)v / 100 % 100;
	ret->sublevel = (unsigned)v % 100;
	copy = strdup(bin);
	if (copy) {
		free(version_cache.bin);
		version_cache.bin = copy;
		version_cache.v = *ret;
		version_cache.known = true;
	}
	return 0;
}

int cryo_criu_get_version(struct cryo_criu_version *ret, struct cryo_error *err)
{
	_cleanup_(cryo_criu_opts_freep) criu_opts *o = NULL;
	int r;

	r = cryo_criu_new_opts(&o, err);
	if (r < 0)
		return r;
	return version_of(o, ret, err);
}

bool cryo_criu_needs_fault_130(const struct cryo_criu_version *v)
{
	const char *why;

	return v->major >= 4 && cryo_criu_probe_hw_breakpoints(&why) == 0;
}

void cryo_criu_set_env(const struct cryo_criu_version *v)
{
	if (getenv("CRIU_FAULT") || !cryo_criu_needs_fault_130(v))
		return;
	/* libcriu forks `criu swrk`: it inherits our environment */
	if (setenv("CRIU_FAULT", CRIU_FAULT_NO_BREAKPOINTS, 0) == 0)
		cryo_debug("CRIU %u.%u.%u and no hardware breakpoints: running CRIU with CRIU_FAULT=130", v->major,
			   v->minor, v->sublevel);
}

int cryo_criu_prepare_env(struct cryo_error *err)
{
	struct cryo_criu_version v;
	int r = cryo_criu_get_version(&v, err);

	if (r < 0)
		return r;
	cryo_criu_set_env(&v);
	return 0;
}

bool cryo_criu_in_path(const char *name)
{
	_cleanup_free_ char *path = NULL;
	const char *env = getenv("PATH");
	char *dir, *save = NULL;

	path = strdup(env ? env : "/usr/sbin:/usr/bin:/sbin:/bin");
	if (!path)
		return false;
	for (dir = strtok_r(path, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		char p[4096];

		snprintf(p, sizeof(p), "%s/%s", dir, name);
		if (access(p, X_OK) == 0)
			return true;
	}
	return false;
}
