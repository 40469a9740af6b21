#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# runc's own integration suite (tests/integration/*.bats of the runc that
# Debian ships, 1.1.5) run against cryo, Debian's runc and crun, one
# runtime after the other (the suite uses fixed cgroup and container
# names), under the same conditions (tests/lib/runc-bats.sh says which).
# Prints one table, test x runtime, and each runtime's totals.
#
#   tests/bench/runc-bats.sh [RUNTIME...]      (default: cryo runc crun)
#
# Environment: FILES="kill.bats ps.bats" (a subset; default every file),
# RB_FILE_TIMEOUT=900 (s per file),
# CRYO_BIN (the cryo to test; default $CRYO_BUILD/cryo),
# RB_RESULTS=DIR (where the TAP outputs go; default $CRYO_BUILD/runc-bats/results),
# TABLE_ONLY=1 (print the table of the results there, run nothing),
# KEEP=1 (run only the files that have no result yet there).
#
# First it runs tests/setup-runc-bats.sh (packages, Debian's runc source,
# the suite's helpers and images; idempotent). Each .bats file runs under
# the host lock on its own, so that others' tests interleave.
set -u
: "${CRYO_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${CRYO_BUILD:=$CRYO_SRC/build}"
: "${CRYO_BIN:=$CRYO_BUILD/cryo}"
# shellcheck source=tests/lib/runc-bats.sh
. "$CRYO_SRC/tests/lib/runc-bats.sh"
: "${RB_RESULTS:=$RB_DIR/results}"

[ "$(id -u)" = 0 ] || { echo "SKIP runc-bats: needs root (the suite creates containers)"; exit 77; }
runtimes=("$@")
[ ${#runtimes[@]} -gt 0 ] || runtimes=(cryo runc crun)
declare -A bin
for rt in "${runtimes[@]}"; do
	case $rt in
	cryo) bin[$rt]=$CRYO_BIN ;;
	*) bin[$rt]=$(command -v "$rt") || { echo "runc-bats: no $rt installed" >&2; exit 1; } ;;
	esac
done

if [ -z "${TABLE_ONLY:-}" ]; then
	bash "$CRYO_SRC/tests/setup-runc-bats.sh" "$RB_DIR" || exit 1
fi
rb_ready || { echo "runc-bats: $RB_DIR is not set up (tests/setup-runc-bats.sh)" >&2; exit 1; }
suite=$RB_DIR/src/tests/integration
files=${FILES:-$(cd "$suite" && ls ./*.bats | sed 's|^\./||')}

# file by file, each under every runtime in turn: a run cut short still
# compares the runtimes on the files it did
damage=0
if [ -z "${TABLE_ONLY:-}" ]; then
	for f in $files; do
		for rt in "${runtimes[@]}"; do
			out=$RB_RESULTS/$rt/$f
			[ -n "${KEEP:-}" ] && [ -s "$out" ] && continue
			mkdir -p "$RB_RESULTS/$rt"
			t=$SECONDS
			rb_run_file "$rt" "${bin[$rt]}" "$f" "$out" || damage=1
			echo "# $rt $f: $(rb_results "$out" | cut -f1 | sort | uniq -c | tr -s ' \n' ' ')($((SECONDS - t)) s)"
			[ ! -s "$out.notes" ] || sed "s/^/#   $rt $f: /" "$out.notes"
		done
	done
fi

# what no runtime can pass here (tests/setup-runc-bats.sh made them skip)
if [ -s "$RB_DIR/skipped" ]; then
	echo "# skipped for every runtime:"
	awk -F'\t' '{ printf "#   %s: %s: %s\n", $1, $2, $3 }' "$RB_DIR/skipped"
fi

python3 - "$RB_RESULTS" "$files" "${runtimes[@]}" <<'EOF'
import os, re, sys
res, files, runtimes = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
def results(path):
    out = {}
    try:
        lines = open(path, errors="replace").read().replace("\r", "").splitlines()
    except OSError:
        return None
    for l in lines:
        m = re.match(r"^(not )?ok \d+ (.*?)( # skip.*)?$", l)
        if not m:
            continue
        name = re.sub(r" # timeout after \d+s$", "", m.group(2))
        out[name] = "skip" if m.group(3) else ("fail" if m.group(1) else "pass")
    return out
rows, tot = [], {r: {"pass": 0, "fail": 0, "skip": 0} for r in runtimes}
for f in files:
    per = {r: results(os.path.join(res, r, f)) for r in runtimes}
    names = []
    for r in runtimes:
        for n in (per[r] or {}):
            if n not in names:
                names.append(n)
    if not names:
        names = ["(no test ran)"]
    for n in names:
        row = []
        for r in runtimes:
            v = (per[r] or {}).get(n, "fail" if per[r] is not None else "-")
            if v in tot[r]:
                tot[r][v] += 1
            row.append(v)
        rows.append((f, n, row))
w = max([len(f"{f}: {n}") for f, n, _ in rows] + [10])
w = min(w, 100)
print("%-*s" % (w, "test") + "".join("%8s" % r for r in runtimes))
for f, n, row in rows:
    label = f"{f[:-5]}: {n}"
    if len(label) > w:
        label = label[: w - 3] + "..."
    print("%-*s" % (w, label) + "".join("%8s" % v.upper() if v == "fail" else "%8s" % v for v in row))
print()
for r in runtimes:
    t = tot[r]
    print(f"{r}: {t['pass']} passed, {t['fail']} failed, {t['skip']} skipped")
if "runc" in runtimes:
    for r in runtimes:
        if r == "runc":
            continue
        i, j = runtimes.index("runc"), runtimes.index(r)
        only = [f"{f[:-5]}: {n}" for f, n, row in rows if row[i] == "pass" and row[j] != "pass"]
        print(f"# runc passes, {r} does not: {len(only)}")
        for x in only:
            print(f"#   {x}")
EOF
if [ $damage != 0 ]; then
	echo "runc-bats: HOST DAMAGE: a runtime changed the host's devices (see above and $RB_RESULTS/*/*.damage)" >&2
	exit 1
fi
