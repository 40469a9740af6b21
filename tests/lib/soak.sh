# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# Sourced by tests/soak/*.sh after common.sh (it sources bundle.sh,
# workload.sh and migrate.sh, which every soak uses): how a soak starts,
# how long it runs, what it counts, and the figures it reports.
#
#   CRYO_SOAK_CYCLES=N     rounds to run (each script has its own default:
#                          a short slice for CI)
#   CRYO_SOAK_SECONDS=S    or: run rounds until S seconds have passed (at
#                          least one round); wins over CRYO_SOAK_CYCLES
#   CRYO_SOAK_OUT=FILE     append this run's figures to FILE (one JSON
#                          object per line; tests/soak/campaign.sh sums them)
#
#   soak_begin                 skip unless CRIU works on this host and the
#                              counter is linked static (CRIU restores it
#                              into a rootfs without the host's libraries)
#   soak_more ROUNDS_DONE      true while another round should run
#   soak_count KEY [N]         add N (1) to the figure KEY
#   soak_time KEY MS           a duration of KEY: count, sum and max kept
#   soak_run KEY CMD...        run CMD, timed as KEY (ms); its status
#   soak_resources             one line: what a round must not leave behind
#   soak_baseline              take the current counts as the baseline
#   soak_check_leaks WHAT      fail if a count differs from the baseline
#   soak_records_ok FILE       the counter's records file holds exactly
#                              records 1..n, each in its place (its checksum)
#   soak_counts_on WHAT STATUS fail unless the counter writing STATUS counts
#                              on with its checks passing, its records whole
#   soak_runs WHAT ID STATUS   that, and ID runs here (not frozen)
#   soak_cg_runs CGDIR         true when that cgroup2 dir has a task that
#                              runs (not frozen, not stopped)
#   soak_pid COMM PATTERN      the oldest process called COMM whose command
#                              line has PATTERN (not the shells around it)
#
# The figures are printed at exit ("# figures: ...") and written to
# CRYO_SOAK_OUT, with "leaks" and "failed" set: a run that fails still
# reports how far it got.

. "$CRYO_SRC/tests/lib/bundle.sh"
. "$CRYO_SRC/tests/lib/workload.sh"
. "$CRYO_SRC/tests/lib/migrate.sh"

: "${CRYO_SOAK_SECONDS:=0}"
SOAK_T0=$(now_ms)
declare -A SOAK_FIG=()
SOAK_NAME=${TEST_NAME%.sh}
SOAK_BASE=""

soak_begin() {
	need_host_criu
	file "$WL_BIN" | grep -q 'statically linked' || skip "cryo-test-counter is not static (sanitizer build?)"
}

soak_more() {
	local done=$1 cycles=$2
	if [ "${CRYO_SOAK_SECONDS:-0}" -gt 0 ]; then
		[ "$done" -eq 0 ] || [ $(($(now_ms) - SOAK_T0)) -lt $((CRYO_SOAK_SECONDS * 1000)) ]
	else
		[ "$done" -lt "$cycles" ]
	fi
}

soak_count() { SOAK_FIG[$1]=$(( ${SOAK_FIG[$1]:-0} + ${2:-1} )); }

soak_time() {
	local k=$1 ms=$2
	soak_count "$k.n"
	soak_count "$k.ms_sum" "$ms"
	[ "$ms" -gt "${SOAK_FIG[$k.ms_max]:-0}" ] && SOAK_FIG[$k.ms_max]=$ms
	return 0
}

soak_run() {
	local k=$1 t0 rc=0
	shift
	t0=$(now_ms)
	"$@" || rc=$?
	soak_time "$k" $(($(now_ms) - t0))
	return $rc
}

# cryo's and CRIU's processes (watchdogs included), their fds and memory:
# every one on the host (the host lock keeps others' tests away meanwhile)
# (not the zombies: a watchdog that ended is reparented to pid 1, which
# reaps when it gets to it, a second or two here)
_soak_procs() {
	local c p
	for c in cryo cryo-fsfreeze criu; do
		for p in $(pgrep -x "$c"); do
			[ "$(awk '/^State/ { print $2 }' "/proc/$p/status" 2>/dev/null)" = Z ] || echo "$p"
		done
	done
}

soak_resources() {
	local procs p v fds=0 rss=0 holds staging
	procs=$(_soak_procs)
	for p in $procs; do
		fds=$((fds + $(ls "/proc/$p/fd" 2>/dev/null | wc -l)))
		# (a process that just ended, or a zombie, has no VmRSS)
		v=$(awk '/^VmRSS/ { print $2 }' "/proc/$p/status" 2>/dev/null) || v=
		rss=$((rss + ${v:-0}))
	done
	holds=$(find "$T" -path '*/.holds/*.json' 2>/dev/null | wc -l)
	staging=$( (find "$T" -maxdepth 4 \( -path '*/.migrate-in/*' -o -path '*/.migrate-out/*' -o -path '*/.restore/*' \
		-o -name '.*.staging-*' \) -prune -print 2>/dev/null) | wc -l)
	printf 'mounts %s loops %s cgroups %s veths %s holds %s staging %s procs %s fds %s rss_kb %s\n' \
		"$(wc -l </proc/self/mountinfo)" \
		"$(losetup -a -n 2>/dev/null | wc -l)" \
		"$(find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | grep -vc '/process_api')" \
		"$( (ip -o link show type veth; [ -n "${MIG_NS:-}" ] && ip -n "$MIG_NS" -o link show type veth) 2>/dev/null | wc -l)" \
		"$holds" "$staging" "$(echo "$procs" | wc -w)" "$fds" "$rss"
}

