#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The kubelet's checkpoint API (POST /checkpoint/{ns}/{pod}/{container},
# feature gate ContainerCheckpoint) on cryo and on runc, through
# containerd 2.x's CRI: CheckpointContainer writes the archive where the
# kubelet names it (checkpoint-<pod>_<namespace>-<container>-<time>.tar);
# the container keeps running (its count goes on, it still answers on
# TCP, the CRI says RUNNING); the archive holds what containerd puts there
# (CRIU's images, spec.dump, config.dump, status.dump, rootfs-diff.tar),
# and for cryo its manifest and signature, which `cryo inspect` verifies
# with the node's key.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/cri.sh"
cri_one_node
K=$T/kubelet/checkpoints

for h in cryo runc; do
	log "handler $h"
	cri_counter a "ck-$h" "$h"
	cid=$CRI_CID pod=$CRI_POD ip=$CRI_IP
	check cri a exec -s "$cid" sh -c "echo before-$h > /data/marker"
	before=$(cri_count a "$cid")
	out=$(cri a kubelet-checkpoint --dir "$K" cryo-test "ck-$h" counter 2>&1) ||
		fail "[$h] CheckpointContainer: $out $(tail -3 "$T/a/failed-calls.log" 2>/dev/null)"
	arch=$(cri_archive_json "$out")
	case ${arch##*/} in "checkpoint-ck-${h}_cryo-test-counter-"*Z.tar) ;; *) fail "[$h] archive name ${arch##*/}" ;; esac
	[ -s "$arch" ] || fail "[$h] no archive at $arch"
	[ "$(stat -c %a "$arch")" = 600 ] || fail "[$h] the archive is mode $(stat -c %a "$arch"), not 600"
	log "[$h] $(basename "$arch"): $(du -k "$arch" | cut -f1) KiB in $(echo "$out" | "$CRI_PY" -c 'import json,sys; print(json.load(sys.stdin)["seconds"])') s"

	# the kubelet checkpoints, it does not stop
	cri_wait_count a "$cid" "$before" || fail "[$h] the counter stopped after the checkpoint"
	[ "$(cri_ctr_state a "$cid")" = CONTAINER_RUNNING ] || fail "[$h] after the checkpoint: $(cri_ctr_state a "$cid")"
	case $(cri_tcp_status a "$ip") in *" ok "*) ;; *) fail "[$h] the TCP listener does not answer after the checkpoint" ;; esac
	if [ "$h" = cryo ]; then
		fz=$(cri_cryo a freezer-state "$cid") || fail "freezer-state: $fz"
		[ "$fz" = RUNNING ] || fail "[cryo] the container is $fz after the checkpoint"
		[ -z "$(ls -A "$T/a/cryo-root/k8s.io/.holds" 2>/dev/null)" ] || fail "[cryo] holds left: $(ls "$T/a/cryo-root/k8s.io/.holds")"
	fi

	# what containerd puts in the archive
	tar -tf "$arch" >"$T/list-$h" || fail "[$h] the archive is no tar"
	for f in spec.dump config.dump status.dump rootfs-diff.tar stats-dump checkpoint/inventory.img checkpoint/pstree.img; do
		grep -qx "$f" "$T/list-$h" || fail "[$h] the archive has no $f: $(tr '\n' ' ' <"$T/list-$h")"
	done
	grep -q '^checkpoint/pages-[0-9]*\.img$' "$T/list-$h" || fail "[$h] the archive has no page images"
	mkdir -p "$T/x-$h"
	tar -C "$T/x-$h" -xf "$arch" || fail "[$h] extract the archive"
	"$CRI_PY" - "$T/x-$h" "$cid" <<'EOF' || fail "[$h] config.dump / spec.dump"
import json, os, sys
d, cid = sys.argv[1], sys.argv[2]
cfg = json.load(open(os.path.join(d, "config.dump")))
assert cfg["id"] == cid, cfg["id"]
assert cfg["rootfsImageRef"].startswith("localhost:5000/cryo/counter@sha256:"), cfg["rootfsImageRef"]
spec = json.load(open(os.path.join(d, "spec.dump")))
assert spec["process"]["args"][0] == "/bin/cryo-test-counter", spec["process"]["args"]
EOF
	if [ "$h" = cryo ]; then
		for f in checkpoint/manifest.pb checkpoint/manifest.sig; do
			grep -qx "$f" "$T/list-cryo" || fail "[cryo] the archive has no $f"
		done
		ins=$("$CRYO_BIN" inspect --verify-key "$T/node-key.pub" "$T/x-cryo/checkpoint" 2>&1) ||
			fail "[cryo] cryo inspect of the archive's checkpoint/: $ins"
		echo "$ins" | grep -qi "signature.*valid\|valid.*signature\|verified" ||
			fail "[cryo] inspect does not say the signature is valid: $ins"
		echo "$ins" | grep -q "snapshot\|rootfs" || fail "[cryo] no rootfs snapshot in the image: $ins"
	else
		grep -q '^checkpoint/manifest' "$T/list-runc" && fail "[runc] a cryo manifest in runc's archive?"
	fi
	check cri a rmp -f "$pod"
done
echo "PASS cri_checkpoint (handlers cryo and runc)"
