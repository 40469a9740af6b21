# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash disable=SC2034
# Sourced by tests/vm/*.vmtest, BEFORE tests/lib/common.sh:
#
#   source "$(dirname "$0")/lib.sh"
#   source "$(dirname "$0")/../lib/common.sh"
#
# On the host it re-runs the test inside the VM harness (tests/vm/run), so
# `bash tests/vm/x.vmtest` works from anywhere and a vmtest never suspends,
# insmods or criu-dumps on the host by mistake. In the guest it provides:
#
#   in_vm                        true inside the harness guest
#   kmsg_mark NAME               write a marker line into the kernel log
#   kmsg_since NAME              the kernel log lines after that marker
#   kmsg_check NAME [ALLOWED]    fail if the kernel logged a WARNING, BUG,
#                                Oops, call trace, lockdep or sanitizer report
#                                since NAME; lines matching the extended
#                                regex ALLOWED are shown but tolerated
#   counter_start FILE [CGDIR...] start a task that writes an increasing
#                                number into FILE 10 times a second (in the
#                                cgroups CGDIR..., via cgroup.procs); its pid
#                                is left in COUNTER_PID (a child of the test
#                                shell: `wait` works; don't call it in $(...))
#   counter FILE                 the number in FILE
#   cg_remove DIR                thaw the cgroup (v1 or v2), SIGKILL every task
#                                in it until it is empty, rmdir it (at_exit)
#   pm_test_suspend NAME         one suspend-to-idle cycle stopped at the
#                                "freezer" pm_test level (every task frozen by
#                                the PM freezer, 1 s pause, thawed): the real
#                                freeze/thaw path of a suspend; kmsg mark NAME
#   vm_containers_setup          what `cryo run` needs in the fresh guest: the
#                                loop driver, the cgroup2 controllers enabled
#                                in the root (libcgroup enables them in the
#                                container's parent), lo up
#
# CRYO_VM_MEM (MiB) and CRYO_VM_TIMEOUT (s) size the VM a test re-runs in.

in_vm() { [ -e /run/cryo-vm/config ] && [ "$(hostname)" = cryo-vm ]; }

if ! in_vm; then
	exec "$(dirname "${BASH_SOURCE[0]}")/run" --timeout "${CRYO_VM_TIMEOUT:-900}" ${CRYO_VM_MEM:+--mem "$CRYO_VM_MEM"} \
		bash "$0" "$@"
fi

kmsg_mark() { echo "cryo-test: mark $1" >/dev/kmsg; }

kmsg_since() {
	dmesg | awk -v m="cryo-test: mark $1" 'found { print } index($0, m) { found = 1 }'
}

# Headlines of kernel complaints; a "Call Trace" belongs to one of them.
KMSG_BAD='WARNING:|BUG:|Oops|general protection|UBSAN:|KASAN:|possible circular locking|INFO: task .* blocked|refcount_t:|list_(add|del) corruption|Kernel panic'

kmsg_check() {
	local name=$1 allowed=${2:-} lines heads bad
	lines=$(kmsg_since "$name")
	heads=$(printf '%s\n' "$lines" | grep -E "$KMSG_BAD")
	bad=$heads
	[ -z "$allowed" ] || bad=$(printf '%s\n' "$heads" | grep -vE "$allowed")
	if [ -z "$heads" ] && printf '%s\n' "$lines" | grep -q 'Call Trace'; then
		bad="a call trace"
	fi
	[ -z "$bad" ] || fail "the kernel complained since '$name':
$lines"
	if [ -n "$heads" ]; then
		echo "# tolerated kernel complaint since '$name' (matches '$allowed'):"
		printf '%s\n' "$lines" | sed 's/^/#   /'
	fi
}

counter_start() {
	local file=$1 cg
	shift
	echo 0 >"$file"
	(
		for cg in "$@"; do
			echo "$BASHPID" >"$cg/cgroup.procs" || exit 1
		done
		i=0
		while :; do
			i=$((i + 1))
			echo $i >"$file"
			sleep 0.1
		done
	) >/dev/null 2>&1 &
	COUNTER_PID=$!
}

counter() { cat "$1"; }

pm_test_suspend() {
	local t0 t1
	[ -w /sys/power/pm_test ] || fail "no /sys/power/pm_test (CONFIG_PM_DEBUG)"
	grep -qw freeze /sys/power/state || fail "suspend-to-idle is not offered: $(cat /sys/power/state)"
	echo 1 >/sys/module/suspend/parameters/pm_test_delay 2>/dev/null || true
	echo freezer >/sys/power/pm_test
	kmsg_mark "$1"
	t0=$(date +%s.%N)
	echo freeze >/sys/power/state || fail "echo freeze > /sys/power/state failed"
	t1=$(date +%s.%N)
	echo none >/sys/power/pm_test
	kmsg_since "$1" | grep -q 'PM: suspend entry' || fail "the kernel did not enter the suspend path"
	kmsg_since "$1" | grep -q 'PM: suspend exit' || fail "the kernel did not leave the suspend path"
	log "suspend cycle took $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s"
}

cg_remove() {
	local dir=$1 pid
	[ -d "$dir" ] || return 0
	[ -e "$dir/cgroup.freeze" ] && echo 0 >"$dir/cgroup.freeze"
	[ -e "$dir/freezer.state" ] && echo THAWED >"$dir/freezer.state"
	for _ in $(seq 50); do
		# (cgroup files have no size: read them)
		[ -n "$(cat "$dir/cgroup.procs")" ] || break
		if [ -e "$dir/cgroup.kill" ]; then
			echo 1 >"$dir/cgroup.kill"
		else
			while read -r pid; do kill -9 "$pid"; done <"$dir/cgroup.procs"
		fi
		sleep 0.1
	done
	for _ in $(seq 20); do
		rmdir "$dir" 2>/dev/null && return 0
		sleep 0.1
	done
	rmdir "$dir"
}

vm_containers_setup() {
	local c
	modprobe loop 2>/dev/null || true
	for c in $(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null); do
		echo "+$c" >/sys/fs/cgroup/unified/cgroup.subtree_control 2>/dev/null || true
	done
	ip link set lo up 2>/dev/null || true
}
