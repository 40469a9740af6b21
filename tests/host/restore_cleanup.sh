#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Every way a restore fails leaves nothing behind: no container, no state
# dir, no <root>/.restore/<id>, no hold journal entry, the bundle's mounts
# and loop devices as they were, and the next restore works at once,
# without `cryo recover`:
#  - a page image damaged (found while CRIU reads it, the late verdict),
#    with the default work dir;
#  - CRIU failing (its own fault injection, CRIU_FAULT=2: the restored
#    root task dies);
#  - cryo SIGKILLed while it restores, stopped before each step that
#    changes the host (CRYO_PAUSE_AT): the staged rootfs, the cgroup and
#    the work dir it left are undone by the next restore, which logs it;
#  - cryo and its CRIU SIGKILLed while CRIU's cgroup yard is mounted in
#    the work dir: the next restore unmounts it.
# And a restore into a bundle whose rootfs is not mounted loop-mounts the
# snapshot there; `delete` takes that mount and its loop device down.
# Run under ASan with detect_leaks=1 too (tests/check.sh): each failure
# path is LeakSanitizer-clean. Needs a CRIU that works here.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu
export CRIU_FAULT=${CRIU_FAULT:-130}

id=rcl-$$
A=$T/$id
bundle_counting "$A"
# stdio on /dev/null: CRIU cannot dump a file on a host mount (run here, not
# through rt_run_quiet: run from that function, the failed restore under
# CRIU_FAULT=2 below remounted the rootfs on another loop device every time;
# not understood yet)
rt run -d --bundle "$A" "$id" </dev/null >/dev/null 2>&1 || fail "run failed (again: $(rt run -d --bundle "$A" "$id-x" 2>&1 </dev/null))"
count() { bundle_count "$A"; }
wait_counting() {
	local c
	c=$(count)
	bundle_count_above "$A" "$c" 100 || fail "$1: the counter is stuck at $c"
}
wait_counting start
timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 ||
	fail "checkpoint: $(cat "$T/out")"
cp -a "$T/img" "$T/bad"
pages=$(cd "$T/bad" && ls -S pages-*.img | head -1)
size=$(stat -c %s "$T/bad/$pages")
printf '\xff' | dd of="$T/bad/$pages" bs=1 seek=$((size / 2)) conv=notrunc status=none

host_view() {
	local dev rest
	# a loop device by the image it holds: an undo that mounts the same
	# image again may get another loop device (the old one is let go lazily)
	awk -v a="$A" 'index($2, a) == 1' /proc/self/mounts | sort -k2 | while read -r dev rest; do
		case $dev in /dev/loop*) dev=$(losetup -n -O BACK-FILE "$dev") ;; esac
		echo "$dev $rest"
	done
	losetup -n -O BACK-FILE -j "$A/rootfs.img" | sort
}
host_view >"$T/view.before"
# nothing of the failed restore WHAT is left
nothing_left() {
	[ -z "$(rt list -q)" ] || fail "$1: a container is left: $(rt list)"
	[ ! -e "$RTROOT/$id" ] || fail "$1: its state dir is left: $(ls -a "$RTROOT/$id")"
	[ -z "$(ls -A "$RTROOT/.restore" 2>/dev/null)" ] || fail "$1: left in .restore: $(ls -A "$RTROOT/.restore")"
	[ -z "$(ls -A "$RTROOT/.holds" 2>/dev/null)" ] || fail "$1: left in the hold journal: $(ls -A "$RTROOT/.holds")"
	host_view | diff "$T/view.before" - >"$T/view.diff" || fail "$1: mounts or loop devices changed: $(cat "$T/view.diff")"
}
restore_runs() {
	timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img" --bundle "$A" "$id" </dev/null \
		>"$T/rs.out" 2>&1 || fail "$1: the restore after it: $(cat "$T/rs.out")"
	wait_counting "$1"
}

log "a damaged page image, default work dir"
expect_fail 1 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/bad" --bundle "$A" "$id"
expect_output "file \`$pages\` is corrupted" "damaged pages"
nothing_left "damaged pages"

