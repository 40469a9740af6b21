#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Checkpoint and restore of a container with a terminal (process.terminal,
# its pty master sent to --console-socket), runc's way: the dump takes the
# container's pty slave without its master; the restore gets a new pty in
# the container's devpts and sends its master to the new console socket.
# A counter writing to the terminal goes on past its pre-checkpoint value
# on the new master, and what is written to the new master reaches the
# container (its stdin is the terminal). Without a console socket a
# foreground restore relays the terminal to cryo's stdio (as run does).
# A restore without what a terminal needs (detached without a socket, a
# bundle without process.terminal, a socket nobody listens on) fails
# clearly before CRIU runs, leaving no state, no cgroup and no CRIU.
# `cryo migrate` refuses a container with a terminal at its preflight,
# before it freezes anything: the counter goes on.
# Needs a CRIU that works here (CRYO_CRIU or /opt/cryo-criu4).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
export CRYO_CRIU=${CRYO_CRIU:-/opt/cryo-criu4/sbin/criu}
[ -x "$CRYO_CRIU" ] || skip "no working CRIU: $CRYO_CRIU missing (tests/setup-criu4.sh)"
"$CRYO_BIN" check >"$T/check.out" 2>&1 || skip "\`cryo check\` fails: $(tail -1 "$T/check.out")"
RECVTTY=$CRYO_BUILD/tests/tools/recvtty
[ -x "$RECVTTY" ] || skip "needs $RECVTTY (build the tests)"

id=ck-tty-$$
B=$T/$id
# a counter on the terminal, and a reader of it that answers what it gets
bundle_new "$B" sh -c 'i=0; while :; do i=$((i+1)); echo n=$i; sleep 0.2; done & while read x; do echo got=$x; [ "$x" = quit ] && exit 3; done'
bundle_set "$B" 'c["process"]["terminal"] = True'

