#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Bad config.json inputs: each gives one clear error naming the field and
# leaves nothing behind (no state dir, no cgroup, no mount, no process).
# Also failures late in create (in the init, or injected with CRYO_FAULT).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

bundle_for rt-bad true
cp "$B/config.json" "$T/good.json"
# mount points at or under the rootfs (other tests may mount elsewhere meanwhile)
our_mounts() { awk -v r="$B/rootfs" '$5 == r || index($5, r "/") == 1' /proc/self/mountinfo | wc -l; }
mounts_before=$(our_mounts)

nothing_left() {
	[ ! -e "$RTROOT/$id" ] || fail "$1: state dir left behind"
	local h
	for h in unified freezer memory cpu pids; do
		[ ! -e "/sys/fs/cgroup/$h/$CGPARENT/$id" ] || fail "$1: cgroup $h left behind"
	done
	[ "$(our_mounts)" = "$mounts_before" ] || fail "$1: mounts changed under the rootfs"
	! pgrep -f "cryo --root $RTROOT" >/dev/null || fail "$1: a cryo process is left"
}

# bad "python edit" "expected message"
bad() {
	cp "$T/good.json" "$B/config.json"
	bundle_set "$B" "$1"
	expect_fail 1 timeout 30 "$CRYO_BIN" --root "$RTROOT" create --bundle "$B" "$id"
	echo "$LAST_OUTPUT" | grep -qF -- "$2" || fail "for \`$1\`: expected \`$2\` in: $LAST_OUTPUT"
	nothing_left "$1"
}

bad 'del c["process"]["args"]' 'config.json: process.args: must be a non-empty array of strings'
bad 'c["process"]["args"] = []' 'config.json: process.args: must be a non-empty array of strings'
bad 'c["process"]["args"] = "sh"' 'config.json: process.args: must be a non-empty array of strings'
bad 'c["process"]["args"] = ["sh", 3]' 'config.json: process.args[1]: must be a string'
bad 'c["process"]["args"] = ["x"] * 5000' 'config.json: process.args: 5000 entries, at most 4096'
bad 'c["ociVersion"] = "0.9"' 'config.json: ociVersion: `0.9` is not a runtime-spec 1.x version'
bad 'del c["process"]' 'config.json: process: is required'
bad 'c["process"]["cwd"] = "relative"' 'config.json: process.cwd: must be an absolute path'
bad 'c["process"]["env"] = ["NOEQUALS"]' 'config.json: process.env[0]: `NOEQUALS` is not KEY=VALUE'
bad 'c["process"]["user"]["uid"] = -1' 'config.json: process.user.uid: -1 is out of range'
bad 'c["process"]["user"]["uid"] = "0"' 'config.json: process.user.uid: must be an integer'
bad 'c["process"]["terminal"] = "yes"' 'config.json: process.terminal: must be true or false'
bad 'c["process"]["oomScoreAdj"] = 5000' 'config.json: process.oomScoreAdj: 5000 is out of range'
bad 'c["root"]["path"] = "nonexistent"' 'config.json: root.path:'
bad 'c["mounts"][0]["destination"] = "proc"' 'config.json: mounts[0].destination: must be an absolute path'
bad 'c["mounts"].append({"destination": "/x"})' 'config.json: mounts[6].type: is required unless the mount is a bind mount'
bad 'c["mounts"].append({"destination": "/x", "options": ["bind"]})' 'config.json: mounts[6].source: a bind mount needs a source'
bad 'c["mounts"] = [{"destination": "/t", "type": "tmpfs"}] * 2000' 'config.json: mounts: 2000 entries, at most 1024'
bad 'c["linux"]["namespaces"].append({"type": "time"})' 'config.json: linux.namespaces[6].type: unknown namespace type `time`'
bad 'c["linux"]["namespaces"].append({"type": "pid"})' 'namespace `pid` is listed twice'
bad 'c["linux"]["resources"]["memory"]["limit"] = "1G"' 'config.json: linux.resources.memory.limit: must be an integer'
bad 'c["linux"]["resources"]["cpu"]["shares"] = 1' 'config.json: linux.resources.cpu.shares: 1 is out of range'
bad 'c["linux"]["cgroupsPath"] = "/a/../../etc"' 'config.json: linux.cgroupsPath: must be a cgroup path without `..`'
bad 'c["linux"]["devices"] = [{"path": "/etc/passwd", "type": "c", "major": 1, "minor": 3}]' 'config.json: linux.devices[0].path: must be a path under /dev'
bad 'c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 1000, "size": 1}]' 'id mappings need a user namespace'
bad 'c["annotations"]["org.cryo.freezer"] = "v3"' 'annotations.org.cryo.freezer: must be `v1` or `v2`, not `v3`'
bad 'c["annotations"]["x"] = 1' 'config.json: annotations.x: must be a string'
bad 'c["hostname"] = 42' 'config.json: hostname: must be a string'
bad 'c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "uts"]' 'config.json: hostname: needs a uts namespace'
# failures inside the init: after cgroup, state dir and clone exist
bad 'c["mounts"].append({"destination": "/x", "type": "nosuchfs", "source": "x"})' 'container init: mounts[6]: mount nosuchfs on `/x`: No such device'
bad 'c["process"]["args"] = ["/bin/nonexistent"]' 'process.args[0]: `/bin/nonexistent`: No such file or directory'
bad 'c["linux"]["namespaces"].append({"type": "network", "path": "/proc/1/ns/nonexistent"}); c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n.get("path") or n["type"] != "network"]' 'container init: open network namespace `/proc/1/ns/nonexistent`: No such file'
bad 'c["linux"]["sysctl"] = {"net.no_such_sysctl": "1"}' 'linux.sysctl: set net.no_such_sysctl'
# sysctls outside the container's namespaces would be written to the host
# (issue 11.7). The value asked for is the host's own, so that a runtime
# that writes it anyway changes nothing; its output goes to a file, as a
# container that gets created keeps its stdout open.
cp "$T/good.json" "$B/config.json"
bundle_set "$B" 'c["linux"]["sysctl"] = {"vm.swappiness": "'"$(cat /proc/sys/vm/swappiness)"'"}'
timeout 30 "$CRYO_BIN" --root "$RTROOT" create --bundle "$B" "$id" </dev/null >"$T/sysctl.out" 2>&1 && rc=0 || rc=$?
[ $rc = 1 ] || { rt delete --force "$id" >/dev/null 2>&1; fail "vm.swappiness: create exited $rc: $(cat "$T/sysctl.out")"; }
grep -qF 'config.json: linux.sysctl: `vm.swappiness` is not in a namespace of the container' "$T/sysctl.out" \
	|| fail "vm.swappiness: $(cat "$T/sysctl.out")"
