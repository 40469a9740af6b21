#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# cryo freeze/thaw --cgroup on real cgroups of both hierarchies: 1, 100
# and 1000 tasks; state transitions seen by cryo and by the kernel; a
# counter stops while frozen and resumes after; bad input gets clear
# errors and the documented exit codes.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/freezer.sh"
fz_need_hierarchies

for h in v1 v2; do
	# CRYO_FZ_SIZES: fewer sizes where spawning 1000 tasks takes minutes (qemu TCG)
	for n in ${CRYO_FZ_SIZES:-1 100 1000}; do
		fz_mkcg $h n$n; cg=$CG
		fz_spawn "$cg" $n
		fz_expect_state "$cg" RUNNING
		check cryo freeze --cgroup "$cg" --timeout 10000
		fz_expect_state "$cg" FROZEN
		check cryo thaw --cgroup "$cg"
		fz_expect_state "$cg" RUNNING
		cg_remove "$cg"
		log "$h: froze and thawed $n tasks"
	done

	# a workload's counter stops while frozen and resumes after
	fz_mkcg $h counter; cg=$CG
	fz_spawn "$cg" 1 sh -c "i=0; while :; do i=\$((i+1)); echo \$i > $T/counter.$h.tmp; mv $T/counter.$h.tmp $T/counter.$h; done"
	sleep 0.2
	check cryo freeze --cgroup "$cg"
	c1=$(cat "$T/counter.$h"); sleep 0.5; c2=$(cat "$T/counter.$h")
	[ "$c1" = "$c2" ] || fail "$h: counter moved while frozen: $c1 -> $c2"
	check cryo thaw --cgroup "$cg"
	sleep 0.3; c3=$(cat "$T/counter.$h")
	[ "$c3" -gt "$c2" ] || fail "$h: counter did not resume after thaw: $c2 -> $c3"
	log "$h: counter stopped at $c2 while frozen, resumed to $c3"

	# already frozen / already thawed: errors, exit 1, state unchanged
	check cryo freeze --cgroup "$cg"
	expect_fail 1 cryo freeze --cgroup "$cg"
	expect_output "already FROZEN" "$h: already frozen message"
	fz_expect_state "$cg" FROZEN
	check cryo thaw --cgroup "$cg"
	expect_fail 1 cryo thaw --cgroup "$cg"
	expect_output "not frozen (RUNNING)" "$h: already thawed message"
	fz_expect_state "$cg" RUNNING

	# pause/resume are the OCI names and want a container, not a cgroup
	expect_fail 2 cryo pause --cgroup "$cg"

	# the hierarchy's root can't be frozen
	expect_fail 1 cryo freeze --cgroup "$(fz_root $h)"
	expect_output "can't be frozen" "$h: root cgroup message"
done

# missing cgroup, not a cgroup, usage errors
expect_fail 1 cryo freeze --cgroup /sys/fs/cgroup/unified/cryo-test-freezer-$$-missing
expect_output "cryo-test-freezer-$$-missing.*No such file" "missing cgroup message"
expect_fail 1 cryo thaw --cgroup "$T"
expect_output "not in a cgroup filesystem" "non-cgroup message"
expect_fail 2 cryo freeze
expect_fail 2 cryo freeze --cgroup /x some-id
expect_fail 2 cryo freeze --timeout abc --cgroup /x
expect_fail 2 cryo freeze --deadline 10 --hold 10 --cgroup /x
expect_fail 1 cryo --root "$T/root" freeze no-such-container
expect_output "container \`no-such-container\` does not exist" "missing container message"
expect_fail 1 cryo --root "$T/root" freeze ../evil
echo ok
