#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Restore takes its bundle from --bundle, not from the image (what Podman's
# `container restore --import` relies on): a container checkpointed from
# bundle A is restored from bundle B (another path, the same config.json,
# no rootfs yet). The rootfs it runs on is B's: the snapshot is written to
# B/rootfs.img and mounted at B/rootfs, the counter goes on there, and A's
# image file is left as it was. Then a paused checkpoint comes back running
# by default and paused with --keep-paused, the state agreeing with the
# cgroup. Needs a CRIU that works here (CRYO_CRIU, see `cryo check`).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu

id=rs-bdl-$$
A=$T/$id
B=$T/moved/$id
bundle_counting "$A"
at_exit "\"$CRYO_SRC/examples/mkbundle.sh\" --teardown \"$B\""
at_exit _rt_cleanup
# stdio on /dev/null: CRIU dumps no file of a host mount the container does not see
rt run -d --bundle "$A" "$id" </dev/null >/dev/null 2>&1 || fail "run failed"

count() { cat "$1/rootfs/count" 2>/dev/null || echo 0; }
wait_above() {  # bundle, n
	for _ in $(seq 100); do [ "$(count "$1")" -gt "$2" ] && return 0; sleep 0.1; done
	fail "the counter in $1 did not pass $2 (at $(count "$1"))"
}
wait_above "$A" 5

timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "checkpoint: $(cat "$T/out")"
before=$(count "$A")
a_ino=$(stat -c %i "$A/rootfs.img")  # (a mounted ext4 changes its image by itself: compare the file)

# bundle B: the same config.json somewhere else, no rootfs of its own yet
mkdir -p "$B"
cp "$A/config.json" "$B/config.json"
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "restore from bundle B: $(cat "$T/out")"
rt state "$id" | grep -q "\"bundle\":\"$B\"" || fail "the state does not name bundle B: $(rt state "$id")"
mountpoint -q "$B/rootfs" || fail "B/rootfs is not mounted"
[ "$(losetup -n -O BACK-FILE -j "$B/rootfs.img" | head -1)" = "$B/rootfs.img" ] \
	|| fail "B/rootfs is not mounted from B/rootfs.img: $(findmnt -n "$B/rootfs")"
wait_above "$B" $((before + 10))
[ "$(count "$A")" = "$before" ] || fail "the restored container writes to A's rootfs"
[ "$(stat -c %i "$A/rootfs.img")" = "$a_ino" ] || fail "A/rootfs.img was replaced"
[ "$(losetup -n -O BACK-FILE -j "$A/rootfs.img" | head -1)" = "$A/rootfs.img" ] && mountpoint -q "$A/rootfs" \
	|| fail "A/rootfs is no longer mounted from A/rootfs.img"
log "restored from B: count $before -> $(count "$B") in B's rootfs, A untouched"

# paused at checkpoint: running by default, paused with --keep-paused
check rt pause "$id"
timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img-p" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "checkpoint of a paused container: $(cat "$T/out")"
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$T/img-p" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "restore of a paused checkpoint: $(cat "$T/out")"
[ "$(rt freezer-state "$id")" = RUNNING ] || fail "default: restored $(rt freezer-state "$id")"
rt state "$id" | grep -q '"status":"running"' || fail "default: state $(rt state "$id")"
c=$(count "$B"); wait_above "$B" $((c + 5))
check rt kill "$id" KILL
for _ in $(seq 50); do rt state "$id" | grep -q stopped && break; sleep 0.1; done
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --keep-paused --bundle "$B" --image-path "$T/img-p" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "restore --keep-paused: $(cat "$T/out")"
[ "$(rt freezer-state "$id")" = FROZEN ] || fail "--keep-paused: restored $(rt freezer-state "$id")"
rt state "$id" | grep -q '"status":"paused"' || fail "--keep-paused: state $(rt state "$id")"
c=$(count "$B"); sleep 0.5
[ "$(count "$B")" = "$c" ] || fail "--keep-paused: the container runs"
check rt resume "$id"
wait_above "$B" $((c + 5))
log "paused checkpoint: running by default, paused with --keep-paused"

# a fault at any restore step leaves B as it was: no state, the previous
# rootfs file mounted again, no process in the cgroup, no temp file
check rt kill "$id" KILL
for _ in $(seq 50); do rt state "$id" | grep -q stopped && break; sleep 0.1; done
check rt delete "$id"
b_ino=$(stat -c %i "$B/rootfs.img")  # (its content changes with each mount: compare the file)
cg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["linux"]["cgroupsPath"])' "$B/config.json")
steps=$("$CRYO_BIN" features | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["org.cryo"]["steps"]["restore"]))')
[ -n "$steps" ] || fail "cryo features lists no restore steps"
for s in $steps; do
	CRYO_FAULT=restore:$s expect_fail 1 timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$T/img" "$id"
	expect_output "$s: injected fault" "fault at $s"
	[ ! -e "$RTROOT/$id" ] || fail "fault at $s: the container's state was left"
	mountpoint -q "$B/rootfs" || fail "fault at $s: B's previous rootfs is not mounted again"
	[ "$(stat -c %i "$B/rootfs.img")" = "$b_ino" ] || fail "fault at $s: B/rootfs.img is not the previous file"
	[ "$(losetup -n -O BACK-FILE -j "$B/rootfs.img" | head -1)" = "$B/rootfs.img" ] || fail "fault at $s: B/rootfs is not B/rootfs.img"
	for d in /sys/fs/cgroup/unified"$cg" /sys/fs/cgroup/freezer"$cg"; do
		[ -z "$(cat "$d/cgroup.procs" 2>/dev/null)" ] || fail "fault at $s: processes left in $d"
	done
	if ls -a "$B" | grep -q cryo-restore; then fail "fault at $s: left $(ls -a "$B")"; fi
	log "fault at restore:$s: undone"
