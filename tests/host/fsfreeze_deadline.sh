#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The deadline of a filesystem freeze, kept by cryo's watchdog: the fs
# thaws by itself within the timeout (+ margin); --reset-timeout extends
# it; a reset or thaw after it fired reports the lost window (EINVAL);
# kill -9 of cryo, and of its whole process group, leaves the watchdog
# running and the fs is thawed by the deadline; --thaw-on-exit thaws at
# the holder's death; SIGTERM to the watchdog thaws.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/fsimg.sh"

fsimg_need ext4 xfs
need_cmd setsid
R=$T/root
MARGIN=2000  # ms past the deadline that still counts as "by the deadline" (shared, loaded machines)

# the journal of the filesystem mounted on $mp
journal() { fs_entry "$R" "$mp"; }
watchdog_pid() { journal | python3 -c 'import json,sys; print(json.load(sys.stdin)["watchdog_pid"])'; }
# a 60 s freeze of $mp; its watchdog's pid in $wd
freeze_60s() {
	check cryo --root "$R" fsfreeze --path "$mp" --timeout 60
	wd=$(watchdog_pid)
}
kill_watchdog() {
	kill -9 "$wd"
	wait_gone "$wd" 30 || fail "watchdog survived kill -9"
}

# freeze mp with timeout S, then time how long a writer stays blocked
deadline_run() {
	local mp=$1 s=$2 t0 t1
	check cryo --root "$R" fsfreeze --path "$mp" --timeout "$s"
	t0=$(now_ms)
	start_writer "$mp/w" "x"
	wait_dstate $WRITER || fail "writer not blocked"
	wait_gone $WRITER $(( s * 10 + 50 )) || fail "not thawed $s s + 5 s after the freeze"
	t1=$(now_ms)
	echo $(( t1 - t0 ))
}

for fs in ext4 xfs; do
	mp=$T/$fs
	if [ $fs = xfs ]; then size=320M; else size=64M; fi
	fsimg_mount $fs $fs $size

	log "$fs: the deadline thaws by itself"
	ms=$(deadline_run "$mp" 3)
	log "$fs: thawed ${ms} ms after a 3 s freeze"
	[ "$ms" -ge 2500 ] || fail "$fs: thawed too early (${ms} ms < 3 s)"
	[ "$ms" -le $(( 3000 + MARGIN )) ] || fail "$fs: thawed too late (${ms} ms)"
	journal | grep -q '"state":"thawed-by-timeout"' || fail "$fs: journal: $(journal)"

	log "$fs: reset or thaw after the deadline fired: the window was lost"
	expect_fail 1 cryo --root "$R" fsfreeze --reset-timeout 10 --path "$mp"
	echo "$LAST_OUTPUT" | grep -q "already thawed by timeout .*the consistency window was lost" ||
		fail "$fs: reset after timeout: $LAST_OUTPUT"
	expect_fail 1 cryo --root "$R" fsthaw --path "$mp"
	expect_output "the consistency window was lost" "$fs: thaw after timeout"
done

mp=$T/ext4
log "reset extends the deadline"
check cryo --root "$R" fsfreeze --path "$mp" --timeout 3
t0=$(now_ms)
start_writer "$mp/r" "r"
wait_dstate $WRITER || fail "writer not blocked"
while [ $(( $(now_ms) - t0 )) -lt 1000 ]; do sleep 0.1; done
t1=$(now_ms)
check cryo --root "$R" fsfreeze --reset-timeout 4 --path "$mp"
while [ $(( $(now_ms) - t0 )) -lt 3600 ]; do sleep 0.2; done   # past the first deadline (3 s)
[ "$(task_state $WRITER)" = D ] || fail "thawed at the old deadline despite the reset"
wait_gone $WRITER 80 || fail "not thawed by the reset deadline"
ms=$(( $(now_ms) - t1 ))
log "reset to 4 s $(( t1 - t0 )) ms after a 3 s freeze: thawed ${ms} ms after the reset"
[ "$ms" -ge 3500 ] && [ "$ms" -le $(( 4000 + MARGIN )) ] || fail "reset deadline: thawed ${ms} ms after the reset, expected ~4000"

