# SPDX-License-Identifier: GPL-2.0-only
# Sourced by tests/bench/runc-bats.sh and tests/host/runc_bats.sh: run
# files of runc's integration suite (made ready by tests/setup-runc-bats.sh)
# against one runtime, and read their results.
#
#   rb_run_file RUNTIME BIN FILE OUT
#       run FILE (a name in tests/integration, e.g. `kill.bats`) with
#       $RUNC=BIN; the TAP output goes to OUT, the exit status to OUT.rc.
#       Returns 1 when the host's /dev/null, /dev/zero, /dev/full or
#       /dev/tty changed (reported on stderr and in OUT.damage, then put
#       back); cgroups the file left are removed and reported the same way,
#       what rb_watch did is in OUT.notes.
#   rb_results OUT
#       one line per test of a TAP file: `pass|fail|skip<TAB>name`.
#
# Each file runs under the host lock (/tmp/cryo-host.lock, unless RB_LOCK=0:
# runs of other engineers interleave between files), in a private mount
# namespace in which, for every runtime alike:
#   * /sys/fs/cgroup/unified is unmounted: Debian's crun 1.8 takes a host
#     with v1 controllers and that cgroup2 mount for a hybrid one and
#     fails every start; the host's own mount is never touched. What a
#     runtime then writes into the bare mountpoint directory on the
#     cgroup tmpfs (crun makes `unified/<id>/cgroup.procs` there) would
#     outlive the namespace, hidden under the host's mount, and be found
#     by the next run's `find /sys/fs/cgroup` (delete.bats): it is
#     removed at the end of the file and reported as left behind;
#   * /etc is an overlay whose writes stay in the namespace:
#     checkpoint.bats writes /etc/criu/default.conf, which would change
#     every CRIU run on the host;
#   * criu on $PATH is CRIU 4 (/opt/cryo-criu4, with CRIU_FAULT=130; it
#     is also $CRYO_CRIU), as Debian's 3.17 fails on this kernel;
#   * bats runs under script(1), so stdin is a terminal: `run` in the
#     foreground with a terminal (tty.bats) takes its stdin;
#   * a file stalled for RB_STALL (180 s) has its frozen cgroups thawed
#     (rb_watch), and each file has RB_FILE_TIMEOUT (900 s). Not bats'
#     BATS_TEST_TIMEOUT: bats 1.8 runs its countdown as a child of the
#     test's shell, so the tests that `wait` for their own background
#     jobs (events.bats) wait for the countdown too and always time out.

: "${CRYO_SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
# cg_remove
. "$CRYO_SRC/tests/lib/cgremove.sh"
: "${CRYO_BUILD:=$CRYO_SRC/build}"
# the suite (tests/setup-runc-bats.sh): one place for every build dir (build-asan's tests too)
: "${RB_DIR:=${CRYO_RUNC_BATS:-$CRYO_SRC/build/runc-bats}}"
: "${RB_FILE_TIMEOUT:=900}"
: "${RB_STALL:=180}"
: "${RB_CRIU:=/opt/cryo-criu4/sbin/criu}"
# 0: the caller holds the host lock already (a host test that ctest runs
# under `flock /tmp/cryo-host.lock`: taking it again would wait for ever)
: "${RB_LOCK:=1}"
: "${RB_LOCKFILE:=/tmp/cryo-host.lock}"
RB_DEVICES=(/dev/null /dev/zero /dev/full /dev/tty)

rb_devices() {
	stat -c '%n %u:%g %a %F %t:%T' "${RB_DEVICES[@]}"
}

# What tests/setup-runc-bats.sh made: the suite (its skips listed), the images.
rb_ready() {
	[ -d "$RB_DIR/src/tests/integration" ] && [ -e "$RB_DIR/skipped" ] &&
		ls "$RB_DIR"/src/tests/integration/testdata/busybox-*.tar.xz >/dev/null 2>&1
}

# A PATH directory whose criu is $RB_CRIU (Debian's otherwise).
rb_criu_dir() {
	local d=$RB_DIR/bin
	mkdir -p "$d"
	if [ -x "$RB_CRIU" ]; then
		ln -sfn "$RB_CRIU" "$d/criu"
	else
		rm -f "$d/criu"
	fi
	echo "$d"
}

# The cgroup directories of the host, the sandbox's own per-command ones aside (as hostcheck.sh).
rb_cgroups() {
	find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | grep -v '/process_api/' | sort
}

