#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A real `checkpoint --sign-key` (Ed25519, then HMAC) of a counting
# container writes manifest.sig (0600) into the committed image; `inspect
# --verify-key` accepts it; `restore --verify-key` with another key, or
# of the image with a re-sealed manifest, is refused before anything
# exists; with the right key and --require-signature the container comes
# back and counts on. Needs a CRIU that works on this kernel (CRIU 4 from
# tests/setup-criu4.sh on hosts with kernel >= 6.13).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_cmd openssl
need_host_criu
SEAL=$CRYO_BUILD/tests/tools/cryo-test-criu
[ -x "$SEAL" ] || fail "build $SEAL first"

K=$T/keys
mkdir -m 0700 "$K"
(umask 077
	openssl genpkey -algorithm ed25519 -out "$K/ed.pem" 2>/dev/null
	openssl genpkey -algorithm ed25519 -out "$K/other.pem" 2>/dev/null
	printf 'hmac:%s\n' "$(openssl rand -hex 32)" >"$K/hmac.key") || fail "openssl could not make the test keys"
openssl pkey -in "$K/ed.pem" -pubout -out "$K/ed.pub" 2>/dev/null || fail "openssl pkey -pubout"
openssl pkey -in "$K/other.pem" -pubout -out "$K/other.pub" 2>/dev/null || fail "openssl pkey -pubout"

id=sign-ck-$$
B=$T/$id
# runs after the bundle's teardown: a restored rootfs's loop device (autoclear)
# goes away asynchronously after its umount; wait for it, detach a straggler
loops_gone() {
	local d
	for _ in $(seq 50); do
		losetup -a 2>/dev/null | grep -qF "$B/rootfs.img" || return 0
		sleep 0.1
	done
	for d in $(losetup -a 2>/dev/null | grep -F "$B/rootfs.img" | cut -d: -f1); do losetup -d "$d"; done
}
at_exit loops_gone
bundle_counting "$B"
count() { bundle_count "$B"; }

for kind in ed25519 hmac; do
	case $kind in
	ed25519) skey=$K/ed.pem vkey=$K/ed.pub wrong=$K/other.pub ;;
	hmac) skey=$K/hmac.key vkey=$K/hmac.key wrong=$K/ed.pub ;;
	esac
	rm -rf "$T/img"
	# stdio on /dev/null: CRIU can't dump a file that lives on a host mount
	rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "$kind: run failed"
	for _ in $(seq 50); do [ "$(count)" -gt 2 ] && break; sleep 0.1; done
	[ "$(count)" -gt 2 ] || fail "$kind: the container does not count"

	check rt checkpoint --sign-key "$skey" --image-path "$T/img" "$id"
	[ -f "$T/img/manifest.sig" ] || fail "$kind: no manifest.sig in the image: $(ls "$T/img")"
	[ "$(stat -c %a "$T/img/manifest.sig")" = 600 ] || fail "$kind: manifest.sig is not 0600"
	out=$(rt inspect --verify-key "$vkey" "$T/img") || fail "$kind: inspect --verify-key: $out"
	grep -q '^signature: *valid' <<<"$out" || fail "$kind: inspect --verify-key: $out"
	c0=$(count)

	expect_fail 1 rt restore -d --bundle "$B" --image-path "$T/img" --verify-key "$wrong" "$id"
	grep -q "verify signature: the image is signed" <<<"$LAST_OUTPUT" || fail "$kind: wrong key: $LAST_OUTPUT"
	st=$(rt state "$id" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null || echo none)
	[ "$st" = stopped ] || [ "$st" = none ] || fail "$kind: a refused restore left the container $st"

	# a re-sealed copy (manifest rewritten to match altered files) is refused
	cp -a "$T/img" "$T/img2"
	echo 'tampered' >>"$T/img2/$(cd "$T/img2" && ls | grep -v '^manifest\.' | head -1)"
	check "$SEAL" seal "$T/img2" "$id"
	expect_fail 1 rt restore -d --bundle "$B" --image-path "$T/img2" --verify-key "$vkey" "$id"
	grep -q "the image was altered" <<<"$LAST_OUTPUT" || fail "$kind: re-sealed image: $LAST_OUTPUT"
	rm -rf "$T/img2"

	check rt restore -d --bundle "$B" --image-path "$T/img" --verify-key "$vkey" --require-signature "$id"
	for _ in $(seq 50); do [ "$(count)" -gt $((c0 + 2)) ] && break; sleep 0.1; done
	[ "$(count)" -gt $((c0 + 2)) ] || fail "$kind: the restored container does not count on (stuck at $(count), was $c0)"
	log "$kind: signed checkpoint restored, count $c0 -> $(count)"
	rt delete --force "$id" >/dev/null 2>&1 || fail "$kind: delete"
done
echo "PASS sign_checkpoint"
