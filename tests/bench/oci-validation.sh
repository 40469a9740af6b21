#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The OCI runtime-tools validation suite, run side by side on cryo, crun
# and runc: a per-file table of passing / failing TAP assertions and the
# totals (issue 13's gate: cryo fails fewer assertions than crun, and no
# file where crun passes).
#
# Nothing is fetched at run time. The suite's source is a checkout of
# https://github.com/opencontainers/runtime-tools given as
#   CRYO_RUNTIME_TOOLS=/path/to/runtime-tools tests/bench/oci-validation.sh
# (it carries its Go dependencies in vendor/, so the build is offline:
# GOFLAGS=-mod=vendor GOPROXY=off), made beforehand with
#   git clone https://github.com/opencontainers/runtime-tools
#   git -C runtime-tools checkout 260e151
# Commit 260e151 (March 2025, same 58 validation files as today's HEAD)
# is the newest that Debian bookworm's Go 1.19 (`golang-go`) builds:
# later ones vendor moby/sys/capability, which needs Go 1.21's `slices`.
# With a newer Go, HEAD works too. The built suite is kept in $CRYO_BUILD/runtime-tools and
# reused while the checkout does not change.
#
# Options (environment): RUNTIMES="cryo crun runc" (the ones to compare),
# TESTS="default state ..." (a subset of validation/ names), TIMEOUT=60
# (seconds per test file).
set -u
: "${CRYO_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${CRYO_BUILD:=$CRYO_SRC/build}"
: "${CRYO_BIN:=$CRYO_BUILD/cryo}"
: "${RUNTIMES:=cryo crun runc}"
: "${TIMEOUT:=60}"

skip() { echo "SKIP oci-validation: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (the suite creates containers)"
src=${CRYO_RUNTIME_TOOLS:-}
[ -n "$src" ] && [ -d "$src/validation" ] ||
	skip "set CRYO_RUNTIME_TOOLS to a checkout of github.com/opencontainers/runtime-tools (nothing is fetched at run time)"
command -v go >/dev/null || skip "needs Go (Debian: apt-get install golang-go)"
command -v make >/dev/null || skip "needs make"

# --- build (offline, cached) ---
out=$CRYO_BUILD/runtime-tools
# the checkout's commit, or (an unpacked archive) a digest of its Go files' names, sizes and times
stamp=$(cd "$src" && { git rev-parse HEAD 2>/dev/null ||
	find . -type f -name '*.go' -printf '%P %s %T@\n' | sort | sha256sum | cut -c1-40; })
if [ ! -e "$out/.built" ] || [ "$(cat "$out/.built")" != "$stamp" ]; then
	rm -rf "$out"
	mkdir -p "$out"
	cp -a "$src/." "$out/"
	echo "# building runtime-tools (offline, vendored) in $out"
	(cd "$out" && GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local GOCACHE="$out/.gocache" GOPATH="$out/.gopath" \
		make runtimetest validation-executables COMMIT="${stamp:0:12}") >"$out/build.log" 2>&1 || {
		echo "FAIL: building runtime-tools failed (see $out/build.log):" >&2
		tail -15 "$out/build.log" >&2
		exit 1
	}
	echo "$stamp" >"$out/.built"
fi

tests=${TESTS:-$(cd "$out/validation" && for d in */; do d=${d%/}; [ -x "$d/$d.t" ] && echo "$d"; done)}

declare -A bin
for rt in $RUNTIMES; do
	case $rt in
	cryo) bin[$rt]=$CRYO_BIN ;;
	*) bin[$rt]=$(command -v "$rt") || { echo "# $rt not installed, left out"; continue; } ;;
	esac
done

