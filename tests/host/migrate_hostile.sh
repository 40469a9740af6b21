#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `cryo receive` against a hostile source that passes the preflight and
# then lies in its pre-copy rounds or its final dump (tests/tools/cryo-test-peer): a file
# named `parent` (CRIU's link to the round before, which only the
# receiver makes), rounds out of order or mixed, the end of a round never
# sent, a final dump posing as a round, a round that is no image, and
# real signed images that are not a pre-dump or not of this container;
# in the final dump (whose files come as CRIU writes them), a file sent
# twice, a replace of a file never sent or replaced twice, a file sent
# early that the manifest does not list, one replaced by other bytes, and
# a rootfs snapshot that reaches out, extracted (and refused) before the
# verify refuses the image.
# Each is refused at transfer with a reason, and nothing is left: no
# staged images, no bundle, no container, no journal entry. A receive
# killed mid-transfer leaves its staged images to `cryo recover`.
. "$(dirname "$0")/../lib/common.sh"
need_root
need_cmd openssl
PEER=$CRYO_BUILD/tests/tools/cryo-test-peer
SEAL=$CRYO_BUILD/tests/tools/cryo-test-criu
SIGN=$CRYO_BUILD/tests/tools/cryo-test-sign
[ -x "$PEER" ] && [ -x "$SEAL" ] && [ -x "$SIGN" ] || fail "build the test tools first"
R=$T/root
B=$T/bundles
id=hostile-$$
mkdir -p "$R"
(umask 077; openssl genpkey -algorithm ed25519 -out "$T/ed.pem" 2>/dev/null) || fail "openssl genpkey"
openssl pkey -in "$T/ed.pem" -pubout -out "$T/ed.pub" 2>/dev/null || fail "openssl pkey"

nothing_left() {
	[ -z "$(ls -A "$R/.migrate-in" 2>/dev/null)" ] || fail "$1: staging left: $(ls -A "$R/.migrate-in")"
	[ ! -e "$B/$id" ] || fail "$1: a bundle was made"
	[ -z "$("$CRYO_BIN" --root "$R" list -q)" ] || fail "$1: a container exists"
	[ -z "$(ls -A "$R/.holds" 2>/dev/null)" ] || fail "$1: journal entries left: $(ls -A "$R/.holds")"
}

attack() {  # scenario, expected words in the receiver's error[, the step that refuses it]
	local out rc at=${3:-transfer}
	out=$("$PEER" "$1" "$id" "$CRYO_BIN" --root "$R" receive --stdio --bundle-dir "$B" --verify-key "$T/ed.pub" 2>&1) &&
		rc=0 || rc=$?
	if [ "$rc" = 3 ] && echo "$out" | grep -q 'no working CRIU'; then
		skip "receive needs CRIU on this host: $out"
	fi
	[ "$rc" = 1 ] || fail "$1: the receiver exited $rc: $out"
	echo "$out" | grep -q "failed at $at" || fail "$1: not refused at $at: $out"
	echo "$out" | grep -q -- "$2" || fail "$1: no \`$2\` in: $out"
	nothing_left "$1"
	log "$1: $(echo "$out" | grep '^cryo' | tail -n 1)"
}

attack parent-name "bad file name"
attack round-skip "pre-copy round 2 after round 0"
attack round-mix "a file of round 0 in round 1"
attack done-unsent "the end of round 1"
attack final-flag "round 0 ended as a pre-copy round"
attack round-bogus "pre-copy round 1"

# a source busy for longer than the receiver's --timeout (a large dump):
# its alive frames keep the receiver waiting, and the round that follows
# is judged on its merits; without them the same wait times out
out=$("$PEER" busy "$id" "$CRYO_BIN" --root "$R" receive --stdio --timeout 1000 --bundle-dir "$B" \
	--verify-key "$T/ed.pub" 2>&1) && fail "busy: the receiver took a bogus round: $out"
echo "$out" | grep -q "failed at transfer" && echo "$out" | grep -q "pre-copy round 1" ||
	fail "busy: the receiver did not wait for the round after 2.5 s of alive frames: $out"
nothing_left busy
out=$("$PEER" quiet "$id" "$CRYO_BIN" --root "$R" receive --stdio --timeout 1000 --bundle-dir "$B" \
	--verify-key "$T/ed.pub" 2>&1) && fail "quiet: the receiver took a bogus round: $out"
