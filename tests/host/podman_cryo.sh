#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Podman (Debian's 4.3) driving cryo as its OCI runtime, the way a user
# would: run -d a counter, exec (output, exit code, -t), pause/unpause,
# checkpoint/restore in place, checkpoint --leave-running, checkpoint
# --export / restore --import into a new container (the original
# removed first), a `run -dt` container (a terminal) checkpointed and
# restored in place, stop, rm. The counter must keep counting across every
# step (never restart from 1, never go back).
#
# Everything podman makes lives under a private --root/--runroot/--tmpdir
# in $T, cgroups under a parent of this test's own; all of it is removed
# at exit. No registry is needed: the image is a busybox rootfs imported
# with `podman import`.
#
# PODMAN_TEST_RUNTIME=runc (or crun, or a path) runs the same scenario
# with another runtime, for comparison. Each step prints PASS/FAIL/SKIP;
# the test fails if any step fails.
#
# The checkpoint steps need CRIU that works on this host: CRYO_CRIU (or
# /opt/cryo-criu4/sbin/criu, see tests/setup-criu4.sh) passing `cryo
# check`; otherwise they are SKIPped with the reason. conmon may not pass
# our environment on to the runtime, so the runtime is a small wrapper
# that sets it (CRYO_CRIU for cryo; a `criu` on PATH for runc/crun).
. "$(dirname "$0")/../lib/common.sh"
need_root
need_cmd podman
need_cmd conmon
need_cmd busybox

runtime=${PODMAN_TEST_RUNTIME:-$CRYO_BIN}
case "$runtime" in /*) ;; *) runtime=$(command -v "$runtime") || skip "runtime \`$PODMAN_TEST_RUNTIME\` not found" ;; esac
rtname=$(basename "$runtime")

criu=${CRYO_CRIU:-/opt/cryo-criu4/sbin/criu}
criu_ok=0 criu_why=""
if [ ! -x "$criu" ]; then
	criu_why="no working CRIU ($criu missing; tests/setup-criu4.sh builds it)"
elif ! CRYO_CRIU=$criu "$CRYO_BIN" check >"$T/check.out" 2>&1; then
	criu_why="\`cryo check\` fails with $criu: $(tail -1 "$T/check.out")"
else
	criu_ok=1
fi

# the runtime podman runs: a wrapper that brings CRIU along
mkdir -p "$T/bin"
cat >"$T/bin/criu" <<EOF
#!/bin/sh
CRIU_FAULT=\${CRIU_FAULT:-130} exec "$criu" "\$@"
EOF
cat >"$T/bin/rt" <<EOF
#!/bin/sh
export CRYO_CRIU="$criu" PATH="$T/bin:\$PATH"
exec "$runtime" "\$@"
EOF
chmod +x "$T/bin/criu" "$T/bin/rt"
[ $criu_ok = 1 ] && export PATH="$T/bin:$PATH"

CGP=cryo-podman-test-$$
P=(podman --root "$T/storage" --runroot "$T/run" --tmpdir "$T/tmp" --storage-driver vfs
	--cgroup-manager cgroupfs --events-backend file --runtime "$T/bin/rt")
pm() { timeout 120 "${P[@]}" "$@"; }

_podman_cleanup() {
	local d
	timeout 60 "${P[@]}" rm -a -f -t 0 >/dev/null 2>&1
	timeout 60 "${P[@]}" system reset -f >/dev/null 2>&1
	# whatever podman left mounted under our dirs
	grep -o " $T/[^ ]*" /proc/self/mountinfo | sort -r | while read -r d; do umount -l "$d"; done
	for d in /sys/fs/cgroup/*/"$CGP"; do
		[ -d "$d" ] && cg_remove "$d"
	done
}
at_exit _podman_cleanup

# the image: busybox-static as a rootfs, imported
mkdir -p "$T/rootfs/bin" "$T/rootfs/tmp" "$T/rootfs/proc" "$T/rootfs/sys" "$T/rootfs/dev" "$T/rootfs/etc"
cp "$(command -v busybox)" "$T/rootfs/bin/busybox"
for app in $("$T/rootfs/bin/busybox" --list-full); do
	mkdir -p "$T/rootfs/$(dirname "$app")"
	[ -e "$T/rootfs/$app" ] || ln -s /bin/busybox "$T/rootfs/$app"
done
tar -C "$T/rootfs" -cf "$T/rootfs.tar" .
pm import "$T/rootfs.tar" localhost/cryo-test-busybox:latest >/dev/null 2>"$T/err" || fail "podman import: $(cat "$T/err")"

