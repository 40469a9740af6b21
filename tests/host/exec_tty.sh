#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Terminals: `run` of a process.terminal container and `exec -t` without a
# console socket give the process a pty of its own, relayed to cryo's
# stdio (raw mode on cryo's terminal, restored at exit; window size copied
# at start and on SIGWINCH); with --console-socket the master goes to the
# socket (recvtty); a detached terminal without a socket is refused.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_cmd script
RECVTTY=$CRYO_BUILD/tests/tools/recvtty
[ -x "$RECVTTY" ] || skip "needs $RECVTTY (build the tests)"

bundle_for ex-tty sh -c 'while :; do sleep 0.2; done'
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"

# WHAT SIZE RC TEXT WHY: what the process printed under script(1), $out,
# shows a pty of its own of SIZE ("rows cols"), TEXT (else WHY) and exit
# code RC
pty_seen() {
	local what=$1
	echo "$out" | grep -q "/dev/pts/[0-9]" || fail "$what: no pty in the container: $out"
	echo "$out" | grep -qx "$2" || fail "$what: window size not copied: $out"
	echo "$out" | grep -q "$4" || fail "$what: $5: $out"
	echo "$out" | grep -q "rc=$3" || fail "$what: exit code: $out"
}

# script(1)'s input is a fifo that never ends: on an input that ends
# (</dev/null) script writes an EOF byte to its terminal, which cryo (raw
# by then, or not yet: a race) relays into the process's pty as ^@
mkfifo "$T/in"
exec 7<>"$T/in"

# script(1) gives cryo a terminal of 20x50; the process sees its own pty
# of that size, its exit code comes back, and our terminal is not left raw
out=$(timeout 30 script -qec "stty rows 20 cols 50; $CRYO_BIN --root $RTROOT exec -t $id sh -c 'tty; stty size; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-tty; exit 5'; echo rc=\$?; stty -a" /dev/null <&7) \
	|| fail "script failed: $out"
out=${out//$'\r'/}
pty_seen "exec -t" "20 50" 5 all-tty "stdio is not the pty"
echo "$out" | grep -qw -- "-icanon" && fail "exec -t left the terminal in raw mode: $out"
echo "$out" | grep -qw "icanon" || fail "no stty output: $out"

# SIGWINCH: the terminal is resized while the process runs
out=$(timeout 30 script -qec "stty rows 20 cols 50; t=\$(tty); (sleep 0.8; stty -F \$t rows 40 cols 90) & $CRYO_BIN --root $RTROOT exec -t $id sh -c 'stty size; sleep 2; stty size'; wait" /dev/null <&7) \
	|| fail "script failed: $out"
out=${out//$'\r'/}
echo "$out" | grep -q "40 90$" || fail "exec -t: resize not forwarded: $out"

# input from a pipe reaches the process through the pty (it echoes it)
out=$(printf 'echo in-$((6*7))\nexit 4\n' | timeout 30 "$CRYO_BIN" --root "$RTROOT" exec -t "$id" sh 2>&1) && rc=0 || rc=$?
[ $rc = 4 ] || fail "exec -t with piped input: rc $rc: $out"
echo "$out" | grep -q "in-42" || fail "exec -t with piped input: $out"

# a terminal for a detached exec needs a console socket
expect_fail 255 rt exec -d -t "$id" true
expect_output "console-socket" "exec -d -t"

# --console-socket: the master goes to recvtty, which prints what the process writes
"$RECVTTY" --no-stdin "$T/tty.sock" >"$T/recv.out" 2>&1 &
rp=$!
for _ in $(seq 100); do [ -S "$T/tty.sock" ] && break; sleep 0.05; done
check rt exec -t --console-socket "$T/tty.sock" "$id" sh -c 'tty; echo via-socket'
for _ in $(seq 100); do kill -0 $rp 2>/dev/null || break; sleep 0.05; done
kill $rp 2>/dev/null
grep -q "via-socket" "$T/recv.out" || fail "console socket: recvtty got: $(cat "$T/recv.out")"
check rt delete --force "$id"

# run of a process.terminal container in the foreground: a pty of its own
bundle_set "$B" 'c["process"]["terminal"] = True; c["process"]["args"] = ["sh", "-c", "tty; stty size; read x; echo got=$x; exit 6"]'
out=$(cd "$B" && (sleep 1; echo hello) | timeout 30 script -qec "stty rows 21 cols 61; $CRYO_BIN --root $RTROOT run $id; echo rc=\$?" /dev/null) \
	|| fail "script failed: $out"
out=${out//$'\r'/}
pty_seen run "21 61" 6 got=hello "input did not reach the container"
[ ! -e "$RTROOT/$id" ] || fail "run left its state dir"
expect_fail 1 rt run -d --bundle "$B" "$id"
expect_output "console-socket" "run -d of a terminal container"
echo ok
