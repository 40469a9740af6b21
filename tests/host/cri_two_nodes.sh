#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A pod's container moves to another node, the Kubernetes way, on cryo and
# on runc: two nodes (network namespaces, each its own containerd 2.x, CNI
# bridge, pod subnet and registry mirror) joined by a veth pair, and a
# client outside both (a third namespace behind node A) that reads the
# counter over TCP. Checkpoint on A (the kubelet's API), carry the
# archive to B, restore it there in a new pod (CreateContainer with the
# archive), delete the pod on A. The restored counter goes on from its
# checkpointed value on B; the client sees A's address go silent and
# reconnects to the pod's new address on B (a pod restored elsewhere gets
# that node's address, as any new pod: a Service would hide the move),
# where the count is never below what it read from A.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/cri.sh"
cri_need
cri_need_criu

cri_node a 1
cri_node b 2
cri_ns c
cri_wire a 10.213.250.1/24 b 10.213.250.2/24
cri_wire a 10.213.251.1/24 c 10.213.251.2/24
cri_in a ip route add 10.213.2.0/24 via 10.213.250.2
cri_in b ip route add default via 10.213.250.1
cri_in c ip route add default via 10.213.251.1
cri_images

# the client's view: the count in the counter's status line, 0 when nobody answers
client() {
	local s
	s=$(cri_tcp_status c "$1")
	case $s in *" ok "*) echo "${s%% *}" ;; *) echo 0 ;; esac
}

for h in cryo runc; do
	log "handler $h"
	cri_counter a "mv-$h" "$h"
	apod=$CRI_POD acid=$CRI_CID aip=$CRI_IP
	check cri a exec -s "$acid" sh -c "echo from-a-$h > /data/marker"
	seen=$(client "$aip")
	[ "$seen" -gt 0 ] || fail "[$h] the client outside cannot reach the pod on A at $aip"

	out=$(cri a kubelet-checkpoint --dir "$T/a/checkpoints" cryo-test "mv-$h" counter 2>&1) ||
		fail "[$h] CheckpointContainer on A: $out"
	arch=$(cri_archive_json "$out")
	at=$(client "$aip")
	[ "$at" -ge "$seen" ] || fail "[$h] the pod on A stopped answering after the checkpoint"
	mkdir -p "$T/b/checkpoints"
	cp "$arch" "$T/b/checkpoints/" || fail "carry the archive"

	cri_restore b "mv-$h" "$h" "$T/b/checkpoints/${arch##*/}"
	bpod=$CRI_POD bcid=$CRI_CID
	bip=$(cri_pod_ip b "$bpod")
	case $bip in 10.213.2.*) ;; *) fail "[$h] the restored pod's address on B is $bip" ;; esac
	[ "$(cri b exec -s "$bcid" cat /data/marker)" = "from-a-$h" ] || fail "[$h] the rootfs file did not move"

	# delete on A, as the workload's controller would once it runs on B
	check cri a rmp -f "$apod"
	[ "$(client "$aip")" = 0 ] || fail "[$h] A's address still answers after its pod was removed"
	got=$(client "$bip")
	[ "$got" -ge "$seen" ] || fail "[$h] the client reconnected to B ($bip) and read $got, below $seen read from A"
	cri_wait_count b "$bcid" "$got" || fail "[$h] the counter does not count on B"
	log "[$h] read $seen on A ($aip), checkpointed, restored on B: the client reconnects to $bip and reads $got"
	check cri b rmp -f "$bpod"
done
echo "PASS cri_two_nodes (handlers cryo and runc)"
