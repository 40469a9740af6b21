// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "criu-rpc.h"
#include "criu-rpc.pb-c.h"
#include "util.h"

#define RPC_MAX_MSG (1U << 20)

static void reap(pid_t pid, bool kill_it)
{
	int status;

	if (kill_it)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

static int exchange(int sk, const CriuReq *req, int timeout_ms, CriuResp **ret, struct cryo_error *err)
{
	_cleanup_free_ uint8_t *buf = NULL;
	struct pollfd pfd = { .fd = sk, .events = POLLIN };
	size_t len = criu_req__get_packed_size(req);
	ssize_t n;
	CriuResp *resp;

	if (len > RPC_MAX_MSG)
		return cryo_error_setx(err, EMSGSIZE, "criu rpc: request of %zu bytes", len);
	buf = malloc(len ? len : 1);
	if (!buf)
		return cryo_error_set(err, ENOMEM, "criu rpc");
	criu_req__pack(req, buf);
	if (send(sk, buf, len, MSG_NOSIGNAL) != (ssize_t)len)
		return cryo_error_set(err, errno ? errno : EIO, "criu rpc: send request");
	free(buf);
	buf = NULL;

	n = poll(&pfd, 1, timeout_ms);
	if (n == 0)
		return cryo_error_setx(err, ETIMEDOUT, "criu rpc: no answer from criu swrk in %d ms", timeout_ms);
	if (n < 0)
		return cryo_error_set(err, errno, "criu rpc: poll");
	n = recv(sk, NULL, 0, MSG_PEEK | MSG_TRUNC);
	if (n <= 0)
		return cryo_error_setx(err, ECONNRESET, "criu rpc: criu swrk closed the connection without answering");
	if ((size_t)n > RPC_MAX_MSG)
		return cryo_error_setx(err, EMSGSIZE, "criu rpc: answer of %zd bytes", n);
	buf = malloc((size_t)n);
	if (!buf)
		return cryo_error_set(err, ENOMEM, "criu rpc");
	len = (size_t)n;
	n = recv(sk, buf, len, MSG_TRUNC);
	if (n != (ssize_t)len)
		return cryo_error_set(err, errno ? errno : EIO, "criu rpc: receive answer");
	resp = criu_resp__unpack(NULL, len, buf);
	if (!resp)
		return cryo_error_setx(err, EBADMSG, "criu rpc: malformed answer from criu swrk");
	*ret = resp;
	return 0;
}

/* Run one request against a fresh `criu swrk` (waiting at most timeout_ms). */
static int rpc_call(const CriuReq *req, int timeout_ms, CriuResp **ret, struct cryo_error *err)
{
	const char *bin = getenv("CRYO_CRIU");
	int sv[2], r;
	pid_t pid;

	if (!bin || !*bin)
		bin = "criu";
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return cryo_error_set(err, errno, "criu rpc: socketpair");
	pid = fork();
	if (pid < 0) {
		r = cryo_error_set(err, errno, "criu rpc: fork");
		close(sv[0]);
		close(sv[1]);
		return r;
	}
	if (pid == 0) {
		char fdarg[16];

		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		/* the swrk end is the only fd CRIU inherits from us; its chatter ("Looks good.") is not ours to print */
		if (fcntl(sv[1], F_SETFD, 0) < 0 || null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0)
			_exit(127);
		snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
		execlp(bin, bin, "swrk", fdarg, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	r = exchange(sv[0], req, timeout_ms, ret, err);
	close(sv[0]);
	reap(pid, r < 0);
	if (r < 0)
		return cryo_error_prefix(err, "`%s swrk`", bin);
	return 0;
}

int cryo_criu_rpc_check(int dirfd, const char *log_file, int log_level, struct cryo_error *err)
{
	CriuReq req = CRIU_REQ__INIT;
	CriuOpts opts = CRIU_OPTS__INIT;
	CriuResp *resp = NULL;
	int r;

	opts.images_dir_fd = dirfd;
	opts.log_file = (char *)log_file;
	opts.has_log_level = 1;
	opts.log_level = log_level;
	req.type = CRIU_REQ_TYPE__CHECK;
	req.opts = &opts;
	r = rpc_call(&req, 60000, &resp, err);
	if (r < 0)
		return r;
	r = resp->success ? 0 : -EOPNOTSUPP;
	if (r < 0)
		cryo_error_setx(err, EOPNOTSUPP, "criu check failed%s%s", resp->cr_errmsg ? ": " : "",
				resp->cr_errmsg ? resp->cr_errmsg : "");
	criu_resp__free_unpacked(resp, NULL);
	return r;
}
