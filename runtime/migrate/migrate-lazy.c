// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "migrate-lazy.h"
#include "util.h"

#define DEFAULT_IDLE_TIMEOUT_MS 120000
#define CONNECT_RETRY_MS 50

int cryo_lazy_listen_local(int *ret_fd, unsigned *ret_port, struct cryo_error *err)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	_cleanup_close_ int fd = -1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return cryo_error_set(err, errno, "lazy pages: socket");
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return cryo_error_set(err, errno, "lazy pages: bind 127.0.0.1");
	if (listen(fd, 1) < 0)
		return cryo_error_set(err, errno, "lazy pages: listen");
	if (getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return cryo_error_set(err, errno, "lazy pages: getsockname");
	*ret_port = ntohs(a.sin_port);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int cryo_lazy_connect_local(unsigned port, int64_t timeout_ms, int *ret_fd, struct cryo_error *err)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int64_t deadline = cryo_now_ms() + timeout_ms;

	if (port == 0 || port > 65535)
		return cryo_error_setx(err, EINVAL, "lazy pages: port %u", port);
	a.sin_port = htons((uint16_t)port);
	for (;;) {
		_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return cryo_error_set(err, errno, "lazy pages: socket");
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			*ret_fd = TAKE_FD(fd);
			return 0;
		}
		if (errno != ECONNREFUSED || cryo_now_ms() >= deadline)
			return cryo_error_set(err, errno, "lazy pages: connect to 127.0.0.1:%u", port);
		(void)poll(NULL, 0, CONNECT_RETRY_MS);
	}
}

static int set_nonblock(int fd, struct cryo_error *err)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return cryo_error_set(err, errno, "lazy pages: O_NONBLOCK");
	return 0;
}

static int send_relay(struct cryo_lazy_relay *r, const uint8_t *data, size_t len, bool eof, struct cryo_error *err)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateRelay rl = CRYO__MIGRATE_RELAY__INIT;

	if (len) {
		rl.has_data = 1;
		rl.data.data = (uint8_t *)data;
		rl.data.len = len;
	}
	if (eof) {
		rl.has_eof = 1;
		rl.eof = true;
	}
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_RELAY;
	fr.relay = &rl;
	r->bytes_to_peer += len;
	return cryo_transport_send(r->t, &fr, err);
}

/* All of buf into the local socket, within the idle timeout. */
static int write_local(struct cryo_lazy_relay *r, const uint8_t *buf, size_t len, int64_t timeout_ms,
		       struct cryo_error *err)
{
	int64_t deadline = cryo_now_ms() + timeout_ms;

	while (len > 0) {
		ssize_t n = send(r->sock, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			int w = cryo_wait_fd(r->sock, POLLOUT, deadline, "lazy pages: write", err);

			if (w < 0)
				return w;
			continue;
		}
		if (n < 0)
			return cryo_error_set(err, errno, "lazy pages: write to the local stream");
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One frame from the peer. 1 = the relay ends, 0 = go on. */
static int from_peer(struct cryo_lazy_relay *r, int64_t timeout_ms, struct cryo_error *err)
{
	Cryo__MigrateFrame *f = NULL;
	int ret;

	ret = cryo_transport_recv(r->t, timeout_ms, &f, err);
	if (ret < 0)
		return ret;
	if (f->body_case != CRYO__MIGRATE_FRAME__BODY_RELAY) {
		ret = r->on_frame ? r->on_frame(r->userdata, f, err)
				  : cryo_error_setx(err, EBADMSG, "%s sent an unexpected frame (kind %d) in the page stream",
						    r->t->peer, (int)f->body_case);
		cryo_migrate_frame_free(f);
		return ret > 0 ? 1 : ret;
	}
	if (r->peer_eof && (f->relay->has_data && f->relay->data.len)) {
		ret = cryo_error_setx(err, EBADMSG, "%s sent page data after its end of stream", r->t->peer);
	} else if (r->sock < 0 && ((f->relay->has_data && f->relay->data.len) || f->relay->eof)) {
		/* the destination's daemon speaks first: a source sends nothing before it */
		ret = cryo_error_setx(err, EBADMSG, "%s sent page data before the stream was open", r->t->peer);
	} else {
		ret = 0;
		if (f->relay->has_data && f->relay->data.len) {
			r->bytes_from_peer += f->relay->data.len;
			ret = write_local(r, f->relay->data.data, f->relay->data.len, timeout_ms, err);
		}
		if (ret >= 0 && f->relay->eof && !r->peer_eof) {
			r->peer_eof = true;
			(void)shutdown(r->sock, SHUT_WR);
		}
	}
	cryo_migrate_frame_free(f);
	return ret;
}

/* What the local socket has: sent on as one frame. */
static int from_local(struct cryo_lazy_relay *r, uint8_t *buf, struct cryo_error *err)
{
	ssize_t n = recv(r->sock, buf, CRYO_MIGRATE_CHUNK_SIZE, 0);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0 && errno != ECONNRESET)
		return cryo_error_set(err, errno, "lazy pages: read the local stream");
	if (n <= 0) {
		/* its end (or a reset: CRIU gave up on it) is passed on: the other CRIU sees it end */
		r->local_eof = true;
		return send_relay(r, NULL, 0, true, err);
	}
	return send_relay(r, buf, (size_t)n, false, err);
}

static int accept_local(struct cryo_lazy_relay *r, struct cryo_error *err)
{
	int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0) {
		if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
			return 0;
		return cryo_error_set(err, errno, "lazy pages: accept");
	}
	r->sock = fd;
	return 0;
}