failed=0 passed=0
pass() { echo "PASS [$rtname] $1"; passed=$((passed + 1)); }
bad() { echo "FAIL [$rtname] $1: $2"; failed=$((failed + 1)); }
skipstep() { echo "SKIP [$rtname] $1: $2"; }

count() { pm exec "$1" cat /tmp/count 2>"$T/cerr"; }
# counting: the value grows within a second
counting() {
	local a b
	a=$(count "$1") || return 1
	sleep 0.5
	b=$(count "$1") || return 1
	[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ]
}

# This host's bounding set may lack CAP_SYS_RESOURCE, so Podman's default
# rlimits (raised to 1048576) can't be set by any runtime: ask for less.
ctr=cryo-pm-$$
pm run -d --name "$ctr" --network none --cgroup-parent "/$CGP" \
	--ulimit nofile=1024:1024 --ulimit nproc=4096:4096 localhost/cryo-test-busybox:latest \
	sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.05; done' >/dev/null 2>"$T/err" \
	|| fail "podman run -d [$rtname]: $(cat "$T/err")"
sleep 0.5
if counting "$ctr"; then pass "run -d"; else bad "run -d" "the counter does not count: $(pm ps -a 2>&1)"; fi

# exec: output, exit code, a terminal
out=$(pm exec "$ctr" sh -c 'echo out-$((6*7))' 2>&1)
[ "$out" = "out-42" ] && pass "exec (output)" || bad "exec (output)" "$out"
pm exec "$ctr" sh -c 'exit 9' >/dev/null 2>&1 && rc=0 || rc=$?
[ $rc = 9 ] && pass "exec (exit code)" || bad "exec (exit code)" "returned $rc, expected 9"
pm exec "$ctr" no-such-binary >/dev/null 2>&1 && rc=0 || rc=$?
[ $rc = 127 ] && pass "exec (missing binary: 127)" || bad "exec (missing binary: 127)" "returned $rc"
out=$(pm exec -t "$ctr" tty 2>&1 | tr -d '\r')
case "$out" in /dev/pts/*) pass "exec -t" ;; *) bad "exec -t" "$out" ;; esac
out=$(pm exec -u 1000:1000 -e X=y -w /tmp "$ctr" sh -c 'echo $(id -u) $X $(pwd)' 2>&1)
[ "$out" = "1000 y /tmp" ] && pass "exec -u -e -w" || bad "exec -u -e -w" "$out"

# pause / unpause
if pm pause "$ctr" >/dev/null 2>"$T/err"; then
	# podman refuses exec into a paused container: read the counter from the host
	mnt=$(pm mount "$ctr" 2>/dev/null)
	a=$(cat "$mnt/tmp/count" 2>/dev/null)
	sleep 0.5
	b=$(cat "$mnt/tmp/count" 2>/dev/null)
	if [ -n "$a" ] && [ "$a" = "$b" ] && pm unpause "$ctr" >/dev/null 2>"$T/err" && counting "$ctr"; then
		pass "pause/unpause"
	else
		bad "pause/unpause" "counter $a -> $b while paused; $(cat "$T/err" "$T/cerr")"
		pm unpause "$ctr" >/dev/null 2>&1
	fi
else
	bad "pause/unpause" "$(cat "$T/err")"
fi

# checkpoint / restore in place
cr_step() {
	local name=$1
	shift
	if [ $criu_ok != 1 ]; then
		skipstep "$name" "$criu_why"
		return 1
	fi
	"$@"
}
# STEP BEFORE [DETAIL]: pass STEP if $ctr's counter went on from BEFORE and
# counts still; else fail it, with what the function DETAIL prints
counted_on() {
	local step=$1 before=$2 after
	after=$(count "$ctr")
	if [ -n "$after" ] && [ "$after" -ge "$before" ] && counting "$ctr"; then
		pass "$step (counter $before -> $after)"
	else
		bad "$step" "counter $before -> $after${3:+, $($3)}: $(cat "$T/cerr")"
	fi
}
pm_state() { echo "state $(pm ps -a --format '{{.Status}}' 2>&1)"; }
ckpt_in_place() {
	local before after
	before=$(count "$ctr")
	if ! pm container checkpoint "$ctr" >/dev/null 2>"$T/err"; then
		bad "checkpoint/restore" "checkpoint: $(tail -3 "$T/err")"
		return
	fi
	if ! pm container restore "$ctr" >/dev/null 2>"$T/err"; then
		bad "checkpoint/restore" "restore: $(tail -3 "$T/err")"
		return
	fi
	counted_on "checkpoint/restore" "$before"
}
cr_step "checkpoint/restore" ckpt_in_place

ckpt_leave_running() {
	local before after
	before=$(count "$ctr")
	if ! pm container checkpoint --leave-running "$ctr" >/dev/null 2>"$T/err"; then
		bad "checkpoint --leave-running" "$(tail -3 "$T/err")"
		return
	fi
	counted_on "checkpoint --leave-running" "$before" pm_state
}
cr_step "checkpoint --leave-running" ckpt_leave_running

# export, remove the original (and its rootfs), import into a new container
ckpt_export_import() {
	local before after out
	before=$(count "$ctr")
	if ! pm container checkpoint --export "$T/ck.tar.gz" "$ctr" >/dev/null 2>"$T/err"; then
		bad "checkpoint --export" "$(tail -3 "$T/err")"
		return
	fi
	pass "checkpoint --export"
	pm rm -f -t 0 "$ctr" >/dev/null 2>&1
	ctr=$ctr-imported
	if ! pm container restore --import "$T/ck.tar.gz" --name "$ctr" >/dev/null 2>"$T/err"; then
		bad "restore --import" "$(grep -v "^time=" "$T/err" | tail -4)"
		return
	fi
	after=$(count "$ctr")
	out=$(pm exec "$ctr" sh -c 'echo imported > /tmp/mark && cat /tmp/mark' 2>&1)
	if [ -n "$after" ] && [ "$after" -ge "$before" ] && counting "$ctr" && [ "$out" = imported ]; then
		pass "restore --import (counter $before -> $after)"
	else
		bad "restore --import" "counter $before -> $after, exec: $out"
	fi
}
cr_step "checkpoint --export/restore --import" ckpt_export_import

# a container with a terminal (run -dt: conmon holds the pty master):
# checkpoint and restore in place, the counter goes on, on the terminal too
ckpt_tty() {
	local t=$ctr-tty before after logs
	if ! pm run -dt --name "$t" --network none --cgroup-parent "/$CGP" \
		--ulimit nofile=1024:1024 --ulimit nproc=4096:4096 localhost/cryo-test-busybox:latest \
		sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; echo tty-$i; sleep 0.1; done' \
		>/dev/null 2>"$T/err"; then
		bad "run -dt + checkpoint/restore" "run -dt: $(tail -3 "$T/err")"
		return
	fi
	sleep 0.5
	before=$(count "$t")
	if ! pm container checkpoint "$t" >/dev/null 2>"$T/err"; then
		bad "run -dt + checkpoint/restore" "checkpoint: $(tail -3 "$T/err")"
	elif ! pm container restore "$t" >/dev/null 2>"$T/err"; then
		bad "run -dt + checkpoint/restore" "restore: $(tail -3 "$T/err")"
	else
		after=$(count "$t")
		sleep 0.5
		logs=$(pm logs "$t" 2>&1 | tr -d '\r' | grep -c "^tty-$((after + 2))$")
		if [ -n "$after" ] && [ "$after" -ge "$before" ] && counting "$t" && [ "$(pm exec "$t" readlink /proc/1/fd/1)" = /dev/pts/0 ] \
			&& [ "$logs" -ge 1 ]; then
			pass "run -dt + checkpoint/restore (counter $before -> $after, on the terminal too)"
		else
			bad "run -dt + checkpoint/restore" "counter $before -> $after, tty-$((after + 2)) in the logs $logs times: $(cat "$T/cerr")"
		fi
	fi
	pm rm -f -t 0 "$t" >/dev/null 2>&1
}
cr_step "run -dt + checkpoint/restore" ckpt_tty

# stop, rm
if [ "$(pm inspect --format '{{.State.Status}}' "$ctr" 2>&1)" != running ]; then
	skipstep "stop" "the container is not running (a step above failed)"
elif pm stop -t 1 "$ctr" >/dev/null 2>"$T/err" && [ "$(pm inspect --format '{{.State.Status}}' "$ctr" 2>&1)" = exited ]; then
	pass "stop"
else
	bad "stop" "$(cat "$T/err") $(pm inspect --format '{{.State.Status}}' "$ctr" 2>&1)"
fi
if pm rm -f "$ctr" >/dev/null 2>"$T/err" && [ -z "$(pm ps -a -q 2>/dev/null)" ]; then
	pass "rm"
else
	bad "rm" "$(cat "$T/err")"
fi

echo "# [$rtname] $passed passed, $failed failed"
[ $failed = 0 ] || fail "$failed podman step(s) failed with $rtname"
echo ok
