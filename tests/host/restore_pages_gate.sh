#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Restore hashes the page images while CRIU reads them (every other file
# is verified first), and no restored task runs before their verdict:
# CRIU asks at its post-restore notification, when every task is restored
# and none has run an instruction of its own, and a "no" makes CRIU kill
# them all. A real checkpoint with one byte changed in a page image:
#  - the restore fails as a verify failure naming the file;
#  - CRIU's own log shows it got that far (the pages were read) and then
#    aborted at the post-restore step: the gate stopped it, not an earlier
#    error;
#  - nothing is left: no container, no process in its cgroup, no mount
#    under the bundle but those it had.
# The same image undamaged restores and runs on. So does one taken with
# `--digest sha256` (manifest format 1, what a cryo before BLAKE3 wrote and
# can verify), whose damage the gate finds the same way.
# Needs a CRIU that works here (CRYO_CRIU, see `cryo check`).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu

id=rs-gate-$$
A=$T/$id
bundle_counting "$A"
at_exit _rt_cleanup
rt run -d --bundle "$A" "$id" </dev/null >/dev/null 2>&1 || fail "run failed"
count() { cat "$A/rootfs/count" 2>/dev/null || echo 0; }
for _ in $(seq 100); do [ "$(count)" -gt 5 ] && break; sleep 0.1; done
[ "$(count)" -gt 5 ] || fail "the counter does not count"
timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 ||
	fail "checkpoint: $(cat "$T/out")"
cp -a "$T/img" "$T/good"
"$CRYO_BIN" inspect "$T/img" >"$T/inspect" 2>&1 || fail "inspect: $(cat "$T/inspect")"
grep -q '^format: *2 (file digests: blake3)' "$T/inspect" &&
	grep -q "^verified: *yes (manifest and every file's blake3)" "$T/inspect" ||
	fail "a default checkpoint is not a BLAKE3 image: $(cat "$T/inspect")"

# one byte of the largest page image of DIR changed, in the middle: sets pages, off, old, new
damage_pages() {
	local size
	pages=$(cd "$1" && ls -S pages-*.img | head -1)
	[ -n "$pages" ] || fail "no page image in the checkpoint: $(ls "$1")"
	size=$(stat -c %s "$1/$pages")
	[ "$size" -gt 4096 ] || fail "$pages is only $size bytes"
	off=$((size / 2))
	old=$(od -An -tx1 -j "$off" -N1 "$1/$pages" | tr -d ' ')
	new=$(printf '%02x' $(((16#$old + 1) % 256)))
	printf "\\x$new" | dd of="$1/$pages" bs=1 seek="$off" conv=notrunc status=none
}
# restore DIR: the counter goes on
restore_counts() {
	local c
	c=$(count)
	timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$1" --bundle "$A" "$id" </dev/null >"$T/out" 2>&1 ||
		fail "restore of the undamaged $2: $(cat "$T/out")"
	for _ in $(seq 100); do [ "$(count)" -gt $((c + 5)) ] && break; sleep 0.1; done
	[ "$(count)" -gt $((c + 5)) ] || fail "the counter restored from the $2 does not count (at $(count), was $c)"
	log "undamaged $2: restored, count $c -> $(count)"
}
damage_pages "$T/img"

mounts() { awk -v a="$A" 'index($2, a) == 1' /proc/self/mounts | sort; }
mounts >"$T/mounts.before"
expect_fail 1 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img" --bundle "$A" --work-path "$T/work" "$id"
expect_output "restore \`$id\`: verify: image \`$T/img\`: file \`$pages\` is corrupted: blake3 " "damaged $pages"
grep -q "Aborting restore due to post-restore script" "$T/work/restore.log" ||
	fail "CRIU did not stop at its post-restore step: $(grep -i 'error' "$T/work/restore.log" | tail -3)"
grep -q "Restore finished successfully. Tasks resumed" "$T/work/restore.log" &&
	fail "CRIU resumed the tasks of a damaged image"
[ -z "$(rt list -q)" ] || fail "a container is left: $(rt list)"
for cg in /sys/fs/cgroup/unified /sys/fs/cgroup/pids /sys/fs/cgroup/freezer; do
	f=$(find "$cg" -path "*$id*" -name cgroup.procs 2>/dev/null | head -1)
	[ -z "$f" ] || [ -z "$(cat "$f")" ] || fail "tasks left in $f: $(cat "$f")"
done
mounts | diff "$T/mounts.before" - >"$T/mounts.diff" || fail "the damaged restore left mounts: $(cat "$T/mounts.diff")"
log "damaged $pages (byte $off: $old -> $new): $(echo "$LAST_OUTPUT" | grep -m1 '^cryo:'); CRIU aborted at post-restore"

# the undamaged image: restored, and the counter goes on
restore_counts "$T/good" image

# --digest sha256: a format-1 image, gated the same way
timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --digest sha256 --image-path "$T/img1" "$id" </dev/null >"$T/out" 2>&1 ||
	fail "checkpoint --digest sha256: $(cat "$T/out")"
"$CRYO_BIN" inspect "$T/img1" >"$T/inspect" 2>&1 || fail "inspect: $(cat "$T/inspect")"
grep -q '^format: *1 (file digests: sha256)' "$T/inspect" || fail "--digest sha256: $(cat "$T/inspect")"
cp -a "$T/img1" "$T/good1"
damage_pages "$T/img1"
expect_fail 1 "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img1" --bundle "$A" --work-path "$T/work1" "$id"
expect_output "file \`$pages\` is corrupted: sha256 " "damaged $pages of the sha256 image"
[ -z "$(rt list -q)" ] || fail "a container is left after the damaged sha256 image: $(rt list)"
restore_counts "$T/good1" "sha256 image"
echo "PASS restore_pages_gate"
