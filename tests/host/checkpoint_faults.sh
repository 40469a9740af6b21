#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Every step of `cryo checkpoint` fails in turn (CRYO_FAULT=<step>) on a
# real container whose rootfs is its own loop-mounted ext4: afterwards the
# container runs (or stays paused), its filesystem takes writes again, no
# image is committed and no staging dir is left. On a host where CRIU
# can't dump (this one: criu 3.17 on kernel >= 6.13), the steps after
# criu-dump are reached in the VM test instead, and the real CRIU failure
# is checked to unwind the same way and to quote CRIU's log.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_cmd criu

id=ck-flt-$$
B=$T/$id
bundle_counting "$B"
rt run -d --bundle "$B" "$id" </dev/null >"$T/out" 2>&1 || fail "run: $(cat "$T/out")"

count() { bundle_count "$B"; }
assert_back() {  # what, expected freezer state
	local what=$1 want=$2 c1 st
	st=$(rt freezer-state "$id") || fail "$what: freezer-state failed"
	[ "$st" = "$want" ] || fail "$what: container is $st, expected $want"
	[ ! -e "$T/img" ] || fail "$what: an image was committed"
	if ls -a "$T" | grep -q 'staging'; then fail "$what: staging dir left: $(ls -a "$T")"; fi
	# the rootfs takes writes (a frozen fs would block: bounded by timeout)
	timeout 5 sh -c "echo x > '$B/rootfs/probe' && sync -f '$B/rootfs/probe'" || fail "$what: rootfs still frozen"
	if [ "$want" = RUNNING ]; then
		c1=$(count)
		sleep 0.5
		[ "$(count)" -gt "$c1" ] || fail "$what: the container does not run (count stuck at $c1)"
	fi
}

for _ in $(seq 50); do [ "$(count)" -gt 2 ] && break; sleep 0.1; done
[ "$(count)" -gt 2 ] || fail "the container does not count"

# the step names come from the table itself (`cryo features`)
all_steps=$("$CRYO_BIN" features | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["org.cryo"]["steps"]["checkpoint"]))') \
	|| fail "cryo features lists no checkpoint steps"
[ -n "$all_steps" ] || fail "no checkpoint steps"
if "$CRYO_BIN" check >/dev/null 2>&1; then
	steps=$all_steps
	criu_works=1
else
	# where CRIU can't dump, the steps after criu-dump are reached in the VM test
	steps=${all_steps%%criu-dump*}criu-dump
	criu_works=0
fi
for s in $steps; do
	CRYO_FAULT=$s expect_fail 1 rt checkpoint --image-path "$T/img" "$id"
	echo "$LAST_OUTPUT" | grep -q "checkpoint \`$id\`: $s: injected fault (CRYO_FAULT=$s)" \
		|| fail "fault at $s: unexpected error: $LAST_OUTPUT"
	assert_back "fault at $s" RUNNING
	log "fault at $s: unwound"
done
# a fault named with its table hits only that table
CRYO_FAULT=checkpoint:freeze-fs expect_fail 1 rt checkpoint --image-path "$T/img" "$id"
expect_output "freeze-fs: injected fault" "checkpoint:freeze-fs"
assert_back "fault at checkpoint:freeze-fs" RUNNING
CRYO_FAULT=restore:lock,pre-dump:lock expect_fail '!' rt checkpoint --image-path "$T/img" "$id"
echo "$LAST_OUTPUT" | grep -q "injected fault" && fail "a fault of other tables fired in checkpoint: $LAST_OUTPUT"

# a paused container stays paused through a failed checkpoint
check rt pause "$id"
for s in freeze-fs snapshot-rootfs criu-dump; do
	CRYO_FAULT=$s expect_fail 1 rt checkpoint --image-path "$T/img" "$id"
	assert_back "paused, fault at $s" FROZEN
done
check rt resume "$id"

# --fs-freeze=required on a rootfs that is its own filesystem gets past freeze-fs
CRYO_FAULT=snapshot-rootfs expect_fail 1 rt checkpoint --fs-freeze=required --image-path "$T/img" "$id"
expect_output 'snapshot-rootfs: injected' "--fs-freeze=required"
assert_back "fs-freeze=required" RUNNING
expect_fail 2 rt checkpoint --fs-freeze=sometimes "$id"

if [ $criu_works = 0 ]; then
	# the real thing fails in CRIU here: same unwind, and CRIU's own words
	expect_fail 1 rt checkpoint --image-path "$T/img" "$id"
	expect_output "criu-dump: criu dump failed: Error (" "CRIU failure"
	expect_output "(log: \`$RTROOT/$id/criu/dump.log\`)" "CRIU failure names no log"
	[ -s "$RTROOT/$id/criu/dump.log" ] || fail "CRIU's log is not at the named path"
	assert_back "CRIU failure" RUNNING
	log "real CRIU failure unwound: $LAST_OUTPUT"
fi

# not a container / bad id
expect_fail 1 rt checkpoint --image-path "$T/img" nosuch-$$
expect_fail 1 rt checkpoint --image-path "$T/img" "../x"
echo "PASS checkpoint_faults"
