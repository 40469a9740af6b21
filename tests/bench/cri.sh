#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# cryo vs runc under Kubernetes' CRI (not a timed test): one containerd 2.x
# (tests/setup-cri.sh) with both runtime handlers, driven by tests/cri/cri.py
# as the kubelet drives it, the same counter workload (MEM MiB of touched
# memory, a TCP listener), rounds interleaved:
#
#   start       RunPodSandbox + CreateContainer + StartContainer -> the
#               counter answers (image already pulled)
#   checkpoint  CheckpointContainer (the kubelet's checkpoint API), archive
#               written
#   frozen      the container's frozen window in it: containerd pauses the
#               container, the runtime dumps it, containerd resumes it
#               (from the runtime calls' own start/end times)
#   restore     new pod + CreateContainer(archive) + StartContainer -> the
#               restored counter answers
#
# Prints medians and cryo/runc ratios.
#
#   tests/bench/cri.sh [ROUNDS] [MEM_MIB]    (default 5, 16)
#
# Runs as root on the host, under the host lock (flock /tmp/cryo-host.lock),
# with CRIU 4.2 (tests/setup-criu4.sh; CRYO_CRIU overrides).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/cri.sh"
ROUNDS=${1:-5}
MEM=${2:-16}
cri_need
cri_need_criu
cri_node a 1
cri_images
if [ "$MEM" != 16 ]; then
	cri_in a "$CRI_PY" "$CRI_IMAGE_PY" push --registry 127.0.0.1:5000 --repo cryo/counter --tag 1 \
		--rootfs "$T/img-rootfs" --entrypoint "[\"/bin/cryo-test-counter\", \"/data/status\", \"$MEM\", \"-\", \"-\", \"8080\"]" \
		>/dev/null || fail "push the counter image"
fi
check cri a pull "$CRI_REG/cryo/counter:1"
ms() { echo $(( $(date +%s%N) / 1000000 )); }
wait_answer() {
	local i
	for i in $(seq 400); do
		case $(cri_tcp_status a "$1") in *" ok "*) return 0 ;; esac
		sleep 0.01
	done
	return 1
}
# the frozen window of the last checkpoint of cid: pause's start to resume's end (ms)
frozen() {
	grep " $1 => 0 \[" "$T/a/calls.log" | grep -E "^(cryo|runc) .* (pause|resume) " | tail -2 |
		sed 's/.*\[\([0-9]*\) \([0-9]*\)\]$/\1 \2/' | tr '\n' ' ' |
		awk '{ printf "%d\n", ($4 - $1) / 1000000 }'
}

R=$T/results
: >"$R"
for r in $(seq "$ROUNDS"); do
	for h in cryo runc; do
		t0=$(ms)
		pod=$(cri_pod a "b$r-$h" "$h") || fail "runp"
		cri_ctr_config a "b$r-$h" counter "$CRI_REG/cryo/counter:1"
		cid=$(cri a create "$pod" "$T/a-b$r-$h-counter.json" "$T/a-b$r-$h.pod.json") || fail "create"
		cri a start "$cid" >/dev/null || fail "start"
		wait_answer "$(cri_pod_ip a "$pod")" || fail "[$h] the counter does not answer"
		t1=$(ms)
		out=$(cri a kubelet-checkpoint --dir "$T/ck" cryo-test "b$r-$h" counter) || fail "[$h] checkpoint"
		t2=$(ms)
		fz=$(frozen "$cid")
		arch=$(cri_archive_json "$out")
		t3=$(ms)
		cri_restore a "r$r-$h" "$h" "$arch"
		wait_answer "$(cri_pod_ip a "$CRI_POD")" || fail "[$h] the restored counter does not answer"
		t4=$(ms)
		echo "$h $((t1 - t0)) $((t2 - t1)) $fz $((t4 - t3))" >>"$R"
		echo "# round $r $h: start $((t1 - t0)) ms, checkpoint $((t2 - t1)) ms (frozen $fz ms), restore $((t4 - t3)) ms"
		cri a rmp -f "$pod" >/dev/null
		cri a rmp -f "$CRI_POD" >/dev/null
		rm -f "$arch"
	done
done
"$CRI_PY" - "$R" "$ROUNDS" "$MEM" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
cols = ["start -> running", "CheckpointContainer", "  frozen window", "restore -> running"]
med = {h: [statistics.median(int(r[i + 1]) for r in rows if r[0] == h) for i in range(4)] for h in ("cryo", "runc")}
print(f"CRI (containerd 2.x), counter with {sys.argv[3]} MiB, {sys.argv[2]} rounds, medians in ms")
print(f"{'':22} {'cryo':>8} {'runc':>8} {'cryo/runc':>10}")
for i, c in enumerate(cols):
    a, b = med["cryo"][i], med["runc"][i]
    print(f"{c:22} {a:8.0f} {b:8.0f} {a / b if b else float('nan'):10.2f}")
EOF