static int relay_loop(struct cryo_lazy_relay *r, uint8_t *buf, struct cryo_error *err)
{
	int64_t idle = r->idle_timeout_ms > 0 ? r->idle_timeout_ms : DEFAULT_IDLE_TIMEOUT_MS;
	int64_t last_peer = cryo_now_ms();
	int ret;

	for (;;) {
		struct pollfd p[3];
		int np = 0, ip = -1, il = -1, iw = -1, n;
		int64_t wait = idle;
		bool pending;

		if (r->peer_timeout_ms > 0) {
			int64_t left = last_peer + r->peer_timeout_ms - cryo_now_ms();

			if (left <= 0)
				return cryo_error_setx(err, ETIMEDOUT, "lazy pages: nothing from %s for %" PRId64 " ms",
						       r->t->peer, r->peer_timeout_ms);
			if (left < wait)
				wait = left;
		}

		if (r->watched && (r->end_on_watch || r->sock < 0 || r->local_eof))
			return 0;
		pending = cryo_transport_pending(r->t);
		p[np] = (struct pollfd){ .fd = r->t->rfd, .events = POLLIN };
		ip = np++;
		if (r->sock >= 0 && !r->local_eof) {
			p[np] = (struct pollfd){ .fd = r->sock, .events = POLLIN };
			il = np++;
		} else if (r->sock < 0 && r->listen_fd >= 0) {
			p[np] = (struct pollfd){ .fd = r->listen_fd, .events = POLLIN };
			il = np++;
		}
		if (r->watch_fd >= 0 && !r->watched) {
			p[np] = (struct pollfd){ .fd = r->watch_fd, .events = POLLIN };
			iw = np++;
		}
		n = poll(p, (nfds_t)np, pending ? 0 : (int)wait);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cryo_error_set(err, errno, "lazy pages: poll");
		if (n == 0 && !pending && wait == idle)
			return cryo_error_setx(err, ETIMEDOUT, "lazy pages: nothing moved for %" PRId64 " ms", idle);
		if (iw >= 0 && p[iw].revents)
			r->watched = true;
		if (il >= 0 && p[il].revents) {
			ret = r->sock < 0 ? accept_local(r, err) : from_local(r, buf, err);
			if (ret < 0)
				return ret;
		}
		if (pending || p[ip].revents) {
			/* a frame begun: read within the idle timeout, and within the peer's, if sooner */
			ret = from_peer(r, r->peer_timeout_ms > 0 && wait < idle ? (wait > 0 ? wait : 1) : idle, err);
			if (ret < 0)
				return ret;
			last_peer = cryo_now_ms();
			if (ret > 0)
				return 0;
		}
	}
}

int cryo_lazy_relay_run(struct cryo_lazy_relay *r, struct cryo_error *err)
{
	uint8_t *buf;
	int ret;

	if (r->sock >= 0) {
		ret = set_nonblock(r->sock, err);
		if (ret < 0)
			return ret;
	}
	buf = malloc(CRYO_MIGRATE_CHUNK_SIZE);
	if (!buf)
		return cryo_error_set(err, ENOMEM, "lazy pages: relay");
	ret = relay_loop(r, buf, err);
	free(buf);
	return ret;
}

