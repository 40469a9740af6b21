#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# create → state(created) → start → state(running) → ps → kill → state(stopped)
# → delete, on a real busybox bundle; then the error paths of each command.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-lc1

# the container keeps our stdout: never capture it with $(...)
rt create --bundle "$B" --pid-file "$T/pid" "$id" </dev/null >"$T/out" 2>&1 || fail "create: $(cat "$T/out")"
pid=$(cat "$T/pid")
[ -d "/proc/$pid" ] || fail "pid file names $pid, which does not exist"
st=$(rt state "$id") || fail "state failed"
echo "$st" | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["status"] == "created", s
assert s["id"] == sys.argv[1] and s["pid"] == int(sys.argv[2]) and s["bundle"] == sys.argv[3], s
assert s["ociVersion"].startswith("1."), s
assert s["org.cryo.freezer"] == "RUNNING", s
' "$id" "$pid" "$B" || fail "state after create: $st"
# the process has not started: nothing printed yet
sleep 0.3
[ ! -s "$T/out" ] || fail "the container ran before start: $(cat "$T/out")"

expect_fail 1 rt create --bundle "$B" "$id"
expect_output "already exists" "second create"

check rt start "$id"
for _ in $(seq 50); do grep -q "count 1" "$T/out" && break; sleep 0.1; done
grep -q "count 1" "$T/out" || fail "the container printed nothing after start"
rt state "$id" | grep -q '"status":"running"' || fail "not running after start: $(rt state "$id")"
expect_fail 1 rt start "$id"
expect_output "only a created container can be started" "second start"

rt list | grep -q "^$id .*running" || fail "list: $(rt list)"
rt list -q | grep -qx "$id" || fail "list -q: $(rt list -q)"
rt list --format json | python3 -c 'import json,sys; l=json.load(sys.stdin); assert any(c["id"]==sys.argv[1] for c in l), l' "$id" \
	|| fail "list --format json"
# the table is ps(1)'s (runc's), the pids alone are --format json
rt ps --format json "$id" | python3 -c 'import json, sys; sys.exit(int(sys.argv[1]) not in json.load(sys.stdin))' "$pid" ||
	fail "ps --format json does not list the init $pid: $(rt ps --format json "$id")"
rt ps "$id" | awk -v p="$pid" 'NR > 1 && $2 == p { f = 1 } END { exit !f }' || fail "ps does not list the init $pid: $(rt ps "$id")"
[ "$(cgfile unified "$id" cgroup.procs | head -1)" = "$pid" ] || fail "init is not in the v2 cgroup"
# v1 lists a cgroup's pids sorted: after a pid wrap (pid_max is 32768 here)
# the init's child can come first
cgfile freezer "$id" cgroup.procs | grep -qx "$pid" || fail "init is not in the v1 freezer cgroup: $(cgfile freezer "$id" cgroup.procs)"

expect_fail 1 rt delete "$id"
expect_output "is running" "delete of a running container"
expect_fail 2 rt kill "$id" NOSUCHSIG

# pid 1 of a pid namespace ignores TERM without a handler; KILL by name
check rt kill "$id" SIGKILL
for _ in $(seq 50); do rt state "$id" | grep -q '"status":"stopped"' && break; sleep 0.1; done
rt state "$id" | grep -q '"status":"stopped"' || fail "not stopped after kill: $(rt state "$id")"
expect_fail 1 rt kill "$id" 9
expect_output "not running" "kill of a stopped container"
check rt delete "$id"
[ ! -e "$RTROOT/$id" ] || fail "state dir left after delete"
for h in unified freezer memory cpu pids; do
	[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "cgroup $h left after delete"
done
expect_fail 1 rt state "$id"
expect_output "does not exist" "state of a deleted container"

# a created container can be deleted without --force; run -d + delete --force
rt create --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "create again failed"
check rt delete "$id"
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
rt state "$id" | grep -q '"status":"running"' || fail "run -d: not running"
check rt delete --force "$id"
[ ! -e "$RTROOT/$id" ] || fail "state dir left after delete --force"

# `spec` writes a default config.json that cryo itself runs (on our rootfs)
mkdir "$T/spec"
check rt spec --bundle "$T/spec"
expect_fail 1 rt spec --bundle "$T/spec"
expect_output "File exists" "spec over an existing config"
cp "$T/spec/config.json" "$B/config.json"
bundle_set "$B" 'c["process"]["args"] = ["sh", "-c", "echo default-spec-ok"]; c["process"]["terminal"] = False; c["linux"]["cgroupsPath"] = "/'"$CGPARENT/$id"'"'
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run of the default spec: $out"
[ "$out" = default-spec-ok ] || fail "default spec output: $out"

# bad ids never reach the filesystem
expect_fail 1 rt create --bundle "$B" ../evil
expect_output "invalid character" "bad id"
echo ok
