#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# cryo fsfreeze / fsthaw on real loop-mounted ext4 and xfs: a frozen
# filesystem blocks a writer in D state, thaw releases it with its data;
# the seed's errors (EOPNOTSUPP on tmpfs/overlay, EINVAL on thawing an
# unfrozen fs, EPERM without CAP_SYS_ADMIN, EBUSY on a foreign freeze);
# nested holds of two owners; a container ID resolves to its rootfs.
# CRYO_FSFREEZE_TYPES: the filesystems to run the per-filesystem part on
# (default "ext4 xfs"; tests/vm/cli_kmod.vmtest takes ext4 only).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/fsimg.sh"

FSTYPES=${CRYO_FSFREEZE_TYPES:-ext4 xfs}
case " $FSTYPES " in *" ext4 "*) ;; *) fail "CRYO_FSFREEZE_TYPES must include ext4 (the rest of the test uses it): $FSTYPES" ;; esac
# shellcheck disable=SC2086
fsimg_need $FSTYPES
need_cmd fsfreeze
need_cmd setpriv
R=$T/root

for fs in $FSTYPES; do
	mp=$T/$fs
	if [ $fs = xfs ]; then size=320M; else size=64M; fi
	fsimg_mount $fs $fs $size
	log "$fs: freeze blocks a writer, thaw releases it"
	check cryo --root "$R" fsfreeze --path "$mp" --timeout 60
	start_writer "$mp/data" "payload-$fs"
	wait_dstate $WRITER || fail "$fs: writer is not in D state on the frozen fs: $(task_state $WRITER)"
	sleep 0.3
	[ "$(task_state $WRITER)" = D ] || fail "$fs: writer left D state while frozen"
	out=$(cryo --root "$R" fsthaw --path "$mp") || fail "$fs: fsthaw failed: $out"
	echo "$out" | grep -q "thawed \`$mp\` (frozen [0-9]*\.[0-9]* ms)" || fail "$fs: fsthaw printed: $out"
	wait_gone $WRITER 50 || fail "$fs: writer still blocked after thaw"
	[ "$(cat "$mp/data")" = "payload-$fs" ] || fail "$fs: data after thaw: $(cat "$mp/data")"

	log "$fs: double thaw is EINVAL, not frozen"
	expect_fail 1 cryo --root "$R" fsthaw --path "$mp"
	expect_output "it is not frozen" "$fs: double thaw"
	expect_fail 1 cryo --root "$R" fsthaw --force --path "$mp"
	expect_output "not frozen (FITHAW: Invalid argument)" "$fs: forced thaw of unfrozen"

	log "$fs: nested holds of two owners, each thaws only its own"
	check cryo --root "$R" fsfreeze --path "$mp" --owner a --timeout 60
	check cryo --root "$R" fsfreeze --path "$mp" --owner b --timeout 60
	expect_fail 1 cryo --root "$R" fsfreeze --path "$mp" --owner a
	expect_output "owner \`a\` already holds" "$fs: second hold of a"
	expect_fail 1 cryo --root "$R" fsthaw --path "$mp" --owner c
	expect_output "not for owner \`c\`" "$fs: thaw by non-owner"
	start_writer "$mp/nested" "n"
	wait_dstate $WRITER || fail "$fs: writer not blocked by the nested freeze"
	out=$(cryo --root "$R" fsthaw --path "$mp" --owner a) || fail "$fs: thaw a: $out"
	echo "$out" | grep -q "stays frozen: 1 other hold" || fail "$fs: thaw a printed: $out"
	sleep 0.3
	[ "$(task_state $WRITER)" = D ] || fail "$fs: b's hold did not keep it frozen"
	check cryo --root "$R" fsthaw --path "$mp" --owner b
	wait_gone $WRITER 50 || fail "$fs: writer blocked after the last hold went"

	log "$fs: a thaw behind cryo's back is a lost window for thaw, reset and the holds a new hold finds"
	check cryo --root "$R" fsfreeze --path "$mp" --timeout 60
	check fsfreeze -u "$mp"
	expect_fail 1 cryo --root "$R" fsthaw --path "$mp"
	echo "$LAST_OUTPUT" | grep -q "already thawed by a thaw behind cryo's back.*the consistency window was lost" ||
		fail "$fs: thaw after fsfreeze -u: $LAST_OUTPUT"
	check cryo --root "$R" fsfreeze --path "$mp" --timeout 60
	check fsfreeze -u "$mp"
	expect_fail 1 cryo --root "$R" fsfreeze --reset-timeout 30 --path "$mp"
	expect_output "the consistency window was lost" "$fs: reset after fsfreeze -u"
	start_writer "$mp/behind" "b"
	wait_gone $WRITER 50 || fail "$fs: the reset probe left it frozen"
	check cryo --root "$R" fsfreeze --path "$mp" --owner a --timeout 60
	check fsfreeze -u "$mp"
	check cryo --root "$R" fsfreeze --path "$mp" --owner b --timeout 60
	start_writer "$mp/behind2" "b2"
	wait_dstate $WRITER || fail "$fs: b's hold after a thaw behind cryo's back did not freeze"
	expect_fail 1 cryo --root "$R" fsthaw --path "$mp" --owner a
	expect_output "the consistency window was lost" "$fs: a's hold survived"
	check cryo --root "$R" fsthaw --path "$mp" --owner b
	wait_gone $WRITER 50 || fail "$fs: not thawed after b"

	log "$fs: a freeze cryo did not make is EBUSY and not cryo's to thaw"
	check fsfreeze -f "$mp"
	expect_fail 1 cryo --root "$R" fsfreeze --path "$mp"
	expect_output "already frozen, and not by cryo" "$fs: foreign freeze"
	expect_fail 1 cryo --root "$R" fsthaw --path "$mp"
	check cryo --root "$R" fsthaw --force --path "$mp"
	expect_fail 1 fsfreeze -u "$mp"
