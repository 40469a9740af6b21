#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The main job: install what is needed, build cryo, and show it working:
# run a container from the example bundle (state, list, ps, stop, delete);
# other steps (freeze, checkpoint, restore) are added by their modules.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tests/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
CRYO=$PWD/build/cryo

echo "== cryo $("$CRYO" --version | head -1)"
echo "== what this host supports"
"$CRYO" features

# A counter container from the example bundle: busybox on its own ext4
# image, loop-mounted (later steps freeze that filesystem, never the host's).
DEMO=$(mktemp -d /tmp/cryo-demo.XXXXXX)
ROOT=$DEMO/state
ID=demo-counter
cleanup() {
	"$CRYO" --root "$ROOT" delete --force "$ID" >/dev/null 2>&1 || true
	examples/mkbundle.sh --teardown "$DEMO/bundle" >/dev/null 2>&1 || true
	rm -rf "$DEMO"
}
trap cleanup EXIT

echo "== bundle: busybox rootfs on its own ext4 image"
examples/mkbundle.sh "$DEMO/bundle" >/dev/null
findmnt -n -o SOURCE,TARGET,FSTYPE --target "$DEMO/bundle/rootfs"

echo "== cryo run -d $ID (a shell loop writing a counter)"
"$CRYO" --root "$ROOT" run -d --bundle "$DEMO/bundle" "$ID" </dev/null >"$DEMO/counter.log" 2>&1
sleep 2.5
echo "== cryo state $ID"
"$CRYO" --root "$ROOT" state "$ID"
echo "== cryo list"
"$CRYO" --root "$ROOT" list
echo "== cryo ps $ID"
"$CRYO" --root "$ROOT" ps "$ID"
echo "== the container's output so far"
cat "$DEMO/counter.log"

echo "== stop and delete"
"$CRYO" --root "$ROOT" kill "$ID" KILL
for _ in $(seq 50); do
	"$CRYO" --root "$ROOT" state "$ID" | grep -q '"status":"stopped"' && break
	sleep 0.1
done
"$CRYO" --root "$ROOT" state "$ID" | grep '"status"'
"$CRYO" --root "$ROOT" delete "$ID"
"$CRYO" --root "$ROOT" list
echo "== tear down the bundle"
examples/mkbundle.sh --teardown "$DEMO/bundle"
echo "== done"
