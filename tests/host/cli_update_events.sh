#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `update` (runc's flags and --resources FILE / stdin) reaches the
# container's cgroup files; `events --stats` prints runc's stats JSON once;
# the stream prints stats every --interval and an oom event when the
# kernel OOM-kills in the container, and ends when the container goes.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-upd
# init waits for /go, then a subshell eats memory until the OOM killer takes it; init lives on
# (the subshell's oom_score_adj is 1000: the memory it held may still be charged when the next
# allocation fails, and with every RSS tiny the killer took init 1 run in 6 before)
bundle_set "$B" '
c["process"]["args"] = ["sh", "-c", "while [ ! -e /go ]; do sleep 0.1; done; (echo 1000 >/proc/self/oom_score_adj; x=$(head -c 200000000 /dev/zero | tr \"\\\\0\" a)); echo survived >/oom-done; sleep 1000"]
c["linux"].setdefault("resources", {})["memory"] = {"limit": 268435456}
'
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"

# which hierarchy holds a controller: v1 dir of the container, else cgroup2
ctrl_dir() {
	if [ -d "/sys/fs/cgroup/$1/$CGPARENT/$id" ]; then
		echo "/sys/fs/cgroup/$1/$CGPARENT/$id"
	else
		echo "/sys/fs/cgroup/unified/$CGPARENT/$id"
	fi
}
MEM=$(ctrl_dir memory)
CPU=$(ctrl_dir cpu)
PIDS=$(ctrl_dir pids)

log "update with runc's flags (one dash and two)"
check rt update --memory 64m -memory-swap 128M --pids-limit 50 --cpu-share 512 --cpu-quota 20000 --cpu-period 100000 "$id"
if [ -e "$MEM/memory.limit_in_bytes" ]; then
	[ "$(cat "$MEM/memory.limit_in_bytes")" = 67108864 ] || fail "memory.limit_in_bytes: $(cat "$MEM/memory.limit_in_bytes")"
	[ ! -e "$MEM/memory.memsw.limit_in_bytes" ] || [ "$(cat "$MEM/memory.memsw.limit_in_bytes")" = 134217728 ] ||
		fail "memsw: $(cat "$MEM/memory.memsw.limit_in_bytes")"
else
	[ "$(cat "$MEM/memory.max")" = 67108864 ] || fail "memory.max: $(cat "$MEM/memory.max")"
	[ "$(cat "$MEM/memory.swap.max")" = 67108864 ] || fail "memory.swap.max: $(cat "$MEM/memory.swap.max")"
fi
[ "$(cat "$PIDS/pids.max")" = 50 ] || fail "pids.max: $(cat "$PIDS/pids.max")"
if [ -e "$CPU/cpu.shares" ]; then
	[ "$(cat "$CPU/cpu.shares")" = 512 ] || fail "cpu.shares: $(cat "$CPU/cpu.shares")"
	[ "$(cat "$CPU/cpu.cfs_quota_us")" = 20000 ] || fail "cpu.cfs_quota_us: $(cat "$CPU/cpu.cfs_quota_us")"
else
	[ "$(cat "$CPU/cpu.max")" = "20000 100000" ] || fail "cpu.max: $(cat "$CPU/cpu.max")"
fi

log "update --resources - (containerd's shim pipes the JSON)"
echo '{"memory": {"limit": 33554432, "swap": 33554432}, "cpu": {"quota": -1}, "pids": {"limit": 0}, "devices": [{"allow": false, "access": "rwm"}]}' |
	check rt update --resources=- "$id"
if [ -e "$MEM/memory.limit_in_bytes" ]; then
	[ "$(cat "$MEM/memory.limit_in_bytes")" = 33554432 ] || fail "resources memory: $(cat "$MEM/memory.limit_in_bytes")"
	[ "$(cat "$CPU/cpu.cfs_quota_us")" = -1 ] || fail "resources quota: $(cat "$CPU/cpu.cfs_quota_us")"
else
	[ "$(cat "$MEM/memory.max")" = 33554432 ] || fail "resources memory.max: $(cat "$MEM/memory.max")"
