// SPDX-License-Identifier: GPL-2.0-only
/*
 * Mutual TLS through OpenSSL: both ends present a certificate and check
 * the other's against their CA file; the client also checks the server's
 * name (or IP address) against the destination it was given. TLS 1.2 at
 * least. The sockets are non-blocking so every handshake, read and write
 * has a deadline (a peer that stops talking can't hold a frozen
 * container past it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "transport.h"
#include "util.h"

/* "what: <OpenSSL's reasons>" (the error queue emptied) */
static int tls_error(struct cryo_error *err, int errnum, const char *what)
{
	char msg[512] = "";
	size_t off = 0;
	unsigned long e;

	while ((e = ERR_get_error()) != 0) {
		char one[256];

		ERR_error_string_n(e, one, sizeof(one));
		if (off < sizeof(msg) - 2)
			off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s", off ? "; " : "", one);
	}
	if (!msg[0])
		return cryo_error_setx(err, errnum, "%s", what);
	return cryo_error_setx(err, errnum, "%s: %s", what, msg);
}

/* After an SSL call returned ret <= 0: wait for what it wants, or fail. */
static int tls_retry(struct cryo_transport *t, int ret, int64_t deadline_ms, const char *what, struct cryo_error *err)
{
	int e = SSL_get_error(t->tls, ret);

	switch (e) {
	case SSL_ERROR_WANT_READ:
		return cryo_wait_fd(t->rfd, POLLIN, deadline_ms, what, err);
	case SSL_ERROR_WANT_WRITE:
		return cryo_wait_fd(t->rfd, POLLOUT, deadline_ms, what, err);
	case SSL_ERROR_ZERO_RETURN:
		return -EPIPE;
	case SSL_ERROR_SYSCALL:
		if (ERR_peek_error() == 0) {
			if (errno == 0 || errno == EPIPE || errno == ECONNRESET)
				return cryo_error_setx(err, EPIPE, "%s: %s closed the connection", what, t->peer);
			return cryo_error_set(err, errno, "%s", what);
		}
		return tls_error(err, EPROTO, what);
	default:
		return tls_error(err, EPROTO, what);
	}
}

static ssize_t tls_read(struct cryo_transport *t, void *buf, size_t len, int64_t deadline_ms, struct cryo_error *err)
{
	for (;;) {
		size_t n = 0;
		int ret, r;

		ERR_clear_error();
		ret = SSL_read_ex(t->tls, buf, len, &n);
		if (ret > 0)
			return (ssize_t)n;
		r = tls_retry(t, ret, deadline_ms, "TLS read", err);
		if (r == -EPIPE)
			return 0;
		if (r < 0)
			return r;
	}
}

static int tls_write(struct cryo_transport *t, const void *buf, size_t len, int64_t deadline_ms,
		     struct cryo_error *err)
{
	const char *p = buf;

	while (len > 0) {
		size_t n = 0;
		int ret, r;

		ERR_clear_error();
		ret = SSL_write_ex(t->tls, p, len, &n);
		if (ret > 0) {
			p += n;
			len -= n;
			continue;
		}
		r = tls_retry(t, ret, deadline_ms, "TLS write", err);
		if (r == -EPIPE)
			return cryo_error_setx(err, EPIPE, "TLS write: %s closed the connection", t->peer);
		if (r < 0)
			return r;
	}
	return 0;
}

static void tls_close(struct cryo_transport *t)
{
	if (t->tls) {
		ERR_clear_error();
		(void)SSL_shutdown(t->tls); /* close_notify, best effort: non-blocking */
		SSL_free(t->tls);
	}
	if (t->tls_ctx)
		SSL_CTX_free(t->tls_ctx);
	t->tls = t->tls_ctx = NULL;
	if (t->rfd >= 0)
		close(t->rfd);
	t->rfd = t->wfd = -1;
	ERR_clear_error();
}

static bool tls_pending(struct cryo_transport *t)
{
	return t->tls && SSL_pending(t->tls) > 0;
}

static const struct cryo_transport_ops tls_ops = {
	.name = "tls",
	.pending = tls_pending,
	.read = tls_read,
	.write = tls_write,
	.close = tls_close,
};

/* A TLS transport on the connected socket fd; takes fd and ctx, also on failure. */
static int tls_transport_new(int fd, SSL_CTX *ctx, const char *peer, struct cryo_transport **ret,
			     struct cryo_error *err)
{
	struct cryo_transport *t;
	int r;

