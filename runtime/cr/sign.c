// SPDX-License-Identifier: GPL-2.0-only
/*
 * Signing and verifying an image's manifest with OpenSSL (see sign.h for
 * the key and signature formats). Everything read here is untrusted: the
 * signature file and the manifest come from the image, the key file from
 * the command line; all three are read whole, bounded, never through a
 * symlink and only when they are regular files.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "digest.h"
#include "image.h"
#include "manifest.h"
#include "sign.h"
#include "util.h"

#define SIG_MAGIC "CRYOSIG1"
#define SIG_MAGIC_LEN 8
#define SIG_HEADER_LEN (SIG_MAGIC_LEN + 1 + CRYO_SIGN_KEY_ID_LEN)
#define SIG_ED25519_LEN 64
#define SIG_HMAC_LEN 32
#define SIG_MAX_LEN (SIG_HEADER_LEN + SIG_ED25519_LEN)
#define SIG_TMP_NAME ".manifest.sig.tmp"
#define KEY_FILE_MAX (64U << 10)
#define HMAC_PREFIX "hmac:"
#define HMAC_KEY_ID_LABEL "cryo key id"
/* pre-dump rounds behind one dump */
#define SIGN_MAX_PARENTS 16

const char *const cryo_sign_alg_names[_CRYO_SIGN_ALG_MAX] = {
	[CRYO_SIGN_NONE] = "none",
	[CRYO_SIGN_ED25519] = "ed25519",
	[CRYO_SIGN_HMAC_SHA256] = "hmac-sha256",
};

struct key {
	enum cryo_sign_alg alg;
	bool secret;        /* can sign: an HMAC key or an Ed25519 private key */
	EVP_PKEY *pkey;     /* Ed25519 */
	uint8_t *hmac;      /* HMAC secret */
	size_t hmac_len;
	uint8_t id[CRYO_SIGN_KEY_ID_LEN];
};

static void key_done(struct key *k)
{
	EVP_PKEY_free(k->pkey);
	if (k->hmac) {
		OPENSSL_cleanse(k->hmac, k->hmac_len);
		free(k->hmac);
	}
	memset(k, 0, sizeof(*k));
}

/* A buffer that held key material: wiped before it is freed. */
struct secret {
	char *buf;
	size_t len;
};

static void secret_done(struct secret *s)
{
	if (s->buf) {
		OPENSSL_cleanse(s->buf, s->len);
		free(s->buf);
	}
	s->buf = NULL;
}

static void md_ctx_freep(EVP_MD_CTX **ctx)
{
	EVP_MD_CTX_free(*ctx);
}

static void manifest_freep(Cryo__Manifest **m)
{
	cryo_manifest_free(*m);
}

static void bio_freep(BIO **b)
{
	BIO_free(*b);
}

/* OpenSSL's reason for the last failure, and its error queue emptied. */
static const char *ssl_reason(char *buf, size_t n)
{
	unsigned long e = ERR_peek_last_error();

	if (e == 0)
		snprintf(buf, n, "unknown OpenSSL error");
	else
		ERR_error_string_n(e, buf, n);
	ERR_clear_error();
	return buf;
}

/* Never prompt for a passphrase (OpenSSL's default would read the tty). */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

