# SPDX-License-Identifier: GPL-2.0-only
# Sourced by tests/lib/common.sh and tests/lib/runc-bats.sh.
#
#   cg_remove DIR    thaw a test cgroup (v1 or v2, any state), SIGKILL every
#                    task in it and below, remove it and its children
cg_remove() {
	local dir=$1 c pid
	[ -d "$dir" ] || return 0
	# v1: THAWED on the parent thaws its children; v2: each child keeps its own cgroup.freeze
	[ -e "$dir/cgroup.freeze" ] && echo 0 >"$dir/cgroup.freeze"
	[ -e "$dir/freezer.state" ] && echo THAWED >"$dir/freezer.state"
	for c in "$dir"/*/; do
		[ -d "$c" ] && cg_remove "${c%/}"
	done
	for _ in $(seq 100); do
		# (cgroup files have no size: read them)
		[ -n "$(cat "$dir/cgroup.procs" 2>/dev/null)" ] || break
		if [ -e "$dir/cgroup.kill" ]; then
			echo 1 >"$dir/cgroup.kill"
		else
			for pid in $(cat "$dir/cgroup.procs" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
		fi
		sleep 0.05
	done
	for _ in $(seq 40); do
		rmdir "$dir" 2>/dev/null && return 0
		sleep 0.05
	done
	rmdir "$dir"
}
