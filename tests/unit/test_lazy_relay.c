// SPDX-License-Identifier: GPL-2.0-only
/*
 * The --lazy page relay (runtime/migrate-lazy.h) without CRIU: a "page
 * server" and a "lazy-pages daemon" played by this test on both ends of
 * two relays joined by a socket pair as the channel.
 *
 *  - requests one way, 3 MiB of pages (more than a frame's bound) the
 *    other, both intact; the page server's end of stream reaches the
 *    daemon; the source relay ends when its watch fd fires (the dump
 *    exited) and the destination's when the commit arrives;
 *  - the source cut mid-stream: the destination's relay fails and the
 *    daemon's stream ends short (so CRIU's restore can't finish);
 *  - a peer's page data before the daemon connected, a relay frame over
 *    the chunk bound, or a frame out of place: refused (EBADMSG).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "migrate-lazy.h"
#include "transport.h"
#include "util.h"
#include "testlib.h"

#define PAGES_BYTES (3U << 20)

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + i / 4096);
}

static void channel(struct cryo_transport **src, struct cryo_transport **dst)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(cryo_transport_fds(sv[0], sv[0], "src", src, NULL), 0);
	assert_int_equal(cryo_transport_fds(sv[1], sv[1], "dst", dst, NULL), 0);
	(*src)->io_timeout_ms = (*dst)->io_timeout_ms = 5000;
}

static int commit_ends(void *userdata, const Cryo__MigrateFrame *f, struct cryo_error *err)
{
	(void)userdata;
	if (f->body_case == CRYO__MIGRATE_FRAME__BODY_COMMIT)
		return 1;
	return cryo_error_setx(err, EBADMSG, "not a commit");
}

/* The source's end: relay, then the commit (as migrate does once the dump exited 0). */
static pid_t run_source(struct cryo_transport *t, int ps, int watch, int other)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* the page server's end is the test's alone: its close must be seen */
		close(other);
		struct cryo_lazy_relay r = { .t = t, .sock = ps, .listen_fd = -1, .watch_fd = watch,
					     .idle_timeout_ms = 5000 };
		Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
		Cryo__MigrateCommit cm = CRYO__MIGRATE_COMMIT__INIT;

		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_lazy_relay_run(&r, &e) < 0) {
			print_message("source relay: %s\n", e.msg);
			_exit(1);
		}
		if (!r.local_eof || r.bytes_to_peer != PAGES_BYTES)
			_exit(2);
		cm.go = true;
		fr.body_case = CRYO__MIGRATE_FRAME__BODY_COMMIT;
		fr.commit = &cm;
		_exit(cryo_transport_send(t, &fr, NULL) < 0 ? 3 : 0);
	}
	return pid;
}

static pid_t run_dest(struct cryo_transport *t, int lfd, int other)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct cryo_lazy_relay r = { .t = t, .sock = -1, .listen_fd = lfd, .watch_fd = -1,
					     .idle_timeout_ms = 5000, .on_frame = commit_ends };

		close(other);

		if (cryo_lazy_relay_run(&r, NULL) < 0)
			_exit(1);
		_exit(r.peer_eof && r.bytes_from_peer == PAGES_BYTES ? 0 : 2);
	}
	return pid;
}

/* Read what the daemon gets until its stream ends: how many bytes, and whether they match the pattern. */
static size_t daemon_reads(int fd, bool *intact)
{
	static uint8_t buf[65536];
	size_t got = 0;

	*intact = true;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0)
			return got;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(got + (size_t)i))
				*intact = false;
		got += (size_t)n;
	}
}

/* The page server sends upto bytes (in a child: the daemon reads meanwhile) and closes its end. */
static pid_t write_pages(int fd, size_t upto)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		static uint8_t buf[PAGES_BYTES];
		size_t i, off = 0;

		for (i = 0; i < upto; i++)
			buf[i] = pattern(i);
		while (off < upto) {
			ssize_t n = write(fd, buf + off, upto - off);

			if (n <= 0)
				_exit(1);
			off += (size_t)n;
		}
		_exit(0);
	}
	return pid;
}

static void request(int daemon, int ps)
{
	char req[100], got[100];
	size_t have = 0;

	memset(req, 'q', sizeof(req));
	assert_int_equal(write(daemon, req, sizeof(req)), sizeof(req));
	while (have < sizeof(got)) {
		ssize_t n = read(ps, got + have, sizeof(got) - have);

		assert_true(n > 0);
		have += (size_t)n;
	}
	assert_memory_equal(req, got, sizeof(req));
}

/* Both relays over one channel, the daemon connected and its first request through to the page server. */
struct relay_pair {
	struct cryo_transport *ts, *td;
	int ps[2], w[2], daemon;
	pid_t src, dst;
};

static void relay_pair_start(struct relay_pair *p)
{
	unsigned port;
	int lfd;

	channel(&p->ts, &p->td);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p->ps), 0);
	assert_int_equal(pipe2(p->w, O_CLOEXEC), 0);
	assert_int_equal(cryo_lazy_listen_local(&lfd, &port, NULL), 0);
	p->src = run_source(p->ts, p->ps[1], p->w[0], p->ps[0]);
	p->dst = run_dest(p->td, lfd, p->ps[0]);
	close(p->ps[1]);
	close(lfd);
	assert_int_equal(cryo_lazy_connect_local(port, 2000, &p->daemon, NULL), 0);
	request(p->daemon, p->ps[0]);
}