done

log "EOPNOTSUPP: tmpfs and overlayfs cannot freeze"
mkdir -p "$T/tmpfs" "$T/lower" "$T/upper" "$T/work" "$T/ovl"
mount -t tmpfs cryo-test-fsfreeze "$T/tmpfs" || fail "mount tmpfs"
at_exit "umount $T/tmpfs"
mount -t overlay cryo-test-fsfreeze -o "lowerdir=$T/lower,upperdir=$T/upper,workdir=$T/work" "$T/ovl" || fail "mount overlay"
at_exit "umount $T/ovl"
for m in tmpfs ovl; do
	expect_fail 1 cryo --root "$R" fsfreeze --path "$T/$m"
	echo "$LAST_OUTPUT" | grep -q "does not support freezing (FIFREEZE: Operation not supported)" ||
		fail "$m: $LAST_OUTPUT"
	expect_output "rootfs on a filesystem of its own" "$m: no advice"
done

log "EPERM without CAP_SYS_ADMIN"
expect_fail 1 setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "$CRYO_BIN" --root "$R" fsfreeze --path "$T/ext4"
expect_output "needs CAP_SYS_ADMIN" "EPERM"
check cryo --root "$R" fsfreeze --path "$T/ext4" --timeout 60
for sub in "fsthaw --path $T/ext4" "fsfreeze --reset-timeout 9 --path $T/ext4"; do
	# shellcheck disable=SC2086
	expect_fail 1 setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin "$CRYO_BIN" --root "$R" $sub
	expect_output "needs CAP_SYS_ADMIN" "EPERM for $sub"
done
check cryo --root "$R" fsthaw --path "$T/ext4"

log "a container ID resolves to its rootfs, and is the owner"
mkdir -p "$R/fsfz-c1"
printf '{"id":"fsfz-c1","status":"created","pid":0,"rootfs":"%s","bundle":"%s"}\n' "$T/ext4" "$T" > "$R/fsfz-c1/state.json"
check cryo --root "$R" fsfreeze fsfz-c1 --timeout 60
fs_entry "$R" "$T/ext4" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert [h["owner"] for h in d["holds"]]==["fsfz-c1"], d' ||
	fail "the hold is not owned by the container id: $(fs_entry "$R" "$T/ext4")"
start_writer "$T/ext4/by-id" "id"
wait_dstate $WRITER || fail "freeze by id did not freeze the rootfs"
check cryo --root "$R" fsthaw fsfz-c1
wait_gone $WRITER 50 || fail "thaw by id did not thaw"
expect_fail 1 cryo --root "$R" fsfreeze fsfz-nope
expect_output "does not exist" "unknown id"

log "nothing is left in the state dir once the freeze is over (issue 17: no lock files)"
R2=$T/root2
mkdir -p "$R2"
check cryo --root "$R2" fsfreeze --path "$T/ext4" --timeout 30
[ -n "$(fs_entry "$R2" "$T/ext4")" ] || fail "no journal entry while frozen: $(ls -a "$R2" "$R2/.holds")"
check cryo --root "$R2" fsthaw --path "$T/ext4"
[ -z "$(ls -A "$R2/.holds")" ] || fail "left in the hold journal after the thaw: $(ls -a "$R2/.holds")"
[ "$(ls -A "$R2")" = .holds ] || fail "left in the state dir after the thaw: $(ls -a "$R2")"
echo ok
