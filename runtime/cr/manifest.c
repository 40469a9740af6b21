// SPDX-License-Identifier: GPL-2.0-only
/*
 * On disk a manifest is
 *
 *   "CRYOMAN1" (8 bytes) | SHA-256 of the payload (32 bytes) | payload
 *
 * where the payload is the packed Cryo__Manifest. The protobuf alone
 * would accept most flipped bytes inside a string (config.json, a file
 * name), so the manifest carries its own digest; the magic tells a cryo
 * manifest from anything else at a glance. Compatibility lives in the
 * payload's format_version, not in the framing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "digest.h"
#include "image.h"
#include "imghash.h"
#include "manifest.h"
#include "util.h"

#define MANIFEST_MAGIC "CRYOMAN1"
#define MANIFEST_MAGIC_LEN 8
#define MANIFEST_HEADER_LEN (MANIFEST_MAGIC_LEN + CRYO_DIGEST_LEN)
#define MANIFEST_TMP_NAME ".manifest.pb.tmp"
#define MANIFEST_SIG_TMP_NAME ".manifest.sig.tmp"

/* cryo's own files in an image dir, never listed in (or by) a manifest */
static bool reserved_name(const char *name)
{
	return strcmp(name, CRYO_MANIFEST_NAME) == 0 || strcmp(name, MANIFEST_TMP_NAME) == 0 ||
	       strcmp(name, CRYO_MANIFEST_SIG_NAME) == 0 || strcmp(name, MANIFEST_SIG_TMP_NAME) == 0;
}

void cryo_manifest_free(Cryo__Manifest *m)
{
	if (m)
		cryo__manifest__free_unpacked(m, NULL);
}

static void manifest_freep(Cryo__Manifest **m)
{
	cryo_manifest_free(*m);
}

int cryo_manifest_set_string(char **field, const char *s)
{
	char *c = NULL;

	if (s) {
		c = strdup(s);
		if (!c)
			return -ENOMEM;
	}
	free(*field);
	*field = c;
	return 0;
}

enum cryo_digest_alg cryo_manifest_digest(const Cryo__Manifest *m)
{
	/* check_manifest() let only known values through */
	return m->has_digest ? (enum cryo_digest_alg)m->digest : CRYO_DIGEST_SHA256;
}

void cryo_manifest_set_digest(Cryo__Manifest *m, enum cryo_digest_alg alg)
{
	/* a SHA-256 image stays readable by a cryo that knows only version 1 */
	m->has_digest = alg != CRYO_DIGEST_SHA256;
	m->digest = (Cryo__DigestAlg)alg;
	m->format_version = alg == CRYO_DIGEST_SHA256 ? 1 : 2;
}

int cryo_manifest_new(const char *id, const char *config_json, Cryo__Manifest **ret, struct cryo_error *err)
{
	_cleanup_(manifest_freep) Cryo__Manifest *m = NULL;

	m = malloc(sizeof(*m));
	if (!m)
		return cryo_error_set(err, ENOMEM, "manifest");
	cryo__manifest__init(m);
	cryo_manifest_set_digest(m, CRYO_DIGEST_DEFAULT);
	if (cryo_manifest_set_string(&m->container_id, id) < 0 ||
	    cryo_manifest_set_string(&m->config_json, config_json ? config_json : "") < 0)
		return cryo_error_set(err, ENOMEM, "manifest");
	*ret = TAKE_PTR(m);
	return 0;
}

int cryo_manifest_add_timing(Cryo__Manifest *m, const char *step, uint64_t start_usec, uint64_t usec)
{
	Cryo__StepTiming **v, *t;

	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	cryo__step_timing__init(t);
	t->step = strdup(step);
	if (!t->step) {
		free(t);
		return -ENOMEM;
	}
	t->usec = usec;
	t->has_start_usec = 1;
	t->start_usec = start_usec;
	v = realloc(m->timings, (m->n_timings + 1) * sizeof(Cryo__StepTiming *));
	if (!v) {
		cryo__step_timing__free_unpacked(t, NULL);
		return -ENOMEM;
	}
	m->timings = v;
	m->timings[m->n_timings++] = t;
	return 0;
}

