#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A slice of runc's own integration suite (the runc Debian ships) against
# cryo: the files of the lifecycle commands clients drive (create, start,
# kill, delete, state, ps, exec, pause, list, checkpoint). Every test of
# them passes or is skipped by the suite itself (a `requires` this host
# does not meet), bar the exceptions docs/runtime-contract.md lists and
# the tests runc itself fails here (RUNC_FAILS, below); and
# the host is as it was after each file (devices, cgroups). The whole
# suite against cryo, runc and crun is tests/bench/runc-bats.sh.
#
# CI prepares the suite with tests/setup-runc-bats.sh (tests/check.sh);
# without it this test skips. It runs under the caller's host lock
# (ctest is run under it), so it takes none itself.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/runc-bats.sh"
need_root
rb_ready || skip "runc's suite is not set up in $RB_DIR (run tests/setup-runc-bats.sh)"
command -v bats >/dev/null || skip "needs bats"

FILES=${RB_SLICE:-create.bats start.bats start_detached.bats kill.bats delete.bats state.bats ps.bats exec.bats pause.bats list.bats checkpoint.bats userns.bats mounts_recursive.bats}
# Tests that runc itself fails on this host (tests/bench/runc-bats.sh, its
# table in issue 27's closing note), each with why; cryo's failure is
# said in the log, not counted:
#   - a pre-dump needs soft-dirty page tracking, which the 6.18 host kernel
#     has not (where `cryo check` says it has, the test must pass);
#   - `checkpoint --lazy-pages`: runc's times out here (CRIU's lazy dump
#     wants larger pipes than fs.pipe-max-size gives a root without
#     CAP_SYS_RESOURCE); cryo refuses the option and says so (its images are
#     whole and digested: lazy pages are `cryo migrate --lazy`'s,
#     docs/runtime-contract.md)
#   - `exec --user vs /dev/null ownership` asserts that the host's
#     /dev/null is 0:0 after an exec; where it is not even before the
#     suite (this machine's is 1000:1000 from boot), it fails for every
#     runtime. cryo's leaving the host's devices alone is checked after
#     every file anyway (rb_run_file's before/after).
RUNC_FAILS=$'checkpoint.bats\tcheckpoint --lazy-pages and restore'
has_soft_dirty ||
	RUNC_FAILS+=$'\ncheckpoint.bats\tcheckpoint --pre-dump and restore'
[ "$(stat -c %u:%g /dev/null)" = 0:0 ] ||
	RUNC_FAILS+=$'\nexec.bats\trunc exec --user vs /dev/null ownership'
# Known to fail, not yet mended (issue 27), each said in the log: none now
# (tab-separated file and test name, as RUNC_FAILS)
KNOWN=''

RB_LOCK=0
out=$T/results
mkdir -p "$out"
exceptions=$(python3 "$CRYO_SRC/tests/lib/contract.py" exceptions) || fail "cannot read the exceptions of docs/runtime-contract.md"
bad=()
passed=0 skipped=0
for f in $FILES; do
	t0=$SECONDS
	rb_run_file cryo "$CRYO_BIN" "$f" "$out/$f" || bad+=("$f: the host's devices changed: $(cat "$out/$f.damage")")
	[ ! -s "$out/$f.damage" ] || grep -q '^HOST DAMAGE' "$out/$f.damage" || bad+=("$f: $(cat "$out/$f.damage")")
	[ -s "$out/$f" ] || bad+=("$f: no results (exit $(cat "$out/$f.rc"): $(tail -5 "$out/$f.log" "$out/$f" 2>/dev/null))")
	n=0
	while IFS=$'\t' read -r verdict name; do
		n=$((n + 1))
		case $verdict in
		pass) passed=$((passed + 1)) ;;
		skip)
			skipped=$((skipped + 1))
			# only the suite's own `requires` (and the setup's skips) may skip
			reason=$(grep -F "ok " "$out/$f" | grep -F " $name # skip" | sed 's/.* # skip *//')
			case $reason in
			"test requires "* | *"not available"* | *"could not be built"* | *"nothing is downloaded here"*) ;;
			*) bad+=("$f: \"$name\" skipped: $reason") ;;
			esac
			;;
		fail)
			if grep -qxF "$f"$'\t'"$name" <<<"$exceptions"; then
				log "$f: \"$name\" fails: an exception of docs/runtime-contract.md"
			elif grep -qxF "$f"$'\t'"$name" <<<"$KNOWN"; then
				log "$f: \"$name\" fails: known, not mended yet (issue 27)"
			elif grep -qxF "$f"$'\t'"$name" <<<"$RUNC_FAILS"; then
				log "$f: \"$name\" fails, as it fails for runc on this host"
			else
				bad+=("$f: \"$name\" failed:$(awk -v n="$name" 'index($0, "not ok ") == 1 && index($0, n) { on = 1; next } /^(not )?ok / { on = 0 } on' "$out/$f" | head -40 | sed 's/^/\n    /')")
			fi
			;;
		esac
	done < <(rb_results "$out/$f")
	log "$f: $n tests ($((SECONDS - t0)) s)"
	[ "$n" -gt 0 ] || bad+=("$f: no test ran")
done
log "$passed passed, $skipped skipped by the suite"
if [ ${#bad[@]} -gt 0 ]; then
	printf '%s\n' "${bad[@]}" >&2
	fail "${#bad[@]} problems in runc's suite against cryo"
fi
echo "ok"
