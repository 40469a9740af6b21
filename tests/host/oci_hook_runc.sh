#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# cryo-hook as an OCI hook of another runtime (Debian's runc): poststart
# registers the container in cryo's state dir with the real pid, rootfs
# and cgroups; poststop unregisters it. Bad stdin is refused.
. "$(dirname "$0")/../lib/common.sh"
need_root
need_cmd runc
need_cmd jq
HOOK=$CRYO_BUILD/cryo-hook
[ -x "$HOOK" ] || fail "cryo-hook not built at $HOOK"
BUSYBOX=$(command -v busybox) || skip "needs busybox-static"

B=$T/bundle
STATE=$T/state
id=cryo-test-hook-$$
mkdir -p "$B/rootfs/bin"
cp "$BUSYBOX" "$B/rootfs/bin/busybox"
for a in sh sleep; do ln -s busybox "$B/rootfs/bin/$a"; done
(cd "$B" && runc spec)
jq --arg hook "$HOOK" --arg st "$STATE" '
	.process.terminal = false |
	.process.args = ["sleep", "1000"] |
	.root.readonly = false |
	.hooks = {
		poststart: [{path: $hook, args: ["cryo-hook", "--root", $st, "register"]}],
		poststop: [{path: $hook, args: ["cryo-hook", "--root", $st, "unregister"]}]
	}' "$B/config.json" > "$B/config.json.new" && mv "$B/config.json.new" "$B/config.json"

at_exit "runc delete -f $id"
# the container inherits runc's stdio: keep it off any pipe we wait on
runc run -d --bundle "$B" "$id" </dev/null >"$T/runc.log" 2>&1 || fail "runc run: $(cat "$T/runc.log")"
pid=$(runc state "$id" | jq -r .pid)
[ "$pid" -gt 0 ] || fail "runc reported no pid"

sj=$STATE/$id/state.json
[ -f "$sj" ] || fail "poststart hook did not register $id (no $sj)"
[ "$(stat -c %a "$STATE/$id")" = 700 ] || fail "state dir mode is not 0700"
[ "$(jq -r .pid "$sj")" = "$pid" ] || fail "registered pid $(jq -r .pid "$sj") != runc's $pid"
[ "$(jq -r .status "$sj")" = running ] || fail "registered status: $(jq -r .status "$sj")"
[ "$(jq -r .rootfs "$sj")" = "$B/rootfs" ] || fail "registered rootfs: $(jq -r .rootfs "$sj")"
[ "$(jq -r '.annotations["org.cryo.external"]' "$sj")" = true ] || fail "external annotation missing"
fz=$(jq -r .cgroupV1Freezer "$sj")
grep -qx "$pid" "$fz/cgroup.procs" || fail "pid $pid is not in the registered freezer cgroup $fz"
v2=$(jq -r .cgroupV2 "$sj")
grep -qx "$pid" "$v2/cgroup.procs" || fail "pid $pid is not in the registered cgroup2 $v2"

check runc kill "$id" KILL
for _ in $(seq 50); do
	[ "$(runc state "$id" 2>/dev/null | jq -r .status)" = stopped ] && break
	sleep 0.1
done
check runc delete "$id"
[ ! -e "$STATE/$id" ] || fail "poststop hook did not unregister $id"

# bad input: garbage on stdin, missing fields, unknown verb
expect_fail 1 sh -c "echo 'not json' | $HOOK --root $STATE register"
expect_output 'not an OCI state JSON object' "garbage stdin"
expect_fail 1 sh -c "echo '{\"id\":\"x\"}' | $HOOK --root $STATE register"
expect_output 'lacks id, bundle or pid' "missing fields"
expect_fail 1 sh -c "echo '{\"id\":\"../x\",\"bundle\":\"/\",\"pid\":1}' | $HOOK --root $STATE register"
expect_output 'invalid character' "bad id"
expect_fail 2 "$HOOK" frobnicate
[ -z "$(ls -A "$STATE" 2>/dev/null)" ] || fail "failed registrations left state behind: $(ls -A "$STATE")"
echo ok
