#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `cryo receive` holds the container's cgroup before CRIU makes a task
# there: restore's kill hold (a watchdog that kills every task in the
# cgroup the moment receive dies) is taken before CRIU runs and handed to
# receive, which keeps it until the source commits. Before, receive took
# its hold after the restore: a receive killed between CRIU's end and
# that hold left its copy running there while the source resumed here.
#
# Two "hosts" (tests/lib/migrate.sh), mutual TLS, the self-checking
# counter; the destination's receive stops itself (CRYO_PAUSE_AT):
#  - just before CRIU restores: the hold is in its journal, on the
#    container's cgroup there, its watchdog alive;
#  - just after CRIU restored (before the freeze): every task of the copy
#    is stopped; receive SIGKILLed there: the copy is gone within 3 s,
#    `cryo recover` there leaves nothing, the source resumes counting.
# Needs a CRIU that works here (CRYO_CRIU, see `cryo check`).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu
. "$CRYO_SRC/tests/lib/workload.sh"
. "$CRYO_SRC/tests/lib/migrate.sh"
file "$WL_BIN" | grep -q 'statically linked' || skip "cryo-test-counter is not static (sanitizer build?)"

mig_hosts_setup
mig_tls_certs "$T/pki"
id=rkh-$$
B=$T/$id
mig_counter_run "$B" "$id" 4
S=$B/rootfs-dir/status
wl_wait_above "$S" 20
DEST=tls://$MIG_IP_DST:$MIG_PORT
# the copy's cgroup there, as this host sees it (the dest's cgroup namespace is rooted at $MIG_CG)
dprocs() {
	cat "/sys/fs/cgroup/unified/$MIG_CG/$CGPARENT/$id/cgroup.procs" 2>/dev/null ||
		cat "/sys/fs/cgroup/freezer/$MIG_CG/$CGPARENT/$id/cgroup.procs" 2>/dev/null
}
# receive, stopped at its pause point: its pid
wait_receive_stopped() {
	local p
	for _ in $(seq 1200); do
		for p in $(pgrep -f -- "--root $MIG_ROOT_DST receive"); do
			[ "$(task_state "$p")" = T ] && { echo "$p"; return 0; }
		done
		kill -0 "$MIG_RPID" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}
# the source runs as before, nothing is left there
assert_back() {
	local c why
	[ "$(rt freezer-state "$id")" = RUNNING ] || fail "$1: the source is $(rt freezer-state "$id")"
	c=$(wl_count "$S")
	wl_wait_above "$S" $((c + 5))
	why=$(mig_dst_clean "$id") || fail "$1: $why"
	[ -z "$(ls -A "$MIG_ROOT_DST/.holds" 2>/dev/null)" ] || fail "$1: journal entries left there: $(ls -A "$MIG_ROOT_DST/.holds")"
}
migrate_bg() {
	rt_migrate --timeout 60000 "$id" "$DEST" >"$T/m.out" 2>&1 &
	mpid=$!
}

for at in criu-restore pause-or-run; do
	CRYO_PAUSE_AT=restore:$at mig_receive "$T/r.out" --allow-unsigned
	migrate_bg
	rp=$(wait_receive_stopped) || fail "$at: receive did not stop there: $(cat "$T/r.out") / $(cat "$T/m.out")"
	[ "$(rt freezer-state "$id")" = FROZEN ] || fail "$at: the source is $(rt freezer-state "$id") while receive restores"
	hold=$MIG_ROOT_DST/.holds/$id@tasks.json
	python3 - "$hold" "$MIG_CG/$CGPARENT/$id" <<'PY' || fail "$at: no kill hold on the copy's cgroup: $(cat "$MIG_ROOT_DST/.holds/"*.json 2>/dev/null)"
import json, os, sys
h = json.load(open(sys.argv[1]))
assert h["kind"] == "cgroup-kill", h
assert h["target"].endswith("/" + sys.argv[2].split("/", 1)[1]) or h["target"].endswith(sys.argv[2]), h
os.kill(h["watchdogPid"], 0)
PY
	if [ "$at" = criu-restore ]; then
		[ -z "$(dprocs)" ] || fail "$at: tasks there before CRIU ran: $(dprocs)"
	else
		n=0
		for p in $(dprocs); do
			st=$(task_state "$p")
			[ -z "$st" ] && continue
			n=$((n + 1))
			[ "$st" = T ] || fail "$at: task $p of the copy is $st, not stopped"
		done
		[ $n -ge 2 ] || fail "$at: only $n tasks in the copy's cgroup"
	fi
	kill -9 "$rp"
	t0=$(now_ms)
	while [ -n "$(dprocs)" ] && [ $(($(now_ms) - t0)) -lt 3000 ]; do sleep 0.02; done
	[ -z "$(dprocs)" ] || fail "$at: the copy outlived the killed receive: $(for p in $(dprocs); do echo "$p:$(task_state "$p")"; done)"
	took=$(($(now_ms) - t0))
	wait "$mpid" && fail "$at: migrate succeeded with its receive killed: $(cat "$T/m.out")"
	mig_receive_wait 10
	# recover undoes what the killed receive journalled: its bundle, and its
	# restore's state dir and cgroup; nothing blocks the next migration
	check rt_dst recover
	[ ! -e "$MIG_BUNDLES/$id" ] || fail "$at: recover left the killed receive's bundle: $(ls -A "$MIG_BUNDLES/$id")"
	[ ! -e "$MIG_ROOT_DST/$id" ] || fail "$at: recover left the restore's state dir: $(ls -A "$MIG_ROOT_DST/$id")"
	for d in /sys/fs/cgroup/*/"$MIG_CG/$CGPARENT/$id"; do
		[ ! -d "$d" ] || fail "$at: recover left the restore's cgroup $d"
	done
	assert_back "receive killed before $at"
	log "receive killed before $at: hold on its cgroup before CRIU, the copy gone ${took} ms after; $(grep -m1 -o 'failed at [^;]*' "$T/m.out"), the source counts on"
done
echo "PASS receive_kill_hold"
