#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Many at once on one node: N containers (default 16), each on a loop
# mounted ext4 rootfs of its own, in one --root. Each round runs every
# step below for all of them at once, and every command must succeed:
#   fsfreeze --timeout / fsthaw,
#   freeze --deadline / thaw,
#   checkpoint --leave-running,
#   delete --force, then restore -d of that image,
#   checkpoint --pre-dump, checkpoint --parent-path (stops them), restore -d
#   (where the kernel tracks memory: soft-dirty; else the same without the
#   pre-dump).
# After each round every container runs (its counter counts on) and none
# is frozen; at the end the hold journal and <root>/.restore are empty,
# and once they are deleted no cryo, fsfreeze watchdog or CRIU process
# of this root is left (the host check compares mounts, loop devices and
# cgroups with the start).
#
# CRYO_PARALLEL_N: containers (default 16); CRYO_PARALLEL_ROUNDS: rounds
# (default 5, as in CI; under ASan CI runs 1). Needs a CRIU that works here.
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu
export CRIU_FAULT=${CRIU_FAULT:-130}

N=${CRYO_PARALLEL_N:-16}
ROUNDS=${CRYO_PARALLEL_ROUNDS:-5}
ids=()
for i in $(seq "$N"); do
	id=par$i-$$
	ids+=("$id")
	bundle_new "$T/$id" sh -c 'i=0; while true; do i=$((i+1)); echo $i > /count; sleep 0.2; done'
done
for id in "${ids[@]}"; do
	# stdio on /dev/null: CRIU cannot dump a file on a host mount
	rt run -d --bundle "$T/$id" "$id" </dev/null >/dev/null 2>&1 || fail "run $id failed (again: $(rt run -d --bundle "$T/$id" "$id-x" 2>&1 </dev/null))"
done
# the counter is rewritten in place: an empty read is "not yet"
count() { local c; c=$(cat "$T/$1/rootfs/count" 2>/dev/null); echo "${c:-0}"; }

# all_at_once WHAT CMD...: CMD with @ID@ replaced by each id, all started
# at once; fails the test with every failing command's output
all_at_once() {
	local what=$1 id pids=() bad="" t0 i
	shift
	t0=$(now_ms)
	for id in "${ids[@]}"; do
		"${@//@ID@/$id}" </dev/null >"$T/$id.out" 2>&1 &
		pids+=($!)
	done
	for i in "${!ids[@]}"; do
		wait "${pids[$i]}" || bad="$bad
  ${ids[$i]}: $(tail -3 "$T/${ids[$i]}.out")"
	done
	[ -z "$bad" ] || fail "round $round: $what failed for:$bad"
	times="$times $what:$(( $(now_ms) - t0 ))ms"
}

# every container runs: not frozen, its counter moves
all_running() {
	local id c=() i stuck
	declare -A st=()
	while read -r id s; do st[$id]=$s; done < <(rt list --format json |
		python3 -c 'import json,sys; [print(c["id"], c["status"]) for c in json.load(sys.stdin)]')
	for id in "${ids[@]}"; do
		[ "${st[$id]:-missing}" = running ] || fail "round $round, $1: $id is ${st[$id]:-missing}"
		[ "$(rt freezer-state "$id")" = RUNNING ] || fail "round $round, $1: $id is $(rt freezer-state "$id")"
		c+=("$(count "$id")")
	done
	for _ in $(seq 50); do
		sleep 0.1
		stuck=""
		for i in "${!ids[@]}"; do
			[ "$(count "${ids[$i]}")" -gt "${c[$i]}" ] || stuck="$stuck ${ids[$i]}"
		done
		[ -z "$stuck" ] && return 0
	done
	fail "round $round, $1: the counters of$stuck are stuck"
}

journal_empty() {
	local left
	left=$(ls -A "$RTROOT/.holds" 2>/dev/null)
	[ -z "$left" ] || fail "round $round, $1: left in the hold journal: $left"
	left=$(ls -A "$RTROOT/.restore" 2>/dev/null)
	[ -z "$left" ] || fail "round $round, $1: left in $RTROOT/.restore: $left"
}

round=0
all_running start
# CRIU's pre-dump needs the kernel's soft-dirty bits (this host's 6.18 has none)
predump=1
if ! rt checkpoint --pre-dump --image-path "$T/probe" "${ids[0]}" </dev/null >"$T/probe.out" 2>&1; then
	grep -q "soft-dirty page tracking" "$T/probe.out" || fail "pre-dump: $(cat "$T/probe.out")"
	predump=0
	log "no memory tracking (soft-dirty) on this kernel: the last step dumps without a pre-dump"
fi
rm -rf "$T/probe"
for round in $(seq "$ROUNDS"); do
	times=""
	I=$T/img-$round
	mkdir -p "$I"
	all_at_once fsfreeze "$CRYO_BIN" --root "$RTROOT" fsfreeze --timeout 30 @ID@
	all_at_once fsthaw "$CRYO_BIN" --root "$RTROOT" fsthaw @ID@
	all_at_once freeze "$CRYO_BIN" --root "$RTROOT" freeze --deadline 30000 @ID@
	all_at_once thaw "$CRYO_BIN" --root "$RTROOT" thaw @ID@
	all_running "fsfreeze and freeze"
	journal_empty "fsfreeze and freeze"
	all_at_once checkpoint "$CRYO_BIN" --root "$RTROOT" checkpoint --leave-running --image-path "$I/@ID@" @ID@
	all_running checkpoint
	all_at_once delete "$CRYO_BIN" --root "$RTROOT" delete --force @ID@
	all_at_once restore "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$I/@ID@" --bundle "$T/@ID@" @ID@
	all_running restore
	if [ $predump = 1 ]; then
		all_at_once pre-dump "$CRYO_BIN" --root "$RTROOT" checkpoint --pre-dump --image-path "$I/@ID@-pre" @ID@
		all_at_once dump "$CRYO_BIN" --root "$RTROOT" checkpoint --parent-path ../@ID@-pre --image-path "$I/@ID@-final" @ID@
	else
		all_at_once dump "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$I/@ID@-final" @ID@
	fi
	all_at_once restore-final "$CRYO_BIN" --root "$RTROOT" restore -d --image-path "$I/@ID@-final" --bundle "$T/@ID@" @ID@
	all_running "pre-dump, dump and restore"
	journal_empty "the round"
	rm -rf "$I"
	log "round $round of $ROUNDS, $N containers at once:$times"
done

for id in "${ids[@]}"; do
	rt delete --force "$id" >"$T/del.out" 2>&1 || fail "delete $id: $(cat "$T/del.out")"
done
journal_empty end
for p in $(pgrep -f "cryo|criu" || true); do
	grep -qF "$RTROOT" "/proc/$p/cmdline" 2>/dev/null && fail "a process of this root is left: $(tr '\0' ' ' <"/proc/$p/cmdline")"
done
# (a zombie is gone: this sandbox's PID 1 reaps the orphans it inherits late)
[ -z "$(pgrep -r D,R,S,T,t -x cryo-fsfreeze)" ] || fail "an fsfreeze watchdog is left: $(pgrep -a -r D,R,S,T,t -x cryo-fsfreeze)"
echo "PASS parallel_ops"
