#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Restore through containerd 2.x's CRI, on cryo and on runc: the counter is
# checkpointed as the kubelet does (it runs on), then restored into a new
# pod by the two routes containerd offers:
#   1. CreateContainer whose image is the checkpoint archive (a path),
#   2. CreateContainer whose image is a checkpoint OCI image (the archive as
#      its layer, the index annotated org.criu.checkpoint.container.name),
#      pulled from the registry: what a pod spec names
#      for the kubelet to restore.
# Each time, StartContainer brings it back: the count goes on from at least
# its checkpointed value (never from 1), the file written before the
# checkpoint is in the rootfs, the listener answers at the new pod's
# address, and the CRI says RUNNING. cryo restores only what the node's
# key signed (CRYO_VERIFY_KEY in the handler's wrapper).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/cri.sh"
cri_one_node
K=$T/kubelet/checkpoints

# restored HANDLER WHAT CKPT_COUNT: the container in CRI_CID came back as it was
restored() {
	local h=$1 what=$2 at=$3 c ip
	c=$(cri_count a "$CRI_CID")
	case $c in *" "* | 0) fail "[$h] $what: the restored counter reports \`$c\`" ;; esac
	[ "$c" -ge "$at" ] || fail "[$h] $what: the count went back: $c < $at at the checkpoint"
	cri_wait_count a "$CRI_CID" "$c" || fail "[$h] $what: the restored counter does not count"
	[ "$(cri a exec -s "$CRI_CID" cat /data/marker)" = "before-$h" ] || fail "[$h] $what: /data/marker lost"
	ip=$(cri_pod_ip a "$CRI_POD")
	case $(cri_tcp_status a "$ip") in *" ok "*) ;; *) fail "[$h] $what: no answer on $ip:8080" ;; esac
	[ "$(cri_ctr_state a "$CRI_CID")" = CONTAINER_RUNNING ] || fail "[$h] $what: $(cri_ctr_state a "$CRI_CID")"
	cri a inspect "$CRI_CID" | grep -q '"restored": "true"' || fail "[$h] $what: no restored annotation"
	log "[$h] $what: counting on from $c (checkpointed at >= $at), answering at $ip"
}

for h in cryo runc; do
	log "handler $h"
	cri_counter a "src-$h" "$h"
	src_pod=$CRI_POD src=$CRI_CID
	check cri a exec -s "$src" sh -c "echo before-$h > /data/marker"
	at=$(cri_count a "$src")
	out=$(cri a kubelet-checkpoint --dir "$K" cryo-test "src-$h" counter 2>&1) || fail "[$h] CheckpointContainer: $out"
	arch=$(cri_archive_json "$out")

	# 1. the archive itself as the image
	cri_restore a "dst-$h" "$h" "$arch"
	restored "$h" "from the archive" "$at"
	if [ "$h" = cryo ]; then
		grep -q "^cryo .*restore .*$CRI_CID => 0" "$T/a/calls.log" || fail "[cryo] the shim did not restore through cryo"
	fi
	check cri a rmp -f "$CRI_POD"

	# 2. the archive as a checkpoint OCI image in the registry
	cri_in a "$CRI_PY" "$CRI_IMAGE_PY" push-checkpoint --registry 127.0.0.1:5000 --repo "cryo/ckpt-$h" --tag 1 \
		--archive "$arch" --container counter >/dev/null || fail "[$h] push the checkpoint image"
	check cri a pull "$CRI_REG/cryo/ckpt-$h:1"
	cri_restore a "img-$h" "$h" "$CRI_REG/cryo/ckpt-$h:1"
	restored "$h" "from the checkpoint image" "$at"
	check cri a rmp -f "$CRI_POD"
	check cri a rmp -f "$src_pod"
done
echo "PASS cri_restore (handlers cryo and runc, from the archive and from a checkpoint image)"
