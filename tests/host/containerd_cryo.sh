#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# containerd drives cryo through its runc shim v2 (`ctr run --runc-binary`):
# a private containerd (own root, state, socket and config under $T,
# stopped at the end), a busybox image made here as an OCI archive (no
# registry), then run --rm (output, exit code), run -d of a counter, ps,
# pause/resume, exec, checkpoint/restore (where CRIU works), kill, delete —
# and nothing of it left behind. Every call the shim makes to cryo is
# recorded ($T/argv.log) and printed at the end.
. "$(dirname "$0")/../lib/common.sh"

show_calls() {
	echo "# the shim's calls to cryo:"
	sed "s|$T|\$T|g" "$T/argv.log" 2>/dev/null | sort | uniq -c | sed 's/^/#   /'
}
fail() {
	show_calls >&2
	echo "FAIL $TEST_NAME: $*" >&2
	exit 1
}

need_root
need_cmd containerd
need_cmd ctr
need_cmd containerd-shim-runc-v2
need_cmd python3
[ -x /bin/busybox ] || skip "needs busybox-static (/bin/busybox)"
file -b /bin/busybox 2>/dev/null | grep -q static || ldd /bin/busybox 2>&1 | grep -q "not a dynamic" ||
	skip "/bin/busybox is not static"

NS="cryotest$$"
SOCK="$T/containerd.sock"
IMG="docker.io/library/cryo-busybox:test"
RROOT="$T/runc-root"   # cryo's --root as the shim passes it (--runc-root)
WRAP="$T/cryo-runc"
ctr_() { timeout 120 ctr -a "$SOCK" -n "$NS" "$@"; }
RUNOPTS=(--snapshotter native --runc-binary "$WRAP" --runc-root "$RROOT" --cgroup "/$NS/CID")
run_opts() { printf '%s\n' "${RUNOPTS[@]/CID/$1}"; }

# --- the runtime the shim calls: cryo, with its argv recorded and CRIU picked ---
CRIU4=${CRYO_CRIU:-/opt/cryo-criu4/sbin/criu}
{
	echo '#!/bin/sh'
	[ -x "$CRIU4" ] && echo "export CRYO_CRIU='$CRIU4'"
	echo "'$CRYO_BIN' \"\$@\""
	echo 'rc=$?'
	echo "printf '%s => %s\\n' \"\$*\" \$rc >>'$T/argv.log'"
	echo 'exit $rc'
} >"$WRAP"
chmod 755 "$WRAP"

# --- busybox as an OCI image layout, by hand ---
mkdir -p "$T/rootfs/bin" "$T/rootfs/tmp" "$T/rootfs/proc" "$T/rootfs/sys" "$T/rootfs/dev" "$T/rootfs/etc" "$T/oci/blobs/sha256"
cp /bin/busybox "$T/rootfs/bin/busybox"
for a in sh echo cat sleep ls true false ps; do ln -s busybox "$T/rootfs/bin/$a"; done
tar -C "$T/rootfs" --numeric-owner --owner=0 --group=0 -cf "$T/layer.tar" .
python3 - "$T" "$IMG" <<'EOF' || fail "OCI layout"
import hashlib, json, os, shutil, sys
t, name = sys.argv[1], sys.argv[2]
blobs = os.path.join(t, "oci", "blobs", "sha256")
def put(data):
    d = hashlib.sha256(data).hexdigest()
    open(os.path.join(blobs, d), "wb").write(data)
    return "sha256:" + d, len(data)
layer = open(os.path.join(t, "layer.tar"), "rb").read()
ldig, lsize = put(layer)
config = {"architecture": "amd64", "os": "linux",
          "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"], "WorkingDir": "/"},
          "rootfs": {"type": "layers", "diff_ids": [ldig]}}
cdig, csize = put(json.dumps(config).encode())
manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cdig, "size": csize},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": ldig, "size": lsize}]}
mdig, msize = put(json.dumps(manifest).encode())
index = {"schemaVersion": 2, "manifests": [{
    "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": mdig, "size": msize,
    "platform": {"architecture": "amd64", "os": "linux"},
    "annotations": {"io.containerd.image.name": name, "org.opencontainers.image.ref.name": "test"}}]}
open(os.path.join(t, "oci", "index.json"), "w").write(json.dumps(index))
open(os.path.join(t, "oci", "oci-layout"), "w").write(json.dumps({"imageLayoutVersion": "1.0.0"}))
EOF
tar -C "$T/oci" -cf "$T/busybox-oci.tar" . || fail "OCI archive"

