#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Faults production brings, injected into checkpoints, restores and
# migrations of the self-checking counter, each asserting the same
# outcome (docs/reliability.md):
#   - the container runs on exactly one host, and is not frozen;
#   - no half image is taken for whole: the previous image at that path
#     is unchanged (every file's checksum) and verifies;
#   - nothing is left behind (tests/lib/soak.sh's counts: mounts, loop
#     devices, cgroups, veths, journal entries, staging dirs, cryo and
#     CRIU processes) once `cryo recover` ran where a cryo was killed;
#   - the error names the fault.
# Kinds (CRYO_SOAK_FAULTS: a list, default all; each CRYO_SOAK_CYCLES
# times, default 1; or all in turn for CRYO_SOAK_SECONDS):
#   enospc-image    the image dir's filesystem (a small ext4) fills during
#                   the dump
#   enospc-dest     the destination's filesystem fills during the transfer
#   disk-full-restore  ... and during its restore (the rootfs extraction)
#   eio-write       writes to the image dir fail (a FUSE filesystem that
#                   fails on demand, tests/tools/cryo-test-faultfs.c) at a
#                   random byte of the dump
#   eio-read        reads of the image fail at a random byte of the restore
#   link-cut        the migration's veth set down mid-transfer (slowed by
#                   tbf so that it is on its way)
#   link-slow       the link slowed to 8 Mbit/s: the migration goes through
#   kill-cryo       cryo's checkpoint SIGKILLed at a random moment
#   stop-cryo       cryo's checkpoint SIGSTOPped at a random moment for
#                   longer than its freeze deadline, then continued
#   kill-criu       CRIU SIGKILLed at a random moment of the dump
#   stop-criu       CRIU SIGSTOPped at a random moment of the dump for
#                   longer than the freeze deadline, then continued
#   kill-restore    cryo's restore SIGKILLed at a random moment
#   kill-receiver   the destination's receive SIGKILLed at a random moment
#   stop-receiver   ... SIGSTOPped for longer than the source's --timeout
# (SIGKILL of the lazy-pages daemon and of the page server:
# host/migrate_lazy_kill.)
# Needs a CRIU that works here (CRYO_CRIU, see `cryo check`).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/soak.sh"
. "$CRYO_SRC/tests/lib/fsimg.sh"
soak_begin
need_cmd tc
ALL="enospc-image enospc-dest disk-full-restore eio-write eio-read link-cut link-slow kill-cryo stop-cryo kill-criu stop-criu kill-restore kill-receiver stop-receiver"
KINDS=${CRYO_SOAK_FAULTS:-$ALL}
CYCLES=${CRYO_SOAK_CYCLES:-1}
FAULTFS=$CRYO_BUILD/tests/tools/cryo-test-faultfs
DEADLINE=2000   # every checkpoint's --freeze-deadline here (ms)
TMO=4000        # every migration's --timeout, both ends (ms)

mig_hosts_setup
mig_tls_certs "$T/pki"
mig_dst_parent_cgroups
NOSPACE='No space left on device|not that much space'
rnd() { echo $(( (RANDOM * 32768 + RANDOM) % ($1 + 1) )); }  # 0..N

# --- the container: the counter on an ext4 image of its own (FIFREEZE, snapshots, loop devices)
c=sk-f-$$
B=$T/$c
wl_bundle "$B" 4
S=$B/rootfs/status
rt run -d --bundle "$B" "$c" </dev/null >"$T/out" 2>&1 || fail "run: $(cat "$T/out")"
wl_wait_above "$S" 20
# --- and one that migrates, on a directory (tar snapshots)
mid=sk-fm-$$
mig_counter_run "$T/$mid" "$mid" 4
SM=$T/$mid/rootfs-dir/status
wl_wait_above "$SM" 20
DST_CG=/sys/fs/cgroup/unified/$MIG_CG/$CGPARENT/$mid

