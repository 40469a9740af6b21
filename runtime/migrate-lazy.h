/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Post-copy migration (`cryo migrate --lazy`): CRIU's lazy pages carried
 * inside the authenticated migrate channel.
 *
 * CRIU's lazy dump leaves the memory in the (frozen) source tasks and
 * serves it from a page server; on the destination, CRIU's lazy-pages
 * daemon pulls it into the restored copy through userfaultfd. Both talk
 * plain TCP, so cryo binds both to 127.0.0.1 and relays the one stream
 * between them in MigrateRelay frames (proto/migrate.proto) over the TLS
 * or ssh channel:
 *
 *   source: page server (127.0.0.1:P) ◀─connect─ relay ══channel══
 *   destination: ══channel══ relay ◀─connect─ lazy-pages daemon
 *                                      (127.0.0.1:Q, listened on here)
 *
 * The relay is one poll loop per end: bytes from the local socket go out
 * as relay frames (at most a chunk each), relay frames from the peer go
 * into the local socket, an end of stream either way is passed on as an
 * eof frame. Any other frame goes to the caller (the destination waits
 * for the source's commit there, the source for a failure report).
 */
#ifndef CRYO_MIGRATE_LAZY_H
#define CRYO_MIGRATE_LAZY_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "transport.h"

struct cryo_lazy_relay {
	struct cryo_transport *t;
	int sock;              /* the local stream (connected), or -1 until accepted on listen_fd */
	int listen_fd;         /* destination: the daemon's connection is accepted here (one), or -1 */
	int watch_fd;          /* e.g. a pidfd of CRIU's dump: readable = the relay ends once the local stream did; -1 = none */
	int64_t idle_timeout_ms; /* nothing moved either way for this long: -ETIMEDOUT; 0 = 120000 */
	/*
	 * A frame that is not a relay frame: > 0 ends the relay (0 is
	 * returned), 0 goes on, < 0 fails it. NULL: such a frame is a
	 * protocol error. The frame is freed by the relay.
	 */
	int (*on_frame)(void *userdata, const Cryo__MigrateFrame *f, struct cryo_error *err);
	void *userdata;
	/* out */
	uint64_t bytes_to_peer, bytes_from_peer; /* stream bytes (not frames) */
	bool local_eof, peer_eof;
	bool watched;          /* watch_fd became readable */
};

/*
 * Run the relay until: watch_fd is readable and the local stream has
 * ended (0), or on_frame ends it (0), or an error (the local socket, the
 * channel, a frame out of place, the idle timeout).
 */
int cryo_lazy_relay_run(struct cryo_lazy_relay *r, struct cryo_error *err);

/* A TCP socket listening on 127.0.0.1 on a port the kernel picks (*ret_port). */
int cryo_lazy_listen_local(int *ret_fd, unsigned *ret_port, struct cryo_error *err);

/* Connect to 127.0.0.1:port within timeout_ms (retrying while it refuses: the server may be coming up). */
int cryo_lazy_connect_local(unsigned port, int64_t timeout_ms, int *ret_fd, struct cryo_error *err);

#endif
