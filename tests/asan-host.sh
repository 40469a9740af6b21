#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The whole unit and host suite under ASan+UBSan (about 35 minutes here),
# by hand: CI (tests/check.sh) runs the unit tests and a slice of the
# host tests that drives every command's C paths once. Not the packaging
# tests (they test the .deb, not memory) nor the two CRI tests that
# repeat the CRI paths at length (host/cri_{two_nodes,faults}).
#
#   tests/asan-host.sh [CTEST ARGS...]     e.g. -R 'host/migrate_'
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCRYO_WERROR=ON -DCRYO_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$(nproc)"
cd build-asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --output-on-failure --no-tests=error -L 'unit|host' -E '^host/(package_|cri_(two_nodes|faults)$)' "$@"
