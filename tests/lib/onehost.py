#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Watch a container on two "hosts" and record every moment it ran on both.

    onehost.py CGROUP_A CGROUP_B STOPFILE OUT [INTERVAL_MS]

CGROUP_A and CGROUP_B are the container's cgroup2 dirs on each host (as
this host sees them). A host runs the container when its cgroup is not
frozen (cgroup.events says "frozen 1" only once every task is) and holds
a task that is not stopped (a task in state T or t, stopped by a signal
or by a tracer such as CRIU, runs nothing). Every INTERVAL_MS (default
20) both are sampled until STOPFILE exists; OUT gets one line:

    samples N both M a A b B

N samples, M of them with the container running on both hosts, A and B
of them with it running on that host. A sample never sees a host change
its mind half-way: each host is read whole, one after the other.
"""
import os
import sys
import time


def tasks(cg):
    try:
        with open(os.path.join(cg, "cgroup.threads")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def frozen(cg):
    try:
        with open(os.path.join(cg, "cgroup.events")) as f:
            return "frozen 1" in f.read()
    except OSError:
        return False


def state(tid):
    try:
        with open(f"/proc/{tid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def runs(cg):
    if frozen(cg):
        return False
    return any(state(t) not in ("T", "t", "X", "Z") for t in tasks(cg))


def main():
    a, b, stop, out = sys.argv[1:5]
    interval = (int(sys.argv[5]) if len(sys.argv) > 5 else 20) / 1000.0
    n = both = na = nb = 0
    parent = os.getppid()
    # until told to stop; or until the test that started it is gone (its
    # parent died, or its dir was removed: a test killed at its timeout
    # never writes the stop file)
    while not os.path.exists(stop):
        if os.getppid() != parent or not os.path.isdir(os.path.dirname(os.path.abspath(stop))):
            return
        ra, rb = runs(a), runs(b)
        n += 1
        na += ra
        nb += rb
        if ra and rb:
            both += 1
        time.sleep(interval)
    with open(out, "w") as f:
        f.write(f"samples {n} both {both} a {na} b {nb}\n")


if __name__ == "__main__":
    main()
