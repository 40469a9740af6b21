// SPDX-License-Identifier: GPL-2.0-only
/*
 * The migrate transport without a network: destinations parse or are
 * refused; frames cross a socket pair intact; every bound a peer could
 * break (announced length, truncation, chunk size, name length, unknown
 * kind) is refused with the errno the receivers act on.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport.h"
#include "util.h"
#include "testlib.h"

static void test_dest_parse(void **state)
{
	struct cryo_dest d;

	assert_int_equal(cryo_dest_parse("ssh://alice@host.example:2222", &d, NULL), 0);
	assert_int_equal(d.kind, CRYO_DEST_SSH);
	assert_string_equal(d.user, "alice");
	assert_string_equal(d.host, "host.example");
	assert_int_equal(d.port, 2222);
	cryo_dest_done(&d);
	assert_int_equal(cryo_dest_parse("ssh://host", &d, NULL), 0);
	assert_null(d.user);
	assert_int_equal(d.port, 0);
	cryo_dest_done(&d);
	assert_int_equal(cryo_dest_parse("tls://[fd00::2]:7443", &d, NULL), 0);
	assert_string_equal(d.host, "fd00::2");
	assert_int_equal(d.port, 7443);
	cryo_dest_done(&d);
	/* refused: no port for TLS, a user with TLS, an option for ssh, junk */
	assert_int_equal(cryo_dest_parse("tls://host", &d, NULL), -EINVAL);
	assert_int_equal(cryo_dest_parse("tls://u@host:1", &d, NULL), -EINVAL);
	assert_int_equal(cryo_dest_parse("ssh://-oProxyCommand=x", &d, NULL), -EINVAL);
	assert_int_equal(cryo_dest_parse("ssh://host/path", &d, NULL), -EINVAL);
	assert_int_equal(cryo_dest_parse("ssh://host:0", &d, NULL), -EINVAL);
	assert_int_equal(cryo_dest_parse("ssh://host:70000", &d, NULL), -EINVAL);
	assert_int_equal(cryo_dest_parse("http://host:1", &d, NULL), -EINVAL);
}

static void pair(struct cryo_transport **a, struct cryo_transport **b, int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(cryo_transport_fds(sv[0], sv[0], "a", a, NULL), 0);
	assert_int_equal(cryo_transport_fds(sv[1], sv[1], "b", b, NULL), 0);
	(*a)->io_timeout_ms = (*b)->io_timeout_ms = 2000;
}

static void test_roundtrip(void **state)
{
	struct cryo_transport *a, *b;
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT, *got = NULL;
	Cryo__MigrateChunk ch = CRYO__MIGRATE_CHUNK__INIT;
	static uint8_t data[CRYO_MIGRATE_CHUNK_SIZE];
	int sv[2];

	pair(&a, &b, sv);
	memset(data, 0x5a, sizeof(data));
	ch.data.data = data;
	ch.data.len = 1000; /* a socket pair buffers this much without a reader */
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
	fr.chunk = &ch;
	assert_int_equal(cryo_transport_send(a, &fr, NULL), 0);
	assert_int_equal(cryo_transport_recv(b, 1000, &got, NULL), 0);
	assert_int_equal(got->body_case, CRYO__MIGRATE_FRAME__BODY_CHUNK);
	assert_int_equal(got->chunk->data.len, 1000);
	assert_memory_equal(got->chunk->data.data, data, 1000);
	cryo_migrate_frame_free(got);
	/* nothing more: a clean timeout, then the peer's close is -EPIPE */
	assert_int_equal(cryo_transport_recv(b, 50, &got, NULL), -ETIMEDOUT);
	assert_false(b->broken); /* a wait for the next frame leaves the stream in step */
	cryo_transport_close(a);
	close(sv[0]);
	assert_int_equal(cryo_transport_recv(b, 1000, &got, NULL), -EPIPE);
	cryo_transport_close(b);
	close(sv[1]);
}

/*
 * A frame that could not go whole (the peer stopped reading: a dead link)
 * leaves the stream out of step: the next send is refused at once, not
 * after another timeout, and not written as garbage after half a frame.
 */
