#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""How busy the cores were, slice by slice, in a `perf record -a` file.

    tests/bench/busy.py PERF_DATA [SLICE_MS] [--by-comm]

perf samples every core on a clock, idle ones too (in `swapper`): the
share of samples that are not swapper's is how busy the cores were in
that slice. --by-comm adds the three busiest commands of each slice.
With migrate.sh: CRYO_BENCH_WRAP="perf record -a -o FILE --" records
each migration; this tells whether its transfer was bound by the cores
(both near 100%) or waited on something else.
"""
import collections
import subprocess
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    by_comm = "--by-comm" in sys.argv
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    slice_s = (float(args[1]) if len(args) > 1 else 250.0) / 1000.0
    out = subprocess.run(["perf", "script", "-i", args[0], "-F", "comm,cpu,time"], check=True,
                         capture_output=True, text=True).stdout
    total = collections.Counter()
    idle = collections.Counter()
    comms = collections.defaultdict(collections.Counter)
    cpus = set()
    t0 = None
    for line in out.splitlines():
        # "<comm, maybe with spaces> [CPU] SECONDS:"
        head, sep, rest = line.rpartition("[")
        if not sep:
            continue
        cpu, _, t = rest.partition("]")
        try:
            t = float(t.strip().rstrip(":"))
        except ValueError:
            continue
        comm = head.strip()
        t0 = t if t0 is None else t0
        k = int((t - t0) / slice_s)
        cpus.add(cpu)
        total[k] += 1
        if comm.startswith("swapper"):
            idle[k] += 1
        else:
            comms[k][comm] += 1
    print("# %d cores; busy = samples not in swapper, per %.0f ms" % (len(cpus), slice_s * 1000))
    for k in sorted(total):
        line = "%7.2f s  busy %3.0f%%  (%d samples)" % (k * slice_s, 100.0 * (1 - idle[k] / total[k]), total[k])
        if by_comm:
            line += "  " + ", ".join("%s %.0f%%" % (c, 100.0 * n / total[k]) for c, n in comms[k].most_common(3))
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
