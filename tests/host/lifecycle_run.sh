#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `run` returns the container's exit code (128+n when killed by signal n),
# removes the container afterwards, and the process sees the config:
# args, env, cwd, hostname, uid/gid, umask, namespaces.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-run sh -c 'exit 7'

expect_fail 7 rt_timed run --bundle "$B" "$id"
[ ! -e "$RTROOT/$id" ] || fail "run left its state dir"
[ ! -e "/sys/fs/cgroup/unified/$CGPARENT/$id" ] || fail "run left its cgroup"

bundle_set "$B" 'c["process"]["args"] = ["true"]'
expect_fail 0 rt_timed run --bundle "$B" "$id"

# killed by a signal from outside: 128+9
bundle_set "$B" 'c["process"]["args"] = ["sleep", "100"]'
timeout 60 "$CRYO_BIN" --root "$RTROOT" run --bundle "$B" "$id" </dev/null >/dev/null 2>&1 &  # $! must be timeout itself
runpid=$!
for _ in $(seq 100); do rt state "$id" 2>/dev/null | grep -q '"status":"running"' && break; sleep 0.05; done
check rt kill "$id" KILL
wait $runpid && rc=0 || rc=$?
[ $rc = 137 ] || fail "run of a container killed by SIGKILL returned $rc, expected 137"

# SIGTERM to `cryo run` is forwarded; the sh traps it and exits 42
bundle_set "$B" 'c["process"]["args"] = ["sh", "-c", "trap \"exit 42\" TERM; while :; do sleep 0.1; done"]'
timeout 60 "$CRYO_BIN" --root "$RTROOT" run --bundle "$B" "$id" </dev/null >/dev/null 2>&1 &  # $! must be timeout itself
runpid=$!
for _ in $(seq 100); do rt state "$id" 2>/dev/null | grep -q '"status":"running"' && break; sleep 0.05; done
sleep 0.3
kill -TERM $runpid
wait $runpid && rc=0 || rc=$?
[ $rc = 42 ] || fail "forwarded SIGTERM: run returned $rc, expected 42"

# the process environment from the config
bundle_set "$B" '
c["process"]["args"] = ["sh", "-c", "echo args=$0,$1; echo env=$FOO; echo cwd=$(pwd); echo host=$(hostname); echo id=$(id -u):$(id -g):$(id -G); echo umask=$(umask); echo pid=$$; readlink /proc/self/ns/net", "a1", "b2"]
c["process"]["env"].append("FOO=bar baz")
c["process"]["cwd"] = "/tmp/work"
c["process"]["user"] = {"uid": 1000, "gid": 1001, "additionalGids": [1002, 1003], "umask": 0o23}
c["hostname"] = "rt-host"
'
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run failed: $out"
for want in "args=a1,b2" "env=bar baz" "cwd=/tmp/work" "host=rt-host" "id=1000:1001:1001 1002 1003" "umask=0023" "pid=1"; do
	echo "$out" | grep -qxF "$want" || fail "expected \`$want\` in: $out"
done
[ "$(echo "$out" | tail -1)" != "$(readlink /proc/self/ns/net)" ] || fail "the container shares the host's net namespace"

# a missing executable is reported by create, not silently at start
bundle_set "$B" 'c["process"]["args"] = ["no-such-binary"]; c["process"]["user"] = {"uid": 0, "gid": 0}'
expect_fail 1 rt_timed run --bundle "$B" "$id"
expect_output "process.args\[0\]: \`no-such-binary\` not found" "missing binary"
[ ! -e "$RTROOT/$id" ] || fail "failed run left its state dir"
echo ok