ck() { timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --leave-running --freeze-deadline "$DEADLINE" "$@"; }
# the checksums of every file of image dir $1
img_sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
# a good image at $1, and its checksums in $1.sums
prev_image() {
	ck --image-path "$1" "$c" </dev/null >"$T/ck.out" 2>&1 || fail "the previous image at $1: $(cat "$T/ck.out")"
	img_sums "$1" >"$T/prev.sums"
}
# no half image taken for whole: the previous one at $1 is as it was, and verifies; nothing staged beside it
assert_prev() {
	local what=$1 img=$2 left
	img_sums "$img" | cmp -s - "$T/prev.sums" || fail "$what: the previous image at $img changed"
	"$CRYO_BIN" inspect "$img" >"$T/inspect" 2>&1 && grep -q '^verified: *yes' "$T/inspect" ||
		fail "$what: the previous image does not verify: $(cat "$T/inspect")"
	left=$(ls -A "$(dirname "$img")" | grep -F ".$(basename "$img").staging" || true)
	[ -z "$left" ] || fail "$what: a staging dir left beside the image: $left"
}
# the container runs here, not frozen, counts on with its checks
assert_runs() { soak_runs "$1" "${2:-$c}" "${3:-$S}"; }
# the output must name the fault
names() { grep -Eq "$2" "$3" || fail "$1: the error does not name it ($2): $(cat "$3")"; }
# only on one host: the migrating container runs here, nothing of it there
assert_one_host() {
	local what=$1 why
	assert_runs "$what" "$mid" "$SM"
	soak_cg_runs "$DST_CG" && fail "$what: it runs there too"
	why=$(mig_dst_clean "$mid") || fail "$what: $why"
}

# a filesystem image of SIZE mounted at $T/NAME, to fill (torn down at exit)
small_fs() { fsimg_mount ext4 "$1" "$2"; chmod 700 "$T/$1"; }
# fill the filesystem at $1 until $2 KiB are free
fill_to() {
	local free
	# (what root may still write: ext4 keeps 5% for root, which df's "avail" leaves out)
	free=$(($(stat -f -c '%f * %S' "$1") / 1024))
	[ "$free" -gt "$2" ] && fallocate -l $(((free - $2) * 1024)) "$1/filler"
	sync -f "$1/filler" 2>/dev/null
	return 0
}

# --- the faults
f_enospc_image() {
	local img=$T/small/img
	rm -rf "${img:?}" "$T/small/filler"
	prev_image "$img"
	fill_to "$T/small" $((512 + $(rnd 2048)))
	expect_fail 1 ck --image-path "$img" "$c"
	echo "$LAST_OUTPUT" >"$T/err"
	names enospc-image 'No space left on device' "$T/err"
	assert_prev enospc-image "$img"
	assert_runs enospc-image
	rm -f "$T/small/filler"
}

# a receive on the small filesystem (root and bundles there), stopped at $1; its pid in rp
small_receive() {
	mkdir -p "$T/small/root" "$T/small/bundles"
	CRYO_PAUSE_AT=$1 on_dest "$CRYO_BIN" --root "$T/small/root" receive --listen "$MIG_IP_DST:$MIG_PORT" \
		--cert "$MIG_PKI/server.crt" --key "$MIG_PKI/server.key" --ca "$MIG_PKI/ca.crt" \
		--bundle-dir "$T/small/bundles" --allow-unsigned --timeout "$TMO" --accept-timeout 60000 >"$T/r.out" 2>&1 &
	MIG_RPID=$!
	for _ in $(seq 200); do grep -q 'listening on port' "$T/r.out" 2>/dev/null && break; sleep 0.05; done
}
wait_stopped_receive() {
	rp=""
	for _ in $(seq 600); do
		for p in $(pgrep -f -- "receive --listen $MIG_IP_DST"); do
			[ "$(task_state "$p")" = T ] && rp=$p
		done
		[ -n "$rp" ] && return 0
		kill -0 "$mj" 2>/dev/null || break
		sleep 0.05
	done
	fail "$1: receive did not stop at its pause: $(cat "$T/m.out") / $(cat "$T/r.out")"
}
dest_fills_at() {
	local what=$1 at=$2 left
	rm -rf "$T/small/root" "$T/small/bundles" "$T/small/filler" "$T/small/img"
	small_receive "$at"
	rt_migrate --timeout 30000 "$mid" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/m.out" 2>&1 &
	mj=$!
	wait_stopped_receive "$what"
	fill_to "$T/small" $(($(rnd 256) + 64))
	kill -CONT "$rp"
	wait "$mj" && fail "$what: the migration succeeded on a full disk"
	mig_receive_wait 30
	# (receive refuses a file it has no room for before it writes it)
	names "$what" "$NOSPACE" "$T/m.out"
	names "$what" "$NOSPACE" "$T/r.out"
	rm -f "$T/small/filler"
	left=$(find "$T/small/bundles" "$T/small/root/.migrate-in" -mindepth 1 -maxdepth 1 2>/dev/null)
	[ -z "$left" ] || fail "$what: left on the destination: $left"
	assert_one_host "$what"
}
f_enospc_dest() { dest_fills_at enospc-dest receive:transfer; }
f_disk_full_restore() { dest_fills_at disk-full-restore restore:stage-rootfs; }