log "--timeout 0 without --force is refused"
expect_fail 2 cryo --root "$R" fsfreeze --path "$mp" --timeout 0
expect_output "without a deadline" "timeout 0"

log "kill -9 of cryo and of its process group while it holds a freeze"
setsid "$CRYO_BIN" --root "$R" fsfreeze --path "$mp" --timeout 8 -- sleep 60 &
holder=$!
for _ in $(seq 50); do journal 2>/dev/null | grep -q '"state":"frozen"' && break; sleep 0.1; done
journal | grep -q '"state":"frozen"' || fail "cryo fsfreeze -- sleep did not freeze"
t0=$(now_ms)
start_writer "$mp/k" "k"
wait_dstate $WRITER || fail "not frozen under cryo fsfreeze -- sleep"
wd=$(watchdog_pid)
[ "$(ps -o sid= -p "$wd" | tr -d ' ')" != "$(ps -o sid= -p "$holder" | tr -d ' ')" ] || fail "watchdog shares cryo's session"
[ "$(ps -o pgid= -p "$wd" | tr -d ' ')" != "$holder" ] || fail "watchdog is in cryo's process group"
kill -9 -- -"$holder" || fail "kill -9 of the process group"
wait "$holder" 2>/dev/null
kill -0 "$wd" || fail "the watchdog died with cryo's process group"
sleep 0.5
# (on a machine too loaded to get here before the deadline, this proves nothing, so it is not asked)
if [ $(( $(now_ms) - t0 )) -lt 7000 ]; then
	[ "$(task_state $WRITER)" = D ] || fail "thawed at once by kill -9; it must stay frozen until the deadline"
fi
wait_gone $WRITER 120 || fail "not thawed by the deadline after kill -9"
ms=$(( $(now_ms) - t0 ))
log "after kill -9 of the group: thawed ${ms} ms after the freeze (deadline 8 s)"
[ "$ms" -le $(( 8000 + MARGIN )) ] || fail "thawed ${ms} ms after the freeze, deadline was 8 s"
journal | grep -q '"state":"thawed-by-timeout"' || fail "journal after kill: $(journal)"
wait_gone "$wd" 20 || fail "watchdog still running after the thaw"

log "kill -9 of cryo alone (the command it runs lives on)"
"$CRYO_BIN" --root "$R" fsfreeze --path "$mp" --timeout 6 -- sleep 30 &
holder=$!
for _ in $(seq 50); do journal 2>/dev/null | grep -q '"state":"frozen"' && break; sleep 0.1; done
t0=$(now_ms)
sleeper=$(pgrep -P "$holder" sleep)
at_exit "kill $sleeper"
start_writer "$mp/k2" "k2"
wait_dstate $WRITER || fail "not frozen under cryo fsfreeze -- sleep"
kill -9 "$holder"
wait "$holder" 2>/dev/null
sleep 0.5
if [ $(( $(now_ms) - t0 )) -lt 5000 ]; then
	[ "$(task_state $WRITER)" = D ] || fail "thawed at once by kill -9 of cryo"
fi
wait_gone $WRITER 100 || fail "not thawed by the deadline after kill -9 of cryo"
kill "$sleeper" 2>/dev/null

log "--thaw-on-exit: the holder's death thaws at once"
"$CRYO_BIN" --root "$R" fsfreeze --path "$mp" --timeout 60 --thaw-on-exit -- sleep 60 &
holder=$!
for _ in $(seq 50); do journal 2>/dev/null | grep -q '"state":"frozen"' && break; sleep 0.1; done
sleeper=$(pgrep -P "$holder" sleep)
at_exit "kill $sleeper"
start_writer "$mp/e" "e"
wait_dstate $WRITER || fail "--thaw-on-exit: not frozen"
t0=$(now_ms)
kill -9 "$holder"
wait "$holder" 2>/dev/null
wait_gone $WRITER 30 || fail "--thaw-on-exit: not thawed after the holder died"
ms=$(( $(now_ms) - t0 ))
[ "$ms" -le 1500 ] || fail "--thaw-on-exit: thawed ${ms} ms after the holder's death"
# a dead holder will never ask about its window: nothing is left behind
[ -z "$(journal)" ] || fail "journal left after the holder died: $(journal)"
kill "$sleeper" 2>/dev/null

