#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Restore has CRIU leave the restored tasks stopped and lets them go
# (SIGCONT) only at its last step, `resume`, once the cgroup, the state,
# the hooks (and for a paused container the freeze) are in place; from
# before CRIU makes a task until then, the tasks die with the restore (a
# kill hold on the cgroup). Before: CRIU resumed them itself, and they ran
# while restore froze them (--keep-paused, receive), wrote the state and
# ran the hooks; a restore killed there left them running, unowned.
#
# The self-checking counter (rewrites its status file every 20 ms while
# it runs) is checkpointed, then:
#  - restored with cryo stopped (CRYO_PAUSE_AT) before each step after
#    CRIU's (CI: the first and the last; CRYO_LONG=1: each): every task
#    of the container is stopped (T) and the status
#    file does not change in 0.4 s; once cryo goes on, the counter counts
#    on with its checks passing;
#  - paused, checkpointed, restored --keep-paused, with the cgroup2 and
#    the v1 freezer: its tasks were frozen while stopped, the counter
#    stands still, and `resume` lets it count on (the SIGCONT that reached
#    them in the freezer was not lost);
#  - cryo SIGKILLed at the state step: the watchdog kills every restored
#    task at once (none left running nor stopped), `cryo recover` leaves no
#    journal entry, and the image restores again;
#  - a task stopped (SIGSTOP) when dumped is stopped after the restore
#    while the others run; continued, the counter counts on.
# Needs a CRIU that works here (CRYO_CRIU, see `cryo check`).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu
. "$CRYO_SRC/tests/lib/workload.sh"
file "$WL_BIN" | grep -q 'statically linked' || skip "cryo-test-counter is not static (sanitizer build?)"

