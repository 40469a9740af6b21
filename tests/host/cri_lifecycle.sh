#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Kubernetes runs pods on cryo: containerd 2.x's CRI (a private instance in
# a network namespace of its own, tests/lib/cri.sh) with the runtime
# handlers `cryo` and `runc` side by side, driven by tests/cri/cri.py in
# the kubelet's order. For each handler: RunPodSandbox gives the pod a CNI
# address; PullImage, CreateContainer, StartContainer run the counter
# (memory checked, a status file in its rootfs, a TCP listener); ExecSync
# (output, exit code, a file written in the rootfs); ContainerStatus and
# ListContainers agree with `cryo state`; StopContainer, RemoveContainer,
# StopPodSandbox, RemovePodSandbox leave nothing (state, cgroups, links,
# mounts; the host check covers the host).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/cri.sh"
cri_need

cri_node a 1
cri_images

for h in cryo runc; do
	log "handler $h"
	cri_counter a "life-$h" "$h"
	pod=$CRI_POD cid=$CRI_CID ip=$CRI_IP
	case $ip in 10.213.1.*) ;; *) fail "[$h] the pod's CNI address is \`$ip\`, not in 10.213.1.0/24" ;; esac
	[ "$(cri_ctr_state a "$cid")" = CONTAINER_RUNNING ] || fail "[$h] ContainerStatus: $(cri_ctr_state a "$cid")"
	cri a ps -q | grep -qx "$cid" || fail "[$h] ListContainers (running) does not list $cid"

	# the counter's own checks: its status is "<count> ok ...", in its rootfs, and on its TCP port
	st=$(cri a exec -s "$cid" cat /data/status) || fail "[$h] ExecSync cat: $st"
	case $st in *" ok "*) ;; *) fail "[$h] the counter reports: $st" ;; esac
	tcp=$(cri_tcp_status a "$ip")
	case $tcp in *" ok "*) ;; *) fail "[$h] the counter's TCP listener at $ip:8080 answered \`$tcp\`" ;; esac
	expect_fail 7 cri a exec -s "$cid" sh -c 'echo out; echo err >&2; exit 7'
	expect_output "out" "[$h] ExecSync output"
	check cri a exec -s "$cid" sh -c 'echo written > /data/marker'
	[ "$(cri a exec -s "$cid" cat /data/marker)" = written ] || fail "[$h] the file written in the rootfs"
	out=$(cri a exec -s "$cid" hostname) && [ "$out" = "life-$h" ] || fail "[$h] hostname in the pod: $out"

	# what the runtime itself says (cryo: its state; runc: its own)
	if [ "$h" = cryo ]; then
		stj=$(cri_cryo a state "$cid") || fail "cryo state $cid: $stj"
	else
		stj=$(runc --root "$T/a/runc-root/k8s.io" state "$cid") || fail "runc state $cid: $stj"
	fi
	info=$(cri a inspect "$cid")
	"$CRI_PY" - "$stj" "$info" "$h" <<'EOF' || fail "[$h] the CRI and the runtime disagree"
import json, sys
st, info, h = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
assert st["status"] == "running", st["status"]
assert info["status"]["state"] == "CONTAINER_RUNNING", info["status"]["state"]
assert info["info"]["pid"] == st["pid"], (info["info"]["pid"], st["pid"])
assert st["id"] == info["status"]["id"]
EOF
	# the pod's own cgroup parent, as the kubelet gave it
	cg=$(cri a inspect "$cid" | "$CRI_PY" -c 'import json,sys; print(json.load(sys.stdin)["info"]["runtimeSpec"]["linux"]["cgroupsPath"])')
	case $cg in "/$CRI_CG/pod"*"/$cid") ;; *) fail "[$h] cgroupsPath \`$cg\`" ;; esac
	grep -qx "$(cri_cryo a state "$cid" 2>/dev/null | "$CRI_PY" -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null || echo none)" \
		"/sys/fs/cgroup/pids$cg/cgroup.procs" 2>/dev/null || [ "$h" = runc ] ||
		fail "[$h] the init is not in /sys/fs/cgroup/pids$cg"

	# stop: the CRI and the runtime agree again
	check cri a stop -t 2 "$cid"
	[ "$(cri_ctr_state a "$cid")" = CONTAINER_EXITED ] || fail "[$h] after StopContainer: $(cri_ctr_state a "$cid")"
	# (the shim deletes the runtime's container once its task exited)
	if [ "$h" = cryo ]; then
		s=$(cri_cryo a state "$cid" 2>&1) && fail "cryo still has $cid after StopContainer: $s"
		case $s in *"does not exist"*) ;; *) fail "cryo state after StopContainer: $s" ;; esac
	fi
	check cri a rm "$cid"
	cri a ps -a -q | grep -qx "$cid" && fail "[$h] RemoveContainer left $cid listed"
	check cri a stopp "$pod"
	check cri a rmp "$pod"
	[ -z "$(cri a pods -q)" ] || fail "[$h] pods left: $(cri a pods)"
done

log "nothing left behind"
left=$(find "$T/a/cryo-root" "$T/a/runc-root" -mindepth 2 ! \( -name .holds -type d -empty \) 2>/dev/null)
[ -z "$left" ] || fail "runtime state left: $left"
for d in /sys/fs/cgroup/*/"$CRI_CG"/*/*/; do
	[ -d "$d" ] && fail "cgroup left: $d"
done
links=$(cri_in a ip -o link show | grep -c veth)
[ "$links" = 0 ] || fail "veths left in the node: $(cri_in a ip -o link show)"
m=$(grep -c " $T/a/state/" /proc/self/mountinfo)
[ "$m" = 0 ] || fail "mounts left under the node's state: $(grep " $T/a/state/" /proc/self/mountinfo | head -3)"
echo "PASS cri_lifecycle (handlers cryo and runc)"
