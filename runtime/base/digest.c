// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <blake3.h>
#include <openssl/evp.h>

#include "digest.h"
#include "util.h"

static const char *const alg_names[] = {
	[CRYO_DIGEST_SHA256] = "sha256",
	[CRYO_DIGEST_BLAKE3] = "blake3",
};

const char *cryo_digest_alg_name(int alg)
{
	if (alg < 0 || (size_t)alg >= ARRAY_SIZE(alg_names))
		return NULL;
	return alg_names[alg];
}

int cryo_digest_alg_from_name(const char *name, enum cryo_digest_alg *ret)
{
	size_t i;

	for (i = 0; name && i < ARRAY_SIZE(alg_names); i++)
		if (strcmp(name, alg_names[i]) == 0) {
			*ret = (enum cryo_digest_alg)i;
			return 0;
		}
	return -EINVAL;
}

int cryo_digest_fd(int fd, enum cryo_digest_alg alg, uint8_t ret_sha[CRYO_DIGEST_LEN], uint64_t *ret_size,
		   struct cryo_error *err)
{
	_cleanup_(cryo_hash_freep) struct cryo_hash *h = NULL;
	off_t at = lseek(fd, 0, SEEK_CUR);
	int64_t n;
	int r;

	if (at < 0)
		return cryo_error_set(err, errno, "seek");
	r = cryo_hash_new(&h, alg, err);
	if (r < 0)
		return r;
	n = cryo_hash_update_fd(h, fd, (uint64_t)at, UINT64_MAX, err);
	if (n < 0)
		return (int)n;
	r = cryo_hash_final(h, ret_sha, err);
	if (r < 0)
		return r;
	if (ret_size)
		*ret_size = (uint64_t)n;
	return 0;
}

int cryo_digest_file_at(int dirfd, const char *path, enum cryo_digest_alg alg, uint8_t ret_sha[CRYO_DIGEST_LEN],
			uint64_t *ret_size, struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	/* O_NONBLOCK: a FIFO planted in an image must not hang the hash */
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", path);
	if (fstat(fd, &st) < 0)
		return cryo_error_set(err, errno, "stat `%s`", path);
	if (!S_ISREG(st.st_mode))
		return cryo_error_setx(err, EINVAL, "`%s` is not a regular file", path);
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	r = cryo_digest_fd(fd, alg, ret_sha, ret_size, err);
	if (r < 0)
		return cryo_error_prefix(err, "hash `%s`", path);
	return 0;
}

#define DIGEST_MAX_THREADS 8

struct digest_pool {
	int dirfd;
	enum cryo_digest_alg alg;
	struct cryo_digest_job **order;  /* largest first */
	size_t n;
	atomic_size_t next;
};

static void *digest_worker(void *arg)
{
	struct digest_pool *p = arg;
	size_t i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->n) {
		struct cryo_digest_job *j = p->order[i];

		j->r = cryo_digest_file_at(p->dirfd, j->name, p->alg, j->sha, &j->size, &j->err);
	}
	return NULL;
}

static int cmp_job_size_desc(const void *a, const void *b)
{
	const struct cryo_digest_job *x = *(const struct cryo_digest_job *const *)a;
	const struct cryo_digest_job *y = *(const struct cryo_digest_job *const *)b;

	return (x->size_hint < y->size_hint) - (x->size_hint > y->size_hint);
}

int cryo_digest_files_at(int dirfd, enum cryo_digest_alg alg, struct cryo_digest_job *jobs, size_t n,
			 unsigned int threads, struct cryo_error *err)
{
	_cleanup_free_ struct cryo_digest_job **order = NULL;
	pthread_t tids[DIGEST_MAX_THREADS];
	struct digest_pool pool = { .dirfd = dirfd, .alg = alg, .n = n };
	unsigned int started = 0, t;
	size_t i;

	if (threads == 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		threads = cpus > 0 ? (unsigned int)cpus : 1;
	}
	if (threads > DIGEST_MAX_THREADS)
		threads = DIGEST_MAX_THREADS;
	if (threads > n)
		threads = n > 0 ? (unsigned int)n : 1;

	order = calloc(n + 1, sizeof(struct cryo_digest_job *));
	if (!order)
		return cryo_error_set(err, ENOMEM, "hash %zu files", n);
	for (i = 0; i < n; i++) {
		jobs[i].r = 0;
		jobs[i].size = 0;
		jobs[i].err = (struct cryo_error)CRYO_ERROR_INIT;
		order[i] = &jobs[i];
	}
	qsort(order, n, sizeof(struct cryo_digest_job *), cmp_job_size_desc);
	pool.order = order;
	atomic_init(&pool.next, 0);

	/* the calling thread is worker 0: one file, or one CPU, starts no thread */
	for (t = 1; t < threads; t++) {
		if (pthread_create(&tids[t], NULL, digest_worker, &pool) != 0)
			break;
		started++;
	}
	digest_worker(&pool);
	for (t = 1; t <= started; t++)
		pthread_join(tids[t], NULL);
	return 0;
}

void cryo_digest_jobs_clear(struct cryo_digest_job *jobs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cryo_error_clear(&jobs[i].err);
}