/* --- the two ends --------------------------------------------------------- */

#define DAEMON_END_TIMEOUT_MS 60000
#define RESTORE_IDLE_TIMEOUT_MS 300000

struct peer_report {
	bool *peer_failed;
	char **peer_phase;
	struct cryo_lazy_dest *dest; /* the destination takes the commit */
};

/* What the peer may send in the stream: its failure report; to the destination also the commit. */
static int on_peer_frame(void *userdata, const Cryo__MigrateFrame *f, struct cryo_error *err)
{
	struct peer_report *p = userdata;

	if (f->body_case == CRYO__MIGRATE_FRAME__BODY_RESULT && f->result->status < 0) {
		*p->peer_failed = true;
		free(*p->peer_phase);
		*p->peer_phase = f->result->phase && f->result->phase[0] ? strdup(f->result->phase) : NULL;
		return cryo_error_setx(err, f->result->status > -4096 ? -f->result->status : EPROTO,
				       "the peer failed at %s: %s", f->result->phase ? f->result->phase : "?",
				       f->result->message ? f->result->message : "");
	}
	if (p->dest && f->body_case == CRYO__MIGRATE_FRAME__BODY_COMMIT) {
		if (!f->commit->go) {
			*p->peer_failed = true;
			return cryo_error_setx(err, ECANCELED, "the source called it off");
		}
		p->dest->committed = true;
		p->dest->frozen_usec = f->commit->has_frozen_usec ? f->commit->frozen_usec : 0;
		p->dest->since_freeze_usec = f->commit->has_since_freeze_usec ? f->commit->since_freeze_usec :
										 p->dest->frozen_usec;
		return 1;
	}
	return cryo_error_setx(err, EBADMSG, "an unexpected frame (kind %d) in the page stream", (int)f->body_case);
}

void cryo_lazy_source_init(struct cryo_lazy_source *s)
{
	*s = (struct cryo_lazy_source){ .dump = CRYO_CRIU_PROC_INIT, .sock = -1 };
}

/* The destination's verdict on its restore: ends the relay when good. */
static int on_restored(void *userdata, const Cryo__MigrateFrame *f, struct cryo_error *err)
{
	if (f->body_case == CRYO__MIGRATE_FRAME__BODY_RESULT && f->result->status >= 0)
		return 1;
	return on_peer_frame(userdata, f, err);
}

int cryo_lazy_source_await_restore(struct cryo_lazy_source *s, struct cryo_transport *t, int64_t idle_ms,
				   bool *peer_failed, char **peer_phase, struct cryo_error *err)
{
	struct peer_report pr = { .peer_failed = peer_failed, .peer_phase = peer_phase };
	struct cryo_lazy_relay *r = &s->relay;

	if (s->sock < 0 || s->dump.pid <= 0)
		return cryo_error_setx(err, EINVAL, "lazy pages: no dump to serve from");
	r->t = t;
	r->sock = s->sock;
	r->listen_fd = -1;
	r->watch_fd = -1;
	r->idle_timeout_ms = idle_ms;
	r->on_frame = on_restored;
	r->userdata = &pr;
	return cryo_lazy_relay_run(r, err);
}

int cryo_lazy_source_port(struct cryo_lazy_source *s, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;

	/* the kernel's pick, given back for CRIU to bind (it takes --port, not a socket) */
	return cryo_lazy_listen_local(&fd, &s->port, err);
}

int cryo_lazy_source_connect(struct cryo_lazy_source *s, struct cryo_error *err)
{
	return cryo_lazy_connect_local(s->port, 5000, &s->sock, err);
}

int cryo_lazy_source_serve(struct cryo_lazy_source *s, struct cryo_transport *t, int64_t idle_ms,
			   bool *peer_failed, char **peer_phase, uint64_t *ret_bytes, struct cryo_error *err)
{
	struct peer_report pr = { .peer_failed = peer_failed, .peer_phase = peer_phase };
	struct cryo_lazy_relay *r = &s->relay;
	int ret;

	if (s->sock < 0 || s->dump.pid <= 0)
		return cryo_error_setx(err, EINVAL, "lazy pages: no dump to serve from");
	/* on from where the restore left it */
	r->t = t;
	r->sock = s->sock;
	r->listen_fd = -1;
	r->watch_fd = s->dump.pidfd;
	r->idle_timeout_ms = idle_ms;
	r->on_frame = on_peer_frame;
	r->userdata = &pr;
	ret = cryo_lazy_relay_run(r, err);
	*ret_bytes = r->bytes_from_peer + r->bytes_to_peer;
	if (ret < 0)
		return ret;
	/* its stream ended with it: whether every page went is what it exits with */
	return cryo_criu_proc_wait(&s->dump, 10000, err);
}

