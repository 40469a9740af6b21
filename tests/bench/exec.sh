#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# `exec` start-time benchmark (not a timed test): `exec ID /bin/true` N
# times into a running container with cryo, runc and crun side by side in
# one hyperfine run. Each runtime runs its own container from the same
# busybox bundle (same config.json, rootfs on its own ext4 image, no
# cgroupsPath: each runtime's default place). Prints the ratios.
#
#   tests/bench/exec.sh [N]          (default N=30; needs root)
#
# crun 1.8 can't handle this host's hybrid cgroups with the cgroup2 mount
# at /sys/fs/cgroup/unified: its run and exec go through `unshare -m` where
# that mount is detached — in that private mount namespace only, never on
# the host. The wrapper alone is measured too, to subtract it.
set -euo pipefail
N=${1:-30}
. "$(dirname "$0")/lib.sh"
bench_init exec.sh hyperfine runc crun busybox
id=bench-exec-$$
stop_all() {
	"$CRYO" --root "$T/cryo" delete --force "$id" >/dev/null 2>&1 || true
	runc --root "$T/runc" delete --force "$id" >/dev/null 2>&1 || true
	crun_ns crun --root "$T/crun" delete --force "$id" >/dev/null 2>&1 || true
}
BENCH_CLEANUP=stop_all
bench_bundle sh -c 'while :; do sleep 1; done'
cd "$T/b"
"$CRYO" --root "$T/cryo" run -d --bundle "$T/b" "$id" </dev/null >/dev/null 2>&1
runc --root "$T/runc" run -d --bundle "$T/b" "$id" </dev/null >/dev/null 2>&1
crun_ns crun --root "$T/crun" run -d --bundle "$T/b" "$id" </dev/null >/dev/null 2>&1

imm=$(bench_immutable_cryo)
bench_compare exec "$N" "$CRYO --root $T/cryo exec $id /bin/true" "runc --root $T/runc exec $id /bin/true" \
	"$CRUN_NS_PREFIX crun --root $T/crun exec $id /bin/true'" \
	"${imm:+$imm --root $T/cryo exec $id /bin/true}"
