#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# cgroupsPath: what create made is what delete removes (issue 11.7) —
# the intermediate levels of a nested path included, in every hierarchy,
# and nothing that was there before. A path ending in a controller file
# (`.../freezer.state`) fails without leaving its parents behind.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-cgp true
hier="unified freezer memory cpu pids"

left() {
	local h
	for h in $hier; do
		[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$1" ] || fail "$2: /sys/fs/cgroup/$h/$CGPARENT/$1 is left"
	done
}

# nested levels that did not exist: all gone after run (which deletes)
bundle_set "$B" 'c["linux"]["cgroupsPath"] = "/'"$CGPARENT"'/n1/n2/c"'
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run with a nested cgroupsPath: $out"
left n1 "nested path after run"
# the same with create + delete
rt create --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "create with a nested cgroupsPath failed"
[ -d "/sys/fs/cgroup/unified/$CGPARENT/n1/n2/c" ] || fail "create made no nested cgroup"
check rt delete "$id"
left n1 "nested path after delete"

# levels that were there before stay
for h in $hier; do mkdir -p "/sys/fs/cgroup/$h/$CGPARENT/keep"; done
bundle_set "$B" 'c["linux"]["cgroupsPath"] = "/'"$CGPARENT"'/keep/m/c"'
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run under an existing parent: $out"
left keep/m "under an existing parent"
for h in $hier; do
	[ -d "/sys/fs/cgroup/$h/$CGPARENT/keep" ] || fail "the existing /sys/fs/cgroup/$h/$CGPARENT/keep was removed"
done

# a controller file as the last level: refused by the kernel somewhere, nothing left
bundle_set "$B" 'c["linux"]["cgroupsPath"] = "/'"$CGPARENT"'/x/y/freezer.state"'
rt create --bundle "$B" "$id" </dev/null >"$T/out" 2>&1 && rt delete --force "$id" >/dev/null 2>&1
grep -q "freezer.state" "$T/out" || fail "freezer.state: $(cat "$T/out")"
left x "cgroupsPath ending in freezer.state"
[ ! -e "$RTROOT/$id" ] || fail "state dir left"
echo ok