	r = cryo_transport_new(&tls_ops, peer, &t, err);
	if (r < 0) {
		close(fd);
		SSL_CTX_free(ctx);
		return r;
	}
	t->rfd = t->wfd = fd;
	t->tls_ctx = ctx;
	t->tls = SSL_new(ctx);
	if (!t->tls || SSL_set_fd(t->tls, fd) != 1) {
		tls_error(err, ENOMEM, "TLS session");
		cryo_transport_close(t);
		return cryo_error_prefix(err, "%s", peer);
	}
	*ret = t;
	return 0;
}

static int new_ctx(bool server, const struct cryo_tls_files *f, SSL_CTX **ret, struct cryo_error *err)
{
	SSL_CTX *ctx;

	if (!f->cert || !f->key || !f->ca)
		return cryo_error_setx(err, EINVAL, "TLS needs --cert, --key and --ca (mutual authentication)");
	ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	if (!ctx)
		return tls_error(err, ENOMEM, "TLS context");
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION))
		goto fail_ctx;
	if (SSL_CTX_use_certificate_chain_file(ctx, f->cert) != 1) {
		tls_error(err, EINVAL, "TLS certificate");
		SSL_CTX_free(ctx);
		return cryo_error_prefix(err, "`%s`", f->cert);
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, f->key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
		tls_error(err, EINVAL, "TLS key");
		SSL_CTX_free(ctx);
		return cryo_error_prefix(err, "`%s`", f->key);
	}
	if (SSL_CTX_load_verify_locations(ctx, f->ca, NULL) != 1) {
		tls_error(err, EINVAL, "TLS CA");
		SSL_CTX_free(ctx);
		return cryo_error_prefix(err, "`%s`", f->ca);
	}
	/* both ways: a peer without a certificate from our CA gets nothing */
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	*ret = ctx;
	return 0;
fail_ctx:
	SSL_CTX_free(ctx);
	return tls_error(err, EINVAL, "TLS context");
}

static int handshake(struct cryo_transport *t, bool server, int64_t deadline_ms, struct cryo_error *err)
{
	for (;;) {
		int ret, r;

		ERR_clear_error();
		ret = server ? SSL_accept(t->tls) : SSL_connect(t->tls);
		if (ret == 1)
			return 0;
		r = tls_retry(t, ret, deadline_ms, "TLS handshake", err);
		if (r == -EPIPE)
			return cryo_error_setx(err, EPROTO, "TLS handshake: %s closed the connection", t->peer);
		if (r < 0) {
			long v = SSL_get_verify_result(t->tls);

			if (v != X509_V_OK)
				return cryo_error_prefix(err, "the certificate of %s is not trusted (%s)", t->peer,
							 X509_verify_cert_error_string(v));
			return r;
		}
	}
}

static void set_sock_opts(int fd)
{
	int one = 1;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * The end of a connect or accept: the transport to the caller, or, when
 * r < 0 (its setup or handshake failed), closed, with the error naming
 * its peer.
 */
static int hand_over(struct cryo_transport *t, int r, struct cryo_transport **ret, struct cryo_error *err)
{
	if (r < 0) {
		cryo_error_prefix(err, "%s", t->peer);
		cryo_transport_close(t);
		return r;
	}
	*ret = t;
	return 0;
}

int cryo_transport_tls_connect(const struct cryo_dest *d, const struct cryo_tls_files *f, int64_t timeout_ms,
			       struct cryo_transport **ret, struct cryo_error *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	int64_t deadline = cryo_now_ms() + (timeout_ms > 0 ? timeout_ms : 30000);
	struct cryo_transport *t = NULL;
	SSL_CTX *ctx = NULL;
	char port[16], peer[600];
	int fd = -1, r, gai;

	r = new_ctx(false, f, &ctx, err);
	if (r < 0)
		return r;
	snprintf(port, sizeof(port), "%u", d->port);
	gai = getaddrinfo(d->host, port, &hints, &res);
	if (gai != 0) {
		SSL_CTX_free(ctx);
		return cryo_error_setx(err, EHOSTUNREACH, "resolve `%s`: %s", d->host, gai_strerror(gai));
	}
	r = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS) {
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			cryo_error_clear(err);
			if (cryo_wait_fd(fd, POLLOUT, deadline, "connect", err) == 0 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
				break;
			r = -(soerr ? soerr : ETIMEDOUT);
		} else {
			r = -errno;
		}
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		SSL_CTX_free(ctx);
		cryo_error_clear(err);
		return cryo_error_set(err, -r, "connect to %s:%u", d->host, d->port);
	}
	set_sock_opts(fd);
	snprintf(peer, sizeof(peer), "tls://%s:%u", d->host, d->port);
	r = tls_transport_new(fd, ctx, peer, &t, err);
	if (r < 0)
		return r;
	/* the server's certificate must name the host we were told to reach */
	{
		struct in6_addr a6;
		struct in_addr a4;
		X509_VERIFY_PARAM *vp = SSL_get0_param(t->tls);

		if (inet_pton(AF_INET, d->host, &a4) == 1 || inet_pton(AF_INET6, d->host, &a6) == 1) {
			if (X509_VERIFY_PARAM_set1_ip_asc(vp, d->host) != 1) {
				r = tls_error(err, EINVAL, "TLS: peer address");
				goto out;
			}
		} else if (SSL_set1_host(t->tls, d->host) != 1 || SSL_set_tlsext_host_name(t->tls, d->host) != 1) {
			r = tls_error(err, EINVAL, "TLS: peer name");
			goto out;
		}
	}
	r = handshake(t, false, deadline, err);
out:
	return hand_over(t, r, ret, err);
}

