#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Many at once (not a timed test): N containers checkpointed at once, then
# restored at once, by cryo and by runc in the same run, on bundles made
# alike (each a 32 MiB loop-mounted ext4 rootfs running the
# self-checking counter of tests/tools/cryo-test-counter.c with MEM MiB of
# touched memory):
#
#   cryo   `cryo checkpoint` of all N at once (stops them: cgroup freeze,
#          FIFREEZE + rootfs snapshot, BLAKE3 of every file, atomic
#          commit), then `cryo restore -d` of all N at once (verifies all
#          of that, puts the rootfs back, recreates the cgroup)
#   runc   `runc checkpoint` / `runc restore -d` of all N at once
#
# Wall time of each batch, per N, median of REPS; every command must
# succeed (failures are counted and reported, the goal is none) and every
# restored counter must count on with its memory check passing.
#
#   tests/bench/parallel.sh [REPS] [N...]     (default 3, 1 4 16)
#   CRYO_BENCH_MEM=MiB                        (default 16)
#
# Host only (CRIU 4 from tests/setup-criu4.sh; runc gets the same binary
# with CRIU_FAULT=130). Run it under the host lock.
_here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${CRYO_CRIU:-}" ] && [ -x /opt/cryo-criu4/sbin/criu ]; then
	export CRYO_CRIU=/opt/cryo-criu4/sbin/criu
fi
export CRIU_FAULT=${CRIU_FAULT:-130}
source "$_here/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu
need_cmd runc
CRIU=$CRYO_CRIU

REPS=${1:-3}
shift || true
NS=${*:-1 4 16}
MEM=${CRYO_BENCH_MEM:-16}
CNT=$CRYO_BUILD/tests/tools/cryo-test-counter
file "$CNT" | grep -q 'statically linked' || skip "cryo-test-counter is not static (sanitizer build?)"
max=0
for n in $NS; do [ "$n" -gt $max ] && max=$n; done

: >"$T/times"
fails=0
rec() { echo "$1 $2 $3 $4" >>"$T/times"; }
status_of() { cat "$1/rootfs/status" 2>/dev/null; }
count_of() { status_of "$1" | awk '{ print $1 }'; }
wait_counting() { # BUNDLE MIN
	local c
	for _ in $(seq 600); do
		if status_of "$1" | grep -q FAIL; then fail "workload in $1: $(status_of "$1")"; fi
		c=$(count_of "$1")
		[ -n "$c" ] && [ "$c" -gt "$2" ] 2>/dev/null && return 0
		sleep 0.05
	done
	fail "workload in $1 stuck at $(status_of "$1")"
}

# batch SYS OP N CMD...: CMD for containers 1..N at once, @I@ the index; the wall time recorded
batch() {
	local sys=$1 op=$2 n=$3 i t0 pids=() bad=0
	shift 3
	t0=$(now_ms)
	for i in $(seq "$n"); do
		"${@//@I@/$i}" </dev/null >"$T/$sys-$op-$i.out" 2>&1 &
		pids+=($!)
	done
	for i in $(seq "$n"); do
		wait "${pids[$((i - 1))]}" || { bad=$((bad + 1)); log "$sys $op $i/$n failed: $(tail -2 "$T/$sys-$op-$i.out" | tr '\n' ' ')"; }
	done
	rec "$sys" "$op" "$n" $(($(now_ms) - t0))
	fails=$((fails + bad))
	[ $bad = 0 ]
}

for i in $(seq "$max"); do
	for s in c r; do
		bundle_new "$T/b$s$i" /counter /status "$MEM"
		cp "$CNT" "$T/b$s$i/rootfs/counter"
		bundle_set "$T/b$s$i" "c['linux'].pop('resources', None)"
	done
done
RUNC=(runc --root "$T/runc" --criu "$CRIU")
runc_cleanup() {
	local i
	for i in $(seq "$max"); do "${RUNC[@]}" delete --force "pb$i" >/dev/null 2>&1; done
}
at_exit runc_cleanup

bench_cryo() { # N
	local n=$1 i c=()
	for i in $(seq "$n"); do
		rt run -d --bundle "$T/bc$i" "pb$i" </dev/null >/dev/null 2>&1 || fail "cryo run pb$i failed"
	done
	for i in $(seq "$n"); do wait_counting "$T/bc$i" 10; done
	rm -rf "$T/img"
	batch cryo checkpoint "$n" "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img/@I@" "pb@I@"
	for i in $(seq "$n"); do c[$i]=$(count_of "$T/bc$i"); done
	batch cryo restore "$n" "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$T/img/@I@" --bundle "$T/bc@I@" "pb@I@"
	for i in $(seq "$n"); do wait_counting "$T/bc$i" $((${c[$i]:-0} + 10)); done
	for i in $(seq "$n"); do rt delete --force "pb$i" >/dev/null 2>&1 || fail "cryo delete pb$i"; done
}

bench_runc() { # N
	local n=$1 i c=()
	for i in $(seq "$n"); do
		"${RUNC[@]}" run -d --bundle "$T/br$i" "pb$i" </dev/null >/dev/null 2>&1 || fail "runc run pb$i failed"
	done
	for i in $(seq "$n"); do wait_counting "$T/br$i" 10; done
	rm -rf "$T/img" "$T/work"
	# runc makes the image and work dirs, not their parents
	mkdir -p "$T/img" "$T/work"
	batch runc checkpoint "$n" "${RUNC[@]}" checkpoint --image-path "$T/img/@I@" --work-path "$T/work/@I@" "pb@I@"
	for i in $(seq "$n"); do c[$i]=$(count_of "$T/br$i"); done
	batch runc restore "$n" "${RUNC[@]}" restore -d --image-path "$T/img/@I@" --work-path "$T/work/@I@" \
		--bundle "$T/br@I@" "pb@I@"
	for i in $(seq "$n"); do wait_counting "$T/br$i" $((${c[$i]:-0} + 10)); done
	runc_cleanup
}

for rep in $(seq "$REPS"); do
	for n in $NS; do
		log "rep $rep/$REPS: N=$n"
		bench_cryo "$n"
		bench_runc "$n"
	done
done

python3 - "$T/times" "$MEM" "$fails" <<'PY'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    s, op, n, ms = line.split()
    t.setdefault((s, op, int(n)), []).append(float(ms))
ns = sorted({k[2] for k in t})
print("\n# N containers at once, %s MiB each: median wall ms of the batch (cryo / runc)" % sys.argv[2])
print("%4s %12s %12s %7s %12s %12s %7s" % ("N", "cryo dump", "runc dump", "ratio", "cryo rest.", "runc rest.", "ratio"))
for n in ns:
    row = [n]
    for op in ("checkpoint", "restore"):
        c = statistics.median(t.get(("cryo", op, n), [0]))
        r = statistics.median(t.get(("runc", op, n), [0]))
        row += [c, r, c / r if r else float("nan")]
    print("%4d %12.0f %12.0f %7.2f %12.0f %12.0f %7.2f" % tuple(row))
print("failed commands: %s" % sys.argv[3])
PY
[ "$fails" = 0 ] || fail "$fails commands failed"
