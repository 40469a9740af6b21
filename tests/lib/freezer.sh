# SPDX-License-Identifier: GPL-2.0-only
# Helpers of the freezer tests (sourced after common.sh): test cgroups in
# both hierarchies, cleaned up at exit whatever state they are left in.
V1ROOT=/sys/fs/cgroup/freezer
V2ROOT=/sys/fs/cgroup/unified

fz_need_hierarchies() {
	need_root
	[ -d "$V1ROOT" ] && [ -w "$V1ROOT/cgroup.procs" ] || skip "no cgroup v1 freezer hierarchy at $V1ROOT"
	[ -f "$V2ROOT/cgroup.controllers" ] || skip "no cgroup2 hierarchy at $V2ROOT"
}

# fz_root v1|v2
fz_root() { if [ "$1" = v1 ]; then echo "$V1ROOT"; else echo "$V2ROOT"; fi; }

# fz_mkcg v1|v2 NAME: create a cgroup, removed at exit; its path is in $CG
# (not printed: at_exit must run in this shell, not in a $(...) subshell)
fz_mkcg() {
	CG="$(fz_root "$1")/cryo-test-freezer-$$-$2"
	mkdir "$CG" || fail "mkdir $CG"
	at_exit "cg_remove '$CG'"
}

# fz_spawn CG N [CMD...]: start N copies of CMD (default: sleep 1000) in CG
# and wait until all N are in it.
fz_spawn() {
	local cg=$1 n=$2 i
	shift 2
	[ $# -gt 0 ] || set -- sleep 1000
	(
		echo $BASHPID > "$cg/cgroup.procs"
		for ((i = 0; i < n; i++)); do "$@" </dev/null >/dev/null 2>&1 & done
		exec sleep 1000
	) </dev/null >/dev/null 2>&1 &
	disown
	for i in $(seq 600); do
		[ "$(wc -l < "$cg/cgroup.procs")" -ge $((n + 1)) ] && return 0
		sleep 0.05
	done
	fail "only $(wc -l < "$cg/cgroup.procs") of $((n + 1)) tasks in $cg"
}

# The kernel's own view, for cross-checking what cryo says.
fz_kernel_state() {
	local cg=$1
	if [ -f "$cg/freezer.state" ]; then
		cat "$cg/freezer.state"
	else
		local want frozen
		want=$(cat "$cg/cgroup.freeze")
		frozen=$(awk '$1 == "frozen" {print $2}' "$cg/cgroup.events")
		if [ "$frozen" = 1 ]; then echo FROZEN; elif [ "$want" = 1 ]; then echo FREEZING; else echo THAWED; fi
	fi
}

fz_expect_state() {
	local cg=$1 want=$2 got kgot kwant=$2 i
	got=$(cryo freezer-state --cgroup "$cg") || fail "freezer-state $cg failed"
	[ "$got" = "$want" ] || fail "$cg: cryo says $got, expected $want"
	[ "$kwant" = RUNNING ] && kwant=THAWED
	# a frozen v2 task that is woken (e.g. by a signal) leaves and re-enters
	# the trap, so `frozen` can blip to 0: give the kernel's view a moment
	for i in $(seq 50); do
		kgot=$(fz_kernel_state "$cg")
		[ "$kgot" = "$kwant" ] && break
		sleep 0.02
	done
	[ "$kgot" = "$kwant" ] || fail "$cg: kernel says $kgot, expected $kwant"
	[ "$i" = 1 ] || log "$cg: the kernel showed another state for $(((i - 1) * 20)) ms before $kwant"
}

# A task of CG called COMM in uninterruptible sleep (D), waiting up to 10 s.
# (v1 shows frozen tasks as D too: the name tells the blocker apart.)
fz_dpid() {
	local cg=$1 comm=$2 i p
	for i in $(seq 200); do
		for p in $(cat "$cg/cgroup.procs"); do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$comm" ] || continue
			[ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = D ] && { echo "$p"; return 0; }
		done
		sleep 0.05
	done
	return 1
}

# A filesystem whose writers sleep uninterruptibly, not freezably: an ext4
# image ($T/inner) on a loop device whose backing file lives on another
# loop-mounted ext4 ($T/outer). FIFREEZE of outer leaves O_DIRECT writers of
# inner waiting for their bio in D, which neither cgroup freezer can park
# (a writer of outer itself waits in percpu_rwsem_wait, which the v1
# freezer parks since Linux 6.x). Only images under $T are frozen.
fz_setup_nested_fs() {
	need_cmd fsfreeze
	need_cmd mkfs.ext4
	mkdir -p "$T/outer" "$T/inner"
	truncate -s 96M "$T/outer.img"
	mkfs.ext4 -q -F "$T/outer.img" || skip "mkfs.ext4 failed"
	mount -o loop "$T/outer.img" "$T/outer" || skip "can't loop-mount an ext4 image"
	at_exit "umount '$T/outer'"
	truncate -s 32M "$T/outer/inner.img"
	mkfs.ext4 -q -F "$T/outer/inner.img" || fail "mkfs.ext4 inner"
	mount -o loop "$T/outer/inner.img" "$T/inner" || fail "mount inner"
	at_exit "umount '$T/inner'"
}

# Freeze $T/outer; the thaw is registered at once so it runs before the
# cleanups registered earlier (cgroups can only be emptied after it).
fz_fsfreeze() {
	fsfreeze -f "$T/outer" || fail "fsfreeze -f $T/outer"
	at_exit "fsfreeze -u '$T/outer'"
}

# Watchdog pids of the holds journalled under root $1.
fz_watchdogs() {
	local f
	for f in "$1"/.holds/*.json; do
		[ -f "$f" ] && python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watchdogPid"])' "$f"
	done
}

fz_kill_watchdogs() {
	local p
	# kmod holds journal watchdog pid 0: `kill 0` would hit our own group
	for p in $(fz_watchdogs "$1"); do [ "$p" -gt 0 ] && kill -9 "$p" 2>/dev/null; done
}

# fz_wait_state CG STATE MS: poll cryo's view until STATE, at most MS.
fz_wait_state() {
	local cg=$1 want=$2 ms=$3 end
	end=$(($(date +%s%N) / 1000000 + ms))
	while [ $(($(date +%s%N) / 1000000)) -lt $end ]; do
		[ "$(cryo freezer-state --cgroup "$cg")" = "$want" ] && return 0
		sleep 0.02
	done
	[ "$(cryo freezer-state --cgroup "$cg")" = "$want" ]
}
