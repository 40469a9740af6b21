#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Two operators at once, on the self-checking counter. Whatever order
# the kernel gives them, each operation either completes (an image it
# made verifies, and the counter restored from it passes its checks) or
# fails with an error that says why, and nothing is lost, frozen or left
# behind (tests/lib/soak.sh's counts):
#   two-checkpoints  two checkpoints of one container at once
#   ck-delete        a checkpoint, and `delete --force` of its container
#   freeze-migrate   `cryo pause` while the container migrates
#   recover-ck       `cryo recover` again and again while a checkpoint runs:
#                    it must leave the live holds alone
#   twenty           20 containers checkpointed at once
#   CRYO_SOAK_CONCURRENCY: a list of these (default all); each
#   CRYO_SOAK_CYCLES times (default 1), or for CRYO_SOAK_SECONDS.
# Needs a CRIU that works here (CRYO_CRIU, see `cryo check`).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/soak.sh"
soak_begin
CASES=${CRYO_SOAK_CONCURRENCY:-two-checkpoints ck-delete freeze-migrate recover-ck twenty}
CYCLES=${CRYO_SOAK_CYCLES:-1}
N_MANY=${CRYO_SOAK_MANY:-20}

mig_hosts_setup
mig_tls_certs "$T/pki"
mig_dst_parent_cgroups
# cryo in the background: cryo_bg OUT ARGS... (its output in OUT, made
# before it starts); its pid in $! as for any background command
cryo_bg() {
	local out=$1
	shift
	: >"$out"
	"$CRYO_BIN" --root "$RTROOT" "$@" </dev/null >"$out" 2>&1 &
}

# a counter container on a directory rootfs: id $1 (status file in $T/$1/rootfs-dir/status)
start() {
	mig_counter_run "$T/$1" "$1" "${2:-4}"
}
st_of() { echo "$T/$1/rootfs-dir/status"; }
runs() { soak_runs "$2" "$1" "$(st_of "$1")"; }
# an image that verifies and, restored in place of the container, counts on
restores() {
	local id=$1 img=$2 what=$3
	"$CRYO_BIN" inspect "$img" 2>&1 | grep -q '^verified: *yes' || fail "$what: $img does not verify"
	rt delete --force "$id" >/dev/null 2>&1
	timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$T/$id" --image-path "$img" "$id" </dev/null \
		>"$T/rs.out" 2>&1 || fail "$what: $img does not restore: $(cat "$T/rs.out")"
	runs "$id" "$what, restored from $img"
}
# an error that says why: the container's lock, or its state
clear_error() { grep -Eq "$2" "$1" || fail "$3: unclear error: $(cat "$1")"; }
BUSY='locked|lock|busy|in use|held|already|exists|is (stopped|paused|running|frozen|FROZEN|FREEZING|created)|not running|does not exist|no such|No such'

x=sk-c-$$
start "$x"
wl_wait_above "$(st_of "$x")" 20

c_two_checkpoints() {
	local p1 p2 r1=0 r2=0 ok=0
	rm -rf "$T/i1" "$T/i2"
	cryo_bg "$T/bg.1.out" checkpoint --leave-running --image-path "$T/i1" "$x"; p1=$!
	cryo_bg "$T/bg.2.out" checkpoint --leave-running --image-path "$T/i2" "$x"; p2=$!
	wait $p1 || r1=$?
	wait $p2 || r2=$?
	for r in "1 $r1" "2 $r2"; do
		set -- $r
		if [ "$2" = 0 ]; then
			ok=$((ok + 1))
		else
			clear_error "$T/bg.$1.out" "$BUSY" "two-checkpoints"
			[ ! -e "$T/i$1" ] || fail "two-checkpoints: the one that failed left $T/i$1"
			soak_count two-checkpoints.refused
		fi
	done
	[ $ok -ge 1 ] || fail "two-checkpoints: neither went through: $(cat "$T/bg.1.out" "$T/bg.2.out")"
	runs "$x" two-checkpoints
	[ $r1 = 0 ] && restores "$x" "$T/i1" two-checkpoints
	[ $r2 = 0 ] && restores "$x" "$T/i2" two-checkpoints
	return 0
}

c_ck_delete() {
	local p1 p2 r1=0 r2=0
	rm -rf "$T/i1"
	cryo_bg "$T/bg.ck.out" checkpoint --image-path "$T/i1" "$x"; p1=$!
	sleep "0.0$((RANDOM % 10))"
	cryo_bg "$T/bg.del.out" delete --force "$x"; p2=$!
	wait $p1 || r1=$?
	wait $p2 || r2=$?
	[ $r1 = 0 ] || { clear_error "$T/bg.ck.out" "$BUSY|killed|deleted|died|gone|exited" "ck-delete (checkpoint exited $r1)"; [ ! -e "$T/i1" ] || fail "ck-delete: a failed checkpoint left $T/i1"; }
	[ $r2 = 0 ] || clear_error "$T/bg.del.out" "$BUSY" "ck-delete (delete exited $r2)"
	soak_count "ck-delete.checkpoint-$([ $r1 = 0 ] && echo won || echo lost)"
	# nothing frozen, nothing of it left running
	[ -z "$(cat "/sys/fs/cgroup/unified/$CGPARENT/$x/cgroup.procs" 2>/dev/null)" ] || [ $r2 != 0 ] ||
		fail "ck-delete: deleted, and tasks are left"
	if [ $r1 = 0 ]; then
		restores "$x" "$T/i1" ck-delete
	else
		rt delete --force "$x" >/dev/null 2>&1
		rm -rf "$T/$x"
		start "$x"
		runs "$x" "ck-delete, started again"
	fi
}