nothing_left vm.swappiness
bad 'c["linux"]["sysctl"] = {"kernel.shmmax": "4096"}; c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "ipc"]' 'linux.sysctl: `kernel.shmmax` needs the container to have its own ipc namespace'
bad 'c["linux"]["sysctl"] = {"net.ipv4.ip_forward": "1"}; c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "network"] + [{"type": "network", "path": "/proc/self/ns/net"}]' 'linux.sysctl: `net.ipv4.ip_forward`: the network namespace `/proc/self/ns/net` is the runtime'"'"'s own'

# not JSON at all, truncated, trailing garbage, too big
printf '{"ociVersion": "1.0.2", "process": {' > "$B/config.json"
expect_fail 1 rt create --bundle "$B" "$id"
expect_output "config.json: invalid JSON at byte" "truncated"
nothing_left truncated
printf '{} xx' > "$B/config.json"
expect_fail 1 rt create --bundle "$B" "$id"
expect_output "config.json: invalid JSON" "trailing garbage"
printf '[1, 2]' > "$B/config.json"
expect_fail 1 rt create --bundle "$B" "$id"
expect_output "config.json: must be a JSON object" "array"
head -c 5000000 /dev/zero | tr '\0' ' ' > "$B/config.json"
expect_fail 1 rt create --bundle "$B" "$id"
expect_output "is larger than" "huge"
nothing_left huge
expect_fail 1 rt create --bundle "$T/no-such-bundle" "$id"
expect_output "no-such-bundle" "missing bundle"

# injected failures unwind too
cp "$T/good.json" "$B/config.json"
for f in cgroup-create init-mount; do
	expect_fail 1 env CRYO_FAULT=$f "$CRYO_BIN" --root "$RTROOT" create --bundle "$B" "$id"
	expect_output "injected fault" "CRYO_FAULT=$f"
	nothing_left "CRYO_FAULT=$f"
done
# and the good config still works after all that
expect_fail 0 timeout 30 "$CRYO_BIN" --root "$RTROOT" run --bundle "$B" "$id"
nothing_left good
echo ok
