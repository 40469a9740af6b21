#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The checkpoint/restore half of the demo (examples/demo.sh runs it on the
# host when CRIU works there, else inside the VM harness): a container
# counting in its shell's memory is checkpointed (freeze → FIFREEZE →
# rootfs snapshot → FITHAW → CRIU dump → manifest → atomic commit),
# inspected, and restored: the counter goes on from where it was, not
# from 1. Then examples/demo-migrate.sh moves a container to another "host".
set -euo pipefail
CRYO=${1:?usage: demo-criu.sh PATH-TO-CRYO}
SRC=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/cryo-demo-criu.XXXXXX)
ROOT=$WORK/state
ID=demo-criu
B=$WORK/bundle
IMG=$WORK/checkpoint

modprobe loop 2>/dev/null || true
ip link set lo up 2>/dev/null || true
# step, counter, demo_cleanup
. "$SRC/examples/lib/demo.sh"
trap demo_cleanup EXIT

step "$(uname -sr): $("$CRYO" check 2>&1 | grep -E '^(criu|checkpoint)' | tr '\n' ' ')"
bash "$SRC/examples/mkbundle.sh" "$B" sh -c 'i=0; while true; do i=$((i+1)); echo $i > /counter; sleep 0.1; done' >/dev/null
"$CRYO" --root "$ROOT" run -d --bundle "$B" "$ID" </dev/null >/dev/null 2>&1
sleep 2
echo "counter: $(counter)"

step "cryo checkpoint $ID --image-path $IMG"
"$CRYO" --root "$ROOT" checkpoint --image-path "$IMG" "$ID"
at=$(counter)
# as with runc, the checkpointed container is gone: the image holds it now
"$CRYO" --root "$ROOT" state "$ID" >/dev/null 2>&1 && gone="still there?" || gone="gone (the image holds it)"
echo "counter at checkpoint: $at; container: $gone"
ls -l "$IMG" | head -8

step "cryo inspect $IMG"
"$CRYO" inspect "$IMG"

step "cryo restore $ID --bundle $B --image-path $IMG -d"
if ! "$CRYO" --root "$ROOT" restore -d --bundle "$B" --image-path "$IMG" "$ID" </dev/null >"$WORK/restore.log" 2>&1; then
	echo "restore FAILED:"
	sed 's/^/  /' "$WORK/restore.log"
	exit 1
fi
sleep 1
now=$(counter)
"$CRYO" --root "$ROOT" state "$ID" | grep -E '"status"|"pid"'
echo "counter after restore: $now (was $at at checkpoint: it went on from memory, not from 1)"
[ "$now" -gt "$at" ] || { echo "demo: the counter did not continue" >&2; exit 1; }
"$CRYO" --root "$ROOT" kill "$ID" KILL
sleep 0.3

bash "$SRC/examples/demo-migrate.sh" "$CRYO"
