/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The channel between `cryo migrate` and `cryo receive`, and the frames
 * on it (proto/migrate.proto). Nothing here is home-made for trust: the
 * channel is either OpenSSH (the user's ssh(1) runs `cryo receive
 * --stdio` on the peer; its keys, known_hosts, ProxyJump apply) or TLS
 * with certificates checked both ways (OpenSSL). Behind one small
 * vtable: the frame code does not know which it talks to.
 *
 * A frame is a 4-byte big-endian length and that many bytes of one
 * Cryo__MigrateFrame. The length is checked against
 * CRYO_MIGRATE_FRAME_MAX before a byte of the body is read, and a
 * decoded frame against the bounds below before anyone uses it: a peer
 * speaking garbage gets -EBADMSG (or -EMSGSIZE), never an allocation it
 * chose. Every read and write has a deadline.
 */
#ifndef CRYO_TRANSPORT_H
#define CRYO_TRANSPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "migrate.pb-c.h"
#include "error.h"

#define CRYO_MIGRATE_PROTOCOL_VERSION 2
/* file data travels in chunks of this size */
#define CRYO_MIGRATE_CHUNK_SIZE (256U << 10)
/* the largest frame body a receiver accepts: a full chunk plus framing */
#define CRYO_MIGRATE_FRAME_MAX (CRYO_MIGRATE_CHUNK_SIZE + 4096U)
/* longest string in any frame (ids, names, versions, messages) */
#define CRYO_MIGRATE_STRING_MAX 1024U
#define CRYO_MIGRATE_NAME_MAX 255U

struct cryo_transport;

struct cryo_transport_ops {
	const char *name;
	/* >0 bytes read, 0 end of stream, <0 -errno (-ETIMEDOUT at deadline_ms) */
	ssize_t (*read)(struct cryo_transport *t, void *buf, size_t len, int64_t deadline_ms, struct cryo_error *err);
	/* all of buf, or -errno */
	int (*write)(struct cryo_transport *t, const void *buf, size_t len, int64_t deadline_ms, struct cryo_error *err);
	/* orderly end (TLS close_notify, ssh's exit), then free the backend's part */
	void (*close)(struct cryo_transport *t);
	/* bytes decoded but not yet read (TLS), or NULL */
	bool (*pending)(struct cryo_transport *t);
};

struct cryo_transport {
	const struct cryo_transport_ops *ops;
	int rfd, wfd;          /* wfd may equal rfd (a socket) */
	pid_t child;           /* ssh, or 0 */
	void *tls;             /* SSL * */
	void *tls_ctx;         /* SSL_CTX * */
	char *peer;            /* for messages: "ssh://host", "tls://1.2.3.4:5" */
	uint64_t bytes_in, bytes_out;
	int64_t io_timeout_ms; /* each frame read/write; 0 = 30000 */
	/*
	 * One frame at a time on the wire, whichever thread sends or reads
	 * it (migrate's early sender, the keep-alive, the caller; OpenSSL's
	 * SSL object is not for two threads at once).
	 */
	pthread_mutex_t io_lock;
	int64_t last_send_ms;  /* when a frame last went (atomic) */
	struct cryo_keepalive *keepalive;
	/*
	 * A frame's bytes on their way out and in, kept from one frame to
	 * the next (under io_lock): a fresh 256 KiB buffer for each chunk
	 * costs a page fault for each of its pages.
	 */
	uint8_t *out_buf, *in_buf;
	size_t out_cap, in_cap;
	/*
	 * A frame went out or came in only in part, or the stream ended or
	 * failed (atomic): the stream is out of step for good. Nothing more
	 * is sent (a failure is not told over a dead link, after a write that
	 * timed out), and ssh is ended at once on close, not waited for.
	 */
	bool broken;
};

/* keep-alive frames: one after this long without another frame sent, ... */
#define CRYO_MIGRATE_ALIVE_EVERY_MS 5000
/* ... and a wait that they prolong ends after this long all the same */
#define CRYO_MIGRATE_ALIVE_MAX_MS 3600000

/*
 * While the caller runs a long local step and sends nothing (CRIU's
 * dump, its restore): a thread sends an alive frame (MigrateAlive, naming
 * phase) whenever nothing else went for CRYO_MIGRATE_ALIVE_EVERY_MS (or a
 * quarter of the io timeout, if shorter). The peer's
 * cryo_transport_recv() takes them as a sign of life, never returns one.
 * Stop it before the caller reads from t again. A failed start is no
 * failure of the step: the peer's own timeout then applies, as before.
 */
int cryo_transport_keepalive_start(struct cryo_transport *t, const char *phase, struct cryo_error *err);
void cryo_transport_keepalive_stop(struct cryo_transport *t);

enum cryo_dest_kind {
	CRYO_DEST_SSH,
	CRYO_DEST_TLS,
};

/* A parsed DEST: ssh://[user@]host[:port] or tls://host:port. */
struct cryo_dest {
	enum cryo_dest_kind kind;
	char *user;  /* NULL = ssh's default */
	char *host;  /* without brackets */
	unsigned port; /* 0 = ssh's default (TLS requires one) */
};

int cryo_dest_parse(const char *s, struct cryo_dest *ret, struct cryo_error *err);
void cryo_dest_done(struct cryo_dest *d);

/* The certificate files of one end of a mutual TLS channel (PEM). */
struct cryo_tls_files {
	const char *cert; /* our certificate (chain) */
	const char *key;  /* its private key */
	const char *ca;   /* the CA(s) the peer's certificate must chain to */
};

/* Wrap an fd pair (receive --stdio: 0 and 1). The fds become non-blocking; close() does not close them. */
int cryo_transport_fds(int rfd, int wfd, const char *peer, struct cryo_transport **ret, struct cryo_error *err);

/*
 * Run `ssh [-p PORT] [-l USER] -T -o BatchMode=yes HOST -- REMOTE_CMD`
 * (ssh = the ssh program, NULL = "ssh") with its stdin/stdout as the
 * channel; its stderr stays ours. close() waits for it (and kills it
 * if it lingers).
 */
int cryo_transport_ssh(const struct cryo_dest *d, const char *ssh, const char *remote_cmd, struct cryo_transport **ret,
		       struct cryo_error *err);

/* Connect and handshake; the server's certificate must match d->host (name or IP). */
int cryo_transport_tls_connect(const struct cryo_dest *d, const struct cryo_tls_files *f, int64_t timeout_ms,
			       struct cryo_transport **ret, struct cryo_error *err);

/*
 * Listen on addr ("host:port", "[v6]:port", ":port"), accept one
 * connection within timeout_ms (0 = forever) and handshake: a client
 * without a certificate from f->ca is refused here, before it can send a
 * frame. listening(port), if given, is called once the socket listens
 * (with the real port: tests listen on port 0).
 */
int cryo_transport_tls_accept(const char *addr, const struct cryo_tls_files *f, int64_t timeout_ms,
			      void (*listening)(unsigned port, void *userdata), void *userdata,
			      struct cryo_transport **ret, struct cryo_error *err);

void cryo_transport_close(struct cryo_transport *t);

/* For backends: a transport with ops and a copy of peer, fds -1. */
int cryo_transport_new(const struct cryo_transport_ops *ops, const char *peer, struct cryo_transport **ret,
		       struct cryo_error *err);

/*
 * Whether the peer sent something not read yet (a failure report while
 * we are busy sending): a hint, a frame may still be incomplete.
 */
bool cryo_transport_pending(struct cryo_transport *t);

/* Send one frame. */
int cryo_transport_send(struct cryo_transport *t, const Cryo__MigrateFrame *f, struct cryo_error *err);

/*
 * Receive one frame within timeout_ms (0 = the transport's io timeout);
 * an alive frame starts the wait over (CRYO_MIGRATE_ALIVE_MAX_MS at most).
 * -EPIPE when the peer closed between frames, -ETIMEDOUT when nothing
 * of a frame came in time, -EBADMSG for a truncated or malformed one
 * (also one that stopped coming), -EMSGSIZE over the bound.
 */
int cryo_transport_recv(struct cryo_transport *t, int64_t timeout_ms, Cryo__MigrateFrame **ret, struct cryo_error *err);

/*
 * Parse one frame from the start of buf: 0 and *ret_used bytes consumed,
 * -EAGAIN when buf holds only part of it, -EMSGSIZE when its length is
 * over the bound, -EBADMSG when it does not decode or breaks a bound.
 * The fuzz target's entry point (no I/O).
 */
int cryo_migrate_frame_parse(const uint8_t *buf, size_t len, size_t *ret_used, Cryo__MigrateFrame **ret,
			     struct cryo_error *err);

/* Decode and check a frame body (the part after the length). */
int cryo_migrate_frame_decode(const uint8_t *buf, size_t len, Cryo__MigrateFrame **ret, struct cryo_error *err);

void cryo_migrate_frame_free(Cryo__MigrateFrame *f);

#endif
