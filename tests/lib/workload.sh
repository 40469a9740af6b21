# SPDX-License-Identifier: GPL-2.0-only
# Sourced after common.sh by the tests that run the self-checking
# checkpoint/restore workload, tests/tools/cryo-test-counter.c. It keeps
# rewriting a status file: "<count> ok <records>", or "FAIL <why>".
#
#   WL_BIN                     the workload binary
#   wl_bundle DIR MIB          a bundle (bundle.sh's bundle_new) running it
#                              with MIB MiB of pattern and a records file,
#                              with no cgroup limits
#   wl_status STATUS           the content of STATUS
#   wl_count STATUS            the count in STATUS (empty while there is none)
#   wl_wait_above STATUS MIN   until the count passes MIN; fails the test on a
#                              FAIL status or after 30 s

WL_BIN=$CRYO_BUILD/tests/tools/cryo-test-counter

wl_bundle() {
	bundle_new "$1" /counter /status "$2" /records
	cp "$WL_BIN" "$1/rootfs/counter"
	bundle_set "$1" "c['linux'].pop('resources', None)"
}

# The status line into WL_LINE. The workload rewrites the file every 20 ms
# (truncate, write): read until non-empty. bash's own read, as the polls
# below use it: they ran a cat, a grep, another cat and an awk each, a few
# hundred ms apiece in the VM guest (qemu TCG).
_wl_read() {
	WL_LINE=
	for _ in 1 2 3 4 5; do
		{ read -r WL_LINE <"$1"; } 2>/dev/null
		[ -n "$WL_LINE" ] && return 0
		sleep 0.01
	done
}

wl_status() { _wl_read "$1"; echo "$WL_LINE"; }

wl_count() { _wl_read "$1"; echo "${WL_LINE%% *}"; }

wl_wait_above() {
	local status=$1 min=$2 c
	for _ in $(seq 300); do
		_wl_read "$status"
		case $WL_LINE in *FAIL*) fail "workload: $WL_LINE" ;; esac
		c=${WL_LINE%% *}
		[ -n "$c" ] && [ "$c" -gt "$min" ] 2>/dev/null && return 0
		sleep 0.1
	done
	fail "workload counter did not pass $min (status: $(wl_status "$status"))"
}
