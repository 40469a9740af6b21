#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Benchmark (not a test): migrate's channel alone (bench_transport.c), no
# CRIU: mutual TLS on 127.0.0.1, MIB MiB of 256 KiB chunk frames, with
# receive's per-byte work added stage by stage (hash: the image digest;
# write: into a file). Each on both cores (sender and receiver side by
# side) and on one core (as a host with one core left beside CRIU), REPS
# runs, medians in MB/s. What a plain migration's transfer could reach
# here if nothing else ran.
#   tests/bench/transport.sh [BUILD_DIR] [MIB] [REPS]     (default 1024, 3)
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
MIB=${2:-1024}
REPS=${3:-3}
B=$BUILD/tests/bench/bench_transport
[ -x "$B" ] || { echo "build first: $B missing" >&2; exit 1; }
CRYO_SRC=$SRC CRYO_BUILD=$BUILD
source "$SRC/tests/lib/common.sh"
. "$SRC/tests/lib/migrate.sh"
# the migration tests' certificates, the server's for the address it listens on here
MIG_IP_DST=127.0.0.1
mig_tls_certs "$T/pki"

# one run's MB/s; a failed run ends the benchmark
run() { (cd "$T" && "$@" "$B" "$T/pki" "$MIB" "$st") | awk '{ print $1 }' | grep . || { echo "bench_transport failed ($st)" >&2; exit 1; }; }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo "# migrate's channel alone: $MIB MiB, median of $REPS, MB/s ($(nproc) cpus, $(uname -r))"
printf '%-12s %10s %10s\n' stages "2 cores" "1 core"
for st in none hash write hash,write; do
	two=$(for _ in $(seq "$REPS"); do run env; done | median)
	one=$(for _ in $(seq "$REPS"); do run taskset -c 0; done | median)
	printf '%-12s %10s %10s\n' "$st" "$two" "$one"
done