# a FUSE filesystem over $T/fb at $T/ff that fails as $T/ff.ctl says
faultfs_up() {
	[ -x "$FAULTFS" ] || { log "no cryo-test-faultfs (libfuse3-dev): the EIO faults are left out"; return 1; }
	[ -n "${FFPID:-}" ] && return 0
	mkdir -p "$T/fb" "$T/ff"
	chmod 700 "$T/fb"
	: >"$T/ff.ctl"
	"$FAULTFS" "$T/fb" "$T/ff" "$T/ff.ctl" "$T/ff.stats" 2>"$T/ff.err" &
	FFPID=$!
	at_exit "umount -l '$T/ff' 2>/dev/null; kill $FFPID 2>/dev/null"
	for _ in $(seq 100); do mountpoint -q "$T/ff" && return 0; sleep 0.05; done
	fail "the FUSE filesystem did not come up: $(cat "$T/ff.err")"
}
ff_set() { echo "$1" >"$T/ff.ctl"; touch -d "+1 sec" "$T/ff.ctl"; }
ff_hits() { awk -v k="$1" '$1 == k { print $2 }' "$T/ff.stats"; }
f_eio_write() {
	local img=$T/ff/img size hits
	faultfs_up || return 0
	ff_set ""
	rm -rf "$img"
	prev_image "$img"
	size=$(du -sb "$img" | awk '{ print $1 }')
	hits=$(ff_hits eio_write)
	ff_set "write_eio_after=$(rnd "$size")"
	expect_fail 1 ck --image-path "$img" "$c"
	ff_set ""
	echo "$LAST_OUTPUT" >"$T/err"
	[ "$(ff_hits eio_write)" -gt "$hits" ] || fail "eio-write: no write failed"
	names eio-write 'Input/output error|I/O error' "$T/err"
	assert_prev eio-write "$img"
	assert_runs eio-write
}
f_eio_read() {
	local img=$T/ff/img-r size hits st
	faultfs_up || return 0
	ff_set ""
	rm -rf "$img"
	timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$img" "$c" </dev/null >"$T/ck.out" 2>&1 ||
		fail "eio-read: checkpoint: $(cat "$T/ck.out")"
	img_sums "$img" >"$T/prev.sums"
	size=$(du -sb "$img" | awk '{ print $1 }')
	hits=$(ff_hits eio_read)
	ff_set "read_eio_after=$(rnd "$size")"
	expect_fail 1 timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$img" "$c"
	ff_set ""
	echo "$LAST_OUTPUT" >"$T/err"
	[ "$(ff_hits eio_read)" -gt "$hits" ] || fail "eio-read: no read failed"
	names eio-read 'Input/output error|I/O error' "$T/err"
	st=$(rt state "$c" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null)
	[ -z "$st" ] || [ "$st" = stopped ] || fail "eio-read: the container is $st after the failed restore"
	[ -z "$(cat "/sys/fs/cgroup/unified/$CGPARENT/$c/cgroup.procs" 2>/dev/null)" ] || fail "eio-read: tasks left"
	assert_prev eio-read "$img"
	timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$img" "$c" </dev/null >"$T/rs.out" 2>&1 ||
		fail "eio-read: the image does not restore once reads work: $(cat "$T/rs.out")"
	assert_runs eio-read
}