static int parse_listen_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len, struct cryo_error *err)
{
	_cleanup_free_ char *host = NULL;
	const char *colon = strrchr(addr, ':');
	uint64_t port;

	if (!colon || cryo_parse_u64(colon + 1, 65535, &port) < 0)
		return cryo_error_setx(err, EINVAL, "listen address `%s`: want host:port", addr);
	host = strndup(addr, (size_t)(colon - addr));
	if (!host)
		return cryo_error_set(err, ENOMEM, "listen address");
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		host[strlen(host) - 1] = 0;
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
			return cryo_error_setx(err, EINVAL, "listen address `%s`: bad IPv6 address", addr);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
		return 0;
	}
	{
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (host[0] == 0)
			s4->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return cryo_error_setx(err, EINVAL, "listen address `%s`: want an IP address", addr);
		*len = sizeof(*s4);
	}
	return 0;
}

int cryo_transport_tls_accept(const char *addr, const struct cryo_tls_files *f, int64_t timeout_ms,
			      void (*listening)(unsigned port, void *userdata), void *userdata,
			      struct cryo_transport **ret, struct cryo_error *err)
{
	struct sockaddr_storage ss, peer_ss = { 0 };
	socklen_t len = 0, plen = sizeof(peer_ss);
	_cleanup_close_ int lfd = -1;
	struct cryo_transport *t = NULL;
	SSL_CTX *ctx = NULL;
	char peer[128], host[INET6_ADDRSTRLEN] = "?";
	int one = 1, fd, r;
	int64_t deadline;

	r = parse_listen_addr(addr, &ss, &len, err);
	if (r < 0)
		return r;
	r = new_ctx(true, f, &ctx, err);
	if (r < 0)
		return r;
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lfd < 0) {
		SSL_CTX_free(ctx);
		return cryo_error_set(err, errno, "socket");
	}
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, len) < 0 || listen(lfd, 4) < 0) {
		SSL_CTX_free(ctx);
		return cryo_error_set(err, errno, "listen on `%s`", addr);
	}
	if (listening) {
		union {
			struct sockaddr sa;
			struct sockaddr_in in;
			struct sockaddr_in6 in6;
		} bound;
		socklen_t bl = sizeof(bound);
		uint16_t port = 0;

		memset(&bound, 0, sizeof(bound));
		if (getsockname(lfd, &bound.sa, &bl) == 0)
			port = ntohs(bound.sa.sa_family == AF_INET6 ? bound.in6.sin6_port : bound.in.sin_port);
		listening(port, userdata);
	}
	deadline = timeout_ms > 0 ? cryo_now_ms() + timeout_ms : INT64_MAX;
	for (;;) {
		r = cryo_wait_fd(lfd, POLLIN, deadline, "accept", err);
		if (r < 0) {
			SSL_CTX_free(ctx);
			return cryo_error_prefix(err, "wait for a connection on `%s`", addr);
		}
		fd = accept4(lfd, (struct sockaddr *)&peer_ss, &plen, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0)
			break;
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
			SSL_CTX_free(ctx);
			return cryo_error_set(err, errno, "accept on `%s`", addr);
		}
	}
	if (peer_ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&peer_ss)->sin6_addr, host, sizeof(host));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)&peer_ss)->sin_addr, host, sizeof(host));
	snprintf(peer, sizeof(peer), "tls client %s", host);
	set_sock_opts(fd);
	r = tls_transport_new(fd, ctx, peer, &t, err);
	if (r < 0)
		return r;
	/* the handshake has the io timeout: a silent client can't keep us */
	r = handshake(t, true, cryo_now_ms() + t->io_timeout_ms, err);
	return hand_over(t, r, ret, err);
}
