// SPDX-License-Identifier: GPL-2.0-only
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>

#include "hooks.h"
#include "util.h"

const char *const cryo_hook_kind_names[_CRYO_HOOK_KIND_MAX] = {
	[CRYO_HOOK_PRESTART] = "prestart",
	[CRYO_HOOK_CREATE_RUNTIME] = "createRuntime",
	[CRYO_HOOK_CREATE_CONTAINER] = "createContainer",
	[CRYO_HOOK_START_CONTAINER] = "startContainer",
	[CRYO_HOOK_POSTSTART] = "poststart",
	[CRYO_HOOK_POSTSTOP] = "poststop",
};

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static void hook_free(struct cryo_hook *h)
{
	free(h->path);
	strv_free(h->args);
	strv_free(h->env);
	memset(h, 0, sizeof(*h));
}

void cryo_hooks_spec_free(struct cryo_hooks_spec *spec)
{
	if (!spec)
		return;
	for (int k = 0; k < _CRYO_HOOK_KIND_MAX; k++) {
		for (size_t i = 0; i < spec->n[k]; i++)
			hook_free(&spec->hooks[k][i]);
		free(spec->hooks[k]);
	}
	memset(spec, 0, sizeof(*spec));
}

static int parse_strv(struct json_object *arr, const char *where, const char *field, bool is_env,
		      char ***ret, struct cryo_error *err)
{
	char **v;
	size_t n;

	if (!json_object_is_type(arr, json_type_array))
		return cryo_error_setx(err, EINVAL, "%s.%s: must be an array of strings", where, field);
	n = json_object_array_length(arr);
	if (n > CRYO_HOOKS_MAX_ARGS)
		return cryo_error_setx(err, EINVAL, "%s.%s: %zu entries, at most %d", where, field, n,
				       CRYO_HOOKS_MAX_ARGS);
	v = calloc(n + 1, sizeof(char *));
	if (!v)
		return cryo_error_set(err, ENOMEM, "%s.%s", where, field);
	for (size_t i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(s, json_type_string)) {
			strv_free(v);
			return cryo_error_setx(err, EINVAL, "%s.%s[%zu]: must be a string", where, field, i);
		}
		if (is_env && !strchr(json_object_get_string(s), '=')) {
			int r = cryo_error_setx(err, EINVAL, "%s.%s[%zu]: `%s` is not NAME=VALUE", where, field, i,
						json_object_get_string(s));
			strv_free(v);
			return r;
		}
		v[i] = strdup(json_object_get_string(s));
		if (!v[i]) {
			strv_free(v);
			return cryo_error_set(err, ENOMEM, "%s.%s", where, field);
		}
	}
	*ret = v;
	return 0;
}

static int parse_hook(struct json_object *o, const char *where, struct cryo_hook *h, struct cryo_error *err)
{
	struct json_object *v;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return cryo_error_setx(err, EINVAL, "%s: must be an object", where);
	if (!json_object_object_get_ex(o, "path", &v) || !json_object_is_type(v, json_type_string))
		return cryo_error_setx(err, EINVAL, "%s.path: missing or not a string", where);
	if (json_object_get_string(v)[0] != '/')
		return cryo_error_setx(err, EINVAL, "%s.path: `%s` is not an absolute path", where,
				       json_object_get_string(v));
	h->path = strdup(json_object_get_string(v));
	if (!h->path)
		return cryo_error_set(err, ENOMEM, "%s", where);
	if (json_object_object_get_ex(o, "args", &v) && !json_object_is_type(v, json_type_null)) {
		r = parse_strv(v, where, "args", false, &h->args, err);
		if (r < 0)
			return r;
	}
	if (!h->args || !h->args[0]) {
		/* no args (or an empty list): argv[0] is the path, like execv(path, {path}) */
		strv_free(h->args);
		h->args = calloc(2, sizeof(char *));
		if (!h->args || !(h->args[0] = strdup(h->path)))
			return cryo_error_set(err, ENOMEM, "%s", where);
	}
	if (json_object_object_get_ex(o, "env", &v) && !json_object_is_type(v, json_type_null)) {
		r = parse_strv(v, where, "env", true, &h->env, err);
		if (r < 0)
			return r;
	}
	if (json_object_object_get_ex(o, "timeout", &v) && !json_object_is_type(v, json_type_null)) {
		int64_t t = json_object_get_int64(v);

		if (!json_object_is_type(v, json_type_int) || t <= 0 || t > (int64_t)24 * 3600)
			return cryo_error_setx(err, EINVAL, "%s.timeout: must be a positive number of seconds (at most 86400)",
					       where);
		h->timeout_s = (int)t;
	}
	return 0;
}