void cryo_lazy_source_done(struct cryo_lazy_source *s)
{
	cryo_criu_proc_kill(&s->dump);
	if (s->sock >= 0)
		close(s->sock);
	s->sock = -1;
}

#define FENCE_MARGIN_MS 5000

int64_t cryo_lazy_fence_ms(uint32_t dest_timeout_ms)
{
	int64_t t = dest_timeout_ms ? (int64_t)dest_timeout_ms : CRYO_MIGRATE_TIMEOUT_MS;

	return t + FENCE_MARGIN_MS;
}

int64_t cryo_lazy_source_fence(struct cryo_transport **t, bool peer_failed, const struct cryo_error *fail,
			       const char *phase, int64_t fence_ms, bool *ret_told)
{
	int64_t t0 = cryo_now_ms(), deadline = t0 + fence_ms, left;
	struct cryo_error e = CRYO_ERROR_INIT;

	*ret_told = peer_failed;
	if (*t && !peer_failed) {
		if (cryo_migrate_send_result(*t, -(fail->status ? fail->status : EIO), phase,
					     fail->msg ? fail->msg : "failed", 0, &e) < 0)
			cryo_error_clear(&e);
		/* its answer, once its copy is gone; page and alive frames still on their way are passed over */
		while ((left = deadline - cryo_now_ms()) > 0) {
			Cryo__MigrateFrame *f = NULL;

			if (cryo_transport_recv(*t, left, &f, &e) < 0)
				break;
			*ret_told = f->body_case == CRYO__MIGRATE_FRAME__BODY_RESULT && f->result->status < 0;
			cryo_migrate_frame_free(f);
			if (*ret_told)
				break;
		}
		cryo_error_clear(&e);
	}
	cryo_transport_close(*t);
	*t = NULL;
	/* the connection is gone, or silent: the copy there stops on its own by the deadline */
	left = deadline - cryo_now_ms();
	if (!*ret_told && left > 0)
		cryo_sleep_ms(left);
	return cryo_now_ms() - t0;
}

void cryo_lazy_dest_init(struct cryo_lazy_dest *d)
{
	*d = (struct cryo_lazy_dest){ .listen_fd = -1, .daemon = CRYO_CRIU_PROC_INIT };
	d->relay.sock = -1;
	d->relay.listen_fd = -1;
	d->relay.watch_fd = -1;
}

int cryo_lazy_dest_restore_wait(void *userdata, int pidfd, struct cryo_error *err)
{
	struct cryo_lazy_dest *d = userdata;
	struct peer_report pr = { .peer_failed = &d->restore_peer_failed, .peer_phase = &d->restore_peer_phase, .dest = d };
	struct cryo_lazy_relay *r = &d->relay;
	int ret;

	r->listen_fd = d->listen_fd;
	r->watch_fd = pidfd;
	r->end_on_watch = true;
	/* CRIU's restore may take a while before it faults a page in: its own end bounds this */
	r->idle_timeout_ms = RESTORE_IDLE_TIMEOUT_MS;
	r->watched = false;
	r->on_frame = on_peer_frame;
	r->userdata = &pr;
	ret = cryo_lazy_relay_run(r, err);
	r->watch_fd = -1;
	r->end_on_watch = false;
	r->watched = false;
	r->userdata = NULL;
	return ret;
}

int cryo_lazy_dest_start(struct cryo_lazy_dest *d, const char *image_dir, const char *work_dir,
			 struct cryo_error *err)
{
	struct cryo_criu_opts o = { .image_dir = image_dir, .work_dir = work_dir };
	int r;

	r = cryo_lazy_listen_local(&d->listen_fd, &d->port, err);
	if (r < 0)
		return r;
	return cryo_criu_cli_lazy_daemon_start(&o, d->port, &d->daemon, err);
}

