#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Migration benchmark (not a timed test): the self-checking counter
# (tests/tools/cryo-test-counter.c, MEM MiB of touched memory) in a
# container with a directory rootfs, on the two "hosts" of
# tests/lib/migrate.sh (a network + cgroup namespace, mutual TLS over a
# veth pair), side by side per size, REPS times:
#
#   local     `cryo checkpoint` (stops it) + `cryo restore -d` on one host:
#             its downtime is the whole of both
#   migrate   `cryo migrate tls://...`: downtime = frozen here -> running
#             there (as measured by the source), and its total time
#   pre-copy  the same with --pre-copy 3: memory rounds while it runs, the
#             frozen dump only what changed (this workload writes its
#             memory once: the case pre-copy is for)
#   lazy      the same with --lazy (post-copy): downtime = frozen here ->
#             running there before its memory arrived; total = until every
#             page went and it committed. Where --lazy is refused (a
#             --dry-run --lazy says so), its columns are `-`.
#
# Prints medians and the ratios migrate/local, pre-copy/local and
# lazy/local, then the medians of the local checkpoint and restore and of
# each phase of the plain migration: the source's (its JSON progress
# records) and the destination's (dst_<phase>). Every run is checked:
# the workload keeps counting afterwards.
#
#   tests/bench/migrate.sh [REPS] [MEM_MIB...]      (default 3, 64 256)
#
# CRYO_BENCH_PRECOPY=0 leaves out the pre-copy column (a kernel without
# soft-dirty tracking refuses --pre-copy, as this host's 6.18 does).
# CRYO_BENCH_WRAP="perf record -a -o FILE --" runs each migrate under it.
#
# Where CRIU works on the host (CRYO_CRIU=/opt/cryo-criu4/sbin/criu with
# CRIU_FAULT=130) it runs here; otherwise it re-runs itself in the VM
# (CRYO_VM_MEM=3072). Absolute times are the machine's: read the ratios.
# CRYO_BENCH_TIMEOUT_MS: both ends' --timeout (a 1 GiB dump under TCG
# outlasts the 2-minute default), e.g. 1800000; CRYO_BENCH_FREEZE_DEADLINE_MS:
# migrate's --freeze-deadline (its 5-minute default thaws a 1 GiB plain
# migration under TCG before the commit: the safety net, not a result).
: "${CRYO_VM_MEM:=3072}" "${CRYO_VM_TIMEOUT:=3000}" "${CRYO_BENCH_TIMEOUT_MS:=}" "${CRYO_BENCH_FREEZE_DEADLINE_MS:=}"
export CRYO_VM_MEM CRYO_VM_TIMEOUT CRYO_BENCH_TIMEOUT_MS CRYO_BENCH_FREEZE_DEADLINE_MS
if [ -z "${CRYO_CRIU:-}" ]; then
	source "$(dirname "$0")/../vm/lib.sh"
	in_vm && vm_containers_setup
fi
source "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
. "$CRYO_SRC/tests/lib/workload.sh"
. "$CRYO_SRC/tests/lib/migrate.sh"
"$CRYO_BIN" check >/dev/null 2>&1 || skip "CRIU does not work here (cryo check)"