log "CRIU fails (CRIU_FAULT=2)"
expect_fail 1 env CRIU_FAULT=2 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img" --bundle "$A" "$id"
expect_output "criu" "CRIU's failure"
nothing_left "CRIU failure"
restore_runs "CRIU failure"
rt delete --force "$id" >/dev/null 2>&1 || fail "delete"

for step in stage-rootfs cgroup criu-restore pause-or-run state; do
	CRYO_PAUSE_AT=restore:$step setsid "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img" \
		--bundle "$A" "$id" </dev/null >"$T/kill.out" 2>&1 &
	pid=$!
	wait_paused $pid || { wait $pid; fail "restore did not stop before $step: $(cat "$T/kill.out")"; }
	kill -9 -- -"$pid"
	wait "$pid" 2>/dev/null
	# at once, no recover: the next restore takes over what the dead one left
	timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img" --bundle "$A" "$id" </dev/null \
		>"$T/rs.out" 2>&1 || fail "killed before $step: the restore after it: $(cat "$T/rs.out")"
	grep -q "recovered stale hold $id@restore of dead pid $pid" "$T/rs.out" ||
		fail "killed before $step: the next restore did not say it recovered the dead one's hold: $(cat "$T/rs.out")"
	wait_counting "killed before $step"
	rt delete --force "$id" >/dev/null 2>&1 || fail "delete after $step"
	nothing_left "killed before $step"
	log "killed before $step: the next restore ran, nothing left after delete"
done

# CRIU killed while its cgroup yard (a tmpfs with every hierarchy, in its
# work dir, in our mount namespace) is mounted: the yard would stay, and
# its second mounts of the hierarchies made every later `run` fail
# ("mkdir /sys/fs/cgroup/pids: File exists", soak/faults' kill-restore).
yard_mounts() { awk -v p="$(realpath "$RTROOT")/.restore/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo; }
yard_seen=0
for try in 1 2 3; do
	setsid "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img" --bundle "$A" "$id" </dev/null >"$T/kill.out" 2>&1 &
	pid=$!
	for _ in $(seq 2000); do
		[ -n "$(yard_mounts)" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.002
	done
	[ -n "$(yard_mounts)" ] && yard_seen=1
	kill -9 -- -"$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ "$yard_seen" = 1 ] && break
	# it ended before its yard was seen: try again
	rt delete --force "$id" >/dev/null 2>&1
done
[ "$yard_seen" = 1 ] || fail "no CRIU cgroup yard seen under $RTROOT/.restore in 3 restores"
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img" --bundle "$A" "$id" </dev/null \
	>"$T/rs.out" 2>&1 || fail "CRIU killed with its yard mounted: the restore after it: $(cat "$T/rs.out")"
[ -z "$(yard_mounts)" ] || fail "CRIU killed with its yard mounted: left mounted: $(yard_mounts | tr '\n' ' ')"
wait_counting "killed with the yard mounted"
rt delete --force "$id" >/dev/null 2>&1 || fail "delete after the yard kill"
nothing_left "killed with the yard mounted"
log "CRIU killed with its cgroup yard mounted: the next restore unmounted it and ran"

log "a bundle whose rootfs is not mounted: restore mounts the snapshot, delete unmounts it"
B=$T/unmounted
mkdir -p "$B"
cp "$A/config.json" "$B/"
restore_loops() { losetup -n -O NAME,BACK-FILE | grep -cF "$B/" || true; }
restore_loops >"$T/loops.before"
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img" --bundle "$B" "$id" </dev/null >"$T/rs.out" 2>&1 ||
	fail "restore into an unmounted bundle: $(cat "$T/rs.out")"
mountpoint -q "$B/rootfs" || fail "the snapshot is not mounted at $B/rootfs"
rt delete --force "$id" >/dev/null 2>&1 || fail "delete of the restore into $B"
if mountpoint -q "$B/rootfs"; then
	umount "$B/rootfs"
	fail "delete left the rootfs restore mounted at $B/rootfs"
fi
[ "$(restore_loops)" = "$(cat "$T/loops.before")" ] || fail "a loop device on $B is left: $(losetup -l | grep -F "$B/")"
echo "PASS restore_cleanup"
