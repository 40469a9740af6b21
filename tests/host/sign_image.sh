#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Authenticated images through the CLI, on an image made without CRIU
# (cryo-test-criu seal, signed by cryo-test-sign as checkpoint
# --sign-key does): `cryo inspect` says whether an image is signed and,
# with --verify-key, whether it verifies; `cryo restore --verify-key` and
# `--require-signature` refuse an unsigned, re-sealed or differently
# signed image before anything exists; `checkpoint --sign-key` refuses a
# key that can't sign before it looks at the container. Keys are made by
# openssl for this run.
. "$(dirname "$0")/../lib/common.sh"
need_root
need_cmd openssl
SEAL=$CRYO_BUILD/tests/tools/cryo-test-criu
SIGN=$CRYO_BUILD/tests/tools/cryo-test-sign
[ -x "$SEAL" ] && [ -x "$SIGN" ] || fail "build $SEAL and $SIGN first"
R=$T/root
id=sign-img-$$
K=$T/keys
mkdir -m 0700 "$K"

# keys: Ed25519 pair, another Ed25519 key, two HMAC keys (hex and raw)
(umask 077
	openssl genpkey -algorithm ed25519 -out "$K/ed.pem" 2>/dev/null
	openssl genpkey -algorithm ed25519 -out "$K/other.pem" 2>/dev/null
	printf 'hmac:%s\n' "$(openssl rand -hex 32)" >"$K/hmac.key"
	openssl rand -out "$K/raw.key" 48) || fail "openssl could not make the test keys"
openssl pkey -in "$K/ed.pem" -pubout -out "$K/ed.pub" 2>/dev/null || fail "openssl pkey -pubout"
chmod 644 "$K/ed.pub"

mkimg() { sealed_image "$T/img" "$id"; }

# restore must refuse with text $2, having created nothing
restore_refused() {
	local what=$1 text=$2
	shift 2
	expect_fail 1 cryo --root "$R" restore -d --image-path "$T/img" --bundle "$T/nobundle" "$@" "$id"
	echo "$LAST_OUTPUT" | grep -qF -- "$text" || fail "$what: unexpected error: $LAST_OUTPUT"
	expect_output -E "restore \`$id\`: (verify: )?image \`$T/img\`" "$what: error does not name the image"
	[ ! -e "$R/$id" ] || fail "$what: container state was created"
	log "$what: $(head -1 <<<"$LAST_OUTPUT")"
}

# unsigned: inspect says so; restore without a key gets past the signature
mkimg
out=$(cryo inspect "$T/img") || fail "inspect of an unsigned image: $out"
grep -q '^signed: *no$' <<<"$out" || fail "inspect of an unsigned image: $out"
restore_refused "unsigned, --require-signature" "a signed image is required, but no key to verify it with was given" --require-signature
restore_refused "unsigned, --verify-key" "the image is not signed (it has no \`manifest.sig\`)" --verify-key "$K/ed.pub"
expect_fail 1 cryo --root "$R" restore -d --image-path "$T/img" --bundle "$T/nobundle" "$id"
if echo "$LAST_OUTPUT" | grep -q "signature\|signed"; then
	fail "an unsigned image without a key was refused for its signature: $LAST_OUTPUT"
fi
[ ! -e "$R/$id" ] || fail "restore of an image with no bundle created the container"

