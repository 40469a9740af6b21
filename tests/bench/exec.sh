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
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CRYO=${CRYO_BIN:-$SRC/build/cryo}
[ "$(id -u)" = 0 ] || { echo "exec.sh: needs root" >&2; exit 77; }
for c in hyperfine runc crun busybox; do
	command -v $c >/dev/null || { echo "exec.sh: needs $c" >&2; exit 77; }
done
[ -x "$CRYO" ] || { echo "exec.sh: build cryo first ($CRYO)" >&2; exit 1; }

T=$(mktemp -d /tmp/cryo-bench.XXXXXX)
id=bench-exec-$$
crun_ns() { unshare -m sh -c "umount -l /sys/fs/cgroup/unified && exec $*"; }
cleanup() {
	chattr -i "$T/cryo-immutable" 2>/dev/null || true
	"$CRYO" --root "$T/cryo" delete --force "$id" >/dev/null 2>&1 || true
	runc --root "$T/runc" delete --force "$id" >/dev/null 2>&1 || true
	crun_ns crun --root "$T/crun" delete --force "$id" >/dev/null 2>&1 || true
	"$SRC/examples/mkbundle.sh" --teardown "$T/b" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
"$SRC/examples/mkbundle.sh" --size 32 "$T/b" sh -c 'while :; do sleep 1; done' >/dev/null
python3 - "$T/b/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["linux"].pop("resources", None)
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "cgroup"]
json.dump(c, open(p, "w"), indent=1)
PY
cd "$T/b"
mkdir -p "$T/cryo" "$T/runc" "$T/crun"
"$CRYO" --root "$T/cryo" run -d --bundle "$T/b" "$id" </dev/null >/dev/null 2>&1
runc --root "$T/runc" run -d --bundle "$T/b" "$id" </dev/null >/dev/null 2>&1
crun_ns crun --root "$T/crun" run -d --bundle "$T/b" "$id" </dev/null >/dev/null 2>&1

cryo_cmd="$CRYO --root $T/cryo exec $id /bin/true"
runc_cmd="runc --root $T/runc exec $id /bin/true"
crun_cmd="unshare -m sh -c 'umount -l /sys/fs/cgroup/unified && exec crun --root $T/crun exec $id /bin/true'"
unshare_cmd="unshare -m sh -c 'umount -l /sys/fs/cgroup/unified && exec true'"
# a copy of cryo made immutable (chattr +i): CVE-2019-5736 can't touch it,
# so cryo skips its sealed-memfd re-exec (a deployment choice, shown apart)
cp "$CRYO" "$T/cryo-immutable"
extra=()
if chattr +i "$T/cryo-immutable" 2>/dev/null; then
	extra=(-n cryo-immutable "sh -c \"$T/cryo-immutable --root $T/cryo exec $id /bin/true\"")
fi
for cmd in "$cryo_cmd" "$runc_cmd" "$crun_cmd"; do
	sh -c "$cmd </dev/null" >/dev/null 2>&1 || { echo "exec.sh: failed: $cmd" >&2; sh -c "$cmd" || true; exit 1; }
done
hyperfine -N --warmup 3 --runs "$N" --export-json "$T/h.json" \
	-n cryo "sh -c \"$cryo_cmd\"" -n runc "sh -c \"$runc_cmd\"" -n crun "sh -c \"$crun_cmd\"" \
	-n "unshare-only" "sh -c \"$unshare_cmd\"" "${extra[@]}" >/dev/null
python3 - "$T/h.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
m = {k: v["median"] * 1000 for k, v in r.items()}
for k in ("cryo", "cryo-immutable", "runc", "crun", "unshare-only"):
    if k not in m:
        continue
    print(f"{k:13s} median {m[k]:8.2f} ms  (mean {r[k]['mean']*1000:.2f} ± {r[k]['stddev']*1000:.2f})")
crun_net = m["crun"] - m["unshare-only"]
print(f"exec cryo/runc = {m['cryo']/m['runc']:.2f}")
print(f"exec cryo/crun = {m['cryo']/m['crun']:.2f}  (crun incl. its unshare wrapper)")
print(f"exec cryo/crun = {m['cryo']/crun_net:.2f}  (crun minus the wrapper's own {m['unshare-only']:.2f} ms)")
if "cryo-immutable" in m:
    print(f"exec cryo-immutable/runc = {m['cryo-immutable']/m['runc']:.2f}, /crun = {m['cryo-immutable']/m['crun']:.2f}, "
          f"/crun-net = {m['cryo-immutable']/crun_net:.2f}")
PY