fi
[ "$(cat "$PIDS/pids.max")" = max ] || fail "resources pids: $(cat "$PIDS/pids.max")"
echo '{"memory": {"limit": 33554432}}' >"$T/res.json"
check rt update -r "$T/res.json" "$id"
if [ -e "$MEM/memory.memsw.limit_in_bytes" ]; then
	log "update --memory -1 with a memory+swap limit set: both go (runc's rule; the kernel refuses memory > memsw)"
	[ "$(cat "$MEM/memory.memsw.limit_in_bytes")" = 33554432 ] || fail "memsw before: $(cat "$MEM/memory.memsw.limit_in_bytes")"
	check rt update --memory -1 "$id"
	unlimited=$(cat "$MEM/memory.limit_in_bytes")
	[ "$unlimited" -gt $((1 << 60)) ] || fail "memory -1: limit_in_bytes is $unlimited"
	[ "$(cat "$MEM/memory.memsw.limit_in_bytes")" = "$unlimited" ] || fail "memory -1: memsw is $(cat "$MEM/memory.memsw.limit_in_bytes")"
	check rt update -r "$T/res.json" "$id"
fi
expect_fail 1 rt update --kernel-memory 10m "$id"
expect_output "not supported" "--kernel-memory"
echo '{"hugepageLimits": [{"pageSize": "2MB", "limit": 1}]}' >"$T/bad.json"
expect_fail 1 rt update --resources "$T/bad.json" "$id"
expect_output "hugepageLimits" "hugepageLimits"
expect_fail 2 rt update --memory lots "$id"
expect_fail 1 rt update --memory 10m nosuch-$$

log "events --stats: runc's JSON, once"
out=$(rt events --stats "$id") || fail "events --stats: $out"
echo "$out" | python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
assert len(lines) == 1, lines
e = json.loads(lines[0])
assert e["type"] == "stats" and e["id"] == sys.argv[1], e
d = e["data"]
assert d["memory"]["usage"]["usage"] > 0, d["memory"]
assert d["memory"]["usage"]["limit"] == 33554432, d["memory"]["usage"]
assert d["pids"]["current"] >= 1, d["pids"]
assert "cpu" in d and "usage" in d["cpu"], d
' "$id" || fail "events --stats printed: $out"

log "events stream: stats every interval, oom when the kernel OOM-kills"
rt events --interval 200ms "$id" >"$T/events" 2>"$T/events.err" &
EV=$!
at_exit "kill $EV"
# The OOM counter is read when the stream starts: an OOM before that is not
# an event of this stream. Its first stats line says that it watches.
for _ in $(seq 200); do
	grep -q '"type": *"stats"' "$T/events" 2>/dev/null && break
	kill -0 $EV 2>/dev/null || break
	sleep 0.05
done
grep -q '"type": *"stats"' "$T/events" || fail "events printed no stats within 10 s: $(cat "$T/events" "$T/events.err")"
touch "$B/rootfs/go"
for _ in $(seq 300); do
	[ -e "$B/rootfs/oom-done" ] && break
	sleep 0.1
done
if [ ! -e "$B/rootfs/oom-done" ]; then
	for p in $(cat "$MEM/cgroup.procs"); do echo "proc $p: $(tr '\0' ' ' </proc/$p/cmdline) $(grep -E 'State|VmRSS' /proc/$p/status | tr '\n' ' ')"; done
	dmesg | grep 'Killed process' | tail -3
	fail "the memory hog was not OOM-killed (container init gone?)"
fi
sleep 0.5
check rt kill "$id" KILL
for _ in $(seq 100); do
	kill -0 $EV 2>/dev/null || break
	sleep 0.1
done
kill -0 $EV 2>/dev/null && fail "events did not end when the container stopped"
wait $EV || fail "events exited $?: $(cat "$T/events.err")"
python3 - "$T/events" "$id" <<'EOF' || fail "event stream: $(cat "$T/events")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
types = [e["type"] for e in ev]
assert types.count("stats") >= 2, types
assert "oom" in types, types
assert all(e["id"] == sys.argv[2] for e in ev), ev
EOF
check rt delete --force "$id"

log "run --keep: the stopped container stays for delete"
bundle_set "$B" 'c["process"]["args"] = ["sh", "-c", "exit 3"]; c["process"]["terminal"] = False'
rm -f "$B/rootfs/go"
rt_timed run --keep --bundle "$B" "$id" </dev/null >/dev/null 2>&1 && rc=0 || rc=$?
[ $rc = 3 ] || fail "run --keep exited $rc, expected 3"
out=$(rt state "$id") || fail "run --keep removed the container: $out"
echo "$out" | grep -q '"status": *"stopped"' || fail "kept container state: $out"
check rt delete "$id"
expect_fail 1 rt state "$id"
echo "ok"
