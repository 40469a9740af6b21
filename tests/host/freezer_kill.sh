#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# cryo kill-all leaves no task behind even while a (bounded) fork bomb
# runs in the cgroup: cgroup.kill on v2, freeze-signal-thaw on v1. A
# non-fatal signal reaches every task and leaves the cgroup's state as it was.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/freezer.sh"
fz_need_hierarchies

# every process keeps forking children (that fork too) while the cgroup
# has fewer than 300 processes
bomb='b() { while :; do [ $(wc -l < "$0/cgroup.procs") -lt 300 ] && { b & }; sleep 0.01; done; }; b'

for h in v1 v2; do
	fz_mkcg $h bomb; cg=$CG
	fz_spawn "$cg" 4 bash -c "$bomb" "$cg"
	sleep 1
	n=$(wc -l < "$cg/cgroup.procs")
	[ "$n" -ge 50 ] || fail "$h: the fork bomb did not grow ($n processes)"
	check cryo kill-all --cgroup "$cg"
	n=$(wc -l < "$cg/cgroup.procs")
	[ "$n" = 0 ] || fail "$h: $n processes survived kill-all"
	sleep 0.5
	n=$(wc -l < "$cg/cgroup.procs")
	[ "$n" = 0 ] || fail "$h: $n processes appeared after kill-all"
	fz_expect_state "$cg" RUNNING
	log "$h: fork bomb of >= 50 processes killed, none left"

	# SIGTERM to every task; a frozen cgroup stays frozen
	fz_spawn "$cg" 20 bash -c "trap 'echo x >> $T/term.$h; exit 0' TERM; echo r >> $T/ready.$h; while :; do sleep 0.05; done"
	# signal only once every handler is installed
	for _ in $(seq 200); do [ "$(wc -l < "$T/ready.$h" 2>/dev/null || echo 0)" -ge 20 ] && break; sleep 0.05; done
	check cryo freeze --cgroup "$cg"
	check cryo kill-all --cgroup "$cg" TERM
	fz_expect_state "$cg" FROZEN
	check cryo thaw --cgroup "$cg"
	for _ in $(seq 100); do [ "$(wc -l < "$T/term.$h" 2>/dev/null || echo 0)" -ge 20 ] && break; sleep 0.05; done
	[ "$(wc -l < "$T/term.$h")" -ge 20 ] || fail "$h: only $(wc -l < "$T/term.$h") of 20 tasks got SIGTERM"
	cg_remove "$cg"
done
expect_fail 2 cryo kill-all --cgroup /x NOSUCHSIG
expect_output "unknown signal" "bad signal message"
echo ok
