#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# linux.namespaces pid with a path: the runtime joins it for the clone of
# the init only (setns(CLONE_NEWPID) moves the caller's later children).
# It goes back right after, so a poststart hook that `run` forks later
# runs in the runtime's pid namespace, not the container's.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_cmd unshare

bundle_for rt-jpid sh -c 'echo in-ns'

# a throw-away pid namespace: its init is the forked sleep
unshare -p -f sleep 600 </dev/null >/dev/null 2>&1 &
holder=$!
at_exit "kill -9 $holder"
nsinit=
for _ in $(seq 100); do
	nsinit=$(pgrep -P $holder sleep) && break
	sleep 0.05
done
[ -n "$nsinit" ] || fail "the holder pid namespace did not come up"
at_exit "kill -9 $nsinit"
target=$(readlink "/proc/$nsinit/ns/pid")
[ "$target" != "$(readlink /proc/self/ns/pid)" ] || fail "the holder shares our pid namespace"

cat >"$T/hook.sh" <<HOOK
#!/bin/sh
readlink /proc/self/ns/pid >"$T/hook.ns"
HOOK
chmod +x "$T/hook.sh"
bundle_set "$B" '
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "pid"]
c["linux"]["namespaces"].append({"type": "pid", "path": "/proc/'"$nsinit"'/ns/pid"})
c["hooks"] = {"poststart": [{"path": "'"$T"'/hook.sh"}]}
'
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run in a joined pid namespace: $out"
echo "$out" | grep -qx in-ns || fail "output: $out"
[ -s "$T/hook.ns" ] || fail "the poststart hook did not run"
[ "$(cat "$T/hook.ns")" = "$(readlink /proc/self/ns/pid)" ] \
	|| fail "the poststart hook ran in $(cat "$T/hook.ns"), not the runtime's pid namespace (the container's is $target)"
echo ok