# recvtty N: a receiver on $T/sN, its stdin the fifo $T/inN (held open
# on fd $recv_in: what is written there goes to the pty), its output
# $T/outN, its pid $recv_pid
recv_start() {
	local n=$1
	mkfifo "$T/in$n"
	exec {recv_in}<>"$T/in$n"
	"$RECVTTY" --print-name "$T/s$n" <"$T/in$n" >"$T/out$n" 2>&1 &
	recv_pid=$!
	for _ in $(seq 100); do [ -S "$T/s$n" ] && return 0; sleep 0.05; done
	fail "recvtty $n did not listen"
}
# the last n=<count> in file
last_count() { tr -d '\r' <"$1" | sed -n 's/^n=\([0-9]*\)$/\1/p' | tail -1; }
wait_for() { # file regex what
	for _ in $(seq 100); do tr -d '\r' <"$1" | grep -qE "$2" && return 0; sleep 0.1; done
	fail "$3: $(tr -d '\r' <"$1" | tail -5)"
}
# nothing of $id on the host: no state, no cgroup, no CRIU working on our files
assert_nothing_left() {
	local d p
	rt state "$id" >/dev/null 2>&1 && fail "$1: a state of $id is left"
	for d in /sys/fs/cgroup/*/"$CGPARENT/$id" /sys/fs/cgroup/unified/"$CGPARENT/$id"; do
		[ -d "$d" ] && fail "$1: cgroup $d is left"
	done
	for p in $(pgrep -x criu); do
		for f in /proc/"$p"/fd/*; do
			[[ $(readlink "$f" 2>/dev/null) == "$T"/* ]] && fail "$1: a CRIU (pid $p) is left with our files open"
		done
	done
	return 0
}

recv_start 1
in1=$recv_in rp1=$recv_pid
check rt run -d --console-socket "$T/s1" --bundle "$B" "$id" </dev/null
wait_for "$T/out1" "^n=5$" "the counter does not reach the console socket"
echo before >&"$in1"
wait_for "$T/out1" "^got=before$" "the container does not read its terminal"
check rt checkpoint --image-path "$T/img" "$id"
# the container is gone: its terminal hangs up and recvtty ends
for _ in $(seq 100); do kill -0 "$rp1" 2>/dev/null || break; sleep 0.05; done
kill -0 "$rp1" 2>/dev/null && fail "the pty is still open after the checkpoint"
before=$(last_count "$T/out1")
[ -n "$before" ] || fail "no count before the checkpoint: $(cat "$T/out1")"
log "counted to $before before the checkpoint"
# the checkpointed container is gone (as with runc), so whatever a failed restore leaves shows
expect_fail 1 rt state "$id"

# --- what a terminal needs: each refused before CRIU runs, nothing left

expect_fail 1 rt restore -d --image-path "$T/img" --bundle "$B" "$id"
expect_output "needs --console-socket" "detached restore of a terminal without a socket"
assert_nothing_left "restore -d without a console socket"

expect_fail 1 rt restore -d --console-socket "$T/nobody.sock" --image-path "$T/img" --bundle "$B" "$id"
expect_output "console socket" "restore with a socket nobody listens on"
assert_nothing_left "restore to a dead console socket"

bundle_set "$B" 'c["process"]["terminal"] = False'
recv_start 9
rp9=$recv_pid
expect_fail 1 rt restore -d --console-socket "$T/s9" --image-path "$T/img" --bundle "$B" "$id"
expect_output "process.terminal is false in the bundle" "restore of a terminal into a bundle without one"
expect_fail 1 rt restore -d --image-path "$T/img" --bundle "$B" "$id" </dev/null
expect_output "process.terminal is false in the bundle" "restore of a terminal into a bundle without one (no socket)"
assert_nothing_left "restore into a bundle without a terminal"
kill "$rp9" 2>/dev/null
bundle_set "$B" 'c["process"]["terminal"] = True'

# --- restore with a new console socket: the counter goes on, stdin works

recv_start 2
in2=$recv_in rp2=$recv_pid
check rt restore -d --console-socket "$T/s2" --image-path "$T/img" --bundle "$B" "$id" </dev/null
grep -q "recvtty: got /dev/pts/[0-9]" "$T/out2" || fail "the new master is not named as create names it: $(cat "$T/out2")"
wait_for "$T/out2" "^n=$((before + 3))$" "the counter does not go on past $before on the new master"
first=$(tr -d '\r' <"$T/out2" | sed -n 's/^n=\([0-9]*\)$/\1/p' | head -1)
[ "$first" -gt "$before" ] || fail "the restored counter starts at $first, not past $before"
echo after >&"$in2"
wait_for "$T/out2" "^got=after$" "what is written to the new master does not reach the container"
# the container's terminal is still its own devpts' (the one restored), not the host's
tty_in=$(rt exec "$id" readlink /proc/1/fd/0) || fail "exec: $tty_in"
[[ $tty_in == /dev/pts/* ]] || fail "the restored init's stdin is $tty_in"
[ "$(rt state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = running ] \
	|| fail "restored container is not running"

# --- migrate refuses it at its preflight (its console can't follow it):
# before anything is frozen, and the destination makes nothing
stand_in_ssh
expect_fail 1 rt migrate --ssh "$T/fake-ssh" "$id" ssh://dst
expect_output "failed at preflight" "migrate of a container with a terminal"
expect_output "has a terminal (process.terminal)" "migrate of a container with a terminal"
[ "$(rt state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = running ] \
	|| fail "after the refused migrate the container is not running"
n=$(last_count "$T/out2")
wait_for "$T/out2" "^n=$((n + 2))$" "the counter does not go on after the refused migrate"
stand_in_dst_empty "migrate of a container with a terminal"
check rt delete --force "$id"
kill "$rp2" 2>/dev/null

# --- the same image in the foreground without a socket: relayed to our stdio; the exit code comes back

out=$( (sleep 2; echo fg-in; sleep 1; echo quit) | timeout 60 "$CRYO_BIN" --root "$RTROOT" restore --image-path "$T/img" \
	--bundle "$B" "$id" 2>&1) && rc=0 || rc=$?
out=${out//$'\r'/}
[ $rc = 3 ] || fail "foreground restore: exit $rc, expected the container's 3: $out"
echo "$out" | grep -q "^got=fg-in$" || fail "foreground restore: stdin not relayed: $out"
n=$(echo "$out" | sed -n 's/^n=\([0-9]*\)$/\1/p' | head -1)
[ -n "$n" ] && [ "$n" -gt "$before" ] || fail "foreground restore: the counter starts at ${n:-nothing}, not past $before: $out"
rt delete --force "$id" >/dev/null 2>&1
echo "PASS checkpoint_tty"
