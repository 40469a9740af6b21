// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <json-c/json.h>

#include "container.h"
#include "freezer.h"
#include "hold.h"
#include "log.h"
#include "manifest.h"
#include "migrate.h"
#include "migrate-lazy.h"
#include "receive-bundle.h"
#include "restore.h"
#include "sign.h"
#include "spec.h"
#include "step.h"
#include "state.h"
#include "util.h"
#include "version.h"
#include "protocol.h"

/* below this much free space (after the image) the destination refuses */
#define FREE_RESERVE_BYTES (64ULL << 20)

/* --- the destination: cryo receive ------------------------------------- */

struct rctx {
	struct cryo_migrate_phase ph;            /* first: see struct cryo_migrate_phase */
	const struct cryo_receive_opts *o;
	struct cryo_receive_result *res;
	struct cryo_transport *t;
	char *id;
	bool dry_run, was_paused;
	char *in_rel, *in_dir;      /* .migrate-in/<id>, <root>/.migrate-in/<id>: every image received */
	char *img_dir;              /* <in_dir>/img: the final dump (pre-copy rounds: <in_dir>/pre<k>) */
	int in_fd;
	int round_fd;               /* the dir of the round being received, or -1 */
	uint32_t round;             /* its number (0 = the final dump) */
	unsigned rounds_done;       /* pre-copy rounds received and verified */
	struct cryo_known_digest *known;    /* the round's files, hashed as they arrived */
	size_t n_known;
	char **replaced;            /* the round's files sent again (MigrateFile.replace): once each */
	size_t n_replaced;
	bool staged;
	struct cryo_hold *in_hold;  /* journals .migrate-in/<id> (see cryo_migrate_hold_dir) */
	struct cryo_receive_bundle b;   /* the bundle restored into, made once the rootfs or the image is in */
	Cryo__Manifest *m;
	struct cryo_spec *spec;
	struct cryo_hold *kill_hold;    /* the paused copy dies with us until the commit */
	bool restored, committed, peer_failed;
	bool lazy;                  /* post-copy (the source asked, we can) */
	bool lazy_copy_stopped;     /* --lazy: a copy that may have run here was killed: the source hears so */
	enum cryo_digest_alg digest; /* how the source's manifests hash: so are arrivals hashed */
	int64_t commit_at;
	uint64_t frozen_usec;
	uint64_t since_freeze_usec;  /* the source's time from its freeze to its commit */
	int64_t final_at;           /* the first frame of the final dump came */
	struct cryo_step_timings timings;  /* our steps (t0: the run's start), restore's nested in */
	struct cryo_error fail;
	struct cryo_lazy_dest lz;   /* --lazy: restore with CRIU's lazy pages, pull them (migrate-lazy.h) */
};

static int64_t rtimeout(const struct rctx *c)
{
	return c->o->timeout_ms > 0 ? c->o->timeout_ms : CRYO_MIGRATE_TIMEOUT_MS;
}

static int rstep_accept(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	int r;

	if (c->o->stdio)
		r = cryo_transport_fds(STDIN_FILENO, STDOUT_FILENO, "the source (stdio)", &c->t, err);
	else
		r = cryo_transport_tls_accept(c->o->listen, &c->o->tls, c->o->accept_timeout_ms, c->o->listening,
					      c->o->userdata, &c->t, err);
	if (r < 0)
		return r;
	c->t->io_timeout_ms = rtimeout(c);
	return 0;
}

static void rundo_accept(void *ctx)
{
	struct rctx *c = ctx;

	/*
	 * --lazy: the source waits to hear that the copy that ran here is
	 * stopped before it resumes its own: said even when it failed first
	 * (then the report below is not sent).
	 */
	if (c->lazy_copy_stopped && c->peer_failed && c->t) {
		struct cryo_error e = CRYO_ERROR_INIT;

		if (cryo_migrate_send_result(c->t, -ECANCELED, c->res->failed_phase, "the copy here is stopped", 0, &e) < 0)
			cryo_debug("receive: could not tell the source its copy here is stopped: %s", e.msg);
		cryo_error_clear(&e);
	}
	cryo_migrate_tell_peer_and_close(&c->t, c->peer_failed, &c->fail, c->res->failed_phase, "receive");
}

static uint64_t free_bytes_at(const char *path)
{
	struct statvfs s;

	if (statvfs(path, &s) < 0)
		return 0;
	return (uint64_t)s.f_bavail * s.f_frsize;
}

