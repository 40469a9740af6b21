#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Faults and bad input through containerd 2.x's CRI:
#  - CheckpointContainer of a stopped container (cryo and runc: refused by
#    the CRI), and of a paused one (paused with the runtime itself: both
#    handlers must end alike, and the container must not be left frozen
#    by the checkpoint);
#  - cryo failing at each checkpoint step (CRYO_FAULT), and SIGKILLed
#    while stopped before each step (CRYO_PAUSE_AT), while containerd
#    invokes it: the CRI call fails (with cryo's message for a fault), the
#    container runs on unfrozen, no archive, and `cryo recover` finds no
#    hold or staging dir left;
#  - damaged or crafted archives given to CreateContainer: truncated,
#    a page image with one byte changed, the signature removed, a rootfs
#    diff that points outside: refused with a clear error, nothing
#    restored (no running container, no cryo state), no host path written;
#  - StopPodSandbox + RemovePodSandbox of everything: nothing left.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/cri.sh"
cri_one_node
K=$T/kubelet/checkpoints
canary=/tmp/cryo-cri-canary-$$
at_exit "rm -f $canary"

steps=$(checkpoint_steps)
echo "$steps" | grep -qw criu-dump || fail "no checkpoint steps from \`cryo features\`: $steps"

# --- stopped and paused containers ---
declare -A paused_result
for h in cryo runc; do
	cri_counter a "stp-$h" "$h"
	check cri a stop -t 1 "$CRI_CID"
	expect_fail 1 cri a checkpoint --export "$T/stopped-$h.tar" "$CRI_CID"
	expect_output -E "CONTAINER_EXITED|only .*RUNNING" "[$h] checkpoint of a stopped container"
	[ ! -e "$T/stopped-$h.tar" ] || fail "[$h] an archive of a stopped container was written"
	check cri a rmp -f "$CRI_POD"

	cri_counter a "psd-$h" "$h"
	rtroot=$T/a/$h-root/k8s.io
	if [ "$h" = cryo ]; then check cri_cryo a pause "$CRI_CID"; else check runc --root "$rtroot" pause "$CRI_CID"; fi
	if out=$(cri a checkpoint --export "$T/paused-$h.tar" "$CRI_CID" 2>&1); then r=ok; else r=refused; fi
	if [ "$h" = cryo ]; then st=$(cri_cryo a state "$CRI_CID"); else st=$(runc --root "$rtroot" state "$CRI_CID"); fi
	st=$(echo "$st" | "$CRI_PY" -c 'import json,sys; print(json.load(sys.stdin)["status"])')
	paused_result[$h]="$r, then $st"
	log "[$h] checkpoint of a paused container: $r ($(echo "$out" | tail -1 | cut -c1-200)), then $st"
	check cri a rmp -f "$CRI_POD"
done
[ "${paused_result[cryo]}" = "${paused_result[runc]}" ] ||
	fail "a paused container: cryo ${paused_result[cryo]}, runc ${paused_result[runc]}"