done

# back into bundle A, whose rootfs is still mounted from A/rootfs.img by
# losetup (no autoclear): that mount is replaced and its loop device released
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$A" --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "restore into A: $(cat "$T/out")"
wait_above "$A" $((before + 10))
if losetup -n -O BACK-FILE -l | grep -q "$T.*deleted"; then fail "a loop device is left on a deleted file: $(losetup -l)"; fi
[ "$(losetup -n -O BACK-FILE -j "$A/rootfs.img" | wc -l)" = 1 ] || fail "A/rootfs.img is attached $(losetup -j "$A/rootfs.img")"
log "restored into A: count $(count "$A")"

# under another id and another cgroupsPath (podman restore --import, a
# migration): the tasks land in the new bundle's cgroup, not back in the
# one they were dumped from
timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img3" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "checkpoint before the restore under a new id: $(cat "$T/out")"
nid=$id-new
bundle_set "$B" "c['linux']['cgroupsPath'] = '$CGPARENT/$nid'"
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$T/img3" "$nid" </dev/null >"$T/out" 2>&1 \
	|| fail "restore under a new id: $(cat "$T/out")"
pid=$(rt state "$nid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
for h in freezer 0; do
	line=$(grep -E "^[0-9]+:$h:|^$h::" /proc/"$pid"/cgroup)
	case "$line" in *":/$CGPARENT/$nid") ;; *) fail "the restored init is in the wrong $h cgroup: $line" ;; esac
done
[ -d "/sys/fs/cgroup/freezer/$CGPARENT/$id" ] && [ -n "$(cat "/sys/fs/cgroup/freezer/$CGPARENT/$id/cgroup.procs" 2>/dev/null)" ] \
	&& fail "tasks were restored into the old cgroup $CGPARENT/$id"
wait_above "$B" "$(count "$B")"
log "restored as $nid: its tasks are in $CGPARENT/$nid"
timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img4" "$nid" </dev/null >"$T/out" 2>&1 \
	|| fail "checkpoint of $nid: $(cat "$T/out")"
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$A" --image-path "$T/img4" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "restore back as $id into A: $(cat "$T/out")"

# pre-dump: its own table; a fault in it gives the container back running
CRYO_FAULT=pre-dump:criu-pre-dump expect_fail 1 rt checkpoint --pre-dump --image-path "$T/pre" "$id"
expect_output "criu-pre-dump: injected fault" "fault at pre-dump:criu-pre-dump"
[ "$(rt freezer-state "$id")" = RUNNING ] && [ ! -e "$T/pre" ] || fail "fault in pre-dump: not undone"
if ! timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --pre-dump --image-path "$T/pre" "$id" </dev/null >"$T/out" 2>&1; then
	grep -q "soft-dirty page tracking" "$T/out" || fail "pre-dump: $(cat "$T/out")"
	[ "$(rt freezer-state "$id")" = RUNNING ] || fail "failed pre-dump: container $(rt freezer-state "$id")"
	log "no memory tracking (soft-dirty) on this kernel: pre-dump round trip not tested"
	echo "PASS restore_bundle"
	exit 0
fi
c=$(count "$A"); wait_above "$A" $((c + 5))
rt inspect --json "$T/pre" | python3 -c '
import json, sys
m = json.load(sys.stdin)
steps = [t["step"] for t in m["timings"]]
table = json.loads(sys.argv[1])["org.cryo"]["steps"]["pre-dump"]
want = table[:table.index("criu-pre-dump") + 1]
assert steps[:len(want)] == want and set(steps[len(want):]) <= {"hash", "sync"}, (steps, table)
assert "rootfs" not in m or not m["rootfs"], m.get("rootfs")
' "$("$CRYO_BIN" features)" || fail "the pre-dump's manifest"
timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --parent-path ../pre --image-path "$T/img2" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "dump after a pre-dump: $(cat "$T/out")"
before=$(count "$A")
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$A" --image-path "$T/img2" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "restore of the dump after a pre-dump: $(cat "$T/out")"
wait_above "$A" $((before + 10))
log "pre-dump, dump, restore: count $before -> $(count "$A")"

echo "PASS restore_bundle"