for kind in ed25519 hmac raw; do
	case $kind in
	ed25519) skey=$K/ed.pem vkey=$K/ed.pub wrong=$K/other.pem alg=ed25519 ;;
	hmac) skey=$K/hmac.key vkey=$K/hmac.key wrong=$K/raw.key alg=hmac-sha256 ;;
	raw) skey=$K/raw.key vkey=$K/raw.key wrong=$K/hmac.key alg=hmac-sha256 ;;
	esac
	mkimg
	check "$SIGN" sign "$T/img" "$skey"
	[ "$(stat -c %a "$T/img/manifest.sig")" = 600 ] || fail "$kind: manifest.sig is not 0600"
	out=$(cryo inspect "$T/img") || fail "$kind: inspect: $out"
	grep -q "^signed: *$alg, key [0-9a-f]\{16\}$" <<<"$out" || fail "$kind: inspect: $out"
	grep -q '^verified: *yes' <<<"$out" || fail "$kind: a signed image does not verify: $out"
	out=$(cryo inspect --verify-key "$vkey" "$T/img") || fail "$kind: inspect --verify-key: $out"
	grep -q '^signature: *valid' <<<"$out" || fail "$kind: inspect --verify-key: $out"
	cryo inspect --json --verify-key "$vkey" "$T/img" |
		python3 -c 'import json,sys; m=json.load(sys.stdin); assert m["signed"] and m["signatureVerified"] and m["signatureAlgorithm"] == sys.argv[1], m' "$alg" ||
		fail "$kind: inspect --json --verify-key"

	expect_fail 1 cryo inspect --verify-key "$wrong" "$T/img"
	grep -q '^signature: .*not by the verify key' <<<"$LAST_OUTPUT" || fail "$kind: inspect with the wrong key: $LAST_OUTPUT"
	restore_refused "$kind: wrong key" "not by the verify key" --verify-key "$wrong"
	restore_refused "$kind: signed but no key, --require-signature" "no key to verify it with" --require-signature

	# the attack: the image and its manifest rewritten together (digests agree)
	echo evil >"$T/img/core-1.img"
	check "$SEAL" seal "$T/img" "$id"
	out=$(cryo inspect "$T/img") || fail "$kind: a re-sealed image does not verify by digest: $out"
	expect_fail 1 cryo inspect --verify-key "$vkey" "$T/img"
	grep -q '^signature: .*the image was altered' <<<"$LAST_OUTPUT" || fail "$kind: re-sealed image: $LAST_OUTPUT"
	restore_refused "$kind: re-sealed manifest" "signature does not match \`manifest.pb\`: the image was altered" --verify-key "$vkey" --require-signature
done

# the attack through CRIU's parent link: a signed dump on top of an unsigned
# (or differently signed) pre-dump must not lead restore into the parent
for how in unsigned wrong-key; do
	rm -rf "$T/pre"
	mkdir -m 0700 "$T/pre"
	echo evil-pages >"$T/pre/pages-1.img"
	chmod 600 "$T/pre/pages-1.img"
	check "$SEAL" seal "$T/pre" "$id"
	[ $how = wrong-key ] && check "$SIGN" sign "$T/pre" "$K/other.pem"
	mkimg
	ln -s ../pre "$T/img/parent"
	check "$SEAL" seal "$T/img" "$id"
	check "$SIGN" sign "$T/img" "$K/ed.pem"
	if [ $how = unsigned ]; then
		restore_refused "signed dump, unsigned parent" "parent image \`../pre\`: " --verify-key "$K/ed.pub"
		expect_output "the image is not signed" "signed dump, unsigned parent"
	else
		restore_refused "signed dump, parent signed by another key" "parent image \`../pre\`: " --verify-key "$K/ed.pub"
		expect_output "not by the verify key" "signed dump, parent signed by another key"
	fi
done
rm -f "$T/img/parent"

# a flipped byte of the signature; a signature that is a FIFO (must not hang)
mkimg
check "$SIGN" sign "$T/img" "$K/ed.pem"
printf 'Z' | dd of="$T/img/manifest.sig" bs=1 seek=60 conv=notrunc status=none
restore_refused "flipped signature byte" "signature does not match" --verify-key "$K/ed.pub"
rm "$T/img/manifest.sig"
mkfifo -m 600 "$T/img/manifest.sig"
expect_fail 1 timeout 20 "$CRYO_BIN" --root "$R" restore -d --image-path "$T/img" --verify-key "$K/ed.pub" "$id"
expect_output "manifest.sig\`: not a regular file" "FIFO signature"

# key files: a symlink, a FIFO and a group-readable secret are refused
ln -s "$K/ed.pub" "$K/link.pub"
mkfifo -m 600 "$K/fifo.key"
mkimg
check "$SIGN" sign "$T/img" "$K/ed.pem"
restore_refused "symlinked key" "refusing to follow it" --verify-key "$K/link.pub"
expect_fail 1 timeout 20 "$CRYO_BIN" --root "$R" restore -d --image-path "$T/img" --verify-key "$K/fifo.key" "$id"
expect_output "fifo.key\`: not a regular file" "FIFO key"
chmod 640 "$K/hmac.key"
expect_fail 1 "$SIGN" sign "$T/img" "$K/hmac.key"
expect_output "accessible to other users (mode 0640)" "group-readable key"

# checkpoint --sign-key: a key that can't sign is refused before the container is looked at
expect_fail 1 cryo --root "$R" checkpoint --sign-key "$K/ed.pub" --image-path "$T/ck" "$id"
expect_output "holds a public key: signing needs the Ed25519 private key" "checkpoint with a public key"
expect_fail 1 cryo --root "$R" checkpoint --sign-key "$K/hmac.key" --image-path "$T/ck" "$id"
expect_output "accessible to other users" "checkpoint with a readable key"
[ ! -e "$T/ck" ] || fail "checkpoint with a bad key made an image"
echo "PASS sign_image"
