#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The seed's FREEZING, for real: a task of the cgroup sleeps in D on I/O to
# a filesystem stacked on a FIFREEZE'd one. On both hierarchies cryo keeps
# retrying until its deadline, then thaws back (exit 3) naming the task
# (pid, comm, state, wchan, stack); --keep-freezing leaves it FREEZING;
# thaw cancels; a freeze still waiting completes when the blocker leaves
# the cgroup; after FITHAW the retry succeeds.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/freezer.sh"
fz_need_hierarchies
fz_setup_nested_fs

for h in v1 v2; do
	fz_mkcg $h blk; cg=$CG
	fz_spawn "$cg" 1 sh -c "while :; do dd if=/dev/zero of=$T/inner/f.$h bs=4k count=1 oflag=direct conv=notrunc; done"
	check cryo freeze --cgroup "$cg"
	check cryo thaw --cgroup "$cg"

	fz_fsfreeze
	dpid=$(fz_dpid "$cg" dd) || fail "$h: no writer went into D state on the frozen filesystem"
	log "$h: pid $dpid sleeps in D ($(cat /proc/$dpid/wchan))"

	# gives up at the deadline, names the blocker, thaws back
	t0=$(date +%s%N)
	expect_fail 3 cryo freeze --cgroup "$cg" --timeout 500
	t1=$(date +%s%N)
	expect_output "did not freeze in 500 ms" "$h: message"
	expect_output "pid $dpid \`dd\` D" "$h: blocker pid $dpid not named"
	expect_output "thawed back to RUNNING" "$h: no rollback said"
	expect_output "1 task of" "$h: a frozen task was named as a blocker"
	if [ -r /proc/$dpid/stack ] && [ -n "$(cat /proc/$dpid/stack)" ]; then
		expect_output "\[stack: " "$h: kernel stack missing"
	fi
	ms=$(((t1 - t0) / 1000000))
	# CRYO_TIME_SLACK: a multiplier for upper bounds on slow machines (qemu TCG)
	[ $ms -ge 500 ] && [ $ms -lt $((3000 * ${CRYO_TIME_SLACK:-1})) ] || fail "$h: gave up after $ms ms, expected ~500"
	fz_expect_state "$cg" RUNNING
	log "$h: $(echo "$LAST_OUTPUT" | head -1)"

	# --keep-freezing: stays FREEZING; thaw cancels it
	expect_fail 3 cryo freeze --cgroup "$cg" --timeout 300 --keep-freezing
	expect_output "left FREEZING" "$h: keep-freezing message"
	fz_expect_state "$cg" FREEZING
	check cryo thaw --cgroup "$cg"
	fz_expect_state "$cg" RUNNING

	# a freeze that waits completes once the blocker leaves the cgroup
	expect_fail 3 cryo freeze --cgroup "$cg" --timeout 200 --keep-freezing
	fz_expect_state "$cg" FREEZING
	dpid=$(fz_dpid "$cg" dd) || fail "$h: no D task"
	cryo freeze --cgroup "$cg" --timeout 15000 > "$T/retry.out" 2>&1 &
	retry=$!
	sleep 0.5
	kill -0 $retry 2>/dev/null || fail "$h: the freeze did not wait for the blocker: $(cat "$T/retry.out")"
	echo "$dpid" > "$(fz_root $h)/cgroup.procs" || fail "$h: move $dpid out"
	wait $retry || fail "$h: freeze did not complete after the blocker left: $(cat "$T/retry.out")"
	fz_expect_state "$cg" FROZEN
	check cryo thaw --cgroup "$cg"
	log "$h: moving pid $dpid out unblocked the freeze"

	# after FITHAW the retry succeeds
	fsfreeze -u "$T/outer" || fail "fsfreeze -u"
	check cryo freeze --cgroup "$cg" --timeout 5000
	fz_expect_state "$cg" FROZEN
	check cryo thaw --cgroup "$cg"
	cg_remove "$cg"
done
echo ok
