# SPDX-License-Identifier: GPL-2.0-only
# Sourced by the tests/vm/kmod_*.vmtest after common.sh: a scratch ext4 on a
# loop device, scratch cgroups (v2, and v1 freezer when mounted), loading
# and unloading cryo_freezer.ko, holder processes, and dmesg checks.
#
#   kmod_setup             skip unless the module fits the running kernel
#   kmod_load / kmod_unload
#   kmod_hold SEC OBJ...   background holder (kmod_ioctl hold), sets HOLDER
#   kmod_kill_holder       kill -9 $HOLDER and reap it
#   start_counter CG...    background counter writing $T/count.<n>
#   fs_blocked MS          0 if a new writer on $MNT blocks for MS ms
#   kmod_dmesg_check       fail on oops/BUG/warnings naming the module
#   kmod_watchdog SEC      from now on, a step that makes no progress() for
#                          SEC seconds dumps the kernel stacks and fails

KMOD_NAME=cryo_freezer
STATUS=/sys/kernel/debug/cryo_freezer/holds
COUNTERS=()

kmod_setup() {
	need_root
	[ -n "${CRYO_KMOD:-}" ] && [ -e "$CRYO_KMOD" ] || skip "cryo_freezer.ko is not built (no 6.1 kernel headers?)"
	KPROG=$CRYO_BUILD/tests/kmod_ioctl
	[ -x "$KPROG" ] || skip "$KPROG is not built"
	local vm
	vm=$(modinfo -F vermagic "$CRYO_KMOD" | cut -d' ' -f1)
	[ "$(uname -r)" = "$vm" ] || skip "module is for $vm, this kernel is $(uname -r) (the VM harness runs it)"
	need_cmd mkfs.ext4
	modprobe -q loop 2>/dev/null
	modprobe -q ext4 2>/dev/null
	grep -qw "^$KMOD_NAME" /proc/modules && rmmod "$KMOD_NAME"
	# The project tree is 9p without caching: load and run from tmpfs.
	cp "$CRYO_KMOD" "$KPROG" "$T/" || fail "copy the module to $T"
	CRYO_KMOD=$T/cryo_freezer.ko
	KPROG=$T/kmod_ioctl
	DMESG0=$(dmesg | wc -l)

	MNT=$T/mnt
	mkdir -p "$MNT"
	truncate -s 64M "$T/img"
	check mkfs.ext4 -q -F "$T/img"
	check mount -o loop "$T/img" "$MNT"
	at_exit "umount -d $MNT"

	CG2=
	local root
	for root in /sys/fs/cgroup/unified /sys/fs/cgroup; do
		if [ "$(stat -fc %T "$root" 2>/dev/null)" = cgroup2fs ]; then
			CG2=$root/cryo-test-kmod-$$
			break
		fi
	done
	[ -n "$CG2" ] || skip "no cgroup2 mount"
	mkdir "$CG2" || fail "mkdir $CG2"
	at_exit "cg_remove $CG2"
	CG1=
	if [ "$(stat -fc %T /sys/fs/cgroup/freezer 2>/dev/null)" = cgroupfs ]; then
		CG1=/sys/fs/cgroup/freezer/cryo-test-kmod-$$
		mkdir "$CG1" || fail "mkdir $CG1"
		at_exit "cg_remove $CG1"
	fi
	at_exit "kmod_unload"
	at_exit "kill_counters"
	at_exit "kmod_kill_holder"
	export CRYO_KMOD_MNT=$MNT CRYO_KMOD_NOFRZ=$T CRYO_KMOD_CG2=$CG2 CRYO_KMOD_CG1=$CG1
}

kmod_load() {
	insmod "$CRYO_KMOD" || fail "insmod $CRYO_KMOD"
	[ -c /dev/cryo_freezer ] || fail "no /dev/cryo_freezer after insmod"
}

kmod_unload() {
	grep -qw "^$KMOD_NAME" /proc/modules || return 0
	rmmod "$KMOD_NAME"
}

kmod_refcnt() { cat /sys/module/$KMOD_NAME/refcnt; }

HOLDER=
kmod_hold() {
	"$KPROG" hold "$@" >"$T/holder.out" 2>&1 &
	HOLDER=$!
	local i
	for i in $(seq 100); do
		grep -q '^held$' "$T/holder.out" && return 0
		kill -0 "$HOLDER" 2>/dev/null || break
		sleep 0.05
	done
	fail "holder did not hold $*: $(cat "$T/holder.out")"
}

