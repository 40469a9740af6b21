#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Build an OCI bundle whose rootfs lives on its own ext4 image, so that
# cryo can freeze (FIFREEZE) and snapshot that filesystem without touching
# any host filesystem.
#
#   mkbundle.sh [--size MIB] [--cgroups-path P] [--freezer v1|v2] DIR [CMD...]
#       DIR/rootfs.img  ext4 image (default 64 MiB), loop-mounted at DIR/rootfs
#       DIR/config.json runs CMD (default: a shell loop printing a counter)
#   mkbundle.sh --teardown DIR
#       unmount DIR/rootfs and detach its loop device
set -euo pipefail

usage() { sed -n 's/^#   \{0,1\}//p' "$0" | sed -n '2,9p' >&2; exit 2; }

teardown() {
	local dir=$1 dev
	if mountpoint -q "$dir/rootfs"; then
		dev=$(findmnt -n -o SOURCE --target "$dir/rootfs")
		umount "$dir/rootfs"
		case "$dev" in /dev/loop*) losetup -d "$dev" 2>/dev/null || true ;; esac
	fi
	# a loop device still bound to the image (mount failed half-way)
	losetup -j "$dir/rootfs.img" -n -O NAME 2>/dev/null | while read -r d; do losetup -d "$d" || true; done
}

size=64 cgpath="" freezer=""
while [ $# -gt 0 ]; do
	case "$1" in
	--teardown) [ $# = 2 ] || usage; teardown "$2"; exit 0 ;;
	--size) size=$2; shift 2 ;;
	--cgroups-path) cgpath=$2; shift 2 ;;
	--freezer) freezer=$2; shift 2 ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
dir=$1
shift
[ "$(id -u)" = 0 ] || { echo "mkbundle.sh: needs root (losetup, mount)" >&2; exit 1; }
bb=$(command -v busybox) || { echo "mkbundle.sh: needs busybox-static" >&2; exit 1; }
file "$bb" 2>/dev/null | grep -q 'dynamically' && { echo "mkbundle.sh: $bb is not static (install busybox-static)" >&2; exit 1; }

mkdir -p "$dir/rootfs"
dir=$(cd "$dir" && pwd)
if ! mountpoint -q "$dir/rootfs"; then
	truncate -s "${size}M" "$dir/rootfs.img"
	mkfs.ext4 -q -F -L cryo-rootfs "$dir/rootfs.img"
	dev=$(losetup --find --show "$dir/rootfs.img")
	if ! mount -t ext4 "$dev" "$dir/rootfs"; then
		losetup -d "$dev"
		exit 1
	fi
fi
r=$dir/rootfs
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root,run,var/tmp}
chmod 1777 "$r/tmp" "$r/var/tmp"
cp "$bb" "$r/bin/busybox"
# one process for the ~270 applet links, not an ln each (under qemu TCG
# that was 0.3-0.5 s a link: 1.5-2.5 min a bundle)
"$r/bin/busybox" --list-full | python3 -c '
import os, sys
for app in sys.stdin.read().split():
    p = os.path.join(sys.argv[1], app)
    if not os.path.exists(p):
        os.symlink("/bin/busybox", p)
' "$r"
echo "root:x:0:0:root:/root:/bin/sh" > "$r/etc/passwd"
echo "root:x:0:" > "$r/etc/group"
echo "cryo" > "$r/etc/hostname"

if [ $# -eq 0 ]; then
	set -- sh -c 'i=0; while true; do i=$((i+1)); echo "count $i"; sleep 1; done'
fi
args=$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "$@")
ann=""
[ -n "$freezer" ] && ann="\"org.cryo.freezer\": \"$freezer\""
cg=""
[ -n "$cgpath" ] && cg="\"cgroupsPath\": \"$cgpath\","
cat > "$dir/config.json" <<JSON
{
  "ociVersion": "1.0.2",
  "process": {
    "terminal": false,
    "user": { "uid": 0, "gid": 0 },
    "args": $args,
    "env": [ "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "TERM=xterm" ],
    "cwd": "/",
    "capabilities": {
      "bounding": [ "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE" ],
      "effective": [ "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE" ],
      "permitted": [ "CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE" ]
    },
    "rlimits": [ { "type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024 } ],
    "noNewPrivileges": true
  },
  "root": { "path": "rootfs", "readonly": false },
  "hostname": "cryo",
  "mounts": [
    { "destination": "/proc", "type": "proc", "source": "proc" },
    { "destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": [ "nosuid", "strictatime", "mode=755", "size=65536k" ] },
    { "destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": [ "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620" ] },
    { "destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": [ "nosuid", "noexec", "nodev", "mode=1777", "size=65536k" ] },
    { "destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": [ "nosuid", "noexec", "nodev" ] },
    { "destination": "/sys", "type": "sysfs", "source": "sysfs", "options": [ "nosuid", "noexec", "nodev", "ro" ] }
  ],
  "annotations": { $ann },
  "linux": {
    $cg
    "resources": { "memory": { "limit": 134217728 }, "cpu": { "shares": 512 }, "pids": { "limit": 256 } },
    "maskedPaths": [ "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
      "/proc/sched_debug", "/proc/scsi", "/sys/firmware" ],
    "readonlyPaths": [ "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger" ],
    "namespaces": [ { "type": "pid" }, { "type": "network" }, { "type": "ipc" }, { "type": "uts" },
      { "type": "mount" }, { "type": "cgroup" } ]
  }
}
JSON
echo "$dir"
