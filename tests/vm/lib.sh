# SPDX-License-Identifier: GPL-2.0-only
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

in_vm() { [ -e /run/cryo-vm/config ] && [ "$(hostname)" = cryo-vm ]; }

if ! in_vm; then
	exec "$(dirname "${BASH_SOURCE[0]}")/run" --timeout "${CRYO_VM_TIMEOUT:-900}" bash "$0" "$@"
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
