#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The freezer on real containers run by cryo, with each backend chosen by
# the org.cryo.freezer annotation: pause/resume and what `cryo state` says,
# errors on pausing twice/resuming a running one, a freeze held by a cryo
# that is killed -9 is thawed by its watchdog, kill-all stops the container.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/freezer.sh"
fz_need_hierarchies
need_cmd busybox
R=$T/root
at_exit "fz_kill_watchdogs '$R'"

status() { cryo --root "$R" state "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["status"], d.get("org.cryo.freezer", "-"))'; }

for h in v1 v2; do
	id=fzc-$h-$$
	b=$T/bundle-$h
	bash "$CRYO_SRC/examples/mkbundle.sh" --freezer $h "$b" sh -c 'for i in $(seq 50); do sleep 1000 & done; exec sleep 1000' \
		>/dev/null 2>"$T/mkbundle.err" || skip "mkbundle failed: $(cat "$T/mkbundle.err")"
	at_exit "bash '$CRYO_SRC/examples/mkbundle.sh' --teardown '$b'"
	# not check: its $(...) would wait for the container, which inherits the pipe
	cryo --root "$R" run -d --bundle "$b" "$id" </dev/null >"$T/run.out" 2>&1 || fail "$h: run: $(cat "$T/run.out")"
	at_exit "'$CRYO_BIN' --root '$R' delete -f '$id'"
	cg=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["cgroupV1Freezer" if sys.argv[2] == "v1" else "cgroupV2"])' "$R/$id/state.json" $h)
	for _ in $(seq 100); do [ "$(wc -l < "$cg/cgroup.procs")" -ge 51 ] && break; sleep 0.05; done
	[ "$(status "$id")" = "running RUNNING" ] || fail "$h: fresh container: $(status "$id")"

	check cryo --root "$R" pause "$id"
	[ "$(status "$id")" = "paused FROZEN" ] || fail "$h: after pause: $(status "$id")"
	fz_expect_state "$cg" FROZEN
	expect_fail 1 cryo --root "$R" pause "$id"
	expect_output "already FROZEN" "$h: pause twice"
	check cryo --root "$R" resume "$id"
	[ "$(status "$id")" = "running RUNNING" ] || fail "$h: after resume: $(status "$id")"
	expect_fail 1 cryo --root "$R" resume "$id"

	# a freeze held as part of a longer operation, its holder killed -9
	"$CRYO_BIN" --root "$R" freeze --hold 30000 "$id" &
	holder=$!
	fz_wait_state "$cg" FROZEN 5000 || fail "$h: --hold did not freeze the container"
	kill -9 $holder
	wait $holder 2>/dev/null
	fz_wait_state "$cg" RUNNING 3000 || fail "$h: the watchdog did not thaw the container"
	[ "$(status "$id")" = "running RUNNING" ] || fail "$h: after the watchdog: $(status "$id")"
	log "$h: container thawed by the watchdog of a killed cryo"

	check cryo --root "$R" kill-all "$id"
	[ "$(wc -l < "$cg/cgroup.procs")" = 0 ] || fail "$h: tasks left after kill-all"
	for _ in $(seq 100); do [ "$(status "$id" | cut -d' ' -f1)" = stopped ] && break; sleep 0.05; done
	[ "$(status "$id" | cut -d' ' -f1)" = stopped ] || fail "$h: not stopped after kill-all: $(status "$id")"
	expect_fail 1 cryo --root "$R" pause "$id"
	expect_output "is stopped, not running" "$h: pause of a stopped container"
	check cryo --root "$R" delete "$id"
done
echo ok
