#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The rootfs frozen window (FIFREEZE -> FITHAW) of freeze -> snapshot ->
# thaw on a 1 GiB container rootfs image, side by side in one run:
#
#   (c) util-linux `fsfreeze -f; fsfreeze -u`: the bare ioctl pair
#   cryo  `cryo fsfreeze --path R -- true`: cryo's freeze + thaw, watchdog
#         and journal included (its own FIFREEZE..FITHAW, and wall time)
#   (a) snapshot = `cp --reflink=always` of the image file on xfs
#   (b) snapshot = plain copy (`cp --reflink=never`) of the image file
#
# The rootfs is ext4 in rootfs.img, loop-mounted; rootfs.img lives on an
# xfs filesystem (itself a loop-mounted image) so it can be reflinked.
# Before each round 16 MiB are written to the rootfs and left dirty, so
# FIFREEZE has something to flush, as in a live container.
#
# Usage: tests/bench/fsfreeze.sh [ROUNDS]   (root; CRYO_BIN or build/cryo)
# Numbers are medians of ROUNDS (default 5; 3 for the plain copy), ratios
# against (c). Absolute times on shared machines are noise; ratios are the
# result.
set -euo pipefail

ROUNDS=${1:-5}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CRYO_BIN=${CRYO_BIN:-$SRC/build/cryo}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }
for c in mkfs.xfs mkfs.ext4 losetup fsfreeze python3; do
	command -v $c >/dev/null || { echo "SKIP: needs $c"; exit 77; }
done
[ -x "$CRYO_BIN" ] || { echo "SKIP: no cryo binary at $CRYO_BIN"; exit 77; }

T=$(mktemp -d /tmp/cryo-bench-fsfreeze.XXXXXX)
OUT=$T/outer R=$T/rootfs ROOT=$T/state
OUTER_DEV="" INNER_DEV=""
cleanup() {
	set +e
	fsfreeze -u "$R" 2>/dev/null
	mountpoint -q "$R" && umount "$R"
	[ -n "$INNER_DEV" ] && losetup -d "$INNER_DEV"
	mountpoint -q "$OUT" && umount "$OUT"
	[ -n "$OUTER_DEV" ] && losetup -d "$OUTER_DEV"
	rm -rf "$T"
}
trap cleanup EXIT

us() { echo $(( ${EPOCHREALTIME/./} )); }

mkdir -p "$OUT" "$R"
truncate -s 4G "$T/outer.img"
mkfs.xfs -q -f -m reflink=1 "$T/outer.img"
OUTER_DEV=$(losetup -f --show "$T/outer.img")
mount "$OUTER_DEV" "$OUT"
truncate -s 1G "$OUT/rootfs.img"
mkfs.ext4 -q -F "$OUT/rootfs.img"
INNER_DEV=$(losetup -f --show "$OUT/rootfs.img")
mount "$INNER_DEV" "$R"
# a rootfs with 384 MiB of data in it
dd if=/dev/urandom of="$R/data" bs=1M count=384 status=none
sync

dirty() { dd if=/dev/urandom of="$R/dirty" bs=1M count=16 conv=notrunc status=none; }

# cryo prints "thawed `R` (frozen 12.345 ms)"
cryo_window_us() { sed -n 's/.*(frozen \([0-9]*\)\.\([0-9]*\) ms).*/\1\2/p' | sed 's/^0*//;s/^$/0/'; }

declare -A S  # name -> space-separated samples in us

sample() { S[$1]="${S[$1]:-} $2"; }

# NAME HOW FILE TIMEOUT: a copy of the image (cp --reflink=HOW to $OUT/FILE)
# inside a freeze, each time just after writes: by hand (fsfreeze, cp,
# thaw: c_NAME), then by cryo (the window it prints: cryo_NAME_window)
snapshot_pair() {
	local name=$1 how=$2 file=$OUT/$3 tmo=$4 t0 t1 out

	dirty
	t0=$(us); fsfreeze -f "$R"; cp --reflink="$how" "$OUT/rootfs.img" "$file"; fsfreeze -u "$R"; t1=$(us)
	sample "c_$name" $((t1 - t0))
	rm -f "$file"

	dirty
	out=$("$CRYO_BIN" --root "$ROOT" fsfreeze --path "$R" --timeout "$tmo" --keep-writable "$OUT" -- \
		cp --reflink="$how" "$OUT/rootfs.img" "$file")
	sample "cryo_${name}_window" "$(echo "$out" | cryo_window_us)"
	rm -f "$file"
}

