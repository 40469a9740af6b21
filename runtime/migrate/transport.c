// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>

#include "log.h"
#include "transport.h"
#include "util.h"

#define DEFAULT_IO_TIMEOUT_MS 30000
#define SSH_EXIT_WAIT_MS 5000

extern char **environ;

int cryo_dest_parse(const char *s, struct cryo_dest *ret, struct cryo_error *err)
{
	struct cryo_dest d = { 0 };
	const char *p, *at, *hs, *he, *colon;
	uint64_t port = 0;

	if (!s)
		return cryo_error_setx(err, EINVAL, "no destination");
	if (strncmp(s, "ssh://", 6) == 0) {
		d.kind = CRYO_DEST_SSH;
		p = s + 6;
	} else if (strncmp(s, "tls://", 6) == 0) {
		d.kind = CRYO_DEST_TLS;
		p = s + 6;
	} else {
		return cryo_error_setx(err, EINVAL, "destination `%s`: want ssh://[user@]host[:port] or tls://host:port", s);
	}
	if (strlen(p) > 512 || strpbrk(p, "/?# \t\n") || p[0] == '-')
		return cryo_error_setx(err, EINVAL, "destination `%s`: not a host[:port]", s);
	at = strchr(p, '@');
	if (at) {
		if (d.kind != CRYO_DEST_SSH || at == p)
			return cryo_error_setx(err, EINVAL, "destination `%s`: a user only goes with ssh://", s);
		d.user = strndup(p, (size_t)(at - p));
		p = at + 1;
	}
	if (p[0] == '[') {
		hs = p + 1;
		he = strchr(hs, ']');
		if (!he)
			goto bad;
		colon = he[1] == ':' ? he + 1 : NULL;
		if (he[1] && !colon)
			goto bad;
	} else {
		hs = p;
		colon = strchr(p, ':');
		he = colon ? colon : p + strlen(p);
		if (colon && strchr(colon + 1, ':'))
			goto bad;
	}
	if (he == hs || hs[0] == '-')
		goto bad;
	if (colon && (cryo_parse_u64(colon + 1, 65535, &port) < 0 || port == 0))
		goto bad;
	if (d.kind == CRYO_DEST_TLS && !colon) {
		free(d.user);
		return cryo_error_setx(err, EINVAL, "destination `%s`: tls:// needs a port", s);
	}
	d.host = strndup(hs, (size_t)(he - hs));
	d.port = (unsigned)port;
	if (!d.host || (at && !d.user)) {
		cryo_dest_done(&d);
		return cryo_error_set(err, ENOMEM, "destination");
	}
	*ret = d;
	return 0;
bad:
	free(d.user);
	return cryo_error_setx(err, EINVAL, "destination `%s`: not a host[:port]", s);
}

void cryo_dest_done(struct cryo_dest *d)
{
	free(d->user);
	free(d->host);
	d->user = d->host = NULL;
}

static ssize_t fd_read(struct cryo_transport *t, void *buf, size_t len, int64_t deadline_ms, struct cryo_error *err)
{
	for (;;) {
		ssize_t n = read(t->rfd, buf, len);
		int r;

		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return cryo_error_set(err, errno, "read from %s", t->peer);
		r = cryo_wait_fd(t->rfd, POLLIN, deadline_ms, "read", err);
		if (r < 0) {
			cryo_error_prefix(err, "%s", t->peer);
			return r;
		}
	}
}

static int fd_write(struct cryo_transport *t, const void *buf, size_t len, int64_t deadline_ms, struct cryo_error *err)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(t->wfd, p, len);
		int r;

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return cryo_error_set(err, errno == EPIPE ? EPIPE : errno, "write to %s", t->peer);
		r = cryo_wait_fd(t->wfd, POLLOUT, deadline_ms, "write", err);
		if (r < 0) {
			cryo_error_prefix(err, "%s", t->peer);
			return r;
		}
	}
	return 0;
}

static void fd_close(struct cryo_transport *t)
{
	/* the stdio pair is not ours to close */
}

static const struct cryo_transport_ops fd_ops = {
	.name = "stdio",
	.read = fd_read,
	.write = fd_write,
	.close = fd_close,
};

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int cryo_transport_new(const struct cryo_transport_ops *ops, const char *peer, struct cryo_transport **ret,
			 struct cryo_error *err)
{
	struct cryo_transport *t = calloc(1, sizeof(*t));

