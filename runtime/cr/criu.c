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

#include "criu.h"
#include "criu-cli.h"
#include "criu-lib.h"
#include "criu-rpc.h"
#include "util.h"

int cryo_criu_dump(const struct cryo_criu_opts *o, struct cryo_error *err)
{
	return cryo_criu_lib_dump(o, err);
}

int cryo_criu_restore(const struct cryo_criu_opts *o, pid_t *ret_pid, struct cryo_error *err)
{
	/* libcriu has no lazy-pages setter (3.17): CRIU's command line */
	if (o->lazy_pages) {
		/* which passes CRIU no fd of ours: no namespace to restore into */
		if (o->ext_ns && o->ext_ns[0].key)
			return cryo_error_setx(err, EOPNOTSUPP,
					       "criu restore: lazy pages into a namespace the container joins by path (%s) are not supported",
					       o->ext_ns[0].key);
		return cryo_criu_cli_lazy_restore(o, ret_pid, err);
	}
	return cryo_criu_lib_restore(o, ret_pid, err);
}

void cryo_criu_host_done(struct cryo_criu_host *h)
{
	free(h->check_errors);
	h->check_errors = NULL;
}

/* Dump (leaving it running) a child that only sleeps, images and log in dir. */
static int probe_dump(const char *dir)
{
	struct cryo_criu_opts o = { .image_dir = dir, .leave_running = true };
	struct cryo_error err = CRYO_ERROR_INIT;
	int status, r;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		(void)setsid();
		if (fd >= 0) {
			(void)dup2(fd, 0);
			(void)dup2(fd, 1);
			(void)dup2(fd, 2);
		}
		(void)close_range(3, ~0U, 0);
		for (;;)
			pause();
	}
	o.pid = pid;
	r = cryo_criu_dump(&o, &err);
	cryo_error_clear(&err);
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return r;
}

int cryo_criu_check_host(struct cryo_criu_host *ret, struct cryo_error *err)
{
		_cleanup_close_ int dfd = -1, tmpfd = -1;
	struct cryo_criu_host h = { 0 };
	char dir[] = "/tmp/cryo-criu-check.XXXXXX";
	_cleanup_error_ struct cryo_error cerr = CRYO_ERROR_INIT;
	_cleanup_free_ char *log = NULL;
	int r;

	h.hw_breakpoints = cryo_criu_probe_hw_breakpoints(&h.hw_breakpoints_why);
	if (cryo_criu_get_version(&h.version, NULL) < 0) {
		*ret = h;
		return 0;
	}
	h.found = true;
	h.needs_fault_130 = cryo_criu_needs_fault_130(&h.version);
	cryo_criu_set_env(&h.version);

	if (!mkdtemp(dir))
		return cryo_error_set(err, errno, "create a temp dir for CRIU's check log");
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = cryo_error_set(err, errno, "open `%s`", dir);
		(void)rmdir(dir);
		return r;
	}
	/* over our own RPC: libcriu's check crashes criu 3.17 (see criu-rpc.h) */
	r = cryo_criu_rpc_check(dfd, "check.log", cryo_criu_log_level(), &cerr);
	h.check_ok = r == 0;
	if (!h.check_ok) {
		if (asprintf(&log, "%s/check.log", dir) < 0)
			log = NULL;
		h.check_errors = log ? cryo_criu_log_errors(log, CRYO_CRIU_LOG_ERRORS_MAX_LINES) : NULL;
		/*
		 * CRIU fails before it opens its log when it can't even
		 * read the kernel's features: learn why from a real dump
		 * of a sleeping child, whose log has the Error lines.
		 */
		free(log);
		log = NULL;
		if (!h.check_errors && asprintf(&log, "%s/dump.log", dir) >= 0 && probe_dump(dir) < 0)
			h.check_errors = cryo_criu_log_errors(log, CRYO_CRIU_LOG_ERRORS_MAX_LINES);
		if (!h.check_errors)
			h.check_errors = strdup(cerr.msg ? cerr.msg : "criu check failed");
	}
	tmpfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tmpfd >= 0)
		(void)cryo_rm_rf_at(tmpfd, dir + strlen("/tmp/"));
	*ret = h;
	return 0;
}
