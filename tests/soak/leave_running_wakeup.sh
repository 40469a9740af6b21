#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# How often a task of the container sleeps on past its timer after a
# `checkpoint --leave-running` (docs/reliability.md, known gaps), cryo
# beside bare CRIU in one run. The workload is the self-checking counter
# (its sender sleeps 2 ms between values, its parent waits on a pipe):
#   cryo   `cryo checkpoint --leave-running` of the counter's container
#   bare   the counter as a plain tree in a cgroup of its own, of the
#          freezer cryo uses here (cgroup2's cgroup.freeze or v1's
#          freezer.state), frozen first as cryo does, `criu dump
#          --leave-running --freeze-cgroup`, then thawed
# After each round the counter must count on within 3 s. One that does
# not is "stuck": its tasks' states are printed, each is woken by a ptrace
# attach (strace), and if it counts on then, that was a lost wakeup.
#
#   CRYO_WAKEUP_ROUNDS=N (default 60) bash tests/soak/leave_running_wakeup.sh
# Not in CI (minutes); needs a CRIU that works here (CRYO_CRIU).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu
export CRIU_FAULT=${CRIU_FAULT:-130}
command -v strace >/dev/null || skip "no strace"
N=${CRYO_WAKEUP_ROUNDS:-60}
CNT=$CRYO_BUILD/tests/tools/cryo-test-counter
CRIU=${CRYO_CRIU:-criu}

# counts on within 3 s (file $1)? else 1 after waking its tasks (pids in $2...)
counts_on() {
	local f=$1 c p
	shift
	c=$(awk '{ print $1 }' "$f")
	for _ in $(seq 60); do
		grep -q FAIL "$f" && fail "the counter's check failed: $(cat "$f")"
		[ "$(awk '{ print $1 }' "$f")" -gt "$c" ] 2>/dev/null && return 0
		sleep 0.05
	done
	for p in "$@"; do printf '  %s:%s %s\n' "$p" "$(task_state "$p")" "$(cat "/proc/$p/wchan" 2>/dev/null)"; done
	ptrace_kick "$@"
	c=$(awk '{ print $1 }' "$f")
	sleep 0.5
	[ "$(awk '{ print $1 }' "$f")" -gt "$c" ] 2>/dev/null || fail "stuck, and a ptrace attach did not wake it"
	return 1
}

# cryo
bundle_for wakeup /counter /status 256
cp "$CNT" "$B/rootfs/counter"
bundle_set "$B" "c['linux'].pop('resources', None)"
at_exit _rt_cleanup
rt run -d --bundle "$B" "$id" </dev/null >"$T/run.out" 2>&1 || fail "run: $(cat "$T/run.out")"
CG=$(rt_freezer_cgroup "$id") || exit 1
if [ -e "$CG/cgroup.freeze" ]; then v2=1 threads=cgroup.threads; else v2=0 threads=tasks; fi
sleep 1
cryo_stuck=0
for i in $(seq "$N"); do
	"$CRYO_BIN" --root "$RTROOT" checkpoint --leave-running --image-path "$T/img" --work-path "$T/work" "$id" \
		</dev/null >"$T/ck.out" 2>&1 || fail "cryo round $i: $(cat "$T/ck.out")"
	# shellcheck disable=SC2046
	counts_on "$B/rootfs/status" $(cat "$CG/$threads") || { cryo_stuck=$((cryo_stuck + 1)); log "cryo round $i: a lost wakeup"; }
done
rt delete --force "$id" >/dev/null 2>&1

# bare CRIU, frozen first, by the freezer cryo used
if [ $v2 = 1 ]; then BCG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)/cryo-wakeup-$$; else BCG=/sys/fs/cgroup/freezer/cryo-wakeup-$$; fi
mkdir "$BCG"
cleanup_bare() {
	local p
	for _ in 1 2 3; do for p in $(cat "$BCG/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done; sleep 0.3; done
	rmdir "$BCG" 2>/dev/null
}
at_exit cleanup_bare
freeze() {
	if [ $v2 = 1 ]; then
		echo 1 >"$BCG/cgroup.freeze"
		for _ in $(seq 400); do grep -q '^frozen 1' "$BCG/cgroup.events" && return; sleep 0.005; done
	else
		echo FROZEN >"$BCG/freezer.state"
		for _ in $(seq 400); do [ "$(cat "$BCG/freezer.state")" = FROZEN ] && return; sleep 0.005; done
	fi
	fail "the bare cgroup did not freeze"
}
thaw() { if [ $v2 = 1 ]; then echo 0 >"$BCG/cgroup.freeze"; else echo THAWED >"$BCG/freezer.state"; fi; }
mkdir -p "$T/bare"
(echo "$BASHPID" >"$BCG/cgroup.procs" && exec setsid "$CNT" "$T/bare/status" 256 </dev/null >/dev/null 2>&1) &
sleep 1
root=$(pgrep -f "^$CNT $T/bare/status" | head -1)
[ -n "$root" ] || fail "the bare counter did not start"
bare_stuck=0
for i in $(seq "$N"); do
	freeze
	rm -rf "$T/bare/img" && mkdir "$T/bare/img"
	"$CRIU" dump --leave-running --freeze-cgroup "$BCG" -t "$root" -D "$T/bare/img" -o dump.log >/dev/null 2>&1 ||
		fail "bare round $i: $(grep Error "$T/bare/img/dump.log" | head -2)"
	thaw
	# shellcheck disable=SC2046
	counts_on "$T/bare/status" $(cat "$BCG/$threads") || { bare_stuck=$((bare_stuck + 1)); log "bare round $i: a lost wakeup"; }
done
log "leave-running dumps, $N rounds each ($([ $v2 = 1 ] && echo cgroup2 || echo v1) freezer): cryo $cryo_stuck lost wakeups, bare CRIU (frozen first) $bare_stuck"
echo "PASS leave_running_wakeup"
