#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Container start benchmark (not a timed test): `run` of /bin/true N times
# with cryo, runc and crun side by side in one hyperfine run, on the same
# busybox bundle (rootfs on its own ext4 image). Prints the ratios.
#
#   tests/bench/start.sh [N]          (default N=30; needs root)
#
# crun 1.8 can't handle this host's hybrid cgroups with the cgroup2 mount
# at /sys/fs/cgroup/unified, so it runs inside `unshare -m` where that
# mount is detached — in that private mount namespace only, never on the
# host. runc runs as is. All three use the same config.json, without a
# cgroupsPath (each runtime's default place) and with the same namespaces.
set -euo pipefail
N=${1:-30}
. "$(dirname "$0")/lib.sh"
bench_init start.sh hyperfine runc crun busybox
bench_bundle /bin/true
cd "$T/b"
imm=$(bench_immutable_cryo)
bench_compare "" "$N" "$CRYO --root $T/cryo run --bundle $T/b bench-cryo-\$\$ </dev/null" \
	"runc --root $T/runc run --bundle $T/b bench-runc-\$\$ </dev/null" \
	"$CRUN_NS_PREFIX crun --root $T/crun run --bundle $T/b bench-crun-\$\$ </dev/null'" \
	"${imm:+$imm --root $T/cryo run --bundle $T/b bench-cryoi-\$\$ </dev/null}"
