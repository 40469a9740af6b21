#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The test command (README, .ci/run): install dependencies, build with
# warnings as errors, run every test (unit, host, soak slices, vm) with ctest, then the
# ASan+UBSan build of the unit and host suites, the ThreadSanitizer build
# of the unit suite, a short fuzzing run, then the static checks.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD

# each phase's wall time, printed as it ends and again at the end (CI
# must stay well under its limit: this says where the time goes)
times=()
t0=$SECONDS
phase_end() {
	times+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$1")")
	echo "== $1: $((SECONDS - t0)) s"
	t0=$SECONDS
}

bash tests/setup.sh
# CRIU 4 for the host tests that checkpoint (Debian's 3.17 fails on kernels >= 6.13)
bash tests/setup-criu4.sh
# containerd 2.x for the CRI tests (host/cri_*): they skip, saying why, when it can't be fetched
bash tests/setup-cri.sh || echo "check.sh: tests/setup-cri.sh failed: the host/cri_* tests will skip"
# runc's own integration suite, for host/runc_bats (a slice of it) and host/runtime_contract
bash tests/setup-runc-bats.sh
phase_end "setup"

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCRYO_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
phase_end "build"

# The last lines of each failed test's output, again at the end of the run:
# a long log is often cut in the middle, and the reason is what matters.
failed=()
tails() {
	local d=$1 name
	while IFS=: read -r _ name; do
		echo "-- $d: $name (its last 40 lines)"
		awk -v n="$name" '$2 == "Testing:" && $3 == n { on = 1; next }
			on && /^<end of output>/ { exit } on' "$d/Testing/Temporary/LastTest.log" | tail -n 40
	done <"$d/Testing/Temporary/LastTestsFailed.log"
}

rc=0
# a ctest dir of its own (ctest's logs are per directory) for the tests of build/tests
ctest_dir() { rm -rf "$1" && mkdir "$1" && cp build/tests/CTestTestfile.cmake "$1/"; }

# The VM tests (qemu: their guests see the host's files through 9p and
# touch none of its cgroups, mounts or devices; vm/migrate_2vm's host side
# starts two of them and checks no host state either) run beside
# everything else, from a directory of their own and without the host
# check fixture (the host tests' own runs change the host meanwhile; their
# ctest checks it around them).
echo "== ctest: the vm tests (in the background, to the end) beside the unit and host tests"
ctest_dir build-vm
# A vm test that fails is run once more (and shows as failed and passed in
# the log): beside the host tests the guests are slow.
(cd build-vm && ctest --output-on-failure --no-tests=error --repeat until-pass:2 -L vm -FA hostcheck \
	-E '^hostcheck') >build-vm/ctest.out 2>&1 &
vm_pid=$!
# (should this script end early, the vm tests end with it)
trap 'kill $vm_pid 2>/dev/null || true' EXIT
(cd build && ctest --output-on-failure --no-tests=error -LE vm) || { rc=1; failed+=(build); }
phase_end "ctest: unit and host"

# Under ASan+UBSan: the unit tests, and the host tests that drive every
# command's C paths once (create/run/exec/kill/delete, config parsing and
# its refusals, checkpoint and restore with their faults and hostile
# images, migrate's hostile peers and receive's kill hold, the parallel
# runs, containerd's CRI calls), about 12 minutes. The whole host suite
# under ASan is tests/asan-host.sh (about 35 minutes, by hand: README).
ASAN_HOST='^host/(lifecycle_(basic|run|spec|badconfig|security|limits|create_faults)|exec_(basic|tty)'
ASAN_HOST+='|cli_(basics|options|update_events)|checkpoint_(faults|tty)|restore_(badimage|attack|pages_gate|cleanup|tar|leave_stopped)'
ASAN_HOST+='|sign_checkpoint|migrate_hostile|receive_kill_hold|parallel_(ops|kill_checkpoint)|cri_(lifecycle|checkpoint)'
ASAN_HOST+='|freezer_hold|fsfreeze_basic)$'
echo "== ctest under ASan+UBSan: unit tests and a slice of the host tests"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCRYO_WERROR=ON -DCRYO_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
# (parallel_ops: its 16 containers for one round; the plain build runs
# its 5 rounds)
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 CRYO_PARALLEL_ROUNDS=1 \
	ctest --output-on-failure --no-tests=error -L 'unit|host' -R "^unit/|^hostcheck|$ASAN_HOST") ||
	{ rc=1; failed+=(build-asan); }
phase_end "ASan+UBSan build and ctest"

# the threaded parts (image hashing while CRIU writes, the transport's
# writers, the lazy relay, holds and watchdogs): their unit tests under
# ThreadSanitizer, which fails a test on any data race it sees
echo "== ctest under ThreadSanitizer: unit tests"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DCRYO_WERROR=ON -DCRYO_SANITIZE_THREAD=ON >/dev/null
cmake --build build-tsan -j"$jobs"
(cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure --no-tests=error -L unit) ||
	{ rc=1; failed+=(build-tsan); }
phase_end "TSan build and ctest"

echo "== fuzzing: each tests/fuzz target for 20 s (libFuzzer, ASan+UBSan), 0 crashes"
bash tests/fuzz/run.sh 20 || rc=1
phase_end "fuzzing"

echo "== static checks"
bash tests/lint.sh build || rc=1
phase_end "static checks"

# the vm tests ran beside all of the above
wait $vm_pid || { rc=1; failed+=(build-vm); }
echo "== ctest: the vm tests"
cat build-vm/ctest.out
phase_end "ctest: vm (what was left of it after the static checks)"

if [ ${#failed[@]} -gt 0 ]; then
	echo "== failed tests"
	for d in "${failed[@]}"; do
		tails "$d"
	done
fi

echo "== where the time went"
printf '%s\n' "${times[@]}"
exit $rc
