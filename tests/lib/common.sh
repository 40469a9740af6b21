# SPDX-License-Identifier: GPL-2.0-only
# Sourced by every tests/host/*.sh and tests/vm/*.vmtest.
#
#   skip "reason"          exit 77, reason printed
#   fail "reason"          exit 1
#   check CMD...           run CMD, fail with its output if it fails
#   expect_fail RC CMD...  CMD must exit with RC (any non-zero if RC is "!");
#                          its output is left in LAST_OUTPUT
#   expect_output [-E] PATTERN WHAT
#                          LAST_OUTPUT must match PATTERN (grep; -E: extended),
#                          else fail with "WHAT: <the output>"
#   at_exit "cmd"          run cmd on exit (LIFO), before the host check
#   now_ms                 CLOCK_REALTIME in ms
#   task_state PID         PID's state letter from /proc/PID/stat (R, S, D,
#                          T, Z...), empty once it is gone
#   wait_paused PID        until PID stops (CRYO_PAUSE_AT: it SIGSTOPs
#                          itself at its step) or exits, 10 s at most; true
#                          when it stopped
#   sealed_image DIR ID    an image made without CRIU at DIR (made-up pages
#                          and core), sealed for ID as checkpoint seals one
#                          (tests/tools/cryo-test-criu): what restore and
#                          inspect check before CRIU
#   checkpoint_steps       the names of cryo's checkpoint steps, from its step
#                          table (`cryo features`, else the table in the source)
#   cg_remove DIR          thaw a test cgroup (v1 or v2, any state), SIGKILL
#                          every task in it and below, remove it and its
#                          children (for at_exit)
#
# Each test gets $T, a private temp dir, and its own host check: a test
# that leaves damage behind fails even if its assertions passed.
set -u

: "${CRYO_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${CRYO_BUILD:=$CRYO_SRC/build}"
: "${CRYO_BIN:=$CRYO_BUILD/cryo}"
export CRYO_SRC CRYO_BUILD CRYO_BIN

