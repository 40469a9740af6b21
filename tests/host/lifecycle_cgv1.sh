#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The v1 resources beyond memory/cpu/pids limits: cpuset cpus/mems (in a
# nested cgroupsPath, whose fresh parent level must get its cpus/mems
# first), the memory soft limit, swappiness and OOM killer switch, blkio
# throttles, device rules in their order; the
# init is in the container's cgroup in every v1 hierarchy the host mounts
# (cpuset, blkio, devices, ...), and delete removes all of them.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

[ -d /sys/fs/cgroup/cpuset ] && [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/blkio ] ||
	skip "needs the v1 cpuset, memory and blkio hierarchies"
need_cmd lsblk
need_cmd findmnt
bundle_for rt-cgv1 sleep 100
cpus=$(cut -d, -f1 /sys/fs/cgroup/cpuset/cpuset.cpus | cut -d- -f1)
mems=$(cut -d, -f1 /sys/fs/cgroup/cpuset/cpuset.mems | cut -d- -f1)
# the rootfs's own loop device is a block device this host surely has, to throttle
dev=$(findmnt -no SOURCE "$B/rootfs")
mm=$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')
[ -n "$mm" ] || fail "no major:minor for the rootfs device $dev"
bundle_set "$B" '
c["linux"]["resources"] = {"cpu": {"cpus": "'"$cpus"'", "mems": "'"$mems"'"},
                           "memory": {"limit": 100663296, "reservation": 50331648, "swappiness": 17,
                                      "disableOOMKiller": True},
                           "blockIO": {"throttleReadBpsDevice": [{"major": '"${mm%:*}"', "minor": '"${mm#*:}"', "rate": 1048576}],
                                       "throttleWriteIOPSDevice": [{"major": '"${mm%:*}"', "minor": '"${mm#*:}"', "rate": 300}]}}
'
rt run -d --pid-file "$T/pid" --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d failed"
pid=$(cat "$T/pid")
[ "$(cgfile cpuset "$id" cpuset.cpus)" = "$cpus" ] || fail "cpuset.cpus: $(cgfile cpuset "$id" cpuset.cpus), want $cpus"
[ "$(cgfile cpuset "$id" cpuset.mems)" = "$mems" ] || fail "cpuset.mems: $(cgfile cpuset "$id" cpuset.mems), want $mems"
[ -n "$(cat "/sys/fs/cgroup/cpuset/$CGPARENT/cpuset.cpus")" ] || fail "the parent level has no cpuset.cpus"
[ "$(cgfile memory "$id" memory.soft_limit_in_bytes)" = 50331648 ] || fail "memory.soft_limit_in_bytes: $(cgfile memory "$id" memory.soft_limit_in_bytes)"
[ "$(cgfile memory "$id" memory.swappiness)" = 17 ] || fail "memory.swappiness: $(cgfile memory "$id" memory.swappiness)"
[ "$(cgfile blkio "$id" blkio.throttle.read_bps_device)" = "$mm 1048576" ] || fail "blkio.throttle.read_bps_device: $(cgfile blkio "$id" blkio.throttle.read_bps_device)"
[ "$(cgfile blkio "$id" blkio.throttle.write_iops_device)" = "$mm 300" ] || fail "blkio.throttle.write_iops_device: $(cgfile blkio "$id" blkio.throttle.write_iops_device)"
grep -qx "oom_kill_disable 1" "/sys/fs/cgroup/memory/$CGPARENT/$id/memory.oom_control" || fail "memory.oom_control: $(cgfile memory "$id" memory.oom_control)"

# the init is in every mounted v1 hierarchy at the container's path
hs=
for h in cpuset blkio devices net_cls net_prio memory cpu pids freezer; do
	[ -d "/sys/fs/cgroup/$h" ] && [ "$(stat -f -c %T "/sys/fs/cgroup/$h")" = cgroupfs ] || continue
	grep -q "^[0-9]*:\([^:]*,\)\?$h\(,[^:]*\)\?:/$CGPARENT/$id\$" "/proc/$pid/cgroup" ||
		fail "init not in the $h cgroup: $(cat "/proc/$pid/cgroup")"
	hs="$hs $h"
