// SPDX-License-Identifier: GPL-2.0-only
/*
 * A hostile migration source for `cryo receive --stdio`: it passes the
 * preflight honestly, then sends one crafted transfer.
 *
 *   cryo-test-peer SCENARIO ID CMD [ARG...]
 *
 * CMD (the receiver) runs with a socket pair on its stdin/stdout, its
 * stderr ours. Exit status: the receiver's; 3 when the preflight itself
 * failed (the receiver's verdict on stdout). Scenarios:
 *
 *   parent-name    a file named `parent` (CRIU's link, the receiver's to make)
 *   round-skip     a file of pre-copy round 2 before any round 1
 *   round-mix      a file of round 1, then one of the final dump before round 1 ended
 *   done-unsent    the end of round 1, which was never sent
 *   final-flag     the final dump ended as if it were a pre-copy round
 *   round-bogus    a whole round 1 that is no image (no manifest, no signature)
 *   round-dir:DIR  DIR's files (manifest last, signature after it) as round 1
 *   stall          a file of round 1, half sent, then nothing (until killed)
 *   busy           alive frames (a dump under way) for 2.5 s, then round-bogus's round
 *   quiet          the same 2.5 s without a frame, then the same round
 *   lazy-hello     a hello asking for --lazy (post-copy), then nothing: the
 *                  receiver's verdict is the test
 *   digest:N       a hello whose files are hashed with digest algorithm N
 *                  (migrate.proto's hello.digest), then round-bogus's round;
 *                  the receiver's verdict on an unknown N is the test
 *
 * The final dump's files go out while CRIU writes them, and one that
 * changed after it went is sent again as a `replace` (once):
 *
 *   twice          a file of the final dump sent twice, the second not as a replace
 *   replace-unsent a replace of a file never sent
 *   replace-thrice a file, its replace, and a second replace
 *   final-extra:DIR   a file the manifest does not list, sent early, then DIR's files as the final dump
 *   final-replaced:DIR  DIR's files as the final dump, then its pages-1.img again as a
 *                  replace with other bytes of the same size (sent, then "rewritten")
 *
 * A page image goes while CRIU still appends to it (`growing`: no size,
 * chunks until one with `end`):
 *
 *   growing-round  a growing file in pre-copy round 1
 *   growing-sized  a growing file that announces a size
 *   growing-empty  a growing file with an empty chunk that is not its end
 *   end-plain      a file of known size whose chunk says `end`
 *   growing-bytes:DIR  DIR's files as the final dump, pages-1.img growing, in
 *                  two chunks and an empty end, with other bytes of the same size
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport.h"

static struct cryo_transport *t;
static bool hello_lazy;
static int hello_digest = -1;

static int send_frame(Cryo__MigrateFrame *fr)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	int r = cryo_transport_send(t, fr, &err);

	if (r < 0) {
		/* the receiver may hang up as soon as it sees the bad frame */
		fprintf(stderr, "cryo-test-peer: send: %s\n", err.msg ? err.msg : "?");
		cryo_error_clear(&err);
	}
	return r;
}

static bool replace_next; /* the next file goes as a replace */

/* A file's header (growing: no size, chunks until an end); the next file goes as a replace if asked. */
static int send_header(const char *name, uint32_t round, uint64_t size, bool growing)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateFile fm = CRYO__MIGRATE_FILE__INIT;

	fm.name = (char *)name;
	fm.size = size;
	fm.has_mode = fm.has_round = 1;
	fm.mode = 0600;
	fm.round = round;
	if (replace_next)
		fm.has_replace = fm.replace = 1;
	replace_next = false;
	if (growing)
		fm.has_growing = fm.growing = 1;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_FILE;
	fr.file = &fm;
	return send_frame(&fr);
}

/* One chunk (end: the last of a growing file). */
static int send_chunk(const void *data, size_t len, bool end)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateChunk ch = CRYO__MIGRATE_CHUNK__INIT;

	ch.data.data = (uint8_t *)data;
	ch.data.len = len;
	if (end)
		ch.has_end = ch.end = 1;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_CHUNK;
	fr.chunk = &ch;
	return send_frame(&fr);
}

static int send_buf(const char *name, uint32_t round, const void *data, size_t len)
{
	int r = send_header(name, round, len, false);

	if (r < 0 || !len)
		return r;
	return send_chunk(data, len, false);
}

/* name as a growing file: its chunks (each a text; "" alone is an empty chunk), then the end (empty) */
static int send_growing(const char *name, uint32_t round, uint64_t size, const char *const *chunks, bool end)
{
	int r = send_header(name, round, size, true);

	for (; r >= 0 && *chunks; chunks++)
		r = send_chunk(*chunks, strlen(*chunks), false);
	if (r < 0 || !end)
		return r;
	return send_chunk(NULL, 0, true);
}

