#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# PM-resume skipping in userspace (`cryo sleep-hook pre|post`): a frozen
# container that a suspend/resume cycle thawed is frozen again, a running
# one is left running, one deleted in between is skipped — on both the v2
# and the v1 freezer. The thaw a resume would cause is done by hand here
# (this host has no suspend; tests/vm/ runs the real pm_test cycle).
. "$(dirname "$0")/../lib/common.sh"
need_root
HOOK=$CRYO_BUILD/cryo-hook
R=$T/root
V2=/sys/fs/cgroup/unified
V1=/sys/fs/cgroup/freezer
[ -e $V2/cgroup.procs ] || skip "no cgroup2 at $V2"
[ -e $V1/tasks ] || skip "no v1 freezer at $V1"

mkdir -p "$T/bundle/rootfs"
echo '{"root": {"path": "rootfs"}}' > "$T/bundle/config.json"
pids=()
# start NAME BACKEND: a sleeping task in its own v1 freezer and v2 cgroup,
# registered as container NAME with that freezer backend
start() {
	local name=$1 backend=$2 cg=cryo-test-sleep-$$-$1 pid
	mkdir "$V2/$cg" "$V1/$cg"
	at_exit "rmdir $V2/$cg $V1/$cg"
	sleep 1000 </dev/null >/dev/null 2>&1 &
	pid=$!
	pids+=("$pid")
	at_exit "kill -9 $pid; echo 0 > $V2/$cg/cgroup.freeze; echo THAWED > $V1/$cg/freezer.state; sleep 0.2"
	echo "$pid" > "$V2/$cg/cgroup.procs"
	echo "$pid" > "$V1/$cg/cgroup.procs"
	echo "{\"id\":\"$name\",\"pid\":$pid,\"bundle\":\"$T/bundle\",\"annotations\":{\"org.cryo.freezer\":\"$backend\"}}" |
		"$HOOK" --root "$R" register || fail "register $name"
}

for backend in v2 v1; do
	log "backend $backend"
	rm -rf "$R"
	start "fz-$backend" $backend
	start "run-$backend" $backend
	start "gone-$backend" $backend
	check cryo --root "$R" freeze "fz-$backend" --timeout 5000 >/dev/null
	check cryo --root "$R" freeze "gone-$backend" --timeout 5000 >/dev/null
	out=$(cryo --root "$R" sleep-hook pre suspend) || fail "pre: $out"
	[ "$out" = "sleep-hook pre: 2 frozen container(s) recorded" ] || fail "pre printed: $out"
	[ "$(stat -c %a "$R/sleep.json")" = 600 ] || fail "sleep.json is not 0600"

	# what a resume that does not skip frozen cgroups would do
	cg=cryo-test-sleep-$$-fz-$backend
	if [ $backend = v2 ]; then echo 0 > "$V2/$cg/cgroup.freeze"; else echo THAWED > "$V1/$cg/freezer.state"; fi
	[ "$(cryo --root "$R" freezer-state "fz-$backend")" = RUNNING ] || fail "manual thaw did not take"
	# and a container deleted while the machine slept
	gcg=cryo-test-sleep-$$-gone-$backend
	if [ $backend = v2 ]; then echo 0 > "$V2/$gcg/cgroup.freeze"; else echo THAWED > "$V1/$gcg/freezer.state"; fi
	rm -rf "${R:?}/gone-$backend"

	out=$(cryo --root "$R" sleep-hook post suspend) || fail "post: $out"
	[ "$out" = "sleep-hook post: 2 recorded, 1 checked, 1 frozen again, 1 gone" ] || fail "post printed: $out"
	[ "$(cryo --root "$R" freezer-state "fz-$backend")" = FROZEN ] || fail "fz-$backend is not frozen again"
	[ "$(cryo --root "$R" freezer-state "run-$backend")" = RUNNING ] || fail "run-$backend was frozen by post"
	[ ! -e "$R/sleep.json" ] || fail "post left sleep.json"
	check cryo --root "$R" thaw "fz-$backend" >/dev/null

	# post without pre: nothing to do; a corrupt record is refused and removed
	out=$(cryo --root "$R" sleep-hook post) || fail "post without pre: $out"
	echo "$out" | grep -q '0 recorded' || fail "post without pre printed: $out"
	echo '{bad' > "$R/sleep.json"
	expect_fail 1 cryo --root "$R" sleep-hook post
	expect_output 'is not a JSON array' "corrupt record"
	[ ! -e "$R/sleep.json" ] || fail "corrupt sleep.json left behind"
done
expect_fail 2 cryo --root "$R" sleep-hook during
echo ok