static void test_stream(void **state)
{
	struct relay_pair p;
	pid_t wr;
	bool intact;

	(void)state;
	relay_pair_start(&p);
	wr = write_pages(p.ps[0], PAGES_BYTES);
	close(p.ps[0]); /* the page server is done once its writer is */
	assert_int_equal(daemon_reads(p.daemon, &intact), PAGES_BYTES);
	assert_true(intact);
	assert_int_equal(tl_wait(wr), 0);
	assert_int_equal(write(p.w[1], "x", 1), 1); /* the dump exited */
	assert_int_equal(tl_wait(p.src), 0);
	assert_int_equal(tl_wait(p.dst), 0);
	close(p.daemon);
	close(p.w[0]);
	close(p.w[1]);
	cryo_transport_close(p.ts);
	cryo_transport_close(p.td);
}

static void test_cut(void **state)
{
	struct relay_pair p;
	pid_t wr;
	bool intact;
	size_t got;

	(void)state;
	relay_pair_start(&p);
	wr = write_pages(p.ps[0], 1U << 20);
	/* the link is lost: the source's end dies with (at most) a megabyte sent */
	usleep(300000);
	kill(p.src, SIGKILL);
	cryo_transport_close(p.ts);
	assert_int_equal(tl_wait(p.src), 128 + SIGKILL);
	got = daemon_reads(p.daemon, &intact);
	assert_true(got <= (1U << 20));
	assert_true(intact);
	assert_int_equal(tl_wait(p.dst), 1);
	close(p.ps[0]);
	(void)tl_wait(wr);
	close(p.daemon);
	close(p.w[0]);
	close(p.w[1]);
	cryo_transport_close(p.td);
}

static void send_relay_frame(struct cryo_transport *t, size_t len, bool eof)
{
	static uint8_t data[CRYO_MIGRATE_CHUNK_SIZE];
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateRelay rl = CRYO__MIGRATE_RELAY__INIT;

	rl.has_data = len > 0;
	rl.data.data = data;
	rl.data.len = len;
	rl.has_eof = eof;
	rl.eof = eof;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_RELAY;
	fr.relay = &rl;
	assert_int_equal(cryo_transport_send(t, &fr, NULL), 0);
}

static void test_refused(void **state)
{
	struct cryo_transport *ts, *td;
	struct cryo_error err = CRYO_ERROR_INIT;
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT, *got = NULL;
	Cryo__MigrateRelay rl = CRYO__MIGRATE_RELAY__INIT;
	Cryo__MigrateDone done = CRYO__MIGRATE_DONE__INIT;
	static uint8_t big[CRYO_MIGRATE_CHUNK_SIZE + 1], packed[CRYO_MIGRATE_FRAME_MAX];
	int lfd;
	unsigned port;
	size_t n;

	(void)state;
	/* page data before the daemon connected: nothing asked for it */
	channel(&ts, &td);
	assert_int_equal(cryo_lazy_listen_local(&lfd, &port, NULL), 0);
	send_relay_frame(ts, 4096, false);
	{
		struct cryo_lazy_relay r = { .t = td, .sock = -1, .listen_fd = lfd, .watch_fd = -1,
					     .idle_timeout_ms = 2000 };

		assert_int_equal(cryo_lazy_relay_run(&r, &err), -EBADMSG);
		assert_non_null(strstr(err.msg, "before the stream was open"));
		cryo_error_clear(&err);
	}
	/* any other frame in the stream, without a taker */
	done.round = 0;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_DONE;
	fr.done = &done;
	assert_int_equal(cryo_transport_send(ts, &fr, NULL), 0);
	{
		struct cryo_lazy_relay r = { .t = td, .sock = -1, .listen_fd = lfd, .watch_fd = -1,
					     .idle_timeout_ms = 2000 };

		assert_int_equal(cryo_lazy_relay_run(&r, &err), -EBADMSG);
		assert_non_null(strstr(err.msg, "unexpected frame"));
		cryo_error_clear(&err);
	}
	/* nothing at all: the idle timeout */
	{
		struct cryo_lazy_relay r = { .t = td, .sock = -1, .listen_fd = lfd, .watch_fd = -1,
					     .idle_timeout_ms = 300 };

		assert_int_equal(cryo_lazy_relay_run(&r, &err), -ETIMEDOUT);
		cryo_error_clear(&err);
	}
	close(lfd);
	cryo_transport_close(ts);
	cryo_transport_close(td);

	/* a relay frame over the chunk bound does not decode */
	rl.has_data = 1;
	rl.data.data = big;
	rl.data.len = sizeof(big);
	fr = (Cryo__MigrateFrame)CRYO__MIGRATE_FRAME__INIT;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_RELAY;
	fr.relay = &rl;
	n = cryo__migrate_frame__get_packed_size(&fr);
	assert_true(n <= sizeof(packed));
	cryo__migrate_frame__pack(&fr, packed);
	assert_int_equal(cryo_migrate_frame_decode(packed, n, &got, &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "relay of"));
	cryo_error_clear(&err);
	rl.data.len = CRYO_MIGRATE_CHUNK_SIZE;
	n = cryo__migrate_frame__get_packed_size(&fr);
	cryo__migrate_frame__pack(&fr, packed);
	assert_int_equal(cryo_migrate_frame_decode(packed, n, &got, NULL), 0);
	assert_int_equal(got->relay->data.len, CRYO_MIGRATE_CHUNK_SIZE);
	cryo_migrate_frame_free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_refused),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