run_round() {
	local t0 t1 out

	sync
	t0=$(us); fsfreeze -f "$R"; fsfreeze -u "$R"; t1=$(us)
	sample c_clean $((t1 - t0))
	t0=$(us); out=$("$CRYO_BIN" --root "$ROOT" fsfreeze --path "$R" --timeout 60 -- true); t1=$(us)
	sample cryo_clean_wall $((t1 - t0))
	sample cryo_clean_window "$(echo "$out" | cryo_window_us)"

	dirty
	t0=$(us); fsfreeze -f "$R"; fsfreeze -u "$R"; t1=$(us)
	sample c_bare $((t1 - t0))

	dirty
	t0=$(us); out=$("$CRYO_BIN" --root "$ROOT" fsfreeze --path "$R" --timeout 60 -- true); t1=$(us)
	sample cryo_bare_wall $((t1 - t0))
	sample cryo_bare_window "$(echo "$out" | cryo_window_us)"

	snapshot_pair reflink always snap.img 60
}

run_copy_round() { snapshot_pair copy never copy.img 120; }

# warm-up: page cache, binaries
run_round >/dev/null
S=()
for ((i = 0; i < ROUNDS; i++)); do run_round; done
for ((i = 0; i < (ROUNDS < 3 ? ROUNDS : 3); i++)); do run_copy_round; done

args=()
for k in "${!S[@]}"; do args+=("$k=${S[$k]}"); done
python3 - "${args[@]}" <<'PY'
import statistics, sys
s = {}
for a in sys.argv[1:]:
    k, v = a.split("=", 1)
    s[k] = [int(x) for x in v.split()]
med = {k: statistics.median(v) for k, v in s.items()}
ms = lambda k: med[k] / 1000
base = med["c_bare"]
print("fsfreeze bench: 1 GiB ext4 rootfs image (384 MiB data, 16 MiB dirty per round) on loop-mounted xfs")
print("frozen window FIFREEZE..FITHAW, median of %d rounds (copy: %d)" % (len(s["c_bare"]), len(s["c_copy"])))
rows = [
    ("nothing dirty: (c) fsfreeze -f; -u (wall)", "c_clean"),
    ("nothing dirty: cryo fsfreeze -- true (wall)", "cryo_clean_wall"),
    ("nothing dirty: cryo's own FIFREEZE..FITHAW", "cryo_clean_window"),
    ("(c) util-linux fsfreeze -f; -u (bare ioctl pair, wall)", "c_bare"),
    ("cryo fsfreeze -- true: wall time of the command", "cryo_bare_wall"),
    ("cryo fsfreeze -- true: cryo's own FIFREEZE..FITHAW", "cryo_bare_window"),
    ("(a) fsfreeze -f; cp --reflink; fsfreeze -u (wall)", "c_reflink"),
    ("(a) cryo fsfreeze -- cp --reflink (cryo's window)", "cryo_reflink_window"),
    ("(b) fsfreeze -f; plain cp; fsfreeze -u (wall)", "c_copy"),
    ("(b) cryo fsfreeze -- plain cp (cryo's window)", "cryo_copy_window"),
]
for label, k in rows:
    print("  %-56s %10.2f ms  %7.2fx (c)" % (label, ms(k), med[k] / base))
print("ratios: reflink/copy window %.3f; cryo bare window / (c) %.2f; cryo bare wall / (c) %.2f;"
      " nothing dirty: cryo wall / (c) %.2f" % (
    med["cryo_reflink_window"] / med["cryo_copy_window"], med["cryo_bare_window"] / base,
    med["cryo_bare_wall"] / base, med["cryo_clean_wall"] / med["c_clean"]))
PY