/* What this host can't take, as a sentence; NULL when it can. */
static int judge(struct rctx *c, const Cryo__MigrateHello *h, char *why, size_t len)
{
	struct cryo_state *st = NULL;
	_cleanup_free_ char *bundle = NULL;
	struct stat s;
	const struct cryo_migrate_facts *lf = &c->res->local;
	int r;

	if (h->protocol_version != CRYO_MIGRATE_PROTOCOL_VERSION) {
		snprintf(why, len, "protocol %u is not ours (%u)", h->protocol_version, (unsigned)CRYO_MIGRATE_PROTOCOL_VERSION);
		return -EPROTO;
	}
	if (cryo_validate_id(h->container_id, NULL) < 0) {
		snprintf(why, len, "`%.64s` is not a valid container id", h->container_id);
		return -EINVAL;
	}
	if (h->has_digest && !cryo_digest_alg_name((int)h->digest)) {
		snprintf(why, len, "digest algorithm %u is unknown here", h->digest);
		return -EPROTONOSUPPORT;
	}
	r = cryo_state_load(c->o->root, h->container_id, &st, NULL);
	cryo_state_free(st);
	if (r != -ENOENT) {
		snprintf(why, len, "a container `%s` exists here", h->container_id);
		return -EEXIST;
	}
	if (asprintf(&bundle, "%s/%s", c->o->bundle_dir, h->container_id) < 0)
		return -ENOMEM;
	if (lstat(bundle, &s) == 0) {
		snprintf(why, len, "the bundle `%s` exists here", bundle);
		return -EEXIST;
	}
	if (!lf->criu_version[0]) {
		snprintf(why, len, "no working CRIU here");
		return -ENOENT;
	}
	if (lf->criu_checked && !lf->criu_check_ok) {
		snprintf(why, len, "`criu check` fails here");
		return -EOPNOTSUPP;
	}
	if (h->freezer_backend && strcmp(h->freezer_backend, "v2") == 0 && strcmp(lf->cgroup_layout, "v1") == 0) {
		snprintf(why, len, "the container uses the cgroup2 freezer, this host has none");
		return -EOPNOTSUPP;
	}
	if (h->freezer_backend && strcmp(h->freezer_backend, "v1") == 0 && strcmp(lf->cgroup_layout, "v2") == 0) {
		snprintf(why, len, "the container uses the cgroup v1 freezer, this host has none");
		return -EOPNOTSUPP;
	}
	if (h->lazy) {
		r = cryo_lazy_judge(c->o->root, &c->res->local, why, len);
		if (r < 0)
			return r;
	}
	if (h->need_bytes + FREE_RESERVE_BYTES > lf->free_bytes) {
		snprintf(why, len, "%" PRIu64 " MiB free here, the image needs about %" PRIu64 " MiB (+%llu reserved)",
			 lf->free_bytes >> 20, (uint64_t)h->need_bytes >> 20, FREE_RESERVE_BYTES >> 20);
		return -ENOSPC;
	}
	return 0;
}

static int rstep_preflight(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	Cryo__MigrateFrame *f = NULL;
	char why[512] = "";
	int r, verdict;

	r = cryo_migrate_recv_expect(c->t, rtimeout(c), CRYO__MIGRATE_FRAME__BODY_HELLO, NULL, &f, err);
	if (r < 0)
		return r;
	c->dry_run = f->hello->dry_run;
	c->res->dry_run = c->dry_run;
	c->was_paused = f->hello->was_paused;
	c->lazy = f->hello->lazy;
	/* judge() refuses a value it does not know; absent: an older source, sha256 */
	c->digest = f->hello->has_digest ? (enum cryo_digest_alg)f->hello->digest : CRYO_DIGEST_SHA256;
	cryo_migrate_hello_to_facts(f->hello, &c->res->remote);
	cryo_migrate_local_facts(&c->res->local, c->dry_run);
	/* (--lazy: a copy here that heard nothing of the source for this long is stopped) */
	c->res->local.timeout_ms = (uint32_t)rtimeout(c);
	c->res->local.free_bytes = free_bytes_at(c->o->root);
	if (c->o->bundle_dir) {
		uint64_t b = free_bytes_at(c->o->bundle_dir);

		if (b && b < c->res->local.free_bytes)
			c->res->local.free_bytes = b;
	}
	verdict = judge(c, f->hello, why, sizeof(why));
	if (verdict >= 0) {
		c->id = strdup(f->hello->container_id);
		c->res->id = strdup(f->hello->container_id);
		if (!c->id || !c->res->id)
			verdict = -ENOMEM;
	}
	cryo_migrate_frame_free(f);
	r = cryo_migrate_send_hello(c->t, &c->res->local, c->id ? c->id : "", c->dry_run, false, err);
	if (r < 0)
		return r;
	r = cryo_migrate_send_result(c->t, verdict < 0 ? verdict : 0, "preflight", verdict < 0 ? why : "ready", 0, err);
	if (r < 0)
		return r;
	if (verdict < 0) {
		/* the source knows: no abort frame for it */
		c->peer_failed = true;
		return cryo_error_setx(err, -verdict, "refused: %s", why[0] ? why : strerror(-verdict));
	}
	if (c->dry_run)
		c->ph.step = NULL;
	return 0;
}