int cryo_lazy_dest_ready(void *userdata, struct cryo_error *err)
{
	struct cryo_lazy_dest *d = userdata;

	if (!d->work)
		return cryo_error_setx(err, EINVAL, "lazy pages: no daemon started");
	return cryo_criu_cli_lazy_daemon_ready(d->work, &d->daemon, err);
}

int cryo_lazy_dest_pull(struct cryo_lazy_dest *d, struct cryo_transport *t, int64_t idle_ms, bool *peer_failed,
			char **peer_phase, struct cryo_error *err)
{
	struct peer_report pr = { .peer_failed = peer_failed, .peer_phase = peer_phase, .dest = d };
	struct cryo_lazy_relay *r = &d->relay;
	int ret;

	/* on from where the restore left it (the daemon's connection may be accepted already) */
	r->t = t;
	r->listen_fd = d->listen_fd;
	r->watch_fd = -1;
	r->idle_timeout_ms = idle_ms;
	/* the copy runs: it stops (the undo kills it) once the source went quiet for that long */
	r->peer_timeout_ms = idle_ms;
	r->on_frame = on_peer_frame;
	r->userdata = &pr;
	ret = cryo_lazy_relay_run(r, err);
	d->bytes = r->bytes_from_peer;
	if (ret < 0)
		return ret;
	if (!d->committed)
		return cryo_error_setx(err, EPROTO, "lazy pages: the stream ended without the source's commit");
	/* every page was served: the daemon has put them in and ends */
	return cryo_criu_proc_wait(&d->daemon, DAEMON_END_TIMEOUT_MS, err);
}

void cryo_lazy_dest_done(struct cryo_lazy_dest *d)
{
	if (d->relay.sock >= 0)
		close(d->relay.sock);
	d->relay.sock = -1;
	free(d->restore_peer_phase);
	d->restore_peer_phase = NULL;
	cryo_criu_proc_kill(&d->daemon);
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	d->listen_fd = -1;
	free(d->work);
	d->work = NULL;
}

int cryo_lazy_dest_begin(struct cryo_lazy_dest *d, struct cryo_transport *t, const char *in_dir, const char *img_dir,
			 struct cryo_error *err)
{
	int r;

	if (asprintf(&d->work, "%s/lazy-work", in_dir) < 0) {
		d->work = NULL;
		return cryo_error_set(err, ENOMEM, "lazy pages");
	}
	if (mkdir(d->work, 0700) < 0 && errno != EEXIST)
		return cryo_error_set(err, errno, "create `%s`", d->work);
	r = cryo_lazy_dest_start(d, img_dir, d->work, err);
	if (r < 0)
		return r;
	d->relay.t = t;
	d->relay.idle_timeout_ms = t->io_timeout_ms;
	return 0;
}

/* 1 it can, 0 not (why in buf), < 0 the probe failed (err) */
static int lazy_works(const char *root, const struct cryo_migrate_facts *f, char *buf, size_t len,
		      struct cryo_error *err)
{
	_cleanup_free_ char *why = NULL;
	int r;

	if (!f->userfaultfd) {
		snprintf(buf, len, "the kernel (%s) offers no userfaultfd", f->kernel);
		return 0;
	}
	r = cryo_criu_cli_lazy_probe(root, &why, err);
	if (r == 0)
		snprintf(buf, len, "CRIU's lazy migration does not work on this host (kernel %s, CRIU %s): %s", f->kernel,
			 f->criu_version, why ? why : "?");
	return r;
}

int cryo_lazy_preflight(const char *root, struct cryo_migrate_facts *f, struct cryo_error *err)
{
	char why[2048];
	int r = lazy_works(root, f, why, sizeof(why), err);

	if (r < 0)
		return cryo_error_prefix(err, "--lazy");
	if (r == 0)
		return cryo_error_setx(err, EOPNOTSUPP, "--lazy: %s", why);
	f->lazy = true;
	return 0;
}

int cryo_lazy_judge(const char *root, struct cryo_migrate_facts *f, char *why, size_t len)
{
	struct cryo_error e = CRYO_ERROR_INIT;
	int r = lazy_works(root, f, why, len, &e);

	if (r < 0)
		snprintf(why, len, "--lazy: %s", e.msg ? e.msg : "the probe failed");
	cryo_error_clear(&e);
	if (r <= 0)
		return -EOPNOTSUPP;
	f->lazy = true;
	return 0;
}