void cryo_sign_key_id_hex(const uint8_t id[CRYO_SIGN_KEY_ID_LEN], char out[17])
{
	char full[CRYO_DIGEST_HEX_LEN];

	cryo_digest_hex(id, full);
	memcpy(out, full, 16);
	out[16] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int load_hmac_key(const char *path, const char *data, size_t len, bool hex, struct key *k,
			 struct cryo_error *err)
{
	size_t n, i;
	unsigned int idlen = 0;

	if (hex) {
		while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r' || data[len - 1] == ' ' ||
				   data[len - 1] == '\t'))
			len--;
		if (len % 2 != 0)
			return cryo_error_setx(err, EINVAL, "key file `%s`: `hmac:` must be followed by hex digits, an even number of them",
					       path);
		n = len / 2;
	} else {
		n = len;
	}
	if (n < CRYO_SIGN_HMAC_MIN_KEY || n > CRYO_SIGN_HMAC_MAX_KEY)
		return cryo_error_setx(err, EINVAL,
				       "key file `%s`: an HMAC key must have %d to %d bytes, this one has %zu (or is it a PEM key that lost its header?)",
				       path, CRYO_SIGN_HMAC_MIN_KEY, CRYO_SIGN_HMAC_MAX_KEY, n);
	k->hmac = malloc(n);
	if (!k->hmac)
		return cryo_error_set(err, ENOMEM, "key file `%s`", path);
	k->hmac_len = n;
	if (hex) {
		for (i = 0; i < n; i++) {
			int hi = hexval(data[2 * i]), lo = hexval(data[2 * i + 1]);

			if (hi < 0 || lo < 0)
				return cryo_error_setx(err, EINVAL, "key file `%s`: `hmac:` must be followed by hex digits only",
						       path);
			k->hmac[i] = (uint8_t)(hi << 4 | lo);
		}
	} else {
		memcpy(k->hmac, data, n);
	}
	if (!HMAC(EVP_sha256(), k->hmac, (int)k->hmac_len, (const unsigned char *)HMAC_KEY_ID_LABEL,
		  strlen(HMAC_KEY_ID_LABEL), k->id, &idlen) ||
	    idlen != CRYO_SIGN_KEY_ID_LEN)
		return cryo_error_setx(err, EIO, "key file `%s`: HMAC-SHA256 failed", path);
	k->alg = CRYO_SIGN_HMAC_SHA256;
	k->secret = true;
	return 0;
}

static int load_pem_key(const char *path, const char *data, size_t len, bool for_signing, struct key *k,
			struct cryo_error *err)
{
	_cleanup_(bio_freep) BIO *bio = NULL;
	uint8_t raw[32];
	size_t rawlen = sizeof(raw);
	char why[256];
	int id;

	if (memmem(data, len, "ENCRYPTED", 9))
		return cryo_error_setx(err, EINVAL, "key file `%s`: encrypted PEM keys are not supported", path);
	if (len > INT32_MAX)
		return cryo_error_setx(err, EFBIG, "key file `%s` is too large", path);
	/* a public key can only verify; for verifying, a private key will do too */
	if (!for_signing) {
		bio = BIO_new_mem_buf(data, (int)len);
		if (!bio)
			return cryo_error_set(err, ENOMEM, "key file `%s`", path);
		k->pkey = PEM_read_bio_PUBKEY(bio, NULL, no_passphrase, NULL);
		ERR_clear_error();
		BIO_free(bio);
		bio = NULL;
	}
	if (k->pkey) {
		k->secret = false;
	} else {
		bio = BIO_new_mem_buf(data, (int)len);
		if (!bio)
			return cryo_error_set(err, ENOMEM, "key file `%s`", path);
		k->pkey = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
		if (!k->pkey) {
			if (for_signing && memmem(data, len, "PUBLIC KEY-----", 15))
				return cryo_error_setx(err, EINVAL,
						       "key file `%s` holds a public key: signing needs the Ed25519 private key",
						       path);
			return cryo_error_setx(err, EINVAL, "key file `%s`: not a PEM %skey OpenSSL can read (%s)", path,
					       for_signing ? "private " : "", ssl_reason(why, sizeof(why)));
		}
		k->secret = true;
	}
	id = EVP_PKEY_id(k->pkey);
	if (id != EVP_PKEY_ED25519) {
		const char *name = EVP_PKEY_get0_type_name(k->pkey);

		return cryo_error_setx(err, EINVAL, "key file `%s`: its key type (%s) is not supported, only Ed25519 PEM keys are",
				       path, name ? name : "unknown");
	}
	if (EVP_PKEY_get_raw_public_key(k->pkey, raw, &rawlen) != 1 || rawlen != sizeof(raw))
		return cryo_error_setx(err, EINVAL, "key file `%s`: no Ed25519 public key in it (%s)", path,
				       ssl_reason(why, sizeof(why)));
	k->alg = CRYO_SIGN_ED25519;
	return cryo_digest_buf(raw, rawlen, k->id, err);
}

