// SPDX-License-Identifier: GPL-2.0-only
/*
 * bench_transport PKI MIB [STAGES]: migrate's channel alone, without
 * CRIU. A receiver (forked, on 127.0.0.1) accepts mutual TLS with the
 * certificates in PKI (server.crt/key, client.crt/key, ca.crt; the
 * server's for IP 127.0.0.1), and takes MIB MiB of chunk frames as
 * receive does a page image; the sender sends them as the early sender
 * does. STAGES, comma-separated, adds receive's per-byte work: "hash"
 * (the image digest, blake3), "write" (into a file in the current dir,
 * removed). Prints "MB/s" of the receiver, first frame to last.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "transport.h"

static int port_pipe[2];

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void listening(unsigned port, void *userdata)
{
	(void)userdata;
	if (write(port_pipe[1], &port, sizeof(port)) != (ssize_t)sizeof(port))
		_exit(3);
}

static int files(const char *pki, bool server, char **cert, char **key, char **ca)
{
	const char *me = server ? "server" : "client";

	return asprintf(cert, "%s/%s.crt", pki, me) < 0 || asprintf(key, "%s/%s.key", pki, me) < 0 ||
			       asprintf(ca, "%s/ca.crt", pki) < 0
		       ? -1
		       : 0;
}

static int receiver(const char *pki, uint64_t total, bool hash, bool wr)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_transport *t = NULL;
	struct cryo_hash *h = NULL;
	char *cert, *key, *ca;
	struct cryo_tls_files f;
	uint64_t got = 0;
	double t0 = 0;
	int fd = -1;

	if (files(pki, true, &cert, &key, &ca) < 0)
		return 2;
	f = (struct cryo_tls_files){ .cert = cert, .key = key, .ca = ca };
	if (cryo_transport_tls_accept("127.0.0.1:0", &f, 30000, listening, NULL, &t, &err) < 0) {
		fprintf(stderr, "accept: %s\n", err.msg);
		return 1;
	}
	if (hash && cryo_hash_new(&h, CRYO_DIGEST_BLAKE3, &err) < 0 && cryo_hash_new(&h, CRYO_DIGEST_SHA256, &err) < 0)
		return 1;
	if (wr) {
		fd = open("bench-transport.out", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			return 1;
		(void)unlink("bench-transport.out");
	}
	while (got < total) {
		Cryo__MigrateFrame *fr = NULL;
		const uint8_t *p;
		size_t n;

		if (cryo_transport_recv(t, 30000, &fr, &err) < 0 || fr->body_case != CRYO__MIGRATE_FRAME__BODY_CHUNK) {
			fprintf(stderr, "recv: %s\n", err.msg ? err.msg : "not a chunk");
			return 1;
		}
		if (!got)
			t0 = now_s();
		p = fr->chunk->data.data;
		n = fr->chunk->data.len;
		got += n;
		if (h && cryo_hash_update(h, p, n, &err) < 0)
			return 1;
		while (fd >= 0 && n > 0) {
			ssize_t w = write(fd, p, n);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return 1;
			p += w;
			n -= (size_t)w;
		}
		cryo_migrate_frame_free(fr);
	}
	printf("%.0f MB/s\n", (double)got / (now_s() - t0) / 1e6);
	fflush(stdout);
	{
		/* all in: the sender closes when told (else its close could cut what is still on the way) */
		Cryo__MigrateFrame done = CRYO__MIGRATE_FRAME__INIT;
		Cryo__MigrateChunk end = CRYO__MIGRATE_CHUNK__INIT;

		end.has_end = end.end = 1;
		done.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
		done.chunk = &end;
		(void)cryo_transport_send(t, &done, &err);
	}
	cryo_hash_free(h);
	cryo_transport_close(t);
	if (fd >= 0)
		close(fd);
	free(cert);
	free(key);
	free(ca);
	return 0;
}

static int sender(const char *pki, unsigned port, uint64_t total)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_transport *t = NULL;
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateChunk ch = CRYO__MIGRATE_CHUNK__INIT;
	struct cryo_dest d = { .kind = CRYO_DEST_TLS, .host = (char *)"127.0.0.1", .port = port };
	char *cert, *key, *ca;
	struct cryo_tls_files f;
	uint8_t *buf = malloc(CRYO_MIGRATE_CHUNK_SIZE);
	uint64_t sent;
	int r = 0;

	if (!buf || files(pki, false, &cert, &key, &ca) < 0)
		return 2;
	memset(buf, 0x5a, CRYO_MIGRATE_CHUNK_SIZE);
	f = (struct cryo_tls_files){ .cert = cert, .key = key, .ca = ca };
	if (cryo_transport_tls_connect(&d, &f, 30000, &t, &err) < 0) {
		fprintf(stderr, "connect: %s\n", err.msg);
		free(buf);
		return 1;
	}
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
	fr.chunk = &ch;
	ch.data.data = buf;
	for (sent = 0; sent < total && r >= 0; sent += ch.data.len) {
		ch.data.len = total - sent < CRYO_MIGRATE_CHUNK_SIZE ? (size_t)(total - sent) : CRYO_MIGRATE_CHUNK_SIZE;
		/* a page image's bytes differ chunk to chunk */
		buf[0] = (uint8_t)sent;
		r = cryo_transport_send(t, &fr, &err);
	}
	if (r < 0)
		fprintf(stderr, "send: %s\n", err.msg);
	else {
		Cryo__MigrateFrame *done = NULL;

		r = cryo_transport_recv(t, 60000, &done, &err);
		if (r < 0)
			fprintf(stderr, "the receiver's end: %s\n", err.msg);
		else
			cryo_migrate_frame_free(done);
	}
	cryo_transport_close(t);
	free(buf);
	free(cert);
	free(key);
	free(ca);
	return r < 0;
}

int main(int argc, char **argv)
{
	uint64_t total;
	unsigned port = 0;
	const char *stages = argc > 3 ? argv[3] : "";
	int status = 0, r;
	pid_t pid;

	if (argc < 3 || atol(argv[2]) <= 0) {
		fprintf(stderr, "usage: %s PKI MIB [hash,write]\n", argv[0]);
		return 2;
	}
	total = (uint64_t)atol(argv[2]) << 20;
	if (pipe(port_pipe) < 0)
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0)
		_exit(receiver(argv[1], total, strstr(stages, "hash") != NULL, strstr(stages, "write") != NULL));
	if (read(port_pipe[0], &port, sizeof(port)) != (ssize_t)sizeof(port)) {
		(void)waitpid(pid, NULL, 0);
		return 1;
	}
	r = sender(argv[1], port, total);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		r = 1;
	return r;
}
