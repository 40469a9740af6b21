// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "digest.h"
#include "util.h"

static void md_ctx_freep(EVP_MD_CTX **ctx)
{
	EVP_MD_CTX_free(*ctx);
}

int cryo_digest_fd(int fd, uint8_t ret_sha[CRYO_SHA256_LEN], uint64_t *ret_size, struct cryo_error *err)
{
	_cleanup_(md_ctx_freep) EVP_MD_CTX *ctx = NULL;
	uint8_t buf[1U << 16];
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	uint64_t total = 0;
	const size_t bufsz = sizeof(buf);

	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return cryo_error_set(err, ENOMEM, "sha256");
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		return cryo_error_setx(err, EIO, "sha256: EVP_DigestInit_ex failed");
	for (;;) {
		ssize_t n = read(fd, buf, bufsz);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return cryo_error_set(err, errno, "read");
		}
		if (n == 0)
			break;
		if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
			return cryo_error_setx(err, EIO, "sha256: EVP_DigestUpdate failed");
		total += (uint64_t)n;
	}
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != CRYO_SHA256_LEN)
		return cryo_error_setx(err, EIO, "sha256: EVP_DigestFinal_ex failed");
	memcpy(ret_sha, md, CRYO_SHA256_LEN);
	if (ret_size)
		*ret_size = total;
	return 0;
}

int cryo_digest_file_at(int dirfd, const char *path, uint8_t ret_sha[CRYO_SHA256_LEN], uint64_t *ret_size,
			struct cryo_error *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return cryo_error_set(err, errno, "open `%s`", path);
	if (fstat(fd, &st) < 0)
		return cryo_error_set(err, errno, "stat `%s`", path);
	if (!S_ISREG(st.st_mode))
		return cryo_error_setx(err, EINVAL, "`%s` is not a regular file", path);
	(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	r = cryo_digest_fd(fd, ret_sha, ret_size, err);
	if (r < 0)
		return cryo_error_prefix(err, "hash `%s`", path);
	return 0;
}

int cryo_digest_buf(const void *buf, size_t len, uint8_t ret_sha[CRYO_SHA256_LEN], struct cryo_error *err)
{
	unsigned int mdlen = 0;
	uint8_t md[EVP_MAX_MD_SIZE];

	if (EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != CRYO_SHA256_LEN)
		return cryo_error_setx(err, EIO, "sha256: EVP_Digest failed");
	memcpy(ret_sha, md, CRYO_SHA256_LEN);
	return 0;
}

void cryo_digest_hex(const uint8_t sha[CRYO_SHA256_LEN], char out[CRYO_SHA256_HEX_LEN])
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < CRYO_SHA256_LEN; i++) {
		out[2 * i] = hex[sha[i] >> 4];
		out[2 * i + 1] = hex[sha[i] & 0xf];
	}
	out[(size_t)2 * CRYO_SHA256_LEN] = '\0';
}