log "--timeout 0 --force: no deadline at all"
check cryo --root "$R" fsfreeze --path "$mp" --timeout 0 --force
journal | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["holds"][0]["deadline_ms"]==0, d' ||
	fail "timeout 0 has a deadline: $(journal)"
start_writer "$mp/z" "z"
wait_dstate $WRITER || fail "timeout 0: not frozen"
check cryo --root "$R" fsthaw --path "$mp"
wait_gone $WRITER 50 || fail "timeout 0: not thawed"

log "a failure after FIFREEZE inside the watchdog is rolled back (CRYO_FAULT=fsfreeze-hold)"
expect_fail 1 env CRYO_FAULT=fsfreeze-hold "$CRYO_BIN" --root "$R" fsfreeze --path "$mp"
expect_output "Input/output error" "fault after freeze"
start_writer "$mp/f" "f"
wait_gone $WRITER 50 || fail "left frozen after a failed hold"

# FILE WHY BY WHAT: a write to FILE goes through (else fail WHY), and a
# plain fsthaw then fails: the freeze was "already thawed by BY"
thawed_by() {
	start_writer "$mp/$1" "$1"
	wait_gone $WRITER 50 || fail "$2"
	expect_fail 1 cryo --root "$R" fsthaw --path "$mp"
	expect_output "already thawed by $3" "$4"
}

log "kill -9 of the watchdog itself: cryo says so, --force thaws"
freeze_60s
kill_watchdog
expect_fail 1 cryo --root "$R" fsthaw --path "$mp"
expect_output "its watchdog (pid $wd) is gone, so no deadline will thaw it" "dead watchdog"
expect_fail 1 cryo --root "$R" fsfreeze --path "$mp"
echo "$LAST_OUTPUT" | grep -q "still frozen by cryo (1 hold(s) in its journal), but their watchdog (pid $wd) is gone" ||
	fail "freeze over a dead watchdog: $LAST_OUTPUT"
out=$(cryo --root "$R" recover) || fail "recover failed: $out"
echo "$out" | grep -q "fs-thaw \`$mp\`: hold \`fs@[0-9]*:[0-9]*\` of dead pid $wd" || fail "recover printed: $out"
thawed_by d "cryo recover did not thaw" "\`cryo recover\` after its watchdog died" "thaw after recover"

log "the same, thawed by hand with fsthaw --force; recover keeps a live hold"
freeze_60s
out=$(cryo --root "$R" recover) || fail "recover failed: $out"
echo "$out" | grep -q "kept fs-thaw \`$mp\`: hold \`fs@[0-9]*:[0-9]*\` is live" || fail "recover of a live hold: $out"
[ -n "$(ls "$R/.holds/"fs@*.json 2>/dev/null)" ] || fail "the freeze is not in the hold journal: $(ls -a "$R/.holds")"
kill_watchdog
check cryo --root "$R" fsthaw --force --path "$mp"
thawed_by d2 "--force did not thaw" "a forced thaw" "thaw after a forced thaw"

log "SIGTERM to the watchdog thaws"
freeze_60s
start_writer "$mp/t" "t"
wait_dstate $WRITER || fail "not frozen"
kill -TERM "$wd"
wait_gone $WRITER 30 || fail "SIGTERM to the watchdog did not thaw"
expect_fail 1 cryo --root "$R" fsthaw --path "$mp"
expect_output "already thawed by SIGTERM" "thaw after SIGTERM"
echo ok
