#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A checkpoint SIGKILLed at a random moment never blocks the next one: a
# kubelet or containerd retries at once, without `cryo recover`. Each
# round starts `checkpoint --leave-running`, kills it (cryo alone, or its
# whole process group) 0-300 ms in, then checkpoints again into the same
# image path at once. The retry must succeed every time: the hold a dead
# cryo left (its staging dir's, its freeze's) is undone by the next
# command under the journal lock, with one line saying so. After each
# round the container runs (its counter counts, its rootfs takes
# writes); at the end the hold journal is empty, no staging dir, no
# fsfreeze watchdog and no CRIU of ours is left.
#
# CRYO_PARALLEL_KILLS: rounds (default 8). Needs a CRIU that works here.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu
export CRIU_FAULT=${CRIU_FAULT:-130}

rounds=${CRYO_PARALLEL_KILLS:-8}
id=pk-$$
B=$T/$id
bundle_counting "$B"
rt_run_quiet "$B" "$id"
count() { bundle_count "$B"; }
wait_count_above() { bundle_count_above "$B" "$1" || fail "$2: the counter is stuck at $(count)"; }
CG=$(rt_freezer_cgroup "$id") || exit 1
fz_state() { "$CRYO_BIN" freezer-state --cgroup "$CG"; }
wait_count_above 2 "start"

recovered=0 runs=""
for i in $(seq "$rounds"); do
	img=$T/img-$i
	delay=$((RANDOM % 300))
	setsid "$CRYO_BIN" --root "$RTROOT" checkpoint --leave-running --freeze-deadline 8000 \
		--image-path "$img" --work-path "$T/work-$i" "$id" </dev/null >"$T/ck.out" 2>&1 &
	pid=$!
	sleep "$(printf '0.%03d' "$delay")"
	# odd rounds: cryo alone (its CRIU dies with it); even ones: its whole process group
	if [ $((i % 2)) = 1 ]; then how=alone; kill -9 "$pid" 2>/dev/null; else how=group; kill -9 -- -"$pid" 2>/dev/null; fi
	wait "$pid" 2>/dev/null && state=done || state=killed
	runs="$runs ${delay}ms:$how:$state"

	# the retry, at once: no recover in between
	"$CRYO_BIN" --debug --root "$RTROOT" checkpoint --leave-running --freeze-deadline 8000 \
		--image-path "$img" --work-path "$T/work-$i" "$id" </dev/null >"$T/retry.out" 2>&1 ||
		fail "round $i (killed $how ${delay} ms in): the checkpoint after it failed: $(cat "$T/retry.out")"
	if grep -q "recovered stale hold" "$T/retry.out"; then
		recovered=$((recovered + 1))
		grep -q "recovered stale hold $id@[a-z]* of dead pid $pid\|recovered stale hold $id of dead pid $pid" "$T/retry.out" ||
			fail "round $i: the recovery line does not name the dead cryo $pid: $(grep 'recovered' "$T/retry.out")"
	fi
	"$CRYO_BIN" inspect "$img" >"$T/inspect" 2>&1 || fail "round $i: the retry's image does not verify: $(cat "$T/inspect")"
	[ "$(fz_state)" = RUNNING ] || fail "round $i (killed $how ${delay} ms in, $state): the container is $(fz_state) after the retry; the retry said: $(grep -iE "hold|frozen|freez|thaw|wait" "$T/retry.out" | tail -12 | tr "\n" " ")"
	timeout 5 sh -c "echo x > '$B/rootfs/probe'" || fail "round $i: the rootfs does not take writes"
	wait_count_above "$(count)" "round $i"
done

left=$(ls -A "$RTROOT/.holds" 2>/dev/null)
[ -z "$left" ] || fail "hold journal entries left: $left"
staging=$(find "$T" -maxdepth 1 -name '.*staging*')
[ -z "$staging" ] || fail "staging dirs left: $staging"
for p in $(pgrep -f "cryo-fsfreeze|criu" || true); do
	grep -qF "$RTROOT" "/proc/$p/cmdline" 2>/dev/null && fail "a process of this root is left: $(tr '\0' ' ' <"/proc/$p/cmdline")"
done
# (a zombie is gone: this sandbox's PID 1 reaps the orphans it inherits late)
[ -z "$(pgrep -r D,R,S,T,t -x cryo-fsfreeze)" ] || fail "an fsfreeze watchdog is left: $(pgrep -a -r D,R,S,T,t -x cryo-fsfreeze)"
log "$rounds kills ($runs), each retried at once: all succeeded, $recovered after recovering a dead cryo's hold"
echo "PASS parallel_kill_checkpoint"