id=rs-stop-$$
B=$T/$id
wl_bundle "$B" 16
S=$B/rootfs/status
rpid=""
# a restore left stopped at its pause point by a failed check, then what it restored
_stopped_cleanup() {
	local d
	[ -n "$rpid" ] && kill -9 "$rpid" 2>/dev/null
	for d in /sys/fs/cgroup/*/"$CGPARENT/$id"; do cg_remove "$d"; done
}
at_exit _stopped_cleanup

# the container's processes (its cgroup, in either hierarchy)
procs() {
	cat "/sys/fs/cgroup/unified/$CGPARENT/$id/cgroup.procs" 2>/dev/null ||
		cat "/sys/fs/cgroup/freezer/$CGPARENT/$id/cgroup.procs" 2>/dev/null
}
# the cryo started in the background ($1) once it stopped itself at its fault point
wait_cryo_stopped() {
	for _ in $(seq 600); do
		[ "$(task_state "$1")" = T ] && return 0
		kill -0 "$1" 2>/dev/null || fail "$2: cryo ended before its pause: $(cat "$T/rs.out")"
		sleep 0.05
	done
	fail "$2: cryo did not stop at its pause point"
}
# nothing of the container runs: every task stopped (or frozen), the status file still
assert_still() {
	local p st before n=0
	for p in $(procs); do
		st=$(task_state "$p")
		[ -z "$st" ] && continue
		n=$((n + 1))
		[ "$st" = T ] || [ "${2:-}" = frozen ] || fail "$1: task $p is $st, not stopped: $(tr '\0' ' ' <"/proc/$p/cmdline")"
	done
	[ $n -ge 2 ] || fail "$1: only $n tasks in the container's cgroup"
	before=$(cat "$S")
	sleep 0.4
	[ "$(cat "$S")" = "$before" ] || fail "$1: the counter ran: '$before' became '$(cat "$S")'"
}
checkpoint() {
	timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$1" "$id" </dev/null >"$T/ck.out" 2>&1 ||
		fail "checkpoint: $(cat "$T/ck.out")"
}
restore_bg() {  # ENV... -- restore args
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" "$@" "$id" </dev/null >"$T/rs.out" 2>&1 &
	rpid=$!
}
counts_on() {
	local c
	c=$(wl_count "$S")
	wl_wait_above "$S" $((c + 10))
	wl_status "$S" | grep -q ' ok ' || fail "$1: $(wl_status "$S")"
}

rt run -d --bundle "$B" "$id" </dev/null >"$T/out" 2>&1 || fail "run: $(cat "$T/out")"
wl_wait_above "$S" 20
checkpoint "$T/img"

# --- stopped after CRIU, through every later step
steps=$("$CRYO_BIN" features | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["org.cryo"]["steps"]["restore"]))')
after=$(echo "$steps" | tr ' ' '\n' | sed -n '/^criu-restore$/,$p' | tail -n +2)
[ -n "$after" ] || fail "no step after criu-restore in the restore table: $steps"
# CI: the first and the last of them (CRYO_LONG=1: every one)
[ "${CRYO_LONG:-0}" = 1 ] || after=$(printf '%s\n' $after | sed -n '1p;$p')
for step in $after; do
	restore_bg CRYO_PAUSE_AT="restore:$step" -- --image-path "$T/img"
	wait_cryo_stopped "$rpid" "paused at $step"
	assert_still "cryo paused before $step"
	kill -CONT "$rpid"
	wait "$rpid" || fail "restore (paused before $step): $(cat "$T/rs.out")"
	counts_on "after a restore paused before $step"
	log "cryo paused before $step: all $(procs | wc -w) tasks stopped, the counter still; then it counts on"
	rt delete --force "$id" >/dev/null 2>&1 || fail "delete"
done

# --- --keep-paused: frozen while stopped, with each freezer
for fz in v2 v1; do
	[ "$fz" = v1 ] && [ ! -d /sys/fs/cgroup/freezer ] && { log "no v1 freezer here"; continue; }
	bundle_set "$B" "c.setdefault('annotations', {})['org.cryo.freezer'] = '$fz'"
	rt run -d --bundle "$B" "$id" </dev/null >"$T/out" 2>&1 || fail "run ($fz): $(cat "$T/out")"
	wl_wait_above "$S" 20
	check rt pause "$id"
	checkpoint "$T/img-paused-$fz"
	restore_bg CRYO_PAUSE_AT=restore:state -- --keep-paused --image-path "$T/img-paused-$fz"
	wait_cryo_stopped "$rpid" "keep-paused ($fz)"
	assert_still "keep-paused ($fz), cryo paused before its state" frozen
	kill -CONT "$rpid"
	wait "$rpid" || fail "restore --keep-paused ($fz): $(cat "$T/rs.out")"
	[ "$(rt freezer-state "$id")" = FROZEN ] || fail "keep-paused ($fz): the container is $(rt freezer-state "$id")"
	assert_still "restored --keep-paused ($fz)" frozen
	check rt resume "$id"
	counts_on "resumed after --keep-paused ($fz)"
	log "--keep-paused ($fz): frozen while stopped, still until resumed, then counts on"
	rt delete --force "$id" >/dev/null 2>&1 || fail "delete"
done
bundle_set "$B" "c.get('annotations', {}).pop('org.cryo.freezer', None)"

# --- cryo killed after CRIU: its tasks die with it
restore_bg CRYO_PAUSE_AT=restore:state -- --image-path "$T/img"
wait_cryo_stopped "$rpid" "kill"
[ -n "$(procs)" ] || fail "kill: no restored task before the kill"
grep -q '"kind": *"cgroup-kill"' "$RTROOT/.holds/$id@tasks.json" 2>/dev/null ||
	fail "kill: no kill hold in the journal: $(cat "$RTROOT/.holds/"*.json 2>/dev/null)"
kill -9 "$rpid"
wait "$rpid" 2>/dev/null
t0=$(now_ms)
while [ -n "$(procs)" ] && [ $(($(now_ms) - t0)) -lt 3000 ]; do sleep 0.02; done
[ -z "$(procs)" ] || fail "kill: restored tasks outlived the killed restore: $(for p in $(procs); do echo "$p:$(task_state "$p")"; done)"
took=$(($(now_ms) - t0))
out=$(rt recover 2>&1) || fail "recover: $out"
[ -z "$(ls "$RTROOT/.holds/" 2>/dev/null)" ] || fail "kill: journal entries left: $(ls "$RTROOT/.holds/")"
rt delete --force "$id" >/dev/null 2>&1
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$T/img" "$id" </dev/null >"$T/rs.out" 2>&1 ||
	fail "restore after the kill: $(cat "$T/rs.out")"
counts_on "restored after the killed restore"
log "restore killed after CRIU: its tasks gone ${took} ms after, nothing in the journal; the image restores again"

# --- a task stopped when it was dumped is stopped after the restore, the others run
# the counter's sender: the task whose parent is in the container too
sender() {
	local p pp all
	all=" $(procs | tr '\n' ' ') "
	for p in $(procs); do
		pp=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null)
		case "$all" in *" $pp "*) echo "$p"; return 0 ;; esac
	done
	return 1
}
s=$(sender) || fail "stopped task: no sender in the container"
kill -STOP "$s"
checkpoint "$T/img-stopped"
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$T/img-stopped" "$id" </dev/null >"$T/rs.out" 2>&1 ||
	fail "restore of a tree with a stopped task: $(cat "$T/rs.out")"
s=$(sender) || fail "stopped task: no sender after the restore"
for _ in $(seq 20); do [ "$(task_state "$s")" = T ] && break; sleep 0.05; done
[ "$(task_state "$s")" = T ] || fail "the task stopped when dumped is $(task_state "$s") after the restore"
for p in $(procs); do
	[ "$p" = "$s" ] || [ "$(task_state "$p")" != T ] || fail "task $p, running when dumped, is stopped after the restore"
done
kill -CONT "$s"
counts_on "the stopped task continued"
log "a task stopped when dumped: stopped after the restore, the others ran; continued, the counter counts on"
echo "PASS restore_leave_stopped"
