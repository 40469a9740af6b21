#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Every step of create fails once (CRYO_FAULT=create:<step>, names from the
# step table itself): each unwinds everything before it — state dir,
# cgroup, the init, the veth — and the next create works.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_cmd ip
steps_bin=$CRYO_BUILD/tests/tools/cryo-test-steps
[ -x "$steps_bin" ] || skip "needs $steps_bin (build the tests)"

id=rt-cf-$$
B=$T/$id
hostif=cf$$
hostif=${hostif:0:15}
bundle_new "$B" true
bundle_set "$B" 'c["annotations"]["org.cryo.network"] = "veth:'"$hostif"':10.78.0.2/24"'
at_exit "ip link del $hostif"

steps=$("$steps_bin" create) || fail "cryo-test-steps create failed"
[ "$(echo "$steps" | wc -l)" -ge 5 ] || fail "too few create steps: $steps"
for s in $steps; do
	timeout 30 env CRYO_FAULT="create:$s" "$CRYO_BIN" --root "$RTROOT" create --bundle "$B" "$id" \
		</dev/null >"$T/out" 2>&1 && rc=0 || rc=$?
	[ $rc = 1 ] || { rt delete --force "$id" >/dev/null 2>&1; fail "CRYO_FAULT=create:$s: create exited $rc: $(cat "$T/out")"; }
	grep -q "injected fault (CRYO_FAULT=create:$s)" "$T/out" || fail "CRYO_FAULT=create:$s: $(cat "$T/out")"
	[ ! -e "$RTROOT/$id" ] || fail "CRYO_FAULT=create:$s: state dir left"
	for h in unified freezer memory cpu pids; do
		[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "CRYO_FAULT=create:$s: cgroup $h left"
	done
	[ ! -e "/sys/class/net/$hostif" ] || fail "CRYO_FAULT=create:$s: $hostif left"
	! pgrep -f "cryo --root $RTROOT" >/dev/null || fail "CRYO_FAULT=create:$s: a process is left"
done
expect_fail 0 timeout 30 "$CRYO_BIN" --root "$RTROOT" run --bundle "$B" "$id"
echo ok
