#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Every freeze cryo makes has an owner and a deadline: `cryo checkpoint
# --leave-running` is stopped (CRYO_PAUSE_AT=<point>: cryo SIGSTOPs itself
# there) before each step of the checkpoint table, and at the freeze
# requests inside them, then its whole process group is SIGKILLed. After
# each kill the container must run again within the freeze deadline, its
# rootfs (its own ext4) must take writes, `cryo recover` must leave no
# staging dir and no journal entry, and the host check must be clean.
#
# The steps up to and including the pause before criu-dump need no CRIU;
# the later ones need a CRIU that dumps here (CRYO_CRIU, e.g. the CRIU 4
# of tests/setup-criu4.sh with CRIU_FAULT=130: `cryo check` says).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"

# long enough for a CRIU dump on a loaded machine (a kill thaws at once anyway);
# the hang case at the end waits for its own, short one
DEADLINE_MS=8000
HANG_DEADLINE_MS=2500
if [ -z "${CRYO_CRIU:-}" ] && [ -x /opt/cryo-criu4/sbin/criu ]; then
	export CRYO_CRIU=/opt/cryo-criu4/sbin/criu CRIU_FAULT=${CRIU_FAULT:-130}
fi

steps=$(checkpoint_steps)
[ -n "$steps" ] || fail "could not find the checkpoint step names"
echo "$steps" | grep -qw criu-dump || fail "no criu-dump step in: $steps"

if "$CRYO_BIN" check >/dev/null 2>&1; then
	criu_works=1
else
	criu_works=0
fi

id=ck-kill-$$
B=$T/$id
bundle_counting "$B"
rt_run_quiet "$B" "$id"
count() { bundle_count "$B"; }
# the container's cgroup, read without the state lock a stopped cryo holds
CG=$(rt_freezer_cgroup "$id") || exit 1
fz_state() { "$CRYO_BIN" freezer-state --cgroup "$CG"; }
for _ in $(seq 50); do [ "$(count)" -gt 2 ] && break; sleep 0.1; done
[ "$(count)" -gt 2 ] || fail "the container does not count"

# the points: before each step, and at the freeze requests inside the freeze steps
points=""
after_dump=0
for s in $steps; do
	[ $after_dump = 1 ] && [ $criu_works = 0 ] && { log "skip the pause before $s: CRIU can't dump here (\`cryo check\`)"; continue; }
	points="$points $s"
	case $s in
	freeze-cgroup) points="$points freeze" ;;
	freeze-fs) points="$points fsfreeze-freeze" ;;
	criu-dump) after_dump=1 ;;
	esac
done

# CRYO_CKILL_POINTS: only these points (the VM's cli_kmod, where a CRIU dump under TCG takes long)
if [ -n "${CRYO_CKILL_POINTS:-}" ]; then
	points=$CRYO_CKILL_POINTS
	log "only the points $points (CRYO_CKILL_POINTS)"
fi