echo "$out" | grep -q "failed at transfer" && echo "$out" | grep -qi "timed out" ||
	fail "quiet: 2.5 s of silence did not time out a receiver with --timeout 1000: $out"
nothing_left quiet
log "busy source: alive frames carried the receiver past its --timeout; a quiet one timed out"

# --lazy asked of a receiver whose CRIU can't serve lazy pages: refused
# at preflight with the reason: pipes too small for CRIU's page server
# (this host: fs.pipe-max-size 1 MiB, no CAP_SYS_RESOURCE), said before
# any probe, or CRIU's own reason from the probe
out=$("$PEER" lazy-hello "$id" "$CRYO_BIN" --root "$R" receive --stdio --bundle-dir "$B" --verify-key "$T/ed.pub" 2>&1) &&
	rc=0 || rc=$?
if [ "$rc" = 3 ] && echo "$out" | grep -q 'preflight refused: .*lazy page server needs pipes of'; then
	echo "$out" | grep -q "fs.pipe-max-size is $(cat /proc/sys/fs/pipe-max-size) and cryo runs without CAP_SYS_RESOURCE" ||
		fail "lazy hello: $out"
	[ ! -e "$R/.lazy-probe" ] || fail "lazy hello: a probe ran (and was kept) though the pipes said no: $(cat "$R/.lazy-probe")"
	nothing_left "lazy hello"
	log "lazy hello: $(echo "$out" | grep -o 'preflight refused.*' | head -c 300)"
elif [ "$rc" = 3 ]; then
	echo "$out" | grep -q 'preflight refused: CRIU.s lazy migration does not work on this host (kernel .*): criu ' ||
		fail "lazy hello: $out"
	nothing_left "lazy hello"
	log "lazy hello: $(echo "$out" | grep -o 'preflight refused.*' | head -c 300)"
	# the answer is kept for this kernel and CRIU: asked again, the same without a new probe
	grep -q '^[^ ]* criu-[0-9]* no ' "$R/.lazy-probe" || fail "lazy hello: no probe result kept: $(cat "$R/.lazy-probe" 2>&1)"
	out2=$("$PEER" lazy-hello "$id" "$CRYO_BIN" --root "$R" receive --stdio --bundle-dir "$B" --verify-key "$T/ed.pub" 2>&1) &&
		rc=0 || rc=$?
	[ "$rc" = 3 ] && [ "$(echo "$out2" | grep -o 'preflight refused.*')" = "$(echo "$out" | grep -o 'preflight refused.*')" ] ||
		fail "lazy hello, again: $rc: $out2"
else
	[ "$rc" = 1 ] || fail "lazy hello: the receiver exited $rc: $out"
	log "lazy hello: CRIU serves lazy pages on this host (the receiver accepted): no refusal to check"
	rm -rf "${R:?}/.migrate-in"
fi

# a source whose files are hashed with an algorithm unknown here: refused
# before a byte of image is taken; a known one gets as far as the image
out=$("$PEER" digest:7 "$id" "$CRYO_BIN" --root "$R" receive --stdio --bundle-dir "$B" --verify-key "$T/ed.pub" 2>&1) &&
	rc=0 || rc=$?
[ "$rc" = 3 ] && echo "$out" | grep -q 'preflight refused: digest algorithm 7 is unknown here' ||
	fail "digest 7: $rc: $out"
nothing_left "digest 7"
log "digest 7: $(echo "$out" | grep -o 'preflight refused.*' | head -c 200)"
attack digest:1 "pre-copy round 1"

