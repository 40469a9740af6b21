#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The long soak and fault campaign, by hand (CI runs a short slice of each
# script as the ctest soak/<name>):
#
#   bash tests/soak/campaign.sh [SECONDS]     # default 3600
#   bash tests/soak/campaign.sh --summary     # the sums of CRYO_SOAK_OUT so far
#
# Until SECONDS passed, batch after batch of: cycles.sh (CRYO_SOAK_CYCLES
# rounds, default 10), faults.sh (every kind once), concurrency.sh (every
# case once) and fuzz_receive.sh (CRYO_SOAK_FUZZ_SECONDS, default 120),
# each under the host lock, taken per script run and released between
# (others can run their tests), each between two host checks
# (tests/lib/hostcheck.sh): a batch that leaves anything behind, or a
# frozen cgroup, counts as a failure. Every 4th batch (or never, with
# CRYO_SOAK_VM=0) also the lazy-migration kills
# (tests/host/migrate_lazy_kill.sh, under the lock, its own host check).
#
# Every script appends its figures to CRYO_SOAK_OUT (default
# build/soak-figures.jsonl, kept across campaigns: remove it to start
# afresh); at the end, and after every batch, the sums are printed:
# rounds and cycles, faults injected by kind, containers lost and left
# frozen, leaks, fuzz runs and hours, crashes. Failed runs keep their
# logs in build/soak-logs/.
set -u
cd "$(dirname "$0")/../.."
SRC=$PWD
: "${CRYO_BUILD:=$SRC/build}"
: "${CRYO_BIN:=$CRYO_BUILD/cryo}"
export CRYO_SRC=$SRC CRYO_BUILD CRYO_BIN
TOTAL=${1:-${CRYO_SOAK_SECONDS:-3600}}
[ "$TOTAL" = --summary ] && TOTAL=0
: "${CRYO_SOAK_OUT:=$CRYO_BUILD/soak-figures.jsonl}"
export CRYO_SOAK_OUT
LOGS=$CRYO_BUILD/soak-logs
mkdir -p "$LOGS"
LOCK=${CRYO_HOST_LOCK:-/tmp/cryo-host.lock}
t0=$(date +%s)
batch=0
failures=0

# run a script under the host lock, between host checks; its log kept if it fails
run() {
	local name=$1 log rc
	shift
	log=$LOGS/$name.$(date +%Y%m%d-%H%M%S).log
	flock "$LOCK" bash -c '
		"$CRYO_SRC/tests/lib/hostcheck.sh" save "$1.host" >/dev/null || exit 99
		env "${@:3}" bash "$CRYO_SRC/tests/soak/$2.sh"; rc=$?
		if ! "$CRYO_SRC/tests/lib/hostcheck.sh" verify "$1.host" >"$1.hostcheck" 2>&1; then
			echo "{\"test\": \"$2\", \"frozen_left\": $(grep -c "^+.*\(FROZEN\|cgroup.freeze 1\)" "$1.hostcheck"), \"host_damage\": 1}" >>"$CRYO_SOAK_OUT"
			cat "$1.hostcheck"
			[ $rc = 0 ] && rc=98
		fi
		rm -f "$1.host" "$1.hostcheck"
		exit $rc' run "$log" "$name" "$@" >"$log" 2>&1
	rc=$?
	if [ $rc = 0 ] || [ $rc = 77 ]; then
		rm -f "$log"
	else
		failures=$((failures + 1))
		echo "campaign: $name failed ($rc): $log" >&2
		tail -5 "$log" | sed 's/^/  /' >&2
	fi
}

summary() {
	python3 - "$CRYO_SOAK_OUT" "$failures" "$(($(date +%s) - t0))" <<'PY'
import json, sys
# fault kinds, fuzz and concurrency cases as they are; each script's own
# counts as "<script>:<name>" (faults.sh's "failed" is no kind of fault)
tot = {}
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    t = d.pop("test", "?")
    d.pop("seed", None)
    for k, v in d.items():
        if isinstance(v, (int, float)):
            shared = k.startswith(("faults.", "fuzz.", "cases.")) and k.count(".") == 1
            key = k if shared else f"{t}:{k}"
            tot[key] = tot.get(key, 0) + v
g = lambda k: tot.get(k, 0)
mine = lambda name: sum(v for k, v in tot.items() if k.endswith(":" + name))
faults = {k[7:]: v for k, v in tot.items() if k.startswith("faults.")}
fuzz_s = g("fuzz.seconds")
print(f"campaign: {sys.argv[3]} s this run, figures of every run in {sys.argv[1]}:")
print(f"  cycles rounds {g('cycles:rounds')} (checkpoints {g('cycles:checkpoints')}, restores {g('cycles:restores')}, "
      f"migrations {g('cycles:migrations')}, freezes {g('cycles:freezes')})")
print(f"  faults injected {sum(faults.values())}: " + ", ".join(f"{k} {v}" for k, v in sorted(faults.items())))
print(f"  concurrency rounds {g('concurrency:rounds')}: " +
      ", ".join(f"{k[6:]} {v}" for k, v in sorted(tot.items()) if k.startswith("cases.")))
print(f"  fuzz: {g('fuzz.runs')} connections in {fuzz_s / 3600:.2f} h, refused {g('fuzz.refused')}, "
      f"crashes {g('fuzz.crashes')}, hangs {g('fuzz.hangs')}, leftovers {g('fuzz.leftovers')}, findings {g('fuzz.findings')}")
print(f"  runs failed {mine('failed')}, host damage {mine('host_damage')}, frozen left {mine('frozen_left')}, "
      f"leaks {mine('leaks')}; failures this campaign {sys.argv[2]}")
PY
}

# --summary: the sums of CRYO_SOAK_OUT, nothing run
if [ "${1:-}" = --summary ]; then
	summary
	exit 0
fi

while [ $(($(date +%s) - t0)) -lt "$TOTAL" ]; do
	batch=$((batch + 1))
	run cycles CRYO_SOAK_CYCLES="${CRYO_SOAK_CYCLES:-10}"
	run faults CRYO_SOAK_CYCLES=1
	run concurrency CRYO_SOAK_CYCLES=1
	run fuzz_receive CRYO_SOAK_SECONDS="${CRYO_SOAK_FUZZ_SECONDS:-120}"
	if [ "${CRYO_SOAK_VM:-1}" = 1 ] && [ $((batch % 4)) = 1 ]; then
		log=$LOGS/migrate_lazy_kill.$(date +%Y%m%d-%H%M%S).log
		if flock -o "$LOCK" bash tests/host/migrate_lazy_kill.sh >"$log" 2>&1; then
			echo '{"test": "migrate_lazy_kill", "rounds": 1, "faults.lazy-daemon-kill": 1, "faults.lazy-page-server-kill": 1, "faults.lazy-receive-kill": 1, "faults.lazy-migrate-kill": 1, "faults.lazy-link-cut": 1}' >>"$CRYO_SOAK_OUT"
			rm -f "$log"
		else
			failures=$((failures + 1))
			echo '{"test": "migrate_lazy_kill", "failed": 1}' >>"$CRYO_SOAK_OUT"
			echo "campaign: host/migrate_lazy_kill failed: $log" >&2
		fi
	fi
	echo "campaign: batch $batch done after $(($(date +%s) - t0)) s"
	summary
done
summary
[ $failures = 0 ]
