# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the fsfreeze tests after common.sh: loop-mounted filesystem
# images under $T, writers that block on a frozen filesystem, and a
# cleanup that thaws from this test process before anything else (a
# writer in D state cannot be killed, and a watchdog's fd keeps the mount
# busy).
#
#   fsimg_need FSTYPE...           skip unless root with losetup and mkfs.FSTYPE
#   fsimg_mount FSTYPE NAME SIZE   image $T/NAME.img mounted on $T/NAME
#   start_writer FILE DATA         background write; pid in $WRITER
#   wait_dstate PID [TENTHS]       until PID sleeps in D state
#   wait_gone PID [TENTHS]         until PID exited; also reaps it
#   fs_entry ROOT MP               the hold journal's entry of the freeze of MP in ROOT,
#                                  as one line: its detail, watchdog_pid and ended

fsimg_need() {
	local fs
	need_root
	need_cmd losetup
	for fs in "$@"; do
		need_cmd "mkfs.$fs"
	done
}

wait_dstate() {
	local i
	for ((i = 0; i < ${2:-50}; i++)); do
		[ "$(task_state "$1")" = D ] && return 0
		sleep 0.1
	done
	return 1
}

wait_gone() {
	local i
	for ((i = 0; i < ${2:-50}; i++)); do
		if ! kill -0 "$1" 2>/dev/null; then
			wait "$1" 2>/dev/null
			return 0
		fi
		# a zombie child of ours counts as gone
		[ "$(task_state "$1")" = Z ] && { wait "$1" 2>/dev/null; return 0; }
		sleep 0.1
	done
	return 1
}

start_writer() {
	( echo "$2" > "$1" ) &
	WRITER=$!
}

fs_entry() {
	python3 - "$1" "$2" <<'PY'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/.holds/fs@*.json"):
    try:
        e = json.load(open(f))
    except (OSError, ValueError):
        continue
    if e.get("target") == sys.argv[2]:
        d = dict(e.get("detail") or {})
        d["watchdog_pid"] = e["watchdogPid"]
        d["ended"] = bool(e.get("ended"))
        print(json.dumps(d, separators=(",", ":")))
PY
}

# Thaw every filesystem a cryo watchdog of this test holds (SIGTERM makes
# it FITHAW and exit), then FITHAW whatever is left on mp.
fsimg_release() {
	local mp=$1 root pid
	for root in $(find "$T" -type d -name .holds 2>/dev/null); do
		# no fs hold journalled there: no python3 to start (seconds in the VM guest)
		compgen -G "$root/fs@*.json" >/dev/null || continue
		pid=$(fs_entry "${root%/.holds}" "$mp" | python3 -c 'import json,sys; print(json.load(sys.stdin)["watchdog_pid"])' 2>/dev/null)
		[ -n "$pid" ] || continue
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = cryo-fsfreeze ] || continue
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	fsfreeze -u "$mp" 2>/dev/null
	return 0
}

# umount and losetup -d can find the device still held for a moment (a
# watchdog exiting, the block device's deferred close): retry, then wait
# until the loop device is really gone so the host check sees it detached.
fsimg_umount() {
	local i
	for i in $(seq 20); do
		mountpoint -q "$1" || return 0
		umount "$1" 2>/dev/null && return 0
		sleep 0.25
	done
	umount "$1"
}

fsimg_detach() {
	local dev=$1 i
	losetup -d "$dev" 2>/dev/null
	for i in $(seq 40); do
		losetup -a -n -O NAME 2>/dev/null | grep -qx "$dev" || return 0
		sleep 0.25
		losetup -d "$dev" 2>/dev/null
	done
	return 1
}

fsimg_mount() {
	local fs=$1 name=$2 size=$3 img=$T/$2.img mp=$T/$2 dev
	truncate -s "$size" "$img" || fail "truncate $img"
	case $fs in
	ext4) mkfs.ext4 -q -F "$img" >/dev/null 2>&1 ;;
	xfs) mkfs.xfs -q -f "$img" >/dev/null 2>&1 ;;
	btrfs) mkfs.btrfs -q -f "$img" >/dev/null 2>&1 ;;
	*) fail "fsimg_mount: unknown fstype $fs" ;;
	esac || fail "mkfs.$fs $img failed"
	dev=$(losetup -f --show "$img") || fail "losetup $img failed"
	at_exit "fsimg_detach $dev"
	mkdir -p "$mp"
	mount "$dev" "$mp" || fail "mount $dev ($fs) failed"
	at_exit "fsimg_umount $mp"
	at_exit "fsimg_release $mp"
}