int cryo_hooks_parse(struct json_object *hooks, struct cryo_hooks_spec *out, struct cryo_error *err)
{
	struct cryo_hooks_spec spec = { 0 };
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!hooks || json_object_is_type(hooks, json_type_null))
		return 0;
	if (!json_object_is_type(hooks, json_type_object))
		return cryo_error_setx(err, EINVAL, "hooks: must be an object");
	for (int k = 0; k < _CRYO_HOOK_KIND_MAX; k++) {
		struct json_object *arr;
		size_t n;

		if (!json_object_object_get_ex(hooks, cryo_hook_kind_names[k], &arr) ||
		    json_object_is_type(arr, json_type_null))
			continue;
		if (!json_object_is_type(arr, json_type_array)) {
			r = cryo_error_setx(err, EINVAL, "hooks.%s: must be an array", cryo_hook_kind_names[k]);
			goto fail;
		}
		n = json_object_array_length(arr);
		if (n > CRYO_HOOKS_MAX_PER_KIND) {
			r = cryo_error_setx(err, EINVAL, "hooks.%s: %zu entries, at most %d", cryo_hook_kind_names[k], n,
					    CRYO_HOOKS_MAX_PER_KIND);
			goto fail;
		}
		spec.hooks[k] = calloc(n ? n : 1, sizeof(struct cryo_hook));
		if (!spec.hooks[k]) {
			r = cryo_error_set(err, ENOMEM, "hooks");
			goto fail;
		}
		for (size_t i = 0; i < n; i++) {
			char where[64];

			snprintf(where, sizeof(where), "hooks.%s[%zu]", cryo_hook_kind_names[k], i);
			spec.n[k]++;
			r = parse_hook(json_object_array_get_idx(arr, i), where, &spec.hooks[k][i], err);
			if (r < 0)
				goto fail;
		}
	}
	*out = spec;
	return 0;
fail:
	cryo_hooks_spec_free(&spec);
	return r;
}

/* Output kept for the error: the tail, where tools print why they failed. */
struct tail {
	char buf[CRYO_HOOKS_OUTPUT_MAX];
	size_t len;
	bool truncated;
};

static void drain(int fd, struct tail *t)
{
	char chunk[4096];
	ssize_t n;

	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		size_t k = (size_t)n;

		if (k >= sizeof(t->buf)) {
			memcpy(t->buf, chunk + k - sizeof(t->buf), sizeof(t->buf));
			t->len = sizeof(t->buf);
			t->truncated = true;
			continue;
		}
		if (t->len + k > sizeof(t->buf)) {
			size_t drop = t->len + k - sizeof(t->buf);

			memmove(t->buf, t->buf + drop, t->len - drop);
			t->len -= drop;
			t->truncated = true;
		}
		memcpy(t->buf + t->len, chunk, k);
		t->len += k;
	}
}

/* One line for the error sentence: control characters become spaces. */
static void tail_text(const struct tail *t, char *out, size_t size)
{
	size_t j = 0, i = 0;

	while (i < t->len && (t->buf[i] == ' ' || t->buf[i] == '\n'))
		i++;
	if (t->truncated && j + 4 < size) {
		memcpy(out, "... ", 4);
		j = 4;
	}
	for (; i < t->len && j + 1 < size; i++)
		out[j++] = ((unsigned char)t->buf[i] < 0x20 || t->buf[i] == 0x7f) ? ' ' : t->buf[i];
	while (j > 0 && out[j - 1] == ' ')
		j--;
	out[j] = '\0';
}

/* In the forked child: never returns. Only async-signal-safe calls. */
static void __attribute__((noreturn)) exec_child(const struct cryo_hook *h, int in_fd, int out_fd)
{
	extern char **environ;
	sigset_t all;
	int in, out;

	/* lift whatever the caller blocked or ignored; a hook is a fresh program */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	/* move both off 0..2 first, so the dup2()s below can't clobber each other */
	in = fcntl(in_fd, F_DUPFD_CLOEXEC, 3);
	out = fcntl(out_fd, F_DUPFD_CLOEXEC, 3);
	if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(126);
	execve(h->path, h->args, h->env ? h->env : environ);
	{
		const char *e = strerror(errno);

		if (write(2, "cannot execute: ", 16) < 0 || write(2, e, strlen(e)) < 0)
			_exit(127);
	}
	_exit(127);
}

