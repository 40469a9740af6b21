# SPDX-License-Identifier: GPL-2.0-only
# What the side-by-side benchmarks of tests/bench share (sourced, after
# `set -euo pipefail`). bench_init NAME CMD... sets SRC, CRYO and a
# temporary dir T (removed at exit by bench_cleanup, which a script may
# extend through BENCH_CLEANUP, a function name) and skips (77) without
# root or one of the commands.

bench_init() {
	BENCH=$1
	shift
	SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	CRYO=${CRYO_BIN:-$SRC/build/cryo}
	[ "$(id -u)" = 0 ] || { echo "$BENCH: needs root" >&2; exit 77; }
	for c in "$@"; do
		command -v "$c" >/dev/null || { echo "$BENCH: needs $c" >&2; exit 77; }
	done
	[ -x "$CRYO" ] || { echo "$BENCH: build cryo first ($CRYO)" >&2; exit 1; }
	T=$(mktemp -d /tmp/cryo-bench.XXXXXX)
	trap bench_cleanup EXIT
}

bench_cleanup() {
	[ -n "${BENCH_CLEANUP:-}" ] && "$BENCH_CLEANUP"
	chattr -i "$T/cryo-immutable" 2>/dev/null || true
	[ -e "$T/b" ] && "$SRC/examples/mkbundle.sh" --teardown "$T/b" >/dev/null 2>&1
	rm -rf "$T"
}

# crun 1.8 runs only where /sys/fs/cgroup/unified is not mounted: in a
# private mount namespace that detaches it (never on the host)
crun_ns() { unshare -m sh -c "umount -l /sys/fs/cgroup/unified && exec $*"; }
CRUN_NS_PREFIX="unshare -m sh -c 'umount -l /sys/fs/cgroup/unified && exec"

# bench_bundle CMD...: $T/b, a busybox bundle (rootfs on its own ext4
# image) running CMD, with the same minimal profile for every runtime:
# no resources, no cgroup namespace, each runtime's default cgroup place.
bench_bundle() {
	"$SRC/examples/mkbundle.sh" --size 32 "$T/b" "$@" >/dev/null
	python3 - "$T/b/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"].pop("resources", None)
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "cgroup"]
json.dump(c, open(p, "w"), indent=1)
PY
	mkdir -p "$T/cryo" "$T/runc" "$T/crun"
}

# A copy of cryo made immutable (chattr +i): CVE-2019-5736 can't touch it,
# so cryo skips its sealed-memfd re-exec (a deployment choice, shown
# apart). Prints its path, or nothing where chattr +i does not work.
bench_immutable_cryo() {
	cp "$CRYO" "$T/cryo-immutable"
	chattr +i "$T/cryo-immutable" 2>/dev/null && echo "$T/cryo-immutable"
	return 0
}

# bench_compare WHAT N CRYO_CMD RUNC_CMD CRUN_CMD [IMMUTABLE_CMD]: each
# command once (it must work), then all of them and crun's unshare
# wrapper alone in one hyperfine run of N rounds; prints the medians and
# cryo's ratios, "WHAT cryo/runc = ...".
bench_compare() {
	local what=$1 n=$2 cryo_cmd=$3 runc_cmd=$4 crun_cmd=$5 imm_cmd=${6:-} cmd
	local unshare_cmd="$CRUN_NS_PREFIX true'"
	local extra=()

	for cmd in "$cryo_cmd" "$runc_cmd" "$crun_cmd"; do
		sh -c "$cmd </dev/null" >/dev/null 2>&1 || { echo "$BENCH: failed: $cmd" >&2; sh -c "$cmd" || true; exit 1; }
	done
	[ -n "$imm_cmd" ] && extra=(-n cryo-immutable "sh -c \"$imm_cmd\"")
	hyperfine -N --warmup 3 --runs "$n" --export-json "$T/h.json" \
		-n cryo "sh -c \"$cryo_cmd\"" -n runc "sh -c \"$runc_cmd\"" -n crun "sh -c \"$crun_cmd\"" \
		-n "unshare-only" "sh -c \"$unshare_cmd\"" "${extra[@]}" >/dev/null
	python3 - "$T/h.json" "$what" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
w = sys.argv[2] + " " if sys.argv[2] else ""
m = {k: v["median"] * 1000 for k, v in r.items()}
for k in ("cryo", "cryo-immutable", "runc", "crun", "unshare-only"):
    if k not in m:
        continue
    print(f"{k:13s} median {m[k]:8.2f} ms  (mean {r[k]['mean']*1000:.2f} ± {r[k]['stddev']*1000:.2f})")
crun_net = m["crun"] - m["unshare-only"]
print(f"{w}cryo/runc = {m['cryo']/m['runc']:.2f}")
print(f"{w}cryo/crun = {m['cryo']/m['crun']:.2f}  (crun incl. its unshare wrapper)")
print(f"{w}cryo/crun = {m['cryo']/crun_net:.2f}  (crun minus the wrapper's own {m['unshare-only']:.2f} ms)")
if "cryo-immutable" in m:
    print(f"{w}cryo-immutable/runc = {m['cryo-immutable']/m['runc']:.2f}, /crun = {m['cryo-immutable']/m['crun']:.2f}, "
          f"/crun-net = {m['cryo-immutable']/crun_net:.2f}")
PY
}