# --- a private containerd ---
cat >"$T/config.toml" <<EOF
version = 2
root = "$T/root"
state = "$T/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = "$T/debug.sock"
[metrics]
  address = ""
EOF
# /run/containerd/s holds the shims' sockets whatever the config says
ls -d /tmp/ctd-checkpoint* /tmp/ctrd-checkpoint* >"$T/tmpdirs.before" 2>/dev/null
RUNDIR_EXISTED=0
[ -d /run/containerd ] && RUNDIR_EXISTED=1
containerd --config "$T/config.toml" >"$T/containerd.log" 2>&1 &
CTRD=$!
stop_containerd() {
	local c
	for c in $(ctr -a "$SOCK" -n "$NS" tasks ls -q 2>/dev/null); do
		ctr -a "$SOCK" -n "$NS" tasks kill -s KILL "$c"
		sleep 0.5
		ctr -a "$SOCK" -n "$NS" tasks delete -f "$c"
	done
	for c in $(ctr -a "$SOCK" -n "$NS" containers ls -q 2>/dev/null); do
		ctr -a "$SOCK" -n "$NS" containers delete "$c"
	done
	kill "$CTRD" 2>/dev/null
	wait "$CTRD" 2>/dev/null
	# shims outlive containerd by design: end ours (their cmdline names our socket)
	pkill_ours
	if [ $RUNDIR_EXISTED = 0 ]; then
		find /run/containerd -depth -type d -empty -delete 2>/dev/null
	fi
	# containerd's own checkpoint scratch dirs (ctr's and the shim's) made by this run
	for d in /tmp/ctd-checkpoint* /tmp/ctrd-checkpoint*; do
		[ -d "$d" ] && ! grep -qxF "$d" "$T/tmpdirs.before" && rm -rf "$d"
	done
	umount -R "$T/state" 2>/dev/null
	umount -R "$T/root" 2>/dev/null
}
pkill_ours() {
	local p
	for p in $(pgrep -f "containerd-shim-runc-v2 -namespace $NS " 2>/dev/null); do kill -9 "$p"; done
}
at_exit "stop_containerd"
at_exit "for c in /sys/fs/cgroup/*/$NS /sys/fs/cgroup/unified/$NS; do cg_remove \"\$c\"; done"
for _ in $(seq 100); do
	ctr -a "$SOCK" version >/dev/null 2>&1 && break
	kill -0 $CTRD 2>/dev/null || fail "containerd died: $(tail -5 "$T/containerd.log")"
	sleep 0.1
done
ctr -a "$SOCK" version >/dev/null 2>&1 || fail "containerd did not come up: $(tail -5 "$T/containerd.log")"

check ctr_ images import --snapshotter native "$T/busybox-oci.tar" >/dev/null
ctr_ images ls -q | grep -qxF "$IMG" || fail "image not imported: $(ctr_ images ls)"

# --- run --rm: output and exit code ---
log "run --rm"
out=$(ctr_ run --rm $(run_opts c1) "$IMG" c1 sh -c 'echo hello from cryo; exit 7' 2>&1) && rc=0 || rc=$?
[ $rc = 7 ] || fail "run --rm exited $rc, expected 7: $out $(tail -3 "$T/containerd.log")"
[ "$out" = "hello from cryo" ] || fail "run --rm printed: $out"
ctr_ containers ls -q | grep -qx c1 && fail "run --rm left container c1"

# --- run -d a counter ---
log "run -d a counter"
check ctr_ run -d $(run_opts c2) "$IMG" c2 sh -c 'i=0; while :; do i=$((i+1)); echo $i >/count; sleep 0.1; done'
ROOTFS="$T/state/io.containerd.runtime.v2.task/$NS/c2/rootfs"
# (the counter rewrites the file: an empty read is a moment between truncate and write)
count() {
	local v
	v=$(cat "$ROOTFS/count" 2>/dev/null)
	case $v in '' | *[!0-9]*) sleep 0.05; v=$(cat "$ROOTFS/count" 2>/dev/null) ;; esac
	case $v in '' | *[!0-9]*) echo 0 ;; *) echo "$v" ;; esac
}
wait_count_above() {
	local n=$1
	for _ in $(seq 100); do
		[ "$(count)" -gt "$n" ] && return 0
		sleep 0.1
	done
	return 1
}
wait_count_above 2 || fail "the counter does not count ($(count)); tasks: $(ctr_ tasks ls)"
ctr_ tasks ls | grep -E "^c2 +[0-9]+ +RUNNING" >/dev/null || fail "c2 not RUNNING: $(ctr_ tasks ls)"