done
check rt delete --force "$id"
for h in $hs unified; do
	[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "cgroup $h left after delete"
done

# device rules: devices.list keeps the listed order after a deny-all; the defaults keep /dev/null usable
if [ -d /sys/fs/cgroup/devices ]; then
	bundle_set "$B" '
c["process"]["args"] = ["sh", "-c", "echo x >/dev/null && echo ok >/dev/null && sleep 100"]
c["linux"]["resources"] = {"devices": [{"allow": False, "access": "rwm"},
                                       {"allow": True, "type": "c", "major": 10, "minor": 229, "access": "rwm"},
                                       {"allow": True, "type": "b", "major": 8, "minor": 20, "access": "r"}]}
'
	rt run -d --pid-file "$T/pid" --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d with device rules failed"
	[ "$(cgfile devices "$id" devices.list | head -2 | tr '\n' ,)" = "c 10:229 rwm,b 8:20 r," ] ||
		fail "devices.list: $(cgfile devices "$id" devices.list)"
	cgfile devices "$id" devices.list | grep -qx "c 1:3 rwm" || fail "/dev/null not allowed: $(cgfile devices "$id" devices.list)"
	! cgfile devices "$id" devices.list | grep -q "^a " || fail "devices.list still allows all"
	sleep 0.3
	st=$(awk '{print $3}' "/proc/$(cat "$T/pid")/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ] || fail "the container could not write /dev/null (init gone)"
	check rt delete --force "$id"
fi

# cpus outside the parent's set: create fails and leaves no cgroup behind
bundle_set "$B" 'c["linux"]["resources"] = {"cpu": {"cpus": "4095"}}'
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 && fail "cpus 4095 was accepted"
for h in $hs unified; do
	[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "cgroup $h left after a failed create"
done

# resources this host can't honour are refused by name, and leave no cgroup:
# net_cls/net_prio (v1 only) when not mounted, a blkio weight without a
# proportional I/O scheduler (no weight file)
refuse() {
	local what=$1 want=$2
	bundle_set "$B" "c['linux']['resources'] = $what"
	expect_fail '!' rt run -d --bundle "$B" "$id"
	expect_output "$want" "$what: not refused by name"
	for h in $hs unified; do
		[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "cgroup $h left after a refused $what"
	done
	[ ! -e "$RTROOT/$id" ] || fail "state left after a refused $what"
}
mountpoint -q /sys/fs/cgroup/net_cls ||
	refuse '{"network": {"classID": 1048577}}' "linux.resources.network.classID: this host mounts no v1 net_cls"
mountpoint -q /sys/fs/cgroup/net_prio ||
	refuse '{"network": {"priorities": [{"name": "lo", "priority": 3}]}}' "linux.resources.network.priorities: this host mounts no v1 net_prio"
[ -e /sys/fs/cgroup/blkio/blkio.weight ] || [ -e /sys/fs/cgroup/blkio/blkio.bfq.weight ] ||
	refuse '{"blockIO": {"weight": 300}}' "linux.resources.blockIO.weight: this host's blkio controller has no .blkio.weight."
# ... and applied where the controllers are there: classid and one
# ifpriomap line land in the container's cgroup, the init is in it, and
# delete removes it. This host mounts no net_cls/net_prio; the VM test
# cgroup_comount runs this test with the two mounted together, as systemd
# mounts them (with a comounted hierarchy libcgroup once removed the one
# directory twice and delete failed on ENOENT -- while `delete --force`
# said it was done). Not mounted here for the test: a v1 hierarchy outlives
# its unmount in the kernel for as long as old tasks' css_sets refer to it,
# and CRIU then trips over it in every later dump and restore.
if mountpoint -q /sys/fs/cgroup/net_cls && mountpoint -q /sys/fs/cgroup/net_prio; then
	bundle_set "$B" 'c["process"]["args"] = ["sleep", "100"]
c["linux"]["resources"] = {"network": {"classID": 1048577, "priorities": [{"name": "lo", "priority": 3}]}}'
	rt run -d --pid-file "$T/pid" --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d with network resources failed"
	[ "$(cgfile net_cls "$id" net_cls.classid)" = 1048577 ] || fail "net_cls.classid: $(cgfile net_cls "$id" net_cls.classid)"
	cgfile net_prio "$id" net_prio.ifpriomap | grep -qx "lo 3" || fail "net_prio.ifpriomap: $(cgfile net_prio "$id" net_prio.ifpriomap)"
	grep -q "net_cls.*:/$CGPARENT/$id\$" "/proc/$(cat "$T/pid")/cgroup" || fail "init not in the net_cls cgroup: $(cat "/proc/$(cat "$T/pid")/cgroup")"
	check rt delete --force "$id"
	[ ! -e "/sys/fs/cgroup/net_cls/$CGPARENT/$id" ] || fail "the net_cls cgroup is left after delete"
	[ ! -e "$RTROOT/$id" ] || fail "delete --force left the container's state"
fi

# hugepageLimits: on the v1 hugetlb hierarchy, or (this host) in the
# cgroup2 one; a page size the host has no pool for is refused by name
if [ -d /sys/kernel/mm/hugepages/hugepages-2048kB ]; then
	bundle_set "$B" 'c["process"]["args"] = ["sleep", "100"]
c["linux"]["resources"] = {"hugepageLimits": [{"pageSize": "2MB", "limit": 4194304}]}'
	hfile=
	if [ -d /sys/fs/cgroup/hugetlb ]; then
		hfile=/sys/fs/cgroup/hugetlb/$CGPARENT/$id/hugetlb.2MB.limit_in_bytes
	elif grep -qw hugetlb /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null; then
		hfile=/sys/fs/cgroup/unified/$CGPARENT/$id/hugetlb.2MB.max
	fi
	if [ -n "$hfile" ]; then
		# -d hands the caller's stdio to the container (as runc does): run
		# inside a $(...) it held the pipe, and the test waited out the sleep
		rt run -d --bundle "$B" "$id" </dev/null >"$T/hp.out" 2>&1 || fail "run -d with a 2MB hugepage limit failed: $(cat "$T/hp.out")"
		[ "$(cat "$hfile")" = 4194304 ] || fail "$hfile: $(cat "$hfile" 2>&1), want 4194304"
		check rt delete --force "$id"
		refuse '{"hugepageLimits": [{"pageSize": "4MB", "limit": 4194304}]}' \
			"linux.resources.hugepageLimits: pageSize 4MB: this host has no huge pages of that size"
	else
		refuse '{"hugepageLimits": [{"pageSize": "2MB", "limit": 4194304}]}' \
			"linux.resources.hugepageLimits: this host has no hugetlb cgroup controller"
	fi
fi
# In a cgroup namespace, /sys/fs/cgroup holds the v1 hierarchies, each
# rooted at the container's own cgroup (read from inside the namespace,
# the host's mounts have roots "/.." that once hid them all: the container
# got cgroup2 alone). The container makes a sub-cgroup in two hierarchies
# only and moves a task in; delete --force removes the lot, and the state
# (libcgroup's recursive walk failed on ENOENT in the others, and delete
# --force took that for "already gone", exit 0, state kept).
bundle_set "$B" 'c["process"]["args"] = ["sleep", "1000"]
c["linux"].pop("resources", None)
c["mounts"].append({"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
                    "options": ["nosuid", "noexec", "nodev", "relatime"]})
if not any(n["type"] == "cgroup" for n in c["linux"]["namespaces"]):
    c["linux"]["namespaces"].append({"type": "cgroup"})'
rt run -d --pid-file "$T/pid" --bundle "$B" "$id" </dev/null >"$T/ns.out" 2>&1 || fail "run -d in a cgroup namespace: $(cat "$T/ns.out")"
out=$(rt exec "$id" sh -c 'sleep 1000 >/dev/null 2>&1 & p=$!; for h in memory freezer; do mkdir /sys/fs/cgroup/$h/sub && echo $p >/sys/fs/cgroup/$h/sub/cgroup.procs || exit 1; done; cat /sys/fs/cgroup/memory/cgroup.procs; ls /sys/fs/cgroup' 2>&1) ||
	fail "sub-cgroups in the container's namespace: $out"
echo "$out" | grep -qx 1 || fail "the container's memory hierarchy is not rooted at its cgroup (no pid 1 in it): $out"
for h in memory freezer cpuset; do
	echo "$out" | grep -qx "$h" || fail "no $h hierarchy under /sys/fs/cgroup in the container: $out"
done
[ -d "/sys/fs/cgroup/memory/$CGPARENT/$id/sub" ] && [ ! -e "/sys/fs/cgroup/cpu/$CGPARENT/$id/sub" ] ||
	fail "the sub-cgroup is not where it should be on the host"
# exec --cgroup: into the sub-cgroup of one hierarchy, the container's own in the others; refused by name outside it
out=$(rt exec --cgroup memory,freezer:sub "$id" cat /proc/self/cgroup 2>&1) || fail "exec --cgroup memory,freezer:sub: $out"
echo "$out" | grep -q ':memory:/sub$' && echo "$out" | grep -q ':freezer:/sub$' && echo "$out" | grep -q ':cpu:/$' ||
	fail "exec --cgroup memory,freezer:sub: $out"
out=$(rt exec --cgroup sub "$id" true 2>&1) && fail "exec --cgroup sub (not made in cpu) succeeded"
echo "$out" | grep -q "adding pid [0-9]* to cgroups: write /sys/fs/cgroup/[a-z_]*/$CGPARENT/$id/sub/cgroup.procs: no such file or directory" ||
	fail "exec --cgroup into a sub-cgroup that is not there: $out"
out=$(rt exec --cgroup ../.. "$id" true 2>&1) && fail "exec --cgroup ../.. succeeded"
echo "$out" | grep -q -- "--cgroup: ../.. is not a sub cgroup path" || fail "exec --cgroup ../..: $out"
out=$(rt exec --cgroup whaaat:/ "$id" true 2>&1) && fail "exec --cgroup whaaat:/ succeeded"
echo "$out" | grep -q "unknown controller \`whaaat\`" || fail "exec --cgroup whaaat:/: $out"
[ "$(cat "/sys/fs/cgroup/memory/$CGPARENT/cgroup.procs")" = "" ] || fail "a refused exec left a task in the parent cgroup"
check rt delete --force "$id"
[ ! -e "$RTROOT/$id" ] || fail "delete --force said done and kept the container's state"
rt state "$id" >/dev/null 2>&1 && fail "the container is still there after delete --force"
for h in $hs unified; do
	[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "cgroup $h left after delete --force of the sub-cgroups"
done
echo ok