/* One path component, not hidden tricks: no `/`, not `.`/`..`, bounded. */
static bool valid_name(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n <= 255 && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strv_freep(char ***v)
{
	char **p;

	if (!*v)
		return;
	for (p = *v; *p; p++)
		free(*p);
	free(*v);
}

/*
 * The names in directory dirfd, sorted, without `.`, `..` and the
 * manifest's own files. Bounded by CRYO_MANIFEST_MAX_FILES.
 */
static int list_dir(int dirfd, char ***ret, size_t *ret_n, struct cryo_error *err)
{
	_cleanup_(strv_freep) char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	d = cryo_opendir_at(dirfd, ".");
	if (!d)
		return cryo_error_set(err, errno, "open image dir");
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || reserved_name(de->d_name))
			continue;
		if (n >= CRYO_MANIFEST_MAX_FILES) {
			closedir(d);
			return cryo_error_setx(err, E2BIG, "image dir has more than %u files", CRYO_MANIFEST_MAX_FILES);
		}
		if (n + 2 > cap) {
			char **nv;

			cap = cap ? cap * 2 : 64;
			nv = realloc(names, cap * sizeof(*nv));
			if (!nv) {
				closedir(d);
				return cryo_error_set(err, ENOMEM, "list image dir");
			}
			names = nv;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			closedir(d);
			return cryo_error_set(err, ENOMEM, "list image dir");
		}
		names[++n] = NULL;
	}
	if (errno != 0) {
		int e = errno;

		closedir(d);
		return cryo_error_set(err, e, "read image dir");
	}
	closedir(d);
	if (!names) {
		names = calloc(1, sizeof(*names));
		if (!names)
			return cryo_error_set(err, ENOMEM, "list image dir");
	}
	qsort(names, n, sizeof(*names), cmp_strp);
	*ret = TAKE_PTR(names);
	*ret_n = n;
	return 0;
}

static int read_symlink_at(int dirfd, const char *name, char **ret, struct cryo_error *err)
{
	char buf[4096];
	ssize_t n;

	n = readlinkat(dirfd, name, buf, sizeof(buf));
	if (n < 0)
		return cryo_error_set(err, errno, "readlink `%s`", name);
	if ((size_t)n >= sizeof(buf))
		return cryo_error_setx(err, ENAMETOOLONG, "symlink `%s` is too long", name);
	buf[n] = '\0';
	*ret = strdup(buf);
	return *ret ? 0 : cryo_error_set(err, ENOMEM, "readlink");
}

/*
 * Stat one entry and start its digest record: a symlink is hashed here
 * (its target string), a regular file is left for the parallel hash
 * (*ret_is_file set, size_hint for scheduling).
 */
static int start_entry(int dirfd, const char *name, enum cryo_digest_alg alg, Cryo__FileDigest **ret,
		       bool *ret_is_file, uint64_t *ret_size_hint, struct cryo_error *err)
{
	Cryo__FileDigest *f;
	struct stat st;
	int r = 0;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return cryo_error_set(err, errno, "stat `%s`", name);
	if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
		return cryo_error_setx(err, EINVAL, "`%s` is neither a regular file nor a symlink", name);

	f = malloc(sizeof(*f));
	if (!f)
		return cryo_error_set(err, ENOMEM, "hash `%s`", name);
	cryo__file_digest__init(f);
	f->name = strdup(name);
	f->sha256.data = malloc(CRYO_DIGEST_LEN);
	if (!f->name || !f->sha256.data) {
		cryo__file_digest__free_unpacked(f, NULL);
		return cryo_error_set(err, ENOMEM, "hash `%s`", name);
	}
	f->sha256.len = CRYO_DIGEST_LEN;
	f->has_mode = 1;
	f->mode = st.st_mode & 07777;
	*ret_is_file = S_ISREG(st.st_mode);
	*ret_size_hint = (uint64_t)st.st_size;
	if (S_ISLNK(st.st_mode)) {
		r = read_symlink_at(dirfd, name, &f->symlink, err);
		if (r >= 0) {
			f->size = strlen(f->symlink);
			r = cryo_digest_buf_alg(alg, f->symlink, f->size, f->sha256.data, err);
		}
	}
	if (r < 0) {
		cryo__file_digest__free_unpacked(f, NULL);
		return r;
	}
	*ret = f;
	return 0;
}

static void file_digests_free(Cryo__FileDigest **files, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cryo__file_digest__free_unpacked(files[i], NULL);
	free(files);
}

