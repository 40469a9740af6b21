#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build the libFuzzer targets (clang, ASan+UBSan, build dir build-fuzz) and
# run each for SECONDS (default 30) from its checked-in seed corpus plus
# the corpus earlier runs grew (build-fuzz/fuzz/corpus/<target>). Fails
# when any target finds a crash, a leak, a sanitizer report or a timeout;
# the input is left in build-fuzz/fuzz/artifacts/<target>/.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]    (TARGET: fuzz_config, ...)
#   CRYO_FUZZ_BUILD=dir    another build dir
#   CRYO_FUZZ_ARGS="..."   more libFuzzer flags (e.g. -jobs=2 -workers=2)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-30}
[ $# -gt 0 ] && shift
BUILD=${CRYO_FUZZ_BUILD:-build-fuzz}
case $secs in '' | *[!0-9]*) echo "run.sh: SECONDS must be a number, not \`$secs\`" >&2; exit 2 ;; esac

if ! command -v clang >/dev/null; then
	echo "run.sh: FAILED: clang is not installed (tests/setup.sh installs it)" >&2
	exit 1
fi
CC=clang cmake -S . -B "$BUILD" -DCRYO_FUZZ=ON -DCRYO_WERROR=OFF -DBUILD_TESTING=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j"${JOBS:-$(nproc)}" --target fuzz >"$BUILD/fuzz-build.log" 2>&1 ||
	{ tail -30 "$BUILD/fuzz-build.log" >&2; echo "run.sh: FAILED to build the fuzz targets" >&2; exit 1; }

if [ $# -gt 0 ]; then
	targets=("$@")
else
	targets=()
	for src in tests/fuzz/fuzz_*.c; do
		targets+=("$(basename "$src" .c)")
	done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
rc=0
for t in "${targets[@]}"; do
	bin=$BUILD/fuzz/$t
	seeds=tests/fuzz/corpus/$t
	work=$BUILD/fuzz/corpus/$t
	art=$BUILD/fuzz/artifacts/$t
	log=$BUILD/fuzz/$t.log
	[ -x "$bin" ] || { echo "run.sh: FAILED: no $bin" >&2; rc=1; continue; }
	mkdir -p "$work" "$art"
	args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
		-artifact_prefix="$art/")
	[ -f "tests/fuzz/$t.dict" ] && args+=(-dict="tests/fuzz/$t.dict")
	# shellcheck disable=SC2086 # CRYO_FUZZ_ARGS is a list of flags
	corpora=("$work")
	[ -d "$seeds" ] && corpora+=("$seeds")
	if "$bin" "${args[@]}" ${CRYO_FUZZ_ARGS:-} "${corpora[@]}" >"$log" 2>&1; then
		status=ok
	else
		status=FAILED
		rc=1
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
	echo "fuzz $t: $status — ${execs:-?} execs in ${secs}s (${speed:-?}/s), ${cov:-cov ?}, corpus $(find "$work" -type f | wc -l) files"
	if [ $status != ok ]; then
		grep -E 'ERROR|SUMMARY|==[0-9]+==|runtime error|Test unit written' "$log" | head -20 >&2 || true
		echo "  log: $log; inputs: $(ls "$art" 2>/dev/null | tr '\n' ' ')" >&2
	fi
done
exit $rc