	if (!t || !(t->peer = strdup(peer))) {
		free(t);
		return cryo_error_set(err, ENOMEM, "transport");
	}
	t->ops = ops;
	t->rfd = t->wfd = -1;
	t->io_timeout_ms = DEFAULT_IO_TIMEOUT_MS;
	pthread_mutex_init(&t->io_lock, NULL);
	*ret = t;
	return 0;
}

int cryo_transport_fds(int rfd, int wfd, const char *peer, struct cryo_transport **ret, struct cryo_error *err)
{
	int r;

	if (set_nonblock(rfd) < 0 || set_nonblock(wfd) < 0)
		return cryo_error_set(err, errno, "%s: non-blocking", peer);
	r = cryo_transport_new(&fd_ops, peer, ret, err);
	if (r < 0)
		return r;
	(*ret)->rfd = rfd;
	(*ret)->wfd = wfd;
	return 0;
}

/* ssh: the same fd I/O on the pipes to ssh, which is reaped on close */
static void ssh_close(struct cryo_transport *t)
{
	int64_t deadline = cryo_now_ms() + SSH_EXIT_WAIT_MS;
	int status;

	if (t->wfd >= 0)
		close(t->wfd);
	if (t->rfd >= 0 && t->rfd != t->wfd)
		close(t->rfd);
	t->rfd = t->wfd = -1;
	if (t->child <= 0)
		return;
	/*
	 * Our end of stdin is closed: ssh ends once the remote command does.
	 * Over a broken stream (a link that went dead) it would wait for the
	 * remote as long as TCP does: ended now, its connection's end tells
	 * sshd, which ends the remote command.
	 */
	if (__atomic_load_n(&t->broken, __ATOMIC_RELAXED))
		deadline = 0;
	while (waitpid(t->child, &status, WNOHANG) == 0) {
		if (cryo_now_ms() > deadline) {
			kill(t->child, SIGTERM);
			(void)waitpid(t->child, &status, 0);
			break;
		}
		cryo_sleep_ms(20);
	}
	t->child = 0;
}

static const struct cryo_transport_ops ssh_ops = {
	.name = "ssh",
	.read = fd_read,
	.write = fd_write,
	.close = ssh_close,
};

int cryo_transport_ssh(const struct cryo_dest *d, const char *ssh, const char *remote_cmd, struct cryo_transport **ret,
		       struct cryo_error *err)
{
	_cleanup_close_ int in_r = -1, in_w = -1, out_r = -1, out_w = -1;
	char port[16], peer[600];
	const char *argv[16];
	posix_spawn_file_actions_t fa;
	struct cryo_transport *t = NULL;
	int pin[2], pout[2], r;
	size_t n = 0;
	pid_t pid;

	if (pipe2(pin, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "pipe");
	in_r = pin[0];
	in_w = pin[1];
	if (pipe2(pout, O_CLOEXEC) < 0)
		return cryo_error_set(err, errno, "pipe");
	out_r = pout[0];
	out_w = pout[1];

	argv[n++] = ssh ? ssh : "ssh";
	argv[n++] = "-T";
	/* never prompt: our stdin is the channel; a password prompt would hang */
	argv[n++] = "-o";
	argv[n++] = "BatchMode=yes";
	if (d->port) {
		snprintf(port, sizeof(port), "%u", d->port);
		argv[n++] = "-p";
		argv[n++] = port;
	}
	if (d->user) {
		argv[n++] = "-l";
		argv[n++] = d->user;
	}
	argv[n++] = d->host;
	argv[n++] = "--";
	argv[n++] = remote_cmd;
	argv[n] = NULL;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in_r, 0);
	posix_spawn_file_actions_adddup2(&fa, out_w, 1);
	r = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return cryo_error_set(err, r, "run `%s`", argv[0]);
	snprintf(peer, sizeof(peer), "ssh://%s", d->host);
	r = cryo_transport_new(&ssh_ops, peer, &t, err);
	if (r < 0) {
		kill(pid, SIGTERM);
		(void)waitpid(pid, NULL, 0);
		return r;
	}
	t->child = pid;
	t->rfd = TAKE_FD(out_r);
	t->wfd = TAKE_FD(in_w);
	if (set_nonblock(t->rfd) < 0 || set_nonblock(t->wfd) < 0) {
		r = cryo_error_set(err, errno, "ssh pipes");
		cryo_transport_close(t);
		return r;
	}
	*ret = t;
	return 0;
}

bool cryo_transport_pending(struct cryo_transport *t)
{
	struct pollfd p = { .fd = t->rfd, .events = POLLIN };

	if (t->ops->pending && t->ops->pending(t))
		return true;
	return t->rfd >= 0 && poll(&p, 1, 0) > 0;
}