SRC_IF=vm$MIG_N
slow_link() { tc qdisc replace dev "$SRC_IF" root tbf rate "$1" burst 32kbit latency 400ms || fail "tc tbf"; }
fast_link() { tc qdisc del dev "$SRC_IF" root 2>/dev/null; return 0; }
at_exit fast_link
f_link_cut() {
	local b
	slow_link 16mbit
	mig_receive "$T/r.out" --allow-unsigned --timeout "$TMO"
	rt_migrate --timeout "$TMO" "$mid" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/m.out" 2>&1 &
	mj=$!
	for _ in $(seq 400); do
		b=$(du -sb "$MIG_ROOT_DST/.migrate-in" 2>/dev/null | awk '{ print $1 }')
		[ "${b:-0}" -ge $((256 * 1024 + $(rnd 1048576))) ] && break
		kill -0 "$mj" 2>/dev/null || break
		sleep 0.02
	done
	ip link set "$SRC_IF" down
	wait "$mj" && fail "link-cut: the migration went through"
	ip link set "$SRC_IF" up
	fast_link
	mig_receive_wait 60
	names link-cut 'timed out|Connection reset|Broken pipe|failed at' "$T/m.out"
	assert_one_host link-cut
}
f_link_slow() {
	slow_link 8mbit
	mig_receive "$T/r.out" --allow-unsigned
	rt_migrate "$mid" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/m.out" 2>&1 || fail "link-slow: $(cat "$T/m.out")"
	fast_link
	mig_receive_wait 30
	rt delete "$mid" >/dev/null 2>&1
	# it runs there (and nowhere here); then back: it runs here again, as the other faults want it
	[ "$(rt_dst freezer-state "$mid")" = RUNNING ] || fail "link-slow: there it is $(rt_dst freezer-state "$mid")"
	soak_cg_runs "$DST_CG" || fail "link-slow: there its cgroup runs nothing"
	soak_counts_on "link-slow, there" "$MIG_BUNDLES/$mid/rootfs-dir/status"
	mig_back "link-slow" "$mid"
	assert_runs "link-slow, back" "$mid" "$SM"
}