# real images, signed with the key the receiver trusts
mkimg() {  # dir, container id
	mkdir -m 0700 "$1"
	echo pages >"$1/pages-1.img"
	echo core >"$1/core-1.img"
	chmod 600 "$1"/*
	check "$SEAL" seal "$1" "$2"
	check "$SIGN" sign "$1" "$T/ed.pem"
}
mkimg "$T/dump" "$id"
attack "round-dir:$T/dump" "not a pre-dump"
# signed, then one byte of a file changed (same size): the digest taken as it arrived is not the manifest's
mkimg "$T/tampered" "$id"
printf 'pagez\n' >"$T/tampered/pages-1.img"
attack "round-dir:$T/tampered" "file \`pages-1.img\` is corrupted"
mkimg "$T/other" "other-$$"
attack "round-dir:$T/other" "of container \`other-$$\`"
# the final dump's files come while CRIU writes them; one changed after
# it went comes again as a replace, once: anything else is refused at
# transfer, and what came early is verified like the rest
attack twice "sent \`pages-1.img\` twice"
attack replace-unsent "replaced \`pages-1.img\`, which it had not sent"
attack replace-thrice "sent \`pages-1.img\` a third time"
attack "final-extra:$T/dump" "unexpected file \`pages-9.img\`" verify
# sent right, then replaced by other bytes: the replace's bytes are the ones verified
attack "final-replaced:$T/dump" "file \`pages-1.img\` is corrupted" verify
# a final dump whose rootfs snapshot reaches out (`..`, an absolute name),
# signed: the receiver extracts rootfs.tar into the bundle as soon as it
# is in, before the image is verified (the source's CRIU would still be
# dumping); the extraction, chroot()ed, refuses it, the verify then
# refuses the image (an unlisted file), and nothing of it is left or got out
mkdir -p "$T/ev/a/b/c" && echo ok >"$T/ev/ok" && echo out >"$T/ev/escape-$$"
mkdir -m 0700 "$T/evil"
echo pages >"$T/evil/pages-1.img"
echo core >"$T/evil/core-1.img"
tar -P -cf "$T/evil/rootfs.tar" -C "$T/ev" ok -C "$T/ev/a/b/c" "../../../escape-$$" "$T/ev/escape-$$" 2>/dev/null ||
	fail "make the hostile tar"
tar -tf "$T/evil/rootfs.tar" | grep -q "^\.\./\.\./\.\./escape-$$" || fail "the hostile tar has no \`..\` entry: $(tar -tf "$T/evil/rootfs.tar")"
chmod 600 "$T/evil"/*
check "$SEAL" seal "$T/evil" "$id"
check "$SIGN" sign "$T/evil" "$T/ed.pem"
rm "$T/ev/escape-$$"
attack "final-extra:$T/evil" "unexpected file \`pages-9.img\`" verify
for d in "$B" "$R" "$T" "$T/ev" "$T/ev/a" /; do
	[ ! -e "$d/escape-$$" ] || fail "hostile rootfs.tar: \`$d/escape-$$\` was written"
done
# a page image sent while CRIU appends to it (growing: chunks until an
# end): only in the final dump, new, of no announced size, no empty chunk
# but its end, no end in a file that is not growing; its bytes are hashed
# as they come and verified like the rest
attack growing-round "a growing file must be new, of the final dump, of size 0"
attack growing-sized "a growing file must be new, of the final dump, of size 0"
attack growing-empty "\`pages-1.img\`: an empty chunk"
attack end-plain "the end of a file that is not growing"
attack "growing-bytes:$T/dump" "file \`pages-1.img\` is corrupted" verify
# a receive killed in the middle of a transfer: its staged images are
# journalled, and `cryo recover` removes them
"$PEER" stall "$id" "$CRYO_BIN" --root "$R" receive --stdio --bundle-dir "$B" --verify-key "$T/ed.pub" \
	>"$T/stall.out" 2>&1 &
ppid=$!
for _ in $(seq 100); do [ -d "$R/.migrate-in/$id/pre1" ] && break; sleep 0.05; done
[ -d "$R/.migrate-in/$id/pre1" ] || fail "stalled transfer: nothing staged: $(cat "$T/stall.out")"
rpid=$(pgrep -f -- "^$CRYO_BIN --root $R receive --stdio") || fail "no receive to kill"
kill -9 $rpid
kill -9 "$ppid" 2>/dev/null
wait "$ppid" 2>/dev/null
ls "$R/.holds" | grep -q "^$id@migrate-in" || fail "killed receive: its staging is not journalled: $(ls -A "$R/.holds")"
check "$CRYO_BIN" --root "$R" recover
[ ! -e "$R/.migrate-in/$id" ] || fail "recover left the killed receive's staged images"
nothing_left "killed receive, recovered"
log "a receive killed mid-transfer: recover removed its staged images"
echo "PASS migrate_hostile"