/* The first failed job, in the jobs' order: its error becomes *err. */
static int first_job_error(struct cryo_digest_job *jobs, size_t n, struct cryo_error *err)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (jobs[i].r < 0) {
			int r = jobs[i].r;

			cryo_error_move(err, &jobs[i].err);
			return r;
		}
	return 0;
}

int cryo_manifest_hash_dir(Cryo__Manifest *m, int dirfd, struct cryo_error *err)
{
	return cryo_manifest_hash_dir_with(m, dirfd, NULL, err);
}

int cryo_manifest_hash_dir_with(Cryo__Manifest *m, int dirfd, struct cryo_imghash *cache, struct cryo_error *err)
{
	_cleanup_(strv_freep) char **names = NULL;
	_cleanup_free_ struct cryo_digest_job *jobs = NULL;
	_cleanup_free_ size_t *job_of = NULL;
	enum cryo_digest_alg alg = cryo_manifest_digest(m);
	Cryo__FileDigest **files;
	size_t n = 0, nj = 0, i;
	int r;

	r = list_dir(dirfd, &names, &n, err);
	if (r < 0)
		return r;
	files = calloc(n + 1, sizeof(Cryo__FileDigest *));
	jobs = calloc(n + 1, sizeof(*jobs));
	job_of = calloc(n + 1, sizeof(*job_of));
	if (!files || !jobs || !job_of) {
		free(files);
		return cryo_error_set(err, ENOMEM, "hash image dir");
	}
	for (i = 0; i < n; i++) {
		bool is_file = false;
		uint64_t hint = 0;

		r = start_entry(dirfd, names[i], alg, &files[i], &is_file, &hint, err);
		if (r < 0) {
			file_digests_free(files, i);
			return r;
		}
		if (is_file &&
		    cryo_imghash_lookup(cache, dirfd, files[i]->name, alg, files[i]->sha256.data, &files[i]->size))
			continue;
		if (is_file) {
			jobs[nj].name = files[i]->name;
			jobs[nj].size_hint = hint;
			job_of[nj++] = i;
		}
	}
	/* the page images dominate: hash them on every core */
	r = cryo_digest_files_at(dirfd, alg, jobs, nj, 0, err);
	if (r >= 0)
		r = first_job_error(jobs, nj, err);
	if (r < 0) {
		cryo_digest_jobs_clear(jobs, nj);
		file_digests_free(files, n);
		return r;
	}
	for (i = 0; i < nj; i++) {
		Cryo__FileDigest *f = files[job_of[i]];

		memcpy(f->sha256.data, jobs[i].sha, CRYO_DIGEST_LEN);
		f->size = jobs[i].size;
	}
	for (i = 0; i < m->n_files; i++)
		cryo__file_digest__free_unpacked(m->files[i], NULL);
	free(m->files);
	m->files = files;
	m->n_files = n;
	return 0;
}

static int write_framed(int dirfd, const uint8_t *buf, size_t len, struct cryo_error *err)
{
	int r;

	/* MANIFEST_TMP_NAME is the temp name this writes (util.h) */
	r = cryo_write_file_atomic_at(dirfd, CRYO_MANIFEST_NAME, buf, len, 0600, true);
	if (r < 0)
		return cryo_error_set(err, -r, "write `%s`", CRYO_MANIFEST_NAME);
	return 0;
}

int cryo_manifest_write_at(int dirfd, const Cryo__Manifest *m, struct cryo_error *err)
{
	uint8_t *buf;
	size_t len;
	int r;

	len = cryo__manifest__get_packed_size(m);
	if (len > CRYO_MANIFEST_MAX_SIZE - MANIFEST_HEADER_LEN)
		return cryo_error_setx(err, EFBIG, "manifest would be %zu bytes, more than the limit of %u", len,
				       CRYO_MANIFEST_MAX_SIZE - MANIFEST_HEADER_LEN);
	buf = malloc(MANIFEST_HEADER_LEN + len);
	if (!buf)
		return cryo_error_set(err, ENOMEM, "write manifest");
	memcpy(buf, MANIFEST_MAGIC, MANIFEST_MAGIC_LEN);
	if (cryo__manifest__pack(m, buf + MANIFEST_HEADER_LEN) != len)
		r = cryo_error_setx(err, EIO, "write manifest: protobuf-c packed a different size");
	else if (cryo_digest_buf(buf + MANIFEST_HEADER_LEN, len, buf + MANIFEST_MAGIC_LEN, err) < 0)
		r = cryo_error_prefix(err, "write manifest");
	else
		r = write_framed(dirfd, buf, MANIFEST_HEADER_LEN + len, err);
	free(buf);
	return r;
}

