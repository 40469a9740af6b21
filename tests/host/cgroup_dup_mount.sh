#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# A cgroup hierarchy mounted a second time elsewhere on the host (a CRIU's
# cgroup yard its killed CRIU left, another tool's mount) is still one
# hierarchy: a container with the default spec's cgroup mount shows each
# hierarchy once, from the host's own mount, and runs. Before, the second
# mount of `pids` made every `run` fail with "mkdir /sys/fs/cgroup/pids:
# File exists" (soak/faults' kill-restore left a yard, and the runs after
# it failed).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
[ -d /sys/fs/cgroup/pids ] && [ -e /sys/fs/cgroup/pids/cgroup.procs ] || skip "no v1 pids hierarchy here"

bundle_for cgdup
# the second mounts: two v1 hierarchies and the cgroup2, as a yard has them
mkdir -p "$T/yard"
mount -t tmpfs yard "$T/yard" || fail "mount the yard tmpfs"
at_exit "umount -R '$T/yard'"
mkdir -p "$T/yard/pids" "$T/yard/memory" "$T/yard/unified"
mount -t cgroup -o pids yard-pids "$T/yard/pids" || fail "mount pids again"
mount -t cgroup -o memory yard-memory "$T/yard/memory" || fail "mount memory again"
if grep -q " /sys/fs/cgroup/unified cgroup2 " /proc/self/mounts; then
	mount -t cgroup2 yard-unified "$T/yard/unified" || fail "mount cgroup2 again"
fi

mkdir "$T/spec"
check rt spec --bundle "$T/spec"
cp "$T/spec/config.json" "$B/config.json"
bundle_set "$B" 'c["process"]["args"] = ["sh", "-c", "ls /sys/fs/cgroup"]; c["process"]["terminal"] = False; c["linux"]["cgroupsPath"] = "/'"$CGPARENT/$id"'"'
out=$(rt_timed run --bundle "$B" "$id" </dev/null 2>&1) || fail "run with a hierarchy mounted twice: $out"
for h in $(ls /sys/fs/cgroup); do
	case $h in unified | systemd) continue ;; esac # not shown (runc shows neither)
	[ "$(grep -cx "$h" <<<"$out")" = 1 ] || fail "the container does not show $h once: $(echo "$out" | tr '\n' ' ')"
done
[ -z "$(rt list -q)" ] || fail "a container is left after run: $(rt list)"
echo "PASS cgroup_dup_mount"
