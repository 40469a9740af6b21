# SPDX-License-Identifier: GPL-2.0-only
"""Freeze latency, side by side in one run (driven by tests/bench/freeze.sh).

Every contender freezes the same cgroup holding N sleeping tasks and is timed
until the kernel reports it FROZEN; contenders alternate within each round so
machine noise hits them alike; medians are compared as ratios.

  raw        tests/bench/bench_rawfreeze: write + wait for the event (v2) or
             re-read freezer.state every ms (v1), as a process
  cryo       cryo freeze --cgroup, as a process
  raw-lib    the raw op timed inside its process (no exec)
  cryo-lib   libcryo's cryo_freezer_freeze() timed inside its process
  runc       runc pause (waits for FROZEN itself)
  crun       crun pause, then polled until freezer.state says FROZEN
             (crun 1.8 does not wait)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

BUILD, T, MODE = sys.argv[1], sys.argv[2], sys.argv[3]
NS = [int(x) for x in os.environ.get("BENCH_TASKS", "1 100 1000").split()]
ITERS = {1: 40, 100: 25, 1000: 12}
RAW = os.path.join(BUILD, "tests/bench/bench_rawfreeze")
LIB = os.path.join(BUILD, "tests/bench/bench_libfreeze")
CRYO = os.path.join(BUILD, "cryo")
TAG = "cryo-bench-%d" % os.getpid()
V1 = "/sys/fs/cgroup/freezer"
V2 = "/sys/fs/cgroup/unified"


def wall_us(argv):
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0] if argv[0].startswith("/") else shutil.which(argv[0]), argv, os.environ)
    _, st = os.waitpid(pid, 0)
    d = (time.perf_counter() - t) * 1e6
    if st != 0:
        raise SystemExit("%s failed (%d)" % (" ".join(argv), st))
    return d


def out_us(argv):
    return float(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)


def state(cg):
    if os.path.exists(cg + "/freezer.state"):
        return open(cg + "/freezer.state").read().strip()
    ev = dict(line.split() for line in open(cg + "/cgroup.events"))
    return "FROZEN" if ev.get("frozen") == "1" else "THAWED"


def count(cg):
    return len(open(cg + "/cgroup.procs").read().split())


def wait_count(cg, n):
    for _ in range(1200):
        if count(cg) >= n:
            return
        time.sleep(0.05)
    raise SystemExit("%s: only %d of %d tasks" % (cg, count(cg), n))


def raw_thaw(cg):
    subprocess.run([RAW, cg, "thaw"], check=True)


def make_cgroup(root, name, n):
    cg = "%s/%s-%s" % (root, TAG, name)
    os.mkdir(cg)
    subprocess.Popen(["sh", "-c", 'echo $$ > "$0/cgroup.procs"; for i in $(seq %d); do sleep 100000 & done; exec sleep 100000' % n, cg],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_count(cg, n + 1)
    return cg


def remove_cgroup(cg):
    if not os.path.isdir(cg):
        return
    if os.path.exists(cg + "/freezer.state"):
        open(cg + "/freezer.state", "w").write("THAWED")
    else:
        open(cg + "/cgroup.freeze", "w").write("0")
    for _ in range(200):
        pids = open(cg + "/cgroup.procs").read().split()
        if not pids:
            break
        for p in pids:
            try:
                os.kill(int(p), 9)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    os.rmdir(cg)


def rounds(cg, n, contenders):
    """contenders: name -> (freeze() returning us, thaw())"""
    res = {k: [] for k in contenders}
    names = list(contenders)
    for i in range(ITERS.get(n, 10)):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            freeze, thaw = contenders[name]
            us = freeze()
            if state(cg) != "FROZEN":
                raise SystemExit("%s left %s %s" % (name, cg, state(cg)))
            res[name].append(us)
            thaw()
            time.sleep(0.01)
    return {k: statistics.median(v) for k, v in res.items()}


def report(title, med, pairs):
    cols = "  ".join("%s %.0f us" % (k, v) for k, v in med.items())
    ratios = "  ".join("%s/%s = %.2f" % (a, b, med[a] / med[b]) for a, b in pairs)
    print("%-28s %s\n%-28s %s" % (title, cols, "", ratios), flush=True)


def host():
    for n in NS:
        for root, h in ((V2, "v2"), (V1, "v1")):
            cg = make_cgroup(root, "%s-%d" % (h, n), n)
            try:
                t = lambda: raw_thaw(cg)
                med = rounds(cg, n, {
                    "raw": (lambda: wall_us([RAW, cg, "freeze"]), t),
                    "cryo": (lambda: wall_us([CRYO, "freeze", "--cgroup", cg]), t),
                    "raw-lib": (lambda: out_us([RAW, cg, "freeze", "--print-us"]), t),
                    "cryo-lib": (lambda: out_us([LIB, cg]), t),
                })
                report("%s  %4d tasks" % (h, n), med, [("cryo", "raw"), ("cryo-lib", "raw-lib")])
            finally:
                remove_cgroup(cg)
        if shutil.which("runc"):
            oci(n, "runc")


def bundle(n, name):
    b = os.path.join(T, "bundle-%s-%d" % (name, n))
    rootfs = os.path.join(b, "rootfs")
    for d in ("bin", "proc", "dev", "sys", "tmp"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    shutil.copy("/bin/busybox", rootfs + "/bin/busybox")
    for c in ("sh", "sleep", "seq"):
        os.symlink("busybox", rootfs + "/bin/" + c)
    subprocess.run(["runc", "spec"], cwd=b, check=True)
    c = json.load(open(b + "/config.json"))
    c["process"]["terminal"] = False
    c["process"]["args"] = ["/bin/sh", "-c", "for i in $(seq %d); do sleep 100000 & done; exec sleep 100000" % n]
    c["root"]["readonly"] = False
    c["linux"]["cgroupsPath"] = "/%s-%s-%d" % (TAG, name, n)
    c["linux"].pop("resources", None)
    json.dump(c, open(b + "/config.json", "w"))
    return b, "/%s-%s-%d" % (TAG, name, n)


def oci(n, rt):
    b, cgpath = bundle(n, rt)
    state_dir = os.path.join(T, rt + "-state")
    cid = "%s-%s-%d" % (TAG, rt, n)
    cg = V1 + cgpath
    subprocess.run([rt, "--root", state_dir, "run", "-d", "--bundle", b, cid], check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        wait_count(cg, n + 1)
        t = lambda: raw_thaw(cg)

        def pause():
            t0 = time.perf_counter()
            wall_us([rt, "--root", state_dir, "pause", cid])
            # crun 1.8 returns before the cgroup is FROZEN: wait for it
            while state(cg) != "FROZEN":
                time.sleep(0.0002)
            return (time.perf_counter() - t0) * 1e6

        med = rounds(cg, n, {
            "raw": (lambda: wall_us([RAW, cg, "freeze"]), t),
            "cryo": (lambda: wall_us([CRYO, "freeze", "--cgroup", cg]), t),
            rt: (pause, lambda: wall_us([rt, "--root", state_dir, "resume", cid])),
        })
        report("%s (v1) %4d tasks" % (rt, n), med, [("cryo", "raw"), (rt, "cryo")])
    finally:
        subprocess.run([rt, "--root", state_dir, "kill", cid, "KILL"], stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        subprocess.run([rt, "--root", state_dir, "delete", "-f", cid], stderr=subprocess.DEVNULL)
        if os.path.isdir(cg):
            remove_cgroup(cg)


if MODE == "host":
    host()
elif MODE == "crun":
    for n in NS:
        oci(n, "crun")