/*
 * Load a key file (see sign.h for what it may hold). A secret key that
 * group or others can read is refused: it would let them sign images.
 */
static int load_key(const char *path, bool for_signing, struct key *k, struct cryo_error *err)
{
	struct secret s = { 0 };
	struct stat st;
	int r;

	memset(k, 0, sizeof(*k));
	if (!path || !*path)
		return cryo_error_setx(err, EINVAL, "no key file given");
	r = cryo_image_read_file(AT_FDCWD, path, KEY_FILE_MAX, &s.buf, &s.len, &st, err);
	if (r < 0)
		return cryo_error_prefix(err, "key file");
	if (memmem(s.buf, s.len, "-----BEGIN ", 11))
		r = load_pem_key(path, s.buf, s.len, for_signing, k, err);
	else if (s.len >= strlen(HMAC_PREFIX) && memcmp(s.buf, HMAC_PREFIX, strlen(HMAC_PREFIX)) == 0)
		r = load_hmac_key(path, s.buf + strlen(HMAC_PREFIX), s.len - strlen(HMAC_PREFIX), true, k, err);
	else
		r = load_hmac_key(path, s.buf, s.len, false, k, err);
	secret_done(&s);
	if (r >= 0 && k->secret && (st.st_mode & 077))
		r = cryo_error_setx(err, EPERM,
				    "key file `%s` holds a secret key and is accessible to other users (mode %04o): chmod 600 it",
				    path, (unsigned)(st.st_mode & 07777));
	if (r >= 0 && for_signing && !k->secret)
		r = cryo_error_setx(err, EINVAL, "key file `%s` can't sign", path);
	if (r < 0)
		key_done(k);
	return r;
}

int cryo_sign_key_check(const char *key_file, bool for_signing, struct cryo_signature_info *ret_info,
			struct cryo_error *err)
{
	struct key k;
	int r;

	r = load_key(key_file, for_signing, &k, err);
	if (r < 0)
		return r;
	if (ret_info) {
		ret_info->alg = k.alg;
		memcpy(ret_info->key_id, k.id, sizeof(k.id));
	}
	key_done(&k);
	return 0;
}

static size_t sig_len(enum cryo_sign_alg alg)
{
	return alg == CRYO_SIGN_ED25519 ? SIG_ED25519_LEN : alg == CRYO_SIGN_HMAC_SHA256 ? SIG_HMAC_LEN : 0;
}

/* The signed message: the signature file's header, then the manifest file. */
static int build_message(const uint8_t header[SIG_HEADER_LEN], const char *manifest, size_t mlen, uint8_t **ret,
			 size_t *ret_len, struct cryo_error *err)
{
	uint8_t *msg = malloc(SIG_HEADER_LEN + mlen);

	if (!msg)
		return cryo_error_set(err, ENOMEM, "signature");
	memcpy(msg, header, SIG_HEADER_LEN);
	memcpy(msg + SIG_HEADER_LEN, manifest, mlen);
	*ret = msg;
	*ret_len = SIG_HEADER_LEN + mlen;
	return 0;
}