# A test that makes no progress for RB_STALL seconds is most likely a
# runtime's process stuck in a frozen cgroup (crun joins the pre-frozen
# one of cgroups.bats and waits there for ever): thaw what the file froze,
# once per stall, so that the test fails and the file goes on. Noted in
# OUT.notes.
rb_watch() {
	local out=$1 last=-1 n since=$SECONDS d
	while sleep 5; do
		n=0
		[ ! -e "$out" ] || n=$(wc -l <"$out")
		if [ "$n" != "$last" ]; then
			last=$n
			since=$SECONDS
			continue
		fi
		[ $((SECONDS - since)) -ge "$RB_STALL" ] || continue
		since=$SECONDS
		rb_cgroups | comm -13 "$out.cg.before" - | while read -r d; do
			if [ "$(cat "$d/freezer.state" 2>/dev/null)" = FROZEN ]; then
				echo THAWED >"$d/freezer.state"
			elif [ "$(cat "$d/cgroup.freeze" 2>/dev/null)" = 1 ]; then
				echo 0 >"$d/cgroup.freeze"
			else
				continue
			fi
			echo "no progress for $RB_STALL s after test $n: thawed $d" >>"$out.notes"
		done
	done
}

rb_run_file() {
	local rt=$1 bin=$2 file=$3 out=$4 criu_dir
	criu_dir=$(rb_criu_dir)
	rm -f "$out.damage" "$out.notes" "$out.hidden"
	# The lock is held by this subshell alone (fd 9, closed for the suite):
	# a process the suite leaves behind can't keep holding it.
	(
		[ "$RB_LOCK" = 0 ] || flock 9
		rb_devices >"$out.dev.before"
		rb_cgroups >"$out.cg.before"
		rb_watch "$out" &
		watch=$!
		# shellcheck disable=SC2016
		timeout -k 10 "$RB_FILE_TIMEOUT" \
			unshare -m --propagation private \
			env RUNC="$bin" PATH="$criu_dir:$PATH" CRYO_CRIU="$RB_CRIU" CRIU_FAULT=130 \
			RB_FILE="$RB_DIR/src/tests/integration/$file" RB_OUT="$out" \
			bash -c '
				set -e
				bare=
				if mountpoint -q /sys/fs/cgroup/unified; then umount /sys/fs/cgroup/unified; bare=1; fi
				# bats needs /dev/fd (process substitution); the VM harness has none
				[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
				ov=$(mktemp -d /tmp/cryo-runc-bats-etc.XXXXXX)
				mkdir "$ov/upper" "$ov/work"
				mount -t overlay overlay -o "lowerdir=/etc,upperdir=$ov/upper,workdir=$ov/work" /etc
				rc=0
				script -qec "bats --tap \"\$RB_FILE\" >\"\$RB_OUT\" 2>&1" /dev/null </dev/null >/dev/null || rc=$?
				umount /etc
				rm -rf "$ov"
				if [ -n "$bare" ] && [ -n "$(ls -A /sys/fs/cgroup/unified 2>/dev/null)" ]; then
					ls -A /sys/fs/cgroup/unified | tr "\n" " " >"$RB_OUT.hidden"
					find /sys/fs/cgroup/unified -mindepth 1 -delete
				fi
				exit $rc' >"$out.log" 2>&1 9>&-
		echo $? >"$out.rc"
		kill "$watch" 2>/dev/null
		wait "$watch" 2>/dev/null
		# what the file left: devices changed (put back), cgroups (removed)
		if ! rb_devices | diff "$out.dev.before" - >"$out.dev.diff"; then
			echo "HOST DAMAGE after $file on $rt: the host's devices changed:" >>"$out.damage"
			sed -n 's/^[<>] /  /p' "$out.dev.diff" >>"$out.damage"
			for d in "${RB_DEVICES[@]}"; do
				chown 0:0 "$d"
				chmod 0666 "$d"
			done
		fi
		if [ -s "$out.hidden" ]; then
			echo "left behind after $file on $rt (removed): under the unmounted cgroup2 mountpoint: $(cat "$out.hidden")" >>"$out.damage"
		fi
		rm -f "$out.hidden"
		rb_cgroups | comm -13 "$out.cg.before" - >"$out.cg.left"
		if [ -s "$out.cg.left" ]; then
			echo "left behind after $file on $rt (removed): cgroups $(tr '\n' ' ' <"$out.cg.left")" >>"$out.damage"
			sort -r "$out.cg.left" | while read -r d; do cg_remove "$d" 2>/dev/null; done
		fi
		rm -f "$out.dev.before" "$out.dev.diff" "$out.cg.before" "$out.cg.left"
	) 9>>"$RB_LOCKFILE"
	if [ -s "$out.damage" ]; then
		cat "$out.damage" >&2
		grep -q '^HOST DAMAGE' "$out.damage" && return 1
	fi
	return 0
}

rb_results() {
	# bats --tap: `ok N name`, `ok N name # skip (reason)`, `not ok N name`;
	# a file that timed out or never ran a test gives no lines
	sed -n -e 's/\r$//' \
		-e 's/^ok [0-9]* \(.*\) # skip.*/skip\t\1/p' \
		-e 's/^ok [0-9]* \(.*\)/pass\t\1/p' \
		-e 's/^not ok [0-9]* \(.*\)/fail\t\1/p' "$1" 2>/dev/null |
		sed -e 's/ # timeout after [0-9]*s$//'
}
