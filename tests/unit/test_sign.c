// SPDX-License-Identifier: GPL-2.0-only
/*
 * Authenticated images (runtime/sign.c): a signed manifest verifies with
 * its key, for both kinds of key, and every way to get around that is
 * refused: an altered manifest or signature, another key, a truncated or
 * missing signature, a key or signature file that is a symlink or FIFO.
 * The keys are made here, with OpenSSL, for each run.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "manifest.h"
#include "sign.h"
#include "util.h"
#include "testlib.h"

struct fixture {
	char dir[64];
	int dfd;       /* the image */
	int kfd;       /* the keys, dir/keys */
	char keys[96];
	char img[96];
};

static char *kpath(struct fixture *f, const char *name)
{
	static char p[4][160];
	static int i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", f->keys, name);
	return p[i];
}

static void put(int dfd, const char *name, const void *content, size_t len, mode_t mode)
{
	assert_int_equal(cryo_write_new_file_at(dfd, name, content, len, mode), 0);
}

static void put_pem(struct fixture *f, const char *name, EVP_PKEY *k, bool pub, const EVP_CIPHER *enc, mode_t mode)
{
	BIO *b = BIO_new_file(kpath(f, name), "w");

	assert_non_null(b);
	if (pub)
		assert_int_equal(PEM_write_bio_PUBKEY(b, k), 1);
	else
		assert_int_equal(PEM_write_bio_PrivateKey(b, k, enc, enc ? (unsigned char *)"secret" : NULL, enc ? 6 : 0,
							  NULL, NULL),
				 1);
	BIO_free(b);
	assert_int_equal(fchmodat(f->kfd, name, mode, 0), 0);
}

