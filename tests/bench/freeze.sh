#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark (not a test): freeze latency of 1 / 100 / 1000 tasks, side by
# side in one run: the raw kernel operation, `cryo freeze --cgroup`, libcryo
# in-process, `runc pause` and `crun pause`; medians and their ratios.
#   tests/bench/freeze.sh [BUILD_DIR]        (root; BENCH_TASKS="1 100" to narrow)
# crun 1.8 can't drive this host's hybrid cgroups: it runs in a private
# mount namespace (`unshare -m`) where /sys/fs/cgroup/unified is unmounted,
# never on the host's own mounts.
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$SRC/build}
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 77; }
for b in cryo tests/bench/bench_rawfreeze tests/bench/bench_libfreeze; do
	[ -x "$BUILD/$b" ] || { echo "build first: $BUILD/$b missing" >&2; exit 1; }
done
T=$(mktemp -d /tmp/cryo-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT

echo "# freeze latency, medians of alternating rounds ($(nproc) cpus, $(uname -r))"
python3 "$SRC/tests/bench/freeze.py" "$BUILD" "$T" host
if command -v crun >/dev/null && command -v runc >/dev/null; then
	unshare -m --propagation private bash -c \
		'umount /sys/fs/cgroup/unified && exec python3 "$1/tests/bench/freeze.py" "$2" "$3" crun' \
		_ "$SRC" "$BUILD" "$T"
else
	echo "# crun or runc (for \`runc spec\`) not installed: no crun numbers"
fi