c_freeze_migrate() {
	local p1 r1=0 rp=0 st
	mig_receive "$T/r.out" --allow-unsigned
	rt_migrate "$x" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/m.out" 2>&1 & p1=$!
	sleep "0.$((RANDOM % 10))"
	rt pause "$x" >"$T/p.out" 2>&1 || rp=$?
	wait $p1 || r1=$?
	mig_receive_wait 30
	[ $rp = 0 ] || clear_error "$T/p.out" "$BUSY|migrat" freeze-migrate
	soak_count "freeze-migrate.pause-$([ $rp = 0 ] && echo ok || echo refused)"
	soak_count "freeze-migrate.migrate-$([ $r1 = 0 ] && echo ok || echo failed)"
	if [ $r1 = 0 ]; then
		# there: running, or paused as it was when it left; bring it back here
		st=$(rt_dst freezer-state "$x")
		[ "$st" = RUNNING ] || [ "$st" = FROZEN ] || fail "freeze-migrate: there it is $st"
		[ "$st" = FROZEN ] && rt_dst resume "$x" >/dev/null 2>&1
		rt delete "$x" >/dev/null 2>&1
		mig_back "freeze-migrate" "$x"
	else
		clear_error "$T/m.out" "failed at" freeze-migrate
		why=$(mig_dst_clean "$x") || fail "freeze-migrate: $why"
		[ "$(rt freezer-state "$x")" = FROZEN ] && [ $rp = 0 ] && rt resume "$x" >/dev/null 2>&1
	fi
	runs "$x" freeze-migrate
}

c_recover_ck() {
	local p1 r1=0 n=0
	rm -rf "$T/i1"
	cryo_bg "$T/bg.rc.out" checkpoint --leave-running --image-path "$T/i1" "$x"; p1=$!
	while kill -0 $p1 2>/dev/null; do
		rt recover >"$T/rec.out" 2>&1 || fail "recover-ck: recover: $(cat "$T/rec.out")"
		n=$((n + 1))
	done
	wait $p1 || r1=$?
	[ $r1 = 0 ] || fail "recover-ck: the checkpoint failed beside recover: $(cat "$T/bg.rc.out")"
	soak_count recover-ck.recovers $n
	runs "$x" recover-ck
	restores "$x" "$T/i1" recover-ck
}

c_twenty() {
	local i pids=() r fails=0
	if [ -z "${MANY_UP:-}" ]; then
		for i in $(seq "$N_MANY"); do start "$x-$i" 1; done
		for i in $(seq "$N_MANY"); do wl_wait_above "$(st_of "$x-$i")" 5; done
		MANY_UP=1
	fi
	for i in $(seq "$N_MANY"); do
		rm -rf "$T/m$i"
		cryo_bg "$T/bg.m$i.out" checkpoint --leave-running --image-path "$T/m$i" "$x-$i"; pids+=($!)
	done
	for i in $(seq "$N_MANY"); do
		r=0
		wait "${pids[$((i - 1))]}" || r=$?
		if [ $r != 0 ]; then
			fails=$((fails + 1))
			clear_error "$T/bg.m$i.out" "$BUSY|resource|Resource|timed out" "twenty (checkpoint $i exited $r)"
			[ ! -e "$T/m$i" ] || fail "twenty: a failed checkpoint left $T/m$i"
		else
			"$CRYO_BIN" inspect "$T/m$i" 2>&1 | grep -q '^verified: *yes' || fail "twenty: $T/m$i does not verify"
		fi
	done
	soak_count twenty.failed $fails
	soak_count twenty.checkpoints $((N_MANY - fails))
	for i in $(seq "$N_MANY"); do runs "$x-$i" twenty; done
	# one of them back from its image (all would take long: they verify)
	i=$((RANDOM % N_MANY + 1))
	[ -e "$T/m$i" ] && restores "$x-$i" "$T/m$i" twenty
	return 0
}

soak_baseline
n=0
while soak_more "$n" "$CYCLES"; do
	for k in $CASES; do
		"c_${k//-/_}"
		soak_count "cases.$k"
		[ "$k" = twenty ] && [ "$n" = 0 ] && soak_baseline
		soak_check_leaks "after $k"
		log "$k: done"
	done
	n=$((n + 1))
	soak_count rounds
done
echo "PASS concurrency"