# In the guest of the VM harness (tests/vm/run, qemu TCG) every exec costs,
# and two cost far more than the rest (measured in the guest): a python3
# that is a pyenv shim runs ~250 execs of pyenv's bash scripts before the
# interpreter, 14-22 s a call; and cryo, read from the uncached 9p share
# of the build dir, takes 0.6-1 s to start, 0.2 s from the guest's tmpfs.
# So in the guest python3 is the next one on PATH (Debian's: the tests use
# only its standard library), and cryo runs from a copy in /run (made once
# per binary and boot).
_vm_fast_tools() {
	local d path="" copy
	local IFS=:
	for d in $PATH; do
		case $d in *pyenv*/shims) continue ;; esac
		path=${path:+$path:}$d
	done
	for d in $path; do
		[ -x "$d/python3" ] && { PATH=$path; break; }
	done
	case $CRYO_BIN in /run/cryo-test-bin/*) return 0 ;; esac
	[ -x "$CRYO_BIN" ] || return 0
	# (named cryo still: tests look for it by its comm)
	copy=/run/cryo-test-bin/$(echo "$CRYO_BIN" | tr / _)/cryo
	if [ ! -x "$copy" ]; then
		mkdir -p "${copy%/cryo}" && cp "$CRYO_BIN" "$copy.new" && mv -f "$copy.new" "$copy" || return 0
	fi
	CRYO_BIN=$copy
}
if [ -e /run/cryo-vm/config ]; then
	_vm_fast_tools
fi
# cg_remove
. "$CRYO_SRC/tests/lib/cgremove.sh"

TEST_NAME=$(basename "$0")
T=$(mktemp -d "/tmp/cryo-test.XXXXXX")
_at_exit=()

at_exit() { _at_exit=("$1" "${_at_exit[@]}"); }

_cleanup() {
	local rc=$? c
	for c in "${_at_exit[@]}"; do
		eval "$c" >/dev/null 2>&1 || true
	done
	if [ -n "${_HOSTCHECK_SAVED:-}" ] && ! "$CRYO_SRC/tests/lib/hostcheck.sh" verify "$_HOSTCHECK_SAVED" >/dev/null 2>"$T/hostcheck.err"; then
		echo "FAIL $TEST_NAME: left damage on the host:" >&2
		cat "$T/hostcheck.err" >&2
		[ $rc = 0 ] || [ $rc = 77 ] && rc=1
	fi
	rm -rf "$T"
	exit $rc
}
trap _cleanup EXIT

skip() { echo "SKIP $TEST_NAME: $*"; exit 77; }
fail() { echo "FAIL $TEST_NAME: $*" >&2; exit 1; }
log() { echo "# $*"; }

check() {
	local out
	if ! out=$("$@" 2>&1); then
		fail "\`$*\` failed: $out"
	fi
	[ -z "$out" ] || printf '%s\n' "$out"
}

expect_fail() {
	local want=$1 rc out
	shift
	out=$("$@" 2>&1) && rc=0 || rc=$?
	if [ "$want" = "!" ]; then
		[ $rc != 0 ] || fail "\`$*\` succeeded, expected a failure"
	else
		[ $rc = "$want" ] || fail "\`$*\` exited $rc, expected $want: $out"
	fi
	LAST_OUTPUT=$out
}

expect_output() {
	local opt=-q
	if [ "$1" = -E ]; then
		opt=-qE
		shift
	fi
	printf '%s\n' "$LAST_OUTPUT" | grep $opt -- "$1" || fail "$2: $LAST_OUTPUT"
}

need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
need_cmd() { command -v "$1" >/dev/null 2>&1 || skip "needs \`$1\`"; }

cryo() { "$CRYO_BIN" "$@"; }

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

task_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
# wake each of PIDS... with a ptrace attach and detach (strace): a task asleep
# past its timer (a lost wakeup, docs/reliability.md) goes on; waits for them
ptrace_kick() {
	local p kicks=()
	for p in "$@"; do timeout 2 strace -qq -p "$p" -e trace=none 2>/dev/null & kicks+=($!); done
	sleep 1.5
	[ ${#kicks[@]} = 0 ] || wait "${kicks[@]}"
}
# the kernel tracks dirty pages (soft-dirty), as CRIU's pre-dump needs: `cryo check` says
has_soft_dirty() { "$CRYO_BIN" check 2>/dev/null | grep -q '^memory tracking: soft-dirty yes'; }

wait_paused() {
	for _ in $(seq 400); do
		[ "$(task_state "$1")" = T ] && return 0
		kill -0 "$1" 2>/dev/null || break
		sleep 0.025
	done
	[ "$(task_state "$1")" = T ]
}

sealed_image() {
	rm -rf "$1"
	mkdir -m 0700 "$1"
	head -c 100000 /dev/urandom >"$1/pages-1.img"
	echo core >"$1/core-1.img"
	chmod 600 "$1"/*
	check "$CRYO_BUILD/tests/tools/cryo-test-criu" seal "$1" "$2"
}

checkpoint_steps() {
	local steps
	steps=$("$CRYO_BIN" features 2>/dev/null | python3 -c '
import json, sys
def find(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "checkpoint" and isinstance(v, list) and all(isinstance(x, str) for x in v):
                return v
            if k == "checkpoint" and isinstance(v, dict) and isinstance(v.get("steps"), list):
                return v["steps"]
            r = find(v)
            if r:
                return r
    return None
s = find(json.load(sys.stdin))
print(" ".join(s) if s else "")' 2>/dev/null)
	if [ -z "$steps" ]; then
		steps=$(python3 -c '
import re, sys
src = open(sys.argv[1]).read()
m = re.search(r"cryo_checkpoint_steps\[\]\s*=\s*\{(.*?)\};", src, re.S)
print(" ".join(re.findall(r"\"([^\"]+)\"", m.group(1))) if m else "")' "$CRYO_SRC/runtime/cr/checkpoint.c")
	fi
	echo "$steps"
}

if [ "${CRYO_NO_HOSTCHECK:-0}" != 1 ] && [ -d /sys/fs/cgroup ]; then
	_HOSTCHECK_SAVED="$T/hostcheck.before"
	"$CRYO_SRC/tests/lib/hostcheck.sh" save "$_HOSTCHECK_SAVED"
fi
