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
#             page went and it committed
#
# Prints, per size, each round and then the medians with the ratios
# migrate/local, pre-copy/local and lazy/local, each beside its worst
# round (the largest per-round ratio: a round's runs are made seconds
# apart, interleaved, so noise hits both sides of a ratio alike); then
# the medians of the local checkpoint and restore, and of each step of
# the downtime on both hosts (migrate's downtime_steps, timeline.h:
# `here` the source, `there` the destination, nested steps included), for
# the plain and the lazy migration. Every run is checked: the workload
# keeps counting afterwards.
#
#   tests/bench/migrate.sh [REPS] [MEM_MIB...]      (default 3, 64 256)
#   tests/bench/migrate.sh 5 64 256 1024             (issue 29's goals)
#
# A mode this host can't do is a column of `-`, with its --dry-run's
# reason: --pre-copy needs soft-dirty tracking (not on this host's 6.18),
# --lazy needs userfaultfd and CRIU's lazy pages working here. Where
# fs.pipe-max-size is below what CRIU's lazy page server needs and cryo
# runs without CAP_SYS_RESOURCE (this host), CRYO_BENCH_PIPE_MAX=1 raises
# it to 4 MiB for the run (restored at exit). CRYO_BENCH_PRECOPY=0 /
# CRYO_BENCH_LAZY=0 leave a column out. CRYO_BENCH_SPLIT_CPUS=1 gives each
# host its own core (below). The last line is the machine's: the rate of
# writing fresh memory, 512 MiB at a time (bench_memtouch).
# CRYO_BENCH_WRAP="perf record -a -o FILE --" runs each migrate under it.
#
# Where CRIU works on the host (CRYO_CRIU=/opt/cryo-criu4/sbin/criu with
# CRIU_FAULT=130) it runs here; otherwise it re-runs itself in the VM
# (CRYO_VM_MEM=3072). Absolute times are the machine's: read the ratios.
# On the host, hold the host lock with `flock -o` (its fd must not reach
# the containers). CRYO_BENCH_TIMEOUT_MS: both ends' --timeout (a 1 GiB
# dump under TCG outlasts the 2-minute default), e.g. 1800000;
# CRYO_BENCH_FREEZE_DEADLINE_MS: migrate's --freeze-deadline (its 5-minute
# default thaws a 1 GiB plain migration under TCG before the commit: the
# safety net, not a result).
: "${CRYO_VM_MEM:=3072}" "${CRYO_VM_TIMEOUT:=3000}" "${CRYO_BENCH_TIMEOUT_MS:=}" "${CRYO_BENCH_FREEZE_DEADLINE_MS:=}"
export CRYO_VM_MEM CRYO_VM_TIMEOUT CRYO_BENCH_TIMEOUT_MS CRYO_BENCH_FREEZE_DEADLINE_MS
# CRIU 4 of tests/setup-criu4.sh when it is there and works (as checkpoint.sh):
# without it the bench ran in the VM, 10x slower and on the VM's small disk
if [ -z "${CRYO_CRIU:-}" ] && [ ! -e /run/cryo-vm/config ] && [ -x /opt/cryo-criu4/sbin/criu ] &&
	CRYO_CRIU=/opt/cryo-criu4/sbin/criu CRIU_FAULT=130 \
		"${CRYO_BIN:-$(dirname "$0")/../../build/cryo}" check >/dev/null 2>&1; then
	export CRYO_CRIU=/opt/cryo-criu4/sbin/criu CRIU_FAULT=130
fi
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
[ "${CRYO_BENCH_PIPE_MAX:-0}" = 1 ] && mig_pipe_max

# CRYO_BENCH_SPLIT_CPUS=1: each host its own core, as two machines have:
# the source (this script, what it starts, its containers' parent
# cgroup) on cpu 0, the dest host's cgroup and all below it on cpu 1 (v1
# cpuset: attaching a task sets its affinity to its cpuset's). Else both
# ends share both cores, the source's dump, sender and imghash beside
# the dest's receiver. The local C/R is then the source's: one core too.
if [ "${CRYO_BENCH_SPLIT_CPUS:-0}" = 1 ]; then
	cs=/sys/fs/cgroup/cpuset
	if [ ! -e "$cs/$MIG_CG/cpuset.cpus" ] || [ "$(nproc --all)" -lt 2 ]; then
		skip "CRYO_BENCH_SPLIT_CPUS needs a v1 cpuset and 2 cpus"
	fi
	find "$cs/$MIG_CG" -mindepth 1 -type d | sort -r | while read -r d; do echo 1 >"$d/cpuset.cpus"; done
	echo 1 >"$cs/$MIG_CG/cpuset.cpus" || fail "dest cpuset"
	mkdir -p "$cs/$CGPARENT" && at_exit "rmdir '$cs/$CGPARENT' 2>/dev/null"
	if ! { echo 0 >"$cs/$CGPARENT/cpuset.cpus" && cat "$cs/cpuset.mems" >"$cs/$CGPARENT/cpuset.mems" &&
		echo 1 >"$cs/$CGPARENT/cgroup.clone_children"; }; then
		fail "source cpuset"
	fi
	taskset -pc 0 $$ >/dev/null || fail "taskset"
	log "split cpus: source on cpu 0, dest host on cpu 1"
fi

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# one migration of $id (options: $@); sets down and total (ms), its steps in $T/steps.last
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
	# "host:table:step ms" lines, and what went while CRIU dumped
	python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
for s in m.get("downtime_steps", []):
    print("%s:%s %s" % ("here" if s["host"] == "source" else "there", s["step"], s["ms"]))
