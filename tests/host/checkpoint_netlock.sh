#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# CRIU's network lock (firewall rules that drop the container's traffic
# while it is dumped or restored) is skipped where nothing needs it: no
# --tcp-established, CRIU >= 3.19. The manifest says whether the dump took
# it; the restore does as its dump did (CRIU keeps the method in its
# inventory):
#   - skipped: the container's own iptables rules come back, no CRIU chain;
#   - an image dumped under the lock (a CRIU_CONFIG_FILE of the user's keeps
#     it) has the lock's rules in its iptables dump: its restore must lift
#     them, or the restored container's network stays dead;
#   - --tcp-established keeps the lock.
# Needs CRIU >= 3.19 that works on this host (CRYO_CRIU or /opt/cryo-criu4).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

export CRYO_CRIU=${CRYO_CRIU:-/opt/cryo-criu4/sbin/criu}
[ -x "$CRYO_CRIU" ] || skip "no working CRIU: $CRYO_CRIU missing (tests/setup-criu4.sh)"
"$CRYO_BIN" check >"$T/check.out" 2>&1 || skip "\`cryo check\` fails: $(tail -1 "$T/check.out")"
need_cmd iptables
need_cmd nsenter
ver=$("$CRYO_CRIU" --version | awk '/^Version:/ { print $2 }')
[ "$(printf '%s\n3.19\n' "$ver" | sort -V | head -1)" = 3.19 ] || skip "CRIU $ver cannot skip its network lock (3.19+)"

bundle_for ck-nl sh -c 'while :; do sleep 1; done'

skipped() { # IMAGE: the manifest's network_lock_skipped
	rt inspect --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["criu"].get("network_lock_skipped", False))'
}
rules() { nsenter -t "$(cat "$1")" -n iptables -S; }

# CHECKPOINT_ENV... -- CHECKPOINT_ARGS...: run, mark the netns, checkpoint, restore; leaves $T/img, $T/rules
round() {
	local envs=() p=$T/pid
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	rm -rf "$T/img"
	rt run -d --bundle "$B" --pid-file "$p" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
	nsenter -t "$(cat "$p")" -n iptables -A INPUT -s 192.0.2.7 -j DROP || fail "iptables in the container's netns"
	out=$(env "${envs[@]}" "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img" "$@" "$id" 2>&1) ||
		fail "checkpoint $*: $out"
	out=$(rt restore -d --image-path "$T/img" --bundle "$B" --pid-file "$p" "$id" </dev/null 2>&1) || fail "restore: $out"
	rules "$p" >"$T/rules" || fail "iptables -S in the restored netns"
	grep -q -- "-s 192.0.2.7/32 -j DROP" "$T/rules" || fail "the container's own rule did not come back: $(cat "$T/rules")"
	! grep -q CRIU "$T/rules" || fail "CRIU's lock is still in the restored netns: $(cat "$T/rules")"
	check rt delete --force "$id"
}

round --
[ "$(skipped "$T/img")" = True ] || fail "a dump without --tcp-established took the network lock"
! grep -q CRIU "$T"/img/iptables-*.img || fail "skipped, yet the image's iptables have CRIU's lock"
log "skipped: the rule is back, no CRIU chain"

# the user's config: cryo keeps the lock, and its image's restore lifts it
: >"$T/criu.conf"
round CRIU_CONFIG_FILE="$T/criu.conf" --
[ "$(skipped "$T/img")" = False ] || fail "CRIU_CONFIG_FILE of the user's: the dump still skipped the lock"
grep -q CRIU "$T"/img/iptables-*.img || fail "dumped under the lock, yet the image's iptables have no CRIU chain"
log "dumped under the lock: its restore lifted it"

round -- --tcp-established
[ "$(skipped "$T/img")" = False ] || fail "--tcp-established without the network lock"
log "--tcp-established: locked"
echo "PASS checkpoint_netlock"