# --- cryo fails, or is killed, at each step while containerd drives it ---
cri_counter a flt cryo
cid=$CRI_CID
ok_after() {
	local what=$1 c fz
	[ "$(cri_ctr_state a "$cid")" = CONTAINER_RUNNING ] || fail "$what: the CRI says $(cri_ctr_state a "$cid")"
	fz=$(cri_cryo a freezer-state "$cid") || fail "$what: freezer-state: $fz"
	[ "$fz" = RUNNING ] || fail "$what: the container is left $fz"
	c=$(cri_count a "$cid")
	cri_wait_count a "$cid" "$c" || fail "$what: the counter does not count"
	out=$(cri_cryo a recover 2>&1) || fail "$what: cryo recover: $out"
	[ -z "$(ls -A "$T/a/cryo-root/k8s.io/.holds" 2>/dev/null)" ] || fail "$what: holds left: $(ls "$T/a/cryo-root/k8s.io/.holds")"
	ls -a "$T/a/tmp" "$T/a/root/io.containerd.grpc.v1.cri/containers/$cid" 2>/dev/null | grep -q staging &&
		fail "$what: a staging dir is left"
	ls "$K"/*.tar >/dev/null 2>&1 && fail "$what: an archive was written: $(ls "$K")"
	true
}
for s in $steps; do
	cri_fault a "CRYO_FAULT=$s"
	out=$(cri a kubelet-checkpoint --dir "$K" cryo-test flt counter 2>&1) && fail "CRYO_FAULT=$s: the checkpoint succeeded"
	case $s in
	finish) ;; # (its failure is after the commit: containerd still fails the call)
	*) echo "$out" | grep -q "injected fault\|CRYO_FAULT" || fail "CRYO_FAULT=$s: the CRI error does not carry cryo's: $out" ;;
	esac
	cri_fault a
	ok_after "CRYO_FAULT=$s"
	rm -f "$K"/*.tar
done
log "a fault at each of the $(echo $steps | wc -w) steps: the CRI call fails with cryo's message, the pod runs on"

killed=0
# (before each step: the freezer's own points inside them would also stop
# the shim's `cryo pause`, which freezes the container under containerd)
for p in $steps; do
	cri_fault a "CRYO_PAUSE_AT=$p"
	cri a kubelet-checkpoint --dir "$K" cryo-test flt counter >"$T/kill.out" 2>&1 &
	call=$!
	pid=""
	for _ in $(seq 200); do
		for q in $(pgrep -f "checkpoint .*--leave-running $cid" 2>/dev/null); do
			[ "$(cat /proc/$q/comm 2>/dev/null)" = cryo ] && [ "$(task_state "$q")" = T ] && pid=$q
		done
		[ -n "$pid" ] && break
		kill -0 $call 2>/dev/null || break
		sleep 0.05
	done
	cri_fault a
	if [ -z "$pid" ]; then
		wait $call
		fail "cryo did not stop at $p: $(cat "$T/kill.out")"
	fi
	kill -9 "$pid"
	wait $call && fail "killed at $p: the CRI call succeeded"
	killed=$((killed + 1))
	ok_after "killed at $p"
	rm -f "$K"/*.tar
done
[ $killed -ge 5 ] || fail "cryo was killed at only $killed points"
log "cryo SIGKILLed at $killed points of the checkpoint under containerd: the pod runs on, unfrozen, nothing left"
check cri a rmp -f "$CRI_POD"

# --- bad archives given to CreateContainer ---
# bad HANDLER NAME ARCHIVE PATTERN: refused at create or start, nothing restored
bad() {
	local h=$1 name=$2 arch=$3 pat=$4 pod cid out
	pod=$(cri_pod a "bad-$name-$h" "$h") || fail "RunPodSandbox"
	cri_ctr_config a "bad-$name-$h" counter "$arch"
	if cid=$(cri a create "$pod" "$T/a-bad-$name-$h-counter.json" "$T/a-bad-$name-$h.pod.json" 2>"$T/bad.err"); then
		cri a start "$cid" >/dev/null 2>"$T/bad.err" && fail "[$h] $name: the archive was restored"
	fi
	out=$(cat "$T/bad.err")
	echo "$out" | grep -qiE "$pat" || fail "[$h] $name: not the expected error ($pat): $out"
	[ -z "$(cri a ps -q -p "$pod")" ] || fail "[$h] $name: a container runs in the pod"
	if [ "$h" = cryo ]; then
		[ -z "$(cri_cryo a list -q | grep -v "^$(cri a inspectp "$pod" | "$CRI_PY" -c 'import json,sys; print(json.load(sys.stdin)["status"]["id"])')$")" ] ||
			fail "[cryo] $name: cryo has state for: $(cri_cryo a list -q)"
	fi
	[ ! -e "$canary" ] || fail "[$h] $name: the archive wrote $canary"
	log "[$h] $name: refused: $(echo "$out" | tail -1 | cut -c1-220)"
	check cri a rmp -f "$pod"
}
retar() { (cd "$1" && tar --numeric-owner -cf "$2" .); }

for h in cryo runc; do
	cri_counter a "orig-$h" "$h"
	out=$(cri a kubelet-checkpoint --dir "$K" cryo-test "orig-$h" counter 2>&1) || fail "[$h] checkpoint: $out"
	arch=$(cri_archive_json "$out")
	check cri a rmp -f "$CRI_POD"
	x=$T/x-$h
	mkdir -p "$x"
	tar -C "$x" -xf "$arch"

	head -c $(($(stat -c %s "$arch") / 3)) "$arch" >"$T/trunc-$h.tar"
	bad "$h" truncated "$T/trunc-$h.tar" "unexpected EOF|failed|error"

	# a rootfs diff whose entries point outside the rootfs
	cp -a "$x" "$x-diff"
	"$CRI_PY" - "$x-diff/rootfs-diff.tar" "$canary" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    data = b"owned\n"
    for name in ("../../../../../../../.." + sys.argv[2], sys.argv[2]):
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    ti = tarfile.TarInfo("data/escape")
    ti.type, ti.linkname = tarfile.SYMTYPE, "/tmp"
    t.addfile(ti)
EOF
	retar "$x-diff" "$T/diff-$h.tar"
	if [ "$h" = cryo ]; then
		# cryo puts its own rootfs snapshot back over it: the diff's escape is undone, nothing written outside
		pod=$(cri_pod a "diff-$h" "$h")
		cri_ctr_config a "diff-$h" counter "$T/diff-$h.tar"
		cid2=$(cri a create "$pod" "$T/a-diff-$h-counter.json" "$T/a-diff-$h.pod.json" 2>/dev/null) &&
			cri a start "$cid2" >/dev/null 2>&1
		[ ! -e "$canary" ] || fail "[$h] a crafted rootfs-diff.tar wrote $canary"
		check cri a rmp -f "$pod"
	fi

	if [ "$h" = cryo ]; then
		cp -a "$x" "$x-page"
		pg=$(ls "$x-page"/checkpoint/pages-*.img | head -1)
		printf '\xff' | dd of="$pg" bs=1 seek=4096 conv=notrunc status=none
		retar "$x-page" "$T/page-$h.tar"
		bad "$h" page-byte "$T/page-$h.tar" "digest|damaged|mismatch|corrupted"

		cp -a "$x" "$x-sig"
		rm "$x-sig/checkpoint/manifest.sig"
		retar "$x-sig" "$T/sig-$h.tar"
		bad "$h" unsigned "$T/sig-$h.tar" "sign"
	fi
done

# --- teardown leaves nothing ---
for p in $(cri a pods -q); do
	check cri a stopp "$p"
	check cri a rmp "$p"
done
left=$(find "$T/a/cryo-root" "$T/a/runc-root" -mindepth 2 ! \( -name .holds -type d -empty \) 2>/dev/null)
[ -z "$left" ] || fail "runtime state left: $left"
[ "$(cri_in a ip -o link show | grep -c veth)" = 0 ] || fail "veths left: $(cri_in a ip -o link show)"
[ "$(grep -c " $T/a/state/" /proc/self/mountinfo)" = 0 ] || fail "mounts left under the node's state"
echo "PASS cri_faults"