static int make_signature(const struct key *k, const uint8_t *msg, size_t len, uint8_t *sig, struct cryo_error *err)
{
	_cleanup_(md_ctx_freep) EVP_MD_CTX *ctx = NULL;
	size_t sl = SIG_ED25519_LEN;
	unsigned int hl = 0;
	char why[256];

	if (k->alg == CRYO_SIGN_HMAC_SHA256) {
		if (!HMAC(EVP_sha256(), k->hmac, (int)k->hmac_len, msg, len, sig, &hl) || hl != SIG_HMAC_LEN)
			return cryo_error_setx(err, EIO, "HMAC-SHA256 failed (%s)", ssl_reason(why, sizeof(why)));
		return 0;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return cryo_error_set(err, ENOMEM, "sign");
	if (EVP_DigestSignInit(ctx, NULL, NULL, NULL, k->pkey) != 1 || EVP_DigestSign(ctx, sig, &sl, msg, len) != 1 ||
	    sl != SIG_ED25519_LEN)
		return cryo_error_setx(err, EIO, "Ed25519 signing failed (%s)", ssl_reason(why, sizeof(why)));
	return 0;
}

/* 1 when sig is k's signature of msg, 0 when not, -errno on failure. */
static int check_signature(const struct key *k, const uint8_t *msg, size_t len, const uint8_t *sig,
			   struct cryo_error *err)
{
	_cleanup_(md_ctx_freep) EVP_MD_CTX *ctx = NULL;
	uint8_t mac[SIG_HMAC_LEN];
	int r;

	if (k->alg == CRYO_SIGN_HMAC_SHA256) {
		r = make_signature(k, msg, len, mac, err);
		if (r < 0)
			return r;
		return CRYPTO_memcmp(mac, sig, SIG_HMAC_LEN) == 0;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return cryo_error_set(err, ENOMEM, "verify");
	r = EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, k->pkey) == 1 &&
	    EVP_DigestVerify(ctx, sig, SIG_ED25519_LEN, msg, len) == 1;
	ERR_clear_error();
	return r;
}

static int write_signature(int dirfd, const uint8_t *buf, size_t len, struct cryo_error *err)
{
	/* SIG_TMP_NAME is the temp name this writes (util.h) */
	int r = cryo_write_file_atomic_at(dirfd, CRYO_MANIFEST_SIG_NAME, buf, len, 0600, true);

	if (r < 0)
		return cryo_error_set(err, -r, "write `%s`", CRYO_MANIFEST_SIG_NAME);
	return 0;
}

int cryo_image_sign_at(int dirfd, const char *key_file, struct cryo_error *err)
{
	_cleanup_(manifest_freep) Cryo__Manifest *m = NULL;
	_cleanup_free_ char *manifest = NULL;
	_cleanup_free_ uint8_t *msg = NULL;
	uint8_t out[SIG_MAX_LEN] = { 0 };
	size_t mlen = 0, len = 0;
	struct key k;
	int r;

	r = load_key(key_file, true, &k, err);
	if (r < 0)
		return cryo_error_prefix(err, "sign");
	/* only a manifest that parses is worth a signature */
	r = cryo_image_read_file(dirfd, CRYO_MANIFEST_NAME, CRYO_MANIFEST_MAX_SIZE, &manifest, &mlen, NULL, err);
	if (r >= 0)
		r = cryo_manifest_parse(manifest, mlen, &m, err);
	if (r >= 0) {
		memcpy(out, SIG_MAGIC, sizeof(SIG_MAGIC) - 1);
		out[SIG_MAGIC_LEN] = (uint8_t)k.alg;
		memcpy(out + SIG_MAGIC_LEN + 1, k.id, CRYO_SIGN_KEY_ID_LEN);
		r = build_message(out, manifest, mlen, &msg, &len, err);
	}
	if (r >= 0)
		r = make_signature(&k, msg, len, out + SIG_HEADER_LEN, err);
	if (r >= 0)
		r = write_signature(dirfd, out, SIG_HEADER_LEN + sig_len(k.alg), err);
	key_done(&k);
	if (r < 0)
		return cryo_error_prefix(err, "sign");
	return 0;
}

static int parse_signature(const char *buf, size_t len, struct cryo_signature_info *ret, struct cryo_error *err)
{
	const uint8_t *b = (const uint8_t *)buf;
	enum cryo_sign_alg alg;

	if (len < SIG_HEADER_LEN || memcmp(b, SIG_MAGIC, SIG_MAGIC_LEN) != 0)
		return cryo_error_setx(err, EBADMSG, "`%s` is not a cryo signature (bad magic or too short: %zu bytes)",
				       CRYO_MANIFEST_SIG_NAME, len);
	alg = (enum cryo_sign_alg)b[SIG_MAGIC_LEN];
	if (b[SIG_MAGIC_LEN] == CRYO_SIGN_NONE || b[SIG_MAGIC_LEN] >= _CRYO_SIGN_ALG_MAX)
		return cryo_error_setx(err, EBADMSG, "`%s` names an unknown algorithm %u", CRYO_MANIFEST_SIG_NAME,
				       b[SIG_MAGIC_LEN]);
	if (len != SIG_HEADER_LEN + sig_len(alg))
		return cryo_error_setx(err, EBADMSG, "`%s` is %zu bytes, an %s signature file is %zu (truncated or padded)",
				       CRYO_MANIFEST_SIG_NAME, len, cryo_sign_alg_names[alg],
				       SIG_HEADER_LEN + sig_len(alg));
	ret->alg = alg;
	memcpy(ret->key_id, b + SIG_MAGIC_LEN + 1, CRYO_SIGN_KEY_ID_LEN);
	return 0;
}

static int read_signature(int dirfd, char **ret, size_t *ret_len, struct cryo_signature_info *info,
			  struct cryo_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = cryo_image_read_file(dirfd, CRYO_MANIFEST_SIG_NAME, SIG_MAX_LEN, &buf, &len, NULL, err);
	if (r == -ENOENT)
		return cryo_error_setx(err, ENOENT, "the image is not signed (it has no `%s`)", CRYO_MANIFEST_SIG_NAME);
	if (r == -EFBIG)
		return cryo_error_setx(err, EBADMSG, "`%s` is longer than any cryo signature", CRYO_MANIFEST_SIG_NAME);
	if (r < 0)
		return r;
	r = parse_signature(buf, len, info, err);
	if (r < 0)
		return r;
	if (ret) {
		*ret = TAKE_PTR(buf);
		*ret_len = len;
	}
	return 0;
}

int cryo_image_signature_at(int dirfd, struct cryo_signature_info *ret, struct cryo_error *err)
{
	return read_signature(dirfd, NULL, NULL, ret, err);
}

/*
 * Verify the signature of the image in dirfd with k. An incremental dump
 * (checkpoint --parent-path) is restored with its parent's pages, which
 * CRIU finds through the image's `parent` symlink: a parent (and its
 * parent, ...) must be signed with the same key, and since nothing else
 * verifies a parent, its files are checked against its manifest here too.
 */
static int verify_dir(int dirfd, const struct key *k, unsigned depth, bool parent_files, struct cryo_error *err)
{
	_cleanup_(manifest_freep) Cryo__Manifest *m = NULL;
	_cleanup_free_ char *sig = NULL, *manifest = NULL;
	_cleanup_free_ uint8_t *msg = NULL;
	_cleanup_close_ int pfd = -1;
	struct cryo_signature_info info = { 0 };
	const char *parent = NULL;
	char want[17], got[17];
	size_t slen = 0, mlen = 0, len = 0, i;
	int r;

	r = read_signature(dirfd, &sig, &slen, &info, err);
	if (r < 0)
		return r;
	if (!sig) /* (set on success; for the analyzer, which can't see that) */
		return cryo_error_setx(err, EIO, "read `%s`", CRYO_MANIFEST_SIG_NAME);
	if (info.alg != k->alg)
		return cryo_error_setx(err, EKEYREJECTED, "the image is signed with %s, but the verify key is an %s key",
				       cryo_sign_alg_names[info.alg], cryo_sign_alg_names[k->alg]);
	if (CRYPTO_memcmp(info.key_id, k->id, CRYO_SIGN_KEY_ID_LEN) != 0) {
		cryo_sign_key_id_hex(info.key_id, got);
		cryo_sign_key_id_hex(k->id, want);
		return cryo_error_setx(err, EKEYREJECTED, "the image is signed by key %s, not by the verify key %s", got,
				       want);
	}
	r = cryo_image_read_file(dirfd, CRYO_MANIFEST_NAME, CRYO_MANIFEST_MAX_SIZE, &manifest, &mlen, NULL, err);
	if (r < 0)
		return r;
	r = build_message((const uint8_t *)sig, manifest, mlen, &msg, &len, err);
	if (r < 0)
		return r;
	r = check_signature(k, msg, len, (const uint8_t *)sig + SIG_HEADER_LEN, err);
	if (r < 0)
		return r;
	if (r == 0)
		return cryo_error_setx(err, EBADMSG, "the %s signature does not match `%s`: the image was altered",
				       cryo_sign_alg_names[k->alg], CRYO_MANIFEST_NAME);

	/* the manifest is the signer's now: the same bytes tell whether there is a parent */
	r = cryo_manifest_parse(manifest, mlen, &m, err);
	if (r < 0)
		return r;
	if (depth > 0 && parent_files) {
		r = cryo_manifest_verify_at(dirfd, m, err);
		if (r < 0)
			return r;
	}
	for (i = 0; i < m->n_files; i++)
		if (m->files[i]->symlink && strcmp(m->files[i]->name, "parent") == 0)
			parent = m->files[i]->symlink;
	if (!parent)
		return 0;
	if (depth + 1 > SIGN_MAX_PARENTS)
		return cryo_error_setx(err, ELOOP, "more than %d parent images", SIGN_MAX_PARENTS);
	pfd = openat(dirfd, parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return cryo_error_set(err, errno, "parent image `%s`", parent);
	r = verify_dir(pfd, k, depth + 1, parent_files, err);
	if (r < 0)
		return cryo_error_prefix(err, "parent image `%s`", parent);
	return 0;
}

static int verify_at(int dirfd, const char *key_file, bool parent_files, struct cryo_error *err)
{
	struct key k;
	int r;

	r = load_key(key_file, false, &k, err);
	if (r >= 0) {
		r = verify_dir(dirfd, &k, 0, parent_files, err);
		key_done(&k);
	}
	if (r < 0)
		return cryo_error_prefix(err, "verify signature");
	return 0;
}

int cryo_image_verify_at(int dirfd, const char *key_file, struct cryo_error *err)
{
	return verify_at(dirfd, key_file, true, err);
}

int cryo_image_verify_sigs_at(int dirfd, const char *key_file, struct cryo_error *err)
{
	return verify_at(dirfd, key_file, false, err);
}

static int open_image_dir(const char *image_dir, struct cryo_error *err)
{
	int fd = open(image_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return cryo_error_set(err, errno, "image `%s`", image_dir);
	return fd;
}

int cryo_image_sign(const char *image_dir, const char *key_file, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;

	dfd = open_image_dir(image_dir, err);
	if (dfd < 0)
		return dfd;
	if (cryo_image_sign_at(dfd, key_file, err) < 0)
		return cryo_error_prefix(err, "image `%s`", image_dir);
	return 0;
}

int cryo_image_verify(const char *image_dir, const char *key_file, struct cryo_error *err)
{
	_cleanup_close_ int dfd = -1;

	dfd = open_image_dir(image_dir, err);
	if (dfd < 0)
		return dfd;
	if (cryo_image_verify_at(dfd, key_file, err) < 0)
		return cryo_error_prefix(err, "image `%s`", image_dir);
	return 0;
}

#define NO_KEY_MSG "a signed image is required, but no key to verify it with was given"

int cryo_image_authenticate(const char *image_dir, const char *verify_key, bool require_signature,
			    struct cryo_error *err)
{
	if (verify_key)
		return cryo_image_verify(image_dir, verify_key, err);
	if (require_signature)
		return cryo_error_setx(err, ENOKEY, "image `%s`: " NO_KEY_MSG, image_dir);
	return 0;
}

int cryo_image_authenticate_at(int dirfd, const char *verify_key, bool require_signature, struct cryo_error *err)
{
	if (verify_key)
		return cryo_image_verify_at(dirfd, verify_key, err);
	if (require_signature)
		return cryo_error_setx(err, ENOKEY, NO_KEY_MSG);
	return 0;
}
