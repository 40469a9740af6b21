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

#include "criu-cli.h"
#include "error.h"
#include "protocol.h"
#include "transport.h"

struct cryo_lazy_relay {
	struct cryo_transport *t;
	int sock;              /* the local stream (connected), or -1 until accepted on listen_fd */
	int listen_fd;         /* destination: the daemon's connection is accepted here (one), or -1 */
	int watch_fd;          /* e.g. a pidfd of CRIU's dump: readable = the relay ends once the local stream did; -1 = none */
	int64_t idle_timeout_ms; /* nothing moved either way for this long: -ETIMEDOUT; 0 = 120000 */
	/*
	 * Nothing came from the peer for this long, whatever moved locally:
	 * -ETIMEDOUT (0 = no such bound). The destination's lease: its copy
	 * runs only while it hears from the source (docs/reliability.md).
	 */
	int64_t peer_timeout_ms;
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
	/* in: end as soon as watch_fd is readable (the stream goes on in a later run) */
	bool end_on_watch;
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

/* --- the two ends of a lazy migration (source.c's and receive.c's hooks) --------------- */

/* The source: CRIU's lazy dump (started by the checkpoint) and our connection to its page server. */
struct cryo_lazy_source {
	unsigned port;               /* the page server's, on 127.0.0.1 */
	struct cryo_criu_proc dump;
	int sock;
	struct cryo_lazy_relay relay; /* one stream across the restore and pages phases */
};

void cryo_lazy_source_init(struct cryo_lazy_source *s);

/* A free port on 127.0.0.1 for the page server (s->port). */
int cryo_lazy_source_port(struct cryo_lazy_source *s, struct cryo_error *err);

/* Connect to the page server at once, now that the dump serves (nobody else gets there first). */
int cryo_lazy_source_connect(struct cryo_lazy_source *s, struct cryo_error *err);

/*
 * Wait for the destination's restore, relaying meanwhile (CRIU's restore
 * there may fault pages in before it returns): 0 on its "restored".
 */
int cryo_lazy_source_await_restore(struct cryo_lazy_source *s, struct cryo_transport *t, int64_t idle_ms,
				   bool *peer_failed, char **peer_phase, struct cryo_error *err);

/*
 * Relay the destination's page requests to the dump until the dump
 * exited and its stream ended: 0 only when it exited 0 (every page was
 * served). A failure report of the destination in the stream fails it
 * with *peer_failed set and *peer_phase (malloc'd) its phase.
 */
int cryo_lazy_source_serve(struct cryo_lazy_source *s, struct cryo_transport *t, int64_t idle_ms,
			   bool *peer_failed, char **peer_phase, uint64_t *ret_bytes, struct cryo_error *err);

/* Kill the dump if it still runs (the source's tasks stay whole: CRIU never took their pages). */
void cryo_lazy_source_done(struct cryo_lazy_source *s);

/*
 * How long the source waits for a copy on the destination that may run
 * to have stopped, when the destination does not say so: its --timeout
 * (dest_timeout_ms, from its hello; 0 = not said, the default then) and
 * a margin of 5 s. The copy there stops once it heard nothing of the
 * source for its --timeout (the relay's peer_timeout_ms, which also
 * bounds the read of a frame begun); the last it heard of the source was
 * before the source lost it.
 */
int64_t cryo_lazy_fence_ms(uint32_t dest_timeout_ms);

/*
 * A lazy migration failed on the source after the copy on the
 * destination may have started to run: before the source resumes, that
 * copy must be stopped, or the container would run on both hosts. The
 * destination says so in a failure report once it stopped it (peer_failed:
 * it said so already); else the source reports its own failure (fail,
 * phase) and waits for that answer, at most fence_ms, after which the
 * copy has stopped on its own. The transport is closed after. Returns
 * how long it waited (ms); *ret_told: the destination said so.
 */
int64_t cryo_lazy_source_fence(struct cryo_transport **t, bool peer_failed, const struct cryo_error *fail,
			       const char *phase, int64_t fence_ms, bool *ret_told);

/* The destination: the lazy-pages daemon, the port it pulls from, and the commit that ends the stream. */
struct cryo_lazy_dest {
	int listen_fd;
	unsigned port;
	struct cryo_criu_proc daemon;
	uint64_t frozen_usec;        /* the source's frozen time until our copy ran (from its commit) */
	uint64_t since_freeze_usec;  /* the source's time from its freeze to its commit */
	uint64_t bytes;              /* page stream bytes received */
	struct cryo_lazy_relay relay; /* across the restore and the pages phase */
	char *restore_peer_phase;    /* the source failed while CRIU restored: its phase */
	bool restore_peer_failed;
	bool committed;              /* the source's commit came (go) */
	char *work;                  /* the daemon's work dir (the restore's too), once begun */
};

void cryo_lazy_dest_init(struct cryo_lazy_dest *d);

/*
 * Listen on 127.0.0.1 and start `criu lazy-pages` on image_dir / work_dir,
 * pulling from there; it gets ready (reads the image, listens) meanwhile.
 */
int cryo_lazy_dest_start(struct cryo_lazy_dest *d, const char *image_dir, const char *work_dir,
			 struct cryo_error *err);

/*
 * Relay the daemon's stream until the source commits (it does once its
 * dump served every page), then wait for the daemon to end well. A
 * failure report of the source fails it (*peer_failed, *peer_phase).
 */
int cryo_lazy_dest_pull(struct cryo_lazy_dest *d, struct cryo_transport *t, int64_t idle_ms, bool *peer_failed,
			char **peer_phase, struct cryo_error *err);

void cryo_lazy_dest_done(struct cryo_lazy_dest *d);

/*
 * The destination's restore, begun as soon as the image is verified:
 * start the daemon on img_dir with its work dir <in_dir>/lazy-work
 * (d->work, the restore's work dir too). It gets ready while the
 * restore's first steps run (rootfs, cgroup): cryo_lazy_dest_ready
 * (cryo_restore_opts.lazy_ready) waits for it before CRIU starts.
 */
int cryo_lazy_dest_begin(struct cryo_lazy_dest *d, struct cryo_transport *t, const char *in_dir, const char *img_dir,
			 struct cryo_error *err);
int cryo_lazy_dest_ready(void *userdata, struct cryo_error *err);

/*
 * The restore's wait for CRIU (cryo_restore_opts.lazy_wait): relay the
 * daemon's stream until CRIU's restore (pidfd) exited.
 */
int cryo_lazy_dest_restore_wait(void *userdata, int pidfd, struct cryo_error *err);

/*
 * Whether this host can take its end of a lazy migration: userfaultfd,
 * and CRIU's lazy dump, daemon and restore working here (the probe of
 * criu-cli.h, kept in the state root). Sets f->lazy when it can.
 * preflight (source): the error says why not; judge (destination): the
 * sentence for the source in why, and -EOPNOTSUPP.
 */
int cryo_lazy_preflight(const char *root, struct cryo_migrate_facts *f, struct cryo_error *err);
int cryo_lazy_judge(const char *root, struct cryo_migrate_facts *f, char *why, size_t len);

#endif
