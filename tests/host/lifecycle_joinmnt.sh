#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# linux.namespaces mount with a path (issue 11.2): joining an existing
# mount namespace takes its mounts as they are, and the container gets
# root.path (as that namespace sees it) by chroot(), which moves only the
# container. Nothing of that namespace may change: no rootfs bind, no
# /proc or /dev mounts, no pivot_root (which would re-root every process
# living there), no propagation change. `exec` lands in the same root.
# Tried on a throw-away namespace held by an `unshare -m` process, never
# on the host's.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_cmd unshare

bundle_for rt-jmnt true

# the holder: a private mount namespace with a tmpfs of its own inside the
# bundle's rootfs, visible only there
mkdir "$B/rootfs/view"
at_exit "rmdir '$B/rootfs/view'"
unshare -m --propagation private sh -c \
	'mount -t tmpfs -o size=1m jm "$1" && echo here >"$1/marker" && exec sleep 600' sh "$B/rootfs/view" &
holder=$!
at_exit "kill -9 $holder"
for _ in $(seq 100); do [ -e "/proc/$holder/root$B/rootfs/view/marker" ] && break; sleep 0.05; done
[ -e "/proc/$holder/root$B/rootfs/view/marker" ] || fail "the holder namespace did not come up"
[ ! -e "$B/rootfs/view/marker" ] || fail "the holder's tmpfs leaked into the host namespace"
[ "$(readlink /proc/$holder/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] || fail "the holder shares our mount namespace"

cat "/proc/$holder/mountinfo" >"$T/mountinfo.before"
root_before=$(stat -L -c %d:%i "/proc/$holder/root")

bundle_set "$B" '
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "mount"]
c["linux"]["namespaces"].append({"type": "mount", "path": "/proc/'"$holder"'/ns/mnt"})
c["process"]["args"] = ["/bin/sh", "-c", "cat /view/marker; test -e /bin/sh && echo pid=$$"]
'
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run in a joined mount namespace: $out"
# the container saw the namespace's view (the holder's tmpfs) from root.path, in its own pid namespace
echo "$out" | grep -qx here || fail "the container did not see the joined namespace's view under root.path: $out"
echo "$out" | grep -qx pid=1 || fail "the container is not pid 1 of its pid namespace: $out"

# exec into such a container: the joined namespace, and the init's root (not the namespace's /)
bundle_set "$B" 'c["process"]["args"] = ["/bin/sleep", "600"]'
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run -d in a joined mount namespace failed"
init=$(rt state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
[ "$(readlink /proc/$init/ns/mnt)" = "$(readlink /proc/$holder/ns/mnt)" ] || fail "the init is not in the joined mount namespace"
[ "$(stat -L -c %d:%i /proc/$init/root)" = "$(stat -L -c %d:%i "/proc/$holder/root$B/rootfs")" ] \
	|| fail "the init's root is not root.path"
expect_fail 0 rt exec "$id" cat /view/marker
expect_output "^here$" "exec did not see the joined namespace's view under root.path"
expect_fail 0 rt exec "$id" sh -c 'test -e /view/marker && test ! -e '"$B"'/rootfs && echo in-root'
expect_output "^in-root$" "exec is not in the container's root"
rt delete --force "$id" >/dev/null 2>&1 || fail "delete --force failed"

# nothing of the namespace changed: same root for its processes, same mounts, same propagation
[ "$(stat -L -c %d:%i "/proc/$holder/root")" = "$root_before" ] || fail "the holder was re-rooted (pivot_root in a joined namespace)"
# (mounts of other tests may go away in the copy meanwhile: only additions and / count)
added=$(sort "/proc/$holder/mountinfo" | comm -13 <(sort "$T/mountinfo.before") -)
[ -z "$added" ] || fail "mounts appeared in the joined mount namespace: $added"
[ "$(awk '$5 == "/"' "/proc/$holder/mountinfo")" = "$(awk '$5 == "/"' "$T/mountinfo.before")" ] \
	|| fail "the root mount of the joined namespace changed: $(awk '$5 == "/"' "/proc/$holder/mountinfo")"
[ ! -e "$RTROOT/$id" ] || fail "run left its state dir"
echo ok