void cryo_transport_close(struct cryo_transport *t)
{
	if (!t)
		return;
	cryo_transport_keepalive_stop(t);
	t->ops->close(t);
	pthread_mutex_destroy(&t->io_lock);
	free(t->out_buf);
	free(t->in_buf);
	free(t->peer);
	free(t);
}

/* Make *buf hold at least n bytes, keeping it for the next frame. */
static int frame_buf(uint8_t **buf, size_t *cap, size_t n, struct cryo_error *err)
{
	uint8_t *p;

	if (n <= *cap)
		return 0;
	p = realloc(*buf, n);
	if (!p)
		return cryo_error_set(err, ENOMEM, "frame of %zu bytes", n);
	*buf = p;
	*cap = n;
	return 0;
}

void cryo_migrate_frame_free(Cryo__MigrateFrame *f)
{
	if (f)
		cryo__migrate_frame__free_unpacked(f, NULL);
}

static bool str_ok(const char *s)
{
	return s && strnlen(s, CRYO_MIGRATE_STRING_MAX + 1) <= CRYO_MIGRATE_STRING_MAX;
}

static bool opt_str_ok(const char *s)
{
	return !s || str_ok(s);
}

/* The bounds every frame is held to before its receiver looks at it. */
static int check_frame(const Cryo__MigrateFrame *f, struct cryo_error *err)
{
	switch (f->body_case) {
	case CRYO__MIGRATE_FRAME__BODY_HELLO: {
		const Cryo__MigrateHello *h = f->hello;

		if (!str_ok(h->container_id) || !opt_str_ok(h->kernel_release) || !opt_str_ok(h->criu_version) ||
		    !opt_str_ok(h->cryo_version) || !opt_str_ok(h->cgroup_layout) || !opt_str_ok(h->freezer_backend) ||
		    !opt_str_ok(h->rootfs_kind))
			return cryo_error_setx(err, EBADMSG, "hello: a string is missing or too long");
		return 0;
	}
	case CRYO__MIGRATE_FRAME__BODY_FILE:
		if (!f->file->name || strnlen(f->file->name, CRYO_MIGRATE_NAME_MAX + 1) > CRYO_MIGRATE_NAME_MAX)
			return cryo_error_setx(err, EBADMSG, "file: name missing or too long");
		return 0;
	case CRYO__MIGRATE_FRAME__BODY_CHUNK:
		if (f->chunk->data.len > CRYO_MIGRATE_CHUNK_SIZE)
			return cryo_error_setx(err, EBADMSG, "chunk of %zu bytes (at most %u)", f->chunk->data.len,
					       CRYO_MIGRATE_CHUNK_SIZE);
		return 0;
	case CRYO__MIGRATE_FRAME__BODY_RELAY:
		if (f->relay->has_data && f->relay->data.len > CRYO_MIGRATE_CHUNK_SIZE)
			return cryo_error_setx(err, EBADMSG, "relay of %zu bytes (at most %u)", f->relay->data.len,
					       CRYO_MIGRATE_CHUNK_SIZE);
		return 0;
	case CRYO__MIGRATE_FRAME__BODY_DONE:
	case CRYO__MIGRATE_FRAME__BODY_COMMIT:
		return 0;
	case CRYO__MIGRATE_FRAME__BODY_ALIVE:
		if (!opt_str_ok(f->alive->phase))
			return cryo_error_setx(err, EBADMSG, "alive: phase too long");
		return 0;
	case CRYO__MIGRATE_FRAME__BODY_RESULT:
		if (!opt_str_ok(f->result->message) || !opt_str_ok(f->result->phase))
			return cryo_error_setx(err, EBADMSG, "result: a string is too long");
		return 0;
	default:
		return cryo_error_setx(err, EBADMSG, "frame of unknown kind %d", (int)f->body_case);
	}
}

