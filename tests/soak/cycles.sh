#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# Soak: the self-checking counter (tests/tools/cryo-test-counter.c: its
# memory pattern, a records file whose every record is checked, a tree
# with a pipe, a socket pair and a zombie) through round after round of
# every way cryo moves a container, checking after each round that it
# counts on with its checks passing and that nothing was left behind.
#
# Two containers: A, whose rootfs is an ext4 image of its own (FIFREEZE,
# image snapshots, loop devices), and M, whose rootfs is a directory (tar
# snapshots), which migrates between two "hosts" (tests/lib/migrate.sh:
# the destination is its own network, cgroup and mount namespaces). A
# round:
#   A: pause / resume; checkpoint / restore; checkpoint --leave-running,
#      then delete and restore from that image; pre-dump, dump on top of
#      it, restore;
#   M: migrate there over mutual TLS, and back over the stdio transport
#      (an ssh stand-in).
# After each round: both counters count on, their records are whole
# (records 1..n, each in its place), and the host has exactly what it had
# after the first round: mounts, loop devices, cgroups, veths, journal
# entries, staging dirs, and cryo's and CRIU's processes and their fds
# (tests/lib/soak.sh). The containers' own fds must not grow either (a fd
# of cryo's leaking into a restored task).
#
#   CRYO_SOAK_CYCLES=N (default 2: the CI slice) or CRYO_SOAK_SECONDS=S
# Needs a CRIU that works here (CRYO_CRIU, see `cryo check`).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/soak.sh"
soak_begin
[ -x /usr/bin/time ] || skip "needs /usr/bin/time"
CYCLES=${CRYO_SOAK_CYCLES:-2}
MEM_MIB=${CRYO_SOAK_MEM_MIB:-8}

mig_hosts_setup
mig_tls_certs "$T/pki"

# cryo, its time and peak memory kept as KEY's figures
cryo_t() {
	local k=$1 t0 rc=0 rss
	shift
	t0=$(now_ms)
	/usr/bin/time -f %M -o "$T/rss" timeout 300 "$CRYO_BIN" --root "$RTROOT" "$@" </dev/null >"$T/cmd.out" 2>&1 || rc=$?
	soak_time "$k" $(($(now_ms) - t0))
	rss=$(tail -1 "$T/rss" 2>/dev/null)
	[ -n "$rss" ] && [ "$rss" -gt "${SOAK_FIG[$k.rss_kb_max]:-0}" ] 2>/dev/null && SOAK_FIG[$k.rss_kb_max]=$rss
	[ -z "${SOAK_FIG[$k.rss_kb_first]:-}" ] && [ -n "$rss" ] && SOAK_FIG[$k.rss_kb_first]=$rss
	[ $rc = 0 ] || fail "cryo $* failed ($rc): $(cat "$T/cmd.out")"
}

# the containers' fds (a fd of cryo's that leaked into a restored task stays there)
wl_fds() {
	local cg p n=0
	for cg in /sys/fs/cgroup/unified/"$CGPARENT"/*/ /sys/fs/cgroup/unified/"$MIG_CG/$CGPARENT"/*/; do
		for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do
			n=$((n + $(ls "/proc/$p/fd" 2>/dev/null | wc -l)))
		done
	done
	echo "$n"
}

counts_on() { soak_counts_on "$2" "$1"; }

# CRIU's pre-dump needs the kernel's soft-dirty page tracking (the 6.18 host has none)
PREDUMP=false
has_soft_dirty && PREDUMP=true
$PREDUMP || log "no soft-dirty page tracking on this kernel (cryo check): rounds without pre-dump"

a=sk-a-$$
A=$T/$a
wl_bundle "$A" "$MEM_MIB"
SA=$A/rootfs/status
rt run -d --bundle "$A" "$a" </dev/null >"$T/out" 2>&1 || fail "run A: $(cat "$T/out")"

m=sk-m-$$
mig_counter_run "$T/$m" "$m" "$MEM_MIB"
SM=$T/$m/rootfs-dir/status
M_BUNDLE=$T/$m      # where M's bundle is on this host (the first, then the ones it comes back into)
BACK=$T/bundles-back
mkdir -p "$BACK"
wl_wait_above "$SA" 20
wl_wait_above "$SM" 20

# the stdio transport back: an ssh stand-in that runs the remote command here (this test's namespaces)
SRC_PID=$$
printf '#!/bin/bash\nwhile [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done; shift\nexec nsenter -t %s -m -n -C -- bash -c "$1"\n' \
	"$SRC_PID" >"$T/ssh-back"
chmod +x "$T/ssh-back"