static int run_one(const struct cryo_hook *h, const char *what, const char *state_json, struct cryo_error *err)
{
	_cleanup_close_ int in_r = -1, in_w = -1, out_r = -1, out_w = -1, pidfd = -1;
	int fds[2], status = 0, r;
	size_t len = strlen(state_json);
	int64_t deadline = h->timeout_s > 0 ? cryo_now_ms() + (int64_t)h->timeout_s * 1000 : -1;
	struct tail *t = NULL;
	char text[CRYO_HOOKS_OUTPUT_MAX + 8];
	bool exited = false, timed_out = false;
	siginfo_t si = { 0 };
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "%s: pipe", what);
	in_r = fds[0];
	in_w = fds[1];
	/*
	 * The whole state goes into the pipe before the hook runs: no writer
	 * loop, and no SIGPIPE for us when a hook ignores its stdin.
	 */
	if (len > 65536 && fcntl(in_w, F_SETPIPE_SZ, (int)len) < 0)
		return cryo_error_set(err, errno, "%s: state JSON of %zu bytes does not fit a pipe", what, len);
	for (size_t off = 0; off < len;) {
		ssize_t n = write(in_w, state_json + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return cryo_error_set(err, n < 0 ? errno : EIO, "%s: write state to the hook's stdin", what);
		off += (size_t)n;
	}
	if (close(TAKE_FD(in_w)) < 0)
		return cryo_error_set(err, errno, "%s: close stdin pipe", what);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "%s: pipe", what);
	out_r = fds[0];
	out_w = fds[1];
	if (fcntl(out_r, F_SETFL, O_NONBLOCK) < 0)
		return cryo_error_set(err, errno, "%s: set output pipe non-blocking", what);

	pid = fork();
	if (pid < 0)
		return cryo_error_set(err, errno, "%s: fork", what);
	if (pid == 0)
		exec_child(h, in_r, out_w);
	close(TAKE_FD(out_w));
	close(TAKE_FD(in_r));

	pidfd = pidfd_open(pid, 0);
	if (pidfd < 0) {
		r = cryo_error_set(err, errno, "%s: pidfd_open", what);
		cryo_pid_kill_reapp(&pid);
		return r;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		cryo_pid_kill_reapp(&pid);
		return cryo_error_set(err, ENOMEM, "%s", what);
	}
	/*
	 * Wait for the hook to exit, not for EOF: a hook that leaves a daemon
	 * behind holding its stdout must not hang the runtime.
	 */
	while (!exited) {
		struct pollfd p[2] = { { .fd = pidfd, .events = POLLIN }, { .fd = out_r, .events = POLLIN } };
		int timeout = -1;

		if (deadline >= 0) {
			int64_t left = deadline - cryo_now_ms();

			if (left <= 0) {
				timed_out = true;
				break;
			}
			timeout = (int)(left > 60000 ? 60000 : left);
		}
		r = poll(p, out_r >= 0 ? 2 : 1, timeout);
		if (r < 0 && errno != EINTR) {
			r = cryo_error_set(err, errno, "%s: poll", what);
			pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
			waitpid(pid, NULL, 0);
			free(t);
			return r;
		}
		if (out_r >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			drain(out_r, t);
		if (out_r >= 0 && (p[1].revents & (POLLHUP | POLLERR)) && !(p[1].revents & POLLIN))
			close(TAKE_FD(out_r));
		if (p[0].revents & POLLIN)
			exited = true;
	}
	if (timed_out)
		pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
	while ((r = waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED)) < 0 && errno == EINTR)
		;
	if (r < 0) {
		/* ECHILD: someone else reaped it, e.g. SIGCHLD set to SIG_IGN in the caller */
		r = cryo_error_set(err, errno, "%s: collect the hook's exit status", what);
		free(t);
		return r;
	}
	if (out_r >= 0)
		drain(out_r, t);
	tail_text(t, text, sizeof(text));
	free(t);

	if (timed_out)
		return cryo_error_setx(err, ETIMEDOUT, "%s timed out after %d s%s%s", what, h->timeout_s,
				       text[0] ? ": " : "", text);
	if (si.si_code == CLD_EXITED)
		status = si.si_status;
	else {
		char sig[64];

		/* lower case, as runc says it ("signal: bad system call") */
		snprintf(sig, sizeof(sig), "%s", strsignal(si.si_status));
		sig[0] = (char)tolower((unsigned char)sig[0]);
		return cryo_error_setx(err, ECANCELED, "%s killed by signal %d (%s)%s%s", what, si.si_status, sig,
				       text[0] ? ": " : "", text);
	}
	if (status != 0)
		return cryo_error_setx(err, ECANCELED, "%s exited with status %d%s%s", what, status,
				       text[0] ? ": " : "", text);
	return 0;
}

int cryo_hooks_run_one(const struct cryo_hooks_spec *spec, enum cryo_hook_kind kind, size_t i,
		       const char *state_json, struct cryo_error *err)
{
	const struct cryo_hook *h;
	char what[4200];

	if ((int)kind < 0 || kind >= _CRYO_HOOK_KIND_MAX)
		return cryo_error_setx(err, EINVAL, "unknown hook kind %d", (int)kind);
	if (i >= spec->n[kind])
		return cryo_error_setx(err, EINVAL, "no hook %s[%zu]", cryo_hook_kind_names[kind], i);
	h = &spec->hooks[kind][i];
	/* "error running hook": runc's words, which clients match */
	snprintf(what, sizeof(what), "error running hook %s[%zu] `%s`", cryo_hook_kind_names[kind], i, h->path);
	return run_one(h, what, state_json ? state_json : "", err);
}

int cryo_hooks_run(const struct cryo_hooks_spec *spec, enum cryo_hook_kind kind, const char *state_json,
		   struct cryo_error *err)
{
	if ((int)kind < 0 || kind >= _CRYO_HOOK_KIND_MAX)
		return cryo_error_setx(err, EINVAL, "unknown hook kind %d", (int)kind);
	for (size_t i = 0; i < spec->n[kind]; i++) {
		int r = cryo_hooks_run_one(spec, kind, i, state_json, err);

		if (r < 0)
			return r;
	}
	return 0;
}
