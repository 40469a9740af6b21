#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Freezes with an owner and a deadline: `kill -9` of a cryo holding a
# freeze gets the cgroup thawed by its watchdog; --deadline thaws by itself
# at the deadline and not before; `cryo thaw` releases the hold; when the
# watchdog died too, `cryo recover` thaws from the journal; live holds are
# kept. Also: container IDs map to their recorded cgroup (pause/resume).
# With cryo_freezer.ko loaded (tests/vm/cli_kmod.vmtest) the kernel holds
# instead of a watchdog process: the same states and deadlines, checked
# through the module's status file; the watchdog-only steps say so.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/freezer.sh"
fz_need_hierarchies
R=$T/root
mkdir -p "$R"
at_exit "fz_kill_watchdogs '$R'"
# CRYO_TIME_SLACK stretches the deadlines where starting cryo alone takes
# a good part of a second (qemu TCG in tests/vm/cli_kmod.vmtest)
S=${CRYO_TIME_SLACK:-1}
KMOD=
cryo features | grep -q '"cgroupHoldBackend":"kmod"' && KMOD=1
log "cgroup hold backend: $([ -n "$KMOD" ] && echo kmod || echo watchdog)"
KSTATUS=/sys/kernel/debug/cryo_freezer/holds
# the hold of cgroup $1 as the module lists it (empty without the module)
kmod_hold_of() { [ -n "$KMOD" ] && grep -F " target=$1" "$KSTATUS" 2>/dev/null | grep 'state=held'; }