reps=${1:-3}
[ $# -gt 0 ] && shift
sizes=${*:-64 256}
mig_hosts_setup
mig_tls_certs "$T/pki"

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ms_since() { echo $(( $(now_ms) - $1 )); }

# one migration of $id (options: $@); sets down and total (ms)
migrate_once() {
	MIG_DST_OPTS="--log-format json" mig_receive "$T/r.out" --allow-unsigned ${CRYO_BENCH_TIMEOUT_MS:+--timeout "$CRYO_BENCH_TIMEOUT_MS"}
	${CRYO_BENCH_WRAP:-} "$CRYO_BIN" --root "$RTROOT" --log-format json migrate ${CRYO_BENCH_TIMEOUT_MS:+--timeout "$CRYO_BENCH_TIMEOUT_MS"} \
		${CRYO_BENCH_FREEZE_DEADLINE_MS:+--freeze-deadline "$CRYO_BENCH_FREEZE_DEADLINE_MS"} --cert "$MIG_PKI/client.crt" --key "$MIG_PKI/client.key" \
		--ca "$MIG_PKI/ca.crt" "$@" "$id" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/m.json" 2>"$T/m.err" ||
		fail "migrate $*: $(cat "$T/m.err")"
	mig_receive_wait 60
	[ "$MIG_RC" = 0 ] || fail "receive: $(cat "$T/r.out")"
	c=$(wl_count "$D")
	wl_wait_above "$D" $((c + 10))
	wl_status "$D" | grep -q ' ok ' || fail "after migrate $*: $(wl_status "$D")"
	read -r down total <<<"$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["downtime_usec"]/1e3, m["total_usec"]/1e3)' "$T/m.json")"
	# the phases, "phase ms" lines: the source's, then the destination's as dst_<phase>
	python3 -c '
import json, sys
def phases(path, prefix):
    for line in open(path):
        try:
            p = json.loads(line)["progress"]
        except (ValueError, KeyError):
            continue
        if p["done"]:
            print(prefix + p["phase"], p["elapsed_ms"])
phases(sys.argv[1], "")
m = json.load(open(sys.argv[2]))
print("sent_MiB", round(m["bytes"] / 1048576, 1))
print("early_MiB", round(m.get("early_bytes", 0) / 1048576, 1))
print("resent_files", m.get("resent_files", 0))
phases(sys.argv[3], "dst_")' "$T/m.err" "$T/m.json" "$T/r.out" >"$T/phases.last"
	check rt_dst delete --force "$id"
	rm -rf "${MIG_BUNDLES:?}/$id"
	check rt delete --force "$id"
}

start() {
	rt run -d --bundle "$B" "$id" </dev/null >"$T/out" 2>&1 || fail "run: $(cat "$T/out")"
	wl_wait_above "$S" 10
}

# --lazy where both ends can (the first --dry-run --lazy probes CRIU's lazy pages on both)
lazy_ok=""

printf '%-6s %-4s %10s %10s %10s %10s %10s %10s %10s %9s %9s %9s\n' MiB rep local_ms mig_down mig_total pre_down \
	pre_total lazy_down lazy_total down/loc pre/loc lazy/loc
for mib in $sizes; do
	id=mb-$mib-$$
	B=$T/$id
	mig_bundle_dir "$B" /counter /status "$mib" -
	cp "$WL_BIN" "$B/rootfs-dir/counter"
	S=$B/rootfs-dir/status
	D=$MIG_BUNDLES/$id/rootfs-dir/status
	: >"$T/l" ; : >"$T/d" ; : >"$T/t" ; : >"$T/pd" ; : >"$T/pt" ; : >"$T/ph" ; : >"$T/ld" ; : >"$T/lt"
	for rep in $(seq "$reps"); do
		start
		# local checkpoint + restore: the container is down for both
		rm -rf "$T/img"
		t0=$(now_ms)
		check rt checkpoint --image-path "$T/img" "$id"
		t1=$(now_ms)
		rt restore -d --bundle "$B" --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 || fail "restore: $(cat "$T/out")"
		t2=$(now_ms)
		local_ms=$((t2 - t0))
		printf 'local_checkpoint %s\nlocal_restore %s\n' $((t1 - t0)) $((t2 - t1)) >"$T/local.last"
		c=$(wl_count "$S")
		wl_wait_above "$S" $((c + 10))
		migrate_once
		echo "$local_ms" >>"$T/l"; echo "$down" >>"$T/d"; echo "$total" >>"$T/t"
		cat "$T/local.last" "$T/phases.last" >>"$T/ph"
		plain_down=$down plain_total=$total
		if [ "${CRYO_BENCH_PRECOPY:-1}" != 0 ]; then
			start
			migrate_once --pre-copy 3
		else
			down=0 total=0
		fi
		echo "$down" >>"$T/pd"; echo "$total" >>"$T/pt"
		pre_down=$down pre_total=$total down=- total=-
		if [ "$lazy_ok" != 0 ]; then
			start
		fi
		if [ -z "$lazy_ok" ]; then
			mig_receive "$T/r.out" --allow-unsigned
			rt migrate --cert "$MIG_PKI/client.crt" --key "$MIG_PKI/client.key" --ca "$MIG_PKI/ca.crt" --dry-run \
				--lazy "$id" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/lz.out" 2>&1 && lazy_ok=1 || lazy_ok=0
			mig_receive_wait 30
			if [ "$lazy_ok" = 0 ]; then
				log "no --lazy column: $(grep '^cryo' "$T/lz.out" | head -c 400)"
				check rt delete --force "$id"
			fi
		fi
		if [ "$lazy_ok" = 1 ]; then
			migrate_once --lazy
			echo "$down" >>"$T/ld"; echo "$total" >>"$T/lt"
		fi
		printf '%-6s %-4s %10s %10s %10s %10s %10s %10s %10s\n' "$mib" "$rep" "$local_ms" "$plain_down" "$plain_total" \
			"$pre_down" "$pre_total" "$down" "$total"
	done
	l=$(median <"$T/l"); d=$(median <"$T/d"); t=$(median <"$T/t"); pd=$(median <"$T/pd"); pt=$(median <"$T/pt")
	ld=-; lt=-; lr=-
	if [ "$lazy_ok" = 1 ]; then
		ld=$(median <"$T/ld"); lt=$(median <"$T/lt"); lr=$(awk -v a="$ld" -v b="$l" 'BEGIN { printf "%.2f", a / b }')
	fi
	printf '%-6s %-4s %10s %10s %10s %10s %10s %10s %10s %9.2f %9.2f %9s\n' "$mib" med "$l" "$d" "$t" "$pd" "$pt" "$ld" "$lt" \
		"$(awk -v a="$d" -v b="$l" 'BEGIN { print a / b }')" "$(awk -v a="$pd" -v b="$l" 'BEGIN { print a / b }')" "$lr"
	printf '%-6s plain migrate, median ms per phase:' "$mib"
	for phase in $(awk '!seen[$1]++ { print $1 }' "$T/ph"); do
		printf ' %s %s' "$phase" "$(awk -v p="$phase" '$1 == p { print $2 }' "$T/ph" | median)"
	done
	printf '\n'
done
