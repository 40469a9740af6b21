#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# A container with cryo's veth (org.cryo.network) comes back from a
# checkpoint with its network: CRIU makes the pair again, its host end
# named as the bundle's annotation names it, and restore brings that end
# up with the host address before any task runs. The container pings
# nothing but its own gateway: a shell loop that can reach the host end
# only through the restored pair writes its count, and a host-side listener
# hears from it after the restore.
#  - checkpoint stops it; restore: the host end is a veth, UP, with the
#    host address; the loop inside reaches it again; delete removes it;
#  - the host end's name held by a host interface that is not the pair (a
#    bridge): restore waits, then refuses, the bridge is untouched and
#    nothing of the container is left.
# Needs a CRIU that works here (CRYO_CRIU, see `cryo check`); TCP
# connections themselves move in vm/migrate_tcp (CRIU 4.1 can't dump TCP
# sockets on this kernel).
. "$(dirname "$0")/../lib/common.sh"
. "$CRYO_SRC/tests/lib/bundle.sh"
need_host_criu
need_cmd ip

N=$(( ($$ % 200) + 20 ))
hostif=cr$$
hostif=${hostif:0:15}
id=rs-veth-$$
B=$T/$id
# inside: the count in /count, and whether the gateway (the host end) answers ARP: /seen
bundle_counting "$B"
bundle_set "$B" 'c["annotations"]["org.cryo.network"] = "veth:'"$hostif"':10.87.'"$N"'.2/24:gw=10.87.'"$N"'.1:host=10.87.'"$N"'.1/24"'
at_exit "ip link del $hostif"
# stdio on /dev/null: CRIU dumps no file of a host mount the container does not see
rt run -d --bundle "$B" "$id" </dev/null >/dev/null 2>&1 || fail "run failed"

count() { bundle_count "$B"; }
wait_above() {
	for _ in $(seq 100); do [ "$(count)" -gt "$1" ] && return 0; sleep 0.1; done
	fail "the counter did not pass $1 (at $(count))"
}
pid_of() { rt state "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'; }
# from inside the container's netns: the host end answers (ping through the pair)
reach_host() { nsenter -t "$(pid_of)" -n ping -c 1 -W 2 "10.87.$N.1" >/dev/null 2>&1; }
wait_above 5
reach_host || fail "before the checkpoint: the container does not reach its host end"

timeout 120 "$CRYO_BIN" --root "$RTROOT" checkpoint --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "checkpoint: $(cat "$T/out")"
before=$(count)
timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$T/img" "$id" </dev/null >"$T/out" 2>&1 \
	|| fail "restore: $(cat "$T/out")"
ip -d -o link show "$hostif" | grep -q ' veth ' || fail "restore: $hostif is not a veth: $(ip -d link show "$hostif" 2>&1)"
ip -o link show "$hostif" | grep -q '[<,]UP[,>]' || fail "restore: $hostif is not up: $(ip link show "$hostif")"
ip -o addr show "$hostif" | grep -q "10.87.$N.1/24" || fail "restore: $hostif has no host address: $(ip addr show "$hostif")"
nsenter -t "$(pid_of)" -n ip -o addr show eth0 | grep -q "10.87.$N.2/24" || fail "restore: eth0 inside lost its address"
nsenter -t "$(pid_of)" -n ip route show default | grep -q "via 10.87.$N.1" || fail "restore: the default route inside is gone"
wait_above $((before + 5))
reach_host || fail "after the restore: the container does not reach its host end"
log "restored: $hostif made again by CRIU, up with 10.87.$N.1/24, reached from inside"

check rt delete --force "$id"
for _ in $(seq 50); do ip link show "$hostif" >/dev/null 2>&1 || break; sleep 0.1; done
ip link show "$hostif" >/dev/null 2>&1 && fail "delete left $hostif"

# the name is taken by an interface that is not the pair: refused, left alone
ip link add "$hostif" type bridge || fail "ip link add bridge"
idx=$(cat "/sys/class/net/$hostif/ifindex")
t0=$(now_ms)
expect_fail 1 timeout 120 "$CRYO_BIN" --root "$RTROOT" restore -d --bundle "$B" --image-path "$T/img" "$id"
expect_output "host interface \`$hostif\` exists" "restore onto a taken host name"
[ $(($(now_ms) - t0)) -ge 4500 ] || fail "restore gave up on the taken name without waiting for it ($(($(now_ms) - t0)) ms)"
[ "$(cat "/sys/class/net/$hostif/ifindex" 2>/dev/null)" = "$idx" ] || fail "the bridge $hostif was replaced or deleted"
ip -d -o link show "$hostif" | grep -q ' bridge ' || fail "$hostif is no longer the bridge"
[ -z "$(rt list -q)" ] || fail "a refused restore left a container: $(rt list -q)"
ip link del "$hostif"
log "a taken host name: refused after 5 s, the bridge untouched"
echo "PASS restore_veth"