log "ps"
pids=$(ctr_ tasks ps c2 | awk 'NR>1 {print $1}')
[ -n "$pids" ] || fail "tasks ps c2 lists no process: $(ctr_ tasks ps c2 2>&1)"

log "pause/resume"
check ctr_ tasks pause c2
ctr_ tasks ls | grep -E "^c2 .*PAUSED" >/dev/null || fail "c2 not PAUSED: $(ctr_ tasks ls)"
a=$(count); sleep 0.5; b=$(count)
[ "$a" = "$b" ] || fail "the counter ran while paused ($a -> $b)"
check ctr_ tasks resume c2
wait_count_above "$b" || fail "the counter did not resume"

log "exec"
if "$CRYO_BIN" exec --help >/dev/null 2>&1; then
	out=$(ctr_ tasks exec --exec-id e1 c2 cat /count 2>&1) || fail "tasks exec: $out"
	[ "$out" -gt 0 ] 2>/dev/null || fail "tasks exec printed: $out"
	expect_fail 3 ctr_ tasks exec --exec-id e2 c2 sh -c 'exit 3'
else
	echo "SKIP part: task exec (cryo has no \`exec\` command in this build)"
fi

# --- checkpoint / restore where CRIU works ---
log "checkpoint/restore"
why=""
if [ ! -x "$CRIU4" ] && ! command -v criu >/dev/null; then
	why="no criu"
elif ! CRYO_CRIU=$CRIU4 "$CRYO_BIN" check >"$T/check.out" 2>&1; then
	why="cryo check says no: $(tail -1 "$T/check.out")"
fi
if [ -z "$why" ]; then
	before=$(count)
	out=$(ctr_ containers checkpoint --task c2 "cryo-ckpt:c2" 2>&1) || fail "containers checkpoint --task: $out"
	# containerd pauses around a checkpoint and resumes after: c2 keeps counting
	wait_count_above "$before" || fail "c2 stopped counting after the checkpoint"
	at=$(count)
	check ctr_ tasks kill -s KILL c2
	for _ in $(seq 50); do ctr_ tasks ls | grep -qE "^c2 .*STOPPED" && break; sleep 0.1; done
	check ctr_ tasks delete c2
	check ctr_ containers delete c2
	out=$(ctr_ containers restore --live c3 "cryo-ckpt:c2" 2>&1) || fail "containers restore --live: $out"
	ctr_ tasks ls | grep -E "^c3 .*RUNNING" >/dev/null || fail "restored c3 not RUNNING: $(ctr_ tasks ls)"
	ROOTFS="$T/state/io.containerd.runtime.v2.task/$NS/c3/rootfs"
	wait_count_above "$at" || fail "the restored counter does not continue from $at ($(count));" \
		"cryo state: $("$CRYO_BIN" --root "$RROOT/$NS" state c3 2>&1)"
	check ctr_ tasks kill -s KILL c3
	for _ in $(seq 50); do ctr_ tasks ls | grep -qE "^c3 .*STOPPED" && break; sleep 0.1; done
	check ctr_ tasks delete c3
	check ctr_ containers delete c3
	check ctr_ images rm "cryo-ckpt:c2"
else
	echo "SKIP part: checkpoint/restore ($why)"
	check ctr_ tasks kill -s KILL c2
	for _ in $(seq 50); do ctr_ tasks ls | grep -qE "^c2 .*STOPPED" && break; sleep 0.1; done
	ctr_ tasks ls | grep -qE "^c2 .*STOPPED" || fail "c2 did not stop on SIGKILL: $(ctr_ tasks ls)"
	check ctr_ tasks delete c2
	check ctr_ containers delete c2
fi

# --- nothing left behind ---
log "nothing left behind"
[ -z "$(ctr_ tasks ls -q)" ] || fail "tasks left: $(ctr_ tasks ls)"
[ -z "$(ctr_ containers ls -q)" ] || fail "containers left: $(ctr_ containers ls)"
# (the root dir itself may stay, as runc's does, and cryo's empty hold
# journal dir in it; nothing else may stay)
left=$(find "$RROOT" -mindepth 2 ! \( -name .holds -type d -empty \) 2>/dev/null)
[ -z "$left" ] || fail "cryo left state behind: $left"
for c in /sys/fs/cgroup/*/"$NS"/c[123] /sys/fs/cgroup/unified/"$NS"/c[123]; do
	[ -d "$c" ] && fail "cgroup left behind: $c"
done
out=$(grep -i "exit status\|level=error\|unknown" "$T/containerd.log" | grep -v "cri\b" | head -5)
[ -z "$out" ] || echo "# containerd complained: $out"

show_calls
echo "ok"