static int send_file(const char *name, uint32_t round, const char *text)
{
	return send_buf(name, round, text, strlen(text));
}

static int send_path(const char *dir, const char *name, uint32_t round)
{
	char path[4096], buf[1 << 16];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || n == (ssize_t)sizeof(buf))
		return -EFBIG;	/* small test images: one chunk each */
	return send_buf(name, round, buf, (size_t)n);
}

/* Every file of dir as a round, the manifest and then its signature last. */
static int send_dir(const char *dir, uint32_t round)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	if (!d)
		return -errno;
	while (r >= 0 && (de = readdir(d)))
		if (de->d_name[0] != '.' && strncmp(de->d_name, "manifest.", 9) != 0)
			r = send_path(dir, de->d_name, round);
	closedir(d);
	if (r >= 0)
		r = send_path(dir, "manifest.pb", round);
	if (r >= 0 && send_path(dir, "manifest.sig", round) == -ENOENT)
		r = 0;
	return r;
}

static int send_done(uint32_t round, bool final)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateDone d = CRYO__MIGRATE_DONE__INIT;

	d.round = round;
	d.has_final = 1;
	d.final = final;
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_DONE;
	fr.done = &d;
	return send_frame(&fr);
}

/* Hello both ways and the receiver's verdict: 0 when it is ready. */
static int preflight(const char *id)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateHello h = CRYO__MIGRATE_HELLO__INIT;
	struct cryo_error err = CRYO_ERROR_INIT;
	Cryo__MigrateFrame *in = NULL;
	int r;

	h.protocol_version = CRYO_MIGRATE_PROTOCOL_VERSION;
	h.container_id = (char *)id;
	h.rootfs_kind = (char *)"dir";
	h.has_lazy = hello_lazy;
	h.lazy = hello_lazy;
	if (hello_digest >= 0) {
		h.has_digest = 1;
		h.digest = (uint32_t)hello_digest;
	}
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_HELLO;
	fr.hello = &h;
	if (send_frame(&fr) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		r = cryo_transport_recv(t, 30000, &in, &err);
		if (r < 0) {
			printf("preflight: %s\n", err.msg ? err.msg : "?");
			cryo_error_clear(&err);
			return -1;
		}
		if (in->body_case == CRYO__MIGRATE_FRAME__BODY_RESULT && in->result->status < 0) {
			printf("preflight refused: %s\n", in->result->message ? in->result->message : "");
			cryo_migrate_frame_free(in);
			return -1;
		}
		cryo_migrate_frame_free(in);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	const char *scen;
	int sp[2], status = 0, pre;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: cryo-test-peer SCENARIO ID CMD [ARG...]\n");
		return 2;
	}
	scen = argv[1];
	hello_lazy = strcmp(scen, "lazy-hello") == 0;
	if (strncmp(scen, "digest:", 7) == 0)
		hello_digest = atoi(scen + 7);
	signal(SIGPIPE, SIG_IGN);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return 2;
	pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		if (dup2(sp[1], 0) < 0 || dup2(sp[1], 1) < 0)
			_exit(127);
		execvp(argv[3], argv + 3);
		_exit(127);
	}
	close(sp[1]);
	if (cryo_transport_fds(sp[0], sp[0], "the receiver", &t, &err) < 0) {
		fprintf(stderr, "cryo-test-peer: %s\n", err.msg ? err.msg : "?");
		return 2;
	}
	pre = preflight(argv[2]);
	if (pre == 0) {
		if (strcmp(scen, "parent-name") == 0) {
			(void)send_file("parent", 1, "x");
		} else if (strcmp(scen, "round-skip") == 0) {
			(void)send_file("core-1.img", 2, "x");
		} else if (strcmp(scen, "round-mix") == 0) {
			if (send_file("core-1.img", 1, "x") == 0)
				(void)send_file("core-2.img", 0, "y");
		} else if (strcmp(scen, "done-unsent") == 0) {
			(void)send_done(1, false);
		} else if (strcmp(scen, "final-flag") == 0) {
			if (send_file("core-1.img", 0, "x") == 0)
				(void)send_done(0, false);
		} else if (strncmp(scen, "round-dir:", 10) == 0) {
			if (send_dir(scen + 10, 1) == 0)
				(void)send_done(1, false);
		} else if (strcmp(scen, "twice") == 0) {
			if (send_file("pages-1.img", 0, "x") == 0)
				(void)send_file("pages-1.img", 0, "y");
		} else if (strcmp(scen, "replace-unsent") == 0) {
			if (send_file("core-1.img", 0, "x") == 0) {
				replace_next = true;
				(void)send_file("pages-1.img", 0, "y");
			}
		} else if (strcmp(scen, "replace-thrice") == 0) {
			int r = send_file("pages-1.img", 0, "x");

			replace_next = true;
			if (r == 0 && send_file("pages-1.img", 0, "y") == 0) {
				replace_next = true;
				(void)send_file("pages-1.img", 0, "z");
			}
		} else if (strncmp(scen, "final-extra:", 12) == 0) {
			if (send_file("pages-9.img", 0, "sent while CRIU dumped, never listed") == 0 &&
			    send_dir(scen + 12, 0) == 0)
				(void)send_done(0, true);
		} else if (strncmp(scen, "final-replaced:", 15) == 0) {
			if (send_dir(scen + 15, 0) == 0) {
				replace_next = true;
				if (send_file("pages-1.img", 0, "pagez\n") == 0)
					(void)send_done(0, true);
			}
		} else if (strcmp(scen, "growing-round") == 0) {
			static const char *const c1[] = { "pages", NULL };

			(void)send_growing("pages-1.img", 1, 0, c1, true);
		} else if (strcmp(scen, "growing-sized") == 0) {
			static const char *const c1[] = { "pages", NULL };

			(void)send_growing("pages-1.img", 0, 5, c1, true);
		} else if (strcmp(scen, "growing-empty") == 0) {
			static const char *const c1[] = { "pa", "", "ges", NULL };

			(void)send_growing("pages-1.img", 0, 0, c1, true);
		} else if (strcmp(scen, "end-plain") == 0) {
			if (send_header("pages-1.img", 0, 10, false) == 0)
				(void)send_chunk("pages", 5, true);
		} else if (strncmp(scen, "growing-bytes:", 14) == 0) {
			/* the test image's pages-1.img is "pages\n": the same size, other bytes */
			static const char *const c1[] = { "pag", "ez\n", NULL };

			if (send_growing("pages-1.img", 0, 0, c1, true) == 0 && send_path(scen + 14, "core-1.img", 0) == 0 &&
			    send_path(scen + 14, "manifest.pb", 0) == 0 && send_path(scen + 14, "manifest.sig", 0) == 0)
				(void)send_done(0, true);
		} else if (strcmp(scen, "stall") == 0) {
			Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
			Cryo__MigrateFile fm = CRYO__MIGRATE_FILE__INIT;

			fm.name = (char *)"pages-1.img";
			fm.size = 1 << 20;
			fm.has_round = 1;
			fm.round = 1;
			fr.body_case = CRYO__MIGRATE_FRAME__BODY_FILE;
			fr.file = &fm;
			if (send_frame(&fr) == 0)
				pause();
		} else if (hello_lazy) {
			/* accepted: nothing more to send */
		} else if (strcmp(scen, "busy") == 0 || strcmp(scen, "quiet") == 0) {
			/*
			 * a source whose dump outlasts the receiver's --timeout:
			 * busy says so every 200 ms (alive frames), quiet says
			 * nothing; 2.5 s later both send round-bogus's round
			 */
			Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
			Cryo__MigrateAlive al = CRYO__MIGRATE_ALIVE__INIT;
			int r = 0;

			al.phase = (char *)"checkpoint";
			fr.body_case = CRYO__MIGRATE_FRAME__BODY_ALIVE;
			fr.alive = &al;
			for (int i = 0; i < 12 && r == 0; i++) {
				usleep(200 * 1000);
				if (scen[0] == 'b')
					r = send_frame(&fr);
			}
			usleep(100 * 1000);
			if (r == 0 && send_file("pages-1.img", 1, "not pages") == 0)
				(void)send_done(1, false);
		} else if (strcmp(scen, "round-bogus") == 0 || hello_digest >= 0) {
			if (send_file("pages-1.img", 1, "not pages") == 0)
				(void)send_done(1, false);
		} else {
			fprintf(stderr, "cryo-test-peer: unknown scenario `%s`\n", scen);
		}
		/* what the receiver says, until it hangs up (a lazy hello accepted: nothing) */
		while (!hello_lazy) {
			Cryo__MigrateFrame *in = NULL;

			if (cryo_transport_recv(t, 30000, &in, &err) < 0) {
				cryo_error_clear(&err);
				break;
			}
			if (in->body_case == CRYO__MIGRATE_FRAME__BODY_RESULT)
				printf("receiver: %s at %s: %s\n", in->result->status < 0 ? "failed" : "ok",
				       in->result->phase ? in->result->phase : "?",
				       in->result->message ? in->result->message : "");
			cryo_migrate_frame_free(in);
		}
	}
	cryo_transport_close(t);
	close(sp[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (pre < 0)
		return 3;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