round_a() {
	local c
	# pause / resume
	cryo_t pause pause "$a"
	[ "$(rt freezer-state "$a")" = FROZEN ] || fail "A: pause: $(rt freezer-state "$a")"
	c=$(cat "$SA"); sleep 0.1
	[ "$(cat "$SA")" = "$c" ] || fail "A: paused, and it counted"
	cryo_t resume resume "$a"
	counts_on "$SA" "A after pause/resume"
	# checkpoint / restore
	rm -rf "$T/img-a"
	cryo_t checkpoint checkpoint --image-path "$T/img-a" "$a"
	cryo_t restore restore -d --bundle "$A" --image-path "$T/img-a" "$a"
	counts_on "$SA" "A after checkpoint/restore"
	# --leave-running, then back to that image
	rm -rf "$T/img-lr"
	cryo_t checkpoint-leave-running checkpoint --leave-running --image-path "$T/img-lr" "$a"
	[ "$(rt freezer-state "$a")" = RUNNING ] || fail "A: --leave-running left it $(rt freezer-state "$a")"
	counts_on "$SA" "A after checkpoint --leave-running"
	cryo_t delete delete --force "$a"
	cryo_t restore restore -d --bundle "$A" --image-path "$T/img-lr" "$a"
	counts_on "$SA" "A restored from its --leave-running image"
	soak_count checkpoints 2
	soak_count restores 2
	soak_count freezes 1
	# pre-dump + dump (where the kernel tracks dirty pages)
	$PREDUMP || return 0
	rm -rf "$T/pre" "$T/img-pd"
	cryo_t pre-dump checkpoint --pre-dump --image-path "$T/pre" "$a"
	cryo_t checkpoint-after-pre-dump checkpoint --parent-path ../pre --image-path "$T/img-pd" "$a"
	cryo_t restore restore -d --bundle "$A" --image-path "$T/img-pd" "$a"
	counts_on "$SA" "A after pre-dump, dump, restore"
	soak_count checkpoints 2
	soak_count restores 1
}

round_m() {
	local t0
	# there, over mutual TLS
	mig_receive "$T/r.out" --allow-unsigned
	t0=$(now_ms)
	rt_migrate "$m" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/m.out" 2>&1 || fail "M: migrate there: $(cat "$T/m.out") / $(cat "$T/r.out")"
	soak_time migrate-tls $(($(now_ms) - t0))
	mig_receive_wait 30
	[ "$MIG_RC" = 0 ] || fail "M: receive there exited $MIG_RC: $(cat "$T/r.out")"
	rt state "$m" | grep -q '"status":"stopped"' || fail "M: not stopped here after it left"
	rt delete "$m" >/dev/null 2>&1 || fail "M: delete the stopped one here"
	[ "$M_BUNDLE" = "$T/$m" ] || rm -rf "$M_BUNDLE"
	SM=$MIG_BUNDLES/$m/rootfs-dir/status
	counts_on "$SM" "M there"
	# back, over the stdio transport
	t0=$(now_ms)
	rt_dst migrate --ssh "$T/ssh-back" --remote-cryo "$CRYO_BIN --root $RTROOT" \
		--remote-opts "--bundle-dir $BACK --allow-unsigned" "$m" ssh://source >"$T/m.out" 2>&1 ||
		fail "M: migrate back: $(cat "$T/m.out")"
	soak_time migrate-stdio $(($(now_ms) - t0))
	rt_dst delete "$m" >/dev/null 2>&1 || fail "M: delete the stopped one there"
	rm -rf "${MIG_BUNDLES:?}/$m"
	M_BUNDLE=$BACK/$m
	SM=$M_BUNDLE/rootfs-dir/status
	counts_on "$SM" "M back here"
	soak_count migrations 2
}

rounds=0
while soak_more "$rounds" "$CYCLES"; do
	round_a
	round_m
	rounds=$((rounds + 1))
	soak_count rounds
	if [ $rounds = 1 ]; then
		soak_baseline
		WL_FDS=$(wl_fds)
		log "baseline after the first round: $SOAK_BASE; the containers' fds: $WL_FDS"
	else
		soak_check_leaks "round $rounds"
		[ "$(wl_fds)" = "$WL_FDS" ] || { soak_count leaks; fail "round $rounds: the containers hold $(wl_fds) fds, $WL_FDS after the first round"; }
	fi
done
# no cryo grew: the last peak of each command within 20% (and 2 MiB) of its first
for k in $(printf '%s\n' "${!SOAK_FIG[@]}" | sed -n 's/\.rss_kb_first$//p'); do
	f=${SOAK_FIG[$k.rss_kb_first]} x=${SOAK_FIG[$k.rss_kb_max]}
	[ "$x" -le $((f + f / 5 + 2048)) ] || { soak_count leaks; fail "cryo $k: its peak memory grew from $f to $x kB"; }
done
log "$rounds rounds: $(wl_status "$SA") (A), $(wl_status "$SM") (M); $(soak_resources)"
echo "PASS cycles"
