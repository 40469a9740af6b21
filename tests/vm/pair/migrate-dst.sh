#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The destination guest of tests/vm/migrate_2vm.vmpair: SHARE is the
# scratch dir both guests see (pki/, sign.key; dst.boot written here).
source "$(dirname "$0")/lib.sh"
cat /proc/sys/kernel/random/boot_id >"$S/dst.boot"

mkdir -p "$T/bundles" "$RTROOT"
rt receive --listen 10.200.0.2:7443 --cert "$S/pki/server.crt" --key "$S/pki/server.key" --ca "$S/pki/ca.crt" \
	--verify-key "$S/sign.key" --bundle-dir "$T/bundles" --accept-timeout 300000 >"$T/r.out" 2>&1 \
	|| fail "receive: $(cat "$T/r.out")"
cat "$T/r.out"
id=$(rt list -q)
[ "$id" = m2vm ] || fail "the destination has containers '$id', not m2vm"
# the parent cgroup the source's config names is made here: removed at exit, as the test's own would be
parent=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["linux"]["cgroupsPath"].rsplit("/", 1)[0])' \
	"$T/bundles/$id/config.json") || fail "no cgroupsPath in the received config"
case $parent in /cryo-test-*) ;; *) fail "unexpected cgroup parent '$parent'" ;; esac
for d in /sys/fs/cgroup/*"$parent"; do at_exit "cg_remove '$d'"; done
rt state "$id" | grep -q '"status":"running"' || fail "not running here: $(rt state "$id")"
st=$T/bundles/$id/rootfs-dir/status
c=$(wl_count "$st")
wl_wait_above "$st" $((c + 50))
rt state "$id" | grep -q 'downtime' || fail "no downtime stored: $(rt state "$id")"
log "runs here on $(uname -r): $(wl_status "$st")"
check rt delete --force "$id"
echo "PASS destination"