_soak_cgroups() { find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | grep -v '/process_api' | sort; }
soak_baseline() {
	local i prev
	# settled: the same counts twice, half a second apart (a watchdog ending)
	SOAK_BASE=$(soak_resources)
	for i in $(seq 10); do
		prev=$SOAK_BASE
		sleep 0.5
		SOAK_BASE=$(soak_resources)
		_soak_same "$prev" && break
	done
	_soak_cgroups >"$T/soak-cgroups.base"
}

# every count as at the baseline: nothing of a round is left behind
soak_check_leaks() {
	local now i
	# a hold's watchdog or a CRIU helper may take a moment to end
	for i in $(seq 30); do
		now=$(soak_resources)
		_soak_same "$now" && return 0
		sleep 0.1
	done
	soak_count leaks
	fail "$1: $(_soak_same "$now" -v) (baseline: $SOAK_BASE; now: $now)$(_soak_ps)$(_soak_cgroups |
		comm -3 "$T/soak-cgroups.base" - | sed 's/^\t/  new cgroup /; t; s/^/  gone cgroup /; s/^/\n/' | head -20)"
}

# the processes counted, for the message of a leak
_soak_ps() {
	local p
	for p in $(_soak_procs); do
		printf '\n  pid %s (ppid %s, %s): %s' "$p" "$(awk '/^PPid/ { print $2 }' "/proc/$p/status" 2>/dev/null)" \
			"$(awk '/^State/ { print $2 }' "/proc/$p/status" 2>/dev/null)" "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
	done
}

# NOW has every count of the baseline; with -v, say which differs
_soak_same() {
	local now=$1 verbose=${2:-} k b n
	set -- $SOAK_BASE
	while [ $# -ge 2 ]; do
		k=$1 b=$2
		shift 2
		n=$(echo "$now" | awk -v k="$k" '{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }')
		case $k in
		rss_kb) continue ;; # the processes differ from one moment to the next: counted, not compared
		esac
		if [ "$n" != "$b" ]; then
			[ "$verbose" = -v ] && echo "$k went from $b to $n"
			return 1
		fi
	done
	return 0
}

soak_records_ok() {
	python3 - "$1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
if len(data) % 32:
    sys.exit(f"records: {len(data)} bytes, not whole 32-byte records")
for i in range(len(data) // 32):
    want = b"record %020d\n" % (i + 1)
    rec = data[i * 32:(i + 1) * 32]
    if rec[:len(want)] != want:
        sys.exit(f"records: record {i + 1} is {rec!r}")
PY
}

soak_counts_on() {
	local what=$1 st=$2 n
	n=$(wl_count "$st")
	wl_wait_above "$st" $((n + 5))
	wl_status "$st" | grep -q ' ok ' || fail "$what: $(wl_status "$st")"
	soak_records_ok "$(dirname "$st")/records" || fail "$what: the records file is not whole"
}

soak_runs() {
	local what=$1 id=$2 st=$3
	for _ in $(seq 60); do [ "$(rt freezer-state "$id")" = RUNNING ] && break; sleep 0.05; done
	[ "$(rt freezer-state "$id")" = RUNNING ] || fail "$what: $id is $(rt freezer-state "$id")"
	soak_counts_on "$what: $id" "$st"
}

# The oldest, not the lowest pid: pids wrap (pid_max is 32768 here, and a
# CI run goes round it), and a command's helpers forked without exec
# (watchdogs, an untar) carry its command line under the same name.
soak_pid() {
	local p st best="" best_st=""
	for p in $(pgrep -f -- "$2" 2>/dev/null); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] || continue
		# field 22 of stat, counted after the `) ` that ends the name
		st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f20)
		[ -n "$st" ] || continue
		if [ -z "$best" ] || [ "$st" -lt "$best_st" ]; then
			best=$p
			best_st=$st
		fi
	done
	[ -n "$best" ] && echo "$best"
}

soak_cg_runs() {
	local cg=$1 t st
	[ -d "$cg" ] || return 1
	grep -q 'frozen 1' "$cg/cgroup.events" 2>/dev/null && return 1
	for t in $(cat "$cg/cgroup.threads" 2>/dev/null); do
		st=$(sed 's/.*) //' "/proc/$t/stat" 2>/dev/null | cut -d' ' -f1)
		case $st in T|t|X|Z|"") ;; *) return 0 ;; esac
	done
	return 1
}

_soak_report() {
	local k line="" json="" rc=$1
	[ ${#SOAK_FIG[@]} -gt 0 ] || SOAK_FIG[rounds]=0
	SOAK_FIG[seconds]=$(( ($(now_ms) - SOAK_T0) / 1000 ))
	SOAK_FIG[leaks]=${SOAK_FIG[leaks]:-0}
	SOAK_FIG[failed]=$([ "$rc" = 0 ] || [ "$rc" = 77 ] && echo 0 || echo 1)
	for k in $(printf '%s\n' "${!SOAK_FIG[@]}" | sort); do
		line="$line $k=${SOAK_FIG[$k]}"
		json="$json\"$k\": ${SOAK_FIG[$k]}, "
	done
	echo "# figures ($SOAK_NAME):$line"
	[ -n "${CRYO_SOAK_OUT:-}" ] && [ "$rc" != 77 ] &&
		echo "{\"test\": \"$SOAK_NAME\", ${json%, }}" >>"$CRYO_SOAK_OUT"
	return 0
}
# reported before common.sh's cleanup, which then exits with the test's status
trap '_soak_rc=$?; _soak_report $_soak_rc; (exit $_soak_rc); _cleanup' EXIT
