#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Feed a live `cryo receive` mutated migration streams (tests/soak/fuzz_receive.sh).

    fuzz_frames.py --cryo BIN --dir D --seconds S --out FIGURES
                   [--tls ADDR:PORT --cert C --key K --ca CA --ccert C --ckey K]
                   [--verify-key KEY] [--seed N] STREAM...

Each STREAM is what a real source sent a receiver (recorded by the test):
4-byte big-endian lengths, each followed by one MigrateFrame. Until S
seconds passed, one stream is mutated and fed to a fresh `cryo receive`
(--stdio on its stdin, or over mutual TLS when --tls is given) with its
root and bundle dir under D. Mutations, picked at random, one to four at
a time: a frame dropped, repeated, swapped with the next, or one of
another stream put in; bytes of a frame flipped, set or cut out (its
length fixed, or not); a length made bigger, smaller or huge; a file name
or a round number changed to a hostile one; the stream cut short.

A run passes when the receiver ends within its --timeout plus a margin,
with status 0 (it took what it got: a mutation that changed nothing of
substance) or 1 with an error line, no sanitizer report and nothing left
in its dirs; anything else is a finding: its input is kept in
D/findings/. FIGURES gets one line of counts (runs, refused, accepted,
crashes, hangs, leftovers, findings) as JSON.
"""
import argparse
import json
import os
import random
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import time

HOSTILE_NAMES = [b"../../../etc/passwd", b"parent", b"/etc/shadow", b".hidden", b"a/b", b"..",
                 b"pages-1.img\x00x", b"manifest.pb", b"x" * 300]


def frames(data):
    out, i = [], 0
    while i + 4 <= len(data):
        n = struct.unpack(">I", data[i:i + 4])[0]
        out.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return out


def join(fs):
    return b"".join(struct.pack(">I", len(f)) + f for f in fs)


def replace_same_len(body, rnd):
    """A printable run of the frame (a file name, a phase) made hostile, lengths kept."""
    runs, start = [], None
    for i, b in enumerate(body + b"\x00"):
        if 0x21 <= b <= 0x7e:
            start = i if start is None else start
        elif start is not None:
            if i - start >= 4:
                runs.append((start, i))
            start = None
    if not runs:
        return body
    s, e = rnd.choice(runs)
    bad = rnd.choice(HOSTILE_NAMES)
    bad = (bad * (1 + (e - s) // len(bad)))[:e - s]
    return body[:s] + bad + body[e:]


def mutate(streams, rnd):
    fs = list(frames(rnd.choice(streams)))
    raw_tail = None
    for _ in range(rnd.randint(1, 4)):
        if not fs:
            break
        k = rnd.randrange(len(fs))
        m = rnd.randrange(12)
        if m == 0:
            del fs[k]
        elif m == 1:
            fs.insert(k, fs[k])
        elif m == 2 and k + 1 < len(fs):
            fs[k], fs[k + 1] = fs[k + 1], fs[k]
        elif m == 3:
            other = frames(rnd.choice(streams))
            if other:
                fs.insert(k, rnd.choice(other))
        elif m in (4, 5):
            b = bytearray(fs[k])
            for _ in range(rnd.randint(1, 8)):
                if b:
                    b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
            fs[k] = bytes(b)
        elif m == 6:
            b = bytearray(fs[k])
            if b:
                b[rnd.randrange(len(b))] = rnd.choice([0, 0xff, 0x7f, 0x80, rnd.randrange(256)])
            fs[k] = bytes(b)
        elif m == 7 and len(fs[k]) > 2:
            s = rnd.randrange(len(fs[k]))
            fs[k] = fs[k][:s] + fs[k][s + rnd.randint(1, 16):]
        elif m == 8:
            fs[k] = replace_same_len(fs[k], rnd)
        elif m == 9:
            # a length that lies: the rest of the stream read as this frame's body
            data = join(fs)
            off = sum(4 + len(f) for f in fs[:k])
            n = len(fs[k])
            lie = rnd.choice([n + rnd.randint(1, 64), max(0, n - rnd.randint(1, 64)), 0xffffffff,
                              64 << 20, rnd.randrange(1 << 32)])
            raw_tail = data[:off] + struct.pack(">I", lie) + data[off + 4:]
            break
        elif m == 10:
            # the stream cut short, maybe in the middle of a frame
            data = join(fs)
            raw_tail = data[:rnd.randrange(max(1, len(data)))]
            break
        else:
            fs.insert(k, os.urandom(rnd.randint(0, 64)))
    return raw_tail if raw_tail is not None else join(fs)


class Runner:
    def __init__(self, a):
        self.a = a
        self.root = os.path.join(a.dir, "root")
        self.bundles = os.path.join(a.dir, "bundles")
        self.fig = {"runs": 0, "refused": 0, "accepted": 0, "crashes": 0, "hangs": 0, "leftovers": 0,
                    "findings": 0, "unclear": 0, "bytes": 0}
        os.makedirs(os.path.join(a.dir, "findings"), exist_ok=True)

    def cmd(self):
        c = [self.a.cryo, "--root", self.root, "receive", "--bundle-dir", self.bundles, "--timeout", "2000"]
        c += ["--verify-key", self.a.verify_key] if self.a.verify_key else ["--allow-unsigned"]
        if self.a.tls:
            c += ["--listen", self.a.tls, "--cert", self.a.cert, "--key", self.a.key, "--ca", self.a.ca,
                  "--accept-timeout", "10000"]
        else:
            c += ["--stdio"]
        return c

    def env(self):
        e = dict(os.environ)
        # verified input reaches the restore, whose rootfs extraction runs; CRIU does not
        e["CRYO_FAULT"] = "restore:criu-restore"
        return e

    def feed_tls(self, data, p):
        host, port = self.a.tls.rsplit(":", 1)
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.a.ca)
        ctx.load_cert_chain(self.a.ccert, self.a.ckey)
        deadline = time.time() + 5
        while True:
            try:
                s = socket.create_connection((host, int(port)), timeout=5)
                break
            except OSError:
                if time.time() > deadline or p.poll() is not None:
                    return
                time.sleep(0.02)
        try:
            with ctx.wrap_socket(s, server_hostname=host) as t:
                t.settimeout(10)
                t.sendall(data)
                try:
                    while t.recv(65536):
                        pass
                except (OSError, ssl.SSLError):
                    pass
        except (OSError, ssl.SSLError):
            pass

    def one(self, data):
        for d in (self.root, self.bundles):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d, mode=0o700)
        self.fig["runs"] += 1
        self.fig["bytes"] += len(data)
        err = open(os.path.join(self.a.dir, "stderr"), "wb")
        if self.a.tls:
            p = subprocess.Popen(self.cmd(), stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=self.env())
            self.feed_tls(data, p)
        else:
            p = subprocess.Popen(self.cmd(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
                                 env=self.env())
            try:
                p.stdin.write(data)
                p.stdin.close()
            except BrokenPipeError:
                pass
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = "hang"
        err.close()
        out = open(os.path.join(self.a.dir, "stderr"), "rb").read()
        why = None
        if rc == "hang":
            self.fig["hangs"] += 1
            why = "hang"
        elif rc not in (0, 1) or b"Sanitizer" in out or b"runtime error:" in out:
            self.fig["crashes"] += 1
            why = f"crash rc={rc}"
        elif rc == 1 and b"cryo:" not in out:
            self.fig["unclear"] += 1
            why = "refused without an error line"
        elif b"Read-only file system" in out:
            why = "wrote outside its dir"
        else:
            self.fig["refused" if rc == 1 else "accepted"] += 1
        left = [os.path.join(r, n) for d in (os.path.join(self.root, ".migrate-in"), self.bundles)
                if os.path.isdir(d) for r, ds, fs in os.walk(d) for n in ds + fs]
        if rc == 0:
            # it took the stream (a restore let through): the container it made goes
            for ident in os.listdir(self.root) if os.path.isdir(self.root) else []:
                if not ident.startswith("."):
                    subprocess.run([self.a.cryo, "--root", self.root, "delete", "--force", ident],
                                   capture_output=True)
        elif left and why is None:
            self.fig["leftovers"] += 1
            why = f"left {left[:3]}"
        if why:
            self.fig["findings"] += 1
            n = self.fig["findings"]
            base = os.path.join(self.a.dir, "findings", f"{n:04d}")
            open(base + ".stream", "wb").write(data)
            open(base + ".txt", "wb").write(why.encode() + b"\n" + out[-4000:])
            print(f"finding {n}: {why}: {out[-300:]!r}", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cryo", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tls")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--ca")
    ap.add_argument("--ccert")
    ap.add_argument("--ckey")
    ap.add_argument("--verify-key")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("streams", nargs="+")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    rnd = random.Random(seed)
    streams = [open(s, "rb").read() for s in a.streams]
    r = Runner(a)
    t0 = time.time()
    # the unmutated streams first: each must be taken or refused cleanly too
    for s in streams:
        r.one(s)
    while time.time() - t0 < a.seconds:
        r.one(mutate(streams, rnd))
    r.fig["seconds"] = round(time.time() - t0)
    r.fig["seed"] = seed
    with open(a.out, "a") as f:
        f.write(json.dumps(r.fig) + "\n")
    print(json.dumps(r.fig))
    return 1 if r.fig["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
