#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A container whose rootfs is a plain directory (not a filesystem of its
# own) is checkpointed with a tar snapshot and restored: the tar is
# extracted by libarchive into a new directory that takes the rootfs's
# place, so a file written after the checkpoint is gone, the files of the
# snapshot are back with their modes and owners, and the counter goes on.
# A fault after stage-rootfs puts the previous directory back. Needs a
# CRIU that works here (CRYO_CRIU, see `cryo check`).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu

id=rs-tar-$$
A=$T/mk/$id         # mkbundle's ext4 bundle, only to get a rootfs to copy
C=$T/$id            # the bundle under test: rootfs is a directory of $T
bundle_counting "$A"
mkdir -p "$C"
cp -a "$A/rootfs" "$C/rootfs"
cp "$A/config.json" "$C/config.json"
echo owned >"$C/rootfs/owned"; chown 1234:2345 "$C/rootfs/owned"; chmod 0640 "$C/rootfs/owned"
rt run -d --bundle "$C" "$id" </dev/null >/dev/null 2>&1 || fail "run failed"

count() { cat "$C/rootfs/count" 2>/dev/null || echo 0; }
wait_above() {
	for _ in $(seq 100); do [ "$(count)" -gt "$1" ] && return 0; sleep 0.1; done
	fail "the counter did not pass $1 (at $(count))"
}
wait_above 5
timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "checkpoint: $(cat "$T/out")"
rt inspect --json "$T/img" | grep -q '"kind": *"TAR"' || fail "not a tar snapshot: $(rt inspect "$T/img")"
before=$(count)
echo later >"$C/rootfs/after-checkpoint"
old_ino=$(stat -c %i "$C/rootfs")

# a failure after the rootfs is staged puts the old directory back
CRYO_FAULT=restore:criu-restore expect_fail 1 rt restore -d --bundle "$C" --image-path "$T/img" "$id"
expect_output "criu-restore: injected fault" "fault"
[ "$(stat -c %i "$C/rootfs")" = "$old_ino" ] && [ -e "$C/rootfs/after-checkpoint" ] || fail "fault: the old rootfs is not back"
ls -a "$C" | grep -q cryo-restore && fail "fault: left $(ls -a "$C")"

timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$C" --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "restore: $(cat "$T/out")"
[ ! -e "$C/rootfs/after-checkpoint" ] || fail "the rootfs is not the snapshot's (a later file is there)"
[ "$(stat -c '%u:%g %a' "$C/rootfs/owned")" = "1234:2345 640" ] || fail "owner/mode not restored: $(stat -c '%u:%g %a' "$C/rootfs/owned")"
ls -a "$C" | grep -q cryo-restore && fail "the previous rootfs was left: $(ls -a "$C")"
wait_above $((before + 10))
log "tar snapshot restored: count $before -> $(count)"
echo "PASS restore_tar"
