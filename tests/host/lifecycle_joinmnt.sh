#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# linux.namespaces mount with a path (issue 11.2): joining an existing
# mount namespace takes its view as it is. Nothing of that namespace may
# change: no rootfs bind, no /proc or /dev mounts, no pivot_root (which
# would re-root every process living there), no propagation change.
# Tried on a throw-away namespace held by an `unshare -m` process, never
# on the host's.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_cmd unshare

id=rt-jmnt-$$
B=$T/$id
bundle_new "$B" true

# the holder: a private mount namespace with a tmpfs of its own, visible only there
mkdir "$T/view"
unshare -m --propagation private sh -c \
	'mount -t tmpfs -o size=1m jm "$1" && echo here >"$1/marker" && exec sleep 600' sh "$T/view" &
holder=$!
at_exit "kill -9 $holder"
for _ in $(seq 100); do [ -e "/proc/$holder/root$T/view/marker" ] && break; sleep 0.05; done
[ -e "/proc/$holder/root$T/view/marker" ] || fail "the holder namespace did not come up"
[ ! -e "$T/view/marker" ] || fail "the holder's tmpfs leaked into the host namespace"
[ "$(readlink /proc/$holder/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] || fail "the holder shares our mount namespace"

cat "/proc/$holder/mountinfo" >"$T/mountinfo.before"
root_before=$(stat -L -c %d:%i "/proc/$holder/root")

bundle_set "$B" '
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "mount"]
c["linux"]["namespaces"].append({"type": "mount", "path": "/proc/'"$holder"'/ns/mnt"})
c["process"]["args"] = ["/bin/sh", "-c", "cat '"$T"'/view/marker; test -e /bin/sh && echo pid=$$"]
'
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run in a joined mount namespace: $out"
# the container saw the namespace's view (the holder's tmpfs), in its own pid namespace
echo "$out" | grep -qx here || fail "the container did not see the joined namespace's view: $out"
echo "$out" | grep -qx pid=1 || fail "the container is not pid 1 of its pid namespace: $out"

# nothing of the namespace changed: same root for its processes, same mounts, same propagation
[ "$(stat -L -c %d:%i "/proc/$holder/root")" = "$root_before" ] || fail "the holder was re-rooted (pivot_root in a joined namespace)"
# (mounts of other tests may go away in the copy meanwhile: only additions and / count)
added=$(sort "/proc/$holder/mountinfo" | comm -13 <(sort "$T/mountinfo.before") -)
[ -z "$added" ] || fail "mounts appeared in the joined mount namespace: $added"
[ "$(awk '$5 == "/"' "/proc/$holder/mountinfo")" = "$(awk '$5 == "/"' "$T/mountinfo.before")" ] \
	|| fail "the root mount of the joined namespace changed: $(awk '$5 == "/"' "/proc/$holder/mountinfo")"
[ ! -e "$RTROOT/$id" ] || fail "run left its state dir"
echo ok