tried=0 thawed=0 worst=0 frozen_seen=0 times=""
for p in $points; do
	img=$T/img-$p
	CRYO_PAUSE_AT=$p setsid "$CRYO_BIN" --root "$RTROOT" checkpoint --leave-running \
		--freeze-deadline $DEADLINE_MS --image-path "$img" --work-path "$T/work" "$id" \
		>"$T/ck.out" 2>&1 </dev/null &
	pid=$!
	wait_paused $pid || { wait $pid; fail "cryo did not stop at \`$p\` (CRYO_PAUSE_AT): $(cat "$T/ck.out")"; }
	[ "$(cat /proc/$pid/comm)" = cryo ] || fail "the stopped process $pid is not cryo"
	[ "$(sed 's/.*) //' /proc/$pid/stat | cut -d' ' -f3)" = $pid ] || fail "cryo $pid leads no process group"
	st=$(fz_state)
	[ "$st" = FROZEN ] && frozen_seen=$((frozen_seen + 1))

	t0=$(now_ms)
	kill -9 -- -$pid
	wait $pid 2>/dev/null
	tried=$((tried + 1))
	while [ "$(fz_state)" != RUNNING ] && [ $(($(now_ms) - t0)) -lt $((DEADLINE_MS + 2000)) ]; do
		sleep 0.01
	done
	ms=$(($(now_ms) - t0))
	[ "$(fz_state)" = RUNNING ] || fail "killed at $p: container still $(fz_state) $ms ms after kill -9 (deadline $DEADLINE_MS ms)"
	[ $ms -le $((DEADLINE_MS + 500)) ] || fail "killed at $p: thawed only after $ms ms (deadline $DEADLINE_MS ms)"
	thawed=$((thawed + 1))
	[ $ms -gt $worst ] && worst=$ms
	times="$times $p:${st:0:1}:${ms}ms"

	# the rootfs takes writes (a frozen fs would block: bounded by timeout)
	timeout 5 sh -c "echo x > '$B/rootfs/probe' && sync -f '$B/rootfs/probe'" || fail "killed at $p: rootfs still frozen"
	c1=$(count)
	for _ in $(seq 30); do sleep 0.1; [ "$(count)" -gt "$c1" ] && break; done
	[ "$(count)" -gt "$c1" ] || fail "killed at $p: the container does not run (count stuck at $c1 for 3 s)"

	out=$(rt recover 2>&1) || fail "killed at $p: recover failed: $out"
	if ls -a "$T" | grep -q 'staging'; then fail "killed at $p: staging dir left after recover: $(ls -a "$T")"; fi
	left=$(ls "$RTROOT/.holds/" 2>/dev/null; ls "$RTROOT/holds" 2>/dev/null)
	[ -z "$left" ] || fail "killed at $p: journal entries left after recover: $left"
	[ ! -e "$RTROOT/.fsfreeze" ] || fail "killed at $p: an fsfreeze dir after recover: $(ls -a "$RTROOT/.fsfreeze/")"
	[ "$(rt state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = running ] ||
		fail "killed at $p: container is not running: $(rt state "$id")"
	rm -rf "$img"
	log "killed at $p (container ${st}): running again $ms ms later; recover: $(echo "$out" | tail -1)"
done

# a cryo that hangs (stopped, never killed) loses its window at the deadline: the
# container and its rootfs thaw by themselves, and once it goes on, the checkpoint fails
if [ -z "${CRYO_CKILL_POINTS:-}" ]; then
	CRYO_PAUSE_AT=snapshot-rootfs setsid "$CRYO_BIN" --root "$RTROOT" checkpoint --leave-running \
		--freeze-deadline $HANG_DEADLINE_MS --image-path "$T/img-hang" --work-path "$T/work" "$id" \
		>"$T/ck.out" 2>&1 </dev/null &
	pid=$!
	# a failed check must not leave it stopped with the container in its hands
	at_exit "kill -9 $pid 2>/dev/null"
	wait_paused $pid || fail "cryo did not stop at snapshot-rootfs: $(cat "$T/ck.out")"
	t0=$(now_ms)
	[ "$(fz_state)" = FROZEN ] || fail "hang: not frozen at snapshot-rootfs"
	while [ "$(fz_state)" != RUNNING ] && [ $(($(now_ms) - t0)) -lt $((HANG_DEADLINE_MS + 2000)) ]; do
		sleep 0.02
	done
	ms=$(($(now_ms) - t0))
	[ "$(fz_state)" = RUNNING ] || fail "hang: still $(fz_state) $ms ms after the pause (deadline $HANG_DEADLINE_MS ms)"
	timeout 5 sh -c "echo x > '$B/rootfs/probe' && sync -f '$B/rootfs/probe'" || fail "hang: rootfs still frozen"
	log "cryo stopped at snapshot-rootfs and never killed: running again $ms ms later (deadline $HANG_DEADLINE_MS ms)"
	kill -CONT $pid
	wait $pid && fail "a checkpoint whose frozen window passed its deadline succeeded: $(cat "$T/ck.out")"
	grep -q "window was lost\|deadline" "$T/ck.out" || fail "hang: the error does not say the window was lost: $(cat "$T/ck.out")"
	[ ! -e "$T/img-hang" ] || fail "hang: an image was committed"
	if ls -a "$T" | grep -q 'staging'; then fail "hang: staging dir left: $(ls -a "$T")"; fi
	[ "$(fz_state)" = RUNNING ] || fail "hang: the failed checkpoint left the container $(fz_state)"
	left=$(ls -A "$RTROOT/.holds/" 2>/dev/null)
	[ -z "$left" ] || fail "hang: journal entries left: $left"
	log "then resumed: the checkpoint failed: $(grep -m1 'window was lost\|deadline' "$T/ck.out")"
fi

log "points tried: $tried, thawed within the ${DEADLINE_MS} ms deadline: $thawed, frozen when killed: $frozen_seen, slowest thaw: $worst ms"
log "per point (state when killed, time to RUNNING):$times"
[ $frozen_seen -gt 0 ] || fail "the container was never frozen when killed: the test tested nothing"
if [ $criu_works = 0 ]; then
	echo "PASS checkpoint_kill (steps after criu-dump skipped: CRIU can't dump on this host)"
else
	echo "PASS checkpoint_kill"
fi
