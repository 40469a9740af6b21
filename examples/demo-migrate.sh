#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# The migration half of the demo (examples/demo-criu.sh runs it where
# CRIU works): two "hosts" on one kernel, the destination in a network
# namespace behind a veth pair with a cgroup namespace and a cryo state
# root of its own (tests/lib/migrate.sh). A container holding 64 MiB of
# checked memory is moved over mutual TLS with `cryo migrate --pre-copy`
# (where the kernel tracks dirty memory; plainly otherwise): the memory
# goes in rounds while it runs, the image is signed here and verified
# there, and the counter goes on at the destination.
CRYO_BIN=$(realpath "${1:?usage: demo-migrate.sh PATH-TO-CRYO}")
export CRYO_BIN
SRC=$(cd "$(dirname "$0")/.." && pwd)
CRYO_SRC=$SRC
export CRYO_SRC
# the test harness's two-host setup, temp dir and cleanup
. "$SRC/tests/lib/common.sh"
. "$SRC/tests/lib/bundle.sh"
. "$SRC/tests/lib/workload.sh"
. "$SRC/tests/lib/migrate.sh"
# step
. "$SRC/examples/lib/demo.sh"

[ -x "$WL_BIN" ] || fail "no $WL_BIN: build the project first"
modprobe loop 2>/dev/null || true
ip link set lo up 2>/dev/null || true
mig_hosts_setup
mig_tls_certs "$T/pki"
openssl rand -out "$T/mig.key" 32 && chmod 600 "$T/mig.key"
id=demo-mig
B=$T/$id
mig_bundle_dir "$B" /counter /status 64 -
cp "$WL_BIN" "$B/rootfs-dir/counter"
S=$B/rootfs-dir/status
D=$MIG_BUNDLES/$id/rootfs-dir/status

step "two hosts: here, and $MIG_IP_DST (netns $MIG_NS, its own cgroup namespace and cryo root)"
rt run -d --bundle "$B" "$id" </dev/null >"$T/out" 2>&1 || fail "run: $(cat "$T/out")"
wl_wait_above "$S" 20
echo "here: $(wl_status "$S")   (count, checks ok, 64 MiB of memory it keeps checking)"

step "there: cryo receive --listen $MIG_IP_DST:$MIG_PORT --verify-key KEY (mutual TLS)"
mig_receive "$T/r.out" --verify-key "$T/mig.key"
cat "$T/r.out"

step "here: cryo migrate --dry-run $id tls://$MIG_IP_DST:$MIG_PORT (both ends' facts; nothing frozen)"
rt_migrate --dry-run "$id" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/dry.out" 2>&1 || fail "dry run: $(cat "$T/dry.out")"
mig_receive_wait 30
grep -E '^(here|destination):|dry run' "$T/dry.out"
# pre-copy needs the kernel's soft-dirty tracking here; else post-copy
# (--lazy) where both ends can (its dry run says why not where not)
precopy=()
if grep -q '^here:.*soft-dirty yes' "$T/dry.out"; then
	precopy=(--pre-copy 3)
else
	mig_receive "$T/r.out" --verify-key "$T/mig.key"
	lazy_ok=false
	if rt_migrate --dry-run --lazy "$id" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/dry.out" 2>&1; then
		lazy_ok=true
	elif grep -q 'fs.pipe-max-size' "$T/dry.out"; then
		# what the dry run asks for, here until the demo ends
		mig_receive_wait 30
		mig_pipe_max
		mig_receive "$T/r.out" --verify-key "$T/mig.key"
		rt_migrate --dry-run --lazy "$id" "tls://$MIG_IP_DST:$MIG_PORT" >"$T/dry.out" 2>&1 && lazy_ok=true
	fi
	if $lazy_ok; then
		precopy=(--lazy)
	else
		echo "no --lazy either: $(grep -o 'lazy: .*' "$T/dry.out" | head -1 | head -c 300)"
	fi
	mig_receive_wait 30
fi
mig_receive "$T/r.out" --verify-key "$T/mig.key"

step "here: cryo migrate ${precopy[*]} --sign-key KEY $id tls://$MIG_IP_DST:$MIG_PORT"
rt_migrate "${precopy[@]}" --sign-key "$T/mig.key" "$id" "tls://$MIG_IP_DST:$MIG_PORT" 2>"$T/m.err" ||
	fail "migrate: $(cat "$T/m.err") / receive: $(cat "$T/r.out")"
grep -v '^\s*$' "$T/m.err" | tail -n 4 || true
mig_receive_wait 60
[ "$MIG_RC" = 0 ] || fail "receive exited $MIG_RC: $(cat "$T/r.out")"
tail -n 1 "$T/r.out"

step "after: stopped here, running there, still counting with every check passing"
echo "here:  $(rt state "$id" | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p')"
echo "there: $(rt_dst state "$id" | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p')"
c=$(wl_count "$D")
wl_wait_above "$D" $((c + 20))
wl_status "$D" | grep -q ' ok ' || fail "after the migration: $(wl_status "$D")"
echo "there: $(wl_status "$D")"
rt_dst delete --force "$id" >/dev/null