static void put_hmac_hex(struct fixture *f, const char *name, size_t bytes)
{
	uint8_t key[64];
	char text[8 + 2 * sizeof(key)];
	size_t i, n;

	assert_true(bytes <= sizeof(key));
	assert_int_equal(RAND_bytes(key, (int)bytes), 1);
	n = (size_t)snprintf(text, sizeof(text), "hmac:");
	for (i = 0; i < bytes; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%02x", key[i]);
	text[n++] = '\n';
	put(f->kfd, name, text, n, 0600);
}

static void put_raw_key(struct fixture *f, const char *name, size_t bytes)
{
	uint8_t key[64];

	assert_true(bytes <= sizeof(key));
	assert_int_equal(RAND_bytes(key, (int)bytes), 1);
	/* no accidental `hmac:`/PEM prefix */
	key[0] = 0;
	put(f->kfd, name, key, bytes, 0600);
}

/* A manifest for whatever the image dir holds (what checkpoint's manifest step does). */
static void seal(struct fixture *f)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	Cryo__Manifest *m = NULL;

	assert_int_equal(cryo_manifest_new("web-1", "{\"ociVersion\":\"1.0.2\"}", &m, &err), 0);
	assert_int_equal(cryo_manifest_hash_dir(m, f->dfd, &err), 0);
	assert_int_equal(cryo_manifest_write_at(f->dfd, m, &err), 0);
	cryo_manifest_free(m);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	EVP_PKEY *ed, *ed2, *ec;
	int fd;

	assert_non_null(f);
	strcpy(f->dir, "/tmp/cryo-unit-sign.XXXXXX");
	fd = tl_tmpdir(f->dir);
	assert_true(fd >= 0);
	close(fd);
	snprintf(f->img, sizeof(f->img), "%s/img", f->dir);
	snprintf(f->keys, sizeof(f->keys), "%s/keys", f->dir);
	assert_int_equal(mkdir(f->img, 0700), 0);
	assert_int_equal(mkdir(f->keys, 0700), 0);
	f->dfd = open(f->img, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->kfd = open(f->keys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->dfd >= 0 && f->kfd >= 0);
	put(f->dfd, "core-1.img", "core image of pid 1", 19, 0600);
	put(f->dfd, "pages-1.img", "0123456789abcdef0123456789abcdef", 32, 0600);
	seal(f);

	ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	ed2 = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	assert_true(ed && ed2 && ec);
	put_pem(f, "ed.pem", ed, false, NULL, 0600);
	put_pem(f, "ed.pub", ed, true, NULL, 0644);
	put_pem(f, "ed2.pem", ed2, false, NULL, 0600);
	put_pem(f, "ed2.pub", ed2, true, NULL, 0644);
	put_pem(f, "ec.pem", ec, false, NULL, 0600);
	put_pem(f, "ed-enc.pem", ed, false, EVP_aes_256_cbc(), 0600);
	EVP_PKEY_free(ed);
	EVP_PKEY_free(ed2);
	EVP_PKEY_free(ec);
	put_hmac_hex(f, "hmac.key", 32);
	put_hmac_hex(f, "hmac2.key", 32);
	put_raw_key(f, "raw.key", 48);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	close(f->dfd);
	close(f->kfd);
	assert_int_equal(tl_rm_rf(f->dir), 0);
	free(f);
	return 0;
}

static void sign_ok(struct fixture *f, const char *key)
{
	struct cryo_error err = CRYO_ERROR_INIT;

	if (cryo_image_sign(f->img, kpath(f, key), &err) < 0)
		fail_msg("sign with %s: %s", key, err.msg);
}

static void verify_ok(struct fixture *f, const char *key)
{
	struct cryo_error err = CRYO_ERROR_INIT;

	if (cryo_image_verify(f->img, kpath(f, key), &err) < 0)
		fail_msg("verify with %s: %s", key, err.msg);
}

static void expect(int r, int want, struct cryo_error *err, const char *needle)
{
	if (r != want)
		fail_msg("returned %d (%s), expected %d", r, err->msg ? err->msg : "no message", want);
	if (want < 0) {
		assert_non_null(err->msg);
		if (!strstr(err->msg, needle))
			fail_msg("error `%s` does not mention `%s`", err->msg, needle);
	}
	cryo_error_clear(err);
}

static void verify_refused(struct fixture *f, const char *key, int want, const char *needle)
{
	struct cryo_error err = CRYO_ERROR_INIT;

	expect(cryo_image_verify(f->img, kpath(f, key), &err), want, &err, needle);
}

static off_t file_size(int dfd, const char *name)
{
	struct stat st;

	assert_int_equal(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_size;
}

static void test_round_trip_ed25519(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;
	struct cryo_signature_info si, ki;
	Cryo__Manifest *m = NULL;
	struct stat st;

	sign_ok(f, "ed.pem");
	assert_int_equal(fstatat(f->dfd, CRYO_SIGNATURE_NAME, &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 8 + 1 + 32 + 64);
	assert_int_equal(faccessat(f->dfd, ".manifest.sig.tmp", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	verify_ok(f, "ed.pub");
	verify_ok(f, "ed.pem"); /* the private key verifies too */
	assert_int_equal(cryo_image_authenticate(f->img, kpath(f, "ed.pub"), true, &err), 0);

	/* the signature names its algorithm and key; the key check agrees */
	assert_int_equal(cryo_image_signature_at(f->dfd, &si, &err), 0);
	assert_int_equal(si.alg, CRYO_SIGN_ED25519);
	assert_int_equal(cryo_sign_key_check(kpath(f, "ed.pub"), false, &ki, &err), 0);
	assert_memory_equal(si.key_id, ki.key_id, CRYO_SIGN_KEY_ID_LEN);

	/* the signature is not an image file: the manifest still verifies */
	assert_int_equal(cryo_manifest_load_verified(f->img, &m, &err), 0);
	cryo_manifest_free(m);

	/* signing again replaces it */
	sign_ok(f, "ed2.pem");
	verify_ok(f, "ed2.pub");
	verify_refused(f, "ed.pub", -EKEYREJECTED, "not by the verify key");
}

static void test_round_trip_hmac(void **state)
{
	struct fixture *f = *state;
	struct cryo_signature_info si;
	struct cryo_error err = CRYO_ERROR_INIT;

	sign_ok(f, "hmac.key");
	assert_int_equal(file_size(f->dfd, CRYO_SIGNATURE_NAME), 8 + 1 + 32 + 32);
	verify_ok(f, "hmac.key");
	assert_int_equal(cryo_image_signature_at(f->dfd, &si, &err), 0);
	assert_int_equal(si.alg, CRYO_SIGN_HMAC_SHA256);

	sign_ok(f, "raw.key");
	verify_ok(f, "raw.key");
	verify_refused(f, "hmac.key", -EKEYREJECTED, "not by the verify key");
}

/* The attack the signature exists for: image and manifest rewritten together. */
static void test_altered_manifest(void **state)
{
	struct fixture *f = *state;
	static const char *const keys[] = { "ed.pem", "hmac.key" };
	const char *const vkeys[] = { "ed.pub", "hmac.key" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		seal(f);
		sign_ok(f, keys[i]);
		tl_flip_byte(f->dfd, CRYO_MANIFEST_NAME, file_size(f->dfd, CRYO_MANIFEST_NAME) - 3);
		verify_refused(f, vkeys[i], -EBADMSG, "does not match `manifest.pb`: the image was altered");

		seal(f);
		sign_ok(f, keys[i]);
		put(f->dfd, "pages-1.img", "evil pages", 10, 0600);
		seal(f); /* a consistent manifest for the new content: digests alone can't tell */
		verify_refused(f, vkeys[i], -EBADMSG, "the image was altered");
		put(f->dfd, "pages-1.img", "0123456789abcdef0123456789abcdef", 32, 0600);
	}
}

/* Any flipped byte of the signature file is refused, whatever it hits. */
static void test_altered_signature(void **state)
{
	struct fixture *f = *state;
	static const char *const keys[] = { "ed.pem", "hmac.key" };
	const char *const vkeys[] = { "ed.pub", "hmac.key" };
	struct cryo_error err = CRYO_ERROR_INIT;
	size_t i;
	off_t off, len;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		sign_ok(f, keys[i]);
		len = file_size(f->dfd, CRYO_SIGNATURE_NAME);
		for (off = 0; off < len; off++) {
			int r;

			tl_flip_byte(f->dfd, CRYO_SIGNATURE_NAME, off);
			r = cryo_image_verify(f->img, kpath(f, vkeys[i]), &err);
			if (r >= 0)
				fail_msg("%s: flipped byte %lld of the signature was accepted", keys[i], (long long)off);
			assert_true(r == -EBADMSG || r == -EKEYREJECTED);
			cryo_error_clear(&err);
			tl_flip_byte(f->dfd, CRYO_SIGNATURE_NAME, off);
		}
		verify_ok(f, vkeys[i]);
		tl_flip_byte(f->dfd, CRYO_SIGNATURE_NAME, len - 1);
		verify_refused(f, vkeys[i], -EBADMSG, "signature does not match");
	}
}

static void test_wrong_key(void **state)
{
	struct fixture *f = *state;
	uint8_t id[CRYO_SIGN_KEY_ID_LEN];
	struct cryo_signature_info ki;
	struct cryo_error err = CRYO_ERROR_INIT;
	int fd;

	sign_ok(f, "ed.pem");
	verify_refused(f, "ed2.pub", -EKEYREJECTED, "not by the verify key");
	verify_refused(f, "hmac.key", -EKEYREJECTED, "signed with ed25519, but the verify key is an hmac-sha256 key");
	sign_ok(f, "hmac.key");
	verify_refused(f, "hmac2.key", -EKEYREJECTED, "not by the verify key");
	verify_refused(f, "ed.pub", -EKEYREJECTED, "signed with hmac-sha256, but the verify key is an ed25519 key");

	/* another key's signature wearing the right key id: the id is signed, so it fails */
	sign_ok(f, "ed2.pem");
	assert_int_equal(cryo_sign_key_check(kpath(f, "ed.pub"), false, &ki, &err), 0);
	memcpy(id, ki.key_id, sizeof(id));
	fd = openat(f->dfd, CRYO_SIGNATURE_NAME, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, id, sizeof(id), 9), (ssize_t)sizeof(id));
	close(fd);
	verify_refused(f, "ed.pub", -EBADMSG, "signature does not match");
}

static void test_truncated_signature(void **state)
{
	struct fixture *f = *state;
	const off_t sizes[] = { 104, 41, 40, 8, 0 };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		int fd;

		sign_ok(f, "ed.pem");
		fd = openat(f->dfd, CRYO_SIGNATURE_NAME, O_WRONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(ftruncate(fd, sizes[i]), 0);
		close(fd);
		verify_refused(f, "ed.pub", -EBADMSG, "manifest.sig");
	}
	/* grown by a byte: an HMAC signature, still shorter than an Ed25519 one */
	sign_ok(f, "hmac.key");
	{
		int fd = openat(f->dfd, CRYO_SIGNATURE_NAME, O_WRONLY | O_APPEND | O_CLOEXEC);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "x", 1), 1);
		close(fd);
	}
	verify_refused(f, "hmac.key", -EBADMSG, "truncated or padded");
}

static void test_missing_signature(void **state)
{
	struct fixture *f = *state;
	struct cryo_signature_info si;
	struct cryo_error err = CRYO_ERROR_INIT;

	/* unsigned local images keep working when no key is given */
	expect(cryo_image_authenticate(f->img, NULL, false, &err), 0, &err, NULL);
	/* images from elsewhere (--require-signature) need a key, and a signature */
	expect(cryo_image_authenticate(f->img, NULL, true, &err), -ENOKEY, &err, "a signed image is required");
	expect(cryo_image_authenticate(f->img, kpath(f, "ed.pub"), true, &err), -ENOENT, &err,
	       "the image is not signed (it has no `manifest.sig`)");
	/* a key always requires a signature */
	expect(cryo_image_authenticate(f->img, kpath(f, "ed.pub"), false, &err), -ENOENT, &err, "not signed");
	expect(cryo_image_signature_at(f->dfd, &si, &err), -ENOENT, &err, "not signed");
	sign_ok(f, "ed.pem");
	expect(cryo_image_authenticate(f->img, NULL, true, &err), -ENOKEY, &err, "no key to verify it with");
	expect(cryo_image_authenticate(f->img, kpath(f, "ed.pub"), true, &err), 0, &err, NULL);
}

static void test_key_files(void **state)
{
	struct fixture *f = *state;
	struct cryo_error err = CRYO_ERROR_INIT;

	alarm(20); /* a FIFO that is opened for reading blocks forever */
	assert_int_equal(symlinkat("ed.pub", f->kfd, "link.pub"), 0);
	assert_int_equal(symlinkat("hmac.key", f->kfd, "link.key"), 0);
	assert_int_equal(mkfifoat(f->kfd, "fifo.key", 0600), 0);
	assert_int_equal(mkdirat(f->kfd, "dir.key", 0700), 0);

	sign_ok(f, "ed.pem");
	verify_refused(f, "link.pub", -ELOOP, "symlink");
	verify_refused(f, "fifo.key", -EINVAL, "not a regular file");
	verify_refused(f, "dir.key", -EINVAL, "not a regular file");
	verify_refused(f, "missing.key", -ENOENT, "missing.key");
	expect(cryo_image_sign(f->img, kpath(f, "link.key"), &err), -ELOOP, &err, "symlink");
	expect(cryo_image_sign(f->img, kpath(f, "fifo.key"), &err), -EINVAL, &err, "not a regular file");

	/* secret keys only for their owner; a public key may be world-readable */
	assert_int_equal(fchmodat(f->kfd, "hmac.key", 0640, 0), 0);
	verify_refused(f, "hmac.key", -EPERM, "accessible to other users (mode 0640)");
	expect(cryo_image_sign(f->img, kpath(f, "hmac.key"), &err), -EPERM, &err, "chmod 600");
	assert_int_equal(fchmodat(f->kfd, "ed.pem", 0604, 0), 0);
	expect(cryo_image_sign(f->img, kpath(f, "ed.pem"), &err), -EPERM, &err, "accessible to other users");
	assert_int_equal(fchmodat(f->kfd, "ed.pem", 0600, 0), 0);
	verify_ok(f, "ed.pub");

	/* what can't be a key */
	expect(cryo_image_sign(f->img, kpath(f, "ed.pub"), &err), -EINVAL, &err, "holds a public key");
	expect(cryo_sign_key_check(kpath(f, "ec.pem"), true, NULL, &err), -EINVAL, &err,
	       "its key type (EC) is not supported, only Ed25519 PEM keys are");
	expect(cryo_sign_key_check(kpath(f, "ed-enc.pem"), true, NULL, &err), -EINVAL, &err,
	       "encrypted PEM keys are not supported");
	put_raw_key(f, "short.key", 31);
	expect(cryo_sign_key_check(kpath(f, "short.key"), true, NULL, &err), -EINVAL, &err, "32 to 4096 bytes");
	put(f->kfd, "short-hex.key", "hmac:00112233\n", 14, 0600);
	expect(cryo_sign_key_check(kpath(f, "short-hex.key"), true, NULL, &err), -EINVAL, &err,
	       "this one has 4");
	put(f->kfd, "bad-hex.key", "hmac:zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", 70, 0600);
	expect(cryo_sign_key_check(kpath(f, "bad-hex.key"), true, NULL, &err), -EINVAL, &err, "hex digits only");
	put(f->kfd, "empty.key", "", 0, 0600);
	expect(cryo_sign_key_check(kpath(f, "empty.key"), true, NULL, &err), -EINVAL, &err, "has 0");
	put(f->kfd, "junk.pem", "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n", 64, 0600);
	expect(cryo_sign_key_check(kpath(f, "junk.pem"), true, NULL, &err), -EINVAL, &err, "not a PEM private key");
	expect(cryo_sign_key_check(NULL, true, NULL, &err), -EINVAL, &err, "no key file");
	alarm(0);
}

static void test_signature_files(void **state)
{
	struct fixture *f = *state;
	char big[512];

	alarm(20);
	sign_ok(f, "ed.pem");
	assert_int_equal(unlinkat(f->dfd, CRYO_SIGNATURE_NAME, 0), 0);
	assert_int_equal(mkfifoat(f->dfd, CRYO_SIGNATURE_NAME, 0600), 0);
	verify_refused(f, "ed.pub", -EINVAL, "not a regular file");
	assert_int_equal(unlinkat(f->dfd, CRYO_SIGNATURE_NAME, 0), 0);

	/* a symlink to a valid signature elsewhere is still refused */
	sign_ok(f, "ed.pem");
	assert_int_equal(renameat(f->dfd, CRYO_SIGNATURE_NAME, f->kfd, "saved.sig"), 0);
	assert_int_equal(symlinkat(kpath(f, "saved.sig"), f->dfd, CRYO_SIGNATURE_NAME), 0);
	verify_refused(f, "ed.pub", -ELOOP, "symlink");
	assert_int_equal(unlinkat(f->dfd, CRYO_SIGNATURE_NAME, 0), 0);

	memset(big, 'A', sizeof(big));
	memcpy(big, "CRYOSIG1", 8);
	put(f->dfd, CRYO_SIGNATURE_NAME, big, sizeof(big), 0600);
	verify_refused(f, "ed.pub", -EBADMSG, "longer than any cryo signature");
	big[8] = 7;
	put(f->dfd, CRYO_SIGNATURE_NAME, big, 105, 0600);
	verify_refused(f, "ed.pub", -EBADMSG, "unknown algorithm 7");
	alarm(0);
}

/* Seal and sign a directory of the fixture (path relative to f->dir). */
static void seal_sign_at(struct fixture *f, const char *sub, const char *key)
{
	struct cryo_error err = CRYO_ERROR_INIT;
	Cryo__Manifest *m = NULL;
	char path[160];
	int dfd;

	snprintf(path, sizeof(path), "%s/%s", f->dir, sub);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(cryo_manifest_new("web-1", "{}", &m, &err), 0);
	assert_int_equal(cryo_manifest_hash_dir(m, dfd, &err), 0);
	assert_int_equal(cryo_manifest_write_at(dfd, m, &err), 0);
	cryo_manifest_free(m);
	if (key && cryo_image_sign_at(dfd, kpath(f, key), &err) < 0)
		fail_msg("sign %s: %s", sub, err.msg);
	close(dfd);
}

/* An incremental dump is restored with its parents' pages: they must be signed and intact too. */
static void test_parent_chain(void **state)
{
	struct fixture *f = *state;
	char pre[160];
	int pfd;

	snprintf(pre, sizeof(pre), "%s/pre", f->dir);
	assert_int_equal(mkdir(pre, 0700), 0);
	pfd = open(pre, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(pfd >= 0);
	put(pfd, "pages-1.img", "pre-dump pages", 14, 0600);
	seal_sign_at(f, "pre", "ed.pem");
	assert_int_equal(symlinkat("../pre", f->dfd, "parent"), 0);
	seal_sign_at(f, "img", "ed.pem");
	verify_ok(f, "ed.pub");

	/* a parent's file altered: only the chain check can see it */
	put(pfd, "pages-1.img", "evil!!! pages!", 14, 0600);
	verify_refused(f, "ed.pub", -EBADMSG, "parent image `../pre`: file `pages-1.img` is corrupted");
	put(pfd, "pages-1.img", "pre-dump pages", 14, 0600);
	verify_ok(f, "ed.pub");

	/* a parent altered and re-sealed (not signed), or signed by another key */
	put(pfd, "pages-1.img", "evil!!! pages!", 14, 0600);
	seal_sign_at(f, "pre", NULL);
	verify_refused(f, "ed.pub", -EBADMSG, "parent image `../pre`: the ed25519 signature does not match");
	assert_int_equal(unlinkat(pfd, CRYO_SIGNATURE_NAME, 0), 0);
	verify_refused(f, "ed.pub", -ENOENT, "parent image `../pre`: the image is not signed");
	seal_sign_at(f, "pre", "ed2.pem");
	verify_refused(f, "ed.pub", -EKEYREJECTED, "parent image `../pre`: the image is signed by key");

	/* a chain that loops ends */
	assert_int_equal(symlinkat("../img", pfd, "parent"), 0);
	seal_sign_at(f, "pre", "ed.pem");
	verify_refused(f, "ed.pub", -ELOOP, "more than 16 parent images");

	/* a parent that is not there */
	assert_int_equal(unlinkat(f->dfd, "parent", 0), 0);
	assert_int_equal(symlinkat("../gone", f->dfd, "parent"), 0);
	seal_sign_at(f, "img", "ed.pem");
	verify_refused(f, "ed.pub", -ENOENT, "parent image `../gone`");
	close(pfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip_ed25519, setup, teardown),
		cmocka_unit_test_setup_teardown(test_round_trip_hmac, setup, teardown),
		cmocka_unit_test_setup_teardown(test_altered_manifest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_altered_signature, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_signature, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_signature, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signature_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_chain, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
