#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# cryo refuses to freeze a filesystem it or the host must keep writing:
# the one holding `/`, the one holding the state dir (--root), one holding
# an image/staging dir or the log; and a path that is not a mount point
# without --force. Every refusal here runs with CRYO_FAULT=fsfreeze-freeze,
# which fails the step right after the checks: if a check ever stopped
# refusing, the test fails on the injected fault instead of freezing the
# host's root filesystem.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/fsimg.sh"

fsimg_need ext4
R=$T/root
mp=$T/ext4
fsimg_mount ext4 ext4 64M
mkdir -p "$mp/images" "$mp/sub"

refused() {
	expect_fail 1 env CRYO_FAULT=fsfreeze-freeze "$CRYO_BIN" "$@"
	echo "$LAST_OUTPUT" | grep -q "injected fault" && fail "\`cryo $*\` was not refused: $LAST_OUTPUT"
	expect_output "refusing to freeze" "\`cryo $*\`"
}

log "the fault injection itself works (so a missed refusal would show)"
expect_fail 1 env CRYO_FAULT=fsfreeze-freeze "$CRYO_BIN" --root "$R" fsfreeze --path "$mp"
expect_output "injected fault" "fault injection"

log "the filesystem holding /"
refused --root "$R" fsfreeze --path /
expect_output "holding \`/\`" "/"
refused --root "$R" fsfreeze --force --path /
refused --root "$R" fsfreeze --force --path "$T"
# $T is on / on the host; in the VM /tmp is a tmpfs, refused as the state dir's
if [ "$(stat -c %d "$T")" = "$(stat -c %d /)" ]; then
	expect_output "holding \`/\`" "$T (on /)"
fi

log "the filesystem holding the state dir"
refused --root "$mp/state" fsfreeze --path "$mp"
expect_output "state dir \`$mp/state\`" "state dir"
refused --root "$mp/state" fsfreeze --force --path "$mp"

log "the filesystem holding an image/staging dir, existing or not yet"
refused --root "$R" fsfreeze --path "$mp" --keep-writable "$T/elsewhere" --keep-writable "$mp/images"
expect_output "\`$mp/images\`, which must stay writable" "image dir"
refused --root "$R" fsfreeze --force --path "$mp" --keep-writable "$mp/new/staging"
expect_output "\`$mp/new/staging\`" "staging dir"

log "the filesystem holding the --log file"
refused --root "$R" --log "$mp/cryo.log" fsfreeze --path "$mp"

log "a path that is not a mount point needs --force"
expect_fail 1 cryo --root "$R" fsfreeze --path "$mp/sub"
echo "$LAST_OUTPUT" | grep -q "is not a mount point: freezing it would freeze the whole ext4 filesystem mounted at \`$mp\`" ||
	fail "not a mount point: $LAST_OUTPUT"
check cryo --root "$R" fsfreeze --force --path "$mp/sub" --timeout 30
start_writer "$mp/w" "w"
wait_dstate $WRITER || fail "--force on a subdir did not freeze the filesystem"
check cryo --root "$R" fsthaw --path "$mp"
wait_gone $WRITER 50 || fail "not thawed"

log "nothing was frozen by the refusals"
[ -z "$(ls "$R/.holds/"*.sock 2>/dev/null)" ] || fail "a watchdog is left: $(ls "$R/.holds")"
start_writer "$mp/final" "f"
wait_gone $WRITER 50 || fail "the image is frozen after the refusals"
echo ok