# --- run: each file under each runtime, from the build dir (runtimetest and the rootfs tarball live there) ---
res=$(mktemp -d /tmp/oci-validation.XXXXXX)
# the suite leaves bundles (some still mounted) in /tmp/ocitest*, and
# cgroups (testdir/, uuid-named) when a runtime fails half-way: remove
# what appeared during this run
ls -d /tmp/ocitest* >"$res/tmp.before" 2>/dev/null
ls -d /sys/fs/cgroup/*/* >"$res/cg.before" 2>/dev/null
# cgroups left by a runtime that failed half-way go after each file and
# runtime: every relative_* file uses the same cgroupsPath, and a leftover
# of one runtime (crun leaves its cgroup when the blkio or hugetlb file
# fails) made the next runtime's create fail with "exists already"
clean_cgroups() {
	local d
	for d in /sys/fs/cgroup/*/testdir /sys/fs/cgroup/*/????????-????-????-????-????????????; do
		[ -d "$d" ] && ! grep -qxF "$d" "$res/cg.before" || continue
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
}
cleanup() {
	local d m
	for d in /tmp/ocitest*; do
		[ -d "$d" ] && ! grep -qxF "$d" "$res/tmp.before" || continue
		for m in $(grep -o " $d[^ ]*" /proc/mounts | sort -r); do umount -l "$m"; done
		rm -rf --one-file-system "$d"
	done
	clean_cgroups
	rm -rf "$res"
}
trap cleanup EXIT
for t in $tests; do
	for rt in $RUNTIMES; do
		[ -n "${bin[$rt]:-}" ] || continue
		wrap=()
		# Debian's crun 1.8 fails every start on a host that has both v1
		# controllers and a cgroup2 mount at /sys/fs/cgroup/unified (it
		# takes the host for a hybrid one and finds no controllers there).
		# It works with that mount gone, so crun -- and only crun -- runs
		# each file in a private mount namespace with it unmounted; the
		# host's mount is never touched (private propagation). What crun
		# then writes into the bare mountpoint directory on the cgroup
		# tmpfs (`unified/<id>/cgroup.procs`) would outlive the namespace,
		# hidden under the host's mount: it is removed, and said, after
		# each file.
		if [ "$rt" = crun ] && mountpoint -q /sys/fs/cgroup/unified; then
			# shellcheck disable=SC2016
			wrap=(unshare -m --propagation private sh -c 'umount /sys/fs/cgroup/unified || exit 1
				"$@"; rc=$?
				n=$(ls -A /sys/fs/cgroup/unified | wc -l)
				[ "$n" = 0 ] || { find /sys/fs/cgroup/unified -mindepth 1 -delete
					echo "# crun left $n entries in the unmounted cgroup2 mountpoint (removed)"; }
				exit $rc' sh)
		fi
		(cd "$out" && RUNTIME=${bin[$rt]} timeout "$TIMEOUT" "${wrap[@]}" "./validation/$t/$t.t") >"$res/$t.$rt" 2>&1 </dev/null
		echo $? >"$res/$t.$rt.rc"
		clean_cgroups
	done
done

# --- table ---
python3 - "$res" "$RUNTIMES" $tests <<'EOF'
import os, re, sys
res, runtimes, tests = sys.argv[1], [r for r in sys.argv[2].split()], sys.argv[3:]
runtimes = [r for r in runtimes if any(os.path.exists(os.path.join(res, f"{t}.{r}")) for t in tests)]
def count(path):
    ok = nok = 0
    planned = None
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return None
    for line in text.splitlines():
        if re.match(r"^not ok\b", line):
            if "# SKIP" not in line and "# TODO" not in line:
                nok += 1
        elif re.match(r"^ok\b", line):
            ok += 1
        m = re.match(r"^1\.\.(\d+)", line)
        if m:
            planned = int(m.group(1))
    if planned is None or ok + nok == 0:
        # Some files never print an ok line: process_rlimits_fail exits 0
        # silently when the runtime refuses the config; prestart_fail,
        # poststart, poststop print `1..0` and report a failure only as
        # a YAML diagnostic (`  ---`). Exit 0 with neither: one pass.
        # Anything else (a diagnostic, a crash, a hang): one failure.
        try:
            rc = int(open(path + ".rc").read())
        except (OSError, ValueError):
            rc = 1
        if rc == 0 and ok + nok == 0 and not re.search(r"^\s*---\s*$", text, re.M):
            ok += 1
        else:
            nok += 1
    return ok, nok
tot = {r: [0, 0] for r in runtimes}
worse = []
print("%-38s" % "file" + "".join("%14s" % r for r in runtimes))
for t in tests:
    row, fails = "%-38s" % t, {}
    for r in runtimes:
        c = count(os.path.join(res, f"{t}.{r}"))
        if c is None:
            row += "%14s" % "-"
            continue
        tot[r][0] += c[0]; tot[r][1] += c[1]
        fails[r] = c[1]
        row += "%14s" % f"{c[0]}/{c[1]}"
    print(row)
    if "cryo" in fails and "crun" in fails and fails["crun"] == 0 and fails["cryo"] > 0:
        worse.append(t)
print("%-38s" % "TOTAL pass/fail" + "".join("%14s" % f"{tot[r][0]}/{tot[r][1]}" for r in runtimes))
if worse:
    print("# files where crun passes and cryo fails: " + " ".join(worse))
if "cryo" in tot and "crun" in tot:
    gate = tot["cryo"][1] < tot["crun"][1] and not worse
    print("# gate (cryo fails fewer than crun, no file where only crun passes): " + ("holds" if gate else "does NOT hold"))
EOF