print("sent_MiB", round(m["bytes"] / 1048576, 1))
print("early_MiB", round(m.get("early_bytes", 0) / 1048576, 1))
print("resent_files", m.get("resent_files", 0))' "$T/m.json" >"$T/steps.last"
	check rt_dst delete --force "$id"
	rm -rf "${MIG_BUNDLES:?}/$id"
	check rt delete --force "$id"
}

start() {
	rt run -d --bundle "$B" "$id" </dev/null >"$T/out" 2>&1 || fail "run: $(cat "$T/out")"
	wl_wait_above "$S" 10
}

# Can both ends do it (a dry run)? 1 or 0; the reason why not is logged.
probe() { # --pre-copy N | --lazy
	mig_receive "$T/r.out" --allow-unsigned
	if rt migrate --cert "$MIG_PKI/client.crt" --key "$MIG_PKI/client.key" --ca "$MIG_PKI/ca.crt" --dry-run \
		"$@" "$id" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/probe.out" 2>&1; then
		echo 1
	else
		log "no $1 column: $(grep '^cryo' "$T/probe.out" | head -c 400)" >&2
		echo 0
	fi
	mig_receive_wait 30
}

pre_ok=${CRYO_BENCH_PRECOPY:-} lazy_ok=${CRYO_BENCH_LAZY:-}

# "name ms" lines of $1 as median per name (first-seen order)
medians() {
	local name
	for name in $(awk '!seen[$1]++ { print $1 }' "$1"); do
		printf ' %s %s' "$name" "$(awk -v p="$name" '$1 == p { print $2 }' "$1" | median)"
	done
}

printf '%-6s %-4s %9s %9s %9s %9s %9s %9s %9s %8s %8s %8s\n' MiB rep local_ms mig_down mig_total pre_down \
	pre_total lazy_down lazy_total down/loc pre/loc lazy/loc
for mib in $sizes; do
	id=mb-$mib-$$
	B=$T/$id
	mig_bundle_dir "$B" /counter /status "$mib" -
	cp "$WL_BIN" "$B/rootfs-dir/counter"
	S=$B/rootfs-dir/status
	D=$MIG_BUNDLES/$id/rootfs-dir/status
	for f in l d t pd pt ld lt rd rpd rld ph lph; do : >"$T/$f"; done
	for rep in $(seq "$reps"); do
		start
		[ -n "$pre_ok" ] || pre_ok=$(probe --pre-copy 3)
		[ -n "$lazy_ok" ] || lazy_ok=$(probe --lazy)
		# local checkpoint + restore: the container is down for both
		rm -rf "$T/img"
		t0=$(now_ms)
		check rt checkpoint --image-path "$T/img" "$id"
		t1=$(now_ms)
		rt restore -d --bundle "$B" --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 || fail "restore: $(cat "$T/out")"
		t2=$(now_ms)
		local_ms=$((t2 - t0))
		printf 'local:checkpoint %s\nlocal:restore %s\n' $((t1 - t0)) $((t2 - t1)) >>"$T/ph"
		c=$(wl_count "$S")
		wl_wait_above "$S" $((c + 10))
		migrate_once
		echo "$local_ms" >>"$T/l"; echo "$down" >>"$T/d"; echo "$total" >>"$T/t"
		ratio "$down" "$local_ms" >>"$T/rd"; echo >>"$T/rd"
		cat "$T/steps.last" >>"$T/ph"
		plain_down=$down plain_total=$total pre_down=- pre_total=- down=- total=-
		if [ "$pre_ok" = 1 ]; then
			start
			migrate_once --pre-copy 3
			echo "$down" >>"$T/pd"; echo "$total" >>"$T/pt"
			ratio "$down" "$local_ms" >>"$T/rpd"; echo >>"$T/rpd"
			pre_down=$down pre_total=$total down=- total=-
		fi
		if [ "$lazy_ok" = 1 ]; then
			start
			migrate_once --lazy
			echo "$down" >>"$T/ld"; echo "$total" >>"$T/lt"
			ratio "$down" "$local_ms" >>"$T/rld"; echo >>"$T/rld"
			cat "$T/steps.last" >>"$T/lph"
		fi
		printf '%-6s %-4s %9s %9s %9s %9s %9s %9s %9s\n' "$mib" "$rep" "$local_ms" "$plain_down" "$plain_total" \
			"$pre_down" "$pre_total" "$down" "$total"
	done
	l=$(median <"$T/l")
	cols=() worst=()
	for k in "d t rd" "pd pt rpd" "ld lt rld"; do
		read -r dn tn rn <<<"$k"
		if [ -s "$T/$dn" ]; then
			cols+=("$(median <"$T/$dn")" "$(median <"$T/$tn")")
			worst+=("$(ratio "$(median <"$T/$dn")" "$l")/$(sort -n "$T/$rn" | tail -1)")
		else
			cols+=(- -)
			worst+=(-)
		fi
	done
	printf '%-6s %-4s %9s %9s %9s %9s %9s %9s %9s %8s %8s %8s\n' "$mib" med "$l" "${cols[@]}" "${worst[@]}"
	printf '%-6s (ratios: median of the runs / worst round)\n' "$mib"
	printf '%-6s plain, median ms per step:%s\n' "$mib" "$(medians "$T/ph")"
	if [ -s "$T/lph" ]; then printf '%-6s lazy, median ms per step:%s\n' "$mib" "$(medians "$T/lph")"; fi
done

# The machine under every copy: fresh memory, 512 MiB at a time, after the
# runs (it would move the next run's memory). Where the rate falls is where
# this VM's host stops backing it (bench_memtouch.c).
if [ -x "$CRYO_BUILD/tests/bench/bench_memtouch" ]; then
	printf 'fresh memory, GB/s per 512 MiB written:'
	"$CRYO_BUILD/tests/bench/bench_memtouch" 8192 | awk '{ printf " %s", $2 } END { print "" }'
fi