int cryo_migrate_frame_decode(const uint8_t *buf, size_t len, Cryo__MigrateFrame **ret, struct cryo_error *err)
{
	Cryo__MigrateFrame *f;
	int r;

	if (len > CRYO_MIGRATE_FRAME_MAX)
		return cryo_error_setx(err, EMSGSIZE, "frame of %zu bytes (at most %u)", len, CRYO_MIGRATE_FRAME_MAX);
	f = cryo__migrate_frame__unpack(NULL, len, buf);
	if (!f)
		return cryo_error_setx(err, EBADMSG, "a frame of %zu bytes does not decode", len);
	r = check_frame(f, err);
	if (r < 0) {
		cryo_migrate_frame_free(f);
		return r;
	}
	*ret = f;
	return 0;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int cryo_migrate_frame_parse(const uint8_t *buf, size_t len, size_t *ret_used, Cryo__MigrateFrame **ret,
			     struct cryo_error *err)
{
	uint32_t n;
	int r;

	if (len < 4)
		return -EAGAIN;
	n = get_be32(buf);
	if (n > CRYO_MIGRATE_FRAME_MAX)
		return cryo_error_setx(err, EMSGSIZE, "frame of %u bytes announced (at most %u)", n,
				       CRYO_MIGRATE_FRAME_MAX);
	if (len - 4 < n)
		return -EAGAIN;
	r = cryo_migrate_frame_decode(buf + 4, n, ret, err);
	if (r < 0)
		return r;
	*ret_used = 4 + (size_t)n;
	return 0;
}

int cryo_transport_send(struct cryo_transport *t, const Cryo__MigrateFrame *f, struct cryo_error *err)
{
	size_t n = cryo__migrate_frame__get_packed_size(f);
	uint8_t *buf;
	int r;

	if (n > CRYO_MIGRATE_FRAME_MAX)
		return cryo_error_setx(err, EMSGSIZE, "frame of %zu bytes to send (at most %u)", n,
				       CRYO_MIGRATE_FRAME_MAX);
	pthread_mutex_lock(&t->io_lock);
	if (__atomic_load_n(&t->broken, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&t->io_lock);
		return cryo_error_setx(err, EPIPE, "%s: the connection broke before (a frame could not go whole)", t->peer);
	}
	r = frame_buf(&t->out_buf, &t->out_cap, n + 4, err);
	if (r < 0) {
		pthread_mutex_unlock(&t->io_lock);
		return r;
	}
	buf = t->out_buf;
	buf[0] = (uint8_t)(n >> 24);
	buf[1] = (uint8_t)(n >> 16);
	buf[2] = (uint8_t)(n >> 8);
	buf[3] = (uint8_t)n;
	cryo__migrate_frame__pack(f, buf + 4);
	r = t->ops->write(t, buf, n + 4, cryo_now_ms() + t->io_timeout_ms, err);
	if (r >= 0) {
		t->bytes_out += n + 4;
		__atomic_store_n(&t->last_send_ms, cryo_now_ms(), __ATOMIC_RELAXED);
	} else {
		/* some of the frame may have gone: what follows would be read as garbage */
		__atomic_store_n(&t->broken, true, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&t->io_lock);
	return r < 0 ? r : 0;
}

/* ---- keep-alive ---- */

struct cryo_keepalive {
	pthread_t tid;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	int64_t every_ms;
	char *phase;
};

static void *keepalive_main(void *arg)
{
	struct cryo_transport *t = arg;
	struct cryo_keepalive *k = t->keepalive;
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateAlive a = CRYO__MIGRATE_ALIVE__INIT;

	a.phase = k->phase;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_ALIVE;
	fr.alive = &a;
	pthread_mutex_lock(&k->lock);
	while (!k->stop) {
		int64_t idle = cryo_now_ms() - __atomic_load_n(&t->last_send_ms, __ATOMIC_RELAXED);
		struct timespec until;

		if (idle >= k->every_ms) {
			struct cryo_error e = CRYO_ERROR_INIT;

			pthread_mutex_unlock(&k->lock);
			/* a peer that can't take it fails the caller's own next send or read */
			if (cryo_transport_send(t, &fr, &e) < 0) {
				cryo_error_clear(&e);
				return NULL;
			}
			pthread_mutex_lock(&k->lock);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (k->every_ms - idle) / 1000;
		until.tv_nsec += (long)((k->every_ms - idle) % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&k->cond, &k->lock, &until);
	}
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

int cryo_transport_keepalive_start(struct cryo_transport *t, const char *phase, struct cryo_error *err)
{
	struct cryo_keepalive *k;
	pthread_condattr_t ca;
	int r;

	if (t->keepalive)
		return 0;
	k = calloc(1, sizeof(*k));
	if (!k || !(k->phase = strdup(phase))) {
		free(k);
		return cryo_error_set(err, ENOMEM, "keep-alive");
	}
	k->every_ms = CRYO_MIGRATE_ALIVE_EVERY_MS;
	if (t->io_timeout_ms > 0 && t->io_timeout_ms / 4 < k->every_ms)
		k->every_ms = t->io_timeout_ms / 4 > 100 ? t->io_timeout_ms / 4 : 100;
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
	t->keepalive = k;
	r = pthread_create(&k->tid, NULL, keepalive_main, t);
	if (r != 0) {
		t->keepalive = NULL;
		pthread_cond_destroy(&k->cond);
		pthread_mutex_destroy(&k->lock);
		free(k->phase);
		free(k);
		return cryo_error_set(err, r, "keep-alive thread");
	}
	return 0;
}

void cryo_transport_keepalive_stop(struct cryo_transport *t)
{
	struct cryo_keepalive *k = t ? t->keepalive : NULL;

	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->stop = true;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
	pthread_join(k->tid, NULL);
	t->keepalive = NULL;
	pthread_cond_destroy(&k->cond);
	pthread_mutex_destroy(&k->lock);
	free(k->phase);
	free(k);
}

/* Read exactly len bytes; -EPIPE (at_start) / -EBADMSG (mid-frame) on end of stream. */
static int read_full(struct cryo_transport *t, uint8_t *buf, size_t len, int64_t deadline_ms, bool at_start,
		     struct cryo_error *err)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = t->ops->read(t, buf + got, len - got, deadline_ms, err);

		/* -ETIMEDOUT only when nothing of a frame was read: the stream is still in step */
		if (n == -ETIMEDOUT && at_start && got == 0)
			return (int)n;
		if (n < 0)
			__atomic_store_n(&t->broken, true, __ATOMIC_RELAXED);
		if (n == -ETIMEDOUT) {
			cryo_error_clear(err);
			return cryo_error_setx(err, EBADMSG, "%s: timed out in the middle of a frame", t->peer);
		}
		if (n < 0)
			return (int)n;
		if (n == 0) {
			/* at a frame's start: the peer closed (and may still read what we say) */
			if (at_start && got == 0)
				return cryo_error_setx(err, EPIPE, "%s closed the connection", t->peer);
			__atomic_store_n(&t->broken, true, __ATOMIC_RELAXED);
			return cryo_error_setx(err, EBADMSG, "%s: truncated frame (end of stream)", t->peer);
		}
		got += (size_t)n;
	}
	t->bytes_in += len;
	return 0;
}

/* Called with io_lock held: the body goes into t->in_buf. */
static int recv_one(struct cryo_transport *t, int64_t deadline, Cryo__MigrateFrame **ret, struct cryo_error *err)
{
	uint8_t hdr[4];
	uint32_t n;
	int r;

	r = read_full(t, hdr, sizeof(hdr), deadline, true, err);
	if (r < 0)
		return r;
	n = get_be32(hdr);
	if (n > CRYO_MIGRATE_FRAME_MAX)
		return cryo_error_setx(err, EMSGSIZE, "%s announced a frame of %u bytes (at most %u)", t->peer, n,
				       CRYO_MIGRATE_FRAME_MAX);
	r = frame_buf(&t->in_buf, &t->in_cap, n ? n : 1, err);
	if (r < 0)
		return r;
	/* the body follows its length at once: the io timeout bounds it */
	r = read_full(t, t->in_buf, n, cryo_now_ms() + t->io_timeout_ms, false, err);
	if (r < 0)
		return r;
	r = cryo_migrate_frame_decode(t->in_buf, n, ret, err);
	if (r < 0)
		return cryo_error_prefix(err, "%s", t->peer);
	return 0;
}

int cryo_transport_recv(struct cryo_transport *t, int64_t timeout_ms, Cryo__MigrateFrame **ret, struct cryo_error *err)
{
	int64_t wait = timeout_ms > 0 ? timeout_ms : t->io_timeout_ms;
	int64_t start = cryo_now_ms();
	int r;

	for (;;) {
		pthread_mutex_lock(&t->io_lock);
		r = recv_one(t, cryo_now_ms() + wait, ret, err);
		pthread_mutex_unlock(&t->io_lock);
		if (r < 0 || (*ret)->body_case != CRYO__MIGRATE_FRAME__BODY_ALIVE)
			return r;
		/* the peer is busy with a long step of its own: wait for it anew, within bounds */
		cryo_migrate_frame_free(*ret);
		*ret = NULL;
		if (cryo_now_ms() - start > CRYO_MIGRATE_ALIVE_MAX_MS)
			return cryo_error_setx(err, ETIMEDOUT, "%s stayed busy for over %d s without a frame",
					       t->peer, (int)(CRYO_MIGRATE_ALIVE_MAX_MS / 1000));
	}
}