kmod_kill_holder() {
	[ -n "$HOLDER" ] || return 0
	kill -9 "$HOLDER" 2>/dev/null
	wait "$HOLDER" 2>/dev/null
	HOLDER=
}

start_counter() {
	local n=${#COUNTERS[@]} cg
	(
		i=0
		while :; do
			i=$((i + 1))
			echo $i >"$T/count.$n.tmp" && mv -f "$T/count.$n.tmp" "$T/count.$n"
			sleep 0.02
		done
	) &
	COUNTERS+=($!)
	for cg in "$@"; do
		echo $! >"$cg/cgroup.procs" || fail "move counter into $cg"
	done
	sleep 0.2
}

count() { cat "$T/count.$1" 2>/dev/null || echo 0; }

kill_counters() {
	local p
	for p in "${COUNTERS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	COUNTERS=()
}

# Wait up to $1 ms for $WRITER to finish. Returns 0 when it did (reaped).
writer_done() {
	local i
	for i in $(seq $(($1 / 50))); do
		kill -0 "$WRITER" 2>/dev/null || { wait "$WRITER"; return 0; }
		sleep 0.05
	done
	return 1
}

# Returns 0 when a writer on $MNT is still blocked after $1 ms (and leaves
# it behind in $WRITER, to be reaped once thawed).
fs_blocked() {
	touch "$MNT/w.$RANDOM" &
	WRITER=$!
	! writer_done "$1"
}

cg2_frozen() { grep -q '^frozen 1' "$1/cgroup.events"; }

kmod_dmesg_new() { dmesg | tail -n +$((DMESG0 + 1)); }

# Anything alarming since kmod_setup. The 6.1 WARN in __thaw_task for v1
# frozen cgroups through a PM cycle is allowed when $1 = allow-thaw-warn.
kmod_dmesg_check() {
	local new bad
	# an unsigned out-of-tree module taints the kernel on first load: expected
	new=$(kmod_dmesg_new | grep -vE 'loading out-of-tree module taints|module verification failed')
	bad=$(printf '%s\n' "$new" | grep -E 'BUG|Oops|general protection|Call Trace|WARNING|refcount_t|leak|cryo_freezer.*(fail|error)')
	if [ "${1:-}" = allow-thaw-warn ] && printf '%s\n' "$new" | grep -q '__thaw_task'; then
		printf '%s\n' "$new" | grep -q 'cryo_freezer\]' && fail "a kernel trace names the module: $new"
		return 0
	fi
	[ -z "$bad" ] || fail "dmesg since the test began: $new"
}

# A hang inside a loop of kernel operations must not run into the
# harness's 900 s: a test that calls progress() after each step gets the
# kernel stack of every task of its own (and the blocked-task dump of
# SysRq-w) and fails after SEC seconds without progress. The stacks say
# which wait it was - the hung-task detector only reports D state, and
# only after 120 s.
kmod_watchdog() {
	local sec=$1 me=$$
	progress
	(
		trap - EXIT
		while sleep 5; do
			[ $(($(date +%s) - $(stat -c %Y "$T/progress"))) -ge "$sec" ] || continue
			echo "# STALL: no progress for ${sec}s after: $(cat "$T/progress")"
			ps -eo pid,ppid,stat,wchan:30,args | grep -v '\[' | sed 's/^/#   /'
			for p in /proc/[0-9]*; do
				[ -r "$p/stack" ] || continue
				case "$(cat "$p/cmdline" 2>/dev/null | tr '\0' ' ')" in
				*kmod_ioctl*|*insmod*|*rmmod*|*bash*) ;;
				*) continue ;;
				esac
				echo "#   -- ${p#/proc/} $(tr '\0' ' ' <"$p/cmdline") ($(awk '{print $3}' "$p/stat"))"
				sed 's/^/#      /' "$p/stack"
			done
			echo w >/proc/sysrq-trigger
			sleep 1
			kmod_dmesg_new | tail -n 120 | sed 's/^/#   /'
			echo "FAIL $TEST_NAME: stalled ${sec}s at: $(cat "$T/progress")" >&2
			kill -9 "$me"
			exit 1
		done
	) &
	_KMOD_WATCHDOG=$!
	at_exit "kill $_KMOD_WATCHDOG"
}

# Record a step for kmod_watchdog.
progress() { echo "$*" >"$T/progress"; }
