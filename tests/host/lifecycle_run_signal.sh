#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# `cryo run` forwards SIGTERM from the first moment (issue 11.6): sent
# right after the container's first output — while `run` may still be
# finishing `start` — it reaches the container, `run` exits with the
# container's status and nothing is left. 20 tries, every one must pass.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-rsig sh -c 'trap "exit 42" TERM; echo up; while :; do sleep 0.05; done'

python3 - "$CRYO_BIN" "$RTROOT" "$B" "$id" <<'PY' || fail "signal forwarding (see above)"
import os, signal, subprocess, sys

cryo, root, bundle, cid = sys.argv[1:]
bad = []
for i in range(20):
    p = subprocess.Popen([cryo, "--root", root, "run", "--bundle", bundle, cid],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    line = p.stdout.readline()
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        bad.append("try %d: run did not exit" % i)
    # a container left running would hold the pipe open: remove it before reading on
    if os.path.exists(os.path.join(root, cid)):
        bad.append("try %d: the container is left behind" % i)
        subprocess.run([cryo, "--root", root, "delete", "--force", cid], capture_output=True)
    rest = p.stdout.read()
    if line.strip() != b"up" or p.returncode != 42:
        bad.append("try %d: rc %d, output %r" % (i, p.returncode, line + rest))
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
for h in unified freezer memory; do
	[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "cgroup $h left"
done
echo ok
