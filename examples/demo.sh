#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job: install what is needed, build cryo, and show it working on
# this host: run a container whose rootfs is its own loop-mounted ext4,
# watch its counter, freeze it (the counter stops), thaw it, freeze its
# filesystem under a deadline, then checkpoint and restore it with CRIU.
# CRIU cannot dump on every kernel (Debian's 3.17 fails on >= 6.13): where
# `cryo check` says it can't, the demo builds CRIU 4 from Debian's source
# package (tests/setup-criu4.sh) and uses that; only where that fails too
# does the part run inside the VM harness (Debian's 6.1 kernel under qemu)
# — the same binary, the same steps.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD

if [ "${1:-}" != --no-setup ]; then
	bash tests/setup.sh
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j"$(nproc)" >/dev/null
fi
CRYO=$SRC/build/cryo
WORK=$(mktemp -d /tmp/cryo-demo.XXXXXX)
ROOT=$WORK/state
ID=demo-$$
B=$WORK/bundle

# step, counter, demo_cleanup
. "$SRC/examples/lib/demo.sh"
cleanup() {
	"$CRYO" --root "$ROOT" fsthaw --force --path "$B/rootfs" >/dev/null 2>&1 || true
	demo_cleanup
}
trap cleanup EXIT

step "cryo: $("$CRYO" --version | head -1)"

step "a bundle: busybox rootfs on its own ext4 image, loop-mounted"
bash examples/mkbundle.sh "$B" sh -c 'i=0; while true; do i=$((i+1)); echo $i > /counter; sleep 0.1; done' >/dev/null
findmnt -n -o SOURCE,TARGET,FSTYPE --target "$B/rootfs"

step "cryo run -d $ID"
"$CRYO" --root "$ROOT" run -d --bundle "$B" "$ID" </dev/null >/dev/null 2>&1
"$CRYO" --root "$ROOT" list
"$CRYO" --root "$ROOT" ps "$ID"
sleep 1
echo "counter: $(counter)"
sleep 0.5
echo "counter: $(counter)   (it counts)"

step "cryo freeze $ID: the cgroup freezer, RUNNING -> FROZEN"
"$CRYO" --root "$ROOT" freeze "$ID" --timeout 5000
"$CRYO" --root "$ROOT" state "$ID" | grep -E '"status"|org.cryo.freezer'
a=$(counter); sleep 1; b=$(counter)
echo "counter: $a, one second later: $b   (frozen: it does not move)"
[ "$a" = "$b" ] || { echo "demo: the counter moved while frozen" >&2; exit 1; }

step "cryo thaw $ID"
"$CRYO" --root "$ROOT" thaw "$ID"
sleep 0.5
echo "counter: $(counter)   (counting again)"

step "cryo fsfreeze $ID --timeout 10: FIFREEZE on the container's own ext4, with a deadline"
"$CRYO" --root "$ROOT" fsfreeze "$ID" --timeout 10
a=$(counter); sleep 1; b=$(counter)
echo "counter on disk: $a, one second later: $b   (its writes wait for the thaw)"
"$CRYO" --root "$ROOT" fsthaw "$ID"
sleep 0.5
echo "counter: $(counter)   (thawed)"

# CRIU 4, built from Debian's source package when the host's CRIU can't
# dump on this kernel (tests/setup-criu4.sh: about a minute, once).
criu4() {
	local c=/opt/cryo-criu4/sbin/criu
	if [ ! -x "$c" ] && [ "${1:-}" != --no-setup ]; then
		echo "building CRIU 4 from Debian's source package (tests/setup-criu4.sh), for this kernel"
		bash "$SRC/tests/setup-criu4.sh" >"$WORK/setup-criu4.log" 2>&1 ||
			{ echo "  it did not build: $(tail -n 1 "$WORK/setup-criu4.log")"; return 1; }
	fi
	[ -x "$c" ] && CRYO_CRIU=$c "$CRYO" check >/dev/null 2>&1 || return 1
	export CRYO_CRIU=$c
}

step "checkpoint and restore with CRIU"
if "$CRYO" check >/dev/null 2>&1; then
	bash "$SRC/examples/demo-criu.sh" "$CRYO"
else
	"$CRYO" check 2>&1 | sed 's/^/  /' || true
	if criu4 "$@"; then
		echo "Debian's CRIU can't dump on this kernel; CRIU 4 from Debian's source package can: $CRYO_CRIU"
		bash "$SRC/examples/demo-criu.sh" "$CRYO"
	else
		echo "no CRIU here can dump on this kernel: running the checkpoint/restore part in the VM harness"
		"$CRYO" --root "$ROOT" delete --force "$ID" >/dev/null
		bash "$SRC/tests/vm/run" --timeout 600 bash "$SRC/examples/demo-criu.sh" "$CRYO"
	fi
fi

step "done: cleaning up"
