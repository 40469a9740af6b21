#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Host damage check. `hostcheck.sh save FILE` records the host's state;
# `hostcheck.sh verify FILE` compares and fails on any damage:
#   - owner, mode and device numbers of /dev/null & co. (a runtime once
#     chowned the host's /dev/null while setting up a container);
#   - mount points, loop devices, cgroup directories;
#   - frozen cgroups (v1 freezer.state != THAWED, v2 cgroup.freeze = 1);
#   - tasks in uninterruptible sleep (a writer stuck on a frozen fs);
#   - cryo's and CRIU's processes (a killed command's CRIU left stopped,
#     or running on as an orphan), zombies aside.
set -u

snapshot() {
	echo "## devices"
	local d f s devs=()
	for d in /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty /dev/ptmx /dev/console; do
		[ -e "$d" ] && devs+=("$d")
	done
	stat -c '%n %U %G %a %t:%T %F' "${devs[@]}"
	echo "## mounts"
	awk '{print $5}' /proc/self/mountinfo | sort
	echo "## loop"
	losetup -a -n -O NAME,BACK-FILE 2>/dev/null | sort
	echo "## cgroups"
	# the sandbox running this machine makes a memory cgroup per command
	# (process_api/<hash>): not ours, and not damage
	find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | grep -v '/process_api/' | sort
	echo "## frozen"
	# (read, not a cat per file: one exec per cgroup took 14 s a snapshot in the VM guest)
	find /sys/fs/cgroup -name freezer.state 2>/dev/null | while read -r f; do
		{ read -r s <"$f"; } 2>/dev/null || continue
		[ "$s" = THAWED ] || echo "$f $s"
	done
	find /sys/fs/cgroup -name cgroup.freeze 2>/dev/null | while read -r f; do
		{ read -r s <"$f"; } 2>/dev/null || continue
		[ "$s" = 0 ] || echo "$f $s"
	done
	echo "## processes"
	ps -eo pid=,stat=,comm= | awk '$3 ~ /^(cryo|cryo-fsfreeze|criu)$/ && $2 !~ /^Z/ { print $1, $3, substr($2, 1, 1) }'
}

dstate() {
	# pid comm for every task in D state, kernel threads excluded
	ps -eo pid=,stat=,comm=,flags= | awk '$2 ~ /^D/ && int($4/2097152)%2 == 0 {print $1, $3}'
}

case "${1:-}" in
save)
	snapshot > "$2"
	;;
verify)
	now=$(mktemp)
	trap 'rm -f "$now"' EXIT
	rc=0
	# (a watchdog or a CRIU helper ending on its own takes a moment: look again for 5 s)
	for _ in $(seq 10); do
		snapshot > "$now"
		diff -q "$2" "$now" >/dev/null && break
		sleep 0.5
	done
	if ! diff -u "$2" "$now" > "$now.diff"; then
		echo "hostcheck: the host changed during the tests:" >&2
		cat "$now.diff" >&2
		rc=1
	fi
	rm -f "$now.diff"
	# give tasks a moment to leave D state on their own (I/O completing)
	for _ in 1 2 3 4 5; do
		d=$(dstate)
		[ -z "$d" ] && break
		sleep 1
	done
	if [ -n "$d" ]; then
		echo "hostcheck: tasks stuck in uninterruptible sleep (a frozen filesystem?):" >&2
		echo "$d" >&2
		rc=1
	fi
	[ $rc = 0 ] && echo "hostcheck: host devices, mounts, loop devices, cgroups, freezer state and cryo/CRIU processes unchanged"
	exit $rc
	;;
*)
	echo "usage: $0 save|verify FILE" >&2
	exit 2
	;;
esac