struct cryo_hash {
	enum cryo_digest_alg alg;
	EVP_MD_CTX *ctx;                /* sha256 */
	blake3_hasher b3;               /* blake3 */
};

/*
 * BLAKE3 picks its SIMD kernels on first use and keeps the answer in a
 * plain global: two threads hashing at once race on it (ThreadSanitizer
 * says so). One hash of nothing, once, before any thread may hash, sets it.
 */
static pthread_once_t blake3_once = PTHREAD_ONCE_INIT;

static void blake3_warm_up(void)
{
	blake3_hasher b;
	uint8_t out[BLAKE3_OUT_LEN];

	blake3_hasher_init(&b);
	blake3_hasher_finalize(&b, out, sizeof(out));
}

int cryo_hash_new(struct cryo_hash **ret, enum cryo_digest_alg alg, struct cryo_error *err)
{
	struct cryo_hash *h;
	const char *name = cryo_digest_alg_name(alg);

	/* (-ENOMEM, -EIO spelled out: callers in this file then know h is set on 0) */
	if (!name) {
		cryo_error_setx(err, EINVAL, "unknown digest algorithm %d", (int)alg);
		return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		cryo_error_set(err, ENOMEM, "%s", name);
		return -ENOMEM;
	}
	h->alg = alg;
	if (alg == CRYO_DIGEST_BLAKE3) {
		pthread_once(&blake3_once, blake3_warm_up);
		blake3_hasher_init(&h->b3);
		*ret = h;
		return 0;
	}
	h->ctx = EVP_MD_CTX_new();
	if (!h->ctx) {
		free(h);
		cryo_error_set(err, ENOMEM, "%s", name);
		return -ENOMEM;
	}
	if (EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		cryo_hash_free(h);
		cryo_error_setx(err, EIO, "sha256: EVP_DigestInit_ex failed");
		return -EIO;
	}
	*ret = h;
	return 0;
}

int cryo_hash_update(struct cryo_hash *h, const void *buf, size_t len, struct cryo_error *err)
{
	if (h->alg == CRYO_DIGEST_BLAKE3) {
		blake3_hasher_update(&h->b3, buf, len);
		return 0;
	}
	if (EVP_DigestUpdate(h->ctx, buf, len) != 1)
		return cryo_error_setx(err, EIO, "sha256: EVP_DigestUpdate failed");
	return 0;
}

int64_t cryo_hash_update_fd(struct cryo_hash *h, int fd, uint64_t from, uint64_t len, struct cryo_error *err)
{
	uint8_t buf[1U << 16];
	uint64_t n = 0;
	int r;

	while (n < len) {
		size_t want = len - n < sizeof(buf) ? (size_t)(len - n) : sizeof(buf);
		ssize_t got = pread(fd, buf, want, (off_t)(from + n));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return cryo_error_set(err, errno, "read");
		if (got == 0)
			break;
		r = cryo_hash_update(h, buf, (size_t)got, err);
		if (r < 0)
			return r;
		n += (uint64_t)got;
	}
	return (int64_t)n;
}

int cryo_hash_final(struct cryo_hash *h, uint8_t ret_sha[CRYO_DIGEST_LEN], struct cryo_error *err)
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (h->alg == CRYO_DIGEST_BLAKE3) {
		blake3_hasher_finalize(&h->b3, ret_sha, CRYO_DIGEST_LEN);
		return 0;
	}
	if (EVP_DigestFinal_ex(h->ctx, md, &mdlen) != 1 || mdlen != CRYO_DIGEST_LEN)
		return cryo_error_setx(err, EIO, "sha256: EVP_DigestFinal_ex failed");
	memcpy(ret_sha, md, CRYO_DIGEST_LEN);
	return 0;
}

void cryo_hash_free(struct cryo_hash *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

int cryo_digest_buf_alg(enum cryo_digest_alg alg, const void *buf, size_t len, uint8_t ret_sha[CRYO_DIGEST_LEN],
			struct cryo_error *err)
{
	_cleanup_(cryo_hash_freep) struct cryo_hash *h = NULL;
	int r;

	if (alg == CRYO_DIGEST_SHA256)
		return cryo_digest_buf(buf, len, ret_sha, err);
	r = cryo_hash_new(&h, alg, err);
	if (r < 0)
		return r;
	r = cryo_hash_update(h, buf, len, err);
	if (r < 0)
		return r;
	return cryo_hash_final(h, ret_sha, err);
}

int cryo_digest_buf(const void *buf, size_t len, uint8_t ret_sha[CRYO_DIGEST_LEN], struct cryo_error *err)
{
	unsigned int mdlen = 0;
	uint8_t md[EVP_MAX_MD_SIZE];

	if (EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != CRYO_DIGEST_LEN)
		return cryo_error_setx(err, EIO, "sha256: EVP_Digest failed");
	memcpy(ret_sha, md, CRYO_DIGEST_LEN);
	return 0;
}

void cryo_digest_hex(const uint8_t sha[CRYO_DIGEST_LEN], char out[CRYO_DIGEST_HEX_LEN])
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < CRYO_DIGEST_LEN; i++) {
		out[2 * i] = hex[sha[i] >> 4];
		out[2 * i + 1] = hex[sha[i] & 0xf];
	}
	out[(size_t)2 * CRYO_DIGEST_LEN] = '\0';
}