/*
 * protobuf-c keeps fields it does not know (a newer cryo's optional
 * fields) and writes them back, but it also takes a non-canonical tag
 * encoding of field number 0, which no valid message has and which it
 * then refuses when it reads its own output. Refuse it here, in every
 * sub-message, so what was accepted is a valid protobuf.
 */
static bool bad_unknown_fields(const ProtobufCMessage *msg)
{
	unsigned i;

	for (i = 0; msg && i < msg->n_unknown_fields; i++)
		if (msg->unknown_fields[i].tag == 0)
			return true;
	return false;
}

static bool manifest_has_bad_fields(const Cryo__Manifest *m)
{
	size_t i;

	if (bad_unknown_fields(&m->base) || (m->rootfs && bad_unknown_fields(&m->rootfs->base)) ||
	    (m->criu && bad_unknown_fields(&m->criu->base)))
		return true;
	for (i = 0; i < m->n_files; i++)
		if (bad_unknown_fields(&m->files[i]->base))
			return true;
	for (i = 0; i < m->n_timings; i++)
		if (bad_unknown_fields(&m->timings[i]->base))
			return true;
	return false;
}

/* Shape checks that don't need the directory. */
static int check_manifest(const Cryo__Manifest *m, struct cryo_error *err)
{
	_cleanup_free_ char **names = NULL;
	size_t i;

	if (manifest_has_bad_fields(m))
		return cryo_error_setx(err, EBADMSG, "`%s` is not a valid manifest message (a field numbered 0)",
				       CRYO_MANIFEST_NAME);

	if (m->format_version == 0)
		return cryo_error_setx(err, EBADMSG, "manifest has format version 0");
	if (m->format_version > CRYO_MANIFEST_VERSION)
		return cryo_error_setx(err, EPROTONOSUPPORT,
				       "manifest format version %u is newer than this cryo understands (%u): use a newer cryo",
				       m->format_version, CRYO_MANIFEST_VERSION);
	/* protobuf-c takes any number for an enum */
	if (m->has_digest && !cryo_digest_alg_name((int)m->digest))
		return cryo_error_setx(err, EBADMSG, "manifest names an unknown digest algorithm (%d)", (int)m->digest);
	if (m->format_version < 2 && cryo_manifest_digest(m) != CRYO_DIGEST_SHA256)
		return cryo_error_setx(err, EBADMSG, "manifest of format version %u with %s digests (version 1 is sha256)",
				       m->format_version, cryo_digest_alg_name((int)m->digest));
	if (cryo_validate_id(m->container_id, NULL) < 0)
		return cryo_error_setx(err, EBADMSG, "manifest names an invalid container id");
	if (m->n_files > CRYO_MANIFEST_MAX_FILES)
		return cryo_error_setx(err, EBADMSG, "manifest lists %zu files, at most %u are allowed", m->n_files,
				       CRYO_MANIFEST_MAX_FILES);
	names = calloc(m->n_files + 1, sizeof(*names));
	if (!names)
		return cryo_error_set(err, ENOMEM, "check manifest");
	for (i = 0; i < m->n_files; i++) {
		const Cryo__FileDigest *f = m->files[i];

		if (!valid_name(f->name) || reserved_name(f->name))
			return cryo_error_setx(err, EBADMSG, "manifest lists an invalid file name `%.64s`", f->name);
		if (f->sha256.len != CRYO_DIGEST_LEN)
			return cryo_error_setx(err, EBADMSG, "manifest entry `%s` has a %zu-byte digest, not %d", f->name,
					       f->sha256.len, CRYO_DIGEST_LEN);
		names[i] = f->name;
	}
	qsort(names, m->n_files, sizeof(*names), cmp_strp);
	for (i = 1; i < m->n_files; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			return cryo_error_setx(err, EBADMSG, "manifest lists `%s` twice", names[i]);
	if (m->rootfs && m->rootfs->name) {
		if (!bsearch(&m->rootfs->name, names, m->n_files, sizeof(*names), cmp_strp))
			return cryo_error_setx(err, EBADMSG, "manifest's rootfs snapshot `%.64s` is not among its files",
					       m->rootfs->name);
	}
	return 0;
}

int cryo_manifest_parse(const void *data, size_t len, Cryo__Manifest **ret, struct cryo_error *err)
{
	_cleanup_(manifest_freep) Cryo__Manifest *m = NULL;
	const uint8_t *buf = data;
	uint8_t sha[CRYO_DIGEST_LEN];
	int r;

	if (len > CRYO_MANIFEST_MAX_SIZE)
		return cryo_error_setx(err, EFBIG, "`%s` is larger than %u bytes", CRYO_MANIFEST_NAME,
				       CRYO_MANIFEST_MAX_SIZE);
	if (len < MANIFEST_HEADER_LEN || memcmp(buf, MANIFEST_MAGIC, MANIFEST_MAGIC_LEN) != 0)
		return cryo_error_setx(err, EBADMSG, "`%s` is not a cryo manifest (bad magic or too short: %zu bytes)",
				       CRYO_MANIFEST_NAME, len);
	r = cryo_digest_buf(buf + MANIFEST_HEADER_LEN, len - MANIFEST_HEADER_LEN, sha, err);
	if (r < 0)
		return r;
	if (memcmp(sha, buf + MANIFEST_MAGIC_LEN, CRYO_DIGEST_LEN) != 0)
		return cryo_error_setx(err, EBADMSG, "`%s` is corrupted: its content does not match its own sha256",
				       CRYO_MANIFEST_NAME);
	m = cryo__manifest__unpack(NULL, len - MANIFEST_HEADER_LEN, buf + MANIFEST_HEADER_LEN);
	if (!m)
		return cryo_error_setx(err, EBADMSG, "`%s` is not a valid manifest message", CRYO_MANIFEST_NAME);
	r = check_manifest(m, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(m);
	return 0;
}

int cryo_manifest_read_at(int dirfd, Cryo__Manifest **ret, struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	/* untrusted: no symlink followed, no FIFO waited on (image.h) */
	r = cryo_image_read_file(dirfd, CRYO_MANIFEST_NAME, CRYO_MANIFEST_MAX_SIZE, &buf, &len, NULL, err);
	if (r < 0)
		return r;
	return cryo_manifest_parse(buf, len, ret, err);
}

/*
 * Check what a stat can tell about one entry; a regular file whose size
 * matches is left for the parallel hash (*ret_hash set).
 */
static int precheck_entry(int dirfd, const Cryo__FileDigest *f, bool *ret_hash, struct cryo_error *err)
{
	struct stat st;
	int r;

	*ret_hash = false;
	if (fstatat(dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return cryo_error_setx(err, ENOENT, "file `%s` listed in the manifest is missing", f->name);
		return cryo_error_set(err, errno, "stat `%s`", f->name);
	}
	if (f->symlink) {
		_cleanup_free_ char *target = NULL;

		if (!S_ISLNK(st.st_mode))
			return cryo_error_setx(err, EBADMSG, "`%s` should be a symlink", f->name);
		r = read_symlink_at(dirfd, f->name, &target, err);
		if (r < 0)
			return r;
		if (strcmp(target, f->symlink) != 0)
			return cryo_error_setx(err, EBADMSG, "symlink `%s` points to `%s`, the manifest says `%s`",
					       f->name, target, f->symlink);
		return 0;
	}
	if (!S_ISREG(st.st_mode))
		return cryo_error_setx(err, EBADMSG, "`%s` is not a regular file", f->name);
	if ((uint64_t)st.st_size != f->size)
		return cryo_error_setx(err, EBADMSG, "file `%s` is %llu bytes, the manifest says %llu (%s)", f->name,
				       (unsigned long long)st.st_size, (unsigned long long)f->size,
				       (uint64_t)st.st_size < f->size ? "truncated" : "grown");
	*ret_hash = true;
	return 0;
}

static int check_hashed(const Cryo__Manifest *m, const Cryo__FileDigest *f, const struct cryo_digest_job *j,
			struct cryo_error *err)
{
	char want[CRYO_DIGEST_HEX_LEN], got[CRYO_DIGEST_HEX_LEN];

	if (j->size != f->size)
		return cryo_error_setx(err, EBADMSG, "file `%s` changed size while being verified", f->name);
	if (memcmp(j->sha, f->sha256.data, CRYO_DIGEST_LEN) != 0) {
		cryo_digest_hex(f->sha256.data, want);
		cryo_digest_hex(j->sha, got);
		return cryo_error_setx(err, EBADMSG, "file `%s` is corrupted: %s %.16s…, the manifest says %.16s…",
				       f->name, cryo_digest_alg_name(cryo_manifest_digest(m)), got, want);
	}
	return 0;
}

static int cmp_known(const void *a, const void *b)
{
	return strcmp(((const struct cryo_known_digest *)a)->name, ((const struct cryo_known_digest *)b)->name);
}

void cryo_known_digests_sort(struct cryo_known_digest *known, size_t n)
{
	if (n > 1)
		qsort(known, n, sizeof(*known), cmp_known);
}

int cryo_manifest_verify_at(int dirfd, const Cryo__Manifest *m, struct cryo_error *err)
{
	return cryo_manifest_verify_known_at(dirfd, m, NULL, 0, err);
}

struct cryo_manifest_later {
	int dirfd;                      /* a dup of the image dir's */
	const Cryo__Manifest *m;
	struct cryo_digest_job *jobs;
	size_t *file_of;
	size_t n;
	pthread_t tid;
	bool started;                   /* cryo_manifest_later_start() (or the wait) ran the hashing */
	bool running;
	int r;                          /* the verdict, once joined */
	struct cryo_error err;
};

static int verify_split(int dirfd, const Cryo__Manifest *m, const struct cryo_known_digest *known, size_t n_known,
			bool (*later)(const char *name), struct cryo_manifest_later **ret_later, struct cryo_error *err);

int cryo_manifest_verify_known_at(int dirfd, const Cryo__Manifest *m, const struct cryo_known_digest *known,
				  size_t n_known, struct cryo_error *err)
{
	return verify_split(dirfd, m, known, n_known, NULL, NULL, err);
}

static void *later_worker(void *arg)
{
	struct cryo_manifest_later *l = arg;
	size_t i;

	l->r = cryo_digest_files_at(l->dirfd, cryo_manifest_digest(l->m), l->jobs, l->n, 0, &l->err);
	if (l->r >= 0)
		l->r = first_job_error(l->jobs, l->n, &l->err);
	for (i = 0; l->r >= 0 && i < l->n; i++)
		l->r = check_hashed(l->m, l->m->files[l->file_of[i]], &l->jobs[i], &l->err);
	return NULL;
}

void cryo_manifest_later_free(struct cryo_manifest_later *l)
{
	if (!l)
		return;
	if (l->running)
		pthread_join(l->tid, NULL);
	cryo_digest_jobs_clear(l->jobs, l->n);
	free(l->jobs);
	free(l->file_of);
	if (l->dirfd >= 0)
		close(l->dirfd);
	cryo_error_clear(&l->err);
	free(l);
}

static struct cryo_manifest_later *later_new(const Cryo__Manifest *m)
{
	struct cryo_manifest_later *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->dirfd = -1;
	l->m = m;
	l->jobs = calloc(m->n_files + 1, sizeof(*l->jobs));
	l->file_of = calloc(m->n_files + 1, sizeof(*l->file_of));
	if (!l->jobs || !l->file_of) {
		cryo_manifest_later_free(l);
		return NULL;
	}
	return l;
}

int cryo_manifest_later_wait(struct cryo_manifest_later *l, struct cryo_error *err)
{
	/* never started (the caller failed before): hash here, the verdict is still owed */
	if (!l->started) {
		l->started = true;
		(void)later_worker(l);
	}
	if (l->running) {
		pthread_join(l->tid, NULL);
		l->running = false;
	}
	if (l->r < 0)
		return cryo_error_setx(err, -l->r, "%s", l->err.msg ? l->err.msg : "verify");
	return 0;
}

int cryo_manifest_verify_split_at(int dirfd, const Cryo__Manifest *m, bool (*later)(const char *name),
				  struct cryo_manifest_later **ret, struct cryo_error *err)
{
	return verify_split(dirfd, m, NULL, 0, later, ret, err);
}

static int verify_split(int dirfd, const Cryo__Manifest *m, const struct cryo_known_digest *known, size_t n_known,
			bool (*later)(const char *name), struct cryo_manifest_later **ret_later, struct cryo_error *err)
{
	_cleanup_(cryo_manifest_later_freep) struct cryo_manifest_later *l = NULL;
	_cleanup_(strv_freep) char **present = NULL;
	_cleanup_free_ char **listed = NULL;
	_cleanup_free_ struct cryo_digest_job *jobs = NULL;
	_cleanup_free_ size_t *file_of = NULL;
	size_t n = 0, nj = 0, i;
	int r;

	r = check_manifest(m, err);
	if (r < 0)
		return r;
	r = list_dir(dirfd, &present, &n, err);
	if (r < 0)
		return r;
	if (later) {
		l = later_new(m);
		if (!l)
			return cryo_error_set(err, ENOMEM, "verify image");
	}
	listed = calloc(m->n_files + 1, sizeof(*listed));
	jobs = calloc(m->n_files + 1, sizeof(*jobs));
	file_of = calloc(m->n_files + 1, sizeof(*file_of));
	if (!listed || !jobs || !file_of)
		return cryo_error_set(err, ENOMEM, "verify image");
	for (i = 0; i < m->n_files; i++)
		listed[i] = m->files[i]->name;
	qsort(listed, m->n_files, sizeof(*listed), cmp_strp);
	/* extra files first: cheap, and a stray file is a clear sign of tampering */
	for (i = 0; i < n; i++)
		if (!bsearch(&present[i], listed, m->n_files, sizeof(*listed), cmp_strp))
			return cryo_error_setx(err, EBADMSG, "unexpected file `%s` that the manifest does not list",
					       present[i]);
	/* then everything a stat can refuse, before reading a byte */
	for (i = 0; i < m->n_files; i++) {
		bool hash = false;

		r = precheck_entry(dirfd, m->files[i], &hash, err);
		if (r < 0)
			return r;
		if (hash && n_known) {
			const struct cryo_known_digest key = { .name = m->files[i]->name };
			const struct cryo_known_digest *k = bsearch(&key, known, n_known, sizeof(*known), cmp_known);

			/* hashed as it was written here: compare, don't read it again */
			if (k && k->alg == cryo_manifest_digest(m)) {
				struct cryo_digest_job j = { .size = k->size };

				memcpy(j.sha, k->sha, CRYO_DIGEST_LEN);
				r = check_hashed(m, m->files[i], &j, err);
				if (r < 0)
					return r;
				continue;
			}
		}
		if (hash && l && later(m->files[i]->name)) {
			l->jobs[l->n].name = m->files[i]->name;
			l->jobs[l->n].size_hint = m->files[i]->size;
			l->file_of[l->n++] = i;
		} else if (hash) {
			jobs[nj].name = m->files[i]->name;
			jobs[nj].size_hint = m->files[i]->size;
			file_of[nj++] = i;
		}
	}
	r = cryo_digest_files_at(dirfd, cryo_manifest_digest(m), jobs, nj, 0, err);
	if (r >= 0)
		r = first_job_error(jobs, nj, err);
	for (i = 0; r >= 0 && i < nj; i++)
		r = check_hashed(m, m->files[file_of[i]], &jobs[i], err);
	cryo_digest_jobs_clear(jobs, nj);
	if (r < 0 || !l)
		return r;
	l->dirfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (l->dirfd < 0)
		return cryo_error_set(err, errno, "verify image");
	*ret_later = TAKE_PTR(l);
	return 0;
}

int cryo_manifest_later_start(struct cryo_manifest_later *l, struct cryo_error *err)
{
	int r;

	if (l->running || l->started)
		return 0;
	r = pthread_create(&l->tid, NULL, later_worker, l);
	if (r != 0)
		return cryo_error_set(err, r, "verify image: start a thread");
	l->running = l->started = true;
	return 0;
}

int cryo_manifest_load_verified(const char *dir, Cryo__Manifest **ret, struct cryo_error *err)
{
	_cleanup_(manifest_freep) Cryo__Manifest *m = NULL;
	_cleanup_close_ int dfd = -1;
	int r;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return cryo_error_set(err, errno, "image `%s`", dir);
	r = cryo_manifest_read_at(dfd, &m, err);
	if (r >= 0)
		r = cryo_manifest_verify_at(dfd, m, err);
	if (r < 0)
		return cryo_error_prefix(err, "image `%s`", dir);
	*ret = TAKE_PTR(m);
	return 0;
}
