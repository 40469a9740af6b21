# SPDX-License-Identifier: GPL-2.0-only
# Sourced after common.sh by the tests that run the self-checking
# checkpoint/restore workload, tests/tools/cryo-test-counter.c. It keeps
# rewriting a status file: "<count> ok <records>", or "FAIL <why>".
#
#   WL_BIN                     the workload binary
#   wl_count STATUS            the count in STATUS (empty while there is none)
#   wl_wait_above STATUS MIN   until the count passes MIN; fails the test on a
#                              FAIL status or after 30 s

WL_BIN=$CRYO_BUILD/tests/tools/cryo-test-counter

wl_count() { awk '{ print $1 }' "$1" 2>/dev/null; }

wl_wait_above() {
	local status=$1 min=$2 c
	for _ in $(seq 300); do
		if grep -q FAIL "$status" 2>/dev/null; then fail "workload: $(cat "$status")"; fi
		c=$(wl_count "$status")
		[ -n "$c" ] && [ "$c" -gt "$min" ] 2>/dev/null && return 0
		sleep 0.1
	done
	fail "workload counter did not pass $min (status: $(cat "$status" 2>/dev/null))"
}