for h in v1 v2; do
	fz_mkcg $h hold; cg=$CG
	fz_spawn "$cg" 3

	# kill -9 of the holder: its watchdog thaws at once
	"$CRYO_BIN" --root "$R" freeze --cgroup "$cg" --hold $((30000 * S)) &  # $! must be cryo itself
	holder=$!
	fz_wait_state "$cg" FROZEN 5000 || fail "$h: --hold did not freeze"
	[ -n "$(ls "$R/.holds/"*.json 2>/dev/null)" ] || fail "$h: no hold journalled"
	if [ -n "$KMOD" ]; then
		kmod_hold_of "$cg" | grep -q 'owner=file' || fail "$h: --hold is not a kmod fd hold: $(cat "$KSTATUS")"
		[ -z "$(fz_watchdogs "$R" | grep -v '^0$')" ] || fail "$h: a watchdog was started with the module loaded"
	else
		[ -n "$(fz_watchdogs "$R")" ] || fail "$h: no watchdog journalled"
	fi
	t0=$(now_ms)
	kill -9 $holder
	wait $holder 2>/dev/null
	fz_wait_state "$cg" RUNNING 3000 || fail "$h: still $(cryo freezer-state --cgroup "$cg") 3 s after kill -9 of the holder"
	log "$h: thawed $(($(now_ms) - t0)) ms after kill -9 of the holder"
	if [ -n "$KMOD" ]; then
		# the kernel thawed; nobody removes the entry, recover reports it as done
		out=$(cryo --root "$R" recover) || fail "$h: recover failed: $out"
		echo "$out" | grep -q "already thawed by cryo_freezer" || fail "$h: recover: $out"
	fi
	for _ in $(seq 50); do [ -z "$(ls "$R/.holds/"*.json 2>/dev/null)" ] && break; sleep 0.02; done
	[ -z "$(ls "$R/.holds/"*.json 2>/dev/null)" ] || fail "$h: journal entry left after the watchdog thawed"

	# a --hold that runs its course thaws itself
	check cryo --root "$R" freeze --cgroup "$cg" --hold 200
	fz_expect_state "$cg" RUNNING

	# --deadline: frozen until the deadline, thawed by it
	t0=$(now_ms)
	check cryo --root "$R" freeze --cgroup "$cg" --deadline $((1000 * S))
	# (a machine so loaded that cryo took the whole deadline to return proves nothing here)
	[ $(($(now_ms) - t0)) -ge $((900 * S)) ] || fz_expect_state "$cg" FROZEN
	if [ -n "$KMOD" ]; then
		kmod_hold_of "$cg" | grep -q 'owner=detached' || fail "$h: --deadline is not a detached kmod hold: $(cat "$KSTATUS")"
	fi
	# still frozen at 60% of the deadline, counted from before the command
	# (on a slow guest, starting cryo alone can take a good part of it)
	left=$((t0 + 600 * S - $(now_ms)))
	if [ "$left" -gt 0 ]; then
		sleep "$(awk "BEGIN { print $left / 1000 }")"
		fz_expect_state "$cg" FROZEN
	else
		log "$h: cryo freeze took $((600 * S - left)) ms: past 60% of the deadline, mid-check skipped"
	fi
	fz_wait_state "$cg" RUNNING $((2500 * S)) || fail "$h: not thawed by the deadline"
	dt=$(($(now_ms) - t0))
	[ $dt -ge $((1000 * S)) ] || fail "$h: thawed after $dt ms, before the $((1000 * S)) ms deadline"
	log "$h: deadline $((1000 * S)) ms, thawed after $dt ms"

	# cryo thaw releases the hold: the watchdog does not fire later
	check cryo --root "$R" freeze --cgroup "$cg" --deadline $((700 * S))
	check cryo --root "$R" thaw --cgroup "$cg"
	check cryo --root "$R" freeze --cgroup "$cg"
	sleep "$S"
	fz_expect_state "$cg" FROZEN
	check cryo --root "$R" thaw --cgroup "$cg"

	# the holder and its watchdog both died: cryo recover thaws
	if [ -n "$KMOD" ]; then
		log "$h: skip killing the watchdog: with the module there is none (the kernel holds)"
	else
	check cryo --root "$R" freeze --cgroup "$cg" --deadline 60000
	wd=$(fz_watchdogs "$R")
	[ -n "$wd" ] || fail "$h: no watchdog journalled"
	kill -9 $wd
	sleep 0.2
	fz_expect_state "$cg" FROZEN
	# a new hold is refused while the stale one is unrecovered
	expect_fail 1 cryo --root "$R" freeze --cgroup "$cg" --deadline 1000
	out=$(cryo --root "$R" recover) || fail "$h: recover failed: $out"
	echo "$out" | grep -q "cgroup-thaw \`$cg\`" || fail "$h: recover did not report the thaw: $out"
	fz_expect_state "$cg" RUNNING
	[ -z "$(ls "$R/.holds/"*.json 2>/dev/null)" ] || fail "$h: recover left the journal entry"
	fi

	# a watchdog's socket whose maker was killed before its watchdog took
	# it over: nobody listens on it, recover removes it; one that a
	# process listens on stays
	sk=$R/.holds/fs@0:0.sock
	python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).bind(sys.argv[1])' "$sk" ||
		fail "$h: make a socket"
	check cryo --root "$R" recover
	[ ! -e "$sk" ] || fail "$h: recover left a socket nobody listens on"
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1]); s.listen(1); time.sleep(30)' "$sk" &
	lp=$!
	for _ in $(seq 400); do [ -S "$sk" ] && break; sleep 0.05; done
	check cryo --root "$R" recover
	[ -S "$sk" ] || fail "$h: recover removed a socket a process listens on"
	kill "$lp"
	wait "$lp" 2>/dev/null
	rm -f "$sk"

	# recover keeps a live hold
	check cryo --root "$R" freeze --cgroup "$cg" --deadline 60000
	out=$(cryo --root "$R" recover) || fail "$h: recover failed: $out"
	echo "$out" | grep -q "^kept" || fail "$h: recover did not keep the live hold: $out"
	fz_expect_state "$cg" FROZEN
	# the journal dir sits in the state root under a valid id, but is no container
	[ -d "$R/.holds" ] || fail "$h: no hold journal dir $R/.holds"
	out=$(cryo --root "$R" list -q) || fail "$h: list failed: $out"
	! grep -qx holds <<<"$out" || fail "$h: \`cryo list\` shows the hold journal as a container: $out"
	check cryo --root "$R" thaw --cgroup "$cg"
	fz_expect_state "$cg" RUNNING
	[ -z "$(kmod_hold_of "$cg")" ] || fail "$h: cryo thaw left the kernel hold: $(cat "$KSTATUS")"

	# unwinding: a failing freeze releases its hold; a failing journal write freezes nothing
	expect_fail 1 env CRYO_FAULT=freeze "$CRYO_BIN" --root "$R" freeze --cgroup "$cg" --deadline 60000
	expect_output "injected fault" "$h: fault freeze"
	[ -z "$(ls "$R/.holds/"*.json 2>/dev/null)" ] || fail "$h: failed freeze left its hold"
	fz_expect_state "$cg" RUNNING
	expect_fail 1 env CRYO_FAULT=hold-journal "$CRYO_BIN" --root "$R" freeze --cgroup "$cg" --deadline 60000
	expect_output "write journal entry" "$h: fault hold-journal"
	[ -z "$(ls "$R/.holds/"*.json 2>/dev/null)" ] || fail "$h: failed hold left a journal entry"
	fz_expect_state "$cg" RUNNING
	check cryo --root "$R" freeze --cgroup "$cg" --deadline 60000
	check cryo --root "$R" thaw --cgroup "$cg"

	# a container id resolves to its recorded cgroup (state.json as the runtime writes it)
	pid=$(head -1 "$cg/cgroup.procs")
	start=$(awk '{print $22}' "/proc/$pid/stat")
	mkdir -p "$R/fz-$h"
	key=cgroupV2; [ $h = v1 ] && key=cgroupV1Freezer
	cat > "$R/fz-$h/state.json" <<JSON
{ "id": "fz-$h", "status": "running", "pid": $pid, "pidStartTime": $start, "bundle": "$T",
  "rootfs": "$T", "$key": "$cg", "freezerBackend": "$h", "created": 0 }
JSON
	check cryo --root "$R" pause fz-$h
	grep -q '"status":"paused"' "$R/fz-$h/state.json" || fail "$h: pause did not record paused: $(cat "$R/fz-$h/state.json")"
	[ "$(cryo --root "$R" freezer-state fz-$h)" = FROZEN ] || fail "$h: container not FROZEN"
	fz_expect_state "$cg" FROZEN
	expect_fail 1 cryo --root "$R" pause fz-$h
	expect_output "already FROZEN" "$h: pause twice"
	check cryo --root "$R" resume fz-$h
	grep -q '"status":"running"' "$R/fz-$h/state.json" || fail "$h: resume did not record running"
	fz_expect_state "$cg" RUNNING
	expect_fail 1 cryo --root "$R" resume fz-$h
	expect_output "not frozen" "$h: resume twice"
	cg_remove "$cg"
	# its init is gone: the container is stopped and can't be paused
	expect_fail 1 cryo --root "$R" pause fz-$h
	expect_output "is stopped, not running" "$h: pause of a stopped container"
done
echo ok