# a checkpoint in the background into the previous image's path: cryo's pid in ckp
ck_bg() {
	"$CRYO_BIN" --root "$RTROOT" checkpoint --leave-running --freeze-deadline "$DEADLINE" --image-path "$1" "$c" \
		</dev/null >"$T/ck.out" 2>&1 &
	ckp=$!
}
# after a killed or stopped cryo: what recover leaves, the image, the container
after_cryo() {
	local what=$1 img=$2 st=$3
	rt recover >"$T/rec.out" 2>&1 || fail "$what: recover: $(cat "$T/rec.out")"
	# A filesystem's watchdog whose holder was killed thaws it and removes
	# its entry itself, as the kill wakes it: recover keeps a hold whose
	# watchdog lives ("kept fs-thaw ...: is live"), so it may be a moment.
	for _ in $(seq 100); do [ -z "$(ls "$RTROOT/.holds" 2>/dev/null)" ] && break; sleep 0.05; done
	[ -z "$(ls "$RTROOT/.holds" 2>/dev/null)" ] ||
		fail "$what: journal entries left 5 s on: $(ls "$RTROOT/.holds" | tr '\n' ' '); recover said: $(cat "$T/rec.out"); $(hold_diag)"
	# killed after its commit (the atomic rename), before it exited: the new
	# image is the one at the path, and must be whole, as if it had gone through
	if [ "$st" != 0 ] && ! img_sums "$img" | cmp -s - "$T/prev.sums"; then
		soak_count "$what.after-commit"
		st=0
	fi
	if [ "$st" = 0 ]; then
		# it went through: whole, it verifies, and the counter restored from it passes its checks
		"$CRYO_BIN" inspect "$img" 2>&1 | grep -q '^verified: *yes' || fail "$what: the new image does not verify"
		img_sums "$img" >"$T/prev.sums"
		rt delete --force "$c" >/dev/null 2>&1
		timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$img" "$c" </dev/null \
			>"$T/rs.out" 2>&1 || fail "$what: the image it took does not restore: $(cat "$T/rs.out")"
	else
		assert_prev "$what" "$img"
	fi
	assert_runs "$what"
}
ck_ms=1000
f_kill_cryo() {
	local img=$T/img-k st=0 t0
	[ -d "$img" ] || prev_image "$img"
	t0=$(now_ms)
	ck_bg "$img"
	sleep "$(printf '0.%03d' "$(rnd "$ck_ms")")"
	kill -9 "$ckp" 2>/dev/null
	wait "$ckp" || st=$?
	[ $st = 0 ] && soak_count kill-cryo.too-late
	after_cryo kill-cryo "$img" "$st"
}
# what holds the container: the journal's entries, cryo's and CRIU's processes
hold_diag() {
	local e p
	echo "# uptime: $(cut -d' ' -f1 /proc/uptime)"
	for e in "$RTROOT"/.holds/*.json; do
		[ -e "$e" ] && echo "# hold $(basename "$e"): $(tr -d '\n\t ' <"$e")"
	done
	for p in $(pgrep -f "$CRYO_BIN|criu"); do
		echo "# ps: $(ps -o pid=,ppid=,pgid=,stat=,etimes=,args= -p "$p")"
		echo "# stack $p: $(tr '\n' ' ' <"/proc/$p/stack" 2>/dev/null)"
	done
	return 0
}
f_stop_cryo() {
	local img=$T/img-k st=0 t0 fs
	[ -d "$img" ] || prev_image "$img"
	ck_bg "$img"
	sleep "$(printf '0.%03d' "$(rnd "$ck_ms")")"
	kill -STOP "$ckp" 2>/dev/null
	t0=$(now_ms)
	# its watchdogs thaw the container (and its filesystem) by the deadline,
	# which is at most DEADLINE ms on (a stopped cryo freezes nothing new).
	# Not before: CRIU, which outlives the stop, thaws the cgroup while it
	# dumps and freezes it again after, as it found it.
	while { [ $(($(now_ms) - t0)) -lt "$DEADLINE" ] || [ "$(rt freezer-state "$c")" != RUNNING ]; } &&
		[ $(($(now_ms) - t0)) -lt $((DEADLINE + 3000)) ]; do sleep 0.05; done
	fs=$(rt freezer-state "$c")
	[ "$fs" = RUNNING ] || hold_diag
	kill -CONT "$ckp" 2>/dev/null
	wait "$ckp" || st=$?
	[ "$fs" = RUNNING ] || fail "stop-cryo: cryo stopped, the container is $fs $((DEADLINE + 3000)) ms on"
	[ $st = 0 ] || names stop-cryo 'deadline|thawed|timed out|Timer expired|lost' "$T/ck.out"
	after_cryo stop-cryo "$img" "$st"
}
# CRIU of the background checkpoint ckp, once it runs: its pid in crp
criu_of() {
	crp=""
	for _ in $(seq 400); do
		crp=$(pgrep -P "$ckp" -f swrk | head -1)
		[ -n "$crp" ] && return 0
		kill -0 "$ckp" 2>/dev/null || return 1
		sleep 0.005
	done
	return 1
}
f_kill_criu() {
	local img=$T/img-k st=0
	[ -d "$img" ] || prev_image "$img"
	ck_bg "$img"
	if criu_of; then
		sleep "$(printf '0.%03d' "$(rnd 200)")"
		kill -9 "$crp" 2>/dev/null
	else
		soak_count kill-criu.missed
	fi
	wait "$ckp" || st=$?
	[ $st = 0 ] || names kill-criu 'criu|CRIU' "$T/ck.out"
	after_cryo kill-criu "$img" "$st"
}
f_stop_criu() {
	local img=$T/img-k st=0 t0 fs
	[ -d "$img" ] || prev_image "$img"
	ck_bg "$img"
	if criu_of; then
		sleep "$(printf '0.%03d' "$(rnd 200)")"
		kill -STOP "$crp" 2>/dev/null
		t0=$(now_ms)
		while [ "$(rt freezer-state "$c")" != RUNNING ] && [ $(($(now_ms) - t0)) -lt $((DEADLINE + 3000)) ]; do sleep 0.05; done
		fs=$(rt freezer-state "$c")
		kill -CONT "$crp" 2>/dev/null
		[ "$fs" = RUNNING ] || fail "stop-criu: CRIU stopped, the container is $fs $((DEADLINE + 3000)) ms on"
	else
		soak_count stop-criu.missed
	fi
	wait "$ckp" || st=$?
	after_cryo stop-criu "$img" "$st"
}
f_kill_restore() {
	local img=$T/img-r st=0 p
	rm -rf "$img"
	timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$img" "$c" </dev/null >"$T/ck.out" 2>&1 ||
		fail "kill-restore: checkpoint: $(cat "$T/ck.out")"
	"$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$img" "$c" </dev/null >"$T/rs.out" 2>&1 &
	p=$!
	sleep "$(printf '0.%03d' "$(rnd 800)")"
	kill -9 "$p" 2>/dev/null
	wait "$p" || st=$?
	rt recover >"$T/rec.out" 2>&1 || fail "kill-restore: recover: $(cat "$T/rec.out")"
	if [ $st != 0 ]; then
		# nothing of it runs, nor is left stopped: its tasks died with it
		for _ in $(seq 60); do [ -z "$(cat "/sys/fs/cgroup/unified/$CGPARENT/$c/cgroup.procs" 2>/dev/null)" ] && break; sleep 0.05; done
		for p in $(cat "/sys/fs/cgroup/unified/$CGPARENT/$c/cgroup.procs" 2>/dev/null); do
			fail "kill-restore: task $p ($(task_state "$p")) outlived the killed restore"
		done
		rt delete --force "$c" >/dev/null 2>&1
		timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$img" "$c" </dev/null >"$T/rs.out" 2>&1 ||
			fail "kill-restore: the image does not restore after the kill: $(cat "$T/rs.out")"
	fi
	assert_runs kill-restore
}
# a migration whose receive gets SIG at a random moment (for stop: longer than the source's --timeout)
receiver_gets() {
	local what=$1 sig=$2 rp=""
	mig_receive "$T/r.out" --allow-unsigned --timeout "$TMO"
	rt_migrate --timeout "$TMO" "$mid" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/m.out" 2>&1 &
	mj=$!
	# (a 4 MiB migration takes some 700 ms here: the moment falls within it)
	sleep "$(printf '0.%03d' "$(rnd 600)")"
	rp=$(soak_pid cryo "--root $MIG_ROOT_DST receive")
	if [ -z "$rp" ] || ! kill -0 "$mj" 2>/dev/null; then
		soak_count "$what.missed"
	else
		kill "-$sig" "$rp"
		[ "$sig" = STOP ] && { sleep $((TMO / 1000 + 2)); kill -CONT "$rp"; }
	fi
	if wait "$mj"; then
		# it went through before the signal: back here for the next fault.
		# The signal may still have caught receive after its commit, while
		# it removed its staged images: those are journalled, for recover
		soak_count "$what.too-late"
		mig_receive_wait 30
		rt_dst recover >/dev/null 2>&1
		rt delete "$mid" >/dev/null 2>&1
		mig_back "$what" "$mid"
	else
		mig_receive_wait 60
		rt_dst recover >/dev/null 2>&1
		names "$what" 'failed at' "$T/m.out"
	fi
	# after recover there, nothing of it: its bundle, state dir and cgroup were journalled
	[ ! -e "$MIG_BUNDLES/$mid" ] || fail "$what: the bundle is left there: $(ls -A "$MIG_BUNDLES/$mid")"
	[ ! -e "$MIG_ROOT_DST/$mid" ] || fail "$what: the state dir is left there: $(ls -A "$MIG_ROOT_DST/$mid")"
	assert_one_host "$what"
}
f_kill_receiver() { receiver_gets kill-receiver KILL; }
f_stop_receiver() { receiver_gets stop-receiver STOP; }

# --- the campaign
small_fs small 160M
faultfs_up || true
# how long a checkpoint takes here: the random moments fall within it
t0=$(now_ms)
prev_image "$T/img-k"
ck_ms=$(($(now_ms) - t0))
[ "$ck_ms" -lt 999 ] || ck_ms=999
soak_baseline
n=0
while soak_more "$n" "$CYCLES"; do
	for k in $KINDS; do
		"f_${k//-/_}"
		soak_count "faults.$k"
		soak_check_leaks "after $k"
		log "$k: $(grep -m1 -ho 'cryo: .*' "$T/err" "$T/m.out" "$T/ck.out" 2>/dev/null | head -1 | cut -c1-200)"
		: >"$T/err"
	done
	n=$((n + 1))
	soak_count rounds
done
echo "PASS faults"
