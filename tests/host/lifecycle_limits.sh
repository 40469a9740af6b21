#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Resources from config.json land in the real cgroup files (v1 memory,
# cpu, pids; the v2 dir exists with the init in it), the limits bite
# (pids.max stops a fork bomb), the freezer backend annotation is recorded,
# `kill --all` reaches every task, and delete removes every hierarchy.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-lim sh -c 'sleep 100 & sleep 100 & wait'
bundle_set "$B" '
c["linux"]["resources"] = {"memory": {"limit": 100663296}, "cpu": {"shares": 300, "period": 50000, "quota": 25000},
                           "pids": {"limit": 12}}
c["annotations"]["org.cryo.freezer"] = "v1"
'
rt run -d --pid-file "$T/pid" --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
[ "$(cgfile memory "$id" memory.limit_in_bytes)" = 100663296 ] || fail "memory.limit_in_bytes: $(cgfile memory "$id" memory.limit_in_bytes)"
[ "$(cgfile cpu "$id" cpu.shares)" = 300 ] || fail "cpu.shares"
[ "$(cgfile cpu "$id" cpu.cfs_period_us)" = 50000 ] || fail "cpu.cfs_period_us"
[ "$(cgfile cpu "$id" cpu.cfs_quota_us)" = 25000 ] || fail "cpu.cfs_quota_us"
[ "$(cgfile pids "$id" pids.max)" = 12 ] || fail "pids.max: $(cgfile pids "$id" pids.max)"
grep -qx "$(cat "$T/pid")" "/sys/fs/cgroup/unified/$CGPARENT/$id/cgroup.procs" || fail "init not in the v2 cgroup"
python3 - "$RTROOT/$id/state.json" "$CGPARENT/$id" <<'PY' || fail "state.json: $(cat "$RTROOT/$id/state.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["freezerBackend"] == "v1", s
assert s["cgroupV2"] == "/sys/fs/cgroup/unified/" + sys.argv[2], s
assert s["cgroupV1Freezer"] == "/sys/fs/cgroup/freezer/" + sys.argv[2], s
PY
for _ in $(seq 50); do [ "$(rt ps "$id" | tail -n +2 | wc -l)" = 3 ] && break; sleep 0.1; done
[ "$(rt ps "$id" | tail -n +2 | wc -l)" = 3 ] || fail "ps: expected 3 pids: $(rt ps "$id")"

# the v1 freezer backend is what state reports
echo FROZEN > "/sys/fs/cgroup/freezer/$CGPARENT/$id/freezer.state"
at_exit "echo THAWED > /sys/fs/cgroup/freezer/$CGPARENT/$id/freezer.state"
for _ in $(seq 50); do rt state "$id" | grep -q '"org.cryo.freezer":"FROZEN"' && break; sleep 0.1; done
rt state "$id" | grep -q '"status":"paused"' || fail "frozen container is not paused: $(rt state "$id")"
rt state "$id" | grep -q '"org.cryo.freezer":"FROZEN"' || fail "freezer state: $(rt state "$id")"
echo THAWED > "/sys/fs/cgroup/freezer/$CGPARENT/$id/freezer.state"
rt state "$id" | grep -q '"status":"running"' || fail "thawed container is not running"

# kill --all: every task, not just the init
check rt kill --all "$id" KILL
for _ in $(seq 50); do [ -z "$(cgfile pids "$id" cgroup.procs)" ] && break; sleep 0.1; done
[ -z "$(cgfile pids "$id" cgroup.procs)" ] || fail "tasks left after kill --all: $(cgfile pids "$id" cgroup.procs)"
check rt delete "$id"
for h in unified freezer memory cpu pids; do
	[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "cgroup $h left after delete"
done

# the pids limit bites: forks beyond 12 tasks fail (counted in pids.events)
bundle_set "$B" 'c["process"]["args"] = ["sh", "-c", "i=0; while [ $i -lt 30 ]; do sleep 100 & i=$((i+1)); done; wait"]'
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
for _ in $(seq 50); do grep -q "^max [1-9]" "/sys/fs/cgroup/pids/$CGPARENT/$id/pids.events" && break; sleep 0.1; done
grep -q "^max [1-9]" "/sys/fs/cgroup/pids/$CGPARENT/$id/pids.events" || fail "pids.max=12 never refused a fork: $(cgfile pids "$id" pids.events)"
[ "$(cgfile pids "$id" pids.peak)" -le 12 ] || fail "pids.peak $(cgfile pids "$id" pids.peak) > 12"
check rt delete --force "$id"

# a v2-backend container: state reads cgroup.freeze
bundle_set "$B" 'c["process"]["args"] = ["sleep", "100"]; c["annotations"]["org.cryo.freezer"] = "v2"'
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
echo 1 > "/sys/fs/cgroup/unified/$CGPARENT/$id/cgroup.freeze"
for _ in $(seq 50); do rt state "$id" | grep -q '"org.cryo.freezer":"FROZEN"' && break; sleep 0.1; done
rt state "$id" | grep -q '"org.cryo.freezer":"FROZEN"' || fail "v2 freezer state: $(rt state "$id")"
# delete --force thaws, kills and removes a frozen container
check rt delete --force "$id"
[ ! -e "/sys/fs/cgroup/unified/$CGPARENT/$id" ] || fail "v2 cgroup left after delete --force"
echo ok
