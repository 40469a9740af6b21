/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Authenticated checkpoint images.
 *
 * The manifest (manifest.pb) carries the size and SHA-256 of every file
 * of an image, but only digests itself: whoever can write an image can
 * write a matching manifest. A signature over the manifest's exact bytes,
 * stored next to it as `manifest.sig` (0600), closes that: once the
 * signature verifies, the manifest is the signer's, and through its
 * digests (cryo_manifest_verify_at) so is every file.
 *
 * Two kinds of key, told apart by the key file's content:
 *
 *   Ed25519     a PEM file. Signing takes the private key
 *               (`openssl genpkey -algorithm ed25519`), verifying the
 *               public one (`openssl pkey -pubout`; the private key is
 *               accepted too). Other PEM key types are refused.
 *   HMAC-SHA256 a shared secret, either a text file `hmac:<hex>` with at
 *               least 64 hex digits (32 bytes), or any other file of 32
 *               to 4096 raw bytes (`openssl rand -out key 32`). The same
 *               file signs and verifies.
 *
 * Key files are read with O_NOFOLLOW|O_NONBLOCK and must be regular files
 * (a symlink, FIFO or device is refused); a secret key (HMAC, or an
 * Ed25519 private key) must not be accessible to group or others, like
 * ssh's identity files. Encrypted PEM keys are refused (nothing prompts).
 *
 * manifest.sig is "CRYOSIG1" | algorithm (1 byte) | key id (32 bytes) |
 * signature (64 bytes Ed25519, 32 bytes HMAC), and the signed message is
 * its first 41 bytes followed by the manifest file, so the algorithm and
 * key id are authenticated too and a signature can't be taken for one
 * over some other cryo message. The key id is the SHA-256 of the Ed25519
 * public key, or HMAC-SHA256(key, "cryo key id"); it only lets errors and
 * `cryo inspect` say which key signed, it grants nothing.
 */
#ifndef CRYO_SIGN_H
#define CRYO_SIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define CRYO_SIGNATURE_NAME "manifest.sig"
#define CRYO_SIGN_KEY_ID_LEN 32
/* HMAC keys: at least 256 bits, and a bound on what is read */
#define CRYO_SIGN_HMAC_MIN_KEY 32
#define CRYO_SIGN_HMAC_MAX_KEY 4096

enum cryo_sign_alg {
	CRYO_SIGN_NONE,
	CRYO_SIGN_ED25519,
	CRYO_SIGN_HMAC_SHA256,
	_CRYO_SIGN_ALG_MAX,
};

/* "none", "ed25519", "hmac-sha256" */
extern const char *const cryo_sign_alg_names[_CRYO_SIGN_ALG_MAX];

struct cryo_signature_info {
	enum cryo_sign_alg alg;
	uint8_t key_id[CRYO_SIGN_KEY_ID_LEN];
};

/*
 * Load key_file and check it can sign (for_signing) or verify; on
 * success, *ret_info (may be NULL) says its algorithm and key id. Lets a
 * checkpoint refuse a bad key before it freezes anything.
 */
int cryo_sign_key_check(const char *key_file, bool for_signing, struct cryo_signature_info *ret_info,
			struct cryo_error *err);

/*
 * Sign the manifest of the image directory (after it is written; a
 * previous signature is replaced atomically).
 */
int cryo_image_sign(const char *image_dir, const char *key_file, struct cryo_error *err);
int cryo_image_sign_at(int dirfd, const char *key_file, struct cryo_error *err);

/*
 * Verify the image's signature with key_file: -ENOENT when the image is
 * not signed, -EKEYREJECTED when it is signed with another key or kind
 * of key, -EBADMSG when the signature or the manifest was altered. Of
 * the image itself only the manifest is checked; cryo_manifest_verify_at()
 * then checks every file against it. The parent images of an incremental
 * dump (its `parent` symlink, then theirs) must be signed with the same
 * key and are verified whole, files included: nothing else checks them.
 */
int cryo_image_verify(const char *image_dir, const char *key_file, struct cryo_error *err);
int cryo_image_verify_at(int dirfd, const char *key_file, struct cryo_error *err);
/*
 * The same, but of the parents only their signatures: for a caller that
 * checked their files itself (receive checks each pre-copy round as it
 * arrives; hashing them again would add to the downtime).
 */
int cryo_image_verify_sigs_at(int dirfd, const char *key_file, struct cryo_error *err);

/*
 * The restore policy in one call: with a key, the image must be signed
 * with it; without one, require_signature refuses (an image from
 * elsewhere must be authenticated, and nothing can be without a key);
 * otherwise an unsigned image is fine and nothing is checked.
 */
int cryo_image_authenticate(const char *image_dir, const char *verify_key, bool require_signature,
			    struct cryo_error *err);
/* The same on an open image dir (errors do not name it: the caller does). */
int cryo_image_authenticate_at(int dirfd, const char *verify_key, bool require_signature, struct cryo_error *err);

/*
 * What signed the image, without verifying anything: -ENOENT when it is
 * not signed, -EBADMSG when manifest.sig is malformed.
 */
int cryo_image_signature_at(int dirfd, struct cryo_signature_info *ret, struct cryo_error *err);

/* Short hex of a key id for messages (17 bytes: 16 hex digits + NUL). */
void cryo_sign_key_id_hex(const uint8_t id[CRYO_SIGN_KEY_ID_LEN], char out[17]);

#endif