static int rstep_stage(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	_cleanup_free_ char *parent = NULL;
	_cleanup_close_ int rfd = -1;
	int r;

	if (asprintf(&parent, "%s/" CRYO_MIGRATE_IN_DIR, c->o->root) < 0 ||
	    asprintf(&c->in_rel, CRYO_MIGRATE_IN_DIR "/%s", c->id) < 0 ||
	    asprintf(&c->in_dir, "%s/%s", c->o->root, c->in_rel) < 0 ||
	    asprintf(&c->img_dir, "%s/img", c->in_dir) < 0)
		return cryo_error_set(err, ENOMEM, "staging dir");
	r = cryo_mkdir_p(parent, 0700);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", parent);
	rfd = open(c->o->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return cryo_error_set(err, errno, "open `%s`", c->o->root);
	/* a leftover of a receive that was killed: the name is cryo's own */
	(void)cryo_rm_rf_at(rfd, c->in_rel);
	if (mkdirat(rfd, c->in_rel, 0700) < 0)
		return cryo_error_set(err, errno, "create `%s`", c->in_dir);
	c->staged = true;
	r = cryo_migrate_hold_dir(c->o->root, c->id, "migrate-in", c->in_dir, &c->in_hold, err);
	if (r < 0)
		return r;
	c->in_fd = openat(rfd, c->in_rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c->in_fd < 0)
		return cryo_error_set(err, errno, "open `%s`", c->in_dir);
	return 0;
}

static void rundo_stage(void *ctx)
{
	struct rctx *c = ctx;

	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = -1;
	if (c->round_fd >= 0)
		close(c->round_fd);
	c->round_fd = -1;
	if (c->staged)
		(void)cryo_migrate_rm_under_root(c->o->root, c->in_rel);
	c->staged = false;
	cryo_migrate_release_dir(&c->in_hold, c->id);
}

/* A file name from the peer: one plain component, nothing hidden. */
static bool name_ok(const char *n)
{
	const char *p;

	if (!n[0] || n[0] == '.' || strlen(n) > CRYO_MIGRATE_NAME_MAX)
		return false;
	for (p = n; *p; p++)
		if (*p == '/' || (unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			return false;
	return true;
}

static void known_clear(struct rctx *c)
{
	size_t i;

	for (i = 0; i < c->n_known; i++)
		free(c->known[i].name);
	free(c->known);
	c->known = NULL;
	c->n_known = 0;
	for (i = 0; i < c->n_replaced; i++)
		free(c->replaced[i]);
	free(c->replaced);
	c->replaced = NULL;
	c->n_replaced = 0;
}

/*
 * A file of this round sent again (the source's copy changed after it
 * went, while CRIU dumped): only one that came before, and once, so the
 * round stays bounded. Its entry is what the new bytes replace.
 */
static int replace_target(struct rctx *c, const char *name, struct cryo_known_digest **ret, struct cryo_error *err)
{
	struct cryo_known_digest *k = NULL;
	char **v;
	size_t i;

	for (i = 0; i < c->n_known && !k; i++)
		if (strcmp(c->known[i].name, name) == 0)
			k = &c->known[i];
	if (!k)
		return cryo_error_setx(err, EBADMSG, "the source replaced `%s`, which it had not sent", name);
	for (i = 0; i < c->n_replaced; i++)
		if (strcmp(c->replaced[i], name) == 0)
			return cryo_error_setx(err, EBADMSG, "the source sent `%s` a third time", name);
	v = realloc(c->replaced, (c->n_replaced + 1) * sizeof(*v));
	if (!v)
		return cryo_error_set(err, ENOMEM, "receive `%s`", name);
	c->replaced = v;
	v[c->n_replaced] = strdup(name);
	if (!v[c->n_replaced])
		return cryo_error_set(err, ENOMEM, "receive `%s`", name);
	c->n_replaced++;
	*ret = k;
	return 0;
}

/*
 * Each file is hashed as it arrives (the bytes written are the bytes
 * hashed; the staging dir is ours alone): the verify then compares
 * digests with the manifest instead of reading the image back.
 */
static int receive_file(struct rctx *c, const Cryo__MigrateFile *fm, uint64_t *got, uint64_t *budget,
			struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_(cryo_hash_freep) struct cryo_hash *h = NULL;
	struct cryo_known_digest *k, *old = NULL;
	bool growing = fm->has_growing && fm->growing;
	uint64_t left = fm->size, size = 0;
	int r;

	/* `parent` is CRIU's link to the previous round: ours to make, never the peer's */
	if (!name_ok(fm->name) || strcmp(fm->name, "parent") == 0)
		return cryo_error_setx(err, EBADMSG, "the source sent a bad file name");
	if (fm->has_replace && fm->replace) {
		r = replace_target(c, fm->name, &old, err);
		if (r < 0)
			return r;
		/* its old bytes go: they count no more */
		*budget += old->size;
	}
	/* a growing file (its size to come) counts against the budget chunk by chunk */
	if (growing && (fm->size || old || fm->round))
		return cryo_error_setx(err, EBADMSG, "`%s`: a growing file must be new, of the final dump, of size 0",
				       fm->name);
	if (fm->size > *budget)
		return cryo_error_setx(err, ENOSPC, "file `%s` of %" PRIu64 " bytes: not that much space here", fm->name,
				       fm->size);
	*budget -= fm->size;
	/* O_EXCL: a name sent twice (not as a replace) is refused, nothing is overwritten */
	if (old)
		fd = openat(c->round_fd, fm->name, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
	else
		fd = openat(c->round_fd, fm->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		return cryo_error_setx(err, EBADMSG, "the source sent `%s` twice", fm->name);
	if (fd < 0)
		return cryo_error_set(err, errno, "create `%s`", fm->name);
	/* files per round are bounded by the caller (CRYO_MANIFEST_MAX_FILES); old stays where it is */
	if (!old) {
		k = realloc(c->known, (c->n_known + 1) * sizeof(*c->known));
		if (!k)
			return cryo_error_set(err, ENOMEM, "receive `%s`", fm->name);
		c->known = k;
	}
	r = cryo_hash_new(&h, c->digest, err);
	if (r < 0)
		return r;
	while (left > 0 || growing) {
		Cryo__MigrateFrame *f = NULL;
		const uint8_t *p;
		bool last;
		size_t n;

		r = cryo_migrate_recv_expect(c->t, rtimeout(c), CRYO__MIGRATE_FRAME__BODY_CHUNK, &c->res->peer_phase, &f, err);
		if (r < 0) {
			if (c->res->peer_phase)
				c->peer_failed = true;
			return r;
		}
		n = f->chunk->data.len;
		last = f->chunk->has_end && f->chunk->end;
		if (growing) {
			/* chunks until the one that ends it (maybe empty), within the budget */
			if ((n == 0 && !last) || n > *budget) {
				cryo_migrate_frame_free(f);
				return n ? cryo_error_setx(err, ENOSPC, "file `%s`: more than %" PRIu64 " bytes: not that much space here",
							   fm->name, size + *budget)
					 : cryo_error_setx(err, EBADMSG, "`%s`: an empty chunk", fm->name);
			}
			*budget -= n;
			growing = !last;
		} else if (n == 0 || n > left || last) {
			cryo_migrate_frame_free(f);
			return cryo_error_setx(err, EBADMSG, "`%s`: %s", fm->name,
					       last ? "the end of a file that is not growing" : "more data than announced");
		} else {
			left -= n;
		}
		p = f->chunk->data.data;
		size += n;
		*got += n;
		r = cryo_hash_update(h, p, n, err);
		if (r < 0) {
			cryo_migrate_frame_free(f);
			return r;
		}
		while (n > 0) {
			ssize_t w = write(fd, p, n);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				r = cryo_error_set(err, errno, "write `%s`", fm->name);
				cryo_migrate_frame_free(f);
				return r;
			}
			p += w;
			n -= (size_t)w;
		}
		cryo_migrate_frame_free(f);
	}
	if (old) {
		/* what the verify compares now: the new bytes */
		old->size = size;
		old->alg = c->digest;
		return cryo_hash_final(h, old->sha, err);
	}
	k = &c->known[c->n_known];
	k->alg = c->digest;
	r = cryo_hash_final(h, k->sha, err);
	if (r < 0)
		return r;
	k->name = strdup(fm->name);
	if (!k->name)
		return cryo_error_set(err, ENOMEM, "receive `%s`", fm->name);
	k->size = size;
	c->n_known++;
	return 0;
}

/*
 * The first file of a round opens its dir: pre-copy rounds come in
 * order (pre1, pre2, ...), the final dump (round 0) last; from the
 * second on, each links to the round before (CRIU's `parent`), a link
 * this host makes and the peer never names.
 */
static int enter_round(struct rctx *c, uint32_t round, struct cryo_error *err)
{
	char name[32], target[32];
	_cleanup_close_ int fd = -1;

	if (c->round_fd >= 0) {
		if (round != c->round)
			return cryo_error_setx(err, EBADMSG, "a file of round %u in round %u", round, c->round);
		return 0;
	}
	if (round && (round != c->rounds_done + 1 || round > CRYO_MIGRATE_MAX_ROUNDS))
		return cryo_error_setx(err, EBADMSG, "pre-copy round %u after round %u (at most %u)", round,
				       c->rounds_done, CRYO_MIGRATE_MAX_ROUNDS);
	if (round)
		snprintf(name, sizeof(name), "pre%u", round);
	else
		snprintf(name, sizeof(name), "img");
	if (mkdirat(c->in_fd, name, 0700) < 0)
		return cryo_error_set(err, errno, "create `%s`", name);
	fd = openat(c->in_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", name);
	if (c->rounds_done) {
		snprintf(target, sizeof(target), "../pre%u", c->rounds_done);
		if (symlinkat(target, fd, "parent") < 0)
			return cryo_error_set(err, errno, "link `%s` to its parent", name);
	}
	c->round_fd = TAKE_FD(fd);
	c->round = round;
	return 0;
}

static int check_signed(const struct rctx *c, struct cryo_error *err)
{
	if (!c->o->verify_key && !c->o->allow_unsigned)
		return cryo_error_setx(err, EPERM, "an image from another host must be signed: pass --verify-key (or --allow-unsigned)");
	return 0;
}

/* A pre-copy round is checked as it arrives, like the final dump: signed, whole, ours, a pre-dump. */
static int verify_round(struct rctx *c, struct cryo_error *err)
{
	Cryo__Manifest *m = NULL;
	int r;

	/* the rounds before were checked as they came: of them, only their signatures */
	r = check_signed(c, err);
	if (r >= 0 && c->o->verify_key)
		r = cryo_image_verify_sigs_at(c->round_fd, c->o->verify_key, err);
	if (r >= 0)
		r = cryo_manifest_read_at(c->round_fd, &m, err);
	if (r >= 0) {
		cryo_known_digests_sort(c->known, c->n_known);
		r = cryo_manifest_verify_known_at(c->round_fd, m, c->known, c->n_known, err);
	}
	if (r >= 0 && (!m->container_id || strcmp(m->container_id, c->id) != 0))
		r = cryo_error_setx(err, EBADMSG, "the image is of container `%s`, not `%s`",
				    m->container_id ? m->container_id : "", c->id);
	if (r >= 0 && !(m->criu && m->criu->has_pre_dump && m->criu->pre_dump))
		r = cryo_error_setx(err, EBADMSG, "it is not a pre-dump");
	cryo_manifest_free(m);
	return r < 0 ? cryo_error_prefix(err, "pre-copy round %u", c->round) : 0;
}

/* 1: the final dump is in; 0: a pre-copy round is. */
static int end_round(struct rctx *c, const Cryo__MigrateDone *d, struct cryo_error *err)
{
	bool final = d->has_final && d->final;
	int r = 0;

	if (c->round_fd < 0 || d->round != c->round)
		return cryo_error_setx(err, EBADMSG, "the end of round %u, which was not sent", d->round);
	if (final != (c->round == 0))
		return cryo_error_setx(err, EBADMSG, "round %u ended as %s", d->round,
				       final ? "the final dump" : "a pre-copy round");
	if (!final) {
		r = verify_round(c, err);
		known_clear(c);
	}
	close(c->round_fd);
	c->round_fd = -1;
	if (r < 0)
		return r;
	if (final)
		return 1;
	c->rounds_done++;
	return 0;
}

/*
 * The final dump's rootfs snapshot is in (it comes first, while CRIU
 * still dumps there): extracted into the bundle now, not in the
 * downtime's restore (receive-bundle.h).
 */
static void rootfs_ahead(struct rctx *c, const char *name)
{
	if (c->round == 0 && strcmp(name, CRYO_SNAPSHOT_TAR) == 0)
		cryo_receive_bundle_ahead(&c->b, c->o->root, c->o->bundle_dir, c->id, c->round_fd, name);
}

static int rstep_transfer(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	uint64_t got = 0, budget, files = 0;
	int64_t last = 0;
	int r;

	budget = free_bytes_at(c->in_dir);
	budget = budget > FREE_RESERVE_BYTES ? budget - FREE_RESERVE_BYTES : 0;
	for (;;) {
		Cryo__MigrateFrame *f = NULL;

		r = cryo_transport_recv(c->t, rtimeout(c), &f, err);
		if (r < 0)
			return r;
		switch (f->body_case) {
		case CRYO__MIGRATE_FRAME__BODY_FILE:
			if (++files > CRYO_MANIFEST_MAX_FILES) {
				cryo_migrate_frame_free(f);
				return cryo_error_setx(err, EBADMSG, "more than %u files", CRYO_MANIFEST_MAX_FILES);
			}
			if (!c->final_at && !(f->file->has_round && f->file->round))
				c->final_at = cryo_now_us();
			r = enter_round(c, f->file->has_round ? f->file->round : 0, err);
			/* sent again: what was extracted of it is old */
			if (r >= 0 && c->b.pre.file && strcmp(c->b.pre.file, f->file->name) == 0)
				cryo_snapshot_pre_cancel(&c->b.pre);
			if (r >= 0)
				r = receive_file(c, f->file, &got, &budget, err);
			if (r >= 0)
				rootfs_ahead(c, f->file->name);
			break;
		case CRYO__MIGRATE_FRAME__BODY_DONE:
			r = end_round(c, f->done, err);
			if (r > 0 && c->final_at)
				cryo_step_timings_add(&c->timings, "receive", "final-dump", c->final_at,
						      cryo_now_us() - c->final_at);
			if (r > 0) {
				cryo_migrate_frame_free(f);
				c->res->precopy_rounds = c->rounds_done;
				cryo_migrate_phase_progress(&c->ph, got, got);
				return 0;
			}
			break;
		case CRYO__MIGRATE_FRAME__BODY_RESULT:
			c->peer_failed = true;
			if (f->result->phase && f->result->phase[0])
				c->res->peer_phase = strdup(f->result->phase);
			r = cryo_error_setx(err, f->result->status < 0 && f->result->status > -4096 ? -f->result->status : EPROTO,
					    "the source failed at %s: %s", f->result->phase ? f->result->phase : "?",
					    f->result->message ? f->result->message : "");
			break;
		default:
			r = cryo_error_setx(err, EBADMSG, "%s sent an unexpected frame (kind %d)", c->t->peer,
					    (int)f->body_case);
			break;
		}
		cryo_migrate_frame_free(f);
		if (r < 0)
			return r;
		if (cryo_now_us() - last > CRYO_MIGRATE_PROGRESS_EVERY_US) {
			last = cryo_now_us();
			cryo_migrate_phase_progress(&c->ph, got, 0);
		}
	}
}

/*
 * This host's rules for a config.json that came from elsewhere: nothing
 * in it may name or reach a host path.
 */
static int check_foreign_spec(const struct cryo_spec *s, struct cryo_error *err)
{
	size_t i;

	if (!s->root_path || s->root_path[0] == '/' || strstr(s->root_path, ".."))
		return cryo_error_setx(err, EPERM, "root.path `%s` is not a plain path inside the bundle",
				       s->root_path ? s->root_path : "");
	for (i = 0; i < _CRYO_HOOK_KIND_MAX; i++)
		if (s->hooks.n[i])
			return cryo_error_setx(err, EPERM, "the config has hooks (host programs): refused");
	for (i = 0; i < s->n_mounts; i++)
		if (s->mounts[i].bind)
			return cryo_error_setx(err, EPERM, "the config bind-mounts `%s` (a host path): refused",
					       s->mounts[i].source ? s->mounts[i].source : "");
	for (i = 0; i < _CRYO_NS_MAX; i++)
		if (s->namespaces[i].path)
			return cryo_error_setx(err, EPERM, "the config joins the namespace `%s` (a host path): refused",
					       s->namespaces[i].path);
	if (s->n_devices)
		return cryo_error_setx(err, EPERM, "the config creates %zu device nodes: refused", s->n_devices);
	if (s->cgroups_path && strstr(s->cgroups_path, ".."))
		return cryo_error_setx(err, EPERM, "cgroupsPath `%s` escapes: refused", s->cgroups_path);
	return 0;
}

static int rstep_verify(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	_cleanup_close_ int fd = -1;
	int r;

	/* from another machine: authenticated before anything is read (sign.h) */
	r = check_signed(c, err);
	if (r < 0)
		return r;
	/*
	 * Once, here; restore takes it as verified (the staging dir is ours
	 * alone). The pre-copy rounds were checked as they came: hashing them
	 * again now would add to the downtime.
	 */
	fd = open(c->img_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", c->img_dir);
	if (c->o->verify_key) {
		r = cryo_image_verify_sigs_at(fd, c->o->verify_key, err);
		if (r < 0)
			return r;
	}
	/* every file against the manifest's digest: those taken as they arrived */
	r = cryo_manifest_read_at(fd, &c->m, err);
	if (r >= 0) {
		cryo_known_digests_sort(c->known, c->n_known);
		r = cryo_manifest_verify_known_at(fd, c->m, c->known, c->n_known, err);
	}
	known_clear(c);
	if (r < 0)
		return cryo_error_prefix(err, "image `%s`", c->img_dir);
	if (!c->m->container_id || strcmp(c->m->container_id, c->id) != 0)
		return cryo_error_setx(err, EBADMSG, "the image is of container `%s`, not `%s`",
				       c->m->container_id ? c->m->container_id : "", c->id);
	if (c->m->criu && c->m->criu->has_pre_dump && c->m->criu->pre_dump)
		return cryo_error_setx(err, EINVAL, "the image is a pre-dump");
	if (!c->m->config_json)
		return cryo_error_setx(err, EBADMSG, "the image has no config.json");
	r = cryo_spec_parse(c->m->config_json, strlen(c->m->config_json), &c->spec, err);
	if (r < 0)
		return cryo_error_prefix(err, "the image's config.json");
	r = check_foreign_spec(c->spec, err);
	if (r < 0)
		return r;
	/* --lazy: CRIU's daemon may read the image now; it gets ready while the bundle and rootfs are made */
	if (c->lazy)
		return cryo_lazy_dest_begin(&c->lz, c->t, c->in_dir, c->img_dir, err);
	return 0;
}

/* The bundle this host restores from: its own dir, config.json, an empty rootfs. */
static int rstep_bundle(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	_cleanup_free_ char *rootfs = NULL;
	int r;

	if (asprintf(&rootfs, "%s/%s/%s", c->o->bundle_dir, c->id, c->spec->root_path) < 0)
		return cryo_error_set(err, ENOMEM, "bundle");
	r = cryo_receive_bundle_make(&c->b, c->o->root, c->o->bundle_dir, c->id, err);
	if (r < 0)
		return r;
	/* not synced, as the rootfs it comes with is not: the restored container lives and dies with this boot */
	r = cryo_write_new_file_unsynced_at(c->b.fd, "config.json", c->m->config_json, strlen(c->m->config_json), 0600);
	if (r < 0)
		return cryo_error_set(err, -r, "write `%s/config.json`", c->b.path);
	/* a root.path through our name is the restore's to extract, not ours */
	if (strstr(c->spec->root_path, CRYO_BUNDLE_ROOTFS_AHEAD))
		cryo_snapshot_pre_cancel(&c->b.pre);
	r = cryo_mkdir_p(rootfs, 0755);
	if (r < 0)
		return cryo_error_set(err, -r, "create `%s`", rootfs);
	return 0;
}

static void rundo_bundle(void *ctx)
{
	struct rctx *c = ctx;

	cryo_receive_bundle_remove(&c->b, c->o->bundle_dir, c->id);
}

static int freeze_restored(struct rctx *c, bool freeze, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	struct cryo_freezer *fz = NULL;
	int r;

	r = cryo_state_load(c->o->root, c->id, &st, err);
	if (r < 0)
		return r;
	r = cryo_freezer_open_for(st->freezer_backend, st->cgroup_v2, st->cgroup_v1_freezer, &fz, err);
	if (r >= 0)
		r = freeze ? cryo_freezer_freeze(fz, CRYO_MIGRATE_FREEZE_TIMEOUT_MS, 0, err)
			   : cryo_freezer_thaw(fz, CRYO_MIGRATE_THAW_TIMEOUT_MS, 0, err);
	cryo_freezer_close(fz);
	cryo_state_free(st);
	return r;
}

static void release_restored_hold(struct rctx *c)
{
	struct cryo_error e = CRYO_ERROR_INIT;

	if (c->kill_hold && cryo_hold_release(c->kill_hold, &e) < 0)
		cryo_error_warn_clear(&e, "receive `%s`: release the hold of the restored copy", c->id);
	c->kill_hold = NULL;
}

/*
 * Restore from the staged image into our bundle, and keep it frozen
 * until the source commits: it must not run here while the source may
 * still resume. Restore has CRIU leave the tasks stopped and freezes the
 * cgroup before it lets them go (ro.paused): not one instruction of
 * theirs runs here before the commit. And until the commit the copy must
 * not outlive this receive: restore's kill hold, taken on the cgroup
 * before CRIU makes a task, is handed to us (ro.ret_kill_hold): its
 * watchdog kills them the moment we die (or `cryo recover` does), so a
 * receive killed at any point before the commit leaves no copy behind
 * while the source resumes.
 */
static int rstep_restore(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	struct cryo_restore_opts ro = {
		.root = c->o->root,
		.id = c->id,
		.image_path = c->img_dir,
		.bundle = c->b.path,
		.detach = true,
		.paused = true,
		.verify_key = c->o->verify_key,
		.preverified = true,
		.ret_kill_hold = &c->kill_hold,
		.rootfs_pre = &c->b.pre,
	};
	struct cryo_step_timings inner = { 0 };
	pid_t pid = 0;
	int r;

	if (c->lazy) {
		/* it runs at once, pulling its memory (kept paused only if it was paused) */
		ro.work_path = c->lz.work;
		ro.lazy_pages = true;
		ro.lazy_wait = cryo_lazy_dest_restore_wait;
		ro.lazy_ready = cryo_lazy_dest_ready;
		ro.lazy_wait_userdata = &c->lz;
		ro.paused = c->was_paused;
	}
	if (c->m->criu) {
		ro.criu.tcp_established = c->m->criu->tcp_established;
		ro.criu.ext_unix_sk = c->m->criu->ext_unix_sk;
		ro.criu.shell_job = c->m->criu->shell_job;
		ro.criu.file_locks = c->m->criu->file_locks;
	}
	/*
	 * The source waits meanwhile. With --lazy too: its tasks stay stopped
	 * until the restore's end, and nothing faults a page in before.
	 */
	(void)cryo_transport_keepalive_start(c->t, "restore", NULL);
	ro.ret_timings = &inner;
	r = cryo_restore(&ro, &pid, NULL, err);
	cryo_transport_keepalive_stop(c->t);
	/* the rootfs extracted ahead: from its start until restore took it, of which restore waited */
	if (c->b.pre.taken_us) {
		cryo_step_timings_add(&c->timings, "receive", "rootfs-ahead", c->b.pre.started_us,
				      c->b.pre.taken_us - c->b.pre.started_us);
		cryo_debug("receive `%s`: the rootfs was extracted ahead; restore waited %.1f ms for it", c->id,
			   (double)c->b.pre.waited_us / 1000.0);
	}
	cryo_step_timings_append(&c->timings, &inner);
	if (r < 0 && c->lz.restore_peer_failed) {
		/* the source's failure report came while CRIU restored (--lazy) */
		c->peer_failed = true;
		c->res->peer_phase = TAKE_PTR(c->lz.restore_peer_phase);
	}
	if (r < 0)
		return r;
	c->restored = true;
	return cryo_migrate_send_result(c->t, 0, "restore", c->lazy ? "restored, running" : "restored, frozen", 0, err);
}

/* --lazy: relay its pages until the source commits (every page served) */
static int rstep_pages(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;

	if (!c->lazy)
		return 0;
	return cryo_lazy_dest_pull(&c->lz, c->t, rtimeout(c), &c->peer_failed, &c->res->peer_phase, err);
}

static void rundo_restore(void *ctx)
{
	struct rctx *c = ctx;
	struct cryo_error e = CRYO_ERROR_INIT;

	if (!c->restored || c->committed) {
		cryo_lazy_dest_done(&c->lz);
		return;
	}
	/* we delete it ourselves: the watchdog need not */
	release_restored_hold(c);
	if (cryo_container_delete(c->o->root, c->id, true, &e) < 0)
		cryo_error_warn_clear(&e, "receive `%s`: undo: delete the restored container", c->id);
	cryo_lazy_dest_done(&c->lz);
	c->lazy_copy_stopped = c->lazy;
	c->restored = false;
}

/*
 * The state says it runs, and what its migration cost (annotations are
 * strings, as OCI has them). Not synced: should this host crash, the
 * container is gone with it (cryo_state_save_ext), and the source waits
 * for our confirmation meanwhile.
 */
static int record_downtime(struct rctx *c, uint64_t downtime_us, struct cryo_error *err)
{
	struct cryo_state *st = NULL;
	_cleanup_free_ char *steps = cryo_migrate_timeline_json(&c->res->steps);
	char us[24];
	int r;

	r = cryo_state_load(c->o->root, c->id, &st, err);
	if (r < 0)
		return r;
	if (!st->annotations)
		st->annotations = json_object_new_object();
	snprintf(us, sizeof(us), "%" PRIu64, downtime_us);
	if (st->annotations) {
		json_object_object_add(st->annotations, CRYO_MIGRATE_DOWNTIME_ANNOTATION, json_object_new_string(us));
		if (steps)
			json_object_object_add(st->annotations, CRYO_MIGRATE_STEPS_ANNOTATION, json_object_new_string(steps));
	}
	st->status = c->was_paused ? CRYO_STATUS_PAUSED : CRYO_STATUS_RUNNING;
	r = cryo_state_save_ext(c->o->root, st, false, err);
	cryo_state_free(st);
	return r;
}

/* The commit's result: running (or paused), the downtime, our steps of it. */
static int send_committed(struct rctx *c, uint64_t downtime, struct cryo_error *err)
{
	Cryo__MigrateFrame fr = CRYO__MIGRATE_FRAME__INIT;
	Cryo__MigrateResult res = CRYO__MIGRATE_RESULT__INIT;
	int r;

	res.status = 0;
	res.phase = (char *)"commit";
	res.message = (char *)(c->was_paused ? "paused" : "running");
	res.has_downtime_usec = 1;
	res.downtime_usec = downtime;
	if (cryo_migrate_timeline_to_result(&c->res->steps, &res) < 0) {
		/* the report is a help: the result goes without it */
		cryo_migrate_timeline_result_free(&res);
	}
	fr.body_case = CRYO__MIGRATE_FRAME__BODY_RESULT;
	fr.result = &res;
	r = cryo_transport_send(c->t, &fr, err);
	cryo_migrate_timeline_result_free(&res);
	return r;
}

/* The source's go (a plain migration: the next frame; --lazy: it came in the page stream). */
static int recv_commit(struct rctx *c, struct cryo_error *err)
{
	Cryo__MigrateFrame *f = NULL;
	int r;

	if (c->lazy) {
		c->commit_at = cryo_now_us();
		c->frozen_usec = c->lz.frozen_usec;
		c->since_freeze_usec = c->lz.since_freeze_usec;
		return 0;
	}
	r = cryo_migrate_recv_expect(c->t, rtimeout(c), CRYO__MIGRATE_FRAME__BODY_COMMIT, &c->res->peer_phase, &f, err);
	if (r < 0) {
		if (c->res->peer_phase)
			c->peer_failed = true;
		return r;
	}
	c->commit_at = cryo_now_us();
	if (!f->commit->go) {
		cryo_migrate_frame_free(f);
		c->peer_failed = true;
		return cryo_error_setx(err, ECANCELED, "the source called it off");
	}
	c->frozen_usec = f->commit->frozen_usec;
	c->since_freeze_usec = f->commit->has_since_freeze_usec ? f->commit->since_freeze_usec : c->frozen_usec;
	cryo_migrate_frame_free(f);
	return 0;
}

static int rstep_commit(void *ctx, struct cryo_error *err)
{
	struct rctx *c = ctx;
	uint64_t downtime;
	int r;

	r = recv_commit(c, err);
	if (r < 0)
		return r;
	/* ours now: whatever happens next, it stays here */
	c->committed = true;
	release_restored_hold(c);
	cryo_receive_bundle_keep(&c->b, c->id);
	if (!c->was_paused) {
		r = freeze_restored(c, false, err);
		if (r < 0) {
			cryo_warn("receive `%s`: committed, but thawing failed: %s (left paused)", c->id, err->msg);
			cryo_error_clear(err);
		}
	}
	downtime = c->frozen_usec + (c->lazy ? 0 : (uint64_t)(cryo_now_us() - c->commit_at));
	c->res->downtime_us = downtime;
	/* our steps on the source's time line: it froze since_freeze before its commit came */
	cryo_step_timings_add(&c->timings, "receive", "commit", c->commit_at, cryo_now_us() - c->commit_at);
	cryo_migrate_timeline_add(&c->res->steps, true, &c->timings, c->commit_at - (int64_t)c->since_freeze_usec, 0);
	r = record_downtime(c, downtime, err);
	if (r < 0) {
		cryo_warn("receive `%s`: %s", c->id, err->msg);
		cryo_error_clear(err);
	}
	r = send_committed(c, downtime, err);
	if (r < 0) {
		/* the source will call it in doubt and keep its copy paused: ours runs */
		cryo_warn("receive `%s`: running, but the confirmation did not reach the source: %s", c->id, err->msg);
		cryo_error_clear(err);
	}
	return 0;
}

/* what came before the bundle step may have made the bundle too (rootfs_ahead) */
static void rundo_received(void *ctx)
{
	rundo_bundle(ctx);
	rundo_stage(ctx);
}

static const struct cryo_step receive_steps[] = {
	{ "accept", rstep_accept, rundo_accept },
	{ "preflight", rstep_preflight, NULL },
	{ "stage", rstep_stage, rundo_received },
	{ "transfer", rstep_transfer, NULL },
	{ "verify", rstep_verify, NULL },
	{ "bundle", rstep_bundle, rundo_bundle },
	{ "restore", rstep_restore, rundo_restore },
	{ "pages", rstep_pages, NULL },
	{ "commit", rstep_commit, NULL },
};

void cryo_receive_result_done(struct cryo_receive_result *r)
{
	free(r->id);
	free(r->peer_phase);
	r->id = r->peer_phase = NULL;
}

static void receive_failed(void *ctx, size_t failed, struct cryo_error *err)
{
	struct rctx *c = ctx;

	c->res->failed_phase = receive_steps[failed].name;
	c->fail.status = err->status;
	c->fail.msg = err->msg ? strdup(err->msg) : NULL;
}

const struct cryo_step_table cryo_receive_step_table = {
	.name = "receive",
	.steps = receive_steps,
	.n_steps = ARRAY_SIZE(receive_steps),
	.faults_qualified = true,
	.on_step = cryo_migrate_phase_on_step,
	.finished = cryo_migrate_phase_finished,
	.on_fail = receive_failed,
};

int cryo_receive(const struct cryo_receive_opts *o, struct cryo_receive_result *res, struct cryo_error *err)
{
	struct rctx c = {
		.ph = { .side = "receive", .progress = o->progress, .userdata = o->userdata },
		.o = o,
		.res = res,
		.in_fd = -1,
		.round_fd = -1,
		.b = CRYO_RECEIVE_BUNDLE_INIT,
	};
	int r;

	memset(res, 0, sizeof(*res));
	cryo_lazy_dest_init(&c.lz);
	if (!o->bundle_dir || o->bundle_dir[0] != '/')
		return cryo_error_setx(err, EINVAL, "receive: --bundle-dir must be an absolute path");
	c.timings.t0 = cryo_now_us();
	r = cryo_step_run(&cryo_receive_step_table, &c, &c.timings, err);
	if (r >= 0) {
		/* the image served its purpose; CRIU's restore log is in the state dir */
		rundo_stage(&c);
		cryo_transport_close(c.t);
		c.t = NULL;
	}
	if (c.in_fd >= 0)
		close(c.in_fd);
	if (c.round_fd >= 0)
		close(c.round_fd);
	cryo_lazy_dest_done(&c.lz);
	cryo_transport_close(c.t);
	free(c.id);
	free(c.in_rel);
	free(c.in_dir);
	free(c.img_dir);
	cryo_receive_bundle_free(&c.b);
	known_clear(&c);
	cryo_manifest_free(c.m);
	cryo_spec_free(c.spec);
	cryo_error_clear(&c.fail);
	if (r < 0)
		return cryo_error_prefix(err, "receive%s%s%s", res->id ? " `" : "", res->id ? res->id : "",
					 res->id ? "`" : "");
	return 0;
}