static void test_broken_after_partial_write(void **state)
{
	struct cryo_transport *a, *b;
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateChunk ch = CRYO__MIGRATE_CHUNK__INIT;
	static uint8_t data[CRYO_MIGRATE_CHUNK_SIZE];
	int64_t t0;
	int sv[2], i, r = 0;

	(void)state;
	pair(&a, &b, sv);
	a->io_timeout_ms = 100;
	ch.data.data = data;
	ch.data.len = sizeof(data);
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
	fr.chunk = &ch;
	/* b never reads: a socket pair's buffer fills within a few chunks */
	for (i = 0; i < 64 && r == 0; i++)
		r = cryo_transport_send(a, &fr, NULL);
	assert_int_equal(r, -ETIMEDOUT);
	assert_true(a->broken);
	t0 = cryo_now_ms();
	assert_int_equal(cryo_transport_send(a, &fr, NULL), -EPIPE);
	assert_true(cryo_now_ms() - t0 < 50);
	cryo_transport_close(a);
	cryo_transport_close(b);
	close(sv[0]);
	close(sv[1]);
}

static void test_bounds(void **state)
{
	struct cryo_transport *a, *b;
	Cryo__MigrateFrame *got = NULL;
	uint8_t over[4] = { 0x00, 0x10, 0x00, 0x00 }; /* 1 MiB announced */
	uint8_t trunc[8] = { 0x00, 0x00, 0x01, 0x00, 'a', 'b', 'c', 'd' };
	uint8_t junk[6] = { 0x00, 0x00, 0x00, 0x02, 0xff, 0xff };
	size_t used;
	int sv[2];

	assert_int_equal(cryo_migrate_frame_parse(over, sizeof(over), &used, &got, NULL), -EMSGSIZE);
	assert_int_equal(cryo_migrate_frame_parse(trunc, sizeof(trunc), &used, &got, NULL), -EAGAIN);
	assert_int_equal(cryo_migrate_frame_parse(junk, sizeof(junk), &used, &got, NULL), -EBADMSG);

	pair(&a, &b, sv);
	assert_int_equal(write(sv[0], over, sizeof(over)), (ssize_t)sizeof(over));
	assert_int_equal(cryo_transport_recv(b, 1000, &got, NULL), -EMSGSIZE);
	cryo_transport_close(a);
	cryo_transport_close(b);
	close(sv[0]);
	close(sv[1]);

	/* a frame cut off by the end of the stream */
	pair(&a, &b, sv);
	assert_int_equal(write(sv[0], trunc, sizeof(trunc)), (ssize_t)sizeof(trunc));
	cryo_transport_close(a);
	close(sv[0]);
	assert_int_equal(cryo_transport_recv(b, 1000, &got, NULL), -EBADMSG);
	assert_true(b->broken);
	cryo_transport_close(b);
	close(sv[1]);
}

static void test_checked_fields(void **state)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT, *got = NULL;
	Cryo__MigrateFile fm = CRYO__MIGRATE_FILE__INIT;
	Cryo__MigrateChunk ch = CRYO__MIGRATE_CHUNK__INIT;
	char name[CRYO_MIGRATE_NAME_MAX + 2];
	uint8_t *buf;
	size_t n;

	/* a file name over the bound */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	fm.name = name;
	fm.size = 1;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_FILE;
	fr.file = &fm;
	n = cryo__migrate_frame__get_packed_size(&fr);
	buf = malloc(n);
	assert_non_null(buf);
	cryo__migrate_frame__pack(&fr, buf);
	assert_int_equal(cryo_migrate_frame_decode(buf, n, &got, NULL), -EBADMSG);
	free(buf);

	/* a chunk over the chunk size (still under the frame bound) */
	ch.data.len = CRYO_MIGRATE_CHUNK_SIZE + 1;
	ch.data.data = calloc(1, ch.data.len);
	assert_non_null(ch.data.data);
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
	fr.chunk = &ch;
	n = cryo__migrate_frame__get_packed_size(&fr);
	assert_true(n <= CRYO_MIGRATE_FRAME_MAX);
	buf = malloc(n);
	assert_non_null(buf);
	cryo__migrate_frame__pack(&fr, buf);
	assert_int_equal(cryo_migrate_frame_decode(buf, n, &got, NULL), -EBADMSG);
	free(buf);
	free(ch.data.data);

	/* an empty frame: no kind */
	assert_int_equal(cryo_migrate_frame_decode((const uint8_t *)"", 0, &got, NULL), -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dest_parse),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_broken_after_partial_write),
		cmocka_unit_test(test_checked_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
